"""Debezium-JSON from every real producer of the peers corpus decodes into the rows upstream asserts.

The corpus (``../shared/peers``, README there) holds the Debezium MySQL connector's output through
Kafka Connect's JsonConverter (schemas on and off), Flink's debezium-json encoder, Flink CDC's and
Paimon's test data. Each file is enumerated and counted, so a missing file fails. The tolerance
and strictness tests at the end use synthetic messages for the shapes the corpus does not hold.
"""

from __future__ import annotations

import base64
import json
import struct
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from pyticdc import DDLEvent, DecodeError, RowChange
from pyticdc.codec import debezium
from pyticdc.codec.debezium import Decoder
from pyticdc.model import Event, Op, Row

# --------------------------------------------------------------------------- the corpus
#: Every Debezium file of the corpus and its number of records.
EXPECTED_FILES: dict[str, int] = {
    "debezium/serde-unknown-property.json": 1,
    "debezium/serde-unwrapped.json": 1,
    "debezium/serde-update.json": 1,
    "debezium/serde-with-schema.json": 1,
    "debezium/serde-without-schema.json": 1,
    "flink-cdc/debezium-data-schema-exclude-with-numeric-decimal.json": 2,
    "flink-cdc/debezium-data-schema-exclude.json": 2,
    "flink-cdc/debezium-data-schema-include.json": 2,
    "flink/DebeziumJsonSerDeSchemaTest.serialized.jsonl": 20,
    "flink/debezium-data-schema-exclude.txt": 16,
    "flink/debezium-data-schema-include.txt": 16,
    "paimon/kafka/debezium/table/nullvalue/debezium-data-1.txt": 1,
    "paimon/kafka/debezium/table/nullvalue/debezium-data-2.txt": 1,
    "paimon/kafka/debezium/table/schema/alltype/debezium-data-1.txt": 1,
    "paimon/kafka/debezium/table/schema/include/debezium-data-1.txt": 1,
    "paimon/kafka/debezium/table/schema/schemaevolution/debezium-data-with-delete.txt": 1,
    "paimon/kafka/debezium/table/schemaevolution/debezium-data-1.txt": 2,
    "paimon/kafka/debezium/table/schemaevolution/debezium-data-2.txt": 2,
    "paimon/kafka/debezium/table/schemaevolution/debezium-data-3.txt": 4,
}


def _debezium_files(peers: Path) -> list[Path]:
    return sorted([
        *peers.glob("debezium/*.json"), *peers.glob("flink-cdc/*.json"),
        *peers.glob("flink/Debezium*.jsonl"), *peers.glob("flink/debezium-*.txt"),
        *peers.glob("paimon/kafka/debezium/**/*.txt"),
    ])


def _records(path: Path) -> list[tuple[str, bytes]]:
    """(label, message bytes) of one corpus file, read the way its upstream test reads it."""
    text = path.read_text(encoding="utf-8")
    if path.parent.name == "flink-cdc":
        wrapper = json.loads(text)
        return [(f"{path.name}:{k}", json.dumps(wrapper[k]).encode()) for k in ("expected_snapshot", "expected_binlog")]
    if path.suffix == ".json":
        return [(path.name, text.encode())]
    records = []
    # Files.readAllLines semantics; Paimon's isRecordLine: non-empty and parses as JSON.
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            continue
        records.append((f"{path.name}:{number}", line.encode()))
    return records


def _decode_file(peers: Path, name: str, **options: Any) -> list[tuple[Any, list[Event]]]:
    """(parsed document, decoded events) per record, through one Decoder as a consumer would."""
    decoder = Decoder(options)
    return [(json.loads(raw), decoder.decode(raw)) for _, raw in _records(peers / name)]


def _rows(peers: Path, name: str, **options: Any) -> list[RowChange]:
    rows = []
    for _, events in _decode_file(peers, name, **options):
        assert len(events) == 1 and isinstance(events[0], RowChange)
        rows.append(events[0])
    return rows


def test_every_debezium_file_of_the_corpus_is_enumerated(peers_dir: Path) -> None:
    found = {str(p.relative_to(peers_dir)): len(_records(p)) for p in _debezium_files(peers_dir)}
    assert found == EXPECTED_FILES
    assert len(found) == 19 and sum(found.values()) == 76


def _envelope_of(doc: Any) -> dict[str, Any]:
    envelope = doc["payload"] if isinstance(doc, dict) and "payload" in doc and "op" not in doc else doc
    assert isinstance(envelope, dict)
    return envelope


