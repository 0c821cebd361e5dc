"""Shared by the MJCF/URDF tests: the test models, and the mapping of MuJoCo's joint
coordinates to Linkwork's tree coordinates -- written here from MuJoCo's and Linkwork's
definitions, not taken from the importer under test (docs/import.md, "Coordinates")."""

from __future__ import annotations

from pathlib import Path

import numpy as np

MODELS = Path(__file__).resolve().parent / "models"


def quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


def quat_conj(q):
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_mat(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


class CoordinateMap:
    """MuJoCo (qpos, qvel, qacc) <-> Linkwork tree (q, v, vdot) for a tree imported from
    ``m`` at initial coordinates ``qpos_init``.

    Linkwork measures hinges and slides from the initial pose: ``q = qpos - qpos_init``,
    ``v = qvel``.  A ball joint: MuJoCo turns the child by ``R_p B R(qball)`` (``B`` the
    body's ``quat`` in its parent), Linkwork by ``R_p Rrel R0_rel`` with ``R0_rel = B
    R(qball_init)`` and its velocity the relative angular velocity in the parent's frame,
    MuJoCo's in the child's: ``q = B qball qball_init^* B^*``, ``v = B R(qball) qvel``,
    and ``qacc = (B R(qball))^T vdot`` (the derivative of the rotation drops out:
    ``w x w = 0``)."""

    def __init__(self, m, model, qpos_init):
        import mujoco

        self.m, self.model, self.qpos_init = m, model, np.array(qpos_init, dtype=float)
        names = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j): j for j in range(m.njnt)}
        self.parts = []  # (internal joint, [MuJoCo joint ids])
        for j in range(model.nb):
            assert not model.reversed[j]
            name = model.joint_names[j]
            ids = [names[name]] if name in names else [names[f"{name}.{k}"] for k in (1, 2)
                                                       if f"{name}.{k}" in names]
            self.parts.append((j, ids))

    def _ball(self, jid, qpos):
        a = self.m.jnt_qposadr[jid]
        B = self.m.body_quat[self.m.jnt_bodyid[jid]]
        return B, qpos[a:a + 4], self.qpos_init[a:a + 4]

    def state(self, qpos, qvel) -> np.ndarray:
        model, m = self.model, self.m
        q, v = np.zeros(model.nq), np.zeros(model.nv)
        for j, ids in self.parts:
            qa, va = model.q_adr[j], model.v_adr[j]
            for k, jid in enumerate(ids):
                a, dof = m.jnt_qposadr[jid], m.jnt_dofadr[jid]
                if m.jnt_type[jid] == 1:  # ball
                    B, qb, qi = self._ball(jid, qpos)
                    q[qa:qa + 4] = quat_mul(quat_mul(quat_mul(B, qb), quat_conj(qi)), quat_conj(B))
                    v[va:va + 3] = quat_mat(quat_mul(B, qb)) @ qvel[dof:dof + 3]
                else:
                    q[qa + k] = qpos[a] - self.qpos_init[a]
                    v[va + k] = qvel[dof]
        return np.concatenate([q, v])

    def qacc(self, qpos, vdot) -> np.ndarray:
        m = self.m
        out = np.zeros(m.nv)
        for j, ids in self.parts:
            va = self.model.v_adr[j]
            for k, jid in enumerate(ids):
                dof = m.jnt_dofadr[jid]
                if m.jnt_type[jid] == 1:
                    B, qb, _ = self._ball(jid, qpos)
                    out[dof:dof + 3] = quat_mat(quat_mul(B, qb)).T @ vdot[va:va + 3]
                else:
                    out[dof] = vdot[va + k]
        return out


def random_state(m, qpos_init, rng):
    """A random MuJoCo state: hinges and slides within 1 of their initial value, balls any
    unit quaternion, velocities normal."""
    qpos = np.array(qpos_init, dtype=float)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == 1:
            b = rng.normal(size=4)
            qpos[a:a + 4] = b / np.linalg.norm(b)
        elif m.jnt_type[j] in (2, 3):
            qpos[a] += rng.uniform(-1.0, 1.0)
    return qpos, rng.normal(0.0, 1.0, m.nv)
