"""What each joint contributes: alpha_j, t_j, and the link transform beta_j, r_{j-1,j}.

docs/algorithms.md section 1: joint J_j moves frame j relative to the joint frame J_{j-1} by
``t_j`` (prismatic: ``[q, 0, 0]`` along its axis) and ``alpha_j`` (revolute: ``A_axis(q)``), so

    r_{j-1,j} = l_{j-1} + gamma_{j-1}^T t_j      (frame j-1)
    beta_j    = alpha_j gamma_{j-1}               (frame j-1 -> frame j)
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
    return LinkTransform(beta, r_rel, mo.e, joint.kind, gamma, cs)


def to_parent(lt: LinkTransform, v: Vec) -> Vec:
    """Coordinates in frame j -> frame j-1: beta_j^T v."""
    return matvec(transpose(lt.beta), v)
