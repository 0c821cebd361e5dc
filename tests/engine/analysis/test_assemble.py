"""Assembly of a rough drawing (engine/analysis/assemble.py, ``linkwork assemble``)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from linkwork.engine.analysis.assemble import assemble, drawing, drawing_from_dict
from linkwork.engine.analysis.mobility import joint_rate_row, labelled_jacobian
from linkwork.engine.cli import main
from linkwork.engine.constraints import constraint_jacobian
from linkwork.engine.forces import force_arrays, joint_coordinate
from linkwork.engine.mechfile import load
from linkwork.engine.model import PRISMATIC, REVOLUTE, build_model
from linkwork.engine.results import read_csv

from ..conftest import example_path
from .fourbars import four_bar as four_bar_dict


def _rot(w):
    """Rodrigues, written out here (the module has its own)."""
    th = np.linalg.norm(w)
    k = w / th
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def _perturbed(name, seed=7, move=0.05, turn=np.radians(5.0)):
    """The example's drawing with every body moved by ``move`` and turned by ``turn``
    in seeded random directions (the joint geometry stays each body's own)."""
    d = drawing(load(example_path(name)))
    m = d.model
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(m.nb, 3))
    w = rng.normal(size=(m.nb, 3))
    x = m.x0 + move * u / np.linalg.norm(u, axis=1)[:, None]
    R = np.array([_rot(turn * w[i] / np.linalg.norm(w[i])) @ m.R0_body[i] for i in range(m.nb)])
    return d, replace(d, model=replace(m, x0=x, R0_body=R))


def _free_joints(model):
    """One-freedom joints, in order, whose rates complete the constraint rows' rank (holding
    them fixes the configuration), or None when the freedoms left are in other joints."""
    A, _ = labelled_jacobian(model, model.x0, model.R0_body)
    rank = np.linalg.matrix_rank(A)
    out = []
    for j in range(model.nj):
        if model.jtype[j] in (REVOLUTE, PRISMATIC) and rank < 6 * model.nb:
            B = np.vstack([A, joint_rate_row(model, j, model.x0, model.R0_body)])
            if np.linalg.matrix_rank(B) > rank:
                A, rank = B, rank + 1
                out.append(j)
    return out if rank == 6 * model.nb else None


@pytest.mark.parametrize("name", ["fourbar-crank-rocker", "loop-8", "ladder-4"])
def test_perturbed_example_closes_on_the_drawn_branch(name):
    original, d = _perturbed(name)
    m0, m = original.model, d.model
    a = assemble(d)
    _, phi, _ = constraint_jacobian(m, a.x, a.R)
    assert np.abs(phi).max() <= 1e-12 and a.closure <= 1e-12
    assert a.gap_drawn > 0.05  # the perturbation opened the loops
    # near the drawing: no body moved much more than the perturbation, and the result is at
    # least as near the drawing (mass metric) as the original, a closed pose on the drawn branch
    assert a.translation.max() < 0.15 and a.rotation.max() < 15.0
    assert _distance(m, a.x, a.R) <= _distance(m, m0.x0, m0.R0_body)
    assert np.abs(a.x - m0.x0).max() < 0.1
    # on the drawn branch: holding the free joints at the original's coordinates gives back
    # the original configuration itself (another branch would give other poses)
    fa = force_arrays(m)
    free = _free_joints(m0)
    if free is None:  # ladder-4: a freedom left in a universal joint
        return
    fix = {m.joint_names[j]: -joint_coordinate(fa, j, m.x0, m.R0_body, 0.0) for j in free}
    b = assemble(d, fix)
    assert np.abs(b.x - m0.x0).max() <= 1e-9
    assert np.abs(b.R - m0.R0_body).max() <= 1e-9


def _distance(m, x, R):
    """Mass-metric distance of the poses ``x``, ``R`` from the drawing ``m.x0``, ``m.R0_body``."""
    from scipy.spatial.transform import Rotation

    s = 0.0
    for i in range(m.nb):
        th = Rotation.from_matrix(R[i] @ m.R0_body[i].T).as_rotvec()
        s += m.mass[i] * np.sum((x[i] - m.x0[i]) ** 2) + th @ (R[i] @ m.inertia[i] @ R[i].T) @ th
    return np.sqrt(s)


