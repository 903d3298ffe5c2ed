"""The lean step ``step_accel`` (generator/families/parallel/kernels.py) gives exactly what
``step`` gives for the outputs they share, the state derivative xdot and the leg accelerations
qdd, and refuses the same states with the same status; its udot and qdd match the plain numpy
reference of the paper's equations (tests/reference/parallel_numpy.py) and the independent
Lagrange-multiplier formulation (tests/reference/parallel_lagrange.py). Pinocchio's
constraintDynamics checks it too (tests/test_pinocchio_constraint.py). Every bundled leg type
(UPS, SPU, UCU, RUS, RSU, PUS) and the mixed six-leg platform, C and Python."""

from __future__ import annotations


import numpy as np
import pytest

from mechgen.runtime.kernel import KernelStatusError
from tests import platforms as P
from tests.reference import parallel_lagrange as lag
from tests.reference import parallel_numpy as ref

SAME = 1e-12          # step_accel vs step: the same equations, another pruning and CSE
RTOL = 1e-10          # vs the references
STATES = 40


@pytest.fixture(scope="module", params=P.BUNDLED + ["stewart_rrp_002", "mixed_hexapod"])
def case(request):
    name = request.param
    _, num, mechs = P.case_mechanisms(request, name)
    return name, num, mechs


def _inputs(m, st):
    return (st["x"], st["u"], st["F"], st["fE"], st["mE"], st["g"]), np.tile(
        m.params(), (len(st["x"]), 1))


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("backend", ["c", "python"])
def test_step_accel_equals_step_on_xdot_and_qdd(case, backend):
    name, num, mechs = case
    m = mechs[backend]
    st = P.random_states(num, STATES, seed=3)
    args, p = _inputs(m, st)
    full = m.step(*args, p=p, errors="nan")
    xdot, qdd = m.step_accel(*args, p=p, errors="nan")
    ok = np.isfinite(full[0]).all(axis=1)
    assert ok.sum() >= STATES // 2, f"{name}: too few reachable states to compare"
    np.testing.assert_array_equal(np.isfinite(xdot).all(axis=1), ok)
    for i in np.flatnonzero(ok):
        assert _rel(xdot[i], full[0][i]) <= SAME, f"{name} state {i}: xdot"
        assert _rel(qdd[i], full[3][i]) <= SAME, f"{name} state {i}: qdd"


def test_step_accel_refuses_the_states_step_refuses_with_the_same_status(case):
    """Poses from near home to far from it: out of reach, past joint limits, singular legs."""
    name, num, mechs = case
    m = mechs["c"]
    st = P.random_states(num, STATES, seed=5)
    rng = np.random.default_rng(5)
    far = np.linspace(0.02, 1.0, STATES)[:, None]
    st["x"] = num["home"] + far * np.hstack([rng.uniform(-0.4, 0.4, (STATES, 3)),
                                             rng.uniform(-0.8, 0.8, (STATES, 3))])
    args, p = _inputs(m, st)
    statuses = []
    for kernel in (m.step, m.step_accel):
        with pytest.raises(KernelStatusError) as e:
            kernel(*args, p=p)
        statuses.append(e.value.status)
    assert statuses[0].any() and not statuses[0].all(), f"{name}: pick another spread"
    np.testing.assert_array_equal(statuses[1], statuses[0])


def _reference(module, num, st, i, q_guess):
    x, u = st["x"][i], st["u"][i]
    zero = [np.zeros(len(leg["joints"])) for leg in num["legs"]]
    kin = module.solve(num, x, u, zero, st["g"][i], st["fE"][i], st["mE"][i], p0=q_guess)
    Q = P.law_forces(num, kin["p"], kin["pdot"], st["F"][i])
    return module.solve(num, x, u, Q, st["g"][i], st["fE"][i], st["mE"][i], p0=q_guess)


@pytest.mark.parametrize("module", [ref, lag], ids=["numpy_reference", "lagrange"])
def test_step_accel_matches_the_references(case, module):
    name, num, mechs = case
    m = mechs["c"]
    st = P.random_states(num, 4, seed=len(name))
    args, p = _inputs(m, st)
    xdot, qdd = m.step_accel(*args, p=p)
    q = m.inverse_kinematics(st["x"], p=p)           # the branch the kernels follow
    split = np.cumsum([len(leg["joints"]) for leg in num["legs"]])[:-1]
    for i in range(len(st["x"])):
        r = _reference(module, num, st, i, np.split(q[i], split))
        assert _rel(xdot[i, 6:], r["udot"]) <= RTOL, f"{name} state {i}: udot"
        assert _rel(qdd[i], np.concatenate(r["pddot"])) <= RTOL, f"{name} state {i}: qdd"


def test_step_accel_costs_fewer_operations_than_step(case):
    """The manifest's exact op counts: the lean kernel drops the loads and the leg angles."""
    name, num, mechs = case
    kernels = {k["name"]: k["ops"] for k in mechs["c"].manifest["kernels"]}
    assert kernels["step_accel"]["total"] < kernels["step"]["total"]
    assert kernels["step_accel"]["trig"] <= kernels["step"]["trig"]
