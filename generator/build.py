"""Spec -> generated files for one mechanism (the generator's whole path, in order)."""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path
from typing import Any, Callable

from mechgen.generator import __version__
from mechgen.generator.emit import kernel_texts, render, sha256_text, spec_label
from mechgen.generator.families import FAMILIES, family_of
from mechgen.generator.frontend import load
from mechgen.generator.jobs import map_graph
from mechgen.generator.pipeline import Generated, fewest_operations, finish, optimise
from mechgen.generator.families.serial.spec import ChainBuilder

MECHANISMS = Path(__file__).resolve().parent / "mechanisms"
ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"          # the bundled kernels (package data when installed)

Progress = Callable[[str], None] | None


def bundled_specs() -> list[Path]:
    """The spec files in generator/mechanisms (not hidden ones: an editor's or a tool's)."""
    return sorted(p for p in MECHANISMS.glob("*.toml") if not p.name.startswith("."))


def generate_kernels(model: Any, cse: bool = True, progress: Progress = None,
                     jobs: int | None = None) -> list[Generated]:
    """Every kernel of the model's family, optimised (one line of progress per kernel), in up
    to ``jobs`` worker processes (generator/jobs.py; default: one per core).

    A kernel with alternative forms (``candidates``, pipeline.choice) is one work item per
    candidate, so that its forms are built side by side; the one with the fewest operations
    then goes through the final passes, in one more item, taken up as soon as the forms are
    built (the same kernel as ``optimise(builder)`` gives). A family whose forms share most
    of their build (``forms_apart`` False: a platform's reductions in C's frame and in frame
    0, over the same legs) builds them in one item instead. The workers take the last kernels
    first: every family lists its kernels from the simplest to those that compose the others
    (forward dynamics, the derivatives, a platform's step), which take the longest to build."""
    return [g for g, _ in _generate(model, cse, progress, jobs)]


def _generate(model: Any, cse: bool = True, progress: Progress = None, jobs: int | None = None,
              then: Callable[[Generated], Any] | None = None) -> list[tuple[Generated, Any]]:
    """(kernel, ``then(kernel)``) of :func:`generate_kernels`, ``then`` (the kernel's printed
    text: :func:`files_for_model`) computed in the worker that finishes the kernel, while
    the others build theirs (None without ``then``)."""
    family = family_of(model)
    coded = family.coded(model)
    builders = family.builders_for(model)
    candidates = [getattr(b, "candidates", None) if family.forms_apart else None
                  for b in builders]        # (None: the forms in one item, optimise's loop)
    items = [(i, c) for i, cs in enumerate(candidates) for c in (cs or [None])]
    chosen = [i for i, cs in enumerate(candidates) if cs]   # one more item: the final passes
    after = {len(items) + m: [j for j, (i, _) in enumerate(items) if i == k]
             for m, k in enumerate(chosen)}
    then_ = then or (lambda g: None)

    def build(j: int, forms: tuple) -> tuple[Generated, Any]:
        if j >= len(items):         # the cheapest of a kernel's built forms, finished
            g = finish(fewest_operations((g for g, _ in forms),
                                         lanes=getattr(builders[chosen[j - len(items)]],
                                                       "lanes", False)))
            return g, then_(g)
        i, candidate = items[j]
        if candidate is None:
            g = optimise(builders[i], coded, cse=cse)
            return g, then_(g)
        return optimise(candidate, coded, cse=cse, final=False), None

    n = len(items) + len(chosen)
    done = list(map_graph(build, n, after, jobs, start=range(n - 1, -1, -1)))
    out = [None] * len(builders)
    for (i, candidate), r in zip(items, done):
        if candidate is None:
            out[i] = r
    for i, r in zip(chosen, done[len(items):]):
        out[i] = r
    for k, (g, _) in enumerate(out):
        if progress:
            progress(f"  {model.name}: kernel {k + 1}/{len(builders)} {g.kernel.name} "
                     f"({g.ops['total']} ops, {g.seconds:.1f} s)")
    return out


def manifest_fields(model: Any) -> dict:
    """The manifest entries of the model's family ("family" first)."""
    family = family_of(model)
    return {"family": family.name, **family.manifest(model)}


def files_for_model(model: Any, spec_name: str, spec_text: str, cse: bool = True,
                    progress: Progress = None, jobs: int | None = None):
    """(generated kernels, file name -> text) of one built model, of any family; ``jobs``
    worker processes (generator/jobs.py; default: one per core)."""
    spec = spec_label(spec_name)
    done = _generate(model, cse, progress, jobs, then=lambda g: kernel_texts(model.name, g, spec))
    gen = [g for g, _ in done]
    return gen, render(model.name, spec_name, sha256_text(spec_text), gen, manifest_fields(model),
                       jobs=jobs, texts=[t for _, t in done])


def files_for_spec(path: Path, cse: bool = True, progress: Progress = None,
                   jobs: int | None = None):
    """(model, generated kernels, file name -> text) of one spec file."""
    model = load(path)
    gen, files = files_for_model(model, Path(path).name, spec_inputs(path), cse, progress, jobs)
    return model, gen, files


def spec_inputs(path: Path) -> str:
    """The spec's text, and the URDF it names: what the kernels were generated from."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    mech = tomllib.loads(text).get("mechanism", {})
    if isinstance(mech, dict) and isinstance(mech.get("urdf"), str):
        text += (path.parent / mech["urdf"]).read_text(encoding="utf-8")
    return text


def spec_sha(path: Path) -> str:
    return sha256_text(spec_inputs(path))


def is_current(path: Path, out_dir: Path) -> bool:
    """out_dir/<name>/ was generated from this very spec text by this mechgen version."""
    import json
    try:
        model_name = tomllib.loads(Path(path).read_text(encoding="utf-8"))["mechanism"]["name"]
        m = json.loads((Path(out_dir) / model_name / "manifest.json").read_text())
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return m.get("spec_sha256") == spec_sha(path) and m.get("version") == __version__


def write_files(out_dir: Path, files: dict[str, str]) -> list[str]:
    """Write the files that differ (an unchanged file keeps its bytes and time); return those."""
    out_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in files.items():
        f = out_dir / name
        if f.exists() and f.read_text(encoding="utf-8") == text:
            continue
        tmp = f.with_name(f".{name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(f)
        changed.append(name)
    return changed


def _model_of(source: Any) -> tuple[Any, str, str]:
    """(model, spec name, spec text) of anything :func:`generate` accepts."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        return load(path), path.name, spec_inputs(path)
    if isinstance(source, ChainBuilder):
        source = source.build()
    if isinstance(source, dict):
        from mechgen.generator.families.parallel.spec import platform_from_dict
        import json
        text = json.dumps(source, sort_keys=True, default=str)
        return platform_from_dict(source, "<dict>"), "<dict>", text
    if any(isinstance(source, f.model_type) for f in FAMILIES):
        return source, getattr(source, "source", "<python>"), repr(source)
    raise TypeError(f"generate: expected a spec path, a ChainBuilder, a Chain, a Platform or a "
                    f"parallel spec dict, got {type(source).__name__}")


def generate(source: Any, out: Path, cse: bool = True, progress: bool = False) -> Path:
    """Generate one mechanism into ``out/<name>/``; return that folder (see mechgen.generate)."""
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None
    t0 = time.perf_counter()
    model, spec_name, text = _model_of(source)
    gen, files = files_for_model(model, spec_name, text, cse, say)
    folder = Path(out) / model.name
    write_files(folder, files)
    if say:
        say(f"{spec_name} -> {folder}/ ({len(gen)} kernels, {time.perf_counter() - t0:.1f} s)")
    return folder
