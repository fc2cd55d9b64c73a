"""``pyticdc convert``: read one TiCDC protocol, write another, re-routed, keeping commit ts, DDL and watermarks."""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any

from pyticdc.cli.produce_command import (
    ProgressBar,
    add_kafka_arguments,
    add_output_arguments,
    add_progress_argument,
    add_routing_arguments,
    parse_assignments,
    progress_enabled,
    read_records,
    report_error,
    routing,
    write_records,
)
from pyticdc.model import PyticdcError

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``convert``."""
    from pyticdc.conversion import CAPABILITIES_TABLE

    parser = subparsers.add_parser(
        "convert", help="re-encode a topic or capture in another protocol, with the target's routing",
        description="Read TiCDC records of one protocol (capture files or Kafka), decode them the way a consumer "
                    "does (per-partition offsets, duplicates dropped, commit-ts order across partitions) and write "
                    "them in another protocol, routed with the target's dispatch rules. Commit ts, DDL, watermarks "
                    "and DELETE+INSERT pairs of split updates are kept; what the target cannot carry is printed "
                    "before converting.",
        epilog="what each protocol carries (default options):\n" + CAPABILITIES_TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, metavar="CAPTURE",
                        help="capture files or directories to convert (jsonl[.gz], parquet, kcat -J)")
    parser.add_argument("--format", default="auto", choices=("auto", "jsonl", "parquet", "kcat"),
                        help="capture format of the input (default: detect)")
    parser.add_argument("--input-topic", metavar="TOPICS",
                        help="read these Kafka topics instead (comma-separated names or a regular expression)")
    parser.add_argument("--from", dest="source", default="auto",
                        help="source protocol, or auto to detect it from the records (default auto)")
    parser.add_argument("--from-option", dest="source_options", action="append", metavar="NAME=VALUE",
                        help="source codec option with its TiCDC name, repeatable")
    parser.add_argument("--to", dest="target", required=True,
                        help="target protocol: open-protocol | canal-json | craft | debezium | simple")
    parser.add_argument("--final-watermark", action=argparse.BooleanOptionalAction, default=None,
                        help="end with a watermark at the last commit ts (default: only when the source has none)")
    parser.add_argument("--quarantine", type=Path, metavar="FILE",
                        help="write source records that do not decode to this capture file")
    parser.add_argument("--allow-loss", action=argparse.BooleanOptionalAction, default=True,
                        help="convert even when the target loses something (--no-allow-loss: refuse instead)")
    add_routing_arguments(parser, option_flag="--to-option")
    add_output_arguments(parser)
    add_kafka_arguments(parser, reading=True)
    add_progress_argument(parser)
    parser.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    """Print the loss notes, convert, write; 1 if source records were quarantined, 3 if refused for loss."""
    from pyticdc.conversion import Converter
    from pyticdc.inspection import detect_protocol

    try:
        records, total, source_partitions = read_records(args, args.paths, args.input_topic,
                                                         capture_format=args.format)
        iterator = iter(records)
        source_options: dict[str, Any] = parse_assignments(args.source_options, "--from-option")
        source = args.source
        if source == "auto":
            head = list(itertools.islice(iterator, 200))
            source, detected = detect_protocol(head)
            source_options = {**detected, **source_options}
            print(f"detected source protocol {source}" + "".join(f" {k}={v}" for k, v in detected.items()),
                  file=sys.stderr)
            iterator = itertools.chain(head, iterator)
        default_topic, rules = routing(args)
        converter = Converter(
            source, args.target, source_options=source_options,
            target_options=parse_assignments(args.target_options, "--to-option"), default_topic=default_topic,
            rules=rules, partitions=args.partitions, source_partitions=source_partitions,
            final_watermark=args.final_watermark,
        )
    except (PyticdcError, ValueError, NotImplementedError, OSError) as exc:
        return report_error(exc)
    # Said once, before anything is written: what the target cannot carry.
    for note in converter.notes:
        print(f"warning: {note}", file=sys.stderr)
    if converter.notes and not args.allow_loss:
        print("refusing to convert with losses (--no-allow-loss)", file=sys.stderr)
        return 3
    progress = ProgressBar(f"convert {converter.source} -> {converter.target}", total,
                           enabled=progress_enabled(args))
    try:
        with progress:
            count, where = write_records(args, converter.convert(iterator, on_record=progress.update),
                                         converter.router.partition_count)
    except (PyticdcError, ValueError, OSError) as exc:
        return report_error(exc)
    counts = converter.counts
    print(f"converted {converter.source_records} {converter.source} records ({counts['row']} row changes, "
          f"{counts['ddl']} DDL, {counts['watermark']} watermarks) into {count} {converter.target} records: {where}",
          file=sys.stderr)
    bad = converter.quarantined
    if bad:
        print(f"{len(bad)} source records did not decode and were left out:", file=sys.stderr)
        for item in bad[:10]:
            print(f"  {item.topic}/{item.partition}@{item.offset}: {item.reason}", file=sys.stderr)
        if args.quarantine is not None:
            from pyticdc.capture import write_capture
            from pyticdc.model import KafkaRecord

            write_capture(args.quarantine, [KafkaRecord(topic=q.topic, partition=q.partition, offset=q.offset,
                                                        key=q.key, value=q.value) for q in bad])
            print(f"  written to {args.quarantine}", file=sys.stderr)
        return 1
    return 0
