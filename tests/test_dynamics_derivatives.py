"""The derivative kernels of serial chains and trees (inverse_dynamics_derivatives,
forward_dynamics_derivatives; ``[kernels] derivatives = true``) against

- central differences (a 4-point stencil, error ~1e-10) of the plain numpy reference
  tests/reference/chain_numpy.py and of the generated inverse and forward dynamics kernels, on
  random chains and trees with prismatic joints, spring-damper laws and parameters, on a fixed
  and on a free (y-z-x angles or quaternion) base;
- invariants: the qdd they return is forward_dynamics' own, dqdd/dQ is the inverse of the mass
  matrix, and dFD/dq = -A^-1 dID/dq at that qdd;
- Pinocchio's analytical computeRNEADerivatives / computeABADerivatives on the bundled ur5,
  panda and solo12 (Pinocchio's free base is the composite joint Px Py Pz Ry Rz Rx, whose
  tangent space is our six base coordinates), to 1e-9 relative.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from mechgen import runtime
from mechgen.generator.build import MECHANISMS
from mechgen.generator.frontend import load
from mechgen.generator.families.serial.spec import ChainBuilder
from mechgen.generator.model import ModelError
from tests import pinocchio_ref as pref
from tests.chains import numeric_model, random_chain, write_generated
from tests.reference import chain_numpy as ref

STATES = 12
FD_RTOL = 1e-7      # central differences: truncation and round-off ~1e-10 relative
PIN_RTOL = 1e-9


def close(a, b, rtol, what="", slack=0.0):
    """max |a - b| <= rtol * max(1, max |b|) + slack (elementwise slack: an error estimate)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    scale = max(1.0, float(np.abs(b).max()))
    err = np.abs(a - b) - slack
    assert err.max() <= rtol * scale, (f"{what}: max error {err.max():.3e} beyond the "
                                       f"difference's error estimate > {rtol:.0e} * {scale:.3e}")


def _stencil(f, x: np.ndarray, h: float) -> np.ndarray:
    """df/dx (columns: components of x) by (-f(x+2h) + 8 f(x+h) - 8 f(x-h) + f(x-2h)) / 12h,
    truncation O(h^4)."""
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((-f(x + 2 * e) + 8 * f(x + e) - 8 * f(x - e) + f(x - 2 * e)) / (12 * h))
    return np.stack(cols, axis=-1)


def close_to_differences(ours, f, x, what: str, h: float = 2e-3) -> None:
    """``ours`` = df/dx to FD_RTOL, allowing each element the central difference's own error,
    estimated by the change from step h to h/2 (near an ill-conditioned mass matrix the
    higher derivatives are large)."""
    coarse, fine = _stencil(f, x, h), _stencil(f, x, h / 2)
    close(ours, fine, FD_RTOL, what, slack=np.abs(coarse - fine))


# (seed, joints, base, parameters, tree, attitude)
CASES = [(31, 6, "fixed", True, False, "euler"), (32, 7, "fixed", False, True, "euler"),
         (33, 4, "free", False, True, "euler"), (34, 3, "free", False, False, "quaternion")]


def quaternion_arm(name: str = "quat_arm", gravity=(0, 0, 0), base_velocity: str = "frame0",
                   derivatives: bool | str = True):
    """Three joints (one prismatic, springs) on a free base with a quaternion attitude:
    (chain, parameter values {})."""
    link = {"mass": 2.0, "com": [0.2, 0.01, -0.03], "inertia": [0.02, 0.03, 0.04, 0.001, 0, 0]}
    base = {"name": "hub", "mass": 50.0, "com": [0.1, 0, 0], "inertia": [3, 4, 5, 0.1, 0, 0]}
    spring = {"stiffness": 4.0, "damping": 0.3, "q0": 0.2}
    return (ChainBuilder(name, "free", gravity, base, attitude="quaternion",
                         derivatives=derivatives, base_velocity=base_velocity)
            .joint("j1", "Rz", (0.5, 0, 0.1), [["x", 30]], body={"name": "l1", **link},
                   spring=spring)
            .joint("j2", "Py", (0.4, 0, 0), body={"name": "l2", **link})
            .joint("j3", "Rx", (0.3, 0.1, 0), [["z", 90]], body={"name": "l3", **link},
                   spring=spring)
            .build()), {}


