"""Every formulation against ``dense`` on random mechanisms: agreement, or exit 3 -- never
exit 0 with a different motion.

The mechanisms cover what unseen ones brought: branched trees carrying loops, spatial
loops closed by spherical, universal and revolute joints, prismatic and cylindrical
joints, springs with dampers, joint torques, initial joint rates, cut joints the file
chooses, and gears where a formulation honours them.  Both sides run dop853 at 1e-10
for one second (an error-controlled comparison measures the formulations, not the
integrator; index3, second order, at dt = 1e-4); positions must agree to 1e-6 m.
"""

import dataclasses

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import SettingsError
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.mechfile import CouplingSpec, spec_from_dict, spec_to_dict
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation
from linkwork.engine.topology import loop_bodies

from .conftest import run_to_end

#: (seed, bodies, loops): trees, one loop and two loops on trees of 4 to 7 bodies
CASES = [(seed, 4 + seed % 4, seed % 3) for seed in range(30)]
TOLERANCE = 1e-6
T_END = 1.0
COUNTS = {"mechanisms": 0, "runs": 0, "agree": 0, "exit 3": 0, "refused": 0}


def mechanism(seed: int, n_bodies: int, loops: int):
    """A random mechanism; every third with loops has a cut joint of its own choosing (a
    tree joint on the loop), every fourth a gear between two one-freedom tree joints that
    are chained or siblings."""
    spec = gen.random_mechanism(seed, n_bodies=n_bodies, loops=loops)
    model = build_model(spec)
    joints = list(spec.joints)
    if loops and seed % 3 == 0 and model.nj > model.nb:
        on_loop = set(loop_bodies(model, model.nb)) - {-1}
        names = {model.body_names[b] for b in on_loop}
        for k, j in enumerate(joints[:n_bodies]):
            if j.child in names and j.parent in names | {"ground"}:
                joints[k] = dataclasses.replace(j, cut=True)
                break
    couplings = ()
    if seed % 4 == 1:
        one = [j for j in joints[:n_bodies] if j.type in ("revolute", "prismatic") and not j.cut]
        for a in one:
            b = next((b for b in one if b is not a and (b.parent == a.child or b.parent == a.parent)), None)
            if b is not None:
                couplings = (CouplingSpec("gear", a.name, b.name, float(1.5 + seed % 3)),)
                break
    return spec_from_dict(spec_to_dict(dataclasses.replace(spec, joints=tuple(joints), couplings=couplings)))


@pytest.fixture(scope="module", autouse=True)
def tally():
    """The module's tally, printed after its tests (``pytest -s``: the counts of a run)."""
    yield COUNTS
    print(f"\ndifferential test: {COUNTS}")


def _run(model, form):
    """Positions at the output instants (every 0.01 s) and the error, if any.  index3 has
    only its second-order trapezoidal rule: it runs at dt = 1e-4 and is read every 100th
    step."""
    if form == "index3":
        settings = Settings(formulation=form, dt=1e-4, t_end=T_END)
    else:
        settings = Settings(formulation=form, integrator="dop853", rtol=1e-10, atol=1e-10, t_end=T_END)
    sim = Simulation(model, settings)
    rows, err = run_to_end(sim)
    if form == "index3":
        rows = rows[::100]
    idx = [i for i, c in enumerate(sim.columns)
           if c.rsplit(".", 1)[0] in model.body_names and c.rsplit(".", 1)[1] in ("x", "y", "z")]
    return rows[:, idx], err


@pytest.mark.slow
@pytest.mark.parametrize("seed,n_bodies,loops", CASES)
def test_every_formulation_agrees_with_dense_or_stops(seed, n_bodies, loops):
    model = build_model(mechanism(seed, n_bodies, loops))
    COUNTS["mechanisms"] += 1
    ref, ref_err = _run(model, "dense")
    for form in REGISTRY:
        if form == "dense":
            continue
        ok, why = REGISTRY[form].supports(model)
        if not ok:
            assert model.ng and "formulations that can" in why  # gears only
            COUNTS["refused"] += 1
            continue
        try:
            pos, err = _run(model, form)
        except SettingsError:
            COUNTS["refused"] += 1
            continue
        COUNTS["runs"] += 1
        n = min(len(pos), len(ref))
        if err is not None or ref_err is not None:
            COUNTS["exit 3"] += 1
            # what was handed over before a stop still agrees
            dev = np.abs(pos[:n] - ref[:n]).max() if n else 0.0
        else:
            assert len(pos) == len(ref)
            dev = np.abs(pos - ref).max()
            COUNTS["agree"] += 1
        assert dev < TOLERANCE, (seed, form, dev, err)


def test_the_differential_test_catches_a_wrong_formulation(monkeypatch):
    """A planted error -- dca's joint accelerations scaled by 1 + 1e-3 -- disagrees with
    dense on a random mechanism with a loop, and the comparison above fails on it."""
    from linkwork.engine.formulations.dca import DCAFormulation

    model = build_model(mechanism(2, 6, 2))
    rhs = DCAFormulation.rhs

    def wrong(self, t, y):
        out = rhs(self, t, y)
        out[self.model.nq:] *= 1.0 + 1e-3
        return out

    ref, _ = _run(model, "dense")
    monkeypatch.setattr(DCAFormulation, "rhs", wrong)
    pos, err = _run(model, "dca")
    n = min(len(pos), len(ref))
    assert np.abs(pos[:n] - ref[:n]).max() > TOLERANCE
