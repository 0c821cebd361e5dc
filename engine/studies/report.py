"""What every study's output shares: progress lines on stderr, matplotlib set up for the
plots, the numbers in the Markdown tables, and ``results.json``'s plain JSON."""

from __future__ import annotations

import math
import sys

import numpy as np


def log(msg: str) -> None:
    """A progress line on stderr (the report and results go to files)."""
    print(msg, file=sys.stderr, flush=True)


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend with the studies' style; a clear exit
    when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("linkwork study: the plots need matplotlib (pip install -e .[bench])") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "legend.fontsize": 8, "savefig.bbox": "tight"})
    return plt


def fmt(v: float, digits: int = 2) -> str:
    """A table cell: ``v`` in scientific notation, or a dash for None and non-finite values."""
    return "–" if v is None or not np.isfinite(v) else f"{v:.{digits}e}"


def jsonable(obj):
    """``obj`` as plain JSON: arrays as lists, non-finite floats as null, and the keys that
    start with ``_`` (a study's report lines) left out."""
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
