"""The contact family: the generated kernels of the APAS-like docking interface
(generator/mechanisms/apas_interface.toml) against an independent numpy reference, brute-force
geometry, and the laws of mechanics (docs/contact.md).

Poses are sampled in three regimes, together covering every kind of pair: the approach (gap
0..0.35 m, petals overlapping: edge-edge and some pad contacts), first contact (gap 0.25..0.6
m, larger offsets: apexes sliding on the other unit's petal faces) and the ring faces (gap
-1..6 mm: stop pads).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
import tomllib

import numpy as np
import pytest

import mechgen
from mechgen.generator.build import GENERATED, MECHANISMS
from mechgen.generator.families.contact.spec import interface_from_dict
from mechgen.generator.model import ModelError
from tests.reference import contact_numpy as ref

SPEC = MECHANISMS / "apas_interface.toml"
NAME = "apas_interface"
EDGE, APEX, PAD = 0, 1, 2
R0 = ref.R0
REL = 1e-12
# A penetration depth is a difference of coordinates of ~1 m, each known to ~1e-16 m: a
# force's relative error is then e * 1e-16 m / delta, beyond 1e-12 for delta < 0.15 mm; the
# normal of two edges whose axes nearly cross turns by 1e-16 m / |c2 - c1|. The comparisons
# allow 1e-12 of the output's scale plus COORDINATE_ROUNDING m on every depth and offset.
COORDINATE_ROUNDING = 1e-15


# --- fixtures and helpers ------------------------------------------------------------------

@pytest.fixture(scope="module")
def model() -> ref.Model:
    return ref.load(SPEC)


@pytest.fixture(scope="module")
def mech_c():
    return mechgen.load(NAME)


@pytest.fixture(scope="module")
def mech_py():
    return mechgen.load(NAME, backend="python")


def rotation(x: np.ndarray) -> np.ndarray:
    """exp([x]_x): Rodrigues' formula."""
    th = np.linalg.norm(x)
    if th == 0:
        return np.eye(3)
    k = x / th
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


REGIMES = {            # gap range (m), lateral (m), tilt (rad, sd), roll (rad)
    "approach": ((0.0, 0.35), 0.08, 0.05, 0.7),
    "tips": ((0.25, 0.6), 0.2, 0.08, 1.0),
    "faces": ((-0.001, 0.006), 0.01, 0.003, 0.03),
}


def sample(rng: np.random.Generator, n: int, regime: str, speed: float = 0.1):
    """n states (r, R (3x3), v, w) near docked, in one regime."""
    (g0, g1), lat, tilt, roll = REGIMES[regime]
    out = []
    for _ in range(n):
        r = np.array([rng.uniform(-lat, lat), rng.uniform(-lat, lat), rng.uniform(g0, g1)])
        R = R0 @ rotation(np.r_[rng.normal(0, tilt, 2), rng.uniform(-roll, roll)])
        out.append((r, R, rng.normal(0, speed, 3), rng.normal(0, speed / 2, 3)))
    return out


def mixed(seed: int, n: int, speed: float = 0.1):
    rng = np.random.default_rng(seed)
    return [s for regime in REGIMES for s in sample(rng, n, regime, speed)]


def call(mech, states, latched, p=None) -> dict:
    """The contact kernel on a batch of states; outputs by name, each (N, ...)."""
    r, R, v, w = (np.array([s[i] for s in states]) for i in range(4))
    lat = np.full((len(states), 1), float(latched)) if np.ndim(latched) == 0 else \
        np.asarray(latched, float).reshape(-1, 1)
    outs = mech.contact(r, R.reshape(-1, 9), v, w, lat, p=p)
    return {name: o for (name, _), o in zip(mech.contact.outputs, outs)}


def pairs(mech, r, R) -> tuple[np.ndarray, ...]:
    return mech.contact_pairs(r, np.ascontiguousarray(R).reshape(9))


