"""The desktop bundle's shipped numba kernels (engine/shipped_cache.py): re-keyed for a new
install location, and used there without compiling."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from linkwork.engine import shipped_cache as sc


def test_subpath_is_numbas_own(tmp_path):
    from numba.core.caching import _CacheLocator

    f = tmp_path / "pkg" / "mod.py"
    assert sc.subpath(f.parent) == _CacheLocator.get_suitable_cache_subpath(str(f))


def test_choose_cpu_takes_the_portable_level_only_where_the_cpu_has_it():
    env = {}
    assert sc.choose_cpu(env, flags=sc.PORTABLE_FLAGS | {"avx512f"}) == "x86-64-v3"
    assert env == {"NUMBA_CPU_NAME": "x86-64-v3", "NUMBA_CPU_FEATURES": ""}
    env = {}
    assert sc.choose_cpu(env, flags=sc.PORTABLE_FLAGS - {"avx2"}) is None and env == {}
    env = {"NUMBA_CPU_NAME": "generic"}  # the user's choice wins
    assert sc.choose_cpu(env, flags=sc.PORTABLE_FLAGS) is None and env == {"NUMBA_CPU_NAME": "generic"}


KERNEL = textwrap.dedent("""
    import numpy as np
    from numba import njit

    @njit(cache=True)
    def twice(x):
        return 2.0 * x
    """)

RUN = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; import kern; "
       "print(kern.twice(np.arange(3.0)).sum())")


def _run(where: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")},
           "NUMBA_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1"}
    r = subprocess.run([sys.executable, "-c", RUN, str(where)], capture_output=True, text=True, env=env,
                       cwd=where, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def test_a_cache_built_in_one_place_is_used_in_another_after_seeding(tmp_path):
    """Build: compile a cached kernel where the bundle was built, write the manifest.
    Install: the same sources elsewhere; the seeded user cache loads the kernel, no compile."""
    built, installed = tmp_path / "build" / "bundle", tmp_path / "home" / "apps" / "bundle"
    for d in (built, installed):
        d.mkdir(parents=True)
        (d / "kern.py").write_text(KERNEL)
    shipped = tmp_path / "shipped"
    first = _run(built, shipped)
    assert "[cache] data saved to" in first.stdout
    m = sc.write_manifest(shipped, built, ("cpu", "features"))
    assert m["dirs"] == {sc.subpath(built): "."}

    # without re-keying, the other location misses and compiles
    cold = _run(installed, tmp_path / "empty-cache")
    assert "[cache] data saved to" in cold.stdout

    user = tmp_path / "user-cache"
    line = sc.seed(shipped, installed, user)
    assert "differs" in line  # ('cpu', 'features') is not this machine
    assert json.loads((user / sc.MARKER).read_text())["root"] == str(installed.resolve())
    warm = _run(installed, user)
    assert "[cache] data loaded from" in warm.stdout and "data saved" not in warm.stdout
    assert warm.stdout.strip().splitlines()[-1] == "6.0"
    assert sc.seed(shipped, installed, user).startswith("shipped kernels already in")
