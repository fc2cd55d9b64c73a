"""What the consumer hands to an applier: apply units, quarantined records and counters."""

from __future__ import annotations

from typing import Literal

import msgspec

from pyticdc.model import DDLEvent, RowChange

__all__ = ["ApplyUnit", "ConsumerStats", "QuarantinedRecord", "UnitKind"]

#: ``rows``: row changes of a commit-ts range; ``ddl``: one DDL; ``checkpoint``: the watermark advanced
#: with nothing to apply; ``quarantine``: records that could not be decoded (a dead-letter batch).
UnitKind = Literal["rows", "ddl", "checkpoint", "quarantine"]


class QuarantinedRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A Kafka record the consumer could not use, with its raw bytes and why."""

    topic: str
    partition: int
    offset: int
    protocol: str
    reason: str
    key: bytes | None = None
    value: bytes | None = None
    #: The record's Kafka timestamp, ms since the epoch; 0 when it has none (a capture line, a raw file).
    kafka_timestamp: int = 0


class ApplyUnit(msgspec.Struct, frozen=True, kw_only=True):
    """One ordered batch for an applier, and the consumer state to store atomically with it.

    Apply units in the order they are returned. After applying a unit the replica equals the upstream
    at ``consistent_ts``: every change committed at or before it is applied, none after it. Storing
    ``state`` in the same transaction as the unit's effects and resuming a consumer from the stored
    state applies nothing twice and loses nothing.
    """

    kind: UnitKind
    #: Row changes in apply order (commit ts ascending; within a commit ts deletes, updates, inserts).
    rows: tuple[RowChange, ...] = ()
    ddl: DDLEvent | None = None
    quarantined: tuple[QuarantinedRecord, ...] = ()
    consistent_ts: int
    #: Serialised consumer state after this unit (``Consumer(..., state=unit.state)`` resumes from it).
    state: bytes = b""
    #: Per row (aligned with ``rows``), the (topic, partition, offset) of the record it was read from: the first
    #: delivery the consumer kept (a held row keeps it in the state across restarts); empty for other units.
    origins: tuple[tuple[str, int, int], ...] = ()

    @property
    def first_commit_ts(self) -> int:
        """Commit ts of the first row (or the DDL), else ``consistent_ts``."""
        if self.rows:
            return self.rows[0].commit_ts
        return self.ddl.commit_ts if self.ddl is not None else self.consistent_ts

    @property
    def last_commit_ts(self) -> int:
        """Commit ts of the last row (or the DDL), else ``consistent_ts``."""
        if self.rows:
            return self.rows[-1].commit_ts
        return self.ddl.commit_ts if self.ddl is not None else self.consistent_ts


class ConsumerStats(msgspec.Struct, kw_only=True):
    """Counters of what the consumer saw and did (kept across restarts in the state)."""

    records: int = 0
    #: Records below a partition's committed offset (Kafka redelivery after a consumer restart).
    skipped_offsets: int = 0
    events: int = 0
    rows_buffered: int = 0
    #: Rows at or below their partition's resolved ts: re-sent after a TiCDC restart.
    rows_replayed: int = 0
    #: Rows whose identity was already buffered: duplicates above the watermark.
    rows_duplicate: int = 0
    rows_released: int = 0
    ddls_buffered: int = 0
    ddls_replayed: int = 0
    ddls_duplicate: int = 0
    ddls_released: int = 0
    watermarks: int = 0
    #: Resolved timestamps lower than or equal to their partition's: replays, ignored.
    watermarks_stale: int = 0
    bootstraps: int = 0
    #: Rows held because their schema was not known on arrival (Simple DML before its BOOTSTRAP/DDL).
    rows_awaiting_schema: int = 0
    #: Rows the decoder could not type that the consumer read with a schema from its own cache.
    rows_schema_resolved: int = 0
    quarantined: int = 0
    units: int = 0
