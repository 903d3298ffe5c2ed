"""Andrews' squeezing mechanism (seven-body mechanism) exactly as in the Test Set for IVP Solvers.

Source (transcribed, not imported): the Test Set for IVP Solvers (F. Mazzia, C. Magherini,
University of Bari, http://www.dm.uniba.it/~testset/, problem ``andrews``, revision
``$Id: andrews.F,v 1.2 2006/10/02 10:29:13 testset Exp $``) as shipped by the R package
deTestSet, repository ``rforge/bvpsolve``:

* ``pkg/deTestSet/src/Ex_andrews.f``: ``andfunc`` (mass matrix, forces, constraints and
  their Jacobian ``gp``) and ``andsoln`` (the reference solution at t = 0.03, "computed at
  Cray C90, using Cray double precision ... PSIDE, rtol = atol = 1d-14");
* ``pkg/deTestSet/R/ex_andrews.R``: the 42 parameters (the common block ``/andcom/`` in the
  same order) and the consistent initial values ``yini`` (27 components, 30 digits).

The problem itself is Hairer & Wanner, Solving ODEs II, section VII.7 (after Andrews & Schiehlen,
Manning): seven rigid bodies in a plane, a crank driven by the constant torque ``mom``, a
spring of stiffness ``c0`` and free length ``l0``, no gravity.

State: q = (beta, Theta, gamma, Phi, delta, Omega, epsilon) (the test set's y(1..7)), qd
(y(8..14)), qdd (y(15..21)), lambda (y(22..27)). Equations of motion (andfunc, dy(15..21)):

    M(q) qdd = f(q, qd) - G(q)^T lambda,      g(q) = 0 (6 rows),     G = dg/dq (the ``gp``).

Kinematics read off the test set (all in the plane, e(a) = (cos a, sin a), w(a) = (sin a, -cos a)
= e(a) turned by -90 deg; both turn counter-clockwise as a grows):

* body 1 turns about O = (0, 0) by beta; body 2 is hinged to it at F = rr e(beta) and turned by
  Theta relative to body 1; body 2's far end E = F - d e(beta + Theta); its COM
  = F - da e(beta + Theta)
  (m(1,1), m(2,1), m(2,2) confirm: |COM2 - O|^2 = rr^2 - 2 da rr cos Theta + da^2).
* body 3 turns about B = (xb, yb) by gamma: E = B + ss w(gamma) (g(1), g(2)); the spring point
  D = B + sd e(gamma) + sc w(gamma) (xd, yd); the spring pulls D towards C = (xc, yc) with
  force c0 (L - l0).
* body 5 turns about A = (xa, ya) by delta; body 4 is hinged to it at G = A + zt e(delta), turned
  by Phi relative to body 5: E = G + e w(Phi + delta) (g(3), g(4)); COM4
  = G + (e - ea) w(Phi + delta)
  (m(4,4), m(5,4), m(5,5) confirm).
* body 7 turns about A by epsilon; body 6 is hinged to it at H = A + u w(epsilon), turned by Omega
  relative to body 7: E = H + zf e(Omega + epsilon) (g(5), g(6)); COM6
  = H + (zf - fa) e(Omega + epsilon)
  (m(6,6), m(7,6), m(7,7) confirm).
* the loops close at E: E(chain 1-2) = E(body 3) = E(body 4) = E(body 6): g(1:2) = E12 - E3,
  g(3:4) = E12 - E4, g(5:6) = E12 - E6.
* I1..I7 are moments of inertia about each body's COM (parallel-axis terms appear explicitly:
  m1 ra^2 + I1, m2 da^2 + I2, m3 (sa^2 + sb^2) + I3, m4 (e - ea)^2 + I4, m5 (ta^2 + tb^2) + I5,
  m6 (zf - fa)^2 + I6, m7 (ua^2 + ub^2) + I7).
* Bodies 1, 3, 5, 7 only turn about fixed pivots (and there is no gravity), so only the distances
  ra, sqrt(sa^2 + sb^2), sqrt(ta^2 + tb^2), sqrt(ua^2 + ub^2) of their COMs from the pivot enter
  the test set; the directions used by :func:`points` are a choice (documented there).

Sign of lambda: the constraint force on body 2 at E is -lambda(1:2) (resp. -lambda(3:4),
-lambda(5:6)), the force on body 3 (resp. 4, 6) at E is +lambda(1:2) (resp. (3:4), (5:6)).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

SOURCE = "rforge/bvpsolve: pkg/deTestSet/src/Ex_andrews.f, pkg/deTestSet/R/ex_andrews.R"

# the common block /andcom/ in its order (ex_andrews.R, `parameter`)
PARAMS: dict[str, float] = {
    "m1": 0.04325, "m2": 0.00365, "m3": 0.02373, "m4": 0.00706,
    "m5": 0.07050, "m6": 0.00706, "m7": 0.05498,
    "xa": -0.06934, "ya": -0.00227, "xb": -0.03635, "yb": 0.03273,
    "xc": 0.014, "yc": 0.072, "c0": 4530.0,
    "i1": 2.194e-6, "i2": 4.410e-7, "i3": 5.255e-6, "i4": 5.667e-7,
    "i5": 1.169e-5, "i6": 5.667e-7, "i7": 1.912e-5,
    "d": 28e-3, "da": 115e-4, "e": 2e-2, "ea": 1421e-5,
    "rr": 7e-3, "ra": 92e-5, "l0": 7785e-5,
    "ss": 35e-3, "sa": 1874e-5, "sb": 1043e-5, "sc": 18e-3, "sd": 2e-2,
    "ta": 2308e-5, "tb": 916e-5, "u": 4e-2, "ua": 1228e-5, "ub": 449e-5,
    "zf": 2e-2, "zt": 4e-2, "fa": 1421e-5, "mom": 33e-3,
}
assert len(PARAMS) == 42

ANGLE_NAMES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")

# consistent initial values (ex_andrews.R, `yini`), as strings to keep all published digits
Q0_STR = (
    "-0.0617138900142764496358948458001",   # beta
    "0",                                    # Theta
    "0.455279819163070380255912382449",     # gamma
    "0.222668390165885884674473185609",     # Phi
    "0.487364979543842550225598953530",     # delta
    "-0.222668390165885884674473185609",    # Omega
    "1.23054744454982119249735015568",      # epsilon
)
Q0: Array = np.array([float(s) for s in Q0_STR])
QD0: Array = np.zeros(7)
# y(15..27) of yini: the consistent accelerations and multipliers at t = 0
QDD0: Array = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415,
                        0.0, 0.0, 0.0, 0.0, 0.0])
LAMBDA0: Array = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122,
                           0.0, 0.0, 0.0, 0.0])

# reference solution (Ex_andrews.f, `andsoln`: PSIDE, rtol = atol = 1d-14, Cray double precision)
T_END = 0.03
Y_REF: Array = np.array([
    0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1,
    -0.5347301163226948e+0, 0.5244099658805304e+0, 0.5347301163226948e+0,
    0.1048080741042263e+1,
    0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2,
    0.1929337464421385e+2, 0.5735699284790808e+0, -0.1929337464421385e+2,
    0.3231791658026955e+0,
    -0.2463176316945196e+5, 0.5185037701610329e+5, 0.3241025686413781e+6,
    0.5667493645176213e+6, 0.1674362929479361e+5, -0.5667493645176222e+6,
    0.9826520791458422e+4,
    0.1991753333731910e+3, -0.2975531228015052e+2, 0.2306654119098399e+2,
    0.3145271365475927e+2, 0.2264249232082739e+2, 0.1161740700019673e+2,
])
Q_REF, QD_REF, QDD_REF, LAMBDA_REF = Y_REF[:7], Y_REF[7:14], Y_REF[14:21], Y_REF[21:27]

# y(1..14) at t = 0.03 computed here (not published): :func:`integrate_longdouble` with 3000
# fixed DOP853 steps in 80-bit extended precision (x86-64 long double), the index-1 ODE from the
# 30-digit initial values; 2000 and 3000 steps agree to 7e-17 (positions) and 3e-14 (rates).
# scipy's adaptive DOP853 (rtol = atol = 1e-13, double) agrees to 3e-13 (positions). It differs
# from the published Y_REF by up to 1.4e-9 in beta and Theta (9e-11 relative, 2.7e-10 relative in
# gamma) and 5e-8 relative in the rates; the published state also misses the velocity
# constraint G qd = 0 by 1e-9 (ours: 1e-13). The published solution is therefore good to about
# 1e-10 relative (PSIDE at tol 1e-14: "Cray double precision" was probably 64-bit there).
Y_EXT: Array = np.array([
    1.581077119515370926e+01, -1.575637105841184216e+01, 4.082224011964582231e-02,
    -5.347301163420795622e-01, 5.244099658799540693e-01, 5.347301163420795647e-01,
    1.048080741041937880e+00,
    1.139920302259106006e+03, -1.424379295177539961e+03, 1.103291191061920569e+01,
    1.929337410503311093e+01, 5.735699148295340635e-01, -1.929337410503311075e+01,
    3.231791492491492449e-01,
])


def _p(params: dict | None) -> dict:
    return PARAMS if params is None else {**PARAMS, **params}


def mass_matrix(q, params: dict | None = None) -> Array:
    """M(q) of andfunc (7 x 7, symmetric)."""
    P = _p(params)
    m1, m2, m3, m4, m5, m6, m7 = (P[f"m{k}"] for k in range(1, 8))
    i1, i2, i3, i4, i5, i6, i7 = (P[f"i{k}"] for k in range(1, 8))
    rr, da, ra, sa, sb = P["rr"], P["da"], P["ra"], P["sa"], P["sb"]
    e, ea, zt, ta, tb = P["e"], P["ea"], P["zt"], P["ta"], P["tb"]
    zf, fa, u, ua, ub = P["zf"], P["fa"], P["u"], P["ua"], P["ub"]
    coth, siph, siom = np.cos(q[1]), np.sin(q[3]), np.sin(q[5])
    m = np.zeros((7, 7), dtype=np.result_type(np.asarray(q).dtype, float))
    m[0, 0] = m1 * ra**2 + m2 * (rr**2 - 2 * da * rr * coth + da**2) + i1 + i2
    m[1, 0] = m2 * (da**2 - da * rr * coth) + i2
    m[1, 1] = m2 * da**2 + i2
    m[2, 2] = m3 * (sa**2 + sb**2) + i3
    m[3, 3] = m4 * (e - ea)**2 + i4
    m[4, 3] = m4 * ((e - ea)**2 + zt * (e - ea) * siph) + i4
    m[4, 4] = (m4 * (zt**2 + 2 * zt * (e - ea) * siph + (e - ea)**2) + m5 * (ta**2 + tb**2)
               + i4 + i5)
    m[5, 5] = m6 * (zf - fa)**2 + i6
    m[6, 5] = m6 * ((zf - fa)**2 - u * (zf - fa) * siom) + i6
    m[6, 6] = (m6 * ((zf - fa)**2 - 2 * u * (zf - fa) * siom + u**2) + m7 * (ua**2 + ub**2)
               + i6 + i7)
    return np.tril(m) + np.tril(m, -1).T


def spring_point(q, params: dict | None = None) -> Array:
    """D = (xd, yd) on body 3 (andfunc)."""
    P = _p(params)
    ga = q[2]
    return np.array([P["sd"] * np.cos(ga) + P["sc"] * np.sin(ga) + P["xb"],
                     P["sd"] * np.sin(ga) - P["sc"] * np.cos(ga) + P["yb"]])


def forces(q, qd, params: dict | None = None) -> Array:
    """f(q, qd) of andfunc (``ff``): drive, spring and velocity terms."""
    P = _p(params)
    m2, m4, m6 = P["m2"], P["m4"], P["m6"]
    rr, da, e, ea = P["rr"], P["da"], P["e"], P["ea"]
    zt, zf, fa, u = P["zt"], P["zf"], P["fa"], P["u"]
    sc, sd, c0, l0, mom = P["sc"], P["sd"], P["c0"], P["l0"], P["mom"]
    bep, thp, _, php, dep, omp, epp = qd
    sith, coph, coom = np.sin(q[1]), np.cos(q[3]), np.cos(q[5])
    coga, siga = np.cos(q[2]), np.sin(q[2])
    xd, yd = spring_point(q, P)
    lang = np.hypot(xd - P["xc"], yd - P["yc"])
    force = -c0 * (lang - l0) / lang
    fx, fy = force * (xd - P["xc"]), force * (yd - P["yc"])
    return np.array([
        mom - m2 * da * rr * thp * (thp + 2 * bep) * sith,
        m2 * da * rr * bep**2 * sith,
        fx * (sc * coga - sd * siga) + fy * (sd * coga + sc * siga),
        m4 * zt * (e - ea) * dep**2 * coph,
        -m4 * zt * (e - ea) * php * (php + 2 * dep) * coph,
        -m6 * u * (zf - fa) * epp**2 * coom,
        m6 * u * (zf - fa) * omp * (omp + 2 * epp) * coom,
    ])


def constraints(q, params: dict | None = None) -> Array:
    """g(q) of andfunc (6 rows)."""
    P = _p(params)
    rr, d, ss, e, zt, zf, u = P["rr"], P["d"], P["ss"], P["e"], P["zt"], P["zf"], P["u"]
    be, th, ga, ph, de, om, ep = q
    ex = rr * np.cos(be) - d * np.cos(be + th)
    ey = rr * np.sin(be) - d * np.sin(be + th)
    return np.array([
        ex - ss * np.sin(ga) - P["xb"],
        ey + ss * np.cos(ga) - P["yb"],
        ex - e * np.sin(ph + de) - zt * np.cos(de) - P["xa"],
        ey + e * np.cos(ph + de) - zt * np.sin(de) - P["ya"],
        ex - zf * np.cos(om + ep) - u * np.sin(ep) - P["xa"],
        ey - zf * np.sin(om + ep) + u * np.cos(ep) - P["ya"],
    ])


def constraint_jacobian(q, params: dict | None = None) -> Array:
    """G(q) = dg/dq of andfunc (``gp``, 6 x 7)."""
    P = _p(params)
    rr, d, ss, e, zt, zf, u = P["rr"], P["d"], P["ss"], P["e"], P["zt"], P["zf"], P["u"]
    be, th, ga, ph, de, om, ep = q
    sibe, cobe = np.sin(be), np.cos(be)
    sibeth, cobeth = np.sin(be + th), np.cos(be + th)
    siphde, cophde = np.sin(ph + de), np.cos(ph + de)
    siomep, coomep = np.sin(om + ep), np.cos(om + ep)
    gp = np.zeros((6, 7), dtype=np.result_type(np.asarray(q).dtype, float))
    for r in (0, 2, 4):
        gp[r, 0] = -rr * sibe + d * sibeth
        gp[r, 1] = d * sibeth
        gp[r + 1, 0] = rr * cobe - d * cobeth
        gp[r + 1, 1] = -d * cobeth
    gp[0, 2] = -ss * np.cos(ga)
    gp[1, 2] = -ss * np.sin(ga)
    gp[2, 3] = -e * cophde
    gp[2, 4] = -e * cophde + zt * np.sin(de)
    gp[3, 3] = -e * siphde
    gp[3, 4] = -e * siphde - zt * np.cos(de)
    gp[4, 5] = zf * siomep
    gp[4, 6] = zf * siomep - u * np.cos(ep)
    gp[5, 5] = -zf * coomep
    gp[5, 6] = -zf * coomep - u * np.sin(ep)
    return gp


def constraint_bias(q, qd, params: dict | None = None) -> Array:
    """(dG/dt) qd = sum_jk d2g/dq_j dq_k qd_j qd_k (written here; not in the test set).

    Every term of g is c cos(phi) or c sin(phi) with phi linear in q, whose second time
    derivative at qdd = 0 is minus the term times phi_dot^2.
    """
    P = _p(params)
    rr, d, ss, e, zt, zf, u = P["rr"], P["d"], P["ss"], P["e"], P["zt"], P["zf"], P["u"]
    be, th, ga, ph, de, om, ep = q
    bp, tp, gp_, pp, dp, op, ep_ = qd
    bx = -rr * np.cos(be) * bp**2 + d * np.cos(be + th) * (bp + tp)**2
    by = -rr * np.sin(be) * bp**2 + d * np.sin(be + th) * (bp + tp)**2
    return np.array([
        bx + ss * np.sin(ga) * gp_**2,
        by - ss * np.cos(ga) * gp_**2,
        bx + e * np.sin(ph + de) * (pp + dp)**2 + zt * np.cos(de) * dp**2,
        by - e * np.cos(ph + de) * (pp + dp)**2 + zt * np.sin(de) * dp**2,
        bx + zf * np.cos(om + ep) * (op + ep_)**2 + u * np.sin(ep) * ep_**2,
        by + zf * np.sin(om + ep) * (op + ep_)**2 - u * np.cos(ep) * ep_**2,
    ])


def qdd_lambda(q, qd, params: dict | None = None) -> tuple[Array, Array]:
    """(qdd, lambda) of the index-1 system [[M, G^T], [G, 0]] [qdd; lambda] = [f; -Gdot qd]."""
    M = mass_matrix(q, params)
    G = constraint_jacobian(q, params)
    K = np.zeros((13, 13))
    K[:7, :7], K[:7, 7:], K[7:, :7] = M, G.T, G
    sol = np.linalg.solve(K, np.concatenate([forces(q, qd, params),
                                             -constraint_bias(q, qd, params)]))
    return sol[:7], sol[7:]


def rhs(t: float, y, params: dict | None = None) -> Array:
    """First-order ODE y = (q, qd) -> (qd, qdd) of the index-1 form."""
    q, qd = y[:7], y[7:]
    return np.concatenate([qd, qdd_lambda(q, qd, params)[0]])


def project(q, qd, params: dict | None = None) -> tuple[Array, Array]:
    """Newton projection of q onto g = 0 (min-norm corrections) and of qd onto G qd = 0."""
    q = np.array(q, dtype=float)
    for _ in range(20):
        g = constraints(q, params)
        if np.max(np.abs(g)) < 1e-16:
            break
        G = constraint_jacobian(q, params)
        q -= G.T @ np.linalg.solve(G @ G.T, g)
    G = constraint_jacobian(q, params)
    qd = np.asarray(qd, dtype=float)
    return q, qd - G.T @ np.linalg.solve(G @ G.T, G @ qd)


def integrate(t_end: float = T_END, rtol: float = 1e-13, atol: float = 1e-13,
              method: str = "DOP853", projection_steps: int = 0,
              params: dict | None = None) -> Array:
    """Integrate the index-1 ODE from the consistent initial values; returns y(t_end) (14).

    ``projection_steps`` > 0 splits [0, t_end] into that many pieces and projects (q, qd)
    back onto the position and velocity constraints after each (no projection by default).
    """
    from scipy.integrate import solve_ivp

    y = np.concatenate([Q0, QD0])
    pieces = max(projection_steps, 1)
    ts = np.linspace(0.0, t_end, pieces + 1)
    for a, b in zip(ts[:-1], ts[1:]):
        sol = solve_ivp(rhs, (a, b), y, method=method, rtol=rtol, atol=atol, args=(params,))
        if not sol.success:
            raise RuntimeError(sol.message)
        y = sol.y[:, -1]
        if projection_steps:
            y = np.concatenate(project(y[:7], y[7:], params))
    return y


def params_longdouble() -> dict:
    """PARAMS as np.longdouble, exact from their decimal literals."""
    from fractions import Fraction

    out = {}
    for k, v in PARAMS.items():
        f = Fraction(repr(v))
        out[k] = np.longdouble(f.numerator) / np.longdouble(f.denominator)
    return out


def _gauss_solve(K: Array, b: Array) -> Array:
    """Gaussian elimination with partial pivoting in K's dtype (LAPACK has no long double)."""
    K, b = K.copy(), b.copy()
    n = len(b)
    for i in range(n):
        p = i + int(np.argmax(np.abs(K[i:, i])))
        K[[i, p]], b[[i, p]] = K[[p, i]], b[[p, i]]
        f = K[i + 1:, i] / K[i, i]
        K[i + 1:] -= np.outer(f, K[i])
        b[i + 1:] -= f * b[i]
    x = np.zeros(n, dtype=K.dtype)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - K[i, i + 1:] @ x[i + 1:]) / K[i, i]
    return x


