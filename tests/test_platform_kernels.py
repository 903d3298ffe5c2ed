"""Generated parallel-mechanism kernels (C and Python) on random poses and velocities, against
(a) tests/reference/parallel_numpy.py, the paper's equations in plain numpy (frame-0
    recursion, dense C^(d) solves): every intermediate (H, h, A_k, b_k, A*_C, b*_C) and result;
(b) tests/reference/parallel_lagrange.py, independent of the reduction: an open tree with the
    cut joints as constraints, one KKT solve for all accelerations and multipliers;
and finite differences of the closure, Newton's iteration vs the closed forms, and the whole
mechanism's momentum balance. Every leg type (UPS, SPU, UCU, RUS, RSU) is covered by a bundled
hexapod, and a mixed six-leg platform with nonlinear springs; 1e-10 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

from mechgen.runtime.platform import newton_ik, status_info
from tests import platforms as P
from tests.reference import parallel_lagrange as lag
from tests.reference import parallel_numpy as ref

RTOL = 1e-10
STATES = 6


def close(a, b, rtol=RTOL, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(a - b).max())
    assert err <= rtol * scale, f"{what}: max error {err:.3e} > {rtol:.0e} * {scale:.3e}"
    return err / scale


@pytest.fixture(scope="module", params=P.BUNDLED + ["mixed_hexapod"])
def case(request):
    name = request.param
    pf, num, mechs = P.case_mechanisms(request, name)
    st = P.random_states(num, STATES, seed=len(name))
    return pf, num, st, mechs


@pytest.fixture(params=["c", "python"])
def backend(request):
    return request.param


def _step(m, st, i=None):
    sl = slice(None) if i is None else i
    p = m.params()
    p = p if i is not None else np.tile(p, (len(st["x"]), 1))
    out = m.step(st["x"][sl], st["u"][sl], st["F"][sl], st["fE"][sl], st["mE"][sl], st["g"][sl], p=p)
    return dict(zip([o[0] for o in m.kernels["step"].outputs], out))


def _split(num, flat):
    out, i = [], 0
    for leg in num["legs"]:
        n = len(leg["joints"])
        out.append(flat[i:i + n])
        i += n
    return out


def _reference(module, num, st, i, q_guess=None):
    x, u = st["x"][i], st["u"][i]
    kin = module.solve(num, x, u, [np.zeros(len(l["joints"])) for l in num["legs"]], st["g"][i],
                       st["fE"][i], st["mE"][i], p0=q_guess)
    Q = P.law_forces(num, kin["p"], kin["pdot"], st["F"][i])
    return module.solve(num, x, u, Q, st["g"][i], st["fE"][i], st["mE"][i], p0=q_guess)


def test_step_matches_the_numpy_reference_of_the_same_equations(case, backend):
    pf, num, st, mechs = case
    m = mechs[backend]
    out = _step(m, st)
    for i in range(STATES):
        r = _reference(ref, num, st, i, _split(num, out["q"][i]))
        close(out["q"][i], np.concatenate(r["p"]), what="q")
        close(out["qd"][i], np.concatenate(r["pdot"]), what="qd")
        close(out["xdot"][i, 6:], r["udot"], what="udot")
        close(out["qdd"][i], np.concatenate(r["pddot"]), what="qdd")
        close(out["F_on_C"][i], r["F_on_C"], what="F_on_C")
        close(out["M_on_C"][i], r["M_on_C"], what="M_on_C")
        close(out["base_force"][i], r["base_force"], what="base force")
        close(out["base_moment"][i], r["base_moment"], what="base moment")


def test_intermediates_match_the_numpy_reference(case, backend):
    pf, num, st, mechs = case
    m = mechs[backend]
    p = m.params()
    i = 0
    x, u = st["x"][i], st["u"][i]
    H = m.velocity_constraints(x, p=p)
    h = m.acceleration_terms(x, u, p=p)
    Q = m.leg_forces(x, u, st["F"][i], p=p)
    dyn = m.leg_dynamics(x, u, st["F"][i], st["g"][i], p=p)
    A_star, b_star, udot = m.reduced_dynamics(x, u, st["F"][i], st["fE"][i], st["mE"][i],
                                              st["g"][i], p=p)
    r = _reference(ref, num, st, i)
    close(H, np.vstack(r["H"]), what="H")
    close(h, np.concatenate(r["h"]), what="h")
    close(Q, np.concatenate(P.law_forces(num, r["p"], r["pdot"], st["F"][i])), what="Q")
    for k, A_k in enumerate(dyn[:-1]):
        close(A_k, r["A"][k], what=f"A_{k + 1}")
    close(dyn[-1], np.concatenate(r["b"]), what="b")
    close(A_star, r["A_star"], what="A_star")
    close(b_star, r["b_star"], what="b_star")
    assert np.all(np.linalg.eigvalsh(A_star) > 0)


def test_step_matches_the_lagrange_multiplier_formulation(case, backend):
    pf, num, st, mechs = case
    out = _step(mechs[backend], st)
    worst = 0.0
    for i in range(STATES):
        r = _reference(lag, num, st, i, _split(num, out["q"][i]))
        worst = max(worst, close(out["xdot"][i, 6:], r["udot"], what="udot"),
                    close(out["qdd"][i], np.concatenate(r["pddot"]), what="qdd"),
                    close(out["F_on_C"][i], r["F_on_C"], what="F_on_C"),
                    close(out["M_on_C"][i], r["M_on_C"], what="M_on_C"),
                    close(out["base_force"][i], r["base_force"], what="base force"),
                    close(out["base_moment"][i], r["base_moment"], what="base moment"))


def test_closed_form_inverse_kinematics_equals_newtons_iteration(case):
    pf, num, st, mechs = case
    m = mechs["c"]
    q_closed = m.inverse_kinematics(st["x"], p=np.tile(m.params(), (STATES, 1)))
    q_newton = newton_ik(m, st["x"], q0=np.zeros(m.n))
    close(q_newton, q_closed, 1e-12, "Newton vs closed form")
    q_next, res = m.newton_step(st["x"], q_closed, p=np.tile(m.params(), (STATES, 1)))
    assert np.abs(res).max() < 1e-13


def test_closure_holds_at_velocity_and_acceleration_level(case):
    """qd = dq/dt and qdd = d(qd)/dt along the motion (central differences of the kernels)."""
    pf, num, st, mechs = case
    m = mechs["c"]
    p = m.params()
    for i in range(3):
        out = _step(m, st, i)
        xdot, udot = out["xdot"][:6], out["xdot"][6:]
        x, u, d = st["x"][i], st["u"][i], 1e-5
        q_p = m.inverse_kinematics(x + d * xdot, p=p)
        q_m = m.inverse_kinematics(x - d * xdot, p=p)
        close((q_p - q_m) / (2 * d), out["qd"], 1e-7, "dq/dt")
        _, qd_p = m.leg_rates(x + d * xdot, u + d * udot, p=p)
        _, qd_m = m.leg_rates(x - d * xdot, u - d * udot, p=p)
        close((qd_p - qd_m) / (2 * d), out["qdd"], 1e-6, "d(qd)/dt")


def test_newton_and_euler_for_the_platform_with_the_leg_reactions(case):
    """m a = f_E + m g + sum F_on_C;  I omegadot + omega x I omega = m_E + sum of leg moments."""
    pf, num, st, mechs = case
    m = mechs["c"]
    out = _step(m, st)
    mC, IC = num["platform"]["m"], num["platform"]["I"]
    for i in range(STATES):
        x, u = st["x"][i], st["u"][i]
        R = ref.platform_alpha(*x[3:])          # frame 0 -> C
        F = st["fE"][i] + mC * st["g"][i] + out["F_on_C"][i].sum(0)
        close(mC * out["xdot"][i, 6:9], F, 1e-10, "Newton")
        w = u[3:]
        M = st["mE"][i] + sum(np.cross(leg["cut"]["l_C"], R @ out["F_on_C"][i, k]) + R @ out["M_on_C"][i, k]
                              for k, leg in enumerate(num["legs"]))
        close(IC @ out["xdot"][i, 9:] + np.cross(w, IC @ w), M, 1e-10, "Euler")


def test_every_leg_status_of_every_kernel_names_its_leg_and_joint(mixed_hexapod):
    """No kernel returns the old anonymous codes 1 and 2: a leg's code is 100 (leg + 1) +
    10 joint + reason, and the manifest's status_codes say which leg, joint and reason."""
    pf, _, root = mixed_hexapod
    m = P.load_generated(pf.name, root, "python")
    legs = m.manifest["legs"]
    seen = set()
    for kernel in m.kernels.values():
        for code, message in kernel.statuses.items():
            if code < 100:
                assert code in (3, 4, 5), (kernel.name, code, message)
                continue
            info = status_info(m, code)
            leg, slot, reason = legs[code // 100 - 1], (code // 10) % 10, code % 10
            joint = None if slot == 9 else leg["joints"][slot][len(leg["name"]) + 1:]
            assert (info["leg"], info["joint"]) == (leg["name"], joint), (code, info)
            assert info["reason"] == {1: "out_of_reach", 2: "singular", 3: "below_limit",
                                      4: "above_limit"}[reason]
            assert info["legacy"] == (2 if reason == 2 else 1)
            assert message == info["message"] and message.startswith(leg["name"])
            seen.add(code)
    # every leg type's checks: crank reach (RUS L2, RSU L4), U and S joints, rolls, closures
    assert {112, 201, 202, 222, 312, 322, 401, 402, 422, 432, 512, 522, 612, 192, 692} <= seen


# --- PUS legs against references that build their legs themselves ---------------------------

@pytest.fixture(scope="module")
def pus_case():
    """hexapod_pus (committed kernels) and random states about its home pose."""
    pf, num = P.bundled("hexapod_pus")
    st = P.random_states(num, STATES, seed=11)
    return P.spec_table("hexapod_pus"), P.load_generated("hexapod_pus", None, "c"), st


@pytest.mark.parametrize("module", [ref, lag], ids=["numpy", "lagrange"])
def test_pus_kernels_match_references_with_their_own_leg_geometry(pus_case, module):
    """The references read the PUS legs from the spec file and build every frame themselves
    (tests/reference/*: pus_leg; nothing of the generator's numeric description), solve the
    closure by Newton from q = 0, and agree with the generated step to 1e-10 relative: joint
    coordinates, rates and accelerations, udot, the legs' loads on C and on the base."""
    spec, m, st = pus_case
    num = P.pus_numeric(spec, module.pus_leg)
    out = _step(m, st)
    for i in range(STATES):
        r = _reference(module, num, st, i)                  # Newton from q = 0 (home)
        close(out["q"][i], np.concatenate(r["p"]), what="q")
        close(out["qd"][i], np.concatenate(r["pdot"]), what="qd")
        close(out["qdd"][i], np.concatenate(r["pddot"]), what="qdd")
        close(out["xdot"][i, 6:], r["udot"], what="udot")
        close(out["F_on_C"][i], r["F_on_C"], what="F_on_C")
        close(out["base_force"][i], r["base_force"], what="base force")
        close(out["base_moment"][i], r["base_moment"], what="base moment")
    assert np.all(out["M_on_C"] == 0.0)                      # spherical cuts


def test_pus_slide_closed_form_is_the_rail_and_rod_geometry(pus_case):
    """slide = d.e - sqrt(rod^2 - |d|^2 + (d.e)^2), d = s - base, e the unit rail (numpy, from
    the spec): the branch nearest 0 at home, and 0 there."""
    spec, m, st = pus_case
    q = m.inverse_kinematics(st["x"], p=np.tile(m.params(), (STATES, 1)))
    home = np.array(spec["platform"]["home"], float)
    for k, entry in enumerate(spec["legs"]):
        b, e = np.array(entry["base"], float), np.array(entry["rail"], float)
        e /= np.linalg.norm(e)
        s_home = home[:3] + ref.platform_alpha(*home[3:]).T @ np.array(entry["platform"], float)
        rod = np.linalg.norm(s_home - b)
        for i, x in enumerate(st["x"]):
            d = x[:3] + ref.platform_alpha(*x[3:]).T @ np.array(entry["platform"], float) - b
            slide = d @ e - np.sqrt(rod ** 2 - d @ d + (d @ e) ** 2)
            close(q[i, 3 * k], slide, 1e-12, f"leg{k + 1} slide")
    assert np.abs(m.inverse_kinematics(home, p=m.params())).max() < 1e-12
