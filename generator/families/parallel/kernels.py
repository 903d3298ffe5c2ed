"""The kernels of a parallel mechanism (paper 000, sections 4-7), each usable alone.

One integration step computes, in order (section 7): leg joint coordinates from the pose of C
(closed form, :mod:`generator.algorithms.leg_ik`); closure matrices and joint rates
(:mod:`generator.algorithms.closure`); acceleration terms h_k; joint active forces; A_k, b_k,
M_C, s_C; A*_C, b*_C and udot_C (:mod:`generator.algorithms.reduction`); qdd_k, the
multipliers and the loads on the base. :class:`PlatformBuild` computes each stage once, on
demand, on one recorder; a kernel is the stages its outputs need (the rest never gets built,
and dead-code removal drops what its outputs do not use).

Inputs: ``x`` pose of C [x_C, y_C, z_C, psi_y, psi_z, psi_x], ``u`` = [v_C (frame 0),
omega_C (frame C)], ``F`` drive force of each leg, ``fE`` external force on C (frame 0),
``mE`` external moment on C (frame C), ``g`` gravity (frame 0), ``udot``, ``q`` leg
coordinates (Newton step), ``p`` named parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Callable

import sympy as sp

from mechgen.generator import numeric as num
from mechgen.generator.algorithms import leg_ik
from mechgen.generator.algorithms.closure import (Closure, acceleration_terms, closure,
                                          velocity_constraints)
from mechgen.generator.algorithms.crba import crba
from mechgen.generator.algorithms.joints import link_transform
from mechgen.generator.algorithms.kinematics import chain_kinematics
from mechgen.generator.algorithms.ldlt import ldlt_solve
from mechgen.generator.algorithms.qr import mgs_solve
from mechgen.generator.algorithms.reduction import base_wrench, reduce_onto_platform, tip_wrench
from mechgen.generator.algorithms.leg_ik import LEG_SINGULAR
from mechgen.generator.algorithms.rnea import backward_pass, forward_pass
from mechgen.generator.algorithms.rnea import momentum as chain_momentum
from mechgen.generator.passes.derivatives import forward_derivatives
from mechgen.generator.pipeline import choice
from mechgen.generator.family import Family
from mechgen.generator.ir import Assign, Check, InvariantError, Kernel, Port, symbol
from mechgen.generator.families.parallel.platform import Leg, Platform
from mechgen.generator.scalar import (Recorder, Vec, count_scalar_formulas, add, cross, dot,
                                      elementary_rotation, fold_constant, is_literal,
                                      matmul, matvec, omega_products,
                                      omega_x_I_omega, omega_x_omega_x, scale, transpose,
                                      zeros)

from mechgen.generator.statuses import (DRIVE_SINGULAR, EULER_SINGULAR, REDUCED_SINGULAR,
                                        UNREACHABLE)
STATUSES = {
    UNREACHABLE: "pose out of reach of a leg (or a joint limit)",
    LEG_SINGULAR: "a leg is at a singular configuration",
    REDUCED_SINGULAR: "reduced mass matrix A*_C not positive definite",
    EULER_SINGULAR: "y-z-x angles singular (psi_z = +-90 deg)",
    DRIVE_SINGULAR: "drive Jacobian singular (parallel singularity)",
}

# --- statuses that say where ----------------------------------------------------------------
# Codes below LEG_CODE are the mechanism's (3, 4, 5 above). A leg's status names the leg and
# the joint: code = 100 (k + 1) + 10 j + reason, leg k and joint j counted from 0 (j = 9: the
# leg's closure as a whole), reason 1 out of reach, 2 singular, 3 below the lower limit, 4
# above the upper limit. Before, reasons 1, 3, 4 were all status 1 (UNREACHABLE) and reason 2
# status 2 (LEG_SINGULAR): StatusInfo.legacy keeps that meaning.
LEG_CODE = 100
OUT_OF_REACH, SINGULAR, BELOW_LIMIT, ABOVE_LIMIT = 1, 2, 3, 4
REASONS = {OUT_OF_REACH: "out_of_reach", SINGULAR: "singular", BELOW_LIMIT: "below_limit",
           ABOVE_LIMIT: "above_limit"}
CLOSURE_SLOT = 9
_GLOBAL_REASONS = {REDUCED_SINGULAR: "reduced_singular", EULER_SINGULAR: "euler_singular",
                   DRIVE_SINGULAR: "drive_singular"}


@dataclass(frozen=True)
class StatusInfo:
    """What a status code means: its message and, for a leg's, the leg, joint and limit."""

    message: str
    reason: str
    legacy: int                     # the code of the same failure before (1 to 5)
    leg: str | None = None
    joint: str | None = None        # stroke, crank, u2, ...; None: the leg (or mechanism)
    limit: float | None = None      # the limit passed (below_limit / above_limit)
    unit: str | None = None         # of the limit: m or rad


def leg_code(k: int, j: int, reason: int) -> int:
    """Status code of leg k (from 0), joint j (from 0; CLOSURE_SLOT: the leg), ``reason``."""
    return LEG_CODE * (k + 1) + 10 * j + reason


def _amount(v: float, kind: str) -> str:
    """A limit as the messages show it: 0.25 m, or -1.2 rad (-68.75 deg)."""
    return f"{v:g} m" if kind == "P" else f"{v:g} rad ({v * 180 / num.radians(180):.4g} deg)"


def _leg_statuses(k: int, leg: Leg) -> dict[int, StatusInfo]:
    """Every status leg k can return, in the order the closed form checks them (section 4)."""
    names, kinds = leg.joint_names, [j.kind for j in leg.chain.joints]
    out: dict[int, StatusInfo] = {}

    def put(j: int, reason: int, message: str, limit: float | None = None) -> None:
        out[leg_code(k, j, reason)] = StatusInfo(
            f"{leg.name}{'' if j == CLOSURE_SLOT else ' ' + names[j]}{message}", REASONS[reason],
            2 if reason == SINGULAR else 1, leg.name, None if j == CLOSURE_SLOT else names[j],
            limit, None if limit is None else ("m" if kinds[j] == "P" else "rad"))

    for j, reason, message in leg.leg_type.ik_checks(leg):      # generator.legs
        put(j, _REASON_CODES[reason], message)
    for j, (lo, hi) in sorted(leg.limits.items()):
        put(j, BELOW_LIMIT, f" below its lower limit {_amount(lo, kinds[j])}", lo)
        put(j, ABOVE_LIMIT, f" above its upper limit {_amount(hi, kinds[j])}", hi)
    put(CLOSURE_SLOT, SINGULAR, ": closure matrix C^(d) singular (leg singularity)")
    return out


_REASON_CODES = {name: code for code, name in REASONS.items()}


