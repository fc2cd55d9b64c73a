"""The Connect schema TiCDC writes for a column: its type, semantic name, parameters and default.

Implements ``writeDebeziumFieldSchema`` and ``getTiDBType`` of TiCDC's Debezium codec
(ticdc-reference.md §5.2); ``readers.column_from_field`` reads these fields back.
"""

from __future__ import annotations

import base64
import math

from pyticdc.codec.debezium.message import quote_text
from pyticdc.codec.debezium.values import (
    MIN_TIMESTAMP,
    ZERO_ZONED,
    adjust_two_digit_year,
    bit_byte_count,
    days_from_civil,
    escape_enum_option,
    format_wall,
    go_parse_float,
    parse_bit_default,
    parse_datetime,
    parse_duration_us,
    parse_go_date,
    valid_date,
    wall_epoch_us,
)
from pyticdc.codec.jsontext import format_float_jsoniter
from pyticdc.model import ColumnInfo, TypeCode
from pyticdc.mysql.types import ENUM_SET_TYPES, FLOAT_TYPES, INTEGER_OR_YEAR_TYPES, STRING_TYPES, type_to_str

__all__ = ["schema_element", "tidb_type"]

T = TypeCode


def tidb_type(column: ColumnInfo) -> str:
    """TiCDC ``getTiDBType``: TypeToStr plus `` unsigned`` (not for YEAR/BIT/CHAR/VARCHAR/DECIMAL)."""
    name = type_to_str(column.type_code, column.charset)
    if column.type_code in (T.YEAR, T.BIT, T.VARCHAR, T.STRING, T.NEWDECIMAL):
        return name
    return name + " unsigned" if column.is_unsigned else name


