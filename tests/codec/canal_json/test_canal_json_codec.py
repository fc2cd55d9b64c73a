"""Canal-JSON codec: wire shape (reference §4), options, large messages, round trips and bad input."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
from builders import column as col
from builders import columns_of, row_of, table
from pyticdc.codec import canal_json as cj
from pyticdc.codec.canal_json.message import canal_ddl_type, ddl_action_type
from pyticdc.codec.canal_json.values import format_double, format_float
from pyticdc.codec.jsontext import float32_round, go_string
from pyticdc.errors import ConfigError, DecodeError, EncodeError
from pyticdc.model import (
    ActionType,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)
from pyticdc.vectors import check_file
from strategies import row_changes, tables

F = ColumnFlag
NOW = 1_700_000_000_000
# The docs' example commit TSO (es = TS >> 18 = 1640007049196, the expected texts below use it).
TS = 429918007904436226


def clock() -> int:
    return NOW


ID = col("id", 3, F.PRIMARY_KEY | F.HANDLE_KEY, flen=11, decimal=0, nullable=False)


def insert(info: TableInfo, values: dict[str, Any], commit_ts: int = TS) -> RowChange:
    return builders.insert(info, values, commit_ts)


def update(info: TableInfo, post: dict[str, Any], pre: dict[str, Any], commit_ts: int = TS) -> RowChange:
    return builders.update(info, post, pre, commit_ts)


def delete(info: TableInfo, pre: dict[str, Any], commit_ts: int = TS) -> RowChange:
    return builders.delete(info, pre, commit_ts)


def encode_one(event: Any, **options: Any) -> bytes:
    messages = cj.Encoder(options, clock=clock).encode([event])
    assert len(messages) == 1
    assert messages[0].key is None  # Canal-JSON's Kafka key is nil (§4.1)
    assert messages[0].events == (event,)
    value = messages[0].value
    assert value is not None
    return value


def round_trip(event: Any, **options: Any) -> Any:
    [decoded] = cj.Decoder(options).decode(encode_one(event, **options))
    return decoded


class MemoryStore:
    """A ClaimCheckStore keeping messages in a dict."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[bytes | None, bytes]] = {}

    def put(self, key: bytes | None, value: bytes) -> str:
        location = f"file:///claims/{len(self.items)}.json"
        self.items[location] = (key, value)
        return location

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        if location not in self.items:
            raise DecodeError("claim-check", f"no stored message at {location!r}")
        return self.items[location]


# --------------------------------------------------------------------------- vectors
@pytest.mark.parametrize("name", ["canal_json.json", "canal_json_types.json"])
def test_vector_files_pass(vectors_dir: Path, name: str) -> None:
    results = check_file(vectors_dir / name)
    assert results
    assert [f"{r.name}: {r.reason}" for r in results if not r.passed] == []


# --------------------------------------------------------------------------- wire shape (§4.1)
def test_insert_message_layout_without_primary_key() -> None:
    info = table(col("a", 3, F.NULLABLE, flen=11, decimal=0), col("b", 15, F.NULLABLE, text=True, flen=8))
    value = encode_one(insert(info, {"a": 1, "b": b"x"}))
    # §4.1 field order; pkNames [] (not null) when there is no PK; id 0, sql "", es = ts >> 18.
    assert value == (
        b'{"id":0,"database":"test","table":"t","pkNames":[],"isDdl":false,"type":"INSERT",'
        b'"es":1640007049196,"ts":1700000000000,"sql":"","sqlType":{"a":4,"b":12},'
        b'"mysqlType":{"a":"int","b":"varchar"},"old":null,"data":[{"a":"1","b":"x"}]}'
    )


def test_update_puts_old_before_data_and_tidb_extension_last() -> None:
    info = table(ID, col("v", 3, F.NULLABLE))
    value = encode_one(update(info, {"id": 1, "v": 2}, {"id": 1, "v": 3}), enable_tidb_extension=True)
    assert value.endswith(b'"old":[{"id":"1","v":"3"}],"data":[{"id":"1","v":"2"}],'
                          b'"_tidb":{"commitTs":429918007904436226}}')
    assert b'"pkNames":["id"],"isDdl":false,"type":"UPDATE"' in value


def test_delete_carries_pre_image_in_data() -> None:
    info = table(ID, col("v", 3, F.NULLABLE))
    value = encode_one(delete(info, {"id": 1, "v": 3}))
    assert b'"type":"DELETE"' in value
    assert value.endswith(b'"old":null,"data":[{"id":"1","v":"3"}]}')


