"""The runtime's AVX2 build (``-mavx2`` when the building CPU has AVX2, runtime/cbuild.py
``isa_flags``) gives the baseline build's bits: every C kernel of a serial arm with its
derivatives and regressor, a free-base tree, a parallel mechanism and a closed-loop linkage,
compiled both ways by the runtime (``MECHGEN_AVX2=0`` and ``=1``: two cache entries) and called
through cffi on the same states, near home and far off (where checks fail)."""

from __future__ import annotations

import json
from math import prod
from pathlib import Path

import numpy as np
import pytest

from mechgen.runtime import cbuild
from tests.kernel_calls import assert_bitwise, run_kernel
from tests.kernel_inputs import nominal_input

ROOT = Path(__file__).resolve().parent.parent
MECHANISMS = ["ur5", "solo12", "gough_stewart_docking", "double_wishbone"]


def _library(name: str, avx2: str, monkeypatch):
    folder = ROOT / "generated" / name
    manifest = json.loads((folder / "manifest.json").read_text())
    monkeypatch.setenv(cbuild.ISA_ENV, avx2)
    flags = cbuild.cflags()
    module = cbuild.load_c(folder, manifest)
    monkeypatch.delenv(cbuild.ISA_ENV)
    return module, manifest, flags


def _inputs(manifest: dict, meta: dict, n: int, rng) -> list[np.ndarray]:
    spread = np.where(np.arange(n) % 2 == 0, 0.05, 1.5)[:, None]
    arrays = []
    for p in meta["inputs"]:
        base = nominal_input(manifest, p)
        scale = 0.0 if p["name"] == "p" else 1.0
        arrays.append(np.ascontiguousarray(
            base + scale * spread * rng.uniform(-1, 1, (n, prod(p["shape"])))))
    return arrays


def test_avx2_flags_are_given_as_asked(monkeypatch):
    cc = cbuild.compiler_command()
    takes = all(cbuild.accepts(cc, f) for f in cbuild.ISA_FLAGS)
    loops = cbuild.vector_loop_flags()
    monkeypatch.setenv(cbuild.ISA_ENV, "0")
    assert cbuild.cflags() == cbuild.base_flags() + loops
    monkeypatch.setenv(cbuild.ISA_ENV, "1")
    assert cbuild.cflags() == cbuild.base_flags() + (cbuild.ISA_FLAGS if takes else []) + loops
    monkeypatch.delenv(cbuild.ISA_ENV)
    assert cbuild.cflags() == cbuild.base_flags() + (cbuild.ISA_FLAGS if takes and
                                               cbuild.host_has_avx2(cc) else []) + loops
    monkeypatch.setenv(cbuild.ISA_ENV, "yes")
    with pytest.raises(ValueError, match="MECHGEN_AVX2 must be 0 or 1"):
        cbuild.cflags()


@pytest.mark.parametrize("name", MECHANISMS)
def test_avx2_build_gives_the_baseline_bits_for_every_kernel(name, monkeypatch):
    cc = cbuild.compiler_command()
    if not (all(cbuild.accepts(cc, f) for f in cbuild.ISA_FLAGS) and cbuild.host_has_avx2(cc)):
        pytest.skip("this compiler or CPU has no AVX2")
    base, manifest, base_flags = _library(name, "0", monkeypatch)
    avx2, _, avx2_flags = _library(name, "1", monkeypatch)
    assert "-mavx2" not in base_flags and "-mavx2" in avx2_flags
    rng = np.random.default_rng(23)
    failed_somewhere = False
    for meta in manifest["kernels"]:
        inputs = _inputs(manifest, meta, 64, rng)
        expected = run_kernel(base, meta, inputs, batch=False)
        failed_somewhere |= bool((expected[1] != 0).any())
        assert_bitwise(run_kernel(avx2, meta, inputs, batch=False), expected,
                       f"{name}.{meta['name']} (AVX2 build)")
        assert_bitwise(run_kernel(avx2, meta, inputs, batch=True), expected,
                       f"{name}.{meta['name']} (AVX2 build, batch)")
    if name == "gough_stewart_docking":
        assert failed_somewhere, "no state failed a check: the failure path was not exercised"
