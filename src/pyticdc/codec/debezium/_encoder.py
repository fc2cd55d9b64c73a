"""The Debezium encoder (TiCDC ``pkg/sink/codec/debezium``) and its documented projection."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec

from pyticdc.codec.base import BaseEncoder, Message
from pyticdc.codec.compression import compress
from pyticdc.codec.debezium._common import (
    MIN_TIMESTAMP,
    PROTOCOL,
    adjust_two_digit_year,
    days_from_civil,
    encode_error,
    escape_enum_option,
    format_civil,
    format_duration_us,
    format_wall,
    parse_datetime,
    parse_duration_us,
    parse_go_date,
    sanitize_name,
    schema_topic_name,
    split_allowed,
    utc_to_local,
    wall_from_epoch_us,
)
from pyticdc.codec.debezium._ddl import (
    CHANGE_TYPES,
    classify_ddl,
    column_metadata,
    ddl_table_columns,
    primary_key_names,
    table_from_change,
)
from pyticdc.codec.debezium._decoder import (
    Converter,
    column_from_field,
    decimal_text,
    infer_column,
    load_json,
)
from pyticdc.codec.debezium._types import (
    INT_TYPES,
    STRING_TYPES,
    Wire,
    bit_byte_count,
    clean_float,
    column_is_binary,
    datetime_wire_us,
    default_to_model,
    dump,
    go_parse_float,
    quote_text,
    schema_element,
    wire_function,
)
from pyticdc.codec.jsontext import float32_round, shortest_repr
from pyticdc.codec.timezone import load_zone
from pyticdc.errors import EncodeError
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

__all__ = ["OPTIONS", "Encoder"]

#: Options TiCDC's Debezium codec reads (max-message-bytes is accepted: Debezium never checks it, §5.1).
OPTIONS: Final = frozenset({
    "enable_tidb_extension", "debezium_disable_schema", "debezium_output_old_value", "time_zone", "cluster_id",
    "large_message_handle_compression", "max_message_bytes",
})

# writeSourceSchema (codec.go): the io.debezium.connector.mysql.Source struct.
SOURCE_SCHEMA: Final = (
    '{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},'
    '{"type":"string","optional":false,"field":"connector"},{"type":"string","optional":false,"field":"name"},'
    '{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,'
    '"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},'
    '"default":"false","field":"snapshot"},{"type":"string","optional":false,"field":"db"},'
    '{"type":"string","optional":true,"field":"sequence"},{"type":"string","optional":true,"field":"table"},'
    '{"type":"int64","optional":false,"field":"server_id"},{"type":"string","optional":true,"field":"gtid"},'
    '{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},'
    '{"type":"int32","optional":false,"field":"row"},{"type":"int64","optional":true,"field":"thread"},'
    '{"type":"string","optional":true,"field":"query"}],"optional":false,'
    '"name":"io.debezium.connector.mysql.Source","field":"source"}'
)
_ENVELOPE_TAIL: Final = (
    ',{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},'
    '{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},'
    '{"type":"int64","optional":false,"field":"total_order"},'
    '{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block",'
    '"version":1,"field":"transaction"}]}'
)
_COLUMN_FIELDS: Final = (
    '{"field":"name","optional":false,"type":"string"},{"field":"jdbcType","optional":false,"type":"int32"},'
    '{"field":"nativeType","optional":true,"type":"int32"},{"field":"typeName","optional":false,"type":"string"},'
    '{"field":"typeExpression","optional":true,"type":"string"},'
    '{"field":"charsetName","optional":true,"type":"string"},{"field":"length","optional":true,"type":"int32"},'
    '{"field":"scale","optional":true,"type":"int32"},{"field":"position","optional":false,"type":"int32"},'
    '{"field":"optional","optional":true,"type":"boolean"},'
    '{"field":"autoIncremented","optional":true,"type":"boolean"},'
    '{"field":"generated","optional":true,"type":"boolean"},{"field":"comment","optional":true,"type":"string"},'
    '{"field":"defaultValueExpression","optional":true,"type":"string"},'
    '{"field":"enumValues","optional":true,"type":"array","items":{"type":"string","optional":false}}'
)
DDL_VALUE_SCHEMA: Final = (
    '{"optional":false,"type":"struct","version":1,"name":"io.debezium.connector.mysql.SchemaChangeValue",'
    '"fields":[' + SOURCE_SCHEMA + ',{"field":"ts_ms","optional":false,"type":"int64"},'
    '{"field":"databaseName","optional":true,"type":"string"},'
    '{"field":"schemaName","optional":true,"type":"string"},{"field":"ddl","optional":true,"type":"string"},'
    '{"field":"tableChanges","optional":false,"type":"array","items":{"name":"io.debezium.connector.schema.Change",'
    '"optional":false,"type":"struct","version":1,"fields":[{"field":"type","optional":false,"type":"string"},'
    '{"field":"id","optional":false,"type":"string"},{"field":"table","optional":true,"type":"struct",'
    '"name":"io.debezium.connector.schema.Table","version":1,"fields":['
    '{"field":"defaultCharsetName","optional":true,"type":"string"},'
    '{"field":"primaryKeyColumnNames","optional":true,"type":"array","items":{"type":"string","optional":false}},'
    '{"field":"columns","optional":false,"type":"array","items":{"name":"io.debezium.connector.schema.Column",'
    '"optional":false,"type":"struct","version":1,"fields":[' + _COLUMN_FIELDS + ']}},'
    '{"field":"comment","optional":true,"type":"string"}]}]}}]}'
)
DDL_KEY_SCHEMA: Final = (
    '{"type":"struct","name":"io.debezium.connector.mysql.SchemaChangeKey","optional":false,"version":1,'
    '"fields":[{"field":"databaseName","optional":false,"type":"string"}]}'
)
_ZERO_ZONED: Final = "1970-01-01T00:00:00Z"
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
        self._plans: dict[int, _TablePlan] = {}

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
            + SOURCE_SCHEMA + _ENVELOPE_TAIL
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
        plan = _TablePlan(table, source_prefix, source_suffix, tuple(columns), key, key_schema, value_schema)
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

    def _finish(self, key: str, value: str, event: Event) -> Message:
        method = self.options.large_message_handle_compression
        key_bytes = compress(method, _text_bytes(key))
        value_bytes = compress(method, _text_bytes(value))
        return Message(key_bytes, value_bytes, (event,))

    @staticmethod
    def _image(columns: tuple[_Column, ...], image: Row) -> str:
        return "{" + ",".join(c.render(image.get(c.info.name)) for c in columns) + "}"

    def _encode_row(self, event: RowChange) -> Message:
        table = event.table_info
        if table is None:
            raise encode_error(f"row of {event.schema}.{event.table} has no table_info")
        if not 0 <= event.commit_ts < _U64:
            raise encode_error(f"commit_ts {event.commit_ts} is not a uint64")
        plan = self._plan(table)
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

    def _ddl_names(self, event: DDLEvent) -> tuple[str, str, str]:
        """(db, table, databaseName) as TiCDC's getDBTableName and the DROP TABLE rule give them."""
        info = event.table_info
        db, table = (info.schema, info.table) if info is not None else (event.schema, event.table)
        database = db
        if event.ddl_type == 4 and event.pre_table_info is not None:
            database = event.pre_table_info.schema
        return db, table, database

    def _table_change(self, event: DDLEvent, change: str, db: str, table: str) -> str:
        pre = event.pre_table_info
        if event.ddl_type == 14:
            pre_db, pre_table = (pre.schema, pre.table) if pre is not None else (db, table)
            ident = f'"{pre_db}"."{pre_table}","{db}"."{table}"'
        else:
            ident = f'"{db}"."{table}"'
        text = '{"type":"' + change + '","id":' + quote_text(ident)
        info = event.table_info
        if event.ddl_type == 4 or info is None:
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
        changes = "" if not table or event.ddl_type == 11 else self._table_change(event, change, db, table)
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
               + ',"version":1,"fields":[' + SOURCE_SCHEMA + _ENVELOPE_TAIL if self.with_schema else "")
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
        if table and event.ddl_type not in (11, 4) and event.table_info is not None:
            columns = ddl_table_columns(event.query, event.table_info.columns)
            body = {
                "defaultCharsetName": event.table_info.charset,
                "primaryKeyColumnNames": primary_key_names(event.table_info),
                "columns": [dict(column_metadata(c, i)) for i, c in enumerate(columns, start=1)],
            }
            table_info = table_from_change(body, db, table)
            if event.ddl_type == 14:
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
        if code in INT_TYPES:
            wire: int = c.wire(value, from_default)
            return wire + _U64 if ext and column.is_unsigned and wire < 0 else wire
        if code == 4:
            assert isinstance(value, (int, float))
            number = clean_float(float(value))
            if ext or column.decimal == -1:
                return float32_round(number)
            return number if from_default else float(shortest_repr(number, 32))
        if code == 5:
            assert isinstance(value, (int, float))
            return clean_float(float(value))
        if code == 246:
            assert isinstance(value, str)
            parsed = go_parse_float(value)
            assert parsed is not None
            return decimal_text(parsed) if ext else parsed
        if code in (10, 14):
            assert isinstance(value, str)
            date = parse_go_date(value)
            if date is None:
                return None if column.nullable else "1970-01-01"
            return format_civil(days_from_civil(adjust_two_digit_year(date[0]), date[1], date[2]))
        if code == 12:
            return self._project_datetime(column, value, from_default)
        if code == 7:
            return self._project_timestamp(column, value, from_default)
        if code == 11:
            assert isinstance(value, str)
            micros = parse_duration_us(value, column.decimal)
            assert micros is not None
            return format_duration_us(micros, 6)
        if code == 16:
            assert isinstance(value, int)
            if column.flen == 1:
                return 1 if value else 0
            return value & ((1 << (8 * bit_byte_count(column.flen))) - 1)
        if code == 247:
            assert isinstance(value, int)
            elems = column.elems or ()
            name = elems[value - 1] if 1 <= value <= len(elems) else ""
            decoded = split_allowed(",".join(escape_enum_option(e) for e in elems), escaped=True)
            return decoded.index(name) + 1 if name in decoded else 0
        if code == 248:
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
            if column_is_binary(column) and not (ext and code != 253 and column.charset == "binary"):
                return str(c.wire(data, from_default)).encode("ascii")
            return data
        if code in (245, 225):
            return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
        if code == 13:
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

