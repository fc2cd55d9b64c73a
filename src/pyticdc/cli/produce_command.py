"""``pyticdc produce``: write TiCDC messages to Kafka or a capture file, from a simulated workload or a changelog.

Also home of the small pieces ``produce``, ``convert`` and ``inspect`` share: ``--option``/``-X`` parsing,
the progress bar, reading records from captures or Kafka and writing them to a capture or Kafka.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

from pyticdc.model import ConfigError, Event, KafkaRecord, PyticdcError

__all__ = [
    "ProgressBar",
    "add_kafka_arguments",
    "add_output_arguments",
    "add_parser",
    "add_routing_arguments",
    "kafka_config",
    "load_rules",
    "parse_assignments",
    "read_records",
    "routing",
    "with_offsets",
    "write_records",
]

#: Records produced to Kafka per producer flush (a flush waits for every delivery report).
_KAFKA_CHUNK: Final = 5000


# --------------------------------------------------------------------------- shared CLI pieces
def parse_assignments(items: Sequence[str] | None, what: str) -> dict[str, str]:
    """``["name=value", ...]`` as a dict; ConfigError naming ``what`` for an item without ``=``."""
    result: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{what} must look like name=value, got {item!r}")
        result[name.strip()] = value.strip()
    return result


class ProgressBar:
    """A one-line progress bar on stderr, redrawn at most 10 times a second; silent when not enabled."""

    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True, stream: IO[str] | None = None,
                 unit: str = "records") -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.count = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._start = time.monotonic()
        self._drawn = 0.0

    def update(self, count: int = 1) -> None:
        """Advance by ``count``."""
        self.count += count
        if self.enabled and time.monotonic() - self._drawn >= 0.1:
            self._draw()

    def _draw(self, final: bool = False) -> None:
        self._drawn = time.monotonic()
        elapsed = max(self._drawn - self._start, 1e-9)
        rate = self.count / elapsed
        if self.total:
            done = min(1.0, self.count / self.total)
            bar = "#" * int(done * 30)
            text = f"{self.label} [{bar:<30}] {self.count}/{self.total} {self.unit} ({done:.0%}, {rate:,.0f}/s)"
        else:
            text = f"{self.label} {self.count} {self.unit} ({rate:,.0f}/s)"
        self.stream.write("\r" + text + ("\n" if final else ""))
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self._draw(final=True)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress`` (default: on when stderr is a terminal)."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="draw a progress bar on stderr (default: when stderr is a terminal)")


def progress_enabled(args: argparse.Namespace) -> bool:
    """Whether to draw progress bars."""
    return bool(sys.stderr.isatty()) if args.progress is None else bool(args.progress)


def add_kafka_arguments(parser: argparse.ArgumentParser, *, reading: bool) -> None:
    """``--bootstrap-servers`` and ``-X`` (and the offsets to read, when ``reading``)."""
    group = parser.add_argument_group("Kafka")
    group.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                       help="Kafka brokers (librdkafka bootstrap.servers)")
    group.add_argument("-X", dest="kafka_options", action="append", metavar="NAME=VALUE",
                       help="librdkafka client option, repeatable (e.g. -X security.protocol=SASL_SSL)")
    if reading:
        group.add_argument("--starting-offsets", default="earliest", metavar="SPEC",
                           help='where to start: earliest | latest | JSON {"topic":{"0":23}} (default earliest)')
        group.add_argument("--ending-offsets", default="latest", metavar="SPEC",
                           help='where to stop (exclusive): latest | JSON {"topic":{"0":50}} (default latest)')


def kafka_config(args: argparse.Namespace, servers: str | None = None) -> dict[str, str]:
    """librdkafka configuration from ``--bootstrap-servers`` (or ``servers``) and ``-X`` options."""
    config = parse_assignments(getattr(args, "kafka_options", None), "-X")
    chosen = servers or getattr(args, "bootstrap_servers", None)
    if chosen:
        config["bootstrap.servers"] = chosen
    if not config.get("bootstrap.servers"):
        raise ConfigError("Kafka needs --bootstrap-servers HOST:PORT (or -X bootstrap.servers=...)")
    return config


def add_routing_arguments(parser: argparse.ArgumentParser, *, option_flag: str = "--option") -> None:
    """Target protocol options, topic expression, dispatch rules and partition count."""
    group = parser.add_argument_group("routing (as a TiCDC changefeed would)")
    group.add_argument(option_flag, dest="target_options", action="append", metavar="NAME=VALUE",
                       help="codec option with its TiCDC name, repeatable (e.g. enable-tidb-extension=true)")
    group.add_argument("--topic", default="ticdc", metavar="EXPR",
                       help="topic: a name (the sink URI's topic), or a TiCDC topic expression like "
                            "cdc_{schema}_{table} applied to every table the dispatch rules do not place "
                            "(default ticdc)")
    group.add_argument("--default-topic", default="ticdc", metavar="NAME",
                       help="with a --topic expression: the topic of schema-level DDL and watermarks (default ticdc)")
    group.add_argument("--dispatchers", type=Path, metavar="FILE",
                       help="TiCDC changefeed config TOML; its [[sink.dispatchers]] rules route rows and DDL")
    group.add_argument("--partitions", type=int, default=3, metavar="N",
                       help="partitions of every topic (default 3, as TiCDC creates topics)")


def load_rules(path: Path | None) -> list[Any]:
    """Dispatch rules from a changefeed TOML file (none when no file)."""
    if path is None:
        return []
    from pyticdc.routing import rules_from_toml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read dispatchers file {path}: {exc.strerror}") from None
    return rules_from_toml(text)


def routing(args: argparse.Namespace) -> tuple[str, list[Any]]:
    """(default topic, dispatch rules) from ``--topic``, ``--default-topic`` and ``--dispatchers``.

    A static ``--topic`` is the default topic, as the topic of a TiCDC sink URI; an expression becomes a
    last catch-all rule (``matcher = ["*.*"]``), as if written in the changefeed's ``[[sink.dispatchers]]``.
    """
    from pyticdc.routing import is_static_topic, validate_topic_expression

    rules = load_rules(args.dispatchers)
    if is_static_topic(args.topic):
        return args.topic, rules
    validate_topic_expression(args.topic)
    return args.default_topic, [*rules, {"matcher": ["*.*"], "topic": args.topic}]


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Where records go: ``--output FILE`` or Kafka."""
    group = parser.add_argument_group("output (one of)")
    group.add_argument("--output", "-o", type=Path, metavar="FILE",
                       help="capture file to write: .jsonl, .jsonl.gz or .parquet")
    group.add_argument("--output-format", choices=("auto", "jsonl", "parquet"), default="auto",
                       help="capture format (default: from the file name)")
    group.add_argument("--output-bootstrap-servers", metavar="HOST:PORT",
                       help="produce to this Kafka instead (topics are created with --partitions partitions)")


