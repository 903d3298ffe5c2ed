"""`make bench`, the runtime's Python call overhead and multi-core batches.

Part 1, one state per call, as a Python loop (an integrator, a controller) calls the kernels:
ns per call of the gough_stewart_docking ``step`` and of the ur5 and panda ``mass_matrix``
through the fast path (plain float64 arrays: the kernel's C entry, runtime/fastcall.py; fresh
outputs, or ``out=``), through the general path (argument binding, per-argument conversion and
checks, fresh outputs, cffi pointers made per call; batches and lists take it), the bare cffi
call with pointers made beforehand (the floor: the kernel's own time plus cffi), and
Pinocchio's Python binding ``pin.crba`` on the same URDF (reference). Every variant is timed in
blocks of calls, the variants interleaved, best block of several.

Part 1b, small batches (N = 10 and 100 states per call, a controller's horizon): ns per call
through the C entry (up to 512 states: the kernel's batch function on the inputs in place),
the general path (which larger batches and ``threads=`` take), and the bare cffi call of the
batch function with pointers made beforehand.

Part 2, batches of 10^5 states: states per second on 1 and 2 threads (``threads=``), interleaved,
best of several, with the results checked bitwise equal.

Run alone: ``python bench/overhead.py``; `make bench` calls :func:`run` from bench/run.py.
"""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mechgen import runtime  # noqa: E402

SPECS = ROOT / "generator" / "mechanisms"


def interleaved_best(variants: dict[str, Callable[[], object]], calls: int,
                     rounds: int) -> dict[str, float]:
    """ns per call of each variant: ``calls`` calls per block, the variants in turn, the best
    block of ``rounds``."""
    best = {k: float("inf") for k in variants}
    for _ in range(rounds):
        for name, f in variants.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            best[name] = min(best[name], (time.perf_counter() - t0) / calls)
    return {k: v * 1e9 for k, v in best.items()}


def _bare(kernel, args: list[np.ndarray]) -> Callable[[], object]:
    """The C function called with cffi pointers made once (no wrapper at all)."""
    ffi = kernel._ffi
    outs = [np.empty(shape) for _, shape in kernel.outputs]
    ptrs = [ffi.from_buffer("double[]", a) for a in [*args, *outs]]
    single = kernel._single
    return lambda: single(*ptrs)


def _general(kernel, args: list[np.ndarray]) -> Callable[[], object]:
    """The kernel through its general path (binding by name, as_input on every argument, fresh
    outputs, cffi pointers made per call): the path of batches, lists and bad input."""
    return lambda: kernel._call_general(tuple(args), {}, "raise", None, 1)


def _pinocchio_crba(spec: str) -> Callable[[], object] | None:
    """pin.crba on the model of the spec's URDF (locks as in the spec), or None without pin."""
    try:
        import pinocchio as pin
        from bench.pinocchio_race import pinocchio_model
    except ImportError:
        return None
    data = tomllib.loads((SPECS / spec).read_text())
    mech = data["mechanism"]
    model = pinocchio_model(SPECS / mech["urdf"], data.get("lock", {}), mech.get("base",
                                                                                 "fixed"))
    pdata = model.createData()
    q = pin.randomConfiguration(model) if np.isfinite(model.upperPositionLimit).all() \
        else pin.neutral(model)
    return lambda: pin.crba(model, pdata, q)


def single_state(calls: int = 100, rounds: int = 300) -> dict:
    """Part 1: ns per single-state call, per mechanism and variant."""
    rng = np.random.default_rng(3)
    out = {}
    hexa = runtime.load("gough_stewart_docking")
    step = hexa.kernels["step"]
    x = np.array([0.0, 0.0, 0.56, 0.01, 0.0, 0.02])
    args = [x, np.zeros(6), np.zeros(6), np.zeros(3), np.zeros(3), np.array([0, 0, -9.81])]
    p = hexa.params()
    res = tuple(np.empty(shape) for _, shape in step.outputs)
    out["gough_stewart_docking.step"] = interleaved_best({
        "fast": lambda: hexa.step(*args, p=p),
        "fast, p omitted": lambda: hexa.step(*args),
        "fast, out=": lambda: hexa.step(*args, p=p, out=res),
        "general path": _general(step, [*args, p]),
        "bare cffi call": _bare(step, [*args, p]),
    }, calls, rounds)
    for name, spec in (("ur5", "ur5_urdf.toml"), ("panda", "panda_arm.toml")):
        mech = runtime.load(name)
        mm = mech.kernels["mass_matrix"]
        q = rng.uniform(-1, 1, mech.n)
        A = np.empty((mech.n, mech.n))
        variants = {"fast": lambda: mech.mass_matrix(q),
                    "fast, out=": lambda: mech.mass_matrix(q, out=A),
                    "general path": _general(mm, [q]), "bare cffi call": _bare(mm, [q])}
        crba = _pinocchio_crba(spec)
        if crba is not None:
            variants["pin.crba (Python)"] = crba
        out[f"{name}.mass_matrix"] = interleaved_best(variants, calls, rounds)
    return out


