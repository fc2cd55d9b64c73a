"""Rule-by-rule checks of the Craft codec against the spec text.

Every test cites the line of /work/shared/spec/ticdc-reference.md (or craft.md) it checks.
Expected bytes are written out by hand from those rules, never taken from our own encoder's
output.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from pyticdc.codec import Message, craft
from pyticdc.codec.craft.primitives import uvarint_bytes, varint_bytes
from pyticdc.model import ColumnInfo, DDLEvent, Event, Op, Row, RowChange, TableInfo, Value, Watermark

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")

MAX_U64 = 2**64 - 1


def col(name: str, type_code: int, flags: int = 0) -> ColumnInfo:
    return ColumnInfo(name=name, type_code=type_code, flags=flags)


def value_of(message: Message) -> bytes:
    """The value of a Craft message (Craft always writes one)."""
    assert message.value is not None
    return message.value


# =========================================================================== Craft §3.1 primitives
@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"), (16384, "808001"),
    (424316552636792833, "8180f08181b5def105"),  # §3.4 (a) ts chunk
    (MAX_U64, "ffffffffffffffffff01"),
])
def test_craft_uvarint(value: int, hex_: str) -> None:
    """§3.1 "uvarint = protobuf LEB128"."""
    assert uvarint_bytes(value).hex() == hex_


@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"), (2000, "a01f"), (1000, "d00f"),
    (-(2**63), "ffffffffffffffffff01"), (2**63 - 1, "feffffffffffffffff01"),
])
def test_craft_zigzag_varint(value: int, hex_: str) -> None:
    """§3.1 "varint = zigzag then uvarint ((n<<1) ^ (n>>63))"; §3.4 a0 1f = 2000, d0 0f = 1000."""
    assert varint_bytes(value).hex() == hex_


# =========================================================================== Craft §3.4 worked examples
def _docs_row(n: int) -> Row:
    return Row({"varchar": b"varchar%d" % n, "string": b"string%d" % n, "date": f"2021/01/0{n + 1}",
                "timestamp": f"2021/01/0{n + 1} 00:00:00", "datetime": f"2021/01/0{n + 1} 00:00:00",
                "float": float(n + 1), "long": 1000 * (n + 1), "null": None})


def _group_hex(n: int, group_type: str) -> str:
    values = (f"varchar{n}string{n}2021/01/0{n + 1}2021/01/0{n + 1} 00:00:002021/01/0{n + 1} 00:00:00").encode()
    return (group_type + "08" + "0402020202020202" + "0ffe010a070c040306" + "0000000000000000"
            + "100e142626100401" + values.hex() + ("000000000000f03f" + "d00f" if n == 0 else "0000000000000040a01f"))


def test_craft_docs_row_changed_event() -> None:
    """§3.4 (a): the 301-byte row message, byte for byte from the worked decoding."""
    spec = [("varchar", 15), ("string", 254), ("date", 10), ("timestamp", 7), ("datetime", 12), ("float", 4),
            ("long", 3), ("null", 6)]
    info = TableInfo(schema="a", table="b", columns=tuple(col(n, t) for n, t in spec))
    event = RowChange(op=Op.UPDATE, schema="a", table="b", commit_ts=424316552636792833, columns=_docs_row(1),
                      pre_columns=_docs_row(0), table_info=info)
    expected = ("01" + "8180f08181b5def105" + "01" + "01" + "00" + "02"
                + _group_hex(1, "01") + _group_hex(0, "02")
                + "0a" + "01010706040908050404" + b"abvarcharstringdatetimestampdatetimefloatlongnull".hex()
                + "021a5e" + "01b003" + "02d80100" + "0a")
    (message,) = craft.encode([event], max_batch_size=64, max_message_bytes=8192)
    assert message.key is None  # §3.1 "Kafka key = nil"
    assert len(value_of(message)) == 301
    assert value_of(message).hex() == expected


def test_craft_docs_ddl_and_resolved() -> None:
    """§3.4 (b) DDL 41 bytes and (c) resolved 20 bytes (no dictionary when there are no terms)."""
    (ddl,) = craft.encode([DDLEvent(query="create table a", ddl_type=1, commit_ts=424316583965360129,
                                    schema="a", table="b")])
    assert value_of(ddl).hex() == ("01" + "8180c0dcf5b5def105" + "02" + "01" + "00" + "02" + "010e"
                               + b"create table a".hex() + "02010161" + "62" + "021a0f" + "0120" + "05")
    (resolved,) = craft.encode([Watermark(resolved_ts=424316594097225729)])
    assert value_of(resolved).hex() == "01" + "8180e0bb9bb6def105" + "03010101" + "021a19" + "0100" + "05"
    # decoding reads them back (§3.2)
    (back,) = craft.decode(ddl.value)
    assert isinstance(back, DDLEvent) and (back.query, back.ddl_type, back.schema, back.table) == (
        "create table a", 1, "a", "b")
    assert craft.decode(resolved.value) == [Watermark(resolved_ts=424316594097225729)]


# =========================================================================== Craft §3.2 layout
def test_craft_term_ids_schemas_then_tables_then_columns() -> None:
    """§3.2 "Term ids are assigned in encode order: all schemas (header order), then all tables,
    then column names"; N rows share one header chunk set; one size table per row event."""
    rows = []
    for n, schema in ((1, "s1"), (2, "s2")):
        info = TableInfo(schema=schema, table="t", columns=(col("c", 3),))
        rows.append(RowChange(op=Op.INSERT, schema=schema, table="t", commit_ts=n, columns=Row({"c": n}),
                              table_info=info))
    (message,) = craft.encode(rows)
    expected = ("01"
                + "0101" + "0101" + "0100" + "0002" + "0400"  # ts 1,+1; type 1,1; ptn -1,+0; schema 0,+1; table 2,+0
                + "01" "01" "06" "03" "00" "02" "02"  # row 1: new group, 1 col, name id 3, INT, flag 0, len 1, 1
                + "01" "01" "06" "03" "00" "02" "04"  # row 2: value 2
                + "04" "02020101" + b"s1s2tc".hex()  # dictionary: 4 terms
                + "021402" + "020e00" + "010e" + "010e"  # [10, 11] [7, 7] [7] [7]
                + "0a")
    assert value_of(message).hex() == expected


