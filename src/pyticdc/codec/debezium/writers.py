"""Writing Debezium JSON: the payload value of every TiDB type, as TiCDC writes it.

Implements ``writeDebeziumFieldValue`` of TiCDC's Debezium codec (ticdc-reference.md §5.2). A
column's value goes through a *wire* function that returns the JSON value as a Python object
(``F32`` marks a float printed with 32-bit precision); ``message.dump`` prints it the way
json-iterator does (§1.5).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from typing import Any, Final
from zoneinfo import ZoneInfo

from pyticdc.codec.debezium.message import F32, encode_error
from pyticdc.codec.debezium.values import (
    MIN_TIMESTAMP,
    US_PER_SECOND,
    ZERO_ZONED,
    WallTime,
    adjust_two_digit_year,
    bit_byte_count,
    clean_float,
    days_from_civil,
    format_wall,
    go_parse_float,
    is_utc,
    local_to_utc_seconds,
    parse_bit_default,
    parse_datetime,
    parse_duration_us,
    parse_go_date,
    valid_date,
    wall_epoch_us,
    wall_from_epoch_us,
)
from pyticdc.model import ColumnInfo, TypeCode, Value
from pyticdc.mysql.types import FLOAT_TYPES, INTEGER_OR_YEAR_TYPES, INTEGER_TYPES, STRING_TYPES

__all__ = [
    "Wire",
    "canonical_wall",
    "datetime_wire_us",
    "default_to_model",
    "int_range",
    "timestamp_wire_text",
    "wire_function",
]

T = TypeCode


#: A column's wire function: (model value, came from the column default) -> JSON value.
Wire = Callable[[Value, bool], Any]
_INT_BITS: Final[dict[int, int]] = {T.TINY: 8, T.SHORT: 16, T.INT24: 24, T.LONG: 32, T.LONGLONG: 64}
_U64: Final = 1 << 64


def int_range(type_code: int, unsigned: bool) -> tuple[int, int]:
    """TiDB ``GetMinValue`` / ``GetMaxValue`` of an integer type."""
    bits = _INT_BITS[type_code]
    if unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def default_to_model(column: ColumnInfo, text: str) -> Value:
    """A column default (TiDB's stored text) as the value TiCDC substitutes for NULL (§5.2 NULL row).

    Raises EncodeError where TiCDC's encoder fails on the default.
    """
    code = column.type_code
    if code in INTEGER_OR_YEAR_TYPES:
        try:
            return int(text, 10)
        except ValueError:
            raise encode_error(f"column {column.name!r}: default {text!r} is not an integer") from None
    if code in FLOAT_TYPES:
        parsed = go_parse_float(text)
        if parsed is None:
            raise encode_error(f"column {column.name!r}: default {text!r} is not a number")
        return parsed
    if code == T.BIT:
        bits = parse_bit_default(text, column.flen)
        if bits is None:
            raise encode_error(f"column {column.name!r}: BIT default {text!r} is not valid")
        return bits
    if code == T.ENUM:
        elems = column.elems or ()
        return elems.index(text) + 1 if text in elems else 0
    if code == T.SET:
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
    longlong = column.type_code == T.LONGLONG

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


#: ``YYYY-MM-DD HH:MM:SS[.f…]`` in ASCII digits, the form TiDB prints a DATETIME or TIMESTAMP in.
_CANONICAL: Final = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?", re.ASCII)


def canonical_wall(text: str, fsp: int) -> WallTime | None:
    """The wall time of ``text`` if it is exactly what TiDB prints for a value of ``fsp`` fraction
    digits (``YYYY-MM-DD HH:MM:SS[.f…]``, ASCII digits, a valid date, a year from 100 on); else None.

    ``parse_datetime(text, fsp)`` gives the same fields for such a text, without rounding (the
    fraction has exactly ``fsp`` digits) or a two-digit year to adjust: the writers' fast path.
    """
    if len(text) != (19 if fsp <= 0 else 20 + fsp) or _CANONICAL.fullmatch(text) is None:
        return None
    year, month, day = int(text[:4]), int(text[5:7]), int(text[8:10])
    hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
    if year < 100 or hour > 23 or minute > 59 or second > 59 or not valid_date(year, month, day):
        return None
    return WallTime(year, month, day, hour, minute, second, int(text[20:].ljust(6, "0")) if fsp > 0 else 0)


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
    fsp = column.decimal

    def wire(value: Value, from_default: bool) -> Any:
        if type(value) is str:
            wall = canonical_wall(value, fsp)
            if wall is not None:  # the text TiDB prints: no rounding, no two-digit year, a valid date
                exact = wall_epoch_us(wall)
                return exact // 1000 if millis else exact
        text = _expect_str(column, value)
        if text == "CURRENT_TIMESTAMP" or (from_default and text.upper().startswith("CURRENT_TIMESTAMP")):
            return 0
        micros = datetime_wire_us(column, text)
        if micros is None:
            return 0 if not_null else None
        return micros // 1000 if millis else micros

    return wire


def timestamp_wire_text(column: ColumnInfo, text: str, zone: ZoneInfo, from_default: bool) -> str | None:
    """TIMESTAMP → ``ZonedTimestamp`` text (UTC, ``Z``) as TiCDC renders it; None for a JSON null."""
    if text == "CURRENT_TIMESTAMP" or (from_default and text.upper().startswith("CURRENT_TIMESTAMP")):
        return None if column.nullable else ZERO_ZONED
    fsp = max(column.decimal, 0)
    parsed = parse_datetime(text, fsp)
    if parsed is None:
        raise encode_error(f"column {column.name!r}: {text!r} is not a TIMESTAMP")
    if parsed.key() < MIN_TIMESTAMP:
        # Below TiDB's MinTimestamp: a real value becomes the epoch, a substituted default null.
        return None if from_default else ZERO_ZONED
    if not valid_date(parsed.year, parsed.month, parsed.day):
        raise encode_error(f"column {column.name!r}: {text!r} is not a valid date")
    instant = local_to_utc_seconds(parsed, zone)
    if instant is None:
        raise encode_error(f"column {column.name!r}: {text!r} does not exist in time zone {zone.key}")
    utc = wall_from_epoch_us(instant * US_PER_SECOND + parsed.micro)
    return format_wall(utc, fsp, "T") + "Z"


def _timestamp_wire(column: ColumnInfo, zone: ZoneInfo) -> Wire:
    fsp = max(column.decimal, 0)
    utc = is_utc(zone)

    def wire(value: Value, from_default: bool) -> Any:
        if utc and type(value) is str:
            wall = canonical_wall(value, fsp)
            if wall is not None and wall.year >= 1971:  # past MinTimestamp, UTC: the same wall time
                return value[:10] + "T" + value[11:] + "Z"
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
    binary = column.is_binary

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
    if code in INTEGER_TYPES:
        return _int_wire(column)
    if code == T.FLOAT:
        return _float_wire(column, True)
    if code == T.DOUBLE:
        return _float_wire(column, False)
    if code == T.NEWDECIMAL:
        return _decimal_wire(column)
    if code in (T.DATE, T.NEWDATE):
        return _date_wire(column)
    if code == T.DATETIME:
        return _datetime_wire(column)
    if code == T.TIMESTAMP:
        return _timestamp_wire(column, zone)
    if code == T.TIME:
        return _time_wire(column)
    if code == T.YEAR:
        return lambda value, from_default: _expect_int(column, value)
    if code == T.BIT:
        return _bit_wire(column)
    if code in STRING_TYPES:
        return _string_wire(column)
    if code == T.ENUM:
        return _enum_wire(column)
    if code == T.SET:
        return _set_wire(column)
    if code in (T.JSON, T.TIDB_VECTOR):
        return _text_wire(column)
    return _other_wire(column)
