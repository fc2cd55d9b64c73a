"""The Simple protocol codec (JSON and Avro): golden vectors, wire rules of the reference (§6, §8),
round trips for every column type, the BOOTSTRAP policy, and garbage that must only raise DecodeError."""

from __future__ import annotations

import base64
import io
import json
import random
import struct
from pathlib import Path
from typing import Any

import cramjam
import fastavro
import lz4.frame
import msgspec
import orjson
import pytest
from fastavro.schema import to_parsing_canonical_form
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import column, row_of
from pyticdc.codec import simple as S
from pyticdc.codec.jsontext import float32_round, format_float32, format_float_f
from pyticdc.codec.simple import BootstrapPolicy, Decoder, Encoder, explain, resolve_row
from pyticdc.codec.simple import decoder as simple_decoder
from pyticdc.codec.simple import encoder as simple_encoder
from pyticdc.codec.simple.avro import SCHEMA_JSON
from pyticdc.codec.simple.message import ddl_message_type
from pyticdc.errors import ConfigError, DecodeError, EncodeError
from pyticdc.model import (
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)
from pyticdc.routing.claimcheck import FileClaimCheckStore
from pyticdc.vectors import check_file
from strategies import row_changes

F = ColumnFlag
NOW = 1_708_923_662_983
ENCODINGS = ("json", "avro")
AVRO_SCHEMA = fastavro.parse_schema(orjson.loads(SCHEMA_JSON))


TABLE = TableInfo(
    schema="test", table="all", table_id=88, schema_version=450_000_000_000_000_000, pk_is_handle=True,
    columns=(
        column("id", 3, F.HANDLE_KEY | F.PRIMARY_KEY, nullable=False, flen=11, decimal=0),
        column("u64", 8, F.UNSIGNED | F.NULLABLE, unsigned=True, flen=20, decimal=0),
        column("i8", 1, F.NULLABLE, flen=4, decimal=0),
        column("f", 4, F.NULLABLE, flen=12),
        column("d", 5, F.NULLABLE, flen=22),
        column("dec", 246, F.NULLABLE, flen=10, decimal=2),
        column("ts", 7, F.NULLABLE, flen=23, decimal=3),
        column("dt", 12, F.NULLABLE, flen=19, decimal=0),
        column("tm", 11, F.NULLABLE, flen=10, decimal=0),
        column("dd", 10, F.NULLABLE, flen=10, decimal=0),
        column("y", 13, F.UNSIGNED | F.NULLABLE, unsigned=True, flen=4, decimal=0),
        column("e", 247, F.NULLABLE, elems=("a", "b", "c"), text=True),
        column("s", 248, F.NULLABLE, elems=("a", "b", "c"), text=True),
        column("bit", 16, F.UNSIGNED | F.NULLABLE, unsigned=True, flen=12, decimal=0, default="\x00\x05"),
        column("vc", 15, F.NULLABLE, flen=32, default="a<b", text=True),
        column("vb", 15, F.NULLABLE, flen=8),
        column("txt", 252, F.NULLABLE, flen=65535, text=True),
        column("blob", 252, F.NULLABLE, flen=65535),
        column("j", 245, F.NULLABLE),
        column("v", 225, F.NULLABLE),
    ),
    indexes=(IndexInfo(name="uk_vc", columns=("vc", "i8"), unique=True),),
)
VALUES = Row(
    id=7, u64=18446744073709551615, i8=-128, f=0.10000000149011612, d=1e21, dec="-12.50", ts="2024-02-26 12:00:00.123",
    dt="2020-01-01 00:00:00", tm="-12:34:56", dd="2020-02-29", y=2155, e=3, s=5, bit=4095, vc=b"h\xc3\xa9<&>\n",
    vb=b"\x00\xff\x10", txt=b"\xffbad", blob=b"\x89PNG", j='{"key1": "value1"}', v="[1,2.5,3]",
)


def _row(op: Op = Op.INSERT, columns: Row | None = VALUES, pre: Row | None = None, table: TableInfo = TABLE,
         commit_ts: int = 450_000_000_000_000_001) -> RowChange:
    return RowChange(op=op, schema=table.schema, table=table.table, commit_ts=commit_ts, columns=columns,
                     pre_columns=pre, table_id=table.table_id, physical_table_id=table.table_id, table_info=table)


def _encoder(encoding: str = "json", **options: Any) -> Encoder:
    extra = {k: options.pop(k) for k in ("claim_check", "auto_bootstrap", "partition") if k in options}
    extra.setdefault("auto_bootstrap", False)
    return Encoder({"encoding-format": encoding, **options}, clock=lambda: NOW, **extra)


def _decoder(encoding: str = "json", table: TableInfo | None = None, **options: Any) -> Decoder:
    store = options.pop("claim_check", None)
    hold = options.pop("hold_unknown_schema", True)
    decoder = Decoder({"encoding-format": encoding, **options}, claim_check=store, hold_unknown_schema=hold)
    if table is not None:
        decoder.register_table(table)
    return decoder


def _fastavro(value: bytes) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(value), AVRO_SCHEMA, None, return_record_name=True,
                                      handle_unicode_errors="surrogateescape")


# --------------------------------------------------------------------------- vectors and schema file
@pytest.mark.parametrize("name", ["simple_json.json", "simple_avro.json"])
def test_golden_vectors(vectors_dir: Path, name: str) -> None:
    results = check_file(vectors_dir / name)
    assert results
    assert [f"{r.name}: {r.reason}" for r in results if not r.passed] == []


def test_schema_file_is_the_reference_schema(vectors_dir: Path) -> None:
    reference = fastavro.parse_schema(orjson.loads((vectors_dir / "simple_avro_schema.message.json").read_bytes()))
    assert to_parsing_canonical_form(AVRO_SCHEMA) == to_parsing_canonical_form(reference)


