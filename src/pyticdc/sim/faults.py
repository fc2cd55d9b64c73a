"""Producing a history to per-partition Kafka logs, and the faults TiCDC and Kafka inflict on them.

All functions are pure: they take logs (per-partition lists of :class:`Sent` records) and a
``random.Random`` and return new logs. The faults model what really happens:

* ``restart``: TiCDC crashes and restarts from its last persisted checkpoint. Before the crash every
  partition received complete segments (a segment is what precedes one watermark) and part of the next
  one, with rows in flight since the last DDL/BOOTSTRAP possibly lost; after it, everything after the
  checkpoint is sent again, led by the (now stale) checkpoint watermark.
* ``duplicate``: producer retries deliver a record twice, the copy a little later.
* ``replay_ranges``: a contiguous range of a partition is sent again later.
* ``add_garbage``: records no decoder accepts (their content is never needed: a consumer quarantines them).
* ``interleave``: a consumer reads partitions in any merge that keeps each partition's order.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from pyticdc.codec.options import Clock
from pyticdc.model import Bootstrap, DDLEvent, Event, KafkaRecord, Watermark
from pyticdc.routing import Router
from pyticdc.sim.workload import History

__all__ = [
    "Logs",
    "Sent",
    "SentKind",
    "add_garbage",
    "duplicate",
    "interleave",
    "produce",
    "replay_ranges",
    "restart",
    "with_offsets",
]

TopicPartition = tuple[str, int]
#: What a record carries, as the producer knew when sending it.
SentKind = Literal["rows", "ddl", "watermark", "bootstrap", "garbage"]


class Sent(msgspec.Struct, frozen=True):
    """A record as the producer sent it: the Kafka record, its segment and what it carries."""

    record: KafkaRecord
    #: Index of the watermark segment (in the ideal stream) this record belongs to; -1 for garbage.
    segment: int
    kind: SentKind


#: Per-partition logs, in send order.
Logs = dict[TopicPartition, list[Sent]]


def _kind(event: Event) -> SentKind:
    if isinstance(event, DDLEvent):
        return "ddl"
    if isinstance(event, Watermark):
        return "watermark"
    if isinstance(event, Bootstrap):
        return "bootstrap"
    return "rows"


def produce(
    history: History, protocol: str, options: Mapping[str, Any] | None = None, *, topic: str = "sim",
    partitions: int = 3, rules: Sequence[Mapping[str, Any]] = (), clock: Clock | None = None,
) -> Logs:
    """The ideal per-partition logs TiCDC would write for ``history`` (no faults)."""
    router = Router(protocol, options, default_topic=topic, rules=rules, partitions=partitions, clock=clock)
    logs: Logs = {(topic, p): [] for p in range(partitions)}
    for segment, events in enumerate(history.segments()):
        # Route runs of rows together (the router batches them) and every other event alone, to tag records.
        start = 0
        while start < len(events):
            kind = _kind(events[start])
            end = start + 1
            if kind == "rows":
                while end < len(events) and _kind(events[end]) == "rows":
                    end += 1
            for record in router.route(events[start:end]):
                logs.setdefault((record.topic, record.partition), []).append(Sent(record, segment, kind))
            start = end
    return logs


def _segment_count(logs: Logs) -> int:
    return 1 + max((s.segment for log in logs.values() for s in log), default=-1)


def _partial(sent: list[Sent], rng: random.Random) -> list[Sent]:
    """What of one segment reached a partition before a crash: a prefix, rows in flight maybe lost."""
    body = [s for s in sent if s.kind != "watermark"]
    cut = rng.randint(0, len(body))
    prefix = body[:cut]
    # Everything up to the last DDL/BOOTSTRAP was acknowledged (TiCDC sends those synchronously).
    barrier = max((i for i, s in enumerate(prefix) if s.kind != "rows"), default=-1)
    return prefix[: barrier + 1] + [s for s in prefix[barrier + 1:] if rng.random() >= 0.3]


def restart(logs: Logs, rng: random.Random, *, restarts: int = 1) -> Logs:
    """Logs as written across ``restarts`` TiCDC crashes, each resuming from an earlier checkpoint."""
    segments = _segment_count(logs)
    if segments < 2 or restarts < 1:
        return {topic_partition: list(log) for topic_partition, log in logs.items()}
    by_segment = {where: [[s for s in log if s.segment == i] for i in range(segments)] for where, log in logs.items()}
    # A run sends segments [start, crash] completely and part of crash + 1; the next resumes after checkpoint.
    runs: list[tuple[int, int, int]] = []  # (start, crash, checkpoint the run begins after)
    start, checkpoint = 0, -1
    for _ in range(restarts):
        crash = rng.randint(max(start - 1, checkpoint), segments - 2)
        runs.append((start, crash, checkpoint))
        checkpoint = rng.randint(checkpoint, crash)
        start = checkpoint + 1
    runs.append((start, segments - 1, checkpoint))
    out: Logs = {topic_partition: [] for topic_partition in logs}
    for index, (first, crash, resumed_after) in enumerate(runs):
        final = index == len(runs) - 1
        for topic_partition, parts in by_segment.items():
            if resumed_after >= 0 and rng.random() < 0.7:
                # The restarted changefeed announces its checkpoint again: a resolved ts from the past.
                out[topic_partition].extend(s for s in parts[resumed_after] if s.kind == "watermark")
            for segment in range(first, crash + 1):
                out[topic_partition].extend(parts[segment])
            if not final and crash + 1 < segments:
                out[topic_partition].extend(_partial(parts[crash + 1], rng))
    return out


def duplicate(logs: Logs, rng: random.Random, *, rate: float = 0.05, window: int = 8) -> Logs:
    """Each record sent again with probability ``rate``, up to ``window`` records later."""
    out: Logs = {}
    for topic_partition, log in logs.items():
        later: dict[int, list[Sent]] = {}
        for i, sent in enumerate(log):
            if rng.random() < rate:
                later.setdefault(min(i + rng.randint(0, window), len(log) - 1), []).append(sent)
        result: list[Sent] = []
        for i, sent in enumerate(log):
            result.append(sent)
            result.extend(later.get(i, ()))
        out[topic_partition] = result
    return out


def replay_ranges(logs: Logs, rng: random.Random, *, count: int = 1, max_length: int = 12) -> Logs:
    """``count`` contiguous ranges of some partition re-sent at a later point of that partition."""
    out = {topic_partition: list(log) for topic_partition, log in logs.items()}
    candidates = [topic_partition for topic_partition, log in out.items() if log]
    for _ in range(count if candidates else 0):
        log = out[rng.choice(candidates)]
        begin = rng.randrange(len(log))
        end = min(len(log), begin + rng.randint(1, max_length))
        at = rng.randint(end, len(log))
        log[at:at] = log[begin:end]
    return out


def add_garbage(logs: Logs, rng: random.Random, *, count: int = 1) -> Logs:
    """``count`` undecodable records inserted at random places."""
    out = {topic_partition: list(log) for topic_partition, log in logs.items()}
    topic_partitions = sorted(out)
    for _ in range(count):
        topic, partition = rng.choice(topic_partitions)
        noise = bytes(rng.randrange(256) for _ in range(rng.randint(0, 16)))
        record = KafkaRecord(topic=topic, partition=partition, key=b"\xff\xfe" + noise[:4],
                             value=b"\xff\xfe\x00" + noise)
        log = out[(topic, partition)]
        log.insert(rng.randint(0, len(log)), Sent(record, -1, "garbage"))
    return out


def with_offsets(logs: Logs) -> dict[TopicPartition, list[KafkaRecord]]:
    """The logs as Kafka stores them: records with offsets 0, 1, 2, ... per partition."""
    return {
        topic_partition: [msgspec.structs.replace(s.record, offset=i) for i, s in enumerate(log)]
        for topic_partition, log in logs.items()
    }


def interleave(
    logs: Mapping[TopicPartition, Sequence[KafkaRecord]], rng: random.Random, *, max_run: int = 4,
    start: Mapping[TopicPartition, int] | None = None,
) -> list[KafkaRecord]:
    """One random merge of the partitions from ``start`` offsets on, keeping each partition's order."""
    positions = {where: (start or {}).get(where, 0) for where in logs}
    active = sorted(where for where in logs if positions[where] < len(logs[where]))
    merged: list[KafkaRecord] = []
    while active:
        topic_partition = rng.choice(active)
        log = logs[topic_partition]
        take = rng.randint(1, max_run)
        merged.extend(log[positions[topic_partition]:positions[topic_partition] + take])
        positions[topic_partition] += take
        if positions[topic_partition] >= len(log):
            active.remove(topic_partition)
    return merged
