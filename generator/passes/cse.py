"""Optional common-subexpression elimination over the whole body (SymPy's ``cse``).

The recursion already names every matrix element, so what is left to share are products and
sums that several elements repeat (``c1*x`` in two rows, say). New names ``x0, x1, ...`` are
prefixed ``cse`` and each is placed right before its first use.

:func:`cse` gives exactly ``sympy.cse(exprs, symbols, order="none")``: SymPy's two stages,
:func:`opt_cse` (sign, power and common-argument substitutions) and SymPy's ``tree_cse``. Its
:func:`opt_cse` is SymPy's, except that whether a node "could extract a minus sign" is decided
from its structure (:func:`could_extract_minus_sign`) instead of by building its negation
and comparing sort keys for every product and sum, which was most of the time of the pass.
``tests/test_fast_printer.py`` checks both against SymPy's on random and bundled kernels.
"""

from __future__ import annotations

from typing import Iterable

import sympy as sp
from sympy.core.containers import OrderedSet
from sympy.simplify.cse_main import Unevaluated, match_common_args, tree_cse
from sympy.utilities.iterables import iterable, topological_sort

from mechgen.generator.backends.fast import NotSimple, ordered_terms
from mechgen.generator.ir import Assign, Check, ColumnLoop, Kernel, Port, symbol


def _finite_number(e: sp.Expr) -> bool:
    """A rational or a finite float (not oo, zoo or nan, for which SymPy's rule differs)."""
    return e.is_Rational or (e.is_Float and e.is_finite)


def _negative(number: sp.Number) -> bool:
    """number < 0 for a rational or a finite float."""
    return number.p < 0 if number.is_Rational else bool(number.is_extended_negative)


def could_extract_minus_sign(e: sp.Expr) -> bool:
    """``e.could_extract_minus_sign()`` (SymPy 1.14), decided from the structure.

    A product: its numeric coefficient is negative (Mul.could_extract_minus_sign, whose
    ``self == -self`` test only holds for infinite or undefined coefficients). A sum: more
    terms that could than terms that could not; on a tie SymPy compares the sort keys of the
    sum and its negation (:func:`_first_term_is_negative`). A power or a symbol: no. Anything
    else is asked of SymPy.
    """
    if e.is_Symbol or e.is_Pow:
        return False
    if e.is_Number:
        return bool(e.is_extended_negative)
    if e.is_Mul:
        lead = e.args[0]
        if not lead.is_Number:
            return False
        if not _finite_number(lead):
            return e.could_extract_minus_sign()
        return _negative(lead)
    if e.is_Add:
        negative = sum(1 for a in e.args if could_extract_minus_sign(a))
        positive = len(e.args) - negative
        if positive != negative:
            return positive < negative
        return _first_term_is_negative(e)
    return e.could_extract_minus_sign()


def _first_term_is_negative(e: sp.Add) -> bool:
    """Add's tie rule ``e.sort_key() < (-e).sort_key()`` for sums of symbolic terms and at
    most one number.

    The terms of ``e`` and ``-e`` come in the same order (their monomials are the same) and
    the sort keys of a term ``c*rest`` and of its negation ``-c*rest`` (Expr.sort_key: class,
    arguments and exponent of ``rest``, then ``c``) differ only in ``c``, so the first term's
    sign decides; except where ``as_ordered_terms`` puts a number first (``n - c*x``,
    n > 0, c > 0): then ``e`` sorts first (a number's class sorts before any other), and its
    negation ``-n + c*x`` sorts after.
    """
    numbers = [a for a in e.args if a.is_Number]
    if numbers:
        if len(e.args) == 2 and not any(isinstance(a, sp.NumberSymbol) for a in e.args):
            n = numbers[0]
            m = e.args[1] if e.args[0] is n else e.args[0]
            if m.is_Mul and len(m.args) == 2 and m.args[0].is_Number and \
                    _finite_number(n) and _finite_number(m.args[0]):
                if n > 0 and m.args[0] < 0:
                    return True
                if n < 0 and m.args[0] > 0:
                    return False
    try:
        first = ordered_terms(e)[0]
    except NotSimple:
        return e.could_extract_minus_sign()
    if first.is_Number:
        return e.could_extract_minus_sign()
    return first.is_Mul and first.args[0].is_Number and _negative(first.args[0])


def opt_cse(exprs: list[sp.Expr]) -> dict:
    """sympy.simplify.cse_main.opt_cse(exprs, order="none") for scalar expressions: the
    substitutions that expose negated products and sums, negative powers, and the common
    arguments of sums and of products (SymPy's ``match_common_args``)."""
    opt_subs: dict = {}
    adds: OrderedSet = OrderedSet()
    muls: OrderedSet = OrderedSet()
    seen: set = set()
    collapsible: set = set()

    def find_opts(expr) -> None:
        if not isinstance(expr, sp.Basic) or expr.is_Atom or expr.is_Order:
            return
        if iterable(expr):           # a Tuple (e.g. a Piecewise's pair): its items
            for a in expr:
                find_opts(a)
            return
        if expr in seen:
            return
        seen.add(expr)
        for a in expr.args:
            find_opts(a)
        if could_extract_minus_sign(expr):
            neg = sp.Add(*(-a for a in expr.args)) if expr.is_Add else -expr
            if not neg.is_Atom:
                opt_subs[expr] = Unevaluated(sp.Mul, (sp.S.NegativeOne, neg))
                seen.add(neg)
                expr = neg
        if expr.is_Mul:
            (collapsible if len(expr.args) == 1 else muls).add(expr)
        elif expr.is_Add:
            (collapsible if len(expr.args) == 1 else adds).add(expr)
        elif expr.is_Pow and expr.exp.could_extract_minus_sign():
            opt_subs[expr] = Unevaluated(sp.Pow, (sp.Pow(expr.base, -expr.exp), -1))

    for e in exprs:
        find_opts(e)
    edges = [(s, s.args[0]) for s in collapsible if s.args[0] in collapsible]
    for e in reversed(topological_sort((collapsible, edges))):
        opt_subs[e] = opt_subs.get(e.args[0], e.args[0])
    # SymPy rebuilds each product from its commutative factors; every product of the IR is
    # commutative and canonical (nothing is built unevaluated), so that gives the product
    commutative_muls: OrderedSet = OrderedSet()
    for m in muls:
        if not m.is_commutative:
            raise NotSimple("non-commutative product")
        commutative_muls.add(m)
    match_common_args(sp.Add, adds, opt_subs)
    match_common_args(sp.Mul, commutative_muls, opt_subs)
    return opt_subs


