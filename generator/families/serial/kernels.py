"""The kernels of a serial chain: which algorithm runs on which inputs, what is output.

Each builder records the algorithm's scalar assignments on a fresh :class:`Recorder` and
returns a :class:`generator.ir.Kernel`; :func:`generator.pipeline.optimise` then runs the passes.
Inputs: ``q``, ``qd``, ``qdd`` (n), ``Q`` (n: drive forces), ``p`` (named spec parameters).
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from mechgen.generator.algorithms.aba import aba
from mechgen.generator.algorithms.crba import crba
from mechgen.generator.algorithms.joints import link_transform
from mechgen.generator.algorithms.kinematics import (chain_kinematics,
                                                     kinetic_and_gravity_energy,
                                                     point_kinematics)
from mechgen.generator.algorithms.ldlt import SINGULAR, SingularMassMatrix, ltdl_solve
from mechgen.generator.algorithms.rnea import rnea
from mechgen.generator.family import Family
from mechgen.generator.statuses import EULER_BASE_SINGULAR
from mechgen.generator.ir import Kernel, Port, symbol
from mechgen.generator.model import Chain, ModelError, identity3
from mechgen.generator.pipeline import choice
from mechgen.generator.families.serial.leg_loops import with_tree_leg_loops
from mechgen.generator.scalar import Recorder, add, cross, dot, matmul, matvec, scale, transpose


def _names(names) -> str:
    return ", ".join(names)


def _inputs(chain: Chain, names: list[str]) -> tuple[Port, ...]:
    n, nq = chain.n, chain.nq
    order = "in the order of q" if nq == n else f"in this order: {_names(chain.coordinates)}"
    quat = (" (x, y, z of the base in m, frame 0; its attitude as a quaternion w, x, y, z, "
            "body frame -> frame 0, any norm; then the joints)"
            if chain.attitude == "quaternion" else "")
    base_rates = (" (the base's linear and angular velocity, both in its own frame: the body "
                  "twist)" if chain.base_velocity == "body" else
                  " (the base's angular velocity is in its own frame)")
    docs = {"q": f"joint coordinates (rad for a revolute joint, m for a prismatic one){quat}, "
                 f"shape ({nq},), in this order: {_names(chain.q_names)}",
            "qd": f"joint rates (rad/s or m/s), shape ({n},), {order}"
                  + (base_rates if quat else ""),
            "qdd": f"joint accelerations (rad/s^2 or m/s^2), shape ({n},), {order}",
            "Q": f"joint drive torques or forces (N m or N; added to the spring-damper laws), "
                 f"shape ({n},), {order}"}
    size = {"q": nq}
    ports = [Port(nm, (size.get(nm, n),), tuple(symbol(f"{nm}{j}")
                                                for j in range(1, size.get(nm, n) + 1)),
                  docs[nm]) for nm in names]
    if chain.parameters:
        ports.append(Port("p", (len(chain.parameters),), tuple(chain.parameters),
                          f"named spec parameters, shape ({len(chain.parameters)},), in this "
                          f"order: " + _names(s.name[2:] for s in chain.parameters)))
    return tuple(ports)


def _recorder(ports: tuple[Port, ...]) -> Recorder:
    return Recorder(reserved={str(s) for p in ports for s in p.elements})


def _start(chain: Chain, names: list[str]) -> tuple[tuple[Port, ...], Recorder, Chain, list]:
    """A kernel's inputs, its recorder, the chain as the recursion sees it, and the elements
    of each state input in order (``q``: one coordinate per joint, see _configuration)."""
    ins = _inputs(chain, names)
    rec = _recorder(ins)
    chain, q = _configuration(rec, chain, list(ins[0].elements))
    return ins, rec, chain, [q, *(list(p.elements) for p in ins[1:len(names)])]


def _configuration(rec: Recorder, chain: Chain, q_in: list) -> tuple[Chain, list]:
    """(the chain as the recursion sees it, one coordinate per joint) from the input ``q``.

    A quaternion base's q holds x, y, z, then the quaternion (w, x, y, z); its three rotations
    are body-axis rotations at angle 0, the first one's frame turned by the attitude
    tau_base = R(quat)^T (frame 0 -> spacecraft), with R = 1 + (2/|quat|^2) (w [u]x + [u]x^2),
    u = (x, y, z): any norm gives the same rotation, so integration drift does not matter.

    With ``base_velocity = "body"`` it is the first slide's frame that is turned by tau_base
    and placed at l = (x, y, z) (frame 0): the slides then run along the base's own axes, at
    displacement 0, and their rates are the base velocity in its own frame."""
    if chain.attitude != "quaternion":
        return chain, q_in
    w, x, y, z = q_in[3:7]
    k = rec.bind(2 / (w * w + x * x + y * y + z * z), "quat_k")
    R = [[1 - k * (y * y + z * z), k * (x * y - w * z), k * (x * z + w * y)],
         [k * (x * y + w * z), 1 - k * (x * x + z * z), k * (y * z - w * x)],
         [k * (x * z - w * y), k * (y * z + w * x), 1 - k * (x * x + y * y)]]
    tau_base = rec.mat(transpose(R), "tau_base")
    joints = list(chain.joints)
    zero = sp.Integer(0)
    turned = _turned_joint(chain)
    joints[turned] = replace(joints[turned], gamma=tuple(tuple(row) for row in tau_base),
                             **({"l": tuple(q_in[:3])} if turned == 0 else {}))
    if chain.base_velocity == "body":
        return replace(chain, joints=joints), [zero] * 6 + list(q_in[7:])
    return replace(chain, joints=joints), [*q_in[:3], zero, zero, zero, *q_in[7:]]


def _turned_joint(chain: Chain) -> int:
    """The joint (index) whose frame a quaternion base's attitude turns: the first slide on
    the body-twist base, the first rotation on the frame-0 one (:func:`_configuration`)."""
    return 0 if chain.base_velocity == "body" else 3


def tau_base(rchain: Chain) -> tuple:
    """tau_base = R(quat)^T, the names :func:`_configuration` gave a quaternion base's
    attitude, from the chain as the recursion sees it."""
    return rchain.joints[_turned_joint(rchain)].gamma


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
    ins, rec, chain, (q,) = _start(chain, ["q"])
    kin = chain_kinematics(rec, chain, q, jacobians=False)
    tg = _targets(chain, rec, kin)
    nb = len(tg)
    return Kernel("forward_kinematics",
                  "Position r (frame 0) and rotation tau (frame 0 -> body) of each body and point.",
                  ins, (Port("r", (nb, 3), _flat([k.r for _, k in tg]),
                             f"positions of the body origins then the points, frame 0, m, "
                             f"shape (bodies+points, 3) = ({nb}, 3); rows: "
                             f"{_names(label for label, _ in tg)}"),
                        Port("tau", (nb, 3, 3), _flat([k.tau for _, k in tg]),
                             f"rotation matrices of the bodies then the points (coordinate "
                             f"transform frame 0 -> that frame; its rows are that frame's axes "
                             f"in frame 0), shape ({nb}, 3, 3); rows in the order of r")),
                  tuple(rec.statements))


def jacobians(chain: Chain) -> Kernel:
    ins, rec, chain, (q,) = _start(chain, ["q"])
    kin = chain_kinematics(rec, chain, q, jacobians=True)
    tg = _targets(chain, rec, kin)
    nb, n = len(tg), chain.n

    def rows(cols):  # list of n column vectors -> 3 x n rows
        return [[cols[i][a] for i in range(n)] for a in range(3)]

    return Kernel("jacobians",
                  "Partial-velocity matrices T = dv/dqd and R = domega/dqd (frame 0) of each "
                  "body origin and point.",
                  ins, (Port("T", (nb, 3, n), _flat([rows(k.T) for _, k in tg]),
                             f"translational Jacobians dv/dqd of the body origins then the "
                             f"points, frame 0 (m per rad, 1 per m), shape ({nb}, 3, {n}); "
                             f"column j is velocity coordinate j (of qd); rows: "
                             f"{_names(label for label, _ in tg)}"),
                        Port("R", (nb, 3, n), _flat([rows(k.R) for _, k in tg]),
                             f"rotational Jacobians domega/dqd of the bodies then the points, "
                             f"frame 0 (1 per rad, 0 per m), shape ({nb}, 3, {n}); rows in the "
                             f"order of T")),
                  tuple(rec.statements))


def velocities(chain: Chain) -> Kernel:
    ins, rec, chain, (q, qd) = _start(chain, ["q", "qd"])
    kin = chain_kinematics(rec, chain, q, qd, jacobians=False)
    tg = [(name, kin[j]) for name, j in chain.named_bodies]
    nb = len(tg)
    return Kernel("velocities",
                  "Velocity v of each body origin, angular velocity omega, and the velocity-product "
                  "accelerations w, eps (a = T qdd + w, angular acceleration R qdd + eps); frame 0.",
                  ins, tuple(Port(nm, (nb, 3), _flat([getattr(k, nm) for _, k in tg]),
                                  f"{what}, frame 0, shape ({nb}, 3); rows: "
                                  f"{_names(label for label, _ in tg)}")
                             for nm, what in (("v", "velocity of each body origin, m/s"),
                                              ("omega", "angular velocity of each body, rad/s"),
                                              ("w", "velocity-product acceleration of each body "
                                                    "origin (a = T qdd + w), m/s^2"),
                                              ("eps", "velocity-product angular acceleration of "
                                                      "each body (R qdd + eps), rad/s^2"))),
                  tuple(rec.statements))


def _links(rec: Recorder, chain: Chain, q):
    return [link_transform(rec, j, jt, q[j - 1]) for j, jt in enumerate(chain.joints, start=1)]


def mass_matrix(chain: Chain) -> Kernel:
    ins, rec, chain, (q,) = _start(chain, ["q"])
    A = crba(rec, chain, _links(rec, chain, q))
    n = chain.n
    return Kernel("mass_matrix", "Joint-space mass matrix A(q) (composite-body algorithm).",
                  ins, (Port("A", (n, n), _flat(A),
                             f"joint-space mass matrix, symmetric, shape ({n}, {n}); rows and "
                             f"columns in the order of q (kg m^2, kg m or kg)"),),
                  tuple(rec.statements))


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
    ins, rec, chain, (q, qd, Q) = _start(chain, ["q", "qd", "Q"])
    b = _bias(rec, chain, _links(rec, chain, q), q, qd, Q)
    return Kernel("bias", "Bias vector b = Q + Q_spring_damper - h(q, qd), so A qdd = b.",
                  ins, (Port("b", (chain.n,), tuple(b),
                             f"bias forces (N m or N), shape ({chain.n},), in the order of q"),),
                  tuple(rec.statements))


def inverse_dynamics(chain: Chain) -> Kernel:
    ins, rec, chain, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    h = rnea(rec, chain, _links(rec, chain, q), qd, qdd)
    Q = [hj - Pj for hj, Pj in zip(h, passive_forces(chain, q, qd))]
    return Kernel("inverse_dynamics",
                  "Drive forces Q = A qdd + h(q, qd) - Q_spring_damper (recursive Newton-Euler).",
                  ins, (Port("Q", (chain.n,), tuple(Q),
                             f"drive torques or forces (N m or N), shape ({chain.n},), in the "
                             f"order of q"),), tuple(rec.statements))


EULER_SINGULAR = EULER_BASE_SINGULAR
COS_PSI_Z_MIN = 1e-3   # |cos psi_z| below this: within 0.057 deg of the y-z-x singularity
EULER_MESSAGE = (f"free base within {COS_PSI_Z_MIN * 180 / 3.141592653589793:.3f} deg of the "
                 f"y-z-x angle singularity psi_z = +-90 deg (the mass matrix in angle rates is "
                 f"ill-conditioned there)")


def _require_euler_regular(rec: Recorder, q: list) -> None:
    """A free base's coordinates 4..6 are the y-z-x angles; their rates are the generalised
    speeds, so A(q) is singular at psi_z = +-90 deg (q[4]): refuse |cos psi_z| < 1e-3."""
    c = rec.bind(sp.cos(q[4]), "c_base_rz")
    rec.require_positive(c * c - COS_PSI_Z_MIN ** 2, EULER_SINGULAR, "cos psi_z ~ 0")


def mass_and_bias(rec: Recorder, chain: Chain, q, qd, Q) -> tuple[list, list, list, dict]:
    """(links, A, b, statuses) of forward dynamics A qdd = b: the CRBA mass matrix, the bias,
    and the Euler-base regularity check of a free base (forward_dynamics and its
    derivatives)."""
    links = _links(rec, chain, q)
    A = crba(rec, chain, links)
    b = _bias(rec, chain, links, q, qd, Q)
    return links, A, b, fd_statuses(rec, chain, q)


def fd_statuses(rec: Recorder, chain: Chain, q: list) -> dict[int, str]:
    """The statuses of forward dynamics; a free Euler base first checks its regularity
    (before the pivots, so its status wins)."""
    statuses = {SINGULAR: "mass matrix not positive definite"}
    if chain.base == "free" and chain.attitude == "euler":
        _require_euler_regular(rec, q)
        statuses[EULER_SINGULAR] = EULER_MESSAGE
    return statuses


def _qdd_port(chain: Chain, qdd) -> Port:
    """The output of both forward-dynamics forms."""
    return Port("qdd", (chain.n,), tuple(qdd), f"joint accelerations (rad/s^2 or m/s^2), shape "
                f"({chain.n},), in the order of q")


def forward_dynamics_aba(chain: Chain) -> Kernel:
    ins, rec, chain, (q, qd, Q) = _start(chain, ["q", "qd", "Q"])
    links = _links(rec, chain, q)
    tau = [Qj + Pj for Qj, Pj in zip(Q, passive_forces(chain, q, qd))]
    statuses = fd_statuses(rec, chain, q)                    # before the pivots
    try:
        qdd = aba(rec, chain, links, qd, tau)
    except SingularMassMatrix as e:
        raise ModelError(f"{chain.source}: {e}") from None
    return Kernel("forward_dynamics",
                  "Joint accelerations qdd solving A qdd = b by the articulated-body algorithm.",
                  ins, (_qdd_port(chain, qdd),), tuple(rec.statements), statuses)


def forward_dynamics_ltdl(chain: Chain) -> Kernel:
    ins, rec, chain, (q, qd, Q) = _start(chain, ["q", "qd", "Q"])
    _, A, b, statuses = mass_and_bias(rec, chain, q, qd, Q)
    try:
        qdd = ltdl_solve(rec, A, b, chain.parent, chain.coordinates)
    except SingularMassMatrix as e:
        raise ModelError(f"{chain.source}: {e}") from None
    return Kernel("forward_dynamics",
                  "Joint accelerations qdd solving A qdd = b by an unrolled L^T D L (no fill-in on a tree).",
                  ins, (_qdd_port(chain, qdd),), tuple(rec.statements), statuses)


@choice(forward_dynamics_ltdl, forward_dynamics_aba)
def forward_dynamics(chain: Chain) -> Kernel:
    """The cheaper of the two forms (operations after the passes, counted at generation):
    CRBA + bias + L^T D L, or the articulated-body algorithm (docs/algorithms.md §2.4)."""


def energy(chain: Chain) -> Kernel:
    """T = sum_j 1/2 m v.v + v.(omega x c) + 1/2 omega.(I omega) in body frames (v, omega
    carried from frame 0 by tau_j); V = -g . sum_j (m_j r_j + tau_j^T c_j)."""
    ins, rec, chain, (q, qd) = _start(chain, ["q", "qd"])
    kin = chain_kinematics(rec, chain, q, qd, jacobians=False)
    T, V = kinetic_and_gravity_energy(rec, chain, kin)
    return Kernel("energy", "Kinetic energy T and potential energy V of gravity, summed over "
                  "bodies (an invariant to monitor: T + V - work of Q is constant).",
                  ins, (Port("T", (1,), (T,), "kinetic energy, J, shape (1,)"),
                        Port("V", (1,), (V,), "potential energy of gravity (zero for every "
                             "centre of mass at the origin of frame 0), J, shape (1,)")),
                  tuple(rec.statements))


BUILDERS = tuple(with_tree_leg_loops(b) for b in (
    forward_kinematics, jacobians, velocities, mass_matrix, bias, inverse_dynamics,
    forward_dynamics, energy))
"""The kernels of every chain; on a tree whose legs are one computation (a quadruped), with
the legs' statements in loops over the legs (leg_loops.py)."""


