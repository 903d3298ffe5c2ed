"""The plan of a C kernel's SIMD batch: blocks of W states, vectorised across the states.

The single-state kernel is a list of printed C lines (assignments, checks, outputs). Its
``_batch`` twin evaluates blocks of W consecutive states (``MG_SIMD_WIDTH``, chosen
at C compile time for the target, at most :data:`MAX_WIDTH`) with the same lines inside
``#pragma omp simd`` loops over the W lanes, so the compiler keeps one vector register per
variable and the W states advance together. Four things need care and are handled here:

- sine and cosine: the kernels call the project's ``mg_sincos``, ``mg_sin``, ``mg_cos``
  (templates/c/sincos.c.j2), whose polynomial path is plain arithmetic and vectorises bit for
  bit. Their libm fallback (an argument beyond ``MG_TRIG_BOUND``, NaN or inf) does not, so a
  vector loop calls the polynomial path only (``mg_sincos_poly``, ``mg_sin_poly``,
  ``mg_cos_poly``) and marks the lane when an argument is out of its range; a marked lane's
  state is then computed again by the single-state kernel, whose result it keeps;
- calls of the C library that have no vector form without ``-ffast-math`` (``pow``;
  ``atan2``, ``fmax`` and ``fmin`` are printed as the project's branch-free ``mg_atan2``,
  ``mg_fmax`` and ``mg_fmin``, which vectorise). Each
  call is cut out of its line (the text of the call, innermost first, replaced by a fresh
  name) and evaluated per lane in a scalar loop, so its value is the very one the
  single-state kernel computes;
- a check (``goto fail``): each lane keeps its first failing status instead (a branchless
  select), computes on, and the block's failed states get NaN outputs afterwards;
- the order of the lines: a line whose inputs come from a scalar call can only run after that
  call's loop. The lines are grouped in *stages* (vector loop k, then scalar loop k, then
  vector loop k+1, ...), each line in the earliest stage its inputs allow; checks stay in
  their order, so the first failing check of a state is the single-state kernel's.

A value crossing a stage is kept in an array of W doubles; everything else stays a local of
its loop. Replacing a call by a variable holding its result, and evaluating the same
arithmetic in vector lanes (IEEE operations, ``-ffp-contract=off``), changes no bit: the batch
equals the single-state kernel bitwise (``tests/test_simd_batch.py``).

Three choices of layout decide the speed (docs/architecture.md, "Batches across states";
measured with bench/simd_bench.py):

- the lanes' flags (status, trig range) are 64-bit integers, as wide as a double: with a
  32-bit flag in the loop GCC sizes its vectors for the int (8 x 32 bits = 256 bits), so every
  double of the block took two registers, and a large kernel spilled most of them;
- inputs and outputs go through ``[element][lane]`` copies of the block, filled and emptied by
  W x W transposes in registers (``mg_rows_to_block``, ``mg_block_to_rows`` in
  templates/c/simd_block.c.j2); the vector loops read and write them with whole-vector moves
  (a state's row is strided across lanes);
- in a vector loop each load, sine and cosine comes just before its first use, and each
  output or crossing value is stored as soon as it is computed (:func:`in_use_order`), so
  fewer values are live at once;
- an output element that is a number is written into the block's copy once per call, not by
  every block (:func:`block_outputs`): solo12's Jacobians over 256 states, 1,333 -> 460 ns per
  state (AVX2), their blocks having stored 1,443 constants of 1,836 elements each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from mechgen.generator.backends.c import streamed_outputs

MAX_WIDTH = 8
"""The most states per block. The lane count itself is ``MG_SIMD_WIDTH``, a macro of the
generated C fixed when it is compiled (templates/c/simd_block.c.j2: 8 with AVX-512, 4 with
AVX2, 0 = no blocks elsewhere), so the generated text is the same for every target; the block
buffers are sized for this many lanes (:data:`STACK_BYTES`)."""

SCALAR_CALLS = frozenset({"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "exp", "log",
                          "pow", "sinh", "cosh", "tanh", "fmax", "fmin", "hypot", "cbrt"})
"""C functions evaluated per lane: the compiler has no vector form that keeps the scalar
result bit for bit (``sqrt``, ``fabs`` and the arithmetic operators have one)."""

TRIG_CALLS = frozenset({"mg_sin", "mg_cos"})
"""The project's sine and cosine: vectorised by their polynomial path (:func:`poly_trig`)."""

