"""Protocol conversion: Kafka records of protocol A → events → re-routed Kafka records of protocol B.

A conversion decodes the source the way a consumer does (``pyticdc.consumer.Consumer``: per-partition
offsets, duplicates dropped, DDL broadcast executed once, rows released in commit-ts order when every
partition's watermark covers them), then hands the events to a :class:`pyticdc.routing.Router` for the
target protocol with the target's dispatch rules. What survives:

* commit ts: exactly as the source carries it (Canal-JSON without the extension has only milliseconds);
* watermarks: the source's resolved timestamps, re-broadcast by the target router (a resolved ts the
  source broadcast to every partition is the global watermark the consumer computes, so the values
  are the same); rows after the last watermark are converted too, with no watermark invented for them;
* DDL: at its place in commit-ts order, once, routed by the target's DDL rules;
* update pairing: a DELETE+INSERT pair TiCDC split from one UPDATE stays a DELETE+INSERT pair at the
  same commit ts, delete first, in the same per-table transaction (never merged back, never split apart).

Target records carry their commit time as Kafka timestamp (and, without an explicit ``clock``, encoders
stamp their "now" fields with it too, so a conversion is deterministic). The source is held in memory
while it is read (records are grouped per partition to be read in offset order).

What each protocol carries, and so what a conversion loses, is in :mod:`pyticdc.routing.capability`.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from pyticdc.codec import canonical_protocol, codec_module
from pyticdc.codec.base import ClaimCheckStore
from pyticdc.codec.options import Clock, parse_options
from pyticdc.consumer.stream import ReadStats, decode_stream
from pyticdc.consumer.units import QuarantinedRecord
from pyticdc.model import Event, KafkaRecord
from pyticdc.routing.capability import conversion_notes
from pyticdc.routing.dispatch import DispatchRule
from pyticdc.routing.producer import DEFAULT_PARTITION_NUM, Router
from pyticdc.routing.stream import StreamClock, route_stream, with_bootstraps

__all__ = ["ConversionResult", "Converter", "convert_records"]


class ConversionResult(msgspec.Struct, kw_only=True):
    """Everything a conversion produced: target records, loss notes, bad source records, counters."""

    records: list[KafkaRecord]
    notes: list[str]
    quarantined: list[QuarantinedRecord]
    source_records: int = 0
    events: int = 0
    rows: int = 0
    ddls: int = 0
    watermarks: int = 0


class Converter:
    """Converts one changefeed's records from a source protocol to a target protocol (see module docstring)."""

    def __init__(
        self,
        source: str,
        target: str,
        *,
        source_options: Mapping[str, Any] | None = None,
        target_options: Mapping[str, Any] | None = None,
        default_topic: str,
        rules: Sequence[DispatchRule | Mapping[str, Any]] = (),
        partitions: int | Mapping[str, int] = DEFAULT_PARTITION_NUM,
        source_partitions: Mapping[str, int] | None = None,
        clock: Clock | None = None,
        source_claim_check: ClaimCheckStore | None = None,
        target_claim_check: ClaimCheckStore | None = None,
        final_watermark: bool | None = None,
    ) -> None:
        self.source = canonical_protocol(source)
        self.target = canonical_protocol(target)
        self.source_options = dict(source_options or {})
        self.target_options = dict(target_options or {})
        # Option errors now, with the protocol named, rather than at the first record.
        parse_options(self.source, codec_module(self.source).Decoder.OPTIONS, self.source_options)
        # Without an explicit clock, encoders read the commit time of what they encode ("now" of a replay).
        self._stream_clock = StreamClock()
        self.router = Router(self.target, self.target_options, default_topic=default_topic, rules=rules,
                             partitions=partitions, clock=clock or self._stream_clock, claim_check=target_claim_check)
        self.source_partitions = dict(source_partitions or {})
        self.source_claim_check = source_claim_check
        self.final_watermark = final_watermark
        #: What the conversion loses, one sentence each (say it before converting).
        self.notes = conversion_notes(self.source, self.target, self.source_options, self.target_options,
                                      final_watermark=final_watermark)
        self.stats = ReadStats()
        self.source_records = 0
        self.counts: collections.Counter[str] = collections.Counter()

    def source_events(self, records: Iterable[KafkaRecord], on_record: Callable[[], None] | None = None,
                      ) -> Iterator[Event]:
        """The source's events in apply order, with its watermarks (see :func:`decode_stream`)."""
        def counted() -> None:
            self.source_records += 1
            if on_record is not None:
                on_record()

        for event in decode_stream(records, self.source, self.source_options, partitions=self.source_partitions,
                                   claim_check=self.source_claim_check, final_watermark=self.final_watermark,
                                   stats=self.stats, on_record=counted):
            self.counts[event.kind] += 1
            yield event

    def convert(self, records: Iterable[KafkaRecord], on_record: Callable[[], None] | None = None,
                ) -> Iterator[KafkaRecord]:
        """Target records (offset -1, Kafka timestamp = commit time) in the order to produce them; streams."""
        events = self.source_events(records, on_record)
        if self.router.protocol == "simple":
            events = with_bootstraps(events)
        yield from route_stream(self.router, events, clock=self._stream_clock)

    @property
    def quarantined(self) -> list[QuarantinedRecord]:
        """Source records that did not decode (left out of the conversion)."""
        return self.stats.quarantined


def convert_records(
    records: Iterable[KafkaRecord],
    source: str,
    target: str,
    *,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    default_topic: str,
    rules: Sequence[DispatchRule | Mapping[str, Any]] = (),
    partitions: int | Mapping[str, int] = DEFAULT_PARTITION_NUM,
    source_partitions: Mapping[str, int] | None = None,
    clock: Clock | None = None,
    source_claim_check: ClaimCheckStore | None = None,
    target_claim_check: ClaimCheckStore | None = None,
    final_watermark: bool | None = None,
) -> ConversionResult:
    """Convert ``records`` of ``source`` into records of ``target`` in one call (see :class:`Converter`)."""
    converter = Converter(
        source, target, source_options=source_options, target_options=target_options, default_topic=default_topic,
        rules=rules, partitions=partitions, source_partitions=source_partitions, clock=clock,
        source_claim_check=source_claim_check, target_claim_check=target_claim_check,
        final_watermark=final_watermark,
    )
    out = list(converter.convert(records))
    return ConversionResult(
        records=out, notes=converter.notes, quarantined=converter.quarantined,
        source_records=converter.source_records, events=sum(converter.counts.values()),
        rows=converter.counts["row"], ddls=converter.counts["ddl"], watermarks=converter.counts["watermark"],
    )
