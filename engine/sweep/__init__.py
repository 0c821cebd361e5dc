"""Parameter sweeps and batch runs on Dask (``*.sweep.json``, docs/sweeps.md).

A sweep file names a base mechanism file, the run settings, and the parameters to
vary -- by JSON path into the mechanism (``bodies[2].mass``, ``joints[0].rate``,
``forces[0].stiffness``) or by run-setting name (``dt``, ``formulation``, ...) -- as a
grid, a list of explicit cases, or random samples drawn with a seed; plus the
quantities to keep from every run.

* :mod:`.parameters` -- parameter paths: JSON paths into the mechanism, run settings;
* :mod:`.spec` -- the file's format and parser: :func:`load_sweep` reads and checks the
  file (:class:`SweepError` names the JSON path of the first broken rule, like the
  mechanism loader);
* :mod:`.cases` -- :func:`prepare_cases` builds every case's mechanism document and
  settings and validates each through the same loader and settings check as
  ``linkwork run``: a case they refuse is reported with its index and their message
  and is not submitted; the others run;
* :mod:`.task` -- :func:`run_case`, one case: the engine's
  :class:`~engine.simulation.Simulation`, exactly as ``linkwork run`` drives it,
  returning its rows and the kept quantities (:mod:`.quantities`).  A simulation
  failure (exit 3 of ``linkwork run``) is a result (``status = "failed"``), not a task
  error;
* :mod:`.runner` -- :func:`run_isolated`, a sweep's task: the case in a runner process
  of the worker, so the per-case time limit stops it wherever it is and a case that
  kills its process is run again, then recorded ``failed`` naming the signal;
* :mod:`.storage` -- the results directory: trajectories in ``DIR/runs/``,
  ``DIR/summary.parquet``, each file written to a temporary name and renamed, so a
  killed sweep never leaves a torn file; the complete rows a resumed sweep keeps;
* :mod:`.cluster` -- the ``LocalCluster`` a sweep starts when asked (``--dask``);
* :mod:`.local` -- where the cases run: this process's worker threads, each with its
  runner process (the default), or a Dask client's workers;
* :mod:`.driver` -- :func:`run_sweep` hands the cases to their workers and rewrites
  the summary as cases finish.  Run again on the same ``DIR`` it skips the cases whose
  rows are complete.

Dask, pandas and pyarrow are the optional ``sweep`` extra; they are imported only
when a sweep runs, never by ``linkwork --help`` (Dask only when a sweep uses it).  This package only re-exports: its
modules never import from it.
"""

from .cases import PreparedCase, build_settings, prepare_case, prepare_cases
from .cluster import default_workers, local_cluster, worker_environment
from .driver import Progress, run_sweep
from .parameters import RUN_SETTINGS, is_setting, parse_path, resolve_path
from .quantities import quantities
from .runner import INJECTIONS, run_isolated
from .spec import (COLUMN_STATS, FORMAT_NAME, FORMAT_VERSION, STANDARD_KEEP, TRAJECTORY_FORMATS, Case, SweepError,
                   SweepSpec, load_sweep, sweep_from_dict)
from .storage import (COMPLETE, FAULTS, HEAD_COLUMNS, STATUSES, TAIL_COLUMNS, atomic_write, complete_records,
                      read_summary, remove_stale_temporaries, summary_frame, trajectory_path, write_summary,
                      write_trajectory)
from .task import run_case

__all__ = [
    "COLUMN_STATS", "COMPLETE", "FAULTS", "FORMAT_NAME", "FORMAT_VERSION", "HEAD_COLUMNS", "INJECTIONS",
    "RUN_SETTINGS", "STANDARD_KEEP", "STATUSES", "TAIL_COLUMNS", "TRAJECTORY_FORMATS", "Case", "PreparedCase",
    "Progress", "SweepError", "SweepSpec", "atomic_write", "build_settings", "complete_records", "default_workers",
    "is_setting", "load_sweep", "local_cluster", "parse_path", "prepare_case", "prepare_cases", "quantities",
    "read_summary", "remove_stale_temporaries", "resolve_path", "run_case", "run_isolated", "run_sweep",
    "summary_frame", "sweep_from_dict", "trajectory_path", "worker_environment", "write_summary",
    "write_trajectory",
]
