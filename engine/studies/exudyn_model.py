"""An Exudyn model of a Linkwork mechanism (``pip install exudyn``), for the whole-run
benchmark: Exudyn's redundant-coordinate formulation, integrated by its index-3
generalized-alpha solver at the example's step (halved by Exudyn only where its Newton
iteration fails).

Every body is an Exudyn rigid body with Euler-parameter coordinates at its centre of mass,
oriented as in the file, with Linkwork's mass, central inertia and initial twist; every
joint -- tree and cut alike, Exudyn has no spanning tree -- is an algebraic joint at its
anchor: revolute, prismatic and spherical joints; fixed as a generic joint with every axis
constrained; universal as a generic joint in the frame ``[a1 x a2, a1, a2]`` that constrains
the translations and the rotation about ``a1 x a2`` (checked against Linkwork on
``chain-6-universal-spatial``).  A cut joint constrains only its independent axes
(:func:`cut_joint_axes`).  Point springs are spring-dampers between the two points; a
revolute joint's spring and constant torque are a torsional spring-damper about its axis.
What this model cannot carry (:func:`not_comparable`): cylindrical joints and universal
cut joints, forces on joints other than revolute ones, and gears (a constraint between two
joints' relative coordinates, which absolute coordinates do not carry).

The closure error is read from sensors at the point pairs of :mod:`.closure_points`, the
same points as Linkwork's and MuJoCo's.
"""

from __future__ import annotations

import time

import numpy as np

from ..model import F_JOINT_SPRING, F_JOINT_TORQUE, F_SPRING, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, TYPE_NAME, \
    UNIVERSAL, Model
from .closure_points import closure_points

#: generalized-alpha's spectral radius at infinite frequency (Exudyn's default)
SPECTRAL_RADIUS = 0.9


def available() -> tuple[bool, str]:
    try:
        import exudyn  # noqa: F401
    except ImportError as exc:
        return False, f"exudyn not installed ({exc})"
    return True, ""


def not_comparable(model: Model) -> list[str]:
    """What in ``model`` this Exudyn model cannot carry (empty: it is the mechanism)."""
    why = []
    for j in range(model.nj):
        jt = int(model.jtype[j])
        if jt not in (REVOLUTE, PRISMATIC, SPHERICAL, FIXED, UNIVERSAL) or (jt == UNIVERSAL and j >= model.nb):
            why.append(f"{TYPE_NAME[jt]} joint {model.joint_names[j]!r}")
    for e in range(model.f_type.shape[0]):
        ft, j = int(model.f_type[e]), int(model.f_joint[e])
        if ft != F_SPRING and int(model.jtype[j]) != REVOLUTE:
            what = "joint spring" if ft == F_JOINT_SPRING else "joint torque"
            why.append(f"{what} on the {TYPE_NAME[int(model.jtype[j])]} joint {model.joint_names[j]!r}")
    if model.ng:
        why.append("gears (a constraint between joint coordinates)")
    return why


def cut_joint_axes(model: Model) -> dict[int, tuple[np.ndarray, list[int]]]:
    """Each cut joint's generic-joint frame (columns: its axes, world) and the axes it
    constrains: the joint's equations less those the rest of the mechanism already
    imposes (a planar loop of revolute joints in space repeats three of its five).

    Linkwork's loop Jacobian in tree velocities (:func:`engine.topology.loop_jacobian`)
    has a revolute cut joint's rows as three world point rows and two axis rows (``u1 . h``,
    a rotation about ``u2``; ``u2 . h``, a rotation about ``u1``); in the frame
    ``[u1, u2, axis]`` they become Exudyn's generic-joint axes ``x, y, z, rx, ry``.  Rows
    are taken in that order, joint by joint, while each adds to the rank."""
    from ..topology import loop_jacobian

    K = loop_jacobian(model)
    tiny = 1e-10 * max(float(np.max(np.linalg.norm(K, axis=1))), 1e-300) if K.size else 0.0
    chosen: list[np.ndarray] = []
    out = {}
    row = 0
    for j in range(model.nb, model.nj):
        n = int(model.nc_j[j])
        Kj = K[row:row + n]
        row += n
        jt = int(model.jtype[j])
        a = int(model.pred[j])
        Ra = np.eye(3) if a < 0 else model.R0_body[a]
        if jt == REVOLUTE:
            F = np.column_stack([Ra @ model.perp_pred[j, 0], Ra @ model.perp_pred[j, 1], Ra @ model.axis_pred[j]])
            cand = [(k, r) for k, r in enumerate(F.T @ Kj[:3])] + [(3, Kj[4]), (4, Kj[3])]
        elif jt == SPHERICAL:
            F = np.eye(3)
            cand = list(enumerate(Kj[:3]))
        elif jt == FIXED:
            F = np.eye(3)
            cand = list(enumerate(Kj[:6]))
        else:
            continue
        axes = [0] * 6
        for k, r in cand:
            scale = float(np.linalg.norm(r))
            if scale <= tiny:  # a row that is zero at t = 0 (round-off aside)
                continue
            if chosen:
                A = np.array(chosen).T
                resid = r - A @ np.linalg.lstsq(A, r, rcond=None)[0]
                if np.linalg.norm(resid) <= 1e-8 * scale:
                    continue
            chosen.append(r)
            axes[k] = 1
        out[j] = (F, axes)
    return out


