"""A loaded mechanism: its manifest, its kernels as attributes, and helpers built on them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mechgen.runtime import backends
from mechgen.runtime.kernel import Kernel, Parameters, as_input

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def generated_root() -> Path:
    env = os.environ.get("MECHGEN_GENERATED")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "generated"


class Mechanism:
    def __init__(self, folder: Path, backend: str) -> None:
        self.folder = folder
        self.manifest = json.loads((folder / "manifest.json").read_text())
        self.name = self.manifest["mechanism"]
        self.backend = backend
        self.n: int = self.manifest["n"]                      # velocity coordinates
        self.nq: int = self.manifest.get("nq", self.n)        # position coordinates
        self.quaternion_base = self.manifest.get("attitude") == "quaternion"
        # "body": qd starts with the base's body twist (v_body, omega_body), else v in frame 0
        self.base_velocity: str = self.manifest.get("base_velocity", "frame0")
        self.coordinates: list[str] = self.manifest["coordinates"]
        self.parameters: list[str] = self.manifest["parameters"]
        self.parameter_set = Parameters(self.name, self.parameters,
                                        read_parameter_defaults(self.manifest,
                                                                folder / "manifest.json"))
        self.bodies: list[str] = self.manifest["bodies"]
        self.points: list[str] = self.manifest["points"]
        self.backends: list[str] = list(backends.listed(self.manifest, str(folder /
                                                                           "manifest.json")))
        self.kernels: dict[str, Kernel] = backends.load_kernels(folder, self.manifest, backend,
                                                                self.parameter_set)
        for name, kernel in self.kernels.items():    # mech.step: a plain attribute lookup
            if not hasattr(type(self), name) and name not in self.__dict__:
                self.__dict__[name] = kernel

    def __getattr__(self, name: str) -> Kernel:
        """A kernel whose name is also an attribute of Mechanism (the others are set on the
        instance), or AttributeError listing the kernels."""
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"mechanism {self.__dict__.get('name')!r} has no kernel {name!r}; "
                             f"kernels: {', '.join(kernels)}")

    def __repr__(self) -> str:
        return f"<mechanism {self.name} n={self.n} [{self.backend}]: {', '.join(self.kernels)}>"

    def params(self, values: dict[str, float] | None = None, **kw: float) -> np.ndarray:
        """The input ``p`` from named values (spec defaults for the others).

        An unknown name, a parameter without a value or default, or a value that is not a
        finite real number raises ValueError naming the parameter.
        """
        if values is not None and not isinstance(values, dict):
            raise ValueError(f"{self.name}: params: expected a dict {{name: value}} or "
                             f"keywords, got {type(values).__name__}")
        return self.parameter_set.vector({**(values or {}), **kw}, "params")

    def parameter_input(self, p: Any, where: str, batch: bool = False) -> np.ndarray:
        """The input ``p`` from None (the spec's defaults), a dict of named values (over the
        defaults) or an array of shape (number of parameters,), or (N, that) if ``batch``."""
        if not self.parameters:
            if p is not None and not (isinstance(p, dict) and not p) and np.size(p) != 0:
                raise ValueError(f"{self.name}: {where}: argument 'p' given, but the mechanism "
                                 f"has no parameters")
            return np.zeros(0)
        if p is None or isinstance(p, dict):
            return self.parameter_set.vector(p, where)
        a = as_input("p", p, len(self.parameters), where)
        if a.ndim != 1 and not batch:
            raise ValueError(f"{where}: argument 'p' must have shape ({len(self.parameters)},), "
                             f"got {a.shape}")
        return a

    def point_jacobian(self, q: Any, body: str, offset: Any, p: Any = None):
        """Jacobians of any point fixed in a body: T_P = T_j - skew(tau_j^T d) R_j, R_P = R_j.

        ``offset`` d is in the body's frame; returns (T_P, R_P), each (3, n) in frame 0.
        """
        if body not in self.bodies:
            raise ValueError(f"{self.name}: point_jacobian: unknown body {body!r}; "
                             f"bodies: {self.bodies}")
        d = as_input("offset", offset, 3, "point_jacobian")
        if d.ndim != 1:
            raise ValueError("point_jacobian: argument 'offset' must have shape (3,)")
        extra = {"p": self.parameter_input(p, "point_jacobian")} if self.parameters else {}
        b = self.bodies.index(body)
        _, tau = self.forward_kinematics(q, **extra)
        T, R = self.jacobians(q, **extra)
        if np.ndim(tau) == 3:
            d0 = tau[b].T @ d
            return T[b] - np.cross(d0[:, None], R[b], axis=0), R[b].copy()
        d0 = np.einsum("kji,j->ki", tau[:, b], d)
        return T[:, b] - np.cross(d0[:, :, None], R[:, b], axis=1), R[:, b].copy()

    def rhs(self, Q: Callable | Any = None, p: Any = None) -> Callable:
        """State derivative f(t, x) = [q_dot, qdd] for scipy.integrate.solve_ivp, x = [q, qd].

        ``Q`` is the drive force: None (zero), a constant array, or a function (t, q, qd).
        ``p``: None (the spec's defaults), a dict of named values, or an array.
        With a quaternion base, q has nq = n + 1 entries and q_dot = qd except for the
        quaternion: quat_dot = 1/2 quat * (0, omega_body), and with a body-twist base also the
        position: xyz_dot = R(quat) v_body (see :meth:`q_dot`).
        """
        n, nq = self.n, self.nq
        fd = self.kernels["forward_dynamics"]
        pv = self.parameter_input(p, "rhs")
        extra = {"p": pv} if self.parameters else {}
        zero = np.zeros(n)
        Qc = None if callable(Q) else (zero if Q is None else as_input("Q", Q, n, "rhs"))

        def f(t: float, x: np.ndarray) -> np.ndarray:
            x = np.ascontiguousarray(x, dtype=np.float64)
            if x.shape != (nq + n,):
                raise ValueError(f"rhs: state x must have shape ({nq + n},), got {x.shape}")
            q, qd = x[:nq], x[nq:]
            Qt = Q(t, q, qd) if Qc is None else Qc
            return np.concatenate([self.q_dot(q, qd), fd(q, qd, Qt, **extra)])

        return f

    def q_dot(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """dq/dt from the velocities: qd itself, except for a quaternion base, whose quaternion
        (w, x, y, z) at q[3:7] moves as 1/2 quat * (0, omega) with omega = qd[3:6] in the
        base's own frame. A body-twist base's position moves as R(quat) v_body, v_body =
        qd[0:3], R = 1 + (2/|quat|^2) (w [u]x + [u]x^2) (any norm, as the kernels read it)."""
        if not self.quaternion_base:
            return qd
        w, x, y, z = q[3:7]
        ox, oy, oz = qd[3:6]
        quat_dot = 0.5 * np.array([-x * ox - y * oy - z * oz, w * ox + y * oz - z * oy,
                                   w * oy + z * ox - x * oz, w * oz + x * oy - y * ox])
        xyz_dot = qd[:3]
        if self.base_velocity == "body":
            xyz_dot = quaternion_rotation(q[3:7]) @ qd[:3]
        return np.concatenate([xyz_dot, quat_dot, qd[6:]])


def quaternion_rotation(quat: np.ndarray) -> np.ndarray:
    """R (body -> frame 0) of a quaternion (w, x, y, z) of any non-zero norm:
    R = 1 + (2/|quat|^2) (w [u]x + [u]x^2), u = (x, y, z)."""
    w, x, y, z = quat
    k = 2.0 / (w * w + x * x + y * y + z * z)
    return np.array([[1 - k * (y * y + z * z), k * (x * y - w * z), k * (x * z + w * y)],
                     [k * (x * y + w * z), 1 - k * (x * x + z * z), k * (y * z - w * x)],
                     [k * (x * z - w * y), k * (y * z + w * x), 1 - k * (x * x + y * y)]])

def read_parameter_defaults(manifest: dict, path: Path) -> dict[str, float | None]:
    """The manifest's ``parameter_defaults`` ({} if absent): a number or null per parameter."""
    defaults = manifest.get("parameter_defaults", {})
    if not isinstance(defaults, dict):
        raise ValueError(f"{path}: 'parameter_defaults' must be an object {{name: value or "
                         f"null}}, got {type(defaults).__name__}")
    unknown = sorted(set(defaults) - set(manifest.get("parameters", [])))
    if unknown:
        raise ValueError(f"{path}: 'parameter_defaults' names unknown parameter(s) {unknown}")
    for name, value in defaults.items():
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not np.isfinite(value)):
            raise ValueError(f"{path}: parameter_defaults.{name} must be a finite number or "
                             f"null, got {value!r}")
    return defaults


