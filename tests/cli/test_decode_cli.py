"""``pyticdc decode`` on raw message files, and the event JSON it prints: documented, stable, exact."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SHARED
from pyticdc.cli import main
from pyticdc.cli.decode_command import split_container, split_lines
from pyticdc.codec import make_encoder
from pyticdc.codec.base import Message
from pyticdc.codec.jsontext import float32_round
from pyticdc.io.eventjson import COLUMN_FIELDS, FIELDS, dumps, error_to_json, event_to_json, event_to_text, json_value
from pyticdc.model import (
    Bootstrap,
    ColumnInfo,
    DDLEvent,
    Event,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Watermark,
)
from pyticdc.mysql import STRING_TYPES
from pyticdc.sim.sample import SAMPLE_TABLE, sample_events
from strategies import column_kinds, row_changes

DOC = Path(__file__).resolve().parents[2] / "docs" / "event-json.md"
# Python representations that must never be a value of the output.
REPR = re.compile(r"b'.*'|b\".*\"|(Decimal|bytearray|memoryview|Row|datetime\.\w+)\(.*\)|<.* object at 0x.*>",
                  re.DOTALL)


def reprs(value: Any) -> list[str]:
    """The strings in a parsed JSON value that look like Python representations."""
    if isinstance(value, str):
        return [value] if REPR.fullmatch(value) else []
    if isinstance(value, dict):
        return [text for item in value.values() for text in reprs(item)]
    if isinstance(value, list):
        return [text for item in value for text in reprs(item)]
    return []

# (name, protocol, options, key needed): the encoders whose messages the CLI reads back.
CONFIGS = [
    ("open-protocol", "open-protocol", {}),
    ("canal-json", "canal-json", {"enable-tidb-extension": "true"}),
    ("canal-json-plain", "canal-json", {}),
    ("craft", "craft", {}),
    ("debezium", "debezium", {"enable-tidb-extension": "true"}),
    ("simple", "simple", {}),
    ("simple-avro", "simple", {"encoding-format": "avro"}),
]
# Text protocols: their messages hold no line terminators, so they go in --lines and --container files.
TEXT_CONFIGS = [c for c in CONFIGS if c[0] in ("canal-json", "canal-json-plain", "debezium", "simple")]
# Fields of the issue (and their extras) that an encoder's projection of an event determines.
COMPARED = ("kind", "op", "schema", "table", "commit_ts", "columns", "pre_columns", "ddl_query", "ddl_type",
            "ddl_type_code", "handle_key_only", "source_protocol")


def documented_fields() -> set[str]:
    """The field names docs/event-json.md lists (first cell of its tables)."""
    return set(re.findall(r"^\| `([a-z_0-9]+)` \|", DOC.read_text(encoding="utf-8"), re.MULTILINE))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``pyticdc decode ARGS`` in-process: (status, stdout, stderr)."""
    status = main(["decode", "--no-progress", *args])
    out, err = capsys.readouterr()
    return status, out, err


def option_args(options: dict[str, str]) -> list[str]:
    return [arg for name, value in options.items() for arg in ("-o", f"{name}={value}")]


def encoded(protocol: str, options: dict[str, str]) -> tuple[list[Message], list[dict[str, Any]]]:
    """The sample stream's messages, and the event JSON of what a decoder should give back (projected)."""
    encoder = make_encoder(protocol, {k: v == "true" if v in ("true", "false") else v for k, v in options.items()})
    messages = encoder.encode(sample_events())
    expected = []
    for message in messages:
        for event in message.events:
            projected = encoder.project(event)
            if projected is not None:
                expected.append(event_to_json(projected, source_protocol=protocol))
    return messages, expected


def compared(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: o[k] for k in COMPARED} for o in objects]


