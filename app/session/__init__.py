"""Qt-free session model of the desktop application.

Nothing in this package imports Qt, pyqtgraph or vispy; ``tests/app/session``
checks that mechanically.
"""

from .document import DocState, EditCommand, MechanismDocument, Selection, UndoStack
from .events import Event, Subscriptions
from .notifications import Notification, Notifications
from .playback import Playback
from .runs import RunHistory, RunRecord
from .session import RunRefused, Session
from .sketch import PLANES, Plane, SketchModel
from .solver import SolverModel, available_formulations
from .validation import Target, TopologySummary, Validation, validate

__all__ = [
    "DocState", "EditCommand", "MechanismDocument", "Selection", "UndoStack", "Event", "Subscriptions",
    "Notification", "Notifications", "Playback", "RunHistory", "RunRecord", "RunRefused", "Session",
    "PLANES", "Plane", "SketchModel", "SolverModel", "available_formulations", "Target",
    "TopologySummary", "Validation", "validate",
]
