"""Mutated parallel-mechanism specs either build or are refused with a ModelError naming the
file: never another exception (a TypeError, ZeroDivisionError, mpmath's or numpy's).

Seeded mutations of the bundled hunt_rus_docking.toml, gough_stewart_docking.toml and
hexapod_pus.toml (as dicts
through platform_from_dict, the model only: no kernels): wrong types (complex numbers,
strings, booleans, None, tables and lists where numbers belong), huge, tiny, infinite and NaN
numbers, deleted and unknown keys, unknown leg types, duplicate names; and degenerate
geometry: all legs through one point, coincident joints, zero vectors, a crank axis along the
rod, the home pose at psi_z = 90 deg.
"""

from __future__ import annotations

import copy
import math
import random
import tomllib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from mechgen.generator.model import ModelError
from mechgen.generator.families.parallel.platform import Platform
from mechgen.generator.families.parallel.spec import _pattern, platform_from_dict
from tests.reference.parallel_numpy import platform_alpha

MECHANISMS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"
SPECS = ("hunt_rus_docking", "gough_stewart_docking", "hexapod_pus")
SOURCE = "fuzz.toml"
MUTATIONS_PER_SPEC = 400

ODD_VALUES: list[Any] = [
    complex(1, 2), "abc", "", None, True, False, [], {}, [0, 0, 0], [1, 2], [[1, 2], [3]],
    10 ** 400, -10 ** 400, float("inf"), float("-inf"), float("nan"), 0, 0.0, -0.0, -1.0,
    1e200, 1e-300, 5e-324, 1e6, "leg1", "UPS", "RUS", "crank", "stroke", "m_ring", "for",
    {"mass": 1.0}, [float("nan")] * 3,
]


def spec(name: str, explicit_legs: bool) -> dict:
    """A bundled spec as a dict; ``explicit_legs``: its [pattern] written out as [[legs]]."""
    data = tomllib.loads((MECHANISMS / f"{name}.toml").read_text())
    if explicit_legs and "pattern" in data:
        data["legs"] = _pattern(data.pop("pattern"), name)
    return data


def outcome(data: dict) -> str:
    """"built" or "refused"; anything else fails the test with what was thrown."""
    try:
        pf = platform_from_dict(copy.deepcopy(data), SOURCE)
    except ModelError as e:
        assert str(e).startswith(SOURCE), f"the message does not name the file: {e}"
        return "refused"
    assert isinstance(pf, Platform)
    return "built"


# --- random mutations ------------------------------------------------------------------------

def _paths(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for k, v in items:
        out.append((path + (k,), v))
        out.extend(_paths(v, path + (k,)))
    return out


def _parent(data: dict, path: tuple) -> Any:
    for k in path[:-1]:
        data = data[k]
    return data


def _geometry(data: dict, rng: random.Random) -> str:
    """A degenerate or awkward geometry (on the explicit legs)."""
    legs = data["legs"]
    k = rng.randrange(len(legs))
    kind = rng.randrange(9)
    if kind == 0:
        point = [rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), 0.0]
        for leg in legs:
            leg["platform"] = list(point)
        return "all legs through one platform point"
    if kind == 1:
        for leg in legs:
            leg["base"] = [0.5, 0.5, 0.0]
        return "all legs from one base point"
    if kind == 2:
        legs[k]["base"] = list(legs[(k + 1) % len(legs)]["base"])
        return f"legs[{k}] base joint on the next leg's"
    if kind == 3:
        home = data["platform"]["home"]
        s = np.array(home[:3], float) + platform_alpha(*home[3:]).T @ np.array(legs[k]["platform"])
        legs[k]["base"] = s.tolist()
        return f"legs[{k}] base joint at its platform joint at home"
    if kind == 4:
        data["platform"]["home"][4] = math.pi / 2 * rng.choice([1, -1])
        return "home at psi_z = +-90 deg"
    if kind == 5:
        key = rng.choice(["crank_axis", "crank_dir", "base", "platform", "rail"])
        legs[k][key] = [0.0, 0.0, 0.0]
        return f"legs[{k}] zero vector"
    if kind == 6:
        legs[k]["crank_axis"] = [0.0, 0.0, 1.0]
        return f"legs[{k}] vertical crank axis"
    if kind == 7:
        legs[k]["name"] = legs[(k + 1) % len(legs)]["name"]
        return f"legs[{k}] duplicate name"
    legs[k]["type"] = rng.choice(["UPS", "SPU", "UCU", "RUS", "RSU", "PUS", "SUP", "rus", 3])
    return f"legs[{k}] type {legs[k]['type']!r}"


def mutate(data: dict, rng: random.Random) -> str:
    """One random change of ``data`` in place; returns what it did."""
    if "legs" in data and isinstance(data["legs"], list) and rng.random() < 0.25:
        try:
            return _geometry(data, rng)
        except (KeyError, TypeError, IndexError, AttributeError, ValueError):
            return "geometry (not applicable after an earlier mutation)"
    paths = _paths(data)
    path, value = rng.choice(paths)
    parent = _parent(data, path)
    r = rng.random()
    if r < 0.5:
        parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        return f"{path} = {parent[path[-1]]!r:.40}"
    if r < 0.7 and isinstance(value, (int, float)) and not isinstance(value, bool):
        parent[path[-1]] = value * rng.choice([-1, 0, 2, 1e-9, 1e9, 1e140])
        return f"{path} scaled to {parent[path[-1]]!r}"
    if r < 0.85:
        del parent[path[-1]]
        return f"{path} deleted"
    if isinstance(value, dict):
        value["unknown_key"] = 1.0
        return f"{path} unknown key"
    if isinstance(value, list):
        value.append(copy.deepcopy(value[-1]) if value else 0.0)
        return f"{path} one element more"
    parent[path[-1]] = str(value)
    return f"{path} as a string"


