"""Unrolling column loops (generator/ir.ColumnLoop) into straight-line assignments.

The straight-line form of a loop: for each column c, ``slot_c = columns[c][i]`` for every
slot, the body with every local name ``t`` renamed ``t_c``, and ``targets[c][r] = result_c``.
Every body statement is one operation of at most two operands and the slots are named (a
column value 0 stays a named 0, not folded), so each column is computed by the same IEEE
operations in the same order as in the loop: the two forms agree bit for bit
(tests/test_column_loops.py compiles both). The tests use it as the reference of the loop
form; a kernel may also be generated unrolled (``columns=None`` of the builders).
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.ir import Assign, ColumnLoop, Kernel, symbol


def unrolled(loop: ColumnLoop, taken: set[str]) -> list[Assign]:
    """The loop as assignments, column after column; new names avoid (and join) ``taken``."""
    out: list[Assign] = []
    local = list(loop.locals)
    for c, (values, targets) in enumerate(zip(loop.columns, loop.targets)):
        rename = {}
        for s in local:
            name = f"{s.name}_c{c}"
            while name in taken:
                name += "_"
            taken.add(name)
            rename[s] = symbol(name)
        out += [Assign(rename[s], sp.sympify(v)) for s, v in zip(loop.slots, values)]
        out += [Assign(rename[st.target], st.expr.xreplace(rename)) for st in loop.body]
        out += [Assign(t, rename[r]) for t, r in zip(targets, loop.results)]
    return out


def unroll_loops(k: Kernel) -> Kernel:
    """``k`` with every column loop replaced by its straight-line form (:func:`unrolled`)."""
    taken = {str(s) for p in k.inputs for s in p.elements} | {p.name for p in k.outputs}
    for st in k.body:
        if isinstance(st, ColumnLoop):
            taken |= {s.name for s in (*st.locals, *st.assigned)}
        elif isinstance(st, Assign):
            taken.add(st.target.name)
    body = []
    for st in k.body:
        body += unrolled(st, taken) if isinstance(st, ColumnLoop) else [st]
    return k.with_body(body)