def rounding_sensitivity(m: ref.Model, out: dict, r, v, w) -> dict[str, float]:
    """Bounds of the change of each output per metre of error in a penetration depth or in
    the offset between two edge axes, summed over the penetrating pairs (for
    COORDINATE_ROUNDING): df_n/ddelta = e f_el / delta (1 + d |delta_dot|), friction adds mu
    of it; the normal of an edge pair is (c2 - c1) / |c2 - c1|, turning by (error) / |c2 - c1|;
    a moment adds its lever, a power the speed."""
    speed = np.linalg.norm(v) + np.linalg.norm(w) * (np.linalg.norm(r) + 1.0)
    force = moment = energy = 0.0
    for p in out["pairs"]:
        delta = -p.distance if p.active else 0.0
        if delta <= 0:
            continue
        law = m.ring if p.kind == PAD else m.petal
        f_el = law.k * delta ** law.e
        f_max = f_el * (1 + law.d * speed) * (1 + law.mu)
        df = law.e * f_max / delta
        if p.kind == EDGE:
            df += f_max / max(p.distance + 2 * m.r_edge, 1e-300)
        force += df
        moment += df * (np.linalg.norm(p.point - r) + np.linalg.norm(p.point))
        energy += f_el
    return {"force": force, "moment": moment, "energy": energy, "power": force * speed}


def assert_close(got: dict, want: dict, sens: dict, where: str) -> None:
    scales = {"f_P": ("force_scale", "force"), "f_A": ("force_scale", "force"),
              "m_P": ("moment_scale", "moment"), "m_A": ("moment_scale", "moment"),
              "V": ("V", "energy"), "P_diss": ("P_diss", "power"),
              "f_normal": ("f_normal", "force"), "f_normal_by_kind": ("f_normal", "force")}
    for name, g in got.items():
        if name in scales:
            scale_key, sens_key = scales[name]
            tol = REL * abs(float(np.max(want[scale_key]))) + COORDINATE_ROUNDING * sens[sens_key]
        else:                                   # gap (m) and the margins: absolute
            tol = REL
        err = np.max(np.abs(np.asarray(g) - want[name]))
        assert err <= tol, f"{where}: {name} differs by {err:.3e} (allowed {tol:.3e}): " \
                           f"{g} vs {want[name]}"


# --- against the numpy reference ------------------------------------------------------------

@pytest.mark.parametrize("backend, n", [("c", 120), ("python", 40)])
def test_kernels_match_the_numpy_reference(backend, n, model, mech_c, mech_py):
    """Generated C and Python kernels vs the plain-numpy reference at 1e-12 of each output's
    scale, on random relative poses and velocities with contacts of every kind, latched or
    not, with default and with other parameter values."""
    mech = mech_c if backend == "c" else mech_py
    states = mixed(1, n)
    rng = np.random.default_rng(2)
    latched = rng.integers(0, 2, len(states))
    other = {"k_petal": 3.1e6, "d_petal": 0.7, "mu_petal": 0.31, "k_ring": 9.0e7, "d_ring": 0.05,
             "mu_ring": 0.4, "v_eps": 2.0e-3, "k_latch": 1.3e6, "c_latch": 777.0}
    kinds = np.zeros(3)
    for params in ({}, other):
        m = ref.load(SPEC, **params)
        got = call(mech, states, latched, p=params or None)
        for i, (r, R, v, w) in enumerate(states):
            want = ref.evaluate(m, r, R, v, w, latched[i])
            kinds += want["f_normal_by_kind"] > 0
            assert_close({k: g[i] for k, g in got.items()}, want,
                         rounding_sensitivity(m, want, r, v, w),
                         f"{backend} state {i} params {params or 'default'}")
    assert (kinds >= 5).all(), f"states with contacts of each kind: {kinds}"


def _edge_sines(model: ref.Model, r, R) -> np.ndarray:
    """sin of the angle between the two edges of each edge-edge pair."""
    PP = model.petals_P @ R.T + r
    out = []
    for i in range(3):
        for a in range(2):
            d1 = model.petals_A[i, 2] - model.petals_A[i, a]
            for j in range(3):
                for b in range(2):
                    d2 = PP[j, 2] - PP[j, b]
                    out.append(np.linalg.norm(np.cross(d1, d2))
                               / (np.linalg.norm(d1) * np.linalg.norm(d2)))
    return np.array(out)


