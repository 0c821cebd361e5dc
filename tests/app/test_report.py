"""``linkwork report``: a run without a screen writes the CSV, the plots and pictures
of the mechanism (what ``make run`` does where there is no display)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from linkwork.engine.paths import examples_dir
from linkwork.engine.results import read_csv


def example_path(name):
    return examples_dir() / f"{name}.mech.json"


def _headless_env():
    return {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}


@pytest.mark.parametrize("example", ["parallelogram-fourbar", "chain-5-spherical-spatial"])
def test_report_writes_csv_plots_and_pictures_without_a_display(tmp_path, example):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(example_path(example)),
                        "--t-end", "0.3", "--out", str(out)], capture_output=True, text=True,
                       env=_headless_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    listed = r.stdout.split()
    for name in ("results.csv", "plots.png", "mechanism.png", "mechanism.gif"):
        assert str(out / name) in listed
    cols, data = read_csv(out / "results.csv")
    assert data.shape[0] == 31 and cols[0] == "t"
    # the same bytes as linkwork run at the same settings
    ref = tmp_path / "ref.csv"
    r2 = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(example_path(example)),
                         "--t-end", "0.3", "--out", str(ref)], capture_output=True, text=True, timeout=600)
    assert r2.returncode == 0, r2.stderr
    assert ref.read_bytes() == (out / "results.csv").read_bytes()
    png = np.asarray(Image.open(out / "mechanism.png").convert("RGB")).astype(int)
    background = png[0, 0]
    assert (np.abs(png - background).sum(axis=2) > 60).mean() > 0.01  # the mechanism is drawn
    gif = Image.open(out / "mechanism.gif")
    assert gif.n_frames >= 20
    plots = np.asarray(Image.open(out / "plots.png").convert("RGB")).astype(int)
    assert plots.shape[1] > 1000


def test_report_refuses_a_bad_file(tmp_path):
    bad = tmp_path / "bad.mech.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=_headless_env(), timeout=300)
    assert r.returncode == 2 and "bad.mech.json" in r.stderr
