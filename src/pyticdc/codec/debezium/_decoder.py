"""Debezium JSON back into model events: TiCDC's output and every real Debezium-JSON producer.

Producers read (docs/protocols/debezium.md, "Tolerances"): TiCDC; the Debezium MySQL connector
0.10-2.x through Kafka Connect's JsonConverter with ``schemas.enable`` true (``{schema,
payload}``) or false (the bare envelope); Flink CDC (``mysql_binlog_source``); Flink's
debezium-json encoder (only ``before``/``after``/``op``). The ``schema`` part, when present, says
each column's Connect type and semantic name (and, with TiCDC's ``enable-tidb-extension``, its
``tidb_type``); the decoder maps values back to the model (ticdc-reference.md §5.2, read backwards):

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

import orjson

from pyticdc.codec.debezium._common import (
    PROTOCOL,
    civil_from_days,
    days_from_civil,
    format_civil,
    format_duration_us,
    format_wall,
    split_allowed,
    utc_to_local,
    valid_date,
    wall_from_epoch_us,
)
from pyticdc.codec.debezium._ddl import classify_ddl, parse_type_name, table_from_change
from pyticdc.codec.jsontext import float32_round, format_float_f
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, ColumnInfo, DDLEvent, Event, Op, RowChange, TableInfo, Value, Watermark, make_row

__all__ = [
    "Converter",
    "column_from_field",
    "decimal_from_unscaled",
    "decimal_text",
    "decode_document",
    "decode_payload",
    "decode_truncate",
    "decode_unwrapped",
    "explain_document",
    "infer_column",
    "is_unwrapped_row",
    "key_names",
    "load_json",
    "not_a_change_event",
    "pad_scale",
    "source_commit_ts",
    "split_envelope",
    "stale_schema",
    "to_bytes",
]

#: Converts one JSON value (at a JSON path) to the model; raises DecodeError.
Converter = Callable[[Any, str], Value]
_U64: Final = 1 << 64


def fail(reason: str, at: str | int | None) -> DecodeError:
    """A DecodeError of this protocol."""
    return DecodeError(PROTOCOL, reason, at)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(data: bytes, at: str) -> Any:
    """Parse JSON; raw non-UTF-8 bytes inside strings are kept (surrogateescape), big ints exact."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    # json-iterator passes raw bytes through and Go ints may exceed 64 bits: try the slow parser.
    try:
        text = data.decode("utf-8", "surrogateescape")
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON: {exc}", at) from None


