"""The C Dormand-Prince 5(4) integrator of runtime/csrc/dopri5.c.

The C is compiled once per module with cffi, together with tests/csrc/dopri5_harness.c (test
right-hand sides and event functions written in C, chosen by number; a read-back of the static
coefficient arrays). Python only drives the C: every right-hand side and event function
called by the integrator is C.

What is proven, and how (HNW I = Hairer, Norsett, Wanner, Solving ODE I, II.4-II.6):
  * the tableau is the Dormand-Prince (1980) one: bit-equal to scipy's RK45 arrays, order
    conditions of b (order 5, 17 trees), b_hat = b - e (order 4, not 5), and the dense weights
    b_i(theta) (order 4 for every theta) equal scipy's polynomial form of Shampine's extension;
  * measured orders: global error of fixed steps ~ h^5, local error estimate ~ h^5, dense
    output error ~ h^5 locally (a 4th-order continuous extension);
  * the controller is Hairer's: the same accepted/rejected step counts as his dopri5 code
    (scipy.integrate.ode("dopri5"), with beta = 0.04), and the same starting step;
  * accuracy vs analytic solutions at rtol 1e-12, agreement with scipy RK45 and DOP853;
  * event location (bouncing ball with restarts, sin t = 0 at pi) and robustness (rhs failure
    codes, NaN, blow-up, stiffness, bad arguments, restart after a discontinuity), counts,
    reentrancy and thread safety.
Run with ``-s`` to see the measured numbers.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import subprocess
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "runtime" / "csrc"
HARNESS = ROOT / "tests" / "csrc"

CDEF = """
typedef int (*mg_rhs_fn)(double t, const double *y, double *dydt, void *ctx);
typedef double (*mg_event_fn)(double t, const double *y, void *ctx);
#define MG_DOPRI_MAXN ...
#define MG_DOPRI_OK ...
#define MG_DOPRI_ERR_STEP_UNDERFLOW ...
#define MG_DOPRI_ERR_MAX_STEPS ...
#define MG_DOPRI_ERR_NONFINITE ...
#define MG_DOPRI_ERR_N ...
#define MG_DOPRI_ERR_TOL ...
#define MG_DOPRI_ERR_BAD_ARG ...
#define MG_DOPRI_ERR_STIFF ...
#define MG_DOPRI_ERR_RHS_NEGATIVE ...
#define MG_DOPRI_ERR_NOT_READY ...
typedef struct {
    int n; double rtol; double atol[]; double hmax, hmin; double t, h; double y[];
    double t_old; double y_old[]; double h_last;
    double safe, beta, fac1, fac2; long max_steps; int fixed_step; double facold; int reject;
    double err; long nstiff; int stop_on_stiff; int stiff; double hlamb; int ready;
    int rhs_status; long nfev, naccept, nreject, nstep;
    ...;
} mg_dopri;
int mg_dopri_init(mg_dopri *s, int n, mg_rhs_fn f, void *ctx, double t0, const double *y0,
                  double rtol, const double *atol, double h0, double hmax);
int mg_dopri_step(mg_dopri *s, double t_end);
void mg_dopri_dense(const mg_dopri *s, double t, double *y);
int mg_dopri_locate(const mg_dopri *s, mg_event_fn g, void *ctx, double g_old, double g_new,
                    double *t_event, double *y_event, double ttol);
int mg_dopri_restart(mg_dopri *s, double t, const double *y);
int mg_dopri_solve(mg_dopri *s, double t_end, int n_out, const double *t_out, double *y_out);
const char *mg_dopri_error(int code);

