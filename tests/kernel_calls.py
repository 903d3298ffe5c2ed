"""Calling a compiled C kernel through cffi on many states, and comparing two runs bit for bit
(tests/test_simd_batch.py, tests/test_trig_gather.py)."""

from __future__ import annotations

from math import prod

import numpy as np


def run_kernel(module, meta: dict, inputs: list[np.ndarray], batch: bool
               ) -> tuple[list[np.ndarray], np.ndarray]:
    """Outputs (n x size each, prefilled with 7.0) and statuses of the kernel ``meta`` (a
    manifest entry) of a cffi ``module``, from one ``_batch`` call or n single-state calls."""
    ffi, lib = module.ffi, module.lib
    n = len(inputs[0])
    outs = [np.full((n, prod(p["shape"])), 7.0) for p in meta["outputs"]]
    status = np.full(n, -1, dtype=np.int32)
    ptr = lambda a: ffi.cast("double *", a.ctypes.data)
    fn = meta["c_function"]
    if batch:
        failed = getattr(lib, fn + "_batch")(n, *map(ptr, inputs), *map(ptr, outs),
                                             ffi.cast("int32_t *", status.ctypes.data))
        assert failed == np.count_nonzero(status)
    else:
        for i in range(n):
            status[i] = getattr(lib, fn)(*[ptr(a[i:]) for a in inputs],
                                         *[ptr(o[i:]) for o in outs])
    return outs, status


def assert_bitwise(a, b, what: str) -> None:
    """Equal statuses, and outputs equal bit for bit, except that any two NaNs are equal: the
    sign and payload of a NaN depend on which operand of ``x*y`` the compiler puts first
    (x86 keeps the first NaN operand's bits), which C leaves free."""
    (outs_a, st_a), (outs_b, st_b) = a, b
    assert np.array_equal(st_a, st_b), f"{what}: statuses differ"
    for x, y in zip(outs_a, outs_b):
        same = (x.view(np.uint64) == y.view(np.uint64)) | (np.isnan(x) & np.isnan(y))
        diff = np.flatnonzero(~same.all(axis=1))
        assert diff.size == 0, f"{what}: states {diff[:5]} differ in their bits"
