"""The parallel mechanism: a base, the controlled body C and six legs (paper 000, sections 2-3).

Each leg is a serial chain of 1-DoF joints from the base to its last body (a
:class:`generator.model.Chain` with a fixed base, so every serial-chain algorithm applies to
it); the joint between the last body and C is cut and replaced by the closure equations
(docs/algorithms.md section 1, "Loop cutting"):

    m = 3 (spherical cut): the point l_L of the last body coincides with the point l_C of C;
    m = 4 (universal cut): also e1 = gamma_L^T e_y (last body) and e2 = gamma_C^T e_z (C)
                           stay perpendicular.

Leg types, from the base to C (U = rotations y then z, S = rotations y, z, x):

    UPS  u1 u2 stroke          S cut      Gough-Stewart
    SPU  s1 s2 s3 stroke       U cut      Gough-Stewart
    UCU  u1 u2 roll stroke     U cut      Gough-Stewart
    RUS  crank u1 u2           S cut      Hunt
    RSU  crank s1 s2 s3        U cut      Hunt

Frames. P legs (UPS, SPU, UCU): the base joint frame has x along the leg at the home pose and
y horizontal (z0 x leg), unless the spec gives ``frame``; the cylinder's frame has its origin
at the base joint centre and x along the leg; the piston's frame is the cylinder's slid by the
stroke, with the cut joint at ``[length0, 0, 0]`` (``length0``: the leg length at zero stroke,
by default the home length). R legs (RUS, RSU): the crank turns about the z axis of its joint
frame (``crank_axis``, by default horizontal and tangent to the base circle) and points along
x (``crank_dir`` at the home pose); the rod's frame has its origin at the crank tip and x
along the rod, the cut joint at ``[rod, 0, 0]``. For a U cut, C's joint frame is the last
body's frame at the home pose, so every leg coordinate is 0 at home.

The geometry is numeric (the frames are computed from it); masses, inertias, centres and the
joint laws may be named parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.numeric import M3, V3
from mechgen.generator.model import (Body, Chain, Joint, ModelError, Vec3, Mat3, check_name,
                             fictitious_body, identity3, prefixed_parameters)

LEG_TYPES = ("UPS", "SPU", "UCU", "RUS", "RSU")
P_LEGS = ("UPS", "SPU", "UCU")       # a stroke along the leg; the others have a crank

# joints of each leg type: (name, kind, axis); the body after each joint (None: fictitious)
LEG_JOINTS = {
    "UPS": [("u1", "R", 1), ("u2", "R", 2), ("stroke", "P", 0)],
    "SPU": [("s1", "R", 1), ("s2", "R", 2), ("s3", "R", 0), ("stroke", "P", 0)],
    "UCU": [("u1", "R", 1), ("u2", "R", 2), ("roll", "R", 0), ("stroke", "P", 0)],
    "RUS": [("crank", "R", 2), ("u1", "R", 1), ("u2", "R", 2)],
    "RSU": [("crank", "R", 2), ("s1", "R", 1), ("s2", "R", 2), ("s3", "R", 0)],
}
LEG_BODIES = {   # body name after each joint; names in LEG_OPTIONAL may stay massless
    "UPS": ["yoke", "cylinder", "piston"],
    "SPU": ["s_body1", "s_body2", "cylinder", "piston"],
    "UCU": ["yoke", "cylinder", "sleeve", "piston"],
    "RUS": ["crank", "yoke", "rod"],
    "RSU": ["crank", "s_body1", "s_body2", "rod"],
}
LEG_CUT = {"UPS": 3, "SPU": 4, "UCU": 4, "RUS": 3, "RSU": 4}
DEFAULT_DRIVE = {"UPS": "stroke", "SPU": "stroke", "UCU": "stroke", "RUS": "crank", "RSU": "crank"}


@dataclass(frozen=True)
class JointLaw:
    """Active force of a leg joint: Q = preload - sum_i k_i x^i - sum_i c_i qd^i, x = q - q0.

    The drive force (a kernel input) is added on the leg's drive joint.
    """

    k: tuple[sp.Expr, ...] = ()
    c: tuple[sp.Expr, ...] = ()
    q0: sp.Expr = sp.Integer(0)
    preload: sp.Expr = sp.Integer(0)

    def force(self, q: sp.Expr, qd: sp.Expr) -> sp.Expr:
        x = q - self.q0
        return (self.preload - sp.Add(*[ki * x ** (i + 1) for i, ki in enumerate(self.k)])
                - sp.Add(*[ci * qd ** (i + 1) for i, ci in enumerate(self.c)]))

    def potential(self, q: sp.Expr) -> sp.Expr:
        """V with -dV/dq = the conservative part: sum_i k_i x^(i+1)/(i+1) - preload x."""
        x = q - self.q0
        return sp.Add(*[ki * x ** (i + 2) / (i + 2) for i, ki in enumerate(self.k)]) - self.preload * x

    def dissipation(self, qd: sp.Expr) -> sp.Expr:
        """Power taken out by the damper: sum_i c_i qd^(i+1)."""
        return sp.Add(*[ci * qd ** (i + 2) for i, ci in enumerate(self.c)])

    def xreplace(self, m: dict) -> "JointLaw":
        ex = lambda e: sp.sympify(e).xreplace(m)
        return JointLaw(tuple(ex(x) for x in self.k), tuple(ex(x) for x in self.c), ex(self.q0),
                        ex(self.preload))

    def symbols(self) -> set:
        out: set = set()
        for e in (*self.k, *self.c, self.q0, self.preload):
            out |= sp.sympify(e).free_symbols
        return out


@dataclass
class Leg:
    name: str
    type: str
    chain: Chain                  # fixed base = frame 0; joints named <leg>_<joint>
    m: int                        # 3 (spherical cut) or 4 (universal cut)
    l_L: Vec3                     # cut joint centre in the last body's frame
    gamma_L: Mat3                 # last body frame -> leg side frame of the cut joint
    l_C: Vec3                     # cut joint centre in frame C
    gamma_C: Mat3                 # frame C -> C side frame of the cut joint
    laws: list[JointLaw]
    drive: int                    # index of the joint taking the drive input
    limits: dict[int, tuple[float, float]] = field(default_factory=dict)
    branch: int = 1               # RUS/RSU: which of the two crank solutions
    l_ref: float = 1.0            # length scale for the singularity tests
    q_home: tuple[float, ...] = ()   # joint coordinates at the home pose (home_coordinates)

    @property
    def n(self) -> int:
        return self.chain.n

    @property
    def joint_names(self) -> list[str]:
        return [j[0] for j in LEG_JOINTS[self.type]]


@dataclass
class Platform:
    name: str
    m_C: sp.Expr
    I_C: Mat3                     # about O_C (the centre of mass), frame C
    legs: list[Leg]
    gravity: tuple[float, float, float]      # default of the kernel input g
    home: tuple[float, ...]                  # pose x at which the frames were aligned
    source: str = "<python>"
    defaults: dict[str, float] = field(default_factory=dict)   # parameter default values

    @property
    def coordinates(self) -> list[str]:
        return [j.name for leg in self.legs for j in leg.chain.joints]

    @property
    def parameters(self) -> list[sp.Symbol]:
        syms: set = set()
        for e in (self.m_C, *[x for row in self.I_C for x in row]):
            syms |= sp.sympify(e).free_symbols
        for leg in self.legs:
            syms |= set(leg.chain.parameters)
            for law in leg.laws:
                syms |= law.symbols()
        return sorted(syms, key=lambda s: s.name)

    def with_prefixed_parameters(self) -> "Platform":
        """Parameter ``x`` renamed ``p_x`` everywhere (see Chain.with_prefixed_parameters);
        a ``p_x`` that is also a leg coordinate's name is refused (ModelError naming both)."""
        coordinates = {j.name: f"the coordinate of joint {j.name!r} of leg {leg.name!r}"
                       for leg in self.legs for j in leg.chain.joints}
        m = prefixed_parameters(self.parameters, coordinates, self.source)
        if not m:
            return self
        ex = lambda e: sp.sympify(e).xreplace(m)
        # a leg's chain names its parameters p_<name> the same way
        legs = [replace(leg, chain=leg.chain.with_prefixed_parameters(),
                        laws=[law.xreplace(m) for law in leg.laws]) for leg in self.legs]
        return replace(self, m_C=ex(self.m_C),
                       I_C=tuple(tuple(ex(x) for x in row) for row in self.I_C), legs=legs)


