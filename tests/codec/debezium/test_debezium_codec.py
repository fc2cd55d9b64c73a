"""TiCDC Debezium codec: golden vectors, per-type rules of ticdc-reference.md §5, round trips against
the documented projection, the Debezium MySQL connector's own output, and garbage → DecodeError."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
from builders import PK, column, insert
from pyticdc import ConfigError, DDLEvent, DecodeError, RowChange, Watermark
from pyticdc.codec import debezium
from pyticdc.codec.debezium import Decoder, Encoder
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, Row, TableInfo
from pyticdc.mysql import ENUM_SET_TYPES, STRING_TYPES
from pyticdc.vectors import check_file
from pyticdc.vectors.debezium import round_trip_case
from pyticdc.vectors.generic import encode_case
from strategies import row_changes, tsos

F = ColumnFlag
NOW = 1_701_326_309_000


def _col(name: str, code: int, **kw: Any) -> ColumnInfo:
    """``builders.column`` with TiDB's charset per type (``binary=`` overrides) and the Nullable flag."""
    binary = kw.pop("binary", code not in STRING_TYPES | ENUM_SET_TYPES)
    nullable = kw.pop("nullable", True)
    flags = kw.pop("flags", 0) | (F.NULLABLE if nullable else 0)
    return column(name, code, flags, text=not binary, nullable=nullable, **kw)


ID = _col("id", 3, flags=PK, nullable=False, flen=11, decimal=0)


def _table(*columns: ColumnInfo, schema: str = "test", table: str = "t") -> TableInfo:
    """A table keyed by its INT handle ``id``."""
    return builders.table(ID, *columns, schema=schema, name=table, table_id=10, pk_is_handle=True)


def _insert(table: TableInfo, values: dict[str, Any], commit_ts: int = 1 << 18) -> RowChange:
    """An INSERT of ``values`` with ``id`` 1."""
    return insert(table, {"id": 1, **values}, commit_ts=commit_ts)


def _json(data: bytes) -> Any:
    """JSON that may hold raw non-UTF-8 bytes in strings (json-iterator passes them through)."""
    return json.loads(data.decode("utf-8", "surrogateescape"))


def _after(message_value: bytes) -> dict[str, Any]:
    payload: dict[str, Any] = _json(message_value)["payload"]
    after: dict[str, Any] = payload["after"]
    return after


def _encode_one(event: Event, **options: Any) -> tuple[bytes, bytes]:
    messages = Encoder(options, clock=lambda: NOW).encode([event])
    assert len(messages) == 1
    key, value = messages[0].key, messages[0].value
    assert key is not None and value is not None
    return key, value


def _field_schema(value: bytes, name: str) -> dict[str, Any]:
    fields = _json(value)["schema"]["fields"][1]["fields"]
    found: dict[str, Any] = next(f for f in fields if f.get("field") == name)
    return found


# --------------------------------------------------------------------------- golden vectors
def test_debezium_vectors_pass(vectors_dir: Path) -> None:
    results = check_file(vectors_dir / "debezium.json")
    failures = [f"{r.name}: {r.reason}" for r in results if not r.passed]
    assert not failures
    assert len(results) >= 13