typedef struct { double p[16]; int mode; long calls; long events; ...; } harness_ctx;
mg_rhs_fn harness_rhs(int id);
mg_event_fn harness_event(int id);
void harness_tableau(double *c, double *a, double *b, double *e, double *d);
"""

# right-hand sides of the harness, by number
(EXP, COS, HARMONIC, KEPLER, LINEAR, BALL, FAIL, NAN, BLOWUP, STIFF, SWITCH, NEGATIVE, VDP, EXPN,
 CUBIC) = range(15)
EV_Y0, EV_LEVEL, EV_NAN = range(3)


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    """(ffi, lib) of dopri5.c + the harness, compiled once for this module."""
    import cffi
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source("_mg_dopri5_harness", '#include "dopri5_harness.c"',
                   include_dirs=[str(CSRC), str(HARNESS)],
                   extra_compile_args=["-O2", "-std=c99"])
    tmp = tmp_path_factory.mktemp("dopri5")
    so = ffi.compile(tmpdir=str(tmp))
    spec = importlib.util.spec_from_file_location("_mg_dopri5_harness", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ffi, mod.lib


class Run:
    """One mg_dopri struct with its harness context, driven from Python."""

    def __init__(self, c, rhs, y0, *, t0=0.0, rtol=1e-10, atol=1e-12, h0=0.0, hmax=0.0, p=()):
        self.ffi, self.lib = c
        self.s = self.ffi.new("mg_dopri *")
        self.ctx = self.ffi.new("harness_ctx *")
        for i, v in enumerate(p):
            self.ctx.p[i] = v
        y0 = np.ascontiguousarray(y0, dtype=float)
        self.n = len(y0)
        atol = np.ascontiguousarray(np.broadcast_to(atol, (max(self.n, 1),)), dtype=float)
        self.rc = self.lib.mg_dopri_init(self.s, self.n, self.lib.harness_rhs(rhs), self.ctx, t0,
                                         self._ptr(y0), rtol, self._ptr(atol), h0, hmax)

    def _ptr(self, a):
        return self.ffi.cast("double *", self.ffi.from_buffer(a))

    @property
    def y(self):
        return np.array(self.ffi.unpack(self.s.y, self.n))

    @property
    def y_old(self):
        return np.array(self.ffi.unpack(self.s.y_old, self.n))

    def step(self, t_end):
        return self.lib.mg_dopri_step(self.s, t_end)

    def solve(self, t_end, t_out=()):
        t_out = np.ascontiguousarray(t_out, dtype=float)
        out = np.full((len(t_out), self.n), np.nan)
        rc = self.lib.mg_dopri_solve(self.s, t_end, len(t_out), self._ptr(t_out), self._ptr(out))
        return rc, out

    def dense(self, t):
        y = np.empty(self.n)
        self.lib.mg_dopri_dense(self.s, t, self._ptr(y))
        return y

    def restart(self, t, y):
        return self.lib.mg_dopri_restart(self.s, t, self._ptr(np.ascontiguousarray(y, float)))

    def locate(self, g, g_old, g_new, ttol=0.0):
        t_e = self.ffi.new("double *")
        y_e = np.empty(self.n)
        found = self.lib.mg_dopri_locate(self.s, self.lib.harness_event(g), self.ctx, g_old,
                                         g_new, t_e, self._ptr(y_e), ttol)
        return found, t_e[0], y_e

    def fixed(self, h):
        self.s.fixed_step = 1
        self.s.h = h
        return self


def slope(h, err):
    """Least-squares slope of log(err) against log(h)."""
    return np.polyfit(np.log(h), np.log(err), 1)[0]


# ------------------------------------------------------------------------------------------
# problems with known solutions
# ------------------------------------------------------------------------------------------
def kepler_start(ecc):
    """Perihelion of the orbit with semi-major axis 1 (mu = 1): period 2 pi, energy -1/2."""
    return np.array([1.0 - ecc, 0.0, 0.0, math.sqrt((1.0 + ecc) / (1.0 - ecc))])


def kepler_energy(y):
    return 0.5 * (y[2] ** 2 + y[3] ** 2) - 1.0 / math.hypot(y[0], y[1])


def kepler_py(t, y):
    r3 = (y[0] ** 2 + y[1] ** 2) ** 1.5
    return np.array([y[2], y[3], -y[0] / r3, -y[1] / r3])


def vdp_py(t, y, mu=1.0):
    return np.array([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])


def harmonic_py(t, y, w=2.0):
    return np.array([y[1], -w * w * y[0]])


LINEAR_A = np.array([[-0.5, 2.0, 0.0], [-2.0, -0.5, 0.3], [0.0, -0.3, -1.0]])


# ------------------------------------------------------------------------------------------
# the C source
# ------------------------------------------------------------------------------------------
def test_c_source_is_strict_c99_without_global_state(tmp_path):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler")
    obj = tmp_path / "dopri5.o"
    flags = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Wshadow", "-Wconversion",
             "-Wstrict-prototypes", "-Werror", "-O2", "-c"]
    subprocess.run([gcc, *flags, str(CSRC / "dopri5.c"), "-o", str(obj)], check=True)
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, "--defined-only", str(obj)], check=True, capture_output=True,
                              text=True).stdout.split("\n")
        kinds = {line.split()[1] for line in syms if len(line.split()) == 3}
        # only code (T/t) and read-only data (R/r): no writable globals (D/d/B/b/C)
        assert kinds <= {"T", "t", "R", "r"}, kinds
    assert "malloc" not in (CSRC / "dopri5.c").read_text()


# ------------------------------------------------------------------------------------------
# the coefficients
# ------------------------------------------------------------------------------------------
def tableau(c):
    ffi, lib = c
    cc, a, b, e, d = (np.zeros(7), np.zeros(49), np.zeros(7), np.zeros(7), np.zeros(7))
    ptr = lambda v: ffi.cast("double *", ffi.from_buffer(v))  # noqa: E731
    lib.harness_tableau(ptr(cc), ptr(a), ptr(b), ptr(e), ptr(d))
    return cc, a.reshape(7, 7), b, e, d


def trees(A, c):
    """(Phi_i, rho, gamma) of the 17 rooted trees of order <= 5 (HNW I, II.2, Table 2.2)."""
    ac, ac2, ac3 = A @ c, A @ c ** 2, A @ c ** 3
    aac = A @ ac
    return [(np.ones_like(c), 1, 1), (c, 2, 2),
            (c ** 2, 3, 3), (ac, 3, 6),
            (c ** 3, 4, 4), (c * ac, 4, 8), (ac2, 4, 12), (aac, 4, 24),
            (c ** 4, 5, 5), (c ** 2 * ac, 5, 10), (c * ac2, 5, 15), (c * aac, 5, 30),
            (ac ** 2, 5, 20), (ac3, 5, 20), (A @ (c * ac), 5, 40), (A @ ac2, 5, 60),
            (A @ aac, 5, 120)]


def dense_weights(b, d, theta):
    """b_i(theta) of the dense output as dopri5.f CONTD5 evaluates it:
    y0 + theta (D + (1-theta) (bspl + theta (D - h k7 - bspl + (1-theta) h sum d k))),
    D = h sum b k, bspl = h k1 - D."""
    u1, u7 = np.eye(7)[0], np.eye(7)[6]
    bspl = u1 - b
    return theta * (b + (1 - theta) * (bspl + theta * (b - u7 - bspl + (1 - theta) * d)))


def test_tableau_is_dormand_prince_1980(c):
    from scipy.integrate._ivp.rk import RK45
    cc, A, b, e, d = tableau(c)
    # bit-equal to scipy's RK45 (the same pair); scipy's E is b_hat - b, dopri5.f's e = b - b_hat
    assert np.array_equal(cc[:6], RK45.C) and cc[6] == 1.0
    assert np.array_equal(A[:6, :5], RK45.A) and not A[:6, 5:].any()
    assert np.array_equal(A[6, :6], RK45.B) and A[6, 6] == 0.0
    assert np.array_equal(b[:6], RK45.B) and b[6] == 0.0
    assert np.array_equal(e, -RK45.E)
    # the row sums are the nodes
    assert np.allclose(A.sum(axis=1), cc, rtol=0, atol=1e-15)
    # order 5 of b: all 17 conditions up to order 5
    for phi, rho, gamma in trees(A, cc):
        assert abs(b @ phi - 1.0 / gamma) < 2e-15, (rho, gamma)
    # the embedded b_hat = b - e: order 4 exactly (the error estimate is O(h^5))
    b_hat = b - e
    defects = [abs(b_hat @ phi - 1.0 / gamma) for phi, rho, gamma in trees(A, cc)]
    assert max(defects[:8]) < 2e-15
    assert max(defects[8:]) > 1e-4


def test_dense_output_weights_are_shampines_quartic(c):
    from scipy.integrate._ivp.rk import RK45
    cc, A, b, e, d = tableau(c)
    assert np.array_equal(d, RK45.P[:, 3])          # d = the theta^4 coefficients
    for theta in (0.0, 0.1, 0.3, 0.5, 0.77, 1.0):
        w = dense_weights(b, d, theta)
        powers = theta ** np.arange(1, 5)
        assert np.allclose(w, RK45.P @ powers, rtol=0, atol=5e-15)
        for phi, rho, gamma in trees(A, cc)[:8]:    # continuous order 4 (HNW I, II.6)
            assert abs(w @ phi - theta ** rho / gamma) < 5e-15
    assert np.allclose(dense_weights(b, d, 1.0), b, rtol=0, atol=1e-15)


# ------------------------------------------------------------------------------------------
# measured orders
# ------------------------------------------------------------------------------------------
def global_error(c, rhs, y0, T, N, exact, p=()):
    r = Run(c, rhs, y0, h0=T / N, p=p).fixed(T / N)
    rc, out = r.solve(T, [T])
    assert rc == 0 and r.s.naccept == N and r.s.nreject == 0
    return np.abs(out[0] - exact).max()


def test_fixed_step_global_error_is_order_5(c):
    T = 2 * math.pi
    cases = {
        "y'=y on [0,1]": (EXP, [1.0], 1.0, [8, 16, 32, 64], [math.e], (1.0,)),
        "y'=cos(t)y on [0,5]": (COS, [1.0], 5.0, [64, 128, 256],
                                [math.exp(math.sin(5.0))], ()),
        "Kepler e=0.5, 1 period": (KEPLER, kepler_start(0.5), T, [256, 512, 1024],
                                   kepler_start(0.5), ()),
    }
    for name, (rhs, y0, t_end, Ns, exact, p) in cases.items():
        errs = [global_error(c, rhs, y0, t_end, N, exact, p) for N in Ns]
        k = slope([t_end / N for N in Ns], errs)
        print(f"\n  fixed-step global error {name}: N={Ns} err={['%.2e' % x for x in errs]}"
              f" slope={k:.3f}")
        assert 4.75 < k < 5.4, (name, k)


def test_local_error_estimate_and_dense_output_are_order_5_locally(c):
    """One step from the exact state of y' = cos(t) y at t0 = 1: the embedded estimate
    (HNW I, II.4) and the dense output at theta = 0.3, 0.5, 0.8 (local error of a 4th-order
    continuous extension, HNW I, II.6) both scale like h^5; the step's own error like h^6."""
    t0, y0 = 1.0, math.exp(math.sin(1.0))
    exact = lambda t: math.exp(math.sin(t))  # noqa: E731
    hs = np.array([0.2, 0.1, 0.05, 0.025])
    est, end, dense = [], [], {0.3: [], 0.5: [], 0.8: []}
    for h in hs:
        r = Run(c, COS, [y0], t0=t0, rtol=0.0, atol=1.0, h0=h).fixed(h)
        assert r.step(t0 + h) == 0
        est.append(r.s.err)                       # |h sum e_i k_i| / atol, atol = 1
        end.append(abs(r.y[0] - exact(t0 + h)))
        for th in dense:
            dense[th].append(abs(r.dense(t0 + th * h)[0] - exact(t0 + th * h)))
    k_est, k_end = slope(hs, est), slope(hs, end)
    k_dense = {th: slope(hs, v) for th, v in dense.items()}
    print(f"\n  local: estimate slope {k_est:.3f}, y1 error slope {k_end:.3f}, dense slopes "
          + ", ".join(f"theta={th}: {k:.3f}" for th, k in k_dense.items()))
    assert 4.7 < k_est < 5.4
    assert 5.6 < k_end < 6.5
    assert all(4.6 < k < 5.5 for k in k_dense.values()), k_dense


