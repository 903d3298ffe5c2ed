"""The spec readers every family shares: vectors, inertias, rotations, tables, bodies, gravity.

Each reader takes a spec value and ``where`` (file and field, e.g. ``arm.toml: joints[2].l``),
returns model values (SymPy numbers exact, or parameter symbols) and raises a ModelError naming
``where`` for anything else. The family readers (spec.py, platform_spec.py, urdf.py) build on
them; none of them imports another family's reader.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.model import (AXES, MAX_MAGNITUDE, Body, ModelError, as_expr, check_name,
                                     identity3, inertia_about_origin, rotation_from_sequence)

GRAVITY_DEFAULT = (0, 0, 0)   # every family: a spec states its gravity; none is assumed


def vec3(value: Any, where: str) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise ModelError(f"{where}: expected a list of 3 numbers or parameter names, got {value!r}")
    return tuple(as_expr(x, f"{where}[{i}]") for i, x in enumerate(value))


def inertia(value: Any, where: str) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 6:
        raise ModelError(f"{where}: expected 6 numbers [Ixx, Iyy, Izz, Ixy, Ixz, Iyz], "
                         f"got {value!r}")
    xx, yy, zz, xy, xz, yz = (as_expr(x, f"{where}[{i}]") for i, x in enumerate(value))
    for v, nm in ((xx, "Ixx"), (yy, "Iyy"), (zz, "Izz")):
        if v.is_number and v < 0:
            raise ModelError(f"{where}: {nm} = {v} is negative")
    I = ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
    if all(v.is_number for row in I for v in row):
        try:
            p = num.symmetric_eigenvalues(num.mat([[float(v) for v in row] for row in I]))
        except (ArithmeticError, RuntimeError, ValueError) as e:
            raise ModelError(f"{where}: the principal moments cannot be computed ({e})") from None
        tol = 1e-12 * max(1.0, max(abs(x) for x in p))
        if p[0] < -tol:
            raise ModelError(f"{where}: the inertia tensor is not positive semi-definite "
                             f"(principal moments {list(p)})")
        if p[0] + p[1] < p[2] - tol:
            raise ModelError(f"{where}: principal moments {list(p)} violate the triangle "
                             f"inequality (I1 + I2 >= I3)")
    return I


def rotation(value: Any, where: str) -> tuple:
    """gamma as [[axis, angle], ...] (degrees / parameter in radians) or a 3x3 matrix."""
    if value is None:
        return identity3()
    if not isinstance(value, (list, tuple)):
        raise ModelError(f"{where}: expected a list of [axis, angle] pairs or a 3x3 matrix")
    if len(value) == 3 and all(isinstance(r, (list, tuple)) and len(r) == 3 for r in value):
        M = tuple(tuple(as_expr(x, f"{where}[{i}][{j}]") for j, x in enumerate(r))
                  for i, r in enumerate(value))
        if all(x.is_number for row in M for x in row):
            A = num.mat([[float(x) for x in row] for row in M])
            AAt = num.matmul(A, num.transpose(A))
            if max(abs(AAt[i][j] - (i == j)) for i in range(3) for j in range(3)) > 1e-9 \
                    or num.determinant(A) < 0:
                raise ModelError(f"{where}: the 3x3 matrix is not a proper rotation "
                                 f"(orthonormal rows, determinant +1)")
        return M
    seq = []
    for i, pair in enumerate(value):
        w = f"{where}[{i}]"
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                and isinstance(pair[0], str) and pair[0] in ("x", "y", "z")):
            raise ModelError(f"{w}: expected [axis, angle] with axis 'x', 'y' or 'z', got {pair!r}")
        angle = pair[1]
        if isinstance(angle, (int, float)) and not isinstance(angle, bool):
            a = as_expr(angle, w)
            rad = sp.pi * a / 180
        else:
            rad = as_expr(angle, w)
        seq.append((AXES.index(pair[0]), rad))
    try:
        return rotation_from_sequence(seq)
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None


def keys(table: Any, allowed: set[str], where: str, required: set[str] = frozenset()) -> dict:
    if not isinstance(table, dict):
        raise ModelError(f"{where}: expected a table, got {table!r}")
    unknown = set(table) - allowed
    if unknown:
        raise ModelError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    missing = required - set(table)
    if missing:
        raise ModelError(f"{where}: missing field(s) {sorted(missing)}")
    return table


def body(table: Any, where: str, default_name: str) -> Body:
    t = keys(table, {"name", "mass", "com", "inertia"}, where)
    name = check_name(t.get("name", default_name), f"{where}.name")
    m = as_expr(t.get("mass", 0), f"{where}.mass")
    if m.is_number and m < 0:
        raise ModelError(f"{where}.mass: {m} is negative")
    d = vec3(t.get("com", [0, 0, 0]), f"{where}.com")
    I_com = inertia(t.get("inertia", [0] * 6), f"{where}.inertia")
    I = inertia_about_origin(m, d, I_com)
    if any(x.is_number and abs(x) > MAX_MAGNITUDE ** 2 for x in (*I[0], *I[1], *I[2])):
        raise ModelError(f"{where}: the inertia about the body origin (I + m |d|^2) exceeds "
                         f"{MAX_MAGNITUDE ** 2:g}: mass and centre of mass too large")
    return Body(name, m, d, I)
