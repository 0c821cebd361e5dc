#!/usr/bin/env bash
# Build Linkwork's desktop bundle from a clone, on Debian/Ubuntu x86-64:
#
#   packaging/build.sh
#
# 1. installs what the build needs and is missing (binutils for PyInstaller; the Python
#    venv module) with apt, and creates its own build environment in build/venv
#    (PyInstaller and Linkwork's dependencies from PyPI; nothing goes into .venv);
# 2. builds the one-folder bundle dist/linkwork/ (packaging/linkwork.spec): its
#    executable dist/linkwork/linkwork is the application and every sub-command;
# 3. compiles every formulation's numba kernels with that bundle, for the portable
#    x86-64-v3 CPU level, and ships them inside it (engine/shipped_cache.py explains
#    how the bundle finds them wherever it is unpacked);
# 4. packs dist/linkwork-VERSION-linux-x86_64.tar.gz and prints its path and size.
#
# Environment: PYTHON (default python3, >= 3.10); LINKWORK_SKIP_COMPILE=1 ships no
# kernels (each formulation then compiles at its first run); LINKWORK_VIDEO=1 also
# bundles the `video` extra (PyAV with its FFmpeg: MP4 export).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
VENV=$ROOT/build/venv
DIST=$ROOT/dist
BUNDLE=$DIST/linkwork
t_start=$SECONDS
say() { printf 'build.sh: %s\n' "$*" >&2; }

# ------------------------------------------------------------------ 1. build tools
need=()
command -v objdump >/dev/null 2>&1 || need+=(binutils)       # PyInstaller reads binaries' dependencies
"$PY" -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
# PyInstaller needs the shared libpython of the interpreter it runs in
if [ "$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("Py_ENABLE_SHARED") or 0)')" = "0" ] \
   && [ "$("$PY" -c 'import sys; print(sys.prefix)')" = "/usr" ]; then
  need+=("lib$("$PY" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')")
fi
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    say "installing ${need[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
  else
    say "missing ${need[*]} and no apt-get: install them first"; exit 1
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating the build environment $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi
# Linkwork's runtime dependencies (pyproject.toml) and PyInstaller; then Linkwork itself,
# installed from this checkout (not editable: its engine/ and app/ become linkwork.engine
# and linkwork.app only in an installed copy, which is what the spec analyses)
"$VENV/bin/python" - "$ROOT/pyproject.toml" > "$ROOT/build/requirements.txt" <<'EOF'
import os, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(project["dependencies"]))
if os.environ.get("LINKWORK_VIDEO"):
    print("\n".join(project["optional-dependencies"]["video"]))
print("pyinstaller>=6.10,<7")
EOF
say "installing the build's Python packages (build/requirements.txt)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/build/requirements.txt"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$ROOT"
VERSION=$("$VENV/bin/python" -c "import tomllib; print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])")

# ------------------------------------------------------------------ 2. the bundle
say "PyInstaller: $BUNDLE (a few minutes)"
rm -rf "$BUNDLE"
"$VENV/bin/pyinstaller" --noconfirm --log-level WARN --distpath "$DIST" --workpath "$ROOT/build/pyinstaller" \
  packaging/linkwork.spec
INTERNAL=$BUNDLE/_internal
# LLVM's symbol table is 19 MB of libllvmlite.so that nothing reads (its dynamic symbols
# stay); the other libraries are left alone: stripping the auditwheel-patched ones breaks
# them (numpy's OpenBLAS: "ELF load command address/offset not page-aligned")
strip --strip-unneeded "$INTERNAL/llvmlite/binding/libllvmlite.so"
# the engine ships as source (numba caches only kernels of real source files): byte-compile
# it for the bundle's Python, checked by hash not by modification time, so that unpacking
# (which may change mtimes) never makes Python compile it again
"$VENV/bin/python" -m compileall -q --invalidation-mode unchecked-hash "$INTERNAL/engine"
mkdir -p "$BUNDLE/share"
cp packaging/linkwork.desktop "$BUNDLE/share/linkwork.desktop"
cp packaging/install.sh "$BUNDLE/install.sh"
chmod +x "$BUNDLE/install.sh"

# the bundle must not lean on this checkout or on a Python: run it from elsewhere, bare
bare() { (cd /tmp && env -i HOME="$HOME" PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"); }
bare "$BUNDLE/linkwork" --version >/dev/null
[ "$(bare "$BUNDLE/linkwork" examples | grep -c '\.mech\.json$')" -gt 0 ]

# ------------------------------------------------------------------ 3. numba kernels
if [ -z "${LINKWORK_SKIP_COMPILE:-}" ]; then
  CACHE=$ROOT/build/numba-cache
  rm -rf "$CACHE" && mkdir -p "$CACHE"
  say "compiling every formulation's kernels with the bundle (x86-64-v3; several minutes)"
  bare env NUMBA_CACHE_DIR="$CACHE" NUMBA_CPU_NAME=x86-64-v3 NUMBA_CPU_FEATURES= \
    OMP_WAIT_POLICY=PASSIVE "$BUNDLE/linkwork" compile --variants
  "$VENV/bin/python" - "$CACHE" "$INTERNAL" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, ".")
from linkwork.engine.shipped_cache import PORTABLE_CPU, write_manifest
m = write_manifest(Path(sys.argv[1]), Path(sys.argv[2]), (PORTABLE_CPU, ""))
print(f"build.sh: kernels for {', '.join(sorted(set(m['dirs'].values())))}", file=sys.stderr)
EOF
  rm -rf "$INTERNAL/numba-cache"
  cp -a "$CACHE" "$INTERNAL/numba-cache"
else
  say "LINKWORK_SKIP_COMPILE: no kernels shipped"
fi

# ------------------------------------------------------------------ 4. the tarball
TARBALL=$DIST/linkwork-$VERSION-linux-x86_64.tar.gz
say "packing $TARBALL"
rm -f "$TARBALL"
tar -C "$DIST" -czf "$TARBALL" linkwork
size_bundle=$(du -sm "$BUNDLE" | cut -f1)
size_tar=$(du -m "$TARBALL" | cut -f1)
say "done in $(( (SECONDS - t_start) / 60 )) min $(( (SECONDS - t_start) % 60 )) s; bundle $BUNDLE: ${size_bundle} MB unpacked"
echo "$TARBALL $(stat -c %s "$TARBALL") bytes (${size_tar} MB)"
