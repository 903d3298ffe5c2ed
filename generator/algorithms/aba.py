"""Forward dynamics by the articulated-body algorithm (Featherstone, RBDA section 7.3), scalar.

Every body j carries, in frame j and about O_j, a spatial inertia in 3 x 3 blocks acting on
(angular acceleration eps, acceleration a of O_j) and giving (moment n about O_j, force f):

    n = J eps + H a            J, M symmetric (6 + 6 named entries), H general (9):
    f = H^T eps + M a          21 entries; a rigid body has J = I_j, H = [c_j]x, M = m_j 1.

The motion is split as a_j = a0_j + da_j, where a0_j is the motion with qdd = 0 (the forward
pass of the RNEA, section 2.3, gravity as a_0 = -g) and da_j is linear in qdd with no
velocity terms: da_j = X_j da_p(j) + S_j qdd_j, da_0 = 0, X_j the motion transform
(eps -> beta eps, a -> beta (a + eps x r_{p,j})). Body j's inertial force is then
I_j da_j + p_j, with p_j the RNEA force of body j at qdd = 0 (f_j, n_j of section 2.3), so
ABA runs with zero velocity-product terms (c_j = 0 in Featherstone's Table 7.1). The
body-twist base's term e_j qd_j x v_b (rnea.py; its twist joints) has no qdd, so it is part of
a0_j and reaches p_j from the forward pass; da_j is unchanged.

    leaves -> base:  I^A_j = I_j + sum_c X_c^T Ia_c X_c,  p^A_j = p_j + sum_c X_c^T pa_c
                     U_j = I^A_j S_j,  D_j = S_j^T U_j,  u_j = tau_j - S_j^T p^A_j
                     Ia_j = I^A_j - U_j U_j^T / D_j,  pa_j = p^A_j + U_j u_j / D_j
    base -> leaves:  da'_j = X_j da_p(j),  qdd_j = (u_j - U_j^T da'_j) / D_j,
                     da_j = da'_j + S_j qdd_j

with tau_j = Q_j + the joint's spring-damper force. S_j is a unit axis, so U_j is one column
of I^A_j and D_j one of its diagonal entries; Ia_j S_j = 0 exactly, so the row and column of
the axis are set to zero rather than computed. D_j are the pivots of the L^T D L factorisation
from the leaves (section 2.4): A is positive definite iff every D_j > 0. Each is checked
against the trace of the joint's block of I^A_j (J for a revolute joint, M for a prismatic
one): the kernel returns status 1 unless D_j > 1e-13 trace.

Carrying Ia_j to the parent p (frame p, about O_p), with beta = beta_j, r = r_{p,j}:
first the rotation, J' = beta^T J beta, H' = beta^T H beta, M' = beta^T M beta (symmetric
blocks by the double angle of crba.rotate_about_axis), then the shift from O_j to O_p:

    M_p = M',   H_p = H' + [r]x M',   J_p = J' + [r]x H'^T - H_p [r]x      (upper triangle)
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from mechgen.generator.algorithms.crba import to_parent_inertia
from mechgen.generator.algorithms.joints import (LinkTransform, rotate_from_parent,
                                                 rotate_to_parent)
from mechgen.generator.algorithms.ldlt import SingularMassMatrix
from mechgen.generator.algorithms.rnea import body_forces, forward_pass
from mechgen.generator.model import Chain
from mechgen.generator.scalar import (Mat, Recorder, Vec, add, cross, skew, transpose, zeros)
from mechgen.generator.statuses import SINGULAR_MASS_MATRIX as SINGULAR

ZERO = sp.Integer(0)


@dataclass
class Inertia6:
    """Spatial inertia [[J, H], [H^T, M]] about a body's origin, in its frame."""

    J: Mat
    H: Mat
    M: Mat


def _axis(lt: LinkTransform) -> int:
    return [i for i in range(3) if lt.e[i] != 0][0]


def _sym(rec: Recorder, A: Mat, name: str) -> Mat:
    """Name the upper triangle of a symmetric 3 x 3 block; the lower one shares the names."""
    out = [[ZERO] * 3 for _ in range(3)]
    for a in range(3):
        for b in range(a, 3):
            out[a][b] = out[b][a] = rec.bind(A[a][b], f"{name}{a}{b}")
    return out


def rigid_inertia(m, c: Vec, I: Mat) -> Inertia6:
    """J = I (about O_j), H = [c]x, M = m 1 (c the first moment m d)."""
    return Inertia6([list(r) for r in I], skew(list(c)),
                    [[m if a == b else ZERO for b in range(3)] for a in range(3)])


