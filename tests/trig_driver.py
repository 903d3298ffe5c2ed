"""The generated C's sine and cosine (templates/c/sincos.c.j2) compiled alone, over arrays.

Used by tests/test_sincos.py and bench/sincos_bench.py. ``trig_library(simd)`` builds, through
the runtime's cbuild (cached), the prelude exactly as the generated files hold it and four
loops over arrays:

- ``mg_sincos_array``: the full routine (polynomial, libm beyond ``MG_TRIG_BOUND``), one call
  per element, as a single-state kernel calls it;
- ``mg_sincos_poly_array``: the polynomial path under ``#pragma omp simd``, as a SIMD batch
  block runs it (flags ``range[i]`` for arguments out of its range);
- ``libm_sincos_array``: the C library's ``sin`` and ``cos`` (what the kernels called before);
- ``mg_sincos_sum``, ``libm_sincos_sum``: the same loops ``reps`` times, summing the results
  (the timing loops of the benchmark: nothing leaves the compiled loop).

``simd=True`` compiles with the SIMD build's flags (``-march=native -fopenmp-simd``...).
"""

from __future__ import annotations

import numpy as np

from mechgen.generator.emit import _env
from mechgen.runtime import cbuild

CDEF = """
void mg_sincos_array(const double *x, double *s, double *c, int64_t n);
void mg_sincos_poly_array(const double *x, double *s, double *c, int32_t *range, int64_t n);
void libm_sincos_array(const double *x, double *s, double *c, int64_t n);
double mg_sincos_sum(const double *x, int64_t n, int64_t reps);
double mg_sincos_poly_sum(const double *x, int64_t n, int64_t reps);
double libm_sincos_sum(const double *x, int64_t n, int64_t reps);
void mg_atan2_array(const double *y, const double *x, double *out, int64_t n);
void mg_atan2_simd_array(const double *y, const double *x, double *out, int64_t n);
void libm_atan2_array(const double *y, const double *x, double *out, int64_t n);
void mg_fmax_array(const double *x, const double *y, double *out, int64_t n);
void mg_fmin_array(const double *x, const double *y, double *out, int64_t n);
void mg_fmax_simd_array(const double *x, const double *y, double *out, int64_t n);
void mg_fmin_simd_array(const double *x, const double *y, double *out, int64_t n);
void libm_fmax_array(const double *x, const double *y, double *out, int64_t n);
void libm_fmin_array(const double *x, const double *y, double *out, int64_t n);
"""

LOOPS = r"""
void mg_sincos_array(const double *x, double *s, double *c, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) mg_sincos(x[i], &s[i], &c[i]);
}

void mg_sincos_poly_array(const double *x, double *s, double *c, int32_t *range, int64_t n)
{
    #pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        double si, ci;
        mg_sincos_poly(x[i], &si, &ci);
        s[i] = si;
        c[i] = ci;
        range[i] = mg_trig_out_of_range(x[i]);
    }
}

void libm_sincos_array(const double *x, double *s, double *c, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) {
        s[i] = sin(x[i]);
        c[i] = cos(x[i]);
    }
}

double mg_sincos_sum(const double *x, int64_t n, int64_t reps)
{
    double acc = 0.0;
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t i = 0; i < n; ++i) {
            double s, c;
            mg_sincos(x[i], &s, &c);
            acc += s + c;
        }
    return acc;
}

double mg_sincos_poly_sum(const double *x, int64_t n, int64_t reps)
{
    double acc = 0.0;
    for (int64_t r = 0; r < reps; ++r) {
        #pragma omp simd reduction(+:acc)
        for (int64_t i = 0; i < n; ++i) {
            double s, c;
            mg_sincos_poly(x[i], &s, &c);
            acc += s + c;
        }
    }
    return acc;
}

double libm_sincos_sum(const double *x, int64_t n, int64_t reps)
{
    double acc = 0.0;
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t i = 0; i < n; ++i) acc += sin(x[i]) + cos(x[i]);
    return acc;
}

void mg_atan2_array(const double *y, const double *x, double *out, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) out[i] = mg_atan2(y[i], x[i]);
}

void mg_atan2_simd_array(const double *y, const double *x, double *out, int64_t n)
{
    #pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = mg_atan2(y[i], x[i]);
}

void libm_atan2_array(const double *y, const double *x, double *out, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) out[i] = atan2(y[i], x[i]);
}

#define MG_PAIR_LOOPS(NAME, CALL)                                                      \
void mg_##NAME##_array(const double *x, const double *y, double *out, int64_t n)       \
{                                                                                      \
    for (int64_t i = 0; i < n; ++i) out[i] = CALL(x[i], y[i]);                         \
}                                                                                      \
void mg_##NAME##_simd_array(const double *x, const double *y, double *out, int64_t n)  \
{                                                                                      \
    _Pragma("omp simd")                                                                \
    for (int64_t i = 0; i < n; ++i) out[i] = CALL(x[i], y[i]);                         \
}                                                                                      \
void libm_##NAME##_array(const double *x, const double *y, double *out, int64_t n)     \
{                                                                                      \
    for (int64_t i = 0; i < n; ++i) out[i] = NAME(x[i], y[i]);                         \
}
MG_PAIR_LOOPS(fmax, mg_fmax)
MG_PAIR_LOOPS(fmin, mg_fmin)
"""


