"""Forward-mode differentiation of a kernel's body: d(output)/d(input) as more assignments.

For every assignment ``t = e(s_1, ..., s_m)`` that depends (through earlier assignments) on a
chosen input ``w_i``, the pass appends, right after it,

    t_d<w_i> = sum_k  de/ds_k * s_k_d<w_i>          (the chain rule, one direction w_i)

with ``s_k_d<w_i>`` = 1 for ``s_k = w_i``, 0 for any other input, and the derivative named
before for an assigned name (0 when ``s_k`` does not depend on ``w_i``, so the derivatives
stay as sparse as the dependence). The outputs get the matching derivative port. The body
stays an ordered list of single assignments; dead-code removal and CSE then treat the new
statements like any other. Used where a kernel's outputs are affine in some inputs (the base
accelerations of a mechanism on a moving base), so the derivatives are the exact
coefficients.
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp
from sympy.ntheory.multinomial import multinomial_coefficients_iterator

from mechgen.generator.ir import Assign, ColumnLoop, Kernel, Port, symbol

PIECEWISE = (sp.Max, sp.Min, sp.Piecewise, sp.Abs, sp.Heaviside, sp.sign)


class NotDifferentiable(ValueError):
    """An expression the pass will not differentiate (a kink: max, min, abs, a branch)."""


def _derivative(e: sp.Expr, s: sp.Symbol) -> sp.Expr:
    if any(isinstance(a, PIECEWISE) and s in a.free_symbols for a in sp.preorder_traversal(e)):
        raise NotDifferentiable(f"{e} has a kink in {s}")
    return derivative(e, s)


def derivative(e: sp.Expr, s: sp.Symbol) -> sp.Expr:
    """``sp.diff(e, s)``, the same expression, by SymPy's own rules (what ``sp.diff`` calls:
    the ``_eval_derivative`` of Add, Pow, sin and cos, and Mul's Leibniz rule, each applied
    as SymPy applies it) without the machinery around them: ``sp.diff`` makes a Derivative
    object at every node, asks for the node's free symbols each time and walks the result
    for unevaluated derivatives, which was half the forward-mode kernels' build time. Other
    functions go to ``sp.diff``."""
    return _Rules(s).d(e)


class _Rules:
    """d/ds of the nodes of one expression, each node once (``seen``: node -> derivative)."""

    def __init__(self, s: sp.Symbol) -> None:
        self.s = s
        self.seen: dict[sp.Basic, sp.Expr] = {}
        self.has: dict[sp.Basic, bool] = {}

    def depends(self, e: sp.Basic) -> bool:
        """s occurs in e (``s in e.free_symbols``, each node asked once)."""
        if e.is_Atom:
            return e == self.s
        known = self.has.get(e)
        if known is None:
            known = self.has[e] = any(self.depends(a) for a in e.args)
        return known

    def d(self, e: sp.Basic) -> sp.Expr:
        if not self.depends(e):
            return sp.S.Zero                            # Derivative's quick exit
        if e.is_Atom:
            return sp.S.One                             # e is s
        out = self.seen.get(e)
        if out is None:
            out = self.seen[e] = self._rule(e)
        return out

    def _rule(self, e: sp.Basic) -> sp.Expr:
        if e.is_Add:                                    # Add._eval_derivative
            return e.func(*[self.d(a) for a in e.args])
        if e.is_Mul:            # Mul._eval_derivative_n_times: Leibniz's rule, n = 1
            args = e.args
            return sp.Add(*[c * sp.Mul(*[self.d(a) if k else a for k, a in zip(ks, args)])
                            for ks, c in multinomial_coefficients_iterator(len(args), 1)])
        if e.is_Pow:                                    # Pow._eval_derivative
            dbase, dexp = self.d(e.base), self.d(e.exp)
            return e * (dexp * sp.log(e.base) + dbase * e.exp / e.base)
        if isinstance(e, (sp.sin, sp.cos)):             # Function._eval_derivative
            da = self.d(e.args[0])
            return sp.Add(*([] if da.is_zero else [e.fdiff(1) * da]))
        return sp.diff(e, self.s)


def _chain_rule(e: sp.Expr, d: dict[sp.Symbol, list[sp.Expr]], n: int) -> list[sp.Expr]:
    """[de/dw_i for each direction i] from the derivatives ``d`` of e's symbols."""
    out = [sp.Integer(0)] * n
    for s in sorted(e.free_symbols & d.keys(), key=lambda x: x.name):
        de_ds = _derivative(e, s)
        if de_ds == 0:
            continue
        for i, ds in enumerate(d[s]):
            if ds != 0:
                out[i] = out[i] + de_ds * ds
    return out


def _needed(body, exprs: list[sp.Expr], constants: set[sp.Symbol]) -> set[sp.Symbol]:
    """Targets of the statements the expressions reach by back-references, stopping at the
    ``constants`` (names held fixed): only these need derivatives."""
    live: set[sp.Symbol] = set()
    for e in exprs:
        live |= sp.sympify(e).free_symbols
    live -= constants
    for st in reversed(body):
        if isinstance(st, Assign) and st.target in live:
            live |= st.expr.free_symbols - constants
    return live


