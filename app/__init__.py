"""Linkwork desktop application.

Three layers:

- :mod:`app.session` -- the Qt-free session model: the mechanism being edited,
  its validation and topology, solver settings, run state and result history,
  playback time.  Pure Python; emits events only on real changes.
- :mod:`app.qt` -- Qt widgets that bind to the session (the only layer that
  imports PySide6), the main window, dialogs and the worker thread.
- :mod:`app.vispy` -- the 3-D view's visuals, subscribed to session events.

:func:`app.main.main` is the ``linkwork`` entry point.
"""
