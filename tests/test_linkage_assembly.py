"""The compiled assembly loop (runtime/csrc/linkage_assemble.c) against the Python Newton loop
(mechgen.runtime.linkage.newton_loop, the reference): the same statuses, iterations and
coordinates on many random starts of every bundled linkage, and each failure status provoked
and reported (no convergence, singular pivot, half-turn closure, wrong assembly branch)."""

from __future__ import annotations

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import linkage as lk
from tests.test_linkage_kernels import LINKAGES


def starts(mech, count: int, ind_spread: float, dep_spread: float, seed: int) -> np.ndarray:
    """Random drives (independent coordinates) and random starts of the dependent ones around
    the reference pose."""
    rng = np.random.default_rng(seed)
    ind = lk.independent_indices(mech)
    dep = [i for i in range(mech.n) if i not in ind]
    Q = np.tile(np.array(mech.manifest["q_ref"]), (count, 1))
    Q[:, ind] += rng.uniform(-ind_spread, ind_spread, (count, len(ind)))
    Q[:, dep] += rng.uniform(-dep_spread, dep_spread, (count, len(dep)))
    return Q


@pytest.mark.parametrize("name", LINKAGES)
def test_compiled_loop_repeats_the_python_loop_over_the_same_kernel(name):
    """Starts anywhere on the dependent coordinates: every outcome occurs, and the C loop
    takes the same steps as the Python loop (bit for bit: the same compiled kernel)."""
    mech = runtime.load(name)
    Q = starts(mech, 150, 0.2, np.pi, seed=11)
    c = lk.assemble_batch(mech, Q, engine="c")
    py = lk.assemble_batch(mech, Q, engine="python")
    assert np.array_equal(c.status, py.status)
    assert np.array_equal(c.iterations, py.iterations)
    assert np.array_equal(c.q, py.q)
    ok = c.status == lk.ASSEMBLED
    assert np.array_equal(c.error[ok], py.error[ok]) and np.array_equal(c.branch[ok],
                                                                        py.branch[ok])
    assert ok.sum() >= 10


@pytest.mark.parametrize("name", LINKAGES)
def test_compiled_loop_agrees_with_the_python_loop_over_the_python_kernels(name):
    mech = runtime.load(name)
    mech_py = runtime.load(name, "python")
    Q = starts(mech, 60, 0.05, 0.05, seed=5)
    c = lk.assemble_batch(mech, Q, engine="c")
    py = lk.assemble_batch(mech_py, Q, engine="python")
    assert np.array_equal(c.status, py.status)
    ok = c.status == lk.ASSEMBLED
    assert ok.sum() >= 30
    assert np.abs(c.q[ok] - py.q[ok]).max() <= 1e-12 * max(1.0, np.abs(py.q[ok]).max())
    phi = mech.closure(c.q[ok])[0]
    assert np.abs(phi).max() < 1e-12


def test_batch_assemble_uses_the_compiled_loop_and_equals_single_states():
    mech = runtime.load("double_wishbone")
    Q = starts(mech, 40, 0.05, 0.02, seed=2)
    batch = lk.assemble(mech, Q)
    assert lk.linkage_c.available(mech)
    for q0, q in zip(Q, batch):
        assert np.array_equal(lk.assemble(mech, q0), q)


def test_singular_pivot_is_reported_by_both_loops():
    """The double four-bar with its cranks horizontal (q = 0): G_D is singular."""
    mech = runtime.load("double_fourbar")
    Q = np.zeros((2, mech.n))
    Q[1] = mech.manifest["q_ref"]
    for engine in ("c", "python"):
        res = lk.assemble_batch(mech, Q, engine=engine)
        assert res.status.tolist() == [lk.SINGULAR, lk.ASSEMBLED]
        assert res.iterations[0] == 1 and np.array_equal(res.q[0], Q[0])
    with pytest.raises(lk.AssemblyError, match="pivot .* vanishes"):
        lk.assemble(mech, Q[0])
    with pytest.raises(lk.AssemblyError, match=r"1 of 2 states not assembled \(singular "
                                               r"pivot\) at state\(s\) \[0\]"):
        lk.assemble(mech, Q)
    out = lk.assemble(mech, Q, errors="nan")
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()


