"""Random serial chains for the tests, and their numeric models for the references."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sympy as sp

from mechgen.generator.build import generate_kernels, manifest_fields, write_files
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.model import Chain
from mechgen.generator.families.serial.spec import ChainBuilder

TYPES = ["Rx", "Ry", "Rz", "Px", "Py", "Pz"]


def _rot(rng) -> list:
    """A random gamma: a few elementary rotations, some by multiples of 90 deg."""
    seq = []
    for _ in range(rng.integers(0, 3)):
        ang = float(rng.choice([90, -90, 180])) if rng.random() < 0.5 else float(rng.uniform(-180, 180))
        seq.append(["xyz"[rng.integers(3)], ang])
    return seq


def _body(rng, name: str, massless: bool = False) -> dict:
    if massless:
        return {"name": name}
    m = float(rng.uniform(0.5, 5.0))
    d = rng.uniform(-0.3, 0.3, 3)
    d[rng.random(3) < 0.3] = 0.0
    p = rng.uniform(0.02, 0.2, 3)
    Ixx, Iyy, Izz = p[1] + p[2], p[0] + p[2], p[0] + p[1]   # triangle inequality holds
    off = rng.uniform(-0.01, 0.01, 3) if rng.random() < 0.5 else np.zeros(3)
    return {"name": name, "mass": m, "com": d.tolist(),
            "inertia": [float(Ixx), float(Iyy), float(Izz), *map(float, off)]}


def random_chain(seed: int, n: int, base: str = "fixed", composite: bool = True,
                 params: bool = False, springs: bool = True,
                 types: list[str] | None = None, tree: bool = False) -> tuple[Chain, dict]:
    """A chain of about n joints (composite joints add some) and its parameter values; with
    ``tree`` each joint hangs on a random earlier body (or the ground) half of the time."""
    rng = np.random.default_rng(seed)
    g = [0.0, 0.0, -9.81] if base == "fixed" else [0.0, 0.0, 0.0]
    pvals: dict[str, float] = {}
    base_body = _body(rng, "base") if base == "free" else None
    if params:
        g = [0.0, "g_y", -9.81] if base == "fixed" else g
        pvals["g_y"] = 0.7
    b = ChainBuilder(f"rnd{seed}", base, g, base_body)
    count = 0
    i = 0
    while count < n:
        i += 1
        kind = rng.choice((types or TYPES) + (["U", "S", "C"] if composite and n - count >= 3 else []))
        l = rng.uniform(-0.4, 0.4, 3)
        l[rng.random(3) < 0.4] = 0.0
        size = {"U": 2, "S": 3, "C": 2}.get(str(kind), 1)
        massless = rng.random() < 0.2 and count + size < n
        body = _body(rng, f"b{i}", massless)
        if params and i == 2 and not massless:
            body["mass"] = "m_two"
            pvals["m_two"] = 1.7
        l = l.tolist()
        if params and i == 1:
            l[2] = "len_one"
            pvals["len_one"] = 0.35
        spring = None
        if springs and rng.random() < 0.3:
            spring = {"stiffness": float(rng.uniform(0, 5)), "damping": float(rng.uniform(0, 1)),
                      "q0": float(rng.uniform(-0.5, 0.5))}
        parent = None   # after a massless body, the next joint hangs on it (never a leaf)
        if tree and b.named and rng.random() < 0.5 and not b.bodies[-1].fictitious:
            choices = [nm for nm, _ in b.named] + (["ground"] if base == "fixed" else [])
            parent = str(rng.choice(choices))
        b.joint(f"j{i}", str(kind), l, _rot(rng), body=body, spring=spring, parent=parent)
        count += size
    b.point("tip", b.named[-1][0], [0.1, -0.05, 0.2])
    return b.build(), pvals


def numeric_model(chain: Chain, pvals: dict[str, float]) -> dict:
    subs = {s: pvals[s.name] for s in chain.parameters}
    f = lambda e: float(sp.sympify(e).subs(subs))
    arr = lambda v: np.array([f(x) for x in v])
    mat = lambda M: np.array([[f(x) for x in row] for row in M])
    return {
        "joints": [{"kind": j.kind, "axis": j.axis, "l": arr(j.l), "gamma": mat(j.gamma),
                    "k": f(j.stiffness), "c": f(j.damping), "q0": f(j.q0)} for j in chain.joints],
        "bodies": [{"m": f(b.m), "c": arr(b.c), "I": mat(b.I), "d": arr(b.d)} for b in chain.bodies],
        "gravity": arr(chain.gravity),
        "named": [j for _, j in chain.named_bodies],
        "parent": list(chain.parent),
        "points": [(pt.body, arr(pt.offset)) for pt in chain.points],
        "p": np.array([pvals[s.name] for s in chain.parameters]),
    }


def featherstone_chain(model: dict) -> list[dict]:
    """The dict format of tests/reference/featherstone.py (inertia about the centre of mass)."""
    out = []
    for jt, b in zip(model["joints"], model["bodies"]):
        m, d = b["m"], b["d"]
        I_com = b["I"] - m * (d @ d * np.eye(3) - np.outer(d, d))
        out.append({"type": jt["kind"], "axis": "xyz"[jt["axis"]], "l": jt["l"], "gamma": jt["gamma"],
                    "m": m, "com": d, "I_com": I_com})
    for joint, p in zip(out, model["parent"]):
        joint["parent"] = p
    return out


def write_generated(chain: Chain, root: Path) -> list:
    """Generate a chain built in Python into root/<name>/; returns the generated kernels."""
    gen = generate_kernels(chain)
    files = render(chain.name, f"{chain.name}.toml", sha256_text(chain.name), gen,
                   manifest_fields(chain))
    write_files(root / chain.name, files)
    return gen
