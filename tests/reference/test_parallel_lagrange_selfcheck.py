"""Self-checks of the parallel-mechanism reference (tests/reference/parallel_lagrange.py).

Nothing here needs the generator: the mechanism dicts (6-UPS, 6-RUS, 6-SPU with a universal
cut, 6-PUS by the reference's own pus_leg) are built below.  Kinematic quantities used as
*checks* come from the independent Featherstone reference (forward kinematics, point Jacobians, body velocities, CRBA, RNEA,
energies) and from finite differences (5-point central stencils) along the state direction
``(q, qd) -> (q + t qd, qd + t qdd)``, whose first derivative at t = 0 is exact.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from . import featherstone as fs
from .parallel_lagrange import (
    alpha_C,
    close_leg,
    cut_gamma,
    cut_jacobians,
    elementary,
    leg_kinematics,
    leg_mass_bias,
    pus_leg,
    skew,
    solve,
)

G = np.array([0.0, 0.0, -9.81])
HOME = np.array([0.02, -0.01, 1.0, 0.03, -0.02, 0.05])
EY, EZ = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
ERRORS: dict[str, float] = {}


def record(name: str, err: float) -> float:
    ERRORS[name] = max(ERRORS.get(name, 0.0), float(err))
    return float(err)


# ---------------------------------------------------------------------------
# sample mechanisms
# ---------------------------------------------------------------------------


def frame_from_x(xv: np.ndarray, hint: np.ndarray) -> np.ndarray:
    """Rows = unit axes (parent coords) of a frame with x along xv, y near hint (a gamma)."""
    xv = xv / np.linalg.norm(xv)
    y = hint - (hint @ xv) * xv
    y = y / np.linalg.norm(y)
    return np.array([xv, y, np.cross(xv, y)])


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    Qm, Rm = np.linalg.qr(rng.standard_normal((3, 3)))
    Qm = Qm @ np.diag(np.sign(np.diag(Rm)))
    return Qm if np.linalg.det(Qm) > 0 else -Qm


def body(rng: np.random.Generator, m: float, d: np.ndarray) -> dict:
    """Body with a random inertia about its CoM, given about the origin (parallel axes)."""
    Rr = random_rotation(rng)
    IG = Rr @ np.diag(rng.uniform(0.2, 1.0, 3) * m * 0.02) @ Rr.T
    d = d + rng.uniform(-0.02, 0.02, 3)
    return {"m": m, "d": d, "I": IG + m * ((d @ d) * np.eye(3) - np.outer(d, d))}


def massless() -> dict:
    return {"m": 0.0, "d": np.zeros(3), "I": np.zeros((3, 3))}


def joint(kind: str, axis: int, l: Any = (0, 0, 0), gamma: Any = None) -> dict:
    return {"name": f"{kind}{axis}", "kind": kind, "axis": axis,
            "l": np.asarray(l, float), "gamma": np.eye(3) if gamma is None else gamma}


def anchor_points() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """6-6 Stewart geometry: base radius 0.8, platform radius 0.5 (frame C)."""
    base, plat = [], []
    for k in range(6):
        sgn = -1.0 if k % 2 == 0 else 1.0
        tb = np.radians(120 * (k // 2) + sgn * 15)
        tp = np.radians(120 * (k // 2) + sgn * 45)
        base.append(np.array([0.8 * np.cos(tb), 0.8 * np.sin(tb), 0.0]))
        plat.append(np.array([0.5 * np.cos(tp), 0.5 * np.sin(tp), 0.0]))
    return base, plat


def laws(n: int, rng: np.random.Generator, k: float) -> list[dict]:
    return [{"k": [k * rng.uniform(0.5, 1.5)], "c": [], "q0": rng.uniform(-0.02, 0.02),
             "preload": rng.uniform(-1, 1)} for _ in range(n)]


def platform(rng: np.random.Generator) -> dict:
    Rr = random_rotation(rng)
    return {"m": 20.0, "I": Rr @ np.diag([0.8, 1.0, 1.5]) @ Rr.T}


def mechanism(name: str, legs: list[dict], rng: np.random.Generator) -> dict:
    return {"name": name, "gravity": G, "home": HOME, "platform": platform(rng), "legs": legs}


def ups(seed: int = 1, light: bool = False) -> dict:
    """6-UPS: U = R y, R z at the base (x along the leg at home), P along x, S cut."""
    rng = np.random.default_rng(seed)
    aC = alpha_C(HOME)
    base, plat = anchor_points()
    legs = []
    for k, (b, c) in enumerate(zip(base, plat)):
        vec = HOME[:3] + aC.T @ c - b
        L = float(np.linalg.norm(vec))
        G0 = frame_from_x(vec, np.cross(EZ, vec))
        bodies = ([massless(), massless(), massless()] if light else
                  [massless() if k % 2 else body(rng, 0.3, np.zeros(3)),
                   body(rng, 2.0, np.array([0.3 * L, 0, 0])),
                   body(rng, 1.0, np.array([0.7 * L, 0, 0]))])
        legs.append({"name": f"leg{k}", "type": "UPS",
                     "joints": [joint("R", 1, b, G0), joint("R", 2), joint("P", 0)],
                     "bodies": bodies,
                     "cut": {"m": 3, "l_L": np.array([L, 0, 0]), "gamma_L": np.eye(3),
                             "l_C": c, "gamma_C": np.eye(3)},
                     "laws": laws(3, rng, 1.0), "drive": 2})
        legs[-1]["laws"][2]["k"] = [2000.0 * rng.uniform(0.8, 1.2)]
    return mechanism("ups", legs, rng)


def rus(seed: int = 2, light: bool = False) -> dict:
    """6-RUS (Hunt): crank R z (axis tangent), U = R y, R z at the crank tip, S cut."""
    rng = np.random.default_rng(seed)
    aC = alpha_C(HOME)
    base, plat = anchor_points()
    a = 0.25
    legs = []
    for k, (b, c) in enumerate(zip(base, plat)):
        radial = b / np.linalg.norm(b)
        axis = np.cross(EZ, radial)
        G0 = np.array([radial, np.cross(axis, radial), axis])
        rod_vec = HOME[:3] + aC.T @ c - (b + a * radial)
        rod = float(np.linalg.norm(rod_vec))
        G1 = frame_from_x(G0 @ rod_vec, EZ)
        bodies = ([massless(), massless(), massless()] if light else
                  [body(rng, 1.0, np.array([a / 2, 0, 0])), massless(),
                   body(rng, 1.5, np.array([rod / 2, 0, 0]))])
        legs.append({"name": f"leg{k}", "type": "RUS",
                     "joints": [joint("R", 2, b, G0), joint("R", 1, [a, 0, 0], G1),
                                joint("R", 2)],
                     "bodies": bodies,
                     "cut": {"m": 3, "l_L": np.array([rod, 0, 0]), "gamma_L": np.eye(3),
                             "l_C": c, "gamma_C": np.eye(3)},
                     "laws": laws(3, rng, 20.0), "drive": 0})
    return mechanism("rus", legs, rng)


def spu(seed: int = 3, light: bool = False) -> dict:
    """6-SPU: S = R y, R z, R x at the base, P along x, universal cut (gamma_L = A_x(beta))."""
    rng = np.random.default_rng(seed)
    aC = alpha_C(HOME)
    base, plat = anchor_points()
    legs = []
    for k, (b, c) in enumerate(zip(base, plat)):
        vec = HOME[:3] + aC.T @ c - b
        L = float(np.linalg.norm(vec))
        G0 = frame_from_x(vec, np.cross(EZ, vec))
        gL = elementary(0, rng.uniform(-1.0, 1.0))
        bodies = ([massless()] * 4 if light else
                  [massless(), massless(), body(rng, 2.0, np.array([0.3 * L, 0, 0])),
                   body(rng, 1.0, np.array([0.7 * L, 0, 0]))])
        legs.append({"name": f"leg{k}", "type": "SPU",
                     "joints": [joint("R", 1, b, G0), joint("R", 2), joint("R", 0),
                                joint("P", 0)],
                     "bodies": bodies,
                     "cut": {"m": 4, "l_L": np.array([L, 0, 0]), "gamma_L": gL,
                             "l_C": c, "gamma_C": gL @ G0 @ aC.T},
                     "laws": laws(4, rng, 1.0), "drive": 3})
        legs[-1]["laws"][3]["k"] = [2000.0 * rng.uniform(0.8, 1.2)]
    return mechanism("spu", legs, rng)


def pus(seed: int = 4, light: bool = False) -> dict:
    """6-PUS: a slide along a rail tilted 0.2 rad towards the axis, U = R y, R z on the slider,
    a rod, S cut; the frames by the reference's own pus_leg (rod about 60 deg from the rail)."""
    rng = np.random.default_rng(seed)
    base, plat = anchor_points()
    legs = []
    for k, (b, c) in enumerate(zip(base, plat)):
        radial = b / np.linalg.norm(b)
        rail = np.cos(0.2) * EZ - np.sin(0.2) * radial + rng.uniform(-0.05, 0.05, 3)
        b = 1.6 * b + 0.5 * EZ
        L = float(np.linalg.norm(HOME[:3] + alpha_C(HOME).T @ c - b))
        bodies = ([massless()] * 3 if light else
                  [body(rng, 3.0, np.zeros(3)),
                   massless() if k % 2 else body(rng, 0.2, np.zeros(3)),
                   body(rng, 1.0, np.array([L / 2, 0, 0]))])
        legs.append(pus_leg(b, rail, c, HOME, bodies=bodies, laws=laws(3, rng, 1.0), drive=0,
                            name=f"leg{k}"))
        legs[-1]["laws"][0]["k"] = [2000.0 * rng.uniform(0.8, 1.2)]
    return mechanism("pus", legs, rng)


