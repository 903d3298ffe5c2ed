"""The linkage kernels against references independent of their derivation:

* an absolute-coordinate formulation (every body free, every joint a constraint, KKT by the
  null-space method; tests/reference/linkage_absolute.py) for the body accelerations and the
  cut joints' reactions, on every bundled linkage;
* Andrews' squeezing mechanism of the Test Set for IVP Solvers (Hairer & Wanner; deTestSet):
  its own mass matrix, forces and constraints, and its reference solution at t = 0.03;
* closed forms: Freudenstein's four-bar, Bennett's closure, the Hooke joint, the swash plate,
  the parallel cranks as one pendulum; and the double four-bar's singular passage flagged.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import KernelStatusError
from mechgen.runtime import linkage as lk
from tests.reference import andrews_testset as ats
from tests.reference import linkage_closed_forms as cf
from tests.reference.linkage_absolute import LinkageAbsolute
from tests.test_linkage_kernels import LINKAGES, poses

SPECS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"


def spec(name: str) -> dict:
    return tomllib.loads((SPECS / f"{name}.toml").read_text())


def wrap(x):
    return (np.asarray(x) + np.pi) % (2 * np.pi) - np.pi


def walk(mech, q, targets: dict, step: float = 0.1):
    """Continuation (001 section 1.5.7): move the independent coordinates to ``targets`` in
    small steps, closing the loops after each."""
    coords = mech.coordinates
    q = np.array(q, float)
    start = {k: q[coords.index(k)] for k in targets}
    count = max(1, int(np.ceil(max(abs(targets[k] - start[k]) for k in targets) / step)))
    for i in range(1, count + 1):
        for k in targets:
            q[coords.index(k)] = start[k] + (targets[k] - start[k]) * i / count
        q = lk.assemble(mech, q, tol=1e-14)
    return q


@pytest.mark.parametrize("name", LINKAGES)
def test_body_accelerations_and_reactions_equal_the_absolute_formulation(name):
    mech = runtime.load(name)
    ref = LinkageAbsolute(spec(name))
    rng = np.random.default_rng(21)
    bodies = mech.manifest["bodies"]
    npts = len(mech.manifest["points"])
    for q, w in poses(mech, 3, seed=4):
        qd, _ = mech.velocity(q, w)
        tau = rng.normal(size=mech.n)
        qdd, lam, *rest = mech.forward_dynamics(q, qd, tau)
        _, v, a, R, omega, alpha = mech.kinematics(q, qd, qdd)
        r = mech.kinematics(q, qd, qdd)[0]
        P = {b: (R[k], r[npts + k]) for k, b in enumerate(bodies)}
        T = {b: (v[npts + k], omega[k]) for k, b in enumerate(bodies)}
        out = ref.accelerations(P, T, dict(zip(mech.coordinates, tau)))
        scale = max(1.0, np.abs(a).max(), np.abs(alpha).max())
        for k, b in enumerate(bodies):
            assert np.abs(out["com_acc"][b] - a[npts + k]).max() < 1e-10 * scale, b
            assert np.abs(out["ang_acc"][b] - alpha[k]).max() < 1e-10 * scale, b
        if rest:
            # reactions agree up to the wrench directions the constraints leave undetermined
            # (redundant rows, or rows identically satisfied such as a planar loop's)
            reaction = rest[0]
            fscale = max(1.0, np.abs(reaction).max())
            for k, cut in enumerate(mech.manifest["cut_joints"]):
                got = out["reactions"][cut["joint"]]
                diff = np.concatenate([got["force"], got["moment"]]) - reaction[k]
                basis = np.asarray(got["indeterminate"]).reshape(6, -1)
                if basis.size:
                    diff = diff - basis @ (basis.T @ diff)
                assert np.abs(diff).max() < 1e-9 * fscale, cut["joint"]


def andrews_order(mech) -> list[int]:
    return [mech.coordinates.index(nm) for nm in ats.ANGLE_NAMES]


def andrews_drive(mech) -> np.ndarray:
    """The Test Set's constant torque ``mom`` on beta."""
    tau = np.zeros(mech.n)
    tau[mech.coordinates.index("beta")] = ats.PARAMS["mom"]
    return tau


def test_andrews_accelerations_and_multipliers_equal_the_test_set_formulation():
    mech = runtime.load("andrews")
    order = andrews_order(mech)
    tau = andrews_drive(mech)
    for q, w in poses(mech, 5, seed=9):
        qd, _ = mech.velocity(q, w)
        qdd, lam, reaction = mech.forward_dynamics(q, qd, tau)
        qdd_ref, lam_ref = ats.qdd_lambda(q[order], qd[order])
        assert np.abs(qdd[order] - qdd_ref).max() < 1e-10 * np.abs(qdd_ref).max()
        # the cut joints' in-plane reactions are the Test Set's multipliers (E23, E24, E26)
        assert np.abs(reaction[:, :2].ravel() - lam_ref).max() < 1e-9 * np.abs(lam_ref).max()