def test_craft_groups_new_then_old_and_delete_old_only() -> None:
    """§3.2 "Row body = column groups in order new (0x01) then old (0x02)… a DELETE has only an 0x02 group";
    §3.2 "With delete-only-output-handle-key-columns, the old group of a DELETE keeps only HandleKey columns"."""
    info = TableInfo(schema="s", table="t", columns=(col("k", 3, 2), col("v", 3, 0)))

    def body(event: RowChange, **options: Any) -> str:
        (message,) = craft.encode([event], **options)
        # header is 1 + 1(ts) + 1 + 1 + 1 + 1 bytes for ts < 128: skip version+header
        return value_of(message)[6:].hex()

    update = RowChange(op=Op.UPDATE, schema="s", table="t", commit_ts=1, columns=Row({"k": 1, "v": 2}),
                       pre_columns=Row({"k": 1, "v": 3}), table_info=info)
    # ids: s=0, t=1, k=2, v=3 → name chunk 2,+1 = 04 02
    assert body(update).startswith("01" "02" "0402" "0303" "0200" "0202" "0204"
                                   "02" "02" "0402" "0303" "0200" "0202" "0206")
    delete = RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=1, pre_columns=Row({"k": 1, "v": 3}),
                       table_info=info)
    assert body(delete).startswith("02" "02" "0402" "0303" "0200" "0202" "0206" "04")
    assert body(delete, delete_only_output_handle_key_columns=True).startswith("02" "01" "04" "03" "02" "02" "02"
                                                                               "03")
    insert = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"k": 1, "v": 2}),
                       table_info=info)
    assert body(insert).startswith("01" "02" "0402" "0303" "0200" "0202" "0204" "04")


def test_craft_partition_header() -> None:
    """§3.2 "deltaVarintChunk(partition[N], -1 = not partitioned)" — physical table id of partitioned tables."""
    info = TableInfo(schema="s", table="t", is_partition=True, columns=(col("c", 3),))
    event = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"c": 1}),
                      physical_table_id=70, table_info=info)
    (message,) = craft.encode([event])
    assert value_of(message)[:5].hex() == "01" "01" "01" "8c01"  # version, ts 1, type row, zigzag(70)=140
    (back,) = craft.decode(message.value)
    assert isinstance(back, RowChange) and back.physical_table_id == 70
    plain = TableInfo(schema="s", table="t", columns=(col("c", 3),))
    (message,) = craft.encode([RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"c": 1}),
                                         physical_table_id=70, table_info=plain)])
    assert value_of(message)[:4].hex() == "01" "01" "01" "01"


