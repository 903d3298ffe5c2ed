"""The parallel mechanism: a base, the controlled body C and six legs (paper 000, sections 2-3).

Each leg is a serial chain of 1-DoF joints from the base to its last body (a
:class:`generator.model.Chain` with a fixed base, so every serial-chain algorithm applies to
it); the joint between the last body and C is cut and replaced by the closure equations
(ALGORITHMS.md section 1, "Loop cutting"):

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

import numpy as np
import sympy as sp

from generator.ir import symbol
from generator.model import (Body, Chain, Joint, ModelError, Vec3, Mat3, check_name,
                             fictitious_body, identity3)

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
        """Parameter ``x`` renamed ``p_x`` everywhere (see Chain.with_prefixed_parameters)."""
        m = {s: symbol(f"p_{s.name}") for s in self.parameters}
        if not m:
            return self
        ex = lambda e: sp.sympify(e).xreplace(m)
        # a leg's chain names its parameters p_<name> the same way
        legs = [replace(leg, chain=leg.chain.with_prefixed_parameters(),
                        laws=[law.xreplace(m) for law in leg.laws]) for leg in self.legs]
        return replace(self, m_C=ex(self.m_C),
                       I_C=tuple(tuple(ex(x) for x in row) for row in self.I_C), legs=legs)


# --- numeric geometry: frames from the home pose ----------------------------------------

def elementary_np(axis: int, q: float) -> np.ndarray:
    c, s = np.cos(q), np.sin(q)
    if axis == 0:
        return np.array([[1, 0, 0], [0, c, s], [0, -s, c]])
    if axis == 1:
        return np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]])
    return np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]])


def alpha_C_np(psi_y: float, psi_z: float, psi_x: float) -> np.ndarray:
    """Frame 0 -> frame C: A_x(psi_x) A_z(psi_z) A_y(psi_y) (the paper's y-z-x sequence)."""
    return elementary_np(0, psi_x) @ elementary_np(2, psi_z) @ elementary_np(1, psi_y)


def frame_from_x(x: np.ndarray, y_hint: np.ndarray) -> np.ndarray:
    """Rows = unit axes (parent coordinates) of a frame with x along ``x``, y near ``y_hint``.

    As a matrix it is the coordinate transform parent -> frame (a gamma).
    """
    x = x / np.linalg.norm(x)
    y = y_hint - (y_hint @ x) * x
    if np.linalg.norm(y) < 1e-9:
        raise ValueError("the y direction is parallel to x")
    y = y / np.linalg.norm(y)
    return np.array([x, y, np.cross(x, y)])


def exact(v: float) -> sp.Expr:
    """A computed number: -1, 0, 1 when within 1e-14 (so they prune), else a Float."""
    for k in (-1, 0, 1):
        if abs(v - k) < 1e-14:
            return sp.Integer(k)
    return sp.Float(float(v), 17)


def mat_expr(M: np.ndarray) -> Mat3:
    return tuple(tuple(exact(x) for x in row) for row in M)


def vec_expr(v: np.ndarray) -> Vec3:
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
    base: np.ndarray                       # base joint centre, frame 0
    platform: np.ndarray                   # cut joint centre, frame C
    bodies: dict[str, Body]
    laws: dict[str, JointLaw]
    drive: str
    limits: dict[str, tuple[float, float]]
    frame: np.ndarray | None = None        # base joint frame (P legs), rows in frame 0
    length0: float | None = None           # P legs
    crank: float | None = None             # R legs: crank length
    crank_axis: np.ndarray | None = None
    crank_dir: np.ndarray | None = None
    rod: float | None = None


def build_leg(g: LegGeometry, home: np.ndarray, where: str) -> Leg:
    alpha_home = alpha_C_np(*home[3:6])
    s_home = home[:3] + alpha_home.T @ g.platform          # cut centre at home, frame 0
    joints_spec = LEG_JOINTS[g.type]
    names = [j[0] for j in joints_spec]
    n = len(joints_spec)
    ls = [np.zeros(3) for _ in range(n)]
    gammas = [np.eye(3) for _ in range(n)]
    ls[0] = g.base
    z0 = np.array([0.0, 0.0, 1.0])
    if g.type in P_LEGS:
        leg_vec = s_home - g.base
        L_home = float(np.linalg.norm(leg_vec))
        if L_home < 1e-9:
            raise ModelError(f"{where}: the base and platform joints coincide at the home pose")
        if g.frame is not None:
            G0 = g.frame
        else:
            hint = np.cross(z0, leg_vec)
            G0 = frame_from_x(leg_vec, hint if np.linalg.norm(hint) > 1e-9 * L_home
                              else np.array([0.0, 1.0, 0.0]))
        gammas[0] = G0
        length0 = L_home if g.length0 is None else g.length0
        l_L = np.array([length0, 0.0, 0.0])
        from generator.algorithms.leg_ik import u_angles_np
        p1, p2 = u_angles_np(G0 @ leg_vec)          # 0, 0 unless the spec gave the frame
        tau_home = elementary_np(2, p2) @ elementary_np(1, p1) @ G0
        l_ref = L_home
    else:
        axis = g.crank_axis
        if axis is None:
            radial = np.array([g.base[0], g.base[1], 0.0])
            if np.linalg.norm(radial) < 1e-9:
                raise ModelError(f"{where}.crank_axis: the base joint is on the z axis; give "
                                 f"crank_axis")
            axis = np.cross(z0, radial)
        axis = axis / np.linalg.norm(axis)
        cdir = g.crank_dir
        if cdir is None:
            radial = np.array([g.base[0], g.base[1], 0.0])
            cdir = radial - (radial @ axis) * axis
            if np.linalg.norm(cdir) < 1e-9:
                cdir = np.cross(axis, z0)
        cdir = cdir - (cdir @ axis) * axis
        if np.linalg.norm(cdir) < 1e-9:
            raise ModelError(f"{where}.crank_dir: parallel to the crank axis")
        cdir = cdir / np.linalg.norm(cdir)
        G0 = np.array([cdir, np.cross(axis, cdir), axis])   # x = crank, z = axis
        gammas[0] = G0
        a = g.crank
        tip_home = g.base + a * cdir
        rod_vec = s_home - tip_home
        rod_home = float(np.linalg.norm(rod_vec))
        b = rod_home if g.rod is None else g.rod
        if abs(b - rod_home) > 1e-9 * max(1.0, b):
            raise ModelError(f"{where}.rod: {b} differs from the crank-tip to platform distance "
                             f"{rod_home:.6g} at the home pose (omit it to use that distance)")
        ls[1] = np.array([a, 0.0, 0.0])
        rod_c = G0 @ rod_vec                      # rod direction in crank coordinates
        G1 = frame_from_x(rod_c, np.array([0.0, 0.0, 1.0]) if abs(rod_c[2]) < 0.999 * rod_home
                          else np.array([0.0, 1.0, 0.0]))
        gammas[1] = G1
        l_L = np.array([b, 0.0, 0.0])
        tau_home = G1 @ G0
        l_ref = max(a, b)
    m = LEG_CUT[g.type]
    gamma_C = tau_home @ alpha_home.T if m == 4 else np.eye(3)
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
    return leg


def _crank_branch(leg: Leg, home: np.ndarray) -> int:
    """The crank solution (sigma = +-1 in leg_ik.crank_angle) that gives crank = 0 at home."""
    from generator.algorithms.leg_ik import crank_solutions_np
    G0 = np.array([[float(x) for x in row] for row in leg.chain.joints[0].gamma])
    b0 = np.array([float(x) for x in leg.chain.joints[0].l])
    s = home[:3] + alpha_C_np(*home[3:6]).T @ np.array([float(x) for x in leg.l_C])
    d = G0 @ (s - b0)
    a = float(leg.chain.joints[1].l[0])
    rod = float(leg.l_L[0])
    sols = crank_solutions_np(d, a, rod)
    if sols is None:
        raise ModelError(f"{leg.chain.source}: the home pose is out of reach")
    angles = {sigma: abs(np.arctan2(sn, cs)) for sigma, (cs, sn) in sols.items()}
    return min(angles, key=angles.get)


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
    """The dict of docs/parallel_numeric_format.md (parameters at ``pvals`` or defaults)."""
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
