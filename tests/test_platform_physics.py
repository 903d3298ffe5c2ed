"""Physical invariants and failure reporting of the generated parallel-mechanism kernels.

Energy: with dampers off and no gravity, T + V is constant over a 2 s simulation; with
dampers and gravity, T + V falls by exactly the work the dampers dissipate. Statics: massless
legs at rest carry a platform load, two-force members along their axes. Singular and
unreachable poses return a status (Fichter's singularity of a symmetric 6-6 platform turned
90 deg, a pose out of reach, a stroke limit, a universal joint at 90 deg), never a silent NaN.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import runtime
from generator.platform_spec import platform_from_dict
from runtime.kernel import KernelStatusError
from tests import platforms as P
from tests.reference.parallel_numpy import platform_alpha

FICHTER = {"mechanism": {"name": "fichter", "family": "parallel", "gravity": [0, 0, -9.81]},
           "platform": {"mass": 100.0, "inertia": [10.0, 10.0, 15.0, 0, 0, 0],
                        "home": [0, 0, 0.5, 0, 0, 0]},
           "leg": {"type": "UPS", "bodies": {"cylinder": {"mass": 2.0, "com": [0.1, 0, 0],
                                                          "inertia": [0.001, 0.01, 0.01, 0, 0, 0]}}},
           "pattern": {"base_radius": 0.9, "base_angles": [-15, 15, 105, 135, 225, 255],
                       "platform_radius": 0.65, "platform_angles": [-45, 45, 75, 165, 195, 285]}}


def _mech(mixed_hexapod):
    pf, num, root = mixed_hexapod
    return runtime.load(pf.name, "c", generated=root), num


def _energy_run(m, p, g, s0, duration=2.0):
    step = m.kernels["step"]
    z3, F = np.zeros(3), np.zeros(6)

    def f(t, s):
        out = step(s[:6], s[6:12], F, z3, z3, g, p=p)
        return np.concatenate([out[0], [out[-1][0]]])   # xdot, d(dissipated work)/dt

    sol = solve_ivp(f, (0, duration), np.concatenate([s0, [0.0]]), method="DOP853",
                    rtol=1e-12, atol=1e-12, dense_output=True)
    assert sol.success
    ts = np.linspace(0, duration, 41)
    S = sol.sol(ts).T
    T, V = m.energy(np.ascontiguousarray(S[:, :6]), np.ascontiguousarray(S[:, 6:12]),
                    np.tile(g, (len(ts), 1)), p=np.tile(p, (len(ts), 1)))
    return T[:, 0] + V[:, 0], S[:, 12], T[:, 0]


def _start(num, seed):
    rng = np.random.default_rng(seed)
    x0 = num["home"] + np.concatenate([rng.uniform(-0.02, 0.02, 3), rng.uniform(-0.04, 0.04, 3)])
    return np.concatenate([x0, rng.normal(0, 0.3, 6)])


def test_energy_is_conserved_without_dampers_and_gravity(mixed_hexapod):
    m, num = _mech(mixed_hexapod)
    p = m.params(c=0.0)
    E, W, T = _energy_run(m, p, np.zeros(3), _start(num, 1))
    assert np.abs(W).max() == 0.0
    drift = np.abs(E - E[0]).max() / abs(E[0])
    assert drift < 1e-6, f"energy drift {drift:.2e}"
    assert T.max() > 10 * T.min() or T.min() > 0     # the motion exchanges energy


def test_energy_falls_by_the_work_of_the_dampers(mixed_hexapod):
    m, num = _mech(mixed_hexapod)
    p = m.params()
    E, W, _ = _energy_run(m, p, np.array([0.0, 0.0, -9.81]), _start(num, 2))
    assert W[-1] > 1e-3 * abs(E[0])                    # the dampers did work
    balance = np.abs(E + W - E[0]).max() / max(abs(E[0]), W[-1])
    assert balance < 1e-8, f"E + W_dissipated drifts by {balance:.2e}"


def test_massless_legs_at_rest_balance_a_platform_load(mixed_hexapod):
    m, num = _mech(mixed_hexapod)
    p = m.params(m_link=0.0, c=0.0)
    rng = np.random.default_rng(3)
    g = np.array([0.0, 0.0, -9.81])
    for _ in range(4):
        x = num["home"] + np.concatenate([rng.uniform(-0.02, 0.02, 3), rng.uniform(-0.04, 0.04, 3)])
        fE, mE, u0 = rng.normal(0, 200.0, 3), rng.normal(0, 40.0, 3), np.zeros(6)
        F = m.drive_forces(x, u0, np.zeros(6), fE, mE, g, p=p)
        out = dict(zip([o[0] for o in m.kernels["step"].outputs], m.step(x, u0, F, fE, mE, g, p=p)))
        assert np.abs(out["xdot"][6:]).max() < 1e-10
        assert np.abs(out["qdd"]).max() < 1e-9
        mC = num["platform"]["m"]
        total = out["F_on_C"].sum(0) + fE + mC * g
        assert np.abs(total).max() < 1e-9 * np.abs(fE).max()
        # a massless UPS leg is a two-force member: its force on C is along the leg, equal to
        # the stroke force (spring + preload + drive)
        Q = m.leg_forces(x, u0, F, p=p)
        i = 0
        for k, leg in enumerate(num["legs"]):
            n = len(leg["joints"])
            if leg["type"] == "UPS":
                s = x[:3] + platform_alpha(*x[3:]).T @ leg["cut"]["l_C"]
                e = (s - leg["joints"][0]["l"]) / np.linalg.norm(s - leg["joints"][0]["l"])
                np.testing.assert_allclose(out["F_on_C"][k], Q[i + 2] * e, atol=1e-9 * abs(Q[i + 2]))
            i += n


def test_fichter_singularity_is_flagged_by_the_drive_forces(tmp_path):
    pf = platform_from_dict(FICHTER, "fichter.toml")
    P.write_platform(pf, tmp_path)
    m = runtime.load("fichter", "c", generated=tmp_path)
    z3, z6 = np.zeros(3), np.zeros(6)
    g = np.array([0.0, 0.0, -9.81])
    x = np.array([0, 0, 0.5, 0, np.radians(80), 0])
    F = m.drive_forces(x, z6, z6, z3, z3, g)
    assert np.all(np.isfinite(F))
    for height in (0.4, 0.5, 0.7):
        x = np.array([0, 0, height, 0, np.pi / 2, 0])
        with pytest.raises(KernelStatusError, match="parallel singularity") as e:
            m.drive_forces(x, z6, z6, z3, z3, g)
        assert e.value.status[0] == 5
        Fn = m.drive_forces(x, z6, z6, z3, z3, g, errors="nan")
        assert np.all(np.isnan(Fn))
    # the same pose in the step: the y-z-x angles are singular there too, reported
    with pytest.raises(KernelStatusError, match="psi_z"):
        m.step(x, z6, z6, z3, z3, g)


def test_unreachable_and_singular_poses_return_a_status():
    hunt = runtime.load("hunt_rus_docking", "c")
    home = np.array(hunt.manifest["home"])
    far = home + [0, 0, 1.5, 0, 0, 0]
    with pytest.raises(KernelStatusError, match="out of reach"):
        hunt.inverse_kinematics(far, p=hunt.params())
    gs = runtime.load("gough_stewart_docking", "c")
    xs = np.tile(np.array(gs.manifest["home"]), (3, 1))
    xs[1, 2] += 0.4                                    # beyond the stroke limit
    out = gs.inverse_kinematics(xs, p=np.tile(gs.params(), (3, 1)), errors="nan")
    assert np.all(np.isfinite(out[0])) and np.all(np.isnan(out[1]))
    with pytest.raises(KernelStatusError) as e:
        gs.inverse_kinematics(xs, p=np.tile(gs.params(), (3, 1)))
    assert e.value.status.tolist() == [0, 1, 0]


def test_a_universal_joint_at_90_degrees_is_a_leg_singularity(tmp_path):
    pf = platform_from_dict(FICHTER, "fichter.toml")
    P.write_platform(pf, tmp_path)
    m = runtime.load("fichter", "c", generated=tmp_path)
    leg = pf.legs[0]
    G0 = np.array([[float(v) for v in r] for r in leg.chain.joints[0].gamma])
    b = np.array([float(v) for v in leg.chain.joints[0].l])
    l_C = np.array([float(v) for v in leg.l_C])
    r_C = b + 0.6 * G0[1] - l_C                        # leg 1 along its U joint's first axis
    x = np.concatenate([r_C, np.zeros(3)])
    with pytest.raises(KernelStatusError, match="singular configuration") as e:
        m.inverse_kinematics(x)
    assert e.value.status[0] == 2
