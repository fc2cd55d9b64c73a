"""Column values as Canal-JSON strings and back: canalEntryBuilder.formatValue and canalJSONFormatColumn.

FLOAT text is parsed as a double, then rounded to float32 (Go parses straight to float32); the two
agree on every text TiCDC writes: shortest float32 digits, and before tiflow #8502 the float64
digits of the widened value (``"1.2339999675750732"``), which is that float32 exactly. Integer and
float columns also accept JSON numbers and exponent forms (``"1e3"``) where TiCDC's decoder would
refuse them; anything else that is not Go ``strconv`` syntax is a DecodeError.
"""

from __future__ import annotations

import re
from typing import Final, cast

from pyticdc.codec.canal_json.message import (
    INT64_MAX,
    INT64_MIN,
    K_BIGINT,
    K_F32,
    K_F64,
    K_INT,
    K_LATIN1,
    K_STR,
    K_UINT,
    K_UTF8,
    UINT64_MAX,
    UINT_TEXT,
    decode_error,
)
from pyticdc.codec.jsontext import easyjson_quote, float32_round, format_float32, format_float_f
from pyticdc.model import Value

__all__ = ["format_double", "format_float", "parse_value", "render"]

_INF: Final = float("inf")
_F32_MAX: Final = 3.4028234663852886e38
# easyjson escapes an invalid UTF-8 byte as the six characters \ufffd (jwriter.String); the
# surrogateescape decoder maps each such byte to one lone surrogate U+DC80..U+DCFF.
_EASYJSON_INVALID: Final = {c: "\\ufffd" for c in range(0xDC80, 0xDD00)}


# =========================================================================== values → wire
def _quote_text_bytes(data: bytes) -> str:
    try:
        return easyjson_quote(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "surrogateescape")
    pieces = [easyjson_quote(part) for part in re.split("([\udc80-\udcff]+)", text)]
    for i in range(1, len(pieces), 2):  # the odd pieces are runs of invalid bytes
        pieces[i] = '"' + pieces[i][1:-1].translate(_EASYJSON_INVALID) + '"'
    return '"' + "".join(p[1:-1] for p in pieces) + '"'


def _positional(text: str) -> str:
    """Python float text (``1.5e-07``, ``2.71``, ``1e+21``) as Go ``'f'`` prints it: no exponent,
    no trailing zeros, no trailing point."""
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    stripped = stripped.rstrip("0")
    if not stripped:
        return "-0" if negative else "0"
    if point <= 0:
        body = "0." + "0" * -point + stripped
    elif point >= len(stripped):
        body = stripped + "0" * (point - len(stripped))
    else:
        body = stripped[:point] + "." + stripped[point:]
    return "-" + body if negative else body


def format_double(value: float) -> str:
    """``FormatFloat(v, 'f', -1, 64)``: repr() is already the shortest round-trip digits."""
    if value == 0 or value != value or value in (_INF, -_INF):
        return format_float_f(value, 64)
    text = repr(value)
    if "e" not in text:  # positional already (1e-4 <= |v| < 1e16): only a trailing ".0" differs
        return text[:-2] if text.endswith(".0") else text
    return _positional(text)


def format_float(value: float) -> str:
    """``FormatFloat(v, 'f', -1, 32)`` of a FLOAT value (beyond the float32 range: as format_float_f)."""
    if abs(value) > _F32_MAX:
        return format_float_f(value, 32)
    return format_float32(value)


def render(value: object, binary: bool, bits: int) -> str:
    """JSON string literal of a non-null value (canalEntryBuilder.formatValue, §4.2)."""
    kind = type(value)
    if kind is int:
        return f'"{value}"'
    if kind is str:
        return easyjson_quote(cast(str, value))
    if kind is bytes or kind is bytearray or kind is memoryview:
        data = bytes(cast(bytes, value))
        # BinaryFlag: every byte becomes the code point of the same value (ISO-8859-1 decode).
        return easyjson_quote(data.decode("latin-1")) if binary else _quote_text_bytes(data)
    if kind is float:
        number = cast(float, value)
        if number != number or number in (_INF, -_INF):
            return '"0"'  # the mounter replaces NaN and ±Inf by (positive) 0 (§1.1)
        return '"' + (format_float(number) if bits == 32 else format_double(number)) + '"'
    if kind is bool:
        return '"1"' if value else '"0"'
    if isinstance(value, int):
        return f'"{int(value)}"'
    return easyjson_quote(str(value))


