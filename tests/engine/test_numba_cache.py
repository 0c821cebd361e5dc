"""The numba cache is keyed by the engine's sources (engine/__init__.py): numba checks a
cached kernel against its own file only, so a kernel inlining a changed function from
another module would otherwise keep running the old code."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from linkwork import engine
from linkwork.engine import source_key

ENGINE = Path(engine.__file__).resolve().parent


def test_source_key_changes_with_any_source_file(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    k0 = source_key(tmp_path)
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    k1 = source_key(tmp_path)
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    assert k1 != k0
    assert source_key(tmp_path) == k0
    (tmp_path / "notes.txt").write_text("not source")
    assert source_key(tmp_path) == k0
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    assert source_key(tmp_path) != k0


def _cache_dir(code, **env):
    base = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    r = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                       check=True)
    return r.stdout.strip()


def test_engine_keys_numba_cache_by_its_sources(tmp_path):
    want = str(tmp_path / "linkwork" / "numba" / source_key(ENGINE))
    assert _cache_dir("import engine, numba; print(numba.config.CACHE_DIR)", XDG_CACHE_HOME=str(tmp_path)) == want
    # numba imported (and its configuration read) before the engine
    assert _cache_dir("import numba, engine; print(numba.config.CACHE_DIR)", XDG_CACHE_HOME=str(tmp_path)) == want


def test_explicit_numba_cache_dir_is_respected(tmp_path):
    mine = str(tmp_path / "mine")
    assert _cache_dir("import engine, numba; print(numba.config.CACHE_DIR)", NUMBA_CACHE_DIR=mine,
                      XDG_CACHE_HOME=str(tmp_path)) == mine
    assert not (tmp_path / "linkwork").exists()


def test_stale_cache_directories_are_pruned(tmp_path):
    base = tmp_path / "linkwork" / "numba"
    old, recent = base / "0000old", base / "0000recent"
    old.mkdir(parents=True)
    recent.mkdir()
    long_ago = os.stat(old).st_mtime - (engine.CACHE_KEEP_DAYS + 1) * 86400
    os.utime(old, (long_ago, long_ago))
    _cache_dir("import engine", XDG_CACHE_HOME=str(tmp_path))
    assert not old.exists()
    assert recent.exists()
    assert (base / source_key(ENGINE)).is_dir()


def test_engine_kernels_are_found_by_the_engines_locator_in_either_import_order(tmp_path):
    code = "{first}; from engine import spatial; print(type(spatial.quat_to_rot._cache._impl.locator).__name__)"
    for first in ("import engine, numba", "import numba, engine"):
        assert _cache_dir(code.format(first=first), XDG_CACHE_HOME=str(tmp_path)) == "EngineCacheLocator"
    # a locator list the user sets is theirs
    assert _cache_dir(code.format(first="import engine"), XDG_CACHE_HOME=str(tmp_path),
                      NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator") == "UserProvidedCacheLocator"


def test_the_engines_locator_puts_kernels_where_numbas_does_and_checks_each_directory_once(tmp_path, monkeypatch):
    import tempfile

    from numba.core import caching, config

    from linkwork.engine import spatial
    from linkwork.engine.cache_locator import EngineCacheLocator
    from linkwork.engine.formulations import dense_linalg

    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(EngineCacheLocator, "_writable", set())
    made = []
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: made.append(k.get("dir")) or real(*a, **k))
    kernels = [spatial.quat_to_rot, spatial.rot_to_quat, dense_linalg.thin_svd]  # two directories
    for k in kernels:
        f = k.py_func
        ours = EngineCacheLocator.from_function(f, f.__code__.co_filename)
        numbas = caching.UserProvidedCacheLocator.from_function(f, f.__code__.co_filename)
        assert ours.get_cache_path() == numbas.get_cache_path()
        assert ours.get_source_stamp() == numbas.get_source_stamp()
        assert ours.get_disambiguator() == numbas.get_disambiguator()
    # numba's checked each of the three; the engine's its two directories once
    assert len(made) == 3 + 2
    assert len(set(made)) == 2
    # a directory that cannot be written: not this locator's (numba then asks the next one)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    monkeypatch.setattr(config, "CACHE_DIR", str(blocked))
    f = spatial.quat_to_rot.py_func
    assert EngineCacheLocator.from_function(f, f.__code__.co_filename) is None


def test_no_two_kernels_share_a_cache_index():
    """numba names a kernel's cache files after its source file, qualified name and first
    line. Two kernels a factory makes from one ``def`` would share them, and two
    processes compiling the two at once can leave one's index entry pointing at the
    other's machine code: each factory tags its kernels (``cache_locator.variant``)."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    for info in pkgutil.walk_packages(engine.__path__, engine.__name__ + "."):
        if not info.name.endswith(".__main__"):  # a command, which runs when imported
            importlib.import_module(info.name)
    names: dict = {}
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith(engine.__name__):
            continue
        for v in vars(mod).values():
            if isinstance(v, Dispatcher) and v._cache is not None and hasattr(v._cache, "_impl"):
                f = v.py_func
                names.setdefault((f.__code__.co_filename, f.__qualname__, f.__code__.co_firstlineno), set()).add(id(v))
    assert len(names) > 200
    assert {k: len(v) for k, v in names.items() if len(v) > 1} == {}


