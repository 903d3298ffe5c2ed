/*
 * dopri5.c: Dormand-Prince 5(4) with Hairer's step-size control, dense output and event
 * location. See dopri5.h for the API and the references:
 *   HNW I  = Hairer, Norsett, Wanner, Solving ODE I (2nd ed., 1993), sections II.4-II.6;
 *   HNW II = Hairer, Wanner, Solving ODE II (2nd ed., 1996), section IV.2;
 *   dopri5.f = E. Hairer's Fortran code DOPRI5 (subroutines DOPCOR, HINIT, CONTD5).
 */
#include "dopri5.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------
 * Coefficients.
 * The Runge-Kutta tableau (c, a, b) and the error weights e = b - b_hat are those of
 * J. R. Dormand, P. J. Prince, "A family of embedded Runge-Kutta formulae", J. Comput. Appl.
 * Math. 6 (1980) 19-26, as printed in HNW I, Table 5.2 (section II.5) and set in dopri5.f
 * (C2..C5, A21..A76, E1..E7). The 7th stage is evaluated at the new point with the weights
 * b (a7j = bj), so it is the first stage of the next step (FSAL).
 * The dense-output weights d are those of dopri5.f (D1..D7), i.e. the quartic continuous
 * extension of Shampine (Math. Comp. 46 (1986) 135-150) given in HNW I, section II.6.
 * -------------------------------------------------------------------------------------*/
enum { STAGES = 7 };

static const double c[STAGES] = {0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0};

/* a[j][l], l < j: stages 2..6 (the 7th stage's row is b) */
static const double a[STAGES - 1][STAGES - 1] = {
    {0.0},
    {1.0 / 5.0},
    {3.0 / 40.0, 9.0 / 40.0},
    {44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0},
    {19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0},
    {9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0},
};

/* b: the 5th-order weights, also the row a7j of the FSAL stage (b7 = 0) */
static const double b[STAGES] = {35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0,
                                 -2187.0 / 6784.0, 11.0 / 84.0, 0.0};

/* e = b - b_hat, b_hat the 4th-order embedded weights (dopri5.f E1..E7) */
static const double e[STAGES] = {71.0 / 57600.0, 0.0, -71.0 / 16695.0, 71.0 / 1920.0,
                                 -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0};

/* dense output, dopri5.f D1..D7 (d2 = 0) */
static const double d[STAGES] = {-12715105075.0 / 11282082432.0, 0.0,
                                 87487479700.0 / 32700410799.0, -10690763975.0 / 1880347072.0,
                                 701980252875.0 / 199316789632.0, -1453857185.0 / 822651844.0,
                                 69997945.0 / 29380423.0};

/* dopri5.f defaults */
#define SAFE_DEFAULT 0.9
#define BETA_DEFAULT 0.04
#define FAC1_DEFAULT 0.2
#define FAC2_DEFAULT 10.0
#define FACOLD_MIN 1.0e-4
#define MAX_STEPS_DEFAULT 100000L
#define NSTIFF_DEFAULT 1000L
#define STIFF_HLAMB 3.25       /* |h lambda| beyond which a step is "stiff" (dopri5.f) */
#define STIFF_COUNT 15         /* that many stiff tests in a row: the problem is stiff */
#define NONSTIFF_COUNT 6       /* that many non-stiff tests reset the count */
#define UNDERFLOW_EPS 16.0     /* h below UNDERFLOW_EPS * eps * |t| is a step underflow */
#define NONFINITE_TRIES 20     /* consecutive non-finite trial steps before giving up */
#define LOCATE_MAXIT 400

/* ---------------------------------------------------------------------------------------
 * Small helpers
 * -------------------------------------------------------------------------------------*/