def status_table(pf: Platform) -> dict[int, StatusInfo]:
    """Every status code of the mechanism's kernels and its meaning."""
    out = {c: StatusInfo(STATUSES[c], r, c) for c, r in _GLOBAL_REASONS.items()}
    for k, leg in enumerate(pf.legs):
        out.update(_leg_statuses(k, leg))
    return out


def status_manifest(pf: Platform) -> dict[str, dict]:
    """The manifest's ``status_codes``: code -> {message, reason, legacy, leg, joint, limit,
    unit}."""
    return {str(c): asdict(info) for c, info in sorted(status_table(pf).items())}


def leg_manifest(leg: Leg) -> dict:
    """A leg's joint kinds (R, P), limits (None: none) and coordinates at the home pose."""
    return {"joint_kinds": [j.kind for j in leg.chain.joints],
            "limits": [list(leg.limits[j]) if j in leg.limits else None for j in range(leg.n)],
            "q_home": list(leg.q_home)}

PORT_DOCS = {
    "x": "pose of C: x_C, y_C, z_C (m, frame 0), psi_y, psi_z, psi_x (rad, y-z-x sequence)",
    "u": "velocity of C: v_C (m/s, frame 0), omega_C (rad/s, frame C)",
    "F": "drive force or torque of each leg's drive joint (N or N m), one per leg",
    "fE": "external force on C through its centre of mass (N, frame 0)",
    "mE": "external moment on C (N m, frame C)",
    "g": "gravity, or gravity minus the base's acceleration (m/s^2, frame 0)",
    "udot": "acceleration of C: dv_C/dt (m/s^2, frame 0), domega_C/dt (rad/s^2, frame C)",
    "q": "leg joint coordinates (rad, m for a stroke), leg by leg",
    "w0": "angular velocity Omega of the base, frame 0 (rad/s, frame 0)",
    "dw0": "angular acceleration Omega_dot of the base (rad/s^2, frame 0)",
    "V0": "velocity of the base's origin O_0 (m/s, frame 0)",
}


# port names are C arguments: no intermediate may take them
OUTPUT_NAMES = {"q", "qd", "qdd", "H", "h", "Q", "b", "A_star", "b_star", "udot", "xdot",
                "F_on_C", "M_on_C", "base_force", "base_moment", "damping_power", "T", "V", "F",
                "q_next", "residual", "p", "dudot_dbase", "dwrench_dbase", "momentum",
                "angular_momentum", "wrench", "stop_force"}


def _elements(pf: Platform, name: str) -> tuple[sp.Symbol, ...]:
    names = {
        "x": ["x_C", "y_C", "z_C", "psi_y", "psi_z", "psi_x"],
        "u": ["v_x", "v_y", "v_z", "omega_x", "omega_y", "omega_z"],
        "F": [f"F_{leg.name}" for leg in pf.legs],
        "fE": ["fE_x", "fE_y", "fE_z"], "mE": ["mE_x", "mE_y", "mE_z"],
        "g": ["g_x", "g_y", "g_z"],
        "udot": ["vdot_x", "vdot_y", "vdot_z", "omegadot_x", "omegadot_y", "omegadot_z"],
        "q": pf.coordinates,
        "w0": ["Omega_x", "Omega_y", "Omega_z"],
        "dw0": ["Omega_dot_x", "Omega_dot_y", "Omega_dot_z"],
        "V0": ["V0_x", "V0_y", "V0_z"],
    }[name]
    return tuple(symbol(s) for s in names)


def _port_doc(pf: Platform, name: str) -> str:
    """PORT_DOCS[name] with the shape and the order of the elements."""
    return f"{PORT_DOCS[name]}, shape ({len(_elements(pf, name))},): " + ", ".join(
        s.name for s in _elements(pf, name))


def _order_of_q(pf: Platform) -> str:
    return f"shape ({_n(pf)},), in the order of the leg coordinates: {', '.join(pf.coordinates)}"


def _legs(pf: Platform) -> str:
    return ", ".join(leg.name for leg in pf.legs)


def ports(pf: Platform, names: list[str]) -> tuple[Port, ...]:
    out = [Port(nm, (len(_elements(pf, nm)),), _elements(pf, nm), _port_doc(pf, nm))
           for nm in names]
    if pf.parameters:
        out.append(Port("p", (len(pf.parameters),), tuple(pf.parameters),
                        f"named spec parameters, shape ({len(pf.parameters)},), in this order: "
                        + ", ".join(s.name[2:] for s in pf.parameters)))
    return tuple(out)


def _with_values(statements, values: dict) -> list[sp.Expr]:
    """The statements' expressions with the legs' constant symbols at their ``values``, as
    the straight build's recorder would have recorded them (Recorder.bind): a constant
    folded, a literal (number, symbol, negated symbol) inlined into the statements after it,
    an expression named before reusing that name (not counted again). A leg's closed form on
    symbolic legs (leg_loop.symbolic_legs) then counts the dense operations of the same
    formulas on the numeric legs."""
    values = dict(values)
    known: dict[sp.Expr, sp.Symbol] = {}
    out = []
    for st in statements:
        e = fold_constant(st.expr.xreplace(values))
        if not isinstance(st, Assign):          # a check: recorded whatever its value
            out.append(e)
        elif is_literal(e):
            values[st.target] = e
        elif e in known:
            values[st.target] = known[e]
        else:
            known[e] = st.target
            out.append(e)
    return out


def mechanism_wide(fn):
    """A cached property of the build: computed once, in a scope without a leg prefix, so a
    mechanism-wide quantity (A*_C, udot ...) is named the same whichever leg's computation asks
    for it first (a per-leg quantity names itself through ``per_leg``)."""
    def getter(self):
        with self.rec.named(""):
            return fn(self)
    getter.__name__, getter.__doc__ = fn.__name__, fn.__doc__
    return cached_property(getter)


