"""Backends are packages: a registry on the generator's side, the manifest on the runtime's.

The C prototypes are written once (templates/c/signature.j2): the header declares them, the
source defines them, and the runtime's cffi cdef is read from the header. The manifest lists
the backends generated and their files; the runtime loads what it lists, and refuses any
other backend naming the available ones.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cffi
import numpy as np
import pytest
import sympy as sp

import mechgen
from mechgen import runtime
from mechgen.generator import emit
from mechgen.generator.backends import BACKENDS, reserved_words
from mechgen.generator.backends.c import CPrinter
from mechgen.generator.backends.python import PyPrinter
from mechgen.generator.model import RESERVED
from mechgen.runtime import cbuild
from mechgen.runtime.backends import LOADERS


def pendulum(name: str):
    from mechgen.generator.families.serial.spec import ChainBuilder
    return ChainBuilder(name, gravity=(0, 0, -9.81)).joint(
        "swing", "Ry", body={"name": "bob", "mass": 2.0, "com": [0, 0, 0.5]})


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """generated/pend/ (fresh, so its manifest lists its backends)."""
    root = tmp_path_factory.mktemp("gen")
    mechgen.generate(pendulum("pend"), out=root)
    return root


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MECHGEN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def manifest_of(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


# --- one signature ------------------------------------------------------------------------------

def test_c_signature_is_written_only_in_the_macro_file():
    templates = emit.TEMPLATES / "c"
    for name in ("kernel.h.j2", "kernel.c.j2"):
        text = (templates / name).read_text()
        assert 'import "c/signature.j2"' in text
        assert "double *" not in text and "int64_t n" not in text, name
    assert "const double *" in (templates / "signature.j2").read_text()


def test_header_prototypes_and_cffi_cdef_come_from_one_source(generated, cache, monkeypatch):
    """The macro renders the header's declarations, the source's definitions (the same text
    with restrict), and cffi is given exactly the header's declarations."""
    folder = generated / "pend"
    manifest = manifest_of(folder)
    files = manifest["backends"]["c"]["files"]
    header = (folder / files["header"]).read_text()
    source = (folder / files["source"]).read_text()
    model = pendulum("pend").build()
    from mechgen.generator.build import generate_kernels
    gen = generate_kernels(model)
    signature = emit._env().get_template("c/signature.j2").module
    kernels = [emit._kernel_context("pend", g, BACKENDS["c"]) for g in gen]
    expected = [line for k in kernels
                for line in (f"{signature.kernel(k)};", f"{signature.batch(k)};",
                             f"{signature.entry(k)};", f"{signature.batch_entry(k)};")]

    cdef = cbuild.cdef_from_header(header)
    assert cdef.splitlines() == expected
    assert [k["name"] for k in kernels] == [k["name"] for k in manifest["kernels"]]
    for k, meta in zip(kernels, manifest["kernels"]):
        assert f"\n{signature.kernel(k)};\n" in header
        definition = signature.kernel(k, restrict=True)
        assert definition.replace("restrict ", "") == signature.kernel(k)
        assert definition.startswith(f"int {meta['c_function']}(const double *restrict ")
        assert f"\n{definition}\n{{\n" in source
        assert f"\n{signature.batch(k)}\n{{\n" in source

    given: list[str] = []
    real = cffi.FFI.cdef

    def spy(self, text, *a, **kw):
        given.append(text)
        return real(self, text, *a, **kw)

    monkeypatch.setattr(cffi.FFI, "cdef", spy)
    mech = runtime.load(folder, "c")
    np.testing.assert_allclose(mech.mass_matrix([0.3]), [[0.5]], rtol=1e-14)
    assert given == [cdef]


# --- the registry and the manifest --------------------------------------------------------------

def test_manifest_lists_every_registered_backend_and_its_files(generated):
    folder = generated / "pend"
    listed = manifest_of(folder)["backends"]
    assert list(listed) == list(BACKENDS)
    for name, backend in BACKENDS.items():
        assert listed[name] == {"loader": backend.loader, "files": backend.file_names("pend")}
        assert backend.loader in LOADERS
        for file in listed[name]["files"].values():
            assert (folder / file).is_file()
    written = {f.name for f in folder.iterdir()}
    assert written == {"manifest.json"} | {f for e in listed.values() for f in e["files"].values()}


