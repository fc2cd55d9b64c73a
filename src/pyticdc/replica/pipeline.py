"""Replicator: Kafka records in, a Delta replica out, one committed batch at a time (pure Python, no JVM).

The consumer engine (:class:`pyticdc.consumer.Consumer`) does everything that decides *what* to apply —
decoding, per-partition and global watermarks, duplicate removal, commit-ts order with split updates
ordered, DDL barriers, Simple schemas — and :class:`~pyticdc.replica.applier.DeltaReplica` does the
applying. A batch is::

    replicator = Replicator("/data/warehouse", "canal-json", {"enable-tidb-extension": "true"},
                            partitions={"cdc": 3})
    report = replicator.process(records)     # any records: the consumer skips those already consumed

``process`` feeds the records to the consumer (partitions interleaved fairly, deterministically, each in
offset order), hands every released unit to the replica, and commits: table data first, then the
progress with the consumer state after the last record. Changes above the global watermark stay in
that state and are applied by a later batch. A new Replicator on the same warehouse resumes from the
committed progress, whatever happened to the previous one; records it is given again are skipped.
"""

from __future__ import annotations

import heapq
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from pyticdc.codec import canonical_protocol
from pyticdc.codec.timezone import load_zone
from pyticdc.consumer import Consumer
from pyticdc.consumer.batch_mode import BATCH, WATERMARK
from pyticdc.consumer.engine import carries_watermarks
from pyticdc.consumer.units import ApplyUnit, QuarantinedRecord
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.model import KafkaRecord
from pyticdc.replica.applier import DeltaReplica, Hook
from pyticdc.replica.maintenance import TableOptions
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.progress import Progress, TableEntry
from pyticdc.replica.storage import RemotePath
from pyticdc.replica.store import APP_ID

__all__ = ["BatchReport", "Replicator", "interleave_partitions", "table_matcher"]

TopicPartition = tuple[str, int]


@dataclass
class BatchReport:
    """What one batch did."""

    version: int
    records: int = 0
    #: Row changes the consumer released in this batch (after de-duplication).
    rows_released: int = 0
    ddls_released: int = 0
    #: Row changes written to tables (fewer than released only in a replay after a crash).
    rows_applied: int = 0
    consistent_ts: int = 0
    #: Global watermark (minimum resolved ts over the partitions) after the batch.
    watermark: int = 0
    #: Rows waiting for the global watermark, kept in the consumer state.
    pending_rows: int = 0
    quarantined: int = 0
    seconds: float = 0.0
    tables: dict[tuple[str, str], TableEntry] = field(default_factory=dict)
    #: DDL statements whose effect on rows could not be reproduced.
    unhandled_ddl: list[str] = field(default_factory=list)
    #: Row events the consumer dropped as re-sends (at or below their partition's watermark) in this batch.
    rows_replayed: int = 0
    #: Row events the consumer dropped as duplicates of a buffered change in this batch.
    rows_duplicate: int = 0
    #: Released row changes of tables the table filter leaves out, in this batch.
    rows_filtered: int = 0
    #: Records of this batch sent to the quarantine (undecodable, not a capture record, no table): the quarantine
    #: table keeps each record once, so a re-read one counts here again but is not stored twice.
    rejected: int = 0
    #: Tables whose rows the table filter left out, in this batch.
    filtered_tables: list[tuple[str, str]] = field(default_factory=list)
    #: ``watermark`` (complete up to ``consistent_ts``) or ``batch`` (a feed without watermarks: complete up to
    #: what was read; see :mod:`pyticdc.consumer.batch_mode`).
    consistency: str = WATERMARK
    #: Row changes written per table in this batch.
    rows_by_table: dict[tuple[str, str], int] = field(default_factory=dict)

    def __str__(self) -> str:
        """One line: what the batch read, applied, dropped and quarantined (not the table schemas)."""
        return (f"batch {self.version}: {self.records} records, {self.rows_applied} row changes and "
                f"{self.ddls_released} DDL applied, {self.pending_rows} rows wait for the watermark, "
                f"{self.rows_replayed} re-sent and {self.rows_duplicate} duplicate row events dropped, "
                f"{self.rows_filtered} filtered out, {self.rejected} records quarantined; complete up to "
                f"{self.consistent_ts}, {len(self.tables)} tables, {self.seconds:.2f}s")

    def __repr__(self) -> str:
        """The one-line summary (the full table entries are in ``tables``)."""
        return f"<BatchReport {self}>"


