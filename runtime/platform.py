"""Parallel mechanisms at run time: Newton's inverse kinematics and the integrator's rhs.

    >>> hexa = runtime.load("gough_stewart_docking")
    >>> q = newton_ik(hexa, x)                         # the general method (eq. 4.6)
    >>> f = platform_rhs(hexa, F=..., fE=..., g=...)   # state s = [x (6), u (6)]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from mechgen.runtime.kernel import KernelStatusError, as_input
from mechgen.runtime.mechanism import Mechanism


def _require_parallel(mech: Mechanism, what: str) -> None:
    if mech.manifest.get("family") != "parallel":
        raise ValueError(f"{what}: {mech.name!r} is not a parallel mechanism")


# leg types -> kinds of their joints, from the letters before the cut joint (U = RR, S = RRR,
# C = roll then stroke): the manifest's "joint_kinds" where it has them (older manifests do not)
_KINDS = {"R": "R", "U": "RR", "S": "RRR", "P": "P", "C": "RP"}
NO_CONVERGENCE = -1     # newton_ik's mark of a state that did not converge (not a kernel code)


def joint_kinds(leg: dict) -> list[str]:
    """Kinds ("R" revolute, "P" prismatic) of the joints of one manifest leg."""
    if "joint_kinds" in leg:
        return list(leg["joint_kinds"])
    return list("".join(_KINDS[c] for c in leg["type"][:-1]))


def joint_units(mech: Mechanism) -> list[str]:
    """Unit of every leg coordinate, in the order of q: "m" (prismatic) or "rad"."""
    _require_parallel(mech, "joint_units")
    return ["m" if k == "P" else "rad" for leg in mech.manifest["legs"] for k in joint_kinds(leg)]


def status_info(mech: Mechanism, code: int) -> dict:
    """What a kernel status code of a parallel mechanism means: {message, reason, legacy, leg,
    joint, limit, unit} (the manifest's ``status_codes``; a leg's code is 100 (leg + 1) +
    10 joint + reason, see generator.platform_kernels)."""
    _require_parallel(mech, "status_info")
    info = mech.manifest.get("status_codes", {}).get(str(int(code)))
    if info is None:
        raise ValueError(f"status_info: {mech.name!r} has no status code {code}")
    return dict(info)


def _message(mech: Mechanism, code: int) -> str:
    info = mech.manifest.get("status_codes", {}).get(str(code))
    if info is not None:
        return info["message"]
    return mech.kernels["inverse_kinematics"].statuses.get(code, f"status {code}")


def _check_iteration(tol: Any, max_iter: Any, errors: str) -> None:
    if errors not in ("raise", "nan"):
        raise ValueError(f"newton_ik: errors must be 'raise' or 'nan', got {errors!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"newton_ik: max_iter must be a positive integer, got {max_iter!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < np.inf:
        raise ValueError(f"newton_ik: tol must be a positive finite number, got {tol!r}")


def _newton_step(mech: Mechanism, x, q, extra: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q_next, residual, status) of the newton_step kernel on a batch (NaN rows where a leg's
    closure matrix is singular; status = its code)."""
    kernel = mech.kernels["newton_step"]
    try:
        q_next, res = kernel(x, q, **extra)
        return q_next, res, np.zeros(len(x), np.int32)
    except KernelStatusError as e:
        q_next, res = kernel(x, q, errors="nan", **extra)
        return q_next, res, np.asarray(e.status, np.int32)


