"""URDF -> :class:`generator.model.Chain` (a serial chain or a kinematic tree).

What is read (the subset of URDF that describes rigid-body dynamics):

* ``<link>``: ``<inertial>`` with ``<origin xyz rpy>``, ``<mass value>``,
  ``<inertia ixx ixy ixz iyy iyz izz>`` (about the centre of mass, in the inertial frame).
* ``<joint>`` of type ``revolute``, ``continuous`` (both revolute here), ``prismatic`` and
  ``fixed``, with ``<parent link>``, ``<child link>``, ``<origin xyz rpy>`` and ``<axis xyz>``
  (default 1 0 0). ``<limit>``, ``<dynamics>``, ``<safety_controller>``, visual and collision
  geometry are ignored.

How it maps onto the model (docs/algorithms.md section 1 conventions):

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
joints; a ``<mimic>`` on a fixed joint is ignored), closed loops (a link with two parents),
several roots, links whose parents run in a circle away from the root (never dropped silently),
a moving link that ends a branch with no mass (lock its joint). Numbers must be finite and at
most 1e150 in size. An inertia that is not positive semi-definite is refused, or with
``inertia = "repair"`` clipped to it with a warning (:class:`InertiaRepairWarning`).
"""

from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.scalar import elementary_rotation
from mechgen.generator.numeric import M3, V3
from mechgen.generator.model import (MAX_MAGNITUDE, RESERVED, Body, Chain, Joint, ModelError,
                                     Point, check_name, fictitious_body, free_base_joints)

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
    xyz: V3
    R_o: M3
    axis: V3
    where: str
    mimic: bool = False


@dataclass
class UrdfLink:
    name: str
    m: float = 0.0
    com: V3 = (0.0, 0.0, 0.0)
    R_in: M3 = field(default_factory=num.identity)
    I_com: M3 = ((0.0, 0.0, 0.0),) * 3


@dataclass
class _Acc:
    """Mass, first moment and inertia about the body origin, summed over merged links."""

    name: str
    m: float = 0.0
    c: V3 = (0.0, 0.0, 0.0)
    I: M3 = ((0.0, 0.0, 0.0),) * 3


# --- reading the XML ---------------------------------------------------------------------

def _floats(el: ET.Element | None, attr: str, n: int, default: list[float] | None,
            where: str) -> tuple[float, ...]:
    if el is None or el.get(attr) is None:
        if default is None:
            raise ModelError(f"{where}: missing attribute {attr!r}")
        return tuple(float(x) for x in default)
    text = el.get(attr)
    try:
        if "_" in text:       # Python's float() takes 1_000, URDF readers do not
            raise ValueError
        vals = [float(x) for x in text.split()]
    except ValueError:
        raise ModelError(f"{where}: attribute {attr}={_show(text)} is not a list of "
                         f"numbers") from None
    if len(vals) != n or not all(math.isfinite(v) and abs(v) <= MAX_MAGNITUDE for v in vals):
        raise ModelError(f"{where}: attribute {attr}={_show(text)}: expected {n} finite numbers "
                         f"of magnitude at most {MAX_MAGNITUDE:g}")
    return tuple(vals)


