"""Self-checks of the Andrews' squeezing mechanism reference (andrews_testset.py) and of its
linkage spec (generator/mechanisms/andrews.toml, made by make_andrews_spec.py).

* the transcription: the 30-digit initial values close the loops, the published consistent
  accelerations and multipliers at t = 0 are reproduced, G and the bias are the derivatives of g;
* the integration to t = 0.03 reproduces the published reference solution (to its own accuracy,
  1.4e-9 absolute in the angles, see Y_EXT in andrews_testset.py) and an independent 80-bit
  integration (to 1e-12);
* the spec: regenerating it gives the same file, its reference pose closes the loops, its joint
  coordinates are the Test Set's angles (q_ref and signs), and the absolute-coordinate
  formulation (linkage_absolute.py), fed with the spec only, gives the Test Set's accelerations
  and multipliers and the same motion over 0.03 s.
"""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from . import andrews_testset as ats
from . import make_andrews_spec
from .linkage_absolute import LinkageAbsolute

SPEC_PATH = make_andrews_spec.OUT
ANG = ats.ANGLE_NAMES


@pytest.fixture(scope="module")
def linkage() -> LinkageAbsolute:
    with open(SPEC_PATH, "rb") as fh:
        return LinkageAbsolute(tomllib.load(fh))


def wrap(x):
    return (np.asarray(x) + np.pi) % (2 * np.pi) - np.pi


# ---------------------------------------------------------------------------
# the Test Set transcription
# ---------------------------------------------------------------------------


def test_initial_values_are_consistent():
    assert np.max(np.abs(ats.constraints(ats.Q0))) < 1e-16
    qdd, lam = ats.qdd_lambda(ats.Q0, ats.QD0)
    np.testing.assert_allclose(qdd, ats.QDD0, rtol=1e-14, atol=1e-9)
    np.testing.assert_allclose(lam, ats.LAMBDA0, rtol=1e-14, atol=1e-12)


def test_jacobian_and_bias_are_derivatives():
    rng = np.random.default_rng(0)
    h = 1e-30
    for q, qd in [(ats.Q_REF, ats.QD_REF), (rng.uniform(-3, 3, 7), rng.uniform(-50, 50, 7))]:
        G = ats.constraint_jacobian(q)
        Gcs = np.array([np.imag(ats.constraints(q + 1j * h * np.eye(7)[j])) / h
                        for j in range(7)]).T
        np.testing.assert_allclose(G, Gcs, rtol=0, atol=1e-16)
        # bias = d/dt (G qd) at fixed qd: complex step of G(q + i h qd) qd
        bias = np.imag(ats.constraint_jacobian(q + 1j * h * qd) @ qd) / h
        np.testing.assert_allclose(ats.constraint_bias(q, qd), bias,
                                   rtol=1e-13, atol=1e-12 * np.max(np.abs(bias)))


def test_mass_matrix_is_the_kinetic_energy_of_the_points():
    """M from the Test Set equals sum m |dCOM/dq|^2 + I |dangle/dq|^2 with points()."""
    rng = np.random.default_rng(1)
    P = ats.PARAMS
    h = 1e-30
    for q in (ats.Q0, ats.Q_REF, rng.uniform(-3, 3, 7)):
        M = np.zeros((7, 7))
        for k in range(1, 8):
            Jc = np.array([np.imag(ats.points(q + 1j * h * np.eye(7)[j])[f"COM{k}"]) / h
                           for j in range(7)]).T            # 2 x 7
            Ja = ats.BODY_ANGLE_MAP[k - 1]
            M += P[f"m{k}"] * Jc.T @ Jc + P[f"i{k}"] * np.outer(Ja, Ja)
        np.testing.assert_allclose(ats.mass_matrix(q), M, rtol=1e-13, atol=1e-20)


def test_integration_reproduces_published_solution():
    y = ats.integrate(rtol=1e-13, atol=1e-13)
    # against our 80-bit solution: 3e-13 seen with scipy 1.16, 3.4e-12 with scipy 1.17.1
    # (angles up to 16 rad: 2e-13 relative); DOP853's global error at rtol = atol = 1e-13
    np.testing.assert_allclose(y[:7], ats.Y_EXT[:7], rtol=0, atol=1e-11)
    np.testing.assert_allclose(y[7:], ats.Y_EXT[7:], rtol=2e-10, atol=0)   # 6.9e-11 (1.17.1)
    # against the published reference (its own accuracy; 1.43e-9 seen in Theta)
    np.testing.assert_allclose(y[:7], ats.Q_REF, rtol=0, atol=2e-9)
    np.testing.assert_allclose(y[7:], ats.QD_REF, rtol=1e-7, atol=0)
    np.testing.assert_allclose(y[:7], ats.Q_REF, rtol=5e-10, atol=0)
    # the published state itself: the symmetry Phi = -Omega of the mechanism holds to 1e-16
    assert abs(ats.Q_REF[3] + ats.Q_REF[5]) < 1e-15


