"""SPU leg (Gough-Stewart): a spherical joint on the base (s1 about y, s2 about z, s3 about
the leg, the roll), a stroke along the leg, a universal joint on C (cut, m = 4). Closed form:
.prismatic (paper 000 section 4)."""

from .base import JointDef as J
from .prismatic import PrismaticLeg

SPU = PrismaticLeg("SPU", (J("s1", "R", 1), J("s2", "R", 2), J("s3", "R", 0),
                           J("stroke", "P", 0)),
                   ("s_body1", "s_body2", "cylinder", "piston"), cut=4, drive="stroke",
                   pivot_kind="spherical", family="Gough-Stewart")
