"""The reduction onto C written in C's own frame, where each leg's attachment offset is a
constant (docs/algorithms.md section 1.6.1).

Section 1.6 assembles A*_C = M_C + sum_k H_k^T A_k H_k on u = [v_C (frame 0), omega_C (frame
C)], with H_k = C^(d)_k^-1 C^(i)_k (m_k x 6). C^(i)_k factors through the velocity of C's cut
point in frame C, p_k = v'_C + omega_C x l_C with v'_C = alpha_C v_C:

    C^(i)_k u = E_k L_k u',   u' = [v'_C ; omega_C] = T u,   T = diag(alpha_C, 1)
    L_k = [[1, -S_k], [0, 1]],   S_k = skew(l_C) (constant),
    E_k = [[R_Cn, 0], [0, e^T]],  e = R_Cn^T n_R (universal cut only; row 4 of C^(i))

so H_k = G_k L_k T with G_k = C^(d)_k^-1 E_k = [W_k, z_k e^T]: W_k = C^(d)^-1 [R_Cn ; 0]
(m x 3), z_k = C^(d)^-1 e_4 (universal cut). With K_k = G_k^T A_k G_k, 6 x 6 in [p ; omega]:

    K11 = W^T A W,  K12 = (W^T A z) e^T,  K22 = (z^T A z) e e^T
    L^T K L = [[K11, K12 - K11 S], [.., K22 + S K12 + (S K12)^T - S (K11 S)]]   (S^T = -S)
    K22 + S K12 + (S K12)^T = e g^T + g e^T,   g = (z^T A z)/2 e + l_C x (W^T A z)

    A*' = M_C + sum_k L_k^T K_k L_k,      (M_C's mass block m 1 is the same in any frame)
    b*' = [alpha_C s_f ; s_m] + sum_k [f_k ; l_C x f_k + y_4 e],
          y = C^(d)^-T (b_k - A_k h_k),  f_k = R_Cn^T y_1..3

A*' = T A*_C T^T and b*' = T b*_C, so A*' y = b*' gives y = T udot_C: vdot_C = alpha_C^T y_1..3,
omegadot_C = y_4..6; and qd_k = W p_k + z (e . omega_C), qdd_k = W (y_1..3 + omegadot_C x l_C)
+ z (e . omegadot_C) + h_k. The contraction with A_k happens on 3 (or 3 + 1) columns, before
the constant offset is applied, instead of on the 6 columns of H_k; H_k itself is never formed.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from mechgen.generator.algorithms.closure import Closure
from mechgen.generator.algorithms.ldlt import ldlt_solve
from mechgen.generator.families.parallel.kernels import PlatformBuild, mechanism_wide
from mechgen.generator.families.parallel.platform import Leg
from mechgen.generator.scalar import Vec, add, cross, dot, matvec, skew, transpose
from mechgen.generator.statuses import REDUCED_SINGULAR


@dataclass
class CutMap:
    """G_k = C^(d)_k^-1 E_k = [W, z e^T] of one leg (module docstring)."""

    W: list[list[sp.Expr]]      # m x 3
    z: list[sp.Expr] | None     # m, universal cut only
    e: list[sp.Expr] | None     # R_Cn^T n_R (frame C), universal cut only

    def rates(self, p: Vec, w: Vec) -> list[sp.Expr]:
        """G [p ; w] = W p + z (e . w): leg rates from C's cut-point velocity and omega_C."""
        out = [dot(row, p) for row in self.W]
        if self.z is not None:
            ew = dot(self.e, w)
            out = [a + zi * ew for a, zi in zip(out, self.z)]
        return out


def _sym_matmul_AtB(A: list[list], B: list[list]) -> list[list]:
    """A^T B for m x 3 (or m-vector columns) A and B, entries as sums."""
    m = len(A)
    return [[sp.Add(*[A[k][i] * B[k][j] for k in range(m)]) for j in range(len(B[0]))]
            for i in range(len(A[0]))]


