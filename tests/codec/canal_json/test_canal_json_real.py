"""Real TiCDC Canal-JSON captures decode to what ../shared/real/README.md states (§1c, §4-§8).

Every Canal-JSON file of the corpus is found by content (a JSON object with ``isDdl``), so a file
that goes missing, or a new one without expectations here, fails ``test_every_canal_file_is_covered``.
Multi-message files are split on their terminator here: LF for ``employee_3msgs_lf.txt``, CRLF for
the mcc-checker ``DataContent*.crlf.txt`` files.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson
import pytest

from builders import row_of
from pyticdc.codec import canal_json as cj
from pyticdc.model import ActionType, DDLEvent, Event, Op, Row, RowChange

#: README "Files per protocol": 23 single-message files plus 3 multi-message batch files.
REAL_CANAL_FILES = 26


def f32(value: float) -> float:
    """The float32 nearest ``value``, widened back to a Python float."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def canal_files(root: Path) -> list[str]:
    """Relative paths of every file whose first non-empty line is a Canal-JSON object."""
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "LICENSES" in path.parts or path.suffix == ".md":
            continue
        first = next((line for line in path.read_bytes().splitlines() if line.strip()), b"")
        try:
            document = orjson.loads(first)
        except orjson.JSONDecodeError:
            continue  # Open Protocol / Craft binaries
        if isinstance(document, dict) and "isDdl" in document:
            found.append(path.relative_to(root).as_posix())
    return found


def messages(path: Path) -> list[bytes]:
    """The messages of a corpus file: one per file, or split on the batch file's terminator."""
    data = path.read_bytes()
    if path.name.endswith(".crlf.txt"):
        parts = data.split(b"\r\n")
        return [p for p in parts if p]
    if path.name.endswith("_lf.txt"):
        return data.split(b"\n")
    return [data]


def decode_file(path: Path) -> list[Event]:
    """The events of a corpus file; the fast and the reference path agree on each message."""
    decoder = cj.Decoder()
    reference = cj.Decoder()
    events: list[Event] = []
    for message in messages(path):
        decoded = decoder.decode(message)
        assert reference.decode_reference(message) == decoded
        events.extend(decoded)
    return events


