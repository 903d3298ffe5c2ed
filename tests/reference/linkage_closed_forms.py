"""Closed-form relations of the bundled closed-loop linkages (papers 001 and 004).

Plain numpy, no generator. Each function states its derivation and its convention, and how it
maps onto the joint coordinates of the bundled specs (generator/mechanisms/*.toml
until those move into generator/mechanisms/). The spec convention (docs/linkage.md): a joint
coordinate is the rotation of the joint's second body relative to its first about the joint's
+axis (right hand), measured from the reference pose and offset by ``q_ref``; so with ``q_ref``
set to the reference value of a classical angle, the coordinate *is* that angle.

All the relations are checked against brute-force loop closures (homogeneous transforms and
scipy root finding) in test_linkage_closed_forms_selfcheck.py, and their mapping onto the specs
by a numpy reading of docs/linkage.md in the same file.

Contents
  fourbar_output_angle, fourbar_coupler_angle,
  fourbar_velocity_ratios            planar four-bar (Freudenstein), fourbar.toml
  bennett_K, bennett_theta2,
  bennett_angles, bennett_velocity_ratio
                                     Bennett 4R, bennett.toml
  hooke_output_angle,
  hooke_velocity_ratio               Hooke's (Cardan) joint, hooke_shafts.toml
  swash_output_angle, swash_journal_angle,
  swash_velocity_ratio               spherical 4R swash plate, swash_plate.toml
  parallelogram_inertia, parallelogram_gravity_moment,
  parallelogram_theta_ddot,
  parallelogram_multiplier_null_vector
                                     paper 004's parallel-crank mechanism, parallelogram3.toml
"""

from __future__ import annotations

import numpy as np

# --------------------------------------------------------------------------- planar four-bar


def fourbar_output_angle(theta2, a, b, c, d, branch=+1):
    """Rocker angle theta4 of a planar four-bar from the crank angle theta2 (Freudenstein).

    Geometry: ground pivots A = (0, 0) and D = (d, 0); crank A-B of length a at angle theta2,
    coupler B-C of length b at angle theta3, rocker D-C of length c at angle theta4; all angles
    absolute, from +x, counter-clockwise (about +z).

    Derivation. The loop is a e^{i theta2} + b e^{i theta3} = d + c e^{i theta4}. Eliminating the
    coupler, |d + c e^{i theta4} - a e^{i theta2}|^2 = b^2, i.e.
        a^2 + c^2 + d^2 - b^2 + 2 c d cos(theta4) - 2 a d cos(theta2) - 2 a c cos(theta2 - theta4) = 0;
    dividing by 2 a c gives Freudenstein's equation
        K1 cos(theta4) - K2 cos(theta2) + K3 = cos(theta2 - theta4),
        K1 = d/a,  K2 = d/c,  K3 = (a^2 - b^2 + c^2 + d^2) / (2 a c).
    Expanding cos(theta2 - theta4) it reads P cos(theta4) + Q sin(theta4) + R = 0 with
        P = K1 - cos(theta2),  Q = -sin(theta2),  R = K3 - K2 cos(theta2),
    so with rho = hypot(P, Q) and phi = atan2(Q, P): cos(theta4 - phi) = -R / rho and
        theta4 = phi + branch * arccos(-R / rho),   branch = +1 or -1 (the two assembly modes).
    No real solution when |R| > rho (the crank angle cannot be reached).

    branch = +1 puts C on the left of the directed line B -> D ((D - B) x (C - B) > 0), branch = -1
    on its right; fourbar.toml's reference pose is on branch = +1 (both checked in the self-check).
    Mapping to fourbar.toml: a = 0.1, b = 0.35, c = 0.3, d = 0.4; theta2 = joint `crank`,
    theta4 = joint `rocker` (both R about +z with q_ref = the reference angles), and joint
    `B` = theta3 - theta2. Returns theta4 in (-pi, pi] + the branch offset (not wrapped).
    """
    P = d / a - np.cos(theta2)
    Q = -np.sin(theta2)
    R = (a * a - b * b + c * c + d * d) / (2 * a * c) - d / c * np.cos(theta2)
    rho = np.hypot(P, Q)
    x = -R / rho
    if np.any(np.abs(x) > 1.0):
        raise ValueError("four-bar: the crank angle cannot be assembled")
    return np.arctan2(Q, P) + branch * np.arccos(x)


