"""HyQ's hip angles, 1.57079632679 and 3.14159265359 in its URDF, miss quarter turns by
4.9e-12 rad and 2.1e-12 rad. Kept as written (the default ``snap = 1e-12``) they make every
vector carried across a hip cost more operations; with ``snap = 1e-11`` they are taken as exact
quarter turns (bench/general_robots.py's ``hyq_snap`` rows, docs/algorithms.md section 2.4.2).
Checked here, on the body-twist base: the snapped mass matrix and forward dynamics cost fewer
operations and agree with Pinocchio reading the URDF as written to 1e-10; against the kernels
of the model as written (relative to the largest entry) the mass matrix stays within 1e-12,
the accelerations move by about the 4.9e-12 rad the model moved (within 1e-11): snapping is a
change of model, which is why it is a spec option and a bench variant, not a default."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.generator.build import manifest_fields, write_files
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.families.serial import kernels as K
from mechgen.generator.families.serial.urdf import load_urdf
from mechgen.generator.pipeline import optimise
from tests import pinocchio_ref as pref
from tests.test_body_twist_base import URDFS, random_state
from tests.test_pinocchio_crosscheck import rel

HYQ = URDFS["hyq"]
BUILDERS = (K.mass_matrix, K.forward_dynamics)


def _generate(snap: float, root: Path):
    """(chain, loaded C kernels, {kernel: ops}) of HyQ on the body-twist base, mass matrix and
    forward dynamics only."""
    name = f"hyq_snap{int(snap > 1e-12)}"
    chain = load_urdf(HYQ, name, base="free", gravity=(0, 0, -9.81), attitude="quaternion",
                      base_velocity="body", snap=snap)
    gen = [optimise(b, chain) for b in BUILDERS]
    write_files(root / name, render(name, f"{name}.toml", sha256_text(name), gen,
                                    manifest_fields(chain)))
    return chain, runtime.load(name, "c", generated=root), \
        {g.kernel.name: g.ops["total"] for g in gen}


@pytest.fixture(scope="module")
def hyq_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("snap")
    return _generate(1e-12, root), _generate(1e-11, root)


def test_snapping_the_hip_angles_prunes_both_kernels(hyq_pair):
    (_, _, exact_ops), (_, _, snapped_ops) = hyq_pair
    for kernel in exact_ops:
        assert snapped_ops[kernel] < exact_ops[kernel], (kernel, exact_ops, snapped_ops)


def test_snapped_kernels_agree_with_pinocchio_and_the_exact_model(hyq_pair):
    (chain, exact, _), (_, snapped, _) = hyq_pair
    pm = pref.build(HYQ, chain)                     # the URDF as written
    rng = np.random.default_rng(3)
    worst = {"pinocchio mass matrix": 0.0, "pinocchio forward dynamics": 0.0,
             "exact mass matrix": 0.0, "exact forward dynamics": 0.0}
    for _ in range(10):
        s = random_state(rng, chain.n)
        q, qd, Q = s["q"], s["qd"], s["Q"]
        A, qdd = snapped.mass_matrix(q), snapped.forward_dynamics(q, qd, Q)
        for label, value in (("pinocchio mass matrix", rel(A, pref.mass_matrix(pm, q))),
                             ("pinocchio forward dynamics",
                              rel(qdd, pref.forward_dynamics(pm, q, qd, Q))),
                             ("exact mass matrix", rel(A, exact.mass_matrix(q))),
                             ("exact forward dynamics",
                              rel(qdd, exact.forward_dynamics(q, qd, Q)))):
            worst[label] = max(worst[label], value)
    assert max(v for k, v in worst.items() if k.startswith("pinocchio")) < 1e-10, worst
    assert worst["exact mass matrix"] < 1e-12, worst
    # the model moved by 4.9e-12 rad: accelerations move by about that much (4.4e-12 measured)
    assert worst["exact forward dynamics"] < 1e-11, worst


def test_coefficients_that_round_to_one_are_not_multiplications(hyq_pair, tmp_path):
    """As written, a rotated inertia's coefficient is 1 - 2.4e-23, printed 1.0: the kernels
    subtract or add the term instead of multiplying it by 1.0 (generator/passes/units.py)."""
    (chain, _, _), _ = hyq_pair
    gen = optimise(K.mass_matrix, chain)
    write_files(tmp_path / "hyq_units", render("hyq_units", "hyq_units.toml",
                                                sha256_text("u"), [gen], manifest_fields(chain)))
    c_text = (tmp_path / "hyq_units" / "hyq_units.c").read_text()
    assert "(2.3976582465313225e-23)" in c_text      # the near-quarter-turn geometry is there
    assert not re.search(r"[^0-9.e]1\.0\*", c_text)
    assert [p for p in gen.passes if p[0] == "integer_units"][0][1]["total"] \
        < gen.passes[0][1]["total"]
