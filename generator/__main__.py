"""Command line: ``mechgen generate|report [SPEC ...] [--out DIR] [--if-stale] [--jobs N]``.

With spec files, ``generate`` writes ``<out>/<name>/`` (default ``./generated/`` of the current
directory). Without, it regenerates the bundled specs into the source tree's ``generated/``
(refused when mechgen is installed as a package: the installed kernels are not to be rewritten).
Progress (one line per kernel) goes to stderr; files whose text is unchanged are not rewritten.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mechgen.generator.build import (GENERATED, ROOT, bundled_specs, files_for_spec, is_current,
                                     write_files)
from mechgen.generator.jobs import default_jobs
from mechgen.generator.model import ModelError
from mechgen.generator.families import family_of


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _default_out(bundled: bool) -> Path | None:
    if not bundled:
        return Path.cwd() / "generated"
    # a source checkout has pyproject.toml beside generated/; an installed package has not
    return GENERATED if (ROOT / "pyproject.toml").exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mechgen", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["generate", "report"])
    ap.add_argument("specs", nargs="*", type=Path, help="spec files (default: the bundled ones)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default ./generated/; the bundled set: the source "
                         "tree's generated/)")
    ap.add_argument("--if-stale", action="store_true",
                    help="skip a spec whose output was generated from the same text by this "
                         "version")
    ap.add_argument("--no-cse", action="store_true", help="skip common-subexpression elimination")
    ap.add_argument("--quiet", action="store_true", help="no per-kernel progress on stderr")
    ap.add_argument("--jobs", type=int, default=None, metavar="N",
                    help="worker processes for the kernels of a mechanism (default: "
                         "$MECHGEN_JOBS, else one per core; 1: none)")
    args = ap.parse_intermixed_args(argv)
    if args.jobs is not None and args.jobs < 1:
        ap.error(f"--jobs: expected a positive integer, got {args.jobs}")
    try:
        default_jobs()                  # a bad MECHGEN_JOBS is named before any work
    except ValueError as e:
        _say(f"mechgen: {e}")
        return 2
    specs = args.specs or bundled_specs()
    out = args.out or _default_out(bundled=not args.specs)
    if out is None and args.command == "generate":
        _say("mechgen: the bundled kernels are part of the installed package and are not "
             "regenerated in place; give --out DIR")
        return 2
    for spec in specs:
        if args.command == "generate" and args.if_stale and is_current(spec, out):
            _say(f"{spec.name}: up to date")
            continue
        t0 = time.perf_counter()
        progress = None if args.quiet else _say
        if progress:
            _say(f"{spec.name}: generating ...")
        try:
            chain, gen, files = files_for_spec(spec, cse=not args.no_cse, progress=progress,
                                             jobs=args.jobs)
        except (ModelError, OSError, UnicodeDecodeError) as e:
            _say(f"mechgen: {e}")
            return 2
        if args.command == "generate":
            changed = write_files(out / chain.name, files)
            print(f"{spec.name} -> {out / chain.name}/ ({len(gen)} kernels, "
                  f"{time.perf_counter() - t0:.1f} s in all; "
                  f"{len(changed)} file(s) changed)")
        else:
            print(family_of(chain).summary(chain))
            for g in gen:
                steps = "  ->  ".join(f"{nm} {ops['total']}" for nm, ops in g.passes)
                print(f"  {g.kernel.name:18s} dense {g.dense['total']:6d} | {steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
