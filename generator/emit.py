"""Strict Jinja rendering of the templates of every backend (mechgen.generator.backends).

Each backend (C99, Python) owns its SymPy printer, reserved words, filters, templates and file
names; :func:`render` loops over the registry :data:`BACKENDS`. The printers turn one scalar expression into one line: small integer powers become products,
rationals and floats print as the nearest double (17 significant digits, so printing loses
nothing), symbols print as their flat names; a constant that is not a finite double (an
overflow such as m d^2 = 1e400, NaN, an infinity) is refused with a :class:`ModelError`.
Templates arrange finished lines only.

Text that may come from a spec (its file name, names, documentation, status messages) reaches
the generated files only through the filters of :data:`TEXT_FILTERS`: printable ASCII on one
line, no backslash; C comments cannot contain ``*/``, ``/*`` or trigraphs; Python docstrings
cannot contain a double quote. Every exported C symbol is namespaced ``mechgen_<mech>_...``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import textwrap
from pathlib import Path
from typing import Callable

import jinja2
import sympy as sp

from mechgen.generator import __version__
from mechgen.generator.backends import BACKENDS, MANIFEST, Backend, text_filters
from mechgen.generator.backends.base import NonFiniteConstant, plain_text
# re-exported: the printers, text filters and C names now live with their backend
from mechgen.generator.backends.c import (CPrinter, c_comment, c_function_name,  # noqa: F401
                                          header_guard, streamed_outputs)
from mechgen.generator.backends.python import PyPrinter, py_comment, py_docstring  # noqa: F401
from mechgen.generator.ir import Assign, ColumnLoop, reads, symbol
from mechgen.generator.jobs import map_items
from mechgen.generator.model import ModelError
from mechgen.generator.pipeline import Generated
from mechgen.generator.passes.loops import column_names, names_taken
from mechgen.generator.passes.sincos import gather_sincos, pair_sincos
from mechgen.generator.passes.stores import place_stores
from mechgen.generator.simd import MAX_WIDTH, TOKEN, free_prefix, simd_plan

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LABEL = re.compile(r"[^A-Za-z0-9._+<>@-]")
DOC_WIDTH = 92   # generated doc lines are wrapped to this many characters


# --- text from a spec -> safe generated text ----------------------------------------------
# plain_text (shared), c_comment (C backend), py_docstring and py_comment (Python backend) are
# re-exported above from mechgen.generator.backends.

def spec_label(name: object) -> str:
    """A spec file name for the generated headers: letters, digits and ``._+<>@-`` only."""
    return _LABEL.sub("?", str(name))


TEXT_FILTERS = text_filters()       # every backend's: c_comment, py_doc, py_comment


def doc_lines(text: object, width: int = DOC_WIDTH) -> list[str]:
    """Plain text wrapped into lines (the templates prefix and filter each line)."""
    return textwrap.wrap(plain_text(text), width, break_long_words=False,
                         break_on_hyphens=False) or [""]


@functools.cache
def _env() -> jinja2.Environment:
    """The one environment of every template (made once per process, templates compiled
    once)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(TEXT_FILTERS)
    return env


def _text(name: object) -> str:
    """``str(name)``; a plain Symbol's name directly (``str`` runs SymPy's printer, 10 % of the
    printing time of a mechanism)."""
    return name.name if type(name) is sp.Symbol else str(name)


def _identifier(name: object, where: str) -> str:
    """A name printed as code (C and Python identifier); anything else is refused."""
    text = _text(name)
    if not _IDENTIFIER.match(text):
        raise ModelError(f"{where}: {text!r} is not an identifier")
    return text


def _code(printer, expr, where: str) -> str:
    """One printed expression; a non-finite constant is refused naming ``where``."""
    try:
        return printer.doprint(sp.sympify(expr))
    except NonFiniteConstant as e:
        raise ModelError(f"{where}: the constant {e} is not a finite double (it overflows or "
                         f"is undefined); use smaller numbers in the spec (or other units)"
                         ) from None


def _body(k, printer, where: str) -> list[dict]:
    body = []
    for st in k.body:
        if isinstance(st, ColumnLoop):
            body.append({"assign": True, "target": None, "expr": None,
                         "loop": _loop(st, printer, where)})
        elif isinstance(st, Assign):
            target = _identifier(st.target, f"{where}: assignment")
            body.append({"assign": True, "target": target, "loop": None,
                         "expr": _code(printer, st.expr, f"{where}: {target}")})
        else:
            body.append({"assign": False, "status": st.status, "message": st.message,
                         "loop": None,
                         "expr": _code(printer, st.expr, f"{where}: check ({st.message})")})
    return body


