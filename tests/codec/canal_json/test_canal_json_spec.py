"""Canal-JSON checked rule by rule against /work/shared/spec (ticdc-reference.md and canal-json.md).

Every test names the spec line it checks (``ref Lnnn`` = ticdc-reference.md line nnn, ``doc`` =
canal-json.md). Expected bytes are written out from the rule text, not taken from the encoder.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from builders import PK, columns_of, pre_columns_of, table
from builders import column as col
from pyticdc.codec import canal_json as cj
from pyticdc.errors import ConfigError, EncodeError
from pyticdc.model import (
    ActionType,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)

F = ColumnFlag
NOW = 1_700_000_000_000
TS = 429918007904436226  # docs' commit TSO
ES = TS >> 18  # 1640007049196


def clock() -> int:
    return NOW


ID = col("id", 3, PK, nullable=False)


def row(info: TableInfo, op: str, post: dict[str, Any] | None = None, pre: dict[str, Any] | None = None,
        commit_ts: int = TS) -> RowChange:
    return RowChange(op=Op[op], schema=info.schema, table=info.table, commit_ts=commit_ts,
                     columns=Row(post) if post is not None else None,
                     pre_columns=Row(pre) if pre is not None else None, table_info=info)


def enc(event: Any, **options: Any) -> str:
    messages = cj.Encoder(options, clock=clock).encode([event])
    assert len(messages) == 1
    assert messages[0].key is None  # ref L226: Kafka key nil
    value = messages[0].value
    assert value is not None
    return value.decode("utf-8")


def head(kind: str, pk: str = "[]", database: str = "test", name: str = "t") -> str:
    # ref L215-216, L221: id 0, sql "", es = commitTs >> 18, ts = now ms.
    return (f'{{"id":0,"database":"{database}","table":"{name}","pkNames":{pk},"isDdl":false,"type":"{kind}",'
            f'"es":{ES},"ts":{NOW},"sql":""')


def value_of(column: ColumnInfo, value: Any) -> str:
    """The raw JSON text of ``value`` in ``data`` for a one-column insert."""
    text = enc(row(table(column), "INSERT", {column.name: value}))
    prefix = ',"data":[{"' + column.name + '":'
    start = text.index(prefix) + len(prefix)
    assert text.endswith("}]}")
    return text[start:-3]


def sql_type_of(column: ColumnInfo, value: Any) -> str:
    text = enc(row(table(column), "INSERT", {column.name: value}))
    return str(orjson.loads(text)["sqlType"][column.name])


def mysql_type_of(column: ColumnInfo, **options: Any) -> str:
    text = enc(row(table(column), "INSERT", {column.name: None}), **options)
    return str(orjson.loads(text)["mysqlType"][column.name])


# =========================================================================== §4.1 message shape
def test_insert_exact_shape_no_pk_gives_empty_pk_names() -> None:
    # ref L215-223: field order; pkNames [] without PK; INSERT "old":null,"data":[{…}].
    info = table(col("a", 3, F.NULLABLE), col("b", 15, F.NULLABLE, text=True))
    got = enc(row(info, "INSERT", {"a": 1, "b": b"x"}))
    assert got == (head("INSERT") + ',"sqlType":{"a":4,"b":12},"mysqlType":{"a":"int","b":"varchar"},'
                   '"old":null,"data":[{"a":"1","b":"x"}]}')


def test_update_old_before_data_and_tidb_last() -> None:
    # ref L218 (old precedes data), L223 (UPDATE old=[pre], data=[post]), L225 (_tidb commitTs).
    info = table(ID, col("v", 3, F.NULLABLE))
    got = enc(row(info, "UPDATE", {"id": 1, "v": 2}, {"id": 1, "v": 1}), enable_tidb_extension=True)
    assert got == (head("UPDATE", '["id"]') + ',"sqlType":{"id":4,"v":4},"mysqlType":{"id":"int","v":"int"},'
                   f'"old":[{{"id":"1","v":"1"}}],"data":[{{"id":"1","v":"2"}}],"_tidb":{{"commitTs":{TS}}}}}')


def test_delete_data_is_pre_image_old_null() -> None:
    # ref L220 (DELETE = only pre-image), L223 (DELETE "old":null,"data":[{pre-image}]).
    info = table(ID, col("v", 15, F.NULLABLE, text=True))
    got = enc(row(info, "DELETE", pre={"id": 9, "v": b"gone"}))
    assert got == (head("DELETE", '["id"]') + ',"sqlType":{"id":4,"v":12},"mysqlType":{"id":"int","v":"varchar"},'
                   '"old":null,"data":[{"id":"9","v":"gone"}]}')


def test_row_without_images_is_dropped() -> None:
    # ref §1.3 L47: rows with neither image are dropped.
    info = table(ID)
    assert cj.Encoder(clock=clock).encode([row(info, "INSERT", {})]) == []


def test_pk_names_composite_in_column_order_and_not_handle_key() -> None:
    # ref L219: names of columns with the PrimaryKey flag, in column order (not index order).
    b = col("b", 3, PK, nullable=False)
    a = col("a", 3, PK, nullable=False)
    info = TableInfo(schema="test", table="t", table_id=1, columns=(b, a),
                     indexes=(IndexInfo(name="primary", columns=("a", "b"), primary=True, unique=True),))
    assert orjson.loads(enc(row(info, "INSERT", {"b": 1, "a": 2})))["pkNames"] == ["b", "a"]
    # A unique-key handle (HandleKey without PrimaryKey) is not a primary key: pkNames stays [].
    uk = col("u", 3, F.HANDLE_KEY | F.UNIQUE_KEY, nullable=False)
    text = enc(row(table(uk), "INSERT", {"u": 1}))
    assert '"pkNames":[]' in text


def test_pk_names_follow_the_sent_image() -> None:
    # ref L219 + L223: PrimaryKeyColumnNames() walks the image being sent (pre-image for DELETE).
    k1, k2 = col("k1", 3, PK, nullable=False), col("k2", 3, PK, nullable=False)
    info = table(k1, k2, col("v", 3, F.NULLABLE))
    assert '"pkNames":["k1","k2"]' in enc(row(info, "DELETE", pre={"k1": 1, "k2": 2, "v": 3}))
    assert '"pkNames":["k2"]' in enc(row(info, "INSERT", {"k2": 2, "v": 3}))


def test_virtual_generated_column_absent() -> None:
    # ref L222: virtual generated columns absent from sqlType and data.
    virtual = ColumnInfo(name="g", type_code=3, flags=int(F.BINARY | F.GENERATED), virtual=True)
    info = table(ID, virtual)
    got = orjson.loads(enc(row(info, "INSERT", {"id": 1})))
    assert got["sqlType"] == {"id": 4} and got["data"] == [{"id": "1"}] and got["mysqlType"] == {"id": "int"}


def test_sql_type_null_when_no_column_survives() -> None:
    # ref L222: sqlType is null only if no column survives (DELETE, handle-key-only, no handle key).
    info = table(col("a", 3, F.NULLABLE))
    got = enc(row(info, "DELETE", pre={"a": 1}), delete_only_output_handle_key_columns=True)
    assert ',"sqlType":null,' in got
    assert got.endswith(',"old":null,"data":[{}]}')


def test_es_is_commit_ts_shifted_and_ts_is_clock() -> None:
    # ref L216/L221 and doc ("es" 13-digit ms event time, "ts" build time).
    info = table(ID)
    got = orjson.loads(enc(row(info, "INSERT", {"id": 1}, commit_ts=(123 << 18) | 0x3FFFF)))
    assert got["es"] == 123 and got["ts"] == NOW and got["id"] == 0 and got["sql"] == ""


# =========================================================================== §1.5 escaping
def test_dml_strings_use_easyjson_escaping() -> None:
    # ref L62: \t \r \n \\ \" short; other <0x20 as \u00XX (\b,\f → \u0008,\u000c); < > & and
    # U+2028/2029 escaped; invalid UTF-8 → \ufffd. Applied to values, names, database and table.
    column = col('k"<', 15, F.NULLABLE, text=True)
    info = table(column, schema="d&b", name="t>1")
    raw = "\t\r\n\\\"\b\f\x01\x1f<>&\u2028\u2029é\x7f".encode() + b"\xff"
    got = enc(row(info, "INSERT", {'k"<': raw}))
    assert got.startswith('{"id":0,"database":"d\\u0026b","table":"t\\u003e1",')
    assert got.endswith(
        ',"data":[{"k\\"\\u003c":"\\t\\r\\n\\\\\\"\\u0008\\u000c\\u0001\\u001f\\u003c\\u003e\\u0026'
        '\\u2028\\u2029é\x7f\\ufffd"}]}')


def test_ddl_uses_encoding_json_escaping() -> None:
    # ref L63: goccy/go-json = encoding/json: \b \f short, HTML escaped, U+2028 escaped.
    ddl = DDLEvent(query="alter table t comment='\b\f<>&\u2028'", ddl_type=17, commit_ts=TS, schema="s",
                   table="t")
    got = enc(ddl)
    assert '"sql":"alter table t comment=\'\\b\\f\\u003c\\u003e\\u0026\\u2028\'"' in got


# =========================================================================== §4.2 values
@pytest.mark.parametrize(("column", "value", "expected"), [
    (col("i", 8), -9223372036854775808, '"-9223372036854775808"'),
    (col("u", 8, unsigned=True), 18446744073709551615, '"18446744073709551615"'),
    (col("f", 4), 3.140000104904175, '"3.14"'),  # float32 shortest digits
    (col("f", 4), 123456792.0, '"123456790"'),  # float32 shortest, positional
    (col("f", 4), 9.99999993922529e-08, '"0.0000001"'),  # float32(1e-7), no exponent
    (col("f", 4), -0.0, '"-0"'),
    (col("f", 4), float("-inf"), '"0"'),  # §1.1 L26: NaN/±Inf replaced by 0
    (col("f", 4), float("nan"), '"0"'),
    (col("d", 5), float("-inf"), '"0"'),  # §1.1 L27
    (col("d", 5), float("inf"), '"0"'),
    (col("d", 5), 1e21, '"1000000000000000000000"'),  # never exponent
    (col("d", 5), 1e-7, '"0.0000001"'),
    (col("d", 5), 1e20, '"100000000000000000000"'),
    (col("d", 5), 0.1, '"0.1"'),
    (col("d", 5), 5e-324, '"0.' + "0" * 323 + '5"'),
    (col("d", 5), 1.7976931348623157e308, '"17976931348623157' + "0" * 292 + '"'),
    (col("dec", 246, decimal=7, flen=13), "129012.1230000", '"129012.1230000"'),  # as is
    (col("dt", 12, decimal=3), "2020-01-02 03:04:05.123", '"2020-01-02 03:04:05.123"'),
    (col("ts", 7), "2020-01-02 03:04:05", '"2020-01-02 03:04:05"'),
    (col("dd", 10), "2020-01-02", '"2020-01-02"'),
    (col("tm", 11, decimal=6), "-838:59:59.000000", '"-838:59:59.000000"'),  # negative TIME as is
    (col("y", 13, unsigned=True), 2020, '"2020"'),
    (col("j", 245), '{"key1": "value1", "a": "<b>"}', '"{\\"key1\\": \\"value1\\", \\"a\\": \\"\\u003cb\\u003e\\"}"'),
    (col("e", 247, text=True, elems=("a", "b")), 2, '"2"'),  # ENUM index, not the name
    (col("s", 248, text=True, elems=("a", "b")), 3, '"3"'),  # SET bitmask
    (col("b", 16, unsigned=True, flen=64), 18446744073709551615, '"18446744073709551615"'),  # BIT integer
    (col("v", 225), "[1,2,3]", '"[1,2,3]"'),  # VECTOR String()
    (col("n", 3, F.NULLABLE), None, "null"),
    (col("c", 254, text=True), b"", '""'),  # empty string is not NULL
])
def test_format_value(column: ColumnInfo, value: Any, expected: str) -> None:
    # ref L229 (formatValue), §1.1 L21-36 (model values).
    assert value_of(column, value) == expected


def test_binary_bytes_are_iso_8859_1_docs_example() -> None:
    # ref L229 + doc "Binary and Blob types": [5 7 10 15 36 50 43 99 120 60 38 255 254 45 55 70].
    data = bytes([5, 7, 10, 15, 36, 50, 43, 99, 120, 60, 38, 255, 254, 45, 55, 70])
    got = value_of(col("c_varbinary", 15, F.NULLABLE), data)
    assert got == '"\\u0005\\u0007\\n\\u000f$2+cx\\u003c\\u0026ÿþ-7F"'
    assert got.encode().endswith(b"\xc3\xbf\xc3\xbe-7F\"")  # ÿ þ as UTF-8


def test_binary_high_bytes_map_to_code_points() -> None:
    # ref L229: each byte → the code point of the same value; 0x80-0x9F stay literal (doc table).
    got = value_of(col("b", 252), bytes([0x80, 0x9F, 0xA0, 0x00, 0x3E]))
    assert got == '"\u0080\u009f\u00a0\\u0000\\u003e"'


def test_text_bytes_are_raw_utf8() -> None:
    # ref L229: []byte without BinaryFlag → the raw bytes as a string (text of any length type).
    for code in (254, 15, 249, 250, 251, 252):
        assert value_of(col("t", code, text=True), "中文ÿ".encode()) == '"中文ÿ"'


# =========================================================================== §4.3 mysqlType
@pytest.mark.parametrize(("column", "expected"), [
    (col("a", 1), "tinyint"), (col("a", 2), "smallint"), (col("a", 9), "mediumint"), (col("a", 3), "int"),
    (col("a", 8), "bigint"), (col("a", 4), "float"), (col("a", 5), "double"), (col("a", 246), "decimal"),
    (col("a", 10), "date"), (col("a", 12), "datetime"), (col("a", 7), "timestamp"), (col("a", 11), "time"),
    (col("a", 13, unsigned=True, zerofill=True), "year"), (col("a", 16, unsigned=True), "bit"),
    (col("a", 245), "json"), (col("a", 247, text=True), "enum"), (col("a", 248, text=True), "set"),
    (col("a", 254, text=True), "char"), (col("a", 15, text=True), "varchar"),
    (col("a", 253, text=True), "var_string"), (col("a", 249, text=True), "tinytext"),
    (col("a", 252, text=True), "text"), (col("a", 250, text=True), "mediumtext"),
    (col("a", 251, text=True), "longtext"), (col("a", 225), "vector"),
    # binary charset: text→blob, char→binary, varchar→varbinary
    (col("a", 249), "tinyblob"), (col("a", 252), "blob"), (col("a", 250), "mediumblob"),
    (col("a", 251), "longblob"), (col("a", 254), "binary"), (col("a", 15), "varbinary"),
    # unsigned (not bit/year), zerofill (not year)
    (col("a", 3, unsigned=True), "int unsigned"), (col("a", 8, unsigned=True), "bigint unsigned"),
    (col("a", 3, unsigned=True, zerofill=True), "int unsigned zerofill"),
    (col("a", 246, unsigned=True), "decimal unsigned"),
    (col("a", 1, flen=1), "tinyint"),  # BOOL
    (col("a", 16, unsigned=True, zerofill=True), "bit zerofill"),  # zerofill is skipped only for year
])
def test_mysql_type_default(column: ColumnInfo, expected: str) -> None:
    # ref L232.
    assert mysql_type_of(column) == expected


@pytest.mark.parametrize(("column", "expected"), [
    (col("a", 3, flen=11, decimal=0), "int(11)"),
    (col("a", 3, flen=10, decimal=0, unsigned=True), "int(10) unsigned"),
    (col("a", 1, flen=3, decimal=0, unsigned=True, zerofill=True), "tinyint(3) unsigned zerofill"),
    (col("a", 8, flen=20, decimal=0, unsigned=True, zerofill=True), "bigint(20) unsigned zerofill"),
    (col("a", 246, flen=10, decimal=0), "decimal(10,0)"),
    (col("a", 4, flen=10, decimal=3), "float(10,3)"),
    (col("a", 4, flen=10, decimal=-1), "float"),
    (col("a", 5, flen=22, decimal=-1), "double"),
    (col("a", 11, flen=14, decimal=3), "time(3)"),
    (col("a", 12, flen=23, decimal=3), "datetime(3)"),
    (col("a", 13, flen=4, decimal=0, unsigned=True, zerofill=True), "year(4)"),
    (col("a", 16, flen=1, decimal=0, unsigned=True), "bit(1)"),
    (col("a", 254, text=True, flen=1, decimal=0), "char(1)"),
    (col("a", 254, flen=1, decimal=0), "binary(1)"),
    (col("a", 15, flen=23, decimal=0), "varbinary(23)"),
    (col("a", 247, text=True, elems=("a", "b", "c")), "enum('a','b','c')"),
    (col("a", 248, text=True, elems=("a", "b", "c")), "set('a','b','c')"),
    (col("a", 245, flen=4294967295, decimal=0), "json"),
    (col("a", 252, text=True, flen=65535, decimal=0), "text"),
    (col("a", 252, flen=65535, decimal=0), "blob"),
])
def test_mysql_type_content_compatible(column: ColumnInfo, expected: str) -> None:
    # ref L233: GetTypeDesc() full type text under content-compatible=true.
    assert mysql_type_of(column, content_compatible=True) == expected


def test_mysql_type_content_compatible_uses_given_type_desc() -> None:
    # ref L233 / vectors README column.type_desc: the TiDB description is used verbatim.
    column = col("a", 246, flen=10, decimal=4, type_desc="decimal(10,4)")
    assert mysql_type_of(column, content_compatible=True) == "decimal(10,4)"
    assert mysql_type_of(column) == "decimal"  # doc: TiCDC omits parameters by default


# =========================================================================== §4.4 sqlType
@pytest.mark.parametrize(("column", "value", "expected"), [
    (col("a", 1), 1, -6), (col("a", 2), 1, 5), (col("a", 3), 1, 4), (col("a", 9), 1, 4), (col("a", 8), 1, -5),
    (col("a", 4), 1.5, 7), (col("a", 5), 1.5, 8), (col("a", 246), "1", 3), (col("a", 10), "2020-01-01", 91),
    (col("a", 12), "2020-01-01 00:00:00", 93), (col("a", 7), "2020-01-01 00:00:00", 93),
    (col("a", 11), "00:00:00", 92), (col("a", 13, unsigned=True), 2020, 12), (col("a", 247, text=True), 1, 4),
    (col("a", 248, text=True), 1, -7), (col("a", 16, unsigned=True), 1, -7), (col("a", 245), "{}", 12),
    (col("a", 225), "[1]", 12), (col("a", 254, text=True), b"x", 1), (col("a", 254), b"x", 2004),
    (col("a", 15, text=True), b"x", 12), (col("a", 15), b"x", 2004), (col("a", 253, text=True), b"x", 12),
    (col("a", 253), b"x", 2004),
    (col("a", 249, text=True), b"x", 2005), (col("a", 252, text=True), b"x", 2005),
    (col("a", 250, text=True), b"x", 2005), (col("a", 251, text=True), b"x", 2005),
    (col("a", 249), b"x", 2004), (col("a", 252), b"x", 2004), (col("a", 250), b"x", 2004),
    (col("a", 251), b"x", 2004), (col("a", 6), None, 0), (col("a", 255), b"x", -2),
])
def test_sql_type_codes(column: ColumnInfo, value: Any, expected: int) -> None:
    # ref L236.
    assert sql_type_of(column, value) == str(expected)


@pytest.mark.parametrize(("code", "value", "expected"), [
    (1, 127, -6), (1, 128, 5), (1, 255, 5),
    (2, 32767, 5), (2, 32768, 4),
    (9, 16777215, 4),  # MEDIUMINT never promoted
    (3, 2147483647, 4), (3, 2147483648, -5),
    (8, 9223372036854775807, -5), (8, 9223372036854775808, 3), (8, 18446744073709551615, 3),
    (1, None, -6), (8, None, -5),  # NULL: no promotion
    (1, "200", 5),  # string values are parsed
    (4, 1e30, 7), (5, 1e300, 8), (246, "99999999999999999999", 3),  # FLOAT/DOUBLE/DECIMAL skipped
])
def test_unsigned_promotion_by_value(code: int, value: Any, expected: int) -> None:
    # ref L237 and doc "Integer types" table.
    assert sql_type_of(col("a", code, F.NULLABLE, unsigned=True), value) == str(expected)


def test_unsigned_promotion_skipped_for_year_and_bit() -> None:
    # ref L237: YEAR and BIT are skipped although TiDB marks them unsigned (§1.2 L44).
    assert sql_type_of(col("y", 13, unsigned=True), 2155) == "12"
    assert sql_type_of(col("b", 16, unsigned=True), 18446744073709551615) == "-7"


def test_signed_never_promoted() -> None:
    # ref L237: promotion only applies to UNSIGNED columns.
    assert sql_type_of(col("a", 8), 9223372036854775807) == "-5"


def test_promotion_reads_post_image_for_update_and_pre_image_for_delete() -> None:
    # ref L222-223 with L237: sqlType describes the image that is sent in data.
    info = table(ID, col("u", 1, F.NULLABLE, unsigned=True))
    update = orjson.loads(enc(row(info, "UPDATE", {"id": 1, "u": 200}, {"id": 1, "u": 1})))
    assert update["sqlType"]["u"] == 5
    delete = orjson.loads(enc(row(info, "DELETE", pre={"id": 1, "u": 200})))
    assert delete["sqlType"]["u"] == 5


# =========================================================================== options
def test_only_output_updated_columns_trims_old_only() -> None:
    # ref L223: old drops columns whose value is unchanged; data keeps all. NULL==NULL is unchanged.
    info = table(ID, col("a", 3, F.NULLABLE), col("b", 15, F.NULLABLE, text=True), col("n", 3, F.NULLABLE),
                 col("m", 3, F.NULLABLE))
    event = row(info, "UPDATE", {"id": 1, "a": 2, "b": b"same", "n": None, "m": 5},
                {"id": 1, "a": 1, "b": b"same", "n": None, "m": None})
    for options in ({"only_output_updated_columns": True}, {"content_compatible": True}):
        got = enc(event, **options)
        assert got.endswith(',"old":[{"a":"1","m":null}],"data":[{"id":"1","a":"2","b":"same","n":null,"m":"5"}]}')
    # default: old carries every column (doc "Event of Update Type")
    assert enc(event).endswith(',"old":[{"id":"1","a":"1","b":"same","n":null,"m":null}],'
                               '"data":[{"id":"1","a":"2","b":"same","n":null,"m":"5"}]}')


def test_only_output_updated_columns_all_equal_gives_empty_object() -> None:
    # ref L223 with fillColumns: an image exists, so old is [{}] when nothing changed.
    info = table(ID, col("a", 3, F.NULLABLE))
    got = enc(row(info, "UPDATE", {"id": 1, "a": 1}, {"id": 1, "a": 1}), only_output_updated_columns=True)
    assert ',"old":[{}],"data":[{"id":"1","a":"1"}]}' in got


def test_delete_only_output_handle_key_columns() -> None:
    # ref L224: DELETE restricted to HandleKey columns in sqlType, mysqlType and data; no marker.
    info = table(ID, col("a", 3, F.NULLABLE))
    got = enc(row(info, "DELETE", pre={"id": 4, "a": 5}), delete_only_output_handle_key_columns=True,
              enable_tidb_extension=True)
    assert got == (head("DELETE", '["id"]') + ',"sqlType":{"id":4},"mysqlType":{"id":"int"},'
                   f'"old":null,"data":[{{"id":"4"}}],"_tidb":{{"commitTs":{TS}}}}}')
    # INSERT and UPDATE are not restricted
    ins = orjson.loads(enc(row(info, "INSERT", {"id": 4, "a": 5}), delete_only_output_handle_key_columns=True))
    assert ins["data"] == [{"id": "4", "a": "5"}]


# =========================================================================== §4.5 DDL / watermark
def test_ddl_exact_shape() -> None:
    # ref L239-240: struct order, data before old, nulls, isDdl true, es, sql, _tidb commitTs.
    ddl = DDLEvent(query="create table t (a int)", ddl_type=3, commit_ts=TS, schema="test", table="t")
    base = ('{"id":0,"database":"test","table":"t","pkNames":null,"isDdl":true,"type":"CREATE",'
            f'"es":{ES},"ts":{NOW},"sql":"create table t (a int)","sqlType":null,"mysqlType":null,'
            '"data":null,"old":null')
    assert enc(ddl) == base + "}"
    assert enc(ddl, enable_tidb_extension=True) == base + f',"_tidb":{{"commitTs":{TS}}}}}'


def test_ddl_docs_example_drop_database() -> None:
    # doc "DDL Event" example (database-level DDL: table "", type QUERY).
    ddl = DDLEvent(query="drop database if exists test", ddl_type=2, commit_ts=TS, schema="test", table="")
    assert enc(ddl, enable_tidb_extension=True) == (
        '{"id":0,"database":"test","table":"","pkNames":null,"isDdl":true,"type":"QUERY",'
        f'"es":{ES},"ts":{NOW},"sql":"drop database if exists test","sqlType":null,"mysqlType":null,'
        f'"data":null,"old":null,"_tidb":{{"commitTs":{TS}}}}}')


A = ActionType
DDL_TYPES = {
    "CREATE": [A.CREATE_TABLE],
    "RENAME": [A.RENAME_TABLE, A.RENAME_TABLES],
    "CINDEX": [A.ADD_INDEX, A.ADD_FOREIGN_KEY, A.ADD_PRIMARY_KEY],
    "DINDEX": [A.DROP_INDEX, A.DROP_FOREIGN_KEY, A.DROP_PRIMARY_KEY],
    "ALTER": [A.ADD_COLUMN, A.DROP_COLUMN, A.MODIFY_COLUMN, A.REBASE_AUTO_ID, A.SET_DEFAULT_VALUE,
              A.MODIFY_TABLE_COMMENT, A.RENAME_INDEX, A.ADD_TABLE_PARTITION, A.DROP_TABLE_PARTITION,
              A.TRUNCATE_TABLE_PARTITION, A.MODIFY_TABLE_CHARSET_AND_COLLATE, A.ALTER_INDEX_VISIBILITY,
              A.MULTI_SCHEMA_CHANGE, A.REORGANIZE_PARTITION, A.ALTER_TABLE_PARTITIONING, A.REMOVE_PARTITIONING],
    "ERASE": [A.DROP_TABLE],
    "TRUNCATE": [A.TRUNCATE_TABLE],
    "QUERY": [A.CREATE_SCHEMA, A.DROP_SCHEMA, A.CREATE_VIEW, A.DROP_VIEW, A.CREATE_SEQUENCE, A.DROP_SEQUENCE,
              A.SHARD_ROW_ID, A.RECOVER_TABLE, A.LOCK_TABLE, A.SET_TIFLASH_REPLICA, A.CREATE_TABLES,
              A.ALTER_TABLE_ATTRIBUTES, A.ALTER_TTL_INFO, A.NONE,
              # not in the ALTER list of ref L240 → "everything else → QUERY"
              A.ADD_COLUMNS, A.DROP_COLUMNS, A.EXCHANGE_TABLE_PARTITION, A.MODIFY_SCHEMA_CHARSET_AND_COLLATE],
}


@pytest.mark.parametrize(("action", "canal"), [(a, c) for c, actions in DDL_TYPES.items() for a in actions])
def test_ddl_type_strings(action: ActionType, canal: str) -> None:
    # ref L240 convertDdlEventType.
    ddl = DDLEvent(query="q", ddl_type=int(action), commit_ts=TS, schema="s", table="t")
    assert f'"type":"{canal}"' in enc(ddl)


def test_ddl_decodes_as_ddl() -> None:
    # ref L241: decoder: isDdl → DDL.
    ddl = DDLEvent(query="truncate table t", ddl_type=11, commit_ts=TS, schema="s", table="t")
    [decoded] = cj.Decoder(enable_tidb_extension=True).decode(enc(ddl, enable_tidb_extension=True).encode())
    assert isinstance(decoded, DDLEvent) and decoded.commit_ts == TS and decoded.query == "truncate table t"


def test_watermark_exact_shape() -> None:
    # ref L241 and doc "WATERMARK Event"; ref L53 / §7: nothing without the extension.
    got = enc(Watermark(resolved_ts=TS), enable_tidb_extension=True)
    assert got == ('{"id":0,"database":"","table":"","pkNames":null,"isDdl":false,"type":"TIDB_WATERMARK",'
                   f'"es":{ES},"ts":{NOW},"sql":"","sqlType":null,"mysqlType":null,"data":null,"old":null,'
                   f'"_tidb":{{"watermarkTs":{TS}}}}}')
    assert cj.Encoder(clock=clock).encode([Watermark(resolved_ts=TS)]) == []
    assert cj.Decoder().decode(got.encode()) == [Watermark(resolved_ts=TS)]


# =========================================================================== §8 large messages
def big() -> tuple[TableInfo, RowChange]:
    info = table(ID, col("a", 15, F.NULLABLE, text=True))
    return info, row(info, "INSERT", {"id": 7, "a": b"x" * 300})


def test_size_check_boundary() -> None:
    # ref L226: too large iff len(value) + 36 > max-message-bytes.
    _, event = big()
    size = len(enc(event).encode())
    assert enc(event, max_message_bytes=size + 36)  # fits exactly
    with pytest.raises(EncodeError):
        cj.Encoder({"max_message_bytes": size + 35}, clock=clock).encode([event])


def test_handle_key_only_reencoding() -> None:
    # ref L224-225, L332: handle-key columns only + "onlyHandleKey":true.
    _, event = big()
    options = {"enable_tidb_extension": True, "large_message_handle_option": "handle-key-only"}
    size = len(enc(event, **options).encode())  # fits: normal message, no marker
    got = enc(event, **options, max_message_bytes=size + 35)
    assert got == (head("INSERT", '["id"]') + ',"sqlType":{"id":4},"mysqlType":{"id":"int"},'
                   f'"old":null,"data":[{{"id":"7"}}],"_tidb":{{"commitTs":{TS},"onlyHandleKey":true}}}}')
    [decoded] = cj.Decoder(options).decode(got.encode())
    assert isinstance(decoded, RowChange) and decoded.handle_key_only
    with pytest.raises(EncodeError):  # still too large → error (ref L332)
        cj.Encoder({**options, "max_message_bytes": 100}, clock=clock).encode([event])


def test_handle_key_only_update_restricts_old_and_data() -> None:
    # ref L224: old is restricted too.
    info, _ = big()
    event = row(info, "UPDATE", {"id": 7, "a": b"y" * 300}, {"id": 7, "a": b"x" * 300})
    options = {"enable_tidb_extension": True, "large_message_handle_option": "handle-key-only",
               "max_message_bytes": 400}
    assert enc(event, **options).endswith(
        f',"old":[{{"id":"7"}}],"data":[{{"id":"7"}}],"_tidb":{{"commitTs":{TS},"onlyHandleKey":true}}}}')


class Store:
    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}

    def put(self, key: bytes | None, value: bytes) -> str:
        location = f"s3://bucket/prefix/{len(self.items):08d}-uuid.json"
        self.items[location] = value
        return location

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        return None, self.items[location]


def test_claim_check_location_message() -> None:
    # ref L225, L333: original message stored, location + handle-key columns sent (no onlyHandleKey).
    _, event = big()
    store = Store()
    options = {"enable_tidb_extension": True, "large_message_handle_option": "claim-check",
               "claim_check_storage_uri": "s3://bucket/prefix", "max_message_bytes": 500}
    [message] = cj.Encoder(options, clock=clock, claim_check=store).encode([event])
    [(location, stored)] = store.items.items()
    assert stored == enc(event, enable_tidb_extension=True).encode()  # the original message
    assert message.value == (
        head("INSERT", '["id"]') + ',"sqlType":{"id":4},"mysqlType":{"id":"int"},'
        f'"old":null,"data":[{{"id":"7"}}],"_tidb":{{"commitTs":{TS},"claimCheckLocation":"{location}"}}}}'
    ).encode()
    [resolved] = cj.Decoder(options, claim_check=store).decode(message.value)
    assert isinstance(resolved, RowChange) and resolved.columns == event.columns


def test_large_message_option_requires_extension() -> None:
    # ref L330: allowed for canal-json only with enable-tidb-extension.
    with pytest.raises(ConfigError):
        cj.Encoder(large_message_handle_option="handle-key-only")


# =========================================================================== decoder (ref L243)
def test_decoder_value_recovery() -> None:
    # ref L243: binary → ISO-8859-1 bytes; bit/set ParseUint; ints/year/enum ParseInt;
    # bigint int then uint; float ParseFloat(32).
    info = table(ID, col("bin", 15, F.NULLABLE), col("bit", 16, F.NULLABLE, unsigned=True),
                 col("set", 248, F.NULLABLE, text=True), col("y", 13, F.NULLABLE, unsigned=True),
                 col("e", 247, F.NULLABLE, text=True), col("big", 8, F.NULLABLE, unsigned=True),
                 col("f", 4, F.NULLABLE), col("txt", 252, F.NULLABLE, text=True))
    values = {"id": 1, "bin": bytes([0, 0x3C, 0xFF]), "bit": 18446744073709551615, "set": 5, "y": 2020, "e": 1,
              "big": 18446744073709551615, "f": 3.140000104904175, "txt": "é".encode()}
    [decoded] = cj.Decoder(enable_tidb_extension=True).decode(
        enc(row(info, "INSERT", values), enable_tidb_extension=True).encode())
    assert dict(columns_of(decoded)) == values
    assert isinstance(decoded, RowChange) and decoded.commit_ts == TS


def test_decoder_update_with_trimmed_old_merges_post_image() -> None:
    # ref L223: with only-output-updated-columns old lacks unchanged columns; pre = post overlaid with old.
    info = table(ID, col("a", 3, F.NULLABLE), col("b", 3, F.NULLABLE))
    event = row(info, "UPDATE", {"id": 1, "a": 2, "b": 3}, {"id": 1, "a": 1, "b": 3})
    [decoded] = cj.Decoder().decode(enc(event, only_output_updated_columns=True).encode())
    assert dict(pre_columns_of(decoded)) == {"id": 1, "a": 1, "b": 3}
    assert isinstance(decoded, RowChange) and decoded.op is Op.UPDATE


# =========================================================================== escaping, property-checked
def easyjson_reference(data: bytes) -> str:
    """ref L62 restated byte by byte (jwriter.String over Go's utf8.DecodeRuneInString)."""
    out = ['"']
    i = 0
    short = {0x09: "\\t", 0x0D: "\\r", 0x0A: "\\n", 0x5C: "\\\\", 0x22: '\\"'}
    while i < len(data):
        c = data[i]
        if c < 0x80:
            if c in short:
                out.append(short[c])
            elif c < 0x20 or c in (0x3C, 0x3E, 0x26):
                out.append(f"\\u{c:04x}")
            else:
                out.append(chr(c))
            i += 1
            continue
        for width in (2, 3, 4):
            try:
                rune = data[i:i + width].decode("utf-8")
            except UnicodeDecodeError:
                continue
            break
        else:
            out.append("\\ufffd")  # RuneError, width 1
            i += 1
            continue
        out.append("\\u2028" if rune == "\u2028" else "\\u2029" if rune == "\u2029" else rune)
        i += width
    return "".join(out) + '"'


SAMPLES = [bytes(range(256)), b"\xed\xa0\x80", b"\xc0\x80", b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80",
           b"\xe4\xb8A\xe4\xb8\xad", "\u2028\u2029\ufffd".encode(), b"\xf4\x90\x80\x80", b"\x7f\x80"]


@pytest.mark.parametrize("seed", range(40))
def test_text_and_binary_escaping_match_reference(seed: int) -> None:
    # ref L62 (easyjson) for text columns; L229 (ISO-8859-1 then easyjson) for binary columns.
    import random

    rng = random.Random(seed)
    data = SAMPLES[seed] if seed < len(SAMPLES) else bytes(
        rng.choice([rng.randrange(256), rng.randrange(0x20), 0xE2, 0x80, 0xA8, 0x3C]) for _ in range(40))
    assert value_of(col("t", 15, F.NULLABLE, text=True), data) == easyjson_reference(data)
    latin1 = data.decode("latin-1").encode("utf-8")
    assert value_of(col("b", 15, F.NULLABLE), data) == easyjson_reference(latin1)


def test_compression_applies_to_every_message() -> None:
    # ref L57 / L226: large-message-handle-compression compresses the value of rows, DDL and watermarks.
    from pyticdc.codec.compression import decompress

    info = table(ID)
    for event in (row(info, "INSERT", {"id": 1}), Watermark(resolved_ts=TS),
                  DDLEvent(query="create table t (a int)", ddl_type=3, commit_ts=TS, schema="s", table="t")):
        plain = enc(event, enable_tidb_extension=True).encode()
        [message] = cj.Encoder({"enable_tidb_extension": True, "large_message_handle_compression": "lz4"},
                               clock=clock).encode([event])
        assert message.value is not None and decompress("lz4", message.value, "canal-json") == plain


# =========================================================================== decoding the docs' messages
DOC_INSERT = (
    '{"id":0,"database":"test","table":"tp_int","pkNames":["id"],"isDdl":false,"type":"INSERT",'
    '"es":1639633141221,"ts":1639633142960,"sql":"","sqlType":{"c_bigint":-5,"c_int":4,"c_mediumint":4,'
    '"c_smallint":5,"c_tinyint":-6,"id":4},"mysqlType":{"c_bigint":"bigint","c_int":"int",'
    '"c_mediumint":"mediumint","c_smallint":"smallint","c_tinyint":"tinyint","id":"int"},'
    '"data":[{"c_bigint":"9223372036854775807","c_int":"2147483647","c_mediumint":"8388607",'
    '"c_smallint":"32767","c_tinyint":"127","id":"2"}],"old":null,"_tidb":{"commitTs":429918007904436226}}'
)


def test_decode_docs_dml_example() -> None:
    # doc "DML Event" example; ref L243 (ints ParseInt), L225 (_tidb.commitTs is the commit TSO).
    [event] = cj.Decoder(enable_tidb_extension=True).decode(DOC_INSERT.encode())
    assert isinstance(event, RowChange)
    assert event.op is Op.INSERT and event.commit_ts == TS and (event.schema, event.table) == ("test", "tp_int")
    assert dict(columns_of(event)) == {"c_bigint": 9223372036854775807, "c_int": 2147483647, "c_mediumint": 8388607,
                                   "c_smallint": 32767, "c_tinyint": 127, "id": 2}


def test_decode_official_canal_update_with_modified_columns_only() -> None:
    # doc "Event of Update Type": official Canal's old holds only modified columns.
    message = DOC_INSERT.replace('"type":"INSERT"', '"type":"UPDATE"').replace(
        '"c_int":"2147483647"', '"c_int":"0"').replace('"c_tinyint":"127"', '"c_tinyint":"0"').replace(
        '"old":null', '"old":[{"c_int":"2147483647","c_tinyint":"127"}]')
    [event] = cj.Decoder().decode(message.encode())
    assert isinstance(event, RowChange) and event.op is Op.UPDATE
    pre = pre_columns_of(event)
    assert columns_of(event)["c_int"] == 0 and pre["c_int"] == 2147483647
    assert pre["c_tinyint"] == 127 and pre["c_bigint"] == 9223372036854775807


def test_decode_docs_binary_example_back_to_bytes() -> None:
    # ref L243: mysqlType containing "binary" → ISO-8859-1 bytes; doc byte list.
    message = ('{"id":0,"database":"d","table":"t","pkNames":[],"isDdl":false,"type":"INSERT","es":1,"ts":1,'
               '"sql":"","sqlType":{"c_varbinary":2004},"mysqlType":{"c_varbinary":"varbinary"},"old":null,'
               '"data":[{"c_varbinary":"\\u0005\\u0007\\n\\u000f$2+cx\\u003c\\u0026ÿþ-7F"}]}')
    [event] = cj.Decoder().decode(message.encode())
    assert columns_of(event)["c_varbinary"] == bytes([5, 7, 10, 15, 36, 50, 43, 99, 120, 60, 38, 255, 254, 45, 55, 70])
    assert isinstance(event, RowChange) and event.commit_ts == 1 << 18  # no extension: es << 18


def test_decode_docs_watermark_and_ddl_examples() -> None:
    # doc "WATERMARK Event" / "DDL Event" examples; ref L241 message type rules.
    watermark = ('{"id":0,"database":"","table":"","pkNames":null,"isDdl":false,"type":"TIDB_WATERMARK",'
                 '"es":1640007049196,"ts":1640007050284,"sql":"","sqlType":null,"mysqlType":null,"data":null,'
                 '"old":null,"_tidb":{"watermarkTs":429918007904436226}}')
    assert cj.Decoder().decode(watermark.encode()) == [Watermark(resolved_ts=TS)]
    ddl = ('{"id":0,"database":"test","table":"","pkNames":null,"isDdl":true,"type":"QUERY","es":1639633094670,'
           '"ts":1639633095489,"sql":"drop database if exists test","sqlType":null,"mysqlType":null,"data":null,'
           '"old":null,"_tidb":{"commitTs":429918007904436226}}')
    [event] = cj.Decoder().decode(ddl.encode())
    assert isinstance(event, DDLEvent) and event.query == "drop database if exists test" and event.commit_ts == TS
    assert event.ddl_type == ActionType.DROP_SCHEMA
