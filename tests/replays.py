"""Shared test helpers for replays: a history written in a protocol, consumed into a replica, checked."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from pyticdc.codec import make_decoder, make_encoder
from pyticdc.consumer import Consumer
from pyticdc.consumer.stream import partition_counts
from pyticdc.model import Event, KafkaRecord, physical_ms
from pyticdc.routing import Router
from pyticdc.sim.oracle import TruthProjector, compare
from pyticdc.sim.replica import Replica
from pyticdc.sim.workload import History

__all__ = [
    "FULL_OPTIONS",
    "ChainedProjection",
    "assert_replica_matches",
    "clock_for",
    "decoded_events",
    "numbered",
    "replicate",
    "source_records",
]

#: Options that make each protocol able to carry a whole workload (resolved ts, exact commit ts).
FULL_OPTIONS: dict[str, dict[str, Any]] = {
    "canal-json": {"enable-tidb-extension": True},
    "debezium": {"enable-tidb-extension": True},
}


def numbered(records: Iterable[KafkaRecord]) -> list[KafkaRecord]:
    """Records with per-partition offsets from 0, as a broker assigns them."""
    counter: collections.Counter[tuple[str, int]] = collections.Counter()
    out = []
    for record in records:
        tp = (record.topic, record.partition)
        out.append(msgspec.structs.replace(record, offset=counter[tp]))
        counter[tp] += 1
    return out


class ChainedProjection:
    """What survives encoding with each encoder in turn (source protocol, then target protocol)."""

    def __init__(self, *encoders: Any) -> None:
        self.encoders = encoders

    def project(self, event: Event) -> Event | None:
        """The event after every encoder's projection."""
        current: Event | None = event
        for encoder in self.encoders:
            if current is None:
                return None
            current = encoder.project(current)
        return current


def clock_for(history: History) -> Any:
    """A fixed encoder clock, so runs are deterministic."""
    fixed = physical_ms(history.final_resolved_ts)
    return lambda: fixed


def source_records(history: History, protocol: str, *, partitions: int = 3, topic: str = "src") -> list[KafkaRecord]:
    """The history as TiCDC would write it in ``protocol``, with offsets."""
    router = Router(protocol, FULL_OPTIONS.get(protocol), default_topic=topic, partitions=partitions,
                    clock=clock_for(history))
    return numbered(router.route(history.events))


def replicate(records: Sequence[KafkaRecord], protocol: str, partitions: Mapping[str, int] | None = None) -> Replica:
    """Consume ``records`` with the pure consumer engine into an in-memory replica."""
    consumer = Consumer(protocol, FULL_OPTIONS.get(protocol), partitions=partitions or partition_counts(records))
    replica = Replica()
    for unit in consumer.consume_many(records):
        replica.apply(unit)
    return replica


def assert_replica_matches(replica: Replica, history: History, source: str, target: str,
                           at_ts: int | None = None) -> None:
    """The replica is complete (at the final watermark) and equals the truth as both protocols carry it.

    ``at_ts``: the history ts the replica's consistent ts stands for (when the stream was re-timed).
    """
    assert (replica.consistent_ts if at_ts is None else at_ts) == history.final_resolved_ts
    clock = clock_for(history)
    projector = TruthProjector(ChainedProjection(  # type: ignore[arg-type]
        make_encoder(source, FULL_OPTIONS.get(source), clock=clock),
        make_encoder(target, FULL_OPTIONS.get(target), clock=clock)))
    truth = history.truth_at(history.final_resolved_ts)
    difference = compare(replica.content(), projector.snapshot(truth), {k: t.info for k, t in truth.items()})
    assert difference is None, f"{source} -> {target}: {difference}"
    assert replica.rows_applied > 0


def decoded_events(records: Iterable[KafkaRecord], protocol: str) -> list[tuple[KafkaRecord, Event]]:
    """Every event of every record, one decoder per partition, in record order."""
    decoders: dict[tuple[str, int], Any] = {}
    out: list[tuple[KafkaRecord, Event]] = []
    for record in records:
        tp = (record.topic, record.partition)
        decoder = decoders.setdefault(tp, make_decoder(protocol, FULL_OPTIONS.get(protocol)))
        out.extend((record, event) for event in decoder.decode(record.value, record.key))
    return out
