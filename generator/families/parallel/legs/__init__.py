"""The leg types of a parallel mechanism, one module each, and their registry.

Everything the generator knows about a kind of leg (joints, bodies, cut, default drive, spec
fields, home frames, closed-form inverse kinematics, statuses) is in its module; the rest of
the generator reads it from :data:`LEG_TYPES` (see :mod:`.base`). A new leg type is a module
here and its entry in LEG_TYPES below. From the base to C (U = rotations y then z, S = y, z,
x; P a slide):

    UPS  u1 u2 stroke              S cut   Gough-Stewart   .ups  (.prismatic)
    SPU  s1 s2 s3 stroke           U cut   Gough-Stewart   .spu  (.prismatic)
    UCU  u1 u2 roll stroke         U cut   Gough-Stewart   .ucu  (.prismatic)
    RUS  crank u1 u2               S cut   Hunt            .rus  (.crank)
    RSU  crank s1 s2 s3            U cut   Hunt            .rsu  (.crank)
    PUS  slide u1 u2               S cut   hexaglide       .pus
"""

from __future__ import annotations

from .base import OUT_OF_REACH, SINGULAR, Field, HomeFrames, JointDef, LegType
from .pus import PUS
from .rsu import RSU
from .rus import RUS
from .spu import SPU
from .ucu import UCU
from .ups import UPS

LEG_TYPES: dict[str, LegType] = {t.name: t for t in (UPS, SPU, UCU, RUS, RSU, PUS)}

__all__ = ["LEG_TYPES", "LegType", "JointDef", "Field", "HomeFrames", "OUT_OF_REACH",
           "SINGULAR"]
