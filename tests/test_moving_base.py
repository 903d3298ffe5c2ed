"""The mechanism on a moving base (kernels base_step, coupled_step, momentum) against an
independent formulation: every body in absolute (inertial) dynamics, the base a prescribed or a
free body, cut joints as constraints with multipliers, one KKT system
(tests/reference/parallel_moving_base.py)."""

from __future__ import annotations

import numpy as np
import pytest

import platforms as P
from reference import parallel_moving_base as ref

MECHS = ["gough_stewart_docking", "hunt_rus_docking", "hexapod_pus"]
N = 12


def close(a, b, rtol=1e-10, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(np.max(np.abs(b)), 1.0)
    err = np.max(np.abs(a - b)) / scale
    assert err < rtol, f"{what}: relative error {err:.2e}"


@pytest.fixture(scope="module", params=MECHS)
def case(request):
    name = request.param
    pf, num = P.bundled(name)
    m = P.load_generated(name, None, "c")
    st = P.random_states(num, N, seed=11)
    rng = np.random.default_rng(5)
    st["a_O"] = rng.normal(0, 2.0, (N, 3))
    st["W"] = rng.normal(0, 0.4, (N, 3))
    st["dW"] = rng.normal(0, 0.6, (N, 3))
    st["V0"] = rng.normal(0, 1.0, (N, 3))
    return name, num, m, st


def _names(m, kernel):
    return [o[0] for o in m.kernels[kernel].outputs]


def _legs_Q(num, m, st, i):
    q, qd = m.leg_rates(st["x"][i], st["u"][i])
    sizes = [len(leg["joints"]) for leg in num["legs"]]
    split = lambda v: np.split(v, np.cumsum(sizes)[:-1])
    return P.law_forces(num, split(q), split(qd), st["F"][i]), split(q)


def test_base_step_matches_absolute_dynamics_with_a_prescribed_base_motion(case):
    name, num, m, st = case
    names = _names(m, "base_step")
    for i in range(N):
        Q, q0 = _legs_Q(num, m, st, i)
        out = dict(zip(names, m.base_step(st["x"][i], st["u"][i], st["F"][i], st["fE"][i],
                                          st["mE"][i], st["g"][i] - st["a_O"][i], st["W"][i],
                                          st["dW"][i])))
        r = ref.solve_moving_base(num, st["x"][i], st["u"][i], Q, st["g"][i], st["fE"][i],
                                  st["mE"][i], st["a_O"][i], st["W"][i], st["dW"][i], q0=q0,
                                  joint_inertia=True)
        close(out["xdot"][6:], r["udot"], what=f"{name} udot")
        close(out["qdd"], np.concatenate(r["qdd"]), what=f"{name} qdd")
        close(out["base_force"], r["base_force"], what=f"{name} base force")
        close(out["base_moment"], r["base_moment"], what=f"{name} base moment")


def coupled_solve(m, base: dict, x, u, F, fE, mE, g, W, F_base, M_base):
    """What the docking driver does: the kernel's affine coefficients, one 6 x 6 solve."""
    k = dict(zip(_names(m, "coupled_step"), m.coupled_step(x, u, F, fE, mE, g, W, np.zeros(3))))
    mass, c, Ic = base["m"], base["c"], base["I"]
    IO = Ic + mass * (c @ c * np.eye(3) - np.outer(c, c))
    S = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    M = np.block([[mass * np.eye(3), -mass * S], [mass * S, IO]])
    bias = np.concatenate([mass * np.cross(W, np.cross(W, c)), np.cross(W, IO @ W)])
    gb = mass * g
    rhs = np.concatenate([F_base + gb, M_base + np.cross(c, gb)]) - bias + k["wrench"]
    sign = np.diag([-1.0, -1, -1, 1, 1, 1])          # the kernel takes g - a_O
    K = k["dwrench_dbase"].reshape(6, 6) @ sign
    a = np.linalg.solve(M - K, rhs)
    udot = k["udot"] + k["dudot_dbase"].reshape(6, 6) @ sign @ a
    return a, udot, k["wrench"] + K @ a


def test_the_coupled_solve_matches_the_base_as_a_free_body(case):
    name, num, m, st = case
    rng = np.random.default_rng(2)
    for i in range(N):
        base = {"m": rng.uniform(50, 500), "c": rng.normal(0, 0.5, 3),
                "I": np.diag(rng.uniform(20, 200, 3))}
        F_base, M_base = rng.normal(0, 300, 3), rng.normal(0, 100, 3)
        Q, q0 = _legs_Q(num, m, st, i)
        a, udot, wrench = coupled_solve(m, base, st["x"][i], st["u"][i], st["F"][i],
                                        st["fE"][i], st["mE"][i], st["g"][i], st["W"][i],
                                        F_base, M_base)
        r = ref.solve_free_base(num, base, st["x"][i], st["u"][i], Q, st["g"][i], st["fE"][i],
                                st["mE"][i], st["W"][i], F_base, M_base, q0=q0,
                                joint_inertia=True)
        close(a[:3], r["a_O"], what=f"{name} a_O")
        close(a[3:], r["Omega_dot"], what=f"{name} Omega_dot")
        close(udot, r["udot"], what=f"{name} udot")
        close(wrench[:3], r["base_force"], what=f"{name} base force")
        close(wrench[3:], r["base_moment"], what=f"{name} base moment")


def test_the_base_acceleration_coefficients_are_exact(case):
    """coupled_step's derivative outputs equal differences of base_step (it is affine in g and
    Omega_dot), for steps of 1 and 1e3."""
    name, num, m, st = case
    names_c, names_b = _names(m, "coupled_step"), _names(m, "base_step")
    i = 0
    args = (st["x"][i], st["u"][i], st["F"][i], st["fE"][i], st["mE"][i])
    k = dict(zip(names_c, m.coupled_step(*args, st["g"][i], st["W"][i], st["dW"][i])))
    D = k["dudot_dbase"].reshape(6, 6)
    for step in (1.0, 1e3):
        for j in range(6):
            e = np.zeros(6)
            e[j] = step
            hi = dict(zip(names_b, m.base_step(*args, st["g"][i] + e[:3], st["W"][i],
                                               st["dW"][i] + e[3:])))
            close((hi["xdot"][6:] - k["udot"]) / step, D[:, j], rtol=1e-8,
                  what=f"{name} column {j}")


def test_momentum_and_kinetic_energy_match_the_absolute_reference(case):
    name, num, m, st = case
    for i in range(N):
        _, q0 = _legs_Q(num, m, st, i)
        P_, H_, T_ = m.momentum(st["x"][i], st["u"][i], st["W"][i], st["V0"][i])
        r = ref.momentum(num, st["x"][i], st["u"][i], st["V0"][i], st["W"][i], q0=q0)
        close(P_, r["P"], what=f"{name} momentum")
        close(H_, r["H"], what=f"{name} angular momentum")
        inertia = sum(0.5 * law.get("inertia", 0.0) * qdj ** 2
                      for leg, qd in zip(num["legs"], r["qd"])
                      for law, qdj in zip(leg["laws"], qd))
        close(T_[0] - inertia, r["T"], what=f"{name} kinetic energy")