@pytest.mark.parametrize(("type_code", "flag", "value", "expected"), [
    # §3.2 "DATE/DATETIME/TIMESTAMP/TIME/JSON/DECIMAL → the model string bytes"
    (10, 1, "2000-01-01", b"2000-01-01"),
    (14, 1, "2000-01-01", b"2000-01-01"),
    (11, 1, "23:59:59", b"23:59:59"),
    (245, 1, '{"key1": "value1"}', b'{"key1": "value1"}'),
    (246, 1, "129012.1230000", b"129012.1230000"),
    # §3.2 "ENUM/SET/BIT → uvarint"
    (247, 0, 1, b"\x01"), (248, 0, 300, b"\xac\x02"), (16, 0x81, 2**64 - 1, b"\xff" * 9 + b"\x01"),
    # §3.2 "CHAR…BLOB → raw bytes"
    (15, 0, b"\xff\x00", b"\xff\x00"), (254, 1, b"ab", b"ab"), (252, 0, b"", b""), (253, 1, b"x", b"x"),
    # §3.2 "FLOAT → float32 widened to float64 LE"; "DOUBLE → float64 LE"
    (4, 1, 3.14, struct.pack("<d", struct.unpack("<f", struct.pack("<f", 3.14))[0])),
    (5, 1, 3.14, struct.pack("<d", 3.14)),
    (5, 1, 2.0, bytes.fromhex("0000000000000040")),
    # §3.2 "YEAR → zigzag varint (always)" — even with the Unsigned flag YEAR carries (§1.2)
    (13, 0x81, 2020, b"\xc8\x1f"), (13, 0, 1970, b"\xe4\x1e"),
    # §3.2 "TINY/SHORT/LONG/LONGLONG/INT24 → uvarint if Unsigned flag else zigzag varint"
    (1, 0x81, 255, b"\xff\x01"), (1, 1, -1, b"\x01"), (2, 1, 64, b"\x80\x01"), (9, 0x80, 64, b"\x40"),
    (8, 1, -(2**63), b"\xff" * 9 + b"\x01"), (3, 0, 1, b"\x02"),
    # §3.2 "NULL/GEOMETRY/unspecified → NULL"; "VECTOR → its string"
    (6, 0, None, None), (255, 0, b"geo", None), (0, 0, "1", None),
    (225, 0, "[1,2,3]", b"[1,2,3]"),
])
def test_craft_value_bytes(type_code: int, flag: int, value: Value, expected: bytes | None) -> None:
    """§3.2 value bytes (EncodeTiDBType) — through a full message and back out of its group."""
    info = TableInfo(schema="s", table="t", columns=(col("c", type_code, flag),))
    event = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"c": value}),
                      table_info=info)
    (message,) = craft.encode([event])
    # header: 01 | 01 | 01 | 01 | 00 | 02 (6 bytes); group: 01 01 04 <type uvarint> <flag uvarint> <len> <bytes>
    group_head = "010104" + uvarint_bytes(type_code).hex() + uvarint_bytes(flag).hex()
    length = "01" if expected is None else varint_bytes(len(expected)).hex()
    assert value_of(message)[6:].hex().startswith(group_head + length + (expected or b"").hex())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_craft_nan_and_inf_are_zero(bad: float) -> None:
    """§1.1 FLOAT/DOUBLE "NaN/±Inf replaced by 0" before any codec sees the value."""
    info = TableInfo(schema="s", table="t", columns=(col("f", 4, 1), col("d", 5, 1)))
    event = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"f": bad, "d": bad}),
                      table_info=info)
    (message,) = craft.encode([event])
    zero = "0000000000000000"
    assert value_of(message)[6:].hex().startswith("01" "02" "0402" "0405" "0101" "1010" + zero + zero)


def test_craft_decoder_reads_float_widened_and_year() -> None:
    """§3.2 FLOAT "decoder returns float64"; YEAR zigzag; unsigned BIGINT uvarint."""
    info = TableInfo(schema="s", table="t", columns=(col("f", 4, 1), col("y", 13, 0x81), col("u", 8, 0x81)))
    event = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1,
                      columns=Row({"f": 3.14, "y": 2020, "u": MAX_U64}), table_info=info)
    (message,) = craft.encode([event])
    (back,) = craft.decode(message.value)
    assert isinstance(back, RowChange)
    assert back.columns == {"f": struct.unpack("<f", struct.pack("<f", 3.14))[0], "y": 2020, "u": MAX_U64}


