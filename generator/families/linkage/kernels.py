"""The kernels of a closed-loop linkage (papers 001 and 004; docs/linkage.md).

Coordinates q (n): the spanning tree's joint coordinates. The loops close by the constraint
rows phi(q) = 0 (m structural rows of rank r, G = d phi / dq); the coordinates split into
f = n - r independent ones (I) and r dependent ones (D), G_D of full column rank r. With the
tree's mass matrix M (composite-body algorithm), its bias h (recursive Newton-Euler: Coriolis,
centrifugal, gravity) and the generalised forces Q of the joint spring-dampers, the
point-to-point springs and the drives tau:

    M qdd + h = Q + G^T lambda                 (Lagrange's equations of the first kind, 004 eq. 9)
    G qdd = gamma                              (acceleration constraint, 004 eq. 8)
    qd = H qd_I,  H = [1; -G_D^+ G_I]          (transmission matrix, Pavlov's q', 001 eq. 4)
    qdd = H qdd_I + qdd_0,  qdd_0 = [0; G_D^+ gamma]
    (H^T M H) qdd_I = H^T (Q - h - M qdd_0)    (reduced equations, Lagrange II in q_I, 001)
    G_D^T lambda = (M qdd + h - Q)_D           (the multipliers)

G_D^+ is the inverse of G_D when the rows are independent (m = r: an unrolled sparse LU, pivot
order fixed at generation) and the least-squares solution over every row otherwise (m > r,
redundant constraints: normal equations G_D^T G_D by L D L^T; exact, the system being
consistent). Keeping all rows makes the solution independent of any row choice along the
motion (paper 004 drops m - r rows, which is valid only locally); the multipliers are then
the minimum-norm set. Every pivot is checked (status LOOP_SINGULAR), never a silent NaN.
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.algorithms.crba import crba
from mechgen.generator.algorithms.joints import link_transform
from mechgen.generator.algorithms.kinematics import (chain_kinematics,
                                                     kinetic_and_gravity_energy)
from mechgen.generator.algorithms.ldlt import ldlt_solve
from mechgen.generator.algorithms.loops import (Row, closure_rows, frame_motion,
                                                is_structural_zero)
from mechgen.generator.algorithms.rnea import rnea
from mechgen.generator.algorithms.sparse_lu import SparseLU
from mechgen.generator.families.linkage.analysis import coordinate_symbols, effective
from mechgen.generator.families.linkage.model import Frame, Linkage, Marker
from mechgen.generator.family import Family
from mechgen.generator.ir import Kernel, Port, symbol
from mechgen.generator.scalar import Recorder, _count, add, dot, scale, sub
from mechgen.generator.statuses import LOOP_REDUCED_SINGULAR, LOOP_SINGULAR

ZERO3 = (sp.Integer(0),) * 3
LU_TOL = 1e-10
SINGULAR_MESSAGE = ("a pivot of the dependent coordinates' constraint block vanishes: a "
                    "singular configuration (the constraint rank changes) or a pose out of reach")
STATUSES = {LOOP_SINGULAR: SINGULAR_MESSAGE,
            LOOP_REDUCED_SINGULAR: "the reduced mass matrix H^T M H is not positive definite"}


def _names(xs) -> str:
    return ", ".join(xs)


# --- dense cost of the linear algebra (the benchmark's "dense" column) -----------------------
# The same equations as dense matrix operations: every element multiplied and added, zeros
# and ones included, no pivot structure exploited (the matrix helpers of scalar.py count the
# kinematics; these count the solves and products written here as scalar sums).

def dense_product(rows: int, inner: int, cols: int = 1) -> None:
    """(rows x inner) times (inner x cols)."""
    _count(adds=rows * cols * (inner - 1), muls=rows * cols * inner)


def dense_lu(r: int) -> None:
    """LU of a dense r x r matrix: a reciprocal per pivot, the factors, the updates."""
    for k in range(r):
        rest = r - k - 1
        _count(divs=1, muls=rest + rest * rest, adds=rest * rest)


def dense_lu_solve(r: int) -> None:
    """Forward and back substitution with a dense LU (either orientation)."""
    _count(adds=r * (r - 1), muls=r * (r - 1) + r)


class Build:
    """One kernel's inputs and recorder, and the parts computed on demand."""

    def __init__(self, model: Linkage, inputs: list[str]) -> None:
        self.model = model
        n, cl = model.n, model.closure
        f = len(cl.independent)
        coords = model.coordinates
        ind = [coords[j] for j in cl.independent]
        docs = {
            "q": (n, "q", f"tree joint coordinates (rad or m, measured as in docs/linkage.md), "
                          f"shape ({n},): {_names(coords)}"),
            "qd": (n, "qd", f"joint rates, shape ({n},), in the order of q"),
            "tau": (n, "tau", f"drive torques or forces on the coordinates (N m or N), shape "
                              f"({n},), in the order of q"),
            "qd_ind": (f, "qd_ind", f"rates of the independent coordinates, shape ({f},): "
                                    f"{_names(ind)}"),
            "qdd_ind": (f, "qdd_ind", f"accelerations of the independent coordinates, shape "
                                      f"({f},): {_names(ind)}"),
            "qdd": (n, "qdd", f"joint accelerations, shape ({n},), in the order of q"),
        }
        ports = []
        for nm in inputs:
            size, prefix, doc = docs[nm]
            ports.append(Port(nm, (size,), tuple(symbol(f"{prefix}{j}")
                                                for j in range(1, size + 1)), doc))
        if model.parameters:
            ports.append(Port("p", (len(model.parameters),), tuple(model.parameters),
                              f"named spec parameters, shape ({len(model.parameters)},), in this "
                              f"order: " + _names(s.name[2:] for s in model.parameters)))
        self.inputs = tuple(ports)
        self.rec = Recorder(reserved={str(s) for p in ports for s in p.elements})
        self.rec.sample = {s: v for s, v in zip(coordinate_symbols(n), cl.sample)}
        self.x = {p.name: list(p.elements) for p in ports}
        self.q = self.x.get("q", coordinate_symbols(n))
        self.qe = effective(model, self.q)
        self._kin = None
        self._links = None

    # --- shared parts -----------------------------------------------------------------
    def kin(self, qd: list | None = None):
        """The tree's kinematics with Jacobians (and velocity terms with ``qd``), once."""
        if self._kin is None:
            self._kin = chain_kinematics(self.rec, self.model.chain, self.qe, qd, jacobians=True)
        elif qd is not None and self._kin[0].omega is None:
            raise AssertionError("kinematics first built without rates; pass qd on first use")
        return self._kin

    def links(self):
        if self._links is None:
            self._links = [link_transform(self.rec, j, jt, self.qe[j - 1])
                           for j, jt in enumerate(self.model.chain.joints, start=1)]
        return self._links

    def rows(self, qd: list | None = None) -> tuple[list[Row], dict]:
        rows, checks = closure_rows(self.rec, self.model, self.kin(qd), self.q)
        return [r for r in rows if not is_structural_zero(r)], checks

    def solver(self, rows: list[Row]) -> "Solver":
        """G_D x = y: the unrolled LU when the rows are independent (m = r), else least squares
        over every row (normal equations G_D^T G_D, r x r, by L D L^T)."""
        cl = self.model.closure
        GD = [[row.G[j] for j in cl.dependent] for row in rows]
        if len(rows) == cl.rank:
            dense_lu(cl.rank)
            scale_D = [cl.column_scale[j] for j in cl.dependent]
            return Solver(self.rec, GD, SparseLU(self.rec, GD, "lu", scale_D, LOOP_SINGULAR,
                                                 "constraint block G_D", LU_TOL))
        return Solver(self.rec, GD, None)

    def transmission(self, rows: list[Row], sol: "Solver") -> list[list[sp.Expr]]:
        """H_D = -G_D^+ G_I (r x f): column k from one solve."""
        cl = self.model.closure
        cols = []
        for k, i in enumerate(cl.independent):
            x = sol.solve([row.G[i] for row in rows], f"X{k + 1}_")
            cols.append([self.rec.bind(-v, f"H{d + 1}_{k + 1}") for d, v in enumerate(x)])
        return [[cols[k][d] for k in range(len(cols))] for d in range(len(cl.dependent))]

    def full(self, ind_values: list, dep_values: list) -> list[sp.Expr]:
        cl = self.model.closure
        out: list[sp.Expr] = [sp.Integer(0)] * self.model.n
        for j, v in zip(cl.independent, ind_values):
            out[j] = v
        for j, v in zip(cl.dependent, dep_values):
            out[j] = v
        return out

    def spring_length(self, kin, s, jacobian: bool = True) -> tuple:
        """(L, d = end b - end a, end a's motion, end b's motion) of a point spring."""
        a = frame_motion(self.rec, kin, Frame(s.body_a, s.a, ZERO3, ZERO3, ZERO3), f"{s.name}_a",
                         jacobian)
        b = frame_motion(self.rec, kin, Frame(s.body_b, s.b, ZERO3, ZERO3, ZERO3), f"{s.name}_b",
                         jacobian)
        d = self.rec.vec(sub(b.o, a.o), f"{s.name}_d")
        _count(sqrt=1)
        return self.rec.bind(sp.sqrt(dot(d, d)), f"{s.name}_L"), d, a, b

    def spring_states(self, qd: list) -> list[tuple]:
        """(L, Ldot, tension F = k (L - L0) + c Ldot - F0, dL/dq) of each point spring."""
        n = self.model.n
        if not self.model.springs:
            return []
        rec, kin = self.rec, self.kin(qd)
        out = []
        for s in self.model.springs:
            L, d, a, b = self.spring_length(kin, s)
            _count(divs=1, adds=n - 1 + 3, muls=n + 3)           # 1/L, Ld, F
            u = rec.vec(scale(1 / L, d), f"{s.name}_u")
            J = [rec.bind(dot(u, sub(Tb, Ta)), f"{s.name}_J{j + 1}")
                 for j, (Tb, Ta) in enumerate(zip(b.T, a.T))]
            Ld = rec.bind(sp.Add(*[Jj * v for Jj, v in zip(J, qd)]), f"{s.name}_Ld")
            F = rec.bind(s.k * (L - s.L0) + s.c * Ld - s.F0, f"{s.name}_F")
            out.append((L, Ld, F, J))
        return out

    def force_elements(self, qd: list) -> list[sp.Expr]:
        """Generalised forces of the joint spring-dampers and the point-to-point springs
        (tension F along the unit vector u from end a to end b: Q = -F dL/dq)."""
        Q: list[sp.Expr] = [sp.Integer(0)] * self.model.n
        _count(adds=3 * len(self.model.joint_springs), muls=2 * len(self.model.joint_springs))
        for s in self.model.joint_springs:
            Q[s.coordinate] += -s.k * (self.q[s.coordinate] - s.q0) - s.c * qd[s.coordinate]
        for L, Ld, F, J in self.spring_states(qd):
            _count(adds=len(J), muls=len(J))                        # Q -= F J
            for j, Jj in enumerate(J):
                if Jj != 0:
                    Q[j] += -F * Jj
        return Q

    def port(self, name: str, shape: tuple, elements, doc: str) -> Port:
        return Port(name, shape, tuple(elements), doc)

    def kernel(self, name: str, doc: str, outputs: list[Port], statuses=None) -> Kernel:
        return Kernel(name, doc, self.inputs, tuple(outputs), tuple(self.rec.statements),
                      dict(statuses or {}))


