"""The oracle: for every built protocol, a seeded simulated TiDB produced through the real router and
codec, with TiCDC restarts, duplicates, replays, garbage and consumer crashes, must leave the replica
equal to the truth at every consistent ts the consumer reaches. Then the oracle's teeth: consumers
with the known mistakes (TiCDC's Go consumer's among them) must fail it."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyticdc.consumer.engine as engine
from pyticdc.codec import PROTOCOLS, make_decoder
from pyticdc.codec.base import BaseDecoder
from pyticdc.codec.options import CodecOptions
from pyticdc.consumer import ApplyUnit, Consumer
from pyticdc.consumer.identity import OP_RANK, change_identity
from pyticdc.errors import OracleMismatch, ReplicaError
from pyticdc.model import Event, RowChange, Watermark
from pyticdc.sim.faults import produce, with_offsets
from pyticdc.sim.oracle import FaultPlan, check_history
from pyticdc.sim.replica import Replica
from pyticdc.sim.workload import WorkloadConfig, simulate

#: name -> (protocol, options, why these options / how it is compared).
CONFIGS: dict[str, tuple[str, dict[str, Any], str]] = {
    "open": ("open-protocol", {}, "lossless on the workload: compared with the raw truth too"),
    "craft": ("craft", {}, "lossless on the workload: compared with the raw truth too"),
    "canal-json": ("canal-json", {"enable-tidb-extension": True},
                   "without enable-tidb-extension Canal-JSON sends no watermark and no commit ts (only es in ms), "
                   "so nothing could be ordered or known complete; with it, lossless on the workload"),
    "debezium": ("debezium", {"enable-tidb-extension": True},
                 "watermarks need enable-tidb-extension; Debezium carries DECIMAL as double, BIGINT UNSIGNED as "
                 "int64, DATETIME/TIME without their fsp: compared on Encoder.project"),
    "simple": ("simple", {}, "lossless on the workload: compared with the raw truth too"),
    "simple-avro": ("simple", {"encoding-format": "avro"}, "lossless on the workload"),
    "simple-bootstrap-p0": ("simple", {"send-bootstrap-to-all-partition": False},
                            "BOOTSTRAP on partition 0 only: rows elsewhere rely on the consumer's schema cache"),
}
BUILT = set(PROTOCOLS)
PARAMS = [pytest.param(name, id=name) for name, (protocol, _, _) in CONFIGS.items() if protocol in BUILT]
LOSSY = {"debezium"}
SMALL = WorkloadConfig(transactions=40)
FULL_FAULTS = FaultPlan(duplicate_rate=0.05, restarts=2, replays=2, garbage=2, crashes=3, max_run=4)
DISPATCHERS = ["default", "index-value", "ts"]


def _rules(dispatcher: str) -> list[dict[str, Any]]:
    return [{"matcher": ["*.*"], "partition": dispatcher}]


@pytest.mark.parametrize("name", PARAMS)
@settings(max_examples=8, deadline=None)
@given(workload_seed=st.integers(0, 2**31), fault_seed=st.integers(0, 2**31), dispatcher=st.sampled_from(DISPATCHERS),
       partitions=st.integers(1, 4), compact=st.booleans())
def test_replica_equals_truth_under_faults_and_crashes(
    name: str, workload_seed: int, fault_seed: int, dispatcher: str, partitions: int, compact: bool
) -> None:
    protocol, options, _ = CONFIGS[name]
    history = simulate(workload_seed, SMALL)
    report = check_history(history, protocol, options, plan=FULL_FAULTS, seed=fault_seed, partitions=partitions,
                           rules=_rules(dispatcher), compact_state=compact)
    assert report.consistent_ts == history.final_resolved_ts
    assert report.checks > 0 and report.quarantined == FULL_FAULTS.garbage
    assert report.stats.rows_released >= history.row_events  # update splitting only adds rows


@pytest.mark.parametrize("name", [p for p in PARAMS if p.values[0] not in LOSSY])
def test_lossless_protocols_match_the_raw_truth(name: str) -> None:
    # Not only the protocol's own projection: the exact values the simulator wrote.
    protocol, options, _ = CONFIGS[name]
    for seed in range(2):
        check_history(simulate(seed, SMALL), protocol, options, plan=FULL_FAULTS, seed=seed, project=False)


def test_debezium_needs_its_projection() -> None:
    with pytest.raises(OracleMismatch, match="differ"):
        check_history(simulate(0, SMALL), "debezium", {"enable-tidb-extension": True}, plan=FaultPlan(crashes=0),
                      project=False)


@pytest.mark.parametrize("name", PARAMS)
def test_two_topics_share_one_global_watermark(name: str) -> None:
    protocol, options, _ = CONFIGS[name]
    rules = [{"matcher": ["sim.t_int*", "sim.t_comp*"], "partition": "ts", "topic": "hot"},
             {"matcher": ["*.*"], "partition": "table"}]
    report = check_history(simulate(2, SMALL), protocol, options, plan=FULL_FAULTS, seed=2, rules=rules)
    assert report.checks > 3


def test_the_faults_actually_happen() -> None:
    history = simulate(11, SMALL)
    report = check_history(history, "open-protocol", plan=FULL_FAULTS, seed=11)
    stats = report.stats
    assert report.crashes == FULL_FAULTS.crashes
    assert report.records > len(list(itertools.chain.from_iterable(
        produce(history, "open-protocol", partitions=3).values())))
    assert stats.rows_replayed and stats.rows_duplicate and stats.ddls_duplicate and stats.watermarks_stale
    assert stats.skipped_offsets  # Kafka redelivered below the state's offsets after a crash


def test_small_units_keep_every_consistent_ts_checkable() -> None:
    report = check_history(simulate(5, SMALL), "simple", plan=FULL_FAULTS, seed=5, max_unit_rows=1)
    assert report.units > report.stats.ddls_released + 10


# --------------------------------------------------------------------------- the oracle's teeth
CANAL = ("canal-json", {"enable-tidb-extension": True})


def _caught(seeds: int = 8, *, plan: FaultPlan = FULL_FAULTS, protocol: tuple[str, dict[str, Any]] = CANAL,
            dispatcher: str = "default", config: WorkloadConfig = SMALL,
            replica_factory: Callable[[], Replica] = Replica, compact: bool = False) -> str:
    """The first failure the oracle reports within ``seeds`` seeds ("" if none)."""
    for seed in range(seeds):
        try:
            check_history(simulate(seed, config), protocol[0], protocol[1], plan=plan, seed=seed,
                          rules=_rules(dispatcher), replica_factory=replica_factory, compact_state=compact)
        except (OracleMismatch, ReplicaError) as exc:
            return str(exc)
    return ""


def test_teeth_without_identity_dedup(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = itertools.count()
    monkeypatch.setattr(engine, "change_identity", lambda row: (change_identity(row), next(counter)))
    assert _caught()


def test_teeth_go_consumers_per_table_high_watermark(monkeypatch: pytest.MonkeyPatch) -> None:
    # TiCDC's Go consumer drops a row below the highest commit ts seen for its table in the partition:
    # a row lost in flight and re-sent after a restart is lost for good.
    original = Consumer._on_row

    def on_row(self: Consumer, row: RowChange, topic_partition: tuple[str, int], offset: int) -> None:
        high: dict[tuple[object, ...], int] = self.__dict__.setdefault("_high", {})
        key = (topic_partition, row.schema, row.table)
        if row.commit_ts < high.get(key, 0):
            return
        high[key] = row.commit_ts
        original(self, row, topic_partition, offset)

    monkeypatch.setattr(Consumer, "_on_row", on_row)
    plan = FaultPlan(duplicate_rate=0, restarts=4, replays=0, crashes=0)
    config = WorkloadConfig(transactions=40, tables=("t_int", "t_comp"), watermark_probability=0.15)
    assert _caught(plan=plan, config=config)


def test_teeth_without_the_replay_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows at or below their partition's resolved ts and the released ts treated as new: re-sends of
    # released rows apply twice. (Either rule alone suffices: identity dedup covers what is buffered.)
    original = Consumer._on_row

    def on_row(self: Consumer, row: RowChange, topic_partition: tuple[str, int], offset: int) -> None:
        saved = self._resolved[topic_partition], self._released_ts
        self._resolved[topic_partition] = self._released_ts = 0
        try:
            original(self, row, topic_partition, offset)
        finally:
            self._resolved[topic_partition], self._released_ts = saved

    monkeypatch.setattr(Consumer, "_on_row", on_row)
    assert _caught()


def test_teeth_inserts_before_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "OP_RANK", {op: -rank for op, rank in OP_RANK.items()})
    assert "existing handle" in _caught(protocol=("open-protocol", {}))


def test_teeth_releasing_on_one_partitions_watermark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Consumer, "watermark", property(lambda self: max(self._resolved.values())))
    assert _caught(dispatcher="ts")


def test_teeth_trusting_the_latest_instead_of_the_highest_watermark(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Consumer._on_event

    def on_event(self: Consumer, event: Any, topic_partition: tuple[str, int], offset: int) -> None:
        if isinstance(event, Watermark):
            self._resolved[topic_partition] = event.resolved_ts
            return
        original(self, event, topic_partition, offset)

    monkeypatch.setattr(Consumer, "_on_event", on_event)
    assert _caught()


class LaggingReplica(Replica):
    """Stores the consumer state only with checkpoint units (like committing offsets apart from the data)."""

    def apply(self, unit: ApplyUnit) -> None:
        stored = self.state
        super().apply(unit)
        if unit.kind != "checkpoint":
            self.state = stored


def test_teeth_compact_state_resuming_with_the_current_resolved_ts(monkeypatch: pytest.MonkeyPatch) -> None:
    # A compact state must pair each re-read offset with the resolved ts the partition had *before* it,
    # or the re-read rows look like replays and are dropped.
    original = Consumer._compact_state

    def compact_state(self: Consumer) -> bytes:
        for buffered in self._rows.values():
            assert buffered.origin is not None
            topic, partition, offset, _ = buffered.origin
            buffered.origin = (topic, partition, offset, self._resolved[(topic, partition)])
        return original(self)

    monkeypatch.setattr(Consumer, "_compact_state", compact_state)
    plan = FaultPlan(duplicate_rate=0, restarts=0, replays=0, crashes=5)
    assert _caught(plan=plan, compact=True)


def test_teeth_state_not_stored_with_the_data() -> None:
    plan = FaultPlan(duplicate_rate=0, restarts=0, replays=0, crashes=4)
    assert _caught(plan=plan, replica_factory=LaggingReplica)


# --------------------------------------------------------------------------- throughput
class _Predecoded(BaseDecoder):
    """Hands out events decoded beforehand, so only the engine is timed."""

    PROTOCOL = "predecoded"
    OPTIONS = frozenset()

    def __init__(self, decoded: dict[tuple[int, int], list[Event]]) -> None:
        self.options = CodecOptions()
        self.claim_check = None
        self._decoded = decoded

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        return self._decoded[(id(value), id(key))]


@pytest.mark.parametrize("protocol", sorted({"open-protocol", "canal-json"} & BUILT))
def test_engine_throughput_is_measured(protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    options = {"enable-tidb-extension": True} if protocol == "canal-json" else {}
    history = simulate(1, WorkloadConfig(transactions=300))
    logs = with_offsets(produce(history, protocol, options, partitions=3))
    records = sorted((r for log in logs.values() for r in log), key=lambda r: (r.offset, r.partition))
    decoder = make_decoder(protocol, options)
    decoded = {(id(r.value), id(r.key)): decoder.decode(r.value, r.key) for r in records}
    consumer = Consumer(protocol, partitions={"sim": 3}, decoder=_Predecoded(decoded))
    started = time.perf_counter()
    units = consumer.consume_many(records)
    elapsed = time.perf_counter() - started
    events = consumer.stats.events
    assert consumer.stats.rows_released == sum(len(u.rows) for u in units) >= history.row_events
    with capsys.disabled():
        print(f"\n{protocol} consumer engine: {events} events in {elapsed:.3f}s = {events / elapsed:.0f} events/s "
              f"({len(units)} units, each with its state; final state {len(units[-1].state)} bytes)")


@pytest.mark.slow
@pytest.mark.parametrize("name", PARAMS)
def test_oracle_many_seeds(name: str) -> None:
    protocol, options, _ = CONFIGS[name]
    for seed in range(40):
        for dispatcher in DISPATCHERS:
            check_history(simulate(seed), protocol, options, plan=FULL_FAULTS, seed=seed, rules=_rules(dispatcher),
                          partitions=1 + seed % 4, compact_state=seed % 2 == 1)
