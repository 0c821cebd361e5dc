"""Entry point of the desktop bundle (packaging/linkwork.spec): the ``linkwork`` command."""

import sys

from linkwork.cli import main

if __name__ == "__main__":
    sys.exit(main())