def parsed(out: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [orjson.loads(line) for line in out.splitlines()]
    return objects


def assert_well_formed(out: str) -> list[dict[str, Any]]:
    """Every line is one event-JSON object: the documented keys in their order, no Python repr."""
    assert out.endswith("\n") or out == ""
    objects = parsed(out)
    documented = documented_fields()
    for line, obj in zip(out.splitlines(), objects):
        assert list(obj) == list(FIELDS)
        assert set(obj) <= documented
        assert not reprs(obj) and "Decimal(" not in line, line
        assert dumps(obj).decode() == line  # compact, fixed order: re-encoding gives the same bytes
        for item in obj["table_columns"] or ():
            assert list(item) == list(COLUMN_FIELDS) and set(item) <= documented
    return objects


# --------------------------------------------------------------------------- the documentation
def test_every_field_and_nested_key_is_documented() -> None:
    documented = documented_fields()
    assert set(FIELDS) <= documented
    assert set(COLUMN_FIELDS) <= documented
    assert "base64" in documented
    text = DOC.read_text(encoding="utf-8")
    # the fields table lists them in output order
    table = re.findall(r"^\| `([a-z_0-9]+)` \| [a-z]+ \| [a-z, ]+ \|", text, re.MULTILINE)
    assert table == list(FIELDS)


def test_readme_links_the_docs() -> None:
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    for name in ("open-protocol", "canal-json", "craft", "debezium", "simple"):
        assert f"(docs/protocols/{name}.md)" in readme
    assert "(docs/event-json.md)" in readme
    assert (DOC.parent / "protocols" / "simple.md").is_file()
    for flag in ("--value FILE", "--key FILE", "--lines FILE", "--container", "--format"):
        assert flag in readme


# --------------------------------------------------------------------------- the value mapping
def _sample_value(column: ColumnInfo) -> Any:
    code = column.type_code
    if code in STRING_TYPES or code == TypeCode.GEOMETRY:
        return b"\x00\x01caf\xc3\xa9"
    if code in (TypeCode.FLOAT, TypeCode.DOUBLE):
        return 1.2339999675750732
    if code == TypeCode.NULL:
        return None
    if code in (0, 7, 10, 11, 12, 14, 225, 245, 246):
        return {7: "2023-05-26 15:15:56", 10: "2023-05-26", 14: "2023-05-26", 11: "-838:59:59.000000",
                12: "2023-05-26 15:15:56.123456", 225: "[1,2.5]", 245: '{"a": [1, "x"]}'}.get(code, "-153.120")
    return 2**64 - 1  # integers, YEAR, ENUM, SET, BIT


@pytest.mark.parametrize("code", list(TypeCode), ids=lambda c: c.name)
@pytest.mark.parametrize("charset", ["binary", "utf8mb4"])
def test_every_column_type_has_a_json_form(code: TypeCode, charset: str) -> None:
    column = ColumnInfo(name="c", type_code=int(code), charset=charset)
    value = _sample_value(column)
    table = TableInfo(schema="s", table="t", columns=(column,))
    row = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=2**64 - 1, columns=Row({"c": value}),
                    table_info=table)
    line = dumps(event_to_json(row, source_protocol="craft")).decode()
    assert not reprs(orjson.loads(line))
    back = orjson.loads(line)["columns"]["c"]
    assert back == json_value(value, column)
    if isinstance(value, bytes):
        binary = charset == "binary" or code == TypeCode.GEOMETRY
        assert back == ({"base64": base64.b64encode(value).decode()} if binary else value.decode())
    elif code == TypeCode.FLOAT:
        assert back == 1.234 and float32_round(back) == value  # float32 text, the same float32
    else:
        assert back == value and type(back) is type(value)


def test_values_outside_the_model() -> None:
    import datetime as dt
    import decimal

    assert [json_value(v) for v in (float("nan"), float("inf"), float("-inf"), True, -0.0)] == [
        "NaN", "Infinity", "-Infinity", 1, -0.0]
    assert json_value(decimal.Decimal("1E+2")) == "100"
    assert json_value(dt.datetime(2024, 1, 2, 3, 4, 5, 6)) == "2024-01-02 03:04:05.000006"
    assert json_value(bytearray(b"\xff")) == {"base64": "/w=="}
    with pytest.raises(TypeError, match="column 'c': no event-JSON form for a list value"):
        json_value([1], ColumnInfo(name="c", type_code=3))
    # integers beyond 64 bits (only a lenient decoder makes them) are still written exactly
    assert dumps({"n": 2**70, "f": 0.5}) == b'{"n":1180591620717411303424,"f":0.5}'


