"""``pyticdc inspect``: what a topic or capture holds, per table and partition, and what is wrong with it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pyticdc.cli.common import (
    FAILURE,
    REPORTED,
    USAGE,
    add_codec_arguments,
    add_input_arguments,
    add_progress_argument,
    add_raw_arguments,
    counted,
    open_input,
    progress_bar,
    report,
    resolve_codec,
)
from pyticdc.errors import ConfigError

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``inspect``."""
    parser = subparsers.add_parser(
        "inspect", help="summarize a topic or capture: tables, partitions, watermarks, DDL, bad records",
        description="Read TiCDC records from capture files or Kafka and print: tables with operations per table, "
                    "the commit-ts range, each partition's watermark and lag, the DDL timeline and the records "
                    "that do not decode (with offsets and reasons). --plot draws events per second and watermark "
                    "lag over time, one line per partition. Exit status 1 when some records do not decode.")
    add_input_arguments(parser)
    add_raw_arguments(parser)
    add_codec_arguments(parser, detect=True)
    group = parser.add_argument_group("output")
    group.add_argument("--output-format", default="text", choices=("text", "json"),
                       help="print the summary as text tables or as one JSON document (default text)")
    group.add_argument("--plot", type=Path, metavar="FILE.png",
                       help="also draw events per second and watermark lag over time to this PNG (needs matplotlib; "
                            "default: no plot)")
    group.add_argument("--bucket-ms", type=int, metavar="MS",
                       help="width of the events-per-second buckets (default: about 60 buckets over the stream)")
    group.add_argument("--max-bad", type=int, default=1000, metavar="N",
                       help="bad records to keep and list (default 1000)")
    add_progress_argument(parser)
    parser.set_defaults(run=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """Inspect, print the summary (text or JSON), maybe plot; 1 if any record did not decode."""
    import importlib.util

    import orjson

    from pyticdc.inspect.summary import Inspector, format_summary
    from pyticdc.io.capture import BadLine, bad_line_record

    bad_lines: list[BadLine] = []
    try:
        if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
            raise ConfigError("--plot needs matplotlib: pip install 'pyticdc[plot]'")
        # A capture line that is not a record is listed with the bad records; the others are still read.
        source = open_input(args, on_bad_line=bad_lines.append)
        protocol, options, records = resolve_codec(args, source.records)
        inspector = Inspector(protocol, options, max_bad_records=args.max_bad, bucket_ms=args.bucket_ms)
    except REPORTED as exc:
        return report(args, exc, USAGE)
    failure: BaseException | None = None
    try:
        with progress_bar(args, "inspect", source.total) as progress:
            for record in counted(records, progress.update):
                inspector.add(record)
    except REPORTED as exc:
        failure = exc  # reading stopped midway (Kafka, a file): still summarize what was read
    for item in bad_lines:
        inspector.add_unreadable(bad_line_record(item), item.why)
    summary = inspector.summary()
    if args.output_format == "json":
        data = summary.to_builtins()
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    else:
        print(format_summary(summary))
    if args.plot is not None:
        from pyticdc.inspect.plot import plot_summary

        try:
            path = plot_summary(summary, args.plot)
        except (RuntimeError, OSError) as exc:
            return report(args, exc, FAILURE)
        print(f"plot written to {path}", file=sys.stderr)
    if failure is not None:
        return report(args, f"reading stopped early, the summary covers what was read: {failure}", FAILURE)
    bad = len(summary.bad_records) + summary.bad_records_omitted
    if bad:
        return report(args, f"{bad} records did not decode (listed under bad records)", FAILURE)
    return 0
