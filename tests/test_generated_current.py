"""generated/ is current and generation is deterministic (byte-identical kernels)."""

from __future__ import annotations

import difflib

import pytest

from mechgen.generator.build import GENERATED, MECHANISMS, bundled_specs, files_for_spec
from mechgen.generator.frontend import load


@pytest.fixture(scope="module", params=bundled_specs(), ids=lambda p: p.stem)
def regenerated(request):
    chain, _, files = files_for_spec(request.param)
    return chain, files


def first_difference(old: str, new: str, name: str, lines: int = 12) -> str:
    """A short unified diff of the first differing lines of a file."""
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), f"committed/{name}",
                                f"fresh/{name}", n=1, lineterm="")
    out = []
    for line in diff:
        out.append(line[:160])
        if len(out) >= lines:
            out.append("...")
            break
    return "\n".join(out)


def test_committed_kernels_equal_a_fresh_generation(regenerated):
    chain, files = regenerated
    folder = GENERATED / chain.name
    stale = [name for name, text in files.items()
             if not (folder / name).exists() or (folder / name).read_text() != text]
    if stale:
        name = stale[0]
        old = (folder / name).read_text() if (folder / name).exists() else ""
        pytest.fail(f"generated/{chain.name}/ is stale ({', '.join(stale)}).\n"
                    f"{first_difference(old, files[name], name)}\n"
                    f"Update it with `make generate` (or `.venv/bin/python -m mechgen generate`) "
                    f"and commit generated/.", pytrace=False)
    extra = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    assert sorted(files) == extra, f"unexpected files in generated/{chain.name}/: {extra}"


@pytest.mark.parametrize("name", ["ur5_arm", "gough_stewart_docking"])
def test_generation_is_deterministic(name):
    """Two generations of the same spec in one process give byte-identical files (the
    committed files, checked above, were made by another process)."""
    spec = MECHANISMS / f"{name}.toml"
    assert files_for_spec(spec)[2] == files_for_spec(spec)[2]


def test_every_bundled_mechanism_is_generated():
    names = {load(p).name for p in bundled_specs()}
    on_disk = {p.name for p in GENERATED.iterdir() if p.is_dir()}
    assert names == on_disk
