"""Kafka records → the event stream a consumer applies: commit-ts order, watermarks in place, duplicates gone.

The reading half of a conversion (:mod:`pyticdc.consumer.conversion`) and of replaying captures:
records are read per partition in offset order and fed to a :class:`~pyticdc.consumer.Consumer`.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from pyticdc.codec import canonical_protocol
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.consumer.engine import Consumer
from pyticdc.consumer.units import ConsumerStats, QuarantinedRecord
from pyticdc.model import Event, KafkaRecord, RowChange, Watermark
from pyticdc.routing.capability import capability

__all__ = ["ReadStats", "decode_stream", "order_by_offsets", "partition_counts", "regroup_rows"]

#: Highest possible TSO, used to flush the consumer at the end of the input.
_MAX_TS: Final = (1 << 64) - 1


def partition_counts(records: Iterable[KafkaRecord]) -> dict[str, int]:
    """Topic → partition count implied by the records (highest partition seen + 1)."""
    counts: dict[str, int] = {}
    for record in records:
        counts[record.topic] = max(counts.get(record.topic, 0), record.partition + 1)
    return counts


def order_by_offsets(records: Iterable[KafkaRecord]) -> dict[tuple[str, int], list[KafkaRecord]]:
    """Records per (topic, partition), in offset order, each offset once (a capture may repeat records)."""
    queues: dict[tuple[str, int], dict[int, KafkaRecord]] = {}
    unplaced: dict[tuple[str, int], list[KafkaRecord]] = {}
    for record in records:
        tp = (record.topic, record.partition)
        if record.offset < 0:
            # Not written anywhere yet (a router's output): keep the given order.
            unplaced.setdefault(tp, []).append(record)
        else:
            queues.setdefault(tp, {}).setdefault(record.offset, record)
    ordered = {tp: [by_offset[o] for o in sorted(by_offset)] for tp, by_offset in queues.items()}
    for tp, extra in unplaced.items():
        start = ordered[tp][-1].offset + 1 if ordered.get(tp) else 0
        ordered.setdefault(tp, []).extend(
            msgspec.structs.replace(r, offset=start + i) for i, r in enumerate(extra))
    return dict(sorted(ordered.items()))


class _FlushDecoder(BaseDecoder):
    """Delegates to the protocol's decoder; a sentinel value decodes to the highest possible watermark."""

    PROTOCOL = "flush"
    OPTIONS = frozenset()
    FLUSH: Final = object()

    def __init__(self, inner: BaseDecoder) -> None:
        # No option parsing of its own: the inner decoder's options are the ones in force.
        self.options = inner.options
        self.claim_check = inner.claim_check
        self.inner = inner

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """The inner decoder's events, or a final watermark for the flush sentinel."""
        if value is self.FLUSH:
            return [Watermark(resolved_ts=_MAX_TS)]
        return self.inner.decode(value, key)

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """The inner decoder's reference path, or the final watermark for the flush sentinel."""
        if value is self.FLUSH:
            return [Watermark(resolved_ts=_MAX_TS)]
        return self.inner.decode_reference(value, key)


@dataclass
class ReadStats:
    """What reading the source saw."""

    quarantined: list[QuarantinedRecord] = field(default_factory=list)
    consumer: ConsumerStats | None = None
    source_watermarks: int = 0


def regroup_rows(rows: Sequence[RowChange]) -> list[RowChange]:
    """Rows of each commit ts grouped by table (first appearance first), keeping their order within a table."""
    # The consumer orders one commit ts delete < update < insert across tables; TiCDC sends one table's
    # transaction at a time. Group each commit ts by table (first appearance), keeping the consumer's order
    # inside a table: a split UPDATE's DELETE and INSERT stay adjacent, delete first.
    out: list[RowChange] = []
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end].commit_ts == rows[start].commit_ts:
            end += 1
        tables: dict[tuple[str, str, int], list[RowChange]] = {}
        for row in rows[start:end]:
            tables.setdefault((row.schema, row.table, row.physical_table_id), []).append(row)
        for group in tables.values():
            out.extend(group)
        start = end
    return out


def decode_stream(
    records: Iterable[KafkaRecord],
    protocol: str,
    options: Mapping[str, Any] | None = None,
    *,
    partitions: Mapping[str, int] | None = None,
    claim_check: ClaimCheckStore | None = None,
    final_watermark: bool | None = None,
    stats: ReadStats | None = None,
    on_record: Callable[[], None] | None = None,
) -> Iterator[Event]:
    """The source's events in the order a consumer applies them, with its watermarks between them.

    Records are grouped per partition and read in offset order, always from the partition whose
    resolved ts is lowest (it holds the global watermark back), so little is buffered. After the
    input ends the remaining rows are released too; a Watermark at the last commit ts follows only
    when ``final_watermark`` is true (None: only when the source protocol sends no resolved ts).
    Records that do not decode are left out and counted in ``stats.quarantined``.
    """
    from pyticdc.codec import make_decoder

    protocol = canonical_protocol(protocol)
    stats = stats if stats is not None else ReadStats()
    queues = {tp: collections.deque(rs) for tp, rs in order_by_offsets(records).items()}
    counts = dict(partitions or {})
    for topic, partition in queues:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    if not counts:
        return
    decoder = _FlushDecoder(make_decoder(protocol, options, claim_check=claim_check))
    consumer = Consumer(protocol, partitions=counts, decoder=decoder)
    if final_watermark is None:
        final_watermark = not capability(protocol, options).watermarks
    emitted_watermark = 0
    last_ts = 0

    def events_of(units: Iterable[Any], flushing: bool) -> Iterator[Event]:
        nonlocal emitted_watermark, last_ts
        pending: list[RowChange] = []
        for unit in units:
            if unit.kind == "quarantine":
                stats.quarantined.extend(unit.quarantined)
            elif unit.kind == "rows":
                pending.extend(unit.rows)
            elif unit.kind == "ddl":
                yield from regroup_rows(pending)
                pending = []
                assert unit.ddl is not None
                last_ts = max(last_ts, unit.ddl.commit_ts)
                yield unit.ddl
        if pending:
            last_ts = max(last_ts, pending[-1].commit_ts)
            yield from regroup_rows(pending)
        watermark = consumer.watermark
        if not flushing and watermark > emitted_watermark:
            emitted_watermark = watermark
            stats.source_watermarks += 1
            yield Watermark(resolved_ts=watermark)

    watermarks = consumer.partition_watermarks()
    while queues:
        tp = min(queues, key=lambda tp: (watermarks[tp], tp))
        queue = queues[tp]
        record = queue.popleft()
        if not queue:
            del queues[tp]
        units = consumer.consume(record)
        if on_record is not None:
            on_record()
        watermarks = consumer.partition_watermarks()
        yield from events_of(units, False)
    # Release what follows the last watermark (rows TiCDC had sent but not yet declared complete).
    offsets = consumer.next_offsets()
    units = []
    for topic, count in counts.items():
        for partition in range(count):
            units.extend(consumer.consume((topic, partition, offsets[(topic, partition)], None,
                                           _FlushDecoder.FLUSH)))  # type: ignore[arg-type]
    yield from events_of(units, True)
    stats.consumer = consumer.stats
    if final_watermark and last_ts > emitted_watermark:
        yield Watermark(resolved_ts=last_ts)