MECHS: dict[str, Callable[..., dict]] = {"UPS": ups, "RUS": rus, "SPU": spu, "PUS": pus}


# ---------------------------------------------------------------------------
# helpers (independent of the reference's internals)
# ---------------------------------------------------------------------------


def fs_chain(leg: dict) -> list[dict]:
    """The leg in featherstone.py's chain format (inertia moved to the CoM)."""
    out = []
    for jt, b in zip(leg["joints"], leg["bodies"]):
        m, d = float(b["m"]), np.asarray(b["d"], float)
        out.append({"type": jt["kind"], "axis": "xyz"[jt["axis"]], "l": jt["l"],
                    "gamma": jt["gamma"], "m": m, "com": d,
                    "I_com": b["I"] - m * ((d @ d) * np.eye(3) - np.outer(d, d))})
    return out


def rodrigues(phi: np.ndarray) -> np.ndarray:
    """exp(skew(phi))."""
    th = np.linalg.norm(phi)
    if th < 1e-300:
        return np.eye(3)
    K = skew(phi / th)
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def euler_rates(x: np.ndarray, w_C: np.ndarray) -> np.ndarray:
    """[psi_y, psi_z, psi_x]' from w_C = psi_x' e_x + psi_z' A_x e_z + psi_y' A_x A_z e_y."""
    Ax, Az = elementary(0, x[5]), elementary(2, x[4])
    W = np.column_stack([Ax @ Az @ EY, Ax @ EZ, np.array([1.0, 0, 0])])
    return np.linalg.solve(W, w_C)