class PlatformBuild:
    """The stages of one step, each computed once on first use (names as in the paper)."""

    # a build on generator.families.parallel.leg_loop.symbolic_legs: the platform with numbers
    # (statuses, messages) and the values of the legs' constant symbols (pivots at home)
    numeric: Platform | None = None
    constants: dict = {}

    def __init__(self, pf: Platform, ins: tuple[Port, ...]) -> None:
        self.pf = pf
        self.inp = {p.name: list(p.elements) for p in ins}
        names = {str(s) for p in ins for s in p.elements} | OUTPUT_NAMES | set(PORT_DOCS)
        names |= {f"A_{leg.name}" for leg in pf.legs}
        self.rec = Recorder(reserved=names | {str(s) for s in self.constants})
        self.rec.sample = self._home_sample(ins) | {s: float(v) for s, v in self.constants.items()}
        self.statuses = status_table(self.numeric or pf)
        self.leg_index = -1                     # the leg per_leg is at

    def flag(self, j: int, reason: int) -> leg_ik.Flag:
        """The status of joint j of the current leg failing for ``reason``."""
        code = leg_code(self.leg_index, j, reason)
        return leg_ik.Flag(code, self.statuses[code].message)

    def leg_flag(self, j: int, reason: str) -> leg_ik.Flag:
        """:meth:`flag` for a leg type's closed form, ``reason`` by name (REASONS)."""
        return self.flag(j, _REASON_CODES[reason])

    def _home_sample(self, ins) -> dict:
        """Inputs at rest at the home pose (legs at 0): the state that orders the pivots."""
        pf, out = self.pf, {}
        defaults = {f"p_{k}": v for k, v in pf.defaults.items()}
        q_home = [x for leg in pf.legs for x in (leg.q_home or (0.0,) * leg.n)]
        for port in ins:
            for i, s in enumerate(port.elements):
                if port.name == "x":
                    out[s] = pf.home[i]
                elif port.name == "q":
                    out[s] = q_home[i]
                elif port.name == "p":
                    out[s] = defaults.get(s.name, 1.0)
                else:
                    out[s] = 0.0
        return out

    def per_leg(self, fn, *per_leg_values) -> list:
        """[fn(leg, *values of that leg) for each leg], names prefixed with the leg's name."""
        out = []
        for k, (leg, *values) in enumerate(zip(self.pf.legs, *per_leg_values)):
            self.leg_index = k
            start = len(self.rec.statements)
            with self.rec.named(f"{leg.name}_"):
                out.append(fn(leg, *values))
            self._name_closure_checks(start)
        self.leg_index = -1
        return out

    def _name_closure_checks(self, start: int) -> None:
        """The checks of the current leg's closure matrix C^(d) (algorithms.closure: pivots,
        status LEG_SINGULAR) recorded since ``start`` get the leg's own code."""
        code = leg_code(self.leg_index, CLOSURE_SLOT, SINGULAR)
        body = self.rec.statements
        for i in range(start, len(body)):
            if isinstance(body[i], Check) and body[i].status == LEG_SINGULAR:
                body[i] = Check(body[i].expr, code, body[i].message)

    # --- pose of C -----------------------------------------------------------------------
    @mechanism_wide
    def psi_cs(self) -> list[tuple[sp.Expr, sp.Expr]]:
        x = self.inp["x"]
        return [(self.rec.bind(sp.cos(x[i]), f"c_{nm}"), self.rec.bind(sp.sin(x[i]), f"s_{nm}"))
                for i, nm in zip((3, 4, 5), ("psi_y", "psi_z", "psi_x"))]

    @mechanism_wide
    def alpha_C(self):
        """Frame 0 -> frame C: A_x(psi_x) A_z(psi_z) A_y(psi_y)."""
        (cy, sy), (cz, sz), (cx, sx) = self.psi_cs
        A = matmul(elementary_rotation(0, cx, sx),
                   matmul(elementary_rotation(2, cz, sz), elementary_rotation(1, cy, sy)))
        return self.rec.mat(A, "alpha_C")

    @mechanism_wide
    def r_C(self):
        return self.inp["x"][:3]

    @mechanism_wide
    def omega_C(self):
        return self.inp["u"][3:]

    @mechanism_wide
    def oo_C(self):
        return omega_products(self.rec, self.omega_C, "oo_C")

    # --- leg coordinates -----------------------------------------------------------------
    @mechanism_wide
    def legs_q(self) -> list[tuple[list, list]]:
        """(q, cs) of each leg: closed form from the pose, or the input ``q`` (Newton)."""
        out = []
        if "q" in self.inp:
            qs = iter(self.inp["q"])
            for leg in self.pf.legs:
                out.append(([next(qs) for _ in range(leg.n)], [None] * leg.n))
            return out
        return self.per_leg(lambda leg: self._closed_form(leg))

    def _platform_joint(self, leg: Leg) -> Vec:
        """s0 = r_C + alpha_C^T l_C: the cut joint's centre on C, frame 0."""
        return self.rec.vec(add(self.r_C, matvec(transpose(self.alpha_C), list(leg.l_C))), "s0")

    def _closed_form(self, leg: Leg) -> tuple[list, list]:
        """The leg type's closed form (generator.legs; paper 000 section 4) from d, the cut
        point seen from the first joint, then the joint limits."""
        rec = self.rec
        s0 = self._platform_joint(leg)
        j0 = leg.chain.joints[0]
        d = rec.vec(matvec([list(r) for r in j0.gamma], [a - b for a, b in zip(s0, j0.l)]), "d")
        start = len(rec.statements)
        q, cs = leg.leg_type.closed_form(self, leg, d)
        # the dense reference evaluates the same closed-form formulas (with the legs' numbers)
        count_scalar_formulas(_with_values(rec.statements[start:], self.constants))
        cs = [(r.c, r.s) if r is not None else None for r in cs]
        for i, (lo, hi) in sorted(leg.limits.items()):        # in the order of the codes
            below, above = self.flag(i, BELOW_LIMIT), self.flag(i, ABOVE_LIMIT)
            rec.require_positive(q[i] - lo, below.code, below.message)
            rec.require_positive(hi - q[i], above.code, above.message)
        return q, cs

    @mechanism_wide
    def links(self):
        return self.per_leg(lambda leg, q_cs: [
            link_transform(self.rec, j, jt, q_cs[0][j - 1], q_cs[1][j - 1])
            for j, jt in enumerate(leg.chain.joints, start=1)], self.legs_q)

    # --- closure ---------------------------------------------------------------------------
    @mechanism_wide
    def closures(self) -> list[Closure]:
        return self.per_leg(lambda leg, links: closure(self.rec, leg, links, self.alpha_C),
                             self.links)

    @mechanism_wide
    def H(self):
        return self.per_leg(lambda leg, cl: velocity_constraints(self.rec, cl), self.closures)

    @mechanism_wide
    def qd(self):
        u = self.inp["u"]
        return self.per_leg(lambda leg, H: [self.rec.bind(dot(row, u), f"qd{j + 1}")
                                             for j, row in enumerate(H)], self.H)

    @mechanism_wide
    def motion_v(self):
        """Velocity-product motion of every leg body (qdd = 0, no gravity), body frames."""
        return self.per_leg(lambda leg, links, qd: forward_pass(
            self.rec, leg.chain, links, qd, None, zeros(3)), self.links, self.qd)

    @mechanism_wide
    def h(self):
        return self.per_leg(lambda leg, cl, mo: acceleration_terms(
            self.rec, leg, cl, mo, self.omega_C, omega_x_omega_x(self.oo_C, list(leg.l_C))),
            self.closures, self.motion_v)

    # --- forces and leg dynamics -------------------------------------------------------------
    @mechanism_wide
    def Q_active(self):
        """Spring, damper and drive force of every leg joint."""
        def forces(leg: Leg, F_k, q_cs, qd) -> list:
            q = q_cs[0]
            return [self.rec.bind(law.force(q[j], qd[j]) + (F_k if j == leg.drive else 0),
                                  f"Qa{j + 1}") for j, law in enumerate(leg.laws)]
        return self.per_leg(forces, self.inp["F"], self.legs_q, self.qd)

    @mechanism_wide
    def A_legs(self):
        """A_k of each leg (CRBA), plus each joint's reflected inertia on its diagonal."""
        def mass_matrix(leg: Leg, links) -> list:
            A = [list(row) for row in crba(self.rec, leg.chain, links)]
            for j, law in enumerate(leg.laws):
                if law.inertia != 0:
                    A[j][j] = self.rec.bind(A[j][j] + law.inertia, f"A{j + 1}{j + 1}_r")
            return A
        return self.per_leg(mass_matrix, self.links)

    @mechanism_wide
    def b_legs(self):
        """b_k = Q_active - h_k(q, qd, g): A_k qdd_k = b_k + (reaction of C)."""
        a0 = [-x for x in self.inp["g"]]

        def bias(leg: Leg, links, qd, Qa) -> list:
            mo = forward_pass(self.rec, leg.chain, links, qd, None, a0, *self.base_turn)
            hb = backward_pass(self.rec, leg.chain, links, mo).Q
            return [self.rec.bind(a - b, f"b{j + 1}") for j, (a, b) in enumerate(zip(Qa, hb))]
        return self.per_leg(bias, self.links, self.qd, self.Q_active)

    # --- platform and reduction ----------------------------------------------------------
    @mechanism_wide
    def M_C(self):
        m, I = self.pf.m_C, [list(r) for r in self.pf.I_C]
        n = self.pf.dof                          # [v_C (3), omega_C (3)]
        M = [[sp.Integer(0)] * n for _ in range(n)]
        for i in range(3):
            M[i][i] = m
            for j in range(3):
                M[3 + i][3 + j] = I[i][j]
        return M

    @mechanism_wide
    def base_turn(self) -> tuple:
        """(Omega, Omega_dot) of a moving base (inputs w0, dw0, frame 0), or (None, None)."""
        return self.inp.get("w0"), self.inp.get("dw0")

    @mechanism_wide
    def s_C(self):
        """[f_E + m_C g ; m_E - omega_C x (I_C omega_C)] on a fixed base.

        On a moving base (frame 0 turning at Omega, Omega_dot; g = gravity minus the
        acceleration of O_0), u stays relative to frame 0 and C's absolute accelerations are
            a_C   = a_O + Omega_dot x r_C + Omega x (Omega x r_C) + 2 Omega x v_C + vdot_C
            eps_C = Omega_dot_C + omegadot_C + Omega_C x omega_C        (frame C),
        with Omega_C = alpha_C Omega, so Newton's and Euler's equations give
            s_f = f_E + m_C (g - Omega_dot x r_C - Omega x (Omega x r_C) - 2 Omega x v_C)
            s_m = m_E - I_C (Omega_dot_C + Omega_C x omega_C) - omega_a x (I_C omega_a),
        omega_a = Omega_C + omega_C the absolute angular velocity of C (frame C).
        """
        m, I = self.pf.m_C, [list(r) for r in self.pf.I_C]
        W, dW = self.base_turn
        f = add(self.inp["fE"], scale(m, self.inp["g"]))
        if W is None:
            n = [a - b for a, b in zip(self.inp["mE"], omega_x_I_omega(self.oo_C, I))]
            return self.rec.vec(f, "s_C_f") + self.rec.vec(n, "s_C_m")
        r, v = self.r_C, self.inp["u"][:3]
        oo0 = omega_products(self.rec, W, "oo_base")
        transport = add(add(cross(dW, r), omega_x_omega_x(oo0, r)), scale(2, cross(W, v)))
        f = add(f, scale(-m, transport))
        W_C = self.rec.vec(matvec(self.alpha_C, W), "Omega_C")
        dW_C = self.rec.vec(matvec(self.alpha_C, dW), "Omega_dot_C")
        w_a = self.rec.vec(add(W_C, self.omega_C), "omega_abs_C")
        eps_t = add(dW_C, cross(W_C, self.omega_C))
        n = [a - b - c for a, b, c in zip(self.inp["mE"], matvec(I, eps_t),
                                           omega_x_I_omega(omega_products(self.rec, w_a,
                                                                          "oo_abs_C"), I))]
        return self.rec.vec(f, "s_C_f") + self.rec.vec(n, "s_C_m")

    @mechanism_wide
    def reduced(self):
        return reduce_onto_platform(self.rec, self.M_C, self.s_C, self.H, self.h,
                                    self.A_legs, self.b_legs, [leg.name for leg in self.pf.legs])

    @mechanism_wide
    def udot(self):
        A_star, b_star = self.reduced
        return ldlt_solve(self.rec, A_star, b_star, None, REDUCED_SINGULAR, 1e-13,
                          "the reduced mass matrix A*_C", "udot")

    @mechanism_wide
    def qdd(self):
        return self.per_leg(lambda leg, H, h: [
            self.rec.bind(dot(row, self.udot) + hj, f"qdd{j + 1}")
            for j, (row, hj) in enumerate(zip(H, h))], self.H, self.h)

    @mechanism_wide
    def tips(self):
        """(f_tip, mu): the force (frame n) and moment along n_R that C applies on each leg."""
        return self.per_leg(lambda leg, cl, A, b, qdd: tip_wrench(self.rec, cl, A, b, qdd),
                             self.closures, self.A_legs, self.b_legs, self.qdd)

    @mechanism_wide
    def on_C(self):
        """Force and moment each leg applies on C, frame 0: -tau_n^T f_tip, -mu tau_n^T n_R."""
        def loads(leg: Leg, cl: Closure, tip) -> tuple:
            f_tip, mu = tip
            tT = transpose(cl.tau_n)
            F = self.rec.vec([-x for x in matvec(tT, f_tip)], "F_on_C")
            M = (self.rec.vec([-x for x in matvec(tT, scale(mu, cl.n_R))], "M_on_C")
                 if leg.m == 4 else zeros(3))
            return F, M
        out = self.per_leg(loads, self.closures, self.tips)
        return [F for F, _ in out], [M for _, M in out]

    @mechanism_wide
    def base_loads(self):
        """Force and moment about O_0 (frame 0) the mechanism applies to the base."""
        a0 = [-x for x in self.inp["g"]]

        def wrench(leg: Leg, links, cl, qd, qdd, tip) -> tuple:
            mo = forward_pass(self.rec, leg.chain, links, qd, qdd, a0, *self.base_turn)
            return base_wrench(self.rec, leg, links, mo, cl, *tip)
        out = self.per_leg(wrench, self.links, self.closures, self.qd, self.qdd, self.tips)
        f_tot, m_tot = zeros(3), zeros(3)
        for f, m in out:
            f_tot, m_tot = add(f_tot, f), add(m_tot, m)
        return self.rec.vec(f_tot, "base_force"), self.rec.vec(m_tot, "base_moment")

    @mechanism_wide
    def psi_dot(self):
        """Angle rates from omega_C (inverse of omega = K(psi) psi_dot, y-z-x sequence)."""
        (cy, sy), (cz, sz), (cx, sx) = self.psi_cs
        wx, wy, wz = self.omega_C
        self.rec.require_positive(cz * cz - 1e-12, EULER_SINGULAR, "cos psi_z = 0")
        psi_y = self.rec.bind((cx * wy - sx * wz) / cz, "psi_y_dot")
        psi_z = self.rec.bind(sx * wy + cx * wz, "psi_z_dot")
        psi_x = self.rec.bind(wx - sz * psi_y, "psi_x_dot")
        return [psi_y, psi_z, psi_x]

    @mechanism_wide
    def stop_forces(self) -> list:
        """The end-stop force on each leg's drive joint (0 without stops)."""
        return [self.rec.bind(leg.laws[leg.drive].stop_force(q[leg.drive], qd[leg.drive]),
                              f"{leg.name}_stop_force")
                for leg, (q, _), qd in zip(self.pf.legs, self.legs_q, self.qd)]

    @mechanism_wide
    def damping_power(self):
        out = sp.Integer(0)
        for leg, (q, _), qd in zip(self.pf.legs, self.legs_q, self.qd):
            for law, qj, qdj in zip(leg.laws, q, qd):
                out += law.dissipation(qj, qdj)
        return self.rec.bind(out, "damping_power")


