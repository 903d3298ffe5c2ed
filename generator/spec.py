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
    gravity = [0, 0, -9.81] # frame 0; numbers or parameter names

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

Any number may be replaced by a parameter name: it becomes an element of the kernel input ``p``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.model import (AXES, COMPOSITE_AXES, MAX_MAGNITUDE, Body, Chain, Joint,
                                     ModelError, Point, as_expr, check_name, free_base_joints,
                                     identity3, inertia_about_origin, rotation_from_sequence,
                                     split_composite, finite_number, ATTITUDES)

JOINT_TYPES = ("Rx", "Ry", "Rz", "Px", "Py", "Pz", "U", "S", "C")


def _vec3(value: Any, where: str) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise ModelError(f"{where}: expected a list of 3 numbers or parameter names, got {value!r}")
    return tuple(as_expr(x, f"{where}[{i}]") for i, x in enumerate(value))


def _inertia(value: Any, where: str) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 6:
        raise ModelError(f"{where}: expected 6 numbers [Ixx, Iyy, Izz, Ixy, Ixz, Iyz], "
                         f"got {value!r}")
    xx, yy, zz, xy, xz, yz = (as_expr(x, f"{where}[{i}]") for i, x in enumerate(value))
    for v, nm in ((xx, "Ixx"), (yy, "Iyy"), (zz, "Izz")):
        if v.is_number and v < 0:
            raise ModelError(f"{where}: {nm} = {v} is negative")
    I = ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
    if all(v.is_number for row in I for v in row):
        try:
            p = num.symmetric_eigenvalues(num.mat([[float(v) for v in row] for row in I]))
        except (ArithmeticError, RuntimeError, ValueError) as e:
            raise ModelError(f"{where}: the principal moments cannot be computed ({e})") from None
        tol = 1e-12 * max(1.0, max(abs(x) for x in p))
        if p[0] < -tol:
            raise ModelError(f"{where}: the inertia tensor is not positive semi-definite "
                             f"(principal moments {list(p)})")
        if p[0] + p[1] < p[2] - tol:
            raise ModelError(f"{where}: principal moments {list(p)} violate the triangle "
                             f"inequality (I1 + I2 >= I3)")
    return I


def _rotation(value: Any, where: str) -> tuple:
    """gamma as [[axis, angle], ...] (degrees / parameter in radians) or a 3x3 matrix."""
    if value is None:
        return identity3()
    if not isinstance(value, (list, tuple)):
        raise ModelError(f"{where}: expected a list of [axis, angle] pairs or a 3x3 matrix")
    if len(value) == 3 and all(isinstance(r, (list, tuple)) and len(r) == 3 for r in value):
        M = tuple(tuple(as_expr(x, f"{where}[{i}][{j}]") for j, x in enumerate(r))
                  for i, r in enumerate(value))
        if all(x.is_number for row in M for x in row):
            A = num.mat([[float(x) for x in row] for row in M])
            AAt = num.matmul(A, num.transpose(A))
            if max(abs(AAt[i][j] - (i == j)) for i in range(3) for j in range(3)) > 1e-9 \
                    or num.determinant(A) < 0:
                raise ModelError(f"{where}: the 3x3 matrix is not a proper rotation "
                                 f"(orthonormal rows, determinant +1)")
        return M
    seq = []
    for i, pair in enumerate(value):
        w = f"{where}[{i}]"
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                and isinstance(pair[0], str) and pair[0] in ("x", "y", "z")):
            raise ModelError(f"{w}: expected [axis, angle] with axis 'x', 'y' or 'z', got {pair!r}")
        angle = pair[1]
        if isinstance(angle, (int, float)) and not isinstance(angle, bool):
            a = as_expr(angle, w)
            rad = sp.pi * a / 180
        else:
            rad = as_expr(angle, w)
        seq.append((AXES.index(pair[0]), rad))
    try:
        return rotation_from_sequence(seq)
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None


