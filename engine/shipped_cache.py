"""The compiled kernels a desktop bundle ships, moved into the user's numba cache.

``packaging/build.sh`` runs ``linkwork compile`` with the finished bundle itself,
so that numba's cache holds every formulation's kernels as the bundle calls
them, and ships that cache in the bundle (``numba-cache/`` next to the bundled
packages, with :data:`MANIFEST`).  numba (0.68) keys a cached kernel on:

- the **cache sub-directory**: ``<folder>_<sha1 of the source folder's absolute
  path>`` (``_CacheLocator.get_suitable_cache_subpath``), so it depends on where
  the bundle was unpacked;
- the **source stamp** in the index (``*.nbi``): in a frozen program the SHA-256
  of ``sys.executable`` -- the bundle's own launcher, identical wherever it is
  unpacked;
- the **index key** of each overload: signature, the bytecode's hash and the
  codegen's ``(target triple, CPU name, CPU features)``.

The CPU part is made portable: the bundle compiles, ships and runs its kernels
for the x86-64-v3 level (AVX2, FMA, BMI2: Intel since 2013, AMD since 2015)
instead of the build machine's own CPU, by setting ``NUMBA_CPU_NAME=x86-64-v3``
and an empty ``NUMBA_CPU_FEATURES`` before numba loads (:func:`choose_cpu`), so
the index keys are the same on every machine of that level.  A CPU below it
keeps numba's default (its own CPU): its index keys miss and each formulation
compiles at first use.

So a different install location only needs the sub-directories renamed, which
:func:`seed` does when it copies the shipped cache into the user's (writable)
cache directory -- once per install location, recorded in :data:`MARKER`.  A
different CPU misses in the index: numba compiles that formulation's kernels at
its first use and adds them next to the shipped ones (the application shows its
"Compiling the ... kernels" notice; ``linkwork compile`` does it ahead).
:func:`seed` says which case applies, once, on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

#: in the shipped cache: {"dirs": {sub-directory: source folder relative to the bundle}, "cpu": [name, features]}
MANIFEST = "manifest.json"
#: the CPU level the bundle's kernels are compiled for (an LLVM CPU name)
PORTABLE_CPU = "x86-64-v3"
#: what that level needs, as /proc/cpuinfo names the flags (abm: lzcnt)
PORTABLE_FLAGS = frozenset("sse4_1 sse4_2 ssse3 popcnt cx16 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave".split())
#: in the user's cache directory: the install location its shipped kernels were copied for
MARKER = "shipped-from.json"


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty if unknown)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def choose_cpu(environ=os.environ, flags: frozenset[str] | None = None) -> str | None:
    """Before numba loads: target :data:`PORTABLE_CPU` if this CPU has that level and
    the user chose nothing (``NUMBA_CPU_NAME``); returns the CPU name set, else None."""
    if environ.get("NUMBA_CPU_NAME") is not None:
        return None
    if not PORTABLE_FLAGS <= (cpu_flags() if flags is None else flags):
        return None
    environ["NUMBA_CPU_NAME"] = PORTABLE_CPU
    environ["NUMBA_CPU_FEATURES"] = ""  # the level's own features, not this CPU's
    return PORTABLE_CPU


def subpath(source_dir: Path) -> str:
    """numba's cache sub-directory for the sources in ``source_dir``
    (``numba.core.caching._CacheLocator.get_suitable_cache_subpath`` of a file in it)."""
    d = os.path.abspath(source_dir)
    return "_".join([os.path.basename(d), hashlib.sha1(d.encode()).hexdigest()])


def host_cpu() -> tuple[str, str]:
    """(CPU name, CPU features) as numba's JIT codegen puts them in its index keys,
    honouring ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``."""
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features
    import llvmlite.binding as ll

    name = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else get_host_cpu_features()
    return name, features


def write_manifest(cache: Path, root: Path, cpu: tuple[str, str]) -> dict:
    """Build side: name the source folder (relative to ``root``, the bundle's package
    folder) of every sub-directory of ``cache``; refuses a sub-directory it cannot place."""
    known = {}
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        known[subpath(d)] = d.relative_to(root).as_posix()
    dirs = {}
    for sub in sorted(p.name for p in cache.iterdir() if p.is_dir()):
        if sub not in known:
            raise ValueError(f"{cache / sub}: no source folder under {root} has this numba cache key")
        dirs[sub] = known[sub]
    data = {"dirs": dirs, "cpu": list(cpu)}
    (cache / MANIFEST).write_text(json.dumps(data, indent=1, sort_keys=True))
    return data


def seed(shipped: Path, root: Path, cache: Path, stream=None) -> str:
    """Copy the kernels shipped in ``shipped`` into the user's numba cache ``cache``,
    each sub-directory renamed for the sources' location under ``root`` (this
    install).  Existing files are kept (kernels compiled here for another CPU stay).
    Returns what happened, in one line; says it on ``stream`` when it copies."""
    try:
        manifest = json.loads((shipped / MANIFEST).read_text())
    except (OSError, ValueError):
        return f"no shipped kernels ({shipped / MANIFEST} missing)"
    where = str(Path(root).resolve())
    marker = cache / MARKER
    try:
        if json.loads(marker.read_text()).get("root") == where:
            return f"shipped kernels already in {cache}"
    except (OSError, ValueError):
        pass
    n = 0
    for sub, rel in manifest["dirs"].items():
        src, dst = shipped / sub, cache / subpath(Path(root) / rel)
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.iterdir():
            target = dst / f.name
            if f.is_file() and not target.exists():
                shutil.copy2(f, target)
                n += 1
    built_cpu = tuple(manifest.get("cpu", ("?", "")))
    try:
        same_cpu = host_cpu() == built_cpu
    except Exception:  # noqa: BLE001 - numba's internals moved: assume it differs, say so
        same_cpu = False
    record = "compiled.json"  # engine.warmup.RECORD: the formulations compiled ahead
    if same_cpu and (shipped / record).is_file() and not (cache / record).exists():
        # (on another CPU the application must say "compiling", not "loading"); the record
        # names the engine's place, now this install's (engine.warmup.compiled)
        try:
            rec = json.loads((shipped / record).read_text())
            rec["root"] = str(Path(__file__).resolve().parent)  # this install's engine package
            (cache / record).write_text(json.dumps(rec, indent=1, sort_keys=True))
        except (OSError, ValueError):
            pass
    marker.write_text(json.dumps({"root": where, "files": n, "same_cpu": same_cpu}))
    if same_cpu:
        line = (f"linkwork: {n} compiled kernel files shipped with this bundle copied to {cache} "
                f"(once per install location)")
    else:
        line = (f"linkwork: this CPU differs from the one the shipped kernels were compiled for "
                f"({built_cpu[0]}): each formulation compiles its kernels at its first run (once, "
                f"20-100 s; 'linkwork compile' does it ahead)")
    if stream is not None:
        print(line, file=stream, flush=True)
    return line
