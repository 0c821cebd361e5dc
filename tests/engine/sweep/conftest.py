"""What the sweep tests share: the slider-crank as the base mechanism, a sweep document
built on it, and the bundled sweep file."""

from pathlib import Path

from linkwork.engine.paths import examples_dir

SLIDER = str(examples_dir() / "slider-crank.mech.json")
BUNDLED = Path(__file__).resolve().parents[3] / "resources" / "sweeps" / "slider-crank-spring.sweep.json"


def doc(**more):
    d = {"format": "linkwork-sweep", "version": 1, "mechanism": SLIDER, "settings": {"t_end": 0.2, "dt": 0.01}}
    d.update(more)
    return d
