"""Analyses of a mechanism beside its simulation: static equilibrium and vibration modes
(``equilibrium``, ``modes``, with their commands in ``cli``), and the further analyses kept
in this package."""
