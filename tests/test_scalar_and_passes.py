"""The scalar IR: pruning and naming as the recursion builds, the passes, the op counter."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from mechgen.generator.ir import Assign, Check, InvariantError, Kernel, Port, check_invariants, symbol
from mechgen.generator.passes.cse import common_subexpressions
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code
from mechgen.generator.passes.opcount import count_ops
from mechgen.generator.passes.units import exact_units, integer_units
from mechgen.generator.scalar import (Recorder, counting_dense, cross, matmul, omega_products,
                              omega_x_I_omega, omega_x_omega_x, unit)

x, y, z, a, b = (symbol(n) for n in "xyzab")


def test_zero_and_one_elements_prune_as_matrices_are_built():
    R = [[x, 0, 0], [0, 1, 0], [0, 0, y]]
    P = matmul(R, [[1, 0, 0], [0, a, 0], [0, 0, 0]])
    assert P == [[x, 0, 0], [0, a, 0], [0, 0, 0]]
    assert cross(unit(2), [a, b, 0]) == [-b, a, 0]


def test_only_non_trivial_elements_get_names_and_repeats_reuse_them():
    rec = Recorder()
    assert rec.bind(sp.Integer(3), "k") == 3
    assert rec.bind(x, "k") == x
    assert rec.bind(-x, "k") == -x
    s1 = rec.bind(x * y + a, "t")
    s2 = rec.bind(x * y + a, "u")
    assert s1 == s2 and str(s1) == "t"
    assert [str(st.target) for st in rec.statements] == ["t"]
    assert rec.bind(sp.cos(sp.pi / 7), "c").is_Float  # folded to one constant


def test_fresh_names_never_collide_with_inputs():
    rec = Recorder(reserved={"c1"})
    s = rec.bind(sp.cos(x), "c1")
    assert str(s) == "c1_2"


def _kernel(body, outputs, inputs=(x, y, a, b)):
    return Kernel("k", "", (Port("in", (len(inputs),), tuple(inputs)),),
                  (Port("out", (len(outputs),), tuple(outputs)),), tuple(body))


def test_dead_code_removal_keeps_exactly_what_outputs_and_checks_use():
    t1, t2, t3, t4 = (symbol(f"t{i}") for i in range(1, 5))
    body = [Assign(t1, x * y), Assign(t2, t1 + a), Assign(t3, a * b), Assign(t4, t3 * b),
            Check(t1 - 1, 1)]
    k = remove_dead_code(_kernel(body, [t2]))
    assert [str(s.target) for s in k.body if isinstance(s, Assign)] == ["t1", "t2"]
    assert any(isinstance(s, Check) for s in k.body)


def test_constant_checks_fold_and_an_always_failing_one_is_refused():
    assert drop_unguarded_checks(_kernel([Check(sp.Integer(2), 1)], [x])).body == ()
    with pytest.raises(ValueError, match="fails for every input"):
        drop_unguarded_checks(_kernel([Check(sp.Integer(-1), 1)], [x]))


def test_cse_preserves_values_and_lowers_op_count():
    t1, t2 = symbol("t1"), symbol("t2")
    body = [Assign(t1, sp.sin(x) * y + sp.sin(x) * a), Assign(t2, (x * y + 1) * (x * y + 2))]
    k0 = _kernel(body, [t1 + t2, x * y * b])
    k1 = common_subexpressions(k0)
    check_invariants(k1)
    assert count_ops(k1)["total"] <= count_ops(k0)["total"]
    assert count_ops(k1)["trig"] == 1
    vals = {x: 0.3, y: -1.2, a: 0.7, b: 2.5}

    def run(k):
        env = dict(vals)
        for st in k.body:
            env[st.target] = float(st.expr.subs(env))
        return [float(sp.sympify(e).subs(env)) for e in k.outputs[0].elements]

    np.testing.assert_allclose(run(k1), run(k0), rtol=1e-15)


def test_op_counter_counts_exactly():
    t = symbol("t")
    k = _kernel([Assign(t, x * y + 2 * a - b / x + x ** 2 + sp.sqrt(a) + sp.cos(b))], [t])
    ops = count_ops(k)
    assert ops == {"adds": 5, "muls": 3, "divs": 1, "sqrt": 1, "trig": 1, "total": 11}


def test_invariant_check_catches_use_before_definition_and_double_assignment():
    t1 = symbol("t1")
    with pytest.raises(InvariantError, match="before definition"):
        check_invariants(_kernel([Assign(t1, symbol("nope") + x)], [t1]))
    with pytest.raises(InvariantError, match="assigned twice"):
        check_invariants(_kernel([Assign(t1, x * y), Assign(t1, x * a)], [t1]))
    with pytest.raises(InvariantError, match="undefined"):
        check_invariants(_kernel([], [symbol("ghost")]))


def test_dedicated_omega_formulas_equal_the_cross_products():
    rng = np.random.default_rng(1)
    w = [symbol(f"w{i}") for i in range(3)]
    r = [symbol(f"r{i}") for i in range(3)]
    I = rng.normal(size=(3, 3))
    I = (I + I.T).tolist()
    rec = Recorder()
    p = omega_products(rec, w, "oo")
    env = {s: v for s, v in zip(w + r, rng.normal(size=6))}
    for st in rec.statements:
        env[st.target] = float(st.expr.subs(env))
    W = np.array([env[s] for s in w])
    R = np.array([env[s] for s in r])
    got1 = [float(sp.sympify(e).subs(env)) for e in omega_x_omega_x(p, r)]
    got2 = [float(sp.sympify(e).subs(env)) for e in omega_x_I_omega(p, I)]
    np.testing.assert_allclose(got1, np.cross(W, np.cross(W, R)), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got2, np.cross(W, np.array(I) @ W), rtol=1e-13, atol=1e-13)


def test_dense_count_counts_full_matrix_operations_inside_its_scope_only():
    matmul([[0] * 3] * 3, [[0] * 3] * 3)              # outside any scope: not counted
    with counting_dense() as dense:
        matmul([[0] * 3] * 3, [[0] * 3] * 3)
    matmul([[0] * 3] * 3, [[0] * 3] * 3)
    assert (dense.muls, dense.adds) == (27, 18)


def test_a_check_whose_status_is_not_declared_breaks_the_invariants():
    from mechgen.generator.ir import Check, InvariantError, Kernel, Port, check_invariants
    x = sp.Symbol("x")
    port = Port("x", (1,), (x,), "input")
    body = (Check(x - 1, 7, "x above 1"),)
    out = (Port("y", (1,), (x,), "output"),)
    check_invariants(Kernel("k", "doc", (port,), out, body, {7: "x above 1"}))
    with pytest.raises(InvariantError, match="status 7 .* not declare"):
        check_invariants(Kernel("k", "doc", (port,), out, body, {1: "something else"}))


def test_closed_form_scalar_formulas_count_as_they_are_written_in_the_dense_reference():
    from mechgen.generator.scalar import count_scalar_formulas
    x, y = sp.symbols("x y")
    count_scalar_formulas([sp.sqrt(x * x + y * y)])          # outside a scope: nothing
    with counting_dense() as dense:
        count_scalar_formulas([sp.sqrt(x * x + y * y), sp.atan2(y, x)])
    assert (dense.adds, dense.muls, dense.sqrt, dense.trig) == (1, 2, 1, 1)


def _random_expression(rng, xs: list, depth: int) -> sp.Expr:
    """A random tree of sums, products, powers, square roots, sines and cosines of the
    symbols ``xs`` and float constants, as the kernels' statements are built."""
    if depth == 0:
        return xs[rng.integers(len(xs))] if rng.random() < 0.7 else sp.Float(rng.normal())
    a, b = (_random_expression(rng, xs, depth - 1) for _ in range(2))
    kind = rng.integers(7)
    return [a + b, a * b, a - 2 * b, sp.sin(a) * b, sp.cos(a + b), sp.sqrt(a * a + 1) * b,
            a / (b * b + 2)][kind]


