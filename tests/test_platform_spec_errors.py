"""Malformed parallel-mechanism specs are refused with a message naming the file and field."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mechgen.generator.model import ModelError
from mechgen.generator.families.parallel.spec import platform_from_dict
from tests.platforms import mixed_spec
from tests.reference.parallel_numpy import platform_alpha


def _refused(spec: dict, *fragments: str) -> None:
    with pytest.raises(ModelError) as e:
        platform_from_dict(spec, "bad.toml")
    msg = str(e.value)
    assert msg.startswith("bad.toml"), msg
    for f in fragments:
        assert f in msg, msg


def _spec() -> dict:
    return copy.deepcopy(mixed_spec())


def test_the_mixed_spec_itself_is_accepted():
    pf = platform_from_dict(_spec(), "ok.toml")
    assert [leg.type for leg in pf.legs] == ["UPS", "RUS", "SPU", "RSU", "UCU", "UPS"]
    assert sum(leg.n for leg in pf.legs) == 3 + 3 + 4 + 4 + 4 + 3


def test_unknown_leg_type_names_the_leg():
    s = _spec()
    s["legs"][2]["type"] = "PPP"
    _refused(s, "legs[2].type", "PPP", "UPS")


def test_five_legs_are_refused():
    s = _spec()
    del s["legs"][4]
    _refused(s, "6 legs")


def test_a_body_the_leg_type_does_not_have():
    s = _spec()
    s["legs"][1]["bodies"] = {"piston": {"mass": 1.0}}
    _refused(s, "legs[1].bodies", "piston")


def test_a_crank_leg_needs_its_crank_length():
    s = _spec()
    del s["legs"][1]["crank"]
    _refused(s, "legs[1].crank")


def test_unknown_joint_in_a_law():
    s = _spec()
    s["legs"][0]["joints"] = {"elbow": {"damping": 1.0}}
    _refused(s, "legs[0].joints", "elbow")


def test_a_parameter_without_default():
    s = _spec()
    del s["parameters"]["kr"]
    _refused(s, "parameters", "kr")


def test_geometry_must_be_numbers():
    s = _spec()
    s["legs"][0]["base"] = [0.8, "r", 0.0]
    _refused(s, "legs[0].base")


def test_out_of_reach_home_pose():
    s = _spec()
    s["legs"][1]["crank"] = 0.25
    s["legs"][1]["rod"] = 5.0
    _refused(s, "legs[1].rod")


def test_reserved_or_invalid_leg_names():
    s = _spec()
    s["legs"][0]["name"] = "for"
    _refused(s, "legs[0].name", "reserved")
    s = _spec()
    s["legs"][0]["name"] = "1leg"
    _refused(s, "legs[0].name")


def test_home_at_the_euler_singularity():
    s = _spec()
    s["platform"]["home"] = [0, 0, 0.5, 0, 1.5707963, 0]
    _refused(s, "platform.home", "psi_z")


# --- the home pose: every leg reachable, regular and inside its joint limits ---------------

def _home_cut_centre(s: dict, k: int) -> np.ndarray:
    """Leg k's platform joint centre at the home pose, frame 0 (numpy, independent)."""
    home = np.array(s["platform"]["home"], float)
    return home[:3] + platform_alpha(*home[3:]).T @ np.array(s["legs"][k]["platform"], float)


def test_home_stroke_outside_its_limits_names_leg_joint_and_limits():
    s = copy.deepcopy(mixed_spec(limits=True))
    s["legs"][0]["length0"] = 0.1                     # stroke at home = home length - 0.1
    _refused(s, "legs[0].limits.stroke", "leg L1", "joint stroke", "[-0.2, 0.2] m")


def test_home_crank_outside_its_limits_names_leg_joint_and_limits():
    s = _spec()
    s["legs"][1]["limits"] = {"crank": [0.1, 0.5]}    # the crank is at 0 at home
    _refused(s, "legs[1].limits.crank", "leg L2", "joint crank", "[0.1, 0.5] rad")


def test_home_coordinates_of_legs_with_a_given_frame_are_computed_not_assumed_zero():
    s = copy.deepcopy(mixed_spec(limits=True))
    s["legs"][0]["length0"] = float(np.linalg.norm(_home_cut_centre(s, 0)
                                                   - np.array(s["legs"][0]["base"]))) - 0.15
    pf = platform_from_dict(s, "ok.toml")
    assert abs(pf.legs[0].q_home[2] - 0.15) < 1e-12
    s["legs"][0]["length0"] -= 0.1                    # stroke 0.25 at home: beyond 0.2
    _refused(s, "legs[0].limits.stroke", "0.25 m at the home pose")


def test_home_at_a_crank_dead_point_is_refused_naming_the_leg():
    """Crank axis parallel to the rod at home: w = 0 in the crank's closed form."""
    s = _spec()
    b = np.array(s["legs"][1]["base"], float)
    v = _home_cut_centre(s, 1) - b
    L, a = np.linalg.norm(v), s["legs"][1]["crank"]
    e = v / L
    n = np.cross(e, [0.0, 0.0, 1.0])
    n /= np.linalg.norm(n)
    cdir = (a / L) * e + np.sqrt(1 - (a / L) ** 2) * n   # cdir . v = a: rod = v - a cdir _|_ cdir
    s["legs"][1]["crank_dir"] = cdir.tolist()
    s["legs"][1]["crank_axis"] = (v - a * cdir).tolist()
    _refused(s, "legs[1]", "leg L2", "crank")


