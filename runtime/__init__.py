"""Runtime: load a mechanism's generated kernels by name, with one of the backends its
manifest lists ("c", the default, or "python" for the bundled ones; see backends.py).

    >>> import runtime
    >>> arm = runtime.load("ur5_arm")            # C, compiled once and cached
    >>> A = arm.mass_matrix(q)                    # (6, 6); a batch q of shape (N, 6) -> (N, 6, 6)
    >>> f = arm.rhs(Q=lambda t, q, qd: ...)       # for scipy.integrate.solve_ivp

No SymPy is needed here: the generated files in ``generated/<name>/`` are all it reads.
"""

from mechgen.runtime.mechanism import Mechanism, available_backends, load, generated_root
from mechgen.runtime.cbuild import CBuildError
from mechgen.runtime.kernel import KernelStatusError

__all__ = ["Mechanism", "load", "available_backends", "generated_root", "KernelStatusError",
           "CBuildError"]
