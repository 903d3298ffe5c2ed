"""Kernels of robots read from URDF agree with Pinocchio (an independent library reading the
same file) to 1e-10 relative on random states: forward kinematics, Jacobians, velocities, mass
matrix, bias, inverse and forward dynamics, energy.

Robots: the bundled UR5 (6-DoF arm), Panda (7-DoF arm, fingers locked) and Solo-12 (quadruped
tree on a free-flying base), checked through both backends of their generated kernels; the
Panda with its fingers free (a tree with prismatic joints along +y and -y, the mimic read as
independent); and random URDF trees with arbitrary axes, origins and inertials, generated here.
"""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.generator.build import GENERATED, MECHANISMS
from mechgen.generator.frontend import load
from mechgen.generator.families.serial.urdf import load_urdf
from tests import pinocchio_ref as pref
from tests.chains import write_generated

RTOL = 1e-10
URDF = MECHANISMS / "urdf"
BUNDLED = {"ur5": "ur5_urdf.toml", "panda": "panda_arm.toml", "solo12": "solo12.toml"}
LOCKS = {"panda": {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}}
URDF_OF = {"ur5": "ur5_robot.urdf", "panda": "panda.urdf", "solo12": "solo12.urdf"}


def rel(ours, ref, floor: float = 1e-6) -> float:
    """max |ours - ref| over max |ref|; the floor is for quantities whose exact value is 0
    (eps of a body whose ancestors only slide)."""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), floor))


def states(n: int, count: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"q": rng.uniform(-2.0, 2.0, (count, n)), "qd": rng.normal(size=(count, n)),
            "qdd": rng.normal(size=(count, n)), "Q": rng.normal(size=(count, n)) * 5}


def run(kernel, **inputs) -> dict[str, np.ndarray]:
    """A kernel's outputs by name."""
    res = kernel(**inputs)
    return dict(zip([nm for nm, _ in kernel.outputs], res if isinstance(res, tuple) else (res,)))


def compare(mech, chain, pm: pref.PinModel, count: int = 12, seed: int = 0,
            st: dict[str, np.ndarray] | None = None) -> dict[str, float]:
    """Largest relative disagreement of each kernel over ``count`` random states (or over the
    rows of ``st``: q, qd, qdd, Q)."""
    st = states(chain.n, count, seed) if st is None else st
    count = len(st["q"])
    k = mech.kernels
    out = {nm: run(k[nm], **{a: st[a] for a, _ in k[nm].inputs})
           for nm in ("forward_kinematics", "jacobians", "velocities", "mass_matrix", "bias",
                      "inverse_dynamics", "forward_dynamics", "energy")}
    worst: dict[str, float] = {}

    def note(name: str, e: float) -> None:
        worst[name] = max(worst.get(name, 0.0), e)

    for i in range(count):
        q, qd, qdd, Q = (st[a][i] for a in ("q", "qd", "qdd", "Q"))
        r, tau = pref.forward_kinematics(pm, q)
        note("fk r", rel(out["forward_kinematics"]["r"][i], r))
        note("fk tau", rel(out["forward_kinematics"]["tau"][i], tau))
        T, R = pref.jacobians(pm, q)
        note("jacobian T", rel(out["jacobians"]["T"][i], T))
        note("jacobian R", rel(out["jacobians"]["R"][i], R))
        vel = pref.velocities(pm, q, qd)
        for nm in ("v", "omega", "w", "eps"):
            note(f"velocities {nm}", rel(out["velocities"][nm][i], vel[nm], floor=1.0))
        note("mass matrix", rel(out["mass_matrix"]["A"][i], pref.mass_matrix(pm, q)))
        note("bias", rel(out["bias"]["b"][i], pref.bias(pm, q, qd, Q)))
        note("inverse dynamics", rel(out["inverse_dynamics"]["Q"][i],
                                     pref.inverse_dynamics(pm, q, qd, qdd)))
        note("forward dynamics", rel(out["forward_dynamics"]["qdd"][i],
                                     pref.forward_dynamics(pm, q, qd, Q)))
        T_pin, V_pin = pref.energy(pm, q, qd)
        note("kinetic energy", rel(out["energy"]["T"][i], [T_pin]))
        note("potential energy", abs(out["energy"]["V"][i][0] - V_pin) / max(abs(V_pin), 1.0))
    return worst