def differentiate(k: Kernel, exprs: list[sp.Expr], wrt: list[sp.Symbol],
                  constants: set[sp.Symbol] = frozenset(), reserved: set[str] = frozenset(),
                  seeds: dict[sp.Symbol, list[sp.Expr]] | None = None
                  ) -> tuple[list, list[list[sp.Expr]]]:
    """(body with the derivative assignments, [d e / d wrt for each e in ``exprs``]).

    Only the statements that ``exprs`` reach are differentiated; a name in ``constants`` is
    held fixed (its derivative is 0 even if it was computed from ``wrt``): a partial
    derivative, e.g. of the inverse dynamics at a qdd computed in the same kernel. New names
    avoid ``reserved`` (the output ports' names). ``seeds``: names whose derivatives along the
    directions are given (one expression per direction) instead of found from their own
    statements: a direction that is no input (a displacement of the base along its tangent,
    families/serial/derivatives.py) enters through the names it moves, and a ``wrt`` symbol
    that occurs nowhere in the body just names that direction."""
    if any(isinstance(st, ColumnLoop) for st in k.body):
        raise ValueError(f"{k.name}: forward differentiation of a column loop is not "
                         f"implemented (differentiate before the loops are built)")
    n = len(wrt)
    d: dict[sp.Symbol, list[sp.Expr]] = {
        w: [sp.Integer(1 if i == j else 0) for j in range(n)] for i, w in enumerate(wrt)}
    for name, column in (seeds or {}).items():
        if len(column) != n:
            raise ValueError(f"{k.name}: the seed of {name} has {len(column)} directions, "
                             f"not {n}")
        d[name] = [sp.sympify(x) for x in column]
    seeded = set(seeds or ())
    needed = _needed(k.body, exprs, set(constants))
    taken = {st.target.name for st in k.body if isinstance(st, Assign)}
    taken |= {str(s) for p in k.inputs for s in p.elements} | {p.name for p in k.outputs}
    taken |= set(reserved)
    body = []
    for st in k.body:
        body.append(st)
        if (not isinstance(st, Assign) or st.target not in needed or st.target in seeded
                or not (st.expr.free_symbols & d.keys())):
            continue
        derivs = _chain_rule(st.expr, d, n)
        named = []
        for w, de in zip(wrt, derivs):
            if de == 0 or de.is_number:
                named.append(sp.sympify(de))
                continue
            name = f"{st.target.name}_d{w.name}"
            while name in taken:
                name += "_"
            taken.add(name)
            t = symbol(name)
            body.append(Assign(t, de))
            named.append(t)
        if any(x != 0 for x in named):
            d[st.target] = named
    return body, [_chain_rule(sp.sympify(e), d, n) for e in exprs]


def forward_derivatives(k: Kernel, of: list[str], wrt: list[sp.Symbol],
                        ports: list[tuple[str, str]]) -> Kernel:
    """``k`` with one more output per port named in ``of``: its Jacobian with respect to the
    input symbols ``wrt``, shape (size of the port, len(wrt)), row-major, named and documented
    by ``ports`` [(name, doc), ...] in the order of ``of``."""
    n = len(wrt)
    by_name = {p.name: p for p in k.outputs}
    exprs = [e for name in of for e in by_name[name].elements]
    body, rows = differentiate(k, exprs, wrt, reserved={name for name, _ in ports})
    extra = []
    for name, (dname, doc) in zip(of, ports):
        port = by_name[name]
        mine, rows = rows[:port.size], rows[port.size:]
        extra.append(Port(dname, (port.size, n), tuple(x for row in mine for x in row), doc))
    return k.with_body(body, list(k.outputs) + extra)


def _terms_key(e: sp.Expr) -> tuple:
    """``e`` as (kind, its terms as (coefficient, rest) pairs): equal keys, equal expressions.
    A sum is the set of its terms, anything else the one term ``e.as_coeff_Mul()``."""
    if e.is_Add:
        return ("add", frozenset(a.as_coeff_Mul() for a in e.args))
    return ("term", e.as_coeff_Mul())


def _negated_key(e: sp.Expr) -> tuple:
    """``_terms_key(-e)`` without building ``-e``: SymPy negates a sum term by term and a term
    by its numeric coefficient (``Mul.flatten`` distributing -1, ``_keep_coeff``), leaving
    the rest of each term as it is."""
    if e.is_Add:
        return ("add", frozenset((-c, m) for c, m in (a.as_coeff_Mul() for a in e.args)))
    c, m = e.as_coeff_Mul()
    return ("term", (-c, m))


def merge_equal_statements(k: Kernel) -> Kernel:
    """Value numbering: a statement whose expression (after the replacements made so far) is
    that of an earlier statement, or its negative, is dropped and its name replaced by the
    earlier one (or its negative). Derivatives repeat values the kernel already has: for a
    rotation about the joint axis e, d(beta v)/dq = (beta v) x e, whose components are the
    other components of beta v; the pass finds these without knowing the rule. The negative
    is looked up by its key (:func:`_negated_key`), not built: building ``-e`` for every
    statement was most of the pass's time. A column loop's column values get the
    replacements; its body and targets stay (each column's values are its own)."""
    seen: dict[sp.Expr, sp.Symbol] = {}
    seen_keys: dict[tuple, sp.Symbol] = {}
    subs: dict[sp.Symbol, sp.Expr] = {}
    body = []
    for st in k.body:
        if isinstance(st, ColumnLoop):     # its column values renamed; its body its own
            body.append(replace(st, columns=tuple(tuple(sp.sympify(e).xreplace(subs)
                                                        for e in col) for col in st.columns)))
            continue
        e = st.expr.xreplace(subs) if subs else st.expr
        if not isinstance(st, Assign):
            body.append(type(st)(e, st.status, st.message))
            continue
        if e in seen:
            subs[st.target] = seen[e]
            continue
        earlier = seen_keys.get(_negated_key(e))
        if earlier is not None:
            subs[st.target] = -earlier
            continue
        seen[e] = st.target
        seen_keys[_terms_key(e)] = st.target
        body.append(Assign(st.target, e))
    outputs = [Port(p.name, p.shape, tuple(sp.sympify(x).xreplace(subs) for x in p.elements),
                    p.doc) for p in k.outputs]
    return k.with_body(body, outputs)
