"""What every command of the command line shares: the exit statuses of the contract,
an argument parser that refuses with status 2 and one line, the refusal itself, and
number arguments with a clear message (``linkwork run``, ``assemble``, ``import`` ...)."""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_REFUSED, EXIT_FAILED, EXIT_INTERRUPTED = 0, 2, 3, 130


class Parser(argparse.ArgumentParser):
    """argparse that exits with status 2 and a one-line message (refused options)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"linkwork: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_REFUSED)


def refuse(msg: str) -> int:
    """Say why on stderr, one line; the refusal's exit status."""
    print(f"linkwork: {msg}", file=sys.stderr)
    return EXIT_REFUSED


def float_arg(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
