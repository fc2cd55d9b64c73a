"""The Debezium encoder's generated image writers equal its reference writer, byte for byte.

For every option set the fast path takes, rows of generated tables — valid, and with awkward values
swapped in (escapes where orjson and json-iterator differ, invalid UTF-8, lone surrogates, floats
off the plain range, dates and times off the canonical form or past a month's 28th day, values of
other types) and with a column dropped or added — are encoded by an encoder with the generated
writers and by one without: both give the same messages or the same EncodeError.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec.base import Message
from pyticdc.codec.debezium import encoder as debezium_encoder
from pyticdc.codec.debezium.fastwriter import ImageWriter
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, Row, RowChange, TableInfo, TypeCode
from strategies import awkward_image, row_changes

_AWKWARD_VALUES: list[Any] = [
    b"<a&b>", b"\x08\x0c", b"\\b", b"\\\x08", "\u2028".encode(), "é订单😀".encode(), b"\xff\xfe", b"\x00\x1f",
    "text", "\udc80", "\\f\b", '{"a": "\\b"}', 1.5, -0.0, 0.0, 0.1, 1e-5, 9.99e-6, 1e-7, 1e15, 1e16, 1e22, 3.4e38,
    1e39, float("nan"), float("-inf"), 16777216.0, 0.000123, 123456.7, 1e6, 2.0, -524.0707458162173,
    2**64 - 1, 2**64, 2**63, 2**63 - 1, -(2**63) - 1, -1, 0, 256, 31, 32, True, None, b"", bytearray(b"ab"),
    "18446744073709551615", "x1", "12.50", "-0.000001", "00012", "1" * 400, "0.00", "1e5", " 1",
    "2024-02-29", "2023-02-29", "2025-12-31", "0000-00-00", "0099-01-01", "1970-01-01", "9999-12-31", "2025-1-01",
    "2025-06-30 23:59:59", "2025-06-28 24:00:00", "2025-06-28 23:60:00", "1970-01-01 00:00:00",
    "1970-12-31 23:59:59.5", "1971-01-01 00:00:00", "0001-01-01 00:00:00", "2025-06-01 10:00:00.123",
    "2025-06-01 10:00:00.123456", "2025-06-01T10:00:00", "CURRENT_TIMESTAMP", "12:34:56", "٢٠٢٥-01-01",
]
_AWKWARD = st.sampled_from(_AWKWARD_VALUES)


class _Reference(debezium_encoder.Encoder):
    def _writer(self, infos: tuple[ColumnInfo, ...]) -> ImageWriter | None:
        return None


OPTIONS: list[dict[str, Any]] = [
    {}, {"enable-tidb-extension": True}, {"debezium-disable-schema": True}, {"debezium-output-old-value": False},
    {"time-zone": "Asia/Shanghai"}, {"large-message-handle-compression": "lz4"}, {"cluster-id": "c<&>\b"},
]


def _encoded(encoder: debezium_encoder.Encoder, events: list[Event]) -> list[Message] | str:
    try:
        return encoder.encode(events)
    except EncodeError as exc:
        return f"EncodeError: {exc}"


@pytest.mark.parametrize("options", OPTIONS, ids=[str(i) for i in range(len(OPTIONS))])
@settings(max_examples=80, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_debezium_writers_equal_reference(options: dict[str, Any], rows: list[RowChange],
                                          data: st.DataObject) -> None:
    events: list[Event] = []
    for row in rows:
        if data.draw(st.booleans()):
            row = RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                            columns=awkward_image(row.columns, data, _AWKWARD, one_in=4),
                            pre_columns=awkward_image(row.pre_columns, data, _AWKWARD, one_in=4),
                            table_id=row.table_id, table_info=row.table_info)
        events.append(row)
    fast = debezium_encoder.Encoder(options, clock=lambda: 1_700_000_000_123)
    reference = _Reference(options, clock=lambda: 1_700_000_000_123)
    assert _encoded(fast, events) == _encoded(reference, events)
    for event in events:  # one row at a time too: a row the writer takes must not change later rows
        assert _encoded(fast, [event]) == _encoded(reference, [event])


@settings(max_examples=80, deadline=None)
@given(rows=row_changes())
def test_debezium_writers_take_valid_rows(rows: list[RowChange]) -> None:
    # Generated rows of every column type, valid values: the generated writers write them all.
    encoder = debezium_encoder.Encoder({}, clock=lambda: 7)
    for row in rows:
        assert row.table_info is not None
        plan = encoder._plan(row.table_info)
        if len({c.name for c in row.table_info.columns if not c.virtual}) < len(plan.payload):
            continue  # a repeated column name: the reference writer alone
        assert plan.fixed is not None and plan.payload_writer is not None
        assert encoder._fast_row(row, plan, plan.fixed) is not None


_ODD_NAMES = ["{image}", "100%", "%d%s", "a\"b", "back\\slash", "<&>", "名前", "\u2028", "tab\there", "\x08", "v",
              "get", "image", "C", "out", "v0"]


@pytest.mark.parametrize("schema", ["test", "d%b", "<db>"])
def test_debezium_writers_take_odd_names(schema: str) -> None:
    # Names enter generated code as literals only: none is code, a format or a clash with a local.
    columns = tuple(ColumnInfo(name=name, type_code=TypeCode.VARCHAR, flags=int(ColumnFlag.BINARY), flen=16)
                    for name in _ODD_NAMES)
    key = ColumnInfo(name="id", type_code=TypeCode.LONGLONG,
                     flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY))
    info = TableInfo(schema=schema, table="t%s", table_id=9, columns=(key, *columns), pk_is_handle=True)
    post = Row({"id": 1, **{name: f"{name}%s".encode() for name in _ODD_NAMES}})
    pre = Row({"id": 1, **{name: b"<\x00\x08>" for name in _ODD_NAMES}})
    events: list[Event] = [
        RowChange(op=Op.INSERT, schema=schema, table="t%s", commit_ts=1 << 40, columns=post, table_info=info),
        RowChange(op=Op.UPDATE, schema=schema, table="t%s", commit_ts=1 << 41, columns=post, pre_columns=pre,
                  table_info=info),
        RowChange(op=Op.DELETE, schema=schema, table="t%s", commit_ts=1 << 42, pre_columns=pre, table_info=info),
    ]
    encoder = debezium_encoder.Encoder({}, clock=lambda: 5)
    assert _encoded(encoder, events) == _encoded(_Reference({}, clock=lambda: 5), events)
    plan = encoder._plan(info)
    assert plan.fixed is not None
    assert encoder._fast_row(events[1], plan, plan.fixed) is not None  # type: ignore[arg-type]


def _column(name: str, code: int, *, flags: int = 0, **kw: Any) -> ColumnInfo:
    return ColumnInfo(name=name, type_code=code, flags=int(flags | ColumnFlag.NULLABLE), **kw)


_EVERY_KIND = (
    _column("id", TypeCode.LONG, flags=ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY),
    _column("tiny", TypeCode.TINY), _column("ubig", TypeCode.LONGLONG, flags=ColumnFlag.UNSIGNED),
    _column("big", TypeCode.LONGLONG), _column("uint", TypeCode.LONG, flags=ColumnFlag.UNSIGNED),
    _column("year", TypeCode.YEAR), _column("f", TypeCode.FLOAT, decimal=-1), _column("d", TypeCode.DOUBLE),
    _column("dec", TypeCode.NEWDECIMAL, flen=20, decimal=6), _column("day", TypeCode.DATE),
    _column("dt0", TypeCode.DATETIME, decimal=0), _column("dt3", TypeCode.DATETIME, decimal=3),
    _column("dt6", TypeCode.DATETIME, decimal=6), _column("ts0", TypeCode.TIMESTAMP, decimal=0),
    _column("ts6", TypeCode.TIMESTAMP, decimal=6), _column("tm", TypeCode.TIME, decimal=2),
    _column("bit1", TypeCode.BIT, flen=1), _column("bit8", TypeCode.BIT, flen=8),
    _column("bit20", TypeCode.BIT, flen=20), _column("text", TypeCode.VARCHAR, charset="utf8mb4"),
    _column("blob", TypeCode.BLOB, flags=ColumnFlag.BINARY),
    _column("state", TypeCode.ENUM, elems=("a", "b", "c")), _column("tags", TypeCode.SET, elems=("x", "y", "z")),
    _column("json", TypeCode.JSON),
    _column("dflt", TypeCode.LONG, default="42"), _column("dday", TypeCode.DATE, default="2020-02-02"),
)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai"])
def test_debezium_writers_equal_reference_on_every_awkward_value(zone: str) -> None:
    # Each awkward value in each column kind, deterministically (the generated tests draw only some).
    info = TableInfo(schema="s", table="t", table_id=3, columns=_EVERY_KIND, pk_is_handle=True)
    options = {"time-zone": zone}
    fast = debezium_encoder.Encoder(options, clock=lambda: 9)
    reference = _Reference(options, clock=lambda: 9)
    taken = 0
    for column in _EVERY_KIND[1:]:
        for value in _AWKWARD_VALUES:
            row = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1 << 30, table_info=info,
                            columns=Row({"id": 1, column.name: value}))
            assert _encoded(fast, [row]) == _encoded(reference, [row]), (column.name, value)
            plan = fast._plan(info)
            assert plan.fixed is not None
            try:
                taken += fast._fast_row(row, plan, plan.fixed) is not None
            except EncodeError:
                pass
    assert taken > 100  # most go through the generated writer (the rest decline to the reference)
