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
from linkwork.engine.model import PRISMATIC, REVOLUTE
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


def _rough_file(tmp_path):
    """The crank-rocker example drawn roughly in its plane: every body moved 4 cm and
    turned 4 deg about z; each joint's parent end (``anchor``) moves with the parent, its
    child end (``child_anchor``) with the child."""
    data = json.loads(example_path("fourbar-crank-rocker").read_text())
    rng = np.random.default_rng(11)
    motion = {}
    for b in data["bodies"]:
        u = np.r_[rng.normal(size=2), 0.0]
        dx = 0.04 * u / np.linalg.norm(u)
        Rz = _rot(np.array([0.0, 0.0, np.radians(4.0) * rng.choice([-1, 1])]))
        c = np.array(b["position"])
        motion[b["name"]] = lambda p, c=c, dx=dx, Rz=Rz: c + dx + Rz @ (np.asarray(p) - c)
        w, xq, y, z = b["orientation"]
        q = np.array([w, xq, y, z])
        half = np.radians(4.0) / 2 * np.sign(Rz[1, 0])
        qz = np.array([np.cos(half), 0, 0, np.sin(half)])
        b["orientation"] = list(_qmul(qz, q))
        b["position"] = list(c + dx)
        b["shape"]["from"] = list(motion[b["name"]](b["shape"]["from"]))
        b["shape"]["to"] = list(motion[b["name"]](b["shape"]["to"]))
    ident = lambda p: np.asarray(p)  # noqa: E731
    for j in data["joints"]:
        p = np.array(j["anchor"])
        j["anchor"] = list(motion.get(j["parent"], ident)(p))
        j["child_anchor"] = list(motion.get(j["child"], ident)(p))
    path = tmp_path / "rough.mech.json"
    path.write_text(json.dumps(data))
    return path


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


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
