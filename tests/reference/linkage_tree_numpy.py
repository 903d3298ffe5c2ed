"""Plain numpy implementation of the linkage kernels' equations in tree coordinates (papers 001
and 004; docs/linkage.md), with dense matrices and numpy's solvers: no code generation, no
pruning. The benchmark times it against the generated kernels (bench/linkage_bench.py);
tests/test_linkage_numpy_reference.py checks that both agree.

The spanning tree's kinematics, mass matrix M and bias h come from the serial reference
(tests/reference/chain_numpy.py, on the tree of the linkage model); the loop closure rows are
written out here from their definitions (generator/algorithms/loops.py's docstring):

    position rows   phi = (o2 - o1)_i     G = (T_o2 - T_o1)_i          gamma = -(a_o2 - a_o1)_i
    a . b rows      phi = a . b           G = (b x a) . (R_2 - R_1)
    d . a rows      phi = (o2 - o1) . a   G = a . (T_o2 - T_o1) + (a x d) . R_1

then, with G_D^+ the inverse (m = r) or the least-squares solution (m > r):

    newton_step   dq_D = -G_D^+ phi
    velocity      H = [1; -G_D^+ G_I], qd = H qd_I
    forward       (H^T M H) qdd_I = H^T (b - M qdd_0), qdd_0 = [0; G_D^+ gamma],
                  b = tau + Q_springs - h, G_D^T lambda = (M qdd - b)_D
    inverse       qdd = H qdd_I + qdd_0, res = M qdd + h - Q_springs,
                  lambda = G_D^-T res_D, tau_I = res_I - G_I^T lambda
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp

from tests.chains import numeric_model
from tests.reference import chain_numpy as tree


@dataclass
class NumFrame:
    body: int
    o: np.ndarray
    axes: dict[str, np.ndarray]


@dataclass
class LinkageNumpy:
    name: str
    n: int
    q_ref: np.ndarray
    chain: dict                        # chain_numpy's model of the spanning tree
    cuts: list[tuple[str, str, NumFrame, NumFrame]]   # (joint, kind, frame 1, frame 2)
    screws: list[tuple[str, int, int, float]]         # (joint, s, r, h)
    joint_springs: list[tuple[int, float, float, float]]
    springs: list[tuple[int, np.ndarray, int, np.ndarray, float, float, float, float]]
    rows: list[str]                    # labels of the structural rows the kernels keep
    independent: list[int]
    dependent: list[int]
    rank: int


def from_spec(path: str | Path) -> LinkageNumpy:
    """The numeric model of a linkage spec (parameters at their defaults)."""
    from mechgen.generator.frontend import load
    return from_model(load(path))


def from_model(model) -> LinkageNumpy:
    """The numeric model of a loaded (analysed) Linkage, parameters at their defaults."""
    values = {s: model.defaults[s.name] for s in model.parameter_symbols}

    def num(e) -> float:
        return float(sp.sympify(e).xreplace(values))

    def vec(v) -> np.ndarray:
        return np.array([num(x) for x in v])

    def frame(f) -> NumFrame:
        return NumFrame(f.body, vec(f.o), {"x": vec(f.x), "y": vec(f.y), "z": vec(f.z)})

    cl = model.closure
    return LinkageNumpy(
        model.name, model.n, vec(model.q_ref), numeric_model(model.chain, {}),
        [(c.joint, c.kind, frame(c.frame1), frame(c.frame2)) for c in model.cuts],
        [(s.joint, s.s, s.r, num(s.h)) for s in model.screws],
        [(s.coordinate, num(s.k), num(s.c), num(s.q0)) for s in model.joint_springs],
        [(s.body_a, vec(s.a), s.body_b, vec(s.b), num(s.k), num(s.c), num(s.L0), num(s.F0))
         for s in model.springs],
        list(cl.rows), list(cl.independent), list(cl.dependent), cl.rank)


# --- kinematics of frames and the closure rows -----------------------------------------------

def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b of two 3-vectors (np.cross's axis handling costs ten times more on 3-vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _frame(kin: list[dict], f: NumFrame) -> dict:
    b = kin[f.body]
    d0 = b["tau"].T @ f.o
    w = b["omega"]
    return {"o": b["r"] + d0, "axes": {k: b["tau"].T @ a for k, a in f.axes.items()},
            "T": b["T"] - tree.skew(d0) @ b["R"], "R": b["R"], "omega": w, "eps": b["eps"],
            "v": b["v"] + cross(w, d0),
            "a": b["w"] + cross(b["eps"], d0) + cross(w, cross(w, d0))}


def _axis_dot(a: np.ndarray, b: np.ndarray, f1: dict, f2: dict) -> tuple:
    bxa = cross(b, a)
    w1, w2 = f1["omega"], f2["omega"]
    rate = cross(cross(w2, b), a) + cross(b, cross(w1, a))
    return a @ b, bxa @ (f2["R"] - f1["R"]), -((f2["eps"] - f1["eps"]) @ bxa + (w2 - w1) @ rate)


def _offset_dot(a: np.ndarray, f1: dict, f2: dict) -> tuple:
    d = f2["o"] - f1["o"]
    w1 = f1["omega"]
    G = a @ (f2["T"] - f1["T"]) + cross(a, d) @ f1["R"]
    gamma = -((f2["a"] - f1["a"]) @ a + 2 * (f2["v"] - f1["v"]) @ cross(w1, a)
              + d @ (cross(f1["eps"], a) + cross(w1, cross(w1, a))))
    return d @ a, G, gamma


def _cut_rows(kind: str, f1: dict, f2: dict) -> dict[str, tuple]:
    x1, y1, z1 = (f1["axes"][k] for k in "xyz")
    y2, z2 = f2["axes"]["y"], f2["axes"]["z"]
    out = {}
    if kind in ("S", "U", "R"):
        d, dT = f2["o"] - f1["o"], f2["T"] - f1["T"]
        for i, lab in enumerate("xyz"):
            out[f"d{lab}"] = (d[i], dT[i], -(f2["a"][i] - f1["a"][i]))
        if kind == "U":
            out["z1.z2"] = _axis_dot(z1, z2, f1, f2)
        if kind == "R":
            out["x1.z2"] = _axis_dot(x1, z2, f1, f2)
            out["y1.z2"] = _axis_dot(y1, z2, f1, f2)
        return out
    out["d.x1"] = _offset_dot(x1, f1, f2)
    out["d.y1"] = _offset_dot(y1, f1, f2)
    out["x1.z2"] = _axis_dot(x1, z2, f1, f2)
    out["y1.z2"] = _axis_dot(y1, z2, f1, f2)
    if kind == "P":
        out["x1.y2"] = _axis_dot(x1, y2, f1, f2)
    return out


def closure(lk: LinkageNumpy, q: np.ndarray, qd: np.ndarray | None = None):
    """(phi, G, gamma, orientation checks, the tree's kinematics) over the kept rows."""
    kin = tree.kinematics(lk.chain, q - lk.q_ref, qd)
    rows, checks = {}, []
    for joint, kind, fr1, fr2 in lk.cuts:
        f1, f2 = _frame(kin, fr1), _frame(kin, fr2)
        for lab, row in _cut_rows(kind, f1, f2).items():
            rows[f"{joint}:{lab}"] = row
        if kind in ("R", "C", "P"):
            checks.append(f1["axes"]["z"] @ f2["axes"]["z"])
        if kind == "P":
            checks.append(f1["axes"]["x"] @ f2["axes"]["x"])
    for joint, s, r, h in lk.screws:
        G = np.zeros(lk.n)
        G[s], G[r] = 1.0, -h
        rows[f"{joint}:screw"] = (q[s] - h * q[r], G, 0.0)
    kept = [rows[lab] for lab in lk.rows]
    phi = np.array([r[0] for r in kept])
    G = np.array([r[1] for r in kept]).reshape(len(kept), lk.n)
    gamma = np.array([r[2] for r in kept])
    return phi, G, gamma, np.array(checks or [1.0]), kin


def _solve(lk: LinkageNumpy, GD: np.ndarray, y: np.ndarray) -> np.ndarray:
    if len(GD) == lk.rank:
        return np.linalg.solve(GD, y)
    return np.linalg.lstsq(GD, y, rcond=None)[0]


def _solve_transposed(lk: LinkageNumpy, GD: np.ndarray, c: np.ndarray) -> np.ndarray:
    if len(GD) == lk.rank:
        return np.linalg.solve(GD.T, c)
    return np.linalg.lstsq(GD.T, c, rcond=None)[0]       # the minimum-norm multipliers


# --- the kernels ----------------------------------------------------------------------------

def newton_step(lk: LinkageNumpy, q: np.ndarray):
    phi, G, _, checks, _ = closure(lk, q)
    GD = G[:, lk.dependent]
    q_next = q.copy()
    q_next[lk.dependent] += _solve(lk, GD, -phi)
    det = np.linalg.det(GD) if len(GD) == lk.rank else 1.0
    return q_next, np.linalg.norm(phi), det, checks


def transmission(lk: LinkageNumpy, G: np.ndarray) -> np.ndarray:
    H = np.zeros((lk.n, len(lk.independent)))
    H[lk.independent] = np.eye(len(lk.independent))
    H[lk.dependent] = -_solve(lk, G[:, lk.dependent], G[:, lk.independent])
    return H


def velocity(lk: LinkageNumpy, q: np.ndarray, qd_ind: np.ndarray):
    H = transmission(lk, closure(lk, q)[1])
    return H @ qd_ind, H


def mass_matrix(lk: LinkageNumpy, q: np.ndarray) -> np.ndarray:
    return tree.mass_matrix(lk.chain, q - lk.q_ref)


def force_elements(lk: LinkageNumpy, q: np.ndarray, qd: np.ndarray, kin: list[dict]):
    """Generalised forces of the joint and point-to-point spring-dampers."""
    Q = np.zeros(lk.n)
    for i, k, c, q0 in lk.joint_springs:
        Q[i] += -k * (q[i] - q0) - c * qd[i]
    for ba, a, bb, b, k, c, L0, F0 in lk.springs:
        fa = _frame(kin, NumFrame(ba, a, {}))
        fb = _frame(kin, NumFrame(bb, b, {}))
        d = fb["o"] - fa["o"]
        L = np.linalg.norm(d)
        J = (d / L) @ (fb["T"] - fa["T"])
        Q -= (k * (L - L0) + c * (J @ qd) - F0) * J
    return Q


def _dynamics(lk: LinkageNumpy, q: np.ndarray, qd: np.ndarray):
    phi, G, gamma, _, kin = closure(lk, q, qd)
    M = tree.mass_matrix(lk.chain, q - lk.q_ref)
    h = tree.h_vector(lk.chain, q - lk.q_ref, qd)
    H = transmission(lk, G)
    qdd0 = np.zeros(lk.n)
    qdd0[lk.dependent] = _solve(lk, G[:, lk.dependent], gamma)
    return G, M, h, H, qdd0, force_elements(lk, q, qd, kin)


def forward_dynamics(lk: LinkageNumpy, q: np.ndarray, qd: np.ndarray, tau: np.ndarray):
    G, M, h, H, qdd0, Qe = _dynamics(lk, q, qd)
    b = tau + Qe - h
    qdd_I = np.linalg.solve(H.T @ M @ H, H.T @ (b - M @ qdd0))
    qdd = H @ qdd_I + qdd0
    lam = _solve_transposed(lk, G[:, lk.dependent], (M @ qdd - b)[lk.dependent])
    return qdd, lam


def inverse_dynamics(lk: LinkageNumpy, q: np.ndarray, qd: np.ndarray, qdd_ind: np.ndarray):
    G, M, h, H, qdd0, Qe = _dynamics(lk, q, qd)
    qdd = H @ qdd_ind + qdd0
    res = M @ qdd + h - Qe
    lam = _solve_transposed(lk, G[:, lk.dependent], res[lk.dependent])
    tau_I = res[lk.independent] - G[:, lk.independent].T @ lam
    return tau_I, qdd, lam
