"""Solver settings of the session (no Qt).

The list of formulations is read from :data:`engine.formulations.REGISTRY`
every time, so a formulation the engine registers appears without any change
here; each says itself whether it can run the current mechanism
(``supports(model) -> (ok, reason)``) and which extra settings it reads
(``parameters``).  Settings are :class:`engine.simulation.Settings`; checking
them is :func:`engine.simulation.resolve_settings`'s job.
"""

from __future__ import annotations

import os
import re
import typing
from dataclasses import dataclass, fields

from linkwork.engine import formulations as _forms
from linkwork.engine.errors import SettingsError
from linkwork.engine.integrators import SCIPY_METHODS
from linkwork.engine.model import Model
from linkwork.engine.simulation import Settings, file_defaults, resolve_settings
from linkwork.engine.threads import plan as thread_plan

from .events import Event


@dataclass(frozen=True)
class FormulationInfo:
    name: str
    title: str
    summary: str
    kind: str
    integrators: tuple[str, ...]
    default_integrator: str
    parameters: tuple[str, ...]
    ok: bool
    reason: str


@dataclass(frozen=True)
class ParameterInfo:
    """How a formulation-specific :class:`Settings` field is shown and edited.

    ``kind``: "float", "int", "bool", "tristate" (None/True/False), "pair"
    (None or two floats), "auto" (None, shown as the value in use -- the Settings
    property named by ``automatic`` -- or a float).
    """

    name: str
    label: str
    kind: str
    tooltip: str = ""
    minimum: float | None = None
    automatic: str = ""


#: nice labels for the fields the engine has today; unknown fields get a generic editor
KNOWN_PARAMETERS = {
    "penalty": ParameterInfo("penalty", "Penalty α", "auto",
                             "Augmented-Lagrangian penalty factor of the index-3 formulation (automatic: "
                             "1e9 at steps of 0.01 s or longer, 1e9 (0.01 / dt)² below: the same α dt²/4 at every "
                             "step, with exact projections the monitor's sub-steps included)", 0.0,
                             "index3_penalty"),
    "newton_iters": ParameterInfo("newton_iters", "Newton iterations", "int",
                                  "Maximum Newton-Raphson iterations per step", 1),
    "newton_tol": ParameterInfo("newton_tol", "Newton tolerance", "float",
                                "Newton-Raphson tolerance on |Δq|", 0.0),
    "projection": ParameterInfo("projection", "Projection", "tristate",
                                "Project positions and velocities onto the constraints at every output "
                                "instant (automatic: on when the mechanism has loops)"),
    "baumgarte": ParameterInfo("baumgarte", "Baumgarte (α, β)", "pair",
                               "Baumgarte stabilisation of the loop closures; off when unset"),
    "tangent_hold": ParameterInfo("tangent_hold", "Tangent hold", "int",
                                  "Reuse the Newton tangent for this many iterations (modified Newton)", 1),
    "geometric_stiffness": ParameterInfo("geometric_stiffness", "Geometric stiffness", "bool",
                                         "Add the geometric-stiffness terms to the Newton tangent"),
    "exact_projections": ParameterInfo("exact_projections", "Exact projections", "bool",
                                       "Project velocities and accelerations exactly onto the constraints "
                                       "(one more tree pass per step); off: paper 000's penalised "
                                       "projections, which reuse the Newton matrices and leave a residual"),
}

#: the solver panel's names of the settings every formulation has (its row labels, and the
#: words a refusal uses instead of the command line's flags)
FIELD_LABELS = {
    "formulation": "Formulation",
    "integrator": "Integrator",
    "dt": "Step dt",
    "t_end": "End time",
    "rtol": "Relative tolerance",
    "atol": "Absolute tolerance",
    "threads": "Threads",
}

INTEGRATOR_TITLES = {
    "rk4": "RK4 (fixed step)",
    "rk45": "RK45 (Dormand–Prince, adaptive)",
    "rk23": "RK23 (Bogacki–Shampine, adaptive)",
    "dop853": "DOP853 (8th order, adaptive)",
    "lsoda": "LSODA (stiff/non-stiff switching)",
    "radau": "Radau IIA (implicit, stiff)",
    "bdf": "BDF (implicit, stiff)",
    "trapezoidal": "Trapezoidal rule (index-3)",
}