# a cached kernel calling a cached parallel kernel (engine.start_parallel_backend)
_NESTED = '''
import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def inner(a):
    for i in prange(a.shape[0]):
        a[i] += 1.0


@njit(cache=True)
def outer(a):
    inner(a)
    return a.sum()
'''

_FORMULATION = '''
from linkwork.engine.formulations.base import Formulation


class Minimal(Formulation):
    def initial_state(self):
        return None

    def evaluate(self, t, y):
        return None


Minimal(None, None)
'''


def _run(code, tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)


def test_formulations_start_the_threading_layer_before_cached_parallel_kernels(tmp_path):
    """The cache is filled by two processes: the first compiles the parallel kernel,
    the second loads it and compiles its caller, which numba then caches without the
    hook that starts the threading layer.  A third process loading the caller first
    crashed (rc -11, or abort: "Symbol not found: allocate_sched") unless a formulation
    had been constructed, or the caller was loaded by its compiled entry point (as a
    formulation unpickled in another process, which was not constructed, loads it)."""
    (tmp_path / "nested.py").write_text(_NESTED)
    call = "import numpy as np, nested; print(nested.outer(np.zeros(8)))"
    assert _run("import numpy as np, nested; nested.inner(np.zeros(8))", tmp_path).returncode == 0
    assert _run(call, tmp_path).stdout.strip() == "8.0"
    control = _run(call, tmp_path)
    if control.returncode == 0:
        pytest.skip("this numba carries the threading-layer hook over to cached callers")
    fixed = _run(_FORMULATION + "\n" + call, tmp_path)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert fixed.stdout.strip() == "8.0"
    entry = _run("import numpy as np, nested\n"
                 "from linkwork.engine.formulations.workspace import compiled_entry\n"
                 "a = np.zeros(8)\n"
                 "print(compiled_entry(nested.outer, (a,))(a))", tmp_path)
    assert entry.returncode == 0, entry.stderr[-2000:]
    assert entry.stdout.strip() == "8.0"


def test_every_kernel_states_whether_it_uses_reference_counting():
    """A numba kernel without an explicit ``_nrt`` inherits its caller's: the same kernel
    compiled first from an ``_nrt=False`` kernel (docs/performance.md, "Reference
    counting and scratch at the kernels' edges") cannot allocate, from any other it can
    -- so whether a cold process compiled, say, hdca's cut-joint rows would depend on which
    formulation it ran first (hdca alone on the four-bar with an empty cache: a typing
    error, exit 1).  Every kernel that is not inlined into
    its callers therefore says ``_nrt=True`` or ``_nrt=False``."""
    import ast

    missing = []
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                name = dec.func if isinstance(dec, ast.Call) else dec
                if ast.unparse(name) not in ("njit", "numba.njit", "jit", "numba.jit"):
                    continue
                kw = {k.arg: ast.unparse(k.value) for k in dec.keywords} if isinstance(dec, ast.Call) else {}
                if kw.get("inline") == "'always'":
                    continue  # its IR is copied into the caller, compiled with the caller's flags
                if "_nrt" not in kw:
                    missing.append(f"{path.relative_to(ENGINE.parent)}:{node.lineno} {node.name}")
    assert not missing, "kernels without an explicit _nrt: " + ", ".join(missing)