@pytest.fixture(scope="module", params=sorted(BUNDLED))
def bundled(request):
    name = request.param
    chain = load(MECHANISMS / BUNDLED[name])
    return name, chain, pref.build(URDF / URDF_OF[name], chain, LOCKS.get(name))


@pytest.mark.parametrize("backend", ["c", "python"])
def test_bundled_robot_kernels_agree_with_pinocchio(bundled, backend):
    name, chain, pm = bundled
    mech = runtime.load(name, backend, generated=GENERATED)
    worst = compare(mech, chain, pm, count=12 if backend == "c" else 4)
    bad = {k: v for k, v in worst.items() if v > RTOL}
    assert not bad, f"{name} ({backend}): {bad}"


def test_solo12_is_a_tree_whose_mass_matrix_is_branch_sparse():
    chain = load(MECHANISMS / "solo12.toml")
    assert chain.parent[6:] == [6, 7, 8, 6, 10, 11, 6, 13, 14, 6, 16, 17]
    A = runtime.load("solo12", "c", generated=GENERATED).kernels["mass_matrix"](
        q=np.random.default_rng(1).uniform(-2, 2, (1, 18)))[0]
    for i in range(7, 19):
        for j in range(7, 19):
            related = i in chain.ancestors(j) or j in chain.ancestors(i)
            assert (A[i - 1, j - 1] != 0) == related, (i, j)


def test_free_base_mass_matrix_maps_to_pinocchio_free_flyer():
    """Pinocchio's own free-flyer (quaternion, body-frame twist) gives A = S^T M_ff S, with
    S the map from our base rates (xyz rates, y-z-x angle rates) to the free-flyer twist."""
    import pinocchio as pin
    model = pin.buildModelFromUrdf(str(URDF / "solo12.urdf"), pin.JointModelFreeFlyer())
    data = model.createData()
    kin = runtime.load("solo12", "c", generated=GENERATED).kernels
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, 18)
        ry, rz, rx = q[3:6]
        Ry, Rz, Rx = (pin.utils.rotate(a, t) for a, t in (("y", ry), ("z", rz), ("x", rx)))
        Rb = Ry @ Rz @ Rx   # root link orientation in the world
        quat = pin.Quaternion(Rb).coeffs()
        q_ff = np.concatenate([q[:3], quat, q[6:]])
        M = pin.crba(model, data, q_ff)
        M = np.triu(M) + np.triu(M, 1).T
        S = np.eye(18)
        S[:3, :3] = Rb.T                            # linear twist = R^T pdot
        ey, ez, ex = np.eye(3)[1], np.eye(3)[2], np.eye(3)[0]
        S[3:6, 3:6] = np.column_stack([(Rz @ Rx).T @ ey, Rx.T @ ez, ex])  # body-frame omega
        A = kin["mass_matrix"](q=q[None])[0]
        assert rel(A, S.T @ M @ S) < RTOL


def test_panda_with_free_fingers_is_a_tree_with_prismatic_joints(tmp_path):
    chain = load_urdf(URDF / "panda.urdf", "panda_fingers", mimic_independent=True)
    assert chain.n == 9 and chain.parent[7:] == [7, 7]
    assert [j.label for j in chain.joints[7:]] == ["Py", "Py"]
    write_generated(chain, tmp_path)
    mech = runtime.load(chain.name, "c", generated=tmp_path)
    worst = compare(mech, chain, pref.build(URDF / "panda.urdf", chain))
    assert max(worst.values()) < RTOL, worst


# --- random URDF trees -----------------------------------------------------------------

def _rpy(rng) -> str:
    return " ".join(f"{x:.17g}" for x in rng.uniform(-np.pi, np.pi, 3))


def _xyz(rng, scale=0.3) -> str:
    return " ".join(f"{x:.17g}" for x in rng.normal(scale=scale, size=3))


def _inertial(rng) -> str:
    m = rng.uniform(0.5, 3.0)
    L = rng.normal(size=(3, 3))
    I = L @ L.T * 0.02 + np.eye(3) * 0.01
    return (f'<inertial><origin xyz="{_xyz(rng, 0.1)}" rpy="{_rpy(rng)}"/>'
            f'<mass value="{m:.17g}"/><inertia ixx="{I[0, 0]:.17g}" ixy="{I[0, 1]:.17g}" '
            f'ixz="{I[0, 2]:.17g}" iyy="{I[1, 1]:.17g}" iyz="{I[1, 2]:.17g}" '
            f'izz="{I[2, 2]:.17g}"/></inertial>')


