"""Self-checks of the plain numpy parallel-manipulator reference (parallel_numpy.py).

No generator is used: the mechanism dicts (docs/parallel_numeric_format.md) are built here
(6-UPS, 6-SPU, 6-RUS, 6-PUS hexapods and a mixed UCU/RSU/UPS/SPU/RUS one), and every step of the
reference is checked against something it does not use: finite differences of positions,
Lagrange's equations from the kinetic energy, the energy balance, global momentum balance,
and statics of a massless-leg mechanism solved by geometry.
"""

from __future__ import annotations

import numpy as np
import pytest

from .parallel_numpy import (
    A_axis,
    angle_rates_matrix,
    closure_residual,
    leg_bias,
    leg_kinematics,
    leg_mass_matrix,
    platform_cut_point,
    platform_pose,
    pus_leg,
    skew,
    solve,
    solve_closure,
    solve_pose,
    velocity_constraints,
)

G = np.array([0.0, 0.0, -9.81])
E3 = np.eye(3)


# ---------------------------------------------------------------------------
# sample mechanisms (format doc) built by hand
# ---------------------------------------------------------------------------


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    Qm, Rm = np.linalg.qr(rng.standard_normal((3, 3)))
    Qm = Qm @ np.diag(np.sign(np.diag(Rm)))
    return Qm if np.linalg.det(Qm) > 0 else -Qm


def body(rng: np.random.Generator, m: float, d: np.ndarray, size: float) -> dict:
    """Body with mass m, centre d (own frame) and a random central inertia; I about O_j."""
    if m == 0.0:
        return {"m": 0.0, "d": np.zeros(3), "I": np.zeros((3, 3))}
    Rr = random_rotation(rng)
    I_c = Rr @ np.diag(rng.uniform(0.3, 1.0, 3) * m * size**2) @ Rr.T
    d = np.asarray(d, float) + rng.uniform(-0.02, 0.02, 3)
    return {"m": m, "d": d, "I": I_c + m * (d @ d * E3 - np.outer(d, d))}


def frame_along(s: np.ndarray) -> np.ndarray:
    """Rows x (along s), y (horizontal), z: coordinate transform frame 0 -> this frame."""
    x = s / np.linalg.norm(s)
    y = np.cross([0.0, 0.0, 1.0], x)
    y /= np.linalg.norm(y)
    return np.vstack([x, y, np.cross(x, y)])


def joint(kind: str, axis: int, l=(0.0, 0.0, 0.0), gamma=None, name: str = "") -> dict:
    return {"name": name, "kind": kind, "axis": axis, "l": np.asarray(l, float),
            "gamma": E3.copy() if gamma is None else np.asarray(gamma, float)}


def gough_leg(kind: str, b: np.ndarray, P: np.ndarray, rng, massless: bool = False) -> dict:
    """UPS / SPU / UCU leg from base point b to platform point P (home, frame 0 = frame C)."""
    s = P - b
    L = float(np.linalg.norm(s))
    Gm = frame_along(s)
    l_off = 0.1  # piston frame origin ahead of the base joint centre
    mass = (lambda m: 0.0) if massless else (lambda m: m)
    cyl = body(rng, mass(2.0), [0.25 * L, 0, 0], 0.1 * L)
    pis = body(rng, mass(1.2), [0.3 * L, 0, 0], 0.1 * L)
    fict = body(rng, 0.0, np.zeros(3), 0.0)
    if kind == "UPS":
        joints = [joint("R", 1, b, Gm, "U1"), joint("R", 2, name="U2"),
                  joint("P", 0, [l_off, 0, 0], name="P")]
        bodies = [fict, cyl, pis]
    elif kind == "SPU":
        joints = [joint("R", 1, b, Gm, "S1"), joint("R", 2, name="S2"), joint("R", 0, name="S3"),
                  joint("P", 0, [l_off, 0, 0], name="P")]
        bodies = [fict, fict, cyl, pis]
    elif kind == "UCU":
        joints = [joint("R", 1, b, Gm, "U1"), joint("R", 2, name="U2"), joint("R", 0, name="Cr"),
                  joint("P", 0, [l_off, 0, 0], name="Cp")]
        bodies = [fict, cyl, fict, pis]
    else:
        raise ValueError(kind)
    m = 3 if kind == "UPS" else 4
    # removed U: e1 = gamma_L^T e_y (piston), e2 = gamma_C^T e_z (C); a random twist phi about
    # the leg axis keeps e1 _|_ e2 at home (alpha_C = 1 there).
    phi = rng.uniform(-1.0, 1.0)
    cut = {"m": m, "l_L": np.array([L - l_off, 0, 0]), "gamma_L": A_axis(0, phi),
           "l_C": None, "gamma_C": A_axis(0, phi) @ Gm}
    drive = len(joints) - 1
    return {"name": kind, "type": kind, "joints": joints, "bodies": bodies, "cut": cut,
            "laws": [], "drive": drive}


