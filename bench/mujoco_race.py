"""MuJoCo side of the speed race: the parallel mechanism of docs/parallel_numeric_format.md as an
MJCF model, a consistent MuJoCo state for a platform pose/velocity, and the time of one
``mj_forward`` per state measured inside a compiled C loop (bench/mujoco_harness.c).

    xml = mjcf_from_platform(mech)                       # MJCF text
    model = mujoco.MjModel.from_xml_string(xml); data = mujoco.MjData(model)
    set_state(model, data, mech, x, u)                   # qpos/qvel on the closure manifold
    r = time_mj_forward(mech, xs, us, repeats=20)        # {"ns_per_call", "udot0", ...}

Modelling choices (MuJoCo's side of the comparison; see ``mjcf_from_platform``):
- Platform C: a body with a ``freejoint`` (``align="false"``, so the joint stays at O_C and in
  frame C), mass m and the full inertia I at its origin O_C (its centre of mass). MuJoCo's free
  joint has qvel = [v_C (frame 0), omega_C (body frame C)], exactly the ``u`` of the format, and
  qacc = [dv_C/dt (frame 0), domega_C/dt (frame C)], exactly ``udot``: no conversion needed.
- Legs: hinge (R) / slide (P) joints on bodies attached to the world, same frames: a body's
  MuJoCo frame is the format's frame j, so qpos of a leg joint is the format's q.
  Massless "fictitious" bodies (m = 0, I = 0, between the rotations of U and S joints) are
  *merged* into the next massive body of the chain: MuJoCo allows several joints in one body,
  each with its own axis and anchor in that body's frame, applied in order; the merge is exact
  (no artificial mass). A massless run at the *end* of a chain cannot be merged; it gets a tiny
  mass and inertia (MuJoCo refuses massless moving bodies): TINY_FRACTION of the lightest
  massive body, inertia that mass times (1 cm)^2. That costs accuracy both ways: MuJoCo scales
  a constraint row's softness with the inverse inertia the row sees (too light: soft cut), and
  the mass is not in the exact model (too heavy). Measured with a massless piston on the UPS
  sample, relative udot error: 3e-2 at 1e-6 kg, 6e-3 at 1e-4 kg, 2e-4 at 1e-2 kg (the default
  here: 2.5e-3 x 4 kg), 2.5e-3 at 0.1 kg; 6e-5 with a real piston. Only a leg whose last body
  is left massless needs it.
- Spherical cut (m = 3): an equality ``connect`` between two sites (l_L on the last body, l_C on
  C), which need not coincide at qpos0.
- Universal cut (m = 4): the same ``connect`` plus the perpendicularity e1 . e2 = 0 as a distance:
  a spatial tendon from the site l_L + a e1 (last body) to l_C + a e2 (C), whose length is
  a sqrt(2) exactly when e1 is perpendicular to e2 (given the connect), held by a tendon equality.
  4 constraint rows, as many as the U joint removes. Caveat: MuJoCo adds the velocity-product
  term Jdot v for connect and weld rows only, not for tendon rows, so at speed this row enforces
  a slightly wrong acceleration. Measured on the SPU sample (``sample_hexapod("SPU")``): no
  visible effect at the demo's velocities (0.2 m/s, 0.3 rad/s: relative udot error 5-7e-5,
  the softness floor, as for the spherical cuts), 6.7e-5 at 10x those velocities, 2.2e-4 at
  30x (6 m/s, 9 rad/s). Not chosen: the U's two hinges on a massless cross body welded to C.
  MuJoCo refuses massless moving bodies, and it scales each row's softness with the inverse
  inertia the row sees, so a tiny cross-body mass would make the weld's rotation rows far
  softer than the rest (reasoned from MuJoCo's impedance model, not measured).
- Joint laws Q = preload - sum k_i (q - q0)^i - sum c_i qd^i: MuJoCo joint ``stiffness`` (its
  polynomial a x + b x^2 + c x^3 matches k_1..k_3, x = q - springref), ``springref`` = q0 (a
  preload folds into springref = q0 + preload / k_1 when the spring is linear) and ``damping``
  (c_1, c_3; MuJoCo's quadratic term is c_2 qd|qd|, not c_2 qd^2, so c_2 != 0 is refused);
  a drive's reflected inertia (the law's ``inertia``) is the joint's ``armature``.
  The drive input is not modelled: the race compares Q from the laws alone (drive = 0).
- Solver: Newton, tight tolerance, no warmstart (each state is solved from scratch, so the
  time of a state does not depend on the one before it), equality rows with solref
  timeconst = 2 * timestep and solimp d = 0.9999 (MuJoCo's maximum), so the constraint
  softness R = (1 - d)/d * A_ii is 1e-4 of the constraint-space inverse inertia.
- Only what the race needs is computed: no geoms at all (so no collision work; the default
  class would give any geom contype = conaffinity = 0), flags off: contact, frictionloss,
  limit, clampctrl, actuation, sensor, midphase, filterparent, warmstart, island, eulerdamp,
  autoreset. On: constraint, equality, spring, damper, gravity.

Run ``python bench/mujoco_race.py`` (``--type SPU`` for universal cuts, ``--python`` to time the
Python loop) for the demo: a 6-UPS hexapod built here, its timing, and MuJoCo's platform
acceleration against ``reference_udot``, an exact numpy solution independent of MuJoCo.
``--mechanism NAME`` races a bundled mechanism instead (every leg type: UPS, SPU, UCU, RUS, RSU,
PUS are all chains of hinges and slides closed by a ``connect``, plus the tendon row of a
universal cut) and compares MuJoCo's platform acceleration with our ``step_accel``'s.
Needs ``pip install mujoco`` (the wheel ships libmujoco and its C headers) and gcc; mujoco is
not a dependency of the project.

Accuracy seen (relative |udot_MuJoCo - udot_exact|, states within a few cm / deg of home):
6e-5 on the sample UPS and SPU hexapods; 7e-5..2e-4 on the five bundled mechanisms
(gough_stewart_docking, hunt_rus_docking, hexapod_spu, hexapod_ucu, hexapod_rsu) against
tests/reference/parallel_numpy.solve, which ``reference_udot`` matches to 1e-13. The error
scales as 1 - d (6e-3 at d = 0.99, 6e-4 at 0.999): it is MuJoCo's constraint softness, not
the model. hexapod_pus (``--mechanism hexapod_pus``, 5 states of make bench's): 4e-3..1e-2
against ``reference_udot``, which our step_accel matches to 3e-13; not investigated further
(a guess, unverified: the softness amplified by the slide's closure, whose Jacobian is
ill-conditioned near the rod-perpendicular-to-rail singularity).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HARNESS_SRC = HERE / "mujoco_harness.c"

TIMESTEP = 5e-4
SOLREF = (2 * TIMESTEP, 1.0)                 # time constant, damping ratio of equality rows
SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)   # d = 0.9999 everywhere (mjMAXIMP)
TINY_FRACTION = 2.5e-3                       # massless body at the end of a chain only
INERTIA_FLOOR = 1e-9                         # smallest principal inertia about a centre of mass
U_ARM = 0.1                                  # m: the arms of the universal-cut distance tendon


# --- rotations (coordinate transforms, docs/parallel_numeric_format.md) --------------------

def elementary(axis: int, q: float) -> np.ndarray:
    """A_x, A_y, A_z of the format: coordinate transform into a frame rotated by q."""
    c, s = np.cos(q), np.sin(q)
    if axis == 0:
        return np.array([[1.0, 0, 0], [0, c, s], [0, -s, c]])
    if axis == 1:
        return np.array([[c, 0, -s], [0, 1.0, 0], [s, 0, c]])
    return np.array([[c, s, 0], [-s, c, 0], [0, 0, 1.0]])


def alpha_C(x) -> np.ndarray:
    """alpha_C = A_x(psi_x) A_z(psi_z) A_y(psi_y): frame 0 -> frame C coordinates."""
    return elementary(0, x[5]) @ elementary(2, x[4]) @ elementary(1, x[3])


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _expm(w):
    """Rotation matrix (active) of the rotation vector w (Rodrigues)."""
    th = float(np.linalg.norm(w))
    K = _skew(w)
    if th < 1e-12:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + np.sin(th) / th * K + (1 - np.cos(th)) / th**2 * K @ K


def _mat2quat(R) -> np.ndarray:
    """MuJoCo quaternion (w, x, y, z) of the active rotation R (child -> parent coordinates)."""
    R = np.asarray(R, float)
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(1.0 + tr)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)


def _clean(v, eps=1e-14):
    v = np.asarray(v, float)
    return np.where(np.abs(v) < eps * max(1.0, float(np.abs(v).max())), 0.0, v)


def _num(v) -> str:
    return " ".join(repr(float(a)) for a in np.ravel(v))


# --- leg kinematics in numpy (the format's conventions, independent of MuJoCo) -------------

def _joints(leg):
    return [(j["kind"], int(j["axis"]), np.asarray(j["l"], float), np.asarray(j["gamma"], float))
            for j in leg["joints"]]


def _fk(joints, q):
    """Body frames of a leg at q: origins r[j], rotations R[j] (frame j -> frame 0, j = 1..n),
    joint axes z[i] (frame 0) and joint-frame origins o[i]; lists of length n."""
    r, R = np.zeros(3), np.eye(3)
    rs, Rs, zs, os_ = [], [], [], []
    for (kind, a, l, g), qi in zip(joints, q):
        o = r + R @ l
        Rj = R @ g.T
        z = Rj[:, a].copy()
        if kind == "R":
            R, r = Rj @ elementary(a, qi).T, o
        else:
            R, r = Rj, o + qi * z
        rs.append(r)
        Rs.append(R)
        zs.append(z)
        os_.append(o)
    return rs, Rs, zs, os_


def _point_jac(joints, zs, os_, k, p):
    """(3, n) d p / d q for a point p fixed in body k+1 (0-based k), and (3, n) angular part."""
    n = len(joints)
    Jv, Jw = np.zeros((3, n)), np.zeros((3, n))
    for i in range(k + 1):
        if joints[i][0] == "R":
            Jv[:, i] = np.cross(zs[i], p - os_[i])
            Jw[:, i] = zs[i]
        else:
            Jv[:, i] = zs[i]
    return Jv, Jw


def _platform(x):
    R_C = alpha_C(x).T                      # frame C -> frame 0
    return np.asarray(x[:3], float), R_C


def _closure(leg, joints, q, pC, R_C):
    """Residual and Jacobian of the leg's closure equations at q (3 rows, +1 for a U cut)."""
    cut = leg["cut"]
    rs, Rs, zs, os_ = _fk(joints, q)
    n = len(joints)
    pL = rs[-1] + Rs[-1] @ np.asarray(cut["l_L"], float)
    res = pL - (pC + R_C @ np.asarray(cut["l_C"], float))
    Jv, Jw = _point_jac(joints, zs, os_, n - 1, pL)
    if cut["m"] == 4:
        e1 = Rs[-1] @ (np.asarray(cut["gamma_L"], float).T @ [0.0, 1.0, 0.0])
        e2 = R_C @ (np.asarray(cut["gamma_C"], float).T @ [0.0, 0.0, 1.0])
        n12 = np.cross(e1, e2)
        res = np.append(res, e1 @ e2)
        Jv = np.vstack([Jv, n12 @ Jw])       # d(e1.e2)/dt = (w_L - w_C) . (e1 x e2)
    elif cut["m"] != 3:
        raise ValueError(f"leg {leg.get('name')}: cut m = {cut['m']} (3 or 4 expected)")
    return res, Jv


