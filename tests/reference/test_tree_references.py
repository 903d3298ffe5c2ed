"""Kinematic trees in the two numpy references (chain_numpy.py and featherstone.py).

Each check can fail: the two references are computed independently (frame-0 Kane's form
vs. spatial RBDA Tables 5.1, 6.2, 7.1) and must agree; the tree must equal the same
mechanism described differently (branches as separate serial chains, another regular
numbering, a floating base with massless legs pruned); A must have the tree's sparsity;
energy, power and finite differences close the loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from . import chain_numpy as ref
from . import featherstone as fs
from .test_featherstone_selfcheck import random_inertia, random_rotation

G = np.array([0.0, 0.0, -9.81])
ZERO3 = np.zeros(3)
SEEDS = range(4)
TOL = 1e-12     # relative agreement of the two references (kinematics, A, ID, energies)
FD_TOL = 1e-10  # forward dynamics: rounding grows with cond(A) (<= 1e6 here; seen <= 2e-12)

# ---------------------------------------------------------------------------
# mechanisms: featherstone joint dicts (plus spring k, c, q0 for chain_numpy)
# ---------------------------------------------------------------------------

TOPOLOGIES = ("torso", "quadruped", "random")
TWO_ARM_TORSO = [0, 1, 2, 3, 1, 5, 6]
QUADRUPED = [0, 1, 2, 3, 4, 5] + [p for leg in range(4) for p in (6, 7 + 3 * leg, 8 + 3 * leg)]
FLOATING_BASE = [("P", "x"), ("P", "y"), ("P", "z"), ("R", "y"), ("R", "z"), ("R", "x")]


def joint(rng, parent: int, kind=None, axis=None, massless=False, simple=False) -> dict:
    """A random joint + body; ``simple``: l = 0, gamma = 1 (floating-base joints)."""
    return {
        "parent": parent,
        "type": kind or str(rng.choice(["R", "P"])),
        "axis": axis or str(rng.choice(["x", "y", "z"])),
        "l": np.zeros(3) if simple else rng.uniform(-0.5, 0.5, 3),
        "gamma": np.eye(3) if simple else random_rotation(rng),
        "m": 0.0 if massless else float(rng.uniform(0.5, 2.0)),
        "com": np.zeros(3) if massless else rng.uniform(-0.3, 0.3, 3),
        "I_com": np.zeros((3, 3)) if massless else random_inertia(rng),
        "k": float(rng.uniform(0, 5)) if rng.random() < 0.5 else 0.0,
        "c": float(rng.uniform(0, 1)) if rng.random() < 0.5 else 0.0,
        "q0": float(rng.uniform(-0.5, 0.5)),
    }


def make_tree(rng, topology: str) -> list[dict]:
    if topology == "torso":
        return [joint(rng, p) for p in TWO_ARM_TORSO]
    if topology == "quadruped":   # bodies 1-5 massless, body 6 the trunk
        base = [joint(rng, p, k, a, massless=p < 5, simple=True)
                for p, (k, a) in enumerate(FLOATING_BASE)]
        base[-1]["m"], base[-1]["I_com"] = 8.0, 4 * random_inertia(rng)
        return base + [joint(rng, p) for p in QUADRUPED[6:]]
    n = int(rng.integers(4, 13))
    par = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    # a massless body only where something hangs below it, so A stays regular
    return [joint(rng, p, massless=(j in par and rng.random() < 0.2))
            for j, p in enumerate(par, start=1)]


def serial(tree: list[dict]) -> list[dict]:
    """The same joints with no "parent" key (the default serial chain)."""
    return [{k: v for k, v in jt.items() if k != "parent"} for jt in tree]


def to_model(tree: list[dict], g=G) -> dict:
    """The chain_numpy model dict (inertia about the body origin, c = m d) of a tree."""
    bodies = []
    for jt in tree:
        m, d = jt["m"], jt["com"]
        bodies.append({"m": m, "c": m * d, "d": d,
                       "I": jt["I_com"] + m * (d @ d * np.eye(3) - np.outer(d, d))})
    model = {
        "joints": [{"kind": jt["type"], "axis": "xyz".index(jt["axis"]), "l": jt["l"],
                    "gamma": jt["gamma"], "k": jt["k"], "c": jt["c"], "q0": jt["q0"]}
                   for jt in tree],
        "bodies": bodies, "gravity": np.asarray(g, dtype=float),
        "named": list(range(1, len(tree) + 1)), "points": [], "p": np.zeros(0),
    }
    if any("parent" in jt for jt in tree):   # read directly: the references stay independent
        model["parent"] = [jt.get("parent", j - 1) for j, jt in enumerate(tree, start=1)]
    return model


def make_case(seed: int, topology: str):
    """(tree, model, q, qd, qdd, Q) with cond(A) < 1e6, resampling otherwise."""
    rng = np.random.default_rng([seed, TOPOLOGIES.index(topology)])
    while True:
        tree = make_tree(rng, topology)
        n = len(tree)
        q = rng.uniform(-np.pi, np.pi, n)
        if np.linalg.cond(fs.crba(tree, q)) < 1e6:
            qd, qdd, Q = rng.uniform(-2, 2, n), rng.uniform(-3, 3, n), rng.uniform(-5, 5, n)
            return tree, to_model(tree), q, qd, qdd, Q


CASES = [(s, t) for t in TOPOLOGIES for s in SEEDS]


@pytest.fixture(params=CASES, ids=[f"{t}-{s}" for s, t in CASES])
def case(request):
    return make_case(*request.param)


def rel(a, b) -> float:
    """Largest difference relative to the largest entry (at least 1)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def supports(tree, body: int) -> set[int]:
    return set(fs.ancestors(tree, body))