def test_every_message_decodes_into_its_rows(peers_dir: Path) -> None:
    decoded = 0
    for path in _debezium_files(peers_dir):
        if path.name == "serde-unwrapped.json":
            continue  # not an envelope: test_unwrapped_row_decodes_as_an_upsert
        for label, raw in _records(path):
            envelope = _envelope_of(json.loads(raw))
            source = envelope.get("source") or {}
            if source.get("table"):
                events = debezium.decode(raw)
                named = (source.get("db", ""), source["table"])
            else:
                # Flink's encoder and the stripped Flink CDC fixtures name no table: only the user can.
                with pytest.raises(DecodeError, match="default-table"):
                    debezium.decode(raw)
                events = debezium.decode(raw, default_table="peers.products")
                named = ("peers", "products")
            assert len(events) == 1, label
            row = events[0]
            assert isinstance(row, RowChange), label
            assert (row.schema, row.table) == named, label
            assert row.table_info is not None and row.table_info.table == row.table, label
            op = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}[envelope["op"]]
            assert row.op is op, label
            # No producer here is TiCDC: the commit ts is the source clock as a TSO.
            assert row.commit_ts == source.get("ts_ms", 0) << 18, label
            # Every column of both images comes back, NULL as None.
            if op is not Op.DELETE:
                assert row.columns is not None and list(row.columns) == list(envelope["after"]), label
                assert all((row.columns[k] is None) == (v is None) for k, v in envelope["after"].items())
            if op is not Op.INSERT:
                assert row.pre_columns is not None and list(row.pre_columns) == list(envelope["before"]), label
            decoded += 1
    assert decoded == 75


# --------------------------------------------------------------------------- Flink: the products changelog
def _f32(value: float) -> float:
    """The value as a Java ``float`` (Flink's table types ``weight`` FLOAT)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


#: DebeziumJsonDeserializationSchemaTest's expected changelog of debezium-data-schema-{include,exclude}.txt.
PRODUCTS_CHANGELOG: list[tuple[str, tuple[int, str, str, float]]] = [
    ("+I", (101, "scooter", "Small 2-wheel scooter", 3.14)),
    ("+I", (102, "car battery", "12V car battery", 8.1)),
    ("+I", (103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", 0.8)),
    ("+I", (104, "hammer", "12oz carpenter's hammer", 0.75)),
    ("+I", (105, "hammer", "14oz carpenter's hammer", 0.875)),
    ("+I", (106, "hammer", "16oz carpenter's hammer", 1.0)),
    ("+I", (107, "rocks", "box of assorted rocks", 5.3)),
    ("+I", (108, "jacket", "water resistent black wind breaker", 0.1)),
    ("+I", (109, "spare tire", "24 inch spare tire", 22.2)),
    ("-U", (106, "hammer", "16oz carpenter's hammer", 1.0)),
    ("+U", (106, "hammer", "18oz carpenter hammer", 1.0)),
    ("-U", (107, "rocks", "box of assorted rocks", 5.3)),
    ("+U", (107, "rocks", "box of assorted rocks", 5.1)),
    ("+I", (110, "jacket", "water resistent white wind breaker", 0.2)),
    ("+I", (111, "scooter", "Big 2-wheel scooter ", 5.18)),
    ("-U", (110, "jacket", "water resistent white wind breaker", 0.2)),
    ("+U", (110, "jacket", "new water resistent white wind breaker", 0.5)),
    ("-U", (111, "scooter", "Big 2-wheel scooter ", 5.18)),
    ("+U", (111, "scooter", "Big 2-wheel scooter ", 5.17)),
    ("-D", (111, "scooter", "Big 2-wheel scooter ", 5.17)),
]


def _product(row: Row | None) -> tuple[int, str, str, float]:
    assert row is not None and set(row) == {"id", "name", "description", "weight"}
    ident, name, description, weight = row["id"], row["name"], row["description"], row["weight"]
    assert isinstance(ident, int) and isinstance(name, bytes) and isinstance(description, bytes)
    assert isinstance(weight, (int, float))
    return ident, name.decode(), description.decode(), _f32(weight)


def _changelog(rows: list[RowChange]) -> Iterator[tuple[str, tuple[int, str, str, float]]]:
    """Flink's RowKind reading of row events: the pre-image is -U, the post-image +U."""
    for row in rows:
        if row.op is Op.INSERT:
            yield "+I", _product(row.columns)
        elif row.op is Op.UPDATE:
            yield "-U", _product(row.pre_columns)
            yield "+U", _product(row.columns)
        else:
            yield "-D", _product(row.pre_columns)


def _expected(changelog: list[tuple[str, tuple[int, str, str, float]]]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(kind, (*row[:3], _f32(row[3]))) for kind, row in changelog]


@pytest.mark.parametrize("variant", ["include", "exclude"])
def test_flink_products_changelog(peers_dir: Path, variant: str) -> None:
    rows = _rows(peers_dir, f"flink/debezium-data-schema-{variant}.txt")
    assert len(rows) == 16
    assert list(_changelog(rows)) == _expected(PRODUCTS_CHANGELOG)
    assert all((r.schema, r.table) == ("inventory", "products") for r in rows)
    info = rows[0].table_info
    assert info is not None
    types = {c.name: (c.type_code, c.nullable) for c in info.columns}
    if variant == "include":  # int32 NOT NULL / string / string / double, from the schema
        assert types == {"id": (3, False), "name": (15, False), "description": (15, True), "weight": (5, True)}
    else:  # JSON types only
        assert types == {"id": (8, True), "name": (15, True), "description": (15, True), "weight": (5, True)}


