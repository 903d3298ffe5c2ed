"""Inverse dynamics by the recursive Newton-Euler algorithm in body frames.

Forward pass (frame j coordinates, docs/algorithms.md section 1 relations carried into frame j by
beta_j; gravity enters as the base acceleration a_0 = -g):

    omega_p  = beta_j omega_{j-1}
    omega_j  = omega_p + e_j qd_j                       (revolute; prismatic: omega_p)
    epsd_j   = beta_j epsd_{j-1} + omega_p x e_j qd_j + e_j qdd_j           (revolute; a quasi
               joint, the quaternion base's body-axis rate, has no omega_p x e_j qd_j)
    a_j      = beta_j (a_{j-1} + epsd_{j-1} x r_{j-1,j} + omega_{j-1} x (omega_{j-1} x r_{j-1,j}))
               + 2 omega_p x e_j qd_j + e_j qdd_j                           (prismatic)
    a_j     += e_j qd_j x v_b                     (a twist joint: the body-twist base, below)

The body-twist base (base_velocity = "body", Pinocchio's free flyer) has qd = (v_b, omega_b)
first, both in the base frame, and its slides run along the base's own axes, which its three
quasi rotations turn. Its qdd = (vdot_b, omegadot_b) is Featherstone's spatial acceleration;
the classical acceleration of the base origin, in the base frame, is vdot_b + omega_b x v_b.
The slides give vdot_b; each twist joint j adds its share e_j qd_j x v_b, with
v_b = (qd_1, qd_2, qd_3) (frames 1..6 all have the base's axes: the slides and rotations sit
at displacement and angle 0). The term has no qdd, so the articulated-body algorithm, which
takes the qdd = 0 motion from this forward pass, and the bias get it from here too.

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

from mechgen.generator.algorithms.joints import (LinkTransform, rotate_from_parent,
                                                 rotate_to_parent, to_parent)
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
                 qdd: list | None, a0: Vec, omega0: Vec | None = None,
                 epsd0: Vec | None = None) -> Motion:
    """omega_j, epsd_j, a_j of every body from the base's motion: acceleration a0 of O_0
    (= -g for gravity; a moving base: its acceleration minus g), angular velocity omega0 and
    acceleration epsd0 (frame 0; None: a base that does not turn). Body j takes its parent
    p(j)'s motion (p(j) = j-1 in a serial chain)."""
    omega0 = zeros(3) if omega0 is None else list(omega0)
    epsd0 = zeros(3) if epsd0 is None else list(epsd0)
    base = (omega0, epsd0, list(a0), omega_products(rec, omega0, "oo0"))
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
        a_new = rotate_from_parent(rec, lt, a_par, f"a{j}")
        omega_p = rec.vec(rotate_from_parent(rec, lt, omega, f"omega_p{j}"), f"omega_p{j}")
        epsd_new = rotate_from_parent(rec, lt, epsd, f"epsd{j}")
        if lt.kind == "R":
            omega_new = add(omega_p, scale(qd_j, e))
            spin = zeros(3) if chain.joints[j - 1].quasi else cross(omega_p, scale(qd_j, e))
            epsd_new = add(add(epsd_new, spin), scale(qdd_j, e))
            if chain.joints[j - 1].twist and qd is not None:
                a_new = add(a_new, cross(scale(qd_j, e), body_twist_velocity(qd)))
        else:
            omega_new = omega_p
            a_new = add(add(a_new, scale(2, cross(omega_p, scale(qd_j, e)))), scale(qdd_j, e))
        omega = rec.vec(omega_new, f"omega{j}")
        out.omega.append(omega)
        out.epsd.append(rec.vec(epsd_new, f"epsd{j}"))
        out.a.append(rec.vec(a_new, f"a{j}"))
        out.W.append(omega_products(rec, omega, f"oo{j}"))
    return out


def body_twist_velocity(qd: list) -> Vec:
    """v_b of the body-twist base: the rates of its three slides, x, y, z of the base frame."""
    return list(qd[:3])


@dataclass
class JointWrenches:
    Q: list[sp.Expr]       # component along each joint's axis
    F1: Vec                # force the base applies on body 1 (frame 1)
    N1: Vec                # moment the base applies on body 1 about O_1 (frame 1)


def carry_to_base(rec: Recorder, chain: Chain, links: list[LinkTransform],
                  own: list[tuple[Vec, Vec]], name: str = "") -> tuple[list[Vec], list[Vec]]:
    """Sum per-body force-like pairs (f_j, n_j about O_j, frame j) from the leaves to the
    base: F_j = f_j + sum over the children c of beta_c^T F_c, N_j = n_j + sum (beta_c^T N_c
    + r_{j,c} x beta_c^T F_c). Forces and moments, or momenta and angular momenta."""
    n = chain.n
    F: list = [None] * n
    N: list = [None] * n
    for j in range(n, 0, -1):
        Fj, Nj = own[j - 1]
        for k in chain.children(j):
            child = links[k - 1]
            F_c = rec.vec(rotate_to_parent(rec, child, F[k - 1], f"{name}F_c{k}"),
                          f"{name}F_c{k}")
            Fj = add(Fj, F_c)
            Nj = add(Nj, add(rotate_to_parent(rec, child, N[k - 1], f"{name}N_c{k}"),
                             cross(child.r_rel, F_c)))
        F[j - 1] = rec.vec(Fj, f"{name}F{j}")
        N[j - 1] = rec.vec(Nj, f"{name}N{j}")
    return F, N


