"""Validation against paper 002 (Voinov, Telegin, Timofeev 2016, "Vector and scalar equations of
Stewart platform dynamics"; docs/algorithms.md section 4): a Stewart platform whose six legs are
R-R-P suspensions (base body about the vertical, guide about a perpendicular axis, rod sliding
in the guide) with ball joints to the platform; gravity g = -g y.

Mechanism: generator/mechanisms/stewart_rrp_002.toml (legs as UPS legs, joint frame y vertical).
Coordinate map (checked below on every state), phi_k = the angle of leg k's `frame` about y:

    q_o = u1 + phi_k          (base body angle about the vertical y_r)
    q_n = u2 - pi/2           (guide angle about z_n, from the vertical; branch sin q_n < 0)
    L   = stroke + length0,   q_s = stroke + d_s   (q_s: joint centre -> rod centre of mass)

The paper's guide frame is the cylinder frame turned -90 deg about z (y_n = our x = the leg
axis, z_n = our z), so M_o, M_n, F_s are the generalised forces of u1, u2 and stroke. (The
other branch q_o + pi, -q_n gives the same F_s, M_o and -M_n, and leaves (7)-(8) unchanged.)
Paper inertias: J_n^x = Jn_tr + m_n a_n^2 (about the joint centre O_n), J_n^y = Jn_ax,
J_s^x = Js_x (= J_s^y), J_s^z = Js_z (rod axis), J_o^z = J_o.

Tests:
1. eqs. (20)-(22): F_s, M_n, M_o for the leg motion of random platform motions equal
   A_k qdd_k - b_k of the `leg_dynamics` kernel with F = 0 (the joint forces that produce the
   motion of the leg alone, no cut reaction); leg q, qd, qdd computed here from the platform
   motion, independently of the kernels (and compared with leg_rates / H udot + h).
   Also: eq. (5) read literally (J_y = J_n^y + J_s^y, J_s^y a transverse moment of the rod)
   disagrees; (20)-(22) use J_s^z (the rod's axial moment), which is right.
2. eqs. (7)-(14): the six rod driving forces equal the `drive_forces` kernel; and with those
   forces the independent Lagrange reference (tests/reference/parallel_lagrange.py) gives back
   the prescribed platform acceleration.
   Eqs. (23)-(26), (28)-(29): with those forces the `step` kernel gives the platform
   acceleration back, each leg's force on C is -F_ri (23), and the loads on the fixed body are
   those of (24)-(26), (28)-(29).
3. Special cases (the generator builds six legs only: these go through the paper's own general
   equations and the Lagrange reference, which takes any number of legs; each is a 3-D
   mechanism of the same UPS legs, held in the vertical plane x-y by mirror symmetry):
   a. N = 3 in a vertical plane, eqs. (32)-(34) (the aside "x_r . x_ni = -c_i" before (32)
      is a misprint: (18) gives +c_i, which (32) uses; the "-c_i" reading is shown wrong);
   b. N = 2 with a point-mass platform, eqs. (35)-(36);
   c. the horizontal case q_n1 = -90 deg, q_n2 = 90 deg: F_1 - F_2 = (m_p + 2 m_s) x_p''.
Tolerances 1e-10 relative (scales: sums of the magnitudes of the terms of each formula).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.generator.families.parallel.platform import numeric_platform
from mechgen.generator.frontend import load as load_spec
from tests.reference import parallel_lagrange as lag

RTOL = 1e-10
G = 9.81
GVEC = np.array([0.0, -G, 0.0])
SPEC = Path(__file__).resolve().parent.parent / "generator" / "mechanisms" / "stewart_rrp_002.toml"
ERRORS: dict[str, float] = {}


def record(name: str, err: float) -> float:
    ERRORS[name] = max(ERRORS.get(name, 0.0), float(err))
    return float(err)


def check(name: str, a, b, scale, rtol: float = RTOL) -> None:
    """|a - b| <= rtol * scale, elementwise (scale: array or number, floored at 1e-300)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = np.maximum(np.broadcast_to(np.asarray(scale, float), a.shape), 1e-300)
    err = float(np.max(np.abs(a - b) / scale))
    record(name, err)
    assert err <= rtol, f"{name}: relative error {err:.3e} > {rtol:.0e}\n{a}\n{b}"


# ---------------------------------------------------------------------------
# the paper's formulas
# ---------------------------------------------------------------------------


def paper_inertia(prm: dict) -> dict:
    """The paper's J_n^x (about O_n), J_n^y, J_s^x, J_s^z, J_o^z from the spec parameters."""
    return {"Jnx": prm["Jn_tr"] + prm["m_n"] * prm["a_n"] ** 2, "Jny": prm["Jn_ax"],
            "Jsx": prm["Js_x"], "Jsz": prm["Js_z"], "Jo": prm["J_o"],
            "m_n": prm["m_n"], "a_n": prm["a_n"], "m_s": prm["m_s"]}