class Solver:
    """x with G_D x = y (exact when y is consistent: the rows' null combinations vanish) and
    the minimum-norm lambda with G_D^T lambda = c."""

    def __init__(self, rec: Recorder, GD: list[list[sp.Expr]], lu: SparseLU | None) -> None:
        self.rec, self.GD, self.lu = rec, GD, lu
        r = len(GD[0]) if GD else 0
        if lu is None:
            dense_product(r, len(GD), r)
            N = [[None] * r for _ in range(r)]
            for i in range(r):
                for k in range(i, r):
                    N[i][k] = N[k][i] = rec.bind(sp.Add(*[row[i] * row[k] for row in GD]),
                                                 f"N{i + 1}_{k + 1}")
            self.N = N

    def _normal(self, b: list[sp.Expr], name: str) -> list[sp.Expr]:
        return ldlt_solve(self.rec, self.N, b, status=LOOP_SINGULAR, rel_tol=1e-13,
                          what="the normal equations G_D^T G_D", x_name=name)

    def solve(self, y: list[sp.Expr], name: str) -> list[sp.Expr]:
        if self.lu is not None:
            dense_lu_solve(self.lu.n)
            return self.lu.solve(self.rec, y, name)
        r = len(self.N)
        dense_product(r, len(self.GD))
        rhs = [self.rec.bind(sp.Add(*[row[i] * v for row, v in zip(self.GD, y)]),
                             f"{name}rhs{i + 1}") for i in range(r)]
        return self._normal(rhs, name)

    def solve_transposed(self, c: list[sp.Expr], name: str) -> list[sp.Expr]:
        if self.lu is not None:
            dense_lu_solve(self.lu.n)
            return self.lu.solve_transposed(self.rec, c, name)
        z = self._normal(c, f"{name}_z")
        dense_product(len(self.GD), len(z))
        return [self.rec.bind(sp.Add(*[a * b for a, b in zip(row, z)]), f"{name}{i + 1}")
                for i, row in enumerate(self.GD)]

    def determinant(self) -> sp.Expr:
        """det G_D (square case; its sign is the assembly branch), else 1."""
        if self.lu is None:
            return sp.Integer(1)
        _count(muls=self.lu.n - 1)
        return sp.Mul(*[st.pivot for st in self.lu.steps]) * _permutation_sign(self.lu)


