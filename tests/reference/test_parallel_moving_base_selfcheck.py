"""Self-checks of the moving-base / free-base reference (tests/reference/parallel_moving_base.py).

Bundled mechanisms (numeric dicts by tests/platforms.py), 20 random states each, with non-zero
base motion.  Derivatives used as checks are 5-point central differences along the state
direction (positions moving with the velocities, velocities with the accelerations), whose
first derivative at t = 0 is exact; momenta of the legs are checked against featherstone.py's
kinematics.  Run with -s to see the worst errors (test_zz_report_errors).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from tests import platforms as P

from . import featherstone as fs
from . import parallel_lagrange as pl
from .parallel_moving_base import (
    base_momentum,
    momentum,
    potential,
    solve_free_base,
    solve_moving_base,
)

MECHS = ["gough_stewart_docking", "hunt_rus_docking", "hexapod_spu", "hexapod_pus"]
NSTATES = 20
EY, EZ = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
ERRORS: dict[str, float] = {}


def record(name: str, err: float) -> float:
    ERRORS[name] = max(ERRORS.get(name, 0.0), float(err))
    return float(err)


def rel(a: Any, b: Any) -> float:
    """max |a - b| / max |b|."""
    a, b = np.concatenate([np.ravel(v) for v in a]), np.concatenate([np.ravel(v) for v in b])
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def resid(res: np.ndarray, *terms: np.ndarray) -> float:
    """max |res| relative to the largest of the terms whose sum should vanish."""
    return float(np.max(np.abs(res)) / max(max(np.max(np.abs(t)) for t in terms), 1e-300))


# ---------------------------------------------------------------------------
# helpers (independent of the reference's internals)
# ---------------------------------------------------------------------------


def rodrigues(phi: np.ndarray) -> np.ndarray:
    """exp(skew(phi))."""
    th = np.linalg.norm(phi)
    if th < 1e-300:
        return np.eye(3)
    K = pl.skew(phi / th)
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def euler_rates(x: np.ndarray, w_C: np.ndarray) -> np.ndarray:
    """[psi_y, psi_z, psi_x]' from w_C = psi_x' e_x + psi_z' A_x e_z + psi_y' A_x A_z e_y."""
    Ax, Az = pl.elementary(0, x[5]), pl.elementary(2, x[4])
    W = np.column_stack([Ax @ Az @ EY, Ax @ EZ, np.array([1.0, 0, 0])])
    return np.linalg.solve(W, w_C)


def deriv5(f: Callable[[float], np.ndarray], h: float) -> np.ndarray:
    """5-point central difference f'(0) (error O(h^4))."""
    return (f(-2 * h) - 8 * f(-h) + 8 * f(h) - f(2 * h)) / (12 * h)


def deriv(f: Callable[[float], np.ndarray], h: float = 1e-3) -> np.ndarray:
    """f'(0): 5-point stencils at h and h/2, Richardson-extrapolated (error O(h^6)); the
    Hunt RUS legs' kinematics vary fast enough for the plain stencil to sit at ~1e-7."""
    return (16.0 * deriv5(f, 0.5 * h) - deriv5(f, h)) / 15.0


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    Qm, Rm = np.linalg.qr(rng.standard_normal((3, 3)))
    Qm = Qm @ np.diag(np.sign(np.diag(Rm)))
    return Qm if np.linalg.det(Qm) > 0 else -Qm


class Case:
    """One random state: pose, velocity, law forces (with random drives), loads, base motion,
    a base body and its loads."""

    def __init__(self, num: dict, S: dict, i: int, rng: np.random.Generator):
        self.x, self.u, self.g = S["x"][i], S["u"][i], S["g"][i]
        self.fE, self.mE = S["fE"][i], S["mE"][i]
        m0 = momentum(num, self.x, self.u, np.zeros(3), np.zeros(3))
        self.Q = P.law_forces(num, m0["q"], m0["qd"], S["F"][i])
        self.a_O = rng.normal(0.0, 3.0, 3)
        self.V_O = rng.normal(0.0, 2.0, 3)
        self.Omega = rng.normal(0.0, 0.5, 3)
        self.Omega_dot = rng.normal(0.0, 1.0, 3)
        mb = rng.uniform(300.0, 1500.0)
        Rr = random_rotation(rng)
        self.base = {"m": mb, "c": rng.normal(0.0, 0.3, 3) - np.array([0, 0, 0.5]),
                     "I": Rr @ np.diag(rng.uniform(0.2, 1.0, 3) * 0.5 * mb) @ Rr.T}
        self.F_base = rng.normal(0.0, 500.0, 3)
        self.M_base = rng.normal(0.0, 200.0, 3)

    def xdot(self) -> np.ndarray:
        """Pose rate [v_C, Euler-angle rates] of the state."""
        return np.concatenate([self.u[:3], euler_rates(self.x, self.u[3:])])


