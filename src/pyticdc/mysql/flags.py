"""TiCDC's column flags and row handle, derived from columns and indexes (reference §1.2).

The one derivation of ``initColumnsFlag`` and ``findHandleIndex``: the simulator, the Simple
decoder and every other place that builds a ``TableInfo`` from columns and indexes use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, TableInfo, TypeCode

__all__ = ["column_flags", "handle_index_columns", "table_info_with_flags"]

#: TiDB gives YEAR and BIT the Unsigned flag whatever the DDL says (reference §1.2).
_ALWAYS_UNSIGNED = frozenset({TypeCode.YEAR, TypeCode.BIT})


def handle_index_columns(
    columns: Sequence[ColumnInfo], indexes: Sequence[IndexInfo], pk_is_handle: bool = False,
) -> tuple[str, ...]:
    """``findHandleIndex``: the primary key, else the NOT NULL unique index with the fewest columns.

    Ties go to the first such index (decoded indexes carry no ids; TiDB orders them by id).
    """
    for index in indexes:
        if index.primary:
            return tuple(index.columns)
    known = {c.name: c for c in columns}
    best: IndexInfo | None = None
    for index in indexes:
        if not index.unique or not all(c in known and not known[c].nullable for c in index.columns):
            continue
        if best is None or len(index.columns) < len(best.columns):
            best = index
    return () if best is None else tuple(best.columns)


def column_flags(
    columns: Sequence[ColumnInfo], indexes: Sequence[IndexInfo], pk_is_handle: bool = False,
) -> list[int]:
    """``initColumnsFlag`` + ``findHandleIndex``: the TiCDC flag of each column, in column order."""
    position = {c.name: i for i, c in enumerate(columns)}
    flags: list[int] = []
    for column in columns:
        bits = ColumnFlag.BINARY if column.charset == "binary" else ColumnFlag(0)
        if column.nullable:
            bits |= ColumnFlag.NULLABLE
        if column.unsigned or column.type_code in _ALWAYS_UNSIGNED:
            bits |= ColumnFlag.UNSIGNED
        flags.append(int(bits))
    for index in indexes:
        for name in index.columns:
            i = position.get(name)
            if i is None:
                continue
            if index.primary:
                flags[i] |= ColumnFlag.PRIMARY_KEY
            elif index.unique:
                flags[i] |= ColumnFlag.UNIQUE_KEY
            if len(index.columns) > 1:
                flags[i] |= ColumnFlag.MULTIPLE_KEY
    for name in handle_index_columns(columns, indexes, pk_is_handle):
        if name in position:
            flags[position[name]] |= ColumnFlag.HANDLE_KEY
    return flags


def table_info_with_flags(
    schema: str, table: str, table_id: int, schema_version: int, columns: Sequence[ColumnInfo],
    indexes: Sequence[IndexInfo], pk_is_handle: bool,
) -> TableInfo:
    """A TableInfo whose columns carry the flags ``column_flags`` derives."""
    flags = column_flags(columns, indexes, pk_is_handle)
    return TableInfo(
        schema=schema, table=table, table_id=table_id, schema_version=schema_version, pk_is_handle=pk_is_handle,
        columns=tuple(msgspec.structs.replace(c, flags=f) for c, f in zip(columns, flags)), indexes=tuple(indexes),
    )