# ---------------------------------------------------------------------------
# the two references agree
# ---------------------------------------------------------------------------


def test_parent_helpers_and_errors() -> None:
    tree = [joint(np.random.default_rng(0), p) for p in TWO_ARM_TORSO]
    assert fs.parents(tree) == ref.parents(to_model(tree)) == TWO_ARM_TORSO
    assert fs.ancestors(tree, 7) == ref.ancestors(to_model(tree), 7) == [7, 6, 5, 1]
    assert fs.parents(serial(tree)) == ref.parents(to_model(serial(tree))) == list(range(7))
    bad = [dict(jt) for jt in tree]
    bad[2]["parent"] = 3
    with pytest.raises(ValueError):
        fs.crba(bad, np.zeros(7))
    with pytest.raises(ValueError):
        ref.mass_matrix(to_model(bad), np.zeros(7))


def test_kinematics_agree(case) -> None:
    tree, model, q, qd, _, _ = case
    kin = ref.kinematics(model, q, qd)
    fk = fs.forward_kinematics(tree, q)
    vel = fs.body_velocities(tree, q, qd)
    for j in range(1, len(tree) + 1):
        Jv, Jw = fs.point_jacobian(tree, q, j, ZERO3)
        assert rel(kin[j]["r"], fk[j][1]) < TOL
        assert rel(kin[j]["tau"], fk[j][0].T) < TOL
        assert rel(kin[j]["T"], Jv) < TOL
        assert rel(kin[j]["R"], Jw) < TOL
        assert rel(kin[j]["v"], vel[j - 1][0]) < TOL
        assert rel(kin[j]["omega"], vel[j - 1][1]) < TOL


def test_dynamics_agree(case) -> None:
    tree, model, q, qd, qdd, Q = case
    g = model["gravity"]
    pas = ref.passive(model, q, qd)
    A = fs.crba(tree, q)
    assert rel(ref.mass_matrix(model, q), A) < TOL
    assert rel(ref.inverse_dynamics(model, q, qd, qdd), fs.rnea(tree, q, qd, qdd, g) - pas) < TOL
    assert rel(ref.forward_dynamics(model, q, qd, Q), fs.aba(tree, q, qd, Q + pas, g)) < FD_TOL
    T, V = ref.energy(model, q, qd)
    assert rel(T, fs.kinetic_energy(tree, q, qd)) < TOL
    assert rel(V, fs.potential_energy(tree, q, g)) < TOL
    # CRBA columns are RNEA responses to unit accelerations (RBDA eq. 6.3)
    n = len(tree)
    cols = [fs.rnea(tree, q, np.zeros(n), e, ZERO3) for e in np.eye(n)]
    assert rel(np.column_stack(cols), A) < TOL


# ---------------------------------------------------------------------------
# structure of the tree
# ---------------------------------------------------------------------------


def test_mass_matrix_spd_with_tree_sparsity(case) -> None:
    tree, model, q, *_ = case
    n = len(tree)
    sup = [supports(tree, j) for j in range(n + 1)]
    coupled = 0
    for A in (fs.crba(tree, q), ref.mass_matrix(model, q)):
        assert rel(A, A.T) < 1e-15
        np.linalg.cholesky(A)
        for i in range(1, n + 1):
            for j in range(1, n + 1):
                if i in sup[j] or j in sup[i]:
                    coupled += A[i - 1, j - 1] != 0
                else:
                    assert A[i - 1, j - 1] == 0.0, (i, j)
    assert coupled > 2 * n   # the ancestor entries are really filled in
    kin = ref.kinematics(model, q)
    for j in range(n + 1):
        others = [i - 1 for i in range(1, n + 1) if i not in sup[j]]
        Jv, Jw = fs.point_jacobian(tree, q, j, np.ones(3))
        for J in (Jv, Jw, kin[j]["T"], kin[j]["R"]):
            assert not J[:, others].any()


