"""Docking simulations.

- :mod:`.ground`: the ground test: the ring already latched to a mass on a fixed base, 1 g
  (solve_ivp over the generated ``step`` kernel);
- :mod:`.scenario`: a docking scenario file (two vehicles, the mechanism, the interface, the
  envelope of a campaign), read and checked;
- :mod:`.csim`: the compiled simulation (C right-hand side, Dormand-Prince, events) over a
  batch of cases; :mod:`.reference`: the same equations in numpy with scipy's solve_ivp;
- :mod:`.report`: summaries and plots; :mod:`.cli`: ``mechgen dock``.
"""

from mechgen.runtime.docking.ground import Capture, drive_units, plot, simulate, summary

__all__ = ["Capture", "drive_units", "plot", "simulate", "summary"]