def fourbar_coupler_angle(theta2, theta4, a, b, c, d):
    """Coupler angle theta3 (absolute, from +x) from theta2 and theta4.

    From the loop, b e^{i theta3} = d + c e^{i theta4} - a e^{i theta2}, so
    theta3 = atan2(c sin theta4 - a sin theta2, d + c cos theta4 - a cos theta2).
    (b enters only through the assembly condition.)
    """
    del b
    return np.arctan2(c * np.sin(theta4) - a * np.sin(theta2),
                      d + c * np.cos(theta4) - a * np.cos(theta2))


def fourbar_velocity_ratios(theta2, theta3, theta4, a, b, c):
    """(dtheta3/dtheta2, dtheta4/dtheta2) of the planar four-bar.

    Differentiating the loop a e^{i t2} + b e^{i t3} - c e^{i t4} - d = 0 in time:
        a w2 e^{i t2} + b w3 e^{i t3} - c w4 e^{i t4} = 0   (times i, dropped).
    Multiplying by e^{-i t3} and taking the imaginary part removes w3:
        a w2 sin(t2 - t3) - c w4 sin(t4 - t3) = 0  ->  w4/w2 = a sin(t3 - t2) / (c sin(t3 - t4)).
    Multiplying by e^{-i t4} instead removes w4:
        a w2 sin(t2 - t4) + b w3 sin(t3 - t4) = 0  ->  w3/w2 = a sin(t4 - t2) / (b sin(t3 - t4)).
    Singular when the coupler and the rocker are in line (sin(t3 - t4) = 0, a dead point of the
    rocker). In fourbar.toml the joint rates are crank' = w2, rocker' = w4, B' = w3 - w2.
    """
    den = np.sin(theta3 - theta4)
    return (a * np.sin(theta4 - theta2) / (b * den),
            a * np.sin(theta3 - theta2) / (c * den))


# --------------------------------------------------------------------------- Bennett 4R


def bennett_K(alpha, beta):
    """K = sin((beta + alpha)/2) / sin((beta - alpha)/2), the Bennett constant of bennett_theta2."""
    return np.sin((beta + alpha) / 2) / np.sin((beta - alpha) / 2)


def bennett_theta2(theta1, alpha, beta):
    """Joint angle theta2 of a Bennett linkage from theta1:
    tan(theta1/2) tan(theta2/2) = sin((beta + alpha)/2) / sin((beta - alpha)/2).

    Convention: the standard Denavit-Hartenberg chain, T_i = Rz(theta_i) Tx(a_i) Rx(alpha_i),
    joint i+1 on the z axis of DH frame i, offsets d_i = 0, with
        (a_1, alpha_1) = (a, alpha), (a_2, alpha_2) = (b, beta),
        (a_3, alpha_3) = (a, alpha), (a_4, alpha_4) = (b, beta),
    Bennett's condition a / sin(alpha) = b / sin(beta), and closure T_1 T_2 T_3 T_4 = I.
    theta_i = the rotation of link i relative to link i-1 about z_{i-1} (link 0 = link 4).

    Derivation. (i) Spherical part: the angle between axes z_0 and z_2 computed through joint 2
    and, backwards, through joint 4 gives cos(alpha) cos(beta) - sin(alpha) sin(beta) cos(theta2)
    = cos(beta) cos(alpha) - sin(beta) sin(alpha) cos(theta4), so cos(theta4) = cos(theta2); in the
    same way cos(theta3) = cos(theta1). The Bennett branch is theta3 = -theta1, theta4 = -theta2
    (the other sign choices do not close a proper Bennett loop; the random-start closures of
    the self-check find no other branch). (ii) With this ansatz closure becomes the half-loop
    identity T(theta1, a, alpha) T(theta2, b, beta) = [T(-theta1, a, alpha) T(-theta2, b, beta)]^{-1}.
    Its rotation entry (2, 3) (1-based) reads, with u = tan(theta1/2), v = tan(theta2/2), w = u v,
        w^2 sin(alpha - beta) + 2 w sin(beta) - sin(alpha + beta) = 0,
    whose roots are
        w = (sin(alpha) - sin(beta))/sin(alpha - beta) = cos((alpha+beta)/2)/cos((alpha-beta)/2),
        w = -(sin(alpha) + sin(beta))/sin(alpha - beta) = sin((beta+alpha)/2)/sin((beta-alpha)/2).
    The rotation entry (1, 3) vanishes only for the second root, and with a = k sin(alpha),
    b = k sin(beta) the translation entries then vanish identically: that is where Bennett's
    condition enters. Hence u v = K. (Verified with the full 4x4 product and a least-squares loop
    closure from random starts in the self-check; the first root fails closure.)

    Written as theta2 = 2 atan2(K cos(theta1/2), sin(theta1/2)), wrapped to (-pi, pi]: defined for
    every theta1 (theta1 = 0 gives theta2 = pi; theta1 = pi gives theta2 = 0).
    Mapping to bennett.toml (alpha = 0.7, beta = 1.9, k = 1.3): theta1 = joint `J1`,
    theta2 = joint `J2`, theta4 = joint `J4` = -theta2 (J4 is written [ground, link3] with axis
    -z_3, the same motion as link3 -> ground about +z_3), theta3 = -theta1 at the cut joint J3.
    """
    K = bennett_K(alpha, beta)
    t2 = 2.0 * np.arctan2(K * np.cos(theta1 / 2), np.sin(theta1 / 2))
    return np.angle(np.exp(1j * t2))


