"""The generated C's mg_sincos: its accuracy against mpmath and its speed against libm.

    python bench/sincos_bench.py [--points N] [--time-only | --accuracy-only]

Accuracy: the max error in ulps of sin and cos (mg_sincos as a single-state kernel calls it)
against mpmath at 200 bits, on N random arguments (default 10^6) in each range: [-2pi, 2pi],
[-1e5, 1e5], and k pi/2 (|k| < 10^6) moved by up to 8 ulps. About 25 us per mpmath value:
~2.5 min for the default on one core.

Speed: ns per argument (sin and cos both) over 4096 arguments in [-2pi, 2pi], inside compiled
loops that sum the results (tests/trig_driver.py), the three variants interleaved, best of
``--reps`` passes: glibc's sin and cos (GCC merges the pair into one ``sincos`` call), mg_sincos
called per element (runtime flags), and mg_sincos_poly under ``#pragma omp simd`` (the SIMD
build's flags, as the vector loops of the batch kernels run it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.trig_driver import max_ulp_error, run, trig_library  # noqa: E402


def accuracy(points: int, seed: int = 1) -> dict[str, tuple[float, float]]:
    import mpmath
    rng = np.random.default_rng(seed)
    k = rng.integers(-1_000_000, 1_000_000, points) * (np.pi / 2)
    ranges = {"[-2pi, 2pi]": rng.uniform(-2 * np.pi, 2 * np.pi, points),
              "[-1e5, 1e5]": rng.uniform(-1e5, 1e5, points),
              "k pi/2 +- 8 ulp": k + rng.integers(-8, 9, points) * np.spacing(k)}
    lib = trig_library(simd=False)
    out = {}
    for name, x in ranges.items():
        s, c = run(lib, x)
        out[name] = (max_ulp_error(x, s, mpmath.sin), max_ulp_error(x, c, mpmath.cos))
        print(f"  {name:>16}: max error sin {out[name][0]:.3f} ulp, cos {out[name][1]:.3f} ulp"
              f" ({points} arguments)", flush=True)
    return out


def speed(reps: int = 15, n: int = 4096, inner: int = 200) -> dict[str, float]:
    scalar, simd = trig_library(simd=False), trig_library(simd=True)
    x = np.random.default_rng(3).uniform(-2 * np.pi, 2 * np.pi, n)
    variants = {"glibc sin+cos": (scalar, "libm_sincos_sum"),
                "mg_sincos (per call)": (scalar, "mg_sincos_sum"),
                "mg_sincos_poly (omp simd)": (simd, "mg_sincos_poly_sum")}
    best = dict.fromkeys(variants, float("inf"))
    for r in range(reps):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            module, fn = variants[name]
            ptr = module.ffi.cast("double *", x.ctypes.data)
            t0 = time.perf_counter_ns()
            getattr(module.lib, fn)(ptr, n, inner)
            best[name] = min(best[name], (time.perf_counter_ns() - t0) / (n * inner))
    base = best["glibc sin+cos"]
    for name, ns in best.items():
        print(f"  {name:>26}: {ns:6.2f} ns per argument (sin and cos), "
              f"{base / ns:4.2f}x glibc", flush=True)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--time-only", action="store_true")
    ap.add_argument("--accuracy-only", action="store_true")
    args = ap.parse_args(argv)
    if not args.accuracy_only:
        print("== mg_sincos speed, best of interleaved passes")
        speed(args.reps)
    if not args.time_only:
        print("== mg_sincos accuracy against mpmath (200 bits)")
        accuracy(args.points)


if __name__ == "__main__":
    main()