def test_dense_output_of_fixed_steps_is_order_4_or_better(c):
    """Global error of the dense output halfway through the steps (Kepler e = 0.5)."""
    T = 2 * math.pi
    Ns = [256, 512, 1024]
    errs = []
    for N in Ns:
        h = T / N
        r = Run(c, KEPLER, kepler_start(0.5), h0=h).fixed(h)
        t_mid = (np.arange(N) + 0.5) * h
        rc, out = r.solve(T, t_mid)
        assert rc == 0
        # compare with the tight adaptive solution of the same C code at those times
        ref = Run(c, KEPLER, kepler_start(0.5), rtol=1e-13, atol=1e-15)
        rc, y_ref = ref.solve(T, t_mid)
        assert rc == 0
        errs.append(np.abs(out - y_ref).max())
    k = slope([T / N for N in Ns], errs)
    print(f"\n  dense output (midpoints) global error: {['%.2e' % x for x in errs]} slope {k:.3f}")
    assert k > 4.0


# ------------------------------------------------------------------------------------------
# accuracy at tight tolerance
# ------------------------------------------------------------------------------------------
def test_harmonic_oscillator_at_rtol_1e12(c):
    w = 2.0
    t = np.linspace(0.0, 10.0, 101)
    r = Run(c, HARMONIC, [1.0, 0.0], rtol=1e-12, atol=1e-14, p=(w,))
    rc, out = r.solve(10.0, t)
    exact = np.stack([np.cos(w * t), -w * np.sin(w * t)], axis=1)
    err = np.abs(out - exact).max()
    print(f"\n  harmonic w=2 on [0,10], rtol 1e-12: max dense-output error {err:.2e}, "
          f"nfev {r.s.nfev} naccept {r.s.naccept} nreject {r.s.nreject}")
    assert rc == 0 and err < 2e-11
    assert out[0].tolist() == [1.0, 0.0] and np.array_equal(out[-1], r.y)


