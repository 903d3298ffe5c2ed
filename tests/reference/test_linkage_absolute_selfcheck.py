"""Self-checks of the absolute-coordinate linkage reference (linkage_absolute.py).

No generator is used; the specs (docs/linkage.md format) are built here as dicts. Every check
compares with something the reference does not use:

* a pendulum on an inclined R joint (products of inertia, joint spring-damper, drive, q_ref),
  a spherical pendulum (S) and an inclined slider (P): closed-form accelerations and reactions
  (Euler's equation about the fixed pivot, Newton for the slider);
* the joint coordinates of every type against the docs' definitions (poses built here from
  coordinates), rates against finite differences;
* a spatial two-loop mechanism with every joint type (C, H, U, S, P, fixed, R), springs,
  dampers and drives: the accelerations satisfy the position constraints to second order
  (central differences along the exact second-order path), Jourdain's principle holds along
  every admissible direction with the forces from finite differences of the potential and
  of the joint coordinates, and a conservative simulation keeps energy and closure;
* a four-bar in an inclined plane, written as 4R (three redundant rows) and as RUSR (none):
  both equal Lagrange's equation in the crank angle from closed-form kinematics (mpmath), the
  energy rate equals the drive and damper power, and the determinate reactions agree;
* a double parallelogram (seven redundant rows): accelerations from the minimum-norm solve
  and from KKT solves with different kept rows agree with the closed form, the multipliers
  differ, their resultant and the determinate parts do not.
"""

from __future__ import annotations

import copy

import mpmath
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from .linkage_absolute import LinkageAbsolute, rot

E3 = np.eye(3)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def random_rotation(rng) -> np.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(R)))
    return Q if np.linalg.det(Q) > 0 else -Q


def random_inertia(rng, m=1.0) -> np.ndarray:
    a, b, c = rng.uniform(0.1, 0.4, 3)
    R = random_rotation(rng)
    return R @ np.diag(m / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])) @ R.T


def inertia_list(I) -> list[float]:
    return [float(x) for x in (I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])]


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def perp(rng, a):
    v = rng.normal(size=3)
    return unit(v - (v @ a) * a)


def move(poses, twists, eps, accs=None):
    """Poses moved by eps along the twists (second order with ``accs``: r + eps v + eps^2/2 a,
    R <- exp(skew(eps w + eps^2/2 alpha)) R, the exact second-order path)."""
    out = {}
    for nm, (R, r) in poses.items():
        v, w = twists[nm]
        phi = eps * np.asarray(w)
        dr = eps * np.asarray(v)
        if accs is not None:
            a, al = accs[nm]
            phi = phi + 0.5 * eps * eps * np.asarray(al)
            dr = dr + 0.5 * eps * eps * np.asarray(a)
        ang = np.linalg.norm(phi)
        Rm = rot(phi, ang) if ang > 0 else E3
        out[nm] = (Rm @ R, r + dr)
    return out


def kinetic_rate(lk: LinkageAbsolute, poses, twists, res) -> float:
    """dT/dt = sum m v.a + w . I_w alpha (the gyroscopic part does no work)."""
    P = 0.0
    for b in lk.bodies:
        nm = b["name"]
        R, _ = poses[nm]
        v, w = twists[nm]
        P += b["m"] * v @ res["com_acc"][nm] + w @ (R @ b["I"] @ R.T) @ res["ang_acc"][nm]
    return float(P)


def fd(f, eps=1e-6):
    return (f(eps) - f(-eps)) / (2 * eps)


def spring_length(spec_spring, bodies_ref, poses):
    pts = []
    for bn, P in zip(spec_spring["bodies"], spec_spring["points"]):
        if bn == "ground":
            pts.append(np.asarray(P, float))
        else:
            R, r = poses[bn]
            pts.append(r + R @ (np.asarray(P, float) - bodies_ref[bn]))
    return float(np.linalg.norm(pts[1] - pts[0]))


def stacked(lk, twists):
    return np.concatenate([np.concatenate(twists[b["name"]]) for b in lk.bodies])


def unstacked(lk, nu):
    return {b["name"]: (nu[6 * i:6 * i + 3], nu[6 * i + 3:6 * i + 6])
            for i, b in enumerate(lk.bodies)}


# ---------------------------------------------------------------------------
# closed-form single-body checks
# ---------------------------------------------------------------------------


