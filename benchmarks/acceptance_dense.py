"""The dense reference's closed-form and conservation figures (the bounds its tests assert).

tests/engine/formulations/test_dense.py asserts the bounds; this prints the numbers:

    python benchmarks/acceptance_dense.py
"""

from pathlib import Path

import numpy as np, scipy.special as sp
from linkwork.engine.model import load_model
from linkwork.engine.simulation import Settings, Simulation

ROOT = Path(__file__).resolve().parents[1]


def run(name, **kw):
    sim = Simulation(load_model(ROOT / "resources" / "examples" / f"{name}.mech.json"), Settings(formulation="dense", **kw))
    cols, rows = sim.run_all(); return {n: rows[:, i] for i, n in enumerate(cols)}
c = run("parallelogram-fourbar", integrator="dop853", rtol=1e-10, atol=1e-10, t_end=5.0, dt=0.01)
t = c["t"]; theta = np.pi/4 + c["joint.J1.q"]; w0 = np.sqrt(2*9.81/3.5); k = np.sin(3*np.pi/8)
exact = 2*np.arcsin(k*sp.ellipj(sp.ellipk(k*k) - w0*t, k*k)[0]) - np.pi/2
print(f"parallelogram four-bar, dense dop853 1e-10, 5 s: max |theta - closed form| = {np.abs(theta-exact).max():.2e} rad, "
      f"max |E - E0| = {np.abs(c['energy.total']-c['energy.total'][0]).max():.2e} J")
c = run("spatial-double-pendulum", integrator="dop853", rtol=1e-10, atol=1e-10, t_end=10.0, dt=0.01)
print(f"spatial double pendulum, dense dop853 1e-10, 10 s: max |E - E0| = {np.abs(c['energy.total']-c['energy.total'][0]).max():.2e} J, "
      f"max position violation = {c['violation.position'].max():.2e}")
