"""Reading a linkage spec (docs/linkage.md) into a :class:`Linkage`.

    parse         bodies, joints, springs, points; every field checked, errors name the field
    merge         bodies joined by ``fixed`` joints become one rigid body
    spanning tree grown from ground; the joints left out are the cut joints
    frames        each tree joint's elementary motions (R or P) with their joint frames; body
                  and cut-joint frames, spring ends and points as body-frame constants
    analysis      (analysis.py) rank, kept rows, independent coordinates

All geometric arithmetic is correctly rounded (generator.numeric), so the same spec gives the
same constants on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from mechgen.generator import fields
from mechgen.generator import numeric as num
from mechgen.generator.families.linkage.model import (Cut, Frame, JointSpring, Linkage, Marker,
                                                      Screw, Spring)
from mechgen.generator.model import (Body, Chain, Joint, ModelError, as_expr, check_name,
                                     fictitious_body, finite_number, inertia_about_origin)
from mechgen.generator.numeric import const
from mechgen.generator.ir import symbol

FAMILY = "linkage"
GROUND = "ground"
TYPES = ("R", "P", "C", "H", "U", "S", "fixed")
DOF = {"R": 1, "P": 1, "C": 2, "H": 2, "U": 2, "S": 3, "fixed": 0}
# the higher, the sooner a joint is cut (S and U cut: no Euler angles in the tree)
CUT_PREFERENCE = {"S": 5, "U": 4, "C": 3, "P": 2, "R": 1, "H": 0}
AXIS_TOL = 1e-9


def is_linkage(data: dict) -> bool:
    mech = data.get("mechanism") if isinstance(data, dict) else None
    return isinstance(mech, dict) and mech.get("family") == FAMILY


@dataclass
class BodySpec:
    name: str
    m: float
    com: num.V3
    I: num.M3                       # about the centre of mass, frame-0 axes


@dataclass
class JointSpec:
    name: str
    kind: str
    first: str
    second: str
    point: num.V3
    axis: num.V3 | None = None
    axis2: num.V3 | None = None
    lead: float | None = None
    q_ref: float = 0.0
    k: sp.Expr = sp.Integer(0)
    c: sp.Expr = sp.Integer(0)
    q0: sp.Expr = sp.Integer(0)
    cut: bool | None = None
    where: str = ""

    @property
    def sprung(self) -> bool:
        return self.k != 0 or self.c != 0


@dataclass
class Element:
    """One elementary motion of a tree joint: kind R or P about/along the frame-0 ``axis``
    through ``point`` (reference pose), coordinate ``coordinate``."""

    kind: str
    axis: num.V3
    point: num.V3
    coordinate: str
    q_ref: float


@dataclass
class _Reader:
    data: dict
    source: str
    params: dict[str, float] = field(default_factory=dict)

    def where(self, what: str) -> str:
        return f"{self.source}: {what}"

    def number(self, value: Any, what: str) -> float:
        return finite_number(value, self.where(what))

    def vec(self, value: Any, what: str) -> num.V3:
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            raise ModelError(f"{self.where(what)}: expected a list of 3 numbers, got {value!r}")
        return tuple(self.number(x, f"{what}[{i}]") for i, x in enumerate(value))

    def unit(self, value: Any, what: str) -> num.V3:
        v = self.vec(value, what)
        if num.norm(v) < 1e-12:
            raise ModelError(f"{self.where(what)}: the axis {list(v)} has zero length")
        return num.normalize(v)

    def constant(self, value: Any, what: str, positive_ok_only: bool = True) -> sp.Expr:
        """A force-element constant: a number >= 0 or a parameter name from [parameters]."""
        e = as_expr(value, self.where(what))
        if isinstance(e, sp.Symbol):
            if e.name not in self.params:
                raise ModelError(f"{self.where(what)}: {e.name!r} is not in [parameters] "
                                 f"(declared: {sorted(self.params) or 'none'})")
            return e
        if positive_ok_only and e < 0:
            raise ModelError(f"{self.where(what)}: {e} is negative")
        return e


def _parameters(rd: _Reader) -> None:
    table = rd.data.get("parameters", {})
    if not isinstance(table, dict):
        raise ModelError(f"{rd.where('parameters')}: expected a table of name = default value")
    for name, value in table.items():
        check_name(name, rd.where(f"parameters.{name}"))
        rd.params[name] = rd.number(value, f"parameters.{name}")


def _bodies(rd: _Reader) -> dict[str, BodySpec]:
    out: dict[str, BodySpec] = {}
    items = rd.data.get("bodies", [])
    if not isinstance(items, list) or not items:
        raise ModelError(f"{rd.where('bodies')}: expected a non-empty list of [[bodies]] tables")
    for i, t in enumerate(items):
        w = f"bodies[{i}]"
        t = fields.keys(t, {"name", "mass", "com", "inertia"}, rd.where(w), {"name", "mass"})
        name = check_name(t["name"], rd.where(f"{w}.name"))
        if name == GROUND or name in out:
            raise ModelError(f"{rd.where(f'{w}.name')}: {name!r} is "
                             f"{'reserved for frame 0' if name == GROUND else 'declared twice'}")
        m = rd.number(t["mass"], f"{w}.mass")
        if m < 0:
            raise ModelError(f"{rd.where(f'{w}.mass')}: {m} is negative")
        com = rd.vec(t.get("com", [0, 0, 0]), f"{w}.com")
        I = fields.inertia(t.get("inertia", [0] * 6), rd.where(f"{w}.inertia"))
        if not all(x.is_number for row in I for x in row):
            raise ModelError(f"{rd.where(f'{w}.inertia')}: numbers only (parameters may name "
                             f"force-element constants)")
        out[name] = BodySpec(name, m, com, num.mat([[float(x) for x in row] for row in I]))
    return out


JOINT_FIELDS = {"name", "type", "bodies", "point", "axis", "axis2", "lead", "q_ref",
                "stiffness", "damping", "q0", "cut"}


def _joint(rd: _Reader, t: Any, i: int, bodies: dict[str, BodySpec], seen: set[str]) -> JointSpec:
    w = f"joints[{i}]"
    t = fields.keys(t, JOINT_FIELDS, rd.where(w), {"name", "type", "bodies"})
    name = check_name(t["name"], rd.where(f"{w}.name"))
    if name in seen or name == GROUND:
        raise ModelError(f"{rd.where(f'{w}.name')}: {name!r} is "
                         f"{'reserved for frame 0' if name == GROUND else 'declared twice'}")
    kind = t["type"]
    if kind not in TYPES:
        raise ModelError(f"{rd.where(f'{w}.type')}: unknown joint type {kind!r}; "
                         f"known: {', '.join(TYPES)}")
    pair = t["bodies"]
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(b, str) for b in pair)):
        raise ModelError(f"{rd.where(f'{w}.bodies')}: expected [first, second] body names")
    for b in pair:
        if b != GROUND and b not in bodies:
            raise ModelError(f"{rd.where(f'{w}.bodies')}: unknown body {b!r} (declared: "
                             f"ground, {', '.join(bodies)})")
    if pair[0] == pair[1]:
        raise ModelError(f"{rd.where(f'{w}.bodies')}: a joint needs two different bodies")
    allowed = {"R": {"axis"}, "P": {"axis"}, "C": {"axis"}, "H": {"axis", "lead"},
               "U": {"axis", "axis2"}, "S": set(), "fixed": set()}[kind]
    for f in ("axis", "axis2", "lead"):
        if f in t and f not in allowed:
            raise ModelError(f"{rd.where(f'{w}.{f}')}: a {kind} joint has no {f}")
        if f not in t and f in allowed:
            raise ModelError(f"{rd.where(w)}: a {kind} joint needs {f!r}")
    for f in ("q_ref", "stiffness", "damping", "q0"):
        if f in t and kind not in ("R", "P", "H"):
            raise ModelError(f"{rd.where(f'{w}.{f}')}: only R, P and H joints take {f}")
    if "q_ref" in t and kind == "H":
        raise ModelError(f"{rd.where(f'{w}.q_ref')}: a screw joint starts at 0")
    point = rd.vec(t.get("point", [0, 0, 0]), f"{w}.point")
    if "point" not in t and kind != "P" and kind != "fixed":
        raise ModelError(f"{rd.where(w)}: a {kind} joint needs 'point'")
    js = JointSpec(name, kind, pair[0], pair[1], point, where=rd.where(w))
    if "axis" in t:
        js.axis = rd.unit(t["axis"], f"{w}.axis")
    if "axis2" in t:
        js.axis2 = rd.unit(t["axis2"], f"{w}.axis2")
        if abs(num.dot(js.axis, js.axis2)) > AXIS_TOL:
            raise ModelError(f"{rd.where(f'{w}.axis2')}: the pins of a Hooke joint must be "
                             f"perpendicular at the reference pose (axis . axis2 = "
                             f"{num.dot(js.axis, js.axis2):.3g})")
    if "lead" in t:
        js.lead = rd.number(t["lead"], f"{w}.lead")
        if js.lead == 0:
            raise ModelError(f"{rd.where(f'{w}.lead')}: a screw's lead cannot be 0 (use C or R)")
    if "q_ref" in t:
        js.q_ref = rd.number(t["q_ref"], f"{w}.q_ref")
    js.k = rd.constant(t.get("stiffness", 0), f"{w}.stiffness")
    js.c = rd.constant(t.get("damping", 0), f"{w}.damping")
    js.q0 = rd.constant(t.get("q0", 0), f"{w}.q0", positive_ok_only=False)
    if "cut" in t:
        if not isinstance(t["cut"], bool):
            raise ModelError(f"{rd.where(f'{w}.cut')}: expected true or false")
        js.cut = t["cut"]
        if js.cut and (kind in ("H", "fixed") or js.sprung):
            raise ModelError(f"{rd.where(f'{w}.cut')}: a {kind} joint"
                             f"{' with a spring-damper' if js.sprung else ''} cannot be cut")
    seen.add(name)
    return js


def _joints(rd: _Reader, bodies: dict[str, BodySpec]) -> list[JointSpec]:
    items = rd.data.get("joints", [])
    if not isinstance(items, list) or not items:
        raise ModelError(f"{rd.where('joints')}: expected a non-empty list of [[joints]] tables")
    seen: set[str] = set()
    return [_joint(rd, t, i, bodies, seen) for i, t in enumerate(items)]


# --- fixed joints: merged bodies ----------------------------------------------------------

class _Sets:
    def __init__(self, names: list[str]) -> None:
        self.up = {n: n for n in names}

    def find(self, a: str) -> str:
        while self.up[a] != a:
            a = self.up[a]
        return a

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if rb == GROUND or (ra != GROUND and list(self.up).index(rb) < list(self.up).index(ra)):
            ra, rb = rb, ra
        self.up[rb] = ra
        return True


def _merge(rd: _Reader, bodies: dict[str, BodySpec], joints: list[JointSpec]):
    """Bodies welded by ``fixed`` joints -> one body each (named after the first declared);
    returns (body -> its rigid body, rigid bodies' mass properties)."""
    sets = _Sets([GROUND, *bodies])
    for j in joints:
        if j.kind == "fixed" and not sets.union(j.first, j.second):
            raise ModelError(f"{j.where}: this fixed joint closes a loop of fixed joints")
    rigid = {b: sets.find(b) for b in bodies}
    merged: dict[str, BodySpec] = {}
    for rep in dict.fromkeys(rigid.values()):
        if rep == GROUND:
            continue
        parts = [bodies[b] for b in bodies if rigid[b] == rep]
        m = num.fsum(p.m for p in parts)
        com = (tuple(num.fsum(p.m * p.com[i] for p in parts) / m for i in range(3))
               if m > 0 else parts[0].com)
        I = num.mat([[0.0] * 3] * 3)
        for p in parts:
            I = num.mat_add(num.mat_add(I, p.I), num.parallel_axis(p.m, num.sub(p.com, com)))
        merged[rep] = BodySpec(rep, m, com, I)
    return rigid, merged


# --- spanning tree -----------------------------------------------------------------------

def _spanning_tree(rd: _Reader, joints: list[JointSpec], rigid: dict[str, str]):
    """(tree joints, cut joints) by Kruskal: joints that must stay in the tree (screws, sprung
    joints) first, then R, P, C, U, S; spec order within a type; ``cut = true`` never."""
    moving = [j for j in joints if j.kind != "fixed"]
    rep = {GROUND: GROUND, **rigid}
    for j in moving:
        if rep[j.first] == rep[j.second]:
            raise ModelError(f"{j.where}: joins {j.first!r} and {j.second!r}, which fixed joints "
                             f"already weld into one body")

    def priority(j: JointSpec) -> int:
        return -1 if j.sprung else CUT_PREFERENCE[j.kind]

    order = sorted((j for j in moving if j.cut is not True), key=priority)
    sets = _Sets([GROUND, *dict.fromkeys(rigid.values())])
    tree = []
    for j in order:
        if sets.union(rep[j.first], rep[j.second]):
            tree.append(j)
        elif j.kind == "H" or j.sprung or j.cut is False:
            raise ModelError(f"{j.where}: closes a loop of joints that cannot be cut (screws, "
                             f"joints with a spring-damper or cut = false); cut another joint "
                             f"of the loop with cut = true")
    loose = [b for b in dict.fromkeys(rigid.values()) if sets.find(b) != sets.find(GROUND)]
    if loose:
        raise ModelError(f"{rd.where('joints')}: bodies not connected to ground (through joints "
                         f"other than cut ones): {', '.join(loose)}")
    cuts = [j for j in moving if j not in tree]
    return tree, cuts


def elements(j: JointSpec, reverse: bool) -> list[Element]:
    """The joint's elementary motions, second body relative to the first; ``reverse``: the
    first relative to the second (the sequence inverted, every axis negated)."""
    o, n = j.point, j.name
    if j.kind in ("R", "P"):
        seq = [Element(j.kind, j.axis, o, n, j.q_ref)]
    elif j.kind in ("C", "H"):
        seq = [Element("P", j.axis, o, f"{n}_s", 0.0), Element("R", j.axis, o, f"{n}_r", 0.0)]
    elif j.kind == "U":
        seq = [Element("R", j.axis, o, f"{n}_1", 0.0), Element("R", j.axis2, o, f"{n}_2", 0.0)]
    else:
        seq = [Element("R", e, o, f"{n}_{a}", 0.0)
               for a, e in zip("xyz", ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))]
    if not reverse:
        return seq
    return [Element(e.kind, num.scale(-1.0, e.axis), e.point, e.coordinate, e.q_ref)
            for e in reversed(seq)]


