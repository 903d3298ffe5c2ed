"""The inertial-parameter regressor and the base parameters (generator/families/serial/regressor.py).

Y pi + Q_sd equals the generated inverse dynamics and the numpy reference (tests/reference/
chain_numpy.py) to 1e-10 on random states for random chains (fixed and free base, trees,
prismatic joints, springs; a quaternion free base); so do Y_b beta + Q_sd and the
Newton-Euler kernel with beta as input. The base columns are independent (rank of stacked
Y_b = b) and b is the rank of stacked Y. For the URDF robots (UR5, Panda) Y equals Pinocchio's computeJointTorqueRegressor column by
column. The RX-90 spec is checked against its modified Denavit-Hartenberg table.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mechgen import runtime
from mechgen.generator.build import GENERATED, MECHANISMS, manifest_fields
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.build import write_files
from mechgen.generator.families.serial import regressor as reg
from mechgen.generator.families.serial.kernels import inverse_dynamics
from mechgen.generator.families.serial.spec import ChainBuilder, chain_from_dict
from mechgen.generator.frontend import load
from mechgen.generator.model import ModelError
from mechgen.generator.pipeline import optimise
from tests import pinocchio_ref as pref
from tests.chains import numeric_model, random_chain
from tests.reference import chain_numpy as ref

RTOL = 1e-10
STATES = 20
# (seed, about n joints, base, tree, joint types)
CASES = [(31, 5, "fixed", False, None), (32, 5, "fixed", False, ["Px", "Py", "Pz", "Rx", "Rz"]),
         (33, 4, "free", False, None), (34, 7, "fixed", True, None), (35, 4, "free", True, None)]


def close(a, b, rtol=RTOL, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(a - b).max())
    assert err <= rtol * scale, f"{what}: max error {err:.3e} > {rtol:.0e} * {scale:.3e}"


def random_states(chain, count: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, (count, chain.n))
    if chain.base == "free":   # away from the y-z-x singularity
        q[:, 3:6] = rng.uniform(-1.0, 1.0, (count, 3))
    return {"q": q, "qd": rng.normal(size=(count, chain.n)),
            "qdd": rng.normal(size=(count, chain.n))}


def generate_regressor(chain, root):
    """Only the kernels these tests call (inverse dynamics and the regressor's), Python
    backend: a random chain is generated and loaded in a few seconds."""
    chain = replace(chain, regressor=True)
    coded = chain.with_prefixed_parameters()
    gen = [optimise(b, coded) for b in (inverse_dynamics, *reg.KERNELS)]
    files = render(chain.name, f"{chain.name}.toml", sha256_text(chain.name), gen,
                   manifest_fields(chain))
    write_files(root / chain.name, files)
    return chain, runtime.load(chain.name, "python", generated=root)


@pytest.fixture(scope="module", params=CASES,
                ids=lambda c: f"seed{c[0]}-{c[2]}{'-tree' if c[3] else ''}{'-P' if c[4] else ''}")
def case(request, tmp_path_factory):
    seed, n, base, tree, types = request.param
    chain, pvals = random_chain(seed, n, base, tree=tree, types=types)
    chain, mech = generate_regressor(chain, tmp_path_factory.mktemp("reg"))
    return chain, numeric_model(chain, pvals), mech, random_states(chain, STATES, seed)


def outputs(kernel, **inputs) -> dict[str, np.ndarray]:
    res = kernel(**inputs)
    return dict(zip([nm for nm, _ in kernel.outputs], res if isinstance(res, tuple) else (res,)))


def spring_dampers(out: dict, count: int, n: int) -> np.ndarray:
    return out.get("Q_sd", np.zeros((count, n)))


def test_regressor_times_parameters_is_inverse_dynamics(case):
    chain, model, mech, st = case
    k = mech.kernels
    info = mech.manifest["regressor"]
    pi = np.array(info["standard_values"])
    out = outputs(k["regressor"], **st)
    Q = out["Y"] @ pi + spring_dampers(out, STATES, chain.n)
    close(Q, k["inverse_dynamics"](**st), what="Y pi + Q_sd vs inverse_dynamics")
    for i in range(STATES):
        close(Q[i], ref.inverse_dynamics(model, st["q"][i], st["qd"][i], st["qdd"][i]),
              what="Y pi + Q_sd vs numpy reference")


def test_base_regressor_times_base_parameters_is_inverse_dynamics(case):
    chain, model, mech, st = case
    k = mech.kernels
    info = mech.manifest["regressor"]
    beta = np.array(info["base_values"])
    close(k["base_parameters"](pi=np.array(info["standard_values"])), beta,
          what="base_parameters kernel vs manifest")
    out = outputs(k["base_regressor"], **st)
    Q = out["Y_b"] @ beta + spring_dampers(out, STATES, chain.n)
    Q_id = k["inverse_dynamics"](**st)
    close(Q, Q_id, what="Y_b beta + Q_sd vs inverse_dynamics")
    close(k["base_inverse_dynamics"](beta=np.tile(beta, (STATES, 1)), **st), Q_id,
          what="Newton-Euler on beta vs inverse_dynamics")
    for i in range(3):
        close(Q[i], ref.inverse_dynamics(model, st["q"][i], st["qd"][i], st["qdd"][i]),
              what="Y_b beta + Q_sd vs numpy reference")


def test_base_columns_are_independent_and_as_many_as_the_rank_of_the_regressor(case):
    chain, _, mech, _ = case
    k = mech.kernels
    info = mech.manifest["regressor"]
    b = len(info["base"])
    count = len(info["standard"]) // chain.n + 6
    st = random_states(chain, count, 99)
    Y = outputs(k["regressor"], **st)["Y"].reshape(-1, len(info["standard"]))
    Yb = outputs(k["base_regressor"], **st)["Y_b"].reshape(-1, b)
    assert np.linalg.matrix_rank(Y) == b
    assert np.linalg.matrix_rank(Yb) == b
    # the zero columns are zero (to rounding), and Y_b is Y's kept columns
    std = info["standard"]
    zero = Y[:, [std.index(nm) for nm in info["zero_columns"]]]
    assert np.abs(zero).max(initial=0.0) <= 1e-12 * np.abs(Y).max()
    kept = [t[0][0] for t in info["base_terms"]]
    close(Yb, Y[:, kept], rtol=1e-13, what="Y_b = kept columns of Y")


def test_regressor_for_any_parameters_matches_the_reference_with_those_parameters(case):
    """Y does not depend on the inertial values: with other random bodies, Y pi' is their
    inverse dynamics (reference with the bodies replaced), without regenerating."""
    chain, model, mech, st = case
    rng = np.random.default_rng(5)
    other = {**model, "bodies": [dict(b) for b in model["bodies"]]}
    pi = []
    for name, j in chain.named_bodies:
        m = rng.uniform(0.5, 3.0)
        d = rng.uniform(-0.2, 0.2, 3)
        L = rng.normal(size=(3, 3)) * 0.1
        I = L @ L.T + m * (d @ d * np.eye(3) - np.outer(d, d))      # about O_j, PSD
        other["bodies"][j - 1] = {"m": m, "c": m * d, "I": I, "d": d}
        F = np.array([[float(x) for x in r] for r in chain.bodies[j - 1].frame])
        c_F, I_F = F @ (m * d), F @ I @ F.T
        pi += [m, *c_F, I_F[0, 0], I_F[0, 1], I_F[1, 1], I_F[0, 2], I_F[1, 2], I_F[2, 2]]
    out = outputs(mech.kernels["regressor"], **st)
    Q = out["Y"] @ np.array(pi) + spring_dampers(out, STATES, chain.n)
    for i in range(4):
        close(Q[i], ref.inverse_dynamics(other, st["q"][i], st["qd"][i], st["qdd"][i]),
              what="Y pi' vs reference with other bodies")


@pytest.mark.parametrize("base_velocity", ["frame0", "body"])
def test_quaternion_base_regressor_times_parameters_is_inverse_dynamics(tmp_path, base_velocity):
    """q = [x, y, z, qw, qx, qy, qz, joints] (any norm), qd with the body-frame omega; with
    base_velocity "body" (Pinocchio's free flyer) the regressor's own motion pass must carry
    the body-twist term too (inverse_dynamics equals Pinocchio's rnea there,
    tests/test_body_twist_base.py)."""
    body = lambda name, m: {"name": name, "mass": m, "com": [0.1, -0.05, 0.2],
                            "inertia": [0.3, 0.4, 0.5, 0.01, -0.02, 0.03]}
    chain = (ChainBuilder(f"quat_reg_{base_velocity}", "free", [0.0, 0.0, -9.81],
                          body("hub", 20.0), attitude="quaternion", base_velocity=base_velocity)
             .joint("j1", "Ry", l=[0.3, 0.0, 0.1], body=body("arm1", 2.0),
                    spring={"stiffness": 3.0, "damping": 0.5, "q0": 0.2})
             .joint("j2", "Px", l=[0.5, 0.0, 0.0], body=body("arm2", 1.0))).build()
    chain, mech = generate_regressor(chain, tmp_path)
    rng = np.random.default_rng(8)
    st = {"q": rng.normal(size=(STATES, chain.nq)), "qd": rng.normal(size=(STATES, chain.n)),
          "qdd": rng.normal(size=(STATES, chain.n))}
    info = mech.manifest["regressor"]
    out = outputs(mech.kernels["regressor"], **st)
    Q_id = mech.kernels["inverse_dynamics"](**st)
    close(out["Y"] @ np.array(info["standard_values"]) + out["Q_sd"], Q_id, what="Y pi + Q_sd")
    out = outputs(mech.kernels["base_regressor"], **st)
    close(out["Y_b"] @ np.array(info["base_values"]) + out["Q_sd"], Q_id, what="Y_b beta + Q_sd")


def test_base_set_is_reproducible_exact_and_names_its_regrouping():
    chain, _ = random_chain(31, 5, "fixed")
    reg._BASE_SETS.clear()
    first = reg.base_set(chain)
    reg._BASE_SETS.clear()
    assert reg.base_set(chain) == first
    exprs = reg.base_expressions(chain, first)
    names = reg.base_names(chain, first)
    for nm, ex, t in zip(names, exprs, first.terms):
        assert ex.startswith(nm.removesuffix("R")) and nm.endswith("R") == bool(t)


def test_dense_count_of_the_base_kernels_does_not_depend_on_a_cached_base_set():
    """The base set's numeric sampling happens once per process; the manifest's ``ops_dense``
    of the base kernels must be the same whether this generation sampled or not."""
    chain, _ = random_chain(31, 5, "fixed")
    counts = []
    for clear in (True, False):
        if clear:
            reg._BASE_SETS.clear()
        counts.append({b.__name__: optimise(b, chain).dense for b in reg.KERNELS[1:]})
    assert counts[0] == counts[1]


def test_a_regressor_flag_that_is_not_a_boolean_is_refused_naming_the_field():
    spec = {"mechanism": {"name": "arm"}, "kernels": {"regressor": "yes"},
            "joints": [{"name": "j1", "type": "Rz", "body": {"name": "b1", "mass": 1.0}}]}
    with pytest.raises(ModelError, match=r"arm.toml: kernels.regressor: expected true or false"):
        chain_from_dict(spec, "arm.toml")


def test_geometry_given_as_a_parameter_name_is_refused():
    chain, _ = random_chain(9, 4, "fixed", params=True)
    with pytest.raises(ModelError, match="is a parameter name"):
        reg.base_set(chain)


# --- bundled robots: Pinocchio's regressor ------------------------------------------------

URDF_ROBOTS = {"ur5": ("ur5_urdf.toml", "ur5_robot.urdf", None),
               "panda": ("panda_arm.toml", "panda.urdf",
                         {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0})}


@pytest.mark.parametrize("name", sorted(URDF_ROBOTS))
def test_bundled_regressor_equals_pinocchio_joint_torque_regressor(name):
    import pinocchio as pin
    spec, urdf, lock = URDF_ROBOTS[name]
    chain = load(MECHANISMS / spec)
    pm = pref.build(MECHANISMS / "urdf" / urdf, chain, lock)
    mech = runtime.load(name, "c", generated=GENERATED)
    info = mech.manifest["regressor"]
    # our body (name, j) is Pinocchio's body of joint j's name: its ten columns
    cols = []
    for _, j in chain.named_bodies:
        jid = pm.model.getJointId(chain.joints[j - 1].name)
        cols += range(10 * (jid - 1), 10 * jid)
    st = random_states(chain, 12, 7)
    Y = outputs(mech.kernels["regressor"], **st)["Y"]
    Q_id = mech.kernels["inverse_dynamics"](**st)
    for i in range(12):
        q, qd, qdd = (pref._q_to_pin(pm, st["q"][i]), pref._to_pin(pm, st["qd"][i]),
                      pref._to_pin(pm, st["qdd"][i]))
        Y_pin = pin.computeJointTorqueRegressor(pm.model, pm.data, q, qd, qdd)
        close(Y[i], Y_pin[pm.perm][:, cols], what=f"{name} Y vs Pinocchio")
        pi_pin = np.concatenate([pm.model.inertias[jid].toDynamicParameters()
                                 for jid in range(1, pm.model.njoints)])
        close(np.array(info["standard_values"]), pi_pin[cols], what=f"{name} pi vs Pinocchio")
        close(Y[i] @ pi_pin[cols], pref.inverse_dynamics(pm, st["q"][i], st["qd"][i],
                                                         st["qdd"][i]),
              what=f"{name} Y pi vs Pinocchio rnea")
    beta = np.array(info["base_values"])
    close(outputs(mech.kernels["base_regressor"], **st)["Y_b"] @ beta, Q_id,
          what=f"{name} Y_b beta vs inverse_dynamics")
    close(mech.kernels["base_inverse_dynamics"](beta=np.tile(beta, (12, 1)), **st), Q_id,
          what=f"{name} base Newton-Euler vs inverse_dynamics")


# --- the RX-90 ---------------------------------------------------------------------------

def mdh(alpha: float, d: float, theta: float, r: float) -> np.ndarray:
    """Khalil & Dombre's transform of frame j in frame j-1: Rx(alpha) Tx(d) Rz(theta) Tz(r)."""
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array([[ct, -st, 0, d], [ca * st, ca * ct, -sa, -r * sa],
                     [sa * st, sa * ct, ca, r * ca], [0, 0, 0, 1]])


def test_rx90_spec_is_its_modified_dh_table():
    mech = runtime.load("rx90", "c", generated=GENERATED)
    table = [(0, 0, 0), (np.pi / 2, 0, 0), (0, 0.45, 0), (-np.pi / 2, 0, 0.45),
             (np.pi / 2, 0, 0), (-np.pi / 2, 0, 0)]
    q = np.random.default_rng(4).uniform(-np.pi, np.pi, (5, 6))
    r, tau = mech.kernels["forward_kinematics"](q=q)
    for k in range(5):
        T = np.eye(4)
        for j, (alpha, d, rr) in enumerate(table):
            T = T @ mdh(alpha, d, q[k, j], rr)
            close(r[k, j], T[:3, 3], what=f"origin of frame {j + 1}")
            close(tau[k, j], T[:3, :3].T, what=f"rotation of frame {j + 1}")
