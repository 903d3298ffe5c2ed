"""The compiled assembly loop of the linkage family (runtime/csrc/linkage_assemble.c).

The loop is compiled once (cffi, cached under ``<cache>/linkage/<hash>``, the hash covering
the C source, flags, compiler, cffi and Python), independent of any mechanism. It calls the
mechanism's ``newton_step`` kernel through a function pointer taken from the mechanism's own
compiled library (:func:`mechgen.runtime.cbuild.load_c`, the same cached build its kernels
use), so no mechanism is compiled again.
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import numpy as np

from mechgen.runtime.backends import entry
from mechgen.runtime.cbuild import DRIVER_FLAGS, build_driver, isa_flags
from mechgen.runtime.mechanism import Mechanism

CSRC = Path(__file__).resolve().parent / "csrc"
SOURCES = ("linkage_assemble.h", "linkage_assemble.c")
MAX_N = 256                      # LK_MAX_N of the header

CDEF = """
typedef int (*lk_newton_step)(const double *q, double *q_next, double *error, double *branch,
                              double *orientation);
typedef int (*lk_newton_step_p)(const double *q, const double *p, double *q_next,
                                double *error, double *branch, double *orientation);
typedef struct {
    int n; int n_orient; int n_p; int max_iter; double tol; int branch_sign; int check_branch;
} lk_assembly;
int64_t lk_assemble_batch(const lk_assembly *a, lk_newton_step step, lk_newton_step_p step_p,
                          int64_t count, const double *q, const double *p, double *q_out,
                          int32_t *status, int32_t *iterations, double *error,
                          double *branch);
"""


@lru_cache(maxsize=None)
def driver() -> ModuleType:
    """The compiled loop's cffi module, built now or taken from the cache."""
    texts = {name: (CSRC / name).read_text() for name in SOURCES}
    return build_driver("linkage", CDEF, "linkage_assemble.h", texts, DRIVER_FLAGS + isa_flags())


def available(mech: Mechanism) -> bool:
    """True if the mechanism was loaded with a compiled (cffi) backend."""
    return entry(mech.manifest, mech.backend)["loader"] == "cffi" and mech.n <= MAX_N


_STEPS: "weakref.WeakKeyDictionary[Mechanism, tuple[int, bool]]" = weakref.WeakKeyDictionary()


def _newton_step_address(mech: Mechanism) -> tuple[int, bool]:
    """(address of the compiled newton_step, whether it takes p), once per mechanism."""
    if mech not in _STEPS:
        from mechgen.runtime.cbuild import load_c
        mod = load_c(mech.folder, mech.manifest, mech.backend)
        meta = next(k for k in mech.manifest["kernels"] if k["name"] == "newton_step")
        ptr = mod.ffi.addressof(mod.lib, meta["c_function"])
        takes_p = any(p["name"] == "p" for p in meta["inputs"])
        _STEPS[mech] = (int(mod.ffi.cast("uintptr_t", ptr)), takes_p)
    return _STEPS[mech]


def assemble(mech: Mechanism, q: np.ndarray, p: np.ndarray | None, tol: float, max_iter: int,
             branch_sign: int, check_branch: bool):
    """(q, status, iterations, error, branch) of every row of q (N, n); ``p`` (N, np) or None
    when newton_step takes no parameters."""
    if not available(mech):
        raise ValueError(f"{mech.name}: the compiled assembly needs a C backend (loaded with "
                         f"{mech.backend!r}); use engine='python'")
    mod = driver()
    ffi, lib = mod.ffi, mod.lib
    address, takes_p = _newton_step_address(mech)
    meta = next(k for k in mech.manifest["kernels"] if k["name"] == "newton_step")
    n_orient = int(np.prod(next(o["shape"] for o in meta["outputs"]
                                if o["name"] == "orientation")))
    if n_orient > MAX_N:
        raise ValueError(f"{mech.name}: {n_orient} orientation checks, more than {MAX_N}")
    count = len(q)
    q_in = np.ascontiguousarray(q, dtype=float)
    q_out = np.empty_like(q_in)
    status = np.empty(count, dtype=np.int32)
    iterations = np.empty(count, dtype=np.int32)
    error, branch = np.empty(count), np.empty(count)
    a = ffi.new("lk_assembly *", {"n": mech.n, "n_orient": n_orient,
                                  "n_p": p.shape[1] if takes_p else 0,
                                  "max_iter": int(max_iter), "tol": float(tol),
                                  "branch_sign": int(branch_sign),
                                  "check_branch": int(bool(check_branch))})
    if takes_p:
        if p is None or p.shape != (count, a.n_p) or a.n_p == 0:
            raise ValueError(f"{mech.name}: newton_step takes p: pass (N, number of parameters)")
        step, step_p = ffi.NULL, ffi.cast("lk_newton_step_p", address)
        p_buf = ffi.from_buffer("double[]", np.ascontiguousarray(p, dtype=float))
    else:
        step, step_p = ffi.cast("lk_newton_step", address), ffi.NULL
        p_buf = ffi.NULL
    failed = lib.lk_assemble_batch(a, step, step_p, count, ffi.from_buffer("double[]", q_in),
                                   p_buf, ffi.from_buffer("double[]", q_out),
                                   ffi.from_buffer("int32_t[]", status),
                                   ffi.from_buffer("int32_t[]", iterations),
                                   ffi.from_buffer("double[]", error),
                                   ffi.from_buffer("double[]", branch))
    if failed < 0:
        raise ValueError(f"{mech.name}: sizes out of range for the compiled assembly")
    return q_out, status, iterations, error, branch