class ExudynMechanism:
    """The Exudyn system of ``model`` with Linkwork's initial twists ``V`` (nb, 6)
    ``[v_C; w]``; :meth:`run` integrates it from t = 0."""

    def __init__(self, model: Model, V: np.ndarray, dt: float, t_end: float):
        import exudyn as exu
        from exudyn.utilities import RigidBodyInertia

        self.exu = exu
        self.dt, self.t_end = dt, t_end
        #: steps and Newton iterations of the last run
        self.steps = self.newton_iterations = None
        SC = exu.SystemContainer()
        mbs = SC.AddSystem()
        self.SC, self.mbs = SC, mbs
        ground = mbs.CreateGround(referencePosition=[0.0, 0.0, 0.0])
        g = [float(v) for v in model.gravity]
        body = []
        for i in range(model.nb):
            inertia = RigidBodyInertia(mass=float(model.mass[i]), inertiaTensor=np.array(model.inertia[i]))
            body.append(mbs.CreateRigidBody(
                inertia=inertia, referencePosition=model.x0[i].tolist(),
                referenceRotationMatrix=np.array(model.R0_body[i]), initialVelocity=V[i, :3].tolist(),
                initialAngularVelocity=V[i, 3:].tolist(), gravity=g, show=False))

        def item(b: int):
            return ground if b < 0 else body[b]

        cut_axes = cut_joint_axes(model)
        for j in range(model.nj):
            a, b = int(model.pred[j]), int(model.succ[j])
            Ra = np.eye(3) if a < 0 else model.R0_body[a]
            P = (model.anchor_pred[j] if a < 0 else model.x0[a] + Ra @ model.anchor_pred[j]).tolist()
            axis = (Ra @ model.axis_pred[j]).tolist()
            jt = int(model.jtype[j])
            pair = [item(a), item(b)]
            if j in cut_axes:
                F, axes = cut_axes[j]
                mbs.CreateGenericJoint(itemNumbers=pair, position=P, rotationMatrixAxes=F, constrainedAxes=axes,
                                       show=False)
            elif jt == REVOLUTE:
                mbs.CreateRevoluteJoint(itemNumbers=pair, position=P, axis=axis, show=False)
            elif jt == PRISMATIC:
                mbs.CreatePrismaticJoint(itemNumbers=pair, position=P, axis=axis, show=False)
            elif jt == SPHERICAL:
                mbs.CreateSphericalJoint(itemNumbers=pair, position=P, show=False)
            elif jt == FIXED:
                mbs.CreateGenericJoint(itemNumbers=pair, position=P, constrainedAxes=[1] * 6, show=False)
            elif jt == UNIVERSAL:
                a2 = Ra @ model.axis2_pred[j]
                F = np.column_stack([np.cross(axis, a2), axis, a2])
                mbs.CreateGenericJoint(itemNumbers=pair, position=P, rotationMatrixAxes=F,
                                       constrainedAxes=[1, 1, 1, 1, 0, 0], show=False)
        for e in range(model.f_type.shape[0]):
            ft = int(model.f_type[e])
            k, c, rest = (float(v) for v in model.f_params[e, :3])
            if ft == F_SPRING:
                b0, b1 = int(model.f_body[e, 0]), int(model.f_body[e, 1])
                mbs.CreateSpringDamper(itemNumbers=[item(b0), item(b1)],
                                       localPosition0=model.f_point[e, 0].tolist(),
                                       localPosition1=model.f_point[e, 1].tolist(),
                                       referenceLength=rest, stiffness=k, damping=c, show=False)
                continue
            j = int(model.f_joint[e])
            if int(model.jtype[j]) != REVOLUTE:
                continue
            a, b = int(model.pred[j]), int(model.succ[j])
            Ra = np.eye(3) if a < 0 else model.R0_body[a]
            P = (model.anchor_pred[j] if a < 0 else model.x0[a] + Ra @ model.anchor_pred[j]).tolist()
            axis = (Ra @ model.axis_pred[j]).tolist()
            if ft == F_JOINT_SPRING:
                mbs.CreateTorsionalSpringDamper(itemNumbers=[item(a), item(b)], position=P, axis=axis, stiffness=k,
                                                damping=c, offset=rest, show=False)
            elif ft == F_JOINT_TORQUE:
                # Exudyn adds its ``torque`` to the spring's restoring torque: the generalized
                # force -torque (checked against Linkwork on a chain)
                mbs.CreateTorsionalSpringDamper(itemNumbers=[item(a), item(b)], position=P, axis=axis,
                                                torque=-float(model.f_params[e, 0]), show=False)
        # closure sensors: the point pairs, each in its body's frame
        pts = closure_points(model)
        local = pts.body_frame(model)
        self.sensors = []
        for k in range(pts.count):
            pair = []
            for s in range(2):
                bk = int(pts.body[k, s])
                if bk < 0:
                    pair.append(local[k, s])
                    continue
                pair.append(mbs.AddSensor(exu.itemInterface.SensorBody(
                    bodyNumber=body[bk], localPosition=local[k, s].tolist(), storeInternal=True,
                    writeToFile=False, outputVariableType=exu.OutputVariableType.Position)))
            self.sensors.append(pair)
        mbs.Assemble()

    def settings(self, t_end: float, record: bool):
        exu = self.exu
        s = exu.SimulationSettings()
        ti = s.timeIntegration
        ti.numberOfSteps = max(1, int(round(t_end / self.dt)))
        ti.endTime = t_end
        # the step is dt; Exudyn halves it only where Newton fails and grows it back (its
        # default), so a run that would stop at a fixed step finishes; ``steps`` counts them
        ti.adaptiveStep = True
        ti.verboseMode = 0
        ti.generalizedAlpha.spectralRadius = SPECTRAL_RADIUS
        ti.generalizedAlpha.useIndex2Constraints = False  # index 3
        ti.generalizedAlpha.useNewmark = False
        # sparse LU: the cut joints constrain only their independent axes (cut_joint_axes)
        s.linearSolver.solverType = exu.LinearSolverType.EigenSparse
        s.linearSolver.showCausingItems = False
        s.show.computationTime = False
        s.show.statistics = False
        s.solution.file.write = False
        s.solution.file.writeInitialValues = False
        s.solution.sensors.writePeriod = self.dt if record else 10.0 * t_end
        return s

    def run(self, t_end: float, record: bool = False) -> tuple[float, float, str | None]:
        """Integrate ``[0, t_end]`` from the initial state: (wall seconds, closure error --
        the largest sensor pair distance, nan unless ``record`` -- and a failure or None)."""
        exu = self.exu
        s = self.settings(t_end, record)
        failure = None
        t0 = time.perf_counter()
        try:
            ok = self.mbs.SolveDynamic(s, solverType=exu.DynamicSolverType.GeneralizedAlpha)
        except Exception as exc:  # noqa: BLE001 - Exudyn raises its own error types
            ok, failure = False, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        wall = time.perf_counter() - t0
        solver = self.mbs.sys.get("dynamicSolver")
        if solver is not None:
            self.steps = int(solver.it.currentStepIndex)
            self.newton_iterations = int(solver.it.newtonStepsCount)
        if not ok and failure is None:
            failure = "the solver did not converge"
        if failure is None:
            reached = float(self.mbs.systemData.GetTime())
            if reached < t_end - 0.5 * self.dt:
                failure = f"stopped at t = {reached:.4g} s"
        closure = float("nan")
        if record:
            closure = self.closure_error()
        return wall, closure, failure

    def closure_error(self) -> float:
        """The largest distance between a pair's points over the last recorded run."""
        worst = 0.0
        for pair in self.sensors:
            ends = []
            for p in pair:
                if isinstance(p, np.ndarray):
                    ends.append(p[None, :])
                else:
                    ends.append(np.asarray(self.mbs.GetSensorStoredData(p))[:, 1:4])
            n = min(len(ends[0]), len(ends[1])) if ends[0].shape[0] > 1 and ends[1].shape[0] > 1 else None
            a = ends[0][:n] if n else ends[0]
            b = ends[1][:n] if n else ends[1]
            if np.size(a) and np.size(b):
                worst = max(worst, float(np.max(np.linalg.norm(b - a, axis=1))))
        return worst
