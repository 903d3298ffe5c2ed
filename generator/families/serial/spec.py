"""Spec file (TOML) and Python API -> :class:`generator.model.Chain`.

Both paths go through :class:`ChainBuilder`, so a spec file and a Python script describing the
same mechanism build the same model. Every error names the file and the field, e.g.
``ur6.toml: joints[2].body.inertia: expected 6 numbers [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]``.

Format (see ``generator/mechanisms/*.toml``)::

    [mechanism]
    name = "arm"            # identifier: names the files and the C functions mechgen_<name>_<kernel>
    base = "fixed"          # or "free": a free-flying base body given in [base]
    attitude = "euler"      # free base: "euler" (y-z-x angles, singular at psi_z = +-90 deg) or
                            # "quaternion" (q: x, y, z, qw, qx, qy, qz; qd: v frame 0, omega body)
    base_velocity = "frame0" # quaternion base: "frame0" (qd: v in frame 0, omega body) or
                            # "body" (qd: the body twist v_body, omega_body, both in the base
                            # frame, linear first: Pinocchio's free flyer; q as above, but
                            # Pinocchio stores the quaternion x, y, z, w)
    gravity = [0, 0, -9.81] # frame 0; numbers or parameter names
    regressor = false       # true: also the inertial-parameter regressor kernels (regressor.py)

    [base]                  # only with base = "free": the spacecraft
    name = "spacecraft"
    mass = 800.0
    com = [0, 0, 0]
    inertia = [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]   # about the centre of mass

    [[joints]]
    name = "shoulder"       # also the name of its coordinate(s)
    type = "Rz"             # Rx Ry Rz Px Py Pz, or composite U, S, C
    axes = "yz"             # U: two axes, S: three, C: one (default yz, xyz, x)
    l = [0, 0, 0.1]         # joint frame origin in the parent body frame
    gamma = [["x", 90]]     # elementary rotations: degrees, or a parameter name (radians);
                            # or a 3x3 matrix (rows): parent body frame -> joint frame
    spring = { stiffness = 0, damping = 0.5, q0 = 0 }   # passive law, optional
    body = { name = "link1", mass = 2.0, com = [0, 0, 0.2], inertia = [...] }
    parent = "torso"        # optional: the body it hangs on (default: the previous joint's
                            # body; "ground" is the fixed frame): several joints on one
                            # parent make a kinematic tree

    [[points]]
    name = "tool"
    body = "link6"
    offset = [0, 0, 0.1]

    [parameters]            # default values of the parameter names used above (optional;
    m_payload = 100.0       # a kernel called without p uses them)

    [kernels]               # optional kernels (default: none)
    derivatives = true      # inverse_dynamics_derivatives, forward_dynamics_derivatives
                            # ("tangent": a quaternion base's q columns along Pinocchio's
                            # tangent space, model.DERIVATIVES)
    regressor = true        # regressor, base_regressor, base_inverse_dynamics,
                            # base_parameters (docs/regressor.md)

Any number may be replaced by a parameter name: it becomes an element of the kernel input ``p``.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import sympy as sp

from mechgen.generator import fields
from mechgen.generator.model import (AXES, COMPOSITE_AXES, Body, Chain, Joint,
                                     ModelError, Point, as_expr, check_name, finite_number,
                                     free_base_joints, split_composite)
from mechgen.generator.families.serial.urdf import load_urdf

JOINT_TYPES = ("Rx", "Ry", "Rz", "Px", "Py", "Pz", "U", "S", "C")


class ChainBuilder:
    """Python API: ``ChainBuilder("arm").joint("j1", "Rz", body=...)...build()``."""

    def __init__(self, name: str, base: str = "fixed", gravity=fields.GRAVITY_DEFAULT,
                 base_body: dict | None = None, source: str = "<python>",
                 parameters: dict[str, float] | None = None, attitude: str = "euler",
                 derivatives: bool | str = False, base_velocity: str = "frame0") -> None:
        self.source = source
        self.derivatives = derivatives
        self.defaults: dict[str, float] = {}
        for k, v in (parameters or {}).items():
            self.parameter(k, v)
        self.name = check_name(name, f"{source}: mechanism.name")
        if base not in ("fixed", "free"):
            raise ModelError(f"{source}: mechanism.base: expected 'fixed' or 'free', got {base!r}")
        self.base = base
        self.attitude = attitude        # checked by Chain.validate
        self.base_velocity = base_velocity   # likewise
        self.gravity = fields.vec3(gravity, f"{source}: mechanism.gravity")
        self.joints: list[Joint] = []
        self.bodies: list[Body] = []
        self.parent: list[int] = []
        self.named: list[tuple[str, int]] = []
        self.points: list[Point] = []
        if base == "free":
            if base_body is None:
                raise ModelError(f"{source}: base = 'free' needs a [base] table (the spacecraft)")
            sc = fields.body(base_body, f"{source}: base", "base")
            for j, b in free_base_joints(sc, attitude, base_velocity):
                self._append(j, b)
            self.named.append((sc.name, len(self.bodies)))
        elif base_body is not None:
            raise ModelError(f"{source}: [base] is only for base = 'free'")

    def _append(self, joint: Joint, body: Body, parent: int | None = None) -> None:
        self.parent.append(len(self.bodies) if parent is None else parent)
        self.joints.append(joint)
        self.bodies.append(body)

    def _parent_index(self, parent: str | None, where: str) -> int | None:
        """A declared body's number; "ground" is the fixed frame; None: the last body."""
        if parent is None:
            return None
        if not isinstance(parent, str):
            raise ModelError(f"{where}.parent: expected a body name, got {parent!r}")
        idx = dict(self.named).get(parent)
        if idx is None and parent == "ground" and self.base == "fixed":
            return 0
        if idx is None:
            raise ModelError(f"{where}.parent: no body named {parent!r} before this joint; "
                             f"bodies: {[n for n, _ in self.named]}"
                             + (" (or 'ground', the fixed frame)" if self.base == "fixed" else ""))
        return idx

    def joint(self, name: str, type: str, l=(0, 0, 0), gamma=None, axes: str | None = None,
              body: dict | None = None, spring: dict | None = None,
              where: str | None = None, parent: str | None = None) -> "ChainBuilder":
        """Joint and the body it carries, hung on body ``parent`` (default: the last body, so
        a chain; naming an earlier body makes a tree)."""
        where = where or f"{self.source}: joint {name!r}"
        name = check_name(name, f"{where}.name")
        p = self._parent_index(parent, where)
        if type not in JOINT_TYPES:
            raise ModelError(f"{where}.type: unknown joint type {type!r}; "
                             f"expected one of {', '.join(JOINT_TYPES)}")
        lv = fields.vec3(l, f"{where}.l")
        g = fields.rotation(gamma, f"{where}.gamma")
        b = fields.body(body if body is not None else {}, f"{where}.body", f"{name}_body")
        sp_t = fields.keys(spring or {}, {"stiffness", "damping", "q0"}, f"{where}.spring")
        law = {k: as_expr(sp_t.get(k, 0), f"{where}.spring.{k}")
               for k in ("stiffness", "damping", "q0")}
        if type in COMPOSITE_AXES:
            ax = axes if axes is not None else COMPOSITE_AXES[type]
            need = {"U": 2, "S": 3, "C": 1}[type]
            if not (isinstance(ax, str) and len(ax) == need and all(a in AXES for a in ax)):
                raise ModelError(f"{where}.axes: joint {type} needs {need} of 'x', 'y', 'z', "
                                 f"got {ax!r}")
            if need > 1 and any(ax[i] == ax[i + 1] for i in range(need - 1)):
                raise ModelError(f"{where}.axes: consecutive axes must differ, got {ax!r}")
            parts = split_composite(type, ax, name, lv, g, b)
            for i, (j, bb) in enumerate(parts):
                self._append(Joint(j.name, j.kind, j.axis, j.l, j.gamma, **law), bb,
                             p if i == 0 else None)
        else:
            if axes is not None:
                raise ModelError(f"{where}.axes: only for composite joints U, S, C")
            self._append(Joint(name, type[0], AXES.index(type[1]), lv, g, **law), b, p)
        self.named.append((b.name, len(self.bodies)))
        return self

    def parameter(self, name: str, default: float) -> "ChainBuilder":
        """The default value of a named parameter (used when a kernel is called without p)."""
        where = f"{self.source}: parameters.{name}"
        check_name(name, where)
        self.defaults[name] = finite_number(default, where)
        return self

    def point(self, name: str, body: str, offset=(0, 0, 0), where: str | None = None) -> "ChainBuilder":
        where = where or f"{self.source}: point {name!r}"
        name = check_name(name, f"{where}.name")
        if not isinstance(body, str):
            raise ModelError(f"{where}.body: expected a body name, got {body!r}")
        idx = dict(self.named).get(body)
        if idx is None:
            raise ModelError(f"{where}.body: no body named {body!r}; bodies: "
                             f"{[n for n, _ in self.named]}")
        self.points.append(Point(name, idx, fields.vec3(offset, f"{where}.offset")))
        return self

    def build(self) -> Chain:
        chain = Chain(self.name, self.joints, self.bodies, self.gravity, self.base,
                      self.named, self.points, self.source, self.parent, dict(self.defaults),
                      self.attitude, self.derivatives, base_velocity=self.base_velocity)
        chain.validate()
        return chain