def leg_coordinates(d, dd, ddd, planar: bool = False) -> dict:
    """q_o, q_n, L and their first and second derivatives from the leg vector d = O_oi O_ri and
    its derivatives (frame 0), by the paper's parametrisation (18)/(31):
    y_n = (-c_o s_n, c_n, s_o s_n). Branch sin q_n < 0, or q_o = 0 (planar examples, d_z = 0)."""
    L = float(np.linalg.norm(d))
    e = d / L
    if planar:
        co, so, sn, cn = 1.0, 0.0, -e[0], e[1]
    else:
        cn = e[1]
        sn = -np.sqrt(max(0.0, 1.0 - cn * cn))
        co, so = -e[0] / sn, e[2] / sn
    e_o = np.array([so * sn, 0.0, co * sn])            # d e / d q_o
    e_n = np.array([-co * cn, -sn, so * cn])           # d e / d q_n
    e_oo = np.array([co * sn, 0.0, -so * sn])
    e_on = np.array([so * cn, 0.0, co * cn])
    e_nn = np.array([co * sn, -cn, -so * sn])
    Ld = e @ dd
    qod = e_o @ dd / (L * sn * sn)
    qnd = e_n @ dd / L
    r = (ddd - 2.0 * Ld * (e_o * qod + e_n * qnd)
         - L * (e_oo * qod ** 2 + 2.0 * e_on * qod * qnd + e_nn * qnd ** 2))
    qodd, qndd = e_o @ r / (L * sn * sn), e_n @ r / L
    yn_d = e_o * qod + e_n * qnd                        # d y_n / dt, d^2 y_n / dt^2
    yn_dd = e_o * qodd + e_n * qndd + e_oo * qod ** 2 + 2 * e_on * qod * qnd + e_nn * qnd ** 2
    return {"qo": np.arctan2(so, co), "qn": np.arctan2(sn, cn), "L": L,
            "y_n": e, "yn_d": yn_d, "yn_dd": yn_dd,
            "qod": qod, "qnd": qnd, "Ld": Ld,
            "qodd": qodd, "qndd": qndd, "Ldd": e @ r,
            "so": so, "co": co, "sn": sn, "cn": cn}


def paper_leg_forces(k: dict, qs: float, J: dict, Jy_literal: bool = False) -> tuple:
    """Eqs. (20)-(22): (F_s, M_n, M_o) and the scales (sums of |terms|).

    Jy_literal: use eq. (5) as printed, J_y = J_n^y + J_s^y with J_s^y = J_s^x (the rod's
    moment about y_s = -z_n), instead of (20)-(22)'s J = J_q - J_n^y - J_s^z."""
    s, c = k["sn"], k["cn"]
    qod, qnd, qsd = k["qod"], k["qnd"], k["Ld"]
    qodd, qndd, qsdd = k["qodd"], k["qndd"], k["Ldd"]
    m_s = J["m_s"]
    Jq = J["Jnx"] + J["Jsx"] + m_s * qs * qs
    Jb = Jq - J["Jny"] - (J["Jsx"] if Jy_literal else J["Jsz"])
    Gi = -G * (J["m_n"] * J["a_n"] + m_s * qs) * s
    t_s = [m_s * qsdd, -m_s * qs * s * s * qod ** 2, -m_s * qs * qnd ** 2, m_s * G * c]
    t_n = [Jq * qndd, -Jb * s * c * qod ** 2, 2 * m_s * qs * qnd * qsd, Gi]
    t_o = [(J["Jo"] + Jq - Jb * c * c) * qodd, 2 * s * m_s * qs * s * qsd * qod,
           2 * s * Jb * c * qnd * qod]
    vals = np.array([sum(t_s), sum(t_n), sum(t_o)])
    scales = np.array([sum(map(abs, t)) for t in (t_s, t_n, t_o)])
    return vals, scales


def paper_drive_system(x, udot, u, legs: list, m_p: float, I_p: np.ndarray):
    """Eqs. (7)-(14) with the scalar forms (9)-(14): the 6 x N matrix (columns: legs) and the
    right-hand side of  sum (F_i - F_is)(...) = ...  moved to  sum F_i (...) = rhs.
    Each leg: dict with base (A, B, D), coordinates (leg_coordinates) and F_is, M_in, M_io."""
    xp, yp, zp = x[:3]
    R = lag.alpha_C(x).T                               # frame C -> frame 0
    w, wd = u[3:], udot[3:]
    dH = R @ (I_p @ wd + np.cross(w, I_p @ w))        # (I_p . omega_p)'_t, frame 0
    N = len(legs)
    A = np.zeros((6, N))
    rhs = np.concatenate([m_p * (udot[:3] - GVEC), dH])
    scale = np.concatenate([m_p * (np.abs(udot[:3]) + G), np.abs(dH)])
    Mxyz = np.zeros(3)
    for i, lg in enumerate(legs):
        k, L = lg["k"], lg["k"]["L"]
        so, co, s, c = k["so"], k["co"], k["sn"], k["cn"]
        xx, xz = co * c, -so * c                         # (9)
        yx, yy, yz = -co * s, c, so * s
        xi, yi, zi = lg["base"][0] - xp, lg["base"][1] - yp, lg["base"][2] - zp   # (10)
        y3 = np.array([yi * yz - zi * c, zi * yx - xi * yz, xi * c - yi * yx])     # (11)
        Mn, Mo, Fis = lg["M_in"], lg["M_io"], lg["F_is"]
        Mi = np.array([
            Mn * (yi * xz - zi * s - L * so) - Mo * (yi * co + L * xx) / s,          # (12)
            Mn * (zi * xx - xi * xz) - Mo * (zi * so - xi * co + L * s) / s,         # (13)
            Mn * (xi * s - yi * xx - L * co) - Mo * (L * xz - yi * so) / s]) / L     # (14)
        Mxyz += Mi
        y_n = np.array([yx, yy, yz])
        x_n, z_n = np.array([xx, s, xz]), np.array([so, 0.0, co])
        A[:3, i], A[3:, i] = y_n, y3
        f7 = -(Mn * x_n - Mo * z_n / s) / L + Fis * y_n   # (7), moved to the right
        rhs[:3] += f7
        rhs[3:] += Fis * y3
        scale[:3] += np.abs(f7) + abs(Fis)
        arm = abs(xi) + abs(yi) + abs(zi) + L            # lengths in the moment rows
        scale[3:] += (abs(Mn) + abs(Mo / s)) * arm / L + abs(Fis) * arm
    rhs[3:] -= Mxyz                                      # (8): ... - M_x x_r - M_y y_r - M_z z_r
    return A, rhs, scale


