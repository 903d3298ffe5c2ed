"""The languages mechgen generates, one module each, and their registry :data:`BACKENDS`.

:func:`mechgen.generator.emit.render` renders every registered backend, in this order, and
lists them in the manifest's ``backends`` entry (``{name: {"loader": ..., "files": {role:
file}}}``), from which the runtime picks what it can load. A new language is a module here
(its printer, reserved words, filters, templates and file names: see :mod:`.base`), its
templates under the top-level ``templates/<name>/``, and, unless it can reuse one, a loader
in :mod:`mechgen.runtime.backends`.
"""

from __future__ import annotations

from mechgen.generator.backends import c, python
from mechgen.generator.backends.base import Backend, NonFiniteConstant

BACKENDS: dict[str, Backend] = {b.name: b for b in (c.BACKEND, python.BACKEND)}

MANIFEST = "manifest.json"


def _check_registry() -> None:
    """Backends write distinct files (and never the manifest) and define distinct filters."""
    files: dict[str, str] = {MANIFEST: "the manifest"}
    filters: dict[str, str] = {}
    for b in BACKENDS.values():
        for name in b.file_patterns.values():
            clash = files.setdefault(name, b.name)
            if clash != b.name:
                raise RuntimeError(f"backends {clash!r} and {b.name!r} both write {name!r}")
        if not set(b.templates) == set(b.kernel_templates) == set(b.file_patterns):
            raise RuntimeError(f"backend {b.name!r}: templates and file names name other roles")
        for f in b.filters:
            clash = filters.setdefault(f, b.name)
            if clash != b.name:
                raise RuntimeError(f"backends {clash!r} and {b.name!r} both define filter {f!r}")


_check_registry()


def reserved_words() -> frozenset[str]:
    """Every backend's reserved words: a spec name reaches all the generated languages."""
    return frozenset().union(*(b.reserved for b in BACKENDS.values()))


def text_filters() -> dict:
    """Every backend's Jinja filters (all templates share one environment)."""
    return {name: f for b in BACKENDS.values() for name, f in b.filters.items()}


__all__ = ["BACKENDS", "Backend", "NonFiniteConstant", "reserved_words", "text_filters"]