# --- numeric geometry: frames from the home pose ----------------------------------------
# Baked constants: computed with generator.numeric (mpmath, rounded once), never numpy, so the
# generated files are the same on every CPU.

def frame_from_x(x: V3, y_hint: V3) -> M3:
    """Rows = unit axes (parent coordinates) of a frame with x along ``x``, y near ``y_hint``.

    As a matrix it is the coordinate transform parent -> frame (a gamma).
    """
    x = num.normalize(x)
    y = num.reject(y_hint, x)
    if num.norm(y) < 1e-9:
        raise ValueError("the y direction is parallel to x")
    y = num.normalize(y)
    return (x, y, num.cross(x, y))


def exact(v: float) -> sp.Expr:
    """A computed number: -1, 0, 1 when within 1e-14 (so they prune), else a Float."""
    for k in (-1, 0, 1):
        if abs(v - k) < 1e-14:
            return sp.Integer(k)
    return sp.Float(float(v), 17)


def mat_expr(M: M3) -> Mat3:
    return tuple(tuple(exact(x) for x in row) for row in M)


def vec_expr(v: V3) -> Vec3:
    return tuple(exact(x) for x in v)


def as_float(e: sp.Expr, where: str) -> float:
    if not sp.sympify(e).is_number:
        raise ModelError(f"{where}: the geometry must be numeric (the frames are computed "
                         f"from it), got the parameter {e}")
    return float(e)