def test_pair_geometry_matches_the_reference(model, mech_c):
    """contact_pairs (distances, normals, contact points, region tests) vs the reference.
    Conditioning allowed for: the closest points of two nearly parallel edges slide along
    them at second-order cost in distance (rounding ~1e-16 m / sin^2(angle)); the normal of
    two edges whose axes nearly cross turns by ~1e-16 m / |c2 - c1|."""
    for r, R, _, _ in mixed(3, 40):
        dist, normal, point, active = pairs(mech_c, r, R)
        want = ref.pairs(model, r, R)
        assert [bool(a) for a in active] == [p.active for p in want]
        np.testing.assert_allclose(dist, [p.distance for p in want], rtol=0, atol=1e-13)
        centre = dist[:36] + 2 * model.r_edge
        for got, exp, tol in (
                (normal, [p.normal for p in want], np.r_[1e-13 + 1e-15 / centre, [1e-13] * 24]),
                (point, [p.point for p in want],
                 np.r_[1e-13 + 1e-15 / _edge_sines(model, r, R) ** 2, [1e-13] * 24])):
            err = np.abs(got - np.array(exp)).max(axis=1)
            assert (err <= tol).all(), (np.argmax(err / tol), (err / tol).max())


# --- geometry against brute-force sampling ----------------------------------------------------

def _segment(p, q, n):
    return p + np.linspace(0, 1, n)[:, None] * (q - p)


def _triangle(a, b, c, n):
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    u, v = i[keep] / n, j[keep] / n
    pts = a + u[:, None] * (b - a) + v[:, None] * (c - a)
    return pts, np.minimum(np.minimum(i[keep], j[keep]), n - i[keep] - j[keep])


def _nearest(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, int]:
    d = np.linalg.norm(x[:, None, :] - y[None, :, :], axis=2)
    k = int(np.argmin(d))
    i, j = divmod(k, d.shape[1])
    return float(d[i, j]), x[i], y[j], j


def test_closed_form_distances_and_normals_against_brute_force_sampling(model, mech_c):
    """Dense sampling of the primitives (segments, triangles, annuli): the closed-form
    distance is at most every sampled distance and within the sampling resolution of the
    smallest; the normal points from the active feature to the passive one along the sampled
    closest pair; the region tests agree with where the sampled minimum lies."""
    rng = np.random.default_rng(4)
    states = [s for regime in REGIMES for s in sample(rng, 2, regime)]
    ns, nt = 500, 150
    for r, R, _, _ in states:
        dist, normal, point, active = pairs(mech_c, r, R)
        PP = model.petals_P @ R.T + r
        labels = [p.label for p in ref.pairs(model, r, R)]
        for k, label in enumerate(labels):
            n = normal[k]
            if k < 36:                                           # edge-edge
                i, a, j, b = int(label[1]) - 1, "mp".index(label[2]), int(label[5]) - 1, \
                    "mp".index(label[6])
                x = _segment(model.petals_A[i, a], model.petals_A[i, 2], ns)
                y = _segment(PP[j, b], PP[j, 2], ns)
                h = (np.linalg.norm(x[1] - x[0]) + np.linalg.norm(y[1] - y[0])) / 2
                d_min, xa, xp, _ = _nearest(x, y)
                centre = dist[k] + 2 * model.r_edge
                assert centre <= d_min + 1e-12 and d_min - centre <= h, (label, centre, d_min)
                assert np.linalg.norm((xp - xa) - centre * n) <= 3 * h, label
            elif k < 54:                                         # apex-plate
                i, j = int(label[2]) - 1, int(label[5]) - 1
                if label.startswith("TA"):
                    apex, tri, sign = model.petals_A[i, 2], PP[j], -1.0
                else:
                    apex, tri, sign = PP[i, 2], model.petals_A[j], 1.0
                pts, edge_index = _triangle(tri[0], tri[1], tri[2], nt)
                h = max(np.linalg.norm(tri[1] - tri[0]), np.linalg.norm(tri[2] - tri[0])) / nt
                d_min, _, x_tri, idx = _nearest(apex[None, :], pts)
                plane = dist[k] + 2 * model.r_edge                # |s|
                assert plane <= d_min + 1e-12, label
                assert abs(sign * n @ (apex - x_tri) - plane) <= 2 * h, label
                if active[k]:
                    assert d_min - plane <= h, (label, plane, d_min)
                else:
                    assert edge_index[idx] <= 2, f"{label}: nearest point not on the boundary"
            else:                                                # pad-face
                q = k - 54
                if q < 3:                     # n . (passive point - active point) = sigma
                    pad, origin, axes, sign = model.pads_A[q], r, R, 1.0
                else:
                    pad, origin, axes, sign = R @ model.pads_P[q - 3] + r, np.zeros(3), \
                        np.eye(3), -1.0
                rad = np.linspace(model.R_in, model.R_out, 60)
                az = np.linspace(0, 2 * np.pi, 2000, endpoint=False)
                face = np.stack([np.outer(rad, np.cos(az)).ravel(),
                                 np.outer(rad, np.sin(az)).ravel(),
                                 np.zeros(rad.size * az.size)], axis=1) @ axes.T + origin
                h = max(rad[1] - rad[0], model.R_out * (az[1] - az[0]))
                d_min, _, x_face, _ = _nearest(pad[None, :], face)
                sigma = dist[k]
                assert abs(sigma) <= d_min + 1e-12, label
                assert abs(sign * n @ (x_face - pad) - sigma) <= 2 * h, label
                if active[k]:
                    assert d_min - abs(sigma) <= h, (label, sigma, d_min)


