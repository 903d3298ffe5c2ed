"""The legs of a parallel mechanism as loops over the legs (docs/algorithms.md section 1.6.4).

A platform's kernel is built leg after leg: each leg's statements (named ``leg<k>_...``)
are the same computation with other constants. Written straight, the compiler runs them six
times in scalar registers. Here they become column loops (generator/ir.ColumnLoop) whose
columns are the legs, so a compiler evaluates two (SSE2), four (AVX) or eight legs at once in
vector lanes:

1. :func:`symbolic_legs`: the platform with every number of a leg's geometry that is not the
   same in every leg (joint frames, cut-joint frames and centres, branch, length scale)
   replaced by a symbol of that leg (``leg3_kc7``). Built on it, the legs' statements are the
   same expressions with other symbols; a number that is the same in every leg (a zero of a
   joint frame, a mass) still prunes as before.
2. :func:`leg_loops`: the statements of leg 1, its names written ``L_...``, form the body;
   what a leg's statements read from outside (its constants, its inputs, values of an earlier
   loop) are the slots, one column per leg. The statements are split in levels: a leg
   statement that reads a mechanism-wide value computed from the legs (udot, from the
   reduction) goes into a later loop than the values it was computed from; a call
   (``sin``, ``cos``, and ``atan2``, ``Max``, ``Min``: the project's ``mg_atan2``,
   ``mg_fmax``, ``mg_fmin`` vectorise alone with AVX2, but merged into a large body they stop
   GCC vectorising that body on SSE2, where no select of 64-bit masks vectorises) gets a loop
   of its own between two vector loops. Each leg's checks become results of the loop, checked after it in the
   kernel's order (the first failing check is the same: the loop computes on with NaN).
   Within a body, statements of the slot constants alone are evaluated per leg at generation
   (new constant slots), common subexpressions are named, and every statement is split into
   operations of two operands, so that each column runs the IEEE operations of its unrolled
   form (passes/loops.py) in the same order: the loop and its unrolled form agree bit for bit.
3. Legs that are not the same computation (another pivot order of a closure matrix at home,
   another leg type) raise :class:`LegLoopError`; the kernel then stays straight-line
   (:func:`with_leg_loops`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import Callable

import sympy as sp

from mechgen.generator.ir import Assign, Check, ColumnLoop, Kernel, Port, defines, reads, symbol
from mechgen.generator.passes.cse import common_subexpressions
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code
from mechgen.generator.families.parallel.platform import Platform
from mechgen.generator.scalar import _count, counting_dense

_LEG = re.compile(r"leg(\d+)")
_LEG_NAME = re.compile(r"leg(\d+)_")


class LegLoopError(ValueError):
    """The legs' statements are not one computation with other constants."""


# --- 1. symbolic legs ----------------------------------------------------------------------

def symbolic_legs(pf: Platform) -> tuple[Platform, dict[sp.Symbol, sp.Expr]]:
    """``pf`` with every leg number that differs between the legs a symbol of that leg, and
    the symbols' values. Raises LegLoopError when the legs differ in kind (type, joints)."""
    legs = pf.legs
    if len({(leg.type, leg.m, leg.n, tuple(j.kind for j in leg.chain.joints),
             tuple(j.axis for j in leg.chain.joints)) for leg in legs}) != 1:
        raise LegLoopError("the legs are not all of one type")
    values: dict[sp.Symbol, sp.Expr] = {}

    def field(vals: list) -> list:
        vals = [sp.sympify(v) for v in vals]
        if all(v == vals[0] for v in vals):
            return vals
        if not all(v.is_Number for v in vals):
            raise LegLoopError(f"a leg quantity differs between legs and is not a number: {vals}")
        i = len(values) // len(legs)
        out = [symbol(f"{leg.name}_kc{i}") for leg in legs]
        values.update(zip(out, vals))
        return out

    def vec(get) -> list[tuple]:
        cols = [field([get(leg)[i] for leg in legs]) for i in range(3)]
        return [tuple(c[k] for c in cols) for k in range(len(legs))]

    def mat(get) -> list[tuple]:
        cols = [[field([get(leg)[i][j] for leg in legs]) for j in range(3)] for i in range(3)]
        return [tuple(tuple(cols[i][j][k] for j in range(3)) for i in range(3))
                for k in range(len(legs))]

    if any(tuple(leg.limits.items()) != tuple(legs[0].limits.items()) for leg in legs):
        raise LegLoopError("the legs' joint limits differ")
    fields = {name: vec(lambda leg, n=name: getattr(leg, n)) for name in ("l_L", "l_C")}
    fields |= {name: mat(lambda leg, n=name: getattr(leg, n)) for name in ("gamma_L", "gamma_C")}
    joints = [[] for _ in legs]
    for j in range(legs[0].n):
        ls = vec(lambda leg: leg.chain.joints[j].l)
        gs = mat(lambda leg: leg.chain.joints[j].gamma)
        for k, leg in enumerate(legs):
            joints[k].append(replace(leg.chain.joints[j], l=ls[k], gamma=gs[k]))
    branch = field([leg.branch for leg in legs])
    l_ref = field([leg.l_ref for leg in legs])
    out = [replace(leg, chain=replace(leg.chain, joints=joints[k]), branch=branch[k],
                   l_ref=l_ref[k], **{name: v[k] for name, v in fields.items()})
           for k, leg in enumerate(legs)]
    return replace(pf, legs=out), values


