"""Batch consistency: Canal-JSON and Debezium without watermarks, consumed batch by batch (simulator ground truth)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable

import msgspec
import pytest

from pyticdc.codec import make_decoder, make_encoder
from pyticdc.consumer import Consumer
from pyticdc.consumer.identity import image_handle
from pyticdc.errors import ConfigError
from pyticdc.model import DDLEvent, KafkaRecord, RowChange, physical_ms
from pyticdc.routing import Router
from pyticdc.sim.faults import duplicate, interleave, produce, replay_ranges, restart, with_offsets
from pyticdc.sim.oracle import TruthProjector, compare
from pyticdc.sim.replica import Replica
from pyticdc.sim.workload import History, WorkloadConfig, simulate

Logs = dict[tuple[str, int], list[KafkaRecord]]


def _clock(history: History) -> Callable[[], int]:
    """The encoders' clock, fixed (Canal ``ts``, Debezium ``ts_ms``)."""
    fixed = physical_ms(history.final_resolved_ts)
    return lambda: fixed


def _same_millisecond_changes(history: History) -> int:
    """Keys changed by two or more transactions (distinct commit ts) that share one commit millisecond."""
    seen: dict[tuple[str, int, Hashable], set[int]] = {}
    for event in history.events:
        if isinstance(event, RowChange):
            image = event.columns if event.columns is not None else event.pre_columns
            key = (event.table, physical_ms(event.commit_ts), image_handle(event, image))
            seen.setdefault(key, set()).add(event.commit_ts)
    return sum(1 for commits in seen.values() if len(commits) > 1)


def _history(seed: int) -> History:
    # Few rows per table and many transactions: keys change again and again, often within one millisecond.
    return simulate(seed, WorkloadConfig(transactions=400, max_table_rows=3, ddl_probability=0.04))


def _written(history: History, protocol: str) -> list[KafkaRecord]:
    """Every record in the order TiCDC writes them (DDL after the rows before it, in all partitions)."""
    router = Router(protocol, {}, default_topic="sim", partitions=3, clock=_clock(history))
    offsets: Counter[int] = Counter()
    out: list[KafkaRecord] = []
    for event in history.events:
        for record in router.route([event]):
            out.append(msgspec.structs.replace(record, offset=offsets[record.partition]))
            offsets[record.partition] += 1
    return out


def _consume(protocol: str, partitions: int, batches: list[list[KafkaRecord]], *, restart_every: int = 3) -> Replica:
    replica = Replica()
    consumer = Consumer(protocol, {}, partitions={"sim": partitions}, consistency="batch")
    for number, batch in enumerate(batches, 1):
        for record in batch:
            for unit in consumer.consume(record):
                replica.apply(unit)
        for unit in consumer.flush():
            replica.apply(unit)
        if number % restart_every == 0:
            # A restart between batches resumes from the stored state (resend marks included).
            consumer = Consumer(protocol, {}, partitions={"sim": partitions}, consistency="batch",
                                state=consumer.state())
    return replica


def _cut(records: list[KafkaRecord], rng: random.Random) -> list[list[KafkaRecord]]:
    out, at = [], 0
    while at < len(records):
        size = rng.randint(1, 80)
        out.append(records[at:at + size])
        at += size
    return out


def _faulty(history: History, protocol: str, partitions: int, rng: random.Random) -> Logs:
    """TiCDC restarts (re-sends from older checkpoints, rows lost in flight), replayed ranges, duplicates.

    Canal-JSON's duplicates come right after their original: one re-delivered later, after its key was deleted
    and inserted again with the same images within the same millisecond, is a genuine change to any consumer
    (the batch_mode docstring says so); Debezium's exact commit ts tells them apart anywhere in a window.
    """
    clock = _clock(history)
    logs = produce(history, protocol, {}, partitions=partitions, clock=clock)
    logs = restart(logs, rng, restarts=2)
    logs = duplicate(logs, rng, rate=0.05, window=0 if protocol == "canal-json" else 8)
    return with_offsets(replay_ranges(logs, rng, count=2))


def _replicate(history: History, protocol: str, seed: int) -> Replica:
    """Faults on one partition, read in batches; each batch applied completely."""
    rng = random.Random(seed)
    return _consume(protocol, 1, _cut(_faulty(history, protocol, 1, rng)[("sim", 0)], rng))


