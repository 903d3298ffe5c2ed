"""Text from a spec reaches the generated files only escaped, and the kernels document themselves.

Hostile spec file names, sources, docs and status messages must neither run code when the
Python kernels are imported nor break the C build; exported C symbols are namespaced; a
parameter named like a leg coordinate, or a constant that overflows, is refused with a
ModelError naming it; every port carries a doc (shape, units, frame, order of the rows) into
the manifest, the C header and the Python docstrings.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import re
from dataclasses import replace

import numpy as np
import pytest
import sympy as sp

import mechgen
from mechgen import runtime
from mechgen.generator.build import generate_kernels, manifest_fields, write_files
from mechgen.generator.emit import (CPrinter, NonFiniteConstant, PyPrinter, c_comment,
                                    py_comment, py_docstring, render, spec_label)
from mechgen.generator.ir import Check
from mechgen.generator.model import ModelError
from mechgen.generator.families.parallel.spec import platform_from_dict
from mechgen.generator.families.serial.spec import ChainBuilder

BODY = {"mass": 1.0, "com": [0.1, 0, 0], "inertia": [0.01, 0.01, 0.01, 0, 0, 0]}
SPEC = """[mechanism]
name = "{name}"
gravity = [0, 0, -9.81]

[[joints]]
name = "j1"
type = "Rz"
body = {{ name = "l1", mass = 1.0, com = [0.1, 0, 0], inertia = [0.01, 0.01, 0.01, 0, 0, 0] }}