def manifest(chain: Chain) -> dict:
    """What the runtime reads of a serial chain or tree."""
    return {
        "base": chain.base,
        "attitude": chain.attitude if chain.base == "free" else None,
        **({"base_velocity": "body"} if chain.base_velocity == "body" else {}),
        # the derivatives' q columns along the tangent (model.DERIVATIVES): n, not nq;
        # Pinocchio's own derivatives with base_velocity "body"
        **({"derivatives": "tangent"} if chain.derivatives == "tangent"
           and chain.attitude == "quaternion" else {}),
        "n": chain.n,
        "nq": chain.nq,
        "coordinates": chain.q_names,
        "velocities": chain.coordinates,
        "joint_types": [j.label for j in chain.joints],
        "parent": list(chain.parent),
        "parameters": [s.name for s in chain.parameters],
        "parameter_defaults": {s.name: chain.defaults.get(s.name) for s in chain.parameters},
        "gravity": [float(g) if g.is_number else str(g) for g in chain.gravity],
        "gravity_input": False,         # baked into the kernels (a name: an element of p)
        "bodies": [name for name, _ in chain.named_bodies],
        "points": [pt.name for pt in chain.points],
        **regressor_manifest(chain),
    }


def summary(chain: Chain) -> str:
    return f"{chain.name} (n = {chain.n}, base {chain.base})"


def optional_builders(chain: Chain) -> tuple:
    """The kernels a spec opts into with ``[kernels]``: the derivatives
    (families/serial/derivatives.py), then the regressor's (families/serial/regressor.py)."""
    from mechgen.generator.families.serial.derivatives import extra_builders
    return tuple(extra_builders(chain)) + tuple(regressor_kernels(chain))


# the regressor's kernels (regressor.py uses _start above, hence imported here)
from mechgen.generator.families.serial.regressor import (regressor_kernels,  # noqa: E402
                                                         regressor_manifest)

SERIAL = Family("serial_chain", Chain, BUILDERS, manifest, summary, optional_builders)
