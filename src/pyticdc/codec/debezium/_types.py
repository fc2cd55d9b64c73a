"""Per-column Debezium mapping: the schema element and the payload value of every TiDB type.

Implements ``writeDebeziumFieldSchema`` / ``writeDebeziumFieldValue`` of TiCDC's Debezium codec
(ticdc-reference.md §5.2). A column's value goes through a *wire* function that returns the JSON
value as a Python object (``F32`` marks a float printed with 32-bit precision); ``dump`` prints it
the way json-iterator does (§1.5).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from typing import Any, Final
from zoneinfo import ZoneInfo

from pyticdc.codec.debezium._common import (
    MIN_TIMESTAMP,
    US_PER_SECOND,
    WallTime,
    adjust_two_digit_year,
    days_from_civil,
    encode_error,
    escape_enum_option,
    format_wall,
    local_to_utc_seconds,
    parse_datetime,
    parse_duration_us,
    parse_go_date,
    valid_date,
    wall_epoch_us,
    wall_from_epoch_us,
)
from pyticdc.codec.jsontext import format_float_jsoniter, jsoniter_quote
from pyticdc.model import ColumnFlag, ColumnInfo, Value
from pyticdc.mysql.types import type_to_str

__all__ = [
    "F32",
    "Wire",
    "bit_byte_count",
    "clean_float",
    "column_is_binary",
    "default_to_model",
    "dump",
    "go_parse_float",
    "int_range",
    "quote_bytes",
    "quote_text",
    "schema_element",
    "tidb_type",
    "wire_function",
]


class F32(float):
    """A float json-iterator prints with float32 shortest digits (a Go ``float32``)."""

    __slots__ = ()


#: A column's wire function: (model value, came from the column default) -> JSON value.
Wire = Callable[[Value, bool], Any]


def quote_text(text: str) -> str:
    """A JSON string as json-iterator writes it (no HTML escaping, bytes pass through)."""
    return jsoniter_quote(text)


def quote_bytes(data: bytes) -> str:
    """Raw bytes as a json-iterator string: invalid UTF-8 passes through (surrogateescape)."""
    return jsoniter_quote(data.decode("utf-8", "surrogateescape"))


def dump(value: Any) -> str:
    """One wire value as json-iterator text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, F32):
        return format_float_jsoniter(value, 32)
    if isinstance(value, float):
        return format_float_jsoniter(value, 64)
    if isinstance(value, str):
        return jsoniter_quote(value)
    raise encode_error(f"unexpected wire value {value!r}")


# --------------------------------------------------------------------------- TiDB facts
#: TiDB ``mysql.GetDefaultFieldLengthAndDecimal`` (flen, decimal) per type code.
DEFAULT_FLEN_DECIMAL: Final[dict[int, tuple[int, int]]] = {
    16: (1, 0), 1: (4, 0), 2: (6, 0), 9: (9, 0), 3: (11, 0), 8: (20, 0), 5: (22, -1), 4: (12, -1),
    246: (10, 0), 11: (10, 0), 10: (10, 0), 7: (19, 0), 12: (19, 0), 13: (4, 0), 254: (1, 0), 15: (5, 0),
    253: (5, 0), 249: (255, 0), 252: (65535, 0), 250: (16777215, 0), 251: (4294967295, 0),
    245: (4294967295, 0), 6: (0, 0), 248: (-1, 0), 247: (-1, 0),
}
_INT_BITS: Final = {1: 8, 2: 16, 9: 24, 3: 32, 8: 64}
INT_TYPES: Final = frozenset(_INT_BITS)
STRING_TYPES: Final = frozenset({15, 253, 254, 249, 250, 251, 252})
_U64: Final = 1 << 64


def int_range(type_code: int, unsigned: bool) -> tuple[int, int]:
    """TiDB ``GetMinValue`` / ``GetMaxValue`` of an integer type."""
    bits = _INT_BITS[type_code]
    if unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def column_is_binary(column: ColumnInfo) -> bool:
    """TiCDC's ``Flag.IsBinary()``: the column carries the Binary flag (binary charset)."""
    return bool(column.flags & ColumnFlag.BINARY)