def hunt_leg(kind: str, b: np.ndarray, P: np.ndarray, rng, massless: bool = False) -> dict:
    """RUS / RSU leg: crank about a horizontal tangent axis at b, link from the crank end to P."""
    radial = np.array([b[0], b[1], 0.0]) / np.hypot(b[0], b[1])
    tangent = np.cross([0.0, 0.0, 1.0], radial)
    a = 0.25
    d_crank = np.cos(0.35) * radial + np.sin(0.35) * np.array([0.0, 0.0, 1.0])
    G1 = np.vstack([d_crank, tangent, np.cross(d_crank, tangent)])  # rotation axis = y
    c_end = b + a * d_crank
    s = P - c_end
    L = float(np.linalg.norm(s))
    G2 = frame_along(s)
    mass = (lambda m: 0.0) if massless else (lambda m: m)
    crank = body(rng, mass(1.5), [0.5 * a, 0, 0], 0.3 * a)
    link = body(rng, mass(1.0), [0.5 * L, 0, 0], 0.1 * L)
    fict = body(rng, 0.0, np.zeros(3), 0.0)
    j1 = joint("R", 1, b, G1, "R")
    j2 = joint("R", 1, [a, 0, 0], G2 @ G1.T, "U1")
    if kind == "RUS":
        joints = [j1, j2, joint("R", 2, name="U2")]
        bodies = [crank, fict, link]
        m = 3
    elif kind == "RSU":
        joints = [j1, j2, joint("R", 2, name="S2"), joint("R", 0, name="S3")]
        bodies = [crank, fict, fict, link]
        m = 4
    else:
        raise ValueError(kind)
    phi = rng.uniform(-1.0, 1.0)
    cut = {"m": m, "l_L": np.array([L, 0, 0]), "gamma_L": A_axis(0, phi),
           "l_C": None, "gamma_C": A_axis(0, phi) @ G2}
    return {"name": kind, "type": kind, "joints": joints, "bodies": bodies, "cut": cut,
            "laws": [], "drive": 0}


def rail_leg(b: np.ndarray, l_C: np.ndarray, home: np.ndarray, rng,
             massless: bool = False) -> dict:
    """PUS leg (the reference's own pus_leg): a rail at b tilted 0.2 rad towards the axis (and
    a little at random), the rod from the slider to the platform joint; slider, yoke, rod."""
    radial = np.array([b[0], b[1], 0.0]) / np.hypot(b[0], b[1])
    rail = np.cos(0.2) * E3[2] - np.sin(0.2) * radial + rng.uniform(-0.05, 0.05, 3)
    L = float(np.linalg.norm(platform_pose(home)[0] + l_C - b))    # alpha_C = 1 at home
    mass = (lambda m: 0.0) if massless else (lambda m: m)
    bodies = [body(rng, mass(3.0), np.zeros(3), 0.1), body(rng, mass(0.2), np.zeros(3), 0.05),
              body(rng, mass(1.0), [0.5 * L, 0, 0], 0.1 * L)]
    return pus_leg(b, rail, l_C, home, bodies=bodies, drive=0)


BASE_DEG = np.array([-12.0, 12.0, 108.0, 132.0, 228.0, 252.0])
TOP_DEG = np.array([-48.0, 48.0, 72.0, 168.0, 192.0, 288.0])


def hexapod(types, seed: int = 0, massless: bool = False, height: float = 0.8) -> dict:
    """Six legs of the given types between a base circle and a platform circle."""
    rng = np.random.default_rng(seed)
    if isinstance(types, str):
        types = [types] * 6
    home = np.array([0.01, -0.02, height, 0.0, 0.0, 0.0])
    r_C, _ = platform_pose(home)
    legs = []
    for k, kind in enumerate(types):
        hunt = kind in ("RUS", "RSU")
        tb, tp = np.radians(BASE_DEG[k]), np.radians(TOP_DEG[k])
        rb, rp = (0.55, 0.42) if hunt else (1.0, 0.4) if kind == "PUS" else (0.6, 0.4)
        b = np.array([rb * np.cos(tb), rb * np.sin(tb), 0.0]) + rng.uniform(-0.02, 0.02, 3)
        l_C = np.array([rp * np.cos(tp), rp * np.sin(tp), -0.05]) + rng.uniform(-0.02, 0.02, 3)
        P = r_C + l_C  # alpha_C = 1 at home
        if kind == "PUS":
            leg = rail_leg(b + [0.0, 0.0, 0.3], l_C, home, rng, massless)
        else:
            leg = (hunt_leg if hunt else gough_leg)(kind, b, P, rng, massless)
        leg["cut"]["l_C"] = l_C
        leg["name"] = f"{kind}{k + 1}"
        legs.append(leg)
    Rr = random_rotation(rng)
    I_C = Rr @ np.diag([2.0, 2.2, 3.5]) @ Rr.T
    return {"name": "-".join(types), "gravity": G.copy(), "home": home,
            "platform": {"m": 25.0, "I": I_C}, "legs": legs}