# --------------------------------------------------------------------------- JSON wire rules (§6.1, §1.5)
def test_json_dml_wire_rules() -> None:
    value = _encoder("json", **{"time-zone": "Asia/Shanghai"}).encode([_row()])[0].value
    assert value is not None
    text = value.decode()
    # message struct order, omitempty, schemaVersion present for DML
    assert text.startswith('{"version":1,"database":"test","table":"all","tableID":88,"type":"INSERT",'
                           '"commitTs":450000000000000001,"buildTs":1708923662983,'
                           '"schemaVersion":450000000000000000,"data":{')
    data = orjson.loads(value)["data"]
    assert list(data) == sorted(data)  # Go map: keys sorted
    assert data["u64"] == "18446744073709551615"
    assert data["i8"] == "-128"
    assert data["f"] == "0.1"  # float32 shortest digits
    assert data["d"] == "1000000000000000000000"  # 'f' format, never an exponent
    assert data["ts"] == {"location": "Asia/Shanghai", "value": "2024-02-26 12:00:00.123"}
    assert data["e"] == "3" and data["s"] == "5" and data["bit"] == "4095" and data["y"] == "2155"
    assert data["vb"] == base64.b64encode(b"\x00\xff\x10").decode()  # binary charset → base64
    assert data["blob"] == "iVBORw=="
    assert data["txt"] == "\ufffdbad"  # invalid UTF-8 → U+FFFD
    assert data["j"] == '{"key1": "value1"}'
    # encoding/json escapes < > & and uses \n
    assert '"vc":"hé\\u003c\\u0026\\u003e\\n"' in text
    assert "old" not in orjson.loads(value)


def test_json_update_and_delete_images() -> None:
    pre = Row({**VALUES, "i8": None})
    update, delete = _encoder().encode([_row(Op.UPDATE, VALUES, pre), _row(Op.DELETE, None, pre)])
    assert update.value is not None and delete.value is not None
    decoded = orjson.loads(update.value)
    assert decoded["type"] == "UPDATE" and decoded["old"]["i8"] is None and decoded["data"]["i8"] == "-128"
    assert update.value.index(b'"data"') < update.value.index(b'"old"')
    decoded = orjson.loads(delete.value)
    assert decoded["type"] == "DELETE" and "data" not in decoded and decoded["old"]["id"] == "7"


def test_json_table_schema_rules() -> None:
    message = _encoder().encode([Bootstrap(table_info=TABLE)])[0]
    assert message.key is None and message.value is not None
    decoded = orjson.loads(message.value)
    assert decoded["type"] == "BOOTSTRAP" and decoded["commitTs"] == 0 and decoded["buildTs"] == NOW
    schema = decoded["tableSchema"]
    assert list(schema) == ["schema", "table", "tableID", "version", "columns", "indexes"]
    columns = {c["name"]: c for c in schema["columns"]}
    assert [c["name"] for c in schema["columns"]] == [c.name for c in TABLE.columns]
    assert columns["f"]["dataType"] == {"mysqlType": "float", "charset": "binary", "collate": "binary", "length": 12}
    assert columns["u64"]["dataType"]["unsigned"] is True
    assert columns["vb"]["dataType"]["mysqlType"] == "varbinary"
    assert columns["blob"]["dataType"]["mysqlType"] == "blob" and columns["txt"]["dataType"]["mysqlType"] == "text"
    assert columns["e"]["dataType"]["elements"] == ["a", "b", "c"]
    assert columns["bit"]["default"] == 5  # BIT default as its integer
    assert columns["vc"]["default"] == "a<b" and columns["id"]["default"] is None
    assert columns["id"]["nullable"] is False and columns["dec"]["dataType"]["decimal"] == 2
    # the int handle is not a TiDB index: a synthetic lower-case "primary" is appended
    assert schema["indexes"] == [
        {"name": "uk_vc", "unique": True, "primary": False, "nullable": True, "columns": ["vc", "i8"]},
        {"name": "primary", "unique": True, "primary": True, "nullable": False, "columns": ["id"]},
    ]


@pytest.mark.parametrize(("action", "kind"), [
    (3, "CREATE"), (14, "RENAME"), (47, "RENAME"), (7, "CINDEX"), (32, "CINDEX"), (8, "DINDEX"), (33, "DINDEX"),
    (4, "ERASE"), (11, "TRUNCATE"), (5, "ALTER"), (12, "ALTER"), (61, "ALTER"), (72, "ALTER"), (1, "QUERY"),
    (2, "QUERY"), (21, "QUERY"),
])
def test_ddl_types(action: int, kind: str) -> None:
    assert ddl_message_type(action) == kind
    for encoding in ENCODINGS:
        event = DDLEvent(query="q", ddl_type=action, commit_ts=5, table_info=TABLE if action != 2 else None)
        value = _encoder(encoding).encode([event])[0].value
        decoded = _decoder(encoding).decode(value)[0]
        assert isinstance(decoded, DDLEvent) and decoded == _encoder(encoding).project(event)
        assert ddl_message_type(decoded.ddl_type) == kind


def test_ddl_messages_carry_both_schemas() -> None:
    after = msgspec.structs.replace(TABLE, schema_version=TABLE.schema_version + 1)
    event = DDLEvent(query="ALTER TABLE t ADD COLUMN x INT", ddl_type=5, commit_ts=99, table_info=after,
                     pre_table_info=TABLE)
    for encoding in ENCODINGS:
        value = _encoder(encoding).encode([event])[0].value
        if encoding == "json":
            assert value is not None
            text = orjson.loads(value)
            assert text["type"] == "ALTER" and text["sql"] == event.query and text["commitTs"] == 99
            assert text["preTableSchema"]["version"] == TABLE.schema_version
        decoder = _decoder(encoding)
        ddl = decoder.decode(value)[0]
        assert isinstance(ddl, DDLEvent) and ddl.table_info is not None and ddl.pre_table_info is not None
        # both versions feed the schema cache
        assert decoder.table("test", "all", TABLE.schema_version) == ddl.pre_table_info
        assert decoder.table("test", "all", TABLE.schema_version + 1) == ddl.table_info
        id_flags = ddl.table_info.column("id").flags  # type: ignore[union-attr]
        assert id_flags & F.PRIMARY_KEY and id_flags & F.HANDLE_KEY and not id_flags & F.NULLABLE
        vc_flags = ddl.table_info.column("vc").flags  # type: ignore[union-attr]
        assert vc_flags & F.UNIQUE_KEY and vc_flags & F.MULTIPLE_KEY and not vc_flags & F.HANDLE_KEY


