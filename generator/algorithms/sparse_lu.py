"""Unrolled LU of a small square matrix with structural zeros (the closure matrices C^(d)_k).

The pivot order is chosen at generation time from the sparsity pattern (Markowitz: the
non-zero entry whose row and column have the fewest other non-zeros, numeric constants
first, then the largest at a representative state, the home pose), so that literal zeros are
never pivots, no fill-in appears where the structure is triangular, and no pivot vanishes at
the home pose. Each symbolic pivot is checked in the kernel: |u_kk| > tol_k, else ``status``.

Factorisation: row operations E M = U (U triangular in the pivot order). Then

    M x = b:    apply E to b, back-substitute in reverse pivot order;
    M^T y = c:  U^T z = c forward in pivot order (z indexed by pivot rows), y = E^T z.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from mechgen.generator.scalar import Recorder


@dataclass
class Step:
    row: int
    col: int
    inv: sp.Expr                                # 1 / pivot
    u: dict[int, sp.Expr]                        # row `row` at its pivot step: col -> entry
    ops: list[tuple[int, sp.Expr]] = field(default_factory=list)   # (row r, factor f): r -= f row
    pivot: sp.Expr = sp.Integer(1)


class SparseLU:
    def __init__(self, rec: Recorder, M: list[list[sp.Expr]], name: str,
                 col_scale: list[float], status: int, what: str, tol: float = 1e-10) -> None:
        n = len(M)
        A = [list(row) for row in M]
        rows, cols = list(range(n)), list(range(n))
        self.n = n
        self.steps: list[Step] = []
        for k in range(n):
            i, j = _markowitz(A, rows, cols, rec)
            piv = A[i][j]
            if not piv.is_number:
                thr = (tol * col_scale[j]) ** 2
                rec.require_positive(piv * piv - thr, status, f"{what}: pivot {k + 1} vanishes")
            inv = rec.bind(1 / piv, f"{name}_inv{k + 1}")
            rows.remove(i)
            cols.remove(j)
            step = Step(i, j, inv, {c: A[i][c] for c in cols if A[i][c] != 0}, pivot=piv)
            for r in rows:
                if A[r][j] == 0:
                    continue
                f = rec.bind(A[r][j] * inv, f"{name}_f{r + 1}{j + 1}")
                step.ops.append((r, f))
                for c in step.u:
                    A[r][c] = rec.bind(A[r][c] - f * A[i][c], f"{name}_u{r + 1}{c + 1}")
                A[r][j] = sp.Integer(0)
            self.steps.append(step)

    def solve(self, rec: Recorder, b: list[sp.Expr], name: str) -> list[sp.Expr]:
        """x with M x = b."""
        b = list(b)
        for st in self.steps:
            for r, f in st.ops:
                b[r] = rec.bind(b[r] - f * b[st.row], f"{name}_e{r + 1}")
        x: list[sp.Expr] = [sp.Integer(0)] * self.n
        for st in reversed(self.steps):
            acc = b[st.row] - sp.Add(*[u * x[c] for c, u in st.u.items()])
            x[st.col] = rec.bind(acc * st.inv, f"{name}{st.col + 1}")
        return x

    def solve_transposed(self, rec: Recorder, c: list[sp.Expr], name: str) -> list[sp.Expr]:
        """y with M^T y = c."""
        z: dict[int, sp.Expr] = {}
        for k, st in enumerate(self.steps):
            acc = c[st.col] - sp.Add(*[prev.u.get(st.col, 0) * z[prev.row]
                                        for prev in self.steps[:k]])
            z[st.row] = rec.bind(acc * st.inv, f"{name}_z{st.row + 1}")
        y = [z[r] for r in range(self.n)]
        for st in reversed(self.steps):
            for r, f in reversed(st.ops):
                y[st.row] = y[st.row] - f * y[r]
            y[st.row] = rec.bind(y[st.row], f"{name}{st.row + 1}")
        return y


def _markowitz(A: list[list[sp.Expr]], rows: list[int], cols: list[int],
               rec: Recorder) -> tuple[int, int]:
    """Fewest fill-in first; then numeric entries; then the largest at the sample state, where
    sizes equal to 1e-9 (relative) count as equal (a tie of two entries of one length, broken by
    rounding, would order the pivots of like legs differently); then the first column and row."""
    nz_row = {i: sum(1 for j in cols if A[i][j] != 0) for i in rows}
    nz_col = {j: sum(1 for i in rows if A[i][j] != 0) for j in cols}
    cands = []
    for j in cols:
        for i in rows:
            if A[i][j] == 0:
                continue
            v = rec.value(A[i][j])
            size = abs(v) if v is not None and v == v else 0.0
            cands.append(((nz_row[i] - 1) * (nz_col[j] - 1), 0 if A[i][j].is_number else 1,
                          size, j, i))
    if not cands:
        raise ValueError("structurally singular matrix")
    cost = min(c[:2] for c in cands)
    cands = [c for c in cands if c[:2] == cost]
    largest = max(c[2] for c in cands)
    j, i = min(c[3:] for c in cands if c[2] >= largest * (1 - 1e-9))
    return i, j
