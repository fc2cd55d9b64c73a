"""DistributedReplicator: one committed replica batch where only metadata reaches the driver.

A batch over a DataFrame of Kafka records (the ``pyticdc`` source, or ``format("kafka")``)::

    decode       mapInArrow: records → change rows + metadata rows; each task writes its change rows to one
                 Parquet file (_pyticdc/staging/decoded-v<N>-<id>/) and yields only the metadata, which the
                 driver collects with the files' names (one job; the rows never cross into the JVM or a cache).
                 A capture's batch is a CopyBatch instead: each task reads one file of the capture's copy
                 (pyticdc.spark.capture)
    plan         driver: watermarks, global watermark, DDL to release, waves (pyticdc.spark.apply.plan)
    write        one job writes every change row once, from the decode's files (and the committed staging), into
                 _pyticdc/staging/v<N>: a folder per segment (table, level) to apply and one of the rows above the
                 limit, which the next batch reads. Each task reads one file with pyarrow and marks its rows itself:
                 re-sent rows dropped (each row's resolved ts before it from the decode task's running watermark
                 and the plan's carry per task), segment level by the DDL barriers, above the limit staged
                 (pyticdc.spark.apply.segments). Every (table, level) is numbered before: the decode tasks name
                 their tables, the committed staging its own
    dedup        one job, a task per few parts: every delivery of a change is in one part (its table, its commit
                 ts's level), so each part is de-duplicated alone, rewritten only when an identity repeats (its
                 first delivery kept). The tasks' reports are the batch's summary: per segment its changes,
                 ts range, TableInfos, handle kinds
                 When a task read a partition out of order, for Simple's held rows and for rows a driver-engine
                 state holds, Spark marks the rows instead (mark_columns, broadcast frames of the batch's numbers
                 so the generated code is compiled once), summarizes them in one query on narrow columns
                 (per change identity, then per segment), de-duplicates them only when an identity repeats and
                 hands them to the writing tasks
    per level    net change per (table, handle) (the winner's record: its ``_source_*`` columns) and the apply of
                 every table's segment of the level in one job: delta-rs's tasks read their tables' folders
                 and fold each in Arrow (pyticdc.spark.apply.net); delta-spark's plan reads the level's folders
                 and folds with max_by;
                 tables with a history table fold the level's ordered changes (not the net ones) into versions in a
                 second job, grouped by table (pyticdc.spark.apply.history); then the driver executes the DDLs of
                 the next wave
    commit       quarantine, table row counts, progress with the consumer state (DeltaReplica.commit); the
                 batch's decoded files and applied folders go with it

The work on rows is in the executors' Python tasks (decode, write, de-duplicate, apply); the wide rows are read
from the decode's files once and written once, and in the usual batch never enter the JVM after the decode (the
Spark-marked path shuffles them only when an identity repeats).

The progress and the table positions mean what they mean for the driver engine
(:class:`pyticdc.replica.Replicator`): the consumer state holds offsets, per-partition resolved ts, the
released ts and the DDLs that wait; the rows that wait are in the staging directory of the committed
progress version instead of the state. A re-run after a crash re-reads the records from the committed
offsets and the staged rows of the committed version; each table skips what its position says it holds.

Simple: a row decoded before its schema is known (``held``, the row pickled) is typed where it is once the
driver has learnt the schemas of the batch (BOOTSTRAP, DDL, in-band; kept in the consumer state); until
then it holds the release below its commit ts, as in the consumer engine, and waits in the staging
directory with the other rows above the limit. A held row whose version will never come (only newer
ones are known) and one its schema cannot type are quarantined.
"""

from __future__ import annotations

import functools
import pickle
import shutil
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import orjson
import pyarrow as pa

from pyticdc.arrow.rows import parse_table_info
from pyticdc.codec import canonical_protocol
from pyticdc.codec.timezone import load_zone
from pyticdc.consumer import Consumer, handle_columns
from pyticdc.consumer.schemas import SchemaCache
from pyticdc.consumer.state import ConsumerState, decode_state, encode_state
from pyticdc.consumer.units import ApplyUnit, QuarantinedRecord
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.replica.applier import Hook
from pyticdc.replica.maintenance import TableOptions
from pyticdc.replica.modelling import SOURCE_COLUMNS, Modelling
from pyticdc.replica.pipeline import BatchReport, table_matcher
from pyticdc.replica.store import APP_ID, rows_position
from pyticdc.spark.apply.decode import (
    CHANGE_SCHEMA,
    DECODED_SCHEMA,
    HANDLE_KINDS,
    decode_to_files,
    decoded_row,
    info_id,
    mark_changes,
    resolve_held,
)
from pyticdc.spark.apply.engines import TASKS_PER_CORE, DeltaRsEngine, SegmentReplica, SegmentTask
from pyticdc.spark.apply.history import HistoryTask, history_task, run_history
from pyticdc.spark.apply.plan import BatchPlan, next_barrier, plan_batch
from pyticdc.spark.apply.segments import (
    FILES_SCHEMA,
    PART,
    STAGED_PART,
    UNIQUE_SCHEMA,
    PartSummary,
    SegmentMarks,
    WrittenChanges,
    keep_files,
    spread_tables,
    staged_rows,
    summarize_files,
    unique_parts,
    write_files,
    write_segments,
)
from pyticdc.spark.session import session_settings

__all__ = ["DistributedReplicator", "first_deliveries", "mark_columns", "supports"]

TopicPartition = tuple[str, int]


def supports(protocol: str) -> bool:
    """Whether the distributed apply handles ``protocol`` (every protocol pyticdc decodes)."""
    return bool(canonical_protocol(protocol))


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


