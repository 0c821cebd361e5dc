"""The immutable mechanism description the kernels read.

:func:`build_model` turns a validated :class:`~engine.mechfile.MechanismSpec`
into a :class:`Model` of flat arrays:

- Bodies are renumbered so that ``parent[i] < i`` along a spanning tree found
  by breadth-first search from ground; joints marked ``"cut": true`` are kept
  out of the tree, the other loop-closing joints are the ones BFS meets last.
- Internal joint ``j < nb`` is the tree joint of body ``j`` (``pred`` = tree
  parent or ground, ``succ`` = the body); joints ``nb..nj-1`` are cut joints.
  Ground is always a joint's predecessor.  Where the file names the bodies the
  other way round, the joint is *reversed*: revolute, prismatic and
  cylindrical axes are negated (so the coordinate keeps its file meaning),
  universal axes become ``(-a2, -a1)`` with coordinates swapped.
- Joint coordinates are zero at t = 0 (the configuration the file describes);
  spherical joints carry a unit quaternion (identity at t = 0) and the relative
  angular velocity in the predecessor's frame as velocity.

Body-frame quantities (anchors, axes) are stored in each body's frame, whose
origin is the centre of mass and whose orientation at t = 0 is the file's.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .drivers import MotionArrays, motion_arrays, motion_values
from .errors import MechanismError
from .mechfile import GROUND, Connectivity, MechanismSpec
from .spatial import quat_to_rot

# joint type codes used by the kernels
REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, FIXED = range(6)
TYPE_CODE = {
    "revolute": REVOLUTE, "prismatic": PRISMATIC, "cylindrical": CYLINDRICAL,
    "universal": UNIVERSAL, "spherical": SPHERICAL, "fixed": FIXED,
}
TYPE_NAME = {v: k for k, v in TYPE_CODE.items()}
#: (nq, nv) of each joint type as a tree joint
TYPE_NQ = np.array([1, 1, 2, 2, 4, 0], dtype=np.int64)
TYPE_NV = np.array([1, 1, 2, 2, 3, 0], dtype=np.int64)
#: number of absolute-coordinate constraint equations of each type (Haug's count)
TYPE_NC = np.array([5, 5, 4, 4, 3, 6], dtype=np.int64)

# force element codes
F_SPRING, F_JOINT_SPRING, F_JOINT_TORQUE = range(3)


def _quat_to_rot(q) -> np.ndarray:
    R = np.empty((3, 3))
    quat_to_rot(np.asarray(q, dtype=float), R)
    return R


def perpendicular_pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors u1, u2 with (u1, u2, a) right-handed orthonormal."""
    a = a / np.linalg.norm(a)
    t = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u1 = np.cross(a, t)
    u1 /= np.linalg.norm(u1)
    u2 = np.cross(a, u1)
    return u1, u2


def _frozen(**arrays):
    for a in arrays.values():
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return arrays