def _leg_statuses(mech: Mechanism, q, res, dq, converged_tol: float) -> np.ndarray:
    """Each state's status as the closed-form kernel's checks give it (paper 000 section 4;
    leg by leg: a leg out of reach, then its joint limits in joint order, lower then upper): a
    leg whose Newton iteration did not converge is out of reach (a leg type with such a status:
    a crank, a slide on a rail) or NO_CONVERGENCE (a stroke along the leg reaches every pose). Codes as in
    generator.platform_kernels: 100 (leg + 1) + 10 joint + reason."""
    status = np.zeros(len(q), np.int32)
    c = r = 0
    for k, leg in enumerate(mech.manifest["legs"]):
        n, m = leg["n"], leg["m"]
        ok = (np.abs(res[:, r:r + m]).max(1) < converged_tol) & (dq[:, c:c + n].max(1) < 1e-10)
        status[(status == 0) & ~ok] = _out_of_reach_code(mech, k, leg)
        for j, lim in enumerate(leg.get("limits") or []):
            if lim is not None:
                status[(status == 0) & ~(q[:, c + j] - lim[0] > 0)] = 100 * (k + 1) + 10 * j + 3
                status[(status == 0) & ~(lim[1] - q[:, c + j] > 0)] = 100 * (k + 1) + 10 * j + 4
        c, r = c + n, r + m
    return status


def _out_of_reach_code(mech: Mechanism, k: int, leg: dict) -> int:
    """The code the closed form gives leg k out of reach (its leg type's "out_of_reach" status
    in the manifest, e.g. a crank or a slide on a rail), or NO_CONVERGENCE for a leg that
    reaches every pose (a stroke along the leg)."""
    codes = mech.manifest.get("status_codes")
    if codes is None:                                   # older manifests: by the joint kinds
        return NO_CONVERGENCE if "P" in joint_kinds(leg) else 100 * (k + 1) + 1
    far = [int(c) for c, info in codes.items()
           if info.get("leg") == leg["name"] and info.get("reason") == "out_of_reach"]
    return min(far) if far else NO_CONVERGENCE