def test_flink_include_and_exclude_decode_to_the_same_values(peers_dir: Path) -> None:
    include = _rows(peers_dir, "flink/debezium-data-schema-include.txt")
    exclude = _rows(peers_dir, "flink/debezium-data-schema-exclude.txt")
    assert [(r.op, r.columns, r.pre_columns, r.commit_ts) for r in include] == \
        [(r.op, r.columns, r.pre_columns, r.commit_ts) for r in exclude]
    # snapshot rows carry source.ts_ms 0; binlog rows their binlog time
    assert [r.commit_ts >> 18 for r in include[8:11]] == [0, 1589361987000, 1589362099000]


def test_flink_debezium_json_encoder_output(peers_dir: Path) -> None:
    name = "flink/DebeziumJsonSerDeSchemaTest.serialized.jsonl"
    for _, raw in _records(peers_dir / name):
        with pytest.raises(DecodeError, match="names no table"):
            debezium.decode(raw)  # no source: which table is the user's to say
    rows = _rows(peers_dir, name, default_table="inventory.products")
    assert len(rows) == 20
    # Flink's encoder writes +I/+U as "c" (after only) and -U/-D as "d" (before only), no source.
    expected = [("+I" if kind in ("+I", "+U") else "-D", row) for kind, row in PRODUCTS_CHANGELOG]
    assert list(_changelog(rows)) == _expected(expected)
    assert all((r.schema, r.table, r.commit_ts) == ("inventory", "products", 0) for r in rows)
    # Its weights are the FLOAT values' shortest text, so they equal the literals exactly.
    first = rows[0].columns
    assert first is not None and first["weight"] == 3.14


# --------------------------------------------------------------------------- Flink CDC: full_types
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: Ints of column_type_test.sql's INSERT that every variant carries as JSON numbers.
_FULL_TYPES_INTS = {
    "tiny_c": 127, "tiny_un_c": 255, "tiny_un_z_c": 255, "small_c": 32767, "small_un_c": 65535,
    "small_un_z_c": 65535, "medium_c": 8388607, "medium_un_c": 16777215, "medium_un_z_c": 16777215,
    "int_c": 2147483647, "int_un_c": 4294967295, "int_un_z_c": 4294967295, "int11_c": 2147483647,
    "big_c": 9223372036854775807, "tiny1_c": 1, "boolean_c": 1, "year_c": 2021,
}
_WKB_TYPES = {"point_c": 1, "geometry_c": 3, "linestring_c": 2, "polygon_c": 3, "multipoint_c": 4,
              "multiline_c": 5, "multipolygon_c": 6, "geometrycollection_c": 7}


def _b64(value: Any) -> bytes:
    assert isinstance(value, bytes)
    return base64.b64decode(value)


def _unscaled(value: Any, scale: int) -> Decimal:
    """A Connect Decimal kept as its base64 text (no schema): the number it encodes."""
    return Decimal(int.from_bytes(_b64(value), "big", signed=True)).scaleb(-scale)


