"""The mechanism database: bodies, 1-DoF joints, composite joints, serial chains.

Notation of docs/algorithms.md section 1-2 (paper 003). Joint ``J_j`` joins body ``B_{j-1}`` to body
``B_j``. In ``B_{j-1}`` the joint frame sits at the constant vector ``l`` with the constant
rotation ``gamma`` (a coordinate transform: body frame -> joint frame). The joint moves frame
``j`` relative to the joint frame: revolute ``alpha = A_axis(q)``, or prismatic
``t = q e_axis``. Body ``B_j`` has mass ``m``, centre of mass ``d`` and inertia ``I`` about its
origin ``O_j``, both in frame ``j``.

Every parameter is a SymPy expression: a number (baked into the kernels, so zeros and ones of the
geometry prune away) or a real symbol named in the spec (a kernel input, element of ``p``).

Composite joints are split into 1-DoF joints joined by fictitious bodies (mass, centre and
inertia all zero): U = two rotations, S = three rotations, C = rotation about and slide along one
axis. A free-flying base is the composite of three slides (x, y, z) and three rotations in the
paper's y-z-x sequence, so ``alpha = A_x A_z A_y`` and the spacecraft is the body after them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.backends import reserved_words
from mechgen.generator.ir import symbol
from mechgen.generator.scalar import elementary_rotation, fold_constant

AXES = "xyz"

Vec3 = tuple[sp.Expr, sp.Expr, sp.Expr]
Mat3 = tuple[Vec3, Vec3, Vec3]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
# names the generated code or its templates use; a spec may not take them: every backend's
# keywords and generated names (mechgen.generator.backends), and the runtime's and the ports'
RESERVED = set(reserved_words()) | {"self", "p", "q", "qd", "qdd", "Q", "g", "np"}


class ModelError(ValueError):
    """A mechanism description is invalid; the message names where."""


def check_name(name: object, where: str) -> str:
    """Names reach generated code and file names: identifiers only, no reserved words."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ModelError(f"{where}: {name!r} is not a valid name "
                         f"(a letter, then letters, digits or '_', at most 63 characters)")
    if name in RESERVED:
        raise ModelError(f"{where}: {name!r} is a reserved word")
    return name


PARAMETER_PREFIX = "p_"   # a spec parameter x is the identifier p_x in the generated code


def prefixed_parameters(parameters: list[sp.Symbol], taken: dict[str, str],
                        where: str) -> dict[sp.Symbol, sp.Symbol]:
    """``{x: p_x}`` for every parameter; ``taken`` maps the other names the generated code
    gives to spec names (e.g. a leg coordinate ``<leg>_<joint>``) to what they are. A
    parameter whose ``p_x`` is taken is refused naming both (leg ``p_k``, joint ``u1`` and
    parameter ``k_u1`` would both be ``p_k_u1``)."""
    out = {}
    for s in parameters:
        name = f"{PARAMETER_PREFIX}{s.name}"
        if name in taken:
            raise ModelError(f"{where}: parameter {s.name!r} and {taken[name]} would both be "
                             f"named {name!r} in the generated code; rename one of them")
        out[s] = symbol(name)
    return out


def identity3() -> Mat3:
    one, zero = sp.Integer(1), sp.Integer(0)
    return ((one, zero, zero), (zero, one, zero), (zero, zero, one))


def zero3() -> Vec3:
    return (sp.Integer(0),) * 3


@dataclass(frozen=True)
class Body:
    name: str
    m: sp.Expr
    d: Vec3          # centre of mass in the body frame
    I: Mat3          # inertia about the body origin O_j, in the body frame
    # body frame -> the frame reported by forward kinematics (a URDF link frame whose joint
    # axis was turned onto x, y or z); the identity for bodies described in our own specs
    frame: Mat3 = field(default_factory=lambda: identity3())

    @property
    def fictitious(self) -> bool:
        return self.m == 0 and all(x == 0 for x in self.d) and all(
            x == 0 for row in self.I for x in row)

    @property
    def c(self) -> Vec3:
        """First moment c = m d."""
        return tuple(self.m * x for x in self.d)


def fictitious_body(name: str) -> Body:
    z = sp.Integer(0)
    return Body(name, z, zero3(), ((z, z, z),) * 3)


def inertia_about_origin(m: sp.Expr, d: Vec3, I_com: Mat3) -> Mat3:
    """Parallel-axis theorem: I_O = I_G + m (d^T d 1 - d d^T)."""
    dd = sum(x * x for x in d)
    return tuple(tuple(sp.expand(I_com[i][j] + m * ((dd if i == j else 0) - d[i] * d[j]))
                       for j in range(3)) for i in range(3))


