"""Closed-form contact primitives of the docking interface, written on a scalar Recorder.

Every primitive returns a :class:`Contact`: the contact point x_c, the unit normal n (the
direction of the force on the PASSIVE body), the signed distance between the two surfaces
(negative: penetration) and a gate (1 when the pair's region test passes, else 0). All
vectors are in D_A. Clamps and region tests are ``Max``/``Min`` (fmax/fmin in C, max/min in
Python), so the generated code has no branch: a region test with margin m (>= 0 inside) is the
gate min(1, max(0, 1 + m / RAMP)), exactly 1 inside, exactly 0 outside by more than RAMP, a
continuous ramp in between (no ``Piecewise``, whose C printing spans several lines). Every
division is by a constant or by a quantity bounded away from zero by a ``Max``.

Kinematics. The passive unit's point with D_P coordinates x_P is at ``r + R x_P`` in D_A.
The relative velocity of the two bodies at x (passive minus active, coincident points) is

    v_rel(x) = v + w x (x - r).

The penetration rate of a pair is delta_dot = -n . v_rel(x_c): with n along the line of the
two closest points, the rate of their distance is n . v_rel (envelope theorem; the transport
terms omega_A x (c2 - c1) are normal to n).

Contact law (:func:`contact_load`), with delta = gate max(0, -distance):

    f_n = max(0, k delta^e (1 + d delta_dot))             Hunt-Crossley,
    V   = k delta^(e+1) / (e+1)                           its elastic energy,
    f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_eps^2)           regularised Coulomb, v_t = v_rel - (n.v_rel) n,
    P   = (f_n - k delta^e) delta_dot + mu f_n |v_t|^2 / sqrt(|v_t|^2 + v_eps^2)  >= 0,

so that f . v + m . w = -dV/dt - P for the wrench (f, m about r) of all contacts.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from mechgen.generator.families.contact.geometry import Exact3, Plate
from mechgen.generator.families.contact.interface import ContactLaw
from mechgen.generator.numeric import V3, const
from mechgen.generator.scalar import (Recorder, Vec, add, count_scalar_formulas, cross, dot,
                                      matvec, scale, sub, transpose)

ZERO, ONE = sp.Integer(0), sp.Integer(1)
# below these, a quantity that is divided by is replaced by the bound (so no 0/0)
PARALLEL = sp.Rational(1, 10**14)          # sin^2 of the angle of two "parallel" segments
TINY_LENGTH = sp.Rational(1, 10**15)       # m
TINY_SPEED_SQUARED = sp.Rational(1, 10**30)   # (m/s)^2
RAMP = sp.Rational(1, 10**15)              # width of a region test's ramp, in its margin's unit




def const3(v: V3 | Exact3) -> Vec:
    return [const(x) for x in v]


def clamp01(x: sp.Expr) -> sp.Expr:
    return sp.Min(sp.Max(x, ZERO), ONE)


def formula(rec: Recorder, expr: sp.Expr, name: str) -> sp.Expr:
    """A scalar formula written by hand (not by a matrix helper of generator.scalar, which
    counts itself): its operations count for the dense evaluation too; then bound."""
    count_scalar_formulas([expr])
    return rec.bind(expr, name)


@dataclass(frozen=True)
class Pose:
    """The inputs of a kernel: relative pose (r, R) and relative velocity (v, w), D_A."""

    r: Vec
    R: list                      # rows; columns are D_P's axes in D_A
    v: Vec | None = None
    w: Vec | None = None

    def to_active(self, rec: Recorder, x_P: Vec, name: str) -> Vec:
        """A passive point given in D_P, in D_A: r + R x_P."""
        return rec.vec(add(self.r, matvec(self.R, x_P)), name)

    def to_passive(self, rec: Recorder, x_A: Vec, name: str) -> Vec:
        """An active point given in D_A, in D_P: R^T (x_A - r)."""
        return rec.vec(matvec(transpose(self.R), sub(x_A, self.r)), name)

    def rotate(self, rec: Recorder, u_P: Vec, name: str) -> Vec:
        """A passive direction in D_A: R u_P."""
        return rec.vec(matvec(self.R, u_P), name)

    def relative_velocity(self, rec: Recorder, rho: Vec, name: str) -> Vec:
        """v_rel at the point x = r + rho: v + w x rho."""
        return rec.vec(add(self.v, cross(self.w, rho)), name)


@dataclass(frozen=True)
class Contact:
    point: Vec          # x_c, D_A
    normal: Vec         # unit; the direction of the force on the passive body, D_A
    distance: sp.Expr   # signed distance of the surfaces, m (negative: penetration)
    gate: sp.Expr       # 1: the pair's region test passes; 0: the pair is off


def segment_segment(rec: Recorder, p1: Vec, d1: Vec, a: sp.Expr, p2: Vec, d2: Vec,
                    e: sp.Expr, r_edge: sp.Expr) -> Contact:
    """Two capsules of radius r_edge around the segments p1 + s d1 (active) and p2 + t d2
    (passive), s, t in [0, 1]: Ericson, Real-Time Collision Detection, 5.1.9.

        r = p1 - p2, a = d1.d1, e = d2.d2 (constants), b = d1.d2, c = d1.r, f = d2.r,
        s = clamp((b f - c e) / (a e - b^2))      (the closest points of the two lines),
        t = clamp((b s + f) / e),
        s = clamp((b t - c) / a).

    Ericson recomputes s only when t was clamped; written unconditionally it is the same s
    (an unclamped t is the optimum for s, so s is the optimum for t), with no branch. Parallel
    segments (a e - b^2 <= PARALLEL a e, where Ericson takes any s) divide by PARALLEL a e
    instead, which gives some s in [0, 1] and no division by zero. Closest points
    c1 = p1 + s d1, c2 = p2 + t d2; the normal is (c2 - c1) / |c2 - c1|, the distance
    |c2 - c1| - 2 r_edge, the contact point the midpoint (c1 + c2) / 2.
    """
    r = rec.vec(sub(p1, p2), "r12")
    b = rec.bind(dot(d1, d2), "b")
    c = rec.bind(dot(d1, r), "c")
    f = rec.bind(dot(d2, r), "f")
    denom = formula(rec, sp.Max(a * e - b * b, PARALLEL * a * e), "denom")
    s0 = formula(rec, clamp01((b * f - c * e) / denom), "s0")
    t = formula(rec, clamp01((b * s0 + f) / e), "t")
    s = formula(rec, clamp01((b * t - c) / a), "s")
    diff = rec.vec(sub(sub(scale(t, d2), scale(s, d1)), r), "d")     # c2 - c1
    dist = formula(rec, sp.sqrt(rec.bind(dot(diff, diff), "dist2")), "dist")
    inv = formula(rec, 1 / sp.Max(dist, TINY_LENGTH), "inv_dist")
    normal = rec.vec(scale(inv, diff), "n")
    point = rec.vec(add(add(p1, scale(s, d1)), scale(sp.Rational(1, 2), diff)), "x")
    return Contact(point, normal, formula(rec, dist - 2 * r_edge, "distance"), ONE)


def region_gate(rec: Recorder, margins: list, name: str) -> sp.Expr:
    """1 where every margin is >= 0, 0 where one is below -RAMP (a ramp in between):
    min(1, max(0, 1 + min(margins) / RAMP))."""
    return formula(rec, sp.Min(ONE, sp.Max(ZERO, 1 + sp.Min(*margins) / RAMP)), name)


def apex_plate(rec: Recorder, apex_own: Vec, apex_A: Vec, plate: Plate, normal_A: Vec,
               apex_is_passive: bool, r_edge: sp.Expr) -> Contact:
    """An apex (sphere of radius r_edge) against the plate of a petal of the other unit (the
    triangle thickened by r_edge, like its edges):

        q = apex - v0 (the plate's own frame),  s = n . q,  v = g1 . q,  w = g2 . q,
        u = 1 - v - w  (geometry.Plate),  gate: min(u, v, w) >= 0 (the projection is inside),
        distance = |s| - 2 r_edge,  contact point apex - (s / 2) n  (D_A).

    The apex is pushed away from the plane on its own side: along sign(s) n. The force on
    the passive body is +sign(s) n if the apex is passive, -sign(s) n if it is active. The
    sign is s / max(|s|, TINY_LENGTH) (continuous through s = 0). Near the triangle's
    boundary the edge capsules take over (segment_segment); inside it both may act.
    """
    q = rec.vec(sub(apex_own, const3(plate.v0)), "q")
    s = rec.bind(dot(const3(plate.normal), q), "s")
    v = rec.bind(dot(const3(plate.g1), q), "bary_v")
    w = rec.bind(dot(const3(plate.g2), q), "bary_w")
    u = formula(rec, 1 - v - w, "bary_u")
    gate = region_gate(rec, [u, v, w], "inside")
    abs_s = formula(rec, sp.Abs(s), "abs_s")
    sign = formula(rec, s / sp.Max(abs_s, TINY_LENGTH), "sign")
    toward_passive = sign if apex_is_passive else -sign
    normal = rec.vec(scale(toward_passive, normal_A), "n")
    point = rec.vec(sub(apex_A, scale(formula(rec, s / 2, "half_s"), normal_A)), "x")
    return Contact(point, normal, formula(rec, abs_s - 2 * r_edge, "distance"), gate)


def pad_face(rec: Recorder, pad_other: Vec, pad_A: Vec, face_normal_A: Vec,
             pad_is_passive: bool, R_in: sp.Expr, R_out: sp.Expr) -> Contact:
    """A stop pad (a point) against the other unit's ring face, the plane z = 0 of the other
    unit's frame with its normal z pointing out of that unit (towards the pad's unit):

        y = the pad in the other unit's frame,  distance sigma = y_z,
        gate: y_x^2 + y_y^2 - R_in^2 >= 0 and R_out^2 - y_x^2 - y_y^2 >= 0 (on the annulus),
        contact point pad - (sigma / 2) z_other  (D_A).

    The pad pushes the face into the other unit (along -z_other): the force on the passive
    body is +z_A for a passive pad, -z_P for an active pad.
    """
    sigma = pad_other[2]
    rho2 = formula(rec, pad_other[0] ** 2 + pad_other[1] ** 2, "rho2")
    gate = region_gate(rec, [rho2 - R_in ** 2, R_out ** 2 - rho2], "on_face")
    normal = face_normal_A if pad_is_passive else [-x for x in face_normal_A]
    point = rec.vec(sub(pad_A, scale(formula(rec, sigma / 2, "half_sigma"), face_normal_A)), "x")
    return Contact(point, normal, rec.bind(sigma, "distance"), gate)


def power(rec: Recorder, x: sp.Expr, e: sp.Expr, name: str) -> sp.Expr:
    """x^e for x >= 0: a product for an integer e, x^(e - 1/2) sqrt(x) for a half-integer
    (Hertz's 3/2: x sqrt(x), no pow call), else x^e (pow)."""
    if e.is_Integer:
        return formula(rec, x ** e, name)
    if e.is_Rational and e.q == 2 and e > 0:
        root = formula(rec, sp.sqrt(x), f"sqrt_{name}")
        return formula(rec, x ** (e - sp.Rational(1, 2)) * root, name)
    return formula(rec, x ** e, name)


@dataclass(frozen=True)
class Load:
    """A contact's or latch's force on the passive body, its moment about r, its energy and
    dissipated power, and the normal force magnitude."""

    force: Vec
    moment: Vec
    energy: sp.Expr
    dissipation: sp.Expr
    normal_force: sp.Expr
    point: Vec


def contact_load(rec: Recorder, pose: Pose, contact: Contact, law: ContactLaw,
                 v_eps: sp.Expr) -> Load:
    """The Hunt-Crossley and friction load of one contact (module docstring)."""
    pen = -contact.distance
    delta = formula(rec, contact.gate * sp.Max(ZERO, pen), "delta")
    rho = rec.vec(sub(contact.point, pose.r), "rho")
    v_rel = pose.relative_velocity(rec, rho, "v_rel")
    n = contact.normal
    delta_dot = rec.bind(-dot(n, v_rel), "delta_dot")
    delta_e = power(rec, delta, law.e, "delta_e")
    f_elastic = formula(rec, law.k * delta_e, "f_el")
    f_n = formula(rec, sp.Max(ZERO, f_elastic * (1 + law.d * delta_dot)), "f_n")
    v_t = rec.vec(add(v_rel, scale(delta_dot, n)), "v_t")
    vt2 = rec.bind(dot(v_t, v_t), "vt2")
    slip = formula(rec, law.mu * f_n / sp.sqrt(sp.Max(vt2 + v_eps ** 2, TINY_SPEED_SQUARED)),
                   "mu_fn_over_v")
    force = rec.vec(sub(scale(f_n, n), scale(slip, v_t)), "f")
    moment = rec.vec(cross(rho, force), "m")
    energy = formula(rec, f_elastic * delta / (law.e + 1), "V")
    dissipation = formula(rec, (f_n - f_elastic) * delta_dot + slip * vt2, "P")
    return Load(force, moment, energy, dissipation, f_n, contact.point)


def latch_load(rec: Recorder, pose: Pose, a: V3, b_P: V3, k: sp.Expr, c: sp.Expr,
               latched: sp.Expr) -> Load:
    """A latch: a zero-rest-length spring-damper from a (active, D_A) to b = r + R b_P
    (passive), acting at b when latched:

        f = -latched (k (b - a) + c v_rel(b)),  V = latched k |b - a|^2 / 2,
        P = latched c |v_rel(b)|^2.
    """
    rho = pose.rotate(rec, const3(b_P), "rho")                 # b - r
    stretch = rec.vec(sub(add(pose.r, rho), const3(a)), "stretch")
    v_rel = pose.relative_velocity(rec, rho, "v_rel")
    force = [formula(rec, -latched * (k * x + c * y), f"f_{axis}")
             for axis, x, y in zip("xyz", stretch, v_rel)]
    moment = rec.vec(cross(rho, force), "m")
    energy = formula(rec, latched * k * rec.bind(dot(stretch, stretch), "stretch2") / 2, "V")
    dissipation = formula(rec, latched * c * rec.bind(dot(v_rel, v_rel), "v_rel2"), "P")
    return Load(force, moment, energy, dissipation, ZERO, add(pose.r, rho))