@pytest.fixture(scope="module", params=CASES,
                ids=lambda c: f"seed{c[0]}-{c[2]}-{c[5]}{'-tree' if c[4] else ''}")
def case(request, tmp_path_factory):
    seed, n, base, params, tree, attitude = request.param
    if attitude == "quaternion":
        chain, pvals = quaternion_arm()
    else:
        chain, pvals = random_chain(seed, n, base, params=params, tree=tree)
        chain = replace(chain, derivatives=True)
    root = tmp_path_factory.mktemp("deriv")
    write_generated(chain, root)
    rng = np.random.default_rng(seed + 7)
    q = rng.uniform(-np.pi, np.pi, (STATES, chain.n))
    for i, j in enumerate(chain.joints):
        if j.kind == "P":
            q[:, i] = rng.uniform(-0.5, 0.5, STATES)
    if base == "free":
        q[:, 3:6] = rng.uniform(-1.0, 1.0, (STATES, 3))
    if attitude == "quaternion":
        quat = rng.normal(size=(STATES, 4))
        q = np.concatenate([q[:, :3], quat, q[:, 6:]], axis=1)
    st = dict(q=q, qd=rng.normal(size=(STATES, chain.n)), qdd=rng.normal(size=(STATES, chain.n)),
              Q=rng.normal(size=(STATES, chain.n)) * 3)
    model = None if attitude == "quaternion" else numeric_model(chain, pvals)
    p = np.array([pvals[s.name] for s in chain.parameters])
    return chain, model, st, runtime.load(chain.name, "c", generated=root), p


def _kw(p):
    return {"p": p} if p.size else {}


def test_inverse_dynamics_derivatives_match_differences_of_numpy_and_generated_id(case):
    chain, model, st, mech, p = case
    dq, dqd = mech.inverse_dynamics_derivatives(st["q"], st["qd"], st["qdd"], **_kw(p))
    for s in range(STATES):
        q, qd, qdd = st["q"][s], st["qd"][s], st["qdd"][s]
        ours = lambda qq, vv: mech.inverse_dynamics(qq, vv, qdd, **_kw(p))
        close_to_differences(dq[s], lambda x: ours(x, qd), q, "dID/dq vs kernel")
        close_to_differences(dqd[s], lambda x: ours(q, x), qd, "dID/dqd vs kernel")
        if model is not None:
            num = lambda qq, vv: ref.inverse_dynamics(model, qq, vv, qdd)
            close_to_differences(dq[s], lambda x: num(x, qd), q, "dID/dq vs numpy")
            close_to_differences(dqd[s], lambda x: num(q, x), qd, "dID/dqd vs numpy")


def test_forward_dynamics_derivatives_match_differences_of_numpy_and_generated_fd(case):
    chain, model, st, mech, p = case
    qdd, dq, dqd, dQ = mech.forward_dynamics_derivatives(st["q"], st["qd"], st["Q"], **_kw(p))
    close(qdd, mech.forward_dynamics(st["q"], st["qd"], st["Q"], **_kw(p)), 1e-10, "qdd")
    for s in range(STATES):
        q, qd, Q = st["q"][s], st["qd"][s], st["Q"][s]
        ours = lambda qq, vv, QQ: mech.forward_dynamics(qq, vv, QQ, **_kw(p))
        close_to_differences(dq[s], lambda x: ours(x, qd, Q), q, "dFD/dq")
        close_to_differences(dqd[s], lambda x: ours(q, x, Q), qd, "dFD/dqd")
        close_to_differences(dQ[s], lambda x: ours(q, qd, x), Q, "dFD/dQ")
        if model is not None:
            num = lambda qq, vv: ref.forward_dynamics(model, qq, vv, Q)
            close_to_differences(dq[s], lambda x: num(x, qd), q, "dFD/dq numpy")
            close_to_differences(dqd[s], lambda x: num(q, x), qd, "dFD/dqd numpy")


