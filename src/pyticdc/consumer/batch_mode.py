"""Batch consistency: consuming a changefeed that carries no watermarks (Canal-JSON, Debezium without the extension).

Without watermarks nothing is ever known complete up to a commit ts, so the consumer releases what a
batch read when the batch ends (:meth:`pyticdc.consumer.Consumer.flush`) instead of what a global
watermark covers. What still holds, and what is weaker:

- Per-key order: TiCDC's default dispatchers (table, index-value, columns) keep a key in one partition,
  and a partition delivers one table's changes in commit-ts order; a batch is applied in (commit ts,
  arrival) order, so a key's changes keep their order even when several share a commit millisecond.
  Under ``ts`` dispatch a key's changes spread over partitions: they are applied in commit-ts order,
  but changes of one key within one millisecond (Canal-JSON's precision) may be applied out of order.
- Duplicates: a TiCDC restart re-sends a partition's changes from an older checkpoint, in their
  order, including changes the first attempt lost in flight. :class:`ResendMarks` remembers, per
  (topic, partition, table), the changes read in the last :data:`WINDOW_MS` of commit time (at most
  :data:`WINDOW_CHANGES`), in order, each as its commit ts and a digest of its whole images. A change
  below the newest commit ts read starts or continues a replay, which is aligned with that memory: a
  change found at the replay's position is a re-send, one not found is a change lost before and is
  applied. At the newest ts, a change read before whose old image is not its key's latest one any
  more (an INSERT of a key that exists, an UPDATE or DELETE of an image already changed) is a
  re-send: a genuine change starts from its key's latest image. Changes are told apart by their whole
  images, not by their key, so several changes of one key within one millisecond are all kept, and a
  change never read before is never dropped. What no consumer can tell apart: a change re-sent after
  its key went back to the very image it started from (``a→b``, ``b→a``, then ``a→b`` again, all in
  one millisecond) is applied again; a change below the memory is taken for a re-send.
- DDL: Debezium sends a DDL to every partition, and a batch releases nothing at or after a DDL until
  every partition has delivered it (a barrier, as with watermarks). Canal-JSON sends DDL to partition
  0 only: a batch applies DDL and rows in commit-ts order, so a DDL and the other partitions' rows
  are ordered right when they are read in one batch and are in different milliseconds. Within one
  millisecond (:func:`batch_order`) a CREATE goes first, a row of a table whose ADD or DROP COLUMN
  shares its millisecond goes on the side of it its columns say, and other DDL keep their read order.
- Completeness: each batch is applied completely; the replica is complete up to what was read, not up
  to a commit ts (partitions read behind others are applied when read).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pyticdc.consumer.identity import image_handle
from pyticdc.consumer.state import BufferedRow
from pyticdc.model import DDLEvent, Row, RowChange

__all__ = ["BATCH", "CONSISTENCIES", "WATERMARK", "ResendMarks", "batch_order", "change_digest"]

#: Consistency of a consumer: released up to the global watermark, or everything read at the end of a batch.
WATERMARK: Final = "watermark"
BATCH: Final = "batch"
CONSISTENCIES: Final = (WATERMARK, BATCH)
#: Commit time (ms) a partition's changes are remembered for, to recognise a replay from an older checkpoint.
WINDOW_MS: Final = 600_000
#: At most this many changes remembered per (topic, partition, table).
WINDOW_CHANGES: Final = 20_000

#: (topic, partition, schema, table).
_MarkKey = tuple[str, int, str, str]


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(repr(value).encode("utf-8", "backslashreplace"), digest_size=16).digest()


def _image(image: Row | None) -> bytes | None:
    return None if image is None else _digest(sorted(image.items()))


def change_digest(row: RowChange) -> bytes:
    """16 bytes naming one change by its operation and whole images (not only its key)."""
    return _digest((row.physical_table_id, row.op.value, _image(row.pre_columns), _image(row.columns)))


class _Mark:
    __slots__ = ("cursor", "latest", "latest_ts", "memory")

    def __init__(self, memory: list[tuple[int, bytes]], cursor: int, latest_ts: int,
                 latest: dict[bytes, bytes | None]) -> None:
        #: (commit ts, change digest) of the changes read, in order, the newest last.
        self.memory = memory
        #: Position in ``memory`` of the next change a replay would repeat; -1 when no replay is under way.
        self.cursor = cursor
        #: Per key (handle digest) changed at ``latest_ts``: its image after the last change read (None: deleted).
        self.latest_ts = latest_ts
        self.latest = latest

    @property
    def high_ts(self) -> int:
        return self.memory[-1][0]

    def follows(self, row: RowChange) -> bool:
        """Whether ``row`` can come after the changes read at its ts: its old image is each key's latest one."""
        if row.commit_ts != self.latest_ts:
            return True
        if row.pre_columns is not None:
            key = _digest(image_handle(row, row.pre_columns))
            if key in self.latest and self.latest[key] != _image(row.pre_columns):
                return False
        elif row.columns is not None:
            key = _digest(image_handle(row, row.columns))
            if self.latest.get(key) is not None:
                return False  # an INSERT of a key that exists
        return True

    def append(self, row: RowChange, digest: bytes) -> None:
        """Remember a new change read at the newest ts."""
        self.memory.append((row.commit_ts, digest))
        if row.commit_ts != self.latest_ts:
            self.latest_ts, self.latest = row.commit_ts, {}
        if row.pre_columns is not None:
            self.latest[_digest(image_handle(row, row.pre_columns))] = None
        if row.columns is not None:
            self.latest[_digest(image_handle(row, row.columns))] = _image(row.columns)
        oldest = row.commit_ts - (WINDOW_MS << 18)
        drop = 0
        while drop < len(self.memory) - 1 and (self.memory[drop][0] < oldest
                                               or len(self.memory) - drop > WINDOW_CHANGES):
            drop += 1
        if drop:
            del self.memory[:drop]

    def find(self, entry: tuple[int, bytes], start: int) -> int:
        """Index of ``entry`` in memory from ``start`` on, among changes of its ts; -1 if not there."""
        for index in range(max(start, 0), len(self.memory)):
            found = self.memory[index]
            if found == entry:
                return index
            if found[0] > entry[0]:
                break
        return -1

    def replayed(self, row: RowChange, digest: bytes) -> bool:
        """A change below the newest ts (or during a replay): whether the memory holds it at the replay's place."""
        entry = (row.commit_ts, digest)
        if self.cursor < 0:
            # A replay begins: at the first remembered change of this ts.
            self.cursor = next((i for i, (ts, _) in enumerate(self.memory) if ts >= row.commit_ts), len(self.memory))
        at = self.find(entry, self.cursor)
        if at < 0 and self.cursor > 0:
            at = self.find(entry, next((i for i, (ts, _) in enumerate(self.memory) if ts >= row.commit_ts), 0))
        if at >= 0:
            self.cursor = at + 1
            if self.cursor >= len(self.memory):
                self.cursor = -1  # caught up: what follows is new
            return True
        # Not read before: a change lost in flight the first time, now re-sent with the rest.
        insert = self.cursor if 0 <= self.cursor <= len(self.memory) else len(self.memory)
        while insert < len(self.memory) and self.memory[insert][0] <= row.commit_ts:
            insert += 1
        while insert > 0 and self.memory[insert - 1][0] > row.commit_ts:
            insert -= 1
        if insert == len(self.memory):
            self.cursor = -1
            self.append(row, digest)  # the newest change read: its keys' images count for what follows
            return False
        self.memory.insert(insert, entry)
        self.cursor = insert + 1 if insert + 1 < len(self.memory) else -1
        return False


