"""`make bench`: generation time, op counts (generated vs dense matrix evaluation) and time per
state of the C kernels (batch of 10^5) vs the Python kernels vs the plain numpy reference,
measured side by side in one run. Prints a table and writes bench/results/bench.json.

A benchmark, not a test: numbers depend on the machine and its load; ratios measured in one run
are what to quote.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mechgen import runtime  # noqa: E402
from bench.timing import best  # noqa: E402
from mechgen.generator.build import bundled_specs, files_for_spec, write_files  # noqa: E402
from tests.chains import numeric_model, random_chain, write_generated  # noqa: E402
from tests.reference import chain_numpy as ref  # noqa: E402

TIMED = ["forward_kinematics", "jacobians", "mass_matrix", "bias", "inverse_dynamics",
         "forward_dynamics"]


def _states(n: int, count: int, nparam: int, rng) -> dict:
    s = {"q": rng.uniform(-1.0, 1.0, (count, n)), "qd": rng.normal(size=(count, n)),
         "qdd": rng.normal(size=(count, n)), "Q": rng.normal(size=(count, n))}
    if nparam:
        s["p"] = np.ones((count, nparam))
    return s


def _ref_call(model, name: str, st: dict, i: int):
    q, qd, qdd, Q = st["q"][i], st["qd"][i], st["qdd"][i], st["Q"][i]
    if name == "forward_kinematics":
        return ref.kinematics(model, q)
    if name == "jacobians":
        return ref.kinematics(model, q)
    if name == "mass_matrix":
        return ref.mass_matrix(model, q)
    if name == "bias":
        return ref.bias(model, q, qd, Q)
    if name == "inverse_dynamics":
        return ref.inverse_dynamics(model, q, qd, qdd)
    return ref.forward_dynamics(model, q, qd, Q)


def bench_mechanism(name: str, root: Path, gen, model, n_c: int, n_py: int, n_np: int) -> dict:
    rng = np.random.default_rng(0)
    c = runtime.load(name, "c", generated=root)
    py = runtime.load(name, "python", generated=root)
    nparam = len(c.parameters)
    st = _states(c.n, n_c, nparam, rng)
    rows = {}
    by_name = {g.kernel.name: g for g in gen}
    for kname in TIMED:
        kc, kp = c.kernels[kname], py.kernels[kname]
        args = {nm: st[nm] for nm, _ in kc.inputs}
        args_py = {nm: a[:n_py] for nm, a in args.items()}
        kc(**{k: v[:10] for k, v in args.items()})  # warm up
        t_c = best(lambda: kc(**args), 5) / n_c
        t_py = best(lambda: kp(**args_py), 2) / n_py
        t_np = best(lambda: [_ref_call(model, kname, st, i) for i in range(n_np)], 2) / n_np
        g = by_name[kname]
        rows[kname] = {"ops": g.ops, "ops_dense": g.dense, "ops_by_pass": g.passes,
                       "t_c_ns": t_c * 1e9, "t_python_ns": t_py * 1e9, "t_numpy_ns": t_np * 1e9,
                       "python_over_c": t_py / t_c, "numpy_over_c": t_np / t_c}
    return rows


def race_pinocchio(cases) -> dict:
    """Our C kernels of every bundled URDF robot against Pinocchio's C++ on the same URDF
    (bench/pinocchio_race.py: compiled loops over one batch, interleaved, best of 7), in the
    default build (-O3 both sides) and, on a CPU with AVX2, the avx2 build (-O3 -mavx2 both
    sides, no FMA: what the runtime compiles on such a CPU). {build: {robot: results}}."""
    from mechgen.runtime.cbuild import isa_flags
    robots, ops = race_robots(cases)
    builds = ["default"] + (["avx2"] if isa_flags() else [])
    return {build: race_build(robots, ops, build) for build in builds}


def race_robots(cases) -> tuple[list, dict]:
    """The race's robots: (name, generated folder, URDF, locked joints, base) of every bundled
    URDF robot and of the general-geometry ones (generated here), and their op counts."""
    import tomllib
    ops = {chain.name: {g.kernel.name: g.ops["total"] for g in gen} for chain, gen, _, _ in cases}
    robots = []   # (name, generated folder, URDF, locked joints, base)
    for spec in bundled_specs():
        data = tomllib.loads(spec.read_text())
        mech, lock = data.get("mechanism", {}), data.get("lock", {})
        if "urdf" in mech:
            robots.append((mech["name"], ROOT / "generated", spec.parent / mech["urdf"], lock,
                           mech.get("base", "fixed")))
    # robots of general geometry (example-robot-data), generated for the bench only
    from bench.general_robots import generate as generate_general
    general = Path(tempfile.mkdtemp(prefix="mechgen_general_"))
    for name, urdf, lock, base, kernel_ops in generate_general(general):
        ops[name] = kernel_ops
        robots.append((name, general, urdf, lock, base))
    return robots, ops


def race_build(robots: list, ops: dict, build: str) -> dict:
    """One build's race table (bench/pinocchio_race.py BUILDS)."""
    from bench.pinocchio_race import BUILDS, race
    print(f"\n== race against Pinocchio (C++, same URDF, same flags {' '.join(BUILDS[build])} "
          f"both sides; compiled loops over 10^4 states, best of 7)")
    print("ours batch: the batch function, outputs of every state kept; ours loop: the "
          "single-state kernel in a loop, outputs overwritten (as Pinocchio's Data)")
    head = (f"{'robot':8s} {'n':>3s} {'kernel':18s} {'ops':>6s} {'batch ns':>8s} "
            f"{'loop ns':>8s} {'Pinocchio ns':>12s} {'Pin/batch':>9s} {'Pin/loop':>8s}")
    print(head + "\n" + "-" * len(head))
    out = {}
    for name, folder, urdf, lock, base in robots:
        res = race(name, folder, urdf, lock, base, build=build)
        n = len(json.loads((folder / name / "manifest.json").read_text())["coordinates"])
        for i, (k, t) in enumerate(res.items()):
            t["ops"] = ops[name][k]
            lead = f"{name:8s} {n:3d}" if i == 0 else " " * 12
            print(f"{lead} {k:18s} {t['ops']:6d} {t['ours_ns']:8.0f} {t['ours_loop_ns']:8.0f} "
                  f"{t['pinocchio_ns']:12.0f} {t['ratio']:9.2f} {t['ratio_loop']:8.2f}",
                  flush=True)
        out[name] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=100_000, help="states per C batch")
    ap.add_argument("--max-n", type=int, default=12, help="largest random chain")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bench.json")
    args = ap.parse_args()
    results = {"machine": platform.platform(), "python": sys.version.split()[0],
               "batch": args.batch, "mechanisms": {}}
    tmp = Path(tempfile.mkdtemp(prefix="mechgen_bench_"))
    from mechgen.generator.families.parallel.spec import is_parallel_spec
    parallel = [s for s in bundled_specs() if is_parallel_spec(s)]
    cases = []
    import tomllib
    contact = [s for s in bundled_specs()
               if tomllib.loads(Path(s).read_text()).get("mechanism", {}).get("family")
               in ("contact", "linkage")]          # not serial: benched by their own modules
    for spec in [s for s in bundled_specs() if s not in parallel and s not in contact]:
        t0 = time.perf_counter()
        chain, gen, files = files_for_spec(spec)
        tgen = time.perf_counter() - t0
        write_files(tmp / chain.name, files)
        pv = {p.name: 1.0 for p in chain.parameters}
        cases.append((chain, gen, tgen, numeric_model(chain, pv)))
    for n in range(1, args.max_n + 1):
        chain, pv = random_chain(100 + n, n, "fixed", composite=False, params=False,
                                 types=["Rx", "Ry", "Rz"])
        chain.name = f"random_n{n}"
        t0 = time.perf_counter()
        gen = write_generated(chain, tmp)
        tgen = time.perf_counter() - t0
        cases.append((chain, gen, tgen, numeric_model(chain, pv)))

    header = (f"{'mechanism':14s} {'n':>3s} {'gen s':>6s} {'kernel':18s} {'ops':>6s} {'dense':>6s} "
              f"{'C ns':>8s} {'Py ns':>9s} {'numpy ns':>9s} {'Py/C':>6s} {'np/C':>7s}")
    print(header)
    print("-" * len(header))
    for chain, gen, tgen, model in cases:
        t0 = time.perf_counter()
        rows = bench_mechanism(chain.name, tmp, gen, model, args.batch, 300, 100)
        results["mechanisms"][chain.name] = {"n": chain.n, "base": chain.base,
                                             "generation_s": tgen, "kernels": rows}
        for i, (k, r) in enumerate(rows.items()):
            lead = f"{chain.name:14s} {chain.n:3d} {tgen:6.2f}" if i == 0 else " " * 25
            print(f"{lead} {k:18s} {r['ops']['total']:6d} {r['ops_dense']['total']:6d} "
                  f"{r['t_c_ns']:8.0f} {r['t_python_ns']:9.0f} {r['t_numpy_ns']:9.0f} "
                  f"{r['python_over_c']:6.0f} {r['numpy_over_c']:7.0f}", flush=True)
    races = race_pinocchio(cases)
    results["pinocchio_race"] = races["default"]
    if "avx2" in races:
        results["pinocchio_race_avx2"] = races["avx2"]
    print("\n== parallel mechanisms: the full step (IK, closure, leg dynamics, reduction, solve, "
          "base loads)")
    from bench.platform_bench import run as run_platforms
    results["parallel"] = run_platforms(parallel, tmp, args.batch)
    print("\n== closed-loop linkages (papers 001, 004)")
    from bench.linkage_bench import linkage_specs, run as run_linkages
    results["linkage"] = run_linkages(linkage_specs(), tmp, args.batch)
    from bench.overhead import run as run_overhead
    results["overhead"] = run_overhead()
    from bench.regressor_bench import run as run_regressor
    results["regressor"] = run_regressor()
    print("\n== batches across states: single-state calls vs scalar batch loop vs SIMD batch")
    from bench.simd_bench import run as run_simd
    results["simd_batch"] = run_simd()
    from bench.generation_bench import run as run_generation   # --all there: the big ones
    results["generation"] = run_generation()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"\nops: generated kernel after all passes; dense: the same equations as dense 3x3 "
          f"matrix operations.\ntimes per state; C in batches of {args.batch}, best of 5. "
          f"Written to {args.out}")


if __name__ == "__main__":
    main()