def _bare_batch(kernel, args: list[np.ndarray], n: int) -> Callable[[], object]:
    """The batch function called with cffi pointers made once (a 1-D p repeated per state)."""
    ffi = kernel._ffi
    args = [np.ascontiguousarray(np.broadcast_to(a, (n, a.shape[-1]))) for a in args]
    outs = [np.empty((n, *shape)) for _, shape in kernel.outputs]
    status = np.empty(n, dtype=np.int32)
    ptrs = [ffi.from_buffer("double[]", a) for a in [*args, *outs]]
    ptrs.append(ffi.from_buffer("int32_t[]", status))
    batch = kernel._batch
    return lambda: batch(n, *ptrs)


def small_batches(calls: int = 20, rounds: int = 200) -> dict:
    """Part 1b: ns per call of N-state batches, per kernel, N and path."""
    rng = np.random.default_rng(4)
    out = {}
    for mech_name, kernel in (("panda", "mass_matrix"), ("gough_stewart_docking", "step")):
        mech = runtime.load(mech_name)
        for n in (10, 100):
            k, args = _batch_case(mech, kernel, n, rng)
            out[f"{mech_name}.{kernel} N={n}"] = interleaved_best({
                "C entry": lambda: k(*args),
                "general path": _general(k, args),
                "bare cffi batch call": _bare_batch(k, args, n),
            }, calls, rounds)
    return out


def _batch_case(mech, kernel: str, n: int, rng) -> tuple:
    """(kernel, its batch inputs) for n random states: near the home pose for a parallel
    mechanism (as tests/platforms.random_states draws them), uniform in [-1, 1] otherwise."""
    k = mech.kernels[kernel]
    if mech.manifest.get("family") == "parallel":
        from tests.platforms import random_states
        num = {"home": np.array(mech.manifest["home"]),
               "gravity": np.array(mech.manifest["gravity"])}
        st = random_states(num, n, seed=7)
        return k, [st["x"], st["u"], st["F"], st["fE"], st["mE"], st["g"], mech.params()]
    args = [mech.params() if name == "p" else rng.uniform(-1, 1, (n, size))
            for name, size in k.inputs]
    return k, args


def batches(n: int = 100_000, rounds: int = 5) -> dict:
    """Part 2: states per second on 1 and 2 threads, and bitwise equality of the two."""
    rng = np.random.default_rng(5)
    out = {}
    cases = [("solo12", "mass_matrix"), ("solo12", "forward_dynamics"),
             ("gough_stewart_docking", "step")]
    for mech_name, kernel in cases:
        mech = runtime.load(mech_name)
        k, args = _batch_case(mech, kernel, n, rng)
        one = k(*args, errors="nan")
        two = k(*args, errors="nan", threads=2)
        same = all(np.array_equal(a, b, equal_nan=True) and
                   np.array_equal(np.signbit(a), np.signbit(b))
                   for a, b in zip(_tuple(one), _tuple(two)))
        t = interleaved_best({"1 thread": lambda: k(*args, errors="nan"),
                              "2 threads": lambda: k(*args, errors="nan", threads=2)},
                             1, rounds)
        out[f"{mech_name}.{kernel}"] = {
            "n": n, "ns_per_state_1": t["1 thread"] / n, "ns_per_state_2": t["2 threads"] / n,
            "states_per_s_1": n / t["1 thread"] * 1e9, "states_per_s_2": n / t["2 threads"] * 1e9,
            "speedup": t["1 thread"] / t["2 threads"], "bitwise_equal": same}
    return out


def _tuple(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def run() -> dict:
    """Both parts, printed as tables; returns them for bench.json."""
    print("\n== Python call overhead: one state per call (ns per call; blocks of calls, "
          "variants interleaved, best block)")
    single = single_state()
    for case, row in single.items():
        print(f"  {case}")
        for variant, ns in row.items():
            print(f"    {variant:22s} {ns:9.0f}")
    print("\n== small batches (ns per call of N states; variants interleaved, best block)")
    small = small_batches()
    for case, row in small.items():
        print(f"  {case}")
        for variant, ns in row.items():
            print(f"    {variant:22s} {ns:9.0f}")
    print("\n== batches of 10^5 states on 1 and 2 threads (threads=; best of 5, interleaved)")
    head = (f"  {'kernel':36s} {'ns/state 1T':>11s} {'ns/state 2T':>11s} {'speed-up':>8s} "
            f"{'bitwise':>7s}")
    print(head)
    multi = batches()
    for case, r in multi.items():
        print(f"  {case:36s} {r['ns_per_state_1']:11.0f} {r['ns_per_state_2']:11.0f} "
              f"{r['speedup']:8.2f} {'equal' if r['bitwise_equal'] else 'DIFFER':>7s}")
    return {"single_state_ns": single, "small_batch_ns": small, "batch_threads": multi}


if __name__ == "__main__":
    run()