# =========================================================================== wire → values
_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT_TEXT: Final = re.compile(r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\Z", re.I)
_HEX_FLOAT_TEXT: Final = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+\Z")


def _parse_float(text: str, at: str) -> float:
    # strconv.ParseFloat syntax: decimal, exponent, hex mantissa with p exponent, inf/nan; a finite
    # text beyond the float64 range is ErrRange (TiCDC's decoder panics), here a DecodeError.
    try:
        if _FLOAT_TEXT.match(text):
            number = float(text)
        elif _HEX_FLOAT_TEXT.match(text):
            number = float.fromhex(text)
        else:
            raise decode_error(f"invalid float value {text!r}", at)
    except OverflowError:
        raise decode_error(f"float value {text!r} is out of range", at) from None
    if number in (_INF, -_INF) and "inf" not in text.lower():
        raise decode_error(f"float value {text!r} is out of range", at)
    return number


def parse_value(kind: int, raw: object, at: str) -> Value:
    """The Go-exact conversion of one wire value of kind ``kind``; DecodeError names ``at`` on bad input."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        return _parse_json_number(kind, raw, at)
    text = raw
    try:
        if kind == K_STR:
            return text
        if kind == K_UTF8:
            return text.encode("utf-8")
        if kind == K_LATIN1:
            return text.encode("latin-1")
    except UnicodeEncodeError:
        raise decode_error("binary column value has a character above U+00FF (not ISO-8859-1)", at) from None
    if kind in (K_F32, K_F64):
        number = _parse_float(text, at)
        if kind == K_F64:
            return number
        rounded = float32_round(number)
        if rounded in (_INF, -_INF) and number not in (_INF, -_INF):
            raise decode_error(f"float value {text!r} is out of float32 range", at)
        return rounded
    # strconv.ParseInt / ParseUint: optional sign (ParseInt only), ASCII digits, 64-bit range.
    if len(text) <= 21:
        if kind == K_UINT:
            if UINT_TEXT.match(text) and int(text) <= UINT64_MAX:
                return int(text)
            raise decode_error(f"invalid unsigned value {text!r}", at)
        if _INT_TEXT.match(text):
            number_int = int(text)
            if INT64_MIN <= number_int <= INT64_MAX:
                return number_int
            if kind == K_BIGINT and UINT_TEXT.match(text) and number_int <= UINT64_MAX:
                return number_int  # BIGINT: ParseInt, then ParseUint
    raise decode_error(f"invalid integer value {text!r}", at)


def _parse_json_number(kind: int, raw: object, at: str) -> Value:
    """A typed JSON value (Flink's canal-json encoder writes numbers and booleans, not strings).

    Only numeric columns take them: JSON integers (and booleans, for TINYINT(1)) for integer
    kinds, any JSON number for FLOAT/DOUBLE, each in the range the string form would allow.
    """
    if kind in (K_INT, K_UINT, K_BIGINT) and isinstance(raw, int):
        number = int(raw)  # bool → 0/1
        low = 0 if kind == K_UINT else INT64_MIN
        high = INT64_MAX if kind == K_INT else UINT64_MAX
        if low <= number <= high:
            return number
        raise decode_error(f"integer value {number} is out of range", at)
    if kind in (K_F32, K_F64) and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        try:
            number_float = float(raw)
        except OverflowError:
            raise decode_error(f"float value {raw} is out of range", at) from None
        if kind == K_F64:
            return number_float
        rounded = float32_round(number_float)
        if rounded in (_INF, -_INF):
            raise decode_error(f"float value {raw} is out of float32 range", at)
        return rounded
    raise decode_error(f"column value must be a string or null, got {type(raw).__name__}", at)
