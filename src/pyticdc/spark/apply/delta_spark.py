"""The ``delta-spark`` apply engine: each table segment's net change MERGEd INTO its table by Delta on Spark.

Same interface and same result as :class:`pyticdc.spark.apply.engines.DeltaRsEngine` — a level's net change
per handle of every table segment in, one result row per table out — and the same tables: the same layout
and typed columns (the source rows are projected by the same code), the same MERGE clauses as
:meth:`pyticdc.replica.store.DeltaStore.merge`, the same positions, so a warehouse written by one engine is
continued by the other (or by the driver engine).

Per level:

1. one Spark job for every table of the level (``groupBy(table).applyInArrow``, tables in parallel): each
   executor reduces its table's actions exactly as the delta-rs engine does (replayed changes skipped, image
   counts folded, DECIMAL widened, a layout change rewritten at the table's position with delta-rs), then
   writes the typed MERGE source to a Parquet file under ``_pyticdc/staging/merge-<id>/`` instead of MERGing;
2. the driver submits one ``MERGE INTO delta.`<table>``` per table that has fresh changes, reading its small
   source file. That is the whole per-table cost: Delta's MERGE jobs (source materialisation, the scan for
   touched files, the rewrite) and one commit; no count or collect job is added. MERGE is a driver-side
   command, so the tables of a level commit one after another (their scans and rewrites are still Spark
   jobs over every core); with hundreds of tiny tables per batch the delta-rs engine, which commits them in
   parallel inside one job, is cheaper.

Idempotence: every MERGE runs with ``spark.databricks.delta.write.txnAppId``/``txnVersion`` set to the
replica's application id and the segment's position, so Delta writes the same application transaction
(``SetTransaction``) delta-rs writes and skips the MERGE when the table already holds that position. A
crash between one table's MERGE and the progress commit is therefore harmless twice over: the re-run sees the
position (its rows count as replayed, nothing is staged) and Delta would skip the command anyway.

DDL stays on the driver (:class:`pyticdc.spark.apply.engines.SegmentReplica`, delta-rs); Delta on Spark's
cached snapshots are dropped before each level so it plans every MERGE against the evolved schema (and a
table moved by a RENAME or DROP is never read from its old log).
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import orjson
import pyarrow as pa

from pyticdc.replica.store import ACTION, SHAPE, DeltaStore
from pyticdc.spark.apply.engines import RESULT_SCHEMA, SegmentTask, apply_segment, task_groups
from pyticdc.spark.apply.segments import LevelRows
from pyticdc.spark.session import session_settings

__all__ = ["TXN_APP_ID", "TXN_VERSION", "DeltaSparkEngine", "merge_statement", "net_change_frame", "stage_groups"]

#: Delta on Spark's session settings that make a DML command an idempotent application transaction.
TXN_APP_ID: Final = "spark.databricks.delta.write.txnAppId"
TXN_VERSION: Final = "spark.databricks.delta.write.txnVersion"
#: Session settings held for the duration of one MERGE: its application transaction, and Parquet timestamps as
#: INT64 microseconds (Spark's default INT96 is not what delta-rs and the replica's schema expect).
_TIMESTAMPS: Final = ("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
#: The staged result row: the engine result, then where the MERGE source is and what it MERGEs on.
STAGED_SCHEMA: Final = RESULT_SCHEMA.append(pa.field("source", pa.string())).append(
    pa.field("on_columns", pa.string())).append(pa.field("soft_columns", pa.string()))


class _StagingStore(DeltaStore):
    """A DeltaStore whose MERGE is written down for Delta on Spark instead of executed by delta-rs."""

    def __init__(self, root: Path, *, app_id: str, storage_options: Mapping[str, str] | None) -> None:
        super().__init__(root, app_id=app_id, storage_options=storage_options)
        self.staged: tuple[pa.Table, list[str], list[str] | None] | None = None

    def merge(self, path: Any, source: pa.Table, *, on: list[str], position: int,
              shapes: Mapping[int, Sequence[str]] | None = None,
              soft_columns: Sequence[str] | None = None) -> dict[str, Any]:
        """Keep the MERGE's source and clauses (its position is the task's)."""
        del path, position
        if shapes:
            raise ValueError("partial-image shapes are not staged for Delta on Spark")  # the engine never sends any
        self.staged = (source, list(on), None if soft_columns is None else list(soft_columns))
        return {}


def stage_groups(tables: Iterator[pa.Table], tasks: Mapping[str, SegmentTask], folder: str) -> Iterator[pa.Table]:
    """``applyInArrow`` body: the reduced actions of one table → its result row, its MERGE source staged."""
    for key, actions, task in task_groups(tables, tasks):
        store = _StagingStore(Path(task.path).parent.parent, app_id=task.app_id,
                              storage_options=task.storage_options)
        result = apply_segment(actions, task, store)
        staged: dict[str, Any] = {"source": None, "on_columns": None, "soft_columns": None}
        if store.staged is not None:
            import pyarrow.parquet as pq

            source, on, soft = store.staged
            target = Path(folder) / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(source, str(target))
            staged = {"source": str(target), "on_columns": orjson.dumps(on).decode(),
                      "soft_columns": None if soft is None else orjson.dumps(soft).decode()}
        yield pa.Table.from_pylist([{"tkey": key, **result, **staged}], schema=STAGED_SCHEMA)


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def merge_statement(path: str, view: str, columns: Sequence[str], on: Sequence[str],
                    soft_columns: Sequence[str] | None) -> str:
    """``MERGE INTO`` the Delta table at ``path`` from ``view``: the clauses of :meth:`DeltaStore.merge`."""
    action = f"s.{_ident(ACTION)}"
    shape = f"s.{_ident(SHAPE)}"
    predicate = " AND ".join(f"t.{_ident(c)} = s.{_ident(c)}" for c in on)
    sets = ", ".join(f"t.{_ident(c)} = s.{_ident(c)}" for c in columns)
    names = ", ".join(_ident(c) for c in columns)
    values = ", ".join(f"s.{_ident(c)}" for c in columns)
    clauses = [f"WHEN MATCHED AND {action} = 'delete' THEN DELETE"]
    if soft_columns is not None:
        soft = ", ".join(f"t.{_ident(c)} = s.{_ident(c)}" for c in soft_columns)
        clauses.append(f"WHEN MATCHED AND {action} = 'soft' AND {shape} <> 0 THEN UPDATE SET {soft}")
    clauses.append(f"WHEN MATCHED AND {action} IN ('upsert', 'soft') THEN UPDATE SET {sets}")
    insert = f"{action} = 'upsert'" if soft_columns is None else \
        f"({action} = 'upsert' OR ({action} = 'soft' AND {shape} = 0))"
    clauses.append(f"WHEN NOT MATCHED AND {insert} THEN INSERT ({names}) VALUES ({values})")
    return (f"MERGE INTO delta.{_ident(path)} AS t USING {_ident(view)} AS s ON {predicate} "
            + " ".join(clauses))


class DeltaSparkEngine:
    """MERGE INTO by Delta on Spark (delta-spark), one command per table segment (see module docstring)."""

    name = "delta-spark"

    def __init__(self, spark: Any, staging: str | Path, hook: Callable[..., None] | None = None) -> None:
        self.spark = spark
        #: Local folder the executors stage MERGE sources in (``_pyticdc/staging`` of the warehouse).
        self.staging = Path(staging)
        #: Called as ``hook("after-table-merge", table=, position=, kind=)`` after each table's MERGE, before the
        #: next one (the replica's crash-test hook: a kill between two tables of a level).
        self.hook = hook
        #: MERGE commands submitted by this engine.
        self.merges = 0

    def apply(self, level: LevelRows, tasks: Mapping[str, SegmentTask]) -> list[dict[str, Any]]:
        """Apply the changes of every task's table; their result rows (one staging job, one MERGE per table)."""
        frozen = dict(tasks)
        # Spark folds each handle's changes (net_change_frame, shuffled by table and handle).
        reduced = net_change_frame(level.frame)
        folder = self.staging / f"merge-{uuid.uuid4().hex}"

        def run(table: pa.Table) -> pa.Table:
            out = list(stage_groups(iter([table]), frozen, str(folder)))
            return out[0] if out else STAGED_SCHEMA.empty_table()

        try:
            staged = reduced.groupBy("tkey").applyInArrow(run, _staged_spark_schema()).toArrow().to_pylist()
            # Snapshots Delta on Spark cached before the driver's DDLs (new schema, a table moved away).
            self.spark.sparkContext._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
            results: list[dict[str, Any]] = []
            for row in sorted(staged, key=lambda r: str(r["tkey"])):
                source = row.pop("source")
                on, soft = row.pop("on_columns"), row.pop("soft_columns")
                if source is not None:
                    task = frozen[row["tkey"]]
                    self.merge(task, source, orjson.loads(on), None if soft is None else orjson.loads(soft))
                    if self.hook is not None:
                        self.hook("after-table-merge", table=tuple(str(row["tkey"]).split("\x00", 1)),
                                  position=task.position, kind="merge")
                results.append(row)
            return results
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def merge(self, task: SegmentTask, source: str, on: list[str], soft: list[str] | None) -> None:
        """MERGE the Parquet ``source`` INTO the task's table at its position (a no-op if the table holds it)."""
        frame = self.spark.read.parquet(source)
        view = f"pyticdc_merge_{uuid.uuid4().hex}"
        columns = [c for c in frame.columns if c not in (ACTION, SHAPE)]
        statement = merge_statement(task.path, view, columns, on, soft)
        held = {TXN_APP_ID: task.app_id, TXN_VERSION: str(task.position), _TIMESTAMPS[0]: _TIMESTAMPS[1]}
        frame.createOrReplaceTempView(view)
        try:
            with session_settings(self.spark, held):
                self.spark.sql(statement)  # a command: runs (or is skipped at its position) right here
            self.merges += 1
        finally:
            self.spark.catalog.dropTempView(view)


