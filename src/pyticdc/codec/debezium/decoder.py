"""The Debezium decoder: TiCDC's output and every real Debezium-JSON producer's, back into events.

Producers read (docs/protocols/debezium.md, "Tolerances"): TiCDC; the Debezium MySQL connector
0.10-2.x through Kafka Connect's JsonConverter with ``schemas.enable`` true (``{schema,
payload}``) or false (the bare envelope); Flink CDC (``mysql_binlog_source``); Flink's
debezium-json encoder (only ``before``/``after``/``op``). ``readers`` maps each column's values,
``tolerant`` holds what only other producers need. ``Decoder.decode`` tries the fast path
(``fastpath``) first and falls back to the reference path, which alone reports errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final
from zoneinfo import ZoneInfo

import msgspec

from pyticdc.codec._fastpath import DECLINES, speculate
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.codec.compression import decompress
from pyticdc.codec.debezium.ddl import classify_ddl, table_from_change
from pyticdc.codec.debezium.fastpath import ImageReader, WrapperSplitter, cached_reader, image_reader
from pyticdc.codec.debezium.message import (
    OPTIONS,
    PROTOCOL,
    fail,
    key_names,
    load_json,
    read_object,
    row_schema,
    split_envelope,
)
from pyticdc.codec.debezium.readers import (
    NO_COLUMNS,
    Columns,
    Converter,
    column_from_field,
    infer_column,
    read_int,
    read_str,
)
from pyticdc.codec.debezium.tolerant import (
    is_unwrapped_row,
    not_a_change_event,
    source_commit_ts,
    stale_schema,
    unwrap_row,
)
from pyticdc.codec.options import CodecOptions, default_table
from pyticdc.codec.timezone import load_zone
from pyticdc.errors import DecodeError
from pyticdc.model import ActionType, ColumnInfo, DDLEvent, Event, Op, RowChange, TableInfo, Value, Watermark, make_row

__all__ = [
    "Decoder",
    "SchemaCache",
    "decode",
    "decode_document",
    "decode_payload",
    "decode_truncate",
    "decode_unwrapped",
]


class Decoder(BaseDecoder):
    """Reads TiCDC Debezium messages (and other producers' Debezium-JSON) into events."""

    PROTOCOL: ClassVar[str] = PROTOCOL
    OPTIONS: ClassVar[frozenset[str]] = OPTIONS

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *,
        claim_check: ClaimCheckStore | None = None, **kwargs: Any,
    ) -> None:
        super().__init__(options, claim_check=claim_check, **kwargs)
        self.zone = load_zone(self.options.time_zone)
        # Typed columns are a pure function of the schema and the zone: decoders of one zone share
        # them (and so their generated image readers), and a new decoder parses no known schema.
        self._schemas: SchemaCache = _SHARED_SCHEMAS.setdefault(self.zone.key, {})
        self._fast = WrapperSplitter()
        self._default_table = default_table(self.options)

    def _bytes(self, data: bytes, what: str) -> bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise fail(f"{what} is not bytes", 0)
        return decompress(self.options.large_message_handle_compression, bytes(data), PROTOCOL,
                          self.options.max_message_bytes)

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Events of one Kafka message; a tombstone (null or empty value, JSON ``null``) carries none."""
        if value is None:
            return []
        raw = self._bytes(value, "value")
        if not raw:
            return []  # Kafka Connect writes a deleted row's tombstone as a null value; some tools as b""
        raw_key = self._bytes(key, "key") if key else None
        return self._named(speculate(self._decode_fast, self._decode_raw, raw, raw_key))

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """``decode`` on the reference path only (no fast-path caches): the fast path's oracle."""
        if value is None:
            return []
        raw = self._bytes(value, "value")
        if not raw:
            return []
        return self._named(self._decode_raw(raw, self._bytes(key, "key") if key else None))

    def _named(self, events: list[Event]) -> list[Event]:
        """Rows that name no table take ``default-table``; without it such a message is an error.

        Any JSON object reads as an unwrapped row, and Flink's encoder writes envelopes without
        ``source``: a row of table "" would be a guess, so the user says which table they are.
        """
        for i, event in enumerate(events):
            if isinstance(event, RowChange) and not event.table:
                if self._default_table is None:
                    raise fail("the message names no table (no source.table or __table); "
                               "give the decoder option default-table=SCHEMA.TABLE if it is one table's row", "$")
                schema, table = self._default_table
                info = event.table_info
                events[i] = msgspec.structs.replace(
                    event, schema=schema, table=table,
                    table_info=None if info is None else msgspec.structs.replace(info, schema=schema, table=table))
        return events

    def _decode_fast(self, raw: bytes, raw_key: bytes | None) -> list[Event] | None:
        split = self._fast.split(raw, raw_key)
        if split is None:
            return None
        return decode_payload(split.payload, split.schema, "$.payload", split.key_names, self.zone, self._schemas,
                              split.schema_key)

    def _decode_raw(self, raw: bytes, raw_key: bytes | None) -> list[Event]:
        key_doc = load_json(raw_key, "key") if raw_key is not None else None
        return decode_document(load_json(raw, "$"), key_doc, self.zone)


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one Kafka message with a one-shot Decoder."""
    return Decoder(options).decode(value, key)


_U64: Final = 1 << 64


def _opt_str(value: Any, at: str) -> str:
    if value is None:
        return ""
    return read_str(value, at)


def _commit_ts(source: Mapping[str, Any], at: str, required: bool) -> int:
    """TiCDC's ``source.commit_ts``; without it the source clock (other producers), or an error if ``required``."""
    commit = source.get("commit_ts")
    if commit is not None:
        ts = read_int(commit, f"{at}.commit_ts")
        if not 0 <= ts < _U64:
            raise fail("commit_ts out of range", f"{at}.commit_ts")
        return ts
    if required:
        raise fail("missing commit_ts", f"{at}.commit_ts")
    return source_commit_ts(source, at)


