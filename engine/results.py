"""Result rows: the results CSV's columns (docs/file-format.md, "Results CSV") and their writer.

:class:`Recorder` turns an :class:`~engine.formulations.base.Evaluation` into
one row.  Columns, in order (never renamed):

    t
    <body>.x .y .z .q0 .q1 .q2 .q3 .vx .vy .vz .wx .wy .wz     (file order)
    energy.kinetic  energy.potential  energy.total
    violation.position  violation.velocity  violation.acceleration
        (every joint's residuals, every gear's and every driver's, stacked)

then Linkwork's extra columns (docs/file-format.md, "Results CSV"):

    joint.<J>.q  joint.<J>.qd        every revolute / prismatic joint (file order)
    reaction.<J>.fx .fy .fz .nx .ny .nz
        every joint: the constraint wrench the file's parent exerts on the
        file's child, about the anchor point fixed in the parent, world frame.
    driver.<D>.q  .rate  .effort  .power   every driver (file order), then
    energy.driver_work                      the drivers' work since t = 0 (with drivers only)

Quaternions keep the sign of the file's orientation at t = 0 and then vary
continuously; revolute angles are unwrapped from row to row.
"""

from __future__ import annotations

import io

import numpy as np
from numba import njit

from .constraints import all_constraints, con_arrays, coupling_violations, violations
from .drivers import motion
from .formulations.base import StateKernel
from .formulations.workspace import unpack
from .forces import energies, force_arrays, joint_acceleration, joint_coordinate, joint_rate
from .model import Model
from .spatial import rot_to_quat

BODY_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
REACTION_FIELDS = ("fx", "fy", "fz", "nx", "ny", "nz")
DRIVER_FIELDS = ("q", "rate", "effort", "power")


def columns(model: Model) -> list[str]:
    cols = ["t"]
    for b in model.spec.bodies:
        cols += [f"{b.name}.{f}" for f in BODY_FIELDS]
    cols += ["energy.kinetic", "energy.potential", "energy.total",
             "violation.position", "violation.velocity", "violation.acceleration"]
    for js in model.spec.joints:
        if js.type in ("revolute", "prismatic"):
            cols += [f"joint.{js.name}.q", f"joint.{js.name}.qd"]
    for js in model.spec.joints:
        cols += [f"reaction.{js.name}.{f}" for f in REACTION_FIELDS]
    for d in model.spec.drivers:
        cols += [f"driver.{d.name}.{f}" for f in DRIVER_FIELDS]
    if model.spec.drivers:
        cols.append("energy.driver_work")
    return cols