# --------------------------------------------------------------------------- Avro wire rules (§6.2)
def test_avro_dml_read_by_fastavro() -> None:
    value = _encoder("avro", **{"time-zone": "Asia/Shanghai"}).encode([_row()])[0].value
    assert value is not None and value[0] == 0x16  # union branch 11, no registry framing
    name, message = _fastavro(value)
    assert name == "com.pingcap.simple.avro.Message" and message["type"] == "DML"
    payload_name, dml = message["payload"]
    assert payload_name == "com.pingcap.simple.avro.DML"
    data = dml["data"]
    assert list(data) == [c.name for c in TABLE.columns]  # deterministic: table column order
    # BIGINT UNSIGNED is an UnsignedBigint record holding the int64 reinterpretation
    assert data["u64"] == ("com.pingcap.simple.avro.UnsignedBigint", {"value": -1})
    assert data["ts"] == ("com.pingcap.simple.avro.Timestamp",
                          {"location": "Asia/Shanghai", "value": "2024-02-26 12:00:00.123"})
    assert data["vb"] == b"\x00\xff\x10" and data["blob"] == b"\x89PNG"  # binary → bytes
    assert data["vc"] == "hé<&>\n" and data["i8"] == -128 and data["e"] == 3 and data["f"] == pytest.approx(0.1)
    assert (dml["claimCheckLocation"], dml["handleKeyOnly"], dml["checksum"], dml["old"]) == (None, None, None, None)
    assert dml["schemaVersion"] == TABLE.schema_version and dml["tableID"] == 88


def test_avro_matches_fastavro_writer() -> None:
    # Same message written by fastavro with explicit union branches: byte-identical.
    table = TableInfo(schema="s", table="t", table_id=3, schema_version=9, columns=(
        column("a", 8, F.UNSIGNED, unsigned=True), column("b", 4), column("c", 5), column("d", 15, text=True),
        column("e", 254), column("f", 7), column("g", 3), column("h", 3)))
    row = _row(columns=Row(a=1 << 63, b=1.5, c=2.25, d=b"x", e=b"\x01", f="2020-01-01 00:00:00", g=-3, h=None),
               table=table, commit_ts=1 << 63)
    value = _encoder("avro").encode([row])[0].value
    ns = "com.pingcap.simple.avro."
    native = (ns + "Message", {"type": "DML", "payload": (ns + "DML", {
        "version": 1, "database": "s", "table": "t", "tableID": 3, "type": "INSERT", "commitTs": -(1 << 63),
        "buildTs": NOW, "schemaVersion": 9, "claimCheckLocation": None, "handleKeyOnly": None, "checksum": None,
        "data": {"a": (ns + "UnsignedBigint", {"value": -(1 << 63)}), "b": ("float", 1.5), "c": ("double", 2.25),
                 "d": ("string", "x"), "e": ("bytes", b"\x01"),
                 "f": (ns + "Timestamp", {"location": "UTC", "value": "2020-01-01 00:00:00"}), "g": ("long", -3),
                 "h": None},
        "old": None})})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, AVRO_SCHEMA, native)
    assert value == out.getvalue()


def test_avro_table_schema_rules() -> None:
    value = _encoder("avro").encode([Bootstrap(table_info=TABLE)])[0].value
    assert value is not None
    _, message = _fastavro(value)
    assert message["type"] == "BOOTSTRAP"
    _, bootstrap = message["payload"]
    schema = bootstrap["tableSchema"]
    assert schema["database"] == "test" and schema["version"] == TABLE.schema_version
    columns = {c["name"]: c for c in schema["columns"]}
    # decimal only for DECIMAL; unsigned/zerofill only for numeric, BIT, YEAR; elements only for ENUM/SET
    assert columns["dec"]["dataType"]["decimal"] == 2 and columns["dt"]["dataType"]["decimal"] is None
    assert columns["u64"]["dataType"]["unsigned"] is True and columns["vc"]["dataType"]["unsigned"] is None
    assert columns["y"]["dataType"]["zerofill"] is False and columns["e"]["dataType"]["elements"] == ["a", "b", "c"]
    assert columns["vc"]["dataType"]["elements"] is None and columns["f"]["dataType"]["length"] == 12
    assert columns["bit"]["default"] == "\x00\x05" and columns["vc"]["default"] == "a<b"
    assert [i["name"] for i in schema["indexes"]] == ["uk_vc", "primary"]


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_all_types_round_trip(encoding: str) -> None:
    encoder = _encoder(encoding, auto_bootstrap=True)
    rows = [_row(), _row(Op.UPDATE, VALUES, Row({**VALUES, "dec": None, "vb": b""})), _row(Op.DELETE, None, VALUES)]
    messages = encoder.encode(rows)
    assert len(messages) == 4  # BOOTSTRAP first
    decoder = _decoder(encoding)
    events = [e for m in messages for e in decoder.decode(m.value)]
    assert isinstance(events[0], Bootstrap) and events[0].build_ts == NOW
    assert events[1:] == [encoder.project(r) for r in rows]
    expected_txt = b"\xef\xbf\xbdbad" if encoding == "json" else b"\xffbad"  # JSON replaces invalid UTF-8
    decoded = events[1]
    assert isinstance(decoded, RowChange) and decoded.columns == Row({**VALUES, "txt": expected_txt})
    assert decoded.schema_version == TABLE.schema_version and decoded.physical_table_id == 88
    assert isinstance(decoded.columns["f"], float) and isinstance(decoded.columns["vb"], bytes)
    bit = events[0].table_info.column("bit")
    assert bit is not None and bit.default == "\x00\x05"


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rows=row_changes(), encoding=st.sampled_from(ENCODINGS), compression=st.sampled_from(["none", "snappy", "lz4"]))
def test_round_trip_every_type(rows: list[RowChange], encoding: str, compression: str) -> None:
    options: dict[str, Any] = {"large-message-handle-compression": compression}
    encoder = _encoder(encoding, auto_bootstrap=True, **options)
    decoder = _decoder(encoding, **options)
    events = [e for m in encoder.encode(rows) for e in decoder.decode(m.value)]
    assert isinstance(events[0], Bootstrap)
    assert events[1:] == [encoder.project(r) for r in rows]
    table = rows[0].table_info
    assert table is not None and events[0].table_info.columns == tuple(
        ColumnInfo(name=c.name, type_code=c.type_code, flags=c.flags, charset=c.charset, collation=c.collation,
                   flen=c.flen, decimal=(-1 if c.type_code in (4, 5) or (encoding == "avro" and c.type_code != 246)
                                         else c.decimal),
                   elems=c.elems, unsigned=c.unsigned, zerofill=c.zerofill, nullable=c.nullable, default=c.default)
        for c in table.columns)
    for row, event in zip(rows, events[1:]):
        # Values of the row model survive exactly (the strategies draw valid UTF-8 text).
        assert isinstance(event, RowChange)
        assert (event.op, event.commit_ts, event.columns, event.pre_columns) == (
            row.op, row.commit_ts, row.columns, row.pre_columns)


