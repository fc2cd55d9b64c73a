"""Debezium encoder checked rule by rule against the reference text.

Every test cites the line of /work/shared/spec/ticdc-reference.md (``ref``) or
/work/shared/spec/debezium.md (``doc``) it checks; expected output is written out from that text,
not taken from the encoder.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import builders
from pyticdc import ConfigError
from pyticdc.codec.compression import decompress
from pyticdc.codec.debezium import Encoder
from pyticdc.model import ColumnFlag, ColumnInfo, DDLEvent, IndexInfo, Op, Row, RowChange, TableInfo, Watermark
from pyticdc.mysql import ENUM_SET_TYPES, STRING_TYPES

F = ColumnFlag
NOW = 1_701_326_309_000
TS = (1234 << 18) | 5  # physical 1234 ms, logical 5

def col(name: str, code: int, **kw: Any) -> ColumnInfo:
    """``builders.column`` with TiDB's charset per type (``binary=`` overrides) and the Nullable flag."""
    binary = kw.pop("binary", code not in STRING_TYPES | ENUM_SET_TYPES)
    nullable = kw.pop("nullable", True)
    flags = kw.pop("flags", 0) | (F.NULLABLE if nullable else 0)
    return builders.column(name, code, flags, text=not binary, nullable=nullable, **kw)


ID = col("id", 3, flags=builders.PK, nullable=False, flen=11, decimal=0)


def table(*columns: ColumnInfo, schema: str = "test", name: str = "t", with_id: bool = True) -> TableInfo:
    """A table keyed by its INT handle ``id``; with ``with_id=False`` one with neither ``id`` nor indexes."""
    if not with_id:
        return builders.table(*columns, schema=schema, name=name, table_id=10, indexes=())
    return builders.table(ID, *columns, schema=schema, name=name, table_id=10, pk_is_handle=True,
                          indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),))


def insert(tbl: TableInfo, values: dict[str, Any], commit_ts: int = TS) -> RowChange:
    """An INSERT of ``values`` (with ``id`` 1 when the table has it)."""
    row = {"id": 1, **values} if any(c.name == "id" for c in tbl.columns) else values
    return builders.insert(tbl, row, commit_ts=commit_ts)


def encode(event: Any, **options: Any) -> tuple[str, str]:
    options.setdefault("time_zone", "UTC")
    messages = Encoder(options, clock=lambda: NOW).encode([event])
    assert len(messages) == 1
    key, value = messages[0].key, messages[0].value
    assert key is not None and value is not None
    return key.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape")


def after_text(value: str) -> str:
    """The raw text of the payload's ``after`` object (no schema)."""
    start = value.index('"after":') + len('"after":')
    depth = 0
    for i in range(start, len(value)):
        if value[i] == "{":
            depth += 1
        elif value[i] == "}":
            depth -= 1
            if depth == 0:
                return value[start:i + 1]
    raise AssertionError(value)


def after_value(column: ColumnInfo, value: Any, **options: Any) -> Any:
    """The ``after`` JSON value of ``column`` for one inserted value."""
    _, text = encode(insert(table(column), {column.name: value}), debezium_disable_schema=True, **options)
    return json.loads(text)["payload"]["after"][column.name]


def field_schema(column: ColumnInfo, **options: Any) -> dict[str, Any]:
    """The schema element of ``column`` in the value schema's ``after`` struct."""
    _, text = encode(insert(table(column), {column.name: None}), **options)
    fields = json.loads(text)["schema"]["fields"][1]["fields"]
    found: dict[str, Any] = next(f for f in fields if f["field"] == column.name)
    return found


def field_schema_text(column: ColumnInfo, **options: Any) -> str:
    _, text = encode(insert(table(column), {column.name: None}), **options)
    marker = '"field":"after","fields":['
    start = text.index(marker) + len(marker)
    # skip the id element
    start = text.index("},", start) + 2
    end = text.index("]}", start)
    return text[start:end]


SOURCE = ('{"version":"2.4.0.Final","connector":"TiCDC","name":"default","ts_ms":1234,"snapshot":"false",'
          '"db":"test","table":"t","server_id":0,"gtid":null,"file":"","pos":0,"row":0,"thread":0,'
          f'"query":null,"commit_ts":{TS},"cluster_id":"default"}}')


# --------------------------------------------------------------------------- §5.1 DML value
def test_insert_value_field_order_without_schema() -> None:
    # ref §5.1 lines 250-256: payload{source, ts_ms, transaction, op, before:null, after}
    tbl = table(col("v", 15))
    key, value = encode(insert(tbl, {"v": b"x"}), debezium_disable_schema=True)
    assert value == ('{"payload":{"source":' + SOURCE + f',"ts_ms":{NOW},"transaction":null,"op":"c",'
                     '"before":null,"after":{"id":1,"v":"x"}}}')
    assert key == '{"payload":{"id":1}}'


