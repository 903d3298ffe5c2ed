"""The docking simulation: two free vehicles, the mechanism on its moving base, contact and
latches; the compiled driver against physics and against the solve_ivp reference path."""

from __future__ import annotations

import copy
import dataclasses
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


def one_dof_scenario(v0: float, m_A: float) -> dict:
    """Head-on, aligned, started latched (the ring held to the passive unit by stiff latches,
    no contact damping or friction), an immovable passive vehicle, a free active vehicle
    closing at v0, zero g, no thrust: the attenuation alone."""
    d = base_dict()
    d["scenario"].update(start_latched=True, duration=3.0, after_capture=3.0)
    d["active"].update(mass=m_A, com=[0, 0, -0.5], inertia=[400, 400, 300, 0, 0, 0],
                       thrust=0.0)
    d["passive"].update(mass=1e12, inertia=[1e15, 1e15, 1e15, 0, 0, 0], attitude_kp=0.0,
                        attitude_kd=0.0)
    d["interface"]["parameters"] = {"mu_petal": 0.0, "mu_ring": 0.0, "d_ring": 0.0,
                                    "k_latch": 1e7, "c_latch": 0.0}
    d["initial"] = {"closing_velocity": v0}
    d["integrator"].update(rtol=1e-10, atol_position=1e-12, dt_out=0.001)
    return d


def one_dof_system(sim: DockingSim, m_A: float) -> tuple[float, float, float]:
    """(m, c, k) of the axial 1-DoF system at the home pose, from the mechanism's kernels:
    k = d^2 V / dz^2 (the legs' springs, energy kernel), c = damping power at a unit axial
    rate (every damper of the legs), m = m_A + the mechanism's kinetic energy x 2 when the
    base moves at 1 m/s along z under a ring at rest (the legs' bodies and the ball screws'
    reflected inertia)."""
    mech, p = sim.mech, sim.p_mech
    home, z3, ez = np.array(mech.manifest["home"], float), np.zeros(3), np.array([0, 0, 1.0])

    def V(dz):
        x = home.copy()
        x[2] += dz
        return mech.energy(x, np.zeros(6), z3, p=p)[1][0]

    h = 1e-4
    k = (V(h) - 2 * V(0.0) + V(-h)) / h ** 2
    names = [o[0] for o in mech.kernels["coupled_step"].outputs]
    out = dict(zip(names, mech.coupled_step(home, np.r_[ez, z3], np.zeros(6), z3, z3, z3, z3,
                                            z3, p=p)))
    c = out["damping_power"][0]
    T = mech.momentum(home, np.r_[-ez, z3], z3, ez, p=p)[2][0]
    return m_A + 2 * T, c, k


def test_head_on_latched_axial_response_is_the_one_dof_spring_damper():
    """The ring held to an immovable passive vehicle, the active vehicle closing at v0: the
    stroke is the 1-DoF spring-damper m x'' + c x' + k x = 0, x(0) = 0, x'(0) = -v0, with m the
    active vehicle plus the mechanism's axial mass (a light vehicle, so that the legs and the
    screws' reflected inertia, 15 % of m, show), while the motion is small (linear)."""
    v0, m_A = 0.01, 500.0
    sim = sim_of(one_dof_scenario(v0, m_A))
    m, c, k = one_dof_system(sim, m_A)
    assert m - m_A > 0.1 * m_A                                 # the mechanism's share shows
    r, hist = sim.run(sim.initial_state())
    assert r["outcome"] == "captured"
    t, x = hist[:, 0], hist[:, 46] - hist[0, 46]               # the ring's z in frame 0
    w0, zeta = np.sqrt(k / m), c / (2 * np.sqrt(k * m))
    wd = w0 * np.sqrt(1 - zeta ** 2)
    xa = -(v0 / wd) * np.exp(-zeta * w0 * t) * np.sin(wd * t)
    peak = np.max(np.abs(xa))
    assert abs(np.min(x) - np.min(xa)) < 1e-3 * peak          # peak stroke
    assert np.max(np.abs(x - xa)) < 5e-3 * peak               # the whole history (3 s)
    strokes = [r[f"peak_stroke_{leg['name']}"] for leg in sim.mech.manifest["legs"]]
    assert max(strokes) - min(strokes) < 1e-6 * max(strokes)


