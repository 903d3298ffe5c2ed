"""The body-twist free base (``attitude = "quaternion"``, ``base_velocity = "body"``) is
Pinocchio's free flyer: q = [x, y, z (frame 0), quaternion w, x, y, z, joints],
qd = [v_body, omega_body (both in the base frame), joint rates], qdd their time derivatives
(Featherstone's spatial acceleration of the base).

Checks: (1) every kernel against Pinocchio's JointModelFreeFlyer directly (same coordinates
after reordering the quaternion) on Solo-12, HyQ and random URDF trees; (2) against our
frame-0 quaternion base by mapping the states (v_0 = R v_body, vdot_0 = R (vdot_body +
omega x v_body)); (3) the mass matrix reads no base-pose input and is the composite-inertia
form; (4) energy, momentum and centre of mass of free-floating motion integrated through
rhs(); (5) the derivative kernels, along the input q against differences (the regressor
against inverse dynamics: tests/test_regressor.py), and along Pinocchio's tangent space
(``derivatives = "tangent"``) against Pinocchio's analytical derivatives on Solo-12 and against
differences along the base's own displacement for the frame-0 quaternion base; (6) bad spec
values named by file and field.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from mechgen import runtime
from mechgen.generator.build import MECHANISMS
from mechgen.generator.families.serial.spec import (ChainBuilder, chain_from_dict,
                                                   chain_from_urdf_spec)
from mechgen.generator.families.serial.urdf import load_urdf
from mechgen.generator.ir import reads
from mechgen.generator.model import ModelError
from mechgen.runtime.mechanism import quaternion_rotation
from tests import pinocchio_ref as pref
from tests.chains import write_generated
from tests.test_pinocchio_crosscheck import compare, random_urdf

RTOL = 1e-10
GRAVITY = (0.3, -1.2, -9.81)
ROBOTS = next(p for p in Path(pref.pin.__file__).resolve().parents
              if p.name == "cmeel.prefix") / "share" / "example-robot-data" / "robots"
URDFS = {"solo12": MECHANISMS / "urdf" / "solo12.urdf",
         "hyq": ROBOTS / "hyq_description" / "robots" / "hyq_no_sensors.urdf"}


def generated(urdf: Path, root: Path, base_velocity: str = "body", name: str | None = None):
    """(chain, loaded C kernels, generated kernels) of a URDF on a quaternion free base."""
    chain = load_urdf(urdf, name, base="free", gravity=GRAVITY, attitude="quaternion",
                      base_velocity=base_velocity)
    gen = write_generated(chain, root)
    return chain, runtime.load(chain.name, "c", generated=root), gen


@pytest.fixture(scope="module", params=["solo12", "hyq", "random3", "random5"])
def robot(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    if request.param.startswith("random"):
        seed = int(request.param[6:])
        urdf = root / f"{request.param}.urdf"
        urdf.write_text(random_urdf(seed, n_links=9))
    else:
        urdf = URDFS[request.param]
    chain, mech, gen = generated(urdf, root, name=f"{request.param}_body")
    return chain, mech, gen, pref.build(urdf, chain)


def random_state(rng, n: int, unit: bool = True) -> dict[str, np.ndarray]:
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat) if unit else 1.0
    q = np.r_[rng.normal(size=3), quat, rng.uniform(-2.0, 2.0, n - 6)]
    return {"q": q, "qd": rng.normal(size=n), "qdd": rng.normal(size=n),
            "Q": rng.normal(size=n) * 5}


def test_kernels_equal_pinocchio_free_flyer(robot):
    """FK placements, Jacobians, velocities and classical accelerations, M (crba), rnea,
    nonLinearEffects, aba and the energies, 1e-10 relative, 10 random states with unit
    quaternions."""
    chain, mech, _, pm = robot
    rng = np.random.default_rng(1)
    rows = [random_state(rng, chain.n) for _ in range(10)]
    st = {a: np.array([s[a] for s in rows]) for a in ("q", "qd", "qdd", "Q")}
    worst = compare(mech, chain, pm, st=st)
    assert max(worst.values()) < RTOL, worst


def test_mass_matrix_reads_no_base_pose_and_is_the_composite_inertia(robot):
    """No input q1..q7 (x, y, z, quaternion) in the generated mass matrix at all; its base
    block is [[m 1, -m [c]x], [m [c]x, I_O]] of the whole robot about the base origin, in the
    base frame (Pinocchio's): equal for any base pose, bit for bit."""
    chain, mech, gen, _ = robot
    mm = next(g for g in gen if g.kernel.name == "mass_matrix").kernel
    used = set().union(*(reads(st) for st in mm.body),        # (the legs' loops too)
                       *(sp.sympify(x).free_symbols for x in mm.outputs[0].elements))
    assert not used & {sp.Symbol(f"q{i}") for i in range(1, 8)}
    rng = np.random.default_rng(2)
    s, s2 = random_state(rng, chain.n), random_state(rng, chain.n)
    s2["q"][7:] = s["q"][7:]
    A, A2 = mech.mass_matrix(s["q"]), mech.mass_matrix(s2["q"])
    assert np.array_equal(A, A2)
    m = A[0, 0]
    np.testing.assert_allclose(A[:3, :3], m * np.eye(3), rtol=0, atol=1e-13 * m)
    mc = np.array([A[5, 1], A[3, 2], A[4, 0]])          # m [c]x = A[3:6, :3]
    np.testing.assert_allclose(A[3:6, :3], -A[:3, 3:6], rtol=0, atol=1e-13 * m)
    skew = np.array([[0, -mc[2], mc[1]], [mc[2], 0, -mc[0]], [-mc[1], mc[0], 0]])
    np.testing.assert_allclose(A[3:6, :3], skew, rtol=0, atol=1e-13 * m)


def frame0_state(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same physical state in the frame-0 quaternion base's velocities:
    v_0 = R v_b, vdot_0 = R (vdot_b + omega_b x v_b); omega, its rate and the joints equal."""
    R = quaternion_rotation(s["q"][3:7])
    qd, qdd = s["qd"].copy(), s["qdd"].copy()
    qd[:3] = R @ s["qd"][:3]
    qdd[:3] = R @ (s["qdd"][:3] + np.cross(s["qd"][3:6], s["qd"][:3]))
    return {"q": s["q"], "qd": qd, "qdd": qdd}


def motion(mech, s: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """v, omega, a = T qdd + w, alpha = R qdd + eps of every body (frame 0): what does not
    depend on the choice of velocities (w and eps alone do)."""
    v, omega, w, eps = mech.velocities(s["q"], s["qd"])
    T, R = mech.jacobians(s["q"])
    n_b = len(mech.bodies)
    return v, omega, T[:n_b] @ s["qdd"] + w, R[:n_b] @ s["qdd"] + eps


@pytest.fixture(scope="module")
def solo_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("solo_pair")
    _, body, _ = generated(URDFS["solo12"], root, "body", "solo_body")
    _, frame0, _ = generated(URDFS["solo12"], root, "frame0", "solo_frame0")
    return body, frame0


def test_dynamics_equal_the_frame0_quaternion_base(solo_pair):
    """Same physical state: the base force maps as Q_b = R^T Q_0 (power v.Q is the same), the
    moment and joint torques are equal; forward dynamics gives the mapped accelerations; the
    bodies' velocities and accelerations and the energy agree (quaternions of any norm)."""
    body, frame0 = solo_pair
    rng = np.random.default_rng(3)
    for _ in range(10):
        s = random_state(rng, body.n, unit=False)
        f0 = frame0_state(s)
        R = quaternion_rotation(s["q"][3:7])
        Q_b = body.inverse_dynamics(s["q"], s["qd"], s["qdd"])
        Q_0 = frame0.inverse_dynamics(**f0)
        scale = max(1.0, np.abs(Q_0).max())
        np.testing.assert_allclose(R @ Q_b[:3], Q_0[:3], rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(Q_b[3:], Q_0[3:], rtol=0, atol=1e-10 * scale)
        Q = np.r_[R.T @ Q_0[:3], Q_0[3:]]
        qdd_b = body.forward_dynamics(s["q"], s["qd"], Q)
        np.testing.assert_allclose(frame0_state({**s, "qdd": qdd_b})["qdd"],
                                   frame0.forward_dynamics(f0["q"], f0["qd"], Q_0),
                                   rtol=0, atol=1e-10 * max(1.0, np.abs(qdd_b).max()))
        for a, b in zip(motion(body, s), motion(frame0, f0)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * max(1.0, np.abs(b).max()))
        np.testing.assert_allclose(body.energy(s["q"], s["qd"]),
                                   frame0.energy(f0["q"], f0["qd"]), rtol=1e-12, atol=1e-12)


def test_free_floating_motion_conserves_energy_and_momentum(solo_pair):
    """No drive: rhs() integrates q (position rate R v_body, the quaternion's); T + V stays
    constant, the linear momentum in frame 0, R (A qd)[:3], grows by m g t only, and the
    base position integrated from R v_body is the one the kernels read back (FK of the
    trunk = q[:3])."""
    body, _ = solo_pair
    rng = np.random.default_rng(4)
    s = random_state(rng, body.n)
    sol = solve_ivp(body.rhs(), (0, 1.0), np.r_[s["q"], s["qd"]], method="DOP853",
                    rtol=1e-11, atol=1e-11)
    assert sol.success
    nq, g = body.nq, np.array(GRAVITY)
    E = [sum(body.energy(x[:nq], x[nq:])) for x in sol.y.T]
    assert np.abs(np.array(E) - E[0]).max() < 1e-7 * max(1.0, abs(E[0]))
    m = body.mass_matrix(s["q"])[0, 0]
    mom = np.array([quaternion_rotation(x[3:7]) @ (body.mass_matrix(x[:nq])[:3] @ x[nq:])
                    - m * g * t for t, x in zip(sol.t, sol.y.T)])
    assert np.abs(mom - mom[0]).max() < 1e-8 * max(1.0, np.abs(mom[0]).max())
    # the centre of mass moves as c(t) = c0 + (p0/m) t + g t^2 / 2
    def com(x):
        r, tau = body.forward_kinematics(x[:nq])
        A = body.mass_matrix(x[:nq])
        c_body = np.array([A[5, 1], A[3, 2], A[4, 0]]) / m      # [c]x = A[3:6, :3] / m
        return r[0] + tau[0].T @ c_body
    t1, x1 = sol.t[-1], sol.y[:, -1]
    c_pred = com(sol.y[:, 0]) + mom[0] / m * t1 + g * t1 ** 2 / 2
    np.testing.assert_allclose(com(x1), c_pred, rtol=0, atol=1e-8)


def test_python_backend_agrees_with_c(solo_pair):
    body, _ = solo_pair
    py = runtime.load(body.folder, "python")
    rng = np.random.default_rng(5)
    s = random_state(rng, body.n, unit=False)
    np.testing.assert_allclose(py.forward_dynamics(s["q"], s["qd"], s["Q"]),
                               body.forward_dynamics(s["q"], s["qd"], s["Q"]),
                               rtol=1e-12, atol=1e-12)


def test_manifest_records_the_body_twist_and_the_rates(solo_pair):
    body, frame0 = solo_pair
    assert body.manifest["base_velocity"] == "body" and "base_velocity" not in frame0.manifest
    assert "derivatives" not in body.manifest     # none generated: no convention to record
    assert body.nq == body.n + 1 == 19
    assert body.manifest["coordinates"][:7] == ["base_x", "base_y", "base_z", "base_qw",
                                                "base_qx", "base_qy", "base_qz"]
    header = " ".join((body.folder / "solo_body.h").read_text().replace("*", " ").split())
    assert "both in its own frame: the body twist" in header


SPEC = """[mechanism]
name = "x"
base = "{base}"
{extra}
[base]
mass = 1.0
inertia = [0.1, 0.1, 0.1, 0, 0, 0]
[[joints]]
name = "j1"
type = "Rz"
body = {{ mass = 1.0, inertia = [0.1, 0.1, 0.1, 0, 0, 0] }}
"""


@pytest.mark.parametrize("base, extra, match", [
    ("free", 'base_velocity = "body"', "attitude = 'quaternion'"),
    ("free", 'attitude = "quaternion"\nbase_velocity = "local"', "expected one of"),
    ("free", 'attitude = "quaternion"\nbase_velocity = 1', "got 1"),
    ("fixed", 'base_velocity = "body"', "base = 'free'"),
])
def test_base_velocity_is_checked_by_file_and_field(base, extra, match):
    text = SPEC.format(base=base, extra=extra)
    if base == "fixed":
        text = text.replace("[base]\nmass = 1.0\ninertia = [0.1, 0.1, 0.1, 0, 0, 0]\n", "")
    with pytest.raises(ModelError, match=match) as e:
        chain_from_dict(tomllib.loads(text), "bad.toml")
    assert str(e.value).startswith("bad.toml: mechanism.base_velocity")


def test_urdf_spec_checks_base_velocity(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'[mechanism]\nname = "s"\nurdf = "{URDFS["solo12"]}"\nbase = "free"\n'
                    f'base_velocity = "body"\n')
    with pytest.raises(ModelError, match=r"s.toml: mechanism.base_velocity"):
        chain_from_urdf_spec(tomllib.loads(spec.read_text()), spec)


def generated_arm(root: Path, name: str, base_velocity: str, derivatives: bool | str):
    """test_dynamics_derivatives.quaternion_arm under GRAVITY, generated into ``root`` and
    loaded (C)."""
    from tests.test_dynamics_derivatives import quaternion_arm
    write_generated(quaternion_arm(name, GRAVITY, base_velocity, derivatives)[0], root)
    return runtime.load(name, "c", generated=root)


def test_derivatives_along_the_input_q_match_differences(tmp_path):
    """``[kernels] derivatives = true`` on the body-twist base: forward differentiation of the
    IR along q as given (x, y, z, qw, qx, qy, qz, joints) and along the body twist qd; central
    differences of the generated inverse and forward dynamics, 4 random states."""
    from tests.test_dynamics_derivatives import close_to_differences
    mech = generated_arm(tmp_path, "twist_arm", "body", derivatives=True)
    rng = np.random.default_rng(6)
    for _ in range(4):
        s = random_state(rng, mech.n, unit=False)
        s["q"][7:] = rng.uniform(-0.5, 0.5, 3)
        q, qd, qdd, Q = s["q"], s["qd"], s["qdd"], s["Q"]
        dq, dqd = mech.inverse_dynamics_derivatives(q, qd, qdd)
        close_to_differences(dq, lambda x: mech.inverse_dynamics(x, qd, qdd), q, "dID/dq")
        close_to_differences(dqd, lambda x: mech.inverse_dynamics(q, x, qdd), qd, "dID/dqd")
        _, fq, fqd, _ = mech.forward_dynamics_derivatives(q, qd, Q)
        close_to_differences(fq, lambda x: mech.forward_dynamics(x, qd, Q), q, "dFD/dq")
        close_to_differences(fqd, lambda x: mech.forward_dynamics(q, x, Q), qd, "dFD/dqd")


def quaternion_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    (w1, x1, y1, z1), (w2, x2, y2, z2) = a, b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def displaced(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """q displaced by d = (rho, phi, joint increments): the base by the twist (rho, phi) in its
    own frame, as pinocchio.integrate (position p + R V(phi) rho, quaternion quat (x)
    exp(phi / 2), the norm kept), the joints by addition."""
    rho, phi = d[:3], d[3:6]
    th = np.linalg.norm(phi)
    quat = q[3:7]
    R = quaternion_rotation(quat / np.linalg.norm(quat))
    if th < 1e-12:
        V = np.eye(3)
    else:
        K = np.array([[0, -phi[2], phi[1]], [phi[2], 0, -phi[0]], [-phi[1], phi[0], 0]]) / th
        V = np.eye(3) + (1 - np.cos(th)) / th * K + (th - np.sin(th)) / th * K @ K
    half = np.r_[np.cos(th / 2), np.sinc(th / (2 * np.pi)) / 2 * phi]
    return np.r_[q[:3] + R @ V @ rho, quaternion_product(quat, half), q[7:] + d[6:]]


@pytest.fixture(scope="module", params=["solo12", "random3"])
def solo_tangent(request, tmp_path_factory):
    """Solo-12 and a random URDF tree on the body-twist base with ``derivatives = "tangent"``
    (the analytical free-flyer derivatives: rnea_derivatives.free_flyer_block)."""
    root = tmp_path_factory.mktemp(f"{request.param}_tangent")
    if request.param.startswith("random"):
        urdf = root / f"{request.param}.urdf"
        urdf.write_text(random_urdf(int(request.param[6:]), n_links=9))
    else:
        urdf = URDFS[request.param]
    chain = load_urdf(urdf, f"{request.param}_tangent", base="free", gravity=GRAVITY,
                      attitude="quaternion", base_velocity="body")
    chain = replace(chain, derivatives="tangent")
    gen = write_generated(chain, root)
    return chain, runtime.load(chain.name, "c", generated=root), gen, pref.build(urdf, chain)


def test_tangent_derivatives_equal_pinocchio_analytical_derivatives(solo_tangent):
    """``derivatives = "tangent"`` on the body-twist base: dID/dq, dID/dv
    (computeRNEADerivatives), qdd, dFD/dq, dFD/dv, A^-1 (computeABADerivatives), every column
    the base's included, n x n; 1e-9 relative, 6 random states with unit quaternions."""
    from tests.test_dynamics_derivatives import PIN_RTOL, close
    chain, mech, gen, pm = solo_tangent
    n = chain.n
    assert mech.manifest["derivatives"] == "tangent"
    shapes = {p.name: p.shape for g in gen if "derivatives" in g.kernel.name
              for p in g.kernel.outputs}
    assert shapes == {"dtau_dq": (n, n), "dtau_dqd": (n, n), "qdd": (n,),
                      "dqdd_dq": (n, n), "dqdd_dqd": (n, n), "dqdd_dQ": (n, n)}
    rng = np.random.default_rng(8)
    ix = np.ix_(pm.perm, pm.perm)
    for _ in range(6):
        s = random_state(rng, chain.n)
        q, qd, qdd, Q = s["q"], s["qd"], s["qdd"], s["Q"]
        args = (pm.model, pm.data, pref._q_to_pin(pm, q), pref._to_pin(pm, qd))
        dq, dv, _ = pref.pin.computeRNEADerivatives(*args, pref._to_pin(pm, qdd))
        tq, tqd = mech.inverse_dynamics_derivatives(q, qd, qdd)
        close(tq, np.asarray(dq)[ix], PIN_RTOL, "dID/dq")
        close(tqd, np.asarray(dv)[ix], PIN_RTOL, "dID/dv")
        aq, av, Minv = pref.pin.computeABADerivatives(*args, pref._to_pin(pm, Q))
        fdd, fq, fqd, fQ = mech.forward_dynamics_derivatives(q, qd, Q)
        close(fdd, pref.forward_dynamics(pm, q, qd, Q), PIN_RTOL, "qdd")
        close(fq, np.asarray(aq)[ix], PIN_RTOL, "dFD/dq")
        close(fqd, np.asarray(av)[ix], PIN_RTOL, "dFD/dv")
        close(fQ, (np.triu(Minv) + np.triu(Minv, 1).T)[ix], PIN_RTOL, "dFD/dQ")


def test_tangent_derivatives_read_no_base_position(solo_tangent):
    """The dynamics do not depend on where the base is: the base position x, y, z (q1..q3)
    appears in no statement of the derivative kernels, and the columns along the linear
    displacement rho are zero (the rotation that maps rho into frame 0 left nothing)."""
    chain, mech, gen, _ = solo_tangent
    for g in gen:
        if "derivatives" not in g.kernel.name:
            continue
        used = set().union(*(reads(st) for st in g.kernel.body))
        assert not used & {sp.Symbol(f"q{i}") for i in range(1, 4)}, g.kernel.name
    rng = np.random.default_rng(9)
    s = random_state(rng, chain.n)
    tq, _ = mech.inverse_dynamics_derivatives(s["q"], s["qd"], s["qdd"])
    _, fq, _, _ = mech.forward_dynamics_derivatives(s["q"], s["qd"], s["Q"])
    assert not tq[:, :3].any() and not fq[:, :3].any()


@pytest.mark.parametrize("base_velocity", ["frame0", "body"])
def test_tangent_derivatives_match_differences_along_the_base_displacement(tmp_path,
                                                                          base_velocity):
    """dID/dq and dFD/dq along (rho, phi, joints) against central differences of the generated
    inverse and forward dynamics at q displaced by pinocchio.integrate's rule (our own
    quaternion exponential, not the kernels' formula), quaternions of any norm; the frame-0
    quaternion base too (its velocity columns stay its own rates)."""
    from tests.test_dynamics_derivatives import close_to_differences
    mech = generated_arm(tmp_path, "tangent_arm", base_velocity, derivatives="tangent")
    rng = np.random.default_rng(10)
    zero = np.zeros(mech.n)
    for _ in range(4):
        s = random_state(rng, mech.n, unit=False)
        s["q"][7:] = rng.uniform(-0.5, 0.5, 3)
        q, qd, qdd, Q = s["q"], s["qd"], s["qdd"], s["Q"]
        dq, dqd = mech.inverse_dynamics_derivatives(q, qd, qdd)
        assert dq.shape == dqd.shape == (mech.n, mech.n)
        close_to_differences(dq, lambda d: mech.inverse_dynamics(displaced(q, d), qd, qdd),
                             zero, "dID/dq")
        close_to_differences(dqd, lambda x: mech.inverse_dynamics(q, x, qdd), qd, "dID/dqd")
        _, fq, fqd, _ = mech.forward_dynamics_derivatives(q, qd, Q)
        close_to_differences(fq, lambda d: mech.forward_dynamics(displaced(q, d), qd, Q),
                             zero, "dFD/dq")
        close_to_differences(fqd, lambda x: mech.forward_dynamics(q, x, Q), qd, "dFD/dqd")


def test_the_free_flyer_takes_the_analytical_derivatives():
    """rnea_derivatives' free-flyer block applies to the body-twist base (along Pinocchio's
    tangent, or mapped to the quaternion's own columns), and through it to the frame-0
    quaternion base (its body-twist twin, frame0_base); the analytical dID has fewer
    statements than forward differentiation on both."""
    from mechgen.generator.families.serial.derivatives import (analytic_applies,
                                                               id_derivatives_analytic,
                                                               id_derivatives_forward)
    chain = load_urdf(URDFS["solo12"], "s", base="free", gravity=GRAVITY,
                      attitude="quaternion", base_velocity="body")
    assert analytic_applies(replace(chain, derivatives="tangent"))
    assert analytic_applies(replace(chain, derivatives=True))
    frame0 = load_urdf(URDFS["solo12"], "s", base="free", gravity=GRAVITY,
                       attitude="quaternion", base_velocity="frame0")
    assert analytic_applies(replace(frame0, derivatives="tangent"))
    for tangent in (replace(chain, derivatives="tangent"), replace(frame0, derivatives="tangent")):
        ops = {build.__name__: len(build(tangent).body)
               for build in (id_derivatives_analytic, id_derivatives_forward)}
        assert ops["id_derivatives_analytic"] < ops["id_derivatives_forward"], ops


def test_python_backend_gives_the_c_tangent_derivatives(solo_tangent):
    chain, mech, _, _ = solo_tangent
    py = runtime.load(chain.name, "python", generated=mech.folder.parent)
    rng = np.random.default_rng(11)
    s = random_state(rng, chain.n)
    for a, b in zip(mech.forward_dynamics_derivatives(s["q"], s["qd"], s["Q"]),
                    py.forward_dynamics_derivatives(s["q"], s["qd"], s["Q"])):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12 * np.abs(a).max())
    for a, b in zip(mech.inverse_dynamics_derivatives(s["q"], s["qd"], s["qdd"]),
                    py.inverse_dynamics_derivatives(s["q"], s["qd"], s["qdd"])):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12 * np.abs(a).max())


def test_turning_the_robot_changes_only_the_base_acceleration(solo_tangent):
    """dqdd/dphi (the base turned against uniform gravity, body twist and joints held): the
    joints' accelerations do not change and the base's linear one changes as gravity seen
    from the base does, g_b x e_k (g_b' = (1 - [phi]x) g_b), which the kernel writes without a
    solve (derivatives.base_solver, base_rates); Pinocchio agrees to 1e-9 (test above)."""
    chain, mech, _, _ = solo_tangent
    rng = np.random.default_rng(12)
    for _ in range(3):
        s = random_state(rng, chain.n)
        _, fq, _, _ = mech.forward_dynamics_derivatives(s["q"], s["qd"], s["Q"])
        assert not fq[6:, 3:6].any()
        g = quaternion_rotation(s["q"][3:7]).T @ np.array(GRAVITY)     # gravity, base frame
        np.testing.assert_allclose(fq[:3, 3:6], np.cross(g[:, None], np.eye(3), axis=0),
                                   rtol=0, atol=1e-12)
        assert not fq[3:6, 3:6].any()


@pytest.mark.parametrize("derivatives", ["tangent", True])
def test_frame0_tree_takes_the_twins_derivatives(tmp_path, derivatives):
    """A random URDF tree (several branches on the trunk) on the frame-0 quaternion base:
    the analytical derivatives through the body-twist twin (frame0_base.py) equal forward
    differentiation of the frame-0 base's own IR to 1e-10, dID and dFD, every column; a
    quaternion base with a spring on a base joint keeps forward differentiation."""
    from mechgen.generator.families.serial import derivatives as D
    from tests.test_rnea_analytic_derivatives import _function, _same, _states
    urdf = tmp_path / "tree.urdf"
    urdf.write_text(random_urdf(5, n_links=7))
    chain = load_urdf(urdf, "tree0", base="free", gravity=(0.4, -0.3, -9.81),
                      attitude="quaternion", base_velocity="frame0")
    chain = replace(chain, derivatives=derivatives)
    assert chain.is_tree and D.analytic_applies(chain)
    for analytic, forward in ((D.id_derivatives_analytic, D.id_derivatives_forward),
                              (D.fd_derivatives_composite, D.fd_derivatives_forward)):
        ka, kf = analytic(chain), forward(chain)
        fa, ff = _function(ka), _function(kf)
        for x in _states(chain, {}, [p.name for p in ka.inputs], 3):
            for port, a, f in zip(ka.outputs, fa(x), ff(x)):
                _same(a, f, f"{ka.name}.{port.name}")
    sprung = replace(chain, joints=[replace(j, stiffness=sp.Integer(3)) if i == 0 else j
                                    for i, j in enumerate(chain.joints)])
    assert not D.analytic_applies(sprung)
