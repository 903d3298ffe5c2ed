"""Loop closure of one leg at velocity and acceleration level (paper 000, section 4).

The closure rows are written in the frame n of the leg's last body, where C^(d) is sparse
(for a U-P leg it is triangular: [[0, 0, 1], [0, L, 0], [-L c2, 0, 0]]). Walking back from the
last body, with B_j the rotation frame j -> frame n (B_n = 1, B_{j-1} = B_j beta_j, so
B_0 = tau_n) and rho_j the vector from O_j to the cut point (frame n):

    rho_n = l_L,   rho_{j-1} = rho_j + B_{j-1} r_{j-1,j}
    a_j   = B_j e_j                          joint axis in frame n
    T^L column j = a_j x rho_j (revolute) or a_j (prismatic);  R column j = a_j or 0

C side, with R_Cn = tau_n alpha_C^T (frame C -> frame n) and omega_C in frame C:

    velocity of the cut point   = tau_n v_C + R_Cn (omega_C x l_C)
    rows 1-3:  C^(d) = T^L,  C^(i) = [tau_n, rows (l_C x q_r)]   (q_r: rows of R_Cn)
    row 4 (universal cut, n_R = e1 x e2, e1 = gamma_L^T e_y, e2 = R_Cn gamma_C^T e_z):
               d/dt (e1 . e2) = n_R . (omega_n - R_Cn omega_C) = 0
               C^(d) = [n_R . a_j (revolute), 0],  C^(i) = [0, R_Cn^T n_R]

Acceleration level, C^(d) qdd = C^(i) udot + c with (omega_n, eps_n, a_n: body-frame
velocity-product terms of the last body, its own frame):

    c_1..3 = R_Cn (omega_C x (omega_C x l_C)) - w^L,
             w^L = a_n + eps_n x l_L + omega_n x (omega_n x l_L)
    c_4    = - n_R . eps_n - n_R' . (omega_n - R_Cn omega_C),
             n_R' = (omega_n x e1) x e2 + e1 x (R_Cn omega_C x e2)

so H = C^(d)^-1 C^(i), h = C^(d)^-1 c, qd = H u_C, qdd = H udot_C + h.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from mechgen.generator.algorithms.joints import LinkTransform
from mechgen.generator.algorithms.leg_ik import LEG_SINGULAR
from mechgen.generator.algorithms.rnea import Motion
from mechgen.generator.algorithms.sparse_lu import SparseLU
from mechgen.generator.families.parallel.platform import Leg
from mechgen.generator.scalar import (Mat, Recorder, Vec, add, cross, dot, eye, matmul,
                                      matvec, omega_x_omega_x, sub, transpose, zeros)


@dataclass
class Closure:
    tau_n: Mat            # frame 0 -> frame n
    R_Cn: Mat                # frame C -> frame n
    rho0: Vec             # O_0 -> cut point, frame n
    axes: list[Vec]       # a_j, frame n
    Cd: list[list]        # m x n
    Ci: list[list]        # m x 6
    e1: Vec | None
    e2: Vec | None
    n_R: Vec | None
    lu: SparseLU


def rotation_product(rec: Recorder, P: Mat, Q: Mat, name: str) -> Mat:
    """P Q for two rotations: rows 0 and 2 as products, row 1 = row 2 x row 0 (the rows of a
    rotation are a right-handed orthonormal triad: 9 operations instead of 15)."""
    r0 = rec.vec(matvec(transpose(Q), P[0]), f"{name}_0")
    r2 = rec.vec(matvec(transpose(Q), P[2]), f"{name}_2")
    return [r0, rec.vec(cross(r2, r0), f"{name}_1"), r2]


def closure(rec: Recorder, leg: Leg, links: list[LinkTransform], alpha_C: Mat,
            axis_C0: Vec | None = None) -> Closure:
    """The leg's closure (module docstring). ``axis_C0``: C's side axis of a universal cut,
    alpha_C^T gamma_C^T e_z, already in frame 0 (then e2 = tau_n axis_C0 without R_Cn)."""
    n = leg.n
    # B_n = 1, B_{j-1} = B_j beta_j: frame j -> frame n, walking back from the last body
    B = [None] * (n + 1)
    B[n] = eye()
    for j in range(n, 0, -1):
        # a product with a sparse B_j (numbers among its entries) prunes better in full
        sparse = any(x.is_number for row in B[j] for x in row)
        B[j - 1] = (rec.mat(matmul(B[j], links[j - 1].beta), f"B{j - 1}") if sparse else
                    rotation_product(rec, B[j], links[j - 1].beta, f"B{j - 1}"))
    # rho_n = l_L, rho_{j-1} = rho_j + B_{j-1} r_{j-1,j}: O_j -> cut point, frame n
    rho = [None] * (n + 1)
    rho[n] = list(leg.l_L)
    for j in range(n, 0, -1):
        rho[j - 1] = rec.vec(add(rho[j], matvec(B[j - 1], links[j - 1].r_rel)), f"rho{j - 1}")
    # a_j = B_j e_j; T^L column j = a_j x rho_j (revolute) or a_j (prismatic)
    axes = [rec.vec(matvec(B[j], links[j - 1].e), f"axis{j}") for j in range(1, n + 1)]
    T_L = [rec.vec(cross(axes[j - 1], rho[j]) if links[j - 1].kind == "R" else axes[j - 1],
                   f"TL{j}") for j in range(1, n + 1)]
    # R_Cn = tau_n alpha_C^T: frame C -> frame n
    tau_n = B[0]
    R_Cn = rotation_product(rec, tau_n, transpose(alpha_C), "R_Cn")
    l_C = list(leg.l_C)
    # rows 1-3: C^(d) = T^L, C^(i) = [tau_n, rows (l_C x q_r)]
    Cd = [[T_L[j][r] for j in range(n)] for r in range(3)]
    Ci = [list(tau_n[r]) + rec.vec(cross(l_C, R_Cn[r]), f"Ci{r + 1}") for r in range(3)]
    e1 = e2 = n_R = None
    if leg.m == 4:
        # row 4 (universal cut): n_R = e1 x e2, C^(d) = [n_R . a_j], C^(i) = [0, R_Cn^T n_R]
        e1 = list(leg.gamma_L[1])
        e2 = rec.vec(matvec(R_Cn, list(leg.gamma_C[2])) if axis_C0 is None
                     else matvec(tau_n, axis_C0), "e2")
        n_R = rec.vec(cross(e1, e2), "n_R")
        Cd.append([rec.bind(dot(n_R, axes[j]), f"Cd4_{j + 1}") if links[j].kind == "R"
                   else sp.Integer(0) for j in range(n)])
        Ci.append(zeros(3) + rec.vec(matvec(transpose(R_Cn), n_R), "Ci4"))
    # pivots compared in one unit: a revolute column is scaled by the leg's length
    scale = [leg.l_ref if links[j].kind == "R" else 1.0 for j in range(n)]
    lu = SparseLU(rec, Cd, "lu", scale, LEG_SINGULAR, f"leg {leg.name}: closure matrix C^(d)")
    return Closure(tau_n, R_Cn, rho[0], axes, Cd, Ci, e1, e2, n_R, lu)


def velocity_constraints(rec: Recorder, cl: Closure) -> list[list[sp.Expr]]:
    """H = C^(d)^-1 C^(i) (n x 6), column by column."""
    cols = [cl.lu.solve(rec, [row[i] for row in cl.Ci], f"H{i + 1}_") for i in range(6)]
    return [[cols[i][j] for i in range(6)] for j in range(len(cols[0]))]


def acceleration_terms(rec: Recorder, leg: Leg, cl: Closure, mo: Motion, omega_C: Vec,
                       centripetal: Vec, R: Mat | None = None) -> list[sp.Expr]:
    """h = C^(d)^-1 c from the velocity-product terms of both sides (module docstring).

    ``omega_C`` and ``centripetal`` = omega_C x (omega_C x l_C) are written in one frame and
    ``R`` turns that frame into leg frame n: C's frame and R_Cn (the default), or frame 0 and
    tau_n (the reduction in frame 0, parallel/frame_0.py)."""
    R = cl.R_Cn if R is None else R
    n = leg.n
    omega_n, eps_n, a_n = mo.omega[n - 1], mo.epsd[n - 1], mo.a[n - 1]
    l_L = list(leg.l_L)
    # w^L = a_n + eps_n x l_L + omega_n x (omega_n x l_L): the cut point, leg side
    wL = add(add(a_n, cross(eps_n, l_L)), omega_x_omega_x(mo.W[n - 1], l_L))
    # c_1..3 = R_Cn (omega_C x (omega_C x l_C)) - w^L
    cC = rec.vec(matvec(R, centripetal), "cC")
    c = [rec.bind(x, f"c{i + 1}") for i, x in enumerate(sub(cC, wL))]
    if leg.m == 4:
        # c_4 = -n_R . eps_n - n_R' . (omega_n - R_Cn omega_C)
        omega_Cn = rec.vec(matvec(R, omega_C), "omega_Cn")
        rel = rec.vec(sub(omega_n, omega_Cn), "omega_rel")
        n_dot = rec.vec(add(cross(cross(omega_n, cl.e1), cl.e2),
                            cross(cl.e1, cross(omega_Cn, cl.e2))), "n_R_dot")
        c.append(rec.bind(-dot(cl.n_R, eps_n) - dot(n_dot, rel), "c4"))
    return cl.lu.solve(rec, c, "h")                           # h = C^(d)^-1 c