def _show(text: str, limit: int = 60) -> str:
    """repr of an attribute, shortened when long (a number of 400 digits)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}...({len(text)} characters)"


def _exact_cs(angle: float, snap: float) -> tuple[float, float]:
    """cos, sin; exactly 0 or +-1 when the angle is within ``snap`` of a multiple of 90 deg."""
    k = round(angle / (math.pi / 2))
    if snap > 0 and abs(angle - k * math.pi / 2) <= snap:
        return [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][k % 4]
    return num.cos(angle), num.sin(angle)


def rot(axis: int, c: float, s: float) -> M3:
    """Active rotation about x, y or z (maps frame-C coordinates to the parent's): the
    transpose of the coordinate transform, i.e. elementary_rotation with -s."""
    return num.mat(elementary_rotation(axis, c, -s, 1.0, 0.0))


def rpy_matrix(rpy: tuple[float, ...], snap: float) -> M3:
    """URDF fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return _matmul(rot(2, *_exact_cs(rpy[2], snap)),
                   _matmul(rot(1, *_exact_cs(rpy[1], snap)), rot(0, *_exact_cs(rpy[0], snap))))


def _matmul(A: M3, B: M3) -> M3:
    """num.matmul, skipping a product with the identity (the same numbers, and most URDF
    origins have no rotation: a chain of a thousand links reads in a fraction of a second)."""
    if A == num.identity():
        return B
    if B == num.identity():
        return A
    return num.matmul(A, B)


def _origin(el: ET.Element, where: str, snap: float) -> tuple[V3, M3]:
    o = el.find("origin")
    xyz = _floats(o, "xyz", 3, [0, 0, 0], f"{where}<origin>")
    rpy = _floats(o, "rpy", 3, [0, 0, 0], f"{where}<origin>")
    return num.vec(xyz), rpy_matrix(rpy, snap)


def _link(el: ET.Element, where: str, snap: float, inertia: str = "strict") -> UrdfLink:
    """A link's mass, centre of mass and inertia (checked, or repaired: see ``_psd``)."""
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
    I = ((v["ixx"], v["ixy"], v["ixz"]), (v["ixy"], v["iyy"], v["iyz"]),
         (v["ixz"], v["iyz"], v["izz"]))
    link.I_com = _psd(I, f"{w}<inertia>", inertia)
    return link


class InertiaRepairWarning(UserWarning):
    """An inertia that was not positive semi-definite was clipped (``inertia = "repair"``)."""


def _psd(I: M3, where: str, policy: str) -> M3:
    """``I`` when positive semi-definite (to 1e-12 relative). Otherwise a ModelError
    (``policy = "strict"``), or (``"repair"``) ``I`` with its negative principal moments set to
    0, rebuilt from its eigenvectors, and a warning naming the link."""
    try:
        ev, Q = num.symmetric_eigen(I)
    except (ArithmeticError, RuntimeError, ValueError) as e:
        raise ModelError(f"{where}: the principal moments cannot be computed ({e})") from None
    if ev[0] >= -1e-12 * max(1.0, max(abs(x) for x in ev)):
        return I
    if policy != "repair":
        raise ModelError(f"{where}: not positive semi-definite (principal moments {list(ev)}); "
                         f"to clip the negative moments to 0 with a warning, set inertia = "
                         f"\"repair\" in the spec's [mechanism] table (load_urdf(..., "
                         f"inertia=\"repair\"))")
    clipped = tuple(max(x, 0.0) for x in ev)
    fixed = num.congruence(Q, ((clipped[0], 0.0, 0.0), (0.0, clipped[1], 0.0),
                               (0.0, 0.0, clipped[2])))
    warnings.warn(f"{where}: not positive semi-definite (principal moments {list(ev)}); "
                  f"repaired (inertia = \"repair\"): negative moments set to 0, principal "
                  f"moments now {list(clipped)}", InertiaRepairWarning, stacklevel=2)
    return fixed


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
    axis = num.vec(_floats(el.find("axis"), "xyz", 3, [1, 0, 0], f"{where}<axis>"))
    norm = num.norm(axis)
    if jtype in MOVING and norm < 1e-9:
        raise ModelError(f"{where}<axis>: attribute xyz is the zero vector")
    # a fixed joint has nothing to mimic: its <mimic> (Talos' grippers have them) is ignored
    mimic = jtype in MOVING and el.find("mimic") is not None
    return UrdfJoint(el.get("name"), jtype, ends["parent"], ends["child"], xyz, R_o,
                     num.normalize(axis) if norm else axis, where, mimic)


def read(path: Path, snap: float = 1e-12,
         inertia: str = "strict") -> tuple[str, dict[str, UrdfLink], list[UrdfJoint]]:
    """Robot name, links by name, joints in file order; every element checked."""
    try:
        root = ET.parse(path).getroot()
    except OSError as e:
        raise ModelError(f"{path}: cannot read the URDF: {e.strerror}") from None
    except ValueError as e:   # a NUL byte in the path; ET.ParseError (bad XML) is a SyntaxError
        raise ModelError(f"{path!r}: cannot read the URDF: {e}") from None
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
        links[name] = _link(el, where, snap, inertia)
    joints: list[UrdfJoint] = []
    joint_names: set[str] = set()
    for i, el in enumerate(root.findall("joint")):
        name = el.get("name")
        if not name:
            raise ModelError(f"{path.name}: joint #{i + 1}: missing attribute 'name'")
        jt = _joint(el, f"{path.name}: <joint name={name!r}>", snap)
        for end in (jt.parent, jt.child):
            if end not in links:
                raise ModelError(f"{jt.where}: no link named {end!r}")
        if name in joint_names:
            raise ModelError(f"{jt.where}: a second joint with this name")
        joint_names.add(name)
        joints.append(jt)
    if not links:
        raise ModelError(f"{path.name}: the URDF has no <link>")
    return root.get("name") or path.stem, links, joints


# --- the tree ----------------------------------------------------------------------------

def _root(path: Path, links: dict[str, UrdfLink], joints: list[UrdfJoint]) -> str:
    """The one link that is no joint's child; every other link must hang from it."""
    parent_of: dict[str, UrdfJoint] = {}
    for jt in joints:
        if jt.parent == jt.child:
            raise ModelError(f"{jt.where}: the parent and the child are the same link "
                             f"{jt.child!r}")
        if jt.child in parent_of:
            raise ModelError(f"{jt.where}: link {jt.child!r} already has the parent joint "
                             f"{parent_of[jt.child].name!r}: a closed loop, which URDF cannot "
                             f"describe as a tree")
        parent_of[jt.child] = jt
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        linked = {jt.parent for jt in joints} | set(parent_of)
        alone = [name for name in roots if name not in linked]
        raise ModelError(f"{path.name}: expected one root link (a link that is no joint's "
                         f"child), found {_names(roots) if roots else 'none (a cycle)'}"
                         + (f"; no joint connects {_names(alone)}" if alone and joints else ""))
    _check_reachable(path, links, parent_of, roots[0])
    return roots[0]


def _check_reachable(path: Path, links: dict[str, UrdfLink], parent_of: dict[str, UrdfJoint],
                     root: str) -> None:
    """Every link must hang from the root: a link whose chain of parents runs in a circle
    (a -> b -> a, away from the root), or hangs from such a circle, would otherwise be dropped
    without a word. Each link is walked once (linear time)."""
    hangs = {root: True}                 # link -> whether its parents lead to the root
    cycle: list[str] = []
    for start in links:
        trail: list[str] = []
        on_trail: set[str] = set()
        name = start
        while name not in hangs and name not in on_trail:
            trail.append(name)
            on_trail.add(name)
            name = parent_of[name].parent
        if name in on_trail and not cycle:
            cycle = trail[trail.index(name):]
        for n in trail:
            hangs[n] = hangs.get(name, False)
    lost = [name for name in links if not hangs[name]]
    if lost:
        raise ModelError(f"{path.name}: {len(lost)} link(s) do not hang from the root link "
                         f"{root!r}: {_names(lost)}; the joints "
                         f"{_names([parent_of[n].name for n in cycle])} join the links "
                         f"{_names(cycle)} in a cycle")


def _names(names: list[str], k: int = 8) -> str:
    """A list of names for a message: the first k, and how many in all."""
    return str(names) if len(names) <= k else f"{names[:k]}... ({len(names)} in all)"


def align_axis(a: V3) -> tuple[M3, int]:
    """A constant rotation P and k with P a = e_k: the identity for +e_k, a half turn for
    -e_k, otherwise the smallest rotation onto the nearest coordinate axis."""
    k = max(range(3), key=lambda i: (abs(a[i]), -i))      # the first largest component
    e = tuple(float(i == k) for i in range(3))
    if a == e:
        return num.identity(), k
    if a == tuple(-x for x in e):
        return rot((k + 1) % 3, -1.0, 0.0), k
    return num.rotation_onto(a, k), k


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
    """A computed constant as an exact SymPy number (checked finite by ``_finite`` before)."""
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f"a constant of the model is {x!r}: numbers of the URDF too large")
    if x == int(x) and abs(x) < 2 ** 52:
        return sp.Integer(int(x))
    return sp.Rational(repr(x))