def test_andrews_reproduces_the_test_set_solution_at_t_003():
    mech = runtime.load("andrews")
    order = andrews_order(mech)
    tau = andrews_drive(mech)
    q0 = np.array(mech.manifest["q_ref"])
    tr = lk.simulate(mech, q0, [0.0], ats.T_END, tau=tau, rtol=1e-12, atol=1e-14,
                     t_eval=[ats.T_END])
    q_end, qd_end = tr.q[-1][order], tr.qd[-1][order]
    assert np.abs(q_end - ats.Y_EXT[:7]).max() < 1e-9
    assert np.abs(qd_end - ats.Y_EXT[7:14]).max() < 1e-6 * np.abs(ats.Y_EXT[7:14]).max()
    # the published PSIDE solution is good to about 1.4e-9 (tests/reference/andrews_testset.py)
    assert np.abs(q_end - ats.Q_REF).max() < 3e-9


def test_fourbar_follows_freudenstein_over_a_crank_turn():
    mech = runtime.load("fourbar")
    a, b, c, d = 0.1, 0.35, 0.3, 0.4
    ix = {k: mech.coordinates.index(k) for k in ("crank", "rocker", "B")}
    q = np.array(mech.manifest["q_ref"])
    for target in np.linspace(np.pi / 3, np.pi / 3 + 2 * np.pi, 13)[1:]:
        q = walk(mech, q, {"crank": target})
        t2, t4 = q[ix["crank"]], q[ix["rocker"]]
        assert abs(wrap(t4 - cf.fourbar_output_angle(t2, a, b, c, d, +1))) < 1e-12
        t3 = cf.fourbar_coupler_angle(t2, t4, a, b, c, d)
        w3, w4 = cf.fourbar_velocity_ratios(t2, t3, t4, a, b, c)
        qd, _ = mech.velocity(q, [1.0])
        assert abs(qd[ix["rocker"]] - w4) < 1e-12 and abs(qd[ix["B"]] - (w3 - 1)) < 1e-12


def test_bennett_linkage_keeps_its_closure_relation():
    mech = runtime.load("bennett")
    alpha, beta = 0.7, 1.9
    ix = {k: mech.coordinates.index(k) for k in ("J1", "J2", "J4")}
    q = np.array(mech.manifest["q_ref"])
    for target in [0.5, -0.5, -1.5, -2.5, 1.0, 2.0, 2.9]:
        q = walk(mech, q, {"J1": target})
        t = cf.bennett_angles(target, alpha, beta)
        assert abs(wrap(q[ix["J2"]] - t[1])) < 1e-12 and abs(wrap(q[ix["J4"]] - t[3])) < 1e-12
        qd, _ = mech.velocity(q, [1.0])
        ratio = cf.bennett_velocity_ratio(target, alpha, beta)
        assert abs(qd[ix["J2"]] - ratio) < 1e-11 and abs(qd[ix["J4"]] + ratio) < 1e-11


@pytest.mark.parametrize("name, angle, ratio, alpha", [
    ("hooke_shafts", cf.hooke_output_angle, cf.hooke_velocity_ratio, np.pi / 6),
    ("swash_plate", cf.swash_output_angle, cf.swash_velocity_ratio, np.pi / 12)])
def test_output_shaft_follows_the_closed_form(name, angle, ratio, alpha):
    mech = runtime.load(name)
    out = mech.coordinates.index("output")
    q = np.array(mech.manifest["q_ref"])
    for target in np.linspace(0, 2 * np.pi, 13)[1:]:
        q = walk(mech, q, {"input": target})
        assert abs(wrap(q[out] - angle(target, alpha))) < 1e-12
        qd, _ = mech.velocity(q, [1.0])
        assert abs(qd[out] - ratio(target, alpha)) < 1e-11


def test_parallel_cranks_swing_as_one_pendulum():
    mech = runtime.load("parallelogram3")
    a0 = mech.coordinates.index("A0")
    q = np.array(mech.manifest["q_ref"])
    for target in [-0.3, -1.2, -np.pi / 2, -2.8]:
        q = walk(mech, q, {"A0": target})
        qd, _ = mech.velocity(q, [0.0])
        qdd = mech.forward_dynamics(q, qd, np.zeros(mech.n))[0]
        assert abs(qdd[a0] - cf.parallelogram_theta_ddot(target)) < 1e-11 * 9.81


def test_double_fourbar_singular_passage_is_flagged_not_nan():
    """IFToMM A02: with the cranks horizontal the constraint rank drops (a bifurcation to the
    antiparallelogram); every kernel that solves for the dependent coordinates says so."""
    mech = runtime.load("double_fourbar")
    a0 = mech.coordinates.index("A0")
    near = walk(mech, mech.manifest["q_ref"], {"A0": 1e-3})   # A0: crank angle from +x
    # every coordinate is +-A0 on this branch: the horizontal pose is q = 0
    assert np.allclose(np.abs(near), near[a0], rtol=1e-9)
    q = np.zeros(mech.n)
    phi, G, _ = mech.closure(q)
    assert np.abs(phi).max() < 1e-12
    assert np.linalg.matrix_rank(G, tol=1e-9) < mech.manifest["rank"]
    mech.velocity(near, [1.0])                      # regular a milliradian before
    with pytest.raises(KernelStatusError, match="singular configuration"):
        mech.velocity(q, [1.0])
    with pytest.raises(KernelStatusError, match="singular configuration"):
        mech.forward_dynamics(q, np.zeros(mech.n), np.zeros(mech.n))
    qdd = mech.forward_dynamics(q, np.zeros(mech.n), np.zeros(mech.n), errors="nan")[0]
    assert np.all(np.isnan(qdd))