def bennett_angles(theta1, alpha, beta):
    """(theta1, theta2, theta3, theta4) = (theta1, theta2, -theta1, -theta2); see bennett_theta2."""
    t2 = bennett_theta2(theta1, alpha, beta)
    return np.array([theta1, t2, -theta1, -t2])


def bennett_velocity_ratio(theta1, alpha, beta):
    """dtheta2/dtheta1 = -K / (sin^2(theta1/2) + K^2 cos^2(theta1/2)) (= -sin theta2 / sin theta1).

    From tan(theta2/2) = K / tan(theta1/2): with u = tan(theta1/2), v = K/u,
    dtheta2 = 2 dv/(1 + v^2), dv = -K du/u^2, du = (1 + u^2) dtheta1/2, so
    dtheta2/dtheta1 = -K (1 + u^2)/(u^2 + K^2); multiply through by cos^2(theta1/2). The joint
    rates of bennett.toml: J2' = J1' * ratio, J4' = -J2', and -J1' at the cut joint J3.
    """
    K = bennett_K(alpha, beta)
    s, c = np.sin(theta1 / 2), np.cos(theta1 / 2)
    return -K / (s * s + K * K * c * c)


# --------------------------------------------------------------------------- Hooke's joint


def hooke_output_angle(phi1, beta):
    """Output shaft angle phi2 of a Hooke (Cardan) joint: tan(phi2) = tan(phi1) / cos(beta).

    Convention: input shaft axis e1 pointing towards the cross, output shaft axis e2 pointing
    away from it, beta = the bend angle between e1 and e2 (0 = straight), both axes through the
    cross centre. phi1 = rotation of the input shaft about +e1 measured from the position where
    the input yoke's pin p1 lies in the plane of the two shafts; phi2 = rotation of the output
    shaft about +e2 measured from the position where its pin p2 is normal to that plane.

    Derivation. Take e1 = x, e2 = (cos beta, sin beta, 0), p1(0) = y, p2(0) = z. Then
    p1 = (0, cos phi1, sin phi1) and, with e2 x z = (sin beta, -cos beta, 0),
    p2 = cos(phi2) z + sin(phi2) (e2 x z) = (sin phi2 sin beta, -sin phi2 cos beta, cos phi2).
    The cross keeps the pins perpendicular: p1 . p2 = sin(phi1) cos(phi2) -
    cos(phi1) sin(phi2) cos(beta) = 0, so tan(phi2) = tan(phi1)/cos(beta); the branch continuous
    with phi2(0) = 0 is phi2 = atan2(sin phi1, cos phi1 cos beta) (the other, phi2 + pi, is the
    cross turned over). Mapping to hooke_shafts.toml (beta = 30 deg): phi1 = joint `input`
    (axis +x), phi2 = joint `output` (axis +e2), U joint `cross` with axis = p1(0) = +y in the
    input shaft and axis2 = p2(0) = +z in the output shaft.
    """
    return np.arctan2(np.sin(phi1), np.cos(phi1) * np.cos(beta))