# --- 2. the loops ----------------------------------------------------------------------------

def _leg_of(name: str) -> int | None:
    m = _LEG_NAME.match(name)
    return int(m.group(1)) if m else None


@lru_cache(maxsize=1 << 16)
def _canonical(s: sp.Symbol) -> sp.Symbol:
    """leg3_x -> L_x, F_leg3 -> F_L: the name every leg's copy of a quantity shares."""
    return symbol(_LEG.sub("L", s.name, count=1)) if _LEG.search(s.name) else s


def _canonical_expr(e: sp.Expr) -> sp.Expr:
    return e.xreplace({s: _canonical(s) for s in e.free_symbols if _LEG.search(s.name)})


def _same_up_to_legs(a: sp.Expr, b: sp.Expr) -> bool:
    """``_canonical_expr(a) == _canonical_expr(b)``. Two trees whose nodes line up, symbols
    with the same canonical name, are equal canonically (renaming rebuilds both alike), and
    that is decided without building anything; otherwise (the renaming may reorder a sum's
    terms) the canonical expressions are built and compared."""
    return _line_up(a, b) or _canonical_expr(a) == _canonical_expr(b)


def _line_up(a: sp.Basic, b: sp.Basic) -> bool:
    if a.is_Symbol or b.is_Symbol:
        return a.is_Symbol and b.is_Symbol and _canonical(a) == _canonical(b)
    if a.is_Atom or b.is_Atom:
        return a == b
    return (a.func is b.func and len(a.args) == len(b.args)
            and all(_line_up(x, y) for x, y in zip(a.args, b.args)))


def _no_vector_form(node: sp.Basic) -> bool:
    """A call kept out of the large loop bodies: one the compiler cannot evaluate in vector
    lanes bit for bit (generator/simd.py), or one of the project's selects (mg_atan2,
    mg_fmax, mg_fmin), which vectorise alone but not inside a large body on SSE2."""
    if isinstance(node, (sp.Function, sp.Max, sp.Min)):
        return not isinstance(node, sp.Abs)
    return node.is_Pow and not node.exp.is_Integer and node.exp not in _ROOTS


_ROOTS = (sp.Rational(1, 2), sp.Rational(-1, 2))    # sqrt and 1/sqrt have vector forms


def _has_call(e: sp.Basic) -> bool:
    """``e`` has a node of :func:`_no_vector_form`."""
    return not e.is_Atom and (_no_vector_form(e) or any(_has_call(a) for a in e.args))


def _split_calls(k: Kernel) -> Kernel:
    """Each call with no vector form inside a leg's statement named on its own
    (``leg<k>_call<i>``), so that it can have a scalar loop of its own."""
    body, count = [], {}
    for st in k.body:
        leg = _leg_of(st.target.name) if isinstance(st, Assign) else None
        if leg is None or not _has_call(st.expr):
            body.append(st)
            continue
        def hoist(e: sp.Expr) -> sp.Expr:
            if e.is_Atom:
                return e
            e = e.func(*[hoist(a) for a in e.args])
            if _no_vector_form(e):
                i = count[leg] = count.get(leg, 0) + 1
                t = symbol(f"leg{leg}_call{i}")
                body.append(Assign(t, e))
                return t
            return e
        expr = hoist(st.expr)
        if isinstance(expr, sp.Symbol) and _leg_of(expr.name) == leg and \
                expr.name.startswith(f"leg{leg}_call"):
            body[-1] = Assign(st.target, body[-1].expr)     # the statement is the call itself
        else:
            body.append(Assign(st.target, expr))
    return k.with_body(body)


