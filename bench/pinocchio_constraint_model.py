"""The parallel mechanism of docs/parallel_numeric_format.md as a Pinocchio model with loop
constraints (``RigidConstraintModel``), for the race against ``constraintDynamics``.

    desc = describe(mech)                       # plain description: joints, bodies, constraints
    model, cmodels = build(desc)                # Pinocchio model + constraint models (bindings)
    q, v = pin_state(desc, model, x, u, p, pdot)  # Pinocchio's state at our state
    tau = pin_tau(desc, model, x, Q, fE, mE)
    udot = platform_udot(desc, x, u, ddq)       # [dv_C/dt (frame 0), domega_C/dt (frame C)]

The same ``desc`` is written as text for the C++ harness (``to_text``), which builds the very
same model with the C++ API: one description, two builders.

Modelling (exact: no added mass, no softness):
- Platform C: a free-flyer joint at the universe (identity placement), inertia m, centre O_C,
  I about O_C in frame C. Pinocchio's free-flyer velocity is [R^T v_C, omega_C] (both in frame
  C) and its acceleration the time derivative of that vector, so
  dv_C/dt (frame 0) = R (a_lin + omega_C x R^T v_C).
- Leg k: its joints in order, each a revolute (JointModelRX/RY/RZ) or prismatic (PX/PY/PZ)
  joint with placement SE3(gamma^T, l) (gamma is the format's coordinate transform parent ->
  joint frame, so its transpose is Pinocchio's joint -> parent rotation); Pinocchio's active
  rotation R_a(q) is the transpose of the format's A_a(q), so q is the format's q. Body j:
  Inertia(m, d, I - m (|d|^2 E - d d^T)) (the format gives I about the body origin). A joint's
  reflected inertia J is its armature.
- Spherical cut (m = 3): CONTACT_3D between the point l_L of the leg's last body and the point
  l_C of C.
- Universal cut (m = 4): Pinocchio's constraints remove 3 (ball) or 6 (weld) freedoms, so the
  U joint is built as joints: C -> RZ (about e2 = gamma_C^T e_z, the joint frame at l_C with
  orientation gamma_C) -> massless cross -> RY (about e1, the leg side's y) -> a body whose
  frame is the leg's last body frame, welded to it by CONTACT_6D. Half the last body's mass
  and inertia sits on each side of the weld (a welded pair is one rigid body, so the split is
  exact), so no leaf of the tree is massless (Pinocchio's factorisation pivots on each
  subtree's inertia; a massless leaf gives a zero pivot). Any relative orientation with
  e1 . e2 = 0 is Rz(a) Ry(b) of C's U frame, so the two angles always exist.
- Joint order: the platform, the U-cut joints hanging from it, then the legs. Pinocchio's
  algorithms (CRBA, the constraint Cholesky) take every subtree's joints to be numbered
  contiguously; adding a U cut's joints after its leg gave accelerations 7 % off (measured).
- Gravity: model.gravity = g (frame 0). Joint forces: the laws at (p, pdot) plus the drive
  input (computed outside the timed loop, given as tau); the external load on C as the
  free-flyer's generalised force [R^T f_E, m_E].
"""

from __future__ import annotations

import numpy as np

AXES = "XYZ"