# --- frames ---------------------------------------------------------------------------------

def _joint_frame(u_parent: num.V3) -> tuple[int, num.M3]:
    """(axis index k, gamma) with gamma u_parent = e_k: the identity or a half turn when the
    axis is along a parent axis (planar linkages keep exact zeros), else a rotation onto z."""
    for k in range(3):
        if u_parent[k] in (1.0, -1.0) and all(u_parent[i] == 0.0 for i in range(3) if i != k):
            if u_parent[k] == 1.0:
                return k, num.identity()
            m = (k + 1) % 3
            return k, tuple(tuple(float(i == j) * (1.0 if i == m else -1.0) for j in range(3))
                            for i in range(3))
    return 2, num.rotation_onto(u_parent, 2)


def perpendicular(u: num.V3) -> num.V3:
    """A unit vector perpendicular to u: frame 0's least aligned axis made perpendicular."""
    k = min(range(3), key=lambda i: (abs(u[i]), i))
    e = tuple(float(i == k) for i in range(3))
    return num.normalize(num.reject(e, u))


@dataclass
class _TreeBody:
    tau: num.M3        # frame 0 -> body frame (reference pose)
    o: num.V3          # origin, frame 0


def _local(tb: _TreeBody, p: num.V3) -> tuple:
    return tuple(const(x) for x in num.matvec(tb.tau, num.sub(p, tb.o)))