def test_longdouble_integration_matches_stored_solution():
    if np.finfo(np.longdouble).eps > 1e-18:
        pytest.skip("long double is double here")
    y = ats.integrate_longdouble(n_steps=500)
    np.testing.assert_allclose(np.asarray(y[:7], float), ats.Y_EXT[:7], rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(y[7:], float), ats.Y_EXT[7:], rtol=0, atol=1e-10)


def test_published_multipliers_at_end_agree_after_projection():
    """qdd_lambda at the published end state (projected onto G qd = 0) vs the published
    qdd and lambda: they agree only to the published state's accuracy (1.3e-6 relative)."""
    q, qd = ats.project(ats.Q_REF, ats.QD_REF)
    qdd, lam = ats.qdd_lambda(q, qd)
    np.testing.assert_allclose(qdd, ats.QDD_REF, rtol=2e-6)
    np.testing.assert_allclose(lam, ats.LAMBDA_REF, rtol=2e-6)


# ---------------------------------------------------------------------------
# the linkage spec
# ---------------------------------------------------------------------------


def test_spec_file_is_generated(tmp_path):
    out = tmp_path / "andrews.toml"
    make_andrews_spec.main([str(out)])
    assert out.read_text() == SPEC_PATH.read_text()


def test_spec_structure(linkage):
    spec = linkage.spec
    names = [j["name"] for j in spec["joints"]]
    assert names[:7] == ["beta", "Theta", "gamma", "delta", "Phi", "epsilon", "Omega"]
    cut = [j["name"] for j in spec["joints"] if j.get("cut")]
    assert cut == ["E23", "E24", "E26"]
    for j in spec["joints"]:
        assert j["type"] == "R" and j["axis"] == [0.0, 0.0, 1.0]
        if j["name"] in ANG:
            assert j["q_ref"] == pytest.approx(ats.Q0[ANG.index(j["name"])], abs=1e-17)
    for k, b in enumerate(spec["bodies"], start=1):
        assert b["name"] == f"body{k}"
        assert b["mass"] == ats.PARAMS[f"m{k}"]
        assert b["inertia"][2] == ats.PARAMS[f"i{k}"]
    assert spec["mechanism"]["gravity"] == [0.0, 0.0, 0.0]
    assert linkage.springs[0]["k"] == ats.PARAMS["c0"]
    assert linkage.springs[0]["L0"] == ats.PARAMS["l0"]
    # 7 bodies x 6 - 10 R joints x 5 rows: rank 41 of 50 rows (3 planar loops x 3 redundant)
    assert linkage.nrows == 50


def test_spec_reference_pose_closes_loops(linkage):
    res = linkage.residual(linkage.reference_poses())
    assert max(np.max(np.abs(r)) for r in res.values()) < 1e-15
    # and the Test Set's own pose builder lands on the spec's reference pose
    poses, _ = ats.body_states(ats.Q0, ats.QD0)
    for name, (R, r) in poses.items():
        np.testing.assert_allclose(R, np.eye(3), atol=0)
        np.testing.assert_allclose(r, linkage.bodies[linkage.index[name]]["com"], atol=1e-17)


def test_spec_joint_coordinates_are_the_test_set_angles(linkage):
    """The spec's coordinate convention (second body relative to the first, about +z, plus
    q_ref) gives exactly the Test Set's angles, at the reference and after the motion."""
    q, qd = ats.project(ats.Q_REF, ats.QD_REF)
    for qq, qqd in [(ats.Q0, ats.QD0), (q, qd), (ats.Q0 + 0.1, np.arange(1.0, 8.0))]:
        poses, twists = ats.body_states(qq, qqd)
        coords = linkage.joint_coordinates(poses, twists)
        for i, name in enumerate(ANG):
            assert wrap(coords[name][0] - qq[i]) == pytest.approx(0.0, abs=1e-14), name
            assert coords[name][1] == pytest.approx(qqd[i], abs=1e-12), name