def test_reserved_words_are_every_backends_and_printers_ask_their_backend():
    assert reserved_words() <= RESERVED
    for b in BACKENDS.values():
        assert b.reserved <= RESERVED and b.template_names
    assert {"int", "restrict", "status", "lambda", "def", "math"} <= RESERVED
    x = sp.Symbol("x", real=True)
    c, py = CPrinter({"strict": False}), PyPrinter({"standard": "python3", "strict": False})
    assert (c.doprint(x ** 5), py.doprint(x ** 5)) == ("pow(x, 5.0)", "x**5.0")
    assert (c.doprint(x ** 3), py.doprint(x ** 3)) == ("x*x*x", "x*x*x")
    assert (c.doprint(sp.sqrt(x)), py.doprint(sp.sqrt(x))) == ("sqrt(x)", "math.sqrt(x)")


# --- the runtime picks backends from the manifest -----------------------------------------------

def test_unknown_backend_is_refused_naming_the_available_ones(generated, tmp_path):
    with pytest.raises(ValueError, match=r"pend: no backend 'fortran'; available: c, python "
                                         r"\(the backends it was generated for, listed in "):
        runtime.load(generated / "pend", backend="fortran")
    with pytest.raises(ValueError, match=r"no backend None; available: c, python"):
        runtime.load(generated / "pend", backend=None)
    assert runtime.available_backends(generated / "pend") == ["c", "python"]
    # a folder generated for Python only: "c" (the default) is refused, "python" loads
    folder = tmp_path / "pend"
    shutil.copytree(generated / "pend", folder)
    manifest = manifest_of(folder)
    del manifest["backends"]["c"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"pend: no backend 'c'; available: python \("):
        runtime.load(folder)
    np.testing.assert_allclose(runtime.load(folder, "python").mass_matrix([0.3]), [[0.5]])


def test_a_backend_the_manifest_lists_loads_by_its_loader_and_files(generated, tmp_path):
    """No backend name is known to the runtime: a third backend listed in the manifest with
    its own file loads through the loader it names; an unknown loader is refused."""
    folder = tmp_path / "pend"
    shutil.copytree(generated / "pend", folder)
    shutil.copy(folder / "pend.py", folder / "pend_copy.py")
    manifest = manifest_of(folder)
    manifest["backends"]["twin"] = {"loader": "python_module",
                                    "files": {"module": "pend_copy.py"}}
    manifest["backends"]["jit"] = {"loader": "numba_jit", "files": {"module": "pend.py"}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    twin = runtime.load(folder, "twin")
    assert repr(twin).endswith("[twin]: " + ", ".join(twin.kernels) + ">")
    np.testing.assert_allclose(twin.mass_matrix([0.3]), [[0.5]])
    with pytest.raises(ValueError, match=r"backend 'jit' needs the loader 'numba_jit', which "
                                         r"this mechgen runtime does not have \(loaders: cffi, "
                                         r"python_module\)"):
        runtime.load(folder, "jit")
    (folder / "pend_copy.py").unlink()
    with pytest.raises(ValueError, match=r"backend 'twin': file\(s\) \['pend_copy.py'\] listed"):
        runtime.load(folder, "twin")


def test_malformed_backends_entry_is_refused(generated, tmp_path):
    folder = tmp_path / "pend"
    shutil.copytree(generated / "pend", folder)
    manifest = manifest_of(folder)
    manifest["backends"]["python"]["files"]["module"] = "../elsewhere.py"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"backends\.python must be"):
        runtime.load(folder, "python")


def test_manifest_without_backends_reads_as_c_and_python(generated, tmp_path):
    """A folder generated before manifests listed their backends still loads."""
    folder = tmp_path / "pend"
    shutil.copytree(generated / "pend", folder)
    manifest = manifest_of(folder)
    del manifest["backends"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert runtime.available_backends(folder) == ["c", "python"]
    np.testing.assert_allclose(runtime.load(folder, "python").mass_matrix([0.3]), [[0.5]])
    with pytest.raises(ValueError, match=r"available: c, python \(.*written before manifests "
                                         r"listed them\)"):
        runtime.load(folder, "cpp")
