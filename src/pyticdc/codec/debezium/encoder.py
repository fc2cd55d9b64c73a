"""The Debezium encoder (TiCDC ``pkg/sink/codec/debezium``) and its documented projection.

Encoding follows TiCDC byte for byte (ticdc-reference.md §5). ``Encoder.project`` returns exactly
what a round trip gives back; the format is lossy, and these are the losses (with the schema part;
the value table is in ``readers``):

- NULL in a column with a default comes back as the default (TiCDC writes the default, §5.2).
- DECIMAL → float64: a DOUBLE value, or with ``enable-tidb-extension`` the float's shortest text.
- FLOAT/DOUBLE NaN and ±Inf → 0 (TiCDC's mounter replaces them before the codec, §1.1).
- DATE as days, invalid dates (``0000-00-00``) → NULL (0 → 1970-01-01 when NOT NULL), years < 100
  shifted (+2000 below 70, else +1900); DATETIME → epoch ms (fsp ≤ 3, read back with 3 digits) or
  µs (6 digits); TIME → µs (6 digits); TIMESTAMP → UTC and back into ``time-zone`` with its fsp
  digits, values below 1970-01-01 00:00:01 → the epoch.
- ENUM/SET by name: invalid values → 0; BIT(1) → 1/0; BIT(n) keeps ceil(n/8) bytes.
- BIGINT UNSIGNED max → −1 and ≥ 2^63 wrapped negative, undone only with ``tidb_type``.
- Binary strings are base64 under a ``string`` schema: decoded only with ``tidb_type``; else the
  base64 text comes back. FLOAT(M,D) is a ``double``: its float32 digits as a float64.
- Types are only as precise as the schema: TINYINT/SMALLINT → SMALLINT, MEDIUMINT/INT → INT,
  fsp/flen/defaults/comments are not carried; without a schema (``debezium-disable-schema``) only
  JSON types remain (integer → BIGINT, number → DOUBLE, string → VARCHAR bytes, bool → BIT(1);
  images that disagree: DOUBLE for integer/number, else JSON text).
- DDL: ``ddl_type`` is re-derived from the statement text; the table metadata from ``tableChanges``.
- Watermarks exist only with ``enable-tidb-extension``; unsupported DDL kinds are not sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec
import orjson

from pyticdc.codec.base import BaseEncoder, Message
from pyticdc.codec.compression import compress
from pyticdc.codec.debezium.ddl import (
    CHANGE_TYPES,
    classify_ddl,
    column_metadata,
    ddl_table_columns,
    primary_key_names,
    table_from_change,
)
from pyticdc.codec.debezium.fastwriter import ImageWriter, image_writer
from pyticdc.codec.debezium.message import (
    DDL_KEY_SCHEMA,
    DDL_VALUE_SCHEMA,
    ENVELOPE_TAIL,
    OPTIONS,
    PROTOCOL,
    SOURCE_SCHEMA,
    dump,
    encode_error,
    load_json,
    quote_text,
    sanitize_name,
    schema_topic_name,
)
from pyticdc.codec.debezium.readers import Converter, column_from_field, infer_column
from pyticdc.codec.debezium.schema import schema_element
from pyticdc.codec.debezium.values import (
    MIN_TIMESTAMP,
    adjust_two_digit_year,
    bit_byte_count,
    clean_float,
    days_from_civil,
    decimal_text,
    escape_enum_option,
    format_civil,
    format_duration_us,
    format_wall,
    go_parse_float,
    is_utc,
    parse_datetime,
    parse_duration_us,
    parse_go_date,
    split_allowed,
    utc_to_local,
    wall_from_epoch_us,
)
from pyticdc.codec.debezium.writers import Wire, datetime_wire_us, default_to_model, wire_function
from pyticdc.codec.jsontext import float32_round, shortest_repr
from pyticdc.codec.timezone import load_zone
from pyticdc.errors import EncodeError
from pyticdc.model import (
    ActionType,
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Value,
    Watermark,
)
from pyticdc.mysql.types import INTEGER_TYPES, STRING_TYPES

__all__ = ["Encoder", "encode"]

A = ActionType
T = TypeCode


_U64: Final = 1 << 64


def _text_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise encode_error("text holds a lone surrogate that cannot be written as UTF-8") from None


@dataclass(frozen=True)
class _Column:
    """One payload column: its JSON key text, wire function and NULL substitute."""

    info: ColumnInfo
    prefix: str
    wire: Wire
    default_value: Value
    default_error: EncodeError | None

    def render(self, value: Value) -> str:
        return self.prefix + dump(self.wire_value(value))

    def wire_value(self, value: Value) -> Any:
        if value is not None:
            return self.wire(value, False)
        if self.info.default is None:
            return None
        if self.default_error is not None:
            raise self.default_error
        # TiCDC substitutes the column default for a NULL value (getValue, §5.2).
        return self.wire(self.default_value, True)


def _image_reference(columns: tuple[_Column, ...], image: Row) -> str:
    """One image's JSON object, every value through ``dump`` (json-iterator's text)."""
    return "{" + ",".join(c.render(image.get(c.info.name)) for c in columns) + "}"


def _image_through_orjson(columns: tuple[_Column, ...], image: Row) -> str | None:
    """``_image_reference``'s text with orjson writing the strings, ints and the object; None where
    it would differ: a lone surrogate or an int past 64 bits (orjson refuses both), \\b or \\f (which
    json-iterator writes as \\u0008 / \\u000c), a repeated column name (a dict keeps one)."""
    values: dict[str, Any] = {}
    get = image.get
    for c in columns:
        name = c.info.name
        wire = c.wire_value(get(name))
        kind = type(wire)
        if kind is str or kind is int or kind is bool or wire is None:
            values[name] = wire
        else:  # floats: json-iterator's own formatting, as raw JSON
            values[name] = orjson.Fragment(dump(wire))
    if len(values) != len(columns):
        return None
    try:
        out = orjson.dumps(values)
    except orjson.JSONEncodeError:
        return None
    if b"\\b" in out or b"\\f" in out:  # may be an escaped backslash before b/f: then only slower
        return None
    return out.decode()


@dataclass(frozen=True)
class _TablePlan:
    """Everything about one table that does not change from row to row."""

    table: TableInfo
    source_prefix: str
    source_suffix: str
    payload: tuple[_Column, ...]
    key: tuple[_Column, ...]
    key_schema: str
    value_schema: str
    #: The generated image writers (None: the reference writer) and the message's fixed bytes
    #: (None when a name cannot be written as UTF-8: the reference path then reports it).
    payload_writer: ImageWriter | None = None
    key_writer: ImageWriter | None = None
    fixed: tuple[bytes, bytes, bytes, bytes] | None = None


class Encoder(BaseEncoder):
    """TiCDC Debezium encoder: one Kafka message (JSON key + value) per row, DDL and watermark."""

    PROTOCOL: ClassVar[str] = PROTOCOL
    OPTIONS: ClassVar[frozenset[str]] = OPTIONS

    def _validate(self) -> None:
        self.zone = load_zone(self.options.time_zone)
        self.extension = self.options.enable_tidb_extension
        self.with_schema = not self.options.debezium_disable_schema
        self.cluster = self.options.cluster_id
        self._cluster_json = quote_text(self.cluster)
        # (a lone surrogate in the cluster id: the reference path reports it)
        self._cluster_tail = (',"cluster_id":' + self._cluster_json + '},"ts_ms":').encode("utf-8", "replace")
        self._plans: dict[int, _TablePlan] = {}
        self._utc = is_utc(self.zone)

    # ------------------------------------------------------------------ plans
    def _plan(self, table: TableInfo) -> _TablePlan:
        plan = self._plans.get(id(table))
        if plan is not None and plan.table is table:
            return plan
        columns = []
        for column in table.columns:
            if column.virtual:
                continue
            default_value: Value = None
            default_error = None
            if column.default is not None:
                try:
                    default_value = default_to_model(column, column.default)
                except EncodeError as exc:
                    default_error = exc
            columns.append(_Column(column, quote_text(column.name) + ":", wire_function(column, self.zone),
                                   default_value, default_error))
        key = tuple(c for c in columns if c.info.flags & ColumnFlag.HANDLE_KEY)
        name = schema_topic_name(self.cluster, table.schema, table.table)
        fields = ",".join(schema_element(c, self.extension) for c in table.columns if not c.virtual)
        virtual = ",".join(schema_element(c, self.extension) for c in table.columns if c.virtual)
        if virtual:
            fields = f"{fields},{virtual}" if fields else virtual
        value_name = quote_text(name + ".Value")
        value_schema = (
            '{"type":"struct","optional":false,"name":' + quote_text(name + ".Envelope") + ',"version":1,"fields":['
            '{"type":"struct","optional":true,"name":' + value_name + ',"field":"before","fields":[' + fields + ']},'
            '{"type":"struct","optional":true,"name":' + value_name + ',"field":"after","fields":[' + fields + ']},'
            + SOURCE_SCHEMA + ENVELOPE_TAIL
        )
        key_schema = (
            '{"type":"struct","name":' + quote_text(name + ".Key") + ',"optional":false,"fields":['
            + ",".join(schema_element(c.info, self.extension) for c in key) + "]}"
        )
        source_prefix = (
            '{"payload":{"source":{"version":"2.4.0.Final","connector":"TiCDC","name":' + self._cluster_json
            + ',"ts_ms":'
        )
        source_suffix = (
            ',"snapshot":"false","db":' + quote_text(table.schema) + ',"table":' + quote_text(table.table)
            + ',"server_id":0,"gtid":null,"file":"","pos":0,"row":0,"thread":0,"query":null,"commit_ts":'
        )
        value_tail = (',"schema":' + value_schema if self.with_schema else "") + "}"
        key_tail = (',"schema":' + key_schema if self.with_schema else "") + "}"
        try:
            fixed: tuple[bytes, bytes, bytes, bytes] | None = (
                source_prefix.encode(), (source_suffix).encode(), value_tail.encode(), key_tail.encode())
        except UnicodeEncodeError:
            fixed = None
        plan = _TablePlan(table, source_prefix, source_suffix, tuple(columns), key, key_schema, value_schema,
                          self._writer(tuple(c.info for c in columns)), self._writer(tuple(c.info for c in key)),
                          fixed)
        if len(self._plans) > 4096:
            self._plans.clear()
        self._plans[id(table)] = plan
        return plan

    # ------------------------------------------------------------------ encoding
    def _source(self, commit_ts: int, db: str, table: str) -> str:
        return (
            '{"version":"2.4.0.Final","connector":"TiCDC","name":' + self._cluster_json + ',"ts_ms":'
            + str(commit_ts >> 18) + ',"snapshot":"false","db":' + quote_text(db) + ',"table":' + quote_text(table)
            + ',"server_id":0,"gtid":null,"file":"","pos":0,"row":0,"thread":0,"query":null,"commit_ts":'
            + str(commit_ts) + ',"cluster_id":' + self._cluster_json + "}"
        )

    def _writer(self, infos: tuple[ColumnInfo, ...]) -> ImageWriter | None:
        """The generated image writer of these columns (the conformance suite's reference has none)."""
        return image_writer(infos, self._utc)

    def _finish(self, key: str, value: str, event: Event) -> Message:
        method = self.options.large_message_handle_compression
        key_bytes = compress(method, _text_bytes(key))
        value_bytes = compress(method, _text_bytes(value))
        return Message(key_bytes, value_bytes, (event,))

    @staticmethod
    def _image(columns: tuple[_Column, ...], image: Row) -> str:
        fast = _image_through_orjson(columns, image)
        if fast is not None:
            return fast
        return _image_reference(columns, image)

    def _encode_row(self, event: RowChange) -> Message:
        table = event.table_info
        if table is None:
            raise encode_error(f"row of {event.schema}.{event.table} has no table_info")
        if not 0 <= event.commit_ts < _U64:
            raise encode_error(f"commit_ts {event.commit_ts} is not a uint64")
        plan = self._plan(table)
        if plan.fixed is not None and plan.payload_writer is not None and plan.key_writer is not None:
            message = self._fast_row(event, plan, plan.fixed)
            if message is not None:
                return message
        post, pre = event.columns, event.pre_columns
        if event.op is Op.INSERT:
            if post is None:
                raise encode_error("INSERT without columns")
            body = '"op":"c","before":null,"after":' + self._image(plan.payload, post)
            key_image = post
        elif event.op is Op.DELETE:
            if pre is None:
                raise encode_error("DELETE without pre_columns")
            body = '"op":"d","after":null,"before":' + self._image(plan.payload, pre)
            key_image = pre
        else:
            if post is None:
                raise encode_error("UPDATE without columns")
            body = '"op":"u",'
            if self.options.debezium_output_old_value:
                body += '"before":' + (self._image(plan.payload, pre) if pre is not None else "null") + ","
            body += '"after":' + self._image(plan.payload, post)
            key_image = post
        value = (
            plan.source_prefix + str(event.commit_ts >> 18) + plan.source_suffix + str(event.commit_ts)
            + ',"cluster_id":' + self._cluster_json + '},"ts_ms":' + str(self.clock())
            + ',"transaction":null,' + body + "}"
            + (',"schema":' + plan.value_schema if self.with_schema else "") + "}"
        )
        key = '{"payload":' + self._image(plan.key, key_image) + (
            ',"schema":' + plan.key_schema if self.with_schema else "") + "}"
        return self._finish(key, value, event)

    def _fast_row(self, event: RowChange, plan: _TablePlan, fixed: tuple[bytes, bytes, bytes, bytes]) -> Message | None:
        """``_encode_row``'s message with the generated writers and fixed bytes; None: the reference way."""
        write, columns = plan.payload_writer, plan.payload
        assert write is not None and plan.key_writer is not None
        post, pre = event.columns, event.pre_columns
        op = event.op
        if op is Op.INSERT:
            if post is None or (after := write(post, columns)) is None:
                return None
            body = b'"op":"c","before":null,"after":' + after
            key_image = post
        elif op is Op.DELETE:
            if pre is None or (before := write(pre, columns)) is None:
                return None
            body = b'"op":"d","after":null,"before":' + before
            key_image = pre
        else:
            if post is None:
                return None
            body = b'"op":"u",'
            if self.options.debezium_output_old_value:
                if pre is None:
                    body += b'"before":null,'
                elif (before := write(pre, columns)) is not None:
                    body += b'"before":' + before + b","
                else:
                    return None
            if (after := write(post, columns)) is None:
                return None
            body += b'"after":' + after
            key_image = post
        key_payload = plan.key_writer(key_image, plan.key)
        if key_payload is None:
            return None
        ts = event.commit_ts
        value = b"".join((
            fixed[0], b"%d" % (ts >> 18), fixed[1], b"%d" % ts, self._cluster_tail, b"%d" % self.clock(),
            b',"transaction":null,', body, b"}", fixed[2],
        ))
        key = b'{"payload":' + key_payload + fixed[3]
        method = self.options.large_message_handle_compression
        return Message(compress(method, key), compress(method, value), (event,))

    def _ddl_names(self, event: DDLEvent) -> tuple[str, str, str]:
        """(db, table, databaseName) as TiCDC's getDBTableName and the DROP TABLE rule give them."""
        info = event.table_info
        db, table = (info.schema, info.table) if info is not None else (event.schema, event.table)
        database = db
        if event.ddl_type == A.DROP_TABLE and event.pre_table_info is not None:
            database = event.pre_table_info.schema
        return db, table, database

    def _table_change(self, event: DDLEvent, change: str, db: str, table: str) -> str:
        pre = event.pre_table_info
        if event.ddl_type == A.RENAME_TABLE:
            pre_db, pre_table = (pre.schema, pre.table) if pre is not None else (db, table)
            ident = f'"{pre_db}"."{pre_table}","{db}"."{table}"'
        else:
            ident = f'"{db}"."{table}"'
        text = '{"type":"' + change + '","id":' + quote_text(ident)
        info = event.table_info
        if event.ddl_type == A.DROP_TABLE or info is None:
            return text + ',"table":null}'
        columns = ddl_table_columns(event.query, info.columns)
        rendered = []
        for position, column in enumerate(columns, start=1):
            rendered.append("{" + ",".join(
                quote_text(k) + ":" + _dump_meta(v) for k, v in column_metadata(column, position)) + "}")
        pk = ",".join(quote_text(n) for n in primary_key_names(info))
        return (text + ',"table":{"defaultCharsetName":' + quote_text(info.charset) + ',"primaryKeyColumnNames":['
                + pk + '],"columns":[' + ",".join(rendered) + '],"comment":null}}')

    def _encode_ddl(self, event: DDLEvent) -> Message | None:
        change = CHANGE_TYPES.get(event.ddl_type)
        if change is None:
            return None  # ErrDDLUnsupportType: TiCDC logs and sends nothing (§5.3)
        db, table, database = self._ddl_names(event)
        key = '{"payload":{"databaseName":' + quote_text(database) + "}" + (
            ',"schema":' + DDL_KEY_SCHEMA if self.with_schema else "") + "}"
        truncate = event.ddl_type == A.TRUNCATE_TABLE
        changes = "" if not table or truncate else self._table_change(event, change, db, table)
        value = (
            '{"payload":{"source":' + self._source(event.commit_ts, db, table) + ',"ts_ms":' + str(self.clock())
            + ',"databaseName":' + quote_text(database) + ',"schemaName":null,"ddl":' + quote_text(event.query)
            + ',"tableChanges":[' + changes + "]}"
            + (',"schema":' + DDL_VALUE_SCHEMA if self.with_schema else "") + "}"
        )
        return self._finish(key, value, event)

    def _encode_watermark(self, event: Watermark) -> Message:
        cluster = sanitize_name(self.cluster)
        key = '{"payload":{}' + (
            ',"schema":{"type":"struct","name":' + quote_text(cluster + ".watermark.Key")
            + ',"optional":false,"fields":[]}' if self.with_schema else "") + "}"
        value = (
            '{"payload":{"source":' + self._source(event.resolved_ts, "", "") + ',"ts_ms":' + str(self.clock())
            + ',"transaction":null,"op":"m"}'
            + (',"schema":{"type":"struct","optional":false,"name":' + quote_text(cluster + ".watermark.Envelope")
               + ',"version":1,"fields":[' + SOURCE_SCHEMA + ENVELOPE_TAIL if self.with_schema else "")
            + "}"
        )
        return self._finish(key, value, event)

    def encode(self, events: Iterable[Event]) -> list[Message]:
        """One message per row, per supported DDL and (with the TiDB extension) per watermark."""
        messages: list[Message] = []
        for event in events:
            if isinstance(event, RowChange):
                messages.append(self._encode_row(event))
            elif isinstance(event, DDLEvent):
                message = self._encode_ddl(event)
                if message is not None:
                    messages.append(message)
            elif isinstance(event, Watermark):
                if self.extension:
                    messages.append(self._encode_watermark(event))
            elif not isinstance(event, Bootstrap):
                raise encode_error(f"cannot encode {type(event).__name__}")
        return messages

    # ------------------------------------------------------------------ projection
    def project(self, event: Event) -> Event | None:
        """The event as ``Decoder`` returns it after this encoder (see the module docs of the rules)."""
        if isinstance(event, Watermark):
            return event if self.extension else None
        if isinstance(event, Bootstrap):
            return None
        if isinstance(event, DDLEvent):
            return self._project_ddl(event)
        if event.table_info is None:
            return event
        return self._project_row(event, event.table_info)

    def _project_ddl(self, event: DDLEvent) -> DDLEvent | None:
        change = CHANGE_TYPES.get(event.ddl_type)
        if change is None:
            return None
        db, table, database = self._ddl_names(event)
        table_info = pre_info = None
        if table and event.ddl_type not in (A.TRUNCATE_TABLE, A.DROP_TABLE) and event.table_info is not None:
            columns = ddl_table_columns(event.query, event.table_info.columns)
            body = {
                "defaultCharsetName": event.table_info.charset,
                "primaryKeyColumnNames": primary_key_names(event.table_info),
                "columns": [dict(column_metadata(c, i)) for i, c in enumerate(columns, start=1)],
            }
            table_info = table_from_change(body, db, table)
            if event.ddl_type == A.RENAME_TABLE:
                pre = event.pre_table_info
                pre_db, pre_table = (pre.schema, pre.table) if pre is not None else (db, table)
                pre_info = msgspec.structs.replace(table_info, schema=pre_db, table=pre_table)
        return DDLEvent(
            query=event.query, ddl_type=classify_ddl(event.query, change, bool(table)),
            commit_ts=event.commit_ts, schema=database or db, table=table,
            table_info=table_info, pre_table_info=pre_info,
        )

    def _project_row(self, event: RowChange, table: TableInfo) -> RowChange:
        plan = self._plan(table)
        post = event.columns if event.op is not Op.DELETE else None
        pre = event.pre_columns if event.op is not Op.INSERT else None
        if event.op is Op.UPDATE and not self.options.debezium_output_old_value:
            pre = None
        if event.op is Op.UPDATE and post is None:
            return event
        images = [img for img in (post, pre) if img is not None]
        key_names = {c.info.name for c in plan.key}
        # With a schema the decoder takes each column from its schema field (schema order: the
        # payload columns, then virtual ones); columns it cannot type are read from the JSON alone.
        typed: dict[str, ColumnInfo] = {}
        if self.with_schema:
            ordered = [c for c in table.columns if not c.virtual] + [c for c in table.columns if c.virtual]
            for column in ordered:
                field = load_json(_text_bytes(schema_element(column, self.extension)), "$")
                made = column_from_field(field, self.zone, key=column.name in key_names, virtual=column.virtual)
                if made is not None and made[0].name not in typed:
                    typed[made[0].name] = made[0]
        inferred: dict[str, tuple[ColumnInfo, Converter]] = {}
        for c in plan.payload:
            name = c.info.name
            if name not in typed:
                wires = [_roundtrip(c.wire_value(img.get(name))) for img in images]
                inferred[name] = infer_column(name, wires, name in key_names)

        def project_image(image: Row | None) -> Row | None:
            if image is None:
                return None
            out: dict[str, Value] = {}
            for c in plan.payload:
                name = c.info.name
                raw = image.get(name)
                if name in typed:
                    out[name] = self._project_value(c, raw)
                else:
                    wire = _roundtrip(c.wire_value(raw))
                    out[name] = None if wire is None else inferred[name][1](wire, "$")
            return Row(out)

        columns = [*typed.values(), *(column for column, _ in inferred.values())]
        return RowChange(
            op=event.op, schema=table.schema, table=table.table, commit_ts=event.commit_ts,
            columns=project_image(post), pre_columns=project_image(pre),
            table_info=TableInfo(schema=table.schema, table=table.table, columns=tuple(columns)),
        )

    def _project_value(self, c: _Column, value: Value) -> Value:
        """A value as the decoder reads it back when the schema is sent (the lossy rules of §5.2)."""
        column = c.info
        from_default = False
        if value is None:
            if column.default is None:
                return None
            if c.default_error is not None:
                raise c.default_error
            value, from_default = c.default_value, True
        code = column.type_code
        ext = self.extension
        if code in INTEGER_TYPES:
            wire: int = c.wire(value, from_default)
            return wire + _U64 if ext and column.is_unsigned and wire < 0 else wire
        if code == T.FLOAT:
            assert isinstance(value, (int, float))
            number = clean_float(float(value))
            if ext or column.decimal == -1:
                return float32_round(number)
            return number if from_default else float(shortest_repr(number, 32))
        if code == T.DOUBLE:
            assert isinstance(value, (int, float))
            return clean_float(float(value))
        if code == T.NEWDECIMAL:
            assert isinstance(value, str)
            parsed = go_parse_float(value)
            assert parsed is not None
            return decimal_text(parsed) if ext else parsed
        if code in (T.DATE, T.NEWDATE):
            assert isinstance(value, str)
            date = parse_go_date(value)
            if date is None:
                return None if column.nullable else "1970-01-01"
            return format_civil(days_from_civil(adjust_two_digit_year(date[0]), date[1], date[2]))
        if code == T.DATETIME:
            return self._project_datetime(column, value, from_default)
        if code == T.TIMESTAMP:
            return self._project_timestamp(column, value, from_default)
        if code == T.TIME:
            assert isinstance(value, str)
            micros = parse_duration_us(value, column.decimal)
            assert micros is not None
            return format_duration_us(micros, 6)
        if code == T.BIT:
            assert isinstance(value, int)
            if column.flen == 1:
                return 1 if value else 0
            return value & ((1 << (8 * bit_byte_count(column.flen))) - 1)
        if code == T.ENUM:
            assert isinstance(value, int)
            elems = column.elems or ()
            name = elems[value - 1] if 1 <= value <= len(elems) else ""
            decoded = split_allowed(",".join(escape_enum_option(e) for e in elems), escaped=True)
            return decoded.index(name) + 1 if name in decoded else 0
        if code == T.SET:
            assert isinstance(value, int)
            elems = column.elems or ()
            if value <= 0 or value >> len(elems):
                return 0
            decoded = split_allowed(",".join(elems), escaped=False)
            mask = 0
            for name in ",".join(e for i, e in enumerate(elems) if value >> i & 1).split(","):
                mask |= 1 << decoded.index(name)
            return mask
        if code in STRING_TYPES:
            data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            assert isinstance(data, bytes)
            if column.is_binary and not (ext and code != T.VAR_STRING and column.charset == "binary"):
                return str(c.wire(data, from_default)).encode("ascii")
            return data
        if code in (T.JSON, T.TIDB_VECTOR):
            return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
        if code == T.YEAR:
            return value
        return value

    @staticmethod
    def _project_datetime(column: ColumnInfo, value: Value, from_default: bool) -> Value:
        assert isinstance(value, str)
        if value == "CURRENT_TIMESTAMP" or (from_default and value.upper().startswith("CURRENT_TIMESTAMP")):
            micros: int | None = 0
        else:
            micros = datetime_wire_us(column, value)
        if micros is None:
            if column.nullable:
                return None
            micros = 0
        if column.decimal <= 3:
            return format_wall(wall_from_epoch_us(micros // 1000 * 1000), 3)
        return format_wall(wall_from_epoch_us(micros), 6)

    def _project_timestamp(self, column: ColumnInfo, value: Value, from_default: bool) -> Value:
        assert isinstance(value, str)
        epoch = utc_to_local(0, self.zone)
        assert epoch is not None
        if value == "CURRENT_TIMESTAMP" or (from_default and value.upper().startswith("CURRENT_TIMESTAMP")):
            return None if column.nullable else format_wall(epoch, 0)
        fsp = max(column.decimal, 0)
        parsed = parse_datetime(value, fsp)
        assert parsed is not None
        if parsed.key() < MIN_TIMESTAMP:
            return None if from_default else format_wall(epoch, 0)
        return format_wall(parsed, fsp)


def _roundtrip(wire: Any) -> Any:
    """A wire value as a JSON reader sees it (e.g. the double 1.0 is written ``1``, an integer)."""
    if wire is None:
        return None
    return load_json(dump(wire).encode("utf-8", "surrogateescape"), "$")


def _dump_meta(value: Any) -> str:
    """A tableChanges metadata value (strings, ints, the float ``scale``, booleans, string lists)."""
    if isinstance(value, list):
        return "[" + ",".join(quote_text(v) for v in value) + "]"
    return dump(value)


def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode events with a one-shot Encoder."""
    return Encoder(options).encode(events)
