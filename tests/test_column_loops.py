"""The column loops of forward_dynamics_derivatives (generator/ir.ColumnLoop, built by
generator/families/serial/column_solves.py) against their unrolled straight-line form
(generator/passes/loops.unroll_loops):

- the generated C kernel with the loops equals the same kernel unrolled bit for bit, and the
  Python kernel with the loops equals the C one to 1e-14 relative, on random fixed- and
  free-base trees (both bodies, solve and product, and the one chosen by op count);
- the passes treat a loop as what it computes: the op count is body ops x columns (that of
  the unrolled form), dead code drops the columns nobody reads (and whole loops), CSE and
  value numbering leave the loop in place after what it reads, the invariants refuse a loop
  that reads an undefined name or a body sum of three operands, and the kernel's SIMD batch
  is the single-state loop (and equals it).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp

from mechgen import runtime
from mechgen.generator.build import manifest_fields, write_files
from mechgen.generator.backends import BACKENDS
from mechgen.generator.emit import (_batch_context, _body, _code, render, sha256_text,
                                    unrolled_body)
from mechgen.generator.families.serial import derivatives as D
from mechgen.generator.ir import (Assign, ColumnLoop, InvariantError, Kernel, Port,
                                  check_invariants, symbol)
from mechgen.generator.passes.cse import common_subexpressions
from mechgen.generator.passes.dead_code import remove_dead_code
from mechgen.generator.passes.derivatives import merge_equal_statements
from mechgen.generator.passes.loops import names_taken, unroll_loops
from mechgen.generator.passes.opcount import count_ops
from mechgen.generator.passes.sincos import pair_sincos
from mechgen.generator.pipeline import Generated, PASSES
from tests.chains import random_chain

STATES = 20
# (seed, joints, base, tree)
CASES = [(43, 9, "fixed", True), (45, 5, "free", True), (44, 4, "free", False)]


def _through_passes(k: Kernel) -> Kernel:
    """``k`` through the pipeline's passes (generator/pipeline.PASSES), invariants after each."""
    check_invariants(k)
    for _, p in PASSES:
        k = p(k)
        check_invariants(k)
    return k


def _loops(k: Kernel) -> list[ColumnLoop]:
    return [st for st in k.body if isinstance(st, ColumnLoop)]


def _generated(k: Kernel) -> Generated:
    ops = count_ops(k)
    return Generated(k, ops, [("built", ops)], ops)


def _compile(chain, kernels: list[Kernel], root):
    files = render(chain.name, f"{chain.name}.toml", sha256_text(chain.name),
                   [_generated(k) for k in kernels], manifest_fields(chain))
    write_files(root / chain.name, files)
    return (runtime.load(chain.name, "c", generated=root),
            runtime.load(chain.name, "python", generated=root))


