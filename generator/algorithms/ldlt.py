"""Forward dynamics: A qdd = b solved by an unrolled L D L^T factorisation (never A^-1).

    D_j    = A_jj - sum_{k<j} L_jk (L_jk D_k)
    L_ij D_j = A_ij - sum_{k<j} L_ik (L_jk D_k)        (i > j)
    y = L^-1 b,  z = D^-1 y,  qdd = L^-T z

Each pivot D_j is checked: the kernel returns status 1 unless D_j > 1e-13 A_jj (mass matrix
not positive definite, e.g. a joint that moves no mass).
"""

from __future__ import annotations

import sympy as sp

from generator.scalar import Recorder, _count

SINGULAR = 1


class SingularMassMatrix(ValueError):
    """A pivot is a constant <= 0: the joint moves no mass in any configuration."""


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
        if D.is_number and not D > 0:
            who = names[j] if names else f"{j + 1}"
            raise SingularMassMatrix(f"joint {who!r} moves no mass or inertia in any "
                                     f"configuration: the mass matrix is singular")
        rec.require_positive(D - sp.Float(rel_tol) * A[j][j], status, f"pivot D{j + 1} of {what}")
        _count(divs=1)
        invD[j] = rec.bind(1 / D, f"invD{j + 1}")
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
