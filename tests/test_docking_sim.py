"""The docking simulation: two free vehicles, the mechanism on its moving base, contact and
latches; the compiled driver against physics and against the solve_ivp reference path."""

from __future__ import annotations

import copy
import tomllib

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import campaign
from mechgen.runtime.docking import reference, scenario as S
from mechgen.runtime.docking.csim import DockingSim
from mechgen.runtime.docking.report import CaseRunner, conservation

BUNDLED = S.SCENARIOS / "apas_gough_stewart.toml"


def base_dict() -> dict:
    return tomllib.loads(BUNDLED.read_text())


def sim_of(d: dict, where: str = "test.toml") -> DockingSim:
    return DockingSim(S.from_dict(d, where))


def _zeroable(interface: str) -> list[str]:
    """The interface's friction and damping parameters."""
    return [n for n in runtime.load(interface).manifest["parameters"]
            if n.startswith(("mu", "d_", "c_")) or "damp" in n or "friction" in n]


def isolated(duration: float, after_capture: float) -> dict:
    """The bundled scenario with no external force or moment (no thrust, no attitude hold,
    zero g) and tight tolerances."""
    d = base_dict()
    d["scenario"].update(duration=duration, after_capture=after_capture)
    d["passive"].update(attitude_kp=0.0, attitude_kd=0.0)
    d["active"]["thrust"] = 0.0
    d["integrator"].update(rtol=1e-10, atol_position=1e-12)
    return d


@pytest.fixture(scope="module")
def nominal():
    return sim_of(base_dict())


def test_momentum_and_energy_balance_through_contact_and_capture():
    """No external force or moment: momentum and angular momentum of both vehicles, the legs
    and the ring stay constant through contact and capture; the energy (kinetic + elastic +
    what dampers, end stops and contact took out) too."""
    sim = sim_of(isolated(3.0, 1.0))
    r, hist = sim.run(sim.initial_state())
    assert r["captured"], r["outcome"]
    c = conservation(r)
    assert c["momentum_drift"] < 1e-8
    assert c["angular_momentum_drift"] < 1e-8
    assert c["energy_drift"] < 1e-7
    assert r["energy_absorbed"] > 0.02 * r["E0"]        # dampers and contact did work
    # along the whole history too (grid of dt_out)
    P, H = hist[:, 20:23], hist[:, 23:26]
    assert np.max(np.abs(P - P[0])) < 1e-8 * np.linalg.norm(P[0])
    E = hist[:, 17] + hist[:, 18] + hist[:, 19]
    E[hist[:, 16] > 0] -= r["E_latch"]              # the latches closed stretched
    assert np.max(np.abs(E - E[0])) < 1e-7 * E[0]


def test_with_elastic_contact_and_no_dampers_energy_is_kept_not_absorbed():
    d = isolated(1.5, 0.3)
    d["interface"]["parameters"] = {n: 0.0 for n in _zeroable(d["scenario"]["interface"])}
    d["mechanism"]["parameters"] = {"preload": 0.0, "c_leg": 0.0}
    sim = sim_of(d)
    r, hist = sim.run(sim.initial_state())
    assert r["t_contact"] == r["t_contact"]              # contact happened
    E = hist[:, 17] + hist[:, 18] - np.where(hist[:, 16] > 0, r["E_latch"], 0.0)
    absorbed = hist[-1, 19]
    # only the universal joints' small dampers (and the latch dampers) remain
    assert np.max(np.abs(E + hist[:, 19] - E[0])) < 1e-7 * E[0]
    assert absorbed < 0.05 * E[0]


def test_compiled_driver_agrees_with_solve_ivp_on_capture_time_and_peak_loads():
    d = base_dict()
    d["scenario"].update(duration=2.5, after_capture=0.5)
    d["integrator"].update(rtol=1e-10, atol_position=1e-12)
    sim = sim_of(d)
    y0 = sim.initial_state()
    r, _ = sim.run(y0, history=False)
    ref = reference.run(sim, y0)
    assert r["captured"] and ref["captured"]
    assert abs(r["t_capture"] - ref["t_capture"]) < 1e-6
    for k in ("peak_base_force", "peak_base_moment", "peak_contact_force"):
        assert abs(r[k] - ref[k]) <= 1e-6 * ref[k], (k, r[k], ref[k])


def test_head_on_aligned_docking_loads_every_leg_the_same():
    d = isolated(2.0, 0.5)
    d["initial"] = {"closing_velocity": 0.1, "start_gap": 0.01}
    sim = sim_of(d)
    r, _ = sim.run(sim.initial_state())
    strokes = [r[f"peak_stroke_{leg['name']}"] for leg in sim.mech.manifest["legs"]]
    assert max(strokes) > 1e-4
    assert max(strokes) - min(strokes) < 1e-6 * max(strokes)


def test_a_batch_gives_the_same_results_as_single_runs(nominal):
    Y0 = np.array([nominal.initial_state({"lateral": 0.02 * k}) for k in range(3)])
    batch = nominal.run_batch(Y0)
    for y0, b in zip(Y0, batch):
        single, _ = nominal.run(y0, history=False)
        assert single["t_capture"] == b["t_capture"] or (single["t_capture"] != single["t_capture"])
        assert single["peak_base_force"] == b["peak_base_force"]


def test_a_failing_case_is_recorded_and_the_campaign_goes_on():
    env = campaign.Envelope.from_dict({"method": "uniform", "cases": 3, "seed": 1, "variables": {
        "lateral": {"low": 0.0, "high": 0.05}}})
    samples = campaign.sample(env)
    samples[1, 0] = -1.0                      # a negative lateral offset is refused
    results = campaign.run(CaseRunner(str(BUNDLED), env.names), samples, workers=1,
                           progress=False)
    assert [r["status"] for r in results] == ["ok", "error", "ok"]
    assert "lateral" in results[1]["error"]


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["active"].update(mass=-1.0), "active.mass"),
    (lambda d: d["passive"].update(inertia=[1, 1, -1, 0, 0, 0]), "passive.inertia"),
    (lambda d: d["active"].update(colour="red"), "active"),
    (lambda d: d.update(extra={}), "extra"),
    (lambda d: d["initial"].update(closing_velocity=-0.1), "initial.closing_velocity"),
    (lambda d: d["integrator"].update(rtol="tight"), "integrator.rtol"),
    (lambda d: d["scenario"].pop("mechanism"), "scenario.mechanism"),
    (lambda d: d["passive"].update(fixed=True), "passive.fixed"),
])
def test_bad_scenario_input_names_the_field(edit, field):
    d = base_dict()
    edit(d)
    with pytest.raises(S.ScenarioError, match=field.replace(".", r"\.")):
        S.from_dict(d, "bad.toml")


def test_an_envelope_with_min_above_max_names_the_variable():
    d = copy.deepcopy(base_dict()["envelope"])
    d["variables"]["lateral"] = {"low": 0.2, "high": 0.1}
    with pytest.raises(campaign.EnvelopeError, match="lateral"):
        campaign.Envelope.from_dict(d)