class Recorder:
    """Stateful row builder (keeps quaternion signs and angles continuous)."""

    def __init__(self, model: Model):
        self.model = model
        self.columns = columns(model)
        self.ca = con_arrays(model)
        self.fa = force_arrays(model)
        m = model
        self._phi = np.zeros(m.nc)
        self._last_pose = None  # (x, R, V) of the last row made here (position_residuals)
        self._Ga = np.zeros((m.nc, 6))
        self._Gb = np.zeros((m.nc, 6))
        self._g = np.zeros(m.nc)
        self._qprev = m.quat0.copy()  # internal body order
        self._angle_joints = np.array([m.joint_internal[k] for k, js in enumerate(m.spec.joints)
                                       if js.type in ("revolute", "prismatic")], dtype=np.int64)
        self._nan = np.full(m.nj, np.nan)
        self._jq_ref = np.zeros(m.nj)
        self._jq = np.zeros(m.nj)
        self._nan_acc = np.full((m.nb, 6), np.nan)
        #: the row kernel with this recorder's arrays as one table (the continuity state
        #: ``_qprev``, ``_jq_ref`` is written in place)
        self._kernel = StateKernel(_row, (
            self.fa, self.ca, m.inertia, m.body_internal, self._qprev, self._angle_joints, self._jq_ref, self._jq,
            self._phi, self._Ga, self._Gb, self._g,
            (m.g_driver.astype(np.int64), m.g_driven.astype(np.int64), m.g_ratio.astype(float),
             m.g_q0.astype(float).reshape(m.ng, 2)),
            m.joint_internal, m.reversed, m.succ, m.anchor_succ))

        #: the drivers' work so far and their power at the last rows (WORK_* slots)
        self.work_state = np.zeros(WORK_SLOTS)
        #: the drivers' efforts of the evaluation being written (NaN: the formulation reports none)
        self._effort = np.full(m.nd, np.nan)
        self._drive = self.driver_kernel(self._effort, 1.0) if m.nd else None

    def position_residuals(self) -> np.ndarray:
        """Every joint's position residuals (rows ``c_adr[j]``) at the last row :meth:`row`
        wrote -- what the monitor names the worst joint by (the row kernel sums most joints'
        residuals without keeping them); zeros before the first row."""
        if self._last_pose is not None:
            all_constraints(self.ca, *self._last_pose, self._phi, self._Ga, self._Gb, self._g)
        return self._phi

    def driver_kernel(self, effort: np.ndarray, sign: float) -> StateKernel | None:
        """The drivers' columns (:func:`_driver_row`) with their efforts read from ``sign *
        effort`` -- this recorder's own array, or the array a formulation's compiled
        evaluation leaves them in (:attr:`.formulations.base.RowKernels.efforts`); None
        without drivers."""
        m = self.model
        if not m.nd:
            return None
        col = {c: k for k, c in enumerate(self.columns)}
        cols = np.array([(col[f"joint.{d.joint}.q"], col[f"joint.{d.joint}.qd"], col[f"driver.{d.name}.q"])
                         for d in m.spec.drivers], dtype=np.int64)
        return StateKernel(_driver_row, (
            self.fa, m.d_joint, m.d_motion, m.d_f0, cols, np.int64(col["violation.position"]),
            np.int64(col["energy.driver_work"]), effort, float(sign), self.work_state, _GAUSS3))

    def state(self) -> tuple:
        """The continuity state (quaternion signs, unwrapped angles, the drivers' work), to
        undo a rejected row."""
        return self._qprev.copy(), self._jq_ref.copy(), self.work_state.copy()

    def restore(self, state: tuple) -> None:
        self._qprev[:] = state[0]
        self._jq_ref[:] = state[1]
        self.work_state[:] = state[2]

    def row(self, ev) -> np.ndarray:
        out = np.empty(len(self.columns))
        out[0] = ev.t
        known_jq = self._nan if ev.jq is None else ev.jq
        acc = ev.acc if ev.acc is not None else self._nan_acc
        self.last_twists = (ev.V, acc)  # for the monitor's continuity checks (engine/monitor.py)
        self.last_positions = ev.x
        self._last_pose = (ev.x, ev.R, ev.V)
        self._kernel(ev.x, ev.R, ev.V, acc, known_jq, ev.P, ev.reactions, out)
        if self._drive is not None:
            effort = ev.extra.get("driver_effort")
            self._effort[:] = np.nan if effort is None else effort
            self._drive(ev.x, ev.R, ev.V, acc, known_jq, ev.P, ev.reactions, out)
        return out


@njit(cache=True, nogil=True, _nrt=False)
def _row(desc, proto, x, R, V, acc, known_jq, P, reactions, out):
    """One row after ``t`` (``out[0]``), from an evaluation's poses, twists, classical
    accelerations, known joint coordinates (NaN: from the poses), joint points and
    reactions; the workspace (:meth:`Recorder._workspace`) as one table."""
    (fa, ca, inertia, body_internal, qprev, angle_joints, jq_ref, jq, phi, Ga, Gb, g, gears, joint_internal,
     reversed_, succ, anchor_succ) = unpack(desc, proto)
    k = _body_columns(body_internal, x, R, V, qprev, out, 1)
    # joint coordinates from poses (unwrapped), also feed the joint-spring energy
    _angle_coordinates(fa, angle_joints, x, R, jq_ref, jq)
    for j in range(jq.shape[0]):
        if np.isfinite(known_jq[j]):
            jq[j] = known_jq[j]
    ke, pe = energies(fa, inertia, x, R, V, jq)
    out[k] = ke
    out[k + 1] = pe
    out[k + 2] = ke + pe
    k += 3
    vp, vv, va = violations(ca, x, R, V, acc, phi, Ga, Gb, g)
    g_driver, g_driven, g_ratio, g_q0 = gears
    if g_driver.shape[0]:  # gear residuals join the stacked residuals (docs/file-format.md, "Couplings")
        sp, sv, sa = coupling_violations(fa, g_driver, g_driven, g_ratio, g_q0, jq, x, R, V, acc)
        vp, vv, va = np.sqrt(vp * vp + sp), np.sqrt(vv * vv + sv), np.sqrt(va * va + sa)
    out[k] = vp
    out[k + 1] = vv
    out[k + 2] = va
    k += 3
    k = _angle_columns(fa, angle_joints, known_jq, jq_ref, x, R, V, out, k)
    _reaction_columns(joint_internal, reversed_, succ, anchor_succ, x, R, P, reactions, out, k)
    return 0


#: rows the drivers' power is interpolated through for ``energy.driver_work``
WORK_POINTS = 6
_GAUSS3 = (np.array([-np.sqrt(0.6), 0.0, np.sqrt(0.6)]), np.array([5.0, 8.0, 5.0]) / 9.0)


