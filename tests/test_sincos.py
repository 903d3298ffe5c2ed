"""The generated C's own sine, cosine and atan2 (templates/c/sincos.c.j2, docs/sincos.md).

Checked against mpmath at 200 bits (faithful rounding: < 1 ulp), against special values, against
the identities sin^2 + cos^2 = 1 and the parity of sin and cos, and the vectorised build against
the scalar one bit for bit. The kernels that use it are checked against their references by the
rest of the suite (1e-10, as before).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy as sp

from mechgen.generator.backends.c import CPrinter
from mechgen.generator.passes.sincos import pair_sincos, whole_call
from tests.trig_driver import max_ulp_error, run, run_atan2, run_pair, trig_library, ulps

ROOT = Path(__file__).resolve().parent.parent
BOUND = 1.6e6                   # MG_TRIG_BOUND of the prelude
SAMPLE = 20_000                 # points per range (bench/sincos_bench.py runs 10^6)


@pytest.fixture(scope="module")
def scalar():
    return trig_library(simd=False)


@pytest.fixture(scope="module")
def vectorised():
    return trig_library(simd=True)


def _near_multiples_of_half_pi(rng, n: int, kmax: int) -> np.ndarray:
    """k pi/2 (rounded to a double) moved by up to 8 ulps: the worst cancellations."""
    k = rng.integers(-kmax, kmax, n)
    x = k * (math.pi / 2)
    return x + rng.integers(-8, 9, n) * np.spacing(x)


def test_bound_is_the_prelude_s():
    text = (ROOT / "templates" / "c" / "sincos.c.j2").read_text()
    assert f"#define MG_TRIG_BOUND {BOUND:.1e}".replace("e+06", "e6") in text
    # n = rint(x 2/pi) must stay below 2^20, so that n times a 33-bit part of pi/2 is exact
    assert round(BOUND * 2 / math.pi) < 2**20


@pytest.mark.parametrize("where", ["[-2pi, 2pi]", "[-1e5, 1e5]", "near k pi/2"])
def test_sin_and_cos_are_within_one_ulp_of_mpmath(scalar, where):
    rng = np.random.default_rng(2024)
    x = {"[-2pi, 2pi]": lambda: rng.uniform(-2 * np.pi, 2 * np.pi, SAMPLE),
         "[-1e5, 1e5]": lambda: rng.uniform(-1e5, 1e5, SAMPLE),
         "near k pi/2": lambda: _near_multiples_of_half_pi(rng, SAMPLE, 1_000_000)}[where]()
    s, c = run(scalar, x)
    assert max_ulp_error(x, s, mpmath.sin) < 1.0
    assert max_ulp_error(x, c, mpmath.cos) < 1.0


def test_arguments_on_both_sides_of_the_bound_are_within_one_ulp(scalar):
    """The last multiples of pi/2 below the bound (polynomial path) and the first above it
    (libm), and the doubles next to the bound itself."""
    k = np.arange(int(BOUND / (math.pi / 2)) - 20, int(BOUND / (math.pi / 2)) + 20)
    x = np.concatenate([k * (math.pi / 2), [np.nextafter(BOUND, 0), BOUND,
                                            np.nextafter(BOUND, np.inf)]])
    x = np.concatenate([x, -x])
    s, c = run(scalar, x)
    assert max_ulp_error(x, s, mpmath.sin) < 1.0
    assert max_ulp_error(x, c, mpmath.cos) < 1.0


def test_special_values(scalar):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                  1e-200, 1e300, -1e300, 1.7976931348623157e308])
    s, c = run(scalar, x)
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all()
    # sin keeps the sign of zero; tiny arguments give sin x = x and cos x = 1 exactly
    assert s[3] == 0 and not np.signbit(s[3]) and s[4] == 0 and np.signbit(s[4])
    np.testing.assert_array_equal(s[5:9], x[5:9])
    np.testing.assert_array_equal(c[3:9], 1.0)
    # huge arguments: the C library's values (math.sin is the same libm)
    np.testing.assert_array_equal(s[9:], [math.sin(v) for v in x[9:]])
    np.testing.assert_array_equal(c[9:], [math.cos(v) for v in x[9:]])


def test_pythagoras_and_parity_hold(scalar):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-10, 10, 50_000), rng.uniform(-BOUND, BOUND, 50_000)])
    s, c = run(scalar, x)
    assert np.max(np.abs(s * s + c * c - 1.0)) <= 4 * np.finfo(float).eps
    s_neg, c_neg = run(scalar, -x)
    np.testing.assert_array_equal(s_neg, -s)        # sin(-x) = -sin x, bit for bit
    np.testing.assert_array_equal(c_neg, c)         # cos(-x) = cos x
    assert np.all(np.abs(s) <= 1) and np.all(np.abs(c) <= 1)


def test_vectorised_build_gives_the_scalar_bits(scalar, vectorised):
    """The polynomial path under #pragma omp simd with -march=native (the SIMD build's flags)
    gives the bits of the full routine in the plain build: no FMA, no reordering."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-2 * np.pi, 2 * np.pi, 10_001),
                        rng.uniform(-BOUND, BOUND, 10_001),
                        _near_multiples_of_half_pi(rng, 10_001, 1_000_000), [-0.0, 5e-324]])
    want = run(scalar, x)
    for got in (run(vectorised, x, "poly"), run(vectorised, x, "mg")):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))
    flagged = run(vectorised, np.array([BOUND, np.nextafter(BOUND, np.inf), np.nan, -np.inf]),
                  "poly")[0]
    assert not np.isnan(flagged[0]) and np.isnan(flagged[1:]).all()


