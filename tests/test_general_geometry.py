"""Robots whose joint twists are not quarter turns: the joint rotation is factored where that
costs fewer operations (generator/algorithms/joints.py), and the kernels of two such robots of
example-robot-data agree with Pinocchio to 1e-10.

xArm7: every twist is 1.5708 rad (3.7e-6 short of pi/2), so every joint rotation mixes two axes.
HyQ on a free base: hip rpy 1.57079632679 and 3.14159265359 kept as written (4.9e-12 off).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from mechgen import runtime
from mechgen.generator.algorithms import joints
from mechgen.generator.algorithms.joints import (link_transform, rotate_from_parent,
                                                 rotate_to_parent)
from mechgen.generator.families.serial import kernels
from mechgen.generator.families.serial.urdf import load_urdf
from mechgen.generator.model import Joint, identity3, rotation_from_sequence
from mechgen.generator.pipeline import optimise
from mechgen.generator.scalar import Recorder
from tests import pinocchio_ref as pref
from tests.chains import write_generated
from tests.test_pinocchio_crosscheck import RTOL, compare


def _robots_dir() -> Path:
    import pinocchio
    p = Path(pinocchio.__file__).resolve()
    while p.name != "cmeel.prefix":
        p = p.parent
    return p / "share" / "example-robot-data" / "robots"


GENERAL = {"xarm7": ("xarm_description/urdf/xarm7.urdf", "fixed"),
           "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", "free")}


def _joint(kind: str, axis: int, seq: list) -> Joint:
    gamma = rotation_from_sequence(seq) if seq else identity3()
    return Joint("j", kind, axis, (sp.Rational(1, 10), sp.Integer(0), sp.Integer(0)), gamma)


@pytest.mark.parametrize("kind,axis,seq,factored", [
    ("R", 2, [(0, sp.Float("1.5708"))], True),         # xArm7: twist about x, joint about z
    ("R", 2, [(1, sp.Float("1.57079632679"))], True),  # HyQ's hip: twist about y
    ("R", 2, [(0, sp.pi / 2)], False),                 # a quarter turn: beta is a permutation
    ("R", 0, [(0, sp.Float("0.3"))], False),           # twist about the joint's own axis
    ("P", 2, [(0, sp.Float("0.3"))], False),           # a slide: beta = gamma
    ("R", 2, [(0, sp.Float("0.3")), (1, sp.Float("0.7")), (2, sp.Float("1.1"))], False),
])
def test_rotation_is_factored_exactly_when_that_costs_fewer_operations(kind, axis, seq,
                                                                      factored):
    lt = link_transform(Recorder(), 1, _joint(kind, axis, seq), sp.Symbol("q1"))
    fused = joints.rotation_cost(lt.beta)
    split = joints.rotation_cost(lt.alpha) + joints.rotation_cost(lt.gamma)
    assert lt.factored == factored == (split < fused)


@pytest.mark.parametrize("seq", [[(0, sp.Float("1.5708"))], [(1, sp.Float("-2.1"))]])
def test_factored_rotations_equal_beta_products(seq):
    """gamma^T (alpha^T v) = beta^T v and alpha (gamma v) = beta v, numerically."""
    rec = Recorder()
    q = sp.Symbol("q1")
    lt = link_transform(rec, 1, _joint("R", 2, seq), q)
    assert lt.factored
    v = list(sp.symbols("v0:3"))
    up = rotate_to_parent(rec, lt, v, "up")
    down = rotate_from_parent(rec, lt, v, "down")
    rng = np.random.default_rng(0)
    for _ in range(5):
        values = {q: rng.uniform(-3, 3), **{s: rng.normal() for s in v}}
        for st in rec.statements:
            values[st.target] = st.expr.xreplace(values)
        beta = sp.Matrix(lt.beta).xreplace(values)
        vv = sp.Matrix([values[s] for s in v])
        for ours, ref in ((up, beta.T * vv), (down, beta * vv)):
            got = [float(sp.sympify(x).xreplace(values)) for x in ours]
            assert np.allclose(got, [float(x) for x in ref], rtol=0, atol=1e-14)


def test_factoring_lowers_the_operation_counts_of_xarm7(monkeypatch):
    """The mass matrix and inverse dynamics with the fused rotation forced everywhere cost
    more operations."""
    chain = load_urdf(_robots_dir() / GENERAL["xarm7"][0], "xarm7", gravity=(0, 0, -9.81))
    builders = (kernels.mass_matrix, kernels.inverse_dynamics)
    ops = [optimise(build, chain).ops["total"] for build in builders]
    monkeypatch.setattr(joints, "rotation_cost", lambda M: 0)   # never strictly cheaper
    fused = [optimise(build, chain).ops["total"] for build in builders]
    assert all(a < b for a, b in zip(ops, fused)), (ops, fused)


@pytest.mark.parametrize("name", sorted(GENERAL))
def test_general_geometry_robot_kernels_agree_with_pinocchio(tmp_path, name):
    urdf, base = GENERAL[name]
    path = _robots_dir() / urdf
    chain = load_urdf(path, name, base=base, gravity=(0, 0, -9.81))
    twists = [x for jt in chain.joints for row in jt.gamma for x in row
              if x != 0 and abs(abs(x) - 1) > 0]
    assert twists, f"{name}: expected joint twists that are not quarter turns"
    write_generated(chain, tmp_path)
    mech = runtime.load(name, "c", generated=tmp_path)
    worst = compare(mech, chain, pref.build(path, chain), count=8)
    bad = {k: v for k, v in worst.items() if v > RTOL}
    assert not bad, f"{name}: {bad}"
