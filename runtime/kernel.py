"""Numpy wrappers around one generated kernel (C via cffi, or the plain Python module).

A kernel takes its inputs positionally or by name, each a float64 C-contiguous array of shape
``(size,)`` for one state or ``(N, size)`` for a batch of N; lists of real numbers are
converted, anything else (float32, strided, wrong size, NaN or inf, complex, strings, None,
integers too large for float64, masked arrays) raises ValueError naming the argument. An
ndarray subclass (``np.matrix``, a memmap) is read as the plain array of its data. Outputs come
back with their logical shape, ``(N, *shape)`` for a batch. A non-zero kernel status raises
:class:`KernelStatusError` naming the states and the reason, unless ``errors="nan"``.

``out=`` writes the outputs into given arrays (one per output, float64, C-contiguous,
writeable, of the output's shape, ``(N, *shape)`` for a batch; not sharing memory with each
other) and returns them. An ``out`` array may also be an input (an integrator's state updated
in place): an input that an output overlaps is read from a copy. ``threads=`` splits a batch
across a persistent pool of threads (:mod:`mechgen.runtime.batch_threads`); the results are
bitwise those of one thread. One state, or a batch of up to 512 states, given as plain
float64 arrays takes a fast path (see :class:`Kernel`) with the same results and the same
errors.

The parameter input ``p`` of a mechanism with named parameters may be omitted (or None): the
spec's defaults are used, and a parameter without a default raises TypeError naming it. It may
also be a dict of named values (the defaults fill in the others). A single ``p`` of shape
``(np,)`` is used for every state of a batch.
"""

from __future__ import annotations

import numbers
from functools import partial
from math import prod
from typing import Any, Callable

import numpy as np

from mechgen.runtime import batch_threads, fastcall


class KernelStatusError(ValueError):
    """A kernel reported a status (e.g. a singular mass matrix) for some states."""

    def __init__(self, message: str, status: np.ndarray) -> None:
        super().__init__(message)
        self.status = status


def status_error(kernel: str, statuses: dict, status: np.ndarray, batch: bool = True
                 ) -> KernelStatusError:
    """The error of the states that failed (``status``: one code per state, 0 where a state
    succeeded): the reasons, and in a batch the failed states (the first ten)."""
    bad = np.flatnonzero(status)
    why = "; ".join(sorted({statuses.get(int(s), f"status {s}") for s in status[bad]}))
    where = (f"state(s) {bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}" if batch
             else "this state")
    return KernelStatusError(f"{kernel}: {why} at {where}", status)


def as_input(name: str, value: Any, size: int, kernel: str) -> np.ndarray:
    """``value`` as a float64 C-contiguous array of shape (size,) or (N, size), else ValueError.

    A masked array is rejected (its masked elements would be computed with whatever lies
    under the mask); pass ``a.filled(value)`` or ``a.data`` explicitly.
    """
    where = f"{kernel}: argument '{name}'"
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{where} is a masked array, which kernels cannot honour; pass "
                         f"a.filled(value) or a.data explicitly")
    if isinstance(value, np.ndarray):
        if value.dtype != np.float64:
            raise ValueError(f"{where} must be float64, got {value.dtype}")
        if not value.flags.c_contiguous:
            raise ValueError(f"{where} must be C-contiguous (use np.ascontiguousarray)")
        a = np.asarray(value)               # an ndarray subclass: the plain array of its data
    else:
        a = _from_python(value, where)
    if a.ndim not in (1, 2) or a.shape[-1] != size:
        raise ValueError(f"{where} must have shape ({size},) or (N, {size}), got {a.shape}")
    if not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{where} contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    return a