def hooke_velocity_ratio(phi1, beta):
    """dphi2/dphi1 = cos(beta) / (1 - sin^2(beta) cos^2(phi1)) (convention of hooke_output_angle).

    Differentiating tan(phi2) = tan(phi1)/cos(beta): sec^2(phi2) dphi2 = sec^2(phi1) dphi1/cos(beta)
    with sec^2(phi2) = 1 + tan^2(phi1)/cos^2(beta); multiplying by cos^2(phi1) cos^2(beta):
    dphi2/dphi1 = cos(beta) / (cos^2(beta) cos^2(phi1) + sin^2(phi1)). It is 1/cos(beta)
    at phi1 = 0, pi (input pin in the shafts' plane) and cos(beta) at phi1 = +-pi/2.
    """
    cb = np.cos(beta)
    return cb / (1.0 - (1.0 - cb * cb) * np.cos(phi1) ** 2)


# --------------------------------------------------------------------------- swash plate


def swash_output_angle(phi, alpha):
    """Oscillation angle psi of a swash-plate (spherical 4R) drive: tan(psi) = -tan(alpha) sin(phi).

    Convention (swash_plate.toml): all axes through O. Input shaft about +z, angle phi; journal
    j fixed in the input shaft, j(phi) = Rz(phi) (sin alpha, 0, cos alpha); the plate turns on
    the journal and carries the trunnion axis t, perpendicular to j; the yoke turns about +x
    (perpendicular to the input), angle psi, and carries t as well: t = Rx(psi) (0, 1, 0).

    Derivation. The trunnion is one line in both the plate and the yoke, and the plate keeps t
    perpendicular to its journal: t . j = 0, i.e.
        (0, cos psi, sin psi) . (sin(alpha) cos(phi), sin(alpha) sin(phi), cos(alpha))
        = sin(alpha) sin(phi) cos(psi) + cos(alpha) sin(psi) = 0,
    so tan(psi) = -tan(alpha) sin(phi): |psi| <= alpha, the yoke oscillates +-alpha per turn.
    Branch continuous with psi(0) = 0 (the other one is psi + pi, the yoke turned over):
    psi = atan2(-sin(alpha) sin(phi), cos(alpha)).
    Mapping to swash_plate.toml (alpha = 15 deg): phi = joint `input`, psi = joint `output`.
    """
    return np.arctan2(-np.sin(alpha) * np.sin(phi), np.cos(alpha))


def swash_journal_angle(phi, alpha):
    """Plate rotation on its journal, theta_j: tan(theta_j) = -tan(phi) / cos(alpha).

    theta_j = rotation of the plate relative to the input shaft about +j (joint `journal` of
    swash_plate.toml, bodies [input_shaft, plate]). In input-shaft coordinates the trunnion axis
    is t_s = Rz(-phi) t = (cos psi sin phi, cos psi cos phi, sin psi) and
    t_s = cos(theta_j) y + sin(theta_j) (j0 x y), j0 x y = (-cos alpha, 0, sin alpha); hence
    cos(theta_j) = cos(psi) cos(phi) and, using sin(psi) = -tan(alpha) sin(phi) cos(psi),
    sin(theta_j) = -cos(psi) sin(phi) / cos(alpha). With cos(psi) > 0:
    theta_j = atan2(-sin(phi), cos(alpha) cos(phi)): the plate lags the shaft by the Hooke-like
    law, so it does not spin in space (it only wobbles).
    """
    return np.arctan2(-np.sin(phi), np.cos(alpha) * np.cos(phi))


def swash_velocity_ratio(phi, alpha):
    """dpsi/dphi = -sin(alpha) cos(alpha) cos(phi) / (cos^2(alpha) + sin^2(alpha) sin^2(phi)).

    From tan(psi) = -tan(alpha) sin(phi): sec^2(psi) dpsi = -tan(alpha) cos(phi) dphi with
    sec^2(psi) = 1 + tan^2(alpha) sin^2(phi); multiply through by cos^2(alpha).
    """
    sa, ca = np.sin(alpha), np.cos(alpha)
    return -sa * ca * np.cos(phi) / (ca * ca + sa * sa * np.sin(phi) ** 2)


# --------------------------------------------------------------------------- parallel cranks (004)


