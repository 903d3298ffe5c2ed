"""Spec -> generated files for one mechanism (the generator's whole path, in order)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from generator.emit import render, sha256_text
from generator.kernels import BUILDERS
from generator.model import Chain
from generator.pipeline import Generated, optimise
from generator.platform import Platform
from generator.platform_kernels import BUILDERS as PLATFORM_BUILDERS
from generator.spec import load

MECHANISMS = Path(__file__).resolve().parent / "mechanisms"
ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"


def bundled_specs() -> list[Path]:
    return sorted(MECHANISMS.glob("*.toml"))


def generate_chain(chain: Chain, cse: bool = True) -> list[Generated]:
    coded = chain.with_prefixed_parameters()
    return [optimise(build, coded, cse=cse) for build in BUILDERS]


def generate_platform(pf: Platform, cse: bool = True) -> list[Generated]:
    coded = pf.with_prefixed_parameters()
    return [optimise(build, coded, cse=cse) for build in PLATFORM_BUILDERS]


def manifest_platform(pf: Platform) -> dict:
    return {
        "family": "parallel",
        "n": sum(leg.n for leg in pf.legs),
        "coordinates": pf.coordinates,
        "legs": [{"name": leg.name, "type": leg.type, "n": leg.n, "m": leg.m,
                  "joints": [j.name for j in leg.chain.joints], "drive": leg.drive,
                  "l_ref": leg.l_ref} for leg in pf.legs],
        "parameters": [s.name for s in pf.parameters],
        "parameter_defaults": {s.name: pf.defaults[s.name] for s in pf.parameters},
        "gravity": list(pf.gravity),
        "home": list(pf.home),
        "bodies": [],
        "points": [],
    }


def manifest_extra(chain: Chain) -> dict:
    return {
        "family": "serial_chain",
        "base": chain.base,
        "n": chain.n,
        "coordinates": chain.coordinates,
        "joint_types": [j.label for j in chain.joints],
        "parent": list(chain.parent),
        "parameters": [s.name for s in chain.parameters],
        "bodies": [name for name, _ in chain.named_bodies],
        "points": [pt.name for pt in chain.points],
    }


def files_for_spec(path: Path, cse: bool = True):
    """(model, generated kernels, file name -> text) of one spec file."""
    model = load(path)
    if isinstance(model, Platform):
        gen = generate_platform(model, cse=cse)
        extra = manifest_platform(model)
    else:
        gen = generate_chain(model, cse=cse)
        extra = manifest_extra(model)
    files = render(model.name, path.name, sha256_text(_spec_inputs(path)), gen, extra)
    return model, gen, files


def _spec_inputs(path: Path) -> str:
    """The spec's text, and the URDF it names: what the kernels were generated from."""
    text = path.read_text()
    mech = tomllib.loads(text).get("mechanism", {})
    if isinstance(mech, dict) and isinstance(mech.get("urdf"), str):
        text += (path.parent / mech["urdf"]).read_text()
    return text


def write_files(out_dir: Path, files: dict[str, str]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out_dir / name).write_text(text)
