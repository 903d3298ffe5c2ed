"""``mechgen dock [SCENARIO]``: one detailed docking and a Monte-Carlo campaign.

    mechgen dock                                  # the bundled scenario apas_gough_stewart
    mechgen dock my_scenario.toml --cases 1000 --workers 2
    mechgen dock --mechanism hunt_rus_docking     # another parallel mechanism
    mechgen dock --scheduler local                # the campaign on a Dask LocalCluster
    mechgen dock --scheduler tcp://host:8786      # ... or on a running Dask scheduler
    mechgen dock --case 17                        # re-run case 17 of the campaign in detail
    mechgen dock ground_test                      # the 1 g ground test (fixed base, no campaign)

Writes to --out: docking_case.png (time histories of the detailed case), campaign.csv (one
row per case), capture_map.png, peak_loads.png.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from mechgen.runtime import campaign
from mechgen.runtime.docking import scenario as scenario_mod
from mechgen.runtime.docking.csim import DockingSim
from mechgen.runtime.docking.report import CaseRunner, conservation, describe, plot_history

QUANTITIES = ["t_capture", "peak_stroke", "peak_base_force", "peak_base_moment",
              "peak_contact_force", "energy_absorbed"]


def _scenario(args) -> tuple[scenario_mod.Scenario, str]:
    sc = scenario_mod.load(args.scenario)
    if args.mechanism:
        sc, dropped = scenario_mod.with_mechanism(sc, args.mechanism)
        if dropped:
            print(f"{args.mechanism} has no {', '.join(dropped)}: the scenario's settings of "
                  f"those are not used")
    return sc, args.scenario


def _envelope(sc: scenario_mod.Scenario, args) -> campaign.Envelope:
    if not sc.envelope:
        raise scenario_mod.ScenarioError(f"{sc.source}: no [envelope] for a campaign")
    d = dict(sc.envelope)
    if args.cases is not None:
        d["cases"] = args.cases
    if args.seed is not None:
        d["seed"] = args.seed
    env = campaign.Envelope.from_dict(d)
    scenario_mod.case_variables(sc, {n: 0.0 for n in env.names})   # names checked
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mechgen dock", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", default="apas_gough_stewart",
                    help="scenario file, or the name of a bundled one")
    ap.add_argument("--mechanism", help="a bundled or generated parallel mechanism instead of "
                                        "the scenario's")
    ap.add_argument("--cases", type=int, help="campaign size (default: the envelope's)")
    ap.add_argument("--seed", type=int, help="campaign seed (default: the envelope's)")
    ap.add_argument("--workers", type=int, help="local processes (default: all cores)")
    ap.add_argument("--scheduler", help="'local' (a Dask LocalCluster) or a Dask scheduler "
                                        "address")
    ap.add_argument("--case", type=int, help="re-run this campaign case in detail, no campaign")
    ap.add_argument("--no-campaign", action="store_true", help="only the detailed case")
    ap.add_argument("--out", type=Path, default=Path("results"))
    args = ap.parse_args(argv)
    try:
        sc, source = _scenario(args)
        t0 = time.perf_counter()
        sim = DockingSim(sc)
        print(f"compiled the docking driver for {sc.mechanism} + {sc.interface} "
              f"({time.perf_counter() - t0:.1f} s, cached)")
        values = None
        env = None
        if args.case is None and not args.no_campaign and not sc.envelope:
            print(f"{sc.source} has no [envelope]: the detailed case only, no campaign")
            args.no_campaign = True
        if args.case is not None or not args.no_campaign:
            env = _envelope(sc, args)
        if args.case is not None:
            samples = campaign.sample(env)
            if not 0 <= args.case < len(samples):
                ap.error(f"--case: {args.case} not in 0..{len(samples) - 1}")
            values = dict(zip(env.names, samples[args.case]))
            print(f"case {args.case}: " + ", ".join(f"{k} = {v:.4g}" for k, v in values.items()))
        y0 = sim.initial_state(values)
        t0 = time.perf_counter()
        r, hist = sim.run(y0)
        seconds = time.perf_counter() - t0
        print(describe(sim, r, seconds))
        cons = conservation(r)
        if sc.active.fixed:
            print("conservation: not checked (the base is fixed: the stand takes momentum and "
                  "gravity does work)")
        else:
            print("conservation (first -> last state): momentum {momentum_drift:.2e}, angular "
                  "momentum {angular_momentum_drift:.2e}, energy incl. absorbed "
                  "{energy_drift:.2e}".format(**cons)
                  + ("  (external: thrust, attitude control or gravity act)"
                     if sc.active.thrust or sc.passive.attitude_kp or sc.passive.attitude_kd
                     or any(sc.gravity) else ""))
        for p in plot_history(sim, hist, args.out):
            print(f"wrote {p}")
        if args.case is not None or args.no_campaign:
            return 0
        return run_campaign(sc, source, env, args)
    except (scenario_mod.ScenarioError, campaign.EnvelopeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run_campaign(sc, source: str, env: campaign.Envelope, args) -> int:
    samples = campaign.sample(env)
    runner = CaseRunner(source, env.names, args.mechanism)
    print(f"\ncampaign: {len(samples)} cases ({env.method}, seed {env.seed}) over "
          + ", ".join(env.names))
    t0 = time.perf_counter()
    results = campaign.run(runner, samples, workers=args.workers, scheduler=args.scheduler)
    seconds = time.perf_counter() - t0
    table = campaign.to_table(results, samples, env)
    args.out.mkdir(parents=True, exist_ok=True)
    path = campaign.write_csv(table, args.out / "campaign.csv")
    summary = campaign.summarise(table, success="captured", quantities=QUANTITIES)
    print(campaign.format_summary(summary))
    print(f"{len(samples)} cases in {seconds:.1f} s ({len(samples) / seconds:.1f} cases/s)")
    worst = campaign.worst_cases(table, "peak_base_force", 3)
    print("worst peak base force: cases " + ", ".join(map(str, worst))
          + f" (re-run one: mechgen dock {args.scenario} --case {worst[0] if len(worst) else 0}"
          + (f" --mechanism {args.mechanism})" if args.mechanism else ")"))
    print(f"wrote {path}")
    x = "lateral" if "lateral" in env.names else env.names[0]
    y = "closing_velocity" if "closing_velocity" in env.names else env.names[-1]
    for p in [campaign.plot_capture_map(table, x, y, "captured", args.out / "capture_map.png"),
              campaign.plot_histograms(table, ["peak_stroke", "peak_base_force",
                                               "peak_base_moment", "peak_contact_force"],
                                       args.out / "peak_loads.png")]:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
