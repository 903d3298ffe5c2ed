"""The kernels of a docking interface (the contact family), each usable alone.

Two units meet: the ACTIVE one (frame D_A, on the docking ring) and the PASSIVE one (frame
D_P, on the target vehicle); geometry.py describes a unit, primitives.py the contact pairs.
Inputs, all in D_A: ``r`` the origin of D_P, ``R`` the rotation D_P -> D_A (v_A = R v_P,
row-major), ``v`` the velocity of the passive body's point at r minus the active body's,
``w`` the angular velocity of the passive body minus the active body's, ``latched`` (0 or 1)
and ``p`` the named parameters. The relative velocity at x is v + w x (x - r).

Contact pairs, in this order (the rows of ``contact_pairs``):

    36 edge-edge    every active side edge against every passive one: A<i><m|p>_P<j><m|p>
     9 apex-plate   active apex i against passive plate j: TA<i>_P<j>
     9 apex-plate   passive apex j against active plate i: TP<j>_A<i>
     6 pad-face     active pads on the passive face (padA<k>), passive pads on the active
                    face (padP<k>)

plus three latches. :class:`InterfaceBuild` computes each part once, on demand, on one
recorder; a kernel is the parts its outputs need.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy as sp

from mechgen.generator.families.contact import geometry as geo
from mechgen.generator.families.contact.interface import Interface
from mechgen.generator.families.contact.primitives import (TINY_LENGTH, Contact, Load, Pose,
                                                           apex_plate, const, const3,
                                                           contact_load, formula, latch_load,
                                                           pad_face, segment_segment)
from mechgen.generator.family import Family
from mechgen.generator.ir import Kernel, Port, symbol
from mechgen.generator.scalar import Recorder, Vec, add, cross, scale, sub

PORT_DOCS = {
    "r": "position of the origin of D_P (m, D_A)",
    "R": "rotation D_P -> D_A, row-major; its columns are D_P's axes in D_A (v_A = R v_P)",
    "v": "velocity of the passive body's point at r minus that of the active body's point "
         "at r (m/s, D_A)",
    "w": "angular velocity of the passive body minus that of the active body (rad/s, D_A)",
    "latched": "1: the latches are engaged, 0: open (a factor on the latch forces)",
}
ELEMENTS = {
    "r": ["r_x", "r_y", "r_z"],
    "R": [f"R_{i}{j}" for i in range(3) for j in range(3)],
    "v": ["v_x", "v_y", "v_z"],
    "w": ["w_x", "w_y", "w_z"],
    "latched": ["is_latched"],
}
SHAPES = {"r": (3,), "R": (3, 3), "v": (3,), "w": (3,), "latched": (1,)}
OUTPUT_NAMES = {"f_P", "m_P", "f_A", "m_A", "V", "P_diss", "gap", "f_normal", "capture_margin",
                "margins", "f_normal_by_kind", "distance", "normal", "point", "active", "p"}
KINDS = ("edge-edge", "apex-plate", "pad-face")


def ports(model: Interface, names: list[str]) -> tuple[Port, ...]:
    out = [Port(nm, SHAPES[nm], tuple(symbol(s) for s in ELEMENTS[nm]),
                f"{PORT_DOCS[nm]}, shape {SHAPES[nm]}: {', '.join(ELEMENTS[nm])}")
           for nm in names if nm != "p"]
    if "p" not in names or not model.parameters:
        return tuple(out)
    params = model.parameters
    out.append(Port("p", (len(params),), tuple(params),
                    f"named spec parameters, shape ({len(params)},), in this order: "
                    + ", ".join(s.name[2:] for s in params)))
    return tuple(out)


@dataclass(frozen=True)
class Pair:
    label: str
    kind: int               # index into KINDS
    contact: Contact


def pair_labels(model: Interface) -> list[tuple[str, int]]:
    """(label, kind) of every contact pair, in the order of the kernels' rows."""
    na, np_ = len(model.active.petals), len(model.passive.petals)
    out = [(f"A{i + 1}{a}_P{j + 1}{b}", 0) for i in range(na) for a in geo.EDGE_LABELS
           for j in range(np_) for b in geo.EDGE_LABELS]
    out += [(f"TA{i + 1}_P{j + 1}", 1) for i in range(na) for j in range(np_)]
    out += [(f"TP{j + 1}_A{i + 1}", 1) for j in range(np_) for i in range(na)]
    out += [(f"padA{k + 1}", 2) for k in range(len(model.active.pads))]
    out += [(f"padP{k + 1}", 2) for k in range(len(model.passive.pads))]
    return out


