"""Random column values in TiCDC's row model (reference §1.1), one generator for every column type."""

from __future__ import annotations

import random
from typing import Final

from pyticdc.codec.jsontext import float32_round, format_float_f
from pyticdc.model import ColumnInfo, TypeCode, Value
from pyticdc.mysql import BLOB_TYPES

__all__ = ["random_value"]

_INT_BITS: Final = {TypeCode.TINY: 8, TypeCode.SHORT: 16, TypeCode.INT24: 24, TypeCode.LONG: 32, TypeCode.LONGLONG: 64}
# Text that stresses every protocol's escaping: HTML-escaped characters, quotes, controls, U+2028, non-BMP.
_TEXT_PIECES: Final = (
    "a", "b", "xyz", "Hello", " ", "<", ">", "&", '"', "\\", "'", "\n", "\t", "\r", "\x00", "\x01", "\x1f", "\x7f",
    "é", "ß", "中文", "日本", "\u2028", "\u2029", "😀", "𝄞", "0", "123", "-", ".", "null", "{", "}", ",", ":",
)
_JSON_TEXTS: Final = (
    '{"key1": "value1"}', "[1, 2, 3]", '"text"', "null", "true", "false", "{}", "[]", "0", "-1.5",
    '{"a": {"b": [1.5, "x"]}}', '{"k": "<&>"}', '[{"x": null}, "y"]', '"中文"',
)
_SPECIAL_DOUBLES: Final = (0.0, -0.0, 1.0, -1.0, 0.1, 1e-7, 1e21, 1e300, -2.5e-300, 123456789.125, 5e-324)
_SPECIAL_FLOATS: Final = (0.0, 1.0, -1.0, 0.1, 3.14, 1e-7, 1e21, 3.4028234663852886e38, 1.401298464324817e-45)


def _text(rng: random.Random, max_chars: int) -> bytes:
    out: list[str] = []
    length = 0
    target = rng.randint(0, max_chars)
    while length < target:
        piece = rng.choice(_TEXT_PIECES)
        if length + len(piece) > max_chars:
            break
        out.append(piece)
        length += len(piece)
    return "".join(out).encode("utf-8")


def _fraction(rng: random.Random, fsp: int) -> str:
    if fsp <= 0:
        return ""
    return "." + str(rng.randrange(10**fsp)).zfill(fsp)


def _date(rng: random.Random, low: int = 1000, high: int = 9999) -> str:
    return f"{rng.randint(low, high):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _clock(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def _decimal(rng: random.Random, precision: int, scale: int) -> str:
    whole_digits = max(precision - scale, 0)
    edge = rng.random() < 0.15
    if edge:
        integer, fraction = 10**whole_digits - 1, 10**scale - 1
    else:
        integer = rng.randrange(10 ** rng.randint(0, whole_digits))
        fraction = rng.randrange(10**scale) if scale else 0
    text = str(integer) + ("." + str(fraction).zfill(scale) if scale else "")
    return ("-" if rng.random() < 0.4 and (integer or fraction) else "") + text


def _int(rng: random.Random, bits: int, unsigned: bool) -> int:
    low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    roll = rng.random()
    if roll < 0.1:
        return rng.choice((low, high, 0, 1, high - 1))
    if roll < 0.5:
        return rng.randint(max(low, -1000), min(high, 1000))
    return rng.randint(low, high)


def random_value(rng: random.Random, column: ColumnInfo, *, null_rate: float = 0.1) -> Value:
    """A value TiDB could hold in ``column``, as the TiCDC row model carries it (NULL if nullable, sometimes)."""
    if column.nullable and rng.random() < null_rate:
        return None
    code = column.type_code
    if code in _INT_BITS:
        return _int(rng, _INT_BITS[TypeCode(code)], column.is_unsigned)
    if code == TypeCode.FLOAT:
        if rng.random() < 0.2:
            return float32_round(rng.choice(_SPECIAL_FLOATS) * rng.choice((1, -1)))
        return float32_round(rng.uniform(-1e6, 1e6))
    if code == TypeCode.DOUBLE:
        if rng.random() < 0.2:
            return rng.choice(_SPECIAL_DOUBLES) * rng.choice((1.0, -1.0))
        return rng.uniform(-1e9, 1e9)
    if code == TypeCode.NEWDECIMAL:
        return _decimal(rng, column.flen if column.flen > 0 else 10, max(column.decimal, 0))
    if code in (TypeCode.DATE, TypeCode.NEWDATE):
        return _date(rng)
    if code == TypeCode.DATETIME:
        return f"{_date(rng)} {_clock(rng)}{_fraction(rng, column.decimal)}"
    if code == TypeCode.TIMESTAMP:
        # TIMESTAMP's range, printed in the (UTC) server time zone.
        return f"{_date(rng, 1971, 2037)} {_clock(rng)}{_fraction(rng, column.decimal)}"
    if code == TypeCode.TIME:
        hours = rng.choice((0, 1, 23, 24, 100, 838)) if rng.random() < 0.2 else rng.randint(0, 838)
        sign = "-" if rng.random() < 0.3 else ""
        if hours == 838:
            text = "838:59:59" + ("." + "0" * column.decimal if column.decimal > 0 else "")  # TIME's maximum
        else:
            text = f"{hours:02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{_fraction(rng, column.decimal)}"
        return sign + text if text.strip("0:.") else text
    if code == TypeCode.YEAR:
        return rng.choice((1901, 2155, 2000)) if rng.random() < 0.2 else rng.randint(1901, 2155)
    if code == TypeCode.BIT:
        width = column.flen if column.flen > 0 else 1
        return rng.randrange(2**width)
    if code == TypeCode.JSON:
        return rng.choice(_JSON_TEXTS)
    if code == TypeCode.ENUM:
        return rng.randint(1, len(column.elems or ("",)))
    if code == TypeCode.SET:
        return rng.randrange(2 ** len(column.elems or ()))
    if code == TypeCode.TIDB_VECTOR:
        dims = column.flen if column.flen > 0 else rng.randint(1, 4)
        return "[" + ",".join(format_float_f(float32_round(rng.uniform(-100, 100)), 32) for _ in range(dims)) + "]"
    if column.is_binary:
        if code == TypeCode.STRING:
            # BINARY(n) is right-padded with zero bytes to its full length.
            width = column.flen if column.flen > 0 else 1
            return bytes(rng.randrange(256) for _ in range(rng.randint(0, width))).ljust(width, b"\x00")
        limit = column.flen if 0 < column.flen <= 64 else 48
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, limit)))
    limit = column.flen if 0 < column.flen <= 64 else 40
    value = _text(rng, limit if code not in BLOB_TYPES else 40)
    if code == TypeCode.STRING:
        # CHAR drops trailing spaces when read back (PAD_CHAR_TO_FULL_LENGTH off).
        value = value.rstrip(b" ")
    return value
