"""Paper 004's two time-grid procedures (runtime/linkage.py; docs/linkage.md, "Time-grid
procedures (paper 004)"):

* inverse_dynamics_on_grid (the paper's "direct" problem, motion -> forces) on a prescribed
  smooth drive law q_I(t) = q_I,ref + a sin(w t): at every node the loops are closed to
  1e-12, the drive forces equal the generated inverse_dynamics kernel and the plain numpy
  reference, the multipliers are the minimum-norm solution of G^T lambda = M qdd - b (unique
  without redundant rows), and the drive power integrates to the change of T + V at
  Simpson's fourth order;
* forward_dynamics_on_grid (the "inverse" problem with the paper's constant-acceleration
  step) converges at first order to scipy's solve_ivp (`simulate`), with the loops closed at
  every node; its bad input is refused naming the argument;
* the round trip: the drive forces of the first procedure, fed to the second on the same
  grid, reproduce the prescribed motion at first order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import linkage as lk
from tests.reference import linkage_tree_numpy as ref

SPECS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"

# prescribed drive law q_I = q_I,ref + a sin(w t) over [0, t_end]: (a, w, t_end); the
# four-bar and Andrews' squeezer are square, the parallel cranks and Bricard's 6R loop
# carry one redundant constraint row each
MOTIONS = {"fourbar": (0.3, 2.0, 1.0), "andrews": (0.5, 50.0, 0.1),
           "parallelogram3": (0.3, 2.0, 1.0), "bricard": (0.3, 2.0, 1.0)}
GRID_LINKAGES = list(MOTIONS)


def drive_law(mech, a: float, w: float):
    """q_I(t), qd_I(t), qdd_I(t) of the independent coordinates around the reference pose."""
    base = np.array(mech.manifest["q_ref"])[lk.independent_indices(mech)]
    return (lambda t: base + a * np.sin(w * t),
            lambda t: np.full(base.size, a * w * np.cos(w * t)),
            lambda t: np.full(base.size, -a * w * w * np.sin(w * t)))


def prescribed(mech, steps: int):
    a, w, t_end = MOTIONS[mech.name]
    q_i, qd_i, qdd_i = drive_law(mech, a, w)
    out = lk.inverse_dynamics_on_grid(mech, q_i, qd_i, qdd_i, mech.manifest["q_ref"],
                                      t_end, steps)
    return out, (q_i, qd_i, qdd_i)


def full_forces(mech, tau_ind: np.ndarray) -> np.ndarray:
    tau = np.zeros(mech.n)
    tau[lk.independent_indices(mech)] = tau_ind
    return tau


def scale(x) -> float:
    return max(1.0, float(np.abs(x).max()))


def simpson(y: np.ndarray, dt: float) -> float:
    return float(np.sum(y[0:-1:2] + 4 * y[1::2] + y[2::2]) * dt / 3)


def order(errors) -> np.ndarray:
    """Observed orders log2(e(dt) / e(dt/2)) between successive halvings."""
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])


@pytest.mark.parametrize("name", GRID_LINKAGES)
def test_inverse_grid_closes_the_loops_and_its_drive_forces_equal_the_kernel_and_numpy(name):
    mech = runtime.load(name)
    num = ref.from_spec(SPECS / f"{name}.toml")
    out, (q_i, qd_i, qdd_i) = prescribed(mech, 40)
    ind = lk.independent_indices(mech)
    assert out["q"].shape == (41, mech.n) and out["tau_ind"].shape == (41, len(ind))
    for l, t in enumerate(out["t"]):
        q, qd = out["q"][l], out["qd"][l]
        assert np.array_equal(q[ind], q_i(t)) and np.array_equal(qd[ind], qd_i(t))
        position, velocity = mech.violation(q, qd)
        assert position[0] <= 1e-12 and velocity[0] <= 1e-12 * scale(qd)
        tau_k, qdd_k, lam_k, *_ = mech.inverse_dynamics(q, qd, qdd_i(t))
        assert np.array_equal(out["tau_ind"][l], tau_k) and np.array_equal(out["lambda"][l], lam_k)
        assert np.array_equal(out["qdd"][l], qdd_k)
        tau_n, qdd_n, lam_n = ref.inverse_dynamics(num, q, qd, qdd_i(t))
        assert np.abs(tau_k - tau_n).max() <= 1e-10 * scale(tau_n)
        assert np.abs(qdd_k - qdd_n).max() <= 1e-10 * scale(qdd_n)


@pytest.mark.parametrize("name", GRID_LINKAGES)
def test_inverse_grid_drive_power_integrates_to_the_change_of_energy_at_fourth_order(name):
    """No dampers on these linkages: int tau_I . qd_I dt = (T + V)(t_end) - (T + V)(0), the
    integral by Simpson's rule over the grid (error O(dt^4))."""
    mech = runtime.load(name)
    errors, swing = [], 0.0
    for steps in (40, 80):
        out, _ = prescribed(mech, steps)
        ind = lk.independent_indices(mech)
        energy = np.array([sum(mech.energy(q, qd)) for q, qd in zip(out["q"], out["qd"])])[:, 0]
        power = np.einsum("li,li->l", out["tau_ind"], out["qd"][:, ind])
        work = simpson(power, out["t"][1] - out["t"][0])
        errors.append(abs(work - (energy[-1] - energy[0])))
        swing = max(swing, np.abs(energy - energy[0]).max())
    assert 3.5 <= order(errors)[0] <= 4.6, errors
    assert errors[-1] <= 1e-5 * swing


