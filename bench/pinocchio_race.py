"""Speed race: our generated C kernels against Pinocchio's C++ algorithms, in one process.

    race("ur5", Path("generated"), Path(".../ur5_robot.urdf"), {}, "fixed")
    -> {"mass_matrix": {"ours_ns": 121.8, "pinocchio_ns": 556.6, "ratio": 4.57}, ...}

What is measured (bench/pinocchio_harness.cpp): for each kernel pair, the time of one pass over a
batch of ``batch`` random states inside a compiled loop, divided by ``batch``; best (minimum) of
``reps`` passes in each of ``processes`` (3) runs of the harness (a kernel's time moved by up to
1.5x between two runs of the same binary: other addresses under ASLR). The passes of ours and Pinocchio's are interleaved (kernel by kernel, their
order alternating between repetitions) after one warm-up pass each, so load on the machine hits
both alike. Each repetition runs Pinocchio on another copy of its Data and writes our
single-state loop's outputs at another offset of a padded buffer (the harness's "Placements":
one kernel, the same C text in two harness binaries, had taken 1420 and 806 ns; 839 and 860
with them). Pairs:

    ours (mechgen_<mech>_...)                Pinocchio (header-only templates, same flags)
    forward_kinematics_batch(q)              forwardKinematics(model, data, q)   joint placements
    mass_matrix_batch(q)                     crba(model, data, q, convention)    upper triangle
    inverse_dynamics_batch(q,qd,qdd)         rnea(model, data, q, v, a)          with gravity
    forward_dynamics_batch(q,qd,Q)           aba(model, data, q, v, tau, convention)
    inverse_dynamics_derivatives_batch       computeRNEADerivatives(model, data, q, v, a)
      (q,qd,qdd): dQ/dq, dQ/dqd                dtau_dq, dtau_dv and M (= dtau_da)
    forward_dynamics_derivatives_batch       computeABADerivatives(model, data, q, v, tau)
      (q,qd,Q): qdd, dqdd/dq, dqdd/dqd, A^-1   ddq, ddq_dq, ddq_dv, Minv (upper triangle)

The derivative pairs run only for mechanisms generated with ``[kernels] derivatives = true``
(or ``"tangent"``: on the body-twist base, Pinocchio's own problem in every column).

Ours, two ways, each timed beside Pinocchio in the same rotation:
- batch: one call of the batch function per pass (it loops over the states, writes one status
  per state and its outputs to batch x size arrays, which need not stay in cache: 10^4 states of
  an 18 x 18 mass matrix are 26 MB of stores, which costs about as much as computing them);
- loop: the single-state kernel called state after state in a compiled loop (the harness's
  ``ours_loop``), every call writing into the same output buffer, as Pinocchio's loop writes
  into its ``Data``: the like-for-like comparison with Pinocchio's loop.
Inputs named ``p`` get the manifest's ``parameter_defaults`` (1.0 when there is none).
Our forward kinematics also returns the points and full rotation matrices; Pinocchio's
computes data.oMi only (no frames). Pinocchio's crba fills the upper triangle of M only; ours
the full matrix. Pinocchio's convention (crba, aba; Pinocchio 4 ``Convention``) defaults to
LOCAL, the API's default (``convention="world"`` to time WORLD instead).
Pinocchio's loop copies nothing: its states are Eigen::VectorXd prepared beforehand; each result
is added to a checksum so the compiler cannot drop it.

States are random and independent for each side (the models need not be the same): ours
q ~ U(-1, 1) (base translations and Euler angles included), qd, qdd, Q ~ N(0, 1); Pinocchio's
q = integrate(neutral, dq), dq ~ U(-1, 1) (a free flyer gets a unit quaternion), v, a, tau ~
N(0, 1). Root "free": Pinocchio's model gets a JointModelFreeFlyer root (nq = 7 + n, nv = 6 +
n), while our mechanism carries its 6 base coordinates itself. Only our body-twist base
(``base_velocity = "body"``: q with a quaternion of any norm, qd = (v_body, omega_body)) has
the free flyer's coordinates and velocities, so only its rows time the same problem; the
Euler-angle and frame-0 quaternion rows (a mass matrix that depends on the base attitude) stay
for comparison (bench/general_robots.py FREE_BASE_RACE, ``--race``).

Build (default): both sides are compiled with FLAGS (``-O3 -DNDEBUG`` and ALIGN_FLAGS, no
fast-math; our kernels also with OURS_EXTRA_FLAGS, ``-fopenmp-simd`` as the runtime gives it) into a
binary cached in bench/results/pinocchio_build/ under a hash of the sources, flags, compiler and
Pinocchio version. The Pinocchio object (~3 min to compile) is shared by all mechanisms; per
mechanism only our C file and a small glue part of the harness are compiled (seconds). Not
``-march=native``: Pinocchio's prebuilt libraries (libpinocchio_parsers/default, which
buildModel needs) are baseline x86-64, and with -march=native (even with
-DEIGEN_MAX_ALIGN_BYTES=16) urdf::buildModel crashed freeing the model; so both sides use the
baseline instruction set (SSE2, no FMA). Needs gcc/g++, the ``pin`` wheel, ``cmeel-eigen`` and
``cmeel-urdfdom-headers`` (Pinocchio's URDF header includes urdf_model/model.h).

Native build (``build="native"``, ``--native``): both sides are compiled with NATIVE_FLAGS
(``-O3 -DNDEBUG -march=native -ffp-contract=fast``; the contraction flag lets both sides fuse
multiply-adds into FMA, which ``gcc -std=c99`` would otherwise not do for our C file) and no
prebuilt Pinocchio library is linked at all, so nothing of Pinocchio runs with the baseline
instruction set or another Eigen alignment. The harness does not parse the URDF: this driver
builds the model itself (pinocchio_model(): URDF, free-flyer root, buildReducedModel for the
locks), saves it with ``Model.saveToBinary`` to a temporary file, and the harness (compiled
with -DMECHGEN_SERIALIZED_MODEL) reads it with ``Model::loadFromBinary`` from Pinocchio's
header-only serialization (pinocchio/serialization.hpp), compiled in its own translation unit
with NATIVE_FLAGS; it links only libboost_serialization (from cmeel.prefix/lib, with an rpath).
Its objects and binaries are cached beside the default ones with a ``native-`` tag and a key
that also covers ``-march=native -Q --help=target`` (what "native" means on this machine).
AVX2 build (``build="avx2"``, ``--build avx2``): both sides compiled with AVX2_FLAGS (``-O3
-DNDEBUG -mavx2 -ffp-contract=off``: the VEX three-operand encoding and 256-bit vectors, no FMA,
so our side gives the baseline build's bits), by the native build's route (model from a saved
file, no prebuilt library: Eigen's alignment differs under AVX). It is what the runtime's own
build uses on a CPU with AVX2 (runtime/cbuild.py ``isa_flags``), raced against Pinocchio given
the same instructions.
Run ``python bench/pinocchio_race.py ur5_arm --urdf .../ur5_robot.urdf [--build avx2|native]``
for a table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HARNESS_SRC = HERE / "pinocchio_harness.cpp"
TIMING_HEADER = HERE / "harness_timing.hpp"   # included by both C++ harnesses
BUILD_DIR = HERE / "results" / "pinocchio_build"
ALIGN_FLAGS = ["-falign-functions=64", "-falign-loops=64"]
"""Given to both sides in every build: each function and loop starts a 64-byte line, so a
kernel's time does not depend on where the linker happened to put it. Without them one binary
holding solo12's mass-matrix function identical to the byte took 300 ns and another 371 ns
(-O3); with them both 303 ns (docs/algorithms.md §2.4.3)."""
FLAGS = ["-O3", "-DNDEBUG", *ALIGN_FLAGS]
NATIVE_FLAGS = ["-O3", "-DNDEBUG", "-march=native", "-ffp-contract=fast", *ALIGN_FLAGS]
AVX2_FLAGS = ["-O3", "-DNDEBUG", "-mavx2", "-ffp-contract=off", *ALIGN_FLAGS]
BUILDS = {"default": FLAGS, "native": NATIVE_FLAGS, "avx2": AVX2_FLAGS}
"""The race's builds: each compiles both sides with these flags (module doc)."""
OURS_EXTRA_FLAGS = os.environ.get("MECHGEN_RACE_OURS_CFLAGS", "-fopenmp-simd").split()
"""Added to our kernels' compilation only, as runtime/cbuild.py gives them (VECTOR_LOOP_FLAGS:
the kernels' ``#pragma omp simd`` loops vectorised as written, no bit changed; Pinocchio has no
such pragma); ``MECHGEN_RACE_OURS_CFLAGS`` replaces them (empty: none)."""
PIN_DEFINES = ["-DPINOCCHIO_WITH_URDFDOM", "-DBOOST_MPL_LIMIT_LIST_SIZE=30",
               "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30", "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
               "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]
PAIRS = ["forward_kinematics", "mass_matrix", "inverse_dynamics", "forward_dynamics",
         "inverse_dynamics_derivatives", "forward_dynamics_derivatives"]


def _prefix() -> Path:
    import pinocchio
    p = Path(pinocchio.__file__).resolve()
    while p.name != "cmeel.prefix":
        p = p.parent
    return p


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"compile failed:\n{' '.join(cmd)}\n{r.stderr[-4000:]}")