def _split_leg_sums(k: Kernel, n_legs: int) -> Kernel:
    """Each mechanism-wide sum over the legs of one computation per leg, such as an element
    of the reduced mass matrix Ac* = I_C + sum_k (J_k^T M_k J_k), with its per-leg part a
    statement of that leg (``leg<k>_sum_<target>``), so that the part is computed in the legs'
    loop, in vector lanes, and only the sum of the parts is left mechanism-wide. A sum's terms
    that read one leg each are grouped by leg; the sum is split when every leg has a group,
    the groups are the same computation up to the legs (:func:`_same_up_to_legs`) and a
    group is more than one name (a name alone is already the loop's result). A sum whose
    parts' names the kernel has already is left whole."""
    taken = {st.target.name for st in k.body if isinstance(st, Assign)} | {
        s.name for p in k.inputs for s in p.elements}
    body: list = []
    for st in k.body:
        parts = _leg_parts(st, n_legs)
        if parts is not None:
            names = [symbol(f"leg{g}_sum_{st.target.name}") for g in range(1, n_legs + 1)]
        if parts is None or any(t.name in taken for t in names):
            body.append(st)
            continue
        rest, per_leg = parts
        body += [Assign(t, e) for t, e in zip(names, per_leg)]
        body.append(Assign(st.target, sp.Add(*rest, *names)))
    return k.with_body(body)


def leg_groups(st, n_legs: int) -> tuple[list[sp.Expr], list[list[sp.Expr]]] | None:
    """(the terms of no single leg, each leg's terms, legs 1..n) of a mechanism-wide sum with
    terms of every leg (a term is a leg's when every leg name it reads is that leg's), or
    None for any other statement."""
    if not isinstance(st, Assign) or _LEG.search(st.target.name) or not st.expr.is_Add:
        return None
    groups: dict[int, list[sp.Expr]] = {}
    rest = []
    for term in st.expr.args:
        legs = {int(m.group(1)) for s in term.free_symbols for m in [_LEG.search(s.name)] if m}
        if len(legs) == 1:
            groups.setdefault(legs.pop(), []).append(term)
        else:
            rest.append(term)
    if sorted(groups) != list(range(1, n_legs + 1)):
        return None
    return rest, [groups[g] for g in range(1, n_legs + 1)]


def _leg_parts(st, n_legs: int) -> tuple[list[sp.Expr], list[sp.Expr]] | None:
    """(terms of no single leg, the part of each leg) of a splittable sum (as
    :func:`_split_leg_sums` describes), or None."""
    grouped = leg_groups(st, n_legs)
    if grouped is None:
        return None
    rest, groups = grouped
    per_leg = [sp.Add(*terms) for terms in groups]
    if per_leg[0].is_Symbol or not all(_same_up_to_legs(per_leg[0], e) for e in per_leg[1:]):
        return None
    return rest, per_leg


def _levels(k: Kernel, free: list[set]) -> tuple[list[tuple[int | None, float]], list[bool]]:
    """(leg, level) of every statement (``free``: the names each reads) and whether it is a
    scalar call.

    A leg statement's level is the loop it goes into: integers for vector loops, n + 1/2 for
    the scalar loop of calls between loops n and n + 1. A mechanism-wide statement's level is
    that of the latest loop it reads from (0: before every loop); it goes after that loop."""
    level: dict[sp.Symbol, float] = {}
    per_leg: set[sp.Symbol] = set()
    out, scalar = [], []
    for st, names in zip(k.body, free):
        leg = _leg_of(st.target.name) if isinstance(st, Assign) else None
        if isinstance(st, Check):
            legs = {_leg_of(s.name) for s in names if s in per_leg}
            leg = legs.pop() if len(legs) == 1 and not any(
                s in level and s not in per_leg and level[s] > 0 for s in names) else None
        is_call = isinstance(st, Assign) and leg is not None and _no_vector_form(st.expr)
        if leg is None:
            lv = max([level.get(s, 0) for s in names], default=0)
        else:
            need = 1.0
            for s in names:
                if s in per_leg:
                    need = max(need, float(int(level[s]) + 1) if level[s] % 1 else level[s])
                elif level.get(s, 0) > 0:
                    need = max(need, float(int(level[s]) + 1))
            lv = need + 0.5 if is_call else need
        if isinstance(st, Assign):
            level[st.target] = lv
            if leg is not None:
                per_leg.add(st.target)
        elif isinstance(st, ColumnLoop):        # a loop the kernel had (a tree's column
            for t in defines(st):               # solves): mechanism-wide, after what it reads
                level[t] = lv
        out.append((leg, lv))
        scalar.append(is_call)
    return out, scalar


