"""A capture split read in blocks to Arrow (``read_split_batches``) is exactly the split read line by line
(``read_split``, lenient): the same records in the same order, each malformed line the same BadLine in its place."""

from __future__ import annotations

import base64
import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyticdc.errors import CaptureError
from pyticdc.io import capture
from pyticdc.io.capture import BadLine, CaptureSplit, read_split, read_split_batches, records_to_arrow
from pyticdc.model import KafkaRecord


def _record_line(topic: str, partition: int, offset: int, value: bytes | None, timestamp: int | None) -> bytes:
    return capture.record_line(KafkaRecord(topic=topic, partition=partition, offset=offset, value=value,
                                           key=None if value is None else value[:3], timestamp_ms=timestamp or 0))


_GOOD = st.builds(_record_line, st.sampled_from(["cdc", "t-1", "é"]), st.integers(0, 3), st.integers(-1, 10**6),
                  st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.integers(-5, 2**41)))
# Lines a one-pass block must not take as they stand: each is read by the line reader, alone or beside others.
_ODD = st.sampled_from([
    b"\n", b"   \n", b"\r\n",  # blank
    b'{"topic":"a","partition":0,"offset":1,"value":"QUJD"} {"topic":"a","partition":0,"offset":2}\n',  # two
    b'{"topic":"a","partition":0,\n"offset":3,"value":"QUJD"}\n',  # one object on two lines
    b'{"topic":"a","partition":0,"offset":4,"value":"QUJD!"}\n',  # not base64
    b'{"topic":"\\u0061","partition":0,"offset":5,"value":null}\n',  # an escape
    b'{"topic":"a","partition":true,"offset":6}\n',  # a bool for an int
    b"not json\n", b"[1, 2]\n", b'{"topic":"a","partition":0,"offset":7,"value":"QUJD"}\r\n',
    b' {"topic":"a","partition":0,"offset":8}\n',
    # numbers no Kafka record holds (they used to fail the whole Arrow batch, and with it the task)
    b'{"topic":"a","partition":2147483648,"offset":9}\n', b'{"topic":"a","partition":0,"offset":9223372036854775808}\n',
    b'{"topic":"a","partition":0,"offset":10,"timestamp":9223372036854776}\n',
])


def _read(items: Any) -> list[Any]:
    # Records as rows of their Arrow columns, bad lines as themselves: what both readers must agree on.
    out: list[Any] = []
    for item in items:
        if isinstance(item, BadLine):
            out.append(item)
        else:
            out.extend(item.to_pylist())
    return out


def _by_line(split: CaptureSplit) -> list[Any]:
    out: list[Any] = []
    for item in read_split(split, lenient=True):
        out.extend([item] if isinstance(item, BadLine) else records_to_arrow([item]).to_pylist())
    return out


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(_GOOD, _GOOD, _GOOD, _ODD), max_size=40), last_newline=st.booleans(),
       cuts=st.lists(st.integers(0, 4000), max_size=4), block=st.integers(1, 400), rows=st.integers(1, 7))
def test_blocks_read_what_the_line_reader_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[bytes],
                                                 last_newline: bool, cuts: list[int], block: int, rows: int) -> None:
    monkeypatch.setattr(capture, "_BLOCK_BYTES", block)
    data = b"".join(lines)
    if not last_newline and data.endswith(b"\n"):
        data = data[:-1]
    path = tmp_path / "capture.jsonl"
    path.write_bytes(data)
    bounds = sorted({0, *(c for c in cuts if c < len(data)), len(data)})
    whole: list[Any] = []
    for start, end in itertools.pairwise(bounds):
        split = CaptureSplit(str(path), "jsonl", start, None if end == len(data) else end)
        batches = list(read_split_batches(split, rows=rows))
        assert all(isinstance(b, BadLine) or b.num_rows <= rows for b in batches)
        got = _read(batches)
        assert got == _by_line(split)
        whole.extend(got)
    assert whole == _by_line(CaptureSplit(str(path), "jsonl"))


