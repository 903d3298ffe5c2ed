"""setuptools glue for what pyproject.toml cannot list statically: each bundled mechanism's
generated folder holds a Python kernel module, so it is a package of its own
(``mechgen.generated.<name>``, with its C source, header and manifest as package data)."""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
BUNDLED = sorted(p.name for p in (ROOT / "generated").iterdir()
                 if (p / "manifest.json").is_file())

setup(
    packages=["mechgen", "mechgen.generator", "mechgen.generator.algorithms",
              "mechgen.generator.passes", "mechgen.generator.mechanisms",
              "mechgen.generator.mechanisms.urdf", "mechgen.runtime",
              "mechgen.templates", "mechgen.templates.c", "mechgen.templates.python",
              "mechgen.generated",
              *(f"mechgen.generated.{name}" for name in BUNDLED)],
    package_data={
        "mechgen.generator.mechanisms": ["*.toml"],
        "mechgen.generator.mechanisms.urdf": ["*.urdf", "*.md"],
        "mechgen.templates.c": ["*.j2"],
        "mechgen.templates.python": ["*.j2"],
        **{f"mechgen.generated.{name}": ["*.c", "*.h", "manifest.json"] for name in BUNDLED},
    },
)
