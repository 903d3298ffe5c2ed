"""The pass pipeline: kernel -> (optimised kernel, op counts before and after each pass).

    build (pruning + naming as the recursion goes)
    -> float units as integers -> fold constant checks -> dead code -> [cse -> dead code]
    -> shorter chains -> statement order
with :func:`generator.ir.check_invariants` after every pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from mechgen.generator.ir import ColumnLoop, Kernel, check_invariants
from mechgen.generator.model import Chain
from mechgen.generator.passes.cse import common_subexpressions
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code
from mechgen.generator.passes.latency import shorten_chains
from mechgen.generator.passes.schedule import schedule_statements
from mechgen.generator.passes.units import integer_units
from mechgen.generator.passes.opcount import count_expr_ops, count_ops
from mechgen.generator.scalar import counting_dense


@dataclass
class Generated:
    kernel: Kernel
    ops: dict[str, int]                       # final op count
    passes: list[tuple[str, dict[str, int]]]  # op count after building and after each pass
    dense: dict[str, int]                     # same equations as dense matrix operations
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


PASSES: list[tuple[str, Callable[[Kernel], Kernel]]] = [
    ("integer_units", integer_units),
    ("fold_checks", drop_unguarded_checks),
    ("dead_code", remove_dead_code),
    ("cse", common_subexpressions),
    ("dead_code_after_cse", remove_dead_code),
    ("shorten_chains", shorten_chains),
    ("schedule", schedule_statements),
]
FINAL = ("shorten_chains", "schedule")
"""Passes that change the grouping and order of the operations, not their number: run on the
chosen candidate only (:func:`optimise`)."""


def optimise(build: Callable[[Chain], Kernel], chain: Chain, cse: bool = True,
             final: bool = True) -> Generated:
    """The kernel of ``build`` through the passes; a build with ``candidates`` (alternative
    builds of the same kernel, see :func:`choice`) gives the candidate with the fewest
    operations after the passes (the first on a tie), the :data:`FINAL` passes run on it
    alone (``final=False`` leaves them out)."""
    candidates = getattr(build, "candidates", None)
    if candidates:
        best = fewest_operations((optimise(c, chain, cse, final=False) for c in candidates),
                                 lanes=getattr(build, "lanes", False))
        return finish(best) if final else best
    t0 = time.perf_counter()
    with counting_dense() as dense_ops:
        k = build(chain)
    dense = dense_ops.as_dict()
    history: list = []
    k = _run(k, [("built", lambda built: built)]
             + [(n, p) for n, p in PASSES if n not in FINAL
                and (cse or not n.startswith(("cse", "dead_code_after")))], history)
    g = Generated(k, history[-1][1], history, dense, time.perf_counter() - t0)
    return finish(g) if final else g


BASELINE_LANES = 2
"""Doubles per vector instruction of the baseline target (SSE2), the one every CPU runs."""


def lane_ops(k: Kernel, total: int) -> int:
    """The operations of ``k`` (``total``: its op count, every column loop's body once per
    column) with each column loop's body counted once per BASELINE_LANES columns, as the
    baseline target evaluates it: what the choice between forms compares, so that a form
    whose legs run in vector lanes is not lost to one with a few operations fewer run one
    leg after another. Without loops, ``total``."""
    for st in k.body:
        if isinstance(st, ColumnLoop):
            body = sum(count_expr_ops(b.expr for b in st.body).values())
            n = len(st.columns)
            total -= body * (n - -(-n // BASELINE_LANES))
    return total


def fewest_operations(candidates: Iterable[Generated], lanes: bool = False) -> Generated:
    """The candidate with the fewest operations (the first on a tie); with ``lanes``, counted
    as the baseline target runs them (:func:`lane_ops`: a builder whose forms loop over a
    tree's legs, generator/families/serial/leg_loops.py, asks for it with its attribute
    ``lanes``)."""
    if lanes:
        return min(candidates, key=lambda g: lane_ops(g.kernel, g.ops["total"]))
    return min(candidates, key=lambda g: g.ops["total"])


def finish(g: Generated) -> Generated:
    """``g`` through the :data:`FINAL` passes."""
    t0 = time.perf_counter()
    history = list(g.passes)
    k = _run(g.kernel, [(n, p) for n, p in PASSES if n in FINAL], history)
    return Generated(k, history[-1][1], history, g.dense,
                     g.seconds + time.perf_counter() - t0, g.extra)


def _run(k: Kernel, passes: list, history: list) -> Kernel:
    """``k`` through ``passes``, the invariants checked after each, its op count appended to
    ``history``."""
    counted: dict = {}   # expression -> its op count, and its free symbols, kept across the
    free: dict = {}      # passes (most statements come out of a pass unchanged)
    for name, p in passes:
        k = p(k)
        check_invariants(k, free)
        history.append((name, count_ops(k, counted)))
    return k


def choice(*candidates: Callable[[Chain], Kernel]) -> Callable:
    """Decorate a builder whose kernel has alternative forms: :func:`optimise` builds every
    candidate and keeps the one with the fewest operations; calling the builder directly
    gives that candidate's (unoptimised) kernel."""
    def wrap(build: Callable[[Chain], Kernel]) -> Callable[[Chain], Kernel]:
        def chosen(chain: Chain) -> Kernel:
            best = min(candidates, key=lambda c: optimise(c, chain).ops["total"])
            return best(chain)
        chosen.__name__, chosen.__doc__ = build.__name__, build.__doc__
        chosen.__qualname__ = build.__qualname__
        chosen.candidates = candidates
        return chosen
    return wrap
