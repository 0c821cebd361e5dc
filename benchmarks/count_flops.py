"""Floating-point operations per body of each pass of a ``dca`` right-hand side, and of
``rcr`` (an articulated-body recursion) for comparison -- counted, not estimated.

With ``NUMBA_DISABLE_JIT=1`` every kernel is its plain Python source; the script runs
each pass of :func:`engine.formulations.dca_kernels.evaluate` over the formulation's arrays
with every float replaced by a counting number (:class:`Flop`: each ``+ - * /`` and
square root counts one operation; negation, abs and comparisons count none), so the
count is that of the loops the compiled code runs, with their data-dependent branches
(zero entries of G skipped, ...) taken as they are at that state.  Counts per body at
two sizes show the per-body cost and the per-call constant.

    python benchmarks/count_flops.py [--sizes 64 256]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

os.environ["NUMBA_DISABLE_JIT"] = "1"  # before numba is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


class Flop:
    """A float that counts the arithmetic done with it."""

    __slots__ = ("v",)
    n = 0

    def __init__(self, v):
        self.v = float(v)

    @staticmethod
    def _v(o):
        return o.v if isinstance(o, Flop) else o

    def _op(self, r):
        Flop.n += 1
        return Flop(r)

    def __add__(self, o): return self._op(self.v + Flop._v(o))
    def __radd__(self, o): return self._op(Flop._v(o) + self.v)
    def __sub__(self, o): return self._op(self.v - Flop._v(o))
    def __rsub__(self, o): return self._op(Flop._v(o) - self.v)
    def __mul__(self, o): return self._op(self.v * Flop._v(o))
    def __rmul__(self, o): return self._op(Flop._v(o) * self.v)
    def __truediv__(self, o): return self._op(self.v / Flop._v(o))
    def __rtruediv__(self, o): return self._op(Flop._v(o) / self.v)
    def __pow__(self, p): return self._op(self.v ** Flop._v(p))
    def __neg__(self): return Flop(-self.v)
    def __pos__(self): return self
    def __abs__(self): return Flop(abs(self.v))
    def sqrt(self): return self._op(math.sqrt(self.v))
    def sin(self): return self._op(math.sin(self.v))
    def cos(self): return self._op(math.cos(self.v))
    def __float__(self): return self.v
    def __lt__(self, o): return self.v < Flop._v(o)
    def __le__(self, o): return self.v <= Flop._v(o)
    def __gt__(self, o): return self.v > Flop._v(o)
    def __ge__(self, o): return self.v >= Flop._v(o)
    def __eq__(self, o): return self.v == Flop._v(o)
    def __ne__(self, o): return self.v != Flop._v(o)
    def __hash__(self): return hash(self.v)


def counting(a):
    """An object array of counting numbers with a's values (float arrays only)."""
    if isinstance(a, np.ndarray) and a.dtype == np.float64:
        out = np.empty(a.shape, dtype=object)
        flat = out.reshape(-1)
        for k, x in enumerate(a.reshape(-1)):
            flat[k] = Flop(x)
        return out
    return a


class _Counted:
    """The (frozen) model with some float arrays as counting numbers."""

    def __init__(self, model, names):
        self._m = model
        for name in names:
            setattr(self, name, counting(getattr(model, name)))

    def __getattr__(self, name):
        return getattr(self._m, name)


def _convert(obj, names):
    for name in names:
        setattr(obj, name, counting(getattr(obj, name)))


def dca_counts(n: int, kind: str) -> dict:
    from linkwork.engine.studies.bench import chain_formulation

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from profile_dca import passes

    f, y = chain_formulation("dca", n, kind)
    model = f.model
    f.model = _Counted(model, ("mass", "inertia", "inertia_inv", "perp_pred"))
    _convert(f, ("x", "R", "P", "S", "V", "c", "Fext", "rhs_body", "Jinv_w", "_scratch", "A", "vdot",
                 "jq", "jq_ref"))
    # the kinematic arrays' float parts (anchors, axes, ...)
    f.mk = tuple(counting(a) for a in f.mk)
    f.fa = tuple(counting(a) for a in f.fa)
    lay = f.lay
    _convert(lay, ("Phi", "bv", "Fh", "G", "g0", "lam", "Kf", "Ks", "Y", "E", "r0", "y0", "scr",
                   "IA", "W", "U", "Dinv", "sz", "cperp", "xa", "LA"))
    f.hy = lay.hybrid(f.S, f.P)  # the articulated-body regions' workspace, counted
    q, v = counting(y[: model.nq].copy()), counting(y[model.nq:].copy())
    out = {}
    for name, call in passes(f, q, v).items():
        Flop.n = 0
        call()
        out[name] = Flop.n
    return out


def rcr_counts(n: int, kind: str) -> int | None:
    """One rcr right-hand side, counted whole (its arrays converted the same way)."""
    from linkwork.engine.studies.bench import chain_formulation

    f, y = chain_formulation("rcr", n, kind)
    for name, val in list(vars(f).items()):
        if isinstance(val, np.ndarray) and val.dtype == np.float64:
            setattr(f, name, counting(val))
        elif isinstance(val, tuple) and any(isinstance(a, np.ndarray) for a in val):
            setattr(f, name, tuple(counting(a) for a in val))
    isfinite = np.isfinite
    # the finiteness checks between kernels see object arrays: answer for their values
    np.isfinite = lambda a: isfinite(a.astype(float)) if getattr(a, "dtype", None) == object else isfinite(a)
    try:
        Flop.n = 0
        f.rhs(0.0, counting(y))
    finally:
        np.isfinite = isfinite
    return Flop.n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--kinds", nargs="+", default=["spherical", "revolute"])
    a = ap.parse_args(argv)
    for kind in a.kinds:
        res = {n: dca_counts(n, kind) for n in a.sizes}
        print(f"\n{kind} chains: dca flops per body (total / n)")
        print("| pass | " + " | ".join(f"n = {n}" for n in a.sizes) + " |")
        print("|---|" + "---:|" * len(a.sizes))
        names = list(res[a.sizes[0]])
        for name in names:
            print(f"| {name} | " + " | ".join(f"{res[n][name] / n:.0f}" for n in a.sizes) + " |")
        print("| **sum** | " + " | ".join(f"{sum(res[n].values()) / n:.0f}" for n in a.sizes) + " |")
        for n in a.sizes:
            try:
                c = rcr_counts(n, kind)
                print(f"rcr, n = {n}: {c / n:.0f} flops per body (one right-hand side)")
            except Exception as exc:  # noqa: BLE001 -- say which part could not be counted
                print(f"rcr, n = {n}: not counted ({type(exc).__name__}: {exc})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
