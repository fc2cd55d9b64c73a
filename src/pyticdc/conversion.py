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

Capabilities (what each protocol can carry; default options unless noted)

=============================  ========  ============  =========================  ==============================
protocol                       resolved  commit ts     schema on the wire         notes
=============================  ========  ============  =========================  ==============================
open-protocol                  yes       exact         names, type codes, flags   DDL: query + type only; UPDATE
                                                                                  pre-image only with
                                                                                  open-protocol.output-old-value
craft                          yes       exact         names, type codes, flags   DDL: query + type only; FLOAT
                                                                                  widened to float64
canal-json                     no        ms (es<<18)   MySQL type text, pkNames   with enable-tidb-extension:
                                                                                  resolved ts and exact commit ts;
                                                                                  DDL type from Canal's event type
canal-json + extension         yes       exact         MySQL type text, pkNames
debezium                       no        exact         Kafka Connect schema       DECIMAL as double (precision
                                                                                  beyond float64 is lost); DDL
                                                                                  actions Debezium lacks dropped
debezium + extension           yes       exact         Kafka Connect schema       resolved as op "m" messages
simple                         yes       exact         full table schema          rows carry no schema: a BOOTSTRAP
                                                       (BOOTSTRAP, DDL)           (synthesized here from whatever
                                                                                  schema the source carries) must
                                                                                  precede them
=============================  ========  ============  =========================  ==============================

Converting into a protocol that carries *more* than the source cannot invent what was lost: a Simple
BOOTSTRAP built from an Open source knows column names, type codes and flags but no lengths, charsets,
defaults or secondary indexes; a stream without resolved ts converted into one with them gets none
(or, with ``final_watermark``, a single one after the last event). :func:`conversion_notes` lists
these losses for a pair of protocols, so a caller can say so up front.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from pyticdc.codec import canonical_protocol
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.codec.options import Clock, parse_options
from pyticdc.consumer import Consumer, ConsumerStats, QuarantinedRecord
from pyticdc.model import (
    Bootstrap,
    DDLEvent,
    Event,
    KafkaRecord,
    RowChange,
    TableInfo,
    Watermark,
)
from pyticdc.routing import DEFAULT_PARTITION_NUM, DispatchRule, Router

__all__ = [
    "CAPABILITIES_TABLE",
    "SCHEMA_LEVELS",
    "Capability",
    "ConversionResult",
    "Converter",
    "SimpleBootstrapper",
    "StreamClock",
    "capability",
    "conversion_notes",
    "convert_records",
    "decode_stream",
    "merge_watermarks",
    "order_by_offsets",
    "partition_counts",
    "place_watermarks",
    "regroup_rows",
    "retime",
    "route_stream",
    "watermark_marks",
    "with_bootstraps",
]

#: How much table schema a protocol puts on the wire, least to most.
SCHEMA_LEVELS: Final = ("names", "type codes and flags", "mysql types", "full")
_NAMES, _FLAGS, _TYPES, _FULL = range(4)
#: Highest possible TSO, used to flush the consumer at the end of the input.
_MAX_TS: Final = (1 << 64) - 1


@dataclass(frozen=True)
class Capability:
    """What one protocol, with given options, carries through Kafka."""

    protocol: str
    #: Resolved ts / watermark messages are sent.
    watermarks: bool
    #: Commit ts is exact (else only its physical milliseconds survive).
    exact_commit_ts: bool
    #: Index into SCHEMA_LEVELS of the schema a decoder can rebuild.
    schema_level: int
    #: DDL carries the table schema after it (and before it).
    ddl_schema: bool
    #: UPDATE carries its pre-image.
    old_value: bool
    #: Protocol-specific losses, one sentence each.
    notes: tuple[str, ...] = ()

    @property
    def schema(self) -> str:
        """Human name of the schema level."""
        return SCHEMA_LEVELS[self.schema_level]


def _truthy(options: Mapping[str, Any], *names: str, default: bool = False) -> bool:
    for name in names:
        for spelling in (name, name.replace("-", "_")):
            if spelling in options:
                value = options[spelling]
                return value is True or (isinstance(value, str) and value.lower() == "true")
    return default


