"""Branch and health monitor: one stage of the simulation pipeline, for every formulation.

The worst answer a simulation can give is a wrong trajectory with exit status 0.  A
loop passing a singular configuration (a parallelogram folding flat) is where that
happens: the closure equations lose a direction there, and a formulation that does not
hold the closure at the position or velocity level may leave the assembly branch --
the velocity residual jumps, the loop then opens, and for a conservative mechanism the
energy jumps with it.  :class:`Monitor` watches every output instant of every
formulation through the same figures (docs/formulations.md, "Singular configurations"):

* the row's ``violation.position`` and ``violation.velocity`` (the contract's residuals
  of *all* joints, from the body states -- the same numbers whoever computed them): a
  jump of the velocity residual over one interval is the loss of continuity of the
  closure solution that precedes a branch switch;
* for a conservative mechanism (no dampers, no joint torques, no time-varying forces),
  ``energy.total`` against its initial value, relative to the peak kinetic energy; for a
  passive one (dampers, but no joint torques and no drivers), ``energy.total`` above its
  initial value, and its rise over one interval: a damper cannot give energy back, so a
  rise is the integrator's (a stiff damped spring under rk4's fixed step gaining four
  times its energy);
* what the formulation reports cheaply through
  :meth:`~engine.formulations.base.Formulation.health` -- the loop conditioning
  (``s_min / s_max`` of the mass-whitened loop Jacobian), for the run's statistics and
  the failure message.

When an interval looks wrong (a jump, or a hard limit crossed), the pipeline redoes it
with smaller steps (:meth:`Monitor.judge` returns the refinement level: rk4 and index3
take ``2**level`` sub-steps, adaptive solvers restart the interval with
``max_step = dt / 2**level``).  If no refinement passes the hard limits the run ends
with :class:`~engine.errors.SimulationError` (exit status 3) naming the time, the loop
and what was detected, after every accepted row has been handed over.  Thresholds and
why they are what they are: :mod:`engine.config` ("Branch and health monitor").

``LINKWORK_MONITOR=observe`` judges and records but never retries or fails (the
behaviour before the monitor, for counting); ``LINKWORK_MONITOR_LOG=FILE`` appends one
line per finished or failed run with its worst figures (the acceptance counts).
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np

from . import config
from .errors import SimulationError
from .model import F_JOINT_TORQUE, Model
from .monitor_kernels import (ACTIVE, COND0, CONSERVATIVE, CONT, DISSIPATIVE, DRIFT, E0, E_FLOOR, E_JUMP,
                              HAS_PREV, INTEGRATES_V, I_E, I_KE, I_VP, I_VV, JUMP, KE_PEAK, MAX_CONT, MAX_DRIFT,
                              MAX_LEAP, MAX_POS, MIN_COND, N_MOTION, PACE, PACE_FRAC, PACE_MARK, POS_TOL, PREV_E,
                              PREV_VP, PREV_VV, P_FLOOR, T_CLOSEST, T_END, T_MAX_DRIFT, T_MAX_POS, T_MOTION,
                              T_MOTION_BEFORE, VV_ENTRY, V_FLOOR, WINDOW, continuity_ratio, leap_ratio)
from .topology import loop_bodies


def conservative(model: Model) -> bool:
    """True if ``energy.total`` must stay constant: no damping in any spring, no joint
    torques (they do work that ``energy.total`` does not count), no drivers (their work is
    ``energy.driver_work``), no time-varying forces (the format has none).  Ideal joints and
    gears do no work."""
    if not passive(model):
        return False
    if model.f_type.shape[0] == 0:
        return True
    damped = (model.f_type != F_JOINT_TORQUE) & (model.f_params[:, 1] != 0.0)
    return not bool(damped.any())


def passive(model: Model) -> bool:
    """True if ``energy.total`` can only fall: nothing does work on the mechanism but its
    dampers (no joint torques, no drivers; gears and ideal joints do none).  A conservative
    mechanism is passive too."""
    if model.nd:
        return False
    if model.f_type.shape[0] == 0:
        return True
    torque = (model.f_type == F_JOINT_TORQUE) & np.any(model.f_params != 0.0, axis=1)
    return not bool(torque.any())


def joint_label(model: Model, j: int) -> str:
    """``loop closed at joint J4 (ground - A - B - C)`` for a cut joint, ``joint J2`` otherwise."""
    name = model.joint_names[j]
    if j < model.nb:
        return f"joint {name}"
    bodies = " - ".join("ground" if b < 0 else model.body_names[b] for b in loop_bodies(model, j))
    return f"loop closed at joint {name} ({bodies})"


def gravity_energy(model: Model) -> float:
    """``m_total |g| L``: the energy of lifting the mechanism by its own size ``L`` (the
    diagonal of the box around its centres of mass and joint anchors at t = 0).  Zero
    without gravity; a mechanism that starts moving has its kinetic energy as scale."""
    pts = [b.position for b in model.spec.bodies] + [j.anchor for j in model.spec.joints]
    pts = np.array(pts, dtype=float).reshape(-1, 3)
    size = float(np.linalg.norm(pts.max(axis=0) - pts.min(axis=0))) if len(pts) else 0.0
    return float(np.sum(model.mass)) * float(np.linalg.norm(model.gravity)) * size


class Monitor:
    """Judges each output instant of one run; keeps the run's health statistics."""

    def __init__(self, model: Model, formulation, columns: list[str], t_end: float, mode: str | None = None):
        self.model = model
        self.form = formulation
        self.t_end = float(t_end)
        mode = mode or os.environ.get("LINKWORK_MONITOR", "on")
        if mode not in ("on", "observe", "off"):
            mode = "on"
        self.mode = mode
        self.acts = mode == "on"
        self.conservative = conservative(model)
        #: ODE formulations get positions by integrating velocities: a velocity residual that
        #: jumps opens the loop.  Steppers (index3) solve the position constraints each step.
        self.integrates_velocities = getattr(formulation, "kind", "ode") == "ode"
        #: energy.total may only fall (dampers only): judged against its start, one way.  Not
        #: for index3, whose runs with intervals redone in sub-steps ended further from the
        #: converged motion than its plain steps on damped random mechanisms
        #: (docs/derivations.md, "What the pipeline's monitor reads")
        self.dissipative = passive(model) and not self.conservative and self.integrates_velocities
        self._ivp = columns.index("violation.position")
        self._ivv = columns.index("violation.velocity")
        self._ike = columns.index("energy.kinetic")
        self._ie = columns.index("energy.total")
        # statistics of the accepted rows
        self.retries = 0
        self.max_position = 0.0
        self.t_max_position = 0.0
        self.max_drift = 0.0  # |E - E0| [J]
        self.t_max_drift = 0.0
        self.ke_peak = 0.0
        self.e_floor = config.ENERGY_SCALE_FLOOR * gravity_energy(model)
        self.min_conditioning = np.inf
        self.t_closest = float("nan")
        self.flags: list[str] = []  # hard limits crossed (observe mode keeps going)
        self.time = 0.0  # wall time spent judging
        self._e0 = None
        self._prev = None  # (t, vp, vv, E) of the last accepted row
        self._cond0 = None  # the first loop conditioning reported
        self._vv_entry = None  # velocity residual when the loops came near a singular configuration
        self._level = 0  # refinement level of the attempt being judged
        self._first = None  # (reasons, where) of the interval's first attempt
        self._motion = []  # (t, V, A) of the last two accepted rows: the continuity check
        self.max_continuity = 0.0  # largest continuity ratio accepted (statistics)
        self.max_leap = 0.0  # largest position-continuity ratio accepted (statistics)
        #: () -> the loops' mobility measure at the state being judged; the pipeline sets it
        self.mobility = None
        #: the refinement level at which the last row was accepted (0: at the first attempt)
        self.accepted_level = 0
        self._pace_marks = [(0.0, 0.0)]  # (t, energy drift) where ahead_of_pace said so
        self._pace_spent = False  # refining for the energy's pace no longer pays

    # ----------------------------------------------------------------- helpers
    def _energy_scale(self, ke_peak: float | None = None) -> float:
        """What an energy drift is measured against: the peak kinetic energy so far, floored
        by ENERGY_SCALE_FLOOR of :func:`gravity_energy` (early in a run released at rest)."""
        return max(self.ke_peak if ke_peak is None else ke_peak, self.e_floor, 1e-300)

    def _near(self, cond) -> bool:
        """The loops are near a singular configuration: their conditioning below
        SINGULAR_WINDOW of the first one reported."""
        return cond is not None and self._cond0 is not None and cond < config.SINGULAR_WINDOW * self._cond0

    def _worst_joint(self, recorder, loops_only: bool = False) -> str:
        """Name the joint (and its loop) with the largest position residual of the last row
        (``loops_only``: among the cut joints, when there are any)."""
        m = self.model
        phi = np.abs(recorder.position_residuals())
        if phi.size == 0:
            return "the mechanism"
        c_adr = m.c_adr
        worst, j_worst = -1.0, 0
        first = m.nb if loops_only and m.nj > m.nb else 0
        for j in range(first, m.nj):
            n = int(m.nc_j[j])
            if n and phi[c_adr[j]:c_adr[j] + n].max() > worst:
                worst, j_worst = float(phi[c_adr[j]:c_adr[j] + n].max()), j
        return joint_label(m, j_worst)

    def _closest(self) -> str:
        if not np.isfinite(self.min_conditioning):
            return ""
        return f"; lowest loop conditioning so far {self.min_conditioning:.2g} at t = {self.t_closest:.4g} s"

    def _continuity(self, t: float, recorder) -> float:
        """How far the twists' change over the last output interval is from what the
        accelerations at its ends allow (config.MONITOR_CONTINUITY_FACTOR): the ratio of
        ``|V1 - V0 - dt (A0 + A1) / 2|`` to ``dt max|A| + dt |A1 - 2 A0 + A_-1| / 12``, the
        larger of the linear and angular parts; 0 without two earlier rows."""
        V1, A1 = getattr(recorder, "last_twists", (None, None))
        if V1 is None or not self._motion:
            return 0.0
        t0, V0, A0 = self._motion[-1][:3]
        dt = t - t0
        if dt <= 0:
            return 0.0
        Am = self._motion[-2][2] if len(self._motion) > 1 else A0
        return continuity_ratio(dt, V0, V1, A0, A1, Am, len(self._motion) > 1)

    def _leap(self, t: float, recorder) -> float:
        """How far the centres of mass moved over the last output interval beyond what their
        velocities and accelerations at both ends allow (config.MONITOR_CONTINUITY_FACTOR):
        the ratio of the two-point Hermite residual ``|x1 - x0 - dt (v0 + v1) / 2 - dt^2 (a0 -
        a1) / 12|`` (exact to dt^5 x^(5) / 720) to ``dt r_v + dt^2 max|a| / 90 + floor``, where
        ``r_v`` is the velocities' own trapezoid residual (large where the interval spans
        fast modes) and ``dt^2 max|a| / 90`` bounds the quadrature's error for a motion
        smooth over the interval; a stepper's trapezoidal positions add their own
        ``dt^2 |a1 - a0| / 12``.  0 without an earlier row.

        A position that jumps while the velocities say otherwise -- a loop's bodies thrown
        onto another branch inside one interval, a state corrupted between two rows -- shows
        here even when the velocities and residuals at both ends look sound."""
        x1 = getattr(recorder, "last_positions", None)
        V1, A1 = getattr(recorder, "last_twists", (None, None))
        if x1 is None or V1 is None or not self._motion or len(self._motion[-1]) < 4:
            return 0.0
        t0, V0, A0, x0 = self._motion[-1]
        dt = t - t0
        if dt <= 0:
            return 0.0
        return leap_ratio(dt, x0, x1, V0, V1, A0, A1, self.integrates_velocities)

    def _remember_motion(self, t: float, recorder) -> None:
        V, A = getattr(recorder, "last_twists", (None, None))
        x = getattr(recorder, "last_positions", None)
        if V is not None:
            entry = (t, V.copy(), A.copy()) if x is None else (t, V.copy(), A.copy(), x.copy())
            self._motion = (self._motion + [entry])[-2:]

    # ------------------------------------------------------------------ judging
    def judge(self, t: float, row: np.ndarray, recorder) -> int:
        """0: accept the row; ``level > 0``: redo the interval with ``2**level`` times finer
        steps.  Raises :class:`SimulationError` when no refinement is left and a hard limit
        is crossed."""
        c0 = time.perf_counter()
        try:
            return self._judge(t, row, recorder)
        finally:
            self.time += time.perf_counter() - c0

    def _judge(self, t, row, recorder) -> int:
        vp, vv, ke, e = float(row[self._ivp]), float(row[self._ivv]), float(row[self._ike]), float(row[self._ie])
        health = self.form.health()
        cond = health.get("loop_conditioning")
        if self._e0 is None:
            self._e0 = e
        ke_peak = max(self.ke_peak, ke)
        scale = self._energy_scale(ke_peak)
        drift = abs(e - self._e0)
        hard = []
        soft = []
        finite = math.isfinite(vp) and math.isfinite(vv) and math.isfinite(e)
        if not finite:
            hard.append("the state or its residuals are not finite")
        if vp > config.MONITOR_POSITION_TOL:
            hard.append(f"the position residual reached {vp:.3g} (limit {config.MONITOR_POSITION_TOL:g})")
        if self.conservative and drift > config.MONITOR_ENERGY_DRIFT * scale:
            hard.append(f"the energy of this conservative mechanism drifted by {drift:.3g} J "
                        f"({drift / scale:.2g} of the peak kinetic energy {ke_peak:.3g} J; limit "
                        f"{config.MONITOR_ENERGY_DRIFT:g})")
        if self.dissipative and e - self._e0 > config.MONITOR_ENERGY_DRIFT * scale:
            hard.append(f"the energy of this mechanism, whose only forces that do work are dampers, rose by "
                        f"{e - self._e0:.3g} J above its start ({(e - self._e0) / scale:.2g} of the peak kinetic energy "
                        f"{ke_peak:.3g} J; limit {config.MONITOR_ENERGY_DRIFT:g}): a damper cannot give energy back")
        if cond is not None and self._cond0 is None:
            self._cond0 = max(float(cond), 1e-300)
        near = self._near(cond)
        if self._prev is not None:
            _, vp0, vv0, e_prev = self._prev
            if not self.integrates_velocities:
                pass  # the stepper solves the positions themselves: its velocity residual cannot open a loop
            elif vv > config.MONITOR_JUMP_FACTOR * vv0 and vv > config.MONITOR_VELOCITY_FLOOR:
                soft.append(f"the velocity residual jumped from {vv0:.2g} to {vv:.2g} in one step")
            elif (near and self._vv_entry is not None and vv > config.MONITOR_JUMP_FACTOR * self._vv_entry
                  and vv > config.MONITOR_VELOCITY_FLOOR):
                # continuity of the closure solution across the crossing: the residual it had
                # when the loop came near the singular configuration, not only the last row's
                soft.append(f"the velocity residual grew from {self._vv_entry:.2g} to {vv:.2g} while crossing a "
                            "singular configuration (a branch switch)")
            if vp > config.MONITOR_JUMP_FACTOR * vp0 and vp > config.MONITOR_POSITION_FLOOR:
                soft.append(f"the position residual jumped from {vp0:.2g} to {vp:.2g} in one step")
            if self.conservative and abs(e - e_prev) > config.MONITOR_ENERGY_JUMP * scale:
                soft.append(f"the energy jumped by {abs(e - e_prev):.3g} J in one step")
            elif self.dissipative and e - e_prev > config.MONITOR_ENERGY_JUMP * scale:
                soft.append(f"the energy rose by {e - e_prev:.3g} J in one step, with dampers only")
        continuity = self._continuity(t, recorder) if self.integrates_velocities else 0.0
        if continuity > config.MONITOR_CONTINUITY_FACTOR:
            soft.append(f"the velocities jumped within one step ({continuity:.3g} times what the accelerations "
                        "allow): the motion left its branch")
        leap = self._leap(t, recorder)
        if leap > config.MONITOR_CONTINUITY_FACTOR:
            soft.append(f"the positions jumped within one step ({leap:.3g} times what the velocities allow)")
        bad = hard + soft
        if bad and self.acts:
            if self._level == 0:
                self._first = (hard + soft, self._worst_joint(recorder))
            if self._level < config.MONITOR_MAX_REFINE:
                self._level += 1
                self.retries += 1
                return self._level
            # No refinement removed it.  A jump that persists through 16 times smaller steps
            # is no truncation error (that shrinks with the step): the closure solution or
            # the energy is discontinuous -- a branch switch -- so it fails like a hard limit.
            reasons, where = self._first
            near, remedy = self._where_singular()
            msg = (f"{where}{near}: {'; '.join(reasons)}; smaller steps (down to dt / {2 ** self._level}) did "
                   f"not help. {remedy}").rstrip()
            raise SimulationError(t, msg)
        if bad and not self.acts:
            self.flags.append(f"t = {t:.4g} s: " + "; ".join(bad))
        # accepted
        self.accepted_level = self._level
        if near and self._vv_entry is None:
            self._vv_entry = self._prev[2] if self._prev is not None else vv
        elif not near:
            self._vv_entry = None
        self._level = 0
        self._prev = (t, vp, vv, e)
        self._remember_motion(t, recorder)
        self.max_continuity = max(self.max_continuity, continuity)
        self.max_leap = max(self.max_leap, leap)
        self.ke_peak = ke_peak
        if vp > self.max_position:
            self.max_position, self.t_max_position = vp, t
        if drift > self.max_drift:
            self.max_drift, self.t_max_drift = drift, t
        if cond is not None and cond < self.min_conditioning:
            self.min_conditioning, self.t_closest = float(cond), t
        return 0

    # ----------------------------------------------- the compiled row loop's state
    def to_row_loop(self, mon: np.ndarray, hist: np.ndarray, fixed_step: bool) -> bool:
        """Write what :func:`engine.row_loop._plain_row` reads into its state ``mon`` and
        motion history ``hist`` (slots: the constants above :func:`plain_row`); False (nothing written)
        where it cannot judge as :meth:`_judge` would: before the first row, or between a
        retry's attempts."""
        if self._e0 is None or self._level or any(len(entry) < 4 for entry in self._motion):
            return False
        mon[ACTIVE] = 1.0
        mon[CONSERVATIVE] = self.conservative
        mon[DISSIPATIVE] = self.dissipative
        mon[INTEGRATES_V] = self.integrates_velocities
        mon[PACE] = fixed_step and self.acts and self.conservative and not self._pace_spent
        mon[T_END] = self.t_end
        mon[E0], mon[KE_PEAK], mon[E_FLOOR] = self._e0, self.ke_peak, self.e_floor
        mon[HAS_PREV] = self._prev is not None
        if self._prev is not None:
            mon[PREV_VP], mon[PREV_VV], mon[PREV_E] = self._prev[1:]
        mon[N_MOTION] = len(self._motion)
        for slot, (t, V, A, x) in enumerate(reversed(self._motion)):
            mon[T_MOTION if slot == 0 else T_MOTION_BEFORE] = t
            hist[slot, :, 0:6], hist[slot, :, 6:12], hist[slot, :, 12:15] = V, A, x
        mon[MAX_POS], mon[T_MAX_POS] = self.max_position, self.t_max_position
        mon[MAX_DRIFT], mon[T_MAX_DRIFT] = self.max_drift, self.t_max_drift
        mon[MAX_CONT], mon[MAX_LEAP] = self.max_continuity, self.max_leap
        mon[PACE_MARK] = self._pace_marks[-1][1]
        mon[COND0] = np.nan if self._cond0 is None else self._cond0
        mon[VV_ENTRY] = np.nan if self._vv_entry is None else self._vv_entry
        mon[MIN_COND], mon[T_CLOSEST], mon[WINDOW] = self.min_conditioning, self.t_closest, config.SINGULAR_WINDOW
        mon[POS_TOL], mon[DRIFT], mon[JUMP] = (config.MONITOR_POSITION_TOL, config.MONITOR_ENERGY_DRIFT,
                                                        config.MONITOR_JUMP_FACTOR)
        mon[V_FLOOR], mon[P_FLOOR], mon[E_JUMP] = (config.MONITOR_VELOCITY_FLOOR,
                                                            config.MONITOR_POSITION_FLOOR, config.MONITOR_ENERGY_JUMP)
        mon[CONT], mon[PACE_FRAC] = config.MONITOR_CONTINUITY_FACTOR, config.MONITOR_ENERGY_PACE
        mon[I_VP], mon[I_VV], mon[I_KE], mon[I_E] = self._ivp, self._ivv, self._ike, self._ie
        return True

    def from_row_loop(self, mon: np.ndarray, hist: np.ndarray) -> None:
        """Take back the state and statistics the compiled row loop left in ``mon`` and
        ``hist`` after rows it kept (:meth:`to_row_loop`), as :meth:`_judge` would have
        left them after the same rows."""
        self._prev = (float(mon[T_MOTION]), float(mon[PREV_VP]), float(mon[PREV_VV]),
                      float(mon[PREV_E]))
        times = (mon[T_MOTION], mon[T_MOTION_BEFORE])
        self._motion = [(float(times[s]), hist[s, :, 0:6].copy(), hist[s, :, 6:12].copy(), hist[s, :, 12:15].copy())
                        for s in range(int(mon[N_MOTION]))][::-1]
        self.ke_peak = float(mon[KE_PEAK])
        self.max_position, self.t_max_position = float(mon[MAX_POS]), float(mon[T_MAX_POS])
        self.max_drift, self.t_max_drift = float(mon[MAX_DRIFT]), float(mon[T_MAX_DRIFT])
        self.max_continuity, self.max_leap = float(mon[MAX_CONT]), float(mon[MAX_LEAP])
        self.accepted_level = 0
        self._cond0 = None if np.isnan(mon[COND0]) else float(mon[COND0])
        self._vv_entry = None if np.isnan(mon[VV_ENTRY]) else float(mon[VV_ENTRY])
        self.min_conditioning, self.t_closest = float(mon[MIN_COND]), float(mon[T_CLOSEST])

    def ahead_of_pace(self, t: float) -> bool:
        """For a fixed-step run: whether the energy drift of this conservative mechanism is
        ahead of MONITOR_ENERGY_PACE of its limit at time ``t`` (the limit times
        ``max(t / t_end, 1/2)``): the step's own truncation would then use up the limit
        before the end, and the following intervals should take finer sub-steps
        (config.FIXED_STEP_MAX_LEVEL).  At most FIXED_STEP_PACE_LEVELS times, and no
        more once a refinement did not halve the drift's rate."""
        if not (self.acts and self.conservative) or self._pace_spent:
            return False
        scale = self._energy_scale()
        budget = config.MONITOR_ENERGY_PACE * config.MONITOR_ENERGY_DRIFT * max(t / self.t_end, 0.5)
        # once per tenth of the limit the drift grows: a refinement acts on what follows
        if not (self.max_drift > budget * scale
                and self.max_drift > self._pace_marks[-1][1] + 0.1 * config.MONITOR_ENERGY_DRIFT * scale):
            return False
        (t0, d0), (t1, d1) = self._pace_marks[-2:] if len(self._pace_marks) > 1 else ((0.0, 0.0), self._pace_marks[-1])
        if len(self._pace_marks) > 1 and t1 > t0 and t > t1:
            # the last refinement did not slow the drift: its cause is no truncation error
            # of the step (index3's Newton and penalty), and finer steps only cost time
            if (self.max_drift - d1) / (t - t1) > 0.5 * (d1 - d0) / (t1 - t0):
                self._pace_spent = True
                return False
        self._pace_marks.append((t, self.max_drift))
        if len(self._pace_marks) > config.FIXED_STEP_PACE_LEVELS:
            self._pace_spent = True
        return True

    def collapsed(self, exc, recorder) -> SimulationError:
        """The run's error for an adaptive solver whose steps collapsed
        (:class:`~engine.integrators.StepCollapse`).  Near a singular configuration the
        solver is resolving either the joint rates reversing inside a step (a branch
        switch: dca with dop853 at 1e-10 on the parallelogram) or the round-off of the loop
        solve, which grows as the loop conditioning falls, against tolerances tighter than
        it (hdca at 1e-12 there); elsewhere the right-hand side is too stiff for an
        explicit solver at these tolerances."""
        mob = self._mobility_now()
        if mob is not None and mob < config.SINGULAR_WINDOW:
            msg = (f"{self._worst_joint(recorder, loops_only=True)} (loop mobility measure {mob:.2g} there): "
                   f"{exc.reason} while crossing a singular configuration: the joint rates change within a "
                   "step (the motion leaving its branch), or the tolerances are tighter than the round-off of "
                   f"the loop solve there. {self.form.singular_remedy}")
        else:
            msg = (f"{exc.reason}: the accelerations change faster than the solver can follow (a stiff "
                   f"mechanism, or a right-hand side that is not smooth){self._closest()}. "
                   f"{self.form.rough_remedy.format(implicit=_other_implicit(exc.method))}")
        return SimulationError(exc.t, msg.rstrip())

    def _mobility_now(self) -> float | None:
        """The loops' mobility measure at the state being judged (:meth:`Formulation.mobility`
        through ``self.mobility``, which the pipeline sets), None without loops or a state."""
        if self.model.nj == self.model.nb and not self.model.ng or self.mobility is None:
            return None
        try:
            mob = self.mobility()
        except Exception:  # noqa: BLE001 - a message must not fail on its figure
            return None
        return None if mob is None or not np.isfinite(mob) else float(mob)

    def _where_singular(self) -> tuple[str, str]:
        """The failure message's note on the loops and what to try: a singular configuration
        is blamed only where the mobility measure says the mechanism is near one."""
        mob = self._mobility_now()
        if mob is None:
            return "", self.form.remedy
        if mob < config.SINGULAR_WINDOW:
            return (f" (near a singular configuration: loop mobility measure {mob:.2g}{self._closest()})",
                    self.form.singular_remedy)
        return f" (the loops are well conditioned there: mobility measure {mob:.2g})", self.form.remedy

    def failed_evaluation(self, t: float, exc: SimulationError) -> int:
        """An evaluation raised at the new state (e.g. inconsistent closure equations next to a
        singular configuration): a level to retry at, or re-raise when none is left."""
        if self.acts and self._level < config.MONITOR_MAX_REFINE:
            self._level += 1
            self.retries += 1
            return self._level
        raise exc

    # -------------------------------------------------------------- statistics
    def stats(self) -> dict:
        """The run's health figures (merged into ``Simulation.stats``)."""
        scale = self._energy_scale()
        out = {"monitor": self.mode, "retries": self.retries, "max_position_violation": self.max_position,
               "t_max_position_violation": self.t_max_position, "energy_drift": self.max_drift,
               "energy_drift_relative": self.max_drift / scale,
               "conservative": self.conservative, "monitor_time": self.time,
               "max_continuity_ratio": self.max_continuity, "max_leap_ratio": self.max_leap}
        if np.isfinite(self.min_conditioning):
            out["min_loop_conditioning"] = self.min_conditioning
            out["t_closest_approach"] = self.t_closest
        if self.flags:
            out["monitor_flags"] = list(self.flags[:20])
        return out

    def log(self, status: str, t: float, message: str) -> None:
        """Append the run's figures to ``$LINKWORK_MONITOR_LOG`` (when set): one JSON line."""
        path = os.environ.get("LINKWORK_MONITOR_LOG")
        if not path:
            return
        st = self.stats()
        bad = (st["max_position_violation"] > config.MONITOR_POSITION_TOL
               or (self.conservative and st["energy_drift_relative"] > config.MONITOR_ENERGY_DRIFT))
        rec = {"status": status, "t": float(t), "mechanism": self.model.name, "formulation": self.form.name,
               "integrator": getattr(self.form.settings, "integrator", None),
               "dt": getattr(self.form.settings, "dt", None), "mode": self.mode,
               "max_position_violation": st["max_position_violation"],
               "energy_drift_relative": st["energy_drift_relative"], "conservative": self.conservative,
               "retries": self.retries, "max_continuity_ratio": self.max_continuity, "limit_exceeded": bool(bad), "flags": len(self.flags), "message": message[:300],
               "test": os.environ.get("PYTEST_CURRENT_TEST", "")}
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec) + "\n")
        except OSError:
            pass


