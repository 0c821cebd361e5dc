"""Result history, the simulation generator and its control, CSV export."""

import threading
import time

import numpy as np
import pytest

from linkwork.engine import generators as g
from linkwork.engine.cli import main as cli_main
from linkwork.engine.mechfile import save
from linkwork.engine.results import read_csv
from linkwork.engine.simulation import ResultChunk

from linkwork.app.session import Session
from linkwork.app.session.export import cli_command, export_csv
from linkwork.app.session.simulate import Compiling, Prepared, RunControl, Started, simulation_items


def _record(t_end=0.2):
    s = Session()
    s.document.replace(g.fourbar())
    s.solver.update(t_end=t_end)
    return s, s.prepare_run()


def test_buffer_grows_and_keeps_rows():
    s, run = _record()
    cols = len(run.columns)
    rows = np.arange(5000 * cols, dtype=float).reshape(5000, cols)
    for k in range(0, 5000, 700):
        run.append(rows[k:k + 700])
    assert run.n_rows == 5000
    assert np.array_equal(run.data, rows)
    assert not run.data.flags.writeable
    with pytest.raises(ValueError):
        run.append(np.zeros((2, cols + 1)))


def test_simulation_items_order_and_rows():
    s, run = _record(0.3)
    items = list(simulation_items(run.model, run.settings, RunControl()))
    assert isinstance(items[0], Started) and isinstance(items[1], Compiling) and isinstance(items[2], Prepared)
    chunks = [it for it in items if isinstance(it, ResultChunk)]
    rows = np.vstack([c.rows for c in chunks])
    assert rows.shape[0] == 31 and rows[-1, 0] == pytest.approx(0.3)


def test_pause_blocks_and_abort_keeps_partial_rows():
    # 200 s of the four-bar (20001 rows): long enough to be running 0.1 s after the resume
    # (the compiled row loop makes 20 s of it in under 0.1 s)
    s, run = _record(200.0)
    control = RunControl()
    got = []
    gen = simulation_items(run.model, run.settings, control, max_interval=0.01)
    first_chunk = threading.Event()

    def consume():
        for it in gen:
            got.append(it)
            if isinstance(it, ResultChunk):
                first_chunk.set()
            control.wait_if_paused()

    th = threading.Thread(target=consume)
    th.start()
    assert first_chunk.wait(60)
    control.pause()
    deadline = time.monotonic() + 30
    while not control.holding and time.monotonic() < deadline:  # the chunk in flight arrives
        th.join(0.01)
    assert control.holding
    n_paused = len(got)
    th.join(0.5)
    assert th.is_alive() and len(got) == n_paused  # nothing comes while paused
    control.resume()
    th.join(0.1)
    control.abort()
    th.join(60)
    assert not th.is_alive()
    rows = np.vstack([c.rows for c in got if isinstance(c, ResultChunk)])
    assert 0 < len(rows) < 20001
    assert np.all(np.diff(rows[:, 0]) > 0)  # consecutive, nothing lost or repeated


def test_export_csv_is_byte_identical_to_linkwork_run(tmp_path):
    mech = tmp_path / "fb.mech.json"
    save(g.fourbar(crank=0.4, coupler=1.2, rocker=0.9, crank_angle_deg=60.0), mech)
    s = Session()
    s.document.open(mech)
    s.solver.update(t_end=0.25, dt=0.01)
    run = s.prepare_run()
    for it in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(it, ResultChunk):
            run.append(it.rows, it.stats)
    gui_csv = export_csv(run, tmp_path / "gui.csv")
    cli_csv = tmp_path / "cli.csv"
    assert cli_main(["run", str(mech), "--t-end", "0.25", "--dt", "0.01", "--out", str(cli_csv),
                     "--quiet"]) == 0
    assert gui_csv.read_bytes() == cli_csv.read_bytes()
    header, data = read_csv(gui_csv)
    assert header == list(run.columns) and data.shape == (26, len(run.columns))
    cmd = cli_command(run, mech)
    assert f"--formulation {run.settings.formulation} --integrator rk4 --dt 0.01 --t-end 0.25" in cmd


