"""Output stores placed right after the statement that completes them (generator/passes/stores.py):
where the pass puts each store, that the printed C follows it, and that a check failing after
some outputs were written still leaves only NaN."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from mechgen.generator.passes.stores import place_stores
from mechgen.runtime import cbuild
from tests.kernel_calls import run_kernel
from tests.kernel_inputs import nominal_input

GENERATED = Path(__file__).resolve().parent.parent / "generated"


def _assign(target: str, expr: str) -> dict:
    return {"assign": True, "target": target, "expr": expr, "loop": None, "sincos": None}


def test_each_store_follows_the_entry_that_defines_its_last_name():
    loop = {"targets": [["t0"], ["t1"]], "slots": ["u"], "body": [], "results": ["v"],
            "columns": [["a"], ["b"]], "prefix": "cl0_", "size": 2}
    body = [_assign("a", "q1*2.0"),
            {"assign": True, "target": None, "expr": None, "loop": None,
             "sincos": {"sin": "s1", "cos": "c1", "arg": "q1"}},
            _assign("b", "a*c1"),
            {"assign": True, "target": None, "expr": None, "loop": loop, "sincos": None},
            {"assign": False, "status": 3, "message": "m", "expr": "b", "loop": None},
            _assign("d", "t1 - a")]
    outputs = [{"name": "y", "elements": ["a*s1", "t0 + b", "0.0", "q1", "d", "a"]}]
    placed, last = place_stores(body, outputs)
    where = {(s["port"], s["index"]): i for i, st in enumerate(placed) for s in st["stores"]}
    assert where == {("y", 0): 1, ("y", 1): 3, ("y", 4): 5, ("y", 5): 0}
    assert [(s["index"], s["expr"]) for s in last] == [(2, "0.0"), (3, "q1")]
    assert [st.get("target") for st in placed] == [st.get("target") for st in body]


def _functions(c_text: str):
    """(name, output names, body lines) of every single-state kernel of a generated C file."""
    for m in re.finditer(r"^int (mechgen_\w+)\((.*?)\)\n\{\n(.*?)^\}\n", c_text, re.S | re.M):
        name, signature, body = m.groups()
        outs = re.findall(r"(?<!const )double \*restrict (\w+)", signature)
        yield name, outs, body.split("\n")


def test_generated_c_stores_every_output_once_after_its_names_and_before_the_end():
    """Every kernel of the bundled solo12 and Gough-Stewart files: each output element stored
    exactly once, after the definition of every name it reads; and the stores are spread
    through the body (the mass matrix's first store comes before its last statement)."""
    for mech in ("solo12", "gough_stewart_docking"):
        text = (GENERATED / mech / f"{mech}.c").read_text()
        manifest = json.loads((GENERATED / mech / "manifest.json").read_text())
        sizes = {k["c_function"]: {p["name"]: int(np.prod(p["shape"])) for p in k["outputs"]}
                 for k in manifest["kernels"]}
        for name, outs, lines in _functions(text):
            defined: set[str] = set()
            stored: dict[str, list[int]] = {o: [] for o in outs}
            store = re.compile(r"    (%s)\[(\d+)\] = (.*);$" % "|".join(outs))
            for line in lines:
                m = re.match(r"\s+(?:const )?double (\w+)(?: =|, (\w+);)", line)
                if m:
                    defined |= {g for g in m.groups() if g}
                m = store.match(line)
                if m:
                    reads = set(re.findall(r"\b([A-Za-z_]\w*)\b(?!\s*\()", m.group(3)))
                    missing = reads - defined
                    assert not missing, f"{mech} {name}: {m.group(0).strip()} before {missing}"
                    stored[m.group(1)].append(int(m.group(2)))
            for port, indices in stored.items():
                assert sorted(indices) == list(range(sizes[name][port])), f"{name}.{port}"
    mm = next(lines for name, _, lines in _functions((GENERATED / "solo12" / "solo12.c")
                                                      .read_text())
              if name == "mechgen_solo12_mass_matrix")
    first_store = next(i for i, ln in enumerate(mm) if ln.startswith("    A["))
    last_statement = max(i for i, ln in enumerate(mm) if ln.startswith("    const double"))
    assert first_store < last_statement


def manifest_statuses(meta: dict) -> set[int]:
    """The stroke-limit statuses of a kernel's manifest entry."""
    return {int(code) for code, text in meta["statuses"].items() if "stroke" in text}


def test_a_check_failing_after_stores_leaves_every_output_nan():
    """Gough-Stewart inverse kinematics stores leg 1's coordinates before leg 1's stroke-limit
    checks: a pose beyond the stroke gives NaN in every output (the ``fail:`` path, the
    outputs prefilled with 7.0) and the status of the failing check."""
    folder = GENERATED / "gough_stewart_docking"
    manifest = json.loads((folder / "manifest.json").read_text())
    module = cbuild.load_c(folder, manifest)
    meta = next(k for k in manifest["kernels"] if k["name"] == "inverse_kinematics")
    text = (folder / "gough_stewart_docking.c").read_text()
    lines = next(ls for name, _, ls in _functions(text) if name == meta["c_function"])
    first_store = min(i for i, ln in enumerate(lines) if ln.startswith("    q["))
    assert any("goto fail" in ln for ln in lines[first_store:])
    home = [nominal_input(manifest, p)[None, :] for p in meta["inputs"]]
    outs, status = run_kernel(module, meta, home, batch=False)
    assert status[0] == 0 and np.isfinite(outs[0]).all()
    for axis, shift in ((2, 1.0), (0, 2.0)):     # up by 1 m, sideways by 2 m
        beyond = [a.copy() for a in home]
        beyond[0][0, axis] += shift
        outs, status = run_kernel(module, meta, beyond, batch=False)
        assert status[0] in manifest_statuses(meta) and np.isnan(outs[0]).all()
