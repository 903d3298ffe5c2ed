/* The batch Newton loop of linkage assembly; semantics in linkage_assemble.h. */
#include "linkage_assemble.h"

#include <math.h>

static int sign_of(double x)
{
    return (x > 0.0) - (x < 0.0);
}

static int call_step(const lk_assembly *a, lk_newton_step step, lk_newton_step_p step_p,
                     const double *q, const double *p, double *q_next, double *err,
                     double *det, double *orient)
{
    if (a->n_p > 0)
        return step_p(q, p, q_next, err, det, orient);
    return step(q, q_next, err, det, orient);
}

/* One state: q (n) is the start and, on return, the converged q or the last iterate. */
static int32_t assemble_one(const lk_assembly *a, lk_newton_step step,
                            lk_newton_step_p step_p, double *q, const double *p,
                            int32_t *iterations, double *error, double *branch)
{
    double q_next[LK_MAX_N], orient[LK_MAX_N];
    double err = NAN, det = NAN;
    int converged = 0;
    *iterations = 0;
    for (int it = 0; it < a->max_iter; ++it) {
        const int s = call_step(a, step, step_p, q, p, q_next, &err, &det, orient);
        *iterations = it + 1;
        if (s != 0) {
            *error = err;
            *branch = det;
            return LK_SINGULAR;
        }
        if (err < a->tol) {
            converged = 1;
            break;
        }
        for (int i = 0; i < a->n; ++i)
            q[i] = q_next[i];
    }
    *error = err;
    *branch = det;
    if (!converged)
        return LK_NOT_CONVERGED;
    for (int k = 0; k < a->n_orient; ++k)
        if (orient[k] <= 0.0)
            return LK_HALF_TURN;
    if (a->check_branch && a->branch_sign != 0 && sign_of(det) != a->branch_sign)
        return LK_WRONG_BRANCH;
    return LK_ASSEMBLED;
}

int64_t lk_assemble_batch(const lk_assembly *a, lk_newton_step step, lk_newton_step_p step_p,
                          int64_t count, const double *q, const double *p, double *q_out,
                          int32_t *status, int32_t *iterations, double *error,
                          double *branch)
{
    if (a->n < 1 || a->n > LK_MAX_N || a->n_orient < 1 || a->n_orient > LK_MAX_N
        || a->n_p < 0 || (a->n_p > 0 ? step_p == 0 : step == 0))
        return -1;
    int64_t failed = 0;
    for (int64_t s = 0; s < count; ++s) {
        double *qs = q_out + s * a->n;
        for (int i = 0; i < a->n; ++i)
            qs[i] = q[s * a->n + i];
        const double *ps = a->n_p > 0 ? p + s * a->n_p : 0;
        status[s] = assemble_one(a, step, step_p, qs, ps, iterations + s, error + s,
                                 branch + s);
        failed += (status[s] != LK_ASSEMBLED);
    }
    return failed;
}
