"""Every bundled example runs at its own defaults: 2 s, no option
given, exactly as ``linkwork run EXAMPLE --t-end 2`` would run it -- the defaults
include the run settings an example's file carries (docs/file-format.md,
"Additions")."""

import pytest

from linkwork.engine.errors import SimulationError
from linkwork.engine.model import build_model, load_model
from linkwork.engine.simulation import Settings, Simulation, file_defaults

from .conftest import EXAMPLES


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_runs_at_its_defaults(path):
    model = load_model(path)
    sim = Simulation(model, file_defaults(model).replace(t_end=2.0))
    try:
        cols, rows = sim.run_all()
    except SimulationError as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"{path.name} at its defaults: {exc}")
    assert rows[-1, 0] == pytest.approx(2.0)


def test_file_settings_are_the_defaults_and_options_override_them(tmp_path):
    from linkwork.engine import generators as gen
    from linkwork.engine.mechfile import save

    p = tmp_path / "m.mech.json"
    save(gen.chain(3, "revolute").with_(settings=(("dt", 0.02), ("t_end", 0.1), ("integrator", "dop853"))), p)
    model = load_model(p)
    d = file_defaults(model)
    assert (d.dt, d.t_end, d.integrator) == (0.02, 0.1, "dop853")
    assert file_defaults(model, "index3").integrator is None  # index3 keeps its own scheme
    assert d.replace(dt=0.05).dt == 0.05
    assert file_defaults(build_model(gen.chain(3, "revolute"))) == Settings()  # no settings: the defaults


def test_cli_takes_the_file_settings_unless_told_otherwise(tmp_path):
    import subprocess
    import sys

    from linkwork.engine import generators as gen
    from linkwork.engine.mechfile import save
    from linkwork.engine.results import read_csv

    p = tmp_path / "m.mech.json"
    save(gen.chain(2, "revolute").with_(settings=(("dt", 0.05), ("t_end", 0.2))), p)
    for extra, rows in (([], 5), (["--dt", "0.1"], 3), (["--t-end", "0.1"], 3)):
        out = tmp_path / "r.csv"
        r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(p), "--out", str(out)] + extra,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert read_csv(out)[1].shape[0] == rows, extra


def test_slider_crank_states_a_motion_the_joints_allow():
    """The example's initial motion is one its joints allow: no large correction is warned
    (it once warned of 7.25 J, 144 % of the given motion)."""
    from linkwork.engine.initial import initial_state

    ini = initial_state(load_model(EXAMPLES[0].parent / "slider-crank.mech.json"))
    assert ini.correction_max < 1e-12 and ini.rate_residual < 1e-12
    assert ini.report() == "initial velocities are consistent with the joints (no correction)"