def capability(protocol: str, options: Mapping[str, Any] | None = None) -> Capability:
    """The capability of ``protocol`` with TiCDC-named ``options`` (see the module docstring table)."""
    protocol = canonical_protocol(protocol)
    options = dict(options or {})
    extension = _truthy(options, "enable-tidb-extension")
    only_updated = _truthy(options, "only-output-updated-columns", "content-compatible")
    delete_keys = _truthy(options, "delete-only-output-handle-key-columns")
    notes: list[str] = []
    if delete_keys:
        notes.append("DELETE carries only the handle-key columns (delete-only-output-handle-key-columns)")
    if protocol == "open-protocol":
        old = _truthy(options, "open-protocol.output-old-value", "open-output-old-value", default=True)
        notes.append("DDL carries its query and type only, no table schema")
        if not old:
            notes.append("UPDATE has no pre-image (open-protocol.output-old-value=false)")
        if only_updated:
            notes.append("the UPDATE pre-image keeps only changed columns (only-output-updated-columns)")
        return Capability(protocol, True, True, _FLAGS, False, old, tuple(notes))
    if protocol == "craft":
        notes.append("DDL carries its query and type only, no table schema")
        return Capability(protocol, True, True, _FLAGS, False, True, tuple(notes))
    if protocol == "canal-json":
        if not extension:
            notes.append("no resolved ts (TIDB_WATERMARK needs enable-tidb-extension)")
            notes.append("commit ts keeps only its physical milliseconds (es); transactions committed in "
                         "the same millisecond can no longer be told apart or ordered")
        notes.append("DDL carries Canal's event type, not TiDB's action type, and no table schema")
        notes.append("no table ids or row ids")
        return Capability(protocol, extension, extension, _TYPES, False, True, tuple(notes))
    if protocol == "debezium":
        old = _truthy(options, "debezium-output-old-value", default=True)
        no_schema = _truthy(options, "debezium-disable-schema")
        if not extension:
            notes.append("no resolved ts (op 'm' watermarks need enable-tidb-extension)")
        notes.append("DECIMAL is carried as a double: digits beyond float64 precision are lost")
        notes.append("DDL actions Debezium has no statement for are dropped")
        if not old:
            notes.append("UPDATE has no 'before' (debezium-output-old-value=false)")
        if no_schema:
            notes.append("no 'schema' part (debezium-disable-schema): column types are not on the wire")
        return Capability(protocol, extension, True, _NAMES if no_schema else _TYPES, True, old, tuple(notes))
    # simple
    notes.append("rows carry no schema: a consumer needs the table's BOOTSTRAP or DDL first")
    return Capability(protocol, True, True, _FULL, True, True, tuple(notes))


def _capability_rows() -> list[str]:
    rows = []
    for protocol, options in (("open-protocol", {}), ("craft", {}), ("canal-json", {}),
                              ("canal-json", {"enable-tidb-extension": True}), ("debezium", {}),
                              ("debezium", {"enable-tidb-extension": True}), ("simple", {})):
        cap = capability(protocol, options)
        name = protocol + (" + extension" if options else "")
        rows.append(f"{name:<24} resolved={'yes' if cap.watermarks else 'no':<3} "
                    f"commit_ts={'exact' if cap.exact_commit_ts else 'ms':<5} schema={cap.schema}")
    return rows


#: One line per protocol and extension setting: resolved ts, commit ts precision, schema level.
CAPABILITIES_TABLE: Final = "\n".join(_capability_rows())


