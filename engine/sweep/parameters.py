"""Parameter paths of a sweep: a JSON path into the mechanism document
(``bodies[2].mass``, ``joints[0].rate``, ``forces[0].stiffness``) or the name of a run
setting (``dt``, ``formulation``, ...)."""

from __future__ import annotations

import re
from typing import Any

#: run settings a sweep may set or vary (engine.simulation.Settings fields, CLI names)
RUN_SETTINGS = ("formulation", "integrator", "dt", "t_end", "rtol", "atol", "penalty", "newton_iters",
                "newton_tol", "threads", "projection", "baumgarte", "tangent_hold", "geometric_stiffness",
                "exact_projections")

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def parse_path(text: str) -> tuple:
    """``"bodies[2].mass"`` -> ``("bodies", 2, "mass")``; raises ValueError."""
    if not isinstance(text, str) or not text:
        raise ValueError("a parameter path must be a non-empty string")
    keys: list = []
    pos = 0
    while pos < len(text):
        if keys and text[pos] == ".":
            pos += 1
        m = _TOKEN.match(text, pos)
        if m is None or (m.group(1) and keys and text[pos - 1] not in "."):
            raise ValueError(f"cannot read {text!r} as a JSON path (e.g. bodies[2].mass, joints[0].rate, dt)")
        keys.append(m.group(1) if m.group(1) else int(m.group(2)))
        pos = m.end()
    if not isinstance(keys[0], str):
        raise ValueError(f"{text!r} must start with a name (bodies, joints, forces, ... or a run setting)")
    return tuple(keys)


def is_setting(path: str) -> bool:
    """A run setting (``dt``) rather than a path into the mechanism (``bodies[0].mass``)."""
    return path in RUN_SETTINGS


def resolve_path(doc: Any, path: str) -> tuple[Any, Any]:
    """The container and key that ``path`` names in the mechanism document ``doc``.

    Every step but the last must exist; the last may be missing from an object (an
    optional field such as ``joints[0].rate``: the loader judges it).  Raises
    ValueError naming the path and the step that does not exist."""
    keys = parse_path(path)
    node = doc
    done = ""
    for n, k in enumerate(keys):
        last = n == len(keys) - 1
        here = f"{done}[{k}]" if isinstance(k, int) else (f"{done}.{k}" if done else k)
        if isinstance(k, int):
            if not isinstance(node, list):
                raise ValueError(f"{path}: {done or '(file)'} is not a list")
            if k >= len(node):
                raise ValueError(f"{path}: {here} does not exist ({done} has {len(node)} element"
                                 f"{'' if len(node) == 1 else 's'}"
                                 f"{', indices 0..' + str(len(node) - 1) if node else ''})")
        else:
            if not isinstance(node, dict):
                raise ValueError(f"{path}: {done or '(file)'} is not an object")
            if k not in node and not last:
                raise ValueError(f"{path}: {here} does not exist in the mechanism file")
        if last:
            return node, k
        node = node[k]
        done = here
    raise AssertionError("unreachable")
