"""Column values of the Open Protocol per column type (§2.3): how each type is rendered and read.

Each column type renders its value one way. The encoder side is a ``Kind`` per type: coerce the
model value to what the Go row model holds, render it as JSON, and project it to what the
decoder returns. The decoder side (``ToRowChangeColumn`` + ``FormatColumn``) turns the JSON
value back into the model value; Go keeps whatever JSON type it finds (and panics on some), here
the JSON type must fit the column type.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final, NamedTuple

from pyticdc.codec.jsontext import (
    float32_round,
    format_float32,
    format_float_go_json,
    go_json_quote,
    go_json_quote_bytes,
    go_string,
)
from pyticdc.codec.open_protocol.message import BINARY, MAX_I64, MAX_U64, MIN_I64, UNSIGNED
from pyticdc.codec.open_protocol.strconv import strconv_quote, strconv_unquote
from pyticdc.model import TypeCode, Value
from pyticdc.mysql import BLOB_TYPES, CHAR_TYPES, INTEGER_OR_YEAR_TYPES, TEXT_VALUE_TYPES, UINT64_TYPES


class BadValue(Exception):
    """A value that does not fit its column (becomes EncodeError or DecodeError with context)."""


def clean_text(text: str) -> str:
    """A str as it reads back after Go JSON: lone surrogates (invalid UTF-8) become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return go_string(text.encode("utf-8", "surrogatepass"))
    return text


# --------------------------------------------------------------------------- encoder side: kinds
def _finite(value: float) -> float:
    # The mounter replaces NaN and ±Inf by 0 before a codec sees them (§1.1).
    return value if math.isfinite(value) else 0.0


def _c_int(value: object) -> Value:
    if type(value) is int:
        return value
    raise BadValue


def _c_float32(value: object) -> Value:
    if type(value) is float or type(value) is int:
        # §1.1: NaN/±Inf (and a float32 overflow, which TiDB never stores) reach the codec as 0.
        return _finite(float32_round(float(value)))
    raise BadValue


def _c_double(value: object) -> Value:
    if type(value) is float or type(value) is int:
        return _finite(float(value))
    raise BadValue


def _c_text(value: object) -> Value:
    if isinstance(value, str):
        return value
    raise BadValue


def _c_bytes(value: object) -> Value:
    if type(value) is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    raise BadValue


def _c_other(value: object) -> Value:
    # GEOMETRY, NULL and unknown codes: whatever Go value the mounter produced.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return _finite(value)
    raise BadValue


def _format_double(value: float) -> str:
    # repr is Go's shortest round-trip digits; it is positional exactly in [1e-4, 1e16),
    # inside encoding/json's positional range [1e-6, 1e21). Elsewhere use the exact formatter.
    text = repr(value)
    if "e" in text or "n" in text:
        return format_float_go_json(value, 64)
    return text[:-2] if text.endswith(".0") else text


@lru_cache(maxsize=8192)
def _format_float32_json(value: float) -> str:
    # encoding/json prints a float32 positionally (FormatFloat 'f') inside [1e-6, 1e21).
    if 1e-6 <= abs(value) < 1e21:
        return format_float32(value)
    return format_float_go_json(value, 32)


def _r_float32(value: Any) -> str:
    # The cache cannot tell 0.0 from -0.0 (they hash equal), and Go prints "-0".
    return _format_float32_json(value) if value != 0 else format_float_go_json(value, 32)


def _r_char(value: Any) -> str:
    # encoding/json writes each invalid UTF-8 byte as the escape \ufffd (reference §1.5)
    return go_json_quote_bytes(value)


def _r_binary(value: Any) -> str:
    return go_json_quote(strconv_quote(value))


def _r_blob(value: Any) -> str:
    # encoding/json marshals a Go []byte as standard padded base64.
    return '"' + base64.b64encode(value).decode("ascii") + '"'


def _r_other(value: Any) -> str:
    if isinstance(value, bytes):
        return _r_blob(value)
    if isinstance(value, float):
        return _format_double(value)
    if isinstance(value, int):
        return str(value)
    return go_json_quote(value)


def _p_same(value: Any) -> Value:
    return value  # type: ignore[no-any-return]


def _p_float(value: Any) -> Value:
    return float(value)  # "-0" reads back as -0.0 (message.read_json), as strconv.ParseFloat reads it


def _p_text(value: Any) -> Value:
    return clean_text(value)


def _p_char(value: Any) -> Value:
    # Go JSON writes invalid UTF-8 as U+FFFD; the decoder gets the UTF-8 bytes of that text.
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return go_string(value).encode("utf-8")
    return value  # type: ignore[no-any-return]


def _p_other(value: Any) -> Value:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")  # base64 text reads back as a string
    if isinstance(value, float):
        return _p_float(value)
    if isinstance(value, str):
        return clean_text(value)
    return value  # type: ignore[no-any-return]