def add_inertia(A: Inertia6, B: Inertia6) -> Inertia6:
    return Inertia6(*[[add(ra, rb) for ra, rb in zip(X, Y)]
                      for X, Y in ((A.J, B.J), (A.H, B.H), (A.M, B.M))])


def motion_subspace(I: Inertia6, kind: str, k: int) -> tuple[Vec, Vec, sp.Expr]:
    """(U_n, U_f, D): U = I S for the unit axis k, angular (revolute) or linear (prismatic)."""
    if kind == "R":
        return [I.J[a][k] for a in range(3)], [I.H[k][a] for a in range(3)], I.J[k][k]
    return [I.H[a][k] for a in range(3)], [I.M[a][k] for a in range(3)], I.M[k][k]


def project_out(rec: Recorder, I: Inertia6, Un: Vec, Uf: Vec, W: tuple[Vec, Vec], kind: str,
                k: int, name: str) -> Inertia6:
    """Ia = I - U U^T / D with W = U / D named; the axis row and column are exactly zero."""
    Wn, Wf = W
    J = [[I.J[a][b] - Un[a] * Wn[b] for b in range(3)] for a in range(3)]
    H = [[I.H[a][b] - Un[a] * Wf[b] for b in range(3)] for a in range(3)]
    M = [[I.M[a][b] - Uf[a] * Wf[b] for b in range(3)] for a in range(3)]
    for a in range(3):
        if kind == "R":
            J[k][a] = J[a][k] = H[k][a] = ZERO
        else:
            M[k][a] = M[a][k] = H[a][k] = ZERO
    return Inertia6(_sym(rec, J, f"{name}J"), rec.mat(H, f"{name}H"), _sym(rec, M, f"{name}M"))


def _rotate_general(rec: Recorder, lt: LinkTransform, H: Mat, name: str) -> Mat:
    """beta^T H beta for a general 3 x 3 H: its columns, then its rows, carried to the parent."""
    cols = [rec.vec(rotate_to_parent(rec, lt, [H[a][b] for a in range(3)], f"{name}c{b}"),
                    f"{name}c{b}") for b in range(3)]
    BH = [[cols[b][a] for b in range(3)] for a in range(3)]          # beta^T H
    rows = [rec.vec(rotate_to_parent(rec, lt, BH[a], f"{name}r{a}"), f"{name}r{a}")
            for a in range(3)]                                       # (beta^T (beta^T H)^T)^T
    return rows


def inertia_to_parent(rec: Recorder, lt: LinkTransform, I: Inertia6, name: str) -> Inertia6:
    """X^T Ia X in the parent's frame about O_p (the module docstring's shift formulas)."""
    J = to_parent_inertia(rec, lt, _sym(rec, I.J, f"{name}j"), f"{name}RJ")
    M = to_parent_inertia(rec, lt, _sym(rec, I.M, f"{name}m"), f"{name}RM")
    H = _rotate_general(rec, lt, I.H, f"{name}RH")
    J, M = _sym(rec, J, f"{name}Jr"), _sym(rec, M, f"{name}Mr")
    rx = skew(list(lt.r_rel))
    Hp = rec.mat([[H[a][b] + sum(rx[a][k] * M[k][b] for k in range(3)) for b in range(3)]
                  for a in range(3)], f"{name}Hp")
    Jp = [[ZERO] * 3 for _ in range(3)]
    for a in range(3):
        for b in range(a, 3):
            Jp[a][b] = Jp[b][a] = (J[a][b] + sum(rx[a][k] * H[b][k] for k in range(3))
                                   - sum(Hp[a][k] * rx[k][b] for k in range(3)))
    return Inertia6(Jp, Hp, M)


def force_to_parent(rec: Recorder, lt: LinkTransform, n: Vec, f: Vec, name: str
                    ) -> tuple[Vec, Vec]:
    """(n, f) about O_j in frame j -> about O_p in frame p: f' = beta^T f,
    n' = beta^T n + r x f'."""
    fp = rec.vec(rotate_to_parent(rec, lt, f, f"{name}f"), f"{name}f")
    n_p = add(rotate_to_parent(rec, lt, n, f"{name}n"), cross(lt.r_rel, fp))
    return n_p, fp


def motion_from_parent(rec: Recorder, lt: LinkTransform, eps: Vec, a: Vec, name: str
                       ) -> tuple[Vec, Vec]:
    """X (eps, a): eps' = beta eps, a' = beta (a + eps x r)."""
    eps_j = rec.vec(rotate_from_parent(rec, lt, eps, f"{name}e"), f"{name}e")
    a_j = rec.vec(rotate_from_parent(rec, lt, add(a, cross(eps, lt.r_rel)), f"{name}a"),
                  f"{name}a")
    return eps_j, a_j


