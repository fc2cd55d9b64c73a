"""Changelog and quarantine Delta tables, written with ``deltalake`` (delta-rs; no JVM Delta needed).

Changelog
    Append-only: every ``row`` event with its metadata (:data:`CHANGELOG_COLUMNS`), partitioned by
    ``schema`` and ``table`` by default (``partition_by``), so a table's history is one directory and a
    reader filters by table without listing the others.
Quarantine
    Every record that failed to decode (:data:`QUARANTINE_COLUMNS`): topic, partition, offset, Kafka
    timestamp, protocol, reason and the raw key and value bytes, so it can be inspected and replayed.
    Not partitioned (it should stay small).

A decode failure never stops the job: it becomes a quarantine row. Streaming::

    query = (events.writeStream.foreachBatch(delta_sink("/data/changelog", "/data/quarantine", "canal-json"))
             .option("checkpointLocation", "/data/_checkpoint").start())

Each micro-batch is one Delta commit on each table, tagged with a Delta application transaction
(``app_id``, ``batch_id``); a batch Spark replays after a failure is recognised and skipped, so the
tables receive every batch exactly once. Rows travel from the executors to the driver one Spark partition
at a time (Arrow IPC), so the driver holds at most one partition's rows, not the whole batch.

The pure halves (:func:`changelog_rows`, :func:`quarantine_rows`) work on Arrow and are tested without Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.arrow.rows import EVENT_COLUMNS, QUARANTINE_COLUMNS, event_arrow_schema, quarantine_arrow_schema

__all__ = [
    "CHANGELOG_COLUMNS",
    "QUARANTINE_COLUMNS",
    "changelog_rows",
    "changelog_schema",
    "delta_sink",
    "quarantine_rows",
    "quarantine_schema",
    "write_delta",
    "write_events",
]

#: Columns of the changelog table (event columns, minus those only DDL or errors use).
CHANGELOG_COLUMNS: Final = (
    "topic", "partition", "offset", "kafka_timestamp", "event_index", "op", "schema", "table", "table_id",
    "physical_table_id", "commit_ts", "schema_version", "columns", "pre_columns", "base64_columns",
    "handle_key_only", "table_info",
)
_TYPES: Final = dict(EVENT_COLUMNS)
DEFAULT_PARTITION_BY: Final = ("schema", "table")


def changelog_schema() -> pa.Schema:
    """Arrow schema of the changelog table."""
    return pa.schema([pa.field(name, _TYPES[name]) for name in CHANGELOG_COLUMNS])


def quarantine_schema() -> pa.Schema:
    """Arrow schema of the quarantine table (the replica's ``_pyticdc/quarantine`` has the same)."""
    return quarantine_arrow_schema()


def changelog_rows(events: pa.RecordBatch | pa.Table) -> pa.RecordBatch | pa.Table:
    """The ``row`` events of decoded-event rows, with the changelog columns."""
    rows = events.filter(pc.equal(events.column("kind"), "row"))
    return rows.select(list(CHANGELOG_COLUMNS))


def quarantine_rows(events: pa.RecordBatch | pa.Table, protocol: str) -> pa.Table:
    """The ``error`` events of decoded-event rows as quarantine rows."""
    errors = events.filter(pc.equal(events.column("kind"), "error"))
    count = errors.num_rows
    return pa.Table.from_arrays([
        errors.column("topic"), errors.column("partition"), errors.column("offset"),
        errors.column("kafka_timestamp"), pa.array([protocol] * count, pa.string()), errors.column("reason"),
        errors.column("raw_key"), errors.column("raw_value"),
    ], schema=quarantine_schema())


def _done(path: str, app_id: str | None, version: int | None, storage_options: dict[str, str] | None) -> bool:
    """Whether the Delta table at ``path`` already holds application transaction (app_id, version)."""
    if app_id is None or version is None:
        return False
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path, storage_options=storage_options):
        return False
    done = DeltaTable(path, storage_options=storage_options).transaction_version(app_id)
    return done is not None and done >= version


