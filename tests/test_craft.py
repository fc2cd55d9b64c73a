"""Craft codec (ticdc-reference.md §3): primitives, layout, batching, every type, hostile bytes."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import craft
from pyticdc.codec.craft import CraftReader, CraftWriter, uvarint_bytes, varint_bytes
from pyticdc.codec.jsontext import go_string
from pyticdc.errors import ConfigError, DecodeError, EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, DDLEvent, Event, Op, Row, RowChange, TableInfo, Value, Watermark
from pyticdc.vectors import check_file
from strategies import row_changes

F = ColumnFlag
UINT64_MAX = 2**64 - 1
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT64 = st.integers(0, UINT64_MAX)

# The three docs-cn hexdumps (pingcap/docs-cn ticdc/ticdc-craft.md, decoded in reference §3.4).
DOCS_ROW = bytes.fromhex(
    "018180f08181b5def10501010002010804020202020202020ffe010a070c0403060000000000000000100e142626100401766172"
    "6368617231737472696e6731323032312f30312f3032323032312f30312f30322030303a30303a3030323032312f30312f303220"
    "30303a30303a30300000000000000040a01f020804020202020202020ffe010a070c0403060000000000000000100e1426261004"
    "017661726368617230737472696e6730323032312f30312f3031323032312f30312f30312030303a30303a3030323032312f3031"
    "2f30312030303a30303a3030000000000000f03fd00f0a01010706040908050404616276617263686172737472696e6764617465"
    "74696d657374616d706461746574696d65666c6f61746c6f6e676e756c6c021a5e01b00302d801000a"
)
DOCS_DDL = bytes.fromhex("018180c0dcf5b5def10502010002010e637265617465207461626c6520610201016162021a0f012005")
DOCS_RESOLVED = bytes.fromhex("018180e0bb9bb6def10503010101021a19010005")


def _docs_table() -> TableInfo:
    """§3.4 (a): table a.b with eight columns, all flags 0."""
    spec = [("varchar", 15), ("string", 254), ("date", 10), ("timestamp", 7), ("datetime", 12), ("float", 4),
            ("long", 3), ("null", 6)]
    return TableInfo(schema="a", table="b", columns=tuple(ColumnInfo(name=n, type_code=t, flags=0) for n, t in spec))


def _docs_row(n: int) -> Row:
    return Row({"varchar": b"varchar%d" % n, "string": b"string%d" % n, "date": f"2021/01/0{n + 1}",
                "timestamp": f"2021/01/0{n + 1} 00:00:00", "datetime": f"2021/01/0{n + 1} 00:00:00",
                "float": float(n + 1), "long": 1000 * (n + 1), "null": None})


def _docs_update() -> RowChange:
    return RowChange(op=Op.UPDATE, schema="a", table="b", commit_ts=424316552636792833, columns=_docs_row(1),
                     pre_columns=_docs_row(0), table_info=_docs_table())


# --------------------------------------------------------------------------- vectors and docs
def test_golden_vectors(vectors_dir: Path) -> None:
    results = check_file(vectors_dir / "craft.json")
    assert results
    assert [f"{r.name}: {r.reason}" for r in results if not r.passed] == []


def test_docs_examples_encode_from_the_model() -> None:
    assert len(DOCS_ROW) == 301  # §3.4 (a) "301 bytes"
    [row] = craft.encode([_docs_update()], max_batch_size=64)
    assert row.key is None and row.value == DOCS_ROW
    [ddl] = craft.encode([DDLEvent(query="create table a", ddl_type=1, commit_ts=424316583965360129,
                                   schema="a", table="b")])
    assert ddl.key is None and ddl.value == DOCS_DDL and len(DOCS_DDL) == 41
    [resolved] = craft.encode([Watermark(resolved_ts=424316594097225729)])
    assert resolved.value == DOCS_RESOLVED and len(DOCS_RESOLVED) == 20


def test_docs_examples_decode_to_the_model() -> None:
    [row] = craft.decode(DOCS_ROW)
    assert isinstance(row, RowChange)
    assert (row.op, row.schema, row.table, row.commit_ts) == (Op.UPDATE, "a", "b", 424316552636792833)
    assert row.columns == _docs_row(1) and row.pre_columns == _docs_row(0)
    assert list(row.columns) == ["varchar", "string", "date", "timestamp", "datetime", "float", "long", "null"]
    assert row.table_info is not None
    assert [(c.name, c.type_code, c.flags) for c in row.table_info.columns] == [
        (c.name, c.type_code, 0) for c in _docs_table().columns]
    assert row.physical_table_id == 0 and not row.table_info.is_partition  # partition -1
    assert craft.decode(DOCS_DDL) == [DDLEvent(query="create table a", ddl_type=1, commit_ts=424316583965360129,
                                               schema="a", table="b")]
    assert craft.decode(DOCS_RESOLVED) == [Watermark(resolved_ts=424316594097225729)]


def test_docs_row_explain_matches_reference_walkthrough() -> None:
    wire = craft.explain(DOCS_ROW)
    # §3.4 (a): tables [[13, 60]], [[216]], [[108, 108]]; ten terms in first-use order.
    assert wire["size_tables"] == [[13, 60], [216], [108, 108]]
    assert wire["term_dictionary"] == ["a", "b", "varchar", "string", "date", "timestamp", "datetime", "float",
                                       "long", "null"]
    [event] = wire["events"]
    assert [g["group_type"] for g in event["column_groups"]] == ["new", "old"]
    long_new = event["column_groups"][0]["columns"][6]
    assert (long_new["raw_hex"], long_new["value"]) == ("a01f", 2000)


# --------------------------------------------------------------------------- primitives
@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (150, "9601"), (300, "ac02"),  # protobuf docs
    (424316552636792833, "8180f08181b5def105"),  # §3.4 (a) commit ts
    (UINT64_MAX, "ffffffffffffffffff01"),
])
def test_uvarint_known_encodings(value: int, hex_: str) -> None:
    assert uvarint_bytes(value).hex() == hex_
    assert CraftReader(bytes.fromhex(hex_)).uvarint() == value


@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (2147483647, "feffffff0f"), (-2147483648, "ffffffff0f"),
    (2000, "a01f"), (1000, "d00f"), (-(2**63), "ffffffffffffffffff01"), (2**63 - 1, "feffffffffffffffff01"),
])
def test_zigzag_varint_known_encodings(value: int, hex_: str) -> None:
    # Zigzag table from the protobuf encoding docs; 2000/1000 from §3.4 (a).
    assert varint_bytes(value).hex() == hex_
    assert CraftReader(bytes.fromhex(hex_)).varint() == value


def test_reversed_uvarint_is_the_uvarint_backwards() -> None:
    out = CraftWriter()
    out.raw(b"\x77")
    out.reversed_uvarint(300)
    assert out.getvalue() == b"\x77\x02\xac"
    reader = CraftReader(out.getvalue())
    assert reader.reversed_uvarint() == 300
    assert (reader.pos, reader.end) == (0, 1)


@given(UINT64)
def test_uvarint_shape(value: int) -> None:
    data = uvarint_bytes(value)
    assert len(data) == max(1, -(-value.bit_length() // 7))
    assert all(b & 0x80 for b in data[:-1]) and data[-1] < 0x80
    assert sum((b & 0x7F) << (7 * i) for i, b in enumerate(data)) == value


def test_uvarint_bytes_at_every_size_boundary() -> None:
    # uvarint_bytes spreads 7-bit groups without a loop: check every size change against a loop.
    boundaries = {2 ** (7 * k) + d for k in range(10) for d in (-1, 0, 1)} | {UINT64_MAX}
    for value in sorted(v for v in boundaries if 0 <= v <= UINT64_MAX):
        expected, rest = bytearray(), value
        while rest >= 0x80:
            expected.append((rest & 0x7F) | 0x80)
            rest >>= 7
        expected.append(rest)
        assert uvarint_bytes(value) == bytes(expected), value
        assert CraftReader(bytes(expected)).uvarint() == value


@pytest.mark.parametrize("bad", [
    "ffffffffffffffffffff01",  # 11 bytes
    "ffffffffffffffffff02",  # 10th byte > 1 overflows 64 bits
    "ffffffffffffffffffff",  # 10 continuation bytes
    "80", "ff80", "",  # truncated
])
def test_bad_uvarints_raise_decode_error(bad: str) -> None:
    data = b"\x00" + bytes.fromhex(bad)
    reader = CraftReader(data, 1)
    with pytest.raises(DecodeError) as info:
        reader.uvarint()
    assert info.value.protocol == "craft" and info.value.at == 1
    with pytest.raises(DecodeError):
        CraftReader(bytes.fromhex(bad)[::-1]).reversed_uvarint()


def test_out_of_range_integers_are_refused_by_the_writer() -> None:
    cases = ((uvarint_bytes, -1), (uvarint_bytes, 2**64), (varint_bytes, 2**63), (varint_bytes, -(2**63) - 1))
    for call, value in cases:
        with pytest.raises(OverflowError):
            call(value)


_CHUNK_CASES: list[tuple[str, st.SearchStrategy[Any]]] = [
    ("uvarint_chunk", st.lists(UINT64, max_size=20)),
    ("varint_chunk", st.lists(INT64, max_size=20)),
    ("delta_uvarint_chunk", st.lists(UINT64, max_size=20)),
    ("delta_varint_chunk", st.lists(INT64, max_size=20)),
    ("string_chunk", st.lists(st.binary(max_size=20), max_size=10)),
    ("nullable_bytes_chunk", st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=10)),
    # Lengths of 64+ bytes take two-byte varints (CraftWriter's one-byte fast path declines).
    ("nullable_bytes_chunk", st.lists(st.binary(max_size=100), max_size=6)),
]


@pytest.mark.parametrize(("method", "strategy"), _CHUNK_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CHUNK_CASES)])
@settings(max_examples=80)
@given(data=st.data())
def test_chunk_writer_and_reader_mirror(method: str, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    values = data.draw(strategy)
    out = CraftWriter()
    out.raw(b"\xee")
    getattr(out, method)(values)
    out.raw(b"\xdd")
    reader = CraftReader(out.getvalue(), 1, len(out) - 1)
    assert getattr(reader, method)(len(values)) == values
    reader.expect_end(method)


@given(st.lists(st.one_of(
    st.tuples(st.just("uvarint"), UINT64), st.tuples(st.just("varint"), INT64),
    st.tuples(st.just("float64"), st.floats(allow_nan=False)), st.tuples(st.just("string"), st.binary(max_size=30)),
    st.tuples(st.just("u8"), st.integers(0, 255)),
), max_size=12))
def test_primitive_writer_and_reader_mirror(items: list[tuple[str, Any]]) -> None:
    out = CraftWriter()
    for method, value in items:
        getattr(out, method)(value)
    reader = CraftReader(out.getvalue())
    assert [(m, getattr(reader, m)()) for m, _ in items] == items
    reader.expect_end("primitives")


def test_delta_chunks_wrap_like_go() -> None:
    # commit ts going backwards: the uvarint delta wraps mod 2**64 (Go uint64 subtraction).
    out = CraftWriter()
    out.delta_uvarint_chunk([10, 3])
    assert out.getvalue() == bytes([10]) + uvarint_bytes(2**64 - 7)
    extremes = [2**63 - 1, -(2**63), 2**63 - 1]
    out = CraftWriter()
    out.delta_varint_chunk(extremes)
    assert CraftReader(out.getvalue()).delta_varint_chunk(3) == extremes


def test_float64_is_little_endian() -> None:
    out = CraftWriter()
    out.float64(2.0)
    assert out.getvalue().hex() == "0000000000000040"  # §3.4 (a)


def test_absurd_counts_fail_before_allocating() -> None:
    huge = uvarint_bytes(2**62)
    with pytest.raises(DecodeError, match="count"):
        CraftReader(huge + b"\x00\x00").count("term")
    for method in ("uvarint_chunk", "string_chunk", "nullable_bytes_chunk", "delta_varint_chunk"):
        with pytest.raises(DecodeError):
            getattr(CraftReader(b"\x01\x02"), method)(2**40)
    with pytest.raises(DecodeError, match="longer"):
        CraftReader(b"\x7f\x00").string_chunk(1)  # one string of 127 bytes, 1 byte left
    with pytest.raises(DecodeError, match="nullable"):
        CraftReader(b"\x03").nullable_bytes_chunk(1)  # zigzag(-2): not a length


# --------------------------------------------------------------------------- values per type
def _col(name: str, type_code: int, flags: int = 0, **kw: Any) -> ColumnInfo:
    return ColumnInfo(name=name, type_code=type_code, flags=flags, **kw)


_U = int(F.UNSIGNED)


@pytest.mark.parametrize(("type_code", "flag", "value", "expected"), [
    # §3.2 EncodeTiDBType, one line per rule.
    (10, 0, "2024-02-29", b"2024-02-29"), (12, 0, "2024-02-29 01:02:03.120", b"2024-02-29 01:02:03.120"),
    (7, 0, "1973-12-30 15:30:00", b"1973-12-30 15:30:00"), (11, 0, "-838:59:59", b"-838:59:59"),
    (14, 0, "2000-01-01", b"2000-01-01"), (245, 0, '{"key1": "value1"}', b'{"key1": "value1"}'),
    (246, 0, "-129012.1230000", b"-129012.1230000"), (225, 0, "[1,2,3]", b"[1,2,3]"),
    (247, 0, 3, b"\x03"), (248, 0, 0b101, b"\x05"), (16, _U, UINT64_MAX, bytes.fromhex("ffffffffffffffffff01")),
    (15, 0, b"\x00\xff", b"\x00\xff"), (254, 0, b"abc", b"abc"), (252, 0, b"", b""), (249, 1, b"\x80", b"\x80"),
    (5, 0, 0.1, struct.pack("<d", 0.1)),
    (13, _U, 2020, bytes.fromhex("c81f")),  # YEAR: zigzag varint even though unsigned
    (1, 0, -128, b"\xff\x01"), (2, _U, 65535, uvarint_bytes(65535)), (9, 0, -1, b"\x01"),
    (3, 0, 2000, bytes.fromhex("a01f")), (8, 0, -(2**63), bytes.fromhex("ffffffffffffffffff01")),
    (8, _U, UINT64_MAX, bytes.fromhex("ffffffffffffffffff01")),
    (6, 0, "ignored", None), (255, 0, b"POINT", None), (0, 0, "1.5", None), (200, 0, 1, None),  # NULL
    (3, 0, None, None),
])
def test_value_bytes_per_type(type_code: int, flag: int, value: Value, expected: bytes | None) -> None:
    assert craft.encode_value(type_code, flag, value) == expected


def test_float_is_float32_widened_to_float64() -> None:
    # §3.2: FLOAT is a float32 in the row model, written as float64; numpy is the independent float32.
    raw = craft.encode_value(4, 0, 0.1)
    assert raw == struct.pack("<d", float(np.float32(0.1)))
    assert craft.decode_value(4, 0, raw) == float(np.float32(0.1))


@pytest.mark.parametrize(("type_code", "flag", "raw", "expected"), [
    (3, 0, b"\x01", -1), (3, _U, b"\x01", 1), (8, _U, bytes.fromhex("ffffffffffffffffff01"), UINT64_MAX),
    (13, _U, bytes.fromhex("c81f"), 2020), (247, 0, b"\x02", 2), (5, 0, struct.pack("<d", -0.5), -0.5),
    (15, 0, b"\xff", b"\xff"), (246, 0, b"1.50", "1.50"), (6, 0, b"x", None), (255, 0, b"", None),
])
def test_decode_value_per_type(type_code: int, flag: int, raw: bytes, expected: Value) -> None:
    assert craft.decode_value(type_code, flag, raw) == expected


@pytest.mark.parametrize(("type_code", "raw"), [(3, b""), (3, b"\x01\x01"), (4, b"\x00" * 7), (5, b"\x00" * 9),
                                                 (247, b"\x80"), (13, b"\xff" * 11)])
def test_malformed_values_raise_decode_error(type_code: int, raw: bytes) -> None:
    with pytest.raises(DecodeError):
        craft.decode_value(type_code, 0, raw, 40)


# --------------------------------------------------------------------------- encoder
def _table(**kw: Any) -> TableInfo:
    columns = (
        _col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), _col("name", 15, int(F.NULLABLE)),
        _col("price", 246, int(F.BINARY | F.NULLABLE)),
    )
    return TableInfo(**{"schema": "shop", "table": "items", "table_id": 7, "columns": columns, **kw})


def _insert(i: int, table: TableInfo | None = None, **kw: Any) -> RowChange:
    table = table or _table()
    return RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=1000 + i,
                     columns=Row({"id": i, "name": b"n%d" % i, "price": "1.00"}), table_id=table.table_id,
                     physical_table_id=table.table_id, table_info=table, **kw)


def test_term_ids_follow_first_use_schemas_then_tables_then_columns() -> None:
    t1 = TableInfo(schema="s1", table="t1", columns=(_col("a", 3), _col("b", 3)))
    t2 = TableInfo(schema="s2", table="t2", columns=(_col("b", 3), _col("c", 3)))
    rows = [RowChange(op=Op.INSERT, schema=t.schema, table=t.table, commit_ts=5, columns=Row(r), table_info=t)
            for t, r in ((t1, {"a": 1, "b": 2}), (t2, {"b": 3, "c": 4}))]
    [message] = craft.encode(rows)
    wire = craft.explain(message.value)
    # §3.2: all schemas (header order), then all tables, then column names as groups are written.
    assert wire["term_dictionary"] == ["s1", "s2", "t1", "t2", "a", "b", "c"]
    assert len(wire["size_tables"]) == 2 + 2  # meta, bodies, one group table per row
    assert [len(t) for t in wire["size_tables"][2:]] == [1, 1]
    assert message.rows == 2 and message.events == tuple(rows)


def test_size_tables_account_for_every_byte() -> None:
    rows = [_insert(i) for i in range(3)] + [RowChange(
        op=Op.UPDATE, schema="shop", table="items", commit_ts=2000, columns=Row({"id": 1, "name": None, "price": "2"}),
        pre_columns=Row({"id": 1, "name": b"x", "price": "1"}), table_info=_table())]
    [message] = craft.encode(rows)
    value = message.value
    assert value is not None
    wire = craft.explain(value)
    (header, dictionary), bodies, *groups = wire["size_tables"]
    assert [sum(g) for g in groups] == bodies
    assert [len(g) for g in groups] == [1, 1, 1, 2]
    tables_size = value[-1]  # a one-byte reversed uvarint here
    assert 1 + header + sum(bodies) + dictionary + tables_size + 1 == len(value)


def _estimated(row: RowChange) -> int:
    """§3.3 estimatedSize of one row, computed from the reference formula."""
    size = 32 + len(row.schema.encode()) + len(row.table.encode())
    for image in (row.columns, row.pre_columns):
        for name, value in (image or {}).items():
            assert isinstance(value, bytes)  # the batching tests use VARCHAR values only
            size += len(name.encode()) + len(value) + 16
    return size


def test_batches_flush_on_max_batch_size() -> None:
    messages = craft.encode([_insert(i) for i in range(7)], max_batch_size=3)
    assert [m.rows for m in messages] == [3, 3, 1]
    decoded = [e.commit_ts for m in messages for e in craft.decode(m.value)]  # type: ignore[union-attr]
    assert decoded == [1000 + i for i in range(7)]


def test_batches_flush_when_estimated_size_exceeds_max_message_bytes() -> None:
    table = TableInfo(schema="s", table="t", columns=(_col("c", 15),))
    rows = [RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"c": b"0123456789"}),
                      table_info=table) for _ in range(7)]
    per_row = _estimated(rows[0])
    assert per_row == 32 + 1 + 1 + 1 + 10 + 16
    # Checked after adding (§3.3): the row that crosses the limit stays in the message.
    limit = 2 * per_row
    messages = craft.encode(rows, max_message_bytes=limit, max_batch_size=100)
    assert [m.rows for m in messages] == [3, 3, 1]
    messages = craft.encode(rows, max_message_bytes=2 * per_row - 1, max_batch_size=100)
    assert [m.rows for m in messages] == [2, 2, 2, 1]
    assert [m.rows for m in craft.encode(rows, max_message_bytes=1)] == [1] * 7


def test_ddl_and_resolved_are_their_own_messages_in_stream_order() -> None:
    ddl = DDLEvent(query="ALTER TABLE items ADD c INT", ddl_type=5, commit_ts=1500, schema="shop", table="items")
    mark = Watermark(resolved_ts=1600)
    events: list[Event] = [_insert(0), _insert(1), ddl, _insert(2), mark]
    messages = craft.encode(events)
    assert [[e.kind for e in m.events] for m in messages] == [["row", "row"], ["ddl"], ["row"], ["watermark"]]
    assert all(m.key is None for m in messages)
    assert [craft.explain(m.value)["events"][0]["type"] for m in messages] == ["row", "ddl", "row", "resolved"]


def test_partition_header_is_the_physical_table_id_of_partitioned_tables() -> None:
    table = _table(is_partition=True)
    row = RowChange(op=Op.INSERT, schema="shop", table="items", commit_ts=9, columns=Row({"id": 1}),
                    table_id=7, physical_table_id=4242, table_info=table)
    [message] = craft.encode([row])
    assert craft.explain(message.value)["events"][0]["partition"] == 4242
    [decoded] = craft.decode(message.value)
    assert isinstance(decoded, RowChange)
    assert decoded.physical_table_id == 4242 and decoded.table_info is not None and decoded.table_info.is_partition
    [plain] = craft.encode([_insert(1)])
    assert craft.explain(plain.value)["events"][0]["partition"] == -1


def test_delete_only_output_handle_key_columns() -> None:
    table = _table()
    full = Row({"id": 5, "name": b"gone", "price": "9.99"})
    delete = RowChange(op=Op.DELETE, schema="shop", table="items", commit_ts=3, pre_columns=full, table_info=table)
    update = RowChange(op=Op.UPDATE, schema="shop", table="items", commit_ts=4, columns=full, pre_columns=full,
                       table_info=table)
    encoder = craft.Encoder({"delete-only-output-handle-key-columns": True})
    [message] = encoder.encode([delete, update])
    got_delete, got_update = craft.decode(message.value)
    assert isinstance(got_delete, RowChange) and isinstance(got_update, RowChange)
    assert got_delete.op is Op.DELETE and got_delete.pre_columns == {"id": 5} and got_delete.handle_key_only
    assert got_update.pre_columns == full and got_update.columns == full and not got_update.handle_key_only
    assert [encoder.project(delete), encoder.project(update)] == [got_delete, got_update]
    # Without the option a DELETE keeps every column.
    [plain] = craft.decode(craft.encode([delete])[0].value)
    assert isinstance(plain, RowChange) and plain.pre_columns == full and not plain.handle_key_only


def test_delete_only_handle_key_without_a_handle_is_refused() -> None:
    table = TableInfo(schema="s", table="t", columns=(_col("a", 3),))
    delete = RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=3, pre_columns=Row({"a": 1}), table_info=table)
    with pytest.raises(EncodeError):  # TiCDC panics on the nil column group
        craft.encode([delete], delete_only_output_handle_key_columns=True)


@pytest.mark.parametrize(("columns", "match"), [
    ({"id": 1, "nope": 2}, "not in table_info"), ({"id": "1"}, "expected int"), ({"id": 2**63}, "int64"),
    ({"name": 5}, "expected bytes"), ({}, "no columns"),
])
def test_unencodable_rows_raise_encode_error(columns: dict[str, Value], match: str) -> None:
    row = RowChange(op=Op.INSERT, schema="shop", table="items", commit_ts=1, columns=Row(columns),
                    table_info=_table())
    with pytest.raises(EncodeError, match=match):
        craft.encode([row])


def test_rows_need_table_info_and_empty_rows_are_dropped() -> None:
    with pytest.raises(EncodeError, match="table_info"):
        craft.encode([RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"a": 1}))])
    nothing = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, table_info=_table())
    assert craft.encode([nothing]) == [] and craft.Encoder().project(nothing) is None


def test_options_are_the_ones_ticdc_allows_for_craft() -> None:
    craft.Encoder({"max-message-bytes": "1024", "max-batch-size": 4, "delete-only-output-handle-key-columns": True})
    for option in ({"enable-tidb-extension": True}, {"large-message-handle-option": "claim-check"},
                   {"only-output-updated-columns": True}, {"max-batch-size": 0}):
        with pytest.raises(ConfigError):
            craft.Encoder(option)


# --------------------------------------------------------------------------- round trips over every type
@settings(max_examples=120)
@given(rows=row_changes(max_rows=4), batch=st.integers(1, 5), handle_only=st.booleans())
def test_round_trip_every_type(rows: list[RowChange], batch: int, handle_only: bool) -> None:
    encoder = craft.Encoder(max_batch_size=batch, delete_only_output_handle_key_columns=handle_only)
    messages = encoder.encode(rows)
    decoder = craft.Decoder()
    decoded = [e for m in messages for e in decoder.decode(m.value)]
    assert decoded == [encoder.project(r) for r in rows]
    for original, got in zip(rows, decoded):
        assert isinstance(got, RowChange) and got.table_info is not None and original.table_info is not None
        assert (got.op, got.schema, got.table, got.commit_ts) == (original.op, original.schema, original.table,
                                                                  original.commit_ts)
        # Craft's values are lossless in the row model (FLOAT: the float32 widened is the same number).
        assert got.columns == original.columns
        if handle_only and original.op is Op.DELETE:
            assert got.pre_columns == {"id": original.pre_columns["id"]}  # type: ignore[index]
            assert got.handle_key_only
        else:
            assert got.pre_columns == original.pre_columns
        by_name = original.table_info.column_by_name
        for column in got.table_info.columns:
            assert (column.type_code, column.flags) == (by_name[column.name].type_code, by_name[column.name].flags)


@settings(max_examples=40)
@given(ts=UINT64, ddl_type=st.integers(0, 80), query=st.text(max_size=40), schema=st.text(max_size=8),
       table=st.text(max_size=8))
def test_ddl_and_resolved_round_trip(ts: int, ddl_type: int, query: str, schema: str, table: str) -> None:
    try:
        query.encode()
        (schema + table).encode()
    except UnicodeEncodeError:
        return
    events: list[Event] = [DDLEvent(query=query, ddl_type=ddl_type, commit_ts=ts, schema=schema, table=table),
              Watermark(resolved_ts=ts)]
    messages = craft.encode(events)
    assert [e for m in messages for e in craft.decode(m.value)] == events


# --------------------------------------------------------------------------- hostile bytes
def _all_types_message() -> bytes:
    columns = (
        _col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), _col("u", 8, int(F.BINARY | F.UNSIGNED)),
        _col("f", 4, 1), _col("d", 5, 1), _col("dec", 246, 1), _col("dt", 12, 1), _col("ts", 7, 1), _col("tm", 11, 1),
        _col("y", 13, int(F.BINARY | F.UNSIGNED)), _col("s", 15), _col("b", 252, 1), _col("e", 247), _col("st", 248),
        _col("bit", 16, int(F.BINARY | F.UNSIGNED)), _col("j", 245, 1), _col("v", 225, 1), _col("n", 6),
    )
    table = TableInfo(schema="db", table="all", columns=columns)
    post = Row({"id": -5, "u": UINT64_MAX, "f": 1.5, "d": -2.25, "dec": "3.10", "dt": "2024-01-02 03:04:05",
                "ts": "2024-01-02 03:04:05.123", "tm": "-01:00:00", "y": 2024, "s": "é".encode(), "b": b"\x00\xff",
                "e": 2, "st": 5, "bit": 9, "j": '{"a": 1}', "v": "[1,2]", "n": None})
    pre = Row({**post, "s": b"old", "f": None})
    rows = [RowChange(op=Op.UPDATE, schema="db", table="all", commit_ts=77, columns=post, pre_columns=pre,
                      table_info=table),
            RowChange(op=Op.DELETE, schema="db", table="all", commit_ts=78, pre_columns=pre, table_info=table)]
    [message] = craft.encode(rows)
    assert message.value is not None
    return message.value


REAL_MESSAGES = [DOCS_ROW, DOCS_DDL, DOCS_RESOLVED, _all_types_message()]


@pytest.mark.parametrize("value", REAL_MESSAGES, ids=["docs_row", "docs_ddl", "docs_resolved", "all_types"])
def test_truncation_at_every_offset_raises_decode_error(value: bytes) -> None:
    assert craft.decode(value)
    for cut in range(len(value)):
        for broken in (value[:cut], value[cut + 1:]):
            with pytest.raises(DecodeError) as info:
                craft.decode(broken)
            assert info.value.protocol == "craft" and isinstance(info.value.at, int)
            assert 0 <= info.value.at <= len(broken)
            with pytest.raises(DecodeError):
                craft.explain(broken)


def _decode_or_decode_error(value: bytes) -> None:
    try:
        craft.decode(value)
        craft.explain(value)
    except DecodeError as exc:
        assert exc.protocol == "craft" and exc.reason and isinstance(exc.at, int)


@settings(max_examples=300)
@given(st.binary(max_size=120))
def test_random_bytes_raise_only_decode_error(value: bytes) -> None:
    _decode_or_decode_error(value)


@settings(max_examples=200)
@given(which=st.integers(0, len(REAL_MESSAGES) - 1), seed=st.integers(0, 2**32))
def test_mutated_messages_raise_only_decode_error(which: int, seed: int) -> None:
    rng = random.Random(seed)
    mutated = bytearray(REAL_MESSAGES[which])
    for _ in range(rng.randint(1, 4)):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    if rng.random() < 0.3:
        at = rng.randrange(len(mutated))
        mutated[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    _decode_or_decode_error(bytes(mutated))


@pytest.mark.parametrize(("value", "match"), [
    (None, "never empty"),
    (b"", "truncated uvarint"),
    (bytes.fromhex("00021a0f010005"), "version"),
    (bytes.fromhex("01" + "ff" * 11), "longer than 10"),  # a trailer that never ends
    (DOCS_RESOLVED[:-1] + b"\x7f", "exceed"),  # size tables longer than the message
    (DOCS_RESOLVED.replace(bytes.fromhex("0301010102"), bytes.fromhex("0901010102")), "event type"),
    (DOCS_DDL.replace(bytes.fromhex("0201000201"), bytes.fromhex("0201000801")), "term id"),  # table id 1 → 4
    (DOCS_RESOLVED + b"\x00", "size table|sizes"),
])
def test_structural_errors(value: bytes | None, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        craft.decode(value)


def test_unknown_and_duplicate_column_groups_are_rejected() -> None:
    group_new_at = 14  # after the 13-byte header of the docs row, right after the version byte
    assert DOCS_ROW[group_new_at] == 1
    bad_type = bytearray(DOCS_ROW)
    bad_type[group_new_at] = 3
    with pytest.raises(DecodeError, match="group type") as info:
        craft.decode(bytes(bad_type))
    assert info.value.at == group_new_at
    duplicate = bytearray(DOCS_ROW)
    duplicate[group_new_at + 108] = 1  # the old group claims to be new too
    with pytest.raises(DecodeError, match="duplicate"):
        craft.decode(bytes(duplicate))


def test_explain_shows_binary_values_as_hex() -> None:
    table = TableInfo(schema="s", table="t", columns=(_col("b", 252, 1), _col("t", 15)))
    row = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"b": b"\xff\x00", "t": b"ok"}),
                    table_info=table)
    [event] = craft.explain(craft.encode([row])[0].value)["events"]
    columns = event["column_groups"][0]["columns"]
    assert [(c["raw_hex"], c["value"]) for c in columns] == [("ff00", {"hex": "ff00"}), ("6f6b", "ok")]


# --------------------------------------------------------------------------- fast path vs reference path
# Decoder.decode runs the cached fast path (craft._FastPath) and falls back to the reference path
# (craft._parse, the specification in code) whenever the fast path declines. These tests call the
# fast path directly, so a fallback cannot hide a fast-path bug, and compare it with the reference.
_FAST_PATH_DECLINES = (DecodeError, UnicodeDecodeError, KeyError)  # what it may raise by design


def _typed(events: list[Event]) -> list[Any]:
    """Events plus every row value with its type: 1 == 1.0 == True must not pass for equal."""
    return [(event, [None if image is None else [(k, type(v), v) for k, v in image.items()]
                     for image in (event.columns, event.pre_columns)] if isinstance(event, RowChange) else None)
            for event in events]


def _fast_decodes(value: bytes, decoder: craft.Decoder, passes: int = 3) -> list[list[Event] | None]:
    """The fast path's answers for ``value``, ``passes`` times with one decoder, each checked
    against the reference path. Pass 1 meets a value layout for the first time (generated slicer),
    pass 2 compiles it (Struct + generated converter), pass 3 uses the cached one."""
    reference = decoder.decode_reference(value)
    answers: list[list[Event] | None] = []
    for _ in range(passes):
        try:
            fast = decoder._fast.decode(value)
        except _FAST_PATH_DECLINES:
            fast = None
        if fast is not None:
            assert _typed(fast) == _typed(reference)
            assert [e.table_info for e in fast if isinstance(e, RowChange)] == [
                e.table_info for e in reference if isinstance(e, RowChange)]
        answers.append(fast)
    assert _typed(decoder.decode(value)) == _typed(reference)
    return answers


@pytest.fixture
def cold_fast_path() -> None:
    """Forget the process-wide compiled layouts, so each test meets every tier of the fast path."""
    craft._COMPILED.clear()


@settings(max_examples=120)
@given(rows=row_changes(max_rows=6), batch=st.integers(1, 6), handle_only=st.booleans())
def test_fast_path_agrees_with_the_reference_path(rows: list[RowChange], batch: int, handle_only: bool) -> None:
    craft._COMPILED.clear()
    messages = craft.Encoder(max_batch_size=batch, delete_only_output_handle_key_columns=handle_only).encode(rows)
    decoder = craft.Decoder()
    for message in messages:
        assert message.value is not None
        # Every row message of the model's values is the fast path's own: it never declines one.
        assert None not in _fast_decodes(message.value, decoder)


def _orders(count: int, seed: int = 7, **overrides: Any) -> list[RowChange]:
    """Rows like benchmarks/bench_codecs.py: inserts and updates of an orders table."""
    rng = random.Random(seed)
    table = TableInfo(schema="shop", table="orders", columns=(
        _col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), _col("customer", 15, int(F.NULLABLE)),
        _col("amount", 246, int(F.BINARY | F.NULLABLE)), _col("quantity", 3, int(F.BINARY | F.NULLABLE) | _U),
        _col("rating", 4, int(F.BINARY | F.NULLABLE)), _col("created_at", 12, int(F.BINARY | F.NULLABLE)),
        _col("status", 247, int(F.NULLABLE)), _col("note", 252, int(F.NULLABLE)),
        _col("big", 8, int(F.BINARY | F.NULLABLE) | _U)))
    rows = []
    for i in range(count):
        image: dict[str, Value] = {
            "id": i * 7919 - 10**6, "customer": f"customer-{rng.randrange(10**6)}".encode(),
            "amount": f"{rng.randrange(10**7) / 100:.2f}", "quantity": rng.randrange(1000),
            "rating": struct.unpack("<f", struct.pack("<f", rng.random() * 5))[0],
            "created_at": f"2025-11-{rng.randrange(1, 29):02d} 10:00:00.000", "status": rng.randrange(1, 4),
            "note": rng.choice([b"", b"gift wrap", "加急".encode()]), "big": rng.randrange(2**64),
        }
        image.update({k: v(i, rng) if callable(v) else v for k, v in overrides.items()})
        op = [Op.INSERT, Op.UPDATE, Op.DELETE][i % 3]
        rows.append(RowChange(op=op, schema="shop", table="orders", commit_ts=10**17 + i,
                              columns=None if op is Op.DELETE else Row(image),
                              pre_columns=None if op is Op.INSERT else Row({**image, "quantity": 0}),
                              table_info=table))
    return rows


def _renamed(rows: list[RowChange], schema: str, table: str) -> list[RowChange]:
    info = rows[0].table_info
    assert info is not None
    renamed = TableInfo(schema=schema, table=table, columns=info.columns)
    return [msgspec.structs.replace(r, schema=schema, table=table, table_info=renamed) for r in rows]


def _partitioned(rows: list[RowChange]) -> list[RowChange]:
    info = rows[0].table_info
    assert info is not None
    partitioned = msgspec.structs.replace(info, is_partition=True)
    return [msgspec.structs.replace(r, table_info=partitioned, physical_table_id=100 + i % 3)
            for i, r in enumerate(rows)]


def _wide(count: int) -> list[RowChange]:
    # 150 columns: a two-byte column count; type code 254 is a two-byte uvarint too.
    columns = tuple(_col(f"c{i}", 254 if i % 2 else 3, int(F.BINARY)) for i in range(150))
    table = TableInfo(schema="s", table="wide", columns=columns)
    return [RowChange(op=Op.INSERT, schema="s", table="wide", commit_ts=5 + i, table_info=table,
                      columns=Row({c.name: b"x" * (i % 3) if c.type_code == 254 else i for c in columns}))
            for i in range(count)]


FAST_CASES: dict[str, tuple[list[RowChange], dict[str, Any]]] = {
    "orders": (_orders(64), {}),
    "nulls": (_orders(64, customer=lambda i, r: None if i % 2 else b"x", rating=lambda i, r: None if i % 3 else 1.5,
                      note=None), {}),
    "long_values": (_orders(32, note=lambda i, r: b"n" * r.randrange(60, 300)), {}),
    "small_and_huge_ints": (_orders(32, id=lambda i, r: r.choice([0, -1, 63, -64, 2**62, -(2**63)]),
                                    big=lambda i, r: r.choice([0, 127, 128, 2**63, 2**64 - 1])), {}),
    "two_tables": (_orders(8) + _renamed(_orders(8, seed=8), "shop", "returns") + _orders(8, seed=9), {}),
    "partitioned": (_partitioned(_orders(24)), {}),
    "big_batch": (_orders(300), {"max_batch_size": 300}),
    "handle_key_deletes": (_orders(24), {"delete_only_output_handle_key_columns": True}),
    "wide": (_wide(8), {}),
}


@pytest.mark.usefixtures("cold_fast_path")
@pytest.mark.parametrize("case", sorted(FAST_CASES))
def test_fast_path_takes_the_common_messages(case: str) -> None:
    rows, options = FAST_CASES[case]
    messages = craft.Encoder(**options).encode(rows)
    decoder = craft.Decoder()
    decoded = []
    for message in messages:
        assert message.value is not None
        answers = _fast_decodes(message.value, decoder)
        assert None not in answers
        decoded += answers[-1] or []
    assert decoded == [craft.Encoder(**options).project(r) for r in rows]


def test_fast_path_layout_variants_beyond_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past _MAX_VARIANTS generated converters per signature, layouts use the generic converter.
    craft._COMPILED.clear()
    monkeypatch.setattr(craft, "_MAX_VARIANTS", 1)
    decoder = craft.Decoder()
    for message in craft.encode(_orders(48, big=lambda i, r: 1 << (7 * (i % 10)))):
        assert message.value is not None
        assert None not in _fast_decodes(message.value, decoder)


def test_fast_path_leaves_invalid_utf8_to_the_reference_path() -> None:
    # A text type (DATETIME) holding invalid UTF-8: go_string's U+FFFD per byte, from either path.
    table = TableInfo(schema="s", table="t", columns=(_col("id", 8, int(F.HANDLE_KEY)), _col("at", 12, 1)))
    rows = [RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1 + i, table_info=table,
                      columns=Row({"id": i, "at": b"2024-\xff\xfe"})) for i in range(3)]
    [message] = craft.encode(rows)
    assert message.value is not None
    decoder = craft.Decoder()
    assert _fast_decodes(message.value, decoder) == [None] * 3
    events = decoder.decode(message.value)
    assert [e.columns["at"] for e in events if isinstance(e, RowChange) and e.columns] == ["2024-\ufffd\ufffd"] * 3


def test_fast_text_decoder_is_go_string() -> None:
    for raw in (b"", b"plain", "é加急".encode(), b"\xff", b"a\xc3", b"\xed\xa0\x80", b"\xf0\x9f\x98"):
        assert craft._go_string_c(raw) == go_string(raw)


@settings(max_examples=400)
@given(raw=st.one_of(st.binary(max_size=12), UINT64.map(uvarint_bytes),
                     st.lists(st.integers(0x80, 0xFF), max_size=9).map(bytes).flatmap(
                         lambda head: st.integers(0, 0x7F).map(lambda last: head + bytes([last])))))
def test_fast_varint_decoders_follow_the_reader(raw: bytes) -> None:
    # The reference: exactly one uvarint by CraftReader's rules (non-minimal encodings included).
    try:
        expected: int | None = craft._exact_uvarint(raw, 0)
    except DecodeError:
        expected = None
    tables = craft._varint_tables()
    for table, zigzag in ((tables.uvarints, False), (tables.zigzags, True)):
        want = None if expected is None else (expected >> 1) ^ -(expected & 1) if zigzag else expected
        try:
            got: int | None = table[raw]
        except DecodeError:
            got = None
        assert got == want
        if 3 <= len(raw) <= 10:  # the piecewise readers of the generated code
            try:
                got = craft._long_varints(zigzag)[len(raw)](raw, 0)
            except (DecodeError, KeyError):
                got = None
            assert got == want


def _row_messages() -> list[bytes]:
    values = [m.value for m in craft.encode(_orders(6, note=lambda i, r: None if i % 2 else b"n" * 70))]
    values += [m.value for m in craft.encode(_orders(4, seed=3) + _renamed(_orders(2), "a", "b"))]
    return [v for v in values if v is not None] + [DOCS_ROW, _all_types_message()]


FAST_HOSTILE = _row_messages()


@settings(max_examples=300)
@given(which=st.integers(0, len(FAST_HOSTILE) - 1), seed=st.integers(0, 2**32), cut=st.booleans())
def test_fast_path_on_hostile_bytes(which: int, seed: int, cut: bool) -> None:
    # Mutations and truncations: the fast path declines (None or a designed exception) or agrees
    # with the reference path, which must then accept the bytes too. Nothing else may escape it.
    rng = random.Random(seed)
    mutated = bytearray(FAST_HOSTILE[which])
    if cut:
        at = rng.randrange(len(mutated))
        del mutated[at:at + rng.randint(1, 3)]
    for _ in range(rng.randint(1, 3)):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    value = bytes(mutated)
    decoder = craft.Decoder()
    for _ in range(2):  # also with this layout cached
        try:
            fast = decoder._fast.decode(value)
        except _FAST_PATH_DECLINES:
            fast = None
        if fast is not None:
            assert _typed(fast) == _typed(decoder.decode_reference(value))
    _decode_or_decode_error(value)
