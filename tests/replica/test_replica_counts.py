"""What a replication batch says it did: every record applied, dropped for a stated reason, or quarantined."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.errors import ConfigError
from pyticdc.model import KafkaRecord
from pyticdc.replica import Replicator, read_table
from pyticdc.sim.workload import WorkloadConfig, simulate
from replays import FULL_OPTIONS, source_records

OPTIONS = FULL_OPTIONS["canal-json"]


def _records() -> list[KafkaRecord]:
    return source_records(simulate(31, WorkloadConfig(transactions=20)), "canal-json", partitions=1)


def test_a_capture_line_that_is_not_a_record_is_quarantined_not_fatal(tmp_path: Path) -> None:
    records = _records()
    line = KafkaRecord(topic="file:cap.jsonl", partition=-1, offset=123, value=b"{not json")
    replicator = Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1})
    report = replicator.process([*records[:3], line, *records[3:]])
    assert report.rejected == 1 and report.quarantined == 1
    assert report.rows_applied > 0
    stored = read_table(str(tmp_path / "_pyticdc" / "quarantine")).to_pylist()
    assert [(s["topic"], s["partition"], s["offset"], s["value"]) for s in stored] == [
        ("file:cap.jsonl", -1, 123, b"{not json")]
    assert stored[0]["reason"].startswith("capture: cap.jsonl (byte 123): not JSON")


def test_rows_left_out_by_the_table_filter_and_replays_are_counted(tmp_path: Path) -> None:
    records = _records()
    replicator = Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1}, tables=["nosuch.*"])
    report = replicator.process(records)
    assert report.rows_applied == 0 and report.rows_filtered > 0
    assert report.filtered_tables and all(schema == "sim" for schema, _ in report.filtered_tables)
    # The same records again in a new replicator: skipped by offset, nothing counted twice.
    again = Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1}, tables=["nosuch.*"]).process(records)
    assert again.rows_filtered == 0 and again.rejected == 0
    # Re-sent rows (at or below the watermark, under new offsets) are dropped, and said to be.
    resent = [KafkaRecord(topic="src", partition=0, offset=len(records) + i, key=r.key, value=r.value)
              for i, r in enumerate(records)]
    replayed = Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1}).process(resent)
    assert replayed.rows_replayed > 0 and replayed.rows_applied == 0


def test_a_batch_report_prints_as_one_short_line(tmp_path: Path) -> None:
    report = Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1}).process(_records())
    assert report.tables
    for text in (str(report), repr(report)):
        assert "\n" not in text and len(text) < 300 and "TableInfo" not in text
    assert f"{report.rows_applied} row changes" in str(report)


def test_what_a_replicator_refuses_is_refused_before_any_record(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="time zone"):
        Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1}, time_zone="Mars/Base")
    with pytest.raises(ConfigError, match="time zone"):
        Replicator.check(tmp_path, "canal-json", OPTIONS, time_zone="Mars/Base")
    with pytest.raises(ConfigError, match="bogus"):
        Replicator.check(tmp_path, "canal-json", {**OPTIONS, "bogus": "1"})
    assert not any(tmp_path.iterdir())
    Replicator(tmp_path, "canal-json", OPTIONS, partitions={"src": 1}).process(_records())
    with pytest.raises(ConfigError, match="canal-json changefeed"):
        Replicator.check(tmp_path, "simple", {})
    Replicator.check(tmp_path, "canal-json", OPTIONS)
