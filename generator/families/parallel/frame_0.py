"""The reduction onto C written in frame 0, with the legs' attachment offsets rotated once
(docs/algorithms.md section 1.6.2).

The reduction in C's frame (frame_c.py, section 1.6.1) keeps each attachment offset l_C
constant, but every leg pays for R_Cn = tau_n alpha_C^T (a 3 x 3 product, 45 operations) to
bring C's frame into its last body's frame n. Written in frame 0 the leg only needs tau_n,
which its closure has anyway, and the offset r_k = alpha_C^T l_C, which the leg's closed form
computes anyway (the platform joint is at r_C + r_k). With u0 = [v_C ; omega_0], omega_0 =
alpha_C^T omega_C (both frame 0):

    p_k = v_C + omega_0 x r_k                      (the cut point's velocity, frame 0)
    G_k = C^(d)_k^-1 [[tau_n, 0], [0, e^T]],   e = tau_n^T n_R,   W = C^(d)^-1 [tau_n ; 0]
    qd_k = W p_k + z (e . omega_0)

and the block formulas of section 1.6.1 with S_k = skew(r_k) in place of skew(l_C). C's own
equations in frame 0 (Euler's, rotated by alpha_C^T, with omegadot_C = alpha_C omegadot_0: the
term alpha_C' omega_0 = -omega_C x omega_C vanishes):

    M_0 = [[m_C 1, 0], [0, alpha_C^T I_C alpha_C]],   s_0 = [s_f ; alpha_C^T s_m]
    A*_0 = M_0 + sum_k L_k^T K_k L_k,   b*_0 = s_0 + sum_k [f_k ; r_k x f_k + y_4 e],
          f_k = tau_n^T y_1..3,   A*_0 y = b*_0:  vdot_C = y_1..3,  omegadot_C = alpha_C y_4..6
    qdd_k = W (y_1..3 + y_4..6 x r_k) + z (e . y_4..6) + h_k

The acceleration terms see C through the same vectors: the cut point's centripetal term
tau_n (omega_0 x (omega_0 x r_k)), C's angular velocity in frame n tau_n omega_0 (= R_Cn omega_C)
and, for a universal cut, C's axis e2 = tau_n (alpha_C^T gamma_C^T e_z) (closure.py
``axis_C0``). A*_0 = T0 A*_C T0^T with T0 = diag(1, alpha_C^T), so udot_C is the same. Where the
extra rotations of C's inertia and the offsets cost more than the R_Cn they save, the generator
keeps another build (generator/pipeline.py ``choice``).
"""

from __future__ import annotations

import sympy as sp

from mechgen.generator.algorithms.closure import Closure, acceleration_terms, closure
from mechgen.generator.families.parallel.frame_c import FrameCBuild
from mechgen.generator.families.parallel.kernels import mechanism_wide
from mechgen.generator.families.parallel.platform import Leg
from mechgen.generator.scalar import Mat, Vec, add, cross, matmul, matvec, transpose


def rotated_inertia(rec, I: Mat, alpha: Mat) -> Mat:
    """alpha^T I alpha (symmetric: 6 entries). For an axisymmetric I = diag(a, a, c) (found
    exactly at generation) it is a 1 + (c - a) z z^T, z = alpha^T e_z (row 2 of alpha)."""
    off_diagonal = [I[0][1], I[0][2], I[1][2]]
    if all(x == 0 for x in off_diagonal) and sp.simplify(I[0][0] - I[1][1]) == 0:
        a, dc, z = I[0][0], I[2][2] - I[0][0], alpha[2]
        full = [[(a if i == j else 0) + dc * z[i] * z[j] for j in range(3)] for i in range(3)]
    else:
        full = matmul(transpose(alpha), matmul(I, alpha))
    out = [[None] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i, 3):
            out[i][j] = out[j][i] = rec.bind(full[i][j], f"I_C0_{i}{j}")
    return out


