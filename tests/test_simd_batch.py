"""The SIMD batch of every C kernel (blocks of W states vectorised across the states,
mechgen.generator.simd) equals its single-state kernel bit for bit: outputs, statuses, the NaN
rows of failed states, every tail length, NaN inputs.

The kernels are the committed ones of a serial arm, a free-base tree, a parallel mechanism, a
closed-loop linkage and the contact interface, compiled by the runtime with the SIMD build
switched on (``MECHGEN_SIMD=1``: ``-DMECHGEN_SIMD=1``, ``-fopenmp-simd`` and ``-march=native``
when the compiler takes them) and called directly through cffi, states one after another vs one
batch call. The blocks have the lanes the target picks (``MG_SIMD_WIDTH``: 8 with AVX-512, 4
with AVX2, none elsewhere); the tests at the end force 2, 3, 4 and 8 lanes on any target.
"""

from __future__ import annotations

import json
import platform
import re
import shlex
import subprocess
from math import prod
from pathlib import Path

import numpy as np
import pytest

from mechgen.generator.simd import MAX_WIDTH, calls_in, hoist_calls, simd_plan
from mechgen.runtime import cbuild
from tests.kernel_calls import assert_bitwise, run_kernel
from tests.kernel_inputs import nominal_input

ROOT = Path(__file__).resolve().parent.parent
MECHANISMS = ["ur5", "solo12", "gough_stewart_docking", "double_wishbone", "apas_interface"]
FAILING = {"gough_stewart_docking"}   # random states far from home fail its checks
WIDTH = MAX_WIDTH
"""Batch sizes are counted in the widest block: whatever lane count the target compiles
(MG_SIMD_WIDTH <= MAX_WIDTH), they hold several blocks and every tail length."""
STATES = 6 * WIDTH + 3          # blocks and a tail


@pytest.fixture(autouse=True, scope="module")
def simd_build():
    """Every library of this module is the SIMD build (its own cache entry: the flags differ)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(cbuild.SIMD_ENV, "1")
        yield


def _library(name: str):
    folder = ROOT / "generated" / name
    manifest = json.loads((folder / "manifest.json").read_text())
    module = cbuild.load_c(folder, manifest)
    assert "-DMECHGEN_SIMD=1" in cbuild.cflags()
    return module, manifest


def test_the_simd_build_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv(cbuild.SIMD_ENV, raising=False)
    assert cbuild.cflags() == cbuild.base_flags() + cbuild.isa_flags() + cbuild.vector_loop_flags()
    monkeypatch.setenv(cbuild.SIMD_ENV, "1")
    assert cbuild.cflags()[-1] == "-DMECHGEN_SIMD=1"
    monkeypatch.setenv(cbuild.SIMD_ENV, "yes")
    with pytest.raises(ValueError, match="MECHGEN_SIMD must be 0 or 1"):
        cbuild.cflags()


def _inputs(manifest: dict, meta: dict, n: int, rng) -> list[np.ndarray]:
    """Random states: half near the spec's home pose and default parameters, half far off
    (where checks fail)."""
    spread = np.where(np.arange(n) % 2 == 0, 0.05, 1.5)[:, None]
    arrays = []
    for p in meta["inputs"]:
        size = prod(p["shape"])
        base = nominal_input(manifest, p)
        scale = 0.0 if p["name"] == "p" else 1.0
        arrays.append(np.ascontiguousarray(base + scale * spread * rng.uniform(-1, 1, (n, size))))
    return arrays


@pytest.fixture(scope="module", params=MECHANISMS)
def mechanism(request):
    return _library(request.param)


def test_batch_equals_single_state_kernel_bitwise_for_every_kernel(mechanism):
    module, manifest = mechanism
    rng = np.random.default_rng(13)
    any_failed = False
    for meta in manifest["kernels"]:
        inputs = _inputs(manifest, meta, STATES, rng)
        single = run_kernel(module, meta, inputs, batch=False)
        assert_bitwise(run_kernel(module, meta, inputs, batch=True), single,
                        f"{manifest['mechanism']}.{meta['name']}")
        failed = single[1] != 0
        any_failed |= bool(failed.any())
        for o in single[0]:
            assert np.isnan(o[failed]).all()
    if manifest["mechanism"] in FAILING:
        assert any_failed, "no state failed a check: the failure path was not exercised"


def test_free_base_singular_states_fail_as_in_the_single_state_kernel():
    """solo12's forward dynamics refuses |cos psi_z| < 1e-3: a batch mixing such states."""
    module, manifest = _library("solo12")
    meta = next(k for k in manifest["kernels"] if k["name"] == "forward_dynamics")
    inputs = _inputs(manifest, meta, 5 * WIDTH + 1, np.random.default_rng(3))
    psi_z = manifest["coordinates"].index("base_rz")
    inputs[0][::3, psi_z] = np.pi / 2
    single = run_kernel(module, meta, inputs, batch=False)
    assert np.count_nonzero(single[1]) == len(inputs[0][::3])
    assert_bitwise(run_kernel(module, meta, inputs, batch=True), single, "solo12.forward_dynamics")


