"""``pyticdc produce``: simulated workloads and changelog tables to capture files, with TiCDC's routing."""

from __future__ import annotations

import collections
from pathlib import Path

import orjson
import pytest

from pyticdc.cli import main
from pyticdc.codec import make_decoder
from pyticdc.consumer import Consumer
from pyticdc.consumer.stream import partition_counts
from pyticdc.io.capture import read_capture
from pyticdc.model import DDLEvent, RowChange, Watermark, physical_ms
from pyticdc.routing.stream import retime
from pyticdc.sim.oracle import TruthProjector, compare
from pyticdc.sim.replica import Replica
from pyticdc.sim.workload import WorkloadConfig, simulate
from replays import FULL_OPTIONS, ChainedProjection, clock_for, decoded_events, source_records

START_MS = 1_750_000_000_000


def produce(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    assert main(["produce", "--start-ms", str(START_MS), "-O", str(out), "--no-progress", *args]) == 0
    return out


def test_produce_is_deterministic_and_ordered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--protocol", "canal-json", "--option", "enable-tidb-extension=true", "--seed", "4", "--transactions",
            "60", "--rate", "50", "--resolved-interval-ms", "100")
    first = produce(tmp_path, "a.jsonl", *args)
    second = produce(tmp_path, "b.jsonl", *args)
    assert first.read_bytes() == second.read_bytes()
    err = capsys.readouterr().err
    assert "simulated workload seed 4" in err and "canal-json records" in err
    records = list(read_capture(first))
    per_partition: dict[int, list[int]] = collections.defaultdict(list)
    for record in records:
        per_partition[record.partition].append(record.offset)
        assert record.timestamp_ms >= START_MS
    assert sorted(per_partition) == [0, 1, 2]
    assert all(offsets == list(range(len(offsets))) for offsets in per_partition.values())
    events = [e for _, e in decoded_events(records, "canal-json")]
    commits = [e.commit_ts for e in events if isinstance(e, RowChange | DDLEvent)]
    assert physical_ms(min(commits)) == START_MS
    # 60 transactions at 50 per second: about 1.2 s of commit time, a resolved ts every 100 ms of it.
    span_ms = physical_ms(max(commits)) - physical_ms(min(commits))
    assert 800 <= span_ms <= 1600
    marks = sorted({e.resolved_ts for e in events if isinstance(e, Watermark)})
    assert len(marks) >= span_ms // 100 - 1
    assert marks[-1] == max(commits)


def test_produced_stream_replicates_to_the_truth(tmp_path: Path) -> None:
    out = produce(tmp_path, "craft.jsonl", "--protocol", "craft", "--seed", "8", "--transactions", "40",
                  "--partitions", "2", "--output-topic", "sim_{schema}")
    records = list(read_capture(out))
    # Rows and table DDL go to the expression's topic; CREATE DATABASE and watermarks also to the default one.
    assert {r.topic for r in records} == {"sim_sim", "ticdc"}
    consumer = Consumer("craft", partitions=partition_counts(records))
    replica = Replica()
    for unit in consumer.consume_many(records):
        replica.apply(unit)
    history = simulate(8, WorkloadConfig(transactions=40))
    _, mapping = retime(history.events, start_ms=START_MS, rate=100)
    back = {new: old for old, new in mapping.items()}
    truth = history.truth_at(back[replica.consistent_ts])
    assert back[replica.consistent_ts] >= max(e.commit_ts for e in history.events if isinstance(e, RowChange))
    from pyticdc.codec import make_encoder

    projector = TruthProjector(make_encoder("craft"))
    assert compare(replica.content(), projector.snapshot(truth), {k: t.info for k, t in truth.items()}) is None


