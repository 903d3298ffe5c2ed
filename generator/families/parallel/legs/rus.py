"""RUS leg (Hunt): a crank on the base (about z of its joint frame), a universal joint at its
tip (u1 about y, u2 about z), a rod, a spherical joint on C (cut, m = 3). Closed form: .crank
(paper 000 section 4)."""

from .base import JointDef as J
from .crank import CrankLeg

RUS = CrankLeg("RUS", (J("crank", "R", 2), J("u1", "R", 1), J("u2", "R", 2)),
               ("crank", "yoke", "rod"), cut=3, drive="crank", pivot_kind="universal",
               family="Hunt")
