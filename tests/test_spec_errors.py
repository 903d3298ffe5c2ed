"""The serial spec reader (frontend.load, families/serial/spec.py): every error is a
ModelError naming the file and the field.

Small TOML specs are written into tmp_path and loaded with :func:`frontend.load`; the Python
API (:class:`families.serial.spec.ChainBuilder`) is checked against the same rules, and a spec
file and a Python script describing the same mechanism must build equal models.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from mechgen.generator.ir import symbol
from mechgen.generator.model import ModelError
from mechgen.generator.frontend import load
from mechgen.generator.families.serial.spec import ChainBuilder

FILE = "arm.toml"

# a valid two-joint arm; the tests below change one thing in it
MECH = '[mechanism]\nname = "arm"\ngravity = [0, 0, -9.81]\n'
J0 = ('[[joints]]\nname = "j1"\ntype = "Rz"\n'
      'body = { name = "link1", mass = 2.0, com = [0.1, 0, 0], inertia = [0.01, 0.02, 0.02, 0, 0, 0] }\n')
J1 = ('[[joints]]\nname = "j2"\ntype = "Ry"\nl = [0.3, 0, 0]\n'
      'body = { name = "link2", mass = 1.0, com = [0.2, 0, 0], inertia = [0.01, 0.01, 0.01, 0, 0, 0] }\n')


def write(tmp_path: Path, text: str, name: str = FILE) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def spec(*parts: str) -> str:
    return "\n".join(parts)


def joint(name: str = "j1", type: str = "Rz", body: str | None = None, **fields: str) -> str:
    """A [[joints]] table; ``fields`` are raw TOML values."""
    body = body or '{ name = "%s_b", mass = 1.0, com = [0.1, 0, 0], inertia = [0.01, 0.01, 0.01, 0, 0, 0] }' % name
    lines = ["[[joints]]", f'name = "{name}"', f'type = "{type}"']
    lines += [f"{k} = {v}" for k, v in fields.items()]
    lines.append(f"body = {body}")
    return "\n".join(lines) + "\n"


def load_error(tmp_path: Path, text: str, *fragments: str) -> str:
    """Load ``text`` as arm.toml, expect a ModelError containing the file name and fragments."""
    path = write(tmp_path, text)
    with pytest.raises(ModelError, match=re.escape(FILE)) as info:
        load(path)
    msg = str(info.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return msg


def test_valid_base_spec_loads(tmp_path):
    chain = load(write(tmp_path, spec(MECH, J0, J1)))
    assert chain.name == "arm" and chain.n == 2
    assert chain.named_bodies == [("link1", 1), ("link2", 2)]
    assert chain.parameters == []


# --- joints ---------------------------------------------------------------------------------

def test_unknown_joint_type_names_file_field_and_type(tmp_path):
    text = spec(MECH, J0, J1.replace('type = "Ry"', 'type = "Rw"'))
    path = write(tmp_path, text)
    with pytest.raises(ModelError, match=r"arm\.toml: joints\[1\]\.type: unknown joint type 'Rw'"):
        load(path)


@pytest.mark.parametrize("bad", ['"Rzz"', '"rz"', '"R"', '""', '"P"'])
def test_unknown_joint_type_variants(tmp_path, bad):
    load_error(tmp_path, spec(MECH, joint(type="X").replace('type = "X"', f"type = {bad}")),
               "joints[0].type", "unknown joint type")


def test_unknown_field_in_joint(tmp_path):
    load_error(tmp_path, spec(MECH, joint(colour='"red"')),
               "joints[0]", "unknown field(s) ['colour']")


def test_unknown_field_in_body(tmp_path):
    body = '{ name = "b", mass = 1.0, density = 3.0 }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body", "unknown field(s) ['density']")


def test_unknown_field_in_spring(tmp_path):
    load_error(tmp_path, spec(MECH, joint(spring="{ stiffness = 1.0, friction = 2.0 }")),
               "joints[0].spring", "unknown field(s) ['friction']")


def test_joint_missing_type(tmp_path):
    text = '[[joints]]\nname = "j1"\nbody = { name = "b", mass = 1.0 }\n'
    load_error(tmp_path, spec(MECH, text), "joints[0]", "missing field(s) ['type']")


def test_duplicate_joint_name(tmp_path):
    msg = load_error(tmp_path, spec(MECH, joint("j1"), joint("j1", body='{ name = "other", mass = 1.0 }')))
    assert "'j1'" in msg and "used twice" in msg


def test_duplicate_body_name(tmp_path):
    b = '{ name = "link", mass = 1.0, com = [0.1, 0, 0] }'
    msg = load_error(tmp_path, spec(MECH, joint("j1", body=b), joint("j2", body=b)))
    assert "'link'" in msg and "used twice" in msg


def test_empty_joints(tmp_path):
    load_error(tmp_path, "joints = []\n" + MECH, "joints", "non-empty")


def test_missing_joints(tmp_path):
    load_error(tmp_path, MECH, "missing field(s) ['joints']")


# --- bodies ---------------------------------------------------------------------------------

def test_inertia_with_five_numbers(tmp_path):
    body = '{ name = "b", mass = 1.0, inertia = [0.1, 0.1, 0.1, 0, 0] }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.inertia", "expected 6 numbers")


def test_negative_mass(tmp_path):
    body = '{ name = "b", mass = -1.5, com = [0.1, 0, 0] }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.mass", "negative")


def test_negative_principal_moment(tmp_path):
    body = '{ name = "b", mass = 1.0, inertia = [0.1, -0.1, 0.1, 0, 0, 0] }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.inertia", "Iyy", "negative")


@pytest.mark.parametrize("inertia", ["[1, 1, 3, 0, 0, 0]", "[0.1, 0.5, 0.1, 0, 0, 0]", "[2, 0.5, 1, 0, 0, 0]"])
def test_inertia_violating_triangle_inequality(tmp_path, inertia):
    body = f'{{ name = "b", mass = 1.0, inertia = {inertia} }}'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.inertia", "triangle inequality")


def test_com_with_two_numbers(tmp_path):
    body = '{ name = "b", mass = 1.0, com = [0.1, 0] }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.com", "expected a list of 3")


def test_boolean_is_not_a_number(tmp_path):
    body = '{ name = "b", mass = true }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.mass", "True")


def test_massless_last_body(tmp_path):
    msg = load_error(tmp_path, spec(MECH, J0, joint("j2", body='{ name = "tip" }')))
    assert "ends a branch and is massless" in msg


def test_massless_last_body_is_named_with_its_joint_and_the_fix(tmp_path):
    msg = load_error(tmp_path, spec(MECH, J0, joint("j2", body='{ name = "tip" }')))
    assert "body 'tip' (body 2, moved by joint 'j2')" in msg
    assert "give it a mass and inertia" in msg and "[lock]" in msg


def test_massless_last_body_of_composite_joint(tmp_path):
    msg = load_error(tmp_path, spec(MECH, J0, joint("j2", type="S", body='{ name = "tip" }')))
    assert "ends a branch and is massless" in msg


# --- gamma ----------------------------------------------------------------------------------

@pytest.mark.parametrize("matrix", [
    "[[1, 0, 0], [0, 1, 0], [0, 0, -1]]",        # a reflection (det -1)
    "[[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]",       # not orthonormal
    "[[2, 0, 0], [0, 2, 0], [0, 0, 2]]",         # scaled
    "[[0, 0, 0], [0, 0, 0], [0, 0, 0]]",
])
def test_gamma_matrix_not_a_rotation(tmp_path, matrix):
    load_error(tmp_path, spec(MECH, joint(gamma=matrix)), "joints[0].gamma", "not a proper rotation")


def test_gamma_matrix_that_is_a_rotation_loads(tmp_path):
    chain = load(write(tmp_path, spec(MECH, joint(gamma="[[0, 1, 0], [-1, 0, 0], [0, 0, 1]]"))))
    assert [[float(x) for x in r] for r in chain.joints[0].gamma] == [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("pair", ['[["w", 90]]', '[["X", 90]]', '[["x"]]', '[[90]]',
                                  '[["x", 90, 0]]', '[["z", 30], ["q", 10]]'])
def test_gamma_pair_with_bad_axis(tmp_path, pair):
    idx = "1" if "q" in pair else "0"
    load_error(tmp_path, spec(MECH, joint(gamma=pair)), f"joints[0].gamma[{idx}]",
               "expected [axis, angle]")


def test_gamma_not_a_list(tmp_path):
    load_error(tmp_path, spec(MECH, joint(gamma='"x90"')), "joints[0].gamma", "expected a list")


# --- composite joints -----------------------------------------------------------------------

@pytest.mark.parametrize("axes, why", [("yy", "consecutive axes must differ"),
                                       ("xyz", "needs 2"),
                                       ("y", "needs 2"),
                                       ("yw", "needs 2")])
def test_universal_joint_bad_axes(tmp_path, axes, why):
    load_error(tmp_path, spec(MECH, joint(type="U", axes=f'"{axes}"')), "joints[0].axes", why,
               repr(axes))


def test_spherical_joint_bad_axes(tmp_path):
    load_error(tmp_path, spec(MECH, joint(type="S", axes='"xxz"')), "joints[0].axes",
               "consecutive axes must differ")


def test_axes_on_simple_joint(tmp_path):
    load_error(tmp_path, spec(MECH, joint(type="Rz", axes='"z"')), "joints[0].axes",
               "only for composite joints")


def test_composite_joint_splits(tmp_path):
    chain = load(write(tmp_path, spec(MECH, joint("u", type="U", axes='"xz"'), joint("c", type="C"))))
    assert [j.name for j in chain.joints] == ["u_1", "u_2", "c_1", "c_2"]
    assert [j.label for j in chain.joints] == ["Rx", "Rz", "Rx", "Px"]
    assert chain.named_bodies == [("u_b", 2), ("c_b", 4)]


# --- [mechanism], [base], points ------------------------------------------------------------

def test_missing_mechanism_name(tmp_path):
    load_error(tmp_path, spec('[mechanism]\ngravity = [0, 0, -9.81]\n', J0),
               "mechanism", "missing field(s) ['name']")


def test_missing_mechanism_table(tmp_path):
    load_error(tmp_path, J0, "missing field(s) ['mechanism']")


def test_unknown_top_level_table(tmp_path):
    load_error(tmp_path, spec(MECH, J0, "[extras]\nfoo = 1\n"), "unknown field(s) ['extras']")


def test_unknown_mechanism_field(tmp_path):
    load_error(tmp_path, spec(MECH.replace("[mechanism]", '[mechanism]\nunits = "SI"'), J0),
               "mechanism", "unknown field(s) ['units']")


def test_bad_base_value(tmp_path):
    load_error(tmp_path, spec(MECH + 'base = "floating"\n', J0), "mechanism.base", "'floating'")


def test_gravity_with_two_numbers(tmp_path):
    load_error(tmp_path, spec(MECH.replace("[0, 0, -9.81]", "[0, -9.81]"), J0),
               "mechanism.gravity", "expected a list of 3")


def test_free_base_without_base_table(tmp_path):
    load_error(tmp_path, spec(MECH + 'base = "free"\n', J0), "base = 'free' needs a [base] table")


def test_base_table_with_fixed_base(tmp_path):
    base = '[base]\nname = "sc"\nmass = 100.0\ninertia = [10, 10, 10, 0, 0, 0]\n'
    load_error(tmp_path, spec(MECH + 'base = "fixed"\n', base, J0), "[base] is only for base = 'free'")


def test_base_table_with_default_base(tmp_path):
    base = '[base]\nname = "sc"\nmass = 100.0\n'
    load_error(tmp_path, spec(MECH, base, J0), "[base] is only for base = 'free'")


def test_base_table_errors_name_the_field(tmp_path):
    base = '[base]\nname = "sc"\nmass = -100.0\n'
    load_error(tmp_path, spec(MECH + 'base = "free"\n', base, J0), "base.mass", "negative")


def test_point_on_unknown_body(tmp_path):
    pt = '[[points]]\nname = "tool"\nbody = "nope"\noffset = [0, 0, 0.1]\n'
    load_error(tmp_path, spec(MECH, J0, J1, pt), "points[0].body", "no body named 'nope'", "link2")


def test_point_on_fictitious_body_of_composite_joint(tmp_path):
    pt = '[[points]]\nname = "tool"\nbody = "u_1_body"\n'
    load_error(tmp_path, spec(MECH, joint("u", type="U"), pt), "points[0].body",
               "no body named 'u_1_body'")


def test_point_missing_body(tmp_path):
    pt = '[[points]]\nname = "tool"\n'
    load_error(tmp_path, spec(MECH, J0, pt), "points[0]", "missing field(s) ['body']")


def test_point_offset_with_four_numbers(tmp_path):
    pt = '[[points]]\nname = "tool"\nbody = "link1"\noffset = [0, 0, 0.1, 0]\n'
    load_error(tmp_path, spec(MECH, J0, pt), "points[0].offset", "expected a list of 3")


def test_point_named_like_a_body(tmp_path):
    pt = '[[points]]\nname = "link1"\nbody = "link1"\n'
    msg = load_error(tmp_path, spec(MECH, J0, pt))
    assert "'link1'" in msg and "used twice" in msg


# --- names ----------------------------------------------------------------------------------

BAD_NAMES = [("1abc", "not a valid name"), ("a-b", "not a valid name"), ("", "not a valid name"),
             ("a b", "not a valid name"), ("_x", "not a valid name"), ("é", "not a valid name"),
             ("a" * 64, "not a valid name"),
             ("int", "reserved word"), ("return", "reserved word"), ("class", "reserved word"),
             ("double", "reserved word"), ("q", "reserved word"), ("status", "reserved word"),
             ("mg_block_to_rows", "reserved word")]     # a helper of the C's SIMD blocks


@pytest.mark.parametrize("name, why", BAD_NAMES)
def test_invalid_mechanism_name(tmp_path, name, why):
    load_error(tmp_path, spec(MECH.replace('"arm"', f'"{name}"'), J0), "mechanism.name", why)


@pytest.mark.parametrize("name, why", BAD_NAMES)
def test_invalid_joint_name(tmp_path, name, why):
    load_error(tmp_path, spec(MECH, J0.replace('"j1"', f'"{name}"')), "joints[0].name", why)


@pytest.mark.parametrize("name, why", BAD_NAMES)
def test_invalid_body_name(tmp_path, name, why):
    load_error(tmp_path, spec(MECH, J0.replace('"link1"', f'"{name}"')), "joints[0].body.name", why)


@pytest.mark.parametrize("name, why", BAD_NAMES)
def test_invalid_parameter_name(tmp_path, name, why):
    load_error(tmp_path, spec(MECH, J0.replace("mass = 2.0", f'mass = "{name}"')),
               "joints[0].body.mass", why)


@pytest.mark.parametrize("name, why", BAD_NAMES[:4] + BAD_NAMES[7:9])
def test_invalid_point_name(tmp_path, name, why):
    pt = f'[[points]]\nname = "{name}"\nbody = "link1"\n'
    load_error(tmp_path, spec(MECH, J0, pt), "points[0].name", why)


def test_parameter_clashing_with_joint_name(tmp_path):
    msg = load_error(tmp_path, spec(MECH, J0.replace("mass = 2.0", 'mass = "j1"')))
    assert "parameter 'j1' clashes" in msg


def test_longest_valid_name_loads(tmp_path):
    name = "a" * 63
    assert load(write(tmp_path, spec(MECH, J0.replace('"j1"', f'"{name}"')))).joints[0].name == name


# --- file-level errors ----------------------------------------------------------------------

def test_invalid_toml_syntax(tmp_path):
    load_error(tmp_path, spec(MECH, J0, "[[joints]\nname = \n"), "not valid TOML")


def test_invalid_toml_duplicate_key(tmp_path):
    load_error(tmp_path, spec(MECH.replace("[mechanism]", '[mechanism]\nname = "x"')), "not valid TOML")


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match=r"nope\.toml: cannot read the spec"):
        load(tmp_path / "nope.toml")


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ModelError, match="cannot read the spec"):
        load(tmp_path)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_toml_nan_and_inf_rejected(tmp_path, value):
    load_error(tmp_path, spec(MECH, J1.replace("l = [0.3, 0, 0]", f"l = [0.3, {value}, 0]")),
               "joints[0].l[1]", "not a finite number")


# --- the Python API -------------------------------------------------------------------------

BODY = {"name": "b1", "mass": 1.0, "com": [0.1, 0, 0], "inertia": [0.01, 0.01, 0.01, 0, 0, 0]}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_python_api_rejects_nan_inf_in_l(bad):
    with pytest.raises(ModelError, match=r"<python>: joint 'j1'\.l\[0\]: .* is not a finite number"):
        ChainBuilder("arm").joint("j1", "Rz", l=(bad, 0, 0), body=BODY)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_python_api_rejects_nan_inf_elsewhere(bad):
    with pytest.raises(ModelError, match=r"mechanism\.gravity\[2\].*not a finite number"):
        ChainBuilder("arm", gravity=(0, 0, bad))
    with pytest.raises(ModelError, match=r"body\.mass.*not a finite number"):
        ChainBuilder("arm").joint("j1", "Rz", body={**BODY, "mass": bad})
    with pytest.raises(ModelError, match=r"body\.inertia\[3\].*not a finite number"):
        ChainBuilder("arm").joint("j1", "Rz", body={**BODY, "inertia": [1, 1, 1, bad, 0, 0]})
    with pytest.raises(ModelError, match=r"gamma\[0\].*not a finite number"):
        ChainBuilder("arm").joint("j1", "Rz", gamma=[["x", bad]], body=BODY)
    with pytest.raises(ModelError, match=r"spring\.damping.*not a finite number"):
        ChainBuilder("arm").joint("j1", "Rz", body=BODY, spring={"damping": bad})
    b = ChainBuilder("arm").joint("j1", "Rz", body=BODY)
    with pytest.raises(ModelError, match=r"point 'tool'\.offset\[0\].*not a finite number"):
        b.point("tool", "b1", (bad, 0, 0))


@pytest.mark.parametrize("axes", ["yy", "xyz"])
def test_python_api_universal_joint_bad_axes(axes):
    with pytest.raises(ModelError, match=r"joint 'u'\.axes: .*" + re.escape(repr(axes))):
        ChainBuilder("arm").joint("u", "U", axes=axes, body=BODY)


def test_python_api_errors_name_the_source():
    with pytest.raises(ModelError, match=r"^myscript: joint 'j1'\.type: unknown joint type 'Rq'"):
        ChainBuilder("arm", source="myscript").joint("j1", "Rq", body=BODY)
    with pytest.raises(ModelError, match=r"mechanism\.name: '1abc' is not a valid name"):
        ChainBuilder("1abc")
    with pytest.raises(ModelError, match="base = 'free' needs a \\[base\\] table"):
        ChainBuilder("arm", base="free")
    with pytest.raises(ModelError, match="the chain has no joint"):
        ChainBuilder("arm").build()


SAME_SPEC = """\
[mechanism]
name = "same"
base = "free"
gravity = [0.0, "g_y", -9.81]

