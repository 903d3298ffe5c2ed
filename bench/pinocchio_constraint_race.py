"""Speed race: our generated parallel-mechanism ``step`` against Pinocchio's C++
``constraintDynamics`` on the same mechanism (bench/pinocchio_constraint_model.py), both in
compiled loops in one process (bench/pinocchio_constraint_harness.cpp).

    r = race("hexapod_spu", Path("generated"))   # {"ours_batch_ns", "pin_batch_ns", ...}

What is timed (ns per state, best of ``reps`` interleaved repetitions after one warm-up):
- ours_batch: ``<mech>_step_batch`` over N distinct states (pose, velocity, drive forces,
  external load; our step also solves the legs' inverse kinematics and velocities and
  evaluates the joint laws, and returns leg accelerations, leg forces on C, base loads);
- ours_single: ``<mech>_step`` N times on one state (one call per step, as a simulator does);
- accel_batch, accel_single: the same for the lean ``<mech>_step_accel`` (the state derivative
  and the leg accelerations only: what constraintDynamics returns; the harness checks that it
  gives step's xdot and qdd, ``accel_vs_step``);
- pin_batch: ``constraintDynamics`` over the same N states (``initConstraintDynamics`` once
  before the loop, as Pinocchio's examples do), given q and v of every joint and tau (the laws,
  evaluated here beforehand): only the constrained forward dynamics;
- pin_single: ``constraintDynamics`` N times on one state;
- pin_init: ``initConstraintDynamics`` + ``constraintDynamics`` per state.
Each repetition runs Pinocchio on another of seven copies of its ``Data`` (and constraint
datas) and writes our single-state calls' outputs at another offset of a padded buffer, as
bench/pinocchio_harness.cpp does ("Placements"), so that neither side's best time is that of
the one place an allocation happened to land.
ProximalSettings(1e-12, 1e-10, 10) (accuracy, mu, iterations): mu and the iteration count of
Pinocchio's closed-kinematic-chain example, a tighter accuracy (1e-8 there) so the result
matches ours to ~1e-15.

Same mechanism, checked before anything is timed: at every timed state Pinocchio's platform
acceleration (Python bindings) must equal our step's udot to CHECK_RTOL relative, and the
harness's own ddq of the first states must equal the bindings'; otherwise the race raises.
States: tests/platforms.random_states (seed 7), gravity fixed at the spec's (the harness's model
has one gravity), only states our step accepts (inside the joint limits).

Build: as bench/pinocchio_race.py (``-O3 -DNDEBUG``, plus ``-fno-math-errno`` as the runtime
compiles the kernels (runtime/cbuild.py: sqrt inline, no libm call setting errno), the same
flags for both sides, ``RACE_FLAGS``, and ``-fopenmp-simd`` for our kernels as the runtime
gives it (``MECHGEN_RACE_OURS_CFLAGS`` replaces that); cached in
bench/results/pinocchio_build/; the Pinocchio part compiles once, about a minute).
Run ``python bench/pinocchio_constraint_race.py hexapod_spu`` for one mechanism's numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import pinocchio_constraint_model as pcm  # noqa: E402
from bench.pinocchio_race import (BUILD_DIR, FLAGS, OURS_EXTRA_FLAGS, PIN_DEFINES,  # noqa: E402
                                  TIMING_HEADER, _cached, _hash, _prefix, c_symbol_prefix)

HARNESS_SRC = HERE / "pinocchio_constraint_harness.cpp"
RACE_FLAGS = [*FLAGS, "-fno-math-errno"]
PROX = (1e-12, 1e-12, 1e-10, 10)     # absolute and relative accuracy, mu, max iterations
CHECK_RTOL = 1e-8
STEP_INPUTS = ["x", "u", "F", "fE", "mE", "g", "p"]


def build_harness(mech: str, src_dir: Path, ours_flags: list[str] | None = None) -> Path:
    """The harness binary for ``mech`` (compiled unless cached); ``ours_flags`` (default
    OURS_EXTRA_FLAGS) are added to our kernels' compilation only."""
    ours_flags = OURS_EXTRA_FLAGS if ours_flags is None else ours_flags
    import pinocchio
    pre = _prefix()
    inc = [f"-I{pre / 'include'}", f"-I{pre / 'include' / 'eigen3'}"]
    cxx, cc = os.environ.get("CXX", "g++"), os.environ.get("CC", "gcc")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    pin_cmd = [cxx, "-std=c++17", *RACE_FLAGS, *PIN_DEFINES, *inc, "-c", str(HARNESS_SRC)]
    pin_key = _hash(HARNESS_SRC.read_bytes() + TIMING_HEADER.read_bytes(), pin_cmd, version,
                    pinocchio.__version__)
    pin_obj = BUILD_DIR / f"constraint-pinocchio-{pin_key}.o"
    if not pin_obj.exists():
        print("compiling the Pinocchio constraint harness (first time, ~1 min)...",
              file=sys.stderr, flush=True)
    _cached(pin_obj, pin_cmd)
    src_dir = Path(src_dir).resolve()
    c, h = src_dir / f"{mech}.c", src_dir / f"{mech}.h"
    glue_cmd = [cxx, "-std=c++17", *RACE_FLAGS, "-DMECHGEN_GLUE",
                f"-DMECHGEN_MECH={c_symbol_prefix(src_dir)}", f'-DMECHGEN_HEADER="{h}"',
                "-c", str(HARNESS_SRC)]
    mech_cmd = [cc, "-std=c99", *RACE_FLAGS, *ours_flags, f"-I{src_dir}", "-c", str(c)]
    key = _hash(pin_key, glue_cmd, mech_cmd, c.read_bytes(), h.read_bytes())
    exe = BUILD_DIR / f"constraint-{mech}-{key}"
    if not exe.exists():
        glue = _cached(BUILD_DIR / f"constraint-{mech}-{key}-glue.o", glue_cmd)
        obj = _cached(BUILD_DIR / f"constraint-{mech}-{key}-c.o", mech_cmd)
        lib = pre / "lib"
        _cached(exe, [cxx, str(pin_obj), str(glue), str(obj), f"-L{lib}", "-lpinocchio_default",
                      f"-Wl,-rpath,{lib}"])
    return exe


