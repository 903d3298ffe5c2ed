"""The C99 backend: ``<mech>.h`` and ``<mech>.c``, loaded by the runtime through cffi.

Each kernel's C prototype and that of its ``_batch`` twin are written once, by the macros of
``templates/c/signature.j2``: the header declares them, the source defines them (with
``restrict`` on the single-state pointers), and the runtime reads the header's declarations
as its cffi ``cdef`` (:func:`mechgen.runtime.cbuild.cdef_from_header`).
"""

from __future__ import annotations

import re
import textwrap

from sympy.printing.c import C99CodePrinter

from mechgen.generator.backends.base import Backend, ScalarLines, plain_text

KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while",
})
TRIG_NAMES = ("mg_sincos", "mg_sincos_poly", "mg_sin", "mg_cos", "mg_sin_poly", "mg_cos_poly",
              "mg_trig_out_of_range", "MG_TRIG_BOUND", "MG_ALWAYS_INLINE", "mg_atan2",
              "mg_select", "MG_SELECT_BITS", "mg_fmax", "mg_fmin")
"""The project's sin, cos, atan2, fmax and fmin, defined once per C file (templates/c/sincos.c.j2,
docs/sincos.md)."""
STREAM_NAMES = ("mg_stream_rows", "mg_stream_fence", "MG_STREAM_MIN")
"""The _batch kernels' non-temporal copy of large outputs (templates/c/simd_block.c.j2)."""
SIMD_NAMES = ("mg_rows_to_block", "mg_block_to_rows", "mg_transpose_tile", "MG_SIMD_WIDTH",
              "MG_SIMD_TRANSPOSE", "MG_PADDED")
"""The SIMD blocks' helpers and macros (templates/c/simd_block.c.j2, sincos.c.j2)."""
STREAM_MIN_SIZE = 128
"""An output of at least this many doubles per state is written by the _batch kernel with
non-temporal stores when the call's such outputs add up to more than MG_STREAM_MIN doubles
(docs/architecture.md, "Large outputs of a batch"); a row's partial lines at either end get
plain stores, so a smaller row would be mostly plain stores through a local buffer."""


def streamed_outputs(outputs: list[dict]) -> list[dict]:
    """The outputs (template dicts with a ``size``) the C _batch kernel writes with
    non-temporal stores when a call writes more than MG_STREAM_MIN doubles: those of at least
    STREAM_MIN_SIZE doubles per state (a free-base quadruped's mass matrix, Jacobians,
    regressors, derivative matrices)."""
    return [p for p in outputs if p["size"] >= STREAM_MIN_SIZE]
# what the generated C calls or declares: libm functions (fmax, fmin, fabs: the printed Max,
# Min, Abs; pow: a non-integer power), the status variable, the _batch function's count and
# loop index, the integer types of the signatures
GENERATED_NAMES = frozenset({"sqrt", "sin", "cos", "fmax", "fmin", "fabs", "pow", "status", "n",
                             "i", "int64_t", "int32_t", "uint64_t", "memcpy", *TRIG_NAMES,
                             *STREAM_NAMES, *SIMD_NAMES})


def c_comment(text: object) -> str:
    """Text that can sit inside a C ``/* ... */`` comment without ending it.

    ``*/`` and ``/*`` get a space between their characters; ``??`` (a trigraph could turn
    ``??/`` into a backslash) becomes ``? ?``.
    """
    s = plain_text(text).replace("*/", "* /").replace("/*", "/ *")
    return re.sub(r"\?(?=\?)", "? ", s)


def c_rows(values: list, width: int = 88) -> list[str]:
    """A C initialiser's values (``{...}``), comma-separated, wrapped into lines."""
    return textwrap.wrap(", ".join(str(v) for v in values), width) or [""]


def c_function_name(mech: str, kernel: str) -> str:
    """The exported C symbol of a kernel: namespaced, so no mechanism name can clash with a
    C library symbol (``sin``, ``printf``, ``stdlib``...)."""
    return f"mechgen_{mech}_{kernel}"


def header_guard(mech: str) -> str:
    return f"MECHGEN_{mech.upper()}_H"


class CPrinter(ScalarLines, C99CodePrinter):
    sqrt_name = "sqrt"

    def language_pow(self, e, rational: bool) -> str:
        return C99CodePrinter._print_Pow(self, e)

    def _print_sin(self, e) -> str:
        """sin(x) as the project's ``mg_sin(x)`` (identical bits on every CPU; docs/sincos.md)."""
        return f"mg_sin({self._print(e.args[0])})"

    def _print_cos(self, e) -> str:
        """cos(x) as the project's ``mg_cos(x)``."""
        return f"mg_cos({self._print(e.args[0])})"

    def _print_atan2(self, e) -> str:
        """atan2(y, x) as the project's ``mg_atan2(y, x)`` (branch-free: it vectorises)."""
        return f"mg_atan2({self._print(e.args[0])}, {self._print(e.args[1])})"

    def _print_Max(self, e) -> str:
        """Max(a, b, ...) as nested ``mg_fmax`` (fmax's NaN rule, branch-free: it vectorises)."""
        return self._print_math_func(e, nest=True, known="mg_fmax")

    def _print_Min(self, e) -> str:
        """Min(a, b, ...) as nested ``mg_fmin``."""
        return self._print_math_func(e, nest=True, known="mg_fmin")


class CBackend(Backend):
    name = "c"
    printer = CPrinter({"strict": False})
    reserved = KEYWORDS | GENERATED_NAMES
    template_names = {"status": "the C kernel's status variable", "NAN": "the NaN constant"}
    filters = {"c_comment": c_comment, "c_rows": c_rows}
    templates = {"header": "c/file.h.j2", "source": "c/file.c.j2"}
    kernel_templates = {"header": "c/kernel.h.j2", "source": "c/kernel.c.j2"}
    file_patterns = {"header": "{mech}.h", "source": "{mech}.c"}
    loader = "cffi"

    def kernel_fields(self, mech: str, kernel: str) -> dict:
        return {"c_name": c_function_name(mech, kernel)}

    def context(self, mech: str) -> dict:
        return {"guard": header_guard(mech)}

    def manifest_kernel(self, mech: str, kernel: str) -> dict:
        return {"c_function": c_function_name(mech, kernel)}


BACKEND = CBackend()