@pytest.mark.parametrize("name", ["gough_stewart_docking", "ur5"])
def test_every_tail_length_matches(name):
    module, manifest = _library(name)
    rng = np.random.default_rng(5)
    meta = manifest["kernels"][-1] if name == "ur5" else next(
        k for k in manifest["kernels"] if k["name"] == "step")
    inputs = _inputs(manifest, meta, 2 * WIDTH + WIDTH, rng)
    for n in range(0, WIDTH + 1):
        for start in (0, WIDTH + 1):            # a tail alone, and a block then the tail
            part = [np.ascontiguousarray(a[start:start + WIDTH * (start > 0) + n])
                    for a in inputs]
            assert_bitwise(run_kernel(module, meta, part, True),
                           run_kernel(module, meta, part, False),
                           f"{name}.{meta['name']} n={len(part[0])}")


@pytest.mark.parametrize("name", ["solo12", "gough_stewart_docking"])
def test_nan_inputs_give_the_single_state_bits(name):
    module, manifest = _library(name)
    rng = np.random.default_rng(9)
    for meta in manifest["kernels"][:6]:
        inputs = _inputs(manifest, meta, 3 * WIDTH, rng)
        for k, a in enumerate(inputs):
            a[k % len(a), rng.integers(a.shape[1])] = np.nan
            a[WIDTH + 1, :] = np.nan
        assert_bitwise(run_kernel(module, meta, inputs, True),
                       run_kernel(module, meta, inputs, False),
                       f"{name}.{meta['name']} with NaN inputs")


@pytest.mark.parametrize("name", ["ur5", "solo12"])
def test_sin_cos_arguments_beyond_the_polynomial_range_give_the_single_state_bits(name):
    """A lane with an angle beyond MG_TRIG_BOUND (1.6e6) or infinite is computed again by the
    single-state kernel (libm's sin and cos); the vector loops' polynomial alone would differ."""
    module, manifest = _library(name)
    rng = np.random.default_rng(17)
    for meta in manifest["kernels"][:4]:
        inputs = _inputs(manifest, meta, 3 * WIDTH, rng)
        q = inputs[0]
        q[1, :] = 1e7
        q[WIDTH + 3, -1] = -2e6
        q[2 * WIDTH + 5, 0] = np.inf
        single = run_kernel(module, meta, inputs, batch=False)
        assert_bitwise(run_kernel(module, meta, inputs, batch=True), single,
                        f"{name}.{meta['name']} with huge angles")


def test_nested_calls_are_hoisted_innermost_first():
    temps: dict[str, str] = {}
    text, created = hoist_calls("a*sin(atan2(b, sqrt(c))) + cos(d)", temps, "mg_")
    assert created == ["atan2(b, sqrt(c))", "sin(mg_c0)", "cos(d)"]
    assert text == "a*mg_c1 + mg_c2"
    assert [n for n, _, _ in calls_in(text)] == []


def _context(body: list[dict], outputs: list[str]) -> dict:
    return {"inputs": [{"name": "q", "size": 2, "used": [{"name": "q0", "index": 0},
                                                         {"name": "q1", "index": 1}]}],
            "outputs": [{"name": "y", "size": len(outputs), "elements": outputs}],
            "body": body, "has_checks": any(not b["assign"] for b in body)}


