"""The ``pyticdc`` command: one sub-command per module in this package."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["main"]

#: sub-command → module under pyticdc.cli defining ``add_parser(subparsers)``.
COMMANDS: Final = ("vectors", "demo", "selftest", "decode", "inspect", "capture", "convert", "produce", "replicate")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available sub-command."""
    from pyticdc import __version__

    parser = argparse.ArgumentParser(
        prog="pyticdc", description="TiCDC Kafka protocols: decode, inspect, convert, produce, replicate.")
    parser.add_argument("--version", action="version", version=f"pyticdc {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"pyticdc.cli.{name}_command")
        except ModuleNotFoundError as exc:
            if exc.name == f"pyticdc.cli.{name}_command":
                continue
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return status