def _check_full_types(row: Row | None, timestamp: str, numeric_decimal: bool) -> None:
    """The full_types row against column_type_test.sql, through the documented schemaless projection."""
    assert row is not None and len(row) == 59
    assert {k: row[k] for k in _FULL_TYPES_INTS} == _FULL_TYPES_INTS
    texts = (row["varchar_c"], row["char_c"], row["text_c"], row["varchar_len0_c"])
    assert texts == (b"Hello World", b"abc", b"text", b"")
    for name, literal in (("real_c", 123.102), ("float_c", 123.102), ("float_un_c", 123.103),
                          ("float_un_z_c", 123.104)):
        value = row[name]
        assert isinstance(value, float) and _f32(value) == _f32(literal)
    assert (row["double_c"], row["double_un_c"], row["double_un_z_c"]) == (404.4443, 404.4444, 404.4445)
    if numeric_decimal:  # JsonConverter decimal.format=numeric: plain JSON numbers
        assert (row["id"], row["big_un_c"], row["big_un_z_c"]) == (1, 2**64 - 1, 2**64 - 1)
        assert (row["decimal_c"], row["decimal_un_c"], row["decimal_un_z_c"]) == (123.4567, 123.4568, 123.4569)
        assert (row["numeric_c"], row["big_decimal_c"]) == (346, 34567892.1)
    else:  # bigint.unsigned.handling.mode=precise and DECIMAL as base64 Connect Decimals
        assert [_unscaled(row[k], 0) for k in ("id", "big_un_c", "big_un_z_c")] == [1, 2**64 - 1, 2**64 - 1]
        assert [_unscaled(row[k], 4) for k in ("decimal_c", "decimal_un_c", "decimal_un_z_c")] == \
            [Decimal("123.4567"), Decimal("123.4568"), Decimal("123.4569")]
        # NUMERIC(6,0) rounds 345.6; DECIMAL(65,1) keeps 34567892.1
        assert _unscaled(row["numeric_c"], 0) == 346
        assert _unscaled(row["big_decimal_c"], 1) == Decimal("34567892.1")
    assert row["bit1_c"] == 0  # BIT(1) as a JSON boolean
    date_c, time_c, dt3, dt6 = row["date_c"], row["time_c"], row["datetime3_c"], row["datetime6_c"]
    assert isinstance(date_c, int) and isinstance(time_c, int) and isinstance(dt3, int) and isinstance(dt6, int)
    assert date(1970, 1, 1) + timedelta(days=date_c) == date(2020, 7, 17)
    assert timedelta(microseconds=time_c) == timedelta(hours=18, seconds=22)
    assert _EPOCH + timedelta(milliseconds=dt3) == datetime(2020, 7, 17, 18, 0, 22, 123000, tzinfo=timezone.utc)
    assert _EPOCH + timedelta(microseconds=dt6) == datetime(2020, 7, 17, 18, 0, 22, 123456, tzinfo=timezone.utc)
    assert row["timestamp_c"] == timestamp.encode()
    assert uuid.UUID(bytes=_b64(row["file_uuid"])) == uuid.UUID("651aed08-390f-4893-b2f1-36923e7b7400")
    assert int.from_bytes(_b64(row["bit_c"]), "little") == int("00000100" * 8, 2)
    assert [_b64(row[k]) for k in ("tiny_blob_c", "blob_c", "medium_blob_c", "long_blob_c")] == [b"\x10"] * 4
    assert (row["enum_c"], row["set_c"]) == (b"red", b"a,b")  # 'a,b,a' is stored once per member
    json_c = row["json_c"]
    assert isinstance(json_c, bytes) and json.loads(json_c) == {"key1": "value1"}
    for name, wkb_type in _WKB_TYPES.items():  # geometry structs read as their WKB
        wkb = row[name]
        assert isinstance(wkb, bytes) and struct.unpack_from("<BI", wkb) == (1, wkb_type), name
    point = row["point_c"]
    assert isinstance(point, bytes) and struct.unpack("<BIdd", point) == (1, 1, 1.0, 1.0)


@pytest.mark.parametrize("variant", ["exclude", "exclude-with-numeric-decimal", "include"])
def test_flink_cdc_full_types(peers_dir: Path, variant: str) -> None:
    # The exclude fixtures strip the source: the table is named by the option (unused when a source names it).
    snapshot, binlog = _rows(peers_dir, f"flink-cdc/debezium-data-schema-{variant}.json",
                             default_table="peers.full_types")
    numeric = variant.endswith("numeric-decimal")
    assert snapshot.op is Op.INSERT and snapshot.pre_columns is None
    _check_full_types(snapshot.columns, "2020-07-17T18:00:22Z", numeric)
    assert binlog.op is Op.UPDATE  # UPDATE full_types SET timestamp_c = '2020-07-17 18:33:22'
    _check_full_types(binlog.pre_columns, "2020-07-17T18:00:22Z", numeric)
    _check_full_types(binlog.columns, "2020-07-17T18:33:22Z", numeric)
    assert binlog.columns is not None and binlog.pre_columns is not None
    assert [k for k in binlog.columns if binlog.columns[k] != binlog.pre_columns[k]] == ["timestamp_c"]
    info = snapshot.table_info
    assert info is not None
    types = {c.name: c for c in info.columns}
    assert types["point_c"].type_code == 255 and types["bit1_c"].type_code == 16
    assert types["big_un_c"].type_code == 8 and types["big_un_c"].unsigned if numeric else \
        types["big_un_c"].type_code == 15
    if variant == "include":
        # Its schema predates 11 payload columns and types id as int32 over Decimal bytes: the
        # decoder ignores a schema that does not list the payload's columns (stale_schema).
        assert (snapshot.schema, snapshot.table) == ("column_type_test_2jid2b", "full_types")
        assert snapshot.commit_ts == 1630315344066 << 18 and binlog.commit_ts == 1630324170000 << 18
        assert types["id"].type_code == 15 and types["decimal_c"].type_code == 15
    else:  # the test strips source and ts_ms
        assert (snapshot.schema, snapshot.table, snapshot.commit_ts) == ("peers", "full_types", 0)


