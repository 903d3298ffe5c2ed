"""UCU leg (Gough-Stewart): a universal joint on the base (u1 about y, u2 about z), a
cylindrical joint along the leg (roll about it, then the stroke), a universal joint on C (cut,
m = 4). Closed form: .prismatic (paper 000 section 4)."""

from .base import JointDef as J
from .prismatic import PrismaticLeg

UCU = PrismaticLeg("UCU", (J("u1", "R", 1), J("u2", "R", 2), J("roll", "R", 0),
                           J("stroke", "P", 0)),
                   ("yoke", "cylinder", "sleeve", "piston"), cut=4, drive="stroke",
                   pivot_kind="universal", family="Gough-Stewart")