def test_delete_puts_after_null_before_the_pre_image() -> None:
    # ref §5.1 line 255: DELETE: "after":null,"before":{…}
    tbl = table(col("v", 15))
    event = RowChange(op=Op.DELETE, schema="test", table="t", commit_ts=TS, pre_columns=Row({"id": 1, "v": b"o"}),
                      table_info=tbl)
    key, value = encode(event, debezium_disable_schema=True)
    assert value.endswith(f'"ts_ms":{NOW},"transaction":null,"op":"d","after":null,"before":{{"id":1,"v":"o"}}}}}}')
    assert key == '{"payload":{"id":1}}'


@pytest.mark.parametrize("old_value", [True, False])
def test_update_before_only_with_output_old_value(old_value: bool) -> None:
    # ref §5.1 lines 255, 258: UPDATE ["before":{…},]"after":{…}; when false the key is absent, not null
    tbl = table(col("v", 15))
    event = RowChange(op=Op.UPDATE, schema="test", table="t", commit_ts=TS, columns=Row({"id": 1, "v": b"n"}),
                      pre_columns=Row({"id": 1, "v": b"o"}), table_info=tbl)
    _, value = encode(event, debezium_disable_schema=True, debezium_output_old_value=old_value)
    tail = '"op":"u",' + ('"before":{"id":1,"v":"o"},' if old_value else "") + '"after":{"id":1,"v":"n"}}}'
    assert value.endswith(tail)
    assert ('"before"' in value) is old_value


def test_update_old_value_defaults_to_true() -> None:
    # ref §5.1 line 258: debezium-output-old-value (default true)
    tbl = table(col("v", 15))
    event = RowChange(op=Op.UPDATE, schema="test", table="t", commit_ts=TS, columns=Row({"id": 1, "v": b"n"}),
                      pre_columns=Row({"id": 1, "v": b"o"}), table_info=tbl)
    _, value = encode(event, debezium_disable_schema=True)
    assert '"before":{"id":1,"v":"o"}' in value


def test_source_block_fields_and_ts() -> None:
    # ref §5.1 lines 250-252 and §0 line 14: source.ts_ms = commitTs >> 18, commit_ts the full TSO; §5 cluster-id
    tbl = table(schema="db1", name="tb1")
    _, value = encode(insert(tbl, {}, commit_ts=(99 << 18) + 7), debezium_disable_schema=True, cluster_id="c-1")
    source = json.loads(value)["payload"]["source"]
    assert list(source) == ["version", "connector", "name", "ts_ms", "snapshot", "db", "table", "server_id", "gtid",
                            "file", "pos", "row", "thread", "query", "commit_ts", "cluster_id"]
    assert source == {"version": "2.4.0.Final", "connector": "TiCDC", "name": "c-1", "ts_ms": 99,
                      "snapshot": "false", "db": "db1", "table": "tb1", "server_id": 0, "gtid": None, "file": "",
                      "pos": 0, "row": 0, "thread": 0, "query": None, "commit_ts": (99 << 18) + 7,
                      "cluster_id": "c-1"}
    assert "sequence" not in source  # ref §5.1 line 258


def test_payload_first_schema_second_and_envelope_shape() -> None:
    # ref §5.1 lines 256-260: payload FIRST, schema second; Envelope/Value names, version 1
    tbl = table(col("v", 15))
    key, value = encode(insert(tbl, {"v": b"x"}))
    assert value.startswith('{"payload":{') and ',"schema":{"type":"struct","optional":false,' in value
    doc = json.loads(value)
    assert list(doc) == ["payload", "schema"]
    schema = doc["schema"]
    assert list(schema) == ["type", "optional", "name", "version", "fields"]
    assert schema["name"] == "default.test.t.Envelope" and schema["version"] == 1
    before, after, source, op, ts_ms, transaction = schema["fields"]
    for part, field in ((before, "before"), (after, "after")):
        assert list(part) == ["type", "optional", "name", "field", "fields"]
        assert part["name"] == "default.test.t.Value" and part["field"] == field and part["optional"] is True
        assert [f["field"] for f in part["fields"]] == ["id", "v"]
    assert source["name"] == "io.debezium.connector.mysql.Source" and source["field"] == "source"
    assert [f["field"] for f in source["fields"]] == [
        "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "table", "server_id", "gtid", "file",
        "pos", "row", "thread", "query"]
    assert op == {"type": "string", "optional": False, "field": "op"}
    assert ts_ms == {"type": "int64", "optional": True, "field": "ts_ms"}
    assert transaction["name"] == "event.block" and transaction["field"] == "transaction"
    # Key: ref §5.1 line 261
    assert key == ('{"payload":{"id":1},"schema":{"type":"struct","name":"default.test.t.Key","optional":false,'
                   '"fields":[{"type":"int32","optional":false,"field":"id"}]}}')


def test_disable_schema_drops_schema_from_key_and_value() -> None:
    # ref §5.1 line 256: schema omitted when debezium-disable-schema=true
    key, value = encode(insert(table(), {}), debezium_disable_schema=True)
    assert list(json.loads(value)) == ["payload"] and list(json.loads(key)) == ["payload"]


