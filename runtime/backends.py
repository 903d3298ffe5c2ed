"""Which backends a generated mechanism holds, and how the runtime loads each.

The manifest lists what was generated: ``"backends": {name: {"loader": kind, "files": {role:
file name}}}`` (written by ``mechgen.generator.backends``). The runtime knows no backend by
name; it knows loaders, one per kind of generated file, in :data:`LOADERS`:

- ``"cffi"``: C compiled once and cached (:mod:`mechgen.runtime.cbuild`); files ``header`` and
  ``source``; each kernel's manifest entry names its exported symbol (``c_function``, and its
  ``<c_function>_batch`` twin);
- ``"python_module"``: a module imported from file ``module``, whose ``KERNELS`` dict maps
  each kernel's name to its function.

A loader takes (folder, manifest, backend name, its manifest entry, parameters) and returns
``{kernel name: Kernel}``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable

from mechgen.runtime.kernel import Kernel, Parameters, kernel_class

Loader = Callable[[Path, dict, str, dict, Parameters], dict[str, Kernel]]


def load_cffi(folder: Path, manifest: dict, backend: str, entry: dict,
              parameters: Parameters) -> dict[str, Kernel]:
    from mechgen.runtime.cbuild import load_c
    mod = load_c(folder, manifest, backend)
    return {m["name"]: kernel_class(m)(m, backend, c_lib=mod.lib, ffi=mod.ffi,
                                       parameters=parameters) for m in manifest["kernels"]}


def load_python_module(folder: Path, manifest: dict, backend: str, entry: dict,
                       parameters: Parameters) -> dict[str, Kernel]:
    path = folder / entry["files"]["module"]
    spec = importlib.util.spec_from_file_location(f"mechgen_generated_{manifest['mechanism']}",
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {m["name"]: kernel_class(m)(m, backend, py_func=mod.KERNELS[m["name"]],
                                       parameters=parameters) for m in manifest["kernels"]}


LOADERS: dict[str, Loader] = {"cffi": load_cffi, "python_module": load_python_module}


def _legacy_backends(mech: str) -> dict[str, dict]:
    """What a manifest written before manifests listed their backends (mechgen 0.1.0 up to
    the backends registry) holds: C and Python, under the mechanism's name."""
    return {"c": {"loader": "cffi", "files": {"header": f"{mech}.h", "source": f"{mech}.c"}},
            "python": {"loader": "python_module", "files": {"module": f"{mech}.py"}}}


def listed(manifest: dict, where: str = "manifest.json") -> dict[str, dict]:
    """The manifest's backends, name -> entry, in the order they were generated; a malformed
    entry raises ValueError naming it."""
    if "backends" not in manifest:
        return _legacy_backends(manifest["mechanism"])
    found = manifest["backends"]
    if not isinstance(found, dict) or not found:
        raise ValueError(f"{where}: 'backends' must be a non-empty object {{name: {{\"loader\": "
                         f"..., \"files\": {{role: file}}}}}}, got {found!r:.80}")
    for name, e in found.items():
        if not (isinstance(e, dict) and isinstance(e.get("loader"), str)
                and isinstance(e.get("files"), dict)
                and all(_file_name(f) for f in e["files"].values())):
            raise ValueError(f"{where}: backends.{name} must be {{\"loader\": name, \"files\": "
                             f"{{role: file name in the folder}}}}, got {e!r:.120}")
    return found


def _file_name(f: object) -> bool:
    """A plain file name inside the mechanism's folder (no path)."""
    return isinstance(f, str) and f not in ("", ".", "..") and "/" not in f and "\\" not in f


def entry(manifest: dict, backend: object, where: str = "manifest.json") -> dict:
    """The manifest entry of ``backend``; ValueError listing the available ones if the
    mechanism was not generated for it or this runtime has no loader for it."""
    found = listed(manifest, where)
    if not isinstance(backend, str) or backend not in found:
        listing = (f"listed in {where}" if "backends" in manifest else
                   f"{where} was written before manifests listed them")
        raise ValueError(f"{manifest['mechanism']}: no backend {backend!r}; available: "
                         f"{', '.join(found)} (the backends it was generated for, {listing})")
    e = found[backend]
    if e["loader"] not in LOADERS:
        raise ValueError(f"{manifest['mechanism']}: backend {backend!r} needs the loader "
                         f"{e['loader']!r}, which this mechgen runtime does not have (loaders: "
                         f"{', '.join(LOADERS)}); load it with a newer mechgen; available "
                         f"backends: {', '.join(found)}")
    return e


def load_kernels(folder: Path, manifest: dict, backend: str,
                 parameters: Parameters) -> dict[str, Kernel]:
    """The kernels of ``backend`` (validated against the manifest), by name."""
    where = str(folder / "manifest.json")
    e = entry(manifest, backend, where)
    missing = [f for f in e["files"].values() if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"{manifest['mechanism']}: backend {backend!r}: file(s) {missing} "
                         f"listed in {where} are missing from {folder}; regenerate it")
    return LOADERS[e["loader"]](folder, manifest, backend, e, parameters)
