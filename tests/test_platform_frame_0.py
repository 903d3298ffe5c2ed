"""The reduction onto C written in frame 0 (generator/families/parallel/frame_0.py,
docs/algorithms.md section 1.6.2) and the rotation products of the closure written over two rows
(generator/algorithms/closure.py ``rotation_product``): the frame-0 step_accel equals the frame-C
one and the plain numpy reference of the paper's equations on every leg type (the mixed six-leg
platform: UPS, SPU, UCU, RUS, RSU, PUS; C's inertia with products of inertia) and on an
axisymmetric platform (gough_stewart_docking); the generator keeps the build with the fewest
operations."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from mechgen.generator.build import manifest_fields
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.families.parallel import kernels as pk  # before closure (import cycle)
from mechgen.generator.algorithms.closure import rotation_product  # noqa: E402  isort: skip
from mechgen.generator.families.parallel.frame_0 import rotated_inertia
from mechgen.generator.pipeline import optimise
from mechgen.generator.scalar import Recorder, elementary_rotation, matmul, transpose
from tests import platforms as P
from tests.reference import parallel_numpy as ref

SAME = 1e-12          # two reductions of the same equations
RTOL = 1e-10          # vs the reference
STATES = 12


def _python_kernel(pf, builder):
    """The optimised kernel of ``builder`` (one candidate), rendered by the Python backend."""
    g = optimise(builder, pf)
    files = render(pf.name, f"{pf.name}.toml", sha256_text(pf.name), [g], manifest_fields(pf))
    namespace: dict = {}
    exec(compile(files[f"{pf.name}.py"], f"{pf.name}.py", "exec"), namespace)
    return namespace["step_accel"]


def _run(kernel, st, i, p, n_q) -> tuple[np.ndarray, np.ndarray]:
    xdot, qdd = [0.0] * 12, [0.0] * n_q
    status = kernel(*(list(st[k][i]) for k in ("x", "u", "F", "fE", "mE", "g")), list(p),
                    xdot, qdd)
    assert status == 0, f"state {i}: status {status}"
    return np.array(xdot), np.array(qdd)


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("name", ["mixed_hexapod", "gough_stewart_docking"])
def test_the_frame_0_step_accel_equals_the_frame_c_one_and_the_reference(request, name):
    pf, num, mechs = P.case_mechanisms(request, name)
    frame_0 = _python_kernel(pf, pk.step_accel_frame_0)
    frame_c = _python_kernel(pf, pk.step_accel_frame_c)
    p = mechs["python"].params()
    st = P.random_states(num, STATES, seed=17)
    q = mechs["c"].inverse_kinematics(st["x"], p=np.tile(p, (STATES, 1)))
    split = np.cumsum([len(leg["joints"]) for leg in num["legs"]])[:-1]
    n_q = q.shape[1]
    for i in range(STATES):
        xdot, qdd = _run(frame_0, st, i, p, n_q)
        xdot_c, qdd_c = _run(frame_c, st, i, p, n_q)
        assert _rel(xdot, xdot_c) <= SAME and _rel(qdd, qdd_c) <= SAME, f"{name} state {i}"
        x, u = st["x"][i], st["u"][i]
        zero = [np.zeros(len(leg["joints"])) for leg in num["legs"]]
        kin = ref.solve(num, x, u, zero, st["g"][i], st["fE"][i], st["mE"][i],
                        p0=np.split(q[i], split))
        Q = P.law_forces(num, kin["p"], kin["pdot"], st["F"][i])
        r = ref.solve(num, x, u, Q, st["g"][i], st["fE"][i], st["mE"][i], p0=kin["p"])
        assert _rel(xdot[6:], r["udot"]) <= RTOL, f"{name} state {i}: udot"
        assert _rel(qdd, np.concatenate(r["pddot"])) <= RTOL, f"{name} state {i}: qdd"


def _rotation(angles) -> list:
    """A_x A_z A_y of three angles, as exact SymPy floats of their cosines and sines."""
    (cy, sy), (cz, sz), (cx, sx) = [(sp.Float(np.cos(a), 30), sp.Float(np.sin(a), 30))
                                    for a in angles]
    return matmul(elementary_rotation(0, cx, sx),
                  matmul(elementary_rotation(2, cz, sz), elementary_rotation(1, cy, sy)))


@pytest.mark.parametrize("I", [[[20.0, 0, 0], [0, 20.0, 0], [0, 0, 38.0]],
                               [[12.0, 0.3, -0.2], [0.3, 14.0, 0.1], [-0.2, 0.1, 20.0]]],
                         ids=["axisymmetric", "general"])
def test_rotated_inertia_is_alpha_transpose_I_alpha(I):
    alpha = _rotation([0.3, -0.7, 1.1])
    I = [[sp.Float(x) for x in row] for row in I]
    got = np.array(rotated_inertia(Recorder(), I, alpha), dtype=float)
    want = np.array(matmul(transpose(alpha), matmul(I, alpha)), dtype=float)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_rotation_product_over_two_rows_is_the_product():
    P_, Q = _rotation([0.4, 0.2, -1.3]), _rotation([-2.1, 0.5, 0.9])
    got = np.array(rotation_product(Recorder(), P_, Q, "R"), dtype=float)
    np.testing.assert_allclose(got, np.array(matmul(P_, Q), dtype=float), rtol=0, atol=1e-14)


@pytest.mark.parametrize("name, build", [("stewart_rrp_002", 1), ("hexapod_rsu", 0)])
def test_the_generator_keeps_the_build_with_the_fewest_operations(name, build):
    """Candidates: the reduction in C's frame (1.6.1), in frame 0 (1.6.2)."""
    pf, _ = P.bundled(name)
    ops = [optimise(c, pf).ops["total"] for c in pk.step_accel.candidates]
    assert ops.index(min(ops)) == build
    assert optimise(pk.step_accel, pf).ops["total"] == min(ops)
