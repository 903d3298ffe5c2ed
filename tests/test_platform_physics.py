"""Physical invariants and failure reporting of the generated parallel-mechanism kernels.

Energy: with dampers off and no gravity, T + V is constant over a 2 s simulation; with
dampers and gravity, T + V falls by exactly the work the dampers dissipate. Statics: massless
legs at rest carry a platform load, two-force members along their axes. Singular and
unreachable poses return a status (Fichter's singularity of a symmetric 6-6 platform turned
90 deg, a pose out of reach, a stroke limit, a universal joint at 90 deg), never a silent NaN,
and a leg's status names the leg, the joint and the limit; Newton's iteration gives the same
statuses as the closed forms; the docking summary shows each drive in its unit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mechgen import runtime
from mechgen.generator.build import MECHANISMS, write_files
from mechgen.generator.families.parallel.platform import numeric_platform
from mechgen.generator.families.parallel.spec import platform_from_dict
from mechgen.runtime import docking as demo
from mechgen.runtime.kernel import KernelStatusError
from mechgen.runtime.platform import newton_ik, status_info
from tests import platforms as P
from tests import shared
from tests.reference.parallel_numpy import platform_alpha

FICHTER = {"mechanism": {"name": "fichter", "family": "parallel", "gravity": [0, 0, -9.81]},
           "platform": {"mass": 100.0, "inertia": [10.0, 10.0, 15.0, 0, 0, 0],
                        "home": [0, 0, 0.5, 0, 0, 0]},
           "leg": {"type": "UPS", "bodies": {"cylinder": {"mass": 2.0, "com": [0.1, 0, 0],
                                                          "inertia": [0.001, 0.01, 0.01, 0, 0, 0]}}},
           "pattern": {"base_radius": 0.9, "base_angles": [-15, 15, 105, 135, 225, 255],
                       "platform_radius": 0.65, "platform_angles": [-45, 45, 75, 165, 195, 285]}}


def _mech(mixed_hexapod):
    pf, num, root = mixed_hexapod
    return runtime.load(pf.name, "c", generated=root), num


def _energy_run(m, p, g, s0, duration=2.0):
    step = m.kernels["step"]
    z3, F = np.zeros(3), np.zeros(6)

    def f(t, s):
        out = step(s[:6], s[6:12], F, z3, z3, g, p=p)
        return np.concatenate([out[0], [out[-1][0]]])   # xdot, d(dissipated work)/dt

    sol = solve_ivp(f, (0, duration), np.concatenate([s0, [0.0]]), method="DOP853",
                    rtol=1e-12, atol=1e-12, dense_output=True)
    assert sol.success
    ts = np.linspace(0, duration, 41)
    S = sol.sol(ts).T
    T, V = m.energy(np.ascontiguousarray(S[:, :6]), np.ascontiguousarray(S[:, 6:12]),
                    np.tile(g, (len(ts), 1)), p=np.tile(p, (len(ts), 1)))
    return T[:, 0] + V[:, 0], S[:, 12], T[:, 0]


def _start(num, seed):
    rng = np.random.default_rng(seed)
    x0 = num["home"] + np.concatenate([rng.uniform(-0.02, 0.02, 3), rng.uniform(-0.04, 0.04, 3)])
    return np.concatenate([x0, rng.normal(0, 0.3, 6)])


def test_energy_is_conserved_without_dampers_and_gravity(mixed_hexapod):
    m, num = _mech(mixed_hexapod)
    p = m.params(c=0.0)
    E, W, T = _energy_run(m, p, np.zeros(3), _start(num, 1))
    assert np.abs(W).max() == 0.0
    drift = np.abs(E - E[0]).max() / abs(E[0])
    assert drift < 1e-6, f"energy drift {drift:.2e}"
    assert T.max() > 10 * T.min() or T.min() > 0     # the motion exchanges energy


def test_energy_falls_by_the_work_of_the_dampers(mixed_hexapod):
    m, num = _mech(mixed_hexapod)
    p = m.params()
    E, W, _ = _energy_run(m, p, np.array([0.0, 0.0, -9.81]), _start(num, 2))
    assert W[-1] > 1e-3 * abs(E[0])                    # the dampers did work
    balance = np.abs(E + W - E[0]).max() / max(abs(E[0]), W[-1])
    assert balance < 1e-8, f"E + W_dissipated drifts by {balance:.2e}"


def test_massless_legs_at_rest_balance_a_platform_load(mixed_hexapod):
    m, num = _mech(mixed_hexapod)
    p = m.params(m_link=0.0, c=0.0)
    rng = np.random.default_rng(3)
    g = np.array([0.0, 0.0, -9.81])
    for _ in range(4):
        x = num["home"] + np.concatenate([rng.uniform(-0.02, 0.02, 3), rng.uniform(-0.04, 0.04, 3)])
        fE, mE, u0 = rng.normal(0, 200.0, 3), rng.normal(0, 40.0, 3), np.zeros(6)
        F = m.drive_forces(x, u0, np.zeros(6), fE, mE, g, p=p)
        out = dict(zip([o[0] for o in m.kernels["step"].outputs], m.step(x, u0, F, fE, mE, g, p=p)))
        assert np.abs(out["xdot"][6:]).max() < 1e-10
        assert np.abs(out["qdd"]).max() < 1e-9
        mC = num["platform"]["m"]
        total = out["F_on_C"].sum(0) + fE + mC * g
        assert np.abs(total).max() < 1e-9 * np.abs(fE).max()
        # a massless UPS leg is a two-force member: its force on C is along the leg, equal to
        # the stroke force (spring + preload + drive)
        Q = m.leg_forces(x, u0, F, p=p)
        i = 0
        for k, leg in enumerate(num["legs"]):
            n = len(leg["joints"])
            if leg["type"] == "UPS":
                s = x[:3] + platform_alpha(*x[3:]).T @ leg["cut"]["l_C"]
                e = (s - leg["joints"][0]["l"]) / np.linalg.norm(s - leg["joints"][0]["l"])
                np.testing.assert_allclose(out["F_on_C"][k], Q[i + 2] * e, atol=1e-9 * abs(Q[i + 2]))
            i += n


@pytest.fixture(scope="module")
def fichter(tmp_path_factory):
    """(platform, C mechanism) of FICHTER, generated once per test run (tests/shared.py)."""
    pf = platform_from_dict(FICHTER, "fichter.toml")
    root = tmp_path_factory.mktemp("fichter")
    write_files(root / pf.name, shared.once(tmp_path_factory, "files_fichter",
                                            lambda: P.platform_files(pf)))
    return pf, runtime.load("fichter", "c", generated=root)


def test_fichter_singularity_is_flagged_by_the_drive_forces(fichter):
    _, m = fichter
    z3, z6 = np.zeros(3), np.zeros(6)
    g = np.array([0.0, 0.0, -9.81])
    x = np.array([0, 0, 0.5, 0, np.radians(80), 0])
    F = m.drive_forces(x, z6, z6, z3, z3, g)
    assert np.all(np.isfinite(F))
    for height in (0.4, 0.5, 0.7):
        x = np.array([0, 0, height, 0, np.pi / 2, 0])
        with pytest.raises(KernelStatusError, match="parallel singularity") as e:
            m.drive_forces(x, z6, z6, z3, z3, g)
        assert e.value.status[0] == 5
        Fn = m.drive_forces(x, z6, z6, z3, z3, g, errors="nan")
        assert np.all(np.isnan(Fn))
    # the same pose in the step: the y-z-x angles are singular there too, reported
    with pytest.raises(KernelStatusError, match="psi_z"):
        m.step(x, z6, z6, z3, z3, g)


def test_a_universal_joint_at_90_degrees_is_a_leg_singularity(fichter):
    pf, m = fichter
    leg = pf.legs[0]
    G0 = np.array([[float(v) for v in r] for r in leg.chain.joints[0].gamma])
    b = np.array([float(v) for v in leg.chain.joints[0].l])
    l_C = np.array([float(v) for v in leg.l_C])
    r_C = b + 0.6 * G0[1] - l_C                        # leg 1 along its U joint's first axis
    x = np.concatenate([r_C, np.zeros(3)])
    with pytest.raises(KernelStatusError, match=r"leg1 u2: universal joint at u2 = \+-90 deg "
                                                r"\(singular\)") as e:
        m.inverse_kinematics(x)
    assert e.value.status[0] == 112                     # leg 1, joint 1 (u2), singular
    assert status_info(m, 112)["legacy"] == 2


# --- statuses that say where -------------------------------------------------------------------

DOCKING = ("gough_stewart_docking", "hunt_rus_docking")
FRESH = DOCKING + ("hexapod_pus",)


@pytest.fixture(scope="module")
def docking(tmp_path_factory):
    """The bundled docking mechanisms and the PUS hexapod generated by this checkout (not the
    committed files; once per test run, tests/shared.py): name -> (C mechanism, numeric
    description)."""
    root = tmp_path_factory.mktemp("docking")
    out = {}
    for name in FRESH:
        pf, files = shared.spec_files(tmp_path_factory, MECHANISMS / f"{name}.toml")
        write_files(root / name, files)
        out[name] = (runtime.load(name, "c", generated=root), numeric_platform(pf))
    return out


def _poses(m, n: int, seed: int, size: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array(m.manifest["home"]) + np.concatenate(
        [rng.uniform(-size, size, (n, 3)), rng.uniform(-size, size, (n, 3))], axis=1)


def _statuses(kernel, *args, **kw) -> np.ndarray:
    try:
        kernel(*args, **kw)
    except KernelStatusError as e:
        return e.status.copy()
    return np.zeros(len(args[0]), np.int32)


def _cut_centres(num: dict, x: np.ndarray) -> list[np.ndarray]:
    return [x[:3] + platform_alpha(*x[3:]).T @ leg["cut"]["l_C"] for leg in num["legs"]]


def test_a_stroke_beyond_its_limit_names_the_leg_the_joint_and_the_limit(docking):
    """Status 100 (leg + 1) + 10 joint + 3 (below) or 4 (above) for the first leg, in order,
    whose stroke |s - b| - length0 (numpy, from the geometry) leaves [-0.25, 0.25]."""
    m, num = docking["gough_stewart_docking"]
    xs = _poses(m, 200, seed=3, size=0.2)
    status = _statuses(m.inverse_kinematics, xs, p=np.tile(m.params(), (len(xs), 1)))
    expected = np.zeros(len(xs), np.int32)
    for i, x in enumerate(xs):
        for k, (leg, s) in enumerate(zip(num["legs"], _cut_centres(num, x))):
            stroke = np.linalg.norm(s - leg["joints"][0]["l"]) - leg["cut"]["l_L"][0]
            if abs(stroke) >= 0.25:
                expected[i] = 100 * (k + 1) + 20 + (3 if stroke < 0 else 4)
                break
    assert 20 < np.count_nonzero(expected) < len(xs) - 20      # both kinds of pose
    np.testing.assert_array_equal(status, expected)
    assert len(set(expected[expected > 0].tolist())) >= 6      # several legs and both limits
    info = status_info(m, 324)
    assert info == {"message": "leg3 stroke above its upper limit 0.25 m", "reason": "above_limit",
                    "legacy": 1, "leg": "leg3", "joint": "stroke", "limit": 0.25, "unit": "m"}
    x = xs[int(np.flatnonzero(expected == 324)[0])]
    with pytest.raises(KernelStatusError, match="leg3 stroke above its upper limit 0.25 m"):
        m.inverse_kinematics(x)


def test_a_crank_out_of_reach_names_its_leg(docking):
    """A crank leg's 'out of reach' (code 100 (leg + 1) + 1) is the first leg, in order, with
    rho^2 < K^2 (numpy, from the geometry), and every leg before it reaches."""
    m, num = docking["hunt_rus_docking"]
    xs = _poses(m, 200, seed=4, size=0.35)
    status = _statuses(m.inverse_kinematics, xs, p=np.tile(m.params(), (len(xs), 1)))
    reached = []
    for x in xs:
        row = []
        for leg, s in zip(num["legs"], _cut_centres(num, x)):
            j0, a, b = leg["joints"][0], leg["joints"][1]["l"][0], leg["cut"]["l_L"][0]
            d = j0["gamma"] @ (s - j0["l"])
            row.append(d[0] ** 2 + d[1] ** 2 >= ((d @ d + a * a - b * b) / (2 * a)) ** 2)
        reached.append(row)
    far = [(i, int(c) // 100 - 1) for i, c in enumerate(status) if c % 10 == 1]
    assert len(far) > 20 and len({k for _, k in far}) >= 4
    for i, k in far:
        assert not reached[i][k] and all(reached[i][:k]), (i, status[i], reached[i])
    for i in np.flatnonzero(status == 0):
        assert all(reached[i])
    with pytest.raises(KernelStatusError, match=r"leg1 crank: pose out of reach \(crank 0.25 m"):
        m.inverse_kinematics(np.array(m.manifest["home"]) + [0, 0, 1.5, 0, 0, 0])


def test_a_batch_gets_nan_rows_only_at_the_flagged_states_with_errors_nan(docking):
    m, _ = docking["gough_stewart_docking"]
    xs = np.tile(np.array(m.manifest["home"]), (3, 1))
    xs[1, 2] += 0.4                                    # every stroke beyond its upper limit
    out = m.inverse_kinematics(xs, p=np.tile(m.params(), (3, 1)), errors="nan")
    assert np.all(np.isfinite(out[[0, 2]])) and np.all(np.isnan(out[1]))
    status = _statuses(m.inverse_kinematics, xs, p=np.tile(m.params(), (3, 1)))
    assert status.tolist() == [0, 124, 0]                # leg1 (the first) stroke above its limit


@pytest.mark.parametrize("name", FRESH)
def test_newton_ik_gives_the_closed_form_status_with_the_value_that_failed(docking, name):
    """Newton's iteration (eq. 4.6) converges beyond the limits or not at all (a crank or a
    slide out of reach): it reports what the closed form reports, with the offending value."""
    m, _ = docking[name]
    size = {"gough_stewart_docking": 0.25, "hunt_rus_docking": 0.15, "hexapod_pus": 0.3}[name]
    xs = _poses(m, 60, seed=5, size=size)
    p = np.tile(m.params(), (len(xs), 1))
    closed = _statuses(m.inverse_kinematics, xs, p=p)
    assert 10 < np.count_nonzero(closed) < len(xs) - 10
    for i in np.flatnonzero(closed)[:40]:
        with pytest.raises(KernelStatusError) as e:
            newton_ik(m, xs[i])
        assert e.value.status.tolist() == [closed[i]]
        message = status_info(m, int(closed[i]))["message"]
        assert str(e.value).startswith(f"newton_ik: {message}"), str(e.value)
        if closed[i] % 10 in (3, 4):                   # a limit: the value that passed it
            unit = status_info(m, int(closed[i]))["unit"]
            assert f" {unit})" in str(e.value), str(e.value)
    q = newton_ik(m, xs, errors="nan")
    np.testing.assert_array_equal(np.isnan(q).any(1), closed != 0)
    q_closed = m.inverse_kinematics(xs, p=p, errors="nan")
    np.testing.assert_allclose(q[closed == 0], q_closed[closed == 0], atol=1e-11)


def test_newton_ik_refuses_bad_iteration_settings_with_a_value_error(docking):
    m, _ = docking["gough_stewart_docking"]
    home = np.array(m.manifest["home"])
    for kw, what in (({"max_iter": 0}, "max_iter"), ({"max_iter": -3}, "max_iter"),
                     ({"tol": 0.0}, "tol"), ({"errors": "ignore"}, "errors")):
        with pytest.raises(ValueError, match=what):
            newton_ik(m, home, **kw)


def _fake_run(strokes: np.ndarray) -> dict:
    t = np.linspace(0.0, 1.0, len(strokes))
    return {"t": t, "x": np.zeros((len(t), 6)), "strokes": strokes,
            "base_force": np.ones((len(t), 3)), "base_moment": np.ones((len(t), 3)),
            "seconds": 0.1, "nfev": 10}


def test_docking_summary_shows_strokes_in_mm_and_cranks_in_degrees(docking, mixed_hexapod):
    strokes = np.array([[0.0] * 6, [0.0936, 0.01, 0.02, 0.03, 0.04, 0.1]])
    gs = demo.summary(docking["gough_stewart_docking"][0], _fake_run(strokes))
    assert "peak |stroke| per leg: leg1 93.6 mm, leg2 10.0 mm" in gs, gs
    hunt = demo.summary(docking["hunt_rus_docking"][0], _fake_run(strokes))
    assert "peak |crank| per leg: leg1 5.4 deg, leg2 0.6 deg" in hunt, hunt
    assert " mm" not in hunt.splitlines()[1]
    mixed = runtime.load(mixed_hexapod[0].name, "python", generated=mixed_hexapod[2])
    line = demo.summary(mixed, _fake_run(strokes)).splitlines()[1]
    assert line.startswith("peak |drive coordinate| per leg: L1 stroke 93.6 mm, "
                           "L2 crank 0.6 deg, L3 stroke 20.0 mm"), line


# --- PUS legs: energy and statuses --------------------------------------------------------------

def test_pus_energy_is_conserved_without_dampers_and_gravity(docking):
    m, num = docking["hexapod_pus"]
    p = m.params(c_slide=0.0, c_joint=0.0)
    E, W, T = _energy_run(m, p, np.zeros(3), _start(num, 4))
    assert np.abs(W).max() == 0.0
    drift = np.abs(E - E[0]).max() / abs(E[0])
    assert drift < 1e-6, f"energy drift {drift:.2e}"
    assert T.max() > 2 * T.min()                       # the motion exchanges energy


def test_pus_energy_falls_by_the_work_of_the_dampers(docking):
    m, num = docking["hexapod_pus"]
    E, W, _ = _energy_run(m, m.params(), np.array([0.0, 0.0, -9.81]), _start(num, 5))
    assert W[-1] > 1e-3 * abs(E[0])
    balance = np.abs(E + W - E[0]).max() / max(abs(E[0]), W[-1])
    assert balance < 1e-8, f"E + W_dissipated drifts by {balance:.2e}"


def _pus_expected_status(spec: dict, x: np.ndarray) -> int:
    """The closed form's status at pose x from the spec's geometry alone (numpy): the first leg,
    in order, whose rail passes farther than its rod from the platform joint (out of reach,
    100 (leg + 1) + 1) or whose slide d.e - sqrt(rod^2 - |d|^2 + (d.e)^2) leaves the slide
    limits (+ 3 below, + 4 above); 0 when every leg passes."""
    home = np.array(spec["platform"]["home"], float)
    lo, hi = spec["leg"]["limits"]["slide"]
    for k, leg in enumerate(spec["legs"]):
        b, e = np.array(leg["base"], float), np.array(leg["rail"], float)
        e /= np.linalg.norm(e)
        l_C = np.array(leg["platform"], float)
        rod = np.linalg.norm(home[:3] + platform_alpha(*home[3:]).T @ l_C - b)
        d = x[:3] + platform_alpha(*x[3:]).T @ l_C - b
        w2 = rod ** 2 - (d @ d - (d @ e) ** 2)
        if w2 <= 0:
            return 100 * (k + 1) + 1
        slide = d @ e - np.sqrt(w2)
        if not slide - lo > 0:
            return 100 * (k + 1) + 3
        if not hi - slide > 0:
            return 100 * (k + 1) + 4
    return 0


def test_a_pus_slide_beyond_its_limit_or_out_of_reach_names_the_leg(docking):
    """Statuses of the PUS closed form against the rail-and-rod geometry (numpy, from the spec):
    the slide limits (below and above) and the rail out of the rod's reach, several legs each."""
    m, _ = docking["hexapod_pus"]
    spec = P.spec_table("hexapod_pus")
    xs = np.concatenate([_poses(m, 200, seed=6, size=0.3),
                         _poses(m, 100, seed=7, size=0.6)])
    status = _statuses(m.inverse_kinematics, xs, p=np.tile(m.params(), (len(xs), 1)))
    expected = np.array([_pus_expected_status(spec, x) for x in xs], np.int32)
    np.testing.assert_array_equal(status, expected)
    reasons = {c % 10 for c in expected[expected > 0].tolist()}
    assert reasons == {1, 3, 4} and 20 < np.count_nonzero(expected) < len(xs) - 20, reasons
    assert len({c // 100 for c in expected[expected % 10 == 1].tolist()}) >= 3
    assert status_info(m, 101) == {
        "message": "leg1 slide: pose out of reach (rod 0.778518 m cannot meet the platform "
                   "joint from the rail)", "reason": "out_of_reach", "legacy": 1, "leg": "leg1",
        "joint": "slide", "limit": None, "unit": None}
    assert status_info(m, 204)["message"] == "leg2 slide above its upper limit 0.3 m"
    with pytest.raises(KernelStatusError, match=r"leg1 slide: pose out of reach \(rod 0.778518"):
        m.inverse_kinematics(np.array(m.manifest["home"]) + [-1.2, 0, 0, 0, 0, 0])