def integrate_longdouble(n_steps: int = 3000, t_end: float = T_END) -> Array:
    """y(t_end) (14) by n_steps fixed DOP853 steps in np.longdouble (how Y_EXT was made).

    The Butcher tableau is scipy's (``scipy.integrate._ivp.dop853_coefficients``, doubles: their
    rounding is ~1e-16 of each step's increment). About 2 s per 1000 steps.
    """
    from fractions import Fraction

    from scipy.integrate._ivp import dop853_coefficients as dc

    L = np.longdouble
    P = params_longdouble()
    A, B = dc.A[:12, :12].astype(L), dc.B.astype(L)

    def f(y):
        q, qd = y[:7], y[7:]
        K = np.zeros((13, 13), dtype=L)
        G = constraint_jacobian(q, P)
        K[:7, :7], K[:7, 7:], K[7:, :7] = mass_matrix(q, P), G.T, G
        rhs_ = np.concatenate([forces(q, qd, P), -constraint_bias(q, qd, P)])
        return np.concatenate([qd, _gauss_solve(K, rhs_)[:7]])

    def ld(s: str) -> L:
        fr = Fraction(s)
        return L(fr.numerator) / L(fr.denominator)

    y = np.concatenate([np.array([ld(s) for s in Q0_STR]), np.zeros(7, dtype=L)])
    fr = Fraction(repr(t_end))
    h = L(fr.numerator) / L(fr.denominator) / n_steps
    for _ in range(n_steps):
        k = np.zeros((12, 14), dtype=L)
        for s in range(12):
            k[s] = f(y + h * (A[s, :s] @ k[:s]))
        y = y + h * (B @ k)
    return y


