"""The forms of forward_dynamics_derivatives chosen by op count at generation give the same
outputs as the reference form (the body-frame mass matrix and bias, A^-1 by n solves against
the unit vectors on the L^T D L factors, generator/families/serial/derivatives.py): the
symmetric A^-1 (generator/algorithms/ltdl_inverse.py) and the mass matrix and bias from the
analytical pass's composites (rnea_derivatives.py eqs. 8, 9), to 1e-10 relative, on random
fixed- and free-base (y-z-x angles) chains and trees with prismatic joints, massless bodies,
springs and named parameters, and on the quaternion base (forward-mode dID). Each kernel is
evaluated as built (before CSE) from its statements printed as Python."""

from __future__ import annotations

import pytest

from mechgen.generator.families.serial import derivatives as D
from tests.chains import random_chain
from tests.test_dynamics_derivatives import quaternion_arm
from tests.test_rnea_analytic_derivatives import _function, _same, _states

# (seed, joints, base, parameters, tree, joint types or None for all)
CASES = [(45, 7, "fixed", True, False, None), (43, 9, "fixed", False, True, None),
         (43, 5, "fixed", False, True, ["Px", "Py", "Pz", "Rx", "Rz"]),
         (45, 5, "free", False, True, None), (44, 4, "free", True, False, None)]


def _equal_outputs(new, reference, chain, pvals, seed):
    fn, fr = _function(new), _function(reference)
    for x in _states(chain, pvals, [p.name for p in reference.inputs], seed):
        for port, a, b in zip(reference.outputs, fn(x), fr(x)):
            _same(a, b, f"{reference.name}.{port.name}")


@pytest.mark.parametrize("seed, n, base, params, tree, types", CASES,
                         ids=[f"seed{c[0]}-{c[1]}-{c[2]}{'-tree' if c[4] else ''}"
                              f"{'-prismatic' if c[5] else ''}" for c in CASES])
def test_symmetric_inverse_equals_the_unit_solves(seed, n, base, params, tree, types):
    chain, pvals = random_chain(seed, n, base, params=params, tree=tree, types=types)
    assert any(j.kind == "P" for j in chain.joints) and any(
        j.stiffness != 0 for j in chain.joints) and chain.is_tree == tree
    frame = D.best_frame(chain)
    new = D.fd_derivatives_analytic(chain, frame, inverse=D.symmetric_inverse)
    reference = D.fd_derivatives_analytic(chain, frame, inverse=D.inverse_by_unit_solves)
    _equal_outputs(new, reference, chain, pvals, seed)


@pytest.mark.parametrize("seed, n, base, params, tree, types", CASES,
                         ids=[f"seed{c[0]}-{c[1]}-{c[2]}{'-tree' if c[4] else ''}"
                              f"{'-prismatic' if c[5] else ''}" for c in CASES])
def test_mass_matrix_and_bias_from_the_composites_equal_the_body_frame_ones(seed, n, base,
                                                                           params, tree, types):
    chain, pvals = random_chain(seed, n, base, params=params, tree=tree, types=types)
    frames = sorted({0, D.best_frame(chain)}) if seed == 43 and tree else [D.best_frame(chain)]
    for frame in frames:
        new = D.fd_derivatives_composite(chain, frame)
        reference = D.fd_derivatives_analytic(chain, frame, inverse=D.inverse_by_unit_solves)
        assert new.statuses == reference.statuses
        _equal_outputs(new, reference, chain, pvals, seed)


def test_symmetric_inverse_equals_the_unit_solves_on_the_quaternion_base():
    chain, pvals = quaternion_arm()
    new = D.fd_derivatives_forward(chain, inverse=D.symmetric_inverse)
    reference = D.fd_derivatives_forward(chain, inverse=D.inverse_by_unit_solves)
    _equal_outputs(new, reference, chain, pvals, 3)