# --------------------------------------------------------------------------- expectations
def row(op: str, schema: str, table: str, commit_ts: int, columns: dict[str, Any] | None = None,
        pre: dict[str, Any] | None = None, pk: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {"op": Op(op), "schema": schema, "table": table, "commit_ts": commit_ts, "columns": columns,
            "pre": pre, "pk": pk}


def ddl(schema: str, table: str, commit_ts: int, query: str, ddl_type: ActionType) -> dict[str, Any]:
    return {"op": "ddl", "schema": schema, "table": table, "commit_ts": commit_ts, "query": query,
            "ddl_type": int(ddl_type)}


TIDB_TYPES = {
    "c1": 1, "c2": 2, "c3": 3, "c4": 4, "c5": 5, "c6": b"chartype", "c7": b"varchartype", "c8": b"tinytexttype",
    "c9": b"mediumtexttype", "c10": b"texttype", "c11": b"longtexttype", "c12": b"binarytype" + b"\x00" * 10,
    "c13": b"varbinarytype", "c14": b"tinyblobtype", "c15": b"mediumblobtype", "c16": b"blobtype",
    "c17": b"longblobtype",
    # Pre-tiflow#8502 TiCDC printed FLOAT widened to float64: "1.2339999675750732" is float32(1.234).
    "c18": f32(1.234), "c19": 2.456789, "c20": "123.456", "c21": "2023-05-26", "c22": "15:15:56",
    "c23": "2023-05-26 15:15:56", "c24": "2023-05-26 15:15:56", "c25": 2020, "c26": 1, "c27": '{"a": 1, "b": 2}',
    "c28": 1, "c29": 1,
}
BOB_NY = {"FirstName": b"Bob", "HireDate": "2014-06-04", "LastName": b"Smith", "OfficeLocation": b"New York",
          "id": 101}
BOB_LA = {"FirstName": b"Bob", "HireDate": "2015-10-08", "LastName": b"Smith", "OfficeLocation": b"Los Angeles",
          "id": 101}
EMPLOYEE = [
    row("insert", "test", "employee", 1668067205238 << 18, BOB_NY, pk=("id",)),
    row("update", "test", "employee", 1668067229137 << 18, BOB_LA, BOB_NY, pk=("id",)),
    row("delete", "test", "employee", 1668067230388 << 18, None, BOB_LA, pk=("id",)),
]
RISINGWAVE = {
    "id": 1, "tinyint": 5, "smallint": 136, "mediumint": 172113, "int": 1801160058, "bigint": 3916589616287113937,
    "float": 0.0, "double": 0.15652, "decimal": "1.20364700", "date": "2023-04-20", "datetime": "2023-02-15 13:01:36",
    "time": "20:23:41", "timestamp": "2022-10-13 12:12:54", "char": b"Kathleen",
    "varchar": b"atque esse fugiat et quibusdam qui.", "binary": b"Joseph\x00\x00\x00\x00", "varbinary": b"Douglas",
    "blob": b"ducimus ut in commodi necessitatibus error magni repellat exercitationem!",
    "text": b"rerum sunt nulla quo quibusdam velit doloremque.", "enum": 1, "set": 1,
}
READING_10 = {"id": 1, "device": b"dev-a", "value": 10}
READING_11 = {"id": 1, "device": b"dev-a", "value": 11}

# README §6 table: (message, type, commit_ts, origin_ts, pk hex, pk values, other values).
SOFT = "2026-02-05 22:58:40.992217"
MCC_TABLE: list[tuple[str, str, int, int, str, dict[str, Any], dict[str, Any]]] = [
    ("1_00", "insert", 464043256649875456, 0, "038000000000000014", {"id": 20},
     {"first_name": b"t", "last_name": b"TT", "_tidb_softdelete_time": None}),
    ("1_01", "insert", 464043256649875456, 0, "038000000000000015", {"id": 21},
     {"first_name": b"u", "last_name": b"UU", "_tidb_softdelete_time": None}),
    ("1_02", "insert", 464073967049113629, 464073966942421014, "038000000000000005", {"id": 5},
     {"first_name": b"e", "last_name": b"E", "_tidb_softdelete_time": None}),
    ("1_03", "insert", 464073967049113629, 464073966942421014, "038000000000000006", {"id": 6},
     {"first_name": b"f", "last_name": b"F", "_tidb_softdelete_time": None}),
    ("1_04", "insert", 464074440664678441, 464074440387592202, "038000000000000007", {"id": 7},
     {"first_name": b"g", "last_name": b"G", "_tidb_softdelete_time": None}),
    ("1_05", "update", 464074446196178963, 0, "038000000000000007", {"id": 7},
     {"first_name": b"g", "last_name": b"G", "_tidb_softdelete_time": SOFT}),
    ("1_06", "insert", 464074440387592202, 0, "038000000000000008", {"id": 8},
     {"first_name": b"h", "last_name": b"H", "_tidb_softdelete_time": None}),
    ("1_07", "update", 464074446600667164, 464074446196178963, "038000000000000008", {"id": 8},
     {"first_name": b"h", "last_name": b"H", "_tidb_softdelete_time": SOFT}),
    ("2_00", "insert", 464085165736198159, 464085165262503958, "016100000000000000f8038000000000000064",
     {"first_name": b"a", "id": 100}, {"last_name": b"A", "_tidb_softdelete_time": None}),
    ("2_01", "insert", 464085169694572575, 0, "016200000000000000f8038000000000000065",
     {"first_name": b"b", "id": 101}, {"last_name": b"B", "_tidb_softdelete_time": None}),
]


def mcc_expectation(name: str, op: str, commit_ts: int, origin_ts: int, pk: dict[str, Any],
                    values: dict[str, Any]) -> dict[str, Any]:
    table = "message" if name.startswith("1") else "message2"
    columns = {**pk, **values, "_tidb_origin_ts": origin_ts or None}
    # TestCanalJSONDecoder compares post-images only; the update pre-images are the previous rows.
    return row(op, "test_active", table, commit_ts, columns, pk=("id",) if table == "message" else ("id", "first_name"))


MCC = {f"ticdc-mcc-checker/DataContent{m[0]}.json": [mcc_expectation(m[0], *m[1:4], m[5], m[6])] for m in MCC_TABLE}

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "tibigdata/flink-canal-json/test_tidb_type_insert.json": [
        row("insert", "test", "test_tidb_type", 441735015790804992, TIDB_TYPES, pk=("c1",))],
    "tibigdata/flink-canal-json/test_Cdc_insert_id1.json": [
        row("insert", "test", "test_Cdc", 437430669647544322, {"Name": b"zs", "id": 1}, pk=("id",))],
    "tibigdata/flink-canal-json/test_Cdc_insert_id27.json": [
        row("insert", "test", "test_Cdc", 437430295921950722, {"Name": b"zs", "id": 27}, pk=("id",))],
    "tiflow-canal-json-employee/employee_01_insert.json": EMPLOYEE[:1],
    "tiflow-canal-json-employee/employee_02_update.json": EMPLOYEE[1:2],
    "tiflow-canal-json-employee/employee_03_delete.json": EMPLOYEE[2:],
    "tiflow-canal-json-employee/employee_3msgs_lf.txt": EMPLOYEE,
    "tiflow-canal-json-devbuild-2021/gc_safepoint_ddl.json": [
        ddl("gc_safepoint", "", 429324211938131976, "CREATE DATABASE gc_safepoint", ActionType.CREATE_SCHEMA)],
    **MCC,
    "ticdc-mcc-checker/DataContent1.crlf.txt": [e for k, v in MCC.items() if "DataContent1" in k for e in v],
    "ticdc-mcc-checker/DataContent2.crlf.txt": [e for k, v in MCC.items() if "DataContent2" in k for e in v],
    "cdcfresh/testdata/insert.json": [row("insert", "demo", "readings", 1786358942713 << 18, READING_10, pk=("id",))],
    "cdcfresh/testdata/update.json": [
        row("update", "demo", "readings", 1786358942713 << 18, READING_11, READING_10, pk=("id",))],
    "cdcfresh/testdata/delete.json": [row("delete", "demo", "readings", 1786358942763 << 18, None, READING_11,
                                          pk=("id",))],
    "cdcfresh/testdata/ddl_create.json": [
        ddl("demo", "readings", 1786358942713 << 18,
            "CREATE TABLE IF NOT EXISTS `demo`.`readings` (`id` INT PRIMARY KEY,`device` VARCHAR(64),`value` INT)",
            ActionType.CREATE_TABLE)],
    "cdcfresh/testdata/ddl_query.json": [
        ddl("demo", "", 1786358942663 << 18, "CREATE DATABASE IF NOT EXISTS `demo`", ActionType.CREATE_SCHEMA)],
    "risingwave/data_type_insert.json": [row("insert", "test", "data_type", 1682057341424 << 18, RISINGWAVE,
                                             pk=("id",))],
}