def test_strings_use_easyjson_escaping() -> None:
    info = table(ID, col("s", 15, F.NULLABLE, text=True))
    text = 'a<b>&"\\\t\n\r\b\f\x01é\u2028\u2029😀'
    value = encode_one(insert(info, {"id": 1, "s": text.encode()}))
    # easyjson: HTML characters and U+2028/2029 escaped, \b and \f as \u0008/\u000c (§1.5).
    wire = '"a\\u003cb\\u003e\\u0026\\"\\\\\\t\\n\\r\\u0008\\u000c\\u0001é\\u2028\\u2029😀"'
    assert f'"s":{wire}'.encode() in value
    assert columns_of(cj.Decoder().decode(value)[0])["s"] == text.encode()


def test_binary_bytes_map_to_latin1_code_points() -> None:
    info = table(ID, col("b", 15, F.NULLABLE, flen=256))
    data = bytes(range(256))
    value = encode_one(insert(info, {"id": 1, "b": data}))
    expected = []
    for byte in data:  # easyjson rules for each ISO-8859-1 character (§4.2, §1.5)
        char = chr(byte)
        if char in '"\\':
            expected.append("\\" + char)
        elif char in "\t\n\r":
            expected.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[char])
        elif byte < 0x20 or char in "<>&":
            expected.append(f"\\u{byte:04x}")
        else:
            expected.append(char)
    assert ('"b":"' + "".join(expected) + '"').encode() in value
    assert columns_of(cj.Decoder().decode(value)[0])["b"] == data


def test_invalid_utf8_in_text_becomes_replacement_escape() -> None:
    info = table(ID, col("s", 252, F.NULLABLE, text=True))
    value = encode_one(insert(info, {"id": 1, "s": b"a\xffb\xe2\x82"}))
    assert b'"s":"a\\ufffdb\\ufffd\\ufffd"' in value  # one \ufffd per invalid byte, as Go writes it
    assert columns_of(cj.Decoder().decode(value)[0])["s"] == "a\ufffdb\ufffd\ufffd".encode()


def test_null_and_empty_string_stay_distinct() -> None:
    info = table(ID, col("s", 15, F.NULLABLE, text=True), col("b", 252, F.NULLABLE))
    value = encode_one(insert(info, {"id": 1, "s": b"", "b": None}))
    assert b'"s":"","b":null' in value
    assert round_trip(insert(info, {"id": 1, "s": b"", "b": None})).columns == {"id": 1, "s": b"", "b": None}
    assert round_trip(insert(info, {"id": 1, "s": None, "b": b""})).columns == {"id": 1, "s": None, "b": b""}


def test_floats_are_printed_without_exponent() -> None:
    info = table(ID, col("f", 4, F.NULLABLE), col("d", 5, F.NULLABLE))
    value = encode_one(insert(info, {"id": 1, "f": float32_round(3.14), "d": 1e21}))
    assert b'"f":"3.14","d":"1000000000000000000000"' in value
    value = encode_one(insert(info, {"id": 1, "f": float32_round(1e-7), "d": 1e-7}))
    assert b'"f":"0.0000001","d":"0.0000001"' in value
    decoded = columns_of(cj.Decoder().decode(value)[0])
    assert decoded["f"] == float32_round(1e-7)
    assert decoded["d"] == 1e-7


def test_enum_set_bit_year_travel_as_numbers() -> None:
    info = table(ID, col("e", 247, F.NULLABLE, text=True, elems=("a", "b")),
                 col("s", 248, F.NULLABLE, text=True, elems=("a", "b")),
                 col("bit", 16, F.NULLABLE | F.UNSIGNED, flen=64, unsigned=True),
                 col("y", 13, F.NULLABLE | F.UNSIGNED, unsigned=True, zerofill=True))
    event = insert(info, {"id": 1, "e": 2, "s": 3, "bit": 2**64 - 1, "y": 2020})
    value = encode_one(event)
    assert b'"e":"2","s":"3","bit":"18446744073709551615","y":"2020"' in value
    assert b'"sqlType":{"id":4,"e":4,"s":-7,"bit":-7,"y":12}' in value
    assert round_trip(event).columns == event.columns


@settings(max_examples=400)
@given(single=st.floats(width=32, allow_nan=False, allow_infinity=False), double=st.floats())
def test_fast_float_text_matches_go_format_f(single: float, double: float) -> None:
    # The encoder's float renderers are shortcuts of jsontext.format_float_f (Go 'f', -1).
    from pyticdc.codec.jsontext import format_float_f

    assert format_float(single) == format_float_f(single, 32)
    assert format_double(double) == format_float_f(double, 64)


