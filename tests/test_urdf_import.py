"""URDF import: what is read, how the frames map, and what is refused (every error names the
file, the element and the attribute)."""

from __future__ import annotations

import numpy as np
import pytest

from generator.model import ModelError
from generator.spec import load
from generator.urdf import align_axis, load_urdf

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
    P, k = align_axis(a)
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