# --- building a leg ---------------------------------------------------------------------

@dataclass
class LegGeometry:
    """What the spec gives for one leg (numbers in frame 0 / frame C)."""

    name: str
    type: str
    base: V3                               # base joint centre, frame 0
    platform: V3                           # cut joint centre, frame C
    bodies: dict[str, Body]
    laws: dict[str, JointLaw]
    drive: str
    limits: dict[str, tuple[float, float]]
    frame: M3 | None = None                # base joint frame (P legs), rows in frame 0
    length0: float | None = None           # P legs
    crank: float | None = None             # R legs: crank length
    crank_axis: V3 | None = None
    crank_dir: V3 | None = None
    rod: float | None = None


Z0: V3 = (0.0, 0.0, 1.0)


def cut_centre_at(home: tuple[float, ...], l_C: V3) -> V3:
    """s = r_C + alpha_C^T l_C: the cut joint's centre, frame 0, at the pose ``home``."""
    alpha = num.alpha_yzx(*home[3:6])
    return num.add(tuple(home[:3]), num.matvec(num.transpose(alpha), l_C))


def _p_leg_frames(g: LegGeometry, s_home: V3, where: str):
    """P legs: (gamma of the base joint, l_L, tau at home, l_ref)."""
    from mechgen.generator.algorithms.leg_ik import u_angles_num
    leg_vec = num.sub(s_home, g.base)
    L_home = num.norm(leg_vec)
    if L_home < 1e-9:
        raise ModelError(f"{where}: the base and platform joints coincide at the home pose")
    if g.frame is not None:
        G0 = g.frame
    else:
        hint = num.cross(Z0, leg_vec)
        G0 = frame_from_x(leg_vec, hint if num.norm(hint) > 1e-9 * L_home else (0.0, 1.0, 0.0))
    length0 = L_home if g.length0 is None else g.length0
    p1, p2 = u_angles_num(num.matvec(G0, leg_vec))       # 0, 0 unless the spec gave the frame
    tau_home = num.matmul(num.elementary(2, p2), num.matmul(num.elementary(1, p1), G0))
    return G0, (length0, 0.0, 0.0), tau_home, L_home


