"""setuptools glue for what pyproject.toml cannot list statically: each bundled mechanism's
generated folder holds a Python kernel module, so it is a package of its own
(``mechgen.generated.<name>``, with its C source, header and manifest as package data); each
backend's template folder (``templates/<backend>/``) and every code package are found, not
listed."""

import json
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
BUNDLED = sorted(p.name for p in (ROOT / "generated").iterdir()
                 if (p / "manifest.json").is_file())
TEMPLATES = sorted(p.name for p in (ROOT / "templates").iterdir()
                   if p.is_dir() and any(p.glob("*.j2")))


def code_packages(folder: str) -> list[str]:
    """``mechgen.<folder>`` and every package below it (a folder with an __init__.py)."""
    return sorted(f"mechgen.{folder}" + "".join(f".{part}" for part in p.parent.relative_to(
        ROOT / folder).parts) for p in (ROOT / folder).rglob("__init__.py"))


def generated_files(name: str) -> list[str]:
    """A bundled mechanism's package data: its manifest and the files of every backend it
    lists (a manifest written before it listed them: the C source and header)."""
    manifest = json.loads((ROOT / "generated" / name / "manifest.json").read_text())
    listed = [f for b in manifest.get("backends", {}).values() for f in b["files"].values()
              if not f.endswith(".py")]         # a module of the package already
    return ["manifest.json", *(listed or ["*.c", "*.h"])]


setup(
    packages=["mechgen", *code_packages("generator"), "mechgen.generator.mechanisms",
              "mechgen.generator.mechanisms.urdf",
              *code_packages("runtime"),
              "mechgen.templates", *(f"mechgen.templates.{t}" for t in TEMPLATES),
              "mechgen.generated",
              *(f"mechgen.generated.{name}" for name in BUNDLED)],
    package_data={
        "mechgen.generator.mechanisms": ["*.toml"],
        "mechgen.generator.mechanisms.urdf": ["*.urdf", "*.md"],
        "mechgen.runtime": ["csrc/*.c", "csrc/*.h", "csrc/extension/*.c"],
        "mechgen.runtime.docking": ["scenarios/*.toml"],
        **{f"mechgen.templates.{t}": ["*.j2"] for t in TEMPLATES},
        **{f"mechgen.generated.{name}": generated_files(name) for name in BUNDLED},
    },
)