def test_forward_derivatives_are_minus_inverse_mass_matrix_times_id_derivatives(case):
    chain, model, st, mech, p = case
    qdd, dq, dqd, dQ = mech.forward_dynamics_derivatives(st["q"], st["qd"], st["Q"], **_kw(p))
    A = mech.mass_matrix(st["q"], **_kw(p))
    tq, tqd = mech.inverse_dynamics_derivatives(st["q"], st["qd"], qdd, **_kw(p))
    for s in range(STATES):
        close(dQ[s] @ A[s], np.eye(chain.n), 1e-10, "A^-1 A")
        close(dQ[s], dQ[s].T, 1e-12, "A^-1 symmetric")
        close(A[s] @ dq[s], -tq[s], 1e-10, "A dFD/dq = -dID/dq")
        close(A[s] @ dqd[s], -tqd[s], 1e-10, "A dFD/dqd = -dID/dqd")


BUNDLED = {"ur5": ("ur5_urdf.toml", "ur5_robot.urdf", None),
           "panda": ("panda_arm.toml", "panda.urdf",
                     {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}),
           "solo12": ("solo12.toml", "solo12.urdf", None)}


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_derivatives_match_pinocchio_analytical_derivatives(name):
    """All columns for the arms. Solo-12's base is Pinocchio's composite joint, whose analytical
    derivatives (Pinocchio 4.1) disagree with Pinocchio's own finite differences in the six
    base columns (they treat the composite's motion subspace as constant): there the
    reference is central differences of Pinocchio's rnea and aba."""
    spec, urdf, lock = BUNDLED[name]
    chain = load(MECHANISMS / spec)
    pm = pref.build(MECHANISMS / "urdf" / urdf, chain, lock)
    mech = runtime.load(name, "c")
    rng = np.random.default_rng(5)
    n = chain.n
    q = rng.uniform(-2.0, 2.0, (STATES, n))
    if chain.base == "free":
        q[:, 3:6] = rng.uniform(-1.0, 1.0, (STATES, 3))
    qd, qdd, Q = rng.normal(size=(3, STATES, n))
    tq, tqd = mech.inverse_dynamics_derivatives(q, qd, qdd)
    fdd, fq, fqd, fQ = mech.forward_dynamics_derivatives(q, qd, Q)
    ix = np.ix_(pm.perm, pm.perm)
    pc = slice(6, None) if chain.base == "free" else slice(None)   # Pinocchio's columns
    for s in range(STATES):
        args = (pm.model, pm.data, pref._q_to_pin(pm, q[s]), pref._to_pin(pm, qd[s]))
        dq, dv, _ = pin.computeRNEADerivatives(*args, pref._to_pin(pm, qdd[s]))
        close(tq[s][:, pc], np.asarray(dq)[ix][:, pc], PIN_RTOL, f"{name} dID/dq")
        close(tqd[s][:, pc], np.asarray(dv)[ix][:, pc], PIN_RTOL, f"{name} dID/dqd")
        aq, av, Minv = pin.computeABADerivatives(*args, pref._to_pin(pm, Q[s]))
        Minv = np.triu(Minv) + np.triu(Minv, 1).T
        close(fdd[s], pref.forward_dynamics(pm, q[s], qd[s], Q[s]), PIN_RTOL, f"{name} qdd")
        close(fq[s][:, pc], np.asarray(aq)[ix][:, pc], PIN_RTOL, f"{name} dFD/dq")
        close(fqd[s][:, pc], np.asarray(av)[ix][:, pc], PIN_RTOL, f"{name} dFD/dqd")
        close(fQ[s], Minv[ix], PIN_RTOL, f"{name} dFD/dQ")
        if chain.base == "free":
            base = lambda x: np.r_[x, q[s][6:]]
            ID = lambda qq, vv: pref.inverse_dynamics(pm, qq, vv, qdd[s])
            FD = lambda qq, vv: pref.forward_dynamics(pm, qq, vv, Q[s])
            rate = lambda x: np.r_[x, qd[s][6:]]
            close_to_differences(tq[s][:, :6], lambda x: ID(base(x), qd[s]), q[s][:6],
                                 f"{name} dID/dq base")
            close_to_differences(tqd[s][:, :6], lambda x: ID(q[s], rate(x)), qd[s][:6],
                                 f"{name} dID/dqd base")
            close_to_differences(fq[s][:, :6], lambda x: FD(base(x), qd[s]), q[s][:6],
                                 f"{name} dFD/dq base")
            close_to_differences(fqd[s][:, :6], lambda x: FD(q[s], rate(x)), qd[s][:6],
                                 f"{name} dFD/dqd base")