def _r_leg_frames(g: LegGeometry, s_home: V3, where: str):
    """R legs: (gamma of the crank, gamma of the rod joint, crank tip l, l_L, tau, l_ref)."""
    radial = (g.base[0], g.base[1], 0.0)
    axis = g.crank_axis
    if axis is None:
        if num.norm(radial) < 1e-9:
            raise ModelError(f"{where}.crank_axis: the base joint is on the z axis; give "
                             f"crank_axis")
        axis = num.cross(Z0, radial)
    axis = num.normalize(axis)
    cdir = g.crank_dir
    if cdir is None:
        cdir = num.reject(radial, axis)
        if num.norm(cdir) < 1e-9:
            cdir = num.cross(axis, Z0)
    cdir = num.reject(cdir, axis)
    if num.norm(cdir) < 1e-9:
        raise ModelError(f"{where}.crank_dir: parallel to the crank axis")
    cdir = num.normalize(cdir)
    G0 = (cdir, num.cross(axis, cdir), axis)                 # x = crank, z = axis
    a = g.crank
    tip_home = num.add(g.base, num.scale(a, cdir))
    rod_vec = num.sub(s_home, tip_home)
    rod_home = num.norm(rod_vec)
    size = max(a, num.norm(num.sub(s_home, g.base)))
    if a < 1e-9 * size:
        raise ModelError(f"{where}.crank: {a} m is negligible next to the base-to-platform "
                         f"distance {size:.6g} m at the home pose")
    if rod_home < 1e-9 * size:
        raise ModelError(f"{where}: the crank tip meets the platform joint at the home pose "
                         f"(zero rod length); move the joints or change the crank")
    b = rod_home if g.rod is None else g.rod
    if abs(b - rod_home) > 1e-9 * max(1.0, b):
        raise ModelError(f"{where}.rod: {b} differs from the crank-tip to platform distance "
                         f"{rod_home:.6g} at the home pose (omit it to use that distance)")
    rod_c = num.matvec(G0, rod_vec)                          # rod direction, crank coordinates
    G1 = frame_from_x(rod_c, Z0 if abs(rod_c[2]) < 0.999 * rod_home else (0.0, 1.0, 0.0))
    return G0, G1, (a, 0.0, 0.0), (b, 0.0, 0.0), num.matmul(G1, G0), max(a, b)


def build_leg(g: LegGeometry, home: tuple[float, ...], where: str) -> Leg:
    alpha_home = num.alpha_yzx(*home[3:6])
    s_home = cut_centre_at(home, g.platform)
    joints_spec = LEG_JOINTS[g.type]
    names = [j[0] for j in joints_spec]
    n = len(joints_spec)
    ls: list[V3] = [(0.0, 0.0, 0.0)] * n
    gammas: list[M3] = [num.identity()] * n
    ls[0] = g.base
    if g.type in P_LEGS:
        gammas[0], l_L, tau_home, l_ref = _p_leg_frames(g, s_home, where)
    else:
        gammas[0], gammas[1], ls[1], l_L, tau_home, l_ref = _r_leg_frames(g, s_home, where)
    m = LEG_CUT[g.type]
    gamma_C = num.matmul(tau_home, num.transpose(alpha_home)) if m == 4 else num.identity()
    joints, bodies = [], []
    for i, ((jn, kind, ax), bn) in enumerate(zip(joints_spec, LEG_BODIES[g.type])):
        joints.append(Joint(f"{g.name}_{jn}", kind, ax, vec_expr(ls[i]), mat_expr(gammas[i])))
        bodies.append(g.bodies.get(bn, fictitious_body(f"{g.name}_{bn}")))
    chain = Chain(g.name, joints, bodies, (sp.Integer(0),) * 3, "fixed",
                  [(f"{g.name}_{bn}", i + 1) for i, bn in enumerate(LEG_BODIES[g.type])
                   if bn in g.bodies], [], where)
    laws = [g.laws.get(jn, JointLaw()) for jn in names]
    unknown = (set(g.laws) | set(g.limits) | {g.drive}) - set(names)
    if unknown:
        raise ModelError(f"{where}: unknown joint(s) {sorted(unknown)} for a {g.type} leg; "
                         f"its joints: {names}")
    limits = {names.index(k): v for k, v in g.limits.items()}
    leg = Leg(g.name, g.type, chain, m, vec_expr(l_L), identity3(), vec_expr(g.platform),
              mat_expr(gamma_C), laws, names.index(g.drive), limits, 1, l_ref)
    if g.type in ("RUS", "RSU"):
        leg.branch = _crank_branch(leg, home)
    leg.q_home = home_coordinates(leg, home, where)
    _check_home_limits(leg, where)
    return leg