MECHS = {
    "UPS": lambda: hexapod("UPS", seed=1),
    "SPU": lambda: hexapod("SPU", seed=2),
    "RUS": lambda: hexapod("RUS", seed=3),
    "mixed": lambda: hexapod(["UPS", "SPU", "UCU", "RUS", "RSU", "UCU"], seed=4),
    "PUS": lambda: hexapod("PUS", seed=6),
}


def random_state(mech: dict, rng: np.random.Generator):
    x = mech["home"] + np.concatenate([rng.uniform(-0.03, 0.03, 3), rng.uniform(-0.08, 0.08, 3)])
    u = np.concatenate([rng.uniform(-0.3, 0.3, 3), rng.uniform(-0.6, 0.6, 3)])
    Q = [rng.uniform(-20.0, 20.0, len(leg["joints"])) for leg in mech["legs"]]
    f_E = rng.uniform(-50.0, 50.0, 3)
    m_E = rng.uniform(-10.0, 10.0, 3)
    return x, u, Q, f_E, m_E


def rodrigues(phi: np.ndarray) -> np.ndarray:
    """Rotation matrix exp(skew(phi)) (active)."""
    th = np.linalg.norm(phi)
    if th < 1e-300:
        return E3.copy()
    K = skew(phi / th)
    return E3 + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def pose_along(r_C, alpha_C, u, udot, t):
    """Pose of C at time t along a path with velocity u and acceleration udot at t = 0.

    d alpha_C/dt = -skew(omega_C) alpha_C with omega_C in frame C; to second order
    alpha_C(t) = exp(-skew(omega t + udot_w t^2 / 2)) alpha_C.
    """
    r = r_C + u[:3] * t + 0.5 * udot[:3] * t**2
    alpha = rodrigues(-(u[3:] * t + 0.5 * udot[3:] * t**2)) @ alpha_C
    return r, alpha


def rel_err(a, b, floor: float = 1.0) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(floor, float(np.max(np.abs(b)))))


# ---------------------------------------------------------------------------
# conventions and closure
# ---------------------------------------------------------------------------


def test_elementary_rotations_and_platform_angles() -> None:
    q = 0.3
    c, s = np.cos(q), np.sin(q)
    assert np.allclose(A_axis(2, q), [[c, s, 0], [-s, c, 0], [0, 0, 1]])
    assert np.allclose(A_axis(1, q), [[c, 0, -s], [0, 1, 0], [s, 0, c]])
    assert np.allclose(A_axis(0, q), [[1, 0, 0], [0, c, s], [0, -s, c]])
    # omega_C = G(psi) psidot, checked by d alpha_C/dt = -skew(omega_C) alpha_C
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)])
    xd = rng.uniform(-1, 1, 6)
    e = 1e-6
    dalpha = (platform_pose(x + e * xd)[1] - platform_pose(x - e * xd)[1]) / (2 * e)
    Wc = -dalpha @ platform_pose(x)[1].T
    assert np.allclose(Wc, -Wc.T, atol=1e-9)
    omega_C = np.array([Wc[2, 1], Wc[0, 2], Wc[1, 0]])
    assert np.allclose(omega_C, angle_rates_matrix(x) @ xd[3:], atol=1e-9)


@pytest.mark.parametrize("name", list(MECHS))
def test_home_pose_closes_at_zero(name: str) -> None:
    mech = MECHS[name]()
    r_C, alpha_C = platform_pose(mech["home"])
    for leg in mech["legs"]:
        n = len(leg["joints"])
        assert np.max(np.abs(closure_residual(leg, np.zeros(n), r_C, alpha_C))) < 1e-15
        assert np.allclose(solve_closure(leg, r_C, alpha_C), 0.0, atol=1e-14)


@pytest.mark.parametrize("name", list(MECHS))
def test_closure_newton_converges_and_rejects_unreachable(name: str) -> None:
    mech = MECHS[name]()
    rng = np.random.default_rng(10)
    for _ in range(5):
        x = random_state(mech, rng)[0]
        r_C, alpha_C = platform_pose(x)
        for leg in mech["legs"]:
            p = solve_closure(leg, r_C, alpha_C)
            assert np.max(np.abs(closure_residual(leg, p, r_C, alpha_C))) <= 1e-14
            # and from a guess near the answer
            p2 = solve_closure(leg, r_C, alpha_C, p0=p + 1e-3)
            assert np.allclose(p2, p, atol=1e-12)
    if any(leg["type"] in ("RUS", "RSU") for leg in mech["legs"]):
        # a Hunt leg cannot reach a platform 5 m up: Newton must fail loudly, not return NaN
        far = mech["home"] + np.array([0.0, 0.0, 5.0, 0.0, 0.0, 0.0])
        with pytest.raises(ValueError):
            solve(mech, far, np.zeros(6), zero_Q(mech), G, np.zeros(3), np.zeros(3))