# --------------------------------------------------------------------------- Paimon
def test_paimon_schemaevolution_and_nullvalue(peers_dir: Path) -> None:
    base = "paimon/kafka/debezium/table/"
    rows = [r for n in (1, 2, 3) for r in _rows(peers_dir, f"{base}schemaevolution/debezium-data-{n}.txt")]
    seen = [(r.op, r.pre_columns and r.pre_columns.get("id"), r.columns and r.columns.get("id")) for r in rows]
    assert seen == [(Op.INSERT, None, 101), (Op.INSERT, None, 102), (Op.INSERT, None, 103),
                    (Op.INSERT, None, 104), (Op.INSERT, None, 105), (Op.DELETE, 101, None),
                    (Op.UPDATE, None, 105), (Op.INSERT, None, 107)]
    assert rows[2].columns is not None and rows[2].columns["age"] == 18  # the added column
    assert rows[4].columns is not None and rows[4].columns["address"] == b"Shanghai"
    # A partial before image (binlog_row_image=MINIMAL shape) is kept as given, not padded with NULLs.
    assert rows[6].pre_columns == {"address": b"Shanghai"}
    assert rows[6].columns is not None and rows[6].columns["address"] == b"Beijing"
    assert rows[6].commit_ts == 1596684906000 << 18
    assert all((r.schema, r.table) == ("test", "product") for r in rows)
    nulls = [r for n in (1, 2) for r in _rows(peers_dir, f"{base}nullvalue/debezium-data-{n}.txt")]
    assert [r.columns for r in nulls] == [{"id": 1, "value": b"A"}, {"id": 2, "value": b"B"}]
    (delete,) = _rows(peers_dir, f"{base}schema/schemaevolution/debezium-data-with-delete.txt")
    # {"schema": null, "payload": {...}}: the wrapper with schemas on but no schema
    assert delete.op is Op.DELETE and delete.pre_columns is not None
    assert _product(delete.pre_columns) == (101, "scooter", "Small 2-wheel scooter", _f32(3.14))
    (include,) = _rows(peers_dir, f"{base}schema/include/debezium-data-1.txt")
    assert list(_changelog([include])) == _expected(PRODUCTS_CHANGELOG[:1])


def test_paimon_all_types_with_schema(peers_dir: Path) -> None:
    (row,) = _rows(peers_dir, "paimon/kafka/debezium/table/schema/alltype/debezium-data-1.txt")
    assert row.op is Op.INSERT and (row.schema, row.table) == ("paimon_sync_table", "all_types_table")
    values = row.columns
    assert values is not None and row.table_info is not None
    types = {c.name: c.type_code for c in row.table_info.columns}
    expected: dict[str, Any] = {
        "_id": 1, "_bit1": 1, "_bit": 0b11111000111, "_tinyint1": 1, "_boolean": 1, "_bool": 0,
        "_tinyint_unsigned_zerofill": 3, "_smallint_unsigned": 2000, "_mediumint_unsigned_zerofill": 300000,
        "_int_unsigned": 2000000, "_bigint": 10000000000,
        # Connect Decimals written as numbers (decimal.format=numeric), printed with the schema scale
        "pt": "1.1", "_bigint_unsigned": "20000000000", "_serial": "40000000000", "_numeric": "12345.110",
        "_fixed": "123456789876543220000000000000000.000", "_decimal": "11111",
        "_big_decimal": "2222222222222222400000000000.0000000000",
        "_float": 1.5, "_double_precision_unsigned_zerofill": 3.000333,
        "_date": "2023-03-23", "_datetime": "2023-03-23 14:30:05.000", "_datetime3": "2023-03-23 14:30:05.123",
        "_datetime6": "2023-03-23 14:30:05.123456", "_datetime_p2": "2023-03-24 14:30:05.120",
        "_timestamp": "2023-03-23 22:00:10.123456", "_timestamp0": "2023-03-23 07:10:00",
        "_char": b"Paimon", "_bin": b"bytes" + bytes(5), "_varbin": b"more bytes",
        "_longblob": b"LONGBLOB  bytes test data",
        "_json": '{"a": "b"}', "_enum": 1, "_year": 2023, "_time": "10:13:23.000000", "_set": 0b11,
    }
    assert {k: values[k] for k in expected} == expected
    expected_types = {"pt": 246, "_bit": 16, "_date": 10, "_datetime6": 12, "_timestamp": 7, "_enum": 247,
                      "_set": 248, "_point": 255}
    assert {k: types[k] for k in expected_types} == expected_types
    point = values["_point"]
    assert isinstance(point, bytes) and struct.unpack("<BIdd", point) == (1, 1, 1.0, 1.0)


# --------------------------------------------------------------------------- Debezium SerdeTest fixtures
_ANNE = {"id": 1004, "first_name": b"Anne", "last_name": b"Kretchmar", "email": b"annek@noanswer.org"}


