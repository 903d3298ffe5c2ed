"""Plain numpy reference of the parallel-manipulator dynamics of paper 000.

Golubev & Yaskevich, "Dynamic equations of peripheral docking mechanisms as parallel
manipulators" (docs/papers.md, paper 000), read through docs/algorithms.md section 1. No code generation:
every step is written with 3x3 / 3-vector numpy arrays in frame 0, one function per step,
variable names from the paper. The mechanism dict and all conventions are those of
``docs/parallel_numeric_format.md``:

* rotation matrices are passive coordinate transforms (frame 0 -> frame j for ``tau``);
* pose ``x = [r_C, psi_y, psi_z, psi_x]``, ``alpha_C = A_x(psi_x) A_z(psi_z) A_y(psi_y)``;
* ``u = [v_C (frame 0), omega_C (frame C)]``;
* each leg is cut at its joint on C; ``cut["m"] == 3`` (spherical removed) or 4 (universal
  removed, e1 = gamma_L^T e_y fixed in the last body, e2 = gamma_C^T e_z fixed in C);
  the leg keeps n_k = m_k one-DoF joints (removing a joint of 6 - m_k DoF from a 6-DoF leg),
  so C^(d)_k is square.

Steps (paper sections):
  3-4  :func:`leg_kinematics`          recursive kinematics of a leg in frame 0 and of its cut point
  4    :func:`closure_residual`,
       :func:`solve_closure`           position closure f_k = 0 by Newton's iteration (eq. 4.6)
  4    :func:`velocity_constraints`    C^(i)_k u_C = C^(d)_k pdot_k, H_k = C^(d)^-1 C^(i) (eq. 4.4)
  4    :func:`acceleration_terms`      pddot_k = H_k udot_C + h_k (eq. 4.5)
  5    :func:`leg_mass_matrix`,
       :func:`leg_bias`                A_k, b_k by the composite-body algorithm
  5    :func:`platform_dynamics`       M_C, s_C
  5    :func:`reduce_dynamics`         A*_C, b*_C (eq. 5.3-5.4)
  6    :func:`multipliers`             lambda_k = C^(d)^-T (b_k - A_k pddot_k) (eq. 6.1)
  6    :func:`body_loads`,
       :func:`base_loads`              forward / backward passes (eq. 6.2-6.3)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

E3 = np.eye(3)
NEWTON_TOL = 1e-14
NEWTON_MAX_ITER = 50


# ---------------------------------------------------------------------------
# elementary matrices
# ---------------------------------------------------------------------------


def skew(a: ArrayLike) -> Array:
    """skew(a) b = a x b."""
    a = np.asarray(a, dtype=float)
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def A_axis(axis: int, q: float) -> Array:
    """Elementary passive rotation A_x, A_y, A_z (format doc, 'Conventions')."""
    c, s = np.cos(q), np.sin(q)
    if axis == 0:
        return np.array([[1.0, 0.0, 0.0], [0.0, c, s], [0.0, -s, c]])
    if axis == 1:
        return np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])
    if axis == 2:
        return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    raise ValueError(f"axis must be 0, 1 or 2, got {axis!r}")


def platform_alpha(psi_y: float, psi_z: float, psi_x: float) -> Array:
    """alpha_C = A_x(psi_x) A_z(psi_z) A_y(psi_y): frame 0 -> frame C (paper section 3)."""
    return A_axis(0, psi_x) @ A_axis(2, psi_z) @ A_axis(1, psi_y)


def platform_pose(x: ArrayLike) -> tuple[Array, Array]:
    """Pose x = [x_C, y_C, z_C, psi_y, psi_z, psi_x] -> (r_C in frame 0, alpha_C)."""
    x = np.asarray(x, dtype=float)
    return x[:3].copy(), platform_alpha(x[3], x[4], x[5])


def angle_rates_matrix(x: ArrayLike) -> Array:
    """G with omega_C = G(psi) psidot for the y-z-x sequence (omega_C in frame C).

    omega_C = A_x A_z e_y psid_y + A_x e_z psid_z + e_x psid_x (paper section 3); singular
    at psi_z = +-90 deg.
    """
    x = np.asarray(x, dtype=float)
    Ax, Az = A_axis(0, x[5]), A_axis(2, x[4])
    return np.column_stack([Ax @ Az @ E3[1], Ax @ E3[2], E3[0]])


# ---------------------------------------------------------------------------
# recursive kinematics of a leg (paper section 4, docs/algorithms.md section 1)
# ---------------------------------------------------------------------------


def joint_motion(joint: dict, p_j: float) -> tuple[Array, Array]:
    """(alpha_j, t_j) of joint J_j.

    Revolute about axis a: alpha_j = A_a(p_j), t_j = 0; prismatic: alpha_j = 1, t_j = p_j e_a.
    """
    a = int(joint["axis"])
    if joint["kind"] == "R":
        return A_axis(a, p_j), np.zeros(3)
    if joint["kind"] == "P":
        return E3.copy(), p_j * E3[a]
    raise ValueError(f"joint kind must be 'R' or 'P', got {joint['kind']!r}")


def leg_kinematics(leg: dict, p: ArrayLike, pdot: ArrayLike | None = None) -> dict[str, Any]:
    """Recursive kinematics of one leg in frame 0 (paper section 4).

    For j = 1..n, from r_0 = 0, T_0 = R_0 = 0, omega_0 = w_0 = eps_0 = 0, tau_0 = 1:

        theta_J_{j-1} = gamma_{j-1} tau_{j-1}         tau_j = alpha_j theta_J_{j-1}
        r_rel_j = tau_{j-1}^T l_{j-1} + theta_J_{j-1}^T t_j
        T_rel_j, R_rel_j: the joint axis theta_J_{j-1}^T e_a in column j
        R_j = R_{j-1} + R_rel_j          T_j = T_{j-1} - skew(r_rel_j) R_{j-1} + T_rel_j
        v_rel_j = T_rel_j pdot           omega_rel_j = R_rel_j pdot
        omega_j = omega_{j-1} + omega_rel_j
        w_j = w_{j-1} + eps_{j-1} x r_rel_j + omega_{j-1} x (omega_{j-1} x r_rel_j)
              + 2 omega_{j-1} x v_rel_j
        eps_j = eps_{j-1} + omega_{j-1} x omega_rel_j

    and then at the cut point (centre of the removed joint):
        l0_L = tau_n^T l_L,   r_L = r_n + l0_L,   T_L = T_n - skew(l0_L) R_n,
        w_L = w_n + eps_n x l0_L + omega_n x (omega_n x l0_L).

    Lists are indexed by body j = 0..n (entry 0 is the base); per-joint lists
    (theta_J, r_rel, axis0, T_rel, R_rel) are indexed j-1 = 0..n-1.
    """
    joints = leg["joints"]
    n = len(joints)
    p = np.asarray(p, dtype=float)
    pdot = np.zeros(n) if pdot is None else np.asarray(pdot, dtype=float)

    tau, r = [E3.copy()], [np.zeros(3)]
    T, R = [np.zeros((3, n))], [np.zeros((3, n))]
    omega, w, eps = [np.zeros(3)], [np.zeros(3)], [np.zeros(3)]
    v = [np.zeros(3)]
    theta_J, r_rel, axis0, T_rel_l, R_rel_l = [], [], [], [], []
    for j, joint in enumerate(joints):  # joint J_{j+1}, body B_{j+1}
        alpha_j, t_j = joint_motion(joint, p[j])
        # theta^J_{j-1} = gamma_{j-1} tau_{j-1};  tau_j = alpha_j theta^J_{j-1}
        th = np.asarray(joint["gamma"], dtype=float) @ tau[-1]
        tau_j = alpha_j @ th
        # r_{j-1,j}^(0) = tau_{j-1}^T l_{j-1} + theta^J^T t_j
        rr = tau[-1].T @ np.asarray(joint["l"], dtype=float) + th.T @ t_j
        # joint axis in frame 0; T^rel(0)_j, R^rel(0)_j hold it in column j
        e0 = th.T @ E3[int(joint["axis"])]
        T_rel, R_rel = np.zeros((3, n)), np.zeros((3, n))
        (R_rel if joint["kind"] == "R" else T_rel)[:, j] = e0
        v_rel, omega_rel = T_rel @ pdot, R_rel @ pdot
        # partial velocities
        R_j = R[-1] + R_rel
        T_j = T[-1] - skew(rr) @ R[-1] + T_rel
        # velocities and velocity-product accelerations
        om_prev = omega[-1]
        omega_j = om_prev + omega_rel
        v_j = v[-1] + np.cross(om_prev, rr) + v_rel
        w_j = (w[-1] + np.cross(eps[-1], rr) + np.cross(om_prev, np.cross(om_prev, rr))
               + 2.0 * np.cross(om_prev, v_rel))
        eps_j = eps[-1] + np.cross(om_prev, omega_rel)

        theta_J.append(th); r_rel.append(rr); axis0.append(e0)
        T_rel_l.append(T_rel); R_rel_l.append(R_rel)
        tau.append(tau_j); r.append(r[-1] + rr); T.append(T_j); R.append(R_j)
        omega.append(omega_j); v.append(v_j); w.append(w_j); eps.append(eps_j)

    cut = leg["cut"]
    # cut point: l^L(0) = tau_n^T l^L_n
    l0_L = tau[-1].T @ np.asarray(cut["l_L"], dtype=float)
    r_L = r[-1] + l0_L
    T_L = T[-1] - skew(l0_L) @ R[-1]
    v_L = v[-1] + np.cross(omega[-1], l0_L)
    w_L = w[-1] + np.cross(eps[-1], l0_L) + np.cross(omega[-1], np.cross(omega[-1], l0_L))
    # e1: first axis of the removed U, fixed in the last body (frame 0)
    e1 = tau[-1].T @ (np.asarray(cut["gamma_L"], dtype=float).T @ E3[1])
    return dict(n=n, p=p, pdot=pdot, tau=tau, r=r, T=T, R=R, omega=omega, v=v, w=w, eps=eps,
                theta_J=theta_J, r_rel=r_rel, axis0=axis0, T_rel=T_rel_l, R_rel=R_rel_l,
                l0_L=l0_L, r_L=r_L, T_L=T_L, v_L=v_L, w_L=w_L, e1=e1)


def platform_cut_point(leg: dict, r_C: Array, alpha_C: Array) -> tuple[Array, Array, Array]:
    """Removed joint on C: (r^L_C = r_C + alpha_C^T l_C, l0_C = alpha_C^T l_C, e2 in frame 0)."""
    cut = leg["cut"]
    l0_C = alpha_C.T @ np.asarray(cut["l_C"], dtype=float)
    e2 = alpha_C.T @ (np.asarray(cut["gamma_C"], dtype=float).T @ E3[2])
    return r_C + l0_C, l0_C, e2


# ---------------------------------------------------------------------------
# loop closure (paper section 4)
# ---------------------------------------------------------------------------


def closure_residual(leg: dict, p: ArrayLike, r_C: Array, alpha_C: Array) -> Array:
    """f_k(p) of eq. 4.6: [r^L - r^L_C] (m = 3) or [r^L - r^L_C; e1^T e2] (m = 4), frame 0."""
    kin = leg_kinematics(leg, p)
    r_LC, _, e2 = platform_cut_point(leg, r_C, alpha_C)
    f = kin["r_L"] - r_LC
    if leg["cut"]["m"] == 4:
        f = np.append(f, kin["e1"] @ e2)
    return f


def velocity_constraints(leg: dict, kin: dict, alpha_C: Array) -> tuple[Array, Array]:
    """(C^(i)_k, C^(d)_k) with C^(i) u_C = C^(d) pdot_k (paper section 4).

    Rows 1-3 (the cut point moves with C):
        C^(i) = [1_3, -skew(l0_C) alpha_C^T],   C^(d) = T^L.
    Row 4 (m = 4; d/dt e1^T e2 = n_R^T (omega_n - omega_C^(0)) = 0, n_R = e1 x e2):
        C^(i) = [0, n_R^T alpha_C^T],           C^(d) = n_R^T R_n.
    C^(d) is also the Jacobian df/dp of the closure residual.
    """
    cut = leg["cut"]
    l0_C = alpha_C.T @ np.asarray(cut["l_C"], dtype=float)
    C_i = np.hstack([E3, -skew(l0_C) @ alpha_C.T])
    C_d = kin["T_L"].copy()
    if cut["m"] == 4:
        e2 = alpha_C.T @ (np.asarray(cut["gamma_C"], dtype=float).T @ E3[2])
        n_R = np.cross(kin["e1"], e2)
        C_i = np.vstack([C_i, np.concatenate([np.zeros(3), n_R @ alpha_C.T])])
        C_d = np.vstack([C_d, n_R @ kin["R"][-1]])
    elif cut["m"] != 3:
        raise ValueError(f"cut['m'] must be 3 or 4, got {cut['m']!r}")
    return C_i, C_d


def solve_closure(leg: dict, r_C: Array, alpha_C: Array, p0: ArrayLike | None = None,
                  tol: float = NEWTON_TOL, max_iter: int = NEWTON_MAX_ITER) -> Array:
    """Leg joint coordinates for a pose of C by Newton's iteration (eq. 4.6).

        p <- p - [C^(d)(p)]^-1 f(p),   from p0 (zeros if not given),

    until |f|_inf <= tol * max(1, |r^L_C|). Raises ValueError when the iteration does not
    converge (unreachable pose) or C^(d) is singular.
    """
    n = len(leg["joints"])
    m = leg["cut"]["m"]
    if m != n:  # removed joint of 6 - m DoF leaves 6 - (6 - m) = m joints: n_k = m_k
        raise ValueError(f"leg {leg.get('name')!r}: n_k must equal m_k, got {n} and {m}")
    p = np.zeros(n) if p0 is None else np.array(p0, dtype=float)
    scale = max(1.0, float(np.linalg.norm(platform_cut_point(leg, r_C, alpha_C)[0])))
    for _ in range(max_iter):
        f = closure_residual(leg, p, r_C, alpha_C)
        if not np.all(np.isfinite(f)):
            break
        if np.max(np.abs(f)) <= tol * scale:
            return p
        _, C_d = velocity_constraints(leg, leg_kinematics(leg, p), alpha_C)
        try:
            p = p - np.linalg.solve(C_d, f)
        except np.linalg.LinAlgError as exc:
            raise ValueError(f"leg {leg.get('name')!r}: singular closure Jacobian") from exc
    raise ValueError(f"leg {leg.get('name')!r}: position closure did not converge "
                     f"(unreachable pose?)")


def acceleration_terms(leg: dict, kin: dict, alpha_C: Array, omega_C: Array,
                       C_d: Array) -> Array:
    """h_k of pddot_k = H_k udot_C + h_k (eq. 4.5); kin must hold the actual pdot.

    Differentiating the velocity constraints:
      rows 1-3: vdot_C - skew(l0_C) alpha_C^T omegadot_C + omega0 x (omega0 x l0_C)
                = T^L pddot + w^L,                      omega0 = alpha_C^T omega_C;
      row 4:    n_R^T R_n pddot = n_R^T alpha_C^T omegadot_C - n_R^T eps_n
                - ndot_R^T (omega_n - omega0),
                ndot_R = (omega_n x e1) x e2 + e1 x (omega0 x e2).
    So C^(d) h = c with
        c = [omega0 x (omega0 x l0_C) - w^L;  -n_R^T eps_n - ndot_R^T (omega_n - omega0)].
    """
    cut = leg["cut"]
    omega0 = alpha_C.T @ omega_C
    l0_C = alpha_C.T @ np.asarray(cut["l_C"], dtype=float)
    c = np.cross(omega0, np.cross(omega0, l0_C)) - kin["w_L"]
    if cut["m"] == 4:
        e1 = kin["e1"]
        e2 = alpha_C.T @ (np.asarray(cut["gamma_C"], dtype=float).T @ E3[2])
        n_R = np.cross(e1, e2)
        omega_n = kin["omega"][-1]
        ndot_R = np.cross(np.cross(omega_n, e1), e2) + np.cross(e1, np.cross(omega0, e2))
        c = np.append(c, -n_R @ kin["eps"][-1] - ndot_R @ (omega_n - omega0))
    return np.linalg.solve(C_d, c)


# ---------------------------------------------------------------------------
# dynamics of a leg: composite-body algorithm (paper section 5)
# ---------------------------------------------------------------------------


def body_inertia_frame0(body: dict, tau_j: Array) -> tuple[float, Array, Array]:
    """(m_j, c0_j = tau_j^T m_j d_j, I0_j = tau_j^T I_j tau_j), I about O_j."""
    m = float(body["m"])
    c0 = tau_j.T @ (m * np.asarray(body["d"], dtype=float))
    I0 = tau_j.T @ np.asarray(body["I"], dtype=float) @ tau_j
    return m, c0, I0


def _project_backward(leg: dict, kin: dict, f: list[Array], mom: list[Array]) -> Array:
    """Backward pass: sum forces/moments of bodies i..n, moment about O_i, project on joint i.

    F_i = f_i + F_{i+1},  N_i = n_i + N_{i+1} + r_rel_{i+1} x F_{i+1};
    value_i = axis_i^T F_i (prismatic) or axis_i^T N_i (revolute).
    """
    n = kin["n"]
    out = np.zeros(n)
    F, N = np.zeros(3), np.zeros(3)
    for i in range(n - 1, -1, -1):
        if i < n - 1:
            N = N + np.cross(kin["r_rel"][i + 1], F)
        F = F + f[i]
        N = N + mom[i]
        e = kin["axis0"][i]
        out[i] = e @ (F if leg["joints"][i]["kind"] == "P" else N)
    return out


def leg_mass_matrix(leg: dict, kin: dict) -> Array:
    """A^(d)_k by the composite-body algorithm (paper section 5).

    Column j: pddot_j = 1, other accelerations and all velocities 0. Forward (i >= j):
        v'_j = T_rel_j e_j,  omega'_j = R_rel_j e_j;  v'_i = v'_{i-1} + omega'_{i-1} x r_rel_i,
        omega'_i = omega'_{i-1};
    inertial force f_i = m_i v'_i + omega'_i x c0_i, moment about O_i
    n_i = I0_i omega'_i + c0_i x v'_i;
    summed backwards and projected on each joint's axis. The whole column is formed
    (rows i < j included), so the symmetry of A is a check, not an assumption.
    """
    n = kin["n"]
    A = np.zeros((n, n))
    inert = [body_inertia_frame0(b, kin["tau"][i + 1]) for i, b in enumerate(leg["bodies"])]
    for j in range(n):
        f = [np.zeros(3) for _ in range(n)]
        mom = [np.zeros(3) for _ in range(n)]
        dv = kin["T_rel"][j][:, j].copy()
        dom = kin["R_rel"][j][:, j].copy()
        for i in range(j, n):
            if i > j:
                dv = dv + np.cross(dom, kin["r_rel"][i])
            m, c0, I0 = inert[i]
            f[i] = m * dv + np.cross(dom, c0)
            mom[i] = I0 @ dom + np.cross(c0, dv)
        A[:, j] = _project_backward(leg, kin, f, mom)
    if len(leg.get("laws", ())) == n:                        # reflected inertia of a joint
        A += np.diag([law.get("inertia", 0.0) for law in leg["laws"]])
    return A


def leg_velocity_loads(leg: dict, kin: dict, g: Array) -> tuple[list[Array], list[Array]]:
    """f^(n,0)_j, m^(n,0)_j: inertial-minus-gravity force and moment (about O_j) of each body
    with pddot = 0 and the actual velocities (paper section 5, used again in section 6):

        f = m (w - g) + eps x c0 + omega x (omega x c0)
        n = I0 eps + omega x (I0 omega) + c0 x (w - g)
    """
    f, mom = [], []
    for i, body in enumerate(leg["bodies"]):
        m, c0, I0 = body_inertia_frame0(body, kin["tau"][i + 1])
        om, a = kin["omega"][i + 1], kin["w"][i + 1] - g
        f.append(m * a + np.cross(kin["eps"][i + 1], c0) + np.cross(om, np.cross(om, c0)))
        mom.append(I0 @ kin["eps"][i + 1] + np.cross(om, I0 @ om) + np.cross(c0, a))
    return f, mom


def leg_bias(leg: dict, kin: dict, Q: ArrayLike, g: ArrayLike) -> Array:
    """b^(d)_k: minus the projections of the velocity-product inertial and gravity loads,
    plus the active joint forces Q (paper section 5). A_k pddot_k = b_k + (constraint)."""
    f, mom = leg_velocity_loads(leg, kin, np.asarray(g, dtype=float))
    return np.asarray(Q, dtype=float) - _project_backward(leg, kin, f, mom)


# ---------------------------------------------------------------------------
# dynamics of C and reduction (paper section 5)
# ---------------------------------------------------------------------------


def platform_dynamics(platform: dict, u: Array, g: Array, f_E: Array,
                      m_E: Array) -> tuple[Array, Array]:
    """M_C = diag(m_C 1_3, I_C); s_C = [f_E + m_C g; m_E - omega_C x (I_C omega_C)].

    (Gravity m_C g acts at O_C, the centre of mass; f_E in frame 0, m_E in frame C.)
    """
    m_C = float(platform["m"])
    I_C = np.asarray(platform["I"], dtype=float)
    omega_C = u[3:]
    M_C = np.zeros((6, 6))
    M_C[:3, :3] = m_C * E3
    M_C[3:, 3:] = I_C
    s_C = np.concatenate([f_E + m_C * g, m_E - np.cross(omega_C, I_C @ omega_C)])
    return M_C, s_C


def reduce_dynamics(M_C: Array, s_C: Array, H: Sequence[Array], h: Sequence[Array],
                    A: Sequence[Array], b: Sequence[Array]) -> tuple[Array, Array]:
    """A*_C = M_C + sum H^T A H,  b*_C = s_C + sum H^T (b - A h)  (eq. 5.3-5.4)."""
    A_star, b_star = M_C.copy(), s_C.copy()
    for H_k, h_k, A_k, b_k in zip(H, h, A, b):
        A_star += H_k.T @ A_k @ H_k
        b_star += H_k.T @ (b_k - A_k @ h_k)
    return A_star, b_star


def multipliers(C_d: Array, A_k: Array, b_k: Array, pddot_k: Array) -> Array:
    """lambda_k = L_k (b_k - A_k pddot_k), L_k = [C^(d)_k]^-T (eq. 6.1).

    With the leg equation A pddot = b - C^(d)T lambda and C's equation
    M_C udot = s_C + sum C^(i)T lambda, lambda[:3] is the force the leg applies on C at the
    cut point (frame 0) and lambda[3] (m = 4) the moment about n_R = e1 x e2 on C.
    """
    return np.linalg.solve(C_d.T, b_k - A_k @ pddot_k)


# ---------------------------------------------------------------------------
# forces on the base (paper section 6)
# ---------------------------------------------------------------------------


def body_loads(leg: dict, kin: dict, pddot: Array, g: Array) -> tuple[list[Array], list[Array]]:
    """Forward pass (eq. 6.2): inertial-plus-gravity force F^I_j and moment N^I_j (about O_j,
    frame 0) of each body with the known pddot: the pddot-linear accelerations by the
    recursion v^l_j = v^l_{j-1} + omega^l_{j-1} x r_rel_j + T_rel_j pddot,
    omega^l_j = omega^l_{j-1} + R_rel_j pddot, then
        F^I = m v^l + omega^l x c0 + f^(n,0),  N^I = I0 omega^l + c0 x v^l + m^(n,0).
    (F^I, N^I) is what the joints must apply to the body.)
    """
    fn, mn = leg_velocity_loads(leg, kin, g)
    F_I, N_I = [], []
    vl, oml = np.zeros(3), np.zeros(3)
    for i, body in enumerate(leg["bodies"]):
        vl = vl + np.cross(oml, kin["r_rel"][i]) + kin["T_rel"][i] @ pddot
        oml = oml + kin["R_rel"][i] @ pddot
        m, c0, I0 = body_inertia_frame0(body, kin["tau"][i + 1])
        F_I.append(m * vl + np.cross(oml, c0) + fn[i])
        N_I.append(I0 @ oml + np.cross(c0, vl) + mn[i])
    return F_I, N_I


def base_loads(kin: dict, F_I: list[Array], N_I: list[Array], F_on_C: Array,
               M_on_C: Array) -> tuple[list[Array], list[Array], Array, Array]:
    """Backward pass (eq. 6.3) from the cut reaction to the first joint.

    S_j, M_j: force and moment (about O_j) that body j-1 applies on body j through joint j
    (reaction plus active force). The last body receives -F_on_C at the cut point and
    -M_on_C from C:
        S_n = F^I_n + F_on_C,            M_n = N^I_n + l0_L x F_on_C + M_on_C,
        S_j = F^I_j + S_{j+1},           M_j = N^I_j + M_{j+1} + r_rel_{j+1} x S_{j+1}.
    The base receives -S_1 at O_1: force -S_1, moment about O_0 -(M_1 + r_1 x S_1).
    """
    n = kin["n"]
    S, M = [np.zeros(3)] * n, [np.zeros(3)] * n
    S_next = F_on_C
    M_next = np.cross(kin["l0_L"], F_on_C) + M_on_C
    r_next = np.zeros(3)
    for j in range(n - 1, -1, -1):
        S[j] = F_I[j] + S_next
        M[j] = N_I[j] + M_next + np.cross(r_next, S_next)
        S_next, M_next, r_next = S[j], M[j], kin["r_rel"][j]
    F_base = -S[0]
    M_base = -(M[0] + np.cross(kin["r"][1], S[0]))
    return S, M, F_base, M_base


# ---------------------------------------------------------------------------
# a PUS leg from its geometry (this reference's own frames, not the generator's)
# ---------------------------------------------------------------------------


def _unit(v: ArrayLike) -> Array:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def pus_leg(base: ArrayLike, rail: ArrayLike, l_C: ArrayLike, home: ArrayLike,
            rod: float | None = None, bodies: Sequence[dict] | None = None,
            laws: Sequence[dict] | None = None, drive: int = 0, name: str = "PUS") -> dict:
    """A PUS leg (a slider on a rail, a universal joint, a rod, a spherical joint on C: cut
    m = 3) as the format doc's dict, from its geometry, by the conventions documented in
    generator/families/parallel/legs/pus.py, written again here with numpy (Gram-Schmidt):

    * joint 1, the slide (P along x of its frame): at ``base`` (frame 0), x along ``rail``,
      y = z0 x rail normalised; a vertical rail: y = z0 x [b_x, b_y, 0] normalised (tangent
      to the base circle); a base on the axis too: e_y made perpendicular to the rail;
    * the slider's frame is that frame slid by q; the slide at home is the root of
      |s - base - q rail| = rod nearest 0 (s: the platform joint at ``home``, frame 0);
    * joint 2, u1 (R about y): at the slider's origin, x along the rod at home, y the slider's
      y made perpendicular to the rod (the slider's z if |rod . y| >= 0.999 rod);
    * joint 3, u2 (R about z); the cut point is [rod, 0, 0] in the rod's frame; ``rod``:
      |s - base| at home unless given.

    ``bodies``: [slider, yoke, rod] as {m, d, I about O_j} (massless when None); ``laws``:
    three dicts of the format (none when None); ``drive``: the joint taking the drive input.
    """
    b, e = np.asarray(base, dtype=float), _unit(rail)
    r_C, alpha_C = platform_pose(home)
    l_C = np.asarray(l_C, dtype=float)
    s = r_C + alpha_C.T @ l_C
    y = np.cross(E3[2], e)
    if np.linalg.norm(y) < 1e-9:
        y = np.cross(E3[2], [b[0], b[1], 0.0])
        if np.linalg.norm(y) < 1e-9:
            y = E3[1] - (E3[1] @ e) * e
    y = _unit(y)
    G0 = np.vstack([e, y, np.cross(e, y)])                  # frame 0 -> slide joint frame
    d = s - b
    L = float(np.linalg.norm(d)) if rod is None else float(rod)
    along = float(d @ e)
    w = np.sqrt(L * L - (d @ d - along * along))
    q_home = min((along - w, along + w), key=abs)
    v = G0 @ (d - q_home * e)                               # the rod at home, slider frame
    x1 = _unit(v)
    hint = E3[1] if abs(v[1]) < 0.999 * L else E3[2]
    y1 = _unit(hint - (hint @ x1) * x1)
    G1 = np.vstack([x1, y1, np.cross(x1, y1)])              # slider -> u1's joint frame
    none = {"m": 0.0, "d": np.zeros(3), "I": np.zeros((3, 3))}
    return {"name": name, "type": "PUS",
            "joints": [{"name": "slide", "kind": "P", "axis": 0, "l": b, "gamma": G0},
                       {"name": "u1", "kind": "R", "axis": 1, "l": np.zeros(3), "gamma": G1},
                       {"name": "u2", "kind": "R", "axis": 2, "l": np.zeros(3),
                        "gamma": E3.copy()}],
            "bodies": list(bodies) if bodies is not None else [none, none, none],
            "cut": {"m": 3, "l_L": np.array([L, 0.0, 0.0]), "gamma_L": E3.copy(), "l_C": l_C,
                    "gamma_C": E3.copy()},
            "laws": list(laws) if laws is not None else
            [{"k": [], "c": [], "q0": 0.0, "preload": 0.0} for _ in range(3)],
            "drive": drive}


# ---------------------------------------------------------------------------
# one state (paper section 7 order)
# ---------------------------------------------------------------------------


def solve_pose(mech: dict, r_C: ArrayLike, alpha_C: ArrayLike, u: ArrayLike,
               Q: Sequence[ArrayLike], g: ArrayLike, f_E: ArrayLike, m_E: ArrayLike,
               p0: Sequence[ArrayLike] | None = None) -> dict[str, Any]:
    """:func:`solve` with the pose of C given as (r_C, alpha_C) instead of x."""
    r_C = np.asarray(r_C, dtype=float)
    alpha_C = np.asarray(alpha_C, dtype=float)
    u = np.asarray(u, dtype=float)
    g = np.asarray(g, dtype=float)
    f_E = np.asarray(f_E, dtype=float)
    m_E = np.asarray(m_E, dtype=float)
    omega_C = u[3:]
    legs = mech["legs"]

    out: dict[str, Any] = {k: [] for k in (
        "p", "pdot", "pddot", "H", "h", "A", "b", "C_i", "C_d", "lambda",
        "joint_force", "joint_moment")}
    kins = []
    for k, leg in enumerate(legs):
        # joint coordinates (eq. 4.6), velocity constraints and joint rates (eq. 4.4)
        p = solve_closure(leg, r_C, alpha_C, None if p0 is None else p0[k])
        C_i, C_d = velocity_constraints(leg, leg_kinematics(leg, p), alpha_C)
        H_k = np.linalg.solve(C_d, C_i)
        pdot = H_k @ u
        kin = leg_kinematics(leg, p, pdot)
        # acceleration-constraint terms (eq. 4.5); A_k, b_k (section 5)
        h_k = acceleration_terms(leg, kin, alpha_C, omega_C, C_d)
        A_k = leg_mass_matrix(leg, kin)
        b_k = leg_bias(leg, kin, Q[k], g)
        kins.append(kin)
        for key, val in (("p", p), ("pdot", pdot), ("H", H_k), ("h", h_k), ("A", A_k),
                         ("b", b_k), ("C_i", C_i), ("C_d", C_d)):
            out[key].append(val)

    # dynamics of C and reduction (eq. 5.3-5.4)
    M_C, s_C = platform_dynamics(mech["platform"], u, g, f_E, m_E)
    A_star, b_star = reduce_dynamics(M_C, s_C, out["H"], out["h"], out["A"], out["b"])
    udot = np.linalg.solve(A_star, b_star)

    # dependent accelerations, multipliers (eq. 6.1), base loads (eq. 6.2-6.3)
    F_on_C, M_on_C = np.zeros((len(legs), 3)), np.zeros((len(legs), 3))
    base_force, base_moment = np.zeros(3), np.zeros(3)
    for k, (leg, kin) in enumerate(zip(legs, kins)):
        pddot = out["H"][k] @ udot + out["h"][k]
        lam = multipliers(out["C_d"][k], out["A"][k], out["b"][k], pddot)
        F_on_C[k] = lam[:3]
        if leg["cut"]["m"] == 4:
            _, _, e2 = platform_cut_point(leg, r_C, alpha_C)
            M_on_C[k] = lam[3] * np.cross(kin["e1"], e2)
        F_I, N_I = body_loads(leg, kin, pddot, g)
        S, M, F_b, M_b = base_loads(kin, F_I, N_I, F_on_C[k], M_on_C[k])
        base_force += F_b
        base_moment += M_b
        out["pddot"].append(pddot)
        out["lambda"].append(lam)
        out["joint_force"].append(np.array(S))
        out["joint_moment"].append(np.array(M))

    out.update(udot=udot, F_on_C=F_on_C, M_on_C=M_on_C, base_force=base_force,
               base_moment=base_moment, A_star=A_star, b_star=b_star, M_C=M_C, s_C=s_C)
    return out


def solve(mech: dict, x: ArrayLike, u: ArrayLike, Q: Sequence[ArrayLike], g: ArrayLike,
          f_E: ArrayLike, m_E: ArrayLike, p0: Sequence[ArrayLike] | None = None) -> dict[str, Any]:
    """One state of the parallel manipulator (paper 000 section 7 order).

    Inputs: pose x (6,), u = [v_C frame 0, omega_C frame C], Q one array per leg (active
    joint forces), gravity g (frame 0), f_E (frame 0, through O_C), m_E (frame C); p0 an
    optional initial guess per leg for Newton.

    Returns a dict with p, pdot, pddot (lists per leg), udot (6,), F_on_C, M_on_C (6, 3)
    frame 0, base_force, base_moment (3,) frame 0 (moment about O_0), and the intermediate
    H (n_k x 6), h, A, b (lists), A_star (6x6), b_star (6,), plus C_i, C_d, lambda,
    joint_force / joint_moment (per leg, per joint: load of body j-1 on body j, moment about
    O_j, frame 0), M_C, s_C.
    """
    r_C, alpha_C = platform_pose(x)
    return solve_pose(mech, r_C, alpha_C, u, Q, g, f_E, m_E, p0)
