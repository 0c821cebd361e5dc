"""The mechanism being edited (Qt-free).

:class:`MechanismDocument` holds the current :class:`DocState` -- an immutable
:class:`~engine.mechfile.MechanismSpec` plus the sketch's ground pivots that no
joint uses yet -- the file it belongs to, whether it is modified, the current
selection and the validation of the current spec.  Every change goes through
:meth:`MechanismDocument.edit`, which hands an :class:`EditCommand` to the
undo stack (a Qt ``QUndoStack`` in the application, :class:`UndoStack` here
for Qt-free use); undoing and redoing just swap immutable states.

Events (emitted only on real changes):

- ``state_changed(state)`` -- spec or pivots replaced;
- ``validation_changed(validation)``;
- ``path_changed(path)``, ``dirty_changed(bool)``;
- ``selection_changed(selection)`` -- a :class:`Selection` or None;
- ``replaced()`` -- a different mechanism was loaded (undo history cleared).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from linkwork.engine.errors import MechanismError
from linkwork.engine.mechfile import MechanismSpec, load, save

from .events import Event
from .validation import Validation, validate

EMPTY_SPEC = MechanismSpec(bodies=(), joints=(), name="untitled")


@dataclass(frozen=True)
class DocState:
    spec: MechanismSpec
    #: sketch ground pivots not used by any joint yet (world points); not saved
    pivots: tuple[tuple[float, float, float], ...] = ()


@dataclass(frozen=True)
class Selection:
    kind: str  # "body", "joint", "force", "gear", "driver", "pivot", "mechanism"
    name: str  # body/joint name, force index, pivot index ("" for mechanism)


class EditCommand:
    """One undoable edit: swaps the document between two states (pure Python)."""

    def __init__(self, doc: "MechanismDocument", text: str, before: DocState, after: DocState,
                 select_after: Selection | None = None, select_before: Selection | None = None):
        self.doc = doc
        self.text = text
        self.before = before
        self.after = after
        self.select_after = select_after
        self.select_before = select_before

    def redo(self) -> None:
        self.doc._set_state(self.after)
        if self.select_after is not None:
            self.doc.select(self.select_after)
        self.doc._validate_selection()

    def undo(self) -> None:
        self.doc._set_state(self.before)
        if self.select_before is not None:
            self.doc.select(self.select_before)
        self.doc._validate_selection()


class UndoStack:
    """Minimal undo stack with the QUndoStack calls the document uses."""

    def __init__(self):
        self._commands: list[EditCommand] = []
        self._index = 0
        self._clean = 0
        self.changed = Event("undo_changed")

    def push(self, cmd: EditCommand) -> None:
        del self._commands[self._index:]
        if self._clean > self._index:
            self._clean = -1
        cmd.redo()
        self._commands.append(cmd)
        self._index += 1
        self.changed.emit()

    def undo(self) -> None:
        if self._index > 0:
            self._index -= 1
            self._commands[self._index].undo()
            self.changed.emit()

    def redo(self) -> None:
        if self._index < len(self._commands):
            self._commands[self._index].redo()
            self._index += 1
            self.changed.emit()

    def can_undo(self) -> bool:
        return self._index > 0

    def can_redo(self) -> bool:
        return self._index < len(self._commands)

    def clear(self) -> None:
        self._commands.clear()
        self._index = self._clean = 0
        self.changed.emit()

    def set_clean(self) -> None:
        self._clean = self._index
        self.changed.emit()

    def reset_clean(self) -> None:
        """No state is the saved one any more (QUndoStack.resetClean)."""
        self._clean = -1
        self.changed.emit()

    def is_clean(self) -> bool:
        return self._clean == self._index

    def count(self) -> int:
        return len(self._commands)


class MechanismDocument:
    def __init__(self):
        self.state_changed = Event("state_changed")
        self.validation_changed = Event("validation_changed")
        self.path_changed = Event("path_changed")
        self.dirty_changed = Event("dirty_changed")
        self.selection_changed = Event("selection_changed")
        self.replaced = Event("replaced")
        self._state = DocState(EMPTY_SPEC)
        self._pristine: MechanismSpec | None = None  # the spec object as loaded from `path`
        self._path: Path | None = None
        self._dirty = False
        self._selection: Selection | None = None
        self._validation = validate(EMPTY_SPEC)
        self._undo = UndoStack()
        #: how edits reach the undo stack; the Qt layer replaces this with a QUndoStack push
        self.push_command: Callable[[EditCommand], None] = self._undo.push
        #: called to clear the undo history when a new mechanism replaces this one
        self.clear_history: Callable[[], None] = self._undo.clear
        self.mark_clean: Callable[[], None] = self._undo.set_clean
        #: no state of the undo history is the saved one (a restored recovery copy)
        self.mark_unclean: Callable[[], None] = self._undo.reset_clean
        self._undo.changed.connect(self._qtfree_undo_changed)

    def _qtfree_undo_changed(self) -> None:
        if self.push_command == self._undo.push:
            self.set_dirty_from_undo(self._undo.is_clean())

    # ----------------------------------------------------------------- properties
    @property
    def state(self) -> DocState:
        return self._state

    @property
    def spec(self) -> MechanismSpec:
        return self._state.spec

    @property
    def pivots(self):
        return self._state.pivots

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def dirty(self) -> bool:
        return self._dirty

    @property
    def selection(self) -> Selection | None:
        return self._selection

    @property
    def validation(self) -> Validation:
        return self._validation

    @property
    def undo_stack(self) -> UndoStack:
        """The Qt-free undo stack (used unless the Qt layer installs its own)."""
        return self._undo

    @property
    def is_empty(self) -> bool:
        return not self.spec.bodies

    @property
    def title(self) -> str:
        if self._path is not None:
            return self._path.name
        return self.spec.name or "untitled"

    # ------------------------------------------------------------------- editing
    def edit(self, text: str, spec: MechanismSpec | None = None, pivots=None,
             select: Selection | None = None) -> bool:
        """Record an undoable edit to ``spec`` and/or ``pivots``; False if nothing changes."""
        after = DocState(spec if spec is not None else self.spec,
                         tuple(pivots) if pivots is not None else self.pivots)
        if after == self._state:
            if select is not None:
                self.select(select)
            return False
        cmd = EditCommand(self, text, self._state, after, select_after=select,
                          select_before=self._selection)
        self.push_command(cmd)
        return True

    def _set_state(self, state: DocState) -> None:
        if state == self._state:
            return
        spec_changed = state.spec is not self._state.spec
        self._state = state
        if spec_changed:
            self._revalidate()
        self.state_changed.emit(state)

    def set_dirty_from_undo(self, clean: bool) -> None:
        """The undo stack reports whether the current state is the saved one."""
        self._set_dirty(not clean)

    def _set_dirty(self, dirty: bool) -> None:
        if dirty != self._dirty:
            self._dirty = dirty
            self.dirty_changed.emit(dirty)

    def _revalidate(self) -> None:
        spec = self.spec
        v = validate(spec, pristine=spec is self._pristine)
        old = self._validation
        self._validation = v
        if (v.ok, v.message, v.summary, v.warnings) != (old.ok, old.message, old.summary, old.warnings) \
                or v.model is not old.model:
            self.validation_changed.emit(v)

    # ----------------------------------------------------------------- selection
    def select(self, selection: Selection | None) -> None:
        if selection != self._selection:
            self._selection = selection
            self.selection_changed.emit(selection)

    def _validate_selection(self) -> None:
        """Drop a selection that no longer names anything (after delete / undo)."""
        s = self._selection
        if s is None:
            return
        spec = self.spec
        ok = (s.kind == "mechanism"
              or (s.kind == "body" and any(b.name == s.name for b in spec.bodies))
              or (s.kind == "joint" and any(j.name == s.name for j in spec.joints))
              or (s.kind == "force" and s.name.isdigit() and int(s.name) < len(spec.forces))
              or (s.kind == "gear" and any(c.name == s.name for c in spec.couplings))
              or (s.kind == "driver" and any(d.name == s.name for d in spec.drivers))
              or (s.kind == "pivot" and s.name.isdigit() and int(s.name) < len(self.pivots)))
        if not ok:
            self.select(None)

    # ------------------------------------------------------------- files / replace
    def replace(self, spec: MechanismSpec, path: Path | None = None, pristine: bool = False,
                pivots=()) -> None:
        """Load a different mechanism: clears the undo history and the selection."""
        self._pristine = spec if pristine else None
        self._state = DocState(spec, tuple(tuple(p) for p in pivots))
        self._selection = None
        self._revalidate_force()
        self.clear_history()
        self.mark_clean()
        self._set_path(path)
        self._set_dirty(False)
        self.state_changed.emit(self._state)
        self.selection_changed.emit(None)
        self.replaced.emit()

    def _revalidate_force(self) -> None:
        self._validation = validate(self.spec, pristine=self.spec is self._pristine)
        self.validation_changed.emit(self._validation)

    def restore(self, spec: MechanismSpec, path: Path | None = None, pivots=()) -> None:
        """Load a recovered copy of unsaved edits: like :meth:`replace`, but modified,
        since what it holds is in no file; Save writes to ``path`` (asks if None)."""
        self.replace(spec, path, pivots=pivots)
        self.mark_unclean()
        self._set_dirty(True)

    def new(self) -> None:
        self.replace(EMPTY_SPEC)

    def open(self, path: str | Path) -> MechanismSpec:
        """Load ``path``; raises :class:`MechanismError` (nothing changes) if it is refused."""
        p = Path(path)
        spec = load(p)  # raises MechanismError with the engine's message
        from linkwork.engine.model import build_model

        build_model(spec)  # refusals only the model finds (impossible cut, ...)
        self.replace(spec, p.resolve(), pristine=True)
        return spec

    def save(self, path: str | Path | None = None) -> Path:
        """Write the mechanism (atomically).  Refuses an invalid mechanism.

        Afterwards the document holds exactly what the file says (as the command
        line would read it), so a run in the application and ``linkwork run`` on
        the saved file compute the same numbers.
        """
        p = Path(path) if path is not None else self._path
        if p is None:
            raise ValueError("no file name given")
        if not self._validation.ok:
            raise MechanismError(self._validation.path, self._validation.rule)
        save(self.spec, p)
        reread = load(p)
        self._pristine = reread
        self._state = DocState(reread, self.pivots)
        self._revalidate_force()
        self.mark_clean()
        self._set_path(p.resolve())
        self._set_dirty(False)
        self.state_changed.emit(self._state)
        return p

    def _set_path(self, path: Path | None) -> None:
        if path != self._path:
            self._path = path
            self.path_changed.emit(path)
