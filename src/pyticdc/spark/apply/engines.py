"""Apply engines of the distributed apply, and the driver's part of a segment apply.

An engine takes, for one level of a batch (see :mod:`pyticdc.spark.apply.plan`), the change rows of every table
segment of that level (:class:`pyticdc.spark.apply.segments.LevelRows`: a folder per table, never on the
driver), folds them into the net change per handle and applies it; it hands back one small result row per table.
:class:`DeltaRsEngine` (the default, no jars) folds and MERGEs with delta-rs inside the executors: one Spark job
whose tasks read their tables' folders, so the tables of a level apply in parallel. Each MERGE carries the
table's position as a Delta application transaction, exactly as the driver engine's
(:mod:`pyticdc.replica.store`): a re-run skips what a table holds.

:class:`SegmentReplica` is the driver's half: the catalog, DDL, table creation and the progress, i.e.
:class:`pyticdc.replica.DeltaReplica` with its row buffer replaced by segments applied elsewhere. It decides each
table's column mapping and keeps its evolution state (:mod:`pyticdc.replica.mapping`,
:mod:`pyticdc.replica.evolution`) and sends the outcome with the task: the table's view, upstream → replica
column names, add-only's kept columns; the executors only apply it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.arrow.rows import parse_table_info, table_info_json
from pyticdc.arrow.types import typed_arrays
from pyticdc.errors import ReplicaError
from pyticdc.model import ColumnInfo, TableInfo
from pyticdc.replica.applier import DeltaReplica, reconcile_decimals, schema_layout, widen_decimal
from pyticdc.replica.ddl import TableKey, rename_table_info
from pyticdc.replica.evolution import RESCUED, rescued_json
from pyticdc.replica.mapping import EXCLUDED
from pyticdc.replica.modelling import IS_DELETED, SOURCE_COLUMNS, Modelling
from pyticdc.replica.progress import TableEntry, tso_times
from pyticdc.replica.projection import (
    COMMIT_TS,
    DIGEST,
    METADATA_TYPES,
    OP,
    ROWID,
    add_digests,
    evolve,
    replica_schema,
)
from pyticdc.replica.store import SHAPE, DeltaStore, ddl_position
from pyticdc.spark.apply.net import net_change
from pyticdc.spark.apply.segments import LevelRows, read_segment, spread_tables
from pyticdc.spark.worker import prepare_task

__all__ = ["RESULT_SCHEMA", "TASKS_PER_CORE", "DeltaRsEngine", "SegmentReplica", "SegmentTask", "task_groups"]

_TSO: Final = pa.int64()  # _commit_ts is bigint (pyticdc.replica.projection)
_Task = TypeVar("_Task")
#: One row per table segment applied.
RESULT_SCHEMA: Final = pa.schema([
    ("tkey", pa.string()), ("applied", pa.int64()), ("skipped", pa.int64()), ("actions", pa.int64()),
    ("last_ts", pa.int64()), ("info", pa.string()), ("rewrites", pa.int64()), ("merged", pa.bool_()),
])


@dataclass(frozen=True)
class SegmentTask:
    """What an executor needs to apply one table's segment."""

    path: str
    #: The table as the replica has it (its view: mapped column names, then add-only's kept columns).
    info: str
    held: int
    position: int
    rowid: bool
    strategy: str
    key_columns: tuple[str, ...]
    time_zone: str
    app_id: str
    storage_options: Mapping[str, str] | None
    #: Opt-in metadata columns and soft deletes (:class:`pyticdc.replica.modelling.Modelling`; key overrides are
    #: in the handles and ``key_columns`` already).
    metadata_columns: tuple[str, ...] = ()
    soft_delete: bool = False
    #: Upstream column name → replica column name (``EXCLUDED`` when left out), for the table's columns and those
    #: its rows carry; empty without column mapping (every column keeps its name).
    names: tuple[tuple[str, str], ...] = ()
    #: add-only's kept columns: in the table, not in the images any more, so left out of the row digest.
    unhashed: tuple[str, ...] = ()
    schema_evolution: str = "follow"

    @property
    def modelling(self) -> Modelling:
        """The modelling of the table (what the driver's :class:`SegmentReplica` was given; mapping as ``names``)."""
        return Modelling(metadata_columns=self.metadata_columns, soft_delete=self.soft_delete,
                         schema_evolution=self.schema_evolution)