def read_records(
    args: argparse.Namespace, paths: Sequence[Path], topics: str | None, *, capture_format: str = "auto",
) -> tuple[Iterable[KafkaRecord], int | None, dict[str, int] | None]:
    """Records from capture files or Kafka topics: (records, how many if known, topic partition counts if known)."""
    if paths and topics:
        raise ConfigError("read either capture files or Kafka topics, not both")
    if paths:
        from pyticdc.capture import read_capture

        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise ConfigError(f"no such file: {', '.join(missing)}")
        return read_capture(list(paths), capture_format), None, None
    if not topics:
        raise ConfigError("give capture files, or --input-topic with --bootstrap-servers")
    from pyticdc import kafka

    config = kafka_config(args)
    pattern = topics if any(ch in topics for ch in "*?[]()|+^$") else None
    ranges = kafka.offset_ranges(config, subscribe=None if pattern else topics, pattern=pattern,
                                 starting=args.starting_offsets, ending=args.ending_offsets)
    counts: dict[str, int] = {}
    for offset_range in ranges:
        counts[offset_range.topic] = max(counts.get(offset_range.topic, 0), offset_range.partition + 1)

    def records() -> Iterator[KafkaRecord]:
        for offset_range in ranges:
            yield from kafka.read_range(config, offset_range)

    return records(), sum(r.size for r in ranges), counts