def check(event: Event, expected: dict[str, Any]) -> None:
    """Assert one decoded event against an expectation built by row() or ddl()."""
    assert isinstance(event, (RowChange, DDLEvent)), event
    assert (event.schema, event.table, event.commit_ts) == (expected["schema"], expected["table"],
                                                            expected["commit_ts"])
    if expected["op"] == "ddl":
        assert isinstance(event, DDLEvent)
        assert (event.query, event.ddl_type) == (expected["query"], expected["ddl_type"])
        return
    assert isinstance(event, RowChange)
    assert event.op is expected["op"]
    if expected["columns"] is None:
        assert event.columns is None
    else:
        columns = event.columns or Row()
        assert dict(columns) == expected["columns"]
        for name, value in expected["columns"].items():
            assert type(columns[name]) is type(value), name  # bytes vs str vs int vs float
    if expected["pre"] is not None:
        assert dict(event.pre_columns or {}) == expected["pre"]
    elif expected["op"] is Op.INSERT:
        assert event.pre_columns is None
    assert event.table_info is not None
    assert event.table_info.primary_key_columns == expected["pk"]


# --------------------------------------------------------------------------- tests
def test_every_canal_file_is_covered(real_dir: Path) -> None:
    found = canal_files(real_dir)
    assert len(found) == REAL_CANAL_FILES
    assert sorted(found) == sorted(EXPECTED)
    singles = [f for f in found if len(messages(real_dir / f)) == 1]
    assert len(singles) == 23  # and 3 multi-message files


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_file_decodes_to_the_stated_events(real_dir: Path, name: str) -> None:
    events = decode_file(real_dir / name)
    expected = EXPECTED[name]
    assert len(events) == len(expected)
    for event, want in zip(events, expected):
        check(event, want)


