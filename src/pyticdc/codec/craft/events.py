"""Craft wire events as model events: the TableInfo synthesized from a column group, the rows.

Craft carries only name, type code and flag per column (§3.2), so the decoder rebuilds the table
from them; the encoder's ``project`` goes through the same code.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from pyticdc.codec.craft.message import EVENT_DDL, EVENT_ROW, GROUP_NEW, Group, WireEvent
from pyticdc.codec.craft.values import ValueDecoder, value_decoder
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)

__all__ = ["TableCache", "TableEntry", "row_event", "synthesize_table", "wire_to_event"]


class TableEntry(NamedTuple):
    """The TableInfo the decoder reports for a group's columns, and their value decoders."""

    table_info: TableInfo
    decoders: list[ValueDecoder]


class TableCache:
    """Synthesized TableInfo and value decoders per (schema, table, partition, names/types/flags), bounded."""

    __slots__ = ("_cache",)
    _LIMIT: Final = 4096

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], TableEntry] = {}

    def get(self, schema: str, table: str, partition: int, group: Group) -> TableEntry:
        """The TableInfo the decoder reports for a group's columns, and their value decoders."""
        key = (schema, table, partition, tuple(group.names), tuple(group.types), tuple(group.flags))
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= self._LIMIT:
                self._cache.clear()
            found = self._cache[key] = TableEntry(
                synthesize_table(schema, table, partition, group),
                [value_decoder(t, f) for t, f in zip(group.types, group.flags)],
            )
        return found

    def decoders(self, group: Group) -> list[ValueDecoder]:
        """Value decoders for a group's columns (the image that did not name the table)."""
        key = (tuple(group.types), tuple(group.flags))
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= self._LIMIT:
                self._cache.clear()
            decoders = [value_decoder(t, f) for t, f in zip(group.types, group.flags)]
            found = self._cache[key] = TableEntry(_EMPTY_TABLE, decoders)
        return found.decoders


_EMPTY_TABLE: Final = TableInfo(schema="", table="")


def synthesize_table(schema: str, table: str, partition: int, group: Group) -> TableInfo:
    """The TableInfo of a group's columns: charset from the Binary flag (§1.2), PK from the PrimaryKey flags."""
    columns = tuple(
        ColumnInfo(
            name=name, type_code=type_code, flags=flag,
            charset="binary" if flag & ColumnFlag.BINARY else "utf8mb4",
            collation="binary" if flag & ColumnFlag.BINARY else "utf8mb4_bin",
            unsigned=bool(flag & ColumnFlag.UNSIGNED), nullable=bool(flag & ColumnFlag.NULLABLE),
        )
        for name, type_code, flag in zip(group.names, group.types, group.flags)
    )
    primary = tuple(c.name for c in columns if c.flags & ColumnFlag.PRIMARY_KEY)
    indexes = (IndexInfo(name="PRIMARY", columns=primary, primary=True, unique=True),) if primary else ()
    return TableInfo(
        schema=schema, table=table, table_id=0, is_partition=partition >= 0, columns=columns, indexes=indexes,
    )


def _group_row(group: Group, decoders: list[ValueDecoder]) -> Row:
    return Row(zip(group.names, [
        None if raw is None else decoder(raw, at) for decoder, raw, at in zip(decoders, group.values, group.offsets)
    ]))


def row_event(
    commit_ts: int, partition: int, schema: str | None, table: str | None, groups: list[Group], cache: TableCache,
) -> RowChange:
    """The RowChange of a row event's column groups (op from the groups present)."""
    new = old = None
    for group in groups:
        if group.group_type == GROUP_NEW:
            new = group
        else:
            old = group
    # Op from the groups present (§3.2: a DELETE has only an old group).
    op = Op.UPDATE if new is not None and old is not None else (Op.INSERT if old is None else Op.DELETE)
    schema_name = schema or ""
    table_name = table or ""
    # Like the Go decoder, the table comes from the old image when there is one.
    source = old if old is not None else new
    assert source is not None  # parse guarantees at least one group
    entry = cache.get(schema_name, table_name, partition, source)
    # A DELETE whose every column is a handle key carries (at most) the handle: the
    # delete-only-output-handle-key-columns shape, flagged without needing the encoder's options.
    handle_key_only = op is Op.DELETE and all(f & ColumnFlag.HANDLE_KEY for f in source.flags)
    return RowChange(
        op=op, schema=schema_name, table=table_name, commit_ts=commit_ts,
        columns=None if new is None else _group_row(new, entry.decoders if new is source else cache.decoders(new)),
        pre_columns=None if old is None else _group_row(old, entry.decoders),
        table_id=0, physical_table_id=partition if partition >= 0 else 0, row_id=0,
        table_info=entry.table_info, handle_key_only=handle_key_only,
    )


def wire_to_event(event: WireEvent, cache: TableCache) -> Event:
    """The model event of one wire event."""
    if event.event_type == EVENT_ROW:
        return row_event(event.commit_ts, event.partition, event.schema, event.table, event.groups, cache)
    if event.event_type == EVENT_DDL:
        return DDLEvent(
            query=event.query, ddl_type=event.ddl_type, commit_ts=event.commit_ts,
            schema=event.schema or "", table=event.table or "",
        )
    return Watermark(resolved_ts=event.commit_ts)

