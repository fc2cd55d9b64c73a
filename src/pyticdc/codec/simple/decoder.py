"""The Simple decoder: a schema cache fed by BOOTSTRAP and DDL messages, and typed rows (reference §6).

The cache is keyed by (schema, table, schemaVersion) and fed by BOOTSTRAP and DDL messages and by
``Decoder.register_table``. A DML message is decoded into typed model values with the cached
TableInfo. When its schema is not known yet, the row is returned with ``table_info=None`` and
its **wire values**: JSON strings (a TIMESTAMP object becomes its ``value`` string; binary
columns stay base64), or the Avro branch value (int, float, str, bytes; a Timestamp record its
``value``, an UnsignedBigint the uint64) — and ``schema_version`` set, so a consumer can hold
the row and call ``resolve_row`` once the matching BOOTSTRAP/DDL arrives.

Two paths give the same events: the fast path (``fastpath_json``/``fastpath_avro``, per-table
readers for DML messages as TiCDC writes them) and the reference path here (``parse_json`` /
``parse_avro`` into a ``Wire``, then typed values), which alone raises DecodeErrors.
``Decoder.decode_reference`` runs the reference path alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec
import orjson

from pyticdc.codec._fastpath import DECLINES, speculate
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.codec.compression import decompress
from pyticdc.codec.options import CodecOptions
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.avro import (
    DDL_TYPES,
    DML_HEAD,
    DML_TYPES,
    MESSAGE_BRANCH,
    MESSAGE_TYPES,
    VALUE_BRANCH,
    AvroReader,
)
from pyticdc.codec.simple.fastpath_avro import AvroMessageReader, AvroPlan, avro_plan
from pyticdc.codec.simple.fastpath_json import (
    JSON_DML_DECODER,
    NULL_RAW,
    JsonDml,
    JsonMessageReader,
    JsonPlan,
    float32_buffer,
    json_plan,
    wire_image,
)
from pyticdc.codec.simple.message import DDL_KINDS, DDL_TYPE_ACTIONS, MASK64, OPS, OPTIONS, PROTOCOL, Wire
from pyticdc.codec.simple.schema import read_avro_table_schema, table_from_wire
from pyticdc.codec.simple.values import table_plan
from pyticdc.errors import DecodeError
from pyticdc.model import Bootstrap, DDLEvent, Event, Op, Row, RowChange, TableInfo, Value, Watermark

__all__ = ["Decoder", "decode", "parse_avro", "parse_json", "resolve_row"]

# Enum members as module constants: attribute access on the Enum class is slow in hot paths.
_INSERT: Final = Op.INSERT
_DELETE: Final = Op.DELETE
_replace: Final = msgspec.structs.replace
_I_NULL, _I_LONG, _I_FLOAT, _I_DOUBLE, _I_STRING, _I_BYTES, _I_TIMESTAMP, _I_UBIGINT = (
    VALUE_BRANCH[n] for n in ("null", "long", "float", "double", "string", "bytes", "Timestamp", "UnsignedBigint")
)


# --------------------------------------------------------------------------- reference path: messages
def _json_field(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DecodeError(PROTOCOL, f"expected {kind.__name__}", f"$.{key}")
    return value


def _json_uint(obj: dict[str, Any], key: str) -> int:
    value: int = _json_field(obj, key, int, 0)
    if not 0 <= value <= MASK64:
        raise DecodeError(PROTOCOL, f"{value} is not a uint64", f"$.{key}")
    return value


def _json_int(obj: dict[str, Any], key: str) -> int:
    value: int = _json_field(obj, key, int, 0)
    if not -(1 << 63) <= value < (1 << 63):
        raise DecodeError(PROTOCOL, f"{value} is not an int64", f"$.{key}")
    return value


def parse_json(data: bytes) -> Wire:
    """Parse a JSON message (encoding/json of ``message``) into a Wire; DecodeError on bad input."""
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
        wire = Wire(kind_text, False)
    elif kind_text in DDL_KINDS:
        wire = Wire("DDL", False)
    elif kind_text in OPS:
        wire = Wire("DML", False)
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
    # Untagged (the decoder): the fast loop. Tagged (explain): each value with its union branch.
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
                value = {"location": location, "value": reader.string()}
            else:  # UnsignedBigint: the uint64 written as int64
                value = {"value": reader.long()}
            values[name] = (branch, value)
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
                value = reader.long() & MASK64
            values[name] = value
        count = reader.block_count()
    return values


def parse_avro(data: bytes, tagged: bool = False) -> Wire:
    """Parse an Avro message into a Wire; ``tagged`` keeps each map value's union branch (for explain)."""
    reader = AvroReader(data)
    if reader.index(12, "top-level union") != MESSAGE_BRANCH:
        raise reader.fail("not a com.pingcap.simple.avro.Message", 0)
    kind_index = reader.index(len(MESSAGE_TYPES), "MessageType enum")
    start = reader.pos
    if reader.index(4, "payload union") != kind_index:
        raise reader.fail("payload does not match the message type", start)
    wire = Wire(MESSAGE_TYPES[kind_index], True)
    wire.version = reader.int32()
    if wire.kind == "WATERMARK":
        wire.commit_ts = reader.long() & MASK64
        wire.build_ts = reader.long()
    elif wire.kind == "BOOTSTRAP":
        wire.build_ts = reader.long()
        wire.table_schema = read_avro_table_schema(reader)
    elif wire.kind == "DDL":
        wire.type = DDL_TYPES[reader.index(len(DDL_TYPES), "DDLType enum")]
        wire.sql = reader.string()
        wire.commit_ts = reader.long() & MASK64
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
        wire.commit_ts = reader.long() & MASK64
        wire.build_ts = reader.long()
        wire.schema_version = reader.long() & MASK64
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