# --- kernels --------------------------------------------------------------------------------

def closure(model: Linkage) -> Kernel:
    b = Build(model, ["q"])
    rows, checks = b.rows()
    m, n = len(rows), model.n
    return b.kernel(
        "closure", "Constraint rows phi(q) (zero when the loops are closed), their Jacobian "
        "G = d phi/dq (columns: Pavlov's joint screws) and the orientation checks.",
        [b.port("phi", (m,), [r.phi for r in rows],
                f"constraint residuals (m or 1), shape ({m},): {_names(model.closure.rows)}"),
         b.port("G", (m, n), [g for r in rows for g in r.G],
                f"constraint Jacobian, shape ({m}, {n}); rows as phi, columns in the order of q"),
         b.port("orientation", (max(len(checks), 1),), list(checks.values()) or [sp.Integer(1)],
                f"axis products that are +1 on the assembled branch and -1 on a closure by a "
                f"half turn: {_names(checks) or 'none (1)'}")])


def newton_step(model: Linkage) -> Kernel:
    """One Newton step on the dependent coordinates, independent ones held (001 section 1.5):
    square (m = r rows): G_D dq_D = -phi by the unrolled LU; surplus rows (m > r, redundant
    constraints): least squares over every row, (B^T B) dq_D = -B^T phi with B = G_D (001's
    (B^T B)^-1 B^T W), by an unrolled L D L^T."""
    b = Build(model, ["q"])
    cl = model.closure
    rows, checks = b.rows()
    sol = b.solver(rows)
    rec = b.rec
    _count(muls=len(rows), adds=len(rows) - 1 + cl.rank, sqrt=1)     # |phi|, q + dq
    err = rec.bind(sp.sqrt(sp.Add(*[r.phi ** 2 for r in rows])), "err")
    dq = sol.solve([-r.phi for r in rows], "dq")
    q_next = list(b.q)
    for j, d in zip(cl.dependent, dq):
        q_next[j] = b.q[j] + d
    det = sol.determinant()
    n = model.n
    return b.kernel(
        "newton_step", "One Newton step of the loop closure on the dependent coordinates "
        "(independent ones held): q_next, the residual norm before the step, det G_KD (its "
        "sign is the assembly branch) and the orientation checks.",
        [b.port("q_next", (n,), q_next, f"coordinates after the step, shape ({n},), order of q"),
         b.port("error", (1,), [err], "sqrt(sum phi^2) over every constraint row before the "
                                     "step (m or 1), shape (1,)"),
         b.port("branch", (1,), [rec.bind(det, "det_GD")],
                f"det G_D before the step (1 when constraints are redundant); its sign is "
                f"{cl.branch_sign:+d} on the reference pose's assembly branch (0: not "
                f"checked), shape (1,)"),
         b.port("orientation", (max(len(checks), 1),), list(checks.values()) or [sp.Integer(1)],
                f"axis products, +1 on the assembled branch: {_names(checks) or 'none (1)'}")],
        {LOOP_SINGULAR: SINGULAR_MESSAGE})


