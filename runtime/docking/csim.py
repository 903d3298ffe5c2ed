"""The compiled docking simulation: the C right-hand side and driver (runtime/csrc) compiled
with the mechanism's and the interface's generated C kernels, through cffi.

The kernels are bound by name (``dk_bind.h``, written here from the two manifests): the driver
calls ``DK_COUPLED(x, u, ...)``, ``DK_CONTACT(r, R, ...)``, ``DK_MOMENTUM``, ``DK_ENERGY`` with
its arguments in a fixed order, and the binding passes them in each kernel's own order, with
scratch arrays for the outputs the driver does not read. A kernel missing a port the driver
needs is refused with its name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mechgen.runtime.cbuild import DRIVER_FLAGS, build_driver, isa_flags
from mechgen.runtime.mechanism import Mechanism, load as load_mechanism
from mechgen.runtime.docking.scenario import Scenario, ScenarioError, case_variables

CSRC = Path(__file__).resolve().parent.parent / "csrc"
NY = 39
NDIAG = 64
OUTCOMES = {0: "captured", 1: "no_capture", 2: "stop_overload", 3: "separation",
            4: "kernel_status", 5: "integrator_error"}

# what the driver passes to each kernel, by port name, in its own order
BINDINGS = {
    "DK_COUPLED": ("coupled_step", ["x", "u", "F", "fE", "mE", "g", "w0", "dw0", "p", "xdot",
                                    "q", "qd", "udot", "wrench", "damping_power", "stop_force",
                                    "dudot_dbase", "dwrench_dbase"]),
    "DK_MOMENTUM": ("momentum", ["x", "u", "w0", "V0", "p", "momentum", "angular_momentum",
                                 "T"]),
    "DK_ENERGY": ("energy", ["x", "u", "g", "p", "T", "V"]),
    "DK_CONTACT": ("contact", ["r", "R", "v", "w", "latched", "p", "f_P", "m_P", "f_A", "m_A",
                               "V", "P_diss", "gap", "f_normal", "capture_margin"]),
}

CDEF = """
typedef struct {
    int active_fixed; int decoupled; int start_latched;
    double m_A, c_A[3], I_A[9]; double thrust, thrust_dir[3];
    int thrust_until_capture; double m_P, c_P[3], I_P[9]; double kp_att, kd_att;
    double q_ref[4]; double g[3]; double d_A[3], R_CA[9]; double F_drive[8];
    double t_end, t_after_capture; double stop_force_limit; double separation;
    double rtol, atol[39], hmax, h0; long max_steps; double dt_out;
    const double *p_mech, *p_iface;
} dk_scenario;
typedef struct {
    int outcome; int code; int captured; double t_contact, t_capture, t_final;
    double peak_stroke[8]; double peak_base_force, peak_base_moment, peak_contact_force,
    peak_stop_force; double energy_absorbed; double min_gap; long nfev, naccept, nreject;
    double P0[3], H0[3], E0, P1[3], H1[3], E1; double E_latch;
} dk_result;
int dk_diagnostics(const dk_scenario *sc, int latched, double t, const double *y, double *d);
int dk_rhs(double t, const double *y, double *dydt, void *ctx);
int dk_run(const dk_scenario *sc, const double *y0, dk_result *res, int n_hist, double *hist);
long dk_run_batch(long n, const dk_scenario *sc, const double *y0, dk_result *res);
int dk_nleg(void);
"""


def _ports(manifest: dict, kernel: str) -> dict:
    for k in manifest["kernels"]:
        if k["name"] == kernel:
            return k
    raise ScenarioError(f"{manifest['mechanism']}: no kernel {kernel!r} (regenerate it with "
                        f"this version of mechgen)")


def binding_header(mech: Mechanism, iface: Mechanism) -> str:
    """dk_bind.h: the kernels under the driver's names, arguments by port name."""
    m = mech.manifest
    legs = m["legs"]
    drive, i = [], 0
    for leg in legs:
        drive.append(i + leg["drive"])
        i += leg["n"]
    lines = [f"/* written by mechgen.runtime.docking.csim for {m['mechanism']} and "
             f"{iface.manifest['mechanism']} */",
             "#ifndef DK_BIND_H", "#define DK_BIND_H",
             f'#include "{m["mechanism"]}.h"', f'#include "{iface.manifest["mechanism"]}.h"',
             f"#define DK_NLEG {len(legs)}", f"#define DK_NQ {m['n']}",
             f"static const int dk_drive[DK_NLEG] = {{{', '.join(map(str, drive))}}};"]
    for macro, (kernel, names) in BINDINGS.items():
        owner = iface if macro == "DK_CONTACT" else mech
        k = _ports(owner.manifest, kernel)
        ins = [p["name"] for p in k["inputs"]]
        outs = [p["name"] for p in k["outputs"]]
        missing = [n for n in names if n not in ins + outs]
        extra_in = [n for n in ins if n not in names]
        if missing or extra_in:
            raise ScenarioError(f"{owner.name}.{kernel}: ports {missing or extra_in} do not "
                                f"match what the docking driver passes ({', '.join(names)})")
        params = ", ".join(("const double *" if n in ins else "double *") + f"a_{n}"
                           for n in names)
        scratch = [f"    double s_{p['name']}[{max(1, math.prod(p['shape']))}];"
                   for p in k["outputs"] if p["name"] not in names]
        args = ", ".join(f"a_{n}" if n in names else f"s_{n}" for n in ins + outs)
        lines += [f"static inline int {macro}({params})", "{", *scratch,
                  f"    return {k['c_function']}({args});", "}"]
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def build(mech: Mechanism, iface: Mechanism):
    """The cffi module of the docking driver for this mechanism and interface (cached)."""
    bind = binding_header(mech, iface)
    sources = {p.name: p.read_text() for p in sorted(CSRC.glob("*.[ch]"))}
    for owner in (mech, iface):
        for f in ("c", "h"):
            path = owner.folder / f"{owner.name}.{f}"
            sources[path.name] = path.read_text()
    sources["dk_bind.h"] = bind
    return build_driver("docking", CDEF, "docking_sim.h", sources,
                        DRIVER_FLAGS + isa_flags())