def _default_text(column: ColumnInfo) -> str | None:
    """The schema ``"default"`` JSON of a column, or None to omit it (writeDebeziumFieldSchema)."""
    default = column.default
    if default is None:
        return None
    code = column.type_code
    not_null = not column.nullable
    if code == T.BIT:
        bits = parse_bit_default(default, column.flen)
        if bits is None:
            return None
        if column.flen == 1:
            return "true" if bits else "false"
        count = bit_byte_count(column.flen)
        if not 0 <= count <= 8:
            return None
        return '"' + base64.b64encode(bits.to_bytes(8, "little")[:count]).decode("ascii") + '"'
    if code in STRING_TYPES or code in ENUM_SET_TYPES or code in (T.JSON, T.TIDB_VECTOR):
        return quote_text(default)
    if code in (T.DATE, T.NEWDATE):
        date = parse_go_date(default)
        if date is None:
            return "0" if not_null else None
        return str(days_from_civil(adjust_two_digit_year(date[0]), date[1], date[2]))
    if code == T.DATETIME:
        if default == "CURRENT_TIMESTAMP":
            return "0"
        parsed = parse_datetime(default, column.decimal)
        if parsed is None:
            return "0"
        if not valid_date(parsed.year, parsed.month, parsed.day):
            return "0" if not_null else None
        micros = wall_epoch_us(parsed._replace(year=adjust_two_digit_year(parsed.year)))
        return str(micros // 1000 if column.decimal <= 3 else micros)
    if code == T.TIMESTAMP:
        if default == "CURRENT_TIMESTAMP":
            return quote_text(ZERO_ZONED) if not_null else None
        fsp = max(column.decimal, 0)
        parsed = parse_datetime(default, fsp)
        if parsed is None:
            return "0"
        if parsed.key() < MIN_TIMESTAMP:
            return quote_text(ZERO_ZONED) if not_null else None
        if not valid_date(parsed.year, parsed.month, parsed.day):
            return "0"
        # The schema default is read as UTC (GoTime(time.UTC)), not in the changefeed zone.
        return quote_text(format_wall(parsed, fsp, "T") + "Z")
    if code == T.TIME:
        duration = parse_duration_us(default, column.decimal)
        return None if duration is None else str(duration)
    if code in INTEGER_OR_YEAR_TYPES or code in FLOAT_TYPES or code == T.NEWDECIMAL:
        parsed_float = go_parse_float(default)
        if parsed_float is None or math.isnan(parsed_float) or math.isinf(parsed_float):
            return None
        if code == T.YEAR:
            # TiCDC: "DEFAULT 1" is 2001, "DEFAULT 99" is 1999 (float arithmetic, as in Go)
            if parsed_float < 70:
                parsed_float += 2000
            elif parsed_float < 100:
                parsed_float += 1900
        return format_float_jsoniter(parsed_float, 64)
    return quote_text(default)


def _type_and_extras(column: ColumnInfo) -> tuple[str, list[tuple[str, str]]] | None:
    """(Connect type, [(key, json)] of name/version/parameters) of a column; None if unsupported."""
    code = column.type_code
    unsigned = column.is_unsigned
    if code == T.BIT:
        if column.flen == 1:
            return "boolean", []
        return "bytes", [("name", '"io.debezium.data.Bits"'), ("version", "1"),
                         ("parameters", '{"length":' + quote_text(str(column.flen)) + "}")]
    if code in STRING_TYPES:
        return "string", []
    if code == T.ENUM:
        allowed = ",".join(escape_enum_option(e) for e in column.elems or ())
        return "string", [("name", '"io.debezium.data.Enum"'), ("version", "1"),
                          ("parameters", '{"allowed":' + quote_text(allowed) + "}")]
    if code == T.SET:
        allowed = ",".join(column.elems or ())
        return "string", [("name", '"io.debezium.data.EnumSet"'), ("version", "1"),
                          ("parameters", '{"allowed":' + quote_text(allowed) + "}")]
    if code in (T.DATE, T.NEWDATE):
        return "int32", [("name", '"io.debezium.time.Date"'), ("version", "1")]
    if code == T.DATETIME:
        name = "io.debezium.time.Timestamp" if column.decimal <= 3 else "io.debezium.time.MicroTimestamp"
        return "int64", [("name", f'"{name}"'), ("version", "1")]
    if code == T.TIMESTAMP:
        return "string", [("name", '"io.debezium.time.ZonedTimestamp"'), ("version", "1")]
    if code == T.TIME:
        return "int64", [("name", '"io.debezium.time.MicroTime"'), ("version", "1")]
    if code == T.JSON:
        return "string", [("name", '"io.debezium.data.Json"'), ("version", "1")]
    if code == T.TINY:
        return "int16", []
    if code == T.SHORT:
        return ("int32" if unsigned else "int16"), []
    if code == T.INT24:
        return "int32", []
    if code == T.LONG:
        return ("int64" if unsigned else "int32"), []
    if code == T.LONGLONG:
        return "int64", []
    if code == T.FLOAT:
        return ("double" if column.decimal != -1 else "float"), []
    if code in (T.DOUBLE, T.NEWDECIMAL):
        return "double", []
    if code == T.YEAR:
        return "int32", [("name", '"io.debezium.time.Year"'), ("version", "1")]
    if code == T.TIDB_VECTOR:
        return "string", [("name", '"io.debezium.data.TiDBVectorFloat32"')]
    return None


def schema_element(column: ColumnInfo, extension: bool) -> str:
    """The column's schema object: [tidb_type], type, optional, [name, version, parameters], field, [default]."""
    parts: list[str] = []
    if extension:
        parts.append('"tidb_type":' + quote_text(tidb_type(column)))
    mapped = _type_and_extras(column)
    if mapped is not None:
        connect_type, extras = mapped
        parts.append(f'"type":"{connect_type}"')
        parts.append('"optional":' + ("true" if column.nullable else "false"))
        parts.extend(f'"{key}":{text}' for key, text in extras)
        parts.append('"field":' + quote_text(column.name))
        default = _default_text(column)
        if default is not None:
            parts.append('"default":' + default)
    return "{" + ",".join(parts) + "}"
