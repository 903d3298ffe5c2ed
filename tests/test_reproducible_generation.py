"""Generation is reproducible: the same spec gives the same bytes on any CPU, numpy build and
hash seed, because no baked constant passes through numpy or libm (generator/numeric.py).

The committed files in generated/ were written on another machine; a generation here must
match them byte for byte (tests/test_generated_current.py checks every bundled mechanism).
This file checks the mechanism of that guarantee:
- a generation in a fresh process where numpy cannot be imported at all;
- a generation with numpy's SIMD dispatch disabled and another hash seed;
- the numeric kernels' rounding against exact rational arithmetic.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from mechgen.generator import numeric as num
from mechgen.generator.build import GENERATED, MECHANISMS

# one URDF robot (rpy rotations, axis alignment, merged inertias), one parallel mechanism
# (frames from the home pose, crank branches), one hand-written serial spec (exact rationals)
SPECS = {"ur5": "ur5_urdf.toml", "hunt_rus_docking": "hunt_rus_docking.toml",
         "space_arm7": "space_arm7.toml"}

_GENERATE = r"""
import hashlib, json, sys
import mechgen                                    # the runtime may use numpy ...
if sys.argv[1] == "block-numpy":                  # ... the generator may not
    for k in [k for k in sys.modules if k == "numpy" or k.startswith("numpy.")]:
        sys.modules[k] = None
from mechgen.generator.build import files_for_spec
_, _, files = files_for_spec(sys.argv[2])
print(json.dumps({k: hashlib.sha256(v.encode()).hexdigest() for k, v in files.items()}))
"""


def _digests_in_subprocess(spec: Path, mode: str, env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", _GENERATE, mode, str(spec)],
                         env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _committed_digests(name: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((GENERATED / name).iterdir())}


def _numpy_dispatch_features() -> str:
    """numpy's optional SIMD targets on this build."""
    out = subprocess.run([sys.executable, "-c", "import numpy._core._multiarray_umath as m; "
                          "print(' '.join(m.__cpu_dispatch__))"], capture_output=True, text=True)
    return out.stdout.strip()


@pytest.mark.parametrize("coretype", ["Prescott", "Haswell"])
def test_generation_under_other_blas_and_simd_kernels_matches_the_committed_files(coretype):
    """OpenBLAS picks its kernels by CPU (SkylakeX, Haswell/Zen, ...) and numpy its SIMD paths;
    forcing other ones is how another CPU looks from here. Before generator/numeric.py, the
    Gough-Stewart kernels generated under OPENBLAS_CORETYPE=Prescott or Haswell differed from
    those generated under SkylakeX in the last digits of baked constants (seen on this very
    test's mechanism)."""
    env = {"PYTHONHASHSEED": "7", "OPENBLAS_CORETYPE": coretype}
    features = _numpy_dispatch_features()
    if features:
        env["NPY_DISABLE_CPU_FEATURES"] = features
    got = _digests_in_subprocess(MECHANISMS / "gough_stewart_docking.toml", "numpy-allowed", env)
    assert got == _committed_digests("gough_stewart_docking")


# --- the numeric kernels: deterministic and correctly rounded ------------------------------

def _nearest(x: Fraction) -> float:
    return float(x)   # Fraction -> float rounds to nearest (ties to even)


def _random_floats(rng: random.Random, n: int) -> list[float]:
    return [rng.uniform(-3.0, 3.0) * 10.0 ** rng.randint(-3, 3) for _ in range(n)]


def test_vector_operations_are_correctly_rounded():
    rng = random.Random(3)
    for _ in range(300):
        a = tuple(_random_floats(rng, 3))
        b = tuple(_random_floats(rng, 3))
        F = [Fraction(x) for x in a], [Fraction(x) for x in b]
        assert num.dot(a, b) == _nearest(sum(x * y for x, y in zip(*F)))
        fa, fb = F
        assert num.cross(a, b) == (_nearest(fa[1] * fb[2] - fa[2] * fb[1]),
                                   _nearest(fa[2] * fb[0] - fa[0] * fb[2]),
                                   _nearest(fa[0] * fb[1] - fa[1] * fb[0]))
        assert num.sub(a, b) == tuple(_nearest(x - y) for x, y in zip(fa, fb))


def test_matrix_product_is_correctly_rounded_entrywise():
    rng = random.Random(4)
    for _ in range(100):
        A = tuple(tuple(_random_floats(rng, 3)) for _ in range(3))
        B = tuple(tuple(_random_floats(rng, 3)) for _ in range(3))
        exact = [[sum(Fraction(A[i][k]) * Fraction(B[k][j]) for k in range(3))
                  for j in range(3)] for i in range(3)]
        assert num.matmul(A, B) == tuple(tuple(_nearest(x) for x in row) for row in exact)


def test_trigonometry_matches_an_independent_high_precision_evaluation():
    """sin/cos/atan2/sqrt against SymPy's evaluation to 60 digits, rounded by Fraction."""
    import sympy as sp
    rng = random.Random(5)
    for x in _random_floats(rng, 200):
        X = sp.Rational(Fraction(x))
        assert num.sin(x) == _nearest(Fraction(str(sp.sin(X).evalf(60))))
        assert num.cos(x) == _nearest(Fraction(str(sp.cos(X).evalf(60))))
        y = rng.uniform(-2, 2)
        assert num.atan2(y, x) == _nearest(Fraction(str(sp.atan2(sp.Rational(Fraction(y)),
                                                                   X).evalf(60))))
        assert num.sqrt(abs(x)) == _nearest(Fraction(str(sp.sqrt(abs(X)).evalf(60))))
    assert num.cos_deg(60.0) == 0.5 and num.sin_deg(30.0) == 0.5 and num.cos_deg(90.0) < 1e-40


def test_rotation_onto_maps_the_axis_and_is_orthonormal():
    rng = random.Random(6)
    for _ in range(100):
        a = num.normalize(tuple(rng.uniform(-1, 1) for _ in range(3)))
        k = max(range(3), key=lambda i: abs(a[i]))
        if a[k] < 0:
            continue                           # the half-turn case is handled by the caller
        P = num.rotation_onto(a, k)
        Pa = num.matvec(P, a)
        assert all(abs(Pa[i] - (i == k)) < 4e-16 for i in range(3))
        PPt = num.matmul(P, num.transpose(P))
        assert all(abs(PPt[i][j] - (i == j)) < 4e-16 for i in range(3) for j in range(3))
        assert abs(num.determinant(P) - 1) < 4e-16


def test_symmetric_eigenvalues_of_a_known_spectrum():
    """Q diag(1, 2, 5) Q^T for a rotation Q: eigenvalues 1, 2, 5 to rounding."""
    Q = num.matmul(num.elementary(0, 0.3), num.elementary(2, 1.1))
    S = num.congruence(num.transpose(Q), ((1.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.0, 0.0, 5.0)))
    ev = num.symmetric_eigenvalues(S)
    assert all(abs(e - t) < 1e-14 for e, t in zip(ev, (1.0, 2.0, 5.0)))