@pytest.fixture(scope="module", params=MECHS)
def mech(request) -> tuple[str, dict, list[Case]]:
    _, num = P.bundled(request.param)
    S = P.random_states(num, NSTATES, seed=MECHS.index(request.param) + 101)
    rng = np.random.default_rng(MECHS.index(request.param) + 7)
    return request.param, num, [Case(num, S, i, rng) for i in range(NSTATES)]


def moving(num: dict, c: Case, a_O=None, Omega=None, Omega_dot=None, g=None) -> dict:
    z = np.zeros(3)
    return solve_moving_base(num, c.x, c.u, c.Q, c.g if g is None else g, c.fE, c.mE,
                             z if a_O is None else a_O, z if Omega is None else Omega,
                             z if Omega_dot is None else Omega_dot)


def free(num: dict, c: Case, base=None, g=None, F_base=None, M_base=None, Q=None,
         fE=None, mE=None) -> dict:
    return solve_free_base(num, c.base if base is None else base, c.x, c.u,
                           c.Q if Q is None else Q, c.g if g is None else g,
                           c.fE if fE is None else fE, c.mE if mE is None else mE, c.Omega,
                           c.F_base if F_base is None else F_base,
                           c.M_base if M_base is None else M_base)


KEYS = ("udot", "qdd", "base_force", "base_moment", "F_on_C", "M_on_C")


def compare(a: dict, b: dict, label: str, tol: float, keys=KEYS, bkeys=None) -> None:
    for ka, kb in zip(keys, bkeys or keys):
        va, vb = a[ka], b[kb]
        if ka == "M_on_C" and not np.any(vb):
            assert np.all(va == 0.0)
            continue
        assert record(f"{label}: {ka}", rel([va] if ka != "qdd" else va,
                                            [vb] if ka != "qdd" else vb)) < tol


# ---------------------------------------------------------------------------
# 1. limits: fixed base, equivalence principle
# ---------------------------------------------------------------------------


def test_fixed_base_limit(mech) -> None:
    """a_O = Omega = Omega_dot = 0 reproduces parallel_lagrange.solve (different assembly:
    Kane projection of every body incl. C vs the leg-wise A, h and C's own equations)."""
    name, num, cases = mech
    for c in cases:
        ref = pl.solve(num, c.x, c.u, c.Q, c.g, c.fE, c.mE)
        out = moving(num, c)
        compare(out, ref, "fixed base vs parallel_lagrange", 1e-12,
                bkeys=("udot", "pddot", "base_force", "base_moment", "F_on_C", "M_on_C"))


def test_equivalence_principle(mech) -> None:
    """Prescribed: a constant a_O (Omega = Omega_dot = 0) is gravity g - a_O on a fixed base.
    Free base: uniform gravity changes nothing but a_O (by exactly g): free fall."""
    name, num, cases = mech
    for c in cases:
        ref = pl.solve(num, c.x, c.u, c.Q, c.g - c.a_O, c.fE, c.mE)
        out = moving(num, c, a_O=c.a_O)
        compare(out, ref, "a_O vs g - a_O (parallel_lagrange)", 1e-12,
                bkeys=("udot", "pddot", "base_force", "base_moment", "F_on_C", "M_on_C"))
        f0, fg = free(num, c, g=np.zeros(3)), free(num, c)
        compare(fg, f0, "free base: g vs no g", 1e-12, keys=KEYS + ("Omega_dot",))
        assert record("free base: a_O(g) - g vs a_O(0)",
                      rel([fg["a_O"] - c.g], [f0["a_O"]])) < 1e-12