def test_pendulum_on_inclined_R_joint():
    rng = np.random.default_rng(1)
    n = unit(rng.normal(size=3))
    p0 = rng.uniform(-1, 1, 3)
    com = p0 + rng.uniform(-0.5, 0.5, 3)
    m, Ic = 1.7, random_inertia(rng, 1.7)
    g = np.array([0.3, -9.81, 1.2])
    k, c, q0, qref, tau = 3.0, 0.4, 0.2, 0.9, 1.3
    spec = {
        "mechanism": {"name": "pend", "family": "linkage", "gravity": g.tolist()},
        "parameters": {"kk": k},
        "bodies": [{"name": "rod", "mass": m, "com": com.tolist(), "inertia": inertia_list(Ic)}],
        "joints": [{"name": "A", "type": "R", "bodies": ["ground", "rod"], "point": p0.tolist(),
                    "axis": (2.5 * n).tolist(), "q_ref": qref, "stiffness": "kk",
                    "damping": c, "q0": q0}],
    }
    lk = LinkageAbsolute(spec)
    th, thd = 0.7, -1.9
    R = rot(n, th)
    rho = R @ (com - p0)
    w = thd * n
    poses = {"rod": (R, p0 + rho)}
    twists = {"rod": (np.cross(w, rho), w)}
    assert np.max(np.abs(lk.residual_vector(poses))) < 1e-15
    q, qd = lk.joint_coordinates(poses, twists)["A"]
    assert q == pytest.approx(qref + th) and qd == pytest.approx(thd)
    res = lk.accelerations(poses, twists, {"A": tau})
    assert res["rank"] == 5 and res["reactions_unique"]

    I_O = R @ Ic @ R.T + m * (rho @ rho * E3 - np.outer(rho, rho))
    tq = tau - k * (qref + th - q0) - c * thd
    thdd = (tq + n @ np.cross(rho, m * g)) / (n @ I_O @ n)
    alpha = thdd * n
    np.testing.assert_allclose(res["ang_acc"]["rod"], alpha, atol=1e-12)
    a_c = np.cross(alpha, rho) + np.cross(w, np.cross(w, rho))
    np.testing.assert_allclose(res["com_acc"]["rod"], a_c, atol=1e-12)
    # reaction (on the rod, about the pivot): Newton, and Euler about the fixed pivot
    F = m * a_c - m * g
    M = I_O @ alpha + np.cross(w, I_O @ w) - np.cross(rho, m * g) - tq * n
    r = res["reactions"]["A"]
    np.testing.assert_allclose(r["force"], F, atol=1e-12)
    np.testing.assert_allclose(r["moment"], M, atol=1e-12)
    np.testing.assert_allclose(r["point"], p0, atol=1e-15)
    assert abs(r["moment"] @ n) < 1e-12 and r["indeterminate"].shape[1] == 0


def test_spherical_pendulum():
    rng = np.random.default_rng(2)
    p0 = rng.uniform(-1, 1, 3)
    com = p0 + rng.uniform(-0.5, 0.5, 3)
    m, Ic = 0.8, random_inertia(rng, 0.8)
    g = np.array([0.0, 0.0, -9.81])
    spec = {
        "mechanism": {"gravity": g.tolist()},
        "bodies": [{"name": "bob", "mass": m, "com": com.tolist(), "inertia": inertia_list(Ic)}],
        "joints": [{"name": "S", "type": "S", "bodies": ["ground", "bob"], "point": p0.tolist()}],
    }
    lk = LinkageAbsolute(spec)
    R = random_rotation(rng)
    w = rng.normal(size=3) * 2
    rho = R @ (com - p0)
    poses = {"bob": (R, p0 + rho)}
    twists = {"bob": (np.cross(w, rho), w)}
    res = lk.accelerations(poses, twists)
    I_O = R @ Ic @ R.T + m * (rho @ rho * E3 - np.outer(rho, rho))
    alpha = np.linalg.solve(I_O, np.cross(rho, m * g) - np.cross(w, I_O @ w))
    np.testing.assert_allclose(res["ang_acc"]["bob"], alpha, atol=1e-11)
    a_c = np.cross(alpha, rho) + np.cross(w, np.cross(w, rho))
    np.testing.assert_allclose(res["com_acc"]["bob"], a_c, atol=1e-11)
    np.testing.assert_allclose(res["reactions"]["S"]["force"], m * a_c - m * g, atol=1e-11)
    np.testing.assert_allclose(res["reactions"]["S"]["moment"], 0.0, atol=1e-15)


def test_inclined_slider():
    rng = np.random.default_rng(3)
    n = unit(rng.normal(size=3))
    p0 = rng.uniform(-1, 1, 3)
    com = p0 + rng.uniform(-0.5, 0.5, 3)
    m, Ic = 2.3, random_inertia(rng, 2.3)
    g = np.array([1.0, -9.81, 0.5])
    k, c, q0, qref, F = 40.0, 2.0, 0.1, -0.3, 7.0
    spec = {
        "mechanism": {"gravity": g.tolist()},
        "bodies": [{"name": "sled", "mass": m, "com": com.tolist(), "inertia": inertia_list(Ic)}],
        "joints": [{"name": "P", "type": "P", "bodies": ["ground", "sled"], "point": p0.tolist(),
                    "axis": n.tolist(), "q_ref": qref, "stiffness": k, "damping": c, "q0": q0}],
    }
    lk = LinkageAbsolute(spec)
    s, sd = 0.25, 1.1
    poses = {"sled": (E3, com + s * n)}
    twists = {"sled": (sd * n, np.zeros(3))}
    assert lk.joint_coordinates(poses, twists)["P"] == pytest.approx((qref + s, sd))
    res = lk.accelerations(poses, twists, {"P": F})
    f = F - k * (qref + s - q0) - c * sd
    sdd = (m * g @ n + f) / m
    np.testing.assert_allclose(res["com_acc"]["sled"], sdd * n, atol=1e-12)
    np.testing.assert_allclose(res["ang_acc"]["sled"], 0.0, atol=1e-12)
    Fr = m * sdd * n - m * g - f * n
    r = res["reactions"]["P"]
    np.testing.assert_allclose(r["force"], Fr, atol=1e-11)
    assert abs(r["force"] @ n) < 1e-11
    # moments about the COM vanish: M_r + (p2 - r) x (F_r + f n) = 0
    p2 = p0 + s * n
    np.testing.assert_allclose(r["point"], p2, atol=1e-15)
    np.testing.assert_allclose(r["moment"], -np.cross(p2 - (com + s * n), Fr + f * n), atol=1e-11)