def conversion_notes(
    source: str, target: str, source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None, *, final_watermark: bool | None = None,
) -> list[str]:
    """What converting ``source`` into ``target`` loses or has to make up, one sentence each (empty: nothing)."""
    src = capability(source, source_options)
    dst = capability(target, target_options)
    notes: list[str] = []
    if src.watermarks and not dst.watermarks:
        notes.append(f"{dst.protocol} carries no resolved ts with these options: every watermark is dropped "
                     "and a consumer can never know a point in time is complete (set enable-tidb-extension=true)")
    if not src.watermarks:
        synth = final_watermark is None or final_watermark
        notes.append(f"{src.protocol} carries no resolved ts with these options: the source is read to its end "
                     "before anything is released" + ("; one watermark at the last commit ts is added at the end"
                                                      if synth and dst.watermarks else ""))
    if src.exact_commit_ts and not dst.exact_commit_ts:
        notes.append(f"{dst.protocol} keeps only the physical milliseconds of commit ts: transactions committed in "
                     "one millisecond merge (set enable-tidb-extension=true)")
    if not src.exact_commit_ts and dst.exact_commit_ts:
        notes.append(f"{src.protocol} carried commit ts in milliseconds only: the target gets those truncated "
                     "values, not the original TSOs")
    if dst.schema_level > src.schema_level:
        made_up = "BOOTSTRAP messages and DDL schemas" if dst.protocol == "simple" else "column types"
        notes.append(f"{dst.protocol} carries more schema ({dst.schema}) than {src.protocol} ({src.schema}): "
                     f"its {made_up} are built from what the source has (no lengths, charsets, defaults "
                     "or secondary indexes unless the source carries them)")
    if dst.protocol == "simple" and src.protocol != "simple":
        notes.append("simple rows carry no schema: a BOOTSTRAP built from the source's schema is sent before the "
                     "first row of every table and after each schema change")
    if src.old_value and not dst.old_value:
        notes.append(f"{dst.protocol} UPDATE carries no pre-image with these options")
    if not src.old_value and dst.old_value:
        notes.append(f"{src.protocol} UPDATE had no pre-image: the target's UPDATE pre-image is missing too, and "
                     "an UPDATE that changed a key cannot be split into DELETE+INSERT")
    for note in dst.notes:
        if note not in src.notes and "DELETE carries only" not in note and not note.startswith("rows carry no"):
            notes.append(f"{dst.protocol}: {note}")
    if "DELETE carries only the handle-key columns (delete-only-output-handle-key-columns)" in src.notes:
        notes.append(f"{src.protocol} DELETE carried only handle-key columns: so does the target's")
    return notes


# --------------------------------------------------------------------------- reading the source
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


@dataclass
class _ReadStats:
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
    stats: _ReadStats | None = None,
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
    stats = stats if stats is not None else _ReadStats()
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


# --------------------------------------------------------------------------- writing the target
class SimpleBootstrapper:
    """Sends a Simple BOOTSTRAP before a table's first row and whenever the schema its rows carry changes.

    A source without schema versions (every protocol but Simple) gets one made up: the commit ts of the
    first row seen with that schema, so the target's rows name the exact BOOTSTRAP they were written under.
    """

    def __init__(self) -> None:
        # (schema, table) -> (columns of the last BOOTSTRAP, the versioned TableInfo sent).
        self._sent: dict[tuple[str, str], tuple[Any, TableInfo]] = {}

    def forget(self, ddl: DDLEvent) -> None:
        """A DDL changed a table: its next row gets a fresh BOOTSTRAP (unless the DDL carries the schema)."""
        for info in (ddl.pre_table_info, ddl.table_info):
            if info is not None:
                self._sent.pop((info.schema, info.table), None)
        self._sent.pop((ddl.schema, ddl.table), None)
        if ddl.table_info is not None and ddl.table_info.columns:
            info = ddl.table_info
            self._sent[(info.schema, info.table)] = (info.columns, info)

    def rows(self, row: RowChange) -> list[Event]:
        """The events to send for ``row``: maybe a BOOTSTRAP, then the row under its (versioned) schema."""
        info = row.table_info
        if info is None or not info.columns:
            return [row]
        key = (row.schema, row.table)
        sent = self._sent.get(key)
        if row.handle_key_only and sent is not None:
            return [msgspec.structs.replace(row, table_info=sent[1])]
        if sent is not None and sent[0] == info.columns:
            return [row if sent[1] is info else msgspec.structs.replace(row, table_info=sent[1])]
        versioned = info
        if not info.schema_version:
            versioned = msgspec.structs.replace(info, schema_version=row.commit_ts)
        self._sent[key] = (info.columns, versioned)
        return [Bootstrap(table_info=versioned), msgspec.structs.replace(row, table_info=versioned)]


def with_bootstraps(events: Iterable[Event], bootstrapper: SimpleBootstrapper | None = None) -> Iterator[Event]:
    """The events with a Simple BOOTSTRAP before each table's first row and after each schema change."""
    bootstrapper = bootstrapper or SimpleBootstrapper()
    for event in events:
        if isinstance(event, RowChange):
            yield from bootstrapper.rows(event)
        else:
            if isinstance(event, DDLEvent):
                bootstrapper.forget(event)
            yield event


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
        from pyticdc.codec import codec_module

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
        self.stats = _ReadStats()
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


# --------------------------------------------------------------------------- producing an event stream
def _event_ts(event: Event) -> int | None:
    """The TSO that places an event in commit order (None for BOOTSTRAP, which has none)."""
    if isinstance(event, (RowChange, DDLEvent)):
        return event.commit_ts
    if isinstance(event, Watermark):
        return event.resolved_ts
    return None