class FrameCBuild(PlatformBuild):
    """PlatformBuild whose qd, udot and qdd come from the frame-C reduction above."""

    @mechanism_wide
    def v_Cc(self) -> Vec:
        """v'_C = alpha_C v_C: C's velocity in frame C."""
        return self.rec.vec(matvec(self.alpha_C, self.inp["u"][:3]), "vc_C")

    @mechanism_wide
    def cut_maps(self) -> list[CutMap]:
        def cut_map(leg: Leg, cl: Closure) -> CutMap:
            pad, R = [sp.Integer(0)] * (leg.m - 3), self._rotation(cl)
            cols = [cl.lu.solve(self.rec, [R[r][i] for r in range(3)] + pad, f"W{i + 1}_")
                    for i in range(3)]
            W = [[cols[i][j] for i in range(3)] for j in range(leg.m)]
            if leg.m == 3:
                return CutMap(W, None, None)
            z = cl.lu.solve(self.rec, [0, 0, 0, 1], "z_")
            return CutMap(W, z, self._axis_e(cl))
        return self.per_leg(cut_map, self.closures)

    # --- what depends on the frame the reduction is written in (frame_0.py overrides) -----
    def _rotation(self, cl: Closure) -> list[list]:
        """The rotation from the reduction's frame to the leg's frame n: R_Cn."""
        return cl.R_Cn

    def _axis_e(self, cl: Closure) -> Vec:
        """e = R_Cn^T n_R (row 4 of C^(i), universal cut)."""
        return cl.Ci[3][3:]

    def _offset(self, leg: Leg) -> Vec:
        """The cut point's offset from O_C in the reduction's frame: the constant l_C."""
        return list(leg.l_C)

    def _velocity(self) -> tuple[Vec, Vec]:
        """(v, omega) of C in the reduction's frame: (v'_C, omega_C)."""
        return self.v_Cc, self.omega_C

    def _platform_block(self) -> tuple[list, list]:
        """C's own M and s in the reduction's frame: M_C and [alpha_C s_f ; s_m]."""
        n, s = self.pf.dof, self.s_C
        M = [[self.M_C[i][j] for j in range(n)] for i in range(n)]
        return M, self.rec.vec(matvec(self.alpha_C, s[:3]), "sc_C_f") + list(s[3:])

    def _cut_point(self, leg: Leg, v: Vec, w: Vec) -> Vec:
        """v + w x l_C: a point of C at l_C, frame C."""
        return add(v, cross(w, self._offset(leg)))

    @mechanism_wide
    def qd(self):
        v, w = self._velocity()
        return self.per_leg(lambda leg, G: [
            self.rec.bind(x, f"qd{j + 1}")
            for j, x in enumerate(G.rates(self.rec.vec(self._cut_point(leg, v, w), "p"),
                                          w))], self.cut_maps)

    @mechanism_wide
    def reduced_c(self) -> tuple[list, list]:
        """A*' and b*' (module docstring), assembled leg by leg."""
        n = self.pf.dof
        A, b = self._platform_block()

        for K, f in self.per_leg(self._leg_block, self.closures, self.cut_maps, self.A_legs,
                                 self.b_legs, self.h):
            for i in range(n):
                for j in range(i, n):
                    A[i][j] = A[i][j] + K[i][j]
                b[i] = b[i] + f[i]
        out = [[None] * n for _ in range(n)]
        for i in range(n):
            for j in range(i, n):
                out[i][j] = out[j][i] = self.rec.bind(A[i][j], f"Ac_star{i + 1}{j + 1}")
        return out, [self.rec.bind(x, f"bc_star{i + 1}") for i, x in enumerate(b)]

    def _leg_block(self, leg: Leg, cl: Closure, G: CutMap, A_k, b_k, h_k) -> tuple:
        """L^T K L (upper triangle, 6 x 6) and [f ; l_C x f + y_4 e] of one leg."""
        rec, m, l_C = self.rec, leg.m, self._offset(leg)
        S = skew(l_C)
        AW = [[rec.bind(sp.Add(*[A_k[i][k] * G.W[k][c] for k in range(m)]), f"AW{i + 1}{c + 1}")
               for c in range(3)] for i in range(m)]
        K11 = _sym_matmul_AtB(G.W, AW)
        K11 = [[rec.bind(K11[min(i, j)][max(i, j)], f"K{min(i, j) + 1}{max(i, j) + 1}")
                for j in range(3)] for i in range(3)]
        N = rec.mat([[sp.Add(*[K11[i][k] * S[k][j] for k in range(3)]) for j in range(3)]
                     for i in range(3)], "KS")
        SN = [[sp.Add(*[S[i][k] * N[k][j] for k in range(3)]) for j in range(3)]
              for i in range(3)]
        TR = [[-N[i][j] for j in range(3)] for i in range(3)]
        BR = [[-SN[i][j] for j in range(3)] for i in range(3)]
        if G.z is not None:
            # K12 = k e^T, K22 = kappa e e^T; S K12 + (S K12)^T + K22 = e g^T + g e^T with
            # g = kappa/2 e + l_C x k (S k = l_C x k)
            Az = [rec.bind(sp.Add(*[A_k[i][k] * G.z[k] for k in range(m)]), f"Az{i + 1}")
                  for i in range(m)]
            k = rec.vec([sp.Add(*[G.W[r][i] * Az[r] for r in range(m)]) for i in range(3)],
                        "kz")
            half_kappa = rec.bind(dot(G.z, Az) / 2, "half_kappa")
            g = rec.vec(add([half_kappa * x for x in G.e], cross(l_C, k)), "gz")
            TR = [[k[i] * G.e[j] + TR[i][j] for j in range(3)] for i in range(3)]
            BR = [[G.e[i] * g[j] + g[i] * G.e[j] + BR[i][j] for j in range(3)]
                  for i in range(3)]
        K = [K11[i] + TR[i] for i in range(3)] + [[sp.Integer(0)] * 3 + BR[i] for i in range(3)]
        r = [rec.bind(b_k[i] - sp.Add(*[A_k[i][k] * h_k[k] for k in range(m)]), f"r{i + 1}")
             for i in range(m)]
        y = cl.lu.solve_transposed(rec, r, "y")
        f = rec.vec(matvec(transpose(self._rotation(cl)), y[:3]), "fc")
        mom = cross(l_C, f)
        if G.e is not None:
            mom = add(mom, [y[3] * x for x in G.e])
        return K, f + mom

    @mechanism_wide
    def y_c(self) -> list:
        """T udot_C = [alpha_C vdot_C ; omegadot_C] from A*' y = b*'."""
        A, b = self.reduced_c
        return ldlt_solve(self.rec, A, b, None, REDUCED_SINGULAR, 1e-13,
                          "the reduced mass matrix A*_C", "yc")

    @mechanism_wide
    def udot(self):
        y = self.y_c
        vdot = matvec(transpose(self.alpha_C), y[:3])
        return [self.rec.bind(x, f"udot{i + 1}") for i, x in enumerate(vdot)] + list(y[3:])

    @mechanism_wide
    def qdd(self):
        y = self.y_c
        wd = list(y[3:])
        return self.per_leg(lambda leg, G, h: [
            self.rec.bind(x + hj, f"qdd{j + 1}")
            for j, (x, hj) in enumerate(zip(G.rates(
                self.rec.vec(self._cut_point(leg, list(y[:3]), wd), "a_p"), wd), h))],
            self.cut_maps, self.h)
