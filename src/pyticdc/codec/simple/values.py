"""Simple-protocol column values: model value → wire value → model value, per TiDB type.

Encoding follows ``message.go:encodeValue`` (JSON) and ``encodeValue4Avro`` (Avro), reference
§6.1/§6.2; decoding follows ``message.go:decodeColumn``. The kind of a column decides both;
``ColumnPlan`` holds what encoder and decoder precompute per column of a table.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Final

from pyticdc.codec.jsontext import (
    float32_round,
    format_float32,
    format_float_f,
    go_json_quote,
    go_json_quote_bytes,
    go_string,
)
from pyticdc.codec.simple.avro import VALUE_BRANCH, long_bytes, write_long, write_str
from pyticdc.codec.simple.message import INT64_MAX, MASK64, PROTOCOL
from pyticdc.errors import DecodeError, EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, TableInfo, TypeCode, Value
from pyticdc.mysql import ENUM_SET_TYPES, INTEGER_OR_YEAR_TYPES, STRING_TYPES, UINT64_TYPES

__all__ = [
    "B_BYTES",
    "B_DOUBLE",
    "B_FLOAT",
    "B_LONG",
    "B_NULL",
    "B_STRING",
    "B_TIMESTAMP",
    "B_UBIGINT",
    "KIND_BYTES",
    "KIND_DOUBLE",
    "KIND_FLOAT",
    "KIND_INT",
    "KIND_TEXT",
    "KIND_TIMESTAMP",
    "KIND_UINT",
    "ColumnPlan",
    "avro_value",
    "column_kind",
    "format_double",
    "from_wire",
    "int_bounds",
    "is_binary_column",
    "is_unsigned_bigint",
    "json_value",
    "normalize",
    "parse_int",
    "project_value",
    "table_plan",
    "unresolved_json_value",
]

#: Value kinds: how a column's value is rendered and parsed (reference §1.1, §6.1).
KIND_INT: Final = 0  # TINYINT..BIGINT, YEAR: int64 / uint64, JSON decimal string, Avro long
KIND_UINT: Final = 1  # BIT, ENUM, SET: uint64, ParseUint on decode
KIND_FLOAT: Final = 2  # FLOAT: float32
KIND_DOUBLE: Final = 3  # DOUBLE: float64
KIND_TIMESTAMP: Final = 4  # TIMESTAMP: {"location","value"} object / Avro Timestamp record
KIND_TEXT: Final = 5  # DECIMAL, DATE/DATETIME/TIME, JSON, VECTOR, NULL: the TiDB string
KIND_BYTES: Final = 6  # CHAR..BLOB, GEOMETRY: []byte (base64 / Avro bytes when binary charset)

_BYTES_TYPES: Final = STRING_TYPES | {TypeCode.GEOMETRY}

_MASK64: Final = MASK64
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = INT64_MAX

_INT_RE: Final = re.compile(r"[+-]?[0-9]+")
_UINT_RE: Final = re.compile(r"[0-9]+")
# strconv.ParseFloat syntax without hex floats and underscores (TiCDC never prints those).
_FLOAT_RE: Final = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])"
)
_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")
# Map-value union branches as written (zigzag of the index in the schema file's union).
B_NULL, B_LONG, B_FLOAT, B_DOUBLE, B_STRING, B_BYTES, B_TIMESTAMP, B_UBIGINT = (
    VALUE_BRANCH[name] << 1
    for name in ("null", "long", "float", "double", "string", "bytes", "Timestamp", "UnsignedBigint")
)


def column_kind(column: ColumnInfo) -> int:
    """The value kind of a column (one of the ``KIND_*`` constants)."""
    code = column.type_code
    if code in INTEGER_OR_YEAR_TYPES:
        return KIND_INT
    if code in UINT64_TYPES:
        return KIND_UINT
    if code == TypeCode.FLOAT:
        return KIND_FLOAT
    if code == TypeCode.DOUBLE:
        return KIND_DOUBLE
    if code == TypeCode.TIMESTAMP:
        return KIND_TIMESTAMP
    if code in _BYTES_TYPES:
        return KIND_BYTES
    return KIND_TEXT


def is_binary_column(column: ColumnInfo) -> bool:
    """Whether []byte values are carried as base64 / Avro ``bytes``.

    TiCDC tests TiDB's BinaryFlag on encode and ``IsBinaryMySQLType(mysqlType)`` on decode; for
    string types both mean "charset is binary" (reference §1.2), so one predicate serves both.
    """
    return column.charset == "binary"


def is_unsigned_bigint(column: ColumnInfo) -> bool:
    """BIGINT UNSIGNED: the one type whose Avro value is the ``UnsignedBigint`` record (encodeValue4Avro)."""
    return column.type_code == TypeCode.LONGLONG and column.is_unsigned


class ColumnPlan:
    """How one column is written and read (precomputed per table and encoding)."""

    __slots__ = ("avro_key", "binary", "bounds", "column", "handle", "high", "json_key", "kind", "low", "name",
                 "ubigint", "virtual")

    def __init__(self, column: ColumnInfo) -> None:
        self.name = column.name
        self.column = column
        self.kind = column_kind(column)
        self.binary = is_binary_column(column)
        self.handle = bool(column.flags & ColumnFlag.HANDLE_KEY)
        self.virtual = column.virtual
        self.ubigint = is_unsigned_bigint(column)
        self.bounds = int_bounds(column)
        self.low, self.high = self.bounds
        self.json_key = go_json_quote(column.name) + ":"
        encoded = column.name.encode("utf-8", "surrogateescape")
        self.avro_key = long_bytes(len(encoded)) + encoded


def table_plan(table: TableInfo) -> tuple[list[ColumnPlan], list[ColumnPlan]]:
    """Column plans in table order and in sorted-name order (JSON maps), cached on the TableInfo."""
    cache = table.__dict__
    plan: tuple[list[ColumnPlan], list[ColumnPlan]] | None = cache.get("_pyticdc_simple_plan")
    if plan is None:
        ordered = [ColumnPlan(c) for c in table.columns]
        # encoding/json sorts map keys by their UTF-8 bytes.
        plan = (ordered, sorted(ordered, key=lambda c: c.name.encode("utf-8", "surrogateescape")))
        cache["_pyticdc_simple_plan"] = plan
    return plan


# --------------------------------------------------------------------------- encoder side
def _bad(column: ColumnInfo, value: object, why: str) -> EncodeError:
    return EncodeError(PROTOCOL, f"column {column.name!r}: {why} (got {type(value).__name__} {value!r:.60})")


def _enum_index(column: ColumnInfo, name: str) -> int:
    # tiTypes.ParseEnumName: a member name (collation-insensitive match falls back), or a number.
    elems = column.elems or ()
    for i, elem in enumerate(elems):
        if elem == name:
            return i + 1
    lowered = name.lower()
    for i, elem in enumerate(elems):
        if elem.lower() == lowered:
            return i + 1
    if _UINT_RE.fullmatch(name) and 0 < int(name) <= len(elems):
        return int(name)
    raise _bad(column, name, "not an ENUM member")


def _set_mask(column: ColumnInfo, names: str) -> int:
    # tiTypes.ParseSetName: comma-separated member names → bitmask.
    if names == "":
        return 0
    mask = 0
    for name in names.split(","):
        mask |= 1 << (_enum_index(column, name) - 1)
    return mask


def _bits_to_int(column: ColumnInfo, data: bytes) -> int:
    # common.MustBinaryLiteralToInt: big-endian, at most 8 significant bytes.
    stripped = data.lstrip(b"\x00")
    if len(stripped) > 8:
        raise _bad(column, data, "BIT value longer than 8 bytes")
    return int.from_bytes(stripped, "big")


def _clean_float(value: float) -> float:
    # The mounter replaces NaN and ±Inf by 0 before a codec sees them (reference §1.1).
    return 0.0 if math.isnan(value) or math.isinf(value) else value


def int_bounds(column: ColumnInfo) -> tuple[int, int]:
    """The integer range an INT-kind column may carry through both encodings."""
    # Only BIGINT UNSIGNED exceeds int64 (JSON decode falls back to ParseUint for it alone).
    if column.is_unsigned:
        return 0, (_MASK64 if column.type_code == TypeCode.LONGLONG else _INT64_MAX)
    return _INT64_MIN, _INT64_MAX


def normalize(value: object, column: ColumnInfo, kind: int, bounds: tuple[int, int] | None = None) -> Value:
    """The canonical model value an encoder writes for ``value`` (EncodeError if impossible)."""
    if value is None:
        return None
    if kind == KIND_INT:
        if isinstance(value, (bool, int)):
            number = int(value)
            low, high = bounds or int_bounds(column)
            if not low <= number <= high:
                raise _bad(column, value, "integer out of range for the column")
            return number
        raise _bad(column, value, "expected an int")
    if kind == KIND_UINT:
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            if column.type_code == TypeCode.BIT:
                return _bits_to_int(column, data)
            text = go_string(data)
            return _enum_index(column, text) if column.type_code == TypeCode.ENUM else _set_mask(column, text)
        if isinstance(value, str) and column.type_code in ENUM_SET_TYPES:
            return _enum_index(column, value) if column.type_code == TypeCode.ENUM else _set_mask(column, value)
        if isinstance(value, (bool, int)) and 0 <= int(value) <= _MASK64:
            return int(value)
        raise _bad(column, value, "expected an unsigned int")
    if kind == KIND_FLOAT:
        if isinstance(value, (bool, int, float)):
            return float32_round(_clean_float(float(value)))
        raise _bad(column, value, "expected a float")
    if kind == KIND_DOUBLE:
        if isinstance(value, (bool, int, float)):
            return _clean_float(float(value))
        raise _bad(column, value, "expected a float")
    if kind == KIND_BYTES:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, str):
            try:
                return value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a surrogate no undecodable byte stands for
                raise _bad(column, value, "text is not valid Unicode") from None
        raise _bad(column, value, "expected bytes")
    # KIND_TEXT, KIND_TIMESTAMP: TiDB's printed string.
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return go_string(bytes(value))
    raise _bad(column, value, "expected a str")


def format_double(value: float) -> str:
    """``strconv.FormatFloat(v, 'f', -1, 64)``; Python's repr already has the shortest digits."""
    text = repr(value)
    if "e" in text or "n" in text:  # exponent form, inf, nan: the general formatter
        return format_float_f(value, 64)
    return text[:-2] if text.endswith(".0") else text