def test_heavy_base_limit(mech) -> None:
    """A free base with mass and inertia x s, loaded to be in equilibrium on its own at
    a_O = Omega_dot = 0 (F_base, M_base cancel gravity and its gyroscopic / centripetal terms)
    plus O(1) loads: a_O, Omega_dot = O(1/s) and the mechanism -> the prescribed base with
    a_O = Omega_dot = 0 (and, at Omega = 0, parallel_lagrange)."""
    name, num, cases = mech
    for c in cases[:8]:
        errs = []
        for s in (1e6, 1e9):
            mb, cb, Ib = s * c.base["m"], c.base["c"], s * c.base["I"]
            for Om in (c.Omega, np.zeros(3)):
                Ab = np.cross(Om, np.cross(Om, cb))
                F_b = mb * (Ab - c.g) + c.F_base
                M_b = np.cross(cb, mb * (Ab - c.g)) + np.cross(Om, Ib @ Om) + c.M_base
                base = {"m": mb, "c": cb, "I": Ib}
                out = solve_free_base(num, base, c.x, c.u, c.Q, c.g, c.fE, c.mE, Om, F_b, M_b)
                if np.any(Om):
                    ref = moving(num, c, Omega=Om)
                else:
                    ref = pl.solve(num, c.x, c.u, c.Q, c.g, c.fE, c.mE)
                    ref["qdd"] = ref["pddot"]
                e = max(rel([out["udot"]], [ref["udot"]]), rel(out["qdd"], ref["qdd"]),
                        rel([out["base_force"], out["base_moment"]],
                            [ref["base_force"], ref["base_moment"]]))
                errs.append(e)
                record(f"heavy base x{s:.0e}: mechanism vs fixed base", e)
                acc = np.max(np.abs(np.concatenate([out["a_O"], out["Omega_dot"]])))
                assert record(f"heavy base x{s:.0e}: |a_O|, |Omega_dot| * s", acc * s) < 1e4
        assert max(errs[2:]) < 1e-6
        assert max(errs[:2]) / max(errs[2:]) > 300.0       # error ~ 1/s


# ---------------------------------------------------------------------------
# 2. prescribed vs free base; the base's own Newton-Euler equations
# ---------------------------------------------------------------------------


def test_free_base_consistency(mech) -> None:
    """solve_free_base's a_O, Omega_dot fed to solve_moving_base give the same mechanism
    motion and base wrench, and the base's Newton-Euler equations hold with that wrench:
    m_b A_Gb = m_b g + F_base + base_force,
    c x m_b A_Gb + I_b Omega_dot + Omega x I_b Omega = c x m_b g + M_base + base_moment."""
    name, num, cases = mech
    for c in cases:
        out = free(num, c)
        ref = moving(num, c, a_O=out["a_O"], Omega=c.Omega, Omega_dot=out["Omega_dot"])
        compare(out, ref, "free vs prescribed base", 1e-12)
        mb, cb, Ib = c.base["m"], c.base["c"], c.base["I"]
        A = out["a_O"] + np.cross(out["Omega_dot"], cb) + np.cross(c.Omega, np.cross(c.Omega, cb))
        rF = mb * A - mb * c.g - c.F_base - out["base_force"]
        assert record("base Newton", resid(rF, mb * A, mb * c.g, c.F_base,
                                           out["base_force"])) < 1e-12
        lhs = np.cross(cb, mb * A) + Ib @ out["Omega_dot"] + np.cross(c.Omega, Ib @ c.Omega)
        rhs = np.cross(cb, mb * c.g) + c.M_base + out["base_moment"]
        assert record("base Euler about O_0", resid(lhs - rhs, lhs, rhs, out["base_moment"],
                                                    c.M_base)) < 1e-12


# ---------------------------------------------------------------------------
# 3. momentum() checked against featherstone kinematics
# ---------------------------------------------------------------------------


def fs_chain(leg: dict) -> list[dict]:
    out = []
    for jt, b in zip(leg["joints"], leg["bodies"]):
        m, d = float(b["m"]), np.asarray(b["d"], float)
        out.append({"type": jt["kind"], "axis": "xyz"[jt["axis"]], "l": jt["l"],
                    "gamma": jt["gamma"], "m": m, "com": d,
                    "I_com": b["I"] - m * ((d @ d) * np.eye(3) - np.outer(d, d))})
    return out


def test_momentum_vs_featherstone(mech) -> None:
    """P, H_O, T of momentum() from featherstone.py's forward kinematics and body velocities
    plus the transport velocity V_O + Omega x r (and W = Omega + w)."""
    name, num, cases = mech
    for c in cases[:5]:
        out = momentum(num, c.x, c.u, c.V_O, c.Omega, base=c.base)
        R_C = pl.alpha_C(c.x).T
        items = [(num["platform"]["m"], c.x[:3], R_C @ num["platform"]["I"] @ R_C.T,
                  c.u[:3], R_C @ c.u[3:])]
        for leg, q, qd in zip(num["legs"], out["q"], out["qd"]):
            ch = fs_chain(leg)
            fk, vel = fs.forward_kinematics(ch, q), fs.body_velocities(ch, q, qd)
            for j, jt in enumerate(ch, start=1):
                R, o = fk[j]
                v, w = vel[j - 1]
                rho = R @ jt["com"]
                items.append((jt["m"], o + rho, R @ jt["I_com"] @ R.T, v + np.cross(w, rho), w))
        items.append((c.base["m"], c.base["c"], c.base["I"], np.zeros(3), np.zeros(3)))
        Pm, H, T = np.zeros(3), np.zeros(3), 0.0
        for m, r, I, v, w in items:
            V, W = c.V_O + np.cross(c.Omega, r) + v, c.Omega + w
            Pm, H = Pm + m * V, H + np.cross(r, m * V) + I @ W
            T += 0.5 * m * V @ V + 0.5 * W @ I @ W
        assert record("momentum P vs featherstone", rel([out["P"]], [Pm])) < 1e-13
        assert record("momentum H vs featherstone", rel([out["H"]], [H])) < 1e-13
        assert record("momentum T vs featherstone", abs(out["T"] - T) / T) < 1e-13


