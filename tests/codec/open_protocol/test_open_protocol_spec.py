"""Rule-by-rule checks of the Open Protocol codec against the spec text.

Every test cites the line of /work/shared/spec/ticdc-reference.md (or open-protocol.md) it checks.
Expected bytes are written out by hand from those rules, never taken from our own encoder's
output.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import pytest

from pyticdc.codec import open_protocol
from pyticdc.codec.compression import decompress
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnInfo, DDLEvent, Event, Op, Row, RowChange, TableInfo, Value, Watermark
from pyticdc.vectors.generic import MemoryClaimCheck

U64 = struct.Struct(">Q")
MAX_U64 = 2**64 - 1
TS = 415508878783938562


def col(name: str, type_code: int, flags: int = 0) -> ColumnInfo:
    return ColumnInfo(name=name, type_code=type_code, flags=flags)


# §1.2: "id int primary key → f=11 = Binary|HandleKey|PK"
ID = col("id", 3, 11)


def table(*columns: ColumnInfo, schema: str = "test", name: str = "t1", **kw: Any) -> TableInfo:
    return TableInfo(schema=schema, table=name, table_id=100, columns=(ID, *columns), **kw)


def row(info: TableInfo, post: dict[str, Value] | None = None, pre: dict[str, Value] | None = None,
        op: Op | None = None, commit_ts: int = TS, row_id: int = 1, physical_table_id: int = 100) -> RowChange:
    if op is None:
        op = Op.UPDATE if post is not None and pre is not None else (Op.DELETE if post is None else Op.INSERT)
    return RowChange(op=op, schema=info.schema, table=info.table, commit_ts=commit_ts,
                     columns=Row(post) if post is not None else None,
                     pre_columns=Row(pre) if pre is not None else None,
                     table_id=info.table_id, physical_table_id=physical_table_id, row_id=row_id, table_info=info)


def framed_key(*keys: str) -> bytes:
    # §2.1: "Kafka key = u64be(1 /*BatchVersion1*/) ‖ { u64be(len(k_i)) ‖ k_i }"
    out = U64.pack(1)
    for key in keys:
        data = key.encode()
        out += U64.pack(len(data)) + data
    return out


def framed_value(*values: str | bytes) -> bytes:
    # §2.1: "Kafka value = { u64be(len(v_i)) ‖ v_i }"
    out = b""
    for value in values:
        data = value.encode() if isinstance(value, str) else value
        out += U64.pack(len(data)) + data
    return out


def open_one(event: Any, **options: Any) -> tuple[str, str]:
    (message,) = open_protocol.encode([event], **options)
    assert message.key is not None and message.value is not None
    assert message.key[:8] == U64.pack(1)
    (klen,) = U64.unpack_from(message.key, 8)
    assert len(message.key) == 16 + klen
    (vlen,) = U64.unpack_from(message.value, 0)
    assert len(message.value) == 8 + vlen
    return message.key[16:].decode(), message.value[8:].decode()


ID_JSON = '"id":{"t":3,"h":true,"f":11,"v":1}'  # §2.3 column object, struct order t,h,f,v


# =========================================================================== Open §2.1 framing
def test_open_row_framing() -> None:
    """§2.1 key = u64be(1)‖u64be(len)‖k ; value = u64be(len)‖v (big-endian, version 1)."""
    (message,) = open_protocol.encode([row(table(), {"id": 1})])
    key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1}'
    assert message.key == framed_key(key)
    assert message.value == framed_value('{"u":{' + ID_JSON + "}}")


def test_open_resolved_is_eight_zero_bytes() -> None:
    """§2.1 "Resolved message: key JSON {"ts":N,"t":3}; value = 8 zero bytes"; §11.1."""
    (message,) = open_protocol.encode([Watermark(resolved_ts=415508881038376963)])
    assert message.key == framed_key('{"ts":415508881038376963,"t":3}')
    assert message.value == b"\x00" * 8


def test_open_ddl_message() -> None:
    """§2.1 DDL: one event, value u64be(len)‖{"q":…,"t":…}; §7 key {"ts","scm"?,"tbl"?,"t":2}."""
    query = "CREATE TABLE test.t1(id int primary key, val varchar(16))"
    (message,) = open_protocol.encode([DDLEvent(query=query, ddl_type=3, commit_ts=415508856908021766,
                                                schema="test", table="t1")])
    assert message.key == framed_key('{"ts":415508856908021766,"scm":"test","tbl":"t1","t":2}')
    assert message.value == framed_value('{"q":"' + query + '","t":3}')
    # omitempty scm/tbl (§2.2) and encoding/json HTML escaping of the query (§1.5)
    (message,) = open_protocol.encode([DDLEvent(query="drop database `a<b>`", ddl_type=2, commit_ts=7)])
    assert message.key == framed_key('{"ts":7,"t":2}')
    assert message.value == framed_value('{"q":"drop database `a\\u003cb\\u003e`","t":2}')


def test_open_ddl_and_resolved_never_batched_with_rows() -> None:
    """§2.1 "Row events are batched; DDL/resolved are never batched with rows"."""
    info = table()
    events: list[Event] = [row(info, {"id": 1}), row(info, {"id": 1}), Watermark(resolved_ts=5),
                           row(info, {"id": 1}), DDLEvent(query="q", ddl_type=3, commit_ts=6), row(info, {"id": 1})]
    messages = open_protocol.encode(events)
    assert [len(m.events) for m in messages] == [2, 1, 1, 1, 1]
    assert messages[1].value == b"\x00" * 8


# =========================================================================== Open §2.2 key
def test_open_key_rid_omitempty_and_negative() -> None:
    """§2.2 "rid":<int64>? omitempty (0 = omitted, common handle)."""
    key, _ = open_one(row(table(), {"id": 1}, row_id=0))
    assert key == '{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1}'
    key, _ = open_one(row(table(), {"id": 1}, row_id=-3))
    assert key == '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":-3,"t":1}'


def test_open_key_ptn_only_for_partitioned_tables() -> None:
    """§2.2 "ptn = physical (partition) table id, only for partitioned tables" (a *int64: 0 kept)."""
    info = table(is_partition=True)
    key, _ = open_one(row(info, {"id": 1}, physical_table_id=123))
    assert key == '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"ptn":123,"t":1}'
    key, _ = open_one(row(info, {"id": 1}, physical_table_id=0))
    assert key == '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"ptn":0,"t":1}'
    key, _ = open_one(row(table(), {"id": 1}, physical_table_id=123))
    assert '"ptn"' not in key


def test_open_key_escapes_names() -> None:
    """§1.5 encoding/json escaping applies to the key's schema and table (`<` → \\u003c)."""
    info = TableInfo(schema="s<", table='t"', columns=(ID,))
    key, _ = open_one(RowChange(op=Op.INSERT, schema="s<", table='t"', commit_ts=1, columns=Row({"id": 1}),
                                table_info=info))
    assert key == '{"ts":1,"scm":"s\\u003c","tbl":"t\\"","t":1}'


