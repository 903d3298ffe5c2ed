/*
 * Test harness of runtime/csrc/dopri5.c (tests/test_dopri5.py): a few right-hand sides and
 * event functions written in C, chosen by number through harness_rhs / harness_event, and a
 * copy of the method's coefficients. The integrator is included as one translation unit so
 * that its (static) tableau can be read back and checked against the order conditions and
 * against scipy's RK45.
 */
#include "dopri5.c"

typedef struct {
    double p[16];   /* parameters of the problem */
    int mode;       /* piece of a piecewise rhs (switched by the test) */
    long calls;     /* rhs calls seen */
    long events;    /* event-function calls seen */
} harness_ctx;

#define P (((harness_ctx *)ctx)->p)

/* 0: y' = p0 y, componentwise */
static int rhs_exp(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    dy[0] = P[0] * y[0];
    return 0;
}

/* 1: y' = cos(t) y, y = y0 exp(sin t) (non-autonomous: checks the nodes c) */
static int rhs_cos(double t, const double *y, double *dy, void *ctx)
{
    (void)ctx;
    dy[0] = cos(t) * y[0];
    return 0;
}

/* 2: harmonic oscillator x'' = -w^2 x, w = p0 */
static int rhs_harmonic(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    dy[0] = y[1];
    dy[1] = -P[0] * P[0] * y[0];
    return 0;
}

/* 3: Kepler problem, mu = 1, state (x, y, vx, vy) */
static int rhs_kepler(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    (void)ctx;
    double r2 = y[0] * y[0] + y[1] * y[1];
    double r3 = r2 * sqrt(r2);
    dy[0] = y[2];
    dy[1] = y[3];
    dy[2] = -y[0] / r3;
    dy[3] = -y[1] / r3;
    return 0;
}

/* 4: linear y' = A y, n = 3, A row-major in p[0..8] */
static int rhs_linear(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    for (int i = 0; i < 3; ++i) dy[i] = P[3 * i] * y[0] + P[3 * i + 1] * y[1] + P[3 * i + 2] * y[2];
    return 0;
}

/* 5: ball in free fall, (height, velocity), g = p0 */
static int rhs_ball(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    dy[0] = y[1];
    dy[1] = -P[0];
    return 0;
}

/* 6: y' = -y, fails with code p1 for t > p0 */
static int rhs_fail(double t, const double *y, double *dy, void *ctx)
{
    if (t > P[0]) return (int)P[1];
    dy[0] = -y[0];
    return 0;
}

/* 7: y' = -y, NaN derivative for t > p0 */
static int rhs_nan(double t, const double *y, double *dy, void *ctx)
{
    dy[0] = t > P[0] ? NAN : -y[0];
    return 0;
}

/* 8: y' = y^2, blows up at t = 1/y0 */
static int rhs_blowup(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    (void)ctx;
    dy[0] = y[0] * y[0];
    return 0;
}

/* 9: stiff y' = -p0 (y - cos t) */
static int rhs_stiff(double t, const double *y, double *dy, void *ctx)
{
    dy[0] = -P[0] * (y[0] - cos(t));
    return 0;
}

/* 10: y' = -p[mode] y: the test switches mode at a discontinuity */
static int rhs_switch(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    dy[0] = -P[((harness_ctx *)ctx)->mode] * y[0];
    return 0;
}

/* 11: a failure with a negative code */
static int rhs_negative(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    (void)y;
    (void)dy;
    (void)ctx;
    return -5;
}

/* 12: Van der Pol x'' = mu (1 - x^2) x' - x, mu = p0 */
static int rhs_vdp(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    dy[0] = y[1];
    dy[1] = P[0] * (1.0 - y[0] * y[0]) * y[1] - y[0];
    return 0;
}

/* 13: y' = p0 y with n = p1 components (a larger system, e.g. 40 states) */
static int rhs_expn(double t, const double *y, double *dy, void *ctx)
{
    (void)t;
    int n = (int)P[1];
    for (int i = 0; i < n; ++i) dy[i] = P[0] * (1.0 + 0.01 * i) * y[i];
    return 0;
}

/* 14: y' = 3 (t - p0)^2, y = (t - p0)^3 + const (a polynomial the method integrates exactly) */
static int rhs_cubic(double t, const double *y, double *dy, void *ctx)
{
    (void)y;
    dy[0] = 3.0 * (t - P[0]) * (t - P[0]);
    return 0;
}

static int counted(mg_rhs_fn f, double t, const double *y, double *dy, void *ctx)
{
    ((harness_ctx *)ctx)->calls++;
    return f(t, y, dy, ctx);
}

#define COUNTED(name) \
    static int name##_c(double t, const double *y, double *dy, void *ctx) \
    { return counted(name, t, y, dy, ctx); }
COUNTED(rhs_exp) COUNTED(rhs_cos) COUNTED(rhs_harmonic) COUNTED(rhs_kepler)
COUNTED(rhs_linear) COUNTED(rhs_ball) COUNTED(rhs_fail) COUNTED(rhs_nan) COUNTED(rhs_blowup)
COUNTED(rhs_stiff) COUNTED(rhs_switch) COUNTED(rhs_negative) COUNTED(rhs_vdp) COUNTED(rhs_expn)
COUNTED(rhs_cubic)

mg_rhs_fn harness_rhs(int id)
{
    static const mg_rhs_fn table[] = {
        rhs_exp_c, rhs_cos_c, rhs_harmonic_c, rhs_kepler_c, rhs_linear_c, rhs_ball_c,
        rhs_fail_c, rhs_nan_c, rhs_blowup_c, rhs_stiff_c, rhs_switch_c, rhs_negative_c,
        rhs_vdp_c, rhs_expn_c, rhs_cubic_c};
    return (id >= 0 && id < (int)(sizeof table / sizeof table[0])) ? table[id] : NULL;
}

/* events (ctx is a harness_ctx): 0: g = y0 (height of the ball, sin t); 1: g = y0 - p15 */
static double event_y0(double t, const double *y, void *ctx)
{
    (void)t;
    ((harness_ctx *)ctx)->events++;
    return y[0];
}

static double event_level(double t, const double *y, void *ctx)
{
    (void)t;
    ((harness_ctx *)ctx)->events++;
    return y[0] - P[15];
}

/* 2: NaN */
static double event_nan(double t, const double *y, void *ctx)
{
    (void)t;
    (void)y;
    (void)ctx;
    return NAN;
}

mg_event_fn harness_event(int id)
{
    return id == 0 ? event_y0 : id == 1 ? event_level : id == 2 ? event_nan : NULL;
}

/* the method's coefficients: c[7], a[7][7] (row 7 = b), b[7], e[7], d[7] */
void harness_tableau(double *c_out, double *a_out, double *b_out, double *e_out, double *d_out)
{
    for (int j = 0; j < STAGES; ++j) {
        c_out[j] = c[j];
        b_out[j] = b[j];
        e_out[j] = e[j];
        d_out[j] = d[j];
        for (int l = 0; l < STAGES; ++l)
            a_out[STAGES * j + l] = j == STAGES - 1 ? (l < j ? b[l] : 0.0)
                                                    : (l < j ? a[j][l] : 0.0);
    }
}
