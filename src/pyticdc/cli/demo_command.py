"""``pyticdc demo``: the main job end to end on a fresh machine — TiDB changes in, verified Delta tables out.

1. starts the embedded defaults: a Kafka-compatible broker (tansu) on a free loopback port, local Spark;
2. simulates a TiDB workload (five table shapes covering every column type, inserts, updates, deletes,
   key changes, and DDL: CREATE, DROP, RENAME, TRUNCATE, ADD/DROP/MODIFY COLUMN, indexes);
3. produces it to a Kafka topic exactly as a TiCDC changefeed would (routing, partitions, watermarks) in
   the chosen protocol (default canal-json with enable-tidb-extension);
4. replicates the topic into Delta tables with Spark (``pyticdc replicate``);
5. checks every replica table against the simulator's ground truth at the commit ts the replica is
   complete up to, and prints the tables, their freshness and the result.

Exit status 0 when the replica equals the source, 1 when it differs (the first difference is printed),
2 when something needed is missing (the broker binary, Java).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyticdc.cli.common import FAILURE, USAGE, parse_assignments, report
from pyticdc.errors import PyticdcError

__all__ = ["add_parser"]

_NEEDS_EXTENSION = ("canal-json", "debezium")


def add_parser(subparsers: Any) -> None:
    """Register ``demo``."""
    parser = subparsers.add_parser(
        "demo", help="simulate TiDB, produce to an embedded Kafka, replicate to Delta with Spark, verify",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-p", "--protocol", default="canal-json", metavar="PROTOCOL",
                        help="protocol of the changefeed: open-protocol, canal-json, craft, debezium or simple "
                             "(default canal-json)")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="NAME=VALUE",
                        help="codec option by its TiCDC name, repeatable (default: TiCDC's defaults, with "
                             "enable-tidb-extension=true for canal-json and debezium)")
    parser.add_argument("--transactions", type=int, default=400, metavar="N",
                        help="transactions to simulate (default 400)")
    parser.add_argument("--seed", type=int, default=1, metavar="N", help="workload seed (default 1)")
    parser.add_argument("--partitions", type=int, default=3, metavar="N", help="partitions of the topic (default 3)")
    parser.add_argument("--warehouse", type=Path, metavar="DIR",
                        help="where to write the Delta tables, kept (default: a new temporary directory, removed at "
                             "the end unless --keep)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary warehouse and the embedded broker's log (default: remove them)")
    parser.add_argument("-b", "--bootstrap-servers", metavar="HOST:PORT",
                        help="use this Kafka instead of starting the embedded broker")
    parser.add_argument("--stream", action="store_true",
                        help="replicate with Structured Streaming (available-now trigger) instead of a batch job")
    parser.set_defaults(run=run_demo)


def _step(number: int, text: str) -> float:
    print(f"[{number}/5] {text}", flush=True)
    return time.perf_counter()


def _done(started: float, text: str = "") -> None:
    print(f"      {text}{' ' if text else ''}({time.perf_counter() - started:.1f}s)", flush=True)


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo; 0 when the replica equals the simulated source."""
    from pyticdc.codec import canonical_protocol

    try:
        protocol = canonical_protocol(args.protocol)
        options: dict[str, Any] = {"enable-tidb-extension": "true"} if protocol in _NEEDS_EXTENSION else {}
        options.update(parse_assignments(args.option, "-o/--option"))
        if args.transactions < 1 or args.partitions < 1:
            raise PyticdcError("--transactions and --partitions must be >= 1")
    except (PyticdcError, ValueError) as exc:
        return report(args, exc, USAGE)
    from pyticdc.cli.replicate_command import active_session, stop_if_owned
    from pyticdc.spark.session import spark_session

    broker = None
    spark = None
    owned = active_session() is None
    try:
        started = _step(1, "starting " + ("local Spark" if args.bootstrap_servers else
                                          "the embedded Kafka broker (tansu, in memory) and local Spark"))
        if args.bootstrap_servers:
            config: dict[str, Any] = {"bootstrap.servers": args.bootstrap_servers}
            producer_config = dict(config)
            where = f"Kafka at {args.bootstrap_servers}"
        else:
            from pyticdc.io.broker import EmbeddedBroker

            broker = EmbeddedBroker().start()
            config, producer_config = broker.config, broker.producer_config
            where = f"broker on {broker.bootstrap}"
        spark = spark_session("pyticdc-demo", "local[2]", {"spark.sql.shuffle.partitions": "2"})
        spark.sparkContext.setLogLevel("ERROR")
        _done(started, f"{where}, Spark {spark.version} local[2];")
        return _run(args, spark, protocol, options, config, producer_config)
    except PyticdcError as exc:
        return report(args, exc, USAGE)
    finally:
        if spark is not None:
            stop_if_owned(spark, owned)
        if broker is not None:
            broker.stop()
            if broker.log is not None and not args.keep:
                broker.log.unlink(missing_ok=True)
        if args.warehouse is None and not args.keep and getattr(args, "temporary_warehouse", None) is not None:
            shutil.rmtree(args.temporary_warehouse, ignore_errors=True)


