"""Canal-JSON from other producers (../shared/peers) decodes to the rows their upstream tests assert.

Producers: Alibaba Canal 1.1.x (Flink's canal-data*.txt, Paimon's kafka/canal fixtures) and Flink's
own canal-json encoder (CanalJsonSerDeSchemaTest.serialized.jsonl). A line is a record only if it is
non-empty and parses as JSON (Paimon's KafkaActionITCaseBase.isRecordLine), which skips the licence
comment at the top of the Paimon files.
"""

from __future__ import annotations

import json
import random
import struct
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from builders import row_of
from pyticdc.codec import canal_json as cj
from pyticdc.errors import DecodeError
from pyticdc.model import ActionType, DDLEvent, Event, Op, Row, RowChange

#: flink/canal-data{,-filter-table,-with-init}.txt, flink/CanalJsonSerDeSchemaTest.serialized.jsonl
#: and the 11 paimon/kafka/canal/table files (peers README §1).
PEER_CANAL_FILES = 15
RECORDS = {
    "flink/canal-data.txt": 11, "flink/canal-data-filter-table.txt": 16, "flink/canal-data-with-init.txt": 11,
    "flink/CanalJsonSerDeSchemaTest.serialized.jsonl": 26,
    "paimon/kafka/canal/table/alltype/canal-data.txt": 1,
    "paimon/kafka/canal/table/event/event-delete.txt": 1, "paimon/kafka/canal/table/event/event-insert.txt": 2,
    "paimon/kafka/canal/table/event/event-row.txt": 1, "paimon/kafka/canal/table/event/event-update.txt": 1,
    "paimon/kafka/canal/table/nonpk/canal-data-1.txt": 2,
    **{f"paimon/kafka/canal/table/schemaevolution/canal-data-{i}.txt": n
       for i, n in zip(range(1, 6), (2, 5, 6, 10, 6))},
}


def f32(value: float) -> float:
    """The float32 nearest ``value``, widened back to a Python float."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def records(path: Path) -> list[bytes]:
    """The JSON records of a file: non-empty lines that parse as JSON."""
    found = []
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        found.append(line)
    return found


def is_canal(record: bytes) -> bool:
    document = orjson.loads(record)
    return isinstance(document, dict) and "data" in document and "type" in document


def canal_files(root: Path) -> list[str]:
    """Every file of the peers corpus whose records are Canal flat messages."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".txt", ".jsonl", ".json"):
            lines = records(path)
            if lines and all(is_canal(r) for r in lines):
                found.append(path.relative_to(root).as_posix())
    return found


REFERENCE_TWINS: weakref.WeakKeyDictionary[cj.Decoder, cj.Decoder] = weakref.WeakKeyDictionary()


def decode_file(path: Path, decoder: cj.Decoder | None = None) -> list[list[Event]]:
    """Events per record, decoded in order by one decoder (a consumer of the topic).

    A twin decoder reads the file on the reference path only and must agree record by record
    (one twin per decoder: tolerant reading remembers a table's column types across messages).
    """
    decoder = decoder or cj.Decoder()
    reference = REFERENCE_TWINS.setdefault(decoder, cj.Decoder(decoder.options))
    decoded = [decoder.decode(record) for record in records(path)]
    assert [reference.decode_reference(record) for record in records(path)] == decoded
    return decoded


def flat(per_record: list[list[Event]]) -> list[Event]:
    return [event for events in per_record for event in events]


def changelog(events: list[Event], weight: Any = f32) -> list[tuple[Any, ...]]:
    """Flink RowData strings as tuples: +I/-U/+U/-D with (id, name, description, weight)."""
    out: list[tuple[Any, ...]] = []

    def image(kind: str, values: Any) -> None:
        description = values["description"]
        out.append((kind, values["id"], values["name"].decode(),
                    None if description is None else description.decode(), values["weight"]))

    for event in events:
        if not isinstance(event, RowChange):
            continue
        if event.op is Op.INSERT:
            image("+I", event.columns)
        elif event.op is Op.UPDATE:
            image("-U", event.pre_columns)
            image("+U", event.columns)
        else:
            image("-D", event.pre_columns)
    return out


