#!/usr/bin/env bash
# Install what Linkwork needs and is missing: the system libraries Qt and OpenGL
# need on Debian/Ubuntu (and Xvfb for headless tests), a virtual environment in
# .venv, and the linkwork package with its test tools and the extras the application and the
# tests use: sweep (Dask), import (MuJoCo's MJCF/URDF compiler), video (PyAV's MP4).  Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
DEBS="xvfb xauth libegl1 libgl1 libglib2.0-0 libfontconfig1 libdbus-1-3 libxkbcommon-x11-0 \
libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libgomp1"

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in $DEBS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing system packages: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
    if [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; then
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
      echo "setup: cannot install ${missing[*]} (not root, no sudo); the GUI may not start" >&2
    fi
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ] || [ scripts/setup.sh -nt .venv/.installed ]; then
  echo "setup: installing linkwork and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev,sweep,import,video]"
  touch .venv/.installed
fi

# Compile every formulation's numerical kernels into the numba cache now (engine/warmup.py),
# so that the first Run of each starts at once instead of compiling for tens of seconds.
# The cache is keyed by the engine's sources: after an install or an update this compiles,
# otherwise it only reports that the kernels are there.  LINKWORK_SKIP_COMPILE=1 skips it.
# LINKWORK_COMPILE_FOR=FILE (make run): first only what a run of FILE needs, then the rest in
# the background at low priority, so that the window opens after seconds rather than minutes.
if [ -n "${LINKWORK_COMPILE_FOR:-}" ]; then
  .venv/bin/linkwork compile --for "$LINKWORK_COMPILE_FOR" || true
  echo "setup: compiling the other formulations in the background (log: .venv/compile.log)"
  nohup nice -n 10 .venv/bin/linkwork compile > .venv/compile.log 2>&1 < /dev/null &
elif [ -z "${LINKWORK_SKIP_COMPILE:-}" ]; then
  .venv/bin/linkwork compile || echo "setup: compiling ahead failed; the kernels compile at first use" >&2
fi
