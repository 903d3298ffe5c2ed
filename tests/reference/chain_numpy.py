"""Plain numpy implementation of the paper's serial-chain equations in matrix form,
extended to kinematic trees.

No code generation: the recursion of docs/algorithms.md section 2 (frame 0) with dense numpy
matrices, each body computed from its parent body, then the dynamics from the
partial-velocity matrices T_j, R_j (Kane's form):

    A = sum_j  m_j T_j^T T_j - T_j^T S_j R_j + R_j^T S_j T_j + R_j^T I0_j R_j
    h = sum_j  T_j^T f_j + R_j^T n_j
        f_j = m_j (w_j - g) + eps_j x c0_j + omega_j x (omega_j x c0_j)
        n_j = I0_j eps_j + omega_j x (I0_j omega_j) + c0_j x (w_j - g)

with c0_j = tau_j^T c_j, I0_j = tau_j^T I_j tau_j (about O_j, frame 0), S_j = skew(c0_j).
A model is the numeric dict made by :func:`tests.chains.numeric_model`.

Trees: the optional key ``"parent"`` lists, for each joint j = 1..n, the index of its
parent body (0 = base, always ``parent[j-1] < j``); joint j joins body ``parent[j-1]`` to
body j, with ``l`` and ``gamma`` in the parent body's frame.  Absent -> serial chain
(``parent[j-1] = j-1``).  Since every body starts from its parent's T_j, R_j, only the
columns of the joints supporting body j (its ancestors, RBDA sec. 4.1.2) are non-zero,
and the sums over bodies below give the tree's A and h unchanged.
"""

from __future__ import annotations

import numpy as np


def skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def A_axis(axis: int, phi: float) -> np.ndarray:
    c, s = np.cos(phi), np.sin(phi)
    if axis == 0:
        return np.array([[1, 0, 0], [0, c, s], [0, -s, c]])
    if axis == 1:
        return np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]])
    return np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]])


def parents(model: dict) -> list[int]:
    """Parent body of each joint j = 1..n: ``model["parent"]``, default j-1; checks 0 <= p < j."""
    n = len(model["joints"])
    par = [int(p) for p in model.get("parent", range(n))]
    if len(par) != n or any(not 0 <= p < j for j, p in enumerate(par, 1)):
        raise ValueError(f"parent list {par!r} must give each joint j a parent body below j")
    return par


def ancestors(model: dict, body: int) -> list[int]:
    """Joints supporting ``body`` (the path to the base), ``body`` itself first."""
    par = parents(model)
    out = []
    while body > 0:
        out.append(body)
        body = par[body - 1]
    return out


def kinematics(model: dict, q, qd=None):
    """Per body j = 0..n: dict(tau, r, T, R, omega, v, w, eps) in frame 0.

    Body j follows from its parent body b = parent[j-1]; T, R (3 x n) are the partial
    velocity (Jacobian) matrices, non-zero only in the columns of b's supporting joints and j.
    """
    n = len(model["joints"])
    qd = np.zeros(n) if qd is None else np.asarray(qd)
    b = dict(tau=np.eye(3), r=np.zeros(3), T=np.zeros((3, n)), R=np.zeros((3, n)),
             omega=np.zeros(3), v=np.zeros(3), w=np.zeros(3), eps=np.zeros(3))
    out = [b]
    for j, (jt, par) in enumerate(zip(model["joints"], parents(model))):
        b = out[par]
        e = np.eye(3)[jt["axis"]]
        alpha = A_axis(jt["axis"], q[j]) if jt["kind"] == "R" else np.eye(3)
        t = q[j] * e if jt["kind"] == "P" else np.zeros(3)
        theta_J = jt["gamma"] @ b["tau"]
        tau = alpha @ theta_J
        r_rel = b["tau"].T @ jt["l"] + theta_J.T @ t
        axis0 = theta_J.T @ e
        T_rel, R_rel = np.zeros((3, n)), np.zeros((3, n))
        (R_rel if jt["kind"] == "R" else T_rel)[:, j] = axis0
        v_rel, omega_rel = T_rel @ qd, R_rel @ qd
        nb = dict(
            tau=tau, r=b["r"] + r_rel,
            R=b["R"] + R_rel,
            T=b["T"] - skew(r_rel) @ b["R"] + T_rel,
            omega=b["omega"] + omega_rel,
            v=b["v"] + np.cross(b["omega"], r_rel) + v_rel,
            w=(b["w"] + np.cross(b["eps"], r_rel) + np.cross(b["omega"], np.cross(b["omega"], r_rel))
               + 2 * np.cross(b["omega"], v_rel)),
            eps=b["eps"] + np.cross(b["omega"], omega_rel),
        )
        out.append(nb)
    return out


def mass_matrix(model: dict, q) -> np.ndarray:
    n = len(model["joints"])
    A = np.zeros((n, n))
    for bk, body in zip(kinematics(model, q)[1:], model["bodies"]):
        T, R, tau = bk["T"], bk["R"], bk["tau"]
        c0 = tau.T @ body["c"]
        I0 = tau.T @ body["I"] @ tau
        S = skew(c0)
        A += body["m"] * T.T @ T - T.T @ S @ R + R.T @ S @ T + R.T @ I0 @ R
    return A


def h_vector(model: dict, q, qd) -> np.ndarray:
    """Coriolis, centrifugal and gravity forces: A qdd + h = Q_total."""
    n = len(model["joints"])
    g = model["gravity"]
    h = np.zeros(n)
    for bk, body in zip(kinematics(model, q, qd)[1:], model["bodies"]):
        tau, om = bk["tau"], bk["omega"]
        c0 = tau.T @ body["c"]
        I0 = tau.T @ body["I"] @ tau
        a = bk["w"] - g
        f = body["m"] * a + np.cross(bk["eps"], c0) + np.cross(om, np.cross(om, c0))
        nn = I0 @ bk["eps"] + np.cross(om, I0 @ om) + np.cross(c0, a)
        h += bk["T"].T @ f + bk["R"].T @ nn
    return h


def passive(model: dict, q, qd) -> np.ndarray:
    return np.array([-jt["k"] * (qj - jt["q0"]) - jt["c"] * qdj
                     for jt, qj, qdj in zip(model["joints"], q, qd)])


def bias(model, q, qd, Q):
    return Q + passive(model, q, qd) - h_vector(model, q, qd)


def inverse_dynamics(model, q, qd, qdd):
    return mass_matrix(model, q) @ qdd + h_vector(model, q, qd) - passive(model, q, qd)


def forward_dynamics(model, q, qd, Q):
    return np.linalg.solve(mass_matrix(model, q), bias(model, q, qd, Q))


def energy(model, q, qd):
    T, V = 0.0, 0.0
    for bk, body in zip(kinematics(model, q, qd)[1:], model["bodies"]):
        tau = bk["tau"]
        c0 = tau.T @ body["c"]
        I0 = tau.T @ body["I"] @ tau
        v, om = bk["v"], bk["omega"]
        T += 0.5 * body["m"] * v @ v + v @ np.cross(om, c0) + 0.5 * om @ I0 @ om
        V -= model["gravity"] @ (body["m"] * bk["r"] + c0)
    return T, V