def _consistency(protocol: str, options: Mapping[str, Any], require_watermarks: bool) -> str:
    if carries_watermarks(protocol, options):
        return WATERMARK
    if require_watermarks:
        # The consumer's own refusal (same words for every caller).
        Consumer(protocol, options, partitions={"check": 1})
    return BATCH


def interleave_partitions(records: Iterable[KafkaRecord]) -> Iterator[KafkaRecord]:
    """The records with their partitions merged fairly: each partition in its order, all advancing together.

    A batch often arrives partition by partition (one Spark task per Kafka partition); feeding it so would
    keep everything buffered until the last partition's watermarks arrive. Merged by each record's
    relative position in its partition, they advance together. Deterministic: the same records always
    give the same order.
    """
    groups: dict[TopicPartition, list[KafkaRecord]] = {}
    for record in records:
        groups.setdefault((record.topic, record.partition), []).append(record)
    streams = []
    for number, tp in enumerate(sorted(groups)):
        group = groups[tp]
        size = len(group)
        streams.append([((index + 1) / size, number, index) for index in range(size)])
    ordered = [groups[tp] for tp in sorted(groups)]
    for _fraction, number, index in heapq.merge(*streams):
        yield ordered[number][index]


def table_matcher(patterns: Sequence[str] | None) -> Callable[[str, str], bool] | None:
    """A (schema, table) predicate from TiDB table-filter patterns (``shop.*``, ``!shop.tmp_*``); None for all."""
    if not patterns:
        return None
    from pyticdc.routing.tablefilter import parse_table_filter

    matcher = parse_table_filter(list(patterns))
    return matcher.match_table


