"""The branch and health monitor's compiled half: the continuity checks' arithmetic and
the verdict the compiled row loops give each row (:func:`plain_row`), with the slots of
the monitor's state they share with :class:`engine.monitor.Monitor`
(:meth:`~engine.monitor.Monitor.to_row_loop`, :meth:`~engine.monitor.Monitor.from_row_loop`)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


# The continuity checks' arithmetic, one kernel each: numpy's small reductions cost a row
# ~100 us apiece.  Same operations in the same order as the formulas in the docstrings
# of Monitor._continuity and Monitor._leap; a NaN in a maximum propagates as numpy's does.
@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _all_finite(a):
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            if not math.isfinite(a[i, c]):
                return False
    return True


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _nanmax(m, x):
    return x if (x > m or x != x) else m


@njit(cache=True, nogil=True, _nrt=False)
def continuity_ratio(dt, V0, V1, A0, A1, Am, has_m):
    """:meth:`Monitor._continuity` from the twists ``V0``, ``V1`` and accelerations ``A0``,
    ``A1`` at the interval's ends (``Am`` one row before, if ``has_m``); 0 where ``A1`` is
    not all finite (a formulation without accelerations)."""
    if not _all_finite(A1):
        return 0.0
    worst = 0.0
    for c0 in (0, 3):
        r = 0.0
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        v0 = 0.0
        v1 = 0.0
        for i in range(V1.shape[0]):
            for c in range(c0, c0 + 3):
                r = _nanmax(r, abs(V1[i, c] - V0[i, c] - 0.5 * dt * (A0[i, c] + A1[i, c])))
                a0 = _nanmax(a0, abs(A0[i, c]))
                a1 = _nanmax(a1, abs(A1[i, c]))
                if has_m:
                    a2 = _nanmax(a2, abs(A1[i, c] - 2.0 * A0[i, c] + Am[i, c]))
                v0 = _nanmax(v0, abs(V0[i, c]))
                v1 = _nanmax(v1, abs(V1[i, c]))
        scale = dt * max(a0, a1) + dt / 12.0 * a2
        floor = 1e-9 * (1.0 + max(v0, v1))
        ratio = r / (scale + floor)
        if ratio > worst:
            worst = ratio
    return worst


@njit(cache=True, nogil=True, _nrt=False)
def leap_ratio(dt, x0, x1, V0, V1, A0, A1, integrates_velocities):
    """:meth:`Monitor._leap` from the centres of mass ``x0``, ``x1``, twists and
    accelerations at the interval's ends; 0 where ``A1`` or ``x1`` is not all finite."""
    if not (_all_finite(A1) and _all_finite(x1)):
        return 0.0
    R = 0.0
    r_v = 0.0
    a0m = 0.0
    a1m = 0.0
    da = 0.0
    xm0 = 0.0
    xm1 = 0.0
    for i in range(x1.shape[0]):
        for c in range(3):
            R = _nanmax(R, abs(x1[i, c] - x0[i, c] - 0.5 * dt * (V0[i, c] + V1[i, c])
                               - dt * dt / 12.0 * (A0[i, c] - A1[i, c])))
            r_v = _nanmax(r_v, abs(V1[i, c] - V0[i, c] - 0.5 * dt * (A0[i, c] + A1[i, c])))
            a0m = _nanmax(a0m, abs(A0[i, c]))
            a1m = _nanmax(a1m, abs(A1[i, c]))
            da = _nanmax(da, abs(A1[i, c] - A0[i, c]))
            xm0 = _nanmax(xm0, abs(x0[i, c]))
            xm1 = _nanmax(xm1, abs(x1[i, c]))
    scale = dt * r_v + dt * dt * max(a0m, a1m) / 90.0
    if not integrates_velocities:
        scale += dt * dt * da / 12.0
    floor = 1e-9 * (1.0 + max(xm0, xm1))
    return R / (scale + floor)


# The compiled row loop's monitor state (engine/row_loop.py): one float64 array's slots
# (Monitor.to_row_loop, Monitor.from_row_loop)
ACTIVE, CONSERVATIVE, INTEGRATES_V, PACE, T_END = 0, 1, 2, 3, 4
E0, KE_PEAK, E_FLOOR, HAS_PREV, PREV_VP, PREV_VV, PREV_E = 5, 6, 7, 8, 9, 10, 11
N_MOTION, T_MOTION, MAX_POS, T_MAX_POS, MAX_DRIFT, T_MAX_DRIFT, MAX_CONT, MAX_LEAP, PACE_MARK = (
    12, 13, 14, 15, 16, 17, 18, 19, 20)
# the limits (engine.config, read when the run starts)
POS_TOL, DRIFT, JUMP, V_FLOOR, P_FLOOR, E_JUMP, CONT, PACE_FRAC = 21, 22, 23, 24, 25, 26, 27, 28
# the columns the monitor reads
I_VP, I_VV, I_KE, I_E = 29, 30, 31, 32
T_MOTION_BEFORE = 33  # the time of the kept row before the last
# the loops' conditioning: the first reported, the velocity residual on entering the singular
# window (NaN: none yet), the lowest so far and when, the window (config.SINGULAR_WINDOW)
COND0, VV_ENTRY, MIN_COND, T_CLOSEST, WINDOW = 34, 35, 36, 37, 38
# a passive mechanism with dampers (Monitor.dissipative)
DISSIPATIVE = 39
MONITOR_SLOTS = 40


