"""TiCDC Simple protocol, JSON and Avro (``pkg/sink/codec/simple``, reference §6, §8).

One Kafka message per event, key nil. ``encoding-format=json`` is Go ``encoding/json`` of the
``message`` struct (field order fixed, ``data``/``old`` keys sorted); ``encoding-format=avro`` is
goavro with ``message.json`` (union branch 11, so every message starts with ``0x16``).

Encoder
    WATERMARK for a Watermark, BOOTSTRAP for a Bootstrap, a DDL message (``tableSchema`` /
    ``preTableSchema``) for a DDLEvent, INSERT/UPDATE/DELETE for a RowChange (which must carry
    its ``table_info``). With ``auto_bootstrap=True`` (the default) the encoder also plays
    TiCDC's bootstrap worker for the partition it encodes: a BOOTSTRAP message precedes the first
    row of every table, and later rows when ``send-bootstrap-interval-in-sec`` or
    ``send-bootstrap-in-msg-count`` says so (see ``BootstrapPolicy``; both must be > 0).
    TiCDC's codec itself never emits BOOTSTRAP (its sink does, broadcast to the partitions), so a
    router that runs ``BootstrapPolicy`` itself, and the golden vectors, use ``auto_bootstrap=False``.

Decoder
    Keeps a schema cache keyed by (schema, table, schemaVersion), fed by BOOTSTRAP and DDL
    messages and by ``Decoder.register_table``. A DML message is decoded into typed model
    values with the cached TableInfo. When its schema is not known yet, the row is returned with
    ``table_info=None`` and its **wire values**: JSON strings (a TIMESTAMP object becomes its
    ``value`` string; binary columns stay base64), or the Avro branch value (int, float, str,
    bytes; a Timestamp record its ``value``, an UnsignedBigint the uint64) — and
    ``schema_version`` set, so a consumer can hold the row and call ``resolve_row`` once the
    matching BOOTSTRAP/DDL arrives.

Speed
    DML messages as TiCDC writes them take per-table code generated once per table version
    (``_fast``): a run of JSON messages of one table costs one msgspec decode each, Avro ones
    one pass over the bytes, and rows are encoded by straight-line writers. Anything else takes
    the general path below, which alone raises errors, so both give the same events and bytes.

What a round trip keeps (``Encoder.project``): row values exactly (JSON turns invalid UTF-8 in
text-charset strings into U+FFFD; NaN/±Inf floats become 0 as TiCDC's mounter does), no
``row_id``, ``table_id``/``physical_table_id`` from the wire, the table schema as TableSchema
carries it (type code from ``mysqlType``, flags re-derived from indexes, §1.2; no type_desc,
comment, generated/virtual marks; Avro keeps ``decimal`` for DECIMAL only), DDL ``ddl_type``
reduced to the Simple type's representative action (CREATE 3, ALTER 5, ERASE 4, RENAME 14,
TRUNCATE 11, CINDEX 7, DINDEX 8, QUERY 0) and no ``start_ts``. Virtual generated columns and
columns unknown to the table are not written.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec
import orjson

from pyticdc.codec.base import BaseDecoder, BaseEncoder, ClaimCheckStore, Message
from pyticdc.codec.compression import compress, decompress
from pyticdc.codec.jsontext import go_json_quote
from pyticdc.codec.options import Clock, CodecOptions
from pyticdc.codec.simple import _fast
from pyticdc.codec.simple import _values as V
from pyticdc.codec.simple._avro import (
    DDL_TYPES,
    DML_TYPES,
    MESSAGE_BRANCH,
    MESSAGE_TYPES,
    VALUE_BRANCH,
    VALUE_BRANCH_NAMES,
    AvroReader,
    long_bytes,
    write_long,
    write_str,
)
from pyticdc.codec.simple._tableschema import (
    avro_table_schema,
    json_table_schema,
    project_table,
    read_avro_table_schema,
    table_from_wire,
)
from pyticdc.codec.simple.policy import BootstrapPolicy
from pyticdc.errors import ConfigError, DecodeError, EncodeError
from pyticdc.model import (
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    Op,
    Row,
    RowChange,
    TableInfo,
    Value,
    Watermark,
)

__all__ = [
    "DDL_TYPE_ACTIONS",
    "OPTIONS",
    "PROTOCOL",
    "BootstrapPolicy",
    "Decoder",
    "Encoder",
    "ddl_message_type",
    "decode",
    "encode",
    "explain",
    "resolve_row",
]

PROTOCOL: Final = "simple"
OPTIONS: Final = frozenset({
    "max_message_bytes", "large_message_handle_option", "large_message_handle_compression",
    "claim_check_storage_uri", "claim_check_raw_value", "encoding_format", "time_zone",
    "send_bootstrap_interval_in_sec", "send_bootstrap_in_msg_count", "send_bootstrap_to_all_partition",
})

_MASK64: Final = (1 << 64) - 1
_NULL_RAW: Final = _fast.NULL_RAW
_RECORD_OVERHEAD: Final = 36  # common.Message.Length(): key + value + MaxRecordOverhead
_DML_TYPES: Final = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}
_OPS: Final = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
# Enum members as module constants: attribute access on the Enum class is slow in hot paths.
_INSERT: Final = Op.INSERT
_DELETE: Final = Op.DELETE
_JSON_DML_DECODE: Final = _fast.JSON_DML_DECODER.decode
# Message, type DML, payload DML, version 1: how every DML message TiCDC writes starts.
_AVRO_DML: Final = bytes([MESSAGE_BRANCH << 1, MESSAGE_TYPES.index("DML") << 1, MESSAGE_TYPES.index("DML") << 1, 2])
_FAST_PATH_ERRORS: Final = _fast.FAST_PATH_ERRORS
_replace: Final = msgspec.structs.replace

# getDDLType (message.go): TiDB ActionType → Simple DDL type.
_ALTER_ACTIONS: Final = frozenset({5, 6, 12, 13, 15, 17, 18, 19, 20, 22, 23, 41, 61, 64, 71, 72})
#: Simple DDL type → the ActionType a decoded DDLEvent reports (the wire keeps only the type).
DDL_TYPE_ACTIONS: Final[dict[str, int]] = {
    "CREATE": 3, "ALTER": 5, "ERASE": 4, "RENAME": 14, "TRUNCATE": 11, "CINDEX": 7, "DINDEX": 8, "QUERY": 0,
}


def ddl_message_type(ddl_type: int) -> str:
    """``getDDLType``: the Simple ``type`` of a DDL with TiDB ActionType ``ddl_type``."""
    if ddl_type == 3:
        return "CREATE"
    if ddl_type in (14, 47):
        return "RENAME"
    if ddl_type in (7, 9, 32):
        return "CINDEX"
    if ddl_type in (8, 10, 33):
        return "DINDEX"
    if ddl_type == 4:
        return "ERASE"
    if ddl_type == 11:
        return "TRUNCATE"
    if ddl_type in _ALTER_ACTIONS:
        return "ALTER"
    return "QUERY"


def _u64_as_i64(number: int) -> int:
    return number - (1 << 64) if number > 0x7FFFFFFFFFFFFFFF else number


def _zz_byte(branch: int) -> int:
    return branch << 1  # zigzag of a small non-negative union index / enum index


_I_NULL, _I_LONG, _I_FLOAT, _I_DOUBLE, _I_STRING, _I_BYTES, _I_TIMESTAMP, _I_UBIGINT = (
    VALUE_BRANCH[n] for n in ("null", "long", "float", "double", "string", "bytes", "Timestamp", "UnsignedBigint")
)
_AVRO_RECORDS: Final = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}
_AVRO_HEAD: Final = {
    name: bytes([_zz_byte(MESSAGE_BRANCH), _zz_byte(i), _zz_byte(i), 0x02])  # branch, type, payload, version 1
    for i, name in enumerate(MESSAGE_TYPES)
}


# --------------------------------------------------------------------------- column plans
class _Col:
    """How one column is written and read (precomputed per table and encoding)."""

    __slots__ = ("avro_key", "binary", "bounds", "column", "handle", "high", "json_key", "kind", "low", "name",
                 "ubigint", "virtual")

    def __init__(self, column: ColumnInfo) -> None:
        self.name = column.name
        self.column = column
        self.kind = V.column_kind(column)
        self.binary = V.is_binary_column(column)
        self.handle = bool(column.flags & ColumnFlag.HANDLE_KEY)
        self.virtual = column.virtual
        # encodeValue4Avro: BIGINT UNSIGNED → UnsignedBigint record.
        self.ubigint = column.type_code == 8 and column.is_unsigned
        self.bounds = V.int_bounds(column)
        self.low, self.high = self.bounds
        self.json_key = go_json_quote(column.name) + ":"
        encoded = column.name.encode("utf-8", "surrogateescape")
        self.avro_key = long_bytes(len(encoded)) + encoded


def _plan(table: TableInfo) -> tuple[list[_Col], list[_Col]]:
    """Columns in table order and in sorted-name order (JSON maps), cached on the TableInfo."""
    cache = table.__dict__
    plan: tuple[list[_Col], list[_Col]] | None = cache.get("_pyticdc_simple_plan")
    if plan is None:
        ordered = [_Col(c) for c in table.columns]
        # encoding/json sorts map keys by their UTF-8 bytes.
        plan = (ordered, sorted(ordered, key=lambda c: c.name.encode("utf-8", "surrogateescape")))
        cache["_pyticdc_simple_plan"] = plan
    return plan


def _location_name(time_zone: str) -> str:
    # Go time.Location.String(): LoadLocation("") is UTC; the server's own zone prints "Local".
    if time_zone in ("", "UTC"):
        return "UTC"
    return "Local" if time_zone in ("Local", "System") else time_zone


# --------------------------------------------------------------------------- encoder
class Encoder(BaseEncoder):
    """Simple-protocol encoder (JSON or Avro per ``encoding-format``)."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *, clock: Clock | None = None,
        claim_check: ClaimCheckStore | None = None, auto_bootstrap: bool = True,
        bootstrap_policy: BootstrapPolicy | None = None, partition: int | None = None, **kwargs: Any,
    ) -> None:
        super().__init__(options, clock=clock, claim_check=claim_check, **kwargs)
        #: Emit BOOTSTRAP before rows as TiCDC's bootstrap worker would (see module docs); with
        #: ``send-bootstrap-to-all-partition=false`` only the encoder of ``partition`` 0 (or of an
        #: unknown partition) does.
        self.auto_bootstrap = auto_bootstrap and (
            partition is None or partition == 0 or self.options.send_bootstrap_to_all_partition)
        #: The BOOTSTRAP schedule used when ``auto_bootstrap`` is on.
        self.bootstrap_policy = bootstrap_policy or BootstrapPolicy.from_options(self.options)
        self._avro = self.options.encoding_format == "avro"
        location = _location_name(self.options.time_zone)
        self._location_json = go_json_quote(location)
        loc = location.encode("utf-8")
        self._location_avro = long_bytes(len(loc)) + loc

    def _validate(self) -> None:
        opts = self.options
        if (opts.large_message_handle_option == "claim-check" and not opts.claim_check_storage_uri
                and self.claim_check is None):
            raise ConfigError("simple: large-message-handle-option=claim-check needs claim-check-storage-uri")

    # ---- public surface
    def encode(self, events: Iterable[Event]) -> list[Message]:
        """One message per event (plus BOOTSTRAP messages when ``auto_bootstrap``)."""
        messages: list[Message] = []
        policy = self.bootstrap_policy if self.auto_bootstrap and self.bootstrap_policy.enabled else None
        for event in events:
            if isinstance(event, RowChange):
                if policy is not None:
                    table = self._table_of(event)
                    key = event.physical_table_id or table.table_id
                    now = self.clock()
                    if policy.should_emit(table, now, 1, table_key=key):
                        messages.append(self._bootstrap_message(Bootstrap(table_info=table, build_ts=now), now))
                messages.append(self._row_message(event))
            elif isinstance(event, DDLEvent):
                messages.append(self._ddl_message(event))
            elif isinstance(event, Watermark):
                messages.append(self._watermark_message(event))
            elif isinstance(event, Bootstrap):
                messages.append(self._bootstrap_message(event))
            else:
                raise EncodeError(PROTOCOL, f"cannot encode {type(event).__name__}")
        return messages

    def bootstrap_message(self, table_info: TableInfo) -> Message:
        """The BOOTSTRAP message for ``table_info`` (what the routing layer broadcasts)."""
        return self._bootstrap_message(Bootstrap(table_info=table_info))

    def project(self, event: Event) -> Event | None:
        """The event as this protocol's decoder returns it (module docs list what is lost).

        Assumes the decoder learnt the schema from this encoder's BOOTSTRAP/DDL messages and,
        for claim-check, can read the store (the full row comes back, without a location).
        """
        encoding = "avro" if self._avro else "json"
        if isinstance(event, Watermark):
            return event
        if isinstance(event, Bootstrap):
            return Bootstrap(table_info=project_table(event.table_info, encoding), build_ts=self.clock())
        if isinstance(event, DDLEvent):
            after = project_table(event.table_info, encoding) if event.table_info is not None else None
            before = project_table(event.pre_table_info, encoding) if event.pre_table_info is not None else None
            named = after or before
            return DDLEvent(
                query=event.query, ddl_type=DDL_TYPE_ACTIONS[ddl_message_type(event.ddl_type)],
                commit_ts=event.commit_ts, schema=named.schema if named else "", table=named.table if named else "",
                table_info=after, pre_table_info=before,
            )
        if isinstance(event, RowChange):
            return self._project_row(event, encoding)
        raise EncodeError(PROTOCOL, f"cannot encode {type(event).__name__}")

    # ---- messages
    def _finish(self, value: bytes, events: tuple[Event, ...], what: str, check: bool = True) -> Message:
        value = compress(self.options.large_message_handle_compression, value)
        if check and len(value) + _RECORD_OVERHEAD > self.options.max_message_bytes:
            raise EncodeError(PROTOCOL, f"{what} message of {len(value) + _RECORD_OVERHEAD} bytes exceeds "
                                        f"max-message-bytes {self.options.max_message_bytes}")
        return Message(None, value, events)

    def _watermark_message(self, event: Watermark) -> Message:
        ts = event.resolved_ts
        if not 0 <= ts <= _MASK64:
            raise EncodeError(PROTOCOL, f"resolved_ts {ts} is not a uint64")
        build_ts = self.clock()
        if self._avro:
            out = bytearray(_AVRO_HEAD["WATERMARK"])
            write_long(out, _u64_as_i64(ts))
            write_long(out, build_ts)
            value = bytes(out)
        else:
            value = f'{{"version":1,"type":"WATERMARK","commitTs":{ts},"buildTs":{build_ts}}}'.encode()
        # EncodeCheckpointEvent does not check the size.
        return self._finish(value, (event,), "WATERMARK", check=False)

    def _bootstrap_message(self, event: Bootstrap, build_ts: int | None = None) -> Message:
        # buildTs is time.Now() when encoding, whatever the event says.
        build_ts = self.clock() if build_ts is None else build_ts
        if self._avro:
            out = bytearray(_AVRO_HEAD["BOOTSTRAP"])
            write_long(out, build_ts)
            avro_table_schema(out, event.table_info)
            value = bytes(out)
        else:
            schema = json_table_schema(event.table_info)
            value = self._utf8(f'{{"version":1,"type":"BOOTSTRAP","commitTs":0,"buildTs":{build_ts},'
                               f'"tableSchema":{schema}}}')
        return self._finish(value, (event,), "BOOTSTRAP")

    def _ddl_message(self, event: DDLEvent) -> Message:
        if not 0 <= event.commit_ts <= _MASK64:
            raise EncodeError(PROTOCOL, f"commit_ts {event.commit_ts} is not a uint64")
        kind = ddl_message_type(event.ddl_type)
        build_ts = self.clock()
        if self._avro:
            out = bytearray(_AVRO_HEAD["DDL"])
            out.append(_zz_byte(DDL_TYPES.index(kind)))
            write_str(out, event.query)
            write_long(out, _u64_as_i64(event.commit_ts))
            write_long(out, build_ts)
            for table in (event.table_info, event.pre_table_info):
                if table is None:
                    out.append(0x00)
                else:
                    out.append(0x02)
                    avro_table_schema(out, table)
            value = bytes(out)
        else:
            parts = ['{"version":1,"type":"', kind, '"']
            if event.query:
                parts += [',"sql":', go_json_quote(event.query)]
            parts.append(f',"commitTs":{event.commit_ts},"buildTs":{build_ts}')
            if event.table_info is not None:
                parts += [',"tableSchema":', json_table_schema(event.table_info)]
            if event.pre_table_info is not None:
                parts += [',"preTableSchema":', json_table_schema(event.pre_table_info)]
            parts.append("}")
            value = self._utf8("".join(parts))
        return self._finish(value, (event,), "DDL")

    @staticmethod
    def _utf8(text: str) -> bytes:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(PROTOCOL, f"text is not valid Unicode: {exc}") from None

    @staticmethod
    def _table_of(row: RowChange) -> TableInfo:
        if row.table_info is None:
            raise EncodeError(PROTOCOL, f"row of {row.schema}.{row.table} has no table_info (Simple needs it)")
        return row.table_info

    def _images(self, row: RowChange) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
        op = row.op
        data = row.columns if op is not Op.DELETE else None
        old = row.pre_columns if op is not Op.INSERT else None
        if (op is not Op.DELETE and data is None) or (op is not Op.INSERT and old is None):
            raise EncodeError(PROTOCOL, f"{op.value} row of {row.schema}.{row.table} lacks a row image")
        return data, old

    def _row_message(self, row: RowChange) -> Message:
        table = self._table_of(row)
        data, old = self._images(row)
        value = compress(self.options.large_message_handle_compression, self._dml(row, table, data, old, False, ""))
        limit = self.options.max_message_bytes
        if len(value) + _RECORD_OVERHEAD <= limit:
            return Message(None, value, (row,))
        option = self.options.large_message_handle_option
        if option == "none":
            raise EncodeError(PROTOCOL, f"message of {len(value) + _RECORD_OVERHEAD} bytes exceeds "
                                        f"max-message-bytes {limit}")
        location = ""
        if option == "claim-check":
            if self.claim_check is None:
                raise EncodeError(PROTOCOL, "claim-check needs a claim_check store")
            location = self.claim_check.put(None, value)  # the full (compressed) message, key nil
        value = compress(self.options.large_message_handle_compression,
                         self._dml(row, table, data, old, True, location))
        if len(value) + _RECORD_OVERHEAD <= limit:
            return Message(None, value, (row,))
        raise EncodeError(PROTOCOL, f"message of {len(value) + _RECORD_OVERHEAD} bytes still exceeds "
                                    f"max-message-bytes {limit} with handle-key columns only")

    def _dml(
        self, row: RowChange, table: TableInfo, data: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
        handle_only: bool, location: str,
    ) -> bytes:
        commit_ts, version = row.commit_ts, table.schema_version
        if not 0 <= commit_ts <= _MASK64:
            raise EncodeError(PROTOCOL, f"commit_ts {commit_ts} is not a uint64")
        if not 0 <= version <= _MASK64:
            raise EncodeError(PROTOCOL, f"schema_version {version} is not a uint64")
        # Reference §6.1: tableID is the physical (partition) table id.
        table_id = row.physical_table_id or row.table_id or table.table_id
        ordered, by_name = _plan(table)
        writers = _fast.writers(table)
        if self._avro:
            return self._dml_avro(row, table, table_id, ordered, data, old, handle_only, location, writers)
        if writers is not None and not handle_only and not location:
            # The common message: the same members as below, from the table's precomputed parts.
            text = writers.json_head
            if table_id:
                text += f',"tableID":{table_id}'
            text += (f',"type":"{_DML_TYPES[row.op]}","commitTs":{commit_ts},"buildTs":{self.clock()}'
                     f'{writers.json_version}')
            if data is not None:
                body = self._json_body(writers, by_name, data)
                if body:  # omitempty drops an empty map
                    text += ',"data":{' + body + "}"
            if old is not None:
                body = self._json_body(writers, by_name, old)
                if body:
                    text += ',"old":{' + body + "}"
            return self._utf8(text + "}")
        parts = ['{"version":1']
        if table.schema:
            parts += [',"database":', go_json_quote(table.schema)]
        if table.table:
            parts += [',"table":', go_json_quote(table.table)]
        if table_id:
            parts.append(f',"tableID":{table_id}')
        parts.append(f',"type":"{_DML_TYPES[row.op]}","commitTs":{commit_ts},"buildTs":{self.clock()}')
        if version:
            parts.append(f',"schemaVersion":{version}')
        if location:
            parts += [',"claimCheckLocation":', go_json_quote(location)]
        if handle_only:
            parts.append(',"handleKeyOnly":true')
        for field, image in ((',"data":{', data), (',"old":{', old)):
            if image is not None:
                body = self._json_image(by_name, image, handle_only)
                if body:  # omitempty drops an empty map
                    parts += [field, body, "}"]
        parts.append("}")
        return self._utf8("".join(parts))

    def _json_body(self, writers: _fast.Writers, plan: list[_Col], image: Mapping[str, Any]) -> str:
        try:
            return writers.json_image(image, self._location_json)
        except _fast.WRITER_FALLBACK:  # a missing column, a float past float32: the general way
            return self._json_image(plan, image, False)

    def _json_image(self, plan: list[_Col], image: Mapping[str, Any], handle_only: bool) -> str:
        items = []
        location = self._location_json
        for col in plan:
            name = col.name
            if name not in image or col.virtual or (handle_only and not col.handle):
                continue
            value = image[name]
            if value is None:
                items.append(col.json_key + "null")
            elif col.kind == V.KIND_INT and type(value) is int and col.low <= value <= col.high:
                items.append(f'{col.json_key}"{value}"')  # the common case, without the general path
            else:
                value = V.normalize(value, col.column, col.kind, col.bounds)
                items.append(col.json_key + V.json_value(value, col.kind, col.binary, location))
        return ",".join(items)

    def _dml_avro(
        self, row: RowChange, table: TableInfo, table_id: int, plan: list[_Col], data: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None, handle_only: bool, location: str, writers: _fast.Writers | None,
    ) -> bytes:
        out = bytearray(_AVRO_HEAD["DML"])
        if writers is None:
            write_str(out, table.schema)
            write_str(out, table.table)
        else:
            out += writers.avro_head
        write_long(out, table_id)
        out.append(_zz_byte(DML_TYPES.index(_DML_TYPES[row.op])))
        write_long(out, _u64_as_i64(row.commit_ts))
        write_long(out, self.clock())
        if writers is None:
            write_long(out, _u64_as_i64(table.schema_version))
        else:
            out += writers.avro_version
        option = self.options.large_message_handle_option
        if option == "claim-check" and location:
            out.append(0x02)
            write_str(out, location)
        else:
            out.append(0x00)
        out += b"\x02\x01" if handle_only and option != "none" else b"\x00"
        out.append(0x00)  # checksum: row checksums are not part of the model
        for image in (data, old):
            if image is None:
                out.append(0x00)
                continue
            out.append(0x02)
            if writers is not None and not handle_only:
                mark = len(out)
                try:
                    writers.avro_image(out, image, self._location_avro)
                    continue
                except _fast.WRITER_FALLBACK:  # a missing column, a float past float32: the general way
                    del out[mark:]
            self._avro_image(out, plan, image, handle_only)
        return bytes(out)

    def _avro_image(self, out: bytearray, plan: list[_Col], image: Mapping[str, Any], handle_only: bool) -> None:
        # goavro writes a map as one block (count, entries, 0); entries here follow table order.
        entries = bytearray()
        count = 0
        location = self._location_avro
        for col in plan:
            if col.name not in image or col.virtual or (handle_only and not col.handle):
                continue
            count += 1
            entries += col.avro_key
            _fast.avro_value(entries, col.column, col.kind, col.binary, col.ubigint, col.bounds, image[col.name],
                             location)
        if count:
            write_long(out, count)
            out += entries
        out.append(0x00)

    # ---- projection
    def _project_row(self, row: RowChange, encoding: str) -> RowChange:
        table = self._table_of(row)
        data, old = self._images(row)
        value = compress(self.options.large_message_handle_compression, self._dml(row, table, data, old, False, ""))
        handle_only = False
        option = self.options.large_message_handle_option
        if len(value) + _RECORD_OVERHEAD > self.options.max_message_bytes:
            if option == "none":
                raise EncodeError(PROTOCOL, "message exceeds max-message-bytes")
            handle_only = option == "handle-key-only"
        ordered, _ = _plan(table)
        projected = project_table(table, encoding)

        def image(values: Mapping[str, Any] | None) -> Row | None:
            if values is None:
                return None
            return Row({
                col.name: V.project_value(V.normalize(values[col.name], col.column, col.kind, col.bounds), col.kind,
                                          col.binary, encoding)
                for col in ordered
                if col.name in values and not col.virtual and not (handle_only and not col.handle)
            })

        return RowChange(
            op=row.op, schema=table.schema, table=table.table, commit_ts=row.commit_ts, columns=image(data),
            pre_columns=image(old), table_id=projected.table_id,
            physical_table_id=row.physical_table_id or row.table_id or table.table_id, table_info=projected,
            handle_key_only=handle_only, schema_version=table.schema_version,
        )




