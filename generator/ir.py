"""The scalar IR: a kernel is its inputs, an ordered list of single assignments, its outputs.

Every statement is ``Assign(target, expr)``, one flat scalar named once,
``Check(expr, status)``: the kernel stops and returns ``status`` unless ``expr > 0``, or
``ColumnLoop``: the same short list of assignments applied to each column of a small array
(docs/architecture.md, "The column loop").
Outputs are expressions over inputs and assigned names (most are plain names or numbers).
Passes (``generator.passes``) take a kernel and return a new one; :func:`check_invariants`
runs after each.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import Callable

import sympy as sp


def symbol(name: str) -> sp.Symbol:
    """All scalars of the IR are real SymPy symbols (one assumption set, so names compare)."""
    return sp.Symbol(name, real=True)


@dataclass(frozen=True)
class Assign:
    target: sp.Symbol
    expr: sp.Expr


@dataclass(frozen=True)
class Check:
    expr: sp.Expr
    status: int
    message: str = ""


@dataclass(frozen=True)
class ColumnLoop:
    """``for c in columns: slots = columns[c]; body; targets[c] = results``.

    ``slots``: the body's per-column inputs; ``body``: assignments over the slots, the body's
    own earlier names and names defined before the loop (the loop invariants, shared by every
    column); ``results``: the body's names whose values leave the loop; ``columns[c]``: the
    values of the slots in column c (expressions over names defined before the loop, most of
    them a name or 0); ``targets[c]``: the names column c's results get, defined after the
    loop like any assignment. Slots and body names are local to the loop (one value per
    column): nothing outside reads them. The columns are independent, so a compiler may
    evaluate several at once in vector lanes; every body statement is one operation of two
    operands (at most), so its value does not depend on the order in which a printer writes
    a sum, and the loop equals its unrolled form (passes/loops.unroll_loops) bit for bit."""

    slots: tuple[sp.Symbol, ...]
    body: tuple[Assign, ...]
    results: tuple[sp.Symbol, ...]
    columns: tuple[tuple[sp.Expr, ...], ...]
    targets: tuple[tuple[sp.Symbol, ...], ...]
    # the _batch twin's SIMD blocks (generator/simd.py) are planned from the unrolled form
    # (a loop over a platform's legs); otherwise a kernel with a loop keeps the plain batch
    batch_unrolled: bool = False

    @property
    def inputs(self) -> tuple[sp.Expr, ...]:
        """Every column value, column after column (what the loop reads from outside)."""
        return tuple(e for col in self.columns for e in col)

    @property
    def locals(self) -> tuple[sp.Symbol, ...]:
        """The slots and the body's names: one value per column, never read outside."""
        return (*self.slots, *(b.target for b in self.body))

    @property
    def assigned(self) -> tuple[sp.Symbol, ...]:
        """The names the loop defines for the rest of the kernel."""
        return tuple(t for col in self.targets for t in col)


Statement = Assign | Check | ColumnLoop


def reads(st: Statement) -> set:
    """The names a statement reads from the kernel (a loop: its column values and the
    invariants its body reads)."""
    if isinstance(st, ColumnLoop):
        local = set(st.locals)
        return set().union(*(sp.sympify(e).free_symbols for e in st.inputs),
                           *(b.expr.free_symbols - local for b in st.body))
    return st.expr.free_symbols


def defines(st: Statement) -> tuple[sp.Symbol, ...]:
    """The names a statement defines for the rest of the kernel."""
    if isinstance(st, ColumnLoop):
        return st.assigned
    return (st.target,) if isinstance(st, Assign) else ()


@dataclass(frozen=True)
class Port:
    """A kernel argument: a flat array of float64 named ``name`` with a logical shape."""

    name: str
    shape: tuple[int, ...]
    elements: tuple[sp.Expr, ...]  # input: the symbols; output: the expressions
    doc: str = ""

    @property
    def size(self) -> int:
        return prod(self.shape)


@dataclass(frozen=True)
class Kernel:
    name: str
    doc: str
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    body: tuple[Statement, ...]
    statuses: dict[int, str] = field(default_factory=dict)

    def with_body(self, body, outputs=None) -> "Kernel":
        return replace(self, body=tuple(body),
                       outputs=self.outputs if outputs is None else tuple(outputs))


class InvariantError(AssertionError):
    pass


