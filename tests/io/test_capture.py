"""Capture files (pure): formats round-trip byte for byte, splits read every record once, CLI decode."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyticdc.cli import main
from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.errors import CaptureError
from pyticdc.io.capture import (
    BadLine,
    CaptureWriter,
    arrow_to_records,
    capture_files,
    detect_format,
    parse_line,
    plan_splits,
    read_capture,
    read_split,
    record_line,
    write_capture,
)
from pyticdc.model import KafkaRecord
from pyticdc.sim.sample import sample_events

ALL_BYTES = bytes(range(256))


def _records(count: int = 12) -> list[KafkaRecord]:
    records = []
    for i in range(count):
        records.append(KafkaRecord(
            topic=f"topic-{i % 2}", partition=i % 3, offset=i * 7, timestamp_ms=1_763_780_000_000 + i if i % 4 else 0,
            key=None if i % 5 == 0 else ALL_BYTES[i:] + b"\x00k",
            value=None if i == 3 else ALL_BYTES[::-1] * (i + 1)))
    return records


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz", "c.parquet", "c.ndjson"])
def test_write_then_read_is_identical(tmp_path: Path, name: str) -> None:
    records = _records()
    path = tmp_path / name
    assert write_capture(path, records) == len(records)
    assert list(read_capture(path)) == records
    if name.endswith(".gz"):
        assert gzip.open(path).readline().startswith(b'{"topic"')


def test_empty_capture_reads_empty(tmp_path: Path) -> None:
    for name in ("e.jsonl", "e.parquet"):
        write_capture(tmp_path / name, [])
        assert list(read_capture(tmp_path / name)) == []


def test_jsonl_line_layout_is_documented_one() -> None:
    record = KafkaRecord(topic="cdc", partition=2, offset=12, key=b"k", value=b"\x00\xff", timestamp_ms=1000)
    assert orjson.loads(record_line(record)) == {
        "topic": "cdc", "partition": 2, "offset": 12, "timestamp": 1000, "key": "aw==", "value": "AP8="}
    assert record_line(record).endswith(b"\n")


def test_detect_format(tmp_path: Path) -> None:
    write_capture(tmp_path / "a.jsonl", _records(2))
    write_capture(tmp_path / "b.parquet", _records(2))
    kcat = tmp_path / "k.json"
    kcat.write_text('{"topic":"t","partition":0,"offset":1,"tstype":"create","ts":5,"broker":1,"key":null,'
                    '"payload":"{}"}\n')
    assert detect_format(tmp_path / "a.jsonl") == "jsonl"
    assert detect_format(tmp_path / "b.parquet") == "parquet"
    assert detect_format(kcat) == "kcat"
    assert detect_format(kcat, "jsonl") == "jsonl"
    with pytest.raises(CaptureError, match="unknown capture format"):
        detect_format(kcat, "csv")
    junk = tmp_path / "junk.txt"
    junk.write_text("not json\n")
    # Lines that are not JSON decide no format: they are bad lines of a JSON Lines capture (issue 14).
    assert detect_format(junk) == "jsonl"
    with pytest.raises(CaptureError, match="not JSON"):
        list(read_capture(junk))
    raw = tmp_path / "raw.jsonl"
    raw.write_text('not json\n{"id":0,"type":"INSERT"}\n')  # a file of messages, not a capture
    with pytest.raises(CaptureError, match="--lines"):
        detect_format(raw)


def test_kcat_envelope() -> None:
    line = (b'{"topic":"cdc","partition":1,"offset":9,"tstype":"create","ts":1763780000123,"broker":0,'
            b'"headers":["h","v"],"key":"{\\"k\\":1}","payload":"{\\"id\\":\\"\xc3\xa9\\"}"}')
    record = parse_line(line, "kcat")
    assert record == KafkaRecord(topic="cdc", partition=1, offset=9, key=b'{"k":1}',
                                 value='{"id":"é"}'.encode(), timestamp_ms=1763780000123)
    # kcat -s value=json embeds the document: it is re-serialised as JSON.
    embedded = parse_line(b'{"topic":"t","partition":0,"offset":0,"ts":1,"key":null,"payload":{"a":[1,2]}}', "kcat")
    assert orjson.loads(embedded.value or b"") == {"a": [1, 2]} and embedded.key is None


def test_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = record_line(_records(1)[0])
    path.write_bytes(good + b"{oops\n" + b'{"topic":"t","partition":"x","value":null}\n' + good)
    with pytest.raises(CaptureError, match=r"bad.jsonl \(byte \d+\)"):
        list(read_capture(path))
    items = list(read_split(plan_splits(path)[0], lenient=True))
    assert [type(i).__name__ for i in items] == ["KafkaRecord", "BadLine", "BadLine", "KafkaRecord"]
    bad = items[1]
    assert isinstance(bad, BadLine) and bad.position == len(good) and bad.line == b"{oops"


@given(sizes=st.lists(st.integers(0, 300), min_size=0, max_size=40), split=st.integers(1, 2000),
       blank=st.booleans())
def test_byte_splits_read_every_record_once(tmp_path_factory: pytest.TempPathFactory, sizes: list[int],
                                             split: int, blank: bool) -> None:
    path = tmp_path_factory.mktemp("split") / "c.jsonl"
    records = [KafkaRecord(topic="t", partition=0, offset=i, value="é".encode() * n) for i, n in enumerate(sizes)]
    data = b"".join(record_line(r) + (b"\n" if blank else b"") for r in records)
    path.write_bytes(data)
    splits = plan_splits(path, max_split_bytes=split)
    assert splits[0].start == 0 and splits[-1].end is None
    for left, right in itertools.pairwise(splits):
        assert left.end == right.start
    assert [r for s in splits for r in read_split(s)] == records


def test_split_planning(tmp_path: Path) -> None:
    records = _records(200)
    write_capture(tmp_path / "big.jsonl", records)
    write_capture(tmp_path / "big.jsonl.gz", records)
    assert len(plan_splits(tmp_path / "big.jsonl", min_splits=4)) >= 4
    assert len(plan_splits(tmp_path / "big.jsonl", min_splits=4, splittable=False)) == 1
    assert len(plan_splits(tmp_path / "big.jsonl.gz", min_splits=4)) == 1  # gzip cannot seek: one split
    with CaptureWriter(tmp_path / "rg.parquet", row_group_records=16) as writer:
        writer.write_all(records)
    parquet_splits = plan_splits(tmp_path / "rg.parquet", min_splits=4)
    assert len(parquet_splits) >= 4
    assert [r for s in parquet_splits for r in read_split(s)] == records
    assert len(plan_splits(tmp_path / "rg.parquet", min_splits=4, splittable=False)) == 1


def test_capture_files_expand_directories_and_globs(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    for name in ("d/b.jsonl", "d/a.jsonl"):
        write_capture(tmp_path / name, _records(1))
    (tmp_path / "d" / "_SUCCESS").write_text("")
    (tmp_path / "d" / ".a.jsonl.crc").write_text("")
    assert [p.name for p in capture_files(tmp_path / "d")] == ["a.jsonl", "b.jsonl"]
    assert [p.name for p in capture_files(str(tmp_path / "d" / "*.jsonl"))] == ["a.jsonl", "b.jsonl"]
    assert len(capture_files(f"{tmp_path / 'd' / 'a.jsonl'},{tmp_path / 'd' / 'b.jsonl'}")) == 2
    with pytest.raises(CaptureError, match="no such capture file"):
        capture_files(tmp_path / "missing.jsonl")
    with pytest.raises(CaptureError, match="no capture file matches"):
        capture_files(str(tmp_path / "*.none"))


def test_spark_style_parquet_is_a_capture(tmp_path: Path) -> None:
    # What Spark's Kafka source writes: INT96 timestamps come back as ns; extra columns are ignored.
    table = pa.table({
        "key": pa.array([b"k", None], pa.binary()), "value": pa.array([b"v1", b"v2"], pa.binary()),
        "topic": ["cdc", "cdc"], "partition": pa.array([0, 1], pa.int32()), "offset": pa.array([5, 6], pa.int64()),
        "timestamp": pa.array([1_763_780_000_123_000_000, None], pa.timestamp("ns")),
        "timestampType": pa.array([0, 0], pa.int32()), "headers": pa.array([None, None], pa.string()),
    })
    pq.write_table(table, tmp_path / "part-0000.parquet")
    assert list(arrow_to_records(table)) == list(read_capture(tmp_path / "part-0000.parquet")) == [
        KafkaRecord(topic="cdc", partition=0, offset=5, key=b"k", value=b"v1", timestamp_ms=1_763_780_000_123),
        KafkaRecord(topic="cdc", partition=1, offset=6, key=None, value=b"v2", timestamp_ms=0),
    ]
    with pytest.raises(CaptureError, match="lacks the Kafka columns"):
        list(arrow_to_records(pa.table({"value": [b"x"]})))


# --------------------------------------------------------------------------- pyticdc decode on files
def _protocol_options(protocol: str) -> dict[str, str]:
    return {"enable-tidb-extension": "true"} if protocol in ("canal-json", "debezium") else {}


def _capture(tmp_path: Path, protocol: str, garbage: bool = True) -> Path:
    encoder = make_encoder(protocol, _protocol_options(protocol))
    records = [KafkaRecord(topic="cdc", partition=0, offset=i, key=m.key, value=m.value, timestamp_ms=1000 + i)
               for i, m in enumerate(encoder.encode(sample_events()))]
    if garbage:
        records.append(KafkaRecord(topic="cdc", partition=0, offset=len(records), value=b"\xffnot a message"))
    path = tmp_path / f"{protocol}.jsonl"
    write_capture(path, records)
    return path


def _option_args(protocol: str) -> list[str]:
    return [arg for name, value in _protocol_options(protocol).items() for arg in ("-o", f"{name}={value}")]


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_decode_command_prints_events(tmp_path: Path, protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _capture(tmp_path, protocol)
    status = main(["decode", "-p", protocol, *_option_args(protocol), str(path)])
    out, err = capsys.readouterr()
    events = [orjson.loads(line) for line in out.splitlines()]
    assert status == 1 and "1 records failed" in err
    rows = [e for e in events if e["kind"] == "row"]
    assert [r["op"] for r in rows] == ["insert", "insert", "update", "delete"]
    # the event JSON of docs/event-json.md: exact integers, text as strings, bytes as {"base64": ...}
    assert rows[0]["columns"]["big"] == 18446744073709551615 and rows[0]["columns"]["note"] == "首单 & fast"
    assert rows[0]["commit_ts"] == 462364344322621440 and rows[0]["kafka_timestamp"].endswith("Z")
    assert rows[0]["source_protocol"] == protocol and (rows[0]["topic"], rows[0]["partition"]) == ("cdc", 0)
    error = events[-1]
    assert error["kind"] == "error" and error["raw_value"] == {"base64": "/25vdCBhIG1lc3NhZ2U="} and error["reason"]
    status = main(["decode", "-p", protocol, *_option_args(protocol), str(path), "--format", "text",
                   "--kind", "row"])
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 4 and "update shop.orders" in lines[2] and 'amount="19.99"->"17.99"' in lines[2]


def test_decode_command_limits_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _capture(tmp_path, "craft", garbage=False)
    assert main(["decode", "-p", "craft", str(path), "--limit", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main(["decode", "-p", "craft"]) == 2
    assert capsys.readouterr().err == ("pyticdc decode: error: give capture files to read, or -b/--bootstrap-servers "
                                       "with -t/--topic\n")
    assert main(["decode", "-p", "craft", "-o", "no-such-option=1", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyticdc decode: error: ") and "unknown option" in err and err.count("\n") == 1


def test_decode_command_reads_kcat_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messages = make_encoder("canal-json", {"enable-tidb-extension": True}).encode(sample_events())
    lines = [orjson.dumps({"topic": "cdc", "partition": 0, "offset": i, "tstype": "create", "ts": 5, "broker": 1,
                           "key": None if m.key is None else m.key.decode(), "payload": (m.value or b"").decode()})
             for i, m in enumerate(messages)]
    path = tmp_path / "kcat.json"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert main(["decode", "-p", "canal-json", "-o", "enable-tidb-extension=true", str(path), "--kind", "row"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
