"""The inverse of a tree's mass matrix from its L^T D L factors, exploiting symmetry.

With A = L^T D L (algorithms/ldlt.ltdl_solve: L unit lower triangular, L_ki != 0 only for i an
ancestor of k), A^-1 = L^-1 D^-1 L^-T. The inverse U = L^-1 keeps the tree's sparsity
(U_ki != 0 only for i = k or an ancestor of k) and follows from L U = 1 row by row:

    U_kk = 1,   U_ki = -sum_{j an ancestor of k, i ⪯ j} L_kj U_ji        (i ≺ k)        (1)

so, with V_am = U_am / D_m,

    (A^-1)_ab = sum_{m ⪯ a, m ⪯ b} V_am U_bm                                            (2)

a sum over the joints on both paths to the base only (on a tree with a free base, the base's
six joints for two joints of different legs). Each entry is computed once for a <= b and used
for both triangles, where n solves against the unit vectors (ldlt.ltdl_solve's sweeps) compute
every entry twice and sweep over all ancestors of every row.
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from mechgen.generator.algorithms.ldlt import ancestors, branch_of
from mechgen.generator.scalar import Recorder


def latest_last(rec: Recorder, terms: list[sp.Expr], name: str) -> sp.Expr:
    """The sum of ``terms`` (in the order their values become known) as two statements: the
    sum of all but the last non-zero term, which can be computed early, plus the last one
    (so a chain of dependent sums costs one add per step, not one per term)."""
    terms = [t for t in terms if t != 0]
    if len(terms) <= 2:
        return rec.bind(sp.Add(*terms), name)
    early = rec.bind(sp.Add(*terms[:-1]), f"{name}_s")
    return rec.bind(early + terms[-1], name)


def path(parent: list[int], k: int) -> list[int]:
    """k and its ancestors, from k down to the base's first joint (1-based; parent 0 = base)."""
    return [k, *ancestors(parent, k)]


def one_sum(rec: Recorder, terms: list[sp.Expr], name: str) -> sp.Expr:
    """The sum of ``terms`` as one statement."""
    return rec.bind(sp.Add(*terms), name)


def ltdl_apply(rec: Recorder, L, invD, parent: list[int], b: list[sp.Expr], name: str,
               total: Callable[[Recorder, list, str], sp.Expr] = latest_last,
               join: Callable[[Recorder, list, str], sp.Expr] = one_sum) -> list[sp.Expr]:
    """x = A^-1 b from the factors (RBDA Table 6.4): L^T y = b, then x = L^-1 D^-1 y; sums
    over ancestors only. A row above a branching body sums each branch's terms apart first
    (``<name>_y<i>_b<c>``, algorithms/ldlt.branch_of), so a leg's part reads that leg alone;
    ``join`` adds them (default: one statement, which reads every leg, not the last leg's
    part apart). Each sum is formed by ``total``: :func:`latest_last` (the chain of
    dependent operations from one unknown to the next is one multiply and one add), or a
    left-to-right fold of two-operand sums (the body of a column loop)."""
    n = len(b)
    branch = branch_of(parent)
    terms = {i: [b[i - 1]] for i in range(1, n + 1)}
    per_branch: dict[int, dict[int, list[sp.Expr]]] = {}    # row -> branch -> its terms
    y: dict[int, sp.Expr] = {}
    for i in range(n, 0, -1):
        sums = [total(rec, ts, f"{name}_y{i}_b{c}") for c, ts in per_branch.pop(i, {}).items()]
        y[i] = join(rec, terms[i] + sums, f"{name}_y{i}") if sums else \
            total(rec, terms[i], f"{name}_y{i}")
        for p in ancestors(parent, i):
            c = branch(i, p)
            (terms[p] if c is None else per_branch.setdefault(p, {}).setdefault(c, [])).append(
                -L[i, p] * y[i])
    x = [sp.Integer(0)] * n
    for i in range(1, n + 1):
        older = [-L[i, j] * x[j - 1] for j in reversed(ancestors(parent, i))]
        x[i - 1] = total(rec, [y[i] * invD[i], *older], f"{name}{i}")
    return x


def unit_lower_inverse(rec: Recorder, L: dict, parent: list[int], name: str) -> dict:
    """U = L^-1 by eq. (1): {(k, i): U_ki} for i on the path of k (U_kk = 1)."""
    n = len(parent)
    on_path = {j: set(path(parent, j)) for j in range(1, n + 1)}
    U: dict[tuple[int, int], sp.Expr] = {}
    for k in range(1, n + 1):
        U[k, k] = sp.Integer(1)
        up = ancestors(parent, k)
        for i in up:
            between = [j for j in reversed(up) if i in on_path[j]]   # i ⪯ j ≺ k
            U[k, i] = latest_last(rec, [-L[k, j] * U[j, i] for j in between], f"{name}U{k}_{i}")
    return U


def symmetric_inverse(rec: Recorder, L: dict, invD: list, parent: list[int],
                      name: str = "Ainv_") -> list[list[sp.Expr]]:
    """A^-1 (n x n, symmetric) by eqs. (1) and (2), from the factors of ldlt (``invD[m]`` =
    1/D_m, 1-based)."""
    n = len(parent)
    U = unit_lower_inverse(rec, L, parent, name)
    V = {(a, m): rec.bind(U[a, m] * invD[m], f"{name}V{a}_{m}")
         for a in range(1, n + 1) for m in path(parent, a)}
    out = [[sp.Integer(0)] * n for _ in range(n)]
    on_path = {b: set(path(parent, b)) for b in range(1, n + 1)}
    for a in range(1, n + 1):
        path_a = path(parent, a)
        for b in range(a, n + 1):
            common = [m for m in path_a if m in on_path[b]]
            out[a - 1][b - 1] = out[b - 1][a - 1] = rec.bind(
                sp.Add(*[V[a, m] * U[b, m] for m in common]), f"{name}{a}_{b}")
    return out