def _local_axis(tb: _TreeBody, a: num.V3) -> tuple:
    return tuple(const(x) for x in num.matvec(tb.tau, a))


def _mass_properties(b: BodySpec, tb: _TreeBody) -> Body:
    d = num.matvec(tb.tau, num.sub(b.com, tb.o))
    I_local = num.congruence(tb.tau, b.I)
    dq = tuple(const(x) for x in d)
    Iq = tuple(tuple(const(x) for x in row) for row in I_local)
    return Body(b.name, const(b.m), dq, inertia_about_origin(const(b.m), dq, Iq))


def build(rd: _Reader, name: str, gravity: tuple) -> Linkage:
    bodies = _bodies(rd)
    joints = _joints(rd, bodies)
    rigid, merged = _merge(rd, bodies, joints)
    tree, cuts = _spanning_tree(rd, joints, rigid)
    rep = {GROUND: GROUND, **rigid}

    # depth-first from ground: chain bodies and joints in index order
    frames: dict[str, tuple[int, _TreeBody]] = {GROUND: (0, _TreeBody(num.identity(),
                                                                       (0.0, 0.0, 0.0)))}
    chain_joints: list[Joint] = []
    chain_bodies: list[Body] = []
    parent: list[int] = []
    q_ref: list[float] = []
    body_names: list[str] = []
    coord_index: dict[str, int] = {}
    stack = [GROUND]
    while stack:
        b = stack.pop()
        children = [j for j in tree if b in (rep[j.first], rep[j.second])
                    and not all(rep[x] in frames for x in (j.first, j.second))]
        for j in reversed(children):
            reverse = rep[j.second] == b
            child = rep[j.first] if reverse else rep[j.second]
            idx, tb = frames[b]
            els = elements(j, reverse)
            for k, e in enumerate(els):
                axis, gamma = _joint_frame(num.matvec(tb.tau, e.axis))
                l = _local(tb, e.point)
                chain_joints.append(Joint(e.coordinate, e.kind, axis, l,
                                          tuple(tuple(const(x) for x in row) for row in gamma)))
                parent.append(idx)
                q_ref.append(e.q_ref)
                coord_index[e.coordinate] = len(chain_joints) - 1
                tb = _TreeBody(num.matmul(gamma, tb.tau), e.point)
                idx = len(chain_joints)
                last = k == len(els) - 1
                chain_bodies.append(_mass_properties(merged[child], tb) if last
                                    else fictitious_body(f"{j.name}_{k + 1}"))
                body_names.append(child if last else f"{j.name}_{k + 1}")
            frames[child] = (idx, tb)
            stack.append(child)
    chain = Chain(name, chain_joints, chain_bodies, gravity, parent=parent, source=rd.source)

    def at(body: str) -> tuple[int, _TreeBody]:
        return frames[rep[body]]

    cut_list = [_cut(j, at) for j in cuts]
    screws = [Screw(j.name, coord_index[f"{j.name}_s"], coord_index[f"{j.name}_r"],
                    const(num.screw_pitch(j.lead))) for j in tree if j.kind == "H"]
    joint_springs = [JointSpring(coord_index[j.name if j.kind != "H" else f"{j.name}_r"],
                                 j.k, j.c, j.q0) for j in tree if j.sprung]
    springs = _springs(rd, bodies, at)
    points = _points(rd, bodies, at)
    markers = [Marker(b.name, at(b.name)[0], _local(at(b.name)[1], b.com),
                      tuple(tuple(const(x) for x in row) for row in at(b.name)[1].tau))
               for b in bodies.values()]
    return Linkage(name, chain, tuple(const(x) for x in q_ref), cut_list, screws,
                   joint_springs, springs, points, markers,
                   {j.name: j.kind for j in joints}, [j.name for j in tree], rd.source,
                   dict(rd.params), tuple(symbol(p) for p in rd.params),
                   body_names=body_names)


