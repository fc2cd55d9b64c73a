"""DeltaReplica: applies the consumer's apply units to Delta tables, DDL-aware and exactly once (deltalake, no JVM).

How units become Delta commits:

* Rows are buffered per table. A table's buffer (its *segment*) is written as one MERGE of its net change
  per handle (:mod:`pyticdc.replica.changes`) when a DDL on that table arrives — the DDL is a barrier:
  rows before it are applied before it is executed, rows after it after — and at the end of the batch.
  A DDL on one table does not cut the segments of the others.
* DDL is interpreted from its text and table info (:mod:`pyticdc.replica.ddl`): CREATE makes a Delta
  table, DROP moves it to ``_pyticdc/dropped``, RENAME moves its directory, TRUNCATE empties it, column
  changes rewrite it (added columns take their default, renamed keep their values, type changes convert
  values where the conversion is exact), index changes only touch the catalog. A table never created by a
  CREATE TABLE is made from its first rows — before a DDL on it when they are still buffered, so the DDL
  meets them in it. A DDL on a table the replica does not have is counted (``ddls_not_applicable``) with
  its reason (``not_applicable``), never silently dropped.
* :meth:`DeltaReplica.commit` then writes the progress table: the consumer state, the catalog and the
  ts the whole replica is complete at.

Exactly once. Every content commit carries the table's *position* (:mod:`pyticdc.replica.store`): ``2 *
ts`` once it holds every row change committed at or before ``ts``, ``2 * ts + 1`` after a DDL committed
at ``ts``. After a crash anywhere — between two table commits, or between the data commits and the
progress commit — the pipeline resumes from the last progress: the consumer state re-releases every
change after the progress' consistent ts, and each table skips the changes at or below its own position.
Its catalog changes (CREATE, DROP, RENAME) are recognised by the identity each table records. Whatever
the crash point and however the records are re-read, each change reaches each table once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from pyticdc.arrow.rows import quarantine_arrow_schema
from pyticdc.consumer import ApplyUnit, QuarantinedRecord, handle_columns
from pyticdc.errors import ReplicaError
from pyticdc.model import ColumnInfo, DDLEvent, RowChange, TableInfo
from pyticdc.mysql import DECIMAL_TYPES
from pyticdc.replica.changes import net_change
from pyticdc.replica.ddl import (
    AlterTable,
    CreateTable,
    DropSchema,
    DropTable,
    NoTable,
    RenameTable,
    SchemaChange,
    TableKey,
    TruncateTable,
    Unhandled,
    interpret_ddl,
    rename_table_info,
)
from pyticdc.replica.evolution import kept_columns, layout_changes, refuse
from pyticdc.replica.history import HistoryTables
from pyticdc.replica.maintenance import TableOptions, maintain_table
from pyticdc.replica.mapping import EXCLUDED, follow_renames, map_info, map_rows
from pyticdc.replica.modelling import SOURCE_COLUMNS, Modelling
from pyticdc.replica.progress import Progress, TableEntry, read_progress, write_progress
from pyticdc.replica.projection import DIGEST, ROWID, evolve, merge_source, replica_schema
from pyticdc.replica.storage import Location, RemotePath
from pyticdc.replica.store import APP_ID, DeltaStore, ddl_position, rows_position, safe_name

__all__ = ["ApplyStats", "DeltaReplica", "Hook", "SimulatedCrash", "reconcile_decimals", "schema_layout",
           "widen_decimal"]

#: Called at the named points of a batch (``before-table-commit``, ``after-table-commit``,
#: ``before-progress``, ``after-progress``) with details; raising there simulates a crash.
Hook = Callable[[str, Mapping[str, Any]], None]


class SimulatedCrash(Exception):
    """Raised by a test hook to stop a batch at an exact point, as a killed process would."""


class ApplyStats(msgspec.Struct, kw_only=True):
    """What a replica did (kept across restarts in the progress)."""

    #: Row changes applied to replica tables (each once).
    rows_applied: int = 0
    #: Row changes skipped because their table already held them (a replay after a crash), or because a DROP or
    #: TRUNCATE of their table followed them in the batch (rows it removes are never read again).
    rows_skipped: int = 0
    #: Net actions (upserts and deletes) written by MERGE.
    actions: int = 0
    ddls_applied: int = 0
    ddls_skipped: int = 0
    #: DDL statements whose effect on rows the replica could not reproduce.
    ddls_unhandled: int = 0
    merges: int = 0
    rewrites: int = 0
    quarantined: int = 0
    batches: int = 0
    #: Row changes of tables the table filter leaves out (``--table``): read, deliberately not applied.
    rows_filtered: int = 0
    #: Upserts written from images lacking columns (handle-key-only): only the columns sent were assigned.
    partial_images: int = 0
    #: TRUNCATE statements not applied (``on_truncate="ignore"``).
    truncates_ignored: int = 0
    #: DDL with nothing to do here: on a table the replica does not have (never seen, or left out by the table
    #: filter), or a CREATE TABLE without columns (its first rows create the table). Reasons in ``not_applicable``.
    ddls_not_applicable: int = 0


#: The quarantine table's columns: the same as the Spark quarantine sink's (``pyticdc.spark.sinks``).
_QUARANTINE_SCHEMA = quarantine_arrow_schema()


def _merge_info(base: TableInfo, rows: Iterable[RowChange]) -> TableInfo:
    # Columns the rows carry that the replica's schema lacks (a table met mid-stream, or a DDL not
    # understood): learnt from the rows, appended. Rows never remove or retype columns: only DDL does.
    known = {c.name for c in base.columns}
    extra: list[ColumnInfo] = []
    for row in rows:
        info = row.table_info
        if info is None or row.handle_key_only:
            continue
        for column in info.columns:
            if column.name not in known:
                known.add(column.name)
                extra.append(column)
    if not extra:
        return base
    return msgspec.structs.replace(base, columns=(*base.columns, *extra))


def _schema_of(rows: list[RowChange]) -> TableInfo | None:
    # The newest full schema the rows carry: the table a replica that saw no CREATE makes from them.
    return next((row.table_info for row in reversed(rows) if row.table_info is not None
                 and row.table_info.columns and not row.handle_key_only), None)


def schema_layout(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """(name, type) of each column: what two schemas must share for rows of one to append to the other."""
    return [(field.name, field.type) for field in schema]


def widen_decimal(info: TableInfo, message: str) -> TableInfo | None:
    """``info`` with the DECIMAL column a projection error names widened to decimal(38, scale); None if none."""
    # project_rows names the column it could not type ("schema.table.column: ..."). A DECIMAL value past its
    # declared precision (Debezium carries DECIMAL as a double, which rounds up past it) widens the column to
    # decimal(38, scale): exact for every value it held, and the widest Arrow decimal.
    prefix = f"{info.qualified_name}."
    for index, column in enumerate(info.columns):
        if message.startswith(f"{prefix}{column.name}:") and column.type_code in DECIMAL_TYPES and 0 < column.flen < 38:
            widened = msgspec.structs.replace(column, flen=38)
            return msgspec.structs.replace(info, columns=(*info.columns[:index], widened, *info.columns[index + 1:]))
    return None


def reconcile_decimals(info: TableInfo, current: pa.Schema) -> TableInfo:
    """``info`` with the DECIMAL widths the table at ``current`` already widened to."""
    # A DECIMAL the table already widened (a previous attempt of this batch did): keep its width.
    columns = list(info.columns)
    changed = False
    for index, column in enumerate(columns):
        if column.type_code not in DECIMAL_TYPES or column.name not in current.names:
            continue
        stored = current.field(column.name).type
        if pa.types.is_decimal(stored) and stored.precision > column.flen > 0:
            columns[index] = msgspec.structs.replace(column, flen=stored.precision)
            changed = True
    return msgspec.structs.replace(info, columns=tuple(columns)) if changed else info


class DeltaReplica:
    """A warehouse of Delta tables that apply units keep equal to the upstream (see module docstring).

    ``table_filter`` (a callable of schema and table) keeps only matching tables. ``time_zone`` is the
    changefeed time zone TIMESTAMP text is printed in. ``hook`` is called at each commit point.
    """

    def __init__(
        self, warehouse: str | Path | RemotePath, *, app_id: str = APP_ID, time_zone: str = "UTC",
        table_filter: Callable[[str, str], bool] | None = None, hook: Hook | None = None,
        storage_options: Mapping[str, str] | None = None, maintenance_every: int | None = None,
        modelling: Modelling | None = None, table_options: TableOptions | None = None,
    ) -> None:
        #: Metadata columns, soft deletes, key overrides, TRUNCATE handling (:mod:`pyticdc.replica.modelling`).
        self.modelling = modelling or Modelling()
        self.store = DeltaStore(warehouse, app_id=app_id, storage_options=storage_options,
                                table_options=table_options)
        #: OPTIMIZE (and VACUUM) every this many batches (default: the table options' ``optimize_every``).
        self.maintenance_every = self.store.table_options.optimize_every if maintenance_every is None \
            else maintenance_every
        #: False for a feed without watermarks (batch consistency): a partition read behind the others brings
        #: rows below a table's position, which are new, so every row is applied (re-applying a batch's net
        #: change after a crash leaves the same images: MERGE by key is idempotent).
        self.skip_by_position = True
        #: Row changes applied per table by this process (the metrics' per-table counter; not in the progress).
        self.rows_by_table: dict[TableKey, int] = {}
        self._maintain: set[TableKey] = set()
        self.time_zone = time_zone
        self.table_filter = table_filter
        self.hook = hook
        #: The history tables (SCD type 2) of the tables ``modelling.history`` names; None without.
        self.history = HistoryTables(self.store, self.modelling, time_zone=time_zone, call=self._call,
                                     set_aside=self._set_aside) if self.modelling.history else None
        self.progress = read_progress(self.store)
        self._catalog: dict[TableKey, TableEntry] = {
            key: msgspec.structs.replace(entry) for key, entry in self.progress.tables.items()}
        self._segments: dict[TableKey, list[RowChange]] = {}
        #: With ``_source_*`` columns: (topic, partition, offset) of each buffered row, by ``id`` of the row.
        self._sources = bool(set(SOURCE_COLUMNS) & set(self.modelling.metadata_columns))
        self._origins: dict[int, tuple[str, int, int]] = {}
        self._consistent = self.progress.consistent_ts
        self._quarantine: list[QuarantinedRecord] = []
        self._touched: set[TableKey] = set()
        self.stats = msgspec.convert(self.progress.stats.get("replica", {}), ApplyStats) \
            if isinstance(self.progress.stats.get("replica"), dict) else ApplyStats()
        #: DDL statements not reproduced, with the reason (this process only).
        self.unhandled: list[str] = []
        #: DDL statements with nothing to do, with the reason (this process only; the first hundred).
        self.not_applicable: list[str] = []
        #: Tables whose rows the table filter left out (this process only).
        self.filtered_tables: set[TableKey] = set()

    # ------------------------------------------------------------------ introspection
    @property
    def consistent_ts(self) -> int:
        """The ts the replica will be complete at once the units applied so far are committed."""
        return self._consistent

    @property
    def tables(self) -> dict[TableKey, TableEntry]:
        """The replica tables as of the units applied so far (not necessarily committed)."""
        return dict(self._catalog)

    @property
    def pending_rows(self) -> int:
        """Row changes buffered for the next flush."""
        return sum(len(rows) for rows in self._segments.values())

    def path(self, entry: TableEntry) -> Location:
        """Absolute directory of a replica table."""
        return self.store.root / entry.path

    def _locate(self, entry: TableEntry) -> Location | None:
        """Where the table of ``entry`` is: its path, or where an earlier attempt of this batch moved it."""
        path = self.path(entry)
        if self.store.uid(path) == entry.uid:
            return path
        # An attempt that crashed after a RENAME or DROP moved it before the progress recorded that.
        for candidate in self.store.table_dirs():
            if self.store.uid(candidate) == entry.uid:
                return candidate
        return None

    def _wanted(self, key: TableKey) -> bool:
        return self.table_filter is None or self.table_filter(key[0], key[1])

    def _lookup(self, key: TableKey) -> TableInfo | None:
        entry = self._materialise(key)
        return entry.info if entry is not None else None

    def _materialise(self, key: TableKey) -> TableEntry | None:
        """The replica table of ``key``; created now from its buffered rows when no CREATE TABLE was seen.

        A DDL is a barrier: the rows before it must meet it in a table. A table the replica knows only from
        rows still buffered in this batch would otherwise be missing when the DDL is interpreted, and the
        DDL lost (the rows then made the table after it, as if it had never run).
        """
        entry = self._catalog.get(key)
        rows = self._segments.get(key)
        if entry is None and rows and _schema_of(rows) is not None:
            entry = self._create_from_rows(key, rows)
        return entry

    def _not_applicable(self, ddl: DDLEvent, reason: str, *, report: bool = True) -> None:
        self.stats.ddls_not_applicable += 1
        if report and len(self.not_applicable) < 100:  # bounded: a long stream of them is the counter's job
            self.not_applicable.append(f"{ddl.query} ({reason})")

    def _call(self, point: str, **detail: Any) -> None:
        if self.hook is not None:
            self.hook(point, detail)

    # ------------------------------------------------------------------ units
    def apply_all(self, units: Iterable[ApplyUnit]) -> None:
        """Apply units in order (see :meth:`apply`)."""
        for unit in units:
            self.apply(unit)

    def apply(self, unit: ApplyUnit) -> None:
        """Take one apply unit: rows are buffered, a DDL is executed after flushing its tables' rows."""
        if unit.kind == "rows":
            sources = self._sources and len(unit.origins) == len(unit.rows)
            for index, row in enumerate(unit.rows):
                key = (row.schema, row.table)
                if self._wanted(key):
                    self._segments.setdefault(key, []).append(row)
                    if sources:
                        self._origins[id(row)] = unit.origins[index]
                else:
                    self.stats.rows_filtered += 1
                    self.filtered_tables.add(key)
        elif unit.kind == "ddl":
            assert unit.ddl is not None
            self._execute(unit.ddl)
        elif unit.kind == "quarantine":
            self._quarantine.extend(unit.quarantined)
        self._consistent = max(self._consistent, unit.consistent_ts)

    def commit(self, state: bytes, *, source: Mapping[str, Any] | None = None,
               stats: Mapping[str, Any] | None = None) -> Progress:
        """Flush every buffered row and record the progress (with the consumer ``state``) in one commit."""
        for key in sorted(self._segments):
            self._flush(key, rows_position(self._consistent))
        self._origins.clear()
        if self._quarantine:
            self._write_quarantine()
        for key in sorted(self._touched):
            entry = self._catalog.get(key)
            if entry is not None:
                entry.rows = self.store.count(self.path(entry))
        self._maintain |= self._touched
        self._touched.clear()
        self.stats.batches += 1
        progress = Progress(
            version=self.progress.version + 1, state=state, consistent_ts=self._consistent,
            tables={key: msgspec.structs.replace(entry) for key, entry in self._catalog.items()},
            source=dict(source or self.progress.source),
            stats={**dict(stats or {}), "replica": msgspec.to_builtins(self.stats)},
        )
        self._call("before-progress", version=progress.version, consistent_ts=progress.consistent_ts)
        write_progress(self.store, progress)
        self.progress = progress
        self._call("after-progress", version=progress.version, consistent_ts=progress.consistent_ts)
        if self.maintenance_every and progress.version % self.maintenance_every == 0:
            self.maintain()
        return progress

    def maintain(self) -> None:
        """Compact tables written to since the last time, and drop progress files no version needs any more.

        Every batch rewrites the progress and MERGEs small files into the tables; run every
        ``maintenance_every`` batches. Compaction keeps content and positions (the Delta application
        transactions stay in the log); old files of replica tables are vacuumed only with a
        ``vacuum_retention_hours`` (readers of older versions may need them).
        """
        for key in sorted(self._maintain):
            entry = self._catalog.get(key)
            table = self.store.open(self.path(entry)) if entry is not None else None
            if table is not None:
                maintain_table(table, entry.path if entry is not None else "",
                               retention_hours=self.store.table_options.vacuum_retention_hours)
                if entry is not None:
                    self.store.forget(self.path(entry))
            if self.history is not None and entry is not None:
                self.history.maintain(entry)
        self._maintain.clear()
        progress = self.store.open(self.store.internal_path("progress"))
        if progress is not None:
            # Internal and rewritten whole by each batch: only the current version is ever read.
            progress.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)

    # ------------------------------------------------------------------ rows
    def _flush(self, key: TableKey, position: int) -> None:
        rows = self._segments.pop(key, [])
        if not rows:
            return
        # Taken out now: an id is only unique while its row lives, and these rows are done with after this.
        origin_of = {id(row): self._origins.pop(id(row)) for row in rows if id(row) in self._origins} \
            if self._sources else {}
        entry = self._catalog.get(key)
        if entry is None:
            entry = self._create_from_rows(key, rows)
        if self.modelling.schema_evolution != "rescue":
            entry.info = _merge_info(entry.info, rows)  # rescue: columns the schema lacks go to _rescued_data
        path = self._locate(entry)
        if path is None:
            raise ReplicaError(f"table {key[0]}.{key[1]} ({entry.uid}) is not in the warehouse: it was changed by "
                               "something else than this pipeline")
        if self.store.is_dropped(path):
            self.stats.rows_skipped += len(rows)  # an earlier attempt went on to drop it: its rows are moot
            return
        held = self.store.position(path)
        current = self.store.schema(path)
        entry.info = reconcile_decimals(entry.info, current)
        fresh = [row for row in rows if rows_position(row.commit_ts) > held] if self.skip_by_position else rows
        self.stats.rows_skipped += len(rows) - len(fresh)
        if not fresh:
            self._flush_history(entry, rows, position)  # it has its own position: maybe behind the table's
            return
        key_override = self.modelling.key_for(*key)
        if key_override is not None:
            self.modelling.check_table(entry.info)
        names = self._names(entry)
        view = self._view(entry, current)
        if names:
            # Rows in replica column names (mapping): from here on the table is its view.
            mapping = self.modelling.mapping
            mapped = map_rows(fresh, names, lambda column: mapping.column_target(key[0], key[1], column))
            if origin_of:
                for old, new in zip(fresh, mapped):
                    if id(old) in origin_of:
                        origin_of[id(new)] = origin_of[id(old)]
            fresh = mapped
            key_override = tuple(names.get(c, c) for c in key_override) if key_override else key_override
        kept = {c.name for c in entry.kept}
        # Kept columns (add-only) are not expected in images: rows written after the drop leave them NULL.
        net = net_change(fresh, key=key_override, columns=[c.name for c in view.columns if c.name not in kept],
                         sources=bool(origin_of))
        rowid = ROWID in current.names or any(row.row_id for row in fresh)
        digest = net.strategy == "image"
        now = dt.datetime.now(dt.timezone.utc)
        origins = {action: origin_of[id(change)] for action, change in net.sources.items()
                   if id(change) in origin_of} if origin_of else None
        while True:
            try:
                merge = merge_source(net, view, rowid=rowid, time_zone=self.time_zone, modelling=self.modelling,
                                     ingested_at=now, origins=origins, unhashed=frozenset(kept))
                break
            except ValueError as exc:
                widened = widen_decimal(view, str(exc))
                if widened is None:
                    raise ReplicaError(f"{key[0]}.{key[1]}: {exc}") from None
                self._widen(entry, view, widened)
                view = widened
        wanted = replica_schema(view, rowid=rowid, digest=digest, modelling=self.modelling)
        if schema_layout(current) != schema_layout(wanted):
            # A layout change that keeps every row's content (a hidden column, a column learnt from rows, a
            # widened DECIMAL): rewritten at the position the table already has, so a replay sees it done or
            # redoes it.
            self._rewrite(entry, path, held, rowid=rowid, digest=digest, info=view)
        on = list(net.key_columns) if net.strategy == "key" else [ROWID if net.strategy == "rowid" else DIGEST]
        self._call("before-table-commit", table=key, position=position, kind="merge", rows=len(fresh))
        self.store.merge(path, merge.table, on=on, position=position, shapes=merge.shapes,
                         soft_columns=merge.soft_columns)
        self._call("after-table-commit", table=key, position=position, kind="merge", rows=len(fresh))
        entry.last_commit_ts = max(entry.last_commit_ts, max(row.commit_ts for row in fresh))
        entry.key_columns = net.key_columns if net.strategy == "key" else (ROWID,) if net.strategy == "rowid" else ()
        self.stats.rows_applied += len(fresh)
        self.rows_by_table[key] = self.rows_by_table.get(key, 0) + len(fresh)
        self.stats.actions += net.size
        self.stats.partial_images += sum(1 for action in net.upserts if id(action) in net.partial)
        self.stats.merges += 1
        self._touched.add(key)
        self._flush_history(entry, rows, position)

    def _flush_history(self, entry: TableEntry, rows: list[RowChange], position: int) -> None:
        # Every change of the segment, not the net one: each commit ts is a version (pyticdc.replica.history).
        if self.history is None or not self.modelling.history_for(entry.schema, entry.table):
            return
        names = self._names(entry)
        if names:
            # The history holds the replica's columns under the replica's names, as the replica's rows are mapped.
            mapping, key = self.modelling.mapping, (entry.schema, entry.table)
            rows = map_rows(rows, names, lambda column: mapping.column_target(key[0], key[1], column))
        self.history.flush(entry, rows, position, skip_by_position=self.skip_by_position, info=self._view(entry),
                           names=names)

    def _names(self, entry: TableEntry) -> dict[str, str]:
        """The table's column names map, completed for columns seen first now; empty without column mapping."""
        mapping = self.modelling.mapping
        if not mapping.maps_columns and not entry.names:
            return {}
        # Decisions already made stand, whatever the rules say now: the replica's columns were named by them.
        entry.names = mapping.names(entry.info, entry.names, self.modelling.key_for(entry.schema, entry.table) or ())
        return entry.names

    def _view(self, entry: TableEntry, current: pa.Schema | None = None) -> TableInfo:
        """The table as the replica has it: mapped columns (replica names), then add-only's kept columns."""
        info = map_info(entry.info, self._names(entry))
        if entry.kept:
            live = {c.name.lower() for c in info.columns}
            kept = tuple(c for c in entry.kept if c.name.lower() not in live)
            info = msgspec.structs.replace(info, columns=(*info.columns, *kept))
        return reconcile_decimals(info, current) if current is not None else info

    def _widen(self, entry: TableEntry, view: TableInfo, widened: TableInfo) -> None:
        # The widened view column back to the upstream info (or the kept column) it comes from.
        changed = {w.name: w for c, w in zip(view.columns, widened.columns) if c != w}
        names = entry.names
        entry.info = msgspec.structs.replace(entry.info, columns=tuple(
            msgspec.structs.replace(c, flen=changed[names.get(c.name, c.name)].flen)
            if names.get(c.name, c.name) in changed else c for c in entry.info.columns))
        entry.kept = tuple(changed.get(c.name, c) for c in entry.kept)

    def _refuse(self, entry: TableEntry, change: AlterTable, ddl: DDLEvent) -> None:
        # --schema-evolution fail: stop before the DDL touches anything when it changes the replica's columns.
        names = self._names(entry)
        before = map_info(entry.info, names)
        after_info = rename_table_info(change.info, change.key)
        after_names = self.modelling.mapping.names(after_info, follow_renames(names, change.renamed)) \
            if self.modelling.mapping.maps_columns else {}
        after = map_info(after_info, after_names)
        renamed = {names.get(a, a): after_names.get(b, b) for a, b in change.renamed.items()
                   if names.get(a, a) != EXCLUDED}
        changes = layout_changes(before, after, renamed)
        if changes:
            raise refuse(ddl.query, f"{change.key[0]}.{change.key[1]}", changes)

    def _create_from_rows(self, key: TableKey, rows: list[RowChange]) -> TableEntry:
        info = _schema_of(rows)
        if info is None:
            raise ReplicaError(f"rows of {key[0]}.{key[1]} carry no schema and no CREATE TABLE was seen")
        first = min(row.commit_ts for row in rows)
        # Created just before its first row, so that row's position is above the table's.
        return self._create(key, rename_table_info(info, key), f"{key[0]}.{key[1]}@{first}", ddl_position(first - 1))

    def _rewrite(self, entry: TableEntry, path: Location, position: int, *, rowid: bool, digest: bool,
                 defaults: Mapping[str, str | None] | None = None, renamed: Mapping[str, str] | None = None,
                 info: TableInfo | None = None) -> None:
        info = info if info is not None else self._view(entry)
        # add-only's kept columns are not in the row digest: images written after the drop do not carry them.
        data = evolve(self.store.read(path), info, rowid=rowid, digest=digest, defaults=defaults,
                      renamed=renamed, time_zone=self.time_zone, modelling=self.modelling,
                      unhashed=frozenset(c.name for c in entry.kept))
        key = (entry.schema, entry.table)
        self._call("before-table-commit", table=key, position=position, kind="rewrite", rows=data.num_rows)
        self.store.overwrite(path, data, position=position)
        self._call("after-table-commit", table=key, position=position, kind="rewrite", rows=data.num_rows)
        self.stats.rewrites += 1
        self._touched.add(key)

    # ------------------------------------------------------------------ DDL
    def _execute(self, ddl: DDLEvent) -> None:
        position = ddl_position(ddl.commit_ts)
        changes = interpret_ddl(ddl, self._lookup)
        for change in changes:
            self._change(change, ddl, position)

    def _change(self, change: SchemaChange, ddl: DDLEvent, position: int) -> None:
        before = rows_position(self._consistent)
        if isinstance(change, CreateTable):
            if not self._wanted(change.key):
                self._not_applicable(ddl, "left out by the table filter", report=False)
                return
            if change.key in self._catalog:
                # TiDB never creates an existing table: the previous one was dropped unseen (filtered).
                self._drop(change.key, ddl)
            if change.info is not None:
                self._create(change.key, change.info, f"{change.key[0]}.{change.key[1]}@{ddl.commit_ts}", position)
            else:
                self._not_applicable(ddl, "the statement does not say the columns: the first rows create the table")
        elif isinstance(change, DropTable):
            self._drop_table(change.key, ddl, before)
        elif isinstance(change, DropSchema):
            keys = {k for k in self._catalog if k[0] == change.schema} | \
                {k for k in self._segments if k[0] == change.schema}
            for key in sorted(keys):
                self._drop_table(key, ddl, before)
            if not keys:
                self._not_applicable(ddl, f"no table of {change.schema} here")
        elif isinstance(change, RenameTable):
            if self._materialise(change.old) is None:
                # Never seen (or left out): the rows under the new name create it, if it is wanted.
                self._not_applicable(ddl, f"no table {change.old[0]}.{change.old[1]} here",
                                     report=self._wanted(change.old))
                return
            self._flush(change.old, before)
            if self._wanted(change.new):
                self._rename(change.old, change.new)
            else:
                self._drop(change.old, ddl)
        elif isinstance(change, TruncateTable):
            entry = self._catalog.get(change.key)
            if entry is None and change.key not in self._segments:
                self._not_applicable(ddl, f"no table {change.key[0]}.{change.key[1]} here",
                                     report=self._wanted(change.key))
            elif self.modelling.on_truncate == "ignore":
                self._flush(change.key, before)  # the rows before it stay, so they are applied
                self.stats.truncates_ignored += 1
            else:
                # Everything before the truncate is gone anyway (also rows of a table not created yet), but
                # from its history: those versions were, so they are written before the truncate closes them.
                if self.history is not None and self.modelling.history_for(*change.key):
                    entry = self._materialise(change.key)
                    if entry is not None:
                        self._flush(change.key, before)
                self.stats.rows_skipped += len(self._segments.pop(change.key, []))
                if entry is not None:
                    self._truncate(entry, position)
                    if self.history is not None:
                        self.history.truncate(entry, ddl.commit_ts, position)
        elif isinstance(change, AlterTable):
            # interpret_ddl looked the table up through _materialise: a table known only from buffered rows
            # exists by now, so the rows before the ALTER are written before it, and the ALTER is applied.
            entry = self._catalog.get(change.key)
            if entry is None:
                # A DDL carrying the table after it (Simple, Debezium) names a table the replica never had.
                self._not_applicable(ddl, f"no table {change.key[0]}.{change.key[1]} here",
                                     report=self._wanted(change.key))
                return
            if self.modelling.schema_evolution == "fail":
                self._refuse(entry, change, ddl)
            self._flush(change.key, before)
            renamed, defaults = self._alter(entry, change, position)
            if self.history is not None:
                # In the replica's names and layout: the history evolves as its replica table does.
                self.history.alter(entry, position, info=self._view(entry), defaults=defaults, renamed=renamed)
        elif isinstance(change, NoTable):
            self._not_applicable(ddl, f"no table {change.key[0]}.{change.key[1]} here: its first rows create it",
                                 report=self._wanted(change.key))
        elif isinstance(change, Unhandled):
            self.stats.ddls_unhandled += 1
            self.unhandled.append(f"{change.query} ({change.reason})")

    def _drop_table(self, key: TableKey, ddl: DDLEvent, before: int) -> None:
        if key not in self._catalog and self.history is not None and self.modelling.history_for(*key):
            self._materialise(key)  # its rows were versions: the history keeps them, closed by the drop
        if key in self._catalog:
            self._flush_history_before_drop(key, before)
            # Rows of a dropped table are never read again: counted as skipped, the table they were for is gone.
            self.stats.rows_skipped += len(self._segments.pop(key, []))
            self._drop(key, ddl)
        elif key in self._segments:
            # First rows and DROP in one batch: the table never reaches a consistent point, so it is not made.
            self.stats.rows_skipped += len(self._segments.pop(key))
        else:
            # Never seen (DROP TABLE IF EXISTS of a table never created, or one left out): nothing to drop.
            self._not_applicable(ddl, f"no table {key[0]}.{key[1]} here", report=self._wanted(key))

    def _create(self, key: TableKey, info: TableInfo, uid: str, position: int) -> TableEntry:
        path = self.store.table_path(*self.modelling.mapping.target_table(*key))
        relative = self.store.relative(path)
        other = next((k for k, e in self._catalog.items() if e.path == relative and k != key), None)
        if other is not None:
            raise ReplicaError(f"{key[0]}.{key[1]} and {other[0]}.{other[1]} would both be replica table {relative} "
                               "(--table-name)")
        entry = TableEntry(schema=key[0], table=key[1], uid=uid, path=relative, info=info)
        names = self._names(entry)
        entry.key_columns = tuple(names.get(c, c) for c in self.modelling.key_for(*key) or handle_columns(info))
        if self.history is not None:
            self.history.make_way(path, key, self._catalog.values())  # a live history is never set aside
        existing = self.store.uid(path)
        if existing == uid:
            self.stats.ddls_skipped += 1  # created by an earlier attempt of this batch
        else:
            if existing is not None or path.exists():
                # A directory the progress knows nothing of (an attempt that crashed before recording it,
                # of another table generation): moved aside, never silently mixed into this table.
                self._set_aside(path, f"stale-{existing or 'unknown'}")
            self.modelling.check_table(info)
            data = replica_schema(self._view(entry), rowid=False, digest=False, modelling=self.modelling).empty_table()
            self._call("before-table-commit", table=key, position=position, kind="create", rows=0)
            self.store.create(path, data, uid=uid, position=position, name=f"{key[0]}.{key[1]}",
                              partition_by=self.store.table_options.partition_columns(*key),
                              properties=dict(self.store.table_options.properties))
            self._call("after-table-commit", table=key, position=position, kind="create", rows=0)
            self.stats.ddls_applied += 1
        self._catalog[key] = entry
        self._touched.add(key)
        return entry

    def _set_aside(self, path: Location, label: str) -> None:
        target = self.store.internal_path("dropped") / safe_name(label)
        suffix = 0
        while target.exists():
            suffix += 1
            target = self.store.internal_path("dropped") / f"{safe_name(label)}.{suffix}"
        if self.store.open(path) is None and path.exists() and not any(path.iterdir()):
            self.store.remove(path)
            return
        self.store.move(path, target)

    def _flush_history_before_drop(self, key: TableKey, position: int) -> None:
        # The rows before a DROP are never read again, but they were versions: written before the drop closes them.
        if self.history is not None and self.modelling.history_for(*key):
            self._flush(key, position)

    def _drop(self, key: TableKey, ddl: DDLEvent) -> None:
        entry = self._catalog.pop(key)
        self._touched.discard(key)
        if self.history is not None:
            self.history.drop(entry, ddl.commit_ts, ddl_position(ddl.commit_ts), info=self._view(entry))
        path = self._locate(entry)
        if path is not None and not self.store.is_dropped(path):
            position = ddl_position(ddl.commit_ts)
            self._call("before-table-commit", table=key, position=position, kind="drop", rows=0)
            self._set_aside(path, f"{entry.uid}")
            self._call("after-table-commit", table=key, position=position, kind="drop", rows=0)
            self.stats.ddls_applied += 1
        else:
            self.stats.ddls_skipped += 1  # moved away by an earlier attempt

    def _rename(self, old: TableKey, new: TableKey) -> None:
        entry = self._catalog.pop(old)
        self._touched.discard(old)
        source = self._locate(entry)
        target = self.store.table_path(*self.modelling.mapping.target_table(*new))
        if source is None:
            raise ReplicaError(f"table {old[0]}.{old[1]} ({entry.uid}) is not in the warehouse: it was changed by "
                               "something else than this pipeline")
        if source == self.path(entry) and source != target:
            if self.history is not None:
                self.history.make_way(target, new, [*self._catalog.values(), entry])
            if target.exists():
                self._set_aside(target, f"stale-{self.store.uid(target) or 'unknown'}")
            self._call("before-table-commit", table=old, position=-1, kind="rename", rows=0)
            self.store.move(source, target)
            self._call("after-table-commit", table=new, position=-1, kind="rename", rows=0)
            self.stats.ddls_applied += 1
        else:
            self.stats.ddls_skipped += 1  # renamed (and maybe more) by an earlier attempt
        renamed = TableEntry(schema=new[0], table=new[1], uid=entry.uid, path=self.store.relative(target),
                             info=rename_table_info(entry.info, new), last_commit_ts=entry.last_commit_ts,
                             rows=entry.rows, key_columns=entry.key_columns, names=entry.names, kept=entry.kept)
        self._catalog[new] = renamed
        self._touched.add(new)
        if self.history is not None:
            self.history.rename(entry, renamed)

    def _truncate(self, entry: TableEntry, position: int) -> None:
        path = self._locate(entry)
        key = (entry.schema, entry.table)
        if path is None or self.store.is_dropped(path) or self.store.position(path) >= position:
            self.stats.ddls_skipped += 1
            return
        self._call("before-table-commit", table=key, position=position, kind="truncate", rows=0)
        self.store.overwrite(path, self.store.schema(path).empty_table(), position=position)
        self._call("after-table-commit", table=key, position=position, kind="truncate", rows=0)
        self.stats.ddls_applied += 1
        self._touched.add(key)

    def _alter(self, entry: TableEntry, change: AlterTable,
               position: int) -> tuple[dict[str, str], dict[str, str | None]]:
        # Returns the DDL's renamed columns and defaults in replica names (the history follows them too).
        path = self._locate(entry)
        old_view = self._view(entry)
        old_names = dict(entry.names)
        add_only = self.modelling.schema_evolution == "add-only"
        if old_names:
            # Mapped and left-out columns keep their replica name across renames (add-only: a rename is a drop
            # and an add, the new name is decided by the rules).
            entry.names = {k: v for k, v in old_names.items() if k not in change.renamed} if add_only \
                else follow_renames(old_names, change.renamed)
        entry.info = rename_table_info(change.info, change.key)
        names = self._names(entry)
        old_kept = entry.kept
        if add_only:
            entry.kept = kept_columns(old_view, map_info(entry.info, names), entry.kept)
        # The DDL in replica names: renames of left-out or mapped columns are no renames of the replica's.
        renamed = {} if add_only else {
            old_names.get(a, a): names.get(b, b) for a, b in change.renamed.items()
            if old_names.get(a, a) not in (EXCLUDED, names.get(b, b))}
        defaults = {names.get(c, c): d for c, d in change.defaults.items() if names.get(c, c) != EXCLUDED}
        if path is None or self.store.is_dropped(path):
            return renamed, defaults
        current = self.store.schema(path)
        entry.info = reconcile_decimals(entry.info, current)
        view = self._view(entry, current)
        rowid, digest = ROWID in current.names, DIGEST in current.names
        wanted = replica_schema(view, rowid=rowid, digest=digest, modelling=self.modelling)
        same_layout = (schema_layout(wanted) == schema_layout(replica_schema(old_view, rowid=rowid, digest=digest,
                                                                 modelling=self.modelling))
                       and schema_layout(current) == schema_layout(wanted))
        # A column newly kept (add-only) leaves the row digest: rewritten even when the layout stays.
        if same_layout and not renamed and not (digest and entry.kept != old_kept):
            return renamed, defaults  # keys, indexes, comments, left-out columns: nothing to rewrite
        if self.store.position(path) >= position:
            self.stats.ddls_skipped += 1
            return renamed, defaults
        self._rewrite(entry, path, position, rowid=rowid, digest=digest, defaults=defaults, renamed=renamed,
                      info=view)
        self.stats.ddls_applied += 1
        return renamed, defaults

    # ------------------------------------------------------------------ quarantine
    def _write_quarantine(self) -> None:
        records, self._quarantine = self._quarantine, []
        data = pa.Table.from_pylist([{
            "topic": r.topic, "partition": r.partition, "offset": r.offset,
            "kafka_timestamp": r.kafka_timestamp * 1000 if r.kafka_timestamp else None, "protocol": r.protocol,
            "reason": r.reason, "key": r.key, "value": r.value,
        } for r in records], schema=_QUARANTINE_SCHEMA)
        path = self.store.internal_path("quarantine")
        if self.store.open(path) is None:
            self.store.create(path, _QUARANTINE_SCHEMA.empty_table(), uid="quarantine", position=0,
                              name="pyticdc quarantine")
        # Keyed by where the record was: a record quarantined again after a replay is not added twice.
        table = self.store.open(path)
        # A warehouse whose quarantine predates a column (kafka_timestamp) keeps its columns: written without it.
        present = set(table.schema().to_arrow().names)
        source = data.select([name for name in _QUARANTINE_SCHEMA.names if name in present])
        predicate = " AND ".join(f't."{c}" = s."{c}"' for c in ("topic", "partition", "offset", "reason"))
        assignments = {f'"{c}"': f's."{c}"' for c in source.column_names}
        metrics = (table.merge(source, predicate=predicate, source_alias="s", target_alias="t",
                               streamed_exec=False)
                   .when_not_matched_insert(assignments).execute())
        self.store.commits += 1
        self.stats.quarantined += int(metrics.get("num_target_rows_inserted", 0))
