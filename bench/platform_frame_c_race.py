"""Before/after race of the frame-C reduction (generator/families/parallel/frame_c.py): the
kernels of two generated trees (``--before``: e.g. a copy of generated/ before the change,
``--after``: generated/) timed in one run, interleaved, beside Pinocchio's C++
constraintDynamics (bench/pinocchio_constraint_race.py) and MuJoCo's mj_forward
(bench/mujoco_race.py) on the same states: ns per state, one state repeated (1) and 2000
states (N), best of ``--rounds`` interleaved rounds (the machine is shared).

    python bench/platform_frame_c_race.py --before /tmp/base/generated gough_stewart_docking
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import mujoco_race, pinocchio_constraint_race as pcr  # noqa: E402
from mechgen.generator.families.parallel.platform import numeric_platform  # noqa: E402
from mechgen.generator.frontend import load as load_spec  # noqa: E402
from tests.platforms import random_states  # noqa: E402

HERE = Path(__file__).resolve().parent
KEYS = ("ours_single_ns", "ours_batch_ns", "accel_single_ns", "accel_batch_ns",
        "pin_single_ns", "pin_batch_ns")


def race(name: str, before: Path, after: Path, rounds: int, reps: int) -> dict:
    """{"before": {...}, "after": {...}, "mujoco": {...}}: best times of ``rounds`` rounds."""
    num = numeric_platform(load_spec(HERE.parent / "generator" / "mechanisms" / f"{name}.toml"))
    prep = {"before": pcr.prepare(name, before, num=num), "after": pcr.prepare(name, after,
                                                                                num=num)}
    st = random_states(num, 2000, seed=7)
    mj = mujoco_race.time_mj_forward(num, st["x"], st["u"], repeats=10)
    best = {k: {} for k in prep}
    mj_best = {"single": mj["single_ns_per_call"], "batch": mj["ns_per_call"]}
    for i in range(rounds):
        for side in prep:
            r = pcr.run(prep[side], reps)
            for k in KEYS:
                best[side][k] = min(best[side].get(k, np.inf), r[k])
        if i and "xml" in mj:
            kv = mujoco_race.run_harness(mj["xml"], mj["states"], 10)
            mj_best["batch"] = min(mj_best["batch"], float(kv["ns_min"][0]))
            mj_best["single"] = min(mj_best["single"], float(kv["single_ns_min"][0]))
    return {**best, "mujoco": mj_best}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=HERE.parent / "generated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"{'mechanism':22s} {'kernel':10s} {'before 1':>8s} {'before N':>8s} {'after 1':>8s} "
          f"{'after N':>8s} {'MJ/af 1':>7s} {'MJ/af N':>7s} {'Pin/af 1':>8s} {'Pin/af N':>8s}")
    for name in args.names:
        r = race(name, args.before, args.after, args.rounds, args.reps)
        b, a, mj = r["before"], r["after"], r["mujoco"]
        pin1 = min(b["pin_single_ns"], a["pin_single_ns"])
        pinN = min(b["pin_batch_ns"], a["pin_batch_ns"])
        for kernel, pre in (("step", "ours"), ("step_accel", "accel")):
            s1, sN = a[f"{pre}_single_ns"], a[f"{pre}_batch_ns"]
            print(f"{name:22s} {kernel:10s} {b[f'{pre}_single_ns']:8.0f} "
                  f"{b[f'{pre}_batch_ns']:8.0f} {s1:8.0f} {sN:8.0f} {mj['single'] / s1:7.1f} "
                  f"{mj['batch'] / sN:7.1f} {pin1 / s1:8.1f} {pinN / sN:8.1f}", flush=True)
        print(f"{'':22s} {'(MuJoCo, Pinocchio ns: 1 / N)':s} {mj['single']:.0f} / "
              f"{mj['batch']:.0f}, {pin1:.0f} / {pinN:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