# =========================================================================== Open §2.3 value
def test_open_columns_sorted_by_bytes() -> None:
    """§2.3 "map[string]Column → keys sorted by byte order"; §1.5 "Z" < "a"."""
    info = table(col("a", 3, 1), col("Z", 3, 1), col("_", 3, 1), col("é", 3, 1), col("\U0001f600", 3, 1),
                 col("\uffff", 3, 1))
    _, value = open_one(row(info, {"id": 1, "a": 1, "Z": 2, "_": 3, "é": 4, "\U0001f600": 5, "\uffff": 6}))
    names = list(json.loads(value)["u"])
    assert names == ["Z", "_", "a", "id", "é", "\uffff", "\U0001f600"]
    assert sorted(n.encode() for n in names) == [n.encode() for n in names]


def test_open_column_object_struct_order_and_h() -> None:
    """§2.3 Column object {"t","h":true (only if HandleKey),"f","v"}; "v" kept for NULL."""
    info = table(col("val", 15, 64))
    _, value = open_one(row(info, {"id": 1, "val": None}))
    assert value == '{"u":{' + ID_JSON + ',"val":{"t":15,"f":64,"v":null}}}'


@pytest.mark.parametrize(("type_code", "flags", "value", "rendered"), [
    # §2.3 "ints, YEAR, ENUM, SET, BIT | JSON integer (uint64 full range)"
    (1, 1, -128, "-128"),
    (8, 0x81, MAX_U64, "18446744073709551615"),
    (8, 1, -(2**63), "-9223372036854775808"),
    (13, 0x81, 2020, "2020"),
    (247, 0, 1, "1"),
    (248, 0, 3, "3"),
    (16, 0x81, 81, "81"),
    # §2.3 FLOAT float32 JSON number (3.14), DOUBLE float64; exponent only ≥1e21 or <1e-6
    (4, 1, 3.14, "3.14"),
    (4, 1, 153.123, "153.123"),
    (5, 1, 153.123, "153.123"),
    (5, 1, 1e21, "1e+21"),
    (5, 1, 1e20, "100000000000000000000"),
    (5, 1, 1e-7, "1e-7"),
    (5, 1, 0.000001, "0.000001"),
    (5, 1, 1.5, "1.5"),
    (5, 1, 2.0, "2"),
    (4, 1, 16777217.0, "16777216"),  # the float32 nearest
    (5, 1, 1.7976931348623157e308, "1.7976931348623157e+308"),
    (5, 1, 123456789012345678.0, "123456789012345680"),
    # §2.3 "DECIMAL, DATE/TIME/DATETIME/TIMESTAMP, JSON, VECTOR | JSON string"
    (246, 1, "129012.1230000", '"129012.1230000"'),
    (10, 1, "2000-01-01", '"2000-01-01"'),
    (7, 1, "1973-12-30 15:30:00", '"1973-12-30 15:30:00"'),
    (11, 1, "-23:59:59.5", '"-23:59:59.5"'),
    (12, 1, "2015-12-20 23:58:58.123", '"2015-12-20 23:58:58.123"'),
    (245, 1, '{"key1": "value1"}', '"{\\"key1\\": \\"value1\\"}"'),
    (225, 1, "[1,2,3]", '"[1,2,3]"'),
    # §2.3 CHAR/VARCHAR non-binary: JSON string of the raw bytes; §1.5 escaping
    (15, 0, b"test", '"test"'),
    (254, 0, b"<a>&", '"\\u003ca\\u003e\\u0026"'),
    (253, 0, b"\x08\x0c\n\r\t\"\\", '"\\b\\f\\n\\r\\t\\"\\\\"'),
    (15, 0, b"\x01\x1f\x7f", '"\\u0001\\u001f\x7f"'),
    (15, 0, "\u2028\u2029é".encode(), '"\\u2028\\u2029é"'),
    (15, 0, b"a\xffb", '"a\\ufffdb"'),  # invalid UTF-8 → \ufffd
    # §2.3 BinaryFlag CHAR/VARCHAR: strconv.Quote without quotes, then JSON-encoded
    (15, 1, bytes.fromhex("89504E470D0A1A0A"), '"\\\\x89PNG\\\\r\\\\n\\\\x1a\\\\n"'),
    (254, 1, b"\x07\x0b\x00\xff", '"\\\\a\\\\v\\\\x00\\\\xff"'),
    (254, 1, "测\"'\\".encode(), '"测\\\\\\"\'\\\\\\\\"'),
    (253, 1, "\u00ad\u2028<".encode(), '"\\\\u00ad\\\\u2028\\u003c"'),
    # §2.3 TINYBLOB…LONGBLOB and …TEXT: base64 std padded
    (252, 0, "测试text".encode(), '"5rWL6K+VdGV4dA=="'),
    (249, 1, b"\xff", '"/w=="'),
    (250, 1, b"", '""'),
    (251, 1, b"ab", '"YWI="'),
    # §2.3 NULL → null
    (15, 0, None, "null"),
])
def test_open_value_rendering(type_code: int, flags: int, value: Value, rendered: str) -> None:
    """§2.3 value rendering table (and §1.5 for strings/floats)."""
    info = table(col("c", type_code, flags))
    _, text = open_one(row(info, {"id": 1, "c": value}))
    assert text == '{"u":{"c":{"t":' + f'{type_code},"f":{flags},"v":{rendered}' + "}," + ID_JSON + "}}"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_open_nan_and_inf_are_zero(bad: float) -> None:
    """§1.1 FLOAT/DOUBLE "NaN/±Inf replaced by 0"."""
    info = table(col("f", 4, 1), col("d", 5, 1))
    _, text = open_one(row(info, {"id": 1, "f": bad, "d": bad}))
    assert text == '{"u":{"d":{"t":5,"f":1,"v":0},"f":{"t":4,"f":1,"v":0},' + ID_JSON + "}}"