# --------------------------------------------------------------------------- wire messages
class _Wire:
    """One parsed message, encoding-neutral (``message`` struct of message.go)."""

    __slots__ = ("avro", "build_ts", "checksum", "claim_check_location", "commit_ts", "data", "database",
                 "handle_key_only", "kind", "old", "pre_table_schema", "schema_version", "sql", "table",
                 "table_id", "table_schema", "type", "version")

    def __init__(self, kind: str, avro: bool) -> None:
        self.kind = kind  # WATERMARK | BOOTSTRAP | DDL | DML
        self.avro = avro
        self.type = kind
        self.version = 0
        self.database = ""
        self.table = ""
        self.table_id = 0
        self.sql = ""
        self.commit_ts = 0
        self.build_ts = 0
        self.schema_version = 0
        self.claim_check_location = ""
        self.handle_key_only = False
        self.checksum: dict[str, Any] | None = None
        self.data: dict[str, Any] | None = None
        self.old: dict[str, Any] | None = None
        self.table_schema: dict[str, Any] | None = None
        self.pre_table_schema: dict[str, Any] | None = None


def _json_field(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DecodeError(PROTOCOL, f"expected {kind.__name__}", f"$.{key}")
    return value


def _json_uint(obj: dict[str, Any], key: str) -> int:
    value: int = _json_field(obj, key, int, 0)
    if not 0 <= value <= _MASK64:
        raise DecodeError(PROTOCOL, f"{value} is not a uint64", f"$.{key}")
    return value


def _json_int(obj: dict[str, Any], key: str) -> int:
    value: int = _json_field(obj, key, int, 0)
    if not -(1 << 63) <= value < (1 << 63):
        raise DecodeError(PROTOCOL, f"{value} is not an int64", f"$.{key}")
    return value


_DDL_KINDS: Final = frozenset(DDL_TYPE_ACTIONS)


def _parse_json(data: bytes) -> _Wire:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(PROTOCOL, f"invalid JSON: {exc.msg}", exc.pos) from None
    if not isinstance(obj, dict):
        raise DecodeError(PROTOCOL, "expected a JSON object", "$")
    kind_text = obj.get("type")
    if not isinstance(kind_text, str):
        raise DecodeError(PROTOCOL, "missing message type", "$.type")
    if kind_text in ("WATERMARK", "BOOTSTRAP"):
        wire = _Wire(kind_text, False)
    elif kind_text in _DDL_KINDS:
        wire = _Wire("DDL", False)
    elif kind_text in _OPS:
        wire = _Wire("DML", False)
    else:
        raise DecodeError(PROTOCOL, f"unknown message type {kind_text!r:.40}", "$.type")
    wire.type = kind_text
    wire.version = _json_int(obj, "version")
    wire.commit_ts = _json_uint(obj, "commitTs")
    wire.build_ts = _json_int(obj, "buildTs")
    if wire.kind == "BOOTSTRAP":
        wire.table_schema = _json_field(obj, "tableSchema", dict, None)
        if wire.table_schema is None:
            raise DecodeError(PROTOCOL, "BOOTSTRAP without tableSchema", "$.tableSchema")
    elif wire.kind == "DDL":
        wire.sql = _json_field(obj, "sql", str, "")
        wire.table_schema = _json_field(obj, "tableSchema", dict, None)
        wire.pre_table_schema = _json_field(obj, "preTableSchema", dict, None)
    elif wire.kind == "DML":
        wire.database = _json_field(obj, "database", str, "")
        wire.table = _json_field(obj, "table", str, "")
        wire.table_id = _json_int(obj, "tableID")
        wire.schema_version = _json_uint(obj, "schemaVersion")
        wire.claim_check_location = _json_field(obj, "claimCheckLocation", str, "")
        wire.handle_key_only = _json_field(obj, "handleKeyOnly", bool, False)
        wire.checksum = _json_field(obj, "checksum", dict, None)
        wire.data = _json_field(obj, "data", dict, None)
        wire.old = _json_field(obj, "old", dict, None)
    return wire


def _read_avro_values(reader: AvroReader, tagged: bool) -> dict[str, Any]:
    if not tagged:
        return _read_avro_values_fast(reader)
    values: dict[str, Any] = {}
    count = reader.block_count()
    while count:
        for _ in range(count):
            name = reader.string()
            branch = reader.index(8, "map value union")
            value: Any
            if branch == _I_NULL:
                value = None
            elif branch == _I_LONG:
                value = reader.long()
            elif branch == _I_STRING:
                value = reader.string()
            elif branch == _I_BYTES:
                value = reader.raw()
            elif branch == _I_DOUBLE:
                value = reader.float64()
            elif branch == _I_FLOAT:
                value = reader.float32()
            elif branch == _I_TIMESTAMP:
                location = reader.string()
                value = reader.string()
                if tagged:
                    value = {"location": location, "value": value}
            else:  # UnsignedBigint: the uint64 written as int64
                value = reader.long()
                value = {"value": value} if tagged else value & _MASK64
            values[name] = (branch, value) if tagged else value
        count = reader.block_count()
    return values


def _read_avro_values_fast(reader: AvroReader) -> dict[str, Any]:
    """The hot loop of Avro decoding: a map of column values, single-byte varints inlined.

    Anything unusual (multi-byte varints, the end of the buffer) goes through the checked
    reader methods, so errors are the same DecodeErrors at the same offsets.
    """
    buf, end = reader.buf, reader.end
    values: dict[str, Any] = {}
    count = reader.block_count()
    while count:
        for _ in range(count):
            pos = reader.pos
            # key: a string whose length is one varint byte in practice
            size = buf[pos] if pos < end else 0x80
            if size < 0x80 and pos + 1 + (size >> 1) <= end and not size & 1:
                pos += 1
                name = buf[pos:pos + (size >> 1)].decode("utf-8", "surrogateescape")
                pos += size >> 1
                reader.pos = pos
            else:
                name = reader.string()
                pos = reader.pos
            branch = buf[pos] if pos < end else 0xFF
            if branch < 0x10 and not branch & 1:  # zigzag of 0..7
                reader.pos = pos + 1
                branch >>= 1
            else:
                branch = reader.index(8, "map value union")
            value: Any
            if branch == _I_LONG:
                # zigzag varint, inlined; at most 10 bytes, else the checked reader reports it
                pos = reader.pos
                result = shift = 0
                while pos < end and shift < 64:
                    byte = buf[pos]
                    pos += 1
                    result |= (byte & 0x7F) << shift
                    if byte < 0x80:
                        break
                    shift += 7
                else:
                    result = -1
                if result < 0 or result >> 64:
                    value = reader.long()  # raises the precise error
                else:
                    reader.pos = pos
                    value = (result >> 1) ^ -(result & 1)
            elif branch == _I_STRING:
                pos = reader.pos
                size = buf[pos] if pos < end else 0x80
                if size < 0x80 and not size & 1 and pos + 1 + (size >> 1) <= end:
                    pos += 1
                    value = buf[pos:pos + (size >> 1)].decode("utf-8", "surrogateescape")
                    reader.pos = pos + (size >> 1)
                else:
                    value = reader.string()
            elif branch == _I_NULL:
                value = None
            elif branch == _I_BYTES:
                value = reader.raw()
            elif branch == _I_DOUBLE:
                value = reader.float64()
            elif branch == _I_FLOAT:
                value = reader.float32()
            elif branch == _I_TIMESTAMP:
                reader.string()  # location: the value is already in it
                value = reader.string()
            else:  # UnsignedBigint: the uint64 written as int64
                value = reader.long() & _MASK64
            values[name] = value
        count = reader.block_count()
    return values


def _parse_avro(data: bytes, tagged: bool = False) -> _Wire:
    reader = AvroReader(data)
    if reader.index(12, "top-level union") != MESSAGE_BRANCH:
        raise reader.fail("not a com.pingcap.simple.avro.Message", 0)
    kind_index = reader.index(len(MESSAGE_TYPES), "MessageType enum")
    start = reader.pos
    if reader.index(4, "payload union") != kind_index:
        raise reader.fail("payload does not match the message type", start)
    wire = _Wire(MESSAGE_TYPES[kind_index], True)
    wire.version = reader.int32()
    if wire.kind == "WATERMARK":
        wire.commit_ts = reader.long() & _MASK64
        wire.build_ts = reader.long()
    elif wire.kind == "BOOTSTRAP":
        wire.build_ts = reader.long()
        wire.table_schema = read_avro_table_schema(reader)
    elif wire.kind == "DDL":
        wire.type = DDL_TYPES[reader.index(len(DDL_TYPES), "DDLType enum")]
        wire.sql = reader.string()
        wire.commit_ts = reader.long() & _MASK64
        wire.build_ts = reader.long()
        if reader.index(2, "union") == 1:
            wire.table_schema = read_avro_table_schema(reader)
        if reader.index(2, "union") == 1:
            wire.pre_table_schema = read_avro_table_schema(reader)
    else:
        wire.database = reader.string()
        wire.table = reader.string()
        wire.table_id = reader.long()
        wire.type = DML_TYPES[reader.index(len(DML_TYPES), "DMLType enum")]
        wire.commit_ts = reader.long() & _MASK64
        wire.build_ts = reader.long()
        wire.schema_version = reader.long() & _MASK64
        if reader.index(2, "union") == 1:
            wire.claim_check_location = reader.string()
        if reader.index(2, "union") == 1:
            wire.handle_key_only = reader.boolean()
        if reader.index(2, "union") == 1:
            wire.checksum = {"version": reader.int32(), "corrupted": reader.boolean(),
                             "current": reader.long(), "previous": reader.long()}
        if reader.index(2, "union") == 1:
            wire.data = _read_avro_values(reader, tagged)
        if reader.index(2, "union") == 1:
            wire.old = _read_avro_values(reader, tagged)
    reader.done()
    return wire


# --------------------------------------------------------------------------- decoder
def _typed_image(
    values: dict[str, Any] | None, table: TableInfo, path: str
) -> Row | None:
    if values is None:
        return None
    ordered, _ = _plan(table)
    result: dict[str, Value] = {}
    for col in ordered:
        name = col.name
        if name not in values:  # missing: a generated column TiCDC does not replicate
            continue
        value = values[name]
        kind = col.kind
        # Values already in their model type (Avro) skip the general conversion.
        if value is None or (type(value) is int and kind == V.KIND_INT and (value >= 0 or col.low < 0)) or (
                type(value) is float and kind == V.KIND_DOUBLE) or (type(value) is str and kind == V.KIND_TEXT):
            result[name] = value
        else:
            result[name] = V.from_wire(value, col.column, kind, col.binary, f"{path}.{name}")
    return Row(result)


def _wire_image(values: dict[str, Any] | None, avro: bool, path: str) -> Row | None:
    if values is None:
        return None
    if avro:
        return Row(values)
    return Row({name: V.unresolved_json_value(v, f"{path}.{name}") for name, v in values.items()})


def _fast_wire_image(raw: msgspec.Raw) -> Row:
    # The wire strings of a row whose schema is unknown (as _wire_image keeps them).
    values = _fast.JSON_WIRE_IMAGE_DECODER.decode(raw)
    for name, value in values.items():
        if type(value) is _fast.JsonTimestamp:
            values[name] = value.value
    return Row(values)


def resolve_row(row: RowChange, table_info: TableInfo) -> RowChange:
    """Type the wire values of a row decoded before its schema was known (``table_info=None``).

    ``table_info`` should be the schema the row was written under: same schema and table name
    and ``schema_version == row.schema_version``. Rows that already carry a table_info are
    returned unchanged. Malformed wire values raise DecodeError.
    """
    if row.table_info is not None:
        return row
    data = None if row.columns is None else dict(row.columns)
    old = None if row.pre_columns is None else dict(row.pre_columns)
    return RowChange(
        op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
        columns=_typed_image(data, table_info, "$.data"), pre_columns=_typed_image(old, table_info, "$.old"),
        table_id=table_info.table_id, physical_table_id=row.physical_table_id, row_id=row.row_id,
        table_info=table_info, handle_key_only=row.handle_key_only, claim_check_location=row.claim_check_location,
        schema_version=row.schema_version,
    )


class Decoder(BaseDecoder):
    """Simple-protocol decoder with the schema cache TiCDC's consumer keeps (see module docs)."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *,
        claim_check: ClaimCheckStore | None = None, hold_unknown_schema: bool = True, **kwargs: Any,
    ) -> None:
        super().__init__(options, claim_check=claim_check, **kwargs)
        self._avro = self.options.encoding_format == "avro"
        self._tables: dict[tuple[str, str, int], TableInfo] = {}
        #: Hold DML whose (table, schemaVersion) is not known yet until a BOOTSTRAP or DDL brings it
        #: (the protocol document's second consumption scenario). False: return such rows at once
        #: with ``table_info=None`` and wire values, for a caller that holds them itself.
        self.hold_unknown_schema = hold_unknown_schema
        self._held: dict[tuple[str, str, int], list[RowChange]] = {}
        self._released: list[RowChange] = []
        self._compression = self.options.large_message_handle_compression
        # Per known (schema, table, schemaVersion): the fast JSON path's readers; the last one used.
        self._json_plans: dict[tuple[str, str, int], _fast.JsonPlan] = {}
        self._avro_plans: dict[tuple[str, str, int], _fast.AvroPlan] = {}
        # The one-pass reader of the last DML message, tried first on the next uncompressed one.
        self._last_read: _fast.JsonMessageReader | _fast.AvroMessageReader | None = None
        self._f32 = _fast.float32_buffer()  # the JSON readers' float32 rounding buffer, this decoder's own

    def register_table(self, table_info: TableInfo) -> None:
        """Add a schema to the cache under (schema, table, schema_version); held rows it types are released."""
        key = (table_info.schema, table_info.table, table_info.schema_version)
        self._tables[key] = table_info
        self._json_plans.pop(key, None)
        self._avro_plans.pop(key, None)
        self._last_read = None
        for row in self._held.pop(key, ()):
            self._released.append(resolve_row(row, table_info))

    def held_rows(self) -> list[RowChange]:
        """Rows still waiting for their schema, in arrival order per table version (never dropped)."""
        return [row for rows in self._held.values() for row in rows]

    def release_held(self) -> list[RowChange]:
        """Give up waiting: return every held row untyped (``table_info=None``) and forget them."""
        rows = self.held_rows()
        self._held.clear()
        return rows

    def table(self, schema: str, table: str, schema_version: int) -> TableInfo | None:
        """The cached schema of ``schema.table`` at ``schema_version``, if known."""
        return self._tables.get((schema, table, schema_version))

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one message: its event, then any held rows its schema released (DecodeError on bad bytes).

        With ``hold_unknown_schema`` a DML whose schema is unknown returns ``[]`` and comes back
        typed, right after the BOOTSTRAP or DDL event that supplies its schema.
        """
        # The common case first: another plain DML message of the table version the last one had
        # (_last_read is set for uncompressed messages only, and reset by register_table, which
        # may release held rows). Such a row is typed, so never held.
        read = self._last_read
        if read is not None and type(value) is bytes:
            try:
                return [read(value, self._f32)]
            except _FAST_PATH_ERRORS:
                pass
        if not value:
            raise DecodeError(PROTOCOL, "empty message", 0)
        data = value if type(value) is bytes else bytes(value)
        if self._compression != "none":
            data = decompress(self._compression, data, PROTOCOL)
        event = self._fast_event(data)
        if event is None:  # anything the fast paths leave: the general path, the only one raising
            event = self._event(_parse_avro(data) if self._avro else _parse_json(data), allow_claim_check=True)
        if self.hold_unknown_schema and isinstance(event, RowChange) and event.table_info is None:
            self._held.setdefault((event.schema, event.table, event.schema_version), []).append(event)
            return []
        if not self._released:
            return [event]
        released, self._released = self._released, []
        return [event, *released]

    def _fast_event(self, data: bytes) -> Event | None:
        """The event of a plain DML or WATERMARK message, or None for the general path (see _fast)."""
        if self._avro:
            return self._fast_avro(data)
        try:
            message = _JSON_DML_DECODE(data)
        except ValueError:  # msgspec's DecodeError/ValidationError, UnicodeDecodeError
            return None
        op = _OPS.get(message.type)
        commit_ts = message.commitTs
        if op is None:
            if message.type == "WATERMARK" and commit_ts <= _MASK64:
                return Watermark(resolved_ts=commit_ts)
            return None
        schema_version = message.schemaVersion
        location = message.claimCheckLocation
        if commit_ts > _MASK64 or schema_version > _MASK64 or (location and self.claim_check is not None):
            return None
        raw_data, raw_old = message.data, message.old
        # An image the op does not have is validated and dropped by the general path.
        if (op is _INSERT and raw_old != _NULL_RAW) or (op is _DELETE and raw_data != _NULL_RAW):
            return None
        key = (message.database, message.table, schema_version)
        plan = self._json_plans.get(key)
        if plan is None:
            plan = self._json_plan(key)
            if plan is None:
                return self._fast_unresolved(message, op, key)
        # A missing image (omitempty drops an empty map) fails the readers: general path.
        try:
            f32 = self._f32
            try:
                columns = None if op is _DELETE else plan.read_lax(raw_data, data, f32)
                pre_columns = None if op is _INSERT else plan.read_lax(raw_old, data, f32)
            except _FAST_PATH_ERRORS:
                columns = None if op is _DELETE else plan.read_strict(raw_data, data, f32)
                pre_columns = None if op is _INSERT else plan.read_strict(raw_old, data, f32)
        except _FAST_PATH_ERRORS:
            return None
        if self._compression == "none":
            self._last_read = plan.read_message
        return _replace(
            plan.template, op=op, commit_ts=commit_ts, columns=columns, pre_columns=pre_columns,
            physical_table_id=message.tableID, handle_key_only=message.handleKeyOnly,
            claim_check_location=location or None,
        )

    def _fast_avro(self, data: bytes) -> RowChange | None:
        """The row of an Avro DML message of a known table version, or None for the general path."""
        if not data.startswith(_AVRO_DML):
            return None
        reader = AvroReader(data, len(_AVRO_DML))
        try:
            schema, table = reader.string(), reader.string()
            reader.long()
            reader.index(len(DML_TYPES), "DMLType enum")
            reader.long()
            reader.long()
            key = (schema, table, reader.long() & _MASK64)
        except DecodeError:
            return None
        plan = self._avro_plans.get(key)
        if plan is None:
            known = self._tables.get(key)
            plan = None if known is None else _fast.avro_plan(known)
            if plan is None:
                return None
            self._avro_plans[key] = plan
        try:
            row = plan.read_message(data, self._f32)
        except _FAST_PATH_ERRORS:
            return None
        if self._compression == "none":
            self._last_read = plan.read_message
        return row

    def _json_plan(self, key: tuple[str, str, int]) -> _fast.JsonPlan | None:
        """The fast-path plan of a known table version (cached); None while its schema is unknown."""
        table = self._tables.get(key)
        if table is None:
            return None
        plan = _fast.json_plan(table)
        if plan is not None:
            self._json_plans[key] = plan
        return plan

    def _fast_unresolved(self, message: _fast.JsonDml, op: Op, key: tuple[str, str, int]) -> RowChange | None:
        """A DML message of a table version without a schema (yet): its wire values (_wire_image)."""
        if key in self._tables:  # known, but the fast readers cannot serve it
            return None
        try:
            columns = None if op is _DELETE else _fast_wire_image(message.data)
            pre_columns = None if op is _INSERT else _fast_wire_image(message.old)
        except _FAST_PATH_ERRORS:
            return None
        return RowChange(
            op=op, schema=key[0], table=key[1], commit_ts=message.commitTs, columns=columns,
            pre_columns=pre_columns, table_id=message.tableID, physical_table_id=message.tableID,
            handle_key_only=message.handleKeyOnly, claim_check_location=message.claimCheckLocation or None,
            schema_version=key[2],
        )

    def _parse(self, value: bytes | None) -> _Wire:
        if not value:
            raise DecodeError(PROTOCOL, "empty message", 0)
        data = decompress(self.options.large_message_handle_compression, bytes(value), PROTOCOL)
        return _parse_avro(data) if self._avro else _parse_json(data)

    def _table_info(self, raw: dict[str, Any] | None, path: str, avro: bool) -> TableInfo | None:
        if raw is None:
            return None
        table = table_from_wire(raw, path, avro)
        self.register_table(table)
        return table

    def _event(self, wire: _Wire, allow_claim_check: bool) -> Event:
        prefix = "$.payload" if wire.avro else "$"
        if wire.kind == "WATERMARK":
            return Watermark(resolved_ts=wire.commit_ts)
        if wire.kind == "BOOTSTRAP":
            table = self._table_info(wire.table_schema, f"{prefix}.tableSchema", wire.avro)
            assert table is not None
            return Bootstrap(table_info=table, build_ts=wire.build_ts)
        if wire.kind == "DDL":
            after = self._table_info(wire.table_schema, f"{prefix}.tableSchema", wire.avro)
            before = self._table_info(wire.pre_table_schema, f"{prefix}.preTableSchema", wire.avro)
            named = after or before
            return DDLEvent(
                query=wire.sql, ddl_type=DDL_TYPE_ACTIONS[wire.type], commit_ts=wire.commit_ts,
                schema=named.schema if named else "", table=named.table if named else "",
                table_info=after, pre_table_info=before,
            )
        if wire.claim_check_location and allow_claim_check and self.claim_check is not None:
            _, stored = self.claim_check.get(wire.claim_check_location)
            full = self._parse(stored)
            if full.kind != "DML":
                raise DecodeError(PROTOCOL, "claim-check location holds no DML message", f"{prefix}.claimCheckLocation")
            return self._event(full, allow_claim_check=False)
        return self._row(wire, prefix)

    def _row(self, wire: _Wire, prefix: str) -> RowChange:
        op = _OPS[wire.type]
        data, old = wire.data, wire.old
        if op is not Op.DELETE and data is None:
            data = {}  # an empty map is omitted by encoding/json
        if op is not Op.INSERT and old is None:
            old = {}
        if op is Op.INSERT:
            old = None
        elif op is Op.DELETE:
            data = None
        table = self._tables.get((wire.database, wire.table, wire.schema_version))
        if table is None:
            columns = _wire_image(data, wire.avro, f"{prefix}.data")
            pre_columns = _wire_image(old, wire.avro, f"{prefix}.old")
            table_id = wire.table_id
        else:
            columns = _typed_image(data, table, f"{prefix}.data")
            pre_columns = _typed_image(old, table, f"{prefix}.old")
            table_id = table.table_id
        return RowChange(
            op=op, schema=wire.database, table=wire.table, commit_ts=wire.commit_ts, columns=columns,
            pre_columns=pre_columns, table_id=table_id, physical_table_id=wire.table_id, table_info=table,
            handle_key_only=wire.handle_key_only, claim_check_location=wire.claim_check_location or None,
            schema_version=wire.schema_version,
        )


# --------------------------------------------------------------------------- module functions
def _split_options(options: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {n: options.pop(n) for n in names if n in options}


def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode ``events`` with a one-shot Encoder (``clock``, ``claim_check``, ``auto_bootstrap`` accepted)."""
    extra = _split_options(options, ("clock", "claim_check", "auto_bootstrap", "bootstrap_policy", "partition"))
    return Encoder(options, **extra).encode(events)


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one message with a one-shot Decoder (no schema cache: rows come back unresolved)."""
    extra = _split_options(options, ("claim_check",))
    return Decoder(options, **extra).decode(value, key)


def _avro_union(value: Any, branch: str) -> Any:
    return None if value is None else {branch: value}


def _avro_native_table(raw: dict[str, Any]) -> dict[str, Any]:
    columns = []
    for column in raw["columns"]:
        dt = column["dataType"]
        columns.append({
            "name": column["name"],
            "dataType": {
                "mysqlType": dt["mysqlType"], "charset": dt["charset"], "collate": dt["collate"],
                "length": dt["length"], "decimal": _avro_union(dt["decimal"], "int"),
                "elements": _avro_union(dt["elements"], "array"), "unsigned": _avro_union(dt["unsigned"], "boolean"),
                "zerofill": _avro_union(dt["zerofill"], "boolean"),
            },
            "nullable": column["nullable"],
            "default": _avro_union(None if column["default"] is None
                                   else column["default"].decode("utf-8", "backslashreplace"), "string"),
        })
    return {**raw, "columns": columns}


def _avro_native_values(values: dict[str, Any] | None) -> Any:
    if values is None:
        return None
    native = {}
    for name, (branch, value) in values.items():
        label = VALUE_BRANCH_NAMES[branch]
        if label in ("Timestamp", "UnsignedBigint"):
            label = "com.pingcap.simple.avro." + label
        if isinstance(value, bytes):
            value = value.hex()
        native[name] = None if branch == _I_NULL else {label: value}
    return {"map": native}


def _avro_native(wire: _Wire) -> dict[str, Any]:
    # goavro's native form: unions as {"branch": value}; bytes shown as hex.
    ns = "com.pingcap.simple.avro."
    payload: dict[str, Any]
    if wire.kind == "WATERMARK":
        payload = {"version": wire.version, "commitTs": wire.commit_ts, "buildTs": wire.build_ts}
    elif wire.kind == "BOOTSTRAP":
        assert wire.table_schema is not None
        payload = {"version": wire.version, "buildTs": wire.build_ts,
                   "tableSchema": _avro_native_table(wire.table_schema)}
    elif wire.kind == "DDL":
        payload = {
            "version": wire.version, "type": wire.type, "sql": wire.sql, "commitTs": wire.commit_ts,
            "buildTs": wire.build_ts,
            "tableSchema": None if wire.table_schema is None
            else {ns + "TableSchema": _avro_native_table(wire.table_schema)},
            "preTableSchema": None if wire.pre_table_schema is None
            else {ns + "TableSchema": _avro_native_table(wire.pre_table_schema)},
        }
    else:
        payload = {
            "version": wire.version, "database": wire.database, "table": wire.table, "tableID": wire.table_id,
            "type": wire.type, "commitTs": wire.commit_ts, "buildTs": wire.build_ts,
            "schemaVersion": wire.schema_version,
            "claimCheckLocation": _avro_union(wire.claim_check_location or None, "string"),
            "handleKeyOnly": _avro_union(wire.handle_key_only if wire.handle_key_only else None, "boolean"),
            "checksum": _avro_union(wire.checksum, ns + "Checksum"),
            "data": _avro_native_values(wire.data), "old": _avro_native_values(wire.old),
        }
    return {ns + "Message": {"type": wire.kind, "payload": {ns + _AVRO_RECORDS[wire.kind]: payload}}}


def _printable(value: Any) -> Any:
    """Strings with undecodable bytes (kept as surrogates) shown with ``\\xNN`` escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def _detect(data: bytes) -> tuple[str, _Wire]:
    head = data.lstrip()[:1]
    if head == b"{":
        return "json", _parse_json(data)
    if data[:1] == bytes([_zz_byte(MESSAGE_BRANCH)]):
        return "avro", _parse_avro(data, tagged=True)
    raise DecodeError(PROTOCOL, "neither a Simple JSON nor a Simple Avro message", 0)


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """A wire-level view of one message: encoding, compression and the message as sent.

    The encoding (JSON or Avro) and compression (none, lz4 frame, snappy block) are detected.
    JSON messages are shown as parsed; Avro ones in goavro's native form (unions as
    ``{"branch": value}``, bytes as hex).
    """
    if not value:
        raise DecodeError(PROTOCOL, "empty message", 0)
    raw = bytes(value)
    attempts: list[tuple[str, bytes]] = [("none", raw)]
    if raw[:4] == b"\x04\x22\x4d\x18":
        attempts.append(("lz4", raw))
    attempts.append(("snappy", raw))
    first_error: DecodeError | None = None
    for method, data in attempts:
        try:
            data = decompress(method, data, PROTOCOL)
            encoding, wire = _detect(data)
        except DecodeError as exc:
            first_error = first_error or exc
            continue
        message: Any = orjson.loads(data) if encoding == "json" else _printable(_avro_native(wire))
        summary: dict[str, Any] = {"type": wire.type, "commitTs": wire.commit_ts, "buildTs": wire.build_ts}
        if wire.kind == "DML":
            summary.update(database=wire.database, table=wire.table, tableID=wire.table_id,
                           schemaVersion=wire.schema_version, handleKeyOnly=wire.handle_key_only,
                           claimCheckLocation=wire.claim_check_location or None)
        return {
            "protocol": PROTOCOL, "encoding": encoding, "compression": method, "size": len(raw),
            "key": None if key is None else binascii.hexlify(key).decode(), "summary": summary, "message": message,
        }
    assert first_error is not None
    raise first_error