def test_update_pre_images_of_mcc_are_the_previous_rows(real_dir: Path) -> None:
    events = decode_file(real_dir / "ticdc-mcc-checker/DataContent1.crlf.txt")
    by_name = dict(zip([m[0] for m in MCC_TABLE if m[0].startswith("1")], events))
    for update, before in (("1_05", "1_04"), ("1_07", "1_06")):
        event = by_name[update]
        assert isinstance(event, RowChange) and event.pre_columns == row_of(by_name[before]).columns


def test_batch_files_equal_their_single_message_files(real_dir: Path) -> None:
    batches = {
        "tiflow-canal-json-employee/employee_3msgs_lf.txt": sorted((real_dir / "tiflow-canal-json-employee")
                                                                   .glob("employee_0*.json")),
        "ticdc-mcc-checker/DataContent1.crlf.txt": sorted((real_dir / "ticdc-mcc-checker").glob("DataContent1_*")),
        "ticdc-mcc-checker/DataContent2.crlf.txt": sorted((real_dir / "ticdc-mcc-checker").glob("DataContent2_*")),
    }
    for batch, singles in batches.items():
        assert messages(real_dir / batch) == [s.read_bytes() for s in singles]
        assert decode_file(real_dir / batch) == [e for s in singles for e in decode_file(s)]
    # DataContent1 has no trailing CRLF, DataContent2 has one (README §6).
    assert not (real_dir / "ticdc-mcc-checker/DataContent1.crlf.txt").read_bytes().endswith(b"\r\n")
    assert (real_dir / "ticdc-mcc-checker/DataContent2.crlf.txt").read_bytes().endswith(b"\r\n")


def memcomparable(values: list[Any]) -> bytes:
    """TiDB's memcomparable key of int and bytes datums (codec.EncodeKey), for the mcc pk column."""
    out = bytearray()
    for value in values:
        if isinstance(value, int):
            out += b"\x03" + struct.pack(">Q", value ^ (1 << 63))
            continue
        out += b"\x01"
        for start in range(0, len(value) + 1, 8):
            group = value[start:start + 8]
            out += group + b"\x00" * (8 - len(group)) + bytes([0xFF - (8 - len(group))])
            if len(group) < 8:
                break
    return bytes(out)


@pytest.mark.parametrize("entry", MCC_TABLE, ids=[m[0] for m in MCC_TABLE])
def test_mcc_checker_records(real_dir: Path, entry: tuple[str, str, int, int, str, dict[str, Any],
                                                                      dict[str, Any]]) -> None:
    name, op, commit_ts, origin_ts, pk_hex, pk_values, values = entry
    [event] = decode_file(real_dir / f"ticdc-mcc-checker/DataContent{name}.json")
    assert isinstance(event, RowChange) and event.columns is not None and event.table_info is not None
    assert event.op is Op(op) and event.commit_ts == commit_ts
    # origin_ts: the _tidb_origin_ts column, 0 when null; decoded as an ordinary BIGINT column.
    assert (event.columns["_tidb_origin_ts"] or 0) == origin_ts
    by_name = {c.name: c for c in event.table_info.columns}
    assert by_name["_tidb_origin_ts"].type_code == 8 and by_name["_tidb_softdelete_time"].type_code == 7
    # The pk: the key columns, whose memcomparable encoding (in index order) is the README's hex.
    assert {k: event.columns[k] for k in pk_values} == pk_values
    assert memcomparable([event.columns[k] for k in pk_values]).hex() == pk_hex
    assert set(event.table_info.primary_key_columns) == set(pk_values)
    # column_values: every column except the pk columns and _tidb_origin_ts.
    rest = {k: v for k, v in event.columns.items() if k not in pk_values and k != "_tidb_origin_ts"}
    assert rest == values


def test_mcc_commit_ts_comes_from_tidb_not_es(real_dir: Path) -> None:
    for path in sorted((real_dir / "ticdc-mcc-checker").glob("DataContent*_*.json")):
        raw = orjson.loads(path.read_bytes())
        [event] = decode_file(path)
        assert isinstance(event, RowChange)
        assert event.commit_ts == raw["_tidb"]["commitTs"]
        # 1_00 and 1_01 carry an edited commitTs whose physical part is not es (README §6).
        assert (event.commit_ts >> 18 == raw["es"]) == (path.stem not in ("DataContent1_00", "DataContent1_01"))