def summary(stats: dict, short: bool = False) -> str:
    """One line for ``linkwork run`` and the app's run panel: worst position violation,
    energy drift (conservative mechanisms), closest approach to a singular configuration,
    retries.  ``short``: the compact form of the solver panel's figures."""
    if short:
        parts = [f"violation ≤ {stats.get('max_position_violation', 0.0):.1e} m"]
        if stats.get("conservative"):
            parts.append(f"energy drift {stats.get('energy_drift_relative', 0.0):.0e} of peak KE")
        if "min_loop_conditioning" in stats:
            parts.append(f"loop conditioning ≥ {stats['min_loop_conditioning']:.1g}"
                         + (" (filtered)" if "filtered_loop_conditioning" in stats else ""))
        if stats.get("retries"):
            parts.append(f"{stats['retries']} retries")
        return " · ".join(parts)
    parts = [f"worst position violation {stats.get('max_position_violation', 0.0):.2g} m"]
    if stats.get("conservative"):
        parts.append(f"energy drift {stats.get('energy_drift', 0.0):.2g} J "
                     f"({stats.get('energy_drift_relative', 0.0):.1g} of peak kinetic)")
    else:
        parts.append(f"energy change {stats.get('energy_drift', 0.0):.2g} J (not conservative)")
    if "min_loop_conditioning" in stats:
        parts.append(f"loop conditioning >= {stats['min_loop_conditioning']:.2g} "
                     f"(closest at t = {stats['t_closest_approach']:.3g} s)")
    if "filtered_loop_conditioning" in stats:
        parts.append(f"loop solve filtered down to {stats['filtered_loop_conditioning']:.2g} at t = "
                     f"{stats['t_filtered']:.3g} s (exact if a singular configuration is crossed there; if the loops "
                     f"only pass near one, the force along its direction is off by up to {stats['near_pass_error']:.1g} "
                     "of itself, which dca and hdca avoid)")
    parts.append(f"{stats.get('retries', 0)} retries")
    return ", ".join(parts)


def _other_implicit(method: str) -> str:
    """The implicit integrators a collapse of ``method`` is pointed at: radau and bdf, less
    the one the run used (a bdf run whose steps collapsed is pointed at radau)."""
    return "--integrator " + " or ".join(m for m in ("radau", "bdf") if m != method)