# ---------------------------------------------------------------------------
# joint coordinates: the docs' definitions
# ---------------------------------------------------------------------------


def Rx(a):
    return rot(E3[0], a)


def Ry(a):
    return rot(E3[1], a)


def Rz(a):
    return rot(E3[2], a)


def relative_motion(jt: dict, q: dict):
    """(R_rel, slide) of the second body relative to the first, from the docs' table."""
    typ, nm = jt["type"], jt["name"]
    a = unit(jt.get("axis", [0, 0, 1]))
    qref = jt.get("q_ref", 0.0)
    if typ == "R":
        return rot(a, q[nm] - qref), 0.0
    if typ == "P":
        return E3, q[nm] - qref
    if typ == "C":
        return rot(a, q[f"{nm}_r"]), q[f"{nm}_s"]
    if typ == "H":
        h = jt["lead"] / (2 * np.pi)
        return rot(a, q[f"{nm}_r"] - qref), h * (q[f"{nm}_r"] - qref)
    if typ == "U":
        return rot(a, q[f"{nm}_1"]) @ rot(unit(jt["axis2"]), q[f"{nm}_2"]), 0.0
    if typ == "S":
        return Rx(q[f"{nm}_x"]) @ Ry(q[f"{nm}_y"]) @ Rz(q[f"{nm}_z"]), 0.0
    raise ValueError(typ)


JOINT_CASES = [
    {"type": "R", "q_ref": 0.4}, {"type": "P", "q_ref": -0.2}, {"type": "C"},
    {"type": "H", "lead": 0.3}, {"type": "U"}, {"type": "S"},
]


@pytest.mark.parametrize("case", JOINT_CASES, ids=[c["type"] for c in JOINT_CASES])
def test_joint_coordinates_follow_docs(case):
    rng = np.random.default_rng(sum(map(ord, case["type"])))
    a = unit(rng.normal(size=3))
    jt = {"name": "J", "bodies": ["b1", "b2"], "point": rng.uniform(-1, 1, 3).tolist(),
          "axis": a.tolist(), **case}
    if case["type"] == "U":
        jt["axis2"] = perp(rng, a).tolist()
    com1, com2 = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    spec = {"bodies": [{"name": "b1", "mass": 1.0, "com": com1.tolist(),
                        "inertia": inertia_list(random_inertia(rng))},
                       {"name": "b2", "mass": 1.0, "com": com2.tolist(),
                        "inertia": inertia_list(random_inertia(rng))}],
            "joints": [jt]}
    lk = LinkageAbsolute(spec)
    names = lk.coordinate_names
    q0 = dict(zip(names, rng.uniform(-1.2, 1.2, len(names))))
    qd = dict(zip(names, rng.uniform(-2, 2, len(names))))
    if case["type"] == "H":
        q0["J_s"] = jt["lead"] / (2 * np.pi) * q0["J_r"]
        qd["J_s"] = jt["lead"] / (2 * np.pi) * qd["J_r"]
    R1_0, r1_0 = random_rotation(rng), rng.uniform(-1, 1, 3)
    w1, v1 = rng.normal(size=3), rng.normal(size=3)
    p = np.asarray(jt["point"])

    def poses_at(t):
        R1 = rot(w1, np.linalg.norm(w1) * t) @ R1_0
        r1 = r1_0 + v1 * t
        qt = {k: q0[k] + qd[k] * t for k in names}
        Rrel, slide = relative_motion(jt, qt)
        p1w = r1 + R1 @ (p - com1)
        return {"b1": (R1, r1), "b2": (R1 @ Rrel, p1w + R1 @ (Rrel @ (com2 - p) + slide * a))}

    poses = poses_at(0.0)
    h = 1e-6
    pp, pm = poses_at(h), poses_at(-h)
    twists = {}
    for nm in ("b1", "b2"):
        Rd = (pp[nm][0] - pm[nm][0]) / (2 * h)
        W = Rd @ poses[nm][0].T
        twists[nm] = ((pp[nm][1] - pm[nm][1]) / (2 * h), np.array([W[2, 1], W[0, 2], W[1, 0]]))
    assert np.max(np.abs(lk.residual_vector(poses))) < 1e-14
    assert np.max(np.abs(lk.velocity_matrix(poses) @ stacked(lk, twists))) < 1e-8
    coords = lk.joint_coordinates(poses, twists)
    for k in names:
        assert coords[k][0] == pytest.approx(q0[k], abs=1e-12), k
        assert coords[k][1] == pytest.approx(qd[k], abs=1e-8), k


# ---------------------------------------------------------------------------
# a spatial two-loop mechanism with every joint type
# ---------------------------------------------------------------------------


