"""Start-up time: the first evaluation with an empty numba cache (cold) and with a
filled one (warm), and ``linkwork run`` on the bundled four-bar (1000 steps) end to end,
cold and again with the kernels it ran cached (``linkwork bench``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def startup_example() -> Path:
    """The mechanism the start-up figures are measured on (the bundled four-bar)."""
    from ..paths import examples_dir

    return examples_dir() / "parallelogram-fourbar.mech.json"


def startup(formulation: str) -> dict:
    """Cold (empty numba cache) and warm first-evaluation and end-to-end CLI times."""
    example = startup_example()
    code = (
        "import time; t0 = time.perf_counter()\n"
        "from linkwork.engine.model import load_model\n"
        "from linkwork.engine.simulation import Settings, Simulation\n"
        f"sim = Simulation(load_model({str(example)!r}), Settings(formulation={formulation!r}))\n"
        "sim.prepare(); print(time.perf_counter() - t0)\n"
    )
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out[f"first_evaluation_{label}_s"] = float(r.stdout.strip().splitlines()[-1])
    run = [sys.executable, "-m", "linkwork.engine.cli", "run", str(example), "--formulation", formulation,
           "--t-end", "10", "--dt", "0.01", "--out", os.devnull]
    with tempfile.TemporaryDirectory() as cache:  # the whole run cold, then again with its kernels cached
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            # rcr stops at the four-bar's singular configuration (exit 3): still timed
            r = subprocess.run(run, env=env, check=False, capture_output=True)
            if r.returncode not in (0, 3):
                raise subprocess.CalledProcessError(r.returncode, run, r.stdout, r.stderr)
            out[f"run_{label}_1000_steps_s"] = time.perf_counter() - t0
            out[f"run_{label}_exit"] = r.returncode
    return out
