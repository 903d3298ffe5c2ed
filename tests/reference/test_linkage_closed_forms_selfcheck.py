"""Self-checks of the closed-form linkage relations (linkage_closed_forms.py).

No generator is used. Part 1 checks every closed form against a brute-force loop closure
written here: 4x4 homogeneous transforms around the loop, unknown joint angles found by scipy
(least squares on all the entries of the loop matrix, from perturbed or random starts), and
derivatives by complex-step differentiation of the loop matrix (exact to rounding), on many
random inputs, to 1e-12. Part 2 reads the bundled linkage specs
(generator/mechanisms/, later generator/mechanisms/) with a small numpy reading
of docs/linkage.md (spanning tree, joint motions, cut-joint rows) and checks the structure each
spec is meant to have (cut joints, tree coordinates, rank, mobility) and the mapping of the
closed forms onto the spec's joint coordinates.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import least_squares

from .linkage_closed_forms import (
    bennett_angles,
    bennett_K,
    bennett_theta2,
    bennett_velocity_ratio,
    fourbar_coupler_angle,
    fourbar_output_angle,
    fourbar_velocity_ratios,
    hooke_output_angle,
    hooke_velocity_ratio,
    parallelogram_gravity_moment,
    parallelogram_inertia,
    parallelogram_multiplier_null_vector,
    parallelogram_theta_ddot,
    swash_journal_angle,
    swash_output_angle,
    swash_velocity_ratio,
)

TOL = 1e-12


def wrap(x):
    return np.angle(np.exp(1j * np.asarray(x)))


# ----------------------------------------------------------------- homogeneous transforms


def _skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def rot3(axis, q):
    """Rotation by q about the unit vector axis (Rodrigues; works with complex q)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    K = _skew(a)
    return np.eye(3) + np.sin(q) * K + (1 - np.cos(q)) * (K @ K)


def H_rot(axis, q, point=(0.0, 0.0, 0.0)):
    """4x4 rotation by q about the line through point along axis."""
    R = rot3(axis, q)
    p = np.asarray(point, float)
    H = np.eye(4, dtype=R.dtype)
    H[:3, :3] = R
    H[:3, 3] = p - R @ p
    return H


def H_tr(v):
    H = np.eye(4)
    H[:3, 3] = v
    return H


def dh(theta, a, alpha):
    """Standard Denavit-Hartenberg link transform Rz(theta) Tx(a) Rx(alpha)."""
    return H_rot([0, 0, 1], theta) @ H_tr([a, 0, 0]) @ H_rot([1, 0, 0], alpha)


def loop_residual(H):
    """All 12 informative entries of H - I (rotation and translation)."""
    return (H - np.eye(4))[:3, :].ravel()


def cjac(fun, x, h=1e-30):
    """Complex-step Jacobian of fun at x (exact to rounding for analytic fun)."""
    x = np.asarray(x, float)
    cols = []
    for i in range(x.size):
        xc = x.astype(complex)
        xc[i] += 1j * h
        cols.append(np.imag(fun(xc)) / h)
    return np.array(cols).T


def close_loop(fun, x0):
    """Least-squares loop closure (scipy), polished by two Gauss-Newton steps."""
    sol = least_squares(lambda x: fun(x), x0, jac=lambda x: cjac(fun, x),
                        xtol=1e-15, ftol=1e-15, gtol=1e-15, method="lm")
    x = sol.x
    for _ in range(2):
        x = x + np.linalg.lstsq(cjac(fun, x), -fun(x), rcond=None)[0]
    return x, np.max(np.abs(fun(x)))


def close_by_continuation(H, phi, n_dep=3, steps=8):
    """Close the loop H([phi, *y]) = 1 by continuation from the assembled reference y = 0
    (phi stepped from 0; no closed form used): (y, residual)."""
    y, res = np.zeros(n_dep), np.inf
    for s in np.linspace(0.0, 1.0, steps + 1)[1:]:
        y, res = close_loop(lambda yy, s=s: loop_residual(H([s * phi, *yy])), y)
    return y, res


def implicit_rates(fun, x_dep, n_in):
    """d x_dep / d x_in for fun([x_in, x_dep]) = 0 (least squares: the rows may be redundant)."""
    J = cjac(fun, x_dep)
    return J[:, :n_in], J[:, n_in:]


# =============================================================== Part 1: closed forms vs brute force
# ------------------------------------------------------------------------ four-bar


def fourbar_loop(a, b, c, d):
    """Loop A -> B -> C -> D -> A as a product of planar 4x4 transforms; x = (t2, t3, t4)."""
    z = [0, 0, 1]

    def H(x):
        t2, t3, t4 = x
        return (H_rot(z, t2) @ H_tr([a, 0, 0]) @ H_rot(z, t3 - t2) @ H_tr([b, 0, 0])
                @ H_rot(z, t4 + np.pi - t3) @ H_tr([c, 0, 0]) @ H_rot(z, -t4) @ H_tr([d, 0, 0])
                @ H_rot(z, np.pi))
    return H


