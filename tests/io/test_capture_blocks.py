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
