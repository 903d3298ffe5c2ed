"""generated/ is current and generation is deterministic (byte-identical kernels)."""

from __future__ import annotations

import pytest

from generator.build import GENERATED, MECHANISMS, bundled_specs, files_for_spec
from generator.spec import load


@pytest.fixture(scope="module", params=bundled_specs(), ids=lambda p: p.stem)
def regenerated(request):
    chain, _, files = files_for_spec(request.param)
    return chain, files


def test_committed_kernels_equal_a_fresh_generation(regenerated):
    chain, files = regenerated
    folder = GENERATED / chain.name
    stale = [name for name, text in files.items()
             if not (folder / name).exists() or (folder / name).read_text() != text]
    assert not stale, (f"generated/{chain.name}/ is stale ({', '.join(stale)}): run `make generate` "
                       f"and commit the result")
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