@dataclass(frozen=True, eq=False)
class Model:
    """Flat, read-only arrays describing one mechanism (see module docstring).

    Shapes use ``nb`` bodies, ``nj`` joints (``nb`` tree + ``ncut`` cut),
    ``nq``/``nv`` tree coordinates/velocities.
    """

    spec: MechanismSpec
    nb: int
    nj: int
    nq: int
    nv: int
    # ---- bodies (internal order)
    body_names: tuple[str, ...]
    body_file_index: np.ndarray  # (nb,) file position of internal body i
    body_internal: np.ndarray  # (nb,) internal index of file body k
    parent: np.ndarray  # (nb,) tree parent, -1 = ground, parent[i] < i
    mass: np.ndarray  # (nb,)
    inertia: np.ndarray  # (nb, 3, 3) central inertia, body frame
    inertia_inv: np.ndarray  # (nb, 3, 3)
    x0: np.ndarray  # (nb, 3) centre of mass at t = 0, world
    quat0: np.ndarray  # (nb, 4) orientation at t = 0
    R0_body: np.ndarray  # (nb, 3, 3)
    # ---- joints (internal order: tree joints 0..nb-1 = body index, then cuts)
    joint_names: tuple[str, ...]
    joint_file_index: np.ndarray  # (nj,)
    joint_internal: np.ndarray  # (nj,) internal index of file joint k
    jtype: np.ndarray  # (nj,) type code
    pred: np.ndarray  # (nj,) predecessor body, -1 = ground
    succ: np.ndarray  # (nj,) successor body (never ground)
    is_cut: np.ndarray  # (nj,) bool
    reversed: np.ndarray  # (nj,) bool: pred/succ swapped relative to the file
    anchor_pred: np.ndarray  # (nj, 3) anchor in the pred frame (world if ground)
    anchor_succ: np.ndarray  # (nj, 3) anchor in the succ frame
    axis_pred: np.ndarray  # (nj, 3) first axis in the pred frame (unit; 0 if none)
    axis2_pred: np.ndarray  # (nj, 3) universal second axis at t=0, pred frame
    axis_succ: np.ndarray  # (nj, 3) the axis fixed in succ: revolute/cyl axis, universal a2
    perp_pred: np.ndarray  # (nj, 2, 3) u1, u2 perpendicular to axis_pred (pred frame)
    frame_pred: np.ndarray  # (nj, 3, 3) rows: world axes at t=0 in the pred frame
    frame_succ: np.ndarray  # (nj, 3, 3) rows: world axes at t=0 in the succ frame
    R0_rel: np.ndarray  # (nj, 3, 3) succ orientation in pred frame at t = 0
    q_adr: np.ndarray  # (nj,) first coordinate of a tree joint (-1 for cuts)
    v_adr: np.ndarray  # (nj,) first velocity of a tree joint (-1 for cuts)
    nq_j: np.ndarray  # (nj,)
    nv_j: np.ndarray  # (nj,)
    nc_j: np.ndarray  # (nj,) absolute-coordinate constraint equations
    c_adr: np.ndarray  # (nj,) first row of the joint in the stacked constraints
    nc: int  # total constraint equations (all joints)
    # ---- forces
    gravity: np.ndarray  # (3,)
    f_type: np.ndarray  # (nf,)
    f_body: np.ndarray  # (nf, 2) bodies (internal, -1 ground) for springs
    f_point: np.ndarray  # (nf, 2, 3) spring attachment points in body frames
    f_joint: np.ndarray  # (nf,) internal joint index for joint forces (-1 for springs)
    f_params: np.ndarray  # (nf, 4) stiffness, damping, rest, -- | torque values
    f_sign: np.ndarray  # (nf,) +1, or -1 when the joint is reversed (file semantics)
    # ---- couplings (gear pairs, docs/file-format.md, "Mechanism file"): q_d - q_d0 = ratio (q_n - q_n0)
    g_names: tuple[str, ...] = ()
    g_driver: np.ndarray = None  # (ng,) internal joint index of the driver (a tree joint)
    g_driven: np.ndarray = None  # (ng,) internal joint index of the driven joint (a tree joint)
    g_ratio: np.ndarray = None  # (ng,) mu
    g_q0: np.ndarray = None  # (ng, 2) driver and driven coordinates at t = 0 (from q_zero)
    # ---- drivers (docs/file-format.md, "Drivers"): q_J - q_J0 = f(t) - f(0)
    d_names: tuple[str, ...] = ()
    d_joint: np.ndarray = None  # (nd,) internal joint index of the driven joint (a tree joint)
    d_motion: MotionArrays = None  # the motion laws f (engine.drivers)
    d_f0: np.ndarray = None  # (nd,) f(0) of each law

    def __setstate__(self, state: dict) -> None:
        """A copied or unpickled model keeps its arrays read-only.  numpy hands out
        writeable arrays on both, and numba types read-only arrays apart from writeable
        ones: a copy's formulation compiled every kernel again (57 s for ``dca``)
        instead of loading them from the cache."""
        _frozen(**state)
        self.__dict__.update(state)

    @property
    def ng(self) -> int:
        """Number of couplings (gear pairs): one constraint equation each."""
        return len(self.g_names)

    @property
    def nd(self) -> int:
        """Number of drivers: one rheonomic constraint equation each."""
        return len(self.d_names)

    @property
    def ncut(self) -> int:
        return self.nj - self.nb

    @property
    def name(self) -> str:
        return self.spec.name

    def body_index(self, name: str) -> int:
        return self.body_names.index(name)

    def joint_index(self, name: str) -> int:
        return self.joint_names.index(name)

    def q_zero(self) -> np.ndarray:
        """Tree coordinates of the initial configuration (zeros, identity quaternions)."""
        q = np.zeros(self.nq)
        for j in range(self.nb):
            if self.jtype[j] == SPHERICAL:
                q[self.q_adr[j]] = 1.0
        return q


