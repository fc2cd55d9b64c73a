"""Replication throughput: canal-json capture files → Delta replica tables, against a hand-rolled Spark pipeline.

    .venv/bin/python benchmarks/bench_replication.py [--rows 100000,1000000] [--tables 10] [--engine distributed]
    .venv/bin/python benchmarks/bench_replication.py --scaling --rows 1000000    # local[1] vs local[2], ratio, RSS
    .venv/bin/python benchmarks/bench_replication.py --scaling --rows 1000000 --warmup-rows 0   # pyticdc cold

For each size a seeded OLTP workload (``--tables`` tables of 7 columns: BIGINT key, INT, VARCHAR, DECIMAL,
DATETIME(6), TINYINT, TEXT; 55% inserts, 35% updates, 10% deletes in transactions of 1-5 rows; a resolved
ts every 100 transactions; one ``ADD COLUMN ... DEFAULT`` per table half-way) is routed the way TiCDC
routes it (Canal-JSON with ``enable-tidb-extension``, 3 partitions, default dispatcher) and written to a
JSON Lines capture file, once (cached in ``--data-dir``). Then, in the same run and on the same file:

``pyticdc``   ``SparkReplication`` (the ``pyticdc`` data source on local Spark, the consumer engine and the
              Delta applier): watermarks, de-duplication, commit-ts order, DDL barriers, typed Delta tables,
              exactly-once progress; verified against the workload's final state.
``baseline``  what one writes by hand without pyticdc: ``spark.read.json`` the capture, ``from_json`` the
              Canal-JSON value, explode the rows, ``dropDuplicates``, keep each key's latest change, and
              overwrite one Parquet directory per table. No watermarks (everything is applied), no DDL, no
              types (Canal-JSON carries every value as a string), no exactly-once.

Reports rows/s of each (row changes in the workload / wall-clock seconds), the ratio pyticdc/baseline,
and how pyticdc's time grows from the smallest to the largest size.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pyticdc.model import ActionType, ColumnInfo, DDLEvent, Event, IndexInfo, Op, Row, RowChange, TableInfo, Watermark
from pyticdc.mysql import table_info_with_flags

PROTOCOL = "canal-json"
OPTIONS = {"enable-tidb-extension": "true"}
SCHEMA = "bench"
START_MS = 1_763_000_000_000


def _columns(extra: bool) -> list[ColumnInfo]:
    columns = [
        ColumnInfo(name="id", type_code=8, flen=20, decimal=0, nullable=False, type_desc="bigint(20)"),
        ColumnInfo(name="account", type_code=3, flen=11, decimal=0, type_desc="int(11)"),
        ColumnInfo(name="name", type_code=15, flen=64, charset="utf8mb4", collation="utf8mb4_bin",
                   type_desc="varchar(64)"),
        ColumnInfo(name="amount", type_code=246, flen=12, decimal=2, type_desc="decimal(12,2)"),
        ColumnInfo(name="created", type_code=12, flen=26, decimal=6, type_desc="datetime(6)"),
        ColumnInfo(name="status", type_code=1, flen=4, decimal=0, type_desc="tinyint(4)"),
        ColumnInfo(name="note", type_code=252, flen=65535, charset="utf8mb4", collation="utf8mb4_bin",
                   type_desc="text"),
    ]
    if extra:
        columns.append(ColumnInfo(name="extra", type_code=3, flen=11, decimal=0, nullable=False, default="0",
                                  type_desc="int(11)"))
    return columns


def _info(table: str, table_id: int, version: int, extra: bool) -> TableInfo:
    primary = IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True)
    return table_info_with_flags(SCHEMA, table, table_id, version, _columns(extra), [primary], True)


class Workload:
    """A seeded OLTP change stream over ``tables`` tables and its final state."""

    def __init__(self, rows: int, tables: int, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.rows_target = rows
        self.names = [f"t{i}" for i in range(tables)]
        self.infos = {name: _info(name, 100 + i, 1, False) for i, name in enumerate(self.names)}
        self.state: dict[str, dict[int, Row]] = {name: {} for name in self.names}
        self.next_id = 1
        self.ms = START_MS
        self.row_changes = 0

    def tso(self) -> int:
        """A fresh TSO one millisecond after the previous one."""
        self.ms += 1
        return self.ms << 18

    def _image(self, key: int, extra: bool) -> Row:
        rng = self.rng
        image: dict[str, Any] = {
            "id": key, "account": rng.randrange(10**6), "name": f"customer {rng.randrange(10**7)}".encode(),
            "amount": f"{rng.randrange(10**9) / 100:.2f}",
            "created": f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} "
                       f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}."
                       f"{rng.randrange(10**6):06d}",
            "status": rng.randrange(0, 5), "note": rng.choice([b"", b"gift wrap", "加急 express".encode(), None]),
        }
        if extra:
            image["extra"] = rng.randrange(100)
        return Row(image)

    def events(self) -> Any:
        """The change stream, in commit order, as lists of events (one list per transaction or DDL)."""
        for name in self.names:
            info = self.infos[name]
            columns = ", ".join(f"`{c.name}` {c.type_desc}{'' if c.nullable else ' NOT NULL'}" for c in info.columns)
            query = f"CREATE TABLE `{SCHEMA}`.`{name}` ({columns}, PRIMARY KEY (`id`))"
            yield [DDLEvent(query=query, ddl_type=int(ActionType.CREATE_TABLE), commit_ts=self.tso(),
                            schema=SCHEMA, table=name, table_info=info)]
        yield [Watermark(resolved_ts=self.tso())]
        altered: set[str] = set()
        transactions = 0
        while self.row_changes < self.rows_target:
            if self.row_changes >= self.rows_target // 2 and len(altered) < len(self.names):
                name = self.names[len(altered)]
                altered.add(name)
                pre = self.infos[name]
                post = _info(name, pre.table_id, pre.schema_version + 1, True)
                self.infos[name] = post
                self.state[name] = {k: Row({**r, "extra": 0}) for k, r in self.state[name].items()}
                yield [DDLEvent(query=f"ALTER TABLE `{SCHEMA}`.`{name}` ADD COLUMN `extra` int(11) NOT NULL DEFAULT 0",
                                ddl_type=int(ActionType.ADD_COLUMN), commit_ts=self.tso(), schema=SCHEMA, table=name,
                                table_info=post, pre_table_info=pre)]
            yield self._transaction()
            transactions += 1
            if transactions % 100 == 0:
                yield [Watermark(resolved_ts=self.tso())]
        yield [Watermark(resolved_ts=self.tso())]

    def _transaction(self) -> list[Event]:
        rng = self.rng
        commit_ts = self.tso()
        changes: list[Event] = []
        touched: set[tuple[str, int]] = set()
        for _ in range(rng.randint(1, 5)):
            name = rng.choice(self.names)
            table = self.state[name]
            info = self.infos[name]
            extra = "extra" in info.column_by_name
            roll = rng.random()
            if table and roll < 0.45:
                key = rng.choice(list(table)) if len(table) < 64 else self._some_key(table)
                if (name, key) in touched:
                    continue
                touched.add((name, key))
                old = table[key]
                if roll < 0.35:
                    new = self._image(key, extra)
                    table[key] = new
                    changes.append(RowChange(op=Op.UPDATE, schema=SCHEMA, table=name, commit_ts=commit_ts, columns=new,
                                             pre_columns=old, table_id=info.table_id, physical_table_id=info.table_id,
                                             row_id=key, table_info=info))
                else:
                    del table[key]
                    changes.append(RowChange(op=Op.DELETE, schema=SCHEMA, table=name, commit_ts=commit_ts,
                                             pre_columns=old, table_id=info.table_id, physical_table_id=info.table_id,
                                             row_id=key, table_info=info))
            else:
                key = self.next_id
                self.next_id += 1
                touched.add((name, key))
                image = self._image(key, extra)
                table[key] = image
                changes.append(RowChange(op=Op.INSERT, schema=SCHEMA, table=name, commit_ts=commit_ts, columns=image,
                                         table_id=info.table_id, physical_table_id=info.table_id, row_id=key,
                                         table_info=info))
        self.row_changes += len(changes)
        return changes

    def _some_key(self, table: dict[int, Row]) -> int:
        # Recent keys are the hot ones (and dict order makes "recent" cheap to pick).
        while True:
            key = self.next_id - 1 - int(self.rng.expovariate(1 / 2000))
            if key in table:
                return key


def generate(path: Path, rows: int, tables: int) -> tuple[int, dict[tuple[str, str], Counter[Row]], dict[Any, Any]]:
    """Write the workload's capture file (cached); (row changes, final rows, final table infos)."""
    truth_path = path.with_suffix(".truth.pickle")
    if path.exists() and truth_path.exists():
        with open(truth_path, "rb") as handle:
            cached: tuple[int, dict[tuple[str, str], Counter[Row]], dict[Any, Any]] = pickle.load(handle)
        return cached
    import msgspec

    from pyticdc.io.capture import CaptureWriter
    from pyticdc.routing import Router

    offsets: dict[tuple[str, int], int] = {}

    def numbered(record: Any) -> Any:
        where = (record.topic, record.partition)
        offsets[where] = offsets.get(where, -1) + 1
        return msgspec.structs.replace(record, offset=offsets[where])

    workload = Workload(rows, tables)
    router = Router(PROTOCOL, OPTIONS, default_topic="bench", partitions=3, clock=lambda: workload.ms)
    started = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with CaptureWriter(partial, "jsonl") as writer:
        writer.write_all(numbered(record) for events in workload.events() for record in router.route(events))
        records = writer.count
    partial.rename(path)
    truth = {(SCHEMA, name): Counter(rows.values()) for name, rows in workload.state.items()}
    infos = {(SCHEMA, name): info for name, info in workload.infos.items()}
    result = (workload.row_changes, truth, infos)
    with open(truth_path, "wb") as output:
        pickle.dump(result, output)
    print(f"  generated {workload.row_changes:,} row changes as {records:,} records in "
          f"{time.perf_counter() - started:.0f}s ({path.stat().st_size / 2**20:,.0f} MiB)", file=sys.stderr)
    return result


