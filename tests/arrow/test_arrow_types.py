"""Type mapping and typed projection (pure): every TiDB type of the simulator, through every protocol."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from pyticdc.arrow.rows import EventRowBuilder, decode_records, event_arrow_schema
from pyticdc.arrow.types import column_arrow_type, project_rows, project_table, table_arrow_schema
from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.errors import ConfigError
from pyticdc.model import ColumnFlag, ColumnInfo, KafkaRecord, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.sim.sample import SAMPLE_TABLE
from pyticdc.sim.workload import simulate

T = TypeCode
OPTIONS: dict[str, dict[str, str]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}


def col(name: str, code: int, **kwargs: Any) -> ColumnInfo:
    return ColumnInfo(name=name, type_code=code, **kwargs)


@pytest.mark.parametrize(("column", "expected"), [
    (col("a", T.TINY), pa.int8()), (col("a", T.TINY, unsigned=True), pa.int16()),
    (col("a", T.SHORT), pa.int16()), (col("a", T.SHORT, flags=int(ColumnFlag.UNSIGNED)), pa.int32()),
    (col("a", T.INT24), pa.int32()), (col("a", T.LONG), pa.int32()), (col("a", T.LONG, unsigned=True), pa.int64()),
    (col("a", T.LONGLONG), pa.int64()), (col("a", T.LONGLONG, unsigned=True), pa.decimal128(20, 0)),
    (col("a", T.YEAR), pa.int32()), (col("a", T.FLOAT), pa.float32()), (col("a", T.DOUBLE), pa.float64()),
    (col("a", T.NEWDECIMAL, flen=12, decimal=2), pa.decimal128(12, 2)),
    (col("a", T.NEWDECIMAL, flen=65, decimal=30), pa.string()), (col("a", T.NEWDECIMAL), pa.string()),
    (col("a", T.DATE), pa.date32()), (col("a", T.DATETIME), pa.timestamp("us")),
    (col("a", T.TIMESTAMP), pa.timestamp("us", tz="UTC")), (col("a", T.TIME), pa.int64()),
    (col("a", T.VARCHAR, charset="utf8mb4"), pa.string()), (col("a", T.VARCHAR), pa.binary()),
    (col("a", T.BLOB, charset="utf8mb4"), pa.string()), (col("a", T.BLOB), pa.binary()),
    (col("a", T.STRING, charset="binary"), pa.binary()), (col("a", T.BIT, flen=1), pa.binary()),
    (col("a", T.ENUM), pa.string()), (col("a", T.SET), pa.string()), (col("a", T.JSON), pa.string()),
    (col("a", T.TIDB_VECTOR), pa.list_(pa.field("element", pa.float32()))), (col("a", T.GEOMETRY), pa.binary()),
])
def test_type_mapping(column: ColumnInfo, expected: pa.DataType) -> None:
    assert column_arrow_type(column) == expected


def _rows_batch(rows: list[RowChange]) -> pa.RecordBatch:
    builder = EventRowBuilder()
    for offset, row in enumerate(rows):
        builder.add_event(KafkaRecord(topic="t", partition=0, offset=offset), 0, row)
    return builder.to_batch()


def _f32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _expected(value: Any, column: ColumnInfo, zone: str) -> Any:
    """An independent reading of a model value as the typed projection should give it."""
    if value is None:
        return None
    code, kind = column.type_code, column_arrow_type(column)
    if code == T.FLOAT:
        return _f32(value)
    if pa.types.is_decimal(kind):
        return Decimal(str(value))
    if code in (T.DATE, T.NEWDATE):
        return None if value.startswith("0000") else dt.date.fromisoformat(value)
    if code in (T.DATETIME, T.TIMESTAMP):
        if value.startswith("0000"):
            return None
        head, _, fraction = value.partition(".")
        local = dt.datetime.fromisoformat(head + "." + (fraction or "0").ljust(6, "0"))
        if code == T.DATETIME:
            return local
        return local.replace(tzinfo=ZoneInfo(zone)).astimezone(dt.timezone.utc)
    if code == T.TIME:
        sign = -1 if value.startswith("-") else 1
        hours, minutes, seconds = value.lstrip("-").split(":")
        whole, _, fraction = seconds.partition(".")
        delta = dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=int(whole),
                             microseconds=int(fraction.ljust(6, "0")[:6]) if fraction else 0)
        return sign * (delta // dt.timedelta(microseconds=1))  # signed microseconds
    if code == T.BIT:
        return int(value).to_bytes((column.flen + 7) // 8 if column.flen > 0 else 8, "big")
    if code == T.ENUM:
        return (column.elems[value - 1] if value else "") if column.elems else str(value)
    if code == T.SET:
        return ",".join(e for i, e in enumerate(column.elems) if value >> i & 1) if column.elems else str(value)
    if code == T.TIDB_VECTOR:
        return [_f32(float(v)) for v in value.strip("[]").split(",") if v]
    if isinstance(value, bytes):
        return value if pa.types.is_binary(kind) else value.decode("utf-8", "replace")
    return value


def _check(rows: list[RowChange], infos: list[TableInfo], zone: str = "UTC") -> int:
    checked = 0
    for row, info in zip(rows, infos):
        [typed] = project_rows(_rows_batch([row]), info, time_zone=zone).to_pylist()
        image = row.columns if row.columns is not None else row.pre_columns
        assert image is not None
        assert (typed["_op"], typed["_commit_ts"]) == (row.op.value, Decimal(row.commit_ts))
        for column in info.columns:
            expected = _expected(image.get(column.name), column, zone)
            actual = typed[column.name]
            assert actual == expected, (info.table, column.name, image.get(column.name))
            checked += expected is not None
    return checked


def test_every_simulated_type_projects_exactly() -> None:
    history = simulate(11)
    rows = [e for e in history.events if isinstance(e, RowChange)]
    assert _check(rows, [r.table_info for r in rows if r.table_info is not None]) > 500


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_decoded_rows_type_back_to_the_written_values(protocol: str) -> None:
    history = simulate(7)
    encoder = make_encoder(protocol, OPTIONS.get(protocol, {}))
    records = [KafkaRecord(topic="t", partition=0, offset=i, key=m.key, value=m.value)
               for i, m in enumerate(encoder.encode(history.events))]
    table = pa.Table.from_batches(list(decode_records(records, protocol, OPTIONS.get(protocol, {}))),
                                  schema=event_arrow_schema())
    decoded = table.filter(pa.compute.equal(table["kind"], "row"))
    written = [p for e in history.events if isinstance(e, RowChange) and (p := encoder.project(e)) is not None]
    assert decoded.num_rows == len(written)
    checked = 0
    for index, event in enumerate(written):
        assert isinstance(event, RowChange)
        original = event.table_info
        assert original is not None
        [typed] = project_rows(decoded.slice(index, 1).to_batches()[0], original).to_pylist()
        [truth] = project_rows(_rows_batch([event]), original).to_pylist()
        truth.update({k: typed[k] for k in ("_topic", "_partition", "_offset", "_event_index")})
        assert typed == truth, (protocol, index)
        checked += 1
    assert checked == len(written) > 100


def _one(code: int, value: Any, **kwargs: Any) -> Any:
    info = TableInfo(schema="s", table="t", columns=(col("c", code, **kwargs),))
    row = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=2**64 - 1, columns=Row({"c": value}),
                    table_info=info)
    [typed] = project_rows(_rows_batch([row]), info).to_pylist()
    assert typed["_commit_ts"] == Decimal(2**64 - 1)
    return typed["c"]


def test_edge_values() -> None:
    assert _one(T.DATE, "0000-00-00") is None
    assert _one(T.DATETIME, "0000-00-00 00:00:00") is None
    assert _one(T.DATETIME, "2025-01-02 03:04:05.5") == dt.datetime(2025, 1, 2, 3, 4, 5, 500000)
    assert _one(T.TIME, "-838:59:59.000001") == -3_020_399_000_001
    assert _one(T.ENUM, 0, elems=("a", "b")) == "" and _one(T.ENUM, 2, elems=("a", "b")) == "b"
    assert _one(T.ENUM, 2) == "2"  # members unknown: the index as text
    assert _one(T.SET, 5, elems=("a", "b", "c")) == "a,c" and _one(T.SET, 2**64 - 1) == str(2**64 - 1)
    assert _one(T.BIT, 5, flen=10) == b"\x00\x05" and _one(T.BIT, 2**64 - 1) == b"\xff" * 8
    assert _one(T.LONGLONG, 2**64 - 1, unsigned=True) == Decimal(2**64 - 1)
    assert _one(T.NEWDECIMAL, "-123.40", flen=5, decimal=2) == Decimal("-123.40")
    assert _one(T.NEWDECIMAL, "1" * 50 + ".5") == "1" * 50 + ".5"  # precision unknown: exact text
    assert _one(T.VARCHAR, b"\xff\xfeok", charset="utf8mb4") == "\ufffd\ufffdok"  # invalid UTF-8 in text
    assert _one(T.VARCHAR, b"\xff\xfeok") == b"\xff\xfeok"
    assert _one(T.TIDB_VECTOR, "[1,2.5,-3e-7]") == [1.0, 2.5, _f32(-3e-7)]
    with pytest.raises(ValueError, match=r"s\.t\.c.*decimal\(4,2\)"):
        _one(T.NEWDECIMAL, "123.45", flen=4, decimal=2)
    with pytest.raises(ValueError, match=r"s\.t\.c"):
        _one(T.LONG, 2**40)


def test_timestamp_is_read_in_the_changefeed_zone() -> None:
    info = TableInfo(schema="s", table="t", columns=(col("ts", T.TIMESTAMP),))
    row = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"ts": "2025-11-22 08:00:00"}))
    [typed] = project_rows(_rows_batch([row]), info, time_zone="Asia/Shanghai").to_pylist()
    assert typed["ts"] == dt.datetime(2025, 11, 22, 0, 0, tzinfo=dt.timezone.utc)


def test_images_and_metadata() -> None:
    update = RowChange(op=Op.UPDATE, schema="shop", table="orders", commit_ts=7,
                       columns=Row({"id": 1, "amount": "2.00"}), pre_columns=Row({"id": 1, "amount": "1.00"}))
    delete = RowChange(op=Op.DELETE, schema="shop", table="orders", commit_ts=8, pre_columns=Row({"id": 2}))
    batch = _rows_batch([update, delete])
    current = project_rows(batch, SAMPLE_TABLE).to_pylist()
    assert [(r["_op"], r["id"], r["amount"]) for r in current] == [("update", 1, Decimal("2.00")),
                                                                    ("delete", 2, None)]
    pre = project_rows(batch, SAMPLE_TABLE, image="pre").to_pylist()
    assert [r["amount"] for r in pre] == [Decimal("1.00"), None]
    post = project_rows(batch, SAMPLE_TABLE, image="post").to_pylist()
    assert [r["id"] for r in post] == [1, None]
    assert project_table([batch, batch], SAMPLE_TABLE).num_rows == 4
    with pytest.raises(ConfigError, match="image"):
        project_rows(batch, SAMPLE_TABLE, image="after")
    clash = TableInfo(schema="s", table="t", columns=(col("_op", T.LONG),))
    with pytest.raises(ConfigError, match="clash"):
        table_arrow_schema(clash)


def _strptime_datetime(text: str) -> dt.datetime | None:
    # The parser before the fast path: the reference behaviour.
    head, _, fraction = text.partition(".")
    try:
        value = dt.datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    if fraction:
        value = value.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    return value


@pytest.mark.parametrize(("text", "expected"), [
    ("2025-01-02 03:04:05", dt.datetime(2025, 1, 2, 3, 4, 5)),
    ("2025-01-02 03:04:05.1", dt.datetime(2025, 1, 2, 3, 4, 5, 100000)),
    ("2025-01-02 03:04:05.12", dt.datetime(2025, 1, 2, 3, 4, 5, 120000)),
    ("2025-01-02 03:04:05.123", dt.datetime(2025, 1, 2, 3, 4, 5, 123000)),
    ("2025-01-02 03:04:05.1234", dt.datetime(2025, 1, 2, 3, 4, 5, 123400)),
    ("2025-01-02 03:04:05.12345", dt.datetime(2025, 1, 2, 3, 4, 5, 123450)),
    ("2025-01-02 03:04:05.123456", dt.datetime(2025, 1, 2, 3, 4, 5, 123456)),
    ("2025-01-02 03:04:05.000000", dt.datetime(2025, 1, 2, 3, 4, 5)),
    ("2025-01-02 03:04:05.1234567", dt.datetime(2025, 1, 2, 3, 4, 5, 123456)),  # truncated, not rounded
    ("0001-01-01 00:00:00", dt.datetime(1, 1, 1)),
    ("9999-12-31 23:59:59.999999", dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    ("2024-02-29 12:00:00", dt.datetime(2024, 2, 29, 12)),
    # Zero and invalid datetimes MySQL allows: NULL.
    ("0000-00-00 00:00:00", None), ("0000-00-00 00:00:00.000000", None), ("2025-00-10 00:00:00", None),
    ("2025-01-00 00:00:00", None), ("2025-02-30 00:00:00", None), ("2023-02-29 00:00:00", None),
    ("2025-13-01 00:00:00", None), ("2025-01-01 24:00:00", None), ("2025-01-01 23:60:00", None),
    ("2025-01-01 23:59:60", None), ("", None), ("not a date", None), ("2025-01-01T00:00:00", None),
    ("+025-01-01 00:00:00", None), ("2025-01-01 0 :00:00", None), ("2025-01-01 00:00:0_", None),
    # Looser forms strptime accepts keep being accepted.
    ("2025-1-2 3:4:5", dt.datetime(2025, 1, 2, 3, 4, 5)),
    ("2025-01-02  03:04:05.5", dt.datetime(2025, 1, 2, 3, 4, 5, 500000)),
    ("２０２５-01-02 03:04:05", dt.datetime(2025, 1, 2, 3, 4, 5)),
])
def test_parse_datetime(text: str, expected: dt.datetime | None) -> None:
    from pyticdc.arrow.types import _parse_datetime

    assert _parse_datetime(text) == expected
    assert _strptime_datetime(text) == expected


@pytest.mark.parametrize("text", ["2025-01-02 03:04:05.abc", "2025-01-02 03:04:05.1x", "2025-1-2 3:4:5.-1"])
def test_parse_datetime_bad_fraction_raises(text: str) -> None:
    from pyticdc.arrow.types import _parse_datetime

    with pytest.raises(ValueError):
        _strptime_datetime(text)
    with pytest.raises(ValueError):
        _parse_datetime(text)


def _typed_table() -> TableInfo:
    return TableInfo(schema="s", table="t", columns=(
        col("id", T.LONGLONG, flags=int(ColumnFlag.PRIMARY_KEY)), col("d", T.DATE),
        *(col(f"dt{fsp}", T.DATETIME, decimal=fsp) for fsp in range(7)),
        col("ts", T.TIMESTAMP, decimal=3), col("tm", T.TIME, decimal=6),
        col("txt", T.VARCHAR, charset="utf8mb4"), col("bin", T.VARCHAR), col("geo", T.GEOMETRY, charset="utf8mb4"),
        col("n", T.NEWDECIMAL, flen=10, decimal=2), col("f", T.DOUBLE), col("y", T.YEAR),
    ))


def test_typed_arrays_match_the_event_batch_projection() -> None:
    from pyticdc.arrow.types import typed_arrays
    from pyticdc.replica.changes import net_change
    from pyticdc.replica.projection import project_changes

    info = _typed_table()
    images: list[Row] = [
        Row({"id": 1, "d": "2025-01-02", **{f"dt{f}": "2025-01-02 03:04:05" + ("." + "123456"[:f] if f else "")
                                           for f in range(7)},
             "ts": "2025-03-04 05:06:07.891", "tm": "-838:59:59.000000", "txt": "héllo", "bin": b"\xff\x00raw",
             "geo": b"\x01\x02", "n": "12.50", "f": "1.5", "y": "2025"}),
        Row({"id": 2, "d": "0000-00-00", **{f"dt{f}": "0000-00-00 00:00:00" for f in range(7)},
             "ts": "0000-00-00 00:00:00", "tm": "838:59:59", "txt": b"\xffnot utf8", "bin": b"",
             "geo": None, "n": None, "f": None, "y": None}),
        Row({"id": 3, "d": None, **{f"dt{f}": None for f in range(7)}, "ts": None, "tm": "-00:00:01.5",
             "txt": None, "bin": None, "geo": None, "n": "-0.01", "f": "-0", "y": "0"}),
    ]
    changes = [RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=100 + i, columns=image, table_info=info)
               for i, image in enumerate(images)]
    builder = EventRowBuilder()
    for index, change in enumerate(changes):
        builder.add_event(KafkaRecord(topic="t", partition=0, offset=index), 0, change)
    reference = project_rows(builder.to_batch(), info, time_zone="Asia/Shanghai").to_pylist()
    assert reference[0]["dt3"] == dt.datetime(2025, 1, 2, 3, 4, 5, 123000)
    assert reference[0]["ts"] == dt.datetime(2025, 3, 3, 21, 6, 7, 891000, tzinfo=dt.timezone.utc)
    assert reference[0]["tm"] == -((838 * 60 + 59) * 60 + 59) * 10**6
    assert reference[1]["tm"] == 3_020_399_000_000
    assert reference[2]["tm"] == -1_500_000
    assert reference[0]["bin"] == b"\xff\x00raw" and reference[0]["geo"] == b"\x01\x02"
    assert reference[1]["txt"] == "\ufffdnot utf8"
    assert all(reference[1][f"dt{f}"] is None for f in range(7)) and reference[1]["d"] is None
    assert reference[2]["d"] is None and reference[2]["n"] == Decimal("-0.01")
    # The direct path (no Arrow map round trip) gives the very same values.
    texts = [{"id": str(i)} for i in range(3)]
    direct = typed_arrays(texts, [frozenset()] * 3, info)
    assert direct["id"].to_pylist() == [0, 1, 2] and direct["dt6"].null_count == 3
    merged = project_changes(net_change(changes), info, rowid=False, time_zone="Asia/Shanghai").to_pylist()
    by_id = {row["id"]: row for row in merged}
    for row in reference:
        got = by_id[row["id"]]
        assert got["_commit_ts"] == row["_commit_ts"]
        for column in info.columns:
            assert got[column.name] == row[column.name], column.name


def test_typed_arrays_report_the_first_bad_value_in_row_order() -> None:
    from pyticdc.arrow.types import typed_arrays

    info = TableInfo(schema="s", table="t", columns=(col("a", T.LONG), col("b", T.LONG)))
    # Column by column, 'a' would fail first on row 2; row by row, 'b' of row 1 is the first bad value.
    with pytest.raises(ValueError, match=r"s\.t\.b: cannot read 'x'"):
        typed_arrays([{"a": "1", "b": "x"}, {"a": "y", "b": "2"}], [frozenset(), frozenset()], info)
    with pytest.raises(ValueError, match=r"s\.t\.a: values do not fit int32"):
        typed_arrays([{"a": str(2**40)}], [frozenset()], info)


def test_bigint_unsigned_reads_back_its_int64_twin() -> None:
    from pyticdc.arrow.types import text_converter, typed_arrays

    # Debezium without enable-tidb-extension writes BIGINT UNSIGNED as int64(v): 2**64-1 is -1, 2**63 is -2**63.
    info = TableInfo(schema="s", table="t", columns=(
        col("u", T.LONGLONG, unsigned=True), col("s", T.LONGLONG), col("i", T.LONG, unsigned=True)))
    twins = [str(-1), str(-(2**63)), str(2**63 - 1), "0"]
    images = [{"u": text, "s": text} for text in twins]
    typed = typed_arrays(images, [frozenset()] * 4, info)
    assert typed["u"].to_pylist() == [Decimal(2**64 - 1), Decimal(2**63), Decimal(2**63 - 1), Decimal(0)]
    assert typed["s"].to_pylist() == [-1, -(2**63), 2**63 - 1, 0]  # signed: as is
    marked = typed_arrays(images, [frozenset({"s"})] * 4, info)  # the per-value path converts the same
    assert marked["u"].to_pylist() == typed["u"].to_pylist()
    assert text_converter(info.columns[0])(str(2**64 - 1), False) == 2**64 - 1
    for outside in (-(2**63) - 1, 2**64):  # neither a uint64 nor an int64 twin: the schema does not fit the rows
        with pytest.raises(ValueError, match=r"s\.t\.u: cannot read"):
            typed_arrays([{"u": str(outside)}], [frozenset()], info)