def test_open_update_u_then_p_and_old_value_off() -> None:
    """§2.3 UPDATE {"u":{…},"p":{…}}; "p only if open-protocol.output-old-value=true"."""
    info = table(col("val", 15, 64))
    event = row(info, {"id": 1, "val": b"bb"}, {"id": 1, "val": b"aa"})
    u = '"u":{' + ID_JSON + ',"val":{"t":15,"f":64,"v":"bb"}}'
    p = '"p":{' + ID_JSON + ',"val":{"t":15,"f":64,"v":"aa"}}'
    assert open_one(event)[1] == "{" + u + "," + p + "}"
    assert open_one(event, open_output_old_value=False)[1] == "{" + u + "}"


def test_open_only_output_updated_columns() -> None:
    """§2.3 only-output-updated-columns removes from p equal columns; u keeps all; empty p omitted."""
    info = table(col("a", 3, 1), col("b", 252, 1), col("c", 15, 0))
    event = row(info, {"id": 1, "a": 2, "b": b"x", "c": b"y"}, {"id": 1, "a": 3, "b": b"x", "c": b"z"})
    u = ('"u":{"a":{"t":3,"f":1,"v":2},"b":{"t":252,"f":1,"v":"eA=="},"c":{"t":15,"f":0,"v":"y"},'
         + ID_JSON + "}")
    assert open_one(event, only_output_updated_columns=True)[1] == (
        "{" + u + ',"p":{"a":{"t":3,"f":1,"v":3},"c":{"t":15,"f":0,"v":"z"}}}')
    same = row(info, {"id": 1, "a": 2, "b": b"x", "c": None}, {"id": 1, "a": 2, "b": b"x", "c": None})
    text = open_one(same, only_output_updated_columns=True)[1]
    assert text == '{"u":{"a":{"t":3,"f":1,"v":2},"b":{"t":252,"f":1,"v":"eA=="},"c":{"t":15,"f":0,"v":null},' \
        + ID_JSON + "}}"
    # nil equals only nil
    null_vs_value = row(info, {"id": 1, "a": None, "b": b"x", "c": None}, {"id": 1, "a": 0, "b": b"x", "c": None})
    assert open_one(null_vs_value, only_output_updated_columns=True)[1].endswith(',"p":{"a":{"t":3,"f":1,"v":0}}}')


