"""The legs of a tree as loops over the legs: a quadruped's four legs in vector lanes.

A legged robot's tree has one body (the trunk) carrying several legs that are the same chain
of joints with other numbers (hip offsets mirrored, inertias reflected). Written straight, a
kernel runs each leg's statements one leg after another in scalar registers. Here the legs'
statements become column loops (generator/ir.ColumnLoop), one column per leg, which a compiler
evaluates two (SSE2) or four (AVX2) legs at a time: the loops of the parallel mechanisms' legs
(generator/families/parallel/leg_loop.py, docs/algorithms.md section 1.6.4), whose
:func:`~mechgen.generator.families.parallel.leg_loop.leg_loops` does the looping. This module
brings a tree's kernel to the form it takes:

1. :func:`tree_legs`: the trunk and its legs, subtrees of one body with the same joints
   (kinds and axes) in the same order.
2. :func:`_owners`: a statement belongs to leg g when what it reads comes from leg g's
   inputs (its joints' q, qd, qdd, Q) and no other leg's, or when it reads no leg and leg g's
   statements are the only legs' that read it; one that several legs but not all read is
   copied into each; the rest is mechanism-wide (the trunk, the base, sums over the legs, and
   a kernel's own column loops: forward dynamics' derivatives' column solves).
3. Each leg's statements, in the kernel's order, must be leg 1's with other numbers: the
   same expressions once each sum's and product's terms are sorted by their shape and every
   number is read as a coefficient (:func:`shape`; a term without one has the coefficient 1,
   so x and -x are one shape). A coefficient that differs between the legs becomes a constant
   of each leg (``leg3_kc7``, one per set of values), one that is the same stays a number.
4. Each leg's statements are rebuilt from the shapes (leg 1's names written ``leg<g>_<name>``,
   a sine or cosine of a joint angle ``<name>_leg<g>``, left to the kernel's vectorised
   sine-cosine loop, and each leg input read through an alias ``<input>_leg<g>``) and handed
   to ``leg_loops``, which splits them into loops by level, evaluates the constants per leg,
   and keeps every column bit for bit its unrolled form.
5. :func:`_split_sums`: a mechanism-wide sum over the legs whose per-leg parts are leg 1's with
   other numbers (the trunk's composite inertia gathering each leg's, carried through the
   mirrored hip offsets) is split into one part per leg, computed in the legs' loop, and the
   sum of the parts.

Anything else (one leg with a statement more, a shape that differs) raises
:class:`LegLoopError`; :func:`with_tree_leg_loops` then returns the straight kernel. Measured
in docs/algorithms.md section 2.4.4.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

import sympy as sp

from mechgen.generator.families.parallel.leg_loop import (LegLoopError, _canonical, leg_groups,
                                                          leg_loops)
from mechgen.generator.ir import Assign, Check, ColumnLoop, Kernel, defines, reads, symbol
from mechgen.generator.model import Chain

LEG_INPUTS = ("q", "qd", "qdd", "Q")
"""Input ports indexed by joint (the last ``n`` elements of each: a quaternion base's q has one
more coordinate than joints)."""

Key = tuple
_FUNCTIONS: dict[str, type] = {}     # a shape's function (module.name) -> its SymPy class


def tree_legs(chain: Chain) -> list[list[int]] | None:
    """The legs (lists of joint numbers, depth first) of the body with the most children whose
    subtrees are the same joints in the same order, or None (fewer than two such children)."""
    children: dict[int, list[int]] = {}
    for j in range(1, chain.n + 1):
        children.setdefault(chain.parent[j - 1], []).append(j)

    def subtree(j: int) -> list[int]:
        return [j, *(k for c in children.get(j, []) for k in subtree(c))]

    def form(joints: list[int]) -> tuple:
        start = joints[0]
        return tuple((chain.joints[j - 1].kind, chain.joints[j - 1].axis,
                      chain.parent[j - 1] - start if j != start else None) for j in joints)

    best: list[list[int]] | None = None
    for body, kids in children.items():
        legs = [subtree(c) for c in kids]
        if len(legs) >= 2 and len({form(leg) for leg in legs}) == 1 and \
                (best is None or len(legs) > len(best)):
            best = legs
    return best


# --- shapes: an expression's structure, its numbers read as coefficients ---------------------

def shape(e: sp.Expr, name: Callable[[sp.Symbol], str]) -> tuple[Key, list[sp.Expr]]:
    """(shape, coefficients) of ``e``: symbols named by ``name`` (leg 1's names), sums' and
    products' parts sorted by shape, every number a coefficient in the order of the shape."""
    out: list[sp.Expr] = []
    return _shape_term(e, name, out), out


def _shape_term(e, name, out) -> Key:
    if e.is_Number:
        out.append(e)
        return ("1",)
    if e.is_Mul and e.args[0].is_Number:
        out.append(e.args[0])
        factors = e.args[1:]
    else:
        out.append(sp.S.One)
        factors = e.args if e.is_Mul else (e,)
    return ("M", *_in_order([_part(_shape_factor, f, name) for f in factors], out))


def _shape_factor(e, name, out) -> Key:
    if e.is_Symbol:
        return ("S", name(e))
    if e.is_Add:
        return ("A", *_in_order([_part(_shape_term, t, name) for t in e.args], out))
    if e.is_Pow:
        if not e.exp.is_Number:
            raise LegLoopError(f"a power with a symbolic exponent: {e}")
        return ("P", _shape_factor(e.base, name, out), sp.srepr(e.exp))   # exact
    if isinstance(e, sp.Function):
        f = f"{type(e).__module__}.{type(e).__qualname__}"
        _FUNCTIONS.setdefault(f, type(e))
        return ("F", f, *(_shape_term(a, name, out) for a in e.args))
    raise LegLoopError(f"no shape for {type(e).__name__}: {e}")


def _part(walk, e, name) -> tuple[Key, list]:
    own: list = []
    return walk(e, name, own), own


def _in_order(parts: list[tuple[Key, list]], out: list) -> list[Key]:
    parts.sort(key=lambda p: p[0])
    keys = [p[0] for p in parts]
    if len(set(keys)) != len(keys):
        raise LegLoopError("two parts of one shape: their order would depend on the numbers")
    for _, own in parts:
        out.extend(own)
    return keys


def rebuild(key: Key, coefficients: Iterator[sp.Expr],
            symbol_of: Callable[[str], sp.Expr]) -> sp.Expr:
    """The expression of a shape, its coefficients taken in order from ``coefficients`` and its
    symbols from ``symbol_of`` (a leg 1 name -> that leg's symbol)."""
    c = next(coefficients)
    if key == ("1",):
        return c
    return c * sp.Mul(*(_rebuild_factor(k, coefficients, symbol_of) for k in key[1:]))


def _rebuild_factor(key: Key, coefficients, symbol_of) -> sp.Expr:
    kind = key[0]
    if kind == "S":
        return symbol_of(key[1])
    if kind == "A":
        return sp.Add(*(rebuild(k, coefficients, symbol_of) for k in key[1:]))
    if kind == "P":
        return sp.Pow(_rebuild_factor(key[1], coefficients, symbol_of), sp.sympify(key[2]))
    return _FUNCTIONS[key[1]](*(rebuild(k, coefficients, symbol_of) for k in key[2:]))


# --- the kernel in the form of a platform's symbolic legs ------------------------------------

def _is_trig(e: sp.Expr, inputs: set) -> bool:
    """sin(x) or cos(x) of an input: left to the kernel's vectorised sine-cosine loop."""
    return isinstance(e, (sp.sin, sp.cos)) and e.args[0] in inputs


def _owners(k: Kernel, owner: dict[sp.Symbol, int],
            n_legs: int) -> tuple[Kernel, list[int | None]]:
    """``k`` with the statements some legs share copied into each, and the leg of each
    statement (None: mechanism-wide).

    Forwards: a statement that reads one leg's inputs or statements and no other leg's is that
    leg's. Backwards, for one that reads no leg's symbol at all (one that reads several legs'
    stays mechanism-wide: handed to one leg, its other legs' names would be read as that
    leg's own): if one leg's statements read it (and perhaps mechanism-wide ones: the loop
    then exports it), it is that leg's (the origin of a leg's first body: the trunk's values
    and that leg's constants); if the statements of several
    legs but not all read it (the recorder named an expression once: two legs with one hip
    offset), it is copied into each of them (its own name ``<name>_c<g>``, placed before the
    leg's first statement that reads it; the original stays if mechanism-wide statements read
    it), so that every leg computes what leg 1 computes, in its order. One that every leg
    reads (the trunk's velocity) stays mechanism-wide."""
    owner = dict(owner)
    names = [reads(st) for st in k.body]
    legs_read: list[set[int]] = []          # the legs each statement reads
    leg_of: list[int | None] = []
    for st, read in zip(k.body, names):
        gs = {owner[s] for s in read if s in owner}
        legs_read.append(gs)
        g = next(iter(gs)) if len(gs) == 1 and not isinstance(st, ColumnLoop) else None
        leg_of.append(g)
        if g is not None and isinstance(st, Assign):
            owner[st.target] = g
    readers: dict[sp.Symbol, set] = {}
    copies: dict[int, list[tuple[int, Assign]]] = {}     # statement -> its copies per leg
    for i in range(len(k.body) - 1, -1, -1):
        st = k.body[i]
        if isinstance(st, Assign) and not legs_read[i]:
            legs = readers.get(st.target, set()) - {None}
            if legs:
                if len(legs) == 1:
                    leg_of[i] = next(iter(legs))
                elif len(legs) < n_legs:
                    copies[i] = [(g, Assign(symbol(f"{st.target.name}_c{g}"), st.expr))
                                 for g in sorted(legs)]
                    for g, _ in copies[i]:
                        for s in st.expr.free_symbols:
                            readers.setdefault(s, set()).add(g)
                    if None not in readers.get(st.target, ()):
                        continue
        for s in names[i]:
            readers.setdefault(s, set()).add(leg_of[i])
    if not copies:
        return k, leg_of
    copy_of = {(k.body[i].target, g): c.target for i, cs in copies.items() for g, c in cs}
    pending = {c.target: (i, g, c) for i, cs in copies.items() for g, c in cs}
    body, legs_out = [], []

    def emit_copies(expr: sp.Expr) -> None:
        """The pending copies ``expr`` reads (and those they read), each before its reader."""
        for s in sorted(expr.free_symbols & pending.keys(), key=lambda s: pending[s][0]):
            if s in pending:
                _, g, c = pending.pop(s)
                c_expr = _read_copies(c.expr, g, copy_of)
                emit_copies(c_expr)
                body.append(Assign(c.target, c_expr))
                legs_out.append(g)
    for i, st in enumerate(k.body):
        if i in copies:
            if None in readers.get(st.target, ()):      # read by mechanism-wide statements too
                body.append(st)
                legs_out.append(None)
            continue
        if isinstance(st, ColumnLoop):
            body.append(st)
            legs_out.append(None)
            continue
        g = leg_of[i]
        expr = _read_copies(st.expr, g, copy_of) if g is not None else st.expr
        emit_copies(expr)                 # a copy just before its leg's first reader
        body.append(Assign(st.target, expr) if isinstance(st, Assign)
                    else Check(expr, st.status, st.message))
        legs_out.append(g)
    first_copy = {}
    for (t, g), c in sorted(copy_of.items(), key=lambda kv: (kv[0][0].name, kv[0][1])):
        first_copy.setdefault(t, c)
    outputs = tuple(replace(p, elements=tuple(sp.sympify(e).xreplace(first_copy)
                                              for e in p.elements)) for p in k.outputs)
    return replace(k.with_body(body), outputs=outputs), legs_out


def _read_copies(e: sp.Expr, g: int, copy_of: dict) -> sp.Expr:
    """``e`` of leg g reading that leg's copies."""
    sub = {s: copy_of[(s, g)] for s in e.free_symbols if (s, g) in copy_of}
    return e.xreplace(sub) if sub else e


ALIGN_WINDOW = 48
"""How far ahead in another leg's statements :func:`_align` looks for leg 1's next one."""


def _align(k: Kernel, per_leg: dict[int, list[int]], to_first: dict[sp.Symbol, str]
           ) -> tuple[dict[int, list[int]], list[Key], dict[int, list[list[sp.Expr]]]]:
    """The legs' statements that line up: (for each leg the indices of its statements, one
    per statement of leg 1 kept, in order; their shapes; each leg's coefficients).

    Leg 1's statements are taken in order; each other leg's next statement of the same shape
    is looked for among its next ALIGN_WINDOW (names mapped to leg 1's as they line up:
    ``to_first`` grows). Found in every leg, the statements line up and each leg's skipped
    ones stay mechanism-wide; missing in one, leg 1's statement stays mechanism-wide (a
    computation that treats one leg apart, as L^T D L did while it added the legs' updates
    of the trunk in one running sum, leg 1's last). A statement left out is computed once, straight,
    reading the loops' results; the statements that read it then differ in shape from their
    like in the other legs and stay out too."""
    legs = sorted(per_leg)
    out: dict[int, list[int]] = {g: [] for g in legs}
    coefficients: dict[int, list[list[sp.Expr]]] = {g: [] for g in legs}
    shapes: list[Key] = []
    ptr = {g: 0 for g in legs}
    for i1 in per_leg[1]:
        s1 = k.body[i1]
        key, c1 = _shape_or_none(s1.expr, lambda s: s.name)
        if key is None:
            continue
        found: dict[int, tuple[int, list]] = {}
        for g in legs[1:]:
            idx = per_leg[g]
            for j in range(ptr[g], min(ptr[g] + ALIGN_WINDOW, len(idx))):
                sg = k.body[idx[j]]
                if type(sg) is not type(s1) or \
                        (isinstance(s1, Check) and sg.status != s1.status):
                    continue
                key_g, cg = _shape_or_none(sg.expr, lambda s: to_first.get(s, s.name))
                if key_g == key:
                    found[g] = (j, cg)
                    break
            if g not in found:
                break
        if len(found) != len(legs) - 1:
            continue
        out[1].append(i1)
        coefficients[1].append(c1)
        for g, (j, cg) in found.items():
            i = per_leg[g][j]
            out[g].append(i)
            coefficients[g].append(cg)
            if isinstance(s1, Assign):
                to_first[k.body[i].target] = s1.target.name
            ptr[g] = j + 1
        shapes.append(key)
    return out, shapes, coefficients


def _shape_or_none(e: sp.Expr, name: Callable[[sp.Symbol], str]) -> tuple[Key | None, list]:
    """:func:`shape`, or (None, []) for an expression with two parts of one shape."""
    try:
        return shape(e, name)
    except LegLoopError:
        return None, []


def leg_inputs(k: Kernel, chain: Chain, legs: list[list[int]]
               ) -> tuple[dict[sp.Symbol, int], dict[sp.Symbol, sp.Symbol]]:
    """({a leg input: its leg, 1-based}, {a leg input: leg 1's input in its place}) for the
    joint-indexed inputs (:data:`LEG_INPUTS`) of ``k``."""
    owner: dict[sp.Symbol, int] = {}
    first: dict[sp.Symbol, sp.Symbol] = {}
    for port in k.inputs:
        if port.name in LEG_INPUTS:
            off = len(port.elements) - chain.n
            for g, leg in enumerate(legs, start=1):
                for j, j1 in zip(leg, legs[0]):
                    owner[port.elements[j - 1 + off]] = g
                    first[port.elements[j - 1 + off]] = port.elements[j1 - 1 + off]
    return owner, first


def loop_form(k: Kernel, chain: Chain) -> tuple[Kernel, dict[sp.Symbol, sp.Expr], int]:
    """(``k`` with its legs' statements named and built as leg_loops expects, the values of
    the legs' constants, the number of legs); LegLoopError when the legs are not one
    computation (module docstring, steps 2-4)."""
    legs = tree_legs(chain)
    if legs is None:
        raise LegLoopError("no body carries two legs of the same joints")
    names = {s for p in k.inputs for s in p.elements} | \
        {s for st in k.body for s in (*defines(st), *reads(st))}
    if any("leg" in s.name for s in names):
        raise LegLoopError("a name with 'leg' in it (the loops' names would be ambiguous)")
    owner, first = leg_inputs(k, chain, legs)
    inputs = set(owner)
    k, leg_of = _owners(k, owner, len(legs))
    per_leg: dict[int, list[int]] = {g: [] for g in range(1, len(legs) + 1)}
    for i, g in enumerate(leg_of):
        if g is not None:
            per_leg[g].append(i)
    # shapes: leg g's statements against leg 1's, names mapped to leg 1's as they line up
    to_first: dict[sp.Symbol, str] = {s: f.name for s, f in first.items()}
    per_leg, shapes, coefficients = _align(k, per_leg, to_first)
    if not per_leg[1]:
        raise LegLoopError("no statement of leg 1 has its like in every other leg")
    # new names: leg<g>_<leg 1 name>; a joint's sine or cosine <name>_leg<g>
    trig = {n for n, i1 in enumerate(per_leg[1])
            if isinstance(k.body[i1], Assign) and _is_trig(k.body[i1].expr, inputs)}
    renamed: dict[sp.Symbol, sp.Symbol] = {}
    by_first: dict[tuple[str, int], sp.Symbol] = {}    # (leg 1 name, g) -> leg g's symbol
    for g, idx in per_leg.items():
        for n, i in enumerate(idx):
            st = k.body[i]
            if isinstance(st, Assign):
                t1 = k.body[per_leg[1][n]].target.name
                new = symbol(f"{t1}_leg{g}" if n in trig else f"leg{g}_{t1}")
                renamed[st.target] = by_first[(t1, g)] = new
    aliases: list[Assign] = []
    for s, f in sorted(first.items(), key=lambda kv: (owner[kv[0]], kv[0].name)):
        alias = symbol(f"{f.name}_leg{owner[s]}")
        by_first[(f.name, owner[s])] = alias
        aliases.append(Assign(alias, s))
    values: dict[sp.Symbol, sp.Expr] = {}
    constant: dict[tuple, list[sp.Symbol]] = {}     # the legs' values -> their symbols
    rebuilt: dict[int, Assign | Check] = {}
    for n, key in enumerate(shapes):
        columns = list(zip(*(coefficients[g][n] for g in per_leg)))
        slots = _leg_constants(columns, constant, values)
        for g, idx in per_leg.items():
            st = k.body[idx[n]]
            if n in trig:
                rebuilt[idx[n]] = Assign(renamed[st.target], st.expr)
                continue
            expr = rebuild(key, iter([s[g - 1] for s in slots]),
                           lambda name, g=g: by_first.get((name, g), symbol(name)))
            rebuilt[idx[n]] = Assign(renamed[st.target], expr) if isinstance(st, Assign) \
                else Check(expr, st.status, st.message)
    body = list(aliases)
    for i, st in enumerate(k.body):
        if i in rebuilt:
            body.append(rebuilt[i])
        elif isinstance(st, ColumnLoop):     # a tree's column solves: mechanism-wide
            body.append(replace(st, body=tuple(Assign(b.target, b.expr.xreplace(renamed))
                                               for b in st.body),
                                columns=tuple(tuple(sp.sympify(e).xreplace(renamed) for e in c)
                                              for c in st.columns)))
        elif isinstance(st, Assign):
            body.append(Assign(st.target, st.expr.xreplace(renamed)))
        else:
            body.append(Check(st.expr.xreplace(renamed), st.status, st.message))
    body = _split_sums(body, len(legs), constant, values)
    outputs = tuple(replace(p, elements=tuple(sp.sympify(e).xreplace(renamed)
                                              for e in p.elements)) for p in k.outputs)
    return replace(k.with_body(body), outputs=outputs), values, len(legs)


def _leg_constants(columns: list[tuple], constant: dict[tuple, list[sp.Symbol]],
                   values: dict[sp.Symbol, sp.Expr]) -> list[list[sp.Expr]]:
    """Each leg's value of each coefficient (``columns``: one tuple of the legs' numbers per
    coefficient): the number where every leg has it, else a constant of each leg
    (``leg<g>_kc<n>``, one per set of values, recorded in ``constant`` and ``values``)."""
    slots = []
    for col in columns:
        if all(c == col[0] for c in col):
            slots.append([col[0]] * len(col))
            continue
        if col not in constant:
            constant[col] = [symbol(f"leg{g}_kc{len(constant)}") for g in range(1, len(col) + 1)]
            values.update(zip(constant[col], col))
        slots.append(constant[col])
    return slots


def _split_sums(body: list, n_legs: int, constant: dict[tuple, list[sp.Symbol]],
                values: dict[sp.Symbol, sp.Expr]) -> list:
    """Step 5: a mechanism-wide sum whose terms group by leg into one sum per leg that is leg
    1's with other numbers (the trunk's composite inertia, the legs' inertias carried into the
    trunk's frame through mirrored hip offsets) becomes a statement of each leg
    (``leg<g>_sum_<target>``, its numbers constants of the leg where they differ) and the sum
    of those parts and the other terms. The parts then run in the legs' loop, in vector
    lanes; the operations are the same. (The platforms' loops split such sums only where the
    legs' parts are equal up to the legs' names: their numbers are symbols already.)"""
    taken = {st.target.name for st in body if isinstance(st, Assign)}
    out: list = []
    for st in body:
        parts = _leg_sum_parts(st, n_legs)
        if parts is None:
            out.append(st)
            continue
        names = [symbol(f"leg{g}_sum_{st.target.name}") for g in range(1, n_legs + 1)]
        if any(t.name in taken for t in names):
            out.append(st)
            continue
        rest, groups = parts
        shaped = [_shape_or_none(e, lambda s: _canonical(s).name) for e in groups]
        key = shaped[0][0]
        if key is None or any(kg != key for kg, _ in shaped):
            out.append(st)
            continue
        slots = _leg_constants(list(zip(*(c for _, c in shaped))), constant, values)
        for g, (e, t) in enumerate(zip(groups, names), start=1):
            own = {_canonical(s).name: s for s in e.free_symbols}     # every name of the shape
            out.append(Assign(t, rebuild(key, iter([s[g - 1] for s in slots]), own.__getitem__)))
        out.append(Assign(st.target, sp.Add(*rest, *names)))
    return out


def _leg_sum_parts(st, n_legs: int) -> tuple[list[sp.Expr], list[sp.Expr]] | None:
    """(the terms of no one leg, each leg's sum of its terms) of a mechanism-wide sum whose
    terms include a sum of two terms or more of every leg; None for any other statement."""
    grouped = leg_groups(st, n_legs)
    if grouped is None or any(len(terms) < 2 for terms in grouped[1]):
        return None
    rest, groups = grouped
    return rest, [sp.Add(*terms) for terms in groups]


def tree_leg_loops(k: Kernel, chain: Chain) -> Kernel:
    """``k`` with its legs in loops over the legs; LegLoopError when they are not one
    computation."""
    form, values, n_legs = loop_form(k, chain)
    return leg_loops(form, values, n_legs)


def with_tree_leg_loops(build: Callable[[Chain], Kernel]) -> Callable[[Chain], Kernel]:
    """A builder whose kernel has its legs in loops where :func:`tree_leg_loops` can, the
    straight kernel elsewhere. A builder with alternative forms (generator/pipeline.choice)
    keeps them, each with its legs in loops, chosen by the operations the baseline target
    runs (pipeline.lane_ops: a loop's body once per two legs), not by their number: a form
    with a few operations fewer whose legs do not all loop would lose (HyQ on the body twist,
    before L^T D L summed its trunk's updates per leg: the articulated-body form's 4605
    operations ran in 516 ns at -O3, L^T D L's 4271 in 1129 ns)."""
    def looped(chain: Chain) -> Kernel:
        k = build(chain)
        try:
            return tree_leg_loops(k, chain)
        except LegLoopError:
            return k
    looped.__name__, looped.__doc__ = build.__name__, build.__doc__
    looped.__qualname__ = build.__qualname__
    candidates = getattr(build, "candidates", None)
    if candidates:
        looped.candidates = tuple(with_tree_leg_loops(c) for c in candidates)
        looped.lanes = True      # chosen by the operations the baseline target runs
    return looped
