"""Drawing in the sketch model (no Qt): a drawn four-bar is the generator's four-bar."""

import math

import numpy as np

from linkwork.engine import generators as g
from linkwork.engine.mechfile import spec_to_dict
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation

from linkwork.app.session import Session
from linkwork.app.session.document import Selection
from linkwork.app.session.sketch import PLANES, sketch_points


def canonical(spec):
    """Spec as a dict, rod ends as an unordered pair (drawing direction does not matter)."""
    d = spec_to_dict(spec)
    for b in d["bodies"]:
        s = b.get("shape")
        if s and s["kind"] == "rod":
            s["ends"] = sorted([tuple(s.pop("from")), tuple(s.pop("to"))])
    d.pop("name")
    d.pop("description", None)
    return d


def draw_fourbar(s: Session, exact: bool = True):
    sk = s.sketch
    sk.set_default(inertia_mode="unit", snap=False)
    sk.set_tool("pivot")
    assert sk.place_pivot(0.0, 0.0)
    assert sk.place_pivot(1.0, 0.0)
    sk.set_tool("link")
    pts = sk.points()

    def at(a, b):
        for k, p in enumerate(sk.points()):
            if np.allclose(p.pos[:2], (a, b)):
                return k
        return None

    # the generator's crank tip: (cos 45°, sin 45°)
    c, sn = math.cos(math.radians(45.0)), math.sin(math.radians(45.0))
    assert sk.link_click(0.0, 0.0, at(0.0, 0.0)) == "start"
    assert sk.link_click(0.7, 0.7, None) == "link"
    assert sk.link_click(1.7, 0.7, None) == "link"
    assert sk.link_click(1.0, 0.0, at(1.0, 0.0)) == "close"
    if exact:
        # the user types the exact joint positions in the property panel
        from linkwork.app.session import edits

        doc = s.document
        doc.edit("move", edits.set_joint(doc.spec, "J2", anchor=(c, sn, 0.0)))
        doc.edit("move", edits.set_joint(doc.spec, "J3", anchor=(1.0 + c, sn, 0.0)))
    return pts


def test_drawn_fourbar_equals_the_generators():
    s = Session()
    draw_fourbar(s)
    drawn = s.document.spec
    ref = g.fourbar()
    assert s.document.validation.ok, s.document.validation.message
    assert canonical(drawn) == canonical(ref)
    assert s.document.pivots == ()
    # and it moves the same
    st = Settings(t_end=0.3)
    _, a = Simulation(build_model(drawn), st).run_all()
    _, b = Simulation(build_model(ref), st).run_all()
    assert np.allclose(a, b, rtol=0, atol=1e-12)


def test_move_point_and_connect_by_dropping():
    s = Session()
    sk = s.sketch
    sk.set_default(snap=False)
    sk.set_tool("link")
    sk.link_click(0.0, 0.0, None)            # new ground pivot at the origin
    sk.link_click(1.0, 0.0, None)            # link A
    sk.cancel_chain()
    sk.set_tool("pivot")
    sk.place_pivot(1.0, -1.0)
    assert len(s.document.pivots) == 1
    sk.set_tool("select")
    pts = sk.points()
    tip = next(k for k, p in enumerate(pts) if np.allclose(p.pos, (1, 0, 0)))
    pivot = next(k for k, p in enumerate(pts) if p.pivot is not None)
    # drop the free tip of A onto the pivot: A is pinned to ground there
    assert sk.move_point(tip, 1.0, -1.0, pivot)
    spec = s.document.spec
    assert len(spec.joints) == 2 and spec.joints[1].parent == "ground"
    assert s.document.validation.summary.loops == 1
    s.document.undo_stack.undo()
    assert len(s.document.spec.joints) == 1


def test_delete_selection_and_planes():
    s = Session()
    s.document.replace(g.fourbar())
    s.document.select(Selection("body", "B"))
    assert s.sketch.delete_selection()
    assert [b.name for b in s.document.spec.bodies] == ["A", "C"]
    # the XZ plane draws at y = 0 with revolute axes along y
    s2 = Session()
    s2.sketch.set_plane("xz")
    s2.sketch.set_tool("link")
    s2.sketch.link_click(0.0, 0.0, None)
    s2.sketch.link_click(1.0, 0.0, None)
    j = s2.document.spec.joints[0]
    assert j.axis == PLANES["xz"].n
    assert len(sketch_points(s2.document.spec)) == 2