def _run(args: argparse.Namespace, spark: Any, protocol: str, options: dict[str, Any], config: dict[str, Any],
         producer_config: dict[str, Any]) -> int:
    from pyticdc.cli.replicate_command import BatchPrinter, format_tables
    from pyticdc.codec import make_encoder
    from pyticdc.io.kafka import create_topic, produce_records
    from pyticdc.model import DDLEvent, RowChange
    from pyticdc.replica.check import compare_replica
    from pyticdc.routing import Router
    from pyticdc.routing.stream import retime
    from pyticdc.sim import TruthProjector, WorkloadConfig, simulate
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    started = _step(2, f"simulating a TiDB workload: seed {args.seed}, {args.transactions} transactions with DDL")
    history = simulate(args.seed, WorkloadConfig(transactions=args.transactions, max_table_rows=120))
    # Commit times moved to end now, so the replica's freshness reads like a live changefeed's.
    rate = 200.0
    now_ms = int(time.time() * 1000)
    events, mapping = retime(history.events, start_ms=now_ms - int(args.transactions / rate * 1000), rate=rate)
    ddls = sum(1 for e in events if isinstance(e, DDLEvent))
    _done(started, f"{history.row_events:,} row changes, {ddls} DDL statements on "
                   f"{len(history.truth_at(history.final_resolved_ts))} tables at the end;")

    topic = f"pyticdc-demo-{args.seed}"
    described = f"{protocol} {options}" if options else protocol
    started = _step(3, f"producing it as TiCDC would: {described} to topic {topic} "
                       f"({args.partitions} partitions)")
    last_ms = max(mapping.values()) >> 18
    router = Router(protocol, options, default_topic=topic, partitions=args.partitions, clock=lambda: last_ms)
    records = router.route(events)
    create_topic(config, topic, args.partitions)
    produce_records(producer_config, records)
    _done(started, f"{len(records):,} Kafka records;")

    warehouse = args.warehouse
    if warehouse is None:
        warehouse = args.temporary_warehouse = Path(tempfile.mkdtemp(prefix="pyticdc-demo-"))
    if args.warehouse is not None and warehouse.exists() and any(warehouse.iterdir()):
        shutil.rmtree(warehouse)
    started = _step(4, f"replicating {topic} into Delta tables with Spark ({'streaming' if args.stream else 'batch'})"
                       f" → {warehouse}")
    printer = BatchPrinter(stream=sys.stdout)
    source = ReplicationSource.kafka_topics(protocol, options, {k: str(v) for k, v in config.items()}, topics=topic)
    job = SparkReplication(spark, source, warehouse, batch_records=max(500, len(records) // 3), on_batch=printer)
    if args.stream:
        query = job.start_stream(available_now=True)
        query.awaitTermination()
        if query.exception() is not None:
            raise PyticdcError(f"the streaming query failed: {query.exception()}")
    else:
        job.run()
    printer.close()
    progress = job.replicator().progress
    _done(started, f"{printer.records:,} records, {printer.rows:,} row changes and {printer.ddls} DDL applied in "
                   f"{printer.batches} batches;")

    started = _step(5, "checking every replica table against the simulator's ground truth")
    inverse = {new: old for old, new in mapping.items()}
    complete = progress.consistent_ts
    final = max(mapping.values())
    fixed = history.final_resolved_ts >> 18
    projector = TruthProjector(make_encoder(protocol, options, clock=lambda: fixed))
    truth = history.truth_at(inverse.get(complete, 0))
    difference = None
    if complete != mapping[history.final_resolved_ts]:
        difference = f"the replica is complete up to commit ts {complete}, not to the last watermark {final}"
    if difference is None:
        difference = compare_replica(warehouse, projector.snapshot(truth), {k: t.info for k, t in truth.items()})
    _done(started)
    print()
    print(format_tables(warehouse, progress))
    print()
    rows = sum(len(t.rows) for t in truth.values())
    touched = sum(1 for e in events if isinstance(e, RowChange))
    if difference is not None:
        print(f"RESULT: the replica DIFFERS from the source: {difference}")
        return FAILURE
    print(f"RESULT: OK — {len(truth)} Delta tables hold exactly the source's {rows:,} rows (after {touched:,} row "
          f"changes and {sum(1 for e in events if isinstance(e, DDLEvent))} DDL, replayed and de-duplicated), "
          f"complete up to the last resolved ts.")
    if args.warehouse is None and not args.keep:
        print(f"The temporary warehouse {warehouse} is removed now; --keep (or --warehouse DIR) keeps it.")
        return 0
    print(f"Read them with deltalake (DeltaTable('{warehouse}/sim/<table>').to_pandas()), Polars "
          f"(pl.read_delta), DuckDB (delta_scan) or delta-spark; freshness: {warehouse}/_pyticdc/progress.")
    return 0
