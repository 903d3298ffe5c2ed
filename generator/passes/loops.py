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


def column_names(local: list[str], c: int, taken: set[str]) -> dict[str, str]:
    """The names of the loop's local names in column ``c``: ``t_c<c>``, underscores added
    until the name is not in ``taken`` (which gains them)."""
    rename = {}
    for s in local:
        name = f"{s}_c{c}"
        while name in taken:
            name += "_"
        taken.add(name)
        rename[s] = name
    return rename


def unrolled(loop: ColumnLoop, taken: set[str]) -> list[Assign]:
    """The loop as assignments, column after column; new names avoid (and join) ``taken``."""
    out: list[Assign] = []
    local = list(loop.locals)
    for c, (values, targets) in enumerate(zip(loop.columns, loop.targets)):
        names = column_names([s.name for s in local], c, taken)
        rename = {s: symbol(names[s.name]) for s in local}
        out += [Assign(rename[s], sp.sympify(v)) for s, v in zip(loop.slots, values)]
        out += [Assign(rename[st.target], st.expr.xreplace(rename)) for st in loop.body]
        out += [Assign(t, rename[r]) for t, r in zip(targets, loop.results)]
    return out


def names_taken(k: Kernel) -> set[str]:
    """The names of ``k``: its inputs' elements, outputs, assignments and loops' names (the
    names that unrolling must not give again)."""
    taken = {str(s) for p in k.inputs for s in p.elements} | {p.name for p in k.outputs}
    for st in k.body:
        if isinstance(st, ColumnLoop):
            taken |= {s.name for s in (*st.locals, *st.assigned)}
        elif isinstance(st, Assign):
            taken.add(st.target.name)
    return taken


def unroll_loops(k: Kernel) -> Kernel:
    """``k`` with every column loop replaced by its straight-line form (:func:`unrolled`)."""
    taken = names_taken(k)
    body = []
    for st in k.body:
        body += unrolled(st, taken) if isinstance(st, ColumnLoop) else [st]
    return k.with_body(body)