def _all_tsos(events: Sequence[Event]) -> set[int]:
    found: set[int] = set()

    def table(info: TableInfo | None) -> None:
        if info is not None and info.schema_version:
            found.add(info.schema_version)

    for event in events:
        if isinstance(event, RowChange):
            found.add(event.commit_ts)
            if event.schema_version:
                found.add(event.schema_version)
            table(event.table_info)
        elif isinstance(event, DDLEvent):
            found.add(event.commit_ts)
            if event.start_ts:
                found.add(event.start_ts)
            table(event.table_info)
            table(event.pre_table_info)
        elif isinstance(event, Watermark):
            found.add(event.resolved_ts)
        else:
            table(event.table_info)
    return found


def retime(events: Sequence[Event], *, start_ms: int | None = None, rate: float | None = None,
           ) -> tuple[list[Event], dict[int, int]]:
    """Move a stream's timestamps: first commit at ``start_ms``, ``rate`` transactions (commit ts) per second.

    Every TSO (commit, start and resolved ts, schema versions) is mapped by one order-preserving function,
    keeping each TSO's logical part, so the stream stays valid and schema versions still name their DDL.
    Gaps keep their relative sizes (bursts stay bursts). Returns the events and the old → new mapping.
    """
    if rate is not None and rate <= 0:
        raise ValueError(f"rate must be > 0 transactions per second, got {rate}")
    tsos = sorted(_all_tsos(events))
    if not tsos or (start_ms is None and rate is None):
        return list(events), {t: t for t in tsos}
    commits = sorted({e.commit_ts for e in events if isinstance(e, (RowChange, DDLEvent))})
    first_ms = tsos[0] >> 18
    scale = 1.0
    if rate is not None and len(commits) > 1:
        span_ms = max(1, (commits[-1] >> 18) - (commits[0] >> 18))
        scale = (len(commits) - 1) / rate * 1000 / span_ms
    origin = first_ms if start_ms is None else start_ms
    mapping: dict[int, int] = {}
    previous = -1
    for tso in tsos:
        physical = origin + round(((tso >> 18) - first_ms) * scale)
        new = max((physical << 18) | (tso & 0x3FFFF), previous + 1)
        mapping[tso] = previous = new
    tables: dict[int, tuple[TableInfo, TableInfo]] = {}

    def table(info: TableInfo | None) -> TableInfo | None:
        if info is None or not info.schema_version:
            return info
        hit = tables.get(id(info))
        if hit is None or hit[0] is not info:
            hit = tables[id(info)] = (info, msgspec.structs.replace(info, schema_version=mapping[info.schema_version]))
        return hit[1]

    out: list[Event] = []
    clock_ms = origin
    for event in events:
        if isinstance(event, RowChange):
            out.append(msgspec.structs.replace(
                event, commit_ts=mapping[event.commit_ts], table_info=table(event.table_info),
                schema_version=mapping[event.schema_version] if event.schema_version else 0))
            clock_ms = mapping[event.commit_ts] >> 18
        elif isinstance(event, DDLEvent):
            out.append(msgspec.structs.replace(
                event, commit_ts=mapping[event.commit_ts], start_ts=mapping[event.start_ts] if event.start_ts else 0,
                table_info=table(event.table_info), pre_table_info=table(event.pre_table_info)))
            clock_ms = mapping[event.commit_ts] >> 18
        elif isinstance(event, Watermark):
            out.append(Watermark(resolved_ts=mapping[event.resolved_ts]))
        else:
            info = table(event.table_info)
            assert info is not None
            out.append(Bootstrap(table_info=info, build_ts=clock_ms if event.build_ts else 0))
    return out, mapping


