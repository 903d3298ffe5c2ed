"""Legs with a crank on the base and a rod of fixed length (RUS, RSU; Hunt): the crank turns
about z of its joint frame, the U or S joint at its tip aims the rod at the platform joint, a
universal cut adds a roll about the rod.

Frames: the crank turns about the z axis of its joint frame (``crank_axis``, by default
horizontal and tangent to the base circle) and points along x (``crank_dir`` at the home pose);
the rod's frame has its origin at the crank tip and x along the rod, the cut joint at
``[rod, 0, 0]`` (``rod``: by default the home distance, which it must equal when given).

Closed form (paper 000 section 4, eq. 4.7; generator.algorithms.leg_ik.crank_angle): the tip
of the crank (length a) is at distance b from d = [dx, dy, dz] (crank joint frame):
dx c1 + dy s1 = K, K = (|d|^2 + a^2 - b^2) / (2a), rho^2 = dx^2 + dy^2, w = sqrt(rho^2 - K^2),

    c1 = (dx K - sigma dy w) / rho^2,   s1 = (dy K + sigma dx w) / rho^2

(sigma fixed at generation: crank = 0 at home). Then the pivot turns the rod joint frame's x
onto e_c = A_z(crank) d - [a, 0, 0], and the roll of a universal cut follows.
"""

from __future__ import annotations

from mechgen.generator import numeric as num
from mechgen.generator.algorithms import leg_ik
from mechgen.generator.model import ModelError
from mechgen.generator.scalar import add, elementary_rotation, matvec

from .base import (OUT_OF_REACH, SINGULAR, Z0, Field, HomeFrames, LegType, angle, clean,
                   fail_home, first_joint_vector, floats, frame_from_x, pivot, pivot_num, roll,
                   roll_num, rotations_of)


def _tip_and_rod(leg) -> tuple[float, float]:
    """(a, b): the crank's length and the rod's."""
    return float(leg.chain.joints[1].l[0]), float(leg.l_L[0])


