"""Independent reference for a 6-DoF parallel mechanism on a MOVING base, and on a FREE base.

Mechanism dict and conventions: docs/parallel_numeric_format.md.  The building blocks
(relative leg kinematics, cut-joint residuals, Jacobians and acceleration terms, closure) are
those of tests/reference/parallel_lagrange.py; the dynamics below are written in absolute
(inertial) terms, body by body, with no reduction onto the platform coordinates.

Frames and state
----------------
Frame 0 (the base) moves: its origin O_0 has the absolute velocity ``V_O`` and acceleration
``a_O``, it turns at ``Omega`` with angular acceleration ``Omega_dot``; all four are given by
their frame-0 components (``a_O`` is the inertial derivative of the velocity of O_0, expressed
in frame 0; ``Omega_dot`` is the same whether differentiated in frame 0 or inertially).
Every other quantity is RELATIVE to frame 0 and given in frame-0 components unless said:
``x`` = pose of C, ``u = [v_C, omega_C]`` with ``v_C = d/dt`` of the frame-0 components of
``r_C`` and ``omega_C`` the angular velocity of C relative to frame 0 (frame-C components);
``udot`` the time derivatives of those components; the leg coordinates ``q`` and their
rates; gravity ``g`` (uniform, frame 0), ``fE`` (frame 0) through O_C, ``mE`` (frame C).

Absolute kinematics of a body (centre of mass G at ``r``, relative velocity ``v_r``,
relative acceleration ``a_r``, relative angular velocity ``w_r`` and acceleration ``al_r`` --
the derivatives of frame-0 components, i.e. the fixed-base kinematics of the legs)::

    V_G  = V_O + Omega x r + v_r
    A_G  = a_O + Omega_dot x r + Omega x (Omega x r) + 2 Omega x v_r + a_r
    W    = Omega + w_r
    W'   = Omega_dot + Omega x w_r + al_r             (inertial derivative, frame 0)

(``A_G``: differentiate the frame-0 components of ``V_G`` and add ``Omega x V_G``.)  The
platform C is one more body with ``r = r_C``, ``v_r = v_C``, ``a_r = vdot_C``,
``w_r = R_C omega_C``, ``al_r = R_C omegadot_C`` (``d/dt R_C = R_C skew(omega_C)`` gives no
bias), ``R_C = alpha_C^T``.

Equations (Kane / Jourdain: Newton-Euler of every body projected on its partial velocities)
-----------------------------------------------------------------------------------------
Generalised speeds ``z = [V_O, Omega, u, qd_1, ..., qd_6]``, generalised accelerations
``zd = [a_O, Omega_dot, udot, qdd_1, ...]``.  For each massive body b (leg bodies, C and, for a
free base, the base) with ``Jv_b``, ``Jw_b`` the relative Jacobians of ``v_r``, ``w_r`` with
respect to ``(u, qd)`` (``[1 0]`` and ``[0 R_C]`` for C)::

    J_b = [[1, -skew(r), Jv_b], [0, 1, Jw_b]]              (6 x (6 + N), frame 0)
    A_G = J_b[:3] zd + a_b,   W' = J_b[3:] zd + al_b,
    a_b = Omega x (Omega x r) + 2 Omega x v_r + a_r0,   al_b = Omega x w_r + al_r0

(``a_r0``, ``al_r0``: relative accelerations at ``qdd = 0``, ``udot = 0``).  Principle of
virtual power with the real velocities' partials::

    sum_b J_b^T ( [m (A_G - g) - F_b ; I_G W' + W x I_G W - M_b] ) = [F_base; M_base; 0; Q]
                                                                     - J_cut^T (-lambda)

i.e.  ``M zd + J_cut^T (-lambda) = f`` with ``M = sum_b J_b^T diag(m 1, I_G) J_b`` and
``f = sum_b J_b^T [m (g - a_b) + F_b; M_b - I_G al_b - W x I_G W] + [F_base; M_base; 0; Q]``.
``I_G`` is the inertia about G in frame-0 components; ``F_b, M_b`` are the applied loads
besides gravity (``fE`` and ``R_C mE`` on C; ``F_base`` and the moment ``M_base`` about O_0 on
the base enter the base rows directly).  The joint forces ``Q`` act between relative coordinates
(their virtual power is ``Q . dq``: nothing in the base rows), and the cut constraints are
relative (``phi(q, x) = 0``), so ``J_cut = [0, Ju, Jq]`` and ``J_cut zd = gamma`` are the
fixed-base ones.  ONE KKT system::

    [[M, J_cut^T], [J_cut, 0]] [zd; -lambda] = [f; gamma]

``-lambda`` is the force (frame 0) and the moment magnitude along ``n = e1 x e2`` that leg k
applies on C, exactly as in parallel_lagrange.

* prescribed base (``solve_moving_base``): the base rows are dropped and the known
  ``[a_O, Omega_dot]`` columns go to the right-hand side (no base body);
* free base (``solve_free_base``): the base is a body of its own, ``r = c``, no relative
  Jacobians, ``W = Omega``; the whole system is solved at once for
  ``a_O, Omega_dot, udot, qdd, lambda``.

Base wrench (what the legs apply ON the base, force and moment about O_0, frame 0): by the
Newton-Euler equations of each leg as a whole (absolute accelerations from the solution),
the wrench the base applies on body 1 through joint 1 (reaction + active force) is
``F_01 = sum m (A_G - g) + F_k``, ``M_01 = sum [r_G x m (A_G - g) + I_G W' + W x I_G W]
+ P_k x F_k + M_k`` where ``(F_k at P_k, M_k)`` is what leg k applies on C; the base gets
``-sum_k (F_01, M_01)``.  (Moments about the instantaneous position of O_0: valid for a moving
point, being the moment of the bodies' Newton-Euler forces.)

Momentum about the moving O_0 (``momentum``): ``P = sum m V_G``,
``H_O = sum r_G x m V_G + I_G W``, ``T = 1/2 sum (m |V_G|^2 + W . I_G W)``; for an inertially
fixed point coinciding with O_0 at the instant, ``dP/dt = F_ext`` and
``dH/dt = M_ext(O_0)`` (in inertial components; ``dH_O/dt = M_ext - V_O x P`` for the moving
point).

Reflected joint inertia (opt-in ``joint_inertia=True``; ``law["inertia"]`` is not in the format
doc nor in parallel_lagrange, but the generator's JointLaw has it): ``inertia qdd`` is added to
the joint's equation only and ``1/2 inertia qd^2`` to T -- a rotor spinning relative to its
carrier with no gyroscopic or transport coupling, so it does not enter the base rows, the base
wrench or the momenta.  Default off: the doc's model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .parallel_lagrange import (
    _per_leg,
    _vec,
    _mat,
    alpha_C,
    body_com_inertia,
    close_leg,
    cross,
    cut_gamma,
    cut_jacobians,
    leg_kinematics,
    point_jacobian,
    point_motion,
    skew,
)

Array = NDArray[np.float64]
Mech = Mapping[str, Any]

__all__ = ["solve_moving_base", "solve_free_base", "momentum", "potential", "base_body",
           "base_momentum"]

_EYE = np.eye(3)


# ---------------------------------------------------------------------------
# the mechanism's bodies with their relative kinematics
# ---------------------------------------------------------------------------


@dataclass
class _Body:
    """One massive body: mass, CoM ``r`` (frame 0, from O_0), inertia ``I`` about G (frame 0),
    relative Jacobians ``Jv``, ``Jw`` (3 x N over ``(u, qd)``), relative velocities and the
    relative accelerations at zero ``(udot, qdd)``, applied loads besides gravity (``F`` through
    G, ``M``; frame 0) and the leg it belongs to (-1 for C)."""

    m: float
    r: Array
    I: Array
    Jv: Array
    Jw: Array
    v: Array
    w: Array
    a0: Array
    al0: Array
    F: Array
    M: Array
    leg: int


def _abs_bias(b: _Body, Omega: Array) -> tuple[Array, Array, Array]:
    """``(W, a_b, al_b)``: absolute angular velocity and the absolute accelerations of the
    body at ``zd = 0`` (``a_O = Omega_dot = 0``, ``udot = qdd = 0``), frame 0."""
    W = Omega + b.w
    a = cross(Omega, cross(Omega, b.r)) + 2.0 * cross(Omega, b.v) + b.a0
    al = cross(Omega, b.w) + b.al0
    return W, a, al


def _full_jacobian(b: _Body) -> Array:
    """``J_b = [[1, -skew(r), Jv], [0, 1, Jw]]`` over ``z = [V_O, Omega, u, qd]``."""
    n = b.Jv.shape[1]
    J = np.zeros((6, 6 + n))
    J[:3, :3] = _EYE
    J[:3, 3:6] = -skew(b.r)
    J[3:, 3:6] = _EYE
    J[:3, 6:] = b.Jv
    J[3:, 6:] = b.Jw
    return J


@dataclass
class _State:
    """Closed legs (``p``, ``pd``), the massive bodies, cut Jacobian ``J`` and ``gamma`` over
    ``(u, qd)``, the leg sizes and cut sizes."""

    p: list[Array]
    pd: list[Array]
    bodies: list[_Body]
    J: Array
    gamma: Array
    sizes: list[int]
    ms: list[int]
    r_C: Array
    R_C: Array


def _closed_legs(mech: Mech, x: Array, u: Array, q0: Any) -> tuple[list[Array], list[Array]]:
    """Position closure by ``close_leg`` (Newton), velocity closure ``Jq qd = -Ju u``."""
    legs = mech["legs"]
    sizes = [len(leg["joints"]) for leg in legs]
    starts = [np.zeros(n) for n in sizes] if q0 is None else _per_leg(q0, sizes, "q0")
    r_C, R_C = x[:3], alpha_C(x).T
    p = [close_leg(leg, r_C, R_C, s) for leg, s in zip(legs, starts)]
    pd = []
    for leg, q, n in zip(legs, p, sizes):
        kin = leg_kinematics(leg, q, np.zeros(n), np.zeros(n))
        Jq, Ju = cut_jacobians(leg, kin, R_C)
        pd.append(np.linalg.lstsq(Jq, -Ju @ u, rcond=None)[0])
    return p, pd


def _state(mech: Mech, x: Array, u: Array, fE: Array, mE: Array, q0: Any,
           with_constraints: bool = True) -> _State:
    legs = mech["legs"]
    sizes = [len(leg["joints"]) for leg in legs]
    ms = [4 if int(leg["cut"]["m"]) == 4 else 3 for leg in legs]
    N = 6 + sum(sizes)
    r_C, R_C, w_C = x[:3], alpha_C(x).T, u[3:]
    p, pd = _closed_legs(mech, x, u, q0)

    bodies: list[_Body] = []
    # platform C: r = r_C, v_r = v_C, w_r = R_C w_C, no relative bias
    mC = float(mech["platform"]["m"])
    IC0 = R_C @ _mat(mech["platform"]["I"]) @ R_C.T
    Jv, Jw = np.zeros((3, N)), np.zeros((3, N))
    Jv[:, :3] = _EYE
    Jw[:, 3:6] = R_C
    z3 = np.zeros(3)
    bodies.append(_Body(mC, r_C.copy(), IC0, Jv, Jw, u[:3].copy(), R_C @ w_C, z3, z3,
                        fE.copy(), R_C @ mE, -1))

    J = np.zeros((sum(ms), N))
    gam = np.zeros(sum(ms))
    col, row = 6, 0
    for k, (leg, q, qd, n, mk) in enumerate(zip(legs, p, pd, sizes, ms)):
        kin0 = leg_kinematics(leg, q, qd, np.zeros(n))
        for j, body in enumerate(leg["bodies"], start=1):
            if float(body["m"]) == 0.0 and not np.any(_mat(body["I"])):
                continue
            m, d, IG = body_com_inertia(body)
            R = kin0.R[j]
            rG, vG, aG0 = point_motion(kin0, j, d)
            Jvl, Jwl = point_jacobian(kin0, j, rG)
            Jv, Jw = np.zeros((3, N)), np.zeros((3, N))
            Jv[:, col:col + n] = Jvl
            Jw[:, col:col + n] = Jwl
            bodies.append(_Body(m, rG, R @ IG @ R.T, Jv, Jw, vG, kin0.w[j].copy(), aG0,
                                kin0.al[j].copy(), z3, z3, k))
        if with_constraints:
            Jq, Ju = cut_jacobians(leg, kin0, R_C)
            J[row:row + mk, :6] = Ju
            J[row:row + mk, col:col + n] = Jq
            gam[row:row + mk] = cut_gamma(leg, kin0, R_C, w_C)
        col, row = col + n, row + mk
    return _State(p, pd, bodies, J, gam, sizes, ms, r_C, R_C)


def _joint_inertia(mech: Mech) -> Array:
    """Reflected joint inertias ``law["inertia"]`` (0 when absent), legs in order."""
    return np.array([float(law.get("inertia", 0.0)) for leg in mech["legs"]
                     for law in leg["laws"]])


def _assemble(st: _State, Omega: Array, g: Array, Qs: list[Array]) -> tuple[Array, Array]:
    """``M = sum J_b^T diag(m, I) J_b`` and ``f = sum J_b^T [m (g - a_b) + F; M - I al_b -
    W x I W] + [0; 0; 0; Q]`` over ``z = [V_O, Omega, u, qd]`` (no base body)."""
    N = 6 + sum(st.sizes)
    M, f = np.zeros((6 + N, 6 + N)), np.zeros(6 + N)
    for b in st.bodies:
        Jb = _full_jacobian(b)
        W, a, al = _abs_bias(b, Omega)
        Mb = np.zeros((6, 6))
        Mb[:3, :3] = b.m * _EYE
        Mb[3:, 3:] = b.I
        fb = np.concatenate([b.m * (g - a) + b.F, b.M - b.I @ al - cross(W, b.I @ W)])
        M += Jb.T @ Mb @ Jb
        f += Jb.T @ fb
    f[12:] += np.concatenate(Qs)
    return M, f


def _kkt(M: Array, f: Array, J: Array, gam: Array) -> tuple[Array, Array]:
    nc = J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((nc, nc))]])
    try:
        sol = np.linalg.solve(K, np.concatenate([f, gam]))
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"singular KKT matrix (singular configuration?): {exc}") from exc
    return sol[:M.shape[0]], sol[M.shape[0]:]


def _results(mech: Mech, st: _State, zd_rel: Array, neg_lam: Array, g: Array, a_O: Array,
             Omega: Array, Omega_dot: Array) -> dict[str, Any]:
    """Reactions on C from the multipliers and the base wrench by the Newton-Euler equations
    of every leg with the absolute accelerations of its bodies."""
    legs = mech["legs"]
    udot = zd_rel[:6].copy()
    qdd = [v.copy() for v in np.split(zd_rel[6:], np.cumsum(st.sizes)[:-1])]
    nL = len(legs)
    F_on_C, M_on_C = np.zeros((nL, 3)), np.zeros((nL, 3))
    F01 = np.zeros((nL, 3))
    M01 = np.zeros((nL, 3))
    row = 0
    for k, (leg, q, qd, qddk, mk) in enumerate(zip(legs, st.p, st.pd, qdd, st.ms)):
        kin = leg_kinematics(leg, q, qd, qddk)
        F_on_C[k] = neg_lam[row:row + 3]
        if mk == 4:
            cut = leg["cut"]
            e1 = kin.R[-1] @ (_mat(cut["gamma_L"]).T @ np.array([0.0, 1.0, 0.0]))
            e2 = st.R_C @ (_mat(cut["gamma_C"]).T @ np.array([0.0, 0.0, 1.0]))
            M_on_C[k] = neg_lam[row + 3] * cross(e1, e2)
        P = kin.o[-1] + kin.R[-1] @ _vec(leg["cut"]["l_L"])
        F01[k] = F_on_C[k]
        M01[k] = cross(P, F_on_C[k]) + M_on_C[k]
        row += mk
    for b in st.bodies:
        if b.leg < 0:
            continue
        a_rel = b.Jv @ zd_rel + b.a0            # relative accelerations (a0: at qdd = 0)
        al_rel = b.Jw @ zd_rel + b.al0
        W = Omega + b.w
        A = (a_O + cross(Omega_dot, b.r) + cross(Omega, cross(Omega, b.r))
             + 2.0 * cross(Omega, b.v) + a_rel)
        Wd = Omega_dot + cross(Omega, b.w) + al_rel
        fG = b.m * (A - g)
        F01[b.leg] += fG
        M01[b.leg] += cross(b.r, fG) + b.I @ Wd + cross(W, b.I @ W)
    return {"q": st.p, "qd": st.pd, "qdd": qdd,
            "p": st.p, "pdot": st.pd, "pddot": [v.copy() for v in qdd],
            "udot": udot, "lambda": -neg_lam, "F_on_C": F_on_C, "M_on_C": M_on_C,
            "base_force": -F01.sum(0), "base_moment": -M01.sum(0),
            "leg_base_force": -F01, "leg_base_moment": -M01}


def _inputs(mech: Mech, x: ArrayLike, u: ArrayLike, Q: Any, *vecs: ArrayLike):
    sizes = [len(leg["joints"]) for leg in mech["legs"]]
    return (np.asarray(x, float).reshape(6), np.asarray(u, float).reshape(6),
            _per_leg(Q, sizes, "Q"), *[_vec(v) for v in vecs])


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def solve_moving_base(mech: Mech, x: ArrayLike, u: ArrayLike, Q: Any, g: ArrayLike,
                      fE: ArrayLike, mE: ArrayLike, a_O: ArrayLike, Omega: ArrayLike,
                      Omega_dot: ArrayLike, q0: Any = None,
                      joint_inertia: bool = True) -> dict[str, Any]:
    """Forward dynamics with the base's motion PRESCRIBED (``a_O``, ``Omega``, ``Omega_dot``,
    frame-0 components; the base's velocity ``V_O`` does not enter).

    Returns ``udot`` (6: ``[dv_C/dt`` frame 0, ``domega_C/dt`` frame C], relative), ``q``,
    ``qd``, ``qdd`` (lists per leg; also as ``p``, ``pdot``, ``pddot``), ``lambda`` (the
    multipliers, legs in order, 3 or 4 each), ``F_on_C`` (6, 3) and ``M_on_C`` (6, 3): what each
    leg applies on C (frame 0), ``base_force``, ``base_moment`` (3 each): the total force and
    the moment about O_0 the legs apply ON the base (frame 0; ``leg_base_force``,
    ``leg_base_moment``: the same per leg, (6, 3)).  ``joint_inertia``: add the laws' reflected
    inertias ``law["inertia"]`` (not in the format doc; the generator's JointLaw) on the
    diagonal of the joint rows, see the module docstring."""
    x, u, Qs, g, fE, mE, a_O, Omega, Omega_dot = _inputs(mech, x, u, Q, g, fE, mE, a_O,
                                                         Omega, Omega_dot)
    st = _state(mech, x, u, fE, mE, q0)
    M, f = _assemble(st, Omega, g, Qs)
    if joint_inertia:
        M[12:, 12:] += np.diag(_joint_inertia(mech))
    rhs = f[6:] - M[6:, :6] @ np.concatenate([a_O, Omega_dot])
    zd, neg_lam = _kkt(M[6:, 6:], rhs, st.J, st.gamma)
    return _results(mech, st, zd, neg_lam, g, a_O, Omega, Omega_dot)


def base_body(base: Mapping[str, Any]) -> tuple[float, Array, Array]:
    """``(m, c, I_G)`` of the base dict ``{"m", "c" (centre of mass, frame 0, from O_0),
    "I" (about the centre of mass, frame 0)}``."""
    return float(base["m"]), _vec(base["c"]), _mat(base["I"])


def solve_free_base(mech: Mech, base: Mapping[str, Any], x: ArrayLike, u: ArrayLike, Q: Any,
                    g: ArrayLike, fE: ArrayLike, mE: ArrayLike, Omega: ArrayLike,
                    F_base: ArrayLike, M_base: ArrayLike, q0: Any = None,
                    joint_inertia: bool = True) -> dict[str, Any]:
    """Forward dynamics with the base a FREE rigid body (``base``: see ``base_body``), turning
    at ``Omega`` (frame 0), loaded by ``F_base`` and the moment ``M_base`` about O_0 (frame 0),
    by gravity ``g`` and by the legs.  One KKT system for ``a_O``, ``Omega_dot`` (frame 0),
    ``udot``, ``qdd`` and the multipliers.  Returns the keys of ``solve_moving_base`` plus
    ``a_O`` and ``Omega_dot``.  (The base's translational velocity does not enter.)
    ``joint_inertia``: as in ``solve_moving_base``."""
    x, u, Qs, g, fE, mE, Omega, F_base, M_base = _inputs(mech, x, u, Q, g, fE, mE, Omega,
                                                         F_base, M_base)
    mb, c, Ib = base_body(base)
    st = _state(mech, x, u, fE, mE, q0)
    M, f = _assemble(st, Omega, g, Qs)
    if joint_inertia:
        M[12:, 12:] += np.diag(_joint_inertia(mech))
    # the base body: J_b = [[1, -skew(c), 0], [0, 1, 0]], a_b = Omega x (Omega x c), W = Omega
    Jb = np.zeros((6, 6))
    Jb[:3, :3], Jb[:3, 3:], Jb[3:, 3:] = _EYE, -skew(c), _EYE
    Mb = np.zeros((6, 6))
    Mb[:3, :3], Mb[3:, 3:] = mb * _EYE, Ib
    fb = np.concatenate([mb * (g - cross(Omega, cross(Omega, c))), -cross(Omega, Ib @ Omega)])
    M[:6, :6] += Jb.T @ Mb @ Jb
    f[:6] += Jb.T @ fb + np.concatenate([F_base, M_base])
    Jfull = np.hstack([np.zeros((st.J.shape[0], 6)), st.J])
    zd, neg_lam = _kkt(M, f, Jfull, st.gamma)
    a_O, Omega_dot = zd[:3].copy(), zd[3:6].copy()
    out = _results(mech, st, zd[6:], neg_lam, g, a_O, Omega, Omega_dot)
    out["a_O"], out["Omega_dot"] = a_O, Omega_dot
    return out


def momentum(mech: Mech, x: ArrayLike, u: ArrayLike, V_O: ArrayLike, Omega: ArrayLike,
             q0: Any = None, base: Mapping[str, Any] | None = None,
             joint_inertia: bool = False) -> dict[str, Any]:
    """Absolute momentum of the legs' bodies and C (and of the base if ``base`` is given):
    ``P = sum m V_G`` (frame-0 components), ``H = sum r_G x m V_G + I_G W`` (about O_0, frame 0),
    ``T = sum 1/2 m |V_G|^2 + 1/2 W . I_G W``; also ``m`` (total mass), ``mr = sum m r_G``
    (frame 0) and the closed ``q``, ``qd``.  ``joint_inertia``: T also gets
    ``1/2 sum law["inertia"] qd^2``."""
    x, u = np.asarray(x, float).reshape(6), np.asarray(u, float).reshape(6)
    V_O, Omega = _vec(V_O), _vec(Omega)
    z3 = np.zeros(3)
    st = _state(mech, x, u, z3, z3, q0, with_constraints=False)
    items = [(b.m, b.r, b.I, b.v, b.w) for b in st.bodies]
    if base is not None:
        mb, c, Ib = base_body(base)
        items.append((mb, c, Ib, z3, z3))
    P, H, T, mt, mr = np.zeros(3), np.zeros(3), 0.0, 0.0, np.zeros(3)
    for m, r, I, v, w in items:
        V = V_O + cross(Omega, r) + v
        W = Omega + w
        P += m * V
        H += cross(r, m * V) + I @ W
        T += 0.5 * m * (V @ V) + 0.5 * W @ I @ W
        mt += m
        mr += m * r
    if joint_inertia:
        qd = np.concatenate(st.pd)
        T += 0.5 * float(qd @ (_joint_inertia(mech) * qd))
    return {"P": P, "H": H, "T": float(T), "m": mt, "mr": mr, "q": st.p, "qd": st.pd}


def base_momentum(base: Mapping[str, Any], V_O: ArrayLike, Omega: ArrayLike) -> dict[str, Any]:
    """The base's own ``P``, ``H`` (about O_0), ``T`` (frame 0)."""
    mb, c, Ib = base_body(base)
    V_O, Omega = _vec(V_O), _vec(Omega)
    V = V_O + cross(Omega, c)
    return {"P": mb * V, "H": cross(c, mb * V) + Ib @ Omega,
            "T": float(0.5 * mb * V @ V + 0.5 * Omega @ Ib @ Omega)}


def potential(mech: Mech, x: ArrayLike, g: ArrayLike, q0: Any = None) -> dict[str, Any]:
    """Potential energy relative to frame 0: springs of the joint laws
    (``Q = preload - sum_i k_i (q - q0)^i`` -> ``V = sum_i k_i (q - q0)^(i+1) / (i+1)
    - preload (q - q0)``) and the uniform field ``-sum m g . r_G`` (C and leg bodies, r_G from
    O_0), plus ``1/2 k_stop delta^2`` of the bump stops when a law has ``stops`` (the
    generator's JointLaw).  Dampers and drives are not potential forces.  Returns ``springs``,
    ``gravity``,
    ``total`` and the closed ``q``."""
    x, g = np.asarray(x, float).reshape(6), _vec(g)
    z3 = np.zeros(3)
    st = _state(mech, x, np.zeros(6), z3, z3, q0, with_constraints=False)
    Vs = 0.0
    for leg, q in zip(mech["legs"], st.p):
        for law, qj in zip(leg["laws"], q):
            e = qj - float(law["q0"])
            Vs += sum(float(k) * e ** (i + 2) / (i + 2) for i, k in enumerate(law["k"]))
            Vs -= float(law["preload"]) * e
            if law.get("stops") is not None:             # bump stops: 1/2 k_stop delta^2
                lo, hi = (float(v) for v in law["stops"])
                dep = max(0.0, qj - hi) ** 2 + max(0.0, lo - qj) ** 2
                Vs += 0.5 * float(law.get("k_stop", 0.0)) * dep
    Vg = -sum(b.m * (g @ b.r) for b in st.bodies)
    return {"springs": float(Vs), "gravity": float(Vg), "total": float(Vs + Vg), "q": st.p}
