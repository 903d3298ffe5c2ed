"""Self-checks of the independent Featherstone reference (tests/reference/featherstone.py)."""

from __future__ import annotations

import numpy as np
import pytest

from .featherstone import (
    aba,
    body_velocities,
    crba,
    forward_kinematics,
    kinetic_energy,
    point_jacobian,
    potential_energy,
    rnea,
)

G = np.array([0.0, 0.0, -9.81])


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    Qm, Rm = np.linalg.qr(rng.standard_normal((3, 3)))
    Qm = Qm @ np.diag(np.sign(np.diag(Rm)))
    if np.linalg.det(Qm) < 0:
        Qm[:, 0] = -Qm[:, 0]
    return Qm


def random_inertia(rng: np.random.Generator) -> np.ndarray:
    Rm = random_rotation(rng)
    return Rm @ np.diag(rng.uniform(0.02, 0.3, 3)) @ Rm.T


def random_chain(
    rng: np.random.Generator, n: int, allow_massless: bool = True
) -> list[dict]:
    """Random chain; massless bodies (m=0, I=0) only at non-terminal positions."""
    chain = []
    for j in range(n):
        massless = allow_massless and j < n - 1 and rng.random() < 0.3
        chain.append(
            {
                "type": str(rng.choice(["R", "P"])),
                "axis": str(rng.choice(["x", "y", "z"])),
                "l": rng.uniform(-0.5, 0.5, 3),
                "gamma": random_rotation(rng),
                "m": 0.0 if massless else float(rng.uniform(0.5, 2.0)),
                "com": rng.uniform(-0.3, 0.3, 3),
                "I_com": np.zeros((3, 3)) if massless else random_inertia(rng),
            }
        )
    return chain


def well_conditioned_chains(seed: int, count_per_n: int = 3, allow_massless: bool = True):
    """Yield (chain, q) for N = 1..8 with cond(A) < 1e7 (resampling otherwise)."""
    rng = np.random.default_rng(seed)
    for n in range(1, 9):
        made = 0
        while made < count_per_n:
            chain = random_chain(rng, n, allow_massless)
            q = rng.uniform(-np.pi, np.pi, n)
            if np.linalg.cond(crba(chain, q)) < 1e7:
                made += 1
                yield chain, q, rng


def two_link(m1, m2, l1, lc1, lc2, I1, I2):
    def body(l, m, lc, Izz):
        return {
            "type": "R",
            "axis": "z",
            "l": np.array([l, 0.0, 0.0]),
            "gamma": np.eye(3),
            "m": m,
            "com": np.array([lc, 0.0, 0.0]),
            "I_com": np.diag([0.0, 0.0, Izz]),
        }

    return [body(0.0, m1, lc1, I1), body(l1, m2, lc2, I2)]


# ---------------------------------------------------------------------------
# analytic cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_simple_pendulum(axis: str) -> None:
    m, L, g0 = 1.7, 0.8, 9.81
    # pendulum rotating about the base `axis`; arm along the next axis, gravity
    # along minus the third axis (cyclic), so angle q measured from the arm axis.
    k = "xyz".index(axis)
    e = np.eye(3)
    arm, up = e[(k + 1) % 3], e[(k + 2) % 3]
    chain = [
        {"type": "R", "axis": axis, "l": np.zeros(3), "gamma": np.eye(3),
         "m": m, "com": L * arm, "I_com": np.zeros((3, 3))}
    ]
    g = -g0 * up
    for q in np.linspace(-3, 3, 7):
        assert np.allclose(crba(chain, [q]), [[m * L**2]], rtol=1e-14)
        # position of mass: L (cos q arm + sin q up); V = m g0 L sin q
        tau_g = m * g0 * L * np.cos(q)
        assert np.allclose(rnea(chain, [q], [0.0], [0.0], g), [tau_g], atol=1e-12)
        assert np.isclose(potential_energy(chain, [q], g), m * g0 * L * np.sin(q))
        qd, qdd = 1.3, -0.4
        assert np.allclose(rnea(chain, [q], [qd], [qdd], g), [m * L**2 * qdd + tau_g])
        assert np.isclose(kinetic_energy(chain, [q], [qd]), 0.5 * m * L**2 * qd**2)
        assert np.allclose(aba(chain, [q], [qd], [0.0], g), [-tau_g / (m * L**2)])