def test_a_block_of_plain_lines_is_read_in_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [_record_line("cdc", i % 3, i, orjson.dumps({"id": i}), 1_700_000_000_000 + i) for i in range(500)]
    path = tmp_path / "capture.jsonl"
    path.write_bytes(b"".join(lines))
    by_line: list[Any] = []

    def line_by_line(*args: Any, **kwargs: Any) -> Any:
        by_line.append(args)
        return iter(())

    monkeypatch.setattr(capture, "_block_lines", line_by_line)
    batches = list(read_split_batches(CaptureSplit(str(path), "jsonl"), rows=128))
    assert not by_line  # no block went line by line
    rows = _read(batches)
    assert [r["offset"] for r in rows] == list(range(500))
    assert rows[7]["value"] == b'{"id":7}' and rows[7]["key"] == b'{"i' and rows[7]["partition"] == 1
    assert rows[7]["timestamp"].timestamp() == pytest.approx(1_700_000_000.007)
    assert [b.num_rows for b in batches] == [128, 128, 128, 116]


def test_a_bad_line_in_a_block_keeps_its_place_and_byte_position(tmp_path: Path) -> None:
    good = [_record_line("cdc", 0, i, b"v", None) for i in range(3)]
    bad = b'{"topic":"cdc","partition":0,"offset":9,"value":"' + base64.b64encode(b"v")[:-1] + b'!"}\n'
    path = tmp_path / "capture.jsonl"
    path.write_bytes(good[0] + good[1] + bad + good[2])
    items = _read(read_split_batches(CaptureSplit(str(path), "jsonl")))
    assert [r["offset"] if isinstance(r, dict) else "bad" for r in items] == [0, 1, "bad", 2]
    line = items[2]
    assert isinstance(line, BadLine)
    assert line.position == len(good[0]) + len(good[1]) and line.line == bad.rstrip(b"\n")
    assert "not valid base64" in line.reason


def _nullable(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_nullable(st.binary(max_size=6)), _nullable(st.binary(max_size=6)),
                               st.sampled_from(["cdc", "é"]), st.integers(0, 3), st.integers(-1, 2**40),
                               _nullable(st.integers(-(2**40), 2**40))), max_size=30),
       key=st.booleans(), unit=st.sampled_from(["s", "ms", "us", "ns", "int", "none"]),
       odd=st.sampled_from(["", "null topic", "null partition", "int64 partition", "string offset",
                                   "big partition", "huge ms"]))
def test_parquet_row_groups_read_as_columns_are_the_records(rows: list[Any], key: bool, unit: str,
                                                            odd: str) -> None:
    import pyarrow as pa

    count = len(rows)
    keys, values, topics, partitions, offsets, stamps = (list(c) for c in zip(*rows)) if rows else ([],) * 6
    columns: dict[str, Any] = {"value": pa.array(values, pa.binary()), "topic": pa.array(topics, pa.string()),
                               "partition": pa.array(partitions, pa.int32()), "offset": pa.array(offsets, pa.int64())}
    if key:
        columns["key"] = pa.array(keys, pa.binary())
    if unit == "int":
        columns["timestamp"] = pa.array(stamps, pa.int64())
    elif unit != "none":
        scale = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
        columns["timestamp"] = pa.array([None if s is None else s * scale // 1000 if scale >= 1000 else s // 1000
                                         for s in stamps], pa.timestamp(unit, tz="UTC"))
    if odd == "null topic" and count:
        columns["topic"] = pa.array([None, *topics[1:]], pa.string())
    elif odd == "null partition" and count:
        columns["partition"] = pa.array([*partitions[:-1], None], pa.int32())
    elif odd == "int64 partition":
        columns["partition"] = pa.array(partitions, pa.int64())
    elif odd == "string offset":
        columns["offset"] = pa.array([str(o) for o in offsets], pa.string())
    elif odd == "big partition" and count:
        columns["partition"] = pa.array([2**40, *partitions[1:]], pa.int64())
    elif odd == "huge ms" and count:
        columns["timestamp"] = pa.array([2**62, *stamps[1:]], pa.int64())
    table = pa.table(columns)

    def outcome(read: Any) -> Any:
        try:
            return read().to_pylist()
        except (CaptureError, ValueError, TypeError, ArithmeticError) as exc:  # alike on what no source writes
            return type(exc).__name__

    fast = outcome(lambda: capture.kafka_columns(table))
    reference = outcome(lambda: records_to_arrow(list(capture.arrow_to_records(table))))
    assert fast == reference
    if odd == "" and unit != "none":
        assert isinstance(fast, list)


