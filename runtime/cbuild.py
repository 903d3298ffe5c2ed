"""Compile a mechanism's generated C once with cffi (out-of-line API mode) and cache it.

The extension module's name carries a hash of everything that shapes the binary: the C source
and header, the cdef, the compile flags, the build environment (``CC``, ``CFLAGS``,
``CPPFLAGS``, ``LDSHARED``, ``LDFLAGS``, ``ARCHFLAGS``, Python's own build configuration), the
compiler's version string, and the cffi and Python versions; so a changed kernel or a build
made under other flags is never reused.

Each cache entry is a folder ``<cache>/<module>/`` holding the library and ``<library>.sha256``,
written at build time and verified before every load. A library that fails the check or fails
to load is deleted and rebuilt once. Builds happen in a private ``.build_*`` folder and are
renamed into place, so concurrent processes never see half-written files (the first to finish
wins; the others use its build). Where the system has ``flock`` (POSIX), a process about to
build a module first takes the lock file ``<cache>/.lock_<module>`` and looks again: one that
waited for another's build of the same module (two test workers, two campaign processes)
loads that build instead of compiling it a second time. Leftover ``.build_*`` folders of
crashed builds are removed once they are older than :data:`STALE_SECONDS`.

The kernels are compiled as separate translation units, one per kernel, in parallel (one gcc
per CPU), then linked with cffi's wrapper; the header's folder is given as ``-iquote DIR``
(never ``-I``), so a mechanism named like a system header (``stdint``, ``math``, ``Python``)
cannot shadow it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Iterator

import cffi

CFLAGS = ["-O2", "-std=c99", "-fno-math-errno", "-ffp-contract=off"]
"""Always given. ``-ffp-contract=off``: no fused multiply-add, so the vectorised batch of a
kernel rounds exactly like its single-state form (and like any other CPU)."""
BUILD_TIME_FLAGS = ["-fno-var-tracking"]
"""Given when the compiler accepts them (:func:`base_flags`): Python's build configuration
passes ``-g`` to every extension, and GCC's tracking of variable locations for the debug
information took 30 % of a kernel file's compile time (gough_stewart_docking.c: 23.3 s with
``-g``, 15.6 s with ``-g -fno-var-tracking``). The line tables stay; debug information never
changes the code GCC generates, so the kernels' bits do not change either."""
OPTIONAL_CFLAGS = ["-fno-tree-slp-vectorize", "-march=native"]
"""Given with :data:`SIMD_ENV` set, when the compiler accepts them (:func:`cflags`), with
``-DMECHGEN_SIMD=1`` (and :data:`VECTOR_LOOP_FLAGS`, as every build: ``#pragma omp simd``
then vectorises the batch kernels across states, templates/c/kernel.c.j2); ``-march=native`` lets it use the CPU's widest vectors, only together
with ``-fno-tree-slp-vectorize``: GCC 12's straight-line vectoriser fuses ``a*b - c, a*b + c``
pairs into ``vfmsubadd`` (FMA) despite ``-ffp-contract=off`` when the CPU has FMA, which would
change the single-state kernels' last bits. None changes a result: no fast-math, no
contraction. Without them the batch runs the single-state kernel state after state."""
VECTOR_LOOP_FLAGS = ["-fopenmp-simd"]
"""Given to every build, when the compiler accepts them (:func:`vector_loop_flags`): the
single-state kernels' ``#pragma omp simd`` loops (gathered sines and cosines, a platform's
loops over its legs) are then vectorised as written, each lane computing the same IEEE
operations as the scalar form (the same bits). Without it GCC's cost model keeps some of them
scalar: the loops of the project's selects (mg_atan2, mg_fmax, mg_fmin), whose masked form is
4x slower than a ternary when run scalar (docs/sincos.md): gough_stewart_docking ``step`` takes
1265 ns at ``-O2 -mavx2`` and 642 ns with ``-fopenmp-simd`` added (one state repeated, same
run; docs/algorithms.md §1.6.4)."""
ISA_FLAGS = ["-mavx2"]
"""Given when the CPU that builds has AVX2 and the compiler takes them (:func:`isa_flags`). AVX2
without FMA changes no result: GCC cannot fuse a multiply-add it has no instruction for, and
vectorising never reassociates without fast-math; what it gives is the VEX three-operand
encoding (no register copies of SSE2's two-operand form, fewer spills) and 4-wide vectors for
the gathered sines and cosines. Measured with the race's harness (-O2, the runtime's flags,
single state in a compiled loop): solo12 with the body twist, forward dynamics 765 -> 551 ns,
mass matrix 135 -> 106 ns; ur5 forward kinematics 5-10 % (docs/algorithms.md section 3)."""
DRIVER_FLAGS = ["-O2", "-std=c99", "-fno-fast-math", "-ffp-contract=off"]
"""The hand-written C drivers' flags (the docking simulation, the linkage assembly loop), given
with :func:`isa_flags`: no fast-math, no contraction, as the kernels they call."""
ISA_ENV = "MECHGEN_AVX2"
"""``MECHGEN_AVX2=0`` builds for the compiler's baseline target even on an AVX2 CPU; ``1``
gives :data:`ISA_FLAGS` whenever the compiler takes them (a cross build for an AVX2 target);
unset or empty: when the building CPU has AVX2."""
SIMD_ENV = "MECHGEN_SIMD"
"""``MECHGEN_SIMD=1`` builds the SIMD batch kernels. Off by default: the vectorised batches
take about 5x longer to compile (gough_stewart_docking: 6 s -> 34 s of gcc, measured before the
block layout of docs/architecture.md) for 1.9-6.7x the batch throughput of the scalar loop on
an AVX-512 machine, 1.6-3.5x with AVX2 there and 0.75-3.5x on an AVX2 Zen 3 (bench/simd_bench.py,
docs/architecture.md); single-state calls gain
nothing. The lanes per block are the C's own choice for the target it is compiled for
(``MG_SIMD_WIDTH``, templates/c/simd_block.c.j2): 8 with AVX-512, 4 with AVX2, and none (the
loop over the single-state kernel) on any other target, as SSE2's blocks lose to that loop on
the serial kernels (0.54-1.03x); ``CFLAGS=-DMG_SIMD_WIDTH=N`` forces N. So no flag here
depends on the target: the C decides."""
ENV_FLAGS = ("CC", "CFLAGS", "CPPFLAGS", "LDSHARED", "LDFLAGS", "ARCHFLAGS")
CONFIG_VARS = ("CC", "CFLAGS", "CCSHARED", "CPPFLAGS", "LDSHARED", "LDFLAGS", "EXT_SUFFIX")
STALE_SECONDS = 600.0
CHECKSUM_SUFFIX = ".sha256"


