"""Generation-time analysis of a linkage's constraints (paper 004, steps 1-2; 001 section 1.5).

1. The constraint rows phi(q) and their Jacobian G are recorded symbolically; rows identically
   zero for the geometry (three per planar loop) are dropped: ``rows``.
2. Assembled poses: the reference pose (q = q_ref, closed by construction) and a few random
   ones, each found by Gauss-Newton with the pseudo-inverse, dq = -G^+ phi, from a random
   perturbation of the reference pose (a fixed pure-Python generator: the same poses on every
   machine).
3. The numeric rank r of G at each pose (singular values above ``tol`` times the largest); the
   generic rank is the largest. Paper 004's choice of r independent rows is recorded (pivoted
   Gram-Schmidt on the rows; ties, within 1e-9, to the earlier row) with the m - r redundant
   ones; the kernels themselves keep every row (least squares, kernels.py).
4. The f = n - r independent coordinates: the user's, checked, or the earliest coordinates in
   tree order (joints at ground first) whose removal leaves the remaining columns of G of full
   rank r at every pose (paper 004's "first n - r coordinates", made well-posed).

Everything runs in mpmath at 40 digits (pure Python): the decisions are the same everywhere.
"""

from __future__ import annotations

import random

import mpmath
import sympy as sp
from sympy.printing.pycode import MpmathPrinter

from mechgen.generator.algorithms.kinematics import chain_kinematics
from mechgen.generator.algorithms.loops import closure_rows, is_structural_zero
from mechgen.generator.families.linkage.model import Closure, Linkage
from mechgen.generator.ir import Assign, symbol
from mechgen.generator.model import ModelError
from mechgen.generator.scalar import Recorder

MP = mpmath.MPContext()
MP.dps = 40
POSES = 4                  # random assembled poses besides the reference pose
ATTEMPTS = 24
TIE = mpmath.mpf("1e-9")


def coordinate_symbols(n: int) -> list[sp.Symbol]:
    return [symbol(f"q{j}") for j in range(1, n + 1)]


def effective(model: Linkage, q: list) -> list:
    """The tree's joint variables: each coordinate measured from its reference value."""
    return [qj - r if r != 0 else qj for qj, r in zip(q, model.q_ref)]


def _evaluator(model: Linkage):
    """q (mpf list) -> (phi, G) of every structurally non-zero row, and their labels."""
    rec = Recorder()
    q = coordinate_symbols(model.n)
    kin = chain_kinematics(rec, model.chain, effective(model, q), jacobians=True)
    rows, _ = closure_rows(rec, model, kin, q)
    rows = [r for r in rows if not is_structural_zero(r)]
    printer = MpmathPrinter({"fully_qualified_modules": False})
    lines = ["def f(" + ", ".join(map(str, q)) + "):"]
    for st in rec.statements:
        if isinstance(st, Assign):
            lines.append(f"    {st.target} = {printer.doprint(st.expr)}")
    out = [printer.doprint(sp.sympify(r.phi)) for r in rows]
    jac = [[printer.doprint(sp.sympify(g)) for g in r.G] for r in rows]
    lines.append(f"    return [{', '.join(out)}], [{', '.join('[' + ', '.join(j) + ']' for j in jac)}]")
    env = {name: getattr(MP, name) for name in ("mpf", "sin", "cos", "sqrt", "pi", "atan2")}
    exec("\n".join(lines), env)  # noqa: S102 - our own printed code, no spec text reaches it
    return env["f"], [r.label for r in rows]


def _svd(G: list[list]) -> tuple[list, object]:
    if not G or not G[0]:
        return [], None
    U, S, V = MP.svd_r(MP.matrix(G))
    return [S[i] for i in range(min(len(G), len(G[0])))], (U, S, V)


def rank(G: list[list], tol: float) -> int:
    s, _ = _svd(G)
    if not s or max(s) == 0:
        return 0
    return sum(1 for x in s if x > tol * max(s))


def _pinv_step(G: list[list], phi: list, tol: float, r: int) -> list:
    """dq = -G_r^+ phi: the minimum-norm Gauss-Newton step on the r largest singular values
    (off the constraint manifold an overconstrained loop's G has full rank; its smallest
    singular values would throw the step away)."""
    m, n = len(G), len(G[0])
    M = MP.matrix(G)
    U, S, V = MP.svd_r(M, full_matrices=False)
    order = sorted(range(min(m, n)), key=lambda k: -S[k])[:r]
    smax = S[order[0]]
    dq = [MP.mpf(0)] * n
    for k in order:
        if S[k] <= tol * smax:
            continue
        c = MP.fsum(U[i, k] * phi[i] for i in range(m)) / S[k]
        for j in range(n):
            dq[j] -= c * V[k, j]
    return dq


def assemble(f, q0: list, tol: float, r: int, iterations: int = 60) -> list | None:
    """Gauss-Newton to the closest assembled pose; None unless the residual ends below 1e-12
    (not exactly zero: an overconstrained loop's geometry, written in doubles, closes only to
    about 1e-16)."""
    q = list(q0)
    for _ in range(iterations):
        phi, G = f(*q)
        if not phi or max(abs(x) for x in phi) < MP.mpf("1e-30"):
            return q
        dq = _pinv_step(G, phi, tol, r)
        q = [a + b for a, b in zip(q, dq)]
        if max(abs(x) for x in dq) < MP.mpf("1e-24"):
            break
    phi, _ = f(*q)
    return q if max(abs(x) for x in phi) < MP.mpf("1e-12") else None