def every_joint_spec(rng, conservative=False) -> dict:
    def body(name):
        m = float(rng.uniform(0.5, 2.0))
        return {"name": name, "mass": m, "com": rng.uniform(-0.5, 0.5, 3).tolist(),
                "inertia": inertia_list(random_inertia(rng, m))}

    def pt():
        return rng.uniform(-0.5, 0.5, 3).tolist()

    def ax():
        return unit(rng.normal(size=3))

    damp = 0.0 if conservative else 1.0
    a3 = ax()
    joints = [
        {"name": "J1", "type": "C", "bodies": ["ground", "b1"], "point": pt(),
         "axis": ax().tolist()},
        {"name": "J2", "type": "H", "bodies": ["b1", "b2"], "point": pt(), "axis": ax().tolist(),
         "lead": 0.2, "stiffness": 2.0, "damping": 0.3 * damp, "q0": 0.1},
        {"name": "J3", "type": "U", "bodies": ["b2", "b3"], "point": pt(), "axis": a3.tolist(),
         "axis2": perp(rng, a3).tolist()},
        {"name": "J4", "type": "S", "bodies": ["b3", "ground"], "point": pt()},
        {"name": "J5", "type": "P", "bodies": ["ground", "b4"], "point": pt(),
         "axis": ax().tolist(),
         "q_ref": 0.2, "stiffness": "kP", "damping": 0.5 * damp, "q0": -0.1},
        {"name": "J6", "type": "fixed", "bodies": ["b4", "b5"], "point": pt()},
        {"name": "J7", "type": "S", "bodies": ["b5", "b6"], "point": pt()},
        {"name": "J8", "type": "S", "bodies": ["b6", "b2"], "point": pt()},
        {"name": "J9", "type": "R", "bodies": ["b7", "b5"], "point": pt(), "axis": ax().tolist(),
         "q_ref": -0.4, "stiffness": 1.5, "damping": 0.2 * damp, "q0": 0.3},
    ]
    springs = [
        {"name": "s1", "bodies": ["b1", "b4"], "points": [pt(), pt()], "stiffness": 20.0,
         "damping": 0.7 * damp, "length0": 0.3, "force": 2.0},
        {"name": "s2", "bodies": ["ground", "b6"], "points": [pt(), pt()], "stiffness": "ks",
         "damping": 0.4 * damp, "force": -1.0},
    ]
    return {"mechanism": {"name": "every", "family": "linkage",
                          "gravity": (rng.normal(size=3) * 5).tolist()},
            "parameters": {"kP": 30.0, "ks": 15.0},
            "bodies": [body(f"b{i}") for i in range(1, 8)], "joints": joints, "springs": springs}


DRIVES = {"J1_s": 0.7, "J1_r": -0.4, "J2_s": 1.1, "J2_r": 0.3, "J3_1": 0.5, "J3_2": -0.6,
          "J4_x": 0.2, "J4_y": -0.3, "J4_z": 0.4, "J5": 1.5, "J7_x": -0.2, "J7_y": 0.1,
          "J7_z": 0.3, "J8_x": 0.25, "J8_y": -0.15, "J8_z": 0.05, "J9": -0.8}


@pytest.fixture(scope="module")
def every_state():
    """The every-joint mechanism moved away from its reference pose by a short simulation."""
    rng = np.random.default_rng(11)
    spec = every_joint_spec(rng)
    lk = LinkageAbsolute(spec)
    poses = lk.reference_poses()
    assert lk.nrows == 38
    res0 = lk.accelerations(poses, lk.zero_twists())
    assert res0["rank"] == 38 and res0["reactions_unique"]
    twists = lk.project_twists(poses, unstacked(lk, rng.normal(size=42)))
    sol = solve_ivp(lk.rhs, (0.0, 0.3), lk.pack(poses, twists), method="DOP853", rtol=1e-11,
                    atol=1e-12, args=(DRIVES,))
    poses, twists = lk.unpack(sol.y[:, -1])
    poses = {k: (R, r) for k, (R, r) in poses.items()}
    twists = lk.project_twists(poses, twists)
    assert np.max(np.abs(lk.residual_vector(poses))) < 1e-9
    return spec, lk, poses, twists


def test_every_joint_second_order_closure(every_state):
    """Along r + h v + h^2/2 a, exp(h w + h^2/2 alpha) R the position constraints stay 0 to
    O(h^3): the acceleration-level rows (and their bias) are the true second derivatives."""
    spec, lk, poses, twists = every_state
    res = lk.accelerations(poses, twists, DRIVES)
    accs = {nm: (res["com_acc"][nm], res["ang_acc"][nm]) for nm in poses}
    zero = {nm: (np.zeros(3), np.zeros(3)) for nm in poses}
    h = 1e-3

    def second(acc):
        rp = lk.residual_vector(move(poses, twists, h, acc))
        rm = lk.residual_vector(move(poses, twists, -h, acc))
        return (rp + rm - 2 * lk.residual_vector(poses)) / h**2

    d2 = second(accs)           # Phi'' + O(h^2) (8.5e-5 seen)
    h /= 2
    d2_half = second(accs)
    d2_free = second(zero)      # without the accelerations: what the check must cancel
    assert np.max(np.abs(d2_free)) > 0.1
    assert np.max(np.abs(d2)) < 1e-3
    assert np.max(np.abs((4 * d2_half - d2) / 3)) < 1e-8        # Richardson: Phi'' = 0