def _fourbar_samples(rng, n):
    out = []
    while len(out) < n:
        a, b, c, d = rng.uniform(0.2, 2.0, 4)
        t2 = rng.uniform(-np.pi, np.pi)
        for branch in (+1, -1):
            try:
                t4 = fourbar_output_angle(t2, a, b, c, d, branch)
            except ValueError:
                break
            t3 = fourbar_coupler_angle(t2, t4, a, b, c, d)
            if abs(np.sin(t3 - t4)) < 0.1:      # near a dead point: ill-conditioned
                continue
            out.append((a, b, c, d, t2, t3, t4, branch))
    return out


def test_fourbar_freudenstein_both_branches():
    rng = np.random.default_rng(11)
    for a, b, c, d, t2, t3, t4, branch in _fourbar_samples(rng, 300):
        H = fourbar_loop(a, b, c, d)
        assert np.max(np.abs(loop_residual(H([t2, t3, t4])))) < TOL
        fun = lambda y: loop_residual(H([t2, *y]))                      # noqa: E731
        y, res = close_loop(fun, np.array([t3, t4]) + rng.uniform(-0.15, 0.15, 2))
        assert res < TOL
        # the root found is one of the two closed-form assembly modes (usually the nearest)
        modes = [(fourbar_coupler_angle(t2, t4m, a, b, c, d), t4m)
                 for t4m in (fourbar_output_angle(t2, a, b, c, d, br) for br in (+1, -1))]
        assert min(np.max(np.abs(wrap(y - np.array(m)))) for m in modes) < TOL
        # the branch is the side of C with respect to the directed line B -> D
        B = a * np.array([np.cos(t2), np.sin(t2)])
        C = np.array([d + c * np.cos(t4), c * np.sin(t4)])
        D = np.array([d, 0.0])
        e, f = D - B, C - B
        assert np.sign(e[0] * f[1] - e[1] * f[0]) == branch


def test_fourbar_velocity_ratios():
    rng = np.random.default_rng(12)
    for a, b, c, d, t2, t3, t4, _ in _fourbar_samples(rng, 300):
        H = fourbar_loop(a, b, c, d)
        J = cjac(lambda x: loop_residual(H(x)), [t2, t3, t4])
        rates = np.linalg.lstsq(J[:, 1:], -J[:, 0], rcond=None)[0]
        w3, w4 = fourbar_velocity_ratios(t2, t3, t4, a, b, c)
        assert np.allclose(rates, [w3, w4], rtol=TOL, atol=TOL)


# ------------------------------------------------------------------------ Bennett


def bennett_loop(alpha, beta, k):
    a, b = k * np.sin(alpha), k * np.sin(beta)
    return lambda t: dh(t[0], a, alpha) @ dh(t[1], b, beta) @ dh(t[2], a, alpha) @ dh(t[3], b, beta)


def _bennett_params(rng):
    while True:
        alpha, beta = rng.uniform(0.15, np.pi - 0.15, 2)
        if abs(beta - alpha) > 0.15:
            return alpha, beta, rng.uniform(0.5, 2.0)


def test_bennett_closure_relation():
    rng = np.random.default_rng(21)
    for _ in range(200):
        alpha, beta, k = _bennett_params(rng)
        t1 = rng.uniform(-3.0, 3.0)
        H = bennett_loop(alpha, beta, k)
        th = bennett_angles(t1, alpha, beta)
        assert np.max(np.abs(loop_residual(H(th)))) < TOL
        assert abs(np.tan(t1 / 2) * np.tan(th[1] / 2) - bennett_K(alpha, beta)) \
            < TOL * (1 + abs(np.tan(th[1] / 2)) * (1 + abs(np.tan(t1 / 2))))
        fun = lambda y: loop_residual(H([t1, *y]))                      # noqa: E731
        y, res = close_loop(fun, th[1:] + rng.uniform(-0.1, 0.1, 3))
        assert res < TOL
        assert np.max(np.abs(wrap(y - th[1:]))) < 1e-11
        # the other root of the quadratic in tan(t1/2) tan(t2/2) does not close the loop
        w_other = np.cos((alpha + beta) / 2) / np.cos((alpha - beta) / 2)
        t2o = 2 * np.arctan2(w_other * np.cos(t1 / 2), np.sin(t1 / 2))
        assert np.max(np.abs(loop_residual(H([t1, t2o, -t1, -t2o])))) > 1e-6


def test_bennett_random_starts_find_only_the_bennett_branch():
    rng = np.random.default_rng(22)
    found = 0
    for _ in range(40):
        alpha, beta, k = _bennett_params(rng)
        t1 = rng.uniform(-3.0, 3.0)
        H = bennett_loop(alpha, beta, k)
        fun = lambda y: loop_residual(H([t1, *y]))                      # noqa: E731
        y, res = close_loop(fun, rng.uniform(-np.pi, np.pi, 3))
        if res < TOL:
            found += 1
            assert np.max(np.abs(wrap(y - bennett_angles(t1, alpha, beta)[1:]))) < 1e-10
    assert found >= 20