def test_prismatic_mass() -> None:
    # single prismatic joint along the joint-frame x axis, joint frame rotated
    # so that x_joint = z_base: pure lifting against gravity
    gamma = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    chain = [{"type": "P", "axis": "x", "l": [0.1, 0.2, 0.3], "gamma": gamma,
              "m": 2.0, "com": [0.3, -0.2, 0.1], "I_com": np.diag([0.1, 0.2, 0.3])}]
    R, p = forward_kinematics(chain, [0.5])[1]
    assert np.allclose(p, [0.1, 0.2, 0.8])
    assert np.allclose(R, gamma.T)
    assert np.allclose(crba(chain, [0.5]), [[2.0]])
    assert np.allclose(rnea(chain, [0.5], [1.0], [0.7], G), [2.0 * (0.7 + 9.81)])


def test_two_link_planar_arm() -> None:
    m1, m2, l1, lc1, lc2, I1, I2, g0 = 1.3, 0.9, 0.7, 0.35, 0.4, 0.05, 0.03, 9.81
    chain = two_link(m1, m2, l1, lc1, lc2, I1, I2)
    g = np.array([0.0, -g0, 0.0])
    rng = np.random.default_rng(0)
    for _ in range(10):
        q1, q2 = rng.uniform(-np.pi, np.pi, 2)
        qd1, qd2 = rng.uniform(-2, 2, 2)
        c2, s2 = np.cos(q2), np.sin(q2)
        A = np.array(
            [
                [m1 * lc1**2 + I1 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2) + I2,
                 m2 * (lc2**2 + l1 * lc2 * c2) + I2],
                [m2 * (lc2**2 + l1 * lc2 * c2) + I2, m2 * lc2**2 + I2],
            ]
        )
        hc = m2 * l1 * lc2 * s2
        cor = np.array([-hc * (2 * qd1 * qd2 + qd2**2), hc * qd1**2])
        grav = np.array(
            [(m1 * lc1 + m2 * l1) * g0 * np.cos(q1) + m2 * lc2 * g0 * np.cos(q1 + q2),
             m2 * lc2 * g0 * np.cos(q1 + q2)]
        )
        q, qd = np.array([q1, q2]), np.array([qd1, qd2])
        assert np.allclose(crba(chain, q), A, rtol=1e-13, atol=1e-13)
        assert np.allclose(rnea(chain, q, qd, np.zeros(2), np.zeros(3)), cor, atol=1e-12)
        assert np.allclose(rnea(chain, q, np.zeros(2), np.zeros(2), g), grav, atol=1e-12)
        qdd = rng.uniform(-3, 3, 2)
        assert np.allclose(rnea(chain, q, qd, qdd, g), A @ qdd + cor + grav, atol=1e-12)
        # end point kinematics
        (_, p2), = forward_kinematics(chain, q)[2:]
        assert np.allclose(p2, [l1 * np.cos(q1), l1 * np.sin(q1), 0.0])
        Jv, _ = point_jacobian(chain, q, 2, [lc2, 0, 0])
        J = np.array([[-l1 * np.sin(q1) - lc2 * np.sin(q1 + q2), -lc2 * np.sin(q1 + q2)],
                      [l1 * np.cos(q1) + lc2 * np.cos(q1 + q2), lc2 * np.cos(q1 + q2)],
                      [0.0, 0.0]])
        assert np.allclose(Jv, J, atol=1e-14)


# ---------------------------------------------------------------------------
# random chains
# ---------------------------------------------------------------------------