def _binary(expr: sp.Expr, fresh: Callable[[], sp.Symbol], out: list[Assign]) -> sp.Expr:
    """``expr`` with every sum and product of more than two operands split into named
    two-operand statements appended to ``out`` (left to right), and x^(-1/2) as 1/sqrt(x)."""
    if expr.is_Atom:
        return expr
    args = [_binary(a, fresh, out) for a in expr.args]
    if expr.is_Pow and expr.exp == sp.Rational(-1, 2):     # 1/sqrt: C's pow() has no vector
        t = fresh()                                          # form; sqrt and / have
        out.append(Assign(t, sp.sqrt(args[0])))
        return 1 / t
    if expr.is_Add or expr.is_Mul:
        op = sp.Add if expr.is_Add else sp.Mul
        negative = expr.is_Mul and any(a == -1 for a in args)
        ops = [a for a in args if not (expr.is_Mul and a == -1)]
        while len(ops) > 2:
            t = fresh()
            out.append(Assign(t, op(ops[0], ops[1])))
            ops = [t] + ops[2:]
        e = op(*ops)
        return -e if negative else e
    return expr.func(*args)


def _number(v: sp.Expr) -> sp.Expr:
    """A per-leg constant evaluated at generation: an exact integer stays, anything else is
    rounded once to a double from 40 digits (the same on every machine)."""
    v = sp.sympify(v)
    return v if v.is_Integer else sp.Float(float(sp.N(v, 40)), 17)


def _body(name: str, slots: list, columns: list[list], body: list[Assign],
          results: list[sp.Symbol]) -> tuple[list, list[list], list[Assign], list[sp.Symbol]]:
    """Constant statements folded into slots, CSE, two-operand statements, local names
    prefixed ``name``: the loop's (slots, columns, body, results)."""
    constant = {s for i, s in enumerate(slots) if all(sp.sympify(c[i]).is_Number for c in columns)}
    kept = []
    index = {s: i for i, s in enumerate(slots)}
    for st in body:
        fs = st.expr.free_symbols
        if fs and fs <= constant and st.target not in results:
            index[st.target] = len(slots)
            slots.append(st.target)
            constant.add(st.target)
            for c in columns:
                c.append(_number(st.expr.xreplace({s: c[index[s]] for s in fs})))
            continue
        kept.append(st)
    pseudo = Kernel("body", "", (Port("slots", (len(slots),), tuple(slots)),),
                    (Port("results", (len(results),), tuple(results)),), tuple(kept))
    pseudo = common_subexpressions(pseudo)
    shared = [st for st in pseudo.body]
    defined = {st.target for st in shared}
    for r, e in zip(results, pseudo.outputs[0].elements):
        if r not in defined:
            shared.append(Assign(r, sp.sympify(e)))
    count = [0]

    def fresh() -> sp.Symbol:
        count[0] += 1
        return symbol(f"{name}t{count[0]}")
    lowered: list[Assign] = []
    for st in shared:
        lowered.append(Assign(st.target, _binary(st.expr, fresh, lowered)))
    local = {s: symbol(name + s.name[2:] if s.name.startswith("L_") else name + s.name)
             for s in [*slots, *(st.target for st in lowered)] if not s.name.startswith(name)}
    lowered = [Assign(local.get(st.target, st.target), st.expr.xreplace(local)) for st in lowered]
    return ([local.get(s, s) for s in slots], columns, lowered,
            [local.get(r, r) for r in results])


