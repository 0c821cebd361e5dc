"""Result rows: the contract's CSV columns (section 3) and their writer.

:class:`Recorder` turns an :class:`~engine.formulations.base.Evaluation` into
one row.  Columns, in order (never renamed):

    t
    <body>.x .y .z .q0 .q1 .q2 .q3 .vx .vy .vz .wx .wy .wz     (file order)
    energy.kinetic  energy.potential  energy.total
    violation.position  violation.velocity  violation.acceleration

then Linkwork's extra columns (docs/file-format.md, "Results CSV"):

    joint.<J>.q  joint.<J>.qd        every revolute / prismatic joint (file order)
    reaction.<J>.fx .fy .fz .nx .ny .nz
        every joint: the constraint wrench the file's parent exerts on the
        file's child, about the anchor point fixed in the parent, world frame.

Quaternions keep the sign of the file's orientation at t = 0 and then vary
continuously; revolute angles are unwrapped from row to row.
"""

from __future__ import annotations

import io

import numpy as np

from .constraints import con_arrays, violations
from .forces import energies, force_arrays, joint_coordinate, joint_rate
from .model import PRISMATIC, REVOLUTE, Model
from .spatial import rot_to_quat

BODY_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
REACTION_FIELDS = ("fx", "fy", "fz", "nx", "ny", "nz")


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
        self._Ga = np.zeros((m.nc, 6))
        self._Gb = np.zeros((m.nc, 6))
        self._g = np.zeros(m.nc)
        self._qprev = m.quat0.copy()  # internal body order
        self._angle_joints = [m.joint_internal[k] for k, js in enumerate(m.spec.joints)
                              if js.type in ("revolute", "prismatic")]
        self._jq_ref = np.zeros(m.nj)
        self._jq = np.zeros(m.nj)
        self._quat = np.zeros(4)

    def row(self, ev) -> np.ndarray:
        m = self.model
        out = np.empty(len(self.columns))
        out[0] = ev.t
        k = 1
        for fb in range(m.nb):
            i = m.body_internal[fb]
            rot_to_quat(ev.R[i], self._quat)
            if np.dot(self._quat, self._qprev[i]) < 0:
                self._quat *= -1.0
            self._qprev[i] = self._quat
            out[k:k + 3] = ev.x[i]
            out[k + 3:k + 7] = self._quat
            out[k + 7:k + 13] = ev.V[i]
            k += 13
        # joint coordinates from poses (unwrapped), also feed the joint-spring energy
        jq = self._jq
        for j in self._angle_joints:
            jq[j] = joint_coordinate(self.fa, j, ev.x, ev.R, self._jq_ref[j])
            self._jq_ref[j] = jq[j]
        if ev.jq is not None:
            known = np.isfinite(ev.jq)
            jq[known] = ev.jq[known]
        ke, pe = energies(self.fa, m.inertia, ev.x, ev.R, ev.V, jq)
        out[k:k + 3] = (ke, pe, ke + pe)
        k += 3
        acc = ev.acc if ev.acc is not None else np.full((m.nb, 6), np.nan)
        vp, vv, va = violations(self.ca, ev.x, ev.R, ev.V, acc, self._phi, self._Ga, self._Gb, self._g)
        out[k:k + 3] = (vp, vv, va)
        k += 3
        for j in self._angle_joints:
            out[k] = self._jq_ref[j] if ev.jq is None or not np.isfinite(ev.jq[j]) else ev.jq[j]
            out[k + 1] = joint_rate(self.fa, j, ev.x, ev.R, ev.V)
            k += 2
        for fk in range(m.nj):
            j = m.joint_internal[fk]
            w = ev.reactions[j]
            if m.reversed[j]:
                # wrench on the file child (= pred) by the file parent (= succ), about the
                # anchor fixed in the file parent
                b = m.succ[j]
                Q = ev.x[b] + ev.R[b] @ m.anchor_succ[j]
                f = -w[:3]
                n = -w[3:] + np.cross(ev.P[j] - Q, f)
                out[k:k + 3] = f
                out[k + 3:k + 6] = n
            else:
                out[k:k + 6] = w
            k += 6
        return out


def format_row(values) -> str:
    """One CSV line; floats with ``repr`` so they round-trip."""
    return ",".join(repr(float(v)) for v in values)


class CsvWriter:
    """Writes the header, then rows as they come, flushing every chunk."""

    def __init__(self, stream: io.TextIOBase, cols: list[str]):
        self.stream = stream
        self.stream.write(",".join(cols) + "\n")
        self.stream.flush()

    def write_rows(self, rows: np.ndarray) -> None:
        self.stream.write("".join(format_row(r) + "\n" for r in rows))
        self.stream.flush()


def read_csv(path) -> tuple[list[str], np.ndarray]:
    """Read a results CSV back (header, float array)."""
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
        data = np.loadtxt(fh, delimiter=",", ndmin=2) if fh else np.zeros((0, len(header)))
    return header, data