def body_forces(chain: Chain, mo: Motion) -> list[tuple[Vec, Vec]]:
    """(f_j, n_j) of every body, frame j, about O_j (section 2.3):

        f_j = m_j a_j + epsd_j x c_j + omega_j x (omega_j x c_j)
        n_j = I_j epsd_j + omega_j x (I_j omega_j) + c_j x a_j."""
    own = []
    for j, body in enumerate(chain.bodies, start=1):
        W = mo.W[j - 1]
        c = list(body.c)
        I = [list(row) for row in body.I]
        Fj = add(add(scale(body.m, mo.a[j - 1]), cross(mo.epsd[j - 1], c)), omega_x_omega_x(W, c))
        Nj = add(add(matvec(I, mo.epsd[j - 1]), omega_x_I_omega(W, I)), cross(c, mo.a[j - 1]))
        own.append((Fj, Nj))
    return own


def backward_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], mo: Motion,
                  tip: tuple[Vec, Vec] | None = None) -> JointWrenches:
    """Inertial forces summed from the leaves to the base (:func:`carry_to_base`), with

        f_j = m_j a_j + epsd_j x c_j + omega_j x (omega_j x c_j)
        n_j = I_j epsd_j + omega_j x (I_j omega_j) + c_j x a_j.

    ``tip`` = (force, moment about O_n) applied on the last body from outside, frame n.
    F1, N1: what the base applies on body 1."""
    n = chain.n
    own = body_forces(chain, mo)
    if tip is not None:
        Fn, Nn = own[n - 1]
        own[n - 1] = (add(Fn, [-x for x in tip[0]]), add(Nn, [-x for x in tip[1]]))
    F, N = carry_to_base(rec, chain, links, own)
    Q = [(N[j] if links[j].kind == "R" else F[j])[[i for i in range(3) if links[j].e[i] != 0][0]]
         for j in range(n)]
    return JointWrenches(Q, F[0], N[0])


def velocity_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list,
                  omega0: Vec, v0: Vec) -> tuple[list[Vec], list[Vec]]:
    """Absolute omega_j and v_j (velocity of O_j), frame j, of every body, from the base's
    omega0 and the velocity v0 of O_0 (frame 0):

        omega_j = beta_j omega_p(j) + e_j qd_j                         (revolute)
        v_j     = beta_j (v_p(j) + omega_p(j) x r_{p(j),j}) + e_j qd_j    (prismatic)
    """
    omega: list = []
    v: list = []
    for j in range(1, chain.n + 1):
        lt = links[j - 1]
        p = chain.parent[j - 1]
        w_p, v_p = (list(omega0), list(v0)) if p == 0 else (omega[p - 1], v[p - 1])
        w_j = rotate_from_parent(rec, lt, w_p, f"w_abs{j}")
        v_j = rotate_from_parent(rec, lt, add(v_p, cross(w_p, lt.r_rel)), f"v_abs{j}")
        if lt.kind == "R":
            w_j = add(w_j, scale(qd[j - 1], lt.e))
        else:
            v_j = add(v_j, scale(qd[j - 1], lt.e))
        omega.append(rec.vec(w_j, f"w_abs{j}"))
        v.append(rec.vec(v_j, f"v_abs{j}"))
    return omega, v


def momentum(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list, omega0: Vec,
             v0: Vec) -> tuple[Vec, Vec, sp.Expr]:
    """Linear momentum, angular momentum about O_0 (frame 0) and kinetic energy of the chain's
    bodies when the base moves (omega0, v0). Per body, frame j, about O_j (c_j the first
    moment): p_j = m_j v_j + omega_j x c_j, h_j = I_j omega_j + c_j x v_j,
    T_j = 1/2 m_j v_j.v_j + v_j.(omega_j x c_j) + 1/2 omega_j.I_j omega_j; p_j and h_j are
    carried to the base like forces and moments (:func:`carry_to_base`)."""
    w, v = velocity_pass(rec, chain, links, qd, omega0, v0)
    own, T = [], sp.Integer(0)
    for j, body in enumerate(chain.bodies):
        c, I = list(body.c), [list(row) for row in body.I]
        wxc = cross(w[j], c)
        Iw = matvec(I, w[j])
        own.append((add(scale(body.m, v[j]), wxc), add(Iw, cross(c, v[j]))))
        T += body.m * sum(x * x for x in v[j]) / 2 + sum(a * b for a, b in zip(v[j], wxc)) \
            + sum(a * b for a, b in zip(w[j], Iw)) / 2
    P, H = carry_to_base(rec, chain, links, own, "mom_")
    P0 = to_parent(links[0], P[0])
    H0 = add(to_parent(links[0], H[0]), cross(links[0].r_rel, P0))
    return P0, H0, T


def rnea(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list | None,
         qdd: list | None, gravity: bool = True) -> list[sp.Expr]:
    """Joint forces Q_j = [A(q) qdd + h(q, qd)]_j; ``qd``/``qdd`` None means zero."""
    a0 = [-x for x in chain.gravity] if gravity else zeros(3)
    mo = forward_pass(rec, chain, links, qd, qdd, a0)
    return backward_pass(rec, chain, links, mo).Q