def test_ups_closure_matches_closed_form() -> None:
    """Paper section 4, UPS: [l, m, n] = gamma_0 (r^L_C - l_0) = A_y(p1)^T A_z(p2)^T [L, 0, 0],
    so l = L c1 c2, m = L s2, n = -L s1 c2 and the stroke p3 = L - L(home) (eq. 4.7);
    also far from home (long stroke, large angles)."""
    mech = MECHS["UPS"]()
    rng = np.random.default_rng(11)
    r_H, a_H = platform_pose(mech["home"])
    for dx in ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.3, -0.2, 1.5, 0.4, -0.3, 0.5],
               rng.uniform(-0.2, 0.2, 6)):
        x = mech["home"] + np.asarray(dx)
        r_C, alpha_C = platform_pose(x)
        for leg in mech["legs"]:
            j0 = leg["joints"][0]
            L_home = np.linalg.norm(platform_cut_point(leg, r_H, a_H)[0] - j0["l"])
            lmn = j0["gamma"] @ (platform_cut_point(leg, r_C, alpha_C)[0] - j0["l"])
            L = np.linalg.norm(lmn)
            p_closed = np.array([np.arctan2(-lmn[2], lmn[0]), np.arcsin(lmn[1] / L), L - L_home])
            assert np.allclose(solve_closure(leg, r_C, alpha_C), p_closed, atol=1e-13)


# ---------------------------------------------------------------------------
# leg kinematics by finite differences
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MECHS))
def test_leg_kinematics_finite_differences(name: str) -> None:
    """T_j, R_j, T^L (first differences) and w_j, eps_j, w^L (second differences) along
    p(t) = p + pdot t + pddot t^2 / 2, every body of every leg; also random p far from home."""
    mech = MECHS[name]()
    rng = np.random.default_rng(20)
    worst = 0.0
    for leg in mech["legs"]:
        n = len(leg["joints"])
        for _ in range(3):
            p = rng.uniform(-0.8, 0.8, n)
            pdot, pddot = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
            kin = leg_kinematics(leg, p, pdot)
            e = 1e-4
            k_p = leg_kinematics(leg, p + pdot * e + 0.5 * pddot * e**2, pdot + pddot * e)
            k_m = leg_kinematics(leg, p - pdot * e + 0.5 * pddot * e**2, pdot - pddot * e)
            k_p2 = leg_kinematics(leg, p + pdot * e + 0.5 * pddot * e**2)
            k_m2 = leg_kinematics(leg, p - pdot * e + 0.5 * pddot * e**2)
            for j in range(1, n + 1):
                v_fd = (k_p2["r"][j] - k_m2["r"][j]) / (2 * e)
                a_fd = (k_p2["r"][j] - 2 * kin["r"][j] + k_m2["r"][j]) / e**2
                dtauT = (k_p2["tau"][j].T - k_m2["tau"][j].T) / (2 * e)
                W = dtauT @ kin["tau"][j]  # skew(omega_j), frame 0
                om_fd = np.array([W[2, 1], W[0, 2], W[1, 0]])
                eps_fd = (k_p["omega"][j] - k_m["omega"][j]) / (2 * e)
                worst = max(worst,
                            rel_err(kin["T"][j] @ pdot, v_fd),
                            rel_err(kin["v"][j], v_fd),
                            rel_err(kin["R"][j] @ pdot, om_fd),
                            rel_err(kin["omega"][j], om_fd),
                            rel_err(kin["T"][j] @ pddot + kin["w"][j], a_fd),
                            rel_err(kin["R"][j] @ pddot + kin["eps"][j], eps_fd))
            vL_fd = (k_p2["r_L"] - k_m2["r_L"]) / (2 * e)
            aL_fd = (k_p2["r_L"] - 2 * kin["r_L"] + k_m2["r_L"]) / e**2
            worst = max(worst, rel_err(kin["T_L"] @ pdot, vL_fd),
                        rel_err(kin["T_L"] @ pddot + kin["w_L"], aL_fd))
    assert worst < 1e-6, worst


@pytest.mark.parametrize("name", list(MECHS))
def test_closure_jacobian_is_C_d(name: str) -> None:
    """C^(d) = d f / d p (the Newton matrix of eq. 4.6), including the e1.e2 row."""
    mech = MECHS[name]()
    rng = np.random.default_rng(30)
    x = random_state(mech, rng)[0]
    r_C, alpha_C = platform_pose(x)
    for leg in mech["legs"]:
        n = len(leg["joints"])
        p = rng.uniform(-0.5, 0.5, n)
        _, C_d = velocity_constraints(leg, leg_kinematics(leg, p), alpha_C)
        e = 1e-6
        J = np.column_stack([(closure_residual(leg, p + e * E, r_C, alpha_C)
                              - closure_residual(leg, p - e * E, r_C, alpha_C)) / (2 * e)
                             for E in np.eye(n)])
        assert rel_err(C_d, J) < 1e-8