# ---------------------------------------------------------------------------
# the generated mechanism and random states
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mech():
    m = runtime.load("stewart_rrp_002", "c")
    pf = load_spec(SPEC)
    return m, pf


def random_params(m, rng) -> dict:
    prm = dict(m.manifest["parameter_defaults"])
    prm.update(m_p=rng.uniform(20, 80), Ip_xx=rng.uniform(2, 6), Ip_yy=rng.uniform(3, 8),
               Ip_zz=rng.uniform(2, 6), Ip_xy=rng.uniform(-0.2, 0.2),
               Ip_xz=rng.uniform(-0.2, 0.2), Ip_yz=rng.uniform(-0.2, 0.2),
               m_o=rng.uniform(1, 3), J_o=rng.uniform(0.01, 0.05), m_n=rng.uniform(3, 9),
               a_n=rng.uniform(0.15, 0.45), Jn_ax=rng.uniform(0.005, 0.02),
               Jn_tr=rng.uniform(0.1, 0.3), m_s=rng.uniform(1, 5), d_s=rng.uniform(0.3, 0.9),
               Js_x=rng.uniform(0.03, 0.12), Js_z=rng.uniform(0.001, 0.01))
    return prm


def random_state(m, rng):
    home = np.array(m.manifest["home"], float)
    x = home + rng.uniform(-1, 1, 6) * np.array([0.1, 0.1, 0.1, 0.25, 0.15, 0.15])
    u = np.concatenate([rng.uniform(-0.5, 0.5, 3), rng.uniform(-1.0, 1.0, 3)])
    udot = np.concatenate([rng.uniform(-2, 2, 3), rng.uniform(-3, 3, 3)])
    return x, u, udot


def leg_motions(num: dict, x, u, udot) -> list[dict]:
    """Leg vector d = s - base and its derivatives from the platform motion (frame 0), then the
    paper's coordinates; phi_k, length0 from the numeric mechanism."""
    R = lag.alpha_C(x).T
    w, wd = u[3:], udot[3:]
    out = []
    for leg in num["legs"]:
        lC = leg["cut"]["l_C"]
        base = leg["joints"][0]["l"]
        d = x[:3] + R @ lC - base
        dd = u[:3] + R @ np.cross(w, lC)
        ddd = udot[:3] + R @ (np.cross(wd, lC) + np.cross(w, np.cross(w, lC)))
        G0 = leg["joints"][0]["gamma"]
        phi = np.arctan2(-G0[0, 2], G0[0, 0])
        assert np.allclose(G0, lag.elementary(1, phi), atol=1e-15), "frame is a turn about y"
        out.append({"k": leg_coordinates(d, dd, ddd), "base": base, "phi": phi,
                    "length0": leg["cut"]["l_L"][0], "d_s": leg["bodies"][2]["d"][0]})
    return out


def wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


# ---------------------------------------------------------------------------
# 1. eqs. (20)-(22) against leg_dynamics
# ---------------------------------------------------------------------------


def test_leg_forces_eq20_22(mech):
    m, pf = mech
    rng = np.random.default_rng(20)
    lit_err = []
    for trial in range(12):
        prm = random_params(m, rng)
        p = m.params(prm)
        num = numeric_platform(pf, prm)
        J = paper_inertia(prm)
        x, u, udot = random_state(m, rng)
        legs = leg_motions(num, x, u, udot)
        q, qd = m.leg_rates(x, u, p)
        H = m.velocity_constraints(x, p)
        h = m.acceleration_terms(x, u, p)
        qdd = H @ udot + h
        *As, b = m.leg_dynamics(x, u, np.zeros(6), GVEC, p)
        for kk, (lg, A_k) in enumerate(zip(legs, As)):
            k, sl = lg["k"], slice(3 * kk, 3 * kk + 3)
            # coordinate map
            mine = np.array([k["qo"] - lg["phi"], k["qn"] + np.pi / 2, k["L"] - lg["length0"]])
            check("map q (rad, m)", wrap(q[sl] - mine), 0.0, 1.0)
            check("map qd", qd[sl], [k["qod"], k["qnd"], k["Ld"]],
                  1.0 + np.abs(qd[sl]).max())
            check("map qdd", qdd[sl], [k["qodd"], k["qndd"], k["Ldd"]],
                  1.0 + np.abs(qdd[sl]).max())
            # forces: ours = A qdd - b at F = 0 (no law on any joint), leg motion from the paper
            qdd_p = np.array([k["qodd"], k["qndd"], k["Ldd"]])
            ours = A_k @ qdd_p - b[sl]                  # [tau_u1, tau_u2, f_stroke]
            qs = k["L"] - lg["length0"] + lg["d_s"]
            vals, scales = paper_leg_forces(k, qs, J)
            paper = np.array([vals[2], vals[1], vals[0]])    # [M_o, M_n, F_s]
            check("eq 20-22 vs leg_dynamics", ours, paper, scales[::-1])
            lit, _ = paper_leg_forces(k, qs, J, Jy_literal=True)
            lit_err.append(np.max(np.abs(np.array([lit[2], lit[1], lit[0]]) - ours)
                                  / scales[::-1]))
    # eq. (5) as printed (J_y = J_n^y + J_s^y) is not what the dynamics gives
    record("eq 5 literal J_y (J_s^y) vs leg_dynamics", max(lit_err))
    assert max(lit_err) > 1e-3
    print({k: f"{v:.2e}" for k, v in ERRORS.items()})


