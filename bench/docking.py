"""Docking benchmark: the compiled driver vs solve_ivp with the Python right-hand side on the
same case and tolerance (wall time per case, peak loads), and campaign cases per second on 1
and 2 local workers. Run by `make bench`; numbers from one run, side by side."""

from __future__ import annotations

import time

import numpy as np

from mechgen.runtime import campaign
from mechgen.runtime.docking import reference, scenario as S
from mechgen.runtime.docking.csim import DockingSim
from mechgen.runtime.docking.report import CaseRunner


def main() -> None:
    sc = S.load("apas_gough_stewart")
    sim = DockingSim(sc)
    y0 = sim.initial_state()
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        r, _ = sim.run(y0, history=False)
        best = min(best, time.perf_counter() - t0)
    ref = reference.run(sim, y0)
    print(f"one case ({sc.name}, rtol {sc.rtol}): compiled {best * 1e3:.1f} ms "
          f"({r['nfev']} rhs), solve_ivp + Python rhs {ref['seconds'] * 1e3:.0f} ms "
          f"({ref['nfev']} rhs): ratio {ref['seconds'] / best:.0f}x")
    for k in ("peak_base_force", "peak_base_moment", "peak_contact_force"):
        print(f"  {k}: {r[k]:.6f} vs {ref[k]:.6f} (relative {abs(r[k] - ref[k]) / ref[k]:.1e})")
    print(f"  capture time: {r['t_capture']:.9f} vs {ref['t_capture']:.9f}")
    env = campaign.Envelope.from_dict({**sc.envelope, "cases": 60})
    samples = campaign.sample(env)
    for workers in (1, 2):
        t0 = time.perf_counter()
        campaign.run(CaseRunner("apas_gough_stewart", env.names), samples, workers=workers,
                     progress=False)
        dt = time.perf_counter() - t0
        print(f"campaign of {len(samples)} cases on {workers} worker(s): {dt:.1f} s, "
              f"{len(samples) / dt:.1f} cases/s")


if __name__ == "__main__":
    main()
