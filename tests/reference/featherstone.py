"""Independent numeric reference for serial-chain and kinematic-tree rigid-body dynamics.

Plain numpy implementation of the spatial-vector algorithms of
R. Featherstone, "Rigid Body Dynamics Algorithms", Springer 2008 (RBDA):

* RNEA  -- recursive Newton-Euler algorithm, Table 5.1
* CRBA  -- composite-rigid-body algorithm, Table 6.2
* ABA   -- articulated-body algorithm, Table 7.1

Conventions (RBDA ch. 2): spatial vectors are 6-vectors ``[angular; linear]``
expressed in body coordinates at the body-frame origin.  A Plücker transform
from frame A to frame B, whose origin is at ``r`` (A coordinates) and whose
coordinate rotation is ``E`` (``v_B = E v_A``), is
``X = [[E, 0], [-E rx, E]]`` (RBDA eq. 2.24 / Table 2.2, ``xlt``/``rot``).

Chain / tree description
------------------------
A chain is a list of N dicts; joint j (1..N) connects body ``parent`` (0 = base)
to body j, ``parent`` being ``lambda(j)`` of RBDA sec. 4.1.2:

``parent`` optional int, 0 <= parent < j; absent -> j-1 (serial chain)
``type``  ``"R"`` (revolute) or ``"P"`` (prismatic)
``axis``  ``"x"``, ``"y"`` or ``"z"`` -- joint axis in the joint frame
``l``     joint-frame origin, in parent-body coordinates
``gamma`` coordinate transform parent body -> joint frame (passive rotation)
``m``, ``com``, ``I_com``  mass, centre of mass (body j coords) and
          rotational inertia about the CoM (body j coords)

Joint model (RBDA Table 4.1, ``Rx``/``Ry``/``Rz``/``Px``/``Py``/``Pz``):
revolute -> body frame = joint frame rotated by q about ``axis``;
prismatic -> body frame = joint frame translated by q along ``axis``.
Tree transform ``X_T = [[gamma, 0], [-gamma lx, gamma]]``; ``iX_lambda(i) = X_J X_T``
(RBDA eq. 4.33).  The algorithms below follow the tree forms of RBDA Tables 5.1,
6.2 and 7.1 with the parent array ``lambda``.

Equation of motion: ``A(q) qdd + h(q, qd, g) = Q``; gravity ``g`` is a
3-vector in base coordinates, applied through a fictitious base acceleration
``a_0 = -a_g = [0; -g]`` (RBDA sec. 5.3).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]
Joint = Mapping[str, Any]
Chain = Sequence[Joint]

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}

__all__ = [
    "parents",
    "ancestors",
    "skew",
    "rot_passive",
    "joint_transform",
    "tree_transform",
    "motion_subspace",
    "spatial_inertia",
    "crm",
    "crf",
    "forward_kinematics",
    "point_jacobian",
    "body_velocities",
    "rnea",
    "crba",
    "aba",
    "kinetic_energy",
    "potential_energy",
]


# ---------------------------------------------------------------------------
# Spatial algebra primitives (RBDA ch. 2, Table 2.2)
# ---------------------------------------------------------------------------


def skew(v: ArrayLike) -> Array:
    """Cross-product matrix ``v x`` (RBDA eq. 2.23)."""
    x, y, z = np.asarray(v, dtype=float)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rot_passive(axis: str, angle: float) -> Array:
    """Elementary coordinate rotation ``rx``/``ry``/``rz`` (RBDA eq. 2.21)."""
    c, s = np.cos(angle), np.sin(angle)
    if axis == "x":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, s], [0.0, -s, c]])
    if axis == "y":
        return np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])
    if axis == "z":
        return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    raise ValueError(f"bad axis {axis!r}")


def _plucker(E: Array, r: Array) -> Array:
    """Plücker motion transform ``rot(E) xlt(r)`` (RBDA Table 2.2)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(r)
    return X


def _unit(axis: str) -> Array:
    e = np.zeros(3)
    e[_AXIS_INDEX[axis]] = 1.0
    return e


def joint_transform(joint: Joint, q: float) -> Array:
    """Joint transform ``X_J(q)`` (RBDA Table 4.1)."""
    axis = joint["axis"]
    if joint["type"] == "R":
        return _plucker(rot_passive(axis, q), np.zeros(3))
    if joint["type"] == "P":
        return _plucker(np.eye(3), q * _unit(axis))
    raise ValueError(f"bad joint type {joint['type']!r}")


def tree_transform(joint: Joint) -> Array:
    """Fixed tree transform ``X_T`` from the parent body to the joint frame (RBDA sec. 4.2)."""
    gamma = np.asarray(joint["gamma"], dtype=float).reshape(3, 3)
    l = np.asarray(joint["l"], dtype=float).reshape(3)
    return _plucker(gamma, l)


