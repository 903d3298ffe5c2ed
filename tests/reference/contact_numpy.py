"""Plain numpy reference of the docking-interface contact model (docs/contact.md).

Written from the geometry, not from the generator: it reads the spec's TOML itself, builds
the petals, pads and latch points with numpy's cos/sin, moves the whole passive unit into D_A
(x_A = r + R x_P) and evaluates every pair there, one Python loop per pair:

* edge-edge:   Ericson, Real-Time Collision Detection 5.1.9 (ClosestPtSegmentSegment), with
               its branches as written there (s = 0 for parallel segments);
* apex-plate:  the plane of the passive (or active) triangle from its vertices in D_A, the
               barycentric coordinates of the projection by Ericson 3.4 (Barycentric);
* pad-face:    the signed distance along the face normal, the radius of the projection;
* latches:     zero-rest-length spring-dampers;
* capture:     angles by arctan2 and a quaternion (Shepperd's method), then half-angle sines.

Region tests (inside the triangle, on the face annulus) are exact steps; the kernels' gates
ramp over 1e-15 below the boundary, so they differ only within 1e-15 of it.

Law (per pair): delta = max(0, penetration); f_n = max(0, k delta^e (1 + d delta_dot));
friction -mu f_n v_t / sqrt(|v_t|^2 + v_eps^2) (with the same floor 1e-30 (m/s)^2 under the
root as the kernels); V = k delta^(e+1)/(e+1).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PARALLEL_EPS = 1e-14          # Ericson's EPSILON, relative to a e
TINY = 1e-15
TINY_SPEED_SQUARED = 1e-30
R0 = np.diag([1.0, -1.0, -1.0])     # D_P -> D_A when docked and aligned


def ring(radius: float, az_deg: np.ndarray | float, z: float) -> np.ndarray:
    a = np.radians(az_deg)
    return np.stack([radius * np.cos(a), radius * np.sin(a), np.full_like(a, z, dtype=float)],
                    axis=-1)


@dataclass
class Law:
    k: float
    e: float
    d: float
    mu: float


@dataclass
class Model:
    petals_A: np.ndarray      # (3, 3, 3): petal, [B-, B+, T], xyz (D_A)
    petals_P: np.ndarray      # (3, 3, 3) in D_P
    pads_A: np.ndarray        # (3, 3)
    pads_P: np.ndarray
    latch_A: np.ndarray       # (3, 3)
    latch_P: np.ndarray
    r_edge: float
    R_in: float
    R_out: float
    petal: Law
    ring: Law
    v_eps: float
    k_latch: float
    c_latch: float
    tol: dict


def load(spec: str | Path, **overrides: float) -> Model:
    """The model of a contact spec; ``overrides``: parameter values over the defaults."""
    data = tomllib.loads(Path(spec).read_text())
    params = {**data.get("parameters", {}), **overrides}
    val = lambda x: float(params[x]) if isinstance(x, str) else float(x)
    pt, rg, lt, ct = data["petals"], data["ring"], data["latches"], data["contact"]

    def petals(az):
        az = np.asarray(az, float)
        return np.stack([ring(pt["R_base"], az - pt["beta"], 0.0),
                         ring(pt["R_base"], az + pt["beta"], 0.0),
                         ring(pt["R_tip"], az, pt["h"])], axis=1)

    def law(t):
        return Law(val(t["k"]), val(t.get("e", 1.5)), val(t["d"]), val(t["mu"]))

    latch_A = ring(lt["R_latch"], np.asarray(lt["azimuths"], float), 0.0)
    return Model(petals(pt["active_azimuths"]), petals(pt["passive_azimuths"]),
                 ring(rg["R_pad"], np.asarray(rg["active_pad_azimuths"], float), rg["h_pad"]),
                 ring(rg["R_pad"], np.asarray(rg["passive_pad_azimuths"], float), rg["h_pad"]),
                 latch_A, latch_A @ R0.T, pt["r_edge"], rg["R_in"], rg["R_out"],
                 law(ct["petal"]), law(ct["ring"]), val(ct["v_eps"]), val(lt["k"]), val(lt["c"]),
                 dict(data["capture"]))


# --- primitives -------------------------------------------------------------------------------

def clamp(x: float) -> float:
    return min(max(x, 0.0), 1.0)


def closest_segment_segment(p1, q1, p2, q2) -> tuple[np.ndarray, np.ndarray]:
    """Ericson 5.1.9: the closest points c1 on p1q1 and c2 on p2q2."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    c, b = d1 @ r, d1 @ d2
    denom = a * e - b * b
    s = clamp((b * f - c * e) / denom) if denom > PARALLEL_EPS * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, clamp(-c / a)
    elif t > 1.0:
        t, s = 1.0, clamp((b - c) / a)
    return p1 + d1 * s, p2 + d2 * t


