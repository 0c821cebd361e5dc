"""A mechanism spec as MJCF text (``linkwork export --mjcf``, docs/import.md).

The inverse of :mod:`.mjcf_import`, written with the standard library (MuJoCo is not
needed to write a file):

* a spanning tree from ground (Kruskal's rule: geared joints first, then the joint types
  MJCF has no equality for -- prismatic, cylindrical, universal -- then the rest in file
  order; joints marked ``cut`` stay out) gives the nesting of ``<body>`` elements; a tree
  joint the file writes child -> parent is turned round (axes negated, a universal's
  axes ``(-a2, -a1)``) so that its coordinate keeps its meaning;
* each MuJoCo body frame sits at its tree joint's anchor with the Linkwork body's
  orientation, so every joint element is at the frame's origin and ``qpos0`` is Linkwork's
  initial configuration; ``<inertial>`` carries mass, centre of mass and the full inertia;
* the joints left out of the tree close the loops: spherical -> ``connect``, revolute ->
  two ``connect`` s on its axis one metre apart, fixed -> ``weld``; gears -> ``joint``
  equalities ``polycoef="0 ratio 0 0 0"``;
* joint springs -> the joint's ``stiffness``, ``damping``, ``springref``; point springs ->
  spatial tendons between two sites; constant joint torques -> actuators of zero gain and
  constant bias; shapes -> geoms that neither collide nor weigh; initial joint rates ->
  the ``qvel`` of keyframe :data:`~.common.RATES_KEYFRAME`.

Where MJCF has nothing to say it (a prismatic loop closure, a torque on a spherical
joint, body velocities, a mesh drawing) the export says so in its warnings, or refuses
(:class:`~.common.InteropError`) where leaving it out would change the motion of the
mechanism's joints.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from ..mechfile import GROUND, Connectivity, JointSpec, MechanismSpec
from .common import CUT_MARKS, FIXED_NAME, LOOP_RATES, RATES_KEYFRAME, InteropError, fmt_names, part_names, quat_conj, quat_mul, quat_to_mat

#: joint types with no MJCF equality: they must be tree joints
TREE_ONLY = ("prismatic", "cylindrical", "universal")
#: MuJoCo's name of its world body
WORLD = "world"


@dataclass(frozen=True)
class Exported:
    """MJCF text of a mechanism and what it leaves out (one line per kind)."""

    xml: str
    warnings: tuple[str, ...]


def _num(x: float) -> str:
    x = float(x)
    return "0" if x == 0.0 else repr(x)


def _vec(v) -> str:
    return " ".join(_num(x) for x in v)


def _exact_sum(base: np.ndarray, target: np.ndarray) -> np.ndarray:
    """An offset ``o`` with ``base + o == target`` in floating point, component by
    component, where one exists within a few units in the last place of ``target - base``
    (MuJoCo adds a child's offset to its parent's position: with this the sum lands on
    the target exactly instead of within a rounding, and errors do not pile up along a
    chain)."""
    out = target - base
    for k in range(3):
        o = out[k]
        for _ in range(8):
            s = base[k] + o
            if s == target[k]:
                break
            o = np.nextafter(o, math.inf if s < target[k] else -math.inf)
        out[k] = o if base[k] + o == target[k] else target[k] - base[k]
    return out


def spanning_tree(spec: MechanismSpec) -> tuple[dict[str, int], list[int]]:
    """(body name -> index of its tree joint in ``spec.joints``, cut joint indices).

    Kruskal's rule over the joints in order of preference (module docstring)."""
    geared = {n for c in spec.couplings for n in (c.driver, c.driven)}
    joints = list(enumerate(spec.joints))
    order = ([k for k, j in joints if j.name in geared]
             + [k for k, j in joints if j.name not in geared and j.type in TREE_ONLY and not j.cut]
             + [k for k, j in joints if j.name not in geared and j.type not in TREE_ONLY and not j.cut])
    parts = Connectivity(spec.bodies)
    edges = [k for k in order if parts.join(spec.joints[k].parent, spec.joints[k].child)]
    adj: dict[str, list[int]] = {n: [] for n in [*(b.name for b in spec.bodies), GROUND]}
    for k in edges:
        adj[spec.joints[k].parent].append(k)
        adj[spec.joints[k].child].append(k)
    tree: dict[str, int] = {}
    stack, seen = [GROUND], {GROUND}
    while stack:
        node = stack.pop()
        for k in adj[node]:
            j = spec.joints[k]
            other = j.child if j.parent == node else j.parent
            if other not in seen:
                seen.add(other)
                tree[other] = k
                stack.append(other)
    cuts = [k for k in range(len(spec.joints)) if k not in set(tree.values())]
    for k in cuts:
        j = spec.joints[k]
        if j.type in TREE_ONLY:
            raise InteropError(f"joint {j.name!r} ({j.type}) closes a loop, and MJCF has no equality for a "
                               f"{j.type} joint: {'unmark its cut, or ' if j.cut else ''}make it a tree joint "
                               "by cutting another joint of its loop (\"cut\": true)")
    return tree, cuts