def _keys(table: Any, allowed: set[str], where: str, required: set[str] = frozenset()) -> dict:
    if not isinstance(table, dict):
        raise ModelError(f"{where}: expected a table, got {table!r}")
    unknown = set(table) - allowed
    if unknown:
        raise ModelError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    missing = required - set(table)
    if missing:
        raise ModelError(f"{where}: missing field(s) {sorted(missing)}")
    return table


def _body(table: Any, where: str, default_name: str) -> Body:
    t = _keys(table, {"name", "mass", "com", "inertia"}, where)
    name = check_name(t.get("name", default_name), f"{where}.name")
    m = as_expr(t.get("mass", 0), f"{where}.mass")
    if m.is_number and m < 0:
        raise ModelError(f"{where}.mass: {m} is negative")
    d = _vec3(t.get("com", [0, 0, 0]), f"{where}.com")
    I_com = _inertia(t.get("inertia", [0] * 6), f"{where}.inertia")
    I = inertia_about_origin(m, d, I_com)
    if any(x.is_number and abs(x) > MAX_MAGNITUDE ** 2 for x in (*I[0], *I[1], *I[2])):
        raise ModelError(f"{where}: the inertia about the body origin (I + m |d|^2) exceeds "
                         f"{MAX_MAGNITUDE ** 2:g}: mass and centre of mass too large")
    return Body(name, m, d, I)


class ChainBuilder:
    """Python API: ``ChainBuilder("arm").joint("j1", "Rz", body=...)...build()``."""

    def __init__(self, name: str, base: str = "fixed", gravity=(0, 0, 0),
                 base_body: dict | None = None, source: str = "<python>",
                 parameters: dict[str, float] | None = None, attitude: str = "euler") -> None:
        self.source = source
        self.defaults: dict[str, float] = {}
        for k, v in (parameters or {}).items():
            self.parameter(k, v)
        self.name = check_name(name, f"{source}: mechanism.name")
        if base not in ("fixed", "free"):
            raise ModelError(f"{source}: mechanism.base: expected 'fixed' or 'free', got {base!r}")
        self.base = base
        if attitude not in ATTITUDES or (attitude == "quaternion" and base != "free"):
            raise ModelError(f"{source}: mechanism.attitude: expected one of {ATTITUDES} (the "
                             f"quaternion only with base = 'free'), got {attitude!r}")
        self.attitude = attitude
        self.gravity = _vec3(gravity, f"{source}: mechanism.gravity")
        self.joints: list[Joint] = []
        self.bodies: list[Body] = []
        self.parent: list[int] = []
        self.named: list[tuple[str, int]] = []
        self.points: list[Point] = []
        if base == "free":
            if base_body is None:
                raise ModelError(f"{source}: base = 'free' needs a [base] table (the spacecraft)")
            sc = _body(base_body, f"{source}: base", "base")
            for j, b in free_base_joints(sc, attitude):
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
        lv = _vec3(l, f"{where}.l")
        g = _rotation(gamma, f"{where}.gamma")
        b = _body(body if body is not None else {}, f"{where}.body", f"{name}_body")
        sp_t = _keys(spring or {}, {"stiffness", "damping", "q0"}, f"{where}.spring")
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
        self.points.append(Point(name, idx, _vec3(offset, f"{where}.offset")))
        return self

    def build(self) -> Chain:
        chain = Chain(self.name, self.joints, self.bodies, self.gravity, self.base,
                      self.named, self.points, self.source, self.parent, dict(self.defaults),
                      self.attitude)
        chain.validate()
        return chain