def motion_subspace(joint: Joint) -> Array:
    """Joint motion subspace ``S`` (6-vector) in body coordinates (RBDA Table 4.1)."""
    S = np.zeros(6)
    k = _AXIS_INDEX[joint["axis"]]
    if joint["type"] == "R":
        S[k] = 1.0
    elif joint["type"] == "P":
        S[3 + k] = 1.0
    else:
        raise ValueError(f"bad joint type {joint['type']!r}")
    return S


def spatial_inertia(joint: Joint) -> Array:
    """Spatial inertia at the body origin from (m, c, I_c) (RBDA eq. 2.63)."""
    m = float(joint["m"])
    c = np.asarray(joint["com"], dtype=float).reshape(3)
    Ic = np.asarray(joint["I_com"], dtype=float).reshape(3, 3)
    C = skew(c)
    I = np.zeros((6, 6))
    I[:3, :3] = Ic + m * C @ C.T
    I[:3, 3:] = m * C
    I[3:, :3] = m * C.T
    I[3:, 3:] = m * np.eye(3)
    return I


def crm(v: Array) -> Array:
    """Spatial motion cross-product matrix ``v x`` (RBDA eq. 2.31)."""
    w, u = skew(v[:3]), skew(v[3:])
    M = np.zeros((6, 6))
    M[:3, :3] = w
    M[3:, :3] = u
    M[3:, 3:] = w
    return M


def crf(v: Array) -> Array:
    """Spatial force cross-product matrix ``v x* = -(v x)^T`` (RBDA eq. 2.32)."""
    return -crm(v).T


def parents(chain: Chain) -> list[int]:
    """Parent body ``lambda(j)`` of each joint j = 1..N (RBDA sec. 4.1.2); default j-1.

    Raises ``ValueError`` unless ``0 <= lambda(j) < j`` (regular numbering).
    """
    lam = [int(jt.get("parent", j - 1)) for j, jt in enumerate(chain, start=1)]
    for j, p in enumerate(lam, start=1):
        if not 0 <= p < j:
            raise ValueError(f"joint {j}: parent body {p} must satisfy 0 <= parent < {j}")
    return lam


def ancestors(chain: Chain, body: int) -> list[int]:
    """Joints on the path from the base to ``body``: the support set kappa(body) (RBDA sec. 4.1.2).

    Returned in decreasing order (``body`` itself first when ``body > 0``).
    """
    lam = parents(chain)
    out = []
    while body > 0:
        out.append(body)
        body = lam[body - 1]
    return out


def _lambda0(chain: Chain) -> list[int]:
    """Parent of each 0-based joint index i as a 0-based index (-1 = base)."""
    return [p - 1 for p in parents(chain)]


def _link_transforms(chain: Chain, q: ArrayLike) -> list[Array]:
    """``iX_lambda(i) = X_J(q_i) X_T(i)`` for i = 1..N (RBDA eq. 4.33)."""
    q = np.asarray(q, dtype=float).reshape(len(chain))
    return [joint_transform(jt, qi) @ tree_transform(jt) for jt, qi in zip(chain, q)]


def _check(chain: Chain, *vecs: ArrayLike) -> list[Array]:
    n = len(chain)
    return [np.asarray(v, dtype=float).reshape(n) for v in vecs]


# ---------------------------------------------------------------------------
# Kinematics (RBDA ch. 4; geometric, in base coordinates)
# ---------------------------------------------------------------------------


def forward_kinematics(chain: Chain, q: ArrayLike) -> list[tuple[Array, Array]]:
    """Body poses ``(R_j, p_j)``, j = 0..N, in base coordinates.

    ``R_j`` rotates body-j coordinates to base coordinates (it is the transpose
    of the accumulated coordinate transform ``E_j = alpha_j gamma_j E_lambda(j)``,
    cf. RBDA eq. 4.33); ``p_j`` is the origin of body j.  Each body is placed
    from its parent ``lambda(j)``.
    """
    (q,) = _check(chain, q)
    out = [(np.eye(3), np.zeros(3))]
    for jt, qi, lam in zip(chain, q, parents(chain)):
        R, p = out[lam]
        gamma = np.asarray(jt["gamma"], dtype=float).reshape(3, 3)
        l = np.asarray(jt["l"], dtype=float).reshape(3)
        RJ = R @ gamma.T  # joint frame -> base
        pJ = p + R @ l
        if jt["type"] == "R":
            R = RJ @ rot_passive(jt["axis"], qi).T
            p = pJ
        else:
            R = RJ
            p = pJ + RJ @ (qi * _unit(jt["axis"]))
        out.append((R.copy(), p.copy()))
    return out