def test_c_printer_calls_the_project_routines():
    q = sp.Symbol("q1")
    printer = CPrinter({"strict": False})
    assert printer.doprint(sp.sin(q)) == "mg_sin(q1)"
    assert printer.doprint(2 * sp.cos(q + 1)) == "2.0*mg_cos(q1 + 1.0)"


def test_sin_and_cos_of_one_argument_become_one_sincos():
    body = [{"assign": True, "target": "c1", "expr": "mg_cos(q1)"},
            {"assign": True, "target": "x", "expr": "2*c1"},
            {"assign": True, "target": "s1", "expr": "mg_sin(q1)"},
            {"assign": True, "target": "s2", "expr": "mg_sin(q2 + 1.5)"},
            {"assign": False, "expr": "x", "status": 1, "message": "m"},
            {"assign": True, "target": "y", "expr": "mg_sin(q1)*mg_cos(q2)"}]
    out = pair_sincos(body)
    assert out[0]["sincos"] == {"sin": "s1", "cos": "c1", "arg": "q1"}
    assert [b.get("target") for b in out[1:]] == ["x", "s2", None, "y"]
    assert all(b["sincos"] is None for b in out[1:])
    assert whole_call("mg_sin(a)*mg_cos(b)") is None
    assert whole_call("mg_cos((a + b)*c)") == ("cos", "(a + b)*c")


def test_generated_c_calls_libm_sin_and_cos_only_in_the_fallback():
    for c_file in sorted((ROOT / "generated").glob("*/*.c")):
        text = c_file.read_text()
        calls = re.findall(r"(?<![\w.])(?:sin|cos)\(", text)
        assert len(calls) == 2, f"{c_file.name}: libm sin/cos outside mg_sincos's fallback"
        if "mg_sincos(" in text:
            assert "static inline MG_ALWAYS_INLINE void mg_sincos(" in text