class InterfaceBuild:
    """The parts of one evaluation, each computed once on first use."""

    def __init__(self, model: Interface, ins: tuple[Port, ...]) -> None:
        self.m = model
        self.inp = {p.name: list(p.elements) for p in ins}
        reserved = {str(s) for p in ins for s in p.elements} | OUTPUT_NAMES | set(ELEMENTS)
        self.rec = Recorder(reserved=reserved)
        R = self.inp["R"]
        self.pose = Pose(self.inp["r"], [R[0:3], R[3:6], R[6:9]], self.inp.get("v"),
                         self.inp.get("w"))
        self.r_edge = const(model.shape.r_edge)

    # --- the passive unit seen from D_A, the active one from D_P ---------------------------
    @cached_property
    def passive_vertices(self) -> list[dict[str, Vec]]:
        """B-, B+, T of each passive petal in D_A: r + R x_P."""
        out = []
        for j, pet in enumerate(self.m.passive.petals):
            with self.rec.named(f"P{j + 1}_"):
                out.append({"m": self.pose.to_active(self.rec, const3(pet.base_minus), "Bm"),
                            "p": self.pose.to_active(self.rec, const3(pet.base_plus), "Bp"),
                            "T": self.pose.to_active(self.rec, const3(pet.apex), "T")})
        return out

    @cached_property
    def passive_edge_vectors(self) -> list[dict[str, Vec]]:
        out = []
        for j, verts in enumerate(self.passive_vertices):
            with self.rec.named(f"P{j + 1}_"):
                out.append({b: self.rec.vec(sub(verts["T"], verts[b]), f"d{b}")
                            for b in geo.EDGE_LABELS})
        return out

    @cached_property
    def passive_normals(self) -> list[Vec]:
        """The unit normal of each passive plate in D_A: R n_P."""
        out = []
        for j, pet in enumerate(self.m.passive.petals):
            with self.rec.named(f"P{j + 1}_"):
                out.append(self.pose.rotate(self.rec, const3(pet.plate.normal), "n"))
        return out

    @cached_property
    def active_apexes_in_P(self) -> list[Vec]:
        out = []
        for i, pet in enumerate(self.m.active.petals):
            with self.rec.named(f"A{i + 1}_"):
                out.append(self.pose.to_passive(self.rec, const3(pet.apex), "T_P"))
        return out

    # --- the pairs ----------------------------------------------------------------------------
    def _edge_pairs(self) -> list[Contact]:
        out = []
        for i, pa in enumerate(self.m.active.petals):
            for a, (base, apex) in zip(geo.EDGE_LABELS, pa.edges):
                d1 = geo.exact_sub(apex, base)
                for j, pp in enumerate(self.m.passive.petals):
                    for b, (base_P, apex_P) in zip(geo.EDGE_LABELS, pp.edges):
                        d2_P = geo.exact_sub(apex_P, base_P)
                        with self.rec.named(f"A{i + 1}{a}_P{j + 1}{b}_"):
                            out.append(segment_segment(
                                self.rec, const3(base), const3(d1), const(geo.exact_dot(d1, d1)),
                                self.passive_vertices[j][b], self.passive_edge_vectors[j][b],
                                const(geo.exact_dot(d2_P, d2_P)), self.r_edge))
        return out

    def _apex_pairs(self) -> list[Contact]:
        out = []
        for i, pa in enumerate(self.m.active.petals):
            for j, pp in enumerate(self.m.passive.petals):
                with self.rec.named(f"TA{i + 1}_P{j + 1}_"):
                    out.append(apex_plate(self.rec, self.active_apexes_in_P[i], const3(pa.apex),
                                          pp.plate, self.passive_normals[j], False, self.r_edge))
        for j, pp in enumerate(self.m.passive.petals):
            for i, pa in enumerate(self.m.active.petals):
                apex = self.passive_vertices[j]["T"]
                with self.rec.named(f"TP{j + 1}_A{i + 1}_"):
                    out.append(apex_plate(self.rec, apex, apex, pa.plate,
                                          const3(pa.plate.normal), True, self.r_edge))
        return out

    def _pad_pairs(self) -> list[Contact]:
        out = []
        R_in, R_out = const(self.m.R_in), const(self.m.R_out)
        z_P = [row[2] for row in self.pose.R]               # D_P's z axis in D_A
        for k, pad in enumerate(self.m.active.pads):
            with self.rec.named(f"padA{k + 1}_"):
                y = self.pose.to_passive(self.rec, const3(pad), "y")
                out.append(pad_face(self.rec, y, const3(pad), z_P, False, R_in, R_out))
        for k, pad in enumerate(self.m.passive.pads):
            with self.rec.named(f"padP{k + 1}_"):
                y = self.pose.to_active(self.rec, const3(pad), "y")
                out.append(pad_face(self.rec, y, y, const3((0.0, 0.0, 1.0)), True, R_in, R_out))
        return out

    @cached_property
    def pairs(self) -> list[Pair]:
        contacts = self._edge_pairs() + self._apex_pairs() + self._pad_pairs()
        return [Pair(label, kind, c) for (label, kind), c in zip(pair_labels(self.m), contacts)]

    # --- loads ----------------------------------------------------------------------------
    @cached_property
    def loads(self) -> list[tuple[int, Load]]:
        """(kind, load) of every pair, then (-1, load) of every latch."""
        m = self.m
        laws = (m.petal_law, m.petal_law, m.ring_law)
        out = []
        for pair in self.pairs:
            with self.rec.named(f"{pair.label}_"):
                out.append((pair.kind, contact_load(self.rec, self.pose, pair.contact,
                                                    laws[pair.kind], m.v_eps)))
        latched = self.inp["latched"][0]
        for k, (a, b_P) in enumerate(m.latches.points):
            with self.rec.named(f"latch{k + 1}_"):
                out.append((-1, latch_load(self.rec, self.pose, a, b_P, m.latches.k,
                                           m.latches.c, latched)))
        return out

    def total(self, terms: list, name: str) -> sp.Expr:
        return formula(self.rec, sp.Add(*terms), name)

    @cached_property
    def wrench(self) -> tuple[Vec, Vec]:
        """(f_P, m_P about r) of all contacts and latches."""
        loads = [ld for _, ld in self.loads]
        f = [self.total([ld.force[i] for ld in loads], f"fP_{'xyz'[i]}") for i in range(3)]
        mo = [self.total([ld.moment[i] for ld in loads], f"mP_{'xyz'[i]}") for i in range(3)]
        return f, mo

    @cached_property
    def gap(self) -> sp.Expr:
        """The smallest signed distance over the pairs whose gate is on (edges always): a
        running minimum g <- min(g, gate d + (1 - gate) g), exact for a gate of 0 or 1."""
        rec, smallest = self.rec, None
        for pair in self.pairs:
            d, gate = pair.contact.distance, pair.contact.gate
            if smallest is None:
                smallest = d
            elif gate == 1:
                smallest = formula(rec, sp.Min(smallest, d), "gap_run")
            else:
                smallest = formula(rec, sp.Min(smallest, gate * d + (1 - gate) * smallest),
                                   "gap_run")
        return smallest

    @cached_property
    def margins(self) -> list[sp.Expr]:
        """Normalised capture margins (tol - err) / tol, each compared as the spec says:

            axial    |r_z|                         <= gap_tol
            lateral  sqrt(r_x^2 + r_y^2)           <= lateral_tol
            tilt     sin(theta / 2) = |z_P + z_A| / 2          <= sin(tilt_tol / 2)
            roll     |sin(phi / 2)| = |(x, y) / rho - (1, 0)| / 2 <= sin(roll_tol / 2)

        theta is the angle between z_P and -z_A; phi the twist of Q = diag(1, -1, -1) R (D_P
        against its aligned pose) about its axis: tan phi = (Q_10 - Q_01) / (Q_00 + Q_11),
        so (x, y) = (R_00 - R_11, -(R_01 + R_10)), rho = |(x, y)|. Both half-angle sines are
        chords (no acos, no cancellation at small angles) and grow monotonically to 180 deg.
        """
        rec, cap = self.rec, self.m.capture
        (rx, ry, rz), R = self.pose.r, self.pose.R
        axial = formula(rec, 1 - sp.Abs(rz) / const(cap.gap_tol), "margin_axial")
        lateral = formula(rec, 1 - sp.sqrt(rx ** 2 + ry ** 2) / const(cap.lateral_tol),
                          "margin_lateral")
        chord = formula(rec, sp.sqrt(R[0][2] ** 2 + R[1][2] ** 2 + (1 + R[2][2]) ** 2),
                        "tilt_chord")
        tilt = formula(rec, 1 - chord / (2 * const(cap.sin_half_tilt)), "margin_tilt")
        x = formula(rec, R[0][0] - R[1][1], "roll_x")
        y = formula(rec, -(R[0][1] + R[1][0]), "roll_y")
        rho = formula(rec, sp.sqrt(x ** 2 + y ** 2), "roll_rho")
        half = formula(rec, sp.sqrt((x - rho) ** 2 + y ** 2) / (2 * sp.Max(rho, TINY_LENGTH)),
                       "roll_half_sine")
        roll = formula(rec, 1 - half / const(cap.sin_half_roll), "margin_roll")
        return [axial, lateral, tilt, roll]