@pytest.mark.parametrize(("type_code", "value", "java"), [
    (1, 127, -6), (1, 128, 5), (2, 32767, 5), (2, 32768, 4), (9, 8388608, 4), (3, 2147483647, 4),
    (3, 2147483648, -5), (8, 2**63 - 1, -5), (8, 2**63, 3), (8, None, -5),
])
def test_unsigned_integers_promote_sql_type_by_value(type_code: int, value: int | None, java: int) -> None:
    info = table(ID, col("u", type_code, F.NULLABLE | F.UNSIGNED, unsigned=True))
    envelope = orjson.loads(encode_one(insert(info, {"id": 1, "u": value})))
    assert envelope["sqlType"]["u"] == java


def test_mysql_type_names_and_content_compatible_descriptions() -> None:
    columns = (
        ID,
        col("zf", 3, F.NULLABLE | F.UNSIGNED, unsigned=True, zerofill=True, flen=10, decimal=0),
        col("vb", 15, F.NULLABLE, flen=23),
        col("bn", 254, F.NULLABLE, flen=10),
        col("tb", 249, F.NULLABLE),
        col("tt", 249, F.NULLABLE, text=True),
        col("dec", 246, F.NULLABLE, flen=10, decimal=0),
        col("fl", 4, F.NULLABLE, flen=10, decimal=3),
        col("en", 247, F.NULLABLE, text=True, elems=("a", "it's")),
        col("dt", 12, F.NULLABLE, decimal=3),
        col("desc", 3, F.NULLABLE, type_desc="int(7)"),
    )
    info = table(*columns)
    row = {c.name: None for c in columns} | {"id": 1}
    plain = orjson.loads(encode_one(insert(info, row)))["mysqlType"]
    assert plain == {"id": "int", "zf": "int unsigned zerofill", "vb": "varbinary", "bn": "binary",
                     "tb": "tinyblob", "tt": "tinytext", "dec": "decimal", "fl": "float", "en": "enum",
                     "dt": "datetime", "desc": "int"}
    full = orjson.loads(encode_one(insert(info, row), content_compatible=True))["mysqlType"]
    # TiDB GetTypeDesc (§4.3): computed from flen/decimal/elems unless type_desc is given.
    assert full == {"id": "int(11)", "zf": "int(10) unsigned zerofill", "vb": "varbinary(23)", "bn": "binary(10)",
                    "tb": "tinyblob", "tt": "tinytext", "dec": "decimal(10,0)", "fl": "float(10,3)",
                    "en": "enum('a','it''s')", "dt": "datetime(3)", "desc": "int(7)"}


def test_only_output_updated_columns_and_content_compatible_trim_old() -> None:
    info = table(ID, col("a", 3, F.NULLABLE), col("b", 15, F.NULLABLE, text=True))
    event = update(info, {"id": 1, "a": 2, "b": b"same"}, {"id": 1, "a": 1, "b": b"same"})
    for options in ({"only_output_updated_columns": True}, {"content_compatible": True}):
        value = encode_one(event, **options)
        assert b'"old":[{"a":"1"}],"data":[{"id":"1","a":"2","b":"same"}]' in value
        decoded = row_of(cj.Decoder(options).decode(value)[0])
        assert decoded.pre_columns == {"id": 1, "a": 1, "b": b"same"}
        assert decoded.columns == event.columns
    assert b'"old":[{"id":"1","a":"1","b":"same"}]' in encode_one(event)


def test_delete_only_output_handle_key_columns() -> None:
    info = table(ID, col("a", 3, F.NULLABLE))
    event = delete(info, {"id": 5, "a": 9})
    value = encode_one(event, delete_only_output_handle_key_columns=True)
    assert b'"sqlType":{"id":4},"mysqlType":{"id":"int"},"old":null,"data":[{"id":"5"}]' in value
    for options in ({}, {"delete_only_output_handle_key_columns": True}):
        decoded = row_of(cj.Decoder(options).decode(value)[0])
        assert decoded.pre_columns == {"id": 5}
        assert decoded.handle_key_only
    assert not round_trip(event).handle_key_only


# --------------------------------------------------------------------------- large messages (§8)
def big_row() -> tuple[TableInfo, RowChange]:
    info = table(ID, col("blob", 252, F.NULLABLE))
    noise = random.Random(1).randbytes(2000)  # incompressible, so compression cannot make it fit
    return info, insert(info, {"id": 3, "blob": noise})


