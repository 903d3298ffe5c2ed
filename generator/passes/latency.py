"""Shorter dependency chains: sums and products grouped by when their operands are ready.

A C compiler keeps the order of floating-point operations as written (no ``-ffast-math``),
and the printers write a sum of n terms left to right: ``((a + b) + c) + d``, n - 1 additions
one after another, in SymPy's order of the terms. Along a chain of bodies (the composite
inertias of the mass matrix, tip to base; the forces of Newton-Euler) the term that arrives
last, the one carried from the previous body, then often enters first and waits through
every later addition. The kernel's time is then its longest chain of dependent operations
(each ~3-4 cycles of latency) rather than its number of operations.

This pass regroups every sum and product of three or more operands (a sign not counted) as a
tree of two-operand operations, built as Huffman builds a code: take the two operands ready
first, combine them (ready one step after the later of the two), put the result back, repeat
(the tree whose root is ready earliest, for operations of equal latency). Every inner node
of the tree becomes an assignment of its own (``<target>_p<k>``, a partial sum or product),
so every statement is left with operations of two operands, whose value does not depend on
the order a printer writes them in. The operation count does not change; the values change
only by rounding (a different order of the same additions), and the same spec still gives
the same bits on every machine.

Only the statements that need it are regrouped (seventeenth session). Regrouping every sum
first gives the kernel's shortest chain L (in this model); from it each name gets a deadline,
the latest ready time that keeps every output ready by L (its ready time plus its *slack*,
the least slack of the statements that read it). A statement whose as-built form is ready by
its deadline stays as built; the others are regrouped. The kernel's chain is still L (a
statement regrouped with operands late by at most its slack is late by at most its slack:
each regrouping is monotone in its operands' times), and the statements off the critical
path keep the builder's form. Regrouping those too held more partial sums live for nothing:
solo12's mass matrix (Euler base, chain 53 -> 49 steps) took 303 -> 399 ns at -O3 (SSE2)
and 233 -> 262 ns with -mavx2 regrouped everywhere (docs/algorithms.md §2.4.3).

Ready times (in operations of one step): inputs and numbers 0; ``x**k`` (k = 2..4) k - 1
steps; a division, :data:`DIV_STEPS`; a square root, :data:`SQRT_STEPS`; sine, cosine and the
other calls, :data:`CALL_STEPS`; a column loop's targets, the latest of its inputs plus the
longest chain of its body. Measured effect: docs/algorithms.md §2.4.3.
"""

from __future__ import annotations

import heapq
from itertools import count

import sympy as sp

from mechgen.generator.backends.fast import NotSimple, ordered_terms
from mechgen.generator.ir import Assign, ColumnLoop, Kernel, binary, defines, reads, symbol

DIV_STEPS = 4
SQRT_STEPS = 5
CALL_STEPS = 25
"""sin, cos (the polynomial path: ~25 dependent operations), atan2 and the other calls."""


def shorten_chains(k: Kernel) -> Kernel:
    """The kernel with the sums and products of three or more operands regrouped by the
    ready times of their operands where that is needed for its shortest chain; the others
    as built (module doc)."""
    return regroup(k, deadlines(regroup(k)))


def regroup(k: Kernel, deadline: dict[sp.Symbol, int] | None = None) -> Kernel:
    """The kernel with its sums and products of three or more operands regrouped by the
    ready times of their operands; with ``deadline``, a statement whose as-built form is
    ready by its target's deadline stays as built."""
    names = _Names(k)
    ready: dict[sp.Symbol, int] = {s: 0 for p in k.inputs for s in p.elements}
    body = []
    for st in k.body:
        if isinstance(st, Assign) and binary(st.expr):      # nothing to regroup
            ready[st.target] = steps_as_printed(st.expr, ready)
            body.append(st)
        elif isinstance(st, Assign):
            if deadline is not None:
                built = steps_as_printed(st.expr, ready)
                if built <= deadline[st.target]:
                    ready[st.target] = built
                    body.append(st)
                    continue
            tree = _Tree(ready, names, st.target)
            expr, steps = tree.node(st.expr)
            body.extend(tree.partials)
            body.append(Assign(st.target, expr))
            ready[st.target] = steps
        else:
            if isinstance(st, ColumnLoop):
                _loop_ready(st, ready)
            body.append(st)
    return k.with_body(body)


def deadlines(k: Kernel) -> dict[sp.Symbol, int]:
    """The latest ready time of each name of ``k`` that keeps every output ready by the
    kernel's longest chain: its ready time plus its slack, the least slack of what reads it
    (an output's slack is the chain's end less its ready time)."""
    ready = ready_times(k)
    outputs = [(e, steps_as_printed(e, ready)) for e in _output_elements(k)]
    end = max((t for _, t in outputs), default=0)
    slack: dict[sp.Symbol, int] = {}
    for e, t in outputs:
        for s in e.free_symbols:
            slack[s] = min(slack.get(s, end - t), end - t)
    for st in reversed(k.body):
        own = min((slack.get(t, end) for t in defines(st)), default=end)
        for s in reads(st):
            slack[s] = min(slack.get(s, own), own)
    return {s: t + slack.get(s, end) for s, t in ready.items()}