def test_mcc_random_mysql_type_order_yields_one_column_order(real_dir: Path) -> None:
    paths = sorted((real_dir / "ticdc-mcc-checker").glob("DataContent1_*.json"))
    orders = {tuple(orjson.loads(p.read_bytes())["mysqlType"]) for p in paths}
    assert len(orders) > 1  # Go map order differs between messages ...
    infos = {e.table_info for p in paths for e in decode_file(p) if isinstance(e, RowChange)}
    # ... but the decoded schema follows sqlType (table order) and is the same for all of them.
    assert len(infos) == 1
    [info] = infos
    assert info is not None
    assert [c.name for c in info.columns] == ["id", "first_name", "last_name", "_tidb_origin_ts",
                                              "_tidb_softdelete_time"]


@pytest.mark.parametrize(("name", "old_first"), [
    ("tibigdata/flink-canal-json/test_tidb_type_insert.json", False),
    ("tiflow-canal-json-employee/employee_02_update.json", False),
    ("risingwave/data_type_insert.json", True),
    ("ticdc-mcc-checker/DataContent1_05.json", True),
    ("cdcfresh/testdata/update.json", True),
])
def test_both_field_orders_decode(real_dir: Path, name: str, old_first: bool) -> None:
    raw = (real_dir / name).read_bytes()
    assert (raw.index(b'"old":') < raw.index(b'"data":')) == old_first  # pre-v6.5 vs v6.5+ layout
    [event] = decode_file(real_dir / name)
    # The same message with the other field order decodes to the same event.
    document = orjson.loads(raw)
    keys = list(document)
    i, j = keys.index("old"), keys.index("data")
    keys[i], keys[j] = keys[j], keys[i]
    swapped = orjson.dumps({k: document[k] for k in keys})
    assert (swapped.index(b'"old":') < swapped.index(b'"data":')) != old_first
    assert cj.Decoder().decode(swapped) == [event]


def test_tibigdata_float_and_types(real_dir: Path) -> None:
    raw = orjson.loads((real_dir / "tibigdata/flink-canal-json/test_tidb_type_insert.json").read_bytes())
    assert raw["data"][0]["c18"] == "1.2339999675750732" and "_tidb" not in raw
    [event] = decode_file(real_dir / "tibigdata/flink-canal-json/test_tidb_type_insert.json")
    assert isinstance(event, RowChange) and event.columns is not None and event.table_info is not None
    assert event.columns["c18"] == f32(1.234) != 1.234
    # No _tidb: commit_version = es << 18, as TiBigData derives it.
    assert event.commit_ts == raw["es"] << 18 and event.commit_ts >> 18 == 1685085356868
    codes = {c.name: c.type_code for c in event.table_info.columns}
    assert (codes["c18"], codes["c19"], codes["c20"], codes["c12"], codes["c28"], codes["c29"]) == (4, 5, 246, 254,
                                                                                                     247, 248)


def test_devbuild_legacy_tidb_keys(real_dir: Path) -> None:
    raw = orjson.loads((real_dir / "tiflow-canal-json-devbuild-2021/gc_safepoint_ddl.json").read_bytes())
    assert raw["_tidb"] == {"commit-ts": 429324211938131976, "watermark-ts": 0}
    [event] = decode_file(real_dir / "tiflow-canal-json-devbuild-2021/gc_safepoint_ddl.json")
    assert isinstance(event, DDLEvent)
    assert event.commit_ts == 429324211938131976 != raw["es"] << 18
    assert event.commit_ts >> 18 == raw["es"]


def test_unknown_keys_are_ignored(real_dir: Path) -> None:
    path = real_dir / "ticdc-mcc-checker/DataContent1_02.json"
    raw = orjson.loads(path.read_bytes())
    # New-architecture TiCDC can add _tidb.rowkey (output-row-key); other keys may appear too.
    extended = {**raw, "gtid": "x", "_tidb": {**raw["_tidb"], "rowkey": "dIAAAAAAAAAA", "future": [1]}}
    assert cj.Decoder().decode(orjson.dumps(extended)) == decode_file(path)
