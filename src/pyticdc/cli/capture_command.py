"""``pyticdc capture``: copy a topic's records (all partitions, an offset range) from Kafka to a capture file.

    pyticdc capture --bootstrap-servers broker:9092 --topic cdc out.jsonl
    pyticdc capture -b broker:9092 -t cdc --starting-offsets '{"cdc": {"0": 100}}' --format parquet out.parquet

Options
    ``-b/--bootstrap-servers``   Kafka brokers (required)
    ``-t/--topic``               topic to copy; repeat or comma-separate for several
    ``--starting-offsets``       ``earliest`` (default) | ``latest`` | Spark JSON ``{"topic": {"0": 42}}``
    ``--ending-offsets``         ``latest`` (default, the high watermark when the copy starts) | Spark JSON
    ``--format``                 ``auto`` (default: ``parquet`` for a .parquet name, else ``jsonl``; a .gz name
                                 is gzip-compressed) | ``jsonl`` | ``parquet``
    ``-X name=value``            any librdkafka setting (``security.protocol``, ``sasl.username``, ...)
    ``--poll-timeout``           seconds without data before giving up on a partition (default 60)
    ``-q/--quiet``               no progress bar

Partitions are copied one after another, each in offset order, so the file keeps TiCDC's per-partition order
(and the stateful Simple decoder can replay it). A progress bar on stderr shows records, rate and ETA.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Progress", "add_parser", "client_settings"]


def client_settings(pairs: list[str] | None) -> dict[str, str]:
    """librdkafka settings from ``-X name=value`` arguments."""
    settings: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"-X expects name=value, got {pair!r}")
        settings[name.strip()] = value.strip()
    return settings


def add_parser(subparsers: Any) -> None:
    """Register ``capture``."""
    parser = subparsers.add_parser(
        "capture", help="copy Kafka records (all partitions, an offset range) to a capture file",
        description="Copy a topic's records from Kafka to a capture file (JSON Lines or Parquet).")
    parser.add_argument("output", type=Path, help="capture file to write (.jsonl, .jsonl.gz or .parquet)")
    parser.add_argument("-b", "--bootstrap-servers", required=True, help="Kafka brokers, host:port[,...]")
    parser.add_argument("-t", "--topic", action="append", required=True, help="topic (repeatable, or a,b)")
    parser.add_argument("--starting-offsets", default="earliest", help="earliest | latest | Spark offsets JSON")
    parser.add_argument("--ending-offsets", default="latest", help="latest | Spark offsets JSON")
    parser.add_argument("--format", default="auto", choices=("auto", "jsonl", "parquet"), help="capture format")
    parser.add_argument("-X", dest="settings", action="append", metavar="NAME=VALUE", help="librdkafka setting")
    parser.add_argument("--poll-timeout", type=float, default=60.0, help="seconds to wait for data (default 60)")
    parser.add_argument("--fail-on-data-loss", default="true", choices=("true", "false"),
                        help="fail when requested offsets were deleted (default true)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=run_capture)


class Progress:
    """A one-line progress bar on a terminal (a line every ~10 % otherwise): count, rate and ETA."""

    def __init__(self, total: int, label: str = "records", stream: TextIO | None = None, *,
                 enabled: bool = True) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.count = 0
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._last_decile = -1
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def advance(self, step: int = 1) -> None:
        """Count ``step`` more items and redraw at most 10 times a second."""
        self.count += step
        if not self.enabled:
            return
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw >= 0.1 or self.count >= self.total:
                self._last_draw = now
                self._draw(now, end="\r")
        elif self.total:
            decile = min(10, self.count * 10 // self.total)
            if decile > self._last_decile:
                self._last_decile = decile
                self._draw(now, end="\n")

    def _draw(self, now: float, end: str) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.count / elapsed
        if self.total:
            fraction = min(1.0, self.count / self.total)
            filled = int(fraction * 30)
            bar = "#" * filled + "-" * (30 - filled)
            remaining = (self.total - self.count) / rate if rate > 0 and self.count < self.total else 0.0
            text = (f"[{bar}] {self.count}/{self.total} {self.label} {fraction:4.0%} "
                    f"{rate:,.0f}/s ETA {remaining:,.0f}s")
        else:
            text = f"{self.count} {self.label} {rate:,.0f}/s"
        self.stream.write(text + end)
        self.stream.flush()

    def close(self) -> None:
        """Finish the line."""
        if self.enabled and self._tty:
            self._draw(time.monotonic(), end="\n")


def run_capture(args: argparse.Namespace) -> int:
    """Copy the ranges; print a summary line. Exit 2 on a configuration or Kafka error."""
    from pyticdc.capture import CaptureError, CaptureWriter
    from pyticdc.kafka import KafkaReadError, offset_ranges, read_range
    from pyticdc.model import ConfigError

    config = {**client_settings(args.settings), "bootstrap.servers": args.bootstrap_servers}
    topics = ",".join(args.topic)
    fail_on_data_loss = args.fail_on_data_loss == "true"
    try:
        ranges = offset_ranges(config, subscribe=topics, starting=args.starting_offsets, ending=args.ending_offsets,
                               fail_on_data_loss=fail_on_data_loss)
        total = sum(r.size for r in ranges)
        progress = Progress(total, enabled=not args.quiet)
        started = time.monotonic()
        with CaptureWriter(args.output, args.format) as writer:
            for offset_range in ranges:
                for record in read_range(config, offset_range, poll_timeout=args.poll_timeout,
                                         fail_on_data_loss=fail_on_data_loss):
                    writer.write(record)
                    progress.advance()
        progress.close()
    except (ConfigError, KafkaReadError, CaptureError) as exc:
        print(f"pyticdc capture: {exc}", file=sys.stderr)
        return 2
    elapsed = time.monotonic() - started
    partitions = sum(1 for r in ranges if r.size)
    print(f"captured {writer.count} records from {partitions} partitions of {topics} to {args.output} "
          f"({writer.format}) in {elapsed:.1f}s", file=sys.stderr)
    return 0