def ready_times(k: Kernel) -> dict[sp.Symbol, int]:
    """The ready time of every input and name of ``k`` (steps of the module doc), each sum
    and product evaluated left to right in the order the printers write it."""
    ready: dict[sp.Symbol, int] = {s: 0 for p in k.inputs for s in p.elements}
    for st in k.body:
        if isinstance(st, Assign):
            ready[st.target] = steps_as_printed(st.expr, ready)
        elif isinstance(st, ColumnLoop):
            _loop_ready(st, ready)
    return ready


def longest_chain(k: Kernel) -> int:
    """The ready time of the kernel's last output (its longest chain of dependent operations,
    in the steps of the module doc), each sum and product evaluated left to right in the
    order the printers write it (fast.ordered_terms; factors in SymPy's order)."""
    ready = ready_times(k)
    return max((steps_as_printed(e, ready) for e in _output_elements(k)), default=0)


def _output_elements(k: Kernel) -> list[sp.Expr]:
    return [sp.sympify(e) for p in k.outputs for e in p.elements]


def steps_as_printed(e: sp.Expr, ready: dict) -> int:
    """Ready time of ``e`` evaluated left to right in the printers' order, its names ready
    at the times ``ready`` gives (0 if absent)."""
    if e.is_Symbol:
        return ready.get(e, 0)
    if e.is_Number or not e.args:
        return 0
    if (e.is_Add or e.is_Mul) and len(e.args) == 2 and not any(
            a.is_Pow and a.exp.is_Number and a.exp < 0 for a in e.args):
        return max(steps_as_printed(a, ready) for a in e.args) + (e.args[0] != -1)
    if e.is_Add or e.is_Mul:
        if e.is_Add:
            try:
                operands = ordered_terms(e)
            except NotSimple:
                operands = e.as_ordered_terms()
        else:
            operands = [a for a in e.as_ordered_factors() if a != -1]
        t = steps_as_printed(operands[0], ready)
        for a in operands[1:]:
            step = DIV_STEPS if (a.is_Pow and a.exp.is_Number and a.exp < 0) else 1
            t = max(t, steps_as_printed(a, ready)) + step
        return t
    if e.is_Pow:
        return _Tree.power_steps(e.exp, steps_as_printed(e.base, ready))
    return max(steps_as_printed(a, ready) for a in e.args) + CALL_STEPS


def _loop_ready(loop: ColumnLoop, ready: dict) -> None:
    """Enter the ready time of a column loop's targets: the latest of what it reads plus the
    longest chain of its body."""
    steps = max((ready.get(s, 0) for s in reads(loop)), default=0) + loop_depth(loop)
    ready.update({t: steps for t in defines(loop)})


def loop_depth(loop: ColumnLoop) -> int:
    """The longest chain of a column loop's body (its statements have two operands)."""
    depth: dict[sp.Symbol, int] = {s: 0 for s in loop.slots}
    longest = 0
    for st in loop.body:
        d = max((depth.get(s, 0) for s in st.expr.free_symbols), default=0) + 1
        depth[st.target] = d
        longest = max(longest, d)
    return longest


class _Names:
    """Fresh names for the partials: ``<target>_p<k>``, skipping any name the kernel has."""

    def __init__(self, k: Kernel) -> None:
        taken = {str(s) for p in k.inputs for s in p.elements}
        for st in k.body:
            taken |= {str(s) for s in defines(st)}
            if isinstance(st, ColumnLoop):
                taken |= {str(s) for s in st.locals}
        self.taken = taken
        self.counters: dict[sp.Symbol, count] = {}

    def fresh(self, target: sp.Symbol) -> sp.Symbol:
        numbers = self.counters.setdefault(target, count(1))
        while True:
            name = f"{target}_p{next(numbers)}"
            if name not in self.taken:
                self.taken.add(name)
                return symbol(name)


