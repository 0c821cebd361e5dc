"""vispy visuals of the 3-D view; they subscribe to session events when created
and unsubscribe in ``close`` (napari's ``_vispy`` layer pattern)."""