@pytest.mark.parametrize("formulation", sorted(__import__("linkwork.engine.formulations", fromlist=["REGISTRY"]).REGISTRY))
def test_every_formulation_exports_what_linkwork_run_writes(tmp_path, formulation):
    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.model import build_model

    spec = g.closed_loop(4)
    ok, why = REGISTRY[formulation].supports(build_model(spec))
    if not ok:
        pytest.skip(f"{formulation} cannot simulate the test loop: {why}")
    mech = tmp_path / "loop.mech.json"
    save(spec, mech)
    s = Session()
    s.document.open(mech)
    s.solver.update(formulation=formulation, t_end=0.1, dt=0.01)
    run = s.prepare_run()
    for it in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(it, ResultChunk):
            run.append(it.rows, it.stats)
    export_csv(run, tmp_path / "gui.csv")
    assert cli_main(["run", str(mech), "--formulation", formulation, "--t-end", "0.1", "--dt", "0.01",
                     "--out", str(tmp_path / "cli.csv"), "--quiet"]) == 0
    assert (tmp_path / "gui.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()


def test_index3_command_line_reproduces_non_default_settings(tmp_path):
    """The run details' command line carries index3's settings (penalised projections,
    penalty, tangent hold): running it gives the GUI's CSV byte for byte."""
    spec = g.closed_loop(4)
    mech = tmp_path / "loop.mech.json"
    save(spec, mech)
    s = Session()
    s.document.open(mech)
    s.solver.update(formulation="index3", t_end=0.1, dt=0.01, penalty=1e8, tangent_hold=2,
                    exact_projections=False)
    run = s.prepare_run()
    for it in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(it, ResultChunk):
            run.append(it.rows, it.stats)
    export_csv(run, tmp_path / "gui.csv")
    cmd = cli_command(run, mech, out=str(tmp_path / "cli.csv"))
    assert "--projections penalised" in cmd and "--tangent-hold 2" in cmd
    assert cli_main(cmd.split()[1:] + ["--quiet"]) == 0
    assert (tmp_path / "gui.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    # and the default (exact) projections give a different file: the setting is not lost
    assert cli_main([a for a in cmd.split()[1:] if a not in ("--projections", "penalised")] + ["--quiet"]) == 0
    assert (tmp_path / "gui.csv").read_bytes() != (tmp_path / "cli.csv").read_bytes()


def test_run_labels_name_only_the_runs_own_settings():
    """A run's label names what that run used: the solver panel's index-3 penalty or RK45
    tolerances left over from an earlier choice do not appear on a dense/RK4 run."""
    from linkwork.app.session.runs import settings_label
    from linkwork.engine.simulation import Settings

    s = Session()
    s.document.replace(g.fourbar())
    s.solver.update(formulation="index3", penalty=1e7, rtol=1e-5, tangent_hold=2)
    s.solver.update(formulation="dense", integrator="rk4")
    run = s.prepare_run()
    assert run.settings.penalty == 1e7 and run.settings.rtol == 1e-5  # still carried ...
    assert run.label == "dense/rk4 dt=0.01"  # ... but not the run's own
    # its own changed settings are named
    assert settings_label(Settings(formulation="dense", integrator="rk45", dt=0.01, rtol=1e-5)) == \
        "dense/rk45 dt=0.01 rtol=1e-05"
    assert settings_label(Settings(formulation="index3", integrator="trapezoidal", dt=0.001, penalty=1e7,
                                   tangent_hold=2, rtol=1e-5)) == \
        "index3/trapezoidal dt=0.001 penalty=1e+07 tangent_hold=2"
    assert settings_label(Settings(formulation="dca", integrator="rk4", baumgarte=(5.0, 10.0), penalty=3.0)) == \
        "dca/rk4 dt=0.01 baumgarte=(5, 10)"
    assert settings_label(Settings(formulation="dense", integrator="rk4", projection=False)) == \
        "dense/rk4 dt=0.01 projection off"


def test_an_export_that_cannot_be_written_raises_and_leaves_nothing(tmp_path, monkeypatch):
    """A full disk during Export › CSV: OSError for the window to show, no partial file,
    no temporary file, an earlier file of that name untouched."""
    import errno

    from linkwork.engine.results import CsvWriter

    s = Session()
    s.document.replace(g.fourbar())
    s.solver.update(t_end=0.05, dt=0.01)
    run = s.prepare_run()
    for it in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(it, ResultChunk):
            run.append(it.rows, it.stats)
    target = tmp_path / "results.csv"
    target.write_text("an earlier export\n")

    def full(self, rows):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CsvWriter, "write_rows", full)
    with pytest.raises(OSError):
        export_csv(run, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]
    assert target.read_text() == "an earlier export\n"


def test_a_driven_runs_energy_plot_is_the_conserved_figure():
    """With drivers the energy plot draws E - W (W: the drivers' work), which a driven
    mechanism without damping keeps; E alone changes by the work the motor does."""
    from linkwork.engine.paths import examples_dir
    from linkwork.engine.mechfile import load

    from linkwork.app.session.plotdata import series

    s = Session()
    s.document.replace(load(examples_dir() / "slider-crank-driven.mech.json"))
    s.solver.update(t_end=0.5, integrator="dop853", rtol=1e-10, atol=1e-10, dt=0.01)
    run = s.prepare_run()
    for item in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(item, ResultChunk):
            run.append(item.rows)
    assert run.driven
    (curve,) = series("energy", run)
    e = run.column("energy.total")
    w = run.column("energy.driver_work")
    assert np.array_equal(curve.y, (e - w) - (e[0] - w[0]))
    # W is integrated from the rows' power (docs/file-format.md, "energy.driver_work"): the
    # trapezoid over the first interval leaves 3e-5 of the energy's swing here
    assert np.max(np.abs(curve.y)) < 1e-4 * np.max(np.abs(e - e[0]))
    assert np.array_equal(run.energy_drift(), curve.y)
