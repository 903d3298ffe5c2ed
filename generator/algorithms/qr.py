"""Solving a small dense square system G x = y by unrolled modified Gram-Schmidt QR.

Why not the normal equations G^T G x = G^T y: they square the condition number. And why not an
LU with a pivot order fixed at generation: a pivot that is large at the home pose may vanish
elsewhere at a regular configuration. Gram-Schmidt needs no pivoting: r_kk is the distance of
column k from the span of the columns before it, zero only when G is singular.

For k = 1..n (columns g_k of G; the right-hand side y carried along as column n+1, which is the
backward-stable way to use modified Gram-Schmidt for a solve, Bjorck 1967):

    v = g_k;  for i < k:  r_ik = q_i . v,  v = v - r_ik q_i
    r_kk = |v|  (checked: r_kk^2 > tol |g_k|^2, else the status),  q_k = v / r_kk
    z_k = q_k . y_k,   y_{k+1} = y_k - z_k q_k
then back substitution R x = z: x_k = (z_k - sum_{i>k} r_ki x_i) / r_kk.
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.scalar import Recorder


def mgs_solve(rec: Recorder, G: list[list], y: list, status: int, tol: float, what: str,
              name: str) -> list[sp.Expr]:
    """x with G x = y (G square, rows first); status ``status`` where G is singular."""
    n = len(G)
    cols = [[G[r][c] for r in range(n)] for c in range(n)]
    q: list[list] = []
    R = [[sp.Integer(0)] * n for _ in range(n)]
    z = []
    y_k = list(y)
    for k in range(n):
        v = list(cols[k])
        # v = g_k - sum_{i<k} (q_i . v) q_i, the projections taken one after another
        for i in range(k):
            R[i][k] = rec.bind(sp.Add(*[q[i][r] * v[r] for r in range(n)]), f"{name}_R{i + 1}{k + 1}")
            v = [rec.bind(v[r] - R[i][k] * q[i][r], f"{name}_v{k + 1}_{r + 1}") for r in range(n)]
        norm2 = rec.bind(sp.Add(*[x * x for x in v]), f"{name}_rr{k + 1}")
        g2 = sp.Add(*[x * x for x in cols[k]])
        # r_kk^2 > tol |g_k|^2: column k is not (nearly) in the span of the columns before it
        rec.require_positive(norm2 - tol * g2, status, f"{what}: column {k + 1} dependent")
        R[k][k] = rec.bind(sp.sqrt(norm2), f"{name}_R{k + 1}{k + 1}")
        inv = rec.bind(1 / R[k][k], f"{name}_inv{k + 1}")
        q.append([rec.bind(x * inv, f"{name}_q{k + 1}_{r + 1}") for r, x in enumerate(v)])
        # z_k = q_k . y_k, y_{k+1} = y_k - z_k q_k
        z.append(rec.bind(sp.Add(*[q[k][r] * y_k[r] for r in range(n)]), f"{name}_z{k + 1}"))
        y_k = [rec.bind(y_k[r] - z[k] * q[k][r], f"{name}_y{k + 1}_{r + 1}") for r in range(n)]
    # back substitution R x = z
    x: list = [None] * n
    for k in range(n - 1, -1, -1):
        acc = z[k] - sp.Add(*[R[k][i] * x[i] for i in range(k + 1, n)])
        x[k] = rec.bind(acc * (1 / R[k][k]), f"{name}{k + 1}")
    return x
