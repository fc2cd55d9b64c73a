"""One event schema: Spark's decoded-event rows and decode's event JSON name and type every shared field alike,
both quarantine tables have the same columns, and a Spark changelog (Parquet) produces again."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pyticdc.arrow.rows import EVENT_NAMES, EventRowBuilder, event_dicts, quarantine_arrow_schema
from pyticdc.cli import main
from pyticdc.io.eventjson import FIELDS, error_to_json, event_to_json
from pyticdc.model import DDLEvent, KafkaRecord
from pyticdc.replica.applier import _QUARANTINE_SCHEMA
from pyticdc.sim.sample import sample_events
from pyticdc.spark.sinks import quarantine_rows, quarantine_schema
from pyticdc.spark.writer import event_from_row

RECORD = KafkaRecord(topic="cdc", partition=1, offset=7, key=b"k", value=b"\x00bad", timestamp_ms=1_763_780_000_123)
#: Fields whose representation differs by design: images (canonical text in a map vs typed JSON), the timestamp
#: (an Arrow timestamp vs ISO text) and the raw bytes (binary vs {"base64"}).
REPRESENTED = {"columns", "pre_columns", "kafka_timestamp", "raw_key", "raw_value"}


def _json_comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (int(v) if k in ("commit_ts", "schema_version") and v is not None else v) for k, v in row.items()}


def test_shared_fields_have_the_same_names_and_values() -> None:
    shared = [name for name in EVENT_NAMES if name in FIELDS]
    assert {"ddl_type", "ddl_type_code", "reason", "raw_key", "raw_value"} <= set(shared)
    assert "error" not in EVENT_NAMES
    for index, event in enumerate(sample_events()):
        [row] = event_dicts(RECORD, [event])
        obj = orjson.loads(orjson.dumps(event_to_json(event, source_protocol="canal-json", record=RECORD,
                                                      index=0)))
        row = _json_comparable(row)
        for name in shared:
            if name in REPRESENTED or (name in ("table_id", "physical_table_id", "schema_version", "schema", "table")
                                       and obj[name] is None):
                continue  # event JSON writes 0 / "" as null
            assert row[name] == obj[name], (index, name)
        assert dt.datetime.fromisoformat(obj["kafka_timestamp"].replace("Z", "+00:00")) == \
            dt.datetime.fromisoformat(row["kafka_timestamp"].replace("Z", "+00:00"))


def test_ddl_type_is_the_action_name_with_its_code_and_reads_back() -> None:
    ddl = next(e for e in sample_events() if isinstance(e, DDLEvent))
    [row] = event_dicts(RECORD, [ddl])
    assert (row["ddl_type"], row["ddl_type_code"]) == ("create_table", 3)
    back = event_from_row(row)
    assert isinstance(back, DDLEvent) and back.ddl_type == 3 and back.query == ddl.query
    # A changelog written before ddl_type became a name (an int there) still reads.
    old = {k: v for k, v in row.items() if k != "ddl_type_code"} | {"ddl_type": 3}
    assert event_from_row(old) == back


def test_error_rows_and_quarantine_tables_share_reason_and_columns() -> None:
    builder = EventRowBuilder()
    builder.add_error(RECORD, "canal-json: invalid JSON at byte 0")
    batch = builder.to_batch()
    assert batch.column("reason").to_pylist() == ["canal-json: invalid JSON at byte 0"]
    obj = error_to_json(RECORD, "canal-json: invalid JSON at byte 0", source_protocol="canal-json")
    assert obj["reason"] == batch.column("reason")[0].as_py()
    # The Spark sink's quarantine and the replica's: the same columns, Kafka timestamp included.
    assert quarantine_schema() == _QUARANTINE_SCHEMA == quarantine_arrow_schema()
    [bad] = quarantine_rows(batch, "canal-json").to_pylist()
    assert (bad["reason"], bad["key"], bad["value"], bad["protocol"]) == (
        "canal-json: invalid JSON at byte 0", b"k", b"\x00bad", "canal-json")
    assert bad["kafka_timestamp"] == dt.datetime(2025, 11, 22, 2, 53, 20, 123000, tzinfo=dt.timezone.utc)


def test_a_spark_changelog_table_produces(tmp_path: Path) -> None:
    # Decoded-event rows as Spark writes them (Parquet, ddl_type a name), read by produce --changelog.
    builder = EventRowBuilder()
    for offset, event in enumerate(sample_events()):
        builder.add_event(KafkaRecord(topic="cdc", partition=0, offset=offset, value=b""), 0, event)
    table = pa.Table.from_batches([builder.to_batch()])
    pq.write_table(table, tmp_path / "changelog.parquet")
    out, back = tmp_path / "out.jsonl", tmp_path / "back.jsonl"
    assert main(["produce", "-p", "canal-json", "-o", "enable-tidb-extension=true", "--changelog",
                 str(tmp_path / "changelog.parquet"), "-O", str(out), "--no-progress"]) == 0
    assert main(["decode", "-p", "canal-json", "-o", "enable-tidb-extension=true", str(out), "-O", str(back),
                 "--kind", "row", "--kind", "ddl"]) == 0
    decoded = [orjson.loads(line) for line in back.read_bytes().splitlines()]
    expected = [event_to_json(e, source_protocol="canal-json") for e in sample_events()]
    def key(o: dict[str, Any]) -> tuple[Any, ...]:
        return (o["kind"], o["op"], o["commit_ts"], o["ddl_query"], orjson.dumps(o["columns"]))
    assert sorted(map(key, decoded)) == sorted(key(orjson.loads(orjson.dumps(o))) for o in expected
                                               if o["kind"] in ("row", "ddl"))