class DistributedReplicator:
    """The replication pipeline with decode, de-duplication, net change and MERGE in Spark executors.

    Same constructor arguments and :meth:`process` result as :class:`pyticdc.replica.Replicator`, plus the
    Spark session; :meth:`process` takes a DataFrame with the Kafka source columns instead of records.
    ``merge``: ``delta-rs`` (MERGE in the executors) or ``delta-spark`` (MERGE INTO by Delta on Spark:
    :mod:`pyticdc.spark.apply.delta_spark`).
    """

    def __init__(
        self, spark: Any, warehouse: str | Path, protocol: str, options: Mapping[str, Any] | None = None, *,
        partitions: Mapping[str, int], tables: Sequence[str] | None = None, time_zone: str | None = None,
        hook: Hook | None = None, app_id: str = APP_ID, storage_options: Mapping[str, str] | None = None,
        source: Mapping[str, Any] | None = None, modelling: Modelling | None = None,
        table_options: TableOptions | None = None, merge: str = "delta-rs",
    ) -> None:
        if modelling is not None and modelling.driver_only:
            raise ConfigError(f"the distributed engine does not implement {', '.join(modelling.driver_only)} yet: "
                              "use the driver engine")
        self.protocol = canonical_protocol(protocol)
        self.spark = spark
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        zone = time_zone or str(self.options.get("time-zone", self.options.get("time_zone", "UTC")))
        load_zone(zone)
        self.replica = SegmentReplica(warehouse, app_id=app_id, time_zone=zone, table_filter=table_matcher(tables),
                                      hook=hook, storage_options=storage_options, modelling=modelling,
                                      table_options=table_options)
        progress = self.replica.progress
        recorded = progress.source.get("protocol")
        if recorded and recorded != self.protocol:
            raise ConfigError(f"{warehouse} replicates a {recorded} changefeed; it cannot continue from {self.protocol}"
                              " records (use another warehouse)")
        # Validates protocol and options (watermarks need enable-tidb-extension, ...) and reads the state.
        consumer = Consumer(self.protocol, self.options, partitions=partitions, state=progress.state,
                            unit_states=False)
        self.state = decode_state(consumer.state())
        self.source = {**dict(source or {}), "protocol": self.protocol,
                       "options": {k: v for k, v in sorted(self.options.items())}, "engine": "distributed"}
        self.partitions = dict(partitions)
        #: ``merge``: who MERGEs the segments, delta-rs in the executors or Delta on Spark (``delta-spark``).
        self.engine: Any = DeltaRsEngine()
        if merge == "delta-spark":
            from pyticdc.spark.apply.delta_spark import DeltaSparkEngine

            self.engine = DeltaSparkEngine(spark, self._staging_root(), hook=self.replica.hook_point)
        elif merge != "delta-rs":
            raise ConfigError(f"unknown MERGE engine {merge!r}: delta-rs or delta-spark")
        self._broken: BaseException | None = None
        #: Simple: the schema cache of the committed state.
        self._schemas: SchemaCache | None = None
        #: Spark jobs of the last batch's applies (one per level).
        self.apply_jobs = 0
        #: Seconds spent per stage (decode, dedup, stage, apply, commit) over the batches of this replicator.
        self.timings: dict[str, float] = {}

    @property
    def broken(self) -> bool:
        """Whether a batch failed (build a new one to resume from the progress)."""
        return self._broken is not None

    @property
    def progress(self) -> Any:
        """The last committed progress."""
        return self.replica.progress

    def next_offsets(self) -> dict[TopicPartition, int]:
        """Per partition, the offset the next batch starts at."""
        subscribed = {(t, p): 0 for t, count in self.partitions.items() for p in range(count)}
        return {**subscribed, **self.state.next_offsets}

    def extend_partitions(self, partitions: Mapping[str, int]) -> None:
        """Subscribe to partitions that appeared since."""
        for topic, count in partitions.items():
            self.partitions[topic] = max(self.partitions.get(topic, 0), count)

    def _lap(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + now - since
        return now

    def _staging_root(self) -> Path:
        return Path(str(self.replica.store.internal_path("staging")))  # never remote

    def _staging(self, version: int) -> Path:
        return self._staging_root() / f"v{version}"

    def _infos_path(self, version: int) -> Path:
        return self._staging_root() / f"v{version}.infos.json"

    # ------------------------------------------------------------------ a batch
    def process(self, records: Any) -> BatchReport:
        """Replicate one DataFrame of raw records (Kafka source columns); the committed batch's report."""
        if self._broken is not None:
            raise ReplicaError(f"this replicator failed ({self._broken!r}): create a new one to resume")
        started = time.perf_counter()
        try:
            report = self._process(records)
        except BaseException as exc:
            self._broken = exc
            raise
        report.seconds = time.perf_counter() - started
        return report

    def _tables_path(self, version: int) -> Path:
        # The table keys of a version's staged rows (the write of the next batch numbers their segments).
        return self._staging_root() / f"v{version}.tables.json"

    def _decode(self, records: Any, version: int) -> tuple[Any, list[dict[str, Any]], list[str], set[str]]:
        """The batch's change rows (a frame over the decode tasks' files), its metadata rows (collected), the
        files and the table keys of their rows.

        ``records``: a DataFrame of Kafka source columns, or a :class:`~pyticdc.spark.capture.CopyBatch` (its
        decode tasks read one copy file each).
        """
        from pyspark.sql import functions as F

        from pyticdc.spark.capture import CopyBatch, decode_copy

        start = self.next_offsets()
        # One folder per attempt of a batch: a crashed attempt's files are never read, and go with the next commit.
        folder = self._staging_root() / f"decoded-v{version + 1}-{uuid.uuid4().hex}"
        settings: dict[str, Any] = {"directory": str(folder), "protocol": self.protocol, "options": self.options,
                                    "start": start, "keys": self.replica.modelling.keys}
        schema = _spark_schema(DECODED_SCHEMA)
        if isinstance(records, CopyBatch):
            count = len(records.paths)
            decoded = (self.spark.range(count, numPartitions=count)
                       .mapInArrow(functools.partial(decode_copy, copy=records, **settings), schema)
                       if count else None)
        else:
            columns = ["key", "value", "topic", "partition", "offset"]
            raw = records.select(*[F.col(c) for c in columns]).withColumn("partition", F.col("partition").cast("int"))
            decoded = raw.mapInArrow(functools.partial(decode_to_files, **settings), schema)
        rows = [] if decoded is None else decoded.toArrow().to_pylist()
        files = [row["text"] for row in rows if row["kind"] == "file"]
        tables = {row["tkey"] for row in rows if row["kind"] == "table"}
        meta = [row for row in rows if row["kind"] not in ("file", "table")]
        if not files:
            return self.spark.createDataFrame([], schema), meta, files, tables
        return self.spark.read.schema(schema).parquet(*files), meta, files, tables

    def _process(self, records: Any) -> BatchReport:
        version = self.progress.version
        report = BatchReport(version=version + 1)
        stats_before = msgspec.structs.replace(self.replica.stats)
        filtered_before = set(self.replica.filtered_tables)
        by_table_before = dict(self.replica.rows_by_table)
        clock = time.perf_counter()
        decoded, meta, files, tables = self._decode(records, version)
        clock = self._lap("decode", clock)
        # The decode's files (and the staged rows) are read a task per file: Spark would pack them into as few
        # tasks as 128 MB each makes, three of about equal size for 1M rows, which leave one core idle a third of
        # the time; a file holds one decode task's records, so they are of about equal size.
        with session_settings(self.spark, _FILE_PER_TASK):
            subscription = [(t, p) for t, count in self.partitions.items() for p in range(count)]
            plan = plan_batch(meta, self.state, subscription, self.protocol)
            schemas: SchemaCache | None = None
            dropped: list[bytes] = []
            if self.protocol == "simple":
                schemas = self._learn_schemas(meta, plan)
                plan, dropped = self._hold_for_schemas(decoded, meta, plan, schemas, version, subscription)
            for topic, count in _counts(plan.next_offsets).items():
                self.partitions[topic] = max(self.partitions.get(topic, 0), count)
            report.records = plan.records + len(plan.lines)
            limit = plan.limit
            inputs = self._file_inputs(files, plan, version, schemas)
            if inputs is not None:
                # The usual batch: tasks read, mark and write the files; the summary is what they report.
                summary, written, clock = self._write_rows(inputs, tables | self._staged_tables(version, plan),
                                                           plan, version + 1, clock)
            else:
                marked = self._changes(decoded, plan, version, schemas, dropped)
                summary = _summarize(marked, plan.infos, self.spark)
                clock = self._lap("dedup", clock)
                # A feed re-sends rarely: the rows are de-duplicated (a shuffle of every wide row) only when an
                # identity repeats.
                duplicates = any(s["copies"] > s["rows"] for s in summary)
                # One write of every unique change row, a folder per (table, level) segment applied and one
                # (part=-1) for the rows above the limit: the staging the next batch reads. The apply tasks read
                # their tables'.
                written = self._write_changes(marked, duplicates, summary, version + 1)
            pending = sum(s["rows"] for s in summary if s["pending"])
            if pending:
                # The staged rows' TableInfos by digest (the next batch's metadata names only those it decodes),
                # and their tables.
                wanted = {i for s in summary if s["pending"] for i in s["infos"]}
                self._infos_path(version + 1).write_bytes(
                    orjson.dumps({i: plan.infos[i] for i in sorted(wanted) if i in plan.infos}))
                self._tables_path(version + 1).write_bytes(
                    orjson.dumps(sorted({t for s in summary if s["pending"] for t in s["tkeys"]})))
            clock = self._lap("stage", clock)
        self.apply_jobs = 0
        for level in range(plan.waves + 1):
            segments = [s for s in summary if not s["pending"] and s["level"] == level]
            if segments:
                self._apply_level(written, plan, level, segments)
            for wave, ddl in plan.ddls:
                if wave == level + 1:
                    self.replica.apply(ApplyUnit(kind="ddl", ddl=ddl, consistent_ts=ddl.commit_ts))
        if written is not None:
            written.discard_applied()  # a re-run reads the committed staging, never these
        clock = self._lap("apply", clock)
        self._quarantine(plan)
        self.replica.apply(ApplyUnit(kind="checkpoint", consistent_ts=limit))
        released = sum(s["rows"] for s in summary if not s["pending"])
        new_rows = sum(s["rows"] - s["staged"] for s in summary)
        read_rows = sum(r["row_id"] or 0 for r in meta if r["kind"] == "part")
        if schemas is not None:
            schemas.prune(limit)
        state = self._next_state(plan, released, new_rows, read_rows,
                                 self.state.schemas if schemas is None else schemas.to_builtins())
        progress = self.replica.commit(encode_state(state), source=self.source,
                                       stats={"consumer": msgspec.to_builtins(state.stats), "pending_rows": pending})
        self.state = state
        self._schemas = schemas
        self._clean_staging(progress.version)
        self._lap("commit", clock)
        replica = self.replica.stats
        report.version = progress.version
        report.consistent_ts = progress.consistent_ts
        report.rows_released = released
        report.ddls_released = len(plan.ddls)
        report.rows_applied = replica.rows_applied - stats_before.rows_applied
        report.quarantined = replica.quarantined - stats_before.quarantined
        report.watermark = min(plan.resolved.values()) if plan.resolved else 0
        report.pending_rows = pending
        report.tables = dict(progress.tables)
        report.unhandled_ddl = list(self.replica.unhandled)
        report.rows_duplicate = max(0, read_rows - new_rows)
        report.rows_filtered = replica.rows_filtered - stats_before.rows_filtered
        report.filtered_tables = sorted(self.replica.filtered_tables - filtered_before)
        report.rows_by_table = {key: count - by_table_before.get(key, 0)
                                for key, count in self.replica.rows_by_table.items()
                                if count != by_table_before.get(key, 0)}
        report.rejected = len(plan.quarantined) + len(plan.lines)
        return report

    def _sources(self, decoded: Any, plan: BatchPlan, version: int) -> list[tuple[Any, bool]]:
        """The batch's change rows as decoded (DECODED_SCHEMA frames), each with whether it was staged."""
        frames = [(decoded, False)]
        staging = staged_rows(self._staging(version))
        if staging is not None:
            self._learn_staged_infos(version, plan)
            frames.append((self.spark.read.schema(_spark_schema(DECODED_SCHEMA)).parquet(str(staging)), True))
        if self.state.rows:
            # A state written by the driver engine holds its waiting rows itself: they join as staged rows.
            key_for = self.replica.modelling.key_for
            rows = [decoded_row(b.row, key_for(b.row.schema, b.row.table), b.origin) for b in self.state.rows]
            table = pa.Table.from_pylist(rows, schema=CHANGE_SCHEMA).drop_columns(["staged", "level"])
            frames.append((self.spark.createDataFrame(table.to_pandas(), schema=_spark_schema(DECODED_SCHEMA)), True))
            for buffered in self.state.rows:
                if buffered.row.table_info is not None and buffered.row.table_info.columns:
                    ident, text = info_id(buffered.row.table_info)
                    plan.infos.setdefault(ident, text)
        return frames

    def _marked(self, decoded: Any, plan: BatchPlan, version: int, schemas: SchemaCache | None,
                only_held: bool = False) -> Any:
        """The change rows of the batch (decoded and staged), held rows typed where their schema is known, marked.

        Not de-duplicated (see :meth:`_unique`), in the partitioning they were read in.
        """
        from pyspark.sql import functions as F

        schema = _spark_schema(CHANGE_SCHEMA)
        union = None
        for frame, staged in self._sources(decoded, plan, version):
            if only_held:
                frame = frame.where(F.col("kind") == "held")
            if schemas is not None:
                # Only held rows go through Python again; the others keep their columns as they are.
                typed = frame.where(F.col("kind") == "held").mapInArrow(
                    functools.partial(resolve_held, versions=schemas.versions(), keys=self.replica.modelling.keys),
                    _spark_schema(DECODED_SCHEMA))
                frame = typed if only_held else frame.where(F.col("kind") != "held").unionByName(typed)
            marked = mark_columns(self.spark, frame, plan, staged)
            if marked is None:
                marked = frame.mapInArrow(
                    functools.partial(mark_changes, marks=plan.marks, staged=staged, limit=plan.limit), schema)
            union = marked if union is None else union.unionByName(marked)
        assert union is not None  # the decoded frame is always a source
        return union

    def _unique(self, marked: Any, duplicates: bool) -> Any:
        """One row per change identity (a shuffle by table and identity, only when an identity repeats)."""
        if not duplicates:
            return marked
        if set(SOURCE_COLUMNS) & set(self.replica.modelling.metadata_columns):
            return first_deliveries(marked)
        return marked.dropDuplicates(["tkey", "ident"])

    def _file_inputs(self, files: list[str], plan: BatchPlan, version: int,
                     schemas: SchemaCache | None) -> list[tuple[str, bool]] | None:
        """The files the write's tasks read themselves, each with whether it holds staged rows (the decode's, then
        the committed version's staged ones); None when the rows need Spark: Simple's held rows, a task read a
        partition out of order, rows a driver-engine state holds, staged rows whose tables were not noted."""
        if schemas is not None or plan.carry is None or self.state.rows:
            return None
        inputs = [(path, False) for path in files]
        staged = staged_rows(self._staging(version))
        if staged is not None:
            if not self._tables_path(version).exists():
                return None
            inputs += [(str(path), True) for path in sorted(staged.glob("*.parquet"))]
        return inputs

    def _staged_tables(self, version: int, plan: BatchPlan) -> set[str]:
        """The table keys of the committed version's staged rows (their TableInfos go into the plan)."""
        path = self._tables_path(version)
        if staged_rows(self._staging(version)) is None or not path.exists():
            return set()
        self._learn_staged_infos(version, plan)
        return set(orjson.loads(path.read_bytes()))

    def _learn_staged_infos(self, version: int, plan: BatchPlan) -> None:
        # The staged rows' TableInfos by digest (the batch's metadata names only those it decodes).
        infos = self._infos_path(version)
        if infos.exists():
            for ident, text in orjson.loads(infos.read_bytes()).items():
                plan.infos.setdefault(ident, text)

    def _write_rows(self, inputs: list[tuple[str, bool]], tables: set[str], plan: BatchPlan, version: int,
                    clock: float) -> tuple[list[dict[str, Any]], WrittenChanges | None, float]:
        """Every change row of the batch written once into ``staging/v<version>`` by tasks that read and mark the
        files themselves (:func:`~pyticdc.spark.apply.segments.write_files`: the rows never enter the JVM), then
        de-duplicated part by part (:func:`~pyticdc.spark.apply.segments.unique_parts`); the batch's summary, from
        what the tasks report, the written changes (None when none) and the clock after its laps.

        Every (table, level) the batch can have is numbered before the write (the decode tasks name their
        tables, the committed staging its own).
        """
        assert plan.carry is not None  # _file_inputs
        folder = self._staging(version)
        # A crashed attempt's rows (its staged ones would otherwise be the committed version's).
        shutil.rmtree(folder, ignore_errors=True)
        segments = sorted((key, level) for key in tables for level in range(plan.waves + 1))
        parts = {segment: n for n, segment in enumerate(segments)}
        marks = SegmentMarks(released=plan.marks.released, limit=plan.limit, global_barriers=plan.marks.global_barriers,
                             barriers=plan.marks.barriers, carry=plan.carry, parts=parts)
        count = len(inputs)
        if not count:
            return [], None, clock
        files = (self.spark.range(count, numPartitions=count)
                 .mapInArrow(functools.partial(write_files, inputs=inputs, marks=marks, folder=str(folder)),
                             _spark_schema(FILES_SCHEMA)).toArrow())
        keep_files(folder, files.column("file").to_pylist())
        clock = self._lap("stage", clock)
        described = summarize_files(files)
        if not described:
            return [], None, clock
        # Every delivery of a change is in one part (its table, its commit ts's level): a task per few parts.
        groups = spread_tables({part: d.rows for part, d in described.items()},
                               TASKS_PER_CORE * self.spark.sparkContext.defaultParallelism)
        unique = (self.spark.range(len(groups), numPartitions=len(groups))
                  .mapInArrow(functools.partial(unique_parts, folder=str(folder), groups=groups),
                              _spark_schema(UNIQUE_SCHEMA)).toArrow().to_pylist())
        found = {row[PART]: row for row in unique}
        if set(found) != set(described) or any(found[p]["copies"] != d.rows for p, d in described.items()):
            raise ReplicaError(f"the batch's written parts {sorted(described)} were read back as {sorted(found)}: "
                               "a bug in pyticdc, please report it")
        numbered = {n: segment for segment, n in parts.items()}
        summary = [_segment_summary(numbered.get(part, ("", -1)), described[part], found[part], plan.infos)
                   for part in sorted(described)]
        sizes = {(s["tkey"], s["level"]): s["rows"] for s in summary if not s["pending"]}
        written = WrittenChanges(self.spark, folder, {s: parts[s] for s in sizes}, sizes)
        return summary, written, self._lap("dedup", clock)

    def _write_changes(self, marked: Any, duplicates: bool, summary: list[dict[str, Any]],
                       version: int) -> WrittenChanges | None:
        """Every unique change row of the batch, marked by Spark, written once into ``staging/v<version>``: a folder
        per segment applied (``part=<n>``) and one for the rows above the limit (``part=-1``, read by the next
        batch); None when none."""
        from pyspark.sql import functions as F

        folder = self._staging(version)
        # A crashed attempt's rows (its staged ones would otherwise be the committed version's).
        shutil.rmtree(folder, ignore_errors=True)
        if not summary:
            return None
        segments = sorted((s["tkey"], s["level"]) for s in summary if not s["pending"])
        parts = {segment: n for n, segment in enumerate(segments)}
        numbers = local_frame(self.spark, {"tkey": pa.array([t for t, _ in segments], pa.string()),
                                           "level": pa.array([lv for _, lv in segments], pa.int32()),
                                           PART: pa.array(range(len(segments)), pa.int32())})
        rows = (self._unique(marked, duplicates).join(F.broadcast(numbers), ["tkey", "level"], "left")
                .select(*DECODED_SCHEMA.names, "staged", F.coalesce(F.col(PART), F.lit(STAGED_PART)).alias(PART)))
        files = rows.mapInArrow(functools.partial(write_segments, folder=str(folder)),
                                _spark_schema(FILES_SCHEMA)).toArrow()
        keep_files(folder, files.column("file").to_pylist())
        sizes = {(s["tkey"], s["level"]): s["rows"] for s in summary if not s["pending"]}
        # The tasks wrote what the summary counted, segment by segment (the marks of both are the same rules).
        counted = {parts[segment]: rows for segment, rows in sizes.items()}
        counted[STAGED_PART] = sum(s["rows"] for s in summary if s["pending"])
        found = dict.fromkeys(counted, 0)
        for part, rows in zip(files.column(PART).to_pylist(), files.column("rows").to_pylist()):
            found[part] = found.get(part, 0) + rows
        if found != counted:
            raise ReplicaError(f"the batch's rows were written {found} per segment, where its summary counted "
                               f"{counted}: a bug in pyticdc, please report it")
        return WrittenChanges(self.spark, folder, parts, sizes)

    def _changes(self, decoded: Any, plan: BatchPlan, version: int, schemas: SchemaCache | None,
                 dropped: list[bytes]) -> Any:
        from pyspark.sql import functions as F

        changes = self._marked(decoded, plan, version, schemas)
        if schemas is None:
            return changes
        # Held rows below the limit are the quarantined ones (the others hold the limit below them).
        kept = (F.col("kind") == "row") | ((F.col("kind") == "held") & (F.col("level") < 0))
        if dropped:
            kept = kept & ~F.col("ident").isin(dropped)
        return changes.where(kept)

    def _learn_schemas(self, meta: list[dict[str, Any]], plan: BatchPlan) -> SchemaCache:
        """The consumer state's schema cache with what the batch brings (BOOTSTRAP, DDL, in-band schemas)."""
        # The committed batch's cache (the state's builtins hold encoded schemas once written).
        cache = self._schemas if self._schemas is not None else SchemaCache.from_builtins(self.state.schemas)
        for row in meta:
            if row["kind"] == "boot":
                cache.learn_bootstrap(pickle.loads(row["raw_value"]))
            elif row["kind"] == "ddl":
                cache.learn_ddl(pickle.loads(row["raw_value"]))
            elif row["kind"] == "info":
                info = parse_table_info(row["text"])
                if info.schema_version and info.columns:
                    cache.learn(info, info.schema_version)
        self._name_schemas(cache, plan)
        return cache

    @staticmethod
    def _name_schemas(cache: SchemaCache, plan: BatchPlan) -> None:
        # Rows typed in the executors name their TableInfo by digest: the driver knows them all.
        for _valid_from, info in cache.versions():
            ident, text = info_id(info)
            plan.infos.setdefault(ident, text)

    def _hold_for_schemas(self, decoded: Any, meta: list[dict[str, Any]], plan: BatchPlan, cache: SchemaCache,
                          version: int, subscription: list[TopicPartition]) -> tuple[BatchPlan, list[bytes]]:
        """The plan with its limit held below rows still without schema; the held rows quarantined instead."""
        from pyspark.sql import functions as F

        waiting = (self._marked(decoded, plan, version, cache, only_held=True).where(F.col("kind") != "row")
                   .select("kind", "tkey", "ts", "ident", "text", "topic", "partition", "offset").toArrow().to_pylist())
        hold: int | None = None
        quarantined: list[QuarantinedRecord] = []
        dropped: list[bytes] = []
        for row in sorted(waiting, key=lambda r: (r["ts"], r["tkey"], r["ident"])):
            schema, table = row["tkey"].split("\x00", 1)
            where = {"topic": row["topic"] or "", "partition": row["partition"], "offset": row["offset"]}
            if row["kind"] == "error":
                quarantined.append(QuarantinedRecord(**where, protocol=self.protocol, reason=row["text"]))
                dropped.append(row["ident"])
            elif row["ts"] <= plan.watermark:
                newest = cache.newest_valid_from(schema, table)
                if newest is not None and newest > row["ts"]:
                    # That version will never come (BOOTSTRAP carries the current one): waiting would block.
                    quarantined.append(QuarantinedRecord(
                        **where, protocol=self.protocol,
                        reason=f"row {schema}.{table}@{row['ts']}: its schema version was never delivered "
                               "(only newer ones)"))
                    dropped.append(row["ident"])
                else:
                    hold = row["ts"] - 1 if hold is None else min(hold, row["ts"] - 1)
        if hold is not None and hold < plan.limit:
            plan = plan_batch(meta, self.state, subscription, self.protocol, hold=hold)
            self._name_schemas(cache, plan)
        plan.quarantined.extend(quarantined)
        return plan, dropped

    def _apply_level(self, written: WrittenChanges | None, plan: BatchPlan, level: int,
                     segments: list[dict[str, Any]]) -> None:
        from pyspark.sql import functions as F

        tasks: dict[str, SegmentTask] = {}
        meta: dict[str, tuple[str, tuple[str, ...]]] = {}
        firsts: dict[str, int] = {}
        for seg in sorted(segments, key=lambda s: s["tkey"]):
            key_text = seg["tkey"]
            schema, table = key_text.split("\x00", 1)
            infos = [parse_table_info(plan.infos[i]) for i in seg["infos"] if i in plan.infos]
            latest = parse_table_info(plan.infos[seg["latest"]]) if seg["latest"] in plan.infos else None
            strategy = _strategy(set(seg["hkinds"]), f"{schema}.{table}")
            override = self.replica.modelling.key_for(schema, table)
            if override is not None and latest is not None:
                self.replica.modelling.check_table(latest)  # an unknown key column: ConfigError, as the driver
            columns = handle_columns(latest) if override is None else override
            barrier = next_barrier(plan, key_text, level)
            position = rows_position(plan.limit if barrier is None else max(seg["last_ts"], barrier - 1))
            task = self.replica.prepare((schema, table), infos, seg["first_ts"], bool(seg["any_rowid"]), strategy,
                                        columns, position, seg["rows"])
            if task is not None:
                tasks[key_text] = task
                meta[key_text] = (strategy, columns)
                firsts[key_text] = seg["first_ts"]
        if not tasks:
            return
        assert written is not None  # segments to apply: the batch wrote its rows
        held = local_frame(self.spark, {"tkey": pa.array(list(tasks), pa.string()),
                                        "held": pa.array([t.held for t in tasks.values()], pa.int64())})
        rows = written.frame(level, list(tasks)).join(F.broadcast(held), "tkey")
        for key_text, task in tasks.items():
            self.replica.hook_point("before-table-commit", table=tuple(key_text.split("\x00", 1)),
                                    position=task.position, kind="merge")
        results = self.engine.apply(written.level(level, list(tasks), rows), tasks)
        self.apply_jobs += 1
        for result in results:
            key_text = result["tkey"]
            strategy, columns = meta[key_text]
            key = key_text.split("\x00", 1)
            self.replica.finish((key[0], key[1]), tasks[key_text], result, strategy, columns)
        for key_text, task in tasks.items():
            self.replica.hook_point("after-table-commit", table=tuple(key_text.split("\x00", 1)),
                                    position=task.position, kind="merge")
        if self.replica.history is not None:
            self._apply_history(rows, tasks, meta, firsts)

    def _apply_history(self, rows: Any, tasks: Mapping[str, SegmentTask],
                       meta: Mapping[str, tuple[str, tuple[str, ...]]], firsts: Mapping[str, int]) -> None:
        # Every change of the level, not the net one, for the tables with history (pyticdc.spark.apply.history).
        history: dict[str, HistoryTask] = {}
        for key_text, task in tasks.items():
            schema, table = key_text.split("\x00", 1)
            made = history_task(self.replica, (schema, table), meta[key_text][0], task.key_columns, firsts[key_text],
                                task.position)
            if made is not None:
                history[key_text] = made
        if not history:
            return
        for key_text, made in history.items():
            self.replica.hook_point("before-table-commit", table=tuple(key_text.split("\x00", 1)),
                                    position=made.position, kind="history")
        assert self.replica.history is not None
        self.replica.history.versions_written += run_history(rows, history)
        self.apply_jobs += 1
        for key_text, made in history.items():
            self.replica.store.forget(Path(made.path))  # written by another process: re-open for its new version
            self.replica.hook_point("after-table-commit", table=tuple(key_text.split("\x00", 1)),
                                    position=made.position, kind="history")

    def _quarantine(self, plan: BatchPlan) -> None:
        from pyticdc.io.capture import BAD_LINE_PARTITION, bad_line_reason

        records = list(plan.quarantined)
        for topic, offset, key, value in plan.lines:
            # The key of a capture line that is not a record is its reason (pyticdc.io.capture.bad_line_record).
            records.append(QuarantinedRecord(topic=topic, partition=BAD_LINE_PARTITION, offset=offset,
                                             protocol=self.protocol, reason=bad_line_reason(topic, offset, key, value),
                                             value=value))
        if records:
            self.replica.apply(ApplyUnit(kind="quarantine", quarantined=tuple(records),
                                         consistent_ts=self.replica.consistent_ts))

    def _next_state(self, plan: BatchPlan, released: int, new_rows: int, read_rows: int,
                    schemas: list[Any]) -> ConsumerState:
        stats = msgspec.structs.replace(self.state.stats)
        stats.records += plan.records
        stats.rows_buffered += new_rows
        stats.rows_replayed += 0
        stats.rows_duplicate += max(0, read_rows - new_rows)
        stats.rows_released += released
        stats.ddls_released += len(plan.ddls)
        stats.ddls_replayed += plan.ddls_replayed
        stats.ddls_duplicate += plan.ddls_duplicate
        stats.watermarks += plan.watermarks
        stats.watermarks_stale += plan.watermarks_stale
        stats.quarantined += len(plan.quarantined)
        return ConsumerState(protocol=self.protocol, next_offsets=plan.next_offsets, resolved=plan.resolved,
                             released_ts=plan.limit, next_seq=self.state.next_seq, rows=[], ddls=plan.pending_ddls,
                             schemas=schemas, stats=stats, quarantine_marks=plan.quarantine_marks)

    def _clean_staging(self, committed: int) -> None:
        root = Path(str(self.replica.store.internal_path("staging")))  # local: see SparkReplication
        if not root.is_dir():
            return
        for folder in root.iterdir():
            if folder.name in (f"v{committed}", f"v{committed}.infos.json", f"v{committed}.tables.json"):
                continue
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
            else:
                folder.unlink(missing_ok=True)


#: Each file read is a task of its own (up to Spark's 128 MB a task): its open is charged as a full task.
_FILE_PER_TASK: Final = {"spark.sql.files.openCostInBytes": str(128 << 20)}


def _counts(offsets: Mapping[TopicPartition, int]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic, partition in offsets:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    return counts


def _strategy(kinds: set[str], name: str) -> str:
    if "nokey" in kinds:
        # As the driver engine (pyticdc.replica.changes.segment_strategy): no row is found by a key it lacks.
        raise ReplicaError(f"{name}: a change lacks key column(s) of --table-key: the row cannot be found by them")
    if len(kinds) == 1:
        return next(iter(kinds))
    raise ReplicaError(f"{name}: rows of one segment name their handles differently ({sorted(kinds)}); the "
                       "distributed engine cannot fold them: use engine='driver'")


def local_frame(spark: Any, columns: Mapping[str, pa.Array]) -> Any:
    """A small DataFrame of driver values, built from Arrow in the JVM (from Python rows, every Spark job reading
    it would start Python workers to unpickle them)."""
    return spark.createDataFrame(pa.table(dict(columns)))


def mark_columns(spark: Any, frame: Any, plan: BatchPlan, staged: bool) -> Any:
    """:func:`~pyticdc.spark.apply.decode.mark_changes` as Spark columns: rows above the limit get level -1.

    No Python pass over the rows; None when the plan cannot tell re-sends so (a task read out of order). The
    batch's numbers (released ts, limit, carried resolved ts, DDL barriers) come in as small broadcast frames,
    not literals: Spark writes literal numbers into the code it generates, so each batch would compile new
    classes, and the JVM optimize them again.
    """
    from pyspark.sql import functions as F

    if not staged and plan.carry is None:
        return None
    names = [*DECODED_SCHEMA.names, "staged", "level"]
    # Every row falls in exactly one range of the global barriers: an inner join that also brings the numbers.
    lows, highs, levels = _ranges(*plan.marks.global_barriers)
    count = len(lows)
    frame = frame.join(F.broadcast(local_frame(spark, {
        "g_lo": pa.array(lows, pa.int64()), "g_hi": pa.array(highs, pa.int64()),
        "g_level": pa.array(levels, pa.int32()), "p_released": pa.array([plan.marks.released] * count, pa.int64()),
        "p_limit": pa.array([plan.limit] * count, pa.int64())})),
        (F.col("ts") > F.col("g_lo")) & (F.col("ts") <= F.col("g_hi")))
    level = F.col("g_level")
    own: dict[str, list[Any]] = {"l_tkey": [], "l_lo": [], "l_hi": [], "l_level": []}
    for key, (times, waves) in sorted(plan.marks.barriers.items()):
        lows, highs, levels = _ranges(times, waves)
        own["l_tkey"] += [key] * len(lows)
        own["l_lo"] += lows
        own["l_hi"] += highs
        own["l_level"] += levels
    if own["l_tkey"]:
        # A table with barriers of its own (the global ones merged in) is levelled by them only.
        frame = frame.join(F.broadcast(local_frame(spark, {
            "l_tkey": pa.array(own["l_tkey"], pa.string()), "l_lo": pa.array(own["l_lo"], pa.int64()),
            "l_hi": pa.array(own["l_hi"], pa.int64()), "l_level": pa.array(own["l_level"], pa.int32())})),
            (F.col("tkey") == F.col("l_tkey")) & (F.col("ts") > F.col("l_lo")) & (F.col("ts") <= F.col("l_hi")),
            "left")
        level = F.coalesce(F.col("l_level"), level)
    if not staged and plan.carry:
        # A re-sent row: at or below the released ts, or its partition's resolved ts where it was read.
        frame = frame.join(F.broadcast(local_frame(spark, {
            "topic": pa.array([t for t, _, _ in plan.carry], pa.string()),
            "partition": pa.array([p for _, p, _ in plan.carry], pa.int32()),
            "seg": pa.array([s for _, _, s in plan.carry], pa.int64()),
            "carry": pa.array(list(plan.carry.values()), pa.int64())})), ["topic", "partition", "seg"], "left")
    if not staged:
        before = F.greatest(F.col("rb"), F.coalesce(F.col("carry"), F.col("rb"))) if plan.carry else F.col("rb")
        frame = frame.where((F.col("ts") > F.col("p_released")) & (F.col("ts") > before))
    level = F.when(F.col("ts") > F.col("p_limit"), F.lit(-1)).otherwise(level)
    return frame.select(*DECODED_SCHEMA.names, F.lit(staged).alias("staged"), level.cast("int").alias("level")
                        ).select(*names)


def _ranges(times: list[int], levels: list[int]) -> tuple[list[int], list[int], list[int]]:
    # Barriers → (low, high] commit ts ranges and their levels, as Marks.level: a row at a barrier's ts goes before
    # it; the ranges cover every ts.
    lows, highs, out = [_MIN_TS], [], [0]
    for ts, wave in zip(times, levels):
        highs.append(ts)
        lows.append(ts)
        out.append(wave)
    highs.append(_MAX_TS)
    return lows, highs, out


_MIN_TS: Final = -(1 << 63)
_MAX_TS: Final = (1 << 63) - 1


def _summarize(marked: Any, infos: Collection[str], spark: Any) -> list[dict[str, Any]]:
    """Per (table, level, pending): its unique changes (``rows``), their deliveries (``copies``) and what to prepare.

    One query on narrow columns (the wide rows are neither shuffled nor cached for it): per change identity, then
    per segment. The TableInfo digests and handle kinds go in as numbers, so the per-identity aggregate keeps
    fixed-width buffers only (a hash aggregate; a string's maximum would make it sort every row). A digest the
    batch has no TableInfo for becomes null: the segment could not use it.
    """
    from pyspark.sql import functions as F

    digests = sorted(infos)  # numbered in order: the maximum number is the maximum digest
    numbers = local_frame(spark, {"info": pa.array(digests, pa.string()),
                                  "info_n": pa.array(range(len(digests)), pa.int32())})
    kinds = F.array_position(F.array(*[F.lit(k) for k in HANDLE_KINDS]), F.col("hkind")).cast("int")
    pending = (F.col("level") < 0).alias("pending")  # above the limit (mark_columns)
    changes = (marked.join(F.broadcast(numbers), "info", "left")
               .groupBy("tkey", "ident", "level", pending)
               .agg(F.count(F.lit(1)).alias("copies"), F.max("ts").alias("ts"), F.max("rank").alias("rank"),
                    F.max((F.col("row_id") != 0).cast("int")).alias("rowid"), F.max("info_n").alias("info_n"),
                    F.max(kinds).alias("hkind_n"), F.max(F.col("staged").cast("int")).alias("staged")))
    summary: list[dict[str, Any]] = (changes.groupBy("tkey", "level", "pending")
            .agg(F.count(F.lit(1)).alias("rows"), F.sum("copies").alias("copies"), F.min("ts").alias("first_ts"),
                 F.max("ts").alias("last_ts"), F.max("rowid").alias("any_rowid"),
                 F.collect_set("info_n").alias("infos"), F.collect_set("hkind_n").alias("hkinds"),
                 F.max_by("info_n", F.struct("ts", "rank")).alias("latest"), F.sum("staged").alias("staged"))
            .toArrow().to_pylist())
    for segment in summary:
        if 0 in segment["hkinds"]:
            raise ReplicaError(f"{segment['tkey']!r}: a change row names its handle in none of {HANDLE_KINDS}")
        segment["infos"] = [digests[n] for n in segment["infos"]]
        segment["hkinds"] = [HANDLE_KINDS[n - 1] for n in segment["hkinds"]]
        segment["latest"] = None if segment["latest"] is None else digests[segment["latest"]]
        segment["tkeys"] = [segment["tkey"]]
    return summary


def _segment_summary(segment: tuple[str, int], described: PartSummary, unique: Mapping[str, Any],
                     infos: Collection[str]) -> dict[str, Any]:
    # One part's entry of the batch's summary (as _summarize's), from the write's and the de-duplication's reports.
    # The staged part holds every table's rows above the limit: one entry, with its tables.
    for kind in described.hkinds:
        if kind not in HANDLE_KINDS:
            raise ReplicaError(f"{segment[0]!r}: a change row names its handle in none of {HANDLE_KINDS}")
    latest = described.latest[2] if described.latest is not None else None
    tkey, level = segment
    return {"tkey": tkey, "level": level, "pending": level < 0, "rows": unique["rows"], "copies": unique["copies"],
            "first_ts": described.first_ts, "last_ts": described.last_ts, "any_rowid": described.any_rowid,
            "infos": sorted(i for i in described.infos if i in infos), "hkinds": sorted(described.hkinds),
            "latest": latest if latest in infos else None, "staged": unique["staged"],
            "tkeys": sorted(described.tkeys) if level < 0 else [tkey]}


def first_deliveries(rows: Any) -> Any:
    """One row per (table, change identity), its first delivery: the record its ``_source_*`` columns name.

    First is a staged row (an earlier batch read it), else the lowest (topic, partition, offset, idx): the same
    record whichever task read which delivery.
    """
    from pyspark.sql import functions as F

    names = rows.columns
    rest = [c for c in names if c not in ("tkey", "ident")]
    order = F.struct((~F.col("staged")).cast("int").alias("late"), "topic", "partition", "offset", "idx")
    return (rows.groupBy("tkey", "ident").agg(F.min_by(F.struct(*rest), order).alias("first"))
            .select("tkey", "ident", "first.*").select(*names))