def test_every_joint_jourdain(every_state):
    """delta_nu . (M nudot + w x I w) = applied virtual power for every admissible delta_nu,
    with the applied forces from finite differences of V (gravity, springs, joint springs)
    and of the joint coordinates / spring lengths (drives, dampers)."""
    spec, lk, poses, twists = every_state
    res = lk.accelerations(poses, twists, DRIVES)
    M = lk.mass_matrix(poses)
    inertial = M @ res["nudot"] + lk.gyroscopic(poses, twists)
    J = lk.velocity_matrix(poses)
    _, s, Vt = np.linalg.svd(J)
    N = Vt[int(np.sum(s > 1e-10 * s[0])):].T
    assert N.shape[1] == 4
    nu = stacked(lk, twists)
    bodies_ref = {b["name"]: b["com"] for b in lk.bodies}
    joints = {j["name"]: j for j in spec["joints"]}
    damp_q = {"J2_r": joints["J2"]["damping"], "J5": joints["J5"]["damping"],
              "J9": joints["J9"]["damping"]}

    def rate(fun, direction):
        tw = unstacked(lk, direction)
        return fd(lambda e: fun(move(poses, tw, e)))

    qdot = {k: rate(lambda p, k=k: lk.joint_coordinates(p)[k][0], nu) for k in lk.coordinate_names}
    Ldot = [rate(lambda p, s=s: spring_length(s, bodies_ref, p), nu) for s in spec["springs"]]
    for col in range(N.shape[1]):
        dnu = N[:, col]
        dq = {k: rate(lambda p, k=k: lk.joint_coordinates(p)[k][0], dnu)
              for k in lk.coordinate_names}
        dL = [rate(lambda p, s=s: spring_length(s, bodies_ref, p), dnu) for s in spec["springs"]]
        power = -rate(lk.potential_energy, dnu)
        power += sum(DRIVES[k] * dq[k] for k in DRIVES)
        power -= sum(c * qdot[k] * dq[k] for k, c in damp_q.items())
        power -= sum(s["damping"] * Ld * dLi for s, Ld, dLi in zip(spec["springs"], Ldot, dL))
        assert dnu @ inertial == pytest.approx(power, rel=1e-7, abs=1e-8)


def test_every_joint_conservative_simulation():
    rng = np.random.default_rng(12)
    lk = LinkageAbsolute(every_joint_spec(rng, conservative=True))
    poses = lk.reference_poses()
    twists = lk.project_twists(poses, unstacked(lk, rng.normal(size=42)))
    E0 = lk.kinetic_energy(poses, twists) + lk.potential_energy(poses)
    sol = solve_ivp(lk.rhs, (0.0, 0.5), lk.pack(poses, twists), method="DOP853", rtol=1e-11,
                    atol=1e-12, t_eval=np.linspace(0, 0.5, 6))
    assert sol.success
    for y in sol.y.T:
        p, t = lk.unpack(y)
        E = lk.kinetic_energy(p, t) + lk.potential_energy(p)
        assert E == pytest.approx(E0, rel=1e-8)
        assert np.max(np.abs(lk.residual_vector(p))) < 1e-8


# ---------------------------------------------------------------------------
# four-bar in an inclined plane: 4R (redundant) and RUSR, against Lagrange
# ---------------------------------------------------------------------------

FB = {"a": 0.3, "b": 1.0, "c": 0.8, "d": 0.9, "theta0": 0.7}


def fourbar_plane(theta, lib=np):
    """Closed-form four-bar in plane coordinates (u, w): A, B and the three link angles."""
    if lib is mpmath:
        a, b, c, d = (mpmath.mpf(FB[k]) for k in "abcd")
        cos, sin, sqrt, acos, atan2 = mpmath.cos, mpmath.sin, mpmath.sqrt, mpmath.acos, mpmath.atan2
    else:
        a, b, c, d = (FB[k] for k in "abcd")
        cos, sin, sqrt, acos, atan2 = np.cos, np.sin, np.sqrt, np.arccos, np.arctan2
    A = (a * cos(theta), a * sin(theta))
    Dx, Dy = d - A[0], -A[1]                           # A -> Q
    delta = sqrt(Dx * Dx + Dy * Dy)
    alpha = acos((b * b + delta * delta - c * c) / (2 * b * delta))
    base = atan2(Dy, Dx)
    phi_c = base + alpha                                # coupler angle (the "upper" branch)
    B = (A[0] + b * cos(phi_c), A[1] + b * sin(phi_c))
    phi_r = atan2(B[1], B[0] - d)
    return A, B, (theta, phi_c, phi_r)