def _step_kernel(src_dir: Path) -> dict:
    manifest = json.loads((Path(src_dir) / "manifest.json").read_text())
    step = next(k for k in manifest["kernels"] if k["name"] == "step")
    names = [i["name"] for i in step["inputs"]]
    if names != STEP_INPUTS or len(step["outputs"]) != 9:
        raise ValueError(f"{src_dir}/manifest.json: step takes {names} and returns "
                         f"{len(step['outputs'])} outputs; the harness expects {STEP_INPUTS} "
                         "and 9")
    return step


def pinocchio_states(mech, num: dict, n: int, seed: int = 7) -> dict:
    """n states our step accepts, our inputs, and Pinocchio's q, v, tau at them (gravity fixed
    at the spec's); Pinocchio's udot from the bindings checked against ours (raises if not)."""
    import pinocchio as pin
    from tests.platforms import law_forces, random_states
    st = random_states(num, 2 * n, seed)
    st["g"][:] = num["gravity"]
    p = np.tile(mech.params(), (2 * n, 1))
    out = mech.step(st["x"], st["u"], st["F"], st["fE"], st["mE"], st["g"], p=p, errors="nan")
    ok = np.flatnonzero(np.isfinite(out[0]).all(axis=1))[:n]
    if len(ok) < n:
        raise RuntimeError(f"{num['name']}: only {len(ok)} of {2 * n} random states accepted")
    desc = pcm.describe(num)
    model, cms = pcm.build(desc)
    cms = pin.StdVec_RigidConstraintModel(cms)
    data = model.createData()
    cds = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
    pin.initConstraintDynamics(model, data, cms, cds)
    split = np.cumsum([len(leg["joints"]) for leg in num["legs"]])[:-1]
    qs, vs, taus, ddqs, worst = [], [], [], [], 0.0
    for i in ok:
        legs_q, legs_qd = np.split(out[1][i], split), np.split(out[2][i], split)
        q, v = pcm.pin_state(desc, model, st["x"][i], st["u"][i], legs_q, legs_qd)
        tau = pcm.pin_tau(desc, model, st["x"][i], law_forces(num, legs_q, legs_qd, st["F"][i]),
                          st["fE"][i], st["mE"][i])
        ddq = pin.constraintDynamics(model, data, q, v, tau, cms, cds,
                                     pin.ProximalSettings(*PROX))
        udot, ours = pcm.platform_udot(st["x"][i], v, ddq), out[0][i, 6:]
        worst = max(worst, float(np.abs(udot - ours).max() / np.abs(ours).max()))
        qs.append(q), vs.append(v), taus.append(tau), ddqs.append(ddq.copy())
    if not worst <= CHECK_RTOL:
        raise RuntimeError(f"{num['name']}: Pinocchio's model is not our mechanism: platform "
                           f"acceleration differs by {worst:.2g} relative (> {CHECK_RTOL:g}); "
                           "not timing it")
    ours_in = {k: st[k][ok] for k in STEP_INPUTS if k != "p"}
    ours_in["p"] = p[ok]
    return {"desc": desc, "pin_q": np.array(qs), "pin_v": np.array(vs),
            "pin_tau": np.array(taus), "ddq": np.array(ddqs), "ours": ours_in,
            "udot_rel_err": worst, "nq": model.nq, "nv": model.nv,
            "constraint_rows": sum(3 if c["type"] == 3 else 6 for c in desc["constraints"])}


