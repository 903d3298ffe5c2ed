"""Parallel mechanisms for the tests: bundled ones, a mixed-leg one built here, random states."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mechgen import runtime
from mechgen.generator.build import GENERATED, generate_kernels, manifest_fields, write_files
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.families.parallel.platform import Platform, numeric_platform
from mechgen.generator.families.parallel.spec import platform_from_dict
from mechgen.generator.frontend import load

BUNDLED = ["gough_stewart_docking", "hunt_rus_docking", "hexapod_spu", "hexapod_ucu",
           "hexapod_rsu", "hexapod_pus"]

_BODY = {"mass": "m_link", "com": [0.1, 0.01, -0.02], "inertia": [0.006, 0.03, 0.035, 0.001, 0, 0]}


def mixed_spec(limits: bool = False) -> dict:
    """Six legs of five types; dampers, gravity and leg masses are parameters."""
    P = {"bodies": {"cylinder": _BODY, "piston": {**_BODY, "com": [0.3, 0, 0.01]}},
         "joints": {"stroke": {"stiffness": ["k", 500.0], "damping": "c", "preload": 80.0}}}
    R = {"crank": 0.25, "bodies": {"crank": _BODY, "rod": {**_BODY, "com": [0.25, 0.0, 0.0]}},
         "joints": {"crank": {"stiffness": "kr", "damping": "c"}}}
    types = ["UPS", "RUS", "SPU", "RSU", "UCU", "UPS"]
    rb, rp = 0.8, 0.55
    ab = np.radians([-15, 15, 105, 135, 225, 255])
    ap = np.radians([-45, 45, 75, 165, 195, 285])
    legs = []
    for k, t in enumerate(types):
        leg = {"name": f"L{k + 1}", "type": t,
               "base": [rb * np.cos(ab[k]), rb * np.sin(ab[k]), 0.0],
               "platform": [rp * np.cos(ap[k]), rp * np.sin(ap[k]), 0.02]}
        leg.update(P if t[0] != "R" else R)
        if t in ("SPU", "UCU"):
            leg["joints"] = {**leg["joints"], ("s3" if t == "SPU" else "roll"): {"damping": "c"}}
        if limits and t[0] != "R":
            leg["limits"] = {"stroke": [-0.2, 0.2]}
        legs.append(leg)
    return {"mechanism": {"name": "mixed_hexapod", "family": "parallel", "gravity": [0, 0, -9.81]},
            "parameters": {"m_link": 1.5, "k": 3000.0, "c": 50.0, "kr": 400.0},
            "platform": {"mass": 120.0, "inertia": [12.0, 14.0, 20.0, 0.3, -0.2, 0.1],
                         "home": [0.01, -0.02, 0.5, 0.02, -0.01, 0.03]},
            "legs": legs}


def platform_files(pf: Platform) -> dict[str, str]:
    gen = generate_kernels(pf)
    return render(pf.name, f"{pf.name}.toml", sha256_text(pf.name), gen, manifest_fields(pf))


def bundled(name: str) -> tuple[Platform, dict]:
    pf = load(Path(__file__).resolve().parent.parent / "generator" / "mechanisms" / f"{name}.toml")
    return pf, numeric_platform(pf)


def mixed(root: Path, files=platform_files) -> tuple[Platform, dict]:
    """The mixed platform, its files (``files(pf)``) written into ``root``."""
    pf = platform_from_dict(mixed_spec(), "mixed.toml")
    write_files(root / pf.name, files(pf))
    return pf, numeric_platform(pf)


def random_states(num: dict, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    home = num["home"]
    x = home + np.concatenate([rng.uniform(-0.03, 0.03, (n, 3)), rng.uniform(-0.06, 0.06, (n, 3))],
                              axis=1)
    return {"x": x, "u": rng.normal(0, 0.3, (n, 6)), "F": rng.normal(0, 80.0, (n, 6)),
            "fE": rng.normal(0, 150.0, (n, 3)), "mE": rng.normal(0, 30.0, (n, 3)),
            "g": num["gravity"] + rng.normal(0, 0.5, (n, 3))}


def law_forces(num: dict, q: list, qd: list, F: np.ndarray) -> list[np.ndarray]:
    """Active joint forces from the numeric laws (independent of the generated code)."""
    out = []
    for k, leg in enumerate(num["legs"]):
        Qk = np.zeros(len(leg["joints"]))
        for j, law in enumerate(leg["laws"]):
            x, v = q[k][j] - law["q0"], qd[k][j]
            Qk[j] = (law["preload"] - sum(c * x ** (i + 1) for i, c in enumerate(law["k"]))
                     - sum(c * v ** (i + 1) for i, c in enumerate(law["c"])))
            if law.get("stops"):                  # Hunt-Crossley end stops, never pulling
                lo, hi = law["stops"]
                k_s, d_s = law["k_stop"], law["d_stop"]
                Qk[j] += (-max(0.0, k_s * max(0.0, q[k][j] - hi) * (1 + d_s * v))
                          + max(0.0, k_s * max(0.0, lo - q[k][j]) * (1 - d_s * v)))
        Qk[leg["drive"]] += F[k]
        out.append(Qk)
    return out


def load_generated(name: str, root: Path | None, backend: str):
    return runtime.load(name, backend, generated=root if root is not None else GENERATED)


def case_mechanisms(request, name: str) -> tuple[Platform, dict, dict]:
    """(platform, numeric model, {backend: loaded mechanism}) of a bundled platform, or of the
    ``mixed_hexapod`` fixture's generated one, for a parametrised pytest fixture."""
    if name == "mixed_hexapod":
        pf, num, root = request.getfixturevalue("mixed_hexapod")
    else:
        root = None
        pf, num = bundled(name)
    return pf, num, {be: load_generated(name, root, be) for be in ("c", "python")}