def _frame(idx: int, tb: _TreeBody, o: num.V3, z: num.V3, x: num.V3) -> Frame:
    y = num.cross(z, x)
    return Frame(idx, _local(tb, o), _local_axis(tb, x), _local_axis(tb, y), _local_axis(tb, z))


def _cut(j: JointSpec, at) -> Cut:
    (i1, t1), (i2, t2) = at(j.first), at(j.second)
    if j.kind == "S":
        ex, ez = (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)
        return Cut(j.name, "S", _frame(i1, t1, j.point, ez, ex), _frame(i2, t2, j.point, ez, ex))
    x1 = perpendicular(j.axis)
    f1 = _frame(i1, t1, j.point, j.axis, x1)
    if j.kind == "U":
        return Cut(j.name, "U", f1, _frame(i2, t2, j.point, j.axis2, perpendicular(j.axis2)))
    return Cut(j.name, j.kind, f1, _frame(i2, t2, j.point, j.axis, x1))


def _springs(rd: _Reader, bodies: dict[str, BodySpec], at) -> list[Spring]:
    items = rd.data.get("springs", [])
    if not isinstance(items, list):
        raise ModelError(f"{rd.where('springs')}: expected a list of [[springs]] tables")
    out, seen = [], set()
    for i, t in enumerate(items):
        w = f"springs[{i}]"
        t = fields.keys(t, {"name", "bodies", "points", "stiffness", "damping", "length0",
                            "force"}, rd.where(w), {"name", "bodies", "points"})
        name = check_name(t["name"], rd.where(f"{w}.name"))
        if name in seen:
            raise ModelError(f"{rd.where(f'{w}.name')}: {name!r} declared twice")
        seen.add(name)
        pair, pts = t["bodies"], t["points"]
        if not (isinstance(pair, list) and len(pair) == 2
                and all(b == GROUND or b in bodies for b in pair)):
            raise ModelError(f"{rd.where(f'{w}.bodies')}: expected two declared body names "
                             f"(or ground), got {pair!r}")
        if not (isinstance(pts, list) and len(pts) == 2):
            raise ModelError(f"{rd.where(f'{w}.points')}: expected two points [[x, y, z], "
                             f"[x, y, z]]")
        a, b = (rd.vec(p, f"{w}.points[{k}]") for k, p in enumerate(pts))
        L_ref = num.norm(num.sub(b, a))
        if L_ref < 1e-9:
            raise ModelError(f"{rd.where(f'{w}.points')}: the two ends coincide at the reference "
                             f"pose (the direction of the force is undefined)")
        L0 = (rd.constant(t["length0"], f"{w}.length0") if "length0" in t else const(L_ref))
        (ia, ta), (ib, tb) = at(pair[0]), at(pair[1])
        out.append(Spring(name, ia, _local(ta, a), ib, _local(tb, b),
                          rd.constant(t.get("stiffness", 0), f"{w}.stiffness"),
                          rd.constant(t.get("damping", 0), f"{w}.damping"), L0,
                          rd.constant(t.get("force", 0), f"{w}.force", positive_ok_only=False)))
    return out


