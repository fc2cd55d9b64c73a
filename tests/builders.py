"""Shared test builders: columns, tables and row changes with TiDB's defaults (reference §1.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyticdc.model import ColumnFlag, ColumnInfo, Event, IndexInfo, Op, Row, RowChange, TableInfo

__all__ = ["PK", "TEXT", "TS", "column", "columns_of", "delete", "insert", "pre_columns_of", "row_of", "table",
           "update"]

#: A commit ts whose physical part is a plausible time (2023-11-30).
TS = 445_904_548_454_400_000
#: The flags of a single-column handle primary key.
PK = ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY
#: A text charset, as TiDB gives CHAR/VARCHAR/TEXT/ENUM/SET by default.
TEXT: Mapping[str, str] = {"charset": "utf8mb4", "collation": "utf8mb4_bin"}


def column(name: str, type_code: int, flags: int = 0, *, text: bool = False, raw: bool = False,
           **kw: Any) -> ColumnInfo:
    """A column: binary charset with the Binary flag unless ``text``; ``raw`` takes flags and fields as given.

    ``unsigned=True`` also sets the Unsigned flag, ``nullable`` (default True) the Nullable flag
    only when the flag is asked for explicitly: the flags stay the ones a test names.
    """
    if raw:
        return ColumnInfo(name=name, type_code=type_code, flags=int(flags), **kw)
    if text:
        kw = {**TEXT, **kw}
    else:
        flags |= ColumnFlag.BINARY
    if kw.get("unsigned"):
        flags |= ColumnFlag.UNSIGNED
    return ColumnInfo(name=name, type_code=type_code, flags=int(flags), **kw)


def table(*columns: ColumnInfo, schema: str = "test", name: str = "t", table_id: int = 1, **kw: Any) -> TableInfo:
    """A table whose primary index is its PrimaryKey-flagged columns (unless ``indexes`` is given)."""
    if "indexes" not in kw:
        keys = tuple(c.name for c in columns if c.flags & ColumnFlag.PRIMARY_KEY)
        kw["indexes"] = (IndexInfo(name="primary", columns=keys, primary=True, unique=True),) if keys else ()
    return TableInfo(schema=schema, table=name, table_id=table_id, columns=tuple(columns), **kw)


def insert(info: TableInfo, values: Mapping[str, Any], commit_ts: int = TS, **kw: Any) -> RowChange:
    """An INSERT of ``values`` into ``info``."""
    return RowChange(op=Op.INSERT, schema=info.schema, table=info.table, commit_ts=commit_ts, columns=Row(values),
                     table_info=info, **kw)


def update(info: TableInfo, post: Mapping[str, Any], pre: Mapping[str, Any], commit_ts: int = TS,
           **kw: Any) -> RowChange:
    """An UPDATE from ``pre`` to ``post``."""
    return RowChange(op=Op.UPDATE, schema=info.schema, table=info.table, commit_ts=commit_ts, columns=Row(post),
                     pre_columns=Row(pre), table_info=info, **kw)


def delete(info: TableInfo, pre: Mapping[str, Any], commit_ts: int = TS, **kw: Any) -> RowChange:
    """A DELETE of ``pre``."""
    return RowChange(op=Op.DELETE, schema=info.schema, table=info.table, commit_ts=commit_ts, pre_columns=Row(pre),
                     table_info=info, **kw)


# Decoders return the ``Event`` union and a row's images are optional: these narrow both for the type
# checker, and fail the test with the event itself when it is not what the test expected.
def row_of(event: Event) -> RowChange:
    """``event`` as a ``RowChange`` (the test fails if it is another kind of event)."""
    assert isinstance(event, RowChange), event
    return event


def columns_of(event: Event) -> Row:
    """The post image of a row change (the test fails if there is none)."""
    columns = row_of(event).columns
    assert columns is not None, event
    return columns


def pre_columns_of(event: Event) -> Row:
    """The pre image of a row change (the test fails if there is none)."""
    pre_columns = row_of(event).pre_columns
    assert pre_columns is not None, event
    return pre_columns