def _permutation_sign(lu: SparseLU) -> int:
    """det M = prod(pivots) * sign(row order) * sign(column order) of the pivot sequence."""
    def sign(p: list[int]) -> int:
        s, p = 1, list(p)
        for i in range(len(p)):
            while p[i] != i:
                j = p[i]
                p[i], p[j] = p[j], p[i]
                s = -s
        return s
    rows = [st.row for st in lu.steps]
    cols = [st.col for st in lu.steps]
    return sign(rows) * sign(cols)


def velocity(model: Linkage) -> Kernel:
    b = Build(model, ["q", "qd_ind"])
    cl = model.closure
    rows, _ = b.rows()
    HD = b.transmission(rows, b.solver(rows))
    qd_I = b.x["qd_ind"]
    dense_product(cl.rank, len(qd_I))
    qd_D = [b.rec.bind(sp.Add(*[h * v for h, v in zip(HD[d], qd_I)]), f"qd_dep{d + 1}")
            for d in range(cl.rank)]
    H = b.full([[sp.Integer(1) if k == a else sp.Integer(0) for k in range(len(qd_I))]
                for a in range(len(qd_I))], HD)
    n, f = model.n, len(qd_I)
    return b.kernel(
        "velocity", "Dependent rates from the independent ones (G_KD qd_D = -G_KI qd_I) and "
        "the transmission matrix H = dq/dq_I (001 eq. 4: Pavlov's velocity ratios q').",
        [b.port("qd", (n,), b.full(qd_I, qd_D), f"all joint rates, shape ({n},), order of q"),
         b.port("H", (n, f), [x for row in H for x in row],
                f"transmission matrix dqd/dqd_ind, shape ({n}, {f})")],
        {LOOP_SINGULAR: SINGULAR_MESSAGE})


