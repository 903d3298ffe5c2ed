"""Batches across states in SIMD: ns per state of three ways to run a kernel over a batch.

- ``single``: the single-state kernel called once per state from Python (cffi), the cost of a
  Python loop over states;
- ``scalar batch``: a C loop calling the single-state kernel per state (compiled here beside
  the kernels, same flags): what the ``_batch`` kernels are in the default build (without
  ``MECHGEN_SIMD=1`` the SIMD blocks are not compiled);
- ``SIMD batch``: the generated ``_batch`` (blocks of W states vectorised across the states,
  ``mechgen.generator.simd``).

Each library is compiled with the runtime's SIMD flags (``cbuild.cflags(simd=True)``, the
``MECHGEN_SIMD=1`` build: ``-march=native``) or, with ``--builds native portable x86-64-v3``,
also without ``-march=native`` (``portable``: the compiler's baseline target, SSE2 on x86-64)
or for another target (``x86-64-v3``: AVX2, what a CPU without AVX-512 gets from native).
``--before DIR`` times a second copy of the kernels (e.g. the previous commit's generated/,
``git archive HEAD generated | tar -x -C DIR``) in the same run. All variants of a kernel are
timed interleaved (each round times every variant once), best of ``repeat``. A benchmark,
not a test.

    python -m bench.simd_bench [--states N] [--repeat R] [--before DIR] [--builds ...] [--all]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from math import prod
from pathlib import Path

import cffi
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import best  # noqa: E402
from mechgen.runtime import cbuild  # noqa: E402

SERIAL = ["forward_kinematics", "mass_matrix", "inverse_dynamics", "forward_dynamics"]
CASES = {
    "ur5": SERIAL,
    "panda": SERIAL,
    "solo12": SERIAL,
    "gough_stewart_docking": ["step", "step_accel"],
}
ALL_CASES = {**{m: SERIAL for m in ("ur5", "ur5_arm", "panda", "rx90", "space_arm7", "solo12")},
             "gough_stewart_docking": ["step", "step_accel"]}
"""``--all``: every bundled serial mechanism and the platform's steps."""


def scalar_batch_source(meta: dict) -> str:
    """The former ``_batch`` of one kernel: a loop calling its single-state function."""
    fn = meta["c_function"]
    ins = [(p["name"], prod(p["shape"])) for p in meta["inputs"]]
    outs = [(p["name"], prod(p["shape"])) for p in meta["outputs"]]
    params = ", ".join([f"const double *{n}" for n, _ in ins] + [f"double *{n}" for n, _ in outs])
    args = ", ".join(f"{n} + i * {s}" for n, s in ins + outs)
    return (f"int64_t {fn}_scalar_batch(int64_t n, {params}, int32_t *status)\n{{\n"
            f"    int64_t failed = 0;\n    for (int64_t i = 0; i < n; ++i) {{\n"
            f"        const int s = {fn}({args});\n        status[i] = s;\n"
            f"        failed += (s != 0);\n    }}\n    return failed;\n}}\n")


def build_flags(build: str) -> list[str]:
    """``native``: the runtime's SIMD build; ``portable``: the same without -march=native (the
    compiler's default target); any other name: ``-march=<name>`` instead of native (e.g.
    ``x86-64-v3``, an AVX2 CPU). A suffix ``/W`` (``x86-64-v3/8``) forces W lanes per block
    (``-DMG_SIMD_WIDTH=W``) instead of the target's own choice (templates/c/simd_width.c.j2)."""
    target, _, width = build.partition("/")
    flags = [f for f in cbuild.cflags(simd=True)
             if f != "-march=native" and f not in cbuild.ISA_FLAGS]   # the target is chosen here
    if width:
        flags.append(f"-DMG_SIMD_WIDTH={int(width)}")
    if target == "portable":
        return flags
    return flags[:-1] + [f"-march={target}", flags[-1]]


