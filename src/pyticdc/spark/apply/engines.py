"""Apply engines of the distributed apply, and the driver's part of a segment apply.

An engine takes, for one level of a batch (see :mod:`pyticdc.spark.apply.plan`), the net change per handle
of every table segment of that level — a Spark DataFrame, never on the driver — and applies it; it hands
back one small result row per table. :class:`DeltaRsEngine` (the default, no jars) MERGEs with delta-rs
inside the executors: ``groupBy(table).applyInArrow``, so the tables of a level apply in parallel in one
Spark job. Each MERGE carries the table's position as a Delta application transaction, exactly as the
driver engine's (:mod:`pyticdc.replica.store`): a re-run skips what a table holds.

:class:`SegmentReplica` is the driver's half: the catalog, DDL, table creation and the progress, i.e.
:class:`pyticdc.replica.DeltaReplica` with its row buffer replaced by segments applied elsewhere.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec
import orjson
import pyarrow as pa

from pyticdc.arrow.rows import parse_table_info, table_info_json
from pyticdc.arrow.types import typed_arrays
from pyticdc.errors import ReplicaError
from pyticdc.model import ColumnInfo, TableInfo
from pyticdc.replica.applier import DeltaReplica, _layout, _reconcile, _widen_decimal
from pyticdc.replica.ddl import TableKey, rename_table_info
from pyticdc.replica.modelling import IS_DELETED, Modelling
from pyticdc.replica.progress import TableEntry, tso_time
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

__all__ = ["RESULT_SCHEMA", "DeltaRsEngine", "SegmentReplica", "SegmentTask", "apply_groups"]

_TSO: Final = pa.int64()  # _commit_ts is bigint (pyticdc.replica.projection)
#: One row per table segment applied.
RESULT_SCHEMA: Final = pa.schema([
    ("tkey", pa.string()), ("applied", pa.int64()), ("skipped", pa.int64()), ("actions", pa.int64()),
    ("last_ts", pa.int64()), ("info", pa.string()), ("rewrites", pa.int64()), ("merged", pa.bool_()),
])


@dataclass(frozen=True)
class SegmentTask:
    """What an executor needs to apply one table's segment."""

    path: str
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
    #: refused before this engine runs).
    metadata_columns: tuple[str, ...] = ()
    soft_delete: bool = False

    @property
    def modelling(self) -> Modelling:
        """The modelling of the table (what the driver's :class:`SegmentReplica` was given)."""
        return Modelling(metadata_columns=self.metadata_columns, soft_delete=self.soft_delete)


def _project(rows: list[dict[str, Any]], info: TableInfo, *, rowid: bool, digest: bool, time_zone: str,
             modelling: Modelling | None = None) -> pa.Table:
    # As pyticdc.replica.projection.merge_source, from the reduced rows' image texts: soft deletes carry their
    # image as action "soft" (shape 0 when complete, -1 when not: never inserted, only flagged).
    modelling = modelling or Modelling()
    soft = modelling.soft_delete
    images = [orjson.loads(r["img"]) if r["img"] else {} for r in rows]
    marks = [frozenset(orjson.loads(r["marks"])) if r["marks"] else frozenset() for r in rows]
    typed = typed_arrays(images, marks, info, time_zone=time_zone)
    schema = replica_schema(info, rowid=rowid, digest=digest, modelling=modelling)
    deleted = [r["act"] != "upsert" for r in rows]
    kinds = [("soft" if soft else "delete") if gone else "upsert" for gone in deleted]
    arrays: list[pa.Array] = [pa.array(kinds, pa.string())]
    names = [OP]
    if soft:
        columns = [c.name for c in info.columns]
        arrays.append(pa.array([-1 if gone and not all(c in image for c in columns) else 0
                                for gone, image in zip(deleted, images)], pa.int32()))
        names.append(SHAPE)
    now = dt.datetime.now(dt.timezone.utc)
    for field in schema:
        if field.name == COMMIT_TS:
            arrays.append(pa.array([r["ts"] for r in rows], _TSO))
        elif field.name == ROWID:
            arrays.append(pa.array([r["row_id"] or None for r in rows], pa.int64()))
        elif field.name == DIGEST:
            continue
        elif field.name == "_op":
            arrays.append(pa.array(["delete" if gone else r.get("op") or "insert" for gone, r in zip(deleted, rows)],
                                   pa.string()))
        elif field.name == "_commit_time":
            arrays.append(pa.array([tso_time(r["ts"]) for r in rows], METADATA_TYPES["_commit_time"]))
        elif field.name == "_ingested_at":
            arrays.append(pa.array([now] * len(rows), METADATA_TYPES["_ingested_at"]))
        elif field.name == IS_DELETED:
            arrays.append(pa.array(deleted, pa.bool_()))
        else:
            arrays.append(typed[field.name])
        names.append(field.name)
    table = pa.Table.from_arrays(arrays, names=names)
    if digest:
        table = add_digests(table, modelling)
    return table.select([*names[:2 if soft else 1], *schema.names])


