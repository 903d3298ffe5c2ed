"""A direct printer of the IR's scalar statements, giving exactly the text of SymPy's printers.

The statements of the IR are small SymPy expressions: sums, products, powers with small
integer or half exponents, symbols and numbers. SymPy's code printers spend most of their time
on general machinery (term ordering through ``as_ordered_terms``, ``could_extract_minus_sign``
for every product's precedence, assumptions on every coefficient). :class:`FastPrinter` walks
such an expression once and applies the same rules directly:

- a sum's terms in SymPy's default order (``Expr.as_ordered_terms`` with ``order=None``: the
  lexicographic order of the terms' monomials over the bases sorted by ``default_sort_key``,
  and the special case ``number - c*x``), joined as ``StrPrinter._print_Add`` joins them;
- a product as ``CodePrinter._print_Mul``: the sign of its coefficient pulled out, the factors
  in ``sort_key`` order, negative powers as a denominator;
- a power as :class:`~mechgen.generator.backends.base.ScalarLines` prints it;
- precedences as ``sympy.printing.precedence.precedence``.

Any other node (a function such as ``sin``, a power with another exponent, a constant without
symbols, which the C printer may print as a macro) is printed by the backend's own SymPy
printer, and so is the whole statement when something would make SymPy's ``doprint`` add lines
(an unsupported node, a multi-line result). ``tests/test_fast_printer.py`` compares both
printers on random expressions and on every bundled kernel's statements.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import sympy as sp
from sympy.core.exprtools import decompose_power
from sympy.core.sorting import default_sort_key
from sympy.printing.precedence import PRECEDENCE, precedence

ADD = PRECEDENCE["Add"]        # 40
MUL = PRECEDENCE["Mul"]        # 50
POW = PRECEDENCE["Pow"]        # 60
ATOM = PRECEDENCE["Atom"]      # 1000
UNARY_MINUS = 0.5 * (POW + MUL)  # CodePrinter._print_Mul: a lone factor after a minus sign


class NotSimple(Exception):
    """Something the fast path does not know: SymPy's own method takes over."""


class _Printed:
    """One printed node: its text, its precedence, whether it contains a symbol."""

    __slots__ = ("text", "prec", "symbolic")

    def __init__(self, text: str, prec: float, symbolic: bool) -> None:
        self.text = text
        self.prec = prec
        self.symbolic = symbolic


def _number_precedence(e: sp.Number) -> int:
    """precedence() of a number: Integer/Float negative -> Add, else Atom; Rational -> Mul."""
    if e.is_Integer or e.is_Float:
        return ADD if e < 0 else ATOM
    if e.is_Rational:
        return ADD if e.p < 0 else MUL
    return precedence(e)


def _is_plain_symbol(e: Any) -> bool:
    return type(e) is sp.Symbol


