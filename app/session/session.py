"""The whole Qt-free session: document, sketch, solver, runs, playback, notifications."""

from __future__ import annotations

from linkwork.engine.mechfile import MechanismSpec
from linkwork.engine.results import columns as result_columns
from linkwork.engine.simulation import Settings

from .document import MechanismDocument
from .notifications import Notifications
from .playback import Playback
from .plotdata import PlotOptions
from .runs import RunHistory, RunRecord, run_of
from .runstore import CAP_CHECK_BYTES, RunFileError, RunStore, remove_folder, row_bytes, scratch_store
from .sketch import SketchModel
from .solver import SolverModel, panel_wording
from .validation import Validation


class RunRefused(Exception):
    """A run cannot start; the message says why (the engine's text where it has one)."""


class Session:
    """``run_store``: the folder runs stream to and are listed from at start (the
    application's run history); without one, runs go to a temporary folder that goes
    with the process."""

    def __init__(self, run_store: RunStore | None = None):
        self.notifications = Notifications()
        self.run_store = run_store or scratch_store()
        self.document = MechanismDocument()
        self.sketch = SketchModel(self.document)
        self.solver = SolverModel()
        self.history = RunHistory()
        self.playback = Playback()
        self.plot_options = PlotOptions()
        self._capped_rows = 0  # the growing run's rows when the history cap was last checked
        self.document.validation_changed.connect(self._on_validation)
        self.document.replaced.connect(self._on_replaced)
        self._on_replaced()
        if run_store is not None:
            self.restore_runs()

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
        if v.ok and not self.document.is_empty and not self.run_store.temporary:
            self.restore_runs(of=self.document.spec)

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
        run = RunRecord(self.document.spec, v.model, resolved, result_columns(v.model), label=label,
                        store=self.run_store)
        self.history.add(run, keep_previous=compare)
        self._forget(self.run_store.enforce_cap(keep=[run.path]))
        self._capped_rows = 0
        run.appended.connect(lambda _k, run=run: self._cap_growing(run))
        self.playback.set_playing(False)
        self.playback.set_live(True)
        self.playback.set_time(0.0)
        return run

    # ------------------------------------------------------------- run history
    def restore_runs(self, of: MechanismSpec | None = None) -> list[RunRecord]:
        """List the runs kept in the run store (oldest first; the newest becomes current),
        with ``of`` only those of that mechanism.  A run whose process was killed comes back
        up to its last complete chunk, marked ``incomplete``; a folder that cannot be read
        is reported and skipped."""
        self._forget(self.run_store.enforce_cap())
        restored = []
        for folder in self.run_store.folders():
            if any(r.path == folder for r in self.history.runs) or self.run_store.in_use(folder):
                continue
            if of is not None and not run_of(folder, of):
                continue
            try:
                run = RunRecord.reopen(folder, self.run_store)
            except (RunFileError, OSError) as exc:
                self.notifications.warning(f"a kept run cannot be read: {exc}")
                continue
            self.history.add(run)
            restored.append(run)
        return restored

    def remove_run(self, run: RunRecord) -> None:
        """Take a finished run off the list and its folder off the disk (kept, it would
        be listed again when its mechanism is next opened)."""
        self.history.remove(run)
        if not self.run_store.temporary:
            remove_folder(run.path)

    def clear_run_history(self) -> int:
        """Remove every run that is not running from the list and from the disk; returns
        how many run folders were removed."""
        keep = [r.path for r in self.history.runs if r.active]
        for r in [r for r in self.history.runs if not r.active]:
            self.history.remove(r)
        return len(self.run_store.clear(keep=keep))

    def _cap_growing(self, run: RunRecord) -> None:
        """Keep the history under its cap while ``run`` grows: every ``CAP_CHECK_BYTES``
        written, the oldest other runs go as they would when a run starts."""
        if (run.n_rows - self._capped_rows) * row_bytes(len(run.columns)) >= CAP_CHECK_BYTES:
            self._capped_rows = run.n_rows
            self._forget(self.run_store.enforce_cap(keep=[run.path]))

    def _forget(self, folders) -> None:
        """Runs whose folders the size cap removed leave the list."""
        gone = set(folders)
        for r in [r for r in self.history.runs if r.path in gone and not r.active]:
            self.history.remove(r)
