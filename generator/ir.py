"""The scalar IR: a kernel is its inputs, an ordered list of single assignments, its outputs.

Every statement is either ``Assign(target, expr)``, one flat scalar named once, or
``Check(expr, status)``: the kernel stops and returns ``status`` unless ``expr > 0``.
Outputs are expressions over inputs and assigned names (most are plain names or numbers).
Passes (``generator.passes``) take a kernel and return a new one; :func:`check_invariants`
runs after each.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod

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


Statement = Assign | Check


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


def _free_symbols(e: sp.Expr) -> set:
    return e.free_symbols


def _memo_free_symbols(e: sp.Expr, memo: dict) -> set:
    found = memo.get(e)
    if found is None:
        found = memo[e] = e.free_symbols
    return found
