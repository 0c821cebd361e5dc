"""Where the loops close, and how well conditioned their closure is: the tree
formulations' watch for singular configurations (docs/formulations.md, "Singular
configurations")."""

from __future__ import annotations

import numpy as np
from numba import njit

from ... import config
from ..dense_linalg import singular_values
from .layout import TreeLayout




def closing_merges(lay: TreeLayout, nb: int) -> np.ndarray:
    """The merges that close loops: those joining their two parts by more than one joint,
    or by one joint where both parts are already attached to ground.  (A merge that only
    eliminates a cut joint attaches a body by it -- a pendulum's conditioning, constant
    -- while the loop closes where the two paths meet.)"""
    tr = lay.tree
    grounded = np.zeros(nb + tr.n_merges, dtype=bool)
    out = []
    for m in range(tr.n_merges):
        a, b = int(tr.left[m]), int(tr.right[m])
        ga = grounded[a]
        gb = b < 0 or grounded[b]
        grounded[nb + m] = ga or gb
        if tr.if_start[m + 1] - tr.if_start[m] > 1 or (ga and gb):
            out.append(m)
    return np.array(out, dtype=np.int64)


@njit(cache=True, nogil=True, _nrt=True)
def loop_conditioning(ix, Kf, Kr, merges) -> float:
    """Smallest ``s_min / s_max`` of the Cholesky factors of the loop-closing merges'
    ``K`` (their independent part).  For the merge that closes a loop, ``K`` is the
    Gram matrix of the mass-whitened loop Jacobian, so this is the conditioning
    ``dense`` monitors (docs/derivations.md, "Singular configurations") -- the same number
    for non-redundant closures; with redundant rows, that of the independent subset the
    pivoting kept, which also vanishes at a singular configuration.  The singular values
    by :func:`.dense_linalg.singular_values` (Jacobi rotations, as ``dense``'s own: a
    fraction of LAPACK's call on these few rows, which ran after every step)."""
    m_nr, m_K = ix.m_nr, ix.m_K
    worst = 1.0
    for k in range(merges.shape[0]):
        m = merges[k]
        n = m_nr[m]
        r = Kr[m]
        if r == 0:
            continue
        L = np.empty((r, r))
        for i in range(r):
            for j in range(r):
                L[i, j] = Kf[m_K[m] + i * n + j]
        s = singular_values(L)
        if s[0] > 0.0 and s[r - 1] / s[0] < worst:
            worst = s[r - 1] / s[0]
    return worst


class SingularityWatch:
    """Warns when a tree-solve formulation's loops come near a singular configuration.

    The divide-and-conquer merges cannot tell which assembly branch to follow
    through a singular configuration (a parallelogram folding flat): they may
    switch branches or lose accuracy (round-off ~1/s^2).  ``watch_singular`` runs after
    every accepted step (rk4; adaptive solvers through ``step_bound``) on the
    factors of the latest evaluation, and records one warning each time the loop
    conditioning falls below SINGULAR_WINDOW of its initial value.
    """

    MAX_WARNINGS = 20

    def _watch_init(self, lay: TreeLayout, nb: int) -> None:
        self._closing = closing_merges(lay, nb)
        self._cond0 = None
        self._in_window = False
        self._t_warn = -np.inf
        self.warnings: list[str] = []
        self.singular_visits = 0

    def watch_singular(self, t, y) -> None:
        if self._closing.shape[0] == 0:
            return
        lay = self.lay
        c = loop_conditioning(lay.ix, lay.Kf, lay.Kr, self._closing)
        if self._cond0 is None:
            self._cond0 = max(c, 1e-300)
            return
        rel = c / self._cond0
        if not self._in_window and rel < config.SINGULAR_WINDOW:
            self._in_window = True
            if t - self._t_warn < config.CROSSING_TIME:
                return  # the same crossing, seen again by a large step
            self._t_warn = t
            self.singular_visits += 1
            if len(self.warnings) < self.MAX_WARNINGS:
                self.warnings.append(
                    f"t = {t:.4g} s: near a singular configuration (loop conditioning {rel:.1e} of its initial "
                    f"value); {self.name} may switch assembly branch or lose accuracy there -- the dense "
                    "formulation crosses singular configurations (docs/formulations.md)")
        elif self._in_window and rel > 2.0 * config.SINGULAR_WINDOW:
            self._in_window = False
        if self._in_window:
            self._t_warn = t

    def health(self) -> dict:
        """The loop conditioning of the latest evaluation's factors (Formulation.health)."""
        if self._closing.shape[0] == 0:
            return {}
        lay = self.lay
        return {"loop_conditioning": loop_conditioning(lay.ix, lay.Kf, lay.Kr, self._closing)}

    @property
    def watches_steps(self) -> bool:
        """:attr:`.base.Formulation.watches_steps`: where there are loops to watch."""
        return self._closing.shape[0] > 0

    def step_bound(self, t, y):
        """Adaptive integrators call this before every step: watch, never bound."""
        self.watch_singular(t, y)
        return None

    def stats(self) -> dict:
        out = {"rhs_evaluations": self.nfev}
        if self.singular_visits:
            out["warnings"] = list(self.warnings)
            out["singular_visits"] = self.singular_visits
        return out
