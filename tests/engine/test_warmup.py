"""``linkwork compile`` (engine/warmup.py): the kernels go into the numba cache ahead, so a
later process loads every kernel its first Run needs without compiling any."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linkwork.engine import warmup
from linkwork.engine.paths import examples_dir

FOURBAR = examples_dir() / "parallelogram-fourbar.mech.json"

# counts numba's real compiles: the "numba:compile" event fires only when a kernel is
# compiled, not when it is loaded from the cache
_COUNT = '''
import sys
from numba.core import event
compiles = []
class _L(event.Listener):
    def on_start(self, ev):
        compiles.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", _L())
'''

_WARM = _COUNT + '''
from pathlib import Path
from linkwork.engine import warmup
done, failed = warmup.compile_all(["dense"], files=[Path(sys.argv[1])])
print(len(compiles), sorted(done), failed)
'''

_RUN = _COUNT + '''
from linkwork.engine.model import load_model
from linkwork.engine.simulation import Settings, Simulation
integrator = sys.argv[2] if len(sys.argv) > 2 else None
Simulation(load_model(sys.argv[1]), Settings(formulation="dense", integrator=integrator, t_end=0.1)).run_all()
print(len(compiles), sorted(set(compiles)))
'''


def _py(code, cache, *args):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip()


@pytest.mark.slow
def test_compile_fills_the_cache_so_the_next_process_compiles_nothing(tmp_path):
    cache = tmp_path / "numba"
    cache.mkdir()
    n_warm, done, failed = _py(_WARM, cache, FOURBAR).split(" ", 2)
    assert int(n_warm) > 10  # a cold cache: the warm-up compiled dense's kernels
    assert done == "['dense']" and failed == "[]"
    assert json.loads((cache / warmup.RECORD).read_text())["formulations"]["dense"]["examples"] == 1
    # a later process (the application's first Run) loads everything: no compile at all,
    # rk45's compiled rows on the loop included
    n_run, names = _py(_RUN, cache, FOURBAR).split(" ", 1)
    assert int(n_run) == 0, names
    n_run, names = _py(_RUN, cache, FOURBAR, "rk45").split(" ", 1)
    assert int(n_run) == 0, names


_PARALLEL = _COUNT + '''
import io
from pathlib import Path
from linkwork.engine import warmup
out = io.StringIO()
done, failed = warmup.compile_all(["dense", "embedding"], files=[Path(sys.argv[1])], stream=out, jobs=2)
print(sorted(done), failed, out.getvalue().count("1/1 examples"))
'''


@pytest.mark.slow
def test_compile_in_parallel_processes_fills_the_cache_for_every_formulation(tmp_path):
    """``--jobs 2``: each formulation compiles in a process of its own; this process
    prints each one's line when it is done and records both."""
    cache = tmp_path / "numba"
    cache.mkdir()
    done, failed, lines = _py(_PARALLEL, cache, FOURBAR).rsplit(" ", 2)
    assert done == "['dense', 'embedding']" and failed == "[]" and lines == "2"
    record = json.loads((cache / warmup.RECORD).read_text())["formulations"]
    assert set(record) == {"dense", "embedding"}
    # a later process loads dense's kernels: no compile
    n_run, names = _py(_RUN, cache, FOURBAR).split(" ", 1)
    assert int(n_run) == 0, names


@pytest.mark.slow
def test_compile_for_a_file_compiles_what_its_first_run_needs_and_claims_nothing(tmp_path):
    """``linkwork compile --for FILE`` (``make run``'s first step): the file's default
    formulation on that file, so its first run compiles nothing; not recorded as the whole
    formulation compiled, which ``linkwork compile`` then still does."""
    cache = tmp_path / "numba"
    cache.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "compile", "--for", str(FOURBAR)],
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "dense for parallelogram-fourbar.mech.json" in r.stderr
    assert not (cache / warmup.RECORD).exists()
    n_run, names = _py(_RUN, cache, FOURBAR).split(" ", 1)
    assert int(n_run) == 0, names


def test_compile_for_a_file_that_cannot_load_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.mech.json"
    bad.write_text("{}")
    assert warmup.main(["--for", str(bad)]) == 2
    assert "bad.mech.json" in capsys.readouterr().err


def test_compile_refuses_a_job_count_below_one(capsys):
    assert warmup.main(["--formulations", "dense", "--jobs", "0"]) == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err


_EVERY = _COUNT + '''
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.model import load_model
from linkwork.engine.simulation import Settings, Simulation
model = load_model(sys.argv[1])
for name in REGISTRY:
    Simulation(model, Settings(formulation=name, t_end=0.05)).run_all()
print(len(compiles), sorted(set(compiles)))
'''


