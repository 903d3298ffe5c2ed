"""Derivatives of the dynamics of a serial chain or tree (opt-in: ``[kernels] derivatives``).

Inverse dynamics ID(q, qd, qdd) = A(q) qdd + h(q, qd) - Q_spring_damper(q, qd) (recursive
Newton-Euler, generator/algorithms/rnea.py) is differentiated by the forward-mode pass over its
scalar IR (generator/passes/derivatives.py): every statement t = e(s_1..s_m) on the way to the
torques gets t_dw = sum_k de/ds_k s_k_dw for each direction w in (q, qd). A statement that does
not depend on w has no derivative, so the sparsity of the recursion carries over (in a tree,
a torque does not depend on another branch's coordinates). Value numbering
(merge_equal_statements) then drops the derivatives equal to values the kernel has already:
d(beta_j v)/dq_j = (beta_j v) x e_j are components of beta_j v itself.

Forward dynamics FD(q, qd, Q) solves A qdd = Q + Q_spring_damper - h. Differentiating the
identity ID(q, qd, FD(q, qd, Q)) = Q (the ABA-derivative identity, Carpentier & Mansard 2018,
eq. 8) gives

    dFD/dq  = -A^-1 dID/dq  |qdd = FD(q, qd, Q)
    dFD/dqd = -A^-1 dID/dqd |qdd = FD(q, qd, Q)
    dFD/dQ  =  A^-1

The kernel computes qdd by an L^T D L factorisation, differentiates the RNEA at that qdd, and
applies A^-1 by the same factors (one solve per column, over ancestors only: no fill-in on a
tree; the columns with one pattern of structural zeros in one column loop, which the compiler
vectorises across the columns: column_solves.py); dFD/dQ = A^-1 itself by the symmetric form
of algorithms/ltdl_inverse.py when that is cheaper. On the free flyer and the Euler-angle
base the W^T y parts of the base columns need no solve (:func:`base_solver`,
:func:`base_rates`). Three forms, the cheapest kept
(:func:`choose`): the mass matrix and bias from the analytical pass's composites
(rnea_derivatives eqs. 8, 9), or from the body-frame CRBA and Newton-Euler
(kernels.mass_and_bias) with the analytical dID, or with the forward-mode dID.
The frame-0 quaternion base (v in frame 0) takes the analytical forms of its body-twist twin,
mapped to its own rates (frame0_base.py).
Derivatives with respect to q are taken with respect to the input q as given: for a quaternion
base the columns are those of x, y, z, qw, qx, qy, qz. With ``[kernels] derivatives =
"tangent"`` those seven columns become six along Pinocchio's tangent space
(:func:`directions`).
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from mechgen.generator.algorithms.ldlt import SingularMassMatrix, ltdl_factor
from mechgen.generator.algorithms.ltdl_inverse import ltdl_apply, symmetric_inverse
from mechgen.generator.algorithms.rnea import rnea
from mechgen.generator.algorithms.rnea_derivatives import (ZERO, bias_from, derivatives_at,
                                                          free_flyer_block, mass_matrix_from,
                                                          mcross, rnea_derivatives,
                                                          velocity_pass)
from mechgen.generator.families.serial.leg_loops import with_tree_leg_loops
from mechgen.generator.families.serial.column_solves import column_loops
from mechgen.generator.families.serial.frame0_base import (body_twist_twin, fd_columns,
                                                           frame0_base, id_columns, twin_start)
from mechgen.generator.families.serial.kernels import (_flat, _links, _start, fd_statuses,
                                                       mass_and_bias, passive_forces, tau_base)
from mechgen.generator.ir import Assign, Kernel, Port, symbol
from mechgen.generator.model import Chain, ModelError
from mechgen.generator.passes.cse import common_subexpressions
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code
from mechgen.generator.passes.derivatives import differentiate, merge_equal_statements
from mechgen.generator.passes.opcount import count_ops
from mechgen.generator.scalar import Recorder, _count, counting_dense, transpose


def _id_torques(rec: Recorder, chain: Chain, links, q, qd, qdd) -> list[sp.Expr]:
    """ID = A qdd + h(q, qd) - Q_spring_damper (the inverse_dynamics kernel's output)."""
    h = rnea(rec, chain, links, qd, qdd)
    return [hj - Pj for hj, Pj in zip(h, passive_forces(chain, q, qd))]


def _analytic_rows(rec: Recorder, chain: Chain, links, q, qd, qdd,
                   frame: int) -> list[list[sp.Expr]]:
    """[dID/dq | dID/dqd] rows by the analytical RNEA derivatives
    (algorithms/rnea_derivatives.py), plus the spring-damper laws' own derivatives."""
    dq, dqd = rnea_derivatives(rec, chain, links, qd, qdd, frame)
    return _with_springs(chain, q, qd, dq, dqd)


def _with_springs(chain: Chain, q, qd, dq, dqd) -> list[list[sp.Expr]]:
    """[dID/dq | dID/dqd] rows: the RNEA's derivatives minus the spring-damper laws' own."""
    passive = passive_forces(chain, q, qd)

    def d(e, x):        # a free flyer's coordinates are 0 here (kernels._configuration)
        if x == 0:
            return sp.Integer(0)
        if not isinstance(x, sp.Symbol):
            raise ValueError(f"{chain.source}: coordinate {x} is neither a name nor 0")
        return sp.diff(e, x)
    return [[dq[i][k] - d(passive[i], q[k]) for k in range(chain.n)]
            + [dqd[i][k] - d(passive[i], qd[k]) for k in range(chain.n)]
            for i in range(chain.n)]


def directions(chain: Chain, rchain: Chain, ins) -> tuple[list[sp.Symbol], dict]:
    """(directions, seeds) of the forward-mode derivatives (passes/derivatives.differentiate):
    q and qd as given, or with ``[kernels] derivatives = "tangent"`` on a quaternion base the
    base displaced along Pinocchio's tangent space instead of its seven coordinates.

    The tangent: a twist (rho, phi) in the base's own frame, as ``pinocchio.integrate``; to
    first order p' = p + R rho and R' = R (1 + [phi]x) (R: base frame -> frame 0). The
    directions rho_x..phi_z are no inputs: they enter through the names they move, seeded
    with their exact first derivatives,

        dp/drho_c = R e_c,     d tau_base/dphi_c = -[e_c]x tau_base     (tau_base = R^T),

    tau_base being the rotation kernels._configuration gives the base joint. Each seed is a
    signed entry of tau_base (no operation), so the quaternion's rational R(quat) is never
    differentiated. The velocity directions stay qd: on the body-twist base it is
    Pinocchio's v already. Any other chain: q and qd, no seeds."""
    q_in, qd_in = list(ins[0].elements), list(ins[1].elements)
    if chain.derivatives != "tangent" or chain.attitude != "quaternion":
        return q_in + qd_in, {}
    rho, phi = [symbol(f"base_rho_{a}") for a in "xyz"], [symbol(f"base_phi_{a}") for a in "xyz"]
    wrt = [*rho, *phi, *q_in[7:], *qd_in]
    n = len(wrt)
    rotation = tau_base(rchain)
    seeds: dict[sp.Symbol, list[sp.Expr]] = {}
    for i, p in enumerate(q_in[:3]):                      # p_i: R_ic = tau_base[c][i]
        seeds[p] = [rotation[c][i] for c in range(3)] + [sp.Integer(0)] * (n - 3)
    for i in range(3):
        for j in range(3):
            column = [sp.Integer(0)] * n
            for c in range(3):   # -([e_c]x tau_base)_ij = -sum_m eps_icm tau_base_mj
                column[3 + c] = -sp.Add(*[sp.LeviCivita(i, c, m) * rotation[m][j]
                                          for m in range(3)])
            if not isinstance(rotation[i][j], sp.Symbol):
                raise ValueError(f"{chain.source}: tau_base[{i}][{j}] is not a name")
            seeds[rotation[i][j]] = column
    return wrt, seeds


def analytic_applies(chain: Chain) -> bool:
    """The analytical path needs one coordinate per joint and no quasi joints, or the
    body-twist base (Pinocchio's free flyer: rnea_derivatives.free_flyer_block, along its
    tangent, then mapped to the quaternion's columns unless ``derivatives = "tangent"``,
    :func:`coordinate_rows`), or the frame-0 quaternion base through its body-twist twin
    (frame0_base.py). A quaternion base not built as model.free_base_joints builds it, or
    with spring-damper laws on its six joints, keeps forward differentiation."""
    if chain.attitude == "quaternion":
        try:
            free_flyer_block(body_twist_twin(chain) if frame0_base(chain) else chain)
        except ValueError:
            return False
        return all(j.stiffness == 0 and j.damping == 0 for j in chain.joints[:6])
    return chain.nq == chain.n and not any(j.quasi for j in chain.joints)


def _columns(rows: list[list[sp.Expr]], start: int, stop: int) -> list[list[sp.Expr]]:
    return [row[start:stop] for row in rows]


def _doc_q(chain: Chain, nq: int) -> str:
    """What the q columns of a derivative kernel are (``nq`` of them)."""
    if nq != chain.nq:
        return ("the tangent of q: the base displaced by a twist in its own frame (linear, "
                "then angular, as pinocchio.integrate), then the joints, in the order of qd")
    return "q" if chain.nq == chain.n else f"q ({', '.join(chain.q_names)})"


def _id_derivatives_kernel(chain: Chain, ins, body, rows) -> Kernel:
    n = chain.n
    nq = len(rows[0]) - n       # chain.nq, or n along the tangent (directions)
    return merge_equal_statements(Kernel("inverse_dynamics_derivatives",
                  "Partial derivatives of the inverse dynamics Q = ID(q, qd, qdd) (recursive "
                  "Newton-Euler with the spring-damper laws) with respect to q and qd.",
                  ins, (Port("dtau_dq", (n, nq), _flat(_columns(rows, 0, nq)),
                             f"dQ/dq, shape ({n}, {nq}); row i: Q_i in the order of qd, "
                             f"column j: coordinate j of {_doc_q(chain, nq)}"),
                        Port("dtau_dqd", (n, n), _flat(_columns(rows, nq, nq + n)),
                             f"dQ/dqd, shape ({n}, {n}); rows and columns in the order of qd")),
                  tuple(body)))


def id_derivatives_forward(chain: Chain) -> Kernel:
    """dID/dq and dID/dqd by forward differentiation of the RNEA's scalar IR."""
    ins, rec, rchain, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    tau = _id_torques(rec, rchain, _links(rec, rchain, q), q, qd, qdd)
    k = Kernel("inverse_dynamics_derivatives", "", ins, (), tuple(rec.statements))
    wrt, seeds = directions(chain, rchain, ins)
    body, rows = differentiate(k, tau, wrt, reserved={"dtau_dq", "dtau_dqd"}, seeds=seeds)
    return _id_derivatives_kernel(chain, ins, body, rows)


def id_derivatives_analytic(chain: Chain, frame: int | None = None) -> Kernel:
    """dID/dq and dID/dqd by the analytical RNEA derivatives in the common frame ``frame``
    (None: :func:`best_frame`); a frame-0 quaternion base through its body-twist twin
    (:func:`id_derivatives_frame0`)."""
    if frame0_base(chain):
        return id_derivatives_frame0(chain, frame)
    frame = best_frame(chain) if frame is None else frame
    ins, rec, rchain, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    rows = _analytic_rows(rec, rchain, _links(rec, rchain, q), q, qd, qdd, frame)
    return _id_derivatives_kernel(chain, ins, rec.statements, coordinate_rows(rec, rchain, ins, rows))


def id_derivatives_frame0(chain: Chain, frame: int | None = None) -> Kernel:
    """dID/dq and dID/dqd of a frame-0 quaternion base: the analytical derivatives of its
    body-twist twin at qd_b = T qd0, qdd_b = T qdd0 + c, from the composites (which give the
    twin's mass matrix and bias too), mapped to the frame-0 rates (frame0_base.id_columns)."""
    n = chain.n
    ins, rec, rchain, (q, qd, qdd), tw = twin_start(chain, ["q", "qd", "qdd"])
    frame = best_frame(chain) if frame is None else frame
    links = _links(rec, rchain, q)
    passes = velocity_pass(rec, rchain, links, qd, frame)
    A = mass_matrix_from(rec, rchain, passes)
    h = bias_from(rec, rchain, passes)
    rows = _with_springs(rchain, q, qd, *derivatives_at(rec, rchain, passes, qd, qdd)[:2])
    f_b = [h[k] + sp.Add(*[A[k][j] * qdd[j] for j in range(n)]) for k in range(3)]
    cols = transpose(rows)
    dq, dqd = id_columns(rec, tw, cols[:n], cols[n:], transpose(A)[:3], f_b)
    rows = coordinate_rows(rec, replace(rchain, derivatives=chain.derivatives), ins,
                           transpose(dq + dqd))
    return _id_derivatives_kernel(chain, ins, rec.statements, rows)


def coordinate_rows(rec: Recorder, rchain: Chain, ins,
                    rows: list[list[sp.Expr]]) -> list[list[sp.Expr]]:
    """The analytical rows of a free flyer (rnea_derivatives.free_flyer_block), taken along
    its tangent, as ``[kernels] derivatives = true`` asks: along the input q (x, y, z, qw,
    qx, qy, qz). With rho = R^T dp and dphi = (4/|quat|^2) G^T dquat (G's columns
    quat (x) (0, e_c) / 2, orthogonal, each of norm |quat|/2; the radial direction moves
    nothing, R(quat) being of any norm):

        dX/dp_i = sum_c dX/drho_c R_ic,   dX/dquat_m = 4/|quat|^2 sum_c dX/dphi_c G_mc.

    The 4/|quat|^2 G_mc are named once (``quat_G<m><c>``; 4/|quat|^2 = 2 quat_k, the name
    kernels._configuration gave 2/|quat|^2). Any other chain, or ``derivatives =
    "tangent"``: ``rows`` as they are."""
    if not free_flyer_block(rchain) or rchain.derivatives == "tangent":
        return rows
    w, x, y, z = list(ins[0].elements)[3:7]
    rotation = tau_base(rchain)             # R^T
    k = 2 * rec.bind(2 / (w * w + x * x + y * y + z * z), "quat_k")
    half = sp.Rational(1, 2)
    G = [[-half * x, -half * y, -half * z], [half * w, -half * z, half * y],
         [half * z, half * w, -half * x], [-half * y, half * x, half * w]]
    kG = [[rec.bind(k * G[m][c], f"quat_G{m}{c}") for c in range(3)] for m in range(4)]
    out = []
    for row in rows:
        rho, phi, rest = row[:3], row[3:6], row[6:]
        dp = [sp.Add(*[rho[c] * rotation[c][i] for c in range(3)]) for i in range(3)]
        dquat = [sp.Add(*[phi[c] * kG[m][c] for c in range(3)]) for m in range(4)]
        out.append([*dp, *dquat, *rest])
    return out


def spine(chain: Chain) -> list[int]:
    """Frame 0 and the bodies from the base to the first body with several children (a whole
    serial chain; a legged robot's trunk and the base joints below it). A free flyer's
    (rnea_derivatives.free_flyer_block) starts at its body: the frames of its six joints are
    all that body's at displacement 0, and frame 0 would bring the base pose into every
    axis."""
    block = free_flyer_block(chain)
    out, j = [block], block
    while len(chain.children(j)) == 1:
        j = chain.children(j)[0]
        out.append(j)
    return out


MAX_FRAMES = 8      # common frames tried per mechanism (evenly spaced along the spine)
_BEST_FRAME: dict[str, int] = {}


def best_frame(chain: Chain) -> int:
    """The common frame along :func:`spine` in which the analytical dID costs the fewest
    operations after dead-code removal (at most MAX_FRAMES tried, evenly spaced; remembered
    per chain, so forward_dynamics_derivatives uses the frame inverse_dynamics_derivatives
    found). The rotations from a frame in the middle of the tree to the bodies are products
    of fewer joint rotations, so fewer entries are dense: panda 5512 ops in frame 0, 4282 in
    frame 2."""
    if frame0_base(chain):
        return best_frame(body_twist_twin(chain))
    key = repr(chain)
    if key not in _BEST_FRAME:
        frames = spine(chain)
        if len(frames) > MAX_FRAMES:
            frames = sorted({frames[round(i * (len(frames) - 1) / (MAX_FRAMES - 1))]
                             for i in range(MAX_FRAMES)})
        with counting_dense():      # the search is no part of a kernel's dense count
            _BEST_FRAME[key] = min(frames, key=lambda f: _analytic_ops(chain, f))
    return _BEST_FRAME[key]


def _analytic_ops(chain: Chain, frame: int) -> int:
    """Operations of the analytical dID in ``frame`` after dead-code removal (no value
    numbering: the same for every frame, and the slowest step of the build)."""
    ins, rec, rchain, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    rows = _analytic_rows(rec, rchain, _links(rec, rchain, q), q, qd, qdd, frame)
    k = Kernel("dID", "", ins, (Port("d", (len(rows) * len(rows[0]),), _flat(rows), ""),),
               tuple(rec.statements))
    return count_ops(remove_dead_code(k))["total"]


def inverse_dynamics_derivatives(chain: Chain) -> Kernel:
    """dID/dq and dID/dqd by whichever path (analytical or forward-mode) costs fewer
    operations on this chain (:func:`choose`)."""
    return choose(chain, (id_derivatives_analytic,), id_derivatives_forward)


def _ops_of(statements) -> int:
    return count_ops(Kernel("ops", "", (), (), tuple(statements)))["total"]


def inverse_by_unit_solves(rec: Recorder, L, invD, parent: list[int]) -> list[list[sp.Expr]]:
    """A^-1 by n solves against the unit vectors (:func:`ltdl_apply`); rows."""
    n = len(parent)
    cols = [ltdl_apply(rec, L, invD, parent, [sp.Integer(1 if i == c else 0) for i in range(n)],
                       f"Ainv_c{c + 1}_") for c in range(n)]
    return [[col[i] for col in cols] for i in range(n)]


def inverse_mass_matrix(rec: Recorder, L, invD, parent: list[int]) -> list[list[sp.Expr]]:
    """A^-1 from the factors by the symmetric form (algorithms/ltdl_inverse.py: U = L^-1,
    (A^-1)_ab = sum over the common path of U_am U_bm / D_m, each entry once) or by n unit
    solves, whichever records fewer operations (each tried on a scratch recorder first)."""
    forms = (symmetric_inverse, inverse_by_unit_solves)
    costs = []
    for form in forms:
        scratch = Recorder(reserved=set(rec._taken))
        form(scratch, L, invD, parent)
        costs.append(_ops_of(scratch.statements))
    return forms[costs.index(min(costs))](rec, L, invD, parent)


def base_solver(rec: Recorder, rchain: Chain, m):
    """y, n -> A^-1 W^T y = E_base S_B^-1 y (n entries: the base rows, then 0) without a
    solve, or None. Where the base joints' composite is the whole robot's (their bodies
    massless but the last), A_jk = w_j . S_k for every base joint k, i.e. A[:, base] =
    W^T S_B, so A^-1 W^T = E_base S_B^-1. Two bases:

    - the free flyer (rnea_derivatives.free_flyer_block) whose axes are orthonormal numbers
      in the common frame (in the base body's own frame, which best_frame starts from:
      signed unit twists): S_B^-1 = S_B^T, entry r of the result S_r . y;
    - the Euler-angle base (three slides along frame 0's axes, three rotations):
      S_B = [[0, E], [M, P]] (angular rows first; the slides' columns (0, M), M their axes,
      orthonormal; the rotations' (E, P)), so S_B^-1 y = (M^T (y_lin - P x_rot), x_rot) with
      x_rot = E^-1 y_ang, E^-1 by its adjugate over det E = +-cos psi_z, nonzero once the
      forward dynamics' regularity check has passed.

    The columns it serves: :func:`base_rates`."""
    block = free_flyer_block(rchain)
    S_B = [list(m.S[k]) for k in range(min(6, rchain.n))]
    if block:
        if not all(sp.sympify(x).is_number for col in S_B for x in col) or \
                sp.Matrix(S_B) * sp.Matrix(S_B).T != sp.eye(block):
            return None
        return lambda y, n: ([sp.Add(*[S_r[i] * y[i] for i in range(6)]) for S_r in S_B]
                             + [ZERO] * (n - block))
    if not (rchain.base == "free" and rchain.attitude == "euler" and rchain.n >= 6
            and list(rchain.parent[:6]) == list(range(6))
            and [j.kind for j in rchain.joints[:6]] == ["P"] * 3 + ["R"] * 3
            and all(rchain.bodies[j].fictitious for j in range(5))
            and not any(x != 0 for k in range(3) for x in S_B[k][:3])):
        return None
    M = [[S_B[c][3 + i] for c in range(3)] for i in range(3)]        # columns: the slides
    E = [[S_B[3 + c][i] for c in range(3)] for i in range(3)]
    P = [[S_B[3 + c][3 + i] for c in range(3)] for i in range(3)]
    adj = [[E[(c + 1) % 3][(r + 1) % 3] * E[(c + 2) % 3][(r + 2) % 3]
            - E[(c + 1) % 3][(r + 2) % 3] * E[(c + 2) % 3][(r + 1) % 3] for c in range(3)]
           for r in range(3)]                                           # adj(E)[r][c]
    det = rec.bind(sp.Add(*[E[0][c] * adj[c][0] for c in range(3)]), "S_B_det")
    inv_det = rec.bind(1 / det, "S_B_inv_det")
    E_inv = [[rec.bind(adj[r][c] * inv_det, f"S_B_Einv{r}{c}") for c in range(3)]
             for r in range(3)]

    def by_blocks(y: list, n: int) -> list:
        x_rot = [sp.Add(*[E_inv[r][c] * y[c] for c in range(3)]) for r in range(3)]
        x_rot = rec.vec(x_rot, "S_B_xrot")
        rest = [y[3 + i] - sp.Add(*[P[i][c] * x_rot[c] for c in range(3)]) for i in range(3)]
        x_slide = [sp.Add(*[M[i][r] * rest[i] for i in range(3)]) for r in range(3)]
        return x_slide + x_rot + [ZERO] * (n - 6)
    return by_blocks


def base_rates(rchain: Chain, m, Sdd: list) -> list[tuple[list, list]]:
    """(y_q, y_qd) of each base joint k: dID's base columns are W^T y + (the rest) in every
    row (rnea_derivatives.pair_terms with ``apart``), with

    - the free flyer: y_q = a_0 x S_k (turning the robot against uniform gravity; 0 for the
      slides), y_qd = v_b x S_k (the body twist moves the axes), so that A^-1 dID/dphi_k is
      S_B^-1 (a_0 x S_k) in the base rows and 0 in the joints (turning the robot changes only
      the base's acceleration, by g_b x e_k) and only U^T S_k of the velocity columns is
      solved;
    - the Euler-angle base: y_q = Sdd_k, y_qd = 2 Sd_k."""
    if free_flyer_block(rchain):
        v_b = m.v[5]
        return [(mcross(m.a_base, m.S[k]), mcross(v_b, m.S[k])) for k in range(6)]
    return [(Sdd[k], [2 * e for e in m.Sd[k]]) for k in range(6)]


def _fd_derivatives(chain: Chain, analytic: bool, frame: int = 0,
                    inverse=inverse_mass_matrix, composite: bool = False,
                    columns: str | None = "cheaper") -> Kernel:
    """qdd = FD(q, qd, Q) and its derivatives -A^-1 dID/dq, -A^-1 dID/dqd, A^-1, with dID by
    the analytical RNEA derivatives or by forward differentiation of the RNEA's IR, and A^-1
    by ``inverse(rec, L, invD, parent)`` (default: the cheaper form). ``composite``
    (analytical only): the mass matrix and the bias from the analytical pass's composites
    in the common frame instead of the body-frame CRBA and Newton-Euler. ``columns``: the
    2n solves as column loops (column_solves.py) with the body of fewer operations per
    pattern of zeros ("cheaper"), or with the body "solve" or "product"; None: the
    straight-line solves of ltdl_apply."""
    twin = analytic and frame0_base(chain)      # through the body-twist twin (frame0_base)
    if twin:
        ins, rec, rchain, (q, qd, Q), tw = twin_start(chain, ["q", "qd", "Q"])
    else:
        ins, rec, rchain, (q, qd, Q) = _start(chain, ["q", "qd", "Q"])
    n, parent = chain.n, list(rchain.parent)
    names = {"qdd", "dqdd_dq", "dqdd_dqd", "dqdd_dQ"}
    if composite:   # A and h from the analytical pass's composites (rnea_derivatives eq. 8)
        rec._taken |= names
        links = _links(rec, rchain, q)
        passes = velocity_pass(rec, rchain, links, qd, frame)
        A = mass_matrix_from(rec, rchain, passes)
        b = [rec.bind(Qj + Pj - hj, f"b{j}") for j, (Qj, Pj, hj) in
             enumerate(zip(Q, passive_forces(rchain, q, qd), bias_from(rec, rchain, passes)),
                       start=1)]
        statuses = fd_statuses(rec, rchain, q)
    else:
        links, A, b, statuses = mass_and_bias(rec, rchain, q, qd, Q)
    try:
        L, invD = ltdl_factor(rec, A, parent, rchain.coordinates)
    except SingularMassMatrix as e:
        raise ModelError(f"{chain.source}: {e}") from None
    qdd = ltdl_apply(rec, L, invD, parent, b, "qdd")
    solve_base = base_solver(rec, rchain, passes.m) if composite else None
    if composite:
        dq, dqd, Sdd = derivatives_at(rec, rchain, passes, qd, qdd, 6 if solve_base else 0)
        rows = _with_springs(rchain, q, qd, dq, dqd)
    elif analytic:
        rec._taken |= names
        rows = _analytic_rows(rec, rchain, links, q, qd, qdd, frame)
    else:
        held = {x for x in qdd if isinstance(x, sp.Symbol)}
        tau = _id_torques(rec, rchain, links, q, qd, qdd)
        wrt, seeds = directions(chain, rchain, ins)
        k = Kernel("forward_dynamics_derivatives", "", ins, (), tuple(rec.statements))
        body, rows = differentiate(k, tau, wrt, constants=held, reserved=names, seeds=seeds)
        rec.statements = list(body)
        rec._taken |= {st.target.name for st in body if isinstance(st, Assign)}
    nq = len(rows[0]) - n       # chain.nq, or n along the tangent (directions, analytical)
    Ainv = inverse(rec, L, invD, parent)
    if columns is None:
        cols = [ltdl_apply(rec, L, invD, parent, [-rows[i][c] for i in range(n)],
                           f"dqdd_c{c + 1}_") for c in range(nq + n)]
    else:   # -(A^-1 b) = A^-1 (-b) bit for bit: negation is exact
        x = column_loops(rec, [[rows[i][c] for i in range(n)] for c in range(nq + n)],
                         L, invD, parent, Ainv, form=None if columns == "cheaper" else columns)
        cols = [[-e for e in col] for col in x]
    if solve_base:      # -A^-1 (W^T y_k + the rest): the W^T y_k part without a solve
        for k, (y_q, y_qd) in enumerate(base_rates(rchain, passes.m, Sdd)):
            cols[k] = [x - y for x, y in zip(cols[k], solve_base(y_q, n))]
            cols[nq + k] = [x - y for x, y in zip(cols[nq + k], solve_base(y_qd, n))]

    if twin:     # the twin's columns (along its tangent) mapped to the frame-0 rates
        qdd, dq0, dqd0, dQ0 = fd_columns(rec, tw, qdd, cols[:nq], cols[nq:], Ainv, Q)
        cols, Ainv = dq0 + dqd0, transpose(dQ0)
    if analytic:  # a free flyer's solved tangent columns to the input's (coordinate_rows)
        cols = transpose(coordinate_rows(rec, replace(rchain, derivatives=chain.derivatives),
                                         ins, transpose(cols)))
        nq = len(cols) - n

    return merge_equal_statements(Kernel("forward_dynamics_derivatives",
                  "Forward dynamics qdd = FD(q, qd, Q) and its derivatives dFD/dq = -A^-1 dID/dq, "
                  "dFD/dqd = -A^-1 dID/dqd, dFD/dQ = A^-1 (ID evaluated at qdd).",
                  ins, (Port("qdd", (n,), tuple(qdd),
                             f"joint accelerations (rad/s^2 or m/s^2), shape ({n},), in the "
                             f"order of qd"),
                        Port("dqdd_dq", (n, nq), _flat(transpose(cols[:nq])),
                             f"dqdd/dq, shape ({n}, {nq}); column j: coordinate j of "
                             f"{_doc_q(chain, nq)}"),
                        Port("dqdd_dqd", (n, n), _flat(transpose(cols[nq:])),
                             f"dqdd/dqd, shape ({n}, {n}); rows and columns in the order of qd"),
                        Port("dqdd_dQ", (n, n), _flat(Ainv),
                             f"dqdd/dQ = A^-1, symmetric, shape ({n}, {n}), in the order of qd")),
                  tuple(rec.statements), statuses))


def fd_derivatives_forward(chain: Chain, inverse=inverse_mass_matrix,
                           columns: str | None = "cheaper") -> Kernel:
    return _fd_derivatives(chain, analytic=False, inverse=inverse, columns=columns)


def fd_derivatives_analytic(chain: Chain, frame: int | None = None,
                            inverse=inverse_mass_matrix, columns: str | None = "cheaper"
                            ) -> Kernel:
    frame = best_frame(chain) if frame is None else frame
    return _fd_derivatives(chain, analytic=True, frame=frame, inverse=inverse, columns=columns)


def fd_derivatives_composite(chain: Chain, frame: int | None = None,
                             inverse=inverse_mass_matrix, columns: str | None = "cheaper"
                             ) -> Kernel:
    """The analytical dFD with the mass matrix and bias from its own composites."""
    frame = best_frame(chain) if frame is None else frame
    return _fd_derivatives(chain, analytic=True, frame=frame, inverse=inverse, composite=True,
                           columns=columns)


def forward_dynamics_derivatives(chain: Chain) -> Kernel:
    """qdd = FD(q, qd, Q) and its derivatives, dID by the cheaper path (:func:`choose`)."""
    return choose(chain, (fd_derivatives_composite, fd_derivatives_analytic),
                  fd_derivatives_forward)


def choose(chain: Chain, analytic: tuple, forward) -> Kernel:
    """The cheapest of the analytical kernels (in :func:`best_frame`; when they apply) and
    the forward-mode one. Counted after dead-code removal, and after CSE too for the
    candidates within NEAR_TIE of the cheapest (CSE takes them about as far: panda's dID
    4282 -> 3890 analytical, 7677 -> 7211 forward-mode; ur5's dFD 4115 -> 3599 analytical,
    4157 -> 3503 forward-mode); the first listed wins a tie."""
    if not analytic_applies(chain):
        return forward(chain)
    built = []
    for build in (*analytic, forward):
        with counting_dense() as dense:   # the dense count of the kernel kept, not of all
            k = build(chain)
        clean = remove_dead_code(drop_unguarded_checks(k))
        built.append([count_ops(clean)["total"], k, dense.as_dict(), clean])
    least = min(b[0] for b in built)
    near = [b for b in built if NEAR_TIE * b[0] <= least]
    if len(near) > 1:
        for b in near:
            b[0] = count_ops(remove_dead_code(common_subexpressions(b[3])))["total"]
    _, k, dense, _ = min(near, key=lambda b: b[0])
    _count(**{key: dense[key] for key in ("adds", "muls", "divs", "sqrt", "trig")})
    return k


NEAR_TIE = 0.9


BUILDERS = (inverse_dynamics_derivatives, forward_dynamics_derivatives)


def extra_builders(chain: Chain) -> tuple:
    """The derivative kernels when the spec asks for them (``[kernels] derivatives = true``),
    a tree's legs in loops over the legs where they are one computation (leg_loops.py:
    inverse dynamics' derivatives; forward dynamics' have their column solves in loops)."""
    return tuple(with_tree_leg_loops(b) for b in BUILDERS) if chain.derivatives else ()
