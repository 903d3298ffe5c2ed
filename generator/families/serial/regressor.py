"""The inertial-parameter regressor of a serial chain or tree, and its base parameters.

Inverse dynamics is linear in each body's ten standard inertial parameters (Khalil & Dombre,
"Modeling, identification and control of robots", ch. 9 and 12; Pinocchio's
``computeJointTorqueRegressor``), in Pinocchio's order and frame::

    pi_j = [m, mc_x, mc_y, mc_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]

with ``c`` the centre of mass and ``I`` the inertia about the origin of body j's reported
frame (the URDF link frame; our own specs' body frame), in that frame. So

    Q = Y(q, qd, qdd) pi + Q_sd,        Q_sd = k (q - q0) + c qd

(``Q`` the inverse dynamics kernel's drive forces; the spring-damper laws of the spec are not
inertial parameters and stay a separate output ``Q_sd``; serial specs have no drive inertia).

Regressor (per body j and every joint i supporting it; the other entries are zero). Body j's
inertial force f and moment n about O_j (frame j) are linear in pi_j (rnea.py's equations):

    f = m a_j + epsd_j x c + omega_j x (omega_j x c)
    n = I epsd_j + omega_j x (I omega_j) + c x a_j

Joint i's force is the axis component of the wrench carried to O_i, i.e. ``s_ij . (n, f)``
with s_ij the spatial axis of joint i in frame j: revolute (u, u x r_ij) with u = e_i in
frame j and r_ij = O_i -> O_j; prismatic (0, e_i in frame j). It is carried from body to
child k like a unit joint rate (the velocity pass): u_k = beta_k u, v_k = beta_k (v + u x r_k).
Column (j, p) of Y is then ``Y[i, (j, p)] = u_ij . n_p + v_ij . f_p`` with (f_p, n_p) the
wrench of the unit parameter p.

Base parameters (Gautier & Khalil 1990's numerical method): Y is stacked at sample states; a
column that is zero there is unidentifiable, and a column that is a combination of earlier
columns (Y_d = Y_ind K) is regrouped into them: Y pi = Y_ind beta with beta = pi_ind + K pi_d.
The base regressor is the independent columns Y_b = Y_ind. The sample states are rational
(cos and sin from t: (1 - t^2, 2t) / (1 + t^2)) from a seeded pure-Python RNG, Y is evaluated
there exactly (the baked constants are exact binary rationals), rounded once to 256 bits, and
eliminated in mpmath's 256-bit arithmetic, so every rank decision and K are the same bits on
every machine; each coefficient of K is rounded once to the nearest double. The decisions use thresholds (a column 1e-12 of the
largest entry is zero, a pivot 1e-9 of its column's size is dependent): the baked rotations
are doubles, orthogonal only to ~1e-16, which leaves remainders of that size where the exact
mechanics has a dependency.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import sympy as sp

from mechgen.generator.algorithms.joints import LinkTransform, link_transform
from mechgen.generator.algorithms.rnea import body_twist_velocity
from mechgen.generator.families.serial.kernels import _flat, _start
from mechgen.generator.ir import Assign, Kernel, Port, symbol
from mechgen.generator.model import Chain, ModelError
from mechgen.generator.scalar import (Recorder, Vec, add, counting_dense, cross, dot, matvec,
                                      scale, skew, transpose, zeros)

PARAMETERS = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_yy", "I_xz", "I_yz", "I_zz")
_INERTIA_ENTRY = {"I_xx": (0, 0), "I_xy": (0, 1), "I_yy": (1, 1), "I_xz": (0, 2),
                  "I_yz": (1, 2), "I_zz": (2, 2)}
SEED = 13            # of the sample states of the rank decisions
EXTRA_SAMPLES = 3    # states beyond ceil(columns / n)
MP = mpmath.MPContext()   # the elimination's own context (never the global mpmath.mp)
MP.prec = 256


# ---------------------------------------------------------------------------------------------
# which bodies carry parameters, in which frame

def parameter_bodies(chain: Chain) -> list[tuple[str, int]]:
    """The bodies that carry inertial parameters: the declared ones (not the fictitious bodies
    made by splitting composite joints or a free base), as (name, j)."""
    return list(chain.named_bodies)


def standard_names(chain: Chain) -> list[str]:
    return [f"{p}_{name}" for name, _ in parameter_bodies(chain) for p in PARAMETERS]


def body_parameters(chain: Chain, j: int, values: list) -> tuple:
    """(m, c, I) in body j's frame from the ten parameters in its reported frame F (F = body
    frame -> reported frame): c = F^T c_F, I = F^T I_F F."""
    F = [list(r) for r in chain.bodies[j - 1].frame]
    m, c_F = values[0], list(values[1:4])
    I_F = [[sp.Integer(0)] * 3 for _ in range(3)]
    for name, v in zip(PARAMETERS[4:], values[4:]):
        a, b = _INERTIA_ENTRY[name]
        I_F[a][b] = I_F[b][a] = v
    Ft = transpose(F)
    c = matvec(Ft, c_F)
    I = [[sp.Add(*[Ft[a][k] * I_F[k][l] * F[l][b] for k in range(3) for l in range(3)])
          for b in range(3)] for a in range(3)]
    return m, c, I


def standard_values(chain: Chain) -> list[sp.Expr]:
    """pi of the chain's own bodies (expressions in its parameters), reported frames."""
    out = []
    for _, j in parameter_bodies(chain):
        body = chain.bodies[j - 1]
        F = [list(r) for r in body.frame]
        c = matvec(F, list(body.c))
        I = [[sp.expand(sum(F[a][k] * body.I[k][l] * F[b][l] for k in range(3)
                            for l in range(3))) for b in range(3)] for a in range(3)]
        out += [body.m, *c, *(I[a][b] for a, b in _INERTIA_ENTRY.values())]
    return [sp.sympify(e) for e in out]