# ---------------------------------------------------------------------------
# kinematics: the points of every body (used for the linkage spec and the tests)
# ---------------------------------------------------------------------------


def points(q, params: dict | None = None, lib=np) -> dict[str, tuple]:
    """Every named point (x, y) at the angles q, computed with ``lib`` (numpy or mpmath).

    Joint points: O (ground/1), F (1/2), B (ground/3), A (ground/5 and ground/7), G (5/4),
    H (7/6), E (2/3, 2/4, 2/6: the loop closures; ``E2``, ``E3``, ``E4``, ``E6`` seen from each
    body), C (spring, ground), D (spring, body 3); COM1..COM7.

    COM directions of the bodies turning about fixed pivots (not fixed by the test set, only
    their distances are): COM1 = ra e(beta) (on the crank, towards F); COM3 = B + sa w(gamma)
    + sb e(gamma) (sa along B->E, sb along the spring point's sd direction);
    COM5 = A + ta e(delta) + tb w(delta) (ta along A->G); COM7 = A + ua w(epsilon)
    + ub e(epsilon) (ua along A->H).
    """
    P = _p(params)
    if lib is np:
        cos, sin = np.cos, np.sin
        val = float
    else:
        cos, sin = lib.cos, lib.sin
        val = lib.mpf
    be, th, ga, ph, de, om, ep = q
    par = {k: val(v) if lib is np else lib.mpf(repr(v)) for k, v in P.items()}

    def e_(a):
        return (cos(a), sin(a))

    def w_(a):
        return (sin(a), -cos(a))

    def add(*terms):
        return tuple(sum(c * v[i] for c, v in terms) for i in range(2))

    one = par["rr"] / par["rr"]
    O = (0 * one, 0 * one)
    A = (par["xa"], par["ya"])
    B = (par["xb"], par["yb"])
    C = (par["xc"], par["yc"])
    F = add((par["rr"], e_(be)))
    E2 = add((one, F), (-par["d"], e_(be + th)))
    E3 = add((one, B), (par["ss"], w_(ga)))
    G = add((one, A), (par["zt"], e_(de)))
    E4 = add((one, G), (par["e"], w_(ph + de)))
    H = add((one, A), (par["u"], w_(ep)))
    E6 = add((one, H), (par["zf"], e_(om + ep)))
    D = add((one, B), (par["sd"], e_(ga)), (par["sc"], w_(ga)))
    return {
        "O": O, "A": A, "B": B, "C": C, "F": F, "G": G, "H": H, "D": D,
        "E2": E2, "E3": E3, "E4": E4, "E6": E6,
        "COM1": add((par["ra"], e_(be))),
        "COM2": add((one, F), (-par["da"], e_(be + th))),
        "COM3": add((one, B), (par["sa"], w_(ga)), (par["sb"], e_(ga))),
        "COM4": add((one, G), (par["e"] - par["ea"], w_(ph + de))),
        "COM5": add((one, A), (par["ta"], e_(de)), (par["tb"], w_(de))),
        "COM6": add((one, H), (par["zf"] - par["fa"], e_(om + ep))),
        "COM7": add((one, A), (par["ua"], w_(ep)), (par["ub"], e_(ep))),
    }