def _pair_order(model: Interface) -> str:
    return ", ".join(label for label, _ in pair_labels(model))


def contact(model: Interface) -> Kernel:
    """The contact and latch loads, energy, dissipation, gap and capture margin."""
    ins = ports(model, ["r", "R", "v", "w", "latched", "p"])
    b = InterfaceBuild(model, ins)
    f_P, m_P = b.wrench
    r = b.pose.r
    m_A = [-x for x in add(m_P, cross(r, f_P))]
    loads = b.loads
    V = b.total([ld.energy for _, ld in loads], "V_total")
    P = b.total([ld.dissipation for _, ld in loads], "P_total")
    by_kind = [b.total([ld.normal_force for kind, ld in loads if kind == k],
                       f"f_normal_{name.replace('-', '_')}") for k, name in enumerate(KINDS)]
    f_normal = b.total(by_kind, "f_normal_total")
    margins = b.margins
    capture = formula(b.rec, sp.Min(*margins), "capture")
    n = len(b.pairs)
    outs = [
        Port("f_P", (3,), tuple(f_P), "force of all contacts and latches on the passive body "
             "(N, D_A), shape (3,)"),
        Port("m_P", (3,), tuple(m_P), "their moment on the passive body about D_P's origin r "
             "(N m, D_A), shape (3,)"),
        Port("f_A", (3,), tuple(-x for x in f_P), "force on the active body, -f_P (N, D_A), "
             "shape (3,)"),
        Port("m_A", (3,), tuple(m_A), "moment on the active body about D_A's origin, "
             "-(m_P + r x f_P) (N m, D_A), shape (3,)"),
        Port("V", (1,), (V,), "elastic energy stored in the contacts, k delta^(e+1)/(e+1) "
             "each, and the latches, latched k |b - a|^2 / 2 each (J), shape (1,)"),
        Port("P_diss", (1,), (P,), "power dissipated by contact damping, friction and the "
             "latch dampers (W, >= 0), shape (1,)"),
        Port("gap", (1,), (b.gap,), f"smallest signed distance over the {n} contact pairs "
             "whose region test passes (m; negative: penetration), shape (1,)"),
        Port("f_normal", (1,), (f_normal,), "sum of the normal force magnitudes of all "
             "contacts (N), shape (1,)"),
        Port("capture_margin", (1,), (capture,), "min of the four margins: capture is "
             "possible when it is > 0, shape (1,)"),
        Port("margins", (4,), tuple(margins), "normalised capture margins (tol - err) / tol, "
             "shape (4,): axial gap |r_z|, lateral offset, tilt (sin of half the angle "
             "between z_P and -z_A), roll (sin of half the twist about the axis)"),
        Port("f_normal_by_kind", (3,), tuple(by_kind), "f_normal split by kind of pair (N), "
             "shape (3,): edge-edge, apex-plate, pad-face"),
    ]
    return Kernel("contact", "Contact (Hunt-Crossley, regularised Coulomb friction) and latch "
                  "(spring-damper) loads between the active and passive docking units, their "
                  "elastic energy and dissipated power, the smallest gap and the capture "
                  "margin.", ins, tuple(outs), tuple(b.rec.statements), {})


