"""Random mechanisms: a random tree with random loop-closing joints, forces and rates
(:func:`random_mechanism`), and its planar kind (:func:`random_planar_mechanism`)."""

from __future__ import annotations

import numpy as np

from ..mechfile import GROUND, BodySpec, ForceSpec, MechanismSpec
from .parts import finish, joint_spec, vec


def _random_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _random_mass(rng):
    """A mass and a central inertia tensor that an actual mass distribution has."""
    m = float(rng.uniform(0.3, 2.0))
    A = rng.normal(size=(3, 3))
    Ib = A @ A.T * 0.05 + np.eye(3) * 0.02
    # keep the triangle inequality: use an actual mass distribution
    w = np.linalg.eigvalsh(Ib)
    if w[0] + w[1] < w[2]:
        Ib = Ib + np.eye(3) * (w[2] - w[0] - w[1])
    return m, tuple(vec(r) for r in Ib)


def random_mechanism(seed: int, n_bodies: int = 6, loops: int = 0,
                     joint_types=("revolute", "prismatic", "cylindrical", "universal", "spherical",
                                  "fixed"),
                     loop_joint_types=("spherical", "universal", "revolute"),
                     forces: bool = True, rates: bool = True) -> MechanismSpec:
    """A random tree of ``n_bodies`` with ``loops`` extra loop-closing joints.

    Bodies have random poses, masses and full inertia tensors; tree joints
    have random types and axes; each loop joint connects two random bodies at
    a point between them, so the file's t = 0 configuration closes every loop.
    Random joint rates and body velocities give a random (and, after the
    initial projection, consistent) velocity state.
    """
    rng = np.random.default_rng(seed)
    bodies, joints = [], []
    pos = []
    names = []
    for i in range(n_bodies):
        parent = -1 if i == 0 or rng.random() < 0.15 else int(rng.integers(0, i))
        base = np.zeros(3) if parent < 0 else pos[parent]
        anchor = base + rng.normal(scale=0.4, size=3)
        x = anchor + rng.normal(scale=0.4, size=3)
        q = _random_quat(rng)
        m, inertia = _random_mass(rng)
        name = f"b{i}"
        names.append(name)
        pos.append(x)
        bodies.append(BodySpec(name, m, inertia, vec(x), tuple(float(c) for c in q),
                               velocity=vec(rng.normal(scale=0.3, size=3)) if rates else (0.0, 0.0, 0.0),
                               angular_velocity=vec(rng.normal(scale=0.3, size=3)) if rates else
                               (0.0, 0.0, 0.0)))
        jt = str(rng.choice(joint_types))
        pname = GROUND if parent < 0 else names[parent]
        axis = axes = rate = None
        if jt in ("revolute", "prismatic", "cylindrical"):
            axis = rng.normal(size=3)
        elif jt == "universal":
            a1 = rng.normal(size=3)
            a1 /= np.linalg.norm(a1)
            a2 = np.cross(a1, rng.normal(size=3))
            axes = (a1, a2)
        dof = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "spherical": 3,
               "fixed": 0}[jt]
        if rates and dof:
            rate = tuple(float(r) for r in rng.normal(scale=0.8, size=dof))
        # randomly swap parent and child in the file to exercise reversed joints
        if pname != GROUND and rng.random() < 0.3:
            joints.append(joint_spec(f"j{i}", jt, name, pname, anchor, axis=axis, axes=axes, rate=rate))
        else:
            joints.append(joint_spec(f"j{i}", jt, pname, name, anchor, axis=axis, axes=axes, rate=rate))
    for k in range(loops):
        i, j = rng.choice(n_bodies + 1, size=2, replace=False) - 1
        a = GROUND if i < 0 else names[i]
        b = GROUND if j < 0 else names[j]
        pa = np.zeros(3) if i < 0 else pos[i]
        pb = np.zeros(3) if j < 0 else pos[j]
        anchor = 0.5 * (pa + pb) + rng.normal(scale=0.2, size=3)
        jt = str(rng.choice(loop_joint_types))
        axis = axes = None
        if jt in ("revolute", "prismatic", "cylindrical"):
            axis = rng.normal(size=3)
        elif jt == "universal":
            a1 = rng.normal(size=3)
            a1 /= np.linalg.norm(a1)
            axes = (a1, np.cross(a1, rng.normal(size=3)))
        joints.append(joint_spec(f"c{k}", jt, a, b, anchor, axis=axis, axes=axes))
    fl = []
    if forces:
        b1, b2 = rng.choice(n_bodies, size=2, replace=False)
        fl.append(ForceSpec("spring", body1=names[b1], point1=vec(pos[b1]), body2=names[b2],
                            point2=vec(pos[b2] + 0.1), stiffness=float(rng.uniform(1, 20)),
                            damping=float(rng.uniform(0, 1)), rest_length=0.3))
        for j in joints[:n_bodies]:
            if j.type in ("revolute", "prismatic"):
                fl.append(ForceSpec("joint-spring", joint=j.name, stiffness=float(rng.uniform(0, 5)),
                                    damping=float(rng.uniform(0, 0.5)), rest=float(rng.normal(0, 0.2))))
                break
        for j in joints[:n_bodies]:
            if j.dof > 0:
                fl.append(ForceSpec("joint-torque", joint=j.name,
                                    value=tuple(float(v) for v in rng.normal(scale=0.3, size=j.dof))))
                break
    return finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), forces=tuple(fl),
        gravity=vec(rng.normal(scale=5.0, size=3)), name=f"random mechanism {seed}",
        description=f"Random tree of {n_bodies} bodies with {loops} loop-closing joints (seed {seed}).",
    ))