def solve_leg(leg, x, u, p0=None, tol=1e-13, maxit=50):
    """Leg joint positions (Newton on the closure, from p0 or 0) and rates (velocity closure)."""
    joints = _joints(leg)
    q = np.zeros(len(joints)) if p0 is None else np.array(p0, float)
    pC, R_C = _platform(x)
    for _ in range(maxit):
        res, J = _closure(leg, joints, q, pC, R_C)
        dq = np.linalg.lstsq(J, -res, rcond=None)[0]
        q = q + dq
        if np.linalg.norm(dq) < tol * (1.0 + np.linalg.norm(q)):
            break
    else:
        raise RuntimeError(f"leg {leg.get('name')}: closure Newton did not converge "
                           f"(|residual| = {np.linalg.norm(res):.3g})")
    res, J = _closure(leg, joints, q, pC, R_C)
    w_C = R_C @ np.asarray(u[3:6], float)
    cut = leg["cut"]
    rhs = np.asarray(u[:3], float) + np.cross(w_C, R_C @ np.asarray(cut["l_C"], float))
    if cut["m"] == 4:
        e1e2 = np.cross(_fk(joints, q)[1][-1] @ (np.asarray(cut["gamma_L"], float).T @ [0, 1.0, 0]),
                        R_C @ (np.asarray(cut["gamma_C"], float).T @ [0, 0, 1.0]))
        rhs = np.append(rhs, w_C @ e1e2)
    qd = np.linalg.lstsq(J, rhs, rcond=None)[0]
    return q, qd, float(np.linalg.norm(res))