# =========================================================================== Craft §3.3 batching
def _craft_rows(count: int) -> list[RowChange]:
    info = TableInfo(schema="s1", table="t", columns=(col("c", 3),))
    return [RowChange(op=Op.INSERT, schema="s1", table="t", commit_ts=1, columns=Row({"c": 1}), table_info=info)
            for _ in range(count)]


def test_craft_batching_estimated_size() -> None:
    """§3.3 flush if estimatedSize > max-message-bytes (checked after adding); estimatedSize =
    Σ(32 + len(schema) + len(table)) + Σ(len(name) + len(value) + 16)."""
    per_row = 32 + 2 + 1 + (1 + 1 + 16)  # 53
    rows = _craft_rows(5)
    assert [len(m.events) for m in craft.encode(rows, max_message_bytes=2 * per_row - 1)] == [2, 2, 1]
    assert [len(m.events) for m in craft.encode(rows, max_message_bytes=2 * per_row)] == [3, 2]
    # a single row over the limit is still sent (the check runs after adding)
    assert [len(m.events) for m in craft.encode(rows[:2], max_message_bytes=10)] == [1, 1]


def test_craft_batching_null_and_handle_only_columns_count_what_is_encoded() -> None:
    """§3.3 "per encoded column (len(name) + len(valueBytes) + 16)": NULL adds len 0; columns
    dropped by delete-only-output-handle-key-columns are not counted."""
    info = TableInfo(schema="s", table="t", columns=(col("k", 3, 2), col("vv", 15, 0)))
    insert = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"k": 1, "vv": None}),
                       table_info=info)
    per_insert = 32 + 1 + 1 + (1 + 1 + 16) + (2 + 0 + 16)  # 70
    assert [len(m.events) for m in craft.encode([insert] * 3, max_message_bytes=2 * per_insert)] == [3]
    assert [len(m.events) for m in craft.encode([insert] * 3, max_message_bytes=2 * per_insert - 1)] == [2, 1]
    delete = RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=1, pre_columns=Row({"k": 1, "vv": b"abc"}),
                       table_info=info)
    per_delete = 32 + 1 + 1 + (1 + 1 + 16)  # 52
    options = {"delete_only_output_handle_key_columns": True}
    assert [len(m.events) for m in craft.encode([delete] * 3, max_message_bytes=2 * per_delete, **options)] == [3]
    assert [len(m.events) for m in craft.encode([delete] * 3, max_message_bytes=2 * per_delete - 1,
                                                **options)] == [2, 1]


def test_craft_max_batch_size_and_own_messages() -> None:
    """§3.3 flush when rows >= max-batch-size; "DDL and resolved events are always their own message"."""
    rows = _craft_rows(5)
    assert [len(m.events) for m in craft.encode(rows, max_batch_size=2)] == [2, 2, 1]
    assert [len(m.events) for m in craft.encode(_craft_rows(40))] == [16, 16, 8]
    events: list[Event] = [*rows[:2], Watermark(resolved_ts=3), rows[2], DDLEvent(query="q", ddl_type=3, commit_ts=4),
                           rows[3]]
    messages = craft.encode(events)
    assert [[e.kind for e in m.events] for m in messages] == [
        ["row", "row"], ["watermark"], ["row"], ["ddl"], ["row"]]
    assert all(m.key is None for m in messages)


def test_craft_empty_schema_and_table_are_null_ids() -> None:
    """§3.2 "Empty schema/table → -1 (never an empty-string term)"; dictionary omitted with no terms."""
    (message,) = craft.encode([DDLEvent(query="q", ddl_type=4, commit_ts=2)])
    # header 02 | 02 | 01 | 01 | 01 (5) ; body 04 01 'q' (3) ; tables [[5, 0-5]] [[3]] ; trailer
    assert value_of(message).hex() == "01" "02" "02" "01" "01" "01" "0401" + b"q".hex() + "020a09" "0106" "05"



def test_craft_rows_with_neither_image_are_dropped() -> None:
    """§1.3 "Rows with neither image are dropped" before any codec, so craft encodes nothing for them."""
    assert craft.encode([RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1,
                                   table_info=TableInfo(schema="s", table="t", columns=(col("c", 3),)))]) == []
