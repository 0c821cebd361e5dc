"""Linkwork engine: headless mechanism dynamics.

The engine never imports Qt, pyqtgraph or vispy. Its public surface:

- :mod:`engine.mechfile` -- load, validate and save ``*.mech.json`` files;
- :mod:`engine.model` -- the immutable :class:`~engine.model.Model` built from a file;
- :mod:`engine.topology` -- loops, degrees of freedom, redundant constraints, assembly tree;
- :mod:`engine.simulation` -- :class:`~engine.simulation.Simulation` and its settings;
- :mod:`engine.generators` -- parametric mechanisms (chains, loops, ladders, the papers' cases).
"""

__version__ = "0.1.0"
