"""mechgen is a real package: a non-editable install works outside the repository.

The wheel carries the templates, the bundled specs and URDFs and the generated kernels as
package data under the one import name ``mechgen`` (no top-level ``generator``/``runtime``);
from the installed copy, in a folder outside the repository, ``mechgen generate`` writes a
user's spec into ./generated/ and ``mechgen.load(folder)`` runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

USER_SPEC = """
[mechanism]
name = "my_pendulum"
gravity = [0, 0, -9.81]

[[joints]]
name = "swing"
type = "Ry"
body = { name = "rod", mass = "m_bob", com = [0, 0, -0.5], inertia = [0.01, 0.01, 0.001, 0, 0, 0] }

[parameters]
m_bob = 2.0
"""

CHECK = r"""
import sys, numpy as np, mechgen
assert mechgen.__file__.startswith(sys.argv[1]), mechgen.__file__
m = mechgen.load("generated/my_pendulum")
A = m.mass_matrix([0.3])                 # p omitted: the spec's default m_bob = 2
assert abs(A[0, 0] - (0.01 + 2.0 * 0.25)) < 1e-12, A
ur5 = mechgen.load("ur5")                # a bundled mechanism, from the installed package data
print("ok", A[0, 0], ur5.n)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = tmp_path_factory.mktemp("src") / "mechgen"   # a clean copy: no stale build/ folder
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", "results", ".pytest_cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "-q", "-w", str(out), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "deprecated" not in r.stderr.lower(), r.stderr[-3000:]
    (whl,) = out.glob("mechgen-*.whl")
    return whl


def test_wheel_holds_one_import_name_and_the_package_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("mechgen-")}
    assert tops == {"mechgen"}
    for must in ("mechgen/templates/c/kernel.c.j2", "mechgen/templates/c/file.c.j2",
                 "mechgen/templates/python/kernel.py.j2",
                 "mechgen/generator/mechanisms/ur5_urdf.toml",
                 "mechgen/generator/mechanisms/urdf/panda.urdf",
                 "mechgen/generated/ur5/ur5.c", "mechgen/generated/ur5/ur5.py",
                 "mechgen/generated/ur5/ur5.h", "mechgen/generated/ur5/manifest.json",
                 "mechgen/runtime/cbuild.py", "mechgen/__main__.py",
                 "mechgen/generator/families/__init__.py",
                 "mechgen/generator/families/parallel/legs/pus.py"):
        assert must in names, must
    meta = [n for n in names if n.endswith("entry_points.txt")]
    assert meta and "mechgen = mechgen.__main__:main" in zipfile.ZipFile(wheel).read(meta[0]).decode()


def test_installed_package_generates_and_loads_a_user_spec_outside_the_repo(wheel, tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                        str(site), str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    work = tmp_path / "work"
    work.mkdir()
    (work / "my.toml").write_text(USER_SPEC)
    env = {**os.environ, "PYTHONPATH": str(site), "MECHGEN_CACHE": str(tmp_path / "cache")}
    env.pop("MECHGEN_GENERATED", None)
    gen = subprocess.run([sys.executable, "-m", "mechgen", "generate", "my.toml", "--quiet"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr[-3000:]
    assert (work / "generated" / "my_pendulum" / "manifest.json").is_file()
    assert not list(site.glob("mechgen/generated/my_pendulum"))
    run = subprocess.run([sys.executable, "-c", CHECK, str(site)], cwd=work, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stderr[-3000:]
    refused = subprocess.run([sys.executable, "-m", "mechgen", "generate", "--quiet"], cwd=work,
                             env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "installed package" in refused.stderr