class CrankLeg(LegType):
    FIELDS = {"crank": Field("positive", needs="the crank length"),
              "crank_axis": Field("direction"), "crank_dir": Field("direction"),
              "rod": Field("positive")}
    PIVOT = 2

    def frames(self, g, s_home, where) -> HomeFrames:
        radial = (g.base[0], g.base[1], 0.0)
        axis = g.options.get("crank_axis")
        if axis is None:
            if num.norm(radial) < 1e-9:
                raise ModelError(f"{where}.crank_axis: the base joint is on the z axis; give "
                                 f"crank_axis")
            axis = num.cross(Z0, radial)
        axis = num.normalize(axis)
        cdir = g.options.get("crank_dir")
        if cdir is None:
            cdir = num.reject(radial, axis)
            if num.norm(cdir) < 1e-9:
                cdir = num.cross(axis, Z0)
        cdir = num.reject(cdir, axis)
        if num.norm(cdir) < 1e-9:
            raise ModelError(f"{where}.crank_dir: parallel to the crank axis")
        cdir = num.normalize(cdir)
        G0 = (cdir, num.cross(axis, cdir), axis)                 # x = crank, z = axis
        a = g.options["crank"]
        tip_home = num.add(g.base, num.scale(a, cdir))
        rod_vec = num.sub(s_home, tip_home)
        rod_home = num.norm(rod_vec)
        size = max(a, num.norm(num.sub(s_home, g.base)))
        if a < 1e-9 * size:
            raise ModelError(f"{where}.crank: {a} m is negligible next to the base-to-platform "
                             f"distance {size:.6g} m at the home pose")
        if rod_home < 1e-9 * size:
            raise ModelError(f"{where}: the crank tip meets the platform joint at the home pose "
                             f"(zero rod length); move the joints or change the crank")
        b = g.options.get("rod", rod_home)
        if abs(b - rod_home) > 1e-9 * max(1.0, b):
            raise ModelError(f"{where}.rod: {b} differs from the crank-tip to platform distance "
                             f"{rod_home:.6g} at the home pose (omit it to use that distance)")
        rod_c = num.matvec(G0, rod_vec)                          # rod direction, crank coordinates
        G1 = frame_from_x(rod_c, Z0 if abs(rod_c[2]) < 0.999 * rod_home else (0.0, 1.0, 0.0))
        n = len(self.joints)
        return HomeFrames([g.base, (a, 0.0, 0.0)] + [(0.0, 0.0, 0.0)] * (n - 2),
                          [G0, G1] + [num.identity()] * (n - 2), (b, 0.0, 0.0),
                          num.matmul(G1, G0), max(a, b))

    def branch(self, leg, home) -> int:
        """The crank solution (sigma = +-1 in leg_ik.crank_angle) that gives crank = 0 at home."""
        d, _ = first_joint_vector(leg, home)
        a, rod = _tip_and_rod(leg)
        if d[0] * d[0] + d[1] * d[1] <= (1e-9 * leg.l_ref) ** 2:
            raise ModelError(f"{leg.chain.source}: leg {leg.name}, joint crank: the platform "
                             f"joint is on the crank axis at the home pose (no crank angle "
                             f"moves it)")
        sols = leg_ik.crank_solutions_num(d, a, rod)
        if sols is None:
            raise ModelError(f"{leg.chain.source}: leg {leg.name}: the home pose is out of reach "
                             f"(crank {a} m and rod {rod} m cannot meet the platform joint)")
        angles = {sigma: abs(num.atan2(sn, cs)) for sigma, (cs, sn) in sols.items()}
        return min(angles, key=angles.get)

    def home_coordinates(self, leg, home, where) -> tuple[float, ...]:
        d, G0 = first_joint_vector(leg, home)
        tol = leg_ik.TOL_SINGULAR * leg.l_ref
        a, b = _tip_and_rod(leg)
        sols = leg_ik.crank_solutions_num(d, a, b)
        if sols is None:
            raise fail_home(leg, where, 0, f"out of reach (crank {a:.6g} m, rod {b:.6g} m)")
        K = (num.dot(d, d) + a * a - b * b) / (2 * a)
        if d[0] * d[0] + d[1] * d[1] - K * K <= tol * tol:
            raise fail_home(leg, where, 0, "dead point, the rod perpendicular to the crank "
                            "tip's path (singular)")
        c1, s1 = sols[leg.branch]
        q = [num.atan2(s1, c1)]
        Az = num.elementary(2, q[0])
        G1 = floats(leg.chain.joints[1].gamma)
        e_c = num.matvec(G1, num.sub(num.matvec(Az, d), (a, 0.0, 0.0)))   # rod joint frame
        tau = pivot_num(leg, where, e_c, num.matmul(G1, num.matmul(Az, G0)), q, self.PIVOT, tol)
        if self.cut == 4:
            roll_num(leg, where, home, tau, q)
        return clean(q)

    def actuator_checks(self, leg) -> list[tuple[int, str, str]]:
        a, b = _tip_and_rod(leg)
        return [(0, OUT_OF_REACH, f": pose out of reach (crank {a:g} m and rod {b:g} m cannot "
                                  f"meet the platform joint)"),
                (0, SINGULAR, ": dead point, the rod perpendicular to the crank tip's path "
                              "(singular)")]

    def closed_form(self, ik, leg, d) -> tuple[list, list]:
        rec = ik.rec
        a, b = leg.chain.joints[1].l[0], leg.l_L[0]
        rc = leg_ik.crank_angle(rec, d, a, b, leg.branch, "crank", leg.l_ref,
                                ik.leg_flag(0, OUT_OF_REACH), ik.leg_flag(0, SINGULAR))
        cs, q = [rc], [angle(rec, rc, "q1")]
        Az = elementary_rotation(2, rc.c, rc.s)
        e_c = rec.vec(add(matvec(Az, d), [-a, 0, 0]), "e_c")
        G1 = [list(r) for r in leg.chain.joints[1].gamma]
        # |e_c| = b: the crank angle puts the tip at the rod's length from d
        r1, r2, _ = pivot(ik, leg, matvec(G1, e_c), self.PIVOT, b)
        cs += [r1, r2]
        q += [angle(rec, r1, "q2"), angle(rec, r2, "q3")]
        if self.cut == 4:
            G0 = [list(r) for r in leg.chain.joints[0].gamma]
            roll(ik, leg, rotations_of(r1, r2) + [G1, Az, G0], q, cs)
        return q, cs
