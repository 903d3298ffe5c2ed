"""Deterministic numbers for the constants baked into generated code.

The same spec must give byte-identical kernels on every machine. numpy's vectorised sin/cos,
its matmul and reductions, and the C library's ``libm`` differ in the last bit between CPUs
(SIMD paths, FMA, summation order), so none of them may sit on the path from a spec to a
printed constant. Everything here works on plain Python floats (3-vectors and 3x3 matrices as
tuples, rows first), evaluates each operation with mpmath at 160 bits in a private context, and
rounds the result once to the nearest double. mpmath is integer arithmetic in Python: the same
bits on x86-64 and ARM, with any numpy build and any hash seed.

A 3x3 matrix here is, as everywhere in mechgen, a coordinate transform: rows are the new axes
in the old coordinates, and ``matmul(B, A)`` applies A first.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable

import mpmath
import sympy as sp
from mpmath.libmp import round_nearest, to_float

from mechgen.generator.scalar import elementary_rotation

V3 = tuple[float, float, float]
M3 = tuple[V3, V3, V3]

_MP = mpmath.MPContext()
_MP.prec = 160


def _mpf(x: float | int | str) -> mpmath.mpf:
    return _MP.mpf(x)


def _round(x: mpmath.mpf) -> float:
    """The nearest double to ``x`` (ties to even)."""
    return to_float(x._mpf_, rnd=round_nearest)


def const(x: float | Fraction) -> sp.Rational:
    """A baked number as an exact rational (the printer rounds it to a double once)."""
    if isinstance(x, Fraction):
        return sp.Rational(x.numerator, x.denominator)
    n, d = float(x).as_integer_ratio()
    return sp.Rational(n, d)


def screw_pitch(lead: float) -> float:
    """h = lead / (2 pi): slide per radian of a screw, rounded once."""
    return _round(_mpf(lead) / (2 * _MP.pi))


# --- scalars ----------------------------------------------------------------------------

def sin(x: float) -> float:
    return _round(_MP.sin(_mpf(x)))


def cos(x: float) -> float:
    return _round(_MP.cos(_mpf(x)))


def atan2(y: float, x: float) -> float:
    return _round(_MP.atan2(_mpf(y), _mpf(x)))


def sqrt(x: float) -> float:
    if x < 0:
        raise ValueError(f"sqrt of a negative number {x!r}")
    return _round(_MP.sqrt(_mpf(x)))


def radians(deg: float) -> float:
    """deg * pi / 180 with pi to 160 bits, rounded once."""
    return _round(_mpf(deg) * _MP.pi / 180)


def sin_deg(deg: float) -> float:
    return _round(_MP.sin(_mpf(deg) * _MP.pi / 180))


def cos_deg(deg: float) -> float:
    return _round(_MP.cos(_mpf(deg) * _MP.pi / 180))


def fsum(terms: Iterable[float]) -> float:
    return _round(_MP.fsum(_mpf(t) for t in terms))


# --- vectors and matrices (tuples of floats) --------------------------------------------

def vec(v: Iterable[float]) -> V3:
    out = tuple(float(x) for x in v)
    if len(out) != 3:
        raise ValueError(f"expected 3 numbers, got {len(out)}")
    return out  # type: ignore[return-value]


def mat(M: Iterable[Iterable[float]]) -> M3:
    return tuple(vec(row) for row in M)  # type: ignore[return-value]


def add(a: V3, b: V3) -> V3:
    return tuple(_round(_mpf(x) + _mpf(y)) for x, y in zip(a, b))  # type: ignore[return-value]


def sub(a: V3, b: V3) -> V3:
    return tuple(_round(_mpf(x) - _mpf(y)) for x, y in zip(a, b))  # type: ignore[return-value]


def scale(s: float, a: V3) -> V3:
    return tuple(_round(_mpf(s) * _mpf(x)) for x in a)  # type: ignore[return-value]


def dot(a: V3, b: V3) -> float:
    return _round(_MP.fsum(_mpf(x) * _mpf(y) for x, y in zip(a, b)))


def cross(a: V3, b: V3) -> V3:
    ax, ay, az = (_mpf(x) for x in a)
    bx, by, bz = (_mpf(x) for x in b)
    return (_round(ay * bz - az * by), _round(az * bx - ax * bz), _round(ax * by - ay * bx))


def norm(a: V3) -> float:
    return _round(_MP.sqrt(_MP.fsum(_mpf(x) ** 2 for x in a)))


def normalize(a: V3) -> V3:
    n = _MP.sqrt(_MP.fsum(_mpf(x) ** 2 for x in a))
    if n == 0:
        raise ValueError("cannot normalise a zero vector")
    return tuple(_round(_mpf(x) / n) for x in a)  # type: ignore[return-value]


def reject(a: V3, unit: V3) -> V3:
    """a minus its component along the unit vector: a - (a . u) u, in one rounding each."""
    d = _MP.fsum(_mpf(x) * _mpf(u) for x, u in zip(a, unit))
    return tuple(_round(_mpf(x) - d * _mpf(u)) for x, u in zip(a, unit))  # type: ignore


def matvec(A: M3, v: V3) -> V3:
    return tuple(dot(row, v) for row in A)  # type: ignore[return-value]


def transpose(A: M3) -> M3:
    return tuple(tuple(A[i][j] for i in range(3)) for j in range(3))  # type: ignore[return-value]


def matmul(A: M3, B: M3) -> M3:
    Bt = transpose(B)
    return tuple(tuple(dot(row, col) for col in Bt) for row in A)  # type: ignore[return-value]


def identity() -> M3:
    return ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def elementary(axis: int, angle: float) -> M3:
    """A_x, A_y, A_z (coordinate transforms) of a numeric angle in radians."""
    return mat(elementary_rotation(axis, cos(angle), sin(angle), 1.0, 0.0))


def alpha_yzx(psi_y: float, psi_z: float, psi_x: float) -> M3:
    """Frame 0 -> frame C: A_x(psi_x) A_z(psi_z) A_y(psi_y) (the paper's y-z-x sequence)."""
    return matmul(elementary(0, psi_x), matmul(elementary(2, psi_z), elementary(1, psi_y)))


def symmetric_eigenvalues(S: M3) -> tuple[float, float, float]:
    """Eigenvalues of a symmetric 3x3 matrix, ascending (mpmath's Jacobi method, 160 bits)."""
    E = _MP.eigsy(_MP.matrix([[_mpf(x) for x in row] for row in S]), eigvals_only=True)
    return tuple(sorted(_round(E[i]) for i in range(3)))  # type: ignore[return-value]


def symmetric_eigen(S: M3) -> tuple[tuple[float, float, float], M3]:
    """(eigenvalues ascending, matrix whose columns are the unit eigenvectors)."""
    E, Q = _MP.eigsy(_MP.matrix([[_mpf(x) for x in row] for row in S]))
    order = sorted(range(3), key=lambda i: E[i])
    vals = tuple(_round(E[i]) for i in order)
    vecs = tuple(tuple(_round(Q[r, i]) for i in order) for r in range(3))
    return vals, vecs  # type: ignore[return-value]


def determinant(A: M3) -> float:
    M = [[_mpf(x) for x in row] for row in A]
    return _round(M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1])
                  - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0])
                  + M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]))