def prepare(name: str, generated: Path, n: int = 2000, check: int = 5,
            num: dict | None = None) -> dict:
    """Everything a timing run needs: the states (checked, see pinocchio_states), the
    harness's config lines and binary. ``generated/name`` holds our kernels; ``num``: the
    numeric description, else read from the bundled spec generator/mechanisms/<name>.toml."""
    from mechgen import runtime
    src_dir = Path(generated).resolve() / name
    step = _step_kernel(src_dir)
    mech = runtime.load(name, "c", generated=Path(generated))
    if num is None:
        from mechgen.generator.families.parallel.platform import numeric_platform
        from mechgen.generator.frontend import load as load_spec
        num = numeric_platform(load_spec(HERE.parent / "generator" / "mechanisms" / f"{name}.toml"))
    s = pinocchio_states(mech, num, n)
    sizes = [math.prod(o["shape"]) for o in step["outputs"]]
    s["config"] = pcm.to_text(s["desc"]) + [
        f"prox {' '.join(map(repr, PROX))}", f"n {n}", f"check {check}",
        f"ours {s['ours']['F'].shape[1]} {s['ours']['p'].shape[1]} {len(sizes)} "
        + " ".join(map(str, sizes)), f"accel {sizes[3]}"]
    s.update(name=name, n=n, check=check, exe=build_harness(name, src_dir))
    return s


def run(s: dict, reps: int = 7) -> dict:
    """One harness run on prepared states ``s``: ns per state (best of ``reps``) and ratios;
    raises if the harness's ddq is not the bindings'."""
    with tempfile.TemporaryDirectory(prefix="pin_constraint_") as tmp:
        states = Path(tmp) / "states.bin"
        with open(states, "wb") as f:
            for a in [s["pin_q"], s["pin_v"], s["pin_tau"], *s["ours"].values()]:
                f.write(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        cfg = Path(tmp) / "config.txt"
        cfg.write_text("\n".join(s["config"] + [f"reps {reps}", f"states {states}"]) + "\n")
        r = subprocess.run([str(s["exe"]), str(cfg)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"harness failed: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    if (out["nq"], out["nv"]) != (s["nq"], s["nv"]) or out["ours_failed"] or \
            out["ours_single_status"] or out["accel_failed"] or not out["accel_vs_step"] <= 1e-12:
        raise RuntimeError(f"{s['name']}: harness model or our step disagrees: {r.stdout[:300]}")
    check = s["check"]
    diff = np.abs(np.array(out["ddq"]) - s["ddq"][:check]).max() / np.abs(s["ddq"][:check]).max()
    if not diff <= CHECK_RTOL:
        raise RuntimeError(f"{s['name']}: the harness's ddq differs from the bindings' by "
                           f"{diff:.2g}")
    t = {k: v["best_ns"] for k, v in out["times"].items()}
    return {"n_states": s["n"], "reps": reps, "nq": s["nq"], "nv": s["nv"],
            "constraint_rows": s["constraint_rows"], "udot_rel_err": s["udot_rel_err"],
            "harness_vs_bindings": float(diff), "prox_iter": out["prox_iter"],
            "accel_vs_step": out["accel_vs_step"],
            **{f"{k}_ns": v for k, v in t.items()},
            **{f"{k}_median_ns": v["median_ns"] for k, v in out["times"].items()},
            "pin_over_ours_batch": t["pin_batch"] / t["ours_batch"],
            "pin_over_ours_single": t["pin_single"] / t["ours_single"],
            "pin_over_accel_batch": t["pin_batch"] / t["accel_batch"],
            "pin_over_accel_single": t["pin_single"] / t["accel_single"]}


def race(name: str, generated: Path, n: int = 2000, reps: int = 7, check: int = 5,
         num: dict | None = None) -> dict:
    """Time our step and Pinocchio's constraintDynamics on mechanism ``name`` (see the module
    docstring and ``prepare``). Returns ns per state and the ratios Pinocchio / ours."""
    return run(prepare(name, generated, n, check, num), reps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mech", nargs="+")
    ap.add_argument("--generated", type=Path, default=HERE.parent / "generated")
    ap.add_argument("--states", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    for name in args.mech:
        r = race(name, args.generated, args.states, args.reps)
        print(f"{name}: nv {r['nv']}, {r['constraint_rows']} constraint rows, udot check "
              f"{r['udot_rel_err']:.1e}; ns per state: ours single {r['ours_single_ns']:.0f}, "
              f"batch {r['ours_batch_ns']:.0f}; Pinocchio single {r['pin_single_ns']:.0f}, "
              f"batch {r['pin_batch_ns']:.0f}, with init {r['pin_init_ns']:.0f}; "
              f"Pinocchio/ours single {r['pin_over_ours_single']:.1f}, batch "
              f"{r['pin_over_ours_batch']:.1f}; step_accel single {r['accel_single_ns']:.0f}, "
              f"batch {r['accel_batch_ns']:.0f}, Pinocchio/step_accel single "
              f"{r['pin_over_accel_single']:.1f}, batch {r['pin_over_accel_batch']:.1f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
