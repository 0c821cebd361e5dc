"""The partition monitor of ``rcr`` and ``embedding``: when to look for another choice
of independent speeds, when to take it, and how a step near a dead point of the
partition in use is taken.

A dead point of a partition is a configuration where one of its blocks (the loop rows
over the dependent speeds) is singular; the mechanism itself may be far from any
singular configuration, and another partition is regular there.  Near one, the map from
independent to dependent speeds (paper 002, eq. 34) has a pole: a step across it is
wrong by far more than its error estimate says, and the switch at the next accepted
state comes after the damage.  The monitor therefore watches the blocks' conditioning
(``block_conditioning``: the smallest ``min |R_ii| / max |R_ii|`` of the blocks' QR
factors) at every accepted state and, under ``rk4``, at every stage
(``stages_lowest``), and each pivot ``|R_ii| / max |R_ii|`` of every block at every
accepted state (``_block_ends``: a block can die behind a lower one);
docs/formulations.md (``rcr``, "Dead points of a partition") gives the measurements.  At
a change of mobility every partition dies; the loops' mobility measure (``dense``'s)
tells that case, where the run stops.
"""

from __future__ import annotations

import numpy as np

from .. import config
from ..errors import SimulationError
from .rcr_kernels import dead_point_bound, dying_blocks, pivots_fell
from .rcr_partition import SWITCH_FALL, SWITCH_RTOL, loop_singularity, singular_crossing

#: a new partition is adopted only if its conditioning beats the current one by this
SWITCH_GAIN = 2.0
#: the lowest the partition monitor's threshold falls below SWITCH_RTOL
#: (:meth:`PartitionMonitor._searches`), as a fraction of it
SEARCH_FLOOR = 0.1
#: the most halvings of an rk4 step near a dead point of the partition
#: (:meth:`PartitionMonitor._rk4_guarded`)
DEAD_POINT_DEPTH = 4
#: near a singular configuration of the loops, a search that kept the partition is not made
#: again while the block conditioning over the mobility measure stays within this factor
#: of its highest since (:meth:`PartitionMonitor._repartition`): every partition's
#: conditioning falls with the mobility measure there (a parallelogram four-bar folding:
#: the ratio 0.783 to 0.779 over the 14 post-steps before it stops, where nine searches
#: each kept the partition), while at a dead point of the partition the ratio falls
#: toward zero
RATIO_DRIFT = 1.1
#: an adaptive step where the block conditioning falls: at most this fraction of the time
#: in which it would reach zero at its rate since the last accepted state
#: (:meth:`PartitionMonitor.step_bound`)
DEAD_POINT_STEP = 0.5
#: ... and where a block's conditioning, whatever its value, would reach zero at its rate
#: since the last accepted state within this many steps as long as the last
#: (``mechanism(44213, 17, 6)``: a block at 0.80, 0.26, then 0.03 -- its dead point
#: crossed inside the next step)
DEAD_POINT_RANGE = 2.0


