"""The model of the contact family: two docking units, their contact laws, latches and capture
tolerances (what spec.py builds from a spec, and kernels.py generates from).

The geometry is numeric (baked into the kernels, see geometry.py); the contact and latch laws
may be named parameters (SymPy symbols, elements of the kernel input ``p``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy as sp

from mechgen.generator.families.contact.geometry import PetalShape, Unit
from mechgen.generator.model import prefixed_parameters
from mechgen.generator.numeric import V3


def _symbols(*exprs: sp.Expr) -> set:
    out: set = set()
    for e in exprs:
        out |= sp.sympify(e).free_symbols
    return out


@dataclass(frozen=True)
class ContactLaw:
    """Hunt-Crossley normal force and regularised Coulomb friction of one kind of contact:

        f_n = max(0, k delta^e (1 + d delta_dot)),   V = k delta^(e+1) / (e+1),
        f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_eps^2).
    """

    k: sp.Expr          # N/m^e
    e: sp.Expr          # exponent (1.5: Hertz)
    d: sp.Expr          # s/m
    mu: sp.Expr         # friction coefficient

    def xreplace(self, m: dict) -> "ContactLaw":
        ex = lambda x: sp.sympify(x).xreplace(m)
        return ContactLaw(ex(self.k), ex(self.e), ex(self.d), ex(self.mu))

    def symbols(self) -> set:
        return _symbols(self.k, self.e, self.d, self.mu)


@dataclass(frozen=True)
class Latches:
    """Zero-rest-length spring-dampers between a_k (D_A) and b_k (D_P), on when latched."""

    points: tuple[tuple[V3, V3], ...]
    k: sp.Expr          # N/m
    c: sp.Expr          # N s/m

    def xreplace(self, m: dict) -> "Latches":
        return replace(self, k=sp.sympify(self.k).xreplace(m), c=sp.sympify(self.c).xreplace(m))

    def symbols(self) -> set:
        return _symbols(self.k, self.c)


@dataclass(frozen=True)
class Capture:
    """Capture tolerances; the angles are compared through the sines of their halves."""

    gap_tol: float              # m, |r_z|
    lateral_tol: float          # m, sqrt(r_x^2 + r_y^2)
    tilt_tol: float             # deg, angle between z_P and -z_A
    roll_tol: float             # deg, twist of D_P about its axis from the aligned pose
    sin_half_tilt: float        # sin(tilt_tol / 2), rounded once
    sin_half_roll: float


@dataclass
class Interface:
    name: str
    shape: PetalShape
    active: Unit                # in D_A
    passive: Unit               # in D_P
    R_in: float                 # ring face annulus, both units
    R_out: float
    petal_law: ContactLaw       # edge-edge and tip-face contacts
    ring_law: ContactLaw        # stop pads on the ring faces
    v_eps: sp.Expr              # m/s, friction regularisation
    latches: Latches
    capture: Capture
    source: str = "<python>"
    defaults: dict[str, float] = field(default_factory=dict)
    fields: dict = field(default_factory=dict)     # the geometry as read (for the manifest)

    @property
    def parameters(self) -> list[sp.Symbol]:
        syms = (self.petal_law.symbols() | self.ring_law.symbols() | _symbols(self.v_eps)
                | self.latches.symbols())
        return sorted(syms, key=lambda s: s.name)

    def with_prefixed_parameters(self) -> "Interface":
        """Parameter ``x`` renamed ``p_x`` everywhere (the generated code's names)."""
        m = prefixed_parameters(self.parameters, {}, self.source)
        if not m:
            return self
        return replace(self, petal_law=self.petal_law.xreplace(m),
                       ring_law=self.ring_law.xreplace(m),
                       v_eps=sp.sympify(self.v_eps).xreplace(m),
                       latches=self.latches.xreplace(m))