def test_a_parquet_split_reads_its_row_groups_in_batches(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    records = [KafkaRecord(topic="cdc", partition=i % 2, offset=i, key=None, value=b"v%d" % i,
                           timestamp_ms=1_700_000_000_000 + i) for i in range(50)]
    path = tmp_path / "capture.parquet"
    pq.write_table(pa_table(records), path, row_group_size=20)
    split = CaptureSplit(str(path), "parquet", row_groups=(1, 2))
    batches = list(read_split_batches(split, rows=8))
    assert [b.num_rows for b in batches] == [8, 8, 4, 8, 2]
    assert _read(batches) == _by_line(split) and [r["offset"] for r in _read(batches)] == list(range(20, 50))


def pa_table(records: list[KafkaRecord]) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches([records_to_arrow(records)])


def test_a_parquet_row_without_its_coordinates_is_a_bad_line_in_its_place(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa_table([KafkaRecord(topic="cdc", partition=0, offset=i, key=None, value=b"v%d" % i) for i in range(6)])
    partitions = table.column("partition").to_pylist()
    partitions[4] = None
    table = table.set_column(table.schema.get_field_index("partition"), "partition", pa.array(partitions, pa.int32()))
    path = tmp_path / "capture.parquet"
    pq.write_table(table, path, row_group_size=3)
    split = CaptureSplit(str(path), "parquet", row_groups=(1,))
    items = _read(read_split_batches(split))
    assert items == _by_line(split)
    assert [r["offset"] if isinstance(r, dict) else r for r in items] == [
        3, BadLine(str(path), 4, b"v4", f"{path} (row 4): a null topic, partition or offset (a record has all)"),
        5]
    with pytest.raises(CaptureError, match="row 4"):
        list(capture.read_capture(path))
    # The engines get it as a record carrying the reader's reason; one without (a copy written before) has it
    # worded again from its file name.
    record = capture.bad_line_record(items[1], with_reason=True)
    assert (record.topic, record.partition, record.offset, record.value) == (f"file:{path}", -1, 4, b"v4")
    assert capture.bad_line_reason(record.topic, record.offset, record.key, record.value) == \
        f"capture: {items[1].reason}"
    assert capture.bad_line_reason(f"file:{path}", 4, None, b"v4") == f"capture: {items[1].reason}"
    assert capture.bad_line_record(items[1]).key is None


def test_numbers_no_kafka_record_holds_make_a_bad_line_in_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "capture.jsonl"
    lines = [b'{"topic":"a","partition":2147483648,"offset":1}', b'{"topic":"a","partition":0,"offset":2**64}',
             b'{"topic":"a","partition":0,"offset":3,"timestamp":9223372036854776}',
             b'{"topic":"a","partition":-2147483648,"offset":-9223372036854775808,"timestamp":1700000000000}']
    path.write_bytes(b"\n".join(lines).replace(b"2**64", b"18446744073709551615") + b"\n")
    items = _read(read_split_batches(CaptureSplit(str(path), "jsonl")))
    assert items == _by_line(CaptureSplit(str(path), "jsonl"))
    assert [type(i).__name__ for i in items] == ["BadLine", "BadLine", "BadLine", "dict"]
    assert [i.reason.split(": ", 1)[1] for i in items[:3]] == [
        "'partition' 2147483648 is out of range (-2147483648 to 2147483647)",
        "'offset' 18446744073709551615 is out of range (-9223372036854775808 to 9223372036854775807)",
        "timestamp must be milliseconds (at most 9223372036854775) or null"]
