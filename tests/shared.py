"""Generation done once per test run and shared by the test files, across pytest-xdist workers.

Several files need the kernels of the same mechanism: the bundled specs (generated/ is
current, the sine-cosine gathering, the docking mechanisms' statuses) and the test-only
platforms (the mixed six-leg platform, Fichter's). Generation is deterministic
(tests/test_generated_current.py, tests/test_parallel_generation.py), so the first test
process to ask generates, stores the result pickled in a folder of this run, and every later
asker, in this process or another worker, loads it. A lock per item (the one the C build
cache uses) keeps a second worker from generating the same item while the first does.
"""

from __future__ import annotations

import os
import pickle
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any, Callable

from mechgen.generator.build import generate_kernels, manifest_fields, spec_sha
from mechgen.generator.emit import render
from mechgen.generator.frontend import load
from mechgen.runtime.cbuild import build_lock

_LOADED: dict[str, Any] = {}


def run_folder(tmp_path_factory) -> Path:
    """The folder every worker of this test run sees (pytest-xdist gives each worker a
    base temporary folder inside the run's)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "shared_generation"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def once(tmp_path_factory, key: str, make: Callable[[], Any]) -> Any:
    """``make()``, computed by the first process of the run to ask for ``key``."""
    if key in _LOADED:
        return _LOADED[key]
    path = run_folder(tmp_path_factory) / f"{key}.pickle"
    with build_lock(path):
        if path.exists():
            value = pickle.loads(path.read_bytes())
        else:
            value = make()
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(ForkingPickler.dumps(value))    # (generator/jobs.py's reducers:
            # sums, products, maxima... rebuilt as they are, not evaluated again)
            tmp.replace(path)
    _LOADED[key] = value
    return value


def spec_kernels(tmp_path_factory, spec: Path) -> tuple[Any, list]:
    """(model, generated kernels) of a spec file; the kernels made once per run."""
    model = load(spec)
    return model, once(tmp_path_factory, f"kernels_{spec.stem}", lambda: generate_kernels(model))


def spec_files(tmp_path_factory, spec: Path) -> tuple[Any, dict[str, str]]:
    """(model, file name -> text) of a spec file, as ``files_for_spec`` gives them, from the
    kernels made once per run."""
    model, gen = spec_kernels(tmp_path_factory, spec)
    return model, render(model.name, spec.name, spec_sha(spec), gen, manifest_fields(model))