def _markers(model: Linkage) -> list[Marker]:
    return list(model.points) + list(model.bodies)


def kinematics(model: Linkage) -> Kernel:
    """Named points and the declared bodies' centres of mass: position, velocity and
    acceleration a = sum_k T_k qdd_k + a_bias (frame 0); bodies also rotation, omega, alpha."""
    b = Build(model, ["q", "qd", "qdd"])
    qd, qdd, rec = b.x["qd"], b.x["qdd"], b.rec
    kin = b.kin(qd)
    r, v, a = [], [], []
    for mk in _markers(model):
        fm = frame_motion(rec, kin, Frame(mk.body, mk.offset, ZERO3, ZERO3, ZERO3), mk.name)
        r += fm.o
        v += fm.v
        a += [rec.bind(fm.a_bias[i] + sp.Add(*[T[i] * x for T, x in zip(fm.T, qdd)]),
                       f"{mk.name}_a{'xyz'[i]}") for i in range(3)]
    R, w, al = [], [], []
    for mk in model.bodies:
        k = kin[mk.body]
        # R = tau^T tau_ref: frame 0 at the reference pose -> the body -> frame 0 now
        R += [rec.bind(sp.Add(*[k.tau[m][i] * mk.tau_ref[m][j] for m in range(3)]),
                       f"{mk.name}_R{i}{j}") for i in range(3) for j in range(3)]
        w += k.omega
        al += [rec.bind(k.eps[i] + sp.Add(*[Rc[i] * x for Rc, x in zip(k.R, qdd)]),
                        f"{mk.name}_alpha{'xyz'[i]}") for i in range(3)]
    names = [mk.name for mk in _markers(model)]
    nm, nb = len(names), len(model.bodies)
    bodies = _names(mk.name for mk in model.bodies)
    return b.kernel(
        "kinematics", "Positions, velocities and accelerations of the named points and the "
        "bodies' centres of mass; rotations, angular velocities and accelerations of the bodies "
        "(frame 0).",
        [b.port("r", (nm, 3), r, f"positions (m), shape ({nm}, 3); rows: the points then the "
                                  f"bodies' centres of mass: {_names(names)}"),
         b.port("v", (nm, 3), v, f"velocities (m/s), shape ({nm}, 3); rows as r"),
         b.port("a", (nm, 3), a, f"accelerations (m/s^2), shape ({nm}, 3); rows as r"),
         b.port("R", (nb, 3, 3), R, f"rotation of each body from the reference pose (x = R "
                                     f"x_ref about the centre of mass), shape ({nb}, 3, 3): "
                                     f"{bodies}"),
         b.port("omega", (nb, 3), w, f"angular velocities (rad/s), shape ({nb}, 3): {bodies}"),
         b.port("alpha", (nb, 3), al, f"angular accelerations (rad/s^2), shape ({nb}, 3)")])


def mass_matrix(model: Linkage) -> Kernel:
    b = Build(model, ["q"])
    M = crba(b.rec, model.chain, b.links())
    n = model.n
    return b.kernel("mass_matrix", "Mass matrix M(q) of the spanning tree (composite-body "
                    "algorithm; the cut joints removed).",
                    [b.port("M", (n, n), [x for row in M for x in row],
                            f"tree mass matrix, shape ({n}, {n}), rows and columns in the "
                            f"order of q")])


