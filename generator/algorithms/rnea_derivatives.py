"""Analytical derivatives of the recursive Newton-Euler algorithm in one common frame.

Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms" (RSS 2018),
rederived for 1-DoF joints and written with 6-vectors in frame 0 (Plücker coordinates at O_0):
a motion m = (omega, v) with v the velocity of the body point at O_0, a force f = (n, f) with
n the moment about O_0. Products:

    m1 x m2  = (w1 x w2, w1 x v2 + v1 x w2)          (motion cross motion)
    m x* f   = (w x n + v x f, w x f)                 (motion cross force)
    m . f    = w . n + v . f,       m1 . (m2 x* f) = -(m2 x m1) . f                     (1)

Written below for frame 0; the equations only combine values at the current configuration by
dot and cross products, so they hold unchanged in the coordinates of any one frame c (a body's
frame at this configuration, origin O_c, gravity rotated into it): :func:`rnea_derivatives`
takes c as ``frame`` (the caller picks the cheapest).

A spatial inertia about O_0 is (mass m, first moment h = m c, inertia J about O_0):
I (w, v) = (J w + h x v, m v - h x w).

Forward pass (k ranges over the path from the base to body i, ⪯ "is k or an ancestor of"):

    S_i  = (e_i, p_i x e_i) revolute, (0, e_i) prismatic      (e_i axis, p_i = O_i, frame 0)
    v_i  = v_p(i) + S_i qd_i                                   v_0 = 0
    Sd_i = v_i x S_i  (= dS_i/dt)                                                     (2)
    a_i  = a_p(i) + S_i qdd_i + Sd_i qd_i                      a_0 = (0, -g)
    Sdd_i = a_i x S_i + v_i x Sd_i = a_p(i) x S_i + v_p(i) x Sd_i                      (3)

Per body: its inertia I_i in frame 0, its momentum h_i = I_i v_i, its inertial force
f_i = I_i a_i + v_i x* h_i, and the time derivative of its inertia in frame 0,
Id_i = v_i x* I_i - I_i v_i x, again a (massless) spatial inertia:

    hd = m v + w x h,    Jd = [w]x J - J [w]x - (h v^T + v h^T) + 2 (v . h) 1        (4)

Composites over the subtree of j (sums): Ic_j, Idc_j, Hc_j = sum h_i, Fc_j = sum f_i; the
torque is tau_j = S_j . Fc_j.

Derivatives. Turning q_k turns the subtree of k about S_k: dS_i/dq_k = S_k x S_i (i below k),
so dv_i/dq_k = S_k x (v_i - v_k), da_i/dq_k = S_k x (a_i - a_k) + Sd_k x (v_i - v_k), and
dI_i/dq_k = S_k x* I_i - I_i S_k x. Writing each as the rigid turn (S_k x ...) plus the rest,
the turn of tau_j's own S_j and of Fc_j cancel by (1) when k ⪯ j, and

    df_i/dq_k  = S_k x* f_i + I_i Sdd_k + X_i Sd_k                 (i below k)
    df_i/dqd_k = 2 I_i Sd_k + X_i S_k,      X_i m = Id_i m + m x* h_i                  (5)

Summing (5) over the bodies that tau_j sees gives, with w_j = Ic_j S_j and
u_j = Idc_j S_j - S_j x* Hc_j (= X_c^T S_j: Idc is symmetric, (m x*)^T = -m x),

    k ⪯ j:  dtau_j/dq_k  = w_j . Sdd_k + u_j . Sd_k
            dtau_j/dqd_k = 2 w_j . Sd_k + u_j . S_k                                   (6)
    j ≺ k:  dtau_j/dq_k  = S_j . P_k,   P_k = S_k x* Fc_k + Ic_k Sdd_k + Idc_k Sd_k + Sd_k x* Hc_k
            dtau_j/dqd_k = S_j . G_k,   G_k = 2 Ic_k Sd_k + Idc_k S_k + S_k x* Hc_k      (7)

and 0 when j and k are on different branches. Every pair costs one or two 6-vector dot
products: the O(n^2) part; the rest is linear in n. Springs and dampers are added by the caller.

A free flyer (the body-twist base, ``base_velocity = "body"``: its first ``block`` = 6 joints,
three slides and three quasi rotations at displacement 0, all with axes fixed in the base body)
differentiated along Pinocchio's tangent (the base displaced by exp(eps e_k) in its own frame,
i.e. exp(eps S_k) in the common frame, the body twist qd and the joints held): that turns the whole robot rigidly, every base axis
with it (dS_m/dq_k = S_k x S_m for all m, the block's own axes included), and every world
quantity of the RNEA is carried along covariantly except gravity a_0. By the invariance of
S_j . Fc_j under a rigid turn,

    dtau_j/dq_k = S_j . Ic_j (a_0 x S_k) = w_j . (a_0 x S_k)        (k in the block, any j)

which is eq. (6) with the block's axes seen as joints on the ground: Sd_k = 0 x S_k = 0 and
Sdd_k = a_0 x S_k (zero for the slides). The body twist moves the axes, dS_k/dt = v_b x S_k
(v_b = v of the base body), so a_i = a_0 + S qdd_b + ... with no Sd qd term for the block
(sum_k (v_b x S_k) qd_k = v_b x v_b = 0), and by eq. (5) with da_i/dqd_k = S_k x (v_i - v_b),

    dtau_j/dqd_k = w_j . (v_b x S_k) + u_j . S_k                       (k in the block, any j)

(once v_b x S_k where a 1-DoF joint has 2 Sd_k). Pairs of the block's own axes all take these
(each axis turns every other); eq. (7) holds for a block axis j and a joint k beyond it.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from mechgen.generator.algorithms.joints import LinkTransform
from mechgen.generator.model import Chain
from mechgen.generator.scalar import Mat, Recorder, Vec, cross, eye, matmul, matvec, transpose

ZERO = sp.Integer(0)


def mcross(a: list, b: list) -> list:
    """Motion x motion: (w1 x w2, w1 x v2 + v1 x w2)."""
    return cross(a[:3], b[:3]) + _add3(cross(a[:3], b[3:]), cross(a[3:], b[:3]))


def fcross(m: list, f: list) -> list:
    """Motion x* force: (w x n + v x f, w x f)."""
    return _add3(cross(m[:3], f[:3]), cross(m[3:], f[3:])) + cross(m[:3], f[3:])


def free_flyer_block(chain: Chain) -> int:
    """Joints 1..block form one free flyer (module docstring): 6 for the body-twist base,
    whose derivatives these equations take along Pinocchio's tangent (the caller maps them
    to the quaternion's columns where asked: families/serial/derivatives.coordinate_rows);
    0 for any other chain. Raises ValueError for a body-twist base not built as
    model.free_base_joints builds it (three slides, three quasi twist rotations, one chain,
    the five bodies between them massless)."""
    if not (chain.attitude == "quaternion" and chain.base_velocity == "body"):
        return 0
    if (chain.n < 6 or list(chain.parent[:6]) != list(range(6))
            or not all(chain.bodies[j].fictitious for j in range(5))
            or not all(j.quasi and j.twist for j in chain.joints[3:6])):
        raise ValueError(f"{chain.source}: the body-twist base is not the free flyer that "
                         f"model.free_base_joints builds")
    return 6


def dot6(m: list, f: list) -> sp.Expr:
    return sp.Add(*[x * y for x, y in zip(m, f)])


def _add3(a: Vec, b: Vec) -> Vec:
    return [x + y for x, y in zip(a, b)]


def _add(*vs: list) -> list:
    return [sp.Add(*xs) for xs in zip(*vs)]


def _scale(s, v: list) -> list:
    return [s * x for x in v]


@dataclass
class Inertia:
    """Spatial inertia about O_0: mass m, first moment h, inertia J about O_0 (symmetric)."""

    m: sp.Expr
    h: Vec
    J: Mat

    def times(self, v: list) -> list:
        """I (w, v) = (J w + h x v, m v - h x w)."""
        return _add3(matvec(self.J, v[:3]), cross(self.h, v[3:])) + \
            [self.m * x - y for x, y in zip(v[3:], cross(self.h, v[:3]))]

    def plus(self, o: "Inertia") -> "Inertia":
        return Inertia(self.m + o.m, _add3(self.h, o.h),
                       [[a + b for a, b in zip(r, s)] for r, s in zip(self.J, o.J)])

    def named(self, rec: Recorder, name: str) -> "Inertia":
        J = [[ZERO] * 3 for _ in range(3)]
        for i in range(3):
            for j in range(i, 3):
                J[i][j] = J[j][i] = rec.bind(self.J[i][j], f"{name}_J{i}{j}")
        return Inertia(rec.bind(self.m, f"{name}_m"), rec.vec(self.h, f"{name}_h"), J)


def _outer_sym(a: Vec, b: Vec) -> Mat:
    """a b^T + b a^T."""
    return [[a[i] * b[j] + b[i] * a[j] for j in range(3)] for i in range(3)]


def central_inertia(m, d: Vec, I: Mat) -> Mat:
    """Inertia about the centre of mass from the inertia about O_j: I_G = I - m (d.d 1 - d d^T)
    (SymPy arithmetic at generation: exact, or correctly rounded for floats)."""
    dd = sum(x * x for x in d)
    return [[sp.expand(I[i][j] - m * ((dd if i == j else 0) - d[i] * d[j])) for j in range(3)]
            for i in range(3)]


def world_inertia(rec: Recorder, m, d: Vec, I_G: Mat, R: Mat, p: Vec, name: str) -> Inertia:
    """Body inertia in frame 0 about O_0 from its mass m, centre of mass d (frame j) and
    inertia I_G about the centre of mass (frame j), with R: frame j -> frame 0, p = O_j:
    c = p + R d, h = m c, J = R I_G R^T + (h.c) 1 - h c^T (parallel axes)."""
    c = rec.vec(_add3(p, matvec(R, list(d))), f"{name}_c")
    h = [m * x for x in c]
    T = rec.mat(matmul(R, I_G), f"{name}_T")
    hc = sum(x * y for x, y in zip(h, c))
    J = [[sum(T[i][k] * R[j][k] for k in range(3)) + (hc if i == j else ZERO) - h[i] * c[j]
          for j in range(3)] for i in range(3)]
    return Inertia(m, h, J).named(rec, name)


def inertia_rate(rec: Recorder, I: Inertia, v: list, name: str) -> Inertia:
    """Id = v x* I - I v x, eq. (4): hd = m v + w x h, Jd = [w]x J - J [w]x - (h v^T + v h^T)
    + 2 (v.h) 1 (a massless spatial inertia)."""
    w, lin = v[:3], v[3:]
    M = [cross(w, [I.J[r][c] for r in range(3)]) for c in range(3)]   # M[c] = column c of [w]x J
    vh = 2 * sum(x * y for x, y in zip(lin, I.h))
    hv = _outer_sym(I.h, lin)
    J = [[M[j][i] + M[i][j] - hv[i][j] + (vh if i == j else ZERO) for j in range(3)]
         for i in range(3)]
    hd = [I.m * x + y for x, y in zip(lin, cross(w, I.h))]
    return Inertia(ZERO, hd, J).named(rec, name)


@dataclass
class Pose:
    R: Mat        # frame j -> the common frame
    p: Vec        # O_j in the common frame


def poses(rec: Recorder, chain: Chain, links: list[LinkTransform], frame: int) -> list[Pose]:
    """Pose of every frame 0..n in the common frame ``frame`` (its own pose: the identity),
    walking the tree from it: down a joint, R_j = (R_p gamma^T) alpha^T and
    p_j = p_p + R_p r_{p,j}; up a joint, R_p = (R_j alpha) gamma and p_p = p_j - R_p r_{p,j}."""
    out: list = [None] * (chain.n + 1)
    out[frame] = Pose(eye(), [ZERO] * 3)
    done = False
    while not done:
        done = True
        for j in range(1, chain.n + 1):
            lt, par = links[j - 1], chain.parent[j - 1]
            if out[par] is not None and out[j] is None:
                Rp, pp = out[par].R, out[par].p
                G = rec.mat(matmul(Rp, transpose(lt.gamma)), f"G{j}")
                out[j] = Pose(rec.mat(matmul(G, transpose(lt.alpha)), f"R{j}"),
                              rec.vec(_add3(pp, matvec(Rp, lt.r_rel)), f"p{j}"))
                done = False
            elif out[j] is not None and out[par] is None:
                Ra = rec.mat(matmul(out[j].R, lt.alpha), f"Ra{par}")
                R = rec.mat(matmul(Ra, lt.gamma), f"R{par}")
                out[par] = Pose(R, rec.vec([x - y for x, y in zip(out[j].p, matvec(R, lt.r_rel))],
                                           f"p{par}"))
                done = False
    return out


@dataclass
class Motion:
    """Per joint j (index j - 1), in the common frame: S_j, v_j, Sd_j (eq. 2; 0 for a free
    flyer's axes, whose own rate v_b x S_j pair_terms forms apart), the pose of every frame,
    and the base's acceleration (0, -g)."""

    pose: list[Pose]
    S: list[list]
    v: list[list]
    Sd: list[list]
    a_base: list


def joint_motion(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list,
                 frame: int) -> Motion:
    """S_j = (e_j, p_j x e_j) (prismatic (0, e_j)), Sd_j = v_p x S_j (0 for a free flyer's
    axes: on the ground, module docstring), v_j = v_p + S_j qd_j."""
    pose = poses(rec, chain, links, frame)
    a_base = [ZERO] * 3 + rec.vec(matvec(pose[0].R, [-sp.sympify(x) for x in chain.gravity]),
                                  "g_c")
    S, v, Sd = [], [], []
    block = free_flyer_block(chain)
    for j in range(1, chain.n + 1):
        lt, par = links[j - 1], chain.parent[j - 1]
        R, p = pose[j].R, pose[j].p
        e = [row[lt.e.index(1)] for row in R]
        S.append(rec.vec(e + cross(p, e) if lt.kind == "R" else [ZERO] * 3 + list(e), f"S{j}",
                         labels="abcxyz"))
        v_p = [ZERO] * 6 if par == 0 else v[par - 1]
        turn = [ZERO] * 6 if j <= block else v_p     # a free flyer's axes: on the ground
        Sd.append(rec.vec(mcross(turn, S[-1]), f"Sd{j}", labels="abcxyz"))
        v.append(rec.vec(_add(v_p, _scale(qd[j - 1], S[-1])), f"V{j}", labels="abcxyz"))
    return Motion(pose, S, v, Sd, a_base)


def accelerations(rec: Recorder, chain: Chain, m: Motion, qd: list, qdd: list | None,
                  name: str = "Acc") -> list[list]:
    """a_j = a_p + S_j qdd_j + Sd_j qd_j from a_0 = (0, -g) (qdd None: the accelerations at
    qdd = 0)."""
    a: list[list] = []
    for j in range(1, chain.n + 1):
        par = chain.parent[j - 1]
        a_p = m.a_base if par == 0 else a[par - 1]
        terms = [a_p, _scale(qd[j - 1], m.Sd[j - 1])]
        if qdd is not None:
            terms.append(_scale(qdd[j - 1], m.S[j - 1]))
        a.append(rec.vec(_add(*terms), f"{name}{j}", labels="abcxyz"))
    return a


def second_rates(rec: Recorder, chain: Chain, m: Motion, a: list[list]) -> list[list]:
    """Sdd_j = a_p x S_j + v_p x Sd_j, eq. (3) (a free flyer's axes: a_0 x S_j)."""
    out = []
    block = free_flyer_block(chain)
    for j in range(1, chain.n + 1):
        par = chain.parent[j - 1]
        a_p, v_p = ((m.a_base, [ZERO] * 6) if par == 0 or j <= block
                    else (a[par - 1], m.v[par - 1]))
        out.append(rec.vec(_add(mcross(a_p, m.S[j - 1]), mcross(v_p, m.Sd[j - 1])), f"Sdd{j}",
                           labels="abcxyz"))
    return out


def body_inertias(rec: Recorder, chain: Chain, m: Motion) -> list:
    """(I_j, Id_j, h_j = I_j v_j) per body in the common frame (eq. 4); None for a massless
    (fictitious) body."""
    own: list = []
    for j in range(1, chain.n + 1):
        body = chain.bodies[j - 1]
        if body.fictitious:
            own.append(None)
            continue
        P = m.pose[j]
        I = world_inertia(rec, body.m, list(body.d), central_inertia(body.m, body.d, body.I),
                          P.R, P.p, f"Iw{j}")
        h = rec.vec(I.times(m.v[j - 1]), f"hw{j}", labels="abcxyz")
        own.append((I, inertia_rate(rec, I, m.v[j - 1], f"Id{j}"), h))
    return own


def body_forces(own: list, m: Motion, a: list[list]) -> list:
    """f_j = I_j a_j + v_j x* h_j per body (None for a massless body)."""
    return [None if o is None else _add(o[0].times(a[j]), fcross(m.v[j], o[2]))
            for j, o in enumerate(own)]


def subtree_sums(rec: Recorder, chain: Chain, own: list, name: str) -> list:
    """Per joint j, the sum of a body quantity over the subtree of j (an Inertia, named only
    where several terms meet, or a 6-vector, always named); None where the subtree has none."""
    out: list = [None] * chain.n
    for j in range(chain.n, 0, -1):
        terms = ([own[j - 1]] if own[j - 1] is not None else []) + \
            [out[c - 1] for c in chain.children(j) if out[c - 1] is not None]
        if not terms:
            continue
        if isinstance(terms[0], Inertia):
            total = terms[0]
            for t in terms[1:]:
                total = total.plus(t)
            out[j - 1] = total.named(rec, f"{name}{j}") if len(terms) > 1 else total
        else:
            out[j - 1] = rec.vec(_add(*terms), f"{name}{j}", labels="abcxyz")
    return out


def pair_terms(rec: Recorder, chain: Chain, m: Motion, Sdd: list, Ic: list, Idc: list,
               Hc: list, Fc: list, apart: int = 0
               ) -> tuple[list[list[sp.Expr]], list[list[sp.Expr]]]:
    """(dtau/dq, dtau/dqd) by eqs. (6) and (7) from the composites. ``apart`` = m (a base
    whose joints 1..m carry massless bodies but the last, so Ic_k is the whole robot's for
    every k <= m): the columns of joints 1..m without their parts W^T y_k, y_k the rate of
    S_k (w_j . Sdd_k in dq; in dqd w_j . (v_b x S_k) on a free flyer, 2 w_j . Sd_k else), in
    every row (for the rows i before k through P_k's Ic_k Sdd_k and G_k's 2 Ic_k Sd_k, Ic_k
    being Ic_i); the caller adds A^-1 W^T y_k without a solve
    (families/serial/derivatives.base_solver)."""
    n, S, Sd = chain.n, m.S, m.Sd
    dq = [[ZERO] * n for _ in range(n)]
    dqd = [[ZERO] * n for _ in range(n)]
    block = free_flyer_block(chain)
    # a free flyer's axes move with the base body: dS_k/dt = v_b x S_k (module docstring)
    moving = [rec.vec(mcross(m.v[block - 1], S[k]), f"SdB{k + 1}", labels="abcxyz")
              if k >= apart else [ZERO] * 6 for k in range(block)]
    for j in range(1, n + 1):
        if Ic[j - 1] is None:   # nothing moves below joint j
            continue
        w = rec.vec(Ic[j - 1].times(S[j - 1]), f"wS{j}", labels="abcxyz")
        XS = Idc[j - 1].times(S[j - 1])
        SH = fcross(S[j - 1], Hc[j - 1])
        u = rec.vec([x - y for x, y in zip(XS, SH)], f"uS{j}", labels="abcxyz")
        own = j > apart          # the w parts of column j (eq. 7's rows: Ic_j Sdd_j, 2 Ic_j Sd_j)
        P = _add(fcross(S[j - 1], Fc[j - 1]), Ic[j - 1].times(Sdd[j - 1]) if own else [ZERO] * 6,
                 Idc[j - 1].times(Sd[j - 1]), fcross(Sd[j - 1], Hc[j - 1]))
        P = rec.vec(P, f"Pq{j}", labels="abcxyz")
        G = _add(_scale(2, Ic[j - 1].times(Sd[j - 1])) if own else [ZERO] * 6, XS, SH)
        G = rec.vec(G, f"Gqd{j}", labels="abcxyz")
        # eq. (6) for k ⪯ j; within a free flyer's block every axis turns every other
        ks = chain.ancestors(j) if j > block else range(block, 0, -1)
        for k in ks:
            w_part = k > apart
            dq[j - 1][k - 1] = (dot6(Sdd[k - 1], w) if w_part else ZERO) + dot6(Sd[k - 1], u)
            rate = dot6(moving[k - 1], w) if k <= block else 2 * dot6(Sd[k - 1], w)
            dqd[j - 1][k - 1] = (rate if w_part else ZERO) + dot6(S[k - 1], u)
        if j <= block:
            continue
        for i in chain.ancestors(j)[1:]:      # i ≺ j, eq. (7)
            dq[i - 1][j - 1] = dot6(S[i - 1], P)
            dqd[i - 1][j - 1] = dot6(S[i - 1], G)
    return dq, dqd


def rnea_derivatives(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list,
                     qdd: list, frame: int = 0) -> tuple[list[list[sp.Expr]], list[list[sp.Expr]]]:
    """(dtau/dq, dtau/dqd), n x n each, of tau = A(q) qdd + h(q, qd) (no springs), by
    eqs. (2)-(7), every vector in the coordinates of the common frame ``frame`` (0: the base;
    j: body j's frame at the current configuration: the equations hold in any one frame's
    coordinates, and a frame in the middle of the tree makes the rotations sparser).
    Joints: 1-DoF revolute or prismatic, or the body-twist base's free flyer
    (:func:`free_flyer_block`, along Pinocchio's tangent)."""
    n = chain.n
    zero6 = [ZERO] * 6
    pose = poses(rec, chain, links, frame)
    a0 = [ZERO] * 3 + rec.vec(matvec(pose[0].R, [-sp.sympify(x) for x in chain.gravity]), "g_c")
    S, v, Sd, a, Sdd = [], [], [], [], []
    own: list = []   # (I, Id, h, f) per body, None for a massless body
    block = free_flyer_block(chain)
    for j in range(1, n + 1):
        lt, par = links[j - 1], chain.parent[j - 1]
        P = pose[j]
        e = [row[lt.e.index(1)] for row in P.R]
        Sj = e + cross(P.p, e) if lt.kind == "R" else [ZERO] * 3 + list(e)
        S.append(rec.vec(Sj, f"S{j}", labels="abcxyz"))
        v_p, a_p = (zero6, a0) if par == 0 else (v[par - 1], a[par - 1])
        gv, ga = (zero6, a0) if j <= block else (v_p, a_p)   # a free flyer: on the ground
        Sd.append(rec.vec(mcross(gv, S[-1]), f"Sd{j}", labels="abcxyz"))
        v.append(rec.vec(_add(v_p, _scale(qd[j - 1], S[-1])), f"V{j}", labels="abcxyz"))
        a.append(rec.vec(_add(a_p, _scale(qdd[j - 1], S[-1]), _scale(qd[j - 1], Sd[-1])),
                         f"Acc{j}", labels="abcxyz"))
        Sdd.append(rec.vec(_add(mcross(ga, S[-1]), mcross(gv, Sd[-1])), f"Sdd{j}",
                           labels="abcxyz"))
        body = chain.bodies[j - 1]
        if body.fictitious:
            own.append(None)
            continue
        I = world_inertia(rec, body.m, list(body.d), central_inertia(body.m, body.d, body.I),
                          P.R, P.p, f"Iw{j}")
        h = rec.vec(I.times(v[-1]), f"hw{j}", labels="abcxyz")
        f = _add(I.times(a[-1]), fcross(v[-1], h))
        own.append((I, inertia_rate(rec, I, v[-1], f"Id{j}"), h, f))
    Ic: list = [None] * n
    Idc: list = [None] * n
    Hc: list = [None] * n
    Fc: list = [None] * n
    for j in range(n, 0, -1):
        terms = ([own[j - 1]] if own[j - 1] else []) + \
            [(Ic[c - 1], Idc[c - 1], Hc[c - 1], Fc[c - 1]) for c in chain.children(j)
             if Ic[c - 1] is not None]
        if not terms:
            continue
        I, Id, h, f = terms[0]
        for t in terms[1:]:
            I, Id, h, f = I.plus(t[0]), Id.plus(t[1]), _add(h, t[2]), _add(f, t[3])
        if len(terms) > 1:
            I, Id = I.named(rec, f"Ic{j}"), Id.named(rec, f"Idc{j}")
        Ic[j - 1], Idc[j - 1] = I, Id
        Hc[j - 1] = rec.vec(h, f"Hc{j}", labels="abcxyz")
        Fc[j - 1] = rec.vec(f, f"Fc{j}", labels="abcxyz")
    return pair_terms(rec, chain, Motion(pose, S, v, Sd, a0), Sdd, Ic, Idc, Hc, Fc)


# Forward dynamics' derivatives from one pass (derivatives.py, "composite" form): the mass
# matrix and the bias come from the same composites as the derivatives, before qdd is known,
#
#     A_ij = S_i . Ic_j S_j  (i ⪯ j),     h_j = S_j . Fc0_j                                (8)
#
# with Fc0 the composite forces at qdd = 0 (a0_j = a0_p + Sd_j qd_j from (0, -g)); once qdd is
# solved, the accelerations and forces at qdd follow by linearity:
#
#     alpha_j = alpha_p + S_j qdd_j,   a_j = a0_j + alpha_j,
#     Fc_j = Fc0_j + sum over the subtree of j of I_i alpha_i                              (9)


@dataclass
class Composites:
    """The velocity-level pass: motion, body inertias, composites, accelerations and
    composite forces at qdd = 0."""

    m: Motion
    own: list
    Ic: list
    Idc: list
    Hc: list
    a0: list
    Fc0: list


def velocity_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list,
                  frame: int) -> Composites:
    """Everything of eqs. (2)-(5) that does not depend on qdd, and the forces at qdd = 0."""
    m = joint_motion(rec, chain, links, qd, frame)
    own = body_inertias(rec, chain, m)
    a0 = accelerations(rec, chain, m, qd, None, name="Acc0")
    Ic = subtree_sums(rec, chain, [o and o[0] for o in own], "Ic")
    Idc = subtree_sums(rec, chain, [o and o[1] for o in own], "Idc")
    Hc = subtree_sums(rec, chain, [o and o[2] for o in own], "Hc")
    Fc0 = subtree_sums(rec, chain, body_forces(own, m, a0), "Fc0")
    return Composites(m, own, Ic, Idc, Hc, a0, Fc0)