# --------------------------------------------------------------------------- reference path: rows
def _typed_image(
    values: dict[str, Any] | None, table: TableInfo, path: str
) -> Row | None:
    if values is None:
        return None
    ordered, _ = table_plan(table)
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
        #: DecodeErrors of held rows their schema could not type (take_errors).
        self._errors: list[DecodeError] = []
        self._compression = self.options.large_message_handle_compression
        # Per known (schema, table, schemaVersion): the fast JSON path's readers; the last one used.
        self._json_plans: dict[tuple[str, str, int], JsonPlan] = {}
        self._avro_plans: dict[tuple[str, str, int], AvroPlan] = {}
        # The one-pass reader of the last DML message, tried first on the next uncompressed one.
        self._last_read: JsonMessageReader | AvroMessageReader | None = None
        self._f32 = float32_buffer()  # the JSON readers' float32 rounding buffer, this decoder's own

    def register_table(self, table_info: TableInfo) -> None:
        """Add a schema to the cache under (schema, table, schema_version); held rows it types are released."""
        key = (table_info.schema, table_info.table, table_info.schema_version)
        self._tables[key] = table_info
        self._json_plans.pop(key, None)
        self._avro_plans.pop(key, None)
        self._last_read = None
        for row in self._held.pop(key, ()):
            try:
                self._released.append(resolve_row(row, table_info))
            except DecodeError as exc:
                # One held row that does not fit its schema must not cost the schema or the other rows:
                # it is reported on its own (take_errors), the rest are released.
                self._errors.append(DecodeError(
                    PROTOCOL, f"held row of {row.schema}.{row.table} at commit ts {row.commit_ts} does not fit "
                              f"schema version {table_info.schema_version}: {exc.reason}", exc.at))

    def take_errors(self) -> list[DecodeError]:
        """Errors of held rows that did not fit the schema that released them, since the last call.

        A decode returns the schema event and the held rows that fit it; each row that does not is one
        DecodeError here (its message was accepted earlier, so there are no bytes to return with it).
        """
        errors, self._errors = self._errors, []
        return errors

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
            except DECLINES:
                pass
        return self._deliver(speculate(self._fast_event, self._reference_event, self._message_bytes(value)))

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """``decode`` on the reference path alone: no fast-path readers, same events and errors."""
        return self._deliver(self._reference_event(self._message_bytes(value)))

    def _message_bytes(self, value: bytes | None) -> bytes:
        if not value:
            raise DecodeError(PROTOCOL, "empty message", 0)
        data = value if type(value) is bytes else bytes(value)
        if self._compression != "none":
            data = decompress(self._compression, data, PROTOCOL, self.options.max_message_bytes)
        return data

    def _reference_event(self, data: bytes) -> Event:
        return self._event(parse_avro(data) if self._avro else parse_json(data), allow_claim_check=True)

    def _deliver(self, event: Event) -> list[Event]:
        """The decoded event, then any held rows its schema released; a row without schema is held."""
        if self.hold_unknown_schema and isinstance(event, RowChange) and event.table_info is None:
            self._held.setdefault((event.schema, event.table, event.schema_version), []).append(event)
            return []
        if not self._released:
            return [event]
        released, self._released = self._released, []
        return [event, *released]

    def _fast_event(self, data: bytes) -> Event | None:
        """The event of a plain DML or WATERMARK message, or None for the reference path (see fastpath)."""
        if self._avro:
            return self._fast_avro(data)
        try:
            message = JSON_DML_DECODER.decode(data)
        except DECLINES:
            return None
        op = OPS.get(message.type)
        commit_ts = message.commitTs
        if op is None:
            if message.type == "WATERMARK" and commit_ts <= MASK64:
                return Watermark(resolved_ts=commit_ts)
            return None
        schema_version = message.schemaVersion
        location = message.claimCheckLocation
        if commit_ts > MASK64 or schema_version > MASK64 or (location and self.claim_check is not None):
            return None
        raw_data, raw_old = message.data, message.old
        # An image the op does not have is validated and dropped by the reference path.
        if (op is _INSERT and raw_old != NULL_RAW) or (op is _DELETE and raw_data != NULL_RAW):
            return None
        key = (message.database, message.table, schema_version)
        plan = self._json_plans.get(key)
        if plan is None:
            plan = self._json_plan(key)
            if plan is None:
                return self._fast_unresolved(message, op, key)
        # A missing image (omitempty drops an empty map) fails the readers: reference path.
        try:
            f32 = self._f32
            try:
                columns = None if op is _DELETE else plan.read_lax(raw_data, data, f32)
                pre_columns = None if op is _INSERT else plan.read_lax(raw_old, data, f32)
            except DECLINES:
                columns = None if op is _DELETE else plan.read_strict(raw_data, data, f32)
                pre_columns = None if op is _INSERT else plan.read_strict(raw_old, data, f32)
        except DECLINES:
            return None
        if self._compression == "none":
            self._last_read = plan.read_message
        return _replace(
            plan.template, op=op, commit_ts=commit_ts, columns=columns, pre_columns=pre_columns,
            physical_table_id=message.tableID, handle_key_only=message.handleKeyOnly,
            claim_check_location=location or None,
        )

    def _fast_avro(self, data: bytes) -> RowChange | None:
        """The row of an Avro DML message of a known table version, or None for the reference path."""
        if not data.startswith(DML_HEAD):
            return None
        reader = AvroReader(data, len(DML_HEAD))
        try:
            schema, table = reader.string(), reader.string()
            reader.long()
            reader.index(len(DML_TYPES), "DMLType enum")
            reader.long()
            reader.long()
            key = (schema, table, reader.long() & MASK64)
        except DecodeError:
            return None
        plan = self._avro_plans.get(key)
        if plan is None:
            known = self._tables.get(key)
            plan = None if known is None else avro_plan(known)
            if plan is None:
                return None
            self._avro_plans[key] = plan
        try:
            row = plan.read_message(data, self._f32)
        except DECLINES:
            return None
        if self._compression == "none":
            self._last_read = plan.read_message
        return row

    def _json_plan(self, key: tuple[str, str, int]) -> JsonPlan | None:
        """The fast-path plan of a known table version (cached); None while its schema is unknown."""
        table = self._tables.get(key)
        if table is None:
            return None
        plan = json_plan(table)
        if plan is not None:
            self._json_plans[key] = plan
        return plan

    def _fast_unresolved(self, message: JsonDml, op: Op, key: tuple[str, str, int]) -> RowChange | None:
        """A DML message of a table version without a schema (yet): its wire values (_wire_image)."""
        if key in self._tables:  # known, but the fast readers cannot serve it
            return None
        try:
            columns = None if op is _DELETE else wire_image(message.data)
            pre_columns = None if op is _INSERT else wire_image(message.old)
        except DECLINES:
            return None
        return RowChange(
            op=op, schema=key[0], table=key[1], commit_ts=message.commitTs, columns=columns,
            pre_columns=pre_columns, table_id=message.tableID, physical_table_id=message.tableID,
            handle_key_only=message.handleKeyOnly, claim_check_location=message.claimCheckLocation or None,
            schema_version=key[2],
        )

    def _parse(self, value: bytes | None) -> Wire:
        if not value:
            raise DecodeError(PROTOCOL, "empty message", 0)
        data = decompress(self.options.large_message_handle_compression, bytes(value), PROTOCOL,
                          self.options.max_message_bytes)
        return parse_avro(data) if self._avro else parse_json(data)

    def _table_info(self, raw: dict[str, Any] | None, path: str, avro: bool) -> TableInfo | None:
        if raw is None:
            return None
        table = table_from_wire(raw, path, avro)
        self.register_table(table)
        return table

    def _event(self, wire: Wire, allow_claim_check: bool) -> Event:
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

    def _row(self, wire: Wire, prefix: str) -> RowChange:
        op = OPS[wire.type]
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


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one message with a one-shot Decoder (no schema cache: rows come back unresolved)."""
    claim_check = options.pop("claim_check", None)
    return Decoder(options, claim_check=claim_check).decode(value, key)