def fourbar_specs(rng):
    """(spec_4R, spec_RUSR, frame) for the same four-bar embedded in a random plane."""
    Rp = random_rotation(rng)
    P0 = rng.uniform(-1, 1, 3)
    eu, ew, n = Rp[:, 0], Rp[:, 1], Rp[:, 2]

    def X(uw, off=0.0):
        return P0 + uw[0] * eu + uw[1] * ew + off * n

    A, B, _ = fourbar_plane(FB["theta0"])
    O, Q = (0.0, 0.0), (FB["d"], 0.0)
    coms = {"crank": X((0.5 * A[0] + 0.03, 0.5 * A[1] - 0.02), 0.05),
            "coupler": X((A[0] + 0.4 * (B[0] - A[0]) + 0.05, A[1] + 0.4 * (B[1] - A[1]) + 0.1),
                         -0.1),
            "rocker": X((Q[0] + 0.6 * (B[0] - Q[0]), 0.6 * B[1]), 0.02)}
    masses = {"crank": 0.6, "coupler": 1.4, "rocker": 1.0}
    bodies = [{"name": nm, "mass": masses[nm], "com": coms[nm].tolist(),
               "inertia": inertia_list(random_inertia(rng, masses[nm]))} for nm in coms]
    g = rng.normal(size=3) * 4
    common = {
        "mechanism": {"name": "fourbar", "family": "linkage", "gravity": g.tolist()},
        "bodies": bodies,
        "springs": [{"name": "sp", "bodies": ["ground", "coupler"],
                     "points": [X((0.4, 1.2), 0.1).tolist(),
                                X((0.5 * (A[0] + B[0]), 0.5 * (A[1] + B[1])), 0.0).tolist()],
                     "stiffness": 25.0, "damping": 0.8, "length0": 0.5, "force": 1.5}],
    }
    jO = {"name": "pivO", "type": "R", "bodies": ["ground", "crank"], "point": X(O).tolist(),
          "axis": n.tolist(), "q_ref": FB["theta0"], "stiffness": 2.0, "damping": 0.15, "q0": 0.2}
    jQ = {"name": "pivQ", "type": "R", "bodies": ["rocker", "ground"], "point": X(Q).tolist(),
          "axis": (-n).tolist()}
    AB = unit(X(B) - X(A))
    spec4 = copy.deepcopy(common)
    spec4["joints"] = [jO, {"name": "pinA", "type": "R", "bodies": ["crank", "coupler"],
                            "point": X(A).tolist(), "axis": n.tolist()},
                       {"name": "pinB", "type": "R", "bodies": ["coupler", "rocker"],
                        "point": X(B).tolist(), "axis": n.tolist()}, jQ]
    specU = copy.deepcopy(common)
    specU["joints"] = [jO, {"name": "pinA", "type": "U", "bodies": ["crank", "coupler"],
                            "point": X(A).tolist(), "axis": n.tolist(),
                            "axis2": np.cross(n, AB).tolist()},
                       {"name": "pinB", "type": "S", "bodies": ["coupler", "rocker"],
                        "point": X(B).tolist()}, jQ]
    return spec4, specU, (P0, eu, ew, n)


def fourbar_lagrange(spec, frame, theta, thetad, tau):
    """theta_dd from T = 1/2 m(theta) thetad^2 with the closed-form kinematics (mpmath), and
    every body's pose, twist and accelerations as functions of (theta, thetad, theta_dd)."""
    mpmath.mp.dps = 30
    P0, eu, ew, n = (np.asarray(v, float) for v in frame)
    bodies = {b["name"]: b for b in spec["bodies"]}
    pivots = {"crank": lambda A, B: (0, 0), "coupler": lambda A, B: A,
              "rocker": lambda A, B: (FB["d"], 0)}
    idx = {"crank": 0, "coupler": 1, "rocker": 2}
    ref_A, ref_B, ref_ang = fourbar_plane(mpmath.mpf(FB["theta0"]), mpmath)

    def body_uw(nm, th):
        """(delta angle, COM as (u, w, n-offset)) of a body at crank angle th."""
        A, B, ang = fourbar_plane(th, mpmath)
        dphi = ang[idx[nm]] - ref_ang[idx[nm]]
        com = np.asarray(bodies[nm]["com"], float) - P0
        cu, cw, cn = com @ eu, com @ ew, com @ n
        pr = pivots[nm](ref_A, ref_B)
        pc = pivots[nm](A, B)
        du, dw = mpmath.mpf(cu) - pr[0], mpmath.mpf(cw) - pr[1]
        return dphi, (pc[0] + mpmath.cos(dphi) * du - mpmath.sin(dphi) * dw,
                      pc[1] + mpmath.sin(dphi) * du + mpmath.cos(dphi) * dw, cn)

    def world(uwn):
        return P0 + float(uwn[0]) * eu + float(uwn[1]) * ew + float(uwn[2]) * n

    th = mpmath.mpf(theta)
    g = np.asarray(spec["mechanism"]["gravity"])
    sp = spec["springs"][0]
    jO = spec["joints"][0]

    def spring_L(t):
        dphi = body_uw("coupler", t)[0]
        # the spring's coupler point, moved like the coupler
        A, B, _ = fourbar_plane(t, mpmath)
        Pw = np.asarray(sp["points"][1], float) - P0
        du, dw = mpmath.mpf(Pw @ eu) - ref_A[0], mpmath.mpf(Pw @ ew) - ref_A[1]
        pu = A[0] + mpmath.cos(dphi) * du - mpmath.sin(dphi) * dw
        pw = A[1] + mpmath.sin(dphi) * du + mpmath.cos(dphi) * dw
        G = np.asarray(sp["points"][0], float) - P0
        return mpmath.sqrt((pu - G @ eu) ** 2 + (pw - G @ ew) ** 2 + (Pw @ n - G @ n) ** 2)

    def V(t):
        v = mpmath.mpf(0)
        for nm in bodies:
            _, c = body_uw(nm, t)
            gu, gw, gn = g @ eu, g @ ew, g @ n
            v -= bodies[nm]["mass"] * (gu * c[0] + gw * c[1] + gn * c[2])
        v += 0.5 * jO["stiffness"] * (jO["q_ref"] + t - FB["theta0"] - jO["q0"]) ** 2
        L = spring_L(t)
        v += 0.5 * sp["stiffness"] * (L - sp["length0"]) ** 2 - sp["force"] * L
        return v

    mass, dmass = mpmath.mpf(0), mpmath.mpf(0)
    derivs = {}
    for nm in bodies:
        I = np.asarray(bodies[nm]["inertia"], float)
        It = np.array([[I[0], I[3], I[4]], [I[3], I[1], I[5]], [I[4], I[5], I[2]]])
        Inn = float(n @ It @ n)
        d1 = [mpmath.diff(lambda t, i=i: body_uw(nm, t)[1][i], th) for i in range(2)]
        d2 = [mpmath.diff(lambda t, i=i: body_uw(nm, t)[1][i], th, 2) for i in range(2)]
        f1 = mpmath.diff(lambda t: body_uw(nm, t)[0], th)
        f2 = mpmath.diff(lambda t: body_uw(nm, t)[0], th, 2)
        m = bodies[nm]["mass"]
        mass += m * (d1[0] ** 2 + d1[1] ** 2) + Inn * f1 ** 2
        dmass += 2 * m * (d1[0] * d2[0] + d1[1] * d2[1]) + 2 * Inn * f1 * f2
        derivs[nm] = (d1, d2, f1, f2)
    dV = mpmath.diff(V, th)
    dL = mpmath.diff(spring_L, th)
    Qnc = tau - jO["damping"] * thetad - sp["damping"] * dL**2 * thetad
    thdd = (Qnc - dV - 0.5 * dmass * thetad**2) / mass

    poses, twists, accs = {}, {}, {}
    for nm in bodies:
        dphi, c = body_uw(nm, th)
        d1, d2, f1, f2 = derivs[nm]
        R = rot(n, float(dphi))
        poses[nm] = (R, world(c))
        vel = float(d1[0] * thetad) * eu + float(d1[1] * thetad) * ew
        acc = (float(d2[0] * thetad**2 + d1[0] * thdd) * eu
               + float(d2[1] * thetad**2 + d1[1] * thdd) * ew)
        twists[nm] = (vel, float(f1 * thetad) * n)
        accs[nm] = (acc, float(f2 * thetad**2 + f1 * thdd) * n)
    return float(thdd), poses, twists, accs


