"""Warehouses in an object store: URLs, storage options, and exactly once on S3 (moto on loopback)."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyticdc.codec import make_encoder
from pyticdc.errors import ConfigError
from pyticdc.model import KafkaRecord, physical_ms
from pyticdc.replica import Replicator, SimulatedCrash, compare_replica, read_replica, unsettled_tables
from pyticdc.replica.progress import read_progress
from pyticdc.replica.storage import RemotePath, is_remote, location, parse_storage_options, storage_options
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, TruthProjector, WorkloadConfig, inject, interleave, produce, simulate, with_offsets

OPTIONS = {"enable-tidb-extension": "true"}


def test_locations_local_file_urls_and_object_stores() -> None:
    assert location("./wh") == Path("wh")
    assert location("file:///tmp/wh") == Path("/tmp/wh")
    remote = location("s3a://bucket/wh/")
    assert isinstance(remote, RemotePath) and str(remote) == "s3://bucket/wh"
    assert str(remote / "shop" / "orders") == "s3://bucket/wh/shop/orders"
    assert (remote / "shop").parent == remote and (remote / "shop").name == "shop"
    assert str((remote / "shop" / "orders").relative_to(remote)) == "shop/orders"
    assert is_remote("gs://b/x") and is_remote("az://c/x") and not is_remote("/tmp/x") and not is_remote("file:///x")
    with pytest.raises(ConfigError, match="bucket"):
        location("s3://")


def test_storage_options_from_the_environment_then_explicit() -> None:
    environ = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
               "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true", "HOME": "/root"}
    options = storage_options("s3://b/wh", {"AWS_ALLOW_HTTP": "false", "conditional_put": "etag"}, environ)
    assert options == {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                       "AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "false", "conditional_put": "etag"}
    # AWS variables are not sent to another store, nor to a local directory.
    assert storage_options("gs://b/wh", None, environ) is None
    assert storage_options("/tmp/wh", {"x": "1"}, environ) == {"x": "1"}
    assert parse_storage_options(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_storage_options(["novalue"])


def _stream(seed: int) -> tuple[Any, list[KafkaRecord], TruthProjector]:
    history = simulate(seed, WorkloadConfig(transactions=60))
    fixed = physical_ms(history.final_resolved_ts)
    rng = random.Random(seed)
    logs = with_offsets(inject(produce(history, "canal-json", OPTIONS, partitions=3, clock=lambda: fixed),
                               FaultPlan(garbage=2, duplicate_rate=0.1), rng))
    return history, interleave(logs, rng), TruthProjector(make_encoder("canal-json", OPTIONS, clock=lambda: fixed))


def _replicate(warehouse: str | Path, stream: list[KafkaRecord], options: dict[str, str] | None,
               hook: Any = None) -> int:
    crashes = start = 0
    while True:
        replicator = Replicator(warehouse, "canal-json", OPTIONS, partitions={"sim": 3}, hook=hook,
                                storage_options=options)
        try:
            for at in range(start, len(stream), 70):
                replicator.process(stream[at:at + 70])
            replicator.process(())
            return crashes
        except SimulatedCrash:
            crashes += 1
            start = 0  # Kafka redelivers from the last committed offset or earlier: here from the start


@pytest.mark.parametrize("point", ["after-table-commit", "before-progress"])
def test_s3_warehouse_killed_twice_and_resumed_equals_a_local_one(
        s3_server: Any, tmp_path: Path, point: str) -> None:
    bucket = s3_server.create_bucket(f"wh-{uuid.uuid4().hex[:12]}")
    url = f"{bucket}/warehouse"
    options = storage_options(url, None, s3_server.env)
    history, stream, projector = _stream(7)
    seen: Counter[str] = Counter()

    def hook(where: str, detail: Any) -> None:
        seen[where] += 1
        if where == point and seen[where] in (3, 8):
            raise SimulatedCrash(where)

    assert _replicate(url, stream, options, hook) == 2
    assert _replicate(tmp_path, stream, None) == 0
    remote, local = read_replica(url, storage_options=options), read_replica(tmp_path)
    assert remote[1] == local[1] and remote[1]
    assert remote[0].consistent_ts == local[0].consistent_ts == history.final_resolved_ts
    assert unsettled_tables(url, storage_options=options) == []
    truth = history.truth_at(history.final_resolved_ts)
    assert compare_replica(url, projector.snapshot(truth), {k: t.info for k, t in truth.items()},
                           storage_options=options) is None
    # Progress and quarantine live in the bucket too (nothing was written next to the test).
    store = DeltaStore(url, storage_options=options)
    assert store.count(store.internal_path("quarantine")) == 2


def test_moves_in_an_object_store_copy_then_delete_the_log_first(s3_server: Any) -> None:
    from deltalake import write_deltalake

    bucket = s3_server.create_bucket(f"mv-{uuid.uuid4().hex[:12]}")
    options = storage_options(bucket, None, s3_server.env)
    store = DeltaStore(f"{bucket}/wh", storage_options=options)
    source = store.table_path("s", "t")
    store.create(source, pa.table({"a": [1, 2]}), uid="s.t@1", position=3, name="s.t")
    write_deltalake(str(source), pa.table({"a": [3]}), mode="append", storage_options=options)
    target = store.table_path("s", "u")
    store.move(source, target)
    assert not source.exists() and store.uid(target) == "s.t@1" and store.position(target) == 3
    assert sorted(store.read(target).column("a").to_pylist()) == [1, 2, 3]
    assert store.table_dirs() == [target]
    # Debris of a delete a crash interrupted (its first commit gone) is no table.
    assert isinstance(target, RemotePath)
    log = target / "_delta_log"
    log.fs.delete_file(f"{log.key}/00000000000000000000.json")
    store.forget(target)
    assert store.uid(target) is None


def test_two_writers_racing_for_one_progress_version_one_fails(s3_server: Any) -> None:
    # Delta commits on S3 are conditional puts of _delta_log/N.json: the writer that loses the race re-reads
    # the log, sees the winner rewrote what it read, and fails instead of overwriting it.
    from deltalake.exceptions import CommitFailedError

    from pyticdc.replica.progress import Progress, write_progress

    bucket = s3_server.create_bucket(f"two-{uuid.uuid4().hex[:12]}")
    options = storage_options(bucket, None, s3_server.env)
    first, second = (DeltaStore(f"{bucket}/wh", storage_options=options) for _ in range(2))
    write_progress(first, Progress(version=1, consistent_ts=10))
    assert read_progress(second).version == 1  # both now hold a handle at the same table version
    write_progress(first, Progress(version=2, consistent_ts=20))
    with pytest.raises(CommitFailedError):
        write_progress(second, Progress(version=2, consistent_ts=30))
    assert read_progress(DeltaStore(f"{bucket}/wh", storage_options=options)).consistent_ts == 20