def _from_python(value: Any, where: str) -> np.ndarray:
    """Lists (nested) and scalars of real numbers as float64; anything else is a ValueError."""
    if value is None or isinstance(value, (str, bytes)):
        raise ValueError(f"{where}: cannot be read as float64 numbers (got {_describe(value)})")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as e:            # ragged nesting
        raise ValueError(f"{where}: cannot be read as float64 numbers ({e})") from None
    kind = raw.dtype.kind
    if kind in "iuf":
        return np.array(raw, dtype=np.float64, order="C")     # (0-d stays 0-d)
    if kind == "O":
        return _from_objects(raw, where)
    what = {"c": "complex numbers", "b": "booleans", "U": "strings", "S": "bytes"}
    raise ValueError(f"{where}: cannot be read as float64 numbers (got "
                     f"{what.get(kind, str(raw.dtype))})")


def _from_objects(raw: np.ndarray, where: str) -> np.ndarray:
    """An object array (None, huge ints, mixed types) element by element."""
    out = np.empty(raw.shape, dtype=np.float64)
    for index, x in np.ndenumerate(raw):
        at = f"at index {index}"
        if not isinstance(x, numbers.Real) or isinstance(x, (bool, np.bool_)):
            raise ValueError(f"{where}: cannot be read as float64 numbers (got {_describe(x)} "
                             f"{at})")
        try:
            out[index] = float(x)
        except OverflowError:
            raise ValueError(f"{where}: number {at} is too large for float64 "
                             f"({str(x)[:20]}...)") from None
    return out


