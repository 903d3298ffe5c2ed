/* Assembly of a closed-loop linkage over a batch of states, in C: the Newton loop of
 * mechgen.runtime.linkage.assemble (paper 001 section 1.5) around a mechanism's generated
 * newton_step kernel, which the caller passes as a function pointer (the kernel already
 * compiled in the mechanism's own cffi library; no per-mechanism build).
 *
 * Semantics, state by state, identical to the Python loop (docs/linkage.md, "Assembly"):
 *   for it = 1..max_iter:  (q_next, error, branch, orientation) = newton_step(q)
 *                          a kernel status -> LK_SINGULAR (a pivot of G_D vanishes)
 *                          error < tol -> converged at q (not q_next)
 *                          else q = q_next
 *   none converged -> LK_NOT_CONVERGED
 *   any orientation check <= 0 -> LK_HALF_TURN (a cut joint closed by a half turn)
 *   check_branch and branch_sign != 0 and sign(det G_D) != branch_sign -> LK_WRONG_BRANCH
 * q_out holds the converged q, or on failure the last iterate (the q whose step failed, or
 * the q after max_iter steps); error and branch the values the last step reported.
 *
 * Self-contained (only this header, stdint.h and math.h), so it compiles in any unit.
 */
#ifndef MECHGEN_LINKAGE_ASSEMBLE_H
#define MECHGEN_LINKAGE_ASSEMBLE_H

#include <stdint.h>

#define LK_ASSEMBLED 0
#define LK_NOT_CONVERGED 1
#define LK_SINGULAR 2
#define LK_HALF_TURN 3
#define LK_WRONG_BRANCH 4
#define LK_MAX_N 256             /* largest n and orientation count handled (stack buffers) */

/* the generated kernel, without and with the parameter input p */
typedef int (*lk_newton_step)(const double *q, double *q_next, double *error, double *branch,
                              double *orientation);
typedef int (*lk_newton_step_p)(const double *q, const double *p, double *q_next,
                                double *error, double *branch, double *orientation);

typedef struct {
    int n;              /* coordinates */
    int n_orient;       /* orientation checks the kernel writes */
    int n_p;            /* parameters (0: the kernel takes no p) */
    int max_iter;       /* Newton steps at most */
    double tol;         /* converged when the residual norm is below tol */
    int branch_sign;    /* sign of det G_D on the reference pose's branch (0: not checked) */
    int check_branch;   /* 0: accept either branch */
} lk_assembly;

/* Assemble `count` states (q: count x n, row-major; p: count x n_p, or NULL when n_p = 0).
 * Exactly one of step / step_p is non-NULL (step_p when n_p > 0). Writes q_out (count x n),
 * status, iterations (Newton steps evaluated), error and branch (count each); returns the
 * number of states whose status is not LK_ASSEMBLED, or -1 if the sizes are out of range. */
int64_t lk_assemble_batch(const lk_assembly *a, lk_newton_step step, lk_newton_step_p step_p,
                          int64_t count, const double *q, const double *p, double *q_out,
                          int32_t *status, int32_t *iterations, double *error,
                          double *branch);

#endif