def _same_computation(first: list, other: list, g: int) -> None:
    """Leg g's statements are leg 1's with other names and constants, except those of leg 1
    that leg g shares (the recorder named an expression of no leg constant once: leg g reads
    leg1_x, canonically the same L_x). LegLoopError otherwise."""
    shared: set[sp.Symbol] = set()
    i = 0
    for l1, s1 in first:
        sg = other[i][1] if i < len(other) else None
        if sg is not None and type(s1) is type(sg) and other[i][0] == l1 and \
                _same_up_to_legs(s1.expr, sg.expr) and \
                (isinstance(s1, Check) or _canonical(s1.target) == _canonical(sg.target)):
            i += 1
            continue
        own = {s for s in s1.expr.free_symbols if _LEG.search(s.name)} - shared
        if isinstance(s1, Check) or own:
            raise LegLoopError(f"leg{g}: {sg} is not leg1's {s1}")
        shared.add(s1.target)           # an expression of no leg quantity: the same value
    if i != len(other):
        raise LegLoopError(f"leg{g}: {len(other) - i} statements more than leg1")


def leg_loops(k: Kernel, values: dict[sp.Symbol, sp.Expr], n_legs: int) -> Kernel:
    """``k`` (built on :func:`symbolic_legs`) with its leg statements in loops over the legs
    (module docstring); LegLoopError when the legs are not one computation."""
    k = _split_calls(_split_leg_sums(remove_dead_code(drop_unguarded_checks(k)), n_legs))
    free = [reads(st) for st in k.body]
    where, scalar = _levels(k, free)
    per_leg: dict[int, list] = {g: [] for g in range(1, n_legs + 1)}
    for (leg, lv), st in zip(where, k.body):
        if leg is not None:
            if leg not in per_leg:
                raise LegLoopError(f"a statement of leg {leg} of {n_legs}")
            per_leg[leg].append((lv, st))
    first = per_leg[1]
    for g in range(2, n_legs + 1):
        _same_computation(first, per_leg[g], g)
    # the per-leg names read outside their loop: the loops' results
    level_of = {st.target: lv for (leg, lv), st in zip(where, k.body)
                if leg is not None and isinstance(st, Assign)}
    outside: set[sp.Symbol] = set()
    for (leg, lv), names in zip(where, free):
        for s in names:
            if s in level_of and (leg is None or level_of[s] != lv):
                outside.add(s)
    for p in k.outputs:
        outside |= {s for e in p.elements for s in sp.sympify(e).free_symbols if s in level_of}
    outside_any = {_canonical(s) for s in outside}
    original: dict[tuple[sp.Symbol, int], sp.Symbol] = {}    # (canonical, leg) -> name
    for s in {*(s for names in free for s in names),
              *(st.target for st in k.body if isinstance(st, Assign)), *values}:
        if _LEG.search(s.name):
            original[(_canonical(s), int(_LEG.search(s.name).group(1)))] = s
    taken = {s.name for st in k.body if isinstance(st, Assign) for s in [st.target]}
    loops: dict[float, ColumnLoop] = {}
    checks: dict[float, list[sp.Symbol]] = {}       # level -> check results, in order
    for lv in sorted({lv for lv, _ in first}):
        tag = f"L{str(lv).replace('.5', 'x').replace('.0', '')}_"
        body, results, chk = [], [], []
        for _, st in (x for x in first if x[0] == lv):
            if isinstance(st, Assign):
                body.append(Assign(_canonical(st.target), _canonical_expr(st.expr)))
                if _canonical(st.target) in outside_any:    # read outside in some leg
                    results.append(_canonical(st.target))
            else:
                t = symbol(f"L_check{tag[1:]}{len(chk) + 1}")
                body.append(Assign(t, _canonical_expr(st.expr)))
                results.append(t)
                chk.append(t)
        named = {st.target for st in body}
        slots = sorted({s for st in body for s in st.expr.free_symbols
                        if s not in named and any((s, g) in original for g in per_leg)},
                       key=lambda s: s.name)
        columns = []
        for g in range(1, n_legs + 1):
            if any((s, g) not in original for s in slots):
                raise LegLoopError(f"leg{g} has no value for a slot of level {lv}")
            columns.append([values.get(original[(s, g)], original[(s, g)]) for s in slots])
        slots_l, columns, body_l, results_l = _body(tag, slots, columns, body, results)
        targets = []
        for g in range(1, n_legs + 1):
            row = []
            for r in results:
                name = original.get((r, g))
                if name is None:            # a check's value: a new name of the leg
                    base = f"leg{g}_{r.name[2:]}"
                    nm, i = base, 1
                    while nm in taken:
                        i += 1
                        nm = f"{base}_{i}"
                    taken.add(nm)
                    name = original[(r, g)] = symbol(nm)
                row.append(name)
            targets.append(tuple(row))
        loops[lv] = ColumnLoop(tuple(slots_l), tuple(body_l), tuple(results_l),
                               tuple(tuple(c) for c in columns), tuple(targets),
                               batch_unrolled=True)
        checks[lv] = chk
    return _assemble(k, where, loops, checks, original, values)