LOOP_LANES = 4
"""A column loop's arrays are padded with zero columns to a multiple of this, and the loop runs
to ``MG_PADDED(count)``: the columns rounded up to the target's doubles per vector (4 with AVX,
2 otherwise; templates/c/sincos.c.j2), so GCC's -O2 vectoriser (the "very cheap" cost model,
which takes no loop needing a scalar epilogue) vectorises it on either target without
computing more padding than its vectors need. solo12's forward-dynamics derivatives (-O3,
single state in a compiled loop): padded to 4 columns and run to 4, 2789 ns with -mavx2
against 3056 ns run to 2; 3992 ns against 3758 ns on SSE2 (hence the bound per target)."""


def _loop(loop: ColumnLoop, printer, where: str) -> dict:
    """A column loop for the templates: ``slots`` and ``results`` (names), ``columns`` (the
    printed values of the slots, one list per column), ``targets`` (one list per column),
    ``body`` (assignments), ``size`` (columns padded to :data:`LOOP_LANES`), ``count`` (the
    columns). For C, the slots split in two: ``constant_rows`` (a slot that is a number in
    every column: one row of the values, a ``static const`` array written once at load time)
    and ``variable_slots`` / ``variable_columns`` (the rest, stored at every call), both padded
    with zero columns to ``size``; ``forwarded`` (filled in by :func:`_forward_results`): the
    slots read from an earlier loop's results. The template names its arrays with ``prefix``
    (filled in by :func:`_loop_prefixes`)."""
    name = lambda s, what: _identifier(s, f"{where}: column loop {what}")
    slots = [name(s, "slot") for s in loop.slots]
    columns = [[_code(printer, e, f"{where}: column loop value") for e in col]
               for col in loop.columns]
    size = -(-len(loop.columns) // LOOP_LANES) * LOOP_LANES
    constant = [all(sp.sympify(col[i]).is_Number for col in loop.columns)
                for i in range(len(slots))]
    padded = columns + [["0.0"] * len(slots)] * (size - len(columns))   # zero columns
    return {"slots": slots,
            "results": [name(s, "result") for s in loop.results],
            "columns": columns,
            "constant_rows": [{"slot": s, "values": [col[i] for col in padded]}
                              for i, s in enumerate(slots) if constant[i]],
            "variable_slots": [s for i, s in enumerate(slots) if not constant[i]],
            "variable_columns": [[v for i, v in enumerate(col) if not constant[i]]
                                 for col in padded],
            "targets": [[name(t, "target") for t in col] for col in loop.targets],
            "body": [{"target": name(st.target, "assignment"),
                      "expr": _code(printer, st.expr, f"{where}: {st.target}")}
                     for st in loop.body],
            "size": size, "count": len(loop.columns), "prefix": None, "forwarded": []}


def _loop_prefixes(body: list[dict], taken: set[str]) -> None:
    """Give each column loop a prefix for its arrays and index (``cl<i>_``, with underscores
    added until no name of the kernel starts with it)."""
    names = set(taken)
    for st in body:
        names |= {st["target"]} if st.get("target") else set()
        if st.get("loop"):
            lp = st["loop"]
            names |= {*lp["slots"], *(b["target"] for b in lp["body"]),
                      *(t for col in lp["targets"] for t in col)}
    for i, st in enumerate(b for b in body if b.get("loop")):
        st["loop"]["prefix"] = free_prefix(names, f"cl{i}_")


def _forward_results(body: list[dict]) -> None:
    """A column loop's slot whose values, column by column, are the results of an earlier
    loop (a leg's value computed in a platform's first loop and read again after the
    reduction) reads that loop's ``out`` array directly (``forwarded``: the slot and the
    array row), instead of a copy into the kernel's scalars and from them into its own
    ``in`` array. The copies into scalars stay where anything else reads them
    (:func:`_loop_copies`). The padding columns then hold what the earlier loop computed from its
    zero columns, not zeros; nothing reads them."""
    made: dict[tuple, str] = {}         # (the targets column by column, size) -> array row
    for st in body:
        L = st.get("loop")
        if not L:
            continue
        keep, forwarded = [], []
        for i, s in enumerate(L["variable_slots"]):
            values = tuple(col[i] for col in L["variable_columns"][:L["count"]])
            source = made.get((values, L["size"]))
            if source:
                forwarded.append({"slot": s, "source": source})
            else:
                keep.append(i)
        L["variable_slots"] = [L["variable_slots"][i] for i in keep]
        L["variable_columns"] = [[col[i] for i in keep] for col in L["variable_columns"]]
        L["forwarded"] = forwarded
        for r in range(len(L["results"])):
            made[(tuple(col[r] for col in L["targets"]), L["size"])] = f"{L['prefix']}out[{r}]"


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _loop_copies(body: list[dict], outputs: list[dict]) -> None:
    """Each column loop's ``copies``: its targets that the printed kernel still reads, as
    (target, result row, column). A target read only by a later loop, which reads the loop's
    ``out`` array in place (:func:`_forward_results`), or by nothing (another column's target of
    the same result is read), gets no copy into a scalar: the kernel's text holds no dead
    statement (hexapod_rsu's file had 2,208 such copies, left to the compiler to drop)."""
    texts = [o for p in outputs for o in p["elements"]]
    for st in body:
        L = st.get("loop")
        if L:
            texts += [v for col in L["variable_columns"] for v in col]
            texts += [b["expr"] for b in L["body"]]
        else:
            texts.append(st["expr"])
    read = set(IDENTIFIER.findall(" ".join(texts)))
    for st in body:
        if L := st.get("loop"):
            L["copies"] = [{"target": t, "row": r, "column": c}
                           for c, col in enumerate(L["targets"])
                           for r, t in enumerate(col) if t in read]


def _port(p, where: str) -> dict:
    """What every template shows of a port: name, size, shape, documentation lines."""
    return {"name": _identifier(p.name, f"{where}: port"), "size": p.size,
            "shape": list(p.shape), "doc_lines": doc_lines(p.doc)}


def _check_distinct(k, backend: Backend, where: str) -> None:
    """Ports, input elements and assigned names of one kernel are distinct identifiers, and
    none is an identifier the backend's templates use inside a kernel (a clash would
    redeclare a C variable or overwrite a Python one); refused naming both."""
    seen = dict(backend.template_names)

    def claim(name: str, what: str) -> None:
        if name in seen:
            raise ModelError(f"{where}: {what} and {seen[name]} are both named {name!r} in the "
                             f"generated code; rename one of them in the spec")
        seen[name] = what

    for p in (*k.inputs, *k.outputs):
        claim(p.name, f"the argument {p.name!r}")
    for p in k.inputs:
        for s in p.elements:
            claim(_text(s), f"an element of input {p.name!r}")
    for st in k.body:
        if isinstance(st, Assign):
            claim(_text(st.target), "an intermediate")
        elif isinstance(st, ColumnLoop):
            for s in (*st.locals, *st.assigned):
                claim(_text(s), "an intermediate of a column loop")


def _kernel_context(mech: str, g: Generated, backend: Backend, spec: str = "<spec>") -> dict:
    k = g.kernel
    where = f"{spec}: kernel {k.name}"
    printer = backend.fast_printer       # SymPy's printer's text, printed directly
    _check_distinct(k, backend, where)
    used: set = set()
    for st in k.body:
        used |= reads(st)
    for p in k.outputs:
        for e in p.elements:
            used |= sp.sympify(e).free_symbols
    body = _body(k, printer, where)
    _loop_prefixes(body, {*backend.template_names, *(p.name for p in (*k.inputs, *k.outputs)),
                          *(_text(s) for p in k.inputs for s in p.elements)})
    _forward_results(body)
    context = {
        "name": _identifier(k.name, f"{where}: name"),
        **backend.kernel_fields(mech, k.name),
        "doc_lines": doc_lines(k.doc),
        "inputs": [{**_port(p, where),
                    "elements": [_identifier(s, f"{where}: input {p.name}") for s in p.elements],
                    "used": [{"name": _text(s), "index": i} for i, s in enumerate(p.elements)
                             if s in used]} for p in k.inputs],
        "outputs": [{**_port(p, where),
                     "elements": [_code(printer, e, f"{where}: output {p.name}[{i}]")
                                  for i, e in enumerate(p.elements)]}
                    for p in k.outputs],
        "body": body,
        "has_checks": any(not b["assign"] for b in body),
        "statuses": k.statuses,
        "ops": g.ops,
        "ops_line": ", ".join(f"{v} {key}" for key, v in g.ops.items() if key != "total" and v)
                    + f" ({g.ops['total']} total)",
    }
    _loop_copies(body, context["outputs"])
    if backend.name == "c":     # sin and cos of one argument by one mg_sincos; the _batch
        context["body"] = pair_sincos(body)     # twin's blocks of states (kernel.c.j2)
        context["simd"] = simd_plan(_batch_context(k, context, printer, where))
        taken = {"status", *(p["name"] for p in context["inputs"] + context["outputs"]),
                 *(e for p in context["inputs"] for e in p["elements"])}
        context["body"] = gather_sincos(context["body"], taken)    # one loop of sines, cosines
        context["body"], context["stores_last"] = place_stores(context["body"],
                                                               context["outputs"])
        context["streamed"] = streamed_outputs(context["outputs"])
        context["stream_size"] = sum(p["size"] for p in context["streamed"])
    return context


def _batch_context(k, context: dict, printer, where: str) -> dict:
    """The context the _batch twin's SIMD blocks are planned from: the kernel's own, or, when
    its loops ask for it (a platform's loops over its legs, ``ColumnLoop.batch_unrolled``),
    that of its unrolled form (passes/loops.py: the same operations, bit for bit)."""
    loops = [st for st in k.body if isinstance(st, ColumnLoop)]
    if not loops or not all(st.batch_unrolled for st in loops):
        return context
    body = unrolled_body(_body(k, printer, where), loops, names_taken(k),
                         lambda e: _code(printer, e, f"{where}: column loop"))
    outputs = {_text(s) for p in k.outputs for e in p.elements for s in sp.sympify(e).free_symbols}
    return {**context, "body": pair_sincos(_live(body, outputs))}


def _live(body: list[dict], outputs: set[str]) -> list[dict]:
    """A printed body without the assignments nothing reads (``outputs``: the names the
    outputs read): an unrolled loop's column computes every body statement, also those whose
    results only other columns' targets need (a platform's leg whose copy of a result no one
    reads)."""
    needed = set(outputs)
    kept = []
    for st in reversed(body):
        if st["assign"] and st["target"] not in needed:
            continue
        kept.append(st)
        needed |= set(IDENTIFIER.findall(st["expr"]))
    return kept[::-1]


def unrolled_body(body: list[dict], loops: list[ColumnLoop], taken: set[str],
                  code: Callable[[sp.Expr], str]) -> list[dict]:
    """A printed body (:func:`_body`) with every column loop (``loops``, in order) written
    out, column after column, as passes/loops.unroll_loops writes the IR: each slot, then the
    body with every local name ``t`` renamed ``t_c<column>`` (underscores added until the name
    is free; ``taken`` gains them), then the loop's targets. A body statement is renamed as
    text, unless the new names sort otherwise than the old ones (``L_a``, ``L_a1``: the
    printer orders operands by name), then printed again (``code``) from the renamed IR: the
    same text as printing the unrolled IR, without printing every statement again."""
    out = []
    loop_ir = iter(loops)
    for st in body:
        lp = st.get("loop")
        if not lp:
            out.append(st)
            continue
        ir = next(loop_ir)
        local = [*lp["slots"], *(b["target"] for b in lp["body"])]
        for c, (values, targets) in enumerate(zip(lp["columns"], lp["targets"])):
            rename = column_names(local, c, taken)
            swap = lambda m: rename.get(m.group(), m.group())
            out += [{"assign": True, "target": rename[s], "expr": v, "loop": None}
                    for s, v in zip(lp["slots"], values)]
            out += [{"assign": True, "target": rename[b["target"]], "loop": None,
                     "expr": _renamed(b["expr"], a.expr, rename, swap, code)}
                    for b, a in zip(lp["body"], ir.body)]
            out += [{"assign": True, "target": t, "expr": rename[r], "loop": None}
                    for t, r in zip(targets, lp["results"])]
    return out


def _renamed(text: str, expr: sp.Expr, rename: dict[str, str], swap, code) -> str:
    """One printed body statement with its local names renamed (:func:`unrolled_body`)."""
    names = sorted(s.name for s in expr.free_symbols)
    if names == sorted(names, key=lambda n: rename.get(n, n)):
        return TOKEN.sub(swap, text)     # (a number is matched whole, left as it is)
    return code(expr.xreplace({symbol(n): symbol(rename[n]) for n in names if n in rename}))


def layout_lines(extra_manifest: dict) -> list[str]:
    """The order of the rows of stacked outputs (coordinates, bodies, points, legs), as
    wrapped plain lines for the headers of the generated files."""
    paragraphs = []
    names = lambda key: ", ".join(map(str, extra_manifest.get(key) or []))
    if extra_manifest.get("coordinates"):
        paragraphs.append(f"Coordinates, in the order of q: {names('coordinates')}.")
    if extra_manifest.get("bodies"):
        paragraphs.append("Bodies, in the order of the rows of the stacked outputs (r, tau, T, "
                          f"R, v, omega, w, eps): {names('bodies')}.")
    if extra_manifest.get("points"):
        paragraphs.append(f"Points, in the rows after the bodies (r, tau, T, R): "
                          f"{names('points')}.")
    legs = extra_manifest.get("legs") or []
    if legs:
        paragraphs.append("Legs, in the order of the rows of per-leg outputs: " + "; ".join(
            f"{leg['name']} ({leg['type']}: {', '.join(leg['joints'])})" for leg in legs) + ".")
    return [line for text in paragraphs for line in doc_lines(text)]


def _manifest_port(p) -> dict:
    return {"name": p.name, "shape": list(p.shape), "doc": p.doc}


def kernel_texts(mech: str, g: Generated, spec: str = "<spec>") -> list[dict[str, str]]:
    """One kernel's part of every file, per backend (in the order of BACKENDS): role -> the
    backend's kernel template (``kernel_templates``) rendered with the kernel's context."""
    env = _env()
    out = []
    for backend in BACKENDS.values():
        context = _kernel_context(mech, g, backend, spec)
        out.append({role: env.get_template(template).render(k=context)
                    for role, template in backend.kernel_templates.items()})
    return out


def render(mech: str, spec_name: str, spec_sha: str, generated: list[Generated],
           extra_manifest: dict, jobs: int | None = None,
           texts: list[list[dict[str, str]]] | None = None) -> dict[str, str]:
    """File name -> text for one mechanism: every backend's files (<mech>.h, <mech>.c,
    <mech>.py), then manifest.json, which lists the backends and their files. Each kernel's
    part of the files is made in up to ``jobs`` worker processes (generator/jobs.py; default:
    one per core), unless given: ``texts`` (per kernel, :func:`kernel_texts` with this spec's
    label); the files' templates join the parts.

    ``spec_name`` (a file name, any characters) appears only as :func:`spec_label`.
    """
    spec = spec_label(spec_name)
    _identifier(mech, f"{spec}: mechanism.name")
    env = _env()
    header = {"mechanism": mech, "spec": spec, "spec_sha256": spec_sha,
              "version": __version__}
    layout = layout_lines(extra_manifest)
    files = {}
    backends = list(BACKENDS.values())
    if texts is None:
        largest_first = sorted(range(len(generated)), key=lambda i: -generated[i].ops["total"])
        texts = list(map_items(lambda i: kernel_texts(mech, generated[i], spec),
                               len(generated), jobs, start=largest_first))
    for j, backend in enumerate(backends):
        names = backend.file_names(mech)
        context = {**header, **backend.context(mech), "layout": layout, "files": names,
                   "simd_max_width": MAX_WIDTH}
        for role, template in backend.templates.items():
            kernels = [{"name": g.kernel.name, "text": t[j][role]}
                       for g, t in zip(generated, texts)]
            files[names[role]] = env.get_template(template).render(**context, kernels=kernels)
    manifest = {
        **header,
        **extra_manifest,
        "kernels": [{
            "name": g.kernel.name,
            **{key: value for b in BACKENDS.values()
               for key, value in b.manifest_kernel(mech, g.kernel.name).items()},
            "doc": g.kernel.doc,
            "inputs": [_manifest_port(p) for p in g.kernel.inputs],
            "outputs": [_manifest_port(p) for p in g.kernel.outputs],
            "statuses": {str(k): v for k, v in g.kernel.statuses.items()},
            "ops": g.ops, "ops_dense": g.dense,
            "ops_by_pass": [{"pass": nm, **ops} for nm, ops in g.passes],
        } for g in generated],
        "backends": {b.name: b.manifest(mech) for b in BACKENDS.values()},
    }
    files[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
    return files


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
