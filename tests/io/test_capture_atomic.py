"""A capture file is complete or not there: CaptureWriter writes under a temporary name and renames when done."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.io.capture import CaptureWriter, read_capture, write_capture
from pyticdc.model import KafkaRecord

RECORDS = [KafkaRecord(topic="t", partition=0, offset=i, value=b"v%d" % i) for i in range(3)]


def _failing() -> list[KafkaRecord]:
    def records() -> object:
        yield from RECORDS
        raise RuntimeError("source failed midway")
    return records()  # type: ignore[return-value]


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz", "out.parquet"])
def test_a_failure_midway_leaves_no_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with pytest.raises(RuntimeError, match="midway"):
        write_capture(path, _failing())
    assert list(tmp_path.iterdir()) == []


def test_a_failure_keeps_the_file_that_was_there(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_capture(path, RECORDS[:1])
    with pytest.raises(RuntimeError, match="midway"):
        write_capture(path, _failing())
    assert list(read_capture(path)) == RECORDS[:1]
    assert list(tmp_path.iterdir()) == [path]


def test_nothing_under_the_name_until_closed(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with CaptureWriter(path) as writer:
        writer.write_all(RECORDS)
        assert not path.exists()
    assert list(read_capture(path)) == RECORDS and list(tmp_path.iterdir()) == [path]
