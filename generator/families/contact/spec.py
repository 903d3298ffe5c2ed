"""Spec file (TOML) of a docking interface -> :class:`Interface` (the contact family).

Every error names the file and the field, e.g. ``apas.toml: petals.R_tip``. Format (lengths
in metres, angles in degrees; the values shown are the defaults, resembling APAS-89, except
for the contact and latch laws, which a spec must state)::

    [mechanism]
    name = "apas_interface"
    family = "contact"
    description = "..."            # optional

    [parameters]                   # default values of named parameters (the kernel input p)
    k_petal = 2.0e6

    [petals]                       # the same shape on both units
    R_base = 0.58                  # radius of the base vertices (on the ring face, z = 0)
    R_tip = 0.40                   # radius of the apex (< R_base: leaning inwards)
    h = 0.30                       # height of the apex
    beta = 24.0                    # half-width of the base (deg of azimuth)
    r_edge = 0.012                 # radius of the edge capsules and apex spheres
    active_azimuths = [0, 120, 240]      # D_A
    passive_azimuths = [60, 180, 300]    # D_P (interleaving when docked)

    [ring]                         # ring faces (plane z = 0 of each unit) and stop pads
    R_in = 0.58                    # the face annulus, both units
    R_out = 0.72
    R_pad = 0.65                   # stop pads: radius, height above their own face
    h_pad = 0.004
    active_pad_azimuths = [60, 180, 300]
    passive_pad_azimuths = [0, 120, 240]

    [latches]
    R_latch = 0.65
    azimuths = [30, 150, 270]      # D_A; the passive points coincide when docked and aligned
    k = "k_latch"                  # N/m      (a number or a parameter name; required)
    c = "c_latch"                  # N s/m    (required)

    [contact]
    v_eps = "v_eps"                # m/s, friction regularisation (required)
    [contact.petal]                # edge-edge and apex-plate contacts (required)
    k = "k_petal"                  # N/m^e
    e = 1.5                        # exponent (default 1.5)
    d = "d_petal"                  # Hunt-Crossley damping, s/m
    mu = "mu_petal"                # friction coefficient
    [contact.ring]                 # stop pads on the ring faces (required), same fields

    [capture]
    gap_tol = 0.03                 # m, |r_z|
    lateral_tol = 0.01             # m, sqrt(r_x^2 + r_y^2)
    tilt_tol = 1.0                 # deg, angle between z_P and -z_A
    roll_tol = 1.0                 # deg, twist about the axis from the aligned pose

A law field is a number (baked into the kernels) or the name of a parameter of
``[parameters]`` (an element of ``p``); every parameter must be used. Three petals, pads and
latches per unit.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable

import sympy as sp

from mechgen.generator.families.contact import geometry as geo
from mechgen.generator.families.contact.interface import Capture, ContactLaw, Interface, Latches
from mechgen.generator.fields import keys as _keys
from mechgen.generator.model import ModelError, check_name, finite_number, symbol

FAMILY = "contact"
COUNT = 3               # petals, pads and latches per unit

PETALS = {"R_base": 0.58, "R_tip": 0.40, "h": 0.30, "beta": 24.0, "r_edge": 0.012,
          "active_azimuths": [0.0, 120.0, 240.0], "passive_azimuths": [60.0, 180.0, 300.0]}
RING = {"R_in": 0.58, "R_out": 0.72, "R_pad": 0.65, "h_pad": 0.004,
        "active_pad_azimuths": [60.0, 180.0, 300.0], "passive_pad_azimuths": [0.0, 120.0, 240.0]}
LATCH_GEOMETRY = {"R_latch": 0.65, "azimuths": [30.0, 150.0, 270.0]}
CAPTURE = {"gap_tol": 0.03, "lateral_tol": 0.01, "tilt_tol": 1.0, "roll_tol": 1.0}
LAW_FIELDS = {"k", "e", "d", "mu"}
TOP = {"mechanism", "parameters", "petals", "ring", "latches", "contact", "capture"}


def is_contact(data: dict) -> bool:
    mech = data.get("mechanism") if isinstance(data, dict) else None
    return isinstance(mech, dict) and mech.get("family") == FAMILY


# --- numbers --------------------------------------------------------------------------------

Rule = Callable[[float], bool]
POSITIVE: tuple[Rule, str] = (lambda x: x > 0, "positive")
NON_NEGATIVE: tuple[Rule, str] = (lambda x: x >= 0, "non-negative")


def _number(value: Any, where: str, rule: tuple[Rule, str] | None = None) -> float:
    v = finite_number(value, where)
    if rule is not None and not rule[0](v):
        raise ModelError(f"{where}: must be {rule[1]}, got {value!r}")
    return v


def _azimuths(value: Any, where: str) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != COUNT:
        raise ModelError(f"{where}: expected a list of {COUNT} azimuths (deg), got {value!r}")
    return tuple(_number(x, f"{where}[{i}]") for i, x in enumerate(value))


def _separation(a: float, b: float) -> float:
    """The angle between two azimuths, in [0, 180] deg."""
    d = abs(a - b) % 360.0
    return min(d, 360.0 - d)


class _Reader:
    """Reads one spec's tables; ``where(field)`` names the file and the field."""

    def __init__(self, data: dict, source: str) -> None:
        self.source = source
        self.top = _keys(data, TOP, source, {"mechanism", "latches", "contact"})
        params = self.top.get("parameters", {})
        params = _keys(params, set(params) if isinstance(params, dict) else set(),
                       f"{source}: parameters")
        self.defaults = {check_name(k, f"{source}: parameters.{k}"):
                         _number(v, f"{source}: parameters.{k}") for k, v in params.items()}
        self.used: set[str] = set()

    def where(self, name: str) -> str:
        return f"{self.source}: {name}"

    def table(self, name: str, allowed: set[str], required: set[str] = frozenset(),
              parent: dict | None = None) -> dict:
        key = name.rsplit(".", 1)[-1]
        raw = (self.top if parent is None else parent).get(key, {})
        return _keys(raw, allowed, self.where(name), required)

    def value(self, table: dict, defaults: dict, name: str, key: str,
              rule: tuple[Rule, str] | None = None) -> float:
        return _number(table.get(key, defaults.get(key)), self.where(f"{name}.{key}"), rule)

    def law_value(self, value: Any, where: str, rule: tuple[Rule, str]) -> sp.Expr:
        """A number (exact rational of its decimal text) or a parameter with a default."""
        where = self.where(where)
        if isinstance(value, str):
            name = check_name(value, where)
            if name not in self.defaults:
                raise ModelError(f"{where}: parameter {name!r} has no default in [parameters]")
            if not rule[0](self.defaults[name]):
                raise ModelError(f"{where}: the default of parameter {name!r} must be "
                                 f"{rule[1]}, got {self.defaults[name]!r}")
            self.used.add(name)
            return symbol(name)
        v = _number(value, where, rule)
        return sp.Rational(repr(v)) if not float(v).is_integer() else sp.Integer(int(v))