def _vector_cases(vectors_dir: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = orjson.loads((vectors_dir / "debezium.json").read_bytes())["cases"]
    return cases


def test_vectors_byte_exact_where_the_text_is_given(vectors_dir: Path) -> None:
    checked = 0
    for case in _vector_cases(vectors_dir):
        if not isinstance(case.get("expected_value"), str):
            continue
        messages = encode_case("debezium", case)
        assert len(messages) == 1, case["name"]
        assert messages[0].value == case["expected_value"].encode(), case["name"]
        assert messages[0].key == case["expected_key"].encode(), case["name"]
        checked += 1
    assert checked >= 9


def test_vector_inputs_round_trip(vectors_dir: Path) -> None:
    for case in _vector_cases(vectors_dir):
        if case.get("direction") == "decode" or "expected_error" in case:
            continue
        assert round_trip_case(case, vectors_dir) is None, case["name"]


# --------------------------------------------------------------------------- encoder rules (§5.2)
def test_integer_rules_unsigned_bigint_and_ranges() -> None:
    table = _table(_col("u", 8, unsigned=True), _col("w", 8, unsigned=True), _col("s", 2, unsigned=True),
                   _col("i", 3, unsigned=True), _col("t", 1))
    _, value = _encode_one(_insert(table, {"u": 2**64 - 1, "w": 2**63, "s": 65535, "i": 4294967295, "t": -128}))
    assert _after(value) == {"id": 1, "u": -1, "w": -(2**63), "s": 65535, "i": 4294967295, "t": -128}
    assert _field_schema(value, "s")["type"] == "int32"  # SMALLINT UNSIGNED
    assert _field_schema(value, "i")["type"] == "int64"  # INT UNSIGNED
    assert _field_schema(value, "t")["type"] == "int16"


def test_bit_values_are_boolean_or_little_endian_bytes() -> None:
    table = _table(_col("b1", 16, flen=1, unsigned=True), _col("b5", 16, flen=5, unsigned=True),
                   _col("b60", 16, flen=60, unsigned=True), _col("b16", 16, flen=16, unsigned=True))
    _, value = _encode_one(_insert(table, {"b1": 1, "b5": 16, "b60": 16, "b16": 0x0102}))
    after = _after(value)
    # Reference §5.2: BIT(5)=16 → "EA=="; ceil(n/8) little-endian bytes.
    assert after["b1"] is True and after["b5"] == "EA==" and after["b60"] == "EAAAAAAAAAA="
    assert base64.b64decode(after["b16"]) == b"\x02\x01"
    assert _field_schema(value, "b5")["parameters"] == {"length": "5"}
    assert _field_schema(value, "b1")["type"] == "boolean"


def test_dates_datetimes_times() -> None:
    table = _table(_col("d", 10), _col("dz", 10), _col("dn", 10, nullable=False), _col("d18", 10),
                   _col("dt0", 12, decimal=0), _col("dt3", 12, decimal=3), _col("dt4", 12, decimal=4),
                   _col("t", 11, decimal=6))
    _, value = _encode_one(_insert(table, {
        "d": "2023-11-30", "dz": "0000-00-00", "dn": "0000-00-00", "d18": "0018-01-01",
        "dt0": "2023-11-30 12:34:56", "dt3": "2023-11-30 12:34:56.123", "dt4": "2023-11-30 12:34:56.1235",
        "t": "-12:34:56.123456"}))
    after = _after(value)
    assert after["d"] == 19691  # days since 1970 (Debezium testdata col_d_2023)
    assert after["dz"] is None and after["dn"] == 0  # zero date: null, 0 when NOT NULL
    assert after["d18"] == 17532  # year 18 → 2018-01-01
    assert after["dt0"] == 1701347696000 and after["dt3"] == 1701347696123 and after["dt4"] == 1701347696123500
    assert after["t"] == -45296123456
    assert _field_schema(value, "dt3")["name"] == "io.debezium.time.Timestamp"
    assert _field_schema(value, "dt4")["name"] == "io.debezium.time.MicroTimestamp"


def test_timestamp_is_converted_from_the_time_zone_to_utc() -> None:
    table = _table(_col("ts", 7, decimal=3), _col("z", 7, decimal=2), _col("ts0", 7, decimal=0))
    event = _insert(table, {"ts": "2024-01-01 08:00:00.120", "z": "0000-00-00 00:00:00.00",
                            "ts0": "2024-07-01 08:00:00"})
    _, value = _encode_one(event, time_zone="Asia/Shanghai")
    after = _after(value)
    assert after["ts"] == "2024-01-01T00:00:00.120Z"
    assert after["z"] == "1970-01-01T00:00:00Z"  # below MinTimestamp
    assert after["ts0"] == "2024-07-01T00:00:00Z"
    decoded = Decoder(time_zone="Asia/Shanghai").decode(value)[0]
    assert isinstance(decoded, RowChange) and decoded.columns is not None
    assert decoded.columns["ts"] == "2024-01-01 08:00:00.120"
    assert decoded.columns["z"] == "1970-01-01 08:00:00"


def test_strings_enum_set_decimal_float_json() -> None:
    table = _table(_col("v", 15), _col("b", 15, binary=True), _col("e", 247, elems=("a", "b,c")),
                   _col("ei", 247, elems=("a",)), _col("s", 248, elems=("x", "y")),
                   _col("dec", 246, flen=10, decimal=5), _col("f", 4, decimal=-1), _col("dbl", 5), _col("j", 245))
    raw = b"\xff<&>\x01\"\\"
    _, value = _encode_one(_insert(table, {
        "v": raw, "b": raw, "e": 2, "ei": 5, "s": 3, "dec": "12345.12345", "f": 12345.123046875, "dbl": 1e-7,
        "j": '{"k": "v"}'}))
    # raw bytes pass through json-iterator unvalidated, no HTML escaping, only " \ and controls escaped
    assert b'"v":"\xff<&>\\u0001\\"\\\\"' in value
    after = _after(value)
    assert base64.b64decode(after["b"]) == raw
    assert after["e"] == "b,c" and after["ei"] == "" and after["s"] == "x,y"
    assert b'"dec":12345.12345' in value and b'"f":12345.123' in value and b'"dbl":1e-07' in value
    assert after["j"] == '{"k": "v"}'
    assert _field_schema(value, "e")["parameters"] == {"allowed": "a,b\\,c"}
    assert _field_schema(value, "dec")["type"] == "double"


def test_tidb_extension_adds_tidb_type_first() -> None:
    table = _table(_col("u", 8, unsigned=True), _col("vb", 15, binary=True), _col("y", 13, unsigned=True))
    key, value = _encode_one(_insert(table, {"u": 7, "vb": b"x", "y": 2020}), enable_tidb_extension=True)
    assert b'{"tidb_type":"bigint unsigned","type":"int64"' in value
    assert _field_schema(value, "vb")["tidb_type"] == "varbinary"
    assert _field_schema(value, "y")["tidb_type"] == "year"
    assert b'"tidb_type":"int"' in key


def test_options_schema_old_value_and_names() -> None:
    table = _table(_col("v", 15), schema="my-db", table="1tab")
    update = RowChange(op=Op.UPDATE, schema="my-db", table="1tab", commit_ts=5 << 18,
                       columns=Row({"id": 1, "v": b"n"}), pre_columns=Row({"id": 1, "v": b"o"}), table_info=table)
    key, value = _encode_one(update, cluster_id="9c", debezium_output_old_value=False)
    doc = orjson.loads(value)
    assert "before" not in doc["payload"] and doc["payload"]["after"]["v"] == "n"
    assert doc["payload"]["source"]["ts_ms"] == 5 and doc["payload"]["source"]["name"] == "9c"
    assert doc["schema"]["name"] == "_9c.my_db.1tab.Envelope"  # SanitizeName / SanitizeTopicName
    assert orjson.loads(key) == {"payload": {"id": 1}, "schema": {
        "type": "struct", "name": "_9c.my_db.1tab.Key", "optional": False,
        "fields": [{"type": "int32", "optional": False, "field": "id"}]}}
    key, value = _encode_one(update, debezium_disable_schema=True)
    assert set(orjson.loads(value)) == {"payload"} and set(orjson.loads(key)) == {"payload"}
    assert orjson.loads(value)["payload"]["before"] == {"id": 1, "v": "o"}


def test_virtual_columns_only_in_schema_and_null_defaults_substituted() -> None:
    table = _table(_col("g", 3, virtual=True, flags=F.GENERATED), _col("n", 3, default="5"),
                   _col("s", 15, default="dflt"))
    _, value = _encode_one(_insert(table, {"n": None, "s": None}))
    doc = orjson.loads(value)
    assert doc["payload"]["after"] == {"id": 1, "n": 5, "s": "dflt"}  # TiCDC getValue: default for NULL
    names = [f["field"] for f in doc["schema"]["fields"][1]["fields"]]
    assert names == ["id", "n", "s", "g"]
    assert _field_schema(value, "n")["default"] == 5


def test_ddl_and_watermark_messages() -> None:
    table = _table(_col("c", 15, flen=16, comment="note"))
    ddl = DDLEvent(query="ALTER TABLE t ADD COLUMN c varchar(16)", ddl_type=5, commit_ts=1 << 18, schema="test",
                   table="t", table_info=table)
    key, value = _encode_one(ddl)
    assert orjson.loads(key)["payload"] == {"databaseName": "test"}
    change = orjson.loads(value)["payload"]["tableChanges"][0]
    assert change["type"] == "ALTER" and change["id"] == '"test"."t"'
    columns = change["table"]["columns"]
    assert [c["name"] for c in columns] == ["id", "c"]
    assert columns[1]["comment"] is None  # the DDL text defines c: parseColumns drops its comment
    assert columns[1]["typeName"] == "VARCHAR" and columns[1]["length"] == 16 and columns[1]["jdbcType"] == 12
    assert columns[0]["length"] is None  # INT(11) is the default width
    # Unsupported actions are skipped, watermarks need the TiDB extension.
    assert Encoder().encode([DDLEvent(query="", ddl_type=0, commit_ts=1)]) == []
    assert Encoder().encode([Watermark(resolved_ts=9)]) == []
    key, value = _encode_one(Watermark(resolved_ts=9), enable_tidb_extension=True)
    assert orjson.loads(value)["payload"]["op"] == "m"
    assert Decoder().decode(value, key) == [Watermark(resolved_ts=9)]
    truncate = DDLEvent(query="TRUNCATE TABLE t", ddl_type=11, commit_ts=1, schema="test", table="t",
                        table_info=table)
    assert orjson.loads(_encode_one(truncate)[1])["payload"]["tableChanges"] == []


def test_ddl_time_columns_take_the_fsp_written_in_the_statement() -> None:
    dt = _col("dt", 12, decimal=0, flen=19)
    table = _table(dt)
    query = "CREATE TABLE t (id int primary key, dt datetime DEFAULT current_timestamp)"
    _, value = _encode_one(DDLEvent(query=query, ddl_type=3, commit_ts=1, table_info=table))
    column = orjson.loads(value)["payload"]["tableChanges"][0]["table"]["columns"][1]
    assert column["length"] is None  # no fsp written: the parser's -1
    assert column["defaultValueExpression"] == "1970-01-01 00:00:00"


def test_compression_applies_to_key_and_value() -> None:
    table = _table(_col("v", 15))
    for method in ("snappy", "lz4"):
        messages = Encoder(large_message_handle_compression=method).encode([_insert(table, {"v": b"x" * 200})])
        key, value = messages[0].key, messages[0].value
        assert value is not None and not value.startswith(b"{")
        events = Decoder(large_message_handle_compression=method).decode(value, key)
        assert isinstance(events[0], RowChange) and events[0].columns == {"id": 1, "v": b"x" * 200}


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError):
        Encoder(max_batch_size=2)
    with pytest.raises(ConfigError):
        Encoder(time_zone="Mars/Base")
    Encoder(max_message_bytes=10)  # accepted, never checked (§5.1)