def test_key_holds_handle_key_columns_not_primary_key() -> None:
    # ref §5.1 line 261: HandleKey columns (not necessarily PK)
    uk = col("u", 3, flags=F.HANDLE_KEY | F.UNIQUE_KEY, nullable=False)
    pkonly = col("p", 3, flags=F.PRIMARY_KEY, nullable=False)
    tbl = table(pkonly, uk, with_id=False)
    key, _ = encode(insert(tbl, {"p": 1, "u": 2}))
    assert key == ('{"payload":{"u":2},"schema":{"type":"struct","name":"default.test.t.Key","optional":false,'
                   '"fields":[{"type":"int32","optional":false,"field":"u"}]}}')


def test_virtual_generated_columns_in_schema_not_payload() -> None:
    # ref §5.1 line 260: plus virtual generated columns which never appear in the payload
    tbl = table(col("g", 3, virtual=True, flags=F.GENERATED), col("v", 3))
    _, value = encode(insert(tbl, {"v": 2}))
    doc = json.loads(value)
    assert doc["payload"]["after"] == {"id": 1, "v": 2}
    assert [f["field"] for f in doc["schema"]["fields"][0]["fields"]] == ["id", "v", "g"]


def test_no_max_message_bytes_check() -> None:
    # ref §5.1 line 258: No max-message-bytes check in the Debezium encoder
    tbl = table(col("v", 15))
    messages = Encoder(max_message_bytes=64, clock=lambda: NOW).encode([insert(tbl, {"v": b"x" * 1000})])
    assert len(messages) == 1 and b"x" * 1000 in (messages[0].value or b"")


# --------------------------------------------------------------------------- §5 names
@pytest.mark.parametrize(("cluster", "db", "tbl", "expected"), [
    ("default", "test", "t", "default.test.t"),
    ("9c", "my-db", "1tab", "_9c.my_db.1tab"),          # leading digit → _<digit>; table keeps digit
    ("a.b", "d.b", "t.x", "a_b.d_b.t.x"),               # SanitizeTopicName keeps '.'
    ("c", "-x", "t-y", "c._x.t_y"),                      # invalid leading char → _
    ("c", "dé", "té", "c.d__.t__"),                      # one _ per UTF-8 byte of an invalid rune
])
def test_schema_names_are_sanitised(cluster: str, db: str, tbl: str, expected: str) -> None:
    # ref §5 line 247: SanitizeName(cluster).SanitizeName(db).SanitizeTopicName(table)
    key, value = encode(insert(table(schema=db, name=tbl), {}), cluster_id=cluster)
    assert json.loads(value)["schema"]["name"] == expected + ".Envelope"
    assert json.loads(value)["schema"]["fields"][0]["name"] == expected + ".Value"
    assert json.loads(key)["schema"]["name"] == expected + ".Key"
    # the source block carries the raw names
    source = json.loads(value)["payload"]["source"]
    assert (source["name"], source["db"], source["table"], source["cluster_id"]) == (cluster, db, tbl, cluster)


# --------------------------------------------------------------------------- §5.2 schema elements
def test_schema_element_key_order_with_extension() -> None:
    # ref §5.2 line 263: ["tidb_type"], "type", "optional", ["name","version":1,"parameters"], "field", ["default"]
    c = col("b", 16, flen=5, unsigned=True, nullable=False, default="\x03")
    assert field_schema_text(c, enable_tidb_extension=True) == (
        '{"tidb_type":"bit","type":"bytes","optional":false,"name":"io.debezium.data.Bits","version":1,'
        '"parameters":{"length":"5"},"field":"b","default":"Aw=="}')
    assert field_schema_text(c) == (
        '{"type":"bytes","optional":false,"name":"io.debezium.data.Bits","version":1,'
        '"parameters":{"length":"5"},"field":"b","default":"Aw=="}')


def test_tidb_type_in_key_schema_too() -> None:
    # doc "schema.fields[1].fields[n].tidb_type" exists only when enable-tidb-extension = true
    key, value = encode(insert(table(), {}), enable_tidb_extension=True)
    assert '"fields":[{"tidb_type":"int","type":"int32","optional":false,"field":"id"}]' in key
    key, value = encode(insert(table(), {}))
    assert "tidb_type" not in key and "tidb_type" not in value


@pytest.mark.parametrize(("column", "connect_type"), [
    (col("c", 1), "int16"),
    (col("c", 1, unsigned=True), "int16"),
    (col("c", 2), "int16"),
    (col("c", 2, unsigned=True), "int32"),
    (col("c", 9), "int32"),
    (col("c", 9, unsigned=True), "int32"),
    (col("c", 3), "int32"),
    (col("c", 3, unsigned=True), "int64"),
    (col("c", 8), "int64"),
    (col("c", 8, unsigned=True), "int64"),
    (col("c", 4, flen=12, decimal=-1), "float"),
    (col("c", 4, flen=7, decimal=3), "double"),
    (col("c", 5, flen=22, decimal=-1), "double"),
    (col("c", 246, flen=10, decimal=2), "double"),
    (col("c", 16, flen=1, unsigned=True), "boolean"),
    (col("c", 15, flen=10), "string"),
    (col("c", 254, flen=10), "string"),
    (col("c", 252, binary=True), "string"),
    (col("c", 15, flen=10, binary=True), "string"),
])
def test_plain_connect_types(column: ColumnInfo, connect_type: str) -> None:
    # ref §5.2 table lines 265-276
    assert field_schema(column) == {"type": connect_type, "optional": True, "field": "c"}


