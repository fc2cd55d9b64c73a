"""The pipeline's progress: consumer state, table catalog and freshness, in one small Delta table.

``<warehouse>/_pyticdc/progress`` is rewritten by every batch in one Delta commit (an application
transaction ``(app_id, version)``) and holds:

* one ``kind = 'pipeline'`` row: the batch ``version``, the consumer ``state`` (offsets, per-partition
  watermarks, rows still waiting for the global watermark, schemas: see :mod:`pyticdc.consumer`), the
  ``source`` it reads and running ``stats``;
* one ``kind = 'table'`` row per replica table: upstream ``schema`` and ``table``, its directory
  (``path``, relative to the warehouse), ``complete_ts``/``complete_time`` — every change committed
  upstream at or before it is in the table, none after it — the commit ts of its last change, its row
  count, its handle columns and the TableInfo its rows are typed with (JSON).

A reader asks "how fresh is ``shop.orders``?" with::

    SELECT complete_time FROM delta.`<warehouse>/_pyticdc/progress` WHERE schema = 'shop' AND `table` = 'orders'

(or :func:`pyticdc.replica.replica_tables`). The Delta table history is the history of the pipeline.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Final

import msgspec
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.arrow.rows import parse_table_info, table_info_json
from pyticdc.errors import ReplicaError
from pyticdc.model import ColumnInfo, TableInfo, physical_ms
from pyticdc.replica.store import DeltaStore

__all__ = ["PROGRESS_SCHEMA", "Progress", "TableEntry", "read_progress", "tso_time", "tso_times", "write_progress"]

_TSO: Final = pa.decimal128(20, 0)
_TIME: Final = pa.timestamp("us", tz="UTC")
#: Columns of the progress table.
PROGRESS_SCHEMA: Final = pa.schema([
    ("kind", pa.string()),
    ("schema", pa.string()),
    ("table", pa.string()),
    ("path", pa.string()),
    ("uid", pa.string()),
    ("complete_ts", _TSO),
    ("complete_time", _TIME),
    ("last_commit_ts", _TSO),
    ("rows", pa.int64()),
    ("key_columns", pa.list_(pa.field("element", pa.string()))),
    ("table_info", pa.string()),
    # JSON {"names": ..., "kept": [...]} of column mapping and add-only tables, else NULL.
    ("column_state", pa.string()),
    ("version", pa.int64()),
    ("state", pa.binary()),
    ("source", pa.string()),
    ("stats", pa.string()),
    ("updated_at", _TIME),
])


_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def tso_time(tso: int) -> dt.datetime | None:
    """The physical time of a TSO (UTC), None for 0."""
    if tso <= 0:
        return None
    return _EPOCH + dt.timedelta(milliseconds=physical_ms(tso))  # integer milliseconds: exact, unlike a float


def tso_times(tsos: pa.Array) -> pa.Array:
    """:func:`tso_time` of a column of TSOs (int64), as UTC microsecond timestamps; null for null or 0."""
    tsos = tsos.cast(pa.int64())
    micros = pc.multiply(pc.shift_right(tsos, 18), 1000)
    return pc.if_else(pc.greater(tsos, 0), micros, pa.scalar(None, pa.int64())).cast(pa.timestamp("us", tz="UTC"))


class TableEntry(msgspec.Struct, kw_only=True):
    """One replica table: upstream name, identity, directory, the schema its rows are typed with."""

    schema: str
    table: str
    #: Identity of the physical table: ``schema.table@ts`` of its creation (survives renames).
    uid: str
    #: Directory relative to the warehouse.
    path: str
    info: TableInfo
    #: Commit ts of the last change applied to it.
    last_commit_ts: int = 0
    rows: int = 0
    #: Handle columns its rows are found by (empty: ``_tidb_rowid`` or the whole row).
    key_columns: tuple[str, ...] = ()
    #: With column mapping: upstream column → replica column, ``""`` when left out (:mod:`pyticdc.replica.mapping`).
    names: dict[str, str] = msgspec.field(default_factory=dict)
    #: With ``--schema-evolution add-only``: replica columns kept after their upstream column went (replica names).
    kept: tuple[ColumnInfo, ...] = ()


class Progress(msgspec.Struct, kw_only=True):
    """What the last committed batch left: consumer state, replica tables and where the replica is complete."""

    #: Committed batches so far (0: nothing committed yet).
    version: int = 0
    #: Consumer state to resume from (None before the first batch).
    state: bytes | None = None
    #: Every upstream change committed at or before this ts is in the replica, none after it.
    consistent_ts: int = 0
    tables: dict[tuple[str, str], TableEntry] = msgspec.field(default_factory=dict)
    #: What the pipeline reads (protocol, options, topics or files): a restart must read the same.
    source: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Counters of the consumer and of the replica (``replica``), kept across restarts.
    stats: dict[str, Any] = msgspec.field(default_factory=dict)


class _ColumnState(msgspec.Struct):
    names: dict[str, str] = msgspec.field(default_factory=dict)
    kept: tuple[ColumnInfo, ...] = ()


def _text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def write_progress(store: DeltaStore, progress: Progress) -> None:
    """Replace the progress table's content with ``progress`` in one commit (transaction ``progress.version``)."""
    from deltalake import CommitProperties, Transaction, write_deltalake

    now = dt.datetime.now(dt.timezone.utc)
    complete = Decimal(progress.consistent_ts)
    complete_time = tso_time(progress.consistent_ts)
    rows: list[dict[str, Any]] = [{
        "kind": "pipeline", "complete_ts": complete, "complete_time": complete_time, "version": progress.version,
        "state": progress.state, "source": _text(progress.source), "stats": _text(progress.stats),
        "updated_at": now,
    }]
    for entry in sorted(progress.tables.values(), key=lambda e: (e.schema, e.table)):
        rows.append({
            "kind": "table", "schema": entry.schema, "table": entry.table, "path": entry.path, "uid": entry.uid,
            "complete_ts": complete, "complete_time": complete_time, "last_commit_ts": Decimal(entry.last_commit_ts),
            "rows": entry.rows, "key_columns": list(entry.key_columns), "table_info": table_info_json(entry.info),
            "column_state": msgspec.json.encode({"names": entry.names, "kept": entry.kept}).decode()
            if entry.names or entry.kept else None,
            "version": progress.version, "updated_at": now,
        })
    data = pa.Table.from_pylist(rows, schema=PROGRESS_SCHEMA)
    path = store.internal_path("progress")
    commit = CommitProperties(app_transactions=[Transaction(app_id=store.app_id, version=progress.version)],
                              custom_metadata={"pyticdc.complete_ts": str(progress.consistent_ts)})
    target: Any = store.open(path)
    # schema_mode: a progress table written before a column existed (column_state) gets it.
    write_deltalake(str(path) if target is None else target, data, mode="overwrite", commit_properties=commit,
                    name="pyticdc progress", storage_options=store.storage_options, schema_mode="merge")
    store.commits += 1