# --- MJCF ------------------------------------------------------------------------------

def _law_attrs(law, where: str) -> str:
    k = [float(v) for v in law.get("k", [])]
    c = [float(v) for v in law.get("c", [])]
    q0 = float(law.get("q0", 0.0))
    pre = float(law.get("preload", 0.0))
    while k and k[-1] == 0.0:
        k.pop()
    while c and c[-1] == 0.0:
        c.pop()
    if len(k) > 3 or len(c) > 3:
        raise ValueError(f"{where}: MuJoCo joint springs/dampers are at most cubic")
    if len(c) >= 2 and c[1] != 0.0:
        raise ValueError(f"{where}: c_2 qd^2 has no MuJoCo equivalent (its damping uses qd|qd|)")
    springref = q0
    armature = float(law.get("inertia", 0.0))      # a drive's reflected inertia
    if pre != 0.0:
        if len(k) == 1 and k[0] != 0.0:
            springref = q0 + pre / k[0]
        else:
            raise ValueError(f"{where}: a preload needs a linear spring (k_1 != 0, no k_2, k_3) "
                             f"to fold into springref")
    out = ""
    if k:
        out += f' stiffness="{_num((k + [0.0] * 3)[:3])}" springref="{springref!r}"'
    if c:
        out += f' damping="{_num((c + [0.0] * 3)[:3])}"'
    if armature:
        out += f' armature="{armature!r}"'
    return out


def _inertial(m: float, d, I_O, where: str) -> str:
    """<inertial> of a body: mass m, centre d, inertia I_O about the body origin (body frame)."""
    d = np.asarray(d, float)
    Ic = np.asarray(I_O, float) - m * (d @ d * np.eye(3) - np.outer(d, d))
    Ic = 0.5 * (Ic + Ic.T)
    lo = float(np.linalg.eigvalsh(Ic)[0])
    if lo < INERTIA_FLOOR:
        if lo < -1e-9 * max(1.0, float(np.abs(Ic).max())):
            raise ValueError(f"{where}: inertia about the centre of mass is not positive "
                             f"(smallest eigenvalue {lo:.3g})")
        Ic = Ic + (INERTIA_FLOOR - lo) * np.eye(3)
    full = [Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]
    return f'<inertial pos="{_num(d)}" mass="{m!r}" fullinertia="{_num(full)}"/>'


def _massless(body) -> bool:
    return float(body["m"]) == 0.0 and not np.any(np.asarray(body["I"], float))


def joint_name(k: int, i: int) -> str:
    return f"leg{k}_q{i}"