def test_debezium_serde_fixtures(peers_dir: Path) -> None:
    rows = {name: _rows(peers_dir, f"debezium/serde-{name}.json")[0]
            for name in ("with-schema", "without-schema", "update", "unknown-property")}
    for row in rows.values():
        assert (row.schema, row.table, row.commit_ts) == ("inventory", "customers", 0)  # source.ts_ms 0
    assert rows["with-schema"].op is Op.INSERT and rows["with-schema"].columns == _ANNE
    assert rows["without-schema"].op is Op.INSERT and rows["without-schema"].columns == _ANNE
    info = rows["with-schema"].table_info
    assert info is not None and [(c.type_code, c.nullable) for c in info.columns] == [(3, False)] + [(15, False)] * 3
    update = rows["update"]
    assert update.op is Op.UPDATE and update.columns == _ANNE
    assert update.pre_columns == {**_ANNE, "first_name": b"Anne-Marie"}
    # SerdeTest's unknown property is a column its POJO lacks: kept here as a column like any other.
    unknown = rows["unknown-property"]
    assert unknown.columns == {**_ANNE, "first_name": b"Anne", "middle_name": b"L"}
    assert unknown.pre_columns is not None and unknown.pre_columns["first_name"] == b"Anne-Marie"


def test_unwrapped_row_decodes_as_an_upsert(peers_dir: Path) -> None:
    # SerdeTest.valuesWithoutEnvelope reads this bare row as Customer(1004, Anne, Kretchmar, annek@...).
    raw = (peers_dir / "debezium/serde-unwrapped.json").read_bytes()
    with pytest.raises(DecodeError, match="default-table"):
        debezium.decode(raw)  # the SMT dropped the table: any JSON object would read as a row of ""
    (row,) = debezium.decode(raw, default_table="inventory.customers")
    assert isinstance(row, RowChange)
    assert row.op is Op.INSERT and row.pre_columns is None
    assert row.columns == _ANNE
    assert (row.schema, row.table, row.commit_ts) == ("inventory", "customers", 0)
    assert row.table_info is not None and (row.table_info.schema, row.table_info.table) == ("inventory", "customers")
    assert debezium.explain(raw)["kind"] == "unwrapped-row"


def test_unwrapped_row_metadata_fields() -> None:
    # ExtractNewRecordState add.fields=db,table,source.ts_ms and delete.handling.mode=rewrite.
    doc = {"id": 7, "name": "x", "__db": "shop", "__table": "items", "__source_ts_ms": 1700000000123,
           "__deleted": "true"}
    (row,) = debezium.decode(orjson.dumps(doc))
    assert isinstance(row, RowChange)
    assert row.op is Op.DELETE and row.columns is None
    assert row.pre_columns == {"id": 7, "name": b"x"}
    assert (row.schema, row.table, row.commit_ts) == ("shop", "items", 1700000000123 << 18)
    (kept,) = debezium.decode(orjson.dumps({**doc, "__deleted": "false"}))
    assert isinstance(kept, RowChange) and kept.op is Op.INSERT and kept.columns == {"id": 7, "name": b"x"}
    # With JsonConverter schemas on, the schema is the row struct itself and types the columns.
    wrapped = {"schema": {"type": "struct", "fields": [{"field": "id", "type": "int64", "optional": False},
                                                         {"field": "name", "type": "string", "optional": True}]},
               "payload": {"id": 7, "name": "x"}}
    (typed,) = debezium.decode(orjson.dumps(wrapped), default_table="customers")
    assert isinstance(typed, RowChange) and typed.columns == {"id": 7, "name": b"x"}
    assert (typed.schema, typed.table) == ("", "customers")  # a name without a dot is the table
    assert typed.table_info is not None and [c.name for c in typed.table_info.columns] == ["id", "name"]
    with pytest.raises(DecodeError):
        debezium.decode(b"{}")  # nothing to read: not a row


# --------------------------------------------------------------------------- tolerances (synthetic)
def _decode(doc: Any, **options: Any) -> list[Event]:
    # These documents are about values and envelopes: a source-less one is a row of d.t.
    options.setdefault("default_table", "d.t")
    return debezium.decode(json.dumps(doc).encode(), **options)  # json: ints beyond 64 bits too


def _one_row(doc: Any) -> RowChange:
    events = _decode(doc)
    assert len(events) == 1 and isinstance(events[0], RowChange)
    return events[0]


_SOURCE = {"version": "2.4.0.Final", "connector": "mysql", "name": "s", "ts_ms": 1_700_000_000_123,
           "snapshot": "false", "db": "d", "table": "t", "server_id": 1, "file": "mysql-bin.000001", "pos": 4}


def test_tombstones_carry_no_events() -> None:
    for value in (None, b"", b"null", b'{"schema":null,"payload":null}',
                  b'{"schema":{"type":"struct","optional":true},"payload":null}'):
        assert debezium.decode(value) == []
        assert debezium.explain(value)["kind"] == "tombstone"


def test_snapshot_read_is_an_insert_and_truncate_a_ddl() -> None:
    read = _one_row({"op": "r", "before": None, "after": {"a": 1}, "source": _SOURCE})
    assert read.op is Op.INSERT and read.columns == {"a": 1}
    (truncate,) = _decode({"op": "t", "before": None, "after": None, "source": {**_SOURCE, "table": "t`x"}})
    assert isinstance(truncate, DDLEvent) and truncate.ddl_type == 11
    assert (truncate.query, truncate.schema, truncate.table) == ("TRUNCATE TABLE `d`.`t``x`", "d", "t`x")
    assert truncate.commit_ts == 1_700_000_000_123 << 18
    with pytest.raises(DecodeError) as caught:
        _decode({"op": "t", "source": {"db": "d"}})
    assert caught.value.at == "$.source.table"


