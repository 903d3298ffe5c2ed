"""Compile a mechanism's generated C once with cffi (out-of-line API mode) and cache it.

The extension module's name carries a hash of everything that goes into it (the C source and
header, the cdef, the compiler flags, the cffi and Python versions), so a changed kernel can
never load a stale build. Builds happen in a private temporary folder and are moved into the
cache atomically, so concurrent processes never see half-written files.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

import cffi

CFLAGS = ["-O2", "-std=c99", "-fno-math-errno"]


def cache_dir() -> Path:
    root = os.environ.get("MECHGEN_CACHE")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mechgen"


def cdef_from_manifest(manifest: dict) -> str:
    lines = []
    for k in manifest["kernels"]:
        ins = ", ".join(f"const double *{p['name']}" for p in k["inputs"])
        outs = ", ".join(f"double *{p['name']}" for p in k["outputs"])
        fn = k["c_function"]
        lines.append(f"int {fn}({ins}, {outs});")
        lines.append(f"int64_t {fn}_batch(int64_t n, {ins}, {outs}, int32_t *status);")
    return "\n".join(lines)


def _digest(parts: list[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def load_c(folder: Path, manifest: dict) -> ModuleType:
    mech = manifest["mechanism"]
    c_file, h_file = folder / f"{mech}.c", folder / f"{mech}.h"
    c_text, h_text = c_file.read_text(), h_file.read_text()
    cdef = cdef_from_manifest(manifest)
    tag = _digest([c_text, h_text, cdef, " ".join(CFLAGS), cffi.__version__,
                   sys.version, sysconfig.get_config_var("EXT_SUFFIX") or ""])
    modname = f"_mechgen_{mech}_{tag}"
    target = cache_dir() / modname
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    so = target / f"{modname}{suffix}"
    if not so.exists():
        _compile(modname, c_text, h_text, mech, cdef, target, so, suffix)
    spec = importlib.util.spec_from_file_location(modname, so)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compile(modname: str, c_text: str, h_text: str, mech: str, cdef: str, target: Path,
             so: Path, suffix: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".build_{modname}_") as tmp:
        tmp = Path(tmp)
        (tmp / f"{mech}.c").write_text(c_text)
        (tmp / f"{mech}.h").write_text(h_text)
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        ffi.set_source(modname, f'#include "{mech}.h"', sources=[str(tmp / f"{mech}.c")],
                       include_dirs=[str(tmp)], extra_compile_args=CFLAGS, libraries=["m"])
        built = Path(ffi.compile(tmpdir=str(tmp), verbose=False))
        stage = tmp / "stage"
        stage.mkdir()
        shutil.copy2(built, stage / f"{modname}{suffix}")
        try:
            os.replace(stage, target)
        except OSError:
            if not so.exists():  # another process won the race only if it left the library
                raise
