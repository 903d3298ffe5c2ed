"""Closed-form inverse kinematics of the legs (paper 000, section 4): the pieces each leg type
of :mod:`generator.legs` composes into its own (which joint solves what is the leg type's).

Sines and cosines come from square roots and ratios, never from trigonometric calls; the
angles themselves (atan2) are only computed where an output or a torsional spring needs them.

U joint (rotation y by p1, then z by p2) pointing its x axis along d = [l, m, n] (joint frame):

    A_y(p1) d has no z component:  c1 = l / L_xz,  s1 = -n / L_xz,  L_xz = sqrt(l^2 + n^2)
    A_z(p2) [L_xz, m, 0] = [L, 0, 0]:  c2 = L_xz / L,  s2 = m / L,  L = sqrt(L_xz^2 + m^2)

(the branch with c2 > 0; L_xz = 0 is the U joint's singularity, flagged). A roll about the
leg axis x that makes the y axis perpendicular to a vector e = [ex, ey, ez] (the C side axis
of a cut universal joint): c3 = ez / N, s3 = -ey / N, N = sqrt(ey^2 + ez^2).

Crank (rotation about z by p1 of an arm a along x) whose tip is at distance b from the point
d = [dx, dy, dz] (joint frame): |d - a [c1, s1, 0]| = b gives dx c1 + dy s1 = K,
K = (|d|^2 + a^2 - b^2) / (2 a); with rho^2 = dx^2 + dy^2 and w = sqrt(rho^2 - K^2):

    c1 = (dx K - sigma dy w) / rho^2,   s1 = (dy K + sigma dx w) / rho^2

rho^2 < K^2: the pose is out of reach; w = 0: crank and rod aligned (the leg's singularity).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.scalar import Recorder, Vec

from mechgen.generator.statuses import LEG_SINGULAR, UNREACHABLE
TOL_SINGULAR = 1e-8     # relative: a sine, a cosine or a length ratio below this is singular


@dataclass
class Rotation:
    c: sp.Expr
    s: sp.Expr


@dataclass(frozen=True)
class Flag:
    """What a failed check returns: the kernel status code and the message of the check."""

    code: int
    message: str


def u_angles(rec: Recorder, d: Vec, name: str, l_ref: float,
             singular: Flag | None = None,
             length: float | None = None) -> tuple[Rotation, Rotation, sp.Expr]:
    """(p1 about y, p2 about z, L) aligning x with d; ``singular`` when L_xz = 0.

    ``length``: |d| when the leg's geometry fixes it (a rod of fixed length b aimed from its
    near joint at its far one: |d| = b by the closed form that placed the near joint), so
    L = b and 1/L are constants, no square root or division (c2, s2 equal the computed ones
    to rounding)."""
    l, m, n = d
    flag = singular or Flag(LEG_SINGULAR, f"{name}: universal joint at 90 degrees")
    Lxz2 = rec.bind(l * l + n * n, f"{name}_Lxz2")
    rec.require_positive(Lxz2 - (TOL_SINGULAR * l_ref) ** 2, flag.code, flag.message)
    Lxz = rec.bind(sp.sqrt(Lxz2), f"{name}_Lxz")
    inv_Lxz = rec.bind(1 / Lxz, f"{name}_inv_Lxz")
    if length is None:
        L = rec.bind(sp.sqrt(Lxz2 + m * m), f"{name}_L")
        inv_L = rec.bind(1 / L, f"{name}_inv_L")
    elif not sp.sympify(length).is_Number:   # a per-leg constant of a leg loop
        L, inv_L = length, 1 / length
    else:                           # 1/b: one IEEE division, correctly rounded
        L, inv_L = sp.Float(float(length)), sp.Float(1.0 / float(length))
    r1 = Rotation(rec.bind(l * inv_Lxz, f"{name}_c1"), rec.bind(-n * inv_Lxz, f"{name}_s1"))
    r2 = Rotation(rec.bind(Lxz * inv_L, f"{name}_c2"), rec.bind(m * inv_L, f"{name}_s2"))
    return r1, r2, L


def roll_angle(rec: Recorder, e: Vec, name: str, singular: Flag | None = None) -> Rotation:
    """Roll about x making the y axis perpendicular to the unit vector e (frame before roll);
    ``singular`` when N = 0 (e along the leg)."""
    _, ey, ez = e
    flag = singular or Flag(LEG_SINGULAR, f"{name}: cut universal joint axis along the leg")
    N2 = rec.bind(ey * ey + ez * ez, f"{name}_N2")
    rec.require_positive(N2 - TOL_SINGULAR ** 2, flag.code, flag.message)
    inv_N = rec.bind(1 / sp.sqrt(N2), f"{name}_inv_N")
    return Rotation(rec.bind(ez * inv_N, f"{name}_c"), rec.bind(-ey * inv_N, f"{name}_s"))


def crank_angle(rec: Recorder, d: Vec, a: sp.Expr, b: sp.Expr, sigma: int, name: str,
                l_ref: float, unreachable: Flag | None = None,
                singular: Flag | None = None) -> Rotation:
    """The crank's rotation (module docstring): ``unreachable`` when rho^2 < K^2,
    ``singular`` when w = 0 (crank and rod aligned)."""
    dx, dy, dz = d
    far = unreachable or Flag(UNREACHABLE, f"{name}: pose out of reach of the crank")
    flat = singular or Flag(LEG_SINGULAR, f"{name}: crank and rod aligned")
    K = rec.bind((dx * dx + dy * dy + dz * dz + a * a - b * b) / (2 * a), f"{name}_K")
    rho2 = rec.bind(dx * dx + dy * dy, f"{name}_rho2")
    w2 = rec.bind(rho2 - K * K, f"{name}_w2")
    rec.require_positive(w2, far.code, far.message)
    rec.require_positive(w2 - (TOL_SINGULAR * l_ref) ** 2, flat.code, flat.message)
    w = rec.bind(sigma * sp.sqrt(w2), f"{name}_w")
    inv_rho2 = rec.bind(1 / rho2, f"{name}_inv_rho2")
    return Rotation(rec.bind((dx * K - dy * w) * inv_rho2, f"{name}_c"),
                    rec.bind((dy * K + dx * w) * inv_rho2, f"{name}_s"))


# --- numeric versions used while building the model (generator.numeric: CPU-independent) ---

def u_angles_num(d: tuple[float, float, float]) -> tuple[float, float]:
    l, m, n = d
    return num.atan2(-n, l), num.atan2(m, num.norm((l, 0.0, n)))


def crank_solutions_num(d: tuple[float, float, float], a: float,
                        b: float) -> dict[int, tuple[float, float]] | None:
    """Both (cos, sin) of the crank angle that put the rod's far end at d (None: no reach,
    also when d is on the crank axis, rho = 0)."""
    dx, dy, dz = d
    K = (num.dot(d, d) + a * a - b * b) / (2 * a)
    rho2 = dx * dx + dy * dy
    w2 = rho2 - K * K
    if w2 < 0 or rho2 <= 0:
        return None
    w = num.sqrt(w2)
    return {s: ((dx * K - s * dy * w) / rho2, (dy * K + s * dx * w) / rho2) for s in (1, -1)}


def roll_angle_num(e: tuple[float, float, float]) -> float:
    """The roll of :func:`roll_angle`: atan2(-e_y, e_z)."""
    return num.atan2(-e[1], e[2])
