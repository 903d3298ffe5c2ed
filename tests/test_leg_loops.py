"""A platform's legs as loops over the legs (generator/families/parallel/leg_loop.py).

The generated kernels themselves are checked against the numpy and Lagrange references by the
platform tests, and their SIMD batches (planned from the unrolled loops) against them bit for
bit by tests/test_simd_batch.py; here: which numbers become per-leg symbols, that the loop form
computes what the straight-line kernel computes, and that legs that are not one computation
keep the straight-line kernel.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import sympy as sp

from mechgen.generator.families.parallel import kernels as pk
from mechgen.generator.families.parallel import leg_loop
from mechgen.generator.families.parallel.frame_c import FrameCBuild
from mechgen.generator.families.parallel.spec import platform_from_dict
from mechgen.generator.frontend import load
from mechgen.generator.algorithms.sparse_lu import SparseLU
from mechgen.generator.ir import Assign, Check, ColumnLoop
from mechgen.generator.passes.loops import unroll_loops
from mechgen.generator.scalar import Recorder, counting_dense

SPECS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"


def _platform(name: str):
    return load(SPECS / f"{name}.toml")


def _run(k, state: dict) -> tuple[int, list[float]]:
    """The kernel evaluated statement by statement in 30-digit arithmetic: (status, outputs)."""
    env = {s: sp.Float(v, 30) for s, v in state.items()}
    for st in k.body:
        value = sp.sympify(st.expr).xreplace(env).evalf(30)
        value = value if value.is_real else sp.nan      # sqrt of a negative: C's NaN
        if isinstance(st, Check):
            if value is sp.nan or not value > 0:
                return st.status, []
        else:
            env[st.target] = value if value is sp.nan else sp.Float(value, 30)
    return 0, [float(sp.sympify(e).xreplace(env).evalf(30)) for p in k.outputs
               for e in p.elements]


def _state(k, pf, rng: random.Random) -> dict:
    out = {}
    for p in k.inputs:
        for i, s in enumerate(p.elements):
            if p.name == "x":
                out[s] = pf.home[i] + rng.uniform(-1, 1) * (0.01 if i < 3 else 0.03)
            elif p.name == "p":
                out[s] = pf.defaults.get(s.name[2:], 1.0)
            else:
                out[s] = rng.uniform(-0.5, 0.5)
    return out


def test_symbolic_legs_keep_the_numbers_every_leg_shares():
    pf = _platform("hunt_rus_docking")
    symbolic, values = leg_loop.symbolic_legs(pf)
    for k, (leg, sym) in enumerate(zip(pf.legs, symbolic.legs)):
        for j, (a, b) in enumerate(zip(leg.chain.joints, sym.chain.joints)):
            for r in range(3):
                for c in range(3):
                    same = all(other.chain.joints[j].gamma[r][c] == a.gamma[r][c]
                               for other in pf.legs)
                    entry = b.gamma[r][c]
                    if same:
                        assert entry == a.gamma[r][c]
                    else:
                        assert entry.name.startswith(f"{leg.name}_kc")
                        assert values[entry] == a.gamma[r][c]
    assert values and all(v.is_Number for v in values.values())


def test_legs_of_different_types_refuse_the_leg_loop():
    rus, pus = _platform("hunt_rus_docking"), _platform("hexapod_pus")
    mixed = replace(rus, legs=rus.legs[:5] + [replace(pus.legs[5], name="leg6")])
    with pytest.raises(leg_loop.LegLoopError, match="one type"):
        leg_loop.symbolic_legs(mixed)


@pytest.mark.parametrize("name", ["hunt_rus_docking", "gough_stewart_docking", "hexapod_pus"])
def test_step_accel_in_leg_loops_equals_the_straight_line_kernel(name):
    pf = _platform(name)
    looped = leg_loop.with_leg_loops(pk._step_accel, pf, FrameCBuild)
    straight = pk._step_accel(pf, FrameCBuild)
    loops = [st for st in looped.body if isinstance(st, ColumnLoop)]
    assert loops and all(len(st.columns) == len(pf.legs) for st in loops)
    assert not any(isinstance(st, ColumnLoop) for st in straight.body)
    unrolled = unroll_loops(looped)
    rng = random.Random(5)
    for _ in range(2):
        state = _state(straight, pf, rng)
        s0, out0 = _run(straight, state)
        s1, out1 = _run(unrolled, state)
        assert s0 == s1 == 0
        scale = max(abs(v) for v in out0)
        assert max(abs(a - b) for a, b in zip(out0, out1)) <= 1e-13 * scale


@pytest.mark.parametrize("name", ["hunt_rus_docking", "hexapod_ucu"])
@pytest.mark.parametrize("kernel", [pk._step_accel, pk._coupled_step])
def test_leg_loops_have_the_straight_builds_inputs_and_dense_count(name, kernel):
    """with_leg_loops builds the symbolic legs only: the parameters ``p`` and the dense count
    (the closed forms' formulas counted with the legs' numbers) are still those of the
    straight build, which prunes the numeric legs."""
    pf = _platform(name)
    with counting_dense() as straight_dense:
        straight = kernel(pf, FrameCBuild)
    with counting_dense() as looped_dense:
        looped = leg_loop.with_leg_loops(kernel, pf, FrameCBuild)
    assert any(isinstance(st, ColumnLoop) for st in looped.body)
    assert looped.inputs == straight.inputs
    assert looped_dense.as_dict() == straight_dense.as_dict()


def test_the_first_failing_leg_check_is_the_straight_kernels():
    pf = _platform("hunt_rus_docking")
    looped = unroll_loops(leg_loop.with_leg_loops(pk._step_accel, pf, FrameCBuild))
    straight = pk._step_accel(pf, FrameCBuild)
    far = _state(straight, pf, random.Random(1))
    z = [s for p in straight.inputs if p.name == "x" for s in p.elements][2]
    far[z] = pf.home[2] + 5.0                 # every leg out of reach: leg 1's check first
    s0, _ = _run(straight, far)
    s1, _ = _run(looped, far)
    assert s0 != 0 and s0 == s1


def test_legs_with_other_pivots_keep_the_straight_line_kernel():
    data = tomllib.loads((SPECS / "hexapod_pus.toml").read_text())
    x, y, z = data["legs"][2]["base"]
    data["legs"][2]["base"] = [0.9 * x, 0.9 * y, z]   # leg 3's rail closer in: another pivot order
    pf = platform_from_dict(data, "hexapod_pus (leg 3 moved)")
    k = leg_loop.with_leg_loops(pk._step_accel, pf, FrameCBuild)
    assert not any(isinstance(st, ColumnLoop) for st in k.body)
    assert any(isinstance(st, Assign) and st.target.name.startswith("leg3_") for st in k.body)


def test_pivots_of_equal_size_up_to_rounding_are_chosen_by_position():
    """Two candidate pivots of one length (the rod's) at home differ by rounding only; the
    order must not depend on that rounding, or like legs pivot differently (hexapod_pus)."""
    a, b, c = sp.symbols("a b c")
    for noise in (1e-15, -1e-15):
        rec = Recorder()
        rec.sample = {a: 0.7785, b: 0.7785 * (1 + noise), c: 0.5}
        lu = SparseLU(rec, [[0, a, 0], [b, 0, c], [0, 0, c]], "lu", [1.0] * 3, 1, "M")
        assert (lu.steps[0].row, lu.steps[0].col) == (1, 0)      # b: the first column


def test_line_up_test_of_two_legs_agrees_with_renaming_both():
    """_same_up_to_legs decides on the trees when they line up; it must agree with comparing
    the renamed expressions on random expressions of leg and shared symbols, including sums
    whose terms the renaming reorders."""
    rng = random.Random(7)
    shared = sp.symbols("a b z_leg9q", real=True)

    def leg_symbols(g: int):
        return [sp.Symbol(f"leg{g}_{n}", real=True) for n in ("x", "y", "u")] + \
               [sp.Symbol(f"F_leg{g}", real=True)]

    def expr(r: random.Random, syms, depth: int):
        if depth == 0 or r.random() < 0.25:
            return r.choice(syms + [sp.Integer(r.randint(-3, 3)), sp.Float(0.5)])
        kind = r.choice(["add", "mul", "pow", "sin", "atan2"])
        x, y = expr(r, syms, depth - 1), expr(r, syms, depth - 1)
        return {"add": lambda: x + y, "mul": lambda: x * y, "pow": lambda: x ** 2,
                "sin": lambda: sp.sin(x), "atan2": lambda: sp.atan2(x, y)}[kind]()

    agree = lined_up = 0
    for _ in range(400):
        seed = rng.random()
        e1 = expr(random.Random(seed), leg_symbols(1) + list(shared), 4)
        kind = rng.choice(["same", "same", "same", "other leg", "other", "plus a"])
        if kind == "other":
            e2 = expr(random.Random(rng.random()), leg_symbols(2) + list(shared), 4)
        else:
            e2 = expr(random.Random(seed), leg_symbols(3 if kind == "other leg" else 2)
                      + list(shared), 4)
            e2 = e2 + shared[0] if kind == "plus a" else e2
        expect = leg_loop._canonical_expr(e1) == leg_loop._canonical_expr(e2)
        assert leg_loop._same_up_to_legs(e1, e2) == expect, (e1, e2)
        agree += expect
        lined_up += leg_loop._line_up(e1, e2)
    assert agree > 200 and lined_up > 100          # both branches were exercised


def _synthetic(body, n_legs: int = 3):
    """A kernel of ``body`` whose inputs are every name it reads and does not assign."""
    from mechgen.generator.ir import Kernel, Port
    assigned = {st.target for st in body}
    names = sorted({s for st in body for s in st.expr.free_symbols} - assigned, key=str)
    last = body[-1].target
    return Kernel("k", "", (Port("x", (len(names),), tuple(names)),),
                  (Port("y", (1,), (last,)),), tuple(body))


def test_a_sum_over_the_legs_is_split_into_per_leg_parts():
    """A mechanism-wide sum of one computation per leg (a reduced mass matrix element)
    becomes one statement per leg (computed in the legs' loop) and the sum of their names;
    a term of several legs or of none stays in the sum."""
    c = sp.Symbol("c")
    x = [sp.Symbol(f"leg{g}_x") for g in (1, 2, 3)]
    y = [sp.Symbol(f"leg{g}_y") for g in (1, 2, 3)]
    s = sp.Symbol("s")
    k = _synthetic([Assign(s, c + x[0] * x[1] + sum(2 * x[g] * y[g] - y[g] for g in range(3)))])
    out = leg_loop._split_leg_sums(k, 3).body
    parts = [st.target for st in out[:3]]
    assert [t.name for t in parts] == ["leg1_sum_s", "leg2_sum_s", "leg3_sum_s"]
    assert out[3].target == s
    assert [st.expr for st in out[:3]] == [2 * x[g] * y[g] - y[g] for g in range(3)]
    assert out[3].expr == c + x[0] * x[1] + sum(parts)


@pytest.mark.parametrize("case", ["a leg missing", "another computation", "names alone",
                                  "a part's name taken"])
def test_a_sum_that_is_not_one_computation_per_leg_stays_whole(case):
    x = [sp.Symbol(f"leg{g}_x") for g in (1, 2, 3)]
    y = [sp.Symbol(f"leg{g}_y") for g in (1, 2, 3)]
    terms = {"a leg missing": [x[0] * y[0], x[1] * y[1]],
             "another computation": [x[0] * y[0], x[1] * y[1], x[2] + y[2]],
             "names alone": [x[0], x[1], x[2]],
             "a part's name taken": [x[g] * y[g] for g in range(3)]}[case]
    body = [Assign(sp.Symbol("s"), sp.Add(*terms))]
    if case == "a part's name taken":
        body.insert(0, Assign(sp.Symbol("leg2_sum_s"), x[0] + 1))
    k = _synthetic(body)
    assert leg_loop._split_leg_sums(k, 3).body == k.body


def test_reduced_mass_matrix_sums_are_computed_per_leg_in_the_loop():
    """hexapod_rsu's step: an element of Ac* is the ring's term plus the sum of the legs'
    parts, the parts computed in a loop over the legs, not mechanism-wide (or, where a leg's
    part is one value of the loop already, the sum of those)."""
    pf = _platform("hexapod_rsu")
    k = leg_loop.with_leg_loops(pk._step, pf, FrameCBuild)
    loops = [st for st in k.body if isinstance(st, ColumnLoop)]
    from_loops = {t for st in loops for col in st.targets for t in col}
    sums = [st for st in k.body if isinstance(st, Assign) and st.target.name.startswith("Ac_star")
            and any(s.name.startswith("leg") for s in st.expr.free_symbols)]
    assert len(sums) == 21
    split = 0
    for st in sums:
        legs = [s for s in st.expr.free_symbols if s.name.startswith("leg")]
        assert len(legs) == 6 and set(legs) <= from_loops, st
        split += sorted(s.name for s in legs) == [f"leg{g}_sum_{st.target.name}"
                                                  for g in range(1, 7)]
    assert split >= 15


def test_a_later_loop_reads_an_earlier_loops_results_in_place():
    """In C, a slot of a later loop whose columns are an earlier loop's results (a leg's
    values from before the reduction, read again after it) is read from that loop's array,
    not copied through the kernel's scalars into its own."""
    from mechgen.generator.build import files_for_spec
    from mechgen.generator.emit import _forward_results
    body = [{"loop": {"variable_slots": ["L_a"], "variable_columns": [["0.0"]] * 4,
                      "count": 2, "size": 4, "results": ["L_u", "L_v"], "prefix": "cl0_",
                      "targets": [["leg1_u", "leg1_v"], ["leg2_u", "leg2_v"]]}},
            {"loop": {"variable_slots": ["M_v", "M_w"], "count": 2, "size": 4,
                      "variable_columns": [["leg1_v", "leg1_w"], ["leg2_v", "leg2_w"],
                                           ["0.0", "0.0"], ["0.0", "0.0"]],
                      "results": [], "prefix": "cl1_", "targets": [[], []]}}]
    _forward_results(body)
    second = body[1]["loop"]
    assert second["forwarded"] == [{"slot": "M_v", "source": "cl0_out[1]"}]
    assert second["variable_slots"] == ["M_w"]
    assert second["variable_columns"] == [["leg1_w"], ["leg2_w"], ["0.0"], ["0.0"]]
    text = (Path(__file__).resolve().parent.parent / "generated" / "hexapod_rsu"
            / "hexapod_rsu.c").read_text()
    import re
    assert re.search(r"const double \w+ = cl0_out\[\d+\]\[cl[1-9]_c\];", text)
