"""A pyticdc task in a reused Spark worker freezes the worker's long-lived objects, and thaws them now and then."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from pyticdc.spark import worker
from pyticdc.spark.worker import THAW_EVERY, prepare_task


@pytest.fixture
def thawed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(worker, "_tasks", 0)
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("thawed")
def test_outside_a_reused_worker_nothing_is_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)
    prepare_task()
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("thawed")
def test_a_reused_worker_freezes_before_each_task_and_thaws_every_so_often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
    counts = []
    for _ in range(2 * THAW_EVERY):
        prepare_task()
        counts.append(gc.get_freeze_count())
    thawed_at = [task for task, count in enumerate(counts, 1) if count == 0]
    assert thawed_at == [THAW_EVERY, 2 * THAW_EVERY]
    assert all(count > 1000 for task, count in enumerate(counts, 1) if task not in thawed_at)


@pytest.mark.spark
def test_a_spark_worker_collects_only_what_the_task_made(spark: Any) -> None:
    def objects(batches: Iterator[Any]) -> Iterator[Any]:  # pickled by value: the worker cannot import tests
        import gc as collector

        import pyarrow as pa

        from pyticdc.spark import worker as task_worker

        # The suite's session reuses this worker: count from zero, so this task is not the one that thaws.
        task_worker._tasks = 0
        task_worker.prepare_task()
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"frozen": [collector.get_freeze_count()],
                                          "walked": [len(collector.get_objects())]})

    rows = spark.range(1).repartition(1).mapInArrow(objects, "frozen long, walked long").collect()
    (row,) = rows
    # What the daemon's collection after the task walks is what the task made, not the worker's modules.
    assert row.frozen > 10_000 and row.walked < row.frozen
