"""Independent numeric reference for 6-DoF parallel mechanisms (Lagrange, first kind).

Mechanism dict, conventions, inputs and outputs: docs/parallel_numeric_format.md.

Formulation (no reduction onto the platform coordinates)
-------------------------------------------------------
Open tree + cut-joint multipliers:

* each leg k is a fixed-base serial chain in its own joint coordinates ``q_k``
  (equation of motion ``A_k(q_k) qdd_k + h_k(q_k, qd_k, g) = Q_k + (cut reactions)``,
  ``A_k = sum_j m_j Jv_Gj^T Jv_Gj + Jw_j^T I_Gj Jw_j`` and
  ``h_k = sum_j m_j Jv_Gj^T (a0_Gj - g) + Jw_j^T (I_Gj alpha0_j + w_j x I_Gj w_j)``,
  the Newton-Euler equations of every body projected on its Jacobians; ``a0``, ``alpha0``
  are the accelerations at ``qdd = 0``; massless bodies contribute exactly nothing);
* the platform C is a free body in ``u = [v_C (frame 0), omega_C (frame C)]``
  (Newton ``m a_C = m g + f_E + ...``, Euler ``I w' + w x I w = m_E + ...``);
* the cut joints are holonomic constraints ``phi_k(q_k, x) = 0``:
  ``P_L(q_k) - P_C(x) = 0`` (3 equations) and, for a universal cut, ``e1 . e2 = 0``.

With ``z = [u; qd_1; ...; qd_6]``, the velocity constraints ``J z = 0`` and their time
derivative ``J zd = gamma = -Jd z``, the accelerations and multipliers follow from ONE
linear KKT system (Lagrange's equations of the first kind)::

    [[M, J^T], [J, 0]] [zd; -lambda] = [f; gamma]

where ``M = blockdiag(m_C 1, I_C, A_1, ..., A_6)`` and ``f`` holds all applied and
velocity-dependent forces.  With the sign of the constraint rows chosen below
(``phi = P_L - P_C``, ``n . (w_L - w_C)``), ``-lambda`` is exactly the force (frame 0) and
the moment magnitude along ``n = e1 x e2`` that leg k applies on C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]
Mech = Mapping[str, Any]
Leg = Mapping[str, Any]

__all__ = [
    "solve",
    "elementary",
    "alpha_C",
    "skew",
    "cross",
    "leg_kinematics",
    "point_motion",
    "point_jacobian",
    "body_com_inertia",
    "leg_base_wrench",
    "leg_mass_bias",
    "cut_residual",
    "cut_jacobians",
    "cut_gamma",
    "close_leg",
    "pus_leg",
    "LegKin",
]

NEWTON_TOL = 1e-14
NEWTON_MAXIT = 60
_EY = np.array([0.0, 1.0, 0.0])
_EZ = np.array([0.0, 0.0, 1.0])


# ---------------------------------------------------------------------------
# rotations
# ---------------------------------------------------------------------------


def cross(a: Array, b: Array) -> Array:
    """``a x b`` for 3-vectors (np.cross is slow for single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def skew(v: ArrayLike) -> Array:
    """Cross-product matrix: ``skew(a) b = a x b``."""
    x, y, z = np.asarray(v, dtype=float)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def elementary(axis: int, q: float) -> Array:
    """Passive elementary rotation ``A_x``, ``A_y``, ``A_z`` of the format doc."""
    c, s = np.cos(q), np.sin(q)
    if axis == 0:
        return np.array([[1.0, 0.0, 0.0], [0.0, c, s], [0.0, -s, c]])
    if axis == 1:
        return np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])
    if axis == 2:
        return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    raise ValueError(f"bad axis {axis!r}")


def alpha_C(x: ArrayLike) -> Array:
    """``alpha_C = A_x(psi_x) A_z(psi_z) A_y(psi_y)`` (frame 0 -> frame C), x = pose."""
    x = np.asarray(x, dtype=float)
    return elementary(0, x[5]) @ elementary(2, x[4]) @ elementary(1, x[3])


# ---------------------------------------------------------------------------
# leg kinematics (all vectors in frame 0)
# ---------------------------------------------------------------------------


@dataclass
class LegKin:
    """Body j = 0..n (0 = base): rotation body->0 ``R``, origin ``o``, velocity ``v``,
    angular velocity ``w``, accelerations ``a``/``al``; ``z[j]`` = axis of joint j."""

    R: list[Array]
    o: list[Array]
    z: list[Array]
    v: list[Array]
    w: list[Array]
    a: list[Array]
    al: list[Array]
    kinds: list[str]


