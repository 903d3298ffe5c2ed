"""Runtime: load a mechanism's generated kernels by name, with backend "c" or "python".

    >>> import runtime
    >>> arm = runtime.load("ur5_arm")            # C, compiled once and cached
    >>> A = arm.mass_matrix(q)                    # (6, 6); a batch q of shape (N, 6) -> (N, 6, 6)
    >>> f = arm.rhs(Q=lambda t, q, qd: ...)       # for scipy.integrate.solve_ivp

No SymPy is needed here: the generated files in ``generated/<name>/`` are all it reads.
"""

from mechgen.runtime.mechanism import Mechanism, load, generated_root
from mechgen.runtime.cbuild import CBuildError
from mechgen.runtime.kernel import KernelStatusError

__all__ = ["Mechanism", "load", "generated_root", "KernelStatusError", "CBuildError"]