def _hash(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _cached(path: Path, cmd: list[str]) -> Path:
    """Run the compile command ``cmd`` (writing to ``-o TMP``) unless ``path`` exists."""
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        _run([*cmd, "-o", str(tmp)])
        os.replace(tmp, path)
    return path


def c_symbol_prefix(src_dir: Path) -> str:
    """What the generated C functions' names start with (``mechgen_<mech>``): the manifest's
    ``c_function`` of a kernel without ``_<kernel name>``."""
    k = json.loads((Path(src_dir) / "manifest.json").read_text())["kernels"][0]
    return k["c_function"].removesuffix(f"_{k['name']}")


def build_harness(mech: str, src_dir: Path, kernels: list[str],
                  build: str = "default") -> tuple[Path, dict]:
    """The harness binary for ``mech`` (compiled unless cached) and build info; ``build`` one of
    BUILDS: "native" and "avx2" load the model from a saved file and link no prebuilt
    Pinocchio library."""
    import pinocchio
    pre = _prefix()
    inc = [f"-I{pre / 'include'}", f"-I{pre / 'include' / 'eigen3'}",
           f"-I{pre / 'include' / 'urdfdom_headers'}"]
    cxx, cc = os.environ.get("CXX", "g++"), os.environ.get("CC", "gcc")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    if build not in BUILDS:
        raise ValueError(f"build: one of {sorted(BUILDS)}, got {build!r}")
    native = build != "default"
    flags, defines, tag = BUILDS[build], PIN_DEFINES, ""
    if native:
        defines, tag = [*PIN_DEFINES, "-DMECHGEN_SERIALIZED_MODEL"], f"{build}-"
        # what -march=native means on this machine belongs in the cache key
        version += subprocess.run([cxx, *flags, "-Q", "--help=target"],
                                  capture_output=True, text=True).stdout
    src = HARNESS_SRC.read_bytes() + TIMING_HEADER.read_bytes()
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    info = {"flags": flags, "build": build, "compile_seconds": 0.0}
    t0 = time.perf_counter()

    pin_cmd = [cxx, "-std=c++17", *flags, *defines, *inc, "-c", str(HARNESS_SRC)]
    pin_key = _hash(src, pin_cmd, version, pinocchio.__version__)
    pin_obj = BUILD_DIR / f"pinocchio-{tag}{pin_key}.o"
    if not pin_obj.exists():
        print("compiling Pinocchio harness (first time, ~3 min)...", file=sys.stderr, flush=True)
    _cached(pin_obj, pin_cmd)
    info["pinocchio_compile"] = " ".join(pin_cmd)

    src_dir = Path(src_dir).resolve()
    c, h = src_dir / f"{mech}.c", src_dir / f"{mech}.h"
    glue_cmd = [cxx, "-std=c++17", *flags, "-DMECHGEN_GLUE",
                f"-DMECHGEN_MECH={c_symbol_prefix(src_dir)}",
                f'-DMECHGEN_HEADER="{h}"',
                "-DMECHGEN_KERNELS=" + "".join(f"K({k})" for k in kernels), "-c", str(HARNESS_SRC)]
    mech_cmd = [cc, "-std=c99", *flags, *OURS_EXTRA_FLAGS, f"-I{src_dir}", "-c", str(c)]
    key = _hash(pin_key, glue_cmd, mech_cmd, c.read_bytes(), h.read_bytes())
    exe = BUILD_DIR / f"{mech}-{tag}{key}"
    if not exe.exists():
        glue = _cached(BUILD_DIR / f"{mech}-{tag}{key}-glue.o", glue_cmd)
        obj = _cached(BUILD_DIR / f"{mech}-{tag}{key}-c.o", mech_cmd)
        lib = pre / "lib"
        libs = (["-lboost_serialization"] if native
                else ["-lpinocchio_parsers", "-lpinocchio_default"])
        _cached(exe, [cxx, str(pin_obj), str(glue), str(obj), f"-L{lib}", *libs,
                      f"-Wl,-rpath,{lib}"])
    info.update(mech_compile=" ".join(mech_cmd), glue_compile=" ".join(glue_cmd),
                compile_seconds=time.perf_counter() - t0)
    return exe, info


def pinocchio_model(urdf: Path, locked: dict[str, float], root: str):
    """The same model as the harness builds, through Pinocchio's Python bindings."""
    import pinocchio as pin
    full = (pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer()) if root == "free"
            else pin.buildModelFromUrdf(str(urdf)))
    q_ref = pin.neutral(full)
    ids = [full.getJointId(name) for name in locked]
    for jid, value in zip(ids, locked.values()):
        q_ref[full.joints[jid].idx_q] = value
    return pin.buildReducedModel(full, ids, q_ref)