VECTOR_CALLS = frozenset({"sqrt", "fabs", "mg_atan2", "mg_fmax", "mg_fmin"}) | TRIG_CALLS
"""Calls evaluated in vector lanes; ``mg_atan2``, ``mg_fmax`` and ``mg_fmin``
(templates/c/sincos.c.j2) are branch-free arithmetic on doubles and their bits, so they
vectorise bit for bit."""

STACK_BYTES = 256 * 1024
"""Largest block buffer (W-wide arrays of crossing values, inputs and outputs) a batch may put
on the stack; a kernel that needs more keeps the plain loop over the single-state kernel (so
a thread with a small stack is safe)."""

NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
"""A number as the printers write it (no sign)."""
TOKEN = re.compile(rf"(?P<num>{NUMBER})|(?P<name>[A-Za-z_]\w*)")
_OPEN = re.compile(r"\s*\(")
"""What follows a called name: blanks, then its opening parenthesis (matched in place, so a
long line is not copied once per name)."""
_VARIABLE = re.compile(rf"{NUMBER}|([A-Za-z_]\w*)\b(?!\s*\()")
"""A number (no group) or a whole name not followed by an opening parenthesis (group 1)."""
_DEPTH = {"(": 1, ")": -1}


class SimdPlanError(ValueError):
    """A printed line calls a function this module does not know how to batch."""


@dataclass
class Stage:
    """One vector loop over the lanes (``vector``) or one scalar loop (calls, per lane)."""
    vector: bool
    lines: list = field(default_factory=list)   # (kind, target/None, text, status, message)
    loads: list = field(default_factory=list)   # names read here: inputs and arrays
    stores: list = field(default_factory=list)  # names kept in arrays after this stage


@lru_cache(maxsize=1 << 17)
def names_in(text: str) -> tuple[str, ...]:
    """The identifiers of a printed C expression that are not called (variables), in order
    (memoised: the plan scans each line several times)."""
    return tuple(name for name in _VARIABLE.findall(text) if name)


def calls_in(text: str) -> list[tuple[str, int, int]]:
    """Every call ``f(...)`` in ``text``: (name, start, end after its closing parenthesis)."""
    out = []
    if "(" not in text:
        return out
    for m in TOKEN.finditer(text):
        name = m.group("name")
        opening = _OPEN.match(text, m.end()) if name else None
        if opening is None:
            continue
        open_at = opening.end() - 1
        depth = 0
        for j in range(open_at, len(text)):
            depth += _DEPTH.get(text[j], 0)
            if depth == 0:
                out.append((name, m.start(), j + 1))
                break
        else:
            raise SimdPlanError(f"unbalanced parentheses in {text!r}")
    return out


def hoist_calls(text: str, temps: dict[str, str], prefix: str) -> tuple[str, list[str]]:
    """``text`` with each scalar-only call replaced by a temporary, innermost calls first.

    ``temps`` maps a call's text to its temporary (shared by the whole kernel: one call text
    is one value, the lines being constant). Returns the new text and the temporaries it
    created, in the order they must be computed.
    """
    created = []
    while True:
        inner = [(n, a, b) for n, a, b in calls_in(text) if n in SCALAR_CALLS
                 and not any(m in SCALAR_CALLS for m, _, _ in calls_in(text[a:b])[1:])]
        for name, _, _ in calls_in(text):
            if name not in SCALAR_CALLS | VECTOR_CALLS:
                raise SimdPlanError(f"the C function {name}() in {text!r} has no SIMD rule")
        if not inner:
            return text, created
        name, a, b = inner[0]
        call = text[a:b]
        if call not in temps:
            temps[call] = f"{prefix}c{len(temps)}"
            created.append(call)
        text = text[:a] + temps[call] + text[b:]


def free_prefix(taken: set[str], base: str = "mg_") -> str:
    """A prefix no name of the kernel starts with: every name the batch adds starts with it."""
    prefix = base
    while any(name.startswith(prefix) for name in taken):
        prefix += "_"
    return prefix


