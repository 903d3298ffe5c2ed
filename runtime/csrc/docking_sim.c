/* Docking of two spacecraft: right-hand side and driver (see docking_sim.h for the state).
 *
 * One evaluation of the right-hand side (paper 000, section 7, with the base's motion kept):
 *   1. frames: R_A (frame 0 -> inertial), the ring C and its docking frame D_A, the passive
 *      docking frame D_P; the relative pose and velocity of D_P seen from D_A;
 *   2. the interface's contact kernel: contact and latch wrenches on both units;
 *   3. the mechanism's coupled_step kernel at the base's Omega, with the base accelerations
 *      a = [a_O; Omega_dot] left free: udot = udot0 + U a, wrench on the base = W0 + K a,
 *      exactly (the kernel's outputs are affine in them, and it gives the coefficients);
 *   4. the active vehicle's Newton-Euler equations about O_0 with that wrench, solved
 *      together with the mechanism: (M_A - K) a = f_A - bias_A + W0  (6 x 6), then udot;
 *   5. the passive vehicle's Newton-Euler equations about D_P's origin with the contact
 *      wrench and its attitude hold.
 * With sc->decoupled (the paper's approximation, for comparison) step 3 runs at Omega = 0 and
 * a = 0 and step 4 is M_A a = f_A - bias_A + W0: the vehicle feels the mechanism's wrench in
 * the same evaluation, the mechanism does not feel the vehicle's motion.
 * Rigid body about a reference point O with centre of mass c (body axes), inertia I_c about
 * the centre: I_O = I_c + m (c.c 1 - c c^T),
 *   m (a_O + Omega_dot x c + Omega x (Omega x c)) = f
 *   I_O Omega_dot + Omega x (I_O Omega) + m c x a_O = n_O.
 */
#include <math.h>
#include <string.h>
#include "docking_sim.h"
#include "dopri5.h"
#include "dk_bind.h"

typedef struct {
    const dk_scenario *sc;
    int latched;
    int status;             /* last kernel status */
    /* the contact's gap and capture margin at the last state the right-hand side saw (the
       end of an accepted step is the last stage, FSAL), so the driver's event checks reuse
       them instead of calling the contact kernel again */
    double y_last[DK_NY], gap_last, margin_last;
    int latched_last;
} dk_ctx;

int dk_nleg(void) { return DK_NLEG; }

/* --- small vector algebra ---------------------------------------------------------------- */
static void cross3(const double *a, const double *b, double *c)
{
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2],
           z = a[0] * b[1] - a[1] * b[0];
    c[0] = x; c[1] = y; c[2] = z;
}
static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void mv(const double *M, const double *v, double *o)      /* o = M v */
{
    double t[3];
    for (int i = 0; i < 3; i++) t[i] = M[3 * i] * v[0] + M[3 * i + 1] * v[1] + M[3 * i + 2] * v[2];
    memcpy(o, t, sizeof t);
}
static void mtv(const double *M, const double *v, double *o)     /* o = M^T v */
{
    double t[3];
    for (int i = 0; i < 3; i++) t[i] = M[i] * v[0] + M[3 + i] * v[1] + M[6 + i] * v[2];
    memcpy(o, t, sizeof t);
}
static void mm(const double *A, const double *B, double *C)      /* C = A B */
{
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
    memcpy(C, t, sizeof t);
}
static void mmt(const double *A, const double *B, double *C)     /* C = A B^T */
{
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[3 * i + j] = A[3 * i] * B[3 * j] + A[3 * i + 1] * B[3 * j + 1] + A[3 * i + 2] * B[3 * j + 2];
    memcpy(C, t, sizeof t);
}
static void mtm(const double *A, const double *B, double *C)     /* C = A^T B */
{
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[3 * i + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
    memcpy(C, t, sizeof t);
}
/* rotation matrix (body -> inertial) of the quaternion q / |q| (w, x, y, z) */
static void quat_R(const double *q, double *R)
{
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    R[0] = 1 - 2 * (y * y + z * z); R[1] = 2 * (x * y - w * z);     R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z);     R[4] = 1 - 2 * (x * x + z * z); R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y);     R[7] = 2 * (y * z + w * x);     R[8] = 1 - 2 * (x * x + y * y);
}
/* qdot = 1/2 q (x) (0, omega_body) */
static void quat_dot(const double *q, const double *w, double *qd)
{
    qd[0] = 0.5 * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2]);
    qd[1] = 0.5 * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1]);
    qd[2] = 0.5 * (q[0] * w[1] + q[3] * w[0] - q[1] * w[2]);
    qd[3] = 0.5 * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0]);
}
/* alpha_C = A_x(psi_x) A_z(psi_z) A_y(psi_y): frame 0 -> frame C (the mechanism's convention) */
static void alpha_C(const double *x, double *A)
{
    double cy = cos(x[3]), sy = sin(x[3]), cz = cos(x[4]), sz = sin(x[4]),
           cx = cos(x[5]), sx = sin(x[5]);
    double Ay[9] = {cy, 0, -sy, 0, 1, 0, sy, 0, cy};
    double Az[9] = {cz, sz, 0, -sz, cz, 0, 0, 0, 1};
    double Ax[9] = {1, 0, 0, 0, cx, sx, 0, -sx, cx};
    double T[9];
    mm(Az, Ay, T);
    mm(Ax, T, A);
}