@settings(max_examples=40, deadline=None)
@given(rows=row_changes(max_rows=2))
def test_fastavro_reads_every_type(rows: list[RowChange]) -> None:
    decoder = _decoder("avro", rows[0].table_info)
    for message in _encoder("avro").encode(rows):
        assert message.value is not None
        _, native = _fastavro(message.value)
        _, dml = native["payload"]
        row = decoder.decode(message.value)[0]
        assert isinstance(row, RowChange)
        for image, ours in ((dml["data"], row.columns), (dml["old"], row.pre_columns)):
            assert (image is None) == (ours is None)
            if image is not None and ours is not None:
                assert list(image) == list(ours)


# --------------------------------------------------------------------------- unresolved rows
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_rows_before_their_schema_resolve_later(encoding: str) -> None:
    encoder = _encoder(encoding)
    row = _row(Op.UPDATE, VALUES, Row({**VALUES, "id": 7, "u64": 0}))
    value = encoder.encode([row])[0].value
    decoder = _decoder(encoding, hold_unknown_schema=False)
    pending = decoder.decode(value)[0]
    assert isinstance(pending, RowChange) and pending.table_info is None
    assert pending.schema_version == TABLE.schema_version and pending.columns is not None
    if encoding == "json":
        assert pending.columns["id"] == "7" and pending.columns["vb"] == "AP8Q"  # wire strings
        assert pending.columns["ts"] == "2024-02-26 12:00:00.123"
    else:
        assert pending.columns["id"] == 7 and pending.columns["vb"] == b"\x00\xff\x10"
    bootstrap = decoder.decode(encoder.encode([Bootstrap(table_info=TABLE)])[0].value)[0]
    assert isinstance(bootstrap, Bootstrap)
    resolved = resolve_row(pending, bootstrap.table_info)
    assert resolved == decoder.decode(value)[0] == encoder.project(row)
    assert resolve_row(resolved, bootstrap.table_info) is resolved


def test_register_table_types_rows() -> None:
    value = _encoder("json").encode([_row()])[0].value
    row = _decoder("json", TABLE).decode(value)[0]
    assert isinstance(row, RowChange) and row.table_info is TABLE and row.columns is not None
    assert row.columns["u64"] == 18446744073709551615 and row.columns["vc"] == b"h\xc3\xa9<&>\n"


# --------------------------------------------------------------------------- large messages (§8)
SMALL = TableInfo(schema="test", table="big", table_id=5, schema_version=3, pk_is_handle=True, columns=(
    column("id", 8, F.HANDLE_KEY | F.PRIMARY_KEY, nullable=False), column("payload", 252, F.NULLABLE, text=True)))
# base64 of pseudo-random bytes: text that stays large under lz4/snappy
BIG_ROW = _row(columns=Row(id=42, payload=base64.b64encode(random.Random(0).randbytes(1500))), table=SMALL)


def _bootstrapped(encoding: str, table: TableInfo, **options: Any) -> Decoder:
    """A decoder that learnt ``table`` from a BOOTSTRAP message, as a consumer does."""
    decoder = _decoder(encoding, **options)
    decoder.decode(_encoder(encoding, **{k: v for k, v in options.items() if k != "claim_check"}).encode(
        [Bootstrap(table_info=table)])[0].value)
    return decoder


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_handle_key_only(encoding: str) -> None:
    options = {"max-message-bytes": 1000, "large-message-handle-option": "handle-key-only"}
    encoder = _encoder(encoding, **options)
    message = encoder.encode([BIG_ROW])[0]
    assert message.value is not None and len(message.value) + 36 <= 1000
    if encoding == "json":
        decoded = orjson.loads(message.value)
        assert decoded["handleKeyOnly"] is True and decoded["data"] == {"id": "42"}
    else:
        assert _fastavro(message.value)[1]["payload"][1]["handleKeyOnly"] is True
    row = _bootstrapped(encoding, SMALL).decode(message.value)[0]
    assert isinstance(row, RowChange) and row.handle_key_only and row.columns == Row(id=42)
    assert row == encoder.project(BIG_ROW)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_claim_check(encoding: str, tmp_path: Path) -> None:
    store = FileClaimCheckStore(tmp_path.as_uri())
    options = {"max-message-bytes": 1000, "large-message-handle-option": "claim-check",
               "claim-check-storage-uri": tmp_path.as_uri(), "large-message-handle-compression": "lz4"}
    encoder = _encoder(encoding, claim_check=store, **options)
    message = encoder.encode([BIG_ROW])[0]
    assert message.value is not None
    stored = list(tmp_path.iterdir())
    assert len(stored) == 1
    plain = lz4.frame.decompress(message.value)
    if encoding == "json":
        decoded = orjson.loads(plain)
        assert decoded["handleKeyOnly"] is True and decoded["claimCheckLocation"].endswith(stored[0].name)
        assert list(decoded).index("claimCheckLocation") < list(decoded).index("handleKeyOnly")
    # the store holds the full message; a decoder that can read it returns the full row
    full = _bootstrapped(encoding, SMALL, claim_check=store, **options).decode(message.value)[0]
    assert full == encoder.project(BIG_ROW) and isinstance(full, RowChange)
    assert full.columns == BIG_ROW.columns and not full.handle_key_only
    # without the store: the handle-key row and where the rest is
    partial = _decoder(encoding, SMALL, **options).decode(message.value)[0]
    assert isinstance(partial, RowChange) and partial.handle_key_only and partial.columns == Row(id=42)
    assert partial.claim_check_location is not None and partial.claim_check_location.endswith(stored[0].name)