def _cases(name: str, seed: int, n: int) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        data = spec(name, explicit_legs=rng.random() < 0.7)
        what = [mutate(data, rng) for _ in range(rng.randint(1, 3))]
        out.append((f"{name} #{i}: " + "; ".join(what), data))
    return out


@pytest.mark.parametrize("name", SPECS)
def test_seeded_mutations_build_or_raise_a_model_error(name):
    seen = {"built": 0, "refused": 0}
    crashes = []
    for what, data in _cases(name, seed=2026 + len(name), n=MUTATIONS_PER_SPEC):
        try:
            seen[outcome(data)] += 1
        except AssertionError as e:
            crashes.append(f"{what}: {e}")
        except Exception as e:       # noqa: BLE001 - what the test is looking for
            crashes.append(f"{what}: {type(e).__name__}: {e}")
    assert not crashes, f"{len(crashes)} crash(es):\n" + "\n".join(crashes[:20])
    # the mutations reach both outcomes (a fuzzer that only ever fails early proves little)
    assert seen["built"] >= 0.05 * MUTATIONS_PER_SPEC
    assert seen["refused"] >= 0.5 * MUTATIONS_PER_SPEC


# --- named degenerate specs ------------------------------------------------------------------

def _set(path: tuple, value: Any) -> Callable[[dict], None]:
    def f(data: dict) -> None:
        _parent(data, path)[path[-1]] = value
    return f


def _crank_axis_along_the_rod(data: dict) -> None:
    """legs[0]: crank_dir with (s - b) . c = a, so that the rod s - b - a c is perpendicular
    to the crank, and the crank axis along that rod (w = 0: a dead point at home)."""
    leg, home = data["legs"][0], data["platform"]["home"]
    v = np.array(home[:3]) + platform_alpha(*home[3:]).T @ np.array(leg["platform"]) \
        - np.array(leg["base"])
    L, a = np.linalg.norm(v), data["leg"]["crank"]
    n = np.cross(v, [0.0, 0.0, 1.0])
    c = (a / L) * v / L + np.sqrt(1 - (a / L) ** 2) * n / np.linalg.norm(n)
    leg["crank_dir"], leg["crank_axis"] = c.tolist(), (v - a * c).tolist()


REFUSED: dict[str, tuple[str, Callable[[dict], None], str | tuple[str, ...]]] = {
    "complex coordinate": ("gough_stewart_docking", _set(("legs", 0, "base"), [1j, 0, 0]),
                           "legs[0].base"),
    "string coordinate": ("hunt_rus_docking", _set(("legs", 2, "platform"), [0.1, "y", 0]),
                          "legs[2].platform"),
    "string limit": ("gough_stewart_docking", _set(("leg", "limits", "stroke"), ["-0.2", 0.2]),
                     "limits.stroke"),
    "unknown leg type": ("hunt_rus_docking", _set(("legs", 4, "type"), "RRR"), "legs[4].type"),
    "duplicate leg names": ("gough_stewart_docking", _set(("legs", 1, "name"), "leg1"),
                            "used twice"),
    "zero crank axis": ("hunt_rus_docking", _set(("legs", 3, "crank_axis"), [0, 0, 0]),
                        "legs[3].crank_axis"),
    "psi_z = 90 deg at home": ("gough_stewart_docking",
                               _set(("platform", "home"), [0, 0, 0.55, 0, math.pi / 2, 0]),
                               "psi_z"),
    "parameters not a table": ("hunt_rus_docking", _set(("parameters",), 1.5), "parameters"),
    "huge integer": ("hunt_rus_docking", _set(("leg", "crank"), 10 ** 400), "leg"),
    "nan inertia": ("gough_stewart_docking", _set(("platform", "inertia"), [math.nan] * 6),
                    "platform.inertia"),
    "crank limits excluding home": ("hunt_rus_docking",
                                    _set(("leg", "limits"), {"crank": [0.2, 0.4]}),
                                    "limits.crank"),
    "crank much longer than the legs": ("hunt_rus_docking", _set(("leg", "crank"), 1e100),
                                        "crank"),
    # a dead point is also the edge of the reach: rounding (numpy's build) decides which of the
    # two refusals of legs[0] comes first ("out of reach" seen with numpy 2.4.6, scipy 1.17.1)
    "crank axis along the rod": ("hunt_rus_docking", _crank_axis_along_the_rod,
                                 ("dead point", "legs[0]: leg leg1: the home pose is out of reach")),
    "zero rail": ("hexapod_pus", _set(("legs", 2, "rail"), [0, 0, 0]), "legs[2].rail"),
    "rod shorter than the rail's distance": ("hexapod_pus", _set(("legs", 5, "rod"), 0.2),
                                             "legs[5].rod"),
    "rail on a crank leg": ("hunt_rus_docking", _set(("legs", 1, "rail"), [0, 0, 1]), "rail"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_degenerate_spec_is_refused_naming_the_field(case):
    name, change, fragment = REFUSED[case]
    data = spec(name, explicit_legs=True)
    change(data)
    with pytest.raises(ModelError) as e:
        platform_from_dict(data, SOURCE)
    fragments = fragment if isinstance(fragment, tuple) else (fragment,)
    assert str(e.value).startswith(SOURCE) and any(f in str(e.value) for f in fragments), \
        str(e.value)


def test_legs_through_one_point_build_a_model():
    """Six legs meeting at one point of C: an architecture singularity (the drive_forces
    kernel flags it at run time), not a malformed spec."""
    for name in SPECS:
        data = spec(name, explicit_legs=True)
        for leg in data["legs"]:
            leg["platform"] = [0.1, 0.0, 0.0]
        assert outcome(data) == "built"
