"""Autosave's timer and the offer to restore after a crash (the Qt side of
:mod:`app.session.recovery`, which decides what is written, when, and whose it is)."""

from __future__ import annotations

import math
import time
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, Qt, QTimer
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from linkwork.app.session import Session
from linkwork.app.session.recovery import (
    Autosave, RecoveryRecord, RecoveryStore, recovery_dir,
)


def default_folder() -> Path:
    """``$LINKWORK_RECOVERY_DIR``, else ``recovery/`` in the platform's application-data
    folder (Linux: ``~/.local/share/Linkwork/Linkwork/recovery``)."""
    base = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation)
    if not base:
        base = str(Path.home() / ".linkwork")
    return recovery_dir(Path(base) / "recovery")


def default_runs_folder() -> Path:
    """``$LINKWORK_RUNS_DIR``, else ``runs/`` in the platform's application-data folder
    (Linux: ``~/.local/share/Linkwork/Linkwork/runs``): the run history."""
    from linkwork.app.session.runstore import runs_dir

    base = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation)
    if not base:
        base = str(Path.home() / ".linkwork")
    return runs_dir(Path(base) / "runs")


class AutosaveTimer(QObject):
    """Wakes the session's :class:`~app.session.recovery.Autosave` when it asks to be woken."""

    def __init__(self, session: Session, parent: QObject | None = None, folder: str | Path | None = None):
        super().__init__(parent)
        self.autosave = Autosave(session.document, RecoveryStore(folder or default_folder()),
                                 session.notifications)
        self.timer = QTimer(self)
        self.timer.setObjectName("autosaveTimer")
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.autosave.tick)
        self.autosave.wake_requested.connect(self._wake)

    @property
    def store(self) -> RecoveryStore:
        return self.autosave.store

    def _wake(self, delay: float | None) -> None:
        if delay is None:
            self.timer.stop()
        else:
            self.timer.start(max(0, math.ceil(delay * 1000)))

    def close(self) -> None:
        """Normal end: no more writes, and this process's recovery file is deleted."""
        self.timer.stop()
        self.autosave.close()


def _when(t: float, now: float | None = None) -> str:
    now = time.time() if now is None else now
    stamp = time.strftime("%H:%M:%S on %d %b %Y", time.localtime(t))
    ago = max(0.0, now - t)
    if ago < 60:
        rel = f"{ago:.0f} s ago"
    elif ago < 3600:
        rel = f"{ago / 60:.0f} min ago"
    elif ago < 2 * 86400:
        rel = f"{ago / 3600:.1f} h ago"
    else:
        rel = f"{ago / 86400:.0f} days ago"
    return f"{stamp} ({rel})"