def require_baked_kinematics(chain: Chain) -> None:
    """The regrouping coefficients depend on the geometry and gravity: those must be numbers."""
    for j in chain.joints:
        for what, vals in (("l", j.l), ("gamma", [x for r in j.gamma for x in r])):
            if any(sp.sympify(x).free_symbols for x in vals):
                raise ModelError(f"{chain.source}: joint {j.name!r}: {what} is a parameter name; "
                                 f"the regressor needs the geometry as numbers (inertial "
                                 f"parameters and spring-dampers may be names)")
    if any(sp.sympify(g).free_symbols for g in chain.gravity):
        raise ModelError(f"{chain.source}: mechanism.gravity is a parameter name; the "
                         f"regressor needs it as numbers")


# ---------------------------------------------------------------------------------------------
# the recursions

@dataclass
class BodyMotion:
    omega: Vec
    epsd: Vec
    a: Vec
    U: list   # [epsd]x + [omega]x^2: U r = epsd x r + omega x (omega x r) (SYMORO's U_j)


def motion_pass(rec: Recorder, chain: Chain, links: list[LinkTransform], qd: list,
                qdd: list) -> list[BodyMotion]:
    """omega_j, epsd_j, a_j (frame j) of every body, gravity as the base's acceleration -g
    (the forward pass of rnea.py, docs/algorithms.md section 1)."""
    base = BodyMotion(zeros(3), zeros(3), [-g for g in chain.gravity], [zeros(3)] * 3)
    out: list[BodyMotion] = []
    for j in range(1, chain.n + 1):
        lt = links[j - 1]
        p = chain.parent[j - 1]
        par = base if p == 0 else out[p - 1]
        a = matvec(lt.beta, add(par.a, matvec(par.U, lt.r_rel)))
        omega_p = rec.vec(matvec(lt.beta, par.omega), f"omega_p{j}")
        epsd = matvec(lt.beta, par.epsd)
        qd_e = scale(qd[j - 1], lt.e)
        if lt.kind == "R":
            omega = add(omega_p, qd_e)
            spin = zeros(3) if chain.joints[j - 1].quasi else cross(omega_p, qd_e)
            epsd = add(add(epsd, spin), scale(qdd[j - 1], lt.e))
            if chain.joints[j - 1].twist:    # the body-twist base (rnea.py's docstring)
                a = add(a, cross(qd_e, body_twist_velocity(qd)))
        else:
            omega = omega_p
            a = add(add(a, scale(2, cross(omega_p, qd_e))), scale(qdd[j - 1], lt.e))
        omega = rec.vec(omega, f"omega{j}")
        epsd = rec.vec(epsd, f"epsd{j}")
        out.append(BodyMotion(omega, epsd, rec.vec(a, f"a{j}"), _U(rec, omega, epsd, j)))
    return out


