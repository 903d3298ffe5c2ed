"""The fast printer and the fast CSE give exactly what SymPy's printers and ``sympy.cse`` give.

Every bundled kernel is also checked through ``tests/test_generated_current.py``: the committed
files were printed by SymPy's printers and CSE'd by ``sympy.cse``, and a fresh generation (fast
printer, fast CSE) must equal them byte for byte. Here: random IR-like expressions, and every
statement of one mechanism of each family, compared one by one.
"""

from __future__ import annotations

import random

import pytest
import sympy as sp

from mechgen.generator.backends import BACKENDS
from mechgen.generator.backends.base import NonFiniteConstant
from mechgen.generator.backends.fast import FastPrinter
from mechgen.generator.build import MECHANISMS
from mechgen.generator.families import family_of
from mechgen.generator.frontend import load
from mechgen.generator.ir import Kernel, symbol
from mechgen.generator.passes import cse as fast_cse
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code

SYMBOLS = [symbol(n) for n in ("a", "b", "c1", "s1", "q_2", "x", "y", "z", "m_A", "cse3")]
EXPONENTS = [2, 3, 4, 5, -1, -2, -3, sp.S.Half, -sp.S.Half, sp.Rational(3, 2), sp.Rational(1, 3)]
NUMBERS = [sp.Integer(2), sp.Integer(-1), sp.Integer(-3), sp.Rational(1, 2), sp.Rational(-3, 4),
           sp.Float(0.1), sp.Float(-2.5), sp.Float(1.0), sp.Float(-1.0), sp.Integer(10) ** 20,
           sp.Float(1e-300)]


def random_expr(rng: random.Random, depth: int) -> sp.Expr:
    """An expression of the kinds the IR holds: sums, products, small powers, numbers,
    symbols, sin/cos/Abs/atan2, sqrt; built with SymPy's evaluation, as the recursion does."""
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(SYMBOLS) if rng.random() < 0.8 else rng.choice(NUMBERS)
    kind = rng.random()
    sub = lambda: random_expr(rng, depth - 1)       # noqa: E731
    if kind < 0.35:
        return sp.Add(*[sub() for _ in range(rng.randint(2, 4))])
    if kind < 0.7:
        return sp.Mul(*[sub() for _ in range(rng.randint(2, 3))])
    if kind < 0.8:
        return -sub()
    if kind < 0.9:
        return sp.Pow(sub(), rng.choice(EXPONENTS))
    f = rng.choice([sp.sin, sp.cos, sp.Abs, lambda e: sp.atan2(e, SYMBOLS[0]), sp.sqrt])
    return f(sub())


def random_exprs(seed: int, n: int, depth: int) -> list[sp.Expr]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        e = random_expr(rng, depth)
        if e.is_finite is not False and not e.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            out.append(e)
    return out


def outcome(doprint, e: sp.Expr) -> str:
    """The printed text, or the refusal (a constant that is not a finite double)."""
    try:
        return doprint(e)
    except NonFiniteConstant as refusal:
        return f"refused: {refusal}"


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_fast_printer_prints_random_expressions_as_sympy_does(backend):
    printer = BACKENDS[backend].printer
    fast = FastPrinter(printer)
    for e in random_exprs(seed=1, n=600, depth=4):
        assert outcome(fast.doprint, e) == outcome(printer.doprint, e), sp.srepr(e)


def test_fast_printer_prints_sums_with_a_number_and_a_negative_product():
    """as_ordered_terms' special case (1 - 2*x keeps the number first) and its neighbours."""
    x, y = SYMBOLS[5], SYMBOLS[6]
    cases = [1 - 2 * x, 1 + 2 * x, -1 + 2 * x, 1 - x, 2.5 - 3 * x * y, x - 1, -x - 1,
             sp.Rational(1, 2) - x / 3, 1 / (x * y), 1 / (2 * x), -1 / (x * y) ** 2,
             x ** -2 * y, -x ** sp.Rational(-1, 2), (x + y) ** -1, -(x + y) / x]
    for b in BACKENDS.values():
        fast = FastPrinter(b.printer)
        for e in cases:
            assert fast.doprint(e) == b.printer.doprint(e), sp.srepr(e)


