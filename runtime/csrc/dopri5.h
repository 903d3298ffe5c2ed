/*
 * dopri5.h: the explicit Runge-Kutta pair of Dormand & Prince, order 5(4), in plain C99, with
 * step-size control, dense output and event location.
 *
 * The method, the step-size controller, the starting step and the dense output are those of
 * E. Hairer, S. P. Norsett, G. Wanner, "Solving Ordinary Differential Equations I: Nonstiff
 * Problems", 2nd ed., Springer 1993 (HNW I): section II.5 (Table 5.2, the DOPRI5 tableau of
 * Dormand & Prince 1980), II.4 (error norm, step-size selection, starting step), II.6 (dense
 * output); HNW II (Hairer & Wanner, "Solving ODE II", 1996), IV.2 (stiffness detection,
 * Lund-stabilised step control); and Hairer's Fortran code dopri5.f (unige.ch/~hairer),
 * subroutines DOPCOR, HINIT and CONTD5, whose names (facold, expo1, facc1, facc2, hlamb, iasti,
 * nonsti, rcont1..5) are kept here.
 *
 * Usage, one integration:
 *     mg_dopri s;
 *     int rc = mg_dopri_init(&s, n, f, ctx, t0, y0, rtol, atol, 0.0, 0.0);
 *     while (rc == 0 && s.t < t_end) {
 *         rc = mg_dopri_step(&s, t_end);      // one accepted step on [s.t_old, s.t]
 *         ... mg_dopri_dense(&s, t, y) for any t in [s.t_old, s.t]
 *         ... event: g_new = g(s.t, s.y); if the sign changed, mg_dopri_locate, then
 *             mg_dopri_restart(&s, t_event, y_modified) after a discontinuity
 *     }
 * An event is seen only as a sign change over one step: keep hmax below the shortest time
 * between two zeros of g, or a step holding two of them shows none.
 *
 * Everything lives in the struct: no malloc, no global state; the functions are reentrant and
 * thread-safe for distinct structs (mg_dopri_dense and mg_dopri_locate only read the struct).
 * Integration goes forward in time only (t_end >= t).
 *
 * Status codes: 0 ok, < 0 an integrator error (MG_DOPRI_ERR_*), > 0 the failure code returned
 * by the right-hand side. After an error of mg_dopri_step the struct still holds the last
 * accepted step (t, y, t_old, y_old, its dense output and first stage), so a driver can
 * inspect it, raise max_steps and go on, or restart.
 */
#ifndef MG_DOPRI5_H
#define MG_DOPRI5_H