# --- mechanics ------------------------------------------------------------------------------

def test_friction_opposes_slip_and_dissipation_is_never_negative(mech_c, model):
    """f_t . v_t < 0 whenever sliding: for the friction wrench of all contacts (mu on minus
    mu off), whose power is sum f_t . v_t; and for single contacts, where f_t is the
    tangential part of f_P. P_diss >= 0, also at speeds where the Hunt-Crossley force would
    pull (and is clamped)."""
    states = mixed(5, 60, speed=0.3) + mixed(6, 30, speed=5.0)
    frictionless = {"mu_petal": 0.0, "mu_ring": 0.0}
    with_mu = call(mech_c, states, 1)
    without = call(mech_c, states, 1, p=frictionless)
    assert (with_mu["P_diss"] >= 0).all()
    v = np.array([s[2] for s in states])
    w = np.array([s[3] for s in states])
    power = np.einsum("ij,ij->i", with_mu["f_P"] - without["f_P"], v) + \
        np.einsum("ij,ij->i", with_mu["m_P"] - without["m_P"], w)
    sliding = with_mu["f_normal"][:, 0] > 0
    assert sliding.sum() > 30
    assert (power[sliding] < 0).all()
    np.testing.assert_allclose(-power, (with_mu["P_diss"] - without["P_diss"])[:, 0],
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(with_mu["f_normal"], without["f_normal"], rtol=1e-14)
    single = 0
    for i, (r, R, vi, wi) in enumerate(states):
        dist, normal, point, active = pairs(mech_c, r, R)
        on = np.flatnonzero((dist < 0) & (active > 0))
        if len(on) != 1:
            continue
        k = on[0]
        f = call(mech_c, [states[i]], 0)["f_P"][0]
        n = normal[k]
        if f @ n <= 0:
            continue                 # separating fast: the Hunt-Crossley force is clamped to 0
        f_t = f - (f @ n) * n
        v_rel = vi + np.cross(wi, point[k] - r)
        v_t = v_rel - (v_rel @ n) * n
        mu = model.ring.mu if k >= 54 else model.petal.mu
        assert f_t @ v_t < 0, f"state {i}: pair {k} friction does not oppose slip"
        assert np.linalg.norm(f_t) <= mu * (f @ n) * (1 + 1e-12)
        assert np.linalg.norm(np.cross(f_t, v_t)) <= 1e-9 * np.linalg.norm(f_t) * np.linalg.norm(v_t)
        single += 1
    assert single >= 10


def _moved(r, R, dr, dth):
    return r + dr, rotation(dth) @ R


def test_without_damping_and_friction_the_forces_are_minus_the_gradient_of_V(mech_c):
    """d = mu = c_latch = 0: f_P = -dV/dr and m_P = -dV/dtheta (theta: a small rotation of the
    passive body about r, D_A), by central differences, latched and not."""
    p = {"d_petal": 0.0, "d_ring": 0.0, "mu_petal": 0.0, "mu_ring": 0.0, "c_latch": 0.0}
    h = 1e-7
    checked = 0
    for latched in (0, 1):
        for r, R, v, w in mixed(7, 12):
            base = call(mech_c, [(r, R, v, w)], latched, p)
            if base["f_normal"][0, 0] == 0 and not latched:
                continue
            moves = []
            for axis in range(6):
                e = np.zeros(3)
                e[axis % 3] = h
                for sgn in (1, -1):
                    dr, dth = (sgn * e, np.zeros(3)) if axis < 3 else (np.zeros(3), sgn * e)
                    moves.append((*_moved(r, R, dr, dth), v, w))
            gates = {tuple(pairs(mech_c, s[0], s[1])[3]) for s in moves}
            if len(gates) > 1:
                continue                      # a region test flips within the step
            V = call(mech_c, moves, latched, p)["V"][:, 0]
            grad = (V[0::2] - V[1::2]) / (2 * h)
            want = -np.r_[base["f_P"][0], base["m_P"][0]]
            scale = np.abs(want).max() + 1e-6
            assert np.abs(grad - want).max() <= 1e-5 * scale, (grad, want)
            checked += 1
    assert checked >= 30


def test_energy_balance_with_damping_and_friction(mech_c):
    """Along the motion r(t) = r + v t, R(t) = exp(t [w]_x) R (active body at rest):
    dV/dt = -(f_P . v + m_P . w) - P_diss, every law on."""
    h = 1e-7
    checked = 0
    for r, R, v, w in mixed(8, 30, speed=0.2):
        base = call(mech_c, [(r, R, v, w)], 1)
        fwd, bwd = (_moved(r, R, s * h * v, s * h * w) for s in (1, -1))
        if any((pairs(mech_c, *x)[3] != pairs(mech_c, r, R)[3]).any() for x in (fwd, bwd)):
            continue
        V = call(mech_c, [(*fwd, v, w), (*bwd, v, w)], 1)["V"][:, 0]
        dV = (V[0] - V[1]) / (2 * h)
        power = base["f_P"][0] @ v + base["m_P"][0] @ w
        scale = abs(power) + base["P_diss"][0, 0] + 1e-6
        assert abs(dV + power + base["P_diss"][0, 0]) <= 1e-5 * scale
        checked += 1
    assert checked >= 60


def test_newtons_third_law(mech_c):
    """f_A = -f_P, and the moments of both bodies about any point add up to zero."""
    states = mixed(9, 40)
    out = call(mech_c, states, 1)
    np.testing.assert_array_equal(out["f_A"], -out["f_P"])
    rng = np.random.default_rng(10)
    for i, (r, _, _, _) in enumerate(states):
        o = rng.normal(0, 1, 3)
        total = (out["m_P"][i] + np.cross(r - o, out["f_P"][i])
                 + out["m_A"][i] + np.cross(-o, out["f_A"][i]))
        scale = np.abs(out["m_P"][i]).max() + np.abs(out["f_P"][i]).max() * 2 + 1e-9
        assert np.abs(total).max() <= 1e-13 * scale


def test_rotating_the_relative_pose_by_120_degrees_rotates_the_wrench(mech_c):
    """Both units are 3-fold symmetric about their axes. Turning the passive unit by 120 deg
    about z_A (r, R, v, w -> Q r, Q R, Q v, Q w) permutes the petals and pads, so the contact
    wrench turns by Q and V, P_diss, gap and the normal forces are unchanged; the latches,
    which pair a fixed a_k with a fixed b_k, are off for it. Turning the passive unit also
    by -120 deg about its own axis (Q R Q_P^T) permutes the latch pairs as well: latched."""
    Q = rotation(np.array([0, 0, 2 * np.pi / 3]))
    Q_P = rotation(np.array([0, 0, -2 * np.pi / 3]))
    states = mixed(11, 40)
    for turned_R, latched in ((lambda R: Q @ R, 0), (lambda R: Q @ R @ Q_P.T, 1)):
        base = call(mech_c, states, latched)
        turned = [(Q @ r, turned_R(R), Q @ v, Q @ w) for r, R, v, w in states]
        out = call(mech_c, turned, latched)
        for name in ("f_P", "m_P", "f_A", "m_A"):
            scale = np.abs(base[name]).max(axis=1, keepdims=True) + 1e-6
            err = np.abs(out[name] - base[name] @ Q.T) / scale
            assert err.max() < 1e-9, name
        for name in ("V", "P_diss", "f_normal", "f_normal_by_kind"):
            np.testing.assert_allclose(out[name], base[name], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(out["gap"], base["gap"], rtol=0, atol=1e-12)
        for (r, R, _, _), (r2, R2, _, _) in zip(states[:10], turned[:10]):
            d1, d2 = pairs(mech_c, r, R)[0], pairs(mech_c, r2, R2)[0]
            np.testing.assert_allclose(np.sort(d1), np.sort(d2), rtol=0, atol=1e-12)


def test_latches(mech_c, model):
    """latched = 0: no latch load (far apart: no load at all); latched = 1: the difference
    is the zero-rest-length spring-damper between a_k and b_k = r + R b_P,k, at b_k."""
    far = [(np.array([0.3, -0.2, 1.5]), R0 @ rotation(np.array([0.2, 0.1, 0.4])),
            np.array([0.1, 0.2, -0.3]), np.array([0.05, -0.02, 0.01]))]
    out = call(mech_c, far, 0)
    for name in ("f_P", "m_P", "f_A", "m_A", "V", "P_diss", "f_normal"):
        assert not out[name].any(), name
    states = mixed(12, 20) + far
    off, on = call(mech_c, states, 0), call(mech_c, states, 1)
    for i, (r, R, v, w) in enumerate(states):
        f = m = np.zeros(3)
        V = P = 0.0
        for a, b_P in zip(model.latch_A, model.latch_P):
            b = r + R @ b_P
            v_rel = v + np.cross(w, b - r)
            fk = -(model.k_latch * (b - a) + model.c_latch * v_rel)
            f, m = f + fk, m + np.cross(b - r, fk)
            V += model.k_latch * (b - a) @ (b - a) / 2
            P += model.c_latch * v_rel @ v_rel
        for name, want in (("f_P", f), ("m_P", m), ("V", V), ("P_diss", P)):
            got = on[name][i] - off[name][i]
            tol = 1e-12 * (np.abs(want).max() + np.abs(on[name][i]).max() + 1e-9)
            assert np.abs(got - want).max() <= tol, (i, name, got, want)


def test_capture_margin_at_known_poses(mech_c, model):
    """Docked and aligned: every margin 1. Exactly at a tolerance: that margin 0."""
    tol = model.tol
    z3 = np.zeros(3)

    def margins(r, R):
        return call(mech_c, [(np.asarray(r, float), R, z3, z3)], 0)["margins"][0]

    np.testing.assert_allclose(margins(z3, R0), [1, 1, 1, 1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(margins([0, 0, -tol["gap_tol"]], R0)[0], 0, atol=1e-15)
    lat = tol["lateral_tol"] / np.sqrt(2)
    np.testing.assert_allclose(margins([lat, -lat, 0], R0)[1], 0, atol=1e-14)
    for axis, k, name in ((np.array([0.6, 0.8, 0.0]), 2, "tilt_tol"),
                          (np.array([0.0, 0.0, 1.0]), 3, "roll_tol")):
        for sgn in (1, -1):
            R = R0 @ rotation(sgn * np.radians(tol[name]) * axis)
            got = margins(z3, R)
            assert abs(got[k]) < 1e-12, (name, got)
            np.testing.assert_allclose(np.delete(got, k), 1, atol=1e-12)
    # a pure roll is no tilt, a pure tilt no roll; beyond 90 deg the sines keep growing
    R = R0 @ rotation(np.radians(150) * np.array([0.0, 0.0, 1.0]))
    assert margins(z3, R)[3] < margins(z3, R0 @ rotation(np.radians(30) * np.array([0, 0, 1.0])))[3]


# --- the spec -------------------------------------------------------------------------------

def _spec() -> dict:
    return tomllib.loads(SPEC.read_text())


def _set(path: str, value):
    def edit(s):
        *tables, key = path.split(".")
        t = s
        for name in tables:
            t = t.setdefault(name, {})
        if value is _DELETE:
            del t[key]
        else:
            t[key] = value
    return edit


_DELETE = object()

BAD_SPECS = [
    ("negative radius", _set("petals.R_base", -0.5), ["petals.R_base", "positive"]),
    ("tip outside the base", _set("petals.R_tip", 0.7), ["petals.R_tip", "R_base"]),
    ("unknown field", _set("petals.colour", "red"), ["petals", "colour"]),
    ("two azimuths", _set("petals.active_azimuths", [0.0, 120.0]),
     ["petals.active_azimuths", "3"]),
    ("overlapping petals", _set("petals.passive_azimuths", [60.0, 100.0, 300.0]),
     ["petals.passive_azimuths", "overlap"]),
    ("half-width", _set("petals.beta", 61.0), ["petals.beta", "60"]),
    ("annulus", _set("ring.R_in", 0.8), ["ring.R_in", "R_out"]),
    ("pad off the face", _set("ring.R_pad", 0.5), ["ring.R_pad", "annulus"]),
    ("pad height", _set("ring.h_pad", -0.001), ["ring.h_pad", "non-negative"]),
    ("string radius", _set("latches.R_latch", "wide"), ["latches.R_latch", "number"]),
    ("unknown parameter", _set("contact.petal.k", "k_nope"),
     ["contact.petal.k", "k_nope", "no default"]),
    ("negative default", _set("parameters.k_petal", -1.0), ["contact.petal.k", "default"]),
    ("exponent", _set("contact.ring.e", 0.0), ["contact.ring.e", "positive"]),
    ("missing law field", _set("contact.ring.mu", _DELETE), ["contact.ring", "mu"]),
    ("missing latch law", _set("latches.k", _DELETE), ["latches", "k"]),
    ("unused parameter", _set("parameters.spare", 1.0), ["parameters", "spare"]),
    ("reserved parameter name", _set("parameters.fmax", 1.0), ["parameters.fmax", "reserved"]),
    ("bad parameter name", _set("parameters.2k", 1.0), ["parameters.2k", "valid name"]),
    ("tilt tolerance", _set("capture.tilt_tol", 200.0), ["capture.tilt_tol", "180"]),
    ("zero tolerance", _set("capture.gap_tol", 0.0), ["capture.gap_tol", "positive"]),
    ("mechanism name", _set("mechanism.name", "apas interface"), ["mechanism.name"]),
    ("unknown table", _set("thrusters.n", 4), ["thrusters"]),
    ("family", _set("mechanism.family", "parallel"), ["mechanism.family", "contact"]),
]


@pytest.mark.parametrize("what, edit, fragments", BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_spec_errors_name_the_file_and_field(what, edit, fragments):
    spec = copy.deepcopy(_spec())
    edit(spec)
    with pytest.raises(ModelError) as e:
        interface_from_dict(spec, "bad.toml")
    msg = str(e.value)
    assert msg.startswith("bad.toml: "), msg
    for f in fragments:
        assert f in msg, msg


def test_the_bundled_spec_and_its_defaults():
    itf = interface_from_dict(_spec(), "ok.toml")
    assert [s.name for s in itf.parameters] == sorted(_spec()["parameters"])
    assert len(itf.active.petals) == len(itf.passive.petals) == 3
    # the latch points coincide when docked and aligned: a = R0 b exactly
    for a, b in itf.latches.points:
        assert tuple(np.diag(R0) * np.array(b)) == a


# --- the generated files --------------------------------------------------------------------

_GENERATE = r"""
import hashlib, json, sys
from pathlib import Path
for k in [k for k in sys.modules if k == "numpy" or k.startswith("numpy.")]:
    sys.modules[k] = None                       # the generator may not use numpy
from mechgen.generator.build import files_for_model, spec_inputs
from mechgen.generator.families.contact.spec import load_interface
spec = Path(sys.argv[1])
files = files_for_model(load_interface(spec), spec.name, spec_inputs(spec))[1]
print(json.dumps({k: hashlib.sha256(v.encode()).hexdigest() for k, v in files.items()}))
"""


def test_committed_files_equal_a_generation_without_numpy():
    """generated/apas_interface/ is current: a fresh generation, in a process where numpy
    cannot be imported and with another hash seed, gives the committed bytes."""
    out = subprocess.run([sys.executable, "-c", _GENERATE, str(SPEC)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": "11"})
    assert out.returncode == 0, out.stderr[-3000:]
    fresh = json.loads(out.stdout.strip().splitlines()[-1])
    folder = GENERATED / NAME
    committed = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    assert fresh == committed, "generated/apas_interface/ is stale: regenerate it"


def test_the_op_counter_counts_the_clamps_and_region_tests(mech_c):
    """Max, Min, Abs and Piecewise count as 'other' (one each, whatever their arity); the C
    source has at least that many fmax/fmin/fabs calls and ternaries."""
    manifest = json.loads((GENERATED / NAME / "manifest.json").read_text())
    source = (GENERATED / NAME / f"{NAME}.c").read_text()
    calls = sum(source.count(f"{f}(") for f in ("fmax", "fmin", "fabs")) + source.count("? (")
    other = sum(k["ops"].get("other", 0) for k in manifest["kernels"])
    assert 0 < other <= calls
    for k in manifest["kernels"]:
        ops = k["ops"]
        assert ops["total"] == sum(v for key, v in ops.items() if key != "total")
