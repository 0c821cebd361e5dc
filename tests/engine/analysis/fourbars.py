"""Planar four-bars drawn from their link lengths, for the assembly and mobility tests."""

import numpy as np


def _rot_inertia(p0, p1):
    """Principal inertia of a thin rod along p1 - p0 in world axes (its orientation is identity)."""
    d = np.asarray(p1, float) - np.asarray(p0, float)
    L = float(np.linalg.norm(d))
    u = d / L
    I = (np.eye(3) - np.outer(u, u)) * L * L / 12.0 + 1e-4 * np.eye(3)
    return I.tolist()


def four_bar(ground, crank, coupler, rocker, theta=1.0):
    """A four-bar's mechanism dict: ground pivots O = (0, 0) and Q = (ground, 0), crank
    O-A at angle ``theta`` (or the first angle from there where the loop closes), coupler
    A-B, rocker B-Q, B on the upper branch.  When no angle closes the loop, B is drawn
    ``coupler`` from A towards Q and the rocker's own end, ``rocker`` from Q towards B, is
    the joint's ``child_anchor``: a rough drawing with a gap at J3."""
    O, Q = np.zeros(3), np.array([ground, 0.0, 0.0])
    B = tip = None
    for th in theta + np.linspace(0.0, 2 * np.pi, 721):
        A = crank * np.array([np.cos(th), np.sin(th), 0.0])
        d = np.linalg.norm(Q - A)
        if abs(coupler - rocker) <= d <= coupler + rocker and d > 0:
            # circle intersection, the point to the left of A -> Q (upper branch)
            ex = (Q - A) / d
            ey = np.array([-ex[1], ex[0], 0.0])
            a = (coupler ** 2 - rocker ** 2 + d ** 2) / (2 * d)
            h = np.sqrt(max(coupler ** 2 - a * a, 0.0))
            B = A + a * ex + h * ey
            tip = B
            break
    if B is None:
        A = crank * np.array([np.cos(theta), np.sin(theta), 0.0])
        B = A + coupler * (Q - A) / np.linalg.norm(Q - A)
        tip = Q + rocker * (B - Q) / np.linalg.norm(B - Q)
    bodies = [{"name": name, "mass": 1.0, "inertia": _rot_inertia(p0, p1), "position": list((p0 + p1) / 2),
               "shape": {"kind": "rod", "from": list(p0), "to": list(p1), "radius": 0.02}}
              for name, p0, p1 in (("A", O, A), ("B", A, B), ("C", tip, Q))]
    z = [0.0, 0.0, 1.0]
    j3 = {"name": "J3", "type": "revolute", "parent": "B", "child": "C", "anchor": list(B), "axis": z}
    if tip is not B:
        j3["child_anchor"] = list(tip)
    return {"format": "linkwork-mechanism", "version": 1, "name": "four-bar", "gravity": [0.0, -9.81, 0.0],
            "bodies": bodies,
            "joints": [{"name": "J1", "type": "revolute", "parent": "ground", "child": "A", "anchor": list(O),
                        "axis": z},
                       {"name": "J2", "type": "revolute", "parent": "A", "child": "B", "anchor": list(A),
                        "axis": z},
                       j3,
                       {"name": "J4", "type": "revolute", "parent": "C", "child": "ground", "anchor": list(Q),
                        "axis": z}],
            "forces": []}