class Replicator:
    """One changefeed's records → the Delta replica in ``warehouse`` (see module docstring).

    ``partitions`` maps each topic to its partition count (the global watermark is the minimum over all of
    them). ``tables``: TiDB table-filter patterns of the tables to replicate (default all). ``time_zone``:
    the changefeed time zone TIMESTAMP text is in (default: the ``time-zone`` codec option, else UTC).
    """

    def __init__(
        self, warehouse: str | Path | RemotePath, protocol: str, options: Mapping[str, Any] | None = None, *,
        partitions: Mapping[str, int], tables: Sequence[str] | None = None, time_zone: str | None = None,
        hook: Hook | None = None, app_id: str = APP_ID, storage_options: Mapping[str, str] | None = None,
        source: Mapping[str, Any] | None = None, require_watermarks: bool = False, modelling: Modelling | None = None,
        table_options: TableOptions | None = None,
    ) -> None:
        self.protocol = canonical_protocol(protocol)
        self.options = {str(k): v for k, v in (options or {}).items()}
        #: ``watermark``, or ``batch`` for a feed that carries no watermarks (``require_watermarks`` refuses it).
        self.consistency = _consistency(self.protocol, self.options, require_watermarks)
        zone = time_zone or str(self.options.get("time-zone", self.options.get("time_zone", "UTC")))
        load_zone(zone)  # an unknown zone fails now, not mid-batch after some tables were written
        self.replica = DeltaReplica(warehouse, app_id=app_id, time_zone=zone, table_filter=table_matcher(tables),
                                    hook=hook, storage_options=storage_options, modelling=modelling,
                                    table_options=table_options)
        self.replica.skip_by_position = self.consistency == WATERMARK
        progress = self.replica.progress
        recorded = progress.source.get("protocol")
        if recorded and recorded != self.protocol:
            raise ConfigError(f"{warehouse} replicates a {recorded} changefeed; it cannot continue from {self.protocol}"
                              " records (use another warehouse)")
        self.source = {**dict(source or {}), "protocol": self.protocol,
                       "options": {k: str(v) for k, v in sorted(self.options.items())},
                       "consistency": self.consistency}
        self.partitions = dict(partitions)
        self._subscribed = {(topic, p) for topic, count in self.partitions.items() for p in range(count)}
        self.consumer = Consumer(self.protocol, self.options, partitions=self.partitions, state=progress.state,
                                 unit_states=False, consistency=self.consistency)
        # Units a resumed consumer releases at once (its state may already cover a watermark).
        self._units = self.consumer.release()
        self._broken: BaseException | None = None

    @staticmethod
    def check(warehouse: str | Path | RemotePath, protocol: str, options: Mapping[str, Any] | None = None, *,
              tables: Sequence[str] | None = None, time_zone: str | None = None,
              storage_options: Mapping[str, str] | None = None, require_watermarks: bool = False,
              modelling: Modelling | None = None) -> None:
        """Raise ConfigError for anything a Replicator would refuse, without reading a record or writing anything.

        Codec options (unknown names, bad values; with ``require_watermarks`` a feed without watermarks), the time zone,
        the table filter, and an existing warehouse written from another protocol: what a command checks
        before it starts Spark.
        """
        from pyticdc.replica.progress import read_progress
        from pyticdc.replica.store import DeltaStore

        canonical = canonical_protocol(protocol)
        named = {str(k): v for k, v in (options or {}).items()}
        Consumer(canonical, named, partitions={"check": 1},
                 consistency=_consistency(canonical, named, require_watermarks))
        load_zone(time_zone or str(named.get("time-zone", named.get("time_zone", "UTC"))))
        table_matcher(tables)
        try:
            progress = read_progress(DeltaStore(warehouse, storage_options=storage_options))
        except OSError as exc:  # an object store that does not answer, or refuses the credentials
            from pyticdc.replica.storage import reach_error

            raise reach_error(str(warehouse), exc) from None
        if modelling is not None:
            # Key overrides and metadata columns against the tables the warehouse already holds.
            for entry in progress.tables.values():
                modelling.check_table(entry.info)
        recorded = progress.source.get("protocol")
        if recorded and recorded != canonical:
            raise ConfigError(f"{warehouse} replicates a {recorded} changefeed; it cannot continue from {canonical}"
                              " records (use another warehouse)")

    # ------------------------------------------------------------------ introspection
    @property
    def broken(self) -> bool:
        """Whether a batch failed in this replicator (build a new one to resume from the progress)."""
        return self._broken is not None

    @property
    def progress(self) -> Progress:
        """The last committed progress."""
        return self.replica.progress

    def next_offsets(self) -> dict[TopicPartition, int]:
        """Per partition, the offset the next batch should start at (earlier records are skipped anyway)."""
        return self.consumer.next_offsets()

    def extend_partitions(self, partitions: Mapping[str, int]) -> None:
        """Subscribe to partitions that appeared since (a topic created or grown); no-op when none is new."""
        merged = dict(self.partitions)
        for topic, count in partitions.items():
            merged[topic] = max(merged.get(topic, 0), count)
        if merged == self.partitions:
            return
        if self.consumer.released_ts:
            warnings.warn(f"new partitions {merged} after replication started: rows they carry that are older than "
                          "the replica's consistent ts are treated as replays", stacklevel=2)
        self.partitions = merged
        self._subscribed = {(topic, p) for topic, count in merged.items() for p in range(count)}
        self.consumer = Consumer(self.protocol, self.options, partitions=merged, state=self.consumer.state(),
                                 unit_states=False, consistency=self.consistency)

    # ------------------------------------------------------------------ batches
    def process(self, records: Iterable[KafkaRecord], *, interleave: bool = True) -> BatchReport:
        """Consume ``records``, apply what the global watermark releases and commit; the batch's report.

        After an exception (a crash) this replicator refuses further batches: build a new one, which
        resumes from the committed progress.
        """
        if self._broken is not None:
            raise ReplicaError(f"this replicator failed ({self._broken!r}): create a new one to resume")
        started = time.perf_counter()
        report = BatchReport(version=self.progress.version + 1)
        applied_before = self.replica.stats.rows_applied
        by_table_before = dict(self.replica.rows_by_table)
        quarantined_before = self.replica.stats.quarantined
        filtered_before = self.replica.stats.rows_filtered
        filtered_tables = set(self.replica.filtered_tables)
        stats_before = msgspec.structs.replace(self.consumer.stats)
        rejected = 0
        try:
            units, self._units = self._units, []
            stream: Iterable[KafkaRecord] = interleave_partitions(records) if interleave else records
            for unit in units:
                self._take(unit, report)
            for record in stream:
                report.records += 1
                if record.partition < 0:
                    self._quarantine_line(record)
                    rejected += 1
                    continue
                if (record.topic, record.partition) not in self._subscribed:
                    self.extend_partitions({record.topic: record.partition + 1})
                for unit in self.consumer.consume(record):
                    self._take(unit, report)
            if self.consistency == BATCH:
                # No watermark will ever cover these changes: the batch is applied completely.
                for unit in self.consumer.flush():
                    self._take(unit, report)
            stats = {"consumer": msgspec.to_builtins(self.consumer.stats)}
            progress = self.replica.commit(self.consumer.state(), source=self.source, stats=stats)
        except BaseException as exc:
            self._broken = exc
            raise
        report.version = progress.version
        report.consistent_ts = progress.consistent_ts
        report.rows_applied = self.replica.stats.rows_applied - applied_before
        report.quarantined = self.replica.stats.quarantined - quarantined_before
        report.watermark = self.consumer.watermark
        report.pending_rows = self.consumer.pending_rows
        report.tables = dict(progress.tables)
        report.unhandled_ddl = list(self.replica.unhandled)
        counters = self.consumer.stats
        report.rows_replayed = counters.rows_replayed - stats_before.rows_replayed
        report.rows_duplicate = counters.rows_duplicate - stats_before.rows_duplicate
        report.rows_filtered = self.replica.stats.rows_filtered - filtered_before
        report.rejected = rejected + counters.quarantined - stats_before.quarantined
        report.filtered_tables = sorted(self.replica.filtered_tables - filtered_tables)
        report.consistency = self.consistency
        report.rows_by_table = {key: count - by_table_before.get(key, 0)
                                for key, count in self.replica.rows_by_table.items()
                                if count != by_table_before.get(key, 0)}
        report.seconds = time.perf_counter() - started
        return report

    def _quarantine_line(self, record: KafkaRecord) -> None:
        # Partition -1: a capture line that was not a record (the Spark source hands those over with their
        # bytes, byte position and reason: pyticdc.io.capture.bad_line_record); straight to the quarantine.
        from pyticdc.io.capture import bad_line_reason

        reason = bad_line_reason(record.topic, record.offset, record.key, record.value)
        quarantined = QuarantinedRecord(topic=record.topic, partition=record.partition, offset=record.offset,
                                        protocol=self.protocol, reason=reason, value=record.value,
                                        kafka_timestamp=record.timestamp_ms)
        self.replica.apply(ApplyUnit(kind="quarantine", quarantined=(quarantined,),
                                     consistent_ts=self.replica.consistent_ts))

    def _take(self, unit: Any, report: BatchReport) -> None:
        report.rows_released += len(unit.rows)
        report.ddls_released += unit.kind == "ddl"
        self.replica.apply(unit)
