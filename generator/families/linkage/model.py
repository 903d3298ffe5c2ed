"""The model of a closed-loop linkage: a spanning tree (a serial ``Chain``), its cut joints and
the constraint rows that close the loops (papers 001 and 004; docs/linkage.md).

Every quantity is given at the reference pose in frame 0 by the spec; spec.py turns it into
body-frame constants. Tree body j's frame is the frame of its joint at the reference pose, so a
cut joint's frames, a spring's ends and a named point are constant vectors in a tree body.

Constraint rows of a cut joint between frame 1 (on body ``frame1.body``) and frame 2 (point o,
axes x, y, z, world coordinates moved with their bodies), as in docs/linkage.md:

    S: o2 - o1              U: o2 - o1, z1.z2           R: o2 - o1, x1.z2, y1.z2
    C: d.x1, d.y1, x1.z2, y1.z2 (d = o2 - o1)           P: as C, and x1.y2

A screw joint in the tree adds the linear row ``s - h r`` between its two coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy as sp

from mechgen.generator.model import Chain, prefixed_parameters

Vec3 = tuple[sp.Expr, sp.Expr, sp.Expr]

CUT_ROWS = {
    "S": ("dx", "dy", "dz"),
    "U": ("dx", "dy", "dz", "z1.z2"),
    "R": ("dx", "dy", "dz", "x1.z2", "y1.z2"),
    "C": ("d.x1", "d.y1", "x1.z2", "y1.z2"),
    "P": ("d.x1", "d.y1", "x1.z2", "y1.z2", "x1.y2"),
}
# rows whose sign tells a closure on the wrong branch (Pavlov's diagonal conditions): a cut
# R, C or P joint closes with z2 = -z1 too; a P joint also with x2 = -x1
ORIENTATION_CHECKS = {"R": ("z1.z2",), "C": ("z1.z2",), "P": ("z1.z2", "x1.x2")}


@dataclass(frozen=True)
class Frame:
    """A frame fixed in tree body ``body`` (0 = ground): origin ``o`` and axes, body frame."""

    body: int
    o: Vec3
    x: Vec3
    y: Vec3
    z: Vec3


@dataclass(frozen=True)
class Cut:
    joint: str
    kind: str              # S, U, R, C or P
    frame1: Frame          # on the joint's first body
    frame2: Frame          # on its second body

    @property
    def rows(self) -> tuple[str, ...]:
        return CUT_ROWS[self.kind]


@dataclass(frozen=True)
class Screw:
    joint: str
    s: int                 # coordinate index of the slide
    r: int                 # coordinate index of the turn
    h: sp.Expr             # slide per radian


@dataclass(frozen=True)
class JointSpring:
    """Q_i = -k (q_i - q0) - c qd_i on tree coordinate i."""

    coordinate: int
    k: sp.Expr
    c: sp.Expr
    q0: sp.Expr


@dataclass(frozen=True)
class Spring:
    """Point-to-point spring-damper-actuator: tension k (L - L0) + c Ldot - F0."""

    name: str
    body_a: int
    a: Vec3                # end on body a, body frame
    body_b: int
    b: Vec3
    k: sp.Expr
    c: sp.Expr
    L0: sp.Expr
    F0: sp.Expr


@dataclass(frozen=True)
class Marker:
    """A named point (or a declared body's centre of mass) fixed in tree body ``body``."""

    name: str
    body: int
    offset: Vec3
    # the tree body's frame at the reference pose (frame 0 -> body, rows = its axes)
    tau_ref: tuple = ((1, 0, 0), (0, 1, 0), (0, 0, 1))


@dataclass(frozen=True)
class Closure:
    """What generation-time analysis decided (analysis.py): the structural rows, their rank,
    the rows kept, the independent and dependent coordinates."""

    rows: tuple[str, ...]           # labels of the structurally non-zero constraint rows
    rank: int
    kept: tuple[int, ...]           # indices into rows: r independent rows
    independent: tuple[int, ...]    # coordinate indices (f = n - r)
    dependent: tuple[int, ...]      # coordinate indices (r)
    branch_sign: int                # sign of det G_KD at the reference pose
    notes: tuple[str, ...] = ()
    ranks: tuple[int, ...] = ()     # rank at each analysed pose (the reference pose first)
    column_scale: tuple[float, ...] = ()   # |column of G| at a generic pose (pivot tolerances)
    sample: tuple[float, ...] = ()  # q at that generic pose (pivot order of the unrolled LU)

    @property
    def dropped(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.rows)) if i not in self.kept)


@dataclass
class Linkage:
    name: str
    chain: Chain                        # the spanning tree (joint coordinates = q)
    q_ref: tuple[sp.Expr, ...]          # coordinate value at the reference pose
    cuts: list[Cut]
    screws: list[Screw]
    joint_springs: list[JointSpring]
    springs: list[Spring]
    points: list[Marker]                # named points
    bodies: list[Marker]                # declared bodies: their centres of mass
    joint_types: dict[str, str]         # spec joint -> type
    tree_joints: list[str]              # spec joints in the tree (their coordinates are q)
    source: str = "<python>"
    defaults: dict[str, float] = field(default_factory=dict)
    parameter_symbols: tuple[sp.Symbol, ...] = ()
    closure: Closure | None = None
    body_names: list[str] = field(default_factory=list)   # tree body j -> its name (j >= 1)

    @property
    def n(self) -> int:
        return self.chain.n

    @property
    def coordinates(self) -> list[str]:
        return self.chain.coordinates

    @property
    def parameters(self) -> list[sp.Symbol]:
        return list(self.parameter_symbols)

    def with_prefixed_parameters(self) -> "Linkage":
        """Parameter ``x`` renamed ``p_x`` in every force element (the generated names)."""
        taken = {f"p_{c}": f"coordinate {c!r}" for c in self.coordinates}
        m = prefixed_parameters(self.parameters, taken, self.source)
        if not m:
            return self

        def sub(e: sp.Expr) -> sp.Expr:
            return sp.sympify(e).xreplace(m)

        return replace(
            self,
            joint_springs=[replace(s, k=sub(s.k), c=sub(s.c), q0=sub(s.q0))
                           for s in self.joint_springs],
            springs=[replace(s, k=sub(s.k), c=sub(s.c), L0=sub(s.L0), F0=sub(s.F0))
                     for s in self.springs],
            parameter_symbols=tuple(m[s] for s in self.parameter_symbols))