/* --- rigid body about a reference point -------------------------------------------------- */
/* M (6x6, row-major) and the bias [m W x (W x c); W x (I_O W)] */
static void body_matrix(double m, const double *c, const double *Ic, const double *W,
                        double *M, double *bias)
{
    double IO[9], cc = dot3(c, c), Wc[3], WWc[3], IW[3], WIW[3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            IO[3 * i + j] = Ic[3 * i + j] + m * ((i == j ? cc : 0.0) - c[i] * c[j]);
    double S[9] = {0, -c[2], c[1], c[2], 0, -c[0], -c[1], c[0], 0};   /* [c]x */
    memset(M, 0, 36 * sizeof(double));
    for (int i = 0; i < 3; i++) {
        M[6 * i + i] = m;
        for (int j = 0; j < 3; j++) {
            M[6 * i + 3 + j] = -m * S[3 * i + j];
            M[6 * (3 + i) + j] = m * S[3 * i + j];
            M[6 * (3 + i) + 3 + j] = IO[3 * i + j];
        }
    }
    cross3(W, c, Wc);
    cross3(W, Wc, WWc);
    mv(IO, W, IW);
    cross3(W, IW, WIW);
    for (int i = 0; i < 3; i++) { bias[i] = m * WWc[i]; bias[3 + i] = WIW[i]; }
}

/* solve A x = b (n x n, row-major, destroyed) by Gaussian elimination, partial pivoting */
static int solve_dense(int n, double *A, double *b)
{
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++) if (fabs(A[n * i + k]) > fabs(A[n * p + k])) p = i;
        if (!(fabs(A[n * p + k]) > 0.0)) return -1;
        if (p != k) {
            for (int j = 0; j < n; j++) { double t = A[n * k + j]; A[n * k + j] = A[n * p + j]; A[n * p + j] = t; }
            double t = b[k]; b[k] = b[p]; b[p] = t;
        }
        for (int i = k + 1; i < n; i++) {
            double f = A[n * i + k] / A[n * k + k];
            for (int j = k; j < n; j++) A[n * i + j] -= f * A[n * k + j];
            b[i] -= f * b[k];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int j = i + 1; j < n; j++) s -= A[n * i + j] * b[j];
        b[i] = s / A[n * i + i];
    }
    return 0;
}

/* --- the relative motion of the docking frames ------------------------------------------- */
typedef struct {
    double R_A[9];          /* frame 0 -> inertial */
    double alpha[9];        /* frame 0 -> C */
    double R_C[9];          /* C -> inertial */
    double R_DA[9];         /* D_A -> inertial */
    double R_P[9];          /* D_P -> inertial */
    double r_DA[3];         /* origin of D_A, inertial */
    double w_C[3];          /* absolute angular velocity of C, inertial */
    double r[3], R[9], v[3], w[3];   /* the contact kernel's inputs (D_A frame) */
    double V_O0[3];         /* velocity of O_0, frame 0 */
} dk_frames;

