"""The 3-D view: subscriptions, poses from the run, trail, camera, pictures."""

import numpy as np
import pytest

from linkwork.engine import generators as g

from linkwork.app.session import Session
from linkwork.app.session.document import Selection
from linkwork.app.session.simulate import RunControl, simulation_items

pytestmark = pytest.mark.gl


@pytest.fixture
def scene(qapp):
    from linkwork.app.vispy.scene import MechanismScene

    s = Session()
    s.document.replace(g.fourbar())
    sc = MechanismScene(s, size=(320, 240), offscreen=True)
    yield sc
    if sc.subscriptions:
        sc.close()


def _run(session, t_end=0.5):
    session.solver.update(t_end=t_end)
    run = session.prepare_run()
    for it in simulation_items(run.model, run.settings, RunControl()):
        if hasattr(it, "rows"):
            run.append(it.rows, it.stats)
    run.set_status("finished")
    session.playback.set_live(False)
    return run


def test_subscribes_when_created_and_unsubscribes_on_close(scene):
    s = scene.session
    n = len(s.document.state_changed.callbacks) + len(s.playback.time_changed.callbacks)
    assert scene.subscriptions >= 5
    scene.close()
    assert scene.subscriptions == 0
    assert len(s.document.state_changed.callbacks) + len(s.playback.time_changed.callbacks) < n


def test_renders_a_picture_that_follows_playback_time(scene):
    img0 = scene.render_frame((320, 240))
    assert img0.shape == (240, 320, 4)
    assert len(np.unique(img0.reshape(-1, 4), axis=0)) > 30
    s = scene.session
    run = _run(s)
    s.playback.set_time(run.t_last)
    scene._draw_now()
    img1 = scene.render_frame((320, 240))
    assert np.abs(img1.astype(float) - img0.astype(float)).mean() > 0.5
    # the poses are the run's row at that time
    x, R = scene.current_poses()
    row = run.data[-1]
    assert np.allclose(x[0], row[1:4])


def test_selection_highlight_and_rebuild_on_edit(scene):
    s = scene.session
    before = scene.bodies._col if hasattr(scene.bodies, "_col") else None
    s.document.select(Selection("body", "B"))
    cols = scene._colors
    start, end = scene._meshes.body_vertex_range[1]
    assert np.allclose(cols[start, :3], (0.96, 0.52, 0.09))
    from linkwork.app.session import edits

    s.document.edit("longer", edits.set_rod_length(s.document.spec, "A", 1.5))
    assert scene._spec is s.document.spec


def test_trail_of_a_body_and_a_joint(scene):
    s = scene.session
    run = _run(s)
    s.playback.set_time(run.t_last)
    scene.set_trail(("body", "B"))
    pts = scene.trail_points()
    assert pts.shape == (run.n_rows, 3)
    assert np.allclose(pts[:, 0], run.column("B.x"))
    scene.set_trail(("joint", "J2"))
    pts = scene.trail_points()
    # J2 stays at the crank tip: distance 1 from the origin
    assert np.allclose(np.linalg.norm(pts[:, :2], axis=1), 1.0, atol=1e-6)
    scene.set_trail(None)
    assert not scene.trail.visible


def test_camera_presets_and_fit(scene):
    scene.reset_camera("front")
    assert scene.camera.elevation == 0 and scene.camera.azimuth == 90
    lo, hi = scene.fit_bounds()
    assert np.all(hi >= lo) and hi[0] - lo[0] >= 1.0
    scene.reset_camera("top")
    assert scene.camera.elevation == 90


def test_empty_mechanism_draws_nothing(qapp):
    from linkwork.app.vispy.scene import MechanismScene

    s = Session()
    sc = MechanismScene(s, size=(200, 150), offscreen=True)
    try:
        assert not sc.bodies.visible
        img = sc.render_frame((200, 150))
        assert img.shape == (150, 200, 4)
    finally:
        sc.close()


def test_a_gear_is_drawn_as_a_link_between_its_joints(qapp):
    """The geared arm: one gear link from the motor joint to the elbow, at the anchors at
    t = 0, following the bodies during a run, drawn over the bodies (visible in the picture)."""
    from linkwork.app.vispy.scene import MechanismScene

    s = Session()
    spec = g.geared_arm()
    s.document.replace(spec)
    sc = MechanismScene(s, size=(320, 240), offscreen=True)
    try:
        pts = sc.gear_segment_points()
        assert np.allclose(pts, [spec.joint("motor").anchor, spec.joint("elbow").anchor])
        assert sc.gears.visible
        img = sc.render_frame((320, 240)).astype(float)
        sc.gears.visible = False
        plain = sc.render_frame((320, 240)).astype(float)
        sc.gears.visible = True
        assert (np.abs(img - plain).sum(axis=2) > 30).sum() > 20  # the link's pixels
        run = _run(s, t_end=0.3)
        s.playback.set_time(run.t_last)
        sc._draw_now()
        moved = sc.gear_segment_points()
        assert np.abs(moved - pts).max() > 1e-3
        # still between the joints: the elbow's marker point is the forearm's anchor end
        x, R = sc.current_poses()
        k = [b.name for b in spec.bodies].index("forearm")
        fore = spec.body("forearm")
        local = np.asarray(spec.joint("elbow").anchor) - np.asarray(fore.position)
        assert np.allclose(moved[1], x[k] + R[k] @ local, atol=1e-9)
        # no gears: nothing drawn
        s.document.replace(g.fourbar())
        assert not sc.gears.visible and len(sc.gear_segment_points()) == 0
    finally:
        sc.close()


def test_the_trail_of_a_long_run_reads_evenly_spaced_rows(scene, monkeypatch):
    from linkwork.app.vispy import scene as scene_module

    monkeypatch.setattr(scene_module, "TRAIL_POINTS", 10)
    s = scene.session
    run = _run(s)
    assert run.n_rows > 20
    s.playback.set_time(run.t_last)
    scene.set_trail(("body", "B"))
    pts = scene.trail_points()
    rows = np.unique(np.append(np.linspace(0, run.n_rows - 1, 10).astype(np.int64), run.n_rows - 1))
    assert pts.shape == (len(rows), 3) and len(rows) <= 11
    assert np.array_equal(pts[:, 0], np.asarray(run.column("B.x"))[rows])
    assert pts[-1, 0] == run.column("B.x")[-1]
