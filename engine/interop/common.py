"""What MJCF import and export share (docs/import.md).

A Linkwork joint that MJCF writes as several elements -- a universal joint (two hinges),
a cylindrical joint (a hinge and a slide), a revolute loop-closing joint (two
``connect`` equalities) -- gets element names ``NAME.1`` and ``NAME.2``; the importer
gives the pair back its name ``NAME``.
"""

from __future__ import annotations

import numpy as np

from ..errors import LinkworkError

#: the extra that brings MuJoCo (pyproject's optional-dependencies)
INSTALL_HINT = "pip install 'linkwork[import]'"
#: the keyframe in which ``linkwork export --mjcf`` writes initial joint rates
RATES_KEYFRAME = "initial"
#: ``<custom><text>`` elements by which ``linkwork export`` keeps what MJCF cannot say and
#: ``linkwork import`` restores (MuJoCo ignores them): the name of a fixed tree joint, which
#: a body without joints cannot carry (``FIXED_NAME + child body`` -> the name); the joints
#: the file marks ``cut`` (``CUT_MARKS``: a JSON list of names; its presence says the list is
#: complete); the rates of loop-closing joints, which MJCF's equalities cannot carry
#: (``LOOP_RATES``: a JSON object, name -> rates)
FIXED_NAME = "linkwork.fixed-joint."
CUT_MARKS = "linkwork.cut-joints"
LOOP_RATES = "linkwork.loop-rates"


class InteropError(LinkworkError):
    """A model file that cannot become a mechanism (or a mechanism that cannot be
    written): one line saying why, exit status 2 on the command line."""


def part_names(name: str) -> tuple[str, str]:
    """The names of the two MJCF elements of Linkwork joint ``name``."""
    return f"{name}.1", f"{name}.2"


def joined_name(first: str, second: str) -> str:
    """The Linkwork name of a joint made of two MJCF elements (inverse of :func:`part_names`)."""
    if first.endswith(".1") and second == first[:-2] + ".2" and len(first) > 2:
        return first[:-2]
    return f"{first}+{second}"


def quat_to_mat(q) -> np.ndarray:
    """Rotation matrix of the unit quaternion ``q`` = (w, x, y, z)."""
    w, x, y, z = (float(v) for v in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_mul(a, b) -> np.ndarray:
    """The quaternion product ``a b`` (rotation ``b`` first, then ``a``)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def quat_conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=float)


def fmt_names(names, limit: int = 8) -> str:
    """``'a', 'b', 'c'`` -- at most ``limit`` names, then how many more."""
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
