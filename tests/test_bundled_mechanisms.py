"""Physics of the bundled mechanisms, checked with the committed generated kernels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mechgen import runtime
from tests.chains import featherstone_chain, numeric_model
from mechgen.generator.frontend import load
from mechgen.generator.build import MECHANISMS
from tests.reference import featherstone as fs


@pytest.fixture(scope="module")
def space():
    return runtime.load("space_arm7", "c")


def test_free_flying_spacecraft_conserves_momentum_when_the_arm_moves(space):
    """No gravity, internal drive torques only: the linear momentum (the generalised
    momentum of the base slides, A qd rows 0-2) stays constant, while the arm swings."""
    n = space.n
    p = space.params(m_payload=80.0)
    q0 = np.zeros(n)
    q0[6:] = [0.3, -0.2, 0.9, -1.1, 0.4, 0.2, -0.3]
    qd0 = np.zeros(n)
    qd0[:6] = [0.01, -0.02, 0.005, 0.002, -0.001, 0.003]
    drive = lambda t, q, qd: np.r_[np.zeros(6), 30 * np.sin(3 * t + np.arange(7))]
    sol = solve_ivp(space.rhs(drive, p), (0, 2.0), np.r_[q0, qd0], method="DOP853",
                    rtol=1e-11, atol=1e-11, dense_output=True)
    assert sol.success
    mom = [space.mass_matrix(x[:n], p)[:3] @ x[n:] for x in sol.y.T]
    swing = np.abs(sol.y[6:n, -1] - q0[6:]).max()
    assert swing > 0.1, "the arm should have moved"
    drift = np.abs(np.array(mom) - mom[0]).max()
    assert drift < 1e-8 * max(1.0, np.abs(mom[0]).max()), drift


def test_space_arm_matches_featherstone_for_several_payloads(space):
    chain = load(MECHANISMS / "space_arm7.toml")
    rng = np.random.default_rng(5)
    for m_payload in (0.0, 10.0, 500.0):
        model = numeric_model(chain, {"m_payload": m_payload})
        fsc = featherstone_chain(model)
        q = rng.uniform(-1, 1, chain.n)
        qd = rng.normal(size=chain.n)
        Q = rng.normal(size=chain.n)
        p = space.params(m_payload=m_payload)
        A = space.mass_matrix(q, p)
        np.testing.assert_allclose(A, fs.crba(fsc, q), rtol=1e-10, atol=1e-10 * np.abs(A).max())
        qdd = space.forward_dynamics(q, qd, Q, p)
        np.testing.assert_allclose(qdd, fs.aba(fsc, q, qd, Q, model["gravity"]), rtol=1e-9,
                                   atol=1e-9 * np.abs(qdd).max())


def test_industrial_arm_holds_still_with_inverse_dynamics_torques():
    arm = runtime.load("ur5_arm", "c")
    q = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.1])
    Q = arm.inverse_dynamics(q, np.zeros(6), np.zeros(6))
    sol = solve_ivp(arm.rhs(Q), (0, 0.5), np.r_[q, np.zeros(6)], rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(sol.y[:6, -1], q, atol=1e-8)
    # shoulder pan axis is vertical: gravity gives it no torque
    assert abs(Q[0]) < 1e-12


@pytest.mark.parametrize("backend", ["c", "python"])
def test_point_jacobian_of_any_point_matches_featherstone(backend):
    arm = runtime.load("ur5_arm", backend)
    chain = load(MECHANISMS / "ur5_arm.toml")
    fsc = featherstone_chain(numeric_model(chain, {}))
    rng = np.random.default_rng(7)
    q = rng.uniform(-3, 3, (5, 6))
    d = rng.normal(size=3)
    for b, (name, j) in enumerate(chain.named_bodies):
        T, R = arm.point_jacobian(q, name, d)
        for s in range(5):
            Jv, Jw = fs.point_jacobian(fsc, q[s], j, d)
            np.testing.assert_allclose(T[s], Jv, atol=1e-12)
            np.testing.assert_allclose(R[s], Jw, atol=1e-12)
        T1, _ = arm.point_jacobian(q[0], name, d)
        np.testing.assert_allclose(T1, T[0], rtol=0, atol=1e-14)


@pytest.mark.parametrize("backend", ["c", "python"])
def test_free_base_forward_dynamics_flags_the_euler_angle_singularity(backend):
    """At psi_z = 90 deg - 0.01 deg, A(q) in y-z-x angle rates has cond ~1e10 and the solve
    loses digits: the kernel returns its status instead (|cos psi_z| < 1e-3); at 80 deg it
    solves, and agrees with Featherstone's ABA."""
    space = runtime.load("space_arm7", backend)
    chain = load(MECHANISMS / "space_arm7.toml")
    rng = np.random.default_rng(8)
    q, qd, Q = rng.uniform(-1, 1, space.n), rng.normal(size=space.n), rng.normal(size=space.n)
    q[4] = np.radians(90.0 - 0.01)
    with pytest.raises(runtime.KernelStatusError, match="psi_z"):
        space.forward_dynamics(q, qd, Q)
    out = space.forward_dynamics(np.array([q, q]), np.array([qd, qd]), np.array([Q, Q]),
                                 errors="nan")
    assert np.isnan(out).all()
    q[4] = np.radians(80.0)
    model = numeric_model(chain, {"m_payload": 100.0})
    ref = fs.aba(featherstone_chain(model), q, qd, Q, model["gravity"])
    np.testing.assert_allclose(space.forward_dynamics(q, qd, Q), ref, rtol=1e-8,
                               atol=1e-8 * np.abs(ref).max())
