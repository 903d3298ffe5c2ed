"""Robots of general geometry for the Pinocchio race (bench only, not bundled).

xArm7 (twists of 1.5708 rad, not pi/2: every joint rotation mixes two axes) and HyQ on a free
base (hip rpy of 1.57079632679 and 3.14159265359, kept as written), both from the
``example-robot-data`` files that ship with the ``pin`` wheel. Their kernels are generated into
a temporary folder here; nothing is written to generated/.

Solo-12 and HyQ also on the two quaternion bases (docs/algorithms.md section 2.6): ``_quat``
(velocities v in frame 0, omega in the base frame) and ``_body`` (the body twist
(v_body, omega_body), Pinocchio's free flyer: the race's Pinocchio side solves the same problem
as ours only on this base; the Euler-angle rows stay for comparison).

HyQ also with its hip angles snapped (``_snap``, ``snap = 1e-11``): 1.57079632679 and
3.14159265359 taken as exact quarter turns, the model moved by 4.9e-12 rad, which prunes a third
of the mass matrix (docs/algorithms.md section 2.4.2). Pinocchio's side keeps the URDF as
written; tests/test_snapped_twists.py checks that the snapped kernels still agree with it to
1e-10.

    python bench/general_robots.py            # op counts of their kernels
    python bench/general_robots.py --race     # the free-base rows of the Pinocchio race, side
                                              # by side in one run (bundled solo12, Euler base,
                                              # included)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mechgen.generator.build import files_for_spec, write_files  # noqa: E402

SOLO12 = "solo_description/robots/solo12.urdf"
HYQ = "hyq_description/robots/hyq_no_sensors.urdf"
QUAT = {"attitude": "quaternion"}
BODY = {"attitude": "quaternion", "base_velocity": "body"}
TANGENT = {"hyq_body", "solo12_body"}
"""Robots generated with ``[kernels] derivatives = "tangent"``: Pinocchio's free flyer, whose
derivatives the race then times against computeRNEADerivatives / computeABADerivatives."""
SNAP = {"snap": 1e-11}       # rpy angles within 1e-11 rad of k * 90 deg taken as exact

# name -> (URDF below example-robot-data's robots/, base, locked joints, more [mechanism] keys)
ROBOTS = {
    "xarm7": ("xarm_description/urdf/xarm7.urdf", "fixed", {}, {}),
    "hyq": (HYQ, "free", {}, {}),
    "hyq_quat": (HYQ, "free", {}, QUAT),
    "hyq_body": (HYQ, "free", {}, BODY),
    "solo12_quat": (SOLO12, "free", {}, QUAT),
    "solo12_body": (SOLO12, "free", {}, BODY),
    "hyq_snap": (HYQ, "free", {}, SNAP),
    "hyq_body_snap": (HYQ, "free", {}, {**BODY, **SNAP}),
}
FREE_BASE_RACE = ("solo12", "solo12_quat", "solo12_body", "hyq", "hyq_quat", "hyq_body",
                  "hyq_snap", "hyq_body_snap")


def robots_dir() -> Path:
    """example-robot-data's robots/ folder inside the ``pin`` wheel's cmeel prefix."""
    import pinocchio
    p = Path(pinocchio.__file__).resolve()
    while p.name != "cmeel.prefix":
        p = p.parent
    return p / "share" / "example-robot-data" / "robots"


def spec_text(name: str) -> str:
    """The spec of one robot (gravity -9.81 along z, as the bundled URDF specs)."""
    urdf, base, lock, extra = ROBOTS[name]
    lines = ["[mechanism]", f'name = "{name}"', f'urdf = "{robots_dir() / urdf}"',
             f'base = "{base}"', "gravity = [0, 0, -9.81]",
             *(f'{k} = {v!r}' if isinstance(v, float) else f'{k} = "{v}"'
               for k, v in extra.items())]
    if lock:
        lines += ["[lock]", *(f"{j} = {v!r}" for j, v in lock.items())]
    if name in TANGENT:
        lines += ["[kernels]", 'derivatives = "tangent"']
    return "\n".join(lines) + "\n"


def generate(out: Path, names=None) -> list[tuple[str, Path, dict, str, dict]]:
    """Generate every robot (or those ``names``) into ``out``: (name, URDF path, lock, base,
    {kernel: ops})."""
    cases = []
    for name, (urdf, base, lock, _) in ROBOTS.items():
        if names is not None and name not in names:
            continue
        spec = out / f"{name}.toml"
        spec.write_text(spec_text(name))
        _, gen, files = files_for_spec(spec)
        write_files(out / name, files)
        cases.append((name, robots_dir() / urdf, lock, base,
                      {g.kernel.name: g.ops["total"] for g in gen}))
    return cases


def race_free_bases(reps: int = 7) -> dict:
    """The free-base rows of the Pinocchio race in one run: bundled solo12 (Euler base) and
    the FREE_BASE_RACE variants, each kernel against Pinocchio's free flyer (ops, ns, ratio)."""
    from bench.pinocchio_race import race
    from mechgen.generator.build import GENERATED
    out_dir = Path(tempfile.mkdtemp(prefix="mechgen_free_bases_"))
    rows = [(name, out_dir, urdf, lock, base, ops) for name, urdf, lock, base, ops
            in generate(out_dir, set(FREE_BASE_RACE) - {"solo12"})]
    bundled = json.loads((GENERATED / "solo12" / "manifest.json").read_text())
    solo_ops = {k["name"]: k["ops"]["total"] for k in bundled["kernels"]}
    rows.insert(0, ("solo12", GENERATED, robots_dir() / SOLO12, {}, "free", solo_ops))
    print(f"{'robot':12s} {'kernel':20s} {'ops':>6s} {'batch ns':>8s} {'loop ns':>8s} "
          f"{'Pinocchio ns':>12s} {'Pin/batch':>9s} {'Pin/loop':>8s}")
    results = {}
    for name, folder, urdf, lock, base, ops in rows:
        res = race(name, folder, urdf, lock, base, reps=reps)
        for k, t in res.items():
            t["ops"] = ops[k]
            print(f"{name:12s} {k:20s} {t['ops']:6d} {t['ours_ns']:8.0f} "
                  f"{t['ours_loop_ns']:8.0f} {t['pinocchio_ns']:12.0f} {t['ratio']:9.2f} "
                  f"{t['ratio_loop']:8.2f}", flush=True)
        results[name] = res
    return results


if __name__ == "__main__":
    if "--race" in sys.argv[1:]:
        print(json.dumps(race_free_bases(), indent=1))
    else:
        for name, _, _, base, ops in generate(Path(tempfile.mkdtemp(prefix="mechgen_general_"))):
            print(f"{name} ({base} base): {ops}")