def mjcf_from_platform(mech: dict) -> str:
    """MJCF text of the mechanism (see the module docstring for the modelling choices).

    Platform at the home pose, leg joints at 0 in qpos0 (consistent when the format's branch
    conventions hold; nothing relies on it: the cuts are site-based).
    Names: body "platform" (free joint "platform"), leg joint i of leg k "leg{k}_q{i}",
    sites "leg{k}_L" / "leg{k}_C" at the cut, equality "leg{k}_cut" (+ "leg{k}_perp").
    """
    g = np.asarray(mech.get("gravity", [0.0, 0.0, -9.81]), float)
    home = np.asarray(mech.get("home", np.zeros(6)), float)
    pC, R_C = _platform(home)
    plat = mech["platform"]
    lines = [
        f'<mujoco model="{mech.get("name", "platform")}">',
        '  <compiler angle="radian" inertiafromgeom="false" autolimits="true" alignfree="false"/>',
        f'  <option timestep="{TIMESTEP!r}" gravity="{_num(g)}" integrator="Euler" '
        'solver="Newton" iterations="100" ls_iterations="50" tolerance="1e-12" jacobian="auto">',
        '    <flag contact="disable" frictionloss="disable" limit="disable" clampctrl="disable" '
        'actuation="disable" sensor="disable" midphase="disable" filterparent="disable" '
        'warmstart="disable" island="disable" eulerdamp="disable" autoreset="disable"/>',
        '  </option>',
        '  <default>',
        '    <geom contype="0" conaffinity="0"/>',
        f'    <equality solref="{_num(SOLREF)}" solimp="{_num(SOLIMP)}"/>',
        '  </default>',
        '  <worldbody>',
        f'    <body name="platform" pos="{_num(pC)}" quat="{_num(_mat2quat(R_C))}">',
        '      <freejoint name="platform" align="false"/>',
        '      ' + _inertial(float(plat["m"]), np.zeros(3), plat["I"], "platform"),
    ]
    for k, leg in enumerate(mech["legs"]):
        cut = leg["cut"]
        lines.append(f'      <site name="leg{k}_C" pos="{_num(cut["l_C"])}"/>')
        if cut["m"] == 4:
            e2 = np.asarray(cut["gamma_C"], float).T @ [0.0, 0.0, 1.0]
            lines.append(f'      <site name="leg{k}_C2" '
                         f'pos="{_num(np.asarray(cut["l_C"], float) + U_ARM * e2)}"/>')
    lines.append('    </body>')

    tendons, equalities = [], []
    masses = [float(plat["m"])] + [float(b["m"]) for leg in mech["legs"] for b in leg["bodies"]]
    tiny = TINY_FRACTION * min(m for m in masses if m > 0)
    for k, leg in enumerate(mech["legs"]):
        where = f"legs[{k}]"
        joints, bodies, laws = _joints(leg), leg["bodies"], leg.get("laws", [{}] * len(leg["joints"]))
        n = len(joints)
        groups, cur = [], []
        for i in range(n):                      # merge massless bodies into the next massive one
            cur.append(i)
            if not _massless(bodies[i]) or i == n - 1:
                groups.append(cur)
                cur = []
        depth = 0
        for grp in groups:
            P, Rp = np.zeros(3), np.eye(3)      # frame i at zero joint values, in frame grp[0]-1
            poses = []
            for i in grp:
                _, _, l, gam = joints[i]
                P, Rp = P + Rp @ l, Rp @ gam.T
                poses.append((P, Rp))
            Pk, Rk = poses[-1]
            ind = "    " + "  " * depth
            last = grp[-1]
            body = bodies[last]
            lines.append(f'{ind}<body name="leg{k}_b{last + 1}" pos="{_num(Pk)}" '
                         f'quat="{_num(_mat2quat(Rk))}">')
            for i, (Pi, Ri) in zip(grp, poses):
                kind, a = joints[i][0], joints[i][1]
                axis = _clean(Rk.T @ Ri[:, a])        # rounding noise of exact zeros -> 0
                anchor = _clean(Rk.T @ (Pi - Pk))
                lines.append(f'{ind}  <joint name="{joint_name(k, i)}" '
                             f'type="{"hinge" if kind == "R" else "slide"}" pos="{_num(anchor)}" '
                             f'axis="{_num(axis)}"'
                             + _law_attrs(laws[i] if i < len(laws) else {}, f"{where}.laws[{i}]")
                             + '/>')
            if _massless(body):                 # massless end of the chain: tiny mass
                lines.append(f'{ind}  ' + _inertial(tiny, np.zeros(3), tiny * 1e-4 * np.eye(3),
                                                    where))
            else:
                lines.append(f'{ind}  ' + _inertial(float(body["m"]), body["d"], body["I"],
                                                    f"{where}.bodies[{last}]"))
            depth += 1
        ind = "    " + "  " * depth
        lines.append(f'{ind}<site name="leg{k}_L" pos="{_num(cut["l_L"])}"/>')
        equalities.append(f'    <connect name="leg{k}_cut" site1="leg{k}_L" site2="leg{k}_C"/>')
        if cut["m"] == 4:
            e1 = np.asarray(cut["gamma_L"], float).T @ [0.0, 1.0, 0.0]
            lines.append(f'{ind}<site name="leg{k}_L1" '
                         f'pos="{_num(np.asarray(cut["l_L"], float) + U_ARM * e1)}"/>')
            tendons.append(f'    <spatial name="leg{k}_perp"><site site="leg{k}_L1"/>'
                           f'<site site="leg{k}_C2"/></spatial>')
            # tendon equality: length - length(qpos0) = a0; make length = U_ARM sqrt(2)
            l0 = _perp_length_at_qpos0(mech, leg)
            equalities.append(f'    <tendon name="leg{k}_perp" tendon1="leg{k}_perp" '
                              f'polycoef="{_num([U_ARM * np.sqrt(2.0) - l0, 0, 0, 0, 0])}"/>')
        for _ in groups:
            depth -= 1
            lines.append("    " + "  " * depth + "</body>")
    lines.append('  </worldbody>')
    if tendons:
        lines += ['  <tendon>'] + tendons + ['  </tendon>']
    lines += ['  <equality>'] + equalities + ['  </equality>', '</mujoco>']
    return "\n".join(lines) + "\n"


def _perp_length_at_qpos0(mech, leg) -> float:
    """Length of the universal-cut tendon at qpos0 (platform at home, leg joints at 0)."""
    joints = _joints(leg)
    pC, R_C = _platform(np.asarray(mech.get("home", np.zeros(6)), float))
    rs, Rs, _, _ = _fk(joints, np.zeros(len(joints)))
    cut = leg["cut"]
    a = rs[-1] + Rs[-1] @ (np.asarray(cut["l_L"], float)
                           + U_ARM * np.asarray(cut["gamma_L"], float).T @ [0.0, 1.0, 0.0])
    b = pC + R_C @ (np.asarray(cut["l_C"], float)
                    + U_ARM * np.asarray(cut["gamma_C"], float).T @ [0.0, 0.0, 1.0])
    return float(np.linalg.norm(a - b))


# --- state ------------------------------------------------------------------------------

def set_state(model, data, mech: dict, x, u, p0=None) -> dict:
    """Put (qpos, qvel) at the platform pose x and velocity u with every leg on its closure.

    x = [x_C, y_C, z_C, psi_y, psi_z, psi_x], u = [v_C (frame 0), omega_C (frame C)].
    Leg joint positions: Newton on the closure equations from p0 (list of arrays) or 0;
    rates: the velocity closure. Does not call mj_forward. Returns {"p", "pdot", "residual"}
    (residual: largest closure residual norm left by Newton).
    """
    import mujoco

    x, u = np.asarray(x, float), np.asarray(u, float)
    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "platform")
    qa, da = model.jnt_qposadr[jid], model.jnt_dofadr[jid]
    pC, R_C = _platform(x)
    data.qpos[qa:qa + 3] = pC
    data.qpos[qa + 3:qa + 7] = _mat2quat(R_C)
    data.qvel[da:da + 6] = u
    ps, pds, worst = [], [], 0.0
    for k, leg in enumerate(mech["legs"]):
        q, qd, res = solve_leg(leg, x, u, None if p0 is None else p0[k])
        for i in range(len(q)):
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint_name(k, i))
            data.qpos[model.jnt_qposadr[j]] = q[i]
            data.qvel[model.jnt_dofadr[j]] = qd[i]
        ps.append(q)
        pds.append(qd)
        worst = max(worst, res)
    return {"p": ps, "pdot": pds, "residual": worst}