def prelude() -> str:
    """The sine and cosine as every generated C file holds them."""
    return _env().get_template("c/sincos.c.j2").render()


def trig_library(simd: bool = False, select_bits: int | None = None):
    """The cffi module (``.ffi``, ``.lib``) of the loops above, built with the runtime's flags
    (``simd``: the SIMD build's); ``select_bits`` 0 or 1 forces the form of ``mg_select``
    (``MG_SELECT_BITS``; default: the target's)."""
    source = "#include <math.h>\n#include <stdint.h>\n" + prelude() + LOOPS
    flags = cbuild.cflags(simd)
    if select_bits is not None:
        flags = [*flags, f"-DMG_SELECT_BITS={int(select_bits)}"]
    return cbuild.build_driver("sincos", CDEF, "trig.h", {"trig.c": source, "trig.h": CDEF},
                               flags)


def _ptr(ffi, a: np.ndarray, ctype: str = "double *"):
    return ffi.cast(ctype, a.ctypes.data)


def run(module, x: np.ndarray, routine: str = "mg") -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of every element of ``x`` by ``routine``: "mg" (mg_sincos), "poly"
    (mg_sincos_poly vectorised; out-of-range elements are NaN here) or "libm"."""
    x = np.ascontiguousarray(x, dtype=float)
    s, c = np.empty_like(x), np.empty_like(x)
    ffi, lib = module.ffi, module.lib
    if routine == "poly":
        flags = np.empty(x.shape, dtype=np.int32)
        lib.mg_sincos_poly_array(_ptr(ffi, x), _ptr(ffi, s), _ptr(ffi, c),
                                 _ptr(ffi, flags, "int32_t *"), x.size)
        s[flags != 0] = c[flags != 0] = np.nan
    else:
        fn = lib.mg_sincos_array if routine == "mg" else lib.libm_sincos_array
        fn(_ptr(ffi, x), _ptr(ffi, s), _ptr(ffi, c), x.size)
    return s, c


def run_atan2(module, y: np.ndarray, x: np.ndarray, routine: str = "mg") -> np.ndarray:
    """atan2(y_i, x_i) by ``routine``: "mg" (mg_atan2, one call per element), "simd" (the same
    under #pragma omp simd) or "libm"."""
    y, x = (np.ascontiguousarray(a, dtype=float) for a in np.broadcast_arrays(y, x))
    out = np.empty_like(x)
    fn = {"mg": module.lib.mg_atan2_array, "simd": module.lib.mg_atan2_simd_array,
          "libm": module.lib.libm_atan2_array}[routine]
    fn(_ptr(module.ffi, y), _ptr(module.ffi, x), _ptr(module.ffi, out), x.size)
    return out


def run_pair(module, name: str, x: np.ndarray, y: np.ndarray, routine: str = "mg") -> np.ndarray:
    """``name`` ("fmax" or "fmin") of (x_i, y_i) by ``routine``: "mg" (mg_fmax, mg_fmin), "simd"
    (the same under #pragma omp simd) or "libm"."""
    x, y = (np.ascontiguousarray(a, dtype=float) for a in np.broadcast_arrays(x, y))
    out = np.empty_like(x)
    fn = getattr(module.lib, {"mg": f"mg_{name}_array", "simd": f"mg_{name}_simd_array",
                              "libm": f"libm_{name}_array"}[routine])
    fn(_ptr(module.ffi, x), _ptr(module.ffi, y), _ptr(module.ffi, out), x.size)
    return out


def max_ulp_error(x: np.ndarray, got: np.ndarray, exact_fn) -> float:
    """max over i of |got_i - f(x_i)| / ulp(f(x_i)), f evaluated by mpmath at 200 bits; the
    ulp of a real y in [2^(e-1), 2^e) is 2^(e-53) (2^-1074 below the normal range)."""
    import mpmath
    with mpmath.workprec(200):
        return max((ulps(gi, exact_fn(mpmath.mpf(xi)))
                    for xi, gi in zip(x.tolist(), got.tolist())), default=0.0)


def ulps(got: float, exact) -> float:
    """|got - exact| in ulps of ``exact`` (an mpmath number; 0 or inf when exact is 0)."""
    import mpmath
    if exact == 0:
        return 0.0 if got == 0 else float("inf")
    _, e = mpmath.frexp(exact)
    ulp = mpmath.ldexp(1, max(int(e) - 53, -1074))
    return float(abs(mpmath.mpf(got) - exact) / ulp)
