"""Every status code a generated kernel can return, in one place.

A kernel returns 0, or the code of the first check that failed (its outputs are then NaN);
each kernel declares the codes it can return with their messages (the manifest's "statuses").

Serial chains and trees:
    SINGULAR_MASS_MATRIX   a pivot of the L^T D L factorisation is not positive
    EULER_BASE_SINGULAR    a free base's y-z-x angles at psi_z = +-90 deg (|cos psi_z| < 1e-3)
Parallel mechanisms (mechanism-wide codes; each leg failure has its own code
100 (leg + 1) + 10 joint + reason, whose older meaning is UNREACHABLE or LEG_SINGULAR):
    UNREACHABLE            a pose out of reach of a leg, or past a joint limit
    LEG_SINGULAR           a leg at a singular configuration
    REDUCED_SINGULAR       the reduced mass matrix A*_C is not positive definite
    EULER_SINGULAR         the y-z-x angles of C at psi_z = +-90 deg
    DRIVE_SINGULAR         the drive Jacobian is singular (a parallel singularity)
Closed-loop linkages:
    LOOP_SINGULAR          a pivot of the dependent coordinates' constraint block vanishes:
                           a singular configuration (the constraint rank changes)
    LOOP_REDUCED_SINGULAR  the reduced mass matrix H^T M H is not positive definite
"""

SINGULAR_MASS_MATRIX = 1
EULER_BASE_SINGULAR = 2

UNREACHABLE = 1
LEG_SINGULAR = 2
REDUCED_SINGULAR = 3
EULER_SINGULAR = 4
DRIVE_SINGULAR = 5

LOOP_SINGULAR = 1
LOOP_REDUCED_SINGULAR = 2
