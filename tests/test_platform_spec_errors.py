"""Malformed parallel-mechanism specs are refused with a message naming the file and field."""

from __future__ import annotations

import copy

import pytest

from generator.model import ModelError
from generator.platform_spec import platform_from_dict
from tests.platforms import mixed_spec


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
