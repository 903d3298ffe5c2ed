"""A loaded mechanism: its manifest, its kernels as attributes, and helpers built on them."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from runtime.kernel import Kernel, as_input

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
        self.n: int = self.manifest["n"]
        self.coordinates: list[str] = self.manifest["coordinates"]
        self.parameters: list[str] = self.manifest["parameters"]
        self.bodies: list[str] = self.manifest["bodies"]
        self.points: list[str] = self.manifest["points"]
        if backend == "c":
            from runtime.cbuild import load_c
            mod = load_c(folder, self.manifest)
            make = lambda m: Kernel(m, "c", c_lib=mod.lib, ffi=mod.ffi)
        else:
            path = folder / f"{self.name}.py"
            spec = importlib.util.spec_from_file_location(f"mechgen_generated_{self.name}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            make = lambda m: Kernel(m, "python", py_func=mod.KERNELS[m["name"]])
        self.kernels: dict[str, Kernel] = {m["name"]: make(m) for m in self.manifest["kernels"]}

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"mechanism {self.__dict__.get('name')!r} has no kernel {name!r}; "
                             f"kernels: {', '.join(kernels)}")

    def __repr__(self) -> str:
        return f"<mechanism {self.name} n={self.n} [{self.backend}]: {', '.join(self.kernels)}>"

    def params(self, values: dict[str, float] | None = None, **kw: float) -> np.ndarray:
        """The input ``p`` from named values (spec defaults for the others); no unknown one."""
        values = {**self.manifest.get("parameter_defaults", {}), **(values or {}), **kw}
        unknown = set(values) - set(self.parameters)
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {sorted(unknown)}; "
                             f"parameters: {self.parameters}")
        missing = [p for p in self.parameters if p not in values]
        if missing:
            raise ValueError(f"{self.name}: missing parameter(s) {missing}")
        return np.array([float(values[p]) for p in self.parameters])

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
        extra = {"p": p if not isinstance(p, dict) else self.params(p)} if self.parameters else {}
        b = self.bodies.index(body)
        _, tau = self.forward_kinematics(q, **extra)
        T, R = self.jacobians(q, **extra)
        if np.ndim(tau) == 3:
            d0 = tau[b].T @ d
            return T[b] - np.cross(d0[:, None], R[b], axis=0), R[b].copy()
        d0 = np.einsum("kji,j->ki", tau[:, b], d)
        return T[:, b] - np.cross(d0[:, :, None], R[:, b], axis=1), R[:, b].copy()

    def rhs(self, Q: Callable | Any = None, p: Any = None) -> Callable:
        """State derivative f(t, x) = [qd, qdd] for scipy.integrate.solve_ivp, x = [q, qd].

        ``Q`` is the drive force: None (zero), a constant array, or a function (t, q, qd).
        """
        n = self.n
        fd = self.kernels["forward_dynamics"]
        extra = {}
        if p is not None and not self.parameters:
            raise ValueError(f"{self.name}: rhs: argument 'p' given, but the mechanism has no "
                             f"parameters")
        if self.parameters:
            extra["p"] = as_input("p", p if not isinstance(p, dict) else self.params(p),
                                  len(self.parameters), "rhs")
        zero = np.zeros(n)
        Qc = None if callable(Q) else (zero if Q is None else as_input("Q", Q, n, "rhs"))

        def f(t: float, x: np.ndarray) -> np.ndarray:
            x = np.ascontiguousarray(x, dtype=np.float64)
            if x.shape != (2 * n,):
                raise ValueError(f"rhs: state x must have shape ({2 * n},), got {x.shape}")
            q, qd = x[:n], x[n:]
            Qt = Q(t, q, qd) if Qc is None else Qc
            return np.concatenate([qd, fd(q, qd, Qt, **extra)])

        return f


def load(name: str, backend: str = "c", generated: str | Path | None = None) -> Mechanism:
    """Load ``generated/<name>/`` with backend ``"c"`` (cffi, cached build) or ``"python"``."""
    if backend not in ("c", "python"):
        raise ValueError(f"backend must be 'c' or 'python', got {backend!r}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"mechanism name {name!r} is not a valid name")
    root = Path(generated) if generated is not None else generated_root()
    folder = root / name
    if not (folder / "manifest.json").exists():
        known = sorted(p.name for p in root.iterdir() if (p / "manifest.json").exists()) \
            if root.exists() else []
        raise ValueError(f"no generated mechanism {name!r} in {root}; available: {known}")
    return Mechanism(folder, backend)