def _geared_tree_edges(spec: MechanismSpec, bfs_tree: set[int]) -> set[int]:
    """Spanning-tree joints that keep every geared or driven joint in the tree: those
    joints first, then the BFS tree's joints, then any other non-cut joint, each
    taken when it joins two parts not yet connected (Kruskal's rule)."""
    geared = {n for c in spec.couplings for n in (c.driver, c.driven)} | {d.joint for d in spec.drivers}
    names = {j.name: k for k, j in enumerate(spec.joints)}
    parts = Connectivity(spec.bodies)
    order = [names[n] for n in sorted(geared, key=names.get)]
    order += [k for k in sorted(bfs_tree) if k not in order]
    order += [k for k, j in enumerate(spec.joints) if not j.cut and k not in order]
    edges: set[int] = set()
    for k in order:
        j = spec.joints[k]
        if parts.join(j.parent, j.child):
            edges.add(k)
    return edges


def _spanning_tree(spec: MechanismSpec, allowed: set[int] | None = None):
    """BFS from ground over non-cut joints (only over ``allowed`` joints when given).
    Returns (order, tree_joint, cut_joints).

    With couplings or drivers, the tree is chosen so that every geared or driven joint is
    a tree joint (its coordinate is then a tree coordinate, :func:`_geared_tree_edges`)."""
    if allowed is None and (spec.couplings or spec.drivers):
        order, tree_joint, _ = _spanning_tree(spec, set(range(len(spec.joints))))
        return _spanning_tree(spec, _geared_tree_edges(spec, set(tree_joint.values())))
    names = [b.name for b in spec.bodies]
    adj: dict[str, list[int]] = {n: [] for n in names}
    adj[GROUND] = []
    for k, j in enumerate(spec.joints):
        if j.cut or (allowed is not None and k not in allowed):
            continue
        adj[j.parent].append(k)
        adj[j.child].append(k)
    order: list[str] = []
    tree_joint: dict[str, int] = {}
    reached = {GROUND}
    queue = deque([GROUND])
    used: set[int] = set()
    while queue:
        node = queue.popleft()
        for k in adj[node]:
            if k in used:
                continue
            j = spec.joints[k]
            other = j.child if j.parent == node else j.parent
            if other in reached:
                continue
            reached.add(other)
            used.add(k)
            tree_joint[other] = k
            order.append(other)
            queue.append(other)
    if len(order) != len(names):
        # a body is reachable only through joints marked "cut"
        missing = [n for n in names if n not in reached]
        for k, j in enumerate(spec.joints):
            if j.cut and (j.parent in missing or j.child in missing):
                raise MechanismError(
                    f"joints[{k}].cut",
                    f"joint {j.name!r} cannot be cut: without it body {missing[0]!r} "
                    "is not connected to ground (only a joint that closes a loop can be cut)",
                )
        raise MechanismError("joints", f"body {missing[0]!r} is not connected to ground")
    cuts = [k for k in range(len(spec.joints)) if k not in used]
    return order, tree_joint, cuts


