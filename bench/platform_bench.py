"""`make bench`, parallel mechanisms: generation time, op counts per kernel and for the whole
step (generated vs dense matrix evaluation), time per state of the C step (batch of 10^5) vs
the plain numpy reference (tests/reference/parallel_numpy.py) and vs MuJoCo's ``mj_forward``
on the same mechanism with equality constraints (bench/mujoco_race.py), side by side in one run.

Then the race table: our step, MuJoCo's mj_forward and Pinocchio's constraintDynamics on the
same mechanism (bench/pinocchio_constraint_race.py, which checks that Pinocchio's model gives
our udot before timing it), each in a compiled loop, one state repeated ("single") and a batch
of 2000 distinct states ("batch"), ns per state; ratios = theirs / ours.
``python bench/platform_bench.py [NAME ...]`` runs this part alone.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mechgen import runtime  # noqa: E402
from bench.timing import best  # noqa: E402
from mechgen.generator.build import files_for_spec, write_files  # noqa: E402
from mechgen.generator.families.parallel.platform import numeric_platform  # noqa: E402
from tests.platforms import law_forces, random_states  # noqa: E402
from tests.reference import parallel_numpy as ref  # noqa: E402

KERNELS = ["inverse_kinematics", "velocity_constraints", "acceleration_terms", "leg_dynamics",
           "reduced_dynamics", "step", "step_accel", "drive_forces"]


def _numpy_step(num, st, i):
    x, u = st["x"][i], st["u"][i]
    zero = [np.zeros(len(l["joints"])) for l in num["legs"]]
    r = ref.solve(num, x, u, zero, st["g"][i], st["fE"][i], st["mE"][i])
    Q = law_forces(num, r["p"], r["pdot"], st["F"][i])
    return ref.solve(num, x, u, Q, st["g"][i], st["fE"][i], st["mE"][i], p0=r["p"])


def bench_platform(spec: Path, tmp: Path, batch: int, mujoco: bool,
                   pinocchio: bool = False) -> dict:
    t0 = time.perf_counter()
    pf, gen, files = files_for_spec(spec)
    tgen = time.perf_counter() - t0
    write_files(tmp / pf.name, files)
    m = runtime.load(pf.name, "c", generated=tmp)
    num = numeric_platform(pf)
    st = random_states(num, batch, seed=7)
    p = np.tile(m.params(), (batch, 1))
    args = (st["x"], st["u"], st["F"], st["fE"], st["mE"], st["g"])
    first = m.step(*args, p=p, errors="nan")     # first touch of the memory (a few random states
    #                                      may pass a joint limit: NaN rows, timing unchanged)
    t_c = best(lambda: m.step(*args, p=p, errors="nan")) / batch
    t_accel = best(lambda: m.step_accel(*args, p=p, errors="nan")) / batch
    n_np = 20
    t_np = best(lambda: [_numpy_step(num, st, i) for i in range(n_np)], 3) / n_np
    ops = {g.kernel.name: {"ops": g.ops, "dense": g.dense} for g in gen}
    out = {"generation_s": tgen, "legs": [leg.type for leg in pf.legs], "kernels": ops,
           "t_step_c_ns": t_c * 1e9, "t_step_accel_c_ns": t_accel * 1e9,
           "t_step_numpy_ns": t_np * 1e9, "numpy_over_c": t_np / t_c}
    if mujoco:
        from bench import mujoco_race
        ok = np.flatnonzero(np.isfinite(first[0]).all(axis=1))[:2000]   # reachable states
        mj = mujoco_race.time_mj_forward(num, st["x"][ok], st["u"][ok], repeats=10)
        out["mujoco"] = {k: mj[k] for k in ("method", "ns_per_call", "cpu_ns_per_call",
                                            "single_ns_per_call", "mujoco_version") if k in mj}
        out["mujoco_over_c"] = mj["ns_per_call"] / (t_c * 1e9)
    if pinocchio:
        out["pinocchio"] = _race_rounds(pf.name, tmp, num, out.get("mujoco"), mj if mujoco
                                        else None)
    return out


def _race_rounds(name: str, tmp: Path, num: dict, mj_out: dict | None, mj: dict | None,
                 rounds: int = 3) -> dict:
    """Pinocchio's harness (with ours beside it) and MuJoCo's, run alternately ``rounds``
    times on the same states; the best of each time (the machine is shared). Updates
    ``mj_out`` with MuJoCo's best batch and single-state times."""
    from bench import mujoco_race, pinocchio_constraint_race as pcr
    from mechgen.runtime.cbuild import isa_flags
    prep = pcr.prepare(name, tmp, num=num)
    isa = isa_flags()      # ours also as the runtime compiles it on this CPU (-mavx2)
    prep_isa = dict(prep, exe=pcr.build_harness(name, Path(tmp).resolve() / name,
                                                [*pcr.OURS_EXTRA_FLAGS, *isa])) if isa else None
    runs, runs_isa = [pcr.run(prep)], [pcr.run(prep_isa)] if isa else []
    for _ in range(rounds - 1):
        if mj is not None and "xml" in mj:
            kv = mujoco_race.run_harness(mj["xml"], mj["states"], 10)
            mj_out["ns_per_call"] = min(mj_out["ns_per_call"], float(kv["ns_min"][0]))
            mj_out["single_ns_per_call"] = min(mj_out["single_ns_per_call"],
                                               float(kv["single_ns_min"][0]))
        runs.append(pcr.run(prep))
        if isa:
            runs_isa.append(pcr.run(prep_isa))
    best = {**runs[0], **{k: min(r[k] for r in runs) for k in runs[0] if k.endswith("_ns")}}
    if isa:
        best["isa"] = {"flags": isa, **{k: min(r[k] for r in runs_isa)
                                        for k in runs_isa[0] if k.endswith("_ns")}}
    best["pin_over_ours_batch"] = best["pin_batch_ns"] / best["ours_batch_ns"]
    best["pin_over_ours_single"] = best["pin_single_ns"] / best["ours_single_ns"]
    best["pin_over_accel_batch"] = best["pin_batch_ns"] / best["accel_batch_ns"]
    best["pin_over_accel_single"] = best["pin_single_ns"] / best["accel_single_ns"]
    best["rounds"] = rounds
    return best