def _flat(rows) -> tuple:
    return tuple(x for row in rows for x in (_flat(row) if isinstance(row, list) else [row]))


def _kernel(name: str, doc: str, b: PlatformBuild, ins, outs, statuses: tuple) -> Kernel:
    """The kernel of the statements recorded on ``b``, with the message of every status its
    checks return. ``statuses``: the mechanism-level codes it may return; UNREACHABLE or
    LEG_SINGULAR there allow every leg's codes."""
    codes = sorted({st.status for st in b.rec.statements if isinstance(st, Check)})
    legs_ok = UNREACHABLE in statuses or LEG_SINGULAR in statuses
    stray = [c for c in codes if c not in b.statuses
             or (c >= LEG_CODE and not legs_ok) or (c < LEG_CODE and c not in statuses)]
    if stray:
        raise InvariantError(f"{name}: checks return undeclared status codes {stray}")
    return Kernel(name, doc, ins, tuple(outs), tuple(b.rec.statements),
                  {c: b.statuses[c].message for c in codes})


def _n(pf: Platform) -> int:
    return sum(leg.n for leg in pf.legs)


def inverse_kinematics(pf: Platform) -> Kernel:
    ins = ports(pf, ["x"])
    b = PlatformBuild(pf, ins)
    q = [x for qk, _ in b.legs_q for x in qk]
    return _kernel("inverse_kinematics", "Leg joint coordinates q from the pose of C, in closed "
                   "form (square roots, no iteration).", b, ins,
                   [Port("q", (_n(pf),), tuple(q), "leg joint coordinates (rad, m for a "
                         f"stroke), {_order_of_q(pf)}")], (UNREACHABLE, LEG_SINGULAR))