def to_bytes(text: str) -> bytes:
    """A decoded JSON string back to the bytes it was written from."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def decimal_text(value: float) -> str:
    """A DECIMAL read from a float64: the shortest positional text (``-0`` as ``0``)."""
    text = format_float_f(value, 64)
    return "0" if text == "-0" else text


# --------------------------------------------------------------------------- typed value readers
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value: Any, at: str) -> int:
    if not _is_int(value):
        raise fail(f"expected an integer, got {type(value).__name__}", at)
    return int(value)


def _number(value: Any, at: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"expected a number, got {type(value).__name__}", at)
    try:
        return float(value)
    except OverflowError:
        raise fail("number out of range", at) from None


def _str(value: Any, at: str) -> str:
    if not isinstance(value, str):
        raise fail(f"expected a string, got {type(value).__name__}", at)
    return value


def _b64(value: Any, at: str) -> bytes:
    text = _str(value, at)
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise fail("invalid base64", at) from None


_EPOCH: Final = datetime(1970, 1, 1)
#: 1970-01-01 + this many µs is 0001-01-01 00:00:00, the first instant Python's datetime holds.
_FIRST_DATETIME_US: Final = -62135596800 * 1_000_000


def _wall_from_us(micros: int, digits: int, at: str) -> str:
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
        v = value if type(value) is int else _int(value, at)
        # TiCDC writes BIGINT UNSIGNED as int64 (max → -1, ≥2^63 wrapped); tidb_type undoes it.
        if unsigned and v < 0:
            v += _U64
        if not -(1 << 63) <= v < _U64:
            raise fail("integer out of range", at)
        return v

    return convert


def _float32(value: Any, at: str) -> Value:
    return float32_round(value if type(value) is float else _number(value, at))


def _float64(value: Any, at: str) -> Value:
    return value if type(value) is float else _number(value, at)


def _decimal_from_float(value: Any, at: str) -> Value:
    return decimal_text(_number(value, at))


def _date(value: Any, at: str) -> Value:
    days = _int(value, at)
    if not -(10**7) < days < 3_000_000:
        raise fail("date out of range", at)
    year = civil_from_days(days)[0]
    if not 0 <= year <= 9999:
        raise fail("date out of range", at)
    return format_civil(days)


def _scaled_datetime(unit: int, digits: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        return _wall_from_us(_int(value, at) * unit, digits, at)

    return convert


def _time(unit: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        micros = _int(value, at) * unit // 1000
        if abs(micros) >= 10**15:
            raise fail("time out of range", at)
        return format_duration_us(micros, 6)

    return convert


_ZONED: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


def _timestamp_converter(zone: ZoneInfo) -> Converter:
    def convert(value: Any, at: str) -> Value:
        m = _ZONED.fullmatch(_str(value, at))
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
    data = _b64(value, at)
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
        return index.get(_str(value, at), 0)  # "" (or an unknown name) is the invalid index 0

    return convert


def _set_converter(elems: tuple[str, ...]) -> Converter:
    index: dict[str, int] = {}
    for i, e in enumerate(elems):
        index.setdefault(e, i)

    def convert(value: Any, at: str) -> Value:
        text = _str(value, at)
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
    return to_bytes(_str(value, at))


def _json_text(value: Any, at: str) -> Value:
    return _str(value, at)


def decimal_from_unscaled(unscaled: int, scale: int) -> str:
    """DECIMAL text of ``unscaled × 10^-scale``, exact at any precision (no 28-digit context)."""
    sign = "-" if unscaled < 0 else ""
    digits = str(-unscaled if unscaled < 0 else unscaled)
    if scale <= 0:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def pad_scale(text: str, scale: int) -> str:
    """A positional decimal text with at least ``scale`` fraction digits (DECIMAL(M,D) prints D)."""
    if scale <= 0:
        return text
    point = text.find(".")
    if point < 0:
        return f"{text}.{'0' * scale}"
    missing = scale - (len(text) - point - 1)
    return text + "0" * missing if missing > 0 else text


def _connect_decimal(scale: int) -> Converter:
    """A Connect ``Decimal`` (scale from the schema) in any of the JSON shapes producers write."""

    def convert(value: Any, at: str) -> Value:
        # JsonConverter decimal.format=numeric (Flink CDC, Paimon): a JSON number under the same
        # bytes schema. Floats keep their shortest digits: what the producer printed, up to 17 digits.
        if isinstance(value, int) and not isinstance(value, bool):
            return pad_scale(str(value), scale)
        if isinstance(value, float):
            return pad_scale(decimal_text(_number(value, at)), scale)
        # decimal.format=base64 (the default): the unscaled value as big-endian two's complement.
        return decimal_from_unscaled(int.from_bytes(_b64(value, at), "big", signed=True), scale)

    return convert


def _variable_decimal(value: Any, at: str) -> Value:
    if not isinstance(value, dict):
        raise fail("expected a VariableScaleDecimal struct", at)
    scale = _int(value.get("scale"), at + ".scale")
    if not 0 <= scale <= 100:
        raise fail("decimal scale out of range", at + ".scale")
    return decimal_from_unscaled(int.from_bytes(_b64(value.get("value"), at + ".value"), "big", signed=True), scale)


_DECIMAL_TEXT: Final = re.compile(r"-?\d+(?:\.\d+)?")


def _string_decimal(scale: int) -> Converter:
    """A decimal written as text (decimal.handling.mode=string under a Decimal-named schema)."""

    def convert(value: Any, at: str) -> Value:
        text = _str(value, at)
        # BigDecimal.toPlainString: no exponent, no NaN/Infinity (which Decimal() would accept).
        if _DECIMAL_TEXT.fullmatch(text) is None:
            raise fail("not a decimal", at)
        return pad_scale(text, scale)

    return convert


def _geometry(value: Any, at: str) -> Value:
    if not isinstance(value, dict):
        raise fail("expected a geometry struct", at)
    return _b64(value.get("wkb"), at + ".wkb")


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
_BINARY_FLAG: Final = int(ColumnFlag.BINARY)
_NULLABLE_FLAG: Final = int(ColumnFlag.NULLABLE)
_UNSIGNED_FLAG: Final = int(ColumnFlag.UNSIGNED)
_HANDLE_FLAG: Final = int(ColumnFlag.HANDLE_KEY)
_INTS_BY_CONNECT: Final = {"int8": 1, "int16": 2, "int32": 3, "int64": 8}


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
    if code in (1, 2, 3, 8, 9):
        return _Kind(code, _int_converter(unsigned), unsigned=unsigned)
    if code == 4:
        return _Kind(4, _float32, unsigned=unsigned)
    if code == 5:
        return _Kind(5, _float64, unsigned=unsigned)
    if code == 246:
        return _Kind(246, _decimal_from_float)
    if code in (15, 253, 254, 249, 250, 251, 252):
        if binary and code != 253:
            return _Kind(code, lambda v, at: _b64(v, at))
        return _Kind(code, _text, binary=False)
    semantic_kind = _kind_from_connect(connect, semantic, params, zone)
    if semantic_kind is None:
        return None
    if code == 16 and semantic_kind.type_code == 16:
        return semantic_kind
    if semantic_kind.type_code == code:
        return semantic_kind
    return _Kind(code, semantic_kind.convert, binary=semantic_kind.binary, flen=semantic_kind.flen,
                 decimal=semantic_kind.decimal, elems=semantic_kind.elems)


def _kind_from_connect(connect: str, semantic: str | None, params: Mapping[str, Any],
                       zone: ZoneInfo) -> _Kind | None:
    if semantic == "io.debezium.time.Date" or semantic == "org.apache.kafka.connect.data.Date":
        return _Kind(10, _date)
    if semantic == "io.debezium.time.Timestamp" or semantic == "org.apache.kafka.connect.data.Timestamp":
        return _Kind(12, _scaled_datetime(1000, 3), decimal=3)
    if semantic == "io.debezium.time.MicroTimestamp":
        return _Kind(12, _scaled_datetime(1, 6), decimal=6)
    if semantic == "io.debezium.time.NanoTimestamp":
        return _Kind(12, lambda v, at: _wall_from_us(_int(v, at) // 1000, 6, at), decimal=6)
    if semantic == "io.debezium.time.ZonedTimestamp":
        return _Kind(7, _timestamp_converter(zone))
    if semantic == "io.debezium.time.MicroTime":
        return _Kind(11, _time(1000), decimal=6)
    if semantic == "io.debezium.time.NanoTime":
        return _Kind(11, _time(1), decimal=6)
    if semantic in ("io.debezium.time.Time", "org.apache.kafka.connect.data.Time"):
        return _Kind(11, _time(1_000_000), decimal=6)
    if semantic == "io.debezium.time.Year":
        return _Kind(13, lambda v, at: _int(v, at), unsigned=True)
    if semantic == "io.debezium.data.Bits":
        length = params.get("length")
        width = int(length) if isinstance(length, str) and length.isdigit() and len(length) < 6 else -1
        return _Kind(16, _bits, flen=width, unsigned=True)
    if semantic == "io.debezium.data.Enum":
        elems = split_allowed(_param(params, "allowed"), escaped=True)
        return _Kind(247, _enum_converter(elems), binary=False, elems=elems)
    if semantic == "io.debezium.data.EnumSet":
        elems = split_allowed(_param(params, "allowed"), escaped=False)
        return _Kind(248, _set_converter(elems), binary=False, elems=elems)
    if semantic == "io.debezium.data.Json":
        return _Kind(245, _json_text)
    if semantic == "io.debezium.data.TiDBVectorFloat32":
        return _Kind(225, _json_text)
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
            return _Kind(246, _string_decimal(scale), flen=flen, decimal=scale)
        return _Kind(246, _connect_decimal(scale), flen=flen, decimal=scale)
    if semantic == "io.debezium.data.VariableScaleDecimal":
        return _Kind(246, _variable_decimal)
    if semantic is not None and semantic.startswith("io.debezium.data.geometry."):
        return _Kind(255, _geometry)
    if connect == "boolean":
        return _Kind(16, _bool_bit, flen=1, unsigned=True)
    if connect in _INTS_BY_CONNECT:
        return _Kind(_INTS_BY_CONNECT[connect], _int_converter(False))
    if connect in ("float", "float32"):
        return _Kind(4, _float32)
    if connect in ("double", "float64"):
        return _Kind(5, _float64)
    if connect == "string":
        return _Kind(15, _text, binary=False)
    if connect == "bytes":
        return _Kind(15, lambda v, at: _b64(v, at))
    return None


def _param(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    return value if isinstance(value, str) else ""


def _column(name: str, kind: _Kind, nullable: bool, key: bool, virtual: bool) -> ColumnInfo:
    flags = ((_BINARY_FLAG if kind.binary else 0) | (_NULLABLE_FLAG if nullable else 0)
             | (_UNSIGNED_FLAG if kind.unsigned else 0) | (_HANDLE_FLAG if key else 0))
    charset = "binary" if kind.binary else "utf8mb4"
    return ColumnInfo(
        name=name, type_code=kind.type_code, flags=flags, flen=kind.flen, decimal=kind.decimal,
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
    return _number(value, at)


def _json_string(value: Any, at: str) -> Value:
    return to_bytes(value)


def _json_nested(value: Any, at: str) -> Value:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        raise fail("nested value too deep", at) from None


_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1


_NULL_KIND: Final = _Kind(6, _json_any)
_BIT_KIND: Final = _Kind(16, _json_bit, flen=1, unsigned=True)
_INT_KIND: Final = _Kind(8, _json_int)
_UINT_KIND: Final = _Kind(8, _json_int, unsigned=True)  # BIGINT UNSIGNED as a plain number (Flink CDC)
_WIDE_INT_KIND: Final = _Kind(246, _json_big_int, decimal=0)  # wider than 64 bits: exact DECIMAL text
_FLOAT_KIND: Final = _Kind(5, _json_float)
_STRING_KIND: Final = _Kind(15, _json_string, binary=False)
_NESTED_KIND: Final = _Kind(245, _json_nested)
_KIND_BY_JSON_TYPE: Final[dict[type, _Kind]] = {bool: _BIT_KIND, int: _INT_KIND, float: _FLOAT_KIND,
                                                str: _STRING_KIND}


def _int_kind(values: list[Any]) -> _Kind:
    if all(_I64_MIN <= v <= _I64_MAX for v in values if v is not None):
        return _INT_KIND
    if all(0 <= v < _U64 for v in values if v is not None):
        return _UINT_KIND
    return _WIDE_INT_KIND


_GEOMETRY_KEYS: Final = frozenset({"x", "y", "wkb", "srid"})
_GEOMETRY_KIND: Final = _Kind(255, _geometry)
_VARIABLE_DECIMAL_KIND: Final = _Kind(246, _variable_decimal)


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


# --------------------------------------------------------------------------- documents
def _obj(value: Any, at: str, optional: bool = False) -> dict[str, Any] | None:
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise fail(f"expected an object, got {type(value).__name__}", at)
    return value


def _opt_str(value: Any, at: str) -> str:
    if value is None:
        return ""
    return _str(value, at)


def split_envelope(doc: Any, at: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """(payload or None for a tombstone, schema or None, JSON path of the payload) of a message."""
    if doc is None:
        return None, None, at  # the JSON text ``null``: a tombstone written as a document
    if not isinstance(doc, dict):
        raise fail(f"a Debezium message is a JSON object, got {type(doc).__name__}", at)
    # JsonConverter schemas.enable=true wraps the envelope as {schema, payload} (TiCDC: payload
    # first); schemas.enable=false writes the envelope itself, which never has a ``payload`` key.
    # Unknown keys beside the two are ignored; a bare row may have a column named "payload".
    if "payload" in doc and ("schema" in doc or len(doc) == 1) and "op" not in doc and "ddl" not in doc:
        payload = _obj(doc["payload"], f"{at}.payload", optional=True)
        schema = _obj(doc.get("schema"), f"{at}.schema", optional=True)
        return payload, schema, f"{at}.payload"
    return doc, None, at


def key_names(key_doc: Any) -> set[str]:
    """The column names of a parsed Kafka key (wrapped or not); empty if it is not an object."""
    if not isinstance(key_doc, dict):
        return set()
    payload = key_doc.get("payload") if "payload" in key_doc and set(key_doc) <= {"payload", "schema"} \
        else key_doc
    return set(payload) if isinstance(payload, dict) else set()


_MAX_PHYSICAL_MS: Final = 1 << 46
#: source timestamp fields, most precise first, with their units per millisecond.
_SOURCE_CLOCKS: Final = (("ts_ns", 1_000_000), ("ts_us", 1000), ("ts_ms", 1))


def source_commit_ts(source: Mapping[str, Any], at: str) -> int:
    """A TSO for a producer without ``commit_ts``: ``physical_ms << 18 | sub-ms µs``, 0 if unknown.

    The Debezium connector's ``source.ts_ms`` is the binlog event's commit time (0 in the snapshot
    rows of early versions); Debezium 2.6+ adds ``ts_us``/``ts_ns``. The most precise one present wins;
    its microseconds within the millisecond (0-999) fill the 18-bit logical part, so the order of
    changes within a millisecond is kept and the physical part is the commit time like TiDB's.
    """
    for name, per_ms in _SOURCE_CLOCKS:
        raw = source.get(name)
        if raw is None:
            continue
        value = _int(raw, f"{at}.{name}")
        ms, rest = divmod(value, per_ms)
        if not 0 <= ms < _MAX_PHYSICAL_MS:
            raise fail(f"{name} out of range", f"{at}.{name}")
        return (ms << 18) | (rest * 1000 // per_ms)
    return 0


def _commit_ts(source: Mapping[str, Any], at: str, required: bool) -> int:
    commit = source.get("commit_ts")
    if commit is not None:
        ts = _int(commit, f"{at}.commit_ts")
        if not 0 <= ts < _U64:
            raise fail("commit_ts out of range", f"{at}.commit_ts")
        return ts
    if required:
        raise fail("missing commit_ts", f"{at}.commit_ts")
    return source_commit_ts(source, at)


def _row_schema(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The column fields of the ``after`` (else ``before``) struct of an envelope schema."""
    if schema is None:
        return None
    fields = schema.get("fields")
    if not isinstance(fields, list):
        return None
    chosen: list[Any] | None = None
    for f in fields:
        if isinstance(f, dict) and f.get("field") in ("after", "before") and isinstance(f.get("fields"), list):
            if f.get("field") == "after" or chosen is None:
                chosen = f["fields"]
    if chosen is None:
        return None
    return [c for c in chosen if isinstance(c, dict)]