def test_handle_key_only_large_message() -> None:
    _, event = big_row()
    options = {"enable_tidb_extension": True, "large_message_handle_option": "handle-key-only",
               "max_message_bytes": 1000}
    value = encode_one(event, **options)
    assert len(value) + 36 <= 1000
    envelope = orjson.loads(value)
    assert envelope["data"] == [{"id": "3"}]
    assert envelope["_tidb"] == {"commitTs": TS, "onlyHandleKey": True}
    decoded = row_of(cj.Decoder(options).decode(value)[0])
    assert decoded.handle_key_only and decoded.columns == {"id": 3}
    assert cj.Encoder(options, clock=clock).project(event) == decoded
    with pytest.raises(EncodeError):
        cj.Encoder({**options, "max_message_bytes": 100}).encode([event])


def test_too_large_without_handling_fails() -> None:
    _, event = big_row()
    with pytest.raises(EncodeError, match="max-message-bytes"):
        cj.Encoder(max_message_bytes=1000).encode([event])


def test_large_message_handling_needs_tidb_extension() -> None:
    with pytest.raises(ConfigError, match="enable-tidb-extension"):
        cj.Encoder(large_message_handle_option="handle-key-only")
    with pytest.raises(ConfigError):
        cj.Encoder(enable_tidb_extension=True, large_message_handle_option="claim-check")


def test_claim_check_stores_full_message_and_sends_location() -> None:
    _, event = big_row()
    store = MemoryStore()
    options = {"enable_tidb_extension": True, "large_message_handle_option": "claim-check",
               "max_message_bytes": 1000, "large_message_handle_compression": "lz4"}
    [message] = cj.Encoder(options, clock=clock, claim_check=store).encode([event])
    [(location, (key, stored))] = store.items.items()
    assert key is None
    full = row_of(cj.Decoder(options).decode(stored)[0])  # the stored value is the original message
    assert full.columns == event.columns
    decoder = cj.Decoder(options)
    located = row_of(decoder.decode(message.value)[0])
    assert located.columns == {"id": 3} and located.handle_key_only
    assert located.claim_check_location == location
    resolved = row_of(cj.Decoder(options, claim_check=store).decode(message.value)[0])
    assert resolved.columns == event.columns and not resolved.handle_key_only
    assert resolved.claim_check_location == location


def test_claim_check_missing_object_is_a_canal_decode_error() -> None:
    _, event = big_row()
    options = {"enable_tidb_extension": True, "large_message_handle_option": "claim-check",
               "max_message_bytes": 1000}
    [message] = cj.Encoder(options, claim_check=MemoryStore()).encode([event])
    with pytest.raises(DecodeError) as caught:
        cj.Decoder(options, claim_check=MemoryStore()).decode(message.value)
    assert caught.value.protocol == "canal-json" and caught.value.at == "$._tidb.claimCheckLocation"


@pytest.mark.parametrize("raw_value", [False, True])
def test_claim_check_through_a_file_store(tmp_path: Path, raw_value: bool) -> None:
    from pyticdc.routing.claimcheck import FileClaimCheckStore

    _, event = big_row()
    uri = f"file://{tmp_path}"
    options = {"enable_tidb_extension": True, "large_message_handle_option": "claim-check",
               "claim_check_storage_uri": uri, "claim_check_raw_value": raw_value, "max_message_bytes": 1000}
    store = FileClaimCheckStore(uri, raw_value=raw_value)
    [message] = cj.Encoder(options, claim_check=store).encode([event])
    location = orjson.loads(message.value or b"")["_tidb"]["claimCheckLocation"]
    assert location.startswith(uri + "/") and location.endswith(".json")
    stored = (tmp_path / location.rsplit("/", 1)[1]).read_bytes()
    assert stored.startswith(b'{"id":0,') if raw_value else orjson.loads(stored)["key"] is None
    [decoded] = cj.Decoder(options, claim_check=store).decode(message.value)
    assert isinstance(decoded, RowChange)
    assert decoded.columns == event.columns and decoded.claim_check_location == location


