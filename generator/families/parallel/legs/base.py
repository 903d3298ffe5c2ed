"""What a leg type is: the one place the generator learns about a kind of leg.

Like spatial_v2's ``jcalc`` (one entry per joint type), a :class:`LegType` owns everything
the rest of the generator knows about one kind of leg of a parallel mechanism (paper 000,
sections 2-4; docs/algorithms.md section 1):

* its joints (name, kind R or P, axis x/y/z of the joint frame) from the base to the cut, and
  the body after each joint;
* its cut (m = 3: spherical, the point l_L of the last body on the point l_C of C; m = 4:
  universal, also e1 = gamma_L^T e_y _|_ e2 = gamma_C^T e_z) and its default drive;
* its own spec fields (besides name, type, base, platform, bodies, joints, limits, drive);
* its home frames: from the spec's numbers at the home pose, the constant joint placements
  (l, gamma), the cut point l_L in the last body and the last body's orientation at home,
  computed with :mod:`generator.numeric` (never numpy or libm: the constants are baked);
* its closed-form inverse kinematics (paper 000 section 4, eq. 4.7), symbolic (recorded into
  the ``inverse_kinematics`` and every kernel that needs q) and numeric (the coordinates at
  the home pose and the choice of branch), and the statuses that closed form can return.

Shared pieces: :mod:`.prismatic` (a stroke along the leg: UPS, SPU, UCU), :mod:`.crank` (a
crank and a rod: RUS, RSU). The helpers below are the parts every leg type shares: the vector
d from the first joint to the cut point, the U or S joint turned onto a vector (the "pivot"),
and the roll of a universal cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.algorithms import leg_ik
from mechgen.generator.model import ModelError
from mechgen.generator.numeric import M3, V3
from mechgen.generator.scalar import (Recorder, elementary_rotation, matvec,
                                      transpose)

if TYPE_CHECKING:                  # pragma: no cover - type hints only
    from mechgen.generator.families.parallel.platform import Leg, LegGeometry

# reasons a closed-form check fails (generator.platform_kernels turns them into status codes)
OUT_OF_REACH, SINGULAR = "out_of_reach", "singular"

Z0: V3 = (0.0, 0.0, 1.0)


class JointDef(NamedTuple):
    """One 1-DoF joint of a leg: its name, kind ("R" revolute, "P" prismatic) and axis (0, 1,
    2 = x, y, z of its joint frame)."""

    name: str
    kind: str
    axis: int


@dataclass(frozen=True)
class Field:
    """A leg type's own spec field: ``kind`` "positive" (a number > 0), "direction" (3
    numbers, not all zero), "rotation" (a 3x3 matrix or axis-angle list, as ``frame``);
    ``needs``: the field is required, and the error says "a <type> leg needs <needs>"."""

    kind: str
    needs: str | None = None


@dataclass(frozen=True)
class HomeFrames:
    """What a leg type computes from the spec at the home pose (numbers)."""

    ls: list[V3]           # joint j's origin in body j-1 (ls[0]: the base joint, frame 0)
    gammas: list[M3]       # body j-1 -> joint frame j
    l_L: V3                # the cut joint's centre in the last body's frame
    tau_home: M3           # frame 0 -> the last body at home, before any roll (gamma_C of a U cut)
    l_ref: float           # length scale of the singularity tests


class IKContext(Protocol):
    """What a closed form records into (generator.platform_kernels.PlatformBuild)."""

    rec: Recorder
    alpha_C: Any                    # frame 0 -> frame C, symbolic 3x3

    def leg_flag(self, j: int, reason: str) -> leg_ik.Flag: ...


@dataclass(frozen=True)
class LegType:
    """A kind of leg (see the module docstring). Subclasses are the families (prismatic,
    crank, ...); each leg type module makes one instance."""

    name: str
    joints: tuple[JointDef, ...]
    bodies: tuple[str, ...]          # the body after each joint (may stay massless)
    cut: int                         # m: 3 spherical cut, 4 universal cut
    drive: str                       # default drive joint
    pivot_kind: str                  # "universal" or "spherical": the joint that aims the leg
    family: str = ""

    FIELDS: ClassVar[dict[str, Field]] = {}
    PIVOT: ClassVar[int] = 1         # index of the pivot's second angle (its 90 deg check)

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    # --- to be given by a family ---------------------------------------------------------
    def frames(self, g: "LegGeometry", s_home: V3, where: str) -> HomeFrames:
        raise NotImplementedError

    def branch(self, leg: "Leg", home: tuple[float, ...]) -> int:
        """Which solution of a two-branch closed form (sigma = +-1); 1 when there is one."""
        return 1

    def home_coordinates(self, leg: "Leg", home: tuple[float, ...],
                         where: str) -> tuple[float, ...]:
        raise NotImplementedError

    def closed_form(self, ik: IKContext, leg: "Leg", d: list) -> tuple[list, list]:
        """(q, rotations) of the leg from d = gamma_0 (s - l_0) (frame of the first joint;
        s = r_C + alpha_C^T l_C the cut point): a rotation (leg_ik.Rotation) for each revolute
        joint, None for a prismatic one."""
        raise NotImplementedError

    def actuator_checks(self, leg: "Leg") -> list[tuple[int, str, str]]:
        return []

    def ik_checks(self, leg: "Leg") -> list[tuple[int, str, str]]:
        """(joint, reason, message after the leg and joint name) of every check of the closed
        form, in the order it makes them (generator.platform_kernels numbers them)."""
        j = self.PIVOT
        out = self.actuator_checks(leg)
        out.append((j, SINGULAR, f": {self.pivot_kind} joint at {self.joints[j].name} = +-90 "
                                 f"deg (singular)"))
        if self.cut == 4:
            out.append((j + 1, SINGULAR, ": cut universal joint axis along the leg (singular)"))
        return out


# --- numeric geometry ----------------------------------------------------------------------

def frame_from_x(x: V3, y_hint: V3) -> M3:
    """Rows = unit axes (parent coordinates) of a frame with x along ``x``, y near ``y_hint``.

    As a matrix it is the coordinate transform parent -> frame (a gamma).
    """
    x = num.normalize(x)
    y = num.reject(y_hint, x)
    if num.norm(y) < 1e-9:
        raise ValueError("the y direction is parallel to x")
    y = num.normalize(y)
    return (x, y, num.cross(x, y))


def cut_centre_at(home: tuple[float, ...], l_C: V3) -> V3:
    """s = r_C + alpha_C^T l_C: the cut joint's centre, frame 0, at the pose ``home``."""
    alpha = num.alpha_yzx(*home[3:6])
    return num.add(tuple(home[:3]), num.matvec(num.transpose(alpha), l_C))