# --------------------------------------------------------------------------- rows
#: Decoded schemas by a hashable digest of the fields (a topic repeats one schema per table version).
SchemaCache = dict[tuple[Any, ...], Columns]


def _schema_columns(fields: list[dict[str, Any]], key_names: set[str], present: dict[str, None],
                    zone: ZoneInfo, cache: SchemaCache | None) -> Columns:
    digest: tuple[Any, ...] | None = None
    if cache is not None:
        # repr is exact for JSON-parsed values (str/int/float/bool/None/list/dict) and runs in C.
        try:
            digest = (repr(fields), tuple(sorted(key_names)), tuple(present))
        except RecursionError:
            digest = None
        hit = cache.get(digest) if digest is not None else None
        if hit is not None:
            return hit
    result = _typed_columns(fields, key_names, present, zone)
    if digest is not None and cache is not None:
        if len(cache) >= 256:
            cache.clear()
        cache[digest] = result
    return result


def _typed_columns(fields: list[dict[str, Any]], key_names: set[str], present: dict[str, None],
                   zone: ZoneInfo) -> Columns:
    names = {name for f in fields if isinstance(name := f.get("field"), str)}
    if not names.issuperset(present):
        return stale_schema()
    columns: list[ColumnInfo] = []
    converters: dict[str, Converter] = {}
    for field in fields:
        name = field.get("field")
        if not isinstance(name, str) or name in converters:
            continue
        made = column_from_field(field, zone, key=name in key_names, virtual=name not in present)
        if made is not None:
            columns.append(made[0])
            converters[name] = made[1]
    return tuple(columns), converters


#: The schema caches of the decoders, per time zone key.
_SHARED_SCHEMAS: Final[dict[str, SchemaCache]] = {}
_ROW_OPS: Final = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
#: TableInfo per (schema digest, db, table): immutable, so shared by every decoder.
_TABLE_INFOS: dict[tuple[Any, str, str], TableInfo] = {}
#: What a row of a schema named by its text needs, by (schema text, sorted key names, image keys,
#: zone): its generated image reader, its columns and their TableInfo per (db, table). Recorded by
#: the general path when it made the reader (the typed columns are a pure function of the key).
RowPlan = tuple[ImageReader, tuple[ColumnInfo, ...], dict[tuple[str, str], TableInfo]]
_ROW_PLANS: Final[dict[tuple[Any, ...], RowPlan]] = {}


def _planned_row(op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None, key_names: set[str],
                 zone: ZoneInfo, source: dict[str, Any], schema_key: bytes) -> RowChange | None:
    """The row by the plan of its schema and keys, as ``_decode_row`` reads it; None when there is
    no plan yet or anything is out of the common case (the general path then reads and judges it)."""
    if before is None or after is None:
        image = after if before is None else before
        assert image is not None  # _decode_row checked the op's image is there
        names = tuple(image)
    elif before.keys() == after.keys():
        names = tuple(after)  # the general path's union of the keys, in its order
    else:
        return None
    plan = _ROW_PLANS.get((schema_key, tuple(sorted(key_names)), names, zone))
    if plan is None:
        return None
    db = source.get("db")
    table = source.get("table")
    commit = source.get("commit_ts")
    if type(db) is not str or type(table) is not str or type(commit) is not int or not 0 <= commit < _U64:
        return None
    read, columns, infos = plan
    try:
        post = read(after) if op is not Op.DELETE and after is not None else None
        pre = read(before) if op is not Op.INSERT and before is not None else None
    except DECLINES:
        return None
    if (post is None and op is not Op.DELETE) or (pre is None and op is not Op.INSERT and before is not None):
        return None
    info = infos.get((db, table))
    if info is None:
        info = TableInfo(schema=db, table=table, columns=columns)
        if len(infos) >= 64:
            infos.clear()
        infos[db, table] = info
    return RowChange(op=op, schema=db, table=table, commit_ts=commit, columns=make_row(post),
                     pre_columns=make_row(pre), table_info=info)


