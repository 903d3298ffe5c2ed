"""The C build cache cannot be fooled: corrupted, truncated or half-moved entries are rebuilt,
leftover staging folders are cleaned, the key covers the build environment, headers named like
system headers do not shadow them, and the kernels compile as one unit each.

Every test builds a tiny generated pendulum into its own temporary MECHGEN_CACHE.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cffi
import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import cbuild
from mechgen.runtime.mechanism import generated_root

BUNDLED = sorted(p.name for p in generated_root().iterdir() if (p / "manifest.json").exists())


def pendulum_builder(name: str):
    """A 1-joint pendulum, point mass 2 at 0.5: mass matrix [[0.5]]."""
    from mechgen.generator.families.serial.spec import ChainBuilder
    return ChainBuilder(name, gravity=(0, 0, -9.81)).joint(
        "swing", "Ry", body={"name": "bob", "mass": 2.0, "com": [0, 0, 0.5]})


@pytest.fixture(scope="module")
def gen_root(tmp_path_factory) -> Path:
    """generated/ holding the pendulum ``pend`` (and the header-named ones on demand)."""
    import mechgen
    root = tmp_path_factory.mktemp("gen")
    mechgen.generate(pendulum_builder("pend"), out=root)
    return root


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("MECHGEN_CACHE", str(path))
    return path


def manifest_of(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def mechanism_entries(cache: Path) -> list[Path]:
    return [p for p in cache.iterdir() if p.name.startswith("_mechgen_")]


def entry_of(cache: Path) -> tuple[Path, Path]:
    """The one mechanism's cache entry (folder) and its library (beside the folders of the
    drivers and of the single-state entry, runtime/fastcall.py)."""
    entries = mechanism_entries(cache)
    assert len(entries) == 1, entries
    so = [p for p in entries[0].iterdir() if not p.name.endswith(".sha256")]
    assert len(so) == 1, so
    return entries[0], so[0]


def check_pendulum(mech: runtime.Mechanism) -> None:
    np.testing.assert_allclose(mech.mass_matrix([0.3]), [[0.5]], rtol=1e-14)


@pytest.fixture(scope="module")
def built_cache(gen_root, tmp_path_factory) -> Path:
    """A cache holding a valid build of ``pend`` (built once per module)."""
    cache = tmp_path_factory.mktemp("built_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MECHGEN_CACHE", str(cache))
        runtime.load("pend", "c", generated=gen_root)
    return cache


@pytest.fixture
def prebuilt(built_cache, tmp_path, monkeypatch) -> tuple[Path, Path, Path]:
    """A valid cache entry of ``pend``, copied into a cache folder never loaded from, which
    becomes MECHGEN_CACHE: (cache, entry, library)."""
    cache = tmp_path / "copied_cache"
    shutil.copytree(built_cache, cache)
    monkeypatch.setenv("MECHGEN_CACHE", str(cache))
    entry, so = entry_of(cache)
    return cache, entry, so


def count_builds(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = cbuild.build_module

    def counting(modname, *args, **kwargs):
        calls.append(modname)
        return real(modname, *args, **kwargs)

    monkeypatch.setattr(cbuild, "build_module", counting)
    return calls


# --- the checksum ----------------------------------------------------------------------------

def test_entry_holds_the_library_and_its_checksum(gen_root, cache):
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    entry, so = entry_of(cache)
    checksum = so.with_name(so.name + ".sha256")
    assert sorted(p.name for p in entry.iterdir()) == [so.name, checksum.name]
    assert checksum.read_text().strip() == hashlib.sha256(so.read_bytes()).hexdigest()
    assert not [p for p in cache.iterdir() if p.name.startswith(".build_")]


def test_truncated_library_is_rebuilt(gen_root, prebuilt, monkeypatch):
    cache, entry, so = prebuilt
    good = so.read_bytes()
    so.write_bytes(good[: len(good) // 3])
    builds = count_builds(monkeypatch)
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    assert len(builds) == 1 and cbuild.verified(so) and entry_of(cache) == (entry, so)


def test_library_with_a_forged_checksum_that_does_not_load_is_rebuilt_once(gen_root, prebuilt,
                                                                          monkeypatch):
    cache, entry, so = prebuilt
    so.write_bytes(b"\x7fELF" + bytes(4096))
    so.with_name(so.name + ".sha256").write_text(hashlib.sha256(so.read_bytes()).hexdigest())
    assert cbuild.verified(so)
    builds = count_builds(monkeypatch)
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    assert len(builds) == 1 and so.read_bytes()[:4] == b"\x7fELF" and so.stat().st_size > 4100


def test_missing_checksum_or_half_moved_entry_is_rebuilt(gen_root, prebuilt, monkeypatch):
    cache, entry, so = prebuilt
    so.with_name(so.name + ".sha256").unlink()          # a half-moved entry: library only
    builds = count_builds(monkeypatch)
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    assert len(builds) == 1 and cbuild.verified(so)


def test_entry_with_only_debris_is_replaced(gen_root, cache, monkeypatch):
    name = cbuild.module_name("pend", *texts(gen_root / "pend"))
    (cache / name).mkdir(parents=True)
    (cache / name / "partial.o").write_bytes(b"junk")
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    entry, so = entry_of(cache)
    assert entry.name == name and not (entry / "partial.o").exists() and cbuild.verified(so)


def texts(folder: Path) -> tuple[str, str, str]:
    """(C source, header, cdef) of a generated mechanism, as the cache key reads them."""
    m = manifest_of(folder)
    mech = m["mechanism"]
    header = (folder / f"{mech}.h").read_text()
    return ((folder / f"{mech}.c").read_text(), header, cbuild.cdef_from_header(header))


def test_library_that_never_loads_raises_naming_the_cache_folder(gen_root, cache, monkeypatch):
    builds: list[Path] = []

    def junk_build(modname, c_text, h_text, mech, cdef, manifest, tmp, header):
        builds.append(tmp)
        out = tmp / "junk.so"
        out.write_bytes(b"not a library")
        return out

    monkeypatch.setattr(cbuild, "build_module", junk_build)
    with pytest.raises(cbuild.CBuildError, match=r"pend: the C library built in the cache folder "
                                                 r".* does not load even after a rebuild") as info:
        runtime.load("pend", "c", generated=gen_root)
    entry, _ = entry_of(cache)
    assert str(entry) in str(info.value) and len(builds) == 2


def test_unusable_cache_folder_is_named(gen_root, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("MECHGEN_CACHE", str(blocker / "cache"))
    with pytest.raises(cbuild.CBuildError, match=r"cannot create the C build cache folder "
                                                 r".*a_file/cache \(set MECHGEN_CACHE"):
        runtime.load("pend", "c", generated=gen_root)


# --- atomic builds and leftovers -------------------------------------------------------------

def test_stale_staging_folders_are_removed_and_recent_ones_kept(gen_root, cache):
    cache.mkdir()
    stale, recent = cache / ".build_old_abc", cache / ".build_live_def"
    for folder in (stale, recent):
        folder.mkdir()
        (folder / "pend.c").write_text("half written")
    old = time.time() - cbuild.STALE_SECONDS - 60
    for path in (stale / "pend.c", stale):
        os.utime(path, (old, old))
    stale_file = cache / ".build_crashed_file"
    stale_file.write_text("")
    os.utime(stale_file, (old, old))
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    assert not stale.exists() and not stale_file.exists()
    assert (recent / "pend.c").read_text() == "half written"      # perhaps a live build


def test_concurrent_builds_in_several_processes_share_one_entry(gen_root, cache):
    code = ("import sys; from mechgen import runtime; "
            "print(runtime.load('pend', 'c', generated=sys.argv[1]).mass_matrix([0.3])[0, 0])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(gen_root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [(p.communicate(timeout=600), p.returncode) for p in procs]
    assert all(rc == 0 for _, rc in results), results
    assert [float(out) for (out, _), _ in results] == [0.5] * 3
    entry, so = entry_of(cache)
    assert cbuild.verified(so) and not list(cache.glob(".build_*"))


def test_concurrent_winner_is_kept(tmp_path):
    target = tmp_path / "_mechgen_x_0"
    target.mkdir()
    so = target / "lib.so"
    so.write_bytes(b"winner")
    so.with_name("lib.so.sha256").write_text(hashlib.sha256(b"winner").hexdigest())
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "lib.so").write_bytes(b"loser")
    cbuild._move_into_place(stage, target, so)
    assert so.read_bytes() == b"winner"


def test_corrupted_entry_is_replaced_when_moving_into_place(tmp_path):
    target = tmp_path / "_mechgen_x_0"
    target.mkdir()
    (target / "lib.so").write_bytes(b"debris")
    stage = tmp_path / "stage"
    stage.mkdir()
    so = target / "lib.so"
    (stage / "lib.so").write_bytes(b"fresh")
    (stage / "lib.so.sha256").write_text(hashlib.sha256(b"fresh").hexdigest())
    cbuild._move_into_place(stage, target, so)
    assert so.read_bytes() == b"fresh" and cbuild.verified(so)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


# --- the cache key ---------------------------------------------------------------------------

@pytest.mark.parametrize("var", cbuild.ENV_FLAGS)
def test_cache_key_covers_the_build_environment(gen_root, monkeypatch, var):
    args = texts(gen_root / "pend")
    for v in cbuild.ENV_FLAGS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(cbuild, "compiler_version", lambda cc: "gcc 12")
    plain = cbuild.module_name("pend", *args)
    monkeypatch.setenv(var, "gcc -DMECHGEN_KEY_TEST" if var == "CC" else "-DMECHGEN_KEY_TEST")
    assert cbuild.module_name("pend", *args) != plain
    monkeypatch.delenv(var)
    assert cbuild.module_name("pend", *args) == plain


def test_cache_key_covers_the_compiler_version(gen_root, monkeypatch):
    args = texts(gen_root / "pend")
    monkeypatch.setattr(cbuild, "compiler_version", lambda cc: "gcc 12")
    plain = cbuild.module_name("pend", *args)
    monkeypatch.setattr(cbuild, "compiler_version", lambda cc: "gcc 13")
    assert cbuild.module_name("pend", *args) != plain


def test_compiler_version_is_asked_once_per_process(gen_root, monkeypatch):
    calls = []
    real = subprocess.run

    def spy(cmd, *a, **k):
        calls.append(cmd)
        return real(cmd, *a, **k)

    monkeypatch.setattr(cbuild.subprocess, "run", spy)
    monkeypatch.setenv("CC", "gcc")
    cbuild.compiler_version.cache_clear()
    try:
        first = [cbuild.module_name("pend", *texts(gen_root / "pend")) for _ in range(3)]
    finally:
        cbuild.compiler_version.cache_clear()
    assert calls == [["gcc", "--version"]] and len(set(first)) == 1


def test_build_under_other_cflags_is_not_reused(gen_root, cache, monkeypatch):
    """The fuzzer's case: a build made with CFLAGS=-Dcos=sin must not serve a plain load
    (with a negative MG_TRIG_BOUND, so that mg_sincos takes its libm path for every angle)."""
    q = np.array([0.3])
    monkeypatch.setenv("CFLAGS", "-Dcos=sin -DMG_TRIG_BOUND=-1.0")
    _, tau_bad = runtime.load("pend", "c", generated=gen_root).forward_kinematics(q)
    monkeypatch.delenv("CFLAGS")
    _, tau = runtime.load("pend", "c", generated=gen_root).forward_kinematics(q)
    _, tau_py = runtime.load("pend", "python", generated=gen_root).forward_kinematics(q)
    np.testing.assert_allclose(tau, tau_py, rtol=1e-14, atol=1e-15)
    assert np.abs(tau_bad - tau_py).max() > 0.1                    # the flags did reach gcc
    assert len(mechanism_entries(cache)) == 2


# --- compiling: header names, one unit per kernel ---------------------------------------------

@pytest.mark.parametrize("name", ["stdlib", "Python", "stdint", "pyconfig"])
def test_mechanism_named_like_a_system_header_compiles(gen_root, cache, name):
    import mechgen
    mechgen.generate(pendulum_builder(name), out=gen_root)
    mech = runtime.load(name, "c", generated=gen_root)
    check_pendulum(mech)
    np.testing.assert_allclose(mech.forward_dynamics([0.4], [0.0], [0.0]),
                               [9.81 * np.sin(0.4) / 0.5], rtol=1e-12)


def test_kernels_compile_as_one_unit_each_with_iquote(gen_root, cache, monkeypatch):
    flags = cbuild.cflags()             # the compiler's optional flags probed before the spy
    commands: list[list[str]] = []
    real = subprocess.run

    def spy(cmd, *a, **k):
        commands.append(list(cmd))
        return real(cmd, *a, **k)

    sources: list[dict] = []
    real_set_source = cffi.FFI.set_source

    def spy_set_source(self, module_name, source, **kwargs):
        sources.append(kwargs)
        return real_set_source(self, module_name, source, **kwargs)

    monkeypatch.setattr(cbuild.subprocess, "run", spy)
    monkeypatch.setattr(cffi.FFI, "set_source", spy_set_source)
    check_pendulum(runtime.load("pend", "c", generated=gen_root))
    compiles = [c for c in commands if "-c" in c]
    kernels = manifest_of(gen_root / "pend")["kernels"]
    assert len(compiles) == len(kernels)
    for cmd in compiles:
        i = cmd.index("-iquote")
        assert Path(cmd[i + 1]).name.startswith(".build_") and "-fPIC" in cmd
        assert cmd[-len(flags) - 2:-2] == flags and flags[:len(cbuild.CFLAGS)] == cbuild.CFLAGS
        assert not [a for a in cmd if a.startswith("-I") and ".build_" in a]
    units = [Path(cmd[cmd.index("-c") + 1]) for cmd in compiles]
    assert len(set(units)) == len(kernels)
    (kwargs,) = sources
    assert "include_dirs" not in kwargs and "-iquote" in kwargs["extra_compile_args"]
    assert len(kwargs["extra_objects"]) == len(kernels)


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_c_splits_into_one_unit_per_kernel(name):
    folder = generated_root() / name
    m = manifest_of(folder)
    c_text = (folder / f"{name}.c").read_text()
    cdef = cbuild.cdef_from_header((folder / f"{name}.h").read_text())
    units = cbuild.split_units(c_text, m, cdef)
    assert units is not None and len(units) == len(m["kernels"])
    prelude = c_text[:c_text.index(f"/* {m['kernels'][0]['name']}:")]
    assert "#include" in prelude and "static inline MG_ALWAYS_INLINE void mg_sincos(" in prelude
    for unit, k in zip(units, m["kernels"]):
        assert unit.startswith(prelude)
        body = unit[len(prelude):]
        assert body.startswith(f"/* {k['name']}:")
        for other in m["kernels"]:
            defined = f"\nint {other['c_function']}(" in body
            assert defined == (other is k), (k["name"], other["name"])
        assert f"\nint64_t {k['c_function']}_batch(" in body
    assert "".join(u[len(prelude):] for u in units) == c_text[len(prelude):]


def test_unexpected_layout_falls_back_to_one_unit(gen_root, cache, tmp_path):
    folder = tmp_path / "gen" / "pend"
    shutil.copytree(gen_root / "pend", folder)
    m = manifest_of(folder)
    c_file = folder / "pend.c"
    text = c_file.read_text()
    first = f"/* {m['kernels'][0]['name']}:"
    helper = "static double twice_(double x) { return 2.0 * x; }\n\n"
    fn = m["kernels"][1]["c_function"]
    variants = {
        "static helper": text.replace(first, helper + first, 1),
        "define mid-file": text.replace(f"\nint {fn}(", f"\n#define EXTRA 1\nint {fn}(", 1),
        "missing kernel": text.replace(f"\nint {fn}(", f"\nint {fn}_renamed(", 1),
        "defined twice": text + f"\nint {fn}(void);\n",
    }
    cdef = cbuild.cdef_from_header((folder / "pend.h").read_text())
    for what, variant in variants.items():
        assert cbuild.split_units(variant, m, cdef) is None, what
    assert cbuild.split_units(text, m, cdef) is not None
    # a file with a shared static helper still builds, as one unit
    c_file.write_text(variants["static helper"])
    check_pendulum(runtime.load("pend", "c", generated=tmp_path / "gen"))


CHILD = """
import sys, time
from pathlib import Path
from mechgen import runtime
from mechgen.runtime import cbuild
compiled = []
original = cbuild._compile
def slow_compile(*args, **kwargs):      # a build long enough for the other process to wait
    compiled.append(1)
    time.sleep(2.0)
    return original(*args, **kwargs)
