"""URDF -> :class:`generator.model.Chain` (a serial chain or a kinematic tree).

What is read (the subset of URDF that describes rigid-body dynamics):

* ``<link>``: ``<inertial>`` with ``<origin xyz rpy>``, ``<mass value>``,
  ``<inertia ixx ixy ixz iyy iyz izz>`` (about the centre of mass, in the inertial frame).
* ``<joint>`` of type ``revolute``, ``continuous`` (both revolute here), ``prismatic`` and
  ``fixed``, with ``<parent link>``, ``<child link>``, ``<origin xyz rpy>`` and ``<axis xyz>``
  (default 1 0 0). ``<limit>``, ``<dynamics>``, ``<safety_controller>``, visual and collision
  geometry are ignored.

How it maps onto the model (ALGORITHMS.md section 1 conventions):

* A URDF child frame C sits at ``x_parent = R_o Rot_a(q) x_C + xyz`` (R_o from rpy = Rz Ry Rx).
  Our body frame B is C turned by a constant rotation P with ``P a = e_k`` (k = x, y or z), so
  the joint rotates B about one of its own axes: ``gamma = P R_o^T P_p^T`` and
  ``l = P_p xyz + o_p`` in the parent body frame ``x_Bp = P_p x_parent + o_p``.
* A fixed joint (and a joint locked at a value) merges the child link into its parent's body:
  its inertia is carried into that body's frame and its children hang from that body.
* Bodies are numbered depth first from the root link, children in file order, so a parent's
  number is always below its children's.
* ``base = "fixed"``: the root link is the fixed frame (its inertia does nothing).
  ``base = "free"``: the root link is a free-flying body after three slides (x, y, z of frame 0)
  and three rotations (y, z, x), as the spacecraft of a space manipulator.
* Forward kinematics reports every moving link (and the free root) in its own URDF frame; more
  links (fixed ones, such as a tool centre) can be asked for with ``frames``.

Angles of ``rpy`` within ``snap`` radians (default 1e-12) of a multiple of 90 degrees are taken
as exact (``1.5707963267948966`` or ``1.5707963267949`` mean pi/2), so zeros and ones of the
geometry prune away while the model moves by less than 1e-12; ``snap = 0`` keeps every angle as
written. Fewer digits (UR5's ``1.57079632679``, 4.9e-12 short) are kept as written unless a
larger ``snap`` is asked for; they cost a little (UR5 mass matrix 247 operations, not 207). What URDF cannot express here is refused with the element named:
``planar`` and ``floating`` joints, ``<mimic>`` joints (lock them, or read them as independent
joints), closed loops (a link with two parents), several roots.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy as sp

from generator.model import (RESERVED, Body, Chain, Joint, ModelError, Point, check_name,
                             fictitious_body, free_base_joints)

MOVING = {"revolute": "R", "continuous": "R", "prismatic": "P"}
REFUSED = {"planar": "a planar joint (2 slides and a rotation) is not supported",
           "floating": "a floating joint inside the tree is not supported; set base = 'free' "
                       "for a free-flying root"}


@dataclass
class UrdfJoint:
    name: str
    type: str
    parent: str
    child: str
    xyz: np.ndarray
    R_o: np.ndarray
    axis: np.ndarray
    where: str
    mimic: bool = False


@dataclass
class UrdfLink:
    name: str
    m: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    R_in: np.ndarray = field(default_factory=lambda: np.eye(3))
    I_com: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class _Acc:
    """Mass, first moment and inertia about the body origin, summed over merged links."""

    name: str
    m: float = 0.0
    c: np.ndarray = field(default_factory=lambda: np.zeros(3))
    I: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


# --- reading the XML ---------------------------------------------------------------------

def _floats(el: ET.Element | None, attr: str, n: int, default: list[float] | None,
            where: str) -> np.ndarray:
    if el is None or el.get(attr) is None:
        if default is None:
            raise ModelError(f"{where}: missing attribute {attr!r}")
        return np.array(default, dtype=float)
    text = el.get(attr)
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        raise ModelError(f"{where}: attribute {attr}={text!r} is not a list of numbers") from None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise ModelError(f"{where}: attribute {attr}={text!r}: expected {n} finite numbers")
    return np.array(vals)


def _exact_cs(angle: float, snap: float) -> tuple[float, float]:
    """cos, sin; exactly 0 or +-1 when the angle is within ``snap`` of a multiple of 90 deg."""
    k = round(angle / (math.pi / 2))
    if snap > 0 and abs(angle - k * math.pi / 2) <= snap:
        return [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][k % 4]
    return math.cos(angle), math.sin(angle)


def rot(axis: int, c: float, s: float) -> np.ndarray:
    """Active rotation about x, y or z (maps frame-C coordinates to the parent's)."""
    R = np.eye(3)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def rpy_matrix(rpy: np.ndarray, snap: float) -> np.ndarray:
    """URDF fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return (rot(2, *_exact_cs(rpy[2], snap)) @ rot(1, *_exact_cs(rpy[1], snap))
            @ rot(0, *_exact_cs(rpy[0], snap)))


def _origin(el: ET.Element, where: str, snap: float) -> tuple[np.ndarray, np.ndarray]:
    o = el.find("origin")
    xyz = _floats(o, "xyz", 3, [0, 0, 0], f"{where}<origin>")
    rpy = _floats(o, "rpy", 3, [0, 0, 0], f"{where}<origin>")
    return xyz, rpy_matrix(rpy, snap)


def _link(el: ET.Element, where: str, snap: float) -> UrdfLink:
    link = UrdfLink(el.get("name"))
    inertial = el.find("inertial")
    if inertial is None:
        return link
    w = f"{where}<inertial>"
    link.com, link.R_in = _origin(inertial, w, snap)
    mass = inertial.find("mass")
    if mass is None:
        raise ModelError(f"{w}: missing <mass value=...>")
    link.m = float(_floats(mass, "value", 1, None, f"{w}<mass>")[0])
    if link.m < 0:
        raise ModelError(f"{w}<mass>: attribute value={link.m} is negative")
    ine = inertial.find("inertia")
    if ine is None:
        raise ModelError(f"{w}: missing <inertia ixx=... iyy=... izz=...>")
    v = {k: float(_floats(ine, k, 1, [0.0], f"{w}<inertia>")[0])
         for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    I = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                  [v["ixz"], v["iyz"], v["izz"]]])
    ev = np.linalg.eigvalsh(I)
    if ev[0] < -1e-12 * max(1.0, abs(ev).max()):
        raise ModelError(f"{w}<inertia>: not positive semi-definite (principal moments "
                         f"{ev.tolist()})")
    link.I_com = I
    return link


def _joint(el: ET.Element, where: str, snap: float) -> UrdfJoint:
    jtype = el.get("type")
    if jtype in REFUSED:
        raise ModelError(f"{where}: attribute type={jtype!r}: {REFUSED[jtype]}")
    if jtype not in MOVING and jtype != "fixed":
        raise ModelError(f"{where}: attribute type={jtype!r} is unknown; expected revolute, "
                         f"continuous, prismatic or fixed")
    ends = {}
    for tag in ("parent", "child"):
        e = el.find(tag)
        if e is None or not e.get("link"):
            raise ModelError(f"{where}: missing <{tag} link=...>")
        ends[tag] = e.get("link")
    xyz, R_o = _origin(el, where, snap)
    axis = _floats(el.find("axis"), "xyz", 3, [1, 0, 0], f"{where}<axis>")
    norm = float(np.linalg.norm(axis))
    if jtype in MOVING and norm < 1e-9:
        raise ModelError(f"{where}<axis>: attribute xyz is the zero vector")
    return UrdfJoint(el.get("name"), jtype, ends["parent"], ends["child"], xyz, R_o,
                     axis / norm if norm else axis, where, el.find("mimic") is not None)


def read(path: Path, snap: float = 1e-12) -> tuple[str, dict[str, UrdfLink], list[UrdfJoint]]:
    """Robot name, links by name, joints in file order; every element checked."""
    try:
        root = ET.parse(path).getroot()
    except OSError as e:
        raise ModelError(f"{path}: cannot read the URDF: {e.strerror}") from None
    except ET.ParseError as e:
        raise ModelError(f"{path}: not valid XML: {e}") from None
    if root.tag != "robot":
        raise ModelError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    links: dict[str, UrdfLink] = {}
    for i, el in enumerate(root.findall("link")):
        name = el.get("name")
        where = f"{path.name}: <link name={name!r}>"
        if not name:
            raise ModelError(f"{path.name}: link #{i + 1}: missing attribute 'name'")
        if name in links:
            raise ModelError(f"{where}: a second link with this name")
        links[name] = _link(el, where, snap)
    joints = []
    for i, el in enumerate(root.findall("joint")):
        name = el.get("name")
        if not name:
            raise ModelError(f"{path.name}: joint #{i + 1}: missing attribute 'name'")
        jt = _joint(el, f"{path.name}: <joint name={name!r}>", snap)
        for end in (jt.parent, jt.child):
            if end not in links:
                raise ModelError(f"{jt.where}: no link named {end!r}")
        if any(j.name == name for j in joints):
            raise ModelError(f"{jt.where}: a second joint with this name")
        joints.append(jt)
    if not links:
        raise ModelError(f"{path.name}: the URDF has no <link>")
    return root.get("name") or path.stem, links, joints


# --- the tree ----------------------------------------------------------------------------

def _root(path: Path, links: dict[str, UrdfLink], joints: list[UrdfJoint]) -> str:
    parent_of: dict[str, UrdfJoint] = {}
    for jt in joints:
        if jt.child in parent_of:
            raise ModelError(f"{jt.where}: link {jt.child!r} already has the parent joint "
                             f"{parent_of[jt.child].name!r}: a closed loop, which URDF cannot "
                             f"describe as a tree")
        parent_of[jt.child] = jt
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        raise ModelError(f"{path.name}: expected one root link (a link that is no joint's "
                         f"child), found {roots or 'none (the joints form a cycle)'}")
    return roots[0]


def align_axis(a: np.ndarray) -> tuple[np.ndarray, int]:
    """A constant rotation P and k with P a = e_k: the identity for +e_k, a half turn for
    -e_k, otherwise the smallest rotation onto the nearest coordinate axis."""
    k = int(np.argmax(np.abs(a)))
    e = np.eye(3)[k]
    if np.array_equal(a, e):
        return np.eye(3), k
    if np.array_equal(a, -e):
        return rot((k + 1) % 3, -1.0, 0.0), k
    v = np.cross(a, e)
    s, c = float(np.linalg.norm(v)), float(a @ e)
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]) / s
    return np.eye(3) + s * K + (1 - c) * K @ K, k


def identifier(name: str, taken: set[str]) -> str:
    """A URDF name as an identifier of the generated code: other characters become '_'."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not ident[:1].isalpha():
        ident = "L" + ident
    ident = ident[:60]
    if ident in RESERVED:
        ident += "_"
    base, k = ident, 1
    while ident in taken:
        k += 1
        ident = f"{base}_{k}"
    taken.add(ident)
    return check_name(ident, f"URDF name {name!r}")


def _num(x: float) -> sp.Expr:
    x = float(x)
    if x == int(x) and abs(x) < 2 ** 52:
        return sp.Integer(int(x))
    return sp.Rational(repr(x))


def _vec(v: np.ndarray) -> tuple:
    return tuple(_num(x) for x in v)


def _mat(M: np.ndarray) -> tuple:
    return tuple(tuple(_num(x) for x in row) for row in M)


def load_urdf(path: str | Path, name: str | None = None, base: str = "fixed",
              gravity=(0.0, 0.0, -9.81), lock: dict[str, float] | None = None,
              frames: list[str] | tuple = (), snap: float = 1e-12,
              source: str | None = None, mimic_independent: bool = False) -> Chain:
    """Read a URDF file into a Chain (a tree when branches share a link).

    ``mimic_independent``: a ``<mimic>`` joint becomes an ordinary joint with its own
    coordinate (as Pinocchio reads it by default); otherwise it must be locked."""
    path = Path(path)
    source = source or path.name
    lock = dict(lock or {})
    robot, links, joints = read(path, snap)
    root = _root(path, links, joints)
    by_name = {jt.name: jt for jt in joints}
    for jn, v in lock.items():
        if jn not in by_name:
            raise ModelError(f"{source}: lock.{jn}: the URDF has no joint named {jn!r}")
        if by_name[jn].type not in MOVING:
            raise ModelError(f"{source}: lock.{jn}: joint {jn!r} is {by_name[jn].type}, "
                             f"nothing to lock")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ModelError(f"{source}: lock.{jn}: expected a finite number, got {v!r}")
    for jt in joints:
        if jt.mimic and jt.name not in lock and not mimic_independent:
            raise ModelError(f"{jt.where}<mimic>: mimic joints are not supported; lock the "
                             f"joint ([lock] in the spec)")
    if base not in ("fixed", "free"):
        raise ModelError(f"{source}: mechanism.base: expected 'fixed' or 'free', got {base!r}")
    children: dict[str, list[UrdfJoint]] = {}
    for jt in joints:
        children.setdefault(jt.parent, []).append(jt)

    taken: set[str] = set()
    accs: list[_Acc] = []          # accs[j-1]: body j
    our_joints: list[Joint] = []
    parent: list[int] = []
    placed: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}   # link -> (body, P, o)
    named: list[tuple[str, int]] = []
    body_frame: dict[int, np.ndarray] = {}

    def add_inertia(j: int, link: UrdfLink, P: np.ndarray, o: np.ndarray) -> None:
        if j == 0 or link.m == 0 and not link.I_com.any():
            return
        acc = accs[j - 1]
        d = P @ link.com + o
        R = P @ link.R_in
        I_G = R @ link.I_com @ R.T
        acc.m += link.m
        acc.c += link.m * d
        acc.I += I_G + link.m * (d @ d * np.eye(3) - np.outer(d, d))

    def visit(link_name: str, j: int, P: np.ndarray, o: np.ndarray) -> None:
        placed[link_name] = (j, P, o)
        add_inertia(j, links[link_name], P, o)
        for jt in children.get(link_name, []):
            if jt.type == "fixed" or jt.name in lock:
                R_c, t = jt.R_o, jt.xyz
                if jt.name in lock and jt.type in ("revolute", "continuous"):
                    P_a, k = align_axis(jt.axis)
                    R_c = jt.R_o @ P_a.T @ rot(k, math.cos(lock[jt.name]),
                                              math.sin(lock[jt.name])) @ P_a
                elif jt.name in lock:
                    t = jt.xyz + jt.R_o @ jt.axis * lock[jt.name]
                visit(jt.child, j, P @ R_c, P @ t + o)
                continue
            P_a, k = align_axis(jt.axis)
            gamma = P_a @ jt.R_o.T @ P.T
            l = P @ jt.xyz + o
            our_joints.append(Joint(identifier(jt.name, taken), MOVING[jt.type], k, _vec(l),
                                    _mat(gamma)))
            parent.append(j)
            k_body = len(our_joints)
            accs.append(_Acc(jt.child))
            named.append((jt.child, k_body))
            body_frame[k_body] = P_a.T
            visit(jt.child, k_body, P_a, np.zeros(3))

    if base == "free":  # six base joints; the last carries the root link
        for jt, b in free_base_joints(fictitious_body(root)):
            our_joints.append(jt)
            taken.add(jt.name)
            parent.append(len(our_joints) - 1)
            accs.append(_Acc(b.name))
        named.append((root, 6))
        body_frame[6] = np.eye(3)
        visit(root, 6, np.eye(3), np.zeros(3))
    else:
        visit(root, 0, np.eye(3), np.zeros(3))
    if not our_joints:
        raise ModelError(f"{source}: the URDF has no moving joint (after locking {sorted(lock)})")

    body_names = {nm: identifier(nm, taken) for nm, _ in named}
    bodies = []
    for j, acc in enumerate(accs, start=1):
        d = acc.c / acc.m if acc.m > 0 else np.zeros(3)
        bodies.append(Body(body_names.get(acc.name, acc.name), _num(acc.m), _vec(d),
                           _mat(acc.I), frame=_mat(body_frame.get(j, np.eye(3)))))
    points = []
    for i, fname in enumerate(frames):
        if fname not in links:
            raise ModelError(f"{source}: frames[{i}]: the URDF has no link named {fname!r}")
        if fname in body_names:
            continue  # already reported as a moving link
        j, P, o = placed[fname]
        points.append(Point(identifier(fname, taken), j, _vec(o), rotation=_mat(P.T)))
    chain = Chain(name or identifier(robot, set()), our_joints, bodies,
                  tuple(_num(g) for g in gravity), base,
                  [(body_names[nm], j) for nm, j in named], points, source, parent)
    chain.validate()
    return chain
