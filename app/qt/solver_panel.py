"""Solver panel: formulation, integrator, step, tolerances, formulation parameters, threads,
and the run controls with progress.

Formulations come from the engine's registry; one that cannot run the
current mechanism is listed disabled with the engine's reason as tooltip.
Only the settings the chosen formulation reads (its ``parameters``) are
shown, so a new formulation needs no change here.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFormLayout, QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QScrollArea, QSizePolicy, QSpinBox, QToolButton, QVBoxLayout, QWidget,
)

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session.solver import (
    FIELD_LABELS, INTEGRATOR_TITLES, automatic_threads, cpu_count, is_adaptive, parameter_info,
)

from .widgets import NumberEdit, fmt_number


def _fmt_duration(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600}:{(s % 3600) // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


class SolverPanel(QWidget):
    def __init__(self, session: Session, actions: dict, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("SolverPanel")
        self.session = session
        self.solver = session.solver
        self._subs = Subscriptions()
        self._param_widgets: dict[str, QWidget] = {}

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        body = QWidget()
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        lay = QVBoxLayout(body)
        lay.setContentsMargins(6, 4, 6, 2)
        lay.setSpacing(4)

        form = self.form = QFormLayout()
        form.setLabelAlignment(Qt.AlignRight | Qt.AlignVCenter)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.setHorizontalSpacing(8)
        form.setVerticalSpacing(4)
        self.formulation = QComboBox()
        self.formulation.setObjectName("formulationCombo")
        self.formulation.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.formulation.setMinimumContentsLength(10)
        self.formulation.activated.connect(self._formulation_picked)
        form.addRow(FIELD_LABELS["formulation"], self.formulation)
        self.integrator = QComboBox()
        self.integrator.setObjectName("integratorCombo")
        self.integrator.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.integrator.setMinimumContentsLength(10)
        self.integrator.activated.connect(
            lambda i: self.solver.update(integrator=self.integrator.itemData(i)))
        form.addRow(FIELD_LABELS["integrator"], self.integrator)
        self.dt = NumberEdit(self.solver.settings.dt)
        self.dt.setObjectName("dtEdit")
        self.dt.setToolTip("Fixed step (RK4, trapezoidal) or output interval of adaptive integrators [s]")
        self.dt.valueEdited.connect(lambda v: self.solver.update(dt=v))
        form.addRow(f"{FIELD_LABELS['dt']} [s]", self.dt)
        self.t_end = NumberEdit(self.solver.settings.t_end)
        self.t_end.setObjectName("tEndEdit")
        self.t_end.setToolTip("Simulated time [s]")
        self.t_end.valueEdited.connect(lambda v: self.solver.update(t_end=v))
        form.addRow(f"{FIELD_LABELS['t_end']} [s]", self.t_end)
        self.rtol = NumberEdit(self.solver.settings.rtol)
        self.rtol.setMinimumWidth(48)
        self.rtol.setToolTip(f"{FIELD_LABELS['rtol']} of the adaptive integrator")
        self.rtol.valueEdited.connect(lambda v: self.solver.update(rtol=v))
        self.atol = NumberEdit(self.solver.settings.atol)
        self.atol.setMinimumWidth(48)
        self.atol.setToolTip(f"{FIELD_LABELS['atol']} of the adaptive integrator")
        self.atol.valueEdited.connect(lambda v: self.solver.update(atol=v))
        tol = QWidget()
        tl = QHBoxLayout(tol)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(3)
        tl.addWidget(QLabel("rel"))
        tl.addWidget(self.rtol)
        tl.addWidget(QLabel("abs"))
        tl.addWidget(self.atol)
        self.tol_row = tol
        form.addRow("Tolerances", tol)
        self.threads = QSpinBox()
        self.threads.setObjectName("threadsSpin")
        self.threads.setRange(0, max(64, cpu_count()))
        self.threads.setSpecialValueText(f"automatic ({automatic_threads()} of {cpu_count()})")
        self.threads.setToolTip("Threads the engine's parallel kernels use.  Automatic leaves one core "
                                "free for the live plots and the 3-D view; set a number to override.")
        self.threads.valueChanged.connect(lambda v: self.solver.update(threads=None if v == 0 else int(v)))
        form.addRow(FIELD_LABELS["threads"], self.threads)
        #: the chosen formulation's own settings follow as rows of the same form (a group box
        #: of their own cost a title's and a frame's height the panel does not have at 800 px)
        self._common_rows = form.rowCount()
        lay.addLayout(form)

        self.summary = QLabel()
        self.summary.setObjectName("formulationSummary")
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("color: #555; font-size: 9pt;")
        lay.addWidget(self.summary)
        self.estimate = QLabel()
        self.estimate.setObjectName("outputEstimate")
        self.estimate.setWordWrap(True)
        self.estimate.setStyleSheet("color: #555; font-size: 9pt;")
        self.estimate.setToolTip("Rows and file size the next run writes to the run history")
        lay.addWidget(self.estimate)
        reset = QPushButton("Defaults for this mechanism")
        reset.setObjectName("resetSettings")
        reset.setToolTip("Formulation, integrator, step and end time chosen for the current mechanism")
        reset.clicked.connect(self._reset)
        lay.addWidget(reset, 0, Qt.AlignLeft)
        lay.addStretch(1)

        # ------------------------------------------------------------ run controls
        runbox = QFrame()
        runbox.setObjectName("RunBox")
        runbox.setFrameShape(QFrame.StyledPanel)
        rl = QVBoxLayout(runbox)
        rl.setContentsMargins(6, 6, 6, 6)
        rl.setSpacing(4)
        btns = QHBoxLayout()
        btns.setSpacing(4)
        self.buttons = {}
        for key in ("run", "pause", "stop"):
            b = QToolButton()
            b.setDefaultAction(actions[key])
            b.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
            b.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
            btns.addWidget(b)
            self.buttons[key] = b
        rl.addLayout(btns)
        # why Run is greyed out: right under the button, outside the scrolled settings
        self.refusal = QLabel()
        self.refusal.setObjectName("settingsRefusal")
        self.refusal.setWordWrap(True)
        self.refusal.setTextFormat(Qt.PlainText)
        self.refusal.setStyleSheet("color: #9b1c1c; background: #fde8e7; border: 1px solid #f1a9a4;"
                                   " border-radius: 3px; padding: 2px 4px;")
        self.refusal.hide()
        rl.addWidget(self.refusal)
        self.progress = QProgressBar()
        self.progress.setObjectName("runProgress")
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.progress.setTextVisible(True)
        rl.addWidget(self.progress)
        self.stats = QLabel("")
        self.stats.setObjectName("runStats")
        self.stats.setStyleSheet("font-size: 9pt; color: #333;")
        self.stats.setWordWrap(True)
        self.stats.hide()  # shown with a run's figures
        rl.addWidget(self.stats)
        self.compile_notice = QLabel("Compiling numerical kernels (first run of a formulation after an "
                                     "install or update only)…")
        self.compile_notice.setObjectName("compileNotice")
        self.compile_notice.setWordWrap(True)
        self.compile_notice.setStyleSheet("background: #fff5e0; color: #7a5200; border: 1px solid #f0c36d;"
                                          " border-radius: 3px; padding: 3px;")
        self.compile_notice.hide()
        rl.addWidget(self.compile_notice)
        outer.addWidget(runbox)

        self._subs.connect(self.solver.changed, lambda s: self.sync())
        self.sync()

    def close_panel(self) -> None:
        self._subs.disconnect_all()

    # ----------------------------------------------------------------- syncing
    def sync(self) -> None:
        """Show the model's settings (called on every change)."""
        s = self.solver.settings
        infos = self.solver.formulations()
        with QSignalBlocker(self.formulation):
            self.formulation.clear()
            model: QStandardItemModel = self.formulation.model()
            for k, f in enumerate(infos):
                self.formulation.addItem(f.name, f.name)
                item = model.item(k)
                tip = f.summary or f.title
                if not f.ok:
                    item.setEnabled(False)
                    tip = f"Cannot simulate this mechanism: {f.reason}" + (f"\n\n{tip}" if tip else "")
                item.setToolTip(tip)
            i = self.formulation.findData(s.formulation)
            self.formulation.setCurrentIndex(i)
        info = self.solver.info()
        with QSignalBlocker(self.integrator):
            self.integrator.clear()
            if info is not None:
                for name in info.integrators:
                    self.integrator.addItem(INTEGRATOR_TITLES.get(name, name), name)
                self.integrator.setCurrentIndex(max(0, self.integrator.findData(s.integrator)))
        self.dt.setValue(s.dt)
        self.t_end.setValue(s.t_end)
        self.rtol.setValue(s.rtol)
        self.atol.setValue(s.atol)
        # tolerances are read by adaptive integrators only: like a formulation's own settings,
        # the row is shown when the chosen integrator reads it
        self.form.setRowVisible(self.tol_row, is_adaptive(s.integrator))
        with QSignalBlocker(self.threads):
            self.threads.setValue(0 if s.threads is None else int(s.threads))
        # the main form already has these; a formulation listing them needs no second editor
        common = {"formulation", "integrator", "dt", "t_end", "rtol", "atol", "threads"}
        self._build_params(tuple(p for p in info.parameters if p not in common) if info else ())
        self.summary.setText(info.summary if info else "")
        self.estimate.setText(self.solver.output_estimate())
        _, why = self.solver.resolved()
        if why and self.solver.model is not None:
            self.refusal.setText(why)
            self.refusal.show()
        else:
            self.refusal.hide()

    def _build_params(self, names) -> None:
        s = self.solver.settings
        current = tuple(self._param_widgets)
        if current != tuple(names):
            while self.form.rowCount() > self._common_rows:
                self.form.removeRow(self._common_rows)
            self._param_widgets.clear()
            for name in names:
                p = parameter_info(name)
                w = self._param_editor(p)
                w.setToolTip(f"{p.tooltip}\n(a setting of the {s.formulation} formulation)" if p.tooltip
                             else f"A setting of the {s.formulation} formulation")
                label = QLabel(p.label)
                label.setToolTip(w.toolTip())
                self.form.addRow(label, w)
                self._param_widgets[name] = w
        for name, w in self._param_widgets.items():
            v = getattr(s, name)
            info = parameter_info(name)
            kind = info.kind
            if kind == "bool":
                with QSignalBlocker(w):
                    w.setChecked(bool(v))
            elif kind == "tristate":
                with QSignalBlocker(w):
                    w.setCurrentIndex({None: 0, True: 1, False: 2}[v])
            elif kind == "pair":
                on, a, b = w._parts
                with QSignalBlocker(on):
                    on.setChecked(v is not None)
                a.setEnabled(v is not None)
                b.setEnabled(v is not None)
                if v is not None:
                    a.setValue(v[0])
                    b.setValue(v[1])
            elif kind == "auto":
                auto, edit = w._parts
                with QSignalBlocker(auto):
                    auto.setChecked(v is None)
                edit.setEnabled(v is not None)
                edit.setValue(getattr(s, info.automatic) if v is None else v)
            else:
                w.setValue(v)

    def _param_editor(self, p) -> QWidget:
        name = p.name
        if p.kind == "bool":
            w = QCheckBox()
            w.toggled.connect(lambda on: self.solver.update(**{name: bool(on)}))
            return w
        if p.kind == "tristate":
            w = QComboBox()
            w.addItems(["automatic", "on", "off"])
            w.activated.connect(lambda i: self.solver.update(**{name: (None, True, False)[i]}))
            return w
        if p.kind == "pair":
            w = QWidget()
            hl = QHBoxLayout(w)
            hl.setContentsMargins(0, 0, 0, 0)
            on = QCheckBox()
            a = NumberEdit(5.0)
            b = NumberEdit(5.0)
            for x in (on, a, b):
                hl.addWidget(x)

            def push(*_):
                self.solver.update(**{name: (a.value(), b.value()) if on.isChecked() else None})

            on.toggled.connect(push)
            a.valueEdited.connect(push)
            b.valueEdited.connect(push)
            w._parts = (on, a, b)
            return w
        if p.kind == "auto":  # an automatic value, shown while in use, or the user's own
            w = QWidget()
            hl = QHBoxLayout(w)
            hl.setContentsMargins(0, 0, 0, 0)
            auto = QCheckBox("automatic")
            edit = NumberEdit(getattr(self.solver.settings, p.automatic), minimum=p.minimum)
            hl.addWidget(auto)
            hl.addWidget(edit)
            auto.toggled.connect(lambda on: self.solver.update(**{name: None if on else edit.value()}))
            edit.valueEdited.connect(lambda v: self.solver.update(**{name: float(v)}))
            w._parts = (auto, edit)
            return w
        w = NumberEdit(getattr(self.solver.settings, name), integer=p.kind == "int", minimum=p.minimum)
        if p.kind == "int":
            w.valueEdited.connect(lambda v: self.solver.update(**{name: int(v)}))
        else:
            w.valueEdited.connect(lambda v: self.solver.update(**{name: float(v)}))
        return w

    def _formulation_picked(self, i: int) -> None:
        name = self.formulation.itemData(i)
        self.solver.update(formulation=name)

    def _reset(self) -> None:
        self.solver.set_model(self.solver.model, reset=True)

    # --------------------------------------------------------------- progress
    def show_progress(self, run) -> None:
        if run is None:
            self.progress.setValue(0)
            self.progress.setFormat("idle")
            self.stats.setText("")
            self.stats.hide()
            return
        self.progress.setValue(int(1000 * run.progress))
        t_end = run.settings.t_end
        status = {"pending": "starting", "compiling": "preparing"}.get(run.status, run.status)
        self.progress.setFormat(f"t = {run.t_last:.3g} / {t_end:g} s  ({status})")
        sps = run.steps_per_second()
        parts = []
        if run.active:
            parts.append(f"{sps:,.0f} steps/s" if sps else "")
            eta = run.eta()
            parts.append(f"ETA {_fmt_duration(eta)}" if eta is not None else "")
            parts.append(f"wall {_fmt_duration(run.wall_time)}")
        else:
            wall = run.stats.get("wall_time", run.wall_time)
            parts.append(f"{run.n_rows} rows in {wall:.3g} s")
            if sps:
                parts.append(f"{sps:,.0f} steps/s")
            ev = run.stats.get("rhs_evaluations")
            if ev:
                parts.append(f"{ev} evaluations")
        health = run.health(short=True)  # the monitor's worst figures: a bad run at a glance
        self.stats.setText(" · ".join(p for p in parts if p) + (f"<br>{health}" if health else ""))
        if run.status == "failed":
            self.stats.setText(f"<span style='color:#9b1c1c'>{run.error}</span><br>"
                               f"{run.n_rows} rows kept up to t = {fmt_number(round(run.t_last, 6))} s"
                               + (f"<br>{health}" if health else ""))
        self.stats.setVisible(bool(self.stats.text()))
