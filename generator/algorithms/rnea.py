"""Inverse dynamics by the recursive Newton-Euler algorithm in body frames.

Forward pass (frame j coordinates, ALGORITHMS.md section 1 relations carried into frame j by
beta_j; gravity enters as the base acceleration a_0 = -g):

    omega_p  = beta_j omega_{j-1}
    omega_j  = omega_p + e_j qd_j                       (revolute; prismatic: omega_p)
    epsd_j   = beta_j epsd_{j-1} + omega_p x e_j qd_j + e_j qdd_j           (revolute)
    a_j      = beta_j (a_{j-1} + epsd_{j-1} x r_{j-1,j} + omega_{j-1} x (omega_{j-1} x r_{j-1,j}))
               + 2 omega_p x e_j qd_j + e_j qdd_j                           (prismatic)

Inertial force and moment about O_j of body j (paper 000 section 5, "b"):

    f_j = m_j a_j + epsd_j x c_j + omega_j x (omega_j x c_j)
    n_j = I_j epsd_j + omega_j x (I_j omega_j) + c_j x a_j

Backward pass: F_j = f_j + beta_{j+1}^T F_{j+1},
N_j = n_j + beta_{j+1}^T N_{j+1} + r_{j,j+1} x (beta_{j+1}^T F_{j+1}); the joint force is the
component of N_j (revolute) or F_j (prismatic) along the axis e_j.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from generator.algorithms.joints import LinkTransform, to_parent
from generator.model import Chain
from generator.scalar import (OmegaProducts, Recorder, Vec, add, cross, matvec, omega_products,
                              omega_x_I_omega, omega_x_omega_x, scale, zeros)


@dataclass
class Motion:
    """Per body j (index j-1), frame j: omega, epsd (angular acceleration), a (of O_j)."""

    omega: list[Vec] = field(default_factory=list)
    epsd: list[Vec] = field(default_factory=list)
    a: list[Vec] = field(default_factory=list)
    W: list[OmegaProducts] = field(default_factory=list)


def forward_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list | None,
                 qdd: list | None, a0: Vec) -> Motion:
    """omega_j, epsd_j, a_j of every body from the base acceleration a0 (= -g for gravity)."""
    omega: Vec = zeros(3)
    epsd: Vec = zeros(3)
    a: Vec = list(a0)
    W_prev = omega_products(rec, omega, "oo0")
    out = Motion()
    for j in range(1, chain.n + 1):
        lt = links[j - 1]
        e = lt.e
        qd_j = qd[j - 1] if qd is not None else sp.Integer(0)
        qdd_j = qdd[j - 1] if qdd is not None else sp.Integer(0)
        # acceleration of O_j: uses the parent's omega, epsd, a before they are replaced
        a_par = add(add(a, cross(epsd, lt.r_rel)), omega_x_omega_x(W_prev, lt.r_rel))
        a_new = matvec(lt.beta, a_par)
        omega_p = rec.vec(matvec(lt.beta, omega), f"omega_p{j}")
        epsd_new = matvec(lt.beta, epsd)
        if lt.kind == "R":
            omega_new = add(omega_p, scale(qd_j, e))
            epsd_new = add(add(epsd_new, cross(omega_p, scale(qd_j, e))), scale(qdd_j, e))
        else:
            omega_new = omega_p
            a_new = add(add(a_new, scale(2, cross(omega_p, scale(qd_j, e)))), scale(qdd_j, e))
        omega = rec.vec(omega_new, f"omega{j}")
        epsd = rec.vec(epsd_new, f"epsd{j}")
        a = rec.vec(a_new, f"a{j}")
        W_prev = omega_products(rec, omega, f"oo{j}")
        out.omega.append(omega)
        out.epsd.append(epsd)
        out.a.append(a)
        out.W.append(W_prev)
    return out


@dataclass
class JointWrenches:
    Q: list[sp.Expr]       # component along each joint's axis
    F1: Vec                # force the base applies on body 1 (frame 1)
    N1: Vec                # moment the base applies on body 1 about O_1 (frame 1)


def backward_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], mo: Motion,
                  tip: tuple[Vec, Vec] | None = None) -> JointWrenches:
    """Inertial forces summed from the last body to the first; ``tip`` = (force, moment about
    O_n) applied on the last body from outside, frame n."""
    n = chain.n
    Q = [sp.Integer(0)] * n
    F, N = zeros(3), zeros(3)
    for j in range(n, 0, -1):
        lt, body = links[j - 1], chain.bodies[j - 1]
        W = mo.W[j - 1]
        c = list(body.c)
        I = [list(row) for row in body.I]
        f = add(add(scale(body.m, mo.a[j - 1]), cross(mo.epsd[j - 1], c)), omega_x_omega_x(W, c))
        nn = add(add(matvec(I, mo.epsd[j - 1]), omega_x_I_omega(W, I)), cross(c, mo.a[j - 1]))
        if j < n:
            child = links[j]
            F_c = rec.vec(to_parent(child, F), f"F_c{j}")
            N_c = add(to_parent(child, N), cross(child.r_rel, F_c))
        elif tip is not None:
            F_c, N_c = [-x for x in tip[0]], [-x for x in tip[1]]
        else:
            F_c, N_c = zeros(3), zeros(3)
        F = rec.vec(add(f, F_c), f"F{j}")
        N = rec.vec(add(nn, N_c), f"N{j}")
        Q[j - 1] = (N if lt.kind == "R" else F)[[i for i in range(3) if lt.e[i] != 0][0]]
    return JointWrenches(Q, F, N)


def rnea(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list | None,
         qdd: list | None, gravity: bool = True) -> list[sp.Expr]:
    """Joint forces Q_j = [A(q) qdd + h(q, qd)]_j; ``qd``/``qdd`` None means zero."""
    a0 = [-x for x in chain.gravity] if gravity else zeros(3)
    mo = forward_pass(rec, chain, links, qd, qdd, a0)
    return backward_pass(rec, chain, links, mo).Q
