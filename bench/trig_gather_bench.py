"""Gathered sines and cosines (docs/sincos.md) before/after: a plain C timing loop, no Pinocchio.

    python bench/trig_gather_bench.py --before e2fecec [--mechs ur5 panda solo12] [--rounds 5]
        [--flags "-O2 -std=c99 -fno-math-errno -ffp-contract=off"]

For each mechanism, the C file of git revision ``--before`` (per-pair ``mg_sincos`` calls) and
the one in generated/ (this tree) are each compiled with one small driver (``--flags``, default
the runtime's CFLAGS) into two programs. Each program times the ``_batch`` functions of
forward_kinematics and mass_matrix on 10^4 random states q ~ U(-1, 1) (best of 5 passes, ns
per state); the two programs run alternately ``--rounds`` times and the best of all rounds is
printed with the ratio before/after.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from math import prod
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("forward_kinematics", "mass_matrix")
DRIVER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "HEADER"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(void) {
    const int64_t n = 10000;
    double *q = malloc(sizeof(double) * n * NQ), *out = malloc(sizeof(double) * n * OUTS);
    int32_t *st = malloc(sizeof(int32_t) * n);
    srand(1);
    for (int64_t i = 0; i < n * NQ; ++i) q[i] = 2.0 * rand() / RAND_MAX - 1.0;
    double sum = 0.0;
CALLS
    printf("%g\n", sum);
    return 0;
}
"""
CALL = r"""    {
        double best = 1e30;
        for (int r = 0; r < 6; ++r) {
            const double t0 = now();
            FN_batch(n, q, ARGS, st);
            const double t = now() - t0;
            if (r > 0 && t < best) best = t;
            sum += out[n - 1];
        }
        fprintf(stderr, "KNAME %.2f\n", 1e9 * best / n);
    }
"""


def build(folder: Path, mech: str, manifest: dict, flags: list[str], exe: Path) -> None:
    """Compile the driver with ``folder``'s mech.c into ``exe``."""
    calls, outs = [], 0
    kernels = {k["name"]: k for k in manifest["kernels"]}
    nq = prod(kernels["forward_kinematics"]["inputs"][0]["shape"])
    for name in KERNELS:
        sizes = [prod(p["shape"]) for p in kernels[name]["outputs"]]
        offsets, at = [], 0
        for s in sizes:
            offsets.append(f"out + n * {at}")
            at += s
        outs = max(outs, at)
        calls.append(CALL.replace("FN", kernels[name]["c_function"]).replace("KNAME", name)
                     .replace("ARGS", ", ".join(offsets)))
    src = (DRIVER.replace("HEADER", str(folder / f"{mech}.h")).replace("CALLS", "".join(calls))
           .replace("NQ", str(nq)).replace("OUTS", str(outs)))
    (exe.parent / f"{exe.name}.c").write_text(src)
    subprocess.run(["gcc", *flags, f"-I{folder}", str(exe.parent / f"{exe.name}.c"),
                    str(folder / f"{mech}.c"), "-lm", "-o", str(exe)], check=True)


def run(exe: Path) -> dict[str, float]:
    """ns per state of each kernel, from one run of ``exe``."""
    err = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stderr
    return {line.split()[0]: float(line.split()[1]) for line in err.splitlines()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="git revision of the per-pair kernels")
    ap.add_argument("--mechs", nargs="+", default=["ur5", "panda", "solo12"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--flags", default="-O2 -std=c99 -fno-math-errno -ffp-contract=off")
    args = ap.parse_args(argv)
    flags = args.flags.split()
    print(f"flags: {args.flags}")
    print(f"{'mech':8} {'kernel':20} {'before ns':>10} {'after ns':>10} {'before/after':>12}")
    with tempfile.TemporaryDirectory(prefix="mechgen_trig_") as tmp:
        for mech in args.mechs:
            folder = ROOT / "generated" / mech
            manifest = json.loads((folder / "manifest.json").read_text())
            old = Path(tmp) / f"{mech}_before"
            old.mkdir()
            for name in (f"{mech}.c", f"{mech}.h"):
                (old / name).write_text(subprocess.run(
                    ["git", "-C", str(ROOT), "show", f"{args.before}:generated/{mech}/{name}"],
                    capture_output=True, text=True, check=True).stdout)
            exes = {"before": Path(tmp) / f"{mech}_b", "after": Path(tmp) / f"{mech}_a"}
            build(old, mech, manifest, flags, exes["before"])
            build(folder, mech, manifest, flags, exes["after"])
            best = {side: {} for side in exes}
            for _ in range(args.rounds):
                for side, exe in exes.items():
                    for k, ns in run(exe).items():
                        best[side][k] = min(best[side].get(k, float("inf")), ns)
            for k in KERNELS:
                b, a = best["before"][k], best["after"][k]
                print(f"{mech:8} {k:20} {b:10.1f} {a:10.1f} {b / a:12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
