"""``linkwork study NAME``: the papers' numerical studies, reproducible by one command.

Studies (docs/studies.md), one module each:

* ``hdca-vs-dca`` (:mod:`.hdca_vs_dca`) -- paper 001 section 3: cases 1-3 (single
  loop of 4 bodies, single loop of 8 bodies, double loop of 8 bodies), 10 s,
  integrators rk45, lsoda, rk23 (MATLAB's ode45, ode113, ode23) at tolerances
  1e-3 ... 1e-9: energy error, velocity- and position-level constraint violation and
  mirror symmetry vs time; DCA/HDCA ratios of wall time and right-hand-side
  evaluations vs tolerance; mean time per right-hand-side call (the paper's Table 1)
  and wall time per run (Table 2).
* ``dca-drift`` (:mod:`.dca_drift`) -- position-constraint drift of ``dca`` without
  stabilisation on the four-bar and paper 001's loops over 10 s, on log axes with a
  t^2 reference, and the fitted growth exponent.
* ``index3`` (:mod:`.index3`) -- paper 000 sections 4.2-4.4 and 5.2: the spatial
  double pendulum, the four-bar through its singular configuration, the 128-link
  pendulum for alpha = 1e6 ... 1e9 with and without geometric stiffness, and the
  timing of the 128- and 1024-link chains (Newton vs projections).
* ``rcr`` (:mod:`.rcr`) -- paper 002 sections 4.1-4.3 and Fig. 11: four-bar drift
  (velocity vs acceleration level), the redundant five-bar against ``dense``, ladders
  of 1-64 cells equivalent to one 2-DOF pendulum, and the cost per right-hand side on
  ladders.
* ``embedding`` (:mod:`.embedding`) -- paper 003 section 7.3: the cost of constraint
  embedding on a growing tree and a growing loop.

Each study writes PNG plots, ``results.json`` and a Markdown report
(``<out>/<name>.md``, images in ``<out>/<name>/``).  The default ``--out`` is
``linkwork-studies/`` in the current folder: a study never writes into the
checkout's committed ``docs/studies`` unless asked (``--out docs/studies``
regenerates them).  Plots need matplotlib (``pip install -e .[bench]``).

The command is :mod:`.command`; what the studies share is :mod:`.runs` (one run and
its measures, with the monitor off and ``dca``/``hdca`` unprojected, so that each
formulation's own behaviour shows), :mod:`.report` (progress, plots, tables, JSON) and
:mod:`.timing` (best-of-batches and interleaved timing on a shared machine).
``linkwork bench`` is :mod:`.bench`, with :mod:`.ladder_cost`, :mod:`.startup`,
:mod:`.monitor_cost`, :mod:`.peers` (Pinocchio and MuJoCo) and :mod:`.whole_run` (whole
runs of the examples; the peers' models :mod:`.mujoco_model` and :mod:`.exudyn_model`,
measured at :mod:`.closure_points`).

This package only re-exports: its modules never import from it.
"""

from .command import DEFAULT_OUT, STUDIES, main
from .dca_drift import DRIFT_CASES, dca_drift
from .embedding import embedding
from .hdca_vs_dca import (COLORS, HISTORY_TOL, INTEGRATORS, LONG_FACTOR, PAPER001_CASES, TOLERANCES,
                          hdca_vs_dca, time_rhs)
from .index3 import index3
from .rcr import rcr
from .runs import (HISTORY_DT, STUDY_MONITOR, T_END, case_model, growth_exponent, mirror_pairs, run_case,
                   study_projection, symmetry_error)

__all__ = [
    "COLORS", "DEFAULT_OUT", "DRIFT_CASES", "HISTORY_DT", "HISTORY_TOL", "INTEGRATORS", "LONG_FACTOR",
    "PAPER001_CASES", "STUDIES", "STUDY_MONITOR", "TOLERANCES", "T_END", "case_model", "dca_drift", "embedding",
    "growth_exponent", "hdca_vs_dca", "index3", "main", "mirror_pairs", "rcr", "run_case", "study_projection",
    "symmetry_error", "time_rhs",
]
