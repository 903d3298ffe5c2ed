"""The C entry of the C kernels: a small CPython extension (runtime/csrc/extension/fastcall.c).

One state per call from Python (an integrator, a controller, MPC), or a small batch (a
controller's horizon), is dominated by the call's overhead, not by the kernel: cffi pointers,
numpy calls and Python bookkeeping cost microseconds where a 7-DoF mass matrix costs 0.2.
:class:`Entry` objects of this extension do the checks, the copy and the call in C, for one
state or up to 512 (see fastcall.c); runtime/kernel.py makes one per C kernel.

The extension is built once per machine with the compiler setuptools uses, against this
Python's and numpy's headers, and cached like the kernels (runtime/cbuild.py) under
``<cache>/fastcall/<hash>``, the hash covering the source, the flags, the compiler, the Python
and numpy versions and the build environment. :func:`module` returns None (and warns once,
naming the reason) if it cannot be built: every call then takes the kernels' general path,
which gives the same results, only slower.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path
from types import ModuleType

import numpy as np

from mechgen.runtime import cbuild

SOURCE = Path(__file__).resolve().parent / "csrc" / "extension" / "fastcall.c"
NAME = "_mechgen_fastcall"
FLAGS = ["-O2", "-fno-strict-aliasing"]
"""The entry only checks, copies and calls; Python's own configuration adds its flags."""


@functools.lru_cache(maxsize=None)
def module() -> ModuleType | None:
    """The built extension (from the cache or built now), or None with a warning."""
    try:
        return _load()
    except Exception as e:      # noqa: BLE001 - any failure leaves the general path
        warnings.warn(f"mechgen: the kernels' C entry (runtime/csrc/extension/fastcall.c) could not "
                      f"be built or loaded ({type(e).__name__}: {e}); kernel calls take the "
                      f"general path (same results, a few microseconds "
                      f"slower)", RuntimeWarning, stacklevel=3)
        return None


def _load() -> ModuleType:
    text = SOURCE.read_text()
    include = [sysconfig.get_paths()["include"], np.get_include()]
    tag = cbuild._digest([text, " ".join(FLAGS), *include, np.__version__, sys.version,
                          *cbuild.build_environment()])
    target = cbuild.cache_dir() / "fastcall" / tag
    so = target / f"{NAME}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    cbuild.ensure_built(target, so, lambda: _build(text, include, target, so))
    spec = importlib.util.spec_from_file_location(NAME, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build(text: str, include: list[str], target: Path, so: Path) -> None:
    """Compile and link the extension in a private folder, then rename it to ``target``."""
    import setuptools  # noqa: F401  (makes ``distutils`` the one setuptools builds with)
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build_fastcall_") as tmp:
        tmp = Path(tmp)
        src = tmp / "fastcall.c"
        src.write_text(text)
        compiler = new_compiler()
        customize_compiler(compiler)
        objects = compiler.compile([str(src)], output_dir=str(tmp), include_dirs=include,
                                   extra_postargs=FLAGS)
        stage = tmp / "stage"
        stage.mkdir()
        staged = stage / so.name
        compiler.link_shared_object(objects, str(staged))
        cbuild.checksum_path(staged).write_text(cbuild.file_sha256(staged) + "\n")
        cbuild._move_into_place(stage, target, so)
