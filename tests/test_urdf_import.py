"""URDF import: what is read, how the frames map, and what is refused (every error names the
file, the element and the attribute)."""

from __future__ import annotations

import sysconfig
import warnings
from pathlib import Path

import numpy as np
import pytest

from mechgen.generator.model import ModelError
from mechgen.generator.frontend import load
from mechgen.generator.families.serial.urdf import InertiaRepairWarning, align_axis, load_urdf

INERTIAL = ('<inertial><origin xyz="0 0 0.1"/><mass value="1"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>')


def robot(*joints: str, links=("base", "a", "b"), inertial: str = INERTIAL) -> str:
    body = "".join(f'<link name="{n}">{inertial}</link>' for n in links)
    return f'<robot name="r">{body}{"".join(joints)}</robot>'


def joint(name="j1", type="revolute", parent="base", child="a", extra="") -> str:
    return (f'<joint name="{name}" type="{type}"><parent link="{parent}"/>'
            f'<child link="{child}"/>{extra}</joint>')


def write(tmp_path, text: str, name: str = "r.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return p


def error(tmp_path, text: str, **kw) -> str:
    with pytest.raises(ModelError) as e:
        load_urdf(write(tmp_path, text), **kw)
    return str(e.value)


@pytest.mark.parametrize("text,expect", [
    ("<robot><link", "not valid XML"),
    ("<model/>", "expected <robot>"),
    (robot(joint(type="planar")), "<joint name='j1'>: attribute type='planar'"),
    (robot(joint(type="floating")), "set base = 'free'"),
    (robot(joint(type="ball")), "attribute type='ball' is unknown"),
    (robot(joint(child="zz")), "<joint name='j1'>: no link named 'zz'"),
    (robot(joint(extra='<axis xyz="0 0 0"/>')), "<joint name='j1'><axis>: attribute xyz is the zero"),
    (robot(joint(extra='<origin xyz="1 2"/>')), "<joint name='j1'><origin>: attribute xyz='1 2'"),
    (robot(joint(extra='<origin rpy="0 nan 0"/>')), "expected 3 finite numbers"),
    (robot(joint(extra='<mimic joint="j0"/>'), links=("base", "a")),
     "<joint name='j1'><mimic>: mimic joints"),
    (robot(joint(), joint("j2", parent="b", child="a")), "link 'a' already has the parent joint"),
    (robot(joint()), "expected one root link"),
    (robot(joint(), joint("j2", parent="a", child="base"), links=("base", "a")),
     "expected one root link"),
    (robot(joint(), joint("j1", parent="a", child="b")), "a second joint with this name"),
    (robot(joint(), joint("j2", type="fixed", parent="a", child="b"),
           inertial='<inertial><mass value="-1"/><inertia ixx="1" iyy="1" izz="1"/></inertial>'),
     "<link name='base'><inertial><mass>: attribute value=-1.0 is negative"),
    (robot(joint(), joint("j2", type="fixed", parent="a", child="b"),
           inertial='<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="-3"/></inertial>'),
     "<link name='base'><inertial><inertia>: not positive semi-definite"),
    (robot(joint(), joint("j2", type="fixed", parent="a", child="b"),
           inertial='<inertial><mass value="1"/></inertial>'), "missing <inertia"),
    (robot(joint(type="fixed"), joint("j2", type="fixed", parent="a", child="b")),
     "no moving joint"),
])
def test_malformed_urdf_is_refused_naming_the_element(tmp_path, text, expect):
    assert expect in error(tmp_path, text)


def test_error_names_the_file(tmp_path):
    assert error(tmp_path, robot(joint(type="planar"))).startswith("r.urdf: ")


def test_lock_and_frames_errors_name_the_field(tmp_path):
    text = robot(joint(), joint("j2", type="fixed", parent="a", child="b"))
    assert "lock.jx: the URDF has no joint named 'jx'" in error(tmp_path, text, lock={"jx": 0})
    assert "lock.j2: joint 'j2' is fixed" in error(tmp_path, text, lock={"j2": 0})
    assert "lock.j1: expected a finite number" in error(tmp_path, text, lock={"j1": float("nan")})
    assert "frames[0]: the URDF has no link named 'c'" in error(tmp_path, text, frames=["c"])


def test_spec_pointing_at_a_urdf_checks_its_fields(tmp_path):
    write(tmp_path, robot(joint(), joint("j2", parent="a", child="b")))

    def spec_error(body: str) -> str:
        (tmp_path / "s.toml").write_text(body)
        with pytest.raises(ModelError) as e:
            load(tmp_path / "s.toml")
        return str(e.value)

    assert "s.toml: mechanism: unknown field(s) ['colour']" in spec_error(
        '[mechanism]\nname = "r"\nurdf = "r.urdf"\ncolour = 1\n')
    assert "missing.urdf: cannot read the URDF" in spec_error(
        '[mechanism]\nname = "r"\nurdf = "missing.urdf"\n')
    assert "s.toml: mechanism.gravity: expected 3 numbers" in spec_error(
        '[mechanism]\nname = "r"\nurdf = "r.urdf"\ngravity = [0, 0]\n')
    assert "s.toml: mechanism.mimic" in spec_error(
        '[mechanism]\nname = "r"\nurdf = "r.urdf"\nmimic = "maybe"\n')
    assert "s.toml: mechanism.base" in spec_error(
        '[mechanism]\nname = "r"\nurdf = "r.urdf"\nbase = "flying"\n')
    assert "s.toml: mechanism.name: 'q'" in spec_error('[mechanism]\nname = "q"\nurdf = "r.urdf"\n')


def test_names_become_identifiers_and_never_clash(tmp_path):
    text = ('<robot name="r"><link name="base"/>'
            f'<link name="my-link">{INERTIAL}</link><link name="my_link">{INERTIAL}</link>'
            f'<link name="2nd">{INERTIAL}</link>'
            + joint("j-1", child="my-link") + joint("for", parent="my-link", child="my_link")
            + joint("j3", parent="my_link", child="2nd") + "</robot>")
    chain = load_urdf(write(tmp_path, text))
    assert chain.coordinates == ["j_1", "for_", "j3"]
    assert [n for n, _ in chain.named_bodies] == ["my_link", "my_link_2", "L2nd"]


def test_fixed_and_locked_children_merge_into_the_parent_body(tmp_path):
    """A child on a fixed joint, and one on a joint locked at 90 deg, add their mass, first
    moment and inertia (carried into the parent's frame) to the parent body."""
    text = robot(joint(), joint("j2", type="fixed", parent="a", child="b",
                                extra='<origin xyz="0.5 0 0"/>'),
                 joint("j3", parent="a", child="c", extra='<origin xyz="0 0.2 0"/>'
                       '<axis xyz="0 0 1"/>'),
                 links=("base", "a", "b", "c"))
    chain = load_urdf(write(tmp_path, text), lock={"j3": np.pi / 2})
    assert chain.n == 1
    body = chain.bodies[0]
    assert float(body.m) == 3.0
    # centres: a at (0,0,0.1), b at (0.5,0,0.1), c at (0,0.2,0.1) (turning about z keeps it)
    np.testing.assert_allclose([float(x) for x in body.c], [0.5, 0.2, 0.3], atol=1e-15)
    I = np.array([[float(x) for x in row] for row in body.I])
    d = np.array([[0, 0, 0.1], [0.5, 0, 0.1], [0, 0.2, 0.1]])
    expect = sum(0.01 * np.eye(3) + (di @ di) * np.eye(3) - np.outer(di, di) for di in d)
    np.testing.assert_allclose(I, expect, atol=1e-15)


@pytest.mark.parametrize("axis", [[1, 0, 0], [0, -1, 0], [0, 0, -1], [0.3, -0.5, 0.8],
                                  [-0.9, 0.1, 0.05], [0, 1e-9, -1]])
def test_axis_alignment_is_a_rotation_onto_a_coordinate_axis(axis):
    a = np.array(axis, float) / np.linalg.norm(axis)
    P, k = align_axis(tuple(float(x) for x in a))      # tuples in, tuples out (no numpy)
    P = np.array(P)
    np.testing.assert_allclose(P @ a, np.eye(3)[k], atol=1e-15)
    np.testing.assert_allclose(P @ P.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(P) == pytest.approx(1.0)


def test_quarter_turns_are_exact_only_within_snap(tmp_path):
    """rpy 1.5707963267949 is pi/2 within 4e-15: exact 0/1 rotation by default. UR5's
    1.57079632679 (4.9e-12 short) is kept as written unless snap = 1e-10 is asked for."""
    def gamma(angle: str, **kw):
        text = robot(joint(extra=f'<origin rpy="0 {angle} 0"/><axis xyz="0 1 0"/>'),
                     links=("base", "a"))
        return load_urdf(write(tmp_path, text), **kw).joints[0].gamma

    exact = {0.0, 1.0, -1.0}
    assert {float(x) for row in gamma("1.5707963267949") for x in row} == exact
    assert {float(x) for row in gamma("1.57079632679", snap=1e-10) for x in row} == exact
    raw = gamma("1.57079632679")
    assert float(raw[0][0]) == pytest.approx(np.cos(1.57079632679), abs=0) and raw[0][0] != 0
    assert gamma("1.5707963267949", snap=0)[0][0] != 0


# --- real robots' quirks, and what a fuzzing run found -----------------------------------------

# TIAGo's 1 mg antenna links (example-robot-data): principal moments -3.5e-8, 3.5e-8, 9.1e-8
ANTENNA = ('<inertial><mass value="0.000001"/><inertia ixx="0.00000002371" ixy="0.00000006119" '
           'ixz="0.00000001179" iyy="0.00000002833" iyz="0.00000000774" izz="0.00000003849"/>'
           '</inertial>')


def antenna_robot() -> str:
    return ('<robot name="r"><link name="base"/>'
            f'<link name="a">{INERTIAL}</link><link name="antenna">{ANTENNA}</link>'
            + joint() + joint("fix", type="fixed", parent="a", child="antenna") + "</robot>")


def test_slightly_indefinite_inertia_is_refused_naming_the_link_and_the_repair(tmp_path):
    msg = error(tmp_path, antenna_robot())
    assert "<link name='antenna'><inertial><inertia>: not positive semi-definite" in msg
    assert 'inertia = "repair"' in msg


def test_inertia_repair_clips_the_negative_moment_and_warns_naming_the_link(tmp_path):
    with pytest.warns(InertiaRepairWarning, match=r"<link name='antenna'>.*repaired"):
        load_urdf(write(tmp_path, antenna_robot()), inertia="repair")
    # the antenna alone on a joint: its body's inertia is the repaired one (centre at 0)
    text = robot(joint(child="antenna"), links=("base", "antenna"), inertial=ANTENNA)
    with pytest.warns(InertiaRepairWarning):
        chain = load_urdf(write(tmp_path, text), inertia="repair")
    I = np.array(chain.bodies[0].I, dtype=float)
    raw = np.array([[2.371e-8, 6.119e-8, 1.179e-8], [6.119e-8, 2.833e-8, 0.774e-8],
                    [1.179e-8, 0.774e-8, 3.849e-8]])
    ev_raw, ev = np.linalg.eigvalsh(raw), np.linalg.eigvalsh(I)
    assert ev_raw[0] < -3e-8 and abs(ev[0]) < 1e-20
    np.testing.assert_allclose(ev[1:], ev_raw[1:], rtol=1e-12)


def test_inertia_repair_is_a_spec_field_checked_by_name(tmp_path):
    write(tmp_path, antenna_robot())
    spec = tmp_path / "s.toml"
    spec.write_text('[mechanism]\nname = "r"\nurdf = "r.urdf"\ninertia = "repair"\n')
    with pytest.warns(InertiaRepairWarning, match="antenna"):
        assert load(spec).n == 1
    spec.write_text('[mechanism]\nname = "r"\nurdf = "r.urdf"\ninertia = "clip"\n')
    with pytest.raises(ModelError, match=r"s\.toml: mechanism\.inertia: expected 'strict' or "
                                         r"'repair', got 'clip'"):
        load(spec)


def test_mimic_on_a_fixed_joint_is_ignored(tmp_path):
    """Talos' grippers carry <mimic> on fixed joints; they were refused, and could not be
    locked either ("joint is fixed, nothing to lock")."""
    text = robot(joint(), joint("j2", type="fixed", parent="a", child="b",
                                extra='<mimic joint="j1" multiplier="-1"/>'))
    assert load_urdf(write(tmp_path, text)).n == 1


def test_massless_leaf_names_the_urdf_joint_and_its_link_and_suggests_locking(tmp_path):
    text = ('<robot name="r"><link name="base"/>'
            f'<link name="a">{INERTIAL}</link><link name="finger-tip"/>'
            + joint() + joint("finger-1", parent="a", child="finger-tip") + "</robot>")
    msg = error(tmp_path, text)
    assert ("<joint name='finger-1'>: its child link 'finger-tip' ends a branch and has no "
            "mass") in msg
    assert "lock the joint ([lock] finger-1 = 0.0" in msg
    assert load_urdf(write(tmp_path, text), lock={"finger-1": 0.0}).n == 1


@pytest.mark.parametrize("joints,expect", [
    # a and b each other's parent: no second root, so they used to vanish without a word
    ((joint(), joint("j2", parent="c", child="b"), joint("j3", parent="b", child="c")),
     "2 link(s) do not hang from the root link 'base': ['b', 'c']; the joints ['j2', 'j3'] "
     "join the links ['b', 'c'] in a cycle"),
    ((joint(), joint("j2", parent="b", child="b")),
     "<joint name='j2'>: the parent and the child are the same link 'b'"),
])
def test_links_cut_off_from_the_root_are_refused_not_dropped(tmp_path, joints, expect):
    assert expect in error(tmp_path, robot(*joints, links=("base", "a", "b", "c")))


def test_a_link_no_joint_connects_is_named(tmp_path):
    assert "no joint connects ['b']" in error(tmp_path, robot(joint()))


def test_a_chain_of_1200_fixed_links_loads_without_recursion(tmp_path):
    """The tree was walked recursively: a RecursionError past ~1000 links."""
    links = [f'<link name="l{i}"/>' for i in range(1200)]
    joints = [joint(f"f{i}", type="fixed", parent=f"l{i - 1}" if i else "a", child=f"l{i}")
              for i in range(1200)]
    text = (f'<robot name="r"><link name="base"/><link name="a">{INERTIAL}</link>'
            + "".join(links) + joint() + "".join(joints) + "</robot>")
    chain = load_urdf(write(tmp_path, text), frames=["l1199"])
    assert chain.n == 1 and chain.points[0].name == "l1199"


@pytest.mark.parametrize("extra,expect", [
    ('<origin xyz="1e151 0 0"/>', "expected 3 finite numbers of magnitude at most 1e+150"),
    ('<origin xyz="1' + "0" * 400 + ' 0 0"/>', "...(405 characters): expected 3 finite"),
    ('<origin xyz="1_0 0 0"/>', "attribute xyz='1_0 0 0' is not a list of numbers"),
    ('<origin xyz="1+2j 0 0"/>', "is not a list of numbers"),
])
def test_huge_and_strange_numbers_in_the_urdf_are_refused(tmp_path, extra, expect):
    assert expect in error(tmp_path, robot(joint(extra=extra), links=("base", "a")))


def test_a_mass_far_away_that_overflows_the_inertia_is_refused(tmp_path):
    """m |d|^2 = 1e450 overflowed to inf, then OverflowError in the conversion to SymPy."""
    far = ('<inertial><origin xyz="1e150 0 0"/><mass value="1e150"/>'
           '<inertia ixx="1" iyy="1" izz="1"/></inertial>')
    msg = error(tmp_path, robot(joint(), links=("base", "a"), inertial=far))
    assert "<joint name='j1'>: the mass, centre of mass or inertia of the body of link 'a'" in msg


@pytest.mark.parametrize("kw,expect", [
    ({"lock": {"j1": 10 ** 400}}, "lock.j1: expected a finite number"),
    ({"lock": {"j1": 1e200}}, "lock.j1: expected a finite number"),
    ({"gravity": (0, 0, 10 ** 400)}, "mechanism.gravity: expected 3 finite numbers"),
    ({"gravity": (0, float("nan"), 0)}, "mechanism.gravity: expected 3 finite numbers"),
])
def test_huge_lock_values_and_gravity_are_model_errors(tmp_path, kw, expect):
    text = robot(joint(), joint("j2", parent="a", child="b"))
    assert expect in error(tmp_path, text, **kw)


def test_urdf_path_with_a_nul_byte_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="cannot read the URDF"):
        load_urdf(str(tmp_path / "a\x00b.urdf"))


@pytest.mark.parametrize("raw", [b'<robot name="r\xff"/>', b'<robot name="r"\x00/>'])
def test_urdf_that_is_not_utf8_or_has_nul_bytes_is_a_model_error(tmp_path, raw):
    (tmp_path / "bad.urdf").write_bytes(raw)
    with pytest.raises(ModelError, match="bad.urdf: not valid XML"):
        load_urdf(tmp_path / "bad.urdf")


ROBOTS = (Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data"
          / "robots")


@pytest.mark.skipif(not ROBOTS.is_dir(), reason="example-robot-data is not installed")
@pytest.mark.parametrize("urdf,options", [
    ("tiago_description/robots/tiago.urdf", {"inertia": "repair"}),   # 1 mg antennas
    ("talos_data/robots/talos_reduced.urdf", {}),                       # <mimic> on fixed joints
    ("g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", {}),
])
def test_real_robots_load_and_their_mass_matrix_agrees_with_pinocchio(urdf, options):
    """Robots of example-robot-data beyond the bundled ones: the same coordinates as Pinocchio
    reading the same file, and the same mass matrix (our model through the numpy reference)."""
    pin = pytest.importorskip("pinocchio")
    from tests import pinocchio_ref
    from tests.chains import numeric_model
    from tests.reference import chain_numpy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaRepairWarning)
        chain = load_urdf(ROBOTS / urdf, **options)
    assert chain.n == pin.buildModelFromUrdf(str(ROBOTS / urdf)).nv
    q = np.random.default_rng(0).uniform(-1, 1, chain.n)
    A = chain_numpy.mass_matrix(numeric_model(chain, {}), q)
    B = pinocchio_ref.mass_matrix(pinocchio_ref.build(ROBOTS / urdf, chain), q)
    np.testing.assert_allclose(A, B, atol=1e-13 * np.abs(B).max())
