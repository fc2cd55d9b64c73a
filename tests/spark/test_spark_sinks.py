"""Changelog and quarantine Delta tables via deltalake (pure: Arrow batches in, no JVM)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyticdc.arrow.rows import decode_records
from pyticdc.codec import make_encoder
from pyticdc.model import KafkaRecord
from pyticdc.replica import read_table
from pyticdc.sim.sample import sample_events
from pyticdc.spark.sinks import (
    CHANGELOG_COLUMNS,
    changelog_rows,
    changelog_schema,
    quarantine_rows,
    quarantine_schema,
    write_events,
)

deltalake = pytest.importorskip("deltalake")


def _batches(first_offset: int = 0) -> list[pa.RecordBatch]:
    messages = make_encoder("canal-json", {"enable-tidb-extension": True}).encode(sample_events())
    records = [KafkaRecord(topic="cdc", partition=0, offset=first_offset + i, key=m.key, value=m.value,
                           timestamp_ms=1_763_780_000_000) for i, m in enumerate(messages)]
    records.insert(3, KafkaRecord(topic="cdc", partition=0, offset=first_offset + 50, key=b"k", value=b"\x00bad"))
    return list(decode_records(records, "canal-json", {"enable-tidb-extension": "true"}, batch_rows=4))


def _table(path: Path) -> pa.Table:
    return read_table(str(path))


def test_pure_selections() -> None:
    events = pa.Table.from_batches(_batches())
    rows = changelog_rows(events)
    assert rows.schema.names == list(CHANGELOG_COLUMNS) and rows.num_rows == 4
    bad = quarantine_rows(events, "canal-json")
    assert bad.schema == quarantine_schema()
    assert bad.to_pylist()[0]["offset"] == 50 and bad.to_pylist()[0]["value"] == b"\x00bad"


def test_changelog_and_quarantine_tables(tmp_path: Path) -> None:
    changelog, quarantine = tmp_path / "changelog", tmp_path / "quarantine"
    assert write_events(_batches(), "canal-json", str(changelog), str(quarantine)) == (4, 1)
    table = _table(changelog)
    assert table.num_rows == 4 and set(table.schema.names) == set(changelog_schema().names)
    assert sorted(table.column("op").to_pylist()) == ["delete", "insert", "insert", "update"]
    assert {str(v) for v in table.column("commit_ts").to_pylist()} >= {"462364344322621440"}
    assert deltalake.DeltaTable(str(changelog)).metadata().partition_columns == ["schema", "table"]
    assert (changelog / "schema=shop" / "table=orders").is_dir()
    [bad] = _table(quarantine).to_pylist()
    assert (bad["topic"], bad["partition"], bad["offset"], bad["key"], bad["value"], bad["protocol"]) == (
        "cdc", 0, 50, b"k", b"\x00bad", "canal-json")
    assert bad["reason"].startswith("canal-json:")


def test_application_transactions_make_replays_idempotent(tmp_path: Path) -> None:
    changelog, quarantine = str(tmp_path / "changelog"), str(tmp_path / "quarantine")
    assert write_events(_batches(), "canal-json", changelog, quarantine, app_id="q1", version=0) == (4, 1)
    assert write_events(_batches(), "canal-json", changelog, quarantine, app_id="q1", version=0) == (0, 0)
    assert write_events(_batches(100), "canal-json", changelog, quarantine, app_id="q1", version=1) == (4, 1)
    assert _table(Path(changelog)).num_rows == 8 and _table(Path(quarantine)).num_rows == 2
    assert deltalake.DeltaTable(changelog).transaction_version("q1") == 1


def test_a_crash_between_the_two_commits_is_repaired(tmp_path: Path) -> None:
    changelog, quarantine = str(tmp_path / "changelog"), str(tmp_path / "quarantine")
    # The changelog commit of batch 0 landed, the quarantine commit did not.
    assert write_events(_batches(), "canal-json", changelog, None, app_id="q", version=0) == (4, 0)
    assert write_events(_batches(), "canal-json", changelog, quarantine, app_id="q", version=0) == (0, 1)
    assert _table(Path(changelog)).num_rows == 4 and _table(Path(quarantine)).num_rows == 1