def test_open_delete_all_columns_or_handle_key_only() -> None:
    """§2.3 DELETE {"d":{…}} all columns by default; only HandleKey with delete-only-output-handle-key-columns."""
    info = table(col("val", 15, 64))
    event = row(info, None, {"id": 1, "val": b"aa"})
    assert open_one(event)[1] == '{"d":{' + ID_JSON + ',"val":{"t":15,"f":64,"v":"aa"}}}'
    assert open_one(event, delete_only_output_handle_key_columns=True)[1] == '{"d":{' + ID_JSON + "}}"


def test_open_decoder_reads_per_type() -> None:
    """§2.3 decoder side: UseNumber, signedness from 0x80, blobs base64-decoded, binary strings Unquoted."""
    value = ('{"u":{"b":{"t":15,"f":1,"v":"\\\\x89PNG"},"bl":{"t":252,"f":1,"v":"/w=="},'
             '"d":{"t":5,"f":1,"v":1e+21},"s":{"t":15,"f":0,"v":"a\\u003c"},'
             '"u":{"t":8,"f":129,"v":18446744073709551615},"i":{"t":8,"f":1,"v":-5},'
             '"n":{"t":15,"f":64,"v":null}}}')
    key = '{"ts":1,"scm":"s","tbl":"t","rid":9,"ptn":4,"t":1}'
    (event,) = open_protocol.decode(framed_value(value), framed_key(key))
    assert isinstance(event, RowChange)
    assert event.op is Op.INSERT and event.commit_ts == 1 and event.row_id == 9
    assert event.physical_table_id == 4
    assert event.columns == {"b": b"\x89PNG", "bl": b"\xff", "d": 1e21, "s": b"a<", "u": MAX_U64, "i": -5,
                             "n": None}
    (event,) = open_protocol.decode(framed_value('{"d":{"id":{"t":3,"h":true,"f":11,"v":1}}}'), framed_key(key))
    assert isinstance(event, RowChange) and event.op is Op.DELETE and event.pre_columns == {"id": 1}
    (event,) = open_protocol.decode(
        framed_value('{"u":{"id":{"t":3,"f":11,"v":2}},"p":{"id":{"t":3,"f":11,"v":1}}}'), framed_key(key))
    assert isinstance(event, RowChange)
    assert event.op is Op.UPDATE and event.columns == {"id": 2} and event.pre_columns == {"id": 1}