def test_checks_keep_their_order_across_stages():
    # the second check's input is ready before the first's: it must still come later
    body = [{"assign": True, "target": "c", "expr": "cos(q0)"},
            {"assign": False, "expr": "c - 0.5", "status": 1, "message": "first"},
            {"assign": False, "expr": "q1", "status": 2, "message": "second"}]
    plan = simd_plan(_context(body, ["c"]))
    checks = [ln["status"] for st in plan["stages"] for ln in st["lines"]
              if ln["kind"] == "check"]
    assert checks == [1, 2]


def test_unknown_function_is_refused():
    with pytest.raises(ValueError, match="erf"):
        simd_plan(_context([{"assign": True, "target": "e", "expr": "erf(q0)"}], ["e"]))


def test_a_kernel_too_large_for_the_stack_keeps_the_plain_loop(monkeypatch):
    import mechgen.generator.simd as simd
    body = [{"assign": True, "target": "c", "expr": "cos(q0)"}]
    assert simd.simd_plan(_context(body, ["c", "q1"]))["blocks"]
    monkeypatch.setattr(simd, "STACK_BYTES", 8 * simd.MAX_WIDTH * 2)
    assert not simd.simd_plan(_context(body, ["c", "q1"]))["blocks"]


def _vector_lines(plan: dict) -> list[tuple]:
    """(kind, target or load name) of the first vector stage's lines, in printed order."""
    stage = next(st for st in plan["stages"] if st["vector"])
    label = {"load": "name", "output": "extra", "check": "status"}
    return [(ln["kind"], ln[label.get(ln["kind"], "target")]) for ln in stage["lines"]]


def test_vector_lines_load_and_compute_sines_just_before_their_first_use():
    body = [{"assign": True, "target": "a", "expr": "2.0*q1"},
            {"assign": True, "target": "b", "expr": "mg_sin(q0)"},
            {"assign": True, "target": "d", "expr": "a*b"}]
    order = _vector_lines(simd_plan(_context(body, ["d", "a"])))
    # q0 is read and its sine taken only after a, the line before the first one needing them
    assert order == [("load", "q1"), ("assign", "a"), ("output", 1), ("load", "q0"),
                     ("assign", "b"), ("assign", "d"), ("output", 0)]


def test_outputs_are_stored_as_soon_as_their_inputs_exist_and_checks_keep_their_order():
    body = [{"assign": True, "target": "a", "expr": "q0 + 1.0"},
            {"assign": False, "expr": "a", "status": 1, "message": "first"},
            {"assign": True, "target": "b", "expr": "a*q1"},
            {"assign": False, "expr": "q1", "status": 2, "message": "second"}]
    order = _vector_lines(simd_plan(_context(body, ["b", "3.0", "a"])))
    assert ("output", 1) not in order               # a constant: written before the blocks
    assert order.index(("output", 2)) == order.index(("assign", "a")) + 1
    assert order.index(("output", 0)) == order.index(("assign", "b")) + 1
    assert [t for t in order if t[0] == "check"] == [("check", 1), ("check", 2)]


def test_constant_outputs_are_written_into_the_block_once_not_by_the_vector_loops():
    body = [{"assign": True, "target": "a", "expr": "q0 + 1.0"},
            {"assign": True, "target": "b", "expr": "a*q1"}]
    plan = simd_plan(_context(body, ["a", "0.0", "b", "a", "-2.5e-3", "b", ".5"]))
    (out,) = plan["outputs"]
    assert out["constants"] == [{"index": 1, "value": "0.0"}, {"index": 4, "value": "-2.5e-3"},
                                {"index": 6, "value": ".5"}]
    assert out["computed"] == [0, 2, 3, 5]
    assert sorted(t for kind, t in _vector_lines(plan) if kind == "output") == [0, 2, 3, 5]