def _inertia(m: float, d, I_O) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre, inertia about the centre) of a body given about its origin."""
    d = np.asarray(d, float)
    Ic = np.asarray(I_O, float) - m * (d @ d * np.eye(3) - np.outer(d, d))
    return float(m), d, 0.5 * (Ic + Ic.T)


def _massless(body: dict) -> bool:
    return float(body["m"]) == 0.0 and not np.any(np.asarray(body["I"], float))


def describe(mech: dict) -> dict:
    """The Pinocchio model of ``mech`` as plain data (see the module docstring).

    Joints are numbered as Pinocchio numbers them (1 = the platform's free flyer); each entry:
    {"name", "parent", "type" ("FF", "RX".."PZ"), "R", "p" (placement), "bodies": [(m, c, Ic,
    R, p)], "armature"}. Constraints: {"type" (3 or 6), "j1", "R1", "p1", "j2", "R2", "p2"}.
    ``legs``: per leg the joint ids of its chain and, for a U cut, the ids of the two U joints.
    """
    plat = mech["platform"]
    joints = [{"name": "platform", "parent": 0, "type": "FF", "R": np.eye(3), "p": np.zeros(3),
               "bodies": [(*_inertia(float(plat["m"]), np.zeros(3), plat["I"]),
                           np.eye(3), np.zeros(3))], "armature": 0.0}]
    u_joints = {}
    for k, leg in enumerate(mech["legs"]):       # C's subtree first: Pinocchio needs each
        if leg["cut"]["m"] == 4:                 # subtree's joints numbered contiguously
            u_joints[k] = _add_u_cut(joints, leg)
    constraints, legs = [], []
    for k, leg in enumerate(mech["legs"]):
        ids = _add_leg(joints, leg, k)
        cut = leg["cut"]
        if cut["m"] == 3:
            constraints.append({"type": 3, "j1": ids[-1], "R1": np.eye(3),
                                "p1": np.asarray(cut["l_L"], float),
                                "j2": 1, "R2": np.eye(3), "p2": np.asarray(cut["l_C"], float)})
        elif cut["m"] == 4:
            jb = u_joints[k][1]
            R2, p2 = joints[jb - 1]["bodies"][0][3:]
            constraints.append({"type": 6, "j1": ids[-1], "R1": np.eye(3), "p1": np.zeros(3),
                                "j2": jb, "R2": R2, "p2": p2})
        else:
            raise ValueError(f"legs[{k}].cut.m = {cut['m']}: 3 or 4 expected")
        legs.append({"joints": ids, "u_joints": u_joints.get(k)})
    g = np.asarray(mech.get("gravity", [0.0, 0.0, -9.81]), float)
    return {"name": mech.get("name", "platform"), "gravity": g, "joints": joints,
            "constraints": constraints, "legs": legs}


def _last_body_share(leg: dict) -> tuple[float, np.ndarray, np.ndarray]:
    """(m, c, Ic) of the leg's last body, halved for a U cut (the other half across the weld)."""
    body = leg["bodies"][-1]
    m, c, Ic = _inertia(float(body["m"]), body["d"], body["I"])
    return (m / 2, c, Ic / 2) if leg["cut"]["m"] == 4 else (m, c, Ic)


def _add_u_cut(joints: list, leg: dict) -> tuple[int, int]:
    """The U joint of a universal cut as two joints on C: RZ about e2 (joint frame at l_C,
    orientation gamma_C), a massless cross, RY about e1 carrying half the leg's last body,
    whose frame is placed as the last body's frame in the leg side's U frame (l_L, gamma_L)."""
    cut = leg["cut"]
    gL, lL = np.asarray(cut["gamma_L"], float), np.asarray(cut["l_L"], float)
    joints.append({"name": f"{leg['name']}_cut_a", "parent": 1, "type": "RZ",
                   "R": np.asarray(cut["gamma_C"], float).T,
                   "p": np.asarray(cut["l_C"], float), "bodies": [], "armature": 0.0})
    joints.append({"name": f"{leg['name']}_cut_b", "parent": len(joints), "type": "RY",
                   "R": np.eye(3), "p": np.zeros(3),
                   "bodies": [(*_last_body_share(leg), gL, -gL @ lL)], "armature": 0.0})
    return len(joints) - 1, len(joints)


def _add_leg(joints: list, leg: dict, k: int) -> list[int]:
    """The leg's joints as a chain from the universe; returns their Pinocchio ids."""
    ids, parent = [], 0
    laws = leg.get("laws", [])
    if _massless(leg["bodies"][-1]):
        raise ValueError(f"legs[{k}]: its last body is massless (a zero pivot in Pinocchio's "
                         "factorisation)")
    for i, (jt, body) in enumerate(zip(leg["joints"], leg["bodies"], strict=True)):
        if jt["kind"] not in ("R", "P") or int(jt["axis"]) not in (0, 1, 2):
            raise ValueError(f"legs[{k}].joints[{i}]: kind R or P about axis 0, 1 or 2 expected")
        last = i == len(leg["joints"]) - 1
        inertia = (_last_body_share(leg) if last
                   else _inertia(float(body["m"]), body["d"], body["I"]))
        joints.append({"name": f"{leg['name']}_{jt['name']}", "parent": parent,
                       "type": jt["kind"] + AXES[int(jt["axis"])],
                       "R": np.asarray(jt["gamma"], float).T, "p": np.asarray(jt["l"], float),
                       "bodies": [] if _massless(body) else [(*inertia, np.eye(3), np.zeros(3))],
                       "armature": float(laws[i].get("inertia", 0.0)) if i < len(laws) else 0.0})
        parent = len(joints)
        ids.append(parent)
    return ids


def build(desc: dict):
    """(model, constraint models) through Pinocchio's Python bindings."""
    import pinocchio as pin
    model = pin.Model()
    model.name = desc["name"]
    for jt in desc["joints"]:
        jm = pin.JointModelFreeFlyer() if jt["type"] == "FF" else getattr(
            pin, f"JointModel{jt['type']}")()
        jid = model.addJoint(jt["parent"], jm, pin.SE3(jt["R"], jt["p"]), jt["name"])
        for m, c, Ic, R, p in jt["bodies"]:
            model.appendBodyToJoint(jid, pin.Inertia(m, c, Ic), pin.SE3(R, p))
        if jt["armature"]:
            model.armature[model.joints[jid].idx_v] = jt["armature"]
    model.gravity = pin.Motion(np.concatenate([desc["gravity"], np.zeros(3)]))
    kind = {3: pin.ContactType.CONTACT_3D, 6: pin.ContactType.CONTACT_6D}
    cms = [pin.RigidConstraintModel(kind[c["type"]], model, c["j1"], pin.SE3(c["R1"], c["p1"]),
                                    c["j2"], pin.SE3(c["R2"], c["p2"]), pin.ReferenceFrame.LOCAL)
           for c in desc["constraints"]]
    return model, cms


def _rotation_C(x) -> np.ndarray:
    """Frame C -> frame 0 (active): alpha_C^T, alpha_C = A_x(psi_x) A_z(psi_z) A_y(psi_y)."""
    from bench.mujoco_race import alpha_C
    return alpha_C(np.asarray(x, float)).T


def pin_state(desc: dict, model, x, u, p, pdot) -> tuple[np.ndarray, np.ndarray]:
    """Pinocchio's (q, v) at the platform state (x, u) with leg coordinates p, rates pdot (lists
    per leg, or flat arrays in leg order); a U cut's two angles and rates from the legs'
    kinematics (Pinocchio's forward kinematics, not its dynamics)."""
    import pinocchio as pin
    R = _rotation_C(x)
    q, v = pin.neutral(model), np.zeros(model.nv)
    q[:3] = x[:3]
    q[3:7] = pin.Quaternion(R).coeffs()              # x, y, z, w
    v[:3], v[3:6] = R.T @ np.asarray(u[:3], float), u[3:6]
    flat_p, flat_pd = np.concatenate([np.ravel(a) for a in p]), np.concatenate(
        [np.ravel(a) for a in pdot])
    i = 0
    for leg in desc["legs"]:
        for jid in leg["joints"]:
            q[model.joints[jid].idx_q], v[model.joints[jid].idx_v] = flat_p[i], flat_pd[i]
            i += 1
    if i != len(flat_p):
        raise ValueError(f"p: {len(flat_p)} leg coordinates for {i} leg joints")
    data = model.createData()
    pin.forwardKinematics(model, data, q, v)
    for leg in desc["legs"]:
        if leg["u_joints"] is None:
            continue
        ja, jb = leg["u_joints"]
        last = leg["joints"][-1]
        R_U = data.oMi[ja].rotation                  # C's U frame (joint a at 0)
        R_L = data.oMi[last].rotation @ desc["joints"][jb - 1]["bodies"][0][3].T
        Rr = R_U.T @ R_L                              # = Rz(a) Ry(b)
        a, b = np.arctan2(-Rr[0, 1], Rr[1, 1]), np.arctan2(-Rr[2, 0], Rr[2, 2])
        w_L = data.oMi[last].rotation @ data.v[last].angular
        w_C = data.oMi[1].rotation @ data.v[1].angular
        w = R_U.T @ (w_L - w_C)                       # = a_dot e_z + b_dot Rz(a) e_y
        q[model.joints[ja].idx_q], q[model.joints[jb].idx_q] = a, b
        v[model.joints[ja].idx_v] = w[2]
        v[model.joints[jb].idx_v] = -np.sin(a) * w[0] + np.cos(a) * w[1]
    return q, v


def pin_tau(desc: dict, model, x, Q, fE, mE) -> np.ndarray:
    """Generalised forces: the leg joints' Q (flat, leg order), [R^T f_E, m_E] on the platform."""
    tau = np.zeros(model.nv)
    tau[:3], tau[3:6] = _rotation_C(x).T @ np.asarray(fE, float), mE
    flat = np.concatenate([np.ravel(a) for a in Q])
    ids = [jid for leg in desc["legs"] for jid in leg["joints"]]
    for jid, Qj in zip(ids, flat, strict=True):
        tau[model.joints[jid].idx_v] = Qj
    return tau


def platform_udot(x, v, ddq) -> np.ndarray:
    """[dv_C/dt (frame 0), domega_C/dt (frame C)] from the free flyer's v and ddq."""
    R = _rotation_C(x)
    return np.concatenate([R @ (ddq[:3] + np.cross(v[3:6], v[:3])), ddq[3:6]])


def to_text(desc: dict) -> list[str]:
    """Config lines for bench/pinocchio_constraint_harness.cpp (numbers with repr: exact)."""
    num = lambda a: " ".join(repr(float(t)) for t in np.ravel(a))
    lines = [f"gravity {num(desc['gravity'])}"]
    for jt in desc["joints"]:
        lines.append(f"joint {jt['type']} {jt['parent']} {num(jt['R'])} {num(jt['p'])} "
                     f"{jt['armature']!r}")
        for m, c, Ic, R, p in jt["bodies"]:
            lines.append(f"body {m!r} {num(c)} {num(Ic)} {num(R)} {num(p)}")
    for c in desc["constraints"]:
        lines.append(f"constraint {c['type']} {c['j1']} {num(c['R1'])} {num(c['p1'])} "
                     f"{c['j2']} {num(c['R2'])} {num(c['p2'])}")
    return lines
