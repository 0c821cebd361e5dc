"""Fuzzing the command line: random argument lists for ``linkwork run``, ``info``,
``examples``, ``sweep``, ``import`` and ``export``, in-process through
:func:`linkwork.engine.cli.main`.  Every list ends with status 0, 2 or 3, never a
traceback; a refusal (2) ends stderr with one ``linkwork: ...`` line.

Runs stay tiny (``--t-end 0.01`` last, the small examples only).  Every file named is a
copy in the test's temporary folder, the working directory during the test, so whatever
the fuzz writes (any file name may land after ``--out``) stays there; ``linkwork sweep``
never starts Dask: its file is read and every case prepared (the loader and the
settings check, as a sweep does before submitting), then a stand-in for
:func:`~linkwork.engine.sweep.run_sweep` reports the cases done, and a stand-in
``distributed.Client`` refuses every scheduler address.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkwork.engine import generators as gen
from linkwork.engine.cli import main
from linkwork.engine.mechfile import spec_to_dict

from ..fuzzing import examples
from .conftest import example_path

pytest.importorskip("pandas")
pytest.importorskip("distributed")

MODELS = Path(__file__).resolve().parent / "interop" / "models"
BUNDLED_SWEEP = Path(__file__).resolve().parents[2] / "resources" / "sweeps" / "slider-crank-spring.sweep.json"
#: small examples: a run of 0.01 s takes milliseconds once compiled
SMALL = [f"{n}.mech.json" for n in ("parallelogram-fourbar", "slider-crank", "fourbar-geared",
                                     "spatial-double-pendulum")]
#: copied into the working directory (no path of the fuzz leads out of it)
COPIES = [example_path(n.split(".")[0]) for n in SMALL] + [BUNDLED_SWEEP] + [
    MODELS / n for n in ("fourbar.xml", "arm6.urdf", "unsupported.xml")]

#: files in the working directory (made by the ``workdir`` fixture), some missing
INPUTS = SMALL + [
    "missing.mech.json", "garbage.mech.json", "stiff.mech.json", "empty.json", "folder", "tiny.sweep.json",
    "bad.sweep.json", "nowhere.sweep.json", BUNDLED_SWEEP.name, "fourbar.xml", "arm6.urdf", "unsupported.xml",
    "garbage.xml", "", "-",
]
#: where outputs may go: all inside the working directory
OUTPUTS = ["out.csv", "out.xml", "out.mech.json", "folder", "no/such/dir/x.csv", "results", "garbage.mech.json"]
NUMBERS = ["0", "-0", "-1", "1", "2", "0.001", "0.01", "1e-3", "1e-6", "1e-12", "10", "1e9", "nan", "inf", "-inf",
           "1e999", "abc", "", " ", "1,5", "\u0662", "0x10", "1_0", "--1"]
WORDS = ["dense", "dca", "hdca", "index3", "rcr", "embedding", "nope", "rk4", "rk45", "rk23", "dop853", "lsoda",
         "radau", "bdf", "trapezoidal", "euler", "on", "off", "exact", "penalised", "none", "0:stall", "0:kill",
         "99:kill", "x:stall", "0:boom", "tcp://127.0.0.1:1", "ëñ", "home"]
#: free text: no "/" (a path out of the working directory) and no NUL (never in a real argv)
FREE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), max_size=6)

OPTIONS = {
    "run": ["--formulation", "--integrator", "--dt", "--t-end", "--rtol", "--atol", "--penalty", "--newton-iters",
            "--newton-tol", "--threads", "--out", "--projection", "--baumgarte", "--tangent-hold",
            "--geometric-stiffness", "--projections", "--quiet", "--help", "--bogus", "-x"],
    "info": ["--json", "--help", "--bogus"],
    "examples": ["--help", "--bogus"],
    "sweep": ["--out", "--scheduler", "--dask", "--workers", "--threads-per-worker", "--case-timeout", "--inject-fault",
              "--restart", "--quiet", "--help", "--bogus"],
    "import": ["--out", "--keyframe", "--help", "--bogus"],
    "export": ["--mjcf", "--help", "--bogus"],
}


@st.composite
def argument_lists(draw):
    cmd = draw(st.sampled_from(sorted(OPTIONS)))
    token = st.one_of(st.sampled_from(OPTIONS[cmd]), st.sampled_from(INPUTS), st.sampled_from(OUTPUTS),
                      st.sampled_from(NUMBERS), st.sampled_from(WORDS), FREE)
    # mostly a file first, then options and values in any order
    head = [draw(st.sampled_from(INPUTS))] if draw(st.integers(0, 4)) else []
    argv = [cmd] + head + draw(st.lists(token, max_size=7))
    if cmd == "run":
        argv += ["--t-end", "0.01"]  # the last one counts: every run is tiny
    return argv


def _populate(d: Path) -> None:
    """The input files in ``d``, as new: an argument list may have written over any of them."""
    for p in COPIES:
        shutil.copy(p, d / p.name)
    bundled = json.loads(BUNDLED_SWEEP.read_text())  # its mechanism, now beside it
    (d / BUNDLED_SWEEP.name).write_text(json.dumps(dict(bundled, mechanism="slider-crank.mech.json")))
    (d / "garbage.mech.json").write_text('{"format": "linkwork-mechanism", "bodies": [1, 2')
    (d / "empty.json").write_text("")
    (d / "garbage.xml").write_text("<mujoco><worldbody><body>")
    (d / "folder").mkdir(exist_ok=True)
    for name in ("missing.mech.json", "nowhere.sweep.json"):  # missing, whatever was written
        (d / name).unlink(missing_ok=True)
    stiff = spec_to_dict(gen.chain(1, "revolute"))  # rk4 at dt = 0.01 diverges at t = 0.02 s: exit 3
    stiff["forces"] = [{"type": "joint-spring", "joint": "J1", "stiffness": 1e9, "damping": 1.0, "rest": 0.5}]
    (d / "stiff.mech.json").write_text(json.dumps(stiff))
    tiny = {"format": "linkwork-sweep", "version": 1, "mechanism": "slider-crank.mech.json",
            "settings": {"t_end": 0.01}, "grid": {"joints[0].rate": [1.0, 2.0], "dt": [0.01, -1.0]}}
    (d / "tiny.sweep.json").write_text(json.dumps(tiny))
    (d / "bad.sweep.json").write_text(json.dumps(dict(tiny, grid={"bodies[99].mass": [1.0]})))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-fuzz")
    _populate(d)
    return d


@pytest.fixture
def no_dask(monkeypatch):
    """``linkwork sweep`` up to the submission: the cases prepared, no cluster, no scheduler."""
    import distributed
    import pandas as pd

    from linkwork.engine import sweep

    def run_sweep(spec, client=None, out=None, on_start=None, **kw):
        prepared = sweep.prepare_cases(spec)
        todo = [pc for pc in prepared if pc.refused is None]
        if on_start is not None:
            on_start(client, prepared, len(todo))
        return pd.DataFrame({"case": [pc.index for pc in todo], "status": ["ok"] * len(todo),
                             "message": [""] * len(todo)})

    def client(address, **kw):
        raise OSError(f"no scheduler at {address} (test stand-in)")

    monkeypatch.setattr(sweep, "run_sweep", run_sweep)
    monkeypatch.setattr(distributed, "Client", client)


@settings(max_examples=examples(160), deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=argument_lists())
def test_random_argument_lists_end_in_0_2_or_3_without_a_traceback(argv, workdir, no_dask, monkeypatch,
                                                                     fuzz_counts):
    monkeypatch.chdir(workdir)
    _populate(workdir)
    started = []
    front_ends = {name: (lambda a, name=name: started.append(name) or 0) for name in ("gui", "report", "selftest")}
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv), front_ends=front_ends)
    shutil.rmtree(workdir / "results", ignore_errors=True)  # a sweep's output: resumed otherwise
    fuzz_counts["argument lists tried"] += 1
    fuzz_counts[f"exit {status}"] += 1
    text = err.getvalue()
    assert status in (0, 2, 3), (argv, status, text)
    assert "Traceback" not in text, (argv, text)
    assert not started, (argv, started)  # the six commands never open a window
    if status == 2:
        # lines end at "\n" only: an argument echoed in the message may hold other separators,
        # or a "\n" of its own (then the message is one line but for that argument's text)
        lines = text.rstrip("\n").split("\n")
        if any("\n" in a for a in argv):
            assert text.endswith("\n") and any(ln.startswith("linkwork: ") for ln in lines), (argv, text)
        else:
            assert text.endswith("\n") and lines[-1].startswith("linkwork: "), (argv, text)
    if status == 0 and "--help" in argv:
        assert "usage:" in out.getvalue()


def test_the_fuzz_reaches_every_command_and_status(workdir, no_dask, monkeypatch):
    """Hand-picked lists: each command's success, a refusal of each, and a failed run
    (rk4 diverging on a spring far too stiff for its step) -- the statuses the fuzz
    accepts are really reachable, so its check is not vacuous."""
    monkeypatch.chdir(workdir)
    _populate(workdir)
    cases = [
        (["run", SMALL[0], "--t-end", "0.01", "--out", "out.csv"], 0),
        (["run", SMALL[0], "--dt", "nan", "--t-end", "0.01"], 2),
        (["run", "stiff.mech.json", "--dt", "0.01", "--t-end", "0.05"], 3),
        (["info", SMALL[1], "--json"], 0), (["info", "garbage.mech.json"], 2),
        (["examples"], 0), (["examples", "x"], 2),
        (["sweep", "tiny.sweep.json", "--out", "results"], 0), (["sweep", "bad.sweep.json", "--out", "results"], 2),
        (["sweep", "tiny.sweep.json", "--out", "results", "--scheduler", "tcp://127.0.0.1:1"], 2),
        (["import", "fourbar.xml", "--out", "out.mech.json"], 0), (["import", "garbage.xml"], 2),
        (["export", SMALL[0], "--mjcf", "out.xml"], 0), (["export", SMALL[0], "--mjcf", "no/such/dir/x.xml"], 2),
    ]
    for argv, expected in cases:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            status = main(argv)
        shutil.rmtree(workdir / "results", ignore_errors=True)
        assert status == expected, (argv, err.getvalue())