@settings(max_examples=60)
@given(rows=row_changes(max_rows=3), limit=st.integers(250, 700))
def test_handle_key_only_round_trip_equals_projection(rows: list[RowChange], limit: int) -> None:
    options = {"enable_tidb_extension": True, "large_message_handle_option": "handle-key-only",
               "max_message_bytes": limit}
    encoder = cj.Encoder(options, clock=clock)
    decoder = cj.Decoder(options)
    for row in rows:
        try:
            [message] = encoder.encode([row])
        except EncodeError:
            continue  # even the handle-key-only message is over the limit
        [decoded] = decoder.decode(message.value)
        assert decoded == encoder.project(row)
        assert isinstance(decoded, RowChange)
        if decoded.handle_key_only:
            assert set(decoded.columns or decoded.pre_columns or {}) == {"id"}  # the table's handle key


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_compressed_messages_round_trip(compression: str) -> None:
    info = table(ID, col("s", 15, F.NULLABLE, text=True))
    options = {"large_message_handle_compression": compression, "enable_tidb_extension": True}
    events: list[Event] = [insert(info, {"id": 1, "s": b"abc" * 50}),
                           DDLEvent(query="drop table t", ddl_type=4, commit_ts=TS), Watermark(resolved_ts=TS)]
    decoder = cj.Decoder(options)
    for message, event in zip(cj.Encoder(options).encode(events), events):
        assert message.value is not None and not message.value.startswith(b"{")
        [decoded] = decoder.decode(message.value)
        if isinstance(event, Watermark):
            assert decoded == event
        else:
            assert isinstance(decoded, (RowChange, DDLEvent)) and isinstance(event, (RowChange, DDLEvent))
            assert decoded.commit_ts == event.commit_ts
        assert cj.explain(message.value)["id"] == 0


# --------------------------------------------------------------------------- DDL and watermark (§4.5)
def test_ddl_message_is_a_struct_marshal() -> None:
    ddl = DDLEvent(query="create table t (a int) comment '<x>'", ddl_type=3, commit_ts=TS, schema="test", table="t")
    value = encode_one(ddl, enable_tidb_extension=True)
    assert value == (
        b'{"id":0,"database":"test","table":"t","pkNames":null,"isDdl":true,"type":"CREATE",'
        b'"es":1640007049196,"ts":1700000000000,"sql":"create table t (a int) comment \'\\u003cx\\u003e\'",'
        b'"sqlType":null,"mysqlType":null,"data":null,"old":null,"_tidb":{"commitTs":429918007904436226}}'
    )
    decoded = cj.Decoder().decode(value)[0]
    assert decoded == DDLEvent(query=ddl.query, ddl_type=3, commit_ts=TS, schema="test", table="t")
    assert b"_tidb" not in encode_one(ddl)
    decoded_ddl = cj.Decoder().decode(encode_one(ddl))[0]
    assert isinstance(decoded_ddl, DDLEvent) and decoded_ddl.commit_ts == (TS >> 18) << 18


@pytest.mark.parametrize(("action", "canal"), [
    (ActionType.CREATE_TABLE, "CREATE"), (ActionType.RENAME_TABLE, "RENAME"), (ActionType.RENAME_TABLES, "RENAME"),
    (ActionType.ADD_INDEX, "CINDEX"), (ActionType.ADD_PRIMARY_KEY, "CINDEX"), (ActionType.DROP_INDEX, "DINDEX"),
    (ActionType.DROP_FOREIGN_KEY, "DINDEX"), (ActionType.ADD_COLUMN, "ALTER"), (ActionType.MODIFY_COLUMN, "ALTER"),
    (ActionType.REORGANIZE_PARTITION, "ALTER"), (ActionType.DROP_TABLE, "ERASE"),
    (ActionType.TRUNCATE_TABLE, "TRUNCATE"), (ActionType.CREATE_SCHEMA, "QUERY"), (ActionType.CREATE_VIEW, "QUERY"),
])
def test_canal_ddl_types(action: ActionType, canal: str) -> None:
    assert canal_ddl_type(action) == canal


@pytest.mark.parametrize(("canal", "query", "action"), [
    ("CREATE", "create table t (a int)", ActionType.CREATE_TABLE),
    ("ALTER", "ALTER TABLE t ADD COLUMN c INT", ActionType.ADD_COLUMN),
    ("ALTER", "alter table t drop column c", ActionType.DROP_COLUMN),
    ("ALTER", "alter table t modify c bigint", ActionType.MODIFY_COLUMN),
    ("ALTER", "alter table t add partition (partition p1 values less than (10))", ActionType.ADD_TABLE_PARTITION),
    ("QUERY", "CREATE DATABASE d", ActionType.CREATE_SCHEMA),
    ("QUERY", "drop schema d", ActionType.DROP_SCHEMA),
    ("QUERY", "create view v as select 1", ActionType.NONE),
])
def test_ddl_action_recovery(canal: str, query: str, action: ActionType) -> None:
    assert ddl_action_type(canal, query) == action


