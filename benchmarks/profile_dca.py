"""Where one ``dca`` right-hand side spends its time.

Each pass of :func:`engine.formulations.dca_kernels.evaluate` is called on its own, with the
formulation's own arrays after one full evaluation at a random state, and timed as
the best of several batches (one thread, or ``--threads``: the tree and parallel
regions of that many).  Also timed: the whole ``_evaluate`` (one
kernel call, ``ode_rates`` in it), and ``rhs`` (``_evaluate`` + the Python around it).
"Python" is ``rhs`` minus the sum of its kernels.  The flop counts are those of
``benchmarks/results/performance-tables.md``, "Operations and rates per pass, merge by merge"
(counted from the loops by ``benchmarks/count_flops.py``).

    python benchmarks/profile_dca.py [--sizes 64 128 256 512 1024] [--kinds spherical revolute] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402
import numpy as np  # noqa: E402

from linkwork.engine import config  # noqa: E402
from linkwork.engine.forces import tree_applied_forces  # noqa: E402
from linkwork.engine.formulations import tree, tree_kernels  # noqa: E402
from linkwork.engine.kinematics import fk_positions, fk_velocities, motion_subspace, ode_rates  # noqa: E402
from linkwork.engine.studies.bench import chain_formulation  # noqa: E402
from linkwork.engine.studies.timing import time_call as _time_call  # noqa: E402


def passes(f, q, v):
    """name -> zero-argument callable for every pass of one dca evaluation."""
    m, lay = f.model, f.lay
    ix = lay.ix
    tol = config.PIVOT_RTOL
    t = np.bool_(True)
    rates = np.empty(m.nq + m.nv)
    return {
        "fk_positions": lambda: fk_positions(f.mk, q, f.x, f.R, f.P),
        "motion_subspace": lambda: motion_subspace(f.mk, q, f.R, f.S),
        "fk_velocities": lambda: fk_velocities(f.mk, f.x, f.P, f.S, v, f.V, f.c),
        "applied_forces": lambda: tree_applied_forces(f.fa, q, m.q_adr, f.spring_tree, f.cut_spring, f.x, f.R,
                                                      f.V, f.jq, f.jq_ref, f.Fext),
        "tree_rows": lambda: tree_kernels.tree_rows(f.mk, m.perp_pred, f.R, f.S, f.c, lay.G[0], lay.G[1], lay.g0, ix.row_adr),
        "leaves": lambda: tree_kernels.leaves(ix, m.mass, m.inertia, m.inertia_inv, f.bw, lay.Phi, lay.bv, t, t, f.hy),
        "assemble_matrices": lambda: tree.assemble_matrices6(ix, lay.work, 0.0, 1.0, tol, f.hy),
        "assemble_biases": lambda: tree.assemble_biases6(ix, lay.work, lay.g0, 1.0, f.hy),
        "disassemble": lambda: tree.disassemble6(ix, lay.work, f.hy),
        "accelerations": lambda: tree_kernels.accelerations(ix, f.mk, m.mass, f.bw, lay.Fh, f.hy),
        "ode_rates": lambda: ode_rates(f.mk, q, v, f.vdot, rates),
    }


@numba.njit(cache=True)
def _block_updates(E, Y, Phi):
    """The merge's densest loop alone, with nothing around it: Phi[k] -= E[k]^T Y[k] for
    (nr x 6) E, Y and 6 x 6 Phi -- the rate numba reaches on this machine for the
    arithmetic the matrix pass is made of (no index arithmetic, no branches)."""
    nr = E.shape[1]
    for k in range(Phi.shape[0]):
        for a in range(nr):
            for c in range(6):
                ea = E[k, a, c]
                for d in range(6):
                    Phi[k, c, d] -= ea * Y[k, a, d]


def machine_reference(nr: int, n: int = 1024) -> float:
    """GFlop/s of :func:`_block_updates` on n blocks (2 * nr * 36 flops each)."""
    rng = np.random.default_rng(1)
    E, Y, Phi = rng.normal(size=(n, nr, 6)), rng.normal(size=(n, nr, 6)), rng.normal(size=(n, 6, 6))
    t = _time_call(lambda: _block_updates(E, Y, Phi))
    return 2 * nr * 36 * n / t * 1e-9


def profile(n: int, kind: str, threads: int = 1) -> dict:
    f, y = chain_formulation("dca", n, kind, threads)
    numba.set_num_threads(threads)
    model = f.model
    q, v = y[: model.nq].copy(), y[model.nq:].copy()
    f.rhs(0.0, y)
    out = {}
    for name, call in passes(f, q, v).items():
        out[name] = _time_call(call) * 1e6
    rates = np.empty_like(y)
    out["_evaluate (one kernel)"] = _time_call(lambda: f._kernel(y, rates)) * 1e6
    out["rhs"] = _time_call(lambda: f.rhs(0.0, y)) * 1e6
    kern = sum(out[k] for k in passes(f, q, v))
    out["python and calls"] = out["rhs"] - kern
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    ap.add_argument("--kinds", nargs="+", default=["spherical", "revolute"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    res = {}
    for kind in a.kinds:
        for n in a.sizes:
            res[f"{kind}-{n}"] = profile(n, kind, a.threads)
    names = list(next(iter(res.values())))
    print("| pass | " + " | ".join(res) + " |")
    print("|---|" + "---:|" * len(res))
    for name in names:
        cells = []
        for key, r in res.items():
            nb = int(key.split("-")[1])
            cells.append(f"{r[name]:.1f} ({r[name] / nb * 1000:.0f} ns/body)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    for nr in (3, 5):
        print(f"machine reference: Phi -= E^T Y, 6 x 6 blocks, {nr} rows: {machine_reference(nr):.1f} GFlop/s")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