def test_random_aba_inverts_rnea() -> None:
    for chain, q, rng in well_conditioned_chains(1):
        n = len(chain)
        qd, qdd = rng.uniform(-2, 2, n), rng.uniform(-3, 3, n)
        Q = rnea(chain, q, qd, qdd, G)
        qdd2 = aba(chain, q, qd, Q, G)
        assert np.linalg.norm(qdd2 - qdd) <= 1e-10 * max(np.linalg.norm(qdd), 1.0)
        # and the other way round
        Q2 = rng.uniform(-5, 5, n)
        assert np.allclose(rnea(chain, q, qd, aba(chain, q, qd, Q2, G), G), Q2,
                           rtol=1e-9, atol=1e-9)


def test_random_crba_columns_equal_rnea() -> None:
    for chain, q, rng in well_conditioned_chains(2):
        n = len(chain)
        A = crba(chain, q)
        cols = np.column_stack(
            [rnea(chain, q, np.zeros(n), np.eye(n)[i], np.zeros(3)) for i in range(n)]
        )
        assert np.allclose(A, cols, rtol=1e-12, atol=1e-12)
        assert np.allclose(A, A.T, rtol=0, atol=1e-12)
        # ABA agrees with solving the CRBA/RNEA system
        qd, Q = rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
        h = rnea(chain, q, qd, np.zeros(n), G)
        assert np.allclose(aba(chain, q, qd, Q, G), np.linalg.solve(A, Q - h),
                           rtol=1e-9, atol=1e-9)


def test_random_kinetic_energy_matches_mass_matrix() -> None:
    for chain, q, rng in well_conditioned_chains(3):
        qd = rng.uniform(-2, 2, len(chain))
        T = kinetic_energy(chain, q, qd)
        assert np.isclose(0.5 * qd @ crba(chain, q) @ qd, T, rtol=1e-12, atol=1e-14)


def test_random_mass_matrix_spd_for_positive_masses() -> None:
    for chain, q, _ in well_conditioned_chains(4, allow_massless=False):
        A = crba(chain, q)
        assert np.allclose(A, A.T, rtol=0, atol=1e-12)
        np.linalg.cholesky(A)  # raises if not positive definite
        assert np.min(np.linalg.eigvalsh(A)) > 0


def _vee(W: np.ndarray) -> np.ndarray:
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


def test_random_jacobian_matches_finite_differences() -> None:
    h = 1e-6
    for chain, q, rng in well_conditioned_chains(5, count_per_n=2):
        n = len(chain)
        qd = rng.uniform(-2, 2, n)
        vel = body_velocities(chain, q, qd)
        fk0 = forward_kinematics(chain, q)
        for body in range(n + 1):
            pt = rng.uniform(-0.5, 0.5, 3)
            Jv, Jw = point_jacobian(chain, q, body, pt)
            Jv_fd = np.zeros((3, n))
            Jw_fd = np.zeros((3, n))
            for i in range(n):
                dq = h * np.eye(n)[i]
                Rp, pp = forward_kinematics(chain, q + dq)[body]
                Rm, pm = forward_kinematics(chain, q - dq)[body]
                Jv_fd[:, i] = ((pp + Rp @ pt) - (pm + Rm @ pt)) / (2 * h)
                Jw_fd[:, i] = _vee((Rp - Rm) / (2 * h) @ fk0[body][0].T)
            scale = max(1.0, np.abs(Jv).max(), np.abs(Jw).max())
            assert np.allclose(Jv, Jv_fd, rtol=0, atol=1e-6 * scale)
            assert np.allclose(Jw, Jw_fd, rtol=0, atol=1e-6 * scale)
            if body > 0:
                # body velocities agree with the Jacobian of the body origin
                Jv0, Jw0 = point_jacobian(chain, q, body, np.zeros(3))
                v, w = vel[body - 1]
                assert np.allclose(v, Jv0 @ qd, atol=1e-12)
                assert np.allclose(w, Jw0 @ qd, atol=1e-12)


