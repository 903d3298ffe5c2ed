"""PUS leg (machining hexapods, "hexaglide"): a slider driven along a fixed rail on the base, a
universal joint on the slider (u1 about y, u2 about z), a rod of fixed length, a spherical
joint on C (cut, m = 3).

Spec fields: ``rail`` (required: the rail's direction, frame 0) and ``rod`` (the rod's length;
by default the home distance from ``base`` to the platform joint, so the slide is 0 at home).
``base`` is the universal joint's centre at slide 0; the slide q moves it to base + q rail.

Frames (numbers at the home pose): the slide's joint frame has x along the rail and y = z0 x
rail normalised (a vertical rail: y tangent to the base circle, z0 x [b_x, b_y, 0]; a base
on the z axis: y from [0, 1, 0]); the slider's frame is that frame slid by q. The universal
joint's frame sits at the slider's origin with x along the rod at home and y the slider's y
made perpendicular to the rod (the slider's z if the rod is within 2.6 deg of that y). The
rod's frame has x along the rod, the cut joint at [rod, 0, 0]; at home u1 = u2 = 0.

Closed form, in the manner of paper 000 section 4 (eq. 4.7; sines and cosines from square
roots): with d = [dx, dy, dz] the platform joint in the slide's joint frame, the rod of length
b reaches it from the slider at [q, 0, 0] when (dx - q)^2 + dy^2 + dz^2 = b^2:

    w = sigma sqrt(b^2 - dy^2 - dz^2),    q = dx - w

(sigma = +-1 fixed at generation: the solution nearest 0 at home). b^2 < dy^2 + dz^2: the rail
passes farther than the rod from the platform joint (out of reach); w = 0: the rod is
perpendicular to the rail, the slide's leg singularity (dq/ds unbounded; at the home pose the
spec is refused within HOME_MARGIN of it, above the rounding of w^2). Then the pivot turns
the universal joint's x onto gamma_1 [w, dy, dz], the rod in the slider's frame (leg_ik.u_angles).
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.algorithms import leg_ik
from mechgen.generator.model import ModelError
from mechgen.generator.scalar import matvec

from .base import (OUT_OF_REACH, SINGULAR, Z0, Field, HomeFrames, LegType, angle, clean,
                   fail_home, first_joint_vector, floats, frame_from_x, pivot, pivot_num, roll,
                   roll_num, rotations_of)
from .base import JointDef as J


HOME_MARGIN = 1e-6      # the rod within 1e-6 rad of perpendicular to its rail at home: refused


def slide_solutions_num(d: tuple[float, float, float], b: float) -> dict[int, float] | None:
    """Both slides q = dx - sigma sqrt(b^2 - dy^2 - dz^2) (None: out of reach)."""
    w2 = b * b - d[1] * d[1] - d[2] * d[2]
    if w2 < 0:
        return None
    w = num.sqrt(w2)
    return {s: d[0] - s * w for s in (1, -1)}


def _nearest(sols: dict[int, float]) -> int:
    return min(sols, key=lambda s: (abs(sols[s]), -s))


class RailLeg(LegType):
    FIELDS = {"rail": Field("direction", needs="the rail direction"), "rod": Field("positive")}
    PIVOT = 2

    def frames(self, g, s_home, where) -> HomeFrames:
        rail = num.normalize(g.options["rail"])
        hint = num.cross(Z0, rail)
        if num.norm(hint) < 1e-9:
            radial = (g.base[0], g.base[1], 0.0)
            hint = num.cross(Z0, radial) if num.norm(radial) > 1e-9 else (0.0, 1.0, 0.0)
        G0 = frame_from_x(rail, hint)                     # x = rail
        d = num.matvec(G0, num.sub(s_home, g.base))
        dist = num.norm(d)
        b = g.options.get("rod", dist)
        size = max(b, dist)
        if size < 1e-12 or b <= 1e-9 * size:
            raise ModelError(f"{where}.rod: {b:.6g} m is negligible (the base joint is "
                             f"{dist:.6g} m from the platform joint at the home pose)")
        # w^2 = b^2 - dy^2 - dz^2 carries rounding of ~eps b^2, so w of ~sqrt(eps) b: at home
        # a margin well above that tells a singular or unreachable leg from a regular one
        w2, margin = b * b - d[1] * d[1] - d[2] * d[2], (HOME_MARGIN * b) ** 2
        if w2 < -margin:
            raise ModelError(f"{where}.rod: {b:.6g} m cannot reach the platform joint from the "
                             f"rail at the home pose (the rail passes "
                             f"{num.norm((0.0, d[1], d[2])):.6g} m from it)")
        if w2 <= margin:
            raise ModelError(f"{where}: leg {g.name}, joint {self.joints[0].name}: rod "
                             f"perpendicular to the rail (singular) at the home pose")
        sols = slide_solutions_num(d, b)
        rod_c = num.sub(d, (sols[_nearest(sols)], 0.0, 0.0))      # the rod, slider frame
        G1 = frame_from_x(rod_c, (0.0, 1.0, 0.0) if abs(rod_c[1]) < 0.999 * b
                          else (0.0, 0.0, 1.0))
        n = len(self.joints)
        return HomeFrames([g.base] + [(0.0, 0.0, 0.0)] * (n - 1),
                          [G0, G1] + [num.identity()] * (n - 2), (b, 0.0, 0.0),
                          num.matmul(G1, G0), b)

    def branch(self, leg, home) -> int:
        """The slide solution (sigma) nearest 0 at home."""
        d, _ = first_joint_vector(leg, home)
        sols = slide_solutions_num(d, float(leg.l_L[0]))
        if sols is None:
            raise ModelError(f"{leg.chain.source}: leg {leg.name}: the home pose is out of reach "
                             f"(rod {float(leg.l_L[0])} m)")
        return _nearest(sols)

    def home_coordinates(self, leg, home, where) -> tuple[float, ...]:
        d, G0 = first_joint_vector(leg, home)
        tol = leg_ik.TOL_SINGULAR * leg.l_ref
        b = float(leg.l_L[0])
        sols = slide_solutions_num(d, b)
        if sols is None:
            raise fail_home(leg, where, 0, f"out of reach (rod {b:.6g} m)")
        if b * b - d[1] * d[1] - d[2] * d[2] <= tol * tol:
            raise fail_home(leg, where, 0, "rod perpendicular to the rail (singular)")
        q = [sols[leg.branch]]
        G1 = floats(leg.chain.joints[1].gamma)
        e_s = num.matvec(G1, (d[0] - q[0], d[1], d[2]))          # the rod, joint frame of u1
        tau = pivot_num(leg, where, e_s, num.matmul(G1, G0), q, self.PIVOT, tol)
        if self.cut == 4:
            roll_num(leg, where, home, tau, q)
        return clean(q)

    def actuator_checks(self, leg) -> list[tuple[int, str, str]]:
        return [(0, OUT_OF_REACH, f": pose out of reach (rod {float(leg.l_L[0]):g} m cannot "
                                  f"meet the platform joint from the rail)"),
                (0, SINGULAR, ": rod perpendicular to the rail (singular)")]

    def closed_form(self, ik, leg, d) -> tuple[list, list]:
        rec = ik.rec
        b = leg.l_L[0]
        far, flat = ik.leg_flag(0, OUT_OF_REACH), ik.leg_flag(0, SINGULAR)
        w2 = rec.bind(b * b - d[1] * d[1] - d[2] * d[2], "slide_w2")
        rec.require_positive(w2, far.code, far.message)
        rec.require_positive(w2 - (leg_ik.TOL_SINGULAR * leg.l_ref) ** 2, flat.code, flat.message)
        w = rec.bind(leg.branch * sp.sqrt(w2), "slide_w")
        q, cs = [rec.bind(d[0] - w, "slide")], [None]
        G1 = [list(r) for r in leg.chain.joints[1].gamma]
        # |[w, dy, dz]| = b: the rod's length, no square root (w^2 = b^2 - dy^2 - dz^2)
        r1, r2, _ = pivot(ik, leg, matvec(G1, [w, d[1], d[2]]), self.PIVOT, b)
        cs += [r1, r2]
        q += [angle(rec, r1, "q2"), angle(rec, r2, "q3")]
        if self.cut == 4:
            G0 = [list(r) for r in leg.chain.joints[0].gamma]
            roll(ik, leg, rotations_of(r1, r2) + [G1, G0], q, cs)
        return q, cs


PUS = RailLeg("PUS", (J("slide", "P", 0), J("u1", "R", 1), J("u2", "R", 2)),
              ("slider", "yoke", "rod"), cut=3, drive="slide", pivot_kind="universal",
              family="hexaglide")
