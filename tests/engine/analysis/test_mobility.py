"""Mobility from the Jacobian's rank, Grübler–Kutzbach counts, redundant rows by name and the
Grashof class (engine/analysis/mobility.py, ``linkwork info``)."""

import json

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.analysis.mobility import four_bar, mobility
from linkwork.engine.cli import main
from linkwork.engine.mechfile import load, spec_from_dict
from linkwork.engine.model import build_model

from ..conftest import example_path
from .fourbars import four_bar as four_bar_dict


def test_planar_four_bar_counts():
    mo = mobility(build_model(load(example_path("fourbar-crank-rocker"))))
    assert mo.mobility == 1 and mo.grubler_planar == 1
    assert mo.grubler_spatial == 6 * 3 - 4 * 5 == -2
    assert mo.rank == 17
    # the out-of-plane rows of the loop's last joint depend on the rows before them
    assert mo.redundant == ("J4.dz", "J4.axis.u1", "J4.axis.u2")


def _parallelogram_with_extra_link():
    """Unit parallelogram O(0,0) - (0,1) - (1,1) - Q(1,0) with a third parallel link from
    (0.5, 0) to the coupler's middle: planar Grübler 3*4 - 2*6 = 0, yet it moves (1)."""
    z = [0.0, 0.0, 1.0]

    def rod(name, p0, p1):
        p0, p1 = np.array(p0, float), np.array(p1, float)
        return {"name": name, "mass": 1.0, "inertia": [0.1, 0.1, 0.1], "position": list((p0 + p1) / 2)}

    bodies = [rod("A", (0, 0, 0), (0, 1, 0)), rod("B", (0, 1, 0), (1, 1, 0)), rod("C", (1, 0, 0), (1, 1, 0)),
              rod("D", (0.5, 0, 0), (0.5, 1, 0))]
    joints = [("J1", "ground", "A", (0, 0, 0)), ("J2", "A", "B", (0, 1, 0)), ("J3", "B", "C", (1, 1, 0)),
              ("J4", "C", "ground", (1, 0, 0)), ("J5", "ground", "D", (0.5, 0, 0)), ("J6", "D", "B", (0.5, 1, 0))]
    return spec_from_dict({"format": "linkwork-mechanism", "version": 1, "bodies": bodies, "joints": [
        {"name": n, "type": "revolute", "parent": p, "child": c, "anchor": list(map(float, a)), "axis": z}
        for n, p, c, a in joints]})


def test_parallelogram_with_extra_link_is_redundant():
    mo = mobility(build_model(_parallelogram_with_extra_link()))
    assert mo.mobility == 1
    assert mo.grubler_planar == 0 and mo.grubler_spatial == 24 - 30
    # 30 equations, rank 6*4 - 1 = 23: seven dependent rows, the in-plane one among them
    assert mo.rank == 23 and len(mo.redundant) == 7
    assert mo.four_bar is None


@pytest.mark.parametrize("joint, planar, free", [("revolute", True, 3), ("spherical", False, 9)])
def test_open_chain(joint, planar, free):
    mo = mobility(build_model(gen.chain(3, joint)))
    assert mo.mobility == free and mo.grubler_spatial == free and mo.redundant == ()
    assert (mo.grubler_planar == free) if planar else (mo.grubler_planar is None)


@pytest.mark.parametrize("lengths, cls", [
    ((1.0, 0.4, 1.2, 0.9), "crank-rocker"),  # shortest link beside ground
    ((0.4, 1.0, 1.2, 0.9), "double-crank"),  # shortest link grounded
    ((1.0, 0.9, 0.4, 1.2), "double-rocker"),  # shortest link the coupler
    ((1.0, 0.5, 1.0, 0.5), "change-point"),  # s + l = p + q
    ((2.0, 0.9, 1.0, 0.8), "triple-rocker"),  # s + l = 2.8 > p + q = 1.9
    ((1.0, 0.4, 0.5, 3.0), "impossible"),  # l = 3 > s + p + q = 1.9
])
def test_grashof_class(lengths, cls):
    from linkwork.engine.analysis.assemble import drawing_from_dict

    fb = four_bar(drawing_from_dict(four_bar_dict(*lengths)).model)
    assert fb.cls == cls
    g, a, b, c = lengths
    assert fb.lengths == pytest.approx({"ground": g, "A": a, "B": b, "C": c}, abs=1e-12)
    s, l = min(lengths), max(lengths)
    assert (fb.numbers()["s"], fb.numbers()["l"]) == pytest.approx((s, l), abs=1e-12)


def test_info_prints_and_keys_mobility(capsys):
    path = str(example_path("fourbar-crank-rocker"))
    assert main(["info", path]) == 0
    text = capsys.readouterr().out
    assert "mobility       1 = 6*3 - rank 17" in text and "planar 3*3 - 8 = 1" in text
    assert "J4.dz, J4.axis.u1, J4.axis.u2" in text and "crank-rocker" in text
    assert "DOF            1" in text and "redundant      3 constraint equations" in text
    assert main(["info", path, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["dof"] == d["mobility"]["mobility"] == 1
    assert d["redundant_constraints"] == len(d["mobility"]["redundant_rows"]) == 3
    assert d["mobility"]["grashof"]["class"] == "crank-rocker"
    assert d["mobility"]["grashof"]["s"] == pytest.approx(0.4)