def test_dispatchers_file_routes_tables(tmp_path: Path) -> None:
    config = tmp_path / "changefeed.toml"
    config.write_text('[sink]\nprotocol = "open-protocol"\n\n[[sink.dispatchers]]\nmatcher = ["sim.t_int*"]\n'
                      'topic = "ints"\npartition = "ts"\n')
    out = produce(tmp_path, "open.jsonl", "--protocol", "open-protocol", "--seed", "2", "--transactions", "30",
                  "--dispatchers", str(config), "--topic", "rest")
    records = list(read_capture(out))
    by_topic: dict[str, set[str]] = collections.defaultdict(set)
    for record, event in decoded_events(records, "open-protocol"):
        if isinstance(event, RowChange):
            by_topic[record.topic].add(event.table)
    assert by_topic["ints"] and all(t.startswith("t_int") for t in by_topic["ints"])
    assert not any(t.startswith("t_int") for t in by_topic["rest"])


@pytest.mark.parametrize("target", ["simple", "debezium", "open-protocol"])
def test_produce_from_a_changelog_table(tmp_path: Path, target: str) -> None:
    pytest.importorskip("pyarrow")
    from pyticdc.arrow.rows import event_dicts

    history = simulate(21, WorkloadConfig(transactions=30))
    source = "canal-json"
    records = source_records(history, source, partitions=3)
    decoder = {p: make_decoder(source, FULL_OPTIONS[source]) for p in range(3)}
    changelog = tmp_path / "changelog.jsonl"
    with open(changelog, "wb") as handle:
        for record in records:
            for row in event_dicts(record, decoder[record.partition].decode(record.value, record.key)):
                handle.write(orjson.dumps(row, option=orjson.OPT_PASSTHROUGH_DATETIME, default=str) + b"\n")
    options = ["--option", "enable-tidb-extension=true"] if target == "debezium" else []
    out = produce(tmp_path, f"{target}.jsonl", "--protocol", target, "--changelog", str(changelog),
                  "--partitions", "2", *options)
    produced = list(read_capture(out))
    consumer = Consumer(target, FULL_OPTIONS.get(target), partitions=partition_counts(produced))
    replica = Replica()
    for unit in consumer.consume_many(produced):
        replica.apply(unit)
    # The changelog kept the original commit ts: the replica is complete at the last change.
    last = max(e.commit_ts for e in history.events if isinstance(e, RowChange | DDLEvent))
    assert replica.consistent_ts == last
    from pyticdc.codec import make_encoder

    clock = clock_for(history)
    projector = TruthProjector(ChainedProjection(  # type: ignore[arg-type]
        make_encoder(source, FULL_OPTIONS[source], clock=clock), make_encoder(target, FULL_OPTIONS.get(target))))
    truth = history.truth_at(last)
    assert compare(replica.content(), projector.snapshot(truth), {k: t.info for k, t in truth.items()}) is None


def test_produce_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def error() -> str:
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("pyticdc produce: error: ")
        return lines[0]

    out = str(tmp_path / "x.jsonl")
    assert main(["produce", "--protocol", "nope", "-O", out]) == 2
    assert "unknown protocol 'nope'" in error()
    assert main(["produce", "--protocol", "craft", "--option", "enable-tidb-extension=true", "-O", out]) == 2
    assert "does not apply" in error()
    assert main(["produce", "--protocol", "craft", "--tables", "t_nope", "-O", out]) == 2
    assert "unknown table shape" in error()
    assert main(["produce", "--protocol", "craft"]) == 2
    assert "-O/--output FILE or --output-bootstrap-servers" in error()
    assert main(["produce", "--protocol", "craft", "-O", out, "-b", "localhost:9"]) == 2
    assert "give one destination" in error()
    assert main(["produce", "--protocol", "craft", "--changelog", str(tmp_path / "missing.jsonl"), "-O", out]) == 2
    assert "no such changelog file" in error()
    assert main(["produce", "--protocol", "craft", "--partitions", "0", "-O", out]) == 2
    assert "--partitions must be >= 1" in error()
    assert not Path(out).exists()


def test_realtime_pacing_follows_record_timestamps() -> None:
    import time

    from pyticdc.cli.produce_command import _paced
    from pyticdc.model import KafkaRecord

    records = [KafkaRecord(topic="t", partition=0, timestamp_ms=START_MS + step) for step in (0, 60, 120, 120)]
    started = time.monotonic()
    assert list(_paced(records)) == records
    assert 0.11 <= time.monotonic() - started < 1.0
