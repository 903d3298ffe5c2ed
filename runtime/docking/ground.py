"""Docking-contact simulation on a parallel docking mechanism (the README's main job).

Capture: the active vehicle has been latched to the docking ring C, which therefore starts
with the vehicle's misalignment (offset and tilt from the home pose) and approach velocity;
the legs' spring-dampers then attenuate the motion. The base (the station) is fixed; the
mechanism is tested on the ground, in 1 g. The generated ``step`` kernel gives the state
derivative and, at every output time, the leg strokes and the loads on the base.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mechgen.runtime.mechanism import Mechanism
from mechgen.runtime.platform import joint_kinds, platform_rhs


@dataclass
class Capture:
    offset: tuple[float, float, float] = (0.01, -0.005, 0.0)      # m, from home
    tilt: tuple[float, float, float] = (0.017, 0.0, 0.01)           # psi_y, psi_z, psi_x, rad
    velocity: tuple[float, float, float] = (-0.03, 0.02, -0.25)   # m/s, frame 0
    omega: tuple[float, float, float] = (0.02, -0.03, 0.01)        # rad/s, frame C
    duration: float = 3.0                                           # s


def simulate(mech: Mechanism, cap: Capture = Capture(), samples: int = 601,
             rtol: float = 1e-9) -> dict:
    from scipy.integrate import solve_ivp

    home = np.array(mech.manifest["home"])
    x0 = home + np.concatenate([cap.offset, cap.tilt])
    s0 = np.concatenate([x0, cap.velocity, cap.omega])
    f = platform_rhs(mech)
    t_eval = np.linspace(0.0, cap.duration, samples)
    t0 = time.perf_counter()
    sol = solve_ivp(f, (0.0, cap.duration), s0, method="DOP853", rtol=rtol, atol=rtol * 1e-2,
                    t_eval=t_eval)
    seconds = time.perf_counter() - t0
    if not sol.success:
        raise RuntimeError(f"docking simulation failed: {sol.message}")
    states = np.ascontiguousarray(sol.y.T)
    z = np.zeros((len(t_eval), 3))
    F = np.zeros((len(t_eval), 6))
    g = np.tile(mech.manifest["gravity"], (len(t_eval), 1))
    p = np.tile(mech.params(), (len(t_eval), 1))
    out = mech.step(states[:, :6].copy(), states[:, 6:].copy(), F, z, z.copy(), g, p=p)
    names = [o[0] for o in mech.kernels["step"].outputs]
    res = dict(zip(names, out))
    strokes = _strokes(mech, res["q"])
    return {"t": t_eval, "x": states[:, :6], "u": states[:, 6:], "strokes": strokes,
            "base_force": res["base_force"], "base_moment": res["base_moment"],
            "seconds": seconds, "nfev": sol.nfev, "steps": len(sol.t)}


def _strokes(mech: Mechanism, q: np.ndarray) -> np.ndarray:
    cols, i = [], 0
    for leg in mech.manifest["legs"]:
        cols.append(i + leg["drive"])
        i += leg["n"]
    return q[:, cols]


def drive_units(mech: Mechanism) -> list[tuple[str, str, float, str]]:
    """(leg, drive joint, factor, unit) of every leg, to show its drive coordinate: a
    prismatic joint's (m) in mm, a revolute joint's (rad) in deg."""
    out = []
    for leg in mech.manifest["legs"]:
        j = leg["drive"]
        joint = leg["joints"][j][len(leg["name"]) + 1:]
        if joint_kinds(leg)[j] == "P":
            out.append((leg["name"], joint, 1000.0, "mm"))
        else:
            out.append((leg["name"], joint, 180.0 / np.pi, "deg"))
    return out


def _peak_drives(mech: Mechanism, strokes: np.ndarray) -> str:
    """peak |stroke| per leg: leg1 93.6 mm, ... (the joint with each leg when they differ)."""
    shown = drive_units(mech)
    peaks = np.abs(strokes).max(0)
    joints = {joint for _, joint, _, _ in shown}
    same = len(joints) == 1
    head = f"peak |{joints.pop()}| per leg: " if same else "peak |drive coordinate| per leg: "
    return head + ", ".join(f"{leg}{'' if same else ' ' + joint} {v * f:.1f} {unit}"
                            for (leg, joint, f, unit), v in zip(shown, peaks))


def summary(mech: Mechanism, r: dict) -> str:
    fmax = np.linalg.norm(r["base_force"], axis=1)
    mmax = np.linalg.norm(r["base_moment"], axis=1)
    xf = r["x"][-1]
    lines = [
        f"docking capture on {mech.name}: {r['t'][-1]:.1f} s simulated in {r['seconds']:.3f} s "
        f"({r['nfev']} step-kernel calls, DOP853)",
        _peak_drives(mech, r["strokes"]),
        f"peak base force  |F| = {fmax.max():9.1f} N    at t = {r['t'][fmax.argmax()]:.3f} s",
        f"peak base moment |M| = {mmax.max():9.1f} N m  at t = {r['t'][mmax.argmax()]:.3f} s",
        "final ring pose: position " + np.array2string(xf[:3], precision=4) + " m, angles "
        + np.array2string(np.degrees(xf[3:]), precision=3) + " deg",
    ]
    return "\n".join(lines)


def plot(mech: Mechanism, r: dict, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    t = r["t"]
    files = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)

    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, nm in enumerate(("x_C", "y_C", "z_C")):
        ax[0].plot(t, r["x"][:, i] * 1000, label=nm)
    ax[0].set_ylabel("position, mm")
    for i, nm in enumerate(("psi_y", "psi_z", "psi_x")):
        ax[1].plot(t, np.degrees(r["x"][:, 3 + i]), label=nm)
    ax[1].set_ylabel("angle, deg")
    ax[1].set_xlabel("t, s")
    for a in ax:
        a.legend(loc="upper right")
        a.grid(alpha=0.3)
    ax[0].set_title(f"{mech.name}: ring pose")
    save(fig, "ring_pose.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    shown = drive_units(mech)
    for k, (leg, joint, f, unit) in enumerate(shown):
        ax.plot(t, r["strokes"][:, k] * f, label=f"{leg} {joint}, {unit}")
    units = sorted({unit for *_, unit in shown})
    ax.set_ylabel(f"drive coordinate, {' or '.join(units)}")
    ax.set_xlabel("t, s")
    ax.legend(loc="upper right", ncol=3)
    ax.grid(alpha=0.3)
    ax.set_title(f"{mech.name}: leg drive coordinates")
    save(fig, "leg_strokes.png")

    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, c in enumerate("xyz"):
        ax[0].plot(t, r["base_force"][:, i], label=f"F_{c}")
        ax[1].plot(t, r["base_moment"][:, i], label=f"M_{c}")
    ax[0].set_ylabel("force on base, N")
    ax[1].set_ylabel("moment on base, N m")
    ax[1].set_xlabel("t, s")
    for a in ax:
        a.legend(loc="upper right")
        a.grid(alpha=0.3)
    ax[0].set_title(f"{mech.name}: loads on the base (frame 0, about O_0)")
    save(fig, "base_loads.png")
    return files