def load(name: str | Path, backend: str = "c", generated: str | Path | None = None) -> Mechanism:
    """Load a mechanism's generated kernels with one of the backends it was generated for,
    as listed in its manifest (:func:`available_backends`): ``"c"`` (the default; cffi,
    cached build) or ``"python"`` for the bundled ones. Another backend raises ValueError
    listing the available ones.

    ``name`` is a bundled mechanism's name (looked up in ``generated``, default the bundled
    kernels or ``$MECHGEN_GENERATED``) or a path to a folder holding a ``manifest.json``, as
    written by ``mechgen generate`` (e.g. ``"generated/my_arm"``).
    """
    return Mechanism(mechanism_folder(name, generated), backend)


def available_backends(name: str | Path, generated: str | Path | None = None) -> list[str]:
    """The backends a generated mechanism can be loaded with (its manifest's ``backends``)."""
    folder = mechanism_folder(name, generated)
    return list(backends.listed(json.loads((folder / "manifest.json").read_text()),
                                str(folder / "manifest.json")))


def mechanism_folder(name: str | Path, generated: str | Path | None = None) -> Path:
    """The folder of a generated mechanism: ``name`` as a folder path, or a bundled name
    looked up in ``generated`` (see :func:`load`); ValueError if there is none."""
    if isinstance(name, Path) or (isinstance(name, str) and ("/" in name or "\\" in name
                                                             or name.startswith("."))):
        folder = Path(name)
        if not (folder / "manifest.json").is_file():
            raise ValueError(f"{folder}: not a generated mechanism folder (no manifest.json); "
                             f"run `mechgen generate SPEC --out DIR` and load DIR/<name>")
        return folder
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"mechanism name {name!r} is not a valid name (or a folder path)")
    root = Path(generated) if generated is not None else generated_root()
    folder = root / name
    if not (folder / "manifest.json").exists():
        known = sorted(p.name for p in root.iterdir() if (p / "manifest.json").exists()) \
            if root.exists() else []
        local = Path.cwd() / "generated" / name
        hint = f" (a folder: load('{local}'))" if (local / "manifest.json").exists() else ""
        raise ValueError(f"no generated mechanism {name!r} in {root}{hint}; available: {known}")
    return folder