def _shape(rd: _Reader) -> tuple[geo.PetalShape, tuple, tuple]:
    t = rd.table("petals", set(PETALS))
    num = {k: rd.value(t, PETALS, "petals", k, POSITIVE)
           for k in ("R_base", "R_tip", "h", "beta", "r_edge")}
    if num["R_tip"] >= num["R_base"]:
        raise ModelError(f"{rd.where('petals.R_tip')}: {num['R_tip']} must be less than "
                         f"petals.R_base ({num['R_base']}): the petals lean inwards")
    if num["beta"] >= 60.0:
        raise ModelError(f"{rd.where('petals.beta')}: {num['beta']} deg must be below 60 deg "
                         f"(three petals per unit)")
    shape = geo.PetalShape(**num)
    sides = []
    for side in ("active_azimuths", "passive_azimuths"):
        az = _azimuths(t.get(side, PETALS[side]), rd.where(f"petals.{side}"))
        for i in range(COUNT):
            for j in range(i):
                if _separation(az[i], az[j]) <= 2 * shape.beta:
                    raise ModelError(f"{rd.where(f'petals.{side}')}: petals {j} and {i} "
                                     f"overlap (azimuths {az[j]} and {az[i]} deg are closer "
                                     f"than 2 beta = {2 * shape.beta} deg)")
        sides.append(az)
    return shape, sides[0], sides[1]


def _ring(rd: _Reader) -> dict:
    t = rd.table("ring", set(RING))
    out = {k: rd.value(t, RING, "ring", k, POSITIVE) for k in ("R_in", "R_out", "R_pad")}
    out["h_pad"] = rd.value(t, RING, "ring", "h_pad", NON_NEGATIVE)
    if out["R_in"] >= out["R_out"]:
        raise ModelError(f"{rd.where('ring.R_in')}: {out['R_in']} must be less than "
                         f"ring.R_out ({out['R_out']})")
    if not out["R_in"] <= out["R_pad"] <= out["R_out"]:
        raise ModelError(f"{rd.where('ring.R_pad')}: {out['R_pad']} must lie on the face "
                         f"annulus [R_in, R_out] = [{out['R_in']}, {out['R_out']}]")
    for side in ("active_pad_azimuths", "passive_pad_azimuths"):
        out[side] = _azimuths(t.get(side, RING[side]), rd.where(f"ring.{side}"))
    return out