# ---------------------------------------------------------------------------
# H_k and h_k by finite differences of the closure along a path of C
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MECHS))
def test_H_and_h_finite_differences(name: str) -> None:
    mech = MECHS[name]()
    rng = np.random.default_rng(40)
    worst_H, worst_h = 0.0, 0.0
    for _ in range(4):
        x, u, Q, f_E, m_E = random_state(mech, rng)
        udot = np.concatenate([rng.uniform(-2, 2, 3), rng.uniform(-4, 4, 3)])
        r_C, alpha_C = platform_pose(x)
        res = solve_pose(mech, r_C, alpha_C, u, Q, G, f_E, m_E)
        e = 1e-4
        pp = solve_pose(mech, *pose_along(r_C, alpha_C, u, udot, e), u, Q, G, f_E, m_E,
                        p0=res["p"])["p"]
        pm = solve_pose(mech, *pose_along(r_C, alpha_C, u, udot, -e), u, Q, G, f_E, m_E,
                        p0=res["p"])["p"]
        for k in range(6):
            pdot_fd = (pp[k] - pm[k]) / (2 * e)
            pddot_fd = (pp[k] - 2 * res["p"][k] + pm[k]) / e**2
            worst_H = max(worst_H, rel_err(res["H"][k] @ u, pdot_fd))
            worst_h = max(worst_h, rel_err(res["H"][k] @ udot + res["h"][k], pddot_fd))
    assert worst_H < 1e-7, worst_H
    assert worst_h < 1e-5, worst_h


def test_h_needs_the_platform_centripetal_term() -> None:
    """Dropping omega0 x (omega0 x l0_C) from the C side (w_C = 0 as in the paper's text)
    gives a visibly wrong h_k: the term is needed."""
    mech = MECHS["UPS"]()
    rng = np.random.default_rng(41)
    x, u, Q, f_E, m_E = random_state(mech, rng)
    u[3:] = [1.0, -0.8, 0.9]
    r_C, alpha_C = platform_pose(x)
    res = solve_pose(mech, r_C, alpha_C, u, Q, G, f_E, m_E)
    udot = np.zeros(6)
    e = 1e-4
    pp = solve_pose(mech, *pose_along(r_C, alpha_C, u, udot, e), u, Q, G, f_E, m_E)["p"]
    pm = solve_pose(mech, *pose_along(r_C, alpha_C, u, udot, -e), u, Q, G, f_E, m_E)["p"]
    omega0 = alpha_C.T @ u[3:]
    for k, leg in enumerate(mech["legs"]):
        pddot_fd = (pp[k] - 2 * res["p"][k] + pm[k]) / e**2
        l0 = alpha_C.T @ leg["cut"]["l_C"]
        h_without = res["h"][k] - np.linalg.solve(res["C_d"][k],
                                                  np.cross(omega0, np.cross(omega0, l0)))
        assert rel_err(res["h"][k], pddot_fd) < 1e-5
        assert rel_err(h_without, pddot_fd) > 1e-2


# ---------------------------------------------------------------------------
# A_k and b_k from Lagrange's equations of the leg (kinetic energy by finite differences)
# ---------------------------------------------------------------------------


def leg_energy(leg: dict, p: np.ndarray, pdot: np.ndarray, g: np.ndarray) -> tuple[float, float]:
    """Kinetic and potential energy of a leg from its body velocities (T_j, R_j are checked by
    finite differences above)."""
    kin = leg_kinematics(leg, p, pdot)
    T, V = 0.0, 0.0
    for j, bd in enumerate(leg["bodies"], start=1):
        tau = kin["tau"][j]
        c0 = tau.T @ (bd["m"] * bd["d"])
        I0 = tau.T @ bd["I"] @ tau
        v, om = kin["T"][j] @ pdot, kin["R"][j] @ pdot
        T += 0.5 * bd["m"] * v @ v + v @ np.cross(om, c0) + 0.5 * om @ I0 @ om
        V -= g @ (bd["m"] * kin["r"][j] + c0)
    return T, V


def lagrange_matrix(leg, p) -> np.ndarray:
    """d^2 T / d pdot^2: T is quadratic in pdot, so polarisation gives it exactly,
    M_ij = T(e_i + e_j) - T(e_i) - T(e_j)."""
    n = len(p)
    Ed = np.eye(n)
    Ti = [leg_energy(leg, p, Ed[i], G)[0] for i in range(n)]
    M = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            M[i, j] = M[j, i] = leg_energy(leg, p, Ed[i] + Ed[j], G)[0] - Ti[i] - Ti[j]
    return M


