"""The consumer's resumable state and its compact byte form (msgpack).

Everything a consumer needs to resume exactly where an applier's last commit left it: per-partition
next offset and resolved ts, the released watermark, buffered rows and DDLs above it, and the schema
cache. A state is written with every apply unit, so it is built from pieces encoded once: each
buffered row is encoded when it is buffered, each table schema once however many rows use it.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from pyticdc.consumer.units import ConsumerStats
from pyticdc.model import ColumnInfo, DDLEvent, IndexInfo, Op, Row, RowChange, TableInfo

__all__ = [
    "STATE_VERSION",
    "BufferedRow",
    "ConsumerState",
    "DDLBlobs",
    "TableRegistry",
    "compact_table",
    "decode_state",
    "encode_state",
]

#: Version of the byte layout; a consumer refuses state it does not know.
STATE_VERSION: Final = 3

TopicPartition = tuple[str, int]
_ENCODER: Final = msgspec.msgpack.Encoder()


def _defaults(cls: type[msgspec.Struct]) -> list[tuple[str, Any]]:
    return [(f.name, f.default) for f in msgspec.structs.fields(cls)]


_COLUMN_DEFAULTS: Final = _defaults(ColumnInfo)
_INDEX_DEFAULTS: Final = _defaults(IndexInfo)
_TABLE_DEFAULTS: Final = _defaults(TableInfo)


def _compact(obj: msgspec.Struct, defaults: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, default in defaults:
        value = getattr(obj, name)
        if value != default:
            out[name] = value
    return out


def compact_table(info: TableInfo) -> dict[str, Any]:
    """A TableInfo as builtins without fields at their default (``msgspec.convert`` reads it back)."""
    out = _compact(info, _TABLE_DEFAULTS)
    if info.columns:
        out["columns"] = [_compact(c, _COLUMN_DEFAULTS) for c in info.columns]
    if info.indexes:
        out["indexes"] = [_compact(i, _INDEX_DEFAULTS) for i in info.indexes]
    return msgspec.to_builtins(out)  # type: ignore[no-any-return]


class TableRegistry:
    """Numbers distinct table schemas so buffered rows refer to them and each is encoded once."""

    def __init__(self) -> None:
        self._refs: dict[TableInfo, int] = {}
        self._tables: dict[int, TableInfo] = {}
        self._blobs: dict[int, msgspec.Raw] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._tables)

    def ref(self, info: TableInfo | None) -> int:
        """The number of ``info`` (-1 for None), registering it if new."""
        if info is None:
            return -1
        ref = self._refs.get(info)
        if ref is None:
            ref = self._refs[info] = self._next
            self._next += 1
            self._tables[ref] = info
        return ref

    def add(self, ref: int, info: TableInfo) -> None:
        """Register ``info`` under a number read back from a state."""
        self._refs[info] = ref
        self._tables[ref] = info
        self._next = max(self._next, ref + 1)

    def table(self, ref: int) -> TableInfo | None:
        """The schema numbered ``ref``."""
        return self._tables.get(ref) if ref >= 0 else None

    def blob(self, ref: int) -> msgspec.Raw:
        """The encoded schema numbered ``ref``."""
        blob = self._blobs.get(ref)
        if blob is None:
            blob = self._blobs[ref] = msgspec.Raw(_ENCODER.encode(compact_table(self._tables[ref])))
        return blob

    def retain(self, refs: set[int]) -> None:
        """Forget schemas no buffered row refers to any more."""
        for ref in [r for r in self._tables if r not in refs]:
            info = self._tables.pop(ref)
            self._refs.pop(info, None)
            self._blobs.pop(ref, None)


class BufferedRow(msgspec.Struct, kw_only=True):
    """A row waiting for the global watermark (and, for Simple DML, for its schema)."""

    #: Arrival sequence number: stable apply order among rows of one commit ts and operation.
    seq: int
    row: RowChange
    #: False while the row still carries Simple's string values because its schema is unknown.
    resolved: bool = True
    #: The key the row is buffered under (derived from the row, not serialised).
    identity: Any = None
    #: Number of the row's schema in the TableRegistry (-1: none).
    table_ref: int = -1
    #: The row encoded for the state, made once.
    blob: msgspec.Raw | None = None
    #: Where the row was read: (topic, partition, offset, the partition's resolved ts before that record);
    #: what a compact state resumes from, and what a replica's ``_source_*`` columns say (a full state keeps it).
    origin: tuple[str, int, int, int] | None = None
    #: The record's key, value and Kafka timestamp while the row waits for its schema (not serialised):
    #: what the quarantine keeps if the schema, once known, does not fit the row.
    raw: tuple[bytes | None, bytes | None, int] | None = None

    def encoded(self, registry: TableRegistry) -> msgspec.Raw:
        """The row's state encoding (cached)."""
        if self.blob is None:
            row = self.row
            self.table_ref = registry.ref(row.table_info)
            self.blob = msgspec.Raw(_ENCODER.encode([
                self.seq, self.resolved, row.op.value, row.schema, row.table, row.commit_ts,
                None if row.columns is None else dict(row.columns),
                None if row.pre_columns is None else dict(row.pre_columns),
                row.table_id, row.physical_table_id, row.row_id, self.table_ref, row.handle_key_only,
                row.claim_check_location, row.schema_version, *([list(self.origin)] if self.origin else []),
            ]))
        return self.blob