def _points(rd: _Reader, bodies: dict[str, BodySpec], at) -> list[Marker]:
    items = rd.data.get("points", [])
    if not isinstance(items, list):
        raise ModelError(f"{rd.where('points')}: expected a list of [[points]] tables")
    out, seen = [], set(bodies)
    for i, t in enumerate(items):
        w = f"points[{i}]"
        t = fields.keys(t, {"name", "body", "point"}, rd.where(w), {"name", "body", "point"})
        name = check_name(t["name"], rd.where(f"{w}.name"))
        if name in seen:
            raise ModelError(f"{rd.where(f'{w}.name')}: {name!r} is already a body or point")
        seen.add(name)
        if t["body"] not in bodies:
            raise ModelError(f"{rd.where(f'{w}.body')}: unknown body {t['body']!r}")
        idx, tb = at(t["body"])
        out.append(Marker(name, idx, _local(tb, rd.vec(t["point"], f"{w}.point"))))
    return out


def linkage_from_dict(data: dict, source: str) -> Linkage:
    """The parsed tables of a spec -> the analysed Linkage (ModelError naming file and field)."""
    from mechgen.generator.families.linkage.analysis import analyse

    rd = _Reader(data, source)
    fields.keys(data, {"mechanism", "parameters", "bodies", "joints", "springs", "points",
                       "closure"}, source)
    mech = fields.keys(data.get("mechanism"), {"name", "family", "gravity", "description"},
                       rd.where("mechanism"), {"name", "family"})
    name = check_name(mech["name"], rd.where("mechanism.name"))
    if mech["family"] != FAMILY:
        raise ModelError(f"{rd.where('mechanism.family')}: expected {FAMILY!r}")
    gravity = tuple(const(x) for x in rd.vec(mech.get("gravity", [0, 0, 0]),
                                             "mechanism.gravity"))
    _parameters(rd)
    model = build(rd, name, gravity)
    closure = fields.keys(data.get("closure", {}), {"independent", "rank_tolerance"},
                          rd.where("closure"))
    independent = closure.get("independent")
    if independent is not None:
        if not (isinstance(independent, list) and all(isinstance(c, str) for c in independent)):
            raise ModelError(f"{rd.where('closure.independent')}: expected a list of "
                             f"coordinate names")
        unknown = [c for c in independent if c not in model.coordinates]
        if unknown:
            raise ModelError(f"{rd.where('closure.independent')}: {unknown} are not tree "
                             f"coordinates (coordinates: {', '.join(model.coordinates)}; cut "
                             f"joints: {', '.join(c.joint for c in model.cuts) or 'none'})")
    tol = rd.number(closure.get("rank_tolerance", 1e-9), "closure.rank_tolerance")
    if not 0 < tol < 1e-2:
        raise ModelError(f"{rd.where('closure.rank_tolerance')}: expected 0 < tol < 0.01")
    return analyse(model, independent, tol)