def test_too_large_messages() -> None:
    with pytest.raises(EncodeError):
        _encoder("json", **{"max-message-bytes": 1000}).encode([BIG_ROW])
    with pytest.raises(EncodeError):
        _encoder("json", **{"max-message-bytes": 100, "large-message-handle-option": "handle-key-only"}).encode(
            [BIG_ROW])
    with pytest.raises(EncodeError):
        _encoder("json", **{"max-message-bytes": 100}).encode([Bootstrap(table_info=TABLE)])
    # watermarks are never size-checked
    assert _encoder("json", **{"max-message-bytes": 1}).encode([Watermark(resolved_ts=1)])


@pytest.mark.parametrize("method", ["snappy", "lz4"])
def test_compression(method: str) -> None:
    message = _encoder("json", **{"large-message-handle-compression": method}).encode([_row()])[0]
    plain = _encoder("json").encode([_row()])[0].value
    assert message.value is not None and message.value != plain
    unpacked = cramjam.snappy.decompress_raw(message.value) if method == "snappy" else lz4.frame.decompress(
        message.value)
    assert bytes(unpacked) == plain
    assert explain(message.value)["compression"] == method


# --------------------------------------------------------------------------- BOOTSTRAP policy (§6.3)
def test_bootstrap_policy_schedule() -> None:
    policy = BootstrapPolicy(interval_sec=10, msg_count=3)
    assert policy.should_emit(TABLE, 0)  # first row of a table
    assert [policy.should_emit(TABLE, t) for t in (1, 2, 3)] == [False, False, False]  # 3 rows counted
    assert policy.should_emit(TABLE, 4)  # msg count reached
    assert not policy.should_emit(TABLE, 5)
    assert policy.should_emit(TABLE, 4 + 10_000)  # interval elapsed
    other = TableInfo(schema="test", table="other", table_id=99)
    assert policy.should_emit(other, 20_000) and not policy.should_emit(other, 20_001)
    assert policy.due(20_002) == []
    assert policy.due(40_000) == [TABLE, other]  # a ticker pass


def test_bootstrap_policy_disabled_and_idle() -> None:
    for interval, count in ((0, 0), (0, 10), (10, 0)):
        assert not BootstrapPolicy(interval, count).enabled
        assert not BootstrapPolicy(interval, count).should_emit(TABLE, 0)
    policy = BootstrapPolicy(interval_sec=10**6)
    assert policy.should_emit(TABLE, 0) and not policy.should_emit(TABLE, 30 * 60 * 1000)
    assert policy.should_emit(TABLE, 60 * 60 * 1000 + 1)  # idle > 30 min: forgotten, bootstrapped again
    assert policy.forget_idle(200 * 60 * 1000) == [TABLE] and policy.tracked() == []
    renamed = TableInfo(schema="test", table="renamed", table_id=TABLE.table_id, schema_version=TABLE.schema_version)
    policy.should_emit(TABLE, 0)
    policy.should_emit(renamed, 1)
    assert policy.tracked() == [renamed]  # same version, new name: refreshed
    assert list(BootstrapPolicy().partitions(3)) == [0, 1, 2]
    assert list(BootstrapPolicy(to_all_partitions=False).partitions(3)) == [0]
    assert BootstrapPolicy.from_options(_encoder("json", **{"send-bootstrap-in-msg-count": 0}).options).enabled is False


def test_encoder_auto_bootstrap() -> None:
    rows = [_row(), _row(), _row(table=SMALL, columns=Row(id=1, payload=b""))]
    kinds = [m.events[0].kind for m in _encoder(auto_bootstrap=True).encode(rows)]
    assert kinds == ["bootstrap", "row", "row", "bootstrap", "row"]
    assert [m.events[0].kind for m in _encoder(auto_bootstrap=False).encode(rows)] == ["row"] * 3
    off = _encoder("json", auto_bootstrap=True,
                   **{"send-bootstrap-interval-in-sec": 0, "send-bootstrap-in-msg-count": 0})
    assert len(off.encode(rows)) == 3
    count = _encoder("json", auto_bootstrap=True, **{"send-bootstrap-in-msg-count": 1})
    # the first row is not counted (addEvent resets the counter); every later row is
    assert [m.events[0].kind for m in count.encode(rows[:2] * 2)] == [
        "bootstrap", "row", "row", "bootstrap", "row", "bootstrap", "row"]
    partition_three = _encoder("json", auto_bootstrap=True, partition=3, **{"send-bootstrap-to-all-partition": False})
    assert len(partition_three.encode(rows)) == 3


# --------------------------------------------------------------------------- options and explain
def test_options() -> None:
    with pytest.raises(ConfigError):
        Encoder({"enable-tidb-extension": True})
    with pytest.raises(ConfigError):
        Encoder({"no-such-option": 1})
    with pytest.raises(ConfigError):
        Encoder({"encoding-format": "protobuf"})
    with pytest.raises(ConfigError):
        Encoder({"large-message-handle-option": "claim-check"})
    assert S.PROTOCOL == "simple" and "encoding_format" in S.OPTIONS


def test_explain() -> None:
    for encoding in ENCODINGS:
        view = explain(_encoder(encoding).encode([_row()])[0].value)
        assert view["encoding"] == encoding and view["compression"] == "none"
        assert view["summary"]["type"] == "INSERT" and view["summary"]["schemaVersion"] == TABLE.schema_version
        orjson.dumps(view)  # JSON-friendly
    view = explain(_encoder("avro").encode([_row()])[0].value)
    dml = view["message"]["com.pingcap.simple.avro.Message"]["payload"]["com.pingcap.simple.avro.DML"]
    assert dml["data"]["map"]["u64"] == {"com.pingcap.simple.avro.UnsignedBigint": {"value": -1}}
    assert dml["data"]["map"]["f"] == {"float": pytest.approx(0.1)} and dml["data"]["map"]["vb"] == {"bytes": "00ff10"}
    with pytest.raises(DecodeError):
        explain(b"\x00garbage")