class PartitionMonitor:
    """The partition monitor's methods, for :class:`.rcr.RCRFormulation` (which keeps the
    state they read: ``part``, ``block_conditioning``, ``_search_below``, ``_falling``,
    ``_step_began``, ``stages_lowest``, ``_sing_samples``, ``_kept_ratio``, ``_last_conditioning``,
    ``switches``, ``switch_log``, ``switch_conditioning``; and ``_positions``, ``_close``,
    ``_use``, ``_search_at``)."""

    def _rk4_switching(self, t0: float, t1: float, y: np.ndarray, n: int) -> np.ndarray:
        """The generic rk4 loop (:meth:`.base.Formulation.rk4_steps`), its steps taken by
        :meth:`_rk4_guarded`, which knows the dead points of a partition."""
        h = (t1 - t0) / n
        nq = self.model.nq
        for i in range(n):
            ti = t1 if i == n - 1 else t0 + (i + 1) * h
            # the closed state's conditioning: the last post_step's, or the interval's start
            began = self.block_conditioning if i else self._blocks_at(y[:nq])
            try:
                y = self._rk4_guarded(t0 + i * h, h, ti, y, began, 0)
            finally:
                self._step_began = 0.0
            self.watch_singular(ti, y)
        return y

    def _blocks_at(self, q: np.ndarray) -> float:
        """The block conditioning at ``q``, and each pivot's (``_block_ends``) as the last
        accepted state's: :meth:`_searches` watches each pivot's fall from there."""
        cond = self._positions(q)
        self._block_ends[:] = np.nan
        dying_blocks(self.part.lx.blk_dstart, self.tau, self._block_ends, SWITCH_RTOL, DEAD_POINT_RANGE)
        return cond

    def _rk4_guarded(self, t: float, h: float, t_end: float, y: np.ndarray, began: float, depth: int) -> np.ndarray:
        """One rk4 step of ``h`` from ``(t, y)``, closed at ``t_end`` by :meth:`post_step`;
        ``began``: the block conditioning at ``y``.  At a dead point of the partition (a
        block singular; not the mechanism) the map from independent to dependent speeds
        has a pole, and a step near or across one is wrong far beyond rk4's error:

        - where the step's stages saw the conditioning fall by more than SWITCH_FALL below
          ``began`` (under SWITCH_RTOL), the step is taken as two halves instead, down to
          DEAD_POINT_DEPTH halvings, so that the partition monitor looks between them and
          switches before the dead point, a fall counted from the whole step's start
          (``mechanism(40244, 13, 5)`` at dt = 0.01: a block's 0.064 dips to about 0.01
          and back within 13 ms, between two accepted states; 0.73 m off after 1 s without
          the halves, 8.4e-3 m with them: the block's approach costs accuracy before its
          conditioning shows it); or where any pivot of any block (each dependent
          speed's ``|R_kk|`` over its block's largest, ``stages_lowest[1 + k]``) fell
          that far below its value at ``y`` (``_block_ends``), which the worst block
          hides when another sits lower (``mechanism(40152, 12, 3)`` under rcr: 1.0e-3 m
          after 1 s with the worst block watched alone, 3.6e-5 m with every pivot);
          the prediction of :meth:`_searches` counts whole steps, ``_reach_scale``
          parts of one;
        - a step after which the monitor switched, the conditioning having fallen by more
          than SWITCH_FALL, is taken again from ``y`` with the new partition, where that
          one is better conditioned there than the old one was at the step's end
          (``mechanism(31390, 19, 5)`` without the halves: 0.23 m off after 1 s without
          the second try, 4.2e-5 m with it; dense's error at the same step is 2.4e-7 m).

        A step with neither is the generic loop's, bit for bit."""
        nq = self.model.nq
        lowest = self.stages_lowest
        lowest[:] = np.inf
        part = self.part
        y1 = self._rk4_step(t, y, h)
        low = lowest[0]
        if depth < DEAD_POINT_DEPTH and ((low < SWITCH_RTOL and SWITCH_FALL * low < began) or pivots_fell(
                part.lx.blk_dstart, lowest, self._block_ends, SWITCH_RTOL, SWITCH_FALL)):
            if depth == 0:  # its parts' falls count from here: a half step's fall is smaller
                self._step_began = began
            half = h / 2
            ym = self._rk4_guarded(t, half, t + half, y, began, depth + 1)
            return self._rk4_guarded(t + half, half, t_end, ym, self.block_conditioning, depth + 1)
        self._reach_scale = float(2 ** depth)
        try:
            y1 = self.post_step(t_end, y1)
            if self.part is not part and SWITCH_FALL * self.switch_conditioning < began:
                if self._positions(y[:nq]) >= self.switch_conditioning:
                    y1 = self.post_step(t_end, self._rk4_step(t, y, h))
        finally:
            self._reach_scale = 1.0
        lowest[:] = np.inf
        return y1

    def step_bound(self, t, y):
        """Adaptive integrators call this before every step: the partition monitor runs
        on every accepted state, not only at output instants (a dead point of the
        current partition can come within one output interval).

        Where one of the partition's blocks has a conditioning below SWITCH_RTOL and
        falling, or falling so fast that it would reach zero within DEAD_POINT_RANGE
        steps like the last, the step is bounded to DEAD_POINT_STEP of the time in which
        it would reach zero at its rate since the last accepted state
        (:func:`.rcr_kernels.dead_point_bound`). Each block is watched, not only the
        worst: a block dying fast can pass under the worst block's steady value and back
        within one step (``mechanism(44213, 17, 6)`` under dop853 at 1e-10: a block held
        at 0.0135 hid one that fell from 0.80 and died at 0.82154 s; the run ended 1 s
        9.6e-6 m from ``dense``). At a dead point of the partition the dependent speeds'
        map (eq. 34) has a pole: a step across one is wrong by far more than its error
        estimate says (dop853 at 1e-10 on the differential tests'
        ``mechanism(31390, 19, 5)``: 1.3e-7 m in one step, a speed error that grew to
        3.7e-5 m in 0.17 s), and
        the partition switch at the next accepted state comes too late. Bounded, the
        steps close in on the dead point, and the search at each accepted state switches
        once another partition beats the falling one by SWITCH_GAIN, or by any margin
        where it fell by more than SWITCH_FALL since the last accepted state
        (:meth:`_searches`)."""
        if not self.ncr:
            return None
        part = self.part
        self.block_conditioning = self._positions(y[: self.model.nq])
        last = self._last_conditioning
        conds = np.empty(part.lx.blk_dstart.shape[0] - 1)
        same = last is not None and last[2] is part and t > last[0]
        bound = dead_point_bound(part.lx.blk_dstart, self.tau, conds, last[1] if same else conds,
                                 t - last[0] if same else 0.0, SWITCH_RTOL, DEAD_POINT_RANGE, DEAD_POINT_STEP)
        if self._searches():
            self._repartition(t, y, close=False)
        if self.part is not part:  # switched: the new partition's conditioning, next time
            self._last_conditioning = None
            return None
        self._last_conditioning = (t, conds, part)
        return bound if bound < np.inf else None

    def _searches(self) -> bool:
        """Whether the partition monitor looks at this state: the block conditioning
        below the search threshold, or the loops near a singular configuration
        (:meth:`_repartition`).  The threshold is SWITCH_RTOL until a search keeps the
        partition (none beats it by SWITCH_GAIN); it is then the conditioning there over
        SWITCH_GAIN (not below SEARCH_FLOOR * SWITCH_RTOL), so that a mechanism whose best
        partition stays under SWITCH_RTOL -- a geared four-bar's 0.056 -- is searched
        again where the conditioning has fallen by that factor, not after every step.  A
        conditioning back at SWITCH_RTOL, or a switch, restores it.  Every choice of
        dependent speeds is singular at a change of mobility, so the conditioning falls
        there, and the searches that follow track the mobility measure.  A conditioning
        under SWITCH_RTOL that fell by more than SWITCH_FALL since the last accepted state
        is searched whatever the threshold: it may be heading for a dead point of the
        partition within the next step (``mechanism(40116, 15, 2)`` at rk4's dt = 0.01:
        0.025 to 0.0125 in one step, a dead point inside the next, whose end reads 0.024
        again).  :func:`.rcr_rows.close_post` applies the same rule."""
        below = self._search_below
        cond = self.block_conditioning
        if cond >= below[1]:
            below[0] = below[1]
        # from the last accepted state, or from the start of the rk4 step being taken in parts
        self._falling = cond < below[1] and SWITCH_FALL * cond < max(below[2], self._step_began)
        below[2] = cond
        self._dying = bool(dying_blocks(self.part.lx.blk_dstart, self.tau, self._block_ends, SWITCH_RTOL,
                                        DEAD_POINT_RANGE * self._reach_scale))
        self._falling = self._falling or self._dying
        return cond < below[0] or self._falling or bool(self._sing_samples)

    def _repartition(self, t, y, close=True):
        """A block has become ill-conditioned, or the loops are near a singular configuration.
        If the loops themselves reach one (every partition is singular there: a change of
        mobility), stop; otherwise re-choose the independent speeds at this state (the state
        layout is unchanged).  The mobility measure is tracked while it is below twice
        SINGULAR_WINDOW; :func:`singular_crossing` tells a crossing from a near pass.
        Tracking it, a search that kept the partition is made again only once the block
        conditioning over the measure has fallen by RATIO_DRIFT from its highest since."""
        m = self.model
        q = y[: m.nq]
        s = loop_singularity(m, q, self.structure, self.loop_rank, self.loop_jacobian)
        near = s < 2.0 * config.SINGULAR_WINDOW
        if near:
            self._sing_samples = [p for p in self._sing_samples if 0.0 < t - p[0] <= 0.1][-8:] + [(t, s)]
            crossing, low, tau = singular_crossing(self._sing_samples, t)
            if crossing:
                raise SimulationError(
                    t, f"{self.name}: the loops reach a singular configuration (mobility measure {s:.2e}, "
                       f"falling below {config.SINGULAR_STOP:g} within {tau:.2g} s): the mechanism may change branch there, "
                       "which a choice of independent coordinates cannot decide; the dense formulation crosses "
                       "singular configurations")
        else:
            self._sing_samples = []
            self._kept_ratio = None
        if self.block_conditioning >= self._search_below[0] and not self._falling:
            return y
        # a partition with a pivot about to die is worth no more than that pivot soon will be
        old_cond = 0.0 if self._dying else self.block_conditioning
        ratio = self.block_conditioning / s if s > 0.0 else 0.0
        kept = self._kept_ratio
        if near and kept is not None and kept[0] is self.part and RATIO_DRIFT * ratio >= kept[1]:
            # the fall is the mechanism's own, toward a singular configuration: not searched again
            self._kept_ratio = (self.part, max(kept[1], ratio))
            return y
        found = self._search_at(q)
        if old_cond < self._search_below[0]:
            self._search_below[0] = max(old_cond / SWITCH_GAIN, SEARCH_FLOOR * SWITCH_RTOL)  # kept: see _searches
        # falling fast, the partition is left for any better one: the one it has may die within a step
        gain = 1.0 if self._falling else SWITCH_GAIN
        if found.key() != self.part.key() and found.conditioning > gain * old_cond:
            new = found.partition()
            self.switches += 1
            self.switch_conditioning = old_cond
            if len(self.switch_log) < 20:
                self.switch_log.append(f"t = {t:.4g} s: independent speeds {self.part.independent.tolist()} -> "
                                       f"{new.independent.tolist()} (block conditioning {old_cond:.1e} -> "
                                       f"{new.conditioning:.1e})")
            self._use(new)  # a ratio kept for the old partition no longer applies (kept[0] is not part)
            if close:
                y = self._close(t, y)
        elif near:
            self._kept_ratio = (self.part, ratio)
        return y
