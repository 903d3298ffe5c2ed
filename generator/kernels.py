"""The kernels of a serial chain: which algorithm runs on which inputs, what is output.

Each builder records the algorithm's scalar assignments on a fresh :class:`Recorder` and
returns a :class:`generator.ir.Kernel`; :func:`generator.pipeline.optimise` then runs the passes.
Inputs: ``q``, ``qd``, ``qdd`` (n), ``Q`` (n: drive forces), ``p`` (named spec parameters).
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from generator.algorithms.crba import crba
from generator.algorithms.joints import link_transform
from generator.algorithms.kinematics import chain_kinematics, point_kinematics
from generator.algorithms.ldlt import SINGULAR, SingularMassMatrix, ltdl_solve
from generator.algorithms.rnea import rnea
from generator.ir import Kernel, Port, symbol
from generator.model import Chain, ModelError, identity3
from generator.scalar import Recorder, add, cross, dot, matmul, matvec, scale, transpose


def _inputs(chain: Chain, names: list[str]) -> tuple[Port, ...]:
    n = chain.n
    docs = {"q": "joint coordinates", "qd": "joint rates", "qdd": "joint accelerations",
            "Q": "joint drive forces/torques (added to the spring-damper laws)"}
    ports = [Port(nm, (n,), tuple(symbol(f"{nm}{j}") for j in range(1, n + 1)), docs[nm])
             for nm in names]
    if chain.parameters:
        ports.append(Port("p", (len(chain.parameters),), tuple(chain.parameters),
                          "named spec parameters: " + ", ".join(s.name[2:] for s in chain.parameters)))
    return tuple(ports)


def _recorder(ports: tuple[Port, ...]) -> Recorder:
    return Recorder(reserved={str(s) for p in ports for s in p.elements})


def _targets(chain: Chain, rec: Recorder, kin):
    """(name, kinematics) of every declared body, then every point, each in its own frame."""
    out = []
    for name, j in chain.named_bodies:
        k = kin[j]
        frame = chain.bodies[j - 1].frame
        if frame != identity3():
            k = replace(k, tau=rec.mat(matmul([list(r) for r in frame], k.tau), f"{name}_tau"))
        out.append((name, k))
    for pt in chain.points:
        rotation = None if pt.rotation == identity3() else [list(r) for r in pt.rotation]
        out.append((pt.name, point_kinematics(rec, kin[pt.body], list(pt.offset), pt.name,
                                              rotation)))
    return out


def _flat(rows) -> tuple:
    return tuple(x for row in rows for x in (_flat(row) if isinstance(row, list) else [row]))


def forward_kinematics(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q"])
    rec = _recorder(ins)
    kin = chain_kinematics(rec, chain, list(ins[0].elements), jacobians=False)
    tg = _targets(chain, rec, kin)
    nb = len(tg)
    return Kernel("forward_kinematics",
                  "Position r (frame 0) and rotation tau (frame 0 -> body) of each body and point.",
                  ins, (Port("r", (nb, 3), _flat([k.r for _, k in tg])),
                        Port("tau", (nb, 3, 3), _flat([k.tau for _, k in tg]))),
                  tuple(rec.statements))


def jacobians(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q"])
    rec = _recorder(ins)
    kin = chain_kinematics(rec, chain, list(ins[0].elements), jacobians=True)
    tg = _targets(chain, rec, kin)
    nb, n = len(tg), chain.n

    def rows(cols):  # list of n column vectors -> 3 x n rows
        return [[cols[i][a] for i in range(n)] for a in range(3)]

    return Kernel("jacobians",
                  "Partial-velocity matrices T = dv/dqd and R = domega/dqd (frame 0) of each "
                  "body origin and point.",
                  ins, (Port("T", (nb, 3, n), _flat([rows(k.T) for _, k in tg])),
                        Port("R", (nb, 3, n), _flat([rows(k.R) for _, k in tg]))),
                  tuple(rec.statements))


def velocities(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q", "qd"])
    rec = _recorder(ins)
    kin = chain_kinematics(rec, chain, list(ins[0].elements), list(ins[1].elements),
                           jacobians=False)
    tg = [(name, kin[j]) for name, j in chain.named_bodies]
    nb = len(tg)
    return Kernel("velocities",
                  "Velocity v of each body origin, angular velocity omega, and the velocity-product "
                  "accelerations w, eps (a = T qdd + w, angular acceleration R qdd + eps); frame 0.",
                  ins, tuple(Port(nm, (nb, 3), _flat([getattr(k, nm) for _, k in tg]))
                             for nm in ("v", "omega", "w", "eps")),
                  tuple(rec.statements))


def _links(rec: Recorder, chain: Chain, q):
    return [link_transform(rec, j, jt, q[j - 1]) for j, jt in enumerate(chain.joints, start=1)]


def mass_matrix(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q"])
    rec = _recorder(ins)
    A = crba(rec, chain, _links(rec, chain, list(ins[0].elements)))
    n = chain.n
    return Kernel("mass_matrix", "Joint-space mass matrix A(q) (composite-body algorithm).",
                  ins, (Port("A", (n, n), _flat(A)),), tuple(rec.statements))


def passive_forces(chain: Chain, q, qd) -> list[sp.Expr]:
    """Spring-damper law of each joint: -k (q - q0) - c qd."""
    return [-jt.stiffness * (qj - jt.q0) - jt.damping * qdj
            for jt, qj, qdj in zip(chain.joints, q, qd)]


def _bias(rec: Recorder, chain: Chain, links, q, qd, Q) -> list[sp.Expr]:
    """b = Q + Q_passive - h(q, qd): Coriolis, centrifugal, gravity, active forces."""
    h = rnea(rec, chain, links, qd, None)
    return [rec.bind(Qj + Pj - hj, f"b{j}") for j, (Qj, Pj, hj)
            in enumerate(zip(Q, passive_forces(chain, q, qd), h), start=1)]


def bias(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q", "qd", "Q"])
    rec = _recorder(ins)
    q, qd, Q = (list(p.elements) for p in ins[:3])
    b = _bias(rec, chain, _links(rec, chain, q), q, qd, Q)
    return Kernel("bias", "Bias vector b = Q + Q_spring_damper - h(q, qd), so A qdd = b.",
                  ins, (Port("b", (chain.n,), tuple(b)),), tuple(rec.statements))


def inverse_dynamics(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q", "qd", "qdd"])
    rec = _recorder(ins)
    q, qd, qdd = (list(p.elements) for p in ins[:3])
    h = rnea(rec, chain, _links(rec, chain, q), qd, qdd)
    Q = [hj - Pj for hj, Pj in zip(h, passive_forces(chain, q, qd))]
    return Kernel("inverse_dynamics",
                  "Drive forces Q = A qdd + h(q, qd) - Q_spring_damper (recursive Newton-Euler).",
                  ins, (Port("Q", (chain.n,), tuple(Q)),), tuple(rec.statements))


def forward_dynamics(chain: Chain) -> Kernel:
    ins = _inputs(chain, ["q", "qd", "Q"])
    rec = _recorder(ins)
    q, qd, Q = (list(p.elements) for p in ins[:3])
    links = _links(rec, chain, q)
    A = crba(rec, chain, links)
    b = _bias(rec, chain, links, q, qd, Q)
    try:
        qdd = ltdl_solve(rec, A, b, chain.parent, chain.coordinates)
    except SingularMassMatrix as e:
        raise ModelError(f"{chain.source}: {e}") from None
    return Kernel("forward_dynamics",
                  "Joint accelerations qdd solving A qdd = b by an unrolled L^T D L (no fill-in on a tree).",
                  ins, (Port("qdd", (chain.n,), tuple(qdd)),), tuple(rec.statements),
                  {SINGULAR: "mass matrix not positive definite"})


def energy(chain: Chain) -> Kernel:
    """T = sum_j 1/2 m v.v + v.(omega x c) + 1/2 omega.(I omega) in body frames (v, omega
    carried from frame 0 by tau_j); V = -g . sum_j (m_j r_j + tau_j^T c_j)."""
    ins = _inputs(chain, ["q", "qd"])
    rec = _recorder(ins)
    kin = chain_kinematics(rec, chain, list(ins[0].elements), list(ins[1].elements),
                           jacobians=False)
    T, V = sp.Integer(0), sp.Integer(0)
    for j, body in enumerate(chain.bodies, start=1):
        if body.fictitious:
            continue
        k = kin[j]
        v = rec.vec(matvec(k.tau, k.v), f"v_loc{j}")
        w = rec.vec(matvec(k.tau, k.omega), f"omega_loc{j}")
        c = list(body.c)
        I = [list(row) for row in body.I]
        T += body.m * dot(v, v) / 2 + dot(v, cross(w, c)) + dot(w, matvec(I, w)) / 2
        V -= dot(list(chain.gravity), add(scale(body.m, k.r), matvec(transpose(k.tau), c)))
    return Kernel("energy", "Kinetic energy T and potential energy V of gravity, summed over "
                  "bodies (an invariant to monitor: T + V - work of Q is constant).",
                  ins, (Port("T", (1,), (T,)), Port("V", (1,), (V,))), tuple(rec.statements))


BUILDERS = (forward_kinematics, jacobians, velocities, mass_matrix, bias, inverse_dynamics,
            forward_dynamics, energy)
