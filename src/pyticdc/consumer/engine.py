"""The consumer engine: Kafka records of any protocol in, ordered apply units out (see package docstring)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from pyticdc.codec import canonical_protocol, make_decoder
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.consumer.batch_mode import BATCH, CONSISTENCIES, WATERMARK, ResendMarks, batch_order
from pyticdc.consumer.identity import OP_RANK, change_identity
from pyticdc.consumer.schemas import SchemaCache
from pyticdc.consumer.state import BufferedRow, ConsumerState, DDLBlobs, TableRegistry, decode_state, encode_state
from pyticdc.consumer.units import ApplyUnit, ConsumerStats, QuarantinedRecord, UnitKind
from pyticdc.errors import ConfigError, DecodeError
from pyticdc.model import Bootstrap, DDLEvent, Event, KafkaRecord, RowChange, TableInfo, Watermark

__all__ = ["Consumer", "RecordLike", "RowResolver", "carries_watermarks"]

#: A Kafka record: a KafkaRecord or a ``(topic, partition, offset, key, value)`` tuple.
RecordLike = KafkaRecord | tuple[str, int, int, bytes | None, bytes | None]
#: Converts a row decoded without its schema (string values) with the schema it was written under.
RowResolver = Callable[[RowChange, TableInfo], RowChange]

TopicPartition = tuple[str, int]
_DDLKey = tuple[int, str]

#: Protocols that send watermarks only with ``enable-tidb-extension`` (reference §7).
_EXTENSION_WATERMARKS = frozenset({"canal-json", "debezium"})
#: Protocols whose DDL TiCDC sends to partition 0 only (reference §1.4): no barrier across partitions.
_DDL_PARTITION_ZERO = frozenset({"canal-json"})
#: Exceptions a buggy decoder may leak on hostile bytes; a poison record must not stop the consumer.
_DECODER_BUGS = (ValueError, TypeError, KeyError, IndexError, AttributeError, UnicodeError, OverflowError,
                 RecursionError)


class _Unreadable(Exception):
    """A held row did not fit its schema (already quarantined)."""


def _simple_resolver() -> RowResolver | None:
    # Imported lazily: the Simple codec is optional for every other protocol.
    try:
        from pyticdc.codec import simple
    except ImportError:
        return None
    resolver: RowResolver | None = getattr(simple, "resolve_row", None)
    return resolver


def carries_watermarks(protocol: str, options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``protocol`` records written with these codec options carry watermarks (ConfigError for bad options)."""
    canonical = canonical_protocol(protocol)
    decoder = make_decoder(canonical, options)
    return canonical not in _EXTENSION_WATERMARKS or bool(getattr(decoder.options, "enable_tidb_extension", False))


def _record_fields(record: RecordLike) -> tuple[str, int, int, bytes | None, bytes | None]:
    if isinstance(record, KafkaRecord):
        return record.topic, record.partition, record.offset, record.key, record.value
    topic, partition, offset, key, value = record
    return topic, partition, offset, key, value