def _model_value(value: Any, column: ColumnInfo) -> Any:
    """Read an event-JSON value back into the model, as a consumer following docs/event-json.md would."""
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    if isinstance(value, str) and column.type_code in STRING_TYPES:
        return value.encode("utf-8")
    if isinstance(value, str) and column.type_code in (TypeCode.FLOAT, TypeCode.DOUBLE):
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, float) and column.type_code == TypeCode.FLOAT:
        return float32_round(value)  # the float32 text read back as the float32 it names
    return value


@given(row_changes())
def test_rows_of_every_type_read_back_exactly(rows: list[RowChange]) -> None:
    for row in rows:
        obj = orjson.loads(dumps(event_to_json(row, source_protocol="simple")))
        assert not reprs(obj)
        assert (obj["op"], obj["commit_ts"], obj["table_id"]) == (row.op.value, row.commit_ts, row.table_id)
        info = row.table_info
        assert info is not None
        for image, original in ((obj["columns"], row.columns), (obj["pre_columns"], row.pre_columns)):
            if original is None:
                assert image is None
                continue
            assert list(image) == list(original)
            back = {name: _model_value(value, info.column_by_name[name]) for name, value in image.items()}
            assert back == dict(original)


@given(st.data())
def test_any_model_value_of_any_column_is_total(data: st.DataObject) -> None:
    spec, values = data.draw(column_kinds())
    column = ColumnInfo(name="c", **spec)
    value = data.draw(st.one_of(values, st.none(), st.binary(max_size=8), st.floats(), st.text(max_size=8),
                                st.integers(-(2**63), 2**64 - 1)))
    converted = json_value(value, column)
    assert orjson.loads(dumps({"v": converted}))["v"] == converted


def test_events_of_every_kind_and_errors() -> None:
    record = KafkaRecord(topic="cdc", partition=2, offset=9, key=b"k", value=b"\xff", timestamp_ms=1_700_000_000_001)
    ddl, watermark = sample_events()[:2]
    assert isinstance(ddl, DDLEvent) and isinstance(watermark, Watermark)
    obj = event_to_json(ddl, source_protocol="craft", record=record, index=1)
    assert (obj["kind"], obj["ddl_type"], obj["ddl_type_code"], obj["table_id"]) == ("ddl", "create_table", 3, 101)
    assert obj["table_columns"][0] == {"name": "id", "type": "bigint(20)", "nullable": False, "primary_key": True}
    assert (obj["topic"], obj["partition"], obj["offset"], obj["event_index"], obj["kafka_timestamp"]) == (
        "cdc", 2, 9, 1, "2023-11-14T22:13:20.001Z")
    unknown = event_to_json(DDLEvent(query="x", ddl_type=999, commit_ts=1), source_protocol="craft")
    assert (unknown["ddl_type"], unknown["ddl_type_code"], unknown["schema"], unknown["table"]) == (
        None, 999, None, None)
    mark = event_to_json(watermark, source_protocol="craft")
    assert (mark["kind"], mark["commit_ts"], mark["topic"]) == ("watermark", watermark.resolved_ts, None)
    boot = event_to_json(Bootstrap(table_info=SAMPLE_TABLE), source_protocol="simple")
    assert (boot["kind"], boot["schema_version"], len(boot["table_columns"])) == (
        "bootstrap", SAMPLE_TABLE.schema_version, len(SAMPLE_TABLE.columns))
    error = error_to_json(record, "craft: bad", source_protocol="craft")
    assert (error["kind"], error["reason"], error["raw_key"], error["raw_value"]) == (
        "error", "craft: bad", {"base64": "aw=="}, {"base64": "/w=="})
    assert [k for k, v in error.items() if v is not None] == [
        "kind", "source_protocol", "topic", "partition", "offset", "event_index", "kafka_timestamp", "reason",
        "raw_key", "raw_value"]
    assert event_to_text(error) == "cdc/2@9 ERROR craft: bad"
    assert event_to_text(mark) == f"- watermark resolved_ts={watermark.resolved_ts}"
    assert reprs({"a": ["b'x'", "Decimal('1')"], "b": "b'"}) == ["b'x'", "Decimal('1')"]
    with pytest.raises(TypeError, match="not an event"):
        event_to_json(record, source_protocol="craft")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- splitting raw files