def _vec(v: V3) -> tuple:
    return tuple(_num(x) for x in v)


def _mat(M: M3) -> tuple:
    return tuple(tuple(_num(x) for x in row) for row in M)


def load_urdf(path: str | Path, name: str | None = None, base: str = "fixed",
              gravity=(0.0, 0.0, 0.0), lock: dict[str, float] | None = None,
              frames: list[str] | tuple = (), snap: float = 1e-12,
              source: str | None = None, mimic_independent: bool = False,
              inertia: str = "strict", attitude: str = "euler",
              base_velocity: str = "frame0") -> Chain:
    """Read a URDF file into a Chain (a tree when branches share a link).

    ``mimic_independent``: a ``<mimic>`` joint becomes an ordinary joint with its own
    coordinate (as Pinocchio reads it by default); otherwise it must be locked (a ``<mimic>``
    on a fixed joint is ignored). ``inertia``: ``"strict"`` refuses an inertia that is not
    positive semi-definite; ``"repair"`` clips its negative principal moments to 0 and warns
    (:class:`InertiaRepairWarning`) naming the link."""
    path = Path(path)
    source = source or path.name
    lock = dict(lock or {})
    if inertia not in ("strict", "repair"):
        raise ModelError(f"{source}: mechanism.inertia: expected 'strict' or 'repair', "
                         f"got {inertia!r}")
    if base not in ("fixed", "free"):
        raise ModelError(f"{source}: mechanism.base: expected 'fixed' or 'free', got {base!r}")
    gravity = _gravity(gravity, source)
    robot, links, joints = read(path, snap, inertia)
    root = _root(path, links, joints)
    _check_lock(lock, joints, source)
    for jt in joints:
        if jt.mimic and jt.name not in lock and not mimic_independent:
            raise ModelError(f"{jt.where}<mimic>: mimic joints are not supported; lock the "
                             f"joint ([lock] in the spec) or give it its own coordinate "
                             f"(mechanism.mimic = \"independent\")")
    children: dict[str, list[UrdfJoint]] = {}
    for jt in joints:
        children.setdefault(jt.parent, []).append(jt)

    taken: set[str] = set()
    accs: list[_Acc] = []          # accs[j-1]: body j
    our_joints: list[Joint] = []
    parent: list[int] = []
    placed: dict[str, tuple[int, M3, V3]] = {}   # link -> (body, P, o)
    named: list[tuple[str, int]] = []
    body_frame: dict[int, M3] = {}
    urdf_joint: dict[int, UrdfJoint] = {}        # body -> the URDF joint that moves it

    def add_inertia(j: int, link: UrdfLink, P: M3, o: V3) -> None:
        """Merge a link into body j: mass, first moment m d, inertia about the body origin."""
        if j == 0 or link.m == 0 and not any(x for row in link.I_com for x in row):
            return
        acc = accs[j - 1]
        d = num.add(num.matvec(P, link.com), o)
        I_G = num.congruence(num.matmul(P, link.R_in), link.I_com)
        acc.m = num.fsum([acc.m, link.m])
        acc.c = num.add(acc.c, num.scale(link.m, d))
        acc.I = num.mat_add(acc.I, num.mat_add(I_G, num.parallel_axis(link.m, d)))

    def cross(jt: UrdfJoint, j: int, P: M3, o: V3) -> tuple[int, M3, V3]:
        """Body, frame and origin of jt's child link, jt hanging on body j at (P, o): the
        same body for a fixed or locked joint, a new body for a moving one."""
        if jt.type == "fixed" or jt.name in lock:
            R_c, t = jt.R_o, jt.xyz
            if jt.name in lock and jt.type in ("revolute", "continuous"):
                P_a, k = align_axis(jt.axis)
                q = float(lock[jt.name])
                R_c = num.matmul(jt.R_o, num.matmul(num.transpose(P_a), num.matmul(
                    rot(k, num.cos(q), num.sin(q)), P_a)))
            elif jt.name in lock:
                t = num.add(jt.xyz, num.matvec(jt.R_o, num.scale(float(lock[jt.name]),
                                                                 jt.axis)))
            return j, _matmul(P, R_c), num.add(num.matvec(P, t), o)
        P_a, k = align_axis(jt.axis)
        gamma = num.matmul(P_a, num.matmul(num.transpose(jt.R_o), num.transpose(P)))
        l = num.add(num.matvec(P, jt.xyz), o)
        our_joints.append(Joint(identifier(jt.name, taken), MOVING[jt.type], k, _vec(l),
                                _mat(gamma)))
        parent.append(j)
        k_body = len(our_joints)
        accs.append(_Acc(jt.child))
        named.append((jt.child, k_body))
        body_frame[k_body] = num.transpose(P_a)
        urdf_joint[k_body] = jt
        return k_body, P_a, (0.0, 0.0, 0.0)

    def visit(root_body: int) -> None:
        """Depth first from the root link, children in file order (a loop, not recursion:
        a chain of a thousand links is fine)."""
        placed[root] = (root_body, num.identity(), (0.0, 0.0, 0.0))
        add_inertia(root_body, links[root], num.identity(), (0.0, 0.0, 0.0))
        stack = [(jt, placed[root]) for jt in reversed(children.get(root, []))]
        while stack:
            jt, (j, P, o) = stack.pop()
            at = placed[jt.child] = cross(jt, j, P, o)
            add_inertia(at[0], links[jt.child], at[1], at[2])
            stack.extend((c, at) for c in reversed(children.get(jt.child, [])))

    if base == "free":  # six base joints; the last carries the root link
        for jt, b in free_base_joints(fictitious_body(root), attitude, base_velocity):
            our_joints.append(jt)
            taken.add(jt.name)
            parent.append(len(our_joints) - 1)
            accs.append(_Acc(b.name))
        named.append((root, 6))
        body_frame[6] = num.identity()
        visit(6)
    else:
        visit(0)
    if not our_joints:
        raise ModelError(f"{source}: the URDF has no moving joint (after locking {sorted(lock)})")

    body_names = {nm: identifier(nm, taken) for nm, _ in named}
    bodies = []
    for j, acc in enumerate(accs, start=1):
        d = (0.0, 0.0, 0.0) if acc.m <= 0 else tuple(x / acc.m for x in acc.c)
        _check_finite(acc, d, urdf_joint.get(j), source)
        bodies.append(Body(body_names.get(acc.name, acc.name), _num(acc.m), _vec(d),
                           _mat(acc.I), frame=_mat(body_frame.get(j, num.identity()))))
    points = []
    for i, fname in enumerate(frames):
        if not isinstance(fname, str) or fname not in links:
            raise ModelError(f"{source}: frames[{i}]: the URDF has no link named {fname!r}")
        if fname in body_names:
            continue  # already reported as a moving link
        j, P, o = placed[fname]
        points.append(Point(identifier(fname, taken), j, _vec(o), rotation=_mat(num.transpose(P))))
    chain = Chain(name or identifier(robot, set()), our_joints, bodies,
                  tuple(_num(g) for g in gravity), base,
                  [(body_names[nm], j) for nm, j in named], points, source, parent,
                  attitude=attitude, base_velocity=base_velocity)
    _check_massless_leaves(chain, urdf_joint)
    chain.validate()
    return chain