def json_value(value: Value, kind: int, binary: bool, location: str) -> str:
    """JSON text of a canonical value (``encodeValue`` + encoding/json; ``location`` pre-quoted)."""
    if value is None:
        return "null"
    if kind == KIND_INT or kind == KIND_UINT:
        return '"' + str(value) + '"'
    if kind == KIND_FLOAT:
        return f'"{format_float32(value)}"'  # type: ignore[arg-type]
    if kind == KIND_DOUBLE:
        return f'"{format_double(value)}"'  # type: ignore[arg-type]
    if kind == KIND_TIMESTAMP:
        # map[string]string: encoding/json sorts the keys ("location" < "value").
        return f'{{"location":{location},"value":{go_json_quote(value)}}}'  # type: ignore[arg-type]
    if kind == KIND_BYTES:
        data: bytes = value  # type: ignore[assignment]
        if binary:
            return f'"{base64.b64encode(data).decode("ascii")}"'
        # encoding/json writes each invalid UTF-8 byte as the six characters \ufffd (§1.5), not a raw U+FFFD.
        return go_json_quote_bytes(data)
    return go_json_quote(value)  # type: ignore[arg-type]


def project_value(value: Value, kind: int, binary: bool, encoding: str) -> Value:
    """A canonical value as the decoder returns it: JSON replaces invalid UTF-8 of text bytes."""
    if encoding == "json" and kind == KIND_BYTES and not binary and value is not None:
        return go_string(value).encode("utf-8")  # type: ignore[arg-type]
    return value