def simd_plan(k: dict) -> dict:
    """The staged batch of a kernel context (``mechgen.generator.emit._kernel_context``).

    Returns ``{"prefix", "stages", "arrays", "inputs", "outputs", "has_checks", "trig",
    "blocks"}``: each stage a :class:`Stage` as a dict, its lines in the order they are
    printed (loads included, each with the values it ``stores`` for later stages);
    ``arrays`` the names kept in per-lane arrays across stages, ``inputs`` the input ports
    the vector loops read (copied into the block), ``outputs`` how each output port's copy is
    filled (:func:`block_outputs`); ``blocks`` False when the block buffers
    would exceed :data:`STACK_BYTES` (the batch then stays the plain loop). A kernel with a
    column loop gets no blocks either: its batch is the single-state kernel state after state
    (the loop itself is vectorised across its columns); a platform's loops over its legs ask
    for blocks planned from their unrolled form instead (``generator.emit._batch_context``).
    """
    if any(b.get("loop") for b in k["body"]):
        return {"prefix": free_prefix({p["name"] for p in (*k["inputs"], *k["outputs"])}),
                "blocks": False}
    inputs = {s["name"]: (p["name"], p["size"], s["index"])
              for p in k["inputs"] for s in p["used"]}
    taken = set(inputs) | {p["name"] for p in (*k["inputs"], *k["outputs"])} | {
        b["target"] for b in k["body"] if b["assign"] and not b.get("sincos")} | {
        b["sincos"][f] for b in k["body"] if b.get("sincos") for f in ("sin", "cos")}
    prefix = free_prefix(taken)
    temps: dict[str, str] = {}
    lines = []          # (kind, target, text, status, message), in program order
    for b in k["body"]:
        if b.get("sincos"):     # s, c = mg_sincos(x): a vector line with two targets
            text, created = hoist_calls(b["sincos"]["arg"], temps, prefix)
            lines += [("call", temps[c], c, None, None) for c in created]
            lines.append(("sincos", (b["sincos"]["sin"], b["sincos"]["cos"]), text, None, None))
            continue
        text, created = hoist_calls(b["expr"], temps, prefix)
        if b["assign"] and created and text == temps[created[-1]]:
            temps[created[-1]] = text = b["target"]     # c1 = cos(q1): the call's value is c1
        lines += [("call", temps[c], c, None, None) for c in created]
        if b["assign"] and text != b["target"]:
            lines.append(("assign", b["target"], text, None, None))
        elif not b["assign"]:
            lines.append(("check", None, text, b["status"], b["message"]))
    outputs = []
    for p in k["outputs"]:
        out = block_outputs(p)
        outputs.append(out)
        for j in out["computed"]:
            text, created = hoist_calls(p["elements"][j], temps, prefix)
            lines += [("call", temps[c], c, None, None) for c in created]
            lines.append(("output", p["name"], text, None, j))
    plan = _staged(lines, inputs, prefix, k["has_checks"])
    plan["outputs"] = outputs
    plan["trig"] = poly_trig(plan["stages"])
    for st in plan["stages"]:
        st["lines"] = in_use_order(st) if st["vector"] else loads_first(st)
    # the block's buffers, and the rows of the outputs it streams (templates/c/kernel.c.j2)
    streamed = sum(p["size"] for p in streamed_outputs(k["outputs"]))
    values = len(plan["arrays"]) + sum(p["size"] for p in (*plan["inputs"], *k["outputs"]))
    plan["blocks"] = 8 * MAX_WIDTH * (values + streamed) <= STACK_BYTES
    return plan


CONSTANT = re.compile(rf"-?{NUMBER}")
"""A printed output element that is a number: the same in every state."""


def block_outputs(port: dict) -> dict:
    """How a block fills an output port's ``[element][lane]`` copy: ``constants``, the
    elements printed as numbers (a free base's zeros in the mass matrix, a Jacobian's fixed
    rows), are written into the copy once per call, before the first block, and never
    overwritten; ``computed``, the others, are stored by the vector loops of every block. The
    copy-out then takes every element from the copy: the same text, so the same bits, as the
    single-state kernel's. Of the 17,422 output stores in the bundled kernels' blocks, 5,330
    were constants (solo12's Jacobians: 1,443 of 1,836; its mass matrix: 123 of 324);
    docs/architecture.md, "Batches across states"."""
    constants, computed = [], []
    for j, e in enumerate(port["elements"]):
        if CONSTANT.fullmatch(e):
            constants.append({"index": j, "value": e})
        else:
            computed.append(j)
    return {"name": port["name"], "size": port["size"], "constants": constants,
            "computed": computed}


