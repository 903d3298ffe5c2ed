"""A docking scenario: the mechanism, the docking interface, two vehicles, the initial contact
conditions, the ends, the integrator, and the envelope of a campaign (TOML).

Frames. Frame 0 is the mechanism's base frame, fixed in the active vehicle A (its reference
point O_0; at t = 0 it is the inertial frame). The ring C carries the active docking frame D_A
(``[interface] ring_offset``, frame C, axes of C). The passive vehicle P's reference frame is
its docking frame D_P. Docked and aligned, D_P is D_A turned half a turn about x_A.

Initial conditions (``[initial]``, and the campaign's variables): the passive unit starts with
the lateral offset (``lateral``, m, and its direction ``lateral_direction``, deg, in D_A's x-y
plane) and the tilt (``pitch`` about x_A, ``yaw`` about y_A, ``roll`` about the docking axis,
deg) of D_P from the aligned pose, at the axial distance where the closest contact pair is
``start_gap`` apart; it approaches along the docking axis at ``closing_velocity`` (m/s) with
``lateral_rate`` (m/s, along the offset) and ``pitch_rate``, ``yaw_rate`` (deg/s). The active
vehicle and the ring start at rest, the ring at the mechanism's home pose.

``[scenario] start_latched = true`` starts a case captured instead: the ring at home, D_P
docked to it (aligned, where the latches and the stop pads balance), moving with the passive
vehicle; the lateral offset and the tilts must then be zero. ``[scenario] base_motion =
"decoupled"`` runs the paper's approximation (the mechanism on a base at rest, its base
wrench on the active vehicle) instead of the exact coupled solution, for comparison.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SCENARIOS = Path(__file__).resolve().parent / "scenarios"

INITIAL_VARIABLES = {
    "closing_velocity": 0.1, "lateral": 0.0, "lateral_direction": 0.0, "pitch": 0.0,
    "yaw": 0.0, "roll": 0.0, "lateral_rate": 0.0, "pitch_rate": 0.0, "yaw_rate": 0.0,
    "start_gap": 0.01,
}
BASE_MOTIONS = ("coupled", "decoupled")
SECTIONS = {"scenario", "mechanism", "interface", "active", "passive", "initial", "limits",
            "integrator", "envelope"}


class ScenarioError(ValueError):
    """A scenario file is wrong; the message starts with the file and the field."""


@dataclass
class Vehicle:
    mass: float
    com: np.ndarray             # m, reference frame (frame 0 for A, D_P for P)
    inertia: np.ndarray         # kg m^2 about the centre of mass, reference axes (3x3)
    fixed: bool = False
    thrust: float = 0.0
    thrust_dir: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    thrust_until_capture: bool = True
    attitude_kp: float = 0.0
    attitude_kd: float = 0.0


@dataclass
class Scenario:
    name: str
    source: str
    mechanism: str
    interface: str
    duration: float
    after_capture: float
    gravity: np.ndarray
    base_motion: str            # "coupled" (exact) or "decoupled" (the paper's approximation)
    start_latched: bool         # the case starts captured, docked (the attenuation alone)
    mech_parameters: dict[str, float]
    drive_forces: np.ndarray | None
    iface_parameters: dict[str, float]
    ring_offset: np.ndarray
    active: Vehicle
    passive: Vehicle
    initial: dict[str, float]
    stop_force_limit: float
    separation: float
    rtol: float
    atol_position: float
    hmax: float
    dt_out: float
    max_steps: int
    envelope: dict | None


def _err(where: str, msg: str) -> ScenarioError:
    return ScenarioError(f"{where}: {msg}")


def _table(d: dict, key: str, where: str, allowed: set[str], required: set[str] = set()) -> dict:
    t = d.get(key, {})
    if not isinstance(t, dict):
        raise _err(f"{where}.{key}", f"expected a table, got {t!r}")
    unknown = set(t) - allowed
    if unknown:
        raise _err(f"{where}.{key}", f"unknown field(s) {sorted(unknown)}; expected "
                   f"{sorted(allowed)}")
    for k in sorted(required - set(t)):
        raise _err(f"{where}.{key}.{k}", "missing")
    return t


def _num(t: dict, key: str, where: str, default: Any = None, positive: bool = False,
         nonneg: bool = False) -> float:
    if key not in t:
        if default is None:
            raise _err(f"{where}.{key}", "missing")
        return float(default)
    v = t[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _err(f"{where}.{key}", f"expected a finite number, got {v!r}")
    if positive and v <= 0:
        raise _err(f"{where}.{key}", f"must be positive, got {v!r}")
    if nonneg and v < 0:
        raise _err(f"{where}.{key}", f"must not be negative, got {v!r}")
    return float(v)


def _vec(t: dict, key: str, where: str, n: int, default: Any = None) -> np.ndarray:
    if key not in t:
        if default is None:
            raise _err(f"{where}.{key}", "missing")
        return np.array(default, float)
    v = t[key]
    if (not isinstance(v, list) or len(v) != n or any(
            isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
            for x in v)):
        raise _err(f"{where}.{key}", f"expected a list of {n} finite numbers, got {v!r}")
    return np.array(v, float)


def _inertia(t: dict, where: str) -> np.ndarray:
    """[Ixx, Iyy, Izz, Ixy, Ixz, Iyz] -> 3x3, positive definite."""
    a = _vec(t, "inertia", where, 6)
    I = np.array([[a[0], a[3], a[4]], [a[3], a[1], a[5]], [a[4], a[5], a[2]]])
    if np.any(np.linalg.eigvalsh(I) <= 0):
        raise _err(f"{where}.inertia", f"not positive definite: {a.tolist()}")
    return I


def _params(t: dict, where: str) -> dict[str, float]:
    p = t.get("parameters", {})
    if not isinstance(p, dict):
        raise _err(f"{where}.parameters", f"expected a table, got {p!r}")
    return {k: _num(p, k, f"{where}.parameters") for k in p}


def _vehicle(d: dict, key: str, where: str, active: bool) -> Vehicle:
    allowed = {"mass", "com", "inertia", "fixed"} | (
        {"thrust", "thrust_dir", "thrust_until_capture"} if active
        else {"attitude_kp", "attitude_kd"})
    t = _table(d, key, where, allowed)
    w = f"{where}.{key}"
    fixed = t.get("fixed", False)
    if not isinstance(fixed, bool):
        raise _err(f"{w}.fixed", f"expected true or false, got {fixed!r}")
    if fixed and not active:
        raise _err(f"{w}.fixed", "only the active vehicle (the mechanism's base) can be fixed")
    if fixed:
        return Vehicle(1.0, np.zeros(3), np.eye(3), fixed=True)
    v = Vehicle(_num(t, "mass", w, positive=True), _vec(t, "com", w, 3, [0, 0, 0]),
                _inertia(t, w))
    if active:
        v.thrust = _num(t, "thrust", w, 0.0, nonneg=True)
        v.thrust_dir = _vec(t, "thrust_dir", w, 3, [0, 0, 1])
        n = np.linalg.norm(v.thrust_dir)
        if n == 0:
            raise _err(f"{w}.thrust_dir", "zero vector")
        v.thrust_dir = v.thrust_dir / n
        v.thrust_until_capture = bool(t.get("thrust_until_capture", True))
    else:
        v.attitude_kp = _num(t, "attitude_kp", w, 0.0, nonneg=True)
        v.attitude_kd = _num(t, "attitude_kd", w, 0.0, nonneg=True)
    return v


def load(path: str | Path) -> Scenario:
    """Read and check a scenario file; a bare name is a bundled scenario."""
    p = Path(path)
    if not p.suffix and not p.exists():
        p = SCENARIOS / f"{path}.toml"
    if not p.is_file():
        bundled = ", ".join(sorted(s.stem for s in SCENARIOS.glob("*.toml")))
        raise ScenarioError(f"{path}: no such scenario file (bundled: {bundled})")
    try:
        d = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{p.name}: {e}") from None
    return from_dict(d, p.name)


def from_dict(d: dict, where: str = "<scenario>") -> Scenario:
    unknown = set(d) - SECTIONS
    if unknown:
        raise _err(where, f"unknown section(s) {sorted(unknown)}; expected {sorted(SECTIONS)}")
    s = _table(d, "scenario", where, {"name", "mechanism", "interface", "duration",
                                      "after_capture", "gravity", "base_motion",
                                      "start_latched"}, {"mechanism", "interface"})
    ws = f"{where}.scenario"
    for k in ("mechanism", "interface"):
        if not isinstance(s[k], str) or not s[k]:
            raise _err(f"{ws}.{k}", f"expected a mechanism name or folder, got {s[k]!r}")
    m = _table(d, "mechanism", where, {"parameters", "drive_forces"})
    i = _table(d, "interface", where, {"parameters", "ring_offset"})
    init = _table(d, "initial", where, set(INITIAL_VARIABLES))
    wi = f"{where}.initial"
    initial = {k: _num(init, k, wi, v) for k, v in INITIAL_VARIABLES.items()}
    if initial["closing_velocity"] < 0:
        raise _err(f"{wi}.closing_velocity", "must not be negative")
    lim = _table(d, "limits", where, {"stop_force", "separation"})
    integ = _table(d, "integrator", where, {"rtol", "atol_position", "hmax", "dt_out",
                                            "max_steps"})
    wg = f"{where}.integrator"
    env = d.get("envelope")
    if env is not None and not isinstance(env, dict):
        raise _err(f"{where}.envelope", "expected a table")
    base_motion = s.get("base_motion", "coupled")
    if base_motion not in BASE_MOTIONS:
        raise _err(f"{ws}.base_motion", f"expected one of {list(BASE_MOTIONS)}, got "
                   f"{base_motion!r}")
    start_latched = s.get("start_latched", False)
    if not isinstance(start_latched, bool):
        raise _err(f"{ws}.start_latched", f"expected true or false, got {start_latched!r}")
    drive = m.get("drive_forces")
    sc = Scenario(
        name=str(s.get("name", Path(where).stem)), source=where, mechanism=s["mechanism"],
        interface=s["interface"], duration=_num(s, "duration", ws, 10.0, positive=True),
        after_capture=_num(s, "after_capture", ws, 3.0, nonneg=True),
        gravity=_vec(s, "gravity", ws, 3, [0, 0, 0]),
        base_motion=base_motion, start_latched=start_latched,
        mech_parameters=_params(m, f"{where}.mechanism"),
        drive_forces=None if drive is None else _vec(m, "drive_forces", f"{where}.mechanism",
                                                     len(drive)),
        iface_parameters=_params(i, f"{where}.interface"),
        ring_offset=_vec(i, "ring_offset", f"{where}.interface", 3, [0, 0, 0]),
        active=_vehicle(d, "active", where, True), passive=_vehicle(d, "passive", where, False),
        initial=initial,
        stop_force_limit=_num(lim, "stop_force", f"{where}.limits", 1e5, positive=True),
        separation=_num(lim, "separation", f"{where}.limits", 1.0, positive=True),
        rtol=_num(integ, "rtol", wg, 1e-8, positive=True),
        atol_position=_num(integ, "atol_position", wg, 1e-9, positive=True),
        hmax=_num(integ, "hmax", wg, 0.01, positive=True),
        dt_out=_num(integ, "dt_out", wg, 0.002, positive=True),
        max_steps=int(_num(integ, "max_steps", wg, 2_000_000, positive=True)),
        envelope=env)
    if sc.dt_out > sc.duration:
        raise _err(f"{wg}.dt_out", f"{sc.dt_out} s is longer than the duration {sc.duration} s")
    return sc


def with_mechanism(sc: Scenario, name: str) -> tuple[Scenario, list[str]]:
    """The scenario on another parallel mechanism, keeping the mechanism parameter overrides
    that mechanism has; also returns those it dropped (and the drive forces when the number
    of legs differs)."""
    from mechgen.runtime.mechanism import load as load_mechanism
    manifest = load_mechanism(name).manifest
    known = set(manifest.get("parameters", []))
    dropped = sorted(set(sc.mech_parameters) - known)
    drive = sc.drive_forces
    if drive is not None and len(drive) != len(manifest.get("legs", [])):
        drive = None
        dropped.append("drive_forces")
    return dataclasses.replace(sc, mechanism=name, drive_forces=drive, mech_parameters={
        k: v for k, v in sc.mech_parameters.items() if k in known}), dropped


def case_variables(sc: Scenario, values: dict[str, float] | None = None) -> dict[str, float]:
    """The scenario's initial conditions with some replaced (a campaign case's)."""
    out = dict(sc.initial)
    for k, v in (values or {}).items():
        if k not in INITIAL_VARIABLES:
            raise ScenarioError(f"{sc.source}: envelope variable {k!r} is not an initial "
                                f"condition; expected one of {sorted(INITIAL_VARIABLES)}")
        out[k] = float(v)
    return out