def _U(rec: Recorder, w: Vec, e: Vec, j: int) -> list:
    """U = [e]x + [w]x^2 with [w]x^2 = w w^T - |w|^2 1 (Khalil & Dombre's U_j)."""
    sq = [rec.bind(w[a] * w[a], f"ww{j}_{a}") for a in range(3)]
    ex = skew(e)
    return [[rec.bind(-(sq[(a + 1) % 3] + sq[(a + 2) % 3]) if a == b
                      else w[a] * w[b] + ex[a][b], f"U{j}_{a}{b}") for b in range(3)]
            for a in range(3)]


def inertial_wrench(mo: BodyMotion, m, c: Vec, I: list) -> tuple[Vec, Vec]:
    """(f, n about O_j) of a body with mass m, first moment c, inertia I about O_j
    (epsd x c + omega x (omega x c) = U c)."""
    f = add(scale(m, mo.a), matvec(mo.U, c))
    n = add(add(matvec(I, mo.epsd), cross(mo.omega, matvec(I, mo.omega))), cross(c, mo.a))
    return f, n


def unit_wrenches(chain: Chain, j: int, mo: BodyMotion) -> list[tuple[Vec, Vec]]:
    """The wrench of each of body j's ten parameters alone (value 1, the others 0)."""
    out = []
    for p in range(len(PARAMETERS)):
        unit = [sp.Integer(1) if k == p else sp.Integer(0) for k in range(len(PARAMETERS))]
        out.append(inertial_wrench(mo, *body_parameters(chain, j, unit)))
    return out


def joint_axes_in(rec: Recorder, chain: Chain, links: list[LinkTransform], i: int
                  ) -> dict[int, tuple[Vec, Vec]]:
    """s_ij = (u, v) of joint i in the frame of each body j of its subtree (i included)."""
    e = list(links[i - 1].e)
    out = {i: (e, zeros(3)) if links[i - 1].kind == "R" else (zeros(3), e)}
    for k in range(i + 1, chain.n + 1):
        p = chain.parent[k - 1]
        if p not in out:
            continue
        u, v = out[p]
        lt = links[k - 1]
        out[k] = (rec.vec(matvec(lt.beta, u), f"u{i}_{k}"),
                  rec.vec(matvec(lt.beta, add(v, cross(u, lt.r_rel))), f"v{i}_{k}"))
    return out


def spring_dampers(chain: Chain, q: list, qd: list) -> list:
    """Q_sd = k (q - q0) + c qd: what the spring-damper laws add to the drive forces."""
    return [jt.stiffness * (qj - jt.q0) + jt.damping * qdj
            for jt, qj, qdj in zip(chain.joints, q, qd)]


def has_spring_dampers(chain: Chain) -> bool:
    return any(jt.stiffness != 0 or jt.damping != 0 for jt in chain.joints)


def regressor_matrix(rec: Recorder, chain: Chain, q: list, qd: list, qdd: list) -> list[list]:
    """Y (n x 10 nb) as scalar expressions over the recorded names."""
    links = [link_transform(rec, j, jt, q[j - 1]) for j, jt in enumerate(chain.joints, start=1)]
    motion = motion_pass(rec, chain, links, qd, qdd)
    bodies = parameter_bodies(chain)
    Y = [[sp.Integer(0)] * (len(PARAMETERS) * len(bodies)) for _ in range(chain.n)]
    wrenches = {}
    for col0, (name, j) in zip(range(0, len(Y[0]), len(PARAMETERS)), bodies):
        wrenches[j] = [(rec.vec(f, f"f{j}_{p}"), rec.vec(n, f"n{j}_{p}"))
                       for p, (f, n) in zip(PARAMETERS, unit_wrenches(chain, j, motion[j - 1]))]
    column = {j: k * len(PARAMETERS) for k, (_, j) in enumerate(bodies)}
    for i in range(1, chain.n + 1):
        for j, (u, v) in joint_axes_in(rec, chain, links, i).items():
            if j not in column:
                continue
            for p, (f, n) in enumerate(wrenches[j]):
                Y[i - 1][column[j] + p] = rec.bind(dot(u, n) + dot(v, f), f"Y{i}_{j}_{p}")
    return Y