class CBuildError(RuntimeError):
    """The C build of a mechanism failed, or its cached library cannot be loaded."""


def cache_dir() -> Path:
    """The cache root: ``$MECHGEN_CACHE``, else ``$XDG_CACHE_HOME/mechgen`` or ~/.cache/mechgen."""
    root = os.environ.get("MECHGEN_CACHE")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mechgen"


_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_PREPROCESSOR = re.compile(r"^[ \t]*#.*$", re.M)


def cdef_from_header(h_text: str) -> str:
    """The cffi declarations: the generated header's own, one per line.

    The header declares nothing but the kernels, their ``_batch`` twins and their ``_entry``
    and ``_batch_entry`` forms (one pointer array), each written once
    by ``templates/c/signature.j2``; its comments (whose text never holds ``*/``: the
    generator's ``c_comment`` filter) and preprocessor lines (guard, includes) are dropped.
    So the declarations cffi wraps are the very ones the kernels are compiled against.
    """
    text = _PREPROCESSOR.sub("", _COMMENT.sub("", h_text))
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def declared_heads(cdef: str) -> dict[str, str]:
    """Function name -> the start of its declaration up to ``(`` (``int mechgen_x_k(``)."""
    heads = {}
    for decl in cdef.split(";"):
        m = re.match(r"\s*([^()]*?\b(\w+))\s*\(", decl)
        if m:
            heads[m.group(2)] = m.group(1) + "("
    return heads