@pytest.mark.parametrize("theta, thetad", [(0.7, 0.0), (2.1, 3.0), (-2.5, -4.0)])
def test_fourbar_against_lagrange(theta, thetad):
    rng = np.random.default_rng(5)
    spec4, specU, frame = fourbar_specs(rng)
    tau = 0.9
    thdd, poses, twists, accs = fourbar_lagrange(spec4, frame, theta, thetad, tau)
    results = {}
    for label, spec, rank in (("4R", spec4, 17), ("RUSR", specU, 17)):
        lk = LinkageAbsolute(spec)
        assert np.max(np.abs(lk.residual_vector(poses))) < 1e-13, label
        near = {"pivO": theta}                  # theta = -2.5 is 3.2 rad from the reference
        res = lk.accelerations(poses, twists, {"pivO": tau}, near=near)
        assert res["rank"] == rank
        assert res["reactions_unique"] == (label == "RUSR")
        assert lk.joint_coordinates(poses, twists, near)["pivO"][0] == pytest.approx(theta)
        assert lk.joint_coordinates(poses)["pivO"][0] == pytest.approx(
            theta + 2 * np.pi * (theta < FB["theta0"] - np.pi))
        for nm, (a, al) in accs.items():
            np.testing.assert_allclose(res["com_acc"][nm], a, atol=1e-10 * (1 + abs(thdd)))
            np.testing.assert_allclose(res["ang_acc"][nm], al, atol=1e-10 * (1 + abs(thdd)))
        # energy rate: dT/dt + dV/dt = drive + damper power
        dV = fd(lambda e: lk.potential_energy(move(poses, twists, e), near))
        refs = {b["name"]: b["com"] for b in lk.bodies}
        Ld = fd(lambda e: spring_length(spec["springs"][0], refs, move(poses, twists, e)))
        power = (tau * thetad - spec["joints"][0]["damping"] * thetad**2
                 - spec["springs"][0]["damping"] * Ld**2)
        assert kinetic_rate(lk, poses, twists, res) + dV == pytest.approx(power, abs=1e-8)
        results[label] = res
    # determinate reactions agree: the in-plane forces (the 4R's free wrenches are out of plane)
    _, eu, ew, n = frame
    for j in ("pivO", "pinA", "pinB", "pivQ"):
        basis = results["4R"]["reactions"][j]["indeterminate"]
        assert basis.shape[1] > 0
        inplane = np.zeros((6, 2))
        inplane[:3, 0], inplane[:3, 1] = eu, ew
        assert np.max(np.abs(basis.T @ inplane)) < 1e-9
        for e in (eu, ew):
            assert results["4R"]["reactions"][j]["force"] @ e == pytest.approx(
                results["RUSR"]["reactions"][j]["force"] @ e, abs=1e-9)


# ---------------------------------------------------------------------------
# redundant double parallelogram
# ---------------------------------------------------------------------------


