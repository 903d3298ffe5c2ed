"""Spec file (TOML) of a parallel mechanism -> :class:`generator.platform.Platform`.

Every error names the file and the field, e.g. ``hexa.toml: legs[2].type``. Format::

    [mechanism]
    name = "hexapod"
    family = "parallel"
    gravity = [0, 0, -9.81]      # default of the kernel input g (frame 0)

    [parameters]                 # default values of named parameters
    m_ring = 200.0

    [platform]                   # the controlled body C; frame C origin at its centre of mass
    mass = "m_ring"
    inertia = [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]     # about the centre of mass, frame C
    home = [0, 0, 0.55, 0, 0, 0]                 # pose x at which the leg frames are aligned

    [leg]                        # defaults of every leg; each [[legs]] entry may override
    type = "UPS"                 # UPS SPU UCU RUS RSU PUS (generator.legs.LEG_TYPES)
    bodies = { cylinder = { mass = 4, com = [0.2, 0, 0], inertia = [...] }, piston = {...} }
    joints = { stroke = { stiffness = 2e4, damping = 2e3, q0 = 0, preload = 0 } }
    limits = { stroke = [-0.2, 0.2] }
    drive = "stroke"             # the joint that takes the drive input F
    # P legs: length0 (leg length at zero stroke; default: the home length), frame (3x3)
    # R legs: crank (length), crank_axis, crank_dir (frame 0), rod (default: home distance)
    # PUS: rail (direction, frame 0), rod (default: home distance from base, slide 0 at home)

    [[legs]]                     # six of them, or a [pattern]
    name = "leg1"
    base = [0.87, 0.23, 0]       # base joint centre, frame 0
    platform = [0.6, 0.25, 0]    # cut joint centre, frame C

    [pattern]                    # six legs on two circles (angles in degrees)
    base_radius = 0.9
    base_angles = [-15, 15, 105, 135, 225, 255]
    platform_radius = 0.65
    platform_angles = [-45, 75, 75, 195, 195, 315]
    base_z = 0
    platform_z = 0

A stiffness or damping may be a list [k1, k2, ...]: Q = preload - sum k_i x^i - sum c_i qd^i.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import sympy as sp


from mechgen.generator import numeric as num
from mechgen.generator.model import ModelError, as_expr, check_name, finite_number
from mechgen.generator.scalar import fold_constant
from mechgen.generator.families.parallel.legs import LEG_TYPES
from mechgen.generator.families.parallel.platform import (JointLaw, Leg, LegGeometry, Platform, build_leg,
                                validate_platform)
from mechgen.generator.fields import (body as _body, inertia as _inertia, keys as _keys,
                                      rotation as _rotation)

# fields of every leg, and the leg types' own (generator.legs: each type's FIELDS)
TYPE_FIELDS = {key for lt in LEG_TYPES.values() for key in lt.FIELDS}
LEG_FIELDS = {"name", "type", "base", "platform", "bodies", "joints", "limits",
              "drive"} | TYPE_FIELDS


def _numbers(value: Any, n: int, where: str) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != n or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise ModelError(f"{where}: expected a list of {n} numbers, got {value!r}")
    return tuple(finite_number(x, f"{where}[{i}]") for i, x in enumerate(value))


def _number(value: Any, where: str, positive: bool = False) -> float:
    v = finite_number(value, where)
    if positive and v <= 0:
        raise ModelError(f"{where}: must be positive, got {value!r}")
    return v


LAW_FIELDS = {"stiffness", "damping", "q0", "preload", "inertia", "rotor_inertia", "lead",
              "stops", "stop_stiffness", "stop_damping"}


def _law(table: Any, where: str) -> JointLaw:
    """A joint's law: spring, damper, preload; reflected inertia (``inertia``, or a ball
    screw's ``rotor_inertia`` J and ``lead`` L: J (2 pi / L)^2); end stops."""
    t = _keys(table, LAW_FIELDS, where)

    def poly(key: str) -> tuple:
        v = t.get(key, [])
        items = v if isinstance(v, list) else [v]
        return tuple(as_expr(x, f"{where}.{key}") for x in items)

    def expr(key: str, default: Any = 0) -> sp.Expr:
        return as_expr(t.get(key, default), f"{where}.{key}")

    if "inertia" in t and ("rotor_inertia" in t or "lead" in t):
        raise ModelError(f"{where}: give either inertia or rotor_inertia and lead, not both")
    if ("rotor_inertia" in t) != ("lead" in t):
        raise ModelError(f"{where}: a ball-screw drive needs both rotor_inertia and lead")
    inertia = expr("inertia")
    if "lead" in t:
        lead = expr("lead")
        if lead.is_number and not lead > 0:
            raise ModelError(f"{where}.lead: must be positive, got {t['lead']!r}")
        ratio = (2 * sp.pi / lead) ** 2             # (rad/m)^2, one double when lead is one
        inertia = expr("rotor_inertia") * (fold_constant(ratio) if ratio.is_number else ratio)
    if inertia.is_number and inertia < 0:
        raise ModelError(f"{where}: negative reflected inertia {float(inertia)}")
    stops = None
    if "stops" in t:
        lo, hi = _numbers(t["stops"], 2, f"{where}.stops")
        if lo >= hi:
            raise ModelError(f"{where}.stops: lower stop {lo} not below upper {hi}")
        if "stop_stiffness" not in t:
            raise ModelError(f"{where}.stop_stiffness: end stops need a stiffness")
        stops = (float(lo), float(hi))
    elif "stop_stiffness" in t or "stop_damping" in t:
        raise ModelError(f"{where}: stop_stiffness/stop_damping without stops = [lo, hi]")
    return JointLaw(poly("stiffness"), poly("damping"), expr("q0"), expr("preload"),
                    inertia, stops, expr("stop_stiffness"), expr("stop_damping"))