def write_delta(
    path: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch], *, partition_by: Sequence[str] = (),
    app_id: str | None = None, version: int | None = None, storage_options: dict[str, str] | None = None,
) -> bool:
    """Append ``batches`` to the Delta table at ``path`` (created if missing) in one commit.

    With ``app_id`` and ``version`` the commit records that application transaction and is skipped when
    the table already has it at ``version`` or later (idempotent replays). Returns whether it wrote.
    """
    from deltalake import CommitProperties, Transaction, write_deltalake

    if _done(path, app_id, version, storage_options):
        return False
    commit = None
    if app_id is not None and version is not None:
        commit = CommitProperties(app_transactions=[Transaction(app_id=app_id, version=version)])
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    write_deltalake(path, reader, mode="append", partition_by=list(partition_by) or None,
                    commit_properties=commit, storage_options=storage_options)
    return True


def _to_ipc(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    # Executors ship each Arrow batch as one Arrow IPC blob; the driver reads them back one at a time.
    for batch in batches:
        if batch.num_rows == 0:
            continue
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        yield pa.RecordBatch.from_arrays([pa.array([sink.getvalue().to_pybytes()], pa.binary())], names=["ipc"])


def arrow_batches(df: Any) -> Iterator[pa.RecordBatch]:
    """A DataFrame's rows as Arrow batches on the driver, one Spark partition at a time."""
    for row in df.mapInArrow(_to_ipc, "ipc binary").toLocalIterator(prefetchPartitions=True):
        yield from pa.ipc.open_stream(row["ipc"]).read_all().to_batches()


def write_events(
    events: Any, protocol: str, changelog_path: str | None, quarantine_path: str | None = None, *,
    partition_by: Sequence[str] = DEFAULT_PARTITION_BY, app_id: str | None = None, version: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> tuple[int, int]:
    """Append the row events of ``events`` to the changelog and its errors to the quarantine.

    ``events`` is a decoded-event DataFrame or an iterable of decoded-event Arrow batches; either path may
    be None to skip that table. Returns (changelog rows, quarantine rows) written by this call.
    """
    if hasattr(events, "mapInArrow"):
        batches: Iterable[pa.RecordBatch] = arrow_batches(events.select(*[name for name, _ in EVENT_COLUMNS]))
    else:
        batches = events
    write_changelog = changelog_path is not None and not _done(changelog_path, app_id, version, storage_options)
    write_quarantine = quarantine_path is not None and not _done(quarantine_path, app_id, version, storage_options)
    if not (write_changelog or write_quarantine):
        return 0, 0  # a replayed batch both tables already hold
    counts = [0, 0]
    errors: list[pa.Table] = []

    def rows() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.schema != event_arrow_schema():
                batch = batch.cast(event_arrow_schema())
            if write_quarantine:
                bad = quarantine_rows(batch, protocol)
                if bad.num_rows:
                    errors.append(bad)  # decode failures are rare: keep them until the changelog is written
            good = changelog_rows(batch)
            if good.num_rows:
                counts[0] += good.num_rows
                yield good

    if write_changelog:
        assert changelog_path is not None
        write_delta(changelog_path, changelog_schema(), rows(), partition_by=partition_by, app_id=app_id,
                    version=version, storage_options=storage_options)
    else:
        for _ in rows():
            pass  # only the quarantine is missing: read the batch for its errors
        counts[0] = 0
    if write_quarantine and errors:
        assert quarantine_path is not None
        table = pa.concat_tables(errors)
        write_delta(quarantine_path, quarantine_schema(), table.to_batches(), app_id=app_id, version=version,
                    storage_options=storage_options)
        counts[1] = table.num_rows
    return counts[0], counts[1]


def delta_sink(
    changelog_path: str | None, quarantine_path: str | None, protocol: str, *, app_id: str = "pyticdc",
    partition_by: Sequence[str] = DEFAULT_PARTITION_BY, storage_options: dict[str, str] | None = None,
) -> Callable[[Any, int], None]:
    """A ``foreachBatch`` function writing each micro-batch's events to the changelog and quarantine.

    ``app_id`` names this writer in the Delta application transactions; keep it stable across restarts of
    one query and distinct between queries writing the same tables.
    """
    def write_batch(batch_df: Any, batch_id: int) -> None:
        write_events(batch_df, protocol, changelog_path, quarantine_path, partition_by=partition_by,
                     app_id=app_id, version=batch_id, storage_options=storage_options)
    return write_batch