def mass_matrix_from(rec: Recorder, chain: Chain, c: Composites) -> list[list[sp.Expr]]:
    """A_ij = S_i . (Ic_j S_j) for i ⪯ j, eq. (8); 0 across branches."""
    n = chain.n
    A = [[ZERO] * n for _ in range(n)]
    for j in range(1, n + 1):
        if c.Ic[j - 1] is None:
            continue
        w = rec.vec(c.Ic[j - 1].times(c.m.S[j - 1]), f"wS{j}", labels="abcxyz")
        for i in chain.ancestors(j):
            A[i - 1][j - 1] = A[j - 1][i - 1] = rec.bind(dot6(c.m.S[i - 1], w), f"A{i}_{j}")
    return A


def bias_from(rec: Recorder, chain: Chain, c: Composites) -> list[sp.Expr]:
    """h_j(q, qd) = S_j . Fc0_j, eq. (8): Coriolis, centrifugal and gravity forces."""
    return [ZERO if F is None else rec.bind(dot6(S, F), f"h{j}")
            for j, (S, F) in enumerate(zip(c.m.S, c.Fc0), start=1)]


def derivatives_at(rec: Recorder, chain: Chain, c: Composites, qd: list, qdd: list,
                   apart: int = 0) -> tuple[list[list[sp.Expr]], list[list[sp.Expr]], list[list]]:
    """(dtau/dq, dtau/dqd, Sdd) at qdd by eqs. (9), (3), (6), (7) (``apart``: as
    :func:`pair_terms`)."""
    alpha: list[list] = []
    for j in range(1, chain.n + 1):
        par = chain.parent[j - 1]
        a_p = [ZERO] * 6 if par == 0 else alpha[par - 1]
        alpha.append(rec.vec(_add(a_p, _scale(qdd[j - 1], c.m.S[j - 1])), f"alpha{j}",
                             labels="abcxyz"))
    a = [rec.vec(_add(x, y), f"Acc{j}", labels="abcxyz")
         for j, (x, y) in enumerate(zip(c.a0, alpha), start=1)]
    Sdd = second_rates(rec, chain, c.m, a)
    dF = subtree_sums(rec, chain, [o and o[0].times(alpha[j]) for j, o in enumerate(c.own)],
                      "dFc")
    Fc = [F0 if dFj is None else rec.vec(_add(F0, dFj), f"Fc{j}", labels="abcxyz")
          for j, (F0, dFj) in enumerate(zip(c.Fc0, dF), start=1)]
    return (*pair_terms(rec, chain, c.m, Sdd, c.Ic, c.Idc, c.Hc, Fc, apart), Sdd)