# --------------------------------------------------------------------------- garbage → DecodeError only
def _messages(encoding: str) -> list[bytes]:
    events: list[Event] = [_row(), _row(Op.UPDATE, VALUES, VALUES), Bootstrap(table_info=TABLE),
                           Watermark(resolved_ts=3),
                           DDLEvent(query="x", ddl_type=5, commit_ts=4, table_info=TABLE, pre_table_info=TABLE)]
    return [m.value for m in _encoder(encoding).encode(events) if m.value is not None]


SEEDS = {encoding: _messages(encoding) for encoding in ENCODINGS}


def _only_decode_errors(encoding: str, value: bytes, **options: Any) -> None:
    for decoder in (_decoder(encoding, **options), _decoder(encoding, TABLE, **options)):
        try:
            decoder.decode(value)
        except DecodeError:
            pass
    try:
        explain(value)
    except DecodeError:
        pass


@settings(max_examples=300, deadline=None)
@given(value=st.binary(max_size=200), encoding=st.sampled_from(ENCODINGS),
       compression=st.sampled_from(["none", "snappy", "lz4"]))
def test_random_bytes(value: bytes, encoding: str, compression: str) -> None:
    _only_decode_errors(encoding, value, **{"large-message-handle-compression": compression})


@settings(max_examples=300, deadline=None)
@given(data=st.data(), encoding=st.sampled_from(ENCODINGS))
def test_truncated_and_mutated(data: st.DataObject, encoding: str) -> None:
    value = bytearray(data.draw(st.sampled_from(SEEDS[encoding])))
    if data.draw(st.booleans()):
        value = value[:data.draw(st.integers(0, len(value)))]
    for _ in range(data.draw(st.integers(0, 4))):
        if value:
            value[data.draw(st.integers(0, len(value) - 1))] = data.draw(st.integers(0, 255))
    _only_decode_errors(encoding, bytes(value))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _replace_at(obj: Any, path: list[int], new: Any) -> Any:
    if not path or not isinstance(obj, (dict, list)) or not obj:
        return new
    keys = list(obj) if isinstance(obj, dict) else list(range(len(obj)))
    key = keys[path[0] % len(keys)]
    obj[key] = _replace_at(obj[key], path[1:], new)
    return obj


@settings(max_examples=300, deadline=None)
@given(seed=st.sampled_from(SEEDS["json"]), path=st.lists(st.integers(0, 50), min_size=1, max_size=5),
       new=json_values)
def test_type_confused_json(seed: bytes, path: list[int], new: Any) -> None:
    obj = _replace_at(orjson.loads(seed), path, new)
    # the json module writes integers beyond 64 bits too
    _only_decode_errors("json", json.dumps(obj).encode())


@pytest.mark.parametrize("text", [
    b"", b"null", b"[]", b'{"type":"INSERT","data":{"id":"1_0"}}', b'{"type":"INSERT","data":{"id":" 1"}}',
    b'{"type":"INSERT","data":{"f":"1e99"}}', b'{"type":"INSERT","data":{"vb":"***"}}',
    b'{"type":"INSERT","data":{"u64":"18446744073709551616"}}', b'{"type":"NOPE"}',
    b'{"type":"WATERMARK","commitTs":-1}',
    b'{"type":"BOOTSTRAP"}', b'{"type":"INSERT","commitTs":1.5}', b'{"type":"DELETE","old":[]}',
])
def test_bad_json_messages(text: bytes) -> None:
    decoder = _decoder("json", TableInfo(schema="", table="", columns=TABLE.columns))
    with pytest.raises(DecodeError):
        decoder.decode(text)


def test_decode_error_positions() -> None:
    value = SEEDS["avro"][0]
    with pytest.raises(DecodeError) as info:
        _decoder("avro").decode(value[:-3])
    assert isinstance(info.value.at, int)
    with pytest.raises(DecodeError) as info:
        _decoder("avro").decode(value + b"\x00")
    assert info.value.at == len(value)
    with pytest.raises(DecodeError) as info:
        _decoder("json", TableInfo(schema="", table="", columns=TABLE.columns)).decode(
            b'{"type":"INSERT","data":{"i8":"x"}}')
    assert info.value.at == "$.data.i8"


def test_dml_before_its_schema_is_held_and_released_typed_by_bootstrap() -> None:
    """Issue 4: a DML whose schema is unknown is held, never guessed, never dropped silently."""
    from pyticdc.sim.sample import SAMPLE_TABLE, sample_events

    rows = [e for e in sample_events() if isinstance(e, RowChange)]
    for encoding in ("json", "avro"):
        encoder = S.Encoder({"encoding-format": encoding}, clock=lambda: 1, auto_bootstrap=False)
        row_messages = encoder.encode(rows)
        bootstrap = encoder.encode([Bootstrap(table_info=SAMPLE_TABLE)])[0]
        decoder = S.Decoder({"encoding-format": encoding})
        assert all(decoder.decode(m.value) == [] for m in row_messages)
        assert len(decoder.held_rows()) == len(rows)
        released = decoder.decode(bootstrap.value)
        assert isinstance(released[0], Bootstrap)
        assert [row_of(r).commit_ts for r in released[1:]] == [r.commit_ts for r in rows]
        assert all(isinstance(r, RowChange) and r.table_info is not None for r in released[1:])
        assert [dict(r.columns or {}) for r in released[1:]] == [  # type: ignore[union-attr]
            dict(p.columns or {}) for r in rows if isinstance(p := encoder.project(r), RowChange)]
        assert decoder.held_rows() == []


def test_rows_can_be_returned_untyped_for_a_caller_that_holds_them() -> None:
    from pyticdc.sim.sample import SAMPLE_TABLE, sample_events

    row = next(e for e in sample_events() if isinstance(e, RowChange))
    encoder = S.Encoder(clock=lambda: 1, auto_bootstrap=False)
    decoder = S.Decoder(hold_unknown_schema=False)
    (untyped,) = decoder.decode(encoder.encode([row])[0].value)
    assert isinstance(untyped, RowChange) and untyped.table_info is None
    typed = S.resolve_row(untyped, SAMPLE_TABLE)
    assert typed.columns == encoder.project(row).columns  # type: ignore[union-attr]
    held = S.Decoder()
    assert held.decode(encoder.encode([row])[0].value) == []
    (given_up,) = held.release_held()
    assert given_up.table_info is None and held.held_rows() == []


