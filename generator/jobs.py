"""Independent generation work (the kernels of one mechanism, their rendered text) spread over
the CPU's cores, in forked worker processes.

Every kernel of a mechanism is built by its own recursion from the model alone, and rendered
from its own IR alone, so the work items share nothing but read-only input. A forked worker
inherits that input (the model, the builders, SymPy's cache as it stands), computes one item,
and sends back the result pickled. An item may need other items' results (the final passes of
a kernel's cheapest form need the forms: :func:`map_graph`); they are sent to the worker that
computes it, pickled too. SymPy expressions rebuild to the same trees: the files are
byte-identical whatever the number of workers (tests/test_parallel_generation.py). What a
worker does not share is the SymPy cache that the kernels before it would have filled in one
process, so two workers gain less than two cores (README, "Generation time").

While the workers run, the parent's objects are frozen (``gc.freeze``): a worker's collector
then never walks the objects it inherited, which would copy every page that holds one
(printing hexapod_rsu's kernels in 2 workers, forked from the parent that holds them all:
4.2 s unfrozen, 2.6 s frozen).

The number of workers: ``jobs`` given by the caller (``mechgen generate --jobs N``), else the
environment's ``MECHGEN_JOBS``, else the cores this process may run on. One worker, a single
item, a system other than Linux (macOS's system libraries are not fork-safe), or a parent
that runs other threads (forking a process with threads can copy a lock another thread
holds) all give the plain serial loop.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing.reduction import ForkingPickler
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

import sympy as sp

T = TypeVar("T")

_TASK: Callable[[int, tuple], object] | None = None    # the work of the current map, seen by forks


def _from_args(cls: type, args: tuple) -> sp.Expr:
    """A sum or product rebuilt from its arguments as they are (already flattened and in
    canonical order), not flattened and sorted again: unpickling hexapod_rsu's 19 kernels
    (SymPy's cache cleared) takes 1.6-1.8 s instead of 2.3-2.6 s, in the parent, beside the
    workers. The same trees (tests/test_parallel_generation.py compares the files)."""
    return cls._from_args(args)


def _reduce_assoc(e: sp.Expr) -> tuple:
    return _from_args, (type(e), e.args)


def _unevaluated(cls: type, args: tuple) -> sp.Expr:
    """A maximum, minimum, absolute value, power or elementary function rebuilt from its
    arguments without evaluating it again: SymPy's pickles call the class, which for ``Max``
    and ``Min`` compares every pair of arguments through the assumptions system. Unpickling
    apas_interface's contact kernel (403 Max, 216 Min) took 3.7 s, with SymPy's cache
    cleared, beside 9 s to build it. The object made is the one pickled (its arguments are
    those evaluation kept)."""
    return cls(*args, evaluate=False)


def _reduce_unevaluated(e: sp.Expr) -> tuple:
    return _unevaluated, (type(e), e.args)


for _cls in (sp.Add, sp.Mul):       # the workers' results (multiprocessing's pickler only)
    ForkingPickler.register(_cls, _reduce_assoc)
for _cls in (sp.Max, sp.Min, sp.Abs, sp.Pow, sp.sin, sp.cos, sp.tan, sp.asin, sp.acos,
             sp.atan, sp.atan2, sp.exp, sp.log, sp.sign):
    ForkingPickler.register(_cls, _reduce_unevaluated)


def default_jobs() -> int:
    """``$MECHGEN_JOBS`` if set (a positive integer), else the cores this process may use."""
    text = os.environ.get("MECHGEN_JOBS", "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"MECHGEN_JOBS={text!r}: expected a positive integer")
        return int(text)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Forked workers are safe here: Linux, and no other thread running."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def _run(i: int, given: tuple):
    return _TASK(i, given)


def map_items(task: Callable[[int], T], n: int, jobs: int | None = None,
              start: Sequence[int] | None = None) -> Iterator[T]:
    """``task(0), ..., task(n - 1)``, yielded in that order as each is ready; computed in up
    to ``jobs`` forked workers (module docstring), or in this process. ``start``: the order
    in which the workers take the items up (default: 0, 1, ...; the longest first keeps the
    workers busy to the end); the serial loop and the results keep the index order."""
    return map_graph(lambda i, given: task(i), n, {}, jobs, start)


def map_graph(task: Callable[[int, tuple], T], n: int, after: Mapping[int, Sequence[int]],
              jobs: int | None = None, start: Sequence[int] | None = None) -> Iterator[T]:
    """:func:`map_items` for items that need others' results: ``task(i, given)``, ``given``
    the results of the items ``after[i]`` (all of lower index; () for an item not in
    ``after``), sent to the worker that computes item i, which is taken up as soon as they
    are done. Of the items ready, the workers take the first in ``start`` order. One item
    more than the workers is handed out, so that a worker never waits for this process to
    read a result; an item that becomes ready waits at most for that one, not for the items
    ``start`` lists after it. Results are yielded in index order; the first failing item in
    that order raises its error, as in the serial loop (the items not started are dropped)."""
    global _TASK
    jobs = min(default_jobs() if jobs is None else jobs, n)
    order = list(range(n)) if start is None else list(start)
    if sorted(order) != list(range(n)):
        raise ValueError(f"start={order!r} is not an order of the {n} items")
    for i, needs in after.items():
        if not all(0 <= j < i for j in needs):
            raise ValueError(f"item {i} needs {list(needs)!r}: only items of lower index")
    if jobs <= 1 or _TASK is not None or not can_fork():    # (a map inside a map: serial)
        done: list = []
        for i in range(n):
            done.append(task(i, tuple(done[j] for j in after.get(i, ()))))
            yield done[i]
        return
    _TASK = task
    freeze = gc.get_freeze_count() == 0     # (not if the program froze objects itself)
    if freeze:
        gc.freeze()     # the workers' collector skips what they inherit (module docstring)
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            yield from _scheduled(pool, jobs, n, after, order)
    finally:
        _TASK = None
        if freeze:
            gc.unfreeze()


def _scheduled(pool: ProcessPoolExecutor, jobs: int, n: int,
               after: Mapping[int, Sequence[int]], order: list[int]) -> Iterator:
    """:func:`map_graph`'s results from the ``jobs`` workers of ``pool``: ``jobs + 1`` items
    handed out at a time, each when the items it needs are done, in ``order`` among those
    ready."""
    results: dict[int, object] = {}
    failed: dict[int, BaseException] = {}
    running: dict = {}          # future -> item
    waiting = list(order)       # items not started, in the order they are taken up
    nxt = 0
    try:
        while True:
            for i in list(waiting):     # hand out first: the caller may be slow per result
                if len(running) > jobs:
                    break
                needs = after.get(i, ())
                if all(j in results for j in needs):
                    waiting.remove(i)
                    running[pool.submit(_run, i, tuple(results[j] for j in needs))] = i
            while nxt in results:
                yield results[nxt]
                nxt += 1
            if nxt >= n:
                return
            if nxt in failed:
                raise failed[nxt]
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                i = running.pop(f)
                if f.exception() is None:
                    results[i] = f.result()
                else:
                    failed[i] = f.exception()
    except BaseException:       # the first failing item, as the serial loop: the items not
        pool.shutdown(cancel_futures=True)      # started are dropped
        raise
