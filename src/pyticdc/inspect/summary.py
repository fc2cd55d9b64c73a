"""A summary of a stream of TiCDC Kafka records: what a topic or capture holds, and what is wrong with it.

:class:`Inspector` reads records one at a time (each partition in offset order, with one decoder per
partition as a consumer would) and keeps:

* per table: rows by operation, first and last commit ts;
* per partition: records, offsets, bytes, events, the highest resolved ts and how far it trails the
  newest change of the whole stream (``lag_ms``), watermarks that went backwards (TiCDC restarts),
  rows that arrived at or below the partition's resolved ts (re-sends);
* the DDL timeline: each DDL once (TiCDC broadcasts it), with the partitions that carried it;
* bad records: topic, partition, offset and the decoder's reason;
* a time series for plotting: events per time bucket and watermark lag, per partition.

Time. A record's time is its Kafka timestamp when it has one: the watermark lag at a watermark record
is then that time minus the resolved ts's physical time, TiCDC's own definition of checkpoint lag
(now − checkpoint). A record without a timestamp (a capture that did not keep them) is placed at the
commit time of its events, and a watermark at the commit time of the first later change in its
partition: the lag is then how long the stream had moved on before the watermark said so.

Everything here is pure: records in, a :class:`StreamSummary` out (plus :func:`format_summary` text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from pyticdc.codec import PROTOCOLS, canonical_protocol, make_decoder
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.errors import DecodeError
from pyticdc.model import ActionType, Bootstrap, DDLEvent, KafkaRecord, RowChange, Watermark, physical_ms

__all__ = [
    "BadRecord",
    "DDLEntry",
    "Inspector",
    "LagPoint",
    "PartitionSummary",
    "StreamSummary",
    "TableSummary",
    "detect_protocol",
    "format_summary",
    "format_ts",
    "summarize",
]

# A buggy decoder may leak these on hostile bytes; one poison record must not stop an inspection.
_DECODER_BUGS: Final = (ValueError, TypeError, KeyError, IndexError, AttributeError, UnicodeError, OverflowError,
                        RecursionError)


class TableSummary(msgspec.Struct, kw_only=True):
    """Row changes of one table."""

    schema: str
    table: str
    insert: int = 0
    update: int = 0
    delete: int = 0
    first_commit_ts: int = 0
    last_commit_ts: int = 0

    @property
    def rows(self) -> int:
        """All row changes of the table."""
        return self.insert + self.update + self.delete


class PartitionSummary(msgspec.Struct, kw_only=True):
    """One topic partition: how much it holds and where its watermark is."""

    topic: str
    partition: int
    records: int = 0
    bytes: int = 0
    first_offset: int = -1
    last_offset: int = -1
    rows: int = 0
    ddls: int = 0
    watermarks: int = 0
    bootstraps: int = 0
    bad_records: int = 0
    #: Highest resolved ts received (0: none).
    resolved_ts: int = 0
    #: Newest commit ts of the whole stream minus this partition's resolved ts, in ms (0 when covered; None when
    #: the partition carried no watermark: there is nothing to measure from).
    lag_ms: int | None = 0
    #: Watermarks at or below an earlier one (re-sent checkpoints after a TiCDC restart).
    watermark_regressions: int = 0
    #: Rows or DDLs at or below the partition's resolved ts when they arrived (re-sends).
    late_events: int = 0
    #: Offsets skipped between consecutive records (compacted, deleted, or transaction markers).
    offset_gaps: int = 0


class DDLEntry(msgspec.Struct, kw_only=True):
    """One DDL of the timeline (broadcast copies merged)."""

    commit_ts: int
    query: str
    ddl_type: int
    schema: str = ""
    table: str = ""
    topic: str = ""
    #: Partitions that carried it, ascending.
    partitions: list[int] = msgspec.field(default_factory=list)
    #: Offset of its first copy (in the lowest partition that carried it).
    offset: int = -1


class BadRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A record that did not decode."""

    topic: str
    partition: int
    offset: int
    reason: str


class LagPoint(msgspec.Struct, frozen=True):
    """Watermark lag at one watermark record: (time ms, lag ms)."""

    time_ms: int
    lag_ms: int