# --------------------------------------------------------------------------- fast paths
# The decoder and encoder take per-table fast paths for the messages TiCDC writes and the reference
# path for everything else; both must give the same events, bytes and errors. The references
# below are the codec with its fast paths switched off.
class _ReferenceDecoder(Decoder):
    """The decoder on its reference path alone."""

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Any]:
        return self.decode_reference(value, key)


def _canonical(value: Any) -> Any:
    """A comparable form that also tells -0.0 from 0.0, NaN bits, types and key order apart."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return (type(value).__name__, tuple((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_canonical(v) for v in value))
    if isinstance(value, msgspec.Struct):
        return (type(value).__name__, tuple((f, _canonical(getattr(value, f))) for f in value.__struct_fields__))
    return (type(value).__name__, value)


def _outcome(decoder: Decoder, value: bytes) -> Any:
    try:
        return _canonical(decoder.decode(value)), _canonical(decoder.held_rows())
    except DecodeError as exc:
        return "DecodeError", exc.reason, exc.at


def _same_decoding(encoding: str, messages: list[bytes], table: TableInfo | None = None, hold: bool = True,
                   **options: Any) -> None:
    fast = Decoder({"encoding-format": encoding, **options}, hold_unknown_schema=hold)
    general = _ReferenceDecoder({"encoding-format": encoding, **options}, hold_unknown_schema=hold)
    for decoder in (fast, general):
        if table is not None:
            decoder.register_table(table)
    for value in messages:
        assert _outcome(fast, value) == _outcome(general, value), value


def _shuffled_table(table: TableInfo, seed: int) -> TableInfo:
    # The same table with its columns in another order: what its Avro maps look like from goavro,
    # which writes a Go map in random order.
    columns = list(table.columns)
    random.Random(seed).shuffle(columns)
    return TableInfo(schema=table.schema, table=table.table, table_id=table.table_id,
                     schema_version=table.schema_version, pk_is_handle=table.pk_is_handle, columns=tuple(columns),
                     indexes=table.indexes)


# JSON value texts around every rule the lax readers must not bend (see fastpath_json's comments).
_TRICKY_JSON = [
    b'"1e3"', b'"1.0"', b'"1E3"', b"5.0", b"1e3", b'"-0"', b'"-0.0"', b'"0"', b"-0", b'"null"', b'"NULL"', b'"Null"',
    b'"\\u006eull"', b'"nu\\u006cl"', b"null", b"true", b'"true"', b'" 5"', b'"5 "', b'"+5"', b'"007"', b'"1_0"',
    b'"-1"', b"-1", b'"18446744073709551615"', b"18446744073709551615", b'"18446744073709551616"',
    b'"9223372036854775808"', b'"-9223372036854775809"', b'"nan"', b'"-nan"', b'"inf"', b'"-Infinity"', b'"1e400"',
    b'"3.5e38"', b'"3.4028235e38"', b'"1e-400"', b'"4.9e-324"', b'"\\u0031"', b'"\\u0661"', b'"YQ=="', b'"YR=="',
    b'"YQ"', b'"Y Q=="', b'""', b"{}", b"[]", b'{"value":"2020-01-01 00:00:00"}', b'{"location":"UTC","value":"x"}',
    b'{"value":"x","zone":1}', b'"2020-01-01 00:00:00"', b"1.5", b'"\\ud800"', b'"\xff"', b'"x\\"y"',
]


def _json_value_end(message: bytes, at: int) -> int:
    """Where the JSON value starting at ``at`` ends (a shallow scanner for the test messages)."""
    end = at
    depth = 0
    in_string = escaped = False
    while end < len(message):
        char = message[end]
        if in_string:
            escaped = not escaped and char == 0x5C
            in_string = escaped or char != 0x22
        elif char == 0x22:
            in_string = True
        elif char in b"{[":
            depth += 1
        elif char in b"}],":
            if depth == 0:
                break
            if char != 0x2C:
                depth -= 1
        end += 1
    return end


def _swap_json_value(message: bytes, occurrence: int, new: bytes) -> bytes:
    # Replace the value after the occurrence-th '":' from data/old on (a column value).
    start = message.find(b'"data":{')
    if start < 0:
        start = message.find(b'"old":{')
    marks = [i for i in range(start + 7, len(message)) if message.startswith(b'":', i)] if start >= 0 else []
    if not marks:
        return message
    at = marks[occurrence % len(marks)] + 2
    return message[:at] + new + message[_json_value_end(message, at):]


def _with_json_value(column: str, text: bytes) -> bytes:
    message = _encoder("json").encode([_row()])[0].value
    assert message is not None
    at = message.index(b'"' + column.encode() + b'":') + len(column) + 3
    return message[:at] + text + message[_json_value_end(message, at):]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=row_changes(), data=st.data())
def test_fast_json_decoding_equals_the_reference_path(rows: list[RowChange], data: st.DataObject) -> None:
    table = rows[0].table_info
    assert table is not None
    encoder = _encoder("json")
    messages = [m.value for m in encoder.encode(rows) if m.value is not None]
    swapped = [
        _swap_json_value(m, data.draw(st.integers(0, 40)), data.draw(st.sampled_from(_TRICKY_JSON)))
        for m in messages for _ in range(data.draw(st.integers(0, 3)))
    ]
    bootstrap = encoder.bootstrap_message(table).value
    assert bootstrap is not None
    # rows before their schema (held), the schema, then the rows again, altered and in runs
    _same_decoding("json", [*messages, bootstrap, *messages, *swapped, *messages])
    _same_decoding("json", [*messages, bootstrap, *messages], hold=False)
    lz4_options: dict[str, Any] = {"large-message-handle-compression": "lz4"}
    compressed = _encoder("json", **lz4_options).encode(rows)
    _same_decoding("json", [m.value for m in compressed if m.value], table, **lz4_options)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=row_changes(), data=st.data())
def test_fast_avro_decoding_equals_the_reference_path(rows: list[RowChange], data: st.DataObject) -> None:
    table = rows[0].table_info
    assert table is not None
    shuffled = _shuffled_table(table, data.draw(st.integers(0, 1000)))
    messages = []
    for encoding_table in (table, shuffled):  # table order, and another order (goavro's)
        rows_of = [msgspec.structs.replace(r, table_info=encoding_table) for r in rows]
        messages += [m.value for m in _encoder("avro").encode(rows_of) if m.value is not None]
    mutated = []
    for message in messages:
        for _ in range(data.draw(st.integers(0, 2))):
            value = bytearray(message)
            at = data.draw(st.integers(0, len(value) - 1))
            value[at] = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x0E, 0x7F, 0x80, 0xFF, value[at] ^ 1]))
            mutated.append(bytes(value[:data.draw(st.integers(at, len(value)))]))
    bootstrap = _encoder("avro").bootstrap_message(table).value
    assert bootstrap is not None
    _same_decoding("avro", [*messages, bootstrap, *messages, *mutated, *messages])


def test_fast_paths_take_plain_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The messages TiCDC writes (any op, NULLs, either Avro map order) never reach the reference path."""
    nulls = Row({name: 8 if name == "id" else None for name in VALUES})
    rows = [_row(), _row(Op.UPDATE, VALUES, nulls), _row(Op.DELETE, None, VALUES), _row(columns=nulls)]
    for encoding in ENCODINGS:
        for compression in ("none", "lz4"):
            options = {"large-message-handle-compression": compression}
            messages = [m.value for m in _encoder(encoding, **options).encode(rows)]
            if encoding == "avro":
                shuffled = [msgspec.structs.replace(r, table_info=_shuffled_table(TABLE, 3)) for r in rows]
                messages += [m.value for m in _encoder(encoding, **options).encode(shuffled)]
            expected = _ReferenceDecoder({"encoding-format": encoding, **options})
            expected.register_table(TABLE)
            wanted = [expected.decode(m) for m in messages]
            decoder = _decoder(encoding, TABLE, **options)
            with monkeypatch.context() as patch:
                patch.setattr(simple_decoder, "parse_json", lambda data: pytest.fail("reference JSON path"))
                patch.setattr(simple_decoder, "parse_avro",
                              lambda data, tagged=False: pytest.fail("reference Avro path"))
                assert [_canonical(decoder.decode(m)) for m in messages] == [_canonical(w) for w in wanted]


