"""``pyticdc produce``: write TiCDC messages to Kafka or a capture file, from a simulated workload or a changelog."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyticdc.cli.common import (
    FAILURE,
    REPORTED,
    USAGE,
    add_codec_arguments,
    add_output_arguments,
    add_progress_argument,
    add_routing_arguments,
    check_output,
    codec_options,
    counted,
    progress_bar,
    report,
    routing,
    write_records,
)
from pyticdc.errors import ConfigError
from pyticdc.model import Event, KafkaRecord

__all__ = ["add_parser", "read_changelog"]


def add_parser(subparsers: Any) -> None:
    """Register ``produce``."""
    parser = subparsers.add_parser(
        "produce", help="write TiCDC messages from a simulated workload or a changelog table",
        description="Write the Kafka records TiCDC would send, in any protocol and with TiCDC's routing, from a "
                    "seeded simulated TiDB workload (default) or from a changelog table, to a capture file "
                    "(-O/--output) or Kafka (--output-bootstrap-servers). produce reads no Kafka, so here "
                    "-b/--bootstrap-servers and --topic are the same as --output-bootstrap-servers and "
                    "--output-topic.")
    add_codec_arguments(parser, detect=False, title="codec of the messages written")
    source = parser.add_argument_group("source: a simulated workload (default)")
    source.add_argument("--seed", type=int, default=1, metavar="N",
                        help="workload seed: the same seed (and --start-ms) gives the same bytes (default 1)")
    source.add_argument("--transactions", type=int, default=200, metavar="N",
                        help="transactions to simulate (default 200)")
    source.add_argument("--tables", metavar="NAMES",
                        help="comma-separated table shapes to create (t_int,t_comp,t_np,t_uk,t_rowid; default all)")
    source.add_argument("--schema", default="sim", metavar="NAME",
                        help="database of the simulated tables (default sim)")
    source.add_argument("--ddl-probability", type=float, default=0.12, metavar="P",
                        help="chance of a DDL after a transaction (default 0.12)")
    source.add_argument("--rate", type=float, default=100.0, metavar="TPS",
                        help="transactions per second of commit time (default 100)")
    source.add_argument("--start-ms", type=int, metavar="MS",
                        help="commit time of the first event, ms since the epoch (default: now)")
    source.add_argument("--no-vector", action="store_true",
                        help="leave out the VECTOR column, for TiDB < 8.4 (default: include it)")
    table = parser.add_argument_group("source: a changelog table")
    table.add_argument("--changelog", type=Path, nargs="+", metavar="FILE",
                       help="decoded-event table (Parquet file/directory, or JSON Lines) as written by Spark's "
                            "pyticdc source or pyticdc decode; replaces the simulated workload (default: none)")
    parser.add_argument("--resolved-interval-ms", type=int, default=1000, metavar="MS",
                        help="send a resolved ts (watermark) every MS of commit time; 0 keeps the source's own "
                             "(default 1000)")
    parser.add_argument("--realtime", action="store_true",
                        help="pace the output to the commit-time clock, with --rate and the default start: live "
                             "(default: as fast as possible)")
    add_routing_arguments(parser, topic_aliases=("--topic",))
    add_output_arguments(parser, kafka=True, kafka_aliases=("-b", "--bootstrap-servers"), settings=True)
    add_progress_argument(parser)
    parser.set_defaults(run=run_produce)


def _key_only_deletes(options: Mapping[str, Any]) -> bool:
    value = options.get("delete-only-output-handle-key-columns",
                        options.get("delete_only_output_handle_key_columns", False))
    return value is True or str(value).lower() == "true"


def _simulated(args: argparse.Namespace, options: Mapping[str, Any]) -> tuple[list[Event], str]:
    from pyticdc.routing.stream import retime
    from pyticdc.sim.workload import TEMPLATES, WorkloadConfig, handle_less, simulate

    tables = tuple(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else tuple(TEMPLATES)
    unknown = [t for t in tables if t not in TEMPLATES]
    if unknown:
        raise ConfigError(f"unknown table shape(s) {', '.join(unknown)}; valid: {', '.join(TEMPLATES)}")
    left_out = handle_less(tables) if _key_only_deletes(options) else ()
    if left_out and args.tables:
        raise ConfigError(f"table shape(s) {', '.join(left_out)} have no handle key: TiCDC does not replicate them "
                          "with delete-only-output-handle-key-columns (it needs force-replicate, which it refuses "
                          "with that option); leave them out of --tables")
    # Without --tables the handle-less shapes are left out, as TiCDC would not replicate them.
    tables = tuple(t for t in tables if t not in left_out)
    if args.transactions < 1:
        raise ConfigError("--transactions must be >= 1")
    config = WorkloadConfig(transactions=args.transactions, tables=tables, schema=args.schema,
                            ddl_probability=args.ddl_probability, vector=not args.no_vector)
    history = simulate(args.seed, config)
    start_ms = args.start_ms if args.start_ms is not None else time.time_ns() // 1_000_000
    events, _ = retime(history.events, start_ms=start_ms, rate=args.rate)
    note = f" (left out, no handle key: {', '.join(left_out)})" if left_out else ""
    return events, (f"simulated workload seed {args.seed}: {history.row_events} row changes in "
                    f"{args.transactions} transactions on {len(tables)} tables{note}, {args.rate:g} transactions/s")


def read_changelog(paths: Sequence[Path]) -> list[Mapping[str, Any]]:
    """Rows of changelog files: Parquet (files or directories) or JSON Lines."""
    import orjson

    rows: list[Mapping[str, Any]] = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"no such changelog file: {path}")
        if path.is_dir() or path.suffix == ".parquet":
            from pyticdc.io.capture import import_parquet

            rows.extend(import_parquet().read_table(path).to_pylist())
            continue
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        rows.append(orjson.loads(line))
                    except orjson.JSONDecodeError as exc:
                        raise ConfigError(f"{path}:{number}: not JSON: {exc}") from None
    return rows


def _changelog(paths: Sequence[Path]) -> tuple[list[Event], str]:
    from pyticdc.spark.writer import events_from_rows, order_changelog

    rows = read_changelog(paths)
    events = order_changelog(events_from_rows(rows))
    # Records that did not decode (error objects, quarantine rows) carry no change: said, not produced.
    errors = sum(1 for row in rows if row.get("kind") == "error" or (not row.get("kind") and row.get("reason")))
    left_out = f" ({errors} error rows carry no change: left out)" if errors else ""
    return events, f"changelog {', '.join(map(str, paths))}: {len(rows)} rows{left_out}, {len(events)} events"


def _paced(records: Iterable[KafkaRecord]) -> Iterator[KafkaRecord]:
    # Sleep so that record timestamps (the commit-time clock) line up with the wall clock from the first one.
    origin: tuple[float, int] | None = None
    for record in records:
        if record.timestamp_ms:
            if origin is None:
                origin = (time.monotonic(), record.timestamp_ms)
            delay = (record.timestamp_ms - origin[1]) / 1000 - (time.monotonic() - origin[0])
            if delay > 0:
                time.sleep(delay)
        yield record


def run_produce(args: argparse.Namespace) -> int:
    """Build the event stream, route it with the target protocol and write it; prints a summary."""
    from pyticdc.codec import canonical_protocol
    from pyticdc.routing import Router
    from pyticdc.routing.stream import StreamClock, place_watermarks, route_stream, with_bootstraps

    try:
        protocol = canonical_protocol(args.protocol)
        options = codec_options(args)
        default_topic, rules = routing(args)
        if args.resolved_interval_ms < 0:
            raise ConfigError("--resolved-interval-ms must be >= 0")
        clock = StreamClock()
        router = Router(protocol, options, default_topic=default_topic, rules=rules, partitions=args.partitions,
                        clock=clock)
        check_output(args)
        events, described = _changelog(args.changelog) if args.changelog else _simulated(args, options)
    except REPORTED as exc:
        return report(args, exc, USAGE)
    print(f"source: {described}", file=sys.stderr)
    progress = progress_bar(args, "produce", len(events), unit="events")
    stream: Iterable[Event] = counted(events, progress.update)
    if args.resolved_interval_ms:
        stream = place_watermarks(stream, args.resolved_interval_ms)
    if protocol == "simple" and args.changelog:
        # A simulated workload carries its BOOTSTRAPs; a changelog table does not.
        stream = with_bootstraps(stream)
    records: Iterable[KafkaRecord] = route_stream(router, stream, clock=clock)
    if args.realtime:
        records = _paced(records)
    try:
        with progress:
            count, where = write_records(args, records, router.partition_count)
    except REPORTED as exc:
        return report(args, exc, FAILURE)
    print(f"wrote {count} {protocol} records to {where}", file=sys.stderr)
    return 0