#ifdef __cplusplus
extern "C" {
#endif

/* Right-hand side dydt = f(t, y): 0 ok; nonzero = failure, the integration stops with it.
 * Return positive codes: a negative one is reported as MG_DOPRI_ERR_RHS_NEGATIVE (its value
 * is kept in rhs_status). */
typedef int (*mg_rhs_fn)(double t, const double *y, double *dydt, void *ctx);
/* Event function: an event is a sign change of g along the solution. */
typedef double (*mg_event_fn)(double t, const double *y, void *ctx);

#define MG_DOPRI_MAXN 128

enum {
    MG_DOPRI_OK = 0,
    MG_DOPRI_ERR_STEP_UNDERFLOW = -1, /* h < max(hmin, 16 eps |t|) */
    MG_DOPRI_ERR_MAX_STEPS = -2,      /* nstep reached max_steps */
    MG_DOPRI_ERR_NONFINITE = -3,      /* NaN/inf in the state, a derivative or an event value */
    MG_DOPRI_ERR_N = -4,              /* n outside 1..MG_DOPRI_MAXN */
    MG_DOPRI_ERR_TOL = -5,            /* bad tolerances */
    MG_DOPRI_ERR_BAD_ARG = -6,        /* NULL pointer, non-finite time, t_end < t, bad t_out */
    MG_DOPRI_ERR_STIFF = -7,          /* stiffness detected and stop_on_stiff set */
    MG_DOPRI_ERR_RHS_NEGATIVE = -8,   /* the rhs returned a negative code (see rhs_status) */
    MG_DOPRI_ERR_NOT_READY = -9       /* init or restart failed: no valid first stage */
};

typedef struct {
    /* problem */
    int n;
    mg_rhs_fn f;
    void *ctx;
    /* tolerances and step bounds (may be changed between steps) */
    double rtol;
    double atol[MG_DOPRI_MAXN];     /* per-component absolute tolerance, > 0 */
    double hmax, hmin;              /* hmax <= 0: no limit; hmin >= 0 */
    /* state */
    double t, h;                    /* current time; next step size (> 0, a magnitude) */
    double y[MG_DOPRI_MAXN];        /* current state */
    double t_old, y_old[MG_DOPRI_MAXN]; /* start of the last accepted step */
    double h_last;                  /* size of the last accepted step (0 after init/restart) */
    /* stages k1..k7 of the last step (k[0] = f(t, y), first-same-as-last) and scratch */
    double k[7][MG_DOPRI_MAXN];
    double y_stage[MG_DOPRI_MAXN];  /* argument of the latest stage (stage 6 after a step) */
    double y_new[MG_DOPRI_MAXN];    /* 5th-order solution of the trial step */
    /* dense output of the last accepted step (HNW I, II.6; dopri5.f CONTD5) */
    double rcont[5][MG_DOPRI_MAXN];
    /* controller parameters (dopri5.f defaults set by init) */
    double safe;                    /* safety factor, 0.9 */
    double beta;                    /* Lund stabilisation exponent, 0.04 */
    double fac1, fac2;              /* bounds of h_new / h: 0.2 .. 10 */
    long max_steps;                 /* limit on nstep (attempted steps since init, 100000);
                                       <= 0: none; may be raised to continue after the error */
    int fixed_step;                 /* nonzero: every step has size h (set by the caller), no
                                       error control, hmin/hmax ignored (order studies) */
    /* controller memory */
    double facold;                  /* max(err, 1e-4) of the last accepted step (dopri5.f) */
    int reject;                     /* the last attempted step was rejected */
    double err;                     /* scaled RMS error norm of the last attempted step */
    /* stiffness test (HNW II, IV.2; dopri5.f): every nstiff accepted steps; <= 0 off */
    long nstiff;
    int stop_on_stiff;              /* nonzero: return MG_DOPRI_ERR_STIFF when detected */
    int stiff;                      /* set once the problem was found stiff */
    int iasti, nonsti;
    double hlamb;                   /* |h * lambda| estimate of the last test */
    /* bookkeeping */
    int ready;                      /* k[0] is valid: init/restart succeeded */
    int rhs_status;                 /* the last nonzero rhs return */
    long nfev, naccept, nreject, nstep;
} mg_dopri;

/* Set up an integration from (t0, y0). h0 <= 0: automatic starting step (HNW I, II.4; HINIT).
 * hmax <= 0: no limit. Evaluates f (2 calls with the automatic step). */
int mg_dopri_init(mg_dopri *s, int n, mg_rhs_fn f, void *ctx, double t0, const double *y0,
                  double rtol, const double *atol, double h0, double hmax);

/* One accepted step, never past t_end (the step is stretched by up to 1 % to land on t_end,
 * as dopri5.f does; t == t_end exactly on the last step). Rejected steps shrink h and retry
 * from the same (t, y). A trial step with a NaN/inf stage is rejected with h *= fac1; the
 * error MG_DOPRI_ERR_NONFINITE comes when that repeats down to the step-size underflow (or 20
 * times in a row). Returns 0 at once if t == t_end. MG_DOPRI_ERR_STIFF is returned after the
 * step was accepted (stop_on_stiff set). */
int mg_dopri_step(mg_dopri *s, double t_end);

/* The 4th-order continuous extension of the last accepted step at time t, in [t_old, t]
 * (outside: polynomial extrapolation). y must not alias the struct. */
void mg_dopri_dense(const mg_dopri *s, double t, double *y);

/* Root of g on the dense output of the last accepted step, given g_old = g(t_old, y_old) and
 * g_new = g(t, y). A sign change means g_old != 0 and g_new == 0 or of the other sign (a zero
 * at t_old belongs to the previous step). Illinois (modified regula falsi) with a bisection
 * safeguard; the bracket shrinks to max(ttol, 4 eps |t|) (ttol <= 0: as tight as possible),
 * and *t_event is its end on the side of g_new, so g has changed sign at *t_event (or is 0).
 * Returns 1 found, 0 no sign change, < 0 an error (NaN event value, bad argument). */
int mg_dopri_locate(const mg_dopri *s, mg_event_fn g, void *ctx, double g_old, double g_new,
                    double *t_event, double *y_event, double ttol);

/* Continue from (t, y) after a discontinuity: recompute the first stage, keep the step size
 * (clamped to [hmin, hmax]), forget the controller history, t_old = t (the dense output is
 * the constant y until the next step). y may be s->y. */
int mg_dopri_restart(mg_dopri *s, double t, const double *y);

/* Integrate to t_end, writing the dense output at t_out[0..n_out-1] (non-decreasing, within
 * [t, t_end]) into y_out (n_out rows of n). On an error, the rows with t_out <= s->t are
 * written. Returns the status of the last step. */
int mg_dopri_solve(mg_dopri *s, double t_end, int n_out, const double *t_out, double *y_out);

/* Message of a status code (positive codes: "right-hand side failure"). */
const char *mg_dopri_error(int code);

#ifdef __cplusplus
}
#endif

#endif /* MG_DOPRI5_H */
