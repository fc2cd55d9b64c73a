"""Craft column values (§3.2 ``EncodeTiDBType`` / ``DecodeTiDBType``), keyed by the TiDB type byte.

Shared by the encoder, the reference decoder and the fast path, which keys its generated code on
the identity of the value decoders defined here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from pyticdc.codec.craft.message import fail
from pyticdc.codec.craft.primitives import F64, CraftReader, uvarint_bytes, varint_bytes
from pyticdc.codec.jsontext import float32_round, go_string
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, TypeCode, Value
from pyticdc.mysql import FLOAT_TYPES, INTEGER_TYPES, STRING_TYPES, TEXT_VALUE_TYPES, UINT64_TYPES

__all__ = [
    "ValueDecoder",
    "ValueEncoder",
    "decode_bytes",
    "decode_float64",
    "decode_null",
    "decode_text",
    "decode_uvarint",
    "decode_value",
    "decode_varint",
    "encode_null",
    "encode_value",
    "exact_uvarint",
    "value_decoder",
    "value_encoder",
]

#: Time/date, VECTOR, JSON, DECIMAL: the string. Go's EncodeTiDBType has no case for the old
#: DECIMAL type, so it carries no value (like NULL, GEOMETRY and unknown types).
_TEXT_TYPES: Final = TEXT_VALUE_TYPES - {TypeCode.DECIMAL_OLD}
#: CHAR…BLOB (STRING_TYPES): raw bytes. BIT, ENUM, SET (UINT64_TYPES): uvarint of the uint64.
#: Integers (INTEGER_TYPES): uvarint if Unsigned flag else zigzag varint. YEAR: always zigzag varint.


def _enc_text(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected str, got {type(value).__name__}")


def _enc_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"expected bytes, got {type(value).__name__}")


def _enc_uvarint(value: Any) -> bytes:
    if not isinstance(value, int):
        raise TypeError(f"expected int, got {type(value).__name__}")
    return uvarint_bytes(value)


def _enc_varint(value: Any) -> bytes:
    if not isinstance(value, int):
        raise TypeError(f"expected int, got {type(value).__name__}")
    return varint_bytes(value)


def encode_null(value: Any) -> None:
    """No bytes: NULL, GEOMETRY and unknown types carry no value (§3.2)."""
    return None


def _enc_float(value: Any) -> bytes:
    if not isinstance(value, (int, float)):
        raise TypeError(f"expected float, got {type(value).__name__}")
    # §3.2: FLOAT is a float32 in the row model, widened to float64 on the wire.
    number = float32_round(float(value))
    # §1.1: the mounter replaces NaN and ±Inf (also a float32 overflow) by 0 before the codec.
    return F64.pack(number if number - number == 0.0 else 0.0)


def _enc_double(value: Any) -> bytes:
    if not isinstance(value, (int, float)):
        raise TypeError(f"expected float, got {type(value).__name__}")
    number = float(value)
    # §1.1: NaN and ±Inf reach the codec as 0 (x - x is NaN exactly for NaN and ±Inf).
    return F64.pack(number if number - number == 0.0 else 0.0)


ValueEncoder = Callable[[Any], bytes]


def value_encoder(type_code: int, flag: int) -> ValueEncoder | None:
    """The §3.2 value encoder for a column; None = always NULL (NULL, GEOMETRY, unspecified, unknown)."""
    if type_code in _TEXT_TYPES:
        return _enc_text
    if type_code in STRING_TYPES:
        return _enc_bytes
    if type_code in UINT64_TYPES:
        return _enc_uvarint
    if type_code in INTEGER_TYPES:
        return _enc_uvarint if flag & ColumnFlag.UNSIGNED else _enc_varint
    if type_code == TypeCode.YEAR:
        return _enc_varint
    if type_code == TypeCode.FLOAT:
        return _enc_float
    if type_code == TypeCode.DOUBLE:
        return _enc_double
    return None


def encode_value(type_code: int, flag: int, value: Value) -> bytes | None:
    """The wire bytes of one column value (§3.2 ``EncodeTiDBType``); None = NULL."""
    if value is None:
        return None
    encoder = value_encoder(type_code, flag)
    return None if encoder is None else encoder(value)


def exact_uvarint(raw: bytes, at: int) -> int:
    """``raw`` read as exactly one uvarint; DecodeError at ``at`` plus the offset otherwise."""
    size = len(raw)
    if size == 1 and raw[0] < 0x80:
        return raw[0]
    if size == 2 and raw[0] >= 0x80 and raw[1] < 0x80:
        return (raw[0] & 0x7F) | (raw[1] << 7)
    reader = CraftReader(raw)
    try:
        value = reader.uvarint()
    except DecodeError as exc:
        fail(f"bad value: {exc.reason}", at + (exc.at if isinstance(exc.at, int) else 0))
    if reader.pos != len(raw):
        fail("trailing bytes after an integer value", at + reader.pos)
    return value


def decode_uvarint(raw: bytes, at: int) -> Value:
    """An unsigned integer, BIT, ENUM or SET value."""
    return exact_uvarint(raw, at)


def decode_varint(raw: bytes, at: int) -> Value:
    """A signed integer or YEAR value (zigzag)."""
    value = exact_uvarint(raw, at)
    return (value >> 1) ^ -(value & 1)


def decode_float64(raw: bytes, at: int) -> Value:
    """A FLOAT or DOUBLE value: exactly 8 bytes little-endian."""
    if len(raw) != 8:
        fail(f"a float64 value takes 8 bytes, got {len(raw)}", at)
    value: float = F64.unpack(raw)[0]
    return value


def decode_text(raw: bytes, at: int) -> Value:
    """A value the row model holds as text (invalid UTF-8 → U+FFFD, like Go)."""
    return go_string(raw)


def decode_bytes(raw: bytes, at: int) -> Value:
    """A CHAR…BLOB value: the bytes."""
    return raw


def decode_null(raw: bytes, at: int) -> Value:
    """None whatever the bytes (NULL, GEOMETRY and unknown types, like Go's DecodeTiDBType)."""
    return None


ValueDecoder = Callable[[bytes, int], Value]


def value_decoder(type_code: int, flag: int) -> ValueDecoder:
    """The §3.2 ``DecodeTiDBType`` for a column (FLOAT and DOUBLE both come back as float64)."""
    if type_code in _TEXT_TYPES:
        return decode_text
    if type_code in STRING_TYPES:
        return decode_bytes
    if type_code in UINT64_TYPES:
        return decode_uvarint
    if type_code in INTEGER_TYPES:
        return decode_uvarint if flag & ColumnFlag.UNSIGNED else decode_varint
    if type_code == TypeCode.YEAR:
        return decode_varint
    if type_code in FLOAT_TYPES:
        return decode_float64
    return decode_null


def decode_value(type_code: int, flag: int, raw: bytes | None, at: int = 0) -> Value:
    """A column value from its wire bytes (§3.2 ``DecodeTiDBType``); DecodeError on bad bytes."""
    if raw is None:
        return None
    return value_decoder(type_code, flag)(raw, at)
