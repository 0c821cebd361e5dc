"""Cost of producing one output row: a formulation evaluation and the recorder's CSV row,
for a 1024-body spherical chain (dca, one thread).

    python benchmarks/output_cost.py
"""

import time
from linkwork.engine import generators as g
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation
m = build_model(g.chain(1024, "spherical", planar=False))
sim = Simulation(m, Settings(formulation="dca", threads=1))
f = sim.formulation; y = f.initial_state(); ev = f.evaluate(0.0, y); rec = sim.recorder
rec.row(ev)
t = time.perf_counter()
for _ in range(50): rec.row(ev)
t1 = (time.perf_counter() - t) / 50
t = time.perf_counter()
for _ in range(50): f.evaluate(0.0, y)
print(f"1024 bodies: recorder row {t1*1e3:.2f} ms, evaluate {(time.perf_counter()-t)/50*1e3:.2f} ms")
