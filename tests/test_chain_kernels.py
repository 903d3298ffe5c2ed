"""Every generated kernel (C and Python) on random chains against
(a) the plain numpy implementation of the same equations (tests/reference/chain_numpy.py) and
(b) checks independent of our derivation: Featherstone's spatial algorithms
(tests/reference/featherstone.py), finite differences, energy, symmetry and definiteness.
Random chains: random joint types and axes, composite U/S/C joints, massless bodies, springs,
named parameters, N = 1..12, fixed and free-flying base; agreement to 1e-10 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

from mechgen import runtime
from tests.chains import featherstone_chain, numeric_model, random_chain, write_generated
from tests.reference import chain_numpy as ref
from tests.reference import featherstone as fs

RTOL = 1e-10
STATES = 16

# (seed, joints, base, named parameters, tree)
CASES = [(11, 1, "fixed", False, False), (12, 2, "fixed", True, False),
         (13, 3, "fixed", False, False), (14, 5, "fixed", True, False),
         (15, 8, "fixed", False, False), (16, 12, "fixed", False, False),
         (17, 1, "free", False, False), (18, 4, "free", True, False),
         (19, 7, "free", False, False),
         (21, 6, "fixed", False, True), (22, 9, "fixed", True, True), (24, 10, "free", False, True)]


def close(a, b, rtol=RTOL, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
    err = float(np.abs(a - b).max()) if b.size else 0.0
    assert err <= rtol * scale, f"{what}: max error {err:.3e} > {rtol:.0e} * {scale:.3e}"


@pytest.fixture(scope="module", params=CASES,
                ids=lambda c: f"seed{c[0]}-n{c[1]}-{c[2]}{'-tree' if c[4] else ''}")
def case(request, tmp_path_factory):
    seed, n, base, params, tree = request.param
    chain, pvals = random_chain(seed, n, base, params=params, tree=tree)
    assert chain.is_tree == tree
    root = tmp_path_factory.mktemp("gen")
    write_generated(chain, root)
    model = numeric_model(chain, pvals)
    rng = np.random.default_rng(seed + 1000)
    nq = chain.n
    q = rng.uniform(-np.pi, np.pi, (STATES, nq))
    for i, j in enumerate(chain.joints):
        if j.kind == "P":
            q[:, i] = rng.uniform(-0.5, 0.5, STATES)
    if base == "free":  # keep away from the y-z-x singularity at psi_z = +-90 deg
        q[:, 3:6] = rng.uniform(-1.0, 1.0, (STATES, 3))
    states = dict(q=q, qd=rng.normal(size=(STATES, nq)), qdd=rng.normal(size=(STATES, nq)),
                  Q=rng.normal(size=(STATES, nq)))
    mechs = {be: runtime.load(chain.name, be, generated=root) for be in ("c", "python")}
    return chain, model, states, mechs


def _p(model, k=None):
    return {"p": np.tile(model["p"], (STATES, 1))} if model["p"].size else {}


@pytest.fixture(params=["c", "python"])
def backend(request):
    return request.param


def test_forward_kinematics_matches_numpy_and_featherstone(case, backend):
    chain, model, st, mechs = case
    r, tau = mechs[backend].forward_kinematics(st["q"], **_p(model))
    fsc = featherstone_chain(model)
    for s in range(STATES):
        kin = ref.kinematics(model, st["q"][s])
        fk = fs.forward_kinematics(fsc, st["q"][s])
        for b, j in enumerate(model["named"]):
            close(r[s, b], kin[j]["r"], what="r vs numpy")
            close(tau[s, b], kin[j]["tau"], what="tau vs numpy")
            close(r[s, b], fk[j][1], what="r vs featherstone")
            close(tau[s, b], fk[j][0].T, what="tau vs featherstone")
        for k, (j, off) in enumerate(model["points"]):
            b = len(model["named"]) + k
            close(r[s, b], fk[j][1] + fk[j][0] @ off, what="point vs featherstone")


def test_jacobians_match_numpy_featherstone_and_finite_differences(case, backend):
    chain, model, st, mechs = case
    m = mechs[backend]
    T, R = m.jacobians(st["q"], **_p(model))
    fsc = featherstone_chain(model)
    nb = len(model["named"])
    for s in range(4):
        q = st["q"][s]
        kin = ref.kinematics(model, q)
        for b, j in enumerate(model["named"]):
            close(T[s, b], kin[j]["T"], what="T vs numpy")
            close(R[s, b], kin[j]["R"], what="R vs numpy")
            Jv, Jw = fs.point_jacobian(fsc, q, j, np.zeros(3))
            close(T[s, b], Jv, what="T vs featherstone")
            close(R[s, b], Jw, what="R vs featherstone")
        for k, (j, off) in enumerate(model["points"]):
            Jv, Jw = fs.point_jacobian(fsc, q, j, off)
            close(T[s, nb + k], Jv, what="point T vs featherstone")
        # finite differences of the generated forward kinematics
        p1 = {"p": model["p"]} if model["p"].size else {}
        h = 1e-6
        for i in range(chain.n):
            dq = np.zeros(chain.n)
            dq[i] = h
            rp, tp = m.forward_kinematics(q + dq, **p1)
            rm, tm = m.forward_kinematics(q - dq, **p1)
            _, t0 = m.forward_kinematics(q, **p1)
            close((rp - rm)[:nb + len(model['points'])] / (2 * h), T[s, :, :, i], rtol=1e-7, what="dr/dq")
            for b in range(nb):
                W = ((tp[b] - tm[b]).T / (2 * h)) @ t0[b]   # d(tau^T)/dq tau = skew(R col)
                close([W[2, 1], W[0, 2], W[1, 0]], R[s, b, :, i], rtol=1e-7, what="dtau/dq")


def test_velocities_match_numpy_and_featherstone(case, backend):
    chain, model, st, mechs = case
    v, om, w, eps = mechs[backend].velocities(st["q"], st["qd"], **_p(model))
    fsc = featherstone_chain(model)
    for s in range(STATES):
        kin = ref.kinematics(model, st["q"][s], st["qd"][s])
        bv = fs.body_velocities(fsc, st["q"][s], st["qd"][s])
        for b, j in enumerate(model["named"]):
            for name, got in (("v", v), ("omega", om), ("w", w), ("eps", eps)):
                close(got[s, b], kin[j][name], what=f"{name} vs numpy")
            close(v[s, b], bv[j - 1][0], what="v vs featherstone")
            close(om[s, b], bv[j - 1][1], what="omega vs featherstone")
        # w and eps: accelerations at qdd = 0 are (d/dt) of v, omega along the motion
        pass


def test_w_eps_are_the_velocity_product_accelerations(case, backend):
    """a_j = T_j qdd + w_j: differentiate v_j along q(t) = q + qd t + qdd t^2/2 numerically."""
    chain, model, st, mechs = case
    m = mechs[backend]
    p1 = {"p": model["p"]} if model["p"].size else {}
    h = 1e-5
    for s in range(3):
        q, qd, qdd = st["q"][s], st["qd"][s], st["qdd"][s]
        T, R = m.jacobians(q, **p1)
        v0, om0, w, eps = m.velocities(q, qd, **p1)
        vp, omp, _, _ = m.velocities(q + h * qd + h * h / 2 * qdd, qd + h * qdd, **p1)
        vm, omm, _, _ = m.velocities(q - h * qd + h * h / 2 * qdd, qd - h * qdd, **p1)
        nb = len(model["named"])
        close((vp - vm) / (2 * h), np.einsum("bij,j->bi", T[:nb], qdd) + w, rtol=1e-6, what="dv/dt")
        close((omp - omm) / (2 * h), np.einsum("bij,j->bi", R[:nb], qdd) + eps, rtol=1e-6,
              what="domega/dt")


def test_mass_matrix_matches_numpy_featherstone_and_is_spd(case, backend):
    chain, model, st, mechs = case
    A = mechs[backend].mass_matrix(st["q"], **_p(model))
    fsc = featherstone_chain(model)
    for s in range(STATES):
        close(A[s], ref.mass_matrix(model, st["q"][s]), what="A vs numpy")
        close(A[s], fs.crba(fsc, st["q"][s]), what="A vs featherstone")
        assert np.array_equal(A[s], A[s].T), "A not exactly symmetric"
        assert np.linalg.eigvalsh(A[s]).min() > 0, "A not positive definite"


def test_bias_inverse_and_forward_dynamics_match_references(case, backend):
    chain, model, st, mechs = case
    m = mechs[backend]
    P = _p(model)
    b = m.bias(st["q"], st["qd"], st["Q"], **P)
    Q_id = m.inverse_dynamics(st["q"], st["qd"], st["qdd"], **P)
    qdd = m.forward_dynamics(st["q"], st["qd"], st["Q"], **P)
    fsc = featherstone_chain(model)
    g = model["gravity"]
    for s in range(STATES):
        q, qd, qdd_s, Q = st["q"][s], st["qd"][s], st["qdd"][s], st["Q"][s]
        pas = ref.passive(model, q, qd)
        close(b[s], ref.bias(model, q, qd, Q), what="bias vs numpy")
        close(Q_id[s], ref.inverse_dynamics(model, q, qd, qdd_s), what="ID vs numpy")
        close(Q_id[s], fs.rnea(fsc, q, qd, qdd_s, g) - pas, what="ID vs featherstone rnea")
        close(qdd[s], ref.forward_dynamics(model, q, qd, Q), rtol=1e-9, what="FD vs numpy")
        close(qdd[s], fs.aba(fsc, q, qd, Q + pas, g), rtol=1e-9, what="FD vs featherstone aba")


def test_mass_matrix_columns_are_inverse_dynamics_of_unit_accelerations(case, backend):
    chain, model, st, mechs = case
    m = mechs[backend]
    p1 = {"p": model["p"]} if model["p"].size else {}
    n = chain.n
    for s in range(4):
        q, qd = st["q"][s], st["qd"][s]
        A = m.mass_matrix(q, **p1)
        E = np.eye(n)
        cols = m.inverse_dynamics(np.tile(q, (n, 1)), np.tile(qd, (n, 1)), E,
                                  **({"p": np.tile(model["p"], (n, 1))} if p1 else {}))
        rest = m.inverse_dynamics(q, qd, np.zeros(n), **p1)
        close((cols - rest).T, A, what="A e_i = ID(e_i) - ID(0)")
        # and the bias is minus inverse dynamics at zero acceleration and zero drive
        close(m.bias(q, qd, np.zeros(n), **p1), -rest, what="b = -ID(qdd=0)")


def test_forward_after_inverse_dynamics_is_identity(case, backend):
    chain, model, st, mechs = case
    m = mechs[backend]
    P = _p(model)
    Q = m.inverse_dynamics(st["q"], st["qd"], st["qdd"], **P)
    close(m.forward_dynamics(st["q"], st["qd"], Q, **P), st["qdd"], rtol=1e-9, what="FD(ID(qdd))")


def test_energy_equals_sum_over_bodies_and_power_balance(case, backend):
    chain, model, st, mechs = case
    m = mechs[backend]
    p1 = {"p": model["p"]} if model["p"].size else {}
    fsc = featherstone_chain(model)
    for s in range(4):
        q, qd, Q = st["q"][s], st["qd"][s], st["Q"][s]
        T, V = m.energy(q, qd, **p1)
        A = m.mass_matrix(q, **p1)
        close(T, 0.5 * qd @ A @ qd, what="T = 1/2 qd^T A qd")
        close(T, fs.kinetic_energy(fsc, q, qd), what="T vs featherstone")
        close(V, fs.potential_energy(fsc, q, model["gravity"]), what="V vs featherstone")
        # d(T + V)/dt = qd . (Q + Q_passive) along the motion the forward dynamics gives
        qdd = m.forward_dynamics(q, qd, Q, **p1)
        h = 1e-5
        E = lambda sgn: sum(m.energy(q + sgn * h * qd + h * h / 2 * qdd, qd + sgn * h * qdd, **p1))
        power = qd @ (Q + ref.passive(model, q, qd))
        close((E(1) - E(-1)) / (2 * h), power, rtol=1e-6, what="dE/dt = power")