# --------------------------------------------------------------------------- decoding real Debezium output
def test_debezium_connector_testdata_decodes(vectors_dir: Path) -> None:
    base = vectors_dir / "debezium_testdata"
    events = debezium.decode((base / "datatype.dbz.json").read_bytes(), (base / "datatype.dbz.key.json").read_bytes())
    assert len(events) == 1
    row = events[0]
    assert isinstance(row, RowChange) and row.op is Op.INSERT and (row.schema, row.table) == ("test", "foo")
    assert row.commit_ts >> 18 == 1701673705000  # the connector's source.ts_ms
    values = row.columns
    assert values is not None
    # Expected values read off datatype.dml.sql (sql_mode='', time_zone UTC) with the fsp of each type.
    expected = {
        "pk": 1, "col_d_2023": "2023-11-30", "col_d_1000": "1000-01-01", "col_d_9999": "9999-12-31",
        "col_d_0000": None, "col_dt": "2023-11-30 12:34:56.000", "col_dt_fsp_4": "2023-11-30 12:34:56.123500",
        "col_dt_fsp_6": "2023-11-30 12:34:56.123456", "col_dt_0000": None, "col_t_neg": "-12:34:56.123456",
        "col_t_fsp_1": "12:34:56.100000", "col_ts": "2023-11-30 12:34:56", "col_ts_fsp_5": "2023-11-30 12:34:56.12346",
        "col_y": 2023, "col_bit_1": 1, "col_bit_5": 16, "col_bit_60": 16, "col_varchar": b"foo", "col_char": b"foo",
        "col_double": 12345.12345, "col_decimal": 12345.12345, "col_int_unsigned": 4294967295,
        "col_tinyint": -128, "col_bigint": -(2**63), "col_enum": 1, "col_enum_invalid": 0, "col_set": 3,
        "col_set_invalid": 0, "col_json": '["foo"]',
    }
    assert {k: values[k] for k in expected} == expected
    assert values["col_float"] == pytest.approx(12345.123, rel=1e-7)
    # The connector writes binary columns as base64 under a plain "string" schema: not recoverable.
    assert values["col_varbinary"] == b"Zm9v"
    info = row.table_info
    assert info is not None
    by_name = info.column_by_name
    assert by_name["pk"].is_handle_key and not by_name["pk"].nullable
    assert by_name["col_enum"].elems == ("a", "b", "c") and by_name["col_bit_60"].flen == 60


