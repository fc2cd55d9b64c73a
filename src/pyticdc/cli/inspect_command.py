"""``pyticdc inspect``: what a topic or capture holds, per table and partition, and what is wrong with it."""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any

from pyticdc.cli.produce_command import (
    ProgressBar,
    add_kafka_arguments,
    add_progress_argument,
    parse_assignments,
    progress_enabled,
    read_records,
    report_error,
)
from pyticdc.model import PyticdcError

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``inspect``."""
    parser = subparsers.add_parser(
        "inspect", help="summarize a topic or capture: tables, partitions, watermarks, DDL, bad records",
        description="Read TiCDC records from capture files or Kafka and print: tables with operations per table, "
                    "the commit-ts range, each partition's watermark and lag, the DDL timeline and the records "
                    "that do not decode (with offsets and reasons). --plot draws events per second and watermark "
                    "lag over time, one line per partition.")
    parser.add_argument("paths", nargs="*", type=Path, metavar="CAPTURE",
                        help="capture files or directories (jsonl[.gz], parquet, kcat -J)")
    parser.add_argument("--format", default="auto", choices=("auto", "jsonl", "parquet", "kcat"),
                        help="capture format (default: detect)")
    parser.add_argument("--input-topic", "--topic", dest="input_topic", metavar="TOPICS",
                        help="read these Kafka topics instead (comma-separated names or a regular expression)")
    parser.add_argument("--protocol", default="auto",
                        help="open-protocol | canal-json | craft | debezium | simple | auto (detect from the records)")
    parser.add_argument("--option", dest="options", action="append", metavar="NAME=VALUE",
                        help="decoder option with its TiCDC name, repeatable (e.g. encoding-format=avro)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of text")
    parser.add_argument("--plot", type=Path, metavar="FILE.png",
                        help="draw events per second and watermark lag over time to this PNG")
    parser.add_argument("--bucket-ms", type=int, metavar="MS",
                        help="width of the events-per-second buckets (default: about 60 over the stream)")
    parser.add_argument("--max-bad", type=int, default=1000, metavar="N",
                        help="bad records to keep and list (default 1000)")
    add_kafka_arguments(parser, reading=True)
    add_progress_argument(parser)
    parser.set_defaults(run=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """Inspect, print the summary (text or JSON), maybe plot; 1 if any record did not decode."""
    import orjson

    from pyticdc.inspection import Inspector, detect_protocol, format_summary

    try:
        records, total, _ = read_records(args, args.paths, args.input_topic, capture_format=args.format)
        iterator = iter(records)
        options: dict[str, Any] = parse_assignments(args.options, "--option")
        protocol = args.protocol
        if protocol == "auto":
            head = list(itertools.islice(iterator, 200))
            protocol, detected = detect_protocol(head)
            options = {**detected, **options}
            print(f"detected protocol {protocol}" + "".join(f" {k}={v}" for k, v in detected.items()),
                  file=sys.stderr)
            iterator = itertools.chain(head, iterator)
        inspector = Inspector(protocol, options, max_bad_records=args.max_bad, bucket_ms=args.bucket_ms)
        with ProgressBar("inspect", total, enabled=progress_enabled(args)) as progress:
            for record in iterator:
                inspector.add(record)
                progress.update()
    except (PyticdcError, ValueError, NotImplementedError, OSError) as exc:
        return report_error(exc)
    summary = inspector.summary()
    if args.json:
        data = summary.to_builtins()
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    else:
        print(format_summary(summary))
    if args.plot is not None:
        from pyticdc.plotting import plot_summary

        try:
            path = plot_summary(summary, args.plot)
        except (RuntimeError, OSError) as exc:
            return report_error(exc)
        print(f"plot written to {path}", file=sys.stderr)
    return 1 if summary.bad_records or summary.bad_records_omitted else 0