def _targets(line: dict) -> tuple[str, ...]:
    """The names a line defines."""
    if line["kind"] == "sincos":
        return tuple(line["target"])
    return (line["name"],) if line["kind"] == "load" else (
        (line["target"],) if line["kind"] in ("assign", "call") else ())


def _load_lines(stage: dict) -> list[dict]:
    """A stage's loads (inputs and crossing values it reads) as lines of kind ``load``."""
    return [{"kind": "load", **ld, "text": "", "ranges": []} for ld in stage["loads"]]


def loads_first(stage: dict) -> list[dict]:
    """A scalar stage's lines after its loads, each line with the arrays it stores."""
    return [{**ln, "stores": [t for t in _targets(ln) if t in stage["stores"]]}
            for ln in _load_lines(stage) + stage["lines"]]


def in_use_order(stage: dict) -> list[dict]:
    """A vector stage's lines, its loads included, reordered so that few values are live at
    once. The assignments and checks keep their order (the generator's, a recursion from the
    leaves); a load or a sine and cosine comes just before the first line that needs it; an
    output, and a value a later stage reads, is stored as soon as its inputs are computed.
    The compiler keeps the program order of a long straight-line block (GCC schedules x86
    code after register allocation only), so the order decides how many vector registers are
    spilled; the lines are pure, so any order that respects their inputs gives the same bits.
    (``emit`` recurses only into loads and sines and cosines not yet placed: the other lines
    come in program order, after everything they read, so its depth is at most three.)"""
    lines = _load_lines(stage) + stage["lines"]
    defined_at = {t: i for i, ln in enumerate(lines) for t in _targets(ln)}
    needs = [[defined_at[n] for n in dict.fromkeys(names_in(ln["text"]))
              if defined_at.get(n, i) != i] for i, ln in enumerate(lines)]
    outputs = [i for i, ln in enumerate(lines) if ln["kind"] == "output"]
    waiting = {i: set(needs[i]) for i in outputs}
    readers: dict[int, list[int]] = {}
    for i in outputs:
        for j in needs[i]:
            readers.setdefault(j, []).append(i)
    done: set[int] = set()
    order: list[int] = []

    def emit(i: int) -> None:
        for j in needs[i]:
            if j not in done:
                emit(j)
        done.add(i)
        order.append(i)
        for o in readers.get(i, ()):
            waiting[o].discard(i)
            if not waiting[o] and o not in done:
                done.add(o)
                order.append(o)

    for i in outputs:
        if not waiting[i]:
            done.add(i)
            order.append(i)
    for i, ln in enumerate(lines):
        if ln["kind"] in ("assign", "check") and i not in done:
            emit(i)
    for i in range(len(lines)):     # outputs, and sines and cosines only later stages read
        if i not in done:
            emit(i)
    stored = set(stage["stores"])
    return [{**lines[i], "stores": [t for t in _targets(lines[i]) if t in stored]}
            for i in order]


def poly_trig(stages: list[dict]) -> bool:
    """In the vector stages, sin and cos by their polynomial path only: ``mg_sin(`` and
    ``mg_cos(`` become ``mg_sin_poly(`` and ``mg_cos_poly(`` in each line's text, and the line
    gets ``ranges``, the arguments whose lane must be marked when out of the polynomial's
    range (a ``sincos`` line: its own argument). Lines of scalar stages keep the full routines
    and get no ranges. Returns whether any vector stage computes a sine or cosine."""
    any_trig = False
    for st in stages:
        for ln in st["lines"]:
            ln["ranges"] = []
            if not st["vector"]:
                continue
            if ln["kind"] == "sincos":
                ln["ranges"].append(ln["text"])
            for name, a, b in calls_in(ln["text"]):
                if name in TRIG_CALLS:
                    ln["ranges"].append(ln["text"][a + len(name):b].strip()[1:-1])
            ln["text"] = _TRIG_CALL.sub(r"\1_poly(", ln["text"])
            any_trig = any_trig or bool(ln["ranges"])
    return any_trig


