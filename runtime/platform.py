"""Parallel mechanisms at run time: Newton's inverse kinematics and the integrator's rhs.

    >>> hexa = runtime.load("gough_stewart_docking")
    >>> q = newton_ik(hexa, x)                         # the general method (eq. 4.6)
    >>> f = platform_rhs(hexa, F=..., fE=..., g=...)   # state s = [x (6), u (6)]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from runtime.kernel import KernelStatusError, as_input
from runtime.mechanism import Mechanism


def _require_parallel(mech: Mechanism, what: str) -> None:
    if mech.manifest.get("family") != "parallel":
        raise ValueError(f"{what}: {mech.name!r} is not a parallel mechanism")


def newton_ik(mech: Mechanism, x: Any, q0: Any = None, p: Any = None, tol: float = 1e-13,
              max_iter: int = 30) -> np.ndarray:
    """Leg coordinates from the pose x by Newton's iteration on the closure residual.

    Starts from ``q0`` (default: zeros, the home configuration of auto-aligned legs); stops
    when every residual is below ``tol`` times the legs' length scale. Raises ValueError when
    it does not converge (an unreachable pose), KernelStatusError at a singular leg.
    """
    _require_parallel(mech, "newton_ik")
    x = as_input("x", x, 6, "newton_ik")
    q = np.zeros(mech.n) if q0 is None else as_input("q0", q0, mech.n, "newton_ik").copy()
    if x.ndim == 2 and q.ndim == 1:
        q = np.tile(q, (x.shape[0], 1))
    pp = mech.params(p) if p is None or isinstance(p, dict) else np.asarray(p, float)
    if x.ndim == 2 and pp.ndim == 1:
        pp = np.tile(pp, (x.shape[0], 1))
    extra = {"p": pp} if mech.parameters else {}
    scale = max(leg["l_ref"] for leg in mech.manifest["legs"])
    for _ in range(max_iter):
        q_next, res = mech.newton_step(x, q, **extra)
        step = np.abs(q_next - q).max()
        q = q_next
        if np.abs(res).max() < tol * scale and step < 1e-10:
            return q
    raise ValueError(f"newton_ik: no convergence in {max_iter} iterations (residual "
                     f"{np.abs(res).max():.3e}): is the pose reachable?")


def _source(value: Any, size: int, name: str) -> Callable:
    if callable(value):
        return value
    const = np.zeros(size) if value is None else as_input(name, value, size, "platform_rhs")
    return lambda t, x, u: const


def platform_rhs(mech: Mechanism, F: Any = None, fE: Any = None, mE: Any = None,
                 g: Any = None, p: Any = None, record: list | None = None) -> Callable:
    """f(t, s) = [x_dot, u_dot] for scipy.integrate.solve_ivp, s = [x (6), u (6)].

    ``F`` (drive forces, 6), ``fE`` (frame 0), ``mE`` (frame C): None (zero), constant arrays
    or functions (t, x, u). ``g`` defaults to the spec's gravity. ``record``: if a list, each
    call appends (t, outputs of the step kernel).
    """
    _require_parallel(mech, "platform_rhs")
    step = mech.kernels["step"]
    F_, fE_, mE_ = _source(F, 6, "F"), _source(fE, 3, "fE"), _source(mE, 3, "mE")
    gv = as_input("g", mech.manifest["gravity"] if g is None else g, 3, "platform_rhs")
    extra = {"p": mech.params(p) if p is None or isinstance(p, dict) else p} \
        if mech.parameters else {}

    def f(t: float, s: np.ndarray) -> np.ndarray:
        s = np.ascontiguousarray(s, dtype=np.float64)
        x, u = s[:6], s[6:]
        out = step(x, u, F_(t, x, u), fE_(t, x, u), mE_(t, x, u), gv, **extra)
        if record is not None:
            record.append((t, out))
        return out[0]

    return f


__all__ = ["newton_ik", "platform_rhs", "KernelStatusError"]