def floats(M) -> M3:
    """A leg's (exact or Float) 3x3 entries as floats."""
    return num.mat([[float(x) for x in row] for row in M])


def first_joint_vector(leg: "Leg", home: tuple[float, ...]) -> tuple[V3, M3]:
    """(d, gamma_0): d = gamma_0 (s - l_0), the cut point seen from the first joint, at
    ``home``, from the leg's own (rounded) numbers, as the kernel sees them."""
    j0 = leg.chain.joints[0]
    G0 = floats(j0.gamma)
    s = cut_centre_at(home, num.vec(float(x) for x in leg.l_C))
    return num.matvec(G0, num.sub(s, num.vec(float(x) for x in j0.l))), G0


def fail_home(leg: "Leg", where: str, joint: int, what: str) -> ModelError:
    jn = leg.joint_names[joint]
    return ModelError(f"{where}: leg {leg.name}, joint {jn}: {what} at the home pose")


def clean(q: list[float]) -> tuple[float, ...]:
    return tuple(0.0 if abs(v) < 1e-14 else v for v in q)     # rounding noise of a zero


def pivot_num(leg: "Leg", where: str, d: V3, tau: M3, q: list[float], j: int,
              tol: float) -> M3:
    """The U or S joint's two angles turning x onto d (appended to q; j: the second one's
    index); returns the orientation after them (``tau``: before them)."""
    if num.norm((d[0], 0.0, d[2])) <= tol:
        raise fail_home(leg, where, j, "universal or spherical joint at 90 deg (singular)")
    p1, p2 = leg_ik.u_angles_num(d)
    q += [p1, p2]
    return num.matmul(num.elementary(2, p2), num.matmul(num.elementary(1, p1), tau))


def roll_num(leg: "Leg", where: str, home: tuple[float, ...], tau: M3, q: list[float]) -> None:
    """The roll of a universal cut (appended to q), ``tau`` the orientation before it."""
    alpha = num.alpha_yzx(*home[3:6])
    e2 = num.matvec(num.transpose(alpha), num.vec(float(x) for x in leg.gamma_C[2]))
    e = num.matvec(tau, e2)
    if num.norm((0.0, e[1], e[2])) <= leg_ik.TOL_SINGULAR:
        raise fail_home(leg, where, len(q), "cut universal joint axis along the leg "
                        "(singular)")
    q.append(leg_ik.roll_angle_num(e))


# --- symbolic closed forms -------------------------------------------------------------------

def angle(rec: Recorder, r: leg_ik.Rotation, name: str) -> sp.Expr:
    return rec.bind(sp.atan2(r.s, r.c), name)


def pivot(ik: IKContext, leg: "Leg", d, j: int, length: float | None = None):
    """(r1, r2, L) of the U or S joint turning x onto d (leg_ik.u_angles); j: the index of
    its second angle, whose status it returns at 90 deg; ``length``: |d| when it is the
    rod's fixed length (no square root for L)."""
    return leg_ik.u_angles(ik.rec, d, "u", leg.l_ref, ik.leg_flag(j, SINGULAR), length)


def roll(ik: IKContext, leg: "Leg", before_roll: list, q: list, cs: list) -> None:
    """A universal cut's roll (leg_ik.roll_angle), appended to q and cs; ``before_roll``: the
    rotations frame 0 -> the frame before the roll, last applied first."""
    rec = ik.rec
    # e2 in the frame before the roll: the rotations applied to C's axis one at a time
    e = rec.vec(matvec(transpose(ik.alpha_C), list(leg.gamma_C[2])), "e2_0")
    for i, M in enumerate(reversed(before_roll)):
        e = rec.vec(matvec(M, e), f"e2_r{i}")
    r3 = leg_ik.roll_angle(rec, e, "roll", ik.leg_flag(len(q), SINGULAR))
    cs.append(r3)
    q.append(angle(rec, r3, f"q{len(q) + 1}"))


def rotations_of(r1: leg_ik.Rotation, r2: leg_ik.Rotation) -> list:
    """A_z(p2) A_y(p1): the U or S joint's rotation, last applied first."""
    return [elementary_rotation(2, r2.c, r2.s), elementary_rotation(1, r1.c, r1.s)]