static void frames(const dk_scenario *sc, const double *y, dk_frames *f)
{
    const double *r_O = y, *V_O = y + 7, *W = y + 10, *x = y + 13, *u = y + 19;
    const double *r_P = y + 25, *V_P = y + 32, *w_P = y + 35;
    double rC[3], vC[3], wC0[3], a[3], b[3];
    quat_R(y + 3, f->R_A);
    quat_R(y + 28, f->R_P);
    alpha_C(x, f->alpha);
    mmt(f->R_A, f->alpha, f->R_C);
    mm(f->R_C, sc->R_CA, f->R_DA);
    /* O_C and D_A's origin, inertial */
    mv(f->R_A, x, rC);
    for (int i = 0; i < 3; i++) rC[i] += r_O[i];
    mv(f->R_C, sc->d_A, a);
    for (int i = 0; i < 3; i++) f->r_DA[i] = rC[i] + a[i];
    /* velocity of O_C: V_O + R_A (Omega x r_C + v_C); angular velocity of C: R_A (Omega +
       alpha^T omega_C) */
    cross3(W, x, a);
    for (int i = 0; i < 3; i++) a[i] += u[i];
    mv(f->R_A, a, vC);
    for (int i = 0; i < 3; i++) vC[i] += V_O[i];
    mtv(f->alpha, u + 3, wC0);
    for (int i = 0; i < 3; i++) wC0[i] += W[i];
    mv(f->R_A, wC0, f->w_C);
    mtv(f->R_A, V_O, f->V_O0);
    /* relative pose of D_P in D_A */
    for (int i = 0; i < 3; i++) a[i] = r_P[i] - f->r_DA[i];
    mtv(f->R_DA, a, f->r);
    mtm(f->R_DA, f->R_P, f->R);
    /* relative velocity at D_P's origin and relative angular velocity, D_A frame */
    double wP[3], rel[3], vCP[3];
    mv(f->R_P, w_P, wP);
    for (int i = 0; i < 3; i++) rel[i] = r_P[i] - rC[i];
    cross3(f->w_C, rel, vCP);
    for (int i = 0; i < 3; i++) { a[i] = V_P[i] - vC[i] - vCP[i]; b[i] = wP[i] - f->w_C[i]; }
    mtv(f->R_DA, a, f->v);
    mtv(f->R_DA, b, f->w);
}

typedef struct {
    double f_P[3], m_P[3], f_A[3], m_A[3], V, P_diss, gap, f_normal, margin;
} dk_contact_out;

static int contact(const dk_scenario *sc, const dk_frames *f, int latched, dk_contact_out *c)
{
    double l = latched ? 1.0 : 0.0;
    return DK_CONTACT(f->r, f->R, f->v, f->w, &l, sc->p_iface, c->f_P, c->m_P, c->f_A, c->m_A,
                      &c->V, &c->P_diss, &c->gap, &c->f_normal, &c->margin);
}

typedef struct {
    double udot[6], a[6], wrench[6], xdot[12], q[DK_NQ], qd[DK_NQ], dpow, stop[DK_NLEG];
    dk_contact_out c;
    double F_P[3], M_P[3];   /* contact on the passive vehicle, D_P frame, about its origin */
    double aP[6];            /* passive: a of D_P's origin (D_P frame), omega_dot (D_P frame) */
} dk_eval;