def _status_error(mech: Mechanism, q, status, batch: bool) -> KernelStatusError:
    """The closed-form kernel's message of each code, with the value that passed a limit."""
    units = joint_units(mech)
    starts = np.cumsum([0] + [leg["n"] for leg in mech.manifest["legs"]])
    parts = []
    for code in sorted(set(status[status > 0].tolist())):
        msg, i = _message(mech, code), int(np.flatnonzero(status == code)[0])
        if code >= 100 and code % 10 in (3, 4):
            col = starts[code // 100 - 1] + (code // 10) % 10
            at = f" at state {i}" if batch else ""
            msg += f" ({q[i, col]:.6g} {units[col]}{at})"
        parts.append(msg)
    bad = np.flatnonzero(status)
    where = f"state(s) {bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}" if batch \
        else "this state"
    return KernelStatusError(f"newton_ik: {'; '.join(parts)} at {where}", status)


def newton_ik(mech: Mechanism, x: Any, q0: Any = None, p: Any = None, tol: float = 1e-13,
              max_iter: int = 30, errors: str = "raise") -> np.ndarray:
    """Leg coordinates from the pose x by Newton's iteration on the closure residual (eq. 4.6).

    Starts from ``q0`` (default: the legs' coordinates at the home pose, zeros for
    auto-aligned legs); a state stops when every residual is below ``tol`` times the legs'
    length scale and the step below 1e-10. The result then gets the checks of the closed-form
    ``inverse_kinematics`` kernel, with the same status codes and messages (plus the value
    that passed a limit): a crank or rail leg that does not converge is out of reach, a joint
    beyond its limit fails. Those raise KernelStatusError (as does a singular closure matrix),
    or give NaN rows with ``errors="nan"``; a leg with a stroke along it that does not
    converge raises ValueError (NaN rows with ``errors="nan"``).
    """
    _require_parallel(mech, "newton_ik")
    _check_iteration(tol, max_iter, errors)
    x = as_input("x", x, 6, "newton_ik")
    batch = x.ndim == 2
    X = np.atleast_2d(x)
    start = [v for leg in mech.manifest["legs"] for v in leg.get("q_home", [0.0] * leg["n"])]
    q = np.array(start, float) if q0 is None else as_input("q0", q0, mech.n, "newton_ik")
    if q.ndim == 2 and (not batch or len(q) != len(X)):
        raise ValueError(f"newton_ik: q0 of shape {q.shape} does not match x of shape {x.shape}")
    Q = np.array(np.broadcast_to(q, (len(X), mech.n)))
    extra = {"p": mech.parameter_input(p, "newton_ik", batch=True)} if mech.parameters else {}
    if extra and extra["p"].ndim == 1:
        extra["p"] = np.tile(extra["p"], (len(X), 1))
    elif extra and (not batch or len(extra["p"]) != len(X)):
        raise ValueError(f"newton_ik: p of shape {extra['p'].shape} does not match x of shape "
                         f"{x.shape}")
    n_res = sum(leg["m"] for leg in mech.manifest["legs"])
    res, dq = np.full((len(X), n_res), np.inf), np.full((len(X), mech.n), np.inf)
    status = np.zeros(len(X), np.int32)
    scale = max(leg["l_ref"] for leg in mech.manifest["legs"])
    live = np.ones(len(X), bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        sub = {k: np.ascontiguousarray(v[idx]) for k, v in extra.items()}
        q_next, res[idx], status[idx] = _newton_step(mech, X[idx], Q[idx], sub)
        dq[idx] = np.abs(q_next - Q[idx])
        Q[idx] = q_next
        done = (np.abs(res[idx]).max(1) < tol * scale) & (dq[idx].max(1) < 1e-10)
        live[idx[done | (status[idx] != 0)]] = False
    open_ = status == 0
    status[open_] = _leg_statuses(mech, Q[open_], res[open_], dq[open_], tol * scale)
    if errors == "nan":
        Q[status != 0] = np.nan
    elif (status == NO_CONVERGENCE).any():
        bad = np.flatnonzero(status == NO_CONVERGENCE)
        raise ValueError(f"newton_ik: no convergence in {max_iter} iterations at "
                         f"{f'state(s) {bad[:10].tolist()}' if batch else 'this state'} "
                         f"(residual {np.abs(res[bad]).max():.3e}): is the pose reachable?")
    elif status.any():
        raise _status_error(mech, Q, status, batch)
    return Q if batch else Q[0]


def _source(value: Any, size: int, name: str) -> Callable:
    if callable(value):
        return value
    const = np.zeros(size) if value is None else as_input(name, value, size, "platform_rhs")
    return lambda t, x, u: const


def platform_rhs(mech: Mechanism, F: Any = None, fE: Any = None, mE: Any = None,
                 g: Any = None, p: Any = None, record: list | None = None) -> Callable:
    """f(t, s) = [x_dot, u_dot] for scipy.integrate.solve_ivp, s = [x (6), u (6)].

    ``F`` (drive forces, one per leg), ``fE`` (frame 0), ``mE`` (frame C): None (zero), constant
    arrays or functions (t, x, u). ``g`` defaults to the spec's gravity. ``record``: if a list, each
    call appends (t, outputs of the step kernel).

    Without ``record`` only the state derivative is needed, so the lean ``step_accel`` kernel
    gives it (the same xdot, same statuses; docs/algorithms.md section 1.9); ``step`` where the
    mechanism was generated without it, or when ``record`` wants the loads.
    """
    _require_parallel(mech, "platform_rhs")
    lean = record is None and "step_accel" in mech.kernels
    step = mech.kernels["step_accel" if lean else "step"]
    F_ = _source(F, len(mech.manifest["legs"]), "F")             # one drive per leg
    fE_, mE_ = _source(fE, 3, "fE"), _source(mE, 3, "mE")
    gv = as_input("g", mech.manifest["gravity"] if g is None else g, 3, "platform_rhs")
    extra = {"p": mech.parameter_input(p, "platform_rhs")} if mech.parameters else {}

    def f(t: float, s: np.ndarray) -> np.ndarray:
        s = np.ascontiguousarray(s, dtype=np.float64)
        x, u = s[:6], s[6:]
        out = step(x, u, F_(t, x, u), fE_(t, x, u), mE_(t, x, u), gv, **extra)
        if record is not None:
            record.append((t, out))
        return out[0]

    return f


__all__ = ["newton_ik", "platform_rhs", "status_info", "joint_units", "KernelStatusError"]