_Schema = tuple[tuple[ColumnInfo, ...], dict[str, Converter]]
#: Decoded schemas by a hashable digest of the fields (a topic repeats one schema per table version).
SchemaCache = dict[tuple[Any, ...], _Schema]
_NO_SCHEMA: Final[_Schema] = ((), {})


def _schema_columns(fields: list[dict[str, Any]], key_names: set[str], present: dict[str, None],
                    zone: ZoneInfo, cache: SchemaCache | None) -> _Schema:
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
                   zone: ZoneInfo) -> _Schema:
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


def stale_schema() -> _Schema:
    """No typed columns: the schema lists fewer columns than the payload carries, so it was not
    written for this payload and nothing in it can be trusted (the row is read schemaless).

    JsonConverter derives the JSON from the schema, so no real producer does this; Flink CDC's
    ``debezium-data-schema-include.json`` does (its schema predates 11 payload columns and types
    ``id`` as int32 while the payload has Decimal bytes; its test compares only the payload).
    """
    return _NO_SCHEMA


_ROW_OPS: Final = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
#: TableInfo per (schema digest, db, table): immutable, so shared by every decoder.
_TABLE_INFOS: dict[tuple[Any, str, str], TableInfo] = {}


def _decode_row(op_text: str, payload: dict[str, Any], schema: dict[str, Any] | None, at: str,
                key_names: set[str], zone: ZoneInfo, source: dict[str, Any],
                cache: SchemaCache | None = None, schema_key: bytes | None = None) -> RowChange:
    op = _ROW_OPS[op_text]
    before = payload.get("before")
    if before is not None and type(before) is not dict:
        _obj(before, f"{at}.before")  # raises, naming the path
    after = payload.get("after")
    if after is not None and type(after) is not dict:
        _obj(after, f"{at}.after")
    if op is not Op.DELETE and after is None:
        raise fail("missing after image", f"{at}.after")
    if op is Op.DELETE and before is None:
        raise fail("missing before image", f"{at}.before")
    images = [img for img in (after, before) if img is not None]
    present: dict[str, None] = {}
    for img in images:
        present.update(dict.fromkeys(img))
    typed: _Schema | None = None
    digest: tuple[Any, ...] | None = None
    if schema_key is not None and cache is not None:
        # The schema text names the schema: no need to look at its parsed fields on a hit.
        digest = (schema_key, tuple(sorted(key_names)), tuple(present))
        typed = cache.get(digest)
    if typed is None:
        fields = _row_schema(schema)
        typed = _schema_columns(fields, key_names, present, zone, cache if digest is None else None) \
            if fields is not None else _NO_SCHEMA
        if digest is not None and cache is not None:
            if len(cache) >= 256:
                cache.clear()
            cache[digest] = typed
    columns: tuple[ColumnInfo, ...] = typed[0]
    converters = typed[1]
    inferred = not converters.keys() >= present.keys()
    if inferred:
        converters = dict(converters)
        for name in present:
            if name not in converters:
                column, convert = infer_column(name, [img.get(name) for img in images], name in key_names)
                columns = (*columns, column)
                converters[name] = convert

    def image(img: dict[str, Any] | None, path: str) -> dict[str, Value] | None:
        if img is None:
            return None
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


