"""Inverse dynamics by the recursive Newton-Euler algorithm in body frames.

Forward pass (frame j coordinates, docs/algorithms.md section 1 relations carried into frame j by
beta_j; gravity enters as the base acceleration a_0 = -g):

    omega_p  = beta_j omega_{j-1}
    omega_j  = omega_p + e_j qd_j                       (revolute; prismatic: omega_p)
    epsd_j   = beta_j epsd_{j-1} + omega_p x e_j qd_j + e_j qdd_j           (revolute; a quasi
               joint, the quaternion base's body-axis rate, has no omega_p x e_j qd_j)
    a_j      = beta_j (a_{j-1} + epsd_{j-1} x r_{j-1,j} + omega_{j-1} x (omega_{j-1} x r_{j-1,j}))
               + 2 omega_p x e_j qd_j + e_j qdd_j                           (prismatic)

Inertial force and moment about O_j of body j (paper 000 section 5, "b"):

    f_j = m_j a_j + epsd_j x c_j + omega_j x (omega_j x c_j)
    n_j = I_j epsd_j + omega_j x (I_j omega_j) + c_j x a_j

Backward pass: F_j = f_j + beta_{j+1}^T F_{j+1},
N_j = n_j + beta_{j+1}^T N_{j+1} + r_{j,j+1} x (beta_{j+1}^T F_{j+1}); the joint force is the
component of N_j (revolute) or F_j (prismatic) along the axis e_j. In a tree, j-1 stands for the
parent p(j) in the forward pass, and the backward pass sums over all children of j.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from mechgen.generator.algorithms.joints import LinkTransform, to_parent
from mechgen.generator.model import Chain
from mechgen.generator.scalar import (OmegaProducts, Recorder, Vec, add, cross, matvec, omega_products,
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
    """omega_j, epsd_j, a_j of every body from the base acceleration a0 (= -g for gravity);
    body j takes its parent p(j)'s motion (p(j) = j-1 in a serial chain)."""
    base = (zeros(3), zeros(3), list(a0), omega_products(rec, zeros(3), "oo0"))
    out = Motion()
    for j in range(1, chain.n + 1):
        lt = links[j - 1]
        e = lt.e
        p = chain.parent[j - 1]
        omega, epsd, a, W_prev = base if p == 0 else (
            out.omega[p - 1], out.epsd[p - 1], out.a[p - 1], out.W[p - 1])
        qd_j = qd[j - 1] if qd is not None else sp.Integer(0)
        qdd_j = qdd[j - 1] if qdd is not None else sp.Integer(0)
        # acceleration of O_j from the parent's omega, epsd, a
        a_par = add(add(a, cross(epsd, lt.r_rel)), omega_x_omega_x(W_prev, lt.r_rel))
        a_new = matvec(lt.beta, a_par)
        omega_p = rec.vec(matvec(lt.beta, omega), f"omega_p{j}")
        epsd_new = matvec(lt.beta, epsd)
        if lt.kind == "R":
            omega_new = add(omega_p, scale(qd_j, e))
            spin = zeros(3) if chain.joints[j - 1].quasi else cross(omega_p, scale(qd_j, e))
            epsd_new = add(add(epsd_new, spin), scale(qdd_j, e))
        else:
            omega_new = omega_p
            a_new = add(add(a_new, scale(2, cross(omega_p, scale(qd_j, e)))), scale(qdd_j, e))
        omega = rec.vec(omega_new, f"omega{j}")
        out.omega.append(omega)
        out.epsd.append(rec.vec(epsd_new, f"epsd{j}"))
        out.a.append(rec.vec(a_new, f"a{j}"))
        out.W.append(omega_products(rec, omega, f"oo{j}"))
    return out


@dataclass
class JointWrenches:
    Q: list[sp.Expr]       # component along each joint's axis
    F1: Vec                # force the base applies on body 1 (frame 1)
    N1: Vec                # moment the base applies on body 1 about O_1 (frame 1)


def backward_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], mo: Motion,
                  tip: tuple[Vec, Vec] | None = None) -> JointWrenches:
    """Inertial forces summed from the leaves to the base: F_j = f_j + sum over the children c
    of beta_c^T F_c (likewise N_j, plus r_{j,c} x beta_c^T F_c). ``tip`` = (force, moment about
    O_n) applied on the last body from outside, frame n. F1, N1: what the base applies on
    body 1."""
    n = chain.n
    Q = [sp.Integer(0)] * n
    F = [None] * n
    N = [None] * n
    for j in range(n, 0, -1):
        lt, body = links[j - 1], chain.bodies[j - 1]
        W = mo.W[j - 1]
        c = list(body.c)
        I = [list(row) for row in body.I]
        Fj = add(add(scale(body.m, mo.a[j - 1]), cross(mo.epsd[j - 1], c)), omega_x_omega_x(W, c))
        Nj = add(add(matvec(I, mo.epsd[j - 1]), omega_x_I_omega(W, I)), cross(c, mo.a[j - 1]))
        if j == n and tip is not None:
            Fj, Nj = add(Fj, [-x for x in tip[0]]), add(Nj, [-x for x in tip[1]])
        for k in chain.children(j):
            child = links[k - 1]
            F_c = rec.vec(to_parent(child, F[k - 1]), f"F_c{k}")
            Fj = add(Fj, F_c)
            Nj = add(Nj, add(to_parent(child, N[k - 1]), cross(child.r_rel, F_c)))
        F[j - 1] = rec.vec(Fj, f"F{j}")
        N[j - 1] = rec.vec(Nj, f"N{j}")
        Q[j - 1] = (N[j - 1] if lt.kind == "R" else F[j - 1])[[i for i in range(3) if lt.e[i] != 0][0]]
    return JointWrenches(Q, F[0], N[0])


def rnea(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list | None,
         qdd: list | None, gravity: bool = True) -> list[sp.Expr]:
    """Joint forces Q_j = [A(q) qdd + h(q, qd)]_j; ``qd``/``qdd`` None means zero."""
    a0 = [-x for x in chain.gravity] if gravity else zeros(3)
    mo = forward_pass(rec, chain, links, qd, qdd, a0)
    return backward_pass(rec, chain, links, mo).Q