class Kind(NamedTuple):
    """How one column type travels: coerce (model → Go value), render (JSON), project (round trip)."""

    coerce: Callable[[object], Value]
    render: Callable[[Any], str]
    project: Callable[[Any], Value]


_INT_KIND: Final = Kind(_c_int, str, _p_same)
_FLOAT32_KIND: Final = Kind(_c_float32, _r_float32, _p_float)
_DOUBLE_KIND: Final = Kind(_c_double, _format_double, _p_float)
_TEXT_KIND: Final = Kind(_c_text, go_json_quote, _p_text)
_CHAR_KIND: Final = Kind(_c_bytes, _r_char, _p_char)
_BINARY_KIND: Final = Kind(_c_bytes, _r_binary, _p_same)
_BLOB_KIND: Final = Kind(_c_bytes, _r_blob, _p_same)
_OTHER_KIND: Final = Kind(_c_other, _r_other, _p_other)


def kind_of(type_code: int, flags: int) -> Kind:
    """The Kind of a column: FormatColumn's ParseInt/ParseUint types, floats, TiDB's text, strings."""
    if type_code in INTEGER_OR_YEAR_TYPES or type_code in UINT64_TYPES:
        return _INT_KIND
    if type_code == TypeCode.FLOAT:
        return _FLOAT32_KIND
    if type_code == TypeCode.DOUBLE:
        return _DOUBLE_KIND
    if type_code in TEXT_VALUE_TYPES:
        return _TEXT_KIND
    if type_code in CHAR_TYPES:
        # the strconv.Quote branch of FromRowChangeColumn for binary strings
        return _BINARY_KIND if flags & BINARY else _CHAR_KIND
    if type_code in BLOB_TYPES:
        return _BLOB_KIND  # []byte in the default branch → base64
    return _OTHER_KIND


# --------------------------------------------------------------------------- decoder side
def describe(value: object) -> str:
    """A JSON value's type for an error message (the value itself only when short)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}" if len(repr(value)) < 40 else "a number out of range"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def integer_reader(low: int, high: int) -> Callable[[Any], Value]:
    """A reader of JSON integers in ``[low, high]``."""
    def read(value: Any) -> Value:
        if type(value) is int and low <= value <= high:
            return value
        raise BadValue(f"expected an integer in [{low}, {high}], got {describe(value)}")
    return read


def _d_float32(value: Any) -> Value:
    if type(value) is float or type(value) is int:
        try:
            number = float32_round(float(value))
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise BadValue(f"expected a FLOAT number, got {describe(value)}")


def _d_double(value: Any) -> Value:
    if type(value) is float or type(value) is int:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise BadValue(f"expected a DOUBLE number, got {describe(value)}")


def _d_text(value: Any) -> Value:
    if type(value) is str:
        return value
    raise BadValue(f"expected a string, got {describe(value)}")


def _d_char(value: Any) -> Value:
    if type(value) is str:
        return value.encode("utf-8")
    raise BadValue(f"expected a string, got {describe(value)}")


def _d_binary(value: Any) -> Value:
    if type(value) is str:
        try:
            return strconv_unquote(value)
        except ValueError as exc:
            raise BadValue(f"binary string is not Go-quoted: {exc}") from None
    raise BadValue(f"expected a string, got {describe(value)}")


def _d_blob(value: Any) -> Value:
    if type(value) is str:
        try:
            # Go's base64 decoder skips \r and \n; otherwise the strict padded std alphabet.
            return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadValue(f"invalid base64: {exc}") from None
    raise BadValue(f"expected a base64 string, got {describe(value)}")


def _d_other(value: Any) -> Value:
    if type(value) is str or type(value) is int or (type(value) is float and math.isfinite(value)):
        return value
    raise BadValue(f"expected a string or number, got {describe(value)}")


_D_SIGNED: Final = integer_reader(MIN_I64, MAX_I64)
_D_UNSIGNED: Final = integer_reader(0, MAX_U64)
_D_EITHER: Final = integer_reader(MIN_I64, MAX_U64)


def value_reader(type_code: int, flags: int, either_sign: bool) -> Callable[[Any], Value]:
    """The reader of a column's JSON value; ``either_sign`` accepts any int64 or uint64 integer."""
    if type_code in INTEGER_OR_YEAR_TYPES:
        # Signedness from flag 0x80 (UnsignedFlag).
        return _D_UNSIGNED if flags & UNSIGNED else (_D_EITHER if either_sign else _D_SIGNED)
    if type_code in UINT64_TYPES:
        return _D_UNSIGNED
    if type_code == TypeCode.FLOAT:
        return _d_float32
    if type_code == TypeCode.DOUBLE:
        return _d_double
    if type_code in TEXT_VALUE_TYPES:
        return _d_text
    if type_code in CHAR_TYPES:
        return _d_binary if flags & BINARY else _d_char
    if type_code in BLOB_TYPES:
        return _d_blob
    return _d_other
