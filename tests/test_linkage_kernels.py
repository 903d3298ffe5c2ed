"""The linkage kernels (papers 001 and 004) on every bundled closed-loop linkage: closure and
its Jacobian against finite differences, the transmission matrix in the null space, the
acceleration constraint, the reduced equations against the multiplier (KKT) form with any
choice of independent rows (004: the motion does not depend on it, the multipliers do),
inverse after forward dynamics, the energy balance, and paper 001's pseudo-inertia trace form
of the kinetic energy against the composite-body mass matrix."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import linkage as lk

LINKAGES = ["fourbar", "double_fourbar", "parallelogram3", "bricard", "bennett", "hooke_shafts",
            "swash_plate", "double_wishbone", "landing_gear", "andrews"]


@pytest.fixture(scope="module", params=LINKAGES)
def mech(request):
    return runtime.load(request.param)


def poses(mech, count: int = 6, seed: int = 1):
    """Assembled random poses near the reference pose, with random independent rates."""
    rng = np.random.default_rng(seed)
    ind = lk.independent_indices(mech)
    q_ref = np.array(mech.manifest["q_ref"])
    out = []
    for _ in range(count * 4):
        q = q_ref.copy()
        q[ind] += rng.uniform(-0.05, 0.05, len(ind))
        try:
            q = lk.assemble(mech, q)
        except lk.AssemblyError:
            continue
        out.append((q, rng.normal(size=len(ind))))
        if len(out) == count:
            break
    assert len(out) == count
    return out


def d4(f, x, h):
    """Fourth-order central difference of f at x along all coordinates (columns)."""
    cols = []
    for e in np.eye(len(x)):
        cols.append((8 * (f(x + h * e) - f(x - h * e)) - (f(x + 2 * h * e) - f(x - 2 * h * e)))
                    / (12 * h))
    return np.array(cols).T


def test_reference_pose_is_closed_and_on_its_branch(mech):
    q = np.array(mech.manifest["q_ref"])
    phi, G, orientation = mech.closure(q)
    assert np.abs(phi).max() < 1e-13
    assert np.all(orientation > 0)
    assert np.linalg.matrix_rank(G, tol=1e-9 * np.abs(G).max()) == mech.manifest["rank"]


def test_jacobian_equals_finite_differences_of_the_residual(mech):
    for q, _ in poses(mech, 3):
        _, G, _ = mech.closure(q)
        Gfd = d4(lambda x: mech.closure(x)[0], q, 1e-3)
        assert np.abs(G - Gfd).max() < 1e-9 * max(1.0, np.abs(G).max())


def test_transmission_matrix_spans_the_velocity_null_space(mech):
    ind = lk.independent_indices(mech)
    for q, w in poses(mech):
        _, G, _ = mech.closure(q)
        qd, H = mech.velocity(q, w)
        scale = max(1.0, np.abs(G).max()) * max(1.0, np.abs(H).max())
        assert np.abs(G @ H).max() < 1e-12 * scale
        assert np.allclose(H[ind], np.eye(len(ind)), atol=0)
        assert np.allclose(qd, H @ w, rtol=1e-13, atol=1e-13)


def test_acceleration_bias_equals_the_derivative_of_G_along_the_motion(mech):
    for q, w in poses(mech, 3):
        qd, _ = mech.velocity(q, w)
        _, gamma = mech.bias(q, qd, np.zeros(mech.n))
        h = 1e-3
        Gq = lambda x: mech.closure(x)[1] @ qd  # noqa: E731
        Gdot_qd = (8 * (Gq(q + h * qd) - Gq(q - h * qd)) - (Gq(q + 2 * h * qd)
                                                          - Gq(q - 2 * h * qd))) / (12 * h)
        assert np.abs(gamma + Gdot_qd).max() < 1e-8 * max(1.0, np.abs(gamma).max())


def kkt(M, b, G, gamma, rows):
    """qdd and lambda of M qdd = b + G_K^T lambda, G_K qdd = gamma_K (least squares, min norm)."""
    GK, gK = G[rows], gamma[rows]
    n, m = M.shape[0], len(rows)
    A = np.block([[M, -GK.T], [GK, np.zeros((m, m))]])
    x = np.linalg.lstsq(A, np.concatenate([b, gK]), rcond=None)[0]
    return x[:n], x[n:]


def test_reduced_equations_equal_the_multiplier_form_for_any_independent_rows(mech):
    """Paper 004: qdd is the same for every choice of r independent rows; G^T lambda too."""
    rng = np.random.default_rng(7)
    r = mech.manifest["rank"]
    for q, w in poses(mech, 4):
        qd, _ = mech.velocity(q, w)
        tau = rng.normal(size=mech.n)
        qdd, lam, *_ = mech.forward_dynamics(q, qd, tau)
        M = mech.mass_matrix(q)
        b, gamma = mech.bias(q, qd, tau)
        _, G, _ = mech.closure(q)
        scale = max(1.0, np.abs(qdd).max())
        forces = []
        choices = [rows for rows in itertools.combinations(range(G.shape[0]), r)
                   if np.linalg.matrix_rank(G[list(rows)], tol=1e-7) == r][:6]
        assert choices
        for rows in choices:
            x, mult = kkt(M, b, G, gamma, list(rows))
            assert np.abs(x - qdd).max() < 1e-10 * scale, rows
            forces.append(G[list(rows)].T @ mult)
        assert np.abs(M @ qdd - b - G.T @ lam).max() < 1e-10 * max(1.0, np.abs(b).max())
        for f in forces:
            assert np.abs(f - G.T @ lam).max() < 1e-9 * max(1.0, np.abs(f).max())


def test_redundant_multipliers_differ_with_the_rows_kept():
    mech = runtime.load("parallelogram3")
    r = mech.manifest["rank"]
    q, w = poses(mech, 1)[0]
    qd, _ = mech.velocity(q, w)
    M = mech.mass_matrix(q)
    b, gamma = mech.bias(q, qd, np.zeros(mech.n))
    _, G, _ = mech.closure(q)
    sets = [rows for rows in itertools.combinations(range(G.shape[0]), r)
            if np.linalg.matrix_rank(G[list(rows)], tol=1e-7) == r]
    mults = []
    for rows in sets[:2]:
        lam = np.zeros(G.shape[0])
        lam[list(rows)] = kkt(M, b, G, gamma, list(rows))[1]
        mults.append(lam)
    assert np.abs(mults[0] - mults[1]).max() > 1e-3
    assert mech.manifest["redundant_rows"]


def test_inverse_dynamics_returns_the_drives_forward_dynamics_was_given(mech):
    rng = np.random.default_rng(3)
    ind = lk.independent_indices(mech)
    for q, w in poses(mech, 4):
        qd, _ = mech.velocity(q, w)
        tau = np.zeros(mech.n)
        tau[ind] = rng.normal(size=len(ind))
        qdd, lam, *_ = mech.forward_dynamics(q, qd, tau)
        tau_i, qdd2, lam2, *_ = mech.inverse_dynamics(q, qd, qdd[ind])
        assert np.abs(tau_i - tau[ind]).max() < 1e-9 * max(1.0, np.abs(tau).max())
        assert np.abs(qdd2 - qdd).max() < 1e-10 * max(1.0, np.abs(qdd).max())
        assert np.abs(lam2 - lam).max() < 1e-9 * max(1.0, np.abs(lam).max())


def test_power_balance_dE_dt_equals_the_power_of_drives_and_dampers(mech):
    rng = np.random.default_rng(5)
    for q, w in poses(mech, 3):
        qd, H = mech.velocity(q, w)
        tau = rng.normal(size=mech.n)
        qdd = mech.forward_dynamics(q, qd, tau)[0]
        E = lambda x, v: float(np.sum(mech.energy(x, v)))  # noqa: E731
        h = 1e-3 / max(1.0, np.abs(qd).max(), np.sqrt(np.abs(qdd).max()))
        path = lambda s: (q + s * qd + s * s / 2 * qdd, qd + s * qdd)  # noqa: E731
        dE = (8 * (E(*path(h)) - E(*path(-h))) - (E(*path(2 * h)) - E(*path(-2 * h)))) / (12 * h)
        # the dampers' generalised forces: the part of b(q, qd) odd in qd (linear dampers;
        # the Coriolis and centrifugal terms are even)
        damp = (mech.bias(q, qd, np.zeros(mech.n))[0] - mech.bias(q, -qd, np.zeros(mech.n))[0]) / 2
        P = qd @ tau + qd @ damp
        assert abs(dE - P) < 1e-7 * max(1.0, abs(P), float(np.abs(mech.energy(q, qd)).max()))


def test_energy_is_conserved_without_drives_and_dampers():
    for name in ("fourbar", "bricard", "bennett", "swash_plate"):
        mech = runtime.load(name)
        q, w = poses(mech, 1, seed=11)[0]
        tr = lk.simulate(mech, q, w, 0.5, rtol=1e-11, atol=1e-12, t_eval=np.linspace(0, 0.5, 11))
        E = np.array([float(np.sum(mech.energy(a, b))) for a, b in zip(tr.q, tr.qd)])
        scale = max(np.abs(mech.energy(tr.q[0], tr.qd[0])).max(), 1.0)
        assert np.ptp(E) < 1e-8 * scale, name
        assert mech.violation(tr.q[-1], tr.qd[-1])[0][0] < 1e-9


def pseudo_inertia(m, c, I_c):
    """Paper 001: J = int r r^T dm, r = (1, x, y, z), about the frame origin."""
    I_o = I_c + m * (c @ c * np.eye(3) - np.outer(c, c))
    J = np.zeros((4, 4))
    J[0, 0] = m
    J[0, 1:] = J[1:, 0] = m * c
    J[1:, 1:] = 0.5 * np.trace(I_o) * np.eye(3) - I_o
    return J


def test_mass_matrix_equals_paper_001_trace_form_of_the_kinetic_energy(mech):
    """K = 1/2 sum_i tr(Adot_i J_i Adot_i^T) with A_i the body's homogeneous pose
    [[1, 0], [r_c, R]] about its centre of mass; M from polarisation of K over unit rates."""
    import tomllib
    from pathlib import Path
    spec = tomllib.loads((Path(runtime.__file__).resolve().parent.parent / "generator" /
                          "mechanisms" / f"{mech.name}.toml").read_text())
    bodies = {b["name"]: b for b in spec["bodies"]}
    names = mech.manifest["bodies"]
    npts = len(mech.manifest["points"])
    q = poses(mech, 1)[0][0]
    n = mech.n

    def K(qd):
        _, v, _, R, omega, _ = mech.kinematics(q, qd, np.zeros(n))
        total = 0.0
        for k, nm in enumerate(names):
            b = bodies[nm]
            xx, yy, zz, xy, xz, yz = b.get("inertia", [0] * 6)
            I_c = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], float)
            J = pseudo_inertia(float(b["mass"]), np.zeros(3), I_c)
            Adot = np.zeros((4, 4))
            Adot[1:, 0] = v[npts + k]
            W = np.array([[0, -omega[k][2], omega[k][1]], [omega[k][2], 0, -omega[k][0]],
                          [-omega[k][1], omega[k][0], 0]])
            Adot[1:, 1:] = W @ R[k]
            total += 0.5 * np.trace(Adot @ J @ Adot.T)
        return total

    E = np.eye(n)
    M_trace = np.array([[K(E[i] + E[j]) - K(E[i]) - K(E[j]) for j in range(n)] for i in range(n)])
    M = mech.mass_matrix(q)
    assert np.abs(M_trace - M).max() < 1e-10 * max(1.0, np.abs(M).max())


def test_spring_kernel_length_rate_and_tension_agree_with_its_generalised_force():
    """The strut's tension F and dL/dq: its generalised force -F dL/dq is what the spring
    adds to the bias (double wishbone: the strut is its only force element besides gravity)."""
    mech = runtime.load("double_wishbone")
    for q, w in poses(mech, 3):
        qd, _ = mech.velocity(q, w)
        L, Ld, F = mech.springs(q, qd)[0]
        dL = d4(lambda x: np.atleast_1d(mech.springs(x, qd)[0][0]), q, 1e-4)[0]
        assert abs(Ld - dL @ qd) < 1e-9
        k, c = 30000.0, 2500.0
        L0 = 0.686817
        assert abs(F - (k * (L - L0) + c * Ld)) < 1e-6 * max(1.0, abs(F))


def test_suspension_demo_writes_its_plot(tmp_path):
    from mechgen.runtime import linkage_demo
    assert linkage_demo.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "suspension.png").stat().st_size > 10_000