@pytest.mark.parametrize(("column", "connect_type", "name"), [
    (col("c", 10), "int32", "io.debezium.time.Date"),
    (col("c", 12, decimal=0), "int64", "io.debezium.time.Timestamp"),
    (col("c", 12, decimal=3), "int64", "io.debezium.time.Timestamp"),
    (col("c", 12, decimal=4), "int64", "io.debezium.time.MicroTimestamp"),
    (col("c", 12, decimal=6), "int64", "io.debezium.time.MicroTimestamp"),
    (col("c", 7, decimal=0), "string", "io.debezium.time.ZonedTimestamp"),
    (col("c", 11, decimal=0), "int64", "io.debezium.time.MicroTime"),
    (col("c", 13, unsigned=True), "int32", "io.debezium.time.Year"),
    (col("c", 245), "string", "io.debezium.data.Json"),
])
def test_named_connect_types(column: ColumnInfo, connect_type: str, name: str) -> None:
    # ref §5.2 table lines 278-285
    assert field_schema(column) == {"type": connect_type, "optional": True, "name": name, "version": 1, "field": "c"}


def test_vector_schema() -> None:
    # ref §5.2 line 286: VECTOR string io.debezium.data.TiDBVectorFloat32, value [1,2,3]
    c = col("c", 225)
    schema = field_schema(c)
    assert (schema["type"], schema["name"], schema["field"]) == ("string", "io.debezium.data.TiDBVectorFloat32", "c")
    assert after_value(c, "[1,2,3]") == "[1,2,3]"


def test_optional_is_not_not_null() -> None:
    # ref §5.2 line 263: "optional" (=!NOT NULL)
    assert field_schema(col("c", 3, nullable=False, default="0"))["optional"] is False
    assert field_schema(col("c", 3))["optional"] is True


def test_enum_and_set_schema_parameters() -> None:
    # ref §5.2 lines 273-274: ENUM allowed with ',' escaped as '\,'; SET allowed comma-joined
    e = col("c", 247, elems=("a", "b,c", "d"))
    assert field_schema(e) == {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
                               "parameters": {"allowed": "a,b\\,c,d"}, "field": "c"}
    s = col("c", 248, elems=("x", "y"))
    assert field_schema(s) == {"type": "string", "optional": True, "name": "io.debezium.data.EnumSet", "version": 1,
                               "parameters": {"allowed": "x,y"}, "field": "c"}


def test_bits_schema_length_parameter_is_a_string() -> None:
    # ref §5.2 line 270: bytes, io.debezium.data.Bits, parameters {"length":"n"}
    assert field_schema(col("c", 16, flen=12, unsigned=True)) == {
        "type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1,
        "parameters": {"length": "12"}, "field": "c"}


# --------------------------------------------------------------------------- §5.2 values
@pytest.mark.parametrize(("column", "value", "expected"), [
    (col("c", 1), 127, 127),
    (col("c", 1), -128, -128),
    (col("c", 1, unsigned=True), 255, 255),
    (col("c", 2, unsigned=True), 65535, 65535),
    (col("c", 3, unsigned=True), 4294967295, 4294967295),
    (col("c", 8), -(1 << 63), -(1 << 63)),
    (col("c", 8, unsigned=True), 18446744073709551615, -1),           # max → −1
    (col("c", 8, unsigned=True), 1 << 63, -(1 << 63)),                # int64(v) wraps negative
    (col("c", 8, unsigned=True), 18446744073709551614, -2),
    (col("c", 8, unsigned=True), 12345, 12345),
])
def test_integer_values(column: ColumnInfo, value: int, expected: int) -> None:
    # ref §5.2 lines 265-269 and §1.1 line 25 (uint64 for UNSIGNED)
    assert after_value(column, value) == expected


def test_tinyint_out_of_range_is_minus_one() -> None:
    # ref §5.2 line 265: TINYINT number; out of range → −1
    assert after_value(col("c", 1), 300) == -1


def test_float_values_use_float32_shortest_repr() -> None:
    # ref §5.2 line 274 / §1.5: float32 shortest repr (12345.123)
    c = col("c", 4, decimal=-1)
    _, text = encode(insert(table(c), {"c": 12345.123046875}), debezium_disable_schema=True)
    assert after_text(text) == '{"id":1,"c":12345.123}'
    c2 = col("c", 4, flen=7, decimal=3)  # float(M,D): double schema, same float32 value text
    _, text = encode(insert(table(c2), {"c": 3.140000104904175}), debezium_disable_schema=True)
    assert after_text(text) == '{"id":1,"c":3.14}'