def _digest(parts: list[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# --- the cache key: everything that shapes the binary ---------------------------------------

def compiler_command() -> str:
    """The C compiler setuptools (hence cffi) uses: ``$CC``, else Python's configured CC."""
    return os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


@functools.lru_cache(maxsize=None)
def compiler_version(cc: str) -> str:
    """``<cc> --version`` (first computed per compiler command and process, then remembered)."""
    try:
        run = subprocess.run([*shlex.split(cc), "--version"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return f"unavailable ({type(e).__name__}: {e})"
    return f"rc={run.returncode}\n{run.stdout}{run.stderr}"


_PROBE = """#include <math.h>
void probe(const double *x, double *y) {
    #pragma omp simd
    for (int l = 0; l < 4; ++l) y[l] = sqrt(x[l]) / x[l];
}
"""


@functools.lru_cache(maxsize=None)
def accepts(cc: str, flag: str) -> bool:
    """True if ``cc`` compiles a small vector loop with ``flag`` (and :data:`CFLAGS`),
    without a warning (an ignored option is refused too)."""
    with tempfile.TemporaryDirectory(prefix="mechgen_probe_") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(_PROBE)
        cmd = [*shlex.split(cc), *CFLAGS, flag, "-c", str(src), "-o", str(Path(tmp) / "p.o")]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, ValueError, subprocess.SubprocessError):
            return False
    return run.returncode == 0 and not run.stderr.strip()


def simd_requested() -> bool:
    """True if the environment asks for the SIMD batch kernels (``MECHGEN_SIMD=1``)."""
    value = os.environ.get(SIMD_ENV, "0").strip()
    if value not in ("0", "1", ""):
        raise ValueError(f"{SIMD_ENV} must be 0 or 1, got {value!r}")
    return value == "1"


def host_has_avx2(cc: str) -> bool:
    """True if ``-march=native`` (the building CPU, as the compiler sees it) defines __AVX2__."""
    return "#define __AVX2__ 1" in target_macros(cc, ("-march=native",)).splitlines()


def isa_flags() -> list[str]:
    """:data:`ISA_FLAGS` if the environment's :data:`ISA_ENV` asks for them (``1``) or leaves the
    choice (unset) and the building CPU has AVX2, and the compiler takes them; else none."""
    value = os.environ.get(ISA_ENV, "").strip()
    if value not in ("0", "1", ""):
        raise ValueError(f"{ISA_ENV} must be 0 or 1 (or unset: AVX2 if this CPU has it), "
                         f"got {value!r}")
    cc = compiler_command()
    if value == "0" or not all(accepts(cc, flag) for flag in ISA_FLAGS):
        return []
    return list(ISA_FLAGS) if value == "1" or host_has_avx2(cc) else []


def base_flags() -> list[str]:
    """:data:`CFLAGS` and the :data:`BUILD_TIME_FLAGS` the compiler accepts."""
    cc = compiler_command()
    return CFLAGS + [flag for flag in BUILD_TIME_FLAGS if accepts(cc, flag)]


def vector_loop_flags() -> list[str]:
    """:data:`VECTOR_LOOP_FLAGS` the compiler accepts."""
    cc = compiler_command()
    return [flag for flag in VECTOR_LOOP_FLAGS if accepts(cc, flag)]


def cflags(simd: bool | None = None) -> list[str]:
    """The flags the kernels are compiled with: :func:`base_flags`, :func:`isa_flags` and
    :func:`vector_loop_flags`; with
    ``simd`` (default: the environment's :data:`SIMD_ENV`) also ``-DMECHGEN_SIMD=1`` and each
    of :data:`OPTIONAL_CFLAGS` the compiler accepts (a compiler without them builds the blocks
    lane by lane, with the same results)."""
    if not (simd_requested() if simd is None else simd):
        return base_flags() + isa_flags() + vector_loop_flags()
    cc = compiler_command()
    flags = base_flags() + isa_flags() + vector_loop_flags() + [
        flag for flag in OPTIONAL_CFLAGS if accepts(cc, flag)]
    if "-fno-tree-slp-vectorize" not in flags and "-march=native" in flags:
        flags.remove("-march=native")
    return flags + ["-DMECHGEN_SIMD=1"]


@functools.lru_cache(maxsize=None)
def target_macros(cc: str, flags: tuple[str, ...]) -> str:
    """The compiler's predefined macros under ``flags``: what ``-march=native`` resolved to on
    this CPU (``__AVX2__``, ``__ARM_NEON``...), part of the cache key."""
    try:
        run = subprocess.run([*shlex.split(cc), *flags, "-dM", "-E", "-x", "c", os.devnull],
                             capture_output=True, text=True, timeout=60)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return f"unavailable ({type(e).__name__}: {e})"
    return "\n".join(sorted(run.stdout.splitlines()))


def build_environment() -> list[str]:
    """The environment and configuration that reach the compiler and linker, as strings,
    and the target the flags select on this CPU."""
    env = [f"env {k}={os.environ.get(k)!r}" for k in ENV_FLAGS]
    conf = [f"config {k}={sysconfig.get_config_var(k)!r}" for k in CONFIG_VARS]
    cc = compiler_command()
    return env + conf + [f"compiler {compiler_version(cc)}",
                         f"target {target_macros(cc, tuple(cflags()))}"]


def module_name(mech: str, c_text: str, h_text: str, cdef: str) -> str:
    """The extension module's name: the mechanism and a hash of all inputs of the build."""
    tag = _digest([c_text, h_text, cdef, " ".join(cflags()), cffi.__version__, sys.version,
                   *build_environment()])
    return f"_mechgen_{mech}_{tag}"


# --- hand-written C drivers (runtime/csrc) ---------------------------------------------------

def build_driver(kind: str, cdef: str, include: str, sources: dict[str, str],
                 flags: list[str]) -> ModuleType:
    """The cffi module of a hand-written C driver (the docking simulation, the linkage
    assembly loop): ``sources`` {file name: text} (.c files compiled, .h files beside them),
    ``include`` the header the module includes, cached under ``<cache>/<kind>/<hash>`` keyed
    by the cdef, the sources, the flags and the compiler, Python and cffi versions, and
    verified by its checksum like the kernels' libraries (:func:`ensure_built`: another
    process building the same module at the same time waits for it)."""
    tag = _digest([cdef, *[f"{k}\n{v}" for k, v in sorted(sources.items())],
                   " ".join(flags), compiler_version(compiler_command()), sys.version,
                   cffi.__version__])
    modname = f"_mechgen_{kind}_{tag}"
    target = _ensure_root(cache_dir()) / kind / tag
    so = target / f"{modname}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    ensure_built(target, so, lambda: _build_driver_into(target, so, modname, cdef, include,
                                                        sources, flags))
    spec = importlib.util.spec_from_file_location(modname, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build_driver_into(target: Path, so: Path, modname: str, cdef: str, include: str,
                       sources: dict[str, str], flags: list[str]) -> None:
    """Compile a driver module in a private folder, write its checksum, and move it to
    ``target``."""
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".build_{modname}_") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name, text in sources.items():
            (src / name).write_text(text)
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        c_files = [str(src / n) for n in sorted(sources) if n.endswith(".c")]
        ffi.set_source(modname, f'#include "{include}"', sources=c_files,
                       include_dirs=[str(src)], extra_compile_args=flags)
        built = Path(ffi.compile(tmpdir=tmp, verbose=False))
        stage = Path(tmp) / "stage"
        stage.mkdir()
        staged = stage / so.name
        built.rename(staged)
        checksum_path(staged).write_text(file_sha256(staged) + "\n")
        _move_into_place(stage, target, so)


# --- loading with verification --------------------------------------------------------------

def load_c(folder: Path, manifest: dict, backend: str = "c") -> ModuleType:
    """The compiled cffi module of a generated mechanism's backend (its manifest entry names
    the files ``header`` and ``source``), from the cache or built now.

    A cached library whose checksum does not match, or that fails to load, is deleted and
    rebuilt once; if the fresh build does not load either, raises :class:`CBuildError`.
    """
    from mechgen.runtime.backends import entry
    mech = manifest["mechanism"]
    files = entry(manifest, backend, str(folder / "manifest.json"))["files"]
    c_text = (folder / files["source"]).read_text()
    h_text = (folder / files["header"]).read_text()
    cdef = cdef_from_header(h_text)
    modname = module_name(mech, c_text, h_text, cdef)
    target = _ensure_root(cache_dir()) / modname
    so = target / f"{modname}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    failure: Exception | None = None
    for attempt in range(2):
        ensure_built(target, so, lambda: _compile(modname, c_text, h_text, mech, cdef, target,
                                                  so, manifest, files["header"]))
        try:
            return _import(modname, so)
        except (ImportError, OSError) as e:
            failure = e
            if attempt == 0:
                discard(target)
    raise CBuildError(f"{mech}: the C library built in the cache folder {target} does not load "
                      f"even after a rebuild ({type(failure).__name__}: {failure}); check the "
                      f"compiler and the flags in CC, CFLAGS, LDFLAGS, LDSHARED, or set "
                      f"MECHGEN_CACHE to another folder") from failure


def ensure_built(target: Path, so: Path, build: Callable[[], None]) -> None:
    """Make ``so`` (a library in the cache folder ``target``) verified: if it is not, take
    the build lock, and unless the lock's holder built it meanwhile, discard what is there and
    ``build()`` (which writes ``so`` with its checksum and moves it into place)."""
    if verified(so):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target):
        if not verified(so):        # not built meanwhile by the lock's holder
            discard(target)
            build()


