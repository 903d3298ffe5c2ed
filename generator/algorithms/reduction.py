"""Reduction onto the platform, leg reactions and loads on the base (paper 000, sections 5-6).

The legs share no bodies, so the multipliers drop out (eq. 5.3-5.4):

    A*_C = M_C + sum_k H_k^T A_k H_k,      b*_C = s_C + sum_k H_k^T (b_k - A_k h_k)

Each leg obeys A_k qdd_k = b_k + C^(d)_k^T lambda_k, where lambda_k = [f_tip; mu] is the wrench
C applies on the leg (force at the cut point, frame n; moment mu along n_R for a universal cut),
so lambda_k = C^(d)_k^-T (A_k qdd_k - b_k); the leg applies the opposite on C.

Loads on the base (section 6): with qdd_k known, a Newton-Euler forward pass gives each body's
inertial-plus-gravity force and moment, a backward pass carries them and the tip wrench to the
first joint: F_1, N_1 (frame 1, about O_1) is what the base applies on body 1 (constraint
reaction plus the joint's active force), so the leg applies on the base

    f = -beta_1^T F_1,   m = -(beta_1^T N_1 + r_{0,1} x beta_1^T F_1)   (frame 0, about O_0).
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.algorithms.closure import Closure
from mechgen.generator.algorithms.joints import LinkTransform, to_parent
from mechgen.generator.algorithms.rnea import Motion, backward_pass
from mechgen.generator.families.parallel.platform import Leg
from mechgen.generator.scalar import Recorder, Vec, add, cross, scale


def reduce_onto_platform(rec: Recorder, M_C, s_C, Hs, hs, As, bs, names) -> tuple[list, list]:
    dof = len(M_C)                                  # of C: the size of u
    A_star = [[M_C[i][j] for j in range(dof)] for i in range(dof)]
    b_star = list(s_C)
    for name, H, h, A, b in zip(names, Hs, hs, As, bs):
        n = len(H)
        with rec.named(f"{name}_"):
            # A_k H_k and r_k = b_k - A_k h_k, one leg at a time
            AH = [[rec.bind(sp.Add(*[A[i][k] * H[k][c] for k in range(n)]), f"AH{i + 1}{c + 1}")
                   for c in range(dof)] for i in range(n)]
            r = [rec.bind(b[i] - sp.Add(*[A[i][k] * h[k] for k in range(n)]), f"r{i + 1}")
                 for i in range(n)]
            # A*_C += H_k^T (A_k H_k) (upper triangle), b*_C += H_k^T r_k    (eq. 5.3-5.4)
            for a in range(dof):
                for c in range(a, dof):
                    A_star[a][c] = A_star[a][c] + sp.Add(*[H[k][a] * AH[k][c]
                                                           for k in range(n)])
                b_star[a] = b_star[a] + sp.Add(*[H[k][a] * r[k] for k in range(n)])
    out = [[None] * dof for _ in range(dof)]
    with rec.named(""):                      # A*_C and b*_C belong to no leg
        for a in range(dof):
            for c in range(a, dof):
                out[a][c] = out[c][a] = rec.bind(A_star[a][c], f"A_star{a + 1}{c + 1}")
        return out, [rec.bind(x, f"b_star{a + 1}") for a, x in enumerate(b_star)]


def tip_wrench(rec: Recorder, cl: Closure, A, b, qdd) -> tuple[Vec, sp.Expr]:
    """lambda_k = C^(d)^-T (A qdd - b): force (frame n) and moment along n_R C applies."""
    n = len(qdd)
    rhs = [rec.bind(sp.Add(*[A[i][k] * qdd[k] for k in range(n)]) - b[i], f"Aqdd_b{i + 1}")
           for i in range(n)]
    y = cl.lu.solve_transposed(rec, rhs, "lambda")
    return y[:3], (y[3] if len(y) == 4 else sp.Integer(0))


def base_wrench(rec: Recorder, leg: Leg, links: list[LinkTransform], mo: Motion, cl: Closure,
                f_tip: Vec, mu: sp.Expr) -> tuple[Vec, Vec]:
    l_L = list(leg.l_L)
    m_tip = cross(l_L, f_tip)
    if leg.m == 4:
        m_tip = add(m_tip, scale(mu, cl.n_R))
    jw = backward_pass(rec, leg.chain, links, mo, (f_tip, m_tip))
    F0 = rec.vec(to_parent(links[0], jw.F1), "F_base")
    N0 = add(to_parent(links[0], jw.N1), cross(links[0].r_rel, F0))
    return [-x for x in F0], [-x for x in N0]
