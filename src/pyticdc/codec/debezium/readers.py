"""Reading Debezium JSON back: the column a schema field (or, without one, the JSON values) describes,
and the converter of its values to the model.

The ``schema`` part of a message, when present, says each column's Connect type and semantic name
(and, with TiCDC's ``enable-tidb-extension``, its ``tidb_type``); values map back to the model as
follows (ticdc-reference.md §5.2, read backwards):

=====================================  ==========================================================
wire                                   model value
=====================================  ==========================================================
int8/16/32/64                          int (TINYINT/SMALLINT/INT/BIGINT; ``tidb_type`` unsigned
                                       BIGINT −1 / negatives are read back as uint64)
float / double                         float (float32-rounded for ``float``); DECIMAL (by
                                       ``tidb_type``) as the float's shortest text
boolean                                BIT(1) 1/0
io.debezium.time.Date, Connect Date    ``YYYY-MM-DD`` from days
io.debezium.time.(Micro|Nano)Timestamp ``YYYY-MM-DD HH:MM:SS.fff`` (ms, fsp 3) / ``.ffffff`` (µs/ns,
Connect Timestamp                      fsp 6; ns truncated to µs)
io.debezium.time.ZonedTimestamp        TIMESTAMP in the decoder's ``time-zone``, same fraction digits
io.debezium.time.(Micro|Nano)Time,     ``[-]HH:MM:SS.ffffff`` (ms, µs or ns since midnight)
Time, Connect Time
io.debezium.time.Year                  int
io.debezium.data.Enum / EnumSet        1-based index / bitmask through ``allowed``
io.debezium.data.Bits                  int from the little-endian bytes
io.debezium.data.Json                  the JSON text
string                                 bytes (UTF-8); base64-decoded only for a binary ``tidb_type``
bytes                                  base64-decoded bytes
Connect Decimal                        DECIMAL text with the schema's ``scale`` digits, from base64
                                       big-endian bytes or (``decimal.format=numeric``) a number
VariableScaleDecimal                   DECIMAL text with the struct's scale
io.debezium.data.geometry.*            the WKB bytes
=====================================  ==========================================================

Without a schema (``schemas.enable=false``, ``debezium-disable-schema``) only the JSON types are
known and every image of the row must agree: bool → BIT(1), integer → BIGINT (UNSIGNED above
2^63-1, DECIMAL text beyond 64 bits), number → DOUBLE, string → VARCHAR bytes, a ``{wkb, srid}``
struct → GEOMETRY, ``{scale, value}`` → DECIMAL, other objects/arrays or disagreeing images → JSON
text; a column that is null everywhere is of type NULL. What is lost: dates/times stay the numbers
or strings of the wire (days, µs, ``…Z`` text), Connect Decimal and binary columns stay their
base64 text, ENUM/SET their names, and all widths, signedness and nullability.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

from pyticdc.codec.debezium.message import fail
from pyticdc.codec.debezium.values import (
    civil_from_days,
    days_from_civil,
    decimal_from_unscaled,
    decimal_text,
    format_civil,
    format_duration_us,
    format_wall,
    is_utc,
    pad_scale,
    split_allowed,
    to_bytes,
    utc_to_local,
    valid_date,
    wall_from_epoch_us,
)
from pyticdc.codec.jsontext import float32_round
from pyticdc.model import ColumnFlag, ColumnInfo, TypeCode, Value
from pyticdc.mysql.types import INTEGER_TYPES, STRING_TYPES, parse_type_name

__all__ = [
    "DATETIME_MS",
    "DATETIME_US",
    "INLINE",
    "INLINE_NAMES",
    "NO_COLUMNS",
    "SIGNED_INT",
    "UNSIGNED_INT",
    "Columns",
    "Converter",
    "column_from_field",
    "format_epoch_us",
    "infer_column",
    "is_int",
    "read_base64",
    "read_int",
    "read_number",
    "read_str",
]

T = TypeCode

#: Converts one JSON value (at a JSON path) to the model; raises DecodeError.


#: Converts one JSON value (at a JSON path) to the model; raises DecodeError.
Converter = Callable[[Any, str], Value]
_U64: Final = 1 << 64


# --------------------------------------------------------------------------- typed value readers
def is_int(value: Any) -> bool:
    """Whether ``value`` is a JSON integer (bool excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def read_int(value: Any, at: str) -> int:
    """``value`` as an integer; DecodeError otherwise."""
    if not is_int(value):
        raise fail(f"expected an integer, got {type(value).__name__}", at)
    return int(value)


def read_number(value: Any, at: str) -> float:
    """``value`` (integer or float) as a float; DecodeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"expected a number, got {type(value).__name__}", at)
    try:
        return float(value)
    except OverflowError:
        raise fail("number out of range", at) from None


def read_str(value: Any, at: str) -> str:
    """``value`` as a string; DecodeError otherwise."""
    if not isinstance(value, str):
        raise fail(f"expected a string, got {type(value).__name__}", at)
    return value


def read_base64(value: Any, at: str) -> bytes:
    """The bytes of a base64 string; DecodeError otherwise."""
    text = read_str(value, at)
    try:
        if _STRICT_BASE64:
            # What b64decode(validate=True) runs on 3.11+, without its argument massaging; a
            # non-ASCII str is a ValueError here as its encode("ascii") is below.
            return _a2b_base64(text, strict_mode=True)
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise fail("invalid base64", at) from None


_STRICT_BASE64: Final = sys.version_info >= (3, 11)
#: ``strict_mode`` is 3.11's (the type stubs follow the oldest Python this package runs on).
_a2b_base64: Final[Callable[..., bytes]] = binascii.a2b_base64


_EPOCH: Final = datetime(1970, 1, 1)
#: 1970-01-01 + this many µs is 0001-01-01 00:00:00, the first instant Python's datetime holds.
_FIRST_DATETIME_US: Final = -62135596800 * 1_000_000


def format_epoch_us(micros: int, digits: int, at: str) -> str:
    """``YYYY-MM-DD HH:MM:SS[.f]`` of epoch microseconds with ``digits`` fraction digits (years 0-9999)."""
    if _FIRST_DATETIME_US <= micros < 253402300800 * 1_000_000:
        # Years 1-9999: datetime's C code does the calendar and the text (4-digit padded years).
        text = (_EPOCH + timedelta(microseconds=micros)).isoformat(" ", "microseconds")
        return text[:19] if digits <= 0 else text[:20 + digits]
    if not -(10**19) < micros < 10**19:
        raise fail("timestamp out of range", at)
    wall = wall_from_epoch_us(micros)
    if not 0 <= wall.year <= 9999:
        raise fail("timestamp out of range", at)
    return format_wall(wall, digits)


def _int_converter(unsigned: bool) -> Converter:
    def convert(value: Any, at: str) -> Value:
        v = value if type(value) is int else read_int(value, at)
        # TiCDC writes BIGINT UNSIGNED as int64 (max → -1, ≥2^63 wrapped); tidb_type undoes it.
        if unsigned and v < 0:
            v += _U64
        if not -(1 << 63) <= v < _U64:
            raise fail("integer out of range", at)
        return v

    return convert


#: The integer converters (shared: the fast image readers know them by identity).
SIGNED_INT: Final = _int_converter(False)
UNSIGNED_INT: Final = _int_converter(True)


def _float32(value: Any, at: str) -> Value:
    return float32_round(value if type(value) is float else read_number(value, at))


def _float64(value: Any, at: str) -> Value:
    return value if type(value) is float else read_number(value, at)


def _decimal_from_float(value: Any, at: str) -> Value:
    return decimal_text(read_number(value, at))


def _date(value: Any, at: str) -> Value:
    days = value if type(value) is int else read_int(value, at)
    if not -(10**7) < days < 3_000_000:
        raise fail("date out of range", at)
    year = civil_from_days(days)[0]
    if not 0 <= year <= 9999:
        raise fail("date out of range", at)
    return format_civil(days)


def _scaled_datetime(unit: int, digits: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        return format_epoch_us((value if type(value) is int else read_int(value, at)) * unit, digits, at)

    return convert


#: The two scaled date-time converters (shared: the fast image readers know them by identity).
DATETIME_MS: Final = _scaled_datetime(1000, 3)
DATETIME_US: Final = _scaled_datetime(1, 6)


def _time(unit: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        micros = read_int(value, at) * unit // 1000
        if abs(micros) >= 10**15:
            raise fail("time out of range", at)
        return format_duration_us(micros, 6)

    return convert


_ZONED: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


#: A ZonedTimestamp as TiCDC writes it (UTC, ``Z``, at most microseconds, ASCII digits).
_ZONED_UTC: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z", re.ASCII)


def _timestamp_converter(zone: ZoneInfo) -> Converter:
    utc = is_utc(zone)

    def convert(value: Any, at: str) -> Value:
        if utc and type(value) is str and _ZONED_UTC.fullmatch(value) is not None:
            year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
            if valid_date(year, month, day) and value[11:13] <= "23" and value[14:16] <= "59" and value[17:19] <= "59":
                # UTC to UTC keeps the wall time, and format_wall prints these fields as they came.
                return value[:10] + " " + value[11:-1]
        m = _ZONED.fullmatch(read_str(value, at))
        if m is None:
            raise fail("not a ZonedTimestamp", at)
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hour, minute, second = int(m.group(4)), int(m.group(5)), int(m.group(6))
        if not valid_date(year, month, day) or hour > 23 or minute > 59 or second > 59:
            raise fail("not a valid ZonedTimestamp", at)
        fraction = (m.group(7) or "")[:6]
        offset = 0 if m.group(8) == "Z" else (1 if m.group(8)[0] == "+" else -1) * (
            int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
        instant = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        local = utc_to_local(instant, zone)
        if local is None or not 0 <= local.year <= 9999:
            raise fail("timestamp out of range", at)
        local = local._replace(micro=int(fraction.ljust(6, "0")) if fraction else 0)
        return format_wall(local, len(fraction))

    return convert


def _bits(value: Any, at: str) -> Value:
    data = read_base64(value, at)
    if len(data) > 8:
        raise fail("BIT value wider than 64 bits", at)
    return int.from_bytes(data, "little")


def _bool_bit(value: Any, at: str) -> Value:
    if not isinstance(value, bool):
        raise fail(f"expected a boolean, got {type(value).__name__}", at)
    return 1 if value else 0


def _enum_converter(elems: tuple[str, ...]) -> Converter:
    index: dict[str, int] = {}
    for i, e in enumerate(elems):
        index.setdefault(e, i + 1)

    def convert(value: Any, at: str) -> Value:
        # "" (or an unknown name) is the invalid index 0
        return index.get(value if type(value) is str else read_str(value, at), 0)

    return convert


def _set_converter(elems: tuple[str, ...]) -> Converter:
    index: dict[str, int] = {}
    for i, e in enumerate(elems):
        index.setdefault(e, i)

    def convert(value: Any, at: str) -> Value:
        text = value if type(value) is str else read_str(value, at)
        mask = 0
        for name in text.split(",") if text else ():
            position = index.get(name)
            if position is None:
                raise fail(f"SET member {name!r} is not allowed", at)
            mask |= 1 << position
        return mask

    return convert


def _text(value: Any, at: str) -> Value:
    if type(value) is str:
        try:
            return value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            pass
    return to_bytes(read_str(value, at))


def _json_text(value: Any, at: str) -> Value:
    return read_str(value, at)


#: The common case of some converters as an expression of ``v`` (a non-null JSON value) that a
#: generated image reader uses instead of the call; ``None`` from it sends ``v`` to the converter.
INLINE: Final[dict[Converter, str]] = {
    SIGNED_INT: "v if type(v) is int and -9223372036854775808 <= v <= 18446744073709551615 else None",
    UNSIGNED_INT: "v if type(v) is int and 0 <= v <= 18446744073709551615 else None",
    _float64: "v if type(v) is float else None",
    _json_text: "v if type(v) is str else None",
    _text: "v.encode('utf-8', 'surrogateescape') if type(v) is str else None",
    # Years 1-9999 (format_epoch_us's and format_civil's first branch): datetime's C code, as there.
    DATETIME_MS: "(EPOCH + timedelta(microseconds=v * 1000)).isoformat(' ', 'microseconds')[:23] "
                 "if type(v) is int and -62135596800000 <= v < 253402300800000 else None",
    DATETIME_US: "(EPOCH + timedelta(microseconds=v)).isoformat(' ', 'microseconds')[:26] "
                 "if type(v) is int and -62135596800000000 <= v < 253402300800000000 else None",
    _date: "from_ordinal(v + 719163).isoformat() if type(v) is int and -719162 <= v <= 2932896 else None",
    # A float beyond float32 range raises OverflowError (a decline); float32_round's inf is the reference's.
    _float32: "unpack_f32(pack_f32(v))[0] if type(v) is float else None",
}
#: The names the INLINE expressions use besides ``v``.
INLINE_NAMES: Final[dict[str, Any]] = {
    "a2b_base64": binascii.a2b_base64, "EPOCH": _EPOCH, "timedelta": timedelta,
    "from_ordinal": date.fromordinal, "pack_f32": struct.Struct("<f").pack, "unpack_f32": struct.Struct("<f").unpack,
}
if _STRICT_BASE64:  # read_base64's own call (binascii.Error, a ValueError, declines)
    INLINE[read_base64] = "a2b_base64(v, strict_mode=True) if type(v) is str else None"
    # BIT(n ≤ 64): at most 8 bytes, else the converter's error.
    INLINE[_bits] = ("(int.from_bytes(w, 'little') if len(w := a2b_base64(v, strict_mode=True)) <= 8 else None) "
                     "if type(v) is str else None")


def _connect_decimal(scale: int) -> Converter:
    """A Connect ``Decimal`` (scale from the schema) in any of the JSON shapes producers write."""

    def convert(value: Any, at: str) -> Value:
        # JsonConverter decimal.format=numeric (Flink CDC, Paimon): a JSON number under the same
        # bytes schema. Floats keep their shortest digits: what the producer printed, up to 17 digits.
        if isinstance(value, int) and not isinstance(value, bool):
            return pad_scale(str(value), scale)
        if isinstance(value, float):
            return pad_scale(decimal_text(read_number(value, at)), scale)
        # decimal.format=base64 (the default): the unscaled value as big-endian two's complement.
        return decimal_from_unscaled(int.from_bytes(read_base64(value, at), "big", signed=True), scale)

    return convert


def _variable_decimal(value: Any, at: str) -> Value:
    if not isinstance(value, dict):
        raise fail("expected a VariableScaleDecimal struct", at)
    scale = read_int(value.get("scale"), at + ".scale")
    if not 0 <= scale <= 100:
        raise fail("decimal scale out of range", at + ".scale")
    unscaled = int.from_bytes(read_base64(value.get("value"), at + ".value"), "big", signed=True)
    return decimal_from_unscaled(unscaled, scale)


_DECIMAL_TEXT: Final = re.compile(r"-?\d+(?:\.\d+)?")


def _string_decimal(scale: int) -> Converter:
    """A decimal written as text (decimal.handling.mode=string under a Decimal-named schema)."""

    def convert(value: Any, at: str) -> Value:
        text = read_str(value, at)
        # BigDecimal.toPlainString: no exponent, no NaN/Infinity (which Decimal() would accept).
        if _DECIMAL_TEXT.fullmatch(text) is None:
            raise fail("not a decimal", at)
        return pad_scale(text, scale)

    return convert


def _geometry(value: Any, at: str) -> Value:
    if not isinstance(value, dict):
        raise fail("expected a geometry struct", at)
    return read_base64(value.get("wkb"), at + ".wkb")


def _json_any(value: Any, at: str) -> Value:
    """Generic (schemaless) reading of one JSON value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return to_bytes(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        raise fail("nested value too deep", at) from None


# --------------------------------------------------------------------------- columns
#: The typed columns of a row schema and each one's converter by name.
Columns = tuple[tuple[ColumnInfo, ...], dict[str, Converter]]
#: No typed columns: every column is read from its JSON values alone.
NO_COLUMNS: Final[Columns] = ((), {})
_BINARY_FLAG: Final = int(ColumnFlag.BINARY)
_NULLABLE_FLAG: Final = int(ColumnFlag.NULLABLE)
_UNSIGNED_FLAG: Final = int(ColumnFlag.UNSIGNED)
_HANDLE_FLAG: Final = int(ColumnFlag.HANDLE_KEY)
_INTS_BY_CONNECT: Final = {"int8": TypeCode.TINY, "int16": TypeCode.SHORT, "int32": TypeCode.LONG,
                            "int64": TypeCode.LONGLONG}


@dataclass(frozen=True)
class _Kind:
    type_code: int
    convert: Converter
    binary: bool = True
    flen: int = -1
    decimal: int = -1
    elems: tuple[str, ...] | None = None
    unsigned: bool = False


def _kind_from_tidb_type(tidb: str, connect: str, semantic: str | None, params: Mapping[str, Any],
                         zone: ZoneInfo) -> _Kind | None:
    parsed = parse_type_name(tidb)
    if parsed is None:
        return None
    code, binary, unsigned, _ = parsed
    if code in INTEGER_TYPES:
        return _Kind(code, UNSIGNED_INT if unsigned else SIGNED_INT, unsigned=unsigned)
    if code == T.FLOAT:
        return _Kind(T.FLOAT, _float32, unsigned=unsigned)
    if code == T.DOUBLE:
        return _Kind(T.DOUBLE, _float64, unsigned=unsigned)
    if code == T.NEWDECIMAL:
        return _Kind(T.NEWDECIMAL, _decimal_from_float)
    if code in STRING_TYPES:
        if binary and code != T.VAR_STRING:
            return _Kind(code, read_base64)
        return _Kind(code, _text, binary=False)
    semantic_kind = _kind_from_connect(connect, semantic, params, zone)
    if semantic_kind is None:
        return None
    if code == T.BIT and semantic_kind.type_code == T.BIT:
        return semantic_kind
    if semantic_kind.type_code == code:
        return semantic_kind
    return _Kind(code, semantic_kind.convert, binary=semantic_kind.binary, flen=semantic_kind.flen,
                 decimal=semantic_kind.decimal, elems=semantic_kind.elems)


def _kind_from_connect(connect: str, semantic: str | None, params: Mapping[str, Any],
                       zone: ZoneInfo) -> _Kind | None:
    if semantic == "io.debezium.time.Date" or semantic == "org.apache.kafka.connect.data.Date":
        return _Kind(T.DATE, _date)
    if semantic == "io.debezium.time.Timestamp" or semantic == "org.apache.kafka.connect.data.Timestamp":
        return _Kind(T.DATETIME, DATETIME_MS, decimal=3)
    if semantic == "io.debezium.time.MicroTimestamp":
        return _Kind(T.DATETIME, DATETIME_US, decimal=6)
    if semantic == "io.debezium.time.NanoTimestamp":
        return _Kind(T.DATETIME, lambda v, at: format_epoch_us(read_int(v, at) // 1000, 6, at), decimal=6)
    if semantic == "io.debezium.time.ZonedTimestamp":
        return _Kind(T.TIMESTAMP, _timestamp_converter(zone))
    if semantic == "io.debezium.time.MicroTime":
        return _Kind(T.TIME, _time(1000), decimal=6)
    if semantic == "io.debezium.time.NanoTime":
        return _Kind(T.TIME, _time(1), decimal=6)
    if semantic in ("io.debezium.time.Time", "org.apache.kafka.connect.data.Time"):
        return _Kind(T.TIME, _time(1_000_000), decimal=6)
    if semantic == "io.debezium.time.Year":
        return _Kind(T.YEAR, lambda v, at: read_int(v, at), unsigned=True)
    if semantic == "io.debezium.data.Bits":
        length = params.get("length")
        width = int(length) if isinstance(length, str) and length.isdigit() and len(length) < 6 else -1
        return _Kind(T.BIT, _bits, flen=width, unsigned=True)
    if semantic == "io.debezium.data.Enum":
        elems = split_allowed(_param(params, "allowed"), escaped=True)
        return _Kind(T.ENUM, _enum_converter(elems), binary=False, elems=elems)
    if semantic == "io.debezium.data.EnumSet":
        elems = split_allowed(_param(params, "allowed"), escaped=False)
        return _Kind(T.SET, _set_converter(elems), binary=False, elems=elems)
    if semantic == "io.debezium.data.Json":
        return _Kind(T.JSON, _json_text)
    if semantic == "io.debezium.data.TiDBVectorFloat32":
        return _Kind(T.TIDB_VECTOR, _json_text)
    if semantic == "org.apache.kafka.connect.data.Decimal":
        scale_text = params.get("scale")
        scale = int(scale_text) if isinstance(scale_text, str) and scale_text.isdigit() and len(scale_text) < 4 \
            else 0
        precision_text = params.get("connect.decimal.precision")
        precision = int(precision_text) if isinstance(precision_text, str) and precision_text.isdigit() \
            and len(precision_text) < 4 else -1
        # MySQL/TiDB need D <= M; an impossible pair leaves the width unknown rather than wrong.
        flen = precision if precision >= max(scale, 1) else -1
        if connect == "string":
            return _Kind(T.NEWDECIMAL, _string_decimal(scale), flen=flen, decimal=scale)
        return _Kind(T.NEWDECIMAL, _connect_decimal(scale), flen=flen, decimal=scale)
    if semantic == "io.debezium.data.VariableScaleDecimal":
        return _Kind(T.NEWDECIMAL, _variable_decimal)
    if semantic is not None and semantic.startswith("io.debezium.data.geometry."):
        return _Kind(T.GEOMETRY, _geometry)
    if connect == "boolean":
        return _Kind(T.BIT, _bool_bit, flen=1, unsigned=True)
    if connect in _INTS_BY_CONNECT:
        return _Kind(_INTS_BY_CONNECT[connect], SIGNED_INT)
    if connect in ("float", "float32"):
        return _Kind(T.FLOAT, _float32)
    if connect in ("double", "float64"):
        return _Kind(T.DOUBLE, _float64)
    if connect == "string":
        return _Kind(T.VARCHAR, _text, binary=False)
    if connect == "bytes":
        return _Kind(T.VARCHAR, read_base64)
    return None


def _param(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    return value if isinstance(value, str) else ""


def _column(name: str, kind: _Kind, nullable: bool, key: bool, virtual: bool) -> ColumnInfo:
    flags = ((_BINARY_FLAG if kind.binary else 0) | (_NULLABLE_FLAG if nullable else 0)
             | (_UNSIGNED_FLAG if kind.unsigned else 0) | (_HANDLE_FLAG if key else 0))
    charset = "binary" if kind.binary else "utf8mb4"
    return ColumnInfo(
        name=name, type_code=int(kind.type_code), flags=flags, flen=kind.flen, decimal=kind.decimal,
        elems=kind.elems, unsigned=kind.unsigned, nullable=nullable, virtual=virtual,
        charset=charset, collation="binary" if kind.binary else "utf8mb4_bin",
    )


def column_from_field(field: Mapping[str, Any], zone: ZoneInfo, key: bool = False,
                      virtual: bool = False) -> tuple[ColumnInfo, Converter] | None:
    """The column a schema field describes and its value converter; None if it names no known type."""
    name = field.get("field")
    connect = field.get("type")
    if not isinstance(name, str) or not isinstance(connect, str):
        return None
    semantic = field.get("name")
    semantic = semantic if isinstance(semantic, str) else None
    params = field.get("parameters")
    params = params if isinstance(params, dict) else {}
    optional = field.get("optional")
    nullable = optional if isinstance(optional, bool) else True
    tidb = field.get("tidb_type")
    kind = None
    if isinstance(tidb, str):
        kind = _kind_from_tidb_type(tidb, connect, semantic, params, zone)
    if kind is None:
        kind = _kind_from_connect(connect, semantic, params, zone)
    if kind is None:
        return None
    return _column(name, kind, nullable, key, virtual), kind.convert


def _json_bit(value: Any, at: str) -> Value:
    return 1 if value else 0


def _json_int(value: Any, at: str) -> Value:
    return int(value)


def _json_big_int(value: Any, at: str) -> Value:
    return str(value)


def _json_float(value: Any, at: str) -> Value:
    return read_number(value, at)


def _json_string(value: Any, at: str) -> Value:
    return to_bytes(value)


def _json_nested(value: Any, at: str) -> Value:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        raise fail("nested value too deep", at) from None


_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1
_NULL_KIND: Final = _Kind(T.NULL, _json_any)
_BIT_KIND: Final = _Kind(T.BIT, _json_bit, flen=1, unsigned=True)
_INT_KIND: Final = _Kind(T.LONGLONG, _json_int)
_UINT_KIND: Final = _Kind(T.LONGLONG, _json_int, unsigned=True)  # BIGINT UNSIGNED as a plain number (Flink CDC)
_WIDE_INT_KIND: Final = _Kind(T.NEWDECIMAL, _json_big_int, decimal=0)  # wider than 64 bits: exact DECIMAL text
_FLOAT_KIND: Final = _Kind(T.DOUBLE, _json_float)
_STRING_KIND: Final = _Kind(T.VARCHAR, _json_string, binary=False)
_NESTED_KIND: Final = _Kind(T.JSON, _json_nested)
_KIND_BY_JSON_TYPE: Final[dict[type, _Kind]] = {bool: _BIT_KIND, int: _INT_KIND, float: _FLOAT_KIND,
                                                str: _STRING_KIND}


def _int_kind(values: list[Any]) -> _Kind:
    if all(_I64_MIN <= v <= _I64_MAX for v in values if v is not None):
        return _INT_KIND
    if all(0 <= v < _U64 for v in values if v is not None):
        return _UINT_KIND
    return _WIDE_INT_KIND


_GEOMETRY_KEYS: Final = frozenset({"x", "y", "wkb", "srid"})
_GEOMETRY_KIND: Final = _Kind(T.GEOMETRY, _geometry)
_VARIABLE_DECIMAL_KIND: Final = _Kind(T.NEWDECIMAL, _variable_decimal)


def _struct_kind(samples: list[Any]) -> _Kind:
    """An object value: Debezium writes JSON columns as strings, so objects are its structs."""
    structs = [v for v in samples if v is not None]
    if all("wkb" in v and _GEOMETRY_KEYS.issuperset(v) for v in structs):
        return _GEOMETRY_KIND  # io.debezium.data.geometry.{Geometry,Point}: {wkb, srid[, x, y]}
    if all(v.keys() == {"scale", "value"} for v in structs):
        return _VARIABLE_DECIMAL_KIND  # io.debezium.data.VariableScaleDecimal
    return _NESTED_KIND


def _mixed_kind(samples: list[Any]) -> _Kind:
    if all(type(v) is int or type(v) is float for v in samples if v is not None):
        return _FLOAT_KIND  # a float column printed as "1" in one image
    return _NESTED_KIND  # images disagree on the JSON type: keep each value as JSON text


def _inferred_kind(samples: list[Any]) -> _Kind:
    """The column type the JSON types of a column's non-null values admit (all images agree)."""
    # JSON parsers give exact built-in types, so type() identity is enough (and fast: this runs
    # per column per schemaless row).
    first: type | None = None
    for v in samples:
        if v is not None:
            t = type(v)
            if first is None:
                first = t
            elif t is not first:
                return _mixed_kind(samples)
    if first is None:
        return _NULL_KIND
    if first is int:
        return _int_kind(samples)
    if first is dict:
        return _struct_kind(samples)
    return _KIND_BY_JSON_TYPE.get(first, _NESTED_KIND)


def infer_column(name: str, samples: list[Any], key: bool) -> tuple[ColumnInfo, Converter]:
    """A column known only from its JSON values (no schema): the type all its values admit."""
    kind = _inferred_kind(samples)
    return _column(name, kind, True, key, False), kind.convert