def _copy_overlapped(arrays: list[np.ndarray], outs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """The inputs, with a copy of each one that an output overlaps: the kernels read their
    inputs while they write their outputs (``restrict``), and the C entry copies every input
    anyway (runtime/csrc/extension/fastcall.c), so both paths allow ``out`` to be an input."""
    return [a.copy() if any(np.may_share_memory(a, o) for o in outs) else a for a in arrays]


def _describe(x: Any) -> str:
    return "None" if x is None else f"{type(x).__name__} {x!r:.40}"


class Parameters:
    """A mechanism's named parameters (the kernels' input ``p``) and the spec's defaults.

    ``defaults`` maps a parameter to its default value, or to None when the spec has none.
    """

    def __init__(self, mechanism: str, names: list[str],
                 defaults: dict[str, float | None] | None = None) -> None:
        self.mechanism = mechanism
        self.names = list(names)
        self.defaults = {k: v for k, v in (defaults or {}).items() if v is not None}
        self._default_vector: np.ndarray | None = None

    def without_default(self) -> list[str]:
        """The parameters the spec gives no default for."""
        return [n for n in self.names if n not in self.defaults]

    def default_vector(self, where: str = "params") -> np.ndarray:
        """``p`` of the spec's defaults, built once (kernels called without p use it)."""
        if self._default_vector is None:
            self._default_vector = self.vector(None, where)
            self._default_vector.flags.writeable = False
        return self._default_vector

    def vector(self, values: dict[str, Any] | None = None, where: str = "params") -> np.ndarray:
        """The input ``p``: named ``values`` over the defaults; unknown, missing or non-finite
        values raise ValueError naming the parameter."""
        if values is not None and not isinstance(values, dict):
            raise ValueError(f"{self.mechanism}: {where}: parameter values must be a dict "
                             f"{{name: value}}, got {type(values).__name__}")
        merged = {**self.defaults, **(values or {})}
        unknown = sorted(set(merged) - set(self.names), key=str)
        if unknown:
            raise ValueError(f"{self.mechanism}: unknown parameter(s) {unknown}; "
                             f"parameters: {self.names}")
        missing = [n for n in self.names if n not in merged]
        if missing:
            raise ValueError(f"{self.mechanism}: missing parameter(s) {missing} (the spec has no "
                             f"default for them); pass p=... or give them by name")
        return np.array([parameter_value(self.mechanism, n, merged[n]) for n in self.names],
                        dtype=np.float64)


def parameter_value(mechanism: str, name: str, value: Any) -> float:
    """One named parameter as a finite float, else ValueError naming it."""
    bad = f"{mechanism}: parameter '{name}' must be a finite real number, got {value!r:.40}"
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        raise ValueError(bad)
    try:
        x = float(value)
    except OverflowError:
        raise ValueError(bad + " (too large for float64)") from None
    if not np.isfinite(x):
        raise ValueError(bad)
    return x


def describe(meta: dict) -> str:
    """The help text of one kernel from its manifest entry: signature, inputs and outputs with
    shapes, units and frames (the generator's port docs), and the statuses it can return."""
    ins = [p["name"] + ("=None" if p["name"] == "p" else "") for p in meta["inputs"]]
    outs = [p["name"] for p in meta["outputs"]]
    lines = [f"{meta['name']}({', '.join(ins)}, errors='raise', out=None, threads=1) -> "
             f"{', '.join(outs)}", "", meta.get("doc", ""), "",
             "Inputs: float64 arrays of the shape given, or (N, size) for a batch of N states:"]
    for p in meta["inputs"]:
        lines.append(f"  {p['name']} {tuple(p['shape'])}: {p.get('doc', '')}")
    lines.append("Outputs (a batch adds a leading N):")
    for p in meta["outputs"]:
        lines.append(f"  {p['name']} {tuple(p['shape'])}: {p.get('doc', '')}")
    lines += ["out: arrays to write the outputs into (one per output, in this order, float64, "
              "C-contiguous, of the output's shape with the batch's N first); threads: split a "
              "batch across threads (or 'auto'), same bits as one."]
    if meta.get("statuses"):
        lines.append("Statuses (KernelStatusError, or NaN rows with errors='nan'):")
        lines += [f"  {k}: {v}" for k, v in meta["statuses"].items()]
    return "\n".join(lines)


def kernel_class(meta: dict) -> type["Kernel"]:
    """A Kernel subclass named after one kernel, so ``help(mech.mass_matrix)`` shows that
    kernel's own inputs and outputs (help() on an instance documents its class)."""
    return type(meta["name"], (Kernel,), {"__doc__": describe(meta), "__module__": __name__})


class Kernel:
    """One generated function; call it like ``mech.mass_matrix(q)``.

    ``backend`` is the name it was loaded with (for messages); it calls ``c_lib``'s symbols
    through ``ffi`` if given, else the Python function ``py_func``.

    Two paths lead to the same C code. A single state given as plain float64 arrays (the loop
    of an integrator or a controller) takes the fast path: the kernel's C entry
    (runtime/fastcall.py, runtime/csrc/extension/fastcall.c) checks the inputs, copies them,
    checks that they are finite, makes the outputs and calls the kernel, all in C. A batch of
    up to 512 states (a controller's horizon) does the same through the kernel's batch
    function, reading the inputs in place; a failed state is reported there with the
    message of :func:`status_error`. Everything else (larger batches, ``threads``, lists,
    dicts of parameters, and every input the fast path does not accept, so that errors are
    raised in one place, by :func:`as_input`) takes :meth:`_call_general`.
    """

    def __init__(self, meta: dict, backend: str, c_lib=None, ffi=None,
                 py_func: Callable | None = None, parameters: Parameters | None = None) -> None:
        self.name = meta["name"]
        self.doc = meta["doc"]
        self.inputs = [(p["name"], prod(p["shape"])) for p in meta["inputs"]]
        self.outputs = [(p["name"], tuple(p["shape"])) for p in meta["outputs"]]
        self.statuses = {int(k): v for k, v in meta["statuses"].items()}
        self.ops = meta["ops"]
        self.backend = backend
        self._lib, self._ffi, self._py = c_lib, ffi, py_func
        self.parameters = parameters if "p" in dict(self.inputs) else None
        self._index = {n: i for i, (n, _) in enumerate(self.inputs)}
        self._fast = None
        if c_lib is not None:           # a C library (the "cffi" loader): its exported symbols
            self._single = getattr(c_lib, meta["c_function"])
            self._batch = getattr(c_lib, meta["c_function"] + "_batch")
            self._fast = self._fast_entry(meta["c_function"])

    def _fast_entry(self, c_function: str):
        """The C entry (runtime/fastcall.py) over the kernel's ``_entry`` and ``_batch_entry``
        forms; None without the extension, for C generated before ``_entry``, or for a kernel
        the entry cannot call (every call then takes the general path)."""
        extension = fastcall.module()
        if extension is None or not hasattr(self._lib, c_function + "_entry"):
            return None
        address, batch_address = (
            int(self._ffi.cast("uintptr_t", self._ffi.addressof(self._lib, c_function + form)))
            if hasattr(self._lib, c_function + form) else 0
            for form in ("_entry", "_batch_entry"))
        p_index = self._index.get("p", -1)
        p_default = (self.parameters.default_vector(self.name)
                     if self.parameters is not None and not self.parameters.without_default()
                     else None)
        try:
            return extension.Entry(address, batch_address,
                                   tuple(size for _, size in self.inputs),
                                   tuple(shape for _, shape in self.outputs), p_index, p_default,
                                   partial(status_error, self.name, self.statuses))
        except ValueError:      # a kernel it cannot call (over 24 arguments, rank over 3)
            return None

    def __repr__(self) -> str:
        ins = ", ".join(n for n, _ in self.inputs)
        return f"<kernel {self.name}({ins}) [{self.backend}]>"

    def __call__(self, *args, errors: str = "raise", out=None, threads: Any = 1, **kwargs):
        """The kernel on one state or a batch; see the module docstring. ``out``: arrays to
        write the outputs into (a tuple in the order of the outputs, or one array for a kernel
        with one output), each float64, C-contiguous, writeable and of the output's shape
        (``(N, *shape)`` for a batch); they are returned. ``threads``: split a batch across
        this many threads (or ``"auto"``, see :func:`batch_threads.thread_count`); the results
        are bitwise those of one thread."""
        fast = self._fast
        if fast is not None:
            result = fast(args, out, errors, threads, kwargs)
            if result is not NotImplemented:
                if type(result) is int:
                    raise self._status_error(result)
                return result
        return self._call_general(args, kwargs, errors, out, threads)

    def _status_error(self, status: int) -> KernelStatusError:
        return status_error(self.name, self.statuses, np.array([status], dtype=np.int32),
                            batch=False)

    # --- the general path: batches, conversions, errors --------------------------------------

    def _call_general(self, args: tuple, kwargs: dict, errors: str, out: Any, threads: Any):
        if errors not in ("raise", "nan"):
            raise ValueError(f"errors must be 'raise' or 'nan', got {errors!r}")
        arrays = self._bind(args, kwargs)
        batch = arrays[0].ndim == 2 if arrays else False
        n = arrays[0].shape[0] if batch else 1
        workers = batch_threads.thread_count(threads, n, self.name)
        if out is None:
            given = None
            outs = [np.empty((n, prod(shape)) if batch else prod(shape))
                    for _, shape in self.outputs]
        else:
            given = self._check_out(out, (n,) if batch else ())
            arrays = _copy_overlapped(arrays, given)
            outs = [o.reshape((n, -1) if batch else -1) for o in given]   # views (C-contiguous)
        status = np.zeros(n, dtype=np.int32)
        if self._lib is not None:
            self._call_c(arrays, outs, status, batch, n, workers)
        else:
            self._call_py(arrays, outs, status, batch, n)
        if errors == "raise" and status.any():
            raise status_error(self.name, self.statuses, status, batch)
        if given is not None:
            return given[0] if len(given) == 1 else given
        shaped = [o.reshape((n, *shape) if batch else shape) for o, (_, shape) in zip(outs, self.outputs)]
        return shaped[0] if len(shaped) == 1 else tuple(shaped)

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
        self._resolve_parameters(values)
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(self._missing_message(missing))
        arrays = [as_input(n, values[n], size, self.name) for n, size in self.inputs]
        arrays = self._broadcast_parameters(arrays)
        batch = {a.ndim == 2 for a in arrays}
        if len(batch) > 1:
            raise ValueError(f"{self.name}: mix of single-state and batch inputs; give every "
                             f"input the same leading dimension")
        if batch == {True} and len({a.shape[0] for a in arrays}) > 1:
            shapes = ", ".join(f"{n}: {a.shape}" for (n, _), a in zip(self.inputs, arrays))
            raise ValueError(f"{self.name}: batch inputs differ in length ({shapes})")
        return arrays

    def _missing_message(self, missing: list[str]) -> str:
        message = f"{self.name}() missing input(s): {', '.join(missing)}"
        if "p" in missing and self.parameters is not None:
            undefaulted = self.parameters.without_default()
            message += (f" (no default for parameter(s) {undefaulted}: pass p=..., e.g. "
                        f"p={{'{undefaulted[0]}': ...}})")
        return message

    def _resolve_parameters(self, values: dict) -> None:
        """``p`` omitted or None -> the spec's defaults (if complete); a dict -> over them."""
        if self.parameters is None:
            return
        p = values.get("p")
        if p is None:
            values.pop("p", None)
            if not self.parameters.without_default():
                values["p"] = self.parameters.default_vector(self.name)
        elif isinstance(p, dict):
            values["p"] = self.parameters.vector(p, self.name)

    def _broadcast_parameters(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """A single ``p`` repeated for every state when the state inputs are a batch."""
        names = [n for n, _ in self.inputs]
        if "p" not in names:
            return arrays
        i = names.index("p")
        states = [a for j, a in enumerate(arrays) if j != i and a.ndim == 2]
        if arrays[i].ndim == 1 and states:
            arrays[i] = np.ascontiguousarray(np.broadcast_to(arrays[i], (len(states[0]),
                                                                         arrays[i].size)))
        return arrays

    def _check_out(self, out: Any, lead: tuple) -> tuple[np.ndarray, ...]:
        """The ``out`` arrays, one per output: float64, C-contiguous, writeable, of shape
        ``lead + shape`` and not sharing memory with each other; else ValueError naming the
        output."""
        names = ", ".join(n for n, _ in self.outputs)
        arrays = (out,) if isinstance(out, np.ndarray) and len(self.outputs) == 1 else out
        if not isinstance(arrays, (tuple, list)) or len(arrays) != len(self.outputs):
            raise ValueError(f"{self.name}: out must be a tuple of {len(self.outputs)} array(s) "
                             f"({names}), got {_describe(out)}")
        for i, (o, (name, shape)) in enumerate(zip(arrays, self.outputs)):
            where = f"{self.name}: output '{name}' (out[{i}])"
            if not isinstance(o, np.ndarray) or isinstance(o, np.ma.MaskedArray):
                raise ValueError(f"{where} must be a numpy array, got {_describe(o)}")
            if o.dtype != np.float64:
                raise ValueError(f"{where} must be float64, got {o.dtype}")
            if o.shape != lead + shape:
                raise ValueError(f"{where} must have shape {lead + shape}, got {o.shape}")
            if not o.flags.c_contiguous:
                raise ValueError(f"{where} must be C-contiguous")
            if not o.flags.writeable:
                raise ValueError(f"{where} is read-only")
        for i in range(len(arrays)):
            for j in range(i):
                if np.may_share_memory(arrays[i], arrays[j]):
                    raise ValueError(f"{self.name}: outputs '{self.outputs[j][0]}' (out[{j}]) "
                                     f"and '{self.outputs[i][0]}' (out[{i}]) share memory")
        return tuple(arrays)

    def _call_c(self, arrays, outs, status, batch, n, workers: int = 1):
        f = self._ffi
        ins = [f.from_buffer("double[]", a) for a in arrays]
        outp = [f.from_buffer("double[]", o) for o in outs]
        if not batch:
            status[0] = self._single(*ins, *outp)
            return
        stp = f.from_buffer("int32_t[]", status)
        sizes = [size for _, size in self.inputs] + [prod(s) for _, s in self.outputs]
        pointers = ins + outp

        def run(lo: int, hi: int) -> None:
            """States lo..hi-1: the batch function on the pointers moved to state lo."""
            self._batch(hi - lo, *[p + lo * s for p, s in zip(pointers, sizes)], stp + lo)

        batch_threads.run_chunks(run, batch_threads.chunks(n, workers))

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