def test_solo12_jacobian_blocks_store_only_their_non_constant_elements():
    """The committed C: of T's 918 elements, 718 are constants, written before the blocks."""
    text = (ROOT / "generated" / "solo12" / "solo12.c").read_text()
    batch = text[text.index("int64_t mechgen_solo12_jacobians_batch("):]
    batch = batch[:batch.index("\n}\n")]
    assert len(re.findall(r"\n            mg_o_T\[\d+\]\[mg_l\] = ", batch)) == 918 - 718
    assert "static const int32_t mg_at[718]" in batch
    assert batch.index("mg_at[718]") < batch.index("for (; mg_i + MG_SIMD_WIDTH <= n;")


def test_a_sine_only_a_later_stage_reads_is_still_computed_and_stored():
    # s = sin(q0) feeds only atan2 (a scalar stage); its vector line must not be dropped
    body = [{"assign": True, "target": "s", "expr": "mg_sin(q0)"},
            {"assign": True, "target": "t", "expr": "atan2(s, q1)"}]
    plan = simd_plan(_context(body, ["t"]))
    first = next(st for st in plan["stages"] if st["vector"])
    line = next(ln for ln in first["lines"] if ln.get("target") == "s")
    assert line["stores"] == ["s"]


# --- the lane count, chosen when the C is compiled (templates/c/simd_block.c.j2) -------------

def _preprocess(flags: list[str]) -> subprocess.CompletedProcess:
    """ur5's C through the compiler's preprocessor under ``flags``."""
    folder = ROOT / "generated" / "ur5"
    return subprocess.run([*shlex.split(cbuild.compiler_command()), *flags, "-iquote",
                           str(folder), "-E", str(folder / "ur5.c")],
                          capture_output=True, text=True, timeout=60)


def _width_macro(flags: list[str]) -> str:
    """MG_SIMD_WIDTH as the preprocessor defines it in ur5's C under ``flags``."""
    run = _preprocess([*flags, "-dM"])
    assert run.returncode == 0, run.stderr
    return next(line.split()[2] for line in run.stdout.splitlines()
                if line.startswith("#define MG_SIMD_WIDTH "))


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the ISA macros tested are x86's")
@pytest.mark.parametrize("flags, width", [
    (["-march=x86-64", "-mavx512f", "-DMECHGEN_SIMD=1"], "8"),
    (["-march=x86-64", "-mavx2", "-DMECHGEN_SIMD=1"], "4"),
    (["-march=x86-64", "-DMECHGEN_SIMD=1"], "0"),        # SSE2: the blocks lose, none
    (["-march=x86-64", "-mavx512f"], "0"),               # the default build: none
    (["-march=x86-64", "-mavx2", "-DMECHGEN_SIMD=1", "-DMG_SIMD_WIDTH=2"], "2"),
])
def test_the_lane_count_follows_the_target_the_c_is_compiled_for(flags, width):
    assert _width_macro(flags) == width


def test_a_lane_count_beyond_the_block_buffers_is_refused_when_compiling():
    run = _preprocess(["-DMECHGEN_SIMD=1", f"-DMG_SIMD_WIDTH={MAX_WIDTH + 1}"])
    assert run.returncode != 0 and "MG_SIMD_WIDTH" in run.stderr


@pytest.mark.parametrize("width", [2, 3, 4, 8])
def test_every_lane_count_gives_the_single_state_bits(width, monkeypatch):
    """ur5 built with W lanes forced (-DMG_SIMD_WIDTH=W in CFLAGS, its own cache entry): every
    kernel, with a tail, NaN inputs and angles beyond the polynomial's range. 2, 4 and 8 lanes
    copy rows in and out by W x W transposes (ports larger and smaller than W, sizes not a
    multiple of W), 3 lanes by the plain loops."""
    import os
    monkeypatch.setenv("CFLAGS", f"{os.environ.get('CFLAGS', '')} -DMG_SIMD_WIDTH={width}")
    module, manifest = _library("ur5")
    rng = np.random.default_rng(width)
    for meta in manifest["kernels"]:
        inputs = _inputs(manifest, meta, 3 * WIDTH + width - 1, rng)
        inputs[0][width + 1, 0] = np.nan
        inputs[0][2 * width, -1] = 1e7
        assert_bitwise(run_kernel(module, meta, inputs, batch=True),
                       run_kernel(module, meta, inputs, batch=False),
                       f"ur5.{meta['name']} with {width} lanes")