cbuild._compile = slow_compile
mech = runtime.load("pend", "c", generated=Path(sys.argv[1]))
assert abs(mech.mass_matrix([0.3])[0, 0] - 0.5) < 1e-14
print(len(compiled))
"""


def test_two_processes_loading_one_fresh_mechanism_compile_it_once(gen_root, cache):
    """The second waits on the build lock and loads the first one's build (build_lock)."""
    env = {**os.environ, "MECHGEN_CACHE": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(gen_root)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
    assert sorted(int(out.strip()) for out, _ in results) == [0, 1]
    entry_of(cache)                         # one entry, one library


def test_a_hand_written_driver_is_verified_and_rebuilt_like_the_kernels(cache):
    """build_driver (the docking and linkage drivers) keeps a checksum beside its library: a
    truncated library is discarded and built again on the next load, not imported."""
    source = "double twice(double x) { return 2.0 * x; }\n"
    cdef = "double twice(double x);"
    sources = {"twice.c": source, "twice.h": cdef + "\n"}
    mod = cbuild.build_driver("twice", cdef, "twice.h", sources, ["-O1"])
    assert mod.lib.twice(1.5) == 3.0
    (so,) = (cache / "twice").glob("*/*.so")
    assert cbuild.verified(so)
    good = so.read_bytes()
    so.write_bytes(good[: len(good) // 3])
    assert not cbuild.verified(so)
    script = ("from mechgen.runtime import cbuild\n"
              f"m = cbuild.build_driver('twice', {cdef!r}, 'twice.h', {sources!r}, ['-O1'])\n"
              "print(m.lib.twice(4.0))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "MECHGEN_CACHE": str(cache)}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "8.0" and cbuild.verified(so)