# ---------------------------------------------------------------------------
# 2. eqs. (7)-(14) against drive_forces (and the Lagrange reference)
# ---------------------------------------------------------------------------


def _paper_legs(legs: list, J: dict) -> None:
    for lg in legs:
        qs = lg["k"]["L"] - lg["length0"] + lg["d_s"]
        (Fs, Mn, Mo), _ = paper_leg_forces(lg["k"], qs, J)
        lg.update(F_is=Fs, M_in=Mn, M_io=Mo)


def test_drive_forces_eq7_8(mech):
    m, pf = mech
    rng = np.random.default_rng(78)
    for trial in range(12):
        prm = random_params(m, rng)
        p = m.params(prm)
        num = numeric_platform(pf, prm)
        J = paper_inertia(prm)
        x, u, udot = random_state(m, rng)
        legs = leg_motions(num, x, u, udot)
        _paper_legs(legs, J)
        I_p = num["platform"]["I"]
        A, rhs, scale = paper_drive_system(x, udot, u, legs, prm["m_p"], I_p)
        F_paper = np.linalg.solve(A, rhs)
        F_kernel = m.drive_forces(x, u, udot, np.zeros(3), np.zeros(3), GVEC, p)
        # the error of a solve is bounded by cond * rounding of the right-hand side
        scale_F = np.abs(np.linalg.inv(A)) @ scale
        check("eq 7-8 vs drive_forces", F_kernel, F_paper, scale_F)
        if trial < 4:   # third opinion: forward dynamics with these forces
            Q = [np.array([0.0, 0.0, F]) for F in F_paper]
            q0 = m.inverse_kinematics(x, p).reshape(6, 3)
            res = lag.solve(num, x, u, Q, GVEC, np.zeros(3), np.zeros(3), p0=list(q0))
            check("eq 7-8 forces -> Lagrange udot", res["udot"], udot, 1.0 + np.abs(udot).max())
    print({k: f"{v:.2e}" for k, v in ERRORS.items()})


