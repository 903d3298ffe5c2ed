"""The plain numpy implementation of the linkage equations (tests/reference/linkage_tree_numpy.py,
the benchmark's numpy reference) agrees with the generated kernels on every bundled linkage:
newton_step, velocity, mass_matrix, forward and inverse dynamics, to 1e-10 relative."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from tests.reference import linkage_tree_numpy as ref
from tests.test_linkage_kernels import LINKAGES, poses

SPECS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"


def close(a, b, rel: float = 1e-10) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and np.abs(a - b).max() <= rel * max(1.0, np.abs(b).max())


@pytest.mark.parametrize("name", LINKAGES)
def test_numpy_reference_equals_the_kernels(name):
    mech = runtime.load(name)
    num = ref.from_spec(SPECS / f"{name}.toml")
    assert num.rows == mech.manifest["constraint_rows"]
    rng = np.random.default_rng(7)
    for q, w in poses(mech, 3, seed=9):
        start = q + rng.uniform(-0.02, 0.02, mech.n)
        q_next, err, det, orient = mech.newton_step(start)
        q_n, err_n, det_n, orient_n = ref.newton_step(num, start)
        assert close(q_next, q_n) and close(err, [err_n]) and close(orient, orient_n)
        assert close(det, [det_n])
        qd, H = mech.velocity(q, w)
        qd_n, H_n = ref.velocity(num, q, w)
        assert close(qd, qd_n) and close(H, H_n)
        assert close(mech.mass_matrix(q), ref.mass_matrix(num, q))
        tau = rng.normal(size=mech.n)
        qdd, lam, *_ = mech.forward_dynamics(q, qd, tau)
        qdd_n, lam_n = ref.forward_dynamics(num, q, qd, tau)
        assert close(qdd, qdd_n) and close(lam, lam_n)
        a_ind = rng.normal(size=len(w))
        tau_i, qdd_i, lam_i, *_ = mech.inverse_dynamics(q, qd, a_ind)
        tau_n, qdd_in, lam_in = ref.inverse_dynamics(num, q, qd, a_ind)
        assert close(tau_i, tau_n) and close(qdd_i, qdd_in) and close(lam_i, lam_in)
