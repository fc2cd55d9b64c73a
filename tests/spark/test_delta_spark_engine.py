"""The delta-spark apply engine: MERGE INTO by Delta on Spark, same replica and positions as the other engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyticdc.errors import ConfigError
from pyticdc.replica import read_progress, replica_tables
from pyticdc.replica.store import ACTION, DeltaStore
from pyticdc.spark.apply.delta_spark import merge_statement


def _tables(warehouse: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    store = DeltaStore(warehouse)
    out = {}
    for entry in replica_tables(warehouse):
        data = store.read(warehouse / entry["path"]).to_pylist()
        # _ingested_at is the wall clock of the apply: the one column two runs cannot share.
        out[(entry["schema"], entry["table"])] = sorted(
            ({k: v for k, v in row.items() if k != "_ingested_at"} for row in data), key=repr)
    return out


def _positions(table: Path) -> list[tuple[str, int]]:
    """Operation and application-transaction version of the table's commits, in commit order."""
    found = []
    for log in sorted((table / "_delta_log").glob("*.json")):
        operation, version = "", None
        for line in log.read_bytes().splitlines():
            action = orjson.loads(line)
            if "txn" in action and action["txn"]["appId"] == "pyticdc":
                version = int(action["txn"]["version"])
            operation = action.get("commitInfo", {}).get("operation", operation)
        if version is not None:
            found.append((operation, version))
    return found


def test_the_merge_statement_has_the_clauses_of_the_delta_rs_merge_and_quotes_names() -> None:
    plain = merge_statement("/w/s/t", "v", ["id", "a`b"], ["id"], None)
    assert plain.startswith("MERGE INTO delta.`/w/s/t` AS t USING `v` AS s ON t.`id` = s.`id` ")
    assert "WHEN MATCHED AND s.`_pyticdc_action` = 'delete' THEN DELETE" in plain
    assert "UPDATE SET t.`id` = s.`id`, t.`a``b` = s.`a``b`" in plain
    assert plain.endswith("WHEN NOT MATCHED AND s.`_pyticdc_action` = 'upsert' THEN INSERT (`id`, `a``b`) "
                          "VALUES (s.`id`, s.`a``b`)")
    soft = merge_statement("/w", "v", ["id", "_commit_ts"], ["id"], ["_commit_ts"])
    assert "WHEN MATCHED AND s.`_pyticdc_action` = 'soft' AND s.`_pyticdc_shape` <> 0 THEN UPDATE SET " \
           "t.`_commit_ts` = s.`_commit_ts`" in soft
    assert "(s.`_pyticdc_action` = 'upsert' OR (s.`_pyticdc_action` = 'soft' AND s.`_pyticdc_shape` = 0))" in soft


def test_a_session_without_the_delta_jar_is_refused_before_it_starts() -> None:
    pytest.importorskip("pyspark")
    from pyticdc.spark.session import spark_session

    with pytest.raises(ConfigError, match=r"io\.delta:delta-spark_2\.13"):
        spark_session("t", jars=[], delta=True)


@pytest.mark.spark
@pytest.mark.jvm
def test_a_merge_at_a_position_the_table_holds_is_skipped_by_delta(spark: Any, tmp_path: Path) -> None:
    from pyticdc.spark.apply.delta_spark import DeltaSparkEngine
    from pyticdc.spark.apply.engines import SegmentTask

    store = DeltaStore(tmp_path)
    path = store.table_path("s", "t")
    store.create(path, pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}), uid="u", position=10,
                 name="s.t")
    source = tmp_path / "source.parquet"
    pq.write_table(pa.table({ACTION: ["upsert", "delete", "upsert"], "id": pa.array([1, 2, 3], pa.int64()),
                             "v": ["A", None, "C"]}), source)
    task = SegmentTask(path=str(path), info="", held=10, position=20, rowid=False, strategy="key",
                       key_columns=("id",), time_zone="UTC", app_id="pyticdc", storage_options=None)
    engine = DeltaSparkEngine(spark, tmp_path / "staging")
    engine.merge(task, str(source), ["id"], None)
    store.forget(path)
    assert store.position(path) == 20
    assert sorted(store.read(path).to_pylist(), key=repr) == [{"id": 1, "v": "A"}, {"id": 3, "v": "C"}]
    pq.write_table(pa.table({ACTION: ["upsert"], "id": pa.array([4], pa.int64()), "v": ["D"]}), source)
    engine.merge(task, str(source), ["id"], None)  # a replay of position 20: Delta skips the command
    store.forget(path)
    assert store.position(path) == 20 and store.count(path) == 2
    assert [p for _, p in _positions(Path(str(path)))] == [10, 20]
    assert spark.conf.get("spark.databricks.delta.write.txnVersion", None) is None  # the session is left clean


