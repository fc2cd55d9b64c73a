"""The replica's quarantine has the Spark quarantine sink's columns, the record's Kafka timestamp included."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from pyticdc.arrow.rows import quarantine_arrow_schema
from pyticdc.model import KafkaRecord
from pyticdc.replica import Replicator, read_table
from pyticdc.sim.workload import WorkloadConfig, simulate
from replays import FULL_OPTIONS, source_records

OPTIONS = FULL_OPTIONS["canal-json"]
STAMP = 1_763_780_000_123


def _records_with_garbage() -> tuple[list[KafkaRecord], KafkaRecord]:
    records = source_records(simulate(31, WorkloadConfig(transactions=10)), "canal-json", partitions=1)
    garbage = KafkaRecord(topic=records[-1].topic, partition=0, offset=records[-1].offset + 1, key=b"k",
                          value=b"\x00not canal", timestamp_ms=STAMP)
    return [*records, garbage], garbage


def test_quarantine_rows_carry_the_kafka_timestamp(tmp_path: Path) -> None:
    records, garbage = _records_with_garbage()
    topic = records[0].topic
    report = Replicator(tmp_path, "canal-json", OPTIONS, partitions={topic: 1}).process(records)
    assert report.quarantined == 1
    table = read_table(str(tmp_path / "_pyticdc" / "quarantine"))
    assert table.schema.names == quarantine_arrow_schema().names
    [row] = table.to_pylist()
    assert (row["topic"], row["partition"], row["offset"], row["key"], row["value"], row["protocol"]) == (
        garbage.topic, 0, garbage.offset, b"k", b"\x00not canal", "canal-json")
    assert row["kafka_timestamp"] == dt.datetime(2025, 11, 22, 2, 53, 20, 123000, tzinfo=dt.timezone.utc)


def test_a_quarantine_without_the_timestamp_column_still_takes_records(tmp_path: Path) -> None:
    # A warehouse written before the quarantine had kafka_timestamp: records are added without it.
    records, garbage = _records_with_garbage()
    topic = records[0].topic
    Replicator(tmp_path, "canal-json", OPTIONS, partitions={topic: 1}).process(records[:-1])
    path = str(tmp_path / "_pyticdc" / "quarantine")
    old = pa.schema([f for f in quarantine_arrow_schema() if f.name != "kafka_timestamp"])
    write_deltalake(path, old.empty_table(), mode="overwrite", schema_mode="overwrite")
    report = Replicator(tmp_path, "canal-json", OPTIONS, partitions={topic: 1}).process([garbage])
    assert report.quarantined == 1
    [row] = read_table(path).to_pylist()
    assert "kafka_timestamp" not in row and row["value"] == garbage.value