# =========================================================================== Open §2.4 batching
def _batch_rows() -> tuple[list[RowChange], int, int]:
    info = table(col("val", 15, 64))
    events = [row(info, {"id": 1, "val": b"x" * n}) for n in (1, 2, 3)]
    key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1}'
    values = ['{"u":{' + ID_JSON + ',"val":{"t":15,"f":64,"v":"' + "x" * n + '"}}}' for n in (1, 2, 3)]
    return events, len(key), len(values[0])


def test_open_batching_size_condition_exact_boundary() -> None:
    """§2.4 new message iff cur.Length() + len(key) + len(value) + 16 > max-message-bytes,
    cur.Length() = 8 (version) + Σ(16 + k + v) + 36."""
    events, klen, v1 = _batch_rows()
    v2 = v1 + 1
    # message after row 1: 8 + 36 + 16 + klen + v1; row 2 joins iff that + klen + v2 + 16 <= max
    joined = 8 + 36 + 16 + klen + v1 + klen + v2 + 16
    messages = open_protocol.encode(events[:2], max_message_bytes=joined)
    assert [len(m.events) for m in messages] == [2]
    assert messages[0].key is not None and messages[0].value is not None
    assert len(messages[0].key) + len(messages[0].value) + 36 == joined  # Message.Length() (§1.4)
    messages = open_protocol.encode(events[:2], max_message_bytes=joined - 1)
    assert [len(m.events) for m in messages] == [1, 1]


def test_open_single_event_size_check() -> None:
    """§2.4 per event length = len(key)+len(value)+36+16+8; > max-message-bytes → ErrMessageTooLarge."""
    events, klen, v1 = _batch_rows()
    limit = klen + v1 + 36 + 16 + 8
    assert len(open_protocol.encode(events[:1], max_message_bytes=limit)) == 1
    with pytest.raises(EncodeError):
        open_protocol.encode(events[:1], max_message_bytes=limit - 1)


def test_open_max_batch_size() -> None:
    """§2.4 new message iff rows in current message >= max-batch-size (default 16)."""
    info = table()
    events = [row(info, {"id": 1}) for _ in range(35)]
    assert [len(m.events) for m in open_protocol.encode(events)] == [16, 16, 3]
    assert [len(m.events) for m in open_protocol.encode(events[:5], max_batch_size=2)] == [2, 2, 1]
    # the key frames of one message: version once, then each length‖key (§2.1)
    message = open_protocol.encode(events[:2], max_batch_size=2)[0]
    key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1}'
    assert message.key == framed_key(key, key)
    assert message.value == framed_value('{"u":{' + ID_JSON + "}}", '{"u":{' + ID_JSON + "}}")


# =========================================================================== Open §8 large messages
def _large() -> tuple[RowChange, int]:
    info = table(col("val", 15, 64))
    event = row(info, {"id": 1, "val": b"a" * 200})
    return event, 200