def test_commit_ts_from_the_most_precise_source_clock() -> None:
    def commit_ts(**source: Any) -> int:
        return _one_row({"op": "c", "after": {"a": 1}, "source": source}).commit_ts

    assert commit_ts(ts_ms=1_700_000_000_123) == 1_700_000_000_123 << 18
    # Debezium 2.6+: µs within the millisecond fill the logical part
    assert commit_ts(ts_ms=1_700_000_000_123, ts_us=1_700_000_000_123_456) == (1_700_000_000_123 << 18) | 456
    assert commit_ts(ts_ms=1, ts_us=2, ts_ns=1_700_000_000_123_456_789) == (1_700_000_000_123 << 18) | 456
    assert commit_ts(ts_ms=1, commit_ts=449_567_142_457_917_441) == 449_567_142_457_917_441  # TiCDC's own
    assert commit_ts() == 0
    # payload-level ts_ms/ts_us are the connector's processing time, not the commit
    assert _one_row({"op": "c", "after": {"a": 1}, "ts_ms": 5, "ts_us": 5000}).commit_ts == 0


def _typed(field: dict[str, Any], value: Any) -> tuple[Any, int]:
    doc = {"schema": {"type": "struct", "fields": [
        {"type": "struct", "optional": True, "field": "after", "fields": [{**field, "field": "v"}]}]},
        "payload": {"op": "c", "after": {"v": value}, "source": _SOURCE}}
    row = _one_row(doc)
    assert row.columns is not None and row.table_info is not None
    return row.columns["v"], row.table_info.columns[0].type_code


def _b64_of(unscaled: int) -> str:
    return base64.b64encode(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)).decode()


