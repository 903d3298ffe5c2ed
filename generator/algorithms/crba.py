"""Mass matrix by the composite-body algorithm (paper 000 section 5; Featherstone's CRBA).

Composite body of bodies j..n in frame j, about O_j: mass M_j, first moment c_j, inertia I_j.
Adding composite j to its parent (frame j-1, about O_{j-1}), with r = r_{j-1,j},
c' = beta_j^T c_j, I' = beta_j^T I_j beta_j:

    M_{j-1} += M_j
    c_{j-1} += M_j r + c'
    I_{j-1} += I' + M_j (r.r 1 - r r^T) + 2 (r.c') 1 - c' r^T - r c'^T

Column j: a unit acceleration of joint j alone moves composite j; its inertial force and
moment about O_j are (revolute) F = e x c_j, N = I_j e, (prismatic) F = M_j e, N = c_j x e.
A_jj is their component along e_j; carried to each earlier joint i by
F <- beta^T F, N <- beta^T N + r x (beta^T F), A_ij is the component along e_i.

In a tree, j-1 stands for the parent p(j): composite j is added into its parent, and column j
is carried only down the path p(j), p(p(j)), ... to the base; A_ij = 0 for every joint i off that
path (branch-induced sparsity, Featherstone RBDA section 6.2).
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.algorithms.joints import LinkTransform, rotate_to_parent
from mechgen.generator.model import Chain
from mechgen.generator.scalar import (Mat, Recorder, _count, add, cross, dot, matmul, matvec, scale,
                              transpose)


def _axis(lt: LinkTransform) -> int:
    return [i for i in range(3) if lt.e[i] != 0][0]


def _sym_transform(beta: Mat, I: Mat) -> Mat:
    """beta^T I beta for symmetric I (upper triangle computed, mirrored)."""
    return matmul(matmul(transpose(beta), I), beta)


def rotate_about_axis(rec: Recorder, I: Mat, axis: int, c, s, name: str) -> Mat:
    """alpha^T I alpha for symmetric I and alpha = A_axis(q): with a, b the two other axes
    (cyclic), D = I_aa - I_bb and X = s^2 D + 2 c s I_ab (the inertia moved from a to b),

        I'_aa = I_aa - X                          I'_bb = I_bb + X
        I'_ab = D c s + I_ab (1 - 2 s^2)          I'_axis,axis = I_axis,axis
        I'_a,axis = c I_a,axis - s I_b,axis       I'_b,axis = s I_a,axis + c I_b,axis

    (c^2 I_aa + s^2 I_bb - 2 c s I_ab = I_aa - X since c^2 = 1 - s^2; 1 - 2 s^2 = c^2 - s^2.)
    20 operations where the product of three 3x3 matrices takes about 33 even when sparse;
    along a chain of bodies I_aa -> D -> s^2 D -> X -> I'_aa is 4 operations deep (the
    double-angle form (Sum + D C2) / 2 - I_ab S2 took 23 operations and 5 steps)."""
    a, b = (axis + 1) % 3, (axis + 2) % 3
    _count(adds=8, muls=12)
    ss = rec.bind(s * s, f"{name}_ss")
    cs = rec.bind(c * s, f"{name}_cs")
    D = rec.bind(I[a][a] - I[b][b], f"{name}_D")
    X = rec.bind(ss * D + 2 * cs * I[a][b], f"{name}_X")
    out = [[None] * 3 for _ in range(3)]
    out[a][a] = rec.bind(I[a][a] - X, f"{name}_{a}{a}")
    out[b][b] = rec.bind(I[b][b] + X, f"{name}_{b}{b}")
    C2 = rec.bind(1 - 2 * ss, f"{name}_C2")
    out[a][b] = out[b][a] = rec.bind(D * cs + I[a][b] * C2, f"{name}_{min(a, b)}{max(a, b)}")
    out[axis][axis] = I[axis][axis]
    out[a][axis] = out[axis][a] = rec.bind(c * I[a][axis] - s * I[b][axis],
                                           f"{name}_{min(a, axis)}{max(a, axis)}")
    out[b][axis] = out[axis][b] = rec.bind(s * I[a][axis] + c * I[b][axis],
                                           f"{name}_{min(b, axis)}{max(b, axis)}")
    return out


def to_parent_inertia(rec: Recorder, lt: LinkTransform, I: Mat, name: str) -> Mat:
    """beta^T I beta = gamma^T (alpha^T I alpha) gamma: the joint rotation by the double angle,
    then the constant gamma (a signed permutation, often: then it costs nothing)."""
    if lt.cs is None or lt.gamma is None:
        return _sym_transform(lt.beta, I)
    axis = [i for i in range(3) if lt.e[i] != 0][0]
    I_J = rotate_about_axis(rec, I, axis, *lt.cs, name)
    return _sym_transform(lt.gamma, I_J)


def composite_inertias(rec: Recorder, chain: Chain, links: list[LinkTransform]):
    n = chain.n
    M = [b.m for b in chain.bodies]
    c = [list(b.c) for b in chain.bodies]
    I = [[list(row) for row in b.I] for b in chain.bodies]
    for j in range(n, 0, -1):  # add composite j (index j-1) into its parent p (index p-1)
        lt = links[j - 1]
        p = chain.parent[j - 1]
        Mj = rec.bind(M[j - 1], f"Mc{j}")
        cj = rec.vec(c[j - 1], f"cc{j}")
        Ij = _symmetric(rec, I[j - 1], f"Ic{j}")
        M[j - 1], c[j - 1], I[j - 1] = Mj, cj, Ij
        if p == 0:
            continue
        r = lt.r_rel
        c_p = rec.vec(rotate_to_parent(rec, lt, cj, f"cp{j}"), f"cp{j}")
        I_p = to_parent_inertia(rec, lt, Ij, f"IJ{j}")
        rr = dot(r, r)
        rc = dot(r, c_p)
        M[p - 1] = M[p - 1] + Mj
        c[p - 1] = add(c[p - 1], add(scale(Mj, r), c_p))
        _count(adds=27, muls=21)
        I[p - 1] = [[I[p - 1][a][b] + I_p[a][b]
                     + Mj * ((rr if a == b else 0) - r[a] * r[b])
                     + (2 * rc if a == b else 0) - c_p[a] * r[b] - r[a] * c_p[b]
                     for b in range(3)] for a in range(3)]
    return M, c, I


def _symmetric(rec: Recorder, A: Mat, name: str) -> Mat:
    """Name the upper triangle only; the lower one refers to the same names."""
    out = [[None] * 3 for _ in range(3)]
    for a in range(3):
        for b in range(a, 3):
            out[a][b] = out[b][a] = rec.bind(sp.expand(A[a][b]), f"{name}_{a}{b}")
    return out


def crba(rec: Recorder, chain: Chain, links: list[LinkTransform]) -> list[list[sp.Expr]]:
    n = chain.n
    M, c, I = composite_inertias(rec, chain, links)
    A = [[sp.Integer(0)] * n for _ in range(n)]
    for j in range(n, 0, -1):
        lt = links[j - 1]
        e = lt.e
        if lt.kind == "R":
            F, N = cross(e, c[j - 1]), matvec(I[j - 1], e)
        else:
            F, N = scale(M[j - 1], e), cross(c[j - 1], e)
        A[j - 1][j - 1] = (N if lt.kind == "R" else F)[_axis(lt)]
        k, i = j, chain.parent[j - 1]
        while i > 0:
            child = links[k - 1]  # joint k carries frame k -> frame i = p(k)
            F = rec.vec(rotate_to_parent(rec, child, F, f"Fm{j}_{i}"), f"Fm{j}_{i}")
            N = rec.vec(add(rotate_to_parent(rec, child, N, f"Nm{j}_{i}"), cross(child.r_rel, F)),
                        f"Nm{j}_{i}")
            lti = links[i - 1]
            A[i - 1][j - 1] = A[j - 1][i - 1] = (N if lti.kind == "R" else F)[_axis(lti)]
            k, i = i, chain.parent[i - 1]
    return A
