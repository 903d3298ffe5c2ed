/* Docking of two spacecraft in C: the right-hand side (vehicles + mechanism + contact) and the
 * driver of one case (Dormand-Prince 5(4), events: first contact, capture; failures), over a
 * batch of cases. The kernels it calls are bound by dk_bind.h, written by
 * mechgen.runtime.docking.csim from the manifests of the mechanism and the interface.
 *
 * State y (DK_NY doubles), all SI units:
 *   0-2   r_O    position of O_0, the origin of the mechanism's base frame 0 (fixed in the
 *                active vehicle A), inertial frame
 *   3-6   q_A    attitude of frame 0: unit quaternion (w, x, y, z), frame 0 -> inertial
 *   7-9   V_O    velocity of O_0, inertial frame
 *   10-12 Omega  angular velocity of frame 0, frame 0
 *   13-18 x      pose of the ring C relative to frame 0 (the mechanism's x)
 *   19-24 u      velocity of C relative to frame 0 (the mechanism's u)
 *   25-27 r_P    position of the origin of D_P (the passive docking frame, the passive
 *                vehicle's reference point), inertial
 *   28-31 q_P    attitude of D_P, D_P -> inertial
 *   32-34 V_P    velocity of D_P's origin, inertial
 *   35-37 w_P    angular velocity of the passive vehicle, D_P frame
 *   38    E_diss energy taken out so far by the dampers, end stops and contact (J)
 */
#ifndef MECHGEN_DOCKING_SIM_H
#define MECHGEN_DOCKING_SIM_H

#define DK_NY 39
#define DK_MAXLEG 8
#define DK_NDIAG 64

typedef struct {
    /* active vehicle: reference point O_0, axes of frame 0 */
    int active_fixed;          /* 1: the base does not move (ground test) */
    int decoupled;             /* 1: the paper's approximation: the mechanism on a base at rest
                                  (its Omega, Omega_dot and acceleration not fed to the
                                  kernel), its base wrench on the active vehicle (no lag) */
    int start_latched;         /* 1: the case starts captured (latches closed at t = 0) */
    double m_A, c_A[3], I_A[9];     /* mass, centre of mass (frame 0), inertia about it */
    double thrust, thrust_dir[3];   /* N, along a frame-0 direction, through the centre of mass */
    int thrust_until_capture;       /* 1: thrust off after capture */
    /* passive vehicle: reference point D_P's origin, axes of D_P */
    double m_P, c_P[3], I_P[9];
    double kp_att, kd_att;          /* attitude hold (N m/rad, N m s/rad) about its centre */
    double q_ref[4];                /* attitude held (D_P -> inertial) */
    double g[3];                    /* gravity, inertial */
    /* the active docking frame D_A in the ring C */
    double d_A[3], R_CA[9];         /* origin of D_A (frame C), rotation D_A -> C */
    double F_drive[DK_MAXLEG];      /* constant drive forces (N) */
    /* ends */
    double t_end, t_after_capture;  /* s */
    double stop_force_limit;        /* N: an end-stop force above it is a failure */
    double separation;              /* m: D_P's origin farther than this from D_A's after
                                       contact, uncaptured, is a failure */
    /* integration */
    double rtol, atol[DK_NY], hmax, h0;
    long max_steps;
    double dt_out;                  /* the grid on which peaks and histories are sampled */
    const double *p_mech, *p_iface; /* the kernels' parameters */
} dk_scenario;

enum { DK_OK = 0, DK_NO_CAPTURE = 1, DK_STOP_OVERLOAD = 2, DK_SEPARATION = 3,
       DK_KERNEL_STATUS = 4, DK_INTEGRATOR = 5 };

typedef struct {
    int outcome;                    /* DK_OK: captured, else the failure */
    int code;                       /* the kernel status or integrator error code */
    int captured;
    double t_contact, t_capture, t_final;   /* NaN when it did not happen */
    double peak_stroke[DK_MAXLEG];  /* max |drive coordinate| per leg on the grid */
    double peak_base_force, peak_base_moment, peak_contact_force, peak_stop_force;
    double energy_absorbed;         /* E_diss at the end */
    double min_gap;
    long nfev, naccept, nreject;
    double P0[3], H0[3], E0, P1[3], H1[3], E1;   /* momentum, angular momentum about the
                                                    inertial origin, energy: first, last */
    double E_latch;                 /* elastic energy of the latches as they closed */
} dk_result;

/* the diagnostics at one state (one row of a history):
 * 0 t, 1-6 base wrench (force, moment about O_0, frame 0), 7-12 contact wrench on the
 * passive vehicle (force, moment about D_P's origin, inertial), 13 f_normal, 14 gap,
 * 15 capture margin, 16 latched, 17 kinetic energy of everything, 18 elastic energy,
 * 19 E_diss, 20-22 momentum, 23-25 angular momentum about the inertial origin,
 * 26 max end-stop force, 27-34 strokes (one per leg), 35-37 r, 38-40 v, 41-43 w: the pose
 * and velocity of D_P relative to D_A (the contact kernel's inputs, D_A frame), 44-49 the
 * ring's pose x (frame 0), 50-58 R: the rotation D_P -> D_A (row-major) */
int dk_rhs(double t, const double *y, double *dydt, void *ctx);
int dk_diagnostics(const dk_scenario *sc, int latched, double t, const double *y, double *d);
int dk_run(const dk_scenario *sc, const double *y0, dk_result *res,
           int n_hist, double *hist);   /* hist: n_hist x DK_NDIAG rows on the grid, or NULL */
long dk_run_batch(long n, const dk_scenario *sc, const double *y0, dk_result *res);
int dk_nleg(void);

#endif
