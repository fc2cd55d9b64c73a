"""``produce --changelog`` reads what ``decode`` writes: every protocol, DDL, binary values, schema-less Canal rows."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import orjson
import pytest

from pyticdc.cli import main
from pyticdc.codec import PROTOCOLS

FULL = {"canal-json": ["-o", "enable-tidb-extension=true"], "debezium": ["-o", "enable-tidb-extension=true"]}


def _objects(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _changes(path: Path) -> tuple[collections.Counter[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """Row changes (as a multiset) and DDL (a set: broadcast to every partition) of an event-JSON file."""
    rows: collections.Counter[tuple[Any, ...]] = collections.Counter()
    ddls: set[tuple[Any, ...]] = set()
    for obj in _objects(path):
        if obj.get("kind") == "row":
            rows[(obj["op"], obj["schema"], obj["table"], obj["commit_ts"],
                  orjson.dumps(obj["columns"], option=orjson.OPT_SORT_KEYS),
                  orjson.dumps(obj["pre_columns"], option=orjson.OPT_SORT_KEYS))] += 1
        elif obj.get("kind") == "ddl":
            ddls.add((obj["ddl_query"], obj["commit_ts"], obj["ddl_type"], obj["ddl_type_code"]))
    return rows, ddls


def _decode(protocol: str, source: Path, target: Path, *more: str) -> int:
    return main(["decode", "-p", protocol, *FULL.get(protocol, []), *more, str(source), "-O", str(target)])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_decode_output_produces_the_same_changes_again(protocol: str, tmp_path: Path) -> None:
    # DDL (its ddl_type is a name in event JSON), binary values ({"base64": ...}), every column type.
    capture, first, again, second = (tmp_path / n for n in ("cap.jsonl", "d1.jsonl", "again.jsonl", "d2.jsonl"))
    assert main(["produce", "-p", protocol, *FULL.get(protocol, []), "--seed", "5", "--transactions", "40",
                 "--start-ms", "1763780000000", "-O", str(capture), "--no-progress"]) == 0
    assert _decode(protocol, capture, first) == 0
    assert main(["produce", "-p", protocol, *FULL.get(protocol, []), "--changelog", str(first), "-O", str(again),
                 "--no-progress"]) == 0
    assert _decode(protocol, again, second) == 0
    rows, ddls = _changes(first)
    assert sum(rows.values()) > 50 and any(t[2] == "create_table" for t in ddls)
    assert any(b"base64" in key[4] for key in rows)
    assert _changes(second) == (rows, ddls)


def test_canal_json_rows_without_schema_convert_to_every_protocol(tmp_path: Path, real_dir: Path) -> None:
    # The real Canal-JSON employee capture: decoded rows carry no table_columns, the types are read from the values.
    lines = real_dir / "tiflow-canal-json-employee" / "employee_3msgs_lf.txt"
    if not lines.exists():
        pytest.skip(f"{lines} not present")
    decoded = tmp_path / "emp.jsonl"
    assert main(["decode", "-p", "canal-json", "--lines", str(lines), "-O", str(decoded)]) == 0
    expected = [(o["op"], o["columns"], o["pre_columns"]) for o in _objects(decoded)]
    assert [e[0] for e in expected] == ["insert", "update", "delete"]
    for protocol in PROTOCOLS:
        out, back = tmp_path / f"{protocol}.jsonl", tmp_path / f"{protocol}.d.jsonl"
        assert main(["produce", "-p", protocol, *FULL.get(protocol, []), "--changelog", str(decoded), "-O", str(out),
                     "--no-progress"]) == 0, protocol
        assert _decode(protocol, out, back, "--kind", "row") == 0
        assert [(o["op"], o["columns"], o["pre_columns"]) for o in _objects(back)] == expected, protocol


def test_error_objects_and_quarantine_rows_are_left_out_and_said(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    capture, decoded, out = tmp_path / "cap.jsonl", tmp_path / "d.jsonl", tmp_path / "out.jsonl"
    assert main(["produce", "-p", "simple", "--seed", "2", "--transactions", "5", "--start-ms", "1763780000000",
                 "-O", str(capture), "--no-progress"]) == 0
    with capture.open("ab") as handle:
        handle.write(b'{"topic":"ticdc","partition":0,"offset":999,"value":"bm90IGEgbWVzc2FnZQ=="}\n')
    assert _decode("simple", capture, decoded) == 1  # the garbage record is an error object
    quarantine_row = {"topic": "t", "partition": 0, "offset": 1, "kafka_timestamp": None, "protocol": "simple",
                      "reason": "simple: bad", "key": None, "value": None}
    with decoded.open("ab") as handle:
        handle.write(orjson.dumps(quarantine_row) + b"\n")
    capsys.readouterr()
    assert main(["produce", "-p", "simple", "--changelog", str(decoded), "-O", str(out), "--no-progress"]) == 0
    assert "(2 error rows carry no change: left out)" in capsys.readouterr().err
    back = tmp_path / "back.jsonl"
    assert _decode("simple", out, back) == 0
    assert _changes(back)[0] == _changes(decoded)[0]


def test_a_bad_changelog_is_one_line_and_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changelog, out = tmp_path / "bad.jsonl", tmp_path / "out.jsonl"
    good = {"kind": "row", "source_protocol": "canal-json", "op": "insert", "schema": "s", "table": "t",
            "commit_ts": 5 << 18, "columns": {"id": 1}, "pre_columns": None}
    bad = {**good, "columns": {"id": {"not": "a value"}}}
    changelog.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps(bad) + b"\n")
    assert main(["produce", "-p", "canal-json", "--changelog", str(changelog), "-O", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["pyticdc produce: error: changelog row 1: column 'id': an object value must be "
                   "{\"base64\": ...}, got {'not': 'a value'}"]
    assert list(tmp_path.iterdir()) == [changelog]
