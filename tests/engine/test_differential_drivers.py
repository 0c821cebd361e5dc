"""Drivers on random mechanisms: every formulation that honours drivers against ``dense``
-- agreement of the positions and of the drivers' efforts, or exit 3; never exit 0 with
a different motion or effort.  The formulations that do not honour drivers refuse.

Each case is a random mechanism (tests/engine/test_differential.py's generator: trees,
one or two loops, springs, dampers, torques) with a driver on one of its one-freedom
tree joints: a motor at constant rate, a harmonic law or a table, so that some cases
keep freedoms beside the driver and some are driven through a loop.  Both sides run
dop853 at 1e-10 for one second; positions must agree to 1e-6 m, efforts to 1e-6 of
the largest effort.
"""

import dataclasses

import numpy as np
import pytest

from linkwork.engine.formulations import REGISTRY
from linkwork.engine.mechfile import DriverSpec, MotionSpec, spec_from_dict, spec_to_dict
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation

from .. import fuzzing
from .conftest import run_to_end
from .test_differential import GEARABLE, T_END, TOLERANCE, mechanism, verdict

#: (seed, bodies, loops)
CASES = ([(2000 + k, 3 + k % 5, k % 3) for k in range(60)] if fuzzing.LONG
         else [(2000 + k, 3 + k % 4, k % 3) for k in range(6)])
LAWS = (MotionSpec("constant-rate", rate=1.5),
        MotionSpec("harmonic", amplitude=0.4, frequency=0.7, phase=0.3, offset=0.1),
        MotionSpec("table", t=(0.0, 0.4, 0.7, 1.2), q=(0.0, 0.3, -0.1, 0.2)))


def driven_mechanism(seed: int, n_bodies: int, loops: int):
    """A random mechanism with a driver on a one-freedom tree joint (the first of the seeds
    ``seed``, ``seed + 100``, ... that has one), the law chosen by the seed."""
    for s in range(seed, seed + 2000, 100):
        spec = mechanism(s, n_bodies, loops, gear=False, joint_types=GEARABLE)
        one = [j for j in spec.joints[:n_bodies] if j.type in ("revolute", "prismatic") and not j.cut]
        if one:
            joint = one[s % len(one)]
            driver = DriverSpec("motor", joint.name, LAWS[seed % len(LAWS)])
            return spec_from_dict(spec_to_dict(dataclasses.replace(spec, drivers=(driver,))))
    raise AssertionError(f"no mechanism with a one-freedom tree joint from seed {seed}")


def _run(model, form):
    """Body positions and the drivers' efforts at the output instants, and the error."""
    sim = Simulation(model, Settings(formulation=form, integrator="dop853", rtol=1e-10, atol=1e-10, t_end=T_END))
    rows, err = run_to_end(sim)
    pos = [i for i, c in enumerate(sim.columns)
           if c.rsplit(".", 1)[0] in model.body_names and c.rsplit(".", 1)[1] in ("x", "y", "z")]
    eff = [i for i, c in enumerate(sim.columns) if c.startswith("driver.") and c.endswith(".effort")]
    assert len(eff) == model.nd
    return rows[:, pos], rows[:, eff], err


def _compare(model, counts, forms=tuple(REGISTRY)):
    """Every formulation of ``forms`` against dense on the driven ``model``; counts what happened."""
    ref, ref_eff, ref_err = _run(model, "dense")
    # a driver on a joint its loops lock stops every formulation at t = 0 (exit 3)
    scale = max(float(np.abs(ref_eff).max()) if ref_eff.size else 0.0, 1e-12)
    for form in forms:
        cls = REGISTRY[form]
        if form == "dense":
            continue
        ok, why = cls.supports(model)
        if not cls.honours_drivers:
            assert not ok and "motor" in why and "formulations that can" in why, (form, why)
            counts["driven: refused"] += 1
            continue
        if not ok:  # a joint a formulation refuses for another reason
            counts["driven: refused"] += 1
            continue
        pos, eff, err = _run(model, form)
        counts["driven: runs"] += 1
        what, dev = verdict(ref, ref_err, pos, err)
        n = min(len(eff), len(ref_eff))
        dev_eff = float(np.abs(eff[:n] - ref_eff[:n]).max()) / scale if n else 0.0
        if what == "agree" and not dev_eff < TOLERANCE:
            what = "silent disagreement"
        counts["silent disagreements" if what == "silent disagreement" else f"driven: {what}"] += 1
        assert what in ("agree", "exit 3"), (form, what, dev, dev_eff, err)


@pytest.mark.slow
@pytest.mark.parametrize("seed,n_bodies,loops", CASES)
def test_driven_mechanisms_agree_with_dense_or_stop(seed, n_bodies, loops, fuzz_counts):
    model = build_model(driven_mechanism(seed, n_bodies, loops))
    assert model.nd == 1
    fuzz_counts["driven mechanisms"] += 1
    _compare(model, fuzz_counts)


def test_a_wrong_effort_is_caught(monkeypatch):
    """A planted error -- dca reporting its drivers' efforts 1e-3 too large, the motion
    untouched -- runs to the end and is called a silent disagreement by the comparison
    above; unplanted, dca agrees on the same mechanism."""
    import collections

    from linkwork.engine.formulations.dca import DCAFormulation

    model = build_model(driven_mechanism(2000, 3, 0))
    counts = collections.Counter()
    _compare(model, counts, forms=("dca",))
    assert counts["driven: agree"] == 1
    evaluate = DCAFormulation.evaluate

    def wrong(self, t, y):
        ev = evaluate(self, t, y)
        ev.extra["driver_effort"] = ev.extra["driver_effort"] * (1.0 + 1e-3)
        return ev

    monkeypatch.setattr(DCAFormulation, "evaluate", wrong)
    with pytest.raises(AssertionError, match="silent disagreement"):
        _compare(model, counts, forms=("dca",))
    assert counts["silent disagreements"] == 1