class StreamSummary(msgspec.Struct, kw_only=True):
    """Everything :class:`Inspector` learned from a stream."""

    protocol: str
    records: int = 0
    bytes: int = 0
    rows: int = 0
    ddls: int = 0
    watermarks: int = 0
    bootstraps: int = 0
    min_commit_ts: int = 0
    max_commit_ts: int = 0
    tables: list[TableSummary] = msgspec.field(default_factory=list)
    partitions: list[PartitionSummary] = msgspec.field(default_factory=list)
    ddl_timeline: list[DDLEntry] = msgspec.field(default_factory=list)
    bad_records: list[BadRecord] = msgspec.field(default_factory=list)
    #: Bad records beyond those listed (``max_bad_records``).
    bad_records_omitted: int = 0
    #: Whether record times are Kafka timestamps (else partition clocks from commit ts).
    kafka_timestamps: bool = False
    #: Per "topic/partition": time bucket start (ms) → events in that bucket.
    events_over_time: dict[str, dict[int, int]] = msgspec.field(default_factory=dict)
    #: Per "topic/partition": watermark lag at each watermark record.
    lag_over_time: dict[str, list[LagPoint]] = msgspec.field(default_factory=dict)
    #: Width of the events_over_time buckets in ms.
    bucket_ms: int = 1000

    @property
    def global_resolved_ts(self) -> int:
        """The lowest resolved ts over all partitions (what a consumer could apply up to)."""
        return min((p.resolved_ts for p in self.partitions), default=0)

    def to_builtins(self) -> dict[str, Any]:
        """The summary as JSON-ready builtins (lag series as [time, lag] pairs)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        data["global_resolved_ts"] = self.global_resolved_ts
        return data


class _Partition:
    """Per-partition state while reading."""

    def __init__(self, summary: PartitionSummary, decoder: BaseDecoder) -> None:
        self.summary = summary
        self.decoder = decoder
        #: Highest physical ms of any commit or resolved ts seen here (the clock without Kafka timestamps).
        self.clock_ms = 0
        #: Resolved ts of timestamp-less watermarks waiting for the next change to place them in time.
        self.pending_lags: list[int] = []
        self.events: dict[int, int] = {}
        self.lags: list[LagPoint] = []


class Inspector:
    """Incremental inspection: ``add`` records (each partition in offset order), then ``summary()``."""

    def __init__(
        self, protocol: str, options: Mapping[str, Any] | None = None, *,
        claim_check: ClaimCheckStore | None = None, max_bad_records: int = 1000, bucket_ms: int | None = None,
    ) -> None:
        self.protocol = canonical_protocol(protocol)
        self.options = dict(options or {})
        self.claim_check = claim_check
        # Fails now on a bad option, not at the first record.
        make_decoder(self.protocol, self.options, claim_check=claim_check)
        self.max_bad_records = max_bad_records
        self.bucket_ms = bucket_ms
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._tables: dict[tuple[str, str], TableSummary] = {}
        self._ddls: dict[tuple[int, str], DDLEntry] = {}
        self._bad: list[BadRecord] = []
        self._bad_omitted = 0
        self._records = 0
        self._bytes = 0
        self._min_ts = 0
        self._max_ts = 0
        self._counts = {"row": 0, "ddl": 0, "watermark": 0, "bootstrap": 0}
        self._all_timestamps = True
        # (topic, partition, record time ms, rows) of every record, bucketed at the end when the span is known.
        self._samples: list[tuple[tuple[str, int], int, int]] = []

    def _partition(self, record: KafkaRecord) -> _Partition:
        tp = (record.topic, record.partition)
        state = self._partitions.get(tp)
        if state is None:
            state = self._partitions[tp] = _Partition(
                PartitionSummary(topic=record.topic, partition=record.partition),
                make_decoder(self.protocol, self.options, claim_check=self.claim_check),
            )
        return state

    def add_many(self, records: Iterable[KafkaRecord]) -> None:
        """Add records in order."""
        for record in records:
            self.add(record)

    def add(self, record: KafkaRecord) -> None:
        """Add one record (records of one partition must come in offset order)."""
        state = self._partition(record)
        part = state.summary
        size = len(record.key or b"") + len(record.value or b"")
        self._records += 1
        self._bytes += size
        part.records += 1
        part.bytes += size
        if record.offset >= 0:
            if part.last_offset >= 0 and record.offset > part.last_offset + 1:
                part.offset_gaps += 1
            if part.first_offset < 0:
                part.first_offset = record.offset
            part.last_offset = max(part.last_offset, record.offset)
        reason = ""
        events: list[Any] = []
        try:
            events = state.decoder.decode(record.value, record.key)
        except DecodeError as exc:
            reason = str(exc)
        except _DECODER_BUGS as exc:
            reason = f"{self.protocol}: decoder raised {type(exc).__name__}: {exc}"
        if reason:
            part.bad_records += 1
            if len(self._bad) < self.max_bad_records:
                self._bad.append(BadRecord(topic=record.topic, partition=record.partition, offset=record.offset,
                                           reason=reason))
            else:
                self._bad_omitted += 1
        rows = 0
        event_ms = 0
        for event in events:
            if isinstance(event, RowChange):
                rows += 1
                self._on_row(event, part)
                event_ms = max(event_ms, physical_ms(event.commit_ts))
            elif isinstance(event, DDLEvent):
                self._on_ddl(event, record, part)
                event_ms = max(event_ms, physical_ms(event.commit_ts))
            elif isinstance(event, Watermark):
                self._counts["watermark"] += 1
                part.watermarks += 1
                if event.resolved_ts <= part.resolved_ts:
                    part.watermark_regressions += 1
                else:
                    part.resolved_ts = event.resolved_ts
                if record.timestamp_ms > 0:
                    lag = record.timestamp_ms - physical_ms(event.resolved_ts)
                    state.lags.append(LagPoint(record.timestamp_ms, max(0, lag)))
                else:
                    state.pending_lags.append(event.resolved_ts)
            elif isinstance(event, Bootstrap):
                self._counts["bootstrap"] += 1
                part.bootstraps += 1
        if event_ms and state.pending_lags:
            # The stream moved past these watermarks now: that is when a reader without timestamps learns it.
            for resolved in state.pending_lags:
                state.lags.append(LagPoint(event_ms, max(0, event_ms - physical_ms(resolved))))
            state.pending_lags = []
        state.clock_ms = max(state.clock_ms, event_ms)
        if record.timestamp_ms <= 0:
            self._all_timestamps = False
        time_ms = record.timestamp_ms if record.timestamp_ms > 0 else (event_ms or state.clock_ms)
        if time_ms > 0:
            self._samples.append(((record.topic, record.partition), time_ms, rows))

    def add_unreadable(self, record: KafkaRecord, reason: str) -> None:
        """Add something read that is not a Kafka record at all (a malformed capture line) as a bad record."""
        if len(self._bad) < self.max_bad_records:
            self._bad.append(BadRecord(topic=record.topic, partition=record.partition, offset=record.offset,
                                       reason=reason))
        else:
            self._bad_omitted += 1

    def _on_row(self, row: RowChange, part: PartitionSummary) -> None:
        self._counts["row"] += 1
        part.rows += 1
        if row.commit_ts <= part.resolved_ts:
            part.late_events += 1
        key = (row.schema, row.table)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = TableSummary(schema=row.schema, table=row.table,
                                                     first_commit_ts=row.commit_ts, last_commit_ts=row.commit_ts)
        setattr(table, row.op.value, getattr(table, row.op.value) + 1)
        table.first_commit_ts = min(table.first_commit_ts, row.commit_ts)
        table.last_commit_ts = max(table.last_commit_ts, row.commit_ts)
        self._see_ts(row.commit_ts)

    def _on_ddl(self, ddl: DDLEvent, record: KafkaRecord, part: PartitionSummary) -> None:
        part.ddls += 1
        if ddl.commit_ts <= part.resolved_ts:
            part.late_events += 1
        self._see_ts(ddl.commit_ts)
        key = (ddl.commit_ts, ddl.query)
        entry = self._ddls.get(key)
        if entry is None:
            self._counts["ddl"] += 1
            entry = self._ddls[key] = DDLEntry(commit_ts=ddl.commit_ts, query=ddl.query, ddl_type=ddl.ddl_type,
                                               schema=ddl.schema, table=ddl.table, topic=record.topic,
                                               offset=record.offset)
        if record.partition not in entry.partitions:
            entry.partitions.append(record.partition)
            entry.partitions.sort()
            if record.partition == entry.partitions[0]:
                entry.offset = record.offset

    def _see_ts(self, ts: int) -> None:
        self._min_ts = ts if not self._min_ts else min(self._min_ts, ts)
        self._max_ts = max(self._max_ts, ts)

    def _bucket(self) -> int:
        if self.bucket_ms:
            return self.bucket_ms
        if not self._samples:
            return 1000
        times = [t for _, t, _ in self._samples]
        span = max(times) - min(times)
        # About 60 buckets over the span, at a round width, never under 10 ms.
        for width in (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, 300_000, 600_000,
                      1_800_000, 3_600_000):
            if span / width <= 60:
                return width
        return 3_600_000

    def summary(self) -> StreamSummary:
        """The summary of every record added so far."""
        newest_ms = physical_ms(self._max_ts) if self._max_ts else 0
        partitions = []
        lags: dict[str, list[LagPoint]] = {}
        for (topic, partition), state in sorted(self._partitions.items()):
            # Watermarks no later change followed: the stream ends there, so they trail nothing.
            tail = [LagPoint(max(state.clock_ms, physical_ms(r)), 0) for r in state.pending_lags]
            lags[f"{topic}/{partition}"] = [*state.lags, *tail]
            part = msgspec.structs.replace(state.summary)
            if not part.resolved_ts:
                part.lag_ms = None
            else:
                part.lag_ms = max(0, newest_ms - physical_ms(part.resolved_ts)) if self._max_ts else 0
            partitions.append(part)
        bucket = self._bucket()
        events: dict[str, dict[int, int]] = {f"{t}/{p}": {} for t, p in sorted(self._partitions)}
        for (topic, partition), time_ms, rows in self._samples:
            series = events[f"{topic}/{partition}"]
            start = time_ms - time_ms % bucket
            series[start] = series.get(start, 0) + rows
        return StreamSummary(
            protocol=self.protocol, records=self._records, bytes=self._bytes, rows=self._counts["row"],
            ddls=self._counts["ddl"], watermarks=self._counts["watermark"], bootstraps=self._counts["bootstrap"],
            min_commit_ts=self._min_ts, max_commit_ts=self._max_ts,
            tables=[msgspec.structs.replace(t) for _, t in sorted(self._tables.items())],
            partitions=partitions,
            ddl_timeline=sorted((msgspec.structs.replace(d, partitions=list(d.partitions))
                                 for d in self._ddls.values()), key=lambda d: (d.commit_ts, d.query)),
            bad_records=list(self._bad), bad_records_omitted=self._bad_omitted,
            kafka_timestamps=self._all_timestamps and self._records > 0,
            events_over_time={name: dict(sorted(series.items())) for name, series in events.items()},
            lag_over_time=lags,
            bucket_ms=bucket,
        )


def summarize(
    records: Iterable[KafkaRecord], protocol: str, options: Mapping[str, Any] | None = None, *,
    claim_check: ClaimCheckStore | None = None, max_bad_records: int = 1000, bucket_ms: int | None = None,
) -> StreamSummary:
    """Inspect ``records`` (each partition in offset order) in one call."""
    inspector = Inspector(protocol, options, claim_check=claim_check, max_bad_records=max_bad_records,
                          bucket_ms=bucket_ms)
    inspector.add_many(records)
    return inspector.summary()


def detect_protocol(records: Iterable[KafkaRecord], *, sample: int = 200) -> tuple[str, dict[str, Any]]:
    """The protocol (and options) that decodes most of the first ``sample`` records; ConfigError if none does.

    Tries every built protocol (Simple as JSON and as Avro), one decoder per partition. Canal-JSON and
    Debezium streams in which a watermark decodes get ``enable-tidb-extension=true`` (only the extension
    sends them). Ties go to the earlier protocol in TiCDC's list. Rows that name no table never
    count (decoders refuse them unless told a ``default-table``): no protocol is picked on them.
    """
    from pyticdc.errors import ConfigError

    head = []
    for record in records:
        head.append(record)
        if len(head) >= sample:
            break
    if not head:
        raise ConfigError("no records to detect the protocol from")
    candidates: list[tuple[str, dict[str, Any]]] = []
    for protocol in PROTOCOLS:
        candidates.append((protocol, {}))
        if protocol == "simple":
            candidates.append((protocol, {"encoding-format": "avro"}))
    best: tuple[int, int, str, dict[str, Any]] | None = None
    for rank, (protocol, options) in enumerate(candidates):
        decoders: dict[tuple[str, int], BaseDecoder] = {}
        decoded = 0
        watermarks = 0
        for record in head:
            tp = (record.topic, record.partition)
            decoder = decoders.get(tp)
            if decoder is None:
                decoder = decoders[tp] = make_decoder(protocol, options)
            try:
                events = decoder.decode(record.value, record.key)
            except (DecodeError, *_DECODER_BUGS):
                continue
            if any(isinstance(e, RowChange) and not e.table for e in events):
                continue  # a row of no table is a guess, not evidence of the protocol
            decoded += 1
            watermarks += sum(1 for e in events if isinstance(e, Watermark))
        if decoded and (best is None or decoded > best[0]):
            if protocol in ("canal-json", "debezium") and watermarks:
                options = {"enable-tidb-extension": True}
            best = (decoded, rank, protocol, options)
    if best is None:
        raise ConfigError(f"none of the protocols {', '.join(PROTOCOLS)} decodes these records")
    return best[2], best[3]


# --------------------------------------------------------------------------- text
def format_ts(ts: int) -> str:
    """A TSO with its physical time: ``462452314243072005 (2023-11-14 22:13:20.123 UTC)``."""
    import datetime

    if ts <= 0:
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(physical_ms(ts) / 1000, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ts)
    return f"{ts} ({moment.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]} UTC)"


def _ddl_name(code: int) -> str:
    try:
        return ActionType(code).name.lower()
    except ValueError:
        return str(code)


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return ["  " + line.rstrip() for line in lines]


def format_summary(summary: StreamSummary, *, max_ddls: int = 50, max_bad: int = 20) -> str:
    """The summary as text for a terminal."""
    out = [
        f"protocol {summary.protocol}: {summary.records} records, {summary.bytes} bytes; {summary.rows} row events "
        f"decoded (re-sends and duplicates included), {summary.ddls} DDL (broadcast copies once), "
        f"{summary.watermarks} watermark events (every partition's)"
        + (f", {summary.bootstraps} bootstraps" if summary.bootstraps else ""),
        f"commit ts  {format_ts(summary.min_commit_ts)} .. {format_ts(summary.max_commit_ts)}",
        f"resolved   {format_ts(summary.global_resolved_ts)} (lowest over all partitions)",
        "",
        "tables",
    ]
    out += _table(["table", "insert", "update", "delete", "first commit ts", "last commit ts"],
                  [[f"{t.schema}.{t.table}", str(t.insert), str(t.update), str(t.delete), str(t.first_commit_ts),
                    str(t.last_commit_ts)] for t in summary.tables]) if summary.tables else ["  (no row changes)"]
    out += ["", "partitions"]
    out += _table(
        ["partition", "records", "offsets", "rows", "ddl", "wm", "resolved ts", "lag ms", "wm back", "late", "bad"],
        [[f"{p.topic}/{p.partition}", str(p.records), f"{p.first_offset}..{p.last_offset}", str(p.rows),
          str(p.ddls), str(p.watermarks), str(p.resolved_ts), "no watermarks" if p.lag_ms is None else str(p.lag_ms),
          str(p.watermark_regressions),
          str(p.late_events), str(p.bad_records)] for p in summary.partitions],
    )
    if any(p.watermarks == 0 for p in summary.partitions):
        # Only Canal-JSON and Debezium send watermarks under an option; other protocols always send them.
        why = ("was the changefeed configured with enable-tidb-extension=true?"
               if summary.protocol in ("canal-json", "debezium") else
               "the stream may end before TiCDC's first resolved ts, or the partition is idle")
        out.append(f"  note: partitions without watermarks hold every consumer back ({why})")
    out += ["", f"DDL timeline ({len(summary.ddl_timeline)})"]
    for ddl in summary.ddl_timeline[:max_ddls]:
        parts = ",".join(map(str, ddl.partitions))
        query = ddl.query if len(ddl.query) <= 100 else ddl.query[:97] + "..."
        out.append(f"  {format_ts(ddl.commit_ts)}  {_ddl_name(ddl.ddl_type):<16} {ddl.topic}[{parts}]@{ddl.offset}  "
                   f"{query}")
    if len(summary.ddl_timeline) > max_ddls:
        out.append(f"  ... {len(summary.ddl_timeline) - max_ddls} more")
    bad_total = len(summary.bad_records) + summary.bad_records_omitted
    out += ["", f"bad records ({bad_total})"]
    for bad in summary.bad_records[:max_bad]:
        out.append(f"  {bad.topic}/{bad.partition}@{bad.offset}: {bad.reason}")
    if bad_total > max_bad:
        out.append(f"  ... {bad_total - min(max_bad, len(summary.bad_records))} more")
    return "\n".join(out)