def cse(exprs: list[sp.Expr], symbols: Iterable[sp.Symbol]):
    """(replacements, reduced expressions): ``sympy.cse(exprs, symbols, order="none")``."""
    exprs = [sp.sympify(e) for e in exprs]
    try:
        opt_subs = opt_cse(exprs)
    except NotSimple:
        return sp.cse(exprs, symbols=symbols, order="none")
    return tree_cse(exprs, iter(symbols), opt_subs, "none", ())


_RECENT: dict[tuple, Kernel] = {}
"""The last few kernels through the pass, by their contents: the derivative kernels' choice
(families/serial/derivatives.choose) counts its candidates after CSE, and the pipeline's cse
pass then gets the chosen one again."""


def common_subexpressions(k: Kernel) -> Kernel:
    """The kernel with the subexpressions its statements and outputs repeat named once. A
    column loop (generator/ir.ColumnLoop) is left as it is, in its place: its column values
    are names or numbers, its body one operation per statement (nothing to share), and the
    new names are placed before their first use among the other statements."""
    key = (k.name, k.doc, k.inputs, k.outputs, k.body, tuple(sorted(k.statuses.items())))
    if key not in _RECENT:
        if len(_RECENT) >= 4:
            del _RECENT[next(iter(_RECENT))]
        _RECENT[key] = _common_subexpressions(k)
    return _RECENT[key]


def _common_subexpressions(k: Kernel) -> Kernel:
    loops = {i: st for i, st in enumerate(k.body) if isinstance(st, ColumnLoop)}
    if loops:
        return _around_loops(k, loops)
    exprs = [st.expr for st in k.body]
    flat_out = [sp.sympify(e) for port in k.outputs for e in port.elements]
    taken = {str(s) for st in k.body if isinstance(st, Assign) for s in [st.target]}
    names = (symbol(f"cse{i}") for i in range(10**9) if f"cse{i}" not in taken)
    replacements, reduced = cse(exprs + flat_out, names)
    if not replacements:
        return k
    pending = dict(replacements)
    deps = {s: e.free_symbols & pending.keys() for s, e in replacements}
    body: list = []
    emitted: set[sp.Symbol] = set()

    def emit(s: sp.Symbol) -> None:
        if s in emitted:
            return
        for d in sorted(deps[s], key=str):
            emit(d)
        emitted.add(s)
        body.append(Assign(s, pending[s]))

    def emit_needed(e: sp.Expr) -> None:
        for s in sorted(e.free_symbols & pending.keys(), key=lambda x: int(str(x)[3:])):
            emit(s)

    for st, e in zip(k.body, reduced[:len(exprs)]):
        emit_needed(e)
        body.append(Assign(st.target, e) if isinstance(st, Assign) else Check(e, st.status, st.message))
    outs = reduced[len(exprs):]
    for e in outs:
        emit_needed(e)
    it = iter(outs)
    new_outputs = [type(port)(port.name, port.shape, tuple(next(it) for _ in port.elements), port.doc)
                   for port in k.outputs]
    return k.with_body(body, new_outputs)


def _around_loops(k: Kernel, loops: dict[int, ColumnLoop]) -> Kernel:
    """CSE of a kernel with column loops: the other statements and the outputs through
    :func:`common_subexpressions` (the loops' targets given to it as extra inputs), then each
    loop put back right after the statement that came before it. A new name is placed just
    before its first use, so one that a statement after a loop needs comes after the loop
    (it may read the loop's targets), and the loops read only names of the original body."""
    rest = [st for st in k.body if not isinstance(st, ColumnLoop)]
    extra = tuple(Port(f"loop{i}", (len(st.assigned),), st.assigned)
                  for i, st in loops.items())
    straight = common_subexpressions(Kernel(k.name, k.doc, k.inputs + extra, k.outputs,
                                            tuple(rest), k.statuses))
    after: dict[int, list[ColumnLoop]] = {}   # original statements before it -> loops
    count = 0
    for st in k.body:
        if isinstance(st, ColumnLoop):
            after.setdefault(count, []).append(st)
        else:
            count += 1
    original = {st.target for st in rest if isinstance(st, Assign)}
    body = list(after.pop(0, []))
    count = 0
    for st in straight.body:
        body.append(st)
        if isinstance(st, Check) or st.target in original:
            count += 1
            body.extend(after.pop(count, []))
    return k.with_body(body, straight.outputs)