def test_open_handle_key_only() -> None:
    """§8 handle-key-only: re-encode with HandleKey columns + key "ohk":true; still too large → error."""
    event, _ = _large()
    key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1,"ohk":true}'
    value = '{"u":{' + ID_JSON + "}}"
    limit = len(key) + len(value) + 60
    (message,) = open_protocol.encode([event], max_message_bytes=limit, large_message_handle_option="handle-key-only")
    assert message.key == framed_key(key)
    assert message.value == framed_value(value)
    with pytest.raises(EncodeError):
        open_protocol.encode([event], max_message_bytes=limit - 1, large_message_handle_option="handle-key-only")
    # Tables with no handle key → error for Open
    info = TableInfo(schema="test", table="t1", columns=(col("val", 15, 64),))
    no_handle = row(info, {"val": b"a" * 200})
    with pytest.raises(EncodeError):
        open_protocol.encode([no_handle], max_message_bytes=100, large_message_handle_option="handle-key-only")


def test_open_handle_key_only_update_and_delete() -> None:
    """§8 handle-key-only applies to every image (u, p, d)."""
    info = table(col("val", 15, 64))
    update = row(info, {"id": 1, "val": b"b" * 200}, {"id": 1, "val": b"a" * 200})
    (message,) = open_protocol.encode([update], max_message_bytes=300, large_message_handle_option="handle-key-only")
    assert message.value == framed_value('{"u":{' + ID_JSON + '},"p":{' + ID_JSON + "}}")
    delete = row(info, None, {"id": 1, "val": b"a" * 300})
    (message,) = open_protocol.encode([delete], max_message_bytes=300, large_message_handle_option="handle-key-only")
    assert message.value == framed_value('{"d":{' + ID_JSON + "}}")


def test_open_claim_check() -> None:
    """§8 claim-check: stored key/value are the framed single-event key and value; the location
    message key carries "ccl" (ohk omitted) and the value the handle-key columns."""
    event, _ = _large()
    store = MemoryClaimCheck("file:///cc", "open-protocol")
    encoder = open_protocol.Encoder({"max_message_bytes": 300, "large_message_handle_option": "claim-check",
                                     "claim_check_storage_uri": "file:///cc"}, claim_check=store)
    (message,) = encoder.encode([event])
    (location,) = store.stored
    full_key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1}'
    full_value = '{"u":{' + ID_JSON + ',"val":{"t":15,"f":64,"v":"' + "a" * 200 + '"}}}'
    assert store.stored[location] == (framed_key(full_key), framed_value(full_value))
    loc_key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1,"ccl":"' + location + '"}'
    assert message.key == framed_key(loc_key)
    assert message.value == framed_value('{"u":{' + ID_JSON + "}}")
    # the decoder reads the stored message back (§8 consumer)
    decoder = open_protocol.Decoder({"large_message_handle_option": "claim-check"}, claim_check=store)
    (decoded,) = decoder.decode(message.value, message.key)
    assert isinstance(decoded, RowChange) and decoded.columns == {"id": 1, "val": b"a" * 200}


@pytest.mark.parametrize("method", ["snappy", "lz4"])
def test_open_compression_applies_to_each_value(method: str) -> None:
    """§1.4 compression "applied to the value only (Open: each per-event value)"; lengths frame the
    compressed bytes, the key stays plain JSON."""
    info = table()
    events = [row(info, {"id": 1}), row(info, {"id": 1})]
    (message,) = open_protocol.encode(events, large_message_handle_compression=method)
    key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1}'
    assert message.key == framed_key(key, key)
    assert message.value is not None
    position, plain = 0, []
    while position < len(message.value):
        (length,) = U64.unpack_from(message.value, position)
        plain.append(decompress(method, message.value[position + 8:position + 8 + length], "open-protocol"))
        position += 8 + length
    assert plain == [('{"u":{' + ID_JSON + "}}").encode()] * 2