def newton_step(pf: Platform) -> Kernel:
    """One Newton step on the closure residual (eq. 4.6): q <- q - C^(d)^-1 f."""
    ins = ports(pf, ["x", "q"])
    b = PlatformBuild(pf, ins)
    rec = b.rec

    def newton(leg, cl: Closure, q_cs) -> tuple[list, list]:
        s0 = add(matvec(cl.tau_n, b.r_C), matvec(cl.R_Cn, list(leg.l_C)))
        f = [rec.bind(a - c, f"f{i + 1}") for i, (a, c) in enumerate(zip(cl.rho0, s0))]
        if leg.m == 4:
            f.append(rec.bind(dot(cl.e1, cl.e2), "f4"))
        dq = cl.lu.solve(rec, f, "dq")
        return f, [rec.bind(qj - dj, f"q_next{j + 1}") for j, (qj, dj) in enumerate(zip(q_cs[0], dq))]
    out = b.per_leg(newton, b.closures, b.legs_q)
    res = [x for f, _ in out for x in f]
    q_next = [x for _, qn in out for x in qn]
    return _kernel("newton_step", "One Newton step of the leg closure: residual f (cut point of "
                   "the leg minus that of C in the last body's frame, and e1.e2 for a universal "
                   "cut) and q_next = q - C^(d)^-1 f.", b, ins,
                   [Port("q_next", (_n(pf),), tuple(q_next), "q after one Newton step (rad, m "
                         f"for a stroke), {_order_of_q(pf)}"),
                    Port("residual", (len(res),), tuple(res), "closure residual f before the "
                         f"step, leg by leg: the cut point of the leg minus that of C (m, last "
                         f"body's frame), then e1.e2 for a universal cut; shape ({len(res)},), "
                         f"entries per leg: "
                         + ", ".join(f"{leg.name} {leg.m}" for leg in pf.legs))],
                   (LEG_SINGULAR,))


def velocity_constraints_kernel(pf: Platform) -> Kernel:
    ins = ports(pf, ["x"])
    b = PlatformBuild(pf, ins)
    return _kernel("velocity_constraints", "H_k = C^(d)_k^-1 C^(i)_k of every leg, stacked: "
                   "qd = H u.", b, ins, [Port("H", (_n(pf), pf.dof),
                                             _flat([r for H in b.H for r in H]),
                                             f"H_k of the legs stacked, shape ({_n(pf)}, "
                                             f"{pf.dof}): row "
                                             f"i maps u to the rate of coordinate i; rows in the "
                                             f"order of the leg coordinates: "
                                             f"{', '.join(pf.coordinates)}")],
                   (UNREACHABLE, LEG_SINGULAR))


def _q_port(pf: Platform, b: "PlatformBuild") -> Port:
    return Port("q", (_n(pf),), _flat([q for q, _ in b.legs_q]),
                f"leg joint coordinates (rad, m for a stroke), {_order_of_q(pf)}")


def _qd_port(pf: Platform, b: "PlatformBuild") -> Port:
    return Port("qd", (_n(pf),), _flat(b.qd), f"leg joint rates (rad/s, m/s for a stroke), "
                f"shape ({_n(pf)},), in the order of q")


def _xdot_port(b: "PlatformBuild", ins) -> Port:
    xdot = list(ins[1].elements[:3]) + b.psi_dot + list(b.udot)
    return Port("xdot", (len(xdot),), tuple(xdot), "derivative of the state "
                f"[x, u], shape ({len(xdot)},): v_C (m/s, frame 0), psi_y, psi_z, psi_x rates "
                "(rad/s), dv_C/dt (m/s^2, frame 0), domega_C/dt (rad/s^2, frame C)")