@dataclass(frozen=True)
class Joint:
    name: str          # also the name of its coordinate
    kind: str          # "R" revolute or "P" prismatic
    axis: int          # 0, 1, 2 for x, y, z
    l: Vec3            # joint frame origin in the parent body frame
    gamma: Mat3        # parent body frame -> joint frame
    stiffness: sp.Expr = sp.Integer(0)   # passive law Q = -k (q - q0) - c qd (+ drive)
    damping: sp.Expr = sp.Integer(0)
    q0: sp.Expr = sp.Integer(0)
    # a rotation about an axis of the body it moves, always at angle 0, whose rate is that
    # body's angular velocity component (the quaternion base): no omega_parent x omega_rel term
    quasi: bool = False
    # a quasi rotation of the body-twist base (base_velocity = "body"): the slides before it
    # run along the base's own axes, which it turns, so it adds omega_rel x v (v: the velocity
    # of its origin) to the acceleration of that origin (docs/algorithms.md section 2.6)
    twist: bool = False

    @property
    def label(self) -> str:
        return f"{self.kind}{AXES[self.axis]}"


@dataclass(frozen=True)
class Point:
    """A point fixed in a body (a tool centre, a marker) whose Jacobian is generated."""

    name: str
    body: int      # index into Chain.bodies (1-based body number j)
    offset: Vec3   # in the body frame
    rotation: Mat3 = field(default_factory=lambda: identity3())  # body frame -> point frame