@pytest.mark.slow
def test_a_second_process_compiles_nothing_for_any_formulation():
    """The engine's own cache (keyed by its sources): whatever a first process compiled
    (nothing when ``linkwork compile`` has run, as in CI), a second process running every
    formulation -- construction, the first evaluation, a short run -- loads it all.
    hdca's and index-3's first evaluations compiled the tree passes again in every
    process, 24 and 36 s, while the tree passes closed over other kernels (numba keyed
    those cache entries by a uuid drawn per process)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _EVERY, str(FOURBAR)], env=env, capture_output=True, text=True,
                           timeout=1800)
        assert r.returncode == 0, r.stderr[-3000:]
    n_run, names = r.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(n_run) == 0, names


def _fake_cache(tmp_path, monkeypatch, record=None):
    cache = tmp_path / "numba" / "key"
    cache.mkdir(parents=True)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    if record is not None:
        (cache / "kernels.nbi").write_bytes(b"")
        (cache / warmup.RECORD).write_text(json.dumps(record))
    return cache


def test_compiled_needs_this_numba_and_a_non_empty_cache(tmp_path, monkeypatch):
    ver = warmup._numba_version()
    _fake_cache(tmp_path, monkeypatch, {"numba": ver, "formulations": {"dca": {"seconds": 3}}})
    assert warmup.compiled() == {"dca"}
    (tmp_path / "numba" / "key" / warmup.RECORD).write_text(
        json.dumps({"numba": "0.0.1", "formulations": {"dca": {"seconds": 3}}}))
    assert warmup.compiled() == set()  # another numba: its cache entries are not ours
    (tmp_path / "numba" / "key" / "kernels.nbi").unlink()
    (tmp_path / "numba" / "key" / warmup.RECORD).write_text(
        json.dumps({"numba": ver, "formulations": {"dca": {"seconds": 3}}}))
    assert warmup.compiled() == set()  # a record without kernels (cache emptied)


def test_record_keeps_this_machines_times_across_source_versions(tmp_path, monkeypatch):
    cache = _fake_cache(tmp_path, monkeypatch)
    warmup._record("hdca", 12.34, 19)
    assert json.loads((cache / warmup.RECORD).read_text())["formulations"]["hdca"] == {"seconds": 12.3,
                                                                                         "examples": 19,
                                                                                         "variants": False}
    assert warmup.measured_seconds()["hdca"] == 12.3
    # another version of the sources: a new keyed directory, the machine's times stay
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba" / "other"))
    (tmp_path / "numba" / "other").mkdir()
    assert warmup.measured_seconds()["hdca"] == 12.3
    assert warmup.compiled() == set()


def test_compile_notice_says_compiling_with_this_machines_figure_or_loading(tmp_path, monkeypatch):
    _fake_cache(tmp_path, monkeypatch)
    text, frac = warmup.compile_notice("index3", 6.0)
    expect = warmup.TYPICAL_SECONDS["index3"]
    assert text.startswith("Compiling the index3 kernels: 6 s of about") and f"{expect:.0f} s" in text
    assert frac == pytest.approx(6.0 / expect)
    warmup._record("index3", 30.0, 19)
    (tmp_path / "numba" / "key" / "kernels.nbi").write_bytes(b"")
    text, frac = warmup.compile_notice("index3", 45.0)
    assert text.startswith("Loading the compiled index3 kernels")
    assert frac == 0.99


def test_compile_refuses_an_unknown_formulation():
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "compile", "--formulations", "dense,bogus"],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 2
    assert "unknown formulation(s) bogus" in r.stderr


def test_a_record_of_another_checkout_does_not_count(tmp_path, monkeypatch):
    """Two checkouts of the same sources share the keyed cache directory, but numba files
    each kernel under its source path: a record written for the other checkout's engine
    says nothing about this one's kernels (measured: 'already compiled' in a second clone,
    whose first Runs then compiled 52 kernels)."""
    ver = warmup._numba_version()
    _fake_cache(tmp_path, monkeypatch, {"numba": ver, "root": "/elsewhere/engine",
                                        "formulations": {"dca": {"seconds": 3}}})
    assert warmup.compiled() == set()
    warmup._record("dense", 1.0, 1)  # this checkout's warm-up replaces the other's record
    assert warmup.compiled() == {"dense"}


def test_compile_with_a_failing_formulation_exits_1_and_does_not_claim_it(monkeypatch, capsys):
    """A formulation whose examples fail is named, and not counted among the compiled."""
    monkeypatch.setattr(warmup, "compile_all", lambda names, force=False, jobs=None, variants=False: (
        {"dense": 1.0, "dca": 2.0}, ["dca"]))
    assert warmup.main(["--formulations", "dense,dca"]) == 1
    err = capsys.readouterr().err
    assert "1 formulation(s) compiled" in err
    assert "dca failed on the examples above" in err


def test_compile_variants_warm_dca_two_roles_on_a_long_chain():
    """``linkwork compile --variants`` runs dca a second time on an unbranched chain of 64
    bodies or more, on two threads: the two roles (``evaluate_chain``) are a kernel of
    their own, which took 52 s to compile at the start of such a run.  Nowhere else."""
    import numba

    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.model import load_model
    from linkwork.engine.simulation import Simulation, file_defaults

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two numba threads")
    chain = load_model(examples_dir() / "chain-128-spherical.mech.json")
    s = file_defaults(chain, "dca")
    (variant,) = REGISTRY["dca"].warm_variants(chain, s)
    assert variant.threads == 2 and variant.replace(threads=s.threads) == s
    assert Simulation(chain, variant).formulation.two_roles
    for name in ("parallelogram-fourbar", "chain-8-revolute", "ladder-16"):  # a loop, a short chain, a tree of loops
        model = load_model(examples_dir() / f"{name}.mech.json")
        assert REGISTRY["dca"].warm_variants(model, file_defaults(model, "dca")) == []
    for other in ("dense", "hdca", "index3", "rcr", "embedding"):
        assert REGISTRY[other].warm_variants(chain, file_defaults(chain, other)) == []


def test_a_compile_without_variants_does_not_count_for_one_with_them(tmp_path, monkeypatch):
    ver = warmup._numba_version()
    _fake_cache(tmp_path, monkeypatch, {"numba": ver, "root": warmup.engine_root(),
                                        "formulations": {"dca": {"seconds": 3}, "dense": {"variants": True}}})
    assert warmup.compiled() == {"dca", "dense"}
    assert warmup.compiled(variants=True) == {"dense"}
