"""RSU leg (Hunt): a crank on the base (about z of its joint frame), a spherical joint at its
tip (s1 about y, s2 about z, s3 about the rod, the roll), a rod, a universal joint on C (cut,
m = 4). Closed form: .crank (paper 000 section 4)."""

from .base import JointDef as J
from .crank import CrankLeg

RSU = CrankLeg("RSU", (J("crank", "R", 2), J("s1", "R", 1), J("s2", "R", 2), J("s3", "R", 0)),
               ("crank", "s_body1", "s_body2", "rod"), cut=4, drive="crank",
               pivot_kind="spherical", family="Hunt")