def test_python_backend_gives_the_c_backend_derivatives():
    c, py = runtime.load("ur5_arm", "c"), runtime.load("ur5_arm", "python")
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.normal(size=(3, 4, 6))
    for a, b in zip(c.inverse_dynamics_derivatives(q, qd, qdd),
                    py.inverse_dynamics_derivatives(q, qd, qdd)):
        close(a, b, 1e-12, "ID derivatives")
    for a, b in zip(c.forward_dynamics_derivatives(q, qd, qdd),
                    py.forward_dynamics_derivatives(q, qd, qdd)):
        close(a, b, 1e-12, "FD derivatives")


def _spec(tmp_path, kernels: str):
    """A one-joint spec with ``kernels`` (a table, or a top-level key) added."""
    top, table = ("", kernels) if kernels.startswith("[") else (kernels, "")
    f = tmp_path / "arm.toml"
    f.write_text(top + '[mechanism]\nname = "arm"\n\n[[joints]]\nname = "j1"\ntype = "Rz"\n'
                 'body = { name = "b1", mass = 1.0, com = [0.1, 0, 0], '
                 'inertia = [0.01, 0.01, 0.01, 0, 0, 0] }\n\n' + table)
    return f


def test_kernels_table_opts_in_to_derivatives(tmp_path):
    assert load(_spec(tmp_path, "[kernels]\nderivatives = true\n")).derivatives
    assert not load(_spec(tmp_path, "")).derivatives


def test_kernels_table_takes_tangent_derivatives(tmp_path):
    assert load(_spec(tmp_path, '[kernels]\nderivatives = "tangent"\n')).derivatives == "tangent"


def test_tangent_derivatives_of_a_base_without_quaternion_are_the_plain_ones(tmp_path):
    """Euler angles and fixed bases are their own tangent space: the same kernels."""
    from mechgen.generator.families.serial.derivatives import BUILDERS
    chain, _ = random_chain(33, 4, "free", tree=True)
    for build in BUILDERS:
        plain = build(replace(chain, derivatives=True))
        tangent = build(replace(chain, derivatives="tangent"))
        assert plain.body == tangent.body and plain.outputs == tangent.outputs


@pytest.mark.parametrize("kernels, message", [
    ('[kernels]\nderivatives = "yes"\n',
     "arm.toml: kernels.derivatives: expected true or false or \"tangent\""),
    ('[kernels]\nregressor = "tangent"\n', "arm.toml: kernels.regressor: expected true or false,"),
    ("[kernels]\nhessians = true\n", "arm.toml: kernels: unknown field(s) ['hessians']"),
    ('kernels = "derivatives"\n', "arm.toml: kernels: expected a table")])
def test_bad_kernels_table_names_file_and_field(tmp_path, kernels, message):
    with pytest.raises(ModelError, match=re.escape(message)):
        load(_spec(tmp_path, kernels))


def test_printers_divide_by_the_whole_power():
    """Derivatives bring denominators x**k (d/dx 2/x = -2/x**2); the printers write x**2 as
    x*x, which must be parenthesised after '/'."""
    from mechgen.generator.backends.c import CPrinter
    from mechgen.generator.backends.python import PyPrinter
    from mechgen.generator.ir import symbol
    x, y = symbol("x"), symbol("y")
    values = {"x": 1.7, "y": 0.3}
    for e in (4 / x**2, -3 * y / x**3, y / x**4, y**2 / x**2):
        exact = float(e.subs({x: values["x"], y: values["y"]}))
        assert eval(PyPrinter().doprint(e), {}, dict(values)) == pytest.approx(exact, rel=1e-14)
        c_text = CPrinter().doprint(e)
        assert eval(c_text, {}, dict(values)) == pytest.approx(exact, rel=1e-14), c_text