# --- numpy frames (the same conventions as the C driver) ------------------------------------

def elementary(axis: int, q: float) -> np.ndarray:
    c, s = math.cos(q), math.sin(q)
    return {0: np.array([[1, 0, 0], [0, c, s], [0, -s, c]]),
            1: np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]]),
            2: np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]])}[axis]


def alpha_C(x: np.ndarray) -> np.ndarray:
    return elementary(0, x[5]) @ elementary(2, x[4]) @ elementary(1, x[3])


def rot(axis: int, a: float) -> np.ndarray:
    """Active rotation by a about an axis: v' = rot v."""
    return elementary(axis, a).T


def quat_from_R(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (body -> inertial), Shepperd."""
    t = np.trace(R)
    cands = [t, R[0, 0], R[1, 1], R[2, 2]]
    k = int(np.argmax(cands))
    if k == 0:
        w = math.sqrt(1 + t) / 2
        q = [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
             (R[1, 0] - R[0, 1]) / (4 * w)]
    else:
        i, j, l = k - 1, k % 3, (k + 1) % 3
        s = math.sqrt(1 + 2 * R[i, i] - t) / 2
        q = [0.0] * 4
        q[0] = (R[l, j] - R[j, l]) / (4 * s)
        q[1 + i] = s
        q[1 + j] = (R[j, i] + R[i, j]) / (4 * s)
        q[1 + l] = (R[l, i] + R[i, l]) / (4 * s)
    q = np.array(q)
    return q / np.linalg.norm(q) * (1 if q[0] >= 0 else -1)


def _quat_R(q: np.ndarray) -> np.ndarray:
    """Rotation matrix (body -> inertial) of a quaternion (w, x, y, z)."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


FLIP = np.diag([1.0, -1.0, -1.0])          # D_P aligned and docked: half a turn about x_A


@dataclass
class Start:
    """Where the ring and D_A are at t = 0 (the mechanism at home, at rest)."""

    x: np.ndarray
    R_DA: np.ndarray
    r_DA: np.ndarray


class DockingSim:
    """One scenario compiled: cases run in C, one at a time or as a batch."""

    def __init__(self, sc: Scenario, backend: str = "c") -> None:
        self.sc = sc
        self.mech = load_mechanism(sc.mechanism, backend)
        if self.mech.manifest.get("family") != "parallel":
            raise ScenarioError(f"{sc.source}: scenario.mechanism: {sc.mechanism} is not a "
                                f"parallel mechanism")
        self.iface = load_mechanism(sc.interface, backend)
        self.nleg = len(self.mech.manifest["legs"])
        if self.nleg > 8:
            raise ScenarioError(f"{sc.source}: the docking driver takes at most 8 legs")
        self.p_mech = self._params(self.mech, sc.mech_parameters, "mechanism")
        self.p_iface = self._params(self.iface, sc.iface_parameters, "interface")
        self.lib = build(self.mech, self.iface)
        self.ffi, self.C = self.lib.ffi, self.lib.lib
        home = np.array(self.mech.manifest["home"], float)
        A = alpha_C(home)
        R_DA = A.T                                  # D_A axes = C's (ring_offset only)
        self.start = Start(home, R_DA, home[:3] + A.T @ sc.ring_offset)
        self._keep = []
        self.c_sc = self._c_scenario()

    def _params(self, m: Mechanism, values: dict, what: str) -> np.ndarray:
        try:
            return np.ascontiguousarray(m.params(values), float)
        except (KeyError, ValueError) as e:
            raise ScenarioError(f"{self.sc.source}: {what}.parameters: {e}") from None

    def _arr(self, a: np.ndarray):
        buf = self.ffi.new("double[]", [float(x) for x in np.ravel(a)])
        self._keep.append(buf)
        return buf

    def _c_scenario(self):
        sc, ffi = self.sc, self.ffi
        c = ffi.new("dk_scenario *")
        A, P = sc.active, sc.passive
        c.active_fixed = int(A.fixed)
        c.decoupled = int(sc.base_motion == "decoupled")
        c.start_latched = int(sc.start_latched)
        c.m_A, c.c_A, c.I_A = A.mass, list(A.com), list(A.inertia.ravel())
        c.thrust, c.thrust_dir = A.thrust, list(A.thrust_dir)
        c.thrust_until_capture = int(A.thrust_until_capture)
        c.m_P, c.c_P, c.I_P = P.mass, list(P.com), list(P.inertia.ravel())
        c.kp_att, c.kd_att = P.attitude_kp, P.attitude_kd
        c.q_ref = [1.0, 0.0, 0.0, 0.0]
        c.g = list(sc.gravity)
        c.d_A = list(sc.ring_offset)
        c.R_CA = list(np.eye(3).ravel())
        F = np.zeros(8)
        if sc.drive_forces is not None:
            if len(sc.drive_forces) != self.nleg:
                raise ScenarioError(f"{sc.source}: mechanism.drive_forces: {self.nleg} legs, "
                                    f"{len(sc.drive_forces)} forces")
            F[:self.nleg] = sc.drive_forces
        c.F_drive = list(F)
        c.t_end, c.t_after_capture = sc.duration, sc.after_capture
        c.stop_force_limit, c.separation = sc.stop_force_limit, sc.separation
        c.rtol = sc.rtol
        atol = np.full(NY, sc.atol_position)
        atol[38] = sc.atol_position * 1e3
        c.atol = list(atol)
        c.hmax, c.h0, c.max_steps, c.dt_out = sc.hmax, 0.0, sc.max_steps, sc.dt_out
        c.p_mech = self._arr(self.p_mech)
        c.p_iface = self._arr(self.p_iface)
        return c

    # --- initial state ----------------------------------------------------------------------
    def state(self, v: dict[str, float], axial: float) -> np.ndarray:
        """y0 for the case's initial conditions with D_P's origin ``axial`` m along z_A."""
        st = self.start
        d = math.radians(v["lateral_direction"])
        R = (rot(0, math.radians(v["pitch"])) @ rot(1, math.radians(v["yaw"])) @ FLIP
             @ rot(2, math.radians(v["roll"])))
        r = np.array([v["lateral"] * math.cos(d), v["lateral"] * math.sin(d), axial])
        vel = np.array([v["lateral_rate"] * math.cos(d), v["lateral_rate"] * math.sin(d),
                        -v["closing_velocity"]])
        w = np.radians([v["pitch_rate"], v["yaw_rate"], 0.0])
        R_P = st.R_DA @ R
        y = np.zeros(NY)
        y[3] = 1.0
        y[13:19] = st.x
        y[25:28] = st.r_DA + st.R_DA @ r
        y[28:32] = quat_from_R(R_P)
        y[32:35] = st.R_DA @ vel
        y[35:38] = R.T @ w
        return y

    def diagnostics(self, y: np.ndarray, latched: int = 0, t: float = 0.0) -> np.ndarray:
        d = np.zeros(NDIAG)
        y = np.ascontiguousarray(y, float)
        st = self.C.dk_diagnostics(self.c_sc, latched, t, self.ffi.from_buffer("double[]", y),
                                   self.ffi.from_buffer("double[]", d))
        if st != 0:
            raise ScenarioError(f"{self.sc.source}: kernel status {st} at the initial state")
        return d

    def initial_state(self, values: dict[str, float] | None = None) -> np.ndarray:
        """y0 of a case: D_P on its approach path (along -z_A from far away) where the closest
        contact pair first comes within start_gap, and not yet within the capture tolerances
        (margin -0.1: 10 % beyond them), whichever comes first on the way in."""
        v = case_variables(self.sc, values)
        for k in ("lateral", "closing_velocity", "start_gap"):
            if not v[k] >= 0:
                raise ScenarioError(f"{self.sc.source}: initial {k} = {v[k]!r} must be a "
                                    f"non-negative number")
        for k, x in v.items():
            if not math.isfinite(x):
                raise ScenarioError(f"{self.sc.source}: initial {k} = {x!r} is not finite")
        if self.sc.start_latched:
            return self._latched_state(v)
        gap = lambda z: self.diagnostics(self.state(v, z))[14] - v["start_gap"]
        margin = lambda z: -0.1 - self.diagnostics(self.state(v, z))[15]
        return self.state(v, max(self._first_contact(gap), self._first_above(margin)))

    def _latched_state(self, v: dict[str, float]) -> np.ndarray:
        """y0 of a latched start: D_P aligned with the ring at home, at the axial distance where
        the latches and the stop pads balance (no axial contact force), the ring moving with
        the passive vehicle."""
        bad = [k for k in ("lateral", "pitch", "yaw", "roll") if v[k] != 0.0]
        if bad:
            raise ScenarioError(f"{self.sc.source}: scenario.start_latched: the ring starts at "
                                f"home docked to the passive unit, so initial {bad[0]} must be 0")
        z_A = self.start.R_DA[:, 2]
        axial_force = lambda z: self.diagnostics(self.state(v, z), latched=1)[7:10] @ z_A
        lo, hi = 0.0, 0.01
        while axial_force(hi) > 0:          # the pads push D_P away, the latches pull it back
            hi *= 2
            if hi > 1:
                raise ScenarioError(f"{self.sc.source}: no latched equilibrium found")
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if axial_force(mid) > 0 else (lo, mid)
        y = self.state(v, (lo + hi) / 2)
        # the ring moves with the passive vehicle: velocity of its point at O_C, its angular
        # velocity (frame 0 is the inertial frame at t = 0)
        R_P = _quat_R(y[28:32])
        w = R_P @ y[35:38]
        y[19:22] = y[32:35] + np.cross(w, y[13:16] - y[25:28])
        y[22:25] = alpha_C(y[13:19]) @ w
        return y

    def _first_contact(self, f) -> float:
        """The largest axial distance z at which f(z) = gap - start_gap reaches 0, coming in
        from far away: from z = separation (the units apart) downwards by steps of f (a
        distance changes by at most as much as the bodies move, so such a step cannot pass
        start_gap; at most 5 cm, at least 1 mm, less than any part is thick), then by
        bisection. Not a bisection over [0, far]: the gap is not monotonic in z, and with a
        large lateral offset a small z can have the petals already through each other (the
        model has no pair for an edge through a plate's interior), a state no approach
        reaches. 0 when nothing is met down to z = 0."""
        hi = self.sc.separation
        f_hi = f(hi)
        if not f_hi > 0:
            raise ScenarioError(f"{self.sc.source}: the units are in contact already at the "
                                f"separation distance {hi} m (limits.separation too small?)")
        while hi > 0:
            lo = max(0.0, hi - max(min(f_hi, 0.05), 1e-3))
            f_lo = f(lo)
            if not f_lo > 0:
                for _ in range(60):
                    mid = (lo + hi) / 2
                    lo, hi = (lo, mid) if f(mid) > 0 else (mid, hi)
                return hi
            hi, f_hi = lo, f_lo
        return 0.0

    def _first_above(self, f) -> float:
        """The smallest axial distance z >= 0 with f(z) >= 0 (f grows with z), by bisection."""
        lo, hi = 0.0, 0.05
        while f(hi) < 0:
            hi *= 2
            if hi > 10:
                raise ScenarioError(f"{self.sc.source}: the initial conditions cannot be met "
                                    f"at any axial distance (lateral offset too large?)")
        if f(lo) >= 0:
            return lo
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return hi

    # --- runs -------------------------------------------------------------------------------
    def run(self, y0: np.ndarray, history: bool = True) -> tuple[dict, np.ndarray | None]:
        sc = self.sc
        y0 = np.ascontiguousarray(y0, float)
        res = self.ffi.new("dk_result *")
        n_hist = int(sc.duration / sc.dt_out) + 2 if history else 0
        hist = np.full((max(n_hist, 1), NDIAG), np.nan)
        self.C.dk_run(self.c_sc, self.ffi.from_buffer("double[]", y0), res, n_hist,
                      self.ffi.from_buffer("double[]", hist) if history else self.ffi.NULL)
        out = self.result_dict(res)
        if history:
            hist = hist[~np.isnan(hist[:, 0])]
        return out, (hist if history else None)

    def run_batch(self, Y0: np.ndarray) -> list[dict]:
        Y0 = np.ascontiguousarray(Y0, float)
        n = len(Y0)
        res = self.ffi.new("dk_result[]", n)
        self.C.dk_run_batch(n, self.c_sc, self.ffi.from_buffer("double[]", Y0), res)
        return [self.result_dict(res[i]) for i in range(n)]

    def result_dict(self, r) -> dict:
        out = {"outcome": OUTCOMES.get(r.outcome, str(r.outcome)), "code": int(r.code),
               "captured": bool(r.captured), "t_contact": r.t_contact,
               "t_capture": r.t_capture, "t_final": r.t_final}
        for k in range(self.nleg):
            out[f"peak_stroke_{self.mech.manifest['legs'][k]['name']}"] = r.peak_stroke[k]
        out["peak_stroke"] = max(r.peak_stroke[k] for k in range(self.nleg))
        out.update(peak_base_force=r.peak_base_force, peak_base_moment=r.peak_base_moment,
                   peak_contact_force=r.peak_contact_force, peak_stop_force=r.peak_stop_force,
                   energy_absorbed=r.energy_absorbed, min_gap=r.min_gap, nfev=int(r.nfev),
                   steps=int(r.naccept), rejected=int(r.nreject),
                   P0=np.array(list(r.P0)), H0=np.array(list(r.H0)), E0=r.E0,
                   P1=np.array(list(r.P1)), H1=np.array(list(r.H1)), E1=r.E1,
                   E_latch=r.E_latch)
        return out


HISTORY_COLUMNS = (["t", "base_fx", "base_fy", "base_fz", "base_mx", "base_my", "base_mz",
                    "contact_fx", "contact_fy", "contact_fz", "contact_mx", "contact_my",
                    "contact_mz", "f_normal", "gap", "capture_margin", "latched", "T", "V",
                    "E_diss", "Px", "Py", "Pz", "Hx", "Hy", "Hz", "stop_force"])
# the columns after the strokes (27 .. 27 + DK_MAXLEG - 1): the pose and velocity of D_P
# relative to D_A (D_A frame; R: D_P -> D_A, row-major, 50-58) and the ring's pose x (frame 0)
RELATIVE_COLUMNS = {"r_x": 35, "r_y": 36, "r_z": 37, "v_x": 38, "v_y": 39, "v_z": 40,
                    "w_x": 41, "w_y": 42, "w_z": 43, "ring_x": 44, "ring_y": 45, "ring_z": 46,
                    "ring_psi_y": 47, "ring_psi_z": 48, "ring_psi_x": 49,
                    **{f"R{i}{j}": 50 + 3 * i + j for i in range(3) for j in range(3)}}
