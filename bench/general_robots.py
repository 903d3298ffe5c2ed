"""Robots of general geometry for the Pinocchio race (bench only, not bundled).

xArm7 (twists of 1.5708 rad, not pi/2: every joint rotation mixes two axes) and HyQ on a free
base (hip rpy of 1.57079632679 and 3.14159265359, kept as written), both from the
``example-robot-data`` files that ship with the ``pin`` wheel. Their kernels are generated into
a temporary folder here; nothing is written to generated/.

    python bench/general_robots.py            # op counts of their kernels
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mechgen.generator.build import files_for_spec, write_files  # noqa: E402

# name -> (URDF below example-robot-data's robots/, base, locked joints)
ROBOTS = {
    "xarm7": ("xarm_description/urdf/xarm7.urdf", "fixed", {}),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", "free", {}),
}


def robots_dir() -> Path:
    """example-robot-data's robots/ folder inside the ``pin`` wheel's cmeel prefix."""
    import pinocchio
    p = Path(pinocchio.__file__).resolve()
    while p.name != "cmeel.prefix":
        p = p.parent
    return p / "share" / "example-robot-data" / "robots"


def spec_text(name: str) -> str:
    """The spec of one robot (gravity -9.81 along z, as the bundled URDF specs)."""
    urdf, base, lock = ROBOTS[name]
    lines = ["[mechanism]", f'name = "{name}"', f'urdf = "{robots_dir() / urdf}"',
             f'base = "{base}"', "gravity = [0, 0, -9.81]"]
    if lock:
        lines += ["[lock]", *(f"{j} = {v!r}" for j, v in lock.items())]
    return "\n".join(lines) + "\n"


def generate(out: Path) -> list[tuple[str, Path, dict, str, dict]]:
    """Generate every robot into ``out``: (name, URDF path, lock, base, {kernel: ops})."""
    cases = []
    for name, (urdf, base, lock) in ROBOTS.items():
        spec = out / f"{name}.toml"
        spec.write_text(spec_text(name))
        _, gen, files = files_for_spec(spec)
        write_files(out / name, files)
        cases.append((name, robots_dir() / urdf, lock, base,
                      {g.kernel.name: g.ops["total"] for g in gen}))
    return cases


if __name__ == "__main__":
    for name, _, _, base, ops in generate(Path(tempfile.mkdtemp(prefix="mechgen_general_"))):
        print(f"{name} ({base} base): {ops}")