def random_planar_mechanism(seed: int, n_bodies: int = 6, loops: int = 1, prismatic: float = 0.2) -> MechanismSpec:
    """A random planar linkage: a tree of ``n_bodies`` in the plane z = 0 on revolute joints
    about z and, with probability ``prismatic`` each, prismatic joints along the plane,
    ``loops`` loop-closing joints of the same two kinds between random bodies (ground
    included), a point-to-point spring with a damper, gravity in the plane, and random
    in-plane rates.  Modelled in 3-D, each loop has three closure rows too many: the
    redundant rows a planar mechanism brings (docs/derivations.md, "Redundant rows").
    Bodies have full inertia tensors, so their out-of-plane products of inertia load the
    joints without moving the plane."""
    rng = np.random.default_rng(seed)
    z = np.array([0.0, 0.0, 1.0])

    def in_plane(scale):
        return np.r_[rng.normal(scale=scale, size=2), 0.0]

    def kind():
        return ("prismatic", in_plane(1.0)) if rng.random() < prismatic else ("revolute", z)

    bodies, joints, pos, names = [], [], [], []
    for i in range(n_bodies):
        parent = -1 if i == 0 or rng.random() < 0.1 else int(rng.integers(0, i))
        anchor = (np.zeros(3) if parent < 0 else pos[parent]) + in_plane(0.4)
        x = anchor + in_plane(0.4)
        half = float(rng.uniform(-np.pi, np.pi)) / 2
        m, inertia = _random_mass(rng)
        name = f"b{i}"
        names.append(name)
        pos.append(x)
        bodies.append(BodySpec(name, m, inertia, vec(x), (float(np.cos(half)), 0.0, 0.0, float(np.sin(half))),
                               velocity=vec(in_plane(0.3)), angular_velocity=(0.0, 0.0, float(rng.normal(scale=0.5)))))
        jt, axis = kind()
        joints.append(joint_spec(f"j{i}", jt, GROUND if parent < 0 else names[parent], name, anchor, axis=axis,
                                 rate=(float(rng.normal(scale=0.8)),)))
    for k in range(loops):
        i, j = rng.choice(n_bodies + 1, size=2, replace=False) - 1
        pa = np.zeros(3) if i < 0 else pos[i]
        pb = np.zeros(3) if j < 0 else pos[j]
        anchor = 0.5 * (pa + pb) + in_plane(0.2)
        jt, axis = kind()
        joints.append(joint_spec(f"c{k}", jt, GROUND if i < 0 else names[i], GROUND if j < 0 else names[j], anchor,
                                 axis=axis))
    b1, b2 = rng.choice(n_bodies, size=2, replace=False)
    spring = ForceSpec("spring", body1=names[b1], point1=vec(pos[b1]), body2=names[b2],
                       point2=vec(pos[b2] + np.array([0.1, 0.1, 0.0])), stiffness=float(rng.uniform(1, 20)),
                       damping=float(rng.uniform(0, 1)), rest_length=0.3)
    return finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), forces=(spring,), gravity=vec(in_plane(5.0)),
        name=f"random planar mechanism {seed}",
        description=f"Random planar tree of {n_bodies} bodies with {loops} loop-closing joints (seed {seed}).",
    ))
