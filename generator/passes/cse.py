"""Optional common-subexpression elimination over the whole body (SymPy's ``cse``).

The recursion already names every matrix element, so what is left to share are products and
sums that several elements repeat (``c1*x`` in two rows, say). New names ``x0, x1, ...`` are
prefixed ``cse`` and each is placed right before its first use.
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.ir import Assign, Check, Kernel, symbol


def common_subexpressions(k: Kernel) -> Kernel:
    exprs = [st.expr for st in k.body]
    flat_out = [sp.sympify(e) for port in k.outputs for e in port.elements]
    taken = {str(s) for st in k.body if isinstance(st, Assign) for s in [st.target]}
    names = (symbol(f"cse{i}") for i in range(10**9) if f"cse{i}" not in taken)
    replacements, reduced = sp.cse(exprs + flat_out, symbols=names, order="none")
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