_TRIG_CALL = re.compile(r"\b(mg_sin|mg_cos)\s*\(")


def _staged(lines: list, inputs: dict, prefix: str, has_checks: bool) -> dict:
    """Each line in its earliest stage (checks in order, outputs last); loads and stores."""
    ready: dict[str, int] = {}          # name -> first vector stage that can read it
    placed = []
    last_check = 0
    for kind, target, text, status, extra in lines:
        if kind == "call":
            # the call's argument text, once its variables are ready; the call runs in the
            # scalar loop after that vector stage and is read from the next one
            at = max((ready.get(n, 0) for n in names_in(text)), default=0)
            ready[target] = at + 1
        elif kind == "sincos":
            at = max((ready.get(n, 0) for n in names_in(text)), default=0)
            ready.update(dict.fromkeys(target, at))
        else:
            at = max((ready.get(n, 0) for n in names_in(text)), default=0)
            if kind == "check":
                at = last_check = max(at, last_check)
            elif kind == "assign":
                ready[target] = at
        placed.append((at, kind, target, text, status, extra))
    final = max([last_check] + [at for at, kind, *_ in placed])
    stages = []
    for s in range(final + 1):
        stages.append(Stage(vector=True))
        if s < final:
            stages.append(Stage(vector=False))
    where: dict[str, int] = {}          # name -> index into stages where it is computed
    for at, kind, target, text, status, extra in placed:
        if kind == "output":
            index = 2 * final
        elif kind == "call":
            index = 2 * at + 1
        else:
            index = 2 * at
        stages[index].lines.append({"kind": kind, "target": target, "text": text,
                                    "status": status, "extra": extra})
        if kind in ("assign", "call"):
            where[target] = index
        elif kind == "sincos":
            where.update(dict.fromkeys(target, index))
    arrays, blocked = _loads_and_stores(stages, where, inputs)
    return {"prefix": prefix, "has_checks": has_checks,
            "arrays": arrays, "inputs": blocked,
            "stages": [{"vector": st.vector, "lines": st.lines, "stores": st.stores,
                        "loads": st.loads,
                        "checks": any(ln["kind"] == "check" for ln in st.lines)}
                       for st in stages if st.lines]}


def _loads_and_stores(stages: list[Stage], where: dict[str, int], inputs: dict
                      ) -> tuple[list[str], list[dict]]:
    """Fill each stage's loads (inputs and arrays it reads, as template dicts) and stores
    (its values read by a later stage). Returns the names kept in arrays, in order, and the
    input ports the vector loops read: a vector loop reads an input from the block's copy of
    its port, ``port[element][lane]`` (filled once per block by a loop the compiler turns
    into a transpose in registers), as a strided read of the states' rows does not
    vectorise; a scalar loop reads the rows directly."""
    crossing: dict[str, None] = {}
    blocked: dict[str, int] = {}            # input ports copied into the block: name -> size
    for index, st in enumerate(stages):
        seen: dict[str, None] = {}
        for ln in st.lines:
            for n in names_in(ln["text"]):
                if n in inputs or (n in where and (where[n] != index or not st.vector)):
                    seen.setdefault(n)
        for n in seen:
            if n in inputs:
                port, size, element = inputs[n]
                st.loads.append({"name": n, "array": False, "block": st.vector, "port": port,
                                 "size": size, "index": element})
                if st.vector:
                    blocked[port] = size
            else:
                st.loads.append({"name": n, "array": True, "block": False})
                crossing.setdefault(n)
    for index, st in enumerate(stages):
        targets = [t for ln in st.lines if ln["kind"] in ("assign", "sincos")
                   for t in (ln["target"] if ln["kind"] == "sincos" else (ln["target"],))]
        st.stores = [t for t in targets if t in crossing]
    for st in stages:
        for ln in st.lines:
            if ln["kind"] == "call":
                crossing.setdefault(ln["target"])
    return list(crossing), [{"name": n, "size": size} for n, size in blocked.items()]