_ID_PAIR: Final = re.compile(r'"(.*?)"\."(.*?)"(?:,"(.*?)"\."(.*?)")?', re.DOTALL)


def _decode_ddl(payload: dict[str, Any], at: str, source: dict[str, Any]) -> DDLEvent:
    query = _str(payload.get("ddl"), f"{at}.ddl")
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
        change = _obj(changes[0], f"{at}.tableChanges[0]")
        assert change is not None
        kind = change.get("type")
        change_type = kind if isinstance(kind, str) else None
        body = _obj(change.get("table"), f"{at}.tableChanges[0].table", optional=True)
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
    return DDLEvent(query=f"TRUNCATE TABLE {target}", ddl_type=11,
                    commit_ts=_commit_ts(source, f"{at}.source", False), schema=db, table=table)


#: Keys only a change-event envelope has: a document with none of them is a bare row.
_ENVELOPE_KEYS: Final = ("op", "before", "after", "source", "ddl", "tableChanges", "databaseName")
#: ExtractNewRecordState ``add.fields`` (default prefix ``__``) that say where a row comes from.
_UNWRAPPED_SOURCE: Final = {"__db": "db", "__table": "table", "__source_ts_ms": "ts_ms",
                            "__source_ts_us": "ts_us", "__source_ts_ns": "ts_ns"}


