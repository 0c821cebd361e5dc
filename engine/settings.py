"""The solver settings of a run: what the user asks for, before the mechanism is known.

A module of its own, below the formulations and the simulation, so that every layer
can read them; :func:`simulation.resolve_settings` fills in what depends on the
mechanism (its default formulation and integrator)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from . import config


#: index3's penalty where a run names none, as :func:`penalty_at`'s ``(alpha, alpha_dt)``:
#: paper 000's 1e9 at the default step and above, the same alpha dt^2 / 4 below
AUTOMATIC_PENALTY = (config.DEFAULT_PENALTY, config.DEFAULT_DT)


@dataclass(frozen=True)
class Settings:
    """Solver settings (docs/file-format.md, "Command line"; defaults in brackets there)."""

    formulation: str | None = None  # None: the default for the mechanism
    integrator: str | None = None  # None: the formulation's default
    dt: float = config.DEFAULT_DT
    t_end: float = config.DEFAULT_T_END
    rtol: float = config.DEFAULT_RTOL
    atol: float = config.DEFAULT_ATOL
    #: index3: the augmented Lagrangian's penalty factor alpha (None: :func:`default_penalty`
    #: of the step)
    penalty: float | None = None
    newton_iters: int = config.DEFAULT_NEWTON_ITERS
    newton_tol: float = config.DEFAULT_NEWTON_TOL
    threads: int | None = None
    #: dense, dca, hdca: project positions and velocities onto the loops at output instants
    #: (None: when there are loops, or gears)
    projection: bool | None = None
    #: dca: Baumgarte stabilisation (alpha, beta) of the loop closures; None = off
    baumgarte: tuple[float, float] | None = None
    #: index3: keep the tangent for this many Newton iterations (modified Newton)
    tangent_hold: int = 1
    #: index3: add the geometric-stiffness terms to the tangent
    geometric_stiffness: bool = False
    #: index3: exact mass-orthogonal projections (one more matrix pass per step); False:
    #: the paper's penalised projections on the last Newton matrices
    exact_projections: bool = True
    #: the branch and health monitor (engine/monitor.py): judge every output instant, retry
    #: with smaller steps, stop with exit 3 instead of a wrong answer; False only to time
    #: its cost (``linkwork bench``'s monitor table, :mod:`.studies.monitor_cost`)
    monitor: bool = True

    @property
    def index3_penalty_rule(self) -> tuple[float, float]:
        """``(alpha, alpha_dt)`` of :func:`penalty_at` for this run's steps: the automatic
        rule (:data:`AUTOMATIC_PENALTY`) where no penalty is named, else the named one at
        every step."""
        return AUTOMATIC_PENALTY if self.penalty is None else (float(self.penalty), 0.0)

    @property
    def index3_penalty(self) -> float:
        """The penalty factor index3 runs with: ``penalty``, or where that is None, the
        step's :func:`default_penalty`."""
        return default_penalty(self.dt) if self.penalty is None else float(self.penalty)

    def replace(self, **changes) -> "Settings":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def default_penalty(dt: float) -> float:
    """index3's penalty factor where a run names none: ``config.DEFAULT_PENALTY`` (paper
    000's 1e9) at steps of ``config.DEFAULT_DT`` or longer, and at shorter steps the
    penalty that keeps its effective penalty ``alpha dt^2 / 4`` (docs/index3.md, "Choosing
    alpha"): ``DEFAULT_PENALTY (DEFAULT_DT / dt)^2``.  A fixed alpha weakens with dt^2 and
    its Newton iterations then stop with the constraints unconverged along the loops'
    weakest directions (mechanism(859, 8, 2) of the differential tests, a loop passing
    within 2.3e-4 of a singular configuration: 2.6e-6, 1.1e-6, 4.6e-7 m off the converged
    motion after 1 s at dt = 1e-4, 5e-5, 2.5e-5 with 1e9; 1.6e-6, 3.0e-7, 6.7e-8 m with
    this penalty).  The same rule holds at the sub-steps the monitor refines a step into
    (:func:`penalty_at`)."""
    dt = float(dt)
    if not dt > 0.0:  # (a step resolve_settings refuses; the solver panel shows its penalty still)
        return config.DEFAULT_PENALTY
    return penalty_at(*AUTOMATIC_PENALTY, dt)


def penalty_at(alpha: float, alpha_dt: float, dt: float) -> float:
    """The penalty of a step ``dt``: ``alpha``, and at steps below ``alpha_dt`` the penalty
    with the same effective penalty ``alpha dt^2 / 4`` as ``alpha`` at ``alpha_dt``:
    ``alpha (alpha_dt / dt)^2``.  ``alpha_dt = 0``: ``alpha`` at every step (a penalty the
    run names).  index3's Newton kernel compiles this function as it is, so the penalty
    of a step is the same number in Python and in compiled code."""
    if alpha_dt > dt:
        r = alpha_dt / dt
        return alpha * (r * r)
    return alpha