def test_watermark_only_with_extension() -> None:
    assert cj.Encoder().encode([Watermark(resolved_ts=TS)]) == []
    assert cj.Encoder().project(Watermark(resolved_ts=TS)) is None
    value = encode_one(Watermark(resolved_ts=TS), enable_tidb_extension=True)
    assert value == (b'{"id":0,"database":"","table":"","pkNames":null,"isDdl":false,"type":"TIDB_WATERMARK",'
                     b'"es":1640007049196,"ts":1700000000000,"sql":"","sqlType":null,"mysqlType":null,"data":null,'
                     b'"old":null,"_tidb":{"watermarkTs":429918007904436226}}')
    assert cj.Decoder().decode(value) == [Watermark(resolved_ts=TS)]


# --------------------------------------------------------------------------- decoder specifics
LEGACY = (b'{"data":[{"a":"1","b":"x"}],"database":"d","es":1668067229137,"id":0,"isDdl":false,'
          b'"mysqlType":{"a":"int","b":"varchar"},"old":[{"a":"0","b":"x"}],"pkNames":["a"],"sql":"",'
          b'"sqlType":{"a":4,"b":12},"table":"t","ts":1668067230720,"type":"UPDATE"}')


def test_decodes_legacy_sorted_keys_and_derives_schema() -> None:
    [event] = cj.Decoder().decode(LEGACY)
    assert isinstance(event, RowChange)
    assert event.op is Op.UPDATE and event.commit_ts == 1668067229137 << 18
    assert event.columns == {"a": 1, "b": b"x"} and event.pre_columns == {"a": 0, "b": b"x"}
    info = event.table_info
    assert info is not None and info.primary_key_columns == ("a",) and info.handle_key_columns == ("a",)
    assert [(c.name, c.type_code, c.charset) for c in info.columns] == [("a", 3, "binary"), ("b", 15, "utf8mb4")]


def test_decodes_newline_terminated_messages_and_batches() -> None:
    assert len(cj.Decoder().decode(LEGACY + b"\n" + LEGACY + b"\r\n")) == 2
    batch = LEGACY.replace(b'"data":[{"a":"1","b":"x"}]', b'"data":[{"a":"1","b":"x"},{"a":"2","b":"y"}]')
    batch = batch.replace(b'"old":[{"a":"0","b":"x"}]', b'"old":[{"a":"0","b":"x"},{"a":"1","b":"y"}]')
    assert [columns_of(e)["a"] for e in cj.Decoder().decode(batch)] == [1, 2]


def test_header_cache_ignores_mysql_type_key_order() -> None:
    decoder = cj.Decoder()
    first = row_of(decoder.decode(LEGACY)[0])
    swapped = LEGACY.replace(b'{"a":"int","b":"varchar"}', b'{"b":"varchar","a":"int"}')
    second = row_of(decoder.decode(swapped)[0])
    assert first.table_info is second.table_info
    changed = row_of(decoder.decode(LEGACY.replace(b'"b":"varchar"', b'"b":"varbinary"'))[0])
    assert changed.table_info is not first.table_info and changed.columns == first.columns


def test_go_integer_syntax_is_accepted_where_the_fast_path_declines() -> None:
    [event] = cj.Decoder().decode(LEGACY.replace(b'[{"a":"1","b":"x"}]', b'[{"a":"+01","b":"x"}]'))
    assert columns_of(event)["a"] == 1


@pytest.mark.parametrize(("bad", "at"), [
    (b'[{"a":"1x","b":"x"}]', "$.data[0].a"),
    (b'[{"a":"1","b":5}]', "$.data[0].b"),
    (b'[{"a":"1","zz":"x"}]', "$.data[0].zz"),
    (b'[{"a":"9223372036854775808","b":"x"}]', "$.data[0].a"),
    (b'{"a":"1"}', "$.data"),
])
def test_bad_values_name_their_json_path(bad: bytes, at: str) -> None:
    message = LEGACY.replace(b'[{"a":"1","b":"x"}]', bad)
    with pytest.raises(DecodeError) as caught:
        cj.Decoder().decode(message)
    assert caught.value.protocol == "canal-json"
    assert caught.value.at == at


def test_explain_returns_the_envelope() -> None:
    assert cj.explain(LEGACY)["mysqlType"] == {"a": "int", "b": "varchar"}
    with pytest.raises(DecodeError):
        cj.explain(b"\xff\x00garbage")


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError):
        cj.Encoder({"max-batch-size": 2})
    with pytest.raises(ConfigError):
        cj.Decoder({"no-such-option": True})
    assert cj.Encoder({"only-output-updated-columns": "true"}).options.only_output_updated_columns


