"""An MJCF or URDF file as a mechanism spec (``linkwork import``, docs/import.md).

MuJoCo's own compiler reads the file (``MjSpec.from_file``, then ``compile``): defaults,
``include``, ``frame``, angle units, ``fromto``, inertias from geoms, URDF's fused links
are all MuJoCo's.  The compiled ``MjModel`` is then put in its initial pose -- ``qpos0``,
or a keyframe's ``qpos`` and ``qvel`` -- and read body by body:

* a Linkwork body per MuJoCo body with mass: position its centre of mass (``xipos``),
  orientation the MuJoCo body frame (``xquat``), inertia the compiled principal moments
  turned into that frame (``body_iquat``); a body without joints and without mass is part
  of its parent (URDF's empty links);
* the body's joints become its tree joint: none -> ``fixed``, hinge -> ``revolute``,
  slide -> ``prismatic``, ball -> ``spherical``, two orthogonal hinges through one point
  -> ``universal`` (MuJoCo turns the second with the first: ``a1`` fixed in the parent,
  ``a2`` in the child), a hinge and a slide on one axis -> ``cylindrical``; anchors and
  axes are MuJoCo's ``xanchor`` and ``xaxis`` in the pose; ``qvel`` gives the ``rate``;
* equalities close loops: one ``connect`` -> ``spherical``, two between the same bodies
  -> ``revolute`` about the line through their points, three or more -> ``revolute`` if
  their points are on a line, else ``fixed``; ``weld`` -> ``fixed``; a ``joint`` equality
  with a linear polynomial -> a gear (``ratio`` its linear coefficient); one naming a
  single joint locks it (a ``fixed`` joint).  Each must hold in the initial pose;
* joint stiffness and damping -> ``joint-spring`` (``rest`` = ``springref`` less the
  initial coordinate, since Linkwork measures joints from the initial pose); a spatial
  tendon spring between two sites -> ``spring``; an actuator of constant force ->
  ``joint-torque``; gravity; each body's first geom -> its drawing shape.

Everything else is named in one warning per kind (:attr:`Imported.warnings`); a file
whose remainder is no mechanism is refused with one line (:class:`~.common.InteropError`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import MechanismError
from ..mechfile import GROUND, BodySpec, Connectivity, CouplingSpec, ForceSpec, JointSpec, MechanismSpec, ShapeSpec
from .common import CUT_MARKS, FIXED_NAME, INSTALL_HINT, LOOP_RATES, InteropError, fmt_names, joined_name, quat_to_mat

#: a body lighter than this (kg) and without joints is part of its parent
MASSLESS = 1e-12
#: geometric tolerance (m, or unit-vector components) for "same point", "same axis",
#: "orthogonal", and for an equality that holds in the initial pose
GEOM_TOL = 1e-9
#: joint types of MuJoCo (mjtJoint)
FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3
#: equality types of MuJoCo (mjtEq) read here
EQ_CONNECT, EQ_WELD, EQ_JOINT = 0, 1, 2
_EQ_NAMES = {3: "tendon", 4: "flex", 5: "flex vertex", 6: "flex strain"}


@dataclass(frozen=True)
class Imported:
    """A model file read as a mechanism: ``spec``, and what could not be carried over
    (one line per kind of element, naming the elements)."""

    spec: MechanismSpec
    warnings: tuple[str, ...]


def _mujoco():
    try:
        import mujoco
    except ImportError:
        raise InteropError(f"reading MJCF and URDF needs MuJoCo: {INSTALL_HINT}") from None
    return mujoco


def compile_file(path: str | Path):
    """MuJoCo's compiled model of an MJCF or URDF file; one-line refusal if MuJoCo refuses it."""
    mujoco = _mujoco()
    p = Path(path)
    if not p.is_file():
        raise InteropError(f"cannot read {p}: no such file")
    try:
        return mujoco.MjSpec.from_file(str(p)).compile()
    except (ValueError, RuntimeError) as exc:  # MuJoCo's parser and compiler errors
        msg = " ".join(str(exc).split())
        if "opening file" in msg and p.suffix.lower() not in msg:  # a mesh, an include, a texture
            msg += (" (MuJoCo looks for the files a model names relative to it, or to its compiler's "
                    "meshdir; URDF package:// paths are not resolved)")
        raise InteropError(f"MuJoCo cannot read {p.name}: {msg}") from None


def import_file(path: str | Path, keyframe: str | None = None, name: str | None = None) -> Imported:
    """Read an MJCF (``.xml``) or URDF (``.urdf``) file as a mechanism at its initial pose
    (``qpos0``, or keyframe ``keyframe``'s ``qpos``/``qvel``); module docstring."""
    m = compile_file(path)
    return import_model(m, keyframe=keyframe, name=name or _model_name(m) or Path(path).name.split(".")[0])