def barycentric(p, a, b, c) -> tuple[float, float, float]:
    """Ericson 3.4: (u, v, w) of the projection of p onto the plane of triangle abc."""
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = v0 @ v0, v0 @ v1, v1 @ v1
    d20, d21 = v2 @ v0, v2 @ v1
    den = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / den
    w = (d00 * d21 - d01 * d20) / den
    return 1.0 - v - w, v, w


@dataclass
class Pair:
    label: str
    kind: int             # 0 edge-edge, 1 apex-plate, 2 pad-face
    distance: float
    normal: np.ndarray    # direction of the force on the passive body
    point: np.ndarray
    active: bool


def pairs(m: Model, r, R) -> list[Pair]:
    """Every contact pair in the kernels' order, all in D_A."""
    r, R = np.asarray(r, float), np.asarray(R, float).reshape(3, 3)
    PP = m.petals_P @ R.T + r                 # passive petals in D_A
    out: list[Pair] = []
    for i in range(3):
        for a, ia in (("m", 0), ("p", 1)):
            for j in range(3):
                for b, jb in (("m", 0), ("p", 1)):
                    c1, c2 = closest_segment_segment(m.petals_A[i, ia], m.petals_A[i, 2],
                                                     PP[j, jb], PP[j, 2])
                    d = c2 - c1
                    dist = np.linalg.norm(d)
                    out.append(Pair(f"A{i + 1}{a}_P{j + 1}{b}", 0, dist - 2 * m.r_edge,
                                    d / max(dist, TINY), (c1 + c2) / 2, True))

    def apex_on_plate(label, apex, tri, apex_passive):
        n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
        n /= np.linalg.norm(n)
        s = n @ (apex - tri[0])
        u, v, w = barycentric(apex, tri[0], tri[1], tri[2])
        sign = s / max(abs(s), TINY)
        normal = sign * n if apex_passive else -sign * n
        return Pair(label, 1, abs(s) - 2 * m.r_edge, normal, apex - s / 2 * n,
                    bool(u >= 0 and v >= 0 and w >= 0))

    for i in range(3):
        for j in range(3):
            out.append(apex_on_plate(f"TA{i + 1}_P{j + 1}", m.petals_A[i, 2], PP[j], False))
    for j in range(3):
        for i in range(3):
            out.append(apex_on_plate(f"TP{j + 1}_A{i + 1}", PP[j, 2], m.petals_A[i], True))

    def pad_on_face(label, pad, origin, z, pad_passive):
        sigma = z @ (pad - origin)
        radial = pad - origin - sigma * z
        rho = np.linalg.norm(radial)
        return Pair(label, 2, sigma, z if pad_passive else -z, pad - sigma / 2 * z,
                    bool(m.R_in ** 2 <= rho ** 2 <= m.R_out ** 2))

    for k in range(3):
        out.append(pad_on_face(f"padA{k + 1}", m.pads_A[k], r, R[:, 2], False))
    for k in range(3):
        out.append(pad_on_face(f"padP{k + 1}", R @ m.pads_P[k] + r, np.zeros(3),
                               np.array([0.0, 0.0, 1.0]), True))
    return out


# --- loads ------------------------------------------------------------------------------------

def pair_load(m: Model, p: Pair, r, v, w) -> dict:
    law = m.ring if p.kind == 2 else m.petal
    delta = max(0.0, -p.distance) if p.active else 0.0
    v_rel = v + np.cross(w, p.point - r)
    delta_dot = -(p.normal @ v_rel)
    f_el = law.k * delta ** law.e
    f_n = max(0.0, f_el * (1 + law.d * delta_dot))
    v_t = v_rel - (p.normal @ v_rel) * p.normal
    speed = np.sqrt(max(v_t @ v_t + m.v_eps ** 2, TINY_SPEED_SQUARED))
    f_t = -law.mu * f_n * v_t / speed
    f = f_n * p.normal + f_t
    return {"f": f, "x": p.point, "f_n": f_n, "V": law.k * delta ** (law.e + 1) / (law.e + 1),
            "P": (f_n - f_el) * delta_dot - f_t @ v_t, "kind": p.kind}