def watermark_marks(commit_ts: Iterable[int], interval_ms: int, *, max_per_gap: int = 1000) -> list[int]:
    """Resolved ts to send for changes committed at ``commit_ts``: one per ``interval_ms`` boundary, one at the end.

    Boundary ``b`` (ms) gets the resolved ts ``(b << 18) - 1``: every TSO of an earlier millisecond is below it,
    every TSO from ``b`` on above, so it is valid whatever else was committed. Boundaries are those the
    commit time crosses between two changes (an idle gap gets one per boundary, at most ``max_per_gap``,
    as TiCDC keeps advancing its resolved ts), and the last change's own ts ends the list. The result
    depends only on the set of commit times, so independent workers that know it agree.
    """
    if interval_ms <= 0:
        raise ValueError(f"interval_ms must be > 0, got {interval_ms}")
    last = 0
    buckets: set[int] = set()
    for ts in commit_ts:
        buckets.add((ts >> 18) // interval_ms)
        last = max(last, ts)
    marks: list[int] = []
    ordered = sorted(buckets)
    for previous, bucket in itertools.pairwise(ordered):
        first = max(previous + 1, bucket - max_per_gap + 1)
        marks.extend(((j * interval_ms) << 18) - 1 for j in range(first, bucket + 1))
    if last and (not marks or last > marks[-1]):
        marks.append(last)
    return marks


def merge_watermarks(events: Iterable[Event], marks: Sequence[int]) -> Iterator[Event]:
    """The events with their own watermarks replaced by ``marks``, each before the first change above it."""
    pending = collections.deque(sorted(marks))
    for event in events:
        if isinstance(event, Watermark):
            continue
        ts = _event_ts(event)
        if ts is not None:
            while pending and pending[0] < ts:
                yield Watermark(resolved_ts=pending.popleft())
        yield event
    while pending:
        yield Watermark(resolved_ts=pending.popleft())


def place_watermarks(events: Iterable[Event], interval_ms: int, *, max_per_gap: int = 1000) -> list[Event]:
    """The events (in commit-ts order) with a watermark every ``interval_ms`` of commit time and one at the end.

    See :func:`watermark_marks`; the events' own watermarks are dropped.
    """
    events = list(events)
    marks = watermark_marks((e.commit_ts for e in events if isinstance(e, (RowChange, DDLEvent))), interval_ms,
                            max_per_gap=max_per_gap)
    return list(merge_watermarks(events, marks))


class StreamClock:
    """A clock that reads the commit time of the stream being routed: give it to the Router as ``clock``.

    Encoders stamp some messages with "now" (Canal ``ts``, Simple ``buildTs``, Debezium ``ts_ms``);
    with this clock a replayed stream gets the time it was committed at, and the same input always gives
    the same bytes.
    """

    def __init__(self, now_ms: int = 0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def route_stream(router: Router, events: Iterable[Event], *, window_ms: int = 15,
                 clock: StreamClock | None = None) -> Iterator[KafkaRecord]:
    """Records for ``events`` with Kafka timestamps from a simulated clock (the commit time TiCDC sends at).

    Rows are routed in windows of ``window_ms`` commit time (TiCDC's worker batches rows for 15 ms), every
    other event alone. A record's timestamp is the clock when it is sent: a row's or DDL's commit time, a
    watermark's the commit time of the change that follows it (TiCDC learns a resolved ts only then).
    ``clock``, when given, is set to that time before each routing (the router's encoders read it).
    """
    clock_ms = 0

    def route(events: list[Event], stamp: int) -> Iterator[KafkaRecord]:
        if clock is not None:
            clock.now_ms = stamp
        for record in router.route(events):
            yield msgspec.structs.replace(record, timestamp_ms=stamp)
    window: list[RowChange] = []
    window_start = 0
    held: list[Event] = []  # watermarks waiting for the next change to set their time

    def flush_window() -> Iterator[KafkaRecord]:
        nonlocal window
        if window:
            yield from route(list(window), max(clock_ms, window[-1].commit_ts >> 18))
            window = []

    def flush_held(now_ms: int) -> Iterator[KafkaRecord]:
        nonlocal held, clock_ms
        for event in held:
            clock_ms = max(clock_ms, now_ms)
            yield from route([event], clock_ms)
        held = []

    for event in events:
        ts = _event_ts(event)
        if isinstance(event, RowChange):
            physical = event.commit_ts >> 18
            if window and physical - window_start > window_ms:
                yield from flush_window()
            yield from flush_held(physical)
            if not window:
                window_start = physical
            window.append(event)
            clock_ms = max(clock_ms, physical)
            continue
        yield from flush_window()
        if isinstance(event, Watermark) or (held and ts is None):
            held.append(event)  # a BOOTSTRAP after a held watermark keeps its place behind it
            continue
        if ts is not None:
            yield from flush_held(ts >> 18)
            clock_ms = max(clock_ms, ts >> 18)
        yield from route([event], clock_ms)
    yield from flush_window()
    # The last watermarks: nothing follows, so they are sent at their own time.
    yield from flush_held(max([clock_ms, *((_event_ts(e) or 0) >> 18 for e in held)]))