@pytest.mark.parametrize("name", GRID_LINKAGES)
def test_inverse_grid_multipliers_are_the_minimum_norm_solution(name):
    """G^T lambda = M qdd - b (b = tau + Q_springs - h) at every node; lambda is its
    minimum-norm solution: unique when G has full row rank, and orthogonal to the null space
    of G^T (the manifest's redundant rows' indeterminate split) when it has not."""
    mech = runtime.load(name)
    out, _ = prescribed(mech, 10)
    redundant = len(mech.manifest["redundant_rows"])
    assert len(mech.manifest["constraint_rows"]) - mech.manifest["rank"] == redundant
    for q, qd, qdd, tau_i, lam in zip(out["q"], out["qd"], out["qdd"], out["tau_ind"],
                                      out["lambda"]):
        G = mech.closure(q)[1]
        rhs = mech.mass_matrix(q) @ qdd - mech.bias(q, qd, full_forces(mech, tau_i))[0]
        assert np.abs(G.T @ lam - rhs).max() <= 1e-10 * scale(rhs)
        _, sv, Vt = np.linalg.svd(G.T)
        null = Vt[np.sum(sv > 1e-9 * sv[0]):]          # null space of G^T
        assert len(null) == redundant
        assert np.abs(null @ lam).max(initial=0.0) <= 1e-10 * scale(lam)
        assert np.allclose(lam, np.linalg.lstsq(G.T, rhs, rcond=None)[0],
                           rtol=0, atol=1e-10 * scale(lam))


# forward problem: drive torque 0.5 cos(3 t) on the independent coordinate from the reference
# pose with rate 0.5; (t_end, coarsest steps), then steps doubled twice
FORWARD = {"fourbar": (0.2, 100), "andrews": (0.003, 50), "parallelogram3": (0.5, 25),
           "bricard": (0.5, 25)}


def drive_torque(mech):
    ind = lk.independent_indices(mech)

    def tau(t, q, qd):
        out = np.zeros(mech.n)
        out[ind] = 0.5 * np.cos(3 * t)
        return out
    return tau


@pytest.mark.parametrize("name", GRID_LINKAGES)
def test_forward_grid_converges_at_first_order_to_solve_ivp_and_keeps_the_loops_closed(name):
    mech = runtime.load(name)
    t_end, coarse = FORWARD[name]
    q0, v0 = mech.manifest["q_ref"], np.full(mech.manifest["dof"], 0.5)
    tau = drive_torque(mech)
    fine = 4 * coarse
    exact = lk.simulate(mech, q0, v0, t_end, tau=tau, t_eval=np.linspace(0, t_end, fine + 1))
    errors_q, errors_qd = [], []
    for steps in (coarse, 2 * coarse, fine):
        out = lk.forward_dynamics_on_grid(mech, tau, q0, v0, t_end, steps)
        every = fine // steps
        errors_q.append(np.abs(out["q"] - exact.q[::every]).max())
        errors_qd.append(np.abs(out["qd"] - exact.qd[::every]).max())
        for q, qd in zip(out["q"], out["qd"]):
            position, velocity = mech.violation(q, qd)
            assert position[0] <= 1e-12 and velocity[0] <= 1e-12 * scale(qd)
    assert np.all((0.8 <= order(errors_q)) & (order(errors_q) <= 1.2)), errors_q
    assert np.all((0.8 <= order(errors_qd)) & (order(errors_qd) <= 1.2)), errors_qd


# round trip: (a, w, t_end) of a shorter prescribed motion, coarsest steps
ROUND_TRIP = {"fourbar": ((0.3, 2.0, 0.3), 50), "andrews": ((0.5, 50.0, 0.01), 50),
              "parallelogram3": ((0.3, 2.0, 1.0), 50), "bricard": ((0.3, 2.0, 1.0), 50)}


@pytest.mark.parametrize("name", GRID_LINKAGES)
def test_round_trip_forces_of_the_inverse_grid_reproduce_the_motion_at_first_order(name):
    mech = runtime.load(name)
    (a, w, t_end), coarse = ROUND_TRIP[name]
    q_i, qd_i, qdd_i = drive_law(mech, a, w)
    errors = []
    for steps in (coarse, 2 * coarse, 4 * coarse):
        inv = lk.inverse_dynamics_on_grid(mech, q_i, qd_i, qdd_i, mech.manifest["q_ref"],
                                          t_end, steps)

        def tau(t, q, qd, inv=inv):
            return full_forces(mech, inv["tau_ind"][np.searchsorted(inv["t"], t)])
        fwd = lk.forward_dynamics_on_grid(mech, tau, inv["q"][0], qd_i(0.0), t=inv["t"])
        errors.append(np.abs(fwd["q"] - inv["q"]).max())
    assert np.all((0.8 <= order(errors)) & (order(errors) <= 1.2)), errors