class Frame0Build(FrameCBuild):
    """FrameCBuild whose reduction is written in frame 0 (module docstring)."""

    @mechanism_wide
    def omega_0(self) -> Vec:
        """omega_0 = alpha_C^T omega_C: C's angular velocity in frame 0."""
        return self.rec.vec(matvec(transpose(self.alpha_C), self.omega_C), "omega_0")

    def _offset(self, leg: Leg) -> Vec:
        """r_k = alpha_C^T l_C (frame 0), bound once per leg (first by the closed form; kept,
        so the dense count has the product once)."""
        cache = self.__dict__.setdefault("_offsets", {})
        if leg.name not in cache:
            with self.rec.named(f"{leg.name}_"):
                cache[leg.name] = self.rec.vec(
                    matvec(transpose(self.alpha_C), list(leg.l_C)), "r0")
        return cache[leg.name]

    def _omega_x_r(self, leg: Leg) -> Vec:
        """omega_0 x r_k, shared by the cut point's velocity and its centripetal term."""
        cache = self.__dict__.setdefault("_omega_x_rs", {})
        if leg.name not in cache:
            with self.rec.named(f"{leg.name}_"):
                cache[leg.name] = self.rec.vec(cross(self.omega_0, self._offset(leg)), "w_x_r")
        return cache[leg.name]

    def _cut_point(self, leg: Leg, v: Vec, w: Vec) -> Vec:
        """v + w x r_k (frame 0); omega_0 x r_k named once (_omega_x_r)."""
        wr = self._omega_x_r(leg) if w is self.omega_0 else cross(w, self._offset(leg))
        return add(v, wr)

    def _platform_joint(self, leg: Leg) -> Vec:
        """s0 = r_C + r_k: the cut joint's centre on C, frame 0."""
        return self.rec.vec(add(self.r_C, self._offset(leg)), "s0")

    def _rotation(self, cl: Closure) -> Mat:
        """Frame 0 -> frame n: tau_n."""
        return cl.tau_n

    def _axis_e(self, cl: Closure) -> Vec:
        """e = tau_n^T n_R (frame 0)."""
        return self.rec.vec(matvec(transpose(cl.tau_n), cl.n_R), "e0")

    def _velocity(self) -> tuple[Vec, Vec]:
        """(v_C, omega_0), both frame 0."""
        return self.inp["u"][:3], self.omega_0

    def _platform_block(self) -> tuple[list, list]:
        """M_0 = [[m_C 1, 0], [0, alpha_C^T I_C alpha_C]] and s_0 = [s_f ; alpha_C^T s_m]."""
        n, s, a = self.pf.dof, self.s_C, self.alpha_C
        I_0 = rotated_inertia(self.rec, [list(r) for r in self.pf.I_C], a)
        M = [[self.M_C[i][j] if i < 3 or j < 3 else I_0[i - 3][j - 3] for j in range(n)]
             for i in range(n)]
        return M, list(s[:3]) + self.rec.vec(matvec(transpose(a), s[3:]), "s0_C_m")

    @mechanism_wide
    def closures(self) -> list[Closure]:
        """The closures, a universal cut's C-side axis e2 from frame 0 (no R_Cn)."""
        at = transpose(self.alpha_C)

        def leg_closure(leg: Leg, links) -> Closure:
            axis = (self.rec.vec(matvec(at, list(leg.gamma_C[2])), "axis_C0")
                    if leg.m == 4 else None)
            return closure(self.rec, leg, links, self.alpha_C, axis)
        return self.per_leg(leg_closure, self.links)

    @mechanism_wide
    def h(self):
        """h = C^(d)^-1 c with C's side written from frame 0 (closure.acceleration_terms):
        c_1..3 = tau_n (omega_0 x (omega_0 x r_k)) - w^L, omega_Cn = tau_n omega_0."""
        return self.per_leg(lambda leg, cl, mo: acceleration_terms(
            self.rec, leg, cl, mo, self.omega_0, cross(self.omega_0, self._omega_x_r(leg)),
            R=cl.tau_n), self.closures, self.motion_v)

    @mechanism_wide
    def udot(self):
        """[vdot_C ; omegadot_C] = [y_1..3 ; alpha_C y_4..6]."""
        y = self.y_c
        wd = matvec(self.alpha_C, y[3:])
        return list(y[:3]) + [self.rec.bind(x, f"udot{i + 4}") for i, x in enumerate(wd)]
