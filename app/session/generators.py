"""The parametric generators offered by the editor (no Qt).

Each :class:`Generator` lists its parameters with defaults and ranges and
builds a spec with :mod:`engine.generators`; the dialog draws a form from the
parameter list, so the definitions here are the only place that knows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from linkwork.engine import generators as g
from linkwork.engine.mechfile import MechanismSpec


@dataclass(frozen=True)
class Param:
    name: str
    label: str
    kind: str  # "int", "float", "bool", "choice"
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple = ()  # (value, label) pairs for "choice"
    tooltip: str = ""


@dataclass(frozen=True)
class Generator:
    key: str
    title: str
    description: str
    params: tuple[Param, ...]
    build_fn: Callable[..., MechanismSpec] = field(repr=False)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def build(self, values: dict | None = None) -> MechanismSpec:
        """The spec for ``values`` (missing ones default); ``ValueError`` if impossible."""
        v = self.defaults()
        v.update(values or {})
        for p in self.params:
            x = v[p.name]
            if p.kind == "int":
                x = int(x)
            if p.kind in ("int", "float"):
                if p.minimum is not None and x < p.minimum:
                    raise ValueError(f"{p.label} must be at least {p.minimum:g}")
                if p.maximum is not None and x > p.maximum:
                    raise ValueError(f"{p.label} must be at most {p.maximum:g}")
            v[p.name] = x
        return self.build_fn(**v)


def _inertia(mode: str):
    return None if mode == "rod" else (1.0, 1.0, 1.0)


INERTIA = Param("inertia", "Inertia", "choice", "unit", choices=(("unit", "diag(1, 1, 1) (papers)"),
                                                                 ("rod", "slender rod")),
                tooltip="Principal moments of every link")
MASS = Param("mass", "Mass [kg]", "float", 1.0, 1e-9, None)
LENGTH = Param("length", "Link length [m]", "float", 1.0, 1e-6, None)


def _chain(n, joint, planar, length, mass, inertia, angle_deg):
    return g.chain(n, joint, planar=planar, length=length, mass=mass, inertia=_inertia(inertia),
                   angle_deg=angle_deg)


def _loop(n, spread_deg, length, mass, inertia):
    return g.closed_loop(n, spread_deg=spread_deg, length=length, mass=mass, inertia=_inertia(inertia))


def _double_loop(spread_deg, length, mass, inertia):
    return g.double_loop(spread_deg=spread_deg, length=length, mass=mass, inertia=_inertia(inertia))


def _ladder(cells, spacing, length, tilt_x_deg, tilt_z_deg, mass, inertia):
    return g.ladder(cells, spacing=spacing, length=length, tilt_x_deg=tilt_x_deg, tilt_z_deg=tilt_z_deg,
                    mass=mass, inertia=_inertia(inertia))


def _fourbar(crank, coupler, rocker, ground, crank_angle_deg, branch, mass, inertia):
    return g.fourbar(crank, coupler, rocker, ground, crank_angle_deg=crank_angle_deg, branch=int(branch),
                     mass=mass, inertia=_inertia(inertia))


def _fivebar(legs, base_half, length, tip_x, tip_y, mass, inertia):
    return g.fivebar(int(legs), base_half=base_half, length=length, tip=(tip_x, tip_y), mass=mass,
                     inertia=_inertia(inertia))


def _slider(crank, rod, crank_angle_deg, crank_rate, stiffness):
    return g.slider_crank(crank, rod, crank_angle_deg, crank_rate, stiffness)


_CASE_BUILDERS = {
    "spatial-double-pendulum": g.spatial_double_pendulum,
    "parallelogram-fourbar": g.fourbar,
    "chain-128-spherical": lambda: g.paper000_chain(128),
    "loop-4": lambda: g.closed_loop(4, name="single loop of 4 bodies (paper 001 case 1)"),
    "loop-8": lambda: g.closed_loop(8, name="single loop of 8 bodies (paper 001 case 2)"),
    "double-loop-8": lambda: g.double_loop(name="double loop of 8 bodies (paper 001 case 3)"),
    "fourbar-crank-rocker": lambda: g.fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0,
                                              crank_angle_deg=60.0, inertia=None,
                                              name="crank-rocker four-bar (paper 002, 4.1)"),
    "fivebar-redundant": lambda: g.fivebar(3, name="redundant parallel five-bar (paper 002, 4.2)"),
    "ladder-1": lambda: g.ladder(1), "ladder-2": lambda: g.ladder(2), "ladder-4": lambda: g.ladder(4),
    "ladder-8": lambda: g.ladder(8), "ladder-16": lambda: g.ladder(16),
    "chain-8-revolute": lambda: g.chain(8, "revolute", planar=True, angle_deg=20.0),
    "chain-6-universal-spatial": lambda: g.chain(6, "universal", planar=False),
    "chain-5-spherical-spatial": lambda: g.chain(5, "spherical", planar=False),
    "slider-crank": g.slider_crank,
    "joint-zoo": g.joint_zoo,
    "fivebar": lambda: g.fivebar(2),
}


def _case(case):
    """One of the engine's catalogue cases (built alone; the same as in paper_cases()/demo_cases())."""
    if case not in _CASE_BUILDERS:
        raise ValueError(f"unknown test case {case!r}")
    return _CASE_BUILDERS[case]()