def _dispatchers():
    """Every numba kernel of the engine: module globals, and the kernels they close over."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    found, todo = {}, []
    for info in pkgutil.walk_packages([str(ENGINE)], "engine."):
        if info.name.startswith("linkwork.engine.studies") or info.name.endswith("__main__"):
            continue  # no kernels: the studies drive the formulations (and import the optional peers)
        mod = importlib.import_module(info.name)
        todo += [d for d in vars(mod).values() if isinstance(d, CPUDispatcher)]
    while todo:
        d = todo.pop()
        if id(d) in found:
            continue
        found[id(d)] = d
        for cell in d.py_func.__closure__ or ():
            if isinstance(cell.cell_contents, CPUDispatcher):
                todo.append(cell.cell_contents)
    return list(found.values())


def test_cached_kernels_close_over_constants_only():
    """numba keys a closure's cache entry by pickling its cells, and a kernel pickles with
    a uuid drawn in each process and the signatures it has compiled so far: a cached
    kernel that closes over another kernel misses the cache in every process.  Measured
    with tree passes that closed over their loop kernels: hdca's first evaluation compiled
    them for 24 s in every process, index-3's for 36 s, with the cache full
    (docs/compile-time.md, "Closures over constants only")."""
    kernels = _dispatchers()
    assert len(kernels) > 100
    bad = []
    for d in kernels:
        if type(d._cache).__name__ == "NullCache":  # not cached (cache=False)
            continue
        for name, cell in zip(d.py_func.__code__.co_freevars, d.py_func.__closure__ or ()):
            if not isinstance(cell.cell_contents, (bool, int, float, str, type(None))):
                bad.append(f"{d.py_func.__module__}.{d.py_func.__qualname__}: {name} "
                           f"({type(cell.cell_contents).__name__})")
    assert not bad, "kernels closing over more than constants: " + "; ".join(bad)


def test_a_kernel_is_compiled_once_whatever_the_mechanism():
    """numba compiles a kernel again for every new tuple of argument types, and types a
    read-only array apart from a writeable one and a literal argument apart from an
    int64: a writeable copy of three of the model's arrays compiled ``dense``'s whole
    pipeline a second time at a driven mechanism's first run.  ``dense`` and ``dca`` on
    a closed loop, a driven mechanism and two open chains (one of them a single
    articulated region): no kernel is typed twice for arguments that differ only in
    writeability or literalness (a different workspace, ``rk4_interval``'s, is a
    different kernel by design).  With a warm cache only the kernels Python calls are
    typed (their callees come linked into them); on an empty cache every kernel is."""
    code = r"""
import re, sys
from numba.core.registry import CPUDispatcher
from linkwork.engine.warmup import examples, warm
names = {"parallelogram-fourbar", "slider-crank-driven", "chain-8-revolute", "chain-5-spherical-spatial"}
files = [p for p in examples() if p.name.split(".")[0] in names]
assert len(files) == len(names), files
for formulation in ("dense", "dca"):
    done, errors = warm(formulation, files)
    assert not errors, errors

def plain(sig):
    s = str(sig).replace("readonly ", "")
    s = re.sub(r"(Array\([^,]+, \d+, '\w'), True,", r"\1, False,", s)
    s = re.sub(r"Literal\[int\]\(-?\d+\)", "int64", s)
    return re.sub(r"Literal\[bool\]\((True|False)\)", "bool", s)

for m in list(sys.modules.values()):
    if getattr(m, "__name__", "").startswith("linkwork.engine"):
        for k, f in vars(m).items():
            if isinstance(f, CPUDispatcher):
                seen = {}
                for sig in f.signatures:
                    seen.setdefault(plain(sig), []).append(sig)
                for same in seen.values():
                    if len(same) > 1:
                        a, b = same[:2]
                        i = next(i for i in range(len(a)) if a[i] != b[i])
                        sa, sb = str(a[i]), str(b[i])
                        c = next((c for c in range(min(len(sa), len(sb))) if sa[c] != sb[c]), 0)
                        print(f"{m.__name__}.{k}: argument {i} typed {len(same)} ways: "
                              f"...{sa[max(0, c - 120):c + 60]} / ...{sb[max(0, c - 120):c + 60]}")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "", "typed more than once:\n" + r.stdout


def test_the_row_loops_are_compiled_once_for_every_formulation():
    """The row loops and the rk4 intervals call the formulations' kernels by address with
    their tables alone (``rk4_kernel.call_by_table``): one compiled copy serves every
    formulation and kernel layout.  With each kernel's numba type in the call they were
    compiled per formulation, trees and loops apart (thirteen ``rk4_rows``, 30-35 s of a
    cold compile's CPU: docs/compile-time.md).  Every formulation on a chain and a loop, and
    the adaptive rows on both: each of these kernels has at most one signature."""
    code = r"""
from linkwork.engine import row_kernels
from linkwork.engine.formulations import REGISTRY, rk4_kernel
from linkwork.engine.warmup import examples, warm
names = {"parallelogram-fourbar", "chain-8-revolute"}
files = [p for p in examples() if p.name.split(".")[0] in names]
assert len(files) == len(names), files
for formulation in REGISTRY:
    done, errors = warm(formulation, files)
    assert not errors, errors
for f in (row_kernels.rk4_rows, row_kernels.erk_rows, row_kernels.erk_dense_rows, rk4_kernel.rk4_interval,
          rk4_kernel.rk4_interval_split):
    print(f.py_func.__name__, len(f.signatures))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    counts = dict(line.split() for line in r.stdout.split("\n") if line.strip())
    assert counts["rk4_rows"] == "1" and counts["erk_rows"] == "1" and counts["erk_dense_rows"] == "1", counts
    assert int(counts["rk4_interval"]) <= 1 and int(counts["rk4_interval_split"]) <= 1, counts