def _model_name(m) -> str:
    """The ``model`` attribute of the file (the first entry of MuJoCo's name buffer)."""
    return bytes(m.names).split(b"\0", 1)[0].decode("utf-8", "replace")


def import_model(m, keyframe: str | None = None, name: str = "") -> Imported:
    """Module docstring, from a compiled ``MjModel``."""
    return _Importer(_mujoco(), m, keyframe, name).run()


def _obj_name(mujoco, m, kind, i: int) -> str:
    return mujoco.mj_id2name(m, kind, i) or ""


class _Importer:
    def __init__(self, mujoco, m, keyframe: str | None, name: str):
        self.mj, self.m, self.name = mujoco, m, name or _model_name(m)
        self.warnings: list[str] = []
        self.d = mujoco.MjData(m)
        if keyframe is not None:
            k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, keyframe)
            if k < 0:
                keys = [_obj_name(mujoco, m, mujoco.mjtObj.mjOBJ_KEY, i) for i in range(m.nkey)]
                raise InteropError(f"no keyframe {keyframe!r} in the model (keyframes: "
                                   f"{fmt_names(keys) if keys else 'none'})")
            mujoco.mj_resetDataKeyframe(m, self.d, k)
        mujoco.mj_kinematics(m, self.d)
        self.qpos = self.d.qpos.copy()
        # what linkwork export keeps in <custom><text> elements (.common, FIXED_NAME)
        texts = {}
        for i in range(m.ntext):
            a, n = int(m.text_adr[i]), int(m.text_size[i])
            texts[_obj_name(mujoco, m, mujoco.mjtObj.mjOBJ_TEXT, i)] = m.text_data[a:a + n].rstrip(b"\0").decode()
        #: MuJoCo body -> the name of its fixed tree joint
        self.fixed_names = {t[len(FIXED_NAME):]: v for t, v in texts.items() if t.startswith(FIXED_NAME)}
        try:
            #: the joints the exported file marked cut (None: not an exported file)
            self.cut_marks = set(json.loads(texts[CUT_MARKS])) if CUT_MARKS in texts else None
            #: rates of loop-closing joints, by name
            self.loop_rates = {k: tuple(float(x) for x in v) for k, v in json.loads(texts.get(LOOP_RATES, "{}")).items()}
        except (ValueError, TypeError, AttributeError):
            raise InteropError(f"the model's {CUT_MARKS!r} or {LOOP_RATES!r} text is not what linkwork export "
                               "writes") from None

    # ------------------------------------------------------------------ names
    def _name(self, kind: str, i: int) -> str:
        obj = getattr(self.mj.mjtObj, f"mjOBJ_{kind.upper()}")
        return _obj_name(self.mj, self.m, obj, i)

    def _warn(self, what: str, names) -> None:
        names = list(names)
        if names:
            self.warnings.append(f"{what}: {fmt_names(names)}")

    # ------------------------------------------------------------------ the pass
    def run(self) -> Imported:
        m = self.m
        self._bodies()
        self._tree_joints()
        closures = self._unique_names(self._equalities())
        couplings = self._couplings()
        forces = self._joint_springs() + self._tendon_springs() + self._constant_actuators()
        self._not_modelled()
        gravity = (0.0, 0.0, 0.0) if m.opt.disableflags & int(self.mj.mjtDisableBit.mjDSBL_GRAVITY) \
            else tuple(float(g) for g in m.opt.gravity)
        bodies, joints = self._connected(self._as_exported(self.joints + self._mark_cuts(closures)))
        keep = {b.name for b in bodies}
        jkeep = {j.name for j in joints}
        forces = [f for f in forces if (f.joint in jkeep if f.type != "spring"
                                        else {f.body1, f.body2} <= keep | {GROUND})]
        couplings = [c for c in couplings if c.driver in jkeep and c.driven in jkeep]
        if not bodies:
            raise InteropError("nothing left to simulate: no body of the model is connected to the world by "
                               "joints Linkwork has" + (f" ({self.warnings[0]})" if self.warnings else ""))
        spec = MechanismSpec(bodies=tuple(b for b in self.bodies if b.name in keep), joints=tuple(joints),
                             forces=tuple(forces), couplings=tuple(couplings), gravity=gravity, name=self.name,
                             description=f"imported from MuJoCo model {self.name!r}")
        from ..mechfile import spec_from_dict, spec_to_dict

        try:  # the format's own rules, once more, on what was built
            spec_from_dict(spec_to_dict(spec))
        except MechanismError as exc:
            raise InteropError(f"the imported mechanism breaks a rule of the file format: {exc}") from None
        return Imported(spec, tuple(self.warnings))

    # ------------------------------------------------------------------ bodies
    def _bodies(self) -> None:
        m, d = self.m, self.d
        self.owner: list[str] = [GROUND] * m.nbody  # the Linkwork body (or ground) MuJoCo body b is part of
        self.bodies: list[BodySpec] = []
        self.body_joints = {b: [j for j in range(m.njnt) if m.jnt_bodyid[j] == b] for b in range(m.nbody)}
        self.own: dict[int, str] = {}  # MuJoCo body -> its Linkwork body, for the bodies that are one
        used = {GROUND}
        renamed: list[str] = []
        for b in range(1, m.nbody):
            jnts = self.body_joints[b]
            mass = float(m.body_mass[b])
            if not jnts and mass <= MASSLESS:
                self.owner[b] = self.owner[int(m.body_parentid[b])]
                continue
            name = self._name("body", b) or f"body{b}"
            if name in used:  # "ground" is Linkwork's name of the world
                renamed.append(f"{name} -> {name}.{b}")
                name = f"{name}.{b}"
            used.add(name)
            self.owner[b] = name
            self.own[b] = name
            if mass <= MASSLESS:
                raise InteropError(f"body {name!r} moves on joints but has no mass; Linkwork needs mass > 0 on "
                                   "every moving body")
            Rb = d.xmat[b].reshape(3, 3)
            Ri = quat_to_mat(m.body_iquat[b])
            inertia = Ri @ np.diag(m.body_inertia[b]) @ Ri.T
            inertia = 0.5 * (inertia + inertia.T)
            if not np.all(np.linalg.eigvalsh(inertia) > 0.0):
                raise InteropError(f"body {name!r} has a singular inertia {list(m.body_inertia[b])}; Linkwork needs "
                                   "a positive-definite inertia on every body")
            self.bodies.append(BodySpec(
                name=name, mass=mass, inertia=tuple(tuple(float(x) for x in row) for row in inertia),
                position=tuple(float(x) for x in d.xipos[b]),
                orientation=tuple(float(x) for x in d.xquat[b]),
                shape=self._shape(b, Rb)))
        self.body_index = {bs.name: k for k, bs in enumerate(self.bodies)}
        self._warn("bodies renamed (Linkwork reserves 'ground' for the world; names are unique)", renamed)

    def _shape(self, b: int, Rb: np.ndarray) -> ShapeSpec | None:
        """The drawing of MuJoCo body ``b``: its first geom (capsule, cylinder -> rod, or a
        cylinder centred on the centre of mass; box, sphere; ellipsoid and mesh -> their
        bounding box in the body's axes)."""
        m, d, G = self.m, self.d, self.mj.mjtGeom
        geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] == b
                 and m.geom_type[g] not in (int(G.mjGEOM_PLANE), int(G.mjGEOM_HFIELD))]
        if not geoms:
            return None
        g = geoms[0]
        t, size = int(m.geom_type[g]), m.geom_size[g]
        c, Rg = d.geom_xpos[g], d.geom_xmat[g].reshape(3, 3)
        if t in (int(G.mjGEOM_CAPSULE), int(G.mjGEOM_CYLINDER)):
            h = float(size[1]) * Rg[:, 2]
            if t == int(G.mjGEOM_CYLINDER) and np.linalg.norm(c - d.xipos[b]) <= GEOM_TOL:
                return ShapeSpec("cylinder", radius=float(size[0]), length=2.0 * float(size[1]),
                                 axis=tuple(-float(x) for x in Rg[:, 2]))
            # MuJoCo turns a geom given by fromto so that its z axis points from 'to' to 'from'
            return ShapeSpec("rod", p_from=tuple(float(x) for x in c + h), p_to=tuple(float(x) for x in c - h),
                             radius=float(size[0]))
        if t == int(G.mjGEOM_SPHERE):
            return ShapeSpec("sphere", radius=float(size[0]))
        half = m.geom_aabb[g, 3:] if t == int(G.mjGEOM_MESH) else size[:3]
        R = Rb.T @ Rg  # geom axes in the body's
        full = 2.0 * np.abs(R) @ np.asarray(half, dtype=float)
        if not np.all(full > 0):
            return None
        return ShapeSpec("box", size=tuple(float(x) for x in full))

    # ------------------------------------------------------------------ tree joints
    def _tree_joints(self) -> None:
        m, d = self.m, self.d
        self.joints: list[JointSpec] = []
        #: MuJoCo joint id -> (Linkwork joint name, its one freedom) for hinges and slides
        #: that are a revolute or prismatic joint of their own
        self.single: dict[int, str] = {}
        #: MuJoCo hinge or slide id -> (Linkwork joint name, its freedom in that joint, the joint's freedoms)
        self.part: dict[int, tuple[str, int, int]] = {}
        self.floating: list[str] = []
        names = set()
        for b, child in self.own.items():
            parent = self.owner[int(m.body_parentid[b])]
            jnts = self.body_joints[b]
            types = [int(m.jnt_type[j]) for j in jnts]
            jn = [self._name("joint", j) or f"{child}.joint{k + 1}" for k, j in enumerate(jnts)]
            if FREE in types:
                self.floating.append(f"{jn[types.index(FREE)]} (body {child})")
                continue
            js = self._joint_of(b, child, parent, jnts, types, jn)
            if js.name in names:
                js = JointSpec(**{**js.__dict__, "name": f"{js.name}.{b}"})
            names.add(js.name)
            self.joints.append(js)
        if self.floating:
            self.warnings.append(f"free joints (Linkwork has no floating bodies; such a body stays only where "
                                 f"equalities attach it): {fmt_names(self.floating)}")

    def _rate(self, j: int) -> float:
        return float(self.d.qvel[self.m.jnt_dofadr[j]])

    def _joint_of(self, b, child, parent, jnts, types, jn) -> JointSpec:
        m, d = self.m, self.d
        vec = lambda v: tuple(float(x) for x in v)  # noqa: E731
        if not jnts:  # its name kept by linkwork export (FIXED_NAME), else made up
            name = self.fixed_names.get(self._name("body", b), f"{child}.fixed")
            return JointSpec(name, "fixed", parent, child, vec(d.xpos[b]))
        ax = [d.xaxis[j] / np.linalg.norm(d.xaxis[j]) for j in jnts]
        if len(jnts) == 1:
            j, t = jnts[0], types[0]
            if t == BALL:
                w = d.xmat[b].reshape(3, 3) @ d.qvel[m.jnt_dofadr[j]: m.jnt_dofadr[j] + 3]
                rate = vec(w) if np.any(w) else None
                return JointSpec(jn[0], "spherical", parent, child, vec(d.xanchor[j]), rate=rate)
            rate = (self._rate(j),) if self._rate(j) else None
            self.single[j] = jn[0]
            self.part[j] = (jn[0], 0, 1)
            return JointSpec(jn[0], "revolute" if t == HINGE else "prismatic", parent, child,
                             vec(d.xanchor[j]), axis=vec(ax[0]), rate=rate)
        if len(jnts) == 2:
            (j1, j2), (t1, t2) = jnts, types
            same_point = np.linalg.norm(d.xanchor[j1] - d.xanchor[j2]) <= GEOM_TOL
            if t1 == t2 == HINGE and abs(float(ax[0] @ ax[1])) <= GEOM_TOL and same_point:
                r = (self._rate(j1), self._rate(j2))
                self.part.update({j1: (joined_name(*jn), 0, 2), j2: (joined_name(*jn), 1, 2)})
                return JointSpec(joined_name(*jn), "universal", parent, child, vec(d.xanchor[j1]),
                                 axes=(vec(ax[0]), vec(ax[1])), rate=r if any(r) else None)
            if {t1, t2} == {HINGE, SLIDE} and np.linalg.norm(np.cross(ax[0], ax[1])) <= GEOM_TOL:
                h, s = (j1, j2) if t1 == HINGE else (j2, j1)
                axis = d.xaxis[h] / np.linalg.norm(d.xaxis[h])
                if float(axis @ (d.xaxis[s] / np.linalg.norm(d.xaxis[s]))) > 0:
                    r = (self._rate(h), self._rate(s))
                    self.part.update({h: (joined_name(*jn), 0, 2), s: (joined_name(*jn), 1, 2)})
                    return JointSpec(joined_name(*jn), "cylindrical", parent, child, vec(d.xanchor[h]),
                                     axis=vec(axis), rate=r if any(r) else None)
        kinds = ", ".join(f"{n} ({('free', 'ball', 'slide', 'hinge')[t]})" for n, t in zip(jn, types))
        raise InteropError(f"body {child!r} moves on joints {kinds} that make no Linkwork joint (Linkwork's "
                           "multi-joint bodies: two orthogonal hinges through one point, a hinge and a slide "
                           "on one axis)")

    # ------------------------------------------------------------------ equalities
    def _eq_bodies(self, e: int) -> tuple[int, int, np.ndarray, np.ndarray]:
        """MuJoCo bodies of equality ``e`` and its two points in the world (connect: the
        anchors on each body; weld: the anchor on body 2, twice)."""
        m, d = self.m, self.d
        o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        data = m.eq_data[e]
        if int(m.eq_objtype[e]) == int(self.mj.mjtObj.mjOBJ_SITE):
            b1, b2 = int(m.site_bodyid[o1]), int(m.site_bodyid[o2])
            return b1, b2, d.site_xpos[o1].copy(), d.site_xpos[o2].copy()
        b1, b2 = o1, o2
        R1, R2 = d.xmat[b1].reshape(3, 3), d.xmat[b2].reshape(3, 3)
        if int(m.eq_type[e]) == EQ_CONNECT:
            return b1, b2, d.xpos[b1] + R1 @ data[0:3], d.xpos[b2] + R2 @ data[3:6]
        p = d.xpos[b2] + R2 @ data[0:3]
        return b1, b2, p, p

    def _residuals(self) -> dict[int, float]:
        """Each active equality's largest residual in the initial pose, by MuJoCo's own
        constraint rows (``efc_pos``), contacts and limits set aside."""
        mj, m = self.mj, self.m
        d = mj.MjData(m)
        d.qpos[:] = self.qpos
        keep = m.opt.disableflags
        try:
            m.opt.disableflags = int(mj.mjtDisableBit.mjDSBL_CONTACT) | int(mj.mjtDisableBit.mjDSBL_LIMIT)
            d.eq_active[:] = m.eq_active0
            mj.mj_forward(m, d)
        finally:
            m.opt.disableflags = keep
        out: dict[int, float] = {}
        eq_rows = d.efc_type[: d.nefc] == int(mj.mjtConstraint.mjCNSTR_EQUALITY)
        for r in np.flatnonzero(eq_rows):
            e = int(d.efc_id[r])
            out[e] = max(out.get(e, 0.0), abs(float(d.efc_pos[r])))
        return out

    def _equalities(self) -> list[JointSpec]:
        m = self.m
        self.gear_eqs: list[int] = []
        if m.neq == 0:
            return []
        residual = self._residuals()
        inactive, other = [], {}
        groups: dict[tuple[str, str], list[int]] = {}
        welds = []
        for e in range(m.neq):
            name = self._name("equality", e) or f"eq{e + 1}"
            t = int(m.eq_type[e])
            if not m.eq_active0[e]:
                inactive.append(name)
                continue
            if t not in (EQ_CONNECT, EQ_WELD, EQ_JOINT):
                other.setdefault(_EQ_NAMES.get(t, str(t)), []).append(name)
                continue
            if residual.get(e, 0.0) > GEOM_TOL:
                raise InteropError(f"equality {name!r} does not hold in the initial pose (residual "
                                   f"{residual[e]:.3g}); Linkwork starts from an assembled mechanism -- choose a "
                                   "pose where it holds (--keyframe)")
            if t == EQ_JOINT:
                self.gear_eqs.append(e)
                continue
            b1, b2, _, _ = self._eq_bodies(e)
            o1, o2 = self.owner[b1], self.owner[b2]
            if o1 == o2:
                continue  # both ends on one rigid Linkwork body: nothing to constrain
            if t == EQ_WELD:
                welds.append((e, name, o1, o2))
            else:
                groups.setdefault((o1, o2), []).append(e)
        self._warn("inactive equalities (off in MuJoCo at the start): ignored", inactive)
        for kind, names in other.items():
            self._warn(f"{kind} equalities (Linkwork's closures are joints between bodies): ignored", names)
        out = []
        vec = lambda v: tuple(float(x) for x in v)  # noqa: E731
        for (o1, o2), eqs in groups.items():
            pts = [self._eq_bodies(e)[2] for e in eqs]
            names = [self._name("equality", e) or f"eq{e + 1}" for e in eqs]
            if len(eqs) == 1:
                out.append(JointSpec(names[0], "spherical", o1, o2, vec(pts[0]), cut=True))
                continue
            name = joined_name(names[0], names[1]) if len(eqs) == 2 else "+".join(names)
            axis = pts[1] - pts[0]
            if np.linalg.norm(axis) <= GEOM_TOL:
                raise InteropError(f"connect equalities {fmt_names(names)} between {o1!r} and {o2!r} meet at one "
                                   "point: they make a ball joint twice over; drop all but one")
            axis = axis / np.linalg.norm(axis)
            off_line = max((np.linalg.norm(np.cross(p - pts[0], axis)) for p in pts[2:]), default=0.0)
            if off_line <= GEOM_TOL:
                out.append(JointSpec(name, "revolute", o1, o2, vec(pts[0]), axis=vec(axis), cut=True))
            else:
                out.append(JointSpec(name, "fixed", o1, o2, vec(pts[0]), cut=True))
        for e, name, o1, o2 in welds:
            out.append(JointSpec(name, "fixed", o1, o2, vec(self._eq_bodies(e)[2]), cut=True))
        return out

    def _unique_names(self, closures: list[JointSpec]) -> list[JointSpec]:
        """Loop closures named like a tree joint (MuJoCo names joints and equalities
        apart) get the suffix ``.eq``."""
        taken = {j.name for j in self.joints}
        out = []
        for j in closures:
            name = j.name
            while name in taken:
                name += ".eq"
            taken.add(name)
            out.append(j if name == j.name else JointSpec(**{**j.__dict__, "name": name}))
        return out

    def _couplings(self) -> list[CouplingSpec]:
        """``joint`` equalities: ``q1 - q1_ref = c0 + c1 (q2 - q2_ref)`` (checked to hold in
        the initial pose) is the gear ``q1 = c1 q2`` from there; with no second joint (or
        ``c1 = 0``) the first joint is locked."""
        m = self.m
        out, nonlinear, unmappable, locked = [], [], [], set()
        geared: set[str] = set()
        for e in self.gear_eqs:
            name = self._name("equality", e) or f"G{len(out) + 1}"
            j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            coef = m.eq_data[e, :5]
            if np.any(coef[2:] != 0.0):
                nonlinear.append(name)
                continue
            if j2 < 0 or coef[1] == 0.0:
                if j1 in self.single:
                    locked.add(self.single[j1])
                else:
                    unmappable.append(name)
                continue
            if j1 not in self.single or j2 not in self.single or {self.single[j1], self.single[j2]} & geared:
                unmappable.append(name)
                continue
            driver, driven = self.single[j1], self.single[j2]
            geared |= {driver, driven}
            out.append(CouplingSpec(name, driver, driven, float(coef[1])))
        self._warn("joint equalities with a non-linear polynomial (a gear is linear): ignored", nonlinear)
        self._warn("joint equalities not between two revolute or prismatic joints, or a joint geared twice: "
                   "ignored", unmappable)
        if locked:
            self.joints = [JointSpec(j.name, "fixed", j.parent, j.child, j.anchor) if j.name in locked else j
                           for j in self.joints]
            for jid in [k for k, v in self.single.items() if v in locked]:
                del self.single[jid]
                del self.part[jid]
        return out

    # ------------------------------------------------------------------ forces
    def _joint_springs(self) -> list[ForceSpec]:
        mj, m = self.mj, self.m
        off_spring = m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_SPRING)
        off_damper = m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_DAMPER)
        out, lost, nonlinear = [], [], []
        for j in range(m.njnt):
            k = 0.0 if off_spring else float(m.jnt_stiffness[j])
            dof = int(m.jnt_dofadr[j])
            ndof = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}[int(m.jnt_type[j])]
            c = 0.0 if off_damper else float(np.max(m.dof_damping[dof: dof + ndof]))
            poly = np.any(m.jnt_stiffnesspoly[j]) if hasattr(m, "jnt_stiffnesspoly") else False
            poly = poly or (np.any(m.dof_dampingpoly[dof: dof + ndof]) if hasattr(m, "dof_dampingpoly") else False)
            name = self._name("joint", j) or f"joint{j}"
            if poly:
                nonlinear.append(name)
            if k == 0.0 and c == 0.0:
                continue
            if j not in self.single:
                lost.append(name)
                continue
            qadr = int(m.jnt_qposadr[j])
            rest = float(m.qpos_spring[qadr]) - float(self.qpos[qadr])
            out.append(ForceSpec("joint-spring", joint=self.single[j], stiffness=k, damping=c, rest=rest))
        self._warn("joint stiffness or damping on joints other than a lone hinge or slide (Linkwork's joint "
                   "springs act on revolute and prismatic joints): ignored", lost)
        self._warn("non-linear joint stiffness or damping (its polynomial terms): ignored", nonlinear)
        return out

    def _tendon_springs(self) -> list[ForceSpec]:
        """Spatial tendons between two sites with a linear spring (no dead band) and no
        armature or friction: a spring between the sites' bodies, ``rest_length`` the
        tendon's spring length."""
        mj, m, d = self.mj, self.m, self.d
        self.springs: set[int] = set()
        out = []
        off_spring = m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_SPRING)
        off_damper = m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_DAMPER)
        site = int(mj.mjtWrap.mjWRAP_SITE)
        for t in range(m.ntendon):
            adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
            k = 0.0 if off_spring else float(m.tendon_stiffness[t])
            c = 0.0 if off_damper else float(m.tendon_damping[t])
            lo, hi = (float(x) for x in m.tendon_lengthspring[t])
            extra = [getattr(m, a)[t] for a in ("tendon_stiffnesspoly", "tendon_dampingpoly") if hasattr(m, a)]
            if (num != 2 or any(int(m.wrap_type[adr + i]) != site for i in range(2)) or (k == 0.0 and c == 0.0)
                    or lo != hi or any(np.any(x) for x in extra) or m.tendon_armature[t] or m.tendon_frictionloss[t]):
                continue
            s1, s2 = int(m.wrap_objid[adr]), int(m.wrap_objid[adr + 1])
            o1, o2 = self.owner[int(m.site_bodyid[s1])], self.owner[int(m.site_bodyid[s2])]
            self.springs.add(t)
            if o1 == o2:
                continue  # both ends on one rigid body: no force
            out.append(ForceSpec("spring", body1=o1, point1=tuple(float(x) for x in d.site_xpos[s1]), body2=o2,
                                 point2=tuple(float(x) for x in d.site_xpos[s2]), stiffness=k, damping=c,
                                 rest_length=lo))
        return out

    def _constant_actuators(self) -> list[ForceSpec]:
        """Actuators whose force is a constant -- on a joint, no activation dynamics, zero
        gain, affine bias without length or velocity terms: MuJoCo's force is ``biasprm[0]``
        (clamped to the actuator's and the joint's force ranges), times the gear: a
        ``joint-torque`` on the Linkwork joint the hinge or slide belongs to."""
        mj, m = self.mj, self.m
        self.torques: set[int] = set()
        if m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_ACTUATION):
            return []
        per_joint: dict[str, list[float]] = {}
        for u in range(m.nu):
            jid = int(m.actuator_trnid[u, 0])
            if (int(m.actuator_trntype[u]) != int(mj.mjtTrn.mjTRN_JOINT) or jid not in self.part
                    or int(m.actuator_dyntype[u]) != int(mj.mjtDyn.mjDYN_NONE)
                    or int(m.actuator_gaintype[u]) != int(mj.mjtGain.mjGAIN_FIXED) or m.actuator_gainprm[u, 0] != 0
                    or int(m.actuator_biastype[u]) != int(mj.mjtBias.mjBIAS_AFFINE)
                    or np.any(m.actuator_biasprm[u, 1:3])):
                continue
            force = float(m.actuator_biasprm[u, 0])
            if m.actuator_forcelimited[u]:
                force = float(np.clip(force, *m.actuator_forcerange[u]))
            name, k, dof = self.part[jid]
            per_joint.setdefault(name, [0.0] * dof)[k] += force * float(m.actuator_gear[u, 0])
            self.torques.add(u)
        for jid, (name, k, _) in self.part.items():
            if name in per_joint and m.jnt_actfrclimited[jid]:
                per_joint[name][k] = float(np.clip(per_joint[name][k], *m.jnt_actfrcrange[jid]))
        return [ForceSpec("joint-torque", joint=name, value=tuple(v)) for name, v in per_joint.items()]

    def _not_modelled(self) -> None:
        """One warning per kind of element Linkwork has no counterpart for."""
        mj, m = self.mj, self.m
        n = lambda kind, count: [self._name(kind, i) or f"{kind}{i}" for i in range(count)]  # noqa: E731
        self._warn("actuators (Linkwork has no actuators; a constant one -- zero gain, constant bias -- is a "
                   "joint torque): ignored", [x for i, x in enumerate(n("actuator", m.nu)) if i not in self.torques])
        self._warn("tendons (Linkwork has no tendons; a spatial tendon between two sites with a linear "
                   "spring is a spring): ignored", [x for i, x in enumerate(n("tendon", m.ntendon))
                                                    if i not in self.springs])
        self._warn("ranges of spring tendons (Linkwork's springs have no limits): not kept",
                   [x for i, x in enumerate(n("tendon", m.ntendon)) if i in self.springs and m.tendon_limited[i]])
        self._warn("sensors: ignored", n("sensor", m.nsensor))
        self._warn("flexible bodies (flex): ignored", n("flex", m.nflex))
        jn = lambda js: [self._name("joint", j) or f"joint{j}" for j in js]  # noqa: E731
        if not m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_LIMIT):
            self._warn("joint ranges (Linkwork has no joint limits; the file format has no place for them): "
                       "not kept", jn(j for j in range(m.njnt) if m.jnt_limited[j]))
        dofs = lambda arr: sorted({int(m.dof_jntid[i]) for i in np.flatnonzero(arr)})  # noqa: E731
        self._warn("joint armature (rotor inertia added to the mass matrix): ignored", jn(dofs(m.dof_armature > 0)))
        if not m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_FRICTIONLOSS):
            self._warn("joint friction loss: ignored", jn(dofs(m.dof_frictionloss > 0)))
        self._warn("gravity compensation: ignored",
                   [self.owner[b] for b in range(1, m.nbody) if m.body_gravcomp[b] != 0])
        self._warn("mocap bodies (moved by the user in MuJoCo; here they stay put)",
                   [self.owner[b] for b in range(1, m.nbody) if m.body_mocapid[b] >= 0])
        if np.any(m.opt.wind) or m.opt.density > 0 or m.opt.viscosity > 0:
            self.warnings.append("fluid forces (option density, viscosity, wind): ignored")
        if not m.opt.disableflags & (int(mj.mjtDisableBit.mjDSBL_CONTACT) | int(mj.mjtDisableBit.mjDSBL_CONSTRAINT)):
            self._warn("contacts (Linkwork has no contacts; these geoms can touch in MuJoCo): ignored",
                       self._colliding_geoms())

    def _colliding_geoms(self) -> list[str]:
        """Geoms that can make a contact in MuJoCo: explicit pairs, and geoms of different
        bodies, not parent and child, whose contype and conaffinity match."""
        m = self.m
        out: dict[int, None] = {}
        for p in range(m.npair):
            out[int(m.pair_geom1[p])] = out[int(m.pair_geom2[p])] = None
        excluded = {(int(m.exclude_signature[e]) >> 16, int(m.exclude_signature[e]) & 0xFFFF) for e in range(m.nexclude)}
        weld = m.body_weldid
        for g1 in range(m.ngeom):
            for g2 in range(g1 + 1, m.ngeom):
                b1, b2 = int(weld[m.geom_bodyid[g1]]), int(weld[m.geom_bodyid[g2]])
                if b1 == b2 or (b1, b2) in excluded or (b2, b1) in excluded:
                    continue
                if m.body_parentid[b1] == b2 or m.body_parentid[b2] == b1:
                    if b1 and b2:  # MuJoCo's default filter: parent and child do not touch (the world does)
                        continue
                if (m.geom_contype[g1] & m.geom_conaffinity[g2]) or (m.geom_contype[g2] & m.geom_conaffinity[g1]):
                    out[g1] = out[g2] = None
        return [self._name("geom", g) or f"geom{g} of {self.owner[m.geom_bodyid[g]]}" for g in out]

    # ------------------------------------------------------------------ what stays
    def _as_exported(self, joints: list[JointSpec]) -> list[JointSpec]:
        """In a file ``linkwork export`` wrote: the ``cut`` marks and the loop-closing rates
        its ``<custom><text>`` elements keep; elsewhere the joints as they are."""
        if self.cut_marks is None and not self.loop_rates:
            return joints
        out = []
        for j in joints:
            change = {}
            if self.cut_marks is not None and j.cut != (j.name in self.cut_marks):
                change["cut"] = j.name in self.cut_marks
            if j.name in self.loop_rates:
                change["rate"] = self.loop_rates[j.name]
            out.append(JointSpec(**{**j.__dict__, **change}) if change else j)
        return out

    def _mark_cuts(self, closures: list[JointSpec]) -> list[JointSpec]:
        """An equality closes a loop (``"cut": true``, MuJoCo's tree kept) only where the
        tree joints, and the equalities before it, already connect its two bodies; one that
        attaches a body on a free joint is that body's tree joint."""
        parts = Connectivity(self.bodies)
        for j in self.joints:
            parts.join(j.parent, j.child)
        out = []
        for j in closures:
            if parts.join(j.parent, j.child):
                j = JointSpec(**{**j.__dict__, "cut": False})
            out.append(j)
        return out

    def _connected(self, joints: list[JointSpec]) -> tuple[list[BodySpec], list[JointSpec]]:
        """The bodies joints connect to ground, and the joints among them; the rest named."""
        adj: dict[str, list[str]] = {b.name: [] for b in self.bodies}
        adj[GROUND] = []
        for j in joints:
            adj[j.parent].append(j.child)
            adj[j.child].append(j.parent)
        reached, stack = {GROUND}, [GROUND]
        while stack:
            for nb in adj[stack.pop()]:
                if nb not in reached:
                    reached.add(nb)
                    stack.append(nb)
        lost = [b.name for b in self.bodies if b.name not in reached]
        self._warn("bodies no joint connects to the world (on free joints): left out", lost)
        return ([b for b in self.bodies if b.name in reached],
                [j for j in joints if j.parent in reached and j.child in reached])
