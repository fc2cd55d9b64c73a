"""The delta-rs engine's net change per handle (Arrow, in the applying task) is Spark's (the delta-spark engine's)."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from pyticdc.spark.apply.delta_spark import net_change_frame
from pyticdc.spark.apply.net import NET_INPUT, NET_SCHEMA, net_change

SCHEMA = pa.schema([
    ("tkey", pa.string()), ("ts", pa.int64()), ("rank", pa.int32()), ("row_id", pa.int64()), ("marks", pa.string()),
    ("hko", pa.bool_()), ("staged", pa.bool_()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("idx", pa.int32()), ("held", pa.int64()), ("op", pa.string()), ("pre", pa.string()),
    ("post", pa.string()), ("pre_h", pa.binary()), ("post_h", pa.binary()),
])


def changes(seed: int) -> pa.Table:
    """Changes of two tables over a few handles: every operation, images missing, staged rows, commit ts ties."""
    rng = random.Random(seed)
    records = rng.sample([(offset, idx) for offset in range(60) for idx in range(4)], rng.randint(1, 80))
    rows = []
    for number, (offset, idx) in enumerate(records):
        op = rng.choice(["insert", "update", "delete"])
        pre = None if op == "insert" or rng.random() < 0.1 else f"pre{number}"
        post = None if op == "delete" or rng.random() < 0.1 else f"post{number}"
        rows.append({
            "tkey": rng.choice(["s\x00a", "s\x00b"]), "ts": rng.randint(1, 10),
            "rank": {"delete": 0, "update": 1, "insert": 2}[op], "row_id": rng.choice([0, 5, None]),
            "marks": rng.choice([None, '["x"]']), "hko": rng.random() < 0.1, "staged": rng.random() < 0.3,
            "topic": "t", "partition": rng.randint(0, 2), "offset": offset, "idx": idx,
            "held": rng.choice([0, 8, 14]), "op": op, "pre": pre, "post": post,
            "pre_h": None if pre is None else bytes([rng.randint(0, 5)]),
            "post_h": None if post is None else bytes([rng.randint(0, 5)])})
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _sorted(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(row.items())) for row in rows)


def test_the_input_columns_are_what_the_fold_reads() -> None:
    assert set(NET_INPUT) == set(SCHEMA.names)
    assert net_change(changes(1)).column_names == list(NET_SCHEMA)


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(12))
def test_arrow_and_spark_fold_every_table_alike(spark: Any, seed: int) -> None:
    table = changes(seed)
    folded_by_spark = net_change_frame(spark.createDataFrame(table).repartition("tkey")).toArrow().to_pylist()
    # The engine folds one table per task: each table's rows alone.
    folded_by_arrow = [row for key in set(table["tkey"].to_pylist())
                       for row in net_change(table.filter(pa.compute.equal(table["tkey"], key))).to_pylist()]
    assert _sorted(folded_by_arrow) == _sorted(folded_by_spark)
    assert len(folded_by_arrow) < table.num_rows * 2  # handles met more than once were folded
    assert net_change(table).num_rows == len(folded_by_spark)  # the tables together, too