def platform_udot(model, data) -> np.ndarray:
    """[dv_C/dt (frame 0), domega_C/dt (frame C)] from MuJoCo's qacc of the free joint.

    MuJoCo's free joint: linear part of qvel/qacc in the world frame for the body origin O_C,
    angular part in the body frame C: the format's u and udot as they are."""
    import mujoco

    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "platform")
    da = model.jnt_dofadr[jid]
    return np.array(data.qacc[da:da + 6])


# --- timing ----------------------------------------------------------------------------

def _cache_dir() -> Path:
    base = os.environ.get("MECHGEN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                          "mechgen")
    return Path(base)


def build_harness() -> tuple[Path, float, bool]:
    """Compile bench/mujoco_harness.c against the mujoco wheel (cached).

    Returns (executable, seconds spent compiling, whether it came from the cache)."""
    import mujoco

    pkg = Path(mujoco.__file__).resolve().parent
    inc = pkg / "include"
    libs = sorted(pkg.glob("libmujoco.so*"))
    if not (inc / "mujoco" / "mujoco.h").exists() or not libs:
        raise RuntimeError(f"no C headers or libmujoco in {pkg}")
    lib = libs[-1]
    cc = os.environ.get("CC", "gcc")
    flags = ["-O2", "-std=c11", "-D_POSIX_C_SOURCE=199309L"]
    src = HARNESS_SRC.read_bytes()
    key = hashlib.sha256(src + str(lib).encode() + mujoco.__version__.encode()
                         + " ".join([cc] + flags).encode()).hexdigest()[:16]
    out_dir = _cache_dir() / f"mujoco_harness-{key}"
    exe = out_dir / "mujoco_harness"
    if exe.exists():
        return exe, 0.0, True
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f"mujoco_harness.{os.getpid()}.tmp"
    cmd = [cc, *flags, str(HARNESS_SRC), f"-I{inc}", f"-L{lib.parent}", f"-l:{lib.name}",
           f"-Wl,-rpath,{lib.parent}", "-o", str(tmp)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"compiling the harness failed:\n{' '.join(cmd)}\n{r.stderr}")
    os.replace(tmp, exe)
    return exe, time.perf_counter() - t0, False


def _python_loop(model, data, states, repeats):
    import mujoco

    nq = model.nq
    for s in states:                            # warm-up pass, as in the harness
        data.qpos[:], data.qvel[:] = s[:nq], s[nq:]
        mujoco.mj_forward(model, data)
    samples, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        for s in states:
            data.qpos[:] = s[:nq]
            data.qvel[:] = s[nq:]
            mujoco.mj_forward(model, data)
        samples.append((time.perf_counter_ns() - t0) / len(states))
        cpu.append((time.thread_time_ns() - c0) / len(states))
    return sorted(samples), sorted(cpu)


def run_harness(xml: str, states: np.ndarray, repeats: int) -> dict[str, list[str]]:
    """One run of the compiled harness over ``states`` ((N, nq + nv) qpos, qvel): its output
    lines as {key: values} (see bench/mujoco_harness.c). Run it again on the ``xml`` and
    ``states`` that time_mj_forward returns to interleave it with other timings."""
    exe = build_harness()[0]
    with tempfile.TemporaryDirectory(prefix="mujoco_race_") as tmp:
        xml_path, st_path = Path(tmp) / "model.xml", Path(tmp) / "states.bin"
        xml_path.write_text(xml)
        states.astype("<f8" if sys.byteorder == "little" else ">f8").tofile(st_path)
        r = subprocess.run([str(exe), str(xml_path), str(st_path), str(len(states)),
                            str(repeats)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"harness failed: {r.stderr.strip()}")
    return {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines() if ln.strip()}


def time_mj_forward(mech: dict, xs, us, repeats: int = 20, *, use_c: bool = True) -> dict:
    """Time mj_forward per state over the batch of platform states (xs, us: (N, 6)).

    The states are set with ``set_state`` (Newton per leg, in Python, not timed), written to a
    binary file and timed by the compiled harness: each repeat runs mj_forward over the whole
    batch; ns_per_call is the fastest repeat divided by N (ns_median: the median repeat);
    cpu_ns_per_call / cpu_ns_median: the same in this thread's CPU time, which other processes
    on the machine do not inflate (use it when the machine is busy).
    If the harness cannot be built or run (or use_c=False), a Python loop over the bindings is
    timed instead and ``method`` says so: its numbers include Python's per-call overhead.

    Also returns MuJoCo's platform acceleration for the first state: ``udot0`` = [dv_C/dt
    (frame 0), domega_C/dt (frame C)] (from the harness when it ran, and ``udot0_bindings``
    from the Python bindings; they are the same library and should agree to the last bits).
    """
    import mujoco

    xs, us = np.atleast_2d(np.asarray(xs, float)), np.atleast_2d(np.asarray(us, float))
    if xs.shape != us.shape or xs.shape[1] != 6:
        raise ValueError("xs and us must both have shape (N, 6)")
    xml = mjcf_from_platform(mech)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    states = np.empty((len(xs), model.nq + model.nv))
    worst = 0.0
    t0 = time.perf_counter()
    for i, (x, u) in enumerate(zip(xs, us)):
        worst = max(worst, set_state(model, data, mech, x, u)["residual"])
        states[i, :model.nq], states[i, model.nq:] = data.qpos, data.qvel
    t_set = time.perf_counter() - t0

    fresh = mujoco.MjData(model)
    fresh.qpos[:], fresh.qvel[:] = states[0, :model.nq], states[0, model.nq:]
    mujoco.mj_forward(model, fresh)
    udot_b = platform_udot(model, fresh)
    out = {"n_states": len(xs), "repeats": repeats, "nq": model.nq, "nv": model.nv,
           "nefc": int(fresh.nefc), "solver_iterations": int(fresh.solver_niter[0]),
           "mujoco_version": mujoco.__version__, "closure_residual": worst,
           "mujoco_constraint_residual0": float(np.abs(fresh.efc_pos[:fresh.nefc]).max()
                                                if fresh.nefc else 0.0),
           "set_state_seconds": t_set, "udot0_bindings": udot_b}

    result = None
    if use_c:
        try:
            exe, t_cc, cached = build_harness()
            kv = run_harness(xml, states, repeats)
            qacc0 = np.array([float(v) for v in kv["qacc0"]])
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "platform")
            da = model.jnt_dofadr[jid]
            result = {"method": "C harness (mj_forward in a compiled loop)",
                      "ns_per_call": float(kv["ns_min"][0]),
                      "ns_median": float(kv["ns_median"][0]), "ns_max": float(kv["ns_max"][0]),
                      "cpu_ns_per_call": float(kv["cpu_ns_min"][0]),
                      "cpu_ns_median": float(kv["cpu_ns_median"][0]),
                      "single_ns_per_call": float(kv["single_ns_min"][0]),
                      "single_ns_median": float(kv["single_ns_median"][0]),
                      "compile_seconds": t_cc, "harness_cached": cached, "harness": str(exe),
                      "qacc0": qacc0, "udot0": qacc0[da:da + 6], "xml": xml, "states": states}
        except (RuntimeError, OSError, subprocess.SubprocessError, KeyError, ValueError) as e:
            out["harness_error"] = str(e)
    if result is None:
        s, c = _python_loop(model, data, states, repeats)
        result = {"method": "Python loop over the bindings (INCLUDES Python call overhead)",
                  "ns_per_call": s[0], "ns_median": s[len(s) // 2], "ns_max": s[-1],
                  "cpu_ns_per_call": c[0], "cpu_ns_median": c[len(c) // 2],
                  "qacc0": np.array(fresh.qacc), "udot0": udot_b}
    out.update(result)
    out["harness_vs_bindings"] = float(np.abs(out["udot0"] - udot_b).max())
    return out


# --- an independent exact reference (numpy, slow: for checking only) ------------------------

def joint_forces(leg, q, qd) -> np.ndarray:
    """Q of each leg joint from its law (drive input 0)."""
    Q = np.zeros(len(q))
    for i, law in enumerate(leg.get("laws", [])):
        x = q[i] - float(law.get("q0", 0.0))
        Q[i] = (float(law.get("preload", 0.0))
                - sum(float(k) * x ** (j + 1) for j, k in enumerate(law.get("k", [])))
                - sum(float(c) * qd[i] ** (j + 1) for j, c in enumerate(law.get("c", []))))
    return Q


def _leg_body_motion(leg, x, u, p0=None):
    """Per massive leg body: COM velocity Jacobian wrt u, angular one, mass, world inertia
    about the COM, COM velocity, angular velocity; and G = d qd / d u, q, qd."""
    joints = _joints(leg)
    q, qd, _ = solve_leg(leg, x, u, p0)
    G = np.column_stack([solve_leg(leg, x, e, q)[1] for e in np.eye(6)])
    _, Rs, zs, os_ = _fk(joints, q)
    rs = _fk(joints, q)[0]
    out = []
    for k, b in enumerate(leg["bodies"]):
        if _massless(b):
            continue
        m, d = float(b["m"]), np.asarray(b["d"], float)
        c = rs[k] + Rs[k] @ d
        Ic = np.asarray(b["I"], float) - m * (d @ d * np.eye(3) - np.outer(d, d))
        Jv, Jw = _point_jac(joints, zs, os_, k, c)
        Jv, Jw = Jv @ G, Jw @ G
        out.append((Jv, Jw, m, Rs[k] @ Ic @ Rs[k].T, Jv @ u, Jw @ u))
    return out, G, q, qd


def reference_udot(mech: dict, x, u, h: float = 1e-5) -> np.ndarray:
    """Exact platform acceleration [dv_C/dt (frame 0), domega_C/dt (frame C)], independent of
    MuJoCo: Newton-Euler of every body projected on the partial velocities of u (Kane /
    Jourdain), with the leg joint forces of the laws, gravity, no external load. The
    velocity-product accelerations (the bodies' accelerations at udot = 0) are central
    differences of the exact closure solutions along the motion with udot = 0 (v_C constant,
    omega_C constant in frame C: a screw motion), so the result is exact up to ~h^2 and
    rounding (~1e-8 relative)."""
    x, u = np.asarray(x, float), np.asarray(u, float)
    g = np.asarray(mech.get("gravity", [0.0, 0.0, -9.81]), float)
    pC, R_C = _platform(x)
    w_w = R_C @ u[3:]

    def pose_at(t):
        R = _expm(t * w_w) @ R_C             # frame C -> 0 at time t
        a = R.T                              # alpha_C(t); back to the format's angles
        psi_z = np.arcsin(np.clip(a[0, 1], -1, 1))
        psi_y = np.arctan2(-a[0, 2], a[0, 0])
        psi_x = np.arctan2(-a[2, 1], a[1, 1])
        xt = np.concatenate([pC + t * u[:3], [psi_y, psi_z, psi_x]])
        assert np.allclose(alpha_C(xt), a, atol=1e-12)
        return xt

    mp = float(mech["platform"]["m"])
    I_C = np.asarray(mech["platform"]["I"], float)
    Iw = R_C @ I_C @ R_C.T
    # platform: Jv = [I 0], Jw = [0 R_C], no velocity-product acceleration
    JvC = np.hstack([np.eye(3), np.zeros((3, 3))])
    JwC = np.hstack([np.zeros((3, 3)), R_C])
    M = mp * JvC.T @ JvC + JwC.T @ Iw @ JwC
    rhs = JvC.T @ (mp * g) - JwC.T @ np.cross(w_w, Iw @ w_w)
    for leg in mech["legs"]:
        now, G, q, qd = _leg_body_motion(leg, x, u)
        plus = _leg_body_motion(leg, pose_at(h), u, q)[0]
        minus = _leg_body_motion(leg, pose_at(-h), u, q)[0]
        for (Jv, Jw, m, Ib, v, w), bp, bm in zip(now, plus, minus):
            a0 = (bp[4] - bm[4]) / (2 * h)
            al0 = (bp[5] - bm[5]) / (2 * h)
            M += m * Jv.T @ Jv + Jw.T @ Ib @ Jw
            rhs += Jv.T @ (m * g - m * a0) - Jw.T @ (Ib @ al0 + np.cross(w, Ib @ w))
        rhs += G.T @ joint_forces(leg, q, qd)
    return np.linalg.solve(M, rhs)


# --- the sample: a 6-UPS hexapod ---------------------------------------------------------

def _cylinder_inertia_about(m, r, length, d):
    """Solid cylinder along x (radius r, length), inertia about a point at -d from its COM."""
    Ic = np.diag([0.5 * m * r * r] + [m * (3 * r * r + length * length) / 12.0] * 2)
    d = np.asarray(d, float)
    return Ic + m * (d @ d * np.eye(3) - np.outer(d, d))


def sample_hexapod(leg_type: str = "UPS") -> dict:
    """6-UPS Gough-Stewart platform in the format: base radius 0.9 m, platform radius 0.65 m,
    home height 0.55 m, attachment pairs at 0/120/240 deg +-15 deg (base) and 60/180/300 deg
    +-15 deg (platform); cylinder 4 kg, piston 2 kg, platform 200 kg; leg spring k = 2e4 N/m,
    damper c = 2e3 N s/m on each stroke. Leg joints: u1 (y), u2 (z), stroke (x, P); the base
    joint frame has x along the leg at home and y horizontal, so every coordinate is 0 at home.

    leg_type="SPU": the same geometry and masses with a spherical base joint (s1 y, s2 z, s3 x,
    two massless bodies) and a universal cut at the platform (frames as generator/families/parallel/platform.py
    builds them: C's U frame is the piston's frame at home), to exercise the m = 4 path."""
    if leg_type not in ("UPS", "SPU"):
        raise ValueError("leg_type: UPS or SPU")
    home = np.array([0.0, 0.0, 0.55, 0.0, 0.0, 0.0])
    deg = np.pi / 180
    base = {a: 0.9 * np.array([np.cos(a * deg), np.sin(a * deg), 0.0])
            for a in (-15, 15, 105, 135, 225, 255)}
    plat = {a: 0.65 * np.array([np.cos(a * deg), np.sin(a * deg), 0.0])
            for a in (45, 75, 165, 195, 285, 315)}
    pairs = [(15, 45), (105, 75), (135, 165), (225, 195), (255, 285), (-15, 315)]
    legs = []
    for k, (ab, ap) in enumerate(pairs):
        B, Pc = base[ab], plat[ap]
        s = home[:3] + alpha_C(home).T @ Pc
        e = (s - B) / np.linalg.norm(s - B)
        y = np.cross([0.0, 0.0, 1.0], e)
        y /= np.linalg.norm(y)
        G0 = np.array([e, y, np.cross(e, y)])
        L0 = float(np.linalg.norm(s - B))
        name = f"leg{k + 1}"
        zero = {"m": 0.0, "d": np.zeros(3), "I": np.zeros((3, 3))}
        cyl_d = np.array([0.3, 0.0, 0.0])
        pis_d = np.array([L0 - 0.25, 0.0, 0.0])
        cyl = {"m": 4.0, "d": cyl_d, "I": _cylinder_inertia_about(4.0, 0.04, 0.6, cyl_d)}
        pis = {"m": 2.0, "d": pis_d, "I": _cylinder_inertia_about(2.0, 0.025, 0.5, pis_d)}
        free = {"k": [], "c": [], "q0": 0.0, "preload": 0.0}
        spring = {"k": [2.0e4], "c": [2.0e3], "q0": 0.0, "preload": 0.0}

        def joint(jn, kind, axis, l=np.zeros(3), gamma=np.eye(3)):
            return {"name": f"{name}_{jn}", "kind": kind, "axis": axis, "l": l, "gamma": gamma}

        if leg_type == "UPS":
            joints = [joint("u1", "R", 1, B, G0), joint("u2", "R", 2), joint("stroke", "P", 0)]
            bodies, laws = [zero, cyl, pis], [free, free, spring]
            cut = {"m": 3, "l_L": np.array([L0, 0.0, 0.0]), "gamma_L": np.eye(3),
                   "l_C": Pc, "gamma_C": np.eye(3)}
        else:
            joints = [joint("s1", "R", 1, B, G0), joint("s2", "R", 2), joint("s3", "R", 0),
                      joint("stroke", "P", 0)]
            bodies, laws = [zero, zero, cyl, pis], [free, free, free, spring]
            cut = {"m": 4, "l_L": np.array([L0, 0.0, 0.0]), "gamma_L": np.eye(3),
                   "l_C": Pc, "gamma_C": G0 @ alpha_C(home).T}
        legs.append({"name": name, "type": leg_type, "joints": joints, "bodies": bodies,
                     "cut": cut, "laws": laws, "drive": len(joints) - 1})
    I_C = np.array([[23.0, 0.4, 0.1], [0.4, 24.0, -0.2], [0.1, -0.2, 42.0]])
    return {"name": f"hexapod_{leg_type.lower()}_sample", "gravity": np.array([0.0, 0.0, -9.81]),
            "home": home, "platform": {"m": 200.0, "I": I_C}, "legs": legs}


def sample_states(mech: dict, n: int, seed: int = 0):
    """n platform states around home: +-5 cm, +-5 deg, |v| ~ 0.2 m/s, |omega| ~ 0.3 rad/s."""
    rng = np.random.default_rng(seed)
    home = np.asarray(mech["home"], float)
    xs = home + np.hstack([rng.uniform(-0.05, 0.05, (n, 3)),
                           rng.uniform(-5, 5, (n, 3)) * np.pi / 180])
    us = np.hstack([rng.uniform(-0.2, 0.2, (n, 3)), rng.uniform(-0.3, 0.3, (n, 3))])
    return xs, us


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--states", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--python", action="store_true", help="time the Python loop, not the C one")
    ap.add_argument("--type", default="UPS", choices=["UPS", "SPU"],
                    help="leg type of the sample (SPU: universal cuts)")
    ap.add_argument("--mechanism", help="a bundled parallel mechanism instead of the sample")
    args = ap.parse_args(argv)
    if args.mechanism is None:
        mech = sample_hexapod(args.type)
        xs, us = sample_states(mech, args.states)
    else:
        mech = bundled(args.mechanism)
        xs, us = reachable_states(args.mechanism, mech, args.states)
    r = time_mj_forward(mech, xs, us, args.repeats, use_c=not args.python)
    print(f"mechanism   {mech['name']}: nq={r['nq']} nv={r['nv']} constraint rows={r['nefc']}, "
          f"MuJoCo {r['mujoco_version']}")
    if "harness_error" in r:
        err = [ln for ln in r["harness_error"].splitlines() if ln.strip()]
        print(f"harness     FAILED, fell back to Python: {err[0]} ... {err[-1]}")
    elif "compile_seconds" in r:
        print(f"harness     {r['harness']} ({'cached' if r['harness_cached'] else 'compiled in %.2f s' % r['compile_seconds']})")
    print(f"method      {r['method']}")
    print(f"mj_forward  {r['ns_per_call']:.0f} ns per state (best of {r['repeats']} passes over "
          f"{r['n_states']} states; median pass {r['ns_median']:.0f} ns; thread CPU time: "
          f"best {r['cpu_ns_per_call']:.0f} ns, median {r['cpu_ns_median']:.0f} ns)")
    print(f"states      closure residual after Newton <= {r['closure_residual']:.1e}; MuJoCo's "
          f"constraint residual at state 0 {r['mujoco_constraint_residual0']:.1e}; "
          f"solver iterations at state 0: {r['solver_iterations']}")
    ref = reference_udot(mech, xs[0], us[0])
    mj = r["udot0"]
    np.set_printoptions(precision=6, suppress=False, linewidth=120)
    print(f"udot0 MuJoCo     {mj}")
    print(f"udot0 reference  {ref}   (exact, numpy, independent of MuJoCo)")
    rel = np.linalg.norm(mj - ref) / np.linalg.norm(ref)
    print(f"relative difference |udot_mj - udot_ref| / |udot_ref| = {rel:.2e} "
          f"(MuJoCo's constraints are soft: solimp d = {SOLIMP[0]})")
    print(f"harness vs Python bindings, max |diff| = {r['harness_vs_bindings']:.1e}")
    if args.mechanism is not None:
        ours = ours_udot(args.mechanism, mech, xs[:5], us[:5])
        mine = [platform_udot_at(mech, x, u) for x, u in zip(xs[:5], us[:5])]
        rel = max(np.linalg.norm(a - b) / np.linalg.norm(b) for a, b in zip(mine, ours))
        print(f"MuJoCo vs our step_accel over 5 states: largest relative udot difference "
              f"{rel:.2e}")
    return 0


def bundled(name: str) -> dict:
    """The numeric description of a bundled parallel mechanism (its spec in
    generator/mechanisms/)."""
    sys.path.insert(0, str(HERE.parent))
    from mechgen.generator.families.parallel.platform import numeric_platform
    from mechgen.generator.frontend import load as load_spec
    return numeric_platform(load_spec(HERE.parent / "generator" / "mechanisms" / f"{name}.toml"))


def reachable_states(name: str, mech: dict, n: int):
    """n states of tests/platforms.random_states (seed 7, as make bench) our kernel accepts."""
    from tests.platforms import random_states
    st = random_states(mech, 2 * n, 7)
    ok = np.isfinite(_ours_xdot(name, mech, st["x"], st["u"])).all(axis=1)
    return st["x"][ok][:n], st["u"][ok][:n]


def _ours_xdot(name: str, mech: dict, xs, us) -> np.ndarray:
    import mechgen
    m = mechgen.load(name)
    n = len(xs)
    z3, z6 = np.zeros((n, 3)), np.zeros((n, len(mech["legs"])))
    g = np.tile(np.asarray(mech["gravity"], float), (n, 1))
    return m.step_accel(xs, us, z6, z3, z3, g, p=np.tile(m.params(), (n, 1)), errors="nan")[0]


def ours_udot(name: str, mech: dict, xs, us) -> np.ndarray:
    """Our step_accel's udot at (xs, us) with MuJoCo's inputs: no drive force, no external
    load, the spec's gravity."""
    return _ours_xdot(name, mech, xs, us)[:, 6:]


def platform_udot_at(mech: dict, x, u) -> np.ndarray:
    """MuJoCo's platform acceleration at one state (Python bindings, fresh data)."""
    import mujoco
    model = mujoco.MjModel.from_xml_string(mjcf_from_platform(mech))
    data = mujoco.MjData(model)
    set_state(model, data, mech, x, u)
    mujoco.mj_forward(model, data)
    return platform_udot(model, data)


if __name__ == "__main__":
    sys.exit(main())