@pytest.mark.parametrize("name", list(MECHS))
def test_leg_A_and_b_from_lagrange(name: str) -> None:
    """A_k = d^2 T / d pdot^2 (symmetric, positive definite) and
    b_k = Q - [d/dt (dT/dpdot)|_{pddot=0} - dT/dp + dV/dp]."""
    mech = MECHS[name]()
    rng = np.random.default_rng(50)
    worst_A, worst_b = 0.0, 0.0
    for leg in mech["legs"]:
        n = len(leg["joints"])
        for _ in range(2):
            p, pdot = rng.uniform(-0.5, 0.5, n), rng.uniform(-2, 2, n)
            Q = rng.uniform(-5, 5, n)
            kin = leg_kinematics(leg, p, pdot)
            A = leg_mass_matrix(leg, kin)
            b = leg_bias(leg, kin, Q, G)
            assert np.allclose(A, A.T, rtol=0, atol=1e-14 * np.max(np.abs(A)))
            assert np.min(np.linalg.eigvalsh(0.5 * (A + A.T))) > 0.0
            worst_A = max(worst_A, rel_err(A, lagrange_matrix(leg, p)))
            e = 1e-5
            ddt = (lagrange_matrix(leg, p + e * pdot) - lagrange_matrix(leg, p - e * pdot)) \
                @ pdot / (2 * e)
            dT = np.array([(leg_energy(leg, p + e * E, pdot, G)[0]
                            - leg_energy(leg, p - e * E, pdot, G)[0]) / (2 * e) for E in np.eye(n)])
            dV = np.array([(leg_energy(leg, p + e * E, pdot, G)[1]
                            - leg_energy(leg, p - e * E, pdot, G)[1]) / (2 * e) for E in np.eye(n)])
            worst_b = max(worst_b, rel_err(b, Q - (ddt - dT + dV)))
    assert worst_A < 1e-12, worst_A
    assert worst_b < 1e-8, worst_b


# ---------------------------------------------------------------------------
# the whole mechanism: energy, momentum, joint-axis loads, platform Newton-Euler
# ---------------------------------------------------------------------------


def mechanism_energy(mech, r_C, alpha_C, u, g, p0):
    """T = u^T A*_C u / 2 (the reduced form) and V (gravity on C and every leg body); the
    reduced T is also compared with the legs' own kinetic energies leg by leg."""
    res = solve_pose(mech, r_C, alpha_C, u, zero_Q(mech), g, np.zeros(3), np.zeros(3), p0)
    T = 0.5 * u @ res["A_star"] @ u
    V = -mech["platform"]["m"] * g @ r_C
    T_sum = 0.5 * u @ res["M_C"] @ u
    for leg, p, pdot in zip(mech["legs"], res["p"], res["pdot"]):
        Tk, Vk = leg_energy(leg, p, pdot, g)
        T_sum += Tk
        V += Vk
    assert np.isclose(T, T_sum, rtol=1e-12, atol=1e-14)
    return T, V


def zero_Q(mech):
    return [np.zeros(len(leg["joints"])) for leg in mech["legs"]]


@pytest.mark.parametrize("name", list(MECHS))
def test_energy_balance(name: str) -> None:
    """d(T + V)/dt = sum Q.pdot + f_E.v_C + m_E.omega_C, T = u^T A*_C u / 2."""
    mech = MECHS[name]()
    rng = np.random.default_rng(60)
    worst = 0.0
    for _ in range(3):
        x, u, Q, f_E, m_E = random_state(mech, rng)
        r_C, alpha_C = platform_pose(x)
        res = solve_pose(mech, r_C, alpha_C, u, Q, G, f_E, m_E)
        udot = res["udot"]
        power = sum(Qk @ pdk for Qk, pdk in zip(Q, res["pdot"])) + f_E @ u[:3] + m_E @ u[3:]
        e = 1e-5
        Ep = sum(mechanism_energy(mech, *pose_along(r_C, alpha_C, u, udot, e), u + e * udot,
                                  G, res["p"]))
        Em = sum(mechanism_energy(mech, *pose_along(r_C, alpha_C, u, udot, -e), u - e * udot,
                                  G, res["p"]))
        dE = (Ep - Em) / (2 * e)
        worst = max(worst, abs(dE - power) / max(1.0, abs(power)))
    assert worst < 1e-7, worst


