"""The reduction onto C in C's frame (generator/families/parallel/frame_c.py, docs/algorithms.md
section 1.6.1): its factorisation C^(i)_k = E_k L_k T and block formulas give the paper's
A*_C, b*_C and udot_C (checked in plain numpy on the reference's own leg matrices, every
bundled leg type); the generator keeps it where it costs fewer operations; platform_rhs takes
the state derivative from the lean step_accel and gives step's."""

from __future__ import annotations

import numpy as np
import pytest

from mechgen.generator.families.parallel import kernels as pk
from mechgen.generator.pipeline import optimise
from mechgen.runtime.platform import platform_rhs
from tests import platforms as P
from tests.reference import parallel_numpy as ref

RTOL = 1e-10
NAMES = P.BUNDLED + ["stewart_rrp_002"]


def _frame_c_reduction(num: dict, x, u, r: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A*', b*', udot) by the module docstring's formulas, from the reference's C^(d)_k,
    A_k, b_k, h_k. The reference writes the closure rows in frame 0, so E_k carries alpha_C^T
    where the kernels carry R_Cn: C^(i) rows 1-3 = alpha_C^T [alpha_C, -skew(l_C)]."""
    _, alpha = ref.platform_pose(x)
    T = np.zeros((6, 6))
    T[:3, :3], T[3:, 3:] = alpha, np.eye(3)
    A_p = r["M_C"].copy()
    b_p = T @ r["s_C"]
    for leg, C_d, C_i, A, b, h in zip(num["legs"], r["C_d"], r["C_i"], r["A"], r["b"], r["h"]):
        m = C_d.shape[0]
        S = ref.skew(leg["cut"]["l_C"])
        E = np.zeros((m, 6))
        E[:3, :3] = alpha.T
        if m == 4:
            E[3, 3:] = C_i[3, 3:]                     # e^T: n_R^T alpha_C^T
        W = np.linalg.solve(C_d, E[:, :3])           # G = [W, z e^T]
        z = np.linalg.solve(C_d, np.eye(4)[3]) if m == 4 else None
        e = E[3, 3:] if m == 4 else None
        K11 = W.T @ A @ W
        K12 = np.outer(W.T @ A @ z, e) if m == 4 else np.zeros((3, 3))
        K22 = (z @ A @ z) * np.outer(e, e) if m == 4 else np.zeros((3, 3))
        N = K11 @ S
        block = np.block([[K11, K12 - N],
                          [(K12 - N).T, K22 + S @ K12 + (S @ K12).T - S @ N]])
        A_p += block
        y = np.linalg.solve(C_d.T, b - A @ h)
        f = alpha @ y[:3]
        mom = np.cross(leg["cut"]["l_C"], f) + (y[3] * e if m == 4 else 0.0)
        b_p += np.concatenate([f, mom])
    y = np.linalg.solve(A_p, b_p)
    return A_p, b_p, np.concatenate([alpha.T @ y[:3], y[3:]])


@pytest.mark.parametrize("name", NAMES)
def test_the_frame_c_reduction_gives_the_papers_reduced_dynamics(name):
    """A*' = T A*_C T^T, b*' = T b*_C and the same udot_C as eq. 5.3-5.4, on 5 random states."""
    _, num = P.bundled(name)
    st = P.random_states(num, 5, seed=13)
    for i in range(5):
        zero = [np.zeros(len(leg["joints"])) for leg in num["legs"]]
        args = (st["x"][i], st["u"][i])
        r0 = ref.solve(num, *args, zero, st["g"][i], st["fE"][i], st["mE"][i])
        Q = P.law_forces(num, r0["p"], r0["pdot"], st["F"][i])
        r = ref.solve(num, *args, Q, st["g"][i], st["fE"][i], st["mE"][i], p0=r0["p"])
        A_p, b_p, udot = _frame_c_reduction(num, *args, r)
        _, alpha = ref.platform_pose(st["x"][i])
        T = np.zeros((6, 6))
        T[:3, :3], T[3:, 3:] = alpha, np.eye(3)
        scale = np.abs(r["A_star"]).max()
        np.testing.assert_allclose(A_p, T @ r["A_star"] @ T.T, rtol=0, atol=RTOL * scale)
        np.testing.assert_allclose(b_p, T @ r["b_star"], rtol=0,
                                   atol=RTOL * np.abs(r["b_star"]).max())
        np.testing.assert_allclose(udot, r["udot"], rtol=0,
                                   atol=RTOL * max(1.0, np.abs(r["udot"]).max()))


@pytest.mark.parametrize("name", ["gough_stewart_docking", "hexapod_rsu", "hexapod_pus"])
def test_the_generator_keeps_the_step_with_fewer_operations(name):
    """step_accel and step: the candidate the pipeline keeps is the cheapest build (each in
    loops over its legs where the legs allow, generator/families/parallel/leg_loop.py), and for
    these leg types (UPS, RSU, PUS) the frame-C reduction is the cheapest straight-line one."""
    pf, _ = P.bundled(name)
    builds = (pk.PlatformBuild, pk._frame_c_build(), pk._frame_0_build())
    for builder, kernel in ((pk.step_accel, pk._step_accel), (pk.step, pk._step)):
        classic, frame_c, frame_0 = (optimise(lambda p, b=b: kernel(p, b), pf).ops["total"]
                                     for b in builds)
        assert frame_c < min(classic, frame_0)
        kept = min(optimise(c, pf).ops["total"] for c in builder.candidates)
        assert optimise(builder, pf).ops["total"] == kept


@pytest.mark.parametrize("name", ["gough_stewart_docking", "hunt_rus_docking", "hexapod_pus",
                                  "hexapod_rsu", "hexapod_spu", "hexapod_ucu", "stewart_rrp_002"])
def test_the_classic_reduction_costs_more_than_the_kept_step_accel(name):
    """Why the classic reduction of section 1.6 (H_k formed) is a reference build and not a
    candidate of the choice: in loops over the legs, as the candidates are built, it costs
    more operations than the kept kernel on every bundled platform."""
    pf, _ = P.bundled(name)
    classic = pk._reduction_forms(pk._step_accel)[0]
    assert optimise(classic, pf).ops["total"] > optimise(pk.step_accel, pf).ops["total"]


def _state(mech) -> np.ndarray:
    x = np.array(mech.manifest["home"]) + np.array([0.01, -0.004, 0.003, 0.02, -0.01, 0.015])
    return np.concatenate([x, [0.05, -0.02, 0.1, 0.03, -0.02, 0.04]])


def test_platform_rhs_takes_xdot_from_step_accel_unless_recording(monkeypatch):
    mech = P.load_generated("gough_stewart_docking", None, "c")
    calls, n_step_outputs = [], len(mech.kernels["step"].outputs)
    for name in ("step", "step_accel"):
        kernel = mech.kernels[name]
        monkeypatch.setitem(mech.kernels, name,
                            lambda *a, _k=kernel, _n=name, **kw: calls.append(_n) or _k(*a, **kw))
    s = _state(mech)
    F = np.linspace(-50.0, 50.0, 6)
    lean = platform_rhs(mech, F=F)(0.0, s)
    record: list = []
    full = platform_rhs(mech, F=F, record=record)(0.0, s)
    assert calls == ["step_accel", "step"]
    assert len(record[0][1]) == n_step_outputs           # the loads too: step's outputs
    np.testing.assert_allclose(lean, full, rtol=0, atol=1e-12 * np.abs(full).max())


def test_platform_rhs_falls_back_to_step_without_step_accel(monkeypatch):
    mech = P.load_generated("gough_stewart_docking", None, "c")
    s = _state(mech)
    want = platform_rhs(mech)(0.0, s)
    monkeypatch.delitem(mech.kernels, "step_accel")
    np.testing.assert_allclose(platform_rhs(mech)(0.0, s), want, rtol=0,
                               atol=1e-12 * np.abs(want).max())
