"""Suspension demo on the bundled double wishbone (python -m mechgen.runtime.linkage_demo).

1. Kinematic curves: the lower arm is stepped through +-0.12 rad (continuation, the rack held):
   wheel travel (wheel centre height from the reference pose) against camber and toe of the
   wheel's spin axis (the upright's y axis at the reference pose).
   Conventions (left wheel, x forward, y left, z up): camber > 0 when the top of the wheel leans
   outward; toe > 0 toe-in (the front of the wheel turned inward).
2. A bump: the lower arm follows a half-sine (0.05 m of wheel travel, 0.1 s); the strut's force
   (spring + damper compression, the `springs` kernel) and the torque the wheel must put on the lower arm
   (inverse_dynamics) over time.
Writes suspension.png; prints the numbers.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from mechgen import runtime
from mechgen.runtime import linkage as lk


def walk(mech, q, name: str, target: float, step: float = 0.02) -> np.ndarray:
    j = mech.coordinates.index(name)
    q = np.array(q, float)
    start = q[j]
    count = max(1, math.ceil(abs(target - start) / step))
    for i in range(1, count + 1):
        q[j] = start + (target - start) * i / count
        q = lk.assemble(mech, q)
    return q


def wheel_angles(mech, q) -> tuple[float, float, float]:
    """(wheel centre z, camber deg, toe deg)."""
    n = mech.n
    r, _, _, R, _, _ = mech.kinematics(q, np.zeros(n), np.zeros(n))
    up = mech.manifest["bodies"].index("upright")
    a = R[up] @ np.array([0.0, 1.0, 0.0])
    zc = r[mech.manifest["points"].index("wheel_centre")][2]
    return zc, -math.degrees(math.atan2(a[2], a[1])), math.degrees(math.atan2(a[0], a[1]))


def curves(mech) -> dict:
    q_ref = np.array(mech.manifest["q_ref"])
    z0 = wheel_angles(mech, q_ref)[0]
    out = {"travel": [], "camber": [], "toe": []}
    for side in (-0.12, 0.12):
        q = q_ref.copy()
        for target in np.linspace(0.0, side, 13)[1:]:
            q = walk(mech, q, "lower_arm", target)
            z, camber, toe = wheel_angles(mech, q)
            out["travel"].append(z - z0)
            out["camber"].append(camber)
            out["toe"].append(toe)
    order = np.argsort(out["travel"])
    return {k: np.asarray(v)[order] for k, v in out.items()}


def bump(mech, height: float = 0.05, duration: float = 0.1, steps: int = 200) -> dict:
    q = np.array(mech.manifest["q_ref"])
    j = mech.coordinates.index("lower_arm")
    _, H = mech.velocity(q, np.zeros(2))
    k = mech.manifest["independent"].index("lower_arm")
    wc = mech.manifest["points"].index("wheel_centre")
    # wheel centre height per radian of the lower arm at the reference pose
    n = mech.n
    qd_unit, _ = mech.velocity(q, np.eye(2)[k])
    dz = mech.kinematics(q, qd_unit, np.zeros(n))[1][wc][2]
    amp = height / dz
    t = np.linspace(0.0, duration, steps + 1)
    w = math.pi / duration
    out = {"t": t, "strut_force": [], "arm_torque": [], "travel": []}
    z0 = wheel_angles(mech, q)[0]
    for tl in t:
        th, thd, thdd = amp * math.sin(w * tl), amp * w * math.cos(w * tl), -amp * w * w * math.sin(w * tl)
        q[j] = th
        q = lk.assemble(mech, q)
        v = np.zeros(2)
        v[k] = thd
        qd, _ = mech.velocity(q, v)
        a = np.zeros(2)
        a[k] = thdd
        tau_i = mech.inverse_dynamics(q, qd, a)[0]
        out["strut_force"].append(-mech.springs(q, qd)[0][2])     # compression
        out["arm_torque"].append(tau_i[k])
        out["travel"].append(wheel_angles(mech, q)[0] - z0)
    return {key: np.asarray(val) for key, val in out.items()}


def plot(c: dict, b: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    ax[0].plot(1e3 * c["travel"], c["camber"])
    ax[0].set(xlabel="wheel travel (mm, + bump)", ylabel="camber (deg)", title="camber curve")
    ax[1].plot(1e3 * c["travel"], c["toe"])
    ax[1].set(xlabel="wheel travel (mm, + bump)", ylabel="toe-in (deg)", title="bump steer")
    ax[2].plot(1e3 * b["t"], 1e-3 * b["strut_force"], label="strut compression (kN)")
    ax[2].plot(1e3 * b["t"], 1e2 * b["travel"], label="wheel travel (cm)")
    ax[2].set(xlabel="t (ms)", title="half-sine bump, 50 mm in 100 ms")
    ax[2].legend()
    for a in ax:
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mechgen.runtime.linkage_demo",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="folder for suspension.png")
    args = ap.parse_args(argv)
    mech = runtime.load("double_wishbone")
    print(f"{mech.name}: {mech.n} tree coordinates, {len(mech.manifest['cut_joints'])} cut "
          f"joints, {mech.manifest['dof']} DoF (independent: "
          f"{', '.join(mech.manifest['independent'])})")
    c = curves(mech)
    print(f"wheel travel {1e3 * c['travel'][0]:+.0f} .. {1e3 * c['travel'][-1]:+.0f} mm: camber "
          f"{c['camber'][0]:+.2f} .. {c['camber'][-1]:+.2f} deg, toe-in {c['toe'][0]:+.3f} .. "
          f"{c['toe'][-1]:+.3f} deg")
    b = bump(mech)
    print(f"bump: strut compression {1e-3 * b['strut_force'].min():.2f} .. "
          f"{1e-3 * b['strut_force'].max():.2f} kN, lower-arm torque peak "
          f"{np.abs(b['arm_torque']).max():.0f} N m")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(c, b, out / "suspension.png")
    print(f"wrote {out / 'suspension.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