class Consumer:
    """Consumes one changefeed's Kafka records and releases them as ordered, de-duplicated apply units.

    ``partitions`` maps every subscribed topic to its partition count: the global watermark is the
    minimum resolved ts over all of them. Resume after a crash with ``state=`` the state stored with
    the last applied unit, call :meth:`release`, then feed each partition from :meth:`next_offsets`
    (earlier offsets are skipped anyway). ``unit_states=False``: units carry no state (``b""``), for a
    caller that stores :meth:`state` itself once it has applied every unit it was given (the replica
    pipeline does, per batch); it spares encoding the whole state for each unit.

    ``consistency="batch"`` consumes a changefeed without watermarks (see :mod:`pyticdc.consumer.batch_mode`):
    nothing is released while records are consumed, :meth:`flush` releases everything read; the default
    ``"watermark"`` refuses such a changefeed.
    """

    def __init__(
        self,
        protocol: str,
        options: Mapping[str, Any] | None = None,
        *,
        partitions: Mapping[str, int],
        state: bytes | None = None,
        decoder: BaseDecoder | None = None,
        claim_check: ClaimCheckStore | None = None,
        resolve_row: RowResolver | None = None,
        max_unit_rows: int | None = None,
        compact_state: bool = False,
        unit_states: bool = True,
        consistency: str = WATERMARK,
    ) -> None:
        if consistency not in CONSISTENCIES:
            raise ConfigError(f"unknown consistency {consistency!r}: one of {', '.join(CONSISTENCIES)}")
        #: ``watermark`` or ``batch`` (released at :meth:`flush`).
        self.consistency = consistency
        self._batch = consistency == BATCH
        self._flushing = False
        if decoder is None:
            self.protocol = canonical_protocol(protocol)
            # The engine holds Simple rows of an unknown schema itself (in its serialisable state),
            # so the decoder must hand them over untyped instead of holding them in memory.
            extra = {"hold_unknown_schema": False} if self.protocol == "simple" else {}
            decoder = make_decoder(self.protocol, options, claim_check=claim_check, **extra)
            if not self._batch:
                self._check_watermarks(decoder)
        else:
            self.protocol = protocol
        self._decoder = decoder
        if resolve_row is None and self.protocol == "simple":
            resolve_row = _simple_resolver()
        self._resolve_row = resolve_row
        if max_unit_rows is not None and max_unit_rows < 1:
            raise ConfigError(f"max_unit_rows must be >= 1, got {max_unit_rows}")
        self._max_unit_rows = max_unit_rows
        self._unit_states = unit_states
        subscription: list[TopicPartition] = []
        for topic, count in partitions.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ConfigError(f"partition count of topic {topic!r} must be an integer >= 1, got {count!r}")
            subscription.extend((topic, p) for p in range(count))
        restored = decode_state(state) if state is not None else None
        if restored is not None and restored.protocol != self.protocol:
            raise ConfigError(f"state belongs to a {restored.protocol!r} consumer, not {self.protocol!r}")
        if restored is not None and restored.compact != compact_state:
            raise ConfigError(f"state is {'compact' if restored.compact else 'full'}: resume with "
                              f"compact_state={restored.compact}")
        self._compact = compact_state
        old = restored or ConsumerState(protocol=self.protocol, next_offsets={}, resolved={})
        self._next_offsets = {where: old.next_offsets.get(where, 0) for where in subscription}
        self._resolved = {where: old.resolved.get(where, 0) for where in subscription}
        self._released_ts = old.released_ts
        self._next_seq = old.next_seq
        self._registry = TableRegistry()
        self._ddl_blobs = DDLBlobs()
        for ref, info in old.tables.items():
            self._registry.add(ref, info)
        self._rows: dict[Hashable, BufferedRow] = {}
        for buffered in old.rows:
            buffered.identity = self._row_key(buffered)
            self._rows[buffered.identity] = buffered
        self._marks = ResendMarks(old.resend_marks)
        # Batch consistency: DDL keys released at the released ts (a lagging partition's copy comes later).
        self._released_ddls: set[_DDLKey] = {(ts, query) for ts, query in old.released_ddls}
        self._ddl_seq: dict[_DDLKey, int] = {}
        # Batch consistency: the partitions each buffered DDL has reached (it waits for all: a DDL is a barrier).
        self._ddl_copies: dict[_DDLKey, set[TopicPartition]] = {
            (ts, query): {(topic, partition) for topic, partition in copies} for ts, query, copies in old.ddl_copies}
        self._ddls: dict[_DDLKey, DDLEvent] = {(d.commit_ts, d.query): d for d in old.ddls}
        self._schemas = SchemaCache.from_builtins(old.schemas)
        self.stats: ConsumerStats = old.stats
        self._waiting = sum(1 for b in old.rows if not b.resolved)
        self._quarantine: list[QuarantinedRecord] = []
        self._quarantine_marks = {where: old.quarantine_marks.get(where, 0) for where in subscription}
        self._last_inband: TableInfo | None = None
        # (topic, partition, offset, resolved ts before it) of the record being consumed, and of each DDL.
        self._origin: tuple[str, int, int, int] = ("", -1, -1, 0)
        # Key, value and Kafka timestamp of the record being consumed (kept by rows held for their schema).
        self._raw: tuple[bytes | None, bytes | None, int] = (None, None, 0)
        self._ddl_origins: dict[_DDLKey, tuple[str, int, int, int]] = {}

    def _check_watermarks(self, decoder: BaseDecoder) -> None:
        options = decoder.options
        if self.protocol in _EXTENSION_WATERMARKS and not getattr(options, "enable_tidb_extension", False):
            # Canal-JSON also loses its exact commit ts without the extension; Debezium keeps it.
            no_ts = " (and no exact commit ts)" if self.protocol == "canal-json" else ""
            raise ConfigError(
                f"{self.protocol} without enable-tidb-extension carries no watermarks{no_ts}: nothing could ever "
                "be known complete; configure the changefeed with enable-tidb-extension=true"
            )

    # ------------------------------------------------------------------ introspection
    @property
    def watermark(self) -> int:
        """The global watermark: the minimum resolved ts over every subscribed partition."""
        # No partition yet (a capture holding only lines that are no record): nothing is complete.
        return min(self._resolved.values(), default=0)

    @property
    def released_ts(self) -> int:
        """Every change committed at or before this ts has been released in an apply unit."""
        return self._released_ts

    def partition_watermarks(self) -> dict[TopicPartition, int]:
        """The resolved ts of each subscribed partition (0 before its first watermark)."""
        return dict(self._resolved)

    def next_offsets(self) -> dict[TopicPartition, int]:
        """The offset each subscribed partition should be read from next."""
        return dict(self._next_offsets)

    @property
    def pending_rows(self) -> int:
        """Rows buffered above the released watermark."""
        return len(self._rows)

    @property
    def pending_ddls(self) -> int:
        """DDLs buffered above the released watermark."""
        return len(self._ddls)

    @property
    def schemas(self) -> SchemaCache:
        """The schema cache (read it, do not change it)."""
        return self._schemas

    def state(self) -> bytes:
        """The state to store once every unit returned so far has been applied."""
        if self._compact:
            return self._compact_state()
        return encode_state(ConsumerState(
            protocol=self.protocol, next_offsets=self._next_offsets, resolved=self._resolved,
            released_ts=self._released_ts, next_seq=self._next_seq, rows=list(self._rows.values()),
            ddls=list(self._ddls.values()), schemas=self._schemas.to_builtins(), stats=self.stats,
            quarantine_marks=self._quarantine_marks, resend_marks=self._marks.to_builtins(),
            released_ddls=sorted(self._released_ddls), ddl_copies=self._ddl_copies_builtins(),
        ), self._registry, self._ddl_blobs)

    def _ddl_copies_builtins(self) -> list[tuple[int, str, list[tuple[str, int]]]]:
        return [(ts, query, sorted(copies)) for (ts, query), copies in sorted(self._ddl_copies.items())
                if (ts, query) in self._ddls]

    def _compact_state(self) -> bytes:
        # Instead of the buffered rows and DDLs, where to read them again: per partition the earliest
        # record that gave something still buffered, with the resolved ts the partition had before it.
        offsets = dict(self._next_offsets)
        resolved = dict(self._resolved)
        origins = [b.origin for b in self._rows.values()] + list(self._ddl_origins.values())
        for origin in origins:
            assert origin is not None
            topic, partition, offset, before = origin
            topic_partition = (topic, partition)
            if offset < offsets[topic_partition]:
                offsets[topic_partition], resolved[topic_partition] = offset, before
        return encode_state(ConsumerState(
            protocol=self.protocol, next_offsets=offsets, resolved=resolved, released_ts=self._released_ts,
            next_seq=self._next_seq, schemas=self._schemas.to_builtins(), stats=self.stats,
            quarantine_marks=self._quarantine_marks, compact=True, resend_marks=self._marks.to_builtins(),
            released_ddls=sorted(self._released_ddls),
        ))

    # ------------------------------------------------------------------ input
    def consume_many(self, records: Iterable[RecordLike]) -> list[ApplyUnit]:
        """Consume records in order; the apply units they release, in apply order."""
        units: list[ApplyUnit] = []
        for record in records:
            units.extend(self.consume(record))
        return units

    def consume(self, record: RecordLike) -> list[ApplyUnit]:
        """Consume one Kafka record; the apply units it releases, in apply order."""
        topic, partition, offset, key, value = _record_fields(record)
        topic_partition = (topic, partition)
        expected = self._next_offsets.get(topic_partition)
        if expected is None:
            raise ConfigError(f"record from {topic}[{partition}], which this consumer does not subscribe to")
        self.stats.records += 1
        if offset < expected:
            self.stats.skipped_offsets += 1
            return []
        self._next_offsets[topic_partition] = offset + 1
        self._origin = (topic, partition, offset, self._resolved[topic_partition])
        self._raw = (key, value, record.timestamp_ms if isinstance(record, KafkaRecord) else 0)
        reason = ""
        events: list[Event] = []
        try:
            events = self._decoder.decode(value, key)
        except DecodeError as exc:
            reason = str(exc)
        except _DECODER_BUGS as exc:
            reason = f"decoder raised {type(exc).__name__}: {exc}"
        if not reason and any(isinstance(e, RowChange) and (not e.table or e.commit_ts <= 0) for e in events):
            # Whatever a lenient decoder made of it, a row of no table or no commit ts cannot be applied, and
            # judged against the watermark it would vanish as a "replay": it is a record read with the wrong
            # protocol (or a foreign message), so the whole record is quarantined where the user sees it.
            reason = (f"{self.protocol}: a row naming no table or no commit ts is not a change (is the protocol "
                      "right?)")
            events = []
        if reason and offset >= self._quarantine_marks[topic_partition]:
            # The mark keeps a record re-read after a compact-state resume from being quarantined twice.
            self._quarantine_marks[topic_partition] = offset + 1
            self._quarantine.append(QuarantinedRecord(
                topic=topic, partition=partition, offset=offset, protocol=self.protocol, reason=reason,
                key=key, value=value, kafka_timestamp=record.timestamp_ms if isinstance(record, KafkaRecord) else 0,
            ))
        for event in events:
            self._on_event(event, topic_partition, offset)
        return self.release()

    def _on_event(self, event: Event, topic_partition: TopicPartition, offset: int) -> None:
        self.stats.events += 1
        if isinstance(event, RowChange):
            self._on_row(event, topic_partition, offset)
        elif isinstance(event, Watermark):
            if event.resolved_ts > self._resolved[topic_partition]:
                self._resolved[topic_partition] = event.resolved_ts
                self.stats.watermarks += 1
            else:
                # A TiCDC restart re-sends older checkpoints: resolved ts never goes back here.
                self.stats.watermarks_stale += 1
        elif isinstance(event, DDLEvent):
            self._on_ddl(event, topic_partition)
        elif isinstance(event, Bootstrap):
            self.stats.bootstraps += 1
            self._resolve_waiting(self._schemas.learn_bootstrap(event))
        else:
            raise TypeError(f"decoder returned a non-event {type(event).__name__}")

    def _row_key(self, buffered: BufferedRow) -> Hashable:
        # Batch consistency tells re-sends apart before buffering (ResendMarks): several changes of one key
        # within one millisecond share an identity, so each buffered row is its own entry.
        identity = change_identity(buffered.row)
        return (identity, buffered.seq) if self._batch else identity

    def _on_row(self, row: RowChange, topic_partition: TopicPartition, offset: int) -> None:
        if self._batch:
            if self._marks.is_resend(topic_partition[0], topic_partition[1], row):
                self.stats.rows_replayed += 1
                return
        elif row.commit_ts <= self._resolved[topic_partition] or row.commit_ts <= self._released_ts:
            # This partition promised every change <= its resolved ts was sent before that watermark:
            # the row was buffered then, and this is a re-send from an older checkpoint. (Everything at or
            # below the released ts is applied: a compact-state resume re-reads such rows.)
            self.stats.rows_replayed += 1
            return
        buffered = BufferedRow(seq=self._next_seq, row=row, origin=self._origin)
        self._next_seq += 1
        info = row.table_info
        if info is not None and info.schema_version and info.columns and info is not self._last_inband:
            # An in-band schema with a real version (a typed Simple row) is as good as a BOOTSTRAP.
            self._last_inband = info
            self._schemas.learn(info, info.schema_version)
        if self._needs_schema(row):
            buffered.raw = self._raw  # kept only while the row waits for its schema
            try:
                resolved = self._resolve(buffered)
            except _Unreadable:
                return
            if resolved is None:
                buffered.resolved = False
            else:
                buffered.raw = None
                buffered.row = resolved
        identity = self._row_key(buffered)
        if identity in self._rows:
            self.stats.rows_duplicate += 1
            return
        buffered.identity = identity
        self._rows[identity] = buffered
        if not buffered.resolved:
            self._waiting += 1
            self.stats.rows_awaiting_schema += 1
        self.stats.rows_buffered += 1

    def _on_ddl(self, ddl: DDLEvent, topic_partition: TopicPartition) -> None:
        key = (ddl.commit_ts, ddl.query)
        if self._batch:
            # A DDL reaches every partition before that partition's later rows, so a first copy is never below
            # the released ts; at it, only a copy of one already released is a replay.
            replayed = ddl.commit_ts < self._released_ts or key in self._released_ddls
        else:
            replayed = ddl.commit_ts <= self._resolved[topic_partition] or ddl.commit_ts <= self._released_ts
        if replayed:
            self.stats.ddls_replayed += 1
            return
        if self._batch and self.protocol not in _DDL_PARTITION_ZERO:
            self._ddl_copies.setdefault(key, set()).add(topic_partition)
        if key in self._ddls:
            # Broadcast to every partition (and re-sent): executed once.
            self.stats.ddls_duplicate += 1
            return
        self._ddls[key] = ddl
        self._ddl_seq[key] = self._next_seq
        self._next_seq += 1
        self._ddl_origins[key] = self._origin
        self.stats.ddls_buffered += 1
        self._resolve_waiting(self._schemas.learn_ddl(ddl))

    # ------------------------------------------------------------------ schemas
    def _needs_schema(self, row: RowChange) -> bool:
        return self._resolve_row is not None and (row.table_info is None or not row.table_info.columns)

    def _resolve(self, buffered: BufferedRow) -> RowChange | None:
        """The row read with its schema; None while the schema is unknown; raises _Unreadable."""
        row = buffered.row
        version = row.schema_version or (row.table_info.schema_version if row.table_info is not None else 0)
        info = self._schemas.lookup(row.schema, row.table, row.commit_ts, version)
        if info is None or self._resolve_row is None:
            return None
        try:
            resolved = self._resolve_row(row, info)
        except (DecodeError, *_DECODER_BUGS) as exc:
            # The values do not fit the schema they claim: quarantine rather than apply a guess.
            self._quarantine_held(buffered, f"row {row.schema}.{row.table}@{row.commit_ts} unreadable with "
                                            f"schema version {info.schema_version}: {exc}")
            raise _Unreadable from exc
        self.stats.rows_schema_resolved += 1
        return resolved

    def _resolve_waiting(self, tables: set[tuple[str, str]]) -> None:
        if not tables or not self._waiting:
            return
        for identity, buffered in list(self._rows.items()):
            if buffered.resolved or (buffered.row.schema, buffered.row.table) not in tables:
                continue
            try:
                resolved = self._resolve(buffered)
            except _Unreadable:
                del self._rows[identity]
                self._waiting -= 1
                continue
            if resolved is None:
                continue
            del self._rows[identity]
            self._waiting -= 1
            buffered.row, buffered.resolved, buffered.blob, buffered.raw = resolved, True, None, None
            # Re-key: the identity of a resolved row uses its handle, not the whole string image.
            new_identity = change_identity(resolved)
            if new_identity in self._rows:
                self.stats.rows_duplicate += 1
                continue
            buffered.identity = new_identity
            self._rows[new_identity] = buffered

    def _quarantine_held(self, buffered: BufferedRow, reason: str) -> None:
        """Quarantine the record of a row that cannot be applied, with its place and bytes when known.

        A row held for its schema keeps its record's bytes; one restored from a saved state has neither
        place nor bytes (the state holds the decoded row only).
        """
        origin = buffered.origin or ("", -1, -1, 0)
        key, value, timestamp = buffered.raw or (None, None, 0)
        self._quarantine.append(QuarantinedRecord(
            topic=origin[0], partition=origin[1], offset=origin[2], protocol=self.protocol, reason=reason,
            key=key, value=value, kafka_timestamp=timestamp,
        ))

    def _unreadable(self, buffered: BufferedRow) -> bool:
        # Held rows whose table's oldest known schema is newer than the row: that version will never
        # come again (BOOTSTRAP always carries the current schema), so waiting would block forever.
        row = buffered.row
        newest = self._schemas.newest_valid_from(row.schema, row.table)
        return newest is not None and newest > row.commit_ts

    # ------------------------------------------------------------------ output
    def release(self) -> list[ApplyUnit]:
        """Apply units for everything the global watermark now covers (call after resuming from state)."""
        units: list[ApplyUnit] = []
        if self._quarantine:
            quarantined, self._quarantine = tuple(self._quarantine), []
            self.stats.quarantined += len(quarantined)
            units.append(self._emit("quarantine", quarantined=quarantined, consistent_ts=self._released_ts))
        if self._batch and not self._flushing:
            return units
        watermark = self._read_up_to() if self._batch else self.watermark
        # Batch consistency: a partition read behind the others, or a change in the released millisecond, is
        # at or below the released ts and still new.
        pending = self._batch and bool(self._rows or self._ddls)
        if watermark <= self._released_ts and not pending:
            return units
        limit = watermark
        if self._batch:
            limit = self._ddl_barrier(limit)
        if self._waiting:
            limit = self._hold_for_schemas(watermark, units)
        if limit <= self._released_ts and not pending:
            return units
        batch_mode = self._batch
        # Batch consistency: commit ts in milliseconds may be shared by several changes of one key, whose
        # order is their arrival order (one partition per key), not the operation rank of one transaction.
        rows = sorted(
            (b for b in self._rows.values() if b.row.commit_ts <= limit),
            key=lambda b: (b.row.commit_ts, 0 if batch_mode else OP_RANK[b.row.op], b.seq),
        )
        ddls = sorted((d for d in self._ddls.values() if d.commit_ts <= limit),
                      key=lambda d: (d.commit_ts, self._ddl_seq.get((d.commit_ts, d.query), 0)))
        # Rows at a DDL's commit ts go before it (the Go consumer flushes rows <= ddl.commitTs first); in batch
        # consistency, in read order with the rules of one millisecond (batch_order).
        merged: list[tuple[int, int, BufferedRow | DDLEvent]] = batch_order(rows, ddls, self._ddl_seq) if batch_mode \
            else list(heapq.merge(((b.row.commit_ts, 0, b) for b in rows), ((d.commit_ts, 1, d) for d in ddls),
                                  key=lambda item: (item[0], item[1])))
        released_any = False
        batch: list[BufferedRow] = []
        for at, (commit_ts, _, item) in enumerate(merged):
            if isinstance(item, BufferedRow):
                if (self._max_unit_rows is not None and len(batch) >= self._max_unit_rows
                        and batch[-1].row.commit_ts < commit_ts):
                    units.append(self._emit_rows(batch, batch[-1].row.commit_ts))
                    batch = []
                batch.append(item)
                continue
            if batch:
                units.append(self._emit_rows(batch, max(batch[-1].row.commit_ts, commit_ts - 1)))
                batch = []
            del self._ddls[(item.commit_ts, item.query)]
            self._ddl_origins.pop((item.commit_ts, item.query), None)
            self._ddl_seq.pop((item.commit_ts, item.query), None)
            self._ddl_copies.pop((item.commit_ts, item.query), None)
            if batch_mode:
                if item.commit_ts > max((k[0] for k in self._released_ddls), default=0):
                    self._released_ddls.clear()
                self._released_ddls.add((item.commit_ts, item.query))
            self._ddl_blobs.forget(item)
            self.stats.ddls_released += 1
            # The last item of the release leaves the replica consistent at the whole limit.
            units.append(self._emit("ddl", ddl=item, consistent_ts=limit if at == len(merged) - 1 else commit_ts))
            released_any = True
        if batch:
            units.append(self._emit_rows(batch, limit))
            released_any = True
        if not released_any or units[-1].consistent_ts < limit:
            units.append(self._emit("checkpoint", consistent_ts=limit))
        return units

    def flush(self) -> list[ApplyUnit]:
        """Batch consistency: release everything read so far (call at the end of a batch); the units, in order."""
        if not self._batch:
            return self.release()
        self._flushing = True
        try:
            return self.release()
        finally:
            self._flushing = False

    def _ddl_barrier(self, limit: int) -> int:
        # TiCDC sends a DDL to every partition after that partition's earlier changes: until each partition
        # has delivered it, one may still hold changes before it, so nothing at or after it is released.
        subscribed = len(self._next_offsets)
        for (commit_ts, query), copies in self._ddl_copies.items():
            if (commit_ts, query) in self._ddls and len(copies) < subscribed:
                limit = min(limit, commit_ts - 1)
        return limit

    def _read_up_to(self) -> int:
        # Batch consistency releases up to the newest change read (nothing newer can be known yet).
        newest = max((b.row.commit_ts for b in self._rows.values()), default=0)
        return max(newest, max((k[0] for k in self._ddls), default=0), self._released_ts)

    def _hold_for_schemas(self, watermark: int, units: list[ApplyUnit]) -> int:
        limit = watermark
        for identity, buffered in list(self._rows.items()):
            if buffered.resolved or buffered.row.commit_ts > watermark:
                continue
            if self._unreadable(buffered):
                row = buffered.row
                del self._rows[identity]
                self._waiting -= 1
                self._quarantine_held(buffered, f"row {row.schema}.{row.table}@{row.commit_ts}: its schema "
                                                "version was never delivered (only newer ones)")
                continue
            limit = min(limit, buffered.row.commit_ts - 1)
        if self._quarantine:
            quarantined, self._quarantine = tuple(self._quarantine), []
            self.stats.quarantined += len(quarantined)
            units.append(self._emit("quarantine", quarantined=quarantined, consistent_ts=self._released_ts))
        return limit

    def _emit_rows(self, batch: list[BufferedRow], consistent_ts: int) -> ApplyUnit:
        for buffered in batch:
            del self._rows[buffered.identity]
        self.stats.rows_released += len(batch)
        if len(self._registry) > 2 * len(self._rows) + 64:
            # Decoders build a schema per message: keep only those buffered rows still use.
            self._registry.retain({b.table_ref for b in self._rows.values()})
        origins = tuple((b.origin[0], b.origin[1], b.origin[2]) if b.origin is not None else ("", -1, -1)
                        for b in batch)
        return self._emit("rows", rows=tuple(b.row for b in batch), consistent_ts=consistent_ts, origins=origins)

    def _emit(
        self, kind: UnitKind, *, consistent_ts: int, rows: tuple[RowChange, ...] = (), ddl: DDLEvent | None = None,
        quarantined: tuple[QuarantinedRecord, ...] = (), origins: tuple[tuple[str, int, int], ...] = (),
    ) -> ApplyUnit:
        if consistent_ts > self._released_ts:
            self._released_ts = consistent_ts
            self._schemas.prune(consistent_ts)
        self.stats.units += 1
        return ApplyUnit(kind=kind, rows=rows, ddl=ddl, quarantined=quarantined, origins=origins,
                         consistent_ts=self._released_ts, state=self.state() if self._unit_states else b"")
