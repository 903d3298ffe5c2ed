"""Batches across states in SIMD: ns per state of three ways to run a kernel over a batch.

- ``single``: the single-state kernel called once per state from Python (cffi), the cost of a
  Python loop over states;
- ``scalar batch``: the former ``_batch`` body, a C loop calling the single-state kernel per
  state (compiled here beside the kernels, same flags);
- ``SIMD batch``: the generated ``_batch`` (blocks of W states vectorised across the states,
  ``mechgen.generator.simd``).

All three are compiled in one library with the runtime's flags (``cbuild.cflags(simd=True)``, the ``MECHGEN_SIMD=1`` build) and timed
in one run, interleaved, best of several repetitions. A benchmark, not a test.

    python -m bench.simd_bench [--states N] [--repeat R]
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

CASES = {
    "ur5": ["mass_matrix", "inverse_dynamics", "forward_dynamics"],
    "panda": ["mass_matrix", "inverse_dynamics", "forward_dynamics"],
    "solo12": ["mass_matrix", "inverse_dynamics", "forward_dynamics"],
    "gough_stewart_docking": ["step"],
}


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


def build(mech: str, kernels: list[str], tmp: Path, generated: Path = ROOT / "generated"):
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
    ffi.set_source(name, source, extra_compile_args=cbuild.cflags(simd=True) + ["-iquote", str(folder)],
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


def time_kernel(ffi, lib, meta: dict, inputs: list[np.ndarray], repeat: int) -> dict:
    """ns per state of the three ways, interleaved, best of ``repeat``."""
    n = len(inputs[0])
    outs = [np.zeros((n, prod(p["shape"]))) for p in meta["outputs"]]
    status = np.zeros(n, dtype=np.int32)
    ptr = lambda a: ffi.cast("double *", a.ctypes.data)
    in_p = [ptr(a) for a in inputs]
    out_p = [ptr(a) for a in outs]
    st_p = ffi.cast("int32_t *", status.ctypes.data)
    fn = meta["c_function"]
    simd, scalar, single = (getattr(lib, fn + "_batch"), getattr(lib, fn + "_scalar_batch"),
                            getattr(lib, fn))
    sizes = [a.shape[1] for a in inputs] + [a.shape[1] for a in outs]
    n_single = min(n, 2000)

    def one_by_one():
        for i in range(n_single):
            single(*[p + i * s for p, s in zip(in_p + out_p, sizes)])

    times = {"single": [], "scalar": [], "simd": []}
    for _ in range(repeat):        # interleaved: each round times all three
        times["scalar"].append(best(lambda: scalar(n, *in_p, *out_p, st_p), 1) / n)
        times["simd"].append(best(lambda: simd(n, *in_p, *out_p, st_p), 1) / n)
        times["single"].append(best(one_by_one, 1) / n_single)
    ns = {k: min(v) * 1e9 for k, v in times.items()}
    failed = int(np.count_nonzero(status))
    return {**ns, "speedup": ns["scalar"] / ns["simd"], "failed_states": failed, "states": n}


def run(states: int = 4096, repeat: int = 15, cases: dict | None = None,
        generated: Path = ROOT / "generated") -> dict:
    """Build and time every case; prints a table, returns the rows (ns per state, the
    scalar/SIMD ratio, how many states failed a check)."""
    rng = np.random.default_rng(13)
    rows = {}
    print(f"SIMD batch (flags: {' '.join(cbuild.cflags(simd=True))}; {states} states, best of {repeat})")
    header = (f"{'mechanism':22s} {'kernel':18s} {'single ns':>10s} {'scalar ns':>10s} "
              f"{'SIMD ns':>9s} {'scalar/SIMD':>11s}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="mechgen_simd_bench_") as tmp:
        for mech, kernels in (cases or CASES).items():
            ffi, lib, metas, manifest = build(mech, kernels, Path(tmp), generated)
            for k in kernels:
                r = time_kernel(ffi, lib, metas[k],
                                random_inputs(manifest, metas[k], states, rng), repeat)
                rows[f"{mech}.{k}"] = r
                print(f"{mech:22s} {k:18s} {r['single']:10.1f} {r['scalar']:10.1f} "
                      f"{r['simd']:9.1f} {r['speedup']:10.2f}x"
                      + (f"  ({r['failed_states']} states failed)" if r["failed_states"] else ""))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    run(args.states, args.repeat)


if __name__ == "__main__":
    main()
