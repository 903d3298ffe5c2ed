"""The last two passes. Sums and products regrouped by when their operands are ready
(generator/passes/latency.py): two operands per operation where regrouped, the same
operations, the same values up to rounding, chains never longer than as printed before and
as short as regrouping every statement gives, statements off the critical path as built.
The statements reordered by a list schedule (generator/passes/schedule.py): the same
statements, each after what it reads, checks in their order, the same bits, and only
kernels whose chain is long for their work."""

from __future__ import annotations

import math
import random

import pytest
import sympy as sp

from mechgen.generator.build import MECHANISMS
from mechgen.generator.families import family_of
from mechgen.generator.frontend import load
from mechgen.generator.ir import Assign, Check, Kernel, Port, binary, check_invariants, symbol
from mechgen.generator.passes.latency import deadlines, longest_chain, regroup, shorten_chains
from mechgen.generator.passes.loops import unroll_loops
from mechgen.generator.passes.opcount import count_ops
from mechgen.generator.passes.schedule import MIN_CHAIN_SHARE, schedule_statements
from mechgen.generator.pipeline import PASSES

a, b, c, d, x = (symbol(n) for n in "abcdx")


def _kernel(body, outputs, inputs=(a, b, c, d, x)) -> Kernel:
    return Kernel("k", "", (Port("in", (len(inputs),), tuple(inputs)),),
                  (Port("out", (len(outputs),), tuple(outputs)),), tuple(body))


def _evaluate(k: Kernel, values: dict) -> list[float]:
    """The kernel's outputs by plain float arithmetic, statement after statement."""
    env = dict(values)
    for st in unroll_loops(k).body:
        if isinstance(st, Assign):
            args = sorted(st.expr.free_symbols, key=str)
            env[st.target] = sp.lambdify(args, st.expr, "math")(*(env[s] for s in args))
    outs = []
    for p in k.outputs:
        for e in p.elements:
            e = sp.sympify(e)
            args = sorted(e.free_symbols, key=str)
            outs.append(float(sp.lambdify(args, e, "math")(*(env[s] for s in args))))
    return outs


def _before_last(spec: str, last: int) -> list[Kernel]:
    """Every kernel of a bundled spec through the pipeline's passes but the last ``last``."""
    model = load(MECHANISMS / spec)
    family = family_of(model)
    coded = family.coded(model)
    kernels = []
    for build in family.builders_for(model):
        k = build(coded)
        for _, p in PASSES[:-last]:
            k = p(k)
        kernels.append(k)
    return kernels


@pytest.fixture(scope="module")
def panda_pairs():
    """(kernel before regrouping, kernel after) for every kernel of the bundled panda arm."""
    return [(k, shorten_chains(k)) for k in _before_last("panda_arm.toml", 2)]


def test_the_latest_operand_of_a_sum_is_added_last():
    t = [symbol(f"t{i}") for i in range(4)]
    chain = [Assign(t[0], a * b), Assign(t[1], t[0] * c), Assign(t[2], t[1] * d),
             Assign(t[3], a + b + c + t[2])]
    k = shorten_chains(_kernel(chain, [t[3]]))
    last = k.body[-1]
    assert last.target == t[3] and t[2] in last.expr.args      # one addition after t2
    assert longest_chain(k) == 4 < longest_chain(_kernel(chain, [t[3]])) + 1
    check_invariants(k)


def test_partials_skip_names_the_kernel_already_has():
    y, y_p1 = symbol("y"), symbol("y_p1")
    body = [Assign(y_p1, a * b), Assign(y, a + b + c + d + y_p1)]
    k = shorten_chains(_kernel(body, [y]))
    names = [str(st.target) for st in k.body]
    assert names.count("y_p1") == 1 and "y_p2" in names
    check_invariants(k)


def test_signs_cost_no_operation_and_values_stay():
    y = symbol("y")
    exprs = [-a - b - c - d, a - b - 2 * c + 3 * d * x - 1.5, -a * b * c * d, 2 * a * b * c,
             (a + b + c) * (c + d + x), sp.sqrt(a + b + c * d * x), (a + b + c) ** 2 / (d + x + 1),
             -3 * a * b * (c + d + x)]
    rng = random.Random(3)
    for e in exprs:
        k0 = _kernel([Assign(y, e)], [y])
        k1 = shorten_chains(k0)
        check_invariants(k1)
        assert all(binary(st.expr) for st in regroup(k0).body), e
        assert all(binary(st.expr) or st in k0.body for st in k1.body), e
        assert count_ops(k1) == count_ops(k0), e
        for _ in range(5):
            vals = {s: rng.uniform(0.5, 2.0) for s in (a, b, c, d, x)}
            v0, v1 = _evaluate(k0, vals)[0], _evaluate(k1, vals)[0]
            assert v1 == pytest.approx(v0, rel=1e-14, abs=1e-14), e