def test_joint_reactions_eq23_29(mech):
    """Eqs. (23)-(26), (28)-(29) against the `step` kernel driven by the forces of (7)-(8):
    the force each leg applies on C is -F_ri (23), and the force and moment (about O_0) the
    legs apply on the fixed body are -sum F_oi and -sum (M_oi + O_0 O_oi x F_oi), with F_oi
    from (24)-(26) and M_oi from (28)-(29) (J_y = J_n^y + J_s^z, the yoke's centre of mass on
    its axis, which is a principal axis, as in the spec). (27), the moment on the rod, is
    internal to a leg: no kernel output sees it."""
    m, pf = mech
    rng = np.random.default_rng(2329)
    gy = np.array([0.0, 1.0, 0.0])
    for trial in range(8):
        prm = random_params(m, rng)
        p = m.params(prm)
        num = numeric_platform(pf, prm)
        J = paper_inertia(prm)
        x, u, udot = random_state(m, rng)
        legs = leg_motions(num, x, u, udot)
        _paper_legs(legs, J)
        A, rhs, _ = paper_drive_system(x, udot, u, legs, prm["m_p"], num["platform"]["I"])
        F = np.linalg.solve(A, rhs)
        out = dict(zip([o[0] for o in m.kernels["step"].outputs],
                       m.step(x, u, F, np.zeros(3), np.zeros(3), GVEC, p)))
        check("step udot with the eq 7-8 forces", out["xdot"][6:], udot, 1.0 + np.abs(udot).max())
        f_base, m_base = np.zeros(3), np.zeros(3)
        f_scale = m_scale = 0.0
        for i, lg in enumerate(legs):
            k, L = lg["k"], lg["k"]["L"]
            so, co, sn, cn = k["so"], k["co"], k["sn"], k["cn"]
            x_n = np.array([co * cn, sn, -so * cn])
            y_n, z_n = k["y_n"], np.array([so, 0.0, co])
            Mn, Mo, Fis = lg["M_in"], lg["M_io"], lg["F_is"]
            F_r = -Mn * x_n / L + (Fis - F[i]) * y_n + Mo * z_n / (sn * L)          # (23)
            check("eq 23: -F_ri = force of leg on C", out["F_on_C"][i], -F_r,
                  abs(Mn / L) + abs(Fis) + abs(F[i]) + abs(Mo / (sn * L)))
            qs, qsd, qsdd = L - lg["length0"] + lg["d_s"], k["Ld"], k["Ldd"]
            m_s, m_q = J["m_s"], J["m_n"] * J["a_n"] + J["m_s"] * qs
            acc_q = (m_s * qsdd * y_n + 2 * m_s * qsd * k["yn_d"] + m_q * k["yn_dd"])  # (m_q y_n)''
            F_n = (J["m_n"] + m_s) * G * gy + acc_q - F_r                             # (25)
            F_o = F_n + prm["m_o"] * G * gy                                           # (26)
            # (28): H = J_q s q_o' x_n + J_y c q_o' y_n + J_q q_n' z_n, about O_n
            Jq = J["Jnx"] + J["Jsx"] + m_s * qs * qs
            Jy = J["Jny"] + J["Jsz"]
            qod, qnd, qodd, qndd = k["qod"], k["qnd"], k["qodd"], k["qndd"]
            Hn = np.array([Jq * sn * qod, Jy * cn * qod, Jq * qnd])
            Hn_d = np.array([2 * m_s * qs * qsd * sn * qod + Jq * cn * qnd * qod + Jq * sn * qodd,
                             -Jy * sn * qnd * qod + Jy * cn * qodd,
                             2 * m_s * qs * qsd * qnd + Jq * qndd])
            w_n = np.array([sn * qod, cn * qod, qnd])
            dH = np.column_stack([x_n, y_n, z_n]) @ (Hn_d + np.cross(w_n, Hn))
            Gi = -G * m_q * sn
            M_n = dH - Mo * x_n / sn + (Gi - Mn) * z_n                                # (28)
            M_o = J["Jo"] * qodd * gy + M_n                                           # (29)
            f_base -= F_o
            m_base -= M_o + np.cross(lg["base"], F_o)
            f_scale += np.abs(F_o).sum() + np.abs(F_r).sum() + np.abs(acc_q).sum()
            m_scale += np.abs(M_o).sum() + np.abs(dH).sum() + abs(Mo / sn) + abs(Mn) + abs(Gi) \
                + np.linalg.norm(lg["base"]) * np.abs(F_o).sum()
        check("eq 24-26: force on the fixed body", out["base_force"], f_base, f_scale)
        check("eq 28-29: moment on the fixed body", out["base_moment"], m_base, m_scale)
    print({k: f"{v:.2e}" for k, v in ERRORS.items()})


# ---------------------------------------------------------------------------
# 3. special cases: small mechanisms for the Lagrange reference
# ---------------------------------------------------------------------------


def _body(m: float, d, I_G) -> dict:
    d = np.asarray(d, float)
    return {"m": m, "d": d, "I": np.asarray(I_G, float) + m * ((d @ d) * np.eye(3)
                                                              - np.outer(d, d))}


def ups_leg(base, gamma, l_C, length0: float, prm: dict) -> dict:
    """A UPS leg of the numeric format with the bodies of stewart_rrp_002.toml."""
    z3 = np.zeros(3)
    return {
        "name": "leg", "type": "UPS",
        "joints": [{"name": "u1", "kind": "R", "axis": 1, "l": np.asarray(base, float),
                    "gamma": gamma},
                   {"name": "u2", "kind": "R", "axis": 2, "l": z3, "gamma": np.eye(3)},
                   {"name": "stroke", "kind": "P", "axis": 0, "l": z3, "gamma": np.eye(3)}],
        "bodies": [_body(prm["m_o"], z3, np.diag([0.015, prm["J_o"], 0.015])),
                   _body(prm["m_n"], [prm["a_n"], 0, 0],
                         np.diag([prm["Jn_ax"], prm["Jn_tr"], prm["Jn_tr"]])),
                   _body(prm["m_s"], [prm["d_s"], 0, 0],
                         np.diag([prm["Js_z"], prm["Js_x"], prm["Js_x"]]))],
        "cut": {"m": 3, "l_L": np.array([length0, 0.0, 0.0]), "gamma_L": np.eye(3),
                "l_C": np.asarray(l_C, float), "gamma_C": np.eye(3)},
        "laws": [{"k": [], "c": [], "q0": 0.0, "preload": 0.0}] * 3, "drive": 2}


PLANE_PRM = {"m_o": 1.5, "J_o": 0.03, "m_n": 5.0, "a_n": 0.25, "Jn_ax": 0.01, "Jn_tr": 0.15,
             "m_s": 2.5, "d_s": 0.4, "Js_x": 0.06, "Js_z": 0.004}
LENGTH0 = 0.75
A_BASE = 1.0
GAMMA_PLUS, GAMMA_MINUS = np.eye(3), lag.elementary(1, np.pi)   # legs towards +x / -x


def planar_legs(mech_legs: list, x, u, udot) -> list[dict]:
    """Paper coordinates with q_o = 0 (the planar examples; q_n carries the sign)."""
    R = lag.alpha_C(x).T
    w, wd = u[3:], udot[3:]
    out = []
    for leg in mech_legs:
        lC, base = leg["cut"]["l_C"], leg["joints"][0]["l"]
        d = x[:3] + R @ lC - base
        dd = u[:3] + R @ np.cross(w, lC)
        ddd = udot[:3] + R @ (np.cross(wd, lC) + np.cross(w, np.cross(w, lC)))
        assert abs(d[2]) < 1e-14 and abs(dd[2]) < 1e-14 and abs(ddd[2]) < 1e-14
        out.append({"k": leg_coordinates(d, dd, ddd, planar=True), "base": base,
                    "length0": LENGTH0, "d_s": PLANE_PRM["d_s"]})
    return out