@contextlib.contextmanager
def build_lock(target: Path) -> Iterator[None]:
    """Hold ``<cache>/.lock_<module>`` exclusively (module docstring) while building
    ``target``; no lock where ``flock`` is missing or the lock file cannot be opened (the
    atomic rename still keeps concurrent builds safe, only not single)."""
    try:
        import fcntl
        fd = os.open(target.parent / f".lock_{target.name}", os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                    # releases the lock


def _ensure_root(root: Path) -> Path:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CBuildError(f"cannot create the C build cache folder {root} (set MECHGEN_CACHE "
                          f"to a writable folder): {e}") from None
    return root


def _import(modname: str, so: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(modname, so)
    if spec is None or spec.loader is None:
        raise ImportError(f"{so}: not a loadable extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checksum_path(so: Path) -> Path:
    return so.with_name(so.name + CHECKSUM_SUFFIX)


def verified(so: Path) -> bool:
    """True if the library exists and its sha256 equals the one written when it was built."""
    try:
        expected = checksum_path(so).read_text().strip()
        return so.is_file() and file_sha256(so) == expected
    except OSError:
        return False


def discard(target: Path) -> None:
    """Remove a cache entry: first renamed aside (atomic), then deleted."""
    if not os.path.lexists(target):
        return
    trash = target.parent / f".build_{target.name}_discard_{uuid.uuid4().hex[:8]}"
    try:
        os.replace(target, trash)
    except OSError:
        if os.path.lexists(target) and not target.is_dir():
            target.unlink(missing_ok=True)
        return
    _remove(trash)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def clean_stale_builds(root: Path, max_age: float = STALE_SECONDS) -> list[Path]:
    """Delete ``.build_*`` leftovers of crashed builds untouched for ``max_age`` seconds."""
    removed = []
    now = time.time()
    for entry in root.glob(".build_*"):
        try:
            age = now - _last_touched(entry)
        except OSError:
            continue            # removed meanwhile by its owner
        if age > max_age:
            _remove(entry)
            removed.append(entry)
    return removed


def _last_touched(entry: Path) -> float:
    """The newest mtime of an entry and, for a folder, of its direct children."""
    times = [entry.lstat().st_mtime]
    if entry.is_dir() and not entry.is_symlink():
        times += [child.lstat().st_mtime for child in entry.iterdir()]
    return max(times)


# --- building --------------------------------------------------------------------------------

def _compile(modname: str, c_text: str, h_text: str, mech: str, cdef: str, target: Path,
             so: Path, manifest: dict, header: str) -> None:
    """Build the module in a private folder, then rename it into ``target`` (atomic)."""
    root = target.parent
    clean_stale_builds(root)
    try:
        staging = tempfile.TemporaryDirectory(dir=root, prefix=f".build_{modname}_")
    except OSError as e:
        raise CBuildError(f"{mech}: cannot build in the C build cache folder {root} (set "
                          f"MECHGEN_CACHE to a writable folder): {e}") from None
    with staging as tmp:
        tmp = Path(tmp)
        built = build_module(modname, c_text, h_text, mech, cdef, manifest, tmp,
                             header=header)
        stage = tmp / "stage"
        stage.mkdir()
        staged = stage / so.name
        shutil.copy2(built, staged)
        checksum_path(staged).write_text(file_sha256(staged) + "\n")
        _move_into_place(stage, target, so)


def _move_into_place(stage: Path, target: Path, so: Path) -> None:
    """Rename the staged entry to ``target``; a valid entry already there (a concurrent build
    that finished first) is kept, anything else there is set aside."""
    error: OSError | None = None
    for _ in range(2):
        try:
            os.replace(stage, target)
            return
        except OSError as e:
            error = e
            if verified(so):
                return
            discard(target)
    raise CBuildError(f"cannot move the C build into the cache folder {target}: {error}")


def build_module(modname: str, c_text: str, h_text: str, mech: str, cdef: str,
                 manifest: dict, tmp: Path, header: str) -> Path:
    """Compile the kernels (one unit each, in parallel) and link them with cffi's wrapper;
    ``header`` is the header's file name (as the source includes it)."""
    (tmp / header).write_text(h_text)
    quote = ["-iquote", str(tmp)]
    units = split_units(c_text, manifest, cdef) or [c_text]
    sources = []
    for i, text in enumerate(units):
        path = tmp / f"_unit{i:03d}_{mech}.c"
        path.write_text(text)
        sources.append(path)
    flags = cflags()
    objects = compile_objects(sources, flags + quote, mech)
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(modname, f'#include "{header}"', extra_objects=[str(o) for o in objects],
                   extra_compile_args=flags + quote, libraries=["m"])
    try:
        return Path(ffi.compile(tmpdir=str(tmp), verbose=False))
    except (cffi.VerificationError, OSError) as e:  # the compiler's output is printed above
        raise CBuildError(f"{mech}: linking the C kernels into a Python module failed "
                          f"({type(e).__name__}: {e})") from None


def compile_command() -> list[str]:
    """The compiler and flags setuptools uses for extension sources (``$CC``, ``$CFLAGS``, ...)."""
    import setuptools  # noqa: F401  (makes ``distutils`` the one cffi builds with)
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler
    compiler = new_compiler()
    customize_compiler(compiler)
    return list(compiler.compiler_so)


def compile_objects(sources: list[Path], flags: list[str], mech: str) -> list[Path]:
    """Compile each source to an object (``-fPIC`` and the same flags), one gcc per CPU."""
    base = compile_command()

    def one(src: Path) -> Path:
        obj = src.with_suffix(".o")
        cmd = [*base, "-c", str(src), "-o", str(obj), *flags]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise CBuildError(f"{mech}: cannot run the C compiler {base[0]!r} (set CC): {e}") \
                from None
        if run.returncode != 0:
            raise CBuildError(f"{mech}: compiling {src.name} failed ({shlex.join(cmd)}):\n"
                              f"{run.stderr[-4000:]}")
        return obj

    longest_first = sorted(sources, key=lambda s: s.stat().st_size, reverse=True)
    with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
        done = dict(zip(longest_first, pool.map(one, longest_first)))
    return [done[s] for s in sources]


# --- one translation unit per kernel ---------------------------------------------------------

_TOP_LEVEL = re.compile(r"^[^\s/*{}].*$", re.M)     # column 0, not a comment or a brace
_LABEL = re.compile(r"^\w+:\s*$")


def split_units(c_text: str, manifest: dict, cdef: str) -> list[str] | None:
    """The generated C as one translation unit per kernel, or None if its layout is unexpected.

    Each unit is the prelude (the includes, macros and ``static inline`` helpers such as
    ``mg_sincos`` before the first kernel) followed by the kernel's
    comment, its function, its ``_batch`` function and their ``_entry`` forms (if the header
    declares them: kernels generated before them have none). The split is accepted only if every
    kernel's two definitions appear exactly once at column 0, in order, and nothing else is
    defined at file scope (no helper, static table or preprocessor line after the prelude);
    otherwise the caller compiles the file as one unit. A definition starts as the header
    declares it (``cdef``, from :func:`cdef_from_header`).
    """
    heads = declared_heads(cdef)
    try:
        kernels = [(k["name"], heads[k["c_function"]], heads[k["c_function"] + "_batch"])
                   for k in manifest["kernels"]]
    except KeyError:
        return None
    starts = _unit_starts(c_text, kernels)
    if starts is None:
        return None
    prelude = c_text[:starts[0]]
    if any(not line.startswith(("#", "static inline ")) for line in _TOP_LEVEL.findall(prelude)):
        return None     # only includes, macros and static inline helpers (mg_sincos) repeat
    allowed = {head for _, single, batch in kernels for head in (single, batch)}
    allowed |= {heads[k["c_function"] + form] for k in manifest["kernels"]
                for form in ("_entry", "_batch_entry") if k["c_function"] + form in heads}
    for line in _TOP_LEVEL.findall(c_text[starts[0]:]):
        if not (_LABEL.match(line) or line[:line.find("(") + 1] in allowed):
            return None
    bounds = starts + [len(c_text)]
    return [prelude + c_text[a:b] for a, b in zip(bounds, bounds[1:])]


def _unit_starts(c_text: str, kernels: list[tuple[str, str, str]]) -> list[int] | None:
    """Where each kernel's unit begins (its comment, else its definition), in file order;
    ``kernels``: (name, start of its definition, start of its _batch twin's)."""
    found = []
    for name, single_head, batch_head in kernels:
        single = [m.start() for m in re.finditer(rf"^{re.escape(single_head)}", c_text, re.M)]
        batch = [m.start() for m in re.finditer(rf"^{re.escape(batch_head)}", c_text, re.M)]
        if len(single) != 1 or len(batch) != 1 or batch[0] < single[0]:
            return None
        found.append((single[0], batch[0], name))
    starts, previous_end = [], 0
    for single, batch, name in sorted(found):
        if single < previous_end:
            return None         # two kernels interleave
        comment = c_text.rfind(f"\n/* {name}:", previous_end, single)
        starts.append(comment + 1 if comment >= 0 else single)
        previous_end = batch
    return starts or None
