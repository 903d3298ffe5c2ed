"""Batches of states split across threads: one persistent pool, chunks aligned to whole blocks.

A C batch function ``f_batch(n, ins..., outs..., status)`` evaluates its states independently,
and cffi releases the GIL while it runs, so a batch split into contiguous chunks of states, one
chunk per thread, gives the same bits as one call: every state is computed by the same code
from the same inputs. Chunks start at multiples of :data:`ALIGN` states, so a batch function
that works on blocks of states (SIMD lanes) sees, in every chunk, the same blocks as in a call
over the whole batch, and the last chunk ends where the whole batch ends.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

ALIGN = 64                  # states; a multiple of any SIMD block (4, 8, 16 doubles)
AUTO_MIN_STATES = 4096      # threads="auto": at least this many states per thread

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def available_cpus() -> int:
    """CPUs this process may run on (its affinity where the OS reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def thread_count(threads: Any, n: int, kernel: str) -> int:
    """The number of threads for a batch of ``n`` states: ``threads`` itself (a positive
    integer), or for ``"auto"`` one per available CPU, but no more than one per
    :data:`AUTO_MIN_STATES` states (below that, starting a thread costs more than it saves).
    Anything else raises ValueError naming the argument."""
    if isinstance(threads, str) and threads == "auto":
        return max(1, min(available_cpus(), n // AUTO_MIN_STATES))
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)) \
            or threads < 1:
        raise ValueError(f"{kernel}: argument 'threads' must be a positive integer or 'auto', "
                         f"got {threads!r:.40}")
    return int(threads)


def chunks(n: int, threads: int) -> list[tuple[int, int]]:
    """[start, stop) of each thread's states: contiguous, in order, starts at multiples of
    :data:`ALIGN`, at most ``threads`` of them, none empty (one empty span for an empty
    batch)."""
    if n <= 0:
        return [(0, n)]
    per = -(-n // threads)                      # ceil(n / threads)
    per = -(-per // ALIGN) * ALIGN              # rounded up to whole blocks
    return [(lo, min(lo + per, n)) for lo in range(0, n, per)]


def _executor(workers: int) -> ThreadPoolExecutor:
    """The persistent pool, grown (replaced by a larger one) when more workers are asked for."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool, _pool_size = ThreadPoolExecutor(workers, "mechgen-batch"), workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def run_chunks(run: Callable[[int, int], Any], spans: list[tuple[int, int]]) -> list:
    """``run(start, stop)`` for every span: the first in the calling thread, the others in the
    pool, all at once; returns their results in order (an exception is raised after every
    span has finished, so no thread still writes into the caller's arrays)."""
    if len(spans) == 1:
        return [run(*spans[0])]
    futures = [_executor(len(spans) - 1).submit(run, lo, hi) for lo, hi in spans[1:]]
    try:
        first = run(*spans[0])
    finally:
        done = [f.exception() for f in futures]      # waits for every chunk
    errors = [e for e in done if e is not None]
    if errors:
        raise errors[0]
    return [first] + [f.result() for f in futures]
