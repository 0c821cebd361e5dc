"""``dca``'s accelerations against a 40-digit reference: merge by merge, with the
articulated-body regions (the chain's root merged with ground as a merge), and with
the ground joint in the region (the chain one grounded region, as ``dca`` assembles it
on one thread).

The reference takes ``dca``'s own float64 kinematics (x, R, P, S: identical in every
run) and the state's joint rates as exact data and solves ``M qdd = -C`` in ``decimal``
arithmetic: ``M`` from composite spatial inertias about the world origin
(``region_impulses.mass_matrix``), ``C`` by the recursive Newton-Euler algorithm
with ``qdd = 0`` in the same coordinates (``a_i = a_p + dS_i/dt v_i``, ``dS/dt v =
V_p x S v`` for a joint whose axes are fixed in one of its bodies, plus ``v_0 v_1 s_0 x
s_1`` for a universal joint, whose second axis turns with the first), gravity the only
load, a dense Cholesky solve.  So it measures the error of the solve
alone (``rcr``'s figure, for comparison, also carries its own kinematics' round-off).
The state is drawn as in ``test_articulated_regions_agree_with_the_merges``.

    python benchmarks/region_accelerations.py [--n 100] [--kind spherical] [--planar] [--inertia I] [--seed 13]
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks.region_impulses import ZERO, cholesky_solve, cross, dec, mass_matrix, spatial  # noqa: E402
from linkwork.engine import generators as gen  # noqa: E402
from linkwork.engine.formulations.dca import DCAFormulation  # noqa: E402
from linkwork.engine.formulations.tree_formulation import TreeFormulation  # noqa: E402
from linkwork.engine.kinematics import kin_arrays, normalize_quaternions  # noqa: E402
from linkwork.engine.model import UNIVERSAL, build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402

VARIANTS = {  # name: (articulated regions, ground joint in the region)
    "merges": (False, False),
    "regions, root merged with ground": (True, False),
    "regions, ground joint in the region": (True, True),
}


def dca_run(model, y, regions: bool, grounded: bool) -> dict:
    """dca's joint accelerations at y, one thread, with or without the regions."""
    old = TreeFormulation.articulated_regions, DCAFormulation.grounded_regions
    TreeFormulation.articulated_regions, DCAFormulation.grounded_regions = regions, grounded
    try:
        f = Simulation(model, Settings(formulation="dca", threads=1)).formulation
    finally:
        TreeFormulation.articulated_regions, DCAFormulation.grounded_regions = old
    qdd = f.rhs(0.0, y)[model.nq:]
    return dict(qdd=qdd, x=f.x.copy(), R=f.R.copy(), P=f.P.copy(), S=f.S.copy(), regions=f.lay.n_regions)


def _crm(V, m):
    """V x m for motion vectors [linear; angular]."""
    v, w = V[:3], V[3:]
    return [a + b for a, b in zip(cross(w, m[:3]), cross(v, m[3:]))] + cross(w, m[3:])


def _crf(V, f):
    """V x* f for a force [force; moment]."""
    v, w = V[:3], V[3:]
    return cross(w, f[:3]) + [a + b for a, b in zip(cross(w, f[3:]), cross(v, f[:3]))]


def reference(model, v, x, R, P, S) -> np.ndarray:
    """qdd in 40-digit arithmetic from the float64 kinematics and rates taken as exact."""
    nb, nv, par, va, nvj = model.nb, model.nv, model.parent, model.v_adr, model.nv_j
    g = dec(model.gravity)
    IO, SO = spatial(model, x, R, P, S)
    vd = dec(v)
    V, A, F = [], [], []
    for j in range(nb):  # twists and velocity-product accelerations, root first
        Sv = [sum((SO[j][r][k] * vd[va[j] + k] for k in range(nvj[j])), ZERO) for r in range(6)]
        Vj = [a + b for a, b in zip(V[par[j]], Sv)] if par[j] >= 0 else Sv
        cj = _crm(Vj, Sv)  # = V_p x S v: (S v) x (S v) = 0
        if model.jtype[j] == UNIVERSAL:  # its second axis turns with the first
            w = vd[va[j]] * vd[va[j] + 1]
            s0, s1 = [row[0] for row in SO[j]], [row[1] for row in SO[j]]
            cj = [a + w * b for a, b in zip(cj, _crm(s0, s1))]
        Aj = [a + b for a, b in zip(A[par[j]], cj)] if par[j] >= 0 else cj
        IV = [sum((IO[j][r][k] * Vj[k] for k in range(6)), ZERO) for r in range(6)]
        IA = [sum((IO[j][r][k] * Aj[k] for k in range(6)), ZERO) for r in range(6)]
        c = dec(x[j])
        fg = [Decimal(float(model.mass[j])) * gk for gk in g]  # gravity at the centre of mass
        F.append([a + b - e for a, b, e in zip(IA, _crf(Vj, IV), fg + cross(c, fg))])
        V.append(Vj)
        A.append(Aj)
    for j in range(nb - 1, -1, -1):  # subtree forces (parent[j] < j)
        if par[j] >= 0:
            F[par[j]] = [a + b for a, b in zip(F[par[j]], F[j])]
    rhs = [ZERO] * nv
    for j in range(nb):
        for k in range(nvj[j]):
            rhs[va[j] + k] = -sum((SO[j][r][k] * F[j][r] for r in range(6)), ZERO)
    return np.array([float(t) for t in cholesky_solve(mass_matrix(model, IO, SO), rhs)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--kind", default="spherical", choices=["spherical", "revolute", "universal"])
    ap.add_argument("--planar", action="store_true", help="the generator's planar chain (default: spatial)")
    ap.add_argument("--inertia", type=float, default=None,
                    help="every link's three principal moments (default: the generator's slender rods; "
                         "0.1: the chains of test_articulated_regions_agree_with_the_merges)")
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args(argv)
    inertia = None if a.inertia is None else (a.inertia,) * 3
    model = build_model(gen.chain(a.n, a.kind, planar=a.planar, inertia=inertia))
    assert not len(model.f_type), "the reference takes gravity as the only load"
    rng = np.random.default_rng(a.seed)  # the state of test_articulated_regions_agree_with_the_merges
    q = model.q_zero() + rng.normal(scale=0.6, size=model.nq)
    normalize_quaternions(kin_arrays(model), q)
    y = np.concatenate([q, rng.normal(size=model.nv)])
    runs = {name: dca_run(model, y, *flags) for name, flags in VARIANTS.items()}
    first = next(iter(runs.values()))
    for run in runs.values():
        for k in ("x", "R", "P", "S"):
            assert np.array_equal(run[k], first[k])
    ref = reference(model, y[model.nq:], first["x"], first["R"], first["P"], first["S"])
    scale = np.abs(ref).max()
    print(f"{a.kind} chain of {a.n} ({'planar' if a.planar else 'spatial'}, "
          f"{'slender rods' if inertia is None else f'moments {a.inertia:g}'}), seed {a.seed}: "
          f"max |qdd| {scale:.3e}; dca's error relative to it")
    print("| dca | regions | qdd |\n|---|---:|---:|")
    for name, run in runs.items():
        print(f"| {name} | {run['regions']} | {np.abs(run['qdd'] - ref).max() / scale:.2e} |")
    rcr = Simulation(model, Settings(formulation="rcr", threads=1)).formulation.rhs(0.0, y)[model.nq:]
    print(f"(rcr, from its own kinematics: {np.abs(rcr - ref).max() / scale:.2e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
