"""`linkwork run` as docs/file-format.md, "Command line" and "Results CSV", specify it: CSV,
exit statuses, partial results."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.mechfile import save, spec_to_dict
from linkwork.engine.results import read_csv

from .conftest import example_path

CMD = [sys.executable, "-m", "linkwork.engine.cli"]


def run(*args, **kw):
    return subprocess.run(CMD + list(args), capture_output=True, text=True, **kw)


def test_run_writes_contract_columns_to_stdout():
    r = run("run", str(example_path("parallelogram-fourbar")), "--t-end", "0.05", "--dt", "0.01")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0].split(",")
    body = ["x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz"]
    expected = ["t"] + [f"{b}.{f}" for b in "ABC" for f in body] + [
        "energy.kinetic", "energy.potential", "energy.total",
        "violation.position", "violation.velocity", "violation.acceleration"]
    assert header[: len(expected)] == expected
    assert len(lines) == 1 + 6  # t = 0, 0.01, ..., 0.05
    first = [float(v) for v in lines[1].split(",")]
    assert first[0] == 0.0
    assert first[1:4] == pytest.approx([0.3535533905932738, 0.3535533905932738, 0.0])
    # repr floats round-trip
    for v in lines[3].split(","):
        assert repr(float(v)) == v


def test_run_out_file_and_parse(tmp_path):
    out = tmp_path / "r.csv"
    r = run("run", str(example_path("loop-4")), "--t-end", "0.2", "--out", str(out), "--integrator", "rk45")
    assert r.returncode == 0, r.stderr
    cols, data = read_csv(out)
    assert data.shape == (21, len(cols))
    assert np.allclose(np.diff(data[:, 0]), 0.01)


@pytest.mark.parametrize("args,needle", [
    (["--dt", "-1"], "--dt must be a positive number"),
    (["--dt", "abc"], "not a number"),
    (["--formulation", "bogus"], "unknown formulation"),
    (["--formulation", "dca", "--integrator", "trapezoidal"], "does not apply"),
    (["--integrator", "euler"], "unknown integrator"),
    (["--newton-iters", "0"], "--newton-iters"),
    (["--threads", "0"], "--threads"),
    (["--bogus-option"], "unrecognized arguments"),
])
def test_refused_options_exit_2(args, needle):
    r = run("run", str(example_path("loop-4")), *args)
    assert r.returncode == 2
    assert needle in r.stderr
    assert r.stdout == ""


def test_refused_file_exit_2(tmp_path):
    d = spec_to_dict(gen.fourbar())
    d["bodies"][2]["mass"] = -1
    p = tmp_path / "bad.mech.json"
    p.write_text(json.dumps(d))
    r = run("run", str(p))
    assert r.returncode == 2
    assert "bodies[2].mass: must be > 0 (got -1)" in r.stderr
    assert r.stdout == ""
    r = run("info", str(p))
    assert r.returncode == 2 and "bodies[2].mass" in r.stderr


def _diverging(tmp_path):
    """A spring far too stiff for rk4 at dt = 0.01: the state grows until the integrator's
    own divergence check stops it, several rows in.  Damped and driven by a joint torque,
    so neither conservative nor passive: otherwise the pipeline's monitor would stop it at
    the first step already, on its energy's jump or rise."""
    d = spec_to_dict(gen.chain(1, "revolute"))
    d["forces"] = [{"type": "joint-spring", "joint": "J1", "stiffness": 1e9, "damping": 1.0, "rest": 0.5},
                   {"type": "joint-torque", "joint": "J1", "value": 0.1}]
    p = tmp_path / "stiff.mech.json"
    p.write_text(json.dumps(d))
    return p