def _have(module: str, hint: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        print(f"({module} not installed: {hint})")
        return False


def race_table(results: dict) -> None:
    """Ours (step and the lean step_accel) vs MuJoCo vs Pinocchio, single state and batch, ns
    per state and ratios."""
    head = (f"{'mechanism':22s} {'legs':5s} {'ours 1':>7s} {'ours N':>7s} {'MJ 1':>7s} "
            f"{'MJ N':>7s} {'Pin 1':>7s} {'Pin N':>7s} {'MJ/o 1':>7s} {'MJ/o N':>7s} "
            f"{'Pin/o 1':>7s} {'Pin/o N':>7s}")
    print("\nstep (and below it the lean step_accel) vs MuJoCo mj_forward and Pinocchio "
          "constraintDynamics, compiled loops, ns per state (1: one state repeated, N: 2000 "
          "states; ours timed beside Pinocchio, both -O3; the -mavx2 rows: ours compiled as "
          "the runtime does on this CPU, beside the same Pinocchio build (baseline: its "
          "prebuilt libraries), MuJoCo's wheel being AVX code)")
    print(head + "\n" + "-" * len(head))
    for name, r in results.items():
        if "pinocchio" not in r:
            continue
        pr, mj = r["pinocchio"], r.get("mujoco", {})
        o1, oN = pr["ours_single_ns"], pr["ours_batch_ns"]
        m1, mN = mj.get("single_ns_per_call", float("nan")), mj.get("ns_per_call", float("nan"))
        legs = "".join(sorted(set(r["legs"])))
        print(f"{name:22s} {legs:5s} {o1:7.0f} {oN:7.0f} {m1:7.0f} {mN:7.0f} "
              f"{pr['pin_single_ns']:7.0f} {pr['pin_batch_ns']:7.0f} {m1 / o1:7.1f} "
              f"{mN / oN:7.1f} {pr['pin_over_ours_single']:7.1f} "
              f"{pr['pin_over_ours_batch']:7.1f}", flush=True)
        a1, aN = pr["accel_single_ns"], pr["accel_batch_ns"]
        print(f"{'  step_accel':22s} {'':5s} {a1:7.0f} {aN:7.0f} {'':7s} {'':7s} {'':7s} "
              f"{'':7s} {m1 / a1:7.1f} {mN / aN:7.1f} {pr['pin_over_accel_single']:7.1f} "
              f"{pr['pin_over_accel_batch']:7.1f}", flush=True)
        if "isa" in pr:       # ours with -mavx2 (MuJoCo's wheel is AVX code; Pinocchio baseline)
            for label, key in (("  step, -mavx2", "ours"), ("  step_accel, -mavx2", "accel")):
                i1, iN = pr["isa"][f"{key}_single_ns"], pr["isa"][f"{key}_batch_ns"]
                print(f"{label:22s} {'':5s} {i1:7.0f} {iN:7.0f} {'':7s} {'':7s} {'':7s} "
                      f"{'':7s} {m1 / i1:7.1f} {mN / iN:7.1f} {pr['pin_single_ns'] / i1:7.1f} "
                      f"{pr['pin_batch_ns'] / iN:7.1f}", flush=True)


def run(specs: list[Path], tmp: Path, batch: int) -> dict:
    have_mj = _have("mujoco", "`pip install mujoco` for the MuJoCo race")
    have_pin = _have("pinocchio", "`pip install pin` for the Pinocchio race")
    results = {}
    head = (f"{'mechanism':22s} {'legs':8s} {'gen s':>6s} {'step ops':>8s} {'dense':>6s} "
            f"{'C ns':>7s} {'numpy ns':>10s} {'np/C':>7s} {'MuJoCo ns':>10s} {'MJ/C':>5s} "
            f"{'accel ops':>9s} {'accel ns':>8s}")
    print(head)
    print("-" * len(head))
    for spec in specs:
        r = bench_platform(spec, tmp, batch, have_mj, have_pin)
        results[spec.stem] = r
        s = r["kernels"]["step"]
        legs = "".join(sorted(set(r["legs"])))
        mj = (f"{r['mujoco']['ns_per_call']:10.0f} {r['mujoco_over_c']:5.1f}" if "mujoco" in r
              else f"{'-':>10s} {'-':>5s}")
        print(f"{spec.stem:22s} {legs:8s} {r['generation_s']:6.1f} {s['ops']['total']:8d} "
              f"{s['dense']['total']:6d} {r['t_step_c_ns']:7.0f} {r['t_step_numpy_ns']:10.0f} "
              f"{r['numpy_over_c']:7.0f} {mj} {r['kernels']['step_accel']['ops']['total']:9d} "
              f"{r['t_step_accel_c_ns']:8.0f}", flush=True)
    print("\nops per kernel (generated / dense):")
    for name, r in results.items():
        print(f"  {name:22s} " + "  ".join(f"{k} {r['kernels'][k]['ops']['total']}/"
                                          f"{r['kernels'][k]['dense']['total']}" for k in KERNELS))
    race_table(results)
    return results


def main(argv=None) -> None:
    import argparse
    import tempfile
    from mechgen.generator.build import bundled_specs
    from mechgen.generator.families.parallel.spec import is_parallel_spec
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="bundled parallel mechanisms (default: all)")
    ap.add_argument("--batch", type=int, default=100_000)
    args = ap.parse_args(argv)
    specs = [s for s in bundled_specs() if is_parallel_spec(s)
             and (not args.names or s.stem in args.names)]
    res = run(specs, Path(tempfile.mkdtemp(prefix="mechgen_platform_bench_")), args.batch)
    out = Path(__file__).resolve().parent / "results" / "platform.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