def _crank_branch(leg: Leg, home: tuple[float, ...]) -> int:
    """The crank solution (sigma = +-1 in leg_ik.crank_angle) that gives crank = 0 at home."""
    from mechgen.generator.algorithms.leg_ik import crank_solutions_num
    G0 = num.mat([[float(x) for x in row] for row in leg.chain.joints[0].gamma])
    b0 = num.vec(float(x) for x in leg.chain.joints[0].l)
    s = cut_centre_at(home, num.vec(float(x) for x in leg.l_C))
    d = num.matvec(G0, num.sub(s, b0))
    a = float(leg.chain.joints[1].l[0])
    rod = float(leg.l_L[0])
    if d[0] * d[0] + d[1] * d[1] <= (1e-9 * leg.l_ref) ** 2:
        raise ModelError(f"{leg.chain.source}: leg {leg.name}, joint crank: the platform joint "
                         f"is on the crank axis at the home pose (no crank angle moves it)")
    sols = crank_solutions_num(d, a, rod)
    if sols is None:
        raise ModelError(f"{leg.chain.source}: leg {leg.name}: the home pose is out of reach "
                         f"(crank {a} m and rod {rod} m cannot meet the platform joint)")
    angles = {sigma: abs(num.atan2(sn, cs)) for sigma, (cs, sn) in sols.items()}
    return min(angles, key=angles.get)


def _joint_unit(kind: str) -> str:
    return "m" if kind == "P" else "rad"


def _fail_home(leg: Leg, where: str, joint: int, what: str) -> ModelError:
    jn = leg.joint_names[joint]
    return ModelError(f"{where}: leg {leg.name}, joint {jn}: {what} at the home pose")


def home_coordinates(leg: Leg, home: tuple[float, ...], where: str) -> tuple[float, ...]:
    """The leg's joint coordinates at the home pose, by the closed forms the
    ``inverse_kinematics`` kernel evaluates (leg_ik, paper 000 section 4), numerically.

    0 for auto-aligned legs; not with ``length0``, ``frame`` or ``crank_dir`` given. A home
    pose at which the kernel would report the leg singular or out of reach is a ModelError
    naming the leg and the joint.
    """
    from mechgen.generator.algorithms.leg_ik import (TOL_SINGULAR, crank_solutions_num,
                                                      roll_angle_num, u_angles_num)
    j0 = leg.chain.joints[0]
    G0 = num.mat([[float(x) for x in row] for row in j0.gamma])
    d = num.matvec(G0, num.sub(cut_centre_at(home, num.vec(float(x) for x in leg.l_C)),
                               num.vec(float(x) for x in j0.l)))
    tol = TOL_SINGULAR * leg.l_ref
    q: list[float] = []
    if leg.type in P_LEGS:
        tau, u = G0, 0
    else:
        a, b = float(leg.chain.joints[1].l[0]), float(leg.l_L[0])
        sols = crank_solutions_num(d, a, b)
        if sols is None:
            raise _fail_home(leg, where, 0, f"out of reach (crank {a:.6g} m, rod {b:.6g} m)")
        K = (num.dot(d, d) + a * a - b * b) / (2 * a)
        if d[0] * d[0] + d[1] * d[1] - K * K <= tol * tol:
            raise _fail_home(leg, where, 0, "dead point, the rod perpendicular to the crank "
                             "tip's path (singular)")
        c1, s1 = sols[leg.branch]
        q.append(num.atan2(s1, c1))
        Az = num.elementary(2, q[0])
        G1 = num.mat([[float(x) for x in row] for row in leg.chain.joints[1].gamma])
        d = num.matvec(G1, num.sub(num.matvec(Az, d), (a, 0.0, 0.0)))   # e_c, rod joint frame
        tau, u = num.matmul(G1, num.matmul(Az, G0)), 1
    if num.norm((d[0], 0.0, d[2])) <= tol:
        raise _fail_home(leg, where, u + 1, "universal or spherical joint at 90 deg (singular)")
    p1, p2 = u_angles_num(d)
    q += [p1, p2]
    tau = num.matmul(num.elementary(2, p2), num.matmul(num.elementary(1, p1), tau))
    if leg.type in ("SPU", "UCU", "RSU"):
        alpha = num.alpha_yzx(*home[3:6])
        e2 = num.matvec(num.transpose(alpha), num.vec(float(x) for x in leg.gamma_C[2]))
        e = num.matvec(tau, e2)
        if num.norm((0.0, e[1], e[2])) <= TOL_SINGULAR:
            raise _fail_home(leg, where, len(q), "cut universal joint axis along the leg "
                             "(singular)")
        q.append(roll_angle_num(e))
    if leg.type in P_LEGS:
        q.append(num.norm(d) - float(leg.l_L[0]))
    return tuple(0.0 if abs(v) < 1e-14 else v for v in q)     # rounding noise of a zero