def test_bennett_velocity_ratio():
    rng = np.random.default_rng(23)
    for _ in range(200):
        alpha, beta, k = _bennett_params(rng)
        t1 = rng.uniform(-3.0, 3.0)
        H = bennett_loop(alpha, beta, k)
        J = cjac(lambda t: loop_residual(H(t)), bennett_angles(t1, alpha, beta))
        rates = np.linalg.lstsq(J[:, 1:], -J[:, 0], rcond=None)[0]      # 12 rows, rank 3
        r = bennett_velocity_ratio(t1, alpha, beta)
        assert np.allclose(rates, [r, -1.0, -r], rtol=TOL, atol=TOL)
        if abs(np.sin(t1)) > 0.1:
            assert abs(r + np.sin(bennett_theta2(t1, alpha, beta)) / np.sin(t1)) < TOL


# ------------------------------------------------------------------------ Hooke's joint


def hooke_loop(beta):
    """Input shaft about x (bearing at (-0.4, 0, 0)), cross pins y (input) then z (output),
    output shaft about e2 (bearing at 0.4 e2); x = (phi1, u1, u2, phi2)."""
    e2 = np.array([np.cos(beta), np.sin(beta), 0.0])

    def H(x):
        phi1, u1, u2, phi2 = x
        via_cross = H_rot([1, 0, 0], phi1, [-0.4, 0, 0]) @ H_rot([0, 1, 0], u1) @ H_rot([0, 0, 1], u2)
        via_bearing = H_rot(e2, phi2, 0.4 * e2)
        return _inv_h(via_bearing) @ via_cross
    return H


def _inv_h(H):
    R, p = H[:3, :3], H[:3, 3]
    out = np.eye(4, dtype=H.dtype)
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ p
    return out


def test_hooke_output_angle_and_ratio():
    rng = np.random.default_rng(31)
    for _ in range(120):
        beta = rng.uniform(0.0, 1.2)
        phi1 = rng.uniform(-np.pi, np.pi)
        H = hooke_loop(beta)
        y, res = close_by_continuation(H, phi1)
        assert res < TOL
        assert abs(wrap(y[2] - hooke_output_angle(phi1, beta))) < TOL
        J = cjac(lambda x: loop_residual(H(x)), [phi1, *y])
        rates = np.linalg.lstsq(J[:, 1:], -J[:, 0], rcond=None)[0]
        assert abs(rates[2] - hooke_velocity_ratio(phi1, beta)) < TOL


# ------------------------------------------------------------------------ swash plate


def swash_loop(alpha):
    """Input about z, journal j0 (in the shaft), trunnion y (plate -> yoke), yoke about x;
    x = (phi, theta_j, theta_t, psi)."""
    j0 = np.array([np.sin(alpha), 0.0, np.cos(alpha)])

    def H(x):
        phi, tj, tt, psi = x
        via_plate = H_rot([0, 0, 1], phi, [0, 0, -0.3]) @ H_rot(j0, tj) @ H_rot([0, 1, 0], tt)
        return _inv_h(H_rot([1, 0, 0], psi, [0.2, 0, 0])) @ via_plate
    return H


def test_swash_plate_relations():
    rng = np.random.default_rng(41)
    for _ in range(120):
        alpha = rng.uniform(0.02, 1.2)
        phi = rng.uniform(-np.pi, np.pi)
        H = swash_loop(alpha)
        y, res = close_by_continuation(H, phi)
        assert res < TOL
        assert abs(wrap(y[2] - swash_output_angle(phi, alpha))) < TOL
        assert abs(wrap(y[0] - swash_journal_angle(phi, alpha))) < TOL
        assert abs(np.tan(y[2]) + np.tan(alpha) * np.sin(phi)) < TOL
        J = cjac(lambda x: loop_residual(H(x)), [phi, *y])
        rates = np.linalg.lstsq(J[:, 1:], -J[:, 0], rcond=None)[0]
        assert abs(rates[2] - swash_velocity_ratio(phi, alpha)) < TOL


# ------------------------------------------------------------------------ parallel cranks (004)


