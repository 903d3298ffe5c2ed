"""Recursive kinematics of a serial chain or tree in frame 0 (paper 003; docs/algorithms.md 1-2).

For j = 1..n, from tau_0 = 1, r_0 = 0, T_0 = R_0 = 0, omega_0 = v_0 = w_0 = eps_0 = 0; in a tree
the index j-1 below stands for the parent body p(j) (a serial chain has p(j) = j-1):

    theta_J_{j-1} = gamma_{j-1} tau_{j-1}            tau_j = alpha_j theta_J_{j-1}
    r_rel0_j      = tau_{j-1}^T l_{j-1} + theta_J_{j-1}^T t_j
    r_j           = r_{j-1} + r_rel0_j
    R_j = R_{j-1} + R_rel0_j                         T_j = T_{j-1} - skew(r_rel0_j) R_{j-1} + T_rel0_j
    omega_j = omega_{j-1} + omega_rel_j              v_j = v_{j-1} + omega_{j-1} x r_rel0_j + v_rel_j
    w_j   = w_{j-1} + eps_{j-1} x r_rel0_j + omega_{j-1} x (omega_{j-1} x r_rel0_j)
            + 2 omega_{j-1} x v_rel_j
    eps_j = eps_{j-1} + omega_{j-1} x omega_rel_j       (no such term for a quasi joint: the
                                                       quaternion base's body-axis rates)
    w_j  += omega_rel_j x v_{j-1}                        (a twist joint only, below)

The body-twist base (base_velocity = "body") slides along its own axes, which its quasi
rotations turn: with v_b the base velocity and omega_b its angular velocity, both in the base
frame, the origin moves as d/dt (R v_b) = R vdot_b + R (omega_b x v_b) (Featherstone's spatial
acceleration vdot_b vs the classical one). T qdd gives R vdot_b; each of the three twist
joints adds its share omega_rel_j x v_{j-1} (v_{j-1} = R v_b, as r_rel0_j = 0), together
(R omega_b) x (R v_b) = R (omega_b x v_b). Velocities, T and R need no term.

T_rel0_j and R_rel0_j have one non-zero column, the joint axis in frame 0, which is the row
``axis`` of theta_J_{j-1} (theta_J^T e_axis). Columns of T and R are stored as a list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mechgen.generator.algorithms.joints import joint_motion
from mechgen.generator.model import Chain
from mechgen.generator.scalar import (Mat, Recorder, Vec, add, cross, dot, eye, matmul, matvec, scale, sub,
                              transpose, zeros, omega_products, omega_x_omega_x)


@dataclass
class BodyKinematics:
    tau: Mat                   # frame 0 -> frame j
    r: Vec                     # origin O_j in frame 0
    T: list[Vec] = field(default_factory=list)   # columns of d v_j / d qd
    R: list[Vec] = field(default_factory=list)   # columns of d omega_j / d qd
    omega: Vec | None = None
    v: Vec | None = None
    w: Vec | None = None
    eps: Vec | None = None


def chain_kinematics(rec: Recorder, chain: Chain, q: list, qd: list | None = None,
                     jacobians: bool = True, cs: list | None = None) -> list[BodyKinematics]:
    """Bodies 0..n; with ``qd`` also omega_j, v_j and the velocity-product terms w_j, eps_j.

    ``cs``: (cos, sin) of each revolute coordinate when already known, else None."""
    n = chain.n
    zero_cols = [zeros(3) for _ in range(n)]
    b0 = BodyKinematics(eye(), zeros(3), list(zero_cols), list(zero_cols))
    if qd is not None:
        b0.omega, b0.v, b0.w, b0.eps = zeros(3), zeros(3), zeros(3), zeros(3)
    out = [b0]
    for j, joint in enumerate(chain.joints, start=1):
        prev = out[chain.parent[j - 1]]
        mo = joint_motion(rec, j, joint, q[j - 1], cs[j - 1] if cs else None)
        gamma = [list(row) for row in joint.gamma]
        theta_J = rec.mat(matmul(gamma, prev.tau), f"theta_J{j}")
        tau = rec.mat(matmul(mo.alpha, theta_J), f"tau{j}")
        l0 = matvec(transpose(prev.tau), list(joint.l))
        r_rel0 = rec.vec(add(l0, matvec(transpose(theta_J), mo.t)), f"r_rel0_{j}")
        r = rec.vec(add(prev.r, r_rel0), f"r{j}")
        axis0 = theta_J[joint.axis]  # theta_J^T e_axis: the joint axis in frame 0
        bk = BodyKinematics(tau, r)
        if jacobians:
            bk.R = list(prev.R)
            bk.T = [rec.vec(sub(Tc, cross(r_rel0, Rc)), f"T{j}_{i + 1}")
                    if any(x != 0 for x in Rc) else Tc
                    for i, (Tc, Rc) in enumerate(zip(prev.T, prev.R))]
            if joint.kind == "R":
                bk.R[j - 1] = list(axis0)
            else:
                bk.T[j - 1] = list(axis0)
        if qd is not None:
            rel = scale(qd[j - 1], axis0)
            omega_rel = rel if joint.kind == "R" else zeros(3)
            v_rel = rel if joint.kind == "P" else zeros(3)
            W = omega_products(rec, prev.omega, f"oo{j - 1}")
            bk.omega = rec.vec(add(prev.omega, omega_rel), f"omega{j}")
            bk.v = rec.vec(add(add(prev.v, cross(prev.omega, r_rel0)), v_rel), f"v{j}")
            w = add(add(add(prev.w, cross(prev.eps, r_rel0)), omega_x_omega_x(W, r_rel0)),
                    scale(2, cross(prev.omega, v_rel)))
            if joint.twist:
                w = add(w, cross(omega_rel, prev.v))
            bk.w = rec.vec(w, f"w{j}")
            spin = zeros(3) if joint.quasi else cross(prev.omega, omega_rel)
            bk.eps = rec.vec(add(prev.eps, spin), f"eps{j}")
        out.append(bk)
    return out


def point_kinematics(rec: Recorder, body: BodyKinematics, offset: Vec, name: str,
                     rotation: Mat | None = None) -> BodyKinematics:
    """A point fixed in a body: r_P = r_j + tau_j^T d, T_P = T_j - skew(tau_j^T d) R_j; its frame
    is turned from the body frame by the constant ``rotation`` (tau_P = rotation tau_j)."""
    d0 = rec.vec(matvec(transpose(body.tau), list(offset)), f"{name}_d0")
    tau = body.tau if rotation is None else rec.mat(matmul(rotation, body.tau), f"{name}_tau")
    pk = BodyKinematics(tau, rec.vec(add(body.r, d0), f"{name}_r"))
    pk.R = body.R
    pk.T = [rec.vec(sub(Tc, cross(d0, Rc)), f"{name}_T{i + 1}") if any(x != 0 for x in Rc) else Tc
            for i, (Tc, Rc) in enumerate(zip(body.T, body.R))]
    return pk


def kinetic_and_gravity_energy(rec: Recorder, chain: Chain, kin: list[BodyKinematics]):
    """T = sum_j 1/2 m v.v + v.(omega x c) + 1/2 omega.(I omega) in body frames (v, omega
    carried from frame 0 by tau_j); V = -g . sum_j (m_j r_j + tau_j^T c_j). Velocities and
    positions only, so the body-twist base's acceleration term does not enter."""
    T, V = 0, 0
    for j, body in enumerate(chain.bodies, start=1):
        if body.fictitious:
            continue
        k = kin[j]
        v = rec.vec(matvec(k.tau, k.v), f"v_loc{j}")
        w = rec.vec(matvec(k.tau, k.omega), f"omega_loc{j}")
        c = list(body.c)
        I = [list(row) for row in body.I]
        T += body.m * dot(v, v) / 2 + dot(v, cross(w, c)) + dot(w, matvec(I, w)) / 2
        V -= dot(list(chain.gravity), add(scale(body.m, k.r), matvec(transpose(k.tau), c)))
    return T, V