def test_ground_test_settles_into_the_static_equilibrium_under_1g():
    """The bundled ground test (fixed base, 1 g, a mass simulator latched and released at
    rest): the stand ends up carrying the mechanism's and the simulator's weight, and the ring
    rests where the mechanism's own statics put it under that load."""
    sc = S.load("ground_test")
    assert sc.active.fixed and sc.start_latched
    sim = DockingSim(sc)
    r, hist = sim.run(sim.initial_state())
    assert r["outcome"] == "captured"
    mech, p = sim.mech, sim.p_mech
    home = np.array(mech.manifest["home"], float)
    g = np.linalg.norm(sc.gravity)
    weight = sc.passive.mass * g
    # the mechanism's mass: its momentum when everything moves with the base at 1 m/s
    m_mech = mech.momentum(home, np.zeros(6), np.zeros(3), np.array([0, 0, 1.0]), p=p)[0][2]
    F1 = hist[-1, 1:4]                            # force on the base (the stand), frame 0
    assert abs(F1[2] + m_mech * g + weight) < 1e-5 * weight   # at rest: the weights
    assert np.max(np.abs(F1[:2])) < 1e-6 * weight
    # the ring's equilibrium from the mechanism's step kernel: udot = 0 with the weight on it
    names = [o[0] for o in mech.kernels["step"].outputs]
    fE, z3 = np.array([0.0, 0.0, -weight]), np.zeros(3)

    def udot(x):
        return dict(zip(names, mech.step(x, np.zeros(6), np.zeros(6), fE, z3, sc.gravity,
                                         p=p)))["xdot"][6:]

    x = np.array(mech.manifest["home"], float)
    for _ in range(20):
        f0 = udot(x)
        J = np.column_stack([(udot(x + 1e-7 * e) - f0) / 1e-7 for e in np.eye(6)])
        x = x - np.linalg.solve(J, f0)
    sag = x[2] - hist[0, 46]
    assert sag < -0.02                                # it does sink
    assert np.max(np.abs(hist[-1, 44:50] - x)) < 1e-5 * abs(sag)


def test_the_decoupled_approximation_is_an_option_that_matters_only_on_a_moving_base():
    d = S.load("ground_test")
    runs = [DockingSim(dataclasses.replace(d, base_motion=m)).run(
        DockingSim(d).initial_state(), history=False)[0] for m in ("coupled", "decoupled")]
    assert runs[0]["peak_base_force"] == runs[1]["peak_base_force"]      # fixed base
    d = base_dict()
    d["scenario"].update(duration=1.5, after_capture=0.5)
    exact = sim_of(d)
    d["scenario"]["base_motion"] = "decoupled"
    approx = sim_of(d)
    a, b = (s.run(exact.initial_state(), history=False)[0] for s in (exact, approx))
    assert a["captured"] and b["captured"]
    assert abs(a["peak_base_moment"] - b["peak_base_moment"]) > 1e-3 * a["peak_base_moment"]


@pytest.mark.parametrize("direction", [0.0, 30.0, 60.0])
def test_the_petal_funnel_brings_the_edge_of_the_envelope_into_capture(direction):
    """Lateral 0.16 m (the envelope's edge) towards an active petal (0 deg), a passive one
    (60 deg) and between: the petals meet on the way in, push the units into line, and the
    latches close within the capture tolerances."""
    d = base_dict()
    d["initial"].update(lateral=0.16, lateral_direction=direction, pitch=0.0, yaw=0.0)
    sim = sim_of(d)
    y0 = sim.initial_state()
    assert sim.diagnostics(y0)[37] > 0.1            # started on the way in, petals apart
    r, hist = sim.run(y0)
    assert r["outcome"] == "captured", r["outcome"]
    at = np.flatnonzero(hist[:, 16] > 0)[0]
    assert np.hypot(*hist[at, 35:37]) <= 0.0101     # within the 1 cm lateral tolerance


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
    (lambda d: d["scenario"].update(base_motion="paper"), "scenario.base_motion"),
    (lambda d: d["scenario"].update(start_latched="yes"), "scenario.start_latched"),
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