def body_angles(q) -> Array:
    """Absolute rotation angles of bodies 1..7 (counter-clockwise, from the test set's zero)."""
    be, th, ga, ph, de, om, ep = q
    return np.array([be, be + th, ga, ph + de, de, om + ep, ep])


# body k's absolute angle = BODY_ANGLE_MAP[k-1] . q
BODY_ANGLE_MAP: Array = np.array([
    [1, 0, 0, 0, 0, 0, 0],
    [1, 1, 0, 0, 0, 0, 0],
    [0, 0, 1, 0, 0, 0, 0],
    [0, 0, 0, 1, 1, 0, 0],
    [0, 0, 0, 0, 1, 0, 0],
    [0, 0, 0, 0, 0, 1, 1],
    [0, 0, 0, 0, 0, 0, 1],
], dtype=float)


def body_states(q, qd, params: dict | None = None) -> tuple[dict, dict]:
    """Poses and twists of bodies ``body1``..``body7`` of andrews.toml at the angles q, rates qd.

    From the Test Set kinematics (:func:`points`), independent of any spanning-tree code: body
    k's pose is (Rz(angle_k(q) - angle_k(Q0)), COM_k(q)) (the spec's reference pose is q = Q0),
    its twist (dCOM_k/dq qd (complex step), angle_k(qd) about +z). Positions are 3-vectors (z = 0).
    """
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    h = 1e-30
    pts = points(q, params)
    ptc = points(q + 1j * h * qd, params)
    ang = body_angles(q) - body_angles(Q0)
    angd = BODY_ANGLE_MAP @ qd
    poses, twists = {}, {}
    for k in range(7):
        c, s = np.cos(ang[k]), np.sin(ang[k])
        R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        com = pts[f"COM{k + 1}"]
        vel = ptc[f"COM{k + 1}"]
        poses[f"body{k + 1}"] = (R, np.array([float(com[0]), float(com[1]), 0.0]))
        twists[f"body{k + 1}"] = (np.array([np.imag(vel[0]) / h, np.imag(vel[1]) / h, 0.0]),
                                  np.array([0.0, 0.0, angd[k]]))
    return poses, twists