OPTIONAL_KERNELS = ("derivatives", "regressor")


def optional_kernels(top: dict, source: str) -> dict[str, bool | str]:
    """``[kernels] derivatives = true|false|"tangent", regressor = true|false``: which optional
    kernels to generate (both false by default; "tangent": model.DERIVATIVES)."""
    table = top.get("kernels", {})
    if not isinstance(table, dict):
        raise ModelError(f"{source}: kernels: expected a table [kernels], got {table!r}")
    table = fields.keys(table, set(OPTIONAL_KERNELS), f"{source}: kernels")
    out = {}
    for key in OPTIONAL_KERNELS:
        value = table.get(key, False)
        if key == "derivatives" and value == "tangent":
            out[key] = value
        elif not isinstance(value, bool):
            also = ' or "tangent" (model.DERIVATIVES)' if key == "derivatives" else ""
            raise ModelError(f"{source}: kernels.{key}: expected true or false{also}, "
                             f"got {value!r}")
        else:
            out[key] = value
    return out


def chain_from_dict(data: dict, source: str) -> Chain:
    top = fields.keys(data, {"mechanism", "base", "joints", "points", "parameters", "kernels"},
                      source, {"mechanism", "joints"})
    mech = fields.keys(top["mechanism"], {"name", "family", "base", "attitude", "gravity",
                                    "description", "base_velocity"},
                 f"{source}: mechanism", {"name"})
    if mech.get("family", "serial") != "serial":
        raise ModelError(f"{source}: mechanism.family: expected 'serial' or 'parallel', "
                         f"got {mech['family']!r}")
    params = top.get("parameters", {})
    if not isinstance(params, dict):
        raise ModelError(f"{source}: parameters: expected a table of name = default value")
    optional = optional_kernels(top, source)
    b = ChainBuilder(mech["name"], mech.get("base", "fixed"),
                     mech.get("gravity", list(fields.GRAVITY_DEFAULT)),
                     top.get("base"), source, params, mech.get("attitude", "euler"),
                     optional["derivatives"], mech.get("base_velocity", "frame0"))
    joints = top["joints"]
    if not isinstance(joints, list) or not joints:
        raise ModelError(f"{source}: joints: expected a non-empty array of tables [[joints]]")
    for i, jt in enumerate(joints):
        where = f"{source}: joints[{i}]"
        t = fields.keys(jt, {"name", "type", "axes", "l", "gamma", "spring", "body", "parent"}, where,
                  {"name", "type"})
        if "parent" in t and not isinstance(t["parent"], str):
            raise ModelError(f"{where}.parent: expected a body name, got {t['parent']!r}")
        b.joint(t["name"], t["type"], t.get("l", [0, 0, 0]), t.get("gamma"), t.get("axes"),
                t.get("body"), t.get("spring"), where=where, parent=t.get("parent"))
    points = top.get("points", [])
    if not isinstance(points, list):
        raise ModelError(f"{source}: points: expected an array of tables [[points]], "
                         f"got {points!r}")
    for i, pt in enumerate(points):
        where = f"{source}: points[{i}]"
        t = fields.keys(pt, {"name", "body", "offset"}, where, {"name", "body"})
        b.point(t["name"], t["body"], t.get("offset", [0, 0, 0]), where=where)
    return replace(b.build(), regressor=optional["regressor"])


