"""Replication on Spark: the oracle for every protocol with faults and kills, the CLI, Kafka batch and streaming."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from pyticdc.cli import main
from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.io.capture import write_capture
from pyticdc.model import KafkaRecord, physical_ms
from pyticdc.replica import SimulatedCrash, compare_replica, read_progress, replica_tables, unsettled_tables
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, TruthProjector, WorkloadConfig, interleave, produce, simulate, with_offsets

OPTIONS: dict[str, dict[str, Any]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}


def _clock(history: Any) -> Any:
    fixed = physical_ms(history.final_resolved_ts)
    return lambda: fixed


def _check(warehouse: Path, history: Any, protocol: str, consistent_ts: int) -> str | None:
    projector = TruthProjector(make_encoder(protocol, OPTIONS.get(protocol, {}), clock=_clock(history)))
    truth = history.truth_at(consistent_ts)
    return compare_replica(warehouse, projector.snapshot(truth), {k: t.info for k, t in truth.items()})


def _capture(path: Path, protocol: str, seed: int = 1, transactions: int = 60) -> Any:
    history = simulate(seed, WorkloadConfig(transactions=transactions))
    logs = with_offsets(produce(history, protocol, OPTIONS.get(protocol, {}), partitions=3, clock=_clock(history)))
    write_capture(path, interleave(logs, random.Random(seed)))
    return history


# --------------------------------------------------------------------------- the oracle on Spark
@pytest.mark.spark
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_spark_oracle_with_faults_and_a_kill_between_data_and_progress(spark: Any, tmp_path: Path,
                                                                        protocol: str) -> None:
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    plan = FaultPlan(garbage=2)  # duplicates, TiCDC restarts with stale watermarks, replayed ranges, garbage
    crashes = CrashPlan(crashes=[("before-progress", 2), ("after-table-commit", 9), ("after-progress", 4)])
    report = check_history_on_spark(spark, simulate(2, WorkloadConfig(transactions=40)), protocol,
                                    OPTIONS.get(protocol, {}), plan=plan, seed=2, workdir=tmp_path, crash_plan=crashes)
    kinds = [c.split(" ", 1)[0] for c in report.crashes]
    assert "before-progress" in kinds and len(kinds) >= 2
    assert report.checks >= 2 and report.quarantined == 2


@pytest.mark.spark
def test_selftest_command_on_spark(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "--engine", "spark", "-p", "simple", "--transactions", "30", "--faults", "all"]) == 0
    out = capsys.readouterr().out
    assert "ok   simple" in out and "engine=spark" in out and "before-progress" in out


# --------------------------------------------------------------------------- pyticdc replicate
@pytest.mark.spark
def test_replicate_command_on_capture_files_and_again(spark: Any, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    history = _capture(tmp_path / "cdc.jsonl", "craft", seed=3)
    warehouse = tmp_path / "wh"
    args = ["replicate", "--from", str(tmp_path / "cdc.jsonl"), "-p", "craft", "--to", str(warehouse),
            "--batch-records", "100", "--progress"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "batch 1:" in captured.err and "complete up to" in captured.err
    assert "the replica is complete up to" in captured.out
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert _check(warehouse, history, "craft", progress.consistent_ts) is None
    for table in replica_tables(warehouse):
        assert f"{table['schema']}.{table['table']}" in captured.out
    # Again: nothing new to apply, one more (empty) committed batch, the same tables.
    assert main(args) == 0
    again = read_progress(DeltaStore(warehouse))
    assert again.version == progress.version + 1 and again.consistent_ts == progress.consistent_ts
    assert again.stats["replica"]["rows_applied"] == progress.stats["replica"]["rows_applied"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--from", "/no/such/file.jsonl", "-p", "simple"], "no such capture file"),
    (["--from", "x.jsonl", "-p", "canal-json", "-b", "h:1", "--require-watermarks"], "enable-tidb-extension"),
    (["--from", "kafka://h:1", "-p", "simple"], "kafka://HOST:PORT/TOPIC"),
    (["--from", "kafka://h:1/t", "-p", "nope"], "unknown protocol"),
    (["--from", "kafka://h:1/t", "-p", "simple", "--batch-records", "0"], "--batch-records"),
])
def test_replicate_command_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                        message: str) -> None:
    assert main(["replicate", *argv, "--to", str(tmp_path / "wh")]) == 2
    assert message in capsys.readouterr().err


def test_replicate_help_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replicate", "--help"])
    out = capsys.readouterr().out
    for flag in ("--from", "--to", "--protocol", "--option", "--table", "--stream", "--trigger", "--batch-records",
                 "--bootstrap-servers", "--time-zone", "--capture-format", "--progress"):
        assert flag in out


# --------------------------------------------------------------------------- Kafka
def _routed(protocol: str, topic: str, seed: int, transactions: int = 60) -> tuple[Any, list[KafkaRecord]]:
    from pyticdc.routing import Router

    history = simulate(seed, WorkloadConfig(transactions=transactions))
    router = Router(protocol, OPTIONS.get(protocol, {}), default_topic=topic, partitions=3, clock=_clock(history))
    return history, router.route(history.events)


@pytest.mark.spark
@pytest.mark.kafka
def test_kafka_batch_then_streaming_continue_the_same_replica(spark: Any, kafka_broker: Any, tmp_path: Path) -> None:
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    topic = kafka_broker.new_topic(3)
    history, records = _routed("canal-json", topic, seed=4)
    half = len(records) // 2
    kafka_broker.produce(records[:half])
    source = ReplicationSource.kafka_topics("canal-json", OPTIONS["canal-json"], kafka_broker.config, topics=topic)
    warehouse = tmp_path / "wh"
    reports = SparkReplication(spark, source, warehouse, batch_records=50).run()
    assert len(reports) >= 2
    first = reports[-1].consistent_ts
    assert 0 < first < history.final_resolved_ts
    assert _check(warehouse, history, "canal-json", first) is None
    kafka_broker.produce(records[half:])
    job = SparkReplication(spark, source, warehouse, batch_records=150)
    query = job.start_stream(available_now=True)
    query.awaitTermination(120)
    assert query.exception() is None
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert _check(warehouse, history, "canal-json", progress.consistent_ts) is None


@pytest.mark.spark
@pytest.mark.kafka
def test_a_streaming_batch_killed_before_its_progress_is_redone_once(spark: Any, kafka_broker: Any,
                                                                     tmp_path: Path) -> None:
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    topic = kafka_broker.new_topic(3)
    history, records = _routed("simple", topic, seed=5)
    kafka_broker.produce(records)
    source = ReplicationSource.kafka_topics("simple", {}, kafka_broker.config, topics=topic)
    warehouse = tmp_path / "wh"
    state = {"armed": True}

    def kill(point: str, detail: Any) -> None:
        if point == "before-progress" and state["armed"]:
            state["armed"] = False
            raise SimulatedCrash(point)

    query = SparkReplication(spark, source, warehouse, hook=kill).start_stream(available_now=True)
    with pytest.raises(Exception, match=r"SimulatedCrash|before-progress"):
        query.awaitTermination(120)
    assert read_progress(DeltaStore(warehouse)).version == 0  # the data was written, the progress was not
    assert any(DeltaStore(warehouse).table_dirs())
    # The restarted query (same checkpoint: Spark replays the batch) finishes it; nothing is applied twice.
    query = SparkReplication(spark, source, warehouse).start_stream(available_now=True)
    query.awaitTermination(120)
    assert query.exception() is None
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert unsettled_tables(warehouse) == []
    assert progress.stats["replica"]["rows_skipped"] > 0
    assert _check(warehouse, history, "simple", progress.consistent_ts) is None


@pytest.mark.spark
@pytest.mark.kafka
def test_replication_sink_takes_kafka_source_columns(spark: Any, kafka_broker: Any, tmp_path: Path) -> None:
    """``replication_sink`` is the foreachBatch of any stream with the Kafka columns (the JVM connector's too)."""
    from pyticdc.spark.replication import replication_sink

    topic = kafka_broker.new_topic(3)
    history, records = _routed("open-protocol", topic, seed=6)
    kafka_broker.produce(records)
    raw = (spark.readStream.format("pyticdc").option("protocol", "open-protocol").option("output", "records")
           .option("kafka.bootstrap.servers", kafka_broker.bootstrap).option("subscribe", topic)
           .option("startingOffsets", "earliest").load())
    assert {"key", "value", "topic", "partition", "offset", "timestamp"} <= set(raw.columns)
    warehouse = tmp_path / "wh"
    sink = replication_sink(warehouse, "open-protocol", partitions={topic: 3})
    query = (raw.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert _check(warehouse, history, "open-protocol", progress.consistent_ts) is None