def export_mjcf(spec: MechanismSpec) -> Exported:
    """The MJCF text of ``spec`` (module docstring) and its warnings."""
    return _Exporter(spec).run()


class _Exporter:
    def __init__(self, spec: MechanismSpec):
        self.spec = spec
        self.warnings: list[str] = []
        self.body = {b.name: b for b in spec.bodies}
        self._mesh: list[str] = []  # bodies drawn by a mesh (not exported)
        if WORLD in self.body:
            raise InteropError(f"a body is named {WORLD!r}, MuJoCo's name of its world body: rename it to export")

    def _warn(self, what: str, names) -> None:
        names = list(names)
        if names:
            self.warnings.append(f"{what}: {fmt_names(names)}")

    def run(self) -> Exported:
        spec = self.spec
        tree, cuts = spanning_tree(spec)
        self.tree = tree
        root = ET.Element("mujoco", model=spec.name or "linkwork")
        ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false", autolimits="true")
        ET.SubElement(root, "option", gravity=_vec(spec.gravity))
        world = ET.SubElement(root, "worldbody")
        children: dict[str, list[str]] = {}
        for name, k in tree.items():
            j = spec.joints[k]
            children.setdefault(j.child if j.parent == name else j.parent, []).append(name)
        file_order = {b.name: i for i, b in enumerate(spec.bodies)}
        #: MuJoCo frame of each body: origin (world, as MuJoCo will compute it where exact),
        #: orientation quaternion
        self.frame = {GROUND: (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), True)}
        self.qvel: list[float] = []
        self.qpos: list[float] = []
        self.springs = self._springs()

        def add(parent_el, parent: str):
            for name in sorted(children.get(parent, []), key=file_order.get):
                el = self._body(parent_el, parent, name, spec.joints[tree[name]])
                add(el, name)

        self.elements = {GROUND: world}
        add(world, GROUND)
        self._equalities(root, cuts)
        self._springs_as_tendons(root)
        self._torques_as_actuators(root)
        self._linkwork_texts(root, {name: spec.joints[k] for name, k in tree.items()}, cuts)
        self._warn("mesh drawings: not exported", self._mesh)
        self._warn("drivers (prescribed joint motions; MJCF has no rheonomic equality): not exported",
                   [d.name for d in spec.drivers])
        moving = [b.name for b in spec.bodies if any(b.velocity) or any(b.angular_velocity)]
        self._warn("body velocities (MJCF's initial velocities are joint rates): not exported", moving)
        if any(self.qvel):
            key = ET.SubElement(ET.SubElement(root, "keyframe"), "key", name=RATES_KEYFRAME)
            key.set("qpos", _vec(self.qpos))
            key.set("qvel", _vec(self.qvel))
        ET.indent(root, space="  ")
        head = "<!-- written by linkwork export --mjcf; docs/import.md says what maps to what -->\n"
        return Exported(head + ET.tostring(root, encoding="unicode") + "\n", tuple(self.warnings))

    # ------------------------------------------------------------------ bodies
    def _local(self, owner: str, p) -> np.ndarray:
        """World point ``p`` in the MuJoCo frame of ``owner``."""
        origin, q, _ = self.frame[owner]
        return quat_to_mat(q).T @ (np.asarray(p, dtype=float) - origin)

    def _body(self, parent_el, parent: str, name: str, j: JointSpec):
        b = self.body[name]
        anchor = np.asarray(j.anchor, dtype=float)
        q = np.asarray(b.orientation, dtype=float)
        q = q / np.linalg.norm(q)
        p_origin, p_q, p_exact = self.frame[parent]
        identity = np.array_equal(p_q, [1.0, 0.0, 0.0, 0.0])
        pos = _exact_sum(p_origin, anchor) if identity and p_exact else quat_to_mat(p_q).T @ (anchor - p_origin)
        rel = quat_mul(quat_conj(p_q), q)
        rel = rel / np.linalg.norm(rel)
        el = ET.SubElement(parent_el, "body", name=name, pos=_vec(pos))
        self.elements[name] = el
        if not np.array_equal(rel, [1.0, 0.0, 0.0, 0.0]):
            el.set("quat", _vec(rel))
        self.frame[name] = (anchor, q, identity and p_exact and np.array_equal(rel, [1.0, 0.0, 0.0, 0.0]))
        R = quat_to_mat(q)
        x = np.asarray(b.position, dtype=float)
        ipos = _exact_sum(anchor, x) if self.frame[name][2] else R.T @ (x - anchor)
        I = np.asarray(b.inertia, dtype=float)
        inertial = ET.SubElement(el, "inertial", pos=_vec(ipos), mass=_num(b.mass))
        if np.count_nonzero(I - np.diag(np.diag(I))) == 0:
            inertial.set("diaginertia", _vec(np.diag(I)))
        else:
            inertial.set("fullinertia", _vec([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]))
        self._joint(el, name, j, R)
        self._geom(el, name)
        return el

    def _joint(self, el, name: str, j: JointSpec, R: np.ndarray) -> None:
        """The MJCF joints of tree joint ``j`` of body ``name``, at the body frame's origin."""
        rev = j.child != name  # the file writes it child -> parent
        rate = list(j.rate) if j.rate is not None else None
        local = lambda a: R.T @ np.asarray(a, dtype=float)  # noqa: E731

        def joint(jname, kind, axis=None, spring=True):
            e = ET.SubElement(el, "joint", name=jname, type=kind)
            if axis is not None:
                e.set("axis", _vec(axis))
            if spring and j.name in self.springs:
                k, c, rest = self.springs[j.name]
                e.set("stiffness", _num(k))
                e.set("damping", _num(c))
                e.set("springref", _num(rest))
            return e

        sign = -1.0 if rev else 1.0
        if j.type in ("revolute", "prismatic"):
            joint(j.name, "hinge" if j.type == "revolute" else "slide", sign * local(j.axis))
            self._q(1, rate or [0.0])
        elif j.type == "cylindrical":
            n1, n2 = part_names(j.name)
            joint(n1, "hinge", sign * local(j.axis))
            joint(n2, "slide", sign * local(j.axis))
            self._q(2, rate or [0.0, 0.0])
        elif j.type == "universal":
            a1, a2 = (local(j.axes[0]), local(j.axes[1])) if not rev else (-local(j.axes[1]), -local(j.axes[0]))
            n1, n2 = part_names(j.name)
            joint(n1, "hinge", a1)
            joint(n2, "hinge", a2)
            r = rate or [0.0, 0.0]
            self._q(2, r[::-1] if rev else r)
        elif j.type == "spherical":
            joint(j.name, "ball")
            w = np.asarray(rate if rate else [0.0, 0.0, 0.0], dtype=float)
            self._q(4, list(R.T @ (-w if rev else w)))  # MuJoCo: the child's frame
        elif j.type == "fixed":
            pass

    def _linkwork_texts(self, root, tree: dict[str, JointSpec], cuts: list[int]) -> None:
        """What MJCF cannot say but ``linkwork import`` restores, as ``<custom><text>``
        elements (:mod:`.common`, ``FIXED_NAME``): the names of fixed tree joints (keyed by
        the MuJoCo child body), the joints marked ``cut``, the rates of loop-closing joints."""
        spec = self.spec
        custom = ET.SubElement(root, "custom")
        for body, j in tree.items():
            if j.type == "fixed":
                ET.SubElement(custom, "text", name=FIXED_NAME + body, data=j.name)
        ET.SubElement(custom, "text", name=CUT_MARKS, data=json.dumps([j.name for j in spec.joints if j.cut]))
        rates = {spec.joints[k].name: list(spec.joints[k].rate) for k in cuts if spec.joints[k].rate is not None}
        if rates:
            ET.SubElement(custom, "text", name=LOOP_RATES, data=json.dumps(rates))

    def _q(self, nq: int, qvel: list[float]) -> None:
        self.qpos += [1.0, 0.0, 0.0, 0.0] if nq == 4 else [0.0] * nq
        self.qvel += [float(v) for v in qvel]

    def _geom(self, el, name: str) -> None:
        s = self.body[name].shape
        if s is None:
            return
        attrs = {"contype": "0", "conaffinity": "0", "group": "1"}
        x = self.body[name].position
        if s.kind == "rod":
            attrs.update(type="capsule", size=_num(s.radius),
                         fromto=_vec([*self._local(name, s.p_from), *self._local(name, s.p_to)]))
        elif s.kind == "box":
            attrs.update(type="box", pos=_vec(self._local(name, x)), size=_vec(0.5 * np.asarray(s.size)))
        elif s.kind == "sphere":
            attrs.update(type="sphere", pos=_vec(self._local(name, x)), size=_num(s.radius))
        elif s.kind == "cylinder":
            h = 0.5 * s.length * np.asarray(s.axis, dtype=float)
            attrs.update(type="cylinder", size=_num(s.radius),
                         fromto=_vec([*self._local(name, np.asarray(x) - h), *self._local(name, np.asarray(x) + h)]))
        else:
            self._mesh.append(name)
            return
        ET.SubElement(el, "geom", **attrs)

    # ------------------------------------------------------------------ loops, gears, forces
    def _equalities(self, root, cuts: list[int]) -> None:
        spec = self.spec
        eq = ET.Element("equality")
        lost_rates = []
        for k in cuts:
            j = spec.joints[k]
            b1 = WORLD if j.parent == GROUND else j.parent
            b2 = WORLD if j.child == GROUND else j.child
            anchor = np.asarray(j.anchor, dtype=float)
            if j.rate is not None and any(j.rate):
                lost_rates.append(j.name)
            if j.type == "spherical":
                ET.SubElement(eq, "connect", name=j.name, body1=b1, body2=b2,
                              anchor=_vec(self._local(j.parent, anchor)))
            elif j.type == "revolute":
                for nm, p in zip(part_names(j.name), (anchor, anchor + np.asarray(j.axis, dtype=float))):
                    ET.SubElement(eq, "connect", name=nm, body1=b1, body2=b2, anchor=_vec(self._local(j.parent, p)))
            else:  # fixed: the weld's anchor is given in body 2's frame
                ET.SubElement(eq, "weld", name=j.name, body1=b1, body2=b2,
                              anchor=_vec(self._local(j.child, anchor)))
        for c in spec.couplings:
            ET.SubElement(eq, "joint", name=c.name, joint1=c.driver, joint2=c.driven,
                          polycoef=_vec([0.0, c.ratio, 0.0, 0.0, 0.0]))
        if len(eq):
            root.append(eq)
        self._warn("rates of loop-closing joints (MJCF's equalities carry no velocity: MuJoCo starts from the "
                   "tree's rates; kept for linkwork import)", lost_rates)

    def _springs(self) -> dict[str, tuple[float, float, float]]:
        """Joint springs of tree joints by joint name: (stiffness, damping, rest); several
        on one joint add up (one spring of the summed stiffness about the weighted rest)."""
        tree_joints = {self.spec.joints[k].name for k in self.tree.values()}
        out: dict[str, list] = {}
        on_cuts = []
        for f in self.spec.forces:
            if f.type != "joint-spring":
                continue
            if f.joint not in tree_joints:
                on_cuts.append(f.joint)
                continue
            out.setdefault(f.joint, []).append((f.stiffness, f.damping, f.rest))
        self._warn("joint springs on loop-closing joints (MJCF's equalities have no spring): not exported", on_cuts)
        res = {}
        for name, elems in out.items():
            if len(elems) == 1:
                res[name] = elems[0]
                continue
            k = sum(e[0] for e in elems)
            rest = sum(e[0] * e[2] for e in elems) / k if k else 0.0
            res[name] = (k, sum(e[1] for e in elems), rest)
        self._warn("several joint springs on one joint (written as one spring of their summed stiffness "
                   "about their stiffness-weighted rest)", [n for n, e in out.items() if len(e) > 1])
        return res

    def _springs_as_tendons(self, root) -> None:
        """Point springs: spatial tendons between two sites with the spring's stiffness,
        damping and rest length (MuJoCo's tendon spring pulls along the line between the
        sites, as Linkwork's spring does)."""
        tendons = ET.Element("tendon")
        for k, f in enumerate(self.spec.forces):
            if f.type != "spring":
                continue
            name = f"spring{k + 1}"
            t = ET.SubElement(tendons, "spatial", name=name, stiffness=_num(f.stiffness), damping=_num(f.damping))
            if f.rest_length is not None:
                t.set("springlength", _num(f.rest_length))  # else MuJoCo's: the length at qpos0
            for end, (body, point) in enumerate(((f.body1, f.point1), (f.body2, f.point2)), start=1):
                ET.SubElement(self.elements[body], "site", name=f"{name}.{end}",
                              pos=_vec(self._local(body, point)))
                ET.SubElement(t, "site", site=f"{name}.{end}")
        if len(tendons):
            root.append(tendons)

    def _torques_as_actuators(self, root) -> None:
        """Constant joint torques: actuators of zero gain whose affine bias is the constant
        (MuJoCo's actuator force ``gain * ctrl + biasprm[0]``), one per hinge or slide."""
        actuators = ET.Element("actuator")
        tree_joints = {self.spec.joints[k].name: (name, self.spec.joints[k]) for name, k in self.tree.items()}
        lost = []
        for f in self.spec.forces:
            if f.type != "joint-torque":
                continue
            if f.joint not in tree_joints or tree_joints[f.joint][1].type == "spherical":
                lost.append(f.joint)
                continue
            body, j = tree_joints[f.joint]
            values = list(f.value)
            if j.type in ("universal", "cylindrical"):
                names = list(part_names(j.name))
                if j.type == "universal" and j.child != body:  # turned round: a1 and a2 swap
                    values = values[::-1]
            else:
                names = [j.name]
            for jname, v in zip(names, values):
                ET.SubElement(actuators, "general", name=f"{jname}.torque", joint=jname, gainprm="0",
                              biastype="affine", biasprm=_vec([v, 0.0, 0.0]))
        if len(actuators):
            root.append(actuators)
        self._warn("joint torques on spherical or loop-closing joints (a ball joint's generalized force is in "
                   "the child's frame, Linkwork's in the parent's; an equality has no force): not exported", lost)