def latch_loads(m: Model, r, R, v, w, latched: float) -> list[dict]:
    out = []
    for a, b_P in zip(m.latch_A, m.latch_P):
        b = R @ b_P + r
        v_rel = v + np.cross(w, b - r)
        f = -latched * (m.k_latch * (b - a) + m.c_latch * v_rel)
        out.append({"f": f, "x": b, "V": latched * m.k_latch * (b - a) @ (b - a) / 2,
                    "P": latched * m.c_latch * v_rel @ v_rel})
    return out


def quaternion(Q: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of a rotation matrix (Shepperd's method: the largest of the four)."""
    t = np.trace(Q)
    cands = [t, Q[0, 0], Q[1, 1], Q[2, 2]]
    k = int(np.argmax(cands))
    if k == 0:
        s = 2 * np.sqrt(1 + t)
        return np.array([s / 4, (Q[2, 1] - Q[1, 2]) / s, (Q[0, 2] - Q[2, 0]) / s,
                         (Q[1, 0] - Q[0, 1]) / s])
    i, j, l = [(0, 1, 2), (1, 2, 0), (2, 0, 1)][k - 1]
    s = 2 * np.sqrt(1 + Q[i, i] - Q[j, j] - Q[l, l])
    q = np.zeros(4)
    q[0] = (Q[l, j] - Q[j, l]) / s
    q[1 + i] = s / 4
    q[1 + j] = (Q[j, i] + Q[i, j]) / s
    q[1 + l] = (Q[l, i] + Q[i, l]) / s
    return q


def margins(m: Model, r, R) -> np.ndarray:
    """(axial, lateral, tilt, roll) margins (tol - err) / tol, angles as half-angle sines."""
    r, R = np.asarray(r, float), np.asarray(R, float).reshape(3, 3)
    tol = m.tol
    z_P, minus_z_A = R[:, 2], np.array([0.0, 0.0, -1.0])
    theta = np.arctan2(np.linalg.norm(np.cross(z_P, minus_z_A)), z_P @ minus_z_A)
    q = quaternion(R0.T @ R)
    half_roll = abs(q[3]) / np.hypot(q[0], q[3])           # |sin(phi / 2)| of the twist
    return np.array([
        1 - abs(r[2]) / tol["gap_tol"],
        1 - np.hypot(r[0], r[1]) / tol["lateral_tol"],
        1 - np.sin(theta / 2) / np.sin(np.radians(tol["tilt_tol"]) / 2),
        1 - half_roll / np.sin(np.radians(tol["roll_tol"]) / 2)])


def evaluate(m: Model, r, R, v, w, latched: float) -> dict:
    """The outputs of the ``contact`` kernel, and the scales the comparisons use."""
    r, v, w = (np.asarray(x, float) for x in (r, v, w))
    R = np.asarray(R, float).reshape(3, 3)
    ps = pairs(m, r, R)
    loads = [pair_load(m, p, r, v, w) for p in ps] + latch_loads(m, r, R, v, w, latched)
    f = sum(ld["f"] for ld in loads)
    mom = sum(np.cross(ld["x"] - r, ld["f"]) for ld in loads)
    mg = margins(m, r, R)
    return {
        "f_P": f, "m_P": mom, "f_A": -f, "m_A": -(mom + np.cross(r, f)),
        "V": sum(ld["V"] for ld in loads), "P_diss": sum(ld["P"] for ld in loads),
        "gap": min(p.distance for p in ps if p.active),
        "f_normal": sum(ld.get("f_n", 0.0) for ld in loads),
        "capture_margin": mg.min(), "margins": mg,
        "f_normal_by_kind": np.array([sum(ld["f_n"] for ld in loads if ld.get("kind") == k)
                                      for k in range(3)]),
        # scales: the sum of the magnitudes of the terms each output adds up
        "force_scale": sum(np.linalg.norm(ld["f"]) for ld in loads),
        "moment_scale": sum(np.linalg.norm(ld["f"]) * (np.linalg.norm(ld["x"] - r)
                                                       + np.linalg.norm(ld["x"]))
                            for ld in loads),
        "pairs": ps,
    }