@pytest.mark.parametrize(("column", "text", "expected"), [
    ("f", b'"-0"', -0.0), ("d", b'"-0"', -0.0), ("d", b"0", 0.0), ("i8", b'"-0"', 0), ("u64", b"-1", 2**64 - 1),
    ("u64", b'"-1"', -1), ("i8", b'"+5"', 5), ("i8", b'"007"', 7), ("vc", b'"null"', b"null"),
    ("u64", b'"18446744073709551615"', 2**64 - 1), ("dec", b'"null"', "null"), ("f", b"1", 1.0),
    ("blob", b'"null"', base64.b64decode("null")), ("blob", b'"NULL"', base64.b64decode("NULL")),
    ("ts", b'"null"', "null"), ("ts", b'{"value":"null"}', "null"), ("ts", b"null", None),
])
def test_json_values_lax_mode_would_misread(column: str, text: bytes, expected: Any) -> None:
    (row,) = _decoder("json", TABLE).decode(_with_json_value(column, text))
    assert isinstance(row, RowChange) and row.columns is not None
    assert _canonical(row.columns[column]) == _canonical(expected)


@pytest.mark.parametrize(("column", "text"), [
    ("i8", b'"1e3"'), ("i8", b'"1.0"'), ("i8", b"5.0"), ("i8", b'"null"'), ("f", b'"NULL"'), ("i8", b'"-Infinity"'),
    ("i8", b'"\\u006eull"'), ("u64", b'"18446744073709551616"'), ("f", b'"3.5e38"'), ("i8", b'" 5"'),
    ("e", b'"-1"'), ("i8", b"true"), ("ts", b'{"value":5}'), ("bit", b'"null"'), ("e", b'"-0"'),
    ("s", b'"-0"'), ("bit", b'"-0"'),
])
def test_json_values_lax_mode_would_accept_are_refused(column: str, text: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        _decoder("json", TABLE).decode(_with_json_value(column, text))
    assert info.value.at == f"$.data.{column}"


_ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 1.5, -0.0, float("nan"), float("inf"),
    float("-inf"), 3.5e38, 3.4028235e38, 1e-50, "", "b", "a,c", "x<y&z\u2028", "\udcff", b"", b"\xff", b"\x00\x05",
    bytearray(b"ab"), memoryview(b"cd"), "12.5", 7,
]


def _encoded(encoding: str, rows: list[RowChange], **options: Any) -> Any:
    try:
        return [m.value for m in _encoder(encoding, **options).encode(rows)]
    except EncodeError as exc:
        return "EncodeError", str(exc)
    except Exception as exc:  # noqa: BLE001 - the reference path's own exception, whatever it is
        return type(exc).__name__, str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=row_changes(), data=st.data(), encoding=st.sampled_from(ENCODINGS),
       options=st.sampled_from([{}, {"time-zone": "Asia/Shanghai"}, {"max-message-bytes": 300,
                                "large-message-handle-option": "handle-key-only"}]))
def test_fast_encoding_equals_the_reference_path(rows: list[RowChange], data: st.DataObject, encoding: str,
                                               options: dict[str, Any]) -> None:
    altered = []
    for row in rows:
        image = dict(row.columns or row.pre_columns or {})
        if bool(image) and data.draw(st.booleans()):
            name = data.draw(st.sampled_from(sorted(image)))
            if data.draw(st.booleans()):
                image[name] = data.draw(st.sampled_from(_ODD_VALUES))
            else:
                del image[name]
        field = "columns" if row.columns is not None else "pre_columns"
        altered.append(msgspec.structs.replace(row, **{field: Row(image)}))
    for batch in (rows, altered):
        fast = _encoded(encoding, batch, **options)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(simple_encoder, "writers", lambda table: None)
            general = _encoded(encoding, batch, **options)
        assert fast == general


@settings(max_examples=500, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False, width=32)
       | st.floats(allow_nan=False, allow_infinity=False, min_value=-3.4e38, max_value=3.4e38))
def test_float32_text(value: float) -> None:
    assert format_float32(value) == format_float_f(float32_round(value), 32)