def p0_of(mech_legs, legs):
    """Leg coordinates of the reference (Newton start, exact): U angles of the leg direction."""
    out = []
    for leg, lg in zip(mech_legs, legs):
        k = lg["k"]
        e = leg["joints"][0]["gamma"] @ np.array([-k["sn"], k["cn"], 0.0])
        out.append(np.array([np.arctan2(-e[2], e[0]), np.arctan2(e[1], np.hypot(e[0], e[2])),
                             k["L"] - LENGTH0]))
    return out


def ref_leg_accel(leg, pdd):
    """(q_n'', q_s'') from the reference's (u1'', u2'', stroke''): q_n = +-(u2 - pi/2)."""
    sgn = 1.0 if leg["joints"][0]["gamma"][0, 0] > 0 else -1.0
    return sgn * pdd[1], pdd[2]


def test_example1_three_legs_vertical_plane():
    """Eqs. (32)-(34), N = 3, B_i = D_i = 0, q_oi = 0, O_r1 = O_r2, A_1 = 0, A_2 = A_3 = A.

    Proves: (34) are the closure equations of that geometry in the paper's sign conventions;
    (32) (with (33)) is exactly the x, y and z-moment rows of the general (7)-(8) (the other
    three rows vanish); and the forces (32) gives make the independent 3-D Lagrange model
    (3 UPS legs with massive base bodies, ball joints, free out-of-plane) move the platform
    with the prescribed in-plane acceleration (out-of-plane accelerations and q_o'' vanish by
    mirror symmetry, so the in-plane dynamics is the paper's planar one)."""
    rng = np.random.default_rng(32)
    J = paper_inertia(PLANE_PRM)
    b = 0.3
    m_p, Jz = 8.0, 0.4
    I_p = np.diag([0.02, 0.35, Jz])     # a bar along x_C; z = the plane's normal
    mech_legs = [ups_leg([0, 0, 0], GAMMA_PLUS, [-b, 0, 0], LENGTH0, PLANE_PRM),
                 ups_leg([A_BASE, 0, 0], GAMMA_MINUS, [-b, 0, 0], LENGTH0, PLANE_PRM),
                 ups_leg([A_BASE, 0, 0], GAMMA_MINUS, [b, 0, 0], LENGTH0, PLANE_PRM)]
    num = {"name": "paper002_ex1", "platform": {"m": m_p, "I": I_p}, "legs": mech_legs}
    for trial in range(10):
        xp, yp = 0.5 + rng.uniform(-0.05, 0.05), 0.8 + rng.uniform(-0.05, 0.05)
        al = 0.1 + rng.uniform(-0.1, 0.1)
        xd, yd, ald = rng.uniform(-0.5, 0.5, 3)
        xdd, ydd, aldd = rng.uniform(-2, 2, 3)
        x = np.array([xp, yp, 0, 0, al, 0])       # psi_z = alpha (rotation about z_r)
        u = np.array([xd, yd, 0, 0, 0, ald])
        udot = np.array([xdd, ydd, 0, 0, 0, aldd])
        legs = planar_legs(mech_legs, x, u, udot)
        s = np.array([lg["k"]["sn"] for lg in legs])
        c = np.array([lg["k"]["cn"] for lg in legs])
        L = np.array([lg["k"]["L"] for lg in legs])
        ca, sa = np.cos(al), np.sin(al)
        # (34)
        res34 = np.array([s[0] * L[0] + xp - b * ca, s[1] * L[1] - A_BASE + xp - b * ca,
                          -s[2] * L[2] + A_BASE - xp - b * ca,
                          yp - c[0] * L[0] - b * sa, yp - c[1] * L[1] - b * sa,
                          c[2] * L[2] - yp - b * sa])
        check("eq 34 closure", res34, 0.0, 1.0)
        # (33): F_is, M_in with q_o' = 0
        Fis, Min, sc = np.zeros(3), np.zeros(3), np.zeros(3)
        for i, lg in enumerate(legs):
            k = lg["k"]
            qs = k["L"] - LENGTH0 + PLANE_PRM["d_s"]
            Jq = J["Jnx"] + J["Jsx"] + J["m_s"] * qs * qs
            Gi = -G * (J["m_n"] * J["a_n"] + J["m_s"] * qs) * k["sn"]
            Fis[i] = J["m_s"] * (k["Ldd"] - qs * k["qnd"] ** 2 + G * k["cn"])
            Min[i] = Jq * k["qndd"] + 2 * J["m_s"] * qs * k["qnd"] * k["Ld"] + Gi
            (F20, M21, M22), _ = paper_leg_forces(k, qs, J)
            check("eq 33 = eq 20-21 at q_o = 0", [Fis[i], Min[i], 0.0], [F20, M21, M22],
                  1.0 + abs(F20) + abs(M21))
            lg.update(F_is=Fis[i], M_in=Min[i], M_io=M22)
            sc[i] = abs(Fis[i]) + abs(Min[i])
        # (32)
        Abase = np.array([0.0, A_BASE, A_BASE])
        yz = (Abase - xp) * c - yp * s
        Mz = np.sum(Min * ((Abase - xp) * s + yp * c - L) / L)
        M32 = np.array([s, c, yz])
        r32 = np.array([np.sum(s * Fis + Min * c / L) - m_p * xdd,
                        m_p * (ydd + G) + np.sum(c * Fis - Min * s / L),
                        Jz * aldd + np.sum(yz * Fis) - Mz])
        F32 = np.linalg.solve(M32, r32)
        # the text before (32) says x_r . x_ni = -c_i; (18) gives +c_i (q_o = 0), and (32) as
        # printed uses +c_i. The "-c_i" reading of the first row gives other forces:
        r_alt = r32 - np.array([2 * np.sum(Min * c / L), 0.0, 0.0])
        F_alt = np.linalg.solve(M32, r_alt)
        # general (7)-(8) with N = 3: same forces, other rows 0 = 0
        A78, rhs78, scale78 = paper_drive_system(x, udot, u, legs, m_p, I_p)
        F78 = np.linalg.lstsq(A78, rhs78, rcond=None)[0]
        r_terms = np.array([np.sum(np.abs(s * Fis) + np.abs(Min * c / L)) + m_p * abs(xdd),
                            m_p * (abs(ydd) + G) + np.sum(np.abs(c * Fis) + np.abs(Min * s / L)),
                            Jz * abs(aldd) + np.sum(np.abs(yz * Fis))
                            + np.sum(np.abs(Min) * (np.abs((Abase - xp) * s) + np.abs(yp * c)
                                                    + L) / L)])
        Fscale = np.abs(np.linalg.inv(M32)) @ (r_terms + np.abs(M32) @ np.abs(F32))
        check("eq 32 vs general eq 7-8 (N=3)", F32, F78, Fscale)
        check("eq 7-8 residual (N=3)", A78 @ F32, rhs78, scale78 + np.abs(A78) @ np.abs(F32))
        # Lagrange reference: forward dynamics with F on the strokes
        Q = [np.array([0.0, 0.0, F]) for F in F32]
        ref = lag.solve(num, x, u, Q, GVEC, np.zeros(3), np.zeros(3),
                        p0=p0_of(mech_legs, legs))
        check("eq 32 forces -> Lagrange udot", ref["udot"], udot, 1.0 + np.abs(udot).max())
        alt = lag.solve(num, x, u, [np.array([0.0, 0.0, F]) for F in F_alt], GVEC, np.zeros(3),
                        np.zeros(3), p0=p0_of(mech_legs, legs))
        err_alt = np.abs(alt["udot"] - udot).max() / (1.0 + np.abs(udot).max())
        record("Ex1 '-c_i' reading of (32) row 1 -> Lagrange udot (must differ)", err_alt)
        assert err_alt > 1e-4
        for leg, lg, pdd in zip(mech_legs, legs, ref["pddot"]):
            qndd, qsdd = ref_leg_accel(leg, pdd)
            check("Ex1 leg accelerations (q_o'', q_n'', q_s'')", [pdd[0], qndd, qsdd],
                  [0.0, lg["k"]["qndd"], lg["k"]["Ldd"]], 1.0 + np.abs(pdd).max())
    print({k: f"{v:.2e}" for k, v in ERRORS.items()})