class ParallelCranks:
    """n cranks (pivots at x = 0, 1, ..., n-1 times the spacing l_s), coupler on their tips.
    Tree coordinates q = (theta_0 .. theta_{n-1}, b0): crank angles from +x and the coupler's
    rotation relative to crank 0; cut joints at crank tips 1..n-1 (rows coupler - crank tip)."""

    def __init__(self, n=3, l=1.0, m=1.0, M=1.0, spacing=1.0, g=9.81):
        self.n, self.l, self.m, self.M, self.s, self.g = n, l, m, M, spacing, g

    def frames(self, q):
        z = [0, 0, 1]
        cr = [H_rot(z, q[i], [i * self.s, 0, 0]) @ H_tr([i * self.s, 0, 0]) for i in range(self.n)]
        cp = cr[0] @ H_tr([self.l, 0, 0]) @ H_rot(z, q[self.n])     # coupler frame at B0
        return cr, cp

    def residual(self, q):
        cr, cp = self.frames(q)
        rows = []
        for i in range(1, self.n):
            tip = cr[i] @ np.array([self.l, 0, 0, 1.0])
            # coupler pivot i sits at i*spacing along the coupler's own axis, which is the crank
            # frame x axis rotated by b0 + theta0: the reference coupler is horizontal when
            # b0 = -theta0
            pin = cp @ np.array([i * self.s, 0, 0, 1.0])
            rows.append((pin - tip)[:3])
        return np.concatenate(rows)

    def body_points(self, q):
        """(mass, com, I_zz about the com, angle) of every body as functions of q."""
        cr, cp = self.frames(q)
        out = [(self.m, (cr[i] @ [self.l / 2, 0, 0, 1.0])[:3], self.m * self.l ** 2 / 12, q[i])
               for i in range(self.n)]
        L = (self.n - 1) * self.s
        out.append((self.M, (cp @ [L / 2, 0, 0, 1.0])[:3], self.M * L ** 2 / 12, q[0] + q[self.n]))
        return out

    def assembled(self, theta):
        return np.r_[np.full(self.n, theta), -theta]

    def reduced(self, theta):
        """J = H^T M H and Q = H^T Q_gravity on the independent theta_0 (brute force)."""
        q = self.assembled(theta)
        G = cjac(self.residual, q)
        Hm = np.zeros(self.n + 1)
        Hm[0] = 1.0
        Hm[1:] = np.linalg.lstsq(G[:, 1:], -G[:, 0], rcond=None)[0]
        nb = self.n + 1
        Jc = [cjac(lambda x, k=k: self.body_points(x)[k][1], q) for k in range(nb)]
        Jw = [cjac(lambda x, k=k: np.atleast_1d(self.body_points(x)[k][3]), q) for k in range(nb)]
        Mq = sum(mass * Jc[k].T @ Jc[k] + Izz * Jw[k].T @ Jw[k]
                 for k, (mass, _, Izz, _) in enumerate(self.body_points(q)))
        Qg = sum(mass * Jc[k].T @ np.array([0, -self.g, 0])
                 for k, (mass, _, _, _) in enumerate(self.body_points(q)))
        return Hm @ Mq @ Hm, Hm @ Qg, G, Hm


def _regular_thetas(rng, n):
    """Crank angles away from the ground line (sin theta = 0: all links in line, rank drops)."""
    th = rng.uniform(-np.pi, np.pi, 4 * n)
    return th[np.abs(np.sin(th)) > 0.2][:n]


def test_parallelogram_kinematics_closure():
    rng = np.random.default_rng(51)
    mech = ParallelCranks()
    for theta in _regular_thetas(rng, 100):
        q0 = mech.assembled(theta)
        assert np.max(np.abs(mech.residual(q0))) < TOL
        fun = lambda y: mech.residual(np.r_[theta, y])                  # noqa: E731
        y, res = close_loop(fun, q0[1:] + rng.uniform(-0.1, 0.1, 3))
        assert res < TOL
        assert np.max(np.abs(wrap(y - q0[1:]))) < TOL                  # equal cranks, coupler translates


@pytest.mark.parametrize("n,l,m,M,spacing", [(3, 1.0, 1.0, 1.0, 1.0), (3, 0.7, 2.0, 5.0, 0.4),
                                             (4, 1.3, 0.5, 2.0, 0.9), (2, 1.0, 1.0, 3.0, 2.0)])
def test_parallelogram_equivalent_pendulum(n, l, m, M, spacing):
    rng = np.random.default_rng(52)
    mech = ParallelCranks(n=n, l=l, m=m, M=M, spacing=spacing)
    for theta in _regular_thetas(rng, 25):
        J, Q, _, _ = mech.reduced(theta)
        assert abs(J - parallelogram_inertia(l, m, M, n)) < TOL * J       # constant: no velocity terms
        assert abs(Q - parallelogram_gravity_moment(theta, 9.81, l, m, M, n)) < TOL * (1 + abs(Q))
        assert abs(Q / J - parallelogram_theta_ddot(theta, 9.81, l, m, M, n)) < TOL * (1 + abs(Q / J))