def test_failed_simulation_exit_3_keeps_rows(tmp_path):
    out = tmp_path / "fail.csv"
    r = run("run", str(_diverging(tmp_path)), "--dt", "0.01", "--t-end", "5", "--out", str(out))
    assert r.returncode == 3
    assert "simulation failed at t = " in r.stderr
    t_fail = float(r.stderr.split("t = ")[1].split()[0])
    cols, data = read_csv(out)
    assert 1 < len(data) < 500
    assert data[-1, 0] < t_fail <= data[-1, 0] + 0.01 + 1e-12
    assert np.all(np.isfinite(data))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_keeps_complete_rows(tmp_path):
    """Ctrl-C (SIGINT) ends a run with exit 130 and every complete row kept.

    The child gets SIGINT's default disposition: a suite started as a background job of a
    non-interactive shell (``bash -c 'make test' &``) inherits SIGINT *ignored*, Python then
    installs no KeyboardInterrupt handler, and the signal would never arrive (seen: the
    test timed out only when the suite ran in the background)."""
    out = tmp_path / "int.csv"
    p = subprocess.Popen(CMD + ["run", str(example_path("loop-8")), "--t-end", "1000", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline:
        if out.exists() and out.stat().st_size > 20000:
            break
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    cols, data = read_csv(out)
    assert len(data) > 10 and data.shape[1] == len(cols)
    assert np.all(np.diff(data[:, 0]) > 0)


def test_every_formulation_the_contract_names_runs():
    """The command line (docs/file-format.md, "Command line") names six formulations; all
    are registered (none planned), and run --help lists each of them."""
    from linkwork.engine.formulations import PLANNED, REGISTRY

    contract = ("dca", "hdca", "index3", "rcr", "embedding", "dense")
    assert set(contract) <= set(REGISTRY) and not PLANNED
    r = run("run", "--help")
    assert all(name in r.stdout for name in contract)


def test_examples_command_lists_every_example():
    r = run("examples")
    assert r.returncode == 0
    assert r.stdout.count(".mech.json") == len(list(example_path("loop-4").parent.glob("*.mech.json")))


def test_unknown_command_is_refused_with_the_list_of_commands():
    """``linkwork bogus`` is refused (exit 2, the list of commands), not opened as a file
    in the GUI ("Cannot open bogus")."""
    from linkwork.engine.cli import COMMANDS

    r = run("bogus")
    assert r.returncode == 2
    assert "unknown command 'bogus'" in r.stderr
    assert all(c in r.stderr for c in COMMANDS)
    r = run("no-such-file.mech.json")
    assert r.returncode == 2 and "no such file" in r.stderr


@pytest.mark.parametrize("args", [
    ["info", "{ex}", "--json"],
    ["examples"],
    ["run", "{ex}", "--t-end", "0.5"],
])
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(args):
    """``linkwork examples | head -1`` ends quietly, without a BrokenPipeError traceback."""
    argv = [a.replace("{ex}", str(example_path("loop-4"))) for a in args]
    p = subprocess.Popen(CMD + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()  # what `head -1` does after its line
    err = p.stderr.read().decode()
    rc = p.wait(timeout=300)
    assert first
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert rc == 0


def test_help_lists_only_formulations_that_run():
    """``run --help`` lists only the formulations that run, none that would then be refused."""
    from linkwork.engine.formulations import PLANNED, REGISTRY

    r = run("run", "--help")
    assert r.returncode == 0
    line = next(ln for ln in r.stdout.replace("\n                        ", " ").splitlines()
                if "--formulation" in ln and "NAME" in ln and "[default" in ln)
    for name in REGISTRY:
        assert name in line
    for name in PLANNED:
        if name not in REGISTRY:
            assert name not in line, line


def test_top_level_help_is_text_for_a_user():
    """``linkwork --help`` is text for a user, not the module docstring (``::``, rST markup)."""
    from linkwork.engine.cli import COMMANDS

    r = run("--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: linkwork")
    assert "::" not in r.stdout and "``" not in r.stdout and "contract section" not in r.stdout
    for name in COMMANDS:
        assert f"linkwork {name}" in r.stdout


def test_help_and_refusals_answer_without_loading_the_engine():
    """``run --help`` and a refused option answer at once -- measured by what
    they import (numba and scipy are the slow part of start-up), not by a clock."""
    code = ("import sys; from engine.cli import main; rc = main(sys.argv[1:]); "
            "heavy = sorted(m for m in ('numba', 'scipy', 'numpy', 'PySide6') if m in sys.modules); "
            "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)")
    for args, rc in ((["--help"], 0), (["run", "--help"], 0), (["run", "x.mech.json", "--bogus"], 2),
                     (["run", "x.mech.json", "--dt", "abc"], 2), (["info", "--help"], 0),
                     (["run", "x.mech.json", "--formulation", "nope"], 2)):
        r = subprocess.run([sys.executable, "-c", code] + args, capture_output=True, text=True)
        assert r.returncode == rc, r.stderr
        assert "HEAVY []" in r.stderr, (args, r.stderr)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_results_file_that_cannot_be_written_is_a_refusal():
    """``--out /dev/full`` (no space left): one line naming the file, exit 2, no traceback."""
    r = run("run", str(example_path("fourbar-crank-rocker")), "--t-end", "0.1", "--out", "/dev/full")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == ["linkwork: cannot write /dev/full: No space left on device"]


# a disk that fills up during the run: the second chunk's write fails after part of a row
_FULL_AFTER_ONE_CHUNK = """
import errno, sys
from linkwork.engine import results
from linkwork.engine.cli import main
calls = []
real = results.CsvWriter.write_rows
def write_rows(self, rows):
    calls.append(len(rows))
    if len(calls) == 1:
        return real(self, rows)
    self.stream.write("0.5,1.2")  # a torn row reaches the file
    self.stream.flush()
    raise OSError(errno.ENOSPC, "No space left on device")
results.CsvWriter.write_rows = write_rows
sys.exit(main(sys.argv[1:]))
"""


def test_a_write_that_fails_during_the_run_keeps_the_complete_rows(tmp_path):
    """A write failing mid-run: exit 3, one line naming the file and the time, no traceback;
    the file keeps the header and every complete row, the torn one cut off."""
    out = tmp_path / "out.csv"
    r = subprocess.run([sys.executable, "-c", _FULL_AFTER_ONE_CHUNK, "run", str(example_path("fourbar-crank-rocker")),
                        "--t-end", "2", "--dt", "0.001", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("linkwork:")]
    assert len(lines) == 1 and lines[0].startswith(f"linkwork: writing {out} failed at t = "), r.stderr
    assert "No space left on device" in lines[0]
    text = out.read_text()
    assert text.endswith("\n") and "0.5,1.2" not in text
    header, data = read_csv(out)
    assert data.shape[0] > 0 and data.shape[1] == len(header)
    assert data[0, 0] == 0.0 and np.all(np.diff(data[:, 0]) > 0)


def test_the_linkwork_command_ends_its_process_with_everything_written(tmp_path):
    """``linkwork run``/``info``/``examples`` end their process themselves once their output
    is flushed (``linkwork.cli.QUICK_EXIT``: Python's finalisation of the loaded kernels
    costs a short run a third of its wall time).  Through the console script's own path
    (``python -m linkwork``): every row on standard output, every row up to a failure in
    the file with exit 3, a refusal's 2, ``info --json`` whole, a reader closing the pipe."""
    cmd = [sys.executable, "-m", "linkwork"]
    r = subprocess.run(cmd + ["run", str(example_path("chain-8-revolute")), "--t-end", "1"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 102 and r.stdout.endswith("\n")
    stiff = json.loads(example_path("parallelogram-fourbar").read_text())
    # a spring far too stiff for dt = 0.01: every formulation stops with exit 3
    stiff["forces"] = [{"type": "joint-spring", "joint": stiff["joints"][0]["name"], "stiffness": 1e6,
                        "damping": 0.0, "rest": 0.3}]
    bad = tmp_path / "stiff.mech.json"
    bad.write_text(json.dumps(stiff))
    out = tmp_path / "out.csv"
    r = subprocess.run(cmd + ["run", str(bad), "--t-end", "2", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "simulation failed at t = " in r.stderr
    rows = read_csv(out)[1]
    assert len(rows) >= 1 and rows[0][0] == 0.0
    r = subprocess.run(cmd + ["run", str(tmp_path / "missing.mech.json")], capture_output=True, text=True)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = subprocess.run(cmd + ["info", str(example_path("loop-4")), "--json"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["loops"] == 1
    p = subprocess.Popen(cmd + ["examples"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert first and p.wait(timeout=300) == 0 and "Traceback" not in err, err
