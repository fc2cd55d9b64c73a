"""The decode tasks' files: change rows to one Parquet file per task, metadata rows yielded, the file named last."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pyticdc.spark.apply.decode import CHANGE_KINDS, DECODED_SCHEMA, decode_records, decode_to_files

OPTIONS = {"enable-tidb-extension": "true"}


def _records(seed: int) -> list[dict[str, Any]]:
    from pyticdc.sim import FaultPlan, WorkloadConfig, inject, interleave, produce, simulate, with_offsets

    history = simulate(seed, WorkloadConfig(transactions=25))
    rng = random.Random(seed)
    logs = with_offsets(inject(produce(history, "canal-json", OPTIONS, topic="t", partitions=2),
                               FaultPlan(garbage=2), rng))
    return [{"key": r.key, "value": r.value, "topic": r.topic, "partition": r.partition, "offset": r.offset}
            for r in interleave(logs, rng)]


def _batches(records: list[dict[str, Any]], size: int = 7) -> Iterator[pa.RecordBatch]:
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                        ("partition", pa.int32()), ("offset", pa.int64())])
    for start in range(0, len(records), size):
        yield pa.RecordBatch.from_pylist(records[start:start + size], schema=schema)


def _split(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    changes = pc.is_in(table["kind"], value_set=pa.array(CHANGE_KINDS))
    return table.filter(changes), table.filter(pc.invert(changes))


def test_change_rows_go_to_one_file_and_the_metadata_is_yielded_as_decode_records_makes_them(tmp_path: Path) -> None:
    records = _records(41)
    decode = functools.partial(decode_records, protocol="canal-json", options=OPTIONS, start={("t", 1): 3},
                               batch_rows=16)
    expected_changes, expected_meta = _split(pa.Table.from_batches(list(decode(_batches(records))),
                                                                   schema=DECODED_SCHEMA))
    out = list(decode_to_files(_batches(records), str(tmp_path / "d"), "canal-json", OPTIONS, {("t", 1): 3},
                               batch_rows=16))
    yielded = pa.Table.from_batches(out, schema=DECODED_SCHEMA)
    *meta, last = yielded.to_pylist()
    assert last["kind"] == "file" and last["ts"] == expected_changes.num_rows > 0
    # Before it, a row per table key of the file's rows (the write numbers their segments by them).
    tables = [row for row in meta if row["kind"] == "table"]
    assert meta[len(meta) - len(tables):] == tables
    assert [row["tkey"] for row in tables] == sorted(set(expected_changes.column("tkey").to_pylist())) != []
    meta = meta[:len(meta) - len(tables)]
    assert meta == expected_meta.to_pylist()
    assert any(row["kind"] == "error" for row in meta) and any(row["kind"] == "wm" for row in meta)
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [Path(last["text"]).name]
    written = pq.read_table(last["text"])
    assert written.schema == DECODED_SCHEMA
    assert written.to_pylist() == expected_changes.to_pylist()


def test_a_task_without_change_rows_writes_no_file(tmp_path: Path) -> None:
    records = [{"key": None, "value": b"not canal-json", "topic": "t", "partition": 0, "offset": 0}]
    out = pa.Table.from_batches(list(decode_to_files(_batches(records), str(tmp_path / "d"), "canal-json", OPTIONS,
                                                     {})), schema=DECODED_SCHEMA).to_pylist()
    assert [row["kind"] for row in out] == ["error", "part"]
    assert not (tmp_path / "d").exists()


def test_a_failed_task_closes_its_file_and_names_none(tmp_path: Path) -> None:
    records = _records(42)

    def failing() -> Iterator[pa.RecordBatch]:
        yield from _batches(records[:40])
        raise OSError("the source went away")

    out: list[pa.RecordBatch] = []
    with pytest.raises(OSError, match="went away"):
        for batch in decode_to_files(failing(), str(tmp_path / "d"), "canal-json", OPTIONS, {}, batch_rows=8):
            out.append(batch)
    assert all(kind != "file" for batch in out for kind in batch.column("kind").to_pylist())
    (written,) = (tmp_path / "d").iterdir()
    assert pq.read_table(written).num_rows > 0  # closed: a readable file that no one will read


def test_a_record_whose_rows_name_no_commit_ts_is_an_error_whole() -> None:
    import orjson

    message = {"id": 0, "database": "s", "table": "t", "pkNames": ["id"], "isDdl": False, "type": "INSERT", "es": 0,
               "ts": 1, "sql": "", "sqlType": {"id": -5}, "mysqlType": {"id": "bigint"},
               "data": [{"id": "1"}, {"id": "2"}], "old": None, "_tidb": {"commitTs": 0}}
    good = {**message, "_tidb": {"commitTs": 7}}
    records = [{"key": None, "value": orjson.dumps(value), "topic": "t", "partition": 0, "offset": offset}
               for offset, value in enumerate([good, message, good])]
    out = pa.Table.from_batches(list(decode_records(_batches(records), "canal-json", OPTIONS, {})),
                                schema=DECODED_SCHEMA).to_pylist()
    assert sorted((row["offset"], row["idx"]) for row in out if row["kind"] == "row") == [(0, 0), (0, 1), (2, 0),
                                                                                          (2, 1)]
    errors = [row for row in out if row["kind"] == "error"]
    assert [(row["offset"], row["raw_value"]) for row in errors] == [(1, records[1]["value"])]
    assert "no table or no commit ts" in errors[0]["text"]