/* everything at (y, latched): 0, or a kernel status */
static int evaluate(const dk_scenario *sc, int latched, const double *y, dk_frames *f,
                    dk_eval *e)
{
    const double *W = y + 10, *x = y + 13, *u = y + 19, *w_P = y + 35;
    int st;
    frames(sc, y, f);
    if ((st = contact(sc, f, latched, &e->c)) != 0) return st;
    /* contact on the ring: f_A, m_A (about D_A's origin, D_A frame) -> fE (frame 0, at O_C),
       mE (frame C, about O_C) */
    double fC[3], mC[3], dxf[3], fE[3], mE[3], g0[3], zero[3] = {0, 0, 0}, Wz[3];
    mv(sc->R_CA, e->c.f_A, fC);
    mv(sc->R_CA, e->c.m_A, mC);
    cross3(sc->d_A, fC, dxf);
    for (int i = 0; i < 3; i++) mE[i] = mC[i] + dxf[i];
    mtv(f->alpha, fC, fE);
    mtv(f->R_A, sc->g, g0);                    /* gravity, frame 0 (the base at a_O = 0) */
    for (int i = 0; i < 3; i++) Wz[i] = sc->active_fixed || sc->decoupled ? 0.0 : W[i];
    double Du[36], DW[36];
    st = DK_COUPLED(x, u, sc->F_drive, fE, mE, g0, Wz, zero, sc->p_mech, e->xdot, e->q, e->qd,
                    e->udot, e->wrench, &e->dpow, e->stop, Du, DW);
    if (st != 0) return st;
    if (sc->active_fixed) {
        memset(e->a, 0, sizeof e->a);
    } else {
        /* the base accelerations a = [a_O; Omega_dot] (frame 0) enter the kernel as
           g = g0 - a_O, Omega_dot: udot = udot0 + U a, wrench = W0 + K a, U = [-Du_g, Du_w] */
        double M[36], bias[6], rhs[6], gA[3], cxg[3], th[3], cxt[3];
        body_matrix(sc->m_A, sc->c_A, sc->I_A, W, M, bias);
        for (int i = 0; i < 3; i++) { gA[i] = sc->m_A * g0[i]; th[i] = sc->thrust * sc->thrust_dir[i]; }
        if (sc->thrust_until_capture && latched) th[0] = th[1] = th[2] = 0.0;
        cross3(sc->c_A, gA, cxg);
        cross3(sc->c_A, th, cxt);
        for (int i = 0; i < 3; i++) {
            rhs[i] = gA[i] + th[i] + e->wrench[i] - bias[i];
            rhs[3 + i] = cxg[i] + cxt[i] + e->wrench[3 + i] - bias[3 + i];
        }
        if (!sc->decoupled)         /* decoupled: udot and the wrench stay those at a = 0 */
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) {
                    double K = j < 3 ? -DW[6 * i + j] : DW[6 * i + j];
                    M[6 * i + j] -= K;
                }
        if (solve_dense(6, M, rhs) != 0) return -1;
        memcpy(e->a, rhs, sizeof rhs);
        for (int i = 0; i < 6 && !sc->decoupled; i++) {
            double du = 0.0, dw = 0.0;
            for (int j = 0; j < 6; j++) {
                double s = j < 3 ? -1.0 : 1.0;
                du += s * Du[6 * i + j] * e->a[j];
                dw += s * DW[6 * i + j] * e->a[j];
            }
            e->udot[i] += du;
            e->wrench[i] += dw;
        }
        for (int i = 0; i < 6; i++) e->xdot[6 + i] = e->udot[i];
    }
    /* passive vehicle about D_P's origin, D_P frame */
    {
        double M[36], bias[6], rhs[6], gP[3], cxg[3], qe[4], tau[3];
        body_matrix(sc->m_P, sc->c_P, sc->I_P, w_P, M, bias);
        mtv(f->R, e->c.f_P, e->F_P);           /* D_A -> D_P */
        mtv(f->R, e->c.m_P, e->M_P);
        double gI[3] = {sc->m_P * sc->g[0], sc->m_P * sc->g[1], sc->m_P * sc->g[2]};
        mtv(f->R_P, gI, gP);
        cross3(sc->c_P, gP, cxg);
        /* attitude hold: q_e = q_ref^* (x) q_P, tau = -kp 2 sign(w_e) vec(q_e) - kd w_P */
        const double *q = y + 28, *r = sc->q_ref;
        double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        qe[0] = (r[0] * q[0] + r[1] * q[1] + r[2] * q[2] + r[3] * q[3]) / n;
        qe[1] = (r[0] * q[1] - r[1] * q[0] - r[2] * q[3] + r[3] * q[2]) / n;
        qe[2] = (r[0] * q[2] + r[1] * q[3] - r[2] * q[0] - r[3] * q[1]) / n;
        qe[3] = (r[0] * q[3] - r[1] * q[2] + r[2] * q[1] - r[3] * q[0]) / n;
        double sg = qe[0] < 0 ? -1.0 : 1.0;
        for (int i = 0; i < 3; i++) tau[i] = -sc->kp_att * 2.0 * sg * qe[1 + i] - sc->kd_att * w_P[i];
        for (int i = 0; i < 3; i++) {
            rhs[i] = e->F_P[i] + gP[i] - bias[i];
            rhs[3 + i] = e->M_P[i] + cxg[i] + tau[i] - bias[3 + i];
        }
        if (solve_dense(6, M, rhs) != 0) return -1;
        memcpy(e->aP, rhs, sizeof rhs);
    }
    return 0;
}