def _mapped(image: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    # An image in replica column names: left-out columns removed (as pyticdc.replica.mapping.map_rows).
    if not names:
        return image
    return {names.get(k, k): v for k, v in image.items() if names.get(k, k) != EXCLUDED}


def _column(actions: pa.Table, name: str) -> pa.Array:
    # One column as one array (a table's columns are chunked).
    return actions.column(name).combine_chunks()


def _project(actions: pa.Table, info: TableInfo, *, rowid: bool, digest: bool, time_zone: str,
             modelling: Modelling | None = None, renames: Mapping[str, str] | None = None,
             unhashed: frozenset[str] = frozenset()) -> pa.Table:
    # As pyticdc.replica.projection.merge_source, from the reduced rows' image texts (upstream names, mapped to
    # the replica's by ``renames``; ``info`` is the replica's view): soft deletes carry their image as action
    # "soft" (shape 0 when complete, -1 when not: never inserted, only flagged). Only the images and their
    # base64 marks become Python objects; the other columns stay Arrow.
    modelling = modelling or Modelling()
    renames = renames or {}
    soft = modelling.soft_delete
    count = actions.num_rows
    images = [_mapped(orjson.loads(text), renames) if text else {} for text in _column(actions, "img").to_pylist()]
    marks = [frozenset(renames.get(m, m) for m in orjson.loads(text) if renames.get(m, m) != EXCLUDED)
             if text else frozenset() for text in _column(actions, "marks").to_pylist()]
    typed = typed_arrays(images, marks, info, time_zone=time_zone)
    schema = replica_schema(info, rowid=rowid, digest=digest, modelling=modelling)
    deleted = pc.fill_null(pc.not_equal(_column(actions, "act"), "upsert"), True)
    arrays: list[pa.Array] = [pc.if_else(deleted, "soft" if soft else "delete", "upsert")]
    names = [OP]
    if soft:
        columns = [c.name for c in info.columns if c.name not in unhashed]  # kept columns: never in images
        arrays.append(pa.array([-1 if gone and not all(c in image for c in columns) else 0
                                for gone, image in zip(deleted.to_pylist(), images)], pa.int32()))
        names.append(SHAPE)
    ts = _column(actions, "ts").cast(_TSO)
    null_long = pa.scalar(None, pa.int64())
    for field in schema:
        if field.name == COMMIT_TS:
            arrays.append(ts)
        elif field.name == ROWID:
            row_id = _column(actions, "row_id").cast(pa.int64())
            arrays.append(pc.if_else(pc.equal(row_id, 0), null_long, row_id))  # 0: no row id
        elif field.name == DIGEST:
            continue
        elif field.name == "_op":
            op = (_column(actions, "op").cast(pa.string()) if "op" in actions.column_names
                  else pa.nulls(count, pa.string()))
            op = pc.if_else(pc.fill_null(pc.equal(op, ""), True), "insert", op)  # none named: an insert
            arrays.append(pc.if_else(deleted, "delete", op))
        elif field.name == "_commit_time":
            arrays.append(tso_times(ts).cast(METADATA_TYPES["_commit_time"]))
        elif field.name == "_ingested_at":
            arrays.append(pa.array([dt.datetime.now(dt.timezone.utc)] * count, METADATA_TYPES["_ingested_at"]))
        elif field.name == IS_DELETED:
            arrays.append(deleted)
        elif field.name in SOURCE_COLUMNS:
            # The record of the winning change (pyticdc.spark.apply.net); NULL when none is known: partition -1, a
            # row without its record (a driver-engine state's row kept no origin).
            at = "src_" + field.name.removeprefix("_source_")
            known = pc.greater_equal(_column(actions, "src_partition").cast(pa.int64()), 0)
            arrays.append(pc.if_else(known, _column(actions, at).cast(field.type), pa.scalar(None, field.type)))
        elif field.name == RESCUED:
            # --schema-evolution rescue: what an image carries beyond the table's columns, instead of lost.
            known_names = {c.name for c in info.columns}
            arrays.append(pa.array([rescued_json(None, {k: v for k, v in image.items() if k not in known_names})
                                    for image in images], pa.string()))
        else:
            arrays.append(typed[field.name])
        names.append(field.name)
    table = pa.Table.from_arrays(arrays, names=names)
    if digest:
        table = add_digests(table, modelling, unhashed=unhashed)
    return table.select([*names[:2 if soft else 1], *schema.names])


def _fold_images(actions: list[dict[str, Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    # Rows found by their image: upstream images that differ only in left-out columns are one replica row, so
    # their counts add up (as the driver engine's net change over mapped rows); the newest action of the
    # winning kind carries the image and the commit ts.
    nets: dict[bytes, int] = {}
    last: dict[tuple[bytes, bool], dict[str, Any]] = {}
    for row in sorted(actions, key=lambda r: r["ts"]):
        image = _mapped(orjson.loads(row["img"]), names) if row["img"] else {}
        ident = orjson.dumps(image, option=orjson.OPT_SORT_KEYS)
        nets[ident] = nets.get(ident, 0) + (row["net"] or 0)
        last[(ident, (row["net"] or 0) > 0)] = row
    return [{**last[(ident, net > 0)], "net": net, "act": "upsert" if net > 0 else "delete"}
            for ident, net in nets.items() if net and (ident, net > 0) in last]


def apply_segment(actions: pa.Table, task: SegmentTask, store: DeltaStore) -> dict[str, Any]:
    """MERGE one table's net change (one row per handle, with fresh/stale change counts) at its position."""
    info = parse_table_info(task.info)
    fresh = pc.sum(actions.column("fresh")).as_py() or 0
    stale = pc.sum(actions.column("stale")).as_py() or 0
    ts = _column(actions, "ts").cast(pa.int64())
    # A handle whose last change is in the table already (a replay after a crash) is left out.
    keep = pc.greater(ts, task.held // 2)  # 2 * ts > held, without overflowing int64
    if task.strategy == "image":
        net = pc.fill_null(_column(actions, "net").cast(pa.int64()), 0)
        keep = pc.and_(keep, pc.not_equal(net, 0))
        act = pc.if_else(pc.greater(net, 0), "upsert", "delete")
        actions = actions.set_column(actions.column_names.index("act"), "act", act)
    actions = actions.filter(keep)
    only_key = pc.and_(pc.equal(_column(actions, "act"), "upsert"), pc.fill_null(_column(actions, "hko"), False))
    if pc.any(only_key).as_py():
        first = actions.filter(only_key).column("ts")[0].as_py()
        raise ReplicaError(f"{info.qualified_name}@{first}: a change carries only its handle key (large message "
                           "without claim-check): the row cannot be replicated")
    last_ts = pc.max(actions.column("ts")).as_py() or 0
    if task.strategy == "image" and task.names:
        actions = pa.Table.from_pylist(_fold_images(actions.to_pylist(), dict(task.names)), schema=actions.schema)
    result = {"applied": fresh, "skipped": stale, "actions": actions.num_rows, "last_ts": last_ts, "rewrites": 0,
              "merged": False, "info": task.info}
    if fresh == 0:
        return result
    path = Path(task.path)
    digest = task.strategy == "image"
    modelling = task.modelling
    names = dict(task.names)
    unhashed = frozenset(task.unhashed)
    while True:
        try:
            source = _project(actions, info, rowid=task.rowid, digest=digest, time_zone=task.time_zone,
                              modelling=modelling, renames=names, unhashed=unhashed)
            break
        except ValueError as exc:
            widened = widen_decimal(info, str(exc))
            if widened is None:
                raise ReplicaError(f"{info.qualified_name}: {exc}") from None
            info = widened
    current = store.schema(path)
    wanted = replica_schema(info, rowid=task.rowid, digest=digest, modelling=modelling)
    if schema_layout(current) != schema_layout(wanted):
        # As the driver engine: a layout change keeping every row (hidden column, learnt column, wider DECIMAL),
        # rewritten at the position the table has, so a replay sees it done or redoes it.
        data = evolve(store.read(path), info, rowid=task.rowid, digest=digest, time_zone=task.time_zone,
                      modelling=modelling, unhashed=unhashed)
        store.overwrite(path, data, position=task.held)
        result["rewrites"] = 1
    on = list(task.key_columns) if task.strategy == "key" else [ROWID if task.strategy == "rowid" else DIGEST]
    soft_columns = [COMMIT_TS, *modelling.row_columns] if modelling.soft_delete else None
    store.merge(path, source, on=on, position=task.position, soft_columns=soft_columns)
    result.update(merged=True, info=table_info_json(info))
    return result


def task_groups(tables: Iterator[pa.Table], tasks: Mapping[str, _Task]) -> Iterator[tuple[str, pa.Table, _Task]]:
    """The groups an ``applyInArrow`` body is given, as (table key, its rows, its task); empty groups skipped."""
    for table in tables:
        if table.num_rows == 0:
            continue
        key = table.column("tkey")[0].as_py()
        yield key, table, tasks[key]


class DeltaRsEngine:
    """delta-rs MERGE inside the executors, tables in parallel (the default: no jars)."""

    name = "delta-rs"

    def apply(self, level: LevelRows, tasks: Mapping[str, SegmentTask]) -> list[dict[str, Any]]:
        """Fold and apply the changes of every task's table; their result rows (one Spark job).

        Each Spark task reads its tables' folders itself: the rows never pass through the JVM again. Tables go to
        tasks by their rows, a few tasks per core, so a few large tables do not end up in one task.
        """
        frozen = dict(tasks)
        folders = dict(level.folders)
        groups = spread_tables({key: level.sizes[key] for key in frozen},
                               TASKS_PER_CORE * level.spark.sparkContext.defaultParallelism)

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            prepare_task()
            for batch in batches:
                for index in batch.column(0).to_pylist():
                    for key in groups[index]:
                        task = frozen[key]
                        store = DeltaStore(Path(task.path).parent.parent, app_id=task.app_id,
                                           storage_options=task.storage_options)
                        result = apply_segment(net_change(read_segment(folders[key], task.held)), task, store)
                        yield pa.RecordBatch.from_pylist([{"tkey": key, **result}], schema=RESULT_SCHEMA)

        count = len(groups)
        results = (level.spark.range(count, numPartitions=count).mapInArrow(run, _spark_schema()).toArrow())
        return list(results.to_pylist())


#: Apply tasks per core at most (a table is never split: more tasks only even out the tables' sizes).
TASKS_PER_CORE: Final = 4


def _spark_schema() -> str:
    return ("tkey string, applied bigint, skipped bigint, actions bigint, last_ts bigint, info string, "
            "rewrites bigint, merged boolean")


def _merge_infos(base: TableInfo, others: list[TableInfo]) -> TableInfo:
    # As DeltaReplica._merge_info: columns rows carry that the replica lacks are learnt, never removed.
    known = {c.name for c in base.columns}
    extra: list[ColumnInfo] = []
    for info in others:
        for column in info.columns:
            if column.name not in known:
                known.add(column.name)
                extra.append(column)
    return msgspec.structs.replace(base, columns=(*base.columns, *extra)) if extra else base


class SegmentReplica(DeltaReplica):
    """DeltaReplica whose row segments are applied by an engine in the executors (see module docstring)."""

    def prepare(self, key: TableKey, infos: list[TableInfo], first_ts: int, any_rowid: bool, strategy: str,
                key_columns: tuple[str, ...], position: int, rows: int) -> SegmentTask | None:
        """The driver's part of a segment before its MERGE; None when nothing is to be applied."""
        if not self._wanted(key):
            self.stats.rows_filtered += rows
            self.filtered_tables.add(key)
            return None
        entry = self._catalog.get(key)
        if entry is None:
            usable = [i for i in infos if i.columns]
            if not usable:
                raise ReplicaError(f"rows of {key[0]}.{key[1]} carry no schema and no CREATE TABLE was seen")
            entry = self._create(key, rename_table_info(usable[-1], key), f"{key[0]}.{key[1]}@{first_ts}",
                                 ddl_position(first_ts - 1))
        if self.modelling.schema_evolution != "rescue":
            entry.info = _merge_infos(entry.info, infos)  # rescue: columns the schema lacks go to _rescued_data
        path = self._locate(entry)
        if path is None:
            raise ReplicaError(f"table {key[0]}.{key[1]} ({entry.uid}) is not in the warehouse: it was changed by "
                               "something else than this pipeline")
        if self.store.is_dropped(path):
            self.stats.rows_skipped += rows
            return None
        current = self.store.schema(path)
        entry.info = reconcile_decimals(entry.info, current)
        names = self._row_names(entry, infos)
        view = self._view(entry, current)
        columns = tuple(names.get(c, c) for c in key_columns) if strategy == "key" else ()
        if strategy == "key" and not columns:
            raise ReplicaError(f"{key[0]}.{key[1]}: rows name a handle key but the table has none")
        return SegmentTask(path=str(path), info=table_info_json(view), held=self.store.position(path),
                           position=position, rowid=ROWID in current.names or any_rowid, strategy=strategy,
                           key_columns=columns, time_zone=self.time_zone, app_id=self.store.app_id,
                           storage_options=self.store.storage_options,
                           metadata_columns=self.modelling.metadata_columns, soft_delete=self.modelling.soft_delete,
                           names=tuple(sorted(names.items())), unhashed=tuple(c.name for c in entry.kept),
                           schema_evolution=self.modelling.schema_evolution)

    def _row_names(self, entry: TableEntry, infos: list[TableInfo]) -> dict[str, str]:
        # The table's column decisions (kept in the progress), plus the rules' for columns only rows carry (rescue
        # leaves those out of the schema: their values are rescued under the name the rules give them).
        names = dict(self._names(entry))
        mapping = self.modelling.mapping
        if names or mapping.maps_columns:
            for info in infos:
                for column in info.columns:
                    if column.name not in names:
                        names[column.name] = mapping.column_target(entry.schema, entry.table, column.name)
        return names

    def finish(self, key: TableKey, task: SegmentTask, result: Mapping[str, Any], strategy: str,
               key_columns: tuple[str, ...]) -> None:
        """Take a segment's result into the catalog and the counters."""
        entry = self._catalog[key]
        view, widened = parse_table_info(task.info), parse_table_info(result["info"])
        if widened != view:
            self._widen(entry, view, widened)  # the task's info is the view: widened columns back to upstream names
        self.store.forget(Path(task.path))  # written by another process: re-open for its new version
        self.stats.rows_applied += int(result["applied"])
        if int(result["applied"]):  # per-table counts of the metrics endpoint, as the driver engine keeps them
            self.rows_by_table[key] = self.rows_by_table.get(key, 0) + int(result["applied"])
        self.stats.rows_skipped += int(result["skipped"])
        self.stats.rewrites += int(result["rewrites"])
        if not result["merged"]:
            return
        entry.last_commit_ts = max(entry.last_commit_ts, int(result["last_ts"]))
        entry.key_columns = task.key_columns if strategy == "key" else (ROWID,) if strategy == "rowid" else ()
        self.stats.actions += int(result["actions"])
        self.stats.merges += 1
        self._touched.add(key)

    def hook_point(self, point: str, **detail: Any) -> None:
        """Call the crash-test hook at ``point`` (segment commits happen in executors: the driver marks them)."""
        self._call(point, **detail)

    def catalog_entry(self, key: TableKey) -> TableEntry | None:
        """The catalog entry of ``key`` (as of the units applied so far)."""
        return self._catalog.get(key)

    def column_names(self, entry: TableEntry) -> dict[str, str]:
        """The table's upstream → replica column names (completed for columns seen first now; empty unmapped)."""
        return self._names(entry)

    def table_view(self, entry: TableEntry) -> TableInfo:
        """The table as the replica has it: mapped columns (replica names), then add-only's kept columns."""
        return self._view(entry)