# ---------------------------------------------------------------------------------------------
# base parameters: exact rank decisions at rational sample states

@dataclass(frozen=True)
class BaseSet:
    independent: tuple[int, ...]                 # columns of Y kept (Y_b = Y[:, independent])
    zero: tuple[int, ...]                        # columns identically zero at the samples
    # beta_k = pi[independent[k]] + sum coef * pi[d] over (d, coef) of terms[k] (256 bits)
    terms: tuple[tuple[tuple[int, mpmath.mpf], ...], ...]

    @property
    def b(self) -> int:
        return len(self.independent)

    def coefficients(self) -> list[list[tuple[int, float]]]:
        """Per base parameter, (standard index, coefficient rounded once to a double)."""
        return [[(i, 1.0)] + [(d, float(c)) for d, c in t]
                for i, t in zip(self.independent, self.terms)]


def _state(rng: random.Random, chain: Chain, ports: tuple[Port, ...]) -> dict:
    """A rational sample state: input symbol -> Fraction, and (cos, sin) of each revolute q."""
    vals: dict = {}
    rat = lambda: Fraction(rng.randint(-9, 9), rng.randint(1, 4))
    for port in ports[:3]:
        for s in port.elements:
            vals[s] = rat()
    if chain.attitude == "quaternion":   # w, x, y, z not all zero
        vals[ports[0].elements[3]] = Fraction(rng.randint(1, 5))
    return vals


def _exact(e: sp.Expr, vals: dict) -> Fraction:
    """e at rational values: numbers are exact binary rationals, cos/sin of an input angle
    come from the rational point t of the circle."""
    if e.is_Symbol:
        return vals[e]
    if e.is_Number:
        r = sp.Rational(e)
        return Fraction(int(r.p), int(r.q))
    if e.is_Add:
        return sum((_exact(a, vals) for a in e.args), Fraction(0))
    if e.is_Mul:
        out = Fraction(1)
        for a in e.args:
            out *= _exact(a, vals)
        return out
    if e.is_Pow and e.exp.is_Integer:
        return _exact(e.base, vals) ** int(e.exp)
    if isinstance(e, (sp.cos, sp.sin)) and e.args[0] in vals:
        t = vals[e.args[0]]
        den = 1 + t * t
        return (1 - t * t) / den if isinstance(e, sp.cos) else 2 * t / den
    raise ModelError(f"regressor: cannot evaluate {e} exactly")


def _sample_rows(chain: Chain, count: int) -> list[list[Fraction]]:
    """Y stacked at ``count`` rational states (n rows each)."""
    ins, rec, ch, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    Y = regressor_matrix(rec, ch, q, qd, qdd)
    rng = random.Random(SEED)
    rows = []
    for _ in range(count):
        vals = _state(rng, chain, ins)
        for st in rec.statements:
            if isinstance(st, Assign):
                vals[st.target] = _exact(st.expr, vals)
        rows += [[_exact(sp.sympify(y), vals) for y in row] for row in Y]
    return rows


ZERO_COLUMN = MP.mpf(1e-12)   # column max below this times the matrix max: a zero column
DEPENDENT = MP.mpf(1e-9)      # remaining pivot below this times the column max: dependent
NEGLIGIBLE = MP.mpf(1e-12)    # regrouping coefficients below this are dropped


def _mpf(x: Fraction) -> mpmath.mpf:
    """x rounded once to 256 bits."""
    return MP.mpf(x.numerator) / x.denominator