def contact_pairs(model: Interface) -> Kernel:
    """The geometry of every contact pair (a diagnostic kernel: no velocities, no laws)."""
    ins = ports(model, ["r", "R"])
    b = InterfaceBuild(model, ins)
    pairs = b.pairs
    n = len(pairs)
    order = f"rows in this order: {_pair_order(model)}"
    outs = [
        Port("distance", (n,), tuple(p.contact.distance for p in pairs), "signed distance of "
             "each pair's surfaces (m; negative: penetration), shape "
             f"({n},); {order}"),
        Port("normal", (n, 3), tuple(x for p in pairs for x in p.contact.normal), "unit normal "
             f"of each pair, the direction of the force on the passive body (D_A), shape ({n}, "
             "3), rows as distance"),
        Port("point", (n, 3), tuple(x for p in pairs for x in p.contact.point), "contact point "
             f"of each pair, midway between the surfaces (m, D_A), shape ({n}, 3), rows as "
             "distance"),
        Port("active", (n,), tuple(p.contact.gate for p in pairs), "1 where the pair's region "
             "test passes (edge-edge: always; apex-plate: the projection inside the triangle; "
             "pad-face: on the face annulus), 0 where it fails by more than 1e-15 (a ramp in "
             f"between), shape ({n},), rows as distance"),
    ]
    return Kernel("contact_pairs", "Geometry of every contact pair: signed distance, normal, "
                  "contact point and region test (closed forms: segment-segment closest "
                  "points, apex-plate barycentric test, pad-face plane).", ins, tuple(outs),
                  tuple(b.rec.statements), {})