def test_a_lone_power_denominator_is_divided_by_as_a_whole():
    """y/x**2 prints as y/(x*x), never y/x*x (which divides once): both printers, and the
    value of the printed text equals the expression's."""
    x, y, z = SYMBOLS[5], SYMBOLS[6], SYMBOLS[7]
    cases = [4 / x ** 2, y / x ** 2, -y / x ** 3, y * z / x ** 4, 3 * y / x ** 2,
             -4 * y / x ** 2, (y + z) / x ** 2, y / (x + z) ** 2, y / (x ** 2 * z)]
    at = {x: 1.7, y: 0.3, z: -2.1}
    for name, b in BACKENDS.items():
        fast = FastPrinter(b.printer)
        for e in cases:
            text = fast.doprint(e)
            assert text == b.printer.doprint(e), sp.srepr(e)
            if name == "python":
                value = eval(text, {"math": __import__("math")}, {str(k): v for k, v in at.items()})
                assert value == pytest.approx(float(e.subs(at)), rel=1e-14), text


def test_fast_printer_refuses_non_finite_constants_as_the_printers_do():
    for b in BACKENDS.values():
        for e in (SYMBOLS[0] * sp.Integer(10) ** 400, SYMBOLS[0] + sp.Integer(10) ** 400):
            with pytest.raises(NonFiniteConstant, match="1.00e"):
                FastPrinter(b.printer).doprint(e)


def test_sign_rule_of_the_fast_cse_equals_sympys_on_every_node():
    for e in random_exprs(seed=2, n=600, depth=4):
        for node in sp.preorder_traversal(e):
            if isinstance(node, sp.Expr) and not node.is_Atom:
                assert fast_cse.could_extract_minus_sign(node) == \
                    node.could_extract_minus_sign(), sp.srepr(node)


def cse_names():
    return (symbol(f"cse{i}") for i in range(10**9))


@pytest.mark.parametrize("seed", range(4))
def test_fast_cse_equals_sympy_cse_on_random_expression_lists(seed):
    """Lists whose members share sums and products (what CSE finds), as a kernel's do."""
    rng = random.Random(100 + seed)
    shared = random_exprs(seed=200 + seed, n=12, depth=2)
    exprs = []
    for e in random_exprs(seed=300 + seed, n=150, depth=3):
        pick = rng.sample(shared, 2)
        exprs.append(rng.choice([e + pick[0], e * pick[1], e - pick[0] * pick[1], e]))
    assert fast_cse.cse(exprs, cse_names()) == sp.cse(exprs, symbols=cse_names(), order="none")


# one mechanism of each family (serial from a spec, serial from URDF, parallel, linkage), and
# how many of its kernels (the parallel ones after the first four are long; every statement
# of every bundled kernel is compared through tests/test_generated_current.py)
BUNDLED = {"ur5_arm": None, "panda_arm": None, "hexapod_ucu": 4, "fourbar": None}


@pytest.fixture(scope="module", params=sorted(BUNDLED))
def built(request) -> list[Kernel]:
    """Kernels of the mechanism as the pipeline hands them to CSE."""
    model = load(MECHANISMS / f"{request.param}.toml")
    family = family_of(model)
    coded = family.coded(model)
    builders = family.builders[:BUNDLED[request.param]]
    return [remove_dead_code(drop_unguarded_checks(build(coded))) for build in builders]


def statements(k: Kernel) -> list[sp.Expr]:
    return [st.expr for st in k.body] + [sp.sympify(e) for p in k.outputs for e in p.elements]


def test_fast_cse_equals_sympy_cse_on_bundled_kernels(built):
    for k in built:
        exprs = statements(k)
        assert fast_cse.cse(exprs, cse_names()) == \
            sp.cse(exprs, symbols=cse_names(), order="none"), k.name


def test_fast_printer_equals_sympy_printers_on_every_statement_of_bundled_kernels(built):
    for k in built:
        exprs = statements(fast_cse.common_subexpressions(k))
        for b in BACKENDS.values():
            fast = FastPrinter(b.printer)
            for e in exprs:
                assert fast.doprint(e) == b.printer.doprint(e), (k.name, sp.srepr(e))
