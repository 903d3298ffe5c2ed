"""Op counts of every kernel of every bundled mechanism: a fresh generation against generated/.

Reads the op counts (``ops.total``, from :mod:`mechgen.generator.passes.opcount`) of the
manifests in ``generated/`` (the committed kernels) and of a fresh generation of each bundled
spec in this process, prints the totals per mechanism and every kernel whose count changed, and
exits with status 1 when a kernel got worse by more than ``--tolerance`` (relative, 1 %).

    python bench/compare_ops.py [--tolerance 0.01] [spec stems ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def committed_ops(model_name: str) -> dict[str, int]:
    """Kernel name -> total op count, from generated/<model>/manifest.json."""
    manifest = json.loads((ROOT / "generated" / model_name / "manifest.json").read_text())
    return {k["name"]: k["ops"]["total"] for k in manifest["kernels"]}


def fresh_ops(spec: Path) -> tuple[str, dict[str, int]]:
    """(model name, kernel name -> total op count) of a fresh generation of ``spec``."""
    from mechgen.generator.build import generate_kernels
    from mechgen.generator.frontend import load
    model = load(spec)
    return model.name, {g.kernel.name: g.ops["total"] for g in generate_kernels(model)}


def main() -> int:
    from mechgen.generator.build import bundled_specs
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stems", nargs="*", help="bundled spec stems (default: all)")
    ap.add_argument("--tolerance", type=float, default=0.01)
    args = ap.parse_args()
    specs = [s for s in bundled_specs() if not args.stems or s.stem in args.stems]
    worse = 0
    grand_before = grand_after = 0
    for spec in specs:
        name, after = fresh_ops(spec)
        before = committed_ops(name)
        b, a = sum(before.values()), sum(after.values())
        grand_before, grand_after = grand_before + b, grand_after + a
        print(f"{spec.stem:24s} {b:8d} -> {a:8d} ({a - b:+d})", flush=True)
        for kernel in sorted(set(before) | set(after)):
            kb, ka = before.get(kernel), after.get(kernel)
            if kb != ka:
                print(f"    {kernel:36s} {kb} -> {ka}")
                if kb is not None and ka is not None and ka > kb * (1 + args.tolerance):
                    worse += 1
    print(f"{'all':24s} {grand_before:8d} -> {grand_after:8d} ({grand_after - grand_before:+d}); "
          f"{worse} kernel(s) worse by more than {args.tolerance:.0%}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