def momenta(mech, r_C, alpha_C, u, p0):
    """Linear momentum and angular momentum about O_0 of the whole mechanism (frame 0)."""
    res = solve_pose(mech, r_C, alpha_C, u, zero_Q(mech), G, np.zeros(3), np.zeros(3), p0)
    m_C, I_C = mech["platform"]["m"], mech["platform"]["I"]
    P = m_C * u[:3]
    L = m_C * np.cross(r_C, u[:3]) + alpha_C.T @ I_C @ u[3:]
    for leg, p, pdot in zip(mech["legs"], res["p"], res["pdot"]):
        kin = leg_kinematics(leg, p, pdot)
        for j, bd in enumerate(leg["bodies"], start=1):
            tau = kin["tau"][j]
            c0 = tau.T @ (bd["m"] * bd["d"])
            I0 = tau.T @ bd["I"] @ tau
            v, om, r = kin["v"][j], kin["omega"][j], kin["r"][j]
            Pj = bd["m"] * v + np.cross(om, c0)
            P = P + Pj
            L = L + np.cross(r, Pj) + np.cross(c0, v) + I0 @ om
    return P, L


@pytest.mark.parametrize("name", list(MECHS))
def test_base_loads_from_momentum_balance(name: str) -> None:
    """dP/dt = f_E + M g - base_force; dL_O0/dt = sum r_G x m g + r_C x f_E + alpha^T m_E
    - base_moment (finite differences of the momenta along the computed motion)."""
    mech = MECHS[name]()
    rng = np.random.default_rng(70)
    worst = 0.0
    for _ in range(3):
        x, u, Q, f_E, m_E = random_state(mech, rng)
        r_C, alpha_C = platform_pose(x)
        res = solve_pose(mech, r_C, alpha_C, u, Q, G, f_E, m_E)
        udot = res["udot"]
        e = 1e-5
        Pp, Lp = momenta(mech, *pose_along(r_C, alpha_C, u, udot, e), u + e * udot, res["p"])
        Pm, Lm = momenta(mech, *pose_along(r_C, alpha_C, u, udot, -e), u - e * udot, res["p"])
        dP, dL = (Pp - Pm) / (2 * e), (Lp - Lm) / (2 * e)
        m_tot = mech["platform"]["m"]
        grav_moment = mech["platform"]["m"] * np.cross(r_C, G)
        for leg, p in zip(mech["legs"], res["p"]):
            kin = leg_kinematics(leg, p)
            for j, bd in enumerate(leg["bodies"], start=1):
                m_tot += bd["m"]
                rG_m = bd["m"] * kin["r"][j] + kin["tau"][j].T @ (bd["m"] * bd["d"])
                grav_moment = grav_moment + np.cross(rG_m, G)
        F_expect = f_E + m_tot * G - dP
        M_expect = grav_moment + np.cross(r_C, f_E) + alpha_C.T @ m_E - dL
        worst = max(worst, rel_err(res["base_force"], F_expect),
                    rel_err(res["base_moment"], M_expect))
    assert worst < 1e-7, worst


@pytest.mark.parametrize("name", list(MECHS))
def test_joint_loads_and_platform_newton_euler(name: str) -> None:
    """Section 6: the load component along each joint's free axis is its active force Q_j;
    and C obeys Newton-Euler under f_E, m_E, gravity and the legs' F_on_C, M_on_C."""
    mech = MECHS[name]()
    rng = np.random.default_rng(80)
    for _ in range(3):
        x, u, Q, f_E, m_E = random_state(mech, rng)
        r_C, alpha_C = platform_pose(x)
        res = solve_pose(mech, r_C, alpha_C, u, Q, G, f_E, m_E)
        for k, leg in enumerate(mech["legs"]):
            kin = leg_kinematics(leg, res["p"][k], res["pdot"][k])
            for j, jt in enumerate(leg["joints"]):
                load = res["joint_force"][k][j] if jt["kind"] == "P" else res["joint_moment"][k][j]
                assert abs(kin["axis0"][j] @ load - Q[k][j]) < 1e-10 * (1 + abs(Q[k][j]))
            if leg["cut"]["m"] == 3:
                assert np.all(res["M_on_C"][k] == 0.0)
            # closure still holds for the accelerations: cut points move together
            assert rel_err(res["C_d"][k] @ res["pddot"][k],
                           res["C_i"][k] @ res["udot"] + res["C_d"][k] @ res["h"][k]) < 1e-12
        m_C, I_C = mech["platform"]["m"], mech["platform"]["I"]
        F = f_E + m_C * G + res["F_on_C"].sum(axis=0)
        M0 = sum(np.cross(alpha_C.T @ leg["cut"]["l_C"], res["F_on_C"][k]) + res["M_on_C"][k]
                 for k, leg in enumerate(mech["legs"]))
        om = u[3:]
        assert rel_err(m_C * res["udot"][:3], F) < 1e-12
        assert rel_err(I_C @ res["udot"][3:] + np.cross(om, I_C @ om), m_E + alpha_C @ M0) < 1e-12
        assert np.allclose(res["A_star"], res["A_star"].T, atol=1e-12)
        assert np.min(np.linalg.eigvalsh(res["A_star"])) > 0.0