def _check_stops(laws: dict, limits: dict, where: str) -> None:
    """End stops sit inside the joint's hard limits (beyond which a kernel fails)."""
    for jn, law in laws.items():
        if law.stops is not None and jn in limits:
            (lo, hi), (llo, lhi) = law.stops, limits[jn]
            if not (llo < lo and hi < lhi):
                raise ModelError(f"{where}.joints.{jn}.stops: {[lo, hi]} must lie inside the "
                                 f"limits {[llo, lhi]}")


def _leg(t: dict, where: str, home: tuple[float, ...]) -> Leg:
    _keys(t, LEG_FIELDS, where, {"name", "type", "base", "platform"})
    name = check_name(t["name"], f"{where}.name")
    typ = t["type"]
    if not isinstance(typ, str) or typ not in LEG_TYPES:
        raise ModelError(f"{where}.type: unknown leg type {typ!r}; expected one of "
                         f"{', '.join(LEG_TYPES)}")
    lt = LEG_TYPES[typ]
    joint_names = lt.joint_names
    bodies_t = _keys(t.get("bodies", {}), set(lt.bodies), f"{where}.bodies")
    bodies = {bn: replace(_body(bt, f"{where}.bodies.{bn}", bn), name=f"{name}_{bn}")
              for bn, bt in bodies_t.items()}
    joints_t = _keys(t.get("joints", {}), set(joint_names), f"{where}.joints")
    laws = {jn: _law(jt, f"{where}.joints.{jn}") for jn, jt in joints_t.items()}
    limits_t = _keys(t.get("limits", {}), set(joint_names), f"{where}.limits")
    limits = {}
    for jn, v in limits_t.items():
        lo, hi = _numbers(v, 2, f"{where}.limits.{jn}")
        if lo >= hi:
            raise ModelError(f"{where}.limits.{jn}: lower limit {lo} not below upper {hi}")
        limits[jn] = (float(lo), float(hi))
    _check_stops(laws, limits, where)
    drive = t.get("drive", lt.drive)
    if drive not in joint_names:
        raise ModelError(f"{where}.drive: {drive!r} is not a joint of a {typ} leg "
                         f"({', '.join(joint_names)})")
    wrong = (TYPE_FIELDS - set(lt.FIELDS)) & set(t)
    if wrong:
        raise ModelError(f"{where}: field(s) {sorted(wrong)} do not apply to a {typ} leg")
    for key, fld in lt.FIELDS.items():
        if fld.needs and key not in t:
            raise ModelError(f"{where}.{key}: a {typ} leg needs {fld.needs}")
    base = _numbers(t["base"], 3, f"{where}.base")
    platform = _numbers(t["platform"], 3, f"{where}.platform")
    options = {key: _option(fld.kind, t[key], f"{where}.{key}")
               for key, fld in lt.FIELDS.items() if key in t}
    for key, fld in lt.FIELDS.items():
        if fld.kind == "direction" and key in options and num.norm(options[key]) < 1e-12:
            raise ModelError(f"{where}.{key}: zero vector")
    geo = LegGeometry(name, typ, base, platform, bodies, laws, drive, limits, options)
    return build_leg(geo, home, where)