class ResendMarks:
    """Per (topic, partition, table): what was read last, to tell TiCDC's re-sends from new changes."""

    def __init__(self, builtins: list[Any] | None = None) -> None:
        self._marks: dict[_MarkKey, _Mark] = {}
        for topic, partition, schema, table, memory, cursor, latest_ts, latest in builtins or []:
            self._marks[(topic, partition, schema, table)] = _Mark(
                [(int(ts), bytes(d)) for ts, d in memory], cursor, latest_ts, {k: v for k, v in latest})

    def is_resend(self, topic: str, partition: int, row: RowChange) -> bool:
        """Whether ``row``, read from ``topic[partition]``, repeats a change already read there."""
        key = (topic, partition, row.schema, row.table)
        mark = self._marks.get(key)
        digest = change_digest(row)
        if mark is None:
            mark = self._marks[key] = _Mark([], -1, 0, {})
            mark.append(row, digest)
            return False
        if row.commit_ts < mark.memory[0][0]:
            return True  # older than anything remembered: a replay from far back
        if row.commit_ts > mark.high_ts:
            mark.cursor = -1
            mark.append(row, digest)
            return False
        if row.commit_ts < mark.high_ts or mark.cursor >= 0:
            return mark.replayed(row, digest)
        # At the newest ts, no replay under way.
        if mark.find((row.commit_ts, digest), 0) >= 0 and not mark.follows(row):
            # Read before at this ts, and its old image is not its key's latest one any more: delivered again
            # (Kafka producer retries re-send within a window). A change never read before is never dropped.
            return True
        mark.append(row, digest)
        return False

    def to_builtins(self) -> list[Any]:
        """The marks as msgpack-able builtins (``ResendMarks(builtins)`` reads them back)."""
        return [[*key, [list(e) for e in mark.memory], mark.cursor, mark.latest_ts,
                 sorted(mark.latest.items(), key=_by_key)]
                for key, mark in sorted(self._marks.items())]


