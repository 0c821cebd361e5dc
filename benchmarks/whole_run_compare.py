"""Whole runs of bundled examples at their defaults, for before/after comparisons of two
checkouts: wall per simulated second of ``Simulation.run_all`` (output rows and the
monitor included, kernels loaded by an untimed short run first), best of two, as JSON.

    python benchmarks/whole_run_compare.py T_END example,example,... > out.json

Run it alternately from the two checkouts (each with its own NUMBA_CACHE_DIR) and
compare the best of each; ``linkwork bench --whole-run`` is the full benchmark.
"""
import sys, time, json, dataclasses
from linkwork.engine.model import load_model
from linkwork.engine.simulation import Simulation, file_defaults
from linkwork.engine.paths import examples_dir
names = sys.argv[2].split(",")
t_end = float(sys.argv[1])
out = {}
for n in names:
    m = load_model(examples_dir() / f"{n}.mech.json")
    s = file_defaults(m)
    Simulation(m, dataclasses.replace(s, t_end=0.05)).run_all()  # load the kernels
    best = 1e9
    for _ in range(2):
        sim = Simulation(m, dataclasses.replace(s, t_end=t_end))
        t0 = time.perf_counter(); cols, rows = sim.run_all(); w = time.perf_counter() - t0
        best = min(best, w)
    st = sim.stats
    out[n] = {"wall_per_s": best / t_end, "formulation": sim.settings.formulation, "integrator": sim.settings.integrator,
              "rows": int(rows.shape[0]), "nfev": st.get("rhs_evaluations"), "closure": float(rows[:, cols.index("violation.position")].max())}
print(json.dumps(out))
