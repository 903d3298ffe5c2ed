"""Dead-expression removal by back-references from the outputs (paper 000, section 7, rule 6).

Walk the statements backwards from the outputs (and the checks, which guard them), marking
every name an expression uses; statements whose target is never marked are dropped. A column
loop (generator/ir.ColumnLoop) keeps the columns one of whose targets is marked, and its
whole body (every column runs the same body).
"""

from __future__ import annotations

import sympy as sp

from dataclasses import replace

from mechgen.generator.ir import Check, ColumnLoop, Kernel, reads


def remove_dead_code(k: Kernel) -> Kernel:
    live: set[sp.Symbol] = set()
    for port in k.outputs:
        for e in port.elements:
            live |= sp.sympify(e).free_symbols
    kept = []
    for st in reversed(k.body):
        if isinstance(st, ColumnLoop):
            keep = [c for c, targets in enumerate(st.targets) if live.intersection(targets)]
            if keep:
                st = replace(st, columns=tuple(st.columns[c] for c in keep),
                             targets=tuple(st.targets[c] for c in keep))
                live |= reads(st)
                kept.append(st)
            continue
        if isinstance(st, Check) or st.target in live:
            live |= st.expr.free_symbols
            kept.append(st)
    return k.with_body(reversed(kept))


def drop_unguarded_checks(k: Kernel) -> Kernel:
    """Keep only checks whose expression depends on something (a constant check is folded)."""
    body = []
    for st in k.body:
        if isinstance(st, Check) and st.expr.is_number:
            if not bool(st.expr > 0):
                raise ValueError(f"kernel {k.name}: check '{st.message}' fails for every input")
            continue
        body.append(st)
    return k.with_body(body)

