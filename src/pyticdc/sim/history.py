"""The ground truth of history tables (SCD type 2): every version of every row of a simulated workload (pure).

:func:`versions_at` replays the simulator's events up to a commit ts and returns, per table, every version
of every row with its validity interval — what a history table (:mod:`pyticdc.replica.history`) must hold
once the replica is complete at that ts. The rules are the history table's: the changes of one commit ts
to one key are one version; a key is the table's handle (or the overriding key columns, else the row id);
a DELETE closes the key's current version; a change of the handle closes the old key's version and opens
the new key's; ``_op`` is ``insert`` when the key had no current version, else ``update``; with tracked
columns a change opens a version only when one of them changes (else the current version takes the new
values); a TRUNCATE closes every current version (unless ignored); added columns take their default in
every version, dropped ones leave every version; RENAME moves the history, DROP closes every current version
and ends it (:func:`history_at` keeps the dropped tables' versions). Without row ids on the wire a table
without key is told apart by its whole image: every version is an ``insert`` its delete (or its update's old
image) closes, an unchanged image is no new version. Images are projected (``project``) when their change
happens, so a lossy protocol is held to what it carries.
:func:`interval_errors` checks the intervals themselves: per key, no overlap and no version after a
current one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from pyticdc.consumer import handle_columns
from pyticdc.model import ActionType, ColumnInfo, DDLEvent, Row, RowChange, TableInfo, Value
from pyticdc.mysql import INTEGER_TYPES, STRING_TYPES
from pyticdc.sim.workload import History

__all__ = ["FindBy", "HistoryTruth", "TableVersions", "Version", "history_at", "interval_errors", "versions_at"]

TableKey = tuple[str, str]


@dataclass
class Version:
    """One version of one row: its (projected) image, the commit ts that opened and closed it, what opened it."""

    image: Row
    valid_from_ts: int
    valid_to_ts: int | None
    op: str
    #: The row id it was stored under (the key of tables found by it).
    row_id: int = 0


@dataclass
class TableVersions:
    """Every version of one table's rows, and the table info they are in."""

    info: TableInfo
    versions: list[Version] = field(default_factory=list)
    current: dict[Hashable, Version] = field(default_factory=dict)
    #: The identities a replica may give the table (``schema.table@ts`` of its CREATE TABLE, or of its first
    #: change when the DDL carries no schema); a dropped table's history is found by them.
    origins: tuple[str, ...] = ()
    #: The commit ts of the DROP TABLE that ended the table (None while it exists).
    dropped_ts: int | None = None
    #: The columns ``current`` is keyed by (empty: the row id).
    key_columns: tuple[str, ...] = ()


@dataclass
class HistoryTruth:
    """Every version as of a ts: of the tables that exist (by name), and of those dropped by then."""

    tables: dict[TableKey, TableVersions]
    dropped: list[TableVersions]


#: How a consumer finds a change's row as the protocol carries it: its handle columns, () for ``_tidb_rowid``,
#: None for its whole image (no key and no row id on the wire).
FindBy = Callable[[RowChange], tuple[str, ...] | None]


def _own_key(change: RowChange) -> tuple[str, ...] | None:
    # Everything on the wire: the change's own handle, else its row id.
    return handle_columns(change.table_info) if change.table_info is not None else ()


def _key_function(columns: tuple[str, ...]) -> Callable[[Row, int], Hashable]:
    if columns:
        return lambda row, row_id: tuple(row.get(c) for c in columns)
    # Also for rows the replica finds by their whole image: the simulator still knows which row is which.
    return lambda row, row_id: ("_tidb_rowid", row_id)


def _default(column: ColumnInfo) -> Value:
    # The value rows written before an ADD COLUMN read: its default, in the model's types (the simulator adds
    # integer and string columns; other types keep TiDB's text, as DECIMAL and temporal values are).
    text = column.default
    if text is None:
        return None
    if column.type_code in INTEGER_TYPES:
        return int(text)
    return text.encode() if column.type_code in STRING_TYPES else text


def _rekey(table: TableVersions, columns: tuple[str, ...]) -> None:
    # The table's key changed (a DDL, another override after a RENAME): its current versions by the new one.
    if columns != table.key_columns:
        key = _key_function(columns)
        table.current = {key(v.image, v.row_id): v for v in table.current.values()}
        table.key_columns = columns