def _damping_port(b: "PlatformBuild") -> Port:
    return Port("damping_power", (1,), (b.damping_power,), "power taken out by the dampers "
                "and end stops (W), shape (1,)")


def leg_rates(pf: Platform) -> Kernel:
    ins = ports(pf, ["x", "u"])
    b = PlatformBuild(pf, ins)
    return _kernel("leg_rates", "Leg joint coordinates q and rates qd = H u.", b, ins,
                   [_q_port(pf, b), _qd_port(pf, b)], (UNREACHABLE, LEG_SINGULAR))


def acceleration_terms_kernel(pf: Platform) -> Kernel:
    ins = ports(pf, ["x", "u"])
    b = PlatformBuild(pf, ins)
    return _kernel("acceleration_terms", "h_k of every leg: qdd = H udot + h.", b, ins,
                   [Port("h", (_n(pf),), _flat(b.h), "acceleration terms (rad/s^2, m/s^2 for "
                         f"a stroke), {_order_of_q(pf)}")], (UNREACHABLE, LEG_SINGULAR))


def leg_forces(pf: Platform) -> Kernel:
    ins = ports(pf, ["x", "u", "F"])
    b = PlatformBuild(pf, ins)
    return _kernel("leg_forces", "Active force of every leg joint: spring, damper and drive.",
                   b, ins, [Port("Q", (_n(pf),), _flat(b.Q_active),
                                 f"active force of each leg joint (N m, N for a stroke), "
                                 f"{_order_of_q(pf)}")], (UNREACHABLE, LEG_SINGULAR))


def leg_dynamics(pf: Platform) -> Kernel:
    ins = ports(pf, ["x", "u", "F", "g"])
    b = PlatformBuild(pf, ins)
    outs = [Port(f"A_{leg.name}", (leg.n, leg.n), _flat(A),
                 f"mass matrix of leg {leg.name}, symmetric, shape ({leg.n}, {leg.n}); rows and "
                 f"columns: {', '.join(j.name for j in leg.chain.joints)}")
            for leg, A in zip(pf.legs, b.A_legs)]
    outs.append(Port("b", (_n(pf),), _flat(b.b_legs), "b_k = Q_active - h_k of the legs stacked "
                     f"(N m, N for a stroke), {_order_of_q(pf)}"))
    return _kernel("leg_dynamics", "Mass matrix A_k of each leg (composite bodies) and b_k = "
                   "Q_active - h_k (Newton-Euler), stacked.", b, ins, outs,
                   (UNREACHABLE, LEG_SINGULAR))


def _full_inputs(pf: Platform):
    return ports(pf, ["x", "u", "F", "fE", "mE", "g"])


def reduced_dynamics(pf: Platform) -> Kernel:
    ins = _full_inputs(pf)
    b = PlatformBuild(pf, ins)
    A_star, b_star = b.reduced
    n = pf.dof
    return _kernel("reduced_dynamics", "A*_C = M_C + sum H^T A H, b*_C = s_C + sum H^T (b - A h) "
                   "and udot_C solving A*_C udot_C = b*_C (unrolled L D L^T).", b, ins,
                   [Port("A_star", (n, n), _flat(A_star), "reduced mass matrix A*_C, shape "
                         f"({n}, {n}); rows and columns in the order of u: v_C (frame 0), "
                         "omega_C (frame C)"),
                    Port("b_star", (n,), tuple(b_star), f"reduced forces b*_C, shape ({n},): "
                         "force (N, frame 0), then moment (N m, frame C)"),
                    Port("udot", (n,), tuple(b.udot), f"{PORT_DOCS['udot']}, shape ({n},)")],
                   (UNREACHABLE, LEG_SINGULAR, REDUCED_SINGULAR))


def _step_outputs(pf: Platform, b: PlatformBuild, ins) -> list[Port]:
    F_on, M_on = b.on_C
    f_base, m_base = b.base_loads
    legs = len(pf.legs)
    return [_xdot_port(b, ins), _q_port(pf, b), _qd_port(pf, b),
            Port("qdd", (_n(pf),), _flat(b.qdd), "leg joint accelerations "
                 f"(rad/s^2, m/s^2 for a stroke), shape ({_n(pf)},), in the "
                 f"order of q"),
            Port("F_on_C", (legs, 3), _flat(F_on), "force of each leg on C "
                 f"(N, frame 0), shape ({legs}, 3); rows: {_legs(pf)}"),
            Port("M_on_C", (legs, 3), _flat(M_on), "moment of each leg on C "
                 f"(N m, frame 0; zero for a spherical cut), shape ({legs}, 3); "
                 f"rows: {_legs(pf)}"),
            Port("base_force", (3,), tuple(f_base), "force of the mechanism on "
                 "the base (N, frame 0), shape (3,)"),
            Port("base_moment", (3,), tuple(m_base), "moment of the mechanism "
                 "on the base about O_0 (N m, frame 0), shape (3,)"),
            _damping_port(b)]


_STEP_STATUSES = (UNREACHABLE, LEG_SINGULAR, REDUCED_SINGULAR, EULER_SINGULAR)


def _frame_c_build():
    """FrameCBuild (generator/families/parallel/frame_c.py: the reduction in C's frame)."""
    from mechgen.generator.families.parallel.frame_c import FrameCBuild
    return FrameCBuild


def _frame_0_build():
    """Frame0Build (generator/families/parallel/frame_0.py: the reduction in frame 0 with the
    offsets rotated once)."""
    from mechgen.generator.families.parallel.frame_0 import Frame0Build
    return Frame0Build


def _step(pf: Platform, build: type = PlatformBuild) -> Kernel:
    ins = _full_inputs(pf)
    b = build(pf, ins)
    return _kernel("step", "One integration step (paper 000 section 7): xdot = [v_C, psi_dot, "
                   "udot_C], leg coordinates, rates and accelerations, the loads of each leg on "
                   "C, the force and moment on the base (about O_0, frame 0), damper power.",
                   b, ins, _step_outputs(pf, b, ins), _STEP_STATUSES)


def _step_accel(pf: Platform, build: type = PlatformBuild) -> Kernel:
    """The state derivative and the leg accelerations only: what a simulation needs every step
    (paper 000 section 7, eq. for udot_C and qdd_k = H_k udot_C + h_k), as MuJoCo's mj_forward
    and Pinocchio's constraintDynamics compute it. The leg coordinates (atan2 of the closed
    form), the leg loads on C, the base loads and the damper power stay in ``step``; what only
    they need is never built. Same statuses as ``step``, checked in the same order."""
    ins = _full_inputs(pf)
    b = build(pf, ins)
    qdd = Port("qdd", (_n(pf),), _flat(b.qdd), "leg joint accelerations (rad/s^2, m/s^2 for a "
               f"stroke), {_order_of_q(pf)}")          # legs first: step's order of checks
    return _kernel("step_accel", "The lean step: xdot = [v_C, psi_dot, udot_C] and the leg "
                   "joint accelerations qdd, nothing else (step gives the loads).", b, ins,
                   [_xdot_port(b, ins), qdd], _STEP_STATUSES)


