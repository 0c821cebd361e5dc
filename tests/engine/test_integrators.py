"""The adaptive integrators' stall guard (engine/integrators.py, ``StepCollapse``).

A solver whose accepted steps collapse far below the output interval and stay there is
resolving something the models cannot contain (a near-impulse); without the guard it
grinds on for minutes.  The guard must stop such a run early, and must leave alone a
smooth stiff run and a single sharp feature the solver passes in a few steps.
"""

import numpy as np
import pytest

from linkwork.engine import config
from linkwork.engine.integrators import StepCollapse, scipy_ode


class _Ode:
    """The part of a formulation the adaptive integrators use."""

    projects = False
    near_singular = False
    step_bound = None

    def __init__(self, f):
        self.f = f
        self.nfev = 0

    def rhs(self, t, y):
        self.nfev += 1
        return self.f(t, y)


def _integrate(form, method, t_end, tol, stall_steps=config.STALL_STEPS, dt=0.01):
    out = list(scipy_ode(form, method, np.array([1.0]), dt, t_end, tol, tol, lambda: False, stall_steps))
    return np.array([t for t, _ in out]), np.array([y[0] for _, y in out])


@pytest.mark.parametrize("method", ["dop853", "rk45"])
def test_a_sliding_right_hand_side_stops_with_step_collapse(method):
    """y' = -sign(y) from y = 1 reaches 0 at t = 1 and then chatters around it: an explicit
    error-controlled solver takes steps of the order of its tolerance there, for as long as
    it runs.  The guard stops it within STALL_STEPS steps of reaching the sliding line."""
    form = _Ode(lambda t, y: -np.sign(y))
    with pytest.raises(StepCollapse) as info:
        _integrate(form, method, 2.0, 1e-10)
    err = info.value
    # every counted step is shorter than STALL_RATIO * dt: together under 1e-5 s
    assert 1.0 < err.t < 1.0 + config.STALL_STEPS * config.STALL_RATIO * 0.01 + 1e-9
    assert err.steps == config.STALL_STEPS and err.h < config.STALL_RATIO * 0.01
    assert "steps collapsed" in err.reason
    per_step = {"dop853": 12, "rk45": 6}[method]
    assert form.nfev < 3 * per_step * config.STALL_STEPS + 20_000  # stopped soon, not ground on


def test_smooth_stiff_and_a_single_sharp_spike_pass():
    """Stiffness keeps every step small but not collapsed (y' = -1e4 (y - cos t): rk45's
    stability limit is ~3e-4 s, 3e-2 of the output interval); a Lorentzian spike of width
    1e-9 s costs a few steps near 1e-9 s and the solver grows its step again."""
    stiff = _Ode(lambda t, y: -1e4 * (y - np.cos(t)))
    ts, ys = _integrate(stiff, "rk45", 0.5, 1e-8)
    assert ts[-1] == pytest.approx(0.5) and abs(ys[-1] - np.cos(0.5)) < 1e-3
    eps = 1e-9
    spike = _Ode(lambda t, y: np.array([eps / ((t - 0.255) ** 2 + eps**2) / np.pi]))
    ts, ys = _integrate(spike, "dop853", 0.5, 1e-10)
    assert ts[-1] == pytest.approx(0.5) and ys[-1] == pytest.approx(2.0, abs=1e-6)  # 1 + the spike's area


def test_without_the_guard_the_same_run_goes_on():
    """``stall_steps=None`` (the monitor observing or off) integrates through a collapse:
    y' = -sign(y) at 1e-10 up to t = 1.00003 s takes some 3000 steps of 1e-8 s after the
    sliding line, and ends; the guard stops the same run."""
    form = _Ode(lambda t, y: -np.sign(y))
    ts, ys = _integrate(form, "rk45", 1.00003, 1e-10, stall_steps=None)
    assert ts[-1] == pytest.approx(1.00003) and abs(ys[-1]) < 1e-6
    assert form.nfev > 2 * 6 * config.STALL_STEPS
    with pytest.raises(StepCollapse):
        _integrate(_Ode(form.f), "rk45", 1.00003, 1e-10)


def _rough(t, y):
    """1 plus a deterministic jitter of 0.1, a different value at every t: a right-hand
    side rough at the scale of rtol = 1e-10, which rk45 follows with steps near 1e-7 s."""
    return np.array([1.0 + 0.1 * ((np.sin(t * 1e7) * 43758.5453) % 1.0 - 0.5)])


def test_a_rough_right_hand_side_stops_with_a_crawl_not_a_collapse():
    """Steps that settle at 1e-5 of the output interval, above the collapse's ratio, would
    take 1e5 steps an output interval: CRAWL_STEPS of them in a row stop the run, within
    one output interval."""
    form = _Ode(_rough)
    with pytest.raises(StepCollapse) as info:
        _integrate(form, "rk45", 0.01, 1e-10)
    err = info.value
    assert err.steps == config.CRAWL_STEPS
    assert config.STALL_RATIO * 0.01 <= err.h < config.CRAWL_RATIO * 0.01
    assert err.t < config.CRAWL_STEPS * config.CRAWL_RATIO * 0.01
    assert "steps collapsed" in err.reason and f"{config.CRAWL_RATIO:g}" in err.reason


def _gappy(t, y):
    """:func:`_rough` but for a smooth gap of 5e-6 s every 2e-5 s, where rk45 lengthens its
    steps past CRAWL_RATIO of the output interval a few times before the rough part
    shortens them again."""
    rough = (t % 2e-5) < 1.5e-5
    return np.array([1.0 + (0.1 * ((np.sin(t * 1e7) * 43758.5453) % 1.0 - 0.5) if rough else 0.0)])


def test_short_steps_broken_now_and_then_by_a_longer_one_stop_as_a_crawl():
    """Steps near 1e-7 s with a longer one every few dozen: the count of short steps in a
    row starts again at each longer one and never reaches CRAWL_STEPS (at most some 200
    here), but CRAWL_STEPS steps that advance less than CRAWL_STEPS * CRAWL_RATIO output
    intervals stop the run all the same (some 400,000 steps for the 0.05 s asked)."""
    form = _Ode(_gappy)
    with pytest.raises(StepCollapse) as info:
        _integrate(form, "rk45", 0.05, 1e-10)
    err = info.value
    assert err.steps == config.CRAWL_STEPS
    assert err.t < config.CRAWL_STEPS * config.CRAWL_RATIO * 0.01
    assert err.h < config.CRAWL_RATIO * 0.01  # the average step
    assert "steps averaged" in err.reason and f"{config.CRAWL_RATIO:g}" in err.reason
