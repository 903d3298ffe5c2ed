"""Matrices of scalars that prune as they are built (paper 000, section 7, rules 1-5).

A vector is a ``list`` of 3 scalars, a matrix a ``list`` of rows. Scalars are SymPy
expressions: SymPy's automatic evaluation already drops ``x + 0``, ``x * 0`` and ``x * 1`` and
folds numeric constants, so the helpers below only have to write each matrix operation as
scalar expressions over the elements of its operands (rule 1-2).

:class:`Recorder` implements rules 3 and 5: every element that is not a number, a lone symbol
or a negated symbol is bound to a fresh flat identifier, recorded as one assignment of the
scalar IR, and replaced by that identifier in everything built afterwards.

The helpers also count the operations the same call would cost as a *dense* matrix operation
(every element multiplied and added, zeros included) so that the benchmark can compare the
pruned code against dense matrix evaluation of the same equations.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator

import sympy as sp

from mechgen.generator.ir import Assign, Check, symbol
from mechgen.generator.passes.opcount import count_expr_ops

Vec = list  # [x, y, z]
Mat = list  # [[...], [...], [...]]

ZERO = sp.Integer(0)
ONE = sp.Integer(1)


@dataclass
class DenseCount:
    """Operations a dense evaluation of the same matrix equations performs."""

    adds: int = 0
    muls: int = 0
    divs: int = 0
    sqrt: int = 0
    trig: int = 0

    def total(self) -> int:
        return self.adds + self.muls + self.divs + self.sqrt + self.trig

    def as_dict(self) -> dict[str, int]:
        return {"adds": self.adds, "muls": self.muls, "divs": self.divs,
                "sqrt": self.sqrt, "trig": self.trig, "total": self.total()}


# The counter of the kernel being built: set for the duration of one build by
# ``counting_dense()`` (no module-global total carried from one build to the next).
_dense: ContextVar[DenseCount | None] = ContextVar("mechgen_dense_count", default=None)


@contextmanager
def counting_dense() -> Iterator[DenseCount]:
    """``with counting_dense() as dense: build(...)``: the dense cost of what the matrix
    helpers did inside the block (outside any block nothing is counted)."""
    count = DenseCount()
    token = _dense.set(count)
    try:
        yield count
    finally:
        _dense.reset(token)


def _count(adds: int = 0, muls: int = 0, divs: int = 0, sqrt: int = 0, trig: int = 0) -> None:
    count = _dense.get()
    if count is None:
        return
    count.adds += adds
    count.muls += muls
    count.divs += divs
    count.sqrt += sqrt
    count.trig += trig


def count_scalar_formulas(exprs) -> None:
    """Scalar formulas (a closed-form inverse kinematics) cost a dense evaluation what they
    cost as written: add their operation counts to the active dense counter."""
    if _dense.get() is None:
        return
    c = count_expr_ops(exprs)
    _count(adds=c["adds"], muls=c["muls"], divs=c["divs"], sqrt=c["sqrt"], trig=c["trig"])


# --- matrix operations over scalar elements (rule 1) -------------------------------------

def zeros(rows: int, cols: int | None = None) -> list:
    if cols is None:
        return [ZERO] * rows
    return [[ZERO] * cols for _ in range(rows)]


def eye(n: int = 3) -> Mat:
    return [[ONE if i == j else ZERO for j in range(n)] for i in range(n)]


def unit(axis: int, n: int = 3) -> Vec:
    return [ONE if i == axis else ZERO for i in range(n)]


def transpose(A: Mat) -> Mat:
    return [list(col) for col in zip(*A)]


def add(a: list, b: list) -> list:
    if isinstance(a[0], list):
        _count(adds=len(a) * len(a[0]))
        return [[x + y for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
    _count(adds=len(a))
    return [x + y for x, y in zip(a, b)]


def sub(a: list, b: list) -> list:
    if isinstance(a[0], list):
        _count(adds=len(a) * len(a[0]))
        return [[x - y for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
    _count(adds=len(a))
    return [x - y for x, y in zip(a, b)]


def scale(s, a: list) -> list:
    if isinstance(a[0], list):
        _count(muls=len(a) * len(a[0]))
        return [[s * x for x in row] for row in a]
    _count(muls=len(a))
    return [s * x for x in a]


def dot(a: Vec, b: Vec):
    _count(adds=len(a) - 1, muls=len(a))
    return sp.Add(*[x * y for x, y in zip(a, b)])


def matvec(A: Mat, v: Vec) -> Vec:
    _count(adds=len(A) * (len(v) - 1), muls=len(A) * len(v))
    return [sp.Add(*[a * x for a, x in zip(row, v)]) for row in A]


def matmul(A: Mat, B: Mat) -> Mat:
    n, k, m = len(A), len(B), len(B[0])
    _count(adds=n * m * (k - 1), muls=n * m * k)
    Bt = transpose(B)
    return [[sp.Add(*[a * b for a, b in zip(row, col)]) for col in Bt] for row in A]


def cross(a: Vec, b: Vec) -> Vec:
    _count(adds=3, muls=6)
    return [a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0]]


def skew(a: Vec) -> Mat:
    """skew(a) b = a x b."""
    return [[ZERO, -a[2], a[1]],
            [a[2], ZERO, -a[0]],
            [-a[1], a[0], ZERO]]


def column(A: Mat, j: int) -> Vec:
    return [row[j] for row in A]


def elementary_rotation(axis: int, c, s, one=ONE, zero=ZERO) -> Mat:
    """Coordinate transform A_x, A_y or A_z of a rotation by angle phi (c = cos, s = sin).

    A vector with coordinates v in the old frame has coordinates A v in the rotated frame;
    about z: [[c, s, 0], [-s, c, 0], [0, 0, 1]] (docs/algorithms.md, conventions). The one
    home of this pattern: symbolic (SymPy c, s) here and in model.elementary, floats in
    numeric.elementary (``one=1.0, zero=0.0``); with ``-s`` it is the active rotation a URDF
    origin uses (urdf.rot).
    """
    if axis == 0:
        return [[one, zero, zero], [zero, c, s], [zero, -s, c]]
    if axis == 1:
        return [[c, zero, -s], [zero, one, zero], [s, zero, c]]
    return [[c, s, zero], [-s, c, zero], [zero, zero, one]]


# --- dedicated formulas (rule 4) ---------------------------------------------------------

@dataclass
class OmegaProducts:
    """The six products of omega's components, named once and shared (rule 4).

    ``W = skew(omega)^2`` gives ``omega x (omega x r) = W r`` for every vector r attached to
    the same body, and the same products give ``omega x (I omega)`` without forming I omega.
    """

    xx: sp.Expr
    yy: sp.Expr
    zz: sp.Expr
    xy: sp.Expr
    xz: sp.Expr
    yz: sp.Expr
    W: Mat = field(default_factory=list)


def omega_products(rec: "Recorder", omega: Vec, name: str) -> OmegaProducts:
    wx, wy, wz = omega
    _count(muls=6)
    p = OmegaProducts(
        xx=rec.bind(wx * wx, f"{name}_xx"), yy=rec.bind(wy * wy, f"{name}_yy"),
        zz=rec.bind(wz * wz, f"{name}_zz"), xy=rec.bind(wx * wy, f"{name}_xy"),
        xz=rec.bind(wx * wz, f"{name}_xz"), yz=rec.bind(wy * wz, f"{name}_yz"))
    _count(adds=3)
    p.W = rec.mat([[-(p.yy + p.zz), p.xy, p.xz],
                   [p.xy, -(p.xx + p.zz), p.yz],
                   [p.xz, p.yz, -(p.xx + p.yy)]], f"{name}_W")
    return p


def omega_x_omega_x(p: OmegaProducts, r: Vec) -> Vec:
    """omega x (omega x r) = skew(omega)^2 r, with the products of omega shared."""
    _count(adds=6, muls=9)
    return [sp.Add(*[a * x for a, x in zip(row, r)]) for row in p.W]


def omega_x_I_omega(p: OmegaProducts, I: Mat) -> Vec:
    """omega x (I omega) for symmetric I, written over the products of omega (rule 4).

    Component x: I_xz w_x w_y - I_xy w_x w_z + I_yz (w_y^2 - w_z^2) + (I_zz - I_yy) w_y w_z,
    the others by cyclic permutation x -> y -> z.
    """
    _count(adds=9, muls=15)
    Ixx, Iyy, Izz = I[0][0], I[1][1], I[2][2]
    Ixy, Ixz, Iyz = I[0][1], I[0][2], I[1][2]
    return [Ixz * p.xy - Ixy * p.xz + Iyz * (p.yy - p.zz) + (Izz - Iyy) * p.yz,
            Ixy * p.yz - Iyz * p.xy + Ixz * (p.zz - p.xx) + (Ixx - Izz) * p.xz,
            Iyz * p.xz - Ixz * p.yz + Ixy * (p.xx - p.yy) + (Iyy - Ixx) * p.xy]


# --- naming (rules 3 and 5) --------------------------------------------------------------

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_literal(e: sp.Expr) -> bool:
    """A number, a lone symbol or a negated symbol stays literal and is never named."""
    if e.is_Number or e.is_Symbol:
        return True
    if e.is_number:
        return True
    return e.is_Mul and len(e.args) == 2 and e.args[0] == -1 and e.args[1].is_Symbol


def fold_constant(e: sp.Expr) -> sp.Expr:
    """Rule 2: a constant that is not rational (cos 30 deg, sqrt 2) becomes one float.

    Evaluated by SymPy's arbitrary-precision arithmetic to 40 digits, then rounded once to the
    nearest double: the same bits on every machine (no libm, no numpy)."""
    if e.is_number and not e.is_Rational:
        return sp.Float(float(e.evalf(40)), 17)
    return e


class Recorder:
    """Records the ordered single assignments of a kernel (the scalar IR's body)."""

    def __init__(self, reserved: set[str] | None = None) -> None:
        self.statements: list[Assign | Check] = []
        self._known: dict[sp.Expr, sp.Symbol] = {}
        self._taken: set[str] = set(reserved or ())
        self.prefix = ""   # prepended to every name inside a ``named(...)`` block
        self.sample: dict | None = None   # input values of a representative state (pivoting)
        self._values: dict = {}
        self._evaluated = 0

    @contextmanager
    def named(self, prefix: str) -> Iterator[None]:
        """``with rec.named("leg1_"): ...``: every name recorded inside starts with the prefix
        (one leg's statements); the previous prefix is restored on leaving the block."""
        outer = self.prefix
        self.prefix = prefix
        try:
            yield
        finally:
            self.prefix = outer

    def fresh(self, name: str) -> str:
        name = self.prefix + name
        if not _IDENT.match(name):
            raise ValueError(f"internal name {name!r} is not an identifier")
        base, k = name, 1
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name

    def bind(self, expr, name: str) -> sp.Expr:
        expr = fold_constant(sp.sympify(expr))
        if is_literal(expr):
            return expr
        known = self._known.get(expr)
        if known is not None:  # the same expression was named before: reuse that name
            return known
        target = symbol(self.fresh(name))
        self.statements.append(Assign(target, expr))
        self._known[expr] = target
        return target

    def vec(self, v: Vec, name: str, labels: str = "xyz") -> Vec:
        return [self.bind(e, f"{name}_{labels[i]}") for i, e in enumerate(v)]

    def mat(self, A: Mat, name: str) -> Mat:
        return [[self.bind(e, f"{name}_{i}{j}") for j, e in enumerate(row)]
                for i, row in enumerate(A)]

    def value(self, e: sp.Expr) -> float | None:
        """Numeric value of ``e`` at the representative state ``sample`` (None without one)."""
        if self.sample is None:
            return None
        if not self._values:
            self._values = {k: sp.Float(v) for k, v in self.sample.items()}
        for st in self.statements[self._evaluated:]:
            if isinstance(st, Assign):
                self._values[st.target] = st.expr.xreplace(self._values).evalf()
        self._evaluated = len(self.statements)
        v = sp.sympify(e).xreplace(self._values).evalf()
        return float(v) if v.is_real else float("nan")

    def require_positive(self, expr: sp.Expr, status: int, message: str = "") -> None:
        """The kernel returns ``status`` unless ``expr > 0`` (which also fails for NaN)."""
        self.statements.append(Check(expr, status, message))