def test_every_kernel_keeps_its_operations_and_values_and_no_chain_grows(panda_pairs):
    rng = random.Random(11)
    shorter = {}
    for before, after in panda_pairs:
        check_invariants(after)
        built = set(before.body)
        assert all(binary(st.expr) or st in built for st in after.body
                   if isinstance(st, Assign))
        assert count_ops(after) == count_ops(before)
        assert longest_chain(after) == longest_chain(regroup(before)), before.name
        assert longest_chain(after) <= longest_chain(before), before.name
        shorter[before.name] = (longest_chain(before), longest_chain(after))
        for _ in range(3):
            vals = {s: rng.uniform(-2.0, 2.0) for p in before.inputs for s in p.elements}
            v0, v1 = _evaluate(before, vals), _evaluate(after, vals)
            scale = max(1.0, max(map(abs, v0)))
            assert all(math.isclose(p, q, rel_tol=1e-11, abs_tol=1e-12 * scale)
                       for p, q in zip(v0, v1)), before.name
    # Newton-Euler's chain of forces, tip to base, is much shorter (panda: 120 -> 64 steps,
    # forward dynamics 141 -> 83); the mass matrix's composite inertias already add the
    # carried term late (57 -> 55)
    for name in ("inverse_dynamics", "forward_dynamics"):
        t0, t1 = shorter[name]
        assert t1 < 0.7 * t0, (name, t0, t1)
    assert shorter["mass_matrix"][1] < shorter["mass_matrix"][0]


def test_a_sum_off_the_critical_path_stays_as_built():
    t = [symbol(f"t{i}") for i in range(6)]
    y, u, v, w = (symbol(n) for n in "yuvw")
    chain = [Assign(t[0], a * b), Assign(t[1], t[0] * c), Assign(t[2], t[1] * d),
             Assign(t[3], t[2] * x), Assign(t[4], t[3] * a),
             Assign(y, a + b + c + d + x),             # ready in 4 steps as built, 3 regrouped
             Assign(t[5], t[4] + u + v + w)]           # printed t4 first: it waits 3 steps
    before = _kernel(chain, [t[5], y], inputs=(a, b, c, d, x, u, v, w))
    k = shorten_chains(before)
    assert chain[5] in k.body                  # y has slack: its form as built
    assert chain[6] not in k.body              # t5 is on the critical path: regrouped
    assert longest_chain(k) == longest_chain(regroup(before)) == 6 < longest_chain(before)
    ready = deadlines(regroup(before))
    assert ready[y] == 6 and ready[t[4]] == 5
    check_invariants(k)


def test_the_pipeline_ends_with_both_passes():
    assert PASSES[-2:] == [("shorten_chains", shorten_chains),
                           ("schedule", schedule_statements)]


@pytest.fixture(scope="module")
def ur5_kernels():
    """ur5's kernels as they reach the schedule (arm kernels with long chains, and its
    derivatives, which are wide)."""
    return _before_last("ur5_urdf.toml", 1)


def _position(k: Kernel) -> dict:
    return {str(st): i for i, st in enumerate(k.body)}


def test_the_schedule_moves_statements_only_after_what_they_read(ur5_kernels):
    moved = 0
    for k in ur5_kernels:
        s = schedule_statements(k)
        check_invariants(s)                         # each name defined before it is read
        assert sorted(map(str, s.body)) == sorted(map(str, k.body))
        assert s.outputs == k.outputs
        checks = [str(st) for st in s.body if isinstance(st, Check)]
        assert checks == [str(st) for st in k.body if isinstance(st, Check)]
        moved += s.body != k.body
    assert moved >= 5


def test_the_schedule_keeps_the_bits(ur5_kernels):
    rng = random.Random(5)
    for k in ur5_kernels:
        s = schedule_statements(k)
        vals = {e: rng.uniform(-2.0, 2.0) for p in k.inputs for e in p.elements}
        assert _evaluate(s, vals) == _evaluate(k, vals), k.name


def test_only_kernels_with_a_long_chain_for_their_work_are_reordered(ur5_kernels):
    for k in ur5_kernels:
        long_chain = longest_chain(k) >= MIN_CHAIN_SHARE * count_ops(k)["total"]
        assert (schedule_statements(k) is not k) == (long_chain and len(k.body) >= 3), k.name
    names = {k.name: longest_chain(k) / count_ops(k)["total"] for k in ur5_kernels}
    assert names["mass_matrix"] > 0.1 > 0.04 > names["inverse_dynamics_derivatives"]


def test_the_schedule_starts_the_longest_chain_first():
    """Two independent chains: the longer one's first statement comes first, and the short
    one is interleaved before the long one ends."""
    t = [symbol(f"t{i}") for i in range(8)]
    u = [symbol(f"u{i}") for i in range(2)]
    body = [Assign(u[0], c * d), Assign(u[1], u[0] + x),
            Assign(t[0], a * b), *(Assign(t[i], t[i - 1] * a) for i in range(1, 8))]
    k = _kernel(body, [t[7], u[1]])
    s = schedule_statements(k)
    order = [str(st.target) for st in s.body]
    assert order[0] == "t0" and order.index("u1") < order.index("t7")
    check_invariants(s)