def test_branches_off_a_fixed_base_are_independent_serial_chains() -> None:
    """A tree whose branches all start at the base: A is block diagonal, each block, and
    ID, FD, FK, the Jacobians and the energy, those of the branch taken as a serial chain.
    The branches' joints are interleaved in the numbering."""
    for seed in SEEDS:
        rng = np.random.default_rng(50 + seed)
        lengths = rng.integers(1, 5, size=3)
        owner = rng.permutation(np.repeat(np.arange(3), lengths))   # branch of each joint
        idx = [np.flatnonzero(owner == b) for b in range(3)]
        par = [0 if k == 0 else int(ix[k - 1]) + 1 for ix in idx for k in range(len(ix))]
        order = np.concatenate(idx)
        tree = [None] * len(owner)
        for pos, p in zip(order, par):
            tree[pos] = joint(rng, p)
        n = len(tree)
        q, qd, qdd, Q = (rng.uniform(-2, 2, n) for _ in range(4))
        model = to_model(tree)
        A_fs, A_ref = fs.crba(tree, q), ref.mass_matrix(model, q)
        blocks = np.zeros((n, n))
        ID, FD, FDr = np.zeros(n), np.zeros(n), np.zeros(n)
        for ix in idx:
            br = serial([tree[i] for i in ix])
            brm = to_model(br)
            blocks[np.ix_(ix, ix)] = fs.crba(br, q[ix])
            ID[ix] = ref.inverse_dynamics(brm, q[ix], qd[ix], qdd[ix])
            FD[ix] = fs.aba(br, q[ix], qd[ix], Q[ix], G)
            FDr[ix] = ref.forward_dynamics(brm, q[ix], qd[ix], Q[ix])
            fk_t, fk_b = fs.forward_kinematics(tree, q), fs.forward_kinematics(br, q[ix])
            for k, i in enumerate(ix):
                assert rel(fk_t[i + 1][0], fk_b[k + 1][0]) < TOL
                assert rel(fk_t[i + 1][1], fk_b[k + 1][1]) < TOL
                Jv = fs.point_jacobian(tree, q, i + 1, np.ones(3))[0]
                assert rel(Jv[:, ix], fs.point_jacobian(br, q[ix], k + 1, np.ones(3))[0]) < TOL
            T_b = fs.kinetic_energy(br, q[ix], qd[ix])
            assert rel(0.5 * qd[ix] @ A_fs[np.ix_(ix, ix)] @ qd[ix], T_b) < TOL
        assert rel(A_fs, blocks) < TOL and rel(A_ref, blocks) < TOL
        assert rel(ref.inverse_dynamics(model, q, qd, qdd), ID) < TOL
        assert rel(fs.rnea(tree, q, qd, qdd, G) - ref.passive(model, q, qd), ID) < TOL
        assert rel(fs.aba(tree, q, qd, Q, G), FD) < TOL
        assert rel(ref.forward_dynamics(model, q, qd, Q), FDr) < FD_TOL


def test_floating_base_translation_block_is_total_mass() -> None:
    """Quadruped: the base slides x, y, z move every body alike, so A[:3, :3] = M_total 1
    whatever the legs do; every body of every leg must be counted once."""
    for seed in SEEDS:
        tree, model, q, *_ = make_case(seed, "quadruped")
        M = sum(jt["m"] for jt in tree)
        for A in (fs.crba(tree, q), ref.mass_matrix(model, q)):
            assert rel(A[:3, :3], M * np.eye(3)) < TOL


def renumber(tree: list[dict], rng) -> tuple[list[dict], np.ndarray]:
    """Another regular numbering of the same tree (a random topological order).

    Returns the new tree and ``old``: new joint k (0-based) is old joint ``old[k]``.
    """
    par = fs.parents(tree)
    new_of = {0: 0}
    old: list[int] = []
    todo = list(range(1, len(tree) + 1))
    while todo:
        ready = [j for j in todo if par[j - 1] in new_of]
        j = ready[rng.integers(len(ready))]
        todo.remove(j)
        old.append(j - 1)
        new_of[j] = len(old)
    new = [dict(tree[i], parent=new_of[par[i]]) for i in old]
    return new, np.array(old)


