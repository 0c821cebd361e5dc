"""``python -m linkwork``: the same as the ``linkwork`` command."""

import sys

from .cli import main

sys.exit(main())
