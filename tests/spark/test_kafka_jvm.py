"""Replication through the real components: an Apache Kafka 4.x broker and Spark's own ``format("kafka")``.

pyticdc produces a simulated TiDB workload (with TiCDC's faults: restarts with stale watermarks, duplicates,
replayed ranges, garbage) to the broker; Spark's JVM Kafka source reads it, for ``SparkReplication``
(``reader="kafka"``), ``pyticdc replicate --reader kafka`` and a user's own ``readStream.format("kafka")``
query with ``replication_sink``; the replica must equal the simulator's ground truth.
"""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pyticdc.cli import main
from pyticdc.codec import make_encoder
from pyticdc.errors import ConfigError
from pyticdc.io.kafka import list_partitions, watermarks
from pyticdc.model import KafkaRecord, physical_ms
from pyticdc.replica import compare_replica, read_progress, unsettled_tables
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, TruthProjector, WorkloadConfig, inject, produce, simulate, with_offsets

OPTIONS: dict[str, dict[str, Any]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}


def _clock(history: Any) -> Any:
    fixed = physical_ms(history.final_resolved_ts)
    return lambda: fixed


def _check(warehouse: Path, history: Any, protocol: str, consistent_ts: int) -> str | None:
    projector = TruthProjector(make_encoder(protocol, OPTIONS.get(protocol, {}), clock=_clock(history)))
    truth = history.truth_at(consistent_ts)
    return compare_replica(warehouse, projector.snapshot(truth), {k: t.info for k, t in truth.items()})


def _faulty_logs(protocol: str, topic: str, seed: int, garbage: int = 2,
                 transactions: int = 50) -> tuple[Any, dict[tuple[str, int], list[KafkaRecord]]]:
    """A simulated history and its per-partition Kafka logs as TiCDC would write them, faults included."""
    history = simulate(seed, WorkloadConfig(transactions=transactions))
    logs = produce(history, protocol, OPTIONS.get(protocol, {}), topic=topic, partitions=3, clock=_clock(history))
    return history, with_offsets(inject(logs, FaultPlan(garbage=garbage), random.Random(seed)))


def _produce(broker: Any, logs: dict[tuple[str, int], list[KafkaRecord]], upto: float = 1.0) -> None:
    """Produce the first ``upto`` share of every partition's log (the rest on a later call with ``upto`` > it)."""
    records = [r for log in logs.values() for r in log[:int(len(log) * upto)]]
    broker.produce(records)


# --------------------------------------------------------------------------- the broker itself (no Spark)
@pytest.mark.jvm
def test_the_broker_is_apache_kafka_with_exact_offsets(kafka_jvm: Any) -> None:
    topic = kafka_jvm.new_topic(3, prefix="exact")
    _, logs = _faulty_logs("simple", topic, seed=20, transactions=15)
    _produce(kafka_jvm, logs)
    assert kafka_jvm.version.startswith("4.")
    assert list_partitions(kafka_jvm.config)[topic] == 3
    # Kafka's high watermark is the count of records produced to a fresh partition, batched or not.
    bounds = watermarks(kafka_jvm.config, [(topic, p) for p in range(3)])
    assert {tp: high for tp, (_low, high) in bounds.items()} == {tp: len(log) for tp, log in logs.items()}


# --------------------------------------------------------------------------- SparkReplication on format("kafka")
@pytest.mark.spark
@pytest.mark.jvm
@pytest.mark.parametrize(("reader", "engine"), [("kafka", "driver"), ("kafka", "distributed"),
                                                ("pyticdc", "distributed")])
def test_spark_replication_reads_kafka_in_batch_then_streaming(spark: Any, kafka_jvm: Any, tmp_path: Path,
                                                               reader: str, engine: str) -> None:
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    topic = kafka_jvm.new_topic(3, prefix=f"jvm-batch-{reader}-{engine}")
    history, logs = _faulty_logs("canal-json", topic, seed=21)
    _produce(kafka_jvm, logs, upto=0.5)
    source = ReplicationSource.kafka_topics("canal-json", OPTIONS["canal-json"], kafka_jvm.config, topics=topic,
                                            reader=reader)
    warehouse = tmp_path / "wh"
    reports = SparkReplication(spark, source, warehouse, batch_records=60, engine=engine).run()
    assert len(reports) >= 2  # capped batches: each one a format("kafka") read of an offset range
    first = reports[-1].consistent_ts
    assert 0 < first < history.final_resolved_ts
    assert _check(warehouse, history, "canal-json", first) is None
    _produce(kafka_jvm, {tp: log[int(len(log) * 0.5):] for tp, log in logs.items()})
    job = SparkReplication(spark, source, warehouse, batch_records=150, engine=engine)
    query = job.start_stream(available_now=True)
    query.awaitTermination(180)
    assert query.exception() is None
    assert job.reports and {type(job.replicator()).__name__} == {
        "DistributedReplicator" if engine == "distributed" else "Replicator"}
    if reader == "kafka":
        # Spark's JVM source read the micro-batches ("KafkaV2[Subscribe[...]]"), not the Python data source.
        assert {s["description"].split("[")[0] for b in query.recentProgress for s in b["sources"]} == {"KafkaV2"}
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert progress.source["reader"] == reader
    assert progress.source.get("engine", "driver") == engine
    assert unsettled_tables(warehouse) == []
    assert _check(warehouse, history, "canal-json", progress.consistent_ts) is None
    assert progress.stats["replica"]["quarantined"] == 2  # the garbage records, with their bytes