def _buffered_from_builtins(data: list[Any], tables: dict[int, TableInfo]) -> BufferedRow:
    # A 16th element is where the row was read (states written before it have 15).
    origin = tuple(data[15]) if len(data) > 15 else None
    (seq, resolved, op, schema, table, commit_ts, columns, pre_columns, table_id, physical_table_id, row_id,
     table_ref, handle_key_only, claim_check_location, schema_version) = data[:15]
    row = RowChange(
        op=Op(op), schema=schema, table=table, commit_ts=commit_ts,
        columns=None if columns is None else Row(columns),
        pre_columns=None if pre_columns is None else Row(pre_columns),
        table_id=table_id, physical_table_id=physical_table_id, row_id=row_id,
        table_info=tables[table_ref] if table_ref >= 0 else None,
        handle_key_only=handle_key_only, claim_check_location=claim_check_location, schema_version=schema_version,
    )
    return BufferedRow(seq=seq, row=row, resolved=resolved, table_ref=table_ref,
                       origin=(str(origin[0]), int(origin[1]), int(origin[2]), int(origin[3])) if origin else None)


class ConsumerState(msgspec.Struct, kw_only=True):
    """A consumer's complete resumable state (see module docstring)."""

    protocol: str
    #: (topic, partition) -> offset of the next record to read.
    next_offsets: dict[TopicPartition, int]
    #: (topic, partition) -> highest resolved ts received on it.
    resolved: dict[TopicPartition, int]
    #: Every change committed at or before this ts has been released (and, once stored, applied).
    released_ts: int = 0
    next_seq: int = 0
    rows: list[BufferedRow] = msgspec.field(default_factory=list)
    ddls: list[DDLEvent] = msgspec.field(default_factory=list)
    #: The schema cache as ``SchemaCache.to_builtins`` gives it.
    schemas: list[Any] = msgspec.field(default_factory=list)
    stats: ConsumerStats = msgspec.field(default_factory=ConsumerStats)
    #: Schemas the rows refer to, by registry number.
    tables: dict[int, TableInfo] = msgspec.field(default_factory=dict)
    #: (topic, partition) -> offsets below this were already quarantined (not again when re-read).
    quarantine_marks: dict[TopicPartition, int] = msgspec.field(default_factory=dict)
    #: Compact: no buffered rows or DDLs; the offsets and resolved ts are where to re-read them from.
    compact: bool = False
    #: Batch consistency: ``ResendMarks.to_builtins()`` (what each partition read last, per table).
    resend_marks: list[Any] = msgspec.field(default_factory=list)
    #: Batch consistency: (commit ts, query) of the DDLs released at the released ts.
    released_ddls: list[tuple[int, str]] = msgspec.field(default_factory=list)
    #: Batch consistency: (commit ts, query, partitions it reached) of each buffered DDL.
    ddl_copies: list[tuple[int, str, list[tuple[str, int]]]] = msgspec.field(default_factory=list)


def _ddl_builtins(ddl: DDLEvent) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(ddl)
    for key in ("table_info", "pre_table_info"):
        info = getattr(ddl, key)
        out[key] = None if info is None else compact_table(info)
    return out