#: the drivers' work state (Recorder.work_state): rows held, the work up to the last
#: row, then the last rows' times and powers (WORK_POINTS each, the oldest first)
WORK_ROWS, WORK_DONE, WORK_T = 0, 1, 2
WORK_P = WORK_T + WORK_POINTS
WORK_SLOTS = WORK_P + WORK_POINTS


@njit(cache=True, nogil=True, _nrt=False)
def work_after(state, t, p, gauss):
    """The drivers' work up to the row ``(t, p)`` (time, power), from ``state`` (the
    WORK_* slots: the work up to the previous row and the last rows' ``(t, P)``; updated
    in place).

    The power is integrated as the polynomial through the last WORK_POINTS rows (of degree
    5: exact to round-off for a fifth-degree power, the error of each interval O(h^7)); over
    the first WORK_POINTS rows, as the polynomial through all of them from t = 0 (Simpson's
    rule at the third row).  Rows need not be evenly spaced.  ``gauss``: the 3-point
    Gauss-Legendre nodes and weights (exact for the degree-5 polynomial)."""
    n = np.int64(state[WORK_ROWS])
    if n == WORK_POINTS:  # the oldest row leaves
        for k in range(WORK_POINTS - 1):
            state[WORK_T + k] = state[WORK_T + k + 1]
            state[WORK_P + k] = state[WORK_P + k + 1]
        n -= 1
    whole = state[WORK_ROWS] < WORK_POINTS  # every row so far is held: integrate from the first
    state[WORK_T + n] = t
    state[WORK_P + n] = p
    n += 1
    state[WORK_ROWS] = n
    if n == 1:
        state[WORK_DONE] = 0.0
        return 0.0
    a = state[WORK_T] if whole else state[WORK_T + n - 2]
    b = state[WORK_T + n - 1]
    if not b > a:
        return state[WORK_DONE]
    nodes, weights = gauss
    total = 0.0
    for g in range(3):
        s = 0.5 * (a + b) + 0.5 * (b - a) * nodes[g]
        val = 0.0
        for k in range(n):
            lk = 1.0
            for m in range(n):
                if m != k:
                    lk *= (s - state[WORK_T + m]) / (state[WORK_T + k] - state[WORK_T + m])
            val += state[WORK_P + k] * lk
        total += weights[g] * 0.5 * (b - a) * val
    state[WORK_DONE] = total if whole else state[WORK_DONE] + total
    return state[WORK_DONE]


@njit(cache=True, nogil=True, _nrt=False)
def _driver_row(desc, proto, x, R, V, acc, known_jq, P, reactions, out):
    """The drivers' columns of the row ``out`` at ``t`` = ``out[0]`` (after :func:`_row`,
    whose joint columns they read): ``driver.*``, ``energy.driver_work``, and their
    residuals stacked into ``violation.*`` (docs/file-format.md, "Drivers").  Arguments as
    :func:`_row`'s (``known_jq``, ``P``, ``reactions`` unused); the table:
    :meth:`Recorder.driver_kernel`."""
    fa, d_joint, laws, f0, cols, viol, work_col, effort, sign, state, gauss = unpack(desc, proto)
    t = out[0]
    power = 0.0
    sp = 0.0
    sv = 0.0
    sa = 0.0
    for i in range(d_joint.shape[0]):
        f, fd, fdd = motion(laws, i, t)
        q, rate = out[cols[i, 0]], out[cols[i, 1]]
        e = sign * effort[i]
        k = cols[i, 2]
        out[k] = f0[i] + q  # the driver's coordinate: the joint's from t = 0, plus f(0)
        out[k + 1] = rate
        out[k + 2] = e
        out[k + 3] = e * rate
        power += e * rate
        d = q - (f - f0[i])
        sp += d * d
        d = rate - fd
        sv += d * d
        d = joint_acceleration(fa, d_joint[i], x, R, V, acc) - fdd
        sa += d * d
    out[viol] = np.sqrt(out[viol] * out[viol] + sp)
    out[viol + 1] = np.sqrt(out[viol + 1] * out[viol + 1] + sv)
    out[viol + 2] = np.sqrt(out[viol + 2] * out[viol + 2] + sa)
    out[work_col] = work_after(state, t, power, gauss)
    return 0


# Per-row kernels: no Python loop over bodies or joints for each output row.