def build(mech: str, kernels: list[str], tmp: Path, generated: Path = ROOT / "generated",
          flags: list[str] | None = None):
    """One cffi module with the chosen kernels of a generated mechanism, their SIMD batches and
    their scalar batches; returns (ffi, lib, manifest entries by kernel name)."""
    folder = generated / mech
    manifest = json.loads((folder / "manifest.json").read_text())
    c_text = (folder / f"{mech}.c").read_text()
    h_text = (folder / f"{mech}.h").read_text()
    cdef = cbuild.cdef_from_header(h_text)
    units = cbuild.split_units(c_text, manifest, cdef)
    metas = {k["name"]: k for k in manifest["kernels"]}
    order = [k["name"] for k in manifest["kernels"]]
    chosen = [units[order.index(k)] for k in kernels]
    prelude = c_text[:c_text.index(f"\n/* {order[0]}:") + 1]   # includes, mg_sincos...
    bodies = [u[len(prelude):] for u in chosen]
    scalar = [scalar_batch_source(metas[k]) for k in kernels]
    heads = cbuild.declared_heads(cdef)
    decls = [d.strip() + ";" for d in cdef.split(";") if d.strip()
             and any(heads[metas[k]["c_function"] + suffix] in d for k in kernels
                     for suffix in ("", "_batch"))]
    decls += [s[:s.index("\n{")] + ";" for s in scalar]
    source = prelude + "".join(bodies) + "\n".join(scalar)
    ffi = cffi.FFI()
    ffi.cdef("\n".join(decls))
    name = f"_simd_bench_{mech}_{int(time.time() * 1e6) % 10**9}"
    ffi.set_source(name, source, extra_compile_args=(flags or build_flags("native")) + ["-iquote", str(folder)],
                   libraries=["m"])
    so = ffi.compile(tmpdir=str(tmp), verbose=False)
    spec = importlib.util.spec_from_file_location(name, so)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ffi, module.lib, metas, manifest


def random_inputs(manifest: dict, meta: dict, n: int, rng) -> list[np.ndarray]:
    """Random states: angles, rates and forces in [-1, 1]; a platform's pose within 1 cm and
    0.01 rad of its home (states that all pass the checks); parameters at their defaults."""
    arrays = []
    for p in meta["inputs"]:
        size = prod(p["shape"])
        if p["name"] == "p":
            a = np.tile([manifest["parameter_defaults"][k] for k in manifest["parameters"]],
                        (n, 1)).astype(float)
        elif p["name"] == "x" and len(manifest.get("home") or []) == size:
            a = np.asarray(manifest["home"], dtype=float) + rng.uniform(-0.01, 0.01, (n, size))
        else:
            a = rng.uniform(-1.0, 1.0, (n, size))
        arrays.append(np.ascontiguousarray(a))
    return arrays


def time_kernel(variants: dict, meta: dict, inputs: list[np.ndarray], repeat: int,
                single: bool = True) -> dict:
    """ns per state of each variant's scalar batch and SIMD batch (and of the first variant's
    single-state calls from Python), interleaved, best of ``repeat``. The variants share the
    output arrays, so each timed call follows an untimed call of its own: a variant that
    streams its outputs past the caches would otherwise leave the next one's lines in memory
    (solo12's mass matrix over 4096 states: 1.6x apart by the order alone). ``variants``: label ->
    (ffi, lib). Returns label -> {"scalar", "simd", "speedup"} and "single", "failed_states"."""
    n = len(inputs[0])
    fn = meta["c_function"]
    calls = {}
    status = np.zeros(n, dtype=np.int32)
    outs = [np.zeros((n, prod(p["shape"]))) for p in meta["outputs"]]     # shared by all
    for label, (ffi, lib) in variants.items():
        ptr = lambda a, ffi=ffi: ffi.cast("double *", a.ctypes.data)
        args = [ptr(a) for a in inputs] + [ptr(a) for a in outs]
        st = ffi.cast("int32_t *", status.ctypes.data)
        scalar, simd = getattr(lib, fn + "_scalar_batch"), getattr(lib, fn + "_batch")
        calls[(label, "scalar")] = lambda f=scalar, a=args, st=st: f(n, *a, st)
        calls[(label, "simd")] = lambda f=simd, a=args, st=st: f(n, *a, st)
    ffi, lib = next(iter(variants.values()))
    sizes = [a.shape[1] for a in inputs] + [prod(p["shape"]) for p in meta["outputs"]]
    ptrs = [ffi.cast("double *", a.ctypes.data) for a in (*inputs, *outs)]
    n_single = min(n, 2000)
    one = getattr(lib, fn)

    def one_by_one():
        for i in range(n_single):
            one(*[p + i * s for p, s in zip(ptrs, sizes)])

    times = {key: [] for key in calls}
    times["single"] = []
    for _ in range(repeat):        # interleaved: each round times every variant
        for key, call in calls.items():
            call()                 # untimed: the outputs' lines as this variant leaves them
            times[key].append(best(call, 1) / n)
        if single:
            times["single"].append(best(one_by_one, 1) / n_single)
    ns = {key: min(v) * 1e9 for key, v in times.items() if v}
    out = {label: {"scalar": ns[(label, "scalar")], "simd": ns[(label, "simd")],
                   "speedup": ns[(label, "scalar")] / ns[(label, "simd")]} for label in variants}
    return {**out, "single": ns.get("single"), "failed_states": int(np.count_nonzero(status)),
            "states": n}


