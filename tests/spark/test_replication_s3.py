"""Streaming replication into an S3 warehouse (moto on loopback), killed twice and resumed."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from pyticdc.model import physical_ms
from pyticdc.replica import SimulatedCrash, read_progress, read_replica, unsettled_tables
from pyticdc.replica.storage import storage_options
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import WorkloadConfig, simulate

OPTIONS = {"enable-tidb-extension": "true"}


@pytest.mark.spark
@pytest.mark.kafka
def test_streaming_to_s3_killed_twice_and_resumed_equals_a_local_run(
        spark: Any, kafka_broker: Any, s3_server: Any, tmp_path: Path) -> None:
    from pyticdc.routing import Router
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    topic = kafka_broker.new_topic(3)
    history = simulate(8, WorkloadConfig(transactions=60))
    fixed = physical_ms(history.final_resolved_ts)
    router = Router("canal-json", OPTIONS, default_topic=topic, partitions=3, clock=lambda: fixed)
    kafka_broker.produce(router.route(history.events))
    source = ReplicationSource.kafka_topics("canal-json", OPTIONS, kafka_broker.config, topics=topic)
    url = s3_server.create_bucket(f"stream-{uuid.uuid4().hex[:12]}") + "/warehouse"
    options = storage_options(url, None, s3_server.env)
    kills = iter([("after-table-commit", 2), ("before-progress", 1)])

    for point, at in kills:
        reached = {"n": 0}

        def kill(where: str, detail: Any, point: str = point, at: int = at, reached: dict[str, int] = reached) -> None:
            if where == point:
                reached["n"] += 1
                if reached["n"] == at:
                    raise SimulatedCrash(where)

        query = SparkReplication(spark, source, url, hook=kill, batch_records=60,
                                 storage_options=options).start_stream(available_now=True)
        with pytest.raises(Exception, match=r"SimulatedCrash|table-commit|before-progress"):
            query.awaitTermination(180)
    # The third run, from the progress in the bucket (the Spark checkpoint was local and is gone), finishes.
    query = SparkReplication(spark, source, url, batch_records=60, storage_options=options).start_stream(
        available_now=True)
    query.awaitTermination(180)
    assert query.exception() is None
    local = tmp_path / "wh"
    query = SparkReplication(spark, source, local, batch_records=60).start_stream(available_now=True)
    query.awaitTermination(180)
    assert query.exception() is None

    remote_progress, remote_tables = read_replica(url, storage_options=options)
    local_progress, local_tables = read_replica(local)
    assert remote_tables == local_tables and remote_tables
    assert remote_progress.consistent_ts == local_progress.consistent_ts == history.final_resolved_ts
    assert unsettled_tables(url, storage_options=options) == []
    assert read_progress(DeltaStore(url, storage_options=options)).stats["replica"]["rows_skipped"] > 0


@pytest.mark.spark
def test_replicate_command_to_s3_with_environment_credentials_and_table_options(
        spark: Any, s3_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import random

    from pyticdc.cli import main
    from pyticdc.io.capture import write_capture
    from pyticdc.sim import interleave, produce, with_offsets

    history = simulate(9, WorkloadConfig(transactions=40))
    fixed = physical_ms(history.final_resolved_ts)
    capture = tmp_path / "feed.jsonl"
    write_capture(capture, interleave(with_offsets(produce(history, "canal-json", OPTIONS, partitions=2,
                                                           clock=lambda: fixed)), random.Random(9)))
    for name, value in s3_server.env.items():
        if name != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(name, value)
    url = s3_server.create_bucket(f"cli-{uuid.uuid4().hex[:12]}") + "/wh"
    code = main(["replicate", "--from", str(capture), "-p", "canal-json", "-o", "enable-tidb-extension=true",
                 "--to", url, "--storage-option", f"AWS_ENDPOINT_URL={s3_server.endpoint}",
                 "--table-property", "delta.enableChangeDataFeed=true", "--partition-by", "sim.t_comp=k1"])
    assert code == 0, capsys.readouterr().err
    assert f"{url}/sim/t_comp" in capsys.readouterr().out
    options = storage_options(url, None, s3_server.env)
    store = DeltaStore(url, storage_options=options)
    progress = read_progress(store)
    assert progress.consistent_ts == history.final_resolved_ts and progress.tables
    comp = store.open(store.root / progress.tables[("sim", "t_comp")].path)
    assert comp.metadata().partition_columns == ["k1"]
    assert comp.metadata().configuration["delta.enableChangeDataFeed"] == "true"