def test_parallelogram_redundant_row_and_multiplier_null_space():
    rng = np.random.default_rng(53)
    mech = ParallelCranks()
    for theta in _regular_thetas(rng, 50):
        _, _, G, Hm = mech.reduced(theta)
        s = np.linalg.svd(G, compute_uv=False)
        assert (s > 1e-9 * s[0]).sum() == 3                                 # 4 nonzero rows, rank 3
        w = parallelogram_multiplier_null_vector(theta)
        assert np.max(np.abs(w @ G)) < TOL
        assert np.max(np.abs(G @ Hm)) < TOL
        # w as crank axial forces: (2u at tip 1, -u at tip 2) with crank 0 balancing the coupler
        # gives s (1, -2, 1) up to the sign convention of the rows: zero net force and moment
        u = w[:3] / 2.0
        forces = [-(w[:3] + w[3:]), w[:3], w[3:]]           # on the coupler at B0, B1, B2
        assert np.allclose(sum(forces), 0.0, atol=TOL)
        assert abs(sum(np.cross([i * 1.0, 0, 0], f)[2] for i, f in enumerate(forces))) < TOL
        assert np.allclose([f @ u for f in forces], [-1.0, 2.0, -1.0], atol=TOL)


# =============================================================== Part 2: the bundled specs

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIRS = [ROOT / "generator" / "mechanisms"]
CUT_PREFERENCE = {"S": 0, "U": 1, "C": 2, "P": 3, "R": 4, "fixed": 5, "H": 6}


def _perp_basis(z):
    z = np.asarray(z, float) / np.linalg.norm(z)
    h = np.eye(3)[np.argmin(np.abs(z))]
    x = np.cross(h, z)
    x /= np.linalg.norm(x)
    return x, np.cross(z, x), z


