"""Simple rows held for their schema: one that does not fit it is an error row with its bytes (issue 14, finding 14)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from builders import PK, column, insert, table
from pyticdc.arrow.rows import decode_records, event_arrow_schema
from pyticdc.codec import make_encoder
from pyticdc.model import KafkaRecord, TypeCode

INFO = table(column("id", TypeCode.LONG, PK), column("a", TypeCode.LONG))


def held_stream() -> list[KafkaRecord]:
    """Three rows (the middle one's INT column carries "abc"), then the BOOTSTRAP that types them."""
    out = make_encoder("simple").encode([insert(INFO, {"id": i, "a": i}, commit_ts=1000 + i) for i in range(3)])
    rows = [m.value for m in out if m.rows]
    (bootstrap,) = [m.value for m in out if not m.rows]
    assert rows[1] is not None and b'"a":"1"' in rows[1]
    rows[1] = rows[1].replace(b'"a":"1"', b'"a":"abc"')
    return [KafkaRecord(topic="cdc", partition=0, offset=i, key=b"k%d" % i, value=v)
            for i, v in enumerate([*rows, bootstrap])]


def test_a_bad_held_simple_row_is_an_error_row_and_the_others_are_typed() -> None:
    records = held_stream()
    batches = list(decode_records(records, "simple"))
    got: list[dict[str, Any]] = pa.Table.from_batches(batches, schema=event_arrow_schema()).to_pylist()
    assert sorted((r["kind"], r["offset"]) for r in got) == [("bootstrap", 3), ("error", 1), ("row", 0), ("row", 2)]
    rows = {r["offset"]: r for r in got if r["kind"] == "row"}
    assert {o: dict(r["columns"]) for o, r in rows.items()} == {0: {"id": "0", "a": "0"}, 2: {"id": "2", "a": "2"}}
    assert all(r["table_info"] is not None for r in rows.values())
    (error,) = [r for r in got if r["kind"] == "error"]
    # The record's own bytes and key come with the error, so it can be replayed after a fix.
    assert (error["raw_key"], error["raw_value"]) == (records[1].key, records[1].value)
    assert "abc" in error["reason"] and error["reason"].startswith("simple:")
