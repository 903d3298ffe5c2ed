"""Pinocchio (PyPI ``pin``) as an independent reference for chains read from URDF.

Pinocchio parses the same URDF file with its own parser (urdfdom) and runs its own algorithms
(spatial algebra, RNEA, CRBA, ABA), so agreement tests our URDF reader and our kernels at once.
Our coordinates are matched to Pinocchio's by joint name; a free base is given to Pinocchio as
the composite joint Px Py Pz Ry Rz Rx, which has exactly our six base coordinates, and a
body-twist base (``base_velocity = "body"``) as Pinocchio's own free flyer: the same q after
reordering the quaternion (ours w, x, y, z; Pinocchio's x, y, z, w) and the same velocities.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from mechgen.generator.model import Chain

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@dataclass
class PinModel:
    model: pin.Model
    data: pin.Data
    perm: np.ndarray          # our coordinate i is Pinocchio's velocity index perm[i]
    qperm: list[tuple[int, bool]]  # (Pinocchio's q index, unbounded: stored as cos, sin)
    frames: list[tuple[str, bool, int]]   # per FK output: (name, is a joint, pin id)


def free_base_joint() -> pin.JointModelComposite:
    root = pin.JointModelComposite()
    for J in (pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ,
              pin.JointModelRY, pin.JointModelRZ, pin.JointModelRX):
        root.addJoint(J())
    return root


def build(urdf: Path, chain: Chain, lock: dict[str, float] | None = None,
          urdf_names: dict[str, str] | None = None) -> PinModel:
    """Pinocchio's model of ``urdf`` matching ``chain`` (same base, same locked joints).

    ``urdf_names``: our name -> URDF name where the reader had to rename (default: same)."""
    names = urdf_names or {}
    free_flyer = chain.base_velocity == "body"
    if free_flyer:
        model = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
    elif chain.base == "free":
        model = pin.buildModelFromUrdf(str(urdf), free_base_joint())
    else:
        model = pin.buildModelFromUrdf(str(urdf))
    if lock:
        full = model
        q = pin.neutral(full)
        for jn, v in lock.items():
            jid = full.getJointId(jn)
            if full.nqs[jid] == 2:   # unbounded revolute: (cos, sin)
                q[full.idx_qs[jid]:full.idx_qs[jid] + 2] = np.cos(v), np.sin(v)
            else:
                q[full.idx_qs[jid]] = v
        model = pin.buildReducedModel(full, [full.getJointId(jn) for jn in lock], q)
    model.gravity = pin.Motion(np.array([float(g) for g in chain.gravity] + [0, 0, 0]))
    assert model.nv == chain.n
    perm, qperm = [], []
    if free_flyer:   # our q: x, y, z, qw, qx, qy, qz; Pinocchio's: x, y, z, qx, qy, qz, qw
        i0 = model.idx_qs[model.getJointId("root_joint")]
        qperm = [(i0 + k, False) for k in (0, 1, 2, 6, 3, 4, 5)]
    for i, cname in enumerate(chain.coordinates):
        if chain.base == "free" and i < 6:
            jid = model.getJointId("root_joint")
            perm.append(model.idx_vs[jid] + i)
            if not free_flyer:
                qperm.append((model.idx_qs[jid] + i, False))
        else:
            jid = model.getJointId(names.get(cname, cname))
            perm.append(model.idx_vs[jid])
            # a continuous joint is Pinocchio's unbounded revolute: q stored as (cos, sin)
            qperm.append((model.idx_qs[jid], model.nqs[jid] == 2))
    frames = []
    for bname, j in chain.named_bodies:
        if chain.base == "free" and j == 6:
            frames.append((bname, True, model.getJointId("root_joint")))
            continue
        jname = chain.joints[j - 1].name
        frames.append((bname, True, model.getJointId(names.get(jname, jname))))
    for pt in chain.points:
        frames.append((pt.name, False, model.getFrameId(names.get(pt.name, pt.name))))
    return PinModel(model, model.createData(), np.array(perm), qperm, frames)


def _to_pin(pm: PinModel, x: np.ndarray) -> np.ndarray:
    out = np.zeros(pm.model.nv)
    out[pm.perm] = x
    return out


def _q_to_pin(pm: PinModel, q: np.ndarray) -> np.ndarray:
    out = np.zeros(pm.model.nq)
    for x, (i, unbounded) in zip(q, pm.qperm):
        if unbounded:
            out[i], out[i + 1] = np.cos(x), np.sin(x)
        else:
            out[i] = x
    return out


def _from_pin(pm: PinModel, x: np.ndarray) -> np.ndarray:
    return np.asarray(x)[pm.perm]


def _placement(pm: PinModel, is_joint: bool, i: int) -> pin.SE3:
    return pm.data.oMi[i] if is_joint else pm.data.oMf[i]


def forward_kinematics(pm: PinModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """r (frame 0) and tau (frame 0 -> link) of each reported link, our layout."""
    pin.forwardKinematics(pm.model, pm.data, _q_to_pin(pm, q))
    pin.updateFramePlacements(pm.model, pm.data)
    Ms = [_placement(pm, isj, i) for _, isj, i in pm.frames]
    return (np.array([M.translation for M in Ms]), np.array([M.rotation.T for M in Ms]))


def jacobians(pm: PinModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """T = dv/dqd, R = domega/dqd (world axes) of each reported link origin."""
    pin.computeJointJacobians(pm.model, pm.data, _q_to_pin(pm, q))
    pin.updateFramePlacements(pm.model, pm.data)
    Ts, Rs = [], []
    for _, isj, i in pm.frames:
        J = (pin.getJointJacobian(pm.model, pm.data, i, LWA) if isj
             else pin.getFrameJacobian(pm.model, pm.data, i, LWA))[:, pm.perm]
        Ts.append(J[:3])
        Rs.append(J[3:])
    return np.array(Ts), np.array(Rs)


def velocities(pm: PinModel, q, qd) -> dict[str, np.ndarray]:
    """v, omega of each body origin and the velocity-product accelerations w, eps (qdd = 0),
    world axes; from Pinocchio's spatial (local) velocity and acceleration of each joint."""
    pin.forwardKinematics(pm.model, pm.data, _q_to_pin(pm, q), _to_pin(pm, qd),
                          np.zeros(pm.model.nv))
    out = {k: [] for k in ("v", "omega", "w", "eps")}
    for _, isj, i in pm.frames:
        if not isj:
            continue
        R = pm.data.oMi[i].rotation
        v, a = pm.data.v[i], pm.data.a[i]
        out["v"].append(R @ v.linear)
        out["omega"].append(R @ v.angular)
        out["w"].append(R @ (a.linear + np.cross(v.angular, v.linear)))
        out["eps"].append(R @ a.angular)
    return {k: np.array(v) for k, v in out.items()}