def test_split_container_and_lines() -> None:
    assert split_container(b"a\r\nb\r\nc", b"\r\n") == split_container(b"a\r\nb\r\nc\r\n", b"\r\n") == [
        b"a", b"b", b"c"]
    assert split_container(b"", b"\n") == []
    assert split_container(b"a\n\nb\n", b"\n") == [b"a", b"", b"b"]  # a storage file is strict: empty is a message
    text = (b"/*\n * Licensed ...\n */\n\n{\"a\":1}\r\n# note\n  // note\n/* one line */\n{\"b\":2}\r{\"c\":3}\n"
            b"/* open\n{\"hidden\":1}\n*/\n")
    assert split_lines(text) == ([b'{"a":1}', b'{"b":2}', b'{"c":3}'], 10)


# --------------------------------------------------------------------------- the CLI on encoder output
@pytest.mark.parametrize(("name", "protocol", "options"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_value_and_key_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, protocol: str,
                             options: dict[str, str]) -> None:
    messages, expected = encoded(protocol, options)
    got: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        value = tmp_path / f"value_{i}"
        value.write_bytes(message.value or b"")
        args = ["-p", protocol, *option_args(options), "--value", str(value)]
        if message.key is not None:
            (tmp_path / f"key_{i}").write_bytes(message.key)
            args += ["--key", str(tmp_path / f"key_{i}")]
        status, out, err = run(capsys, *args)
        objects = assert_well_formed(out)
        if protocol == "simple" and message.events[0].kind == "row":
            # a Simple row alone has no schema: an error event with its bytes, exit 1
            assert status == 1 and "1 records failed to decode" in err
            assert [o["kind"] for o in objects] == ["error"]
            assert "schema of shop.orders" in objects[0]["reason"]
            assert base64.b64decode(objects[0]["raw_value"]["base64"]) == message.value
            continue
        assert status == 0, err
        assert {(o["topic"], o["partition"], o["offset"]) for o in objects} == {(f"file:{value}", -1, 0)}
        assert [o["event_index"] for o in objects] == list(range(len(objects)))
        got.extend(objects)
    if protocol == "simple":
        expected = [e for e in expected if e["kind"] != "row"]
    assert compared(got) == compared(expected)


@pytest.mark.parametrize(("name", "protocol", "options"), TEXT_CONFIGS, ids=[c[0] for c in TEXT_CONFIGS])
@pytest.mark.parametrize("layout", ["lines", "crlf", "crlf-trailing", "lf", "lf-trailing"])
def test_lines_and_container_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, protocol: str,
                                   options: dict[str, str], layout: str) -> None:
    messages, expected = encoded(protocol, options)
    values = [m.value or b"" for m in messages]
    path = tmp_path / "messages.txt"
    if layout == "lines":
        path.write_bytes(b"/*\n * Licensed to the Apache Software Foundation (ASF)\n */\n\n# a comment\n"
                         + b"\n\n".join(values))
        args = ["--lines", str(path)]
    else:
        terminator = b"\r\n" if layout.startswith("crlf") else b"\n"
        path.write_bytes(terminator.join(values) + (terminator if layout.endswith("trailing") else b""))
        args = ["--value", str(path), "--container", layout.split("-")[0]]
    status, out, err = run(capsys, "-p", protocol, *option_args(options), *args)
    assert status == 0, err
    objects = assert_well_formed(out)
    assert compared(objects) == compared(expected)
    offsets = sorted({o["offset"] for o in objects})
    assert offsets == list(range(len(messages))) and {o["topic"] for o in objects} == {f"file:{path}"}
    if layout == "lines":
        assert f"skipped {3 + 1 + 1 + len(values) - 1} blank or comment lines of {path}" in err
    # the same input gives the same bytes
    assert run(capsys, "-p", protocol, *option_args(options), *args)[1] == out