class FastPrinter:
    """Prints scalar expressions as the SymPy printer ``printer`` (a backend's printer, with
    :class:`ScalarLines` mixed in) would, without its general machinery."""

    def __init__(self, printer: Any) -> None:
        self.printer = printer
        self._symbols: dict[sp.Symbol, str] = {}
        self._numbers: dict[tuple, _Printed] = {}

    # --- entry point --------------------------------------------------------------------

    def doprint(self, expr: sp.Expr) -> str:
        """The text of ``printer.doprint(expr)``."""
        printer = self.printer
        printer._not_supported = set()
        printer._number_symbols = set()
        try:
            text = self._print(expr).text
        except NotSimple:
            return printer.doprint(expr)
        finally:
            extra = printer._not_supported or printer._number_symbols
            printer._not_supported = set()
            printer._number_symbols = set()
        if extra or "\n" in text or text[:1] in (" ", "\t"):
            return printer.doprint(expr)
        return text

    # --- nodes --------------------------------------------------------------------------

    def _print(self, e: sp.Basic) -> _Printed:
        if e.is_Symbol:
            return self._symbol(e)
        if e.is_Number:
            if not (e.is_Rational or e.is_Float) or not e.is_finite:
                raise NotSimple      # nan, oo, zoo: SymPy's printer (and its refusal)
            return self._number(e)
        if e.is_Add:
            return self._add(e)
        if e.is_Mul:
            return self._mul(e)
        if e.is_Pow:
            return self._pow(e)
        return self._delegate(e)

    def _symbol(self, e: sp.Symbol) -> _Printed:
        if not _is_plain_symbol(e):
            raise NotSimple
        text = self._symbols.get(e)
        if text is None:
            if not e.is_commutative:
                raise NotSimple
            text = self._symbols[e] = self.printer._print_Symbol(e)
        return _Printed(text, ATOM, True)

    def _number(self, e: sp.Number) -> _Printed:
        """A number as the printer prints it (kept per class and value: 2 and 2.0 differ)."""
        key = (type(e), e)
        printed = self._numbers.get(key)
        if printed is None:
            printed = _Printed(self.printer._print(e), _number_precedence(e), False)
            self._numbers[key] = printed
        return printed

    def _delegate(self, e: sp.Basic) -> _Printed:
        """A node the fast path does not print (a function call): SymPy prints it."""
        if not isinstance(e, sp.Function) or e.has(sp.re, sp.im) or not e.is_commutative:
            raise NotSimple
        if hasattr(e, "precedence"):
            raise NotSimple
        return _Printed(self.printer._print(e), precedence(e), True)

    def _paren(self, p: _Printed, level: float) -> str:
        """StrPrinter.parenthesize (not strict): brackets when precedence <= level."""
        return f"({p.text})" if p.prec <= level else p.text

    # --- sums: StrPrinter._print_Add over Expr.as_ordered_terms() -----------------------

    def _add(self, e: sp.Add) -> _Printed:
        printed = [self._print(t) for t in e.args]
        if not any(p.symbolic for p in printed):
            raise NotSimple          # a constant: SymPy's printer (and its macros)
        by_term = dict(zip(e.args, printed))
        parts: list[str] = []
        for term in ordered_terms(e):
            p = by_term[term]
            t = p.text
            if t.startswith("-") and not term.is_Add:
                sign, t = "-", t[1:]
            else:
                sign = "+"
            if p.prec < ADD or term.is_Add:
                t = f"({t})"
            parts.extend([sign, t])
        sign = parts.pop(0)
        return _Printed(("" if sign == "+" else sign) + " ".join(parts), ADD, True)

    # --- products: CodePrinter._print_Mul ------------------------------------------------

    def _mul(self, e: sp.Mul) -> _Printed:
        args = e.args
        printed = {a: self._print(a) for a in args}
        if not any(p.symbolic for p in printed.values()):
            raise NotSimple          # a constant: SymPy's printer (and its macros)
        for a in args[1:]:           # (every leaf was checked commutative when printed)
            if a.is_Number:
                raise NotSimple
        lead = args[0]
        negative = lead.is_Number and bool(lead.is_extended_negative)   # c < 0
        prec = ADD if negative else MUL
        if negative:
            sign = "-"
            c = -lead
            factors = list(args[1:]) if c is sp.S.One else [c, *args[1:]]
            if c is not sp.S.One:
                printed[c] = self._print(c)
        else:
            sign = ""
            factors = list(args)
        factors = _sorted_factors(factors)
        num: list[sp.Expr] = []
        den: list[sp.Expr] = []
        paren_den: list[sp.Expr] = []
        power_den = False            # a lone x**-k (k = 2..4): "/(x*x)", ScalarLines._print_Mul
        for f in factors:
            if f.is_Pow and f.exp.is_Rational and f.exp.p < 0:
                power_den = f.exp.is_Integer and -4 <= f.exp <= -2
                if f.exp != -1:
                    d = sp.Pow(f.base, -f.exp, evaluate=False)
                    printed[d] = self._pow(d)
                else:
                    if len(f.args[0].args) != 1 and f.base.is_Mul:
                        paren_den.append(f)
                    d = f.base
                    if d not in printed:
                        printed[d] = self._print(d)
                den.append(d)
            else:
                num.append(f)
        if not num:
            num = [sp.S.One]
            printed[sp.S.One] = self._print(sp.S.One)
        if len(num) == 1 and sign == "-":
            num_text = [self._paren(printed[num[0]], UNARY_MINUS)]
        else:
            num_text = [self._paren(printed[x], prec) for x in num]
        den_text = [self._paren(printed[x], prec) for x in den]
        for f in paren_den:
            if f.base in den:
                i = den.index(f.base)
                den_text[i] = f"({den_text[i]})"
        text = sign + "*".join(num_text)
        if len(den) == 1 and power_den:
            text += f"/({den_text[0]})"
        elif len(den) == 1:
            text += "/" + den_text[0]
        elif den:
            text += "/(%s)" % "*".join(den_text)
        return _Printed(text, prec, True)

    # --- powers: ScalarLines._print_Pow --------------------------------------------------

    def _pow(self, e: sp.Pow) -> _Printed:
        b, x = e.base, e.exp
        base = self._print(b)
        if not base.symbolic:
            raise NotSimple          # a constant: SymPy's printer (and its macros)
        if x.is_Integer and 2 <= x.p <= 4:
            text = "*".join([self._paren(base, MUL)] * x.p)
        elif x is sp.S.NegativeOne:
            text = f"1.0/{self._paren(base, POW)}"
        elif x is sp.S.Half:
            text = f"{self.printer.sqrt_name}({base.text})"
        else:                        # another exponent (a float, too): the printer's rule
            text = self.printer._print(e)
        return _Printed(text, POW, True)