int dk_rhs(double t, const double *y, double *dy, void *vctx)
{
    dk_ctx *ctx = (dk_ctx *)vctx;
    const dk_scenario *sc = ctx->sc;
    dk_frames f;
    dk_eval e;
    (void)t;
    int st = evaluate(sc, ctx->latched, y, &f, &e);
    ctx->status = st;
    if (st != 0) return st;
    memcpy(ctx->y_last, y, sizeof ctx->y_last);
    ctx->latched_last = ctx->latched;
    ctx->gap_last = e.c.gap;
    ctx->margin_last = e.c.margin;
    double tmp[3];
    /* active vehicle */
    for (int i = 0; i < 3; i++) dy[i] = y[7 + i];
    quat_dot(y + 3, y + 10, dy + 3);
    mv(f.R_A, e.a, tmp);
    for (int i = 0; i < 3; i++) { dy[7 + i] = tmp[i]; dy[10 + i] = e.a[3 + i]; }
    /* mechanism */
    for (int i = 0; i < 12; i++) dy[13 + i] = e.xdot[i];
    /* passive vehicle */
    for (int i = 0; i < 3; i++) dy[25 + i] = y[32 + i];
    quat_dot(y + 28, y + 35, dy + 28);
    mv(f.R_P, e.aP, tmp);
    for (int i = 0; i < 3; i++) { dy[32 + i] = tmp[i]; dy[35 + i] = e.aP[3 + i]; }
    dy[38] = e.dpow + e.c.P_diss;
    return 0;
}

/* momentum (inertial), angular momentum about the inertial origin, kinetic energy of a rigid
   body given about its reference point (position r, rotation R, velocity V of the point,
   body angular velocity w) */
static void body_momentum(double m, const double *c, const double *Ic, const double *r,
                          const double *R, const double *V, const double *w, double *P,
                          double *H, double *T)
{
    double cI[3], wc[3], vG[3], rG[3], Iw[3], Iw_I[3], rxp[3];
    mv(R, c, cI);
    double wI[3];
    mv(R, w, wI);
    cross3(wI, cI, wc);
    for (int i = 0; i < 3; i++) { vG[i] = V[i] + wc[i]; rG[i] = r[i] + cI[i]; P[i] = m * vG[i]; }
    mv(Ic, w, Iw);
    mv(R, Iw, Iw_I);
    cross3(rG, P, rxp);
    for (int i = 0; i < 3; i++) H[i] = rxp[i] + Iw_I[i];
    *T = 0.5 * m * dot3(vG, vG) + 0.5 * dot3(w, Iw);
}

/* the diagnostics row; ``energies`` = 0 leaves out the momenta and energies (17-25), which
   only histories and the conservation figures need */