def _by_key(item: tuple[bytes, bytes | None]) -> bytes:
    return item[0]


_COLUMN_DDL = re.compile(r"\b(ADD|DROP)\s+COLUMN\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?`?([^`\s,()]+)`?", re.IGNORECASE)
#: Sort ranks within one commit ts: CREATEs, then everything else in read order.
_CREATE, _OTHER = 0, 1


def _side(row: RowChange, ddl: DDLEvent) -> int:
    """-1 if ``row`` was written before ``ddl`` (its columns say so), 1 after it, 0 if they cannot tell."""
    image = row.columns if row.columns is not None else row.pre_columns
    if image is None:
        return 0
    for action, name in _COLUMN_DDL.findall(ddl.query):
        has = name in image
        if action.upper() == "ADD":
            return 1 if has else -1
        return -1 if has else 1
    return 0


def batch_order(rows: Sequence[BufferedRow], ddls: Sequence[DDLEvent],
                ddl_seq: Mapping[tuple[int, str], int]) -> list[tuple[int, int, BufferedRow | DDLEvent]]:
    """Rows and DDL of one batch in apply order: commit ts, then read order, with the rules of one millisecond."""
    keyed: list[tuple[tuple[int, int, int, int, int], BufferedRow | DDLEvent]] = []
    same_ms: dict[tuple[int, str, str], list[tuple[int, DDLEvent]]] = {}
    for ddl in ddls:
        seq = ddl_seq.get((ddl.commit_ts, ddl.query), 0)
        rank = _CREATE if ddl.query.lstrip()[:6].upper() == "CREATE" else _OTHER
        keyed.append(((ddl.commit_ts, rank, seq, 0, 0), ddl))
        if rank == _OTHER:
            same_ms.setdefault((ddl.commit_ts, ddl.schema, ddl.table), []).append((seq, ddl))
    for buffered in rows:
        row = buffered.row
        key = (row.commit_ts, _OTHER, buffered.seq, 0, 0)
        for seq, ddl in same_ms.get((row.commit_ts, row.schema, row.table), ()):
            side = _side(row, ddl)
            if (side < 0 and buffered.seq > seq) or (side > 0 and buffered.seq < seq):
                # Read on the wrong side of a DDL of its millisecond (another partition): placed by its columns.
                key = (row.commit_ts, _OTHER, seq, side, buffered.seq)
                break
        keyed.append((key, buffered))
    keyed.sort(key=lambda item: item[0])
    return [(key[0], key[2], item) for key, item in keyed]