class RecoveryDialog(QDialog):
    """“Linkwork did not close normally”: what was found, Restore or Discard.

    ``choice`` is "restore", "discard" or None (closed with Esc: the copy is kept and
    offered again at the next start)."""

    def __init__(self, rec: RecoveryRecord, more: int = 0, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("RecoveryDialog")
        self.setWindowTitle("Recover unsaved edits")
        self.record = rec
        self.choice: str | None = None
        lay = QVBoxLayout(self)
        head = QLabel(f"<b>Linkwork did not close normally.</b> Unsaved edits of "
                      f"<b>“{_html(rec.title)}”</b> were kept.")
        head.setObjectName("recoveryHeadline")
        head.setWordWrap(True)
        lay.addWidget(head)
        spec = rec.spec
        if rec.original_path is not None:
            orig = (f"<b>{_html(rec.original_path.name)}</b><br>"
                    f"<span style='color:#555'>in {_html(str(rec.original_path.parent))}</span>")
        else:
            orig = "none: the mechanism was never saved"
        n_b, n_j = len(spec.bodies), len(spec.joints)
        rows = [("Saved at", _html(_when(rec.saved_at))),
                ("Original file", orig),
                ("Mechanism", f"{_html(spec.name or 'untitled')}<br>{n_b} {'body' if n_b == 1 else 'bodies'}, "
                              f"{n_j} {'joint' if n_j == 1 else 'joints'}")]
        details = QLabel("<table cellspacing='5'>" + "".join(
            f"<tr><td><i>{k}</i></td><td>{v}</td></tr>" for k, v in rows) + "</table>")
        details.setObjectName("recoveryDetails")
        details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        details.setWordWrap(True)
        details.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        body = QHBoxLayout()
        body.addWidget(details, 1)
        preview = _preview(spec)
        if preview is not None:
            body.addWidget(preview)
        lay.addLayout(body, 1)
        note = ("<b>Restore</b> opens these edits as an unsaved, modified mechanism: Save writes them to "
                + ("the original file." if rec.original_path is not None else "a file it asks you to name.") +
                " <b>Discard</b> deletes the recovery copy; the original file stays as it was.")
        if more:
            note += f" {more} further recovery {'copy is' if more == 1 else 'copies are'} offered next."
        tail = QLabel(note)
        tail.setObjectName("recoveryNote")
        tail.setWordWrap(True)
        lay.addWidget(tail)
        where = QLabel(f"Recovery copy: {_html(str(rec.file))}")
        where.setObjectName("recoveryFile")
        where.setStyleSheet("color: #666; font-size: 8pt;")
        where.setTextInteractionFlags(Qt.TextSelectableByMouse)
        where.setWordWrap(True)
        lay.addWidget(where)
        box = QDialogButtonBox()
        self.restore_button = box.addButton("Restore", QDialogButtonBox.AcceptRole)
        self.restore_button.setObjectName("recoveryRestore")
        self.discard_button = box.addButton("Discard", QDialogButtonBox.DestructiveRole)
        self.discard_button.setObjectName("recoveryDiscard")
        self.restore_button.setDefault(True)
        self.restore_button.clicked.connect(lambda: self._choose("restore"))
        self.discard_button.clicked.connect(lambda: self._choose("discard"))
        lay.addWidget(box)
        # a thin border where no window manager frames the dialog (kiosk set-ups, Xvfb)
        self.setStyleSheet("QDialog#RecoveryDialog { border: 1px solid #8a8f99; }")
        self.setMinimumWidth(720)

    def _choose(self, choice: str) -> None:
        self.choice = choice
        self.accept()


def _html(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _preview(spec):
    """A small drawing of the recovered mechanism (none for one the editor would refuse)."""
    from linkwork.app.session.validation import validate

    if not spec.bodies or not validate(spec).ok:
        return None
    from .generators import MechanismPreview

    w = MechanismPreview()
    w.setObjectName("recoveryPreview")
    w.setMinimumSize(300, 200)
    w.setMaximumWidth(360)
    w.set_spec(spec)
    return w


def offer_recovery(window) -> RecoveryDialog | None:
    """At start-up: offer the recovery files of ended Linkwork processes, newest first, one
    dialog at a time (window-modal, so the caller's event loop keeps running).  Returns
    the first dialog, or None when there is nothing to offer."""
    session: Session = window.session
    store = window.autosave.store
    orphans, bad = store.orphans()
    for exc in bad:
        session.notifications.warning(f"A recovery file cannot be read and is left in place: {exc}",
                                      source="autosave")
    return _offer_next(window, store, orphans)


def _offer_next(window, store: RecoveryStore, orphans: list[RecoveryRecord]) -> RecoveryDialog | None:
    while orphans:
        rec = store.claim(orphans.pop(0))
        if rec is None:
            continue  # gone, or another instance took it
        dlg = RecoveryDialog(rec, len(orphans), window)
        dlg.setAttribute(Qt.WA_DeleteOnClose)
        dlg.setWindowModality(Qt.WindowModal)
        dlg.finished.connect(lambda _r, d=dlg: _decided(window, store, d.record, d.choice, orphans))
        dlg.open()
        return dlg
    return None


def _decided(window, store: RecoveryStore, rec: RecoveryRecord, choice: str | None, orphans) -> None:
    notes = window.session.notifications
    if choice == "discard":
        store.delete(rec)
        notes.info(f"Discarded the recovered edits of {rec.title}.", source="autosave")
        _offer_next(window, store, orphans)
    elif choice == "restore":
        restore(window, rec)
    # closed otherwise (Esc): the copy stays and is offered at the next start


def restore(window, rec: RecoveryRecord) -> bool:
    """Load ``rec`` as the window's modified document; its file is deleted once this
    process's own recovery file holds the edits."""
    if not window.confirm_discard():
        return False
    window.session.document.restore(rec.spec, rec.original_path, rec.pivots)
    if window.autosave.autosave.save_now():
        window.autosave.store.delete(rec)
    window.session.notifications.info(
        f"Restored the unsaved edits of {rec.title} (saved {_when(rec.saved_at)}).", source="autosave")
    return True