@pytest.mark.parametrize("where", ["t=0", "t=0.03"])
def test_spec_dynamics_match_test_set(linkage, where):
    """Absolute coordinates + all 10 joints as constraints, from the spec only, vs the Test
    Set's M, f, G: angular accelerations and the cut joints' in-plane reactions = lambda."""
    if where == "t=0":
        q, qd = ats.Q0, ats.QD0
    else:   # the published end state made consistent (its G qd is 1e-9 off)
        q, qd = ats.project(ats.Q_REF, ats.QD_REF)
    qdd, lam = ats.qdd_lambda(q, qd)
    poses, twists = ats.body_states(q, qd)
    assert np.max(np.abs(linkage.residual_vector(poses))) < 1e-15
    res = linkage.accelerations(poses, twists, {"beta": ats.PARAMS["mom"]})
    assert (res["rank"], res["rows"], res["reactions_unique"]) == (41, 50, False)
    alpha = np.array([res["ang_acc"][f"body{k}"] for k in range(1, 8)])
    scale = np.max(np.abs(alpha))
    np.testing.assert_allclose(alpha[:, 2], ats.BODY_ANGLE_MAP @ qdd, rtol=0, atol=1e-12 * scale)
    assert np.max(np.abs(alpha[:, :2])) < 1e-14 * scale
    # COM accelerations = d2/dt2 of the Test Set's COM positions
    h = 1e-30
    ascale = max(np.max(np.abs(res["com_acc"][f"body{k}"])) for k in range(1, 8))
    for k in range(1, 8):
        a = res["com_acc"][f"body{k}"]
        Jc = np.array([np.imag(ats.points(q + 1j * h * np.eye(7)[j])[f"COM{k}"]) / h
                       for j in range(7)]).T
        # d/dt (Jc qd) at fixed qd: central difference along qd of the complex-step velocity
        eps = 1e-5 / max(1.0, np.max(np.abs(qd)))
        vp = np.imag(ats.points(q + eps * qd + 1j * h * qd)[f"COM{k}"]) / h
        vm = np.imag(ats.points(q - eps * qd + 1j * h * qd)[f"COM{k}"]) / h
        a_ts = Jc @ qdd + (vp - vm) / (2 * eps)
        np.testing.assert_allclose(a[:2], a_ts, rtol=0, atol=1e-9 * ascale)
        assert abs(a[2]) < 1e-12 * ascale
    # the cut joints' in-plane forces on their second bodies are the Test Set's multipliers
    F = np.concatenate([res["reactions"][j]["force"][:2] for j in ("E23", "E24", "E26")])
    np.testing.assert_allclose(F, lam, rtol=0, atol=1e-11 * max(1.0, np.max(np.abs(lam))))
    # ... and they are determinate (the redundancy only leaves out-of-plane wrenches free)
    for j in ("E23", "E24", "E26", *ANG):
        basis = res["reactions"][j]["indeterminate"]
        inplane = np.zeros((6, 3))
        inplane[0, 0] = inplane[1, 1] = inplane[5, 2] = 1.0     # Fx, Fy, Mz
        assert np.max(np.abs(basis.T @ inplane)) < 1e-9, j
        assert basis.shape[1] == 3, j


def test_spec_motion_matches_test_set(linkage):
    """Integrate the absolute formulation (42 coordinates, 50 constraint rows) from the spec's
    reference pose for 0.03 s: the joint coordinates follow the Test Set's solution."""
    from scipy.integrate import solve_ivp

    y0 = linkage.pack(linkage.reference_poses(), linkage.zero_twists())
    drives = {"beta": ats.PARAMS["mom"]}
    sol = solve_ivp(linkage.rhs, (0.0, ats.T_END), y0, method="DOP853", rtol=1e-10,
                    atol=1e-12, args=(drives,))
    assert sol.success
    poses, twists = linkage.unpack(sol.y[:, -1])
    assert np.max(np.abs(linkage.residual_vector(poses))) < 1e-10
    coords = linkage.joint_coordinates(poses, twists)
    q = np.array([coords[n][0] for n in ANG])
    qd = np.array([coords[n][1] for n in ANG])
    # 4e-10 and 2e-8 seen (this integration's tolerance; 2e-11 with rtol = 1e-12)
    np.testing.assert_allclose(wrap(q - ats.Y_EXT[:7]), 0.0, atol=5e-9)
    np.testing.assert_allclose(qd, ats.Y_EXT[7:], rtol=2e-7)