def _two_leg_mech(m_p: float, eps: float) -> dict:
    """Example 2: two suspensions joined at the point platform (l_C = 0). The format's
    platform is a rigid body: it gets the isotropic inertia eps * 1; with l_C = 0 no leg
    applies a moment on it, so omega' = 0 and its translation is exactly the point mass's."""
    legs = [ups_leg([0, 0, 0], GAMMA_PLUS, [0, 0, 0], LENGTH0, PLANE_PRM),
            ups_leg([A_BASE, 0, 0], GAMMA_MINUS, [0, 0, 0], LENGTH0, PLANE_PRM)]
    return {"name": "paper002_ex2", "platform": {"m": m_p, "I": eps * np.eye(3)}, "legs": legs}


def _eq35(legs, m_p, xdd, ydd):
    J = paper_inertia(PLANE_PRM)
    s = np.array([lg["k"]["sn"] for lg in legs])
    c = np.array([lg["k"]["cn"] for lg in legs])
    L = np.array([lg["k"]["L"] for lg in legs])
    Fis, Min = np.zeros(2), np.zeros(2)
    for i, lg in enumerate(legs):
        k = lg["k"]
        qs = k["L"] - LENGTH0 + PLANE_PRM["d_s"]
        Jq = J["Jnx"] + J["Jsx"] + J["m_s"] * qs * qs
        Gi = -G * (J["m_n"] * J["a_n"] + J["m_s"] * qs) * k["sn"]
        Fis[i] = J["m_s"] * (k["Ldd"] - qs * k["qnd"] ** 2 + G * k["cn"])          # (33)
        Min[i] = Jq * k["qndd"] + 2 * J["m_s"] * qs * k["qnd"] * k["Ld"] + Gi
        lg.update(F_is=Fis[i], M_in=Min[i], M_io=0.0)
    M35 = np.array([s, c])
    r35 = np.array([np.sum(s * Fis + Min * c / L) - m_p * xdd,
                    m_p * (ydd + G) + np.sum(c * Fis - Min * s / L)])
    scale = np.array([np.sum(np.abs(s * Fis) + np.abs(Min / L)) + m_p * abs(xdd),
                      m_p * (abs(ydd) + G) + np.sum(np.abs(c * Fis) + np.abs(Min / L))])
    return M35, r35, scale, s, c, L