def _peer_documents(peers: Path) -> list[tuple[str, Any]]:
    docs: list[tuple[str, Any]] = []
    files = [*peers.glob("flink/debezium-data-*.txt"), *peers.glob("paimon/kafka/debezium/**/*.txt"),
             *peers.glob("debezium/serde-*.json")]
    for path in files:
        text = path.read_text()
        if path.suffix == ".json":
            docs.append((path.name, json.loads(text)))
            continue
        for line in text.splitlines():
            try:
                docs.append((path.name, json.loads(line)))
            except ValueError:
                continue
    return docs


def test_peer_debezium_messages_decode(vectors_dir: Path) -> None:
    peers = vectors_dir.parent / "peers"
    if not peers.is_dir():
        pytest.skip("peer messages not found")
    decoded = 0
    for _name, doc in _peer_documents(peers):
        # Flink's encoder and the unwrapped row name no table: the default-table option names it.
        events = debezium.decode(orjson.dumps(doc), default_table="peers.t")
        assert len(events) == 1 and isinstance(events[0], RowChange)
        assert events[0].table  # never a row of no table
        decoded += 1
    assert decoded >= 40


def test_schemaless_values_follow_json_types() -> None:
    doc = {"before": None, "after": {"id": 7, "w": 3.5, "n": "x", "b": True, "z": None},
           "source": {"db": "d", "table": "t", "ts_ms": 1000}, "op": "r"}
    row = debezium.decode(orjson.dumps(doc))[0]
    assert isinstance(row, RowChange) and row.op is Op.INSERT and row.commit_ts == 1000 << 18
    assert row.columns == {"id": 7, "w": 3.5, "n": b"x", "b": 1, "z": None}
    assert row.table_info is not None
    assert [c.type_code for c in row.table_info.columns] == [8, 5, 15, 16, 6]