BUILDERS = (contact, contact_pairs)


def _v(x: tuple) -> list[float]:
    return [float(c) for c in x]


def manifest(model: Interface) -> dict:
    """What the runtime (and a user) reads of a docking interface."""
    def unit(u: geo.Unit) -> dict:
        return {"petals": [{"azimuth": p.azimuth, "base_minus": _v(p.base_minus),
                            "base_plus": _v(p.base_plus), "apex": _v(p.apex)}
                           for p in u.petals],
                "pads": [_v(x) for x in u.pads]}
    return {
        "n": 0,
        "coordinates": [],
        "parameters": [s.name for s in model.parameters],
        "parameter_defaults": {s.name: model.defaults[s.name] for s in model.parameters},
        "gravity": [0.0, 0.0, 0.0],
        "gravity_input": False,
        "bodies": [],
        "points": [],
        "geometry": model.fields,
        "units": {"active": unit(model.active), "passive": unit(model.passive)},
        "latch_points": [{"active": _v(a), "passive": _v(b)} for a, b in model.latches.points],
        "pairs": [{"label": label, "kind": KINDS[kind]} for label, kind in pair_labels(model)],
    }


def summary(model: Interface) -> str:
    counts = [sum(1 for _, k in pair_labels(model) if k == i) for i in range(len(KINDS))]
    return (f"{model.name} (contact: " + ", ".join(f"{c} {k}" for c, k in zip(counts, KINDS))
            + f" pairs, {len(model.latches.points)} latches)")


CONTACT = Family("contact", Interface, BUILDERS, manifest, summary)