URDF_KEYS = {"name", "family", "urdf", "base", "attitude", "base_velocity", "gravity",
             "description", "frames", "snap", "mimic", "inertia"}


def chain_from_urdf_spec(data: dict, path: Path) -> Chain:
    """A spec that points at a URDF file (a path relative to the spec)::

        [mechanism]
        name = "panda"
        urdf = "urdf/panda.urdf"
        base = "fixed"                 # or "free"
        attitude = "euler"             # free base: or "quaternion" (see chain_from_dict)
        base_velocity = "frame0"       # quaternion base: or "body" (see chain_from_dict)
        gravity = [0, 0, -9.81]        # frame 0 (default 0, as in every spec)
        frames = ["panda_hand_tcp"]    # more links for forward kinematics and Jacobians
        snap = 1e-12                   # rpy angles this close to k*90 deg are exact; 0: off
        mimic = "lock"                 # or "independent": a <mimic> joint gets its coordinate
        inertia = "strict"             # or "repair": see below

        [lock]                         # joints held at a value (their links merge)
        panda_finger_joint1 = 0.0

        [kernels]                      # optional kernels, as in every serial spec
        derivatives = true
        regressor = true

    ``inertia``: an ``<inertia>`` that is not positive semi-definite (its smallest principal
    moment below -1e-12 relative to the largest) is refused with ``"strict"`` (the default).
    Exported URDFs sometimes carry such rounding errors (TIAGo's 1 mg antenna links: -3.5e-8
    kg m^2); ``"repair"`` then sets the negative principal moments to 0 (eigen-decomposition,
    rebuilt from the same principal axes) and warns (``InertiaRepairWarning``) naming each
    repaired link. A ``<mimic>`` on a fixed joint is ignored (nothing moves).
    """
    source = path.name
    top = fields.keys(data, {"mechanism", "lock", "kernels"}, source, {"mechanism"})
    optional = optional_kernels(top, source)
    mech = fields.keys(top["mechanism"], URDF_KEYS, f"{source}: mechanism", {"name", "urdf"})
    name = check_name(mech["name"], f"{source}: mechanism.name")
    if not isinstance(mech["urdf"], str):
        raise ModelError(f"{source}: mechanism.urdf: expected a file path, got {mech['urdf']!r}")
    gravity = mech.get("gravity", list(fields.GRAVITY_DEFAULT))
    if not (isinstance(gravity, list) and len(gravity) == 3 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in gravity)):
        raise ModelError(f"{source}: mechanism.gravity: expected 3 numbers, got {gravity!r}")
    frames = mech.get("frames", [])
    if not (isinstance(frames, list) and all(isinstance(f, str) for f in frames)):
        raise ModelError(f"{source}: mechanism.frames: expected a list of link names")
    snap = mech.get("snap", 1e-12)
    if not isinstance(snap, (int, float)) or isinstance(snap, bool) or not 0 <= snap < 0.1:
        raise ModelError(f"{source}: mechanism.snap: expected a number of radians in [0, 0.1)")
    lock = top.get("lock", {})
    if not isinstance(lock, dict):
        raise ModelError(f"{source}: lock: expected a table of joint = value")
    mimic = mech.get("mimic", "lock")
    if mimic not in ("lock", "independent"):
        raise ModelError(f"{source}: mechanism.mimic: expected 'lock' or 'independent', "
                         f"got {mimic!r}")
    inertia = mech.get("inertia", "strict")
    if inertia not in ("strict", "repair"):
        raise ModelError(f"{source}: mechanism.inertia: expected 'strict' or 'repair', "
                         f"got {inertia!r}")
    attitude = mech.get("attitude", "euler")     # checked by Chain.validate
    base_velocity = mech.get("base_velocity", "frame0")     # likewise
    chain = load_urdf(path.parent / mech["urdf"], name, mech.get("base", "fixed"), gravity, lock,
                      frames, float(snap), source, mimic == "independent", inertia, attitude,
                      base_velocity)
    return replace(chain, **optional)
