"""Pair ``s = mg_sin(x)`` and ``c = mg_cos(x)`` of a printed C kernel into one ``mg_sincos``.

The C printer writes ``sin(x)`` and ``cos(x)`` as the project's ``mg_sin(x)`` and ``mg_cos(x)``
(templates/c/sincos.c.j2, docs/sincos.md). Both compute the argument reduction and the two
polynomials of ``mg_sincos``; a kernel that needs both of the same argument (the rotation of
every revolute joint: ``c1 = cos(q1)``, ``s1 = sin(q1)``) computes them once. This pass, run on
the printed body of a C kernel (``mechgen.generator.emit._kernel_context``), replaces the
first of the two statements by one entry

    {"assign": True, "sincos": {"sin": s, "cos": c, "arg": x}, "target": None, "expr": None}

(the template prints ``double s, c; mg_sincos(x, &s, &c);``) and drops the second. Every other
entry gets ``"sincos": None``. The argument is the same text in both statements, so its names
are defined before the first of them: the pair may move up to it. A lone ``mg_sin`` or
``mg_cos`` stays as it is (same routine, same bits).
"""

from __future__ import annotations

import re

_CALL = re.compile(r"mg_(?P<fn>sin|cos)\((?P<arg>.*)\)")


def whole_call(expr: str) -> tuple[str, str] | None:
    """``("sin", x)`` if ``expr`` is exactly ``mg_sin(x)`` (``cos`` likewise), else None."""
    m = _CALL.fullmatch(expr)
    if m is None:
        return None
    depth = 0
    for ch in m.group("arg"):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return None     # mg_sin(a) * mg_cos(b): the first call closes early
    return (m.group("fn"), m.group("arg")) if depth == 0 else None


def pair_sincos(body: list[dict]) -> list[dict]:
    """The body with each (sin, cos) pair of one argument computed by one ``mg_sincos``."""
    first: dict[str, dict[str, tuple[int, str]]] = {}   # arg -> fn -> (index, target)
    for i, st in enumerate(body):
        call = whole_call(st["expr"]) if st["assign"] else None
        if call is not None:
            first.setdefault(call[1], {}).setdefault(call[0], (i, st["target"]))
    at: dict[int, dict] = {}
    dropped: set[int] = set()
    for arg, fns in first.items():
        if len(fns) == 2:
            (i_s, sin), (i_c, cos) = fns["sin"], fns["cos"]
            at[min(i_s, i_c)] = {"sin": sin, "cos": cos, "arg": arg}
            dropped.add(max(i_s, i_c))
    out = []
    for i, st in enumerate(body):
        if i in at:
            out.append({"assign": True, "sincos": at[i], "target": None, "expr": None})
        elif i not in dropped:
            out.append({**st, "sincos": None})
    return out