def build_model(spec: MechanismSpec) -> Model:
    """Flatten a validated spec into a :class:`Model`."""
    order, tree_joint, cuts = _spanning_tree(spec)
    nb = len(order)
    bidx = {name: i for i, name in enumerate(order)}
    bidx[GROUND] = -1
    file_pos = {b.name: k for k, b in enumerate(spec.bodies)}
    bodies = [spec.bodies[file_pos[name]] for name in order]

    mass = np.array([b.mass for b in bodies], dtype=float)
    inertia = np.array([b.inertia for b in bodies], dtype=float).reshape(nb, 3, 3)
    inertia_inv = np.linalg.inv(inertia)
    x0 = np.array([b.position for b in bodies], dtype=float).reshape(nb, 3)
    quat0 = np.array([b.orientation for b in bodies], dtype=float).reshape(nb, 4)
    quat0 /= np.linalg.norm(quat0, axis=1)[:, None]
    R0b = np.array([_quat_to_rot(q) for q in quat0]).reshape(nb, 3, 3)

    joint_order = [tree_joint[name] for name in order] + cuts
    nj = len(joint_order)
    jtype = np.zeros(nj, dtype=np.int64)
    pred = np.zeros(nj, dtype=np.int64)
    succ = np.zeros(nj, dtype=np.int64)
    is_cut = np.zeros(nj, dtype=bool)
    rev = np.zeros(nj, dtype=bool)
    anchor_pred = np.zeros((nj, 3))
    anchor_succ = np.zeros((nj, 3))
    axis_pred = np.zeros((nj, 3))
    axis2_pred = np.zeros((nj, 3))
    axis_succ = np.zeros((nj, 3))
    perp_pred = np.zeros((nj, 2, 3))
    frame_pred = np.zeros((nj, 3, 3))
    frame_succ = np.zeros((nj, 3, 3))
    R0_rel = np.zeros((nj, 3, 3))
    parent = np.full(nb, -1, dtype=np.int64)

    def pose(b):
        if b < 0:
            return np.zeros(3), np.eye(3)
        return x0[b], R0b[b]

    for ji, k in enumerate(joint_order):
        js = spec.joints[k]
        code = TYPE_CODE[js.type]
        jtype[ji] = code
        p, c = bidx[js.parent], bidx[js.child]
        if ji < nb:  # tree joint of body ji
            is_cut[ji] = False
            body = ji
            other = p if c == body else c
            reverse = c != body
            pr, su = other, body
            parent[body] = other
        else:
            is_cut[ji] = True
            reverse = c < 0  # ground must be the predecessor
            pr, su = (c, p) if reverse else (p, c)
        rev[ji] = reverse
        pred[ji], succ[ji] = pr, su
        xp, Rp = pose(pr)
        xs, Rs = pose(su)
        anchor = np.array(js.anchor, dtype=float)
        anchor_pred[ji] = Rp.T @ (anchor - xp)
        anchor_succ[ji] = Rs.T @ (anchor - xs)
        R0_rel[ji] = Rp.T @ Rs
        frame_pred[ji] = Rp  # row k of Rp is world axis k in the pred frame
        frame_succ[ji] = Rs
        if js.axis is not None:
            a = np.array(js.axis, dtype=float)
            if reverse:
                a = -a
            axis_pred[ji] = Rp.T @ a
            axis_succ[ji] = Rs.T @ a
            u1, u2 = perpendicular_pair(a)
            perp_pred[ji, 0] = Rp.T @ u1
            perp_pred[ji, 1] = Rp.T @ u2
        elif js.axes is not None:
            a1 = np.array(js.axes[0], dtype=float)
            a2 = np.array(js.axes[1], dtype=float)
            if reverse:
                a1, a2 = -a2, -a1
            axis_pred[ji] = Rp.T @ a1
            axis2_pred[ji] = Rp.T @ a2
            axis_succ[ji] = Rs.T @ a2

    # body parents must precede children: BFS order guarantees it
    assert all(parent[i] < i for i in range(nb))

    nq_j = np.where(is_cut, 0, TYPE_NQ[jtype])
    nv_j = np.where(is_cut, 0, TYPE_NV[jtype])
    q_adr = np.full(nj, -1, dtype=np.int64)
    v_adr = np.full(nj, -1, dtype=np.int64)
    nq = nv = 0
    for j in range(nb):
        q_adr[j], v_adr[j] = nq, nv
        nq += int(nq_j[j])
        nv += int(nv_j[j])
    nc_j = TYPE_NC[jtype].copy()
    c_adr = np.concatenate([[0], np.cumsum(nc_j)[:-1]]).astype(np.int64) if nj else np.zeros(0, np.int64)

    # forces
    jidx = {spec.joints[k].name: ji for ji, k in enumerate(joint_order)}
    nf = len(spec.forces)
    f_type = np.zeros(nf, dtype=np.int64)
    f_body = np.full((nf, 2), -1, dtype=np.int64)
    f_point = np.zeros((nf, 2, 3))
    f_joint = np.full(nf, -1, dtype=np.int64)
    f_params = np.zeros((nf, 4))
    f_sign = np.ones(nf)
    for i, f in enumerate(spec.forces):
        if f.type == "spring":
            f_type[i] = F_SPRING
            for s, (bn, pt) in enumerate(((f.body1, f.point1), (f.body2, f.point2))):
                b = bidx[bn]
                f_body[i, s] = b
                xb, Rb = pose(b)
                f_point[i, s] = Rb.T @ (np.array(pt, dtype=float) - xb)
            rest = f.rest_length
            if rest is None:
                rest = float(np.linalg.norm(np.array(f.point2) - np.array(f.point1)))
            f_params[i, :3] = (f.stiffness, f.damping, rest)
        elif f.type == "joint-spring":
            f_type[i] = F_JOINT_SPRING
            f_joint[i] = jidx[f.joint]
            f_params[i, :3] = (f.stiffness, f.damping, f.rest)
        else:
            f_type[i] = F_JOINT_TORQUE
            f_joint[i] = jidx[f.joint]
            vals = list(f.value)
            f_params[i, : len(vals)] = vals
        if f_joint[i] >= 0 and rev[f_joint[i]]:
            f_sign[i] = -1.0

    # couplings: both joints are tree joints (_spanning_tree keeps them there)
    ng = len(spec.couplings)
    g_driver = np.zeros(ng, dtype=np.int64)
    g_driven = np.zeros(ng, dtype=np.int64)
    g_ratio = np.zeros(ng)
    for i, c in enumerate(spec.couplings):
        for arr, key, jn in ((g_driver, "driver", c.driver), (g_driven, "driven", c.driven)):
            ji = jidx[jn]
            if ji >= nb:  # only when the geared joints themselves close a loop
                raise MechanismError(
                    f"couplings[{i}].{key}",
                    f"joint {jn!r} closes a loop of geared joints; a geared joint must be a tree joint "
                    "(gear fewer joints of that loop)")
            arr[i] = ji
        g_ratio[i] = c.ratio
    q_init = np.zeros(int(nq_j[:nb].sum()))
    for j in range(nb):
        if jtype[j] == SPHERICAL:
            q_init[q_adr[j]] = 1.0
    g_q0 = np.array([[q_init[q_adr[d]], q_init[q_adr[n]]] for d, n in zip(g_driver, g_driven)],
                    dtype=float).reshape(ng, 2)

    # drivers: the driven joints are tree joints (_spanning_tree keeps them there)
    nd = len(spec.drivers)
    d_joint = np.zeros(nd, dtype=np.int64)
    for i, d in enumerate(spec.drivers):
        ji = jidx[d.joint]
        if ji >= nb:  # only when driven and geared joints themselves close a loop
            raise MechanismError(
                f"drivers[{i}].joint",
                f"joint {d.joint!r} closes a loop of driven or geared joints; a driven joint must be a tree joint "
                "(drive fewer joints of that loop)")
        d_joint[i] = ji
    d_motion = motion_arrays(spec.drivers)
    d_f0 = np.array([motion_values(d_motion, i, 0.0)[0] for i in range(nd)], dtype=float)

    body_file_index = np.array([file_pos[n] for n in order], dtype=np.int64)
    body_internal = np.argsort(body_file_index).astype(np.int64)
    joint_file_index = np.array(joint_order, dtype=np.int64)
    joint_internal = np.argsort(joint_file_index).astype(np.int64)

    arrays = _frozen(
        body_file_index=body_file_index, body_internal=body_internal, parent=parent, mass=mass,
        inertia=inertia, inertia_inv=inertia_inv, x0=x0, quat0=quat0, R0_body=R0b,
        joint_file_index=joint_file_index, joint_internal=joint_internal, jtype=jtype, pred=pred,
        succ=succ, is_cut=is_cut, reversed=rev, anchor_pred=anchor_pred, anchor_succ=anchor_succ,
        axis_pred=axis_pred, axis2_pred=axis2_pred, axis_succ=axis_succ, perp_pred=perp_pred,
        frame_pred=frame_pred, frame_succ=frame_succ, R0_rel=R0_rel, q_adr=q_adr, v_adr=v_adr,
        nq_j=nq_j.astype(np.int64), nv_j=nv_j.astype(np.int64), nc_j=nc_j, c_adr=c_adr,
        gravity=np.array(spec.gravity, dtype=float), f_type=f_type, f_body=f_body,
        f_point=f_point, f_joint=f_joint, f_params=f_params, f_sign=f_sign,
        g_driver=g_driver, g_driven=g_driven, g_ratio=g_ratio, g_q0=g_q0, d_joint=d_joint, d_f0=d_f0,
    )
    return Model(
        spec=spec, nb=nb, nj=nj, nq=nq, nv=nv, nc=int(nc_j.sum()),
        body_names=tuple(order),
        joint_names=tuple(spec.joints[k].name for k in joint_order),
        g_names=tuple(c.name for c in spec.couplings),
        d_names=tuple(d.name for d in spec.drivers), d_motion=d_motion,
        **arrays,
    )


def load_model(path) -> Model:
    """Read, validate and flatten a mechanism file."""
    from .mechfile import load

    return build_model(load(path))