@pytest.mark.spark
@pytest.mark.jvm
def test_replicate_command_with_the_kafka_reader(spark: Any, kafka_jvm: Any, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    topic = kafka_jvm.new_topic(3, prefix="jvm-cli")
    history, logs = _faulty_logs("craft", topic, seed=22, garbage=0)
    _produce(kafka_jvm, logs)
    warehouse = tmp_path / "wh"
    status = main(["replicate", "--from", f"kafka://{kafka_jvm.bootstrap}/{topic}", "-p", "craft", "--reader",
                   "kafka", "--to", str(warehouse), "--batch-records", "120", "--no-progress"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "'reader': 'kafka'" in captured.err
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert _check(warehouse, history, "craft", progress.consistent_ts) is None


# --------------------------------------------------------------------------- a user's own format("kafka") query
@pytest.mark.spark
@pytest.mark.jvm
@pytest.mark.parametrize(("protocol", "engine"), [("open-protocol", "driver"), ("debezium", "driver"),
                                                  ("debezium", "distributed")])
def test_replication_sink_on_a_users_format_kafka_stream(spark: Any, kafka_jvm: Any, tmp_path: Path,
                                                         protocol: str, engine: str) -> None:
    """As documented: ``foreachBatch(replication_sink(...))`` on ``spark.readStream.format("kafka")``."""
    from pyticdc.spark.replication import replication_sink

    topic = kafka_jvm.new_topic(3, prefix=f"jvm-sink-{protocol}-{engine}")
    history, logs = _faulty_logs(protocol, topic, seed=23)
    _produce(kafka_jvm, logs)
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_jvm.bootstrap)
           .option("subscribe", topic).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100")
           .load())
    warehouse = tmp_path / "wh"
    batches: list[Any] = []
    sink = replication_sink(warehouse, protocol, OPTIONS.get(protocol), partitions={topic: 3},
                            on_batch=batches.append, engine=engine)
    query = (raw.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None
    assert len(batches) >= 2 and sum(b.records for b in batches) == sum(len(log) for log in logs.values())
    progress = read_progress(DeltaStore(warehouse))
    assert progress.consistent_ts == history.final_resolved_ts
    assert sum(b.rows_duplicate + b.rows_replayed for b in batches) > 0  # the injected re-sends were dropped
    assert _check(warehouse, history, protocol, progress.consistent_ts) is None


# --------------------------------------------------------------------------- refusals (no JVM needed)
def test_the_kafka_reader_needs_spark_kafka_on_the_classpath(tmp_path: Path) -> None:
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    class MissingClass:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("py4j: java.lang.ClassNotFoundException")

    no_connector = SimpleNamespace(sparkContext=SimpleNamespace(_jvm=MissingClass()), version="4.1.0")
    source = ReplicationSource.kafka_topics("simple", {}, {"bootstrap.servers": "127.0.0.1:1"}, topics="t",
                                            reader="kafka")
    with pytest.raises(ConfigError, match=r"spark-sql-kafka-0-10_2\.13:4\.1\.0"):
        SparkReplication(no_connector, source, tmp_path / "wh")
    with pytest.raises(ConfigError, match="unknown Kafka reader"):
        ReplicationSource.kafka_topics("simple", {}, {"bootstrap.servers": "h:1"}, topics="t", reader="jvm")


def test_jvm_options_name_the_topics_and_pass_client_settings(tmp_path: Path) -> None:
    from pyticdc.spark.replication import ReplicationSource

    source = ReplicationSource.kafka_topics(
        "simple", {}, {"bootstrap.servers": "h:1", "security.protocol": "SSL", "auto.offset.reset": "latest"},
        pattern="cdc-.*", reader="kafka")
    assert source.jvm_options() == {"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SSL",
                                    "subscribePattern": "cdc-.*"}


def test_replicate_reader_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "x.jsonl"
    capture.write_text("")
    common = ["-p", "simple", "--to", str(tmp_path / "wh")]
    assert main(["replicate", "--from", str(capture), "--reader", "kafka", *common]) == 2
    assert "--reader kafka reads Kafka topics" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["replicate", "--from", "kafka://h:1/t", "--reader", "jvm", *common])
    assert exited.value.code == 2 and "invalid choice: 'jvm'" in capsys.readouterr().err
    assert not (tmp_path / "wh").exists()  # refused before anything was written


def test_selftest_kafka_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "-p", "craft", "--kafka", "127.0.0.1:1"]) == 2
    assert "--kafka and --reader need --engine spark" in capsys.readouterr().err
    assert main(["selftest", "-p", "craft", "--engine", "spark", "--reader", "kafka"]) == 2
    assert "--reader needs --kafka" in capsys.readouterr().err
    assert main(["selftest", "-p", "craft", "--apply-engine", "distributed"]) == 2
    assert "--apply-engine needs --engine spark" in capsys.readouterr().err


# --------------------------------------------------------------------------- selftest through the broker
@pytest.mark.spark
@pytest.mark.jvm
def test_selftest_on_spark_with_both_kafka_sources_and_both_apply_engines(spark: Any, kafka_jvm: Any,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["selftest", "--engine", "spark", "-p", "canal-json", "--transactions", "25", "--faults", "all",
                   "--kafka", kafka_jvm.bootstrap, "--reader", "pyticdc", "--reader", "kafka",
                   "--apply-engine", "driver", "--apply-engine", "distributed"])
    out = capsys.readouterr().out
    assert status == 0, out
    lines = [line for line in out.splitlines() if line.startswith("ok   canal-json")]
    assert sorted((line.split("apply=")[1].split()[0], line.split("reader=")[1].split(":")[0]) for line in lines) == [
        ("distributed", "kafka"), ("distributed", "pyticdc"), ("driver", "kafka"), ("driver", "pyticdc")]
    assert all("2 quarantined" in line for line in lines)  # the garbage records, all faults on