def random_urdf(seed: int, n_links: int = 9) -> str:
    """A random tree: each link hangs from a random earlier one by a revolute, continuous,
    prismatic or fixed joint; axes along +-x/y/z or arbitrary; random origins and inertials;
    a massless link here and there (merged or not)."""
    rng = np.random.default_rng(seed)
    axes = ["1 0 0", "0 1 0", "0 0 1", "0 0 -1", "-1 0 0", "0 -1 0"]
    links = [f'<link name="base">{_inertial(rng)}</link>']
    joints = []
    for i in range(1, n_links):
        parent = "base" if i == 1 else f"link{rng.integers(1, i)}" if rng.random() < 0.6 \
            else f"link{i - 1}"
        jtype = rng.choice(["revolute", "continuous", "prismatic", "fixed"], p=[.4, .2, .25, .15])
        axis = (axes[rng.integers(6)] if rng.random() < 0.5
                else " ".join(f"{x:.17g}" for x in rng.normal(size=3)))
        links.append(f'<link name="link{i}">{_inertial(rng)}</link>')
        joints.append(f'<joint name="j{i}" type="{jtype}"><parent link="{parent}"/>'
                      f'<child link="link{i}"/><origin xyz="{_xyz(rng)}" rpy="{_rpy(rng)}"/>'
                      f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="1" '
                      f'velocity="1"/></joint>')
    return f'<robot name="random{seed}">' + "".join(links + joints) + "</robot>"


@pytest.mark.parametrize("seed,base,locked", [(1, "fixed", 0), (2, "fixed", 0), (3, "free", 0),
                                              (4, "fixed", 2), (5, "free", 1)])
def test_random_urdf_trees_agree_with_pinocchio(tmp_path, seed, base, locked):
    """``locked``: how many of the moving joints are locked at random values."""
    path = tmp_path / f"random{seed}.urdf"
    path.write_text(random_urdf(seed))
    rng = np.random.default_rng(seed)
    moving = [j for j in pref.pin.buildModelFromUrdf(str(path)).names[1:]]
    lock = {str(j): float(rng.uniform(-2, 2)) for j in rng.permutation(moving)[:locked]}
    chain = load_urdf(path, base=base, gravity=(0.3, -1.2, -9.81), lock=lock)
    write_generated(chain, tmp_path)
    mech = runtime.load(chain.name, "c", generated=tmp_path)
    worst = compare(mech, chain, pref.build(path, chain, lock), count=8, seed=seed)
    assert max(worst.values()) < RTOL, worst


def test_bundled_urdfs_are_the_example_robot_data_files():
    """The vendored copies are byte-identical to the files of the installed package."""
    robots = (Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share"
              / "example-robot-data" / "robots")
    pairs = {"panda.urdf": "panda_description/urdf/panda.urdf",
             "ur5_robot.urdf": "ur_description/urdf/ur5_robot.urdf",
             "solo12.urdf": "solo_description/robots/solo12.urdf"}
    for ours, theirs in pairs.items():
        assert (URDF / ours).read_bytes() == (robots / theirs).read_bytes(), ours


def test_tree_factorisation_has_no_fill_in():
    """The L^T D L of Solo-12's forward dynamics names L_ki only for i an ancestor of k: the
    branches' zeros of the mass matrix stay zeros (a dense L D L^T would fill them in). Read
    from the kernel as built, before its legs become loops (whose names are leg 1's)."""
    from mechgen.generator.families.serial import kernels as K
    from mechgen.generator.ir import Assign
    chain = load(MECHANISMS / "solo12.toml")
    ltdl = K.forward_dynamics_ltdl(chain)
    entries = {(int(m.group(1)), int(m.group(2))) for st in ltdl.body if isinstance(st, Assign)
               for m in [re.fullmatch(r"L(\d+)_(\d+)", st.target.name)] if m}
    expected = {(k, i) for k in range(1, chain.n + 1) for i in chain.ancestors(k)[1:]}
    assert entries == expected