def run_pyticdc(spark: Any, capture: Path, warehouse: Path, batch_records: int | None,
                engine: str = "distributed") -> tuple[float, int]:
    """Replicate the capture; (seconds, batches)."""
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    shutil.rmtree(warehouse, ignore_errors=True)
    started = time.perf_counter()
    job = SparkReplication(spark, ReplicationSource.capture(PROTOCOL, OPTIONS, capture), warehouse,
                           batch_records=batch_records, engine=engine,
                           on_batch=lambda r: print(f"    batch {r.version}: {r.records:,} records, "
                                                    f"{r.rows_applied:,} rows in {r.seconds:.1f}s", file=sys.stderr))
    group = f"pyticdc-bench-{warehouse.name}"
    spark.sparkContext.setJobGroup(group, "replication")
    reports = job.run()
    seconds = time.perf_counter() - started
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    timings = getattr(job.replicator(), "timings", {})
    spent = ", ".join(f"{stage} {value:.1f}s" for stage, value in timings.items())
    print(f"    {engine}: {len(reports)} batches, {jobs} Spark jobs ({jobs / max(1, len(reports)):.1f} per batch); "
          f"{spent}", file=sys.stderr)
    spark.sparkContext.setJobGroup("other", "other")
    return seconds, len(reports)


def run_baseline(spark: Any, capture: Path, output: Path) -> float:
    """The hand-rolled pipeline; seconds."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BooleanType, LongType, MapType, StringType, StructField, StructType

    shutil.rmtree(output, ignore_errors=True)
    canal = StructType([
        StructField("database", StringType()), StructField("table", StringType()), StructField("isDdl", BooleanType()),
        StructField("type", StringType()), StructField("es", LongType()),
        StructField("pkNames", ArrayType(StringType())),
        StructField("data", ArrayType(MapType(StringType(), StringType()))),
        StructField("_tidb", StructType([StructField("commitTs", LongType())])),
    ])
    started = time.perf_counter()
    raw = spark.read.json(str(capture))
    messages = raw.select(F.from_json(F.unbase64("value").cast("string"), canal).alias("m"))
    rows = (messages.where(~F.col("m.isDdl") & F.col("m.type").isin("INSERT", "UPDATE", "DELETE"))
            .select(F.col("m.table").alias("table"), F.col("m.type").alias("type"),
                    F.col("m._tidb.commitTs").alias("commit_ts"), F.explode("m.data").alias("row"))
            .withColumn("id", F.col("row")["id"]))
    unique = rows.dropDuplicates(["table", "id", "commit_ts", "type"])
    latest = (unique.withColumn("rank", F.row_number().over(
        Window.partitionBy("table", "id").orderBy(F.col("commit_ts").desc(), F.col("type").desc())))
        .where((F.col("rank") == 1) & (F.col("type") != "DELETE")).drop("rank"))
    latest.write.mode("overwrite").partitionBy("table").parquet(str(output))
    return time.perf_counter() - started


def _merge_latest(table: Any) -> Any:
    # The baseline's apply, in an executor: one delta-rs MERGE of a table's latest change per key.
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    name = table.column("table")[0].as_py()
    path = str(Path(table.column("root")[0].as_py()) / name)
    data = table.select(["id", "type", "row"])
    if not DeltaTable.is_deltatable(path):
        write_deltalake(path, data.slice(0, 0))
    (DeltaTable(path).merge(data, predicate="t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_delete(predicate="s.type = 'DELETE'").when_matched_update_all(predicate="s.type != 'DELETE'")
     .when_not_matched_insert_all(predicate="s.type != 'DELETE'").execute())
    return pa.table({"table": [name], "rows": [data.num_rows]})


def run_merge_baseline(spark: Any, capture: Path, output: Path) -> float:
    """Hand-rolled with the same Delta engine: from_json, dropDuplicates, latest per key, MERGE; seconds."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BooleanType, LongType, MapType, StringType, StructField, StructType

    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    canal = StructType([
        StructField("database", StringType()), StructField("table", StringType()), StructField("isDdl", BooleanType()),
        StructField("type", StringType()), StructField("data", ArrayType(MapType(StringType(), StringType()))),
        StructField("_tidb", StructType([StructField("commitTs", LongType())])),
    ])
    started = time.perf_counter()
    raw = spark.read.json(str(capture))
    messages = raw.select(F.from_json(F.unbase64("value").cast("string"), canal).alias("m"))
    rows = (messages.where(~F.col("m.isDdl") & F.col("m.type").isin("INSERT", "UPDATE", "DELETE"))
            .select(F.col("m.table").alias("table"), F.col("m.type").alias("type"),
                    F.col("m._tidb.commitTs").alias("commit_ts"), F.explode("m.data").alias("row"))
            .withColumn("id", F.col("row")["id"].cast("long")))
    unique = rows.dropDuplicates(["table", "id", "commit_ts", "type"])
    latest = (unique.withColumn("rank", F.row_number().over(
        Window.partitionBy("table", "id").orderBy(F.col("commit_ts").desc(), F.col("type").desc())))
        .where(F.col("rank") == 1).drop("rank").withColumn("root", F.lit(str(output)))
        .select("table", "id", "type", "commit_ts", F.to_json("row").alias("row"), "root"))
    latest.groupBy("table").applyInArrow(_merge_latest, "table string, rows bigint").collect()
    return time.perf_counter() - started