def test_tombstone_and_explain() -> None:
    assert debezium.decode(None) == []
    table = _table(_col("v", 15))
    key, value = _encode_one(_insert(table, {"v": b"a"}))
    view = debezium.explain(value, key)
    assert view["kind"] == "row" and view["op"] == "c" and view["producer"] == "TiCDC"
    assert [c["name"] for c in view["columns"]] == ["id", "v"]
    assert view["columns"][1]["schema"]["type"] == "string"
    assert debezium.explain(None)["kind"] == "tombstone"


# --------------------------------------------------------------------------- round trips
_OPTION_SETS: list[dict[str, Any]] = [
    {}, {"enable-tidb-extension": True}, {"debezium-disable-schema": True}, {"debezium-output-old-value": False},
    {"time-zone": "Asia/Shanghai", "enable-tidb-extension": True}, {"time-zone": "America/New_York"},
    {"large-message-handle-compression": "snappy", "debezium-disable-schema": True, "enable-tidb-extension": True},
]
_DECODER_KEYS = ("enable-tidb-extension", "time-zone", "large-message-handle-compression")


def _round_trip(options: dict[str, Any], events: list[Event]) -> tuple[list[Event], list[Event]]:
    encoder = Encoder(options, clock=lambda: NOW)
    decoder = Decoder({k: v for k, v in options.items() if k in _DECODER_KEYS})
    decoded = [e for m in encoder.encode(events) for e in decoder.decode(m.value, m.key)]
    projected = [p for e in events if (p := encoder.project(e)) is not None]
    return decoded, projected