# ---------------------------------------------------------------------------
# 4. momentum balance and energy rates along the motion (finite differences)
# ---------------------------------------------------------------------------


class FreePath:
    """First-order path of the free-base system through a solved state.  Inertial frame =
    frame 0 at t = 0: R0(t) = exp(t Omega), O(t) = t V_O, inertial velocity of O: V_O + t a_O,
    Omega(t) = Omega + t Omega_dot; mechanism x + t xdot, u + t udot."""

    def __init__(self, num: dict, c: Case, out: dict, joint_inertia: bool = False):
        self.num, self.c, self.out, self.xd = num, c, out, c.xdot()
        self.jin = joint_inertia

    def at(self, t: float) -> tuple[dict, dict, np.ndarray]:
        c, out = self.c, self.out
        R0 = rodrigues(t * c.Omega)
        V_O = R0.T @ (c.V_O + t * out["a_O"])
        Om = c.Omega + t * out["Omega_dot"]
        mm = momentum(self.num, c.x + t * self.xd, c.u + t * out["udot"], V_O, Om,
                      q0=out["q"], joint_inertia=self.jin)
        mbase = base_momentum(c.base, V_O, Om)
        return mm, mbase, R0

    def inertial_momentum(self, t: float) -> np.ndarray:
        mm, mbase, R0 = self.at(t)
        Pin = R0 @ (mm["P"] + mbase["P"])
        H = np.cross(t * self.c.V_O, Pin) + R0 @ (mm["H"] + mbase["H"])
        return np.concatenate([Pin, H])

    def kinetic_energy(self, t: float) -> np.ndarray:
        mm, mbase, _ = self.at(t)
        return np.array([mm["T"] + mbase["T"]])


@pytest.mark.parametrize("loads", ["none", "all"])
def test_momentum_balance_free_base(mech, loads: str) -> None:
    """d/dt (total inertial momentum of legs + C + base) = external wrench:
    'none': no gravity, no loads on C, zero joint forces -> (F_base, M_base about O_0);
    'all': gravity on every body, f_E, m_E, joint forces (internal) ->
    F_base + m_tot g + f_E and M_base + sum r_G x m g + r_C x f_E + R_C m_E.
    The rates by a 5-point stencil along the free-base solution's accelerations."""
    name, num, cases = mech
    z3 = np.zeros(3)
    for c in cases:
        if loads == "none":
            g, fE, mE = z3, z3, z3
            Q = [np.zeros(len(leg["joints"])) for leg in num["legs"]]
        else:
            g, fE, mE, Q = c.g, c.fE, c.mE, c.Q
        out = free(num, c, g=g, fE=fE, mE=mE, Q=Q)
        d = deriv(FreePath(num, c, out).inertial_momentum)
        mm = momentum(num, c.x, c.u, c.V_O, c.Omega, q0=out["q"])
        mb, cb = c.base["m"], c.base["c"]
        R_C = pl.alpha_C(c.x).T
        F = c.F_base + (mm["m"] + mb) * g + fE
        M = (c.M_base + np.cross(mm["mr"] + mb * cb, g) + np.cross(c.x[:3], fE) + R_C @ mE)
        assert record(f"dP/dt = F_ext (FD, loads {loads})", resid(d[:3] - F, d[:3], F,
                                                                  c.F_base)) < 1e-8
        assert record(f"dH/dt = M_ext (FD, loads {loads})", resid(d[3:] - M, d[3:], M,
                                                                  c.M_base)) < 1e-8


