"""``pyticdc capture``: copy topics' records (all partitions, an offset range) from Kafka to a capture file.

    pyticdc capture -b broker:9092 -t cdc -O out.jsonl
    pyticdc capture -b broker:9092 -t cdc --starting-offsets '{"cdc": {"0": 100}}' -O out.parquet

Input, output and progress flags are the shared ones (:mod:`pyticdc.cli.common`). Partitions are copied
one after another, each in offset order, so the file keeps TiCDC's per-partition order (and the stateful
Simple decoder can replay it).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pyticdc.cli.common import (
    FAILURE,
    REPORTED,
    USAGE,
    add_input_arguments,
    add_output_arguments,
    add_progress_argument,
    check_output,
    counted,
    input_topics,
    open_input,
    progress_bar,
    report,
    write_records,
)

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``capture``."""
    parser = subparsers.add_parser(
        "capture", help="copy Kafka records (all partitions, an offset range) to a capture file",
        description="Copy topics' records from Kafka to a capture file (JSON Lines or Parquet), partition by "
                    "partition in offset order.")
    add_input_arguments(parser, files=False)
    add_output_arguments(parser, kafka=False, required=True)
    add_progress_argument(parser)
    parser.set_defaults(run=run_capture)


def run_capture(args: argparse.Namespace) -> int:
    """Copy the ranges; print a summary line."""
    try:
        check_output(args)
        source = open_input(args)
    except REPORTED as exc:
        return report(args, exc, USAGE)
    started = time.monotonic()
    try:
        with progress_bar(args, "capture", source.total) as progress:
            count, where = write_records(args, counted(source.records, progress.update))
    except REPORTED as exc:
        return report(args, exc, FAILURE)
    partitions = sum(1 for r in source.ranges if r.size)
    print(f"captured {count} records from {partitions} partitions of {', '.join(input_topics(args))} to {where} "
          f"in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return 0