def test_decoded_values_are_natural_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messages, _ = encoded("craft", {})
    path = tmp_path / "rows"
    path.write_bytes(messages[2].value or b"")  # the two inserts
    status, out, _ = run(capsys, "-p", "craft", "--value", str(path), "--kind", "row")
    assert status == 0
    first = parsed(out)[0]
    assert first["columns"] == {
        "id": 1, "customer": "Ada <ada@example.com>", "amount": "19.99", "quantity": 3, "rating": 4.5,
        "created_at": "2025-11-22 08:00:00.125", "status": 1, "note": "首单 & fast", "big": 18446744073709551615}
    assert first["commit_ts"] == 462364344322621440 and first["source_protocol"] == "craft"
    assert '"big":18446744073709551615' in out.splitlines()[0]  # digits, never a float
    status, text, _ = run(capsys, "-p", "craft", "--value", str(path), "--format", "text")
    assert status == 0
    assert text.splitlines()[0] == (
        f'file:{path}@0 insert shop.orders commit_ts=462364344322621440 id=1 customer="Ada <ada@example.com>" '
        'amount="19.99" quantity=3 rating=4.5 created_at="2025-11-22 08:00:00.125" status=1 note="首单 & fast" '
        "big=18446744073709551615")
    assert run(capsys, "-p", "craft", "--value", str(path), "--output-format", "text")[1] == text


def test_auto_detection_and_binary_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = ColumnInfo(name="b", type_code=252, charset="binary", flags=1)
    table = TableInfo(schema="s", table="t", table_id=5, columns=(ColumnInfo(name="id", type_code=3, flags=11), blob))
    row = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=7 << 18, table_id=5, physical_table_id=5,
                    columns=Row({"id": 1, "b": b"\x00\xffabc"}), table_info=table)
    events: list[Event] = [row]
    message = make_encoder("craft").encode(events)[0]
    path = tmp_path / "craft.bin"
    path.write_bytes(message.value or b"")
    status, out, err = run(capsys, "--value", str(path))
    assert status == 0 and "detected protocol craft" in err
    assert parsed(out)[0]["columns"] == {"id": 1, "b": {"base64": "AP9hYmM="}}


def test_errors_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(make_encoder("canal-json").encode(sample_events()[2:3])[0].value or b"")
    lines = tmp_path / "mixed.txt"
    lines.write_bytes(good.read_bytes() + b"\nnot json\n" + good.read_bytes() + b"\n")
    status, out, err = run(capsys, "-p", "canal-json", "--lines", str(lines))
    assert status == 1 and err.splitlines()[-1] == "pyticdc decode: error: 1 records failed to decode"
    objects = assert_well_formed(out)
    assert [(o["kind"], o["offset"]) for o in objects] == [("row", 0), ("error", 1), ("row", 2)]
    assert objects[1]["raw_value"] == {"base64": base64.b64encode(b"not json").decode()}
    assert objects[1]["reason"].startswith("canal-json: ")
    status, out, err = run(capsys, "-p", "canal-json", "--lines", str(lines), "--kind", "error", "--format", "text")
    assert status == 1 and out == f"file:{lines}@1 ERROR {objects[1]['reason']}\n"

    def usage(*args: str) -> str:
        status, out, err = run(capsys, *args)
        assert status == 2 and out == "" and err.count("\n") == 1, (status, out, err)
        return err.removeprefix("pyticdc decode: error: ").strip()

    assert usage("--key", str(good)) == "--key needs --value FILE"
    assert usage("--container", "lf") == "--container needs --value FILE"
    assert usage("--value", str(good), "--lines", str(lines)) == (
        "give --value FILE (one message, or a --container file) or --lines FILE, not both")
    assert usage("--lines", str(lines), "--container", "lf") == "--key and --container go with --value, not --lines"
    assert usage("--value", str(good), "--key", str(good), "--container", "crlf") == (
        "--key does not go with --container (storage-sink files carry no keys)")
    assert usage("--value", str(good), str(lines)).startswith("read either raw message files")
    assert usage("-p", "craft", "--value", str(tmp_path / "missing")) == (
        f"cannot read --value file {tmp_path / 'missing'}: No such file or directory")
    assert "unknown option" in usage("-p", "canal-json", "-o", "nope=1", "--value", str(good))


