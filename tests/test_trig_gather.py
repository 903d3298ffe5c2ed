"""Gathered sines and cosines (generator/passes/sincos.py, gather_sincos; docs/sincos.md).

The pass on small bodies: which entries it gathers, what moves up, the padding. Then the
kernels: every C kernel of a mechanism in its gathered form (the committed generated/) equals
the same kernel generated with one ``mg_sincos`` per pair (the pass switched off) bit for bit,
on random states and on states with angles beyond MG_TRIG_BOUND, NaN and +-inf, in the default
build and in the SIMD build (-march=native, -fopenmp-simd; see BUILDS).
"""

from __future__ import annotations

import json
from math import prod
from pathlib import Path

import numpy as np
import pytest

import mechgen.generator.emit as emit
from mechgen.generator.build import manifest_fields, spec_sha
from mechgen.generator.passes.sincos import LANES, gather_sincos, pair_sincos
from mechgen.runtime import cbuild
from tests import shared
from tests.kernel_calls import assert_bitwise, run_kernel
from tests.kernel_inputs import nominal_input

ROOT = Path(__file__).resolve().parent.parent
SPECS = {"ur5": "ur5_urdf.toml", "solo12": "solo12.toml",
         "gough_stewart_docking": "gough_stewart_docking.toml"}
BUILDS = [("ur5", "0"), ("ur5", "1"), ("solo12", "0"), ("gough_stewart_docking", "1")]
"""(mechanism, MECHGEN_SIMD): the SIMD build (-march=native, -fopenmp-simd) of a serial arm and
a parallel mechanism, the default build of an arm and a free-base tree (compiling is the cost)."""
GATHERED = "    #pragma omp simd\n    for (int "   # the gathered loop of a single-state kernel
SPECIAL = [1e7, -1.7e6, 1.6e6, np.nextafter(1.6e6, 2e6), 1e300, np.nan, np.inf, -np.inf]


def st(target: str, expr: str) -> dict:
    return {"assign": True, "target": target, "expr": expr}


def test_arguments_free_of_trig_results_are_gathered_and_their_statements_move_up():
    body = pair_sincos([
        st("c1", "mg_cos(q1)"), st("s1", "mg_sin(q1)"),
        st("a", "s1*q2"),
        st("h", "0.5*q3"),                       # needed by a gathered argument
        st("c3", "mg_cos(h + q2)"), st("s3", "mg_sin(h + q2)"),
        st("c4", "mg_cos(a)"), st("s4", "mg_sin(a)"),   # argument from sin(q1): stays
        st("t", "mg_sin(q4)"),                    # a lone sine is gathered too
        st("out", "c1*s3 + c4*s4 + t"),
    ])
    out = gather_sincos(body, {"q"})
    gather = next(e["gather"] for e in out if e["gather"])
    assert gather["args"] == ["q1", "h + q2", "q4", "0.0"]
    assert gather["size"] % LANES == 0 and gather["count"] == 3
    assert [e.get("target") for e in out][:2] == ["h", None]        # h, then the loop
    reads = {e["target"]: e["expr"] for e in out if e["assign"] and e.get("target")
             and e["expr"].startswith(gather["prefix"])}
    p = gather["prefix"]
    assert reads == {"s1": f"{p}s[0]", "c1": f"{p}c[0]", "s3": f"{p}s[1]", "c3": f"{p}c[1]",
                     "t": f"{p}s[2]"}
    assert any(e.get("sincos") and e["sincos"]["arg"] == "a" for e in out)
    order = [e.get("target") for e in out]
    assert order.index("a") < order.index("out")


def test_a_kernel_with_one_sincos_keeps_the_scalar_call():
    body = pair_sincos([st("c1", "mg_cos(q1)"), st("s1", "mg_sin(q1)"), st("y", "c1*s1")])
    out = gather_sincos(body, set())
    assert not any(e["gather"] for e in out)
    assert [e["sincos"] for e in out] == [e["sincos"] for e in body]


def test_the_gathered_arrays_get_a_prefix_no_kernel_name_starts_with():
    body = pair_sincos([st("sc_x", "q1"), st("c1", "mg_cos(q1)"), st("s1", "mg_sin(q1)"),
                        st("c2", "mg_cos(sc_x)"), st("s2", "mg_sin(sc_x)")])
    gather = next(e["gather"] for e in gather_sincos(body, {"sc__q"}) if e["gather"])
    assert gather["prefix"] == "sc___"


@pytest.fixture(scope="module")
def per_pair_folders(tmp_path_factory):
    """mech -> a folder with its files rendered with the gathering pass switched off (from
    the kernels generated once per test run, tests/shared.py)."""
    folders = {}
    specs = {mech: ROOT / "generator" / "mechanisms" / SPECS[mech] for mech in dict(BUILDS)}
    kernels = {mech: shared.spec_kernels(tmp_path_factory, spec) for mech, spec in specs.items()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(emit, "gather_sincos",
                   lambda body, taken: [{**e, "gather": None} for e in body])
        for mech, (model, gen) in kernels.items():
            files = emit.render(model.name, specs[mech].name, spec_sha(specs[mech]), gen,
                                manifest_fields(model))
            folders[mech] = tmp_path_factory.mktemp(mech)
            for name, text in files.items():
                (folders[mech] / name).write_text(text)
    return folders


def _states(manifest: dict, meta: dict, rng) -> list[np.ndarray]:
    """Random inputs, then rows with one element (cycling over them) set to a special value."""
    n_random, arrays = 24, []
    for p in meta["inputs"]:
        size = prod(p["shape"])
        base = nominal_input(manifest, p)
        rows = np.tile(base, (n_random + len(SPECIAL) * size, 1))
        if p["name"] != "p":
            rows[:n_random] += rng.uniform(-1.5, 1.5, (n_random, size))
            for k, v in enumerate(SPECIAL):
                for j in range(size):
                    rows[n_random + k * size + j, j] = v
        arrays.append(rows)
    n = max(len(a) for a in arrays)
    return [np.ascontiguousarray(np.resize(a, (n, a.shape[1]))) for a in arrays]


@pytest.mark.parametrize("mech, simd", BUILDS)
def test_gathered_kernels_equal_the_per_pair_kernels_bitwise(mech, simd, per_pair_folders,
                                                             monkeypatch):
    folder, per_pair_folder = ROOT / "generated" / mech, per_pair_folders[mech]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert GATHERED in (folder / f"{mech}.c").read_text(), "no kernel of it is gathered"
    assert GATHERED not in (per_pair_folder / f"{mech}.c").read_text()
    monkeypatch.setenv(cbuild.SIMD_ENV, simd)
    gathered, per_pair = cbuild.load_c(folder, manifest), cbuild.load_c(per_pair_folder, manifest)
    rng = np.random.default_rng(7)
    for meta in manifest["kernels"]:
        inputs = _states(manifest, meta, rng)
        assert_bitwise(run_kernel(gathered, meta, inputs, batch=False),
                       run_kernel(per_pair, meta, inputs, batch=False), f"{mech}.{meta['name']}")
