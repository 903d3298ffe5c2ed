"""Geometry of one androgynous docking unit in its own frame: guide petals, stop pads, latches.

Frame D of a unit (D_A of the active unit, D_P of the passive one): origin at the centre of
its ring face, z along the docking axis out of the unit, towards the other unit; the ring face
is the plane z = 0. Angles (azimuths) are measured from x towards y, in degrees.

Guide petal i at azimuth theta_i (a flat triangle leaning inwards, R_tip < R_base):

    base vertices   B-_i = (R_base cos(theta_i - beta), R_base sin(theta_i - beta), 0)
                    B+_i = (R_base cos(theta_i + beta), R_base sin(theta_i + beta), 0)
    apex            T_i  = (R_tip cos theta_i,          R_tip sin theta_i,          h)
    side edges      B-_i -> T_i and B+_i -> T_i

Stop pad j at azimuth phi_j: (R_pad cos phi_j, R_pad sin phi_j, h_pad).

Latch k at azimuth psi_k: the active point a_k = (R_latch cos psi_k, R_latch sin psi_k, 0) in
D_A; the passive point b_k is the same point expressed in D_P when the units are docked and
aligned. Then D_P is D_A turned half a turn about x_A, so x_P = diag(1, -1, -1) x_A and
b_k = (a_x, -a_y, 0), an exact negation.

Numbers: every coordinate is computed by :mod:`mechgen.generator.numeric` (160-bit mpmath,
rounded once to the nearest double; no numpy, no libm), so the same spec gives the same bits
on every machine. Constants derived from the coordinates by rational operations only (edge
vectors, squared lengths, the barycentric dual vectors of a plate) are kept exact as
:class:`fractions.Fraction` of those doubles; the printers round each to the nearest double
once.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from mechgen.generator import numeric as num
from mechgen.generator.numeric import V3

Exact3 = tuple[Fraction, Fraction, Fraction]


def ring_point(radius: float, azimuth_deg: float, z: float) -> V3:
    """(radius cos(azimuth), radius sin(azimuth), z): cos and sin rounded once, then the
    product rounded once (numeric.scale)."""
    c, s = num.cos_deg(azimuth_deg), num.sin_deg(azimuth_deg)
    x, y, _ = num.scale(radius, (c, s, 0.0))
    return (x, y, float(z))


def exact(v: V3) -> Exact3:
    """The doubles of a point as exact rationals."""
    return tuple(Fraction(x) for x in v)  # type: ignore[return-value]


def exact_sub(a: V3, b: V3) -> Exact3:
    return tuple(Fraction(x) - Fraction(y) for x, y in zip(a, b))  # type: ignore[return-value]


def exact_dot(a: Exact3, b: Exact3) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


@dataclass(frozen=True)
class PetalShape:
    """The dimensions every petal of both units shares (m, deg)."""

    R_base: float       # radius of the base vertices
    R_tip: float        # radius of the apex (< R_base: the petal leans inwards)
    h: float            # height of the apex above the ring face
    beta: float         # half-width of the base, deg (azimuth of B+ minus that of the apex)
    r_edge: float       # radius of the capsule around a side edge, and of the apex sphere


@dataclass(frozen=True)
class Plate:
    """The plane of a petal triangle (v0, v1, v2) = (B-, B+, T) and its barycentric constants.

    With q = x - v0, the projection of x onto the plane is v0 + v e1 + w e2 (e1 = v1 - v0,
    e2 = v2 - v0), where (Ericson, Real-Time Collision Detection, 3.4)

        d00 = e1.e1, d01 = e1.e2, d11 = e2.e2, D = d00 d11 - d01^2,
        v = (d11 q.e1 - d01 q.e2) / D = g1 . q,   g1 = (d11 e1 - d01 e2) / D,
        w = (d00 q.e2 - d01 q.e1) / D = g2 . q,   g2 = (d00 e2 - d01 e1) / D,
        u = 1 - v - w;

    the projection lies inside the triangle iff u, v, w >= 0. The signed distance of x from
    the plane is s = n . q, n = e1 x e2 / |e1 x e2|.
    """

    v0: V3
    normal: V3          # unit normal (numeric: rounded once per component)
    g1: Exact3          # barycentric dual vectors, exact
    g2: Exact3


def plate(v0: V3, v1: V3, v2: V3) -> Plate:
    e1, e2 = exact_sub(v1, v0), exact_sub(v2, v0)
    d00, d01, d11 = exact_dot(e1, e1), exact_dot(e1, e2), exact_dot(e2, e2)
    D = d00 * d11 - d01 * d01
    if D == 0:
        raise ValueError("degenerate petal triangle")
    g1 = tuple((d11 * a - d01 * b) / D for a, b in zip(e1, e2))
    g2 = tuple((d00 * b - d01 * a) / D for a, b in zip(e1, e2))
    n = num.normalize(num.cross(num.sub(v1, v0), num.sub(v2, v0)))
    return Plate(v0, n, g1, g2)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Petal:
    """One guide petal: its base vertices, apex and plate (see the module docstring)."""

    azimuth: float       # deg
    base_minus: V3       # B-
    base_plus: V3        # B+
    apex: V3             # T

    @property
    def edges(self) -> tuple[tuple[V3, V3], tuple[V3, V3]]:
        """The side edges B- -> T ("m") and B+ -> T ("p")."""
        return (self.base_minus, self.apex), (self.base_plus, self.apex)

    @property
    def plate(self) -> Plate:
        return plate(self.base_minus, self.base_plus, self.apex)


EDGE_LABELS = ("m", "p")      # the side edges of a petal: from B- and from B+


def petal(shape: PetalShape, azimuth_deg: float) -> Petal:
    return Petal(azimuth_deg,
                 ring_point(shape.R_base, azimuth_deg - shape.beta, 0.0),
                 ring_point(shape.R_base, azimuth_deg + shape.beta, 0.0),
                 ring_point(shape.R_tip, azimuth_deg, shape.h))


@dataclass(frozen=True)
class Unit:
    """One docking unit in its own frame: three petals and three stop pads."""

    petals: tuple[Petal, ...]
    pads: tuple[V3, ...]


def unit(shape: PetalShape, petal_azimuths: tuple[float, ...], R_pad: float, h_pad: float,
         pad_azimuths: tuple[float, ...]) -> Unit:
    return Unit(tuple(petal(shape, a) for a in petal_azimuths),
                tuple(ring_point(R_pad, a, h_pad) for a in pad_azimuths))


def latch_points(R_latch: float, azimuths: tuple[float, ...]) -> tuple[tuple[V3, V3], ...]:
    """(a_k in D_A, b_k in D_P) of each latch: b_k = diag(1, -1, -1) a_k, exactly."""
    out = []
    for az in azimuths:
        a = ring_point(R_latch, az, 0.0)
        out.append((a, (a[0], 0.0 - a[1], 0.0)))
    return tuple(out)


def half_angle_sine(tolerance_deg: float) -> float:
    """sin(tol / 2), rounded once: the capture test compares half-angle sines (no acos)."""
    return num.sin_deg(tolerance_deg / 2)