def _difference(history: History, protocol: str, replica: Replica) -> str | None:
    clock = _clock(history)
    truth = history.truth_at(history.final_resolved_ts)
    projector = TruthProjector(make_encoder(protocol, {}, clock=clock))
    return compare(replica.content(), projector.snapshot(truth), {k: t.info for k, t in truth.items()})


@pytest.mark.parametrize("protocol", ["canal-json", "debezium"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_several_changes_of_one_key_within_one_millisecond_all_reach_the_replica(protocol: str, seed: int) -> None:
    history = _history(seed)
    # The point of the test: the workload changes keys several times within one commit millisecond.
    assert _same_millisecond_changes(history) >= 5
    # Three partitions read batch by batch, each batch every partition up to one moment (as a Spark batch
    # reads up to the latest offsets), partitions interleaved at random inside it.
    rng = random.Random(seed)
    batches = []
    for cut in _cut(_written(history, protocol), rng):
        groups: dict[int, list[KafkaRecord]] = {}
        for record in cut:
            groups.setdefault(record.partition, []).append(record)
        batches.append(interleave({("sim", p): g for p, g in groups.items()}, rng, max_run=4))
    replica = _consume(protocol, 3, batches)
    assert _difference(history, protocol, replica) is None


@pytest.mark.parametrize("protocol", ["canal-json", "debezium"])
@pytest.mark.parametrize("seed", [4, 5, 6, 7])
def test_resends_duplicates_and_replays_are_removed_without_watermarks(protocol: str, seed: int) -> None:
    history = _history(seed)
    replica = _replicate(history, protocol, seed)
    assert _difference(history, protocol, replica) is None
    if protocol == "canal-json":
        # Its DDL reaches partition 0 only: a row of another partition read after a DDL of the same millisecond
        # cannot be placed (the batch_mode docstring says so), and the faults shuffle reads enough to hit that.
        return
    # Three partitions, the faults of each, read in one batch.
    rng = random.Random(seed)
    replica = _consume(protocol, 3, [interleave(_faulty(history, protocol, 3, rng), rng, max_run=5)])
    assert _difference(history, protocol, replica) is None


def test_canal_json_without_the_extension_carries_milliseconds_only() -> None:
    # What makes the de-duplication hard: two transactions of one millisecond decode to one commit ts.
    history = _history(1)
    clock = _clock(history)
    logs = with_offsets(produce(history, "canal-json", {}, partitions=1, clock=clock))
    consumer = Consumer("canal-json", {}, partitions={"sim": 1}, consistency="batch")
    rows = [r for record in logs[("sim", 0)] for u in consumer.consume(record) for r in u.rows]
    rows += [r for u in consumer.flush() for r in u.rows]
    commits = Counter(r.commit_ts for r in rows)
    assert all(ts % (1 << 18) == 0 for ts in commits)
    assert len(commits) < len({e.commit_ts for e in history.events if isinstance(e, RowChange)})


def test_watermark_consistency_still_refuses_a_feed_without_watermarks() -> None:
    with pytest.raises(ConfigError, match="carries no watermarks"):
        Consumer("canal-json", {}, partitions={"sim": 1})
    with pytest.raises(ConfigError, match="unknown consistency"):
        Consumer("canal-json", {}, partitions={"sim": 1}, consistency="eventual")


def test_nothing_is_released_before_the_batch_ends() -> None:
    history = simulate(9, WorkloadConfig(transactions=20))
    clock = _clock(history)
    records = with_offsets(produce(history, "debezium", {}, partitions=1, clock=clock))[("sim", 0)]
    consumer = Consumer("debezium", {}, partitions={"sim": 1}, consistency="batch")
    decoder = make_decoder("debezium", {})
    sent = sum(isinstance(e, RowChange) for r in records for e in decoder.decode(r.value, r.key))
    assert all(u.kind == "quarantine" for r in records for u in consumer.consume(r))
    units = consumer.flush()
    assert sum(len(u.rows) for u in units) == sent
    assert consumer.released_ts == max(e.commit_ts for e in history.events if isinstance(e, (RowChange, DDLEvent)))
    assert consumer.flush() == []
