"""Docking benchmark: the compiled driver vs solve_ivp with the Python right-hand side on the
same case and tolerance (wall time per case, peak loads), campaign cases per second on 1
and 2 local workers, and what the paper's decoupled approximation (the mechanism on a base at
rest) changes in the peak loads. Run by `make bench`; numbers from one run, side by side."""

from __future__ import annotations

import dataclasses
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
    decoupled_cost(sc, sim, y0, env, samples)
    for workers in (1, 2):
        t0 = time.perf_counter()
        campaign.run(CaseRunner("apas_gough_stewart", env.names), samples, workers=workers,
                     progress=False)
        dt = time.perf_counter() - t0
        print(f"campaign of {len(samples)} cases on {workers} worker(s): {dt:.1f} s, "
              f"{len(samples) / dt:.1f} cases/s")


PEAKS = ("peak_base_force", "peak_base_moment", "peak_contact_force", "peak_stroke")


def decoupled_cost(sc, sim: DockingSim, y0: np.ndarray, env, samples: np.ndarray) -> None:
    """The paper's approximation (base_motion = "decoupled": the mechanism's equations without
    the base's angular velocity, angular acceleration and linear acceleration, its base wrench
    on the active vehicle in the same evaluation) against the exact coupled solution: peak
    loads of the nominal case and of the campaign's cases, relative difference in %."""
    approx = DockingSim(dataclasses.replace(sc, base_motion="decoupled"))
    a, _ = sim.run(y0, history=False)
    b, _ = approx.run(y0, history=False)
    print("decoupled approximation vs exact, nominal case: " + ", ".join(
        f"{k} {100 * (b[k] - a[k]) / a[k]:+.2f} %" for k in PEAKS))
    Y0 = np.array([sim.initial_state(dict(zip(env.names, map(float, row)))) for row in samples])
    ra, rb = sim.run_batch(Y0), approx.run_batch(Y0)
    both = [(x, y) for x, y in zip(ra, rb) if x["captured"] and y["captured"]]
    print(f"  over {len(samples)} campaign cases ({len(both)} captured by both; capture "
          f"differs in {sum(x['captured'] != y['captured'] for x, y in zip(ra, rb))}): "
          "|difference| median / p95 / max:")
    for k in PEAKS:
        d = np.abs([100 * (y[k] - x[k]) / x[k] for x, y in both])
        print(f"    {k}: {np.median(d):.2f} / {np.percentile(d, 95):.2f} / {d.max():.2f} %")


if __name__ == "__main__":
    main()