def _case_choices():
    # (key, label) without building every case at import time
    keys = ["spatial-double-pendulum", "parallelogram-fourbar", "chain-128-spherical", "loop-4", "loop-8",
            "double-loop-8", "fourbar-crank-rocker", "fivebar-redundant", "ladder-1", "ladder-2", "ladder-4",
            "ladder-8", "ladder-16", "chain-8-revolute", "chain-6-universal-spatial",
            "chain-5-spherical-spatial", "slider-crank", "joint-zoo", "fivebar"]
    labels = {
        "spatial-double-pendulum": "spatial double pendulum (paper 000, 4.2)",
        "parallelogram-fourbar": "parallelogram four-bar (paper 000, 4.3)",
        "chain-128-spherical": "128-link spherical chain (paper 000, 4.4)",
        "loop-4": "single loop, 4 bodies (paper 001, case 1)",
        "loop-8": "single loop, 8 bodies (paper 001, case 2)",
        "double-loop-8": "double loop, 8 bodies (paper 001, case 3)",
        "fourbar-crank-rocker": "crank-rocker four-bar (paper 002, 4.1)",
        "fivebar-redundant": "redundant parallel five-bar (paper 002, 4.2)",
        "ladder-1": "spatial ladder, 1 cell (paper 002, 4.3)",
        "ladder-2": "spatial ladder, 2 cells (paper 002, 4.3)",
        "ladder-4": "spatial ladder, 4 cells (paper 002, 4.3)",
        "ladder-8": "spatial ladder, 8 cells (paper 002, 4.3)",
        "ladder-16": "spatial ladder, 16 cells (paper 002, 4.3)",
        "chain-8-revolute": "8-link revolute chain (demo)",
        "chain-6-universal-spatial": "6-link universal spatial chain (demo)",
        "chain-5-spherical-spatial": "5-link spherical spatial chain (demo)",
        "slider-crank": "slider-crank with spring (demo)",
        "joint-zoo": "joint zoo: every joint and force type (demo)",
        "fivebar": "five-bar, 2 legs (demo)",
    }
    return tuple((k, labels[k]) for k in keys)


GENERATORS: dict[str, Generator] = {}


def _add(gen: Generator) -> None:
    GENERATORS[gen.key] = gen


_add(Generator("chain", "Chain", "An n-link pendulum hanging from a ground pivot at the origin.", (
    Param("n", "Links", "int", 8, 1, 1024),
    Param("joint", "Joint type", "choice", "revolute",
          choices=(("revolute", "revolute"), ("universal", "universal"), ("spherical", "spherical"))),
    Param("planar", "Planar", "bool", True, tooltip="Planar: links start in the xy-plane; spatial: the chain "
                                                    "winds in 3-D and moves out of plane"),
    LENGTH, MASS, INERTIA,
    Param("angle_deg", "Start angle [°]", "float", 0.0, -360, 360, tooltip="Planar chains: direction of the "
                                                                           "links from the x axis"),
), _chain))
_add(Generator("loop", "Closed loop", "n links hanging between two ground pivots (paper 001's single loops).", (
    Param("n", "Links", "int", 4, 2, 256), Param("spread_deg", "Spread [°]", "float", 60.0, 0, 89.9),
    LENGTH, MASS, INERTIA,
), _loop))
_add(Generator("double_loop", "Double loop", "Two coupled loops of 8 bodies (paper 001, case 3).", (
    Param("spread_deg", "Spread [°]", "float", 60.0, 0, 89.9), LENGTH, MASS, INERTIA,
), _double_loop))
_add(Generator("ladder", "Ladder", "Spatial ladder of L cells: 2 DOF whatever L (paper 002, 4.3).", (
    Param("cells", "Cells L", "int", 4, 1, 256), Param("spacing", "Leg spacing [m]", "float", 1.0, 1e-6),
    LENGTH, Param("tilt_x_deg", "Tilt about x [°]", "float", 30.0, -89, 89),
    Param("tilt_z_deg", "Tilt about z [°]", "float", 20.0, -89, 89), MASS, INERTIA,
), _ladder))
_add(Generator("fourbar", "Four-bar", "Planar four-bar; the defaults are paper 000's parallelogram.", (
    Param("crank", "Crank [m]", "float", 1.0, 1e-6), Param("coupler", "Coupler [m]", "float", 1.0, 1e-6),
    Param("rocker", "Rocker [m]", "float", 1.0, 1e-6), Param("ground", "Ground [m]", "float", 1.0, 1e-6),
    Param("crank_angle_deg", "Crank angle [°]", "float", 45.0, -360, 360),
    Param("branch", "Assembly", "choice", 1, choices=((1, "open (+1)"), (-1, "crossed (−1)"))),
    MASS, INERTIA,
), _fourbar))
_add(Generator("fivebar", "Five-bar", "Planar parallel five-bar; three legs make paper 002's redundant case.", (
    Param("legs", "Legs", "choice", 3, choices=((2, "2 (classic five-bar)"), (3, "3 (redundant)"))),
    Param("base_half", "Half base [m]", "float", 1.0, 1e-6), LENGTH,
    Param("tip_x", "Tip x [m]", "float", 0.0), Param("tip_y", "Tip y [m]", "float", 1.2),
    MASS, INERTIA,
), _fivebar))
_add(Generator("slider_crank", "Slider-crank", "Crank, connecting rod and a sprung slider.", (
    Param("crank", "Crank [m]", "float", 0.3, 1e-6), Param("rod", "Rod [m]", "float", 1.0, 1e-6),
    Param("crank_angle_deg", "Crank angle [°]", "float", 60.0, -360, 360),
    Param("crank_rate", "Crank rate [rad/s]", "float", 6.0),
    Param("stiffness", "Spring stiffness [N/m]", "float", 200.0, 0.0),
), _slider))
_add(Generator("case", "Papers' test cases", "Every test case of papers 000, 001 and 002, and the demos.", (
    Param("case", "Case", "choice", "parallelogram-fourbar", choices=_case_choices()),
), _case))