def _assemble(k: Kernel, where, loops: dict, checks: dict, original: dict, values: dict) -> Kernel:
    """Mechanism-wide statements before (level 0) and after each loop, each loop, and every
    check after the loop or statement its value comes from, in the kernel's order."""
    order = sorted({0.0, *loops})
    slot = {lv: i for i, lv in enumerate(order)}
    blocks: list[list] = [[] for _ in range(2 * len(order))]      # loop + checks, statements
    seen: dict[tuple[int, float], int] = {}
    last = 0
    for (leg, lv), st in zip(where, k.body):
        if isinstance(st, ColumnLoop):
            blocks[2 * slot[lv] + 1].append(replace(st, columns=tuple(
                tuple(sp.sympify(e).xreplace(values) for e in c) for c in st.columns)))
            continue
        if isinstance(st, Assign):
            if leg is None:
                blocks[2 * slot[lv] + 1].append(
                    Assign(st.target, st.expr.xreplace(values)))
            continue
        if leg is None:
            pos = max(2 * slot[lv] + 1, last)
            st = Check(st.expr.xreplace(values), st.status, st.message)
        else:
            i = seen[(leg, lv)] = seen.get((leg, lv), -1) + 1
            st = Check(original[(checks[lv][i], leg)], st.status, st.message)
            pos = max(2 * slot[lv], last)
        blocks[pos].append(st)
        last = pos
    for lv, loop in loops.items():
        blocks[2 * slot[lv]].insert(0, loop)
    outputs = [replace(p, elements=tuple(sp.sympify(e).xreplace(values) for e in p.elements))
               for p in k.outputs]
    return k.with_body([st for b in blocks for st in b], outputs)


def with_leg_loops(build: Callable[..., Kernel], pf: Platform, build_type: type,
                   then: Callable[[Kernel], Kernel] | None = None) -> Kernel:
    """The kernel of ``then(build(pf, build_type))`` with its legs in loops (module docstring),
    or straight-line when the legs are not one computation. Only the symbolic legs are built
    when the loops form: their inputs are the straight kernel's with the numeric platform's
    parameters ``p`` (:func:`_numeric_inputs`), and their dense count is the straight build's
    (the matrix helpers count by shape, the leg's closed form by its formulas with the
    constants' values: kernels._with_values). ``then`` (a pass that counts no dense
    operations, such as forward derivatives) runs on the form returned only."""
    then = then or (lambda k: k)
    if len(pf.legs) < 2:
        return then(build(pf, build_type))
    try:
        symbolic, values = symbolic_legs(pf)
        symbolic_type = type("Symbolic" + build_type.__name__, (build_type,),
                             {"numeric": pf, "constants": values})
        with counting_dense() as dense:     # added to the caller's count once the loops form
            k = then(build(symbolic, symbolic_type))
        k = leg_loops(replace(k, inputs=_numeric_inputs(k, pf)), values, len(pf.legs))
    except (LegLoopError, TypeError):
        return then(build(pf, build_type))
    _count(**{key: getattr(dense, key) for key in ("adds", "muls", "divs", "sqrt", "trig")})
    return k


def _numeric_inputs(k: Kernel, pf: Platform) -> tuple[Port, ...]:
    """The inputs of ``k`` (built on :func:`symbolic_legs`) as the straight build has them:
    the same ports, but the parameters ``p`` of ``pf``, not the legs' constant symbols."""
    from mechgen.generator.families.parallel.kernels import ports   # (kernels imports this)
    numeric = ports(pf, [])                                          # (p,) or ()
    inputs = [q for port in k.inputs for q in (numeric if port.name == "p" else (port,))]
    return tuple(inputs) + (numeric if not any(p.name == "p" for p in k.inputs) else ())