def double_parallelogram():
    L, gy = 0.5, -9.81
    cranks = [{"name": f"crank{i}", "mass": 0.5 + 0.3 * i, "com": [float(i), 0.3 + 0.05 * i, 0.0],
               "inertia": [0.02, 0.01, 0.01 + 0.005 * i, 0.0, 0.0, 0.0]} for i in range(3)]
    coupler = {"name": "coupler", "mass": 2.0, "com": [1.2, 0.55, 0.0],
               "inertia": [0.1, 0.5, 0.6, 0.0, 0.0, 0.0]}
    joints = [{"name": f"G{i}", "type": "R", "bodies": ["ground", f"crank{i}"],
               "point": [float(i), 0.0, 0.0], "axis": [0.0, 0.0, 1.0], "q_ref": np.pi / 2}
              for i in range(3)]
    joints += [{"name": f"T{i}", "type": "R", "bodies": [f"crank{i}", "coupler"],
                "point": [float(i), L, 0.0], "axis": [0.0, 0.0, 1.0]} for i in range(3)]
    return {"mechanism": {"name": "dp", "family": "linkage", "gravity": [0.0, gy, 0.0]},
            "bodies": cranks + [coupler], "joints": joints}, L, gy


def test_redundant_double_parallelogram():
    spec, L, gy = double_parallelogram()
    lk = LinkageAbsolute(spec)
    th, thd, tau = 0.4, 1.7, 2.0                 # crank rotation from the reference (upright)
    poses, twists = {}, {}
    R = rot([0, 0, 1], th)
    w = np.array([0.0, 0.0, thd])
    tip0 = np.array([0.0, L, 0.0])
    shift = R @ tip0 - tip0                       # the coupler translates with the crank tips
    shift_v = np.cross(w, R @ tip0)
    for i in range(3):
        b = spec["bodies"][i]
        rho = R @ (np.array(b["com"]) - [i, 0, 0])
        poses[b["name"]] = (R, np.array([i, 0.0, 0.0]) + rho)
        twists[b["name"]] = (np.cross(w, rho), w)
    poses["coupler"] = (E3, np.array(spec["bodies"][3]["com"]) + shift)
    twists["coupler"] = (shift_v, np.zeros(3))
    assert np.max(np.abs(lk.residual_vector(poses))) < 1e-15

    # closed form: one coordinate, constant generalised inertia (the coupler translates)
    Itot, dV = 0.0, 0.0
    for i in range(3):
        b = spec["bodies"][i]
        s = np.array(b["com"]) - [i, 0, 0]
        Itot += b["inertia"][2] + b["mass"] * (s[0] ** 2 + s[1] ** 2)
        dV -= b["mass"] * gy * np.cross([0, 0, 1], R @ s)[1]
    mc = spec["bodies"][3]["mass"]
    Itot += mc * L * L
    dV -= mc * gy * np.cross([0, 0, 1], R @ tip0)[1]
    thdd = (tau - dV) / Itot

    drives = {"G1": tau}
    ref = lk.accelerations(poses, twists, drives)
    assert (ref["rank"], ref["rows"], ref["reactions_unique"]) == (23, 30, False)
    alpha = np.array([0.0, 0.0, thdd])
    for i in range(3):
        np.testing.assert_allclose(ref["ang_acc"][f"crank{i}"], alpha, atol=1e-12)
    a_c = np.cross(alpha, R @ tip0) + np.cross(w, np.cross(w, R @ tip0))
    np.testing.assert_allclose(ref["com_acc"]["coupler"], a_c, atol=1e-12)
    np.testing.assert_allclose(ref["ang_acc"]["coupler"], 0.0, atol=1e-12)

    J = lk.velocity_matrix(poses)
    rng = np.random.default_rng(0)
    orders = [None, list(range(29, -1, -1)), list(rng.permutation(30)), list(rng.permutation(30))]
    sols = []
    for order in orders:
        keep = lk.independent_rows(poses, order)
        assert len(keep) == 23
        sols.append(lk.accelerations(poses, twists, drives, keep_rows=keep))
    for s in sols:
        np.testing.assert_allclose(s["nudot"], ref["nudot"], atol=1e-11)
        np.testing.assert_allclose(J.T @ s["multipliers"], J.T @ ref["multipliers"], atol=1e-10)
    # the multipliers and the in-plane split between the three cranks depend on the choice
    lams = np.array([s["multipliers"] for s in [ref] + sols])
    assert np.max(np.abs(lams - lams[0])) > 1.0
    split = [[s["reactions"][f"G{i}"]["force"][0] for i in range(3)] for s in [ref] + sols]
    assert np.max(np.ptp(np.array(split), axis=0)) > 0.1
    # ... but not the determinate parts, nor the total ground reaction (momentum balance)
    total_ext = sum(b["m"] * (ref["com_acc"][b["name"]] - np.array([0, gy, 0]))
                    for b in lk.bodies)
    for s in [ref] + sols:
        tot = sum(s["reactions"][f"G{i}"]["force"] for i in range(3))
        np.testing.assert_allclose(tot, total_ext, atol=1e-10)
        for j, r in s["reactions"].items():
            B = ref["reactions"][j]["indeterminate"]
            W = np.concatenate([r["force"], r["moment"]])
            W0 = np.concatenate([ref["reactions"][j]["force"], ref["reactions"][j]["moment"]])
            np.testing.assert_allclose(W - B @ (B.T @ W), W0 - B @ (B.T @ W0), atol=1e-9)


def test_unknown_drive_is_an_error():
    spec, _, _ = double_parallelogram()
    lk = LinkageAbsolute(spec)
    with pytest.raises(KeyError):
        lk.accelerations(lk.reference_poses(), lk.zero_twists(), {"nope": 1.0})