def not_a_change_event(payload: Mapping[str, Any], at: str) -> DecodeError:
    """The error for an object that is neither a Debezium event nor an unwrapped row."""
    return fail("neither a change event (op) nor a schema change (ddl)", at)


def is_unwrapped_row(payload: Mapping[str, Any]) -> bool:
    """True for a bare column map (ExtractNewRecordState output): no envelope key at all."""
    return bool(payload) and not any(k in payload for k in _ENVELOPE_KEYS)


def decode_unwrapped(payload: dict[str, Any], schema: dict[str, Any] | None, at: str, key_names: set[str],
                     zone: ZoneInfo, cache: SchemaCache | None) -> RowChange:
    """An unwrapped row (Debezium's ExtractNewRecordState SMT) as an upsert: INSERT, or DELETE if ``__deleted``.

    The SMT drops the envelope, so there is no pre-image and, unless ``add.fields`` put them back
    as ``__db``/``__table``/``__source_ts_ms``, no table and no commit time (then "" and 0). Fields
    whose names start with ``__`` are the SMT's metadata, not columns. ``__op`` ``d`` or
    ``__deleted`` true (``delete.handling.mode=rewrite``) make the row a DELETE of that image;
    anything else is an INSERT meaning "the row now is", as upsert consumers read these topics.
    """
    source: dict[str, Any] = {}
    columns: dict[str, Any] = {}
    for name, raw in payload.items():
        if name.startswith("__"):
            if name in _UNWRAPPED_SOURCE:
                source[_UNWRAPPED_SOURCE[name]] = raw
            continue
        columns[name] = raw
    deleted = payload.get("__deleted")
    if isinstance(deleted, str):
        deleted = deleted.lower() == "true"
    op = "d" if deleted is True or payload.get("__op") == "d" else "c"
    side = "before" if op == "d" else "after"
    fields = schema.get("fields") if schema is not None else None
    # The schema of an unwrapped row is the row struct itself: present it as an envelope's.
    envelope_schema = {"fields": [{"field": side, "fields": fields}]} if isinstance(fields, list) else None
    return _decode_row(op, {side: columns}, envelope_schema, at, key_names, zone, source, cache)


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
    source = _obj(payload.get("source"), f"{at}.source", optional=True)
    if source is None:
        source = {}  # Flink's debezium-json encoder writes only before/after/op
    if "op" in payload:
        op = _str(payload.get("op"), f"{at}.op")
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