def test_example2_point_mass_two_legs():
    """Eqs. (35)-(36): N = 2, point-mass platform at the common end of both rods.

    Proves: (36) are the closure equations; (35) are the general (7)-(8) for N = 2 (with
    C_p O_ri = 0 the moment rows vanish); the forces from (35) give the prescribed
    acceleration of the point in the independent 3-D Lagrange model."""
    rng = np.random.default_rng(35)
    m_p = 6.0
    num = _two_leg_mech(m_p, 0.01)
    for trial in range(10):
        xp, yp = 0.45 + rng.uniform(-0.1, 0.1), 0.7 + rng.uniform(-0.1, 0.1)
        xd, yd = rng.uniform(-0.5, 0.5, 2)
        xdd, ydd = rng.uniform(-2, 2, 2)
        x = np.array([xp, yp, 0, 0, 0, 0])
        u = np.array([xd, yd, 0, 0, 0, 0])
        udot = np.array([xdd, ydd, 0, 0, 0, 0])
        legs = planar_legs(num["legs"], x, u, udot)
        M35, r35, scale, s, c, L = _eq35(legs, m_p, xdd, ydd)
        check("eq 36 closure", [s[0] * L[0] + xp, s[1] * L[1] - A_BASE + xp,
                                yp - c[0] * L[0], yp - c[1] * L[1]], 0.0, 1.0)
        F35 = np.linalg.solve(M35, r35)
        A78, rhs78, scale78 = paper_drive_system(x, udot, u, legs, m_p, num["platform"]["I"])
        check("eq 35 vs general eq 7-8 (N=2)", A78 @ F35, rhs78,
              scale78 + np.abs(A78) @ np.abs(F35))
        Q = [np.array([0.0, 0.0, F]) for F in F35]
        ref = lag.solve(num, x, u, Q, GVEC, np.zeros(3), np.zeros(3),
                        p0=p0_of(num["legs"], legs))
        check("eq 35 forces -> Lagrange udot", ref["udot"], udot, 1.0 + np.abs(udot).max())
    print({k: f"{v:.2e}" for k, v in ERRORS.items()})


def test_example3_horizontal_newton():
    """Example 3: q_n1 = -90 deg, q_n2 = 90 deg, q_n' = 0, L_1 + L_2 = A (rods on one
    horizontal line). The drives cannot hold the point up (c_i = 0: (35) is singular), so the
    check runs forward: random F_1, F_2 into the Lagrange model, then
    F_1 - F_2 = (m_p + 2 m_s) x_p'' (Newton, the paper's conclusion), the first row of (35)
    holds with the model's accelerations, and its second row (no force in it) holds too: it
    fixes y_p'' (the fall under gravity) instead of the forces."""
    rng = np.random.default_rng(36)
    m_p = 6.0
    num = _two_leg_mech(m_p, 0.01)
    for trial in range(10):
        xp = 0.5 + rng.uniform(-0.2, 0.2)
        xd = rng.uniform(-0.5, 0.5)
        F1, F2 = rng.uniform(-200, 200, 2)
        x = np.array([xp, 0, 0, 0, 0, 0])
        u = np.array([xd, 0, 0, 0, 0, 0])
        p0 = [np.array([0.0, 0.0, xp - LENGTH0]), np.array([0.0, 0.0, A_BASE - xp - LENGTH0])]
        ref = lag.solve(num, x, u, [np.array([0, 0, F1]), np.array([0, 0, F2])], GVEC,
                        np.zeros(3), np.zeros(3), p0=p0)
        udot = ref["udot"]
        scale = abs(F1) + abs(F2)
        check("Ex3 F1 - F2 = (m_p + 2 m_s) x_p''", F1 - F2,
              (m_p + 2 * PLANE_PRM["m_s"]) * udot[0], scale)
        check("Ex3 out-of-plane and rotation accelerations", udot[2:], 0.0,
              1.0 + np.abs(udot).max())
        legs = planar_legs(num["legs"], x, u, udot)
        assert np.allclose([lg["k"]["qn"] for lg in legs], [-np.pi / 2, np.pi / 2])
        for leg, lg, pdd in zip(num["legs"], legs, ref["pddot"]):
            qndd, qsdd = ref_leg_accel(leg, pdd)
            check("Ex3 leg accelerations", [qndd, qsdd], [lg["k"]["qndd"], lg["k"]["Ldd"]],
                  1.0 + np.abs(pdd).max())
        M35, r35, scale35, s, c, L = _eq35(legs, m_p, udot[0], udot[1])
        check("Ex3 eq 35 with the model's motion", M35 @ np.array([F1, F2]), r35,
              scale35 + np.abs(M35) @ np.abs([F1, F2]))
        # the paper's reduction: q_s1'' = x_p'', q_s2'' = -x_p''
        check("Ex3 q_s1'' = -q_s2'' = x_p''", [legs[0]["k"]["Ldd"], -legs[1]["k"]["Ldd"]],
              [udot[0], udot[0]], 1.0 + abs(udot[0]))
    print({k: f"{v:.2e}" for k, v in ERRORS.items()})
