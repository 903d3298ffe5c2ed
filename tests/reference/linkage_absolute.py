"""Absolute-coordinate (body Newton-Euler + multipliers) reference for the ``linkage`` family.

Written from first principles with numpy only, independent of the generator and the runtime:
every body is free (6 coordinates: COM position and orientation), every joint of the spec,
tree or cut alike, is a constraint, and the accelerations come from the KKT system

    [ M   -J^T ] [ nudot  ]   [ Q      ]
    [ J    0   ] [ lambda ] = [ -J'nu  ]      nu = (v_1, w_1, v_2, w_2, ...)  (world frame)

with M = blockdiag(m_b 1, I_b) (I_b = R_b I_ref R_b^T about the COM), Q the applied forces and
torques about each COM minus the gyroscopic terms w x I w, and J nudot + J'nu = 0 the
acceleration-level joint constraints. It is solved by the null-space method on the SVD of J
(nudot = -pinv(J) J'nu + N z, N^T M N z = N^T (Q - M nudot_p), N = null(J)), then
J^T lambda = M nudot - Q for the minimum-norm lambda; or, with ``keep_rows``, by the KKT
matrix restricted to chosen independent rows (a second, independent path).

Spec and conventions: ``docs/linkage.md``. Geometry is given at the reference pose in frame 0;
body b's pose is (R_b, r_b): x_world = r_b + R_b (x_ref - com_ref_b), so R_b = 1 and r_b =
com_ref_b at the reference pose; its twist is (v_b, w_b), COM velocity and angular velocity in
the world frame. The ground has R = 1, r = 0 (its "com" is the origin).

Joint constraints (my formulation, not the docs' cut-joint rows). For a joint between body 1
(first) and body 2 (second) at point p (frame 0), let p2 be body 2's material point at p (moved
with body 2) and
    v_rel = (velocity of p2) - (velocity of body 1's material point currently at p2),
    w_rel = w_2 - w_1.
Every constraint row is d . v_rel + c . w_rel = 0 with world vectors d, c (fixed in body 1
unless noted; n1 = R_1 axis, t1, t2 = R_1 times two unit vectors normal to the axis; e1, e2, e3 =
the columns of R_1):

    R      d = e1, e2, e3;  c = t1, t2                           (5 rows)
    P      d = t1, t2;      c = e1, e2, e3                       (5 rows)
    C      d = t1, t2;      c = t1, t2                           (4 rows)
    H      as C, plus d = n1 with c = -lead/(2 pi) n1             (5 rows)
    U      d = e1, e2, e3;  c = a1 x b2 (a1 = R_1 axis, b2 = R_2 axis2)   (4 rows)
    S      d = e1, e2, e3                                         (3 rows)
    fixed  d = e1, e2, e3;  c = e1, e2, e3                        (6 rows)

Each row is the exact time derivative of a position constraint ((p2 - p1) . d = 0, d fixed in
body 1, for the d rows; t_k . R_2 axis = 0 for R/C/H, a1 . b2 = 0 for U, a relative rotation
for P/fixed; the H row is s' = lead/(2 pi) r'), so holonomic. Differentiating once more gives
the bias J'nu = d' . v_rel + d . [w2 x (w2 x rho2) - w1 x (p2dot - v1)] + c' . w_rel with
rho2 = p2 - r2 (derivation in :meth:`LinkageAbsolute._joint_rows`).

The multiplier of a row is the reaction it transmits: on body 2 a force sum(lambda_k d_k)
applied at p2 plus a moment sum(lambda_k c_k); on body 1 the opposite at the same point. So
the reaction wrench of a joint (on its second body, about p2, world frame) is read off the
multipliers directly. With redundant constraints (rank J < rows) the accelerations are still
unique (M > 0 on null J) but the multipliers are not: the default solve returns the
minimum-norm multipliers, ``keep_rows`` solves with a chosen independent subset instead (the
dropped rows get 0), and every reaction carries a basis of the wrench directions it cannot
determine.

Joint coordinates (docs' table) from the relative pose R_rel = R_1^T R_2 (identity at the
reference): R: angle about the axis in (-pi, pi] plus q_ref; P: (p2 - p1) . n1 plus q_ref;
C/H: slide as P, rotation as R (H: q_ref, if given, is the rotation's value at the reference and
the slide's is lead/(2 pi) q_ref; the generator's spec reader forbids q_ref on H and C);
U: R_rel = Rot(axis, q1) Rot(axis2, q2); S: R_rel = Rx(qx) Ry(qy) Rz(qz)
(intrinsic, starting from the first body's axes, = frame 0's at the reference pose).

Generalised forces on coordinates (drives and joint spring-dampers Q = -k (q - q0) - c qd) are
applied as the equal and opposite wrench whose power is sum(Q_i qdot_i): R torque tau n1 on body 2
(-tau n1 on body 1); P force F n1 at p2; C/H force along and torque about n1 (an H joint's
spring-damper acts on its rotation coordinate ``<j>_r``); U moment tau1 a1 + tau2 b2 (a1 _|_ b2);
S moment m with m . k_i = tau_i for the three Euler axes k_i.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

Array = NDArray[np.float64]

E3 = np.eye(3)
RANK_TOL = 1e-10          # relative singular-value tolerance for the rank of J
JOINT_TYPES = ("R", "P", "C", "H", "U", "S", "fixed")


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------


def cross(a, b) -> Array:
    """a x b for 3-vectors (np.cross is slow on single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def skew(a) -> Array:
    a = np.asarray(a, dtype=float)
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def rot(axis, angle: float) -> Array:
    """Active rotation by ``angle`` about the unit vector ``axis`` (Rodrigues)."""
    k = np.asarray(axis, dtype=float)
    k = k / np.linalg.norm(k)
    K = skew(k)
    return E3 + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _unit(v) -> Array:
    v = np.asarray(v, dtype=float)
    n = np.linalg.norm(v)
    if n == 0.0:
        raise ValueError("zero axis")
    return v / n


def _normals(a: Array) -> tuple[Array, Array]:
    """Two unit vectors t1, t2 with (t1, t2, a) right-handed orthonormal."""
    k = int(np.argmin(np.abs(a)))
    t1 = _unit(cross(a, E3[k]))
    return t1, cross(a, t1)


def _angle_about(Rrel: Array, a: Array) -> float:
    """Angle of a rotation Rrel = Rot(a, theta) about the unit a, in (-pi, pi]."""
    s = 0.5 * a @ np.array([Rrel[2, 1] - Rrel[1, 2], Rrel[0, 2] - Rrel[2, 0],
                            Rrel[1, 0] - Rrel[0, 1]])
    c = 0.5 * (np.trace(Rrel) - 1.0)
    return math.atan2(s, c)


def _rotvec(Rm: Array) -> Array:
    """Rotation vector (axis * angle) of a rotation matrix."""
    from scipy.spatial.transform import Rotation
    return Rotation.from_matrix(Rm).as_rotvec()


def _orth(B: Array, tol: float) -> Array:
    """Orthonormal basis of range(B) (columns)."""
    if B.size == 0:
        return np.zeros((B.shape[0], 0))
    U, s, _ = np.linalg.svd(B, full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        return np.zeros((B.shape[0], 0))
    return U[:, s > tol * max(1.0, s[0])]


# ---------------------------------------------------------------------------
# the reference
# ---------------------------------------------------------------------------


class LinkageAbsolute:
    """Body Newton-Euler + multipliers for a ``linkage`` spec dict (parsed TOML).

    ``params`` overrides / extends the spec's ``[parameters]`` table (used wherever a force
    element's number is given as a parameter name).
    """

    def __init__(self, spec: Mapping[str, Any], params: Mapping[str, float] | None = None):
        self.spec = spec
        self.params = dict(spec.get("parameters", {}) or {})
        if params:
            self.params.update(params)
        mech = spec.get("mechanism", {}) or {}
        self.gravity = np.array(mech.get("gravity", spec.get("gravity", [0.0, 0.0, 0.0])),
                                dtype=float)

        self.bodies: list[dict] = []
        self.index: dict[str, int] = {}
        for b in spec.get("bodies", []):
            name = b["name"]
            if name == "ground" or name in self.index:
                raise ValueError(f"bad or repeated body name {name!r}")
            Ixx, Iyy, Izz, Ixy, Ixz, Iyz = (self._num(x) for x in b.get("inertia", [0.0] * 6))
            self.index[name] = len(self.bodies)
            self.bodies.append({
                "name": name,
                "m": self._num(b["mass"]),
                "com": np.array(b.get("com", [0.0, 0.0, 0.0]), dtype=float),
                "I": np.array([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]),
            })
        self.nb = len(self.bodies)

        self.joints: list[dict] = []
        self.row_joint: list[str] = []       # joint name of every constraint row
        self.coordinate_names: list[str] = []
        for j in spec.get("joints", []):
            jt = self._parse_joint(j)
            self.joints.append(jt)
            self.row_joint += [jt["name"]] * jt["nrows"]
            self.coordinate_names += jt["coords"]
        self.nrows = len(self.row_joint)
        self.angle_names = {c for jt in self.joints for c in jt["coords"]
                            if jt["type"] in ("R", "U", "S") or c.endswith("_r")}

        self.springs: list[dict] = []
        for s in spec.get("springs", []) or []:
            b1, b2 = (self._body(n) for n in s["bodies"])
            P1, P2 = (np.array(p, dtype=float) for p in s["points"])
            L0 = s.get("length0")
            self.springs.append({
                "name": s.get("name", f"spring{len(self.springs)}"),
                "b": (b1, b2),
                "s": (P1 - self._com(b1), P2 - self._com(b2)),
                "k": self._num(s.get("stiffness", 0.0)),
                "c": self._num(s.get("damping", 0.0)),
                "L0": float(np.linalg.norm(P2 - P1)) if L0 is None else self._num(L0),
                "F": self._num(s.get("force", 0.0)),
            })

    # -- parsing -------------------------------------------------------------

    def _num(self, x) -> float:
        if isinstance(x, str):
            if x not in self.params:
                raise KeyError(f"unknown parameter {x!r}")
            return float(self.params[x])
        return float(x)

    def _body(self, name: str) -> int:
        if name == "ground":
            return -1
        return self.index[name]

    def _com(self, b: int) -> Array:
        return np.zeros(3) if b < 0 else self.bodies[b]["com"]

    def _parse_joint(self, j: Mapping[str, Any]) -> dict:
        typ = j["type"]
        if typ not in JOINT_TYPES:
            raise ValueError(f"joint {j['name']}: unknown type {typ!r}")
        name = j["name"]
        b1, b2 = (self._body(n) for n in j["bodies"])
        p = np.array(j.get("point", [0.0, 0.0, 0.0]), dtype=float)
        jt: dict[str, Any] = {
            "name": name, "type": typ, "b": (b1, b2), "p": p,
            "s1": p - self._com(b1), "s2": p - self._com(b2),
            "q_ref": self._num(j.get("q_ref", 0.0)),
            "k": self._num(j.get("stiffness", 0.0)), "c": self._num(j.get("damping", 0.0)),
            "q0": self._num(j.get("q0", 0.0)),
        }
        if typ in ("R", "P", "C", "H", "U"):
            a = _unit(j["axis"])
            jt["a"] = a
            jt["t"] = _normals(a)
        if typ == "U":
            b = _unit(j["axis2"])
            if abs(a @ b) > 1e-9:
                raise ValueError(f"joint {name}: U axes not perpendicular at the reference pose")
            jt["a2"] = b
        jt["h"] = self._num(j.get("lead", 0.0)) / (2.0 * math.pi) if typ == "H" else 0.0
        jt["nrows"] = {"R": 5, "P": 5, "C": 4, "H": 5, "U": 4, "S": 3, "fixed": 6}[typ]
        jt["coords"] = {
            "R": [name], "P": [name], "C": [f"{name}_s", f"{name}_r"],
            "H": [f"{name}_s", f"{name}_r"], "U": [f"{name}_1", f"{name}_2"],
            "S": [f"{name}_x", f"{name}_y", f"{name}_z"], "fixed": [],
        }[typ]
        return jt

    # -- state access ----------------------------------------------------------

    def reference_poses(self) -> dict[str, tuple[Array, Array]]:
        """Every body at the reference pose: (R = 1, r = com_ref)."""
        return {b["name"]: (E3.copy(), b["com"].copy()) for b in self.bodies}

    def zero_twists(self) -> dict[str, tuple[Array, Array]]:
        return {b["name"]: (np.zeros(3), np.zeros(3)) for b in self.bodies}

    def _pose(self, poses, b: int) -> tuple[Array, Array]:
        if b < 0:
            return E3, np.zeros(3)
        R, r = poses[self.bodies[b]["name"]]
        return np.asarray(R, dtype=float), np.asarray(r, dtype=float)

    def _twist(self, twists, b: int) -> tuple[Array, Array]:
        if b < 0 or twists is None:
            return np.zeros(3), np.zeros(3)
        v, w = twists[self.bodies[b]["name"]]
        return np.asarray(v, dtype=float), np.asarray(w, dtype=float)

    def _joint_state(self, jt: dict, poses, twists) -> dict:
        """Positions and velocities of a joint's two sides (see the module docstring)."""
        b1, b2 = jt["b"]
        R1, r1 = self._pose(poses, b1)
        R2, r2 = self._pose(poses, b2)
        v1, w1 = self._twist(twists, b1)
        v2, w2 = self._twist(twists, b2)
        rho2 = R2 @ jt["s2"]
        p2 = r2 + rho2
        p1 = r1 + R1 @ jt["s1"]
        p2dot = v2 + cross(w2, rho2)
        v_rel = p2dot - v1 - cross(w1, p2 - r1)
        return {"R1": R1, "r1": r1, "R2": R2, "r2": r2, "v1": v1, "w1": w1, "v2": v2,
                "w2": w2, "rho2": rho2, "p1": p1, "p2": p2, "p2dot": p2dot,
                "v_rel": v_rel, "w_rel": w2 - w1}

    # -- joint rows --------------------------------------------------------------

    def _joint_rows(self, jt: dict, st: dict) -> list[tuple[Array, Array, Array, Array]]:
        """Rows (d, c, d', c') of a joint: d . v_rel + c . w_rel = 0.

        Time derivative of a row: d . v_rel' + c . w_rel' + d' . v_rel + c' . w_rel with
        v_rel' = [a2 + alpha2 x rho2 - a1 - alpha1 x (p2 - r1)] + w2 x (w2 x rho2)
                 - w1 x (p2dot - v1)
        (p2 - r1 changes at p2dot - v1; rho2 at w2 x rho2) and w_rel' = alpha2 - alpha1.
        Vectors fixed in body 1 have d' = w1 x d.
        """
        R1, R2, w1, w2 = st["R1"], st["R2"], st["w1"], st["w2"]
        z = np.zeros(3)
        typ = jt["type"]
        cols = [R1[:, i] for i in range(3)]

        def fixed1(d, c):     # both fixed in body 1
            return (d, c, cross(w1, d), cross(w1, c))

        rows = []
        if typ in ("R", "S", "U", "fixed"):
            rows += [fixed1(e, z) for e in cols]
        if typ in ("R", "C", "H"):
            rows += [fixed1(z, R1 @ t) for t in jt["t"]]
        if typ in ("P", "C", "H"):
            rows += [fixed1(R1 @ t, z) for t in jt["t"]]
        if typ in ("P", "fixed"):
            rows += [fixed1(z, e) for e in cols]
        if typ == "H":
            n1 = R1 @ jt["a"]
            rows.append(fixed1(n1, -jt["h"] * n1))
        if typ == "U":
            a1, b2 = R1 @ jt["a"], R2 @ jt["a2"]
            c = cross(a1, b2)
            cdot = cross(cross(w1, a1), b2) + cross(a1, cross(w2, b2))
            rows.append((z, c, z, cdot))
        assert len(rows) == jt["nrows"]
        return rows

    def constraint_system(self, poses, twists=None) -> tuple[Array, Array, list]:
        """J (rows x 6 nb), the bias J'nu (rows) and per joint its rows' (d, c) pairs."""
        J = np.zeros((self.nrows, 6 * self.nb))
        bias = np.zeros(self.nrows)
        per_joint = []
        i = 0
        for jt in self.joints:
            st = self._joint_state(jt, poses, twists)
            b1, b2 = jt["b"]
            lever1 = st["p2"] - st["r1"]
            acc_part = (cross(w := st["w2"], cross(w, st["rho2"]))
                        - cross(st["w1"], st["p2dot"] - st["v1"]))
            dc = []
            for d, c, dd, cd in self._joint_rows(jt, st):
                if b2 >= 0:
                    J[i, 6 * b2:6 * b2 + 3] += d
                    J[i, 6 * b2 + 3:6 * b2 + 6] += cross(st["rho2"], d) + c
                if b1 >= 0:
                    J[i, 6 * b1:6 * b1 + 3] -= d
                    J[i, 6 * b1 + 3:6 * b1 + 6] -= cross(lever1, d) + c
                bias[i] = dd @ st["v_rel"] + d @ acc_part + cd @ st["w_rel"]
                dc.append((d, c))
                i += 1
            per_joint.append((jt, st, dc))
        return J, bias, per_joint

    def velocity_matrix(self, poses) -> Array:
        """J: the velocity constraints J nu = 0."""
        return self.constraint_system(poses, None)[0]

    # -- position level ------------------------------------------------------

    def residual(self, poses) -> dict[str, Array]:
        """Position-level constraints of every joint (all ~0 for an assembled pose).

        R: p2 - p1 (3), t_k1 . n2 (2); P: (p2 - p1) . t_k1 (2), rotation vector of R_rel (3);
        C: (p2 - p1) . t_k1 (2), t_k1 . n2 (2); H: as C plus the screw relation
        (s - s_ref) - lead/(2 pi) (r - r_ref) reduced modulo the lead; U: p2 - p1 (3), a1 . b2;
        S: p2 - p1; fixed: p2 - p1, rotation vector of R_rel. ``residual_vector`` stacks them.
        """
        out = {}
        for jt in self.joints:
            st = self._joint_state(jt, poses, None)
            R1, R2 = st["R1"], st["R2"]
            dp = st["p2"] - st["p1"]
            typ = jt["type"]
            parts = []
            if typ in ("R", "U", "S", "fixed"):
                parts.append(dp)
            if typ in ("P", "C", "H"):
                parts.append(np.array([dp @ (R1 @ t) for t in jt["t"]]))
            if typ in ("R", "C", "H"):
                n2 = R2 @ jt["a"]
                parts.append(np.array([(R1 @ t) @ n2 for t in jt["t"]]))
            if typ in ("P", "fixed"):
                parts.append(_rotvec(R1.T @ R2))
            if typ == "U":
                parts.append(np.array([(R1 @ jt["a"]) @ (R2 @ jt["a2"])]))
            if typ == "H":
                n1 = R1 @ jt["a"]
                ds = dp @ n1
                dr = _angle_about(R1.T @ R2, jt["a"])
                res = ds - jt["h"] * dr
                lead = 2.0 * math.pi * jt["h"]
                if lead != 0.0:
                    res -= lead * round(res / lead)
                parts.append(np.array([res]))
            out[jt["name"]] = np.concatenate(parts)
        return out

    def residual_vector(self, poses) -> Array:
        return np.concatenate(list(self.residual(poses).values()))

    # -- joint coordinates ------------------------------------------------------

    def joint_coordinates(self, poses, twists=None, near: Mapping[str, float] | None = None
                          ) -> dict[str, tuple[float, float]]:
        """Every joint coordinate (docs' names) and its rate, from the relative pose/twist.

        Angles come out in (-pi, pi] from the reference (plus q_ref); ``near`` {name: value}
        picks, for the angles it names, the value 2 pi k away that is nearest (a pose cannot
        tell turns apart; joint springs need the true value).
        """
        out = {}
        for jt in self.joints:
            st = self._joint_state(jt, poses, twists)
            out.update(self._coords(jt, st, near))
        return out

    def _coords(self, jt: dict, st: dict, near: Mapping[str, float] | None = None
                ) -> dict[str, tuple[float, float]]:
        out = self._coords_raw(jt, st)
        if near:
            for k in self.angle_names.intersection(near).intersection(out):
                q, qd = out[k]
                out[k] = (near[k] + math.remainder(q - near[k], 2.0 * math.pi), qd)
        return out

    def _coords_raw(self, jt: dict, st: dict) -> dict[str, tuple[float, float]]:
        typ, name = jt["type"], jt["name"]
        R1, R2 = st["R1"], st["R2"]
        Rrel = R1.T @ R2
        wr, vr = st["w_rel"], st["v_rel"]
        if typ in ("R", "P", "C", "H"):
            n1 = R1 @ jt["a"]
            ang, angd = _angle_about(Rrel, jt["a"]), wr @ n1
            sl, sld = (st["p2"] - st["p1"]) @ n1, vr @ n1
            if typ == "R":
                return {name: (jt["q_ref"] + ang, angd)}
            if typ == "P":
                return {name: (jt["q_ref"] + sl, sld)}
            if typ == "C":
                return {f"{name}_s": (sl, sld), f"{name}_r": (ang, angd)}
            return {f"{name}_s": (jt["h"] * jt["q_ref"] + sl, sld),
                    f"{name}_r": (jt["q_ref"] + ang, angd)}
        if typ == "U":
            a, b = jt["a"], jt["a2"]
            Rb = Rrel @ b                        # = Rot(a, q1) b
            q1 = math.atan2(a @ cross(b, Rb), b @ Rb)
            Ra = Rrel.T @ a                      # = Rot(b, -q2) a
            q2 = -math.atan2(b @ cross(a, Ra), a @ Ra)
            a1, b2 = R1 @ a, R2 @ b
            return {f"{name}_1": (q1, wr @ a1), f"{name}_2": (q2, wr @ b2)}
        if typ == "S":
            qx, qy, qz = self._xyz(Rrel)
            K = self._euler_axes(R1, qx, qy)
            rates = np.linalg.solve(K, wr)
            return {f"{name}_x": (qx, rates[0]), f"{name}_y": (qy, rates[1]),
                    f"{name}_z": (qz, rates[2])}
        return {}

    @staticmethod
    def _xyz(Rr: Array) -> tuple[float, float, float]:
        """Rr = Rx(a) Ry(b) Rz(c)."""
        a = math.atan2(-Rr[1, 2], Rr[2, 2])
        b = math.atan2(Rr[0, 2], math.hypot(Rr[1, 2], Rr[2, 2]))
        c = math.atan2(-Rr[0, 1], Rr[0, 0])
        return a, b, c

    @staticmethod
    def _euler_axes(R1: Array, qx: float, qy: float) -> Array:
        """World axes of the three S coordinates (columns): x, turned y, twice-turned z."""
        Rx = rot(E3[0], qx)
        return np.column_stack([R1 @ E3[0], R1 @ Rx @ E3[1], R1 @ Rx @ rot(E3[1], qy) @ E3[2]])

    # -- forces ----------------------------------------------------------------

    def _add_wrench(self, Q: Array, b: int, F: Array, at: Array, poses, moment=None) -> None:
        if b < 0:
            return
        _, r = self._pose(poses, b)
        Q[6 * b:6 * b + 3] += F
        Q[6 * b + 3:6 * b + 6] += cross(at - r, F)
        if moment is not None:
            Q[6 * b + 3:6 * b + 6] += moment

    def _joint_generalised(self, jt: dict, st: dict, drives: Mapping[str, float],
                           coords: dict) -> tuple[Array, Array]:
        """(force at p2, moment) on body 2 from drives and the joint spring-damper."""
        typ, name = jt["type"], jt["name"]
        R1, R2 = st["R1"], st["R2"]
        f, m = np.zeros(3), np.zeros(3)

        def Q(cname: str, spring: bool) -> float:
            val = float(drives.get(cname, 0.0))
            if spring and (jt["k"] or jt["c"]):
                q, qd = coords[cname]
                val += -jt["k"] * (q - jt["q0"]) - jt["c"] * qd
            return val

        if typ in ("R", "P", "C", "H"):
            n1 = R1 @ jt["a"]
            if typ == "R":
                m += Q(name, True) * n1
            elif typ == "P":
                f += Q(name, True) * n1
            else:
                f += Q(f"{name}_s", False) * n1
                m += Q(f"{name}_r", typ == "H") * n1
        elif typ == "U":
            m += Q(f"{name}_1", False) * (R1 @ jt["a"]) + Q(f"{name}_2", False) * (R2 @ jt["a2"])
        elif typ == "S":
            tau = np.array([Q(f"{name}_{c}", False) for c in "xyz"])
            if np.any(tau):
                K = self._euler_axes(R1, coords[f"{name}_x"][0], coords[f"{name}_y"][0])
                m += np.linalg.solve(K.T, tau)
        return f, m

    def applied(self, poses, twists, drives: Mapping[str, float] | None = None,
                near: Mapping[str, float] | None = None) -> Array:
        """Q: applied forces and torques about the COMs (gravity, springs, joint forces)."""
        drives = dict(drives or {})
        unknown = set(drives) - set(self.coordinate_names)
        if unknown:
            raise KeyError(f"unknown drive coordinates {sorted(unknown)}")
        Q = np.zeros(6 * self.nb)
        for b, body in enumerate(self.bodies):
            Q[6 * b:6 * b + 3] += body["m"] * self.gravity
        for s in self.springs:
            (b1, b2), (s1, s2) = s["b"], s["s"]
            R1, r1 = self._pose(poses, b1)
            R2, r2 = self._pose(poses, b2)
            v1, w1 = self._twist(twists, b1)
            v2, w2 = self._twist(twists, b2)
            x1, x2 = r1 + R1 @ s1, r2 + R2 @ s2
            u = x2 - x1
            L = float(np.linalg.norm(u))
            if L == 0.0:
                continue
            u /= L
            Ld = u @ (v2 + cross(w2, x2 - r2) - v1 - cross(w1, x1 - r1))
            F2 = (-s["k"] * (L - s["L0"]) - s["c"] * Ld + s["F"]) * u
            self._add_wrench(Q, b2, F2, x2, poses)
            self._add_wrench(Q, b1, -F2, x1, poses)
        for jt in self.joints:
            st = self._joint_state(jt, poses, twists)
            coords = self._coords(jt, st, near)
            f, m = self._joint_generalised(jt, st, drives, coords)
            if np.any(f) or np.any(m):
                b1, b2 = jt["b"]
                self._add_wrench(Q, b2, f, st["p2"], poses, m)
                self._add_wrench(Q, b1, -f, st["p2"], poses, -m)
        return Q

    def mass_matrix(self, poses) -> Array:
        M = np.zeros((6 * self.nb, 6 * self.nb))
        for b, body in enumerate(self.bodies):
            R, _ = self._pose(poses, b)
            M[6 * b:6 * b + 3, 6 * b:6 * b + 3] = body["m"] * E3
            M[6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] = R @ body["I"] @ R.T
        return M

    def gyroscopic(self, poses, twists) -> Array:
        """w x (I w) per body (to be subtracted from the applied torques)."""
        g = np.zeros(6 * self.nb)
        for b, body in enumerate(self.bodies):
            R, _ = self._pose(poses, b)
            _, w = self._twist(twists, b)
            g[6 * b + 3:6 * b + 6] = cross(w, R @ body["I"] @ R.T @ w)
        return g

    # -- energies ----------------------------------------------------------------

    def kinetic_energy(self, poses, twists) -> float:
        T = 0.0
        for b, body in enumerate(self.bodies):
            R, _ = self._pose(poses, b)
            v, w = self._twist(twists, b)
            T += 0.5 * body["m"] * v @ v + 0.5 * w @ (R @ body["I"] @ R.T) @ w
        return float(T)

    def potential_energy(self, poses, near: Mapping[str, float] | None = None) -> float:
        """Gravity, point-to-point springs (1/2 k (L - L0)^2 - force L), joint springs."""
        V = 0.0
        for b, body in enumerate(self.bodies):
            _, r = self._pose(poses, b)
            V -= body["m"] * self.gravity @ r
        for s in self.springs:
            (b1, b2), (s1, s2) = s["b"], s["s"]
            R1, r1 = self._pose(poses, b1)
            R2, r2 = self._pose(poses, b2)
            L = float(np.linalg.norm(r2 + R2 @ s2 - r1 - R1 @ s1))
            V += 0.5 * s["k"] * (L - s["L0"]) ** 2 - s["F"] * L
        coords = self.joint_coordinates(poses, near=near)
        for jt in self.joints:
            if jt["k"] and jt["type"] in ("R", "P", "H"):
                cname = jt["name"] if jt["type"] != "H" else f"{jt['name']}_r"
                V += 0.5 * jt["k"] * (coords[cname][0] - jt["q0"]) ** 2
        return float(V)

    # -- dynamics ----------------------------------------------------------------

    def project_twists(self, poses, twists) -> dict[str, tuple[Array, Array]]:
        """The twists made consistent (closest in the M metric) with J nu = 0."""
        J = self.velocity_matrix(poses)
        nu = self._stack(twists)
        M = self.mass_matrix(poses)
        Jr = _orth(J.T, RANK_TOL).T             # independent rows
        Minv_JT = np.linalg.solve(M, Jr.T)
        nu = nu - Minv_JT @ np.linalg.solve(Jr @ Minv_JT, Jr @ nu)
        return self._unstack(nu)

    def _stack(self, twists) -> Array:
        return np.concatenate([np.concatenate(self._twist(twists, b)) for b in range(self.nb)])

    def _unstack(self, nu: Array) -> dict[str, tuple[Array, Array]]:
        return {body["name"]: (nu[6 * b:6 * b + 3].copy(), nu[6 * b + 3:6 * b + 6].copy())
                for b, body in enumerate(self.bodies)}

    def accelerations(self, poses, twists, drives: Mapping[str, float] | None = None,
                      keep_rows: Sequence[int] | None = None,
                      rank_tol: float = RANK_TOL, reactions: bool = True,
                      near: Mapping[str, float] | None = None) -> dict[str, Any]:
        """Body accelerations, joint reactions and the constraint rank.

        Returns a dict:
          ``com_acc`` {body: a_COM (world)}, ``ang_acc`` {body: alpha (world)};
          ``reactions`` {joint: {"force", "moment", "point", "indeterminate"}}: the reaction on
          the joint's second body, force and moment about ``point`` (= body 2's material joint
          point, world), and an orthonormal basis (6 x k) of the wrench directions
          (force; moment) the constraints leave undetermined (k = 0: unique);
          ``rank`` of J, ``rows`` (number of rows), ``reactions_unique`` (rank == rows),
          ``multipliers`` (lambda, one per row; ``row_joint`` names each row's joint),
          ``nudot`` (stacked a, alpha), ``residual`` (max |J nudot + bias|).

        ``keep_rows``: solve the KKT system with these rows only (independent, as many as the
        rank; the others get lambda = 0) instead of the null-space method with minimum-norm
        multipliers. ``reactions=False`` skips the reaction wrenches (faster, for simulations).
        ``near``: see :meth:`joint_coordinates` (only the joint spring-dampers use the
        coordinate values).
        """
        J, bias, per_joint = self.constraint_system(poses, twists)
        M = self.mass_matrix(poses)
        Q = self.applied(poses, twists, drives, near) - self.gyroscopic(poses, twists)
        n = 6 * self.nb
        if self.nrows == 0:
            J = np.zeros((0, n))
        U, s, Vt = scipy.linalg.svd(J, full_matrices=True, lapack_driver="gesvd")
        smax = s[0] if s.size else 1.0
        rank = int(np.sum(s > rank_tol * smax))
        null_JT = U[:, rank:]                                  # null(J^T): lambda freedom

        Ur, Sr, Vr = U[:, :rank], s[:rank], Vt[:rank].T
        if keep_rows is None:
            # null-space method (well conditioned with the orthonormal bases of the SVD of J):
            # nudot = -pinv(J) bias + N z,  N^T M N z = N^T (Q - M nudot_p)
            N = Vt[rank:].T                                    # null(J): the free motions
            nudot_p = -Vr @ ((Ur.T @ bias) / Sr)
            z = np.linalg.solve(N.T @ M @ N, N.T @ (Q - M @ nudot_p))
            nudot = nudot_p + N @ z
            # min-norm multipliers (lambda in range(J)) of J^T lambda = M nudot - Q
            lam = Ur @ ((Vr.T @ (M @ nudot - Q)) / Sr)
        else:
            # the KKT system with the kept rows only (as a generator keeping r rows would)
            rows = np.asarray(list(keep_rows), dtype=int)
            if len(rows) != rank or np.linalg.matrix_rank(J[rows], tol=rank_tol * smax) != rank:
                raise ValueError("keep_rows must be independent rows spanning the constraints")
            Jk = J[rows]
            K = np.block([[M, -Jk.T], [Jk, np.zeros((rank, rank))]])
            sol = np.linalg.solve(K, np.concatenate([Q, -bias[rows]]))
            nudot = sol[:n]
            lam = np.zeros(self.nrows)
            lam[rows] = sol[n:]

        reacts = {}
        i = 0
        for jt, st, dc in (per_joint if reactions else []):
            k = len(dc)
            D = np.array([d for d, _ in dc]).T                 # 3 x k
            C = np.array([c for _, c in dc]).T
            lj = lam[i:i + k]
            B = np.vstack([D, C])                              # wrench = B lambda_joint
            reacts[jt["name"]] = {
                "force": D @ lj, "moment": C @ lj, "point": st["p2"],
                "indeterminate": _orth(B @ null_JT[i:i + k], 1e-9),
            }
            i += k

        acc = self._unstack(nudot)
        return {
            "com_acc": {nm: a for nm, (a, _) in acc.items()},
            "ang_acc": {nm: al for nm, (_, al) in acc.items()},
            "reactions": reacts,
            "rank": rank, "rows": self.nrows, "reactions_unique": rank == self.nrows,
            "multipliers": lam, "row_joint": list(self.row_joint), "nudot": nudot,
            "residual": float(np.max(np.abs(J @ nudot + bias))) if self.nrows else 0.0,
        }

    def independent_rows(self, poses, order: Sequence[int] | None = None,
                         rank_tol: float = RANK_TOL) -> list[int]:
        """A maximal independent set of rows, chosen greedily in ``order`` (default 0..m-1)."""
        J = self.velocity_matrix(poses)
        smax = np.linalg.norm(J, 2) if J.size else 1.0
        keep: list[int] = []
        for r in (range(self.nrows) if order is None else order):
            trial = keep + [int(r)]
            if np.linalg.matrix_rank(J[trial], tol=rank_tol * smax) == len(trial):
                keep = trial
        return keep

    # -- simulation helper (tests) ------------------------------------------------

    def state_derivative(self, poses, twists, drives=None) -> dict[str, tuple]:
        """(Rdot, rdot, vdot, wdot) per body: Rdot = skew(w) R, rdot = v."""
        res = self.accelerations(poses, twists, drives, reactions=False)
        out = {}
        for body in self.bodies:
            nm = body["name"]
            R, _ = poses[nm]
            v, w = twists[nm]
            out[nm] = (skew(w) @ np.asarray(R), np.asarray(v), res["com_acc"][nm],
                       res["ang_acc"][nm])
        return out

    def pack(self, poses, twists) -> Array:
        """Flat state (per body: R (9), r, v, w) for ODE solvers."""
        parts = []
        for body in self.bodies:
            R, r = poses[body["name"]]
            v, w = twists[body["name"]]
            parts += [np.asarray(R, float).ravel(), r, v, w]
        return np.concatenate(parts)

    def unpack(self, y: Array) -> tuple[dict, dict]:
        poses, twists = {}, {}
        for b, body in enumerate(self.bodies):
            z = y[18 * b:18 * b + 18]
            poses[body["name"]] = (z[:9].reshape(3, 3), z[9:12])
            twists[body["name"]] = (z[12:15], z[15:18])
        return poses, twists

    def rhs(self, t: float, y: Array, drives=None) -> Array:
        poses, twists = self.unpack(y)
        der = self.state_derivative(poses, twists, drives)
        return np.concatenate([np.concatenate([Rd.ravel(), rd, vd, wd])
                               for Rd, rd, vd, wd in (der[b["name"]] for b in self.bodies)])
