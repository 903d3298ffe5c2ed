"""What every backend shares: safe text, nearest-double constants, and the Backend interface.

A backend is one target language. It owns what differs between languages, and
:func:`mechgen.generator.emit.render` asks it (never ``isinstance``):

- ``printer``: its SymPy code printer; the shared rules (constants printed as the nearest
  double, small powers as products, non-finite constants refused) are in :class:`ScalarLines`,
  which asks the printer for its square root (``sqrt_name``) and its general power
  (``language_pow``);
- ``reserved``: names no spec may take (the language's keywords, the names its generated code
  calls or declares), and ``template_names``: identifiers its templates use inside a kernel,
  each with what it is (for the clash message);
- ``filters``: the Jinja filters that make spec text safe in its comments or docstrings;
- ``templates``: which template (under the top-level ``templates/`` folder) renders to which
  file, by role (``{"header": "c/file.h.j2"}``), ``kernel_templates``: the template of one
  kernel's part of that file (``{"header": "c/kernel.h.j2"}``; rendered where the kernel is
  built, the file's template joins the parts), and ``file_patterns``: the file name of each
  role (``{"header": "{mech}.h"}``);
- ``loader``: how the runtime turns its files into callables (``mechgen.runtime.backends``);
- :meth:`Backend.kernel_fields`, :meth:`Backend.context`, :meth:`Backend.manifest_kernel` and
  :meth:`Backend.manifest`: what its templates and the manifest need to know of it.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import sympy as sp
from sympy.printing.precedence import PRECEDENCE

from mechgen.generator.backends.fast import FastPrinter

_PRINTABLE = frozenset(chr(c) for c in range(0x20, 0x7F)) - {"\\"}


def plain_text(text: object) -> str:
    """One line of printable ASCII without backslash: any other character becomes '?'."""
    return "".join(ch if ch in _PRINTABLE else "?" for ch in str(text))


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


class ScalarLines:
    """What every printer shares: nearest-double constants, small powers as products.

    A backend's printer class mixes this in before its SymPy printer and defines
    ``sqrt_name`` and :meth:`language_pow` (any other power, in the language's own way).
    """

    sqrt_name = "sqrt"

    def language_pow(self, e, rational: bool) -> str:
        raise NotImplementedError(f"{type(self).__name__} must define language_pow")

    def _print_Rational(self, e):
        return _double(e)

    def _print_NumberSymbol(self, e):       # pi, E, ...: the nearest double, not M_PI
        return _double(e)

    _print_Pi = _print_Exp1 = _print_NumberSymbol

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
        return self.language_pow(e, rational)

    def _print_Mul(self, e):
        """SymPy writes a lone denominator as "/" followed by the denominator's text; a power
        x**k (k = 2..4) is written as the product x*x, so it is parenthesised here: a/(x*x),
        not a/x*x."""
        text = super()._print_Mul(e)
        dens = [f for f in sp.Mul.make_args(e) if f.is_Pow and f.exp.is_Rational
                and f.exp.is_negative]
        if len(dens) == 1 and dens[0].exp.is_Integer and -4 <= dens[0].exp <= -2:
            den = self._print(sp.Pow(dens[0].base, -dens[0].exp, evaluate=False))
            if text.endswith("/" + den):
                return f"{text[:-len(den)]}({den})"
        return text


# --- the interface ------------------------------------------------------------------------

class Backend:
    """One target language; subclasses set the attributes and may override the methods."""

    name: str = ""
    printer: Any = None
    reserved: frozenset[str] = frozenset()
    template_names: dict[str, str] = {}
    filters: dict[str, Callable[[object], str]] = {}
    templates: dict[str, str] = {}          # role -> template path under templates/
    kernel_templates: dict[str, str] = {}   # role -> template of one kernel's part of the file
    file_patterns: dict[str, str] = {}      # role -> file name, "{mech}" replaced
    loader: str = ""

    @property
    def fast_printer(self):
        """:class:`~mechgen.generator.backends.fast.FastPrinter` over ``printer``: the same
        text, without SymPy's general printing machinery (made once per backend)."""
        fast = self.__dict__.get("_fast_printer")
        if fast is None:
            fast = self.__dict__["_fast_printer"] = FastPrinter(self.printer)
        return fast

    def file_names(self, mech: str) -> dict[str, str]:
        """Role -> generated file name for one mechanism."""
        return {role: pattern.format(mech=mech) for role, pattern in self.file_patterns.items()}

    def kernel_fields(self, mech: str, kernel: str) -> dict:
        """Extra per-kernel entries of the template context (e.g. the exported symbol)."""
        return {}

    def context(self, mech: str) -> dict:
        """Extra file-level entries of the template context (e.g. the header guard)."""
        return {}

    def manifest_kernel(self, mech: str, kernel: str) -> dict:
        """Extra entries of each kernel's manifest entry (after its name)."""
        return {}

    def manifest(self, mech: str) -> dict:
        """The backend's entry in the manifest's ``backends``: how the runtime loads it
        (``loader``) and its files by role."""
        return {"loader": self.loader, "files": self.file_names(mech)}
