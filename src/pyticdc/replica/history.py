"""History tables (SCD type 2): every version of every row of a replica table, in a typed Delta table beside it.

For a table matching ``--history`` (:class:`~pyticdc.replica.modelling.Modelling`), ``<schema>/<table>__history``
beside its replica table (the name is ``history_table_name``, ``<schema>.<table>`` the replica table's: the
``--table-name`` target's) holds one row per version of each upstream row:

====================  ================  ================================================================
column                type              meaning
====================  ================  ================================================================
``_valid_from_ts``    bigint            commit ts (TSO) of the change that opened the version
``_valid_to_ts``      bigint            commit ts of the change that closed it; NULL while current
``_valid_from``       timestamp (UTC)   the physical time of ``_valid_from_ts``
``_valid_to``         timestamp (UTC)   the physical time of ``_valid_to_ts`` (NULL while current)
``_is_current``       boolean           ``_valid_to_ts IS NULL``
``_op``               string            what opened the version: ``insert`` (the key had no current
                                        version) or ``update`` (it replaced the key's current version)
``_tidb_rowid``       bigint            only for tables whose rows are found by it
``_pyticdc_row_       binary            only for tables whose rows are found by their whole image: the
digest``                                replica's digest of the version's columns
``_rescued_data``     string            only with ``--schema-evolution rescue``: as the replica's
====================  ================  ================================================================

then the table's columns, typed as the replica's: with column mapping the replica's columns under its names
(:mod:`pyticdc.replica.mapping`; ``--history-columns`` still names upstream columns), with ``add-only`` its kept
columns too (NULL in versions opened after their drop). A version is a row's content between two commit
timestamps: changes to one key within one transaction (one commit ts) fold into one version, as no
reader of the upstream could see the states between them. A DELETE closes the key's current version
(a deleted key has no current version; ``_op`` stays the opening change's); an update of the handle
closes the old key's version and opens the new key's (``insert``: that key had none); a TRUNCATE closes
every current version (unless ``on_truncate="ignore"``). With ``--history-columns`` a change opens a new
version only when one of the listed columns changes; other changes update the current version in place
(without them every change opens one). Rows are found by the replica's key (the handle, ``--table-key``,
else ``_tidb_rowid``, else the whole row). A table without key whose messages carry no row id (every protocol
but Open Protocol) is found by its whole image, as its replica is: a version is keyed by the row digest, so
every version is an ``insert`` that a DELETE (or an UPDATE's old image) closes, an UPDATE opens the new
image's version, an unchanged image opens none, ``--history-columns`` cannot apply, and identical rows are
one row (as in the replica); ``--table-key`` gives such a table real keys. The history table is created with
its table's first change after history was enabled: rows the replica held before have no version until they
change.

DDL follows the replica: added, dropped, renamed and retyped columns are applied to every version as the
replica's schema evolution mode applies them to its rows (``fail`` stops before either is touched), RENAME
TABLE moves the history table with the replica. DROP TABLE (and DROP DATABASE) writes the table's changes
before it, closes every current version at the DROP's commit ts, and moves the history to
``_pyticdc/dropped`` with the table.

Exactly once. The history table has its own position (a Delta application transaction, as every replica
table): each batch folds the changes above it into the versions they touch and writes them with one MERGE
(on the key and ``_valid_from_ts``) at the batch's position, so a crash between the replica's commit and
the history's, or anywhere else, applies each version once when the batch is redone.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.arrow.rows import parse_table_info, table_info_json
from pyticdc.arrow.types import column_arrow_type
from pyticdc.consumer import handle_columns
from pyticdc.errors import ReplicaError
from pyticdc.model import Op, Row, RowChange, TableInfo
from pyticdc.replica.changes import NetChange, net_change, segment_strategy
from pyticdc.replica.evolution import RESCUED, rescued_json
from pyticdc.replica.maintenance import maintain_table
from pyticdc.replica.mapping import EXCLUDED, map_info
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.progress import TableEntry, read_progress, tso_time
from pyticdc.replica.projection import DIGEST, ROWID, add_digests, convert_each, merge_source, typed_default
from pyticdc.replica.storage import Location
from pyticdc.replica.store import DeltaStore, rows_position, safe_name
from pyticdc.sim.history import TableVersions, Version, interval_errors

__all__ = [
    "HISTORY_COLUMNS",
    "IS_CURRENT",
    "OP",
    "VALID_FROM",
    "VALID_FROM_TS",
    "VALID_TO",
    "VALID_TO_TS",
    "HistoryTables",
    "Step",
    "compare_history",
    "digested",
    "fold_versions",
    "history_path",
    "history_schema",
    "rowid_of",
    "visible_image",
]

VALID_FROM_TS: Final = "_valid_from_ts"
VALID_TO_TS: Final = "_valid_to_ts"
VALID_FROM: Final = "_valid_from"
VALID_TO: Final = "_valid_to"
IS_CURRENT: Final = "_is_current"
OP: Final = "_op"
_UTC: Final = pa.timestamp("us", tz="UTC")
#: Commit metadata of a history's DROP commit: the table's schema then (``pyticdc.arrow.rows.table_info_json``).
TABLE_INFO_KEY: Final = "pyticdc.table_info"
#: The history metadata columns, in table order, with their types.
HISTORY_COLUMNS: Final = ((VALID_FROM_TS, pa.int64()), (VALID_TO_TS, pa.int64()), (VALID_FROM, _UTC),
                          (VALID_TO, _UTC), (IS_CURRENT, pa.bool_()), (OP, pa.string()))
_RESERVED: Final = frozenset({*(name for name, _ in HISTORY_COLUMNS), ROWID, DIGEST})

#: Typed upstream columns of a version, by name.
Image = dict[str, Any]
#: One commit ts of a table's changes, folded: (commit ts, keys deleted, (key, typed image, columns sent or
#: None for a whole image) upserted).
Step = tuple[int, list[Hashable], list[tuple[Hashable, Image, frozenset[str] | None]]]


def history_schema(info: TableInfo, *, rowid: bool, digest: bool = False, rescue: bool = False) -> pa.Schema:
    """The Arrow schema of the history table of ``info`` (metadata columns, maybe ``_tidb_rowid``,
    ``_pyticdc_row_digest`` and ``_rescued_data``, the columns)."""
    fields = [pa.field(name, kind) for name, kind in HISTORY_COLUMNS]
    if rowid:
        fields.append(pa.field(ROWID, pa.int64()))
    if digest:
        fields.append(pa.field(DIGEST, pa.binary()))
    if rescue:
        fields.append(pa.field(RESCUED, pa.string()))
    for column in info.columns:
        if column.name in _RESERVED or column.name == RESCUED:
            raise ReplicaError(f"{info.qualified_name}: column {column.name!r} clashes with a history table column")
        fields.append(pa.field(column.name, column_arrow_type(column)))
    return pa.schema(fields)


def _same(a: Any, b: Any) -> bool:
    # A NaN equals itself here: the same value read twice is not a change.
    return bool(a == b) or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _close(version: dict[str, Any], ts: int) -> None:
    version[VALID_TO_TS] = ts
    version[VALID_TO] = tso_time(ts)
    version[IS_CURRENT] = False


def _open(image: Image, ts: int, op: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {**image, **extra, VALID_FROM_TS: ts, VALID_FROM: tso_time(ts), VALID_TO_TS: None, VALID_TO: None,
            IS_CURRENT: True, OP: op}


def fold_versions(steps: Sequence[Step], current: Mapping[Hashable, dict[str, Any]], columns: Sequence[str], *,
                  tracked: Sequence[str] | None = None,
                  extra: Callable[[Hashable], Mapping[str, Any]] | None = None,
                  by_image: bool = False) -> list[dict[str, Any]]:
    """The versions ``steps`` touch: the current ones they close or update, and the ones they open (pure).

    ``current`` maps each key to its current version (a row of the history table); ``columns`` are the
    table's; ``tracked`` the columns whose change opens a version (None: every change does); ``extra``
    gives the columns a new version takes from its key (``_tidb_rowid``). ``by_image``: keys are whole-row
    digests, so an upsert of a key that has a current version is that very content (nothing changes) and
    every version an ``insert``. Returned in first-touch order, each version once, with its final content.
    """
    live = dict(current)
    touched: dict[tuple[Hashable, int], dict[str, Any]] = {}
    for ts, deletes, upserts in steps:
        for key in deletes:
            version = live.pop(key, None)
            if version is not None:
                _close(version, ts)
                touched[(key, version[VALID_FROM_TS])] = version
        for key, image, sent in upserts:
            version = live.get(key)
            if version is not None and version[VALID_FROM_TS] >= ts:
                continue  # a replay (a feed without watermarks re-applies its batch): this version is written
            if version is not None and by_image:
                continue  # the same whole row again (the replica keeps one row per digest, so does the history)
            if version is not None and sent is not None:
                # A partial image: the columns not sent keep the current version's values.
                image = {**{c: version.get(c) for c in columns}, **{c: image.get(c) for c in sent}}
            if version is not None and tracked is not None and all(
                    _same(version.get(c), image.get(c)) for c in tracked):
                version.update({c: image.get(c) for c in columns})
                touched[(key, version[VALID_FROM_TS])] = version
                continue
            if version is not None:
                _close(version, ts)
                touched[(key, version[VALID_FROM_TS])] = version
            opened = _open({c: image.get(c) for c in columns}, ts, "update" if version is not None else "insert",
                           extra(key) if extra is not None else {})
            live[key] = opened
            touched[(key, ts)] = opened
    return list(touched.values())


def _runs(rows: Sequence[RowChange]) -> list[list[RowChange]]:
    # Consecutive changes of one commit ts (the consumer releases a table's changes in commit-ts order).
    runs: list[list[RowChange]] = []
    for row in rows:
        if runs and runs[-1][-1].commit_ts == row.commit_ts:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def _sent(action: RowChange, columns: Sequence[str], rescue: bool) -> frozenset[str]:
    image = action.columns if action.columns is not None else action.pre_columns
    # _rescued_data is the image's own (what it carries beyond the table), as the replica assigns it.
    return frozenset((*(c for c in columns if image is not None and c in image), *((RESCUED,) if rescue else ())))


def _unescaped(name: str) -> str:
    # The inverse of pyticdc.replica.store.safe_name: "~XX" is one byte of the name's UTF-8.
    raw = bytearray()
    index = 0
    while index < len(name):
        if name[index] == "~" and index + 3 <= len(name):
            raw.append(int(name[index + 1:index + 3], 16))
            index += 3
        else:
            raw.extend(name[index].encode())
            index += 1
    return raw.decode("utf-8", "surrogateescape")


def history_path(store: DeltaStore, modelling: Modelling, replica_path: str) -> Location:
    """Directory of the history table of the replica table in ``replica_path`` (relative to the warehouse).

    Beside its replica table, named by ``history_table_name`` with ``{table}`` the replica table's name: with
    ``--table-name`` the mapped one, so the history follows its replica wherever renames and rules put it.
    """
    schema, _, table = replica_path.rpartition("/")
    return store.table_path(_unescaped(schema), modelling.history_name(_unescaped(table)))


class HistoryTables:
    """The history tables of a :class:`~pyticdc.replica.applier.DeltaReplica` (see the module docstring).

    ``call`` is the replica's commit-point hook (``before-table-commit``/``after-table-commit`` with
    ``kind`` ``history``, ``history-create``, ...); ``set_aside`` moves a directory to ``_pyticdc/dropped``.
    """

    def __init__(self, store: DeltaStore, modelling: Modelling, *, time_zone: str,
                 call: Callable[..., None], set_aside: Callable[[Location, str], None]) -> None:
        self.store, self.modelling, self.time_zone = store, modelling, time_zone
        self._call, self._set_aside = call, set_aside
        #: Versions written (opened, closed or updated in place) by this process.
        self.versions_written = 0
        #: History tables this process moved to their own name (found under another, see ``locate``).
        self.relocated = 0
        self._rescue = modelling.schema_evolution == "rescue"
        # Rows are typed as the replica types them; with rescue, what they carry beyond the table is kept too.
        self._typing = Modelling(schema_evolution="rescue") if self._rescue else None

    def path(self, entry: TableEntry) -> Location:
        """Directory of the history table of the replica table of ``entry`` (:func:`history_path`)."""
        return history_path(self.store, self.modelling, entry.path)

    @staticmethod
    def uid(entry: TableEntry) -> str:
        """The identity of a replica table's history table (the replica table's, marked)."""
        return f"{entry.uid}#history"

    def locate(self, entry: TableEntry) -> Location | None:
        """Where the history table of ``entry`` is: its path, or in ``_pyticdc/dropped`` when its table's DROP
        moved it there (an earlier attempt of the batch); None when there is none yet.

        Found elsewhere in the warehouse (a RENAME redone after a crash, a changed ``--history-table-name``), it
        moves to its path first when that is free: a redone RENAME then moves it again, as the first attempt did.
        """
        path = self.path(entry)
        uid = self.uid(entry)
        if self.store.uid(path) == uid:
            return path
        label = safe_name(uid)
        for found in self.store.table_dirs():
            if self.store.uid(found) != uid:
                continue
            if self.store.is_dropped(found):
                if found.name == label or found.name.startswith(f"{label}."):
                    return found  # set aside by its table's DROP (a history set aside as stale is not its)
                continue
            if path.exists():
                return found
            self.store.move(found, path)
            self.relocated += 1
            return path
        return None

    def make_way(self, path: Location, table: tuple[str, str], entries: Iterable[TableEntry]) -> None:
        """Before upstream ``table`` takes replica directory ``path``: a history table there that a table of
        ``entries`` still keeps moves to its own name (``--history-table-name`` changed since), else ReplicaError.

        A history table nothing keeps (its table gone, or no history wanted for it any more) is left to the caller,
        who sets it aside as stale. A history is never set aside under a live table: its rows would be skipped.
        """
        uid = self.store.uid(path)
        if not uid or not uid.endswith("#history"):
            return
        owner = next((e for e in entries if self.uid(e) == uid), None)
        if owner is None or not self.modelling.history_for(owner.schema, owner.table):
            return
        home = self.path(owner)
        if home != path and not home.exists():
            self.store.move(path, home)
            self.relocated += 1
            return
        raise ReplicaError(f"{table[0]}.{table[1]}: this upstream table's replica directory "
                           f"{self.store.relative(path)} holds the history table of {owner.schema}.{owner.table}: "
                           "restart with another --history-table-name (history tables move to their new names)")

    # ------------------------------------------------------------------ rows
    def flush(self, entry: TableEntry, rows: Sequence[RowChange], position: int, *, skip_by_position: bool,
              info: TableInfo | None = None, names: Mapping[str, str] | None = None) -> None:
        """Fold ``rows`` (a segment of the table, in apply order) into its history table, in one commit at
        ``position`` (the replica table's).

        With column mapping ``rows`` are in replica column names, ``info`` is the replica's view of the table
        (mapped columns, then ``add-only``'s kept ones) and ``names`` the table's upstream → replica names.
        """
        key = (entry.schema, entry.table)
        if not rows or not self.modelling.history_for(*key):
            return
        self.modelling.check_table(entry.info)
        names = names or {}
        info = info if info is not None else entry.info
        path = self.locate(entry)
        if path is not None and self.store.is_dropped(path):
            return  # an earlier attempt went on to drop the table: its rows are moot
        first = min(row.commit_ts for row in rows)
        override = self.modelling.key_for(*key)
        override = tuple(names.get(c, c) for c in override) if override else override
        strategy, key_columns = segment_strategy(rows, override)
        rowid = strategy == "rowid"
        if path is None:
            path = self.create(entry, info, rowid=rowid, digest=strategy == "image",
                                position=rows_position(first) - 1)
        held = self.store.position(path)
        fresh = [row for row in rows if rows_position(row.commit_ts) > held] if skip_by_position else list(rows)
        if not fresh:
            return
        current_schema = self.store.schema(path)
        rowid = rowid or ROWID in current_schema.names
        # Once found by their whole image, always digested: a table may lose its key again (DROP INDEX).
        digest = strategy == "image" or DIGEST in current_schema.names
        wanted = history_schema(info, rowid=rowid, digest=digest, rescue=self._rescue)
        if list(current_schema) != list(wanted):
            # Columns learnt from rows, a widened DECIMAL, a row id, a digest: the same versions in the new layout.
            self.rewrite(entry, info, path, held, rowid=rowid, digest=digest)
        columns = [c.name for c in info.columns]
        kept = {c.name for c in entry.kept}
        # add-only's kept columns are not expected in images: versions opened after their drop leave them NULL.
        live = [c for c in columns if c not in kept]
        nets = [(run[0].commit_ts, net_change(run, key=override, columns=live)) for run in _runs(fresh)]
        upserts = [action for _, net in nets for action in net.upserts]
        deletes = [action for _, net in nets for action in net.deletes]
        partial = {i for _, net in nets for i in net.partial}
        combined = NetChange(strategy=strategy, key_columns=key_columns, upserts=upserts, deletes=deletes,
                             upsert_ops=["insert"] * len(upserts), partial=partial)
        try:
            typed = merge_source(combined, info, rowid=rowid, time_zone=self.time_zone,
                                 modelling=self._typing).table.to_pylist()
        except ValueError as exc:
            raise ReplicaError(f"{key[0]}.{key[1]} history: {exc}") from None
        identity = list(key_columns) if strategy == "key" else [ROWID] if strategy == "rowid" else [DIGEST]

        def handle(row: Mapping[str, Any]) -> Hashable:
            return tuple(row.get(c) for c in identity)

        typed_upserts, typed_deletes = iter(typed[:len(upserts)]), iter(typed[len(upserts):])
        steps: list[Step] = []
        for ts, net in nets:
            gone = [handle(next(typed_deletes)) for _ in net.deletes]
            put = []
            for action in net.upserts:
                row = next(typed_upserts)
                put.append((handle(row), row, _sent(action, columns, self._rescue) if id(action) in net.partial
                            else None))
            steps.append((ts, gone, put))
        current = {handle(row): row for row in self.current_versions(path)}
        tracked = self.modelling.tracked_columns(*key)
        if tracked is not None:
            # --history-columns names upstream columns: tracked under their replica names.
            tracked = tuple(names.get(c, c) for c in tracked)
            if EXCLUDED in tracked:
                raise ReplicaError(f"{key[0]}.{key[1]}: a --history-columns column is left out of the replica "
                                   "(--columns/--exclude-columns)")
        versions = fold_versions(steps, current, [*columns, *([RESCUED] if self._rescue else []),
                                                  *([ROWID] if rowid else [])], tracked=tracked,
                                 extra=rowid_of if strategy == "rowid" else None, by_image=strategy == "image")
        if not versions:
            return
        source = pa.Table.from_pylist(versions, schema=wanted)
        if digest:
            source = digested(source, columns)
        self._call("before-table-commit", table=key, position=position, kind="history", rows=len(versions))
        self.merge_versions(path, source, [*identity, VALID_FROM_TS], position)
        self._call("after-table-commit", table=key, position=position, kind="history", rows=len(versions))
        self.versions_written += len(versions)

    def current_versions(self, path: Location) -> list[dict[str, Any]]:
        """The current versions of the history table at ``path``, as rows of its schema."""
        # Only the current versions are read: a history grows with every change, its current part does not.
        from deltalake import QueryBuilder

        schema = self.store.schema(path)
        reader = QueryBuilder().register("history", self.store.open(path)).execute(
            f'SELECT * FROM "history" WHERE {_quote(IS_CURRENT)}')
        data = pa.table(reader.read_all())
        if data.num_rows == 0:
            return []
        return list(data.select(schema.names).cast(schema).to_pylist())

    def merge_versions(self, path: Location, source: pa.Table, on: list[str], position: int,
                       extra: Mapping[str, str] | None = None) -> None:
        """MERGE the versions ``source`` into the history table at ``path`` on ``on``, committed at ``position``."""
        table = self.store.open(path)
        # IS NOT DISTINCT FROM: a --table-key column may be NULL, and NULL = NULL is not true.
        predicate = " AND ".join(f"(t.{_quote(n)} IS NOT DISTINCT FROM s.{_quote(n)})" for n in on)
        assignments = {_quote(n): f"s.{_quote(n)}" for n in source.column_names}
        (table.merge(source, predicate=predicate, source_alias="s", target_alias="t",
                     commit_properties=self.store._commit(position, extra), streamed_exec=False)
         .when_matched_update(assignments).when_not_matched_insert(assignments).execute())
        self.store.commits += 1

    def create(self, entry: TableEntry, info: TableInfo, *, rowid: bool, digest: bool, position: int) -> Location:
        """Create the empty history table of ``entry`` in the layout of ``info``, at ``position``; its path."""
        key = (entry.schema, entry.table)
        path = self.path(entry)
        name = self.store.relative(path).replace("/", ".")
        if self.store.relative(path) == entry.path:
            raise ReplicaError(f"{key[0]}.{key[1]}: the history table name is the table's own")
        existing = self.store.uid(path)
        if existing and not existing.endswith("#history"):
            raise ReplicaError(f"{key[0]}.{key[1]}: its history table would be {name}, a replica table: "
                               "choose another --history-table-name")
        if existing is not None or path.exists():
            # An older history of that name (its table dropped unseen) or debris: never mixed into this one.
            self._set_aside(path, f"stale-{existing or 'unknown'}")
        self._call("before-table-commit", table=key, position=position, kind="history-create", rows=0)
        self.store.create(path, history_schema(info, rowid=rowid, digest=digest, rescue=self._rescue).empty_table(),
                          uid=self.uid(entry), position=position, name=name)
        self._call("after-table-commit", table=key, position=position, kind="history-create", rows=0)
        return path

    def rewrite(self, entry: TableEntry, info: TableInfo, path: Location, position: int, *, rowid: bool,
                digest: bool, defaults: Mapping[str, str | None] | None = None,
                renamed: Mapping[str, str] | None = None) -> None:
        """Rewrite every version in the layout of ``info``, the replica's view (``renamed``, ``defaults`` in it)."""
        data = self.store.read(path)
        schema = history_schema(info, rowid=rowid, digest=digest, rescue=self._rescue)
        sources = {new: old for old, new in (renamed or {}).items()}
        arrays: list[pa.ChunkedArray | pa.Array] = []
        rescued: dict[str, list[Any]] = {}
        for field in schema:
            source = sources.get(field.name, field.name)
            if field.name == DIGEST:
                arrays.append(pa.nulls(data.num_rows, field.type))  # computed below, from the new content
            elif source in data.schema.names:
                column = data.column(source)
                try:
                    arrays.append(column if column.type == field.type else pc.cast(column, field.type, safe=True))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    if not self._rescue:
                        raise ReplicaError(f"{info.qualified_name} history: {field.name} does not convert from "
                                           f"{column.type} to {field.type} ({exc})") from None
                    # As the replica does: the values the new type cannot hold go to _rescued_data.
                    converted, rescued[field.name] = convert_each(column, field.type)
                    arrays.append(converted)
            else:
                value = typed_default(info, field.name, (defaults or {}).get(field.name), time_zone=self.time_zone)
                arrays.append(pa.array([value] * data.num_rows, field.type) if value is not None
                              else pa.nulls(data.num_rows, field.type))
        if rescued:
            at = schema.get_field_index(RESCUED)
            existing = arrays[at].to_pylist()
            arrays[at] = pa.array([rescued_json(existing[i], {name: lost[i] for name, lost in rescued.items()})
                                   for i in range(data.num_rows)], pa.string())
        key = (entry.schema, entry.table)
        rewritten = pa.Table.from_arrays(arrays, schema=schema)
        if digest:
            # A version's digest is of its content in the current layout, as the deletes that close it are.
            rewritten = digested(rewritten, [c.name for c in info.columns])
        self._call("before-table-commit", table=key, position=position, kind="history-rewrite", rows=data.num_rows)
        self.store.overwrite(path, rewritten, position=position)
        self._call("after-table-commit", table=key, position=position, kind="history-rewrite", rows=data.num_rows)

    def maintain(self, entry: TableEntry) -> None:
        """Compact (and with a retention vacuum) the history table of ``entry``, as its replica table is."""
        path = self.locate(entry)
        table = self.store.open(path) if path is not None and not self.store.is_dropped(path) else None
        if path is not None and table is not None:
            maintain_table(table, self.store.relative(path),
                           retention_hours=self.store.table_options.vacuum_retention_hours)
            self.store.forget(path)

    # ------------------------------------------------------------------ DDL
    def alter(self, entry: TableEntry, position: int, *, info: TableInfo | None = None,
              defaults: Mapping[str, str | None] | None = None, renamed: Mapping[str, str] | None = None) -> None:
        """Columns added, dropped, renamed or retyped: every version follows, as the replica table does.

        ``info`` is the replica's view of the new schema (``entry.info`` without mapping), ``defaults`` and
        ``renamed`` in its names: mapped columns keep their names, ``add-only`` keeps dropped ones.
        """
        info = info if info is not None else entry.info
        path = self.locate(entry)
        if path is None or self.store.is_dropped(path) or self.store.position(path) >= position:
            return
        current = self.store.schema(path)
        rowid, digest = ROWID in current.names, DIGEST in current.names
        if list(current) == list(history_schema(info, rowid=rowid, digest=digest, rescue=self._rescue)) \
                and not renamed:
            return
        self.rewrite(entry, info, path, position, rowid=rowid, digest=digest, defaults=defaults, renamed=renamed)

    def truncate(self, entry: TableEntry, commit_ts: int, position: int) -> None:
        """An upstream TRUNCATE at ``commit_ts``: every current version is closed there."""
        path = self.locate(entry)
        if path is not None and not self.store.is_dropped(path):
            self._close_all(entry, path, commit_ts, position)

    def _close_all(self, entry: TableEntry, path: Location, commit_ts: int, position: int, *,
                   final: TableInfo | None = None) -> None:
        # Every current version closed at commit_ts, in one commit at position (once: a replay finds it there).
        # ``final`` (a DROP): the commit also records the table's schema, the only one a dropped history has.
        if self.store.position(path) >= position:
            return
        data = self.store.schema(path)
        closed = self.current_versions(path)
        for version in closed:
            _close(version, commit_ts)
        key = (entry.schema, entry.table)
        identity = _identity(entry.key_columns, data.names)
        extra = {TABLE_INFO_KEY: table_info_json(final)} if final is not None else None
        self._call("before-table-commit", table=key, position=position, kind="history", rows=len(closed))
        if closed:
            self.merge_versions(path, pa.Table.from_pylist(closed, schema=data), [*identity, VALID_FROM_TS], position,
                                extra)
        elif final is not None:
            from deltalake import write_deltalake

            # Nothing to close, but the schema is recorded all the same (an empty MERGE commits nothing).
            write_deltalake(self.store.open(path), data.empty_table(), mode="append",
                            commit_properties=self.store._commit(position, extra),
                            storage_options=self.store.storage_options)
            self.store.commits += 1
        self._call("after-table-commit", table=key, position=position, kind="history", rows=len(closed))

    def drop(self, entry: TableEntry, commit_ts: int, position: int, *, info: TableInfo | None = None) -> None:
        """The table was dropped at ``commit_ts``: its current versions are closed there and its history goes to
        ``_pyticdc/dropped`` with it (once, whatever the crashes). ``info``: the replica's view of the table,
        recorded with the DROP (its history's columns)."""
        path = self.locate(entry)
        if path is not None and not self.store.is_dropped(path):
            self._close_all(entry, path, commit_ts, position, final=info if info is not None else entry.info)
            self._set_aside(path, self.uid(entry))

    def rename(self, old: TableEntry, new: TableEntry) -> None:
        """The table was renamed: its history table moves to the new name's (once, whatever the crashes)."""
        source = self.locate(old)
        if source is None or source != self.path(old):
            return  # none, or moved (maybe further) by an earlier attempt of the batch
        target = self.path(new)
        if target == source:
            return  # its replica table kept its name (a --table-name rule naming one table)
        existing = self.store.uid(target)
        if existing and not existing.endswith("#history"):
            raise ReplicaError(f"{new.schema}.{new.table}: its history table would be {self.store.relative(target)}, "
                               "a replica table: restart with another --history-table-name (history tables move to "
                               "their new names)")
        if existing is not None or target.exists():
            # An older history of that name (its table dropped unseen) or debris: never mixed into this one.
            self._set_aside(target, f"stale-{existing or 'unknown'}")
        self.store.move(source, target)


def _identity(key_columns: Sequence[str], names: Sequence[str]) -> list[str]:
    # How a history table's versions are told apart: the replica's key, else the row id, else the row digest.
    if key_columns and all(c in names for c in key_columns):
        return list(key_columns)
    return [ROWID] if ROWID in names else [DIGEST]


def digested(versions: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``versions`` with ``_pyticdc_row_digest`` set: the replica's row digest (``add_digests``) of ``columns``."""
    digests = add_digests(versions.select(list(columns))).column(DIGEST)
    return versions.set_column(versions.schema.get_field_index(DIGEST), DIGEST, digests)


def rowid_of(key: Hashable) -> dict[str, Any]:
    """The ``_tidb_rowid`` a new version takes from its key (the key of a table found by it is the 1-tuple of it)."""
    return {ROWID: key[0]} if isinstance(key, tuple) else {}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------------- the oracle's comparison
def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def compare_history(warehouse: str | Path, truth: Mapping[tuple[str, str], TableVersions], modelling: Modelling, *,
                    time_zone: str = "UTC", storage_options: Mapping[str, str] | None = None,
                    dropped: Sequence[TableVersions] = ()) -> str | None:
    """None if every committed history table holds exactly the ``truth``'s versions, else the first difference.

    ``truth`` is :func:`pyticdc.sim.history.versions_at` at the progress' consistent ts, ``dropped`` the
    dropped tables of :func:`pyticdc.sim.history.history_at` (their histories, in ``_pyticdc/dropped``, are
    found by the table's identity). Each version is compared with its interval and ``_op``, its columns typed
    as the replica types rows; the table's own columns must be the replica table's (a dropped one's: the
    truth's), ``_is_current``/``_valid_from``/``_valid_to`` must agree with the interval, and the intervals
    of each key must not overlap (:func:`pyticdc.sim.history.interval_errors`). With column and table mapping
    the history table is the mapped table's and the truth's versions are mapped as the replica's rows are
    (:func:`pyticdc.replica.check.compare_replica`); with ``rescue`` each history has ``_rescued_data``.
    """
    store = DeltaStore(warehouse, storage_options=storage_options)
    progress = read_progress(store)
    rescue = modelling.schema_evolution == "rescue"
    for key in sorted(set(truth) | {k for k in progress.tables if modelling.history_for(*k)}):
        entry = progress.tables.get(key)
        target = modelling.mapping.target_table(*key)
        path = history_path(store, modelling, entry.path) if entry is not None else \
            store.table_path(target[0], modelling.history_name(target[1]))
        name = store.relative(path).replace("/", ".")
        data = store.read(path) if store.open(path) is not None else None
        want = truth.get(key)
        if want is None or not want.versions:
            if data is not None and data.num_rows:
                return f"history table {name}: {data.num_rows} versions, the truth has none"
            continue
        if entry is None or data is None:
            return f"history table {name} missing ({len(want.versions)} versions in the truth)"
        rule = _rule(modelling, want.info)
        difference = _compare_versions(name, data, _mapped(want, rule), map_info(entry.info, rule),
                                       entry.key_columns, time_zone, rescue)
        if difference is not None:
            return difference
    if not dropped:
        return None
    folder = store.internal_path("dropped")
    found = {store.uid(p): p for p in (folder.iterdir() if folder.is_dir() else ()) if store.open(p) is not None}
    for want in dropped:
        if not want.versions:
            continue
        where = next((found[f"{origin}#history"] for origin in want.origins if f"{origin}#history" in found), None)
        name = f"dropped history of {want.info.qualified_name} ({' or '.join(want.origins)})"
        if where is None:
            return f"{name} missing ({len(want.versions)} versions in the truth, dropped at {want.dropped_ts})"
        recorded = next((commit[TABLE_INFO_KEY] for commit in store.open(where).history(5)
                          if TABLE_INFO_KEY in commit), None)
        if recorded is None:
            return f"{name}: its DROP commit is missing (no {TABLE_INFO_KEY} in its last commits)"
        info = parse_table_info(recorded)  # the replica's view of the table: in mapped names
        rule = _rule(modelling, want.info)
        key_columns = tuple(rule.get(c, c) for c in modelling.key_for(info.schema, info.table) or ()) \
            or handle_columns(info)
        difference = _compare_versions(name, store.read(where), _mapped(want, rule), info, key_columns, time_zone,
                                       rescue)
        if difference is not None:
            return difference
    return None


def visible_image(modelling: Modelling, info: TableInfo, row: Row) -> Row:
    """The columns of upstream ``row`` a history table holds (the mapping's left-out columns removed)."""
    if not modelling.mapping.maps_columns:
        return row
    return Row({k: v for k, v in row.items()
                if modelling.mapping.column_target(info.schema, info.table, k) != EXCLUDED})


def _rule(modelling: Modelling, info: TableInfo) -> dict[str, str]:
    # The truth's columns under the mapping rules, by name (the simulator renames no column, so a column's
    # first name is its name); empty without column mapping.
    mapping = modelling.mapping
    if not mapping.maps_columns:
        return {}
    return {c.name: mapping.column_target(info.schema, info.table, c.name) for c in info.columns}


def _mapped(want: TableVersions, rule: Mapping[str, str]) -> TableVersions:
    # The truth's versions in replica column names (left-out columns removed).
    if not rule:
        return want
    versions = [Version(image=Row({rule.get(k, k): v for k, v in version.image.items()
                                   if rule.get(k, k) != EXCLUDED}), valid_from_ts=version.valid_from_ts,
                        valid_to_ts=version.valid_to_ts, op=version.op, row_id=version.row_id)
                for version in want.versions]
    return TableVersions(info=map_info(want.info, rule), versions=versions, origins=want.origins,
                         dropped_ts=want.dropped_ts, key_columns=want.key_columns)


def _compare_versions(name: str, data: pa.Table, want: TableVersions, info: TableInfo, key_columns: Sequence[str],
                      time_zone: str, rescue: bool = False) -> str | None:
    # One history table against its truth (see compare_history).
    rows = data.to_pylist()
    columns = [c.name for c in info.columns]
    if rescue and RESCUED not in data.schema.names:
        return f"history table {name}: no {RESCUED} column (--schema-evolution rescue)"
    own = [n for n in data.schema.names if n not in _RESERVED and n != RESCUED]
    if own != columns:
        return f"history table {name}: columns {own} are not the replica's {columns}"
    for row in rows:
        start, end = row[VALID_FROM_TS], row[VALID_TO_TS]
        if row[IS_CURRENT] != (end is None) or row[OP] not in ("insert", "update"):
            return f"history table {name}: version {start}..{end} has _is_current={row[IS_CURRENT]}, _op={row[OP]}"
        if row[VALID_FROM] != tso_time(start) or row[VALID_TO] != (None if end is None else tso_time(end)):
            return f"history table {name}: _valid_from/_valid_to are not the times of {start}..{end}"
    identity = _identity(key_columns, data.schema.names)
    if all(c in data.schema.names for c in identity):
        overlap = interval_errors([(tuple(_frozen(row[c]) for c in identity), row[VALID_FROM_TS],
                                    row[VALID_TO_TS]) for row in rows])
        if overlap is not None:
            return f"history table {name}: {overlap}"
    inserts = [RowChange(op=Op.INSERT, schema=info.schema, table=info.table, commit_ts=0, columns=v.image,
                         table_info=want.info) for v in want.versions]
    typed = merge_source(NetChange(strategy="key", key_columns=(), upserts=inserts), info, rowid=False,
                         time_zone=time_zone).table.to_pylist()
    expected = Counter(
        (version.valid_from_ts, version.valid_to_ts, version.op, *(_frozen(image.get(c)) for c in columns))
        for version, image in zip(want.versions, typed))
    got = Counter((row[VALID_FROM_TS], row[VALID_TO_TS], row[OP], *(_frozen(row.get(c)) for c in columns))
                  for row in rows)
    if got != expected:
        missing, extra = list((expected - got).elements()), list((got - expected).elements())
        return (f"history table {name}: {len(missing)} truth versions missing, {len(extra)} not in the truth; "
                f"first missing {missing[:1]}, first extra {extra[:1]} (from, to, op, {', '.join(columns)})")
    return None