def _decode_row(op_text: str, payload: dict[str, Any], schema: dict[str, Any] | None, at: str,
                key_names: set[str], zone: ZoneInfo, source: dict[str, Any],
                cache: SchemaCache | None = None, schema_key: bytes | None = None) -> RowChange:
    op = _ROW_OPS[op_text]
    before = payload.get("before")
    if before is not None and type(before) is not dict:
        read_object(before, f"{at}.before")  # raises, naming the path
    after = payload.get("after")
    if after is not None and type(after) is not dict:
        read_object(after, f"{at}.after")
    if op is not Op.DELETE and after is None:
        raise fail("missing after image", f"{at}.after")
    if op is Op.DELETE and before is None:
        raise fail("missing before image", f"{at}.before")
    if schema_key is not None and cache is not None:
        planned = _planned_row(op, before, after, key_names, zone, source, schema_key)
        if planned is not None:
            return planned
    images = [img for img in (after, before) if img is not None]
    present: dict[str, None] = {}
    for img in images:
        present.update(dict.fromkeys(img))
    typed: Columns | None = None
    digest: tuple[Any, ...] | None = None
    if schema_key is not None and cache is not None:
        # The schema text names the schema: no need to look at its parsed fields on a hit.
        digest = (schema_key, tuple(sorted(key_names)), tuple(present))
        typed = cache.get(digest)
    if typed is None:
        fields = row_schema(schema)
        typed = _schema_columns(fields, key_names, present, zone, cache if digest is None else None) \
            if fields is not None else NO_COLUMNS
        if digest is not None and cache is not None:
            if len(cache) >= 256:
                cache.clear()
            cache[digest] = typed
    columns: tuple[ColumnInfo, ...] = typed[0]
    converters = typed[1]
    # A schema named by its text has a generated reader per key set (fastpath.image_reader); one
    # made before says its converters cover the keys.
    fast = cached_reader(converters, digest[2]) if digest is not None else None
    inferred = fast is None and not converters.keys() >= present.keys()
    if inferred:
        converters = dict(converters)
        for name in present:
            if name not in converters:
                column, convert = infer_column(name, [img.get(name) for img in images], name in key_names)
                columns = (*columns, column)
                converters[name] = convert

    if digest is not None and not inferred:
        if fast is None:
            fast = image_reader(converters, digest[2])
        if len(_ROW_PLANS) >= 1024:
            _ROW_PLANS.clear()
        _ROW_PLANS[(digest[0], digest[1], digest[2], zone)] = (fast, columns, {})

    def image(img: dict[str, Any] | None, path: str) -> dict[str, Value] | None:
        if img is None:
            return None
        if fast is not None:
            try:
                read = fast(img)
            except DECLINES:  # a DecodeError among them: raised again below, with its path
                read = None
            if read is not None:
                return read
        out: dict[str, Value] = {}
        try:
            for name, raw in img.items():
                out[name] = None if raw is None else converters[name](raw, "")
        except DecodeError:
            # Converters are pure: convert again with the JSON path, which raises with it. (Building
            # the path of every value up front costs more than the rest of the conversion.)
            for name, raw in img.items():
                if raw is not None:
                    converters[name](raw, f"{path}.{name}")
            raise
        return out

    db = source.get("db")
    if type(db) is not str:
        db = _opt_str(db, f"{at}.source.db")
    table = source.get("table")
    if type(table) is not str:
        table = _opt_str(table, f"{at}.source.table")
    post = image(after, f"{at}.after") if op is not Op.DELETE else None
    pre = image(before, f"{at}.before") if op is not Op.INSERT else None
    info_key = (digest, db, table)
    info = None if inferred or digest is None or cache is None else _TABLE_INFOS.get(info_key)
    if info is None:
        info = TableInfo(schema=db, table=table, columns=tuple(columns))
        if not inferred and digest is not None and cache is not None:
            # Rows of one schema share one TableInfo (its column lookups are built once).
            if len(_TABLE_INFOS) >= 1024:
                _TABLE_INFOS.clear()
            _TABLE_INFOS[info_key] = info
    return RowChange(
        op=op, schema=db, table=table, commit_ts=_commit_ts(source, f"{at}.source", False),
        columns=make_row(post), pre_columns=make_row(pre), table_info=info,
    )


# --------------------------------------------------------------------------- DDL and truncate
_ID_PAIR: Final = re.compile(r'"(.*?)"\."(.*?)"(?:,"(.*?)"\."(.*?)")?', re.DOTALL)


