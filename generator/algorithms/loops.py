"""Loop closure of a linkage: constraint rows phi(q), their Jacobian G = d phi / dq and the
acceleration bias gamma = -(dG/dt) qd, from the spanning tree's kinematics (paper 001 eqs. 2-4,
paper 004 eqs. 6-8; docs/linkage.md).

A frame fixed in tree body b at o_b (body frame): world origin o = r_b + tau_b^T o_b, world
axis a = tau_b^T a_b; its Jacobians T_o = T_b - skew(tau_b^T o_b) R_b and R_b (columns per
coordinate, kinematics.point_kinematics). With d = o2 - o1 and a on frame 1, b on frame 2:

    phi = d_i          G = T_o2[i] - T_o1[i]
                       gamma_bias = (a_o2 - a_o1)_i
    phi = a . b        G = (b x a) . (R_2 - R_1)
                       phidd_bias = (eps_2 - eps_1).(b x a) + (w_2 - w_1).((w_2 x b) x a + b x (w_1 x a))
    phi = d . a        G = a . (T_o2 - T_o1) + (a x d) . R_1
                       phidd_bias = (a_o2 - a_o1).a + 2 (v_o2 - v_o1).(w_1 x a)
                                    + d.(eps_1 x a + w_1 x (w_1 x a))

where a_o = w_b + eps_b x (tau_b^T o_b) + w_b x (w_b x tau_b^T o_b) is the velocity-product
acceleration of the frame's origin (qdd = 0) and w the angular velocity. Then
G qdd = gamma with gamma = -phidd_bias. The columns of G are Pavlov's joint screws B_k
(001 section 1.5): for a revolute coordinate (o_k x w_k; w_k), for a slide (axis; 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from mechgen.generator.algorithms.kinematics import BodyKinematics
from mechgen.generator.families.linkage.model import Frame, Linkage
from mechgen.generator.scalar import Recorder, Vec, add, cross, dot, matvec, sub, transpose, zeros


@dataclass
class FrameMotion:
    o: Vec                      # origin, frame 0
    axes: dict[str, Vec]        # "x", "y", "z" in frame 0
    T: list[Vec]                # columns d v_o / d qd
    R: list[Vec]                # columns d omega / d qd
    v: Vec | None = None        # origin velocity
    omega: Vec | None = None
    a_bias: Vec | None = None   # origin acceleration at qdd = 0
    eps: Vec | None = None      # angular acceleration at qdd = 0


@dataclass
class Row:
    """One constraint row. Its multiplier lambda is the wrench lambda (force, moment) on
    frame 2's body at o2 (frame 0), and the opposite on frame 1's body: G^T lambda is that
    wrench's generalised force."""

    label: str
    phi: sp.Expr
    G: list[sp.Expr]            # one entry per coordinate
    bias: sp.Expr | None = None  # gamma = -phidd at qdd = 0
    force: Vec = field(default_factory=lambda: zeros(3))
    moment: Vec = field(default_factory=lambda: zeros(3))


def frame_motion(rec: Recorder, kin: list[BodyKinematics], f: Frame, name: str,
                 jacobian: bool = True) -> FrameMotion:
    b = kin[f.body]
    tauT = transpose(b.tau)
    d0 = rec.vec(matvec(tauT, list(f.o)), f"{name}_d")
    o = rec.vec(add(b.r, d0), f"{name}_o")
    axes = {k: rec.vec(matvec(tauT, list(a)), f"{name}_{k}")
            for k, a in (("x", f.x), ("y", f.y), ("z", f.z))}
    T = [rec.vec(sub(Tc, cross(d0, Rc)), f"{name}_T{i + 1}") if any(x != 0 for x in Rc) else Tc
         for i, (Tc, Rc) in enumerate(zip(b.T, b.R))] if jacobian else []
    fm = FrameMotion(o, axes, T, list(b.R) if jacobian else [])
    if b.omega is not None:
        w = b.omega
        fm.omega = w
        fm.eps = b.eps
        fm.v = rec.vec(add(b.v, cross(w, d0)), f"{name}_v")
        fm.a_bias = rec.vec(add(add(b.w, cross(b.eps, d0)), cross(w, cross(w, d0))),
                            f"{name}_abias")
    return fm


def _columns_dot(a: Vec, cols: list[Vec]) -> list[sp.Expr]:
    return [dot(a, c) for c in cols]


def _diff_cols(c2: list[Vec], c1: list[Vec]) -> list[Vec]:
    return [sub(x, y) for x, y in zip(c2, c1)]


