"""Command line: ``python -m generator generate|report [SPEC ...] [--out DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from generator.build import GENERATED, bundled_specs, files_for_spec, write_files
from generator.model import ModelError
from generator.platform import Platform


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mechgen", description=__doc__)
    ap.add_argument("command", choices=["generate", "report"])
    ap.add_argument("specs", nargs="*", type=Path, help="spec files (default: the bundled ones)")
    ap.add_argument("--out", type=Path, default=GENERATED, help="output folder (default generated/)")
    ap.add_argument("--no-cse", action="store_true", help="skip common-subexpression elimination")
    args = ap.parse_args(argv)
    specs = args.specs or bundled_specs()
    for spec in specs:
        try:
            chain, gen, files = files_for_spec(spec, cse=not args.no_cse)
        except (ModelError, OSError) as e:
            print(f"mechgen: {e}", file=sys.stderr)
            return 2
        if args.command == "generate":
            write_files(args.out / chain.name, files)
            print(f"{spec.name} -> {args.out / chain.name}/ ({len(gen)} kernels, "
                  f"{sum(g.seconds for g in gen):.2f} s)")
        else:
            desc = (f"parallel, legs {' '.join(leg.type for leg in chain.legs)}"
                    if isinstance(chain, Platform) else f"n = {chain.n}, base {chain.base}")
            print(f"{chain.name} ({desc})")
            for g in gen:
                steps = "  ->  ".join(f"{nm} {ops['total']}" for nm, ops in g.passes)
                print(f"  {g.kernel.name:18s} dense {g.dense['total']:6d} | {steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
