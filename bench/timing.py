"""The one timing rule of the benchmarks: the best of ``repeat`` runs (the least disturbed)."""

from __future__ import annotations

import time


def best(f, repeat: int = 5) -> float:
    """Seconds of the fastest of ``repeat`` calls of ``f()``."""
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - t0)
    return out
