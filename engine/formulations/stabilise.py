"""Loop stabilisation of the divide-and-conquer formulations by projection.

``dca`` closes its loops at the acceleration level and ``hdca`` at the velocity level:
neither holds the positions on the closure, so the integrator's truncation lets them
drift off it -- quadratically in time for ``dca``, linearly for ``hdca`` -- until the
pipeline's monitor stops the run at its position limit.  At every output instant (after
each rk4 step; at the end of each output interval of an adaptive integrator, which then
restarts from the projected state) :class:`LoopProjection` brings the state back
(docs/derivations.md, "Projection"):

* positions onto ``Phi(q, t) = 0`` by mass-weighted Gauss-Newton steps and, for ``dca``,
  velocities mass-orthogonally onto ``K v = nu(t)`` (``nu``: the drivers' rates, zero
  for loops and gears) -- ``dense``'s projection at the state's time, the same code
  (:meth:`DenseFormulation.project_state`), run only when a residual exceeds
  ``PROJECTION_TOL``;
* ``hdca``'s momenta ``p* = M v + K^T sigma`` carry the impulse ``sigma`` the loops have
  accumulated since t = 0, which grows without bound (the weight the loops carry, times
  t) and loosens an adaptive integrator's relative tolerance on ``p*`` with it.  Where
  that part has grown larger than ``M v`` itself, ``p*`` is set to ``M v`` with the
  velocities of the state (``sigma = 0``, paper 001's initial condition): the velocities
  are unchanged.  Not at every instant: each reset carries the velocity solve's round-off
  (1e-12 relative on the spinning-arm four-bar) into the state, where it accumulates.

``projection=False`` in the settings switches it off (the drift can then be studied, as
``linkwork study dca-drift`` does); Baumgarte's terms (``dca``'s ``baumgarte``) act
between output instants and combine with it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import config
from ..kinematics import joint_momenta
from .base import TICK_FAILED
from .dense_linalg import velocity_residual
from .rk4_kernel import call_by_table


class LoopProjection:
    """The projection of a tree formulation's state at output instants (a mixin of
    ``TreeFormulation``: it reads ``model``, ``settings``, ``mk``, ``x``, ``R``, ``P``, ``S``)."""

    def _projection_init(self) -> None:
        m = self.model
        flag = getattr(self.settings, "projection", None)
        self._project = bool(m.ncut) and (flag is None or bool(flag))
        self._projector = None
        self.projections = 0  # output instants at which the state was projected
        self.impulse_resets = 0  # hdca: output instants at which p* was reset to M v
        self._momenta_scratch = None  # (V, c, H, h) for joint_momenta, made at first use

    @property
    def projects(self) -> bool:
        return self._project

    def stats(self) -> dict:
        out = super().stats()
        if self._project:
            out["projections"] = self.projections
            if self.impulse_resets:
                out["impulse_resets"] = self.impulse_resets
        return out

    @property
    def projector(self):
        """``dense`` on the same model: its projection and closure residuals."""
        if self._projector is None:
            from .dense import DenseFormulation

            self._projector = DenseFormulation(self.model, self.settings, projector=True)
        return self._projector

    def mobility(self, y) -> float:
        """``dense``'s mobility measure at the positions of ``y`` (Formulation.mobility)."""
        m = self.model
        if not m.ncut:
            return 1.0
        return self.projector.singularity(np.concatenate([y[: m.nq], np.zeros(m.nv)]))

    def _project_velocity_state(self, t, y) -> None:
        """(q, v) in place: positions and velocities onto the closure (``dca``)."""
        m = self.model
        q, v = y[: m.nq], y[m.nq:]
        proj = self.projector
        if max(proj.closure_residuals(q, v, t)) <= config.PROJECTION_TOL:
            return
        qp, vp = proj.project_state(q.copy(), v.copy(), t=t, rows_done=True)
        q[:] = qp
        v[:] = vp
        self.projections += 1

    def _project_momentum_state(self, t, y) -> None:
        """(q, p*) in place: positions onto the closure; then, where the accumulated impulse
        outweighs the momentum, ``p* = M v`` with the velocities of (q, p*) there (``hdca``)."""
        m = self.model
        q, p = y[: m.nq], y[m.nq:]
        proj = self.projector
        if proj.closure_residuals(q, np.zeros(m.nv), t)[0] > config.PROJECTION_TOL:
            q[:] = proj.project_state(q.copy(), np.zeros(m.nv), velocities=False, t=t, rows_done=True)[0]
            self.projections += 1
        v = self.velocities(t, y)  # the workspace's kinematics are now those of q
        pm = self.momenta(v)
        if np.abs(p - pm).max() > np.abs(pm).max():
            p[:] = pm
            self.impulse_resets += 1

    def momenta(self, v: np.ndarray) -> np.ndarray:
        """``p* = M v``: each tree joint's freedoms against the momentum of its subtree, from
        the kinematics in the workspace (``x``, ``R``, ``P``, ``S`` of the current q):
        :func:`~engine.kinematics.joint_momenta`, the kernel the compiled row loop's
        post-step calls (:func:`.tree_formulation.momentum_post`)."""
        m = self.model
        out = np.empty(m.nv)
        joint_momenta(*self._momenta_args(np.ascontiguousarray(v, dtype=np.float64), out))
        return out

    def _momenta_args(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """:func:`~engine.kinematics.joint_momenta`'s arguments for the velocities ``v`` into
        ``out``, with this formulation's scratch."""
        m = self.model
        if self._momenta_scratch is None:
            self._momenta_scratch = tuple(np.zeros((m.nb, 6)) for _ in range(4))
        return (self.mk, m.nv_j, m.mass, m.inertia, self.x, self.R, self.P, self.S, v, self._momenta_scratch, out)


# ``dense``'s projector called by address from the compiled post-steps (dca's and hdca's
# tree_post and momentum_post, rcr's close_post), as the methods above call it from Python
@njit(cache=True, nogil=True, _nrt=False, inline='always')
def projector_residual(proj, proj_desc, clock, t, op, q, v, phi, K, nu, tol, tick):
    """``dense``'s projector's CLOSURE (operation ``op``) of ``(q, v)`` at ``t``: the
    largest of its rows' position residuals ``phi`` and velocity residuals ``K v - nu``
    (:func:`.dense_linalg.velocity_residual`, as Python sums them).  NaN, with
    ``tick[TICK_FAILED]``, where it failed or the residual is within ``1e-6 tol`` of
    ``tol``."""
    clock[0] = t
    clock[3] = op
    if call_by_table(proj, proj_desc, q, v) != 0.0:
        tick[TICK_FAILED] = 1.0
        return np.nan
    worst = 0.0
    for r in range(phi.shape[0]):
        worst = max(worst, abs(phi[r]))
    worst = max(worst, velocity_residual(K, v, nu))
    if not np.isfinite(worst) or abs(worst - tol) <= 1e-6 * tol:
        tick[TICK_FAILED] = 1.0
        return np.nan
    return worst


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def projector_project(proj, proj_desc, clock, t, iterations, ops, q, v, tick, counter, slot):
    """``dense``'s projector's PROJECT (``ops[1]``, its flags ``ops[2]``) of ``(q, v)`` at
    ``t``, in place, counted in ``counter[slot]``; False, with ``tick[TICK_FAILED]``, where
    it failed."""
    clock[0] = t
    clock[1] = iterations
    clock[2] = ops[2]
    clock[3] = ops[1]
    if call_by_table(proj, proj_desc, q, v) != 0.0:
        tick[TICK_FAILED] = 1.0
        return False
    counter[slot] += 1.0
    return True
