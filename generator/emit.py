"""SymPy printers (C99, Python) and strict Jinja rendering of the templates.

The printers turn one scalar expression into one line: small integer powers become products,
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

import hashlib
import json
import math
import re
import textwrap
from pathlib import Path

import jinja2
import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from mechgen.generator import __version__
from mechgen.generator.ir import Assign
from mechgen.generator.model import ModelError
from mechgen.generator.pipeline import Generated

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRINTABLE = frozenset(chr(c) for c in range(0x20, 0x7F)) - {"\\"}
_LABEL = re.compile(r"[^A-Za-z0-9._+<>@-]")
DOC_WIDTH = 92   # generated doc lines are wrapped to this many characters


# --- text from a spec -> safe generated text ----------------------------------------------

def plain_text(text: object) -> str:
    """One line of printable ASCII without backslash: any other character becomes '?'."""
    return "".join(ch if ch in _PRINTABLE else "?" for ch in str(text))


def c_comment(text: object) -> str:
    """Text that can sit inside a C ``/* ... */`` comment without ending it.

    ``*/`` and ``/*`` get a space between their characters; ``??`` (a trigraph could turn
    ``??/`` into a backslash) becomes ``? ?``.
    """
    s = plain_text(text).replace("*/", "* /").replace("/*", "/ *")
    return re.sub(r"\?(?=\?)", "? ", s)


def py_docstring(text: object) -> str:
    """Text that can sit inside a Python triple-quoted docstring: no backslash, no double
    quote (so no closing triple quote either)."""
    return plain_text(text).replace('"', "'")


def py_comment(text: object) -> str:
    """Text that can follow ``#`` in Python: one line (a newline would start code)."""
    return plain_text(text)


def spec_label(name: object) -> str:
    """A spec file name for the generated headers: letters, digits and ``._+<>@-`` only."""
    return _LABEL.sub("?", str(name))


TEXT_FILTERS = {"c_comment": c_comment, "py_doc": py_docstring, "py_comment": py_comment}


def doc_lines(text: object, width: int = DOC_WIDTH) -> list[str]:
    """Plain text wrapped into lines (the templates prefix and filter each line)."""
    return textwrap.wrap(plain_text(text), width, break_long_words=False,
                         break_on_hyphens=False) or [""]


def c_function_name(mech: str, kernel: str) -> str:
    """The exported C symbol of a kernel: namespaced, so no mechanism name can clash with a
    C library symbol (``sin``, ``printf``, ``stdlib``...)."""
    return f"mechgen_{mech}_{kernel}"


def header_guard(mech: str) -> str:
    return f"MECHGEN_{mech.upper()}_H"


# --- numbers ------------------------------------------------------------------------------

class NonFiniteConstant(ValueError):
    """A constant of a kernel is not a finite double (the printers never print inf or NaN)."""


def _double(x) -> str:
    """The nearest double, printed so that it reads back exactly; inf or NaN is refused."""
    try:
        v = float(x)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise NonFiniteConstant(_short(x))
    return repr(v)


def _short(x) -> str:
    """A number for an error message: 3 significant digits (1.00e+400), or its name (nan)."""
    try:
        return str(sp.Float(sp.sympify(x), 3))
    except (TypeError, ValueError):
        return str(x)[:40]


def _refuse(self, e) -> str:
    raise NonFiniteConstant(_short(e))


class _ScalarLines:
    """What both printers share: nearest-double constants, small powers as products."""

    sqrt_name = "sqrt"

    def _print_Rational(self, e):
        return _double(e)

    def _print_Float(self, e):
        return _double(e)

    def _print_Integer(self, e):
        if abs(int(e)) > 2 ** 53:     # not exact as a double anyway: print the nearest one
            text = _double(e)
            return text if e >= 0 else f"({text})"
        return f"{int(e)}.0" if e >= 0 else f"({int(e)}.0)"

    _print_NaN = _print_Infinity = _print_NegativeInfinity = _print_ComplexInfinity = _refuse

    def _print_Pow(self, e, rational=False):
        b, x = e.base, e.exp
        if x.is_Integer and 2 <= x <= 4:
            return "*".join([self.parenthesize(b, PRECEDENCE["Mul"])] * int(x))
        if x == -1:
            return f"1.0/{self.parenthesize(b, PRECEDENCE['Pow'])}"
        if x == sp.S.Half:
            return f"{self.sqrt_name}({self._print(b)})"
        return super()._print_Pow(e) if isinstance(self, C99CodePrinter) else \
            super()._print_Pow(e, rational)


class CPrinter(_ScalarLines, C99CodePrinter):
    sqrt_name = "sqrt"


class PyPrinter(_ScalarLines, PythonCodePrinter):
    sqrt_name = "math.sqrt"


_C = CPrinter({"strict": False})
_PY = PyPrinter({"standard": "python3", "strict": False})


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(TEXT_FILTERS)
    return env


def _identifier(name: object, where: str) -> str:
    """A name printed as code (C and Python identifier); anything else is refused."""
    text = str(name)
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
        if isinstance(st, Assign):
            target = _identifier(st.target, f"{where}: assignment")
            body.append({"assign": True, "target": target,
                         "expr": _code(printer, st.expr, f"{where}: {target}")})
        else:
            body.append({"assign": False, "status": st.status, "message": st.message,
                         "expr": _code(printer, st.expr, f"{where}: check ({st.message})")})
    return body


def _port(p, where: str) -> dict:
    """What every template shows of a port: name, size, shape, documentation lines."""
    return {"name": _identifier(p.name, f"{where}: port"), "size": p.size,
            "shape": list(p.shape), "doc_lines": doc_lines(p.doc)}


# identifiers the templates themselves use inside a kernel function
_TEMPLATE_NAMES = {"status": "the C kernel's status variable", "math": "Python's math module",
                   "NAN": "the NaN constant"}


def _check_distinct(k, where: str) -> None:
    """Ports, input elements and assigned names of one kernel are distinct identifiers (a
    clash would redeclare a C variable or overwrite a Python one); refused naming both."""
    seen = dict(_TEMPLATE_NAMES)

    def claim(name: str, what: str) -> None:
        if name in seen:
            raise ModelError(f"{where}: {what} and {seen[name]} are both named {name!r} in the "
                             f"generated code; rename one of them in the spec")
        seen[name] = what

    for p in (*k.inputs, *k.outputs):
        claim(p.name, f"the argument {p.name!r}")
    for p in k.inputs:
        for s in p.elements:
            claim(str(s), f"an element of input {p.name!r}")
    for st in k.body:
        if isinstance(st, Assign):
            claim(str(st.target), "an intermediate")


def _kernel_context(mech: str, g: Generated, printer, spec: str = "<spec>") -> dict:
    k = g.kernel
    where = f"{spec}: kernel {k.name}"
    _check_distinct(k, where)
    used: set = set()
    for st in k.body:
        used |= st.expr.free_symbols
    for p in k.outputs:
        for e in p.elements:
            used |= sp.sympify(e).free_symbols
    body = _body(k, printer, where)
    return {
        "name": _identifier(k.name, f"{where}: name"),
        "c_name": c_function_name(mech, k.name),
        "doc_lines": doc_lines(k.doc),
        "inputs": [{**_port(p, where),
                    "elements": [_identifier(s, f"{where}: input {p.name}") for s in p.elements],
                    "used": [{"name": str(s), "index": i} for i, s in enumerate(p.elements)
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


def render(mech: str, spec_name: str, spec_sha: str, generated: list[Generated],
           extra_manifest: dict) -> dict[str, str]:
    """File name -> text for one mechanism: <mech>.h, <mech>.c, <mech>.py, manifest.json.

    ``spec_name`` (a file name, any characters) appears only as :func:`spec_label`.
    """
    spec = spec_label(spec_name)
    _identifier(mech, f"{spec}: mechanism.name")
    env = _env()
    header = {"mechanism": mech, "spec": spec, "spec_sha256": spec_sha,
              "version": __version__}
    layout = {"guard": header_guard(mech), "layout": layout_lines(extra_manifest)}
    c_kernels = [_kernel_context(mech, g, _C, spec) for g in generated]
    py_kernels = [_kernel_context(mech, g, _PY, spec) for g in generated]
    files = {
        f"{mech}.h": env.get_template("c/kernel.h.j2").render(**header, **layout,
                                                              kernels=c_kernels),
        f"{mech}.c": env.get_template("c/kernel.c.j2").render(**header, **layout,
                                                              kernels=c_kernels),
        f"{mech}.py": env.get_template("python/kernel.py.j2").render(**header, **layout,
                                                                     kernels=py_kernels),
    }
    manifest = {
        **header,
        **extra_manifest,
        "kernels": [{
            "name": g.kernel.name, "c_function": c_function_name(mech, g.kernel.name),
            "doc": g.kernel.doc,
            "inputs": [_manifest_port(p) for p in g.kernel.inputs],
            "outputs": [_manifest_port(p) for p in g.kernel.outputs],
            "statuses": {str(k): v for k, v in g.kernel.statuses.items()},
            "ops": g.ops, "ops_dense": g.dense,
            "ops_by_pass": [{"pass": nm, **ops} for nm, ops in g.passes],
        } for g in generated],
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
    return files


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