@dataclass
class Chain:
    """A serial chain or a kinematic tree: joint j (1..n) joins body ``parent[j-1]`` (body 0
    is the fixed frame) to body j. A serial chain has ``parent[j-1] = j-1`` (the default when
    ``parent`` is left empty); in a tree several joints share a parent, and always
    ``parent[j-1] < j`` (bodies are numbered depth first), so every recursion runs in index order.

    ``bodies[j-1]`` is body j. ``named_bodies`` lists the bodies the user declared (not the
    fictitious ones made by splitting composite joints), as (name, j).
    """

    name: str
    joints: list[Joint]
    bodies: list[Body]
    gravity: Vec3
    base: str = "fixed"                  # "fixed" or "free"
    named_bodies: list[tuple[str, int]] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    source: str = "<python>"
    parent: list[int] = field(default_factory=list)
    defaults: dict[str, float] = field(default_factory=dict)   # parameter default values
    attitude: str = "euler"              # free base: "euler" (y-z-x angles) or "quaternion"
    # also generate the dynamics' derivatives ([kernels]): True (along q as given) or
    # "tangent" (a quaternion base along Pinocchio's tangent space: DERIVATIVES)
    derivatives: bool | str = False
    regressor: bool = False              # also the inertial-parameter regressor ([kernels])
    # quaternion base: its velocities are v in frame 0 ("frame0") or the body twist
    # (v, omega) in the base frame ("body", Pinocchio's free flyer)
    base_velocity: str = "frame0"

    def __post_init__(self) -> None:
        if not self.parent:
            self.parent = list(range(len(self.joints)))

    @property
    def n(self) -> int:
        return len(self.joints)

    @property
    def is_tree(self) -> bool:
        return self.parent != list(range(self.n))

    def children(self, j: int) -> list[int]:
        """Bodies whose joint hangs on body j (0 = the base)."""
        return [k for k in range(1, self.n + 1) if self.parent[k - 1] == j]

    def ancestors(self, j: int) -> list[int]:
        """Bodies on the path from body j (included) down to the base (excluded)."""
        out = []
        while j > 0:
            out.append(j)
            j = self.parent[j - 1]
        return out

    @property
    def coordinates(self) -> list[str]:
        """One per joint: the velocity coordinates (qd, qdd, Q, rows of A)."""
        return [j.name for j in self.joints]

    @property
    def q_names(self) -> list[str]:
        """The position coordinates q: the joint coordinates, except that a quaternion base
        has x, y, z and the quaternion w, x, y, z instead of its six joints."""
        if self.attitude != "quaternion":
            return self.coordinates
        return [*self.coordinates[:3], *QUATERNION_NAMES, *self.coordinates[6:]]

    @property
    def nq(self) -> int:
        return len(self.q_names)

    @property
    def parameters(self) -> list[sp.Symbol]:
        """Named parameters of the spec, sorted by name: the kernel input ``p``."""
        syms: set[sp.Symbol] = set()
        for j in self.joints:
            for e in (*j.l, *[x for row in j.gamma for x in row], j.stiffness, j.damping, j.q0):
                syms |= sp.sympify(e).free_symbols
        for b in self.bodies:
            for e in (b.m, *b.d, *[x for row in b.I for x in row]):
                syms |= sp.sympify(e).free_symbols
        for e in self.gravity:
            syms |= sp.sympify(e).free_symbols
        for pt in self.points:
            for e in pt.offset:
                syms |= sp.sympify(e).free_symbols
        return sorted(syms, key=lambda s: s.name)

    def with_prefixed_parameters(self) -> "Chain":
        """The same chain with every parameter symbol ``x`` renamed ``p_x``.

        Generated code names parameters ``p_<name>``, so a spec's names can never clash with
        the kernels' own identifiers (inputs q1.., outputs A, b, tau.., C macros like NAN).
        """
        m = prefixed_parameters(self.parameters, {}, self.source)   # coordinates are q1..qn
        if not m:
            return self
        ex = lambda e: sp.sympify(e).xreplace(m)
        v3 = lambda v: tuple(ex(x) for x in v)
        m3 = lambda M: tuple(v3(row) for row in M)
        joints = [replace(j, l=v3(j.l), gamma=m3(j.gamma), stiffness=ex(j.stiffness),
                          damping=ex(j.damping), q0=ex(j.q0)) for j in self.joints]
        bodies = [replace(b, m=ex(b.m), d=v3(b.d), I=m3(b.I)) for b in self.bodies]
        points = [replace(p, offset=v3(p.offset)) for p in self.points]
        return replace(self, joints=joints, bodies=bodies, points=points,
                       gravity=v3(self.gravity))

    def validate(self) -> None:
        where = self.source
        check_name(self.name, f"{where}: mechanism.name")
        if self.n == 0:
            raise ModelError(f"{where}: the chain has no joint")
        if self.base not in ("fixed", "free"):
            raise ModelError(f"{where}: base must be 'fixed' or 'free', not {self.base!r}")
        if self.attitude not in ATTITUDES or (self.attitude == "quaternion"
                                              and self.base != "free"):
            raise ModelError(f"{where}: mechanism.attitude: expected one of {ATTITUDES} (the "
                             f"quaternion only with base = 'free'), got {self.attitude!r}")
        if self.base_velocity not in BASE_VELOCITIES or (self.base_velocity == "body" and (
                self.base != "free" or self.attitude != "quaternion")):
            raise ModelError(f"{where}: mechanism.base_velocity: expected one of "
                             f"{BASE_VELOCITIES} ('body' only with base = 'free' and attitude "
                             f"= 'quaternion'), got {self.base_velocity!r}")
        if self.derivatives not in DERIVATIVES:
            raise ModelError(f"{where}: kernels.derivatives: expected true, false or "
                             f"'tangent', got {self.derivatives!r}")
        seen: set[str] = set()
        for j in self.joints:
            if j.name in seen:
                raise ModelError(f"{where}: joint name {j.name!r} used twice")
            seen.add(j.name)
        names = [nb[0] for nb in self.named_bodies] + [pt.name for pt in self.points]
        for nm in names:
            if names.count(nm) > 1:
                raise ModelError(f"{where}: body/point name {nm!r} used twice")
        if len(self.parent) != self.n or any(
                not isinstance(p, int) or not 0 <= p < j for j, p in enumerate(self.parent, 1)):
            raise ModelError(f"{where}: parent list {self.parent!r} must give each joint j a "
                             f"parent body numbered below j")
        for j in range(1, self.n + 1):
            if not self.children(j) and self.bodies[j - 1].fictitious:
                raise ModelError(
                    f"{where}: body {self.bodies[j - 1].name!r} (body {j}, moved by joint "
                    f"{self.joints[j - 1].name!r}) ends a branch and is massless, so the mass "
                    f"matrix is singular; give it a mass and inertia (for a URDF: lock the "
                    f"joint in the spec's [lock] table, e.g. {self.joints[j - 1].name} = 0.0, "
                    f"so that the body merges into its parent)")
        for s in self.parameters:
            check_name(s.name, f"{where}: parameter")
            if s.name in seen or s.name in names:
                raise ModelError(f"{where}: parameter {s.name!r} clashes with a joint or body name")
        unused = sorted(set(self.defaults) - {s.name for s in self.parameters})
        if unused:
            raise ModelError(f"{where}: parameters: {unused} given a default but not used by the "
                             f"mechanism")


# --- rotations given as sequences of elementary rotations --------------------------------

def elementary(axis: int, angle: sp.Expr) -> Mat3:
    """A_x, A_y, A_z of docs/algorithms.md (coordinate transforms)."""
    return tuple(tuple(row) for row in elementary_rotation(axis, sp.cos(angle), sp.sin(angle)))