def run(states: int = 4096, repeat: int = 15, cases: dict | None = None,
        generated: Path = ROOT / "generated", before: Path | None = None,
        builds: tuple[str, ...] = ("native",)) -> dict:
    """Build and time every case; prints a table, returns the rows (ns per state, the
    scalar/SIMD ratio, how many states failed a check), one column pair per build and
    version (``before``: a second generated/ folder timed in the same run)."""
    rng = np.random.default_rng(13)
    rows = {}
    versions = {"": generated} if before is None else {"before ": before, "after ": generated}
    labels = [f"{v}{b}" for b in builds for v in versions]
    print(f"SIMD batch: ns per state, {states} states, best of {repeat}, interleaved; scalar = "
          f"C loop over the single-state kernel (the default build's _batch, without its "
          f"streamed outputs), SIMD = the "
          f"_batch blocks")
    for b in builds:
        print(f"  {b}: {' '.join(build_flags(b))}")
    header = f"{'mechanism':22s} {'kernel':18s} {'single':>8s}" + "".join(
        f" | {lab + ' scalar':>16s} {'SIMD':>7s} {'ratio':>6s}" for lab in labels)
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="mechgen_simd_bench_") as tmp:
        for mech, kernels in (cases or CASES).items():
            libs = {}
            for b in builds:
                for v, folder in versions.items():
                    ffi, lib, metas, manifest = build(mech, kernels, Path(tmp), folder,
                                                      build_flags(b))
                    libs[f"{v}{b}"] = (ffi, lib)
            for k in kernels:
                r = time_kernel(libs, metas[k], random_inputs(manifest, metas[k], states, rng),
                                repeat)
                rows[f"{mech}.{k}"] = r
                print(f"{mech:22s} {k:18s} {r['single']:8.1f}" + "".join(
                    f" | {r[lab]['scalar']:16.1f} {r[lab]['simd']:7.1f} {r[lab]['speedup']:5.2f}x"
                    for lab in labels)
                    + (f"  ({r['failed_states']} states failed)" if r["failed_states"] else ""),
                    flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--before", type=Path, help="a second generated/ folder, timed alongside")
    ap.add_argument("--builds", nargs="+", default=["native"],
                    help="native, portable, or a -march= value (e.g. x86-64-v3)")
    ap.add_argument("--all", action="store_true", help="every bundled serial mechanism")
    ap.add_argument("--only", nargs="+", metavar="MECH.KERNEL", help="just these kernels")
    args = ap.parse_args()
    cases = ALL_CASES if args.all else CASES
    if args.only:
        cases = {}
        for item in args.only:
            mech, kernel = item.split(".")
            cases.setdefault(mech, []).append(kernel)
    run(args.states, args.repeat, cases, before=args.before, builds=tuple(args.builds))


if __name__ == "__main__":
    main()
