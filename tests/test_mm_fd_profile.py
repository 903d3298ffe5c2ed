"""bench/mm_fd_profile.py measures where the mass matrix and forward dynamics spend their
operations and time; these tests check that its two instruments measure what they claim:
every operation is attributed to a stage, and the hand-made C variants change only what their
names say (the stores they drop, the sine and cosine they replace by a rotation)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench import mm_fd_profile as prof
from mechgen.generator.families import family_of
from mechgen.generator.families.serial import kernels as K
from mechgen.generator.frontend import load
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code
from mechgen.generator.passes.opcount import count_ops


@pytest.fixture(scope="module")
def ur5_chain():
    model = load(prof.MECHANISMS / prof.BUNDLED["ur5"])
    return family_of(model).coded(model)


@pytest.mark.parametrize("build", [K.mass_matrix, K.forward_dynamics_ltdl,
                                   K.forward_dynamics_aba], ids=lambda b: b.__name__)
def test_every_operation_is_attributed_to_a_stage(ur5_chain, build):
    kernel = build(ur5_chain)
    stages = prof.stage_ops(kernel)
    assert "other" not in stages
    total = count_ops(remove_dead_code(drop_unguarded_checks(kernel)))["total"]
    assert sum(stages.values()) == total


def test_name_prefix_drops_joint_numbers_only():
    assert [prof.name_prefix(s) for s in ("IJ7_00", "omega_p12_y", "quat_k", "F_c3_x", "c10")] \
        == ["IJ", "omega_p", "quat_k", "F_c", "c"]


@pytest.fixture(scope="module")
def ur5_folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile")
    info = prof.generate_dynamics("ur5", tmp)
    folder = tmp / info["model"]
    manifest = json.loads((folder / "manifest.json").read_text())
    return folder, info["model"], {k["name"]: k for k in manifest["kernels"]}, manifest["n"]


def _outputs(folder: Path, model: str, kernel: dict, c_text: str, tag: str) -> np.ndarray:
    exe = prof.build(folder, model, kernel, c_text, tag)
    out = subprocess.run([str(exe), "1", "state0"], check=True, capture_output=True, text=True)
    return np.array([float(x) for x in out.stdout.split()])


def test_store_variants_drop_only_zeros_and_the_lower_triangle(ur5_folder):
    folder, model, kernels, n = ur5_folder
    mm = kernels["mass_matrix"]
    c_text = (folder / f"{model}.c").read_text()
    full = _outputs(folder, model, mm, c_text, "generated").reshape(n, n)
    lean = prof.variant(c_text, mm["c_function"], n, zeros=True, upper=True)
    assert lean.count("A[") < c_text.count("A[")
    upper = _outputs(folder, model, mm, lean, "upper").reshape(n, n)
    iu = np.triu_indices(n)
    assert np.array_equal(upper[iu], full[iu])              # bit for bit
    assert not upper[np.tril_indices(n, -1)].any()          # never written: the zeroed buffer


def test_trig_stand_in_keeps_a_valid_mass_matrix(ur5_folder):
    """The stand-in is a rotation, so the timed kernels run on a symmetric positive definite
    matrix, as the generated ones do (forward dynamics takes the same path)."""
    folder, model, kernels, n = ur5_folder
    mm = kernels["mass_matrix"]
    c_text = (folder / f"{model}.c").read_text()
    changed = prof.variant(c_text, mm["c_function"], n, trig=True)
    assert prof.SINCOS not in changed[slice(*prof.function_span(changed, mm["c_function"]))]
    A = _outputs(folder, model, mm, changed, "trig").reshape(n, n)
    generated = _outputs(folder, model, mm, c_text, "generated").reshape(n, n)
    assert np.allclose(A, A.T, rtol=0, atol=0)
    assert np.linalg.eigvalsh(A).min() > 0
    assert not np.allclose(A, generated)                    # other angles: sin, cos replaced