def bias(model: Linkage) -> Kernel:
    b = Build(model, ["q", "qd", "tau"])
    qd, tau, rec = b.x["qd"], b.x["tau"], b.rec
    h = rnea(rec, model.chain, b.links(), qd, None)
    Qe = b.force_elements(qd)
    rows, _ = b.rows(qd)
    n, m = model.n, len(rows)
    _count(adds=2 * n)
    return b.kernel("bias", "The tree's generalised forces b = tau + Q_springs_dampers - h(q, qd) "
                    "(so M qdd = b + G^T lambda) and the acceleration bias gamma (G qdd = gamma).",
                    [b.port("b", (n,), [rec.bind(t + e - x, f"b{j + 1}") for j, (t, e, x)
                                        in enumerate(zip(tau, Qe, h))],
                            f"generalised forces (N m or N), shape ({n},), order of q"),
                     b.port("gamma", (m,), [r.bias for r in rows],
                            f"acceleration bias -dG/dt qd, shape ({m},), rows as closure's phi")])


def _reactions(b: Build, kept: list[Row], lam: list[sp.Expr]) -> list[sp.Expr]:
    """Force and moment (frame 0) on each cut joint's second body, at the joint point, from
    the multipliers of its rows."""
    out = []
    for cut in b.model.cuts:
        f, m = [sp.Integer(0)] * 3, [sp.Integer(0)] * 3
        for row, lm in zip(kept, lam):
            if row.label.split(":")[0] == cut.joint:
                f = add(f, scale(lm, row.force))
                m = add(m, scale(lm, row.moment))
        out += [b.rec.bind(x, f"{cut.joint}_reaction_{c}") for x, c in zip(f + m, ("fx", "fy",
                                                                                  "fz", "mx",
                                                                                  "my", "mz"))]
    return out


def _dynamics(b: Build, qd: list):
    """M, h, the force elements' Q, the rows with their biases, their solver and H_D."""
    model, rec = b.model, b.rec
    M = crba(rec, model.chain, b.links())
    h = rnea(rec, model.chain, b.links(), qd, None)
    Qe = b.force_elements(qd)
    rows, _ = b.rows(qd)
    sol = b.solver(rows)
    return M, h, Qe, rows, sol, b.transmission(rows, sol)


def forward_dynamics(model: Linkage) -> Kernel:
    b = Build(model, ["q", "qd", "tau"])
    qd, tau, rec = b.x["qd"], b.x["tau"], b.rec
    cl = model.closure
    I, D = cl.independent, cl.dependent
    M, h, Qe, rows, sol, HD = _dynamics(b, qd)
    n, f, r = model.n, len(I), len(D)
    _count(adds=2 * n)                              # b = tau + Q - h
    dense_product(n, r)                             # c = b - M_:D qdd_0
    _count(adds=n)
    dense_product(n, n, f)                          # M H (H dense n x f)
    dense_product(f, n, f)                          # H^T (M H)
    dense_product(f, n)                             # H^T c
    dense_product(n, f)                             # qdd = H qdd_I + qdd_0
    _count(adds=n)
    dense_product(r, n)                             # (M qdd - b)_D
    _count(adds=r)
    rhs = [rec.bind(t + e - hj, f"b{j + 1}") for j, (t, e, hj) in enumerate(zip(tau, Qe, h))]
    qdd_D0 = sol.solve([r.bias for r in rows], "qdd0_")
    c = [rec.bind(rhs[i] - sp.Add(*[M[i][D[d]] * qdd_D0[d] for d in range(len(D))]), f"c{i + 1}")
         for i in range(model.n)]
    f = len(I)
    MH = [[rec.bind(M[i][I[k]] + sp.Add(*[M[i][D[d]] * HD[d][k] for d in range(len(D))]),
                    f"MH{i + 1}_{k + 1}") for k in range(f)] for i in range(model.n)]
    Ms = [[None] * f for _ in range(f)]
    for a_ in range(f):
        for k in range(a_, f):
            Ms[a_][k] = Ms[k][a_] = rec.bind(
                MH[I[a_]][k] + sp.Add(*[HD[d][a_] * MH[D[d]][k] for d in range(len(D))]),
                f"Mr{a_ + 1}_{k + 1}")
    bs = [rec.bind(c[I[a_]] + sp.Add(*[HD[d][a_] * c[D[d]] for d in range(len(D))]),
                   f"br{a_ + 1}") for a_ in range(f)]
    qdd_I = ldlt_solve(rec, Ms, bs, status=LOOP_REDUCED_SINGULAR,
                       what="the reduced mass matrix", x_name="qdd_ind")
    qdd_D = [rec.bind(sp.Add(*[HD[d][k] * qdd_I[k] for k in range(f)]) + qdd_D0[d],
                      f"qdd_dep{d + 1}") for d in range(len(D))]
    qdd = b.full(qdd_I, qdd_D)
    res_D = [rec.bind(sp.Add(*[M[D[d]][j] * qdd[j] for j in range(model.n)]) - rhs[D[d]],
                      f"resD{d + 1}") for d in range(len(D))]
    lam = sol.solve_transposed(res_D, "lambda")
    return _dynamics_kernel(b, "forward_dynamics",
                            "Joint accelerations from the reduced equations (H^T M H) qdd_I = "
                            "H^T (Q - h - M qdd_0), the constraint multipliers and the cut "
                            "joints' reactions.", rows, lam,
                            [b.port("qdd", (model.n,), qdd, f"joint accelerations, shape "
                                                            f"({model.n},), order of q")])