def test_random_power_balance() -> None:
    """d(KE+PE)/dt == Q . qd.

    dE/ds at s = 0 along (q + s qd, qd + s qdd) equals dE/dt, since it only
    involves (qd, qdd); it is taken by a 5-point central stencil (error O(h^4)).
    """
    h = 1e-3
    for chain, q, rng in well_conditioned_chains(6, count_per_n=2):
        n = len(chain)
        qd, Q = rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
        qdd = aba(chain, q, qd, Q, G)

        def energy(s: float) -> float:
            qs, qds = q + s * qd, qd + s * qdd
            return kinetic_energy(chain, qs, qds) + potential_energy(chain, qs, G)

        dE = (8 * (energy(h) - energy(-h)) - (energy(2 * h) - energy(-2 * h))) / (12 * h)
        P = Q @ qd
        scale = max(1.0, abs(P), kinetic_energy(chain, q, qd))
        assert abs(dE - P) <= 1e-6 * scale


def test_random_energy_conservation_solve_ivp() -> None:
    solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp
    rng = np.random.default_rng(7)
    for n in (1, 3, 5, 8):
        while True:
            chain = random_chain(rng, n)
            q0 = rng.uniform(-np.pi, np.pi, n)
            if np.linalg.cond(crba(chain, q0)) < 1e4:
                break
        qd0 = rng.uniform(-1, 1, n)
        zero = np.zeros(n)

        def f(_t, y):
            return np.concatenate([y[n:], aba(chain, y[:n], y[n:], zero, G)])

        sol = solve_ivp(f, (0.0, 0.2), np.concatenate([q0, qd0]), method="DOP853",
                        rtol=1e-12, atol=1e-12)
        assert sol.success
        E = [kinetic_energy(chain, y[:n], y[n:]) + potential_energy(chain, y[:n], G)
             for y in sol.y.T]
        scale = max(1.0, kinetic_energy(chain, q0, qd0))
        assert np.ptp(E) <= 1e-8 * scale


def _d5(f, h: float):
    """5-point central derivative of f at 0."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def test_random_rnea_matches_lagrange_equations() -> None:
    """Q = d/dt dT/dqd - dT/dq + dV/dq, all from the energy functions by finite differences."""
    h = 1e-3
    for chain, q, rng in well_conditioned_chains(8, count_per_n=2):
        n = len(chain)
        qd, qdd = rng.uniform(-2, 2, n), rng.uniform(-3, 3, n)
        E = np.eye(n)

        def p(qq, vv):  # dT/dqd, exact differences since T is quadratic in qd
            return np.array([(kinetic_energy(chain, qq, vv + E[i])
                              - kinetic_energy(chain, qq, vv - E[i])) / 2 for i in range(n)])

        dpdt = _d5(lambda s: p(q + s * qd, qd + s * qdd), h)
        dL = np.array([_d5(lambda s: kinetic_energy(chain, q + s * E[i], qd)
                           - potential_energy(chain, q + s * E[i], G), h) for i in range(n)])
        Q_lag = dpdt - dL
        Q = rnea(chain, q, qd, qdd, G)
        assert np.allclose(Q, Q_lag, rtol=0, atol=1e-6 * max(1.0, np.abs(Q).max()))


def test_explicit_serial_parents_reproduce_the_chain_exactly() -> None:
    """A "parent" key equal to the default j-1 changes nothing, bit for bit."""
    for chain, q, rng in well_conditioned_chains(9, count_per_n=1):
        n = len(chain)
        tree = [dict(jt, parent=j) for j, jt in enumerate(chain)]
        qd, qdd, Q = rng.uniform(-2, 2, n), rng.uniform(-3, 3, n), rng.uniform(-5, 5, n)
        for f, args in ((crba, (q,)), (rnea, (q, qd, qdd, G)), (aba, (q, qd, Q, G)),
                        (forward_kinematics, (q,)), (body_velocities, (q, qd)),
                        (point_jacobian, (q, n, np.ones(3))), (kinetic_energy, (q, qd))):
            assert np.array_equal(_flat(f(chain, *args)), _flat(f(tree, *args))), f.__name__


def _flat(x) -> np.ndarray:
    """All numbers of nested lists / tuples of arrays, as one vector."""
    if isinstance(x, (list, tuple)):
        return np.concatenate([_flat(y) for y in x])
    return np.ravel(x)