[[joints]]
name = "j2"
type = "Ry"
l = [0.3, 0, 0]
body = {{ name = "l2", mass = 0.5, com = [0.2, 0, 0], inertia = [0.01, 0.01, 0.01, 0, 0, 0] }}
"""
# a Python payload closing the module docstring; a C comment end; a \N escape; a trigraph
# line splice; a newline that would start code; control and non-ASCII characters
HOSTILE = ('x""";__import__("builtins").mechgen_pwned=1;""" */ int evil; /* \\N{oops} ??/\n'
           'import os\r\t\x00 caf\u00e9 "')
Q2 = np.array([0.3, -0.7])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The C build cache in a private folder."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("MECHGEN_CACHE", str(folder))
    return folder


@pytest.fixture
def no_payload():
    """Fails the test if the payload of HOSTILE ran."""
    assert not hasattr(builtins, "mechgen_pwned")
    yield
    ran = hasattr(builtins, "mechgen_pwned")
    if ran:
        del builtins.mechgen_pwned
    assert not ran, "importing the generated kernels ran code from the spec"


def two_link(name: str = "arm", source: str = "<python>") -> ChainBuilder:
    return (ChainBuilder(name, gravity=(0, 0, -9.81), source=source)
            .joint("j1", "Rz", body={"name": "l1", **BODY})
            .joint("j2", "Ry", l=(0.3, 0, 0), body={"name": "l2", **BODY, "mass": 0.5})
            .point("tip", "l2", (0.4, 0, 0)))


def assert_backends_agree(folder) -> None:
    """Both backends load and give the same mass matrix (so both files are intact)."""
    c, py = runtime.load(folder, "c"), runtime.load(folder, "python")
    np.testing.assert_allclose(c.mass_matrix(Q2), py.mass_matrix(Q2), rtol=1e-13)


# --- hostile text ---------------------------------------------------------------------------

def test_payload_in_spec_file_name_does_not_run_when_the_python_kernels_load(
        tmp_path, cache, no_payload):
    spec = tmp_path / 'x""";__import__("builtins").mechgen_pwned=1;""".toml'
    spec.write_text(SPEC.format(name="inj"))
    folder = mechgen.generate(spec, out=tmp_path / "out")
    assert_backends_agree(folder)                  # imports the Python kernels: no_payload checks
    py_text = (folder / "inj.py").read_text()
    assert spec_label(spec.name) == "x????__import__??builtins??.mechgen_pwned?1????.toml"
    assert f"from {spec_label(spec.name)} (sha256" in py_text


def test_backslash_in_spec_file_name_keeps_the_python_module_importable(tmp_path, cache,
                                                                        no_payload):
    spec = tmp_path / "a\\N{x}\\u12.toml"
    spec.write_text(SPEC.format(name="slash"))
    folder = mechgen.generate(spec, out=tmp_path / "out")
    assert_backends_agree(folder)                  # \N{x} in a docstring: SyntaxError
    assert "\\" not in (folder / "slash.py").read_text()


def test_hostile_source_name_is_neutralised_in_every_generated_file(tmp_path, cache,
                                                                     no_payload):
    folder = mechgen.generate(two_link("src", source=HOSTILE), out=tmp_path)
    texts = {p.suffix: p.read_text() for p in folder.iterdir()}
    label = spec_label(HOSTILE)
    assert json.loads(texts[".json"])["spec"] == label
    assert f"from {c_comment(label)} (sha256" in texts[".c"]
    assert f"from {c_comment(label)} (sha256" in texts[".h"]
    assert f"from {label} (sha256" in texts[".py"]
    for text in (texts[".c"], texts[".h"], texts[".py"]):
        assert "int evil" not in text and "import os" not in text and "\\" not in text
    assert_backends_agree(folder)


def _hostile_kernels(chain):
    """The chain's kernels with HOSTILE as kernel doc, port docs, status texts and the
    message of every check (a check is added to mass_matrix if it has none)."""
    out = []
    for g in generate_kernels(chain):
        k = g.kernel
        body = [replace(st, message=HOSTILE) if isinstance(st, Check) else st for st in k.body]
        if k.name == "mass_matrix":
            body.append(Check(k.inputs[0].elements[0] + 100, 7, HOSTILE))
        k = replace(k, doc=HOSTILE, body=tuple(body),
                    statuses={**{s: HOSTILE for s in k.statuses}, 7: HOSTILE},
                    inputs=tuple(replace(p, doc=HOSTILE) for p in k.inputs),
                    outputs=tuple(replace(p, doc=HOSTILE) for p in k.outputs))
        out.append(replace(g, kernel=k))
    return out


def test_hostile_docs_and_status_messages_keep_c_and_python_intact(tmp_path, cache,
                                                                    no_payload):
    chain = two_link("docs").build()
    files = render("docs", HOSTILE, "0" * 64, _hostile_kernels(chain), manifest_fields(chain))
    folder = tmp_path / "docs"
    write_files(folder, files)
    for name in ("docs.c", "docs.h"):
        comments_closed = re.sub(r"/\*.*?\*/", "", files[name], flags=re.S)
        assert "evil" not in comments_closed and "/*" not in comments_closed
    assert "\\" not in files["docs.py"] and "caf?" in files["docs.py"]
    assert_backends_agree(folder)
    mech = runtime.load(folder, "python")
    with pytest.raises(runtime.KernelStatusError):      # the added check still works
        mech.mass_matrix(np.array([-200.0, 0.0]))


@pytest.mark.parametrize("text", [HOSTILE, "*/", "/*/", "**//**", "???/", "?" * 7 + "/",
                                  "a\\\nb", "\u2028x\u0085y"])
def test_c_comment_text_cannot_end_a_comment_or_splice_lines(text):
    out = c_comment(text)
    for bad in ("*/", "/*", "??", "\\", "\n", "\r"):
        assert bad not in out
    assert out.isascii() and out.isprintable()


@pytest.mark.parametrize("text", [HOSTILE, '"""', '""""', "\\", "a\\N{x}", "\u2028"])
def test_python_docstring_and_comment_text_cannot_close_escape_or_break_lines(text):
    for out in (py_docstring(text), py_comment(text)):
        assert "\\" not in out and out.isascii() and out.isprintable()
    assert '"' not in py_docstring(text)


def test_spec_label_keeps_file_names_readable_and_replaces_the_rest():
    assert spec_label("ur5_arm.toml") == "ur5_arm.toml"
    assert spec_label("<dict>") == "<dict>"
    assert spec_label('my arm "v2"*/.toml') == "my?arm??v2???.toml"


# --- namespaced C symbols -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["printf", "malloc", "exp"])
def test_c_functions_of_a_mechanism_named_like_a_libc_symbol_are_namespaced(tmp_path, cache,
                                                                            name):
    folder = mechgen.generate(two_link(name), out=tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert {k["c_function"] for k in manifest["kernels"]} == {
        f"mechgen_{name}_{k['name']}" for k in manifest["kernels"]}
    header = (folder / f"{name}.h").read_text()
    declared = re.findall(r"^int(?:64_t)? (\w+)\(", header, flags=re.M)
    assert len(declared) == 4 * len(manifest["kernels"])     # kernel, _batch, their _entry
    assert all(d.startswith(f"mechgen_{name}_") for d in declared)
    assert f"#ifndef MECHGEN_{name.upper()}_H" in header
    assert_backends_agree(folder)


# --- clashing generated names ---------------------------------------------------------------

def test_parameter_named_like_a_leg_coordinate_is_refused_naming_both():
    from tests.platforms import mixed_spec
    spec = mixed_spec()
    spec["legs"][0]["name"] = "p_k"                # coordinates p_k_u1, p_k_u2, p_k_stroke
    spec["parameters"]["k_u1"] = spec["parameters"].pop("k")
    for leg in spec["legs"]:
        stroke = leg.get("joints", {}).get("stroke")
        if stroke:
            stroke["stiffness"] = ["k_u1", 500.0]
    pf = platform_from_dict(spec, "clash.toml")
    with pytest.raises(ModelError, match=r"clash\.toml: parameter 'k_u1' and the coordinate of "
                                         r"joint 'p_k_u1' of leg 'p_k' would both be named "
                                         r"'p_k_u1'"):
        pf.with_prefixed_parameters()


# --- constants that are not finite doubles ------------------------------------------------------

def test_overflowing_constant_is_refused_naming_the_kernel_and_the_statement(tmp_path):
    chain = two_link("big").build()
    body = chain.bodies[1]
    chain.bodies[1] = replace(body, m=sp.Integer(10) ** 200,
                              d=(sp.Integer(10) ** 200, body.d[1], body.d[2]))  # c = m d = 1e400
    with pytest.raises(ModelError, match=r"<python>: kernel mass_matrix: \w+: the constant "
                                         r"1\.00e\+400 is not a finite double"):
        mechgen.generate(chain, out=tmp_path)
    assert not (tmp_path / "big").exists()


@pytest.mark.parametrize("printer", [CPrinter({"strict": False}),
                                     PyPrinter({"standard": "python3", "strict": False})])
@pytest.mark.parametrize("value", [sp.Rational(10 ** 400, 3), -sp.Float("1e400"), sp.oo,
                                   -sp.oo, sp.nan, sp.zoo, sp.Integer(3) ** 700])
def test_printers_refuse_constants_that_are_not_finite_doubles(printer, value):
    x = sp.Symbol("x", real=True)
    with pytest.raises(NonFiniteConstant):
        printer.doprint(value * x + 1)


def test_large_exact_integer_prints_as_its_nearest_double():
    assert CPrinter({"strict": False}).doprint(sp.Integer(2) ** 60) == repr(float(2 ** 60))


# --- kernels that document themselves -----------------------------------------------------------

def _import(path):
    spec = importlib.util.spec_from_file_location(f"_doc_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_port_has_a_doc_in_manifest_header_and_docstrings(tmp_path):
    folder = mechgen.generate(two_link("docarm"), out=tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    header = (folder / "docarm.h").read_text()
    module = _import(folder / "docarm.py")
    py_text = (folder / "docarm.py").read_text()
    for k in manifest["kernels"]:
        for port in k["inputs"] + k["outputs"]:
            assert len(port["doc"]) > 15, (k["name"], port["name"])
        for port in k["outputs"]:
            size = int(np.prod(port["shape"]))
            line = f"out {port['name']}[{size}] shape {'x'.join(map(str, port['shape']))}: "
            assert line + port["doc"][:40] in header
            assert line + port["doc"][:40] in py_text
        doc = getattr(module, k["name"]).__doc__
        assert doc.startswith(k["doc"][:40]) and f"in  {k['inputs'][0]['name']}[" in doc


def test_stacked_outputs_document_the_order_of_bodies_and_points(tmp_path):
    folder = mechgen.generate(two_link("rows"), out=tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["bodies"], manifest["points"]) == (["l1", "l2"], ["tip"])
    fk = next(k for k in manifest["kernels"] if k["name"] == "forward_kinematics")
    r = next(p for p in fk["outputs"] if p["name"] == "r")
    assert r["doc"].endswith("rows: l1, l2, tip") and "frame 0, m" in r["doc"]
    vel = next(k for k in manifest["kernels"] if k["name"] == "velocities")
    assert all(p["doc"].endswith("rows: l1, l2") for p in vel["outputs"])
    q = next(k for k in manifest["kernels"] if k["name"] == "mass_matrix")["inputs"][0]
    assert q["doc"].endswith("in this order: j1, j2")
    for name in ("rows.h", "rows.py"):
        text = re.sub(r"\s+\*?\s*", " ", (folder / name).read_text())   # unwrap the comments
        assert "Bodies, in the order of the rows of the stacked outputs" in text
        assert "(r, tau, T, R, v, omega, w, eps): l1, l2." in text
        assert "Points, in the rows after the bodies (r, tau, T, R): tip." in text


def test_platform_ports_document_units_and_the_order_of_legs(mixed_hexapod):
    pf, _, root = mixed_hexapod
    manifest = json.loads((root / pf.name / "manifest.json").read_text())
    for k in manifest["kernels"]:
        for port in k["inputs"] + k["outputs"]:
            assert len(port["doc"]) > 15, (k["name"], port["name"])
    step = next(k for k in manifest["kernels"] if k["name"] == "step")
    docs = {p["name"]: p["doc"] for p in step["outputs"]}
    assert docs["F_on_C"].endswith("rows: L1, L2, L3, L4, L5, L6")
    assert docs["q"].endswith(", ".join(pf.coordinates))
    header = re.sub(r"\s+\*?\s*", " ", (root / pf.name / f"{pf.name}.h").read_text())
    assert "Legs, in the order of the rows of per-leg outputs: L1 (UPS: L1_u1, L1_u2, " \
           "L1_stroke); L2 (RUS: " in header