@pytest.mark.spark
@pytest.mark.jvm
@pytest.mark.parametrize(("protocol", "seed"), [("canal-json", 31), ("simple", 35)])
def test_delta_spark_builds_the_replica_the_driver_engine_builds(spark: Any, tmp_path: Path, protocol: str,
                                                                  seed: int) -> None:
    from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    options = {"enable-tidb-extension": "true"} if protocol == "canal-json" else {}
    history = simulate(seed, WorkloadConfig(transactions=30))
    plan = FaultPlan(garbage=1)  # duplicates, TiCDC restarts with stale watermarks, replayed ranges, garbage
    reports = {}
    for engine in ("driver", "delta-spark"):
        # delta-spark: killed right after the second table MERGE of a level, before the others and the progress.
        crashes = [("before-progress", 1), ("after-table-commit", 3)] + \
            ([("after-table-merge", 2)] if engine == "delta-spark" else [])
        reports[engine] = check_history_on_spark(
            spark, history, protocol, options, plan=plan, seed=seed, workdir=tmp_path / engine, batches=3,
            crash_plan=CrashPlan(crashes=list(crashes)), engine=engine)
        assert sorted(c.split(" ", 1)[0] for c in reports[engine].crashes) == sorted(c for c, _ in crashes)
    driver, ours = tmp_path / "driver" / "warehouse", tmp_path / "delta-spark" / "warehouse"
    assert read_progress(DeltaStore(ours)).consistent_ts == read_progress(DeltaStore(driver)).consistent_ts
    assert _tables(ours) == _tables(driver)
    assert reports["delta-spark"].quarantined == reports["driver"].quarantined == 1
    # Nothing applied twice: across the kills, every MERGE is at a position above all the table held before
    # (a layout rewrite keeps the position it is at; only row changes move it).
    merges = 0
    for entry in replica_tables(ours):
        commits = _positions(ours / entry["path"])
        for index, (operation, position) in enumerate(commits):
            if operation == "MERGE":
                merges += 1
                assert all(position > before for _, before in commits[:index]), (entry["table"], commits)
    assert merges > 0


@pytest.mark.spark
@pytest.mark.jvm
def test_a_warehouse_written_by_one_distributed_engine_is_continued_by_the_other(spark: Any, tmp_path: Path) -> None:
    import random

    from pyticdc.io.capture import write_capture
    from pyticdc.sim import FaultPlan, WorkloadConfig, inject, interleave, produce, simulate, with_offsets
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    history = simulate(41, WorkloadConfig(transactions=20))
    options = {"enable-tidb-extension": "true"}
    rng = random.Random(41)
    logs = with_offsets(inject(produce(history, "canal-json", options, topic="sim", partitions=2), FaultPlan(), rng))
    stream = interleave(logs, rng)
    capture = tmp_path / "capture.jsonl"
    source = ReplicationSource.capture("canal-json", options, capture)
    mixed, reference = tmp_path / "mixed", tmp_path / "reference"
    write_capture(capture, stream[:len(stream) // 2])  # the feed so far: delta-rs in the executors applies it
    SparkReplication(spark, source, mixed, engine="distributed").run()
    applied = read_progress(DeltaStore(mixed)).consistent_ts
    write_capture(capture, stream)  # the rest arrives: Delta on Spark continues from the same positions
    SparkReplication(spark, source, mixed, engine="delta-spark").run()
    SparkReplication(spark, source, reference, engine="driver").run()
    assert 0 < applied < read_progress(DeltaStore(mixed)).consistent_ts
    assert read_progress(DeltaStore(mixed)).consistent_ts == read_progress(DeltaStore(reference)).consistent_ts
    assert _tables(mixed) == _tables(reference)


def test_engine_delta_spark_needs_a_session_with_delta(tmp_path: Path) -> None:
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    class NoDelta:
        """A session whose configuration names no Delta extension."""

        class conf:  # mirrors SparkSession.conf
            @staticmethod
            def get(key: str, default: Any = None) -> Any:
                return default

    (tmp_path / "c.jsonl").write_bytes(b"")
    source = ReplicationSource.capture("canal-json", {"enable-tidb-extension": "true"}, tmp_path / "c.jsonl")
    with pytest.raises(ConfigError, match="delta-spark"):
        SparkReplication(NoDelta(), source, tmp_path / "w", engine="delta-spark")