@pytest.mark.parametrize(("value", "text"), [
    (1e-7, "1e-07"),           # ref §1.5 line 65: 'e' without exponent cleanup
    (1e21, "1e+21"),
    (1e20, "100000000000000000000"),
    (0.5, "0.5"),
    (2.0, "2"),
])
def test_double_text_follows_jsoniter(value: float, text: str) -> None:
    # ref §1.5 line 65 and §12: 'f' unless <1e-6/>=1e21 → 'e' without exponent cleanup
    c = col("c", 5, decimal=-1)
    _, out = encode(insert(table(c), {"c": value}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":' + text + "}"


def test_decimal_is_parsed_as_float64() -> None:
    # ref §5.2 line 268: DECIMAL ParseFloat(str) → float64 (12345.12345); §1.1 line 30 keeps the scale in the text
    c = col("c", 246, flen=13, decimal=7)
    _, out = encode(insert(table(c), {"c": "129012.1230000"}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":129012.123}'
    _, out = encode(insert(table(c), {"c": "12345.12345"}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":12345.12345}'


def test_bit_values() -> None:
    # ref §5.2 lines 269-270: BIT(1) v != 0; BIT(n) little-endian ceil(n/8) bytes, BIT(5)=16 → "EA=="
    assert after_value(col("c", 16, flen=1, unsigned=True), 1) is True
    assert after_value(col("c", 16, flen=1, unsigned=True), 0) is False
    assert after_value(col("c", 16, flen=5, unsigned=True), 16) == "EA=="
    assert after_value(col("c", 16, flen=16, unsigned=True), 0x0102) == base64.b64encode(b"\x02\x01").decode()
    assert after_value(col("c", 16, flen=9, unsigned=True), 0x1FF) == base64.b64encode(b"\xff\x01").decode()
    assert after_value(col("c", 16, flen=64, unsigned=True), 1) == base64.b64encode(b"\x01" + b"\0" * 7).decode()


def test_strings_text_and_binary() -> None:
    # ref §5.2 lines 271-272: text as is; BinaryFlag → base64, BINARY(n) keeps zero padding
    assert after_value(col("c", 15, flen=10), b"h\xc3\xa9") == "hé"
    assert after_value(col("c", 254, flen=4, binary=True), b"ab\0\0") == base64.b64encode(b"ab\0\0").decode()
    assert after_value(col("c", 252, binary=True), b"\xff\x00") == base64.b64encode(b"\xff\x00").decode()
    assert after_value(col("c", 252), b"some text") == "some text"


def test_json_writer_escaping() -> None:
    # ref §1.5 line 65: only " \\ \n \r \t short, other <0x20 → \u00XX; no HTML escaping; raw bytes pass through
    c = col("c", 15, flen=40)
    _, out = encode(insert(table(c), {"c": b'<a>&"\\\n\r\t\x08\x0c\x01\xe2\x80\xa8\xff'}),
                    debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":"<a>&\\"\\\\\\n\\r\\t\\u0008\\u000c\\u0001\u2028\udcff"}'


def test_enum_and_set_values() -> None:
    # ref §5.2 lines 273-274 and §1.1 lines 35-36: ENUM index → name (0 → ""), SET bitmask → names
    e = col("c", 247, elems=("a", "b,c", "d"))
    assert after_value(e, 2) == "b,c"
    assert after_value(e, 0) == ""
    s = col("c", 248, elems=("x", "y", "z"))
    assert after_value(s, 0b101) == "x,z"
    assert after_value(s, 0b1000) == ""  # invalid → ""


@pytest.mark.parametrize(("text", "expected"), [
    ("1970-01-01", 0),
    ("2020-02-29", 18321),
    ("1969-12-31", -1),
    ("0069-01-01", 36160),       # year < 70 → +2000 (2069-01-01)
    ("0070-01-01", 0),           # year < 100 → +1900
    ("0099-12-31", 10956),
])
def test_date_days(text: str, expected: int) -> None:
    # ref §5.2 line 275: days since 1970-01-01 (UTC); year<70 → +2000, <100 → +1900
    assert after_value(col("c", 10), text) == expected


def test_zero_date_is_null_or_zero() -> None:
    # ref §5.2 line 275: unparsable/zero date → null (0 if NOT NULL)
    assert after_value(col("c", 10), "0000-00-00") is None
    assert after_value(col("c", 10, nullable=False), "0000-00-00") == 0


@pytest.mark.parametrize(("fsp", "text", "expected"), [
    (0, "2020-01-02 03:04:05", 1577934245000),
    (3, "2020-01-02 03:04:05.123", 1577934245123),
    (4, "2020-01-02 03:04:05.1234", 1577934245123400),
    (6, "2020-01-02 03:04:05.123456", 1577934245123456),
    (6, "1969-12-31 23:59:59.999999", -1),
])
def test_datetime_ms_or_us_by_fsp(fsp: int, text: str, expected: int) -> None:
    # ref §5.2 lines 276-277: fsp≤3 epoch ms, fsp>3 epoch µs, wall clock read as UTC
    assert after_value(col("c", 12, decimal=fsp), text, time_zone="Asia/Shanghai") == expected


@pytest.mark.parametrize(("zone", "fsp", "text", "expected"), [
    ("UTC", 0, "2020-01-02 03:04:05", "2020-01-02T03:04:05Z"),
    ("Asia/Shanghai", 0, "2020-01-02 03:04:05", "2020-01-01T19:04:05Z"),
    ("Asia/Shanghai", 3, "2020-01-02 03:04:05.120", "2020-01-01T19:04:05.120Z"),
    ("America/New_York", 6, "2020-07-01 00:00:00.000001", "2020-07-01T04:00:00.000001Z"),
    ("UTC", 2, "1960-01-01 00:00:00.00", "1970-01-01T00:00:00Z"),   # below MinTimestamp
])
def test_timestamp_zoned_utc(zone: str, fsp: int, text: str, expected: str) -> None:
    # ref §5.2 line 278 and §1.1 line 31 (TIMESTAMP already in the server time zone)
    assert after_value(col("c", 7, decimal=fsp), text, time_zone=zone) == expected


@pytest.mark.parametrize(("text", "fsp", "expected"), [
    ("-12:34:56.123456", 6, -45296123456),
    ("00:00:01", 0, 1_000_000),
    ("838:59:59", 0, 3020399000000),
])
def test_time_micro(text: str, fsp: int, expected: int) -> None:
    # ref §5.2 line 279: µs, negative allowed
    assert after_value(col("c", 11, decimal=fsp), text) == expected


def test_year_json_values() -> None:
    # ref §5.2 lines 280-281
    assert after_value(col("c", 13, unsigned=True), 2020) == 2020
    c = col("c", 245)
    _, out = encode(insert(table(c), {"c": '{"key1": "value1"}'}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":"{\\"key1\\": \\"value1\\"}"}'


def test_null_value_and_default_substitution() -> None:
    # ref §5.2 line 283: NULL → null (if value nil the column default is used first)
    assert after_value(col("c", 3), None) is None
    assert after_value(col("c", 3, default="7"), None) == 7
    assert after_value(col("c", 15, default="dv"), None) == "dv"


@pytest.mark.parametrize(("column", "expected"), [
    (col("c", 3, default="7"), 7),
    (col("c", 15, default="dv"), "dv"),
    (col("c", 10, default="1970-01-03"), 2),
    (col("c", 12, decimal=0, default="1970-01-01 00:00:01"), 1000),
    (col("c", 12, decimal=6, default="1970-01-01 00:00:01.000000"), 1000000),
    (col("c", 11, decimal=0, default="00:00:02"), 2000000),
    (col("c", 16, flen=1, unsigned=True, default="\x01"), True),
    (col("c", 247, elems=("a", "b"), default="b"), "b"),
])
def test_schema_defaults_follow_value_conversions(column: ColumnInfo, expected: Any) -> None:
    # ref §5.2 line 284: defaults ("default" in schema) follow the same conversions
    assert field_schema(column)["default"] == expected


# --------------------------------------------------------------------------- §5.3 DDL
DDL_KEY = ('{"payload":{"databaseName":"test"},"schema":{"type":"struct",'
           '"name":"io.debezium.connector.mysql.SchemaChangeKey","optional":false,"version":1,'
           '"fields":[{"field":"databaseName","optional":false,"type":"string"}]}}')


def test_ddl_key_and_value_order() -> None:
    # ref §5.3 lines 291-292
    tbl = table(col("v", 15, flen=16))
    ddl = DDLEvent(query="CREATE TABLE t (id int primary key, v varchar(16))", ddl_type=3, commit_ts=TS,
                   schema="test", table="t", table_info=tbl)
    key, value = encode(ddl)
    assert key == DDL_KEY
    doc = json.loads(value)
    assert list(doc) == ["payload", "schema"]
    assert list(doc["payload"]) == ["source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"]
    payload = doc["payload"]
    assert value.startswith('{"payload":{"source":' + SOURCE + f',"ts_ms":{NOW},"databaseName":"test",'
                            '"schemaName":null,"ddl":"CREATE TABLE t (id int primary key, v varchar(16))",'
                            '"tableChanges":[{"type":"CREATE","id":"\\"test\\".\\"t\\"","table":{')
    change = payload["tableChanges"][0]
    assert list(change) == ["type", "id", "table"]
    assert list(change["table"]) == ["defaultCharsetName", "primaryKeyColumnNames", "columns", "comment"]
    assert change["table"]["primaryKeyColumnNames"] == ["id"] and change["table"]["comment"] is None
    column = change["table"]["columns"][1]
    assert list(column) == ["name", "jdbcType", "nativeType", "comment", "defaultValueExpression", "enumValues",
                            "typeName", "typeExpression", "charsetName", "length", "scale", "position", "optional",
                            "autoIncremented", "generated"]
    assert column["position"] == 2 and column["nativeType"] is None and column["optional"] is True
    schema = doc["schema"]
    assert list(schema)[:4] == ["optional", "type", "version", "name"]
    assert schema["name"] == "io.debezium.connector.mysql.SchemaChangeValue"
    key, value = encode(ddl, debezium_disable_schema=True)
    assert key == '{"payload":{"databaseName":"test"}}' and list(json.loads(value)) == ["payload"]


def test_ddl_enum_values_are_quoted() -> None:
    # ref §5.3 line 292: enumValues ("'a'" quoted)
    tbl = table(col("e", 247, elems=("a", "b")))
    ddl = DDLEvent(query="ALTER TABLE t ADD COLUMN e enum('a','b')", ddl_type=5, commit_ts=TS, schema="test",
                   table="t", table_info=tbl)
    change = json.loads(encode(ddl)[1])["payload"]["tableChanges"][0]
    assert change["type"] == "ALTER"
    assert change["table"]["columns"][1]["enumValues"] == ["'a'", "'b'"]


@pytest.mark.parametrize(("ddl_type", "change"), [
    (1, "CREATE"), (3, "CREATE"), (21, "CREATE"),                    # create schema/table/view
    (5, "ALTER"), (6, "ALTER"), (7, "ALTER"), (12, "ALTER"), (14, "ALTER"),
    (2, "DROP"), (4, "DROP"), (8, "DROP"), (24, "DROP"), (11, "DROP"),   # drop schema/table/index/view, truncate
])
def test_ddl_change_types(ddl_type: int, change: str) -> None:
    # ref §5.3 line 292: CREATE / ALTER / DROP per action
    tbl = table()
    ddl = DDLEvent(query="X", ddl_type=ddl_type, commit_ts=TS, schema="test", table="t", table_info=tbl,
                   pre_table_info=tbl)
    changes = json.loads(encode(ddl)[1])["payload"]["tableChanges"]
    if ddl_type == 11:
        assert changes == []  # TRUNCATE → empty tableChanges
    else:
        assert changes[0]["type"] == change


@pytest.mark.parametrize("ddl_type", [0, 9, 16, 30])
def test_unsupported_ddl_is_skipped(ddl_type: int) -> None:
    # ref §5.3 line 292, §7 line 324: other actions → ErrDDLUnsupportType, DDL skipped
    # (none, add foreign key, shard row id, set tiflash replica: in none of the CREATE/ALTER/DROP lists)
    ddl = DDLEvent(query="X", ddl_type=ddl_type, commit_ts=TS, schema="test", table="t", table_info=table())
    assert Encoder(clock=lambda: NOW).encode([ddl]) == []


def test_ddl_without_table_has_empty_table_changes() -> None:
    # ref §5.3 line 292: no table → empty tableChanges
    ddl = DDLEvent(query="CREATE DATABASE d", ddl_type=1, commit_ts=TS, schema="d", table="")
    key, value = encode(ddl, debezium_disable_schema=True)
    assert key == '{"payload":{"databaseName":"d"}}'
    payload = json.loads(value)["payload"]
    assert payload["tableChanges"] == [] and payload["source"]["db"] == "d" and payload["source"]["table"] == ""


def test_drop_table_has_null_table_and_pre_database() -> None:
    # ref §5.3 line 292: DROP TABLE → "table":null and databaseName from PreTableInfo
    pre = table(schema="old", name="t")
    ddl = DDLEvent(query="DROP TABLE t", ddl_type=4, commit_ts=TS, schema="test", table="t",
                   table_info=table(), pre_table_info=pre)
    key, value = encode(ddl, debezium_disable_schema=True)
    assert key == '{"payload":{"databaseName":"old"}}'
    payload = json.loads(value)["payload"]
    assert payload["databaseName"] == "old"
    assert payload["tableChanges"] == [{"type": "DROP", "id": '"test"."t"', "table": None}]


def test_rename_table_id() -> None:
    # ref §5.3 line 292: id = "db"."t" (rename: "preDb"."preT","db"."t")
    ddl = DDLEvent(query="RENAME TABLE a.x TO b.y", ddl_type=14, commit_ts=TS, schema="b", table="y",
                   table_info=table(schema="b", name="y"), pre_table_info=table(schema="a", name="x"))
    change = json.loads(encode(ddl)[1])["payload"]["tableChanges"][0]
    assert change["type"] == "ALTER" and change["id"] == '"a"."x","b"."y"'


# --------------------------------------------------------------------------- watermark, §7
def test_watermark_only_with_extension() -> None:
    # ref §5.3 line 293, §1.4 line 53, §7 line 324: only with enable-tidb-extension, op "m"
    assert Encoder(clock=lambda: NOW).encode([Watermark(resolved_ts=TS)]) == []
    key, value = encode(Watermark(resolved_ts=TS), enable_tidb_extension=True, cluster_id="c1")
    assert key == ('{"payload":{},"schema":{"type":"struct","name":"c1.watermark.Key","optional":false,'
                   '"fields":[]}}')
    source = SOURCE.replace('"default"', '"c1"').replace('"db":"test","table":"t"', '"db":"","table":""')
    assert value.startswith('{"payload":{"source":' + source + f',"ts_ms":{NOW},"transaction":null,"op":"m"}},'
                            '"schema":{"type":"struct","optional":false,"name":"c1.watermark.Envelope",'
                            '"version":1,"fields":[')
    key, value = encode(Watermark(resolved_ts=TS), enable_tidb_extension=True, debezium_disable_schema=True)
    assert key == '{"payload":{}}' and list(json.loads(value)) == ["payload"]


# --------------------------------------------------------------------------- §8 large messages
def test_large_message_handle_option_is_not_a_debezium_option() -> None:
    # ref §8 line 330: large-message-handle-option allowed for open, simple, canal-json only
    with pytest.raises(ConfigError):
        Encoder(large_message_handle_option="handle-key-only", enable_tidb_extension=True)
    with pytest.raises(ConfigError):
        Encoder(large_message_handle_option="claim-check", enable_tidb_extension=True,
                claim_check_storage_uri="file:///tmp/x")


def test_compression_covers_key_and_value() -> None:
    # ref §1.4 line 56: compression applied to the value only (…; Debezium: key and value)
    tbl = table(col("v", 15))
    raw = Encoder(clock=lambda: NOW).encode([insert(tbl, {"v": b"x" * 300})])[0]
    packed = Encoder(large_message_handle_compression="snappy", clock=lambda: NOW).encode(
        [insert(tbl, {"v": b"x" * 300})])[0]
    assert packed.value is not None and packed.key is not None
    assert decompress("snappy", packed.value, "debezium") == raw.value
    assert decompress("snappy", packed.key, "debezium") == raw.key


# --------------------------------------------------------------------------- more §5.2 / §1.1 / §1.5 edges
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(("code", "decimal"), [(4, -1), (4, 2), (5, -1)])
def test_nan_and_infinity_are_written_as_zero(bad: float, code: int, decimal: int) -> None:
    # ref §1.1 lines 28-29: FLOAT/DOUBLE NaN/±Inf replaced by 0 before any codec sees them
    c = col("c", code, decimal=decimal)
    _, out = encode(insert(table(c), {"c": bad}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":0}'


def test_float32_exponent_form_keeps_two_digit_exponent() -> None:
    # ref §1.5 line 65 (jsoniter 'e' without cleanup) applied to the float32 shortest repr (§5.2 line 274)
    c = col("c", 4, decimal=-1)
    _, out = encode(insert(table(c), {"c": 9.99999997e-08}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":1e-07}'


def test_large_decimal_goes_through_float64() -> None:
    # ref §5.2 line 268: ParseFloat(str) → float64, precision loss by design; §1.5 'e' at >= 1e21
    c = col("c", 246, flen=30, decimal=2)
    _, out = encode(insert(table(c), {"c": "12345678901234567890123.00"}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":1.2345678901234568e+22}'
    _, out = encode(insert(table(c), {"c": "-0.00"}), debezium_disable_schema=True)
    assert after_text(out) == '{"id":1,"c":-0}'


def test_binary_char_keeps_padding_and_text_columns_are_not_base64() -> None:
    # ref §5.2 lines 271-272 and §1.2 line 41: BinaryFlag iff the charset is binary
    c = col("c", 254, flen=3, binary=True)
    assert after_value(c, b"a\0\0") == "YQAA"
    assert after_value(col("c", 254, flen=3), b"abc") == "abc"


def test_ddl_value_schema_reuses_the_source_schema() -> None:
    # ref §5.3 line 292: schema {"optional":false,"type":"struct","version":1,"name":"…SchemaChangeValue"}
    ddl = DDLEvent(query="CREATE DATABASE d", ddl_type=1, commit_ts=TS, schema="d", table="")
    _, value = encode(ddl)
    dml_schema = json.loads(encode(insert(table(), {}))[1])["schema"]
    fields = json.loads(value)["schema"]["fields"]
    assert fields[0] == dml_schema["fields"][2]  # the same io.debezium.connector.mysql.Source struct
    assert [f["field"] for f in fields] == ["source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"]
    assert value.index('"schema":{"optional":false,"type":"struct","version":1,'
                       '"name":"io.debezium.connector.mysql.SchemaChangeValue","fields":[') > 0


def test_invalid_utf8_in_a_name_is_replaced_like_go_rune_error() -> None:
    # ref §5 line 247 (invalid chars → _, one per UTF-8 byte of the rune): Go ranges over a byte
    # that is not UTF-8 as U+FFFD, three bytes long
    name = b"a\xffb".decode("utf-8", "surrogateescape")
    key, value = encode(insert(table(schema=name, name=name), {}))
    assert json.loads(value)["schema"]["name"] == "default.a___b.a___b.Envelope"
    assert json.loads(key)["schema"]["name"] == "default.a___b.a___b.Key"
