"""The reference path: the docking right-hand side in numpy over the same generated kernels
(called one by one through the runtime), integrated by scipy's solve_ivp with its own event
location. Slow by design (Python per step); it checks the compiled driver and is the
baseline of the benchmark.

The equations are those of runtime/csrc/docking_sim.c (see its header comment), written
again here from the same definitions.
"""

from __future__ import annotations

import math
import time

import numpy as np

from mechgen.runtime.docking.csim import NY, DockingSim, alpha_C


def skew(c: np.ndarray) -> np.ndarray:
    return np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])


def quat_R(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def quat_dot(q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """qdot = 1/2 q (x) (0, w)."""
    a, b, c, d = q
    return 0.5 * np.array([-b * w[0] - c * w[1] - d * w[2], a * w[0] + c * w[2] - d * w[1],
                           a * w[1] + d * w[0] - b * w[2], a * w[2] + b * w[1] - c * w[0]])


def body_matrix(m: float, c: np.ndarray, Ic: np.ndarray, W: np.ndarray):
    """M and bias of a rigid body about a reference point (centre of mass c)."""
    IO = Ic + m * (c @ c * np.eye(3) - np.outer(c, c))
    S = skew(c)
    M = np.block([[m * np.eye(3), -m * S], [m * S, IO]])
    bias = np.concatenate([m * np.cross(W, np.cross(W, c)), np.cross(W, IO @ W)])
    return M, bias


class ReferenceRHS:
    """f(t, y) of the docking, in numpy; ``latched`` switches the latches."""

    def __init__(self, sim: DockingSim) -> None:
        self.sim, self.sc = sim, sim.sc
        self.mech, self.iface = sim.mech, sim.iface
        self.coupled_names = [o[0] for o in self.mech.kernels["coupled_step"].outputs]
        self.contact_names = [o[0] for o in self.iface.kernels["contact"].outputs]
        F = np.zeros(sim.nleg)
        if self.sc.drive_forces is not None:
            F[:] = self.sc.drive_forces
        self.F = F
        self.latched = 0
        self.nfev = 0
        self.q_ref = np.array([1.0, 0, 0, 0])      # the passive vehicle's held attitude

    def frames(self, y: np.ndarray) -> dict:
        sc = self.sc
        r_O, V_O, W, x, u = y[0:3], y[7:10], y[10:13], y[13:19], y[19:25]
        r_P, V_P, w_P = y[25:28], y[32:35], y[35:38]
        R_A, R_P, al = quat_R(y[3:7]), quat_R(y[28:32]), alpha_C(x)
        R_C = R_A @ al.T
        R_DA = R_C                                      # D_A axes = C's
        rC = r_O + R_A @ x[:3]
        r_DA = rC + R_C @ sc.ring_offset
        vC = V_O + R_A @ (np.cross(W, x[:3]) + u[:3])
        w_C = R_A @ (W + al.T @ u[3:])
        R = R_DA.T @ R_P
        v = R_DA.T @ (V_P - vC - np.cross(w_C, r_P - rC))
        w = R_DA.T @ (R_P @ w_P - w_C)
        return dict(R_A=R_A, R_P=R_P, al=al, r=R_DA.T @ (r_P - r_DA), R=R, v=v, w=w,
                    V_O0=R_A.T @ V_O)

    def contact(self, f: dict) -> dict:
        out = self.iface.contact(f["r"], f["R"].ravel(), f["v"], f["w"],
                                 np.array([float(self.latched)]), p=self.sim.p_iface)
        return dict(zip(self.contact_names, out))

    def evaluate(self, y: np.ndarray) -> tuple[dict, dict, dict]:
        sc, A, P = self.sc, self.sc.active, self.sc.passive
        W, x, u, w_P = y[10:13], y[13:19], y[19:25], y[35:38]
        f = self.frames(y)
        c = self.contact(f)
        fC, mC = c["f_A"], c["m_A"] + np.cross(sc.ring_offset, c["f_A"])
        fE = f["al"].T @ fC
        g0 = f["R_A"].T @ sc.gravity
        decoupled = sc.base_motion == "decoupled"
        Wz = np.zeros(3) if A.fixed or decoupled else W
        k = dict(zip(self.coupled_names, self.mech.coupled_step(
            x, u, self.F, fE, mC, g0, Wz, np.zeros(3), p=self.sim.p_mech)))
        udot, wrench = k["udot"].copy(), k["wrench"].copy()
        a = np.zeros(6)
        if not A.fixed:
            M, bias = body_matrix(A.mass, A.com, A.inertia, W)
            thrust = A.thrust * A.thrust_dir
            if A.thrust_until_capture and self.latched:
                thrust = np.zeros(3)
            gA = A.mass * g0
            rhs = np.concatenate([gA + thrust, np.cross(A.com, gA) + np.cross(A.com, thrust)])
            rhs += wrench - bias
            S = np.diag([-1.0, -1, -1, 1, 1, 1])   # a = [a_O; Omega_dot]; kernel takes g - a_O
            K = k["dwrench_dbase"].reshape(6, 6) @ S
            if decoupled:                           # the paper's approximation
                a = np.linalg.solve(M, rhs)
            else:
                a = np.linalg.solve(M - K, rhs)
                udot = udot + k["dudot_dbase"].reshape(6, 6) @ S @ a
                wrench = wrench + K @ a
        M, bias = body_matrix(P.mass, P.com, P.inertia, w_P)
        F_P, M_P = f["R"].T @ c["f_P"], f["R"].T @ c["m_P"]
        gP = f["R_P"].T @ (P.mass * sc.gravity)
        q, qr = y[28:32] / np.linalg.norm(y[28:32]), self.q_ref
        qe = np.array([qr @ q, qr[0] * q[1] - qr[1] * q[0] - qr[2] * q[3] + qr[3] * q[2],
                       qr[0] * q[2] + qr[1] * q[3] - qr[2] * q[0] - qr[3] * q[1],
                       qr[0] * q[3] - qr[1] * q[2] + qr[2] * q[1] - qr[3] * q[0]])
        tau = -P.attitude_kp * 2 * math.copysign(1.0, qe[0]) * qe[1:] - P.attitude_kd * w_P
        rhs = np.concatenate([F_P + gP, M_P + np.cross(P.com, gP) + tau]) - bias
        aP = np.linalg.solve(M, rhs)
        k.update(udot=udot, wrench=wrench, a=a, aP=aP)
        return f, c, k


    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        self.nfev += 1
        f, c, k = self.evaluate(y)
        dy = np.empty(NY)
        dy[0:3] = y[7:10]
        dy[3:7] = quat_dot(y[3:7], y[10:13])
        dy[7:10] = f["R_A"] @ k["a"][:3]
        dy[10:13] = k["a"][3:]
        dy[13:19] = k["xdot"][:6]
        dy[19:25] = k["udot"]
        dy[25:28] = y[32:35]
        dy[28:32] = quat_dot(y[28:32], y[35:38])
        dy[32:35] = f["R_P"] @ k["aP"][:3]
        dy[35:38] = k["aP"][3:]
        dy[38] = k["damping_power"][0] + c["P_diss"][0]
        return dy


def run(sim: DockingSim, y0: np.ndarray) -> dict:
    """One case by solve_ivp (RK45: the same Dormand-Prince pair) with the scenario's
    tolerances; capture is a terminal event after which the latches close and integration
    restarts. Peaks on the same output grid as the compiled driver, from the dense output."""
    from scipy.integrate import solve_ivp

    sc = sim.sc
    f = ReferenceRHS(sim)
    f.q_ref = y0[28:32] / np.linalg.norm(y0[28:32])
    atol = np.full(NY, sc.atol_position)
    atol[38] = sc.atol_position * 1e3

    def margin(t, y):
        return f.contact(f.frames(y))["capture_margin"][0]
    margin.terminal, margin.direction = True, 1.0
    t0 = time.perf_counter()
    pieces, t_capture = [], math.nan
    if sc.start_latched:
        f.latched = 1
        sol = solve_ivp(f, (0.0, min(sc.duration, sc.after_capture)), y0, method="RK45",
                        rtol=sc.rtol, atol=atol, dense_output=True, max_step=sc.hmax)
        pieces.append((sol, 1))
        t_capture = 0.0
    else:
        sol = solve_ivp(f, (0.0, sc.duration), y0, method="RK45", rtol=sc.rtol, atol=atol,
                        dense_output=True, events=margin, max_step=sc.hmax)
        pieces.append((sol, 0))
    if not sc.start_latched and sol.status == 1 and len(sol.t_events[0]):
        t_capture = float(sol.t_events[0][0])
        f.latched = 1
        t_end = min(sc.duration, t_capture + sc.after_capture)
        sol2 = solve_ivp(f, (t_capture, t_end), sol.y_events[0][0], method="RK45",
                         rtol=sc.rtol, atol=atol, dense_output=True, max_step=sc.hmax)
        pieces.append((sol2, 1))
    seconds = time.perf_counter() - t0
    # the output grid
    peaks = {"peak_base_force": 0.0, "peak_base_moment": 0.0, "peak_contact_force": 0.0}
    k = 0
    for i, (s, latched) in enumerate(pieces):
        t_hi = s.t[-1]
        last = i == len(pieces) - 1
        while True:
            tk = k * sc.dt_out
            if tk > t_hi or (not last and tk >= t_hi) or tk > sc.duration:
                break
            d = sim.diagnostics(s.sol(tk), latched, tk)
            peaks["peak_base_force"] = max(peaks["peak_base_force"], np.linalg.norm(d[1:4]))
            peaks["peak_base_moment"] = max(peaks["peak_base_moment"], np.linalg.norm(d[4:7]))
            peaks["peak_contact_force"] = max(peaks["peak_contact_force"], d[13])
            k += 1
    return {"t_capture": t_capture, "captured": not math.isnan(t_capture), **peaks,
            "nfev": f.nfev, "seconds": seconds, "energy_absorbed": pieces[-1][0].y[38, -1]}
