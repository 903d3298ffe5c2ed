"""``mechgen generate|report [SPEC ...]`` and ``mechgen demo``: the command line.

    mechgen generate my.toml            # -> ./generated/<name>/ (or --out DIR)
    mechgen generate                    # the bundled specs (into the source tree's generated/)
    mechgen generate --if-stale ...     # only what is missing or out of date
    mechgen report [SPEC ...]           # op counts after each pass
    mechgen demo [--out results]        # the ground test (1 g, fixed base) of the mechanism
    mechgen dock [SCENARIO] [...]       # two spacecraft docking: one case and a campaign
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "demo":
        from mechgen.runtime.__main__ import main as demo
        return demo(argv[1:])
    if argv and argv[0] == "dock":
        from mechgen.runtime.docking.cli import main as dock
        return dock(argv[1:])
    if argv and argv[0] in ("generate", "report"):
        from mechgen.generator.__main__ import main as gen
        return gen(argv)
    print(__doc__.strip(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
    return 0 if argv and argv[0] in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
