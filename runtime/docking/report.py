"""One docking case in words and plots; the campaign's case function."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mechgen.runtime.docking.csim import HISTORY_COLUMNS, DockingSim
from mechgen.runtime.docking.scenario import load, with_mechanism

SCALARS = ("outcome", "code", "captured", "t_contact", "t_capture", "t_final", "peak_stroke",
           "peak_base_force", "peak_base_moment", "peak_contact_force", "peak_stop_force",
           "energy_absorbed", "min_gap", "nfev", "steps", "rejected")


def conservation(r: dict) -> dict:
    """Relative drift of momentum, angular momentum and energy between the first and the last
    state of a case; the energy counts what dampers, stops and contact took out, and the
    elastic energy the latches brought in as they closed stretched."""
    def rel(a, b):
        scale = max(np.linalg.norm(a), 1e-300)
        return float(np.linalg.norm(np.asarray(b) - np.asarray(a)) / scale)
    return {"momentum_drift": rel(r["P0"], r["P1"]), "angular_momentum_drift": rel(r["H0"], r["H1"]),
            "energy_drift": abs(r["E1"] - r["E_latch"] - r["E0"]) / max(abs(r["E0"]), 1e-300)}


def describe(sim: DockingSim, r: dict, seconds: float | None = None) -> str:
    sc = sim.sc
    legs = [leg["name"] for leg in sim.mech.manifest["legs"]]
    t = lambda v: "-" if v is None or math.isnan(v) else f"{v:.3f} s"
    lines = [f"docking {sc.name}: {sc.mechanism} + {sc.interface}, active "
             f"{'fixed' if sc.active.fixed else f'{sc.active.mass / 1000:.1f} t'}, passive "
             f"{sc.passive.mass / 1000:.1f} t",
             f"outcome: {r['outcome']}" + (f" (code {r['code']})" if r["code"] else ""),
             f"first contact {t(r['t_contact'])}, capture {t(r['t_capture'])}, "
             f"end {t(r['t_final'])}",
             "peak |stroke| per leg: " + ", ".join(
                 f"{leg} {r[f'peak_stroke_{leg}'] * 1000:.1f} mm" for leg in legs),
             f"peak base force {r['peak_base_force']:.1f} N, moment {r['peak_base_moment']:.1f} "
             f"N m; peak contact force {r['peak_contact_force']:.1f} N; peak end-stop force "
             f"{r['peak_stop_force']:.1f} N",
             f"energy absorbed {r['energy_absorbed']:.2f} J; {r['steps']} steps "
             f"({r['rejected']} rejected), {r['nfev']} right-hand sides"
             + (f", {seconds * 1000:.1f} ms" if seconds is not None else "")]
    return "\n".join(lines)


def plot_history(sim: DockingSim, hist: np.ndarray, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    col = {n: i for i, n in enumerate(HISTORY_COLUMNS)}
    t = hist[:, 0]
    fig, ax = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    for k, leg in enumerate(sim.mech.manifest["legs"]):
        ax[0].plot(t, hist[:, 27 + k] * 1000, label=leg["name"])
    ax[0].set_ylabel("stroke, mm")
    ax[0].legend(ncol=3, fontsize=8)
    for c in ("base_fx", "base_fy", "base_fz"):
        ax[1].plot(t, hist[:, col[c]], label=c)
    ax[1].set_ylabel("force on base, N")
    ax[1].legend(fontsize=8)
    for c in ("base_mx", "base_my", "base_mz"):
        ax[2].plot(t, hist[:, col[c]], label=c)
    ax[2].set_ylabel("moment on base, N m")
    ax[2].legend(fontsize=8)
    ax[3].plot(t, hist[:, col["f_normal"]], label="contact normal force, N")
    ax3 = ax[3].twinx()
    ax3.plot(t, hist[:, col["gap"]] * 1000, "k:", label="gap, mm")
    ax3.set_ylabel("gap, mm")
    ax[3].set_ylabel("contact force, N")
    ax[3].set_xlabel("t, s")
    lat = np.flatnonzero(hist[:, col["latched"]] > 0)
    for a in ax:
        a.grid(alpha=0.3)
        if len(lat):
            a.axvline(t[lat[0]], color="g", lw=0.8)
    ax[0].set_title(f"{sim.sc.name}: one docking (green: capture)")
    fig.tight_layout()
    path = out / "docking_case.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


# --- the campaign's case function ------------------------------------------------------------
_SIMS: dict[str, DockingSim] = {}


class CaseRunner:
    """Picklable: runs a batch of campaign cases of a scenario (compiled once per process),
    optionally on another mechanism than the scenario's."""

    def __init__(self, scenario: str, variables: list[str], mechanism: str | None = None) -> None:
        self.scenario, self.variables = str(scenario), list(variables)
        self.mechanism = mechanism

    def sim(self) -> DockingSim:
        key = f"{self.scenario}\0{self.mechanism}"
        if key not in _SIMS:
            sc = load(self.scenario)
            if self.mechanism:
                sc, _ = with_mechanism(sc, self.mechanism)
            _SIMS[key] = DockingSim(sc)
        return _SIMS[key]

    def __call__(self, ids: np.ndarray, samples: np.ndarray) -> list[dict]:
        sim = self.sim()
        Y0 = np.array([sim.initial_state(dict(zip(self.variables, map(float, row))))
                       for row in samples])
        out = []
        for r in sim.run_batch(Y0):
            row = {k: r[k] for k in SCALARS}
            row["captured"] = int(row["captured"])
            row.update(conservation(r))
            out.append(row)
        return out