@lru_cache(maxsize=1 << 16)
def ordered_terms(e: sp.Add) -> tuple[sp.Expr, ...]:
    """Expr.as_ordered_terms(order=None) for a sum of products of symbolic factors (raises
    :class:`NotSimple` for anything else, e.g. a number among a term's factors). Kept for
    the sums seen last: both backends print the same statements, and CSE asks too."""
    args = e.args
    if len(args) == 2:
        special = _number_minus_product(args)
        if special is not None:
            return tuple(special)
    terms = [_term(t) for t in args]
    gens = {base for _, _, powers in terms for base in powers}
    if all(_is_plain_symbol(g) for g in gens):
        order = sorted(gens, key=lambda g: g.name)
    else:
        order = sorted(gens, key=default_sort_key)
    index = {g: i for i, g in enumerate(order)}

    def key(item):
        _, coeff, powers = item
        monom = [0] * len(order)
        for base, exp in powers.items():
            monom[index[base]] = exp
        return tuple(-m for m in monom), coeff

    return tuple(t for t, _, _ in sorted(terms, key=key))


def _number_minus_product(args) -> list[sp.Expr] | None:
    """as_ordered_terms' special case: a positive number plus (negative number) * x."""
    def key(x):
        return not isinstance(x, (sp.Number, sp.NumberSymbol))
    add_args = sorted(args, key=key)
    if isinstance(add_args[0], (sp.Number, sp.NumberSymbol)) and add_args[1].is_Mul:
        mul_args = sorted(add_args[1].args, key=key)
        if (len(mul_args) == 2 and isinstance(mul_args[0], sp.Number)
                and add_args[0].is_positive and mul_args[0].is_negative):
            return add_args
    return None


def _term(t: sp.Expr):
    """(term, coefficient, {base: integer exponent}) as Expr.as_terms splits it (the
    coefficient only breaks ties of equal monomials, which a canonical sum does not have)."""
    if t.is_Number:
        return t, t, {}
    if t.is_Mul and t.args[0].is_Number:
        coeff, factors = t.args[0], t.args[1:]
    else:
        coeff, factors = sp.S.One, (t.args if t.is_Mul else (t,))
    powers = {}
    for f in factors:
        if f.is_number:
            raise NotSimple
        base, exp = _decompose_power(f)
        powers[base] = exp
    return t, coeff, powers


def _decompose_power(f: sp.Expr) -> tuple[sp.Expr, int]:
    """sympy.core.exprtools.decompose_power (a symbol is its own base, exponent 1)."""
    if _is_plain_symbol(f):
        return f, 1
    base, exp = decompose_power(f)
    return base, int(exp)


def _sorted_factors(factors: list[sp.Expr]) -> list[sp.Expr]:
    """Mul.as_ordered_factors(): the factors in ``sort_key`` order. For numbers, symbols and
    powers of symbols with numeric exponents that order is (number first, then name, then
    exponent); anything else is sorted by SymPy's own keys."""
    simple = []
    for f in factors:
        if f.is_Number:
            simple.append((0, "", 0.0, f))
        elif _is_plain_symbol(f):
            simple.append((1, f.name, 1.0, f))
        elif f.is_Pow and _is_plain_symbol(f.base) and f.exp.is_Rational:
            simple.append((1, f.base.name, float(f.exp), f))
        else:
            return sorted(factors, key=lambda a: a.sort_key())
    numbers = [s for s in simple if s[0] == 0]
    if len(numbers) > 1:
        return sorted(factors, key=lambda a: a.sort_key())
    simple.sort(key=lambda s: (s[0], s[1], s[2]))
    return [s[3] for s in simple]