[base]
name = "hub"
mass = 50.0
com = [0.01, 0.0, -0.02]
inertia = [5.0, 6.0, 7.0, 0.1, 0.0, -0.2]

[[joints]]
name = "yaw"
type = "Rz"
l = [0.5, 0.0, 0.25]
gamma = [["x", 90], ["z", -30.5]]
spring = { stiffness = 10.0, damping = 0.5, q0 = 0.1 }
body = { name = "a", mass = 3.0, com = [0.0, 0.1, 0.2], inertia = [0.1, 0.2, 0.25, 0.0, 0.01, 0.0] }

[[joints]]
name = "wrist"
type = "U"
axes = "xz"
l = ["L1", 0.0, 0.0]
gamma = [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]
body = { name = "b", mass = "m_tip", com = [0.0, 0.0, 0.1], inertia = [0.02, 0.02, 0.01, 0, 0, 0] }

[[joints]]
name = "slide"
type = "C"
gamma = [["y", "beta"]]
body = { name = "c", mass = 0.5, com = [0.05, 0.0, 0.0], inertia = [0.001, 0.002, 0.002, 0, 0, 0] }

[[points]]
name = "tool"
body = "c"
offset = [0.0, 0.0, 0.1]

[[points]]
name = "marker"
body = "hub"
offset = [1.0, 0.0, 0.0]
"""


def same_by_python():
    return (ChainBuilder("same", base="free", gravity=(0.0, "g_y", -9.81),
                         base_body={"name": "hub", "mass": 50.0, "com": [0.01, 0.0, -0.02],
                                    "inertia": [5.0, 6.0, 7.0, 0.1, 0.0, -0.2]})
            .joint("yaw", "Rz", l=(0.5, 0.0, 0.25), gamma=[["x", 90], ["z", -30.5]],
                   spring={"stiffness": 10.0, "damping": 0.5, "q0": 0.1},
                   body={"name": "a", "mass": 3.0, "com": [0.0, 0.1, 0.2],
                         "inertia": [0.1, 0.2, 0.25, 0.0, 0.01, 0.0]})
            .joint("wrist", "U", axes="xz", l=("L1", 0.0, 0.0),
                   gamma=[[0, 1, 0], [-1, 0, 0], [0, 0, 1]],
                   body={"name": "b", "mass": "m_tip", "com": [0.0, 0.0, 0.1],
                         "inertia": [0.02, 0.02, 0.01, 0, 0, 0]})
            .joint("slide", "C", gamma=[["y", "beta"]],
                   body={"name": "c", "mass": 0.5, "com": [0.05, 0.0, 0.0],
                         "inertia": [0.001, 0.002, 0.002, 0, 0, 0]})
            .point("tool", "c", (0.0, 0.0, 0.1))
            .point("marker", "hub", (1.0, 0.0, 0.0))
            .build())


def test_spec_file_and_python_api_build_equal_models(tmp_path):
    a = load(write(tmp_path, SAME_SPEC, "same.toml"))
    b = same_by_python()
    assert a.source == "same.toml" and b.source == "<python>"
    assert a.name == b.name == "same"
    assert a.base == b.base == "free"
    assert a.n == b.n == 6 + 1 + 2 + 2
    assert a.joints == b.joints
    assert a.bodies == b.bodies
    assert a.gravity == b.gravity
    assert a.named_bodies == b.named_bodies == [("hub", 6), ("a", 7), ("b", 9), ("c", 11)]
    assert a.points == b.points
    assert a.coordinates == b.coordinates
    assert a.parameters == b.parameters


def test_bundled_spec_equals_python_api():
    root = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"
    a = load(root / "ur5_arm.toml")
    import tomllib
    data = tomllib.loads((root / "ur5_arm.toml").read_text())
    m = data["mechanism"]
    b = ChainBuilder(m["name"], m["base"], m["gravity"])
    for jt in data["joints"]:
        b.joint(jt["name"], jt["type"], jt.get("l", (0, 0, 0)), jt.get("gamma"), body=jt["body"])
    for pt in data["points"]:
        b.point(pt["name"], pt["body"], pt["offset"])
    b = b.build()
    assert (a.joints, a.bodies, a.gravity, a.named_bodies, a.points) == \
           (b.joints, b.bodies, b.gravity, b.named_bodies, b.points)


def test_named_parameters_become_symbols(tmp_path):
    chain = load(write(tmp_path, SAME_SPEC, "same.toml"))
    params = chain.parameters
    assert [s.name for s in params] == ["L1", "beta", "g_y", "m_tip"]   # sorted by name
    assert all(isinstance(s, sp.Symbol) for s in params)
    assert all(s == symbol(s.name) and s.is_real for s in params)
    m_tip = symbol("m_tip")
    body_b = dict(chain.named_bodies)["b"]
    assert chain.bodies[body_b - 1].m == m_tip
    assert chain.joints[7].l[0] == symbol("L1")   # first part of the U joint carries l
    assert chain.gravity[1] == symbol("g_y")
    # the angle given by name is in radians (no degree conversion)
    gamma = chain.joints[9].gamma
    assert gamma[0][0] == sp.cos(symbol("beta"))


def test_numbers_are_exact_rationals_of_their_decimal_text(tmp_path):
    chain = load(write(tmp_path, spec(MECH, J0, J1)))
    assert chain.gravity == (0, 0, sp.Rational("-9.81"))
    assert chain.joints[1].l == (sp.Rational(3, 10), 0, 0)
    # 90 degrees is exact: cos and sin are 0 and 1
    ch = load(write(tmp_path, spec(MECH, joint(gamma='[["x", 90]]')), "g.toml"))
    assert ch.joints[0].gamma == ((1, 0, 0), (0, 0, 1), (0, -1, 0))


# --- once accepted or not a ModelError; fixed --------------------

def test_vector_given_as_a_string_is_rejected(tmp_path):
    load_error(tmp_path, spec(MECH, joint(l='"xyz"')), "joints[0].l")


def test_vector_given_as_a_number_is_a_model_error(tmp_path):
    load_error(tmp_path, spec(MECH, joint(l="5")), "joints[0].l")


@pytest.mark.parametrize("axis", ["xy", ""])
def test_gamma_axis_substring_is_rejected(tmp_path, axis):
    load_error(tmp_path, spec(MECH, joint(gamma=f'[["{axis}", 90]]')), "joints[0].gamma[0]")


@pytest.mark.parametrize("pair", ['[[1, 90]]', '[[["x"], 90]]'])
def test_gamma_axis_not_a_string_is_a_model_error(tmp_path, pair):
    load_error(tmp_path, spec(MECH, joint(gamma=pair)), "joints[0].gamma[0]")


def test_indefinite_inertia_is_rejected(tmp_path):
    body = '{ name = "b", mass = 1.0, inertia = [1, 1, 1, 5, 0, 0] }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body.inertia")


def test_point_mass_on_last_axis_is_a_model_error(tmp_path):
    from mechgen.generator.build import files_for_spec
    text = spec(MECH, J0, joint("j2", type="Rz", l="[0.3, 0, 0]",
                                body='{ name = "bob", mass = 1.0, com = [0, 0, 0.2] }'))
    with pytest.raises(ModelError, match="arm.toml"):
        files_for_spec(write(tmp_path, text))


def test_parameter_names_that_look_like_generated_identifiers_are_safe(tmp_path):
    """Parameters reach generated code as p_<name>: names like A, q1, NAN or tau compile and
    give the right numbers in both backends."""
    import numpy as np
    from mechgen import runtime
    from mechgen.generator.build import files_for_spec, write_files
    from tests.chains import numeric_model
    from tests.reference import chain_numpy as ref
    text = spec(MECH, joint("j1", type="Ry", l='["q1", 0, "NAN"]',
                            body='{ name = "b1", mass = "A", com = [0.1, 0, "tau"], '
                                 'inertia = [0.1, 0.1, 0.1, 0, 0, 0] }'),
                joint("j2", type="Rz", l="[0.3, 0, 0]",
                      body='{ name = "b2", mass = 1.0, com = [0.1, 0.1, 0], '
                           'inertia = [0.1, 0.2, 0.15, 0, 0, 0] }'))
    path = write(tmp_path, text)
    chain, _, files = files_for_spec(path)
    write_files(tmp_path / "gen" / chain.name, files)
    pv = {"A": 2.0, "NAN": 0.25, "q1": -0.3, "tau": 0.05}
    model = numeric_model(chain, pv)
    q = np.array([0.4, -0.7])
    for backend in ("c", "python"):
        m = runtime.load(chain.name, backend, generated=tmp_path / "gen")
        A = m.mass_matrix(q, m.params(pv))
        np.testing.assert_allclose(A, ref.mass_matrix(model, q), rtol=1e-12, atol=1e-14)


def test_joint_parent_makes_a_tree_and_unknown_parents_are_named(tmp_path):
    J2 = J1.replace('"j2"', '"j3"').replace('"link2"', '"link3"') + 'parent = "link1"\n'
    chain = load(write(tmp_path, spec(MECH, J0, J1, J2)))
    assert chain.parent == [0, 1, 1] and chain.is_tree
    ground = J1.replace('"j2"', '"j0"').replace('"link2"', '"link0"') + 'parent = "ground"\n'
    assert load(write(tmp_path, spec(MECH, J0, J1, ground))).parent == [0, 1, 0]
    bad = J1 + 'parent = "link9"\n'
    with pytest.raises(ModelError, match=r"arm.toml: joints\[1\].parent: no body named 'link9'"):
        load(write(tmp_path, spec(MECH, J0, bad)))
    with pytest.raises(ModelError, match=r"joints\[1\].parent: expected a body name"):
        load(write(tmp_path, spec(MECH, J0, J1 + "parent = 3\n")))


# --- what a fuzzing run found: every bad input is a ModelError --------------------------------

def test_spec_that_is_not_utf8_is_a_model_error(tmp_path):
    path = tmp_path / FILE
    path.write_bytes(MECH.encode() + b'description = "\xff\xfe"\n' + J0.encode())
    with pytest.raises(ModelError, match=r"arm\.toml: not UTF-8 text .*0xff"):
        load(path)


def test_spec_path_with_a_nul_byte_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="cannot read the spec"):
        load(str(tmp_path / "a\x00b.toml"))


def test_nul_byte_in_a_spec_is_a_model_error(tmp_path):
    path = tmp_path / FILE
    path.write_bytes(MECH.encode().replace(b'"arm"', b'"a\x00rm"') + J0.encode())
    with pytest.raises(ModelError, match="not valid TOML"):
        load(path)


HUGE = "1" + "0" * 400     # a TOML integer of 401 digits


@pytest.mark.parametrize("fields,where", [
    ({"body": '{ name = "b", mass = %s }' % HUGE}, "joints[0].body.mass"),
    ({"body": '{ name = "b", mass = 1e151 }'}, "joints[0].body.mass"),
    ({"body": '{ name = "b", mass = 1, com = [-1e200, 0, 0] }'}, "joints[0].body.com[0]"),
    ({"body": '{ name = "b", mass = 1, inertia = [1, 1, 1, %s, 0, 0] }' % HUGE},
     "joints[0].body.inertia[3]"),
    ({"l": "[0, 0, 1%s]" % ("0" * 160)}, "joints[0].l[2]"),
    ({"spring": "{ stiffness = 2e300 }"}, "joints[0].spring.stiffness"),
    ({"gamma": '[["x", 1e160]]'}, "joints[0].gamma[0]"),
])
def test_numbers_above_1e150_are_refused_naming_the_field(tmp_path, fields, where):
    load_error(tmp_path, spec(MECH, joint(**fields)), where, "too large")


def test_mass_far_away_overflowing_the_inertia_is_refused(tmp_path):
    body = '{ name = "b", mass = 1e150, com = [1e150, 0, 0], inertia = [1, 1, 1, 0, 0, 0] }'
    load_error(tmp_path, spec(MECH, joint(body=body)), "joints[0].body", "exceeds 1e+300")


@pytest.mark.parametrize("bad", [sp.I, 1 + 2 * sp.I, sp.nan, sp.zoo, sp.oo, complex(1, 2)])
def test_python_api_rejects_complex_and_infinite_sympy_numbers(bad):
    with pytest.raises(ModelError, match=r"joint 'j1'\.body\.mass"):
        ChainBuilder("arm").joint("j1", "Rz", body={**BODY, "mass": bad})


def test_points_that_are_not_an_array_of_tables_are_refused(tmp_path):
    load_error(tmp_path, MECH.replace("[mechanism]", "points = 1e-320\n[mechanism]") + J0,
               "points: expected an array")
    load_error(tmp_path, spec(MECH, J0, '[[points]]\nname = "tool"\nbody = ["link1"]\n'),
               "points[0].body: expected a body name")


def test_python_api_parent_that_is_not_a_name_is_refused():
    b = ChainBuilder("arm").joint("j1", "Rz", body=BODY)
    with pytest.raises(ModelError, match=r"joint 'j2'\.parent: expected a body name"):
        b.joint("j2", "Rz", parent=["b1"], body={**BODY, "name": "b2"})


# --- gamma as a sequence of rotations --------------------------------------------------------

SEQ16 = [[a, d] for a, d in zip("xyzxyzxyzxyzxyzx", [17, 23, 41, 5, 77, 13, 29, 31, 37, 43, 47,
                                                     53, 59, 61, 67, 71])]


def numpy_gamma(seq: list) -> np.ndarray:
    """The same product with numpy (the first rotation applied first)."""
    R = np.eye(3)
    for axis, deg in seq:
        c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
        E = {"x": [[1, 0, 0], [0, c, s], [0, -s, c]], "y": [[c, 0, -s], [0, 1, 0], [s, 0, c]],
             "z": [[c, s, 0], [-s, c, 0], [0, 0, 1]]}[axis]
        R = np.array(E) @ R
    return R


def test_a_gamma_of_16_numeric_rotations_is_multiplied_numerically_and_right(monkeypatch):
    """It took 14-40 s when the product was expanded symbolically before folding: no
    symbolic elementary rotation is built for numeric angles (checked by refusing one)."""
    from mechgen.generator import model

    def symbolic(axis, angle):
        raise AssertionError(f"a symbolic rotation built for the numeric angle {angle}")
    monkeypatch.setattr(model, "elementary", symbolic)
    chain = ChainBuilder("arm").joint("j1", "Rz", gamma=SEQ16, body=BODY).build()
    G = np.array([[float(x) for x in row] for row in chain.joints[0].gamma])
    np.testing.assert_allclose(G, numpy_gamma(SEQ16), atol=1e-15)


def test_quarter_turns_in_a_gamma_stay_exact():
    seq = [["x", 90], ["z", -90], ["y", 180], ["x", 450], ["z", 30], ["z", -30]]
    gamma = ChainBuilder("arm").joint("j1", "Rz", gamma=seq[:4], body=BODY).build().joints[0].gamma
    assert all(isinstance(x, sp.Integer) for row in gamma for x in row)
    np.testing.assert_array_equal(np.array(gamma, dtype=float), numpy_gamma(seq[:4]).round())
    # then 30 and -30 degrees about z: they cancel (to rounding)
    gamma = ChainBuilder("arm").joint("j1", "Rz", gamma=seq, body=BODY).build().joints[0].gamma
    np.testing.assert_allclose(np.array(gamma, dtype=float), numpy_gamma(seq[:4]).round(),
                               atol=1e-16)


def test_a_gamma_mixing_parameters_and_numbers_is_the_same_rotation():
    seq = [["x", 17], ["y", "theta"], ["z", 90], ["x", 23], ["z", "phi"], ["y", -41]]
    gamma = ChainBuilder("arm").joint("j1", "Rz", gamma=seq, body=BODY).build().joints[0].gamma
    values = {symbol("theta"): 0.3, symbol("phi"): -1.1}
    G = np.array([[float(x.subs(values)) for x in row] for row in gamma])
    expect = numpy_gamma([[a, np.degrees(values[symbol(d)]) if isinstance(d, str) else d]
                          for a, d in seq])
    np.testing.assert_allclose(G, expect, atol=1e-14)


def test_a_gamma_of_parameters_longer_than_12_rotations_is_refused(tmp_path):
    gamma = "[" + ", ".join(f'["{"xyz"[i % 3]}", {30 if i % 2 else f"{chr(34)}a{i}{chr(34)}"}]'
                            for i in range(13)) + "]"
    load_error(tmp_path, spec(MECH, joint(gamma=gamma)), "joints[0].gamma",
               "at most 12 rotations, got 13")