# --------------------------------------------------------------------------- decoder side
def parse_int(text: str, column: ColumnInfo, path: str) -> int:
    """strconv.ParseInt of a JSON integer string, with BIGINT's ParseUint retry (DecodeError at ``path``)."""
    if _INT_RE.fullmatch(text) is None:
        raise DecodeError(PROTOCOL, f"not an integer: {text!r:.40}", path)
    if len(text) > 21:  # a sign and 20 digits hold every 64-bit value; int() refuses > 4300 digits
        raise DecodeError(PROTOCOL, f"integer out of range: {text!r:.40}", path)
    number = int(text)
    if _INT64_MIN <= number <= _INT64_MAX:
        return number
    # strconv.ParseInt failed; BIGINT retries ParseUint (unsigned values above 2^63-1).
    if column.type_code == TypeCode.LONGLONG and 0 <= number <= _MASK64 and text[0] != "+":
        return number
    raise DecodeError(PROTOCOL, f"integer out of range: {text!r:.40}", path)


def _parse_uint(text: str, path: str) -> int:
    if _UINT_RE.fullmatch(text) is None or len(text) > 21 or int(text) > _MASK64:
        raise DecodeError(PROTOCOL, f"not an unsigned integer: {text!r:.40}", path)
    return int(text)


def _parse_float(text: str, bits: int, path: str) -> float:
    if _FLOAT_RE.fullmatch(text) is None:
        raise DecodeError(PROTOCOL, f"not a float: {text!r:.40}", path)
    number = float(text)
    if bits == 32:
        number = float32_round(number)
    if math.isinf(number) and "n" not in text.lower():
        raise DecodeError(PROTOCOL, f"float out of range: {text!r:.40}", path)
    return number


