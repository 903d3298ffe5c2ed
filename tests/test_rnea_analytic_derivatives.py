"""The analytical RNEA derivatives (generator/algorithms/rnea_derivatives.py, frame-0 spatial
algebra) give the same dID/dq, dID/dqd, and through -A^-1 dID the same dFD/dq, dFD/dqd, as the
forward-mode differentiation of the RNEA's scalar IR, to 1e-10 relative, in several common
frames (frame 0, a leaf's frame, the one chosen by op count), on random fixed- and
free-base (y-z-x angles) chains and trees with prismatic joints, massless bodies, composite
joints, spring-damper laws and named parameters. Each kernel is evaluated as built (before CSE)
from its statements printed as Python."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechgen.generator.backends.python import PyPrinter
from mechgen.generator.families.serial import derivatives as D
from mechgen.generator.ir import Assign
from mechgen.generator.passes.loops import unroll_loops
from tests.chains import random_chain
from tests.test_dynamics_derivatives import quaternion_arm

STATES = 8
RTOL = 1e-10


def _function(k):
    """A Python function of the kernel's inputs (a dict name -> array) returning its outputs
    (column loops unrolled)."""
    k = unroll_loops(k)
    printer = PyPrinter()
    lines = ["def f(inputs):"]
    for port in k.inputs:
        for i, s in enumerate(port.elements):
            lines.append(f"    {s} = inputs[{port.name!r}][{i}]")
    for st in k.body:
        if isinstance(st, Assign):
            lines.append(f"    {st.target} = {printer.doprint(st.expr)}")
    outs = ", ".join("[" + ", ".join(printer.doprint(e) for e in p.elements) + "]"
                     for p in k.outputs)
    lines.append(f"    return ({outs},)")
    env = {"math": math}
    exec("\n".join(lines), env)
    return env["f"]


def _states(chain, pvals, inputs, seed):
    rng = np.random.default_rng(seed)
    for _ in range(STATES):
        st = {"q": rng.uniform(-np.pi, np.pi, chain.nq), "qd": rng.normal(size=chain.n),
              "qdd": rng.normal(size=chain.n), "Q": 3 * rng.normal(size=chain.n),
              "p": np.array([pvals[s.name] for s in chain.parameters])}
        if chain.base == "free":
            st["q"][3:6] = rng.uniform(-1.0, 1.0, 3)
        yield {name: st[name] for name in inputs}


def _same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(a - b).max())
    assert err <= RTOL * scale, f"{what}: {err:.3e} > {RTOL:.0e} * {scale:.3e}"


# (seed, joints, base, parameters, tree, joint types or None for all)
CASES = [(41, 6, "fixed", True, False, None), (41, 8, "fixed", False, True, None),
         (42, 5, "fixed", False, False, ["Px", "Py", "Pz", "Rz"]),
         (42, 4, "free", False, True, None), (41, 5, "free", True, False, None)]


@pytest.mark.parametrize("seed, n, base, params, tree, types", CASES,
                         ids=[f"seed{c[0]}-{c[1]}-{c[2]}{'-tree' if c[4] else ''}{'-prismatic' if c[5] else ''}"
                              for c in CASES])
def test_analytical_derivatives_equal_forward_mode_derivatives(seed, n, base, params, tree,
                                                               types):
    chain, pvals = random_chain(seed, n, base, params=params, tree=tree, types=types)
    assert D.analytic_applies(chain)
    assert any(j.kind == "P" for j in chain.joints) and any(
        j.stiffness != 0 for j in chain.joints) and chain.is_tree == tree
    # frame 0, the last body's frame (reached by walking up through the base) and the frame
    # best_frame picks; the forward dynamics' derivatives in the picked frame
    pairs = [(lambda c, f=f: D.id_derivatives_analytic(c, f), D.id_derivatives_forward)
             for f in sorted({0, chain.n, D.best_frame(chain)})]
    pairs.append((D.fd_derivatives_analytic, D.fd_derivatives_forward))
    # from the composites (on the Euler-angle base with the base columns' W^T parts written
    # without a solve, derivatives.base_solver), in frame 0, the last body's and the picked one
    pairs += [(lambda c, f=f: D.fd_derivatives_composite(c, f), D.fd_derivatives_forward)
              for f in sorted({0, chain.n, D.best_frame(chain)})]
    for analytic, forward in pairs:
        ka, kf = analytic(chain), forward(chain)
        fa, ff = _function(ka), _function(kf)
        for x in _states(chain, pvals, [p.name for p in ka.inputs], seed):
            for port, a, f in zip(ka.outputs, fa(x), ff(x)):
                _same(a, f, f"{ka.name}.{port.name}")


def test_frame0_quaternion_base_takes_the_twins_analytical_path():
    """The frame-0 quaternion base's derivatives come from its body-twist twin's analytical
    ones (families/serial/frame0_base.py): the kernel has the twin's Sdd and its rates
    v_b = R^T v0, and dID and dFD share one search of the common frame."""
    chain, _ = quaternion_arm("twin_arm", (0.0, 0.0, -9.81))
    assert chain.base_velocity == "frame0" and D.analytic_applies(chain)
    searched = len(D._BEST_FRAME)
    k = D.id_derivatives_analytic(chain)
    D.fd_derivatives_composite(chain)
    assert len(D._BEST_FRAME) == searched + 1      # one frame search, the twin's
    names = {st.target.name for st in k.body if isinstance(st, Assign)}
    assert any(x.startswith("Sdd") for x in names), names
    assert any(x.startswith("v_body") for x in names), names


@pytest.mark.parametrize("base_velocity", ["body", "frame0"])
@pytest.mark.parametrize("derivatives", ["tangent", True])
def test_free_flyer_analytical_derivatives_equal_forward_mode_derivatives(derivatives,
                                                                          base_velocity):
    """The body-twist base (rnea_derivatives.free_flyer_block) under gravity (the a_0 x S_k
    terms), with springs and a prismatic joint, along Pinocchio's tangent and mapped to the
    quaternion's columns (coordinate_rows): dID in frames 0, 1 (a joint of the block), 6 (the
    base body), n and the picked one, dFD analytical and from the composites, all against
    forward differentiation along the same directions. The frame-0 quaternion base the same
    way through its body-twist twin (frame0_base: v_b = R^T v0, qdd_b = T qdd0 + v_b x
    omega, the rows turned by R), against forward differentiation of its own IR."""
    chain, pvals = quaternion_arm("ff_arm", (0.3, -1.2, -9.81), base_velocity, derivatives)
    assert D.analytic_applies(chain) and D.best_frame(chain) in (6, chain.n)
    pairs = [(lambda c, f=f: D.id_derivatives_analytic(c, f), D.id_derivatives_forward)
             for f in sorted({0, 1, 6, chain.n, D.best_frame(chain)})]
    pairs += [(D.fd_derivatives_analytic, D.fd_derivatives_forward),
              (D.fd_derivatives_composite, D.fd_derivatives_forward),
              (lambda c: D.fd_derivatives_composite(c, 6), D.fd_derivatives_forward)]
    for analytic, forward in pairs:
        ka, kf = analytic(chain), forward(chain)
        assert [p.shape for p in ka.outputs] == [p.shape for p in kf.outputs]
        fa, ff = _function(ka), _function(kf)
        for x in _states(chain, pvals, [p.name for p in ka.inputs], 7):
            for port, a, f in zip(ka.outputs, fa(x), ff(x)):
                _same(a, f, f"{ka.name}.{port.name}")


def test_free_flyer_velocity_columns_skip_the_axes_rates_in_the_base_frame(monkeypatch):
    """In the base body's frame (its axes orthonormal numbers) the composite dFD solves only
    U^T S_k for the six base-velocity columns and writes A^-1 W^T (v_b x S_k) = S_B^T
    (v_b x S_k) into the base rows (derivatives.base_solver, base_rates): the kernel costs fewer operations
    than with W^T (v_b x S_k) formed and solved (their equality with forward mode: the test
    above)."""
    from mechgen.generator.passes.opcount import count_ops
    chain, _ = quaternion_arm("ff_arm", (0.3, -1.2, -9.81), "body", "tangent")
    k = D.fd_derivatives_composite(chain, 6)
    monkeypatch.setattr(D, "base_solver", lambda *args: None)
    k_solved = D.fd_derivatives_composite(chain, 6)
    assert count_ops(k)["total"] < count_ops(k_solved)["total"]