# --------------------------------------------------------------------------- the corpora
_NOT_MESSAGES = re.compile(r"(^|/)(README[^/]*\.md|LICENSES/.*|expected\.txt|column_type_test\.sql)$")


def _corpus_files(name: str) -> list[str]:
    root = SHARED / name
    if not root.is_dir():
        return ["(corpus missing)"]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not _NOT_MESSAGES.search(str(p.relative_to(root))))


def _real_args(root: Path, rel: str) -> list[str] | None:
    """decode flags for a file of the real corpus; None for a key file (read with its value file)."""
    path = root / rel
    if _is_key_file(rel):
        return None
    if "/value/" in rel and rel.startswith(("tibigdata/json/", "tiflow-java-demo/")):
        key = path.parent.parent / "key" / path.name.replace("_value_", "_key_")
        return ["-p", "open-protocol", "--value", str(path), "--key", str(key)]
    if rel.endswith("value.bin"):
        return ["-p", "open-protocol", "--value", str(path), "--key", str(path.with_name("key.bin"))]
    if rel.startswith("tibigdata/craft/"):
        return ["-p", "craft", "--value", str(path)]
    options = ["-o", "enable-tidb-extension=true"] if b'"_tidb"' in path.read_bytes() else []
    if rel.endswith(".crlf.txt"):
        return ["-p", "canal-json", *options, "--value", str(path), "--container", "crlf"]
    if rel.endswith("_lf.txt"):
        return ["-p", "canal-json", *options, "--value", str(path), "--container", "lf"]
    return ["-p", "canal-json", *options, "--value", str(path)]


def _peer_args(root: Path, rel: str, tmp_path: Path) -> Iterator[list[str]]:
    """decode flags for a file of the peers corpus (a flink-cdc wrapper is unwrapped into its messages)."""
    path = root / rel
    protocol = "canal-json" if "canal" in rel.lower() else "debezium"
    # Flink's encoders, the unwrapped row and the stripped Flink CDC fixtures name no table: say which.
    table = ["-o", "default-table=peers.t"]
    if rel.endswith((".txt", ".jsonl")):
        yield ["-p", protocol, *table, "--lines", str(path)]
    elif rel.startswith("flink-cdc/"):
        wrapper = orjson.loads(path.read_bytes())
        for name, message in wrapper.items():
            unwrapped = tmp_path / f"{path.stem}.{name}.json"
            unwrapped.write_bytes(orjson.dumps(message))
            yield ["-p", "debezium", *table, "--value", str(unwrapped)]
    else:
        yield ["-p", protocol, *table, "--value", str(path)]


def _decode_stably(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    status, out, err = run(capsys, *args)
    errors = [o["reason"] for o in parsed(out) if o["kind"] == "error"] if status == 1 else []
    assert status == 0, f"exit {status}: {errors or err.strip()}"
    assert_well_formed(out)
    assert run(capsys, *args)[1] == out


def _is_key_file(rel: str) -> bool:
    return "/key/" in rel or rel.endswith("key.bin")


# Open Protocol key files are decoded together with their value files (--key), not on their own.
@pytest.mark.parametrize("rel", [rel for rel in _corpus_files("real") if not _is_key_file(rel)])
def test_real_corpus(real_dir: Path, rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = _real_args(real_dir, rel)
    assert args is not None
    _decode_stably(capsys, args)


@pytest.mark.parametrize("rel", _corpus_files("peers"))
def test_peers_corpus(peers_dir: Path, rel: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in _peer_args(peers_dir, rel, tmp_path):
        _decode_stably(capsys, args)