@njit(cache=True, nogil=True, _nrt=True)
def _body_columns(body_internal, x, R, V, qprev, out, k):
    """Position, quaternion (sign kept continuous with ``qprev``) and twist of every
    body in file order from column ``k``; returns the next column."""
    quat = np.empty(4)
    for fb in range(body_internal.shape[0]):
        i = body_internal[fb]
        rot_to_quat(R[i], quat)
        if quat[0] * qprev[i, 0] + quat[1] * qprev[i, 1] + quat[2] * qprev[i, 2] + quat[3] * qprev[i, 3] < 0.0:
            for c in range(4):
                quat[c] = -quat[c]
        for c in range(4):
            qprev[i, c] = quat[c]
            out[k + 3 + c] = quat[c]
        for c in range(3):
            out[k + c] = x[i, c]
        for c in range(6):
            out[k + 7 + c] = V[i, c]
        k += 13
    return k


@njit(cache=True, nogil=True, _nrt=True)
def _angle_coordinates(fa, joints, x, R, jq_ref, jq):
    """One-freedom joint coordinates from the poses, each on the branch nearest its last value."""
    for n in range(joints.shape[0]):
        j = joints[n]
        jq[j] = joint_coordinate(fa, j, x, R, jq_ref[j])
        jq_ref[j] = jq[j]


@njit(cache=True, nogil=True, _nrt=True)
def _angle_columns(fa, joints, known_jq, jq_ref, x, R, V, out, k):
    """``joint.*.q`` (the formulation's own where it has one) and ``joint.*.qd``."""
    for n in range(joints.shape[0]):
        j = joints[n]
        out[k] = known_jq[j] if np.isfinite(known_jq[j]) else jq_ref[j]
        out[k + 1] = joint_rate(fa, j, x, R, V)
        k += 2
    return k


@njit(cache=True, nogil=True, _nrt=True)
def _reaction_columns(joint_internal, reversed_, succ, anchor_succ, x, R, P, reactions, out, k):
    """Reaction wrenches in file semantics: for a reversed joint, the wrench on the file
    child (= pred) by the file parent (= succ), about the anchor fixed in the file parent."""
    for fk in range(joint_internal.shape[0]):
        j = joint_internal[fk]
        if reversed_[j]:
            b = succ[j]
            l0 = P[j, 0] - (x[b, 0] + R[b, 0, 0] * anchor_succ[j, 0] + R[b, 0, 1] * anchor_succ[j, 1]
                            + R[b, 0, 2] * anchor_succ[j, 2])
            l1 = P[j, 1] - (x[b, 1] + R[b, 1, 0] * anchor_succ[j, 0] + R[b, 1, 1] * anchor_succ[j, 1]
                            + R[b, 1, 2] * anchor_succ[j, 2])
            l2 = P[j, 2] - (x[b, 2] + R[b, 2, 0] * anchor_succ[j, 0] + R[b, 2, 1] * anchor_succ[j, 1]
                            + R[b, 2, 2] * anchor_succ[j, 2])
            f0, f1, f2 = -reactions[j, 0], -reactions[j, 1], -reactions[j, 2]
            out[k] = f0
            out[k + 1] = f1
            out[k + 2] = f2
            out[k + 3] = -reactions[j, 3] + (l1 * f2 - l2 * f1)
            out[k + 4] = -reactions[j, 4] + (l2 * f0 - l0 * f2)
            out[k + 5] = -reactions[j, 5] + (l0 * f1 - l1 * f0)
        else:
            for c in range(6):
                out[k + c] = reactions[j, c]
        k += 6


def format_rows(rows: np.ndarray) -> str:
    """CSV lines, each ending in a newline; floats with ``repr`` so they round-trip (the
    rows as Python floats first: the same digits, a third of the time)."""
    return "".join(",".join(map(repr, r)) + "\n" for r in np.asarray(rows, dtype=np.float64).tolist())


class CsvWriter:
    """Writes the header, then rows as they come, flushing every chunk.  ``complete``: the
    bytes of whole rows in a seekable file after the last flush that succeeded (where a
    failed write leaves the file to be cut back to), None for a pipe."""

    def __init__(self, stream: io.TextIOBase, cols: list[str]):
        self.stream = stream
        self.complete = None
        self.stream.write(",".join(cols) + "\n")
        self._flushed()

    def write_rows(self, rows: np.ndarray) -> None:
        self.stream.write(format_rows(rows))
        self._flushed()

    def _flushed(self) -> None:
        self.stream.flush()
        try:
            self.complete = self.stream.tell() if self.stream.seekable() else None
        except (OSError, ValueError):
            self.complete = None


def read_csv(path) -> tuple[list[str], np.ndarray]:
    """Read a results CSV back (header, float array)."""
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
        data = np.loadtxt(fh, delimiter=",", ndmin=2) if fh else np.zeros((0, len(header)))
    return header, data
