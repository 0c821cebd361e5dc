"""``linkwork --selftest``: the whole product end to end, one line per
step, exit 0 only if every step passed."""

import io
import os
import re
import subprocess
import sys

import pytest

from linkwork.engine.formulations import REGISTRY


@pytest.mark.gl
@pytest.mark.slow
def test_selftest_passes_every_step_from_the_source_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    r = subprocess.run([sys.executable, "-m", "linkwork", "--selftest", "--keep", str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0, r.stdout + r.stderr
    steps = ["main window", "example", *(f"run {f}" for f in REGISTRY), "3-D view", "export CSV", "export PNG"]
    assert [re.match(r"selftest: ok   ([^:]+):", ln).group(1) for ln in lines[:-1]] == steps
    assert re.match(rf"selftest: {len(steps)}/{len(steps)} ok \(", lines[-1])
    # the files it checked are real: the CSV starts with the contract's header
    assert (tmp_path / "selftest.csv").read_text().startswith("t,")
    assert (tmp_path / "selftest-view.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.gui
def test_selftest_reports_a_failed_step_and_does_not_count_it(qapp, tmp_path, monkeypatch):
    """A missing example fails its step; the runs that need it are not attempted, the
    final count says so and the command's status would be 1."""
    from linkwork.app import selftest

    monkeypatch.setattr(selftest, "EXAMPLE", "no-such-example.mech.json")
    out = io.StringIO()
    passed, total = selftest.run_selftest(stream=out, keep=tmp_path)
    text = out.getvalue()
    assert passed < total
    assert "selftest: FAIL example:" in text and "no-such-example" in text
    assert "selftest: FAIL export CSV: RuntimeError: no finished run to export" in text
    assert "run dca" not in text
    assert text.strip().splitlines()[-1].startswith(f"selftest: {passed}/{total} ok")