def race(mech: str, generated_dir: Path, urdf: Path, locked: dict[str, float], root: str,
         batch: int = 10000, reps: int = 7, *, convention: str = "local", seed: int = 0,
         build: str = "default", processes: int = 3) -> dict:
    """{kernel: {"ours_ns", "ours_loop_ns", "pinocchio_ns", "ratio" = pinocchio / ours (batch),
    "ratio_loop" = pinocchio / ours (single-state loop)}} (see module doc); each time the best
    of ``reps`` passes in each of ``processes`` runs of the harness."""
    import pinocchio as pin
    if root not in ("fixed", "free"):
        raise ValueError("root: 'fixed' or 'free'")
    src_dir, urdf = Path(generated_dir).resolve() / mech, Path(urdf).resolve()
    manifest = json.loads((src_dir / "manifest.json").read_text())
    kernels = [k for k in manifest["kernels"] if k["name"] in PAIRS]
    defaults = manifest.get("parameter_defaults", {})
    p = np.array([float(defaults.get(name, 1.0)) for name in manifest["parameters"]])

    rng = np.random.default_rng(seed)
    model = pinocchio_model(urdf, locked, root)
    q0 = pin.neutral(model)
    arrays = {"pin_q": np.array([pin.integrate(model, q0, dq)
                                 for dq in rng.uniform(-1, 1, (batch, model.nv))]),
              "pin_v": rng.standard_normal((batch, model.nv)),
              "pin_a": rng.standard_normal((batch, model.nv)),
              "pin_tau": rng.standard_normal((batch, model.nv))}
    for k in kernels:
        for i in k["inputs"]:
            w = math.prod(i["shape"])
            if i["name"] in arrays:
                continue
            if i["name"] == "p":
                arrays["p"] = np.tile(p.reshape(1, w), (batch, 1))
            elif i["name"] == "q":
                arrays["q"] = rng.uniform(-1, 1, (batch, w))
            else:
                arrays[i["name"]] = rng.standard_normal((batch, w))

    exe, _ = build_harness(mech, src_dir, [k["name"] for k in kernels], build)
    with tempfile.TemporaryDirectory() as tmp:
        states = Path(tmp) / "states.bin"
        with open(states, "wb") as f:
            for a in arrays.values():
                f.write(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        lines = [f"convention {convention}", f"n {batch}", f"reps {reps}", f"states {states}"]
        if build != "default":  # the harness loads this very model, not the URDF
            model.saveToBinary(str(Path(tmp) / "model.bin"))
            lines.append(f"model {Path(tmp) / 'model.bin'}")
        else:
            lines += [f"urdf {urdf}", f"root {root}"]
            lines += [f"lock {name} {value!r}" for name, value in locked.items()]
        lines += [f"array {name} {a.shape[1]}" for name, a in arrays.items()]
        for k in kernels:
            ins = [i["name"] for i in k["inputs"]]
            outs = [math.prod(o["shape"]) for o in k["outputs"]]
            lines.append(" ".join(map(str, ["kernel", k["name"], len(ins), *ins,
                                            len(outs), *outs])))
        cfg = Path(tmp) / "config.txt"
        cfg.write_text("\n".join(lines) + "\n")
        runs = [_run_harness(exe, cfg) for _ in range(processes)]
    best = {name: {key: min(run[name][key] for run in runs)
                   for key in ("ours_ns", "ours_loop_ns", "pinocchio_ns")} for name in runs[0]}
    return {name: {**t, "ratio": t["pinocchio_ns"] / t["ours_ns"],
                   "ratio_loop": t["pinocchio_ns"] / t["ours_loop_ns"]}
            for name, t in best.items()}


def _run_harness(exe: Path, cfg: Path) -> dict:
    """One process of the harness: {kernel: its timings}. Each process gets other addresses
    (ASLR), and one kernel's time moved by up to 1.5x between processes of the same binary, so
    ``race`` keeps the best of several processes for every side."""
    r = subprocess.run([str(exe), str(cfg)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"harness failed: {r.stderr.strip()}")
    return json.loads(r.stdout)["kernels"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mech")
    ap.add_argument("--urdf", type=Path, required=True)
    ap.add_argument("--root", default="fixed", choices=["fixed", "free"])
    ap.add_argument("--lock", action="append", default=[], metavar="JOINT=VALUE")
    ap.add_argument("--generated", type=Path, default=HERE.parent / "generated")
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--processes", type=int, default=3, help="harness runs; best of all")
    ap.add_argument("--convention", default="local", choices=["local", "world"])
    ap.add_argument("--build", default="default", choices=sorted(BUILDS),
                    help="default: -O3; avx2: -O3 -mavx2 (no FMA); native: -march=native "
                         "-ffp-contract=fast (both sides alike)")
    ap.add_argument("--native", action="store_true", help="the same as --build native")
    args = ap.parse_args(argv)
    locked = {k: float(v) for k, v in (s.split("=", 1) for s in args.lock)}
    res = race(args.mech, args.generated, args.urdf, locked, args.root, args.batch, args.reps,
               convention=args.convention,
               build="native" if args.native else args.build, processes=args.processes)
    print(f"{'kernel':28s} {'ours batch':>10s} {'ours loop':>10s} {'pinocchio ns':>13s} "
          f"{'Pin/batch':>9s} {'Pin/loop':>8s}", file=sys.stderr)
    for name, t in res.items():
        print(f"{name:28s} {t['ours_ns']:10.1f} {t['ours_loop_ns']:10.1f} "
              f"{t['pinocchio_ns']:13.1f} {t['ratio']:9.2f} {t['ratio_loop']:8.2f}",
              file=sys.stderr)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
