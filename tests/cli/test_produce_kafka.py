"""Acceptance on a real broker: produce a simulated workload in protocol A, convert it to B, replicate B.

For every pair of built protocols (Canal-JSON and Debezium with ``enable-tidb-extension``, the setting
under which they carry resolved ts and exact commit ts): ``pyticdc produce`` writes the workload to a
topic, ``pyticdc convert`` reads that topic and writes B to another topic with the target's routing,
and the pure consumer engine replicates B into the in-memory replica, which must equal the simulator's
ground truth (as both protocols can carry it).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from pyticdc.cli import main
from pyticdc.codec import PROTOCOLS as PROTOCOL_NAMES
from pyticdc.model import DDLEvent, KafkaRecord, RowChange
from pyticdc.routing.stream import retime
from pyticdc.sim.workload import WorkloadConfig, simulate
from replays import FULL_OPTIONS, assert_replica_matches, replicate

pytestmark = pytest.mark.kafka

SEED = 17
TRANSACTIONS = 25
PROTOCOLS = list(PROTOCOL_NAMES)


def option_args(flag: str, protocol: str) -> list[str]:
    return [arg for name, value in FULL_OPTIONS.get(protocol, {}).items() for arg in (flag, f"{name}={value}")]


def read_topic(broker: Any, topic: str) -> list[KafkaRecord]:
    from pyticdc.io import kafka

    ranges = kafka.offset_ranges(broker.config, subscribe=topic)
    return [record for offset_range in ranges for record in kafka.read_range(broker.config, offset_range)]


@pytest.fixture(scope="module")
def produced(kafka_broker: Any) -> dict[str, Any]:
    """Each protocol's topic with the same simulated workload, and the commit-ts mapping of the produce."""
    start_ms = time.time_ns() // 1_000_000
    run = uuid.uuid4().hex[:6]
    topics = {}
    for protocol in PROTOCOLS:
        topic = f"src-{protocol}-{run}"
        status = main(["produce", "--protocol", protocol, *option_args("--option", protocol), "--seed", str(SEED),
                       "--transactions", str(TRANSACTIONS), "--start-ms", str(start_ms), "--rate", "200",
                       "--resolved-interval-ms", "50", "--output-topic", topic, "--partitions", "3",
                       "--output-bootstrap-servers", kafka_broker.bootstrap, "-X", "batch.num.messages=1",
                       "-X", "linger.ms=0", "--no-progress"])
        assert status == 0
        topics[protocol] = topic
    history = simulate(SEED, WorkloadConfig(transactions=TRANSACTIONS))
    _, mapping = retime(history.events, start_ms=start_ms, rate=200)
    return {"topics": topics, "history": history, "back": {new: old for old, new in mapping.items()}, "run": run}


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", PROTOCOLS)
def test_produce_convert_replicate(kafka_broker: Any, produced: dict[str, Any], source: str, target: str) -> None:
    out_topic = f"dst-{source}-{target}-{produced['run']}"
    status = main(["convert", "-t", produced["topics"][source], "-p", source,
                   *option_args("-o", source), "--output-protocol", target, *option_args("--output-option", target),
                   "--output-topic", out_topic, "--partitions", "2", "-b", kafka_broker.bootstrap,
                   "--output-bootstrap-servers", kafka_broker.bootstrap, "-X", "batch.num.messages=1",
                   "-X", "linger.ms=0", "--no-progress"])
    assert status == 0
    records = read_topic(kafka_broker, out_topic)
    assert records and {r.partition for r in records} == {0, 1}
    replica = replicate(records, target, {out_topic: 2})
    history = produced["history"]
    # The produced stream ends with a watermark at its last change; on the simulator's clock that is the
    # last commit, after which the history changes nothing: the replica must be its final state.
    last_change = max(e.commit_ts for e in history.events if isinstance(e, RowChange | DDLEvent))
    assert produced["back"][replica.consistent_ts] == last_change
    assert history.truth_at(last_change) == history.truth_at(history.final_resolved_ts)
    assert_replica_matches(replica, history, source, target, at_ts=history.final_resolved_ts)


def test_inspect_a_topic(kafka_broker: Any, produced: dict[str, Any], tmp_path: Any,
                         capsys: pytest.CaptureFixture[str]) -> None:
    import orjson

    plot = tmp_path / "topic.png"
    status = main(["inspect", "-t", produced["topics"]["simple"], "--bootstrap-servers",
                   kafka_broker.bootstrap, "--output-format", "json", "--plot", str(plot), "--no-progress"])
    assert status == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["protocol"] == "simple"
    assert data["kafka_timestamps"] is True
    assert [p["partition"] for p in data["partitions"]] == [0, 1, 2]
    assert all(p["lag_ms"] == 0 and p["resolved_ts"] == data["max_commit_ts"] for p in data["partitions"])
    assert plot.read_bytes()[:4] == b"\x89PNG"