# CanalJsonDeserializationSchemaTest / CanalJsonSerDeSchemaTest.runTest: the changelog of
# canal-data.txt on `product` (id INT, name STRING, description STRING, weight FLOAT). The fixture
# was later edited so that 106 is inserted with a NULL description (hence -U[106, hammer, null, 1.0]).
FLINK_CHANGELOG: list[tuple[Any, ...]] = [
    ("+I", 101, "scooter", "Small 2-wheel scooter", 3.14),
    ("+I", 102, "car battery", "12V car battery", 8.1),
    ("+I", 103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", 0.8),
    ("+I", 104, "hammer", "12oz carpenter's hammer", 0.75),
    ("+I", 105, "hammer", "14oz carpenter's hammer", 0.875),
    ("+I", 106, "hammer", None, 1.0),
    ("+I", 107, "rocks", "box of assorted rocks", 5.3),
    ("+I", 108, "jacket", "water resistent black wind breaker", 0.1),
    ("+I", 109, "spare tire", "24 inch spare tire", 22.2),
    ("-U", 106, "hammer", None, 1.0),
    ("+U", 106, "hammer", "18oz carpenter hammer", 1.0),
    ("-U", 107, "rocks", "box of assorted rocks", 5.3),
    ("+U", 107, "rocks", "box of assorted rocks", 5.1),
    ("+I", 110, "jacket", "water resistent white wind breaker", 0.2),
    ("+I", 111, "scooter", "Big 2-wheel scooter ", 5.18),
    ("-U", 110, "jacket", "water resistent white wind breaker", 0.2),
    ("+U", 110, "jacket", "new water resistent white wind breaker", 0.5),
    ("-U", 111, "scooter", "Big 2-wheel scooter ", 5.18),
    ("+U", 111, "scooter", "Big 2-wheel scooter ", 5.17),
    ("-D", 111, "scooter", "Big 2-wheel scooter ", 5.17),
    ("-U", 101, "scooter", "Small 2-wheel scooter", 3.14),
    ("+U", 101, "scooter", "Small 2-wheel scooter", 5.17),
    ("-U", 102, "car battery", "12V car battery", 8.1),
    ("+U", 102, "car battery", "12V car battery", 5.17),
    ("-D", 102, "car battery", "12V car battery", 5.17),
    ("-D", 103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", 0.8),
]


def as_float32(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    # mysqlType FLOAT: the decoder yields the float32 value, as Flink's FLOAT() field holds it.
    return [(*r[:4], f32(r[4])) for r in rows]


# --------------------------------------------------------------------------- corpus coverage
def test_every_canal_file_is_covered(peers_dir: Path) -> None:
    found = canal_files(peers_dir)
    assert len(found) == PEER_CANAL_FILES
    assert sorted(found) == sorted(RECORDS)
    assert sum(RECORDS[f] for f in found if f.startswith("paimon/")) == 37  # peers README: 37 messages


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_every_record_decodes(peers_dir: Path, name: str) -> None:
    # Flink's encoder names no table: the user names it (default-table), else each record is an error.
    flink_encoder = name == "flink/CanalJsonSerDeSchemaTest.serialized.jsonl"
    per_record = decode_file(peers_dir / name, cj.Decoder(default_table="peers.t") if flink_encoder else None)
    assert len(per_record) == RECORDS[name]
    for events in per_record:
        assert events  # every record is a row message or a DDL
        assert all(isinstance(e, (RowChange, DDLEvent)) for e in events)


def test_paimon_licence_comment_is_skipped(peers_dir: Path) -> None:
    path = peers_dir / "paimon/kafka/canal/table/event/event-insert.txt"
    lines = path.read_bytes().splitlines()
    assert lines[0].startswith(b"/*") and len(lines) > len(records(path)) == 2
    with pytest.raises(DecodeError):
        cj.Decoder().decode(lines[0])  # the comment itself is not a message


# --------------------------------------------------------------------------- Flink
def test_flink_canal_data_changelog(peers_dir: Path) -> None:
    per_record = decode_file(peers_dir / "flink/canal-data.txt")
    events = flat(per_record)
    assert changelog(events) == as_float32(FLINK_CHANGELOG)
    # Alibaba Canal batches: the first record holds 9 rows, the 9th one 2 updates (old[i] ↔ data[i]).
    assert [len(e) for e in per_record] == [9, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2]
    rows = [e for e in events if isinstance(e, RowChange)]
    assert {(e.schema, e.table) for e in rows} == {("inventory", "products2")}
    raw = [orjson.loads(r) for r in records(peers_dir / "flink/canal-data.txt")]
    assert [row_of(e).commit_ts for e in per_record[1]] == [raw[1]["es"] << 18]  # no _tidb: es << 18
    info = rows[0].table_info
    assert info is not None and info.primary_key_columns == ("id",)
    # mysqlType INTEGER / VARCHAR(255) / VARCHAR(512) / FLOAT.
    assert [(c.name, c.type_code, c.flen) for c in info.columns] == [
        ("id", 3, -1), ("name", 15, 255), ("description", 15, 512), ("weight", 4, -1)]
    [ddl] = per_record[9]
    assert isinstance(ddl, DDLEvent)
    assert (ddl.schema, ddl.table, ddl.ddl_type) == ("inventory", "user02", ActionType.CREATE_TABLE)
    assert ddl.query.startswith("CREATE TABLE `xj_`.`user02`") and ddl.commit_ts == 1589373566000 << 18


def test_flink_update_pre_image_is_old_laid_over_data(peers_dir: Path) -> None:
    # {"data":[{id 110, …, weight 0.5}], "old":[{"description": …, "weight": "0.2"}]}: old holds
    # only the changed columns; the unchanged ones come from data.
    events = flat(decode_file(peers_dir / "flink/canal-data.txt"))
    update = next(e for e in events if isinstance(e, RowChange) and e.op is Op.UPDATE and e.columns
                  and e.columns["id"] == 110)
    assert update.pre_columns == {"id": 110, "name": b"jacket", "description": b"water resistent white wind breaker",
                                  "weight": f32(0.2)}
    assert update.columns == {"id": 110, "name": b"jacket", "description": b"new water resistent white wind breaker",
                              "weight": f32(0.5)}


def test_flink_filter_table_per_table_counts(peers_dir: Path) -> None:
    events = flat(decode_file(peers_dir / "flink/canal-data-filter-table.txt"))
    rows = Counter(e.table for e in events if isinstance(e, RowChange))
    ddls = Counter(e.table for e in events if isinstance(e, DDLEvent))
    assert rows == {"product": 20, "orders": 6, "project": 9}
    assert ddls == {"orders": 1, "projects": 1}
    changes = [e for e in events if isinstance(e, (RowChange, DDLEvent))]
    assert len(changes) == len(events)  # the fixture holds rows and DDL only
    assert {e.schema for e in changes} == {"mydb"}
    # testFilteringTables (database ^my.*, table ^prod.*) yields the canal-data.txt changelog.
    assert changelog([e for e in changes if e.table == "product"]) == as_float32(FLINK_CHANGELOG)
    orders = [e for e in events if isinstance(e, RowChange) and e.table == "orders"]
    assert [e.op for e in orders] == [Op.INSERT] * 4 + [Op.UPDATE, Op.DELETE]
    assert orders[4].pre_columns == {**orders[0].columns, "quantity": 1}  # type: ignore[dict-item]
    assert orders[4].columns == {"order_number": 10001, "order_date": "2016-01-16", "purchaser": 1001,
                                 "quantity": 3, "product_id": 102}


def test_flink_filter_table_contradicting_mysql_type_is_retyped(peers_dir: Path) -> None:
    # The `project` rows carry "A101" under mysqlType int(11) (the fixture's CREATE TABLE says
    # VARCHAR(255)): Alibaba Canal output, so the column is typed from its values.
    last = records(peers_dir / "flink/canal-data-filter-table.txt")[-1]
    events = cj.Decoder().decode(last)
    assert [e.columns["id"] for e in events if isinstance(e, RowChange) and e.columns] == [
        f"A10{i}".encode() for i in range(1, 10)]
    info = row_of(events[0]).table_info
    assert info is not None and [(c.name, c.type_code) for c in info.columns] == [
        ("id", 15), ("name", 15), ("description", 15), ("weight", 4)]
    # The same bytes from TiCDC (id 0, or with _tidb) stay a DecodeError naming the value.
    for tidb_shaped in (last.replace(b'"id":14,', b'"id":0,'), last[:-1] + b',"_tidb":{"commitTs":1}}'):
        with pytest.raises(DecodeError) as caught:
            cj.Decoder().decode(tidb_shaped)
        assert caught.value.at == "$.data[0].id"


def test_flink_canal_data_with_init(peers_dir: Path) -> None:
    per_record = decode_file(peers_dir / "flink/canal-data-with-init.txt")
    raw = [orjson.loads(r) for r in records(peers_dir / "flink/canal-data-with-init.txt")]
    assert raw[0]["type"] == "INIT" and "other" not in raw[0]["mysqlType"]
    init = per_record[0]
    assert len(init) == 9 and all(isinstance(e, RowChange) and e.op is Op.INSERT for e in init)
    events = flat(per_record)
    # Apart from "other", the changelog is canal-data.txt's.
    assert changelog(events) == as_float32(FLINK_CHANGELOG)
    first = init[0]
    assert isinstance(first, RowChange) and first.columns is not None
    assert first.columns["other"] == b"val1" and all("other" not in e.columns for e in init[1:])  # type: ignore
    assert first.table_info is not None and first.table_info.columns[-1].name == "other"
    [update] = per_record[1]
    assert isinstance(update, RowChange) and update.op is Op.UPDATE
    assert update.columns is not None and update.pre_columns is not None
    assert (update.columns["other"], update.pre_columns["other"]) == (b"val0", b"val2")
    assert update.pre_columns["description"] is None and update.columns["description"] == b"18oz carpenter hammer"


def test_flink_encoder_output(peers_dir: Path) -> None:
    # Flink's own canal-json encoder: no mysqlType/database/table/es/id, typed JSON values. It
    # writes -U as DELETE and +U as INSERT, so the records are the changelog above in order.
    path = peers_dir / "flink/CanalJsonSerDeSchemaTest.serialized.jsonl"
    for record in records(path):
        with pytest.raises(DecodeError, match="names no table") as caught:
            cj.Decoder().decode(record)  # a row of table "" would be a guess
        assert caught.value.at == "$.table"
    per_record = decode_file(path, cj.Decoder(default_table="inventory.products"))
    assert all(len(events) == 1 for events in per_record)
    events = flat(per_record)
    kinds = {"+I": Op.INSERT, "+U": Op.INSERT, "-U": Op.DELETE, "-D": Op.DELETE}
    assert [e.op for e in events if isinstance(e, RowChange)] == [kinds[r[0]] for r in FLINK_CHANGELOG]
    images = [(e.columns or e.pre_columns) for e in events if isinstance(e, RowChange)]
    assert [(im["id"], im["name"].decode(), None if im["description"] is None else im["description"].decode(),
             im["weight"]) for im in images if im] == [r[1:] for r in FLINK_CHANGELOG]  # JSON doubles: exact
    for event in events:
        assert isinstance(event, RowChange)
        assert (event.schema, event.table, event.commit_ts) == ("inventory", "products", 0)
        assert event.table_info is not None and event.table_info.table == "products"
        types = {c.name: c.type_code for c in event.table_info.columns}
        # Typed from the JSON values: integer → BIGINT, number → DOUBLE, string → VARCHAR (also
        # for a description that is null throughout its message).
        assert types == {"id": 8, "name": 15, "description": 15, "weight": 5}


# --------------------------------------------------------------------------- Paimon (Alibaba Canal)
PAIMON = "paimon/kafka/canal/table"


def paimon_rows(peers_dir: Path, name: str) -> list[list[Event]]:
    return decode_file(peers_dir / PAIMON / name)


def test_paimon_alltype(peers_dir: Path) -> None:
    [events] = paimon_rows(peers_dir, "alltype/canal-data.txt")
    assert len(events) == 2  # one message, two rows
    first, second = events
    assert isinstance(first, RowChange) and isinstance(second, RowChange)
    assert (first.schema, first.table, first.op) == ("paimon_sync_table", "all_types_table", Op.INSERT)
    assert first.commit_ts == 1683880554000 << 18
    values = first.columns
    assert values is not None
    expected = {
        "_id": 1, "pt": "1.1", "_tinyint1": 1, "_boolean": 1, "_bool": 0, "_tinyint_unsigned_zerofill": 3,
        "_bigint_unsigned": 20000000000, "_serial": 40000000000, "_float": 1.5, "_real_unsigned_zerofill": 3.000003,
        "_double_precision": 1.000111, "_numeric": "12345.110", "_fixed": "123456789876543212345678987654321.110",
        "_decimal": "11111", "_date": "2023-03-23", "_datetime6": "2023-03-23 14:30:05.123456",
        "_timestamp": "2023-03-23 15:00:10.123456", "_char": b"Paimon", "_varchar": b"Apache Paimon",
        "_longtext": b"Apache Paimon MySQL Long Test Data", "_bin": b"bytes", "_varbin": b"more bytes",
        "_longblob": b"LONGBLOB  bytes test data", "_json": '{"a": "b"}', "_enum": 1, "_year": 2023,
        "_time": "10:13:23", "_set": 3,
        # Spatial values: Canal writes WKB (with MySQL's 4-byte SRID prefix) as ISO-8859-1 text.
        "_point": b"\x00" * 4 + b"\x01\x01\x00\x00\x00" + struct.pack("<dd", 1.0, 1.0),
    }
    assert {k: values[k] for k in expected} == expected
    assert len(values) == 75 and sum(v is None for v in second.columns.values()) == 72  # type: ignore[union-attr]
    assert second.columns and (second.columns["_id"], second.columns["pt"], second.columns["_serial"]) == (
        2, "2.2", 50000000000)
    info = first.table_info
    assert info is not None and info.primary_key_columns == ("_id",)
    columns = {c.name: c for c in info.columns}
    assert [c.name for c in info.columns][:3] == ["_id", "pt", "_tinyint1"]

    def shape(name: str) -> tuple[Any, ...]:
        c = columns[name]
        return c.type_code, c.flen, c.decimal, c.unsigned, c.zerofill

    # Upper-case mysqlType with lengths, modifiers and MySQL aliases, parsed into type info.
    assert shape("_id") == (3, -1, -1, False, False)  # INT
    assert shape("pt") == (246, 2, 1, False, False)  # DECIMAL(2,1)
    assert shape("_tinyint1") == shape("_boolean") == shape("_bool") == (1, 1, -1, False, False)  # TINYINT(1)/BOOL
    assert shape("_tinyint_unsigned_zerofill") == (1, 2, -1, True, True)  # TINYINT(2) unsigned zerofill
    assert shape("_serial") == (8, -1, -1, True, False)  # SERIAL = BIGINT UNSIGNED
    assert shape("_real") == (5, -1, -1, False, False)  # REAL = DOUBLE
    assert shape("_double_precision_unsigned_zerofill") == (5, 10, 7, True, True)
    assert shape("_numeric") == (246, 8, 3, False, False)  # NUMERIC(8,3)
    assert shape("_fixed_unsigned") == (246, 40, 3, True, False)  # FIXED(40,3) unsigned
    assert shape("_decimal") == (246, 8, 0, False, False)  # DECIMAL(8, 0)
    assert shape("_datetime3")[:3] == (12, -1, 3) and shape("_timestamp")[:3] == (7, -1, 6)
    assert shape("_char")[:2] == (254, 10) and columns["_char"].charset != "binary"
    assert shape("_bin")[:2] == (254, 10) and columns["_bin"].charset == "binary"  # BINARY(10)
    assert columns["_enum"].type_code == 247 and columns["_enum"].elems == ("value1", "value2", "value3")
    assert columns["_set"].type_code == 248 and columns["_set"].elems == ("a", "b", "c", "d")
    assert {columns[n].type_code for n in ("_point", "_geometry", "_linestring", "_polygon", "_multipoint",
                                           "_multiline", "_multipolygon", "_geometrycollection")} == {255}


def test_paimon_event_files(peers_dir: Path) -> None:
    [[delete]] = paimon_rows(peers_dir, "event/event-delete.txt")
    assert isinstance(delete, RowChange) and delete.op is Op.DELETE and delete.columns is None
    assert delete.pre_columns == {"pt": 1, "_id": 1, "v1": b"one"}
    assert delete.table_info is not None and [c.name for c in delete.table_info.columns] == ["pt", "_id", "v1", "v2"]
    first, second = paimon_rows(peers_dir, "event/event-insert.txt")
    assert [e.columns for e in first + second if isinstance(e, RowChange)] == [
        {"pt": 1, "_id": 1, "v1": b"one"}, {"pt": 1, "_id": 2, "v1": b"two"}, {"pt": 2, "_id": 4, "v1": b"four"}]
    assert [row_of(e).table for e in first + second] == ["event"] * 3
    [[insert]] = paimon_rows(peers_dir, "event/event-row.txt")
    assert isinstance(insert, RowChange) and insert.columns == {
        "pt": 1, "_id": 9, "v1": b"nine", "v2": 90000000000, "v3": "99999.999", "v4": b"nine.bin", "v5": f32(9.9)}
    [[update]] = paimon_rows(peers_dir, "event/event-update.txt")
    assert isinstance(update, RowChange) and update.op is Op.UPDATE
    assert update.columns == {"pt": 1, "_id": 2, "v1": b"second", "v2": None}
    assert update.pre_columns == {"pt": 1, "_id": 2, "v1": b"two", "v2": None}
    assert update.commit_ts == 1683008290000 << 18


def test_paimon_table_without_primary_key(peers_dir: Path) -> None:
    events = flat(paimon_rows(peers_dir, "nonpk/canal-data-1.txt"))
    assert [e.columns for e in events if isinstance(e, RowChange)] == [{"v0": b"five", "v1": 50}] * 2
    infos = [row_of(e).table_info for e in events]
    assert all(info is not None and info.primary_key_columns == () for info in infos)
    assert [row_of(e).commit_ts >> 18 for e in events] == [1684770072000, 1684770073000]


def schema_of(event: RowChange) -> list[tuple[str, int]]:
    assert event.table_info is not None
    return [(c.name, c.type_code) for c in event.table_info.columns]


def test_paimon_schema_evolution(peers_dir: Path) -> None:
    decoder = cj.Decoder()  # one consumer reads the five files in order
    files = [flat(decode_file(peers_dir / PAIMON / f"schemaevolution/canal-data-{i}.txt", decoder))
             for i in range(1, 6)]
    ddls = [e for events in files for e in events if isinstance(e, DDLEvent)]
    # ALTER behind Aliyun DMS comments: the action comes from the SQL after the comment.
    assert [(e.table, e.ddl_type, e.query.split("*/ ")[1]) for e in ddls] == [
        ("schema_evolution_1", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_1 ADD COLUMN v2 INT"),
        ("schema_evolution_2", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_2 ADD COLUMN v2 INT"),
        ("schema_evolution_1", ActionType.MODIFY_COLUMN, "ALTER TABLE schema_evolution_1 MODIFY COLUMN v2 BIGINT"),
        ("schema_evolution_2", ActionType.MODIFY_COLUMN, "ALTER TABLE schema_evolution_2 MODIFY COLUMN v2 BIGINT"),
        ("schema_evolution_1", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_1 ADD COLUMN v3 NUMERIC(8, 3)"),
        ("schema_evolution_1", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_1 ADD COLUMN v4 VARBINARY(10)"),
        ("schema_evolution_1", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_1 ADD COLUMN v5 FLOAT"),
        ("schema_evolution_1", ActionType.MODIFY_COLUMN,
         "ALTER TABLE schema_evolution_1 MODIFY COLUMN v1 VARCHAR(20)"),
        ("schema_evolution_2", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_2 ADD COLUMN v3 NUMERIC(8, 3)"),
        ("schema_evolution_2", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_2 ADD COLUMN v4 VARBINARY(10)"),
        ("schema_evolution_2", ActionType.ADD_COLUMN, "ALTER TABLE schema_evolution_2 ADD COLUMN v5 FLOAT"),
        ("schema_evolution_2", ActionType.MODIFY_COLUMN,
         "ALTER TABLE schema_evolution_2 MODIFY COLUMN v1 VARCHAR(20)"),
        ("schema_evolution_1", ActionType.MODIFY_COLUMN,
         "ALTER TABLE schema_evolution_1 MODIFY COLUMN v4 VARBINARY(20)"),
        ("schema_evolution_1", ActionType.MODIFY_COLUMN, "ALTER TABLE schema_evolution_1 MODIFY COLUMN v5 DOUBLE"),
        ("schema_evolution_2", ActionType.MODIFY_COLUMN,
         "ALTER TABLE schema_evolution_2 MODIFY COLUMN v4 VARBINARY(20)"),
        ("schema_evolution_2", ActionType.MODIFY_COLUMN, "ALTER TABLE schema_evolution_2 MODIFY COLUMN v5 DOUBLE"),
    ]
    assert all(e.schema == "paimon_sync_table" for e in ddls)
    rows = [(i, e) for i, events in enumerate(files, 1) for e in events if isinstance(e, RowChange)]
    summary = [(i, e.table, e.op.value, (e.columns or e.pre_columns or Row())["_id"]) for i, e in rows]
    assert summary == [
        (1, "schema_evolution_1", "insert", 1), (1, "schema_evolution_2", "insert", 2),
        (1, "schema_evolution_2", "insert", 4),
        (2, "schema_evolution_1", "insert", 3), (2, "schema_evolution_1", "insert", 5),
        (2, "schema_evolution_2", "insert", 6), (2, "schema_evolution_2", "update", 2),
        (3, "schema_evolution_1", "insert", 7), (3, "schema_evolution_1", "delete", 5),
        (3, "schema_evolution_1", "update", 3), (3, "schema_evolution_2", "insert", 8),
        (4, "schema_evolution_1", "insert", 9), (4, "schema_evolution_2", "update", 8),
        (5, "schema_evolution_1", "update", 9), (5, "schema_evolution_2", "update", 4),
    ]
    by_step = {(i, e.table, (e.columns or e.pre_columns or Row())["_id"], e.op.value): e for i, e in rows}
    # The schema grows with the ALTERs: v2 INT, then BIGINT; v3/v4/v5 added; v4, v5 modified.
    assert schema_of(by_step[1, "schema_evolution_1", 1, "insert"]) == [("pt", 3), ("_id", 3), ("v1", 15)]
    assert schema_of(by_step[2, "schema_evolution_1", 3, "insert"]) == [("pt", 3), ("_id", 3), ("v1", 15), ("v2", 3)]
    assert schema_of(by_step[3, "schema_evolution_1", 7, "insert"])[-1] == ("v2", 8)
    assert schema_of(by_step[4, "schema_evolution_1", 9, "insert"]) == [
        ("pt", 3), ("_id", 3), ("v1", 15), ("v2", 8), ("v3", 246), ("v4", 15), ("v5", 4)]
    assert schema_of(by_step[5, "schema_evolution_1", 9, "update"])[-1] == ("v5", 5)
    # Values, including the pre-images laid together from data and the partial old.
    update_3 = by_step[3, "schema_evolution_1", 3, "update"]
    assert update_3.columns == {"pt": 2, "_id": 3, "v1": b"three", "v2": 30000000000}
    assert update_3.pre_columns == {"pt": 2, "_id": 3, "v1": b"three", "v2": 30}
    update_8 = by_step[4, "schema_evolution_2", 8, "update"]
    assert update_8.columns == {"pt": 2, "_id": 8, "v1": b"very long string", "v2": 80000000000, "v3": None,
                                "v4": None, "v5": None}
    assert update_8.pre_columns == {**update_8.columns, "v1": b"eight"}
    update_9 = by_step[5, "schema_evolution_1", 9, "update"]
    assert update_9.columns == {"pt": 1, "_id": 9, "v1": b"nine", "v2": 90000000000, "v3": "99999.999",
                                "v4": b"nine.bin.long", "v5": 9.00000000009}
    # Before the ALTER v5 was FLOAT 9.9; Canal prints it widened, now read as DOUBLE.
    assert update_9.pre_columns == {**update_9.columns, "v4": b"nine.bin",
                                    "v5": 9.899999618530273}
    update_4 = by_step[5, "schema_evolution_2", 4, "update"]
    assert update_4.pre_columns == {**update_4.columns, "v4": None, "v5": None}  # type: ignore[dict-item]
    assert update_4.columns is not None and update_4.columns["v5"] == 4.00000000004
    delete_5 = by_step[3, "schema_evolution_1", 5, "delete"]
    assert delete_5.pre_columns == {"pt": 1, "_id": 5, "v1": b"five", "v2": 50}
    assert [e.commit_ts for e in files[2] if isinstance(e, RowChange)][:2] == [1683168079000 << 18] * 2


# --------------------------------------------------------------------------- robustness
def test_mutated_peer_records_raise_only_decode_error(peers_dir: Path) -> None:
    # The re-typing path (tolerances 13-15) must fail as cleanly as the strict one.
    rng = random.Random(10)
    outcomes: Counter[str] = Counter()
    for name in sorted(RECORDS):
        for record in records(peers_dir / name):
            document = orjson.loads(record)
            variants = [record[:rng.randrange(len(record))] for _ in range(3)]
            for _ in range(6):
                mutated = bytearray(record)
                mutated[rng.randrange(len(mutated))] = rng.choice(b'"{}[],:0a-. \\')
                variants.append(bytes(mutated))
            # Type confusion inside data: a value replaced by another JSON kind.
            for replacement in (True, 1.5, -1, 2**70, [1], {"a": None}, "x"):
                for image in document.get("data") or ():
                    if image:
                        key = rng.choice(sorted(image))
                        variants.append(json.dumps({**document, "data": [{**image, key: replacement}]}).encode())
                        break
            for variant in variants:
                try:
                    cj.Decoder().decode(variant)
                    outcomes["decoded"] += 1
                except DecodeError as exc:
                    assert exc.protocol == "canal-json" and exc.reason
                    outcomes["error"] += 1
    assert outcomes["decoded"] and outcomes["error"]  # both outcomes were exercised


# --------------------------------------------------------------------------- tolerances not in the corpora
def test_enum_set_text_booleans_and_unknown_keys(peers_dir: Path) -> None:
    # Built from a real Alibaba Canal record (Paimon event-insert.txt, batch id 92).
    base = orjson.loads(records(peers_dir / PAIMON / "event/event-insert.txt")[0])
    document = {
        **base, "gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23",  # unknown keys are ignored
        "mysqlType": {**base["mysqlType"], "e": "ENUM('x','y')", "s": "SET('a','b','c')", "f": "BOOLEAN"},
        "data": [{**base["data"][0], "e": "y", "s": "a,c", "f": True}],
    }
    [event] = cj.Decoder().decode(orjson.dumps(document))
    assert isinstance(event, RowChange) and event.table_info is not None
    assert event.columns == {"pt": 1, "_id": 1, "v1": b"one", "e": 2, "s": 5, "f": 1}
    types = {c.name: (c.type_code, c.elems) for c in event.table_info.columns}
    assert types["e"] == (247, ("x", "y")) and types["s"] == (248, ("a", "b", "c")) and types["f"] == (1, None)
    # The same bytes as TiCDC's (id 0): TiCDC writes the index, so the text is an error.
    with pytest.raises(DecodeError) as caught:
        cj.Decoder().decode(orjson.dumps({**document, "id": 0}))
    assert caught.value.at == "$.data[0].e"


@pytest.mark.parametrize(("canal_type", "sql", "action"), [
    ("ERASE", "DROP TABLE `t`", ActionType.DROP_TABLE),
    ("ERASE", "/* DMS */ DROP DATABASE d", ActionType.DROP_SCHEMA),
    ("CREATE", "-- note\nCREATE DATABASE d", ActionType.CREATE_SCHEMA),
    ("CINDEX", "CREATE INDEX i ON t (a)", ActionType.ADD_INDEX),
    ("DINDEX", "DROP INDEX i ON t", ActionType.DROP_INDEX),
    ("RENAME", "RENAME TABLE a TO b", ActionType.RENAME_TABLE),
    ("TRUNCATE", "TRUNCATE TABLE t", ActionType.TRUNCATE_TABLE),
    ("ALTER", "/* x */ ALTER TABLE t DROP COLUMN c", ActionType.DROP_COLUMN),
    ("QUERY", "/* Query from DMS-WEBSQL-0 by user 1 */ CREATE DATABASE d", ActionType.CREATE_SCHEMA),
    ("QUERY", "GRANT ALL ON *.* TO u", ActionType.NONE),
])
def test_canal_ddl_types(peers_dir: Path, canal_type: str, sql: str, action: ActionType) -> None:
    # A real Alibaba Canal DDL record (schemaevolution/canal-data-2.txt) with its type and SQL replaced.
    base = orjson.loads(records(peers_dir / PAIMON / "schemaevolution/canal-data-2.txt")[0])
    [event] = cj.Decoder().decode(orjson.dumps({**base, "type": canal_type, "sql": sql}))
    assert isinstance(event, DDLEvent)
    assert (event.ddl_type, event.query, event.commit_ts) == (action, sql, base["es"] << 18)
