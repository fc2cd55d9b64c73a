"""Issue 14, decoder findings: bad input gives a DecodeError or a printable event, the same whatever came before."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys

import pytest

from builders import PK, column, insert, table
from pyticdc import ConfigError, DecodeError
from pyticdc.codec import make_decoder, make_encoder
from pyticdc.codec.simple import Decoder as SimpleDecoder
from pyticdc.inspect.summary import detect_protocol
from pyticdc.io.eventjson import dumps, event_to_json, event_to_text
from pyticdc.model import Bootstrap, Event, KafkaRecord, RowChange, TypeCode

FLOATS = table(column("id", TypeCode.LONG, PK), column("f", TypeCode.FLOAT), column("d", TypeCode.DOUBLE))


# --------------------------------------------------------------------------- finding 1
@pytest.mark.parametrize(("protocol", "value"), [
    ("debezium", b'{"a":1}'),  # any JSON object once read as an unwrapped row of table ""
    ("debezium", b'{"op":"c","after":{"a":1}}'),
    ("canal-json", b'{"type":"INSERT","data":[{"x":1}]}'),
])
def test_a_message_naming_no_table_is_an_error_unless_the_user_names_it(protocol: str, value: bytes) -> None:
    with pytest.raises(DecodeError, match="default-table"):
        make_decoder(protocol).decode(value)
    (row,) = make_decoder(protocol, {"default-table": "shop.items"}).decode(value)
    assert isinstance(row, RowChange) and (row.schema, row.table) == ("shop", "items")
    assert row.table_info is not None and (row.table_info.schema, row.table_info.table) == ("shop", "items")


def test_default_table_is_validated_and_ignored_when_the_message_names_one() -> None:
    with pytest.raises(ConfigError):
        make_decoder("debezium", {"default-table": "shop."})
    with pytest.raises(ConfigError):
        make_decoder("craft", {"default-table": "shop.items"})  # Craft always names its table
    (row,) = make_decoder("debezium", {"default-table": "x.y"}).decode(b'{"a":1,"__db":"d","__table":"t"}')
    assert isinstance(row, RowChange) and (row.schema, row.table) == ("d", "t")


def test_detection_picks_no_protocol_on_rows_of_no_table() -> None:
    records = [KafkaRecord(topic="t", partition=0, offset=i, key=None, value=b'{"a":%d}' % i) for i in range(5)]
    with pytest.raises(ConfigError, match="none of the protocols"):
        detect_protocol(records)


# --------------------------------------------------------------------------- finding 10
@pytest.mark.parametrize(("protocol", "options"), [
    ("open-protocol", {}), ("craft", {}), ("canal-json", {}), ("debezium", {}),
    ("debezium", {"enable-tidb-extension": True}), ("debezium", {"debezium-disable-schema": True}),
    ("simple", {}), ("simple", {"encoding-format": "avro"}),
])
def test_negative_zero_keeps_its_sign(protocol: str, options: dict[str, object]) -> None:
    encoder = make_encoder(protocol, options)
    decoder = make_decoder(protocol, {k: v for k, v in options.items() if k != "debezium-disable-schema"})
    row = insert(FLOATS, {"id": 1, "f": -0.0, "d": -0.0})
    events: list[Event] = [Bootstrap(table_info=FLOATS), row] if protocol == "simple" else [row]
    decoded = [e for m in encoder.encode(events) for e in decoder.decode(m.value, m.key) if isinstance(e, RowChange)]
    assert len(decoded) == 1 and decoded[0].columns is not None
    for name in ("f", "d"):
        value = decoded[0].columns[name]
        assert isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) == -1.0, (name, value)


def test_canal_json_text_minus_zero_is_negative_on_fast_and_reference_paths() -> None:
    message = (b'{"id":0,"database":"d","table":"t","pkNames":["a"],"isDdl":false,"type":"INSERT","es":1,"ts":2,'
               b'"sql":"","sqlType":{"a":4,"f":7,"g":8},"mysqlType":{"a":"int","f":"float","g":"double"},'
               b'"old":null,"data":[{"a":"1","f":"-0","g":"-0"}]}')
    decoder = make_decoder("canal-json")
    for events in (decoder.decode(message), decoder.decode(message), decoder.decode_reference(message)):
        row = events[0]
        assert isinstance(row, RowChange) and row.columns is not None
        assert [math.copysign(1.0, row.columns[c]) for c in ("f", "g")] == [-1.0, -1.0]


# --------------------------------------------------------------------------- finding 11
@pytest.mark.parametrize(("protocol", "value"), [
    ("canal-json", b'{"x":' + b"[" * 997),
    ("canal-json", b'{"type":"INSERT","database":"d","table":"t","data":' + b"[" * 3000 + b"]" * 3000 + b"}"),
    ("simple", b'{"data":' + b"[" * 996),
    ("simple", b'{"type":"INSERT","data":' + b'{"a":' * 3000 + b"1" + b"}" * 3001),
    ("debezium", b'{"payload":' + b"[" * 3000 + b"]" * 3000 + b"}"),
    ("open-protocol", b"\x00" * 7 + b"\x01" + (3000).to_bytes(8, "big") + b"[" * 3000),
])
def test_deep_nesting_is_a_decode_error(protocol: str, value: bytes) -> None:
    key = b"\x00" * 7 + b"\x01" + (2).to_bytes(8, "big") + b"{}" if protocol == "open-protocol" else None
    with pytest.raises(DecodeError):
        make_decoder(protocol).decode(value, key)


def test_an_integer_of_thousands_of_digits_is_a_decode_error() -> None:
    info = table(column("id", TypeCode.LONGLONG, PK))
    out = make_encoder("simple").encode([insert(info, {"id": 1})])
    decoder = make_decoder("simple")
    for message in out:
        decoder.decode(message.value)
    row = next(m.value for m in out if m.rows)
    assert row is not None and b'"id":"1"' in row
    for digits in (4300, 4301, 100_000):
        with pytest.raises(DecodeError, match="out of range"):
            decoder.decode(row.replace(b'"id":"1"', b'"id":"' + b"9" * digits + b'"'))


_SNAPPY_BOMB = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from pyticdc import ConfigError, DecodeError
from pyticdc.codec import make_decoder
key = b'{"ts":1,"scm":"a","tbl":"b","t":1}'
key = (1).to_bytes(8, "big") + len(key).to_bytes(8, "big") + key
value = bytes.fromhex("000000000000000680a8d6b90700")  # a 6-byte snappy block declaring 2 GB
cases = [("open-protocol", value, key), ("canal-json", value[8:], None), ("simple", value[8:], None),
         ("debezium", value[8:], None)]
for protocol, data, k in cases:
    try:
        make_decoder(protocol, {"large-message-handle-compression": "snappy"}).decode(data, k)
    except DecodeError as exc:
        assert "declares 2000000000 bytes" in exc.reason, exc
    else:
        sys.exit(protocol + " decoded a snappy bomb")
"""


