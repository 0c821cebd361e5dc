"""Run > Parameter sweep…: the Sweep dialog runs a real local Dask cluster in the
background, plots the chosen quantity, cancels, and exports the summary."""

import numpy as np
import pandas as pd
import pyqtgraph as pg
import pytest

from linkwork.engine.paths import examples_dir

pytestmark = [pytest.mark.gui, pytest.mark.xdist_group("dask")]


def _open(make_window):
    win = make_window(gl=False)
    assert win.open_file(examples_dir() / "slider-crank.mech.json")
    return win, win.open_sweep()


def _choose(row, path, start, stop, num):
    row.combo.setCurrentIndex(row.combo.findData(path))
    row.start.setValue(start)
    row.stop.setValue(stop)
    row.num.setValue(num)


def test_one_parameter_sweep_plots_a_line_and_exports_the_summary(make_window, qtbot, tmp_path):
    win, dlg = _open(make_window)
    assert win.actions["sweep"] in win.menuBar().actions()[3].menu().actions()  # Run menu
    _choose(dlg.axis1, "forces[0].stiffness", 100.0, 300.0, 3)
    dlg.t_end.setValue(0.2)
    dlg.workers.setValue(2)
    dlg.out_dir.setText(str(tmp_path / "out"))
    qtbot.mouseClick(dlg.run_button, pg.QtCore.Qt.LeftButton)
    assert dlg.model.running and not dlg.run_button.isEnabled() and dlg.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dlg.model.result is not None and dlg.worker is None, timeout=180_000)
    df = dlg.model.result.summary
    assert list(df["param.forces[0].stiffness"]) == [100.0, 200.0, 300.0] and set(df["status"]) == {"ok"}
    assert "Done: 3 ok" in dlg.status.text() and dlg.progress.value() == 3
    dlg.quantity.setCurrentText("min.slider.x")
    curves = [i for i in dlg.plot.getPlotItem().items if isinstance(i, pg.PlotDataItem)]
    assert len(curves) == 1
    x, y = curves[0].getData()
    assert list(x) == [100.0, 200.0, 300.0] and list(y) == list(df["min.slider.x"])
    assert y[0] < y[2]  # a softer spring lets the slider travel further to the left
    out = dlg.export(str(tmp_path / "summary.parquet"))
    assert pd.read_parquet(out).equals(df)
    dlg.export(str(tmp_path / "summary.csv"))
    back = pd.read_csv(tmp_path / "summary.csv")
    assert list(back["min.slider.x"]) == list(df["min.slider.x"])  # pandas' CSV round-trips doubles
    assert (tmp_path / "out" / "summary.parquet").is_file() and len(list((tmp_path / "out" / "runs").iterdir())) == 3


def test_two_parameter_sweep_cancels_keeping_finished_cases_and_draws_an_image(make_window, qtbot, tmp_path):
    win, dlg = _open(make_window)
    _choose(dlg.axis1, "joints[0].rate", 3.0, 9.0, 4)
    dlg.use2.setChecked(True)
    _choose(dlg.axis2, "forces[0].stiffness", 100.0, 400.0, 4)
    # long enough a case (about 0.1 s) that the cancel lands while most are still to run
    dlg.t_end.setValue(30.0)
    dlg.workers.setValue(2)
    dlg.out_dir.setText(str(tmp_path / "out"))
    dlg.start()
    qtbot.waitUntil(lambda: dlg.model.progress is not None and dlg.model.progress.done >= 2, timeout=180_000)
    qtbot.mouseClick(dlg.cancel_button, pg.QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.model.result is not None and dlg.worker is None, timeout=120_000)
    r = dlg.model.result
    assert r.cancelled and "Cancelled:" in dlg.status.text()
    ok = r.summary[r.summary["status"] == "ok"]
    assert 2 <= len(ok) < 16  # the finished cases are kept, the rest were not computed
    dlg.quantity.setCurrentText("energy_drift")
    images = [i for i in dlg.plot.getPlotItem().items if isinstance(i, pg.ImageItem)]
    assert len(images) == 1 and images[0].image.shape == (4, 4)
    x, y, z = __import__("linkwork.app.session.sweep", fromlist=["grid_values"]).grid_values(
        r.summary, dlg.model.setup.axes, "energy_drift")
    assert np.isfinite(z).sum() == len(ok)
    # the same folder resumes: run again, only the missing cases are computed
    dlg.start()
    qtbot.waitUntil(lambda: dlg.model.result is not None and dlg.worker is None, timeout=180_000)
    df = dlg.model.result.summary
    assert (df["status"] == "ok").all() and len(df) == 16
    kept = df.set_index("case").loc[ok["case"], "session"]
    assert (kept == ok.set_index("case")["session"]).all()