def _reduction_forms(kernel: Callable[..., Kernel], then: Callable[[Kernel], Kernel] | None = None
                     ) -> tuple[Callable[[Platform], Kernel], ...]:
    """``kernel`` (then ``then``, if given) once per reduction: the classic one of section 1.6
    (H_k formed, u in frames 0 and C), in C's frame (section 1.6.1, frame_c.py), in frame 0
    (section 1.6.2, frame_0.py). :func:`choice` keeps the one of the last two with the fewest
    operations: the classic reduction stays a reference build, not a candidate, as it cost
    380-1,200 operations more than the frame-C one on every bundled platform and every step
    kernel (docs/algorithms.md; tests/test_platform_frame_c.py checks it still does)."""
    from mechgen.generator.families.parallel.leg_loop import with_leg_loops

    def classic(pf: Platform) -> Kernel:
        return with_leg_loops(kernel, pf, PlatformBuild, then)

    def frame_c(pf: Platform) -> Kernel:
        return with_leg_loops(kernel, pf, _frame_c_build(), then)

    def frame_0(pf: Platform) -> Kernel:
        return with_leg_loops(kernel, pf, _frame_0_build(), then)

    for form in (classic, frame_c, frame_0):
        form.__name__ = form.__qualname__ = f"{kernel.__name__.lstrip('_')}_{form.__name__}"
    return classic, frame_c, frame_0


step_classic, step_frame_c, step_frame_0 = _reduction_forms(_step)
step_accel_classic, step_accel_frame_c, step_accel_frame_0 = _reduction_forms(_step_accel)


@choice(step_frame_c, step_frame_0)
def step(pf: Platform) -> Kernel:
    """One integration step; the reduction with the fewest operations (sections 1.6-1.6.2)."""


@choice(step_accel_frame_c, step_accel_frame_0)
def step_accel(pf: Platform) -> Kernel:
    """The lean step; the reduction with the fewest operations (sections 1.6-1.6.2)."""


def _moving_inputs(pf: Platform):
    return ports(pf, ["x", "u", "F", "fE", "mE", "g", "w0", "dw0"])


_MOVING_DOC = ("on a base that moves (frame 0 turning at Omega, Omega_dot; g = gravity minus "
               "the acceleration of O_0, frame 0); x, u, udot and the leg coordinates stay "
               "relative to frame 0; the inertial forces of the base's motion act on the legs "
               "and C exactly")


def _base_step(pf: Platform, build: type = PlatformBuild) -> Kernel:
    ins = _moving_inputs(pf)
    b = build(pf, ins)
    return _kernel("base_step", "The step " + _MOVING_DOC + ".", b, ins,
                   _step_outputs(pf, b, ins), _STEP_STATUSES)


def _coupled_step(pf: Platform, build: type = PlatformBuild) -> Kernel:
    """base_step and the exact coefficients of its base accelerations, to solve the mechanism
    together with the vehicle that carries it (the outputs are affine in g and Omega_dot):

        udot = udot(g, Omega_dot) ,   d udot / d[g, Omega_dot]           (6 x 6)
        [f_base; m_base] ,            d [f_base; m_base] / d[g, Omega_dot] (6 x 6)

    by forward differentiation of the body (generator.passes.derivatives)."""
    ins = _moving_inputs(pf)
    b = build(pf, ins)
    f_base, m_base = b.base_loads
    outs = [_xdot_port(b, ins), _q_port(pf, b), _qd_port(pf, b),
            Port("udot", (pf.dof,), tuple(b.udot), f"{PORT_DOCS['udot']}, shape ({pf.dof},)"),
            Port("wrench", (6,), tuple(f_base) + tuple(m_base), "force (N) and moment about "
                 "O_0 (N m) of the mechanism on the base, frame 0, shape (6,)"),
            _damping_port(b),
            Port("stop_force", (len(pf.legs),), tuple(b.stop_forces), "end-stop force on "
                 f"each leg's drive joint (N or N m), shape ({len(pf.legs)},), one per leg: "
                 f"{_legs(pf)}")]
    return _kernel("coupled_step", _coupled_step.__doc__.splitlines()[0], b, ins, outs,
                   _STEP_STATUSES)


def _base_derivatives(k: Kernel) -> Kernel:
    """``k`` (coupled_step's values) with d udot / d[g, Omega_dot] and d wrench / d[g,
    Omega_dot] appended, by forward differentiation of its body. Applied after the build, so
    that with_leg_loops differentiates only the form it keeps."""
    inputs = {port.name: port.elements for port in k.inputs}
    base_acc = list(inputs["g"]) + list(inputs["dw0"])
    dof = next(port for port in k.outputs if port.name == "udot").size
    cols = "g_x, g_y, g_z, Omega_dot_x, Omega_dot_y, Omega_dot_z"
    return forward_derivatives(k, ["udot", "wrench"], base_acc, [
        ("dudot_dbase", f"d udot / d[g, Omega_dot], shape ({dof}, 6); columns: {cols}"),
        ("dwrench_dbase", f"d wrench / d[g, Omega_dot], shape (6, 6); columns: {cols}")])


base_step_classic, base_step_frame_c, base_step_frame_0 = _reduction_forms(_base_step)
coupled_step_classic, coupled_step_frame_c, coupled_step_frame_0 = _reduction_forms(
    _coupled_step, then=_base_derivatives)


@choice(base_step_frame_c, base_step_frame_0)
def base_step(pf: Platform) -> Kernel:
    """The step on a moving base; the reduction with the fewest operations."""


@choice(coupled_step_frame_c, coupled_step_frame_0)
def coupled_step(pf: Platform) -> Kernel:
    """base_step and d[udot, wrench]/d[g, Omega_dot]; the reduction with the fewest
    operations."""


