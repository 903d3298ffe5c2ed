"""generated/ is current and generation is deterministic (byte-identical kernels)."""

from __future__ import annotations

import pytest

from generator.build import GENERATED, bundled_specs, files_for_spec


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


def test_generation_is_deterministic(regenerated):
    chain, files = regenerated
    spec = next(p for p in bundled_specs() if files_for_spec(p)[0].name == chain.name)
    _, _, again = files_for_spec(spec)
    assert again == files


def test_every_bundled_mechanism_is_generated():
    names = {files_for_spec(p)[0].name for p in bundled_specs()}
    on_disk = {p.name for p in GENERATED.iterdir() if p.is_dir()}
    assert names == on_disk