def _gravity(gravity: object, source: str) -> V3:
    """Three finite numbers of moderate size."""
    if not (isinstance(gravity, (list, tuple)) and len(gravity) == 3 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and abs(x) <= MAX_MAGNITUDE
            and math.isfinite(x) for x in gravity)):
        raise ModelError(f"{source}: mechanism.gravity: expected 3 finite numbers (of "
                         f"magnitude at most {MAX_MAGNITUDE:g}), got {gravity!r}")
    return num.vec(gravity)


def _check_lock(lock: dict, joints: list[UrdfJoint], source: str) -> None:
    """Each locked joint exists, moves, and is held at a finite value of moderate size."""
    by_name = {jt.name: jt for jt in joints}
    for jn, v in lock.items():
        if jn not in by_name:
            raise ModelError(f"{source}: lock.{jn}: the URDF has no joint named {jn!r}")
        if by_name[jn].type not in MOVING:
            raise ModelError(f"{source}: lock.{jn}: joint {jn!r} is {by_name[jn].type}, "
                             f"nothing to lock")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or abs(v) > MAX_MAGNITUDE \
                or not math.isfinite(v):     # (abs first: math.isfinite(10**400) overflows)
            raise ModelError(f"{source}: lock.{jn}: expected a finite number (of magnitude at "
                             f"most {MAX_MAGNITUDE:g}), got {v!r}")