def deriv5(f: Callable[[float], np.ndarray], h: float) -> np.ndarray:
    """5-point central difference f'(0)."""
    return (f(-2 * h) - 8 * f(-h) + 8 * f(h) - f(2 * h)) / (12 * h)


def random_state(rng: np.random.Generator, vel: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    x = HOME + np.concatenate([rng.uniform(-0.03, 0.03, 3), rng.uniform(-0.06, 0.06, 3)])
    u = vel * np.concatenate([rng.uniform(-0.2, 0.2, 3), rng.uniform(-0.4, 0.4, 3)])
    return x, u


def random_inputs(mech: dict, rng: np.random.Generator) -> tuple[list, np.ndarray, np.ndarray]:
    Q = [rng.uniform(-5, 5, len(leg["joints"])) for leg in mech["legs"]]
    return Q, rng.uniform(-20, 20, 3), rng.uniform(-5, 5, 3)


def cut_point(leg: dict, fk: list) -> np.ndarray:
    R, o = fk[-1]
    return o + R @ leg["cut"]["l_L"]


def body_momenta(chain: list[dict], q: np.ndarray, qd: np.ndarray):
    """Per body: linear momentum, angular momentum about O_0, CoM (frame 0)."""
    fk = fs.forward_kinematics(chain, q)
    vel = fs.body_velocities(chain, q, qd)
    P, H, rG = [], [], []
    for j, jt in enumerate(chain, start=1):
        R, o = fk[j]
        v, w = vel[j - 1]
        rho = R @ jt["com"]
        vG = v + np.cross(w, rho)
        P.append(jt["m"] * vG)
        H.append(np.cross(o + rho, jt["m"] * vG) + R @ jt["I_com"] @ R.T @ w)
        rG.append(o + rho)
    return np.array(P), np.array(H), np.array(rG)


class Path:
    """First-order path through a solved state: q + t qd, qd + t qdd, x moves along u."""

    def __init__(self, mech: dict, x: np.ndarray, u: np.ndarray, out: dict):
        self.mech, self.out = mech, out
        self.r, self.R, self.u, self.ud = x[:3], alpha_C(x).T, u, out["udot"]

    def platform(self, t: float):
        """(r_C, R_C, v_C, w_C) at t."""
        return (self.r + t * self.u[:3], self.R @ rodrigues(t * self.u[3:]),
                self.u[:3] + t * self.ud[:3], self.u[3:] + t * self.ud[3:])

    def leg(self, k: int, t: float):
        o = self.out
        return o["p"][k] + t * o["pdot"][k], o["pdot"][k] + t * o["pddot"][k]


def mech_scale(mech: dict) -> float:
    return float(mech["platform"]["m"] + sum(b["m"] for leg in mech["legs"]
                                             for b in leg["bodies"])) * 10.0


# ---------------------------------------------------------------------------
# tests: leg dynamics and constraint terms (the reference's building blocks)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", MECHS)
def test_leg_mass_bias_match_featherstone(kind: str) -> None:
    """A_k and h_k (Newton-Euler projected) equal CRBA and RNEA(qdd = 0) of featherstone.py."""
    rng = np.random.default_rng(10)
    mech = MECHS[kind]()
    for leg in mech["legs"]:
        n = len(leg["joints"])
        q, qd = rng.uniform(-0.5, 0.5, n), rng.uniform(-1, 1, n)
        A, h = leg_mass_bias(leg, leg_kinematics(leg, q, qd, np.zeros(n)), G)
        ch = fs_chain(leg)
        A_ref, h_ref = fs.crba(ch, q), fs.rnea(ch, q, qd, np.zeros(n), G)
        assert record("leg A vs CRBA", np.max(np.abs(A - A_ref))) < 1e-12
        assert record("leg h vs RNEA", np.max(np.abs(h - h_ref))) < 1e-11


@pytest.mark.parametrize("kind", MECHS)
def test_cut_gamma_is_minus_Jdot_z(kind: str) -> None:
    """gamma = -(d/dt J) z, checked by differentiating J(q + t qd, R_C exp(t w)) z."""
    rng = np.random.default_rng(11)
    mech = MECHS[kind]()
    x, u = random_state(rng)
    R_C = alpha_C(x).T
    for leg in mech["legs"]:
        n = len(leg["joints"])
        q, qd = rng.uniform(-0.3, 0.3, n), rng.uniform(-1, 1, n)
        zero = np.zeros(n)

        def Jz(t: float) -> np.ndarray:
            kin = leg_kinematics(leg, q + t * qd, zero, zero)
            Jq, Ju = cut_jacobians(leg, kin, R_C @ rodrigues(t * u[3:]))
            return Jq @ qd + Ju @ u

        gam = cut_gamma(leg, leg_kinematics(leg, q, qd, zero), R_C, u[3:])
        assert record("gamma vs -FD(J) z", np.max(np.abs(gam + deriv5(Jz, 1e-3)))) < 1e-9


# ---------------------------------------------------------------------------
# tests: closure at position, velocity and acceleration level
# ---------------------------------------------------------------------------


def closure_velocity(leg: dict, chain: list, q, qd, r_C, R_C, v_C, w_C) -> np.ndarray:
    """Velocity-level closure residual from featherstone.py's point Jacobian."""
    fk = fs.forward_kinematics(chain, q)
    Jv, Jw = fs.point_jacobian(chain, q, len(chain), leg["cut"]["l_L"])
    res = Jv @ qd - v_C - R_C @ np.cross(w_C, leg["cut"]["l_C"])
    if leg["cut"]["m"] == 4:
        e1 = fk[-1][0] @ leg["cut"]["gamma_L"].T @ EY
        e2 = R_C @ leg["cut"]["gamma_C"].T @ EZ
        res = np.append(res, np.cross(e1, e2) @ (Jw @ qd - R_C @ w_C))
    return res


@pytest.mark.parametrize("kind", MECHS)
def test_closure_levels(kind: str) -> None:
    """phi = 0 (featherstone FK), phi' = 0 (its Jacobians), phi'' = 0 (FD of phi' in t)."""
    rng = np.random.default_rng(12)
    mech = MECHS[kind]()
    for _ in range(3):
        x, u = random_state(rng)
        Q, f_E, m_E = random_inputs(mech, rng)
        out = solve(mech, x, u, Q, G, f_E, m_E)
        path = Path(mech, x, u, out)
        r_C, R_C = x[:3], alpha_C(x).T
        for k, leg in enumerate(mech["legs"]):
            ch = fs_chain(leg)
            fk = fs.forward_kinematics(ch, out["p"][k])
            pos = cut_point(leg, fk) - r_C - R_C @ leg["cut"]["l_C"]
            if leg["cut"]["m"] == 4:
                e1 = fk[-1][0] @ leg["cut"]["gamma_L"].T @ EY
                pos = np.append(pos, e1 @ (R_C @ leg["cut"]["gamma_C"].T @ EZ))
            assert record("closure position", np.max(np.abs(pos))) < 1e-13

            def vres(t: float) -> np.ndarray:
                return closure_velocity(leg, ch, *path.leg(k, t), *path.platform(t))

            assert record("closure velocity", np.max(np.abs(vres(0.0)))) < 1e-13
            assert record("closure acceleration (FD)",
                          np.max(np.abs(deriv5(vres, 1e-3)))) < 1e-9


def test_initial_guess_and_errors() -> None:
    """p0 gives the same branch; flat and per-leg Q agree; unreachable pose -> ValueError."""
    rng = np.random.default_rng(13)
    mech = rus()
    x, u = random_state(rng)
    Q, f_E, m_E = random_inputs(mech, rng)
    a = solve(mech, x, u, Q, G, f_E, m_E)
    b = solve(mech, x, u, np.concatenate(Q), G, f_E, m_E,
              p0=[p + 1e-3 for p in a["p"]])
    assert np.allclose(np.concatenate(a["p"]), np.concatenate(b["p"]), atol=1e-14)
    assert np.allclose(a["udot"], b["udot"], atol=1e-10)
    with pytest.raises(ValueError):
        solve(mech, HOME + np.array([0, 0, 2.0, 0, 0, 0]), u, Q, G, f_E, m_E)


# ---------------------------------------------------------------------------
# tests: Newton-Euler for the platform, every joint, the whole mechanism
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", MECHS)
def test_platform_newton_euler(kind: str) -> None:
    """m a_C = m g + f_E + sum F_k; I w' + w x I w = m_E + sum l_C x F_k^C + M_k^C."""
    rng = np.random.default_rng(14)
    mech = MECHS[kind]()
    x, u = random_state(rng)
    Q, f_E, m_E = random_inputs(mech, rng)
    out = solve(mech, x, u, Q, G, f_E, m_E)
    m, I, aC = mech["platform"]["m"], mech["platform"]["I"], alpha_C(x)
    w, ud = u[3:], out["udot"]
    F = m * ud[:3] - m * G - f_E - out["F_on_C"].sum(0)
    Mo = I @ ud[3:] + np.cross(w, I @ w) - m_E
    for leg, Fk, Mk in zip(mech["legs"], out["F_on_C"], out["M_on_C"]):
        Mo -= np.cross(leg["cut"]["l_C"], aC @ Fk) + aC @ Mk
        if leg["cut"]["m"] == 3:
            assert np.all(Mk == 0.0)
        else:  # a universal joint transmits no moment about either of its axes
            e2 = aC.T @ leg["cut"]["gamma_C"].T @ EZ
            assert abs(Mk @ e2) < 1e-12 * (1 + np.linalg.norm(Mk))
    assert record("platform Newton", np.max(np.abs(F))) < 1e-10
    assert record("platform Euler", np.max(np.abs(Mo))) < 1e-10


def momentum_rates(mech: dict, path: Path, k: int, h: float = 1e-3):
    """(dP_i/dt, dH_i/dt about O_0, r_Gi) for the bodies of leg k by a 5-point stencil."""
    ch = fs_chain(mech["legs"][k])

    def mom(t: float) -> np.ndarray:
        P, H, _ = body_momenta(ch, *path.leg(k, t))
        return np.concatenate([P, H], axis=1)

    d = deriv5(mom, h)
    _, _, rG = body_momenta(ch, *path.leg(k, 0.0))
    return d[:, :3], d[:, 3:], rG


@pytest.mark.parametrize("kind", MECHS)
def test_every_joint_equation(kind: str) -> None:
    """The wrench body j-1 applies on body j (Newton-Euler of bodies j..n from momentum
    rates by FD, plus the cut reaction), projected on joint j's axis, equals Q_j."""
    rng = np.random.default_rng(15)
    mech = MECHS[kind]()
    x, u = random_state(rng)
    Q, f_E, m_E = random_inputs(mech, rng)
    out = solve(mech, x, u, Q, G, f_E, m_E)
    path = Path(mech, x, u, out)
    for k, leg in enumerate(mech["legs"]):
        ch = fs_chain(leg)
        dP, dH, rG = momentum_rates(mech, path, k)
        m = np.array([b["m"] for b in leg["bodies"]])
        fk = fs.forward_kinematics(ch, out["p"][k])
        P_cut = cut_point(leg, fk)
        for j in range(len(ch), 0, -1):
            sl = slice(j - 1, None)
            F = (dP[sl] - np.outer(m[sl], G)).sum(0) + out["F_on_C"][k]
            M = ((dH[sl] - np.cross(rG[sl], np.outer(m[sl], G))).sum(0)
                 + np.cross(P_cut, out["F_on_C"][k]) + out["M_on_C"][k])
            R, o = fk[j]
            z = R[:, "xyz".index(ch[j - 1]["axis"])]
            gen = z @ F if ch[j - 1]["type"] == "P" else z @ (M - np.cross(o, F))
            assert record("joint equations (FD momenta)", abs(gen - Q[k][j - 1])) < 1e-7


@pytest.mark.parametrize("kind", MECHS)
def test_whole_mechanism_momentum(kind: str) -> None:
    """Newton and Euler (about O_0) for the whole mechanism, the base being the only
    other contact:  dP/dt = sum m g + f_E - base_force,
    dH_O/dt = sum r_G x m g + r_C x f_E + R_C m_E - base_moment (rates by FD)."""
    rng = np.random.default_rng(16)
    mech = MECHS[kind]()
    for _ in range(2):
        x, u = random_state(rng)
        Q, f_E, m_E = random_inputs(mech, rng)
        out = solve(mech, x, u, Q, G, f_E, m_E)
        path = Path(mech, x, u, out)
        mC, IC = mech["platform"]["m"], mech["platform"]["I"]

        def plat_mom(t: float) -> np.ndarray:
            r, R, v, w = path.platform(t)
            return np.concatenate([mC * v, np.cross(r, mC * v) + R @ IC @ w])

        d = deriv5(plat_mom, 1e-3)
        dP, dH = d[:3], d[3:]
        F_ext = mC * G + f_E
        M_ext = np.cross(x[:3], mC * G + f_E) + alpha_C(x).T @ m_E
        for k, leg in enumerate(mech["legs"]):
            dPk, dHk, rG = momentum_rates(mech, path, k)
            m = np.array([b["m"] for b in leg["bodies"]])
            dP, dH = dP + dPk.sum(0), dH + dHk.sum(0)
            F_ext = F_ext + m.sum() * G
            M_ext = M_ext + np.cross(rG, np.outer(m, G)).sum(0)
        s = mech_scale(mech)
        e_f = np.max(np.abs(out["base_force"] - (F_ext - dP))) / s
        e_m = np.max(np.abs(out["base_moment"] - (M_ext - dH))) / s
        assert record("whole Newton (rel.)", e_f) < 1e-9
        assert record("whole Euler about O_0 (rel.)", e_m) < 1e-9


# ---------------------------------------------------------------------------
# tests: statics with massless legs
# ---------------------------------------------------------------------------


def test_statics_ups_two_force_members() -> None:
    """Massless UPS legs are two-force members: strut forces f_k from the platform's
    equilibrium alone (sum f_k n_k = -(m g + f_E), sum rho_k x f_k n_k = -R_C m_E),
    applied as stroke forces, give udot = 0, pddot = 0 and F_on_C = f_k n_k."""
    rng = np.random.default_rng(17)
    mech = ups(light=True)
    x, _ = random_state(rng)
    _, f_E, m_E = random_inputs(mech, rng)
    R_C = alpha_C(x).T
    m = mech["platform"]["m"]
    cols, ns = [], []
    for leg in mech["legs"]:
        rho = R_C @ leg["cut"]["l_C"]
        nk = x[:3] + rho - leg["joints"][0]["l"]
        nk = nk / np.linalg.norm(nk)
        ns.append(nk)
        cols.append(np.concatenate([nk, np.cross(rho, nk)]))
    f = np.linalg.solve(np.column_stack(cols), -np.concatenate([m * G + f_E, R_C @ m_E]))
    Q = [np.array([0.0, 0.0, fk]) for fk in f]
    out = solve(mech, x, np.zeros(6), Q, G, f_E, m_E)
    assert record("statics UPS udot", np.max(np.abs(out["udot"]))) < 1e-11
    assert record("statics UPS pddot", np.max(np.abs(np.concatenate(out["pddot"])))) < 1e-11
    assert record("statics UPS F_on_C", np.max(np.abs(out["F_on_C"] - f[:, None] * ns))) < 1e-9
    assert np.allclose(out["base_force"], m * G + f_E, atol=1e-9)


@pytest.mark.parametrize("kind", ["RUS", "SPU", "PUS"])
def test_statics_virtual_work(kind: str) -> None:
    """Massless legs, drive torques tau from virtual work with FD leg Jacobians
    (sum_k tau_k d p_k,drive/du + [m g + f_E; m_E] = 0) -> udot = 0, pddot = 0."""
    rng = np.random.default_rng(18)
    mech = MECHS[kind](light=True)
    x, _ = random_state(rng)
    _, f_E, m_E = random_inputs(mech, rng)
    m = mech["platform"]["m"]
    base = solve(mech, x, np.zeros(6), np.zeros(sum(len(l["joints"]) for l in mech["legs"])),
                 G, f_E, m_E)

    def drives(xx: np.ndarray) -> np.ndarray:
        R_C = alpha_C(xx).T
        return np.array([close_leg(leg, xx[:3], R_C, p)[leg["drive"]]
                         for leg, p in zip(mech["legs"], base["p"])])

    h = 1e-5
    dpdx = np.column_stack([(drives(x + h * e) - drives(x - h * e)) / (2 * h)
                            for e in np.eye(6)])
    dxdu = np.zeros((6, 6))
    dxdu[:3, :3] = np.eye(3)
    dxdu[3:, 3:] = np.column_stack([euler_rates(x, e) for e in np.eye(3)])
    Gm = (dpdx @ dxdu).T                                  # column k: d p_k,drive / du
    tau = np.linalg.solve(Gm, -np.concatenate([m * G + f_E, m_E]))
    Q = [np.eye(len(leg["joints"]))[leg["drive"]] * t for leg, t in zip(mech["legs"], tau)]
    out = solve(mech, x, np.zeros(6), Q, G, f_E, m_E)
    assert record(f"statics {kind} udot (FD Jacobian)", np.max(np.abs(out["udot"]))) < 1e-6
    assert record(f"statics {kind} pddot (FD Jacobian)",
                  np.max(np.abs(np.concatenate(out["pddot"])))) < 1e-6
    assert np.allclose(out["base_force"], m * G + f_E, atol=1e-6)


# ---------------------------------------------------------------------------
# tests: energy conservation
# ---------------------------------------------------------------------------


def spring_forces(mech: dict, p: list) -> tuple[list, float]:
    """Q = preload - k (q - q0) per joint and its potential 1/2 k x^2 - preload x."""
    Q, V = [], 0.0
    for leg, q in zip(mech["legs"], p):
        xq = q - np.array([law["q0"] for law in leg["laws"]])
        k = np.array([law["k"][0] for law in leg["laws"]])
        pre = np.array([law["preload"] for law in leg["laws"]])
        Q.append(pre - k * xq)
        V += float(np.sum(0.5 * k * xq ** 2 - pre * xq))
    return Q, V


def energy(mech: dict, x: np.ndarray, u: np.ndarray, p: list, pd: list) -> float:
    """T + V: platform, legs (featherstone energies), gravity, joint springs."""
    mC, IC = mech["platform"]["m"], mech["platform"]["I"]
    E = 0.5 * mC * u[:3] @ u[:3] + 0.5 * u[3:] @ IC @ u[3:] - mC * G @ x[:3]
    for leg, q, qd in zip(mech["legs"], p, pd):
        ch = fs_chain(leg)
        E += fs.kinetic_energy(ch, q, qd) + fs.potential_energy(ch, q, G)
    return E + spring_forces(mech, p)[1]


@pytest.mark.parametrize("kind", MECHS)
def test_energy_conservation(kind: str) -> None:
    """No damping: T + V (gravity + springs) constant along solve_ivp (rtol 1e-11)."""
    rng = np.random.default_rng(19)
    mech = MECHS[kind]()
    x0, u0 = random_state(rng, vel=2.0)
    cache = {"p": None}
    zero3 = np.zeros(3)

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        x, u = y[:6], y[6:]
        p = cache["p"] or [np.zeros(len(l["joints"])) for l in mech["legs"]]
        p = [close_leg(leg, x[:3], alpha_C(x).T, q) for leg, q in zip(mech["legs"], p)]
        out = solve(mech, x, u, spring_forces(mech, p)[0], G, zero3, zero3, p0=p)
        cache["p"] = out["p"]
        return np.concatenate([u[:3], euler_rates(x, u[3:]), out["udot"]])

    def total(y: np.ndarray) -> float:
        out = solve(mech, y[:6], y[6:], np.zeros(sum(len(l["joints"]) for l in mech["legs"])),
                    G, zero3, zero3, p0=cache["p"])
        return energy(mech, y[:6], y[6:], out["p"], out["pdot"])

    sol = solve_ivp(rhs, (0.0, 0.1), np.concatenate([x0, u0]), method="DOP853",
                    rtol=1e-11, atol=1e-12, dense_output=False, t_eval=np.linspace(0, 0.1, 6))
    assert sol.success
    E = np.array([total(y) for y in sol.y.T])
    T0 = 0.5 * mech["platform"]["m"] * u0[:3] @ u0[:3] + 0.5 * u0[3:] @ mech["platform"]["I"] @ u0[3:]
    drift = np.max(np.abs(E - E[0])) / T0
    assert np.ptp(sol.y[2]) > 1e-3                         # it did move
    assert record(f"energy drift {kind} (rel. to T0)", drift) < 1e-8


def test_zz_report_errors() -> None:
    """Print the largest errors seen (run with -s)."""
    for name, err in sorted(ERRORS.items()):
        print(f"{name:40s} {err:.2e}")
