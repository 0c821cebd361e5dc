import json
from pathlib import Path

import pytest

from engine.paths import examples_dir

EXAMPLES = sorted(examples_dir().glob("*.mech.json"))


@pytest.fixture
def fourbar_dict():
    return json.loads((examples_dir() / "parallelogram-fourbar.mech.json").read_text())


def example_path(name: str) -> Path:
    return examples_dir() / f"{name}.mech.json"