class LinkageSpec:
    """A numpy reading of docs/linkage.md, independent of the generator.

    Body poses are rigid displacements from the reference pose (x = R x_ref + t). A tree joint
    moves its second body relative to its first: R about the axis through the point by
    q - q_ref; P along the axis by q - q_ref; U about axis then about the turned axis2; S about
    x, turned y, twice-turned z (in the first body's reference axes). The spanning tree is grown
    breadth first from ground, preferring R, P, C, U, S (in that order) as tree joints; joints
    with cut = true are never in the tree. Cut-joint rows as in the table of docs/linkage.md.
    """

    def __init__(self, name):
        path = next((d / f"{name}.toml" for d in SPEC_DIRS if (d / f"{name}.toml").exists()), None)
        if path is None:
            pytest.skip(f"{name}.toml not found")
        with open(path, "rb") as f:
            self.t = tomllib.load(f)
        self.g = np.array(self.t["mechanism"].get("gravity", [0, 0, 0]), float)
        self.bodies = {b["name"]: b for b in self.t["bodies"]}
        self.joints = self.t["joints"]
        self.points = {p["name"]: p for p in self.t.get("points", [])}
        self.independent = self.t.get("closure", {}).get("independent", [])
        self._tree()

    def _tree(self):
        visited, layer, tree = {"ground"}, ["ground"], []
        free = [j for j in self.joints if not j.get("cut", False)]
        while layer:
            cand = {}
            for j in free:
                if any(j is t for t in tree):
                    continue
                b1, b2 = j["bodies"]
                for par, ch in ((b1, b2), (b2, b1)):
                    if par in layer and ch not in visited:
                        key = (-CUT_PREFERENCE[j["type"]], self.joints.index(j))
                        if ch not in cand or key < cand[ch][0]:
                            cand[ch] = (key, j, par)
            layer = []
            for ch, (key, j, par) in sorted(cand.items(), key=lambda kv: kv[1][0]):
                visited.add(ch)
                tree.append(j)
                j["_parent"] = par
                layer.append(ch)
        assert visited == {"ground", *self.bodies}
        self.tree = tree
        self.cuts = [j for j in self.joints if not any(j is t for t in tree)]
        self.coords = []
        for j in tree:
            n = j["name"]
            names = {"R": [n], "P": [n], "C": [n + "_s", n + "_r"], "U": [n + "_1", n + "_2"],
                     "S": [n + "_x", n + "_y", n + "_z"], "fixed": []}[j["type"]]
            j["_idx"] = list(range(len(self.coords), len(self.coords) + len(names)))
            self.coords += names
        self.n = len(self.coords)
        self.q_ref = np.zeros(self.n)
        for j in tree:
            if j["type"] in ("R", "P"):
                self.q_ref[j["_idx"][0]] = j.get("q_ref", 0.0)

    def idx(self, name):
        return self.coords.index(name)

    def _motion(self, j, q):
        ty, p = j["type"], np.array(j["point"], float)
        qi = [q[i] for i in j["_idx"]]
        ax = np.array(j.get("axis", [0, 0, 1]), float)
        ax = ax / np.linalg.norm(ax)
        s = 0.0
        if ty == "R":
            R = rot3(ax, qi[0] - j.get("q_ref", 0.0))
        elif ty == "P":
            R, s = np.eye(3, dtype=np.asarray(q).dtype), qi[0] - j.get("q_ref", 0.0)
        elif ty == "C":
            R, s = rot3(ax, qi[1]), qi[0]
        elif ty == "U":
            R = rot3(ax, qi[0]) @ rot3(j["axis2"], qi[1])
        elif ty == "S":
            R = rot3([1, 0, 0], qi[0]) @ rot3([0, 1, 0], qi[1]) @ rot3([0, 0, 1], qi[2])
        else:
            R = np.eye(3)
        return R, p - R @ p + s * ax

    def poses(self, q):
        P = {"ground": (np.eye(3), np.zeros(3))}
        for j in self.tree:
            R, t = self._motion(j, q)
            b1, b2 = j["bodies"]
            if j["_parent"] == b1:
                R1, t1 = P[b1]
                P[b2] = (R1 @ R, R1 @ t + t1)
            else:
                R2, t2 = P[b2]
                P[b1] = (R2 @ R.T, R2 @ (-R.T @ t) + t2)
        return P

    @staticmethod
    def at(P, body, x):
        R, t = P[body]
        return R @ np.asarray(x, float) + t

    def residual(self, q):
        P, rows = self.poses(q), []
        for j in self.cuts:
            b1, b2 = j["bodies"]
            R1, R2 = P[b1][0], P[b2][0]
            o1, o2 = self.at(P, b1, j["point"]), self.at(P, b2, j["point"])
            ty = j["type"]
            if ty == "S":
                rows += list(o2 - o1)
            elif ty == "U":
                z1 = R1 @ np.array(j["axis"], float)
                z2 = R2 @ np.array(j["axis2"], float)
                rows += list(o2 - o1) + [z1 @ z2]
            else:
                x, y, z = _perp_basis(j["axis"])
                x1, y1, z2, y2 = R1 @ x, R1 @ y, R2 @ z, R2 @ y
                if ty == "R":
                    rows += list(o2 - o1) + [x1 @ z2, y1 @ z2]
                else:
                    d = o2 - o1
                    rows += [d @ x1, d @ y1, x1 @ z2, y1 @ z2] + ([x1 @ y2] if ty == "P" else [])
        return np.array(rows)

    def G(self, q):
        return cjac(self.residual, q)

    def rank(self, q, tol=1e-9):
        s = np.linalg.svd(self.G(q), compute_uv=False)
        return int((s > tol * s[0]).sum())

    def solve(self, q0, iters=50):
        """Dependent coordinates for the independent ones in q0 (Gauss-Newton, least squares)."""
        q = np.array(q0, float)
        dep = [i for i in range(self.n) if self.coords[i] not in self.independent]
        for _ in range(iters):
            r = self.residual(q)
            if np.max(np.abs(r)) < 1e-15:
                break
            q[dep] += np.linalg.lstsq(self.G(q)[:, dep], -r, rcond=None)[0]
        return q, np.max(np.abs(self.residual(q)))

    def walk(self, q, target, step=0.05):
        """Continuation of the independent coordinates from q to target (dict name -> value)."""
        q = np.array(q, float)
        start = {k: q[self.idx(k)] for k in target}
        nsteps = max(1, int(np.ceil(max(abs(target[k] - start[k]) for k in target) / step)))
        for s in np.linspace(0, 1, nsteps + 1)[1:]:
            for k in target:
                q[self.idx(k)] = start[k] + s * (target[k] - start[k])
            q, res = self.solve(q)
            assert res < TOL
        return q

    def H(self, q):
        """dq/dq_independent on the constraint manifold."""
        G = self.G(q)
        ii = [self.idx(k) for k in self.independent]
        dep = [i for i in range(self.n) if i not in ii]
        Hm = np.zeros((self.n, len(ii)))
        for k, i in enumerate(ii):
            Hm[i, k] = 1.0
            Hm[dep, k] = np.linalg.lstsq(G[:, dep], -G[:, i], rcond=None)[0]
        return Hm


