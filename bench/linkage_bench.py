"""`make bench`, closed-loop linkages (papers 001 and 004): for every bundled linkage, the
generation time, op counts per kernel (generated vs the same equations as dense matrix
operations), and time per state of the C kernels (batch of 10^5) vs the generated Python
kernels vs the plain numpy reference (tests/reference/linkage_tree_numpy.py), for newton_step,
velocity, mass_matrix, forward_dynamics and inverse_dynamics; then assembly per state, the
compiled Newton loop (runtime/csrc/linkage_assemble.c) vs the Python loop over the same
compiled newton_step. Times are the best of interleaved repetitions, measured side by side.

    python bench/linkage_bench.py [--batch N]      (also called from bench/run.py)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mechgen import runtime  # noqa: E402
from mechgen.generator.build import bundled_specs, files_for_spec, write_files  # noqa: E402
from mechgen.runtime import linkage as lk  # noqa: E402
from tests.reference import linkage_tree_numpy as ref  # noqa: E402

TIMED = ["newton_step", "velocity", "mass_matrix", "forward_dynamics", "inverse_dynamics"]
N_PYTHON = 300          # states per timing of the Python kernels and the Python loop
N_NUMPY = 100           # states per timing of the numpy reference
REPEATS = 5             # interleaved repetitions (best of)


def linkage_specs() -> list[Path]:
    import tomllib
    return [s for s in bundled_specs()
            if tomllib.loads(s.read_text()).get("mechanism", {}).get("family") == "linkage"]


def interleaved(timers: dict, repeats: int = REPEATS) -> dict[str, float]:
    """Seconds of the fastest of ``repeats`` runs of each timer, the timers taking turns."""
    best = {k: float("inf") for k in timers}
    for _ in range(repeats):
        for k, f in timers.items():
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def states(mech, count: int, seed: int = 0) -> dict:
    """Newton starts (drives +-0.05 about the reference pose, dependent coordinates at their
    reference values), the assembled poses (tiled to ``count``) and random rates, forces and
    independent accelerations."""
    rng = np.random.default_rng(seed)
    ind = lk.independent_indices(mech)
    starts = np.tile(np.array(mech.manifest["q_ref"]), (count, 1))
    starts[:, ind] += rng.uniform(-0.05, 0.05, (count, len(ind)))
    res = lk.assemble_batch(mech, starts, engine="c")
    ok = res.status == lk.ASSEMBLED
    tile = np.arange(count) % ok.sum()
    q = np.ascontiguousarray(res.q[ok][tile])
    f = len(ind)
    qd_ind = rng.normal(size=(count, f))
    qd = mech.velocity(q, qd_ind)[0]
    return {"starts": starts, "q": q, "qd_ind": qd_ind, "qd": np.ascontiguousarray(qd),
            "tau": rng.normal(size=(count, mech.n)), "qdd_ind": rng.normal(size=(count, f)),
            "closing": np.ascontiguousarray(starts[ok][tile]),
            "assembled_fraction": float(ok.mean())}


def _args(kernel: str, st: dict, sl: slice) -> tuple:
    q = st["starts"] if kernel == "newton_step" else st["q"]
    extra = {"newton_step": (), "mass_matrix": (), "velocity": ("qd_ind",),
             "forward_dynamics": ("qd", "tau"), "inverse_dynamics": ("qd", "qdd_ind")}[kernel]
    return (q[sl], *[st[k][sl] for k in extra])


def _numpy_call(num, kernel: str, st: dict, count: int):
    f = getattr(ref, kernel)
    return [f(num, *[a[i] for a in _args(kernel, st, slice(0, count))]) for i in range(count)]


def bench_linkage(spec: Path, tmp: Path, batch: int) -> dict:
    t0 = time.perf_counter()
    model, gen, files = files_for_spec(spec)
    tgen = time.perf_counter() - t0
    write_files(tmp / model.name, files)
    c = runtime.load(model.name, "c", generated=tmp)
    py = runtime.load(model.name, "python", generated=tmp)
    num = ref.from_model(model)
    st = states(c, batch)
    ops = {g.kernel.name: {"ops": g.ops, "ops_dense": g.dense} for g in gen}
    rows = {}
    for k in TIMED:
        kc, kp = c.kernels[k], py.kernels[k]
        full, few = _args(k, st, slice(None)), _args(k, st, slice(0, N_PYTHON))
        kc(*_args(k, st, slice(0, 10)))                                 # warm up
        t = interleaved({"c": lambda: kc(*full), "python": lambda: kp(*few),
                         "numpy": lambda: _numpy_call(num, k, st, N_NUMPY)})
        t_c, t_py, t_np = t["c"] / batch, t["python"] / N_PYTHON, t["numpy"] / N_NUMPY
        rows[k] = {**ops[k], "t_c_ns": t_c * 1e9, "t_python_ns": t_py * 1e9,
                   "t_numpy_ns": t_np * 1e9, "python_over_c": t_py / t_c,
                   "numpy_over_c": t_np / t_c}
    closing = st["closing"]                      # starts that close: time the converging loop
    few = closing[:N_PYTHON]
    t = interleaved({"c": lambda: lk.assemble_batch(c, closing, engine="c"),
                     "python": lambda: lk.assemble_batch(c, few, engine="python")}, 3)
    res = lk.assemble_batch(c, closing, engine="c")
    assembly = {"t_c_ns": t["c"] / batch * 1e9, "t_python_loop_ns": t["python"] / N_PYTHON * 1e9,
                "python_over_c": (t["python"] / N_PYTHON) / (t["c"] / batch),
                "mean_iterations": float(res.iterations.mean()),
                "assembled_fraction": st["assembled_fraction"]}
    return {"n": model.n, "dof": len(model.closure.independent), "rows": len(model.closure.rows),
            "rank": model.closure.rank, "generation_s": tgen, "kernels": rows,
            "ops_all_kernels": ops, "assemble": assembly}


def run(specs: list[Path], tmp: Path, batch: int) -> dict:
    """Bench every linkage spec; print the tables; return the results (for bench.json)."""
    head = (f"{'linkage':16s} {'n':>2s} {'f':>2s} {'m/r':>5s} {'gen s':>6s} {'kernel':17s} "
            f"{'ops':>5s} {'dense':>6s} {'C ns':>7s} {'Py ns':>8s} {'numpy ns':>9s} "
            f"{'Py/C':>5s} {'np/C':>6s}")
    print(head)
    print("-" * len(head))
    out = {}
    for spec in specs:
        r = bench_linkage(spec, tmp, batch)
        out[spec.stem] = r
        for i, (k, x) in enumerate(r["kernels"].items()):
            lead = (f"{spec.stem:16s} {r['n']:2d} {r['dof']:2d} {r['rows']:2d}/{r['rank']:<2d} "
                    f"{r['generation_s']:6.2f}" if i == 0 else " " * 35)
            print(f"{lead} {k:17s} {x['ops']['total']:5d} {x['ops_dense']['total']:6d} "
                  f"{x['t_c_ns']:7.0f} {x['t_python_ns']:8.0f} {x['t_numpy_ns']:9.0f} "
                  f"{x['python_over_c']:5.0f} {x['numpy_over_c']:6.0f}", flush=True)
    print(f"\nassembly per state (Newton to 1e-12 from drives +-0.05 rad/m about the reference "
          f"pose, dependent coordinates at their reference values; 'closed': the fraction of "
          f"those starts that assemble, the others left out of the timing): the C loop over a "
          f"batch of {batch} vs the Python loop over the same compiled newton_step "
          f"({N_PYTHON} states)")
    head = (f"{'linkage':16s} {'steps':>5s} {'closed':>7s} {'C ns':>8s} {'Py loop ns':>11s} "
            f"{'Py/C':>6s}")
    print(head)
    print("-" * len(head))
    for name, r in out.items():
        a = r["assemble"]
        print(f"{name:16s} {a['mean_iterations']:5.2f} {a['assembled_fraction']:7.1%} "
              f"{a['t_c_ns']:8.0f} {a['t_python_loop_ns']:11.0f} {a['python_over_c']:6.0f}")
    print("\nops: generated kernel after all passes; dense: the same equations as dense matrix "
          "operations (kinematics 3x3, tree M and h, G, the LU / normal equations and the "
          "reduction over full n x f matrices); numpy: tests/reference/linkage_tree_numpy.py")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=100_000, help="states per C batch")
    ap.add_argument("--only", nargs="*", help="linkage names (default: all bundled)")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args()
    specs = [s for s in linkage_specs() if not args.only or s.stem in args.only]
    res = run(specs, Path(tempfile.mkdtemp(prefix="mechgen_linkage_bench_")), args.batch)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