def _reduced_echelon(rows: list[list[mpmath.mpf]], zero: set[int]
                     ) -> tuple[list[int], list[list[mpmath.mpf]]]:
    """Pivot columns (the first independent ones, left to right) and the reduced rows.

    256-bit arithmetic (mpmath: the same bits on every machine), with thresholds: the baked
    rotations are doubles, orthogonal only to ~1e-16, so a column that is a combination of
    others in the exact mechanics leaves a remainder of that size (DEPENDENT, relative to the
    column), far above the 1e-77 of the arithmetic."""
    rows = [list(r) for r in rows]
    pivots: list[int] = []
    r = 0
    for c in range(len(rows[0]) if rows else 0):
        if c in zero or r == len(rows):
            continue
        size = max(abs(row[c]) for row in rows)
        k = max(range(r, len(rows)), key=lambda i: abs(rows[i][c]))
        if abs(rows[k][c]) <= DEPENDENT * size:
            continue
        rows[r], rows[k] = rows[k], rows[r]
        inv = 1 / rows[r][c]
        rows[r] = [x * inv for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[r])]
        pivots.append(c)
        r += 1
    return pivots, rows[:r]


def _kinematic_key(chain: Chain) -> tuple:
    """What Y depends on (not the inertial values, nor the spring-dampers)."""
    return (tuple((j.kind, j.axis, j.l, j.gamma, j.quasi, j.twist) for j in chain.joints),
            tuple(chain.parent), tuple(chain.gravity), chain.base, chain.attitude,
            tuple((name, j, chain.bodies[j - 1].frame) for name, j in chain.named_bodies))


_BASE_SETS: dict[tuple, BaseSet] = {}