def position_rows(f1: FrameMotion, f2: FrameMotion) -> list[Row]:
    d = sub(f2.o, f1.o)
    dT = _diff_cols(f2.T, f1.T)
    rows = []
    for i, lab in enumerate("xyz"):
        bias = None if f1.a_bias is None else -(f2.a_bias[i] - f1.a_bias[i])
        rows.append(Row(f"d{lab}", d[i], [c[i] for c in dT], bias,
                        force=[sp.Integer(int(k == i)) for k in range(3)]))
    return rows


def axis_dot_row(label: str, a: Vec, b: Vec, f1: FrameMotion, f2: FrameMotion) -> Row:
    """phi = a . b, a fixed on frame 1's body, b on frame 2's."""
    bxa = cross(b, a)
    G = _columns_dot(bxa, _diff_cols(f2.R, f1.R)) if f1.R else []
    bias = None
    if f1.omega is not None:
        w1, w2 = f1.omega, f2.omega
        rate = add(cross(cross(w2, b), a), cross(b, cross(w1, a)))
        bias = -(dot(sub(f2.eps, f1.eps), bxa) + dot(sub(w2, w1), rate))
    return Row(label, dot(a, b), G, bias, moment=bxa)


def offset_dot_row(label: str, a: Vec, f1: FrameMotion, f2: FrameMotion) -> Row:
    """phi = (o2 - o1) . a, a fixed on frame 1's body."""
    d = sub(f2.o, f1.o)
    G = []
    if f1.T:
        axd = cross(a, d)
        G = [dot(a, sub(T2, T1)) + dot(axd, R1) for T2, T1, R1 in zip(f2.T, f1.T, f1.R)]
    bias = None
    if f1.omega is not None:
        w1 = f1.omega
        w1xa = cross(w1, a)
        bias = -(dot(sub(f2.a_bias, f1.a_bias), a) + 2 * dot(sub(f2.v, f1.v), w1xa)
                 + dot(d, add(cross(f1.eps, a), cross(w1, w1xa))))
    return Row(label, dot(d, a), G, bias, force=list(a))


def cut_rows(kind: str, f1: FrameMotion, f2: FrameMotion) -> list[Row]:
    """The rows of one cut joint, in the order of model.CUT_ROWS."""
    x1, y1, z1 = f1.axes["x"], f1.axes["y"], f1.axes["z"]
    y2, z2 = f2.axes["y"], f2.axes["z"]
    if kind in ("S", "U", "R"):
        rows = position_rows(f1, f2)
        if kind == "U":
            rows.append(axis_dot_row("z1.z2", z1, z2, f1, f2))
        if kind == "R":
            rows += [axis_dot_row("x1.z2", x1, z2, f1, f2),
                     axis_dot_row("y1.z2", y1, z2, f1, f2)]
        return rows
    rows = [offset_dot_row("d.x1", x1, f1, f2), offset_dot_row("d.y1", y1, f1, f2),
            axis_dot_row("x1.z2", x1, z2, f1, f2), axis_dot_row("y1.z2", y1, z2, f1, f2)]
    if kind == "P":
        rows.append(axis_dot_row("x1.y2", x1, y2, f1, f2))
    return rows


def closure_rows(rec: Recorder, model: Linkage, kin: list[BodyKinematics], q: list,
                 jacobian: bool = True) -> tuple[list[Row], dict[str, sp.Expr]]:
    """Every constraint row (cut joints in order, then screws) labelled ``<joint>:<row>``, and
    the orientation checks ``<joint>:z1.z2`` (positive on the right branch)."""
    n = model.n
    rows: list[Row] = []
    checks: dict[str, sp.Expr] = {}
    for cut in model.cuts:
        f1 = frame_motion(rec, kin, cut.frame1, f"{cut.joint}_f1", jacobian)
        f2 = frame_motion(rec, kin, cut.frame2, f"{cut.joint}_f2", jacobian)
        for r in cut_rows(cut.kind, f1, f2):
            rows.append(Row(f"{cut.joint}:{r.label}", r.phi, r.G, r.bias, r.force, r.moment))
        if cut.kind in ("R", "C", "P"):
            checks[f"{cut.joint}:z1.z2"] = dot(f1.axes["z"], f2.axes["z"])
        if cut.kind == "P":
            checks[f"{cut.joint}:x1.x2"] = dot(f1.axes["x"], f2.axes["x"])
    for s in model.screws:
        G = [sp.Integer(0)] * n
        G[s.s], G[s.r] = sp.Integer(1), -s.h
        rows.append(Row(f"{s.joint}:screw", q[s.s] - s.h * q[s.r], G,
                        sp.Integer(0)))
    return rows, checks


def is_structural_zero(row: Row) -> bool:
    return row.phi == 0 and all(g == 0 for g in row.G)
