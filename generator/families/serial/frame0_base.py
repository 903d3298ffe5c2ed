"""The frame-0 quaternion base's derivatives through its body-twist twin.

The frame-0 quaternion base (``base_velocity = "frame0"``, MuJoCo's free joint) has the rates
qd0 = (v0, omega, qd_joints): the base's velocity v0 in frame 0, its angular velocity omega in
its own frame. Pinocchio's free flyer (``"body"``) has qd_b = (v_b, omega, qd_joints) with
v_b = R^T v0 (R: base frame -> frame 0), whose derivatives rnea_derivatives takes analytically
(free_flyer_block). With T = diag(R^T, 1, 1) (a rotation of the three linear rows):

    qd_b  = T qd0,                    v_b = R^T v0
    qdd_b = T qdd0 + c,               c = (v_b x omega, 0)  (d/dt R^T v0 = R^T a0 - omega x v_b)
    Q_b   = T Q0                      (the same power: Q_b . qd_b = Q0 . qd0)
    ID_0(q, qd0, qdd0) = T^T ID_b(q, qd_b, qdd_b)
    FD_0(q, qd0, Q0)   = T^T (FD_b(q, qd_b, T Q0) - c)

Along the tangent (rho, phi) (the base displaced by (rho, phi) in its own frame,
R' = R (1 + [phi]x)) with qd0, qdd0, Q0 held, the twin's rates move: d v_b = v_b x phi,
d (R^T x) = (R^T x) x phi, d(v_b x omega) = -[omega]x [v_b]x phi; and T^T's rows turn:
d (R y) = -R [y]x phi. With D = dID_b/dq (tangent), V = dID_b/dqd_b, A_lin = the twin's mass
matrix's three linear columns, E_lin the three linear rows, f_b = ID_b's linear rows and
a_b = R^T a0 (a0 = qdd0's linear part):

    dID_0/dv0    = T^T (V_lin R^T - A_lin [omega]x R^T)
    dID_0/domega = T^T (V_omega + A_lin [v_b]x)
    dID_0/dphi   = T^T (D_phi + V_lin [v_b]x + A_lin ([a_b]x - [omega]x [v_b]x)) - E_lin R [f_b]x

and with F = dFD_b/dq, G = dFD_b/dqd_b, M = A_b^-1, qdd_b = FD_b:

    dFD_0/dv0    = T^T (G_lin R^T + E_lin [omega]x R^T)
    dFD_0/domega = T^T (G_omega - E_lin [v_b]x)
    dFD_0/dphi   = T^T (F_phi + G_lin [v_b]x + M_lin [Q_b,lin]x + E_lin [omega]x [v_b]x)
                   - E_lin R [qdd_b,lin - v_b x omega]x
    dFD_0/dQ0    = T^T M T

The rho columns are zero (translating the robot changes nothing) and the joints' columns are
the twin's, rows turned by T^T. Checked against forward differentiation of the frame-0 base's
own IR, on an arm and a random tree, both derivative conventions
(tests/test_rnea_analytic_derivatives.py, tests/test_body_twist_base.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from mechgen.generator.families.serial.kernels import (_configuration, _inputs, _recorder,
                                                       tau_base)
from mechgen.generator.ir import Port
from mechgen.generator.model import Chain
from mechgen.generator.scalar import Mat, Recorder, Vec, cross, matmul, matvec, skew, transpose

ZERO = sp.Integer(0)


def frame0_base(chain: Chain) -> bool:
    """A quaternion base whose linear velocity is in frame 0 (module docstring)."""
    return chain.attitude == "quaternion" and chain.base_velocity == "frame0"


def body_twist_twin(chain: Chain) -> Chain:
    """The same robot on the body-twist base (model.free_base_joints with base_velocity
    "body": its three rotations turn the slides' axes), derivatives along the tangent."""
    joints = [replace(j, twist=True) if j.quasi else j for j in chain.joints]
    return replace(chain, joints=joints, base_velocity="body", derivatives="tangent")


@dataclass
class Twin:
    """The twin's view of a frame-0 state: R^T (tau_base, names), v_b = R^T v0, omega."""

    Rt: Mat
    v_b: Vec
    omega: Vec
    a_b: Vec | None = None          # R^T a0 (a0: qdd0's linear part), for inverse dynamics

    @property
    def R(self) -> Mat:
        return transpose(self.Rt)


def twin_start(chain: Chain, names: list[str]) -> tuple[tuple[Port, ...], Recorder, Chain,
                                                         list, Twin]:
    """As kernels._start for the frame-0 chain (its inputs), but the recursion is the twin's:
    (inputs, recorder, the twin as the recursion sees it, [q, qd_b, and qdd_b or Q_b], the
    twin's view)."""
    ins = _inputs(chain, names)
    rec = _recorder(ins)
    rchain, q = _configuration(rec, body_twist_twin(chain), list(ins[0].elements))
    Rt = [list(row) for row in tau_base(rchain)]
    qd0 = list(ins[1].elements)
    omega = qd0[3:6]
    v_b = rec.vec(matvec(Rt, qd0[:3]), "v_body")
    tw = Twin(Rt, v_b, omega)
    state = [q, v_b + qd0[3:]]
    for port in ins[2:len(names)]:
        x = list(port.elements)
        lin = matvec(Rt, x[:3])
        if port.name == "qdd":        # qdd_b = T qdd0 + (v_b x omega, 0)
            tw.a_b = rec.vec(lin, "a_body")
            lin = [a + b for a, b in zip(tw.a_b, cross(v_b, omega))]
            state.append(rec.vec(lin, "vd_body") + x[3:])
        else:                         # Q_b = T Q0
            state.append(rec.vec(lin, "Q_body") + x[3:])
    return ins, rec, rchain, state, tw


def _turned_rows(R: Mat, col: list) -> list:
    """T^T col: the three linear rows turned by R."""
    return matvec(R, col[:3]) + list(col[3:])


def _times(cols: list[list], K: Mat) -> list[list]:
    """Columns cols (three, each n long) times the 3 x 3 K: three columns."""
    return [[sp.Add(*[cols[m][i] * K[m][c] for m in range(3)]) for i in range(len(cols[0]))]
            for c in range(3)]


def _named(rec: Recorder, cols: list[list], name: str) -> list[list]:
    """Columns with every entry that is not a name or a number named (``<name><c>_<i>``):
    the turned rows and the quaternion's columns (derivatives.coordinate_rows) read each
    entry several times."""
    return [[e if sp.sympify(e).is_Atom else rec.bind(e, f"{name}{c + 1}_{i + 1}")
             for i, e in enumerate(col)] for c, col in enumerate(cols)]


def _plus(*cols: list) -> list:
    return [sp.Add(*xs) for xs in zip(*cols)]


def _minus(x: list, y: list) -> list:
    return [a - b for a, b in zip(x, y)]


def _in_linear_rows(K: Mat, n: int) -> list[list]:
    """The three columns of E_lin K: K in the linear rows, 0 below."""
    return [[K[i][c] for i in range(3)] + [ZERO] * (n - 3) for c in range(3)]


def _to_frame0(rec: Recorder, R: Mat, q_cols: list[list], dphi: list[list], y: Vec,
               qd_cols: list[list], tag: str) -> tuple[list[list], list[list]]:
    """The frame-0 columns from the twin's, once the rates' moves are in: every column's rows
    turned by T^T, and the phi columns' turn of T^T itself, -E_lin R [y]x (module
    docstring); the columns read again (coordinate_rows) named."""
    dphi = _named(rec, dphi, f"{tag}_phi")
    Ry = matmul(R, skew(y))
    dq = [_turned_rows(R, col) for col in q_cols[:3] + dphi + q_cols[6:]]
    turned = [[e - Ry[i][c] if i < 3 else e for i, e in enumerate(dq[3 + c])] for c in range(3)]
    dq[3:6] = _named(rec, turned, f"{tag}0_phi")
    return dq, [_turned_rows(R, col) for col in qd_cols]


def id_columns(rec: Recorder, tw: Twin, D: list[list], V: list[list], A_lin: list[list],
               f_b: Vec) -> tuple[list[list], list[list]]:
    """(dID_0/dq, dID_0/dqd0) as columns from the twin's columns D = dID_b/dq (tangent),
    V = dID_b/dqd_b, A_lin (its mass matrix's linear columns) and f_b, with tw.a_b = R^T a0
    (module docstring)."""
    omega_x, v_b_x, R = skew(tw.omega), skew(tw.v_b), tw.R
    omega_x_Rt = matmul(omega_x, tw.Rt)
    K = _minus_rows(skew(tw.a_b), matmul(omega_x, v_b_x))     # [a_b]x - [omega]x [v_b]x
    dv = [_minus(x, y) for x, y in zip(_times(V[:3], tw.Rt), _times(A_lin, omega_x_Rt))]
    dw = [_plus(x, y) for x, y in zip(V[3:6], _times(A_lin, v_b_x))]
    dphi = [_plus(x, y, z) for x, y, z in zip(D[3:6], _times(V[:3], v_b_x), _times(A_lin, K))]
    dv, dw = _named(rec, dv, "dID_v"), _named(rec, dw, "dID_w")
    return _to_frame0(rec, R, D, dphi, f_b, dv + dw + V[6:], "dID")


def fd_columns(rec: Recorder, tw: Twin, qdd_b: list, F: list[list], G: list[list],
               M: list[list], Q_b: list) -> tuple[list, list[list], list[list], list[list]]:
    """(qdd0, dFD_0/dq, dFD_0/dqd0, dFD_0/dQ0) as columns (qdd0 a list) from the twin's qdd_b,
    columns F = dFD_b/dq (tangent), G = dFD_b/dqd_b, M = A_b^-1 (rows, symmetric) and Q_b
    (module docstring)."""
    n = len(G)
    omega_x, v_b_x, R = skew(tw.omega), skew(tw.v_b), tw.R
    a = rec.vec(_minus(qdd_b[:3], cross(tw.v_b, tw.omega)), "a_body")   # qdd_b - c, linear
    M_cols = transpose(M)
    dv = [_plus(x, y) for x, y in zip(_times(G[:3], tw.Rt),
                                      _in_linear_rows(matmul(omega_x, tw.Rt), n))]
    dw = [_minus(x, y) for x, y in zip(G[3:6], _in_linear_rows(v_b_x, n))]
    dphi = [_plus(x, y, z, u) for x, y, z, u in zip(F[3:6], _times(G[:3], v_b_x),
                                                    _times(M_cols[:3], skew(Q_b[:3])),
                                                    _in_linear_rows(matmul(omega_x, v_b_x), n))]
    dv, dw = _named(rec, dv, "dFD_v"), _named(rec, dw, "dFD_w")
    dq, dqd = _to_frame0(rec, R, F, dphi, a, dv + dw + G[6:], "dFD")
    MT = _named(rec, _times(M_cols[:3], tw.Rt), "MT") + M_cols[3:]     # M T, columns
    dQ = [_turned_rows(R, col) for col in MT]
    for i in range(3):        # T^T M T is symmetric: its linear block from one triangle
        for j in range(i):
            dQ[j][i] = dQ[i][j]
    return matvec(R, a) + list(qdd_b[3:]), dq, dqd, dQ


def _minus_rows(A: Mat, B: Mat) -> Mat:
    return [_minus(x, y) for x, y in zip(A, B)]