def power_on_C_and_Q(num: dict, c: Case, V_O: np.ndarray, out: dict, P_mech: np.ndarray,
                     g: np.ndarray) -> float:
    """Power of gravity (sum m g . V_G = g . P), f_E, m_E and the joint forces."""
    V_C = V_O + np.cross(c.Omega, c.x[:3]) + c.u[:3]
    W_C = pl.alpha_C(c.x) @ c.Omega + c.u[3:]
    return float(g @ P_mech + c.fE @ V_C + c.mE @ W_C
                 + np.concatenate(c.Q) @ np.concatenate(out["qd"]))


@pytest.mark.parametrize("jin", [False, True])
def test_energy_rate_prescribed_base(mech, jin: bool) -> None:
    """Prescribed base motion: d/dt T_abs(mechanism) = power of gravity, f_E, m_E, the joint
    forces (Q . qd) and of the base: - base_force . V_O - base_moment . Omega (the base is
    rigid; the joint-1 pairs' own power is their Q_1 qd_1).  T by momentum(), rate by FD.
    jin: with the laws' reflected joint inertias (in the equations and in T)."""
    name, num, cases = mech
    for c in cases:
        out = solve_moving_base(num, c.x, c.u, c.Q, c.g, c.fE, c.mE, c.a_O, c.Omega,
                                c.Omega_dot, joint_inertia=jin)
        xd = c.xdot()

        def T(t: float) -> np.ndarray:
            V_O = rodrigues(t * c.Omega).T @ (c.V_O + t * c.a_O)
            mm = momentum(num, c.x + t * xd, c.u + t * out["udot"], V_O,
                          c.Omega + t * c.Omega_dot, q0=out["q"], joint_inertia=jin)
            return np.array([mm["T"]])

        Tdot = deriv(T)[0]
        mm = momentum(num, c.x, c.u, c.V_O, c.Omega, q0=out["q"])
        Pw = power_on_C_and_Q(num, c, c.V_O, out, mm["P"], c.g)
        Pbase = -out["base_force"] @ c.V_O - out["base_moment"] @ c.Omega
        terms = [abs(Tdot), abs(Pw), abs(Pbase), abs(c.fE @ c.V_O)]
        assert record(f"energy rate, prescribed base (FD, joint inertia {jin})",
                      abs(Tdot - Pw - Pbase) / max(terms)) < 1e-8


@pytest.mark.parametrize("jin", [False, True])
def test_energy_rate_free_base(mech, jin: bool) -> None:
    """Free base: d/dt (T_mech + T_base) = F_base . V_O + M_base . Omega + g . P_tot
    + f_E . V_C + m_E . W_C + Q . qd (cut joints and joint 1 pairs are ideal)."""
    name, num, cases = mech
    for c in cases:
        out = solve_free_base(num, c.base, c.x, c.u, c.Q, c.g, c.fE, c.mE, c.Omega, c.F_base,
                              c.M_base, joint_inertia=jin)
        Tdot = deriv(FreePath(num, c, out, jin).kinetic_energy)[0]
        mm = momentum(num, c.x, c.u, c.V_O, c.Omega, q0=out["q"])
        Pb = base_momentum(c.base, c.V_O, c.Omega)["P"]
        Pw = power_on_C_and_Q(num, c, c.V_O, out, mm["P"] + Pb, c.g)
        Pbase = c.F_base @ c.V_O + c.M_base @ c.Omega
        assert record(f"energy rate, free base (FD, joint inertia {jin})",
                      abs(Tdot - Pw - Pbase) / max(abs(Tdot), abs(Pw), abs(Pbase))) < 1e-8


def test_potential_rate(mech) -> None:
    """d/dt V (relative motion) = -(spring part of the laws) . qd - g . P_rel."""
    name, num, cases = mech
    for c in cases[:5]:
        xd = c.xdot()
        pot = potential(num, c.x, c.g)
        Vdot = deriv(lambda t: np.array([potential(num, c.x + t * xd, c.g, q0=pot["q"])
                                          ["total"]]))[0]
        mm = momentum(num, c.x, c.u, np.zeros(3), np.zeros(3), q0=pot["q"])
        zero = [np.zeros(len(leg["joints"])) for leg in num["legs"]]
        Qs = P.law_forces(num, mm["q"], zero, np.zeros(len(num["legs"])))
        ref = -np.concatenate(Qs) @ np.concatenate(mm["qd"]) - c.g @ mm["P"]
        assert record("potential rate (FD)", abs(Vdot - ref) / max(abs(ref), 1e-300)) < 1e-8


def test_zz_report_errors() -> None:
    """Print the largest errors seen (run with -s)."""
    for name, err in sorted(ERRORS.items()):
        print(f"{name:60s} {err:.2e}")
