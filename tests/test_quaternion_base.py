"""A free base with a quaternion attitude (``attitude = "quaternion"``) is the same physics as
the y-z-x angle base, without its singularity.

The quaternion base has q = [x, y, z, qw, qx, qy, qz, joints] and qd = [v (frame 0),
omega (base frame), joint rates]. Every check maps a state of the bundled Euler-angle model
(its kernels checked against Featherstone and Pinocchio elsewhere) to the same physical state
of the quaternion model and compares what does not depend on the coordinates: positions and
rotations of every body, kinetic and potential energy, joint accelerations, and the base's
linear and angular acceleration in frame 0.
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechgen
from mechgen.generator.build import MECHANISMS
from mechgen.generator.frontend import load

CASES = {"space_arm7": "space_arm7.toml", "solo12": "solo12.toml"}


def quaternion_of(tau: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of the rotation R = tau^T (body -> frame 0), Shepperd's method."""
    R = tau.T
    tr = np.trace(R)
    k = int(np.argmax([tr, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        w = 0.5 * np.sqrt(1 + tr)
        return np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
                         (R[1, 0] - R[0, 1]) / (4 * w)])
    i, j, m = [(0, 1, 2), (1, 2, 0), (2, 0, 1)][k - 1]
    v = np.zeros(3)
    v[i] = 0.5 * np.sqrt(1 + R[i, i] - R[j, j] - R[m, m])
    v[j] = (R[j, i] + R[i, j]) / (4 * v[i])
    v[m] = (R[m, i] + R[i, m]) / (4 * v[i])
    w = (R[m, j] - R[j, m]) / (4 * v[i])
    return np.r_[w, v]


@pytest.fixture(scope="module", params=sorted(CASES))
def pair(request, tmp_path_factory):
    """(Euler-angle model, quaternion model) of one bundled spec, the quaternion one generated
    from the same spec with one line added."""
    name = request.param
    spec = MECHANISMS / CASES[name]
    text = spec.read_text().replace('base = "free"', 'base = "free"\nattitude = "quaternion"')
    text = text.replace(f'name = "{name}"', f'name = "{name}_quat"', 1)
    urdf = tomllib.loads(text)["mechanism"].get("urdf")
    if urdf is not None:            # the spec goes elsewhere: its URDF by its absolute path
        text = text.replace(f'urdf = "{urdf}"', f"urdf = {json.dumps(str(spec.parent / urdf))}", 1)
    root = tmp_path_factory.mktemp(f"{name}_quat")
    quat_spec = root / f".{name}_quat_test.toml"    # not in generator/mechanisms: another
    quat_spec.write_text(text)                      # test worker lists the bundled specs there
    folder = mechgen.generate(quat_spec, out=root)
    euler, quat = mechgen.load(name, "c"), mechgen.load(folder, "c")
    quat.gravity = np.array([float(g) for g in load(spec).gravity])
    return euler, quat


def same_state(euler, rng, psi_z: float | None = None):
    """A random Euler state and the same physical state of the quaternion model."""
    n = euler.n
    q = rng.uniform(-1.0, 1.0, n)
    if psi_z is not None:
        q[4] = psi_z
    qd = rng.normal(size=n)
    base = euler.bodies.index(euler.bodies[0])          # the spacecraft / trunk: first body
    tau_base = euler.forward_kinematics(q)[1][base]
    omega0 = euler.velocities(q, qd)[1][base]
    qq = np.r_[q[:3], quaternion_of(tau_base), q[6:]]
    qdq = np.r_[qd[:3], tau_base @ omega0, qd[6:]]
    return q, qd, qq, qdq, tau_base


def test_manifest_has_seven_base_coordinates_and_six_velocities(pair):
    euler, quat = pair
    assert quat.n == euler.n and quat.nq == euler.n + 1
    assert quat.manifest["coordinates"][3:7] == ["base_qw", "base_qx", "base_qy", "base_qz"]
    assert quat.manifest["velocities"][3:6] == ["base_wx", "base_wy", "base_wz"]


def test_positions_rotations_and_energy_equal_the_euler_model(pair):
    euler, quat = pair
    rng = np.random.default_rng(11)
    for _ in range(20):
        q, qd, qq, qdq, _ = same_state(euler, rng)
        r_e, tau_e = euler.forward_kinematics(q)
        r_q, tau_q = quat.forward_kinematics(qq)
        np.testing.assert_allclose(r_q, r_e, rtol=0, atol=1e-12 * max(1, np.abs(r_e).max()))
        np.testing.assert_allclose(tau_q, tau_e, rtol=0, atol=1e-13)
        T_e, V_e = euler.energy(q, qd)
        T_q, V_q = quat.energy(qq, qdq)
        assert abs(T_q[0] - T_e[0]) <= 1e-11 * max(1.0, abs(T_e[0]))
        assert abs(V_q[0] - V_e[0]) <= 1e-11 * max(1.0, abs(V_e[0]))


def test_accelerations_equal_the_euler_model(pair):
    """Same joint torques, no force on the base: the same joint accelerations and the same
    base acceleration in frame 0 (Euler: R qdd + eps of the base body; quaternion:
    tau^T omega_dot)."""
    euler, quat = pair
    rng = np.random.default_rng(12)
    for _ in range(20):
        q, qd, qq, qdq, tau = same_state(euler, rng)
        Q = np.r_[np.zeros(6), rng.normal(size=euler.n - 6)]
        qdd_e = euler.forward_dynamics(q, qd, Q)
        qdd_q = quat.forward_dynamics(qq, qdq, Q)
        scale = max(1.0, np.abs(qdd_e).max())
        np.testing.assert_allclose(qdd_q[6:], qdd_e[6:], rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(qdd_q[:3], qdd_e[:3], rtol=0, atol=1e-10 * scale)
        _, R = euler.jacobians(q)
        eps0 = euler.velocities(q, qd)[3][0]
        alpha_e = R[0] @ qdd_e + eps0
        np.testing.assert_allclose(tau.T @ qdd_q[3:6], alpha_e, rtol=0, atol=1e-10 * scale)


def test_inverse_dynamics_inverts_forward_dynamics(pair):
    _, quat = pair
    rng = np.random.default_rng(13)
    for _ in range(10):
        qq = np.r_[rng.normal(size=3), rng.normal(size=4) * 0.7, rng.uniform(-1, 1, quat.n - 6)]
        qdq, Q = rng.normal(size=quat.n), rng.normal(size=quat.n)
        qdd = quat.forward_dynamics(qq, qdq, Q)
        np.testing.assert_allclose(quat.inverse_dynamics(qq, qdq, qdd), Q, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(Q).max()))


def test_quaternion_of_any_norm_gives_the_same_kinematics(pair):
    _, quat = pair
    rng = np.random.default_rng(14)
    qq = np.r_[rng.normal(size=3), rng.normal(size=4), rng.uniform(-1, 1, quat.n - 6)]
    qq2 = qq.copy()
    qq2[3:7] *= 3.7
    np.testing.assert_allclose(quat.forward_kinematics(qq2)[1], quat.forward_kinematics(qq)[1],
                               rtol=0, atol=1e-14)


def test_no_singularity_where_the_euler_angles_fail(pair):
    """At psi_z = 90 deg - 0.001 deg the Euler model refuses (its status); the quaternion
    model of the same state solves, and inverse dynamics gives the torques back."""
    euler, quat = pair
    rng = np.random.default_rng(15)
    q, qd, qq, qdq, _ = same_state(euler, rng, psi_z=np.radians(90 - 1e-3))
    Q = rng.normal(size=euler.n)
    with pytest.raises(mechgen.KernelStatusError, match="psi_z"):
        euler.forward_dynamics(q, qd, Q)
    qdd = quat.forward_dynamics(qq, qdq, Q)
    np.testing.assert_allclose(quat.inverse_dynamics(qq, qdq, qdd), Q, rtol=0, atol=1e-9)


def test_free_floating_motion_conserves_momentum_and_energy(pair):
    """No drive: rhs() integrates the quaternion; T + V stays constant, the linear momentum
    (first three rows of A qd, the base slides along frame 0) grows by m_total g t only, and
    the quaternion stays of unit norm to the integrator's accuracy."""
    euler, quat = pair
    rng = np.random.default_rng(16)
    _, _, qq, qdq, _ = same_state(euler, rng)
    p = {"m_payload": 100.0} if quat.parameters else None
    sol = solve_ivp(quat.rhs(None, p), (0, 1.0), np.r_[qq, qdq], method="DOP853", rtol=1e-11,
                    atol=1e-11)
    assert sol.success
    nq = quat.nq
    E = [sum(quat.energy(x[:nq], x[nq:])) for x in sol.y.T]
    assert np.abs(np.array(E) - E[0]).max() < 1e-7 * max(1.0, abs(E[0]))
    m_total = quat.mass_matrix(qq)[0, 0]
    mom = np.array([quat.mass_matrix(x[:nq])[:3] @ x[nq:] - m_total * quat.gravity * t
                    for t, x in zip(sol.t, sol.y.T)])
    assert np.abs(mom - mom[0]).max() < 1e-8 * max(1.0, np.abs(mom[0]).max())
    assert abs(np.linalg.norm(sol.y[3:7, -1]) - 1) < 1e-8


def test_python_backend_agrees_with_c(pair):
    _, quat = pair
    py = mechgen.load(quat.folder, "python")
    rng = np.random.default_rng(17)
    qq = np.r_[rng.normal(size=3), rng.normal(size=4), rng.uniform(-1, 1, quat.n - 6)]
    qdq, Q = rng.normal(size=quat.n), rng.normal(size=quat.n)
    np.testing.assert_allclose(py.forward_dynamics(qq, qdq, Q), quat.forward_dynamics(qq, qdq, Q),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("base, attitude, match", [
    ("fixed", "quaternion", "quaternion only with base = 'free'"),
    ("free", "rodrigues", "expected one of"),
])
def test_attitude_is_checked_by_name(base, attitude, match):
    from mechgen.generator.model import ModelError
    from mechgen.generator.families.serial.spec import ChainBuilder
    body = {"mass": 1.0, "inertia": [0.1, 0.1, 0.1, 0, 0, 0]}
    with pytest.raises(ModelError, match=match):
        ChainBuilder("x", base=base, base_body=body if base == "free" else None,
                     attitude=attitude).joint("j1", "Rz", body=body).build()
