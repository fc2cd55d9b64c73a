"""The ``pyticdc`` command: one sub-command per module in this package (flags shared: :mod:`pyticdc.cli.common`)."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

__all__ = ["main"]

#: sub-command → module under pyticdc.cli defining ``add_parser(subparsers)``.
COMMANDS: Final = ("vectors", "demo", "selftest", "decode", "inspect", "capture", "convert", "produce", "replicate",
                   "maintain", "broker")


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (and exit status 2), pointing at ``--help``."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def version_text() -> str:
    """``pyticdc VERSION (C helpers: …)``: the version, and whether the codecs' C helpers are in use."""
    from pyticdc import __version__
    from pyticdc.codec import _fastpath

    if _fastpath.native() is not None:
        helpers = "on"
    elif _fastpath._NATIVE is not None:
        helpers = "off, PYTICDC_PURE_PYTHON is set"
    else:
        helpers = "not built, no C compiler at install"
    return f"pyticdc {__version__} (C helpers: {helpers})"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available sub-command."""
    parser = CommandParser(
        prog="pyticdc", description="TiCDC Kafka protocols: decode, inspect, convert, produce, replicate.")
    parser.add_argument("--version", action="version", version=version_text())
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


def entry() -> None:
    """The ``pyticdc`` program: run the command line and exit with its status."""
    status = main()
    if "pyspark" in sys.modules:
        # After a Spark job (above all a streaming one), PySpark's callback-server threads and
        # Arrow's native thread pools outlive the command; their teardown at interpreter exit can
        # abort the process (exit 134) after the work is done and committed. Output is flushed,
        # so leave without that teardown.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing more to say there
                pass
        os._exit(status)
    sys.exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        # Said by the sub-command's parser, so the message names the command whose --help to read.
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        commands.choices.get(getattr(args, "command", None) or "", parser).error(
            f"unrecognized arguments: {' '.join(extras)}")
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception:
        if _spark_interrupted():  # the Spark call failed because Ctrl-C cancelled its job
            return _interrupted()
        raise
    except BrokenPipeError:
        # The reader of stdout went away (``| head``): stop quietly, and keep the interpreter's final flush quiet.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout without a file descriptor (captured): nothing to flush there
            pass
        return 0
    if _spark_interrupted():
        # Ctrl-C cancelled a Spark job the command then reported as failed: the cause is the interrupt.
        return _interrupted()
    return status


def _interrupted() -> int:
    if _spark_interrupted():
        # A SIGINT the Spark interrupt handler re-delivers must not land in the exit path as a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("interrupted", file=sys.stderr)
    return 130


def _spark_interrupted() -> bool:
    # Never imports Spark: only a process that started a session can have had a Spark job cancelled.
    session = sys.modules.get("pyticdc.spark.session")
    return bool(session is not None and session.interrupted())