def test_open_rows_with_neither_image_are_dropped() -> None:
    """§1.3 "Rows with neither image are dropped" (TrySplitAndSortUpdateEvent: len(cols)==0 && len(pre)==0),
    so they never reach the encoder and do not take part in batching."""
    info = table()
    empty = RowChange(op=Op.INSERT, schema="test", table="t1", commit_ts=1, table_info=info)
    also_empty = RowChange(op=Op.UPDATE, schema="test", table="t1", commit_ts=1, columns=Row({}),
                           pre_columns=Row({}), table_info=info)
    assert open_protocol.encode([empty, also_empty]) == []
    messages = open_protocol.encode([row(info, {"id": 1}), empty, row(info, {"id": 1})], max_batch_size=2)
    assert [len(m.events) for m in messages] == [2]
    assert open_protocol.Encoder().project(empty) is None


def test_open_handle_key_only_value_is_compressed_and_size_checked_compressed() -> None:
    """§1.4 compression applies to every Open value, so §8's size check sees the compressed value
    (length = len(key) + len(compressed value) + 36 + 16 + 8)."""
    # incompressible text, so the compressed full message stays too large
    noise = b"".join(hashlib.sha256(bytes([i])).hexdigest().encode() for i in range(10))
    event = row(table(col("val", 15, 64)), {"id": 1, "val": noise})
    key = '{"ts":415508878783938562,"scm":"test","tbl":"t1","rid":1,"t":1,"ohk":true}'
    (message,) = open_protocol.encode([event], max_message_bytes=250, large_message_handle_option="handle-key-only",
                                      large_message_handle_compression="lz4")
    assert message.key == framed_key(key)
    assert message.value is not None
    (length,) = U64.unpack_from(message.value, 0)
    assert len(message.value) == 8 + length
    assert decompress("lz4", message.value[8:], "open-protocol") == ('{"u":{' + ID_JSON + "}}").encode()


def test_open_decoder_numbers_and_ddl() -> None:
    """§2.3 decoder: numbers read with UseNumber (a DOUBLE written positionally reads as its float);
    §2.1 DDL value {"q","t"} with key t=2; resolved key t=3 with the 8-zero-byte value."""
    key = '{"ts":3,"scm":"s","tbl":"t","t":1}'
    value = '{"u":{"d":{"t":5,"f":1,"v":100000000000000000000},"y":{"t":13,"f":129,"v":2020}}}'
    (event,) = open_protocol.decode(framed_value(value), framed_key(key))
    assert isinstance(event, RowChange) and event.columns == {"d": 1e20, "y": 2020}
    (ddl,) = open_protocol.decode(framed_value('{"q":"create table t","t":3}'),
                                  framed_key('{"ts":9,"scm":"s","tbl":"t","t":2}'))
    assert isinstance(ddl, DDLEvent) and (ddl.query, ddl.ddl_type, ddl.commit_ts, ddl.schema, ddl.table) == (
        "create table t", 3, 9, "s", "t")
    assert open_protocol.decode(b"\x00" * 8, framed_key('{"ts":7,"t":3}')) == [Watermark(resolved_ts=7)]


@pytest.mark.parametrize(("char", "quoted"), [
    ("\U00031350", "\U00031350"),  # CJK Ext H, assigned in Unicode 15.0: printable for Go 1.25
    ("\u0cf3", "\u0cf3"),  # Kannada sign, Unicode 15.0
    ("\U0001fa75", "\U0001fa75"),  # emoji, Unicode 15.0
    ("\u2ffc", "\\\\u2ffc"),  # Unicode 15.1: unassigned in Go's 15.0 tables → escaped
    ("\U0002ebf0", "\\\\U0002ebf0"),  # CJK Ext I (15.1)
    ("\u00a0", "\\\\u00a0"),  # Zs other than ASCII space is not printable
    ("\U000e0001", "\\\\U000e0001"),  # Cf
])
def test_open_binary_quote_uses_go_unicode_tables(char: str, quoted: str) -> None:
    """§2.3 BinaryFlag strings: strconv.Quote — "printable Unicode kept", others \\uXXXX / \\UXXXXXXXX;
    IsPrint as of Go 1.25 (§0: Go 1.25 → Unicode 15.0.0), whatever Unicode version Python has."""
    info = table(col("b", 15, 1))
    _, text = open_one(row(info, {"id": 1, "b": char.encode()}))
    assert text == '{"u":{"b":{"t":15,"f":1,"v":"' + quoted + '"},' + ID_JSON + "}}"
