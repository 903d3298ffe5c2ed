"""A tree's legs as loops over the legs (generator/families/serial/leg_loops.py).

The looped kernels of the bundled solo12 and of URDF trees are checked against Pinocchio and
the numpy references by the serial tests (tests/test_body_twist_base.py,
tests/test_pinocchio_crosscheck.py, ...) and their SIMD batches bit for bit by
tests/test_simd_batch.py; here: which legs are found, that shapes line up whatever the legs'
numbers, that the looped kernels compute what the straight ones compute on a robot of general
geometry (HyQ: near-quarter-turn hips, mirrored legs), that legs which are not one computation
keep the straight kernel, and that forward dynamics is chosen by the operations the baseline
target runs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp

from mechgen import runtime
from mechgen.generator.build import MECHANISMS, manifest_fields, write_files
from mechgen.generator.emit import render, sha256_text
from mechgen.generator.families import family_of
from mechgen.generator.families.parallel.leg_loop import LegLoopError
from mechgen.generator.families.serial import derivatives as D
from mechgen.generator.families.serial import kernels as K
from mechgen.generator.families.serial.leg_loops import (rebuild, shape, tree_leg_loops,
                                                         tree_legs, with_tree_leg_loops)
from mechgen.generator.families.serial.urdf import load_urdf
from mechgen.generator.frontend import load
from mechgen.generator.ir import ColumnLoop, symbol
from mechgen.generator.pipeline import lane_ops, optimise
from tests import pinocchio_ref as pref
from tests.test_body_twist_base import URDFS, random_state

x, y, z = (symbol(n) for n in "xyz")
LOOPED = ("forward_kinematics", "jacobians", "velocities", "mass_matrix", "bias",
          "inverse_dynamics", "forward_dynamics")


def _solo12():
    model = load(MECHANISMS / "solo12.toml")
    return family_of(model).coded(model)


def test_a_quadrupeds_four_legs_are_found_and_an_arm_has_none():
    chain = _solo12()
    assert tree_legs(chain) == [[7, 8, 9], [10, 11, 12], [13, 14, 15], [16, 17, 18]]
    assert tree_legs(load(MECHANISMS / "ur5_arm.toml")) is None


def test_shapes_line_up_whatever_the_numbers_and_signs():
    name = lambda s: s.name
    k1, c1 = shape(sp.Rational(1, 5) * x + y * sp.cos(z), name)
    k2, c2 = shape(-sp.Rational(7, 10) * x + 3 * y * sp.cos(z), name)
    assert k1 == k2 and c1 != c2
    assert shape(y - x, name)[0] == shape(y + x, name)[0]      # x is the term 1 * x
    assert shape(y - x, name)[1] != shape(y + x, name)[1]
    assert shape(x + y, name)[0] != shape(x + y + 1, name)[0]  # a constant term more
    e = -sp.Rational(7, 10) * x + 3 * y * sp.cos(z) + sp.Rational(1, 3)
    key, coefficients = shape(e, name)
    assert rebuild(key, iter(coefficients), symbol) == e


def test_two_parts_of_one_shape_are_refused():
    with pytest.raises(LegLoopError, match="one shape"):
        shape(sp.cos(2 * x) + sp.cos(3 * x), lambda s: s.name)


@pytest.fixture(scope="module")
def hyq_pair(tmp_path_factory):
    """HyQ on the body-twist base: the kernels straight and with the legs in loops, loaded."""
    root = tmp_path_factory.mktemp("hyq_legs")
    chain = load_urdf(URDFS["hyq"], "hyq_legs", base="free", gravity=(0.3, -1.2, -9.81),
                      attitude="quaternion", base_velocity="body")
    chain = replace(chain, derivatives="tangent")
    loaded, gens = {}, {}
    for tag, wrap in (("straight", lambda b: b), ("looped", with_tree_leg_loops)):
        builders = [getattr(K, name) for name in LOOPED] + [D.inverse_dynamics_derivatives]
        gen = [optimise(wrap(b), chain) for b in builders]
        name = f"hyq_{tag}"
        write_files(root / name, render(name, f"{name}.toml", sha256_text(tag), gen,
                                        manifest_fields(chain)))
        loaded[tag], gens[tag] = runtime.load(name, "c", generated=root), gen
    return chain, loaded, gens


def test_every_looped_kernel_has_its_legs_in_one_loop_of_four_columns(hyq_pair):
    _, _, gens = hyq_pair
    for g in gens["looped"]:
        loops = [st for st in g.kernel.body if isinstance(st, ColumnLoop)]
        assert loops and all(len(loop.columns) == 4 for loop in loops), g.kernel.name
    for g in gens["straight"]:
        assert not any(isinstance(st, ColumnLoop) for st in g.kernel.body)


def test_looped_kernels_compute_what_the_straight_ones_compute(hyq_pair):
    chain, loaded, _ = hyq_pair
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(40):
        s = random_state(rng, chain.n)
        args = {"forward_kinematics": (s["q"],), "jacobians": (s["q"],),
                "velocities": (s["q"], s["qd"]), "mass_matrix": (s["q"],),
                "bias": (s["q"], s["qd"], s["Q"]),
                "inverse_dynamics": (s["q"], s["qd"], s["qdd"]),
                "forward_dynamics": (s["q"], s["qd"], s["Q"]),
                "inverse_dynamics_derivatives": (s["q"], s["qd"], s["qdd"])}
        for name, a in args.items():
            ref = getattr(loaded["straight"], name)(*a)
            got = getattr(loaded["looped"], name)(*a)
            for r, v in zip(ref if isinstance(ref, tuple) else (ref,),
                            got if isinstance(got, tuple) else (got,)):
                r, v = np.asarray(r), np.asarray(v)
                worst = max(worst, np.max(np.abs(v - r)) / max(np.max(np.abs(r)), 1e-300))
    assert worst < 1e-13, worst     # sums grouped otherwise in the loops: rounding only


def test_looped_forward_dynamics_matches_pinocchio(hyq_pair):
    chain, loaded, _ = hyq_pair
    pm = pref.build(URDFS["hyq"], chain)
    rng = np.random.default_rng(6)
    for _ in range(10):
        s = random_state(rng, chain.n)
        want = pref.forward_dynamics(pm, s["q"], s["qd"], s["Q"])
        got = loaded["looped"].forward_dynamics(s["q"], s["qd"], s["Q"])
        assert np.max(np.abs(got - want)) <= 1e-10 * np.max(np.abs(want))


def test_statements_a_bent_leg_lacks_stay_straight_and_the_kernel_is_unchanged(tmp_path):
    """Leg 3's knee moved sideways: its statements from the knee on differ in shape from the
    other legs'. Those of leg 1 without a like in every leg stay straight (mechanism-wide),
    the rest loops, and the mass matrix is the straight kernel's."""
    chain = _solo12()
    legs = tree_legs(chain)
    j = legs[2][1] - 1
    joints = list(chain.joints)
    joints[j] = replace(joints[j], l=(joints[j].l[0], joints[j].l[1], sp.Rational(1, 50)))
    bent = replace(chain, joints=joints, name="solo12_bent")
    assert tree_legs(bent) == legs                     # the same joints: the legs are found
    whole = optimise(with_tree_leg_loops(K.mass_matrix), chain)
    looped = optimise(with_tree_leg_loops(K.mass_matrix), bent)
    straight = optimise(K.mass_matrix, bent)

    def per_leg(g):
        return sum(len(st.body) for st in g.kernel.body if isinstance(st, ColumnLoop))
    assert 0 < per_leg(looped) < per_leg(whole)
    loaded = {}
    for tag, g in (("straight", straight), ("looped", looped)):
        name = f"bent_{tag}"
        write_files(tmp_path / name, render(name, f"{name}.toml", sha256_text(tag), [g],
                                            manifest_fields(bent)))
        loaded[tag] = runtime.load(name, "c", generated=tmp_path)
    rng = np.random.default_rng(8)
    for _ in range(20):
        q = rng.uniform(-2, 2, bent.n)
        ref = loaded["straight"].mass_matrix(q)
        assert np.max(np.abs(loaded["looped"].mass_matrix(q) - ref)) <= 1e-13 * np.max(np.abs(ref))


