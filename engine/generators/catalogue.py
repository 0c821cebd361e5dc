"""The catalogue: every paper's test case and the further demos, and writing them as the
shipped examples (``resources/examples/*.mech.json``)."""

from __future__ import annotations

from ..mechfile import MechanismSpec
from .chains import chain, paper000_chain, spatial_double_pendulum
from .driven import driven_slider_crank
from .geared import geared_arm, geared_fourbar
from .joint_types import joint_zoo, slider_crank
from .loops import closed_loop, double_loop, fivebar, fourbar, ladder
from .sprung import sprung_parallelogram


def paper_cases() -> dict[str, MechanismSpec]:
    """Every numerical test case of papers 000, 001 and 002, keyed by file stem."""
    cases = {
        "spatial-double-pendulum": spatial_double_pendulum(),
        "parallelogram-fourbar": fourbar(),
        "chain-128-spherical": paper000_chain(128),
        "loop-4": closed_loop(4, name="single loop of 4 bodies (paper 001 case 1)"),
        "loop-8": closed_loop(8, name="single loop of 8 bodies (paper 001 case 2)"),
        "double-loop-8": double_loop(name="double loop of 8 bodies (paper 001 case 3)"),
        "fourbar-crank-rocker": fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0,
                                        crank_angle_deg=60.0, inertia=None,
                                        name="crank-rocker four-bar (paper 002, 4.1)"),
        "fivebar-redundant": fivebar(3, name="redundant parallel five-bar (paper 002, 4.2)"),
    }
    for cells in (1, 2, 4, 8, 16):
        cases[f"ladder-{cells}"] = ladder(cells)
    return cases


#: Run settings carried by the examples whose fast modes rk4 at the default dt = 0.01 s
#: cannot follow (docs/file-format.md, "Additions"): rk4 diverged on both at the defaults
#: (exit 3 at 2 s and 1.72 s, the state exceeding 1e12) -- the spectral radius of their
#: right-hand sides reaches 179-679 1/s within 2 s (dense and hdca, chain-6-universal-spatial
#: and joint-zoo, benchmarks/results/hdca_spectrum.md), near or past rk4's stability limit
#: 2.8 / 0.01 s = 280 1/s.  An error-controlled integrator follows
#: them at the default tolerances and keeps the 0.01 s output interval.
ADAPTIVE = (("integrator", "dop853"),)


def demo_cases() -> dict[str, MechanismSpec]:
    """Further shipped examples: chains, a slider-crank, every joint type."""
    return {
        "chain-8-revolute": chain(8, "revolute", planar=True, angle_deg=20.0),
        "chain-6-universal-spatial": chain(6, "universal", planar=False).with_(settings=ADAPTIVE),
        "chain-5-spherical-spatial": chain(5, "spherical", planar=False),
        "slider-crank": slider_crank(),
        "joint-zoo": joint_zoo().with_(settings=ADAPTIVE),
        "fivebar": fivebar(2),
        "geared-arm": geared_arm(),
        "fourbar-geared": geared_fourbar(),
        "sprung-parallelogram": sprung_parallelogram(),
        "slider-crank-driven": driven_slider_crank(),
    }


def write_examples(directory) -> list:
    """Write every paper case and demo to ``directory`` as ``<name>.mech.json``."""
    from pathlib import Path

    from ..mechfile import save

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in {**paper_cases(), **demo_cases()}.items():
        save(spec, d / f"{name}.mech.json")
        written.append(d / f"{name}.mech.json")
    return written
