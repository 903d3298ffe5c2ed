"""SymPy printers (C99, Python) and strict Jinja rendering of the templates.

The printers turn one scalar expression into one line: small integer powers become products,
rationals and floats print as the nearest double (17 significant digits, so printing loses
nothing), symbols print as their flat names. Templates arrange finished lines only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jinja2
import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from generator import __version__
from generator.ir import Assign
from generator.pipeline import Generated

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def _double(x) -> str:
    return repr(float(x))


class _ScalarLines:
    """What both printers share: nearest-double constants, small powers as products."""

    sqrt_name = "sqrt"

    def _print_Rational(self, e):
        return _double(e)

    def _print_Float(self, e):
        return _double(e)

    def _print_Integer(self, e):
        return f"{int(e)}.0" if e >= 0 else f"({int(e)}.0)"

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
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def _kernel_context(mech: str, g: Generated, printer) -> dict:
    k = g.kernel
    used: set = set()
    for st in k.body:
        used |= st.expr.free_symbols
    for p in k.outputs:
        for e in p.elements:
            used |= sp.sympify(e).free_symbols
    body = []
    for st in k.body:
        if isinstance(st, Assign):
            body.append({"assign": True, "target": str(st.target), "expr": printer.doprint(st.expr)})
        else:
            body.append({"assign": False, "expr": printer.doprint(st.expr), "status": st.status,
                         "message": st.message})
    return {
        "name": k.name,
        "c_name": f"{mech}_{k.name}",
        "doc": k.doc,
        "inputs": [{"name": p.name, "size": p.size, "doc": p.doc,
                    "elements": [str(s) for s in p.elements],
                    "used": [{"name": str(s), "index": i} for i, s in enumerate(p.elements)
                             if s in used]} for p in k.inputs],
        "outputs": [{"name": p.name, "size": p.size, "shape": list(p.shape),
                     "elements": [printer.doprint(sp.sympify(e)) for e in p.elements]}
                    for p in k.outputs],
        "body": body,
        "has_checks": any(not b["assign"] for b in body),
        "statuses": k.statuses,
        "ops": g.ops,
        "ops_line": ", ".join(f"{v} {key}" for key, v in g.ops.items() if key != "total" and v)
                    + f" ({g.ops['total']} total)",
    }


def render(mech: str, spec_name: str, spec_sha: str, generated: list[Generated],
           extra_manifest: dict) -> dict[str, str]:
    """File name -> text for one mechanism: <mech>.h, <mech>.c, <mech>.py, manifest.json."""
    env = _env()
    header = {"mechanism": mech, "spec": spec_name, "spec_sha256": spec_sha,
              "version": __version__}
    c_kernels = [_kernel_context(mech, g, _C) for g in generated]
    py_kernels = [_kernel_context(mech, g, _PY) for g in generated]
    files = {
        f"{mech}.h": env.get_template("c/kernel.h.j2").render(**header, kernels=c_kernels),
        f"{mech}.c": env.get_template("c/kernel.c.j2").render(**header, kernels=c_kernels),
        f"{mech}.py": env.get_template("python/kernel.py.j2").render(**header, kernels=py_kernels),
    }
    manifest = {
        **header,
        **extra_manifest,
        "kernels": [{
            "name": g.kernel.name, "c_function": f"{mech}_{g.kernel.name}", "doc": g.kernel.doc,
            "inputs": [{"name": p.name, "shape": list(p.shape)} for p in g.kernel.inputs],
            "outputs": [{"name": p.name, "shape": list(p.shape)} for p in g.kernel.outputs],
            "statuses": {str(k): v for k, v in g.kernel.statuses.items()},
            "ops": g.ops, "ops_dense": g.dense,
            "ops_by_pass": [{"pass": nm, **ops} for nm, ops in g.passes],
        } for g in generated],
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
    return files


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