def mat_add(A: M3, B: M3) -> M3:
    return tuple(add(a, b) for a, b in zip(A, B))  # type: ignore[return-value]


def mat_scale(s: float, A: M3) -> M3:
    return tuple(scale(s, row) for row in A)  # type: ignore[return-value]


def congruence(R: M3, S: M3) -> M3:
    """R S R^T, each entry summed at 160 bits and rounded once."""
    r = [[_mpf(x) for x in row] for row in R]
    m = [[_mpf(x) for x in row] for row in S]
    return tuple(tuple(_round(_MP.fsum(r[i][k] * m[k][l] * r[j][l] for k in range(3)
                                       for l in range(3))) for j in range(3))
                 for i in range(3))  # type: ignore[return-value]


def parallel_axis(m: float, d: V3) -> M3:
    """m (d^T d 1 - d d^T): the inertia of a point mass m at d about the origin."""
    dm = [_mpf(x) for x in d]
    dd = _MP.fsum(x * x for x in dm)
    return tuple(tuple(_round(_mpf(m) * ((dd if i == j else 0) - dm[i] * dm[j]))
                       for j in range(3)) for i in range(3))  # type: ignore[return-value]


def rotation_onto(a: V3, k: int) -> M3:
    """The smallest rotation P (a coordinate transform matrix) with P a = e_k, for a unit
    vector a not along -e_k: Rodrigues' formula P = 1 + [v]x + [v]x^2 / (1 + c), with
    v = a x e_k and c = a . e_k, every entry computed at 160 bits and rounded once."""
    A = [_mpf(x) for x in a]
    n = _MP.sqrt(_MP.fsum(x * x for x in A))
    A = [x / n for x in A]
    e = [_mpf(int(i == k)) for i in range(3)]
    v = [A[1] * e[2] - A[2] * e[1], A[2] * e[0] - A[0] * e[2], A[0] * e[1] - A[1] * e[0]]
    c = _MP.fsum(x * y for x, y in zip(A, e))
    K = [[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]
    K2 = [[_MP.fsum(K[i][m] * K[m][j] for m in range(3)) for j in range(3)] for i in range(3)]
    return tuple(tuple(_round(int(i == j) + K[i][j] + K2[i][j] / (1 + c)) for j in range(3))
                 for i in range(3))  # type: ignore[return-value]