def _inputs(k: Kernel, pvals: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    args = {}
    for port in k.inputs:
        if port.name == "p":
            args["p"] = np.tile([pvals[str(s)] for s in port.elements], (STATES, 1))
        else:
            args[port.name] = rng.uniform(-1, 1, (STATES, port.size))
    return args


@pytest.mark.parametrize("seed, n, base, tree", CASES,
                         ids=[f"seed{c[0]}-{c[1]}-{c[2]}{'-tree' if c[3] else ''}" for c in CASES])
def test_loop_form_equals_the_unrolled_form_bitwise(seed, n, base, tree, tmp_path):
    chain, pvals = random_chain(seed, n, base, tree=tree)
    frame = D.best_frame(chain)
    kernels = []
    for form in ("solve", "product", "cheaper"):
        k = _through_passes(D.fd_derivatives_analytic(chain, frame, columns=form))
        assert _loops(k), f"{form}: no column loop"
        kernels += [replace(k, name=f"dfd_{form}"),
                    replace(unroll_loops(k), name=f"dfd_{form}_unrolled")]
    straight = _through_passes(D.fd_derivatives_analytic(chain, frame, columns=None))
    assert not _loops(straight)
    kernels.append(replace(straight, name="dfd_straight"))
    c, py = _compile(chain, kernels, tmp_path)
    args = _inputs(kernels[0], pvals, seed)
    reference = c.kernels["dfd_straight"](**args)
    for form in ("solve", "product", "cheaper"):
        looped = c.kernels[f"dfd_{form}"](**args)
        unrolled = c.kernels[f"dfd_{form}_unrolled"](**args)
        in_python = py.kernels[f"dfd_{form}"](**{k: v[:3] for k, v in args.items()})
        for port, a, b, r, p in zip(kernels[0].outputs, looped, unrolled, reference, in_python):
            assert np.array_equal(a.view(np.int64), b.view(np.int64)), (form, port.name)
            scale = max(1.0, float(np.abs(a).max()))
            assert np.abs(p - a[:3]).max() <= 1e-14 * scale, (form, port.name)
            # the straight-line solves sum in another order: equal to rounding
            assert np.abs(r - a).max() <= 1e-12 * scale, (form, port.name)


def _toy_loop() -> tuple[Kernel, ColumnLoop]:
    """u = a*x + y and v = u*u on three columns (x, y) = (p0, p1), (p1, 0), (p2, p0); the
    kernel outputs u of columns 0 and 2 and v of column 0."""
    p = [symbol(f"p{i}") for i in range(3)]
    a = symbol("a")
    x, y, t, u, v = (symbol(s) for s in ("lx", "ly", "lt", "lu", "lv"))
    targets = tuple((symbol(f"u{c}"), symbol(f"v{c}")) for c in range(3))
    loop = ColumnLoop((x, y), (Assign(t, a * x), Assign(u, t + y), Assign(v, u * u)), (u, v),
                      ((p[0], p[1]), (p[1], sp.Integer(0)), (p[2], p[0])), targets)
    k = Kernel("toy", "", (Port("p", (3,), tuple(p)),), (Port("out", (3,), (
        targets[0][0], targets[2][0], targets[0][1])),),
        (Assign(a, p[0] * p[1] + p[2]), loop))
    return k, loop


def test_passes_count_keep_and_prune_the_loop():
    k, loop = _toy_loop()
    check_invariants(k)
    # op count: the body's 3 operations x 3 columns, plus a = p0 p1 + p2: as unrolled
    assert count_ops(k)["total"] == 3 * 3 + 2 == count_ops(unroll_loops(k))["total"]
    pruned = remove_dead_code(k)      # column 1's targets are read by nobody
    assert _loops(pruned)[0].columns == (loop.columns[0], loop.columns[2])
    assert count_ops(pruned)["total"] == 3 * 2 + 2 and pruned.body[0] == k.body[0]
    nobody = replace(k, outputs=(Port("out", (1,), (symbol("a"),)),))
    assert not _loops(remove_dead_code(nobody))
    for p in (common_subexpressions, merge_equal_statements):
        after = p(k)
        check_invariants(after)
        assert _loops(after) == [loop] and isinstance(after.body[0], Assign)


def test_invariants_refuse_a_bad_loop():
    k, loop = _toy_loop()
    undefined = replace(loop, columns=((symbol("nowhere"), symbol("p1")), *loop.columns[1:]))
    with pytest.raises(InvariantError, match="nowhere"):
        check_invariants(k.with_body([k.body[0], undefined]))
    x, y = loop.slots
    three = replace(loop, body=(Assign(loop.body[0].target, x + y + symbol("a")),
                                *loop.body[1:]))
    with pytest.raises(InvariantError, match="more than two operands"):
        check_invariants(k.with_body([k.body[0], three]))
    with pytest.raises(InvariantError, match="assigned twice"):
        check_invariants(k.with_body([k.body[0], loop, loop]))


def test_the_batch_of_a_looped_kernel_is_the_single_state_loop():
    chain, pvals = random_chain(45, 5, "free", tree=True)
    k = _through_passes(D.fd_derivatives_analytic(chain, D.best_frame(chain),
                                                  columns="solve"))
    files = render(chain.name, "x.toml", "0" * 64, [_generated(k)], manifest_fields(chain))
    c_file = next(text for name, text in files.items() if name.endswith(".c"))
    batch = c_file[c_file.index("_batch("):]
    assert "column loop" in c_file and "#if MG_SIMD_WIDTH > 0" not in batch
    assert "for (; mg_i < n; ++mg_i)" in batch     # state after state



@pytest.mark.parametrize("first", ["p0", "lt_c1"])
def test_the_batch_body_unrolls_the_printed_loop_as_the_ir_unrolls(first):
    """emit.unrolled_body renames the printed loop body as text; that writes what printing
    passes/loops.unroll_loops' statements writes, a local whose name the kernel already has
    (an input named ``lt_c1``) renamed with an underscore as there; emit._live then drops
    what the IR's dead-code pass drops from the unrolled kernel (column 1, read by nobody)."""
    k, loop = _toy_loop()
    p0 = {symbol("p0"): symbol(first)}
    loop = replace(loop, columns=tuple(tuple(sp.sympify(v).xreplace(p0) for v in col)
                                       for col in loop.columns), batch_unrolled=True)
    k = Kernel(k.name, k.doc, (Port("p", (3,), (symbol(first), *k.inputs[0].elements[1:])),),
               k.outputs, (Assign(k.body[0].target, k.body[0].expr.xreplace(p0)), loop))
    check_invariants(k)
    printer = BACKENDS["c"].fast_printer
    whole = _body(unroll_loops(k), printer, "toy")
    assert unrolled_body(_body(k, printer, "toy"), [loop], names_taken(k),
                         lambda e: _code(printer, e, "toy")) == whole
    assert any(st["target"] == "lt_c1_" for st in whole) == (first == "lt_c1")
    expected = pair_sincos(_body(remove_dead_code(unroll_loops(k)), printer, "toy"))
    assert _batch_context(k, {}, printer, "toy")["body"] == expected
    assert not any(st["target"] in ("lu_c1", "lv_c1", "u1", "v1") for st in expected)
    assert any(st["target"] == "lv_c2" for st in whole)
    assert not any(st["target"] == "lv_c2" for st in expected)   # v of column 2: unread


def test_the_batch_body_keeps_the_operand_order_when_renaming_reorders_names():
    """L_a sorts before L_a1, but L_a1_c0 before L_a_c0 (the printer orders operands by
    name): such a statement is printed again from the renamed IR, as unroll_loops gives it."""
    a, a1, u, w = (symbol(s) for s in ("L_a", "L_a1", "L_u", "L_w"))
    p = [symbol(f"p{i}") for i in range(4)]
    targets = tuple((symbol(f"u{c}"), symbol(f"w{c}")) for c in range(2))
    loop = ColumnLoop((a, a1), (Assign(u, a + a1), Assign(w, a1 * u)), (u, w),
                      ((p[0], p[1]), (p[2], p[3])), targets, batch_unrolled=True)
    k = Kernel("order", "", (Port("p", (4,), tuple(p)),),
               (Port("out", (4,), tuple(t for col in targets for t in col)),), (loop,))
    check_invariants(k)
    printer = BACKENDS["c"].fast_printer
    expected = pair_sincos(_body(unroll_loops(k), printer, "order"))
    got = _batch_context(k, {}, printer, "order")["body"]
    assert got == expected
    assert next(st["expr"] for st in got if st["target"] == "L_u_c0") == "L_a1_c0 + L_a_c0"
