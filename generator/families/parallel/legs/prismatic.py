"""Legs with a stroke along the leg (UPS, SPU, UCU; Gough-Stewart): a U or S joint at the base
aims the leg at the platform joint, a universal cut adds a roll about the leg, then the stroke.

Frames: the base joint frame has x along the leg at the home pose and y horizontal (z0 x
leg), unless the spec gives ``frame``; the cylinder's frame has its origin at the base joint
centre and x along the leg; the piston's frame is the cylinder's slid by the stroke, with the
cut joint at ``[length0, 0, 0]`` (``length0``: the leg length at zero stroke, by default the
home length).

Closed form (paper 000 section 4, eq. 4.7; generator.algorithms.leg_ik): with d = [l, m, n]
the cut point in the base joint frame, the pivot's angles turn x onto d (c1 = l / L_xz,
s1 = -n / L_xz, c2 = L_xz / L, s2 = m / L), the roll of a universal cut follows, and
stroke = L - length0, L = |d|.
"""

from __future__ import annotations

from mechgen.generator import numeric as num
from mechgen.generator.algorithms import leg_ik
from mechgen.generator.model import ModelError

from .base import (Z0, Field, HomeFrames, LegType, angle, clean, first_joint_vector,
                   frame_from_x, pivot, pivot_num, roll, roll_num, rotations_of)


class PrismaticLeg(LegType):
    FIELDS = {"frame": Field("rotation"), "length0": Field("positive")}
    PIVOT = 1

    def frames(self, g, s_home, where) -> HomeFrames:
        leg_vec = num.sub(s_home, g.base)
        L_home = num.norm(leg_vec)
        if L_home < 1e-9:
            raise ModelError(f"{where}: the base and platform joints coincide at the home pose")
        G0 = g.options.get("frame")
        if G0 is None:
            hint = num.cross(Z0, leg_vec)
            G0 = frame_from_x(leg_vec, hint if num.norm(hint) > 1e-9 * L_home else (0.0, 1.0, 0.0))
        length0 = g.options.get("length0", L_home)
        p1, p2 = leg_ik.u_angles_num(num.matvec(G0, leg_vec))   # 0, 0 unless a frame is given
        tau_home = num.matmul(num.elementary(2, p2), num.matmul(num.elementary(1, p1), G0))
        n = len(self.joints)
        return HomeFrames([g.base] + [(0.0, 0.0, 0.0)] * (n - 1),
                          [G0] + [num.identity()] * (n - 1), (length0, 0.0, 0.0), tau_home,
                          L_home)

    def home_coordinates(self, leg, home, where) -> tuple[float, ...]:
        d, G0 = first_joint_vector(leg, home)
        q: list[float] = []
        tau = pivot_num(leg, where, d, G0, q, self.PIVOT, leg_ik.TOL_SINGULAR * leg.l_ref)
        if self.cut == 4:
            roll_num(leg, where, home, tau, q)
        q.append(num.norm(d) - float(leg.l_L[0]))
        return clean(q)

    def closed_form(self, ik, leg, d) -> tuple[list, list]:
        rec = ik.rec
        r1, r2, L = pivot(ik, leg, d, self.PIVOT)
        cs, q = [r1, r2], [angle(rec, r1, "q1"), angle(rec, r2, "q2")]
        stroke = rec.bind(L - leg.l_L[0], "stroke")
        if self.cut == 4:
            roll(ik, leg, rotations_of(r1, r2) + [[list(r) for r in leg.chain.joints[0].gamma]],
                 q, cs)
        return q + [stroke], cs + [None]
