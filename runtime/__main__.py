"""The main job: a docking-contact simulation on the bundled Gough-Stewart mechanism.

    mechgen demo [--backend NAME] [--out DIR] [--arms] [--mechanism NAME]
                                                                (or python -m mechgen.runtime)

Prints a summary (peak leg drive coordinates, strokes in mm or crank angles in deg, peak base
force and moment, final ring pose, integration time) and writes plots (ring pose, leg drive
coordinates, base loads) as PNG files into ``--out``.
``--arms`` also runs the serial-arm demos (UR5 in 1 g, a 7-DoF arm on a free-flying base).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from mechgen import runtime


def _fmt(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a), precision=4, suppress_small=True, max_line_width=110)


def arm_demo(backend: str) -> None:
    from scipy.integrate import solve_ivp

    arm = runtime.load("ur5_arm", backend)
    print(f"== {arm}")
    q = np.array([0.1, -1.2, 1.5, -0.4, 1.3, 0.2])
    qd = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.6])
    r, tau = arm.forward_kinematics(q)
    print(f"tool position at q = {q.tolist()}: {_fmt(r[len(arm.bodies)])} m")
    A = arm.mass_matrix(q)
    print("mass matrix A(q):\n" + _fmt(A))
    print("eigenvalues of A:", _fmt(np.linalg.eigvalsh(A)))
    Q_hold = arm.inverse_dynamics(q, np.zeros(6), np.zeros(6))
    print("torques holding the arm still in 1 g:", _fmt(Q_hold), "N m")
    qdd = arm.forward_dynamics(q, qd, Q_hold)
    print("qdd with those torques, moving at qd:", _fmt(qdd))
    # free motion under gravity (no drive): total energy must stay constant
    f = arm.rhs()
    t0 = time.perf_counter()
    sol = solve_ivp(f, (0.0, 2.0), np.concatenate([q, qd]), method="DOP853", rtol=1e-10, atol=1e-10)
    dt = time.perf_counter() - t0
    E = [_energy(arm, x) for x in sol.y.T]
    print(f"2 s of free fall: {sol.t.size} steps, {sol.nfev} rhs calls in {dt * 1e3:.1f} ms; "
          f"energy drift {abs(E[-1] - E[0]) / abs(E[0]):.2e} (relative)")
    qs = np.random.default_rng(0).uniform(-np.pi, np.pi, (100_000, 6))
    arm.mass_matrix(qs)  # first touch of the memory
    t0 = time.perf_counter()
    arm.mass_matrix(qs)
    dt = time.perf_counter() - t0
    print(f"mass matrix of 100000 states: {dt * 1e3:.1f} ms ({dt / 1e5 * 1e9:.0f} ns per state)")


def _energy(arm, x: np.ndarray) -> float:
    T, V = arm.energy(x[:arm.n], x[arm.n:])
    return float(T[0] + V[0])


def space_demo(backend: str) -> None:
    from scipy.integrate import solve_ivp

    sc = runtime.load("space_arm7", backend)
    print(f"\n== {sc}")
    p = sc.params(m_payload=150.0)
    n = sc.n
    q = np.zeros(n)
    q[6:] = [0.2, -0.3, 0.8, -1.2, 0.5, 0.3, 0.1]
    qd = np.zeros(n)
    # drive the shoulder pitch joint for 1 s: the spacecraft reacts (free-flying base)
    Q = lambda t, q, qd: np.where(np.arange(n) == 8, 40.0 * (t < 1.0), 0.0)
    f = sc.rhs(Q, p)
    t0 = time.perf_counter()
    sol = solve_ivp(f, (0.0, 3.0), np.concatenate([q, qd]), method="DOP853", rtol=1e-10, atol=1e-10)
    dt = time.perf_counter() - t0
    qe = sol.y[:n, -1]
    print(f"3 s, shoulder pitch driven at 40 N m for 1 s: {sol.nfev} rhs calls in {dt * 1e3:.1f} ms")
    print("spacecraft position drift [m]:", _fmt(qe[:3]), " attitude (y, z, x) [rad]:", _fmt(qe[3:6]))
    print("arm joints at 3 s [rad]:", _fmt(qe[6:]))


def docking_demo(backend: str, out: Path, name: str = "gough_stewart_docking") -> None:
    from mechgen.runtime import docking

    hexa = runtime.load(name, backend)
    print(f"== {hexa}")
    result = docking.simulate(hexa)
    print(docking.summary(hexa, result))
    for path in docking.plot(hexa, result, out):
        print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mechgen demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="c",
                    help="a backend the mechanisms were generated for (their manifests list "
                         "them; the bundled ones: c, python)")
    ap.add_argument("--out", type=Path, default=Path("results"), help="folder for the plots")
    ap.add_argument("--arms", action="store_true", help="also run the serial-arm demos")
    ap.add_argument("--mechanism", default="gough_stewart_docking",
                    help="bundled parallel mechanism of the docking demo (e.g. hunt_rus_docking)")
    args = ap.parse_args(argv)
    for name in [args.mechanism] + (["ur5_arm", "space_arm7"] if args.arms else []):
        try:
            available = runtime.available_backends(name)
        except ValueError as e:
            ap.error(str(e))
        if args.backend not in available:
            ap.error(f"argument --backend: {name} has no backend {args.backend!r}; available: "
                     f"{', '.join(available)}")
    docking_demo(args.backend, args.out, args.mechanism)
    if args.arms:
        print()
        arm_demo(args.backend)
        space_demo(args.backend)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