def compose(first: Mat3, second: Mat3) -> Mat3:
    """Rotate by ``first`` then about the new axes by ``second``: second @ first."""
    return tuple(tuple(sp.expand(sum(second[i][k] * first[k][j] for k in range(3)))
                       for j in range(3)) for i in range(3))


MAX_SYMBOLIC_SEQUENCE = 12   # rotations in a sequence with a parameter angle (expansion cost)


def _numeric_elementary(axis: int, angle: sp.Expr) -> num.M3:
    """A_axis of a numeric angle as floats: exact 0/+-1 for a multiple of 90 degrees, else the
    cosine and sine of the exact angle (``pi * deg / 180`` of the degrees as written), each
    rounded once to the nearest double by fold_constant, as a single rotation always was."""
    quarters = 2 * angle / sp.pi
    if quarters.is_Integer:
        c, s = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][int(quarters) % 4]
    else:
        c, s = _real(sp.cos(angle), angle), _real(sp.sin(angle), angle)
    return num.mat(elementary_rotation(axis, c, s, 1.0, 0.0))


def _real(e: sp.Expr, angle: sp.Expr) -> float:
    """A numeric constant as the nearest double, or a ModelError naming the angle."""
    try:
        x = float(fold_constant(e))
    except (TypeError, ValueError):
        raise ModelError(f"rotation angle {angle} is not a real number") from None
    if not math.isfinite(x):
        raise ModelError(f"rotation angle {angle} is not finite")
    return x


def _exprs(M: num.M3) -> Mat3:
    """Floats -> SymPy: integers and +-1/2 (sin 30 deg) exact as before, others as 17-digit
    Floats (what fold_constant makes of an irrational constant)."""
    return tuple(tuple(sp.Rational(int(2 * x), 2) if 2 * x == int(2 * x) else sp.Float(x, 17)
                       for x in row) for row in M)


def rotation_from_sequence(seq: list[tuple[int, sp.Expr]]) -> Mat3:
    """The product of elementary rotations (the first applied first).

    Runs of numeric angles are multiplied numerically (deterministic: mpmath at 160 bits, see
    :mod:`generator.numeric`), so any number of them costs little and quarter turns stay exact
    0/+-1; rotations by parameter angles are multiplied symbolically, at most
    ``MAX_SYMBOLIC_SEQUENCE`` rotations in such a sequence (the expansion grows exponentially).
    """
    seq = [(axis, sp.sympify(angle)) for axis, angle in seq]
    if len(seq) > MAX_SYMBOLIC_SEQUENCE and not all(a.is_number for _, a in seq):
        raise ModelError(f"a rotation sequence with a parameter angle may have at most "
                         f"{MAX_SYMBOLIC_SEQUENCE} rotations, got {len(seq)}; combine the numeric "
                         f"ones into a 3x3 matrix or fewer rotations")
    R, run = identity3(), num.identity()
    for axis, angle in seq:
        if angle.is_number:
            run = num.matmul(_numeric_elementary(axis, angle), run)
            continue
        if run != num.identity():
            R, run = compose(R, _exprs(run)), num.identity()
        R = compose(R, elementary(axis, angle))
    if run != num.identity():
        R = compose(R, _exprs(run))
    return tuple(tuple(fold_constant(x) for x in row) for row in R)


# --- the composite joints ----------------------------------------------------------------

COMPOSITE_AXES = {"U": "yz", "S": "xyz", "C": "x"}


def split_composite(kind: str, axes: str, name: str, l: Vec3, gamma: Mat3,
                    body: Body) -> list[tuple[Joint, Body]]:
    """U, S, C (and the free-flying base) as 1-DoF joints joined by fictitious bodies."""
    if kind == "C":
        parts = [("R", axes[0]), ("P", axes[0])]
    else:
        parts = [("R", a) for a in axes]
    out = []
    for i, (k, a) in enumerate(parts):
        first = i == 0
        last = i == len(parts) - 1
        jn = f"{name}_{i + 1}"
        j = Joint(jn, k, AXES.index(a), l if first else zero3(), gamma if first else identity3())
        out.append((j, body if last else fictitious_body(f"{jn}_body")))
    return out


