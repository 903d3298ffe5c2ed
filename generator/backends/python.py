"""The Python backend: ``<mech>.py``, importable without SymPy; the runtime imports it and
calls the functions of its ``KERNELS`` dict."""

from __future__ import annotations

import keyword

from sympy.printing.pycode import PythonCodePrinter

from mechgen.generator.backends.base import Backend, ScalarLines, plain_text

KEYWORDS = frozenset(keyword.kwlist)
# the module the printed code calls (math.sqrt) and the builtins it calls (the printed Max,
# Min, Abs)
GENERATED_NAMES = frozenset({"math", "max", "min", "abs"})


def py_docstring(text: object) -> str:
    """Text that can sit inside a Python triple-quoted docstring: no backslash, no double
    quote (so no closing triple quote either)."""
    return plain_text(text).replace('"', "'")


def py_comment(text: object) -> str:
    """Text that can follow ``#`` in Python: one line (a newline would start code)."""
    return plain_text(text)


class PyPrinter(ScalarLines, PythonCodePrinter):
    sqrt_name = "math.sqrt"

    def language_pow(self, e, rational: bool) -> str:
        return PythonCodePrinter._print_Pow(self, e, rational)


class PythonBackend(Backend):
    name = "python"
    printer = PyPrinter({"standard": "python3", "strict": False})
    reserved = KEYWORDS | GENERATED_NAMES
    template_names = {"math": "Python's math module", "NAN": "the NaN constant"}
    filters = {"py_doc": py_docstring, "py_comment": py_comment}
    templates = {"module": "python/file.py.j2"}
    kernel_templates = {"module": "python/kernel.py.j2"}
    file_patterns = {"module": "{mech}.py"}
    loader = "python_module"


BACKEND = PythonBackend()