def _poses(model: Linkage, f, tol: float) -> list[list]:
    ref = [MP.mpf(float(x)) for x in model.q_ref]
    poses = [ref]
    r = max(rank(f(*ref)[1], tol), 1)
    rng = random.Random(20261123)
    slide = {j.name for j in model.chain.joints if j.kind == "P"}
    for _ in range(ATTEMPTS):
        if len(poses) > POSES:
            break
        guess = [x + MP.mpf(rng.uniform(-0.3, 0.3) * (0.05 if nm in slide else 1.0))
                 for x, nm in zip(ref, model.coordinates)]
        q = assemble(f, guess, tol, r)
        if q is not None:
            poses.append(q)
    return poses


def _residual_norm(v: list) -> object:
    return MP.sqrt(MP.fsum(x * x for x in v))


def keep_rows(G: list[list], r: int) -> list[int]:
    """r rows by pivoted Gram-Schmidt: the largest remaining component first (ties, within a
    relative 1e-9, to the earlier row)."""
    work = [list(row) for row in G]
    kept: list[int] = []
    for _ in range(r):
        norms = [(_residual_norm(row) if i not in kept else MP.mpf(-1))
                 for i, row in enumerate(work)]
        best = max(norms)
        i = next(k for k, v in enumerate(norms) if v >= best * (1 - TIE))
        kept.append(i)
        u = [x / norms[i] for x in work[i]]
        for k, row in enumerate(work):
            if k not in kept:
                c = MP.fsum(a * b for a, b in zip(row, u))
                work[k] = [a - c * b for a, b in zip(row, u)]
    return sorted(kept)


def _columns(G: list[list], cols: list[int]) -> list[list]:
    return [[row[c] for c in cols] for row in G]


def _choose_independent(model: Linkage, Gs: list[list[list]], r: int, tol: float,
                        given: list[str] | None) -> list[int]:
    n = model.n
    f = n - r
    if given is not None:
        idx = [model.coordinates.index(c) for c in given]
        if len(set(idx)) != f:
            raise ModelError(f"{model.source}: closure.independent: the linkage has {f} degrees "
                             f"of freedom (n = {n} tree coordinates, constraint rank {r}); "
                             f"{len(set(idx))} independent coordinates given")
        dep = [j for j in range(n) if j not in idx]
        bad = [k for k, G in enumerate(Gs) if rank(_columns(G, dep), tol) < r]
        if bad:
            raise ModelError(f"{model.source}: closure.independent: with {given} independent, "
                             f"the dependent coordinates {[model.coordinates[j] for j in dep]} "
                             f"cannot be solved for at {'the reference pose' if 0 in bad else 'an assembled pose'} "
                             f"(their constraint columns have rank < {r}); choose others")
        return idx
    chosen: list[int] = []
    for j in range(n):
        if len(chosen) == f:
            break
        rest = [c for c in range(n) if c not in chosen and c != j]
        if all(rank(_columns(G, rest), tol) == r for G in Gs):
            chosen.append(j)
    if len(chosen) != f:
        raise ModelError(f"{model.source}: no set of {f} independent coordinates leaves the "
                         f"dependent ones solvable at every analysed pose")
    return chosen


def analyse(model: Linkage, independent: list[str] | None, tol: float) -> Linkage:
    f, labels = _evaluator(model)
    if not labels:
        model.closure = Closure((), 0, (), tuple(range(model.n)), (), 1,
                                ("no loops: every coordinate is independent",), (0,))
        return model
    poses = _poses(model, f, tol)
    Gs = [f(*q)[1] for q in poses]
    ranks = [rank(G, tol) for G in Gs]
    r = max(ranks)
    generic = [G for G, rk in zip(Gs, ranks) if rk == r]
    kept = keep_rows(generic[0], r)
    for G in generic:
        if rank([G[i] for i in kept], tol) < r:
            raise ModelError(f"{model.source}: the kept constraint rows "
                             f"{[labels[i] for i in kept]} lose rank at an assembled pose: the "
                             f"redundancy is not structural; check the geometry")
    ind = _choose_independent(model, generic, r, tol, independent)
    dep = [j for j in range(model.n) if j not in ind]
    notes = []
    if ranks[0] < r:
        notes.append(f"the reference pose is a singular configuration (constraint rank "
                     f"{ranks[0]} < {r})")
    dropped = [labels[i] for i in range(len(labels)) if i not in kept]
    if dropped:
        notes.append(f"{len(dropped)} redundant constraint row(s) ({', '.join(dropped)} at the "
                     f"reference pose; paper 004 would drop them): the kernels solve over every "
                     f"row by least squares, so the motion and the drive forces hold along the "
                     f"whole motion; the multipliers are the minimum-norm set (their split is "
                     f"statically indeterminate without compliance)")
    square = len(labels) == r
    det = MP.det(MP.matrix(_columns(Gs[0], dep))) if square and r else MP.mpf(0)
    branch = 0 if ranks[0] < r or not square else (1 if det > 0 else -1)
    g0 = generic[0]
    scale = tuple(max(float(_residual_norm([row[j] for row in g0])), 1e-12)
                  for j in range(model.n))
    sample = tuple(float(x) for x in poses[ranks.index(r)])
    model.closure = Closure(tuple(labels), r, tuple(kept), tuple(ind), tuple(dep), branch,
                            tuple(notes), tuple(ranks), scale, sample)
    return model
