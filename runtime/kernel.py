"""Numpy wrappers around one generated kernel (C via cffi, or the plain Python module).

A kernel takes its inputs positionally or by name, each a float64 C-contiguous array of shape
``(size,)`` for one state or ``(N, size)`` for a batch of N; lists are converted, anything else
(float32, strided, wrong size, NaN or inf) raises ValueError naming the argument. Outputs come
back with their logical shape, ``(N, *shape)`` for a batch. A non-zero kernel status raises
:class:`KernelStatusError` naming the states and the reason, unless ``errors="nan"``.
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable

import numpy as np


class KernelStatusError(ValueError):
    """A kernel reported a status (e.g. a singular mass matrix) for some states."""

    def __init__(self, message: str, status: np.ndarray) -> None:
        super().__init__(message)
        self.status = status


def as_input(name: str, value: Any, size: int, kernel: str) -> np.ndarray:
    where = f"{kernel}: argument '{name}'"
    if isinstance(value, np.ndarray):
        if value.dtype != np.float64:
            raise ValueError(f"{where} must be float64, got {value.dtype}")
        if not value.flags.c_contiguous:
            raise ValueError(f"{where} must be C-contiguous (use np.ascontiguousarray)")
        a = value
    else:
        try:
            a = np.array(value, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: cannot be read as float64 numbers ({e})") from None
    if a.ndim not in (1, 2) or a.shape[-1] != size:
        raise ValueError(f"{where} must have shape ({size},) or (N, {size}), got {a.shape}")
    if not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{where} contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    return a


class Kernel:
    """One generated function; call it like ``mech.mass_matrix(q)``."""

    def __init__(self, meta: dict, backend: str, c_lib=None, ffi=None,
                 py_func: Callable | None = None) -> None:
        self.name = meta["name"]
        self.doc = meta["doc"]
        self.inputs = [(p["name"], prod(p["shape"])) for p in meta["inputs"]]
        self.outputs = [(p["name"], tuple(p["shape"])) for p in meta["outputs"]]
        self.statuses = {int(k): v for k, v in meta["statuses"].items()}
        self.ops = meta["ops"]
        self.backend = backend
        self._lib, self._ffi, self._py = c_lib, ffi, py_func
        if backend == "c":
            self._single = getattr(c_lib, meta["c_function"])
            self._batch = getattr(c_lib, meta["c_function"] + "_batch")
        self.__doc__ = self.doc

    def __repr__(self) -> str:
        ins = ", ".join(n for n, _ in self.inputs)
        return f"<kernel {self.name}({ins}) [{self.backend}]>"

    def _bind(self, args: tuple, kwargs: dict) -> list[np.ndarray]:
        names = [n for n, _ in self.inputs]
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} inputs ({', '.join(names)}), "
                            f"got {len(args)}")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{self.name}() has no input '{k}'; inputs: {', '.join(names)}")
            if k in values:
                raise TypeError(f"{self.name}() got '{k}' twice")
            values[k] = v
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"{self.name}() missing input(s): {', '.join(missing)}")
        arrays = [as_input(n, values[n], size, self.name) for n, size in self.inputs]
        batch = {a.ndim == 2 for a in arrays}
        if len(batch) > 1:
            raise ValueError(f"{self.name}: mix of single-state and batch inputs; give every "
                             f"input the same leading dimension")
        if batch == {True} and len({a.shape[0] for a in arrays}) > 1:
            shapes = ", ".join(f"{n}: {a.shape}" for (n, _), a in zip(self.inputs, arrays))
            raise ValueError(f"{self.name}: batch inputs differ in length ({shapes})")
        return arrays

    def __call__(self, *args, errors: str = "raise", **kwargs):
        if errors not in ("raise", "nan"):
            raise ValueError(f"errors must be 'raise' or 'nan', got {errors!r}")
        arrays = self._bind(args, kwargs)
        batch = arrays[0].ndim == 2 if arrays else False
        n = arrays[0].shape[0] if batch else 1
        outs = [np.empty((n, prod(shape)) if batch else prod(shape)) for _, shape in self.outputs]
        status = np.zeros(n, dtype=np.int32)
        if self.backend == "c":
            self._call_c(arrays, outs, status, batch, n)
        else:
            self._call_py(arrays, outs, status, batch, n)
        if errors == "raise" and status.any():
            bad = np.flatnonzero(status)
            why = "; ".join(sorted({self.statuses.get(int(s), f"status {s}") for s in status[bad]}))
            where = f"state(s) {bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}" if batch else "this state"
            raise KernelStatusError(f"{self.name}: {why} at {where}", status)
        shaped = [o.reshape((n, *shape) if batch else shape) for o, (_, shape) in zip(outs, self.outputs)]
        return shaped[0] if len(shaped) == 1 else tuple(shaped)

    def _call_c(self, arrays, outs, status, batch, n):
        f = self._ffi
        ins = [f.from_buffer("double[]", a) for a in arrays]
        outp = [f.from_buffer("double[]", o) for o in outs]
        if batch:
            self._batch(n, *ins, *outp, f.from_buffer("int32_t[]", status))
        else:
            status[0] = self._single(*ins, *outp)

    def _call_py(self, arrays, outs, status, batch, n):
        if not batch:
            lists = [a.tolist() for a in arrays]
            res = [[0.0] * o.size for o in outs]
            status[0] = self._py(*lists, *res)
            for o, r in zip(outs, res):
                o[:] = r
            return
        for i in range(n):
            res = [[0.0] * o.shape[1] for o in outs]
            status[i] = self._py(*[a[i].tolist() for a in arrays], *res)
            for o, r in zip(outs, res):
                o[i] = r