def test_no_convergence_is_reported_by_both_loops():
    mech = runtime.load("fourbar")
    Q = starts(mech, 5, 0.1, 0.3, seed=1)
    for engine in ("c", "python"):
        res = lk.assemble_batch(mech, Q, max_iter=1, engine=engine)
        assert (res.status == lk.NOT_CONVERGED).all() and (res.iterations == 1).all()
        assert (res.error > 1e-3).all()
    with pytest.raises(lk.AssemblyError, match="do not close"):
        lk.assemble(mech, Q[0], max_iter=1)
    with pytest.raises(lk.AssemblyError, match="not converged"):
        lk.assemble(mech, Q, max_iter=1)
    assert np.isfinite(lk.assemble(mech, Q)).all()     # with the default 50 steps they close


def test_wrong_branch_is_a_closed_pose_with_the_other_sign_of_det_GD():
    """Four-bar started anywhere: some starts close on the crossed assembly."""
    mech = runtime.load("fourbar")
    Q = starts(mech, 200, 0.2, np.pi, seed=3)
    res = {e: lk.assemble_batch(mech, Q, engine=e) for e in ("c", "python")}
    assert np.array_equal(res["c"].status, res["python"].status)
    wrong = np.flatnonzero(res["c"].status == lk.WRONG_BRANCH)
    assert len(wrong) >= 10
    q = res["c"].q[wrong]
    assert np.abs(mech.closure(q)[0]).max() < 1e-12
    sign = mech.manifest["branch_sign"]
    assert (np.sign(res["c"].branch[wrong]) == -sign).all()
    free = lk.assemble_batch(mech, Q[wrong], check_branch=False, engine="c")
    assert (free.status == lk.ASSEMBLED).all() and np.array_equal(free.q, q)
    with pytest.raises(lk.AssemblyError, match="other assembly branch"):
        lk.assemble(mech, Q[wrong[0]])


def test_half_turn_closure_is_reported_by_both_loops():
    """Swash plate started anywhere: some starts close its cut revolute joint with the pins
    antiparallel (every position row satisfied, the orientation check -1)."""
    mech = runtime.load("swash_plate")
    Q = starts(mech, 200, 0.2, np.pi, seed=4)
    res = {e: lk.assemble_batch(mech, Q, engine=e) for e in ("c", "python")}
    assert np.array_equal(res["c"].status, res["python"].status)
    half = np.flatnonzero(res["c"].status == lk.HALF_TURN)
    assert len(half) >= 10
    q = res["c"].q[half]
    assert np.abs(mech.closure(q)[0]).max() < 1e-12
    orientation = mech.newton_step(q)[3]
    assert (orientation.min(axis=1) <= 0).all()
    with pytest.raises(lk.AssemblyError, match="half turn"):
        lk.assemble(mech, Q[half[0]])


def test_parameters_reach_the_compiled_newton_step():
    """double_wishbone's newton_step takes p: a per-state p and one p for all give the same."""
    mech = runtime.load("double_wishbone")
    assert "p" in dict(mech.kernels["newton_step"].inputs)
    Q = starts(mech, 10, 0.05, 0.02, seed=8)
    p = mech.params()
    a = lk.assemble_batch(mech, Q, p=p, engine="c")
    b = lk.assemble_batch(mech, Q, p=np.tile(p, (10, 1)), engine="c")
    assert np.array_equal(a.q, b.q) and (a.status == lk.ASSEMBLED).all()
    with pytest.raises(ValueError, match="'p'"):
        lk.assemble_batch(mech, Q, p=np.ones((3, p.size)), engine="c")


def test_bad_batch_input_is_refused_naming_the_argument():
    mech = runtime.load("fourbar")
    with pytest.raises(ValueError, match=r"'q' must have shape \(N, 3\)"):
        lk.assemble_batch(mech, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="'q' contains NaN"):
        lk.assemble_batch(mech, np.full((1, 3), np.nan))
    with pytest.raises(ValueError, match="engine"):
        lk.assemble_batch(mech, np.zeros((1, 3)), engine="fortran")
    with pytest.raises(ValueError, match="C backend"):
        lk.assemble_batch(runtime.load("fourbar", "python"), np.zeros((1, 3)), engine="c")
