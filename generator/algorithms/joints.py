"""What each joint contributes: alpha_j, t_j, and the link transform beta_j, r_{j-1,j}.

docs/algorithms.md section 1: joint J_j moves frame j relative to the joint frame J_{j-1} by
``t_j`` (prismatic: ``[q, 0, 0]`` along its axis) and ``alpha_j`` (revolute: ``A_axis(q)``), so

    r_{j-1,j} = l_{j-1} + gamma_{j-1}^T t_j      (frame j-1)
    beta_j    = alpha_j gamma_{j-1}               (frame j-1 -> frame j)

A vector crosses the joint as beta_j^T v (to the parent) or beta_j v (from it). When gamma is
a constant rotation about one axis that is not a quarter turn (xArm's 1.5708 rad twists, HyQ's
1.57079632679), the product beta = alpha gamma has 8 non-zero entries and beta^T v costs 13
operations, while gamma^T (alpha^T v) costs 6 + 6; :func:`rotate_to_parent` and
:func:`rotate_from_parent` take whichever form costs fewer operations (``LinkTransform.factored``,
decided per joint at generation by counting).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from mechgen.generator.model import Joint
from mechgen.generator.scalar import (Mat, Recorder, Vec, elementary_rotation, eye, matmul, matvec, scale,
                              transpose, zeros)


@dataclass
class JointMotion:
    alpha: Mat     # frame J_{j-1} -> frame j
    t: Vec         # displacement of O_j from the joint frame origin, joint frame
    e: Vec         # unit axis (same coordinates in the joint frame and in frame j)


def joint_motion(rec: Recorder, j: int | str, joint: Joint, q: sp.Expr,
                 cs: tuple | None = None) -> JointMotion:
    """``cs`` = (cos q, sin q) when already known (closed-form inverse kinematics)."""
    e = [sp.Integer(1) if i == joint.axis else sp.Integer(0) for i in range(3)]
    if joint.kind == "R":
        if cs is not None:
            c, s = cs
        else:
            c = rec.bind(sp.cos(q), f"c{j}")
            s = rec.bind(sp.sin(q), f"s{j}")
        return JointMotion(elementary_rotation(joint.axis, c, s), zeros(3), e)
    return JointMotion(eye(), scale(q, e), e)


@dataclass
class LinkTransform:
    beta: Mat      # frame j-1 -> frame j
    r_rel: Vec     # O_{j-1} -> O_j in frame j-1
    e: Vec
    kind: str
    gamma: Mat | None = None        # frame j-1 -> joint frame (constant)
    cs: tuple | None = None         # (cos q, sin q) of a revolute joint
    alpha: Mat | None = None        # joint frame -> frame j (the joint's own rotation)
    factored: bool = False          # rotate by alpha and gamma in turn (fewer operations)


def link_transform(rec: Recorder, j: int | str, joint: Joint, q: sp.Expr,
                   cs: tuple | None = None) -> LinkTransform:
    """beta_j = alpha_j gamma_{j-1}, r_{j-1,j} = l_{j-1} + gamma_{j-1}^T t_j."""
    mo = joint_motion(rec, j, joint, q, cs)
    gamma = [list(row) for row in joint.gamma]
    beta = rec.mat(matmul(mo.alpha, gamma), f"beta{j}")
    gt_t = [sp.Add(*[gamma[k][i] * mo.t[k] for k in range(3)]) for i in range(3)]
    r_rel = rec.vec([li + x for li, x in zip(joint.l, gt_t)], f"r_rel{j}")
    cs = (mo.alpha[(joint.axis + 1) % 3][(joint.axis + 1) % 3],
          mo.alpha[(joint.axis + 1) % 3][(joint.axis + 2) % 3]) if joint.kind == "R" else None
    factored = rotation_cost(mo.alpha) + rotation_cost(gamma) < rotation_cost(beta)
    return LinkTransform(beta, r_rel, mo.e, joint.kind, gamma, cs, mo.alpha, factored)


def rotation_cost(M: Mat) -> int:
    """Operations of M v (or M^T v: the same count) for a general vector v: per row, one
    multiplication per entry other than 0 and +-1, one addition fewer than its non-zeros.
    (Counted for a general v, once per joint: beta's entries, once made, serve every vector.)"""
    cost = 0
    for row in M:
        nonzero = [x for x in row if x != 0]
        cost += max(len(nonzero) - 1, 0) + sum(1 for x in nonzero if x not in (1, -1))
    return cost


def _scales(M: Mat) -> bool:
    """M has a numeric entry other than 0 and +-1 (SymPy would distribute it over a sum)."""
    return any(x != 0 and sp.sympify(x).is_number and x not in (1, -1) for row in M for x in row)


def to_parent(lt: LinkTransform, v: Vec) -> Vec:
    """Coordinates in frame j -> frame j-1: beta_j^T v."""
    return matvec(transpose(lt.beta), v)


def rotate_to_parent(rec: Recorder, lt: LinkTransform, v: Vec, name: str) -> Vec:
    """beta_j^T v; when cheaper (``lt.factored``), gamma^T (alpha^T v) with alpha^T v named
    ``name_J`` (a named intermediate keeps SymPy from distributing gamma's constants over its
    sums). ``v`` is named already: the callers name every carried vector."""
    if not lt.factored:
        return to_parent(lt, v)
    u = rec.vec(matvec(transpose(lt.alpha), v), f"{name}_J")
    return matvec(transpose(lt.gamma), u)


def rotate_from_parent(rec: Recorder, lt: LinkTransform, v: Vec, name: str) -> Vec:
    """beta_j v (frame j-1 -> frame j); when cheaper (``lt.factored``), alpha (gamma v) with
    gamma v named ``name_J``. ``v`` is named ``name_par`` first when a constant of gamma or
    beta would multiply it (naming costs nothing: an element already named stays as it is)."""
    if not lt.factored:
        if _scales(lt.beta):
            v = rec.vec(v, f"{name}_par")
        return matvec(lt.beta, v)
    u = rec.vec(matvec(lt.gamma, rec.vec(v, f"{name}_par")), f"{name}_J")
    return matvec(lt.alpha, u)
