"""The bundled parallel mechanisms built as Pinocchio models with loop constraints
(bench/pinocchio_constraint_model.py) are the same mechanisms as our step: Pinocchio's
constraintDynamics gives the platform's and every leg joint's acceleration of our step at
matching (q, v, tau). This is what lets bench/pinocchio_constraint_race.py time the two
against each other; it is also an independent check of the step (an absolute formulation with
Lagrange multipliers, spatial algebra, a different factorisation)."""

from __future__ import annotations

import numpy as np
import pytest

import mechgen
from tests.platforms import bundled, law_forces, random_states

pin = pytest.importorskip("pinocchio")

from bench import pinocchio_constraint_model as pcm  # noqa: E402

MECHANISMS = ["gough_stewart_docking", "hexapod_spu", "hexapod_ucu", "hunt_rus_docking",
              "hexapod_rsu", "hexapod_pus", "stewart_rrp_002"]
PROX = (1e-12, 1e-10, 10)        # accuracy, mu, iterations: as Pinocchio's closed-loop example


@pytest.mark.parametrize("name", MECHANISMS)
def test_pinocchio_constraint_dynamics_equals_our_step_and_step_accel(name):
    _, num = bundled(name)
    mech = mechgen.load(name)
    desc = pcm.describe(num)
    model, cms = pcm.build(desc)
    cms = pin.StdVec_RigidConstraintModel(cms)
    data = model.createData()
    cds = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
    pin.initConstraintDynamics(model, data, cms, cds)
    st = random_states(num, 40, seed=11)
    out = mech.step(st["x"], st["u"], st["F"], st["fE"], st["mE"], st["g"], p=mech.params(),
                    errors="nan")
    xdot, q, qd, qdd = out[:4]
    lean_xdot, lean_qdd = mech.step_accel(st["x"], st["u"], st["F"], st["fE"], st["mE"], st["g"],
                                          p=mech.params(), errors="nan")
    ok = np.flatnonzero(np.isfinite(xdot).all(axis=1))
    assert len(ok) >= 30
    split = np.cumsum([len(leg["joints"]) for leg in num["legs"]])[:-1]
    leg_v = [model.joints[j].idx_v for leg in desc["legs"] for j in leg["joints"]]
    for i in ok:
        p, pd = np.split(q[i], split), np.split(qd[i], split)
        model.gravity = pin.Motion(np.concatenate([st["g"][i], np.zeros(3)]))
        qp, vp = pcm.pin_state(desc, model, st["x"][i], st["u"][i], p, pd)
        tau = pcm.pin_tau(desc, model, st["x"][i], law_forces(num, p, pd, st["F"][i]),
                          st["fE"][i], st["mE"][i])
        ddq = pin.constraintDynamics(model, data, qp, vp, tau, cms, cds,
                                     pin.ProximalSettings(*PROX))
        udot = pcm.platform_udot(st["x"][i], vp, ddq)
        np.testing.assert_allclose(udot, xdot[i, 6:], rtol=0,
                                   atol=1e-10 * np.abs(xdot[i, 6:]).max())
        np.testing.assert_allclose(ddq[leg_v], qdd[i], rtol=0,
                                   atol=1e-10 * np.abs(qdd[i]).max())
        np.testing.assert_allclose(udot, lean_xdot[i, 6:], rtol=0,       # the lean step
                                   atol=1e-10 * np.abs(xdot[i, 6:]).max())
        np.testing.assert_allclose(ddq[leg_v], lean_qdd[i], rtol=0,
                                   atol=1e-10 * np.abs(qdd[i]).max())


def test_u_cut_angles_put_the_welded_frames_together():
    """A universal cut's two angles and rates from pin_state close the weld exactly."""
    _, num = bundled("hexapod_ucu")
    mech = mechgen.load("hexapod_ucu")
    desc = pcm.describe(num)
    model, cms = pcm.build(desc)
    st = random_states(num, 5, seed=2)
    z6, z3 = np.zeros(6), np.zeros(3)
    data = model.createData()
    split = np.cumsum([len(leg["joints"]) for leg in num["legs"]])[:-1]
    for x, u in zip(st["x"], st["u"]):
        _, q, qd = mech.step(x, u, z6, z3, z3, num["gravity"], p=mech.params())[:3]
        qp, vp = pcm.pin_state(desc, model, x, u, np.split(q, split), np.split(qd, split))
        pin.forwardKinematics(model, data, qp, vp)
        for c in cms:
            M1 = data.oMi[c.joint1_id] * c.joint1_placement
            M2 = data.oMi[c.joint2_id] * c.joint2_placement
            v1 = M1.act(c.joint1_placement.actInv(data.v[c.joint1_id]))
            v2 = M2.act(c.joint2_placement.actInv(data.v[c.joint2_id]))
            assert np.abs((M1.inverse() * M2).homogeneous - np.eye(4)).max() < 1e-12
            assert np.abs((v1 - v2).vector).max() < 1e-12


def test_massless_last_body_is_refused_naming_the_leg():
    _, num = bundled("gough_stewart_docking")
    num["legs"][2]["bodies"][-1] = {"m": 0.0, "d": np.zeros(3), "I": np.zeros((3, 3))}
    with pytest.raises(ValueError, match=r"legs\[2\]"):
        pcm.describe(num)