def parameter_info(name: str) -> ParameterInfo:
    """How to edit Settings field ``name`` (generic for fields this GUI does not know)."""
    if name in KNOWN_PARAMETERS:
        return KNOWN_PARAMETERS[name]
    fld = {f.name: f for f in fields(Settings)}.get(name)
    if fld is None:
        raise KeyError(f"Settings has no field {name!r}")
    hints = typing.get_type_hints(Settings)
    t = hints.get(name)
    default = fld.default
    label = name.replace("_", " ").capitalize()
    if t is bool or isinstance(default, bool):
        kind = "bool"
    elif t is int or (isinstance(default, int) and not isinstance(default, bool)):
        kind = "int"
    elif t == typing.Optional[bool]:
        kind = "tristate"
    elif "tuple" in str(t):
        kind = "pair"
    else:
        kind = "float"
    return ParameterInfo(name, label, kind)


def field_label(name: str) -> str:
    """The panel's name of Settings field ``name`` ("t_end" -> "End time")."""
    if name in FIELD_LABELS:
        return FIELD_LABELS[name]
    try:
        return parameter_info(name).label
    except KeyError:
        return name.replace("_", " ")


_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")
_STEP_OVER_END = re.compile(r"^--dt \(([^)]*)\) must not exceed --t-end \(([^)]*)\)$")
_TOO_MANY_ROWS = re.compile(r"^--t-end / --dt exceeds ([0-9.e+]+) output rows$")
_FIELD_FIRST = re.compile(r"^([a-z][a-z0-9_]*) (must .*)$")


def panel_wording(reason: str) -> str:
    """An engine refusal of the settings in the solver panel's words.

    :func:`engine.simulation.resolve_settings` speaks the command line's language
    ("--dt (5) must not exceed --t-end (1)"); the panel has no flags, so the flags
    become the names of its rows, and the common cases say what to change.
    """
    m = _STEP_OVER_END.match(reason)
    if m:
        return f"{FIELD_LABELS['dt']} ({m.group(1)} s) is longer than the end time ({m.group(2)} s)."
    m = _TOO_MANY_ROWS.match(reason)
    if m:
        return (f"{FIELD_LABELS['t_end']} / {FIELD_LABELS['dt'].lower()} gives more than {m.group(1)} output "
                "rows: lengthen the step or shorten the end time.")
    m = _FIELD_FIRST.match(reason)
    if m and m.group(1) in {f.name for f in fields(Settings)}:
        reason = f"{field_label(m.group(1))} {m.group(2)}"
    text = _FLAG.sub(lambda f: field_label(f.group(1).replace("-", "_")), reason)
    return text[:1].upper() + text[1:]


