"""Event streams on their way to Kafka: Simple BOOTSTRAPs, moved timestamps, placed watermarks, a replay clock.

:func:`route_stream` routes events with the Kafka timestamps TiCDC would send them at; a
:class:`StreamClock` makes encoders stamp their "now" fields with the commit time of what they encode,
so a replay is deterministic. :func:`with_bootstraps` adds the BOOTSTRAP messages a Simple consumer needs
before a table's rows; :func:`retime` and :func:`place_watermarks` reshape a stream's commit times.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec

from pyticdc.model import Bootstrap, DDLEvent, Event, KafkaRecord, RowChange, TableInfo, Watermark
from pyticdc.routing.producer import Router

__all__ = [
    "SimpleBootstrapper",
    "StreamClock",
    "merge_watermarks",
    "place_watermarks",
    "retime",
    "route_stream",
    "watermark_marks",
    "with_bootstraps",
]


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