def check_invariants(k: Kernel, free: dict | None = None) -> None:
    """Defined before use, assigned once, every output assigned, no unknown symbol, and
    every check's status declared (with its message) in the kernel's statuses.

    ``free`` (expression -> its free symbols), kept by the caller across the passes of one
    kernel, spares recomputing them for the statements a pass left unchanged."""
    free_symbols = _free_symbols if free is None else lambda e: _memo_free_symbols(e, free)
    defined: set[sp.Symbol] = set()
    for port in k.inputs:
        if len(port.elements) != port.size:
            raise InvariantError(f"{k.name}: input {port.name} has {len(port.elements)} "
                                 f"elements for shape {port.shape}")
        for s in port.elements:
            if s in defined:
                raise InvariantError(f"{k.name}: input symbol {s} appears twice")
            defined.add(s)
    for st in k.body:
        if isinstance(st, ColumnLoop):
            _check_loop(k.name, st, defined, free_symbols)
            continue
        missing = free_symbols(st.expr) - defined
        if missing:
            raise InvariantError(f"{k.name}: {sorted(map(str, missing))} used before definition")
        if isinstance(st, Check) and st.status not in k.statuses:
            raise InvariantError(f"{k.name}: a check returns status {st.status} "
                                 f"({st.message or 'no message'}), which the kernel does not "
                                 f"declare; declared: {sorted(k.statuses)}")
        if isinstance(st, Assign):
            if st.target in defined:
                raise InvariantError(f"{k.name}: {st.target} assigned twice")
            defined.add(st.target)
    for port in k.outputs:
        if len(port.elements) != port.size:
            raise InvariantError(f"{k.name}: output {port.name} size mismatch")
        for e in port.elements:
            missing = free_symbols(sp.sympify(e)) - defined
            if missing:
                raise InvariantError(f"{k.name}: output {port.name} uses undefined "
                                     f"{sorted(map(str, missing))}")


def _check_loop(kernel: str, loop: ColumnLoop, defined: set,
                free_symbols: Callable[[sp.Expr], set] = lambda e: e.free_symbols) -> None:
    """A loop's column values use defined names only, one value per slot; its body uses its
    slots, its earlier names and defined names, each assignment of at most two operands; its
    local names are new; one target per result and column, each assigned once."""
    where = f"{kernel}: column loop"
    missing = reads(loop) - defined
    if missing:
        raise InvariantError(f"{where}: {sorted(map(str, missing))} used before definition")
    local = set(loop.slots)
    if len(local) != len(loop.slots) or local & defined:
        raise InvariantError(f"{where}: a slot is named twice or like a kernel name")
    if len(loop.columns) != len(loop.targets):
        raise InvariantError(f"{where}: {len(loop.columns)} columns but "
                             f"{len(loop.targets)} rows of targets")
    if any(len(col) != len(loop.slots) for col in loop.columns):
        raise InvariantError(f"{where}: a column has not one value per slot")
    for st in loop.body:
        missing = free_symbols(st.expr) - defined - local
        if missing:
            raise InvariantError(f"{where}: {sorted(map(str, missing))} used before definition")
        if not binary(st.expr):
            raise InvariantError(f"{where}: {st.target} = {st.expr} has a sum or product of "
                                 f"more than two operands")
        if st.target in local or st.target in defined:
            raise InvariantError(f"{where}: {st.target} assigned twice")
        local.add(st.target)
    if not set(loop.results) <= local:
        raise InvariantError(f"{where}: a result is not computed by the loop")
    for col in loop.targets:
        if len(col) != len(loop.results):
            raise InvariantError(f"{where}: a column has not one target per result")
        for t in col:
            if t in defined or t in local:
                raise InvariantError(f"{kernel}: {t} assigned twice")
            defined.add(t)


def binary(e: sp.Expr) -> bool:
    """Every sum and product in ``e`` has at most two operands (a sign not counted): its
    value is then the same whatever the order a printer writes the operands in."""
    if e.is_Atom:
        return True
    if e.is_Add and len(e.args) > 2:
        return False
    if e.is_Mul and sum(1 for a in e.args if not (a.is_Number and a == -1)) > 2:
        return False
    return all(binary(a) for a in e.args)


def _free_symbols(e: sp.Expr) -> set:
    return e.free_symbols


def _memo_free_symbols(e: sp.Expr, memo: dict) -> set:
    found = memo.get(e)
    if found is None:
        found = memo[e] = e.free_symbols
    return found
