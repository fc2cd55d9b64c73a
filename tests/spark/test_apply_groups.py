"""The ``applyInArrow`` bodies of the apply engines and the history fold read their groups the same way."""

from __future__ import annotations

import pyarrow as pa

from pyticdc.spark.apply.engines import task_groups


def test_task_groups_yield_key_rows_and_task_and_skip_empty_groups() -> None:
    schema = pa.schema([("tkey", pa.string()), ("ts", pa.int64())])
    tables = [pa.Table.from_pylist([{"tkey": "s\x00a", "ts": 1}, {"tkey": "s\x00a", "ts": 2}], schema=schema),
              schema.empty_table(),
              pa.Table.from_pylist([{"tkey": "s\x00b", "ts": 3}], schema=schema)]
    tasks = {"s\x00a": "task a", "s\x00b": "task b", "s\x00c": "unused"}
    assert [(key, rows.to_pylist(), task) for key, rows, task in task_groups(iter(tables), tasks)] == [
        ("s\x00a", [{"tkey": "s\x00a", "ts": 1}, {"tkey": "s\x00a", "ts": 2}], "task a"),
        ("s\x00b", [{"tkey": "s\x00b", "ts": 3}], "task b"),
    ]