def test_home_at_a_universal_joint_at_90_degrees_is_refused_naming_the_leg():
    s = _spec()
    e = _home_cut_centre(s, 0) - np.array(s["legs"][0]["base"], float)
    y = e / np.linalg.norm(e)                         # the U joint's first axis along the leg
    x = np.cross(y, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    s["legs"][0]["frame"] = [x.tolist(), y.tolist(), np.cross(x, y).tolist()]
    _refused(s, "legs[0]", "leg L1", "joint u2", "90 deg")


def test_a_platform_joint_on_the_crank_axis_at_home_is_refused():
    """Base and platform joints of a crank leg at one point: rho = 0 in the crank's closed
    form (this divided by zero)."""
    s = _spec()
    s["platform"]["home"] = [0.0, 0.0, 0.5, 0.0, 0.0, 0.0]
    px, py, pz = s["legs"][1]["platform"]
    s["legs"][1]["base"] = [px, py, 0.5 + pz]
    _refused(s, "legs[1]", "leg L2", "joint crank", "on the crank axis")


def test_a_negligible_crank_is_refused():
    s = _spec()
    s["legs"][1]["crank"] = 1e-300
    _refused(s, "legs[1].crank", "negligible")


def test_parameters_must_be_a_table():
    s = _spec()
    s["parameters"] = 3.0
    _refused(s, "parameters", "table")


# --- PUS legs (generator/families/parallel/legs/pus.py) ----------------------------------------------------------

def _pus() -> dict:
    from tests.platforms import spec_table
    return spec_table("hexapod_pus")


def test_the_pus_spec_builds_with_zero_coordinates_at_home():
    pf = platform_from_dict(_pus(), "ok.toml")
    assert [leg.type for leg in pf.legs] == ["PUS"] * 6
    assert all(leg.q_home == (0.0, 0.0, 0.0) for leg in pf.legs)
    assert [j.name for j in pf.legs[0].chain.joints] == ["leg1_slide", "leg1_u1", "leg1_u2"]


def test_a_pus_leg_needs_its_rail_and_takes_no_crank():
    s = _pus()
    del s["legs"][2]["rail"]
    _refused(s, "legs[2].rail", "a PUS leg needs the rail direction")
    s = _pus()
    s["legs"][1]["crank"] = 0.2
    _refused(s, "legs[1]", "['crank']", "PUS")
    s = _pus()
    s["legs"][0]["rail"] = [0, 0, 0]
    _refused(s, "legs[0].rail", "zero vector")


def test_a_pus_rod_too_short_for_the_home_pose_is_refused():
    s = _pus()
    s["legs"][3]["rod"] = 0.3                          # the rail passes ~0.5 m from the joint
    _refused(s, "legs[3].rod", "cannot reach the platform joint from the rail")


def test_a_given_pus_rod_puts_the_slide_off_zero_at_home():
    """rod longer than the home distance: the slide at home is the root of |d - q e| = rod
    nearest 0 (numpy from the spec), the universal joint still at 0."""
    s = _pus()
    leg = s["legs"][0]
    home = np.array(s["platform"]["home"], float)
    d = home[:3] + platform_alpha(*home[3:]).T @ np.array(leg["platform"]) - np.array(leg["base"])
    e = np.array(leg["rail"]) / np.linalg.norm(leg["rail"])
    leg["rod"] = float(np.linalg.norm(d)) + 0.05
    q0 = d @ e - np.sqrt(leg["rod"] ** 2 - d @ d + (d @ e) ** 2)
    pf = platform_from_dict(s, "ok.toml")
    assert abs(pf.legs[0].q_home[0] - q0) < 1e-12 and abs(q0) > 0.01
    assert max(abs(v) for v in pf.legs[0].q_home[1:]) < 1e-12
    leg["rod"] += 0.5                                  # slide far below its limit at home
    _refused(s, "legs[0].limits.slide", "leg leg1", "joint slide", "[-0.3, 0.3] m")


def test_a_pus_rod_perpendicular_to_its_rail_at_home_is_refused():
    """The rail perpendicular to the rod at home: w = 0 in the slide's closed form, refused
    whichever way rounding tips w^2 (every leg, three rails across the rod)."""
    for k in range(6):
        for across in ([0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]):
            s = _pus()
            leg = s["legs"][k]
            home = np.array(s["platform"]["home"], float)
            d = (home[:3] + platform_alpha(*home[3:]).T @ np.array(leg["platform"])
                 - np.array(leg["base"]))
            leg["rail"] = np.cross(d, across).tolist()
            _refused(s, f"legs[{k}]", f"leg leg{k + 1}", "joint slide",
                     "rod perpendicular to the rail")