def _side(p, q, r):
    """Sign of the turn p -> q -> r about z."""
    return np.sign(np.cross(q - p, r - q)[2])


def test_four_bar_keeps_the_sign_of_its_coupler_rocker_angle():
    original, d = _perturbed("fourbar-crank-rocker", seed=3)
    m0, m = original.model, d.model
    a = assemble(d)

    def points(x, R):
        j2, j3, j4 = (m.joint_index(n) for n in ("J2", "J3", "J4"))
        return [x[m.succ[j]] + R[m.succ[j]] @ m.anchor_succ[j] for j in (j2, j3)] + [m.anchor_pred[j4]]

    assert _side(*points(a.x, a.R)) == _side(*points(m0.x0, m0.R0_body)) != 0


def _rough_file(tmp_path, name="fourbar-crank-rocker", seed=11, planar=True, move=0.04, turn=np.radians(4.0)):
    """The example drawn roughly: every body moved by ``move`` and turned by ``turn`` (in
    its plane when ``planar``), each joint's parent end (``anchor``, ``axis``, a universal's
    ``axes``) carried by the parent, its child end (``child_anchor``, ``child_axis``) by
    the child."""
    from scipy.spatial.transform import Rotation

    data = json.loads(example_path(name).read_text())
    rng = np.random.default_rng(seed)
    motion = {}
    for b in data["bodies"]:
        u, w = rng.normal(size=3), rng.normal(size=3)
        if planar:
            u[2], w[:2] = 0.0, 0.0
        c, dx = np.array(b["position"]), move * u / np.linalg.norm(u)
        rot = Rotation.from_rotvec(turn * w / np.linalg.norm(w))
        motion[b["name"]] = (c, dx, rot)
        q = b.get("orientation", [1.0, 0.0, 0.0, 0.0])
        x, y, z, qw = (rot * Rotation.from_quat([q[1], q[2], q[3], q[0]])).as_quat()
        b["position"], b["orientation"] = list(c + dx), [qw, x, y, z]
        b.pop("shape", None)

    def point(body, p):
        if body not in motion:
            return list(p)
        c, dx, rot = motion[body]
        return list(c + dx + rot.apply(np.asarray(p) - c))

    def axis(body, a):
        return list(motion[body][2].apply(a)) if body in motion else list(a)

    for j in data["joints"]:
        p = j["anchor"]
        j["anchor"], j["child_anchor"] = point(j["parent"], p), point(j["child"], p)
        if "axis" in j:
            j["axis"], j["child_axis"] = axis(j["parent"], j["axis"]), axis(j["child"], j["axis"])
        if "axes" in j:
            a1, a2 = j["axes"]
            j["axes"], j["child_axis"] = [axis(j["parent"], a1), axis(j["parent"], a2)], axis(j["child"], a2)
    for f in data.get("forces", []):
        if f["type"] == "spring":
            f["point1"], f["point2"] = point(f["body1"], f["point1"]), point(f["body2"], f["point2"])
    path = tmp_path / f"rough-{name}.mech.json"
    path.write_text(json.dumps(data))
    return path


def _link_lengths(spec):
    """Distance between each body's two joint anchors (the file's closed geometry)."""
    ends = {b.name: [] for b in spec.bodies}
    for j in spec.joints:
        for b in (j.parent, j.child):
            if b in ends:
                ends[b].append(np.array(j.anchor))
    return {b: float(np.linalg.norm(p[1] - p[0])) for b, p in ends.items()}


