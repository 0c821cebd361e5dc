"""Parametric mechanisms: the papers' test cases and families used by the GUI.

Every function returns a validated :class:`~engine.mechfile.MechanismSpec` in
SI units with gravity along -y.  Geometry that the papers describe only in
figures lost in extraction (paper 001's loops, paper 002's five-bar and
ladder) is our own choice, documented in ``docs/examples.md``.

The modules, one family each:

- :mod:`.parts`: building blocks (vectors, rod bodies and inertias, joints,
  :func:`finish`, the quaternion of a rotation);
- :mod:`.chains`: serial chains (:func:`chain`, paper 000's chains);
- :mod:`.loops`: closed loops (four-bar, loops between ground pivots, double loop,
  five-bar, ladder);
- :mod:`.geared`: gear couplings (geared pendulum, arm and four-bar);
- :mod:`.joint_types`: the slider-crank and the joint zoo;
- :mod:`.driven`: drivers (the slider-crank turned by a motor);
- :mod:`.rotating`: planar loops whose plane turns;
- :mod:`.randomised`: :func:`random_mechanism`, :func:`random_planar_mechanism`;
- :mod:`.catalogue`: :func:`paper_cases`, :func:`demo_cases` and :func:`write_examples`
  (``python -m linkwork.engine.generators [DIR]`` writes the examples).
"""

from __future__ import annotations

from .catalogue import ADAPTIVE, demo_cases, paper_cases, write_examples
from .chains import chain, paper000_chain, spatial_double_pendulum
from .driven import driven_slider_crank
from .geared import geared_arm, geared_fourbar, geared_pendulum
from .joint_types import joint_zoo, slider_crank
from .loops import closed_loop, double_loop, fivebar, fourbar, ladder
from .parts import G, UNIT_INERTIA, finish, joint_spec, quat_from_rotation, rod_body, rod_inertia, vec
from .randomised import random_mechanism, random_planar_mechanism
from .rotating import spinning_arm_fourbar, turntable_fourbar

__all__ = [
    "ADAPTIVE", "G", "UNIT_INERTIA",
    "chain", "closed_loop", "demo_cases", "double_loop", "driven_slider_crank", "finish", "fivebar", "fourbar",
    "geared_arm", "geared_fourbar", "geared_pendulum", "joint_spec", "joint_zoo", "ladder", "paper000_chain",
    "paper_cases", "quat_from_rotation", "random_mechanism", "random_planar_mechanism", "rod_body", "rod_inertia",
    "slider_crank", "spatial_double_pendulum", "spinning_arm_fourbar", "turntable_fourbar", "vec", "write_examples",
]