# --------------------------------------------------------------------------- round trips (Hypothesis)
OPTION_SETS = [
    {}, {"enable_tidb_extension": True}, {"only_output_updated_columns": True},
    {"content_compatible": True, "enable_tidb_extension": True},
    {"delete_only_output_handle_key_columns": True},
    {"large_message_handle_compression": "snappy"},
]


@settings(max_examples=120)
@given(rows=row_changes(), options=st.sampled_from(OPTION_SETS))
def test_round_trip_equals_projection(rows: list[RowChange], options: dict[str, Any]) -> None:
    encoder = cj.Encoder(options, clock=clock)
    decoder = cj.Decoder(options)
    for row in rows:
        [message] = encoder.encode([row])
        assert decoder.decode(message.value) == [encoder.project(row)]
        assert decoder.decode_reference(message.value) == [encoder.project(row)]


@settings(max_examples=120)
@given(rows=row_changes())
def test_round_trip_keeps_every_value(rows: list[RowChange]) -> None:
    # The shared strategies produce values the protocol carries losslessly (valid UTF-8 text,
    # float32 FLOATs): with the extension, everything but ids and the schema survives.
    encoder = cj.Encoder(enable_tidb_extension=True)
    decoder = cj.Decoder()
    for row in rows:
        [message] = encoder.encode([row])
        [decoded] = decoder.decode(message.value)
        assert isinstance(decoded, RowChange)
        assert (decoded.op, decoded.schema, decoded.table, decoded.commit_ts) == (
            row.op, row.schema, row.table, row.commit_ts)
        assert decoded.columns == row.columns
        assert decoded.pre_columns == row.pre_columns
        for got, want in ((decoded.columns, row.columns), (decoded.pre_columns, row.pre_columns)):
            for name, value in (want or {}).items():
                assert type((got or {})[name]) is type(value), name  # int stays int, bytes stay bytes, …


def reference_value(mysql_type: str, text: str | None) -> Any:
    """An independent statement of canalJSONFormatColumn (§4.5) in the model's value types."""
    if text is None:
        return None
    if "blob" in mysql_type or "binary" in mysql_type:
        return text.encode("latin-1")
    basic = mysql_type.split("(")[0].split(" ")[0]
    if basic in ("tinyint", "smallint", "mediumint", "int", "bigint", "year", "enum", "bit", "set"):
        return int(text)
    if basic == "float":
        return float32_round(float(text))
    if basic == "double":
        return float(text)
    if basic in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "var_string"):
        return text.encode("utf-8")
    return text


@settings(max_examples=80)
@given(rows=row_changes(), options=st.sampled_from(OPTION_SETS[:4]))
def test_decoded_values_match_reference_conversion(rows: list[RowChange], options: dict[str, Any]) -> None:
    encoder = cj.Encoder(options)
    for row in rows:
        [message] = encoder.encode([row])
        assert message.value is not None
        envelope = orjson.loads(message.value) if not options.get("large_message_handle_compression") else None
        if envelope is None:
            continue
        [decoded] = cj.Decoder(options).decode(message.value)
        assert isinstance(decoded, RowChange)
        types = envelope["mysqlType"]
        data = {n: reference_value(types[n], v) for n, v in envelope["data"][0].items()}
        assert (decoded.pre_columns if decoded.op is Op.DELETE else decoded.columns) == data
        if envelope["old"] is not None:
            old = {n: reference_value(types[n], v) for n, v in envelope["old"][0].items()}
            assert decoded.pre_columns == {**data, **old}


def raw_text_tables() -> st.SearchStrategy[tuple[TableInfo, Row]]:
    """A table of text/binary columns holding arbitrary bytes (invalid UTF-8 included)."""
    kinds = st.sampled_from([(15, True), (252, True), (254, True), (15, False), (251, False)])

    @st.composite
    def build(draw: st.DrawFn) -> tuple[TableInfo, Row]:
        specs = draw(st.lists(kinds, min_size=1, max_size=5))
        columns = [ID] + [col(f"c{i}", code, F.NULLABLE, text=text) for i, (code, text) in enumerate(specs)]
        values: dict[str, Any] = {"id": draw(st.integers(-(2**31), 2**31 - 1))}
        for column in columns[1:]:
            values[column.name] = draw(st.one_of(st.none(), st.binary(max_size=12)))
        return table(*columns), Row(values)

    return build()