def test_the_forward_mode_derivative_is_sympys_diff_node_for_node():
    """derivatives.derivative applies SymPy's own rules without its Derivative machinery:
    the same expression tree (srepr) as ``sp.diff`` for every symbol, so the derivative
    kernels do not change."""
    from mechgen.generator.passes.derivatives import derivative
    rng = np.random.default_rng(3)
    xs = [symbol(f"x{i}") for i in range(4)]
    for _ in range(150):
        e = _random_expression(rng, xs, int(rng.integers(1, 5)))
        for x in xs:
            assert sp.srepr(derivative(e, x)) == sp.srepr(sp.diff(e, x)), (e, x)


def test_cse_of_a_kernel_seen_again_is_the_first_result_and_of_another_kernel_its_own():
    x, y = symbol("x"), symbol("y")
    t, u = symbol("t"), symbol("u")
    ins = (Port("x", (2,), (x, y)),)

    def kernel(c: float) -> Kernel:
        s = sp.sin(x + y)
        return Kernel("k", "", ins, (Port("o", (2,), (t, u)),),
                      (Assign(t, s * s + c), Assign(u, s * s * x)))
    first = common_subexpressions(kernel(1.0))
    assert common_subexpressions(kernel(1.0)) is first
    other = common_subexpressions(kernel(2.0))
    assert other != first and sp.Float(2.0) in other.body[-2].expr.atoms(sp.Float) | \
        {a for st in other.body for a in st.expr.atoms(sp.Float)}


def test_numbers_printed_as_one_lose_their_factor_with_the_same_bits():
    near_one = 1 - sp.Rational(1, 2 ** 60)             # nearest double 1.0
    apart = 1 + sp.Rational(1, 2 ** 50)                # a double of its own
    t, u, v = (symbol(n) for n in ("t", "u", "v"))
    body = [Assign(t, y - near_one * x), Assign(u, near_one * a * b), Assign(v, apart * x + y)]
    k = integer_units(_kernel(body, [t, u, v]))
    assert [st.expr for st in k.body] == [y - x, a * b, apart * x + y]
    assert count_ops(k)["total"] == count_ops(_kernel(body, [t, u, v]))["total"] - 2
    rng = np.random.default_rng(0)
    for xv, yv in rng.standard_normal((1000, 2)) * 10.0 ** rng.integers(-30, 30, (1000, 2)):
        assert (yv + (-float(near_one)) * xv) == yv - xv         # what C ran before and now
    assert exact_units(sp.Float(1.0) * x + sp.Float(-1.0) * y) == x - y