def _chunks(records: Iterable[KafkaRecord], size: int) -> Iterator[list[KafkaRecord]]:
    chunk: list[KafkaRecord] = []
    for record in records:
        chunk.append(record)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def with_offsets(records: Iterable[KafkaRecord]) -> Iterator[KafkaRecord]:
    """Records numbered per partition from 0 as Kafka would (records that have an offset keep it)."""
    import msgspec

    next_offset: dict[tuple[str, int], int] = {}
    for record in records:
        tp = (record.topic, record.partition)
        if record.offset < 0:
            record = msgspec.structs.replace(record, offset=next_offset.get(tp, 0))
        next_offset[tp] = record.offset + 1
        yield record


def write_records(
    args: argparse.Namespace, records: Iterable[KafkaRecord], partition_count: Callable[[str], int],
    on_record: Callable[[], None] | None = None,
) -> tuple[int, str]:
    """Write records to ``--output`` or Kafka; returns (how many, where)."""
    if (args.output is None) == (args.output_bootstrap_servers is None):
        raise ConfigError("give exactly one of --output FILE and --output-bootstrap-servers HOST:PORT")

    def counted() -> Iterator[KafkaRecord]:
        for record in records:
            yield record
            if on_record is not None:
                on_record()

    if args.output is not None:
        from pyticdc.capture import CaptureWriter

        with CaptureWriter(args.output, args.output_format) as writer:
            writer.write_all(with_offsets(counted()))
            return writer.count, str(args.output)
    from pyticdc import kafka

    config = kafka_config(args, args.output_bootstrap_servers)
    created: set[str] = set()
    count = 0
    for chunk in _chunks(counted(), _KAFKA_CHUNK):
        for topic in sorted({r.topic for r in chunk} - created):
            kafka.create_topic(config, topic, partition_count(topic))
            created.add(topic)
        count += len(kafka.produce_records(config, chunk))
    return count, f"Kafka {config['bootstrap.servers']} topics {', '.join(sorted(created)) or '-'}"


def report_error(exc: BaseException) -> int:
    """Print a one-line error for a user mistake or bad input; the exit status 2."""
    print(f"error: {exc}", file=sys.stderr)
    return 2


# --------------------------------------------------------------------------- produce
def add_parser(subparsers: Any) -> None:
    """Register ``produce``."""
    parser = subparsers.add_parser(
        "produce", help="write TiCDC messages from a simulated workload or a changelog table",
        description="Write the Kafka records TiCDC would send, in any protocol and with TiCDC's routing, from a "
                    "seeded simulated TiDB workload (default) or from a changelog table, to a capture file "
                    "(--output) or Kafka (--bootstrap-servers).")
    parser.add_argument("--protocol", required=True, help="open-protocol | canal-json | craft | debezium | simple")
    source = parser.add_argument_group("source: a simulated workload (default)")
    source.add_argument("--seed", type=int, default=1,
                        help="workload seed: the same seed (and --start-ms) gives the same bytes (default 1)")
    source.add_argument("--transactions", type=int, default=200, help="transactions to simulate (default 200)")
    source.add_argument("--tables", metavar="NAMES",
                        help="comma-separated table shapes to create (t_int,t_comp,t_np,t_uk,t_rowid; default all)")
    source.add_argument("--schema", default="sim", help="database of the simulated tables (default sim)")
    source.add_argument("--ddl-probability", type=float, default=0.12,
                        help="chance of a DDL after a transaction (default 0.12)")
    source.add_argument("--rate", type=float, default=100.0, metavar="TPS",
                        help="transactions per second of commit time (default 100)")
    source.add_argument("--start-ms", type=int, metavar="MS",
                        help="commit time of the first event, ms since the epoch (default: now)")
    source.add_argument("--no-vector", action="store_true", help="leave out the VECTOR column (TiDB < 8.4)")
    table = parser.add_argument_group("source: a changelog table")
    table.add_argument("--changelog", type=Path, nargs="+", metavar="FILE",
                       help="decoded-event table (Parquet file/directory, or JSON Lines) as written by Spark's "
                            "pyticdc source or pyticdc decode; replaces the simulated workload")
    parser.add_argument("--resolved-interval-ms", type=int, default=1000, metavar="MS",
                        help="send a resolved ts (watermark) every MS of commit time; 0 keeps the source's own")
    parser.add_argument("--realtime", action="store_true",
                        help="pace the output to the commit-time clock (with --rate and the default start: live)")
    add_routing_arguments(parser)
    add_output_arguments(parser)
    add_kafka_arguments(parser, reading=False)
    add_progress_argument(parser)
    parser.set_defaults(run=run_produce)