def point_jacobian(
    chain: Chain, q: ArrayLike, body: int, point: ArrayLike
) -> tuple[Array, Array]:
    """Geometric Jacobians ``(Jv, Jw)`` (3xN each, base coords) of a point fixed in ``body``.

    Column i (i a joint supporting ``body``, i.e. in kappa(body)): revolute ->
    ``Jw = z_i``, ``Jv = z_i x (P - o_i)``; prismatic -> ``Jv = z_i``, ``Jw = 0``;
    z_i = joint axis in base coordinates, o_i = joint origin.  All other columns
    are zero.  Equivalent to mapping the spatial motion subspaces ``S_i`` to base
    coordinates (RBDA sec. 4.4).
    """
    n = len(chain)
    if not 0 <= body <= n:
        raise ValueError("body index out of range")
    fk = forward_kinematics(chain, q)
    Rb, pb = fk[body]
    P = pb + Rb @ np.asarray(point, dtype=float).reshape(3)
    Jv = np.zeros((3, n))
    Jw = np.zeros((3, n))
    for i in ancestors(chain, body):
        jt = chain[i - 1]
        Ri, pi = fk[i]
        # axis in body-i coords equals axis in joint-frame coords for both types
        z = Ri @ _unit(jt["axis"])
        if jt["type"] == "R":
            Jw[:, i - 1] = z
            Jv[:, i - 1] = np.cross(z, P - pi)
        else:
            Jv[:, i - 1] = z
    return Jv, Jw


def body_velocities(
    chain: Chain, q: ArrayLike, qd: ArrayLike
) -> list[tuple[Array, Array]]:
    """Origin velocity ``v_j`` and angular velocity ``omega_j`` (base coords), j = 1..N.

    Classical recursion from the parent ``k = lambda(j)``:
    ``omega_j = omega_k + z_j qd_j`` (revolute),
    ``v_j = v_k + omega_k x (p_j - p_k) [+ z_j qd_j if prismatic]``.
    """
    q, qd = _check(chain, q, qd)
    fk = forward_kinematics(chain, q)
    vel = [(np.zeros(3), np.zeros(3))]  # body 0 (base) at rest
    for j, (jt, lam) in enumerate(zip(chain, parents(chain)), start=1):
        v, w = vel[lam]
        z = fk[j][0] @ _unit(jt["axis"])
        v = v + np.cross(w, fk[j][1] - fk[lam][1])
        if jt["type"] == "R":
            w = w + z * qd[j - 1]
        else:
            v = v + z * qd[j - 1]
        vel.append((v, w))
    return vel[1:]


# ---------------------------------------------------------------------------
# Dynamics
# ---------------------------------------------------------------------------


def rnea(
    chain: Chain, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, g: ArrayLike
) -> Array:
    """Inverse dynamics ``Q = A qdd + h`` by the RNEA (RBDA Table 5.1, tree form).

    Gravity enters as the fictitious base acceleration ``a_0 = [0; -g]``.
    Outward pass from ``lambda(i)``; inward pass adds ``f_i`` into ``f_lambda(i)``.
    """
    q, qd, qdd = _check(chain, q, qd, qdd)
    n = len(chain)
    lam = _lambda0(chain)
    Xup = _link_transforms(chain, q)
    S = [motion_subspace(jt) for jt in chain]
    I = [spatial_inertia(jt) for jt in chain]
    a0 = np.concatenate([np.zeros(3), -np.asarray(g, dtype=float).reshape(3)])
    v: list[Array] = []
    a: list[Array] = []
    f: list[Array] = []
    for i in range(n):
        v_p, a_p = (v[lam[i]], a[lam[i]]) if lam[i] >= 0 else (np.zeros(6), a0)
        vJ = S[i] * qd[i]
        v.append(Xup[i] @ v_p + vJ)
        a.append(Xup[i] @ a_p + S[i] * qdd[i] + crm(v[i]) @ vJ)
        f.append(I[i] @ a[i] + crf(v[i]) @ (I[i] @ v[i]))
    tau = np.zeros(n)
    for i in range(n - 1, -1, -1):
        tau[i] = S[i] @ f[i]
        if lam[i] >= 0:
            f[lam[i]] = f[lam[i]] + Xup[i].T @ f[i]
    return tau