def tidb_type(column: ColumnInfo) -> str:
    """TiCDC ``getTiDBType``: TypeToStr plus `` unsigned`` (not for YEAR/BIT/CHAR/VARCHAR/DECIMAL)."""
    name = type_to_str(column.type_code, column.charset)
    if column.type_code in (13, 16, 15, 254, 246):
        return name
    return name + " unsigned" if column.is_unsigned else name


def _go_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def bit_byte_count(flen: int) -> int:
    """``getBitFromUint64``'s byte count: ceil(flen / 8) with Go's truncating arithmetic."""
    count = _go_div(flen, 8)
    if flen - count * 8 != 0:
        count += 1
    return count


_GO_FLOAT: Final = re.compile(
    r"[+-]?(?:(?:\d+(?:_\d+)*\.?(?:\d+(?:_\d+)*)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?|inf|infinity|nan)",
    re.IGNORECASE,
)


def go_parse_float(text: str) -> float | None:
    """Go ``strconv.ParseFloat(text, 64)``: None when Go reports an error (syntax or range)."""
    if _GO_FLOAT.fullmatch(text) is None or "_" in text:
        return None
    value = float(text)
    if math.isinf(value) and "inf" not in text.lower():
        return None  # out of range: Go returns ±Inf with ErrRange
    return value


def _bit_bytes(text: str) -> bytes:
    # TiDB keeps a BIT default as its raw bytes; the model carries them as a str of code points.
    if all(ord(c) < 256 for c in text):
        return text.encode("latin-1")
    return text.encode("utf-8", "surrogateescape")


def _parse_bit_default(text: str, flen: int) -> int | None:
    """TiCDC ``parseBit`` + ``ParseUint(…, 2, 64)``: the BIT default's integer, None on error."""
    data = _bit_bytes(text)
    if not data or len(data) > 8:
        return None
    return int.from_bytes(data, "big")


def default_to_model(column: ColumnInfo, text: str) -> Value:
    """A column default (TiDB's stored text) as the value TiCDC substitutes for NULL (§5.2 NULL row).

    Raises EncodeError where TiCDC's encoder fails on the default.
    """
    code = column.type_code
    if code in INT_TYPES or code == 13:
        try:
            return int(text, 10)
        except ValueError:
            raise encode_error(f"column {column.name!r}: default {text!r} is not an integer") from None
    if code in (4, 5):
        parsed = go_parse_float(text)
        if parsed is None:
            raise encode_error(f"column {column.name!r}: default {text!r} is not a number")
        return parsed
    if code == 16:
        bits = _parse_bit_default(text, column.flen)
        if bits is None:
            raise encode_error(f"column {column.name!r}: BIT default {text!r} is not valid")
        return bits
    if code == 247:
        elems = column.elems or ()
        return elems.index(text) + 1 if text in elems else 0
    if code == 248:
        elems = column.elems or ()
        mask = 0
        for name in text.split(",") if text else ():
            if name not in elems:
                return 0
            mask |= 1 << elems.index(name)
        return mask
    if code in STRING_TYPES:
        return text.encode("utf-8", "surrogateescape")
    return text


