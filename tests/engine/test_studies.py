"""``linkwork study`` (engine/studies/command.py and a module per study): the commands
run, write their reports, and the numbers in them are the measured ones (smoke
versions: --quick)."""

import json

import pytest

from linkwork.engine.cli import main


@pytest.mark.slow
def test_hdca_vs_dca_quick(tmp_path):
    assert main(["study", "hdca-vs-dca", "--quick", "--repeat", "1", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "hdca-vs-dca.md").read_text()
    for png in ("energy", "violation-velocity", "violation-position", "violation-position-long", "symmetry",
                "wall-ratio", "nfev-ratio",
                "drift-ratio"):
        assert (tmp_path / "hdca-vs-dca" / f"{png}.png").stat().st_size > 10_000
        assert f"hdca-vs-dca/{png}.png" in report
    data = json.loads((tmp_path / "hdca-vs-dca" / "results.json").read_text())
    assert set(data["cases"]) == {"case 1", "case 2", "case 3"}
    for case in data["cases"].values():
        assert len(case["sweep"]) == 2 * 3 * 2  # formulations x integrators x tolerances
        h = case["history"]
        assert h["hdca/rk45"]["violation_velocity_max"] < 1e-10 < h["dca/rk45"]["violation_velocity_max"]
        assert all(r["failure"] is None and r["nfev"] > 0 and r["wall_s"] > 0 for r in case["sweep"])
        assert case["rhs_time_s"]["dca"] > 0 and case["rhs_time_s"]["hdca"] > 0


@pytest.mark.slow
def test_dca_drift_quick(tmp_path):
    assert main(["study", "dca-drift", "--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "dca-drift" / "violation-position.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "dca-drift" / "results.json").read_text())
    assert len(data["runs"]) == 4
    assert all(r["violation_position_end"] > 0 for r in data["runs"])


def test_study_list_and_refusals(capsys, tmp_path):
    assert main(["study", "list"]) == 0
    assert "hdca-vs-dca" in capsys.readouterr().out
    assert main(["study", "no-such-study"]) == 2
    assert main(["study", "dca-drift", "--repeat", "0", "--out", str(tmp_path)]) == 2


@pytest.mark.slow
def test_index3_quick(tmp_path):
    assert main(["study", "index3", "--quick", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "index3.md").read_text()
    assert not (tmp_path / "index3" / "index3.md").exists()
    for png in ("index3_double_pendulum", "index3_fourbar", "index3_chain128", "index3_scaling"):
        assert (tmp_path / "index3" / f"{png}.png").stat().st_size > 10_000
        assert f"](index3/{png}.png)" in report
    assert "Quick run" in report and "## Timing" in report and "## Scaling" in report
    assert json.loads((tmp_path / "index3" / "results.json").read_text())["study"] == "index3"


@pytest.mark.slow
def test_study_without_out_writes_to_the_current_folder_not_the_checkout(tmp_path, monkeypatch):
    """Without ``--out`` a study writes into ``linkwork-studies/`` in the current folder, never into
    the checkout's tracked docs/studies."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[2] / "docs" / "studies" / "dca-drift.md"
    before = committed.read_bytes() if committed.exists() else None
    monkeypatch.chdir(tmp_path)
    assert main(["study", "dca-drift", "--quick"]) == 0
    assert (tmp_path / "linkwork-studies" / "dca-drift.md").is_file()
    assert (tmp_path / "linkwork-studies" / "dca-drift" / "results.json").is_file()
    if before is not None:
        assert committed.read_bytes() == before


@pytest.mark.slow
def test_embedding_quick(tmp_path):
    """The cost study measures every formulation on both series in one run."""
    assert main(["study", "embedding", "--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "embedding" / "cost.png").stat().st_size > 10_000
    assert "embedding/cost.png" in (tmp_path / "embedding.md").read_text()
    data = json.loads((tmp_path / "embedding" / "results.json").read_text())
    for series in ("tree", "loop"):
        assert len(data[series]) == 3 and not data["failed"][series]
        assert all(r[f] > 0 for r in data[series] for f in ("embedding", "rcr", "dca", "hdca", "dense"))
