"""Large outputs of a _batch call go through a local buffer and non-temporal stores
(templates/c/simd_block.c.j2 ``mg_stream_rows``, kernel.c.j2): the same bits as the
single-state kernel, failing states NaN as there, any 8-byte offset of the destination in a
cache line."""

from __future__ import annotations

import json
import re
from math import prod
from pathlib import Path

import numpy as np
import pytest

from mechgen.generator.backends.c import STREAM_MIN_SIZE
from mechgen.generator.emit import streamed_outputs
from mechgen.runtime import cbuild
from tests.kernel_calls import assert_bitwise, run_kernel
from tests.kernel_inputs import nominal_input

ROOT = Path(__file__).resolve().parent.parent
SOLO = ROOT / "generated" / "solo12"


def _stream_min() -> int:
    """MG_STREAM_MIN as the generated C defines it."""
    return int(re.search(r"#define MG_STREAM_MIN (\d+)", (SOLO / "solo12.c").read_text())[1])


@pytest.fixture(scope="module", params=["0", "1"], ids=["plain_loop", "simd_blocks"])
def solo12(request):
    """solo12's library in the default build (the batch loops over the single-state kernel)
    and in the SIMD build (blocks of states, their rows streamed from a local buffer)."""
    manifest = json.loads((SOLO / "manifest.json").read_text())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(cbuild.SIMD_ENV, request.param)
        return cbuild.load_c(SOLO, manifest), manifest


def _kernel(manifest: dict, name: str) -> dict:
    return next(k for k in manifest["kernels"] if k["name"] == name)


def _streamed_size(meta: dict) -> int:
    return sum(prod(p["shape"]) for p in meta["outputs"] if prod(p["shape"]) >= STREAM_MIN_SIZE)


def _inputs(manifest: dict, meta: dict, n: int, singular_every: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    arrays = []
    for p in meta["inputs"]:
        base = nominal_input(manifest, p)
        scale = 0.0 if p["name"] == "p" else 0.5
        arrays.append(np.ascontiguousarray(base + scale * rng.uniform(-1, 1, (n, prod(p["shape"])))))
    if singular_every:
        arrays[0][::singular_every, manifest["coordinates"].index("base_rz")] = np.pi / 2
    return arrays


@pytest.mark.parametrize("kernel", ["mass_matrix", "forward_dynamics_derivatives"])
def test_a_batch_beyond_the_stream_threshold_gives_the_single_state_bits(solo12, kernel):
    module, manifest = solo12
    meta = _kernel(manifest, kernel)
    size = _streamed_size(meta)
    assert size > 0, f"{kernel} has no output of {STREAM_MIN_SIZE} doubles or more"
    n = _stream_min() // size + 7                 # the streamed path is taken
    assert n * size > _stream_min()
    inputs = _inputs(manifest, meta, n, singular_every=5 if kernel != "mass_matrix" else 0)
    single = run_kernel(module, meta, inputs, batch=False)
    batch = run_kernel(module, meta, inputs, batch=True)
    assert_bitwise(batch, single, f"solo12.{kernel}")
    failed = single[1] != 0
    if kernel != "mass_matrix":
        assert failed.sum() == len(inputs[0][::5]), "the singular states did not fail"
        for o in batch[0]:
            assert np.isnan(o[failed]).all()


@pytest.mark.parametrize("offset", range(8))
def test_rows_at_any_offset_in_a_cache_line_are_written_in_full(solo12, offset):
    """Forward kinematics' rotations, 153 doubles a state (rows neither line- nor 16-byte
    aligned every other state), into a destination ``offset`` doubles past a 64-byte line:
    the partial lines by plain stores, the whole lines streamed, nothing beyond the rows."""
    module, manifest = solo12
    ffi, lib = module.ffi, module.lib
    meta = _kernel(manifest, "forward_kinematics")
    sizes = [prod(p["shape"]) for p in meta["outputs"]]
    assert sizes == [51, 153]
    n = _stream_min() // 153 + 5                  # tau alone is streamed, beyond the threshold
    (q,) = _inputs(manifest, meta, n)
    (r_ref, tau_ref), st_ref = run_kernel(module, meta, [q], batch=False)
    store = np.full(n * 153 + 16, 7.0)
    start = (-(store.ctypes.data // 8) + offset) % 8
    tau = store[start:start + n * 153]
    assert tau.ctypes.data % 64 == 8 * offset
    r = np.full((n, 51), 7.0)
    status = np.full(n, -1, dtype=np.int32)
    ptr = lambda a: ffi.cast("double *", a.ctypes.data)
    failed = lib.mechgen_solo12_forward_kinematics_batch(n, ptr(q), ptr(r), ptr(tau),
                                                         ffi.cast("int32_t *", status.ctypes.data))
    assert failed == 0 and not status.any() and not st_ref.any()
    assert np.array_equal(tau.reshape(n, 153).view(np.uint64), tau_ref.view(np.uint64))
    assert np.array_equal(r.view(np.uint64), r_ref.view(np.uint64))
    rest = np.delete(store, np.arange(start, start + n * 153))
    assert (rest == 7.0).all(), "a double beyond the rows was written"


def test_only_outputs_of_many_doubles_are_streamed():
    outputs = [{"name": "qdd", "size": 18}, {"name": "A", "size": STREAM_MIN_SIZE},
               {"name": "J", "size": STREAM_MIN_SIZE - 1}]
    assert [p["name"] for p in streamed_outputs(outputs)] == ["A"]
    text = (ROOT / "generated" / "ur5" / "ur5.c").read_text()
    batch = lambda kernel: text.split(f"mechgen_ur5_{kernel}_batch(int64_t n")[1].split("\n}\n")[0]
    assert "mg_sb_" not in batch("mass_matrix"), "ur5's 6 x 6 mass matrix is not streamed"
    assert "mg_stream_rows(Y + mg_i * 360, mg_sb_Y, 360);" in batch("regressor")
    solo = (SOLO / "solo12.c").read_text()
    assert "mg_stream_rows(A + mg_i * 324, mg_sb_A, 324);" in solo
