"""Consumption semantics: from at-least-once Kafka records to exactly-once, ordered apply units.

What TiCDC guarantees (reference §1.3, §1.4, §7 and the protocol documents), and nothing more:

* Delivery is at least once. After a TiCDC restart the changefeed re-sends everything committed after
  its last persisted checkpoint: rows, DDLs and *older* resolved timestamps, so a partition's resolved
  ts can step back. Producer retries duplicate single records.
* A resolved ts R on partition p promises that every change for p committed at or before R was sent to
  p before that watermark. Watermarks are broadcast to every partition of every active topic.
* DDL is broadcast to every partition of its topic (Canal-JSON: partition 0 only), after every change
  committed before it and before any change committed after it.
* Where a row's changes land depends on the dispatcher: ``table`` keeps a table in one partition,
  ``index-value`` keeps a handle in one partition (a key change moves it), ``ts`` scatters them.
* Simple DML carries no schema: it is read with a schema learned from a DDL or BOOTSTRAP message.

What this consumer does with that, per record ``(topic, partition, offset, key, value)``:

1. Offsets. A record below the partition's next offset (from the resumed state) was already consumed
   and is skipped: Kafka redelivers from the last committed offset after a consumer restart.
2. Decoding. Records are decoded with ``pyticdc.codec.make_decoder``; bytes that do not decode go to a
   ``quarantine`` apply unit (raw key and value, topic, partition, offset, protocol, reason) and
   consumption continues.
3. Watermarks. Each partition keeps the highest resolved ts it received; lower ones are counted and
   ignored, never fatal. The global watermark is the minimum over every subscribed partition.
4. Duplicates. Three rules, each dropping only re-sends. A row or DDL committed at or before the released
   ts is applied already (the release waited for every partition's promise). One arriving on partition p
   at or before p's resolved ts is a re-send: by the watermark promise (3) its first copy reached p before
   that watermark and is buffered or applied. Above both, rows are de-duplicated by identity (table,
   physical table, commit ts, operation, handle of the pre-image and of the post-image) and DDLs by
   (commit ts, query), which also executes a broadcast DDL once. No row is ever judged by the commit ts
   of *other rows* it arrives after.
5. Order. Rows are buffered until the global watermark covers them, then released in commit-ts order;
   within one commit ts deletes, then updates, then inserts (TiCDC's own order for split updates, so a
   handle or unique key moved inside a transaction never collides). A DDL is a barrier across all
   partitions: rows committed at or before it are released first, the DDL alone in its unit, then
   what follows.
6. Schemas. DDL table info (before and after), BOOTSTRAP messages and versioned in-band schemas feed a
   cache keyed by table and by the ts each version starts at; rows of Open, Craft, Canal-JSON and
   Debezium carry their own schema. A Simple row decoded without its schema (its decoder is new after a
   restart, or the consumer joined mid-stream) is looked up by its ``schemaVersion``, else by commit
   ts, and read with ``pyticdc.codec.simple.resolve_row``; while unknown it is held, blocking the
   release at its commit ts so the replica stays consistent, until a BOOTSTRAP or DDL supplies it. A row
   whose version can no longer arrive (only newer ones are known) is quarantined.
7. Commit protocol. Every apply unit carries ``consistent_ts`` (after applying it the replica equals the
   upstream at that ts) and ``state``: the consumer state as if that unit and all before it were
   applied. An applier stores the state in the same transaction as the unit's effects; after a crash,
   ``Consumer(..., state=stored)`` plus :meth:`Consumer.release` continues exactly there. The state
   holds per-partition next offset and resolved ts, the released ts, the buffered rows and DDLs above
   it, the schema cache and quarantine marks: only what lies between the released watermark and the
   read position. With ``compact_state=True`` it holds no rows at all: per partition it names the
   earliest record that gave something still buffered, with the resolved ts the partition had before
   it, and a resumed consumer reads those records again (same result, state of a few hundred bytes
   plus schemas, more re-reading after a crash; counters then count re-read records twice).

How this differs from TiCDC's Go consumer (``cmd/kafka-consumer``, reference §9), and why:

* The Go consumer drops a row whose commit ts is below its table group's *high watermark* (the largest
  commit ts seen for that table in that partition). That drops genuine rows: a row lost in flight and
  re-sent after a restart arrives behind a later row of the same table. Here only watermarks decide
  that a row is a re-send (the partition's resolved ts, which TiCDC promises, and the released ts,
  which every partition promised); rows above them are compared by identity, so re-sent originals
  are kept and only exact duplicates go.
* It panics on a row its own router would send to another partition and on message-size sanity
  checks, and earlier releases panicked on a resolved ts below the partition's watermark. A replayed or
  stale resolved event must never stop a consumer, and routing is not the consumer's business (under
  ``ts`` or ``index-value`` dispatch a row's changes legitimately move between partitions). Here
  nothing in the data is fatal: bad records are quarantined, stale watermarks counted and ignored.
* It commits Kafka offsets after a flush, independently of what the downstream has durably applied,
  so a crash between the two re-applies or loses data. Here the offsets travel inside the state
  stored with each apply unit.
* It flushes each table's buffered events to that table's writer; here a release is one sequence
  ordered by commit ts across tables and partitions, and every unit states the ts at which the whole
  replica is consistent.

Limitations: Canal-JSON and Debezium without ``enable-tidb-extension`` send no watermarks: the consumer
refuses them unless built with ``consistency="batch"``, which releases what a batch read at
:meth:`Consumer.flush` (weaker: see :mod:`pyticdc.consumer.batch_mode`). Handle-key-only rows (large
messages without claim-check) are passed on flagged ``handle_key_only``: TiCDC's consumer re-reads them
from the upstream, which a Kafka consumer cannot.
A table with neither handle nor ``_tidb_rowid`` in the protocol (all but Open carry no row id) cannot
tell two identical rows of one transaction from a re-send. Topics that stop receiving watermarks (a
topic per dropped table) hold the global watermark back, as they do in TiCDC's consumer.
"""

from __future__ import annotations

from pyticdc.consumer.engine import Consumer, RecordLike, RowResolver
from pyticdc.consumer.identity import OP_RANK, change_identity, handle_columns, image_handle
from pyticdc.consumer.schemas import SchemaCache
from pyticdc.consumer.state import ConsumerState, decode_state, encode_state
from pyticdc.consumer.units import ApplyUnit, ConsumerStats, QuarantinedRecord, UnitKind

__all__ = [
    "OP_RANK",
    "ApplyUnit",
    "Consumer",
    "ConsumerState",
    "ConsumerStats",
    "QuarantinedRecord",
    "RecordLike",
    "RowResolver",
    "SchemaCache",
    "UnitKind",
    "change_identity",
    "decode_state",
    "encode_state",
    "handle_columns",
    "image_handle",
]