def _atan2_pairs(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-circle points (the leg angles' arguments), pairs of any magnitude and sign, and
    pairs next to the four interval bounds of the reduction (|y|/|x| = 7/16 ... 39/16)."""
    t = rng.uniform(-4, 4, n)
    ys = [np.sin(t), rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)]
    xs = [np.cos(t), rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)]
    for r in (7 / 16, 11 / 16, 19 / 16, 39 / 16):
        x = rng.uniform(0.1, 2.0, n // 4) * rng.choice([-1.0, 1.0], n // 4)
        ys.append(np.abs(x) * r * (1 + rng.uniform(-1e-9, 1e-9, n // 4))
                  * rng.choice([-1.0, 1.0], n // 4))
        xs.append(x)
    return np.concatenate(ys), np.concatenate(xs)


def test_atan2_is_within_one_and_a_half_ulp_of_mpmath(scalar):
    """fdlibm's atan polynomial after a branch-free reduction (one quotient of |y| and |x|):
    measured 1.35 ulp at worst on 260,000 pairs (glibc's atan2 0.52)."""
    rng = np.random.default_rng(7)
    y, x = _atan2_pairs(rng, SAMPLE // 2)
    got = run_atan2(scalar, y, x)
    with mpmath.workprec(200):
        worst = max(ulps(g, mpmath.atan2(a, b))
                    for a, b, g in zip(y.tolist(), x.tolist(), got.tolist()))
    assert worst < 1.5


def test_atan2_special_values_are_c99s(scalar):
    """Signed zeros, infinities, NaN and the extremes of the double range as the C library's
    atan2 (C99 Annex F), bit for bit where the exact result is a constant."""
    v = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.7976931348623157e308,
         -1.7976931348623157e308, 1e-300, 1e300]
    y, x = (a.ravel() for a in np.meshgrid(v, v))
    got, libm = run_atan2(scalar, y, x), run_atan2(scalar, y, x, "libm")
    assert np.array_equal(np.isnan(got), np.isnan(libm))
    ok = ~np.isnan(libm)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(libm[ok]))
    assert np.max(np.abs(got[ok] - libm[ok]) / np.maximum(np.spacing(np.abs(libm[ok])),
                                                          5e-324)) <= 2.0
    special = ok & ((y == 0) | (x == 0) | np.isinf(y) | np.isinf(x))
    np.testing.assert_array_equal(got[special], libm[special])


def test_vectorised_atan2_gives_the_scalar_bits(scalar, vectorised):
    rng = np.random.default_rng(12)
    y, x = _atan2_pairs(rng, 10_000)
    y = np.concatenate([y, [0.0, -0.0, np.inf, np.nan, 1.0]])
    x = np.concatenate([x, [-0.0, -1.0, -np.inf, 1.0, 0.0]])
    want = run_atan2(scalar, y, x).view(np.uint64)
    for routine in ("simd", "mg"):
        np.testing.assert_array_equal(run_atan2(vectorised, y, x, routine).view(np.uint64), want)


# --- fmax, fmin and the two forms of mg_select ------------------------------------------------

_PAIR_VALUES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 5e-324, -5e-324,
                1.7976931348623157e308, -1.7976931348623157e308]


def _all_pairs() -> tuple[np.ndarray, np.ndarray]:
    x, y = (a.ravel() for a in np.meshgrid(_PAIR_VALUES, _PAIR_VALUES))
    rng = np.random.default_rng(5)
    rx, ry = rng.normal(size=2000), rng.normal(size=2000)
    ry[::3] = rx[::3]                                 # equal arguments
    return np.concatenate([x, rx]), np.concatenate([y, ry])


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_and_fmin_follow_c99_and_take_y_on_ties(scalar, name):
    """C99 F.9.9.2/3: a NaN argument loses to a number (both NaN: NaN); otherwise the larger
    (smaller); arguments that compare equal (+0 and -0 included) give y, as glibc's x86-64
    fmax does, on every CPU."""
    x, y = _all_pairs()
    got = run_pair(scalar, name, x, y)
    pick = np.greater if name == "fmax" else np.less
    want = np.where(np.isnan(x), y, np.where(np.isnan(y), x, np.where(pick(x, y), x, y)))
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    libm = run_pair(scalar, name, x, y, "libm")
    differ = got.view(np.uint64) != libm.view(np.uint64)
    assert np.all((x[differ] == 0) & (y[differ] == 0))  # at most the sign of a zero


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_vectorised_fmax_and_fmin_give_the_scalar_bits(scalar, vectorised, name):
    x, y = _all_pairs()
    want = run_pair(scalar, name, x, y).view(np.uint64)
    for routine in ("simd", "mg"):
        np.testing.assert_array_equal(run_pair(vectorised, name, x, y, routine).view(np.uint64),
                                      want)


def test_both_forms_of_the_select_give_the_same_bits():
    """MG_SELECT_BITS 1 (a mask on the bits: AVX2, AVX-512) and 0 (a ternary: other targets)
    compute the same atan2, fmax and fmin, scalar and under #pragma omp simd."""
    rng = np.random.default_rng(19)
    y, x = _atan2_pairs(rng, 4000)
    px, py = _all_pairs()
    results = []
    for bits in (0, 1):
        lib = trig_library(simd=True, select_bits=bits)
        for routine in ("mg", "simd"):
            results.append([run_atan2(lib, y, x, routine).view(np.uint64),
                            run_pair(lib, "fmax", px, py, routine).view(np.uint64),
                            run_pair(lib, "fmin", px, py, routine).view(np.uint64)])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_c_printer_writes_max_and_min_as_the_project_routines():
    a, b, c = sp.symbols("a b c")
    printer = CPrinter({"strict": False})
    assert printer.doprint(sp.Max(a, b)) in ("mg_fmax(a, b)", "mg_fmax(b, a)")
    assert re.fullmatch(r"mg_fmin\(\w, mg_fmin\(\w, \w\)\)", printer.doprint(sp.Min(a, b, c)))
