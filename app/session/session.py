"""The whole Qt-free session: document, sketch, solver, runs, playback, notifications."""

from __future__ import annotations

from linkwork.engine.results import columns as result_columns
from linkwork.engine.simulation import Settings

from .document import MechanismDocument
from .notifications import Notifications
from .playback import Playback
from .plotdata import PlotOptions
from .runs import RunHistory, RunRecord
from .sketch import SketchModel
from .solver import SolverModel, panel_wording
from .validation import Validation


class RunRefused(Exception):
    """A run cannot start; the message says why (the engine's text where it has one)."""


class Session:
    def __init__(self):
        self.notifications = Notifications()
        self.document = MechanismDocument()
        self.sketch = SketchModel(self.document)
        self.solver = SolverModel()
        self.history = RunHistory()
        self.playback = Playback()
        self.plot_options = PlotOptions()
        self.document.validation_changed.connect(self._on_validation)
        self.document.replaced.connect(self._on_replaced)
        self._on_replaced()

    # ------------------------------------------------------------------ wiring
    def _on_validation(self, v: Validation) -> None:
        self.solver.set_model(v.model if v.ok else None)

    def _on_replaced(self) -> None:
        """Another mechanism: its own defaults, and the runs of the previous one go."""
        v = self.document.validation
        self.solver.set_model(v.model if v.ok else None, reset=True)
        self.history.clear()
        self.playback.set_playing(False)
        self.playback.set_time(0.0)

    @property
    def running(self) -> RunRecord | None:
        return next((r for r in self.history.runs if r.active), None)

    # -------------------------------------------------------------------- runs
    def prepare_run(self, overrides: dict | None = None, compare: bool = False,
                    label: str = "") -> RunRecord:
        """Check that a run can start and add its record (status "pending").

        ``overrides`` change settings for this run only (a comparison run);
        raises :class:`RunRefused` with the reason otherwise.
        """
        if self.running is not None:
            raise RunRefused("a simulation is already running; stop it first")
        v = self.document.validation
        if self.document.is_empty:
            raise RunRefused("the mechanism is empty: draw one, open a file or use a generator")
        if not v.ok:
            raise RunRefused(f"the mechanism is refused: {v.message}")
        from linkwork.engine.errors import SettingsError
        from linkwork.engine.simulation import resolve_settings

        settings: Settings = self.solver.settings
        if overrides:
            settings = settings.replace(**overrides)
            if "formulation" in overrides and "integrator" not in overrides:
                from linkwork.engine.formulations import REGISTRY

                cls = REGISTRY.get(overrides["formulation"])
                if cls is not None and settings.integrator not in cls.integrators:
                    settings = settings.replace(integrator=cls.default_integrator)
        try:
            resolved = resolve_settings(v.model, settings)
        except SettingsError as exc:
            raise RunRefused(panel_wording(str(exc))) from None
        run = RunRecord(self.document.spec, v.model, resolved, result_columns(v.model), label=label)
        self.history.add(run, keep_previous=compare)
        self.playback.set_playing(False)
        self.playback.set_live(True)
        self.playback.set_time(0.0)
        return run
