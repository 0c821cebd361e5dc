"""``linkwork import`` and ``linkwork export --mjcf`` on the command line (docs/import.md):
files written, warnings on stderr one per kind, refusals in one line with exit 2."""

import json
import subprocess
import sys

import pytest

from linkwork.engine.mechfile import load

from ..conftest import example_path
from .conftest import MODELS

CMD = [sys.executable, "-m", "linkwork.engine.cli"]


def run(*args):
    return subprocess.run(CMD + [str(a) for a in args], capture_output=True, text=True)


def test_import_writes_a_mechanism_file_and_names_what_it_leaves_out(tmp_path):
    pytest.importorskip("mujoco")
    out = tmp_path / "unsupported.mech.json"
    r = run("import", MODELS / "unsupported.xml", "--out", out)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("linkwork: warning: ")]
    for kind in ("free joints", "actuators", "tendons", "sensors", "joint ranges", "contacts"):
        assert sum(w.startswith(f"linkwork: warning: {kind}") for w in warnings) == 1, (kind, r.stderr)
    assert "Traceback" not in r.stderr
    spec = load(out)
    assert [b.name for b in spec.bodies] == ["pendulum"]


def test_import_to_stdout_with_a_keyframe():
    pytest.importorskip("mujoco")
    r = run("import", MODELS / "defaults_include.xml", "--keyframe", "bent")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["format"] == "linkwork-mechanism" and len(d["bodies"]) == 4
    assert {j["type"] for j in d["joints"]} == {"revolute", "spherical", "universal"}


@pytest.mark.parametrize("args, words", [
    (["only_free.xml"], "nothing left to simulate"),
    (["fourbar.xml", "--keyframe", "nope"], "no keyframe 'nope'"),
    (["no-such-file.xml"], "no such file"),
])
def test_import_refusals_are_one_line(args, words):
    pytest.importorskip("mujoco")
    r = run("import", MODELS / args[0], *args[1:])
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith("linkwork: "), r.stderr


def test_a_file_mujoco_refuses_is_one_line(tmp_path):
    pytest.importorskip("mujoco")
    bad = tmp_path / "bad.xml"
    bad.write_text('<mujoco><worldbody><body><joint type="spiral"/></body></worldbody></mujoco>')
    r = run("import", bad)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "MuJoCo cannot read bad.xml" in r.stderr and "spiral" in r.stderr


def test_import_without_mujoco_says_how_to_install_it():
    """MuJoCo hidden from the interpreter: one line with the pip command, exit 2."""
    code = ("import sys; sys.modules['mujoco'] = None; from linkwork.engine.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "import", str(MODELS / "fourbar.xml")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == "linkwork: linkwork import needs MuJoCo: pip install 'linkwork[import]'"


def test_help_answers_without_heavy_imports():
    code = ("import sys; from linkwork.engine.cli import main; rc = main(sys.argv[1:]); "
            "heavy = sorted(m for m in ('numba', 'scipy', 'numpy', 'mujoco') if m in sys.modules); "
            "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)")
    for args in (["import", "--help"], ["export", "--help"]):
        r = subprocess.run([sys.executable, "-c", code] + args, capture_output=True, text=True)
        assert r.returncode == 0 and "HEAVY []" in r.stderr, (args, r.stderr)


def test_export_writes_mjcf_that_mujoco_compiles(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    out = tmp_path / "zoo.xml"
    r = run("export", example_path("joint-zoo"), "--mjcf", out)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr and "Traceback" not in r.stderr
    m = mujoco.MjModel.from_xml_path(str(out))
    assert m.nbody == 7 and m.nkey == 1  # world + six bodies; the rates' keyframe
    assert m.ntendon == 1 and m.nu == 4  # the point spring; the torques on the cylindrical and universal joints


def test_export_refusal_is_one_line(tmp_path):
    spec = json.loads(example_path("slider-crank").read_text())
    for j in spec["joints"]:
        j["cut"] = j["type"] == "prismatic"
    path = tmp_path / "cut-slider.mech.json"
    path.write_text(json.dumps(spec))
    r = run("export", path, "--mjcf", tmp_path / "x.xml")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "MJCF has no equality for a prismatic joint" in r.stderr
    assert not (tmp_path / "x.xml").exists()