class DDLBlobs:
    """Encodes each buffered DDL once (pending DDLs are rewritten into every state)."""

    def __init__(self) -> None:
        self._blobs: dict[tuple[int, str], tuple[DDLEvent, msgspec.Raw]] = {}

    def blob(self, ddl: DDLEvent) -> msgspec.Raw:
        """The encoded DDL."""
        key = (ddl.commit_ts, ddl.query)
        cached = self._blobs.get(key)
        if cached is None or cached[0] is not ddl:
            cached = self._blobs[key] = (ddl, msgspec.Raw(_ENCODER.encode(_ddl_builtins(ddl))))
        return cached[1]

    def forget(self, ddl: DDLEvent) -> None:
        """Drop a released DDL's encoding."""
        self._blobs.pop((ddl.commit_ts, ddl.query), None)


def encode_state(state: ConsumerState, registry: TableRegistry | None = None, ddls: DDLBlobs | None = None) -> bytes:
    """The state as bytes (msgpack); deterministic for equal states."""
    registry = TableRegistry() if registry is None else registry
    ddls = DDLBlobs() if ddls is None else ddls
    rows = [b.encoded(registry) for b in state.rows]
    refs = sorted({b.table_ref for b in state.rows if b.table_ref >= 0})
    document = {
        "v": STATE_VERSION,
        "protocol": state.protocol,
        "compact": state.compact,
        "partitions": [
            [topic, partition, offset, state.resolved.get((topic, partition), 0),
             state.quarantine_marks.get((topic, partition), 0)]
            for (topic, partition), offset in sorted(state.next_offsets.items())
        ],
        "released_ts": state.released_ts,
        "next_seq": state.next_seq,
        "tables": [[ref, registry.blob(ref)] for ref in refs],
        "rows": rows,
        "ddls": [ddls.blob(d) for d in state.ddls],
        "schemas": state.schemas,
        "stats": msgspec.to_builtins(state.stats),
    }
    if state.resend_marks or state.released_ddls or state.ddl_copies:
        # Only a batch-consistency consumer has them: a watermark consumer's bytes stay as they were.
        document["resend_marks"] = state.resend_marks
        document["released_ddls"] = [list(key) for key in state.released_ddls]
        document["ddl_copies"] = [[ts, query, [list(tp) for tp in copies]] for ts, query, copies in state.ddl_copies]
    return _ENCODER.encode(document)


def decode_state(data: bytes) -> ConsumerState:
    """A ConsumerState from ``encode_state`` bytes; ValueError if they are not a known state."""
    try:
        document = msgspec.msgpack.decode(data)
        if not isinstance(document, dict) or document.get("v") != STATE_VERSION:
            raise ValueError(f"not a pyticdc consumer state of version {STATE_VERSION}")
        tables = {ref: msgspec.convert(t, TableInfo) for ref, t in document["tables"]}
        next_offsets: dict[TopicPartition, int] = {}
        resolved: dict[TopicPartition, int] = {}
        marks: dict[TopicPartition, int] = {}
        for topic, partition, offset, resolved_ts, mark in document["partitions"]:
            next_offsets[(topic, partition)] = offset
            resolved[(topic, partition)] = resolved_ts
            marks[(topic, partition)] = mark
        return ConsumerState(
            protocol=document["protocol"],
            next_offsets=next_offsets,
            resolved=resolved,
            released_ts=document["released_ts"],
            next_seq=document["next_seq"],
            rows=[_buffered_from_builtins(row, tables) for row in document["rows"]],
            ddls=[msgspec.convert(d, DDLEvent) for d in document["ddls"]],
            schemas=document["schemas"],
            stats=msgspec.convert(document["stats"], ConsumerStats),
            tables=tables,
            quarantine_marks=marks,
            compact=bool(document["compact"]),
            resend_marks=list(document.get("resend_marks", [])),
            released_ddls=[(int(ts), str(query)) for ts, query in document.get("released_ddls", [])],
            ddl_copies=[(int(ts), str(query), [(str(t), int(p)) for t, p in copies])
                        for ts, query, copies in document.get("ddl_copies", [])],
        )
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError) as exc:
        raise ValueError(f"corrupt consumer state: {exc}") from exc