def inverse_dynamics(model: Linkage) -> Kernel:
    """Paper 004's "direct" problem: from the independent accelerations, the drive forces on
    the independent coordinates and the multipliers: [d | G_K^T] [tau_I; lambda] = M qdd + h - Q."""
    b = Build(model, ["q", "qd", "qdd_ind"])
    qd, qdd_I, rec = b.x["qd"], b.x["qdd_ind"], b.rec
    cl = model.closure
    I, D = cl.independent, cl.dependent
    rows, _ = b.rows(qd)
    sol = b.solver(rows)
    HD = b.transmission(rows, sol)
    qdd_D0 = sol.solve([r.bias for r in rows], "qdd0_")
    dense_product(model.n, len(I))                  # qdd = H qdd_I + qdd_0
    _count(adds=model.n * 2)                        # + qdd_0, res = Q_id - Q
    dense_product(len(I), len(rows))                # G_I^T lambda
    _count(adds=len(I))
    qdd_D = [rec.bind(sp.Add(*[HD[d][k] * qdd_I[k] for k in range(len(I))]) + qdd_D0[d],
                      f"qdd_dep{d + 1}") for d in range(len(D))]
    qdd = b.full(qdd_I, qdd_D)
    Qe = b.force_elements(qd)
    Qid = rnea(rec, model.chain, b.links(), qd, qdd)
    res = [rec.bind(x - e, f"res{j + 1}") for j, (x, e) in enumerate(zip(Qid, Qe))]
    lam = sol.solve_transposed([res[j] for j in D], "lambda")
    tau_I = [rec.bind(res[i] - sp.Add(*[r.G[i] * lm for r, lm in zip(rows, lam)]),
                      f"tau_ind{k + 1}") for k, i in enumerate(I)]
    f = len(I)
    return _dynamics_kernel(b, "inverse_dynamics",
                            "Drive forces on the independent coordinates and the multipliers for "
                            "given independent accelerations (paper 004's \"direct\" problem).",
                            rows, lam,
                            [b.port("tau_ind", (f,), tau_I,
                                    f"drive forces on the independent coordinates (N m or N), "
                                    f"shape ({f},): {_names(model.coordinates[i] for i in I)}"),
                             b.port("qdd", (model.n,), qdd, f"all joint accelerations, shape "
                                                           f"({model.n},), order of q")])


def _dynamics_kernel(b: Build, name: str, doc: str, rows: list[Row], lam: list,
                     first: list[Port]) -> Kernel:
    model = b.model
    m, nc = len(rows), len(model.cuts)
    which = ("unique" if m == model.closure.rank else
             "the minimum-norm set: with redundant constraints the split is statically "
             "indeterminate, only G^T lambda is unique")
    out = first + [b.port("multipliers", (max(m, 1),), lam or [sp.Integer(0)],
                          f"constraint multipliers (N or N m; {which}), shape ({m},): "
                          f"{_names(model.closure.rows)}")]
    if nc:
        out.append(b.port("reaction", (nc, 6), _reactions(b, rows, lam),
                          f"force (N) and moment (N m) on each cut joint's second body at the "
                          f"joint point, frame 0, shape ({nc}, 6): "
                          f"{_names(c.joint for c in model.cuts)}"))
    return b.kernel(name, doc, out, STATUSES)


