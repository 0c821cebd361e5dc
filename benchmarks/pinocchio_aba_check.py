"""Pinocchio's ``aba`` against Pinocchio's own mass-matrix solve, on the benchmark chain.

``linkwork bench --peers`` found Pinocchio 4.1's ``aba`` far from every other solver on
the spherical chains (4.5 relative at 64 bodies) while Pinocchio's CRBA solve agrees with
Linkwork to 1e-10.  This script needs only ``pinocchio`` and ``numpy`` (no Linkwork), so
that the same check can be run under any Pinocchio release, e.g. in a scratch venv with
``pip install "pin==3.9.0" "cmeel-urdfdom<5" "cmeel-tinyxml2<11"``::

    python benchmarks/pinocchio_aba_check.py

The chain is Linkwork's benchmark chain (``engine.generators.chain``, spatial): rods of
length 1 m, mass 1 kg, radius 0.03 m (solid-cylinder inertia), each turned 45 degrees about
y from the last, hanging from the origin; joint frames parallel to the world; joint rates
drawn from N(0, 0.3^2).  The result is printed per size: the largest difference between
the two joint-acceleration vectors over the largest entry, and the mass matrix's
condition number.
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import pinocchio as pin


def rod_inertia(d: np.ndarray, mass: float = 1.0, length: float = 1.0, radius: float = 0.03) -> np.ndarray:
    """World inertia about the centre of a solid cylinder along the unit vector ``d``."""
    axial = 0.5 * mass * radius**2
    transverse = mass * (3.0 * radius**2 + length**2) / 12.0
    return transverse * np.eye(3) + (axial - transverse) * np.outer(d, d)


def chain(n: int, kind: str) -> pin.Model:
    model = pin.Model()
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    parent, anchor = 0, np.zeros(3)
    for k in range(n):
        phi = k * math.pi / 4
        d = np.array([math.cos(phi), 0.0, math.sin(phi)])
        if kind == "spherical":
            joint = pin.JointModelSpherical()
        else:
            axis = np.cross(d, [0.0, 1.0, 0.0]) if k % 2 == 0 else np.array([0.0, 1.0, 0.0])
            joint = pin.JointModelRevoluteUnaligned(axis / np.linalg.norm(axis))
        offset = np.zeros(3) if k == 0 else anchor - previous
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), offset), f"J{k + 1}")
        model.appendBodyToJoint(parent, pin.Inertia(1.0, 0.5 * d, rod_inertia(d)), pin.SE3.Identity())
        previous, anchor = anchor, anchor + d
    return model


def check(n: int, kind: str, seed: int = 0) -> tuple[float, float]:
    model = chain(n, kind)
    data = model.createData()
    q = pin.neutral(model)
    v = np.random.default_rng(seed).normal(scale=0.3, size=model.nv)
    tau = np.zeros(model.nv)
    a_aba = pin.aba(model, data, q, v, tau).copy()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    a_crba = np.linalg.solve(M, tau - pin.nonLinearEffects(model, data, q, v))
    return float(np.max(np.abs(a_aba - a_crba)) / np.max(np.abs(a_crba))), float(np.linalg.cond(M))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64])
    args = ap.parse_args(argv)
    print(f"pinocchio {pin.__version__}: aba against the CRBA solve (relative, joint accelerations)")
    for kind in ("spherical", "revolute"):
        for n in args.sizes:
            diff, cond = check(n, kind)
            print(f"  {kind:9s} {n:5d} bodies  difference {diff:8.1e}   cond(M) {cond:8.1e}")


if __name__ == "__main__":
    main()
