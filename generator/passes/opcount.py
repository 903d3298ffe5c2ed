"""Exact operation count of a kernel: adds, muls, divs, sqrt, trig calls.

A subtraction counts as an add, ``x/y`` as one div, ``x**2`` as one mul, a negation or a
``-1`` coefficient costs nothing (it folds into the neighbouring add), a numeric coefficient
other than +-1 costs one mul. Inputs unpacked and outputs stored cost nothing.

A column loop (generator/ir.ColumnLoop) counts as what it computes: its body's operations
times its number of columns, plus the operations of its column values (the same count as
its unrolled form, passes/loops.unroll_loops). Copying values into and out of the loop costs
nothing, like the inputs and outputs of a kernel.
"""

from __future__ import annotations

from collections import Counter

import sympy as sp

from mechgen.generator.ir import ColumnLoop, Kernel

TRIG = (sp.sin, sp.cos, sp.tan, sp.asin, sp.acos, sp.atan, sp.atan2)


def _ops(e: sp.Expr, c: Counter) -> None:
    if e.is_Atom:
        return
    if e.is_Add:
        c["adds"] += len(e.args) - 1
    elif e.is_Mul:
        factors = [a for a in e.args if a != -1]
        dens = [a for a in factors if a.is_Pow and a.exp.is_Number and a.exp < 0]
        nums = len(factors) - len(dens)
        c["muls"] += max(nums - 1, 0)
        c["divs"] += len(dens)
        for d in dens:
            # x**-1 is one div (counted above); x**-2 costs an extra mul
            if d.exp != -1 and d.exp.is_Integer:
                c["muls"] += int(-d.exp) - 1
            _ops(d.base, c)
        for a in factors:
            if a not in dens:
                _ops(a, c)
        return
    elif e.is_Pow:
        if e.exp == sp.S.Half:
            c["sqrt"] += 1
        elif e.exp.is_Integer and e.exp > 0:
            c["muls"] += int(e.exp) - 1
        elif e.exp.is_Integer and e.exp < 0:
            c["divs"] += 1
            c["muls"] += int(-e.exp) - 1
        elif e.exp == -sp.S.Half:
            c["sqrt"] += 1
            c["divs"] += 1
        else:
            c["pow"] += 1
        _ops(e.base, c)
        return
    elif isinstance(e, TRIG):
        c["trig"] += 1
    elif isinstance(e, (sp.Abs, sp.Max, sp.Min, sp.Piecewise)):
        c["other"] += 1
    for a in e.args:
        _ops(a, c)


def count_expr_ops(exprs) -> Counter:
    """Operations of scalar expressions as written (adds, muls, divs, sqrt, trig, ...)."""
    c: Counter = Counter()
    for e in exprs:
        _ops(sp.sympify(e), c)
    return c


def count_ops(k: Kernel, memo: dict | None = None) -> dict[str, int]:
    """The kernel's op count. ``memo`` (expression -> its Counter), kept by the caller across
    the passes of one kernel, spares recounting the statements a pass left unchanged."""
    loops = [st for st in k.body if isinstance(st, ColumnLoop)]
    exprs = [*(st.expr for st in k.body if not isinstance(st, ColumnLoop)),
             *(e for loop in loops for e in loop.inputs),
             *(e for port in k.outputs for e in port.elements)]
    if memo is None:
        c = count_expr_ops(exprs)
    else:
        c = Counter()
        for e in exprs:
            counted = memo.get(e)
            if counted is None:
                counted = memo[e] = count_expr_ops([e])
            c.update(counted)
    for loop in loops:
        for key, v in count_expr_ops(st.expr for st in loop.body).items():
            c[key] += v * len(loop.columns)
    out = {key: c.get(key, 0) for key in ("adds", "muls", "divs", "sqrt", "trig")}
    for extra in ("pow", "other"):
        if c.get(extra):
            out[extra] = c[extra]
    out["total"] = sum(out.values())
    return out