def test_forward_dynamics_is_chosen_by_the_operations_the_baseline_runs(hyq_pair):
    """Straight, L^T D L has the fewer operations on HyQ. With the legs in loops both forms run
    every leg's statements in the legs' loops (L^T D L's updates of the trunk summed per leg,
    algorithms/ldlt.ltdl_factor), and the form generated is the one with the fewer operations
    on the baseline target (a loop's body once per two legs): L^T D L again (the
    articulated-body form had won while L^T D L's last leg stayed out of the loop)."""
    chain, _, gens = hyq_pair
    ltdl, aba = (optimise(with_tree_leg_loops(b), chain)
                 for b in (K.forward_dynamics_ltdl, K.forward_dynamics_aba))
    straight = next(g for g in gens["straight"] if g.kernel.name == "forward_dynamics")
    assert straight.ops == optimise(K.forward_dynamics_ltdl, chain).ops
    assert straight.ops["total"] < optimise(K.forward_dynamics_aba, chain).ops["total"]
    assert lane_ops(ltdl.kernel, ltdl.ops["total"]) < lane_ops(aba.kernel, aba.ops["total"])
    looped = next(g for g in gens["looped"] if g.kernel.name == "forward_dynamics")
    assert looped.ops == ltdl.ops


def test_a_statement_reading_two_legs_is_never_handed_to_a_third(monkeypatch):
    """s = a1 + b3 reads legs 1 and 3 and only leg 2 reads it: handed to leg 2 it would line
    up with leg 1's t1 = a1 + b1 and be rebuilt reading leg 2's own a and b (found by the
    review of this module). It stays mechanism-wide, and the looped kernel computes what the
    straight one does (exactly, in rationals)."""
    from types import SimpleNamespace
    from mechgen.generator.families.serial import leg_loops as LL
    from mechgen.generator.ir import Assign, Kernel, Port
    from mechgen.generator.passes.loops import unroll_loops
    q = [symbol(f"q{i}") for i in (1, 2, 3)]
    S = symbol
    body = [*(Assign(S(f"a{i}"), q[i - 1] ** 2) for i in (1, 2, 3)),
            *(Assign(S(f"b{i}"), 3 * q[i - 1]) for i in (1, 2, 3)),
            Assign(S("s"), S("a1") + S("b3")),
            *(Assign(S(f"t{i}"), S(f"a{i}") + S(f"b{i}")) for i in (1, 2, 3)),
            Assign(S("r1"), S("t1") * q[0]), Assign(S("r2"), S("s") * q[1]),
            Assign(S("r3"), S("t3") * q[2])]
    k = Kernel("k", "", (Port("q", (3,), tuple(q)),),
               (Port("out", (4,), (S("r1"), S("r2"), S("r3"), S("t2"))),), tuple(body), {})
    monkeypatch.setattr(LL, "tree_legs", lambda chain: [[1], [2], [3]])
    looped = unroll_loops(LL.tree_leg_loops(k, SimpleNamespace(n=3)))
    values = [sp.Integer(2), sp.Integer(5), sp.Integer(7)]
    assert _evaluate(looped, q, values) == _evaluate(k, q, values) == [20, 125, 490, 40]