@settings(max_examples=80)
@given(data=st.data())
def test_round_trip_equals_projection_including_table_info(data: st.DataObject) -> None:
    options = data.draw(st.sampled_from(_OPTION_SETS))
    rows = data.draw(row_changes())
    decoded, projected = _round_trip(options, list(rows))
    assert decoded == projected


@settings(max_examples=30)
@given(commit_ts=tsos, resolved_ts=tsos)
def test_ddl_round_trip(commit_ts: int, resolved_ts: int) -> None:
    table = _table(_col("c", 15, flen=16), _col("e", 247, elems=("a", "b")))
    pre = TableInfo(schema="old", table="t0", columns=table.columns)
    events: list[Event] = [
        DDLEvent(query="CREATE TABLE t (id int primary key, c varchar(16), e enum('a','b'))", ddl_type=3,
                 commit_ts=commit_ts, schema="test", table="t", table_info=table),
        DDLEvent(query="RENAME TABLE old.t0 TO test.t", ddl_type=14, commit_ts=commit_ts, schema="test",
                 table="t", table_info=table, pre_table_info=pre),
        DDLEvent(query="DROP TABLE test.t", ddl_type=4, commit_ts=commit_ts, schema="test", table="t",
                 table_info=table, pre_table_info=table),
        DDLEvent(query="CREATE DATABASE d", ddl_type=1, commit_ts=commit_ts, schema="d"),
        DDLEvent(query="ALTER TABLE t MODIFY c int", ddl_type=12, commit_ts=commit_ts, schema="test", table="t"),
        Watermark(resolved_ts=resolved_ts),
    ]
    for options in _OPTION_SETS:
        decoded, projected = _round_trip(options, events)
        assert decoded == projected
    decoded, _ = _round_trip({}, events)
    assert [e.ddl_type for e in decoded if isinstance(e, DDLEvent)] == [3, 14, 4, 1, 12]


def test_lossy_projection_examples() -> None:
    table = _table(_col("dec", 246, flen=10, decimal=2), _col("dt", 12, decimal=0), _col("u", 8, unsigned=True),
                   _col("vb", 15, binary=True), _col("f", 4, decimal=2))
    event = _insert(table, {"dec": "153.10", "dt": "2020-01-02 03:04:05", "u": 2**64 - 1, "vb": b"\x00\xff",
                            "f": 1.25})
    plain = Encoder().project(event)
    assert isinstance(plain, RowChange) and plain.columns is not None
    assert plain.columns["dec"] == 153.1 and plain.columns["dt"] == "2020-01-02 03:04:05.000"
    assert plain.columns["u"] == -1 and plain.columns["vb"] == b"AP8="
    ext = Encoder(enable_tidb_extension=True).project(event)
    assert isinstance(ext, RowChange) and ext.columns is not None
    assert ext.columns["dec"] == "153.1" and ext.columns["u"] == 2**64 - 1 and ext.columns["vb"] == b"\x00\xff"
    bare = Encoder(debezium_disable_schema=True).project(event)
    assert isinstance(bare, RowChange) and bare.columns is not None
    assert bare.columns["dt"] == 1577934245000 and bare.columns["f"] == 1.25