class _Tree:
    """The regrouping of one statement: its new expression and the partials it needs."""

    def __init__(self, ready: dict, names: _Names, target: sp.Symbol) -> None:
        self.ready = ready
        self.names = names
        self.target = target
        self.partials: list[Assign] = []

    # --- any node -------------------------------------------------------------------------

    def node(self, e: sp.Expr) -> tuple[sp.Expr, int]:
        """(the node with its sums and products regrouped, its ready time)."""
        if e.is_Symbol:
            return e, self.ready.get(e, 0)
        if e.is_Number or not e.args:
            return e, 0
        if e.is_Add:
            return self.add(e)
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            return self.power(e)
        args = [self.node(a) for a in e.args]        # a call's arguments do not merge
        return e.func(*(a for a, _ in args)), max(t for _, t in args) + CALL_STEPS

    def operand(self, e: sp.Expr) -> tuple[sp.Expr, int]:
        """A node that must stay one operand of its parent: a sum or a product that would
        merge into the parent (or have a number distributed over it) is named."""
        expr, t = self.node(e)
        if expr.is_Add or (expr.is_Mul and not _signed_symbol(expr)):
            return self.name(expr), t
        return expr, t

    def name(self, e: sp.Expr) -> sp.Symbol:
        s = self.names.fresh(self.target)
        self.partials.append(Assign(s, e))
        return s

    # --- sums -----------------------------------------------------------------------------

    def add(self, e: sp.Add) -> tuple[sp.Expr, int]:
        """Terms (sign, operand) combined two at a time, earliest first; a partial keeps a
        positive value and its sign stays with it."""
        items = []
        for i, term in enumerate(e.args):
            sign, core = _split_sign(term)
            expr, t = self.term(core)
            items.append((t, i, sign, expr))
        if len(items) <= 2:
            return _signed_sum(items), max(t for t, *_ in items) + 1
        heapq.heapify(items)
        order = count(len(items))
        while len(items) > 2:
            t1, _, s1, x1 = heapq.heappop(items)
            t2, _, s2, x2 = heapq.heappop(items)
            if s1 == s2:
                partial, sign = self.name(sp.Add(x1, x2)), s1
            else:
                plus, minus = (x1, x2) if s1 > 0 else (x2, x1)
                partial, sign = self.name(sp.Add(plus, -minus)), 1
            heapq.heappush(items, (max(t1, t2) + 1, next(order), sign, partial))
        return _signed_sum(items), max(t for t, *_ in items) + 1

    def term(self, core: sp.Expr) -> tuple[sp.Expr, int]:
        """One term of a sum: a product may stay inline (it does not merge into a sum)."""
        if core.is_Mul:
            return self.mul(core)
        return self.operand(core)

    # --- products -------------------------------------------------------------------------

    def mul(self, e: sp.Mul) -> tuple[sp.Expr, int]:
        """Factors combined two at a time, earliest first (a -1 is a sign, not a factor). A
        product with a division keeps its form; only its operands are regrouped."""
        sign = -1 if e.args[0] == -1 else 1
        factors = [a for a in e.args if a != -1]
        if any(f.is_Pow and f.exp.is_Number and f.exp < 0 for f in factors):
            args = [self.operand(a) for a in e.args]
            steps = max(t for _, t in args) + DIV_STEPS + len(args) - 2
            return sp.Mul(*(a for a, _ in args)), steps
        items = [(t, i, x) for i, (x, t) in enumerate(self.operand(f) for f in factors)]
        heapq.heapify(items)
        order = count(len(items))
        while len(items) > 2:
            t1, _, x1 = heapq.heappop(items)
            t2, _, x2 = heapq.heappop(items)
            heapq.heappush(items, (max(t1, t2) + 1, next(order), self.name(sp.Mul(x1, x2))))
        steps = max(t for t, *_ in items) + (len(items) - 1)
        return sign * sp.Mul(*(x for *_, x in items)), steps

    def power(self, e: sp.Pow) -> tuple[sp.Expr, int]:
        base, t = self.operand(e.base)
        return sp.Pow(base, e.exp), self.power_steps(e.exp, t)

    @staticmethod
    def power_steps(x: sp.Expr, t: int) -> int:
        """Ready time of ``base**x`` for a base ready at ``t``."""
        if x.is_Integer and 2 <= x <= 4:
            return t + int(x) - 1
        if x.is_Integer and -4 <= x <= -1:
            return t + DIV_STEPS - int(x) - 1
        if x == sp.S.Half:
            return t + SQRT_STEPS
        if x == -sp.S.Half:
            return t + SQRT_STEPS + DIV_STEPS
        return t + CALL_STEPS


def _split_sign(term: sp.Expr) -> tuple[int, sp.Expr]:
    """A term as (sign, term without a negative coefficient): ``-2*x`` -> (-1, 2*x)."""
    if term.is_Mul and term.args[0].is_Number and term.args[0] < 0:
        return -1, -term
    if term.is_Number and term < 0:
        return -1, -term
    return 1, term


def _signed_sum(items: list) -> sp.Expr:
    """The sum of at most two (ready time, order, sign, operand) items."""
    return sp.Add(*(x if sign > 0 else -x for _, _, sign, x in items))


def _signed_symbol(e: sp.Expr) -> bool:
    """``-x``: a negated name, which stays one operand."""
    return e.is_Mul and len(e.args) == 2 and e.args[0] == -1 and e.args[1].is_Symbol
