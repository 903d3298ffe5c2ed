"""Forward dynamics by the articulated-body algorithm (generator/algorithms/aba.py) and the choice
between it and CRBA + bias + L^T D L by operation count (kernels.forward_dynamics).

Both forms are generated side by side for random chains and trees (fixed and free bases,
prismatic joints, massless bodies, springs, named parameters) and for Solo-12 with a
quaternion base, and must agree with each other, with the numpy reference and with
Featherstone's spatial ABA to 1e-10 (relative to the largest |qdd|, at least 1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.generator.build import manifest_fields
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.build import write_files
from mechgen.generator.families.serial import kernels
from mechgen.generator.families.serial.spec import ChainBuilder
from mechgen.generator.frontend import load
from mechgen.generator.model import ModelError
from mechgen.generator.pipeline import optimise
from tests.chains import featherstone_chain, numeric_model, random_chain
from tests.reference import chain_numpy as ref
from tests.reference import featherstone as fs

RTOL = 1e-10
STATES = 12
FORMS = {"aba": kernels.forward_dynamics_aba, "ltdl": kernels.forward_dynamics_ltdl}
MECHANISMS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"

# (seed, joints, base, named parameters, tree)
CASES = [(31, 3, "fixed", False, False), (32, 7, "fixed", True, False),
         (33, 6, "free", True, False), (34, 9, "fixed", False, True),
         (35, 11, "free", False, True), (36, 8, "fixed", True, True)]


def close(a, b, rtol=RTOL, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(a - b).max())
    assert err <= rtol * scale, f"{what}: max error {err:.3e} > {rtol:.0e} * {scale:.3e}"


def _generate_forms(chain, root: Path) -> dict:
    """Each form of forward_dynamics alone in a mechanism <name>_<form>; loaded in C."""
    coded = chain.with_prefixed_parameters()
    out = {}
    for form, build in FORMS.items():
        name = f"{chain.name}_{form}"
        gen = [optimise(build, coded)]
        write_files(root / name, render(name, f"{name}.toml", sha256_text(name), gen,
                                        manifest_fields(chain)))
        out[form] = (runtime.load(name, "c", generated=root), gen[0].ops["total"])
    return out


def _states(chain, rng, nq: int):
    q = rng.uniform(-np.pi, np.pi, (STATES, nq))
    for i, j in enumerate(chain.joints):
        if j.kind == "P" and i < nq:
            q[:, i] = rng.uniform(-0.5, 0.5, STATES)
    if chain.base == "free" and chain.attitude == "euler":
        q[:, 3:6] = rng.uniform(-1.0, 1.0, (STATES, 3))
    return q, rng.normal(size=(STATES, chain.n)), rng.normal(size=(STATES, chain.n))


@pytest.fixture(scope="module", params=CASES,
                ids=lambda c: f"seed{c[0]}-n{c[1]}-{c[2]}{'-tree' if c[4] else ''}")
def case(request, tmp_path_factory):
    seed, n, base, params, tree = request.param
    chain, pvals = random_chain(seed, n, base, params=params, tree=tree)
    forms = _generate_forms(chain, tmp_path_factory.mktemp("forms"))
    return chain, numeric_model(chain, pvals), forms, _states(chain, np.random.default_rng(seed),
                                                              chain.n)


def test_aba_and_ltdl_forward_dynamics_agree_with_references(case):
    chain, model, forms, (q, qd, Q) = case
    P = {"p": np.tile(model["p"], (STATES, 1))} if model["p"].size else {}
    qdd = {form: mech.forward_dynamics(q, qd, Q, **P) for form, (mech, _) in forms.items()}
    fsc = featherstone_chain(model)
    for s in range(STATES):
        close(qdd["aba"][s], qdd["ltdl"][s], what="ABA vs L^T D L")
        expected = ref.forward_dynamics(model, q[s], qd[s], Q[s])
        close(qdd["aba"][s], expected, rtol=1e-9, what="ABA vs numpy")
        close(qdd["aba"][s], fs.aba(fsc, q[s], qd[s], Q[s] + ref.passive(model, q[s], qd[s]),
                                    model["gravity"]), rtol=1e-9, what="ABA vs featherstone")


def test_forward_dynamics_is_the_form_with_fewer_operations(case):
    chain, _, forms, _ = case
    chosen = optimise(kernels.forward_dynamics, chain.with_prefixed_parameters())
    counts = {form: ops for form, (_, ops) in forms.items()}
    assert chosen.ops["total"] == min(counts.values())
    cheaper = min(counts, key=counts.get)
    assert ("articulated-body" in chosen.kernel.doc) == (cheaper == "aba" and
                                                         counts["aba"] < counts["ltdl"])


@pytest.fixture(scope="module")
def quaternion_solo(tmp_path_factory):
    d = tmp_path_factory.mktemp("solo_quat")
    text = (MECHANISMS / "solo12.toml").read_text().replace(
        'base = "free"', 'base = "free"\nattitude = "quaternion"').replace(
        'urdf = "urdf/', f'urdf = "{MECHANISMS}/urdf/')
    spec = d / "solo12q.toml"
    spec.write_text(text)
    chain = load(spec)
    return chain, _generate_forms(chain, d / "generated")


def test_aba_on_a_quaternion_base_agrees_with_ltdl(quaternion_solo):
    chain, forms = quaternion_solo
    rng = np.random.default_rng(5)
    q, qd, Q = _states(chain, rng, chain.nq)
    q[:, 3:7] = rng.normal(size=(STATES, 4))           # any norm: the kernels normalise
    a, b = (forms[f][0].forward_dynamics(q, qd, Q) for f in ("aba", "ltdl"))
    for s in range(STATES):
        close(a[s], b[s], what="ABA vs L^T D L, quaternion base")


def _pendulum() -> "ChainBuilder":
    b = ChainBuilder("sph_pend", gravity=[0.0, 0.0, -9.81])
    b.joint("yaw", "Rz", [0, 0, 0], [])
    b.joint("pitch", "Ry", [0, 0, 0], [], body={"name": "bob", "mass": 2.0, "com": [0, 0, 1.0]})
    return b


def test_aba_pivot_status_on_a_singular_configuration(tmp_path):
    chain = _pendulum().build()
    mech, _ = _generate_forms(chain, tmp_path)["aba"]
    assert mech.forward_dynamics.statuses == {1: "mass matrix not positive definite"}
    z = np.zeros(2)
    out = mech.forward_dynamics(np.array([[0.3, 0.0], [0.3, 0.5]]), np.zeros((2, 2)),
                                np.zeros((2, 2)), errors="nan")
    assert np.isnan(out[0]).all()                      # bob on the yaw axis: D_yaw = 0
    np.testing.assert_allclose(out[1], [0.0, 9.81 * np.sin(0.5)], rtol=1e-12, atol=1e-14)
    with pytest.raises(runtime.KernelStatusError):
        mech.forward_dynamics(np.array([0.3, 0.0]), z, z)


def test_aba_refuses_a_joint_that_moves_no_mass():
    b = _pendulum()
    b.joint("spin", "Rz", [0, 0, 0], [],                # a point mass on its own axis: D = 0
            body={"name": "dot", "mass": 1.0, "com": [0, 0, 1.0]})
    with pytest.raises(ModelError, match="'spin' moves no mass"):
        kernels.forward_dynamics_aba(b.build().with_prefixed_parameters())


def test_choice_keeps_the_first_candidate_on_a_tie_and_the_cheaper_otherwise():
    from dataclasses import replace
    from mechgen.generator.pipeline import choice
    chain = _pendulum().build()

    def ltdl_labelled(doc):
        return lambda c: replace(kernels.forward_dynamics_ltdl(c), doc=doc)

    first, second = ltdl_labelled("first"), ltdl_labelled("second")
    tie = choice(first, second)(lambda c: None)
    assert optimise(tie, chain).kernel.doc == "first"
    assert tie(chain).doc == "first"
    ops = {f: optimise(b, chain).ops["total"] for f, b in FORMS.items()}
    assert ops["aba"] != ops["ltdl"]
    cheaper = min(ops, key=ops.get)
    either = choice(kernels.forward_dynamics_ltdl, kernels.forward_dynamics_aba)(lambda c: None)
    assert optimise(either, chain).ops["total"] == ops[cheaper]
    assert ("articulated-body" in either(chain).doc) == (cheaper == "aba")


def test_aba_reports_the_euler_singularity_before_any_pivot(case):
    chain, model, forms, (q, qd, Q) = case
    if chain.base != "free":
        pytest.skip("fixed base: no Euler angles")
    from mechgen.generator.statuses import EULER_BASE_SINGULAR
    q = q.copy()
    q[:, 4] = np.pi / 2                                 # psi_z = 90 deg
    P = {"p": np.tile(model["p"], (STATES, 1))} if model["p"].size else {}
    for form, (mech, _) in forms.items():
        with pytest.raises(runtime.KernelStatusError, match="free base within") as info:
            mech.forward_dynamics(q, qd, Q, **P)
        assert (info.value.status == EULER_BASE_SINGULAR).all(), form
