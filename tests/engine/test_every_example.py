"""Every bundled example under every formulation, 10 s at the defaults (what ``linkwork run
FILE --formulation F --t-end 10`` does): exit 0 within the monitor's limits.

The exceptions are the contract's: a formulation that cannot honour a gear or a driver
refuses the run (exit 2), and on the parallelogram four-bar -- whose loop folds flat, a singular
configuration -- rcr and embedding stop (exit 3) rather than choose a branch.  The
128-body chain is left to the benchmarks (dense alone takes minutes on it).
"""

import pytest

from linkwork.engine import config
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.model import load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Simulation, file_defaults

from .conftest import run_to_end

EXAMPLES = [p for p in sorted(examples_dir().glob("*.mech.json")) if p.name != "chain-128-spherical.mech.json"]
#: where a stop at a singular configuration is the right answer
SINGULAR = {"parallelogram-fourbar"}


@pytest.mark.slow
@pytest.mark.parametrize("form", list(REGISTRY))
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem.replace(".mech", ""))
def test_every_example_runs_ten_seconds_at_the_defaults(path, form):
    model = load_model(path)
    ok, why = REGISTRY[form].supports(model)
    if not ok:
        assert (model.ng or model.nd) and "formulations that can" in why
        return
    sim = Simulation(model, file_defaults(model, form).replace(formulation=form, t_end=10.0))
    rows, err = run_to_end(sim)
    st = sim.stats
    assert st["max_position_violation"] <= config.MONITOR_POSITION_TOL
    if st["conservative"]:
        assert st["energy_drift_relative"] <= config.MONITOR_ENERGY_DRIFT
    if err is not None:
        name = path.name.removesuffix(".mech.json")
        assert name in SINGULAR and "singular configuration" in err.reason, err.reason
        assert rows[-1, 0] < err.t
    else:
        assert rows[-1, 0] == pytest.approx(10.0)