def apply_segment(rows: list[dict[str, Any]], task: SegmentTask, store: DeltaStore) -> dict[str, Any]:
    """MERGE one table's net change (one row per handle, with fresh/stale change counts) at its position."""
    info = parse_table_info(task.info)
    fresh = sum(r["fresh"] or 0 for r in rows)
    stale = sum(r["stale"] or 0 for r in rows)
    actions: list[dict[str, Any]] = []
    last_ts = 0
    for row in rows:
        if 2 * row["ts"] <= task.held:
            continue  # the handle's last change is in the table already (a replay after a crash)
        if task.strategy == "image":
            net = row["net"] or 0
            if net == 0:
                continue
            row = {**row, "act": "upsert" if net > 0 else "delete"}
        if row["act"] == "upsert" and row["hko"]:
            raise ReplicaError(f"{info.qualified_name}@{row['ts']}: a change carries only its handle key (large "
                               "message without claim-check): the row cannot be replicated")
        last_ts = max(last_ts, row["ts"])
        actions.append(row)
    result = {"applied": fresh, "skipped": stale, "actions": len(actions), "last_ts": last_ts, "rewrites": 0,
              "merged": False, "info": task.info}
    if fresh == 0:
        return result
    path = Path(task.path)
    digest = task.strategy == "image"
    modelling = task.modelling
    while True:
        try:
            source = _project(actions, info, rowid=task.rowid, digest=digest, time_zone=task.time_zone,
                              modelling=modelling)
            break
        except ValueError as exc:
            widened = _widen_decimal(info, str(exc))
            if widened is None:
                raise ReplicaError(f"{info.qualified_name}: {exc}") from None
            info = widened
    current = store.schema(path)
    wanted = replica_schema(info, rowid=task.rowid, digest=digest, modelling=modelling)
    if _layout(current) != _layout(wanted):
        # As the driver engine: a layout change keeping every row (hidden column, learnt column, wider DECIMAL),
        # rewritten at the position the table has, so a replay sees it done or redoes it.
        data = evolve(store.read(path), info, rowid=task.rowid, digest=digest, time_zone=task.time_zone,
                      modelling=modelling)
        store.overwrite(path, data, position=task.held)
        result["rewrites"] = 1
    on = list(task.key_columns) if task.strategy == "key" else [ROWID if task.strategy == "rowid" else DIGEST]
    soft_columns = [COMMIT_TS, *modelling.row_columns] if modelling.soft_delete else None
    store.merge(path, source, on=on, position=task.position, soft_columns=soft_columns)
    result.update(merged=True, info=table_info_json(info))
    return result


def apply_groups(tables: Iterator[pa.Table], tasks: Mapping[str, SegmentTask]) -> Iterator[pa.Table]:
    """``applyInArrow`` body: the reduced actions of one table → its result row."""
    for table in tables:
        if table.num_rows == 0:
            continue
        rows = table.to_pylist()
        key = rows[0]["tkey"]
        task = tasks[key]
        store = DeltaStore(Path(task.path).parent.parent, app_id=task.app_id, storage_options=task.storage_options)
        result = apply_segment(rows, task, store)
        yield pa.Table.from_pylist([{"tkey": key, **result}], schema=RESULT_SCHEMA)


class DeltaRsEngine:
    """delta-rs MERGE inside the executors, tables in parallel (the default: no jars)."""

    name = "delta-rs"

    def apply(self, reduced: Any, tasks: Mapping[str, SegmentTask]) -> list[dict[str, Any]]:
        """Apply the reduced actions of every task's table; their result rows (one Spark job)."""
        frozen = dict(tasks)

        def run(table: pa.Table) -> pa.Table:
            out = list(apply_groups(iter([table]), frozen))
            return out[0] if out else RESULT_SCHEMA.empty_table()

        results = reduced.groupBy("tkey").applyInArrow(run, _spark_schema()).toArrow()
        return list(results.to_pylist())


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
        entry.info = _merge_infos(entry.info, infos)
        path = self._locate(entry)
        if path is None:
            raise ReplicaError(f"table {key[0]}.{key[1]} ({entry.uid}) is not in the warehouse: it was changed by "
                               "something else than this pipeline")
        if self.store.is_dropped(path):
            self.stats.rows_skipped += rows
            return None
        current = self.store.schema(path)
        entry.info = _reconcile(entry.info, current)
        columns = key_columns if strategy == "key" else ()
        if strategy == "key" and not columns:
            raise ReplicaError(f"{key[0]}.{key[1]}: rows name a handle key but the table has none")
        return SegmentTask(path=str(path), info=table_info_json(entry.info), held=self.store.position(path),
                           position=position, rowid=ROWID in current.names or any_rowid, strategy=strategy,
                           key_columns=columns, time_zone=self.time_zone, app_id=self.store.app_id,
                           storage_options=self.store.storage_options,
                           metadata_columns=self.modelling.metadata_columns, soft_delete=self.modelling.soft_delete)

    def finish(self, key: TableKey, task: SegmentTask, result: Mapping[str, Any], strategy: str,
               key_columns: tuple[str, ...]) -> None:
        """Take a segment's result into the catalog and the counters."""
        entry = self._catalog[key]
        entry.info = parse_table_info(result["info"])
        self.store.forget(Path(task.path))  # written by another process: re-open for its new version
        self.stats.rows_applied += int(result["applied"])
        if int(result["applied"]):  # per-table counts of the metrics endpoint, as the driver engine keeps them
            self.rows_by_table[key] = self.rows_by_table.get(key, 0) + int(result["applied"])
        self.stats.rows_skipped += int(result["skipped"])
        self.stats.rewrites += int(result["rewrites"])
        if not result["merged"]:
            return
        entry.last_commit_ts = max(entry.last_commit_ts, int(result["last_ts"]))
        entry.key_columns = key_columns if strategy == "key" else (ROWID,) if strategy == "rowid" else ()
        self.stats.actions += int(result["actions"])
        self.stats.merges += 1
        self._touched.add(key)

    def hook_point(self, point: str, **detail: Any) -> None:
        """Call the crash-test hook at ``point`` (segment commits happen in executors: the driver marks them)."""
        self._call(point, **detail)

    def catalog_entry(self, key: TableKey) -> TableEntry | None:
        """The catalog entry of ``key`` (as of the units applied so far)."""
        return self._catalog.get(key)