def _check_finite(acc: _Acc, d: V3, jt: UrdfJoint | None, source: str) -> None:
    """The merged mass, centre and inertia of a body must be finite doubles (a mass of 1e150
    a long way off overflows m d^2)."""
    values = (acc.m, *acc.c, *d, *(x for row in acc.I for x in row))
    if not all(math.isfinite(x) for x in values):
        where = jt.where if jt is not None else f"{source}: <link name={acc.name!r}>"
        raise ModelError(f"{where}: the mass, centre of mass or inertia of the body of link "
                         f"{acc.name!r} (with the links fixed to it) is not a finite double: "
                         f"masses, lengths or inertias too large (or a mass too small)")


def _check_massless_leaves(chain: Chain, urdf_joint: dict[int, UrdfJoint]) -> None:
    """A moving link that ends a branch with no mass (nor any link fixed to it) makes the mass
    matrix singular: name the URDF joint, which can be locked."""
    for j, jt in sorted(urdf_joint.items()):
        if not chain.children(j) and chain.bodies[j - 1].fictitious:
            raise ModelError(f"{jt.where}: its child link {jt.child!r} ends a branch and has no "
                             f"mass (nor do links fixed to it), so the mass matrix is singular; "
                             f"lock the joint ([lock] {jt.name} = 0.0 in the spec) or give the "
                             f"link an <inertial>")
