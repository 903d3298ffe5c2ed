"""Spec -> generated files for one mechanism (the generator's whole path, in order)."""

from __future__ import annotations

from pathlib import Path

from generator.emit import render, sha256_text
from generator.kernels import BUILDERS
from generator.model import Chain
from generator.pipeline import Generated, optimise
from generator.spec import load

MECHANISMS = Path(__file__).resolve().parent / "mechanisms"
ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"


def bundled_specs() -> list[Path]:
    return sorted(MECHANISMS.glob("*.toml"))


def generate_chain(chain: Chain, cse: bool = True) -> list[Generated]:
    coded = chain.with_prefixed_parameters()
    return [optimise(build, coded, cse=cse) for build in BUILDERS]


def manifest_extra(chain: Chain) -> dict:
    return {
        "family": "serial_chain",
        "base": chain.base,
        "n": chain.n,
        "coordinates": chain.coordinates,
        "joint_types": [j.label for j in chain.joints],
        "parameters": [s.name for s in chain.parameters],
        "bodies": [name for name, _ in chain.named_bodies],
        "points": [pt.name for pt in chain.points],
    }


def files_for_spec(path: Path, cse: bool = True) -> tuple[Chain, list[Generated], dict[str, str]]:
    chain = load(path)
    gen = generate_chain(chain, cse=cse)
    files = render(chain.name, path.name, sha256_text(path.read_text()), gen, manifest_extra(chain))
    return chain, gen, files


def write_files(out_dir: Path, files: dict[str, str]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out_dir / name).write_text(text)