def base_set(chain: Chain) -> BaseSet:
    """The base parameters of the chain (computed once per kinematic description)."""
    require_baked_kinematics(chain)
    key = _kinematic_key(chain)
    if key not in _BASE_SETS:
        columns = len(PARAMETERS) * len(parameter_bodies(chain))
        with counting_dense():      # the sampling is no part of a kernel's dense count
            samples = _sample_rows(chain, -(-columns // chain.n) + EXTRA_SAMPLES)
        rows = [[_mpf(x) for x in row] for row in samples]
        top = max(abs(x) for row in rows for x in row)
        zero = tuple(c for c in range(columns)
                     if max(abs(row[c]) for row in rows) <= ZERO_COLUMN * top)
        pivots, R = _reduced_echelon(rows, set(zero))
        terms = tuple(tuple((d, R[k][d]) for d in range(columns)
                            if d not in pivots and d not in zero and abs(R[k][d]) > NEGLIGIBLE)
                      for k in range(len(pivots)))
        _BASE_SETS[key] = BaseSet(tuple(pivots), zero, terms)
    return _BASE_SETS[key]


def base_names(chain: Chain, bs: BaseSet) -> list[str]:
    """The kept standard parameter's name, with ``R`` (regrouped) when others add to it."""
    std = standard_names(chain)
    return [std[i] + ("R" if t else "") for i, t in zip(bs.independent, bs.terms)]


def base_expressions(chain: Chain, bs: BaseSet) -> list[str]:
    std = standard_names(chain)
    out = []
    for coefs in bs.coefficients():
        text = std[coefs[0][0]]
        for d, c in coefs[1:]:
            text += f" {'-' if c < 0 else '+'} " + (std[d] if abs(c) == 1.0
                                                     else f"{abs(c)!r}*{std[d]}")
        out.append(text)
    return out


# ---------------------------------------------------------------------------------------------
# kernels

def _outputs_with_springs(chain: Chain, q: list, qd: list) -> tuple[Port, ...]:
    if not has_spring_dampers(chain):
        return ()
    return (Port("Q_sd", (chain.n,), tuple(spring_dampers(chain, q, qd)),
                 f"spring-damper part of the drive forces, k (q - q0) + c qd (N m or N), "
                 f"shape ({chain.n},): inverse_dynamics = Y pi + Q_sd"),)


def regressor(chain: Chain) -> Kernel:
    ins, rec, ch, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    Y = regressor_matrix(rec, ch, q, qd, qdd)
    n, cols = chain.n, len(Y[0])
    return Kernel("regressor",
                  "Inertial-parameter regressor Y(q, qd, qdd): drive forces Q = Y pi + Q_sd "
                  "for the standard parameters pi (per body m, m c, I about its origin).",
                  ins, (Port("Y", (n, cols), _flat(Y),
                             f"regressor, shape ({n}, {cols}); rows in the order of q; columns "
                             f"per body (its reported frame) m, mc_x, mc_y, mc_z, I_xx, I_xy, "
                             f"I_yy, I_xz, I_yz, I_zz (kg, kg m, kg m^2); bodies: "
                             f"{', '.join(nm for nm, _ in parameter_bodies(chain))}"),
                        *_outputs_with_springs(chain, q, qd)),
                  tuple(rec.statements))


def base_regressor(chain: Chain) -> Kernel:
    bs = base_set(chain)
    ins, rec, ch, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    Y = regressor_matrix(rec, ch, q, qd, qdd)
    Yb = [[row[c] for c in bs.independent] for row in Y]
    n = chain.n
    return Kernel("base_regressor",
                  "Base regressor Y_b(q, qd, qdd): Q = Y_b beta + Q_sd for the base "
                  "(identifiable) parameters beta (the manifest's regressor.base).",
                  ins, (Port("Y_b", (n, bs.b), _flat(Yb),
                             f"base regressor, shape ({n}, {bs.b}); rows in the order of q; "
                             f"columns: {', '.join(base_names(chain, bs))}"),
                        *_outputs_with_springs(chain, q, qd)),
                  tuple(rec.statements))


def _beta_port(chain: Chain, bs: BaseSet) -> Port:
    return Port("beta", (bs.b,), tuple(symbol(f"beta{k}") for k in range(1, bs.b + 1)),
                f"base inertial parameters, shape ({bs.b},), in this order: "
                f"{', '.join(base_names(chain, bs))}")


def base_inverse_dynamics(chain: Chain) -> Kernel:
    """Newton-Euler with the base parameters as inputs (the form SYMORO counts): the model
    whose kept parameters are beta and whose regrouped ones are 0 has Y pi = Y_b beta."""
    bs = base_set(chain)
    beta = _beta_port(chain, bs)
    pi = [sp.Integer(0)] * (len(PARAMETERS) * len(parameter_bodies(chain)))
    for k, c in enumerate(bs.independent):
        pi[c] = beta.elements[k]
    return _symbolic_inverse_dynamics(chain, "base_inverse_dynamics", beta, pi,
                                      "Drive forces Q = Y_b beta + Q_sd by Newton-Euler with "
                                      "the base parameters beta as inputs.")


def standard_inverse_dynamics(chain: Chain) -> Kernel:
    """Newton-Euler with all standard parameters pi as inputs (not bundled: the op count of
    the fully symbolic model, bench/regressor_bench.py)."""
    names = standard_names(chain)
    pi = Port("pi", (len(names),), tuple(symbol(f"pi{k}") for k in range(1, len(names) + 1)),
              f"standard inertial parameters, shape ({len(names)},): {', '.join(names)}")
    return _symbolic_inverse_dynamics(chain, "standard_inverse_dynamics", pi,
                                      list(pi.elements), "Drive forces Q = Y pi + Q_sd by "
                                      "Newton-Euler with the standard parameters as inputs.")


def _symbolic_inverse_dynamics(chain: Chain, name: str, port: Port, pi: list,
                               doc: str) -> Kernel:
    ins, rec, ch, (q, qd, qdd) = _start(chain, ["q", "qd", "qdd"])
    links = [link_transform(rec, j, jt, q[j - 1]) for j, jt in enumerate(ch.joints, start=1)]
    motion = motion_pass(rec, ch, links, qd, qdd)
    own = [(zeros(3), zeros(3))] * ch.n
    for k, (_, j) in enumerate(parameter_bodies(chain)):
        values = pi[k * len(PARAMETERS):(k + 1) * len(PARAMETERS)]
        own[j - 1] = inertial_wrench(motion[j - 1], *body_parameters(ch, j, values))
    Q = [h + s for h, s in zip(_joint_forces(rec, ch, links, own), spring_dampers(ch, q, qd))]
    return Kernel(name, doc, (*ins[:3], port, *ins[3:]),
                  (Port("Q", (chain.n,), tuple(Q), f"drive torques or forces (N m or N), shape "
                                                   f"({chain.n},), in the order of q"),),
                  tuple(rec.statements))


def _joint_forces(rec: Recorder, chain: Chain, links: list[LinkTransform],
                  own: list[tuple[Vec, Vec]]) -> list:
    """Backward pass: F_j = f_j + sum_c beta_c^T F_c, N_j = n_j + sum_c (beta_c^T N_c +
    r_c x beta_c^T F_c); joint j's force is the axis component of N_j (R) or F_j (P)."""
    F: list = [None] * chain.n
    N: list = [None] * chain.n
    for j in range(chain.n, 0, -1):
        Fj, Nj = own[j - 1]
        for k in chain.children(j):
            bt = transpose(links[k - 1].beta)
            Fc = rec.vec(matvec(bt, F[k - 1]), f"F_c{k}")
            Fj = add(Fj, Fc)
            Nj = add(Nj, add(matvec(bt, N[k - 1]), cross(links[k - 1].r_rel, Fc)))
        F[j - 1] = rec.vec(Fj, f"F{j}")
        N[j - 1] = rec.vec(Nj, f"N{j}")
    return [dot(links[j].e, N[j] if links[j].kind == "R" else F[j]) for j in range(chain.n)]


def base_parameters(chain: Chain) -> Kernel:
    """beta from the standard parameters pi: beta_k = pi_k + sum K_kd pi_d."""
    bs = base_set(chain)
    names = standard_names(chain)
    pi = Port("pi", (len(names),), tuple(symbol(f"pi{k}") for k in range(1, len(names) + 1)),
              f"standard inertial parameters, shape ({len(names)},), in this order: "
              f"{', '.join(names)}")
    number = lambda c: sp.Integer(int(c)) if c in (1.0, -1.0) else sp.Float(c, 17)
    beta = [sp.Add(*[number(c) * pi.elements[d] for d, c in coefs])
            for coefs in bs.coefficients()]
    return Kernel("base_parameters",
                  "Base inertial parameters beta from the standard ones pi (the regrouping).",
                  (pi,), (Port("beta", (bs.b,), tuple(beta),
                               f"base parameters, shape ({bs.b},), in this order: "
                               f"{', '.join(base_names(chain, bs))}"),), ())


KERNELS = (regressor, base_regressor, base_inverse_dynamics, base_parameters)


def regressor_kernels(chain: Chain) -> tuple:
    """The regressor's kernels when the spec asks for them (``regressor = true``)."""
    return KERNELS if chain.regressor else ()


def regressor_manifest(chain: Chain) -> dict:
    """Standard and base parameters: names, expressions, the spec's values."""
    if not chain.regressor:
        return {}
    bs = base_set(chain)
    std = standard_values(chain)
    defaults = {s: sp.Rational(chain.defaults[s.name]) for s in chain.parameters
                if chain.defaults.get(s.name) is not None}
    exact = [v.xreplace({f: sp.Rational(f) for f in v.atoms(sp.Float)}).xreplace(defaults)
             for v in std]
    known = all(v.is_Rational for v in exact)
    pi = [_mpf(Fraction(int(v.p), int(v.q))) for v in exact] if known else None
    beta = ([pi[i] + MP.fsum(c * pi[d] for d, c in t)
             for i, t in zip(bs.independent, bs.terms)] if known else None)
    return {"regressor": {
        "bodies": [name for name, _ in parameter_bodies(chain)],
        "standard": standard_names(chain),
        "base": base_names(chain, bs),
        "base_expressions": base_expressions(chain, bs),
        "base_terms": [[[d, c] for d, c in coefs] for coefs in bs.coefficients()],
        "zero_columns": [standard_names(chain)[c] for c in bs.zero],
        "standard_values": [float(v) for v in pi] if known else None,
        "base_values": [float(v) for v in beta] if known else None,
        "spring_dampers": has_spring_dampers(chain),
    }}
