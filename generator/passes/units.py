"""Exact units: a number whose nearest double is +-1 becomes the integer (rule 1 of paper 000
section 7, dropping the one terms, applied to the numbers the build made).

The build keeps geometry as exact rationals (or 17-digit floats, generator/scalar.fold_constant)
and the printers write every number as its nearest double (backends/base._double). A
coefficient can lie within half an ulp of one: on a near-quarter-turn joint frame (HyQ's URDF
writes pi/2 as 1.57079632679, whose cosine is 4.9e-12) a rotated inertia's coefficient is
1 - 2.4e-23, printed 1.0. SymPy keeps it as a factor (it is not the integer one), so the kernel
multiplied by 1.0. With the integer, SymPy drops the factor: ``y + -1.0*x`` becomes ``y - x``.
Each such operation gives the same bits: x * 1.0 = x and y + (-1.0 * x) = y - x in IEEE
arithmetic, for every x and y; a sum with one term fewer may be grouped otherwise by the later
passes (passes/latency.py), which moves its result by rounding only. (A number printed 0.0 is
left: 0.0 * x is NaN for an infinite x, and x + 0.0 turns -0.0 into +0.0.)

Column loops (generator/ir.ColumnLoop) are left as they are: their bodies are already split
into the operations each column runs (passes/loops.py).
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from mechgen.generator.ir import Assign, Check, Kernel


def exact_units(e: sp.Expr) -> sp.Expr:
    """``e`` with every non-integer number whose nearest double is 1.0 or -1.0 replaced by
    that integer."""
    units = {x: sp.Integer(int(float(x))) for x in e.atoms(sp.Float, sp.Rational)
             if not x.is_Integer and float(x) in (1.0, -1.0)}
    return e.xreplace(units) if units else e


def integer_units(k: Kernel) -> Kernel:
    """The pass: :func:`exact_units` on every statement, check and output element."""
    body = []
    for st in k.body:
        if isinstance(st, Assign):
            st = Assign(st.target, exact_units(st.expr))
        elif isinstance(st, Check):
            st = replace(st, expr=exact_units(st.expr))
        body.append(st)
    outputs = tuple(replace(p, elements=tuple(exact_units(sp.sympify(e)) for e in p.elements))
                    for p in k.outputs)
    return replace(k.with_body(body), outputs=outputs)