# --------------------------------------------------------------------------- wire functions
def _expect_int(column: ColumnInfo, value: Value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise encode_error(f"column {column.name!r}: expected an integer, got {type(value).__name__}")
    return value


def _expect_str(column: ColumnInfo, value: Value) -> str:
    if not isinstance(value, str):
        raise encode_error(f"column {column.name!r}: expected a string, got {type(value).__name__}")
    return value


def _int_wire(column: ColumnInfo) -> Wire:
    unsigned = column.is_unsigned
    low, high = int_range(column.type_code, unsigned)
    longlong = column.type_code == 8

    def wire(value: Value, from_default: bool) -> Any:
        v = _expect_int(column, value)
        if unsigned:
            if v < 0 or v >= _U64:
                raise encode_error(f"column {column.name!r}: {v} is not a uint64")
            # TiCDC writes -1 for BIGINT UNSIGNED max and for anything above the type range.
            if (longlong and v == high) or v > high:
                return -1
            return v - _U64 if v >= 1 << 63 else v
        if not -(1 << 63) <= v < 1 << 63:
            raise encode_error(f"column {column.name!r}: {v} is not an int64")
        return -1 if v < low or v > high else v

    return wire


def clean_float(value: float) -> float:
    """TiCDC's mounter replaces NaN and ±Inf by 0 before any codec sees them (reference §1.1)."""
    return 0.0 if math.isnan(value) or math.isinf(value) else value


def _float_wire(column: ColumnInfo, single: bool) -> Wire:
    def wire(value: Value, from_default: bool) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise encode_error(f"column {column.name!r}: expected a float, got {type(value).__name__}")
        v = clean_float(float(value))
        # A default arrives as a string and is written with WriteFloat64Field, even for FLOAT.
        return F32(v) if single and not from_default else v

    return wire


def _decimal_wire(column: ColumnInfo) -> Wire:
    def wire(value: Value, from_default: bool) -> Any:
        parsed = go_parse_float(_expect_str(column, value))
        if parsed is None or math.isinf(parsed) or math.isnan(parsed):
            raise encode_error(f"column {column.name!r}: decimal {value!r} does not fit a float64")
        return parsed

    return wire


def _date_wire(column: ColumnInfo) -> Wire:
    not_null = not column.nullable

    def wire(value: Value, from_default: bool) -> Any:
        date = parse_go_date(_expect_str(column, value))
        if date is None:
            return 0 if not_null else None  # e.g. 0000-00-00: Go's time.Parse rejects it
        return days_from_civil(adjust_two_digit_year(date[0]), date[1], date[2])

    return wire


def datetime_wire_us(column: ColumnInfo, text: str) -> int | None:
    """DATETIME → epoch microseconds as TiCDC computes them (None = GoTime rejected the date)."""
    parsed = parse_datetime(text, column.decimal)
    if parsed is None:
        raise encode_error(f"column {column.name!r}: {text!r} is not a DATETIME")
    if not valid_date(parsed.year, parsed.month, parsed.day):
        return None
    return wall_epoch_us(parsed._replace(year=adjust_two_digit_year(parsed.year)))


def _datetime_wire(column: ColumnInfo) -> Wire:
    not_null = not column.nullable
    millis = column.decimal <= 3

    def wire(value: Value, from_default: bool) -> Any:
        text = _expect_str(column, value)
        if text == "CURRENT_TIMESTAMP" or (from_default and text.upper().startswith("CURRENT_TIMESTAMP")):
            return 0
        micros = datetime_wire_us(column, text)
        if micros is None:
            return 0 if not_null else None
        return micros // 1000 if millis else micros

    return wire


_ZERO_ZONED: Final = "1970-01-01T00:00:00Z"


def timestamp_wire_text(column: ColumnInfo, text: str, zone: ZoneInfo, from_default: bool) -> str | None:
    """TIMESTAMP → ``ZonedTimestamp`` text (UTC, ``Z``) as TiCDC renders it; None for a JSON null."""
    if text == "CURRENT_TIMESTAMP" or (from_default and text.upper().startswith("CURRENT_TIMESTAMP")):
        return None if column.nullable else _ZERO_ZONED
    fsp = max(column.decimal, 0)
    parsed = parse_datetime(text, fsp)
    if parsed is None:
        raise encode_error(f"column {column.name!r}: {text!r} is not a TIMESTAMP")
    if parsed.key() < MIN_TIMESTAMP:
        # Below TiDB's MinTimestamp: a real value becomes the epoch, a substituted default null.
        return None if from_default else _ZERO_ZONED
    if not valid_date(parsed.year, parsed.month, parsed.day):
        raise encode_error(f"column {column.name!r}: {text!r} is not a valid date")
    instant = local_to_utc_seconds(parsed, zone)
    if instant is None:
        raise encode_error(f"column {column.name!r}: {text!r} does not exist in time zone {zone.key}")
    utc = wall_from_epoch_us(instant * US_PER_SECOND + parsed.micro)
    return format_wall(utc, fsp, "T") + "Z"


def _timestamp_wire(column: ColumnInfo, zone: ZoneInfo) -> Wire:
    def wire(value: Value, from_default: bool) -> Any:
        return timestamp_wire_text(column, _expect_str(column, value), zone, from_default)

    return wire


def _time_wire(column: ColumnInfo) -> Wire:
    def wire(value: Value, from_default: bool) -> Any:
        micros = parse_duration_us(_expect_str(column, value), column.decimal)
        if micros is None:
            raise encode_error(f"column {column.name!r}: {value!r} is not a TIME")
        return micros

    return wire


def _bit_wire(column: ColumnInfo) -> Wire:
    width = column.flen
    count = bit_byte_count(width)

    def wire(value: Value, from_default: bool) -> Any:
        v = _expect_int(column, value)
        if v < 0 or v >= _U64:
            raise encode_error(f"column {column.name!r}: BIT value {v} is not a uint64")
        if width == 1:
            return v != 0
        if not 0 <= count <= 8:
            raise encode_error(f"column {column.name!r}: BIT({width}) does not fit 8 bytes")
        return base64.b64encode(v.to_bytes(8, "little")[:count]).decode("ascii")

    return wire


def _string_wire(column: ColumnInfo) -> Wire:
    binary = column_is_binary(column)

    def wire(value: Value, from_default: bool) -> Any:
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogateescape")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise encode_error(f"column {column.name!r}: expected bytes, got {type(value).__name__}")
        data = bytes(value)
        if binary:
            return base64.b64encode(data).decode("ascii")
        return data.decode("utf-8", "surrogateescape")

    return wire


def _enum_wire(column: ColumnInfo) -> Wire:
    elems = column.elems or ()

    def wire(value: Value, from_default: bool) -> Any:
        v = _expect_int(column, value)
        return elems[v - 1] if 1 <= v <= len(elems) else ""  # invalid index (non-strict insert) → ""

    return wire


def _set_wire(column: ColumnInfo) -> Wire:
    elems = column.elems or ()

    def wire(value: Value, from_default: bool) -> Any:
        v = _expect_int(column, value)
        if v <= 0 or v >> len(elems):
            return ""
        return ",".join(e for i, e in enumerate(elems) if v >> i & 1)

    return wire


def _text_wire(column: ColumnInfo) -> Wire:
    def wire(value: Value, from_default: bool) -> Any:
        if isinstance(value, bytes):
            return value.decode("utf-8", "surrogateescape")
        return _expect_str(column, value)

    return wire


def _other_wire(column: ColumnInfo) -> Wire:
    def wire(value: Value, from_default: bool) -> Any:
        if isinstance(value, bytes):
            return value.decode("utf-8", "surrogateescape")
        if isinstance(value, float):
            return value
        if isinstance(value, (int, str)):
            return value
        raise encode_error(f"column {column.name!r}: cannot write {type(value).__name__}")

    return wire


def wire_function(column: ColumnInfo, zone: ZoneInfo) -> Wire:
    """The wire function of one column (type dispatch done once per column)."""
    code = column.type_code
    if code in INT_TYPES:
        return _int_wire(column)
    if code == 4:
        return _float_wire(column, True)
    if code == 5:
        return _float_wire(column, False)
    if code == 246:
        return _decimal_wire(column)
    if code in (10, 14):
        return _date_wire(column)
    if code == 12:
        return _datetime_wire(column)
    if code == 7:
        return _timestamp_wire(column, zone)
    if code == 11:
        return _time_wire(column)
    if code == 13:
        return lambda value, from_default: _expect_int(column, value)
    if code == 16:
        return _bit_wire(column)
    if code in STRING_TYPES:
        return _string_wire(column)
    if code == 247:
        return _enum_wire(column)
    if code == 248:
        return _set_wire(column)
    if code in (245, 225):
        return _text_wire(column)
    return _other_wire(column)


# --------------------------------------------------------------------------- schema elements
def _default_text(column: ColumnInfo) -> str | None:
    """The schema ``"default"`` JSON of a column, or None to omit it (writeDebeziumFieldSchema)."""
    default = column.default
    if default is None:
        return None
    code = column.type_code
    not_null = not column.nullable
    if code == 16:
        bits = _parse_bit_default(default, column.flen)
        if bits is None:
            return None
        if column.flen == 1:
            return "true" if bits else "false"
        count = bit_byte_count(column.flen)
        if not 0 <= count <= 8:
            return None
        return '"' + base64.b64encode(bits.to_bytes(8, "little")[:count]).decode("ascii") + '"'
    if code in STRING_TYPES or code in (247, 248, 245, 225):
        return quote_text(default)
    if code in (10, 14):
        date = parse_go_date(default)
        if date is None:
            return "0" if not_null else None
        return str(days_from_civil(adjust_two_digit_year(date[0]), date[1], date[2]))
    if code == 12:
        if default == "CURRENT_TIMESTAMP":
            return "0"
        parsed = parse_datetime(default, column.decimal)
        if parsed is None:
            return "0"
        if not valid_date(parsed.year, parsed.month, parsed.day):
            return "0" if not_null else None
        micros = wall_epoch_us(parsed._replace(year=adjust_two_digit_year(parsed.year)))
        return str(micros // 1000 if column.decimal <= 3 else micros)
    if code == 7:
        if default == "CURRENT_TIMESTAMP":
            return quote_text(_ZERO_ZONED) if not_null else None
        fsp = max(column.decimal, 0)
        parsed = parse_datetime(default, fsp)
        if parsed is None:
            return "0"
        if parsed.key() < MIN_TIMESTAMP:
            return quote_text(_ZERO_ZONED) if not_null else None
        if not valid_date(parsed.year, parsed.month, parsed.day):
            return "0"
        # The schema default is read as UTC (GoTime(time.UTC)), not in the changefeed zone.
        return quote_text(format_wall(parsed, fsp, "T") + "Z")
    if code == 11:
        duration = parse_duration_us(default, column.decimal)
        return None if duration is None else str(duration)
    if code in INT_TYPES or code in (4, 5, 246, 13):
        parsed_float = go_parse_float(default)
        if parsed_float is None or math.isnan(parsed_float) or math.isinf(parsed_float):
            return None
        if code == 13:
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
    if code == 16:
        if column.flen == 1:
            return "boolean", []
        return "bytes", [("name", '"io.debezium.data.Bits"'), ("version", "1"),
                         ("parameters", '{"length":' + quote_text(str(column.flen)) + "}")]
    if code in STRING_TYPES:
        return "string", []
    if code == 247:
        allowed = ",".join(escape_enum_option(e) for e in column.elems or ())
        return "string", [("name", '"io.debezium.data.Enum"'), ("version", "1"),
                          ("parameters", '{"allowed":' + quote_text(allowed) + "}")]
    if code == 248:
        allowed = ",".join(column.elems or ())
        return "string", [("name", '"io.debezium.data.EnumSet"'), ("version", "1"),
                          ("parameters", '{"allowed":' + quote_text(allowed) + "}")]
    if code in (10, 14):
        return "int32", [("name", '"io.debezium.time.Date"'), ("version", "1")]
    if code == 12:
        name = "io.debezium.time.Timestamp" if column.decimal <= 3 else "io.debezium.time.MicroTimestamp"
        return "int64", [("name", f'"{name}"'), ("version", "1")]
    if code == 7:
        return "string", [("name", '"io.debezium.time.ZonedTimestamp"'), ("version", "1")]
    if code == 11:
        return "int64", [("name", '"io.debezium.time.MicroTime"'), ("version", "1")]
    if code == 245:
        return "string", [("name", '"io.debezium.data.Json"'), ("version", "1")]
    if code == 1:
        return "int16", []
    if code == 2:
        return ("int32" if unsigned else "int16"), []
    if code == 9:
        return "int32", []
    if code == 3:
        return ("int64" if unsigned else "int32"), []
    if code == 8:
        return "int64", []
    if code == 4:
        return ("double" if column.decimal != -1 else "float"), []
    if code in (5, 246):
        return "double", []
    if code == 13:
        return "int32", [("name", '"io.debezium.time.Year"'), ("version", "1")]
    if code == 225:
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


def wall_text(t: WallTime, digits: int) -> str:
    """A wall time as the model prints it (``YYYY-MM-DD HH:MM:SS[.f]``)."""
    return format_wall(t, digits)