def _check_home_limits(leg: Leg, where: str) -> None:
    """Every limited joint strictly inside its limits at home (the kernels' checks are
    q - lo > 0 and hi - q > 0)."""
    for j, (lo, hi) in sorted(leg.limits.items()):
        v = leg.q_home[j]
        if not lo < v < hi:
            unit = _joint_unit(leg.chain.joints[j].kind)
            raise ModelError(f"{where}.limits.{leg.joint_names[j]}: leg {leg.name}, joint "
                             f"{leg.joint_names[j]} is {v:.6g} {unit} at the home pose, not "
                             f"strictly inside its limits [{lo:g}, {hi:g}] {unit}")


def validate_platform(pf: Platform) -> None:
    where = pf.source
    check_name(pf.name, f"{where}: mechanism.name")
    if len(pf.legs) != 6:
        raise ModelError(f"{where}: legs: a 6-DoF platform needs 6 legs, got {len(pf.legs)}")
    seen: set[str] = set()
    for leg in pf.legs:
        if leg.name in seen:
            raise ModelError(f"{where}: leg name {leg.name!r} used twice")
        seen.add(leg.name)
    names = set(pf.coordinates) | seen
    for s in pf.parameters:
        check_name(s.name, f"{where}: parameter")
        if s.name in names:
            raise ModelError(f"{where}: parameter {s.name!r} clashes with a leg or joint name")
    missing = [s.name for s in pf.parameters if s.name not in pf.defaults]
    if missing:
        raise ModelError(f"{where}: parameters: no default value for {missing}")


# --- numeric description for references and benchmarks ----------------------------------

def numeric_platform(pf: Platform, pvals: dict[str, float] | None = None) -> dict:
    """The dict of docs/parallel_numeric_format.md (parameters at ``pvals`` or defaults).

    For the numpy references and benchmarks only: nothing here reaches generated code."""
    import numpy as np
    vals = {**pf.defaults, **(pvals or {})}
    subs = {s: vals[s.name] for s in pf.parameters}
    f = lambda e: float(sp.sympify(e).subs(subs))
    arr = lambda v: np.array([f(x) for x in v])
    mat = lambda M: np.array([[f(x) for x in row] for row in M])
    legs = []
    for leg in pf.legs:
        legs.append({
            "name": leg.name, "type": leg.type,
            "joints": [{"name": j.name, "kind": j.kind, "axis": j.axis, "l": arr(j.l),
                        "gamma": mat(j.gamma)} for j in leg.chain.joints],
            "bodies": [{"m": f(b.m), "d": arr(b.d), "I": mat(b.I)} for b in leg.chain.bodies],
            "cut": {"m": leg.m, "l_L": arr(leg.l_L), "gamma_L": mat(leg.gamma_L),
                    "l_C": arr(leg.l_C), "gamma_C": mat(leg.gamma_C)},
            "laws": [{"k": [f(x) for x in law.k], "c": [f(x) for x in law.c], "q0": f(law.q0),
                      "preload": f(law.preload)} for law in leg.laws],
            "drive": leg.drive,
        })
    return {"name": pf.name, "gravity": np.array(pf.gravity, float),
            "home": np.array(pf.home, float),
            "platform": {"m": f(pf.m_C), "I": mat(pf.I_C)}, "legs": legs}