def _simulated(args: argparse.Namespace) -> tuple[list[Event], str]:
    from pyticdc.conversion import retime
    from pyticdc.sim.workload import TEMPLATES, WorkloadConfig, simulate

    tables = tuple(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else tuple(TEMPLATES)
    unknown = [t for t in tables if t not in TEMPLATES]
    if unknown:
        raise ConfigError(f"unknown table shape(s) {', '.join(unknown)}; valid: {', '.join(TEMPLATES)}")
    if args.transactions < 1:
        raise ConfigError("--transactions must be >= 1")
    config = WorkloadConfig(transactions=args.transactions, tables=tables, schema=args.schema,
                            ddl_probability=args.ddl_probability, vector=not args.no_vector)
    history = simulate(args.seed, config)
    start_ms = args.start_ms if args.start_ms is not None else time.time_ns() // 1_000_000
    events, _ = retime(history.events, start_ms=start_ms, rate=args.rate)
    return events, (f"simulated workload seed {args.seed}: {history.row_events} row changes in "
                    f"{args.transactions} transactions on {len(tables)} tables, {args.rate:g} transactions/s")


def read_changelog(paths: Sequence[Path]) -> list[Mapping[str, Any]]:
    """Rows of changelog files: Parquet (files or directories) or JSON Lines."""
    import orjson

    rows: list[Mapping[str, Any]] = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"no such changelog file: {path}")
        if path.is_dir() or path.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows.extend(pq.read_table(path).to_pylist())
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
    from pyticdc.spark_writer import events_from_rows, order_changelog

    rows = read_changelog(paths)
    events = order_changelog(events_from_rows(rows))
    return events, f"changelog {', '.join(map(str, paths))}: {len(rows)} rows, {len(events)} events"


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
    from pyticdc.conversion import StreamClock, place_watermarks, route_stream, with_bootstraps
    from pyticdc.routing import Router

    try:
        protocol = canonical_protocol(args.protocol)
        options = parse_assignments(args.target_options, "--option")
        default_topic, rules = routing(args)
        if args.resolved_interval_ms < 0:
            raise ConfigError("--resolved-interval-ms must be >= 0")
        clock = StreamClock()
        router = Router(protocol, options, default_topic=default_topic, rules=rules, partitions=args.partitions,
                        clock=clock)
        if args.output is None and args.output_bootstrap_servers is None and args.bootstrap_servers:
            args.output_bootstrap_servers = args.bootstrap_servers
        if (args.output is None) == (args.output_bootstrap_servers is None):
            raise ConfigError("give exactly one of --output FILE and --bootstrap-servers HOST:PORT")
        events, described = _changelog(args.changelog) if args.changelog else _simulated(args)
    except (PyticdcError, ValueError, NotImplementedError) as exc:
        return report_error(exc)
    print(f"source: {described}", file=sys.stderr)
    progress = ProgressBar("produce", len(events), enabled=progress_enabled(args), unit="events")

    def counted() -> Iterator[Event]:
        for event in events:
            yield event
            progress.update()

    stream: Iterable[Event] = counted()
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
    except (PyticdcError, ValueError) as exc:
        return report_error(exc)
    print(f"wrote {count} {protocol} records to {where}", file=sys.stderr)
    return 0
