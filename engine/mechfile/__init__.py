"""Mechanism files (``*.mech.json``): load, validate, save.

The format, with the extensions Linkwork adds, is documented in ``docs/file-format.md``.  A file is
read into a :class:`MechanismSpec` -- plain, immutable Python values that the
GUI editor also manipulates -- and every rule the file breaks is reported as a
:class:`~engine.errors.MechanismError` whose message starts with the JSON path
(``bodies[2].mass: must be > 0 (got -1)``).

The spec describes the mechanism at t = 0 in world coordinates; turning it into
flat arrays for the kernels is :mod:`engine.model`'s job.

- :mod:`.spec`: the spec's dataclasses and the format's names and limits;
- :mod:`.validate`: a parsed document checked rule by rule into a spec (:func:`spec_from_dict`);
- :mod:`.io`: text and files, both ways (:func:`loads`, :func:`load`, :func:`spec_to_dict`,
  :func:`dumps`, :func:`save`).
"""

from .io import dumps, load, loads, save, spec_to_dict
from .spec import (
    COUPLING_TYPES, DRIVER_KINDS, FORCE_TYPES, FORMAT_NAME, FORMAT_VERSION, GROUND, JOINT_TYPES, MAX_MAGNITUDE,
    SHAPE_KINDS,
    BodySpec, Connectivity, CouplingSpec, DriverSpec, ForceSpec, JointSpec, MechanismSpec, MotionSpec, ShapeSpec,
    Vec3,
)
from .validate import SETTINGS_KEYS, spec_from_dict

__all__ = [
    "COUPLING_TYPES", "DRIVER_KINDS", "FORCE_TYPES", "FORMAT_NAME", "FORMAT_VERSION", "GROUND", "JOINT_TYPES",
    "MAX_MAGNITUDE", "SETTINGS_KEYS", "SHAPE_KINDS", "BodySpec", "Connectivity", "CouplingSpec", "DriverSpec",
    "ForceSpec", "JointSpec", "MechanismSpec", "MotionSpec", "ShapeSpec", "Vec3", "dumps", "load", "loads", "save",
    "spec_from_dict", "spec_to_dict",
]
