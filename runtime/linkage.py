"""Runtime procedures of a closed-loop linkage (family "linkage"; docs/linkage.md).

    assemble(mech, q)            Newton on the dependent coordinates (001 section 1.5), with
                                 the checks: converged, same assembly branch, no half-turn closure
                                 (one state: the Python loop; a batch: the C loop)
    assemble_batch(mech, Q)      a batch with a status per state, in C or in Python
    rates(mech, q, qd_ind)       all joint rates and the transmission matrix H
    rhs(mech, tau)               the minimal ODE y = (q, qd_ind): qdot = H qd_ind, and qdd_ind
                                 from the reduced equations (for scipy's solve_ivp)
    simulate(mech, ...)          solve_ivp on rhs from an assembled start, with projection
    inverse_dynamics_on_grid     paper 004's "direct" problem on a uniform (or any increasing) grid
    forward_dynamics_on_grid     paper 004's "inverse" problem with its constant-acceleration
                                 step (first order: a fidelity mode, energy drifts as O(dt))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from mechgen.runtime import linkage_c
from mechgen.runtime.kernel import KernelStatusError
from mechgen.runtime.mechanism import Mechanism


class AssemblyError(ValueError):
    """The loops could not be closed from the given start; the message says why."""


def _require_linkage(mech: Mechanism, what: str) -> dict:
    m = mech.manifest
    if m.get("family") != "linkage":
        raise TypeError(f"{what}: {mech.name!r} is a {m.get('family')} mechanism, not a linkage")
    return m


def _vector(x: Any, size: int, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape != (size,):
        raise ValueError(f"{name}: expected shape ({size},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinity")
    return a


def independent_indices(mech: Mechanism) -> list[int]:
    m = _require_linkage(mech, "independent_indices")
    return [m["coordinates"].index(c) for c in m["independent"]]


# statuses of assembly, the same in the Python loop and the C loop (runtime/csrc/linkage_assemble.h)
ASSEMBLED, NOT_CONVERGED, SINGULAR, HALF_TURN, WRONG_BRANCH = 0, 1, 2, 3, 4
STATUS_NAMES = {ASSEMBLED: "assembled", NOT_CONVERGED: "not converged",
                SINGULAR: "singular pivot", HALF_TURN: "half-turn closure",
                WRONG_BRANCH: "wrong branch"}


@dataclass
class Assembly:
    """Assembly of a batch of states: ``q`` (N, n) the assembled coordinates, or for a failed
    state the last iterate; ``status`` (N,) one of the codes above; ``iterations`` Newton
    steps evaluated; ``error`` and ``branch`` the residual norm and det G_D the last step
    reported."""

    q: np.ndarray
    status: np.ndarray
    iterations: np.ndarray
    error: np.ndarray
    branch: np.ndarray

    def failed(self) -> np.ndarray:
        return np.flatnonzero(self.status != ASSEMBLED)


def newton_loop(step: Callable, q: np.ndarray, tol: float, max_iter: int, branch_sign: int,
                check_branch: bool) -> tuple[np.ndarray, int, int, float, float]:
    """The reference Newton loop of one state (001 section 1.5): ``step(q)`` returns
    (q_next, error, branch, orientation) or raises KernelStatusError (a singular pivot).
    Returns (q, status, iterations, error, branch): q converged (error < tol at q itself), or
    the last iterate on failure. The C loop (runtime/csrc/linkage_assemble.c) is this loop."""
    err = branch = float("nan")
    orient = None
    for it in range(max_iter):
        try:
            q_next, error, det, orient = step(q)
        except KernelStatusError:
            return q, SINGULAR, it + 1, float("nan"), float("nan")
        err, branch = float(error[0]), float(det[0])
        if err < tol:
            break
        q = q_next
    else:
        return q, NOT_CONVERGED, max_iter, err, branch
    if np.any(orient <= 0):
        return q, HALF_TURN, it + 1, err, branch
    if check_branch and branch_sign and np.sign(branch) != branch_sign:
        return q, WRONG_BRANCH, it + 1, err, branch
    return q, ASSEMBLED, it + 1, err, branch


def _reason(mech: Mechanism, status: int, q: np.ndarray, iterations: int, err: float,
            branch: float, max_iter: int) -> str:
    sign = mech.manifest["branch_sign"]
    if status == SINGULAR:
        return (f"{mech.name}: Newton step {iterations} from q = {q.tolist()}: a pivot of the "
                f"dependent coordinates' constraint block vanishes (a singular configuration "
                f"or a pose out of reach)")
    if status == NOT_CONVERGED:
        return (f"{mech.name}: the loops do not close from this start: residual {err:.3g} "
                f"after {max_iter} Newton steps (out of reach, or too far from an assembled "
                f"pose)")
    if status == HALF_TURN:
        return (f"{mech.name}: a cut joint closed by a half turn (an orientation check is not "
                f"positive): a false closure, start closer")
    return (f"{mech.name}: closed on the other assembly branch (det G_KD = {branch:.3g}, "
            f"reference branch sign {sign:+d}); start closer to the intended branch or pass "
            f"check_branch=False")


def assemble(mech: Mechanism, q: Any, p: Any = None, tol: float = 1e-12, max_iter: int = 50,
             check_branch: bool = True, errors: str = "raise") -> np.ndarray:
    """Close the loops from ``q`` (its independent coordinates are held): Newton steps until
    the residual norm is below ``tol`` (relative to 1 m / 1 rad). Raises AssemblyError naming
    the reason: no convergence, a singular pivot, the other assembly branch (sign of
    det G_KD differs from the reference pose's), or a closure by a half turn.

    ``q`` of shape (n,): the Python loop (:func:`newton_loop`, the reference). ``q`` of shape
    (N, n): the batch in C when the mechanism is loaded with a C backend (the same loop,
    runtime/csrc/linkage_assemble.c; :func:`assemble_batch`); a failed state raises
    AssemblyError naming the states and reasons, or gives a NaN row with ``errors="nan"``."""
    m = _require_linkage(mech, "assemble")
    if errors not in ("raise", "nan"):
        raise ValueError(f"assemble: errors must be 'raise' or 'nan', got {errors!r}")
    if np.ndim(q) == 2:
        return _assemble_rows(mech, q, p, tol, max_iter, check_branch, errors)
    q = _vector(q, mech.n, "q").copy()
    kw = {} if p is None else {"p": p}
    q, status, it, err, branch = newton_loop(lambda x: mech.newton_step(x, **kw), q, tol,
                                             max_iter, m["branch_sign"], check_branch)
    if status != ASSEMBLED:
        if errors == "nan":
            return np.full(mech.n, np.nan)
        raise AssemblyError(_reason(mech, status, q, it, err, branch, max_iter))
    return q


def _assemble_rows(mech: Mechanism, q: Any, p: Any, tol: float, max_iter: int,
                   check_branch: bool, errors: str) -> np.ndarray:
    res = assemble_batch(mech, q, p, tol, max_iter, check_branch)
    bad = res.failed()
    if not len(bad):
        return res.q
    if errors == "nan":
        out = res.q.copy()
        out[bad] = np.nan
        return out
    reasons = sorted({STATUS_NAMES[int(s)] for s in res.status[bad]})
    first = int(bad[0])
    raise AssemblyError(f"{mech.name}: {len(bad)} of {len(res.q)} states not assembled "
                        f"({', '.join(reasons)}) at state(s) {bad[:10].tolist()}"
                        f"{' ...' if len(bad) > 10 else ''}; state {first}: "
                        + _reason(mech, int(res.status[first]), res.q[first],
                                  int(res.iterations[first]), float(res.error[first]),
                                  float(res.branch[first]), max_iter))


def assemble_batch(mech: Mechanism, q: Any, p: Any = None, tol: float = 1e-12,
                   max_iter: int = 50, check_branch: bool = True,
                   engine: str = "auto") -> Assembly:
    """Assemble every row of ``q`` (N, n); statuses instead of exceptions. ``engine``: "c"
    (the compiled loop over the mechanism's compiled newton_step; needs a C backend),
    "python" (:func:`newton_loop` state by state, the reference), "auto" (C if available).
    ``p``: None (defaults), a dict, one vector for every state, or (N, number of
    parameters)."""
    m = _require_linkage(mech, "assemble_batch")
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[1] != mech.n:
        raise ValueError(f"assemble_batch: argument 'q' must have shape (N, {mech.n}), got "
                         f"{q.shape}")
    if not np.isfinite(q).all():
        raise ValueError("assemble_batch: argument 'q' contains NaN or infinity")
    if max_iter < 1 or not np.isfinite(tol):
        raise ValueError(f"assemble_batch: max_iter must be >= 1 and tol finite, got "
                         f"{max_iter}, {tol}")
    takes_p = "p" in dict(mech.kernels["newton_step"].inputs)
    P = _batch_parameters(mech, p, len(q)) if takes_p else None
    if engine == "auto":
        engine = "c" if linkage_c.available(mech) else "python"
    if engine == "c":
        return Assembly(*linkage_c.assemble(mech, q, P, tol, max_iter, m["branch_sign"],
                                            check_branch))
    if engine != "python":
        raise ValueError(f"assemble_batch: engine must be 'auto', 'c' or 'python', got "
                         f"{engine!r}")
    out = [newton_loop(lambda x, i=i: mech.newton_step(x, **({} if P is None else
                                                              {"p": P[i]})),
                       q[i].copy(), tol, max_iter, m["branch_sign"], check_branch)
           for i in range(len(q))]
    return Assembly(np.array([o[0] for o in out]).reshape(q.shape),
                    np.array([o[1] for o in out], dtype=np.int32),
                    np.array([o[2] for o in out], dtype=np.int32),
                    np.array([o[3] for o in out]), np.array([o[4] for o in out]))


def _batch_parameters(mech: Mechanism, p: Any, count: int) -> np.ndarray:
    P = mech.parameter_input(p, "assemble_batch", batch=True)
    if P.ndim == 1:
        P = np.broadcast_to(P, (count, P.size))
    if P.shape[0] != count:
        raise ValueError(f"assemble_batch: argument 'p' has {P.shape[0]} rows for {count} states")
    return np.ascontiguousarray(P, dtype=float)


def rates(mech: Mechanism, q: Any, qd_ind: Any, p: Any = None) -> tuple[np.ndarray, np.ndarray]:
    _require_linkage(mech, "rates")
    kw = {} if p is None else {"p": p}
    return mech.velocity(q, qd_ind, **kw)


def rhs(mech: Mechanism, tau: Callable | Any = None, p: Any = None) -> Callable:
    """f(t, y) for y = (q, qd_ind): qdot = H(q) qd_ind, qdd_ind from forward_dynamics.
    ``tau``: drive forces on all coordinates, an array or a function (t, q, qd) -> array."""
    _require_linkage(mech, "rhs")
    n, ind = mech.n, independent_indices(mech)
    f = len(ind)
    kw = {} if p is None else {"p": p}
    zero = np.zeros(n)

    def forces(t, q, qd):
        if tau is None:
            return zero
        return np.asarray(tau(t, q, qd) if callable(tau) else tau, dtype=float)

    def f_(t: float, y: np.ndarray) -> np.ndarray:
        q, qd_i = y[:n], y[n:n + f]
        qd, _ = mech.velocity(q, qd_i, **kw)
        qdd = mech.forward_dynamics(q, qd, forces(t, q, qd), **kw)[0]
        return np.concatenate([qd, qdd[ind]])

    return f_


@dataclass
class Trajectory:
    t: np.ndarray
    q: np.ndarray          # (N, n)
    qd: np.ndarray         # (N, n)


def simulate(mech: Mechanism, q0: Any, qd_ind0: Any, t_end: float, tau: Any = None,
             p: Any = None, t_eval: Any = None, rtol: float = 1e-10, atol: float = 1e-12,
             method: str = "DOP853") -> Trajectory:
    """Integrate from an assembled start (``q0`` is assembled first)."""
    from scipy.integrate import solve_ivp
    q0 = assemble(mech, q0, p)
    n = mech.n
    y0 = np.concatenate([q0, _vector(qd_ind0, len(independent_indices(mech)), "qd_ind0")])
    sol = solve_ivp(rhs(mech, tau, p), (0.0, float(t_end)), y0, method=method, rtol=rtol,
                    atol=atol, t_eval=t_eval)
    if not sol.success:
        raise RuntimeError(f"{mech.name}: integration failed: {sol.message}")
    q = np.ascontiguousarray(sol.y[:n].T)
    kw = {} if p is None else {"p": p}
    qd = np.array([mech.velocity(qi, yi[n:], **kw)[0] for qi, yi in zip(q, np.ascontiguousarray(sol.y.T))])
    return Trajectory(sol.t, q, qd)


def _time_grid(where: str, t_end: Any, steps: Any, t: Any) -> np.ndarray:
    """The grid t_0 < t_1 < ... : paper 004's uniform t_l = l dt, dt = t_end/steps (from 0),
    or the times ``t`` given explicitly. Errors name the argument."""
    if t is not None:
        if t_end is not None or steps is not None:
            raise ValueError(f"{where}: give either the grid 't' or 't_end' and 'steps', not both")
        grid = np.asarray(t, dtype=float)
        if grid.ndim != 1 or grid.size < 2:
            raise ValueError(f"{where}: argument 't': expected a 1-D grid of at least 2 times, "
                             f"got shape {grid.shape}")
        if not np.all(np.isfinite(grid)):
            raise ValueError(f"{where}: argument 't' contains NaN or infinity")
        bad = np.flatnonzero(np.diff(grid) <= 0)
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{where}: argument 't' must be strictly increasing: "
                             f"t[{k + 1}] = {grid[k + 1]!r} after t[{k}] = {grid[k]!r}")
        return grid
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)) \
            or steps < 1:
        raise ValueError(f"{where}: argument 'steps' must be an integer >= 1, got {steps!r}")
    if isinstance(t_end, (bool, np.bool_)) or not isinstance(t_end, (int, float, np.number)) \
            or not np.isfinite(t_end) or t_end <= 0:
        raise ValueError(f"{where}: argument 't_end' must be a finite time > 0 (a grid from 0 "
                         f"increasing), got {t_end!r}")
    return np.linspace(0.0, float(t_end), int(steps) + 1)


def _law(f: Callable, tl: float, size: int, name: str) -> np.ndarray:
    """One value of a prescribed law at a node, checked: shape (size,), finite."""
    return _vector(f(tl), size, f"{name}(t) at t = {float(tl):.6g}")


def _drive_forces(tau: Callable | Any, n: int, tl: float, q: np.ndarray,
                  qd: np.ndarray) -> np.ndarray:
    """tau on every coordinate at a node: None (zero), an array (n,) or tau(t, q, qd)."""
    if tau is None:
        return np.zeros(n)
    if callable(tau):
        return _vector(tau(tl, q.copy(), qd.copy()), n, f"tau(t, q, qd) at t = {float(tl):.6g}")
    return _vector(tau, n, "tau")


def inverse_dynamics_on_grid(mech: Mechanism, q_ind: Callable, qd_ind: Callable,
                             qdd_ind: Callable, q_start: Any, t_end: float | None = None,
                             steps: int | None = None, p: Any = None,
                             t: Any = None) -> dict:
    """Paper 004's "direct" problem on the grid t_l = l dt, dt =
    t_end/steps (or the increasing times ``t``). Given the laws q_I(t), qd_I(t), qdd_I(t) of
    the independent coordinates (functions of t returning shape (f,)), at each node:
    (a) the dependent coordinates by Newton (eq. 6; started from the previous node moved by
    qd dt + qdd dt^2/2, the first node from ``q_start``), (b) all rates (eq. 7), (c)-(d) all
    accelerations, the drive forces on the independent coordinates and the multipliers
    (eqs. 8-9; the generated inverse_dynamics: minimum-norm multipliers when constraints are
    redundant). Returns arrays t (N+1,), q, qd, qdd (N+1, n), tau_ind (N+1, f), lambda (N+1, m)."""
    where = "inverse_dynamics_on_grid"
    _require_linkage(mech, where)
    for name, f_ in (("q_ind", q_ind), ("qd_ind", qd_ind), ("qdd_ind", qdd_ind)):
        if not callable(f_):
            raise TypeError(f"{where}: argument {name!r} must be a function of t, "
                            f"got {type(f_).__name__}")
    grid = _time_grid(where, t_end, steps, t)
    ind = independent_indices(mech)
    f = len(ind)
    kw = {} if p is None else {"p": p}
    q = _vector(q_start, mech.n, "q_start").copy()
    out: dict[str, list] = {"q": [], "qd": [], "qdd": [], "tau_ind": [], "lambda": []}
    for l, tl in enumerate(grid):
        if l:
            dt = tl - grid[l - 1]
            q = q + out["qd"][-1] * dt + out["qdd"][-1] * dt * dt / 2
        q[ind] = _law(q_ind, tl, f, "q_ind")
        q = assemble(mech, q, p)
        qd, _ = mech.velocity(q, _law(qd_ind, tl, f, "qd_ind"), **kw)
        tau_i, qdd, lam, *_ = mech.inverse_dynamics(q, qd, _law(qdd_ind, tl, f, "qdd_ind"), **kw)
        for key, value in (("q", q.copy()), ("qd", qd), ("qdd", qdd), ("tau_ind", tau_i),
                           ("lambda", lam)):
            out[key].append(value)
    return {"t": grid} | {k: np.asarray(v) for k, v in out.items()}


def forward_dynamics_on_grid(mech: Mechanism, tau: Callable | Any, q0: Any, qd_ind0: Any,
                             t_end: float | None = None, steps: int | None = None,
                             p: Any = None, t: Any = None) -> dict:
    """Paper 004's "inverse" problem with its own step, on the grid t_l =
    l dt, dt = t_end/steps (or the increasing times ``t``). At each node: (a) the dependent
    q by Newton (eq. 6), (b) the rates (eq. 7), (c) eqs. 8-9 together for qdd and lambda
    (forward_dynamics); (d) the accelerations held constant over the step:
    qd_I^{l+1} = qd_I^l + qdd_I^l dt, q^{l+1} = q^l + qd^l dt + qdd^l dt^2 / 2 (the dependent
    part only starts the Newton solve of the next node). First order: the error at a fixed
    time is O(dt). ``tau``: drive forces on all n coordinates, None (zero), an array (n,) or
    a function tau(t, q, qd). Returns arrays t (N+1,), q, qd, qdd (N+1, n), lambda (N+1, m)."""
    where = "forward_dynamics_on_grid"
    _require_linkage(mech, where)
    grid = _time_grid(where, t_end, steps, t)
    ind = independent_indices(mech)
    kw = {} if p is None else {"p": p}
    q = assemble(mech, _vector(q0, mech.n, "q0"), p)
    v = _vector(qd_ind0, len(ind), "qd_ind0").copy()
    out: dict[str, list] = {"q": [], "qd": [], "qdd": [], "lambda": []}
    for l, tl in enumerate(grid):
        if l:
            dt = tl - grid[l - 1]
            qd_prev, qdd_prev = out["qd"][-1], out["qdd"][-1]
            q = assemble(mech, q + qd_prev * dt + qdd_prev * dt * dt / 2, p)
            v = v + qdd_prev[ind] * dt
        qd, _ = mech.velocity(q, v, **kw)
        qdd, lam, *_ = mech.forward_dynamics(q, qd, _drive_forces(tau, mech.n, tl, q, qd), **kw)
        for key, value in (("q", q.copy()), ("qd", qd), ("qdd", qdd), ("lambda", lam)):
            out[key].append(value)
    return {"t": grid} | {k: np.asarray(v_) for k, v_ in out.items()}
