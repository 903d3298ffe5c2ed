"""The 2n column solves of dFD = -A^-1 [dID/dq | dID/dqd] as column loops (generator/ir.ColumnLoop).

Straight-line, each of the 2n right-hand sides b_c = dID column c is solved on its own
(ltdl_inverse.ltdl_apply: scalar code, one column after another, which the compiler cannot vectorise).
Here the columns are gathered into loops over columns whose body is one solve, the factors
L, 1/D (or A^-1) shared by every column (loop invariants), so the compiler evaluates two
(SSE2) or more columns at once in vector lanes. Two bodies (:data:`FORMS`):

- ``solve``: x = A^-1 b by the factors (RBDA Table 6.4): L^T y = b from the leaves, then
  x_i = y_i / D_i - sum_{j ancestor of i} L_ij x_j from the base; sums over ancestors only;
- ``product``: x = A^-1 b with the symmetric A^-1 of algorithms/ltdl_inverse.py (the
  kernel's dqdd/dQ output), x_r = sum_i (A^-1)_ri b_i over the rows i where b may be non-zero.

Columns are grouped by their pattern of structural zeros (the rows of dID that are not the
number 0: on a tree, the joints on the path and subtree of the differentiated joint), one
loop per pattern, its body pruned to that pattern: the operations are those of the
straight-line solves, exactly. Every body statement is one sum or product of two operands
(:func:`fold`), so the loop equals its unrolled form bit for bit (passes/loops.py). The
results are A^-1 b; the kernel's outputs are their negatives (negation is exact).
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.algorithms.ltdl_inverse import ltdl_apply
from mechgen.generator.ir import ColumnLoop, symbol
from mechgen.generator.passes.opcount import count_expr_ops
from mechgen.generator.scalar import Recorder

FORMS = ("solve", "product")


def fold(rec: Recorder, terms: list[sp.Expr], name: str) -> sp.Expr:
    """The sum of the non-zero ``terms``, left to right, one named two-operand sum per term
    after the first (the first is named too if it is not a name)."""
    terms = [t for t in terms if t != 0]
    if not terms:
        return sp.Integer(0)
    acc = terms[0]
    for t in terms[1:]:
        acc = rec.bind(acc + t, name)
    return rec.bind(acc, name)


def solve_body(rec: Recorder, b: list[sp.Expr], L: dict, invD: list,
               parent: list[int]) -> list[sp.Expr]:
    """x = A^-1 b from the factors, ``b`` (1-based rows in a list) zero where the column is:
    ltdl_apply with every sum a fold of two-operand sums."""
    return ltdl_apply(rec, L, invD, parent, b, "x", total=fold, join=fold)


def product_body(rec: Recorder, b: list[sp.Expr], Ainv: list[list[sp.Expr]]) -> list[sp.Expr]:
    """x = A^-1 b, x_r = sum_i (A^-1)_ri b_i over the non-zero b_i."""
    return [fold(rec, [Ainv[r][i] * b[i] for i in range(len(b))], f"x{r + 1}")
            for r in range(len(b))]


def pattern(column: list[sp.Expr]) -> tuple[bool, ...]:
    """The rows of a column that are not the number 0."""
    return tuple(e != 0 for e in column)


def _body(rec: Recorder, form: str, b: list[sp.Expr], L: dict, invD: list, parent: list[int],
          Ainv: list[list[sp.Expr]]) -> list[sp.Expr]:
    return (solve_body(rec, b, L, invD, parent) if form == "solve"
            else product_body(rec, b, Ainv))


def cheaper_form(b: list[sp.Expr], L: dict, invD: list, parent: list[int],
                 Ainv: list[list[sp.Expr]]) -> str:
    """The body (of :data:`FORMS`) with fewer operations for right-hand sides of the pattern
    of ``b`` (a loop costs body ops x columns, the same for both; the first on a tie)."""
    costs = []
    for form in FORMS:
        scratch = Recorder()
        _body(scratch, form, b, L, invD, parent, Ainv)
        costs.append(count_expr_ops(st.expr for st in scratch.statements).total())
    return FORMS[costs.index(min(costs))]


def column_loops(rec: Recorder, columns: list[list[sp.Expr]], L: dict, invD: list,
                 parent: list[int], Ainv: list[list[sp.Expr]], form: str | None = None,
                 name: str = "dqdd") -> list[list[sp.Expr]]:
    """A^-1 b for every column b of ``columns``: one loop per pattern of structural zeros
    shared by two columns or more (appended to ``rec.statements``, in the order of each
    pattern's first column), a lone column solved straight-line by the same body; the body
    ``form`` (None: :func:`cheaper_form`, per pattern). Each column's results as names (or
    0), in the order of ``columns``."""
    if form is not None and form not in FORMS:
        raise ValueError(f"column form {form!r}: expected one of {FORMS}")
    groups: dict[tuple[bool, ...], list[int]] = {}
    for c, col in enumerate(columns):
        groups.setdefault(pattern(col), []).append(c)
    out: list[list[sp.Expr]] = [[]] * len(columns)
    for g, (rows, members) in enumerate(groups.items()):
        if not any(rows):
            for c in members:
                out[c] = [sp.Integer(0)] * len(rows)
            continue
        body_form = form or cheaper_form(columns[members[0]], L, invD, parent, Ainv)
        if len(members) == 1:
            with rec.named(f"{name}_c{members[0] + 1}_"):
                out[members[0]] = _body(rec, body_form, columns[members[0]], L, invD,
                                        parent, Ainv)
            continue
        body = Recorder()
        body._taken = rec._taken            # one set of names for the kernel and its loops
        prefix = f"{name}_g{g}_"
        slots = [symbol(rec.fresh(f"{prefix}b{i + 1}")) for i, nz in enumerate(rows) if nz]
        it = iter(slots)
        b = [next(it) if nz else sp.Integer(0) for nz in rows]
        with body.named(prefix):
            x = _body(body, body_form, b, L, invD, parent, Ainv)
        results = [e for e in x if isinstance(e, sp.Symbol) and e not in slots]
        if len(results) != sum(1 for e in x if e != 0):
            raise ValueError("a column result is not one named value")  # never: x_i = y_i/D_i
        targets = []
        for c in members:
            names = {r: symbol(rec.fresh(f"{name}_c{c + 1}_{r.name[len(prefix):]}"))
                     for r in results}
            targets.append(tuple(names[r] for r in results))
            out[c] = [names.get(e, sp.Integer(0)) for e in x]
        rec.statements.append(ColumnLoop(
            tuple(slots), tuple(body.statements), tuple(results),
            tuple(tuple(columns[c][i] for i, nz in enumerate(rows) if nz) for c in members),
            tuple(targets)))
    return out
