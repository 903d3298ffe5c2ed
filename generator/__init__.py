"""mechgen: symbolic generator of flat scalar kernels for the dynamics of mechanisms.

SymPy memoises the construction of sums and products (``AssocOp.__new__``) in an LRU cache of
1000 entries by default; the kernels of one mechanism rebuild the same kinematic and inertial
subexpressions many times (each kernel builds its own recursion), ~70,000 distinct ones for a
30-joint chain, so the default cache thrashes. Unless the user set ``SYMPY_CACHE_SIZE``, it is
raised here, before any mechgen module imports SymPy (SymPy reads it once, at import): the
generation of a 30-joint chain or of the Gough-Stewart mechanism takes ~35-40 % less CPU
(bench/generation_bench.py), for ~20 MB more memory. The cache only memoises pure
constructors, so the kernels are the same bytes whatever its size
(tests/test_generation_speed_paths.py).
"""

import os

__version__ = "0.1.0"

SYMPY_CACHE_SIZE = "200000"
os.environ.setdefault("SYMPY_CACHE_SIZE", SYMPY_CACHE_SIZE)