def spec_table(name: str) -> dict:
    """A bundled spec's TOML tables."""
    import tomllib
    path = Path(__file__).resolve().parent.parent / "generator" / "mechanisms" / f"{name}.toml"
    return tomllib.loads(path.read_text())


PUS_JOINTS, PUS_BODIES = ("slide", "u1", "u2"), ("slider", "yoke", "rod")


def pus_numeric(spec: dict, pus_leg) -> dict:
    """The numeric description (docs/parallel_numeric_format.md) of a spec whose legs are PUS,
    read from its TOML tables with numpy, each leg's geometry by ``pus_leg`` (a reference's own,
    tests/reference/parallel_numpy.py or parallel_lagrange.py): nothing of the generator's.
    Parameters at their defaults; inertias given about the centre of mass (Ixx, Iyy, Izz, Ixy,
    Ixz, Iyz: the tensor's entries), moved to the body origin."""
    par = spec.get("parameters", {})
    val = lambda v: float(par[v] if isinstance(v, str) else v)
    seq = lambda v: [val(x) for x in (v if isinstance(v, list) else [v])]

    def inertia(v) -> np.ndarray:
        xx, yy, zz, xy, xz, yz = (val(x) for x in v)
        return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])

    def body(t: dict | None) -> dict:
        t = t or {}
        m, d = val(t.get("mass", 0.0)), np.array([val(x) for x in t.get("com", [0, 0, 0])])
        I_G = inertia(t.get("inertia", [0] * 6))
        return {"m": m, "d": d, "I": I_G + m * ((d @ d) * np.eye(3) - np.outer(d, d))}

    home = np.array(spec["platform"]["home"], float)
    legs = []
    for entry in spec["legs"]:
        t = {**spec.get("leg", {}), **entry}
        assert t["type"] == "PUS", t["type"]
        joints = t.get("joints", {})
        laws = [{"k": seq(joints.get(jn, {}).get("stiffness", [])),
                 "c": seq(joints.get(jn, {}).get("damping", [])),
                 "q0": val(joints.get(jn, {}).get("q0", 0.0)),
                 "preload": val(joints.get(jn, {}).get("preload", 0.0))} for jn in PUS_JOINTS]
        legs.append(pus_leg(t["base"], t["rail"], t["platform"], home, rod=t.get("rod"),
                            bodies=[body(t.get("bodies", {}).get(bn)) for bn in PUS_BODIES],
                            laws=laws, drive=PUS_JOINTS.index(t.get("drive", "slide")),
                            name=t["name"]))
    pt = spec["platform"]
    return {"name": spec["mechanism"]["name"],
            "gravity": np.array(spec["mechanism"].get("gravity", [0, 0, 0]), float),
            "home": home, "platform": {"m": val(pt["mass"]), "I": inertia(pt["inertia"])},
            "legs": legs}