def _close(version: Version, ts: int) -> None:
    version.valid_to_ts = ts


def _step(table: TableVersions, ts: int, rows: Sequence[RowChange], override: Sequence[str] | None,
          tracked: Sequence[str] | None, project: Callable[[TableInfo, Row], Row], find_by: FindBy,
          visible: Callable[[TableInfo, Row], Row]) -> None:
    wire = tuple(override) if override else find_by(rows[-1])
    by_image = wire is None
    _rekey(table, wire or ())
    key = _key_function(wire or ())
    posts: dict[Hashable, tuple[Row, int]] = {}
    pres: set[Hashable] = set()
    #: By image: each row's image before this ts (its first pre-image), projected.
    before: dict[Hashable, Row] = {}
    for change in rows:
        if change.pre_columns is not None:
            handle = key(change.pre_columns, change.row_id)
            pres.add(handle)
            if by_image and handle not in before:
                before[handle] = project(table.info, change.pre_columns)
        if change.columns is not None:
            posts[key(change.columns, change.row_id)] = (project(table.info, change.columns), change.row_id)
    for gone in pres - posts.keys():
        version = table.current.pop(gone, None)
        if version is not None:
            _close(version, ts)
    for handle, (image, row_id) in posts.items():
        version = table.current.get(handle)
        if by_image:
            # A row is its image: an unchanged one is the same version, a changed one a new row (an insert).
            old = before.get(handle)
            if version is not None and old is not None and visible(table.info, old) == visible(table.info, image):
                continue
            if version is not None:
                _close(version, ts)
            opened = Version(image=image, valid_from_ts=ts, valid_to_ts=None, op="insert", row_id=row_id)
            table.versions.append(opened)
            table.current[handle] = opened
            continue
        if version is not None and tracked is not None and all(
                version.image.get(c) == image.get(c) for c in tracked):
            version.image = image
            continue
        if version is not None:
            _close(version, ts)
        opened = Version(image=image, valid_from_ts=ts, valid_to_ts=None,
                         op="update" if version is not None else "insert", row_id=row_id)
        table.versions.append(opened)
        table.current[handle] = opened


def _ddl(tables: dict[TableKey, TableVersions], ddl: DDLEvent, *, truncate: bool,
         dropped: list[TableVersions]) -> None:
    post, pre = ddl.table_info, ddl.pre_table_info
    action = ddl.ddl_type
    if action == ActionType.DROP_TABLE and pre is not None:
        gone = tables.pop((pre.schema, pre.table), None)
        if gone is not None:
            # Its history ends with it: every current version is closed at the DROP.
            for version in gone.current.values():
                _close(version, ddl.commit_ts)
            gone.current, gone.dropped_ts = {}, ddl.commit_ts
            dropped.append(gone)
        return
    if action == ActionType.RENAME_TABLE and pre is not None and post is not None:
        moved = tables.pop((pre.schema, pre.table), None)
        if moved is not None:
            moved.info = post
            tables[(post.schema, post.table)] = moved
        return
    if post is None:
        return
    table = tables.get((post.schema, post.table))
    if table is None:
        return
    if action == ActionType.TRUNCATE_TABLE:
        if truncate:
            for version in table.current.values():
                _close(version, ddl.commit_ts)
            table.current = {}
        table.info = post
        return
    if pre is not None:
        before = {c.name for c in pre.columns}
        after = {c.name for c in post.columns}
        added = [c for c in post.columns if c.name not in before]
        for version in table.versions:
            image = {n: v for n, v in version.image.items() if n in after}
            image.update({c.name: _default(c) for c in added})
            version.image = Row(image)
    table.info = post


def versions_at(
    history: History, consistent_ts: int, *, history_for: Callable[[str, str], bool],
    key_for: Callable[[str, str], Sequence[str] | None] = lambda schema, table: None,
    tracked_for: Callable[[str, str], Sequence[str] | None] = lambda schema, table: None,
    project: Callable[[TableInfo, Row], Row] = lambda info, row: row, truncate: bool = True,
    find_by: FindBy = _own_key, visible: Callable[[TableInfo, Row], Row] = lambda info, row: row,
) -> dict[TableKey, TableVersions]:
    """Every version of every row of the tables ``history_for`` names that exist at ``consistent_ts`` (pure).

    The tables of :func:`history_at` (which also gives the dropped ones' versions), with the same options.
    """
    return history_at(history, consistent_ts, history_for=history_for, key_for=key_for, tracked_for=tracked_for,
                      project=project, truncate=truncate, find_by=find_by, visible=visible).tables