LOGICAL_TYPES: list[tuple[dict[str, Any], Any, Any, int]] = [
    ({"type": "int32", "name": "io.debezium.time.Date"}, 18460, "2020-07-17", 10),
    ({"type": "int32", "name": "org.apache.kafka.connect.data.Date"}, 18460, "2020-07-17", 10),
    ({"type": "int32", "name": "io.debezium.time.Time"}, 64_822_123, "18:00:22.123000", 11),
    ({"type": "int32", "name": "org.apache.kafka.connect.data.Time"}, 64_822_123, "18:00:22.123000", 11),
    ({"type": "int64", "name": "io.debezium.time.MicroTime"}, 64_822_123_456, "18:00:22.123456", 11),
    ({"type": "int64", "name": "io.debezium.time.NanoTime"}, 64_822_123_456_789, "18:00:22.123456", 11),
    ({"type": "int64", "name": "io.debezium.time.Timestamp"}, 1_595_008_822_123, "2020-07-17 18:00:22.123", 12),
    ({"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"}, 1_595_008_822_123,
     "2020-07-17 18:00:22.123", 12),
    ({"type": "int64", "name": "io.debezium.time.MicroTimestamp"}, 1_595_008_822_123_456,
     "2020-07-17 18:00:22.123456", 12),
    ({"type": "int64", "name": "io.debezium.time.NanoTimestamp"}, 1_595_008_822_123_456_789,
     "2020-07-17 18:00:22.123456", 12),
    ({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, "2020-07-17T18:00:22.5+02:00",
     "2020-07-17 16:00:22.5", 7),
    ({"type": "int32", "name": "io.debezium.time.Year"}, 2021, 2021, 13),
    ({"type": "string", "name": "io.debezium.data.Json"}, '{"a": [1]}', '{"a": [1]}', 245),
    ({"type": "string", "name": "io.debezium.data.Enum", "parameters": {"allowed": "red,white"}}, "white", 2, 247),
    ({"type": "string", "name": "io.debezium.data.EnumSet", "parameters": {"allowed": "a,b,c"}}, "a,c", 5, 248),
    ({"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "10"}}, "xwM=", 0x3C7, 16),
    ({"type": "boolean"}, True, 1, 16),
    ({"type": "bytes"}, "AP8=", b"\x00\xff", 15),
    # decimal.handling.mode=precise: base64 big-endian two's complement with the schema's scale
    ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
     _b64_of(-12345), "-123.45", 246),
    ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
      "parameters": {"scale": "5", "connect.decimal.precision": "65"}}, _b64_of(10**40 + 1),
     "100000000000000000000000000000000000.00001", 246),  # exact past 28 digits
    # JsonConverter decimal.format=numeric: a number under the same schema
    ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
     123.4, "123.40", 246),
    ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}, 7, "7.00", 246),
    ({"type": "string", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
     "-0.5", "-0.50", 246),
    ({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"}, {"scale": 3, "value": _b64_of(-1234)},
     "-1.234", 246),
    # decimal.handling.mode=double / string: plain double / string schemas; the DECIMAL type is lost
    ({"type": "double"}, 123.45, 123.45, 5),
    ({"type": "string"}, "123.45", b"123.45", 15),
]


@pytest.mark.parametrize(("field", "wire", "value", "type_code"), LOGICAL_TYPES)
def test_logical_types(field: dict[str, Any], wire: Any, value: Any, type_code: int) -> None:
    assert _typed(field, wire) == (value, type_code)


def test_unknown_fields_are_ignored() -> None:
    doc = {"schema": None, "payload": {"op": "c", "after": {"a": 1}, "source": {**_SOURCE, "new_field": [1]},
                                       "ts_us": 1, "ts_ns": 2, "transaction": {"id": "x"}, "future": {}},
           "extra": True}
    row = _one_row(doc)
    assert row.columns == {"a": 1} and (row.schema, row.table) == ("d", "t")


def test_schemaless_inference_over_both_images() -> None:
    row = _one_row({"op": "u", "before": {"f": 1, "u": 5, "m": "x", "g": None, "s": {"scale": 1, "value": "Cg=="}},
                    "after": {"f": 1.5, "u": 2**64 - 1, "m": 3, "g": {"wkb": "AQ==", "srid": None}, "s": None}})
    assert row.columns == {"f": 1.5, "u": 2**64 - 1, "m": "3", "g": b"\x01", "s": None}
    assert row.pre_columns == {"f": 1.0, "u": 5, "m": '"x"', "g": None, "s": "1.0"}
    assert row.table_info is not None
    kinds = {c.name: (c.type_code, c.unsigned) for c in row.table_info.columns}
    assert kinds == {"f": (5, False), "u": (8, True), "m": (245, False), "g": (255, False), "s": (246, False)}
    # orjson reads integers beyond 64 bits as doubles; the fallback parser (taken for text orjson
    # rejects, here a lone surrogate) keeps them exact, as DECIMAL text
    wide = _one_row({"op": "c", "after": {"w": 2**70}})
    assert wide.columns == {"w": float(2**70)}
    exact = _one_row({"op": "c", "after": {"w": 2**70, "t": "\udcff"}})
    assert exact.columns is not None and exact.columns["w"] == str(2**70)


def test_stale_schema_is_ignored_but_a_matching_one_is_enforced() -> None:
    schema = {"type": "struct", "fields": [{"type": "struct", "optional": True, "field": "after",
                                            "fields": [{"type": "int32", "optional": False, "field": "id"}]}]}
    stale = _one_row({"schema": schema, "payload": {"op": "c", "after": {"id": "AQ==", "more": 1}}})
    assert stale.columns == {"id": b"AQ==", "more": 1}
    with pytest.raises(DecodeError) as caught:  # every column listed: the schema is authoritative
        _decode({"schema": schema, "payload": {"op": "c", "after": {"id": "AQ=="}}})
    assert caught.value.at == "$.payload.after.id"


STRICT: list[tuple[bytes, str]] = [
    (b'{"op":"c","after":{"a":1}', "$"),  # invalid JSON
    (b"[1]", "$"),
    (b'{"op":5,"after":{}}', "$.op"),
    (b'{"op":"x","after":{}}', "$.op"),
    (b'{"op":"c","after":[1]}', "$.after"),
    (b'{"op":"c","before":{"a":1}}', "$.after"),
    (b'{"op":"d","after":{"a":1}}', "$.before"),
    (b'{"op":"c","after":{"a":1},"source":[]}', "$.source"),
    (b'{"op":"c","after":{"a":1},"source":{"ts_ms":"1"}}', "$.source.ts_ms"),
    (b'{"op":"c","after":{"a":1},"source":{"ts_ms":-1}}', "$.source.ts_ms"),
    (b'{"op":"c","after":{"a":1},"source":{"db":1}}', "$.source.db"),
    (b'{"schema":{},"payload":5}', "$.payload"),
    (b'{"schema":{"fields":[{"field":"after","fields":[{"field":"d","type":"bytes",'
     b'"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"}}]}]},'
     b'"payload":{"op":"c","after":{"d":"not base64!"}}}', "$.payload.after.d"),
    (b'{"schema":{"fields":[{"field":"after","fields":[{"field":"d","type":"string",'
     b'"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"}}]}]},'
     b'"payload":{"op":"c","after":{"d":"NaN"}}}', "$.payload.after.d"),
    (b'{"op":"m","source":{}}', "$.source.commit_ts"),
]


@pytest.mark.parametrize(("value", "at"), STRICT)
def test_ambiguous_bytes_raise_decode_error_with_a_path(value: bytes, at: str) -> None:
    with pytest.raises(DecodeError) as caught:
        debezium.decode(value)
    assert caught.value.protocol == "debezium" and caught.value.at == at