def _peak_rss_mb() -> float:
    """This process's peak resident memory in MB.

    Linux's VmHWM, not ``ru_maxrss``: that one survives ``exec``, so a worker would report its parent's peak
    (the parent loaded the workload's truth) whenever that is higher.
    """
    import resource

    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker(args: argparse.Namespace) -> int:
    # One measured run in this process: pyticdc (distributed engine) on ``--master``, then the baseline.
    import json

    from pyticdc.spark.session import spark_session

    spark = spark_session("pyticdc-bench", args.master, {"spark.driver.memory": "2g",
                                                          "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    size = int(args.rows)
    capture = args.data_dir / f"canal-{size}-{args.tables}.jsonl"  # written by scaling() before the workers
    warehouse = args.data_dir / f"warehouse-{args.master.replace('[', '-').rstrip(']')}"
    small = args.data_dir / f"canal-{args.warmup_rows}-{args.tables}.jsonl"
    if args.warmup_rows:
        # Each pipeline once on a small capture right before its measured run, so both are measured on a warm JVM:
        # each runs every query its measured run does, compiled by Spark and JIT-compiled. pyticdc's warm-up takes
        # two batches, as the measured run does (its last batch reads the rows the first staged: queries of their
        # own). The baseline's warm-up comes after pyticdc's measured run: before it, the JIT would still be
        # compiling the baseline's code during pyticdc's run on local[2] and not on local[1], which has no baseline.
        warmup_batches = args.batch_records or max(1, args.warmup_rows * 2 // 3)
        run_pyticdc(spark, small, args.data_dir / f"{warehouse.name}-warmup", warmup_batches, engine="distributed")
    seconds, batches = run_pyticdc(spark, capture, warehouse, args.batch_records, engine="distributed")
    # The driver's peak before the benchmark loads the workload's truth (its final rows: hundreds of MB at 1M).
    rss_mb = _peak_rss_mb()
    row_changes, truth, infos = generate(capture, size, args.tables)
    check = "skipped" if args.no_verify else verify(warehouse, truth, infos)
    baseline = None
    if not args.no_baseline:
        if args.warmup_rows:
            run_merge_baseline(spark, small, args.data_dir / "baseline-warmup")
        baseline = run_merge_baseline(spark, capture, args.data_dir / "baseline-merge")
    print(json.dumps({"seconds": seconds, "batches": batches, "rss_mb": rss_mb, "rows": row_changes,
                      "check": check, "baseline": baseline}))
    spark.stop()
    return 0


def scaling(args: argparse.Namespace) -> int:
    """local[1] and local[2] in subprocesses; ends with the scaling, ratio and driver RSS lines."""
    import json
    import subprocess

    size = int(args.rows.split(",")[-1].replace("_", ""))
    capture = args.data_dir / f"canal-{size}-{args.tables}.jsonl"
    generate(capture, size, args.tables)
    if args.warmup_rows:
        generate(args.data_dir / f"canal-{args.warmup_rows}-{args.tables}.jsonl", args.warmup_rows, args.tables)
    results = {}
    for master in ("local[1]", "local[2]"):
        command = [sys.executable, __file__, "--worker", "--master", master, "--rows", str(size), "--tables",
                   str(args.tables), "--data-dir", str(args.data_dir), "--warmup-rows", str(args.warmup_rows)]
        if args.batch_records is not None:
            command += ["--batch-records", str(args.batch_records)]
        if master == "local[1]" or args.no_baseline:
            command.append("--no-baseline")
        if args.no_verify:
            command.append("--no-verify")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr[-4000:], file=sys.stderr)
            return 1
        results[master] = json.loads(done.stdout.strip().splitlines()[-1])
        for line in done.stderr.splitlines():
            if line.startswith("    "):  # the worker's per-batch and per-stage lines
                print(f"  {master}{line}", file=sys.stderr)
        print(f"  {master}: {results[master]}", file=sys.stderr)
    one, two = results["local[1]"], results["local[2]"]
    rows = two["rows"]
    ok = all(r["check"] in ("ok", "skipped") for r in results.values())
    print(f"scaling: local[1] {one['seconds']:.1f} s, local[2] {two['seconds']:.1f} s, "
          f"speedup {one['seconds'] / two['seconds']:.2f}")
    base = two["baseline"]
    base_rate = rows / base if base else float("nan")
    ratio = base / two["seconds"] if base else float("nan")
    print(f"ratio: pyticdc {rows / two['seconds']:.0f} rows/s, baseline {base_rate:.0f} rows/s, ratio {ratio:.2f}")
    print(f"driver peak RSS: {max(one['rss_mb'], two['rss_mb']):.0f} MB")
    return 0 if ok else 1


def verify(warehouse: Path, truth: dict[tuple[str, str], Counter[Row]], infos: dict[Any, Any]) -> str:
    """'ok' or the first difference between the replica and the workload's final state."""
    from pyticdc.replica.check import compare_replica

    difference = compare_replica(warehouse, truth, infos)
    return "ok" if difference is None else f"DIFFERS: {difference}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="100000,1000000",
                        help="comma-separated workload sizes in row changes (default 100000,1000000)")
    parser.add_argument("--tables", type=int, default=10, help="tables in the workload (default 10)")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "pyticdc-bench",
                        help="where capture files are cached and tables written (default $TMPDIR/pyticdc-bench)")
    parser.add_argument("--batch-records", type=int, default=None,
                        help="records per replication batch (default SparkReplication's for the engine: 200000 on "
                             "the driver engine, 1000000 on the distributed ones)")
    parser.add_argument("--engine", default="distributed", choices=("distributed", "delta-spark", "driver"),
                        help="apply engine of the table mode (default distributed; --scaling always distributed)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the hand-rolled pipeline")
    parser.add_argument("--no-verify", action="store_true", help="skip comparing the replica with the truth")
    parser.add_argument("--scaling", action="store_true",
                        help="the distributed engine on local[1] and local[2] (subprocesses) and the MERGE baseline; "
                             "ends with the scaling, ratio and driver peak RSS lines")
    parser.add_argument("--warmup-rows", type=int, default=100_000,
                        help="--scaling: run each pipeline on a capture of this many row changes in the same JVM "
                             "right before its measured run, so both are measured warm (default 100000). With 0, "
                             "pyticdc runs first on a cold JVM and the baseline after it, on the JVM pyticdc warmed")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--master", default="local[2]", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    if args.scaling:
        return scaling(args)
    sizes = [int(s.replace("_", "")) for s in args.rows.split(",") if s.strip()]

    from pyticdc.spark.session import spark_session

    spark = spark_session("pyticdc-bench", "local[2]", {"spark.driver.memory": "6g",
                                                        "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    for size in sizes:
        print(f"== {size:,} row changes, {args.tables} tables", file=sys.stderr)
        capture = args.data_dir / f"canal-{size}-{args.tables}.jsonl"
        row_changes, truth, infos = generate(capture, size, args.tables)
        seconds, batches = run_pyticdc(spark, capture, args.data_dir / "warehouse", args.batch_records,
                                       engine=args.engine)
        check = "skipped" if args.no_verify else verify(args.data_dir / "warehouse", truth, infos)
        baseline = None if args.no_baseline else run_baseline(spark, capture, args.data_dir / "baseline")
        results.append((size, row_changes, seconds, batches, baseline, check))
        print(f"   pyticdc {seconds:.1f}s ({batches} batches, replica {check}); baseline "
              f"{'-' if baseline is None else f'{baseline:.1f}s'}", file=sys.stderr)
    print(f"\n{'rows':>10} {'pyticdc s':>10} {'rows/s':>9} {'baseline s':>11} {'rows/s':>9} {'ratio':>6}  replica")
    for _size, row_changes, seconds, _batches, baseline, check in results:
        rate = row_changes / seconds
        base_rate = "" if baseline is None else f"{row_changes / baseline:9,.0f}"
        ratio = "" if baseline is None else f"{baseline / seconds:6.2f}"
        print(f"{row_changes:>10,} {seconds:>10.1f} {rate:>9,.0f} {'' if baseline is None else f'{baseline:11.1f}'}"
              f" {base_rate:>9} {ratio:>6}  {check}")
    if len(results) > 1:
        (small, _, small_s, *_), (large, _, large_s, *_) = results[0], results[-1]
        print(f"\ntime grows {large_s / small_s:.1f}x for {large / small:.0f}x the rows "
              f"({'sub' if large_s / small_s < large / small else 'super'}-linear)")
    spark.stop()
    return 0 if all(r[5] in ("ok", "skipped") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