def momentum_kernel(pf: Platform) -> Kernel:
    """Momentum, angular momentum about O_0 and kinetic energy of C and the legs, absolute,
    when the base moves with the velocity V0 of O_0 and turns at Omega (frame 0); the kinetic
    energy includes the joints' reflected inertias."""
    ins = ports(pf, ["x", "u", "w0", "V0"])
    b = PlatformBuild(pf, ins)
    rec, W, V0 = b.rec, b.inp["w0"], b.inp["V0"]
    m, I = pf.m_C, [list(r) for r in pf.I_C]
    # C: V_abs = V0 + Omega x r_C + v_C (frame 0), omega_a = alpha_C Omega + omega_C (frame C)
    V_C = rec.vec(add(add(V0, cross(W, b.r_C)), b.inp["u"][:3]), "V_abs_C")
    w_a = rec.vec(add(matvec(b.alpha_C, W), b.omega_C), "omega_abs_C")
    Iw = matvec(I, w_a)
    P = scale(m, V_C)
    H = add(cross(b.r_C, P), matvec(transpose(b.alpha_C), Iw))
    T = m * dot(V_C, V_C) / 2 + dot(w_a, Iw) / 2
    for leg, links, qd in zip(pf.legs, b.links, b.qd):
        with rec.named(f"{leg.name}_"):
            P_k, H_k, T_k = chain_momentum(rec, leg.chain, links, qd, W, V0)
        # a joint's reflected inertia: 1/2 inertia qd^2 (energy only: it carries no momentum)
        T_k += sp.Add(*[law.inertia * qdj ** 2 / 2 for law, qdj in zip(leg.laws, qd)])
        P, H, T = add(P, P_k), add(H, H_k), T + T_k
    return _kernel("momentum", momentum_kernel.__doc__.splitlines()[0], b, ins,
                   [Port("momentum", (3,), tuple(P), "linear momentum (kg m/s, frame 0), "
                         "shape (3,)"),
                    Port("angular_momentum", (3,), tuple(H), "angular momentum about O_0 "
                         "(kg m^2/s, frame 0), shape (3,)"),
                    Port("T", (1,), (T,), "absolute kinetic energy of C and the legs "
                         "(J), shape (1,)")],
                   (UNREACHABLE, LEG_SINGULAR))


def energy(pf: Platform) -> Kernel:
    """T = 1/2 m v.v + 1/2 omega.I omega + sum_k 1/2 qd^T A_k qd;
    V = -g.(m_C r_C + sum m_j r_com_j) + spring potentials."""
    ins = ports(pf, ["x", "u", "g"])
    b = PlatformBuild(pf, ins)
    rec, g = b.rec, b.inp["g"]
    v, w = b.inp["u"][:3], b.omega_C
    I = [list(r) for r in pf.I_C]
    T = pf.m_C * dot(v, v) / 2 + dot(w, matvec(I, w)) / 2
    V = -pf.m_C * dot(g, b.r_C)

    def leg_energy(leg, q_cs, qd, A) -> tuple:
        q, cs = q_cs
        T_k = dot(qd, [dot(row, qd) for row in A]) / 2
        kin = chain_kinematics(rec, leg.chain, q, jacobians=False, cs=cs)
        V_k = sp.Add(*[law.potential(qj) for law, qj in zip(leg.laws, q)])
        for j, body in enumerate(leg.chain.bodies, start=1):
            if not body.fictitious:
                com = add(scale(body.m, kin[j].r), matvec(transpose(kin[j].tau), list(body.c)))
                V_k -= dot(g, com)
        return T_k, V_k
    for T_k, V_k in b.per_leg(leg_energy, b.legs_q, b.qd, b.A_legs):
        T, V = T + T_k, V + V_k
    return _kernel("energy", "Kinetic energy T and potential energy V (gravity and springs).",
                   b, ins, [Port("T", (1,), (T,), "kinetic energy of C and the legs (J), "
                                 "shape (1,)"),
                            Port("V", (1,), (V,), "potential energy of gravity (zero at the "
                                 "origin of frame 0) and of the springs (J), shape (1,)")],
                   (UNREACHABLE, LEG_SINGULAR))


def drive_forces(pf: Platform) -> Kernel:
    """Inverse dynamics: the drive forces F giving C the acceleration udot.

    A*_C udot = b*_C(F) = b*_C(0) + G F, G column k = row ``drive`` of H_k; G F = A*_C udot -
    b*_C(0) is solved by an unrolled modified Gram-Schmidt QR of G (algorithms/qr.py: no
    squared condition number, no pivot order fixed at generation), whose r_kk vanish at a
    parallel singularity (e.g. Fichter's: a symmetric 6-6 platform turned 90 deg about its
    axis).
    """
    ins = ports(pf, ["x", "u", "udot", "fE", "mE", "g"])
    nF = len(pf.legs)                       # one drive per leg; square G needs nF = pf.dof
    zero_F = Port("F", (nF,), tuple(sp.Integer(0) for _ in range(nF)))
    b = PlatformBuild(pf, ins)
    b.inp["F"] = list(zero_F.elements)
    rec = b.rec
    A_star, b_star = b.reduced
    ud = b.inp["udot"]
    rhs = [rec.bind(dot(A_star[i], ud) - b_star[i], f"G_rhs{i + 1}") for i in range(pf.dof)]
    G = [[H[leg.drive][i] for leg, H in zip(pf.legs, b.H)] for i in range(pf.dof)]
    F = mgs_solve(rec, G, rhs, DRIVE_SINGULAR, 1e-12, "the drive Jacobian G", "F")
    return _kernel("drive_forces", drive_forces.__doc__.splitlines()[0], b, ins,
                   [Port("F", (nF,), tuple(F), "drive force or torque of each leg's drive "
                         f"joint (N or N m), shape ({nF},), one per leg: {_legs(pf)}")],
                   (UNREACHABLE, LEG_SINGULAR, DRIVE_SINGULAR))


BUILDERS = (inverse_kinematics, newton_step, velocity_constraints_kernel, leg_rates,
            acceleration_terms_kernel, leg_forces, leg_dynamics, reduced_dynamics, step,
            step_accel, energy, drive_forces, base_step, coupled_step, momentum_kernel)


def manifest(pf: Platform) -> dict:
    """What the runtime reads of a parallel mechanism."""
    return {
        "n": sum(leg.n for leg in pf.legs),
        "coordinates": pf.coordinates,
        "legs": [{"name": leg.name, "type": leg.type, "n": leg.n, "m": leg.m,
                  "joints": [j.name for j in leg.chain.joints], "drive": leg.drive,
                  "l_ref": leg.l_ref, **leg_manifest(leg)} for leg in pf.legs],
        "status_codes": status_manifest(pf),
        "parameters": [s.name for s in pf.parameters],
        "parameter_defaults": {s.name: pf.defaults[s.name] for s in pf.parameters},
        "gravity": list(pf.gravity),
        "gravity_input": True,          # the kernels take g (gravity minus base acceleration)
        "home": list(pf.home),
        "bodies": [],
        "points": [],
    }


def summary(pf: Platform) -> str:
    return f"{pf.name} (parallel, legs {' '.join(leg.type for leg in pf.legs)})"


# The step kernels' two reductions share their legs' loops, closures and kinematics: built one
# after the other in one work item, the second costs about a third of the first (SymPy's
# cache); in two workers each pays the whole (hexapod_rsu's coupled_step: 3.7 + 1.3 s against
# 5.1 + 4.1 s; generation faster in 10 of 11 alternating pairs over four platforms).
PARALLEL = Family("parallel", Platform, BUILDERS, manifest, summary, forms_apart=False)
