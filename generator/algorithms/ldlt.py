"""Forward dynamics: A qdd = b solved by an unrolled L D L^T factorisation (never A^-1).

    D_j    = A_jj - sum_{k<j} L_jk (L_jk D_k)
    L_ij D_j = A_ij - sum_{k<j} L_ik (L_jk D_k)        (i > j)
    y = L^-1 b,  z = D^-1 y,  qdd = L^-T z

Each pivot D_j is checked: the kernel returns status 1 unless D_j > 1e-13 A_jj (mass matrix
not positive definite, e.g. a joint that moves no mass).
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from mechgen.generator.scalar import Recorder, _count

from mechgen.generator.statuses import SINGULAR_MASS_MATRIX as SINGULAR


class SingularMassMatrix(ValueError):
    """A pivot is a constant <= 0: the joint moves no mass in any configuration."""


def _inverse_pivot(rec: Recorder, D: sp.Expr, A_jj: sp.Expr, j: int, who: str, status: int,
                   rel_tol: float, what: str) -> sp.Expr:
    """1/D_j, after checking D_j: a constant <= 0 is refused at generation; otherwise the kernel
    returns ``status`` unless D_j > rel_tol A_jj."""
    if D.is_number and not D > 0:
        raise SingularMassMatrix(f"joint {who!r} moves no mass or inertia in any "
                                 f"configuration: the mass matrix is singular")
    rec.require_positive(D - sp.Float(rel_tol) * A_jj, status, f"pivot D{j} of {what}")
    _count(divs=1)
    return rec.bind(1 / D, f"invD{j}")


def ldlt_solve(rec: Recorder, A: list[list[sp.Expr]], b: list[sp.Expr],
               names: list[str] | None = None, status: int = SINGULAR, rel_tol: float = 1e-13,
               what: str = "the mass matrix", x_name: str = "qdd") -> list[sp.Expr]:
    n = len(b)
    L = [[sp.Integer(0)] * n for _ in range(n)]
    LD = [[sp.Integer(0)] * n for _ in range(n)]
    invD = [sp.Integer(0)] * n
    for j in range(n):
        _count(adds=j, muls=j)
        D = rec.bind(A[j][j] - sp.Add(*[L[j][k] * LD[j][k] for k in range(j)]), f"D{j + 1}")
        invD[j] = _inverse_pivot(rec, D, A[j][j], j + 1, names[j] if names else f"{j + 1}",
                                 status, rel_tol, what)
        for i in range(j + 1, n):
            _count(adds=j, muls=j + 1)
            LD[i][j] = rec.bind(A[i][j] - sp.Add(*[L[i][k] * LD[j][k] for k in range(j)]),
                                f"LD{i + 1}_{j + 1}")
            L[i][j] = rec.bind(LD[i][j] * invD[j], f"L{i + 1}_{j + 1}")
    y = []
    for i in range(n):
        _count(adds=i, muls=i)
        y.append(rec.bind(b[i] - sp.Add(*[L[i][k] * y[k] for k in range(i)]), f"y{i + 1}"))
    x = [sp.Integer(0)] * n
    for i in range(n - 1, -1, -1):
        _count(adds=n - 1 - i, muls=n - i)
        x[i] = rec.bind(y[i] * invD[i] - sp.Add(*[L[k][i] * x[k] for k in range(i + 1, n)]),
                        f"{x_name}{i + 1}")
    return x


def ltdl_solve(rec: Recorder, A: list[list[sp.Expr]], b: list[sp.Expr], parent: list[int],
               names: list[str] | None = None, status: int = SINGULAR,
               rel_tol: float = 1e-13) -> list[sp.Expr]:
    """A qdd = b for the mass matrix of a tree by A = L^T D L (Featherstone RBDA Tables 6.3,
    6.4): elimination runs from the last joint to the first, so L keeps the sparsity of A
    (L_ki != 0 only for i an ancestor of k: no fill-in) and every sum runs over ancestors only.

        for k = n..1, for each ancestor i of k:   L_ki = H_ki / D_k
            H_ij -= L_ki H_kj for each ancestor j of i (j = i included)      (D_k = H_kk)
        L^T y = b:   for i = n..1: y_p -= L_ip y_i for each ancestor p of i
        D z = y,  L qdd = z:   for i = 1..n: qdd_i = z_i - sum over ancestors j of L_ij qdd_j

    A serial chain (every joint an ancestor of the later ones) gives the dense factorisation.
    Each pivot D_k is checked as in :func:`ldlt_solve`. The factors: :func:`ltdl_factor`.
    """
    n = len(b)
    L, invD = ltdl_factor(rec, A, parent, names or [f"{k}" for k in range(1, n + 1)],
                          status, rel_tol)
    y = {i: b[i - 1] for i in range(1, n + 1)}
    for i in range(n, 0, -1):
        y[i] = rec.bind(y[i], f"y{i}")
        for p in ancestors(parent, i):
            _count(adds=1, muls=1)
            y[p] = y[p] - L[i, p] * y[i]
    x = [sp.Integer(0)] * n
    for i in range(1, n + 1):
        up = ancestors(parent, i)
        _count(adds=len(up), muls=len(up) + 1)
        x[i - 1] = rec.bind(y[i] * invD[i] - sp.Add(*[L[i, j] * x[j - 1] for j in up]),
                            f"qdd{i}")
    return x


def branch_of(parent: list[int]) -> Callable[[int, int], int | None]:
    """branch(k, i) for i an ancestor of k (1-based, parent 0 = the base): the joint where k's
    path leaves the branching body nearest to i, i.e. the child c of the shallowest joint m in
    i, ..., parent(k) with more than one child (c on the path to k); None when no joint there
    branches. Joints of one branch of m update the rows of m and above independently of every
    other branch's joints, so their updates can be summed per branch (a quadruped's four legs
    into four partial sums) and the partial sums added at the end."""
    children: dict[int, int] = {}
    for p in parent:
        children[p] = children.get(p, 0) + 1

    def branch(k: int, i: int) -> int | None:
        found, j = None, k
        while j != i:
            below, j = j, parent[j - 1]
            if children.get(j, 0) > 1:
                found = below          # the last one found is the shallowest
        return found
    return branch


def ltdl_factor(rec: Recorder, A: list[list[sp.Expr]], parent: list[int], names: list[str],
                status: int = SINGULAR, rel_tol: float = 1e-13
                ) -> tuple[dict[tuple[int, int], sp.Expr], list]:
    """A = L^T D L from the leaves (Featherstone RBDA Table 6.3): (L {(k, i): L_ki for i an
    ancestor of k}, 1/D per joint, 1-based), every pivot checked (``status``).

        for k = n..1:  D_k = H_kk;  for each ancestor i of k:   L_ki = H_ki / D_k,
                       H_ij -= L_ki H_kj for each ancestor j of i (j = i included)

    The updates that the joints of one branch make to an entry above the branching body
    (:func:`branch_of`) are summed per branch, H_ij = A_ij - sum over the branches of
    (sum of the branch's L_ki H_kj), the branch sums named ``P<i>_<j>_b<c>``, each added when
    H_ij is next read: the operations of the one running sum, but a leg's sums depend on its
    own joints only (generator/families/serial/leg_loops.py runs them in the legs' loop)."""
    n = len(A)
    branch = branch_of(parent)
    H = {(i, j): A[i - 1][j - 1] for i in range(1, n + 1) for j in range(1, n + 1)}
    P: dict[tuple[int, int], dict[int, sp.Expr]] = {}     # (i, j), j <= i -> branch -> sum

    def settled(i: int, j: int) -> sp.Expr:
        """H_ij with its pending branch sums added."""
        i, j = max(i, j), min(i, j)
        sums = P.pop((i, j), None)
        if sums:
            H[i, j] = H[j, i] = rec.bind(H[i, j] - sp.Add(*sums.values()), f"H{i}_{j}")
        return H[i, j]

    L: dict[tuple[int, int], sp.Expr] = {}
    invD: list = [None] * (n + 1)
    for k in range(n, 0, -1):
        D = rec.bind(settled(k, k), f"D{k}")
        invD[k] = _inverse_pivot(rec, D, A[k - 1][k - 1], k, names[k - 1], status, rel_tol,
                                 "the mass matrix")
        for i in ancestors(parent, k):
            _count(muls=1)
            L[k, i] = rec.bind(settled(k, i) * invD[k], f"L{k}_{i}")
            c = branch(k, i)
            for j in [i] + ancestors(parent, i):
                _count(adds=1, muls=1)
                update = L[k, i] * settled(k, j)
                if c is None:
                    H[i, j] = H[j, i] = rec.bind(settled(i, j) - update, f"H{i}_{j}")
                else:
                    sums = P.setdefault((i, j), {})
                    sums[c] = rec.bind(sums.get(c, 0) + update, f"P{i}_{j}_b{c}")
    return L, invD


def ancestors(parent: list[int], k: int) -> list[int]:
    """The ancestors of joint k (1-based), from its parent to the base's first joint."""
    out = []
    while parent[k - 1]:
        k = parent[k - 1]
        out.append(k)
    return out