def test_kepler_orbit_at_rtol_1e12(c):
    y0 = kepler_start(0.5)
    r = Run(c, KEPLER, y0, rtol=1e-12, atol=1e-14)
    t = np.linspace(0, 2 * math.pi, 50)
    rc, out = r.solve(2 * math.pi, t)
    assert rc == 0
    pos = np.hypot(*(r.y[:2] - y0[:2]))
    vel = np.hypot(*(r.y[2:] - y0[2:]))
    energy = max(abs(kepler_energy(y) + 0.5) for y in out)
    momentum = max(abs(y[0] * y[3] - y[1] * y[2] - y0[0] * y0[3]) for y in out)
    print(f"\n  Kepler e=0.5, one period, rtol 1e-12: position error {pos:.2e}, velocity "
          f"{vel:.2e}, energy drift {energy:.2e}, angular momentum drift {momentum:.2e}, "
          f"nfev {r.s.nfev} naccept {r.s.naccept} nreject {r.s.nreject}")
    assert pos < 1e-9 and vel < 1e-9 and energy < 1e-11 and momentum < 1e-11


def test_linear_system_matches_matrix_exponential(c):
    from scipy.linalg import expm
    y0 = np.array([1.0, 0.5, -1.0])
    t = np.linspace(0.0, 6.0, 25)
    r = Run(c, LINEAR, y0, rtol=1e-12, atol=1e-14, p=LINEAR_A.ravel())
    rc, out = r.solve(6.0, t)
    exact = np.array([expm(LINEAR_A * ti) @ y0 for ti in t])
    err = np.abs(out - exact).max()
    print(f"\n  linear 3x3 on [0,6], rtol 1e-12: max error vs expm {err:.2e}")
    assert rc == 0 and err < 1e-11


# ------------------------------------------------------------------------------------------
# the same method as scipy, the same controller as Hairer's code
# ------------------------------------------------------------------------------------------
def test_agrees_with_scipy_rk45_and_dop853(c):
    from scipy.integrate import solve_ivp
    w = 2.0
    cases = [
        ("Kepler e=0.5, 1 period", KEPLER, kepler_start(0.5), 2 * math.pi, (), kepler_py),
        ("Van der Pol mu=1, [0,20]", VDP, [2.0, 0.0], 20.0, (1.0,), vdp_py),
        ("harmonic w=2, [0,10]", HARMONIC, [1.0, 0.0], 10.0, (w,), harmonic_py),
    ]
    for name, rhs, y0, T, p, f in cases:
        t_out = np.linspace(0.0, T, 41)
        r = Run(c, rhs, y0, rtol=1e-10, atol=1e-12, p=p)
        rc, out = r.solve(T, t_out)
        assert rc == 0
        sol = solve_ivp(f, (0.0, T), y0, method="RK45", rtol=1e-10, atol=1e-12,
                        dense_output=True)
        y_sp = sol.sol(t_out).T
        scale = np.abs(y_sp).max()
        diff = np.abs(out - y_sp).max() / scale
        sp_steps = len(sol.t) - 1
        ratio = r.s.naccept / sp_steps
        # DOP853 at 1e-13 as the reference for our rtol 1e-12
        r12 = Run(c, rhs, y0, rtol=1e-12, atol=1e-14, p=p)
        rc12, out12 = r12.solve(T, t_out)
        ref = solve_ivp(f, (0.0, T), y0, method="DOP853", rtol=1e-13, atol=1e-15, t_eval=t_out)
        diff853 = np.abs(out12 - ref.y.T).max() / scale
        print(f"\n  {name}: rtol 1e-10 vs RK45 max rel diff {diff:.2e}; steps C {r.s.naccept}"
              f" (+{r.s.nreject} rejected, nfev {r.s.nfev}) vs RK45 {sp_steps} (nfev "
              f"{sol.nfev}), ratio {ratio:.2f}; rtol 1e-12 vs DOP853 1e-13: {diff853:.2e}")
        assert diff < 3e-9, name
        assert 0.7 < ratio < 1.4, name
        assert rc12 == 0 and diff853 < 3e-11, name