def parallelogram_inertia(l=1.0, m=1.0, M=1.0, n=3):
    """Moment of inertia J of the equivalent pendulum: J = (n m / 3 + M) l^2.

    n equal parallel cranks (uniform rods, length l, mass m, pivots on one ground line, equal
    spacing) carry a coupler of mass M whose pivots are spaced like the crank pivots. All cranks
    keep one angle theta (absolute, from +x), the coupler translates without turning along a
    circle of radius l: v_coupler = l theta'. Kinetic energy
        T = n (1/2)(m l^2/3) theta'^2 + (1/2) M l^2 theta'^2 = (1/2) J theta'^2,
    independent of theta (so the reduced equation has no velocity terms). The coupler's own
    inertia does not enter (it never turns). parallelogram3.toml: J = (1 + 1) * 1 = 2 kg m^2.
    """
    return (n * m / 3.0 + M) * l * l


def parallelogram_gravity_moment(theta, g=9.81, l=1.0, m=1.0, M=1.0, n=3):
    """Generalised gravity force on theta: Q = -(n m/2 + M) g l cos(theta).

    Potential V = g (n m l/2 + M l) sin(theta) + const (gravity along -y; crank centres at
    height (l/2) sin(theta), the coupler at l sin(theta) + const), Q = -dV/dtheta.
    """
    return -(n * m / 2.0 + M) * g * l * np.cos(theta)


def parallelogram_theta_ddot(theta, g=9.81, l=1.0, m=1.0, M=1.0, n=3):
    """Equation of motion of paper 004's parallel-crank mechanism as one pendulum:

        theta'' = -3 (n m/2 + M) g / ((n m + 3 M) l) * cos(theta)

    (Lagrange with T = J theta'^2/2, J constant, and Q from parallelogram_gravity_moment).
    parallelogram3.toml (n = 3, l = 1 m, m = M = 1 kg, g = 9.81 along -y):
    theta'' = -(5/4) g cos(theta) = -12.2625 cos(theta), theta = joint `A0` (= `A1` = `A2`,
    the absolute crank angle from +x: q_ref = -pi/3, cranks hanging); joint `B0` = -theta (the
    coupler keeps its reference orientation, horizontal). Released from rest at -pi/3 it swings
    to -2 pi/3 and back about the stable equilibrium -pi/2, away from the singular poses
    theta = 0, pi (cranks along the ground line, where the rank of the constraints drops).
    """
    return -3.0 * (n * m / 2.0 + M) * g / ((n * m + 3.0 * M) * l) * np.cos(theta)


def parallelogram_multiplier_null_vector(theta):
    """Left null vector w of the constraint Jacobian of parallelogram3.toml (w^T G = 0).

    Rows: the cut joints B1 then B2 (bodies [crank_i, coupler]), 3 position rows each,
    o_coupler - o_crank_i in frame 0 (x, y, z); tree coordinates A0, A1, A2, B0. With
    u = (cos theta, sin theta, 0) along the cranks,
        w = (2 u, -u)  =  (2 cos, 2 sin, 0, -cos, -sin, 0).
    Why: for crank i (pivot spacing 1 along x) the cut row is
    r_i = A0 + l u(theta0) + R(psi) c_i - (A_i + l u(theta_i)), psi = the coupler angle,
    c_i = (i, 0) the pivot offset in the coupler. Its derivatives are l u'(theta0) + i e_z x R c_i
    (theta0 and B0 move the coupler) and -l u'(theta_i); projected on u (u . u' = 0) only the
    psi term i u . (e_z x R c_i) survives, which is proportional to i, so
    2 (u . dr_1) - (u . dr_2) = 0 for every coordinate: rank G = 3 of 4 independent rows,
    one redundant row (the z rows, and the rotation rows of the planar cut R, are identically 0).

    Statement of non-uniqueness: if lambda solves M q'' + h = Q + G^T lambda (with all rows),
    so does lambda + s w for every s. Physically s (1, -2, 1) u are axial forces in the three
    cranks that balance on the coupler (sum 1 - 2 + 1 = 0, moment 0*1 - 2*1 + 1*2 = 0): a
    self-stress, undetermined without compliance. The motion and the drive force do not depend
    on s; dropping one row (paper 004) sets the dropped row's multiplier to 0 and fixes s.
    """
    u = np.array([np.cos(theta), np.sin(theta), 0.0])
    return np.concatenate([2.0 * u, -u])
