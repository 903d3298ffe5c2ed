"""Runtime procedures of a closed-loop linkage (family "linkage"; docs/linkage.md).

    assemble(mech, q)            Newton on the dependent coordinates (001 section 1.5), with
                                 the checks: converged, same assembly branch, no half-turn closure
    rates(mech, q, qd_ind)       all joint rates and the transmission matrix H
    rhs(mech, tau)               the minimal ODE y = (q, qd_ind): qdot = H qd_ind, and qdd_ind
                                 from the reduced equations (for scipy's solve_ivp)
    simulate(mech, ...)          solve_ivp on rhs from an assembled start, with projection
    inverse_dynamics_on_grid     paper 004's "direct" problem on a uniform time grid
    forward_dynamics_on_grid     paper 004's "inverse" problem with its constant-acceleration
                                 step (first order: a fidelity mode, energy drifts as O(dt))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

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


def assemble(mech: Mechanism, q: Any, p: Any = None, tol: float = 1e-12, max_iter: int = 50,
             check_branch: bool = True) -> np.ndarray:
    """Close the loops from ``q`` (its independent coordinates are held): Newton steps until
    the residual norm is below ``tol`` (relative to 1 m / 1 rad). Raises AssemblyError naming
    the reason: no convergence, a singular pivot, the other assembly branch (sign of
    det G_KD differs from the reference pose's), or a closure by a half turn."""
    m = _require_linkage(mech, "assemble")
    q = _vector(q, mech.n, "q").copy()
    kw = {} if p is None else {"p": p}
    err = np.inf
    for it in range(max_iter):
        try:
            q_next, error, branch, orient = mech.newton_step(q, **kw)
        except Exception as e:      # a status: a singular pivot
            raise AssemblyError(f"{mech.name}: Newton step {it + 1} from q = {q.tolist()}: {e}") \
                from None
        err = float(error[0])
        if err < tol:
            break
        q = q_next
    else:
        raise AssemblyError(f"{mech.name}: the loops do not close from this start: residual "
                            f"{err:.3g} after {max_iter} Newton steps (out of reach, or too far "
                            f"from an assembled pose)")
    if np.any(orient <= 0):
        raise AssemblyError(f"{mech.name}: a cut joint closed by a half turn (orientation "
                            f"checks {orient.tolist()}): a false closure, start closer")
    sign = m["branch_sign"]
    if check_branch and sign and np.sign(branch[0]) != sign:
        raise AssemblyError(f"{mech.name}: closed on the other assembly branch (det G_KD = "
                            f"{branch[0]:.3g}, reference branch sign {sign:+d}); start closer to "
                            f"the intended branch or pass check_branch=False")
    return q


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


def inverse_dynamics_on_grid(mech: Mechanism, q_ind: Callable, qd_ind: Callable,
                             qdd_ind: Callable, q_start: Any, t_end: float, steps: int,
                             p: Any = None) -> dict:
    """Paper 004's "direct" problem on t_l = l dt: at each node (a) the dependent coordinates
    by Newton from the previous node, (b) the rates, (c)-(d) the drive forces on the
    independent coordinates and the multipliers (inverse_dynamics)."""
    _require_linkage(mech, "inverse_dynamics_on_grid")
    ind = independent_indices(mech)
    kw = {} if p is None else {"p": p}
    t = np.linspace(0.0, float(t_end), int(steps) + 1)
    q = _vector(q_start, mech.n, "q_start").copy()
    out = {"t": t, "q": [], "tau_ind": [], "lambda": []}
    for tl in t:
        q[ind] = q_ind(tl)
        q = assemble(mech, q, p)
        qd, _ = mech.velocity(q, qd_ind(tl), **kw)
        tau_i, _, lam, *_ = mech.inverse_dynamics(q, qd, qdd_ind(tl), **kw)
        out["q"].append(q.copy())
        out["tau_ind"].append(tau_i)
        out["lambda"].append(lam)
    return {k: np.asarray(v) for k, v in out.items()}


def forward_dynamics_on_grid(mech: Mechanism, tau: Callable | Any, q0: Any, qd_ind0: Any,
                             t_end: float, steps: int, p: Any = None) -> dict:
    """Paper 004's "inverse" problem with its own step: at t_l the dependent q by Newton, the
    rates, then (8)-(9) for qdd and lambda; the independent accelerations held over the step:
    qd^{l+1} = qd^l + qdd^l dt, q^{l+1} = q^l + qd^l dt + qdd^l dt^2 / 2."""
    _require_linkage(mech, "forward_dynamics_on_grid")
    ind = independent_indices(mech)
    kw = {} if p is None else {"p": p}
    t = np.linspace(0.0, float(t_end), int(steps) + 1)
    dt = t[1] - t[0]
    q = assemble(mech, q0, p)
    v = _vector(qd_ind0, len(ind), "qd_ind0").copy()
    out = {"t": t, "q": [], "qd": [], "lambda": []}
    for tl in t:
        q = assemble(mech, q, p)
        qd, _ = mech.velocity(q, v, **kw)
        forces = tau(tl, q, qd) if callable(tau) else (np.zeros(mech.n) if tau is None else tau)
        qdd, lam, *_ = mech.forward_dynamics(q, qd, forces, **kw)
        out["q"].append(q.copy())
        out["qd"].append(qd)
        out["lambda"].append(lam)
        q = q.copy()
        q[ind] += v * dt + qdd[ind] * dt * dt / 2
        v = v + qdd[ind] * dt
    return {k: np.asarray(v_) for k, v_ in out.items()}