@njit(cache=True, nogil=True, _nrt=False)
def plain_row(mon, hist, t, out, V, acc, x, health):
    """Whether the monitor would keep the row ``out`` at ``t`` (twists ``V``, classical
    accelerations ``acc``, centres of mass ``x``, the formulation's ``health`` = [1.0 if it
    reports the loop conditioning, its value]) without a word -- :meth:`Monitor._judge`
    finding nothing, and :meth:`Monitor.ahead_of_pace` saying no -- and if so its state
    and statistics updated with it; else nothing changed.  The same figures by the same
    operations as the monitor's.  ``hist``: (2, nb, 15) the last two kept rows' [V, acc,
    x], the last first."""
    vp, vv, ke, e = out[np.int64(mon[I_VP])], out[np.int64(mon[I_VV])], out[np.int64(mon[I_KE])], out[np.int64(mon[I_E])]
    if not (np.isfinite(vp) and np.isfinite(vv) and np.isfinite(ke) and np.isfinite(e)):
        return False
    has_cond = health[0] != 0.0
    cond = health[1]
    if has_cond and not np.isfinite(cond):
        return False
    cond0 = mon[COND0]
    if has_cond and cond0 != cond0:
        cond0 = max(cond, 1e-300)
    near = has_cond and cond0 == cond0 and cond < mon[WINDOW] * cond0
    vv_entry = mon[VV_ENTRY]
    ke_peak = ke if ke > mon[KE_PEAK] else mon[KE_PEAK]
    scale = max(max(ke_peak, mon[E_FLOOR]), 1e-300)
    drift = abs(e - mon[E0])
    conservative = mon[CONSERVATIVE] != 0.0
    integrates_v = mon[INTEGRATES_V] != 0.0
    if vp > mon[POS_TOL]:
        return False
    if conservative and drift > mon[DRIFT] * scale:
        return False
    dissipative = mon[DISSIPATIVE] != 0.0
    if dissipative and e - mon[E0] > mon[DRIFT] * scale:
        return False
    if mon[HAS_PREV] != 0.0:
        if integrates_v and vv > mon[JUMP] * mon[PREV_VV] and vv > mon[V_FLOOR]:
            return False
        if integrates_v and near and vv_entry == vv_entry and vv > mon[JUMP] * vv_entry and vv > mon[V_FLOOR]:
            return False
        if vp > mon[JUMP] * mon[PREV_VP] and vp > mon[P_FLOOR]:
            return False
        if conservative and abs(e - mon[PREV_E]) > mon[E_JUMP] * scale:
            return False
        if dissipative and e - mon[PREV_E] > mon[E_JUMP] * scale:
            return False
    n_motion = np.int64(mon[N_MOTION])
    dt = t - mon[T_MOTION]
    V0, A0, x0 = hist[0, :, 0:6], hist[0, :, 6:12], hist[0, :, 12:15]
    Am = hist[1, :, 6:12] if n_motion > 1 else A0
    continuity = 0.0
    leap = 0.0
    if n_motion > 0 and dt > 0:
        if integrates_v:
            continuity = continuity_ratio(dt, V0, V, A0, acc, Am, n_motion > 1)
        leap = leap_ratio(dt, x0, x, V0, V, A0, acc, integrates_v)
    if not (continuity <= mon[CONT] and leap <= mon[CONT]):
        return False
    max_drift = drift if drift > mon[MAX_DRIFT] else mon[MAX_DRIFT]
    if mon[PACE] != 0.0:
        budget = mon[PACE_FRAC] * mon[DRIFT] * max(t / mon[T_END], 0.5)
        if max_drift > budget * scale and max_drift > mon[PACE_MARK] + 0.1 * mon[DRIFT] * scale:
            return False
    # kept: the monitor's statistics, as Monitor._judge's acceptance updates them
    mon[COND0] = cond0
    if near and vv_entry != vv_entry:
        mon[VV_ENTRY] = mon[PREV_VV] if mon[HAS_PREV] != 0.0 else vv
    elif not near:
        mon[VV_ENTRY] = np.nan
    if has_cond and cond < mon[MIN_COND]:
        mon[MIN_COND], mon[T_CLOSEST] = cond, t
    mon[HAS_PREV] = 1.0
    mon[PREV_VP], mon[PREV_VV], mon[PREV_E] = vp, vv, e
    for i in range(hist.shape[1]):
        for c in range(15):
            hist[1, i, c] = hist[0, i, c]
        for c in range(6):
            hist[0, i, c] = V[i, c]
            hist[0, i, 6 + c] = acc[i, c]
        for c in range(3):
            hist[0, i, 12 + c] = x[i, c]
    mon[N_MOTION] = min(n_motion + 1, 2)
    mon[T_MOTION_BEFORE] = mon[T_MOTION]
    mon[T_MOTION] = t
    if continuity > mon[MAX_CONT]:
        mon[MAX_CONT] = continuity
    if leap > mon[MAX_LEAP]:
        mon[MAX_LEAP] = leap
    mon[KE_PEAK] = ke_peak
    if vp > mon[MAX_POS]:
        mon[MAX_POS], mon[T_MAX_POS] = vp, t
    if drift > mon[MAX_DRIFT]:
        mon[MAX_DRIFT], mon[T_MAX_DRIFT] = drift, t
    return True