static int all_finite(int n, const double *v)
{
    for (int i = 0; i < n; ++i)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static double hmax_of(const mg_dopri *s)
{
    return s->hmax > 0.0 ? s->hmax : INFINITY;
}

/* Call the right-hand side; a nonzero return is kept and mapped to the status returned. */
static int call_rhs(mg_dopri *s, double t, const double *y, double *dydt)
{
    int rc = s->f(t, y, dydt, s->ctx);
    s->nfev++;
    if (rc == 0) return MG_DOPRI_OK;
    s->rhs_status = rc;
    return rc > 0 ? rc : MG_DOPRI_ERR_RHS_NEGATIVE;
}

/* The weights of HNW I (4.10): sk_i = atol_i + rtol * |y_i| (the starting step) */
static double rms_scaled(const mg_dopri *s, const double *v, const double *y)
{
    double sum = 0.0;
    for (int i = 0; i < s->n; ++i) {
        double sk = s->atol[i] + s->rtol * fabs(y[i]);
        sum += (v[i] / sk) * (v[i] / sk);
    }
    return sqrt(sum / s->n);
}

static int check_tolerances(int n, double rtol, const double *atol)
{
    /* dopri5.f demands atol > 0 and rtol > 10 uround; rtol = 0 (pure absolute control) is
     * allowed here as well */
    if (!isfinite(rtol) || rtol < 0.0 || (rtol > 0.0 && rtol < 10.0 * DBL_EPSILON))
        return MG_DOPRI_ERR_TOL;
    for (int i = 0; i < n; ++i)
        if (!isfinite(atol[i]) || !(atol[i] > 0.0)) return MG_DOPRI_ERR_TOL;
    return MG_DOPRI_OK;
}

/* ---------------------------------------------------------------------------------------
 * Starting step, HNW I, section II.4 ("Starting step size") and dopri5.f HINIT, with the
 * RMS norm of (4.11) and iord = 5. Needs k[0] = f(t, y); one more rhs call (y_stage, k[1]
 * as scratch). Returns the status; the step in *h.
 * -------------------------------------------------------------------------------------*/
static int initial_step(mg_dopri *s, double *h)
{
    const int n = s->n;
    const double *f0 = s->k[0];
    double *y1 = s->y_stage, *f1 = s->k[1];
    double hmax = hmax_of(s);

    /* a) d0 = ||y0||, d1 = ||f0||; b) first guess of an explicit Euler step */
    double dny = rms_scaled(s, s->y, s->y);
    double dnf = rms_scaled(s, f0, s->y);
    double h0 = (dnf <= 1e-5 || dny <= 1e-5) ? 1e-6 : 0.01 * dny / dnf;
    h0 = fmin(h0, hmax);

    /* c) explicit Euler step, d) estimate of the second derivative */
    for (int i = 0; i < n; ++i) y1[i] = s->y[i] + h0 * f0[i];
    int rc = call_rhs(s, s->t + h0, y1, f1);
    if (rc) return rc;
    for (int i = 0; i < n; ++i) y1[i] = f1[i] - f0[i];
    double der2 = rms_scaled(s, y1, s->y) / h0;

    /* e) h1 ** iord * max(d1, d2) = 0.01, f) h = min(100 h0, h1, hmax) */
    double der12 = fmax(fabs(der2), dnf);
    double h1;
    if (!isfinite(der12))
        h1 = 1e-3 * h0; /* the Euler probe left the domain of f: start small */
    else if (der12 <= 1e-15)
        h1 = fmax(1e-6, h0 * 1e-3);
    else
        h1 = pow(0.01 / der12, 1.0 / 5.0);
    *h = fmin(fmin(100.0 * h0, h1), hmax);
    return MG_DOPRI_OK;
}

/* ---------------------------------------------------------------------------------------
 * One trial step of size h from (t, y) with k[0] = f(t, y): stages k2..k7, the 5th-order
 * solution y_new (argument of k7), and the error norm of HNW I (4.11),
 *   err = sqrt(1/n sum (err_i / sk_i)^2), sk_i = atol_i + rtol max(|y_i|, |y_new_i|),
 * err_i = h sum e_j k_j (dopri5.f DOPCOR). Stages 6 and 7 are taken at t_new (= t + h, or
 * t_end exactly on the last step). Returns the rhs status; *finite = 0 if y_new or the
 * error is not finite (a stage produced NaN/inf or overflowed).
 * -------------------------------------------------------------------------------------*/
static int trial_step(mg_dopri *s, double h, double t_new, int *finite)
{
    const int n = s->n;
    const double t = s->t;

    for (int j = 1; j < STAGES; ++j) {
        int fsal = (j == STAGES - 1); /* stage 7 = f(t_new, y_new), y_new = y + h sum b k */
        const double *w = fsal ? b : a[j];
        double *arg = fsal ? s->y_new : s->y_stage;
        for (int i = 0; i < n; ++i) {
            double acc = 0.0;
            for (int l = 0; l < j; ++l) acc += w[l] * s->k[l][i];
            arg[i] = s->y[i] + h * acc;
        }
        double tj = (c[j] == 1.0) ? t_new : t + c[j] * h;
        int rc = call_rhs(s, tj, arg, s->k[j]);
        if (rc) return rc;
    }

    double sum = 0.0;
    int ok = 1;
    for (int i = 0; i < n; ++i) {
        double acc = 0.0;
        for (int l = 0; l < STAGES; ++l) acc += e[l] * s->k[l][i];
        double sk = s->atol[i] + s->rtol * fmax(fabs(s->y[i]), fabs(s->y_new[i]));
        double q = h * acc / sk;
        sum += q * q;
        ok &= isfinite(s->y_new[i]) != 0;
    }
    s->err = sqrt(sum / n);
    *finite = ok && isfinite(s->err);
    return MG_DOPRI_OK;
}

/* Dense-output coefficients of the accepted step, dopri5.f DOPCOR (rcont1..rcont5):
 *   y(t_old + theta h) = r1 + theta (r2 + (1-theta) (r3 + theta (r4 + (1-theta) r5))). */
static void dense_coefficients(mg_dopri *s, double h)
{
    const double *k1 = s->k[0], *k7 = s->k[6];
    for (int i = 0; i < s->n; ++i) {
        double ydiff = s->y_new[i] - s->y[i];
        double bspl = h * k1[i] - ydiff;
        double acc = 0.0;
        for (int l = 0; l < STAGES; ++l) acc += d[l] * s->k[l][i];
        s->rcont[0][i] = s->y[i];
        s->rcont[1][i] = ydiff;
        s->rcont[2][i] = bspl;
        s->rcont[3][i] = ydiff - h * k7[i] - bspl;
        s->rcont[4][i] = h * acc;
    }
}

/* Stiffness test of dopri5.f (HNW II, IV.2): |h lambda| ~ h ||k7 - k6|| / ||y_new - y6||,
 * with y6 the argument of stage 6 (still in y_stage). Returns 1 when the problem is stiff. */
static int stiffness_test(mg_dopri *s, double h)
{
    if (s->nstiff <= 0 || !(s->naccept % s->nstiff == 0 || s->iasti > 0)) return 0;
    double stnum = 0.0, stden = 0.0;
    for (int i = 0; i < s->n; ++i) {
        double dk = s->k[6][i] - s->k[5][i], dy = s->y_new[i] - s->y_stage[i];
        stnum += dk * dk;
        stden += dy * dy;
    }
    if (stden > 0.0) s->hlamb = h * sqrt(stnum / stden);
    if (s->hlamb > STIFF_HLAMB) {
        s->nonsti = 0;
        if (++s->iasti == STIFF_COUNT) {
            s->stiff = 1;
            return 1;
        }
    } else if (++s->nonsti == NONSTIFF_COUNT) {
        s->iasti = 0;
    }
    return 0;
}

/* Step-size controller of dopri5.f with Lund stabilisation (HNW II, IV.2):
 *   fac11 = err^expo1, expo1 = 1/5 - 0.75 beta;
 *   accepted: h_new = h / clamp(fac11 / facold^beta / safe, 1/fac2, 1/fac1),
 *             facold = max(err, 1e-4), h_new <= hmax, no growth right after a rejection;
 *   rejected: h_new = h / min(1/fac1, fac11 / safe). */
static double next_step(mg_dopri *s, double h, int accepted)
{
    double expo1 = 0.2 - s->beta * 0.75;
    double facc1 = 1.0 / s->fac1, facc2 = 1.0 / s->fac2;
    double fac11 = pow(s->err, expo1);
    if (!accepted) return h / fmin(facc1, fac11 / s->safe);

    double fac = fac11 / pow(s->facold, s->beta);
    fac = fmax(facc2, fmin(facc1, fac / s->safe));
    double hnew = h / fac;
    s->facold = fmax(s->err, FACOLD_MIN);
    hnew = fmin(hnew, hmax_of(s));
    if (s->reject) hnew = fmin(hnew, h);
    return hnew;
}

/* Accept the trial step of size h ending at t_new: dense output, advance, FSAL. */
static int accept_step(mg_dopri *s, double h, double t_new)
{
    const int n = s->n;
    size_t bytes = (size_t)n * sizeof(double);

    dense_coefficients(s, h);
    s->naccept++;
    int stiff = stiffness_test(s, h);

    s->t_old = s->t;
    memcpy(s->y_old, s->y, bytes);
    s->t = t_new;
    memcpy(s->y, s->y_new, bytes);
    memcpy(s->k[0], s->k[STAGES - 1], bytes); /* FSAL: k1 of the next step = k7 */
    s->h_last = h;

    if (!s->fixed_step) s->h = next_step(s, h, 1);
    s->reject = 0;
    return (stiff && s->stop_on_stiff) ? MG_DOPRI_ERR_STIFF : MG_DOPRI_OK;
}

/* ---------------------------------------------------------------------------------------
 * Public API
 * -------------------------------------------------------------------------------------*/
int mg_dopri_init(mg_dopri *s, int n, mg_rhs_fn f, void *ctx, double t0, const double *y0,
                  double rtol, const double *atol, double h0, double hmax)
{
    if (!s) return MG_DOPRI_ERR_BAD_ARG;
    memset(s, 0, sizeof *s);
    if (n < 1 || n > MG_DOPRI_MAXN) return MG_DOPRI_ERR_N;
    if (!f || !y0 || !atol || !isfinite(t0) || !isfinite(h0) || isnan(hmax))
        return MG_DOPRI_ERR_BAD_ARG;
    int rc = check_tolerances(n, rtol, atol);
    if (rc) return rc;

    s->n = n;
    s->f = f;
    s->ctx = ctx;
    s->rtol = rtol;
    memcpy(s->atol, atol, (size_t)n * sizeof(double));
    s->hmax = hmax;
    s->hmin = 0.0;
    s->safe = SAFE_DEFAULT;
    s->beta = BETA_DEFAULT;
    s->fac1 = FAC1_DEFAULT;
    s->fac2 = FAC2_DEFAULT;
    s->max_steps = MAX_STEPS_DEFAULT;
    s->nstiff = NSTIFF_DEFAULT;
    s->h = h0 > 0.0 ? fmin(h0, hmax_of(s)) : 0.0;

    rc = mg_dopri_restart(s, t0, y0); /* k1 = f(t0, y0); h = 0 asks for the starting step */
    return rc;
}

int mg_dopri_restart(mg_dopri *s, double t, const double *y)
{
    if (!s || !y || !isfinite(t) || !s->f || s->n < 1 || s->n > MG_DOPRI_MAXN)
        return MG_DOPRI_ERR_BAD_ARG;
    const int n = s->n;
    size_t bytes = (size_t)n * sizeof(double);

    s->ready = 0;
    if (!all_finite(n, y)) return MG_DOPRI_ERR_NONFINITE;
    memmove(s->y, y, bytes);
    s->t = t;
    s->t_old = t;
    memcpy(s->y_old, s->y, bytes);
    s->h_last = 0.0;
    for (int r = 0; r < 5; ++r) memset(s->rcont[r], 0, bytes);
    memcpy(s->rcont[0], s->y, bytes); /* dense output: the constant y */

    int rc = call_rhs(s, t, s->y, s->k[0]);
    if (rc) return rc;
    if (!all_finite(n, s->k[0])) return MG_DOPRI_ERR_NONFINITE;

    /* controller history belongs to the smooth piece before the discontinuity */
    s->facold = FACOLD_MIN;
    s->reject = 0;
    s->err = 0.0;
    s->iasti = s->nonsti = 0;
    s->hlamb = 0.0;

    if (!(s->h > 0.0) || !isfinite(s->h)) {
        rc = initial_step(s, &s->h);
        if (rc) return rc;
    }
    if (!s->fixed_step) s->h = fmax(fmin(s->h, hmax_of(s)), s->hmin);
    s->ready = 1;
    return MG_DOPRI_OK;
}

int mg_dopri_step(mg_dopri *s, double t_end)
{
    if (!s) return MG_DOPRI_ERR_BAD_ARG;
    if (!s->ready) return MG_DOPRI_ERR_NOT_READY;
    if (!isfinite(t_end) || t_end < s->t) return MG_DOPRI_ERR_BAD_ARG;
    if (isnan(s->h) || (s->fixed_step && !(s->h > 0.0 && isfinite(s->h))))
        return MG_DOPRI_ERR_BAD_ARG;
    if (t_end == s->t) return MG_DOPRI_OK;

    int nonfinite_tries = 0;
    if (!s->fixed_step) s->h = fmin(s->h, hmax_of(s));
    for (;;) {
        if (s->max_steps > 0 && s->nstep >= s->max_steps) return MG_DOPRI_ERR_MAX_STEPS;
        double remaining = t_end - s->t;
        double h = s->h;
        /* step underflow (dopri5.f: 0.1 |h| <= |x| uround), or the user's hmin; a last
         * step shorter than that is fine */
        double hmin = fmax(s->hmin, UNDERFLOW_EPS * DBL_EPSILON * fabs(s->t));
        if (!s->fixed_step && (!(h > 0.0) || (h < hmin && h < remaining)))
            return nonfinite_tries ? MG_DOPRI_ERR_NONFINITE : MG_DOPRI_ERR_STEP_UNDERFLOW;

        /* land on t_end when within 1 % (dopri5.f), unless that exceeds hmax */
        int last = h >= remaining ||
                   (1.01 * h >= remaining && (s->fixed_step || remaining <= hmax_of(s)));
        double h_step = last ? remaining : h;
        double t_new = last ? t_end : s->t + h_step;

        s->nstep++;
        int finite;
        int rc = trial_step(s, h_step, t_new, &finite);
        if (rc) return rc;

        if (!finite) {
            /* a stage left the domain of f or overflowed: shrink as hard as allowed */
            if (s->fixed_step || ++nonfinite_tries >= NONFINITE_TRIES)
                return MG_DOPRI_ERR_NONFINITE;
            s->nreject++;
            s->reject = 1;
            s->h = h_step * s->fac1;
            continue;
        }
        if (s->fixed_step || s->err <= 1.0) return accept_step(s, h_step, t_new);

        nonfinite_tries = 0;
        s->nreject++;
        s->h = next_step(s, h_step, 0);
        s->reject = 1;
    }
}

void mg_dopri_dense(const mg_dopri *s, double t, double *y)
{
    const int n = s->n;
    if (t == s->t || s->h_last == 0.0) { /* the step's end exactly; after init/restart: y */
        memcpy(y, s->y, (size_t)n * sizeof(double));
        return;
    }
    /* dopri5.f CONTD5 */
    double theta = (t - s->t_old) / s->h_last, theta1 = 1.0 - theta;
    for (int i = 0; i < n; ++i)
        y[i] = s->rcont[0][i] +
               theta * (s->rcont[1][i] +
                        theta1 * (s->rcont[2][i] +
                                  theta * (s->rcont[3][i] + theta1 * s->rcont[4][i])));
}

/* sign change from g_old to g_new: g_old != 0, and g_new == 0 or of the other sign */
static int sign_change(double g_old, double g_new)
{
    return g_old != 0.0 && (g_new == 0.0 || (g_old < 0.0) != (g_new < 0.0));
}

int mg_dopri_locate(const mg_dopri *s, mg_event_fn g, void *ctx, double g_old, double g_new,
                    double *t_event, double *y_event, double ttol)
{
    if (!s || !g || !t_event || !y_event) return MG_DOPRI_ERR_BAD_ARG;
    if (isnan(g_old) || isnan(g_new)) return MG_DOPRI_ERR_NONFINITE;
    if (!sign_change(g_old, g_new)) return 0;

    /* bracket [ta, tb]: sign(g(ta)) = sign(g_old) != 0, g(tb) zero or of the sign of g_new */
    double ta = s->t_old, tb = s->t, ga = g_old, gb = g_new;
    double tol = fmax(ttol, 4.0 * DBL_EPSILON * fmax(fabs(ta), fabs(tb)));
    double width_ref = tb - ta;
    int side = 0; /* which end moved last: -1 a, +1 b (Illinois) */

    for (int it = 0; it < LOCATE_MAXIT && gb != 0.0 && tb - ta > tol; ++it) {
        double tc;
        if (it % 4 == 3 && tb - ta > 0.5 * width_ref) {
            tc = 0.5 * (ta + tb); /* safeguard: 4 iterations did not halve the bracket */
        } else {
            tc = tb - gb * (tb - ta) / (gb - ga); /* regula falsi */
        }
        if (it % 4 == 3) width_ref = tb - ta;
        /* keep tc at least tol/2 inside (also catches a NaN secant) */
        if (!(tc > ta + 0.5 * tol)) tc = ta + 0.5 * tol;
        if (!(tc < tb - 0.5 * tol)) tc = tb - 0.5 * tol;

        mg_dopri_dense(s, tc, y_event);
        double gc = g(tc, y_event, ctx);
        if (isnan(gc)) return MG_DOPRI_ERR_NONFINITE;
        if (gc == 0.0 || (gc < 0.0) == (gb < 0.0)) {
            tb = tc;
            gb = gc;
            if (side == +1) ga *= 0.5; /* Illinois: halve the value at the stagnant end */
            side = +1;
        } else {
            ta = tc;
            ga = gc;
            if (side == -1) gb *= 0.5;
            side = -1;
        }
    }
    *t_event = tb;
    mg_dopri_dense(s, tb, y_event);
    return 1;
}

int mg_dopri_solve(mg_dopri *s, double t_end, int n_out, const double *t_out, double *y_out)
{
    if (!s) return MG_DOPRI_ERR_BAD_ARG;
    if (!isfinite(t_end) || t_end < s->t || n_out < 0 || (n_out > 0 && (!t_out || !y_out)))
        return MG_DOPRI_ERR_BAD_ARG;
    for (int i = 0; i < n_out; ++i)
        if (!(t_out[i] >= s->t && t_out[i] <= t_end && (i == 0 || t_out[i] >= t_out[i - 1])))
            return MG_DOPRI_ERR_BAD_ARG;

    int i = 0, rc = MG_DOPRI_OK;
    for (;;) {
        for (; i < n_out && t_out[i] <= s->t; ++i)
            mg_dopri_dense(s, t_out[i], y_out + (size_t)i * (size_t)s->n);
        if (rc || s->t >= t_end) return rc;
        rc = mg_dopri_step(s, t_end);
    }
}

const char *mg_dopri_error(int code)
{
    switch (code) {
    case MG_DOPRI_OK: return "ok";
    case MG_DOPRI_ERR_STEP_UNDERFLOW: return "step size underflow (h < hmin or 16 eps |t|)";
    case MG_DOPRI_ERR_MAX_STEPS: return "too many steps (max_steps reached)";
    case MG_DOPRI_ERR_NONFINITE: return "non-finite state, derivative or event value";
    case MG_DOPRI_ERR_N: return "number of states out of range (1..MG_DOPRI_MAXN)";
    case MG_DOPRI_ERR_TOL: return "bad tolerances (need atol > 0, rtol = 0 or >= 10 eps)";
    case MG_DOPRI_ERR_BAD_ARG: return "bad argument (NULL, non-finite time, t_end < t, t_out)";
    case MG_DOPRI_ERR_STIFF: return "the problem seems to have become stiff";
    case MG_DOPRI_ERR_RHS_NEGATIVE: return "the right-hand side returned a negative code";
    case MG_DOPRI_ERR_NOT_READY: return "integrator not ready (init or restart failed)";
    default: return code > 0 ? "right-hand side failure" : "unknown error";
    }
}