static int diagnose(const dk_scenario *sc, int latched, double t, const double *y, double *d,
                    int energies)
{
    dk_frames f;
    dk_eval e;
    int st = evaluate(sc, latched, y, &f, &e);
    memset(d, 0, DK_NDIAG * sizeof(double));
    d[0] = t;
    if (st != 0) return st;
    for (int i = 0; i < 6; i++) d[1 + i] = e.wrench[i];
    double FI[3], MI[3];
    mv(f.R_P, e.F_P, FI);
    mv(f.R_P, e.M_P, MI);
    for (int i = 0; i < 3; i++) { d[7 + i] = FI[i]; d[10 + i] = MI[i]; }
    d[13] = e.c.f_normal;
    d[14] = e.c.gap;
    d[15] = e.c.margin;
    d[16] = latched;
    double smax = 0.0;
    for (int k = 0; k < DK_NLEG; k++) if (fabs(e.stop[k]) > smax) smax = fabs(e.stop[k]);
    d[26] = smax;
    for (int k = 0; k < DK_NLEG; k++) d[27 + k] = e.q[dk_drive[k]];
    for (int i = 0; i < 3; i++) {
        d[35 + i] = f.r[i];
        d[38 + i] = f.v[i];
        d[41 + i] = f.w[i];
    }
    for (int i = 0; i < 6; i++) d[44 + i] = y[13 + i];
    for (int i = 0; i < 9; i++) d[50 + i] = f.R[i];
    if (!energies) return 0;
    /* energies and momenta */
    double PA[3], HA[3], TA, PP[3], HP[3], TP, Pm[3], Hm[3], Tm, Tm_rel, Vm, zero[3] = {0, 0, 0};
    const double *W = y + 10;
    double Wz[3] = {0, 0, 0}, V0z[3] = {0, 0, 0};
    if (!sc->active_fixed) { memcpy(Wz, W, sizeof Wz); memcpy(V0z, f.V_O0, sizeof V0z); }
    body_momentum(sc->m_A, sc->c_A, sc->I_A, y, f.R_A, y + 7, W, PA, HA, &TA);
    body_momentum(sc->m_P, sc->c_P, sc->I_P, y + 25, f.R_P, y + 32, y + 35, PP, HP, &TP);
    if ((st = DK_MOMENTUM(y + 13, y + 19, Wz, V0z, sc->p_mech, Pm, Hm, &Tm)) != 0) return st;
    if ((st = DK_ENERGY(y + 13, y + 19, zero, sc->p_mech, &Tm_rel, &Vm)) != 0) return st;
    double PmI[3], HmI[3], rxp[3];
    mv(f.R_A, Pm, PmI);
    mv(f.R_A, Hm, HmI);
    cross3(y, PmI, rxp);
    if (sc->active_fixed) { TA = 0; memset(PA, 0, sizeof PA); memset(HA, 0, sizeof HA); }
    d[17] = TA + TP + Tm;
    d[18] = Vm + e.c.V;
    d[19] = y[38];
    for (int i = 0; i < 3; i++) {
        d[20 + i] = PA[i] + PP[i] + PmI[i];
        d[23 + i] = HA[i] + HP[i] + HmI[i] + rxp[i];
    }
    return 0;
}

int dk_diagnostics(const dk_scenario *sc, int latched, double t, const double *y, double *d)
{
    return diagnose(sc, latched, t, y, d, 1);
}

/* --- events -------------------------------------------------------------------------------- */
typedef struct { const dk_scenario *sc; int latched; int which; } dk_event_ctx;

static void gap_margin(const dk_scenario *sc, int latched, const double *y, double *gap,
                       double *margin)
{
    dk_frames f;
    dk_contact_out o;
    frames(sc, y, &f);
    if (contact(sc, &f, latched, &o) != 0) { *gap = *margin = NAN; return; }
    *gap = o.gap;
    *margin = o.margin;
}

static double event_fn(double t, const double *y, void *vctx)
{
    dk_event_ctx *c = (dk_event_ctx *)vctx;
    double gap, margin;
    (void)t;
    gap_margin(c->sc, c->latched, y, &gap, &margin);
    return c->which == 0 ? gap : margin;
}

/* gap and margin at the current state: from the last right-hand side when it saw this state */
static void step_gap_margin(const dk_ctx *ctx, const double *y, double *gap, double *margin)
{
    if (ctx->latched_last == ctx->latched && memcmp(ctx->y_last, y, sizeof ctx->y_last) == 0) {
        *gap = ctx->gap_last;
        *margin = ctx->margin_last;
    } else {
        gap_margin(ctx->sc, ctx->latched, y, gap, margin);
    }
}

