"""The L^T D L factorisation and solve of a tree's mass matrix with each branch's updates summed
apart (generator/algorithms/ldlt.py ltdl_factor, branch_of; ltdl_inverse.ltdl_apply).

A joint of one leg updates the trunk's entries independently of every other leg's joints, so
the updates are summed per leg and the legs' sums added when the entry is next read. Checked
here: which branch an update belongs to (the shallowest branching body between the entry and
the joint), that the factors and the solve equal numpy's on random trees to 1e-12, that each
branch sum reads its own branch's joints only, and that on solo12 every statement of
forward dynamics' derivatives that one leg computes has its like in the other three (so the
legs' loop takes them all: before the branch sums, leg 1's updates came last in one running
sum over the legs, and 535 of its statements stayed out of the loop).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

from mechgen.generator.algorithms.ldlt import ancestors, branch_of, ltdl_factor
from mechgen.generator.algorithms.ltdl_inverse import ltdl_apply
from mechgen.generator.ir import Assign, Check, symbol
from mechgen.generator.scalar import Recorder

# a trunk of 6 joints carrying four legs of three joints: solo12's tree
QUADRUPED = [0, 1, 2, 3, 4, 5, 6, 7, 8, 6, 10, 11, 6, 13, 14, 6, 16, 17]
# joint 1 carries two arms (2-3 and 6-7); the first arm's joint 3 carries two fingers (4, 5)
NESTED = [0, 1, 2, 3, 3, 1, 6]


def test_an_update_belongs_to_the_leg_below_the_shallowest_branching_body():
    branch = branch_of(QUADRUPED)
    assert branch(9, 6) == 7 and branch(9, 1) == 7 and branch(12, 3) == 10
    assert branch(18, 6) == 16
    assert branch(8, 7) is None and branch(6, 5) is None and branch(2, 1) is None
    nested = branch_of(NESTED)
    assert nested(4, 3) == 4 and nested(5, 3) == 5       # the fingers below their arm
    assert nested(4, 2) == 4                             # joint 3 branches between 2 and 4
    assert nested(4, 1) == 2 and nested(5, 1) == 2       # the arm below the shoulder
    assert nested(7, 1) == 6 and nested(7, 6) is None


def _tree_spd(parent, rng):
    """A = L^T D L with the tree's sparsity (L_ki != 0 for i an ancestor of k)."""
    n = len(parent)
    L = np.eye(n)
    for k in range(1, n + 1):
        for i in ancestors(parent, k):
            L[k - 1, i - 1] = rng.uniform(-1, 1)
    return L.T @ np.diag(rng.uniform(0.5, 2.0, n)) @ L


def _run(statements, values):
    """The recorded statements evaluated in order (exact rationals in, floats out)."""
    env = {s: sp.Float(v, 30) for s, v in values.items()}
    for st in statements:
        if isinstance(st, Assign):
            env[st.target] = st.expr.xreplace(env).evalf(30)
        else:
            assert isinstance(st, Check) and st.expr.xreplace(env).evalf(30) > 0
    return env


@pytest.mark.parametrize("parent", [QUADRUPED, NESTED, list(range(6))],
                         ids=["quadruped", "nested", "chain"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_factors_and_solve_with_branch_sums_equal_numpys_solve(parent, seed):
    rng = np.random.default_rng(seed)
    n = len(parent)
    A_num = _tree_spd(parent, rng)
    b_num = rng.standard_normal(n)
    A = [[symbol(f"A{i}_{j}") if A_num[i, j] != 0 else sp.Integer(0) for j in range(n)]
         for i in range(n)]
    b = [symbol(f"b{i}") for i in range(n)]
    rec = Recorder()
    L, invD = ltdl_factor(rec, A, parent, [f"q{i}" for i in range(1, n + 1)])
    x = ltdl_apply(rec, L, invD, parent, b, "x")
    values = {A[i][j]: A_num[i, j] for i in range(n) for j in range(n) if A_num[i, j] != 0}
    values.update(zip(b, b_num))
    env = _run(rec.statements, values)
    got = np.array([float(sp.sympify(e).xreplace(env)) for e in x])
    want = np.linalg.solve(A_num, b_num)
    assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))
    # L^T D L reproduces A
    Lm = np.eye(n)
    for (k, i), e in L.items():
        Lm[k - 1, i - 1] = float(sp.sympify(e).xreplace(env))
    D = np.diag([1.0 / float(sp.sympify(invD[k]).xreplace(env)) for k in range(1, n + 1)])
    assert np.max(np.abs(Lm.T @ D @ Lm - A_num)) <= 1e-12 * np.max(np.abs(A_num))


def test_each_branch_sum_reads_its_own_branch_only():
    n, parent = len(QUADRUPED), QUADRUPED
    A = [[symbol(f"A{i}_{j}") for j in range(n)] for i in range(n)]
    rec = Recorder()
    ltdl_factor(rec, A, parent, [f"q{i}" for i in range(1, n + 1)])
    legs = {7: range(7, 10), 10: range(10, 13), 13: range(13, 16), 16: range(16, 19)}
    defined_in: dict[sp.Symbol, int] = {}      # a name -> the branch whose sum defines it
    sums = 0
    for st in rec.statements:
        m = isinstance(st, Assign) and re.fullmatch(r"P\d+_\d+_b(\d+)(_\d+)?", st.target.name)
        if not m:
            continue
        sums += 1
        c = int(m.group(1))
        for s in st.expr.free_symbols:
            if s in defined_in:
                assert defined_in[s] == c, (st, s)
            else:
                m = re.fullmatch(r"(L|H|A)(\d+)_\d+(_\d+)?", s.name)
                k = int(m.group(2)) + (m.group(1) == "A")      # A's names count from 0
                assert k in legs[c], (st, s)
        defined_in[st.target] = c
    assert sums == 4 * 3 * 21        # 4 legs x 3 joints x the trunk's 21 entries


def test_every_leg_statement_of_solo12s_fd_derivatives_has_its_like_in_the_other_legs():
    from mechgen.generator.build import MECHANISMS
    from mechgen.generator.families import family_of
    from mechgen.generator.families.serial import derivatives as D
    from mechgen.generator.families.serial import leg_loops as LL
    from mechgen.generator.frontend import load
    model = load(MECHANISMS / "solo12.toml")
    chain = family_of(model).coded(model)
    k = D.forward_dynamics_derivatives(chain)
    legs = LL.tree_legs(chain)
    owner, first = LL.leg_inputs(k, chain, legs)
    k, leg_of = LL._owners(k, owner, len(legs))
    per_leg = {g: [i for i, o in enumerate(leg_of) if o == g] for g in range(1, 5)}
    aligned, _, _ = LL._align(k, per_leg, {s: f.name for s, f in first.items()})
    assert len(per_leg[1]) > 500
    assert all(len(aligned[g]) == len(per_leg[g]) for g in per_leg), \
        {g: len(per_leg[g]) - len(aligned[g]) for g in per_leg}