def crba(chain: Chain, q: ArrayLike) -> Array:
    """Joint-space inertia matrix ``A(q)`` by the CRBA (RBDA Table 6.2, tree form).

    Composite inertias accumulate into ``lambda(i)``; the off-diagonal sweep walks
    ``j = lambda(j)`` up to the base, so ``H_ij`` stays exactly zero unless one of
    i, j supports the other.
    """
    (q,) = _check(chain, q)
    n = len(chain)
    lam = _lambda0(chain)
    Xup = _link_transforms(chain, q)
    S = [motion_subspace(jt) for jt in chain]
    Ic = [spatial_inertia(jt) for jt in chain]
    for i in range(n - 1, -1, -1):
        if lam[i] >= 0:
            Ic[lam[i]] = Ic[lam[i]] + Xup[i].T @ Ic[i] @ Xup[i]
    H = np.zeros((n, n))
    for i in range(n):
        F = Ic[i] @ S[i]
        H[i, i] = S[i] @ F
        j = i
        while lam[j] >= 0:
            F = Xup[j].T @ F
            j = lam[j]
            H[i, j] = F @ S[j]
            H[j, i] = H[i, j]
    return H


def aba(chain: Chain, q: ArrayLike, qd: ArrayLike, Q: ArrayLike, g: ArrayLike) -> Array:
    """Forward dynamics ``qdd`` by the articulated-body algorithm (RBDA Table 7.1, tree form).

    Pass 1 and 3 run outward from ``lambda(i)``; pass 2 adds each articulated
    inertia and bias force into ``lambda(i)``.
    """
    q, qd, Q = _check(chain, q, qd, Q)
    n = len(chain)
    lam = _lambda0(chain)
    Xup = _link_transforms(chain, q)
    S = [motion_subspace(jt) for jt in chain]
    IA = [spatial_inertia(jt) for jt in chain]
    v = [np.zeros(6)] * n
    c = [np.zeros(6)] * n
    pA = [np.zeros(6)] * n
    for i in range(n):  # pass 1
        vJ = S[i] * qd[i]
        v[i] = (Xup[i] @ v[lam[i]] if lam[i] >= 0 else np.zeros(6)) + vJ
        c[i] = crm(v[i]) @ vJ
        pA[i] = crf(v[i]) @ (IA[i] @ v[i])
    U = [np.zeros(6)] * n
    D = np.zeros(n)
    u = np.zeros(n)
    for i in range(n - 1, -1, -1):  # pass 2
        U[i] = IA[i] @ S[i]
        D[i] = S[i] @ U[i]
        u[i] = Q[i] - S[i] @ pA[i]
        if lam[i] >= 0:
            Ia = IA[i] - np.outer(U[i], U[i]) / D[i]
            pa = pA[i] + Ia @ c[i] + U[i] * (u[i] / D[i])
            IA[lam[i]] = IA[lam[i]] + Xup[i].T @ Ia @ Xup[i]
            pA[lam[i]] = pA[lam[i]] + Xup[i].T @ pa
    qdd = np.zeros(n)
    a0 = np.concatenate([np.zeros(3), -np.asarray(g, dtype=float).reshape(3)])
    a: list[Array] = []
    for i in range(n):  # pass 3
        a.append(Xup[i] @ (a[lam[i]] if lam[i] >= 0 else a0) + c[i])
        qdd[i] = (u[i] - U[i] @ a[i]) / D[i]
        a[i] = a[i] + S[i] * qdd[i]
    return qdd


# ---------------------------------------------------------------------------
# Energies (computed body by body, independently of A)
# ---------------------------------------------------------------------------


def kinetic_energy(chain: Chain, q: ArrayLike, qd: ArrayLike) -> float:
    """Sum over bodies of ``1/2 m |v_G|^2 + 1/2 omega^T I_G omega`` (base coords)."""
    fk = forward_kinematics(chain, q)
    vel = body_velocities(chain, q, qd)
    T = 0.0
    for j, jt in enumerate(chain, start=1):
        R = fk[j][0]
        v, w = vel[j - 1]
        m = float(jt["m"])
        rc = R @ np.asarray(jt["com"], dtype=float).reshape(3)
        IG = R @ np.asarray(jt["I_com"], dtype=float).reshape(3, 3) @ R.T
        vG = v + np.cross(w, rc)
        T += 0.5 * m * (vG @ vG) + 0.5 * (w @ IG @ w)
    return float(T)


def potential_energy(chain: Chain, q: ArrayLike, g: ArrayLike) -> float:
    """Gravitational potential ``-sum_j m_j g . p_Gj`` (base coords)."""
    g = np.asarray(g, dtype=float).reshape(3)
    fk = forward_kinematics(chain, q)
    V = 0.0
    for j, jt in enumerate(chain, start=1):
        R, p = fk[j]
        pG = p + R @ np.asarray(jt["com"], dtype=float).reshape(3)
        V -= float(jt["m"]) * (g @ pG)
    return float(V)
