"""``python -m linkwork.engine.generators [DIR]``: write every example to ``DIR`` (default:
the shipped examples folder), one path a line."""

import sys

from ..paths import examples_dir
from .catalogue import write_examples

for p in write_examples(sys.argv[1] if len(sys.argv) > 1 else examples_dir()):
    print(p)