def aba(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list, tau: list,
        rel_tol: float = 1e-13) -> list[sp.Expr]:
    """qdd of A(q) qdd = tau - h(q, qd) on a tree of 1-DoF joints (the module docstring)."""
    n = chain.n
    mo = forward_pass(rec, chain, links, qd, None, [-g for g in chain.gravity])
    own = body_forces(chain, mo)
    IA: list = [rigid_inertia(b.m, b.c, b.I) for b in chain.bodies]
    pA: list = [list(o) for o in own]           # (f, n) per body
    U: list = [None] * n
    W: list = [None] * n
    uD: list = [None] * n
    for j in range(n, 0, -1):
        lt, k = links[j - 1], _axis(links[j - 1])
        I = IA[j - 1]
        if chain.children(j):   # sums of the children's terms: named once, used many times
            I = Inertia6(_sym(rec, I.J, f"IAJ{j}"), rec.mat(I.H, f"IAH{j}"),
                         _sym(rec, I.M, f"IAM{j}"))
        f, nm = rec.vec(pA[j - 1][0], f"pAf{j}"), rec.vec(pA[j - 1][1], f"pAn{j}")
        Un, Uf, D = motion_subspace(I, lt.kind, k)
        D = rec.bind(D, f"Da{j}")
        block = I.J if lt.kind == "R" else I.M
        _check_pivot(rec, D, block[0][0] + block[1][1] + block[2][2], j,
                     chain.coordinates[j - 1], rel_tol)
        invD = rec.bind(1 / D, f"invDa{j}")
        u = rec.bind(tau[j - 1] - (nm if lt.kind == "R" else f)[k], f"ua{j}")
        U[j - 1] = (Un, Uf)
        W[j - 1] = (rec.vec([x * invD for x in Un], f"Wn{j}"),
                    rec.vec([x * invD for x in Uf], f"Wf{j}"))
        uD[j - 1] = rec.bind(u * invD, f"uD{j}")
        p = chain.parent[j - 1]
        if p == 0:
            continue
        Ia = project_out(rec, I, Un, Uf, W[j - 1], lt.kind, k, f"Ia{j}")
        pa_n = rec.vec([x + y * uD[j - 1] for x, y in zip(nm, Un)], f"pan{j}")
        pa_f = rec.vec([x + y * uD[j - 1] for x, y in zip(f, Uf)], f"paf{j}")
        n_p, f_p = force_to_parent(rec, lt, pa_n, pa_f, f"paP{j}")
        IA[p - 1] = add_inertia(IA[p - 1], inertia_to_parent(rec, lt, Ia, f"IaP{j}"))
        pA[p - 1] = [add(pA[p - 1][0], f_p), add(pA[p - 1][1], n_p)]
    qdd: list = [None] * n
    da: list = [None] * n
    for j in range(1, n + 1):
        lt, k, p = links[j - 1], _axis(links[j - 1]), chain.parent[j - 1]
        eps, a = (zeros(3), zeros(3)) if p == 0 else motion_from_parent(
            rec, lt, *da[p - 1], f"da{j}")
        Wn, Wf = W[j - 1]
        qdd[j - 1] = rec.bind(uD[j - 1] - sum(x * y for x, y in zip(Wn, eps))
                              - sum(x * y for x, y in zip(Wf, a)), f"qdd{j}")
        if lt.kind == "R":
            eps = [x + (qdd[j - 1] if i == k else 0) for i, x in enumerate(eps)]
        else:
            a = [x + (qdd[j - 1] if i == k else 0) for i, x in enumerate(a)]
        da[j - 1] = (rec.vec(eps, f"dae{j}"), rec.vec(a, f"daa{j}"))
    return qdd


def _check_pivot(rec: Recorder, D: sp.Expr, scale: sp.Expr, j: int, who: str,
                 rel_tol: float) -> None:
    """D_j: a constant <= 0 is refused at generation; otherwise the kernel returns status 1
    unless D_j > rel_tol * scale (the trace of the joint's block of I^A_j)."""
    if D.is_number and not D > 0:
        raise SingularMassMatrix(f"joint {who!r} moves no mass or inertia in any "
                                 f"configuration: the mass matrix is singular")
    rec.require_positive(D - sp.Float(rel_tol) * scale, SINGULAR, f"pivot Da{j} of the "
                         f"articulated-body inertia")
