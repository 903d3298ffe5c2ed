"""Generation time: mechgen's fast printer and CSE against SymPy's printers and ``sympy.cse``.

Every case is generated in a fresh process (so neither path inherits the other's SymPy cache),
alternately by the two paths, ``--reps`` times each; the best time of each path is reported,
with their ratio. Both paths must give byte-identical files (checked: the sha256 of all files).

- ``sympy``: the kernels printed by the backends' SymPy printers and CSE'd by ``sympy.cse``
  (what generation did before :mod:`mechgen.generator.backends.fast`);
- ``fast``: what generation does now.

Cases: by default a few quick ones (what ``make bench`` runs); ``--all`` adds every bundled
mechanism, Talos (reduced, on a free base, 38 DoF) from example-robot-data when installed, and
random chains of 10, 20, 30 and 40 joints (``tests/chains.py``, seed 0); those take minutes.

    python bench/generation_bench.py [--all] [--reps 2] [--cases ur5_arm chain30 ...]

Wall seconds are those of the kernels built in worker processes, one per core
(generator/jobs.py); ``MECHGEN_JOBS=1`` times the serial loop. CPU seconds include the
workers'.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUICK = ["ur5_arm", "panda_arm", "fourbar", "chain10"]
CHAINS = [10, 20, 30, 40]
TALOS = "talos_data/robots/talos_reduced.urdf"


def robots_dir() -> Path | None:
    """example-robot-data's robots folder on sys.path (a cmeel package), if installed."""
    for entry in sys.path:
        folder = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if folder.is_dir():
            return folder
    return None


def all_cases() -> list[str]:
    from mechgen.generator.build import bundled_specs
    cases = [s.stem for s in bundled_specs()]
    robots = robots_dir()
    if robots is not None and (robots / TALOS).is_file():
        cases.append("talos_reduced")
    return cases + [f"chain{n}" for n in CHAINS]


def build_model(case: str):
    """The model of a case name: a bundled spec's stem, talos_reduced, or chain<n>."""
    from mechgen.generator.build import MECHANISMS
    from mechgen.generator.frontend import load
    if case.startswith("chain"):
        from tests.chains import random_chain
        return random_chain(0, int(case[5:]))[0]
    if case == "talos_reduced":
        from mechgen.generator.families.serial.urdf import load_urdf
        return load_urdf(robots_dir() / TALOS, base="free", gravity=(0.0, 0.0, -9.81))
    return load(MECHANISMS / f"{case}.toml")


def use_sympy_paths() -> None:
    """Generation as before: SymPy's printers in emit, ``sympy.cse`` in the CSE pass."""
    import sympy as sp
    from mechgen.generator.backends.base import Backend
    from mechgen.generator.passes import cse
    Backend.fast_printer = property(lambda self: self.printer)
    cse.cse = lambda exprs, symbols: sp.cse(list(exprs), symbols=symbols, order="none")


def child(case: str, path: str) -> dict:
    """Generate one case in this process (kernels and their printed files, as ``mechgen
    generate``): seconds, wall and CPU, and the files' digest. mechgen is imported first on
    both paths, so both get its SymPy cache size (mechgen.generator sets it before SymPy is
    imported)."""
    from mechgen.generator.build import files_for_model
    if path == "sympy":
        use_sympy_paths()
    model = build_model(case)
    c0, t0 = _cpu_seconds(), time.perf_counter()
    files = files_for_model(model, f"{case}.toml", "0" * 64)[1]
    c1, t1 = _cpu_seconds(), time.perf_counter()
    digest = hashlib.sha256("".join(files[k] for k in sorted(files)).encode()).hexdigest()
    return {"n": getattr(model, "n", None), "total_s": t1 - t0, "cpu_s": c1 - c0,
            "sha256": digest}


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished worker processes (generator/jobs.py;
    ``MECHGEN_JOBS`` sets how many)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def measure(case: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", case, path],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(cases: list[str] | None = None, reps: int = 2) -> dict:
    """Each case by both paths, alternately, ``reps`` times; the best of each, their ratio."""
    cases = cases or QUICK
    print(f"\n== generation time (all kernels, C and Python), best of {reps}, each run a fresh "
          f"process, alternating")
    print(f"{'case':24s} {'DoF':>4s} {'sympy s':>8s} {'fast s':>8s} {'ratio':>6s} "
          f"{'fast CPU s':>10s}  files")
    results = {}
    for case in cases:
        runs: dict[str, list[dict]] = {"sympy": [], "fast": []}
        for _ in range(reps):
            for path in runs:
                runs[path].append(measure(case, path))
        best = {p: min(r, key=lambda x: x["total_s"]) for p, r in runs.items()}
        same = len({r["sha256"] for rs in runs.values() for r in rs}) == 1
        row = {"n": best["fast"]["n"], "sympy_s": best["sympy"]["total_s"],
               "fast_s": best["fast"]["total_s"],
               "fast_cpu_s": min(r["cpu_s"] for r in runs["fast"]),
               "ratio": best["sympy"]["total_s"] / best["fast"]["total_s"],
               "identical_files": same}
        results[case] = row
        print(f"{case:24s} {str(row['n'] or ''):>4s} {row['sympy_s']:8.1f} {row['fast_s']:8.1f} "
              f"{row['ratio']:6.2f} "
              f"{row['fast_cpu_s']:10.1f}  "
              f"{'identical' if same else 'DIFFER'}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="every bundled mechanism, Talos, "
                    "random chains of 10-40 joints (minutes)")
    ap.add_argument("--cases", nargs="*", help="case names (bundled spec stems, "
                    "talos_reduced, chain<n>)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    results = run(args.cases or (all_cases() if args.all else QUICK), args.reps)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