def mass_matrix(pm: PinModel, q) -> np.ndarray:
    M = pin.crba(pm.model, pm.data, _q_to_pin(pm, q))
    M = np.triu(M) + np.triu(M, 1).T
    return M[np.ix_(pm.perm, pm.perm)]


def inverse_dynamics(pm: PinModel, q, qd, qdd) -> np.ndarray:
    return _from_pin(pm, pin.rnea(pm.model, pm.data, _q_to_pin(pm, q), _to_pin(pm, qd),
                                  _to_pin(pm, qdd)))


def bias(pm: PinModel, q, qd, Q) -> np.ndarray:
    """b = Q - h(q, qd) (Pinocchio's nonlinear effects)."""
    return Q - _from_pin(pm, pin.nonLinearEffects(pm.model, pm.data, _q_to_pin(pm, q),
                                                  _to_pin(pm, qd)))


def forward_dynamics(pm: PinModel, q, qd, Q) -> np.ndarray:
    return _from_pin(pm, pin.aba(pm.model, pm.data, _q_to_pin(pm, q), _to_pin(pm, qd),
                                 _to_pin(pm, Q)))


def energy(pm: PinModel, q, qd) -> tuple[float, float]:
    T = pin.computeKineticEnergy(pm.model, pm.data, _q_to_pin(pm, q), _to_pin(pm, qd))
    V = pin.computePotentialEnergy(pm.model, pm.data, _q_to_pin(pm, q))
    return float(T), float(V)