@settings(max_examples=100)
@given(case=raw_text_tables())
def test_arbitrary_bytes_round_trip_as_documented(case: tuple[TableInfo, Row]) -> None:
    info, values = case
    decoded = round_trip(insert(info, dict(values))).columns
    for column in info.columns[1:]:
        value = values[column.name]
        if value is None or column.flags & F.BINARY:
            assert decoded[column.name] == value  # binary charset: every byte survives
        else:  # text: each invalid UTF-8 byte becomes one U+FFFD, as Go's JSON writers do
            assert decoded[column.name] == go_string(value).encode()


# --------------------------------------------------------------------------- bad input (Hypothesis)
def decode_or_decode_error(value: bytes, **options: Any) -> None:
    """Decode ``value``; the fast and the reference path agree on the events or on the error."""
    try:
        events = cj.Decoder(options).decode(value)
    except DecodeError as exc:
        assert exc.protocol == "canal-json" and exc.reason
        with pytest.raises(DecodeError) as reference:
            cj.Decoder(options).decode_reference(value)
        assert (reference.value.reason, reference.value.at) == (exc.reason, exc.at)
    else:
        assert cj.Decoder(options).decode_reference(value) == events


@settings(max_examples=300)
@given(value=st.binary(max_size=300))
def test_random_bytes_raise_only_decode_error(value: bytes) -> None:
    decode_or_decode_error(value)
    decode_or_decode_error(value, large_message_handle_compression="snappy")
    decode_or_decode_error(value, large_message_handle_compression="lz4")


@settings(max_examples=40)
@given(rows=row_changes(max_rows=2), seed=st.integers(0, 2**32), extension=st.booleans())
def test_truncated_and_mutated_messages_raise_only_decode_error(rows: list[RowChange], seed: int,
                                                                extension: bool) -> None:
    rng = random.Random(seed)
    for message in cj.Encoder(enable_tidb_extension=extension).encode(rows):
        value = message.value
        assert value is not None
        for cut in {rng.randrange(len(value) + 1) for _ in range(10)} | {0, len(value) - 1}:
            decode_or_decode_error(value[:cut])
        for _ in range(10):
            mutated = bytearray(value)
            for _ in range(rng.randint(1, 3)):
                mutated[rng.randrange(len(mutated))] = rng.choice(b'{}[]",:\\0aZ\x00\xff\xc3 ')
            decode_or_decode_error(bytes(mutated))


CONFUSERS: list[Any] = [None, 0, -1, 2**63, -(2**63) - 1, 1.5, 1e300, "", "x", "ÿ\u0100", "18446744073709551616",
                        [], {}, [None], [{}], {"a": None}, True, "INSERT", "TIDB_WATERMARK"]


def confuse(node: Any, rng: random.Random) -> Any:
    """Replace one random node of a JSON document by a value of another type."""
    if isinstance(node, dict) and node and rng.random() < 0.8:
        key = rng.choice(list(node))
        return {**node, key: confuse(node[key], rng)}
    if isinstance(node, list) and node and rng.random() < 0.8:
        index = rng.randrange(len(node))
        return [*node[:index], confuse(node[index], rng), *node[index + 1:]]
    return rng.choice(CONFUSERS)


@settings(max_examples=60)
@given(rows=row_changes(max_rows=1), seed=st.integers(0, 2**32),
       keys=st.lists(st.text(string.ascii_letters, max_size=3), max_size=2))
def test_type_confused_json_raises_only_decode_error(rows: list[RowChange], seed: int, keys: list[str]) -> None:
    rng = random.Random(seed)
    for message in cj.Encoder(enable_tidb_extension=True).encode(rows):
        document = orjson.loads(message.value or b"")
        for _ in range(15):
            confused = confuse(document, rng)
            if isinstance(confused, dict):
                for key in keys:  # stray keys, in data or at the top
                    confused[key] = rng.choice(CONFUSERS)
            try:
                value = orjson.dumps(confused)
            except TypeError:
                continue  # beyond JSON numbers orjson can write
            decode_or_decode_error(value)
            decode_or_decode_error(value, delete_only_output_handle_key_columns=True)


@settings(max_examples=30)
@given(case=tables(max_columns=4))
def test_tables_with_awkward_column_names(case: tuple[TableInfo, Any]) -> None:
    info, _ = case
    renamed = tuple(
        ColumnInfo(**{**{f: getattr(c, f) for f in c.__struct_fields__}, "name": name})
        for c, name in zip(info.columns, ["id", "class", "a b", "__init__", "é"])
    )
    awkward = TableInfo(schema="test", table="t", columns=renamed, indexes=info.indexes)
    event = insert(awkward, {c.name: None for c in renamed[1:]} | {"id": 1})
    assert round_trip(event).columns == event.columns
