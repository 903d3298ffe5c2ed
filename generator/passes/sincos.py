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
        call = whole_call(st["expr"]) if st["assign"] and st["expr"] else None
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


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LANES = 4
"""The gathered arrays are padded with zeros to a multiple of this, and the loop runs to
``MG_PADDED(count)`` (templates/c/sincos.c.j2): ``count`` rounded up to the target's doubles
per vector, 4 with AVX, 2 otherwise. So GCC's -O2 vectoriser (the "very cheap" cost model,
which takes no loop needing a scalar epilogue) vectorises it on either target, and an SSE2
build computes no more padding than 2 lanes need (running to 4 there cost ur5's forward
kinematics 10 ns per call, docs/sincos.md)."""


def identifiers(text: str) -> set[str]:
    """The identifiers of a printed C expression (function names included, which is harmless)."""
    return set(_NAME.findall(text))


def _trig(st: dict) -> dict | None:
    """``{"sin", "cos", "arg"}`` of a trigonometric entry (a pair or a lone ``mg_sin``/``mg_cos``
    statement; the missing one None), else None."""
    if st.get("sincos"):
        return st["sincos"]
    call = whole_call(st["expr"]) if st["assign"] and st.get("expr") else None
    if call is None:
        return None
    fn, arg = call
    return {"sin": st["target"] if fn == "sin" else None,
            "cos": st["target"] if fn == "cos" else None, "arg": arg}


def defined_names(st: dict) -> list[str]:
    """The names a printed body entry defines for the statements after it (a lone
    ``mg_sin``/``mg_cos`` statement: its target; a pair: both; a column loop: its targets)."""
    if st.get("loop"):
        return [t for col in st["loop"]["targets"] for t in col]
    if st.get("sincos"):
        return [n for n in (st["sincos"]["sin"], st["sincos"]["cos"]) if n]
    return [st["target"]] if st.get("target") else []


def _loop_names(loop: dict) -> set[str]:
    """Every name a column loop entry (mechgen.generator.emit._loop) prints."""
    return {loop["prefix"] or "", *loop["slots"], *(b["target"] for b in loop["body"]),
            *(t for col in loop["targets"] for t in col)}


def _free_prefix(body: list[dict], taken: set[str], base: str = "sc_") -> str:
    """A prefix no name of the kernel starts with (the gathered arrays and the loop index)."""
    for st in body:
        for key in ("target", "expr"):
            if st.get(key):
                taken |= identifiers(st[key])
        if st.get("sincos"):
            taken |= identifiers(" ".join(st["sincos"].values()))
        if st.get("loop"):
            taken |= _loop_names(st["loop"])
    prefix = base
    while any(name.startswith(prefix) for name in taken):
        prefix += "_"
    return prefix


def gather_sincos(body: list[dict], taken: set[str]) -> list[dict]:
    """The body (after :func:`pair_sincos`) with the sines and cosines of every argument known
    before any trigonometric result computed in ONE loop over ``mg_sincos_poly`` (docs/sincos.md,
    "Gathered sines and cosines").

    A trigonometric entry is gathered when its argument does not depend, through the
    statements before it, on the result of another sine or cosine. The statements its argument
    needs move up, in their order, ahead of one entry

        {"assign": True, "gather": {"prefix": P, "size": N, "count": n,
                                    "args": [x0, ..., 0.0, ...]}, ...}

    (the template declares ``P x[N], P s[N], P c[N]``, fills ``P x``, runs the ``omp simd``
    loop of ``mg_sincos_poly`` over the first ``MG_PADDED(n)`` lanes (n arguments rounded up to
    the target's vector width, <= N) and then ``mg_sincos`` again for every argument out of
    its range:
    the same bits as ``mg_sincos``), followed by the reads ``s1 = P s[i]``, ``c1 = P c[i]``.
    The rest keeps its order; entries after the first column loop are not gathered (they may
    read its targets). ``taken``: the kernel's other names (ports). With fewer than two
    gathered entries the body is returned as it is (each entry with ``"gather": None``).
    """
    body = [{**st, "gather": None} for st in body]
    defined_by: dict[str, int] = {}
    for i, st in enumerate(body):
        for name in defined_names(st):
            defined_by[name] = i
    tainted: set[str] = set()       # names computed from a sine or cosine
    gathered: list[int] = []
    for i, st in enumerate(body):
        if st.get("loop"):
            break       # only what comes before the first column loop is gathered
        trig = _trig(st)
        text = trig["arg"] if trig else (st.get("expr") or "")
        from_trig = bool(identifiers(text) & tainted)
        if trig:
            if not from_trig:
                gathered.append(i)
            tainted |= {n for n in (trig["sin"], trig["cos"]) if n}
        elif from_trig and st.get("target"):
            tainted.add(st["target"])
    if len(gathered) < 2:
        return body
    needed: set[int] = set()        # statements the gathered arguments need
    todo = [n for i in gathered for n in identifiers(_trig(body[i])["arg"])]
    while todo:
        j = defined_by.get(todo.pop())
        if j is not None and j not in needed:
            needed.add(j)
            todo.extend(identifiers(body[j]["expr"]))
    prefix = _free_prefix(body, set(taken))
    args = [_trig(body[i])["arg"] for i in gathered]
    size = -(-len(args) // LANES) * LANES
    padded = args + ["0.0"] * (size - len(args))
    gather = {"assign": True, "sincos": None, "target": None, "expr": None,
              "gather": {"prefix": prefix, "size": size, "count": len(args), "args": padded}}
    reads = [{"assign": True, "sincos": None, "gather": None, "target": name,
              "expr": f"{prefix}{part}[{lane}]"}
             for lane, i in enumerate(gathered)
             for name, part in ((_trig(body[i])["sin"], "s"), (_trig(body[i])["cos"], "c")) if name]
    taken = needed | set(gathered)
    rest = [st for i, st in enumerate(body) if i not in taken]
    return [body[i] for i in sorted(needed)] + [gather] + reads + rest