def chain_from_dict(data: dict, source: str) -> Chain:
    top = _keys(data, {"mechanism", "base", "joints", "points", "parameters"}, source,
                {"mechanism", "joints"})
    mech = _keys(top["mechanism"], {"name", "family", "base", "attitude", "gravity",
                                    "description"},
                 f"{source}: mechanism", {"name"})
    if mech.get("family", "serial") != "serial":
        raise ModelError(f"{source}: mechanism.family: expected 'serial' or 'parallel', "
                         f"got {mech['family']!r}")
    params = top.get("parameters", {})
    if not isinstance(params, dict):
        raise ModelError(f"{source}: parameters: expected a table of name = default value")
    b = ChainBuilder(mech["name"], mech.get("base", "fixed"), mech.get("gravity", [0, 0, 0]),
                     top.get("base"), source, params, mech.get("attitude", "euler"))
    joints = top["joints"]
    if not isinstance(joints, list) or not joints:
        raise ModelError(f"{source}: joints: expected a non-empty array of tables [[joints]]")
    for i, jt in enumerate(joints):
        where = f"{source}: joints[{i}]"
        t = _keys(jt, {"name", "type", "axes", "l", "gamma", "spring", "body", "parent"}, where,
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
        t = _keys(pt, {"name", "body", "offset"}, where, {"name", "body"})
        b.point(t["name"], t["body"], t.get("offset", [0, 0, 0]), where=where)
    return b.build()


URDF_KEYS = {"name", "family", "urdf", "base", "attitude", "gravity", "description", "frames",
             "snap", "mimic", "inertia"}


def chain_from_urdf_spec(data: dict, path: Path) -> Chain:
    """A spec that points at a URDF file (a path relative to the spec)::

        [mechanism]
        name = "panda"
        urdf = "urdf/panda.urdf"
        base = "fixed"                 # or "free"
        gravity = [0, 0, -9.81]
        frames = ["panda_hand_tcp"]    # more links for forward kinematics and Jacobians
        snap = 1e-12                   # rpy angles this close to k*90 deg are exact; 0: off
        mimic = "lock"                 # or "independent": a <mimic> joint gets its coordinate
        inertia = "strict"             # or "repair": see below

        [lock]                         # joints held at a value (their links merge)
        panda_finger_joint1 = 0.0

    ``inertia``: an ``<inertia>`` that is not positive semi-definite (its smallest principal
    moment below -1e-12 relative to the largest) is refused with ``"strict"`` (the default).
    Exported URDFs sometimes carry such rounding errors (TIAGo's 1 mg antenna links: -3.5e-8
    kg m^2); ``"repair"`` then sets the negative principal moments to 0 (eigen-decomposition,
    rebuilt from the same principal axes) and warns (``InertiaRepairWarning``) naming each
    repaired link. A ``<mimic>`` on a fixed joint is ignored (nothing moves).
    """
    source = path.name
    top = _keys(data, {"mechanism", "lock"}, source, {"mechanism"})
    mech = _keys(top["mechanism"], URDF_KEYS, f"{source}: mechanism", {"name", "urdf"})
    name = check_name(mech["name"], f"{source}: mechanism.name")
    if not isinstance(mech["urdf"], str):
        raise ModelError(f"{source}: mechanism.urdf: expected a file path, got {mech['urdf']!r}")
    gravity = mech.get("gravity", [0, 0, -9.81])
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
    from mechgen.generator.urdf import load_urdf
    attitude = mech.get("attitude", "euler")
    if attitude not in ATTITUDES:
        raise ModelError(f"{source}: mechanism.attitude: expected one of {ATTITUDES}, got "
                         f"{attitude!r}")
    return load_urdf(path.parent / mech["urdf"], name, mech.get("base", "fixed"), gravity, lock,
                     frames, float(snap), source, mimic == "independent", inertia, attitude)


def load(path: str | Path):
    """A spec file -> a Chain (serial, a tree from a URDF) or a Platform (``family =
    "parallel"``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelError(f"{path}: cannot read the spec: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ModelError(f"{path}: not UTF-8 text (TOML is UTF-8): byte {e.object[e.start]:#04x} "
                         f"at offset {e.start}") from None
    except ValueError as e:   # a NUL byte in the path
        raise ModelError(f"{path!r}: cannot read the spec: {e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ModelError(f"{path}: not valid TOML: {e}") from None
    from mechgen.generator.platform_spec import is_parallel, platform_from_dict
    if is_parallel(data):
        return platform_from_dict(data, path.name)
    if isinstance(data.get("mechanism"), dict) and "urdf" in data["mechanism"]:
        return chain_from_urdf_spec(data, path)
    return chain_from_dict(data, path.name)