def test_renumbered_tree_is_a_permutation(case) -> None:
    tree, model, q, qd, qdd, Q = case
    rng = np.random.default_rng(len(tree))
    new, old = renumber(tree, rng)
    assert sorted(old) == list(range(len(tree)))
    nm = to_model(new)
    qn, qdn, qddn, Qn = q[old], qd[old], qdd[old], Q[old]
    P = np.ix_(old, old)
    assert rel(fs.crba(new, qn), fs.crba(tree, q)[P]) < TOL
    assert rel(ref.mass_matrix(nm, qn), ref.mass_matrix(model, q)[P]) < TOL
    assert rel(fs.rnea(new, qn, qdn, qddn, G), fs.rnea(tree, q, qd, qdd, G)[old]) < TOL
    assert rel(ref.inverse_dynamics(nm, qn, qdn, qddn),
               ref.inverse_dynamics(model, q, qd, qdd)[old]) < TOL
    assert rel(fs.aba(new, qn, qdn, Qn, G), fs.aba(tree, q, qd, Q, G)[old]) < FD_TOL
    fk_new, fk = fs.forward_kinematics(new, qn), fs.forward_kinematics(tree, q)
    kin_new, kin = ref.kinematics(nm, qn), ref.kinematics(model, q)
    for k, i in enumerate(old):
        assert rel(fk_new[k + 1][1], fk[i + 1][1]) < TOL
        assert rel(kin_new[k + 1]["T"], kin[i + 1]["T"][:, old]) < TOL
    assert rel(sum(ref.energy(nm, qn, qdn)), sum(ref.energy(model, q, qd))) < TOL


def test_floating_base_with_massless_legs_prunes_to_a_serial_chain() -> None:
    """Quadruped with legs 1-3 massless: the rows of the floating base and leg 4 are those of
    the serial chain base + leg 4; the massless legs' rows of A and of ID are exactly 0.
    (Leg 4 is last, so a tree read as a serial chain would hang it from leg 3's foot.)"""
    for seed in SEEDS:
        tree, _, q, qd, qdd, _ = make_case(seed, "quadruped")
        for jt in tree[6:15]:
            jt.update(m=0.0, com=np.zeros(3), I_com=np.zeros((3, 3)), k=0.0, c=0.0)
        keep = list(range(6)) + [15, 16, 17]
        chain = serial([tree[i] for i in keep])
        model, cm = to_model(tree), to_model(chain)
        A = fs.crba(tree, q)
        assert rel(A[np.ix_(keep, keep)], fs.crba(chain, q[keep])) < TOL
        assert rel(ref.mass_matrix(model, q)[np.ix_(keep, keep)], fs.crba(chain, q[keep])) < TOL
        assert not A[6:15].any()
        for Qt in (fs.rnea(tree, q, qd, qdd, G) - ref.passive(model, q, qd),
                   ref.inverse_dynamics(model, q, qd, qdd)):
            assert rel(Qt[keep], ref.inverse_dynamics(cm, q[keep], qd[keep], qdd[keep])) < TOL
            assert not Qt[6:15].any()


# ---------------------------------------------------------------------------
# energy, power, inverse of forward dynamics
# ---------------------------------------------------------------------------


def test_kinetic_energy_is_the_quadratic_form(case) -> None:
    tree, model, q, qd, *_ = case
    for A, T in ((fs.crba(tree, q), fs.kinetic_energy(tree, q, qd)),
                 (ref.mass_matrix(model, q), ref.energy(model, q, qd)[0])):
        assert rel(0.5 * qd @ A @ qd, T) < TOL


def test_inverse_of_forward_dynamics(case) -> None:
    tree, model, q, qd, qdd, Q = case
    assert rel(fs.rnea(tree, q, qd, fs.aba(tree, q, qd, Q, G), G), Q) < FD_TOL
    qdd_ref = ref.forward_dynamics(model, q, qd, Q)
    assert rel(ref.inverse_dynamics(model, q, qd, qdd_ref), Q) < FD_TOL
    assert rel(fs.aba(tree, q, qd, fs.rnea(tree, q, qd, qdd, G), G), qdd) < FD_TOL