# name: (tree coordinates, cut joints, cut rows, rank at the reference, mobility)
EXPECTED = {
    "fourbar": ({"crank", "B", "rocker"}, {"C"}, 5, 2, 1),
    "double_fourbar": ({"A0", "A1", "A2", "B0", "B1_right"}, {"B1_left", "B2"}, 10, 4, 1),
    "parallelogram3": ({"A0", "A1", "A2", "B0"}, {"B1", "B2"}, 10, 3, 1),
    "bricard": ({"J1", "J2", "J3", "J4", "J5"}, {"J6"}, 5, 4, 1),
    "bennett": ({"J1", "J2", "J4"}, {"J3"}, 5, 2, 1),
    "hooke_shafts": ({"input", "output"}, {"cross"}, 4, 1, 1),
    "swash_plate": ({"input", "journal", "output"}, {"trunnion"}, 5, 2, 1),
    "double_wishbone": ({"upper_arm", "lower_arm", "rack", "lower_ball_x", "lower_ball_y",
                         "lower_ball_z", "tie_rod_inner_1", "tie_rod_inner_2"},
                        {"upper_ball", "tie_rod_outer"}, 6, 6, 2),
    "landing_gear": ({"trunnion", "brace_upper", "knee", "actuator_base_1", "actuator_base_2",
                      "actuator"},
                     {"brace_lower", "rod_end"}, 7, 5, 1),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_spec_structure_and_mobility(name):
    spec = LinkageSpec(name)
    coords, cuts, rows, rank, f = EXPECTED[name]
    assert set(spec.coords) == coords
    assert {j["name"] for j in spec.cuts} == cuts
    r = spec.residual(spec.q_ref)
    assert r.size == rows and np.max(np.abs(r)) < 1e-15
    assert spec.rank(spec.q_ref) == rank and spec.n - rank == f == len(spec.independent)
    # the reference is a regular pose: the dependent block has full column rank ...
    dep = [i for i in range(spec.n) if spec.coords[i] not in spec.independent]
    assert np.linalg.matrix_rank(spec.G(spec.q_ref)[:, dep], tol=1e-9) == len(dep)
    # ... and the mechanism moves (exact geometry: Bennett, Bricard, parallel cranks)
    q = spec.walk(spec.q_ref, {k: spec.q_ref[spec.idx(k)] - 0.05 for k in spec.independent}, step=0.01)
    assert spec.rank(q) == rank
    for b in spec.bodies.values():       # a physical inertia tensor
        I = b["inertia"]
        T = np.array([[I[0], I[3], I[4]], [I[3], I[1], I[5]], [I[4], I[5], I[2]]])
        ev = np.linalg.eigvalsh(T)
        assert b["mass"] > 0 and ev.min() >= -1e-12 and ev.sum() - 2 * ev.max() >= -1e-12


def test_spec_fourbar_is_freudenstein():
    spec = LinkageSpec("fourbar")
    a, b, c, d = 0.1, 0.35, 0.3, 0.4
    q = spec.q_ref
    for target in np.linspace(np.pi / 3, np.pi / 3 + 2 * np.pi, 13)[1:]:    # a full crank turn
        q = spec.walk(q, {"crank": target})
        t2, t4 = q[spec.idx("crank")], q[spec.idx("rocker")]
        assert abs(wrap(t4 - fourbar_output_angle(t2, a, b, c, d, +1))) < TOL
        t3 = fourbar_coupler_angle(t2, t4, a, b, c, d)
        assert abs(wrap(q[spec.idx("B")] - (t3 - t2))) < TOL
        rates = spec.H(q)[:, 0]
        w3, w4 = fourbar_velocity_ratios(t2, t3, t4, a, b, c)
        assert abs(rates[spec.idx("rocker")] - w4) < TOL and abs(rates[spec.idx("B")] - (w3 - 1)) < TOL


def test_spec_bennett_is_bennett():
    spec = LinkageSpec("bennett")
    alpha, beta = 0.7, 1.9
    q = spec.q_ref
    for target in [0.5, -0.5, -1.5, -2.5, 1.0, 2.0, 2.9]:
        q = spec.walk(q, {"J1": target})
        t = bennett_angles(target, alpha, beta)
        assert abs(wrap(q[spec.idx("J2")] - t[1])) < TOL
        assert abs(wrap(q[spec.idx("J4")] - t[3])) < TOL
        rates = spec.H(q)[:, 0]
        r = bennett_velocity_ratio(target, alpha, beta)
        assert abs(rates[spec.idx("J2")] - r) < TOL and abs(rates[spec.idx("J4")] + r) < TOL


def test_spec_hooke_shafts_is_hooke():
    spec = LinkageSpec("hooke_shafts")
    beta = np.pi / 6
    q = spec.q_ref
    for target in np.linspace(0, 2 * np.pi, 13)[1:]:
        q = spec.walk(q, {"input": target})
        assert abs(wrap(q[spec.idx("output")] - hooke_output_angle(target, beta))) < TOL
        assert abs(spec.H(q)[spec.idx("output"), 0] - hooke_velocity_ratio(target, beta)) < TOL


def test_spec_swash_plate_relations():
    spec = LinkageSpec("swash_plate")
    alpha = np.pi / 12
    q = spec.q_ref
    for target in np.linspace(0, 2 * np.pi, 13)[1:]:
        q = spec.walk(q, {"input": target})
        assert abs(wrap(q[spec.idx("output")] - swash_output_angle(target, alpha))) < TOL
        assert abs(wrap(q[spec.idx("journal")] - swash_journal_angle(target, alpha))) < TOL
        assert abs(spec.H(q)[spec.idx("output"), 0] - swash_velocity_ratio(target, alpha)) < TOL


def test_spec_parallelogram3_is_one_pendulum():
    spec = LinkageSpec("parallelogram3")
    q = spec.q_ref
    for target in [-0.3, -1.2, -np.pi / 2, -2.8]:     # within (-pi, 0): no singular pose
        q = spec.walk(q, {"A0": target})
        assert np.allclose(q[[spec.idx(k) for k in ("A0", "A1", "A2")]], target, atol=TOL)
        assert abs(q[spec.idx("B0")] + target) < TOL
        # the rows of B1 then B2 (3 each): w is a left null vector of the spec's Jacobian
        w = parallelogram_multiplier_null_vector(target)
        assert [j["name"] for j in spec.cuts] == ["B1", "B2"]
        G = spec.G(q)
        rows = np.r_[G[0:3], G[5:8]]                    # the position rows of the two cut R joints
        assert np.max(np.abs(w @ rows)) < TOL and np.max(np.abs(G[[3, 4, 8, 9]])) < TOL
        # reduced inertia and gravity from the spec's own bodies agree with the closed form
        Jm, Qg = _reduced_inertia_and_gravity(spec, q, spec.H(q)[:, 0])
        assert abs(Jm - parallelogram_inertia()) < TOL
        assert abs(Qg / Jm - parallelogram_theta_ddot(target)) < 1e-11


def _reduced_inertia_and_gravity(spec, q, h, step=1e-30):
    """h^T M h and h^T Q_gravity from the spec's bodies (directional complex step along h)."""
    Pc = spec.poses(np.asarray(q, float) + 1j * step * h)
    P = spec.poses(np.asarray(q, float))
    J, Q = 0.0, 0.0
    for name, body in spec.bodies.items():
        v = np.imag(spec.at(Pc, name, body["com"])) / step
        R = P[name][0]
        W = (np.imag(Pc[name][0]) / step) @ R.T               # skew(omega), frame 0
        om = np.array([W[2, 1], W[0, 2], W[1, 0]])
        I = body["inertia"]
        I0 = np.array([[I[0], I[3], I[4]], [I[3], I[1], I[5]], [I[4], I[5], I[2]]])
        J += body["mass"] * v @ v + om @ (R @ I0 @ R.T) @ om
        Q += body["mass"] * spec.g @ v
    return J, Q


def test_spec_double_fourbar_singular_when_horizontal():
    spec = LinkageSpec("double_fourbar")
    q_h = np.zeros(spec.n)                             # cranks along +x, all links on the ground line
    assert np.max(np.abs(spec.residual(q_h))) < 1e-15
    assert spec.rank(q_h) == 2                          # DoF 1 -> N + 1 = 3
    assert spec.rank(spec.q_ref) == 4
    q = spec.walk(spec.q_ref, {"A0": 0.3})
    assert np.allclose(q[[spec.idx(k) for k in ("A0", "A1", "A2")]], 0.3, atol=TOL)


def test_spec_double_wishbone_static_preload():
    """Spring length0: the corner is in equilibrium at the reference pose under 400 kg * g
    at the contact patch (rack held)."""
    spec = LinkageSpec("double_wishbone")
    q = spec.q_ref
    h = spec.H(q)[:, spec.independent.index("lower_arm")]
    Q = 0.0
    for name, b in spec.bodies.items():
        Q += b["mass"] * spec.g @ (cjac(lambda qq: spec.at(spec.poses(qq), name, b["com"]), q) @ h)
    cp = spec.points["contact_patch"]
    Q += 400 * 9.81 * (cjac(lambda qq: spec.at(spec.poses(qq), cp["body"], cp["point"]), q) @ h)[2]
    sp = spec.t["springs"][0]
    k = spec.t["parameters"][sp["stiffness"]] if isinstance(sp["stiffness"], str) else sp["stiffness"]

    def length(qq):
        P = spec.poses(qq)
        d = spec.at(P, sp["bodies"][1], sp["points"][1]) - spec.at(P, sp["bodies"][0], sp["points"][0])
        return np.atleast_1d(np.sqrt(d @ d))
    L = length(q)[0]
    dL = (cjac(length, q) @ h)[0]
    Q_spring = -k * (L - sp["length0"]) * dL            # tension k (L - L0) along the strut
    assert abs(Q + Q_spring) < 0.05                     # N m: length0 is rounded to 1 micrometre
    dz = (cjac(lambda qq: spec.at(spec.poses(qq), cp["body"], cp["point"]), q) @ h)[2]
    assert 0.4 < abs(dL / dz) < 0.8                    # motion ratio of the strut


def test_spec_landing_gear_knee_near_toggle():
    spec = LinkageSpec("landing_gear")
    q = spec.q_ref
    assert abs(q[spec.idx("knee")] + np.radians(5)) < 1e-15          # knee 5 deg short of the toggle
    rates = spec.H(q)[:, 0]
    assert rates[spec.idx("trunnion")] > 0 and rates[spec.idx("knee")] > 10   # shortening retracts
    q = spec.walk(q, {"actuator": spec.q_ref[spec.idx("actuator")] - 0.3}, step=0.005)
    assert q[spec.idx("trunnion")] < -0.5 and q[spec.idx("knee")] < -1.0