def history_at(
    history: History, consistent_ts: int, *, history_for: Callable[[str, str], bool],
    key_for: Callable[[str, str], Sequence[str] | None] = lambda schema, table: None,
    tracked_for: Callable[[str, str], Sequence[str] | None] = lambda schema, table: None,
    project: Callable[[TableInfo, Row], Row] = lambda info, row: row, truncate: bool = True,
    find_by: FindBy = _own_key, visible: Callable[[TableInfo, Row], Row] = lambda info, row: row,
) -> HistoryTruth:
    """Every version of every row of the tables ``history_for`` names, as of ``consistent_ts`` (pure).

    ``key_for`` gives a table's overriding key columns, ``tracked_for`` its tracked columns (None: every
    change opens a version), ``project`` the image a protocol carries; ``truncate`` False ignores TRUNCATE;
    ``find_by`` says how the replica finds a change's row as the protocol carries it (:data:`FindBy`; default:
    every change carries its handle, else its row id): rows found by their whole image make every version an
    ``insert``, an unchanged image no new version, tracked columns moot; ``visible`` gives the part of an image
    such a row is told by (with column mapping, the columns the history holds: a change of a left-out column
    alone leaves the row's digest, so its version, as it is).
    A version closed after ``consistent_ts`` is current as of it; a DROP TABLE closes every current one.
    """
    tables: dict[TableKey, TableVersions] = {}
    dropped: list[TableVersions] = []
    infos: dict[TableKey, TableInfo] = {}
    created: dict[TableKey, int] = {}
    run: list[RowChange] = []

    def settle() -> None:
        if not run:
            return
        first = run[0]
        key = (first.schema, first.table)
        if history_for(*key):
            info = infos.get(key) or first.table_info
            assert info is not None
            table = tables.get(key)
            if table is None:
                name = f"{key[0]}.{key[1]}"
                origins = (f"{name}@{created[key]}",) if key in created else ()
                table = tables[key] = TableVersions(info=info, origins=(*origins, f"{name}@{first.commit_ts}"))
            _step(table, first.commit_ts, run, key_for(*key), tracked_for(*key), project, find_by, visible)
        run.clear()

    for event in history.events:
        if isinstance(event, RowChange):
            if event.commit_ts > consistent_ts:
                break
            if run and (run[0].commit_ts, run[0].schema, run[0].table) != (event.commit_ts, event.schema,
                                                                           event.table):
                settle()
            run.append(event)
        elif isinstance(event, DDLEvent):
            if event.commit_ts > consistent_ts:
                break
            settle()
            if event.table_info is not None:
                infos[(event.table_info.schema, event.table_info.table)] = event.table_info
                if event.ddl_type == ActionType.CREATE_TABLE:
                    created[(event.table_info.schema, event.table_info.table)] = event.commit_ts
            _ddl(tables, event, truncate=truncate, dropped=dropped)
    settle()
    return HistoryTruth(tables=tables, dropped=dropped)


def interval_errors(versions: Sequence[tuple[Hashable, int, int | None]]) -> str | None:
    """None if the (key, valid_from_ts, valid_to_ts) intervals never overlap per key, else the first overlap.

    A version ends before the next of its key starts (a gap is a time the key did not exist); only the last
    version of a key may be current, and it is never empty (``valid_to_ts > valid_from_ts``).
    """
    by_key: dict[Hashable, list[tuple[int, int | None]]] = {}
    for key, start, end in versions:
        by_key.setdefault(key, []).append((start, end))
    for key, intervals in by_key.items():
        intervals.sort(key=lambda interval: interval[0])
        for index, (start, end) in enumerate(intervals):
            if end is not None and end <= start:
                return f"key {key}: version [{start}, {end}) is empty"
            if index + 1 < len(intervals):
                following = intervals[index + 1][0]
                if end is None or end > following:
                    return f"key {key}: version [{start}, {end}) overlaps the one from {following}"
    return None