def from_wire(value: object, column: ColumnInfo, kind: int, binary: bool, path: str) -> Value:
    """Model value of one wire value (JSON string/object, or an unwrapped Avro branch value).

    Accepts both encodings' shapes so rows decoded before their schema arrived (kept with wire
    values) can be resolved later with the same rules (``message.go:decodeColumn``).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise DecodeError(PROTOCOL, "unexpected boolean value", path)
    if kind == KIND_INT:
        if isinstance(value, int):
            # An Avro long of an unsigned column is the uint64 reinterpreted as int64.
            return value & _MASK64 if value < 0 and column.is_unsigned else value
        if isinstance(value, str):
            return parse_int(value, column, path)
    elif kind == KIND_UINT:
        if isinstance(value, int):
            return value & _MASK64
        if isinstance(value, str):
            return _parse_uint(value, path)
    elif kind == KIND_FLOAT:
        if isinstance(value, (int, float)):
            return float32_round(float(value))
        if isinstance(value, str):
            return _parse_float(value, 32, path)
    elif kind == KIND_DOUBLE:
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            return _parse_float(value, 64, path)
    elif kind == KIND_BYTES:
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            if binary:
                try:
                    return base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    raise DecodeError(PROTOCOL, "invalid base64 for a binary column", path) from None
            return value.encode("utf-8", "surrogateescape")
    else:  # KIND_TEXT, KIND_TIMESTAMP
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            # A JSON TIMESTAMP object {"location","value"}: the value is already in that zone.
            inner = value.get("value")
            if isinstance(inner, str):
                return inner
    raise DecodeError(PROTOCOL, f"unexpected {type(value).__name__} value for column {column.name!r}", path)


def unresolved_json_value(value: object, path: str) -> Value:
    """A JSON wire value kept as is for a row whose schema is not known yet."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        inner = value.get("value")
        if isinstance(inner, str):
            return inner  # TIMESTAMP object
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise DecodeError(PROTOCOL, f"unexpected {type(value).__name__} column value", path)


def avro_value(out: bytearray, plan: ColumnPlan, value: object, location: bytes) -> None:
    """Append the map-value union branch and value of one column (encodeValue4Avro)."""
    kind = plan.kind
    value = normalize(value, plan.column, kind, plan.bounds)
    if value is None:
        out.append(B_NULL)
    elif kind == KIND_INT or kind == KIND_UINT:
        number: int = value  # type: ignore[assignment]
        out.append(B_UBIGINT if plan.ubigint and kind == KIND_INT else B_LONG)
        write_long(out, number - (1 << 64) if number > _INT64_MAX else number)
    elif kind == KIND_FLOAT:
        out.append(B_FLOAT)
        out += _F32.pack(value)
    elif kind == KIND_DOUBLE:
        out.append(B_DOUBLE)
        out += _F64.pack(value)
    elif kind == KIND_TIMESTAMP:
        out.append(B_TIMESTAMP)
        out += location
        write_str(out, value)  # type: ignore[arg-type]
    elif kind == KIND_BYTES:
        data: bytes = value  # type: ignore[assignment]
        out.append(B_BYTES if plan.binary else B_STRING)
        write_long(out, len(data))
        out += data
    else:
        out.append(B_STRING)
        write_str(out, value)  # type: ignore[arg-type]
