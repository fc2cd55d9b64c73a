"""``pyticdc replicate``: a TiCDC topic or capture files → one Delta table per upstream table, exactly once.

    pyticdc replicate --from kafka://broker:9092/cdc -p canal-json -o enable-tidb-extension=true --to ./warehouse
    pyticdc replicate --from 'captures/*.jsonl' -p simple --to ./warehouse --table 'shop.*'
    pyticdc replicate --from cdc -b broker:9092 -p open-protocol --to ./warehouse --stream

The records are read by Spark (a local session unless ``--master`` says otherwise) and applied with the
consumer engine's rules: per-partition and global watermarks (only changes the global watermark covers
are applied; the rest wait in the progress for a later batch), duplicate removal, commit-ts order, DDL
as a barrier. Each upstream table becomes ``WAREHOUSE/<schema>/<table>``, a Delta table (readable by
delta-spark, DuckDB, Polars, deltalake) typed from the TiDB column types, kept by MERGE and following
CREATE, DROP, RENAME, TRUNCATE and column DDL. ``WAREHOUSE/_pyticdc/progress`` says up to which commit ts
the tables are complete; ``WAREHOUSE/_pyticdc/quarantine`` holds records that did not decode.

Run it again (or after a crash) with the same --to: it continues where the last committed batch ended,
applying nothing twice. Without --stream it stops once it has read up to the latest offsets of when it
started (or the end of the capture files).
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from pyticdc.cli.common import (
    FAILURE,
    REPORTED,
    USAGE,
    add_modelling_flags,
    add_progress_argument,
    add_raw_arguments,
    is_stdin,
    modelling_from_args,
    parse_assignments,
    raw_input,
    report,
)
from pyticdc.cli.replicate_ops import Operations, add_operation_arguments, detect_source_protocol
from pyticdc.errors import ConfigError

__all__ = ["BatchPrinter", "active_session", "add_parser", "format_tables", "parse_source", "stop_if_owned",
           "watermark_notice"]


def add_parser(subparsers: Any) -> None:
    """Register ``replicate``."""
    parser = subparsers.add_parser(
        "replicate", help="replicate a TiCDC topic or capture files into Delta tables (exactly once)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", action="append", metavar="SOURCE",
                        help="what to replicate: kafka://HOST:PORT/TOPIC[,TOPIC...]; or a topic (or one regular "
                             "expression) with -b; or capture files, directories or globs (repeatable); - reads a "
                             "JSON Lines capture from standard input (required unless --value or --lines is given)")
    parser.add_argument("--to", dest="warehouse", required=True, type=warehouse_path, metavar="WAREHOUSE",
                        help="warehouse: a directory or an object-store URL (s3://BUCKET/PATH, gs://, az://, "
                             "abfss://, ...): one Delta table per upstream table, plus _pyticdc/ (progress, "
                             "quarantine); created if missing, continued if it exists")
    parser.add_argument("--storage-option", dest="storage_options", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="delta-rs storage option of an object-store warehouse, repeatable, e.g. "
                             "--storage-option AWS_ENDPOINT_URL=http://minio:9000 (for s3:// the standard AWS_* "
                             "environment variables are read first; default none)")
    parser.add_argument("-p", "--protocol", default="auto", metavar="PROTOCOL",
                        help="protocol of the records: open-protocol, canal-json, craft, debezium, simple, or auto "
                             "(default auto: the one that decodes most of the first records, as decode does)")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="NAME=VALUE",
                        help="codec option by its TiCDC name, repeatable, e.g. -o enable-tidb-extension=true "
                             "(canal-json and debezium carry watermarks only with it; without it each batch is "
                             "applied completely: consistency batch)")
    parser.add_argument("--require-watermarks", action="store_true",
                        help="refuse a feed that carries no watermarks (canal-json, debezium without "
                             "enable-tidb-extension) instead of replicating it with batch consistency")
    parser.add_argument("--table", dest="tables", action="append", metavar="PATTERN",
                        help="replicate only tables matching this TiDB table filter (shop.*, !shop.tmp_*), "
                             "repeatable (default: every table)")
    parser.add_argument("--time-zone", metavar="ZONE",
                        help="time zone TiCDC printed TIMESTAMP values in (default: the time-zone option, else UTC)")
    add_modelling_flags(parser)
    upkeep = parser.add_argument_group("table layout and upkeep")
    upkeep.add_argument("--partition-by", action="append", default=[], metavar="PATTERN=COL[,COL...]",
                        help="partition new replica tables matching the TiDB table-filter PATTERN by these columns "
                             "(e.g. 'shop.events=region'), repeatable, the first match wins (default: none)")
    upkeep.add_argument("--table-property", action="append", default=[], metavar="KEY=VALUE",
                        help="Delta table property of new replica tables, repeatable, e.g. "
                             "--table-property delta.enableChangeDataFeed=true (default: none)")
    upkeep.add_argument("--optimize-every", type=int, default=100, metavar="N",
                        help="OPTIMIZE (compact) the tables written to every N committed batches; 0 never "
                             "(default 100)")
    upkeep.add_argument("--vacuum-retention", type=float, metavar="HOURS",
                        help="VACUUM each table after its OPTIMIZE, keeping HOURS of history (default: no VACUUM; "
                             "`pyticdc maintain` does both on demand)")
    run = parser.add_argument_group("running")
    run.add_argument("--stream", action="store_true",
                     help="keep replicating new records until interrupted (Structured Streaming); default: stop "
                          "at the latest offsets of when it started")
    add_operation_arguments(run)
    run.add_argument("--trigger", type=float, default=5.0, metavar="SECONDS",
                     help="with --stream: seconds between micro-batches (default 5)")
    run.add_argument("--batch-records", type=int, default=None, metavar="N",
                     help="records per batch, each committed on its own (default 200000 on the driver engine, "
                          "whose memory it bounds; 1000000 on the distributed ones)")
    run.add_argument("--engine", choices=("driver", "distributed", "delta-spark", "auto"), default="auto",
                     help="apply engine: driver (records decoded and applied by the driver, the reference), "
                          "distributed (decode, de-dup, net change and MERGE in the Spark executors), "
                          "delta-spark (the same, MERGE INTO by Delta on Spark: needs the delta-spark jar) "
                          "or auto (the default: distributed where it applies, else driver)")
    run.add_argument("--master", default="local[2]", metavar="URL",
                     help="Spark master (default local[2])")
    run.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                     help="Spark configuration, repeatable, e.g. --spark-conf spark.driver.memory=4g")
    kafka = parser.add_argument_group("Kafka")
    kafka.add_argument("-b", "--bootstrap-servers", metavar="HOST:PORT[,...]",
                       help="Kafka brokers, when --from names a topic (default: from a kafka:// source)")
    kafka.add_argument("-X", dest="kafka_settings", action="append", metavar="NAME=VALUE",
                       help="librdkafka setting, repeatable, e.g. -X security.protocol=SASL_SSL")
    kafka.add_argument("--starting-offsets", metavar="SPEC",
                       help='where to start when the warehouse has no progress for a partition (earliest, latest or '
                            'JSON {"topic": {"0": 23}}); the progress always wins over an earlier offset, so a '
                            'resumed run never re-reads (default earliest)')
    kafka.add_argument("--ending-offsets", metavar="SPEC",
                       help='where to stop, exclusive (latest: the end when it starts, or JSON {"topic": {"0": 50}}); '
                            "not with --stream (default latest)")
    kafka.add_argument("--no-fail-on-data-loss", dest="fail_on_data_loss", action="store_false",
                       help="read what is left when offsets to read were deleted by retention (default: fail)")
    kafka.add_argument("--reader", choices=("pyticdc", "kafka"), default="pyticdc",
                       help="what reads Kafka: the pyticdc data source (default, no jars) or Spark's own "
                            "format(\"kafka\") (spark-sql-kafka on the classpath; -X settings go to it as kafka.*)")
    files = parser.add_argument_group("capture files")
    files.add_argument("--capture-format", default="auto", choices=("auto", "jsonl", "parquet", "kcat"),
                       help="format of the capture files (default auto)")
    add_raw_arguments(parser)
    add_progress_argument(parser)
    parser.set_defaults(run=run_replicate)


_REGEX_CHARS = frozenset("*?[](){}|+^$\\")


def warehouse_path(text: str) -> Any:
    """``--to``: a local directory (or ``file://`` URL) as a Path, an object-store URL as a RemotePath."""
    from pyticdc.replica.storage import location

    try:
        return location(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_source(args: argparse.Namespace) -> Any:
    """The ReplicationSource the ``--from``, ``-b``, ``-X`` and codec arguments describe."""
    from pyticdc.codec import canonical_protocol
    from pyticdc.spark.replication import ReplicationSource

    detect = args.protocol in (None, "auto")
    protocol = "open-protocol" if detect else canonical_protocol(args.protocol)  # detected below
    options = parse_assignments(args.option, "-o/--option")
    settings = parse_assignments(args.kafka_settings, "-X")
    sources: list[str] = args.source
    kafka_urls = [s for s in sources if s.startswith("kafka://")]
    if kafka_urls or args.bootstrap_servers:
        if len(sources) != 1:
            raise ConfigError("replicate one Kafka source at a time (comma-separate topics in it)")
        text = sources[0]
        if text.startswith("kafka://"):
            servers, _, topics = text[len("kafka://"):].partition("/")
            if not servers or not topics:
                raise ConfigError(f"a Kafka source looks like kafka://HOST:PORT/TOPIC, got {text!r}")
        else:
            servers, topics = args.bootstrap_servers, text
        config = {**settings, "bootstrap.servers": args.bootstrap_servers or servers}
        pattern = topics if _REGEX_CHARS & set(topics) else None
        source = ReplicationSource.kafka_topics(protocol, options, config, topics=None if pattern else topics,
                                                pattern=pattern, reader=args.reader)
    else:
        missing = [s for s in sources if not _exists(s)]
        if missing:
            raise ConfigError(f"no such capture file: {', '.join(missing)} (for Kafka give kafka://HOST:PORT/TOPIC "
                              "or -b HOST:PORT)")
        if getattr(args, "reader", "pyticdc") != "pyticdc":
            raise ConfigError(f"--reader {args.reader} reads Kafka topics: give kafka://HOST:PORT/TOPIC")
        source = ReplicationSource.capture(protocol, options, sources, capture_format=args.capture_format)
    if not args.fail_on_data_loss:
        source = ReplicationSource(**{**source.__dict__, "reader_options": {"failOnDataLoss": "false"}})
    if detect:
        from pyticdc.cli.common import DETECT_SAMPLE

        found, detected = detect_source_protocol(source, DETECT_SAMPLE)
        said = "".join(f" -o {k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in detected.items())
        print(f"detected protocol {found}" + (f" ({said.strip()})" if said else ""), file=sys.stderr)
        merged = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in {**detected, **options}.items()}
        source = ReplicationSource(**{**source.__dict__, "protocol": found, "options": merged})
    return source


def watermark_notice(args: argparse.Namespace, source: Any) -> str | None:
    """The one-line notice for a feed without watermarks (batch consistency); ConfigError with --require-watermarks."""
    from pyticdc.consumer.engine import carries_watermarks

    if carries_watermarks(source.protocol, source.options):
        return None
    if args.require_watermarks:
        raise ConfigError(f"{source.protocol} without enable-tidb-extension carries no watermarks, so nothing could "
                          "ever be known complete (--require-watermarks): configure the changefeed with it and pass "
                          "-o enable-tidb-extension=true")
    if args.engine in ("distributed", "delta-spark"):
        raise ConfigError(f"--engine {args.engine} needs watermarks, which {source.protocol} without "
                          "enable-tidb-extension does not carry: use --engine driver or auto")
    return (f"note: {source.protocol} without enable-tidb-extension carries no watermarks: each batch is applied "
            "completely (consistency: batch), not up to a commit ts; duplicates are still removed and each key "
            "keeps its order (--require-watermarks refuses such a feed)")


def _exists(pattern: str) -> bool:
    import glob

    return any(Path(p).exists() for part in pattern.split(",") for p in (glob.glob(part) or [part]))


# --------------------------------------------------------------------------- display
def _time(tso: int) -> str:
    from pyticdc.replica.progress import tso_time

    moment = tso_time(tso)
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _lag(tso: int) -> str:
    from pyticdc.replica.progress import tso_time

    moment = tso_time(tso)
    if moment is None:
        return "-"
    seconds = (dt.datetime.now(dt.timezone.utc) - moment).total_seconds()
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


class BatchPrinter:
    """The progress display: one line per committed batch (redrawn in place on a terminal) and totals."""

    def __init__(self, *, enabled: bool = True, stream: IO[str] | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.records = 0
        self.rows = 0
        self.ddls = 0
        self.batches = 0
        self.quarantined = 0
        #: Records sent to the quarantine (re-read ones included), row events dropped as re-sends, duplicates,
        #: or by the table filter, and the tables the filter left out.
        self.rejected = 0
        self.replayed = 0
        self.duplicate = 0
        self.filtered = 0
        self.filtered_tables: set[tuple[str, str]] = set()
        self.started = time.monotonic()
        self.last: Any = None
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, batch: Any) -> None:
        """Record (and show) one committed batch."""
        self.batches += 1
        self.records += batch.records
        self.rows += batch.rows_applied
        self.ddls += batch.ddls_released
        self.quarantined += batch.quarantined
        self.rejected += batch.rejected
        self.replayed += batch.rows_replayed
        self.duplicate += batch.rows_duplicate
        self.filtered += batch.rows_filtered
        self.filtered_tables.update(batch.filtered_tables)
        self.last = batch
        if not self.enabled:
            return
        rate = self.records / max(time.monotonic() - self.started, 1e-9)
        line = (f"batch {batch.version}: {self.records:,} records read ({rate:,.0f}/s), {self.rows:,} row changes "
                f"and {self.ddls} DDL applied, {len(batch.tables)} tables complete up to "
                f"{_time(batch.consistent_ts)} (lag {_lag(batch.consistent_ts)}), {batch.pending_rows:,} rows wait "
                "for the watermark")
        if self.rejected:
            line += f", {self.rejected} quarantined"
        self.stream.write(("\r\x1b[K" if self._tty else "") + line + ("" if self._tty else "\n"))
        self.stream.flush()

    def close(self) -> None:
        """End the progress line."""
        if self.enabled and self._tty and self.batches:
            self.stream.write("\n")
            self.stream.flush()


def format_tables(warehouse: Path, progress: Any) -> str:
    """The replica tables: name, rows, columns, key, freshness and directory, as a text table."""
    rows = [("table", "rows", "cols", "key", "complete up to", "last change", "path")]
    for (schema, table), entry in sorted(progress.tables.items()):
        key = ",".join(entry.key_columns) or "(whole row)"
        rows.append((f"{schema}.{table}", f"{entry.rows:,}", str(len(entry.info.columns)), key,
                     _time(progress.consistent_ts), _time(entry.last_commit_ts), str(warehouse / entry.path)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(width) if i in (1, 2) else cell.ljust(width)
                       for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in rows]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


# --------------------------------------------------------------------------- command
def spool_inputs(args: argparse.Namespace, directory: Path) -> None:
    """Raw message files (``--value``/``--lines``) and a capture on standard input (``--from -``) written to a
    capture file in ``directory`` that ``--from`` then names: Spark reads files, not pipes.

    Raw messages become partition 0 of topic ``file:PATH`` (offset = their index in the file).
    """
    from pyticdc.io.capture import write_capture

    stdin = bool(args.source) and any(is_stdin(s) for s in args.source)
    if args.stream and (stdin or args.value is not None or args.lines is not None):
        raise ConfigError("--stream needs a source that grows (Kafka or a directory), not standard input or raw files")
    raw = raw_input(argparse.Namespace(**{**vars(args), "captures": args.source, "topics": None}), partition=0)
    if raw is not None:
        path = directory / "raw.jsonl"
        write_capture(path, raw.records)
        args.source = [str(path)]
    elif stdin:
        if len(args.source) > 1:
            raise ConfigError("--from - (a capture on standard input) cannot be combined with other sources")
        path = directory / "stdin.capture"
        with open(path, "wb") as out:
            for chunk in iter(lambda: sys.stdin.buffer.read(1 << 20), b""):
                out.write(chunk)
        args.source = [str(path)]
    elif not args.source:
        raise ConfigError("give --from SOURCE (Kafka or capture files) or raw message files (--value, --lines)")


def run_replicate(args: argparse.Namespace) -> int:
    """Replicate; 0 done, 1 a failure while replicating or records that did not decode, 2 a usage error."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pyticdc-replicate-") as spooled:
        return _replicate(args, Path(spooled))


def _replicate(args: argparse.Namespace, spooled: Path) -> int:
    from pyticdc.replica.pipeline import Replicator

    try:
        spool_inputs(args, spooled)
        source = parse_source(args)
        if args.batch_records is not None and args.batch_records < 1:
            raise ConfigError("--batch-records must be >= 1")
        if args.trigger <= 0:
            raise ConfigError("--trigger must be > 0 seconds")
        spark_conf = parse_assignments(args.spark_conf, "--spark-conf")
        from pyticdc.replica.storage import parse_storage_options, storage_options

        storage = storage_options(str(args.warehouse), parse_storage_options(args.storage_options))
        from pyticdc.replica.maintenance import TableOptions, parse_partition_by, parse_table_properties

        table_options = TableOptions(partition_by=parse_partition_by(args.partition_by),
                                     properties=parse_table_properties(args.table_property),
                                     optimize_every=args.optimize_every, vacuum_retention_hours=args.vacuum_retention)
        # Everything the pipeline would refuse (codec options, time zone, table filter, a warehouse of another
        # protocol, an object store that cannot be reached) is refused now, before Spark starts or anything
        # is written.
        modelling = modelling_from_args(args)
        if args.engine in ("distributed", "delta-spark") and modelling.driver_only:
            raise ConfigError(f"--engine {args.engine} does not implement {', '.join(modelling.driver_only)} yet: "
                              "use --engine driver or auto")
        from pyticdc.replica.storage import RemotePath

        if args.engine in ("distributed", "delta-spark") and isinstance(args.warehouse, RemotePath):
            # Its staging is Parquet written by Spark, which reaches object stores only through Hadoop's
            # connectors (not on the classpath): said before the store is contacted or Spark starts.
            raise ConfigError(f"--engine {args.engine} writes to local or mounted warehouses only; "
                              f"{args.warehouse} is replicated by --engine driver (or auto, which picks it)")
        if args.engine == "delta-spark":
            from pyticdc.spark.session import check_delta

            check_delta(spark_conf)  # the jar, before Spark starts
        Replicator.check(args.warehouse, source.protocol, source.options, tables=args.tables,
                         time_zone=args.time_zone, storage_options=storage, modelling=modelling)
        notice = watermark_notice(args, source)
        if (args.starting_offsets or args.ending_offsets) and not source.is_kafka:
            raise ConfigError("--starting-offsets/--ending-offsets choose Kafka offsets: the source is capture files")
        if args.ending_offsets and args.stream:
            raise ConfigError("--ending-offsets stops a batch run: not with --stream")
        from pyticdc.io.kafka import parse_offsets

        parse_offsets(args.starting_offsets, ending=False, default="earliest")
        parse_offsets(args.ending_offsets, ending=True, default="latest")
        if args.checkpoint is not None and not args.stream:
            raise ConfigError("--checkpoint is the streaming checkpoint: give it with --stream")
        enabled = sys.stderr.isatty() if args.progress is None else bool(args.progress)
        # Under a supervisor --stream logs a line per batch instead of the progress display.
        printer = BatchPrinter(enabled=enabled and not (args.stream and not sys.stderr.isatty()))
        operations = Operations(args, printer)  # binds the metrics port now: a taken port is a usage error
    except REPORTED as exc:
        return report(args, exc, USAGE)
    from pyticdc.errors import ReplicaError
    from pyticdc.spark.replication import SparkReplication
    from pyticdc.spark.session import spark_session

    print(f"replicating {source.describe()} into {args.warehouse}", file=sys.stderr)
    for line in (notice, operations.describe()):
        if line is not None:
            print(line, file=sys.stderr)
    own_session = active_session() is None
    spark = spark_session("pyticdc-replicate", args.master, {"spark.ui.showConsoleProgress": "false", **spark_conf},
                          delta=args.engine == "delta-spark")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        job = SparkReplication(spark, source, args.warehouse, tables=args.tables, time_zone=args.time_zone,
                               batch_records=args.batch_records, on_batch=operations, engine=args.engine,
                               storage_options=storage, table_options=table_options, modelling=modelling,
                               starting_offsets=args.starting_offsets, ending_offsets=args.ending_offsets)
    except ConfigError as exc:  # --reader kafka on a Spark without its Kafka source
        operations.close()
        stop_if_owned(spark, own_session)
        return report(args, exc, USAGE)
    status = 0
    try:
        if args.stream:
            query = job.start_stream(trigger_seconds=args.trigger, checkpoint=args.checkpoint)
            print(f"streaming (every {args.trigger:g}s); Ctrl-C stops", file=sys.stderr)
            _await(query)
            if query.exception() is not None:
                raise ReplicaError(str(query.exception()))
        else:
            job.run()
    except (ReplicaError, *REPORTED) as exc:
        printer.close()
        status = report(args, exc, FAILURE)
    except Exception as exc:  # Spark's own errors: one line, not a JVM stack
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        from pyticdc.spark.session import interrupted

        if interrupted():  # Ctrl-C cancelled the job: not a Spark failure (pyticdc.cli.main says "interrupted")
            raise KeyboardInterrupt from None
        printer.close()
        status = report(args, f"Spark failed: {_first_line(exc)}", FAILURE)
    finally:
        printer.close()
        operations.close()
    progress = job.replicator().progress if status == 0 else None
    if progress is not None:
        elapsed = time.monotonic() - printer.started
        print(f"\n{printer.batches} batches, {printer.records:,} records read in {elapsed:.1f}s: {printer.rows:,} row "
              f"changes and {printer.ddls} DDL applied (after de-duplication); row events dropped: "
              f"{printer.replayed:,} re-sent at or below their partition's watermark, {printer.duplicate:,} "
              f"duplicates, {printer.filtered:,} of tables --table leaves out; {printer.rejected} records "
              "quarantined")
        print(f"the replica is complete up to {_time(progress.consistent_ts)} (commit ts {progress.consistent_ts})")
        if job.reports and job.reports[-1].unhandled_ddl:
            print("DDL not reproduced (the replica may differ): " + "; ".join(job.reports[-1].unhandled_ddl))
        print(format_tables(args.warehouse, progress))
        status = _verdict(args, printer, progress)
    stop_if_owned(spark, own_session)
    return status


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _verdict(args: argparse.Namespace, printer: BatchPrinter, progress: Any) -> int:
    """The exit status of a replication that ran: 1 (one line saying why) when records were quarantined or the
    table filter matched no table; else 0."""
    if printer.rejected:
        return report(args, f"{printer.rejected} records did not decode; they are in "
                            f"{args.warehouse / '_pyticdc' / 'quarantine'} with their bytes", FAILURE)
    if args.tables and not progress.tables and printer.filtered_tables:
        seen = ", ".join(f"{s}.{t}" for s, t in sorted(printer.filtered_tables)[:5])
        more = " ..." if len(printer.filtered_tables) > 5 else ""
        return report(args, f"--table {' '.join(args.tables)} matched none of the tables read ({seen}{more}): "
                            "nothing was replicated", FAILURE)
    return 0


def _await(query: Any) -> None:
    # PySpark's own SIGINT handler calls into the JVM from inside the blocked awaitTermination call (a
    # reentrant Py4J call that breaks the gateway): take SIGINT over, wait in short slices, then stop.
    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    try:
        while query.isActive and not interrupted.is_set():
            query.awaitTermination(1)
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set():
        print("\nstopping (the batch in flight, if any, is redone by the next run)", file=sys.stderr)
        query.stop()


def active_session() -> Any:
    """The SparkSession running in this process, if any."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def stop_if_owned(spark: Any, owned: bool) -> None:
    """Stop a SparkSession this command created (one it found running belongs to its caller)."""
    if owned:
        spark.stop()