def human_bytes(n: float) -> str:
    """``1.3 GB``, ``840 kB``, ``512 B`` (decimal units, as file managers show sizes)."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 999.5:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000.0
    return f"{n:,.3g} TB" if n < 999.5 else f"{n:,.0f} TB"


def is_adaptive(integrator: str | None) -> bool:
    return integrator in SCIPY_METHODS


def available_formulations(model: Model | None) -> list[FormulationInfo]:
    """Every registered formulation, with whether it can run ``model`` and why not."""
    out = []
    for name, cls in _forms.REGISTRY.items():
        if model is None:
            ok, reason = False, "no valid mechanism"
        else:
            try:
                ok, reason = cls.supports(model)
            except Exception as exc:  # a formulation's own check failing is a reason too
                ok, reason = False, f"support check failed: {exc}"
        out.append(FormulationInfo(
            name=name, title=getattr(cls, "title", "") or name, summary=getattr(cls, "summary", ""),
            kind=getattr(cls, "kind", "ode"), integrators=tuple(cls.integrators),
            default_integrator=cls.default_integrator,
            parameters=tuple(cls.parameters_for(model) if model is not None else getattr(cls, "parameters", ())),
            ok=bool(ok), reason=str(reason)))
    return out


def default_t_end(model: Model | None) -> float:
    """10 s as on the command line, shorter for large mechanisms (a first look, not a study)."""
    if model is None:
        return 10.0
    if model.nb > 64:
        return 1.0
    if model.nb > 16:
        return 5.0
    return 10.0


def automatic_threads() -> int:
    """The engine's thread count when the user leaves it automatic: every core but one,
    which stays free for the live plots and the 3-D view (fewer where the engine's
    automatic choice is fewer: :meth:`SolverModel.resolved`).  On 2 cores, a parallel pass
    sharing both with the display waits at every fork/join: the 128-link run took
    1.72 s with 2 threads against 0.80 s with 1 (headless: 0.69 s and 0.81 s;
    tests/app/qt/test_responsiveness.py)."""
    return max(1, cpu_count() - 1)


def cpu_count() -> int:
    return max(1, os.cpu_count() or 1)


class SolverModel:
    """The solver settings being edited; ``changed(settings)`` on every real change."""

    def __init__(self):
        self.changed = Event("solver_changed")
        self._settings = Settings(formulation=None)
        self._model: Model | None = None

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def model(self) -> Model | None:
        return self._model

    def formulations(self) -> list[FormulationInfo]:
        return available_formulations(self._model)

    def info(self, name: str | None = None) -> FormulationInfo | None:
        name = name or self._settings.formulation
        for f in self.formulations():
            if f.name == name:
                return f
        return None

    def update(self, **changes) -> bool:
        """Change settings; picking a formulation also picks a valid integrator."""
        new = self._settings.replace(**changes)
        if "formulation" in changes and new.formulation is not None:
            cls = _forms.REGISTRY.get(new.formulation)
            if cls is not None and new.integrator not in cls.integrators:
                new = new.replace(integrator=cls.default_integrator)
        if new == self._settings:
            return False
        self._settings = new
        self.changed.emit(new)
        return True

    def set_model(self, model: Model | None, reset: bool = False) -> None:
        """The mechanism changed; ``reset`` picks the defaults for it (new file)."""
        self._model = model
        s = self._settings
        if model is not None:
            name = s.formulation
            infos = {f.name: f for f in self.formulations()}
            if reset or name not in infos or not infos[name].ok:
                name = _forms.default_formulation(model)
                if name not in infos or not infos[name].ok:
                    name = next((f.name for f in infos.values() if f.ok), name)
            cls = _forms.REGISTRY.get(name)
            integ = s.integrator
            if reset or cls is None or integ not in cls.integrators:
                integ = cls.default_integrator if cls is not None else None
            if reset:  # the file's own run settings where it has them (engine.simulation.file_defaults)
                rec = file_defaults(model, name)
                integ = rec.integrator or integ
                t_end = dict(model.spec.settings).get("t_end", default_t_end(model))
                s = s.replace(t_end=t_end, dt=rec.dt, rtol=rec.rtol, atol=rec.atol)
            s = s.replace(formulation=name, integrator=integ)
        if s != self._settings:
            self._settings = s
        # formulation availability depends on the model: always tell the views
        self.changed.emit(self._settings)

    def output_estimate(self) -> str:
        """What a run with these settings will write, before it starts: its rows (one every
        ``dt`` from 0 to ``t_end``), its columns and the size of its file in the run history
        ('' without a valid mechanism)."""
        if self._model is None:
            return ""
        from linkwork.engine.results import columns as result_columns

        from .runstore import expected_rows, file_size

        s = self._settings
        cols = result_columns(self._model)
        n = expected_rows(s.t_end, s.dt)
        return f"Output: {n:,} rows × {len(cols):,} columns, {human_bytes(file_size(n, cols))} on disk"

    def resolved(self) -> tuple[Settings | None, str]:
        """(resolved settings, "") or (None, the engine's reason they cannot be used, in the
        panel's words: :func:`panel_wording`)."""
        if self._model is None:
            return None, "the mechanism is not valid"
        try:
            s = resolve_settings(self._model, self._settings)
        except SettingsError as exc:
            return None, panel_wording(str(exc))
        if s.threads is None:  # the engine's own plan, with a core kept for the window
            s = s.replace(threads=thread_plan(self._model, _forms.REGISTRY[s.formulation], None,
                                              limit=automatic_threads()).threads)
        return s, ""
