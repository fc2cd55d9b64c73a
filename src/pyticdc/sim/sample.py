"""A small embedded change stream (one table of many column types) for demos and smoke tests."""

from __future__ import annotations

from typing import Any

from pyticdc.model import (
    ActionType,
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

__all__ = ["SAMPLE_TABLE", "sample_events"]

F = ColumnFlag


def _bin(**kwargs: Any) -> ColumnInfo:
    """A binary-charset column (numbers, dates: TiCDC's Binary flag, reference §1.2)."""
    return ColumnInfo(charset="binary", collation="binary", **kwargs)


def _txt(**kwargs: Any) -> ColumnInfo:
    """A utf8mb4 text column."""
    return ColumnInfo(charset="utf8mb4", collation="utf8mb4_bin", **kwargs)

SAMPLE_TABLE = TableInfo(
    schema="shop", table="orders", table_id=101, schema_version=449_000_000_000_000_000, pk_is_handle=True,
    columns=(
        _bin(name="id", type_code=8, flags=int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY), flen=20, decimal=0,
                   nullable=False, type_desc="bigint(20)"),
        _txt(name="customer", type_code=15, flags=int(F.NULLABLE), flen=64, decimal=0,
                   type_desc="varchar(64)"),
        _bin(name="amount", type_code=246, flags=int(F.BINARY | F.NULLABLE), flen=12, decimal=2,
                   type_desc="decimal(12,2)"),
        _bin(name="quantity", type_code=3, flags=int(F.BINARY | F.NULLABLE | F.UNSIGNED), flen=10, decimal=0,
                   unsigned=True, type_desc="int(10) unsigned"),
        _bin(name="rating", type_code=4, flags=int(F.BINARY | F.NULLABLE), flen=12, decimal=-1,
                   type_desc="float"),
        _bin(name="created_at", type_code=12, flags=int(F.BINARY | F.NULLABLE), flen=26, decimal=3,
                   type_desc="datetime(3)"),
        _txt(name="status", type_code=247, flags=int(F.NULLABLE), elems=("new", "paid", "shipped"),
                   type_desc="enum('new','paid','shipped')"),
        _txt(name="note", type_code=252, flags=int(F.NULLABLE), flen=65535, decimal=0, type_desc="text"),
        _bin(name="big", type_code=8, flags=int(F.BINARY | F.NULLABLE | F.UNSIGNED), flen=20, decimal=0,
                   unsigned=True, type_desc="bigint(20) unsigned"),
    ),
    indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),),
)


def _tso(ms: int, logical: int = 0) -> int:
    return (ms << 18) | logical


def sample_events() -> list[Event]:
    """A CREATE TABLE, inserts, an update, a delete and watermarks, in TiCDC order."""
    base = 1_763_780_000_000
    t = SAMPLE_TABLE

    def row(op: Op, ms: int, post: dict[str, object] | None, pre: dict[str, object] | None) -> RowChange:
        handle = (post or pre or {})["id"]
        return RowChange(op=op, schema=t.schema, table=t.table, commit_ts=_tso(ms), table_id=t.table_id,
                         physical_table_id=t.table_id, row_id=int(handle),  # type: ignore[call-overload]
                         columns=Row(post) if post else None, pre_columns=Row(pre) if pre else None, table_info=t)

    first = {"id": 1, "customer": b"Ada <ada@example.com>", "amount": "19.99", "quantity": 3,
             "rating": 4.5, "created_at": "2025-11-22 08:00:00.125", "status": 1, "note": "首单 & fast".encode(),
             "big": 2**64 - 1}
    second = {"id": 2, "customer": b"Grace", "amount": "1250.00", "quantity": 1, "rating": None,
              "created_at": "2025-11-22 08:05:00.000", "status": 2, "note": b"", "big": 0}
    paid = {**first, "status": 2, "amount": "17.99"}
    return [
        DDLEvent(query="CREATE TABLE `shop`.`orders` (...)", ddl_type=int(ActionType.CREATE_TABLE),
                 commit_ts=_tso(base), schema=t.schema, table=t.table, table_info=t),
        Watermark(resolved_ts=_tso(base)),
        row(Op.INSERT, base + 10, first, None),
        row(Op.INSERT, base + 20, second, None),
        Watermark(resolved_ts=_tso(base + 25)),
        row(Op.UPDATE, base + 30, paid, first),
        row(Op.DELETE, base + 40, None, second),
        Watermark(resolved_ts=_tso(base + 50)),
    ]
