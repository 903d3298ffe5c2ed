"""What makes generation faster changes the time, never the kernels.

- SymPy's construction cache (raised by ``mechgen.generator`` unless SYMPY_CACHE_SIZE is set):
  a generation with a tiny cache gives the committed bytes (a generation with the large one
  is tests/test_generated_current.py);
- the op counts and free symbols the pipeline memoises across the passes of one kernel:
  the same answers as computed afresh, and a bad kernel is still refused;
- the derivative passes' value numbering looks a negative up by its key instead of building
  it: the key of ``-e`` computed without ``-e`` is the key of ``-e``, and keys are equal
  only for equal expressions.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
import sympy as sp

from mechgen.generator.build import GENERATED, MECHANISMS
from mechgen.generator.passes.derivatives import _negated_key, _terms_key
from mechgen.generator.ir import Assign, InvariantError, Kernel, Port, check_invariants, symbol
from mechgen.generator.passes.opcount import count_ops
from mechgen.generator.pipeline import optimise

_CACHE_SIZE = r"""
import mechgen.generator, sympy.core.cache as cache
print(cache.SYMPY_CACHE_SIZE)
"""

_GENERATE = r"""
import hashlib, json, sys
import mechgen.generator, sympy.core.cache as cache
from mechgen.generator.build import files_for_spec
_, _, files = files_for_spec(sys.argv[1])
print(json.dumps({"cache": cache.SYMPY_CACHE_SIZE,
                  "files": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in files.items()}}))
"""


def _run(code: str, *args: str, env: dict[str, str]) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "SYMPY_CACHE_SIZE"}
    out = subprocess.run([sys.executable, "-c", code, *args], env={**environ, **env},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_mechgen_raises_sympys_cache_unless_the_user_sized_it():
    import mechgen.generator
    assert _run(_CACHE_SIZE, env={}) == mechgen.generator.SYMPY_CACHE_SIZE
    assert _run(_CACHE_SIZE, env={"SYMPY_CACHE_SIZE": "7"}) == "7"


def test_kernels_are_the_committed_bytes_with_a_tiny_sympy_cache():
    got = json.loads(_run(_GENERATE, str(MECHANISMS / "ur5_urdf.toml"),
                          env={"SYMPY_CACHE_SIZE": "16", "PYTHONHASHSEED": "3"}))
    assert got["cache"] == 16
    committed = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in sorted((GENERATED / "ur5").iterdir())}
    assert got["files"] == committed


def _random_kernel(seed: int) -> Kernel:
    """A body of sums and products of earlier names, some repeated (CSE has work)."""
    import random
    rng = random.Random(seed)
    names = [symbol(f"x{i}") for i in range(4)]
    inputs = tuple(names)
    body = []
    for i in range(40):
        a, b, c = (rng.choice(names) for _ in range(3))
        expr = rng.choice([a * b + c, a * b - c * a, sp.sin(a) * b + 2 * c, a * b * c, (a + b) * c])
        t = symbol(f"t{i}")
        body.append(Assign(t, expr))
        names.append(t)
    outputs = tuple(names[-6:])
    return Kernel("k", "", (Port("in", (4,), inputs),), (Port("out", (6,), outputs),),
                  tuple(body))


@pytest.mark.parametrize("seed", range(3))
def test_memoised_op_counts_equal_fresh_counts_after_every_pass(seed):
    k = _random_kernel(seed)
    g = optimise(lambda _: k, None)
    fresh = [("built", count_ops(k))]
    from mechgen.generator.pipeline import PASSES
    for name, p in PASSES:
        k = p(k)
        fresh.append((name, count_ops(k)))
    assert g.passes == fresh
    assert g.passes[-1][1]["total"] < g.passes[0][1]["total"]   # CSE found something


def test_memoised_free_symbols_still_refuse_a_use_before_definition():
    x, t1, t2 = symbol("x"), symbol("t1"), symbol("t2")
    port = (Port("in", (1,), (x,)),)
    good = Kernel("k", "", port, (Port("out", (1,), (t2,)),),
                  (Assign(t1, x * x + 1), Assign(t2, t1 * x)))
    bad = Kernel("k", "", port, (Port("out", (1,), (t2,)),),
                 (Assign(t2, t1 * x), Assign(t1, x * x + 1)))
    free: dict = {}
    check_invariants(good, free)
    with pytest.raises(InvariantError, match="t1"):
        check_invariants(bad, free)


def _random_expressions(seed: int, count: int) -> list[sp.Expr]:
    """Sums and terms with integer, rational and float coefficients, powers, functions."""
    import random
    rng = random.Random(seed)
    x = [symbol(f"x{i}") for i in range(5)]
    forms = [lambda a, b, c: a * b - c, lambda a, b, c: -a * b + sp.Rational(3, 2),
             lambda a, b, c: 2.5 * a - b * c, lambda a, b, c: -(a + b) * c * b,
             lambda a, b, c: a**2 - 1, lambda a, b, c: -a / b, lambda a, b, c: sp.sin(a) * (b - c),
             lambda a, b, c: -sp.Float("0.1") * a * b * c + 3, lambda a, b, c: a - b,
             lambda a, b, c: sp.Integer(-3), lambda a, b, c: c, lambda a, b, c: -c,
             lambda a, b, c: (a - b) * (b - c) - 2 * a * c + sp.sqrt(b)]
    return [rng.choice(forms)(*rng.sample(x, 3)) for _ in range(count)]


def test_negated_key_is_the_key_of_the_built_negative():
    for e in _random_expressions(0, 400):
        assert _negated_key(e) == _terms_key(-e), e


def test_equal_keys_only_for_equal_expressions():
    exprs = _random_expressions(1, 400)
    keys: dict = {}
    for e in exprs:
        assert keys.setdefault(_terms_key(e), e) == e
    assert len(keys) == len(set(exprs))
