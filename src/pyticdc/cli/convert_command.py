"""``pyticdc convert``: read one TiCDC protocol, write another, re-routed, keeping commit ts, DDL and watermarks."""

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
    add_output_arguments,
    add_progress_argument,
    add_raw_arguments,
    add_routing_arguments,
    check_output,
    codec_options,
    open_input,
    parse_assignments,
    progress_bar,
    report,
    resolve_codec,
    routing,
    write_records,
)
from pyticdc.errors import ConfigError

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``convert``."""
    from pyticdc.routing.capability import CAPABILITIES_TABLE

    parser = subparsers.add_parser(
        "convert", help="re-encode a topic or capture in another protocol, with the target's routing",
        description="Read TiCDC records of one protocol (capture files or Kafka), decode them the way a consumer "
                    "does (per-partition offsets, duplicates dropped, commit-ts order across partitions) and write "
                    "them in another protocol, routed with the target's dispatch rules, to a capture file (-O) or "
                    "Kafka (--output-bootstrap-servers). Commit ts, DDL, watermarks and DELETE+INSERT pairs of "
                    "split updates are kept; what the target cannot carry is printed before converting. Exit "
                    "status 1 when source records did not decode or the conversion was refused (--no-allow-loss).",
        epilog="what each protocol carries (default options):\n" + CAPABILITIES_TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(parser)
    add_raw_arguments(parser)
    add_codec_arguments(parser, detect=True, title="source codec")
    target = parser.add_argument_group("target codec")
    target.add_argument("--output-protocol", dest="target", metavar="PROTOCOL",
                        help="protocol to write: open-protocol, canal-json, craft, debezium, simple (required)")
    target.add_argument("--output-option", dest="target_options", action="append", metavar="NAME=VALUE",
                        help="target codec option by its TiCDC name, repeatable (default: TiCDC's defaults)")
    # Before --from/--to meant places (replicate: source and warehouse), convert used them for protocols.
    for old, new, dest, append in (("--from", "-p/--protocol", "protocol", False),
                                   ("--from-option", "-o/--option", "options", True),
                                   ("--to", "--output-protocol", "target", False),
                                   ("--to-option", "--output-option", "target_options", True)):
        target.add_argument(old, dest=dest, action=_Deprecated, new=new, append=append, metavar="VALUE",
                            help=f"deprecated spelling of {new} (default: none)")
    add_routing_arguments(parser)
    add_output_arguments(parser, kafka=True)
    extra = parser.add_argument_group("conversion")
    extra.add_argument("--final-watermark", action=argparse.BooleanOptionalAction, default=None,
                       help="end with a watermark at the last commit ts (default: only when the source has none)")
    extra.add_argument("--quarantine", type=Path, metavar="FILE",
                       help="write source records that do not decode to this capture file (default: only list them)")
    extra.add_argument("--allow-loss", action=argparse.BooleanOptionalAction, default=True,
                       help="convert even when the target loses something; --no-allow-loss refuses instead "
                            "(default: allow)")
    add_progress_argument(parser)
    parser.set_defaults(run=run_convert)


class _Deprecated(argparse.Action):
    """An old spelling: stores (or appends) like the new one and says so in one line on stderr."""

    def __init__(self, option_strings: Any, dest: str, *, new: str, append: bool, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new
        self.append = append

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        """Store the value; print the deprecation note."""
        print(f"note: convert {option_string} is deprecated, use {self.new} (--from/--to name places, as in "
              "replicate)", file=sys.stderr)
        if self.append:
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        else:
            setattr(namespace, self.dest, values)


def run_convert(args: argparse.Namespace) -> int:
    """Print the loss notes, convert, write; 1 if source records were quarantined or the conversion refused."""
    from pyticdc.codec import canonical_protocol
    from pyticdc.consumer.conversion import Converter
    from pyticdc.io.capture import BadLine, bad_line_record

    bad_lines: list[BadLine] = []
    try:
        # What needs no input first: a mistake there is reported before any record is read.
        if args.target is None:
            raise ConfigError("give the protocol to write: --output-protocol PROTOCOL")
        target = canonical_protocol(args.target)
        target_options = parse_assignments(args.target_options, "--output-option")
        from pyticdc.codec import make_encoder

        make_encoder(target, target_options)  # a bad target option fails before any record is read
        codec_options(args)
        default_topic, rules = routing(args)
        check_output(args)
        # Raw messages are partition 0 of their file's topic (the conversion consumes them as a partition).
        source = open_input(args, on_bad_line=bad_lines.append, raw_partition=0)
        protocol, options, records = resolve_codec(args, source.records)
        converter = Converter(
            protocol, target, source_options=options, target_options=target_options, default_topic=default_topic,
            rules=rules, partitions=args.partitions, source_partitions=source.partitions,
            final_watermark=args.final_watermark,
        )
    except REPORTED as exc:
        return report(args, exc, USAGE)
    # Said once, before anything is written: what the target cannot carry.
    for note in converter.notes:
        print(f"warning: {note}", file=sys.stderr)
    if converter.notes and not args.allow_loss:
        return report(args, "refusing to convert with losses (--no-allow-loss)", FAILURE)
    try:
        with progress_bar(args, f"convert {converter.source} -> {converter.target}", source.total) as progress:
            count, where = write_records(args, converter.convert(records, on_record=progress.update),
                                         converter.router.partition_count)
    except REPORTED as exc:
        return report(args, exc, FAILURE)
    counts = converter.counts
    # Counted after the consumer's de-duplication (inspect counts every decoded event, re-sends included).
    print(f"converted {converter.source_records} {converter.source} records ({counts['row']} row changes after "
          f"de-duplication, {counts['ddl']} DDL, {counts['watermark']} global watermarks) into {count} "
          f"{converter.target} records: {where}", file=sys.stderr)
    bad = list(converter.quarantined)
    from pyticdc.consumer.units import QuarantinedRecord

    for line in bad_lines:
        record = bad_line_record(line)
        bad.append(QuarantinedRecord(topic=record.topic, partition=record.partition, offset=record.offset,
                                     protocol=converter.source, reason=line.why, value=record.value))
    if not bad:
        return 0
    # A few examples, not the whole list: --quarantine keeps every one with its bytes.
    for item in bad[:3]:
        print(f"  {item.topic}/{item.partition}@{item.offset}: {item.reason}", file=sys.stderr)
    where_bad = ""
    if args.quarantine is not None:
        from pyticdc.io.capture import write_capture
        from pyticdc.model import KafkaRecord

        try:
            write_capture(args.quarantine, [KafkaRecord(topic=q.topic, partition=q.partition, offset=q.offset,
                                                        key=q.key, value=q.value) for q in bad])
        except REPORTED as exc:
            return report(args, f"{len(bad)} source records did not decode; writing them failed: {exc}", FAILURE)
        where_bad = f", written with their bytes to {args.quarantine}"
    more = f" ({len(bad) - 3} more not listed)" if len(bad) > 3 else ""
    return report(args, f"{len(bad)} source records did not decode and were left out{more}{where_bad}", FAILURE)