# --------------------------------------------------------------------------- garbage → DecodeError only
def _decode_or_decode_error(value: bytes | None, key: bytes | None = None, **options: Any) -> None:
    try:
        Decoder(options).decode(value, key)
    except DecodeError as exc:
        assert exc.protocol == "debezium" and exc.reason


@settings(max_examples=200)
@given(value=st.binary(max_size=120), key=st.one_of(st.none(), st.binary(max_size=30)))
def test_random_bytes(value: bytes, key: bytes | None) -> None:
    _decode_or_decode_error(value, key)
    _decode_or_decode_error(value, key, large_message_handle_compression="lz4")


_CONFUSERS: list[Any] = [None, 0, -1, 2**64, 2**70, 1.5, "", "x", "AP8=", [], {}, [None], {"a": None}, True,
                         "2024-01-01T00:00:00Z", {"scale": 2, "value": "AQ=="}]


def _confuse(node: Any, rng: random.Random) -> Any:
    if isinstance(node, dict) and node and rng.random() < 0.85:
        key = rng.choice(list(node))
        return {**node, key: _confuse(node[key], rng)}
    if isinstance(node, list) and node and rng.random() < 0.85:
        i = rng.randrange(len(node))
        return [*node[:i], _confuse(node[i], rng), *node[i + 1:]]
    return rng.choice(_CONFUSERS)


@settings(max_examples=30)
@given(rows=row_changes(max_rows=1), seed=st.integers(0, 2**32), options=st.sampled_from(_OPTION_SETS[:3]))
def test_type_confused_and_truncated_messages(rows: list[RowChange], seed: int, options: dict[str, Any]) -> None:
    rng = random.Random(seed)
    table = rows[0].table_info
    assert table is not None
    events: list[Event] = [*rows, Watermark(resolved_ts=5),
                           DDLEvent(query="CREATE TABLE t (a int)", ddl_type=3, commit_ts=9, table_info=table)]
    for message in Encoder({**options, "enable-tidb-extension": True}).encode(events):
        assert message.value is not None
        document = orjson.loads(message.value)
        for _ in range(10):
            _decode_or_decode_error(json.dumps(_confuse(document, rng)).encode(), message.key)
        for cut in {rng.randrange(len(message.value)) for _ in range(4)}:
            _decode_or_decode_error(message.value[:cut], message.key)


def test_deeply_nested_and_odd_json() -> None:
    for value in (b"[" * 100_000, b'{"payload":' * 5000, b"NaN", b'{"op":"c","after":{"a":Infinity}}',
                  b'{"op":"c","after":{"a":1e999}}', b"\xff\xfe", b"", b'"x"', b"{}",
                  b'{"payload":{"op":"u","after":{"a":"\\ud800"}}}', b'{"op":"m","source":{}}'):
        _decode_or_decode_error(value)


@given(st.integers(min_value=-62135596800 * 10**6 - 10**9, max_value=253402300800 * 10**6 + 10**9),
       st.integers(min_value=0, max_value=6))
def test_datetime_fast_path_matches_the_calendar_arithmetic(micros: int, digits: int) -> None:
    # format_epoch_us formats years 1-9999 with datetime; the civil-calendar arithmetic is the reference.
    from pyticdc.codec.debezium.readers import format_epoch_us
    from pyticdc.codec.debezium.values import format_wall, wall_from_epoch_us

    wall = wall_from_epoch_us(micros)
    if 0 <= wall.year <= 9999:
        assert format_epoch_us(micros, digits, "$") == format_wall(wall, digits)
    else:
        with pytest.raises(DecodeError):
            format_epoch_us(micros, digits, "$")