def _law(rd: _Reader, contact: dict, kind: str) -> ContactLaw:
    name = f"contact.{kind}"
    t = rd.table(name, LAW_FIELDS, {"k", "d", "mu"}, parent=contact)
    return ContactLaw(rd.law_value(t["k"], f"{name}.k", NON_NEGATIVE),
                      rd.law_value(t.get("e", 1.5), f"{name}.e", POSITIVE),
                      rd.law_value(t["d"], f"{name}.d", NON_NEGATIVE),
                      rd.law_value(t["mu"], f"{name}.mu", NON_NEGATIVE))


def _latches(rd: _Reader) -> tuple[Latches, dict]:
    t = rd.table("latches", set(LATCH_GEOMETRY) | {"k", "c"}, {"k", "c"})
    R_latch = rd.value(t, LATCH_GEOMETRY, "latches", "R_latch", POSITIVE)
    az = _azimuths(t.get("azimuths", LATCH_GEOMETRY["azimuths"]), rd.where("latches.azimuths"))
    latches = Latches(geo.latch_points(R_latch, az),
                      rd.law_value(t["k"], "latches.k", NON_NEGATIVE),
                      rd.law_value(t["c"], "latches.c", NON_NEGATIVE))
    return latches, {"R_latch": R_latch, "azimuths": list(az)}


def _capture(rd: _Reader) -> Capture:
    t = rd.table("capture", set(CAPTURE))
    v = {k: rd.value(t, CAPTURE, "capture", k, POSITIVE) for k in CAPTURE}
    for k in ("tilt_tol", "roll_tol"):
        if v[k] > 180.0:
            raise ModelError(f"{rd.where(f'capture.{k}')}: {v[k]} deg must be at most 180 deg")
    return Capture(v["gap_tol"], v["lateral_tol"], v["tilt_tol"], v["roll_tol"],
                   geo.half_angle_sine(v["tilt_tol"]), geo.half_angle_sine(v["roll_tol"]))


def interface_from_dict(data: dict, source: str) -> Interface:
    """The parsed tables of a spec -> the Interface (ModelError naming file and field)."""
    rd = _Reader(data, source)
    mech = rd.table("mechanism", {"name", "family", "description"}, {"name"})
    name = check_name(mech["name"], rd.where("mechanism.name"))
    if mech.get("family") != FAMILY:
        raise ModelError(f"{rd.where('mechanism.family')}: expected {FAMILY!r}, got "
                         f"{mech.get('family')!r}")
    if not isinstance(mech.get("description", ""), str):
        raise ModelError(f"{rd.where('mechanism.description')}: expected a string")
    shape, active_az, passive_az = _shape(rd)
    ring = _ring(rd)
    contact = rd.table("contact", {"v_eps", "petal", "ring"}, {"v_eps", "petal", "ring"})
    petal_law, ring_law = _law(rd, contact, "petal"), _law(rd, contact, "ring")
    v_eps = rd.law_value(contact["v_eps"], "contact.v_eps", NON_NEGATIVE)
    latches, latch_fields = _latches(rd)
    capture = _capture(rd)
    unused = sorted(set(rd.defaults) - rd.used)
    if unused:
        raise ModelError(f"{rd.where('parameters')}: {unused} not used by the interface")
    active = geo.unit(shape, active_az, ring["R_pad"], ring["h_pad"], ring["active_pad_azimuths"])
    passive = geo.unit(shape, passive_az, ring["R_pad"], ring["h_pad"],
                       ring["passive_pad_azimuths"])
    fields = {"petals": {**vars(shape), "active_azimuths": list(active_az),
                         "passive_azimuths": list(passive_az)},
              "ring": {k: (list(v) if isinstance(v, tuple) else v) for k, v in ring.items()},
              "latches": latch_fields,
              "capture": {k: getattr(capture, k) for k in CAPTURE}}
    return Interface(name, shape, active, passive, ring["R_in"], ring["R_out"], petal_law,
                     ring_law, v_eps, latches, capture, source, rd.defaults, fields)


def read_toml(path: Path) -> dict:
    """The tables of a spec file (ModelError naming the file for anything unreadable)."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ModelError(f"{path}: cannot read the spec: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{path}: not UTF-8 text (TOML is UTF-8)") from None
    except tomllib.TOMLDecodeError as e:
        raise ModelError(f"{path}: not valid TOML: {e}") from None


def load_interface(path: str | Path) -> Interface:
    """A contact spec file -> its Interface (what ``frontend.load`` does for this family)."""
    path = Path(path)
    return interface_from_dict(read_toml(path), path.name)
