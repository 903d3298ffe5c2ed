"""UPS leg (Gough-Stewart): a universal joint on the base (u1 about y, u2 about z), a stroke
along the leg, a spherical joint on C (cut, m = 3). Closed form: .prismatic (paper 000
section 4)."""

from .base import JointDef as J
from .prismatic import PrismaticLeg

UPS = PrismaticLeg("UPS", (J("u1", "R", 1), J("u2", "R", 2), J("stroke", "P", 0)),
                   ("yoke", "cylinder", "piston"), cut=3, drive="stroke",
                   pivot_kind="universal", family="Gough-Stewart")
