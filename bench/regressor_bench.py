"""The regressor kernels: op counts and time per state against inverse dynamics and against
Pinocchio's ``computeJointTorqueRegressor`` (through its Python bindings), side by side.

For each bundled mechanism generated with ``regressor = true`` (ur5, panda, rx90):
ops of ``inverse_dynamics`` (numeric inertias baked in), ``regressor`` (Y, n x 10 nb),
``base_regressor`` (Y_b, n x b) and ``base_inverse_dynamics`` (Newton-Euler with the b base
parameters as inputs, the form SYMORO counts); C ns per state over a batch; Pinocchio's
regressor and rnea per call from Python (a loop of single calls: that includes the bindings'
call overhead, so it is an upper bound of its C++ time). Best of ``repeat`` interleaved runs.

Run alone: ``python -m bench.regressor_bench``; ``bench/run.py`` calls :func:`run`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mechgen import runtime  # noqa: E402
from bench.timing import best  # noqa: E402
from mechgen.generator.build import GENERATED, MECHANISMS  # noqa: E402
from mechgen.generator.frontend import load  # noqa: E402

KERNELS = ["inverse_dynamics", "regressor", "base_regressor", "base_inverse_dynamics"]
# SYMORO's inverse dynamics of the RX-90 with its 60 standard parameters symbolic: the file
# rx90/rx90_idm.txt of github.com/symoro/symoro-robots (commit 517ab92), counted with
# generator/passes/opcount.py after removing its friction, rotor-inertia and end-effector
# wrench terms (docs/regressor.md). The book's published counts were not found.
SYMORO_RX90_STANDARD = {"muls": 331, "adds": 282}
URDF = {"ur5": ("ur5_urdf.toml", "ur5_robot.urdf", None),
        "panda": ("panda_arm.toml", "panda.urdf",
                  {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}),
        "rx90": ("rx90.toml", None, None)}


def _pinocchio(name: str, count: int, states: dict, repeat: int) -> dict:
    """ns per call of Pinocchio's regressor and rnea from Python (loop of single calls)."""
    import pinocchio as pin
    from tests import pinocchio_ref as pref
    spec, urdf, lock = URDF[name]
    if urdf is None:
        return {}
    chain = load(MECHANISMS / spec)
    pm = pref.build(MECHANISMS / "urdf" / urdf, chain, lock)
    args = [(pref._q_to_pin(pm, states["q"][i]), pref._to_pin(pm, states["qd"][i]),
             pref._to_pin(pm, states["qdd"][i])) for i in range(count)]
    model, data = pm.model, pm.data

    def regressor():
        for q, v, a in args:
            pin.computeJointTorqueRegressor(model, data, q, v, a)

    def rnea():
        for q, v, a in args:
            pin.rnea(model, data, q, v, a)

    return {"pinocchio regressor": regressor, "pinocchio rnea": rnea}


def bench_one(name: str, batch: int, calls: int, repeat: int) -> dict:
    mech = runtime.load(name, "c", generated=GENERATED)
    meta = {k["name"]: k for k in mech.manifest["kernels"]}
    n = mech.manifest["n"]
    rng = np.random.default_rng(0)
    st = {"q": rng.uniform(-2, 2, (batch, n)), "qd": rng.normal(size=(batch, n)),
          "qdd": rng.normal(size=(batch, n))}
    beta = np.tile(np.array(mech.manifest["regressor"]["base_values"]), (batch, 1))
    k = mech.kernels
    ours = {nm: (lambda nm=nm: k[nm](**st, **({"beta": beta} if nm.startswith("base_inv") else {})))
            for nm in KERNELS}
    pin_calls = _pinocchio(name, calls, st, repeat)
    times = {nm: float("inf") for nm in [*ours, *pin_calls]}
    for _ in range(repeat):           # interleaved: every kernel once per round
        for nm, f in ours.items():
            times[nm] = min(times[nm], best(f, 1) / batch * 1e9)
        for nm, f in pin_calls.items():
            times[nm] = min(times[nm], best(f, 1) / calls * 1e9)
    info = mech.manifest["regressor"]
    row = {"n": n, "standard": len(info["standard"]), "base": len(info["base"]),
           "ops": {nm: meta[nm]["ops"] for nm in KERNELS},
           "ns_per_state": {nm: times[nm] for nm in KERNELS},
           "pinocchio_python_ns_per_call": {nm: times[nm] for nm in pin_calls}}
    return row


def rx90_symbolic_counts() -> dict:
    """Ops of the RX-90's Newton-Euler with symbolic standard / base parameters, and SYMORO's."""
    from mechgen.generator.families.serial import regressor as reg
    from mechgen.generator.pipeline import optimise
    chain = load(MECHANISMS / "rx90.toml")
    out = {"symoro_rx90_idm_standard": SYMORO_RX90_STANDARD}
    for build in (reg.standard_inverse_dynamics, reg.base_inverse_dynamics):
        ops = optimise(build, chain).ops
        out[build.__name__] = {"muls": ops["muls"], "adds": ops["adds"]}
    print("\nRX-90 inverse dynamics with symbolic inertial parameters (muls, adds; sin/cos apart):")
    for name, ops in out.items():
        print(f"  {name:34s} {ops['muls']:4d} {ops['adds']:4d}")
    return out


def run(batch: int = 2_000, calls: int = 2_000, repeat: int = 9) -> dict:
    out = {"rx90_symbolic_id": rx90_symbolic_counts()}
    print("\n== regressor (C, ns per state in a batch) vs inverse dynamics and Pinocchio's "
          "computeJointTorqueRegressor (Python bindings, ns per call)")
    print(f"{'mechanism':10s} {'n':>2s} {'pi':>3s} {'b':>3s} {'kernel':22s} {'muls':>5s} "
          f"{'adds':>5s} {'ns':>7s}")
    for name in URDF:
        r = bench_one(name, batch, calls, repeat)
        out[name] = r
        for i, nm in enumerate(KERNELS):
            lead = f"{name:10s} {r['n']:2d} {r['standard']:3d} {r['base']:3d}" if i == 0 \
                else " " * 20
            ops = r["ops"][nm]
            print(f"{lead} {nm:22s} {ops['muls']:5d} {ops['adds']:5d} "
                  f"{r['ns_per_state'][nm]:7.0f}")
        for nm, t in r["pinocchio_python_ns_per_call"].items():
            print(f"{'':20s} {nm:22s} {'':5s} {'':5s} {t:7.0f}")
        if r["pinocchio_python_ns_per_call"]:
            ratio = (r["pinocchio_python_ns_per_call"]["pinocchio regressor"]
                     / r["ns_per_state"]["regressor"])
            print(f"{'':20s} regressor: Pinocchio (Python) / ours (C batch) = {ratio:.1f}")
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
