"""The parallel mechanism: a base, the controlled body C and its legs, one per degree of freedom
of C, six for now (paper 000, sections 2-3).

Each leg is a serial chain of 1-DoF joints from the base to its last body (a
:class:`generator.model.Chain` with a fixed base, so every serial-chain algorithm applies to
it); the joint between the last body and C is cut and replaced by the closure equations
(docs/algorithms.md section 1, "Loop cutting"):

    m = 3 (spherical cut): the point l_L of the last body coincides with the point l_C of C;
    m = 4 (universal cut): also e1 = gamma_L^T e_y (last body) and e2 = gamma_C^T e_z (C)
                           stay perpendicular.

Leg types (UPS, SPU, UCU, RUS, RSU, PUS, ...): everything about one kind of leg (its joints,
bodies, cut, default drive, spec fields, home frames and closed-form inverse kinematics) is
in its module of :mod:`generator.legs`, read here from the registry ``LEG_TYPES``. The frames
are computed at the spec's home pose so that the leg coordinates are 0 there unless the spec
says otherwise (``length0``, ``frame``, ``crank_dir``, ``rod`` of a PUS); for a U cut, C's
joint frame is the last body's frame at the home pose.

The geometry is numeric (the frames are computed from it); masses, inertias, centres and the
joint laws may be named parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.numeric import M3, V3
from mechgen.generator.model import (Body, Chain, Joint, ModelError, Vec3, Mat3, check_name,
                             fictitious_body, identity3, prefixed_parameters)
from mechgen.generator.families.parallel.legs import LEG_TYPES, LegType
from mechgen.generator.families.parallel.legs.base import cut_centre_at, frame_from_x  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class JointLaw:
    """Active force of a leg joint: Q = preload - sum_i k_i x^i - sum_i c_i qd^i + Q_stop,
    x = q - q0, and the joint's reflected inertia (a ball-screw drive's rotor J (2 pi/lead)^2,
    a motor's armature), which adds ``inertia`` qdd to the joint's equation (A_k gets it on
    its diagonal, T gets 1/2 inertia qd^2).

    End stops (``stops`` = (lo, hi)): beyond a stop the joint meets a stiff bump stop, a
    Hunt-Crossley force of depth delta = max(0, q - hi) (or max(0, lo - q)) and its rate:
        Q_stop = -max(0, k_stop delta (1 + d_stop qd))        above hi
        Q_stop = +max(0, k_stop delta (1 - d_stop qd))        below lo
    (never pulling), stored energy 1/2 k_stop delta^2. The drive force (a kernel input) is
    added on the leg's drive joint.
    """

    k: tuple[sp.Expr, ...] = ()
    c: tuple[sp.Expr, ...] = ()
    q0: sp.Expr = sp.Integer(0)
    preload: sp.Expr = sp.Integer(0)
    inertia: sp.Expr = sp.Integer(0)
    stops: tuple[float, float] | None = None
    k_stop: sp.Expr = sp.Integer(0)
    d_stop: sp.Expr = sp.Integer(0)

    def _depths(self, q: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
        lo, hi = self.stops
        return sp.Max(0, q - hi), sp.Max(0, lo - q)

    def stop_force(self, q: sp.Expr, qd: sp.Expr) -> sp.Expr:
        if self.stops is None:
            return sp.Integer(0)
        d_hi, d_lo = self._depths(q)
        return (-sp.Max(0, self.k_stop * d_hi * (1 + self.d_stop * qd))
                + sp.Max(0, self.k_stop * d_lo * (1 - self.d_stop * qd)))

    def force(self, q: sp.Expr, qd: sp.Expr) -> sp.Expr:
        x = q - self.q0
        return (self.preload - sp.Add(*[ki * x ** (i + 1) for i, ki in enumerate(self.k)])
                - sp.Add(*[ci * qd ** (i + 1) for i, ci in enumerate(self.c)])
                + self.stop_force(q, qd))

    def potential(self, q: sp.Expr) -> sp.Expr:
        """V with -dV/dq = the conservative part: sum_i k_i x^(i+1)/(i+1) - preload x, plus
        1/2 k_stop delta^2 of the stops."""
        x = q - self.q0
        V = sp.Add(*[ki * x ** (i + 2) / (i + 2) for i, ki in enumerate(self.k)]) - self.preload * x
        if self.stops is not None:
            V += self.k_stop * sp.Add(*[d ** 2 for d in self._depths(q)]) / 2
        return V

    def dissipation(self, q: sp.Expr, qd: sp.Expr) -> sp.Expr:
        """Power taken out by the damper, sum_i c_i qd^(i+1), and by the stops: what their
        force takes beyond the rate of their stored energy, -Q_stop qd - k_stop delta delta'."""
        P = sp.Add(*[ci * qd ** (i + 2) for i, ci in enumerate(self.c)])
        if self.stops is not None:
            d_hi, d_lo = self._depths(q)
            P += -self.stop_force(q, qd) * qd - self.k_stop * (d_hi - d_lo) * qd
        return P

    def xreplace(self, m: dict) -> "JointLaw":
        ex = lambda e: sp.sympify(e).xreplace(m)
        return replace(self, k=tuple(ex(x) for x in self.k), c=tuple(ex(x) for x in self.c),
                       q0=ex(self.q0), preload=ex(self.preload), inertia=ex(self.inertia),
                       k_stop=ex(self.k_stop), d_stop=ex(self.d_stop))

    def symbols(self) -> set:
        out: set = set()
        for e in (*self.k, *self.c, self.q0, self.preload, self.inertia, self.k_stop,
                  self.d_stop):
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
    branch: int = 1               # sigma of a two-branch closed form (a crank, a slide)
    l_ref: float = 1.0            # length scale for the singularity tests
    q_home: tuple[float, ...] = ()   # joint coordinates at the home pose (home_coordinates)

    @property
    def n(self) -> int:
        return self.chain.n

    @property
    def leg_type(self) -> LegType:
        return LEG_TYPES[self.type]

    @property
    def joint_names(self) -> list[str]:
        return self.leg_type.joint_names


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
    # degrees of freedom of C (the size of u and udot), and the number of legs: one drive each
    dof: ClassVar[int] = 6

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
    options: dict[str, Any] = field(default_factory=dict)   # the leg type's own fields