def energy(model: Linkage) -> Kernel:
    """T (tree bodies), V = gravity + joint springs 1/2 k (q - q0)^2 + point springs
    1/2 k (L - L0)^2 - F0 L."""
    b = Build(model, ["q", "qd"])
    qd, rec = b.x["qd"], b.rec
    kin = chain_kinematics(rec, model.chain, b.qe, qd, jacobians=False)
    T, V = kinetic_and_gravity_energy(rec, model.chain, kin)
    for s in model.joint_springs:
        V += s.k * (b.q[s.coordinate] - s.q0) ** 2 / 2
    for s in model.springs:
        if s.k != 0 or s.F0 != 0:
            L = b.spring_length(kin, s, jacobian=False)[0]
            V += s.k * (L - s.L0) ** 2 / 2 - s.F0 * L
    return b.kernel("energy", "Kinetic energy T and potential energy V (gravity, joint and "
                    "point springs, constant forces): T + V changes by the work of the drives "
                    "and dampers only.",
                    [b.port("T", (1,), [T], "kinetic energy (J), shape (1,)"),
                     b.port("V", (1,), [V], "potential energy (J), shape (1,)")])


def springs(model: Linkage) -> Kernel:
    b = Build(model, ["q", "qd"])
    states = b.spring_states(b.x["qd"])
    ns = max(len(states), 1)
    names = _names(s.name for s in model.springs) or "none (zeros)"
    rows = [[L, Ld, F] for L, Ld, F, _ in states] or [[sp.Integer(0)] * 3]
    return b.kernel("springs", "Length, rate of change and tension of each point-to-point "
                    "spring-damper (a strut's force).",
                    [b.port("state", (ns, 3), [x for row in rows for x in row],
                            f"length L (m), dL/dt (m/s) and tension k (L - L0) + c dL/dt - F0 (N) "
                            f"of each spring, shape ({ns}, 3): {names}")])


def violation(model: Linkage) -> Kernel:
    b = Build(model, ["q", "qd"])
    rows, _ = b.rows()
    qd = b.x["qd"]
    m = len(rows)
    dense_product(m, model.n)                                   # G qd
    _count(adds=2 * (m - 1), muls=2 * m, sqrt=2)                # the two norms
    pos = sp.sqrt(sp.Add(*[r.phi ** 2 for r in rows]))
    vel = sp.sqrt(sp.Add(*[sp.Add(*[g * v for g, v in zip(r.G, qd)]) ** 2 for r in rows]))
    return b.kernel("violation", "Constraint violation norms over every structural "
                    "row: |phi(q)| and |G(q) qd|.",
                    [b.port("position", (1,), [pos], "sqrt(sum phi^2) (m or 1), shape (1,)"),
                     b.port("velocity", (1,), [vel], "sqrt(sum (G qd)^2) (m/s or 1/s), shape (1,)")])


BUILDERS = (closure, newton_step, velocity, kinematics, mass_matrix, bias, forward_dynamics,
            inverse_dynamics, energy, springs, violation)


def manifest(model: Linkage) -> dict:
    cl = model.closure
    coords = model.coordinates
    return {
        "n": model.n,
        "coordinates": coords,
        "velocities": coords,
        "q_ref": [float(x) for x in model.q_ref],
        "tree_joints": model.tree_joints,
        "cut_joints": [{"joint": c.joint, "type": c.kind} for c in model.cuts],
        "joint_types": model.joint_types,
        "constraint_rows": list(cl.rows),
        "rank": cl.rank,
        "independent_rows": [cl.rows[i] for i in cl.kept],
        "redundant_rows": [cl.rows[i] for i in cl.dropped],
        "independent": [coords[j] for j in cl.independent],
        "dependent": [coords[j] for j in cl.dependent],
        "dof": len(cl.independent),
        "branch_sign": cl.branch_sign,
        "ranks_at_analysed_poses": list(cl.ranks),
        "notes": list(cl.notes),
        "parameters": [s.name for s in model.parameters],
        "parameter_defaults": {s.name: model.defaults.get(s.name) for s in model.parameters},
        "gravity": [float(g) for g in model.chain.gravity],
        "gravity_input": False,
        "bodies": [mk.name for mk in model.bodies],
        "points": [mk.name for mk in model.points],
        "springs": [s.name for s in model.springs],
    }


def summary(model: Linkage) -> str:
    cl = model.closure
    return (f"{model.name} (n = {model.n} tree coordinates, {len(model.cuts)} cut joints, "
            f"{len(cl.rows)} constraint rows of rank {cl.rank}, {len(cl.independent)} DoF)")


LINKAGE = Family("linkage", Linkage, BUILDERS, manifest, summary)