def _d5(f, h: float):
    """5-point central derivative of f at 0 (error O(h^4))."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def test_power_balance(case) -> None:
    """d(T + V)/dt = qd . (Q + passive) along the forward dynamics (gravity and springs on)."""
    tree, model, q, qd, _, Q = case
    qdd = ref.forward_dynamics(model, q, qd, Q)

    def E(s):
        return sum(ref.energy(model, q + s * qd, qd + s * qdd))

    P = qd @ (Q + ref.passive(model, q, qd))
    assert abs(_d5(E, 1e-3) - P) <= 1e-6 * max(1.0, abs(P), ref.energy(model, q, qd)[0])


def _rk4_energy_drift(f, energy, y0, dt: float, steps: int) -> float:
    y, E0, drift = y0, energy(y0), 0.0
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + dt / 2 * k1)
        k3 = f(y + dt / 2 * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        drift = max(drift, abs(energy(y) - E0))
    return drift / max(1.0, E0)


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_energy_conserved_without_gravity_springs_or_drive(topology) -> None:
    tree, model, q, qd, *_ = make_case(0, topology)
    n = len(tree)
    model["gravity"] = np.zeros(3)
    for jt in model["joints"]:
        jt["k"] = jt["c"] = 0.0
    zero = np.zeros(n)
    fd_fs = lambda y: np.concatenate([y[n:], fs.aba(tree, y[:n], y[n:], zero, ZERO3)])
    fd_ref = lambda y: np.concatenate([y[n:], ref.forward_dynamics(model, y[:n], y[n:], zero)])
    # RK4 over 0.1 s (the dense chain_numpy solve is slower: fewer, longer steps)
    for f, dt, steps in ((fd_fs, 2e-3, 50), (fd_ref, 5e-3, 20)):
        drift = _rk4_energy_drift(f, lambda y: fs.kinetic_energy(tree, y[:n], y[n:]),
                                  np.concatenate([q, qd]), dt, steps)
        assert drift < 1e-9, drift


# ---------------------------------------------------------------------------
# finite differences of the kinematics
# ---------------------------------------------------------------------------


def _vee(W):
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


def test_jacobians_match_finite_differences(case) -> None:
    tree, model, q, *_ = case
    n, h = len(tree), 1e-6
    rng = np.random.default_rng(n)
    E = np.eye(n)
    fk0 = fs.forward_kinematics(tree, q)
    fkp = [fs.forward_kinematics(tree, q + h * e) for e in E]
    fkm = [fs.forward_kinematics(tree, q - h * e) for e in E]
    kp = [ref.kinematics(model, q + h * e) for e in E]
    km = [ref.kinematics(model, q - h * e) for e in E]
    kin = ref.kinematics(model, q)
    for j in range(n + 1):
        pt = rng.uniform(-0.5, 0.5, 3)
        Jv, Jw = fs.point_jacobian(tree, q, j, pt)
        at = lambda fk: fk[j][1] + fk[j][0] @ pt
        Jv_fd = np.column_stack([(at(fkp[i]) - at(fkm[i])) / (2 * h) for i in range(n)])
        Jw_fd = np.column_stack([_vee((fkp[i][j][0] - fkm[i][j][0]) / (2 * h) @ fk0[j][0].T)
                                 for i in range(n)])
        T_fd = np.column_stack([(kp[i][j]["r"] - km[i][j]["r"]) / (2 * h) for i in range(n)])
        dtau = [(kp[i][j]["tau"] - km[i][j]["tau"]) / (2 * h) for i in range(n)]
        R_fd = np.column_stack([_vee(d.T @ kin[j]["tau"]) for d in dtau])  # d(tau^T)/dq tau
        for J, J_fd in ((Jv, Jv_fd), (Jw, Jw_fd), (kin[j]["T"], T_fd), (kin[j]["R"], R_fd)):
            assert np.abs(J - J_fd).max() < 1e-7 * max(1.0, np.abs(J).max())


def test_accelerations_w_eps_are_time_derivatives(case) -> None:
    """chain_numpy's w_j, eps_j (qdd = 0) equal d/ds of v_j, omega_j along (q + s qd, qd),
    and featherstone's body velocities give the same derivatives."""
    tree, model, q, qd, *_ = case
    kin = ref.kinematics(model, q, qd)
    n = len(tree)
    d_ref = _d5(lambda s: np.array([[k["v"], k["omega"]]
                                    for k in ref.kinematics(model, q + s * qd, qd)]), 1e-3)
    d_fs = _d5(lambda s: np.array(fs.body_velocities(tree, q + s * qd, qd)), 1e-3)
    for j in range(1, n + 1):
        scale = max(1.0, np.abs(kin[j]["w"]).max(), np.abs(kin[j]["eps"]).max())
        for d in (d_ref[j], d_fs[j - 1]):
            assert np.abs(d[0] - kin[j]["w"]).max() < 1e-7 * scale
            assert np.abs(d[1] - kin[j]["eps"]).max() < 1e-7 * scale