ATTITUDES = ("euler", "quaternion")
DERIVATIVES = (False, True, "tangent")
"""``[kernels] derivatives``: none; along the input q as given (a quaternion base's columns x,
y, z, qw, qx, qy, qz); or ``"tangent"``: a quaternion base's seven columns replaced by six
along Pinocchio's tangent space (the base displaced by a small twist in its own frame, linear
then angular, as ``pinocchio.integrate``; families/serial/derivatives.py), so dID/dq and dFD/dq
are n x n. They are Pinocchio's computeRNEADerivatives / computeABADerivatives only with
``base_velocity = "body"`` (Pinocchio's v held fixed); the frame-0 quaternion base holds its
own rates. On any other base the coordinates are their own tangent space and "tangent" gives
the derivatives of True."""
BASE_VELOCITIES = ("frame0", "body")
QUATERNION_NAMES = ("base_qw", "base_qx", "base_qy", "base_qz")


def free_base_joints(spacecraft: Body, attitude: str = "euler",
                     base_velocity: str = "frame0") -> list[tuple[Joint, Body]]:
    """Three slides along x, y, z of frame 0, then three rotations.

    ``euler``: rotations y, z, x (the paper's sequence) by the angles psi_y, psi_z, psi_x,
    whose rates are the velocities (singular at psi_z = +-90 deg).
    ``quaternion``: rotations about the spacecraft's own x, y, z axes, always at angle 0; the
    attitude comes from a unit quaternion in q (kernels.py turns the first rotation's frame by
    it) and the velocities are the body-frame angular velocity omega_x, omega_y, omega_z.
    No singularity.
    ``quaternion`` with ``base_velocity = "body"`` (Pinocchio's free flyer): the slides run
    along the spacecraft's own axes at displacement 0 (kernels.py turns the first slide's frame
    by the attitude and places it at x, y, z), so the velocities are the body twist
    (v_body, omega_body); the rotations are marked ``twist``: they turn the slides' axes."""
    out = []
    for a in "xyz":
        out.append((Joint(f"base_{a}", "P", AXES.index(a), zero3(), identity3()),
                    fictitious_body(f"base_{a}_body")))
    if attitude == "quaternion":
        for a in "xyz":
            out.append((Joint(f"base_w{a}", "R", AXES.index(a), zero3(), identity3(),
                              quasi=True, twist=base_velocity == "body"),
                        fictitious_body(f"base_w{a}_body")))
    else:
        for a in "yzx":
            out.append((Joint(f"base_r{a}", "R", AXES.index(a), zero3(), identity3()),
                        fictitious_body(f"base_r{a}_body")))
    out[-1] = (out[-1][0], spacecraft)
    return out


def as_expr(value: object, where: str) -> sp.Expr:
    """A spec value: an int/float number (exact rational of its decimal text) or a name.

    Numbers must be finite, real and at most ``MAX_MAGNITUDE`` in size: constants built from
    them (m d^2, products of lengths) must stay finite as doubles in the generated code."""
    if isinstance(value, bool):
        raise ModelError(f"{where}: expected a number or a parameter name, got {value!r}")
    if isinstance(value, int):
        return _bounded(sp.Integer(value), value, where)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ModelError(f"{where}: {value!r} is not a finite number")
        return _bounded(sp.Rational(repr(value)), value, where)
    if isinstance(value, str):
        return symbol(check_name(value, where))
    if isinstance(value, sp.Expr):
        if value.is_number:
            if value.is_extended_real is not True or value.is_finite is not True:
                raise ModelError(f"{where}: {value} is not a finite real number")
            return _bounded(value, value, where)
        return value
    raise ModelError(f"{where}: expected a number or a parameter name, got {value!r}")


MAX_MAGNITUDE = 1e150
_MAX_EXACT = sp.Integer(10) ** 150      # the same bound for exact numbers (1e150 itself passes)


def finite_number(x: object, where: str) -> float:
    """A spec number as a float: an int or a float, finite, of magnitude at most
    ``MAX_MAGNITUDE``; anything else is a ModelError naming ``where``."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        raise ModelError(f"{where}: expected a number, got {x!r}")
    try:
        v = float(x)
    except OverflowError:
        raise ModelError(f"{where}: {x} is too large") from None
    if v != v or abs(v) > MAX_MAGNITUDE:
        raise ModelError(f"{where}: {x!r} is not a finite number of magnitude at most "
                         f"{MAX_MAGNITUDE:g}")
    return v


def _bounded(e: sp.Expr, shown: object, where: str) -> sp.Expr:
    """``e`` when |e| <= MAX_MAGNITUDE, else a ModelError naming ``where``."""
    if abs(e) > _MAX_EXACT:
        text = str(shown)
        text = text if len(text) <= 30 else f"{text[:12]}...({len(text)} digits)"
        raise ModelError(f"{where}: {text} is too large (at most {MAX_MAGNITUDE:g} in "
                         f"magnitude, so that the constants built from it stay finite)")
    return e