def _vec(v: ArrayLike) -> Array:
    return np.asarray(v, dtype=float).reshape(3)


def _mat(M: ArrayLike) -> Array:
    return np.asarray(M, dtype=float).reshape(3, 3)


def leg_kinematics(leg: Leg, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> LegKin:
    """Forward recursion over the chain.

    Joint frame: ``R_J = R_{j-1} gamma^T``, ``o_J = o_{j-1} + R_{j-1} l``, axis ``z = R_J e_a``.
    Revolute: ``R_j = R_J A_a(q)^T``, ``o_j = o_J``, ``w_j = w_{j-1} + z qd``,
    ``al_j = al_{j-1} + z qdd + w_{j-1} x z qd``.
    Prismatic: ``o_j = o_J + q z``, ``v_j += z qd``, ``a_j += 2 w_{j-1} x z qd + z qdd``.
    Both: ``v_j = v_{j-1} + w_{j-1} x r``, ``a_j = a_{j-1} + al_{j-1} x r + w x (w x r)``,
    ``r = o_j - o_{j-1}`` (the parts due to body j-1's motion).
    """
    z0 = np.zeros(3)
    R, o, v, w, a, al = np.eye(3), z0, z0, z0, z0, z0
    kin = LegKin([R], [o], [z0], [v], [w], [a], [al], [""])
    for j, jt in enumerate(leg["joints"]):
        ax = int(jt["axis"])
        RJ = R @ _mat(jt["gamma"]).T
        oJ = o + R @ _vec(jt["l"])
        z = RJ[:, ax].copy()
        if jt["kind"] == "R":
            Rn, on = RJ @ elementary(ax, q[j]).T, oJ
            r = on - o
            vn = v + cross(w, r)
            an = a + cross(al, r) + cross(w, cross(w, r))
            wn = w + z * qd[j]
            aln = al + z * qdd[j] + cross(w, z) * qd[j]
        elif jt["kind"] == "P":
            Rn, on = RJ, oJ + q[j] * z
            r = on - o
            vn = v + cross(w, r) + z * qd[j]
            an = (a + cross(al, r) + cross(w, cross(w, r))
                  + 2.0 * cross(w, z) * qd[j] + z * qdd[j])
            wn, aln = w, al
        else:
            raise ValueError(f"bad joint kind {jt['kind']!r}")
        R, o, v, w, a, al = Rn, on, vn, wn, an, aln
        for lst, val in zip((kin.R, kin.o, kin.z, kin.v, kin.w, kin.a, kin.al),
                            (R, o, z, v, w, a, al)):
            lst.append(val)
        kin.kinds.append(jt["kind"])
    return kin


def point_motion(kin: LegKin, body: int, s: ArrayLike) -> tuple[Array, Array, Array]:
    """Position, velocity, acceleration (frame 0) of the point ``s`` (body coords) of a body:
    ``r = o + rho``, ``v = v_o + w x rho``, ``a = a_o + al x rho + w x (w x rho)``."""
    rho = kin.R[body] @ _vec(s)
    w = kin.w[body]
    return (kin.o[body] + rho, kin.v[body] + cross(w, rho),
            kin.a[body] + cross(kin.al[body], rho) + cross(w, cross(w, rho)))


def point_jacobian(kin: LegKin, body: int, P: Array) -> tuple[Array, Array]:
    """Jacobians (3 x n, frame 0) of the point P (frame 0) fixed in ``body`` and of its
    angular velocity: revolute column ``[z_i x (P - o_i); z_i]``, prismatic ``[z_i; 0]``."""
    n = len(kin.R) - 1
    Jv, Jw = np.zeros((3, n)), np.zeros((3, n))
    for i in range(1, body + 1):
        if kin.kinds[i] == "R":
            Jv[:, i - 1] = cross(kin.z[i], P - kin.o[i])
            Jw[:, i - 1] = kin.z[i]
        else:
            Jv[:, i - 1] = kin.z[i]
    return Jv, Jw


# ---------------------------------------------------------------------------
# leg dynamics
# ---------------------------------------------------------------------------


def body_com_inertia(body: Mapping[str, Any]) -> tuple[float, Array, Array]:
    """``(m, d, I_G)``; the format gives I about O_j, so ``I_G = I_O - m (|d|^2 1 - d d^T)``."""
    m = float(body["m"])
    d = _vec(body["d"])
    I_O = _mat(body["I"])
    return m, d, I_O - m * ((d @ d) * np.eye(3) - np.outer(d, d))


def _is_massless(body: Mapping[str, Any]) -> bool:
    return float(body["m"]) == 0.0 and not np.any(_mat(body["I"]))


def leg_mass_bias(leg: Leg, kin0: LegKin, g: Array) -> tuple[Array, Array]:
    """``A = sum m Jv_G^T Jv_G + Jw^T I_G Jw``, ``h = sum m Jv_G^T (a0_G - g)
    + Jw^T (I_G al0 + w x I_G w)`` (Newton-Euler projected; ``kin0`` has qdd = 0)."""
    n = len(leg["joints"])
    A, h = np.zeros((n, n)), np.zeros(n)
    for j, body in enumerate(leg["bodies"], start=1):
        if _is_massless(body):
            continue
        m, d, IG = body_com_inertia(body)
        R = kin0.R[j]
        I0 = R @ IG @ R.T
        rG, _, aG0 = point_motion(kin0, j, d)
        Jv, Jw = point_jacobian(kin0, j, rG)
        w = kin0.w[j]
        A += m * Jv.T @ Jv + Jw.T @ I0 @ Jw
        h += m * Jv.T @ (aG0 - g) + Jw.T @ (I0 @ kin0.al[j] + cross(w, I0 @ w))
    # a joint's reflected inertia (a ball-screw rotor): T += 1/2 inertia qd^2
    if len(leg.get("laws", ())) == n:
        A += np.diag([law.get("inertia", 0.0) for law in leg["laws"]])
    return A, h


def leg_base_wrench(leg: Leg, kin: LegKin, g: Array, F: Array, M: Array,
                    P: Array) -> tuple[Array, Array]:
    """Wrench (force, moment about O_0; frame 0) that the base applies on body 1 through
    joint 1 (constraint reaction + active force), by Newton-Euler of the leg subtree:
    ``F_01 = sum m (a_G - g) + F``,
    ``M_01 = sum [r_G x m (a_G - g) + I_G al + w x I_G w] + P x F + M``,
    where (F at P, M) is what the leg applies on C (so C applies minus that on the leg)."""
    F01, M01 = F.copy(), cross(P, F) + M
    for j, body in enumerate(leg["bodies"], start=1):
        if _is_massless(body):
            continue
        m, d, IG = body_com_inertia(body)
        R = kin.R[j]
        I0 = R @ IG @ R.T
        rG, _, aG = point_motion(kin, j, d)
        w = kin.w[j]
        f = m * (aG - g)
        F01 += f
        M01 += cross(rG, f) + I0 @ kin.al[j] + cross(w, I0 @ w)
    return F01, M01


# ---------------------------------------------------------------------------
# cut-joint constraints
# ---------------------------------------------------------------------------


def _cut_vectors(leg: Leg, kin: LegKin, R_C: Array) -> tuple[Array, Array, Array]:
    """``e1 = R_L gamma_L^T e_y``, ``e2 = R_C gamma_C^T e_z`` and ``n = e1 x e2`` (frame 0)."""
    cut = leg["cut"]
    e1 = kin.R[-1] @ (_mat(cut["gamma_L"]).T @ _EY)
    e2 = R_C @ (_mat(cut["gamma_C"]).T @ _EZ)
    return e1, e2, cross(e1, e2)


def cut_residual(leg: Leg, kin: LegKin, r_C: Array, R_C: Array) -> Array:
    """``phi = [P_L - P_C]`` (+ ``e1 . e2`` for a universal cut); ``R_C = alpha_C^T``."""
    cut = leg["cut"]
    P_L = kin.o[-1] + kin.R[-1] @ _vec(cut["l_L"])
    P_C = r_C + R_C @ _vec(cut["l_C"])
    phi = P_L - P_C
    if int(cut["m"]) == 4:
        e1, e2, _ = _cut_vectors(leg, kin, R_C)
        phi = np.append(phi, e1 @ e2)
    return phi


def cut_jacobians(leg: Leg, kin: LegKin, R_C: Array) -> tuple[Array, Array]:
    """``phi_dot = Jq qd + Ju u``:
    ``Jq = [Jv_PL; n^T Jw_L]``, ``Ju = [[-1, R_C skew(l_C)], [0, -n^T R_C]]``
    (``d/dt(R_C l_C) = R_C (w_C x l_C)``; ``d(e1.e2)/dt = n . (w_L - R_C w_C)``)."""
    cut = leg["cut"]
    nb = len(kin.R) - 1
    P_L = kin.o[-1] + kin.R[-1] @ _vec(cut["l_L"])
    Jv, Jw = point_jacobian(kin, nb, P_L)
    Jq = Jv
    Ju = np.hstack([-np.eye(3), R_C @ skew(cut["l_C"])])
    if int(cut["m"]) == 4:
        _, _, nrm = _cut_vectors(leg, kin, R_C)
        Jq = np.vstack([Jq, nrm @ Jw])
        Ju = np.vstack([Ju, np.concatenate([np.zeros(3), -nrm @ R_C])])
    return Jq, Ju


def cut_gamma(leg: Leg, kin0: LegKin, R_C: Array, w_C: Array) -> Array:
    """Acceleration right-hand side ``gamma = -Jd z`` (``kin0``: kinematics with qdd = 0).

    Point: ``Jd z = a0_PL - R_C (w_C x (w_C x l_C))``.
    Universal: ``Jd z = n . al0_L + nd . (w_L - w_C0)``, ``w_C0 = R_C w_C``,
    ``nd = (w_L x e1) x e2 + e1 x (w_C0 x e2)`` (``d/dt (R_C w_C) = R_C wd_C`` has no bias).
    """
    cut = leg["cut"]
    nb = len(kin0.R) - 1
    l_C = _vec(cut["l_C"])
    _, _, a0 = point_motion(kin0, nb, cut["l_L"])
    jd = a0 - R_C @ cross(w_C, cross(w_C, l_C))
    if int(cut["m"]) == 4:
        e1, e2, nrm = _cut_vectors(leg, kin0, R_C)
        wL, wC0 = kin0.w[nb], R_C @ w_C
        nd = cross(cross(wL, e1), e2) + cross(e1, cross(wC0, e2))
        jd = np.append(jd, nrm @ kin0.al[nb] + nd @ (wL - wC0))
    return -jd


# ---------------------------------------------------------------------------
# a PUS leg from its geometry (independent of the generator and of parallel_numpy)
# ---------------------------------------------------------------------------


def _axes(x_dir: Array, hint: Array) -> Array:
    """Rows x, y, z of a right-handed frame with x along ``x_dir`` and y in the plane of x and
    ``hint`` (on hint's side): z = x cross hint, y = z cross x."""
    x = x_dir / np.linalg.norm(x_dir)
    z = cross(x, hint)
    z = z / np.linalg.norm(z)
    return np.array([x, cross(z, x), z])


def pus_leg(base: ArrayLike, rail: ArrayLike, l_C: ArrayLike, home: ArrayLike,
            rod: float | None = None, bodies: Sequence[Mapping[str, Any]] | None = None,
            laws: Sequence[Mapping[str, Any]] | None = None, drive: int = 0,
            name: str = "PUS") -> dict:
    """A PUS leg (slide along a rail, U = R y, R z on the slider, a rod, S cut) from its
    geometry, by the conventions of generator/families/parallel/legs/pus.py, built here with cross products:

    slide frame x = rail, y from z0 x rail (a vertical rail: from z0 x [b_x, b_y, 0], then e_y);
    the slide at home q0 is the root of q^2 - 2 (d . e) q + |d|^2 - rod^2 = 0 nearest 0
    (d = s_home - base); u1's frame (slider coordinates) has x along the rod d - q0 e at home
    and y from the slider's e_y (e_z if the rod is within acos 0.999 of it); l_L = [rod, 0, 0],
    rod = |d| unless given.
    """
    b, e = _vec(base), _vec(rail) / np.linalg.norm(_vec(rail))
    R_C = alpha_C(home).T
    s = np.asarray(home, dtype=float)[:3] + R_C @ _vec(l_C)
    hint = cross(_EZ, e)
    if np.linalg.norm(hint) < 1e-9:
        hint = cross(_EZ, np.array([b[0], b[1], 0.0]))
        if np.linalg.norm(hint) < 1e-9:
            hint = _EY
    G0 = _axes(e, hint)
    d = s - b
    L = float(np.sqrt(d @ d)) if rod is None else float(rod)
    roots = np.sort(np.real(np.roots([1.0, -2.0 * (d @ e), d @ d - L * L])))
    q0 = roots[int(np.argmin(np.abs(roots)))]
    v = G0 @ (d - q0 * e)
    G1 = _axes(v, _EY if abs(v[1]) < 0.999 * L else _EZ)
    zero = {"m": 0.0, "d": np.zeros(3), "I": np.zeros((3, 3))}
    return {"name": name, "type": "PUS",
            "joints": [{"name": "slide", "kind": "P", "axis": 0, "l": b, "gamma": G0},
                       {"name": "u1", "kind": "R", "axis": 1, "l": np.zeros(3), "gamma": G1},
                       {"name": "u2", "kind": "R", "axis": 2, "l": np.zeros(3),
                        "gamma": np.eye(3)}],
            "bodies": [dict(x) for x in bodies] if bodies is not None else [zero] * 3,
            "cut": {"m": 3, "l_L": np.array([L, 0.0, 0.0]), "gamma_L": np.eye(3),
                    "l_C": _vec(l_C), "gamma_C": np.eye(3)},
            "laws": [dict(x) for x in laws] if laws is not None else
            [{"k": [], "c": [], "q0": 0.0, "preload": 0.0}] * 3,
            "drive": drive}


# ---------------------------------------------------------------------------
# closure
# ---------------------------------------------------------------------------


def _length_scale(leg: Leg, r_C: Array) -> float:
    ls = [np.linalg.norm(_vec(j["l"])) for j in leg["joints"]]
    ls += [np.linalg.norm(_vec(leg["cut"]["l_L"])), np.linalg.norm(_vec(leg["cut"]["l_C"])),
           np.linalg.norm(r_C)]
    return 1.0 + max(ls)


def close_leg(leg: Leg, r_C: Array, R_C: Array, q0: ArrayLike) -> Array:
    """Newton iteration ``q <- q - Jq^+ phi(q)`` on the cut equations until
    ``|phi| <= 1e-14 L`` (or the step stalls at round-off); ValueError otherwise."""
    n = len(leg["joints"])
    q = np.array(q0, dtype=float).reshape(n)
    zero = np.zeros(n)
    L = _length_scale(leg, r_C)
    res = np.inf
    for _ in range(NEWTON_MAXIT):
        kin = leg_kinematics(leg, q, zero, zero)
        phi = cut_residual(leg, kin, r_C, R_C)
        res = float(np.max(np.abs(phi)))
        if not np.isfinite(res):
            break
        if res <= NEWTON_TOL * L:
            return q
        Jq, _ = cut_jacobians(leg, kin, R_C)
        dq = np.linalg.lstsq(Jq, phi, rcond=None)[0]
        q = q - dq
        if np.max(np.abs(dq)) <= 1e-15 * (1.0 + np.max(np.abs(q))) and res <= 1e-12 * L:
            return q
    if np.isfinite(res) and res <= 1e-12 * L:
        return q
    raise ValueError(f"leg {leg.get('name', '?')}: position closure did not converge "
                     f"(residual {res:.3e})")


# ---------------------------------------------------------------------------
# the KKT system
# ---------------------------------------------------------------------------


def _per_leg(values: Any, sizes: list[int], what: str) -> list[Array]:
    """Accept a flat array (legs in order) or a list with one array per leg."""
    if isinstance(values, (list, tuple)) and len(values) == len(sizes) and all(
            np.ndim(v) == 1 for v in values):
        out = [np.asarray(v, dtype=float).reshape(-1) for v in values]
    else:
        flat = np.asarray(values, dtype=float).reshape(-1)
        if flat.size != sum(sizes):
            raise ValueError(f"{what}: expected {sum(sizes)} numbers, got {flat.size}")
        out = np.split(flat, np.cumsum(sizes)[:-1])
    for v, n in zip(out, sizes):
        if v.size != n:
            raise ValueError(f"{what}: a leg with {n} joints got {v.size} numbers")
    return [v.copy() for v in out]


def _platform_terms(mech: Mech, w_C: Array, g: Array, f_E: Array,
                    m_E: Array) -> tuple[Array, Array]:
    """``M_C = diag(m 1, I)``, ``f_C = [m g + f_E; m_E - w x I w]`` (Newton, Euler in C)."""
    m = float(mech["platform"]["m"])
    I = _mat(mech["platform"]["I"])
    M = np.zeros((6, 6))
    M[:3, :3] = m * np.eye(3)
    M[3:, 3:] = I
    return M, np.concatenate([m * g + f_E, m_E - cross(w_C, I @ w_C)])


def _leg_rates(leg: Leg, kin: LegKin, R_C: Array, u: Array) -> Array:
    """Velocity closure ``Jq qd = -Ju u`` (least squares, exact for a square regular Jq)."""
    Jq, Ju = cut_jacobians(leg, kin, R_C)
    return np.linalg.lstsq(Jq, -Ju @ u, rcond=None)[0]


def solve(mech: Mech, x: ArrayLike, u: ArrayLike, Q: Any, g: ArrayLike, f_E: ArrayLike,
          m_E: ArrayLike, p0: Any = None) -> dict[str, Any]:
    """Forward dynamics of one state by Lagrange's equations of the first kind.

    ``x``: pose, ``u = [v_C (0); w_C (C)]``, ``Q``: active joint forces (flat, legs in
    order, or one array per leg), ``g``, ``f_E`` (frame 0), ``m_E`` (frame C), ``p0``:
    Newton start (default zeros).  Returns the dict of docs/parallel_numeric_format.md.
    """
    legs = mech["legs"]
    sizes = [len(leg["joints"]) for leg in legs]
    x, u = np.asarray(x, float).reshape(6), np.asarray(u, float).reshape(6)
    g, f_E, m_E = _vec(g), _vec(f_E), _vec(m_E)
    Qs = _per_leg(Q, sizes, "Q")
    starts = [np.zeros(n) for n in sizes] if p0 is None else _per_leg(p0, sizes, "p0")
    r_C, R_C, w_C = x[:3], alpha_C(x).T, u[3:]

    # 1-2: position and velocity closure
    p = [close_leg(leg, r_C, R_C, s) for leg, s in zip(legs, starts)]
    pd = [_leg_rates(leg, leg_kinematics(leg, q, np.zeros(n), np.zeros(n)), R_C, u)
          for leg, q, n in zip(legs, p, sizes)]

    # 3: assemble  [[M, J^T], [J, 0]] [zd; -lambda] = [f; gamma]
    N = 6 + sum(sizes)
    ms = [4 if int(leg["cut"]["m"]) == 4 else 3 for leg in legs]
    nc = sum(ms)
    M, f = np.zeros((N, N)), np.zeros(N)
    J, gam = np.zeros((nc, N)), np.zeros(nc)
    M[:6, :6], f[:6] = _platform_terms(mech, w_C, g, f_E, m_E)
    col, row = 6, 0
    for leg, q, qd, Qk, n, mk in zip(legs, p, pd, Qs, sizes, ms):
        kin0 = leg_kinematics(leg, q, qd, np.zeros(n))
        A, h = leg_mass_bias(leg, kin0, g)
        M[col:col + n, col:col + n] = A
        f[col:col + n] = Qk - h
        Jq, Ju = cut_jacobians(leg, kin0, R_C)
        J[row:row + mk, :6] = Ju
        J[row:row + mk, col:col + n] = Jq
        gam[row:row + mk] = cut_gamma(leg, kin0, R_C, w_C)
        col, row = col + n, row + mk
    K = np.block([[M, J.T], [J, np.zeros((nc, nc))]])
    try:
        sol = np.linalg.solve(K, np.concatenate([f, gam]))
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"singular KKT matrix (singular configuration?): {exc}") from exc
    zd, neg_lam = sol[:N], sol[N:]

    # 4: reactions
    udot = zd[:6]
    pdd = np.split(zd[6:], np.cumsum(sizes)[:-1])
    F_on_C, M_on_C = np.zeros((len(legs), 3)), np.zeros((len(legs), 3))
    base_force, base_moment = np.zeros(3), np.zeros(3)
    row = 0
    for k, (leg, q, qd, qdd, mk) in enumerate(zip(legs, p, pd, pdd, ms)):
        kin = leg_kinematics(leg, q, qd, qdd)
        F_on_C[k] = neg_lam[row:row + 3]
        if mk == 4:
            M_on_C[k] = neg_lam[row + 3] * _cut_vectors(leg, kin, R_C)[2]
        P = kin.o[-1] + kin.R[-1] @ _vec(leg["cut"]["l_L"])
        F01, M01 = leg_base_wrench(leg, kin, g, F_on_C[k], M_on_C[k], P)
        base_force -= F01
        base_moment -= M01
        row += mk
    return {"p": p, "pdot": pd, "pddot": [v.copy() for v in pdd], "udot": udot,
            "F_on_C": F_on_C, "M_on_C": M_on_C,
            "base_force": base_force, "base_moment": base_moment}
