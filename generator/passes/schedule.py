"""Statement order: a list schedule that keeps the long chains going with few values live.

GCC on x86 does not reorder statements before register allocation (``-fschedule-insns`` is
off there), so the order of the printed C decides two things at once: how early the long
chains of dependent operations start (the composite inertias tip to base, Newton-Euler's
forces), which the out-of-order core can only overlap with work that sits close by in the
instruction stream, and how many values are live at a time (16 vector registers on x86-64;
what does not fit is spilled to the stack and loaded again). The algorithms emit their
statements stage after stage (every composite inertia, then every column of the mass
matrix), which is neither.

This pass reorders the statements of a kernel (never what they compute: the same
expressions of the same operands, so the same bits) by list scheduling with a register
budget, as Goodman and Hsu's integrated prepass scheduling does (ICS 1988): among the
statements whose operands are computed,

- while fewer than :data:`LIVE_BUDGET` values are live, take the one that starts the longest
  remaining chain (its *height*: ready-time steps from it to the end of the kernel, in the
  latency model of passes/latency.py);
- otherwise take the one that adds the fewest live values (it defines a value someone reads,
  +1; it is the last reader of an operand, -1 each), the longest chain first on a tie;

ties to the earlier statement of the original order. Only a kernel whose longest chain is
long for its work is reordered (at least :data:`MIN_CHAIN_SHARE` of its operations: the arms'
mass matrix and dynamics, forward kinematics); in a wide kernel (the legs of a quadruped, the
derivatives) the builder's order, one branch after another, keeps fewer values live and was
faster. Checks keep their order among
themselves (the first failing one gives the status), and a statement after a check stays
after it (a Python kernel raises on the division by a pivot the check refused); a statement
before a check may move after it (a failing check overwrites every output with NaN).
Measured effect: docs/algorithms.md §2.4.3.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

import sympy as sp

from mechgen.generator.ir import Check, ColumnLoop, Kernel, Statement, defines, reads
from mechgen.generator.passes.latency import longest_chain, loop_depth, steps_as_printed
from mechgen.generator.passes.opcount import count_ops

LIVE_BUDGET = 8
"""Live values at which the schedule turns from the longest chain to the fewest live values
(xArm7's mass matrix, AVX2: 8 -> 104 ns, 12 -> 105, 16 -> 107, 24 -> 109; the order as
built 114; docs/algorithms.md §2.4.3)."""


MIN_CHAIN_SHARE = 0.05
"""A kernel is reordered when its longest chain (latency.longest_chain, in steps) is at least
this share of its operations. Measured (AVX2, Pinocchio race, order as built -> scheduled):
chain/ops >= 0.052 gained or held (xArm7 mass matrix 0.084: 114 -> 99 ns, panda's 0.138:
84 -> 75, ur5 forward dynamics 0.105: 126 -> 119, solo12 forward kinematics 0.091: 130 ->
115); <= 0.045 lost (HyQ body mass matrix 0.041: 186 -> 195, solo12 forward dynamics 0.036:
741 -> 774, panda inverse-dynamics derivatives 0.015: 650 -> 707); docs/algorithms.md §2.4.3."""


def schedule_statements(k: Kernel) -> Kernel:
    """The kernel with its statements in the list-schedule order (module doc), if its longest
    chain is long for its work; otherwise unchanged."""
    body = list(k.body)
    if len(body) < 3 or longest_chain(k) < MIN_CHAIN_SHARE * count_ops(k)["total"]:
        return k
    return k.with_body([body[i] for i in _order(body)])


def _steps(st: Statement) -> int:
    """Ready-time steps of one statement from its operands (latency.py's model)."""
    if isinstance(st, ColumnLoop):
        return loop_depth(st)
    return max(steps_as_printed(st.expr, {}), 1)


def _order(body: list[Statement]) -> list[int]:
    n = len(body)
    producer: dict[sp.Symbol, int] = {}
    for i, st in enumerate(body):
        for s in defines(st):
            producer[s] = i
    operands = [sorted({s for s in reads(st) if s in producer}, key=str) for st in body]
    readers: dict[sp.Symbol, set[int]] = defaultdict(set)
    for i, names in enumerate(operands):
        for s in names:
            readers[s].add(i)
    deps = [{producer[s] for s in names} for names in operands]
    last_check = None        # a statement stays after the checks before it: the Python
    for i, st in enumerate(body):   # kernels raise on a division by a pivot a check refused
        if last_check is not None:
            deps[i].add(last_check)
        if isinstance(st, Check):
            last_check = i
    users: list[set[int]] = [set() for _ in range(n)]
    for i, ds in enumerate(deps):
        for d in ds:
            users[d].add(i)
    height = [0] * n
    for i in range(n - 1, -1, -1):
        height[i] = _steps(body[i]) + max((height[u] for u in users[i]), default=0)
    return _ListSchedule(body, operands, readers, deps, users, height).run()


class _ListSchedule:
    """The schedule's state: the ready statements (in a heap by height, and in buckets by
    the live values they add), the live values, the readers each value still waits for."""

    def __init__(self, body, operands, readers, deps, users, height) -> None:
        self.body, self.operands, self.users, self.height = body, operands, users, height
        self.waiting = {s: set(r) for s, r in readers.items()}    # unscheduled readers
        self.missing = [len(d) for d in deps]
        self.frees = [0] * len(body)
        self.live = 0
        self.ready: set[int] = set()
        self.by_height: list[tuple[int, int]] = []
        self.by_growth: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        self.growth_now: dict[int, int] = {}

    def growth(self, i: int) -> int:
        adds = sum(1 for s in defines(self.body[i]) if self.waiting.get(s))
        return adds - self.frees[i]

    def make_ready(self, i: int) -> None:
        self.ready.add(i)
        self.frees[i] = sum(1 for s in self.operands[i] if len(self.waiting[s]) == 1)
        heapq.heappush(self.by_height, (-self.height[i], i))
        self.file(i)

    def file(self, i: int) -> None:
        g = self.growth(i)
        self.growth_now[i] = g
        heapq.heappush(self.by_growth[g], (-self.height[i], i, g))

    def pick(self) -> int:
        if self.live < LIVE_BUDGET:
            while True:
                _, i = heapq.heappop(self.by_height)
                if i in self.ready:
                    return i
        for g in sorted(self.by_growth):
            bucket = self.by_growth[g]
            while bucket:
                _, i, filed = bucket[0]
                if i in self.ready and self.growth_now[i] == filed:
                    return i
                heapq.heappop(bucket)
        raise AssertionError("no ready statement")      # unreachable: pick() needs one

    def run(self) -> list[int]:
        for i in range(len(self.body)):
            if self.missing[i] == 0:
                self.make_ready(i)
        order = []
        while self.ready:
            i = self.pick()
            self.ready.discard(i)
            order.append(i)
            self.retire(i)
        assert len(order) == len(self.body), "the statements' dependences have a cycle"
        return order

    def retire(self, i: int) -> None:
        """Statement i is placed: its operands lose a reader, its values go live, its users
        may become ready."""
        for s in self.operands[i]:
            waiting = self.waiting[s]
            waiting.discard(i)
            if not waiting:
                self.live -= 1
            elif len(waiting) == 1:
                (last,) = waiting
                if last in self.ready:
                    self.frees[last] += 1
                    self.file(last)
        self.live += sum(1 for s in defines(self.body[i]) if self.waiting.get(s))
        for u in self.users[i]:
            self.missing[u] -= 1
            if self.missing[u] == 0:
                self.make_ready(u)