def read_progress(store: DeltaStore) -> Progress:
    """The committed progress (an empty Progress when the warehouse has none yet)."""
    path = store.internal_path("progress")
    table = store.open(path)
    if table is None:
        return Progress()
    rows = store.read(path).to_pylist()
    pipeline = next((r for r in rows if r["kind"] == "pipeline"), None)
    if pipeline is None:
        raise ReplicaError(f"{path}: progress table without a pipeline row")
    tables: dict[tuple[str, str], TableEntry] = {}
    for row in rows:
        if row["kind"] != "table":
            continue
        entry = TableEntry(
            schema=row["schema"], table=row["table"], uid=row["uid"], path=row["path"],
            info=parse_table_info(row["table_info"]), last_commit_ts=int(row["last_commit_ts"] or 0),
            rows=int(row["rows"] or 0), key_columns=tuple(row["key_columns"] or ()),
        )
        if row.get("column_state"):
            state = msgspec.json.decode(row["column_state"], type=_ColumnState)
            entry.names, entry.kept = state.names, state.kept
        tables[(entry.schema, entry.table)] = entry
    return Progress(
        version=int(pipeline["version"]), state=pipeline["state"], consistent_ts=int(pipeline["complete_ts"] or 0),
        tables=tables, source=orjson.loads(pipeline["source"] or "{}"), stats=orjson.loads(pipeline["stats"] or "{}"),
    )
