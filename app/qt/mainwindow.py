"""The main window: docks around a 3-D view / sketch, menus, shortcuts, state persistence."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QApplication, QDockWidget, QFileDialog, QLabel, QMainWindow, QMenu, QMessageBox, QProgressDialog,
    QStyle, QTabWidget, QVBoxLayout, QWidget,
)

from linkwork.engine import __version__
from linkwork.engine.errors import MechanismError
from linkwork.engine.paths import examples_dir

from linkwork.app.session import Session, Subscriptions, video
from linkwork.app.session.generators import GENERATORS
from linkwork.app.session.plotdata import PLOT_TITLES, PLOTS
from linkwork.app.session.runstore import RunStore
from linkwork.app.session.solver import INTEGRATOR_TITLES

from . import exporting
from .editor import EditorPanel, SummaryLabel
from .generators import GeneratorDialog
from .help import MarkdownDialog, about_text, docs_dir, formulation_guide
from .interop_dialogs import export_mjcf_dialog, import_dialog
from .messages import MessagesPanel
from .modes import ModesPanel
from .plots import PlotPanel
from .recovery import AutosaveTimer, default_runs_folder
from .runner import RunController
from .runs_panel import RunsPanel
from .sketch import SketchPanel
from .solver_panel import SolverPanel
from .style import app_icon
from .undo import install_undo_stack
from .view3d import ViewPanel
from .widgets import MessageBar

MAX_RECENT = 8
MECH_FILTER = "Mechanisms (*.mech.json *.json);;All files (*)"
#: bump when the dock layout changes so an old saved state is not restored
STATE_VERSION = 4


def app_settings() -> QSettings:
    """Where the window state, recent files and preferences live (see docs/user-guide.md)."""
    return QSettings()


class MainWindow(QMainWindow):
    def __init__(self, session: Session | None = None, settings: QSettings | None = None,
                 enable_gl: bool | None = None):
        super().__init__()
        from linkwork.app.threads import limit_blas_threads

        limit_blas_threads(1)
        self.setObjectName("LinkworkMainWindow")
        #: a window of its own keeps its runs on disk, listed again at the next start
        self.session = session or Session(run_store=RunStore(default_runs_folder()))
        self.settings = settings if settings is not None else app_settings()
        self._subs = Subscriptions()
        doc = self.session.document
        self.undo_stack = QUndoStack(self)
        install_undo_stack(doc, self.undo_stack)
        self.runner = RunController(self.session, self)
        #: writes the unsaved document to a recovery file (docs/user-guide.md, "Autosave and recovery")
        self.autosave = AutosaveTimer(self.session, self)
        self._dialogs: list = []
        self._closed = False
        self._gif = exporting.gif_available()
        self._mp4 = video.video_available()

        self._make_actions()
        # ---------------------------------------------------------------- central
        central = QWidget()
        cl = QVBoxLayout(central)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(2)
        self.message_bar = MessageBar()
        self.message_bar.setObjectName("windowMessage")
        cl.addWidget(self.message_bar)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("centralTabs")
        self.tabs.setDocumentMode(True)
        self.view_panel = ViewPanel(self.session, enable_gl=enable_gl)
        self.sketch_panel = SketchPanel(self.session)
        self.tabs.addTab(self.view_panel, "3D view")
        self.tabs.addTab(self.sketch_panel, "Sketch")
        cl.addWidget(self.tabs, 1)
        self.setCentralWidget(central)

        # ------------------------------------------------------------------ docks
        self.setDockNestingEnabled(True)
        self.setCorner(Qt.BottomRightCorner, Qt.BottomDockWidgetArea)
        self.editor = EditorPanel(self.session)
        self.solver_panel = SolverPanel(self.session, self.actions)
        self.plots = PlotPanel(self.session)
        self.runs_panel = RunsPanel(self.session, self.compare_menu)
        self.messages = MessagesPanel(self.session)
        self.modes_panel = ModesPanel(self.session)
        self.docks = {}
        for key, title, widget, area in (
                ("mechanism", "Mechanism", self.editor, Qt.LeftDockWidgetArea),
                ("solver", "Solver", self.solver_panel, Qt.RightDockWidgetArea),
                ("runs", "Runs", self.runs_panel, Qt.RightDockWidgetArea),
                ("plots", "Plots", self.plots, Qt.BottomDockWidgetArea),
                ("messages", "Messages", self.messages, Qt.BottomDockWidgetArea),
                ("modes", "Modes", self.modes_panel, Qt.RightDockWidgetArea)):
            d = QDockWidget(title, self)
            d.setObjectName(f"dock_{key}")
            d.setWidget(widget)
            d.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable
                          | QDockWidget.DockWidgetClosable)
            self.addDockWidget(area, d)
            self.docks[key] = d
        self.splitDockWidget(self.docks["solver"], self.docks["runs"], Qt.Vertical)
        self.tabifyDockWidget(self.docks["plots"], self.docks["messages"])
        self.docks["plots"].raise_()
        self.tabifyDockWidget(self.docks["runs"], self.docks["modes"])
        self.docks["modes"].hide()  # Analysis > Equilibrium or Modes shows it
        self.modes_panel.poses.connect(self._show_mode_poses)
        self._default_state = None
        self._make_menus()

        # -------------------------------------------------------------- status bar
        self.status_summary = SummaryLabel(self.session, compact=True)
        self.statusBar().addPermanentWidget(self.status_summary)
        self.run_status = QLabel("")
        self.run_status.setObjectName("runStatus")
        self.statusBar().addWidget(self.run_status, 1)

        # ----------------------------------------------------------------- wiring
        s = self.session
        self._subs.connect(s.notifications.posted, self._notified)
        self._subs.connect(doc.path_changed, lambda p: self._update_title())
        self._subs.connect(doc.dirty_changed, lambda d: self._update_title())
        self._subs.connect(doc.state_changed, lambda st: self._update_title())
        self._subs.connect(doc.validation_changed, lambda v: self._update_actions())
        self._subs.connect(doc.replaced, self._on_replaced)
        self._subs.connect(s.solver.changed, lambda st: self._update_actions())
        self._subs.connect(s.history.current_changed, self._current_run_changed)
        self.runner.run_started.connect(self._run_started)
        self.runner.run_state.connect(self._run_state)
        # one frame clock while running: plots, playback time (3-D view, slider, cursors) and
        # progress all change in the same event-loop pass, so the window is composed once
        self.plots.after_refresh.connect(self._live_tick)
        self.runner.run_finished.connect(self._run_finished)
        self.runner.compiling.connect(self._compiling)
        self.runner.compile_progress.connect(self._compile_progress)
        self.undo_stack.canUndoChanged.connect(lambda _: self._update_actions())
        self.undo_stack.canRedoChanged.connect(lambda _: self._update_actions())
        self._last_progress = 0.0

        self.resize(1280, 800)
        self.resizeDocks([self.docks["mechanism"], self.docks["solver"]], [330, 300], Qt.Horizontal)
        self.resizeDocks([self.docks["plots"]], [230], Qt.Vertical)
        self.resizeDocks([self.docks["solver"], self.docks["runs"]], [420, 90], Qt.Vertical)
        self._default_state = self.saveState(STATE_VERSION)
        self._restore_state()
        self._update_title()
        self._update_actions()
        self._rebuild_recent()

    def clear_run_history(self) -> None:
        n = self.session.clear_run_history()
        self.statusBar().showMessage(f"Run history cleared ({n} run{'s' if n != 1 else ''} removed from disk)",
                                     5000)

    # =============================================================== actions
    def _act(self, key: str, text: str, slot=None, shortcut=None, tip: str = "", checkable=False) -> QAction:
        a = QAction(text, self)
        a.setObjectName(f"action_{key}")
        if shortcut:
            a.setShortcut(QKeySequence(shortcut))
        if tip:
            a.setToolTip(tip)
            a.setStatusTip(tip)
        a.setCheckable(checkable)
        if slot is not None:
            a.triggered.connect(lambda _=False: slot())
        self.actions[key] = a
        return a

    def _make_actions(self) -> None:
        self.actions: dict[str, QAction] = {}
        A = self._act
        A("new", "&New", self.new_mechanism, QKeySequence.New, "Start an empty mechanism")
        A("generate", "New from &generator…", lambda: self.generate(), "Ctrl+Shift+N",
          "Chains, loops, ladders, four-bars, five-bars and the papers' test cases")
        A("open", "&Open…", self.open_dialog, QKeySequence.Open, "Open a mechanism file")
        A("save", "&Save", self.save, QKeySequence.Save, "Save the mechanism")
        A("import_model", "&Import MJCF or URDF…", lambda: import_dialog(self), None,
          "Read a MuJoCo (MJCF) or URDF model through MuJoCo's compiler as a new, unsaved mechanism "
          "(docs/import.md; needs MuJoCo)")
        A("mjcf_export", "Mechanism as &MJCF…", lambda: export_mjcf_dialog(self), None,
          "Write the open mechanism as a MuJoCo model: nested bodies, loops as equalities (docs/import.md)")
        A("save_as", "Save &as…", self.save_as, QKeySequence.SaveAs, "Save under a new name")
        A("quit", "&Quit", self.close, QKeySequence.Quit)
        undo = self.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcut(QKeySequence.Undo)
        undo.setObjectName("action_undo")
        redo = self.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence.Redo, QKeySequence("Ctrl+Y")])
        redo.setObjectName("action_redo")
        self.actions["undo"], self.actions["redo"] = undo, redo
        A("delete", "&Delete selection", self.session.sketch.delete_selection, None,
          "Delete the selected body, joint, force or pivot (Del in the sketch and the list)")
        A("mech_props", "&Mechanism properties", self._select_mechanism, None, "Name, description, gravity")
        A("assemble", "&Assemble…", self.assemble_dialog, None,
          "Turn or slide one joint from the present pose; the loops follow on the present branch")
        A("run", "Run", self.run, "F5", "Run the simulation (F5)")
        A("pause", "Pause", self.toggle_pause, "F6", "Pause / resume the running simulation (F6)")
        A("stop", "Stop", self.runner.stop, "Shift+F5", "Stop the simulation; every row computed is kept")
        A("compare_current", "Compare with the solver panel's settings", lambda: self.compare({}), "Ctrl+F5",
          "Run again with the solver panel's settings and overlay it on the current run")
        A("sweep", "Parameter &sweep…", self.open_sweep, None,
          "Sweep one or two parameters of the open mechanism on this machine's cores and plot a quantity")
        A("play", "Play / pause animation", self.view_panel_toggle_play, "Ctrl+Space",
          "Play back the current run in the 3-D view")
        A("clear_runs", "Clear run &history", self.clear_run_history, None,
          "Remove every run that is not running from the list and its files from the disk")
        A("view_3d", "3D view", lambda: self.tabs.setCurrentIndex(0), "Ctrl+1")
        A("view_sketch", "Sketch", lambda: self.tabs.setCurrentIndex(1), "Ctrl+2")
        A("reset_camera", "Reset 3D camera", lambda: self.view_panel.reset_camera("iso"), "Ctrl+R")
        A("reset_layout", "Reset window layout", self.reset_layout)
        A("export_csv", "Results &CSV…", self.export_csv_dialog, "Ctrl+E",
          "The current run's results in the contract's CSV format (as `linkwork run --out`)")
        A("export_view", "3D view as &PNG…", self.export_view_dialog, None)
        A("export_gif", "&Animation as GIF…", self.export_gif_dialog, None)
        A("export_mp4", "Animation as &MP4…", self.export_mp4_dialog, None,
          "The current run as an H.264 video from the 3-D view, at the playback speed, 60 frames a second")
        A("guide", "&Formulation guide", self.show_guide, QKeySequence.HelpContents)
        A("user_guide", "&User guide", self.show_user_guide)
        A("about", "&About Linkwork", self.show_about)
        st = QApplication.style()
        self.actions["run"].setIcon(st.standardIcon(QStyle.SP_MediaPlay))
        self.actions["pause"].setIcon(st.standardIcon(QStyle.SP_MediaPause))
        self.actions["stop"].setIcon(st.standardIcon(QStyle.SP_MediaStop))
        self.compare_menu = QMenu("Compare &with", self)
        self.compare_menu.setObjectName("compareMenu")
        self.compare_menu.aboutToShow.connect(self._fill_compare_menu)
        for a in self.actions.values():
            self.addAction(a)

    def _make_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        f.addAction(self.actions["new"])
        self.gen_menu = f.addMenu("New from generator")
        self.gen_menu.setObjectName("generatorMenu")
        for key, gen in GENERATORS.items():
            a = QAction(f"{gen.title}…", self)
            a.setObjectName(f"action_gen_{key}")
            a.triggered.connect(lambda _=False, k=key: self.generate(k))
            self.gen_menu.addAction(a)
        f.addAction(self.actions["generate"])
        f.addAction(self.actions["open"])
        f.addAction(self.actions["import_model"])
        self.recent_menu = f.addMenu("Open &recent")
        self.recent_menu.setObjectName("recentMenu")
        self.examples_menu = f.addMenu("&Examples")
        self.examples_menu.setObjectName("examplesMenu")
        self._fill_examples()
        f.addSeparator()
        f.addAction(self.actions["save"])
        f.addAction(self.actions["save_as"])
        file_export = f.addMenu("&Export")
        file_export.setObjectName("fileExportMenu")
        file_export.addAction(self.actions["mjcf_export"])
        f.addSeparator()
        f.addAction(self.actions["quit"])
        e = mb.addMenu("&Edit")
        e.addAction(self.actions["undo"])
        e.addAction(self.actions["redo"])
        e.addSeparator()
        e.addAction(self.actions["delete"])
        e.addAction(self.actions["mech_props"])
        e.addSeparator()
        e.addAction(self.actions["assemble"])
        v = mb.addMenu("&View")
        v.addAction(self.actions["view_3d"])
        v.addAction(self.actions["view_sketch"])
        v.addAction(self.actions["reset_camera"])
        v.addSeparator()
        for d in self.docks.values():
            v.addAction(d.toggleViewAction())
        v.addSeparator()
        v.addAction(self.actions["reset_layout"])
        r = mb.addMenu("&Run")
        for k in ("run", "pause", "stop"):
            r.addAction(self.actions[k])
        r.addSeparator()
        r.addMenu(self.compare_menu)
        r.addAction(self.actions["compare_current"])
        r.addSeparator()
        r.addAction(self.actions["sweep"])
        r.addSeparator()
        r.addAction(self.actions["play"])
        r.addAction(self.actions["clear_runs"])
        an = mb.addMenu("&Analysis")
        an.setObjectName("analysisMenu")
        for key, text, tip in (("equilibrium", "&Equilibrium", "Where the mechanism comes to rest; stable or not"),
                               ("modes", "&Modes", "Natural frequencies and mode shapes about the rest")):
            a = QAction(text, self)
            a.setObjectName(f"action_{key}")
            a.setStatusTip(tip)
            a.triggered.connect(lambda _=False, k=key: self.analyse(k))
            an.addAction(a)
            self.actions[key] = a
        x = mb.addMenu("E&xport")
        x.setObjectName("exportMenu")
        x.addAction(self.actions["export_csv"])
        self.plot_export_menu = x.addMenu("&Plot")
        for kind in PLOTS + ("all",):
            title = "All three plots" if kind == "all" else PLOT_TITLES[kind]
            for fmt in ("PNG", "SVG"):
                a = QAction(f"{title} as {fmt}…", self)
                a.setObjectName(f"action_export_{kind}_{fmt.lower()}")
                a.triggered.connect(lambda _=False, k=kind, ft=fmt.lower(): self.export_plot_dialog(k, ft))
                self.plot_export_menu.addAction(a)
                self.actions[f"export_{kind}_{fmt.lower()}"] = a
        x.addAction(self.actions["export_view"])
        x.addAction(self.actions["export_gif"])
        x.addAction(self.actions["export_mp4"])
        x.addSeparator()
        x.addAction(self.actions["mjcf_export"])
        h = mb.addMenu("&Help")
        h.addAction(self.actions["guide"])
        h.addAction(self.actions["user_guide"])
        h.addAction(self.actions["about"])

    def assemble_dialog(self) -> bool:
        """Edit > Assemble: the dialog (the selected joint first), then :meth:`assemble`."""
        from PySide6.QtWidgets import QDialog

        from .assemble_dialog import AssembleDialog

        doc = self.session.document
        if not doc.validation.ok:
            self.message_bar.show_message("error", f"Assemble: the mechanism is refused ({doc.validation.message})")
            return False
        sel = doc.selection
        dlg = AssembleDialog(doc.spec, self, joint=sel.name if sel is not None and sel.kind == "joint" else None)
        if dlg.exec() != QDialog.Accepted:
            return False
        return self.assemble(dlg.joint.currentData(), dlg.value())

    def assemble(self, joint: str, value: float) -> bool:
        """Move the mechanism so that ``joint``'s coordinate changes by ``value`` (rad or m),
        the loops following (:func:`app.session.assembly.pose_by_joint`), as one undoable
        edit; how far the bodies moved goes to the status bar, a refusal (loops that cannot
        close there, with a four-bar's Grashof numbers) to the message bar."""
        from linkwork.engine.analysis.assemble import AssemblyError
        from linkwork.engine.errors import MechanismError

        from linkwork.app.session.assembly import pose_by_joint

        try:
            posed = pose_by_joint(self.session.document.spec, joint, value)
        except (AssemblyError, MechanismError, KeyError) as exc:
            self.message_bar.show_message("error", f"Assemble: {exc}")
            return False
        self.session.document.edit(f"Assemble ({joint})", posed.spec)
        self.statusBar().showMessage(posed.summary(), 10000)
        return True

    def analyse(self, what: str) -> bool:
        """Analysis > Equilibrium (``what`` "equilibrium") or > Modes: the Modes dock shown,
        the analysis started in its thread (docs/user-guide.md, "Static equilibrium and
        vibration modes"); whether it started (``modes_panel.wait()`` waits for the result)."""
        self.docks["modes"].show()
        self.docks["modes"].raise_()
        panel = self.modes_panel
        return panel.find_equilibrium() if what == "equilibrium" else panel.compute_modes()

    def _show_mode_poses(self, poses) -> None:
        if self.view_panel.scene is not None:
            self.view_panel.scene.show_poses(poses)

    def _fill_examples(self) -> None:
        from linkwork.engine.mechfile import load

        self.examples_menu.clear()
        d = examples_dir()
        files = sorted(d.glob("*.mech.json")) if d.is_dir() else []
        if not files:
            a = self.examples_menu.addAction(f"(no examples found in {d})")
            a.setEnabled(False)
            return
        for fpath in files:
            try:
                spec = load(fpath)
                title, tip = spec.name or fpath.stem, spec.description
            except MechanismError as exc:
                title, tip = fpath.stem, str(exc)
            a = QAction(title, self)
            a.setObjectName(f"action_example_{fpath.name.split('.')[0]}")
            a.setToolTip(tip)
            a.setStatusTip(f"{fpath.name}: {tip}")
            a.triggered.connect(lambda _=False, p=fpath: self.open_file(p))
            self.examples_menu.addAction(a)
        self.examples_menu.setToolTipsVisible(True)

    def _fill_compare_menu(self) -> None:
        m = self.compare_menu
        m.clear()
        cur = self.session.history.current
        base = cur.settings if cur is not None else self.session.solver.settings
        m.addSection("Formulation")
        for f in self.session.solver.formulations():
            same = f.name == base.formulation
            a = m.addAction(f"{f.name} — {f.title}" + (" (same)" if same else ""))
            a.setObjectName(f"compare_formulation_{f.name}")
            a.setEnabled(f.ok)
            a.setToolTip(f.summary if f.ok else f"Cannot simulate this mechanism: {f.reason}")
            a.triggered.connect(lambda _=False, n=f.name: self.compare({"formulation": n}, base))
        info = self.session.solver.info(base.formulation)
        if info is not None:
            m.addSection(f"Integrator ({info.name})")
            for name in info.integrators:
                if name == base.integrator:
                    continue
                a = m.addAction(INTEGRATOR_TITLES.get(name, name))
                a.setObjectName(f"compare_integrator_{name}")
                a.triggered.connect(lambda _=False, n=name: self.compare({"integrator": n}, base))
        m.addSection("Step")
        for factor, text in ((0.5, "half the step"), (2.0, "twice the step")):
            a = m.addAction(f"{text} (dt = {base.dt * factor:g} s)")
            a.triggered.connect(lambda _=False, fct=factor: self.compare({"dt": base.dt * fct}, base))
        if info is not None and "projection" in info.parameters:
            proj = base.projection
            a = m.addAction("projection off" if proj in (None, True) else "projection on")
            a.triggered.connect(lambda _=False, v=(proj is False): self.compare({"projection": v}, base))
        m.addSeparator()
        m.addAction(self.actions["compare_current"])
        m.setToolTipsVisible(True)

    # ============================================================== documents
    def confirm_discard(self) -> bool:
        """Ask before losing unsaved edits; True to go on."""
        doc = self.session.document
        if not doc.dirty or doc.is_empty and doc.path is None and not doc.pivots:
            return True
        r = QMessageBox.question(self, "Unsaved changes",
                                 f"“{doc.title}” has unsaved changes. Save them first?",
                                 QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel,
                                 QMessageBox.Save)
        if r == QMessageBox.Save:
            return self.save()
        return r == QMessageBox.Discard

    def new_mechanism(self) -> None:
        if self._busy_refusal() or not self.confirm_discard():
            return
        self.session.document.new()
        self.tabs.setCurrentIndex(1)
        self.session.sketch.set_tool("link")

    def generate(self, key: str = "chain") -> GeneratorDialog | None:
        """Open the generator dialog (modal); the created mechanism replaces the current one."""
        if self._busy_refusal():
            return None
        dlg = GeneratorDialog(self, key)
        self._dialogs.append(dlg)
        dlg.finished.connect(lambda r, d=dlg: self._generator_done(d, r))
        dlg.open()
        return dlg

    def _generator_done(self, dlg: GeneratorDialog, result: int) -> None:
        if dlg in self._dialogs:
            self._dialogs.remove(dlg)
        dlg.deleteLater()
        if result and dlg.spec is not None:
            if not self.confirm_discard():
                return
            self.session.document.replace(dlg.spec)
            self.session.notifications.info(f"Created {dlg.spec.name}.", source="generator")

    def open_dialog(self) -> None:
        if self._busy_refusal():
            return
        start = str(self.settings.value("paths/last_dir", str(examples_dir())))
        path, _ = QFileDialog.getOpenFileName(self, "Open mechanism", start, MECH_FILTER)
        if path:
            self.open_file(path)

    def open_file(self, path) -> bool:
        """Open ``path``; a refused file changes nothing and shows the engine's message."""
        if self._busy_refusal() or not self.confirm_discard():
            return False
        p = Path(path)
        try:
            self.session.document.open(p)
        except MechanismError as exc:
            self.session.notifications.error(f"Cannot open {p.name}: {exc}", source="file")
            return False
        self._add_recent(p)
        self.settings.setValue("paths/last_dir", str(p.resolve().parent))
        warnings = self.session.document.validation.warnings
        for w in warnings:
            self.session.notifications.warning(f"{p.name}: {w}", source="file")
        self.session.notifications.info(f"Opened {p.name}.", source="file")
        return True

    def save(self) -> bool:
        doc = self.session.document
        if doc.path is None:
            return self.save_as()
        return self._save_to(doc.path)

    def save_as(self) -> bool:
        doc = self.session.document
        start = str(doc.path) if doc.path else str(Path(self.settings.value("paths/last_dir", str(Path.home())))
                                                    / f"{(doc.spec.name or 'mechanism').replace(' ', '-')}.mech.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save mechanism", start, MECH_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += ".mech.json"
        return self._save_to(Path(path))

    def _save_to(self, path: Path) -> bool:
        try:
            p = self.session.document.save(path)
        except MechanismError as exc:
            self.session.notifications.error(f"Cannot save: the mechanism is refused: {exc}", source="file")
            return False
        except OSError as exc:
            self.session.notifications.error(f"Cannot save {path}: {exc.strerror or exc}", source="file")
            return False
        self._add_recent(p)
        self.settings.setValue("paths/last_dir", str(p.resolve().parent))
        self.session.notifications.info(f"Saved {p.name}.", source="file")
        return True

    def _on_replaced(self) -> None:
        self.message_bar.hide()
        self._update_title()
        self._update_actions()
        QTimer.singleShot(0, lambda: self.view_panel.reset_camera(self.view_panel._last_view))

    def _select_mechanism(self) -> None:
        from linkwork.app.session.document import Selection

        self.session.document.select(Selection("mechanism", ""))
        self.docks["mechanism"].show()
        self.docks["mechanism"].raise_()

    # --------------------------------------------------------------- recent
    def recent_files(self) -> list[str]:
        v = self.settings.value("recent/files", [])
        if isinstance(v, str):
            v = [v]
        return [str(x) for x in (v or [])]

    def _add_recent(self, p: Path) -> None:
        s = str(Path(p).resolve())
        files = [f for f in self.recent_files() if f != s]
        files.insert(0, s)
        self.settings.setValue("recent/files", files[:MAX_RECENT])
        self._rebuild_recent()

    def _rebuild_recent(self) -> None:
        m = self.recent_menu
        m.clear()
        files = self.recent_files()
        for f in files:
            a = m.addAction(Path(f).name)
            a.setToolTip(f)
            a.setStatusTip(f)
            a.triggered.connect(lambda _=False, p=f: self.open_file(p))
        if not files:
            a = m.addAction("(none yet)")
            a.setEnabled(False)
        else:
            m.addSeparator()
            a = m.addAction("Clear list")
            a.triggered.connect(lambda: (self.settings.setValue("recent/files", []), self._rebuild_recent()))

    # =================================================================== runs
    def _busy_refusal(self) -> bool:
        if self.runner.busy:
            self.session.notifications.warning("Stop the running simulation first.", source="run")
            return True
        return False

    def run(self):
        if self.runner.busy:
            return None
        return self.runner.start()

    def compare(self, overrides: dict, base=None):
        """Run again with ``overrides`` of the current run's settings and overlay both."""
        if self.runner.busy:
            self.session.notifications.warning("A simulation is already running.", source="run")
            return None
        if base is not None:
            # the comparison keeps everything of the compared run but what is overridden
            changes = {k: getattr(base, k) for k in base.as_dict() if k not in overrides}
            changes.update(overrides)
            if "formulation" in overrides and "integrator" not in overrides:
                from linkwork.engine.formulations import REGISTRY

                cls = REGISTRY.get(overrides["formulation"])
                if cls is not None and changes.get("integrator") not in cls.integrators:
                    changes["integrator"] = cls.default_integrator  # e.g. a stepping formulation
            overrides = changes
        return self.runner.start(overrides or None, compare=True)

    def open_sweep(self):
        """Run > Parameter sweep…: the Sweep dialog on the open mechanism (non-modal)."""
        if self.session.document.is_empty:
            self.session.notifications.warning("Open or build a mechanism to sweep first.", source="sweep")
            return None
        from .sweep_dialog import SweepDialog

        dlg = SweepDialog(self.session, self)
        self._show_dialog(dlg)
        return dlg

    def toggle_pause(self) -> None:
        if self.runner.paused:
            self.runner.resume()
        else:
            self.runner.pause()

    def view_panel_toggle_play(self) -> None:
        self.view_panel.toggle_play()

    def _live_tick(self) -> None:
        """Frame clock during a run (the plot timer's tick, after the plots refreshed)."""
        run = self.runner.run
        if run is None:
            return
        pb = self.session.playback
        if pb.live and run.n_rows:
            pb.set_time(run.t_last)
        now = time.perf_counter()
        if now - self._last_progress >= 0.25:
            self._last_progress = now
            self.solver_panel.show_progress(run)
            self.run_status.setText(self.solver_panel.progress.format())
            self.runs_panel.update_run(run)

    def _run_started(self, run) -> None:
        self.plots.start_live(run.settings.t_end)
        if self.tabs.currentIndex() != 0:
            self.tabs.setCurrentIndex(0)
        self._update_actions()
        self._run_state(run)

    def _current_run_changed(self, run) -> None:
        """Progress and status show the current run (idle when there is none)."""
        if not self.runner.busy:
            self.solver_panel.show_progress(run)
            self._show_run_status(run)
        self._update_actions()

    def _run_state(self, run) -> None:
        """Status changes (compiling, running, paused): labels and actions."""
        if run is None:
            return
        self.solver_panel.show_progress(run)
        self.run_status.setText(self.solver_panel.progress.format())
        paused = run.status == "paused"
        self.actions["pause"].setText("Resume" if paused else "Pause")
        self.actions["pause"].setIcon(QApplication.style().standardIcon(
            QStyle.SP_MediaPlay if paused else QStyle.SP_MediaPause))
        self._update_actions()

    def _show_run_status(self, run) -> None:
        """The run's summary in the one-line status bar (its health figures after a dot;
        the full text, one item a line, in the tooltip)."""
        text = run.summary() if run is not None else ""
        self.run_status.setText(text.replace("\n", " · "))
        self.run_status.setToolTip(text)

    def _run_finished(self, run) -> None:
        self.plots.stop_live()
        if self.view_panel.scene is not None:
            self.view_panel.scene.run_finished()
        self.solver_panel.show_progress(run)
        self._show_run_status(run)
        self.actions["pause"].setText("Pause")
        self.actions["pause"].setIcon(QApplication.style().standardIcon(QStyle.SP_MediaPause))
        self._update_actions()
        if run.status == "finished":
            self.session.notifications.info(
                f"Run finished: {run.label}, {run.n_rows} rows in {run.stats.get('wall_time', 0):.3g} s.",
                source="run")
        elif run.status == "stopped":
            self.session.notifications.info(f"Run stopped at t = {run.t_last:.4g} s; {run.n_rows} rows kept.",
                                            source="run")

    def _compiling(self, on: bool) -> None:
        self.solver_panel.compile_notice.setVisible(on)
        if on:
            self.statusBar().showMessage("Compiling numerical kernels (first run only)…")
        else:
            self.statusBar().clearMessage()

    def _compile_progress(self, text: str, fraction: float) -> None:
        """The compile notice names the formulation and counts the seconds against this
        machine's figure for it (RunController.compile_progress)."""
        self.solver_panel.compile_notice.setText(text)
        self.statusBar().showMessage(text)

    # ================================================================= export
    def _current_run(self):
        run = self.session.history.current
        if run is None or run.n_rows == 0:
            self.session.notifications.warning("There is no run to export yet: run the simulation first.",
                                               source="export")
            return None
        return run

    def _export_path(self, title: str, suffix: str, filt: str) -> str | None:
        doc = self.session.document
        stem = (doc.path.name.split(".")[0] if doc.path else (doc.spec.name or "linkwork").replace(" ", "-"))
        start = Path(self.settings.value("paths/export_dir", str(Path.home()))) / f"{stem}{suffix}"
        path, _ = QFileDialog.getSaveFileName(self, title, str(start), filt)
        if path:
            self.settings.setValue("paths/export_dir", str(Path(path).parent))
        return path or None

    def export_csv_dialog(self, run=None) -> None:
        run = run or self._current_run()
        if run is None:
            return
        path = self._export_path("Export results CSV", ".csv", "CSV (*.csv)")
        if path:
            self._do_export(lambda: exporting.export_csv(run, path), f"Wrote {Path(path).name}")

    def export_plot_dialog(self, kind: str, fmt: str) -> None:
        if self._current_run() is None:
            return
        path = self._export_path("Export plot", f"-{kind}.{fmt}", f"{fmt.upper()} (*.{fmt})")
        if path:
            self._do_export(lambda: exporting.export_plot(self.session, kind, path), f"Wrote {Path(path).name}")

    def export_view_dialog(self) -> None:
        scene = self.view_panel.scene
        if scene is None:
            self.session.notifications.error("The 3-D view is not available on this display.", source="export")
            return
        path = self._export_path("Export 3D view", "-view.png", "PNG (*.png)")
        if path:
            self._do_export(lambda: exporting.export_view_png(scene, path), f"Wrote {Path(path).name}")

    def _render_progress(self, text: str):
        """A cancellable progress dialog for rendering frames, and the ``progress(done,
        total)`` callback that updates it and says whether to go on."""
        dlg = QProgressDialog(text, "Cancel", 0, 100, self)
        dlg.setWindowModality(Qt.WindowModal)
        dlg.setMinimumDuration(300)

        def progress(done, total):
            dlg.setMaximum(total)
            dlg.setValue(done)
            QApplication.processEvents()
            return not dlg.wasCanceled()

        return dlg, progress

    def _frames_target(self, available: tuple[bool, str], title: str, suffix: str, filt: str):
        """``(scene, path)`` for an export of the run's frames from the 3-D view, or None
        (the reason shown) when the encoder or the view is missing, no run is selected or
        the user cancelled the file dialog."""
        scene = self.view_panel.scene
        ok, why = available
        if scene is None or not ok:
            self.session.notifications.error(why or "The 3-D view is not available on this display.",
                                             source="export")
            return None
        if self._current_run() is None:
            return None
        path = self._export_path(title, suffix, filt)
        return (scene, path) if path else None

    def export_gif_dialog(self) -> None:
        target = self._frames_target(exporting.gif_available(), "Export animation", ".gif", "GIF (*.gif)")
        if target is None:
            return
        scene, path = target
        dlg, progress = self._render_progress("Rendering animation…")
        self._do_export(lambda: exporting.export_animation(self.session, scene, path, progress=progress),
                        f"Wrote {Path(path).name}")
        dlg.close()

    def export_mp4_dialog(self) -> None:
        target = self._frames_target(video.video_available(), "Export video", ".mp4", "MP4 video (*.mp4)")
        if target is None:
            return
        scene, path = target
        dlg, progress = self._render_progress("Rendering video…")

        try:
            self._do_export(lambda: video.export_video(self.session, scene, path, speed=self.session.playback.speed,
                                                       progress=progress), f"Wrote {Path(path).name}")
        except video.ExportCancelled:
            self.session.notifications.info("Video export cancelled: nothing was written.", source="export")
        finally:
            dlg.close()

    def _do_export(self, fn, done_text: str) -> bool:
        try:
            fn()
        except (OSError, ValueError, RuntimeError) as exc:
            self.session.notifications.error(f"Export failed: {exc}", source="export")
            return False
        self.session.notifications.info(done_text, source="export")
        return True

    # =================================================================== help
    def show_guide(self) -> MarkdownDialog:
        dlg = formulation_guide(self)
        dlg.setObjectName("FormulationGuide")
        self._show_dialog(dlg)
        return dlg

    def show_user_guide(self) -> MarkdownDialog:
        p = docs_dir() / "user-guide.md"
        try:
            text = p.read_text(encoding="utf-8")
        except OSError:
            text = f"# User guide\n\nThe user guide was not found (looked for `{p}`)."
        dlg = MarkdownDialog("User guide", text, self, base=docs_dir())
        self._show_dialog(dlg)
        return dlg

    def show_about(self) -> MarkdownDialog:
        dlg = MarkdownDialog("About Linkwork", about_text(), self)
        icon = app_icon()
        if not icon.isNull():  # the application's icon above its name and version
            logo = QLabel()
            logo.setObjectName("aboutIcon")
            logo.setPixmap(icon.pixmap(64, 64))
            dlg.layout().insertWidget(0, logo, 0, Qt.AlignHCenter)
        dlg.resize(520, 360)
        self._show_dialog(dlg)
        return dlg

    def _show_dialog(self, dlg) -> None:
        self._dialogs.append(dlg)
        dlg.finished.connect(lambda _r, d=dlg: (self._dialogs.remove(d) if d in self._dialogs else None,
                                                d.deleteLater()))
        dlg.show()

    # ================================================================ state
    def _update_title(self) -> None:
        doc = self.session.document
        name = doc.spec.name or "untitled"
        file = f" — {doc.path.name}" if doc.path else ""
        self.setWindowTitle(f"{name}{file}[*] — Linkwork {__version__}")
        self.setWindowModified(doc.dirty)

    def _update_actions(self) -> None:
        if self._closed:
            return
        busy = self.runner.busy
        doc = self.session.document
        v = doc.validation
        settings, why = self.session.solver.resolved()
        can_run = not busy and not doc.is_empty and v.ok and settings is not None
        a = self.actions["run"]
        a.setEnabled(can_run)
        if busy:
            a.setToolTip("A simulation is running")
        elif doc.is_empty:
            a.setToolTip("The mechanism is empty")
        elif not v.ok:
            a.setToolTip(f"The mechanism is refused: {v.message}")
        elif settings is None:
            a.setToolTip(why)
        else:
            a.setToolTip("Run the simulation (F5)")
        self.actions["pause"].setEnabled(busy)
        self.actions["stop"].setEnabled(busy)
        self.actions["compare_current"].setEnabled(can_run and self.session.history.current is not None)
        self.compare_menu.setEnabled(can_run)
        has_run = self.session.history.current is not None and self.session.history.current.n_rows > 0
        for k, act in self.actions.items():
            if k.startswith("export_"):
                act.setEnabled(has_run and not (k in ("export_view", "export_gif", "export_mp4")
                                                and self.view_panel.scene is None))
        for k, (ok, why) in (("export_gif", self._gif), ("export_mp4", self._mp4)):
            if not ok:
                self.actions[k].setEnabled(False)
                self.actions[k].setToolTip(why)
        for k in ("new", "open", "generate", "save", "save_as"):
            self.actions[k].setEnabled(not busy or k in ("save", "save_as"))
        self.gen_menu.setEnabled(not busy)
        self.examples_menu.setEnabled(not busy)
        self.recent_menu.setEnabled(not busy)

    def _notified(self, n) -> None:
        if n.level == "error":
            self.message_bar.show_message("error", n.text)
        elif n.level == "warning":
            self.message_bar.show_message("warning", n.text)
        else:
            self.statusBar().showMessage(n.text, 6000)

    def _restore_state(self) -> None:
        s = self.settings
        geo = s.value("window/geometry")
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
        st = s.value("window/state")
        if isinstance(st, QByteArray) and not st.isEmpty():
            self.restoreState(st, STATE_VERSION)
        try:
            self.tabs.setCurrentIndex(int(s.value("window/tab", 0)))
        except (TypeError, ValueError):
            pass
        plane = s.value("sketch/plane")
        if plane in ("xy", "xz", "zy"):
            self.session.sketch.set_plane(plane)
        try:
            speed = float(s.value("playback/speed", 1.0))
            self.session.playback.set_speed(speed)
            i = self.view_panel.speed.findData(speed)
            if i >= 0:
                self.view_panel.speed.setCurrentIndex(i)
        except (TypeError, ValueError):
            pass

    def save_window_state(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState(STATE_VERSION))
        s.setValue("window/tab", self.tabs.currentIndex())
        s.setValue("sketch/plane", self.session.sketch.plane.key)
        s.setValue("playback/speed", self.session.playback.speed)
        s.sync()

    def reset_layout(self) -> None:
        if self._default_state is not None:
            self.restoreState(self._default_state, STATE_VERSION)
        for d in self.docks.values():
            d.show()
        self.docks["plots"].raise_()

    def closeEvent(self, ev: QCloseEvent) -> None:  # noqa: N802
        if not self.confirm_discard():
            ev.ignore()
            return
        self.runner.shutdown()
        self.autosave.close()  # a normal close: the recovery file goes
        self.save_window_state()
        self.shutdown()
        super().closeEvent(ev)

    def shutdown(self) -> None:
        """Unsubscribe every view from the session and close the 3-D canvas."""
        self._closed = True
        self._subs.disconnect_all()
        for w in (self.plots, self.solver_panel, self.editor, self.runs_panel, self.messages,
                  self.modes_panel, self.sketch_panel, self.view_panel, self.status_summary):
            w.close_panel()
        for d in list(self._dialogs):
            d.close()