def hairer_dopri5(f, y0, T, rtol, atol, h0):
    """Hairer's dopri5 code through scipy.integrate.ode, with his default beta = 0.04."""
    from scipy.integrate import ode
    r = ode(f)
    try:
        r.set_integrator("dopri5", rtol=rtol, atol=atol, beta=0.04, first_step=h0,
                         nsteps=100000)
    except Exception as exc:  # pragma: no cover - scipy without the Fortran/C dopri5
        pytest.skip(f"scipy.integrate.ode('dopri5') unavailable: {exc}")
    accepted = []
    r.set_solout(lambda t, y: accepted.append(t) and None)
    r.set_initial_value(y0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = r.integrate(T)
    nfcn, nstep, naccpt, nrejct = r._integrator.iwork[16:20]
    return y, np.array(accepted), int(nfcn), int(naccpt), int(nrejct)


def test_same_steps_as_hairers_dopri5(c):
    """The controller (error norm, Lund-stabilised PI, bounds 0.2..10, no growth after a
    rejection, the 1 % stretch to t_end) gives the same accepted and rejected steps as
    Hairer's own code. For n = 1 the starting step is HINIT's too (for n > 1 HINIT sums where
    the book's norm (4.11) averages: the same first step is passed to both)."""
    cases = [
        ("y'=cos(t)y [0,20] (auto h0)", COS, lambda t, y: [math.cos(t) * y[0]], [1.0], 20.0,
         1e-9, 1e-12, (), False),
        ("Kepler e=0.5", KEPLER, kepler_py, kepler_start(0.5), 2 * math.pi, 1e-8, 1e-10, (),
         True),
        ("Kepler e=0.5, 3 periods", KEPLER, kepler_py, kepler_start(0.5), 6 * math.pi, 1e-11,
         1e-13, (), True),
        ("Van der Pol", VDP, vdp_py, [2.0, 0.0], 20.0, 1e-6, 1e-6, (1.0,), True),
    ]
    for name, rhs, f, y0, T, rtol, atol, p, pass_h0 in cases:
        r = Run(c, rhs, y0, rtol=rtol, atol=atol, p=p)
        h0 = r.s.h
        times = [0.0]
        while r.s.t < T:
            assert r.step(T) == 0
            times.append(r.s.t)
        y_f, t_f, nfcn, naccpt, nrejct = hairer_dopri5(f, y0, T, rtol, atol,
                                                       h0 if pass_h0 else 0.0)
        print(f"\n  {name}: C naccept {r.s.naccept} nreject {r.s.nreject} nfev {r.s.nfev};"
              f" dopri5 {naccpt} {nrejct} {nfcn}; final state diff "
              f"{np.abs(r.y - y_f).max():.1e}")
        assert abs(r.s.naccept - naccpt) <= 1 and abs(r.s.nreject - nrejct) <= 1, name
        assert np.abs(r.y - y_f).max() < 1e-10
        if len(t_f) == len(times):
            assert np.abs(np.array(times) - t_f).max() < 1e-5 * T
        if not pass_h0:
            assert times[1] == t_f[1]             # the same HINIT starting step


def test_starting_step_is_hnw_ii4(c):
    """HNW I, II.4 (norm (4.11)), as scipy's select_initial_step computes it."""
    from scipy.integrate._ivp.common import select_initial_step
    for rhs, y0, p, f in [(KEPLER, kepler_start(0.5), (), kepler_py),
                          (VDP, [2.0, 0.0], (1.0,), vdp_py)]:
        y0 = np.asarray(y0, float)
        r = Run(c, rhs, y0, rtol=1e-8, atol=1e-10, p=p)
        h = select_initial_step(f, 0.0, y0, 1e9, np.inf, f(0.0, y0), 1.0, 4, 1e-8, 1e-10)
        assert r.s.h == pytest.approx(h, rel=1e-13)
        assert r.s.nfev == 2 and r.s.h_last == 0.0


# ------------------------------------------------------------------------------------------
# events
# ------------------------------------------------------------------------------------------
def test_bouncing_ball_hit_times(c):
    g, height, restitution = 9.81, 10.0, 0.8
    r = Run(c, BALL, [height, 0.0], rtol=1e-10, atol=1e-12, hmax=0.1, p=(g,))
    hits = []
    g_old = r.y[0]
    while len(hits) < 6:
        assert r.step(100.0) == 0
        g_new = r.y[0]
        if g_old > 0 and g_new <= 0:                       # falling through the floor
            found, t_e, y_e = r.locate(EV_Y0, g_old, g_new, ttol=1e-14)
            assert found == 1 and y_e[0] <= 0 and y_e[1] < 0
            assert r.s.t_old <= t_e <= r.s.t
            hits.append(t_e)
            y_e[1] = -restitution * y_e[1]                 # the driver reverses the velocity
            assert r.restart(t_e, y_e) == 0
            assert r.s.t == t_e and r.s.t_old == t_e
            g_new = r.y[0]
        g_old = g_new
    t1 = math.sqrt(2 * height / g)
    v1 = g * t1
    exact = [t1 + sum(2 * restitution ** k * v1 / g for k in range(1, j + 1)) for j in range(6)]
    err = np.abs(np.array(hits) - exact).max()
    print(f"\n  bouncing ball: 6 hit times, max error {err:.1e}; event calls "
          f"{r.ctx.events} ({r.ctx.events / 6:.1f} per event); nfev {r.s.nfev}")
    assert err < 1e-10


def test_sin_event_at_pi(c):
    r = Run(c, HARMONIC, [0.0, 1.0], rtol=1e-12, atol=1e-14, p=(1.0,))   # y0 = sin t
    g_old = r.y[0]
    while True:
        assert r.step(10.0) == 0
        g_new = r.y[0]
        found, t_e, y_e = r.locate(EV_Y0, g_old, g_new)
        if found:
            break
        g_old = g_new
    print(f"\n  sin t = 0: located at pi{t_e - math.pi:+.1e} with {r.ctx.events} event calls")
    assert found == 1 and abs(t_e - math.pi) < 1e-12
    assert y_e[0] <= 0 and abs(y_e[1] + 1.0) < 1e-11


def test_locate_conventions(c):
    r = Run(c, HARMONIC, [0.0, 1.0], rtol=1e-12, atol=1e-14, p=(1.0,))
    assert r.step(3.5) == 0 and r.step(3.5) == 0
    # no sign change, or a zero at t_old (belongs to the previous step): nothing
    assert r.locate(EV_Y0, 1.0, 2.0)[0] == 0
    assert r.locate(EV_Y0, -1.0, -2.0)[0] == 0
    assert r.locate(EV_Y0, 0.0, -2.0)[0] == 0
    # a zero at t: the event is the end of the step, the state exactly y
    found, t_e, y_e = r.locate(EV_Y0, 1.0, 0.0)
    assert found == 1 and t_e == r.s.t and np.array_equal(y_e, r.y)
    # a level crossing, g = y0 - 0.5 (sin t = 1/2 at pi/6): t_event is on the side of g_new
    r2 = Run(c, HARMONIC, [0.0, 1.0], rtol=1e-12, atol=1e-14, p=(1.0,))
    r2.ctx.p[15] = level = 0.5
    g_old, found = -level, 0
    while not found:
        assert r2.step(3.0) == 0
        g_new = r2.y[0] - level
        found, t_e, y_e = r2.locate(EV_LEVEL, g_old, g_new)
        g_prev, g_old = g_old, g_new
    assert abs(t_e - math.pi / 6) < 1e-12 and y_e[0] - level >= 0
    # the same root again, then with a coarse ttol: fewer event calls, the same side
    calls = r2.ctx.events
    assert r2.locate(EV_LEVEL, g_prev, g_new)[1] == t_e
    fine, calls = r2.ctx.events - calls, r2.ctx.events
    found, t_c, y_c = r2.locate(EV_LEVEL, g_prev, g_new, ttol=1e-3)
    coarse = r2.ctx.events - calls
    assert found == 1 and t_e - 1e-12 <= t_c <= t_e + 1e-3 and y_c[0] - level >= 0
    assert coarse <= fine
    # a triple root (y = (t - 1)^3, exact in the dense output): Illinois stalls on one side,
    # the bisection safeguard keeps the bracket shrinking
    r3 = Run(c, CUBIC, [-1.0], rtol=1e-10, atol=1e-12, h0=4.0, p=(1.0,))
    assert r3.step(4.0) == 0 and r3.s.t == 4.0
    found, t_3, _ = r3.locate(EV_Y0, -1.0, r3.y[0], ttol=1e-13)
    print(f"\n  triple root at t=1: located at 1{t_3 - 1:+.1e} with {r3.ctx.events} event calls")
    assert found == 1 and abs(t_3 - 1.0) < 1e-4 and r3.ctx.events < 300
    # NaN event values
    assert r.locate(EV_Y0, math.nan, 1.0)[0] == r.lib.MG_DOPRI_ERR_NONFINITE
    rr = Run(c, HARMONIC, [1.0, 0.0], rtol=1e-12, atol=1e-14, p=(1.0,))
    assert rr.step(3.0) == 0
    assert rr.locate(EV_NAN, 1.0, -1.0)[0] == r.lib.MG_DOPRI_ERR_NONFINITE


# ------------------------------------------------------------------------------------------
# robustness
# ------------------------------------------------------------------------------------------
def test_rhs_failure_code_stops_the_integration(c):
    ffi, lib = c
    r = Run(c, FAIL, [1.0], rtol=1e-8, atol=1e-10, p=(0.5, 7))
    rc, out = r.solve(1.0, [0.0, 0.25, 0.75])
    assert rc == 7 and r.s.rhs_status == 7
    assert r.s.t <= 0.5 and abs(r.y[0] - math.exp(-r.s.t)) < 1e-8   # last accepted step kept
    assert np.isfinite(out[:2]).all() and np.isnan(out[2]).all()    # 0.75 never reached
    assert ffi.string(lib.mg_dopri_error(7)) == b"right-hand side failure"
    # a negative code cannot be confused with an integrator error
    bad = Run(c, NEGATIVE, [1.0])
    assert bad.rc == lib.MG_DOPRI_ERR_RHS_NEGATIVE and bad.s.rhs_status == -5
    assert bad.step(1.0) == lib.MG_DOPRI_ERR_NOT_READY


def test_nan_is_reported_not_looped_on(c):
    lib = c[1]
    r = Run(c, NAN, [1.0], rtol=1e-8, atol=1e-10, p=(0.5,))
    rc, _ = r.solve(1.0)
    print(f"\n  NaN for t > 0.5: stopped at t = 0.5{r.s.t - 0.5:+.1e} after {r.s.nstep} steps"
          f" ({r.s.nreject} rejected)")
    assert rc == lib.MG_DOPRI_ERR_NONFINITE
    assert 0.5 - 1e-9 < r.s.t <= 0.5 and r.s.nstep < 500
    assert np.isfinite(r.y).all()
    # NaN in the initial state, or in f at the initial point
    assert Run(c, EXP, [math.nan], p=(1.0,)).rc == lib.MG_DOPRI_ERR_NONFINITE
    assert Run(c, NAN, [1.0], p=(-1.0,)).rc == lib.MG_DOPRI_ERR_NONFINITE
    # fixed steps cannot shrink: the first non-finite step is the error
    f = Run(c, NAN, [1.0], h0=0.3, p=(0.5,)).fixed(0.3)
    assert f.solve(1.0)[0] == lib.MG_DOPRI_ERR_NONFINITE and f.s.t == pytest.approx(0.3)


def test_blow_up_gives_step_underflow(c):
    lib = c[1]
    r = Run(c, BLOWUP, [1.0], rtol=1e-8, atol=1e-10)               # y = 1/(1-t)
    rc, _ = r.solve(2.0)
    print(f"\n  y'=y^2 blow-up at t=1: {c[0].string(lib.mg_dopri_error(rc))!r} at t = 1{r.s.t - 1:+.1e}, "
          f"y = {r.y[0]:.1e}, h = {r.s.h:.1e}, {r.s.nstep} steps")
    assert rc == lib.MG_DOPRI_ERR_STEP_UNDERFLOW
    assert abs(r.s.t - 1.0) < 1e-6 and r.s.nstep < 5000


def test_stiff_problem_ends_with_max_steps_or_stiffness(c):
    lib = c[1]
    lam = 1e6
    r = Run(c, STIFF, [0.0], rtol=1e-6, atol=1e-8, p=(lam,))
    r.s.max_steps = 20000
    rc, _ = r.solve(1.0)
    print(f"\n  stiff lambda=1e6: {r.s.nstep} steps to t={r.s.t:.2e}, stiff flag {r.s.stiff},"
          f" |h lambda| {r.s.hlamb:.2f}")
    assert rc == lib.MG_DOPRI_ERR_MAX_STEPS and r.s.nstep == 20000 and r.s.t < 1.0
    assert r.s.stiff == 1                      # detected (dopri5.f test every 1000 steps)
    # stop at the detection, testing every step
    r = Run(c, STIFF, [0.0], rtol=1e-6, atol=1e-8, p=(lam,))
    r.s.stop_on_stiff, r.s.nstiff = 1, 1
    rc, _ = r.solve(1.0)
    assert rc == lib.MG_DOPRI_ERR_STIFF and r.s.naccept < 200
    # a minimum step size the problem needs to go below
    r = Run(c, STIFF, [0.0], rtol=1e-6, atol=1e-8, p=(lam,))
    r.s.hmin = 1e-4
    assert r.solve(1.0)[0] == lib.MG_DOPRI_ERR_STEP_UNDERFLOW and r.s.nstep < 100


def test_bad_arguments(c):
    ffi, lib = c
    assert Run(c, EXP, []).rc == lib.MG_DOPRI_ERR_N
    assert Run(c, EXPN, np.ones(lib.MG_DOPRI_MAXN + 1)).rc == lib.MG_DOPRI_ERR_N
    for rtol, atol in [(-1e-6, 1e-8), (1e-20, 1e-8), (math.nan, 1e-8), (1e-6, 0.0),
                       (1e-6, -1.0), (1e-6, math.inf)]:
        assert Run(c, EXP, [1.0], rtol=rtol, atol=atol, p=(1.0,)).rc == lib.MG_DOPRI_ERR_TOL
    assert Run(c, EXP, [1.0], rtol=0.0, atol=1e-8, p=(1.0,)).rc == 0     # absolute control
    assert Run(c, EXP, [1.0], t0=math.nan, p=(1.0,)).rc == lib.MG_DOPRI_ERR_BAD_ARG
    r = Run(c, EXP, [1.0], p=(1.0,))
    assert r.step(-1.0) == lib.MG_DOPRI_ERR_BAD_ARG
    assert r.step(math.nan) == lib.MG_DOPRI_ERR_BAD_ARG
    assert r.solve(1.0, [0.5, 0.2])[0] == lib.MG_DOPRI_ERR_BAD_ARG      # decreasing t_out
    assert r.solve(1.0, [1.5])[0] == lib.MG_DOPRI_ERR_BAD_ARG           # beyond t_end
    assert r.step(0.0) == 0 and r.s.nstep == 0                          # t_end == t: nothing
    assert lib.mg_dopri_init(ffi.NULL, 1, lib.harness_rhs(EXP), ffi.NULL, 0.0, ffi.NULL, 1e-6,
                             ffi.NULL, 0.0, 0.0) == lib.MG_DOPRI_ERR_BAD_ARG
    codes = [lib.MG_DOPRI_OK, lib.MG_DOPRI_ERR_STEP_UNDERFLOW, lib.MG_DOPRI_ERR_MAX_STEPS,
             lib.MG_DOPRI_ERR_NONFINITE, lib.MG_DOPRI_ERR_N, lib.MG_DOPRI_ERR_TOL,
             lib.MG_DOPRI_ERR_BAD_ARG, lib.MG_DOPRI_ERR_STIFF, lib.MG_DOPRI_ERR_RHS_NEGATIVE,
             lib.MG_DOPRI_ERR_NOT_READY]
    messages = {ffi.string(lib.mg_dopri_error(k)) for k in codes}
    assert len(messages) == len(codes) and all(messages)
    assert ffi.string(lib.mg_dopri_error(-99)) == b"unknown error"


def test_restart_after_a_discontinuous_rhs(c):
    """y' = -y on [0,1], then y' = -3y: exact y(2) = exp(-4). restart recomputes the first
    stage (FSAL) and the dense output restarts; without it the stale k1 spoils the step."""
    exact = math.exp(-4.0)
    r = Run(c, SWITCH, [1.0], rtol=1e-12, atol=1e-14, p=(1.0, 3.0))
    assert r.solve(1.0)[0] == 0 and r.s.t == 1.0
    h_before, nfev = r.s.h, r.s.nfev
    r.ctx.mode = 1
    assert r.restart(1.0, r.y) == 0
    assert r.s.nfev == nfev + 1 and r.s.h == h_before and r.s.t_old == 1.0
    assert np.array_equal(r.dense(1.0), r.y) and np.array_equal(r.y_old, r.y)
    assert r.solve(2.0)[0] == 0
    err = abs(r.y[0] - exact) / exact
    stale = Run(c, SWITCH, [1.0], rtol=1e-12, atol=1e-14, p=(1.0, 3.0))
    stale.solve(1.0)
    stale.ctx.mode = 1
    rejected = stale.s.nreject
    stale.solve(2.0)
    err_stale = abs(stale.y[0] - exact) / exact
    print(f"\n  restart at a discontinuity: rel error {err:.1e}, {r.s.nreject} rejected steps;"
          f" without restart {err_stale:.1e}, {stale.s.nreject} rejected")
    assert err < 1e-11 and err_stale > 20 * err and stale.s.nreject > rejected
    # the kept step size is clamped to hmax
    r.s.hmax = 1e-3
    assert r.restart(r.s.t, r.y) == 0 and r.s.h == 1e-3


# ------------------------------------------------------------------------------------------
# counts, outputs, reentrancy
# ------------------------------------------------------------------------------------------
def test_call_counts_fsal_and_outputs(c):
    r = Run(c, KEPLER, kepler_start(0.5), rtol=1e-10, atol=1e-12)
    t_out = np.linspace(0.0, 2 * math.pi, 9)
    rc, out = r.solve(2 * math.pi, t_out)
    s = r.s
    print(f"\n  Kepler rtol 1e-10: nfev {s.nfev}, naccept {s.naccept}, nreject {s.nreject},"
          f" nstep {s.nstep}: {s.nfev / s.naccept:.2f} rhs calls per accepted step")
    assert rc == 0
    assert s.nfev == 2 + 6 * s.nstep == r.ctx.calls     # init + HINIT, then 6 per step (FSAL)
    assert s.nstep == s.naccept + s.nreject
    assert s.t == 2 * math.pi                           # lands exactly on t_end
    assert np.array_equal(out[0], kepler_start(0.5)) and np.array_equal(out[-1], r.y)
    assert r.step(2 * math.pi) == 0 and s.nstep == s.naccept + s.nreject   # no-op at t_end


def test_steps_never_pass_t_end_and_rejections_do_not_advance(c):
    r = Run(c, KEPLER, kepler_start(0.5), rtol=1e-9, atol=1e-11, h0=3.0)   # far too big
    assert r.step(10.0) == 0
    assert r.s.nreject >= 1 and r.s.t_old == 0.0 and 0 < r.s.t < 3.0
    ends = []
    for t_end in (0.7, 0.7000001, 1.3, 2.0):
        while r.s.t < t_end:
            assert r.step(t_end) == 0
            assert r.s.t <= t_end
            ends.append(r.s.t)
        assert r.s.t == t_end
    assert all(b > a for a, b in zip(ends, ends[1:]))


def test_large_systems_up_to_maxn(c):
    lib = c[1]
    for n in (40, lib.MG_DOPRI_MAXN):
        y0 = np.linspace(1.0, 2.0, n)
        r = Run(c, EXPN, y0, rtol=1e-11, atol=1e-13, p=(-1.0, n))
        rc, _ = r.solve(3.0)
        exact = y0 * np.exp(-(1.0 + 0.01 * np.arange(n)) * 3.0)
        assert rc == 0 and np.abs(r.y - exact).max() < 1e-10


def _monte_carlo_case(c, ecc):
    r = Run(c, KEPLER, kepler_start(ecc), rtol=1e-10, atol=1e-12)
    rc, out = r.solve(4 * math.pi, np.linspace(0, 4 * math.pi, 17))
    return rc, out, r.s.nfev


def test_reentrant_and_thread_safe(c):
    eccs = np.linspace(0.1, 0.7, 16)
    serial = [_monte_carlo_case(c, e) for e in eccs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(lambda e: _monte_carlo_case(c, e), eccs))
    for (rc1, out1, n1), (rc2, out2, n2) in zip(serial, threaded):
        assert rc1 == rc2 == 0 and n1 == n2 and np.array_equal(out1, out2)
    # two integrations interleaved step by step equal the solo runs
    a = Run(c, KEPLER, kepler_start(0.3), rtol=1e-9, atol=1e-11)
    b = Run(c, VDP, [2.0, 0.0], rtol=1e-9, atol=1e-11, p=(1.0,))
    while a.s.t < 5.0 or b.s.t < 5.0:
        assert a.step(5.0) == 0 and b.step(5.0) == 0
    a1 = Run(c, KEPLER, kepler_start(0.3), rtol=1e-9, atol=1e-11)
    b1 = Run(c, VDP, [2.0, 0.0], rtol=1e-9, atol=1e-11, p=(1.0,))
    a1.solve(5.0), b1.solve(5.0)
    assert np.array_equal(a.y, a1.y) and np.array_equal(b.y, b1.y)