def _staged_spark_schema() -> str:
    return ("tkey string, applied bigint, skipped bigint, actions bigint, last_ts bigint, info string, "
            "rewrites bigint, merged boolean, source string, on_columns string, soft_columns string")


def net_change_frame(rows: Any) -> Any:
    """One row per (table, handle): its last action in apply order, and fresh/stale change counts."""
    from pyspark.sql import functions as F

    fresh = (F.col("ts") * 2) > F.col("held")
    order = F.struct("ts", "rank", "sub", (~F.col("staged")).cast("int").alias("new"), "offset", "idx")
    common = ["tkey", "ts", "rank", "row_id", "marks", "hko", "staged", "topic", "partition", "offset", "idx", "held",
              "op"]
    # A delete of the pre-image and an upsert of the post-image per change, as one explode (one pass over the
    # rows; a union would read them twice).
    deletes = F.when(((F.col("op") == "delete") | (F.col("op") == "update")) & F.col("pre").isNotNull(), F.struct(
        F.col("pre_h").alias("h"), F.lit("delete").alias("act"), F.lit(0).alias("sub"), F.col("pre").alias("img"),
        (F.col("op") == "delete").cast("int").alias("primary"), F.lit(-1).alias("delta")))
    upserts = F.when((F.col("op") != "delete") & F.col("post").isNotNull(), F.struct(
        F.col("post_h").alias("h"), F.lit("upsert").alias("act"), F.lit(1).alias("sub"), F.col("post").alias("img"),
        F.lit(1).alias("primary"), F.lit(1).alias("delta")))
    actions = (rows.select(*common, F.explode(F.array(deletes, upserts)).alias("a")).where(F.col("a").isNotNull())
               .select(*common, "a.*").withColumn("fresh", fresh))
    return (actions.groupBy("tkey", "h")
            # The winning change's record (topic, partition, offset): the ``_source_*`` columns.
            .agg(F.max_by(F.struct("act", "ts", "row_id", "img", "marks", "hko", "op",
                                   F.col("topic").alias("src_topic"), F.col("partition").alias("src_partition"),
                                   F.col("offset").alias("src_offset")), order).alias("w"),
                 F.sum(F.when(F.col("fresh"), F.col("primary")).otherwise(0)).alias("fresh"),
                 F.sum(F.when(~F.col("fresh"), F.col("primary")).otherwise(0)).alias("stale"),
                 F.sum(F.when(F.col("fresh"), F.col("delta")).otherwise(0)).alias("net"))
            .select("tkey", "w.*", "fresh", "stale", "net"))