def test_an_explicit_uniform_grid_gives_the_same_steps_as_t_end_and_steps():
    mech = runtime.load("parallelogram3")
    tau = drive_torque(mech)
    a = lk.forward_dynamics_on_grid(mech, tau, mech.manifest["q_ref"], [0.5], 0.2, 8)
    b = lk.forward_dynamics_on_grid(mech, tau, mech.manifest["q_ref"], [0.5],
                                    t=np.linspace(0.0, 0.2, 9))
    for key in ("t", "q", "qd", "qdd", "lambda"):
        assert np.array_equal(a[key], b[key]), key


BAD_FORWARD = [
    (dict(t=[0.0, 0.2, 0.1, 0.3]), r"argument 't' must be strictly increasing: t\[2\]"),
    (dict(t=[0.0, 0.1, 0.1]), r"argument 't' must be strictly increasing"),
    (dict(t=[0.0, np.nan]), r"argument 't' contains NaN"),
    (dict(t=[[0.0, 0.1]]), r"argument 't': expected a 1-D grid"),
    (dict(t=[0.0, 0.1], t_end=0.1), r"either the grid 't' or 't_end' and 'steps'"),
    (dict(t_end=-0.1, steps=10), r"argument 't_end' must be a finite time > 0"),
    (dict(t_end=np.nan, steps=10), r"argument 't_end'"),
    (dict(t_end=0.1, steps=0), r"argument 'steps' must be an integer >= 1"),
    (dict(t_end=0.1, steps=2.5), r"argument 'steps'"),
    (dict(t_end=0.1, steps=None), r"argument 'steps'"),
    (dict(t_end=0.1, steps=4, q0=[1.0, 2.0]), r"q0: expected shape \(4,\), got \(2,\)"),
    (dict(t_end=0.1, steps=4, q0=[np.nan, 0, 0, 0]), r"q0: contains NaN"),
    (dict(t_end=0.1, steps=4, qd_ind0=[0.1, 0.2]), r"qd_ind0: expected shape \(1,\)"),
    (dict(t_end=0.1, steps=4, qd_ind0=[np.inf]), r"qd_ind0: contains NaN"),
    (dict(t_end=0.1, steps=4, tau=np.zeros(3)), r"tau: expected shape \(4,\)"),
    (dict(t_end=0.1, steps=4, tau=lambda t, q, qd: np.zeros(2)),
     r"tau\(t, q, qd\) at t = 0: expected shape \(4,\)"),
    (dict(t_end=0.1, steps=4, tau=lambda t, q, qd: np.full(4, np.nan if t > 0.05 else 0.0)),
     r"tau\(t, q, qd\) at t = 0.075: contains NaN"),
]


@pytest.mark.parametrize("kwargs, message", BAD_FORWARD)
def test_forward_grid_refuses_bad_input_naming_the_argument(kwargs, message):
    mech = runtime.load("parallelogram3")
    args = dict(tau=None, q0=mech.manifest["q_ref"], qd_ind0=[0.5]) | kwargs
    with pytest.raises(ValueError, match=message):
        lk.forward_dynamics_on_grid(mech, **args)


def test_inverse_grid_refuses_bad_laws_and_grids_naming_the_argument():
    mech = runtime.load("fourbar")
    q_i, qd_i, qdd_i = drive_law(mech, 0.3, 2.0)
    q_ref = mech.manifest["q_ref"]
    with pytest.raises(ValueError, match=r"q_ind\(t\) at t = 0: expected shape \(1,\)"):
        lk.inverse_dynamics_on_grid(mech, lambda t: [0.1, 0.2], qd_i, qdd_i, q_ref, 1.0, 4)
    with pytest.raises(ValueError, match=r"qdd_ind\(t\) at t = 0.5: contains NaN"):
        lk.inverse_dynamics_on_grid(mech, q_i, qd_i, lambda t: [np.nan if t > 0.3 else 0.0],
                                    q_ref, 1.0, 4)
    with pytest.raises(TypeError, match=r"argument 'qd_ind' must be a function of t"):
        lk.inverse_dynamics_on_grid(mech, q_i, np.zeros(1), qdd_i, q_ref, 1.0, 4)
    with pytest.raises(ValueError, match=r"q_start: expected shape \(3,\)"):
        lk.inverse_dynamics_on_grid(mech, q_i, qd_i, qdd_i, [0.0], 1.0, 4)
    with pytest.raises(ValueError, match=r"argument 't' must be strictly increasing"):
        lk.inverse_dynamics_on_grid(mech, q_i, qd_i, qdd_i, q_ref, t=[0.0, 1.0, 0.5])