def _evaluate(kernel, q: list, point: list) -> list:
    """The first output of a straight-line kernel at q = point, exactly (SymPy numbers)."""
    env = dict(zip(q, point))
    for st in kernel.body:
        env[st.target] = st.expr.xreplace(env)
    return [sp.sympify(e).xreplace(env) for e in kernel.outputs[0].elements]


def test_the_trunks_composite_inertia_adds_per_leg_parts_computed_in_the_loop(hyq_pair):
    """HyQ's legs carry their inertias into the trunk's frame through mirrored hip offsets, so
    each leg's part of an element of the trunk's composite inertia is leg 1's with other
    numbers (leg_loops._split_sums): every element of it (Ic6_*) reads only the legs' sums
    from the loop, none of the legs' own values (before, the six elements were 13 to 16
    terms each, summed mechanism-wide)."""
    _, _, gens = hyq_pair
    mm = next(g for g in gens["looped"] if g.kernel.name == "mass_matrix")
    wide = [st for st in mm.kernel.body
            if not isinstance(st, ColumnLoop) and st.target.name.startswith("Ic6_")]
    reads = {s.name for st in wide for s in st.expr.free_symbols if "leg" in s.name}
    elements = {name.split("_sum_")[1] for name in reads if "_sum_" in name}
    assert elements == {"Ic6_00", "Ic6_01", "Ic6_02", "Ic6_11", "Ic6_12", "Ic6_22"}
    assert all("_sum_" in name for name in reads), sorted(reads)


def test_a_sum_of_mirrored_leg_parts_is_split_into_the_legs_loop(monkeypatch):
    """s = (2 u1 + v1) + (2 u2 - v2) + (2 u3 + 5 v3) + 7: each leg's part is leg 1's with
    other numbers, so it becomes a statement of each leg (its coefficient of v a constant of
    the leg: 1, -1, 5) and s the sum of the parts and 7; t, whose leg 3 lacks a term, stays
    whole. The looped kernel computes what the straight one does (exactly, in rationals)."""
    from types import SimpleNamespace
    from mechgen.generator.families.serial import leg_loops as LL
    from mechgen.generator.ir import Assign, Kernel, Port
    from mechgen.generator.passes.loops import unroll_loops
    q = [symbol(f"q{i}") for i in (1, 2, 3)]
    S = symbol
    body = [*(Assign(S(f"u{i}"), q[i - 1] ** 2) for i in (1, 2, 3)),
            *(Assign(S(f"v{i}"), 3 * q[i - 1] + 1) for i in (1, 2, 3)),
            Assign(S("s"), 2 * S("u1") + S("v1") + 2 * S("u2") - S("v2") + 2 * S("u3")
                   + 5 * S("v3") + 7),
            Assign(S("t"), S("u1") + S("v1") + S("u2") + S("v2") + S("u3"))]
    k = Kernel("k", "", (Port("q", (3,), tuple(q)),),
               (Port("out", (2,), (S("s"), S("t"))),), tuple(body), {})
    monkeypatch.setattr(LL, "tree_legs", lambda chain: [[1], [2], [3]])
    form, values, _ = LL.loop_form(k, SimpleNamespace(n=3))
    wide = {st.target.name: st.expr for st in form.body if not st.target.name.startswith("leg")}
    assert wide["s"] == 7 + sum(S(f"leg{g}_sum_s") for g in (1, 2, 3))
    assert not any(name.endswith("_sum_t") for name in (st.target.name for st in form.body))
    assert sorted(v for v in values.values()) == [-1, 1, 5]
    looped = unroll_loops(LL.tree_leg_loops(k, SimpleNamespace(n=3)))
    point = [sp.Integer(2), sp.Rational(5, 3), sp.Integer(-7)]
    assert _evaluate(looped, q, point) == _evaluate(k, q, point)