/* --- one case ------------------------------------------------------------------------------ */
typedef struct {
    const dk_scenario *sc;
    dk_result *res;
    int n_hist;
    double *hist;
    long k;                 /* next grid index */
    int contact_seen;
} dk_grid;

/* one grid point: diagnostics, history row, peaks, the stop-force failure */
static int record(dk_grid *gr, int latched, double tk, const double *y)
{
    const dk_scenario *sc = gr->sc;
    dk_result *res = gr->res;
    double d[DK_NDIAG];
    int st = diagnose(sc, latched, tk, y, d, gr->hist != NULL);
    if (st != 0) { res->code = st; res->t_final = tk; return DK_KERNEL_STATUS; }
    if (gr->hist && gr->k < gr->n_hist) memcpy(gr->hist + gr->k * DK_NDIAG, d, sizeof d);
    gr->k++;
    double F = sqrt(d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
    double M = sqrt(d[4] * d[4] + d[5] * d[5] + d[6] * d[6]);
    if (F > res->peak_base_force) res->peak_base_force = F;
    if (M > res->peak_base_moment) res->peak_base_moment = M;
    if (d[13] > res->peak_contact_force) res->peak_contact_force = d[13];
    if (d[26] > res->peak_stop_force) res->peak_stop_force = d[26];
    if (d[14] < res->min_gap) res->min_gap = d[14];
    for (int k = 0; k < DK_NLEG; k++)
        if (fabs(d[27 + k]) > res->peak_stroke[k]) res->peak_stroke[k] = fabs(d[27 + k]);
    if (d[26] > sc->stop_force_limit) { res->t_final = tk; return DK_STOP_OVERLOAD; }
    return DK_OK;
}

/* the grid points k dt_out in (t_old, t_b] of the last step (t_b excluded unless inclusive),
   from the dense output */
static int grid_points(dk_grid *gr, const mg_dopri *s, int latched, double t_b, int inclusive)
{
    double y[DK_NY];
    for (;;) {
        double tk = gr->k * gr->sc->dt_out;
        if (tk > t_b || (!inclusive && tk == t_b) || tk > gr->sc->t_end) return DK_OK;
        mg_dopri_dense(s, tk, y);
        int out = record(gr, latched, tk, y);
        if (out != DK_OK) return out;
    }
}

static void momentum_energy(const dk_scenario *sc, int latched, double t, const double *y,
                            double *P, double *H, double *E)
{
    double d[DK_NDIAG];
    dk_diagnostics(sc, latched, t, y, d);
    for (int i = 0; i < 3; i++) { P[i] = d[20 + i]; H[i] = d[23 + i]; }
    *E = d[17] + d[18] + d[19];
}

int dk_run(const dk_scenario *sc_in, const double *y0, dk_result *res, int n_hist, double *hist)
{
    /* the passive vehicle holds its initial attitude */
    dk_scenario local = *sc_in;
    const dk_scenario *sc = &local;
    double qn = sqrt(y0[28] * y0[28] + y0[29] * y0[29] + y0[30] * y0[30] + y0[31] * y0[31]);
    for (int i = 0; i < 4; i++) local.q_ref[i] = y0[28 + i] / qn;
    mg_dopri s;
    dk_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.sc = sc;
    ctx.latched_last = -1;
    ctx.latched = sc->start_latched ? 1 : 0;
    dk_grid gr = {sc, res, n_hist, hist, 0, 0};
    memset(res, 0, sizeof *res);
    res->t_contact = res->t_capture = res->t_final = NAN;
    res->min_gap = INFINITY;
    if (hist) for (long i = 0; i < (long)n_hist * DK_NDIAG; i++) hist[i] = NAN;
    momentum_energy(sc, ctx.latched, 0.0, y0, res->P0, res->H0, &res->E0);
    int st = mg_dopri_init(&s, DK_NY, dk_rhs, &ctx, 0.0, y0, sc->rtol, sc->atol, sc->h0,
                           sc->hmax);
    if (st != 0) { res->outcome = DK_INTEGRATOR; res->code = st; return res->outcome; }
    s.max_steps = sc->max_steps;
    double gap0, margin0;
    gap_margin(sc, ctx.latched, y0, &gap0, &margin0);
    if (gap0 <= 0.0) { gr.contact_seen = 1; res->t_contact = 0.0; }
    double t_stop = sc->t_end;
    if (ctx.latched) {          /* captured from the start: the attenuation phase alone */
        res->captured = 1;
        res->t_capture = 0.0;
        t_stop = fmin(sc->t_end, sc->t_after_capture);
    }
    int outcome;
    if ((outcome = record(&gr, ctx.latched, 0.0, y0)) != DK_OK) {       /* grid point t = 0 */
        res->outcome = outcome;
        return outcome;
    }
    while (s.t < t_stop) {
        st = mg_dopri_step(&s, t_stop);
        if (st != 0) {
            if (ctx.status != 0) { outcome = DK_KERNEL_STATUS; res->code = ctx.status; }
            else { outcome = DK_INTEGRATOR; res->code = st; }
            res->t_final = s.t;
            break;
        }
        double gap1, margin1;
        step_gap_margin(&ctx, s.y, &gap1, &margin1);
        if (!gr.contact_seen && gap0 > 0.0 && gap1 <= 0.0) {
            dk_event_ctx ec = {sc, ctx.latched, 0};
            double te, ye[DK_NY];
            if (mg_dopri_locate(&s, event_fn, &ec, gap0, gap1, &te, ye, 1e-12) == 1)
                res->t_contact = te;
            else
                res->t_contact = s.t;
            gr.contact_seen = 1;
        }
        if (!ctx.latched && margin0 <= 0.0 && margin1 > 0.0) {
            dk_event_ctx ec = {sc, 0, 1};
            double te = s.t, ye[DK_NY];
            memcpy(ye, s.y, sizeof ye);
            mg_dopri_locate(&s, event_fn, &ec, margin0, margin1, &te, ye, 1e-12);
            if ((outcome = grid_points(&gr, &s, 0, te, 0)) != DK_OK) break;
            res->t_capture = te;
            res->captured = 1;
            {   /* the latches close stretched: the energy they bring in (hook work) */
                dk_frames f;
                dk_contact_out open, shut;
                frames(sc, ye, &f);
                if (contact(sc, &f, 0, &open) == 0 && contact(sc, &f, 1, &shut) == 0)
                    res->E_latch = shut.V - open.V;
            }
            ctx.latched = 1;
            t_stop = fmin(sc->t_end, te + sc->t_after_capture);
            if (mg_dopri_restart(&s, te, ye) != 0) { outcome = DK_INTEGRATOR; break; }
            gap_margin(sc, 1, s.y, &gap0, &margin0);
            continue;
        }
        if ((outcome = grid_points(&gr, &s, ctx.latched, s.t, 1)) != DK_OK) break;
        gap0 = gap1;
        margin0 = margin1;
        if (!ctx.latched && gr.contact_seen) {
            /* separation: D_P's origin farther than sc->separation from D_A's */
            dk_frames f;
            frames(sc, s.y, &f);
            if (sqrt(dot3(f.r, f.r)) > sc->separation) { outcome = DK_SEPARATION; res->t_final = s.t; break; }
        }
    }
    if (outcome == DK_OK) res->t_final = s.t;
    if (outcome == DK_OK && !res->captured) outcome = DK_NO_CAPTURE;
    res->outcome = outcome;
    res->nfev = s.nfev;
    res->naccept = s.naccept;
    res->nreject = s.nreject;
    res->energy_absorbed = s.y[38];
    momentum_energy(sc, ctx.latched, s.t, s.y, res->P1, res->H1, &res->E1);
    return outcome;
}

long dk_run_batch(long n, const dk_scenario *sc, const double *y0, dk_result *res)
{
    long failed = 0;
    for (long i = 0; i < n; i++)
        if (dk_run(sc, y0 + i * DK_NY, res + i, 0, NULL) != DK_OK) failed++;
    return failed;
}
