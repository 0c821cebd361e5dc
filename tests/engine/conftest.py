import json
from pathlib import Path

import numpy as np
import pytest

from linkwork.engine.paths import examples_dir

EXAMPLES = sorted(examples_dir().glob("*.mech.json"))
#: the examples with gear couplings: dense and embedding honour them, the other
#: formulations refuse them (tests/engine/test_couplings.py)
GEARED = [p for p in EXAMPLES if json.loads(p.read_text()).get("couplings")]
#: the examples with drivers: the formulations that do not honour them refuse them
#: (tests/engine/test_drivers.py)
DRIVEN = [p for p in EXAMPLES if json.loads(p.read_text()).get("drivers")]
#: the examples every formulation runs
UNGEARED = [p for p in EXAMPLES if p not in GEARED and p not in DRIVEN]


@pytest.fixture
def fourbar_dict():
    return json.loads((examples_dir() / "parallelogram-fourbar.mech.json").read_text())


def example_path(name: str) -> Path:
    return examples_dir() / f"{name}.mech.json"


def run_to_end(sim):
    """(rows up to the end or the failure, the SimulationError or None) of ``sim.run()``."""
    from linkwork.engine.errors import SimulationError

    parts, err = [], None
    try:
        for ch in sim.run():
            parts.append(ch.rows)
    except SimulationError as exc:
        err = exc
    rows = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
    return rows, err
