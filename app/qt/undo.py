"""Puts the session's pure-Python edit commands on a ``QUndoStack``."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand, QUndoStack

from linkwork.app.session.document import EditCommand, MechanismDocument


class QtEditCommand(QUndoCommand):
    def __init__(self, cmd: EditCommand):
        super().__init__(cmd.text)
        self.cmd = cmd

    def redo(self) -> None:
        self.cmd.redo()

    def undo(self) -> None:
        self.cmd.undo()


def install_undo_stack(doc: MechanismDocument, stack: QUndoStack) -> None:
    """Route the document's edits through ``stack`` (undo/redo, clean state = saved)."""
    doc.push_command = lambda cmd: stack.push(QtEditCommand(cmd))
    doc.clear_history = stack.clear
    doc.mark_clean = stack.setClean
    doc.mark_unclean = stack.resetClean
    stack.cleanChanged.connect(lambda clean: doc.set_dirty_from_undo(clean))