def test_a_snappy_block_declaring_gigabytes_is_refused_before_decompressing() -> None:
    # Under a 1 GiB address-space limit the allocation itself would abort the process (SIGABRT).
    done = subprocess.run([sys.executable, "-c", _SNAPPY_BOMB], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout


def test_a_compressed_value_larger_than_max_message_bytes_still_decodes() -> None:
    # TiCDC compresses to fit max-message-bytes: the plain value may be larger, as snappy's ratio allows.
    info = table(column("id", TypeCode.LONG, PK), column("s", TypeCode.VARCHAR, text=True))
    options = {"large-message-handle-compression": "snappy", "enable-tidb-extension": True}
    (message,) = make_encoder("canal-json", options).encode([insert(info, {"id": 1, "s": b"x" * 50_000})])
    assert message.value is not None and len(message.value) < 10_000
    decoder = make_decoder("canal-json", {**options, "max-message-bytes": 10_000})
    (row,) = decoder.decode(message.value)
    assert isinstance(row, RowChange) and row.columns is not None and row.columns["s"] == b"x" * 50_000


# --------------------------------------------------------------------------- finding 12
def test_invalid_utf8_kept_by_a_lenient_decoder_renders_as_base64() -> None:
    # Debezium keeps invalid UTF-8 of a JSON string as lone surrogates (surrogateescape).
    value = b'{"op":"c","after":{"j":"a\xff"},"source":{"db":"d","table":"t\xfe","ts_ms":1}}'
    (row,) = make_decoder("debezium").decode(value)
    assert isinstance(row, RowChange)
    obj = event_to_json(row, source_protocol="debezium")
    text = dumps(obj).decode("utf-8")
    assert '"columns":{"j":' in text
    rendered = json.loads(text)
    column_value = rendered["columns"]["j"]
    raw = column_value if isinstance(column_value, str) else base64.b64decode(column_value["base64"])
    assert raw in (b"a\xff", "a\ufffd".encode())  # the original bytes, or U+FFFD for a text column
    assert rendered["table"] == "t\ufffd"
    assert event_to_text(obj).encode("utf-8")


# --------------------------------------------------------------------------- finding 13
_CANAL_ROW = (b'{"id":0,"database":"d","table":"t","pkNames":["a"],"isDdl":false,"type":"INSERT","es":1,"ts":2,'
              b'"sql":"","sqlType":%s,"mysqlType":{"a":"int","b":"int"},"old":null,"data":[{"a":"1","b":"2"}]}')


@pytest.mark.parametrize("sql_type", [b'{"a":"x","b":4}', b'{"a":1e400,"b":4}', b'[4,4]', b'{"a\xff":4,"b":4}'])
def test_canal_json_header_cache_validates_sqltype_like_a_fresh_decoder(sql_type: bytes) -> None:
    good = _CANAL_ROW % b'{"a":4,"b":4}'
    bad = _CANAL_ROW % sql_type
    warm = make_decoder("canal-json")
    warm.decode(good)
    with pytest.raises(DecodeError):
        make_decoder("canal-json").decode(bad)
    with pytest.raises(DecodeError):
        warm.decode(bad)


def test_canal_json_column_order_follows_sqltype_on_a_warm_decoder() -> None:
    warm = make_decoder("canal-json")
    warm.decode(_CANAL_ROW % b'{"a":4,"b":4}')
    (row,) = warm.decode(_CANAL_ROW % b'{"b":4,"a":4}')
    (fresh,) = make_decoder("canal-json").decode(_CANAL_ROW % b'{"b":4,"a":4}')
    assert isinstance(row, RowChange) and isinstance(fresh, RowChange)
    assert row.table_info == fresh.table_info
    assert row.table_info is not None and [c.name for c in row.table_info.columns] == ["b", "a"]


@pytest.mark.parametrize("field", [b'"database":"test",', b'"table":"t",', b'"schemaVersion":7,'])
def test_simple_json_message_missing_its_table_is_not_the_previous_tables_row(field: bytes) -> None:
    info = table(column("id", TypeCode.LONG, PK), column("a", TypeCode.LONG), schema_version=7)
    out = make_encoder("simple").encode([insert(info, {"id": i, "a": i}, commit_ts=1000 + i) for i in range(2)])
    rows = [m.value for m in out if m.rows]
    assert rows[1] is not None and field in rows[1]
    stripped = rows[1].replace(field, b"")
    warm = SimpleDecoder()
    for message in out[:-1]:
        warm.decode(message.value)  # the BOOTSTRAP and the first row: the fast path knows the table
    fresh = SimpleDecoder()
    fresh.decode(next(m.value for m in out if not m.rows))
    assert warm.decode(stripped) == fresh.decode(stripped) == []  # held: no schema (table "" or version 0)
    assert len(warm.held_rows()) == len(fresh.held_rows()) == 1


# --------------------------------------------------------------------------- finding 14
def test_simple_one_bad_held_row_costs_neither_the_schema_nor_the_other_rows() -> None:
    info = table(column("id", TypeCode.LONG, PK), column("a", TypeCode.LONG))
    out = make_encoder("simple").encode([insert(info, {"id": i, "a": i}, commit_ts=1000 + i) for i in range(3)])
    rows = [m.value for m in out if m.rows]
    (bootstrap,) = [m.value for m in out if not m.rows]
    assert rows[1] is not None and b'"a":"1"' in rows[1]
    rows[1] = rows[1].replace(b'"a":"1"', b'"a":"abc"')
    decoder = SimpleDecoder()
    assert [decoder.decode(value) for value in rows] == [[], [], []]
    assert len(decoder.held_rows()) == 3
    events = decoder.decode(bootstrap)
    assert isinstance(events[0], Bootstrap)
    assert [(e.commit_ts, e.columns) for e in events[1:] if isinstance(e, RowChange)] == [
        (1000, {"id": 0, "a": 0}), (1002, {"id": 2, "a": 2})]
    (error,) = decoder.take_errors()
    assert "commit ts 1001" in error.reason and "abc" in error.reason and error.at == "$.data.a"
    assert decoder.take_errors() == [] and decoder.held_rows() == []


def test_debezium_ddl_column_scale_of_infinity_is_a_column_without_scale() -> None:
    # Found by the fuzzer: "scale":1e400 reads as float infinity, which int() refuses (OverflowError).
    from pyticdc.codec.debezium.ddl import column_from_metadata

    for scale in (1e400, float("nan"), -1e400):
        column = column_from_metadata({"name": "a", "typeName": "DECIMAL", "scale": scale}, set())
        assert column is not None and column.decimal == -1
    column = column_from_metadata({"name": "a", "typeName": "DECIMAL", "scale": 2.0}, set())
    assert column is not None and column.decimal == 2