def build_leg(g: LegGeometry, home: tuple[float, ...], where: str) -> Leg:
    """The leg's chain, cut and laws; its frames, branch and home coordinates come from its
    leg type (generator.legs)."""
    lt = LEG_TYPES[g.type]
    alpha_home = num.alpha_yzx(*home[3:6])
    fr = lt.frames(g, cut_centre_at(home, g.platform), where)
    names = lt.joint_names
    gamma_C = (num.matmul(fr.tau_home, num.transpose(alpha_home)) if lt.cut == 4
               else num.identity())
    joints, bodies = [], []
    for i, ((jn, kind, ax), bn) in enumerate(zip(lt.joints, lt.bodies)):
        joints.append(Joint(f"{g.name}_{jn}", kind, ax, vec_expr(fr.ls[i]),
                            mat_expr(fr.gammas[i])))
        bodies.append(g.bodies.get(bn, fictitious_body(f"{g.name}_{bn}")))
    chain = Chain(g.name, joints, bodies, (sp.Integer(0),) * 3, "fixed",
                  [(f"{g.name}_{bn}", i + 1) for i, bn in enumerate(lt.bodies)
                   if bn in g.bodies], [], where)
    laws = [g.laws.get(jn, JointLaw()) for jn in names]
    unknown = (set(g.laws) | set(g.limits) | {g.drive}) - set(names)
    if unknown:
        raise ModelError(f"{where}: unknown joint(s) {sorted(unknown)} for a {g.type} leg; "
                         f"its joints: {names}")
    limits = {names.index(k): v for k, v in g.limits.items()}
    leg = Leg(g.name, g.type, chain, lt.cut, vec_expr(fr.l_L), identity3(), vec_expr(g.platform),
              mat_expr(gamma_C), laws, names.index(g.drive), limits, 1, fr.l_ref)
    leg.branch = lt.branch(leg, home)
    leg.q_home = home_coordinates(leg, home, where)
    _check_home_limits(leg, where)
    return leg


def _joint_unit(kind: str) -> str:
    return "m" if kind == "P" else "rad"


def home_coordinates(leg: Leg, home: tuple[float, ...], where: str) -> tuple[float, ...]:
    """The leg's joint coordinates at the home pose, by the closed forms the
    ``inverse_kinematics`` kernel evaluates (paper 000 section 4), numerically: its leg
    type's (generator.legs).

    0 for auto-aligned legs; not with ``length0``, ``frame`` or ``crank_dir`` given. A home
    pose at which the kernel would report the leg singular or out of reach is a ModelError
    naming the leg and the joint.
    """
    return leg.leg_type.home_coordinates(leg, home, where)


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
    if len(pf.legs) != pf.dof:
        raise ModelError(f"{where}: legs: a {pf.dof}-DoF platform needs {pf.dof} legs, got "
                         f"{len(pf.legs)}")
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
                      "preload": f(law.preload), "inertia": f(law.inertia),
                      "stops": list(law.stops) if law.stops else None,
                      "k_stop": f(law.k_stop), "d_stop": f(law.d_stop)}
                     for law in leg.laws],
            "drive": leg.drive,
        })
    return {"name": pf.name, "gravity": np.array(pf.gravity, float),
            "home": np.array(pf.home, float),
            "platform": {"m": f(pf.m_C), "I": mat(pf.I_C)}, "legs": legs}