def test_cli_writes_a_closed_file_that_runs(tmp_path, capsys):
    rough = _rough_file(tmp_path)
    d = drawing_from_dict(json.loads(rough.read_text()))
    assert len(d.gaps) == 4
    out = tmp_path / "closed.mech.json"
    assert main(["assemble", str(rough), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "moved" in text and "deg" in text and "closure max |Phi|" in text
    closed = load(out)
    # the drawn links kept their lengths: crank 0.4, coupler 1.2, rocker 0.9 (the example's)
    L = _link_lengths(closed)
    assert L["A"] == pytest.approx(0.4, abs=1e-12)
    assert L["B"] == pytest.approx(1.2, abs=1e-12)
    assert L["C"] == pytest.approx(0.9, abs=1e-12)
    csv = tmp_path / "run.csv"
    assert main(["run", str(out), "--formulation", "dense", "--t-end", "0.02", "--out", str(csv)]) == 0
    header, rows = read_csv(csv)
    assert rows[0, header.index("violation.position")] <= 1e-12


def test_fix_moves_the_crank_and_holds_it(tmp_path, capsys):
    out = tmp_path / "turned.mech.json"
    src = example_path("fourbar-crank-rocker")
    assert main(["assemble", str(src), "--fix", "J1=0.5", "--out", str(out)]) == 0
    capsys.readouterr()
    before, after = load(src), load(out)
    # the crank's tip (J2) turned 0.5 rad about the crank pivot at the origin
    p0, p1 = np.array(before.joint("J2").anchor), np.array(after.joint("J2").anchor)
    assert np.arctan2(p1[1], p1[0]) - np.arctan2(p0[1], p0[0]) == pytest.approx(0.5, abs=1e-12)
    assert _link_lengths(after) == pytest.approx(_link_lengths(before), abs=1e-12)
    assert np.allclose(after.joint("J4").anchor, before.joint("J4").anchor, atol=1e-15)


def test_impossible_four_bar_is_refused_with_grashof_numbers(tmp_path, capsys):
    path = tmp_path / "long.mech.json"
    path.write_text(json.dumps(four_bar_dict(1.0, 0.4, 0.5, 3.0)))
    assert main(["assemble", str(path), "--out", str(tmp_path / "never.mech.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("linkwork: ")
    assert "l = 3 > s + p + q = 1.9" in err and "longest link is longer than the other three" in err
    assert not (tmp_path / "never.mech.json").exists()


def test_unreachable_held_joint_is_refused(tmp_path, capsys):
    # the crank-rocker's rocker C swings through less than a half turn: 1.5 rad further is out of reach
    src = example_path("fourbar-crank-rocker")
    assert main(["assemble", str(src), "--fix", "J4=1.5", "--out", str(tmp_path / "x.mech.json")]) == 2
    err = capsys.readouterr().err
    assert "cannot close with J4 = 1.5 held" in err and "s + l = 0.4 + 1.2 = 1.6 < p + q" in err
    assert main(["assemble", str(src), "--fix", "J9=1", "--out", str(tmp_path / "x.mech.json")]) == 2
    assert "no joint named 'J9'" in capsys.readouterr().err


def _joint_geometry(spec):
    """Each body's distances between its joint points (sorted), the geometry assembly keeps."""
    pts = {b.name: [] for b in spec.bodies}
    for j in spec.joints:
        for b in (j.parent, j.child):
            if b in pts:
                pts[b].append(np.array(j.anchor))
    return {b: sorted(float(np.linalg.norm(p - q)) for i, p in enumerate(v) for q in v[i + 1:])
            for b, v in pts.items()}


def test_spatial_rough_ladder_keeps_its_geometry(tmp_path, capsys):
    """ladder-4 drawn roughly in 3-D (universal joints' a2 carried by the child): the closed
    file holds every body's joint points at the original's distances."""
    rough = _rough_file(tmp_path, "ladder-4", seed=5, planar=False, move=0.05, turn=np.radians(5.0))
    out = tmp_path / "closed.mech.json"
    assert main(["assemble", str(rough), "--out", str(out)]) == 0
    capsys.readouterr()
    closed, original = load(out), load(example_path("ladder-4"))
    got, want = _joint_geometry(closed), _joint_geometry(original)
    for b in want:
        assert got[b] == pytest.approx(want[b], abs=1e-12)
    m = build_model(closed)
    _, phi, _ = constraint_jacobian(m, m.x0, m.R0_body)
    assert np.abs(phi).max() <= 1e-12


def test_joint_spring_rest_follows_the_held_joint(tmp_path, capsys):
    # the spring on J1 gives the same torque at the new start as the original at that pose
    out = tmp_path / "sprung.mech.json"
    assert main(["assemble", str(example_path("sprung-parallelogram")), "--fix", "J1=0.3", "--out", str(out)]) == 0
    capsys.readouterr()
    assert load(out).forces[0].rest == pytest.approx(0.0 - 0.3, abs=1e-12)