# ---------------------------------------------------------------------------
# statics with massless legs
# ---------------------------------------------------------------------------


def line_of_force(leg: dict, kin: dict) -> tuple[np.ndarray, np.ndarray]:
    """(start, unit direction) of the two-force member of a massless leg: from the base joint
    centre (UPS/SPU/UCU), from the slider's universal joint (PUS) or from the crank end
    (RUS/RSU) to the cut point."""
    start = kin["r"][1] if leg["type"] in ("UPS", "SPU", "UCU", "PUS") else kin["r"][2]
    s = kin["r_L"] - start
    return start, s / np.linalg.norm(s)


@pytest.mark.parametrize("types", ["UPS", "SPU", "RUS", "PUS", "mixed"])
def test_statics_massless_legs(types: str) -> None:
    """Massless legs carry forces f_k along their two-force lines; f_k balance the platform load
    (6 x 6 linear system by geometry), the drive forces follow from the leg's virtual work
    Q = T^L^T F; with these Q the platform at rest does not accelerate, F_on_C = f_k s_k,
    M_on_C = 0, and the base carries the whole load."""
    tlist = ["UPS", "SPU", "UCU", "RUS", "RSU", "UCU"] if types == "mixed" else types
    mech = hexapod(tlist, seed=5, massless=True)
    mech["platform"]["m"] = 30.0
    rng = np.random.default_rng(90)
    for _ in range(3):
        x = random_state(mech, rng)[0]
        f_E, m_E = rng.uniform(-100, 100, 3), rng.uniform(-20, 20, 3)
        r_C, alpha_C = platform_pose(x)
        kins, lines = [], []
        for leg in mech["legs"]:
            kin = leg_kinematics(leg, solve_closure(leg, r_C, alpha_C))
            kins.append(kin)
            lines.append(line_of_force(leg, kin))
        # sum f_k s_k = -(f_E + m_C g);  sum l0_k x f_k s_k = -alpha_C^T m_E
        Wm = np.zeros((6, 6))
        for k, (leg, (_, s)) in enumerate(zip(mech["legs"], lines)):
            l0 = alpha_C.T @ leg["cut"]["l_C"]
            Wm[:3, k], Wm[3:, k] = s, np.cross(l0, s)
        load = np.concatenate([f_E + mech["platform"]["m"] * G, alpha_C.T @ m_E])
        f = np.linalg.solve(Wm, -load)
        Q = []
        for k, leg in enumerate(mech["legs"]):
            F = f[k] * lines[k][1]
            Qk = kins[k]["T_L"].T @ F
            others = np.delete(Qk, leg["drive"])
            assert np.max(np.abs(others)) < 1e-10 * max(1.0, abs(f[k]))
            Qk = np.zeros(len(leg["joints"]))
            Qk[leg["drive"]] = (kins[k]["T_L"].T @ F)[leg["drive"]]
            Q.append(Qk)
        res = solve(mech, x, np.zeros(6), Q, G, f_E, m_E)
        assert np.max(np.abs(res["udot"])) < 1e-10
        for k in range(6):
            assert np.allclose(res["F_on_C"][k], f[k] * lines[k][1], atol=1e-9)
            assert np.allclose(res["M_on_C"][k], 0.0, atol=1e-9)
        W_C = f_E + mech["platform"]["m"] * G
        assert np.allclose(res["base_force"], W_C, atol=1e-9)
        assert np.allclose(res["base_moment"], np.cross(r_C, W_C) + alpha_C.T @ m_E, atol=1e-9)


def test_solve_returns_documented_keys_and_shapes() -> None:
    mech = MECHS["mixed"]()
    x, u, Q, f_E, m_E = random_state(mech, np.random.default_rng(100))
    res = solve(mech, x, u, Q, G, f_E, m_E)
    for key in ("p", "pdot", "pddot", "H", "h", "A", "b"):
        assert len(res[key]) == 6
    for k, leg in enumerate(mech["legs"]):
        n = len(leg["joints"])
        assert res["H"][k].shape == (n, 6) and res["A"][k].shape == (n, n)
        assert res["p"][k].shape == res["pdot"][k].shape == res["pddot"][k].shape == (n,)
    assert res["udot"].shape == (6,) and res["b_star"].shape == (6,)
    assert res["A_star"].shape == (6, 6)
    assert res["F_on_C"].shape == res["M_on_C"].shape == (6, 3)
    assert res["base_force"].shape == res["base_moment"].shape == (3,)
    # the platform cut points coincide with the legs' (position closure)
    r_C, alpha_C = platform_pose(x)
    for k, leg in enumerate(mech["legs"]):
        r_LC = platform_cut_point(leg, r_C, alpha_C)[0]
        assert np.allclose(leg_kinematics(leg, res["p"][k])["r_L"], r_LC, atol=1e-14)