def _decode_ddl(payload: dict[str, Any], at: str, source: dict[str, Any]) -> DDLEvent:
    query = read_str(payload.get("ddl"), f"{at}.ddl")
    db = _opt_str(source.get("db"), f"{at}.source.db")
    table = _opt_str(source.get("table"), f"{at}.source.table")
    database = payload.get("databaseName")
    schema = _opt_str(database, f"{at}.databaseName") or db
    changes = payload.get("tableChanges")
    if changes is not None and not isinstance(changes, list):
        raise fail("tableChanges is not an array", f"{at}.tableChanges")
    change_type: str | None = None
    table_info = pre_info = None
    if changes:
        change = read_object(changes[0], f"{at}.tableChanges[0]")
        assert change is not None
        kind = change.get("type")
        change_type = kind if isinstance(kind, str) else None
        body = read_object(change.get("table"), f"{at}.tableChanges[0].table", optional=True)
        if body is not None:
            table_info = table_from_change(body, db, table)
            ident = change.get("id")
            m = _ID_PAIR.fullmatch(ident) if isinstance(ident, str) else None
            if m is not None and m.group(3) is not None:
                pre_info = TableInfo(schema=m.group(1), table=m.group(2), columns=table_info.columns,
                                     indexes=table_info.indexes, charset=table_info.charset)
    ddl_type = classify_ddl(query, change_type, bool(table))
    return DDLEvent(query=query, ddl_type=ddl_type, commit_ts=_commit_ts(source, f"{at}.source", False),
                    schema=schema, table=table, table_info=table_info, pre_table_info=pre_info)


def _quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def decode_truncate(source: Mapping[str, Any], at: str) -> DDLEvent:
    """Debezium's op ``t`` (a connector whose ``skipped.operations`` lets truncates through): TRUNCATE TABLE."""
    db = _opt_str(source.get("db"), f"{at}.source.db")
    table = _opt_str(source.get("table"), f"{at}.source.table")
    if not table:
        raise fail("a truncate event names no table", f"{at}.source.table")
    target = f"{_quote_ident(db)}.{_quote_ident(table)}" if db else _quote_ident(table)
    return DDLEvent(query=f"TRUNCATE TABLE {target}", ddl_type=int(ActionType.TRUNCATE_TABLE),
                    commit_ts=_commit_ts(source, f"{at}.source", False), schema=db, table=table)


# --------------------------------------------------------------------------- documents
def decode_unwrapped(payload: dict[str, Any], schema: dict[str, Any] | None, at: str, key_names: set[str],
                     zone: ZoneInfo, cache: SchemaCache | None) -> RowChange:
    """An unwrapped row (ExtractNewRecordState) as an upsert; ``tolerant.unwrap_row`` says how it is read."""
    op, envelope, envelope_schema, source = unwrap_row(payload, schema)
    return _decode_row(op, envelope, envelope_schema, at, key_names, zone, source, cache)


def decode_document(doc: Any, key_doc: Any, zone: ZoneInfo, cache: SchemaCache | None = None) -> list[Event]:
    """Events of one parsed Debezium message (and its parsed key, if any); a tombstone has none."""
    payload, schema, at = split_envelope(doc, "$")
    if payload is None:
        return []
    return decode_payload(payload, schema, at, key_names(key_doc), zone, cache)


def decode_payload(payload: dict[str, Any], schema: dict[str, Any] | None, at: str, key_names: set[str],
                   zone: ZoneInfo, cache: SchemaCache | None = None, schema_key: bytes | None = None) -> list[Event]:
    """Events of one envelope (``payload`` at JSON path ``at``) with its schema, if any.

    ``schema_key`` is the schema's JSON text when the caller has it: it then identifies the schema in
    ``cache`` instead of a digest of the parsed fields (a topic repeats one schema text per table version).
    """
    source = read_object(payload.get("source"), f"{at}.source", optional=True)
    if source is None:
        source = {}  # Flink's debezium-json encoder writes only before/after/op
    if "op" in payload:
        op = read_str(payload.get("op"), f"{at}.op")
        if op == "c" or op == "u" or op == "d" or op == "r":
            return [_decode_row(op, payload, schema, at, key_names, zone, source, cache, schema_key)]
        if op == "m":
            return [Watermark(resolved_ts=_commit_ts(source, f"{at}.source", True))]
        if op == "t":
            return [decode_truncate(source, at)]
        raise fail(f"unknown op {op!r}", f"{at}.op")
    if "ddl" in payload:
        return [_decode_ddl(payload, at, source)]
    if is_unwrapped_row(payload):
        return [decode_unwrapped(payload, schema, at, key_names, zone, cache)]
    raise not_a_change_event(payload, at)