def _option(kind: str, value: Any, where: str) -> Any:
    """A leg type's own field (generator.legs.Field): its value as the leg type reads it."""
    if kind == "positive":
        return _number(value, where, True)
    if kind == "direction":
        return _numbers(value, 3, where)
    if kind == "rotation":
        return num.mat([[float(x) for x in r] for r in _rotation(value, where)])
    raise ValueError(f"{where}: unknown kind of leg field {kind!r}")


def _pattern(t: Any, where: str) -> list[dict]:
    t = _keys(t, {"base_radius", "base_angles", "platform_radius", "platform_angles", "base_z",
                  "platform_z"}, where, {"base_radius", "base_angles", "platform_radius",
                                         "platform_angles"})
    rb = _number(t["base_radius"], f"{where}.base_radius", True)
    rp = _number(t["platform_radius"], f"{where}.platform_radius", True)
    n = Platform.dof                                                    # one leg per DoF of C
    ab = _numbers(t["base_angles"], n, f"{where}.base_angles")          # degrees
    ap = _numbers(t["platform_angles"], n, f"{where}.platform_angles")
    zb = _number(t.get("base_z", 0.0), f"{where}.base_z")
    zp = _number(t.get("platform_z", 0.0), f"{where}.platform_z")
    return [{"name": f"leg{k + 1}",
             "base": [rb * num.cos_deg(ab[k]), rb * num.sin_deg(ab[k]), zb],
             "platform": [rp * num.cos_deg(ap[k]), rp * num.sin_deg(ap[k]), zp]} for k in range(n)]


def platform_from_dict(data: dict, source: str) -> Platform:
    top = _keys(data, {"mechanism", "parameters", "platform", "leg", "legs", "pattern"}, source,
                {"mechanism", "platform"})
    mech = _keys(top["mechanism"], {"name", "family", "gravity", "description"},
                 f"{source}: mechanism", {"name"})
    name = check_name(mech["name"], f"{source}: mechanism.name")
    gravity = tuple(_numbers(mech.get("gravity", [0, 0, 0]), 3, f"{source}: mechanism.gravity"))
    params_t = top.get("parameters", {})
    params = _keys(params_t, set(params_t) if isinstance(params_t, dict) else set(),
                   f"{source}: parameters")
    defaults = {}
    for k, v in params.items():
        check_name(k, f"{source}: parameters.{k}")
        defaults[k] = _number(v, f"{source}: parameters.{k}")
    pt = _keys(top["platform"], {"mass", "inertia", "home"}, f"{source}: platform",
               {"mass", "inertia", "home"})
    m_C = as_expr(pt["mass"], f"{source}: platform.mass")
    if m_C.is_number and m_C <= 0:
        raise ModelError(f"{source}: platform.mass: must be positive, got {m_C}")
    I_C = _inertia(pt["inertia"], f"{source}: platform.inertia")
    home = _numbers(pt["home"], 6, f"{source}: platform.home")
    if abs(num.cos(home[4])) < 1e-3:
        raise ModelError(f"{source}: platform.home: psi_z = +-90 deg is the singularity of the "
                         f"y-z-x angles")
    template = top.get("leg", {})
    _keys(template, LEG_FIELDS - {"name", "base", "platform"}, f"{source}: leg")
    if "legs" in top and "pattern" in top:
        raise ModelError(f"{source}: give either [[legs]] or [pattern], not both")
    if "legs" in top:
        entries = top["legs"]
        if not isinstance(entries, list):
            raise ModelError(f"{source}: legs: expected an array of tables [[legs]]")
    elif "pattern" in top:
        entries = _pattern(top["pattern"], f"{source}: pattern")
    else:
        raise ModelError(f"{source}: no legs: give [[legs]] or [pattern]")
    legs = []
    for k, entry in enumerate(entries):
        where = f"{source}: legs[{k}]"
        if not isinstance(entry, dict):
            raise ModelError(f"{where}: expected a table")
        legs.append(_leg({**template, **entry}, where, home))
    pf = Platform(name, m_C, I_C, legs, gravity, tuple(float(x) for x in home), source, defaults)
    validate_platform(pf)
    unknown = set(defaults) - {s.name for s in pf.parameters}
    if unknown:
        raise ModelError(f"{source}: parameters: {sorted(unknown)} not used by the mechanism")
    return pf


def is_parallel_spec(path: Path) -> bool:
    """Whether a spec file describes a parallel mechanism (without building it)."""
    try:
        return is_parallel(tomllib.loads(Path(path).read_text()))
    except (OSError, tomllib.TOMLDecodeError):
        return False


def is_parallel(data: dict) -> bool:
    mech = data.get("mechanism") if isinstance(data, dict) else None
    return isinstance(mech, dict) and mech.get("family") == "parallel"