def explain_document(doc: Any, key_doc: Any) -> dict[str, Any]:
    """A wire-level view of one Debezium message for people and tools."""
    payload, schema, _ = split_envelope(doc, "$")
    if payload is None:
        return {"protocol": PROTOCOL, "kind": "tombstone", "key": key_doc, "schema": schema}
    raw_source = payload.get("source")
    source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    op = payload.get("op")
    kind = "watermark" if op == "m" else "truncate" if op == "t" else (
        "row" if op is not None else ("ddl" if "ddl" in payload else
                                      "unwrapped-row" if is_unwrapped_row(payload) else "unknown"))
    view: dict[str, Any] = {
        "protocol": PROTOCOL,
        "kind": kind,
        "producer": source.get("connector"),
        "has_schema": schema is not None,
        "database": source.get("db"),
        "table": source.get("table"),
        "commit_ts": source.get("commit_ts"),
        "source_ts_ms": source.get("ts_ms"),
        "ts_ms": payload.get("ts_ms"),
        "key": key_doc,
    }
    if kind == "row":
        view["op"] = op
        fields = {f.get("field"): f for f in (_row_schema(schema) or [])}
        names: dict[Any, None] = {}
        for side in ("before", "after"):
            if isinstance(payload.get(side), dict):
                names.update(dict.fromkeys(payload[side]))
        names.update(dict.fromkeys(n for n in fields if n not in names))
        view["columns"] = [
            {"name": name, "schema": fields.get(name),
             "before": payload["before"].get(name) if isinstance(payload.get("before"), dict) else None,
             "after": payload["after"].get(name) if isinstance(payload.get("after"), dict) else None}
            for name in names
        ]
    elif kind == "ddl":
        view["ddl"] = payload.get("ddl")
        view["database_name"] = payload.get("databaseName")
        view["table_changes"] = payload.get("tableChanges")
    elif kind == "watermark":
        view["resolved_ts"] = source.get("commit_ts")
    view["payload"] = payload
    view["schema"] = schema
    return view
