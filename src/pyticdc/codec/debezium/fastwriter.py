"""The Debezium fast image writer: one generated function per column layout writes a row image.

The reference writer (``encoder._image_reference``) sends each value through its column's wire
function and ``message.dump``. The generated writer inlines the common cases of those wire functions
(integers in range, canonical DATE/DATETIME/TIMESTAMP texts, decimals, floats in the plain range,
strings, base64, ENUM/SET lookups) into straight-line code, lets orjson write the object and turns
orjson's short ``\\b`` ``\\f`` escapes into json-iterator's long ones. A value outside those cases
goes through its column's own wire function (``slow``); an image orjson refuses (lone surrogates,
ints past 64 bits) makes the writer return None, and the caller uses the reference writer.
The conformance suite checks the two byte for byte.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Any, Final, Protocol

import orjson

from pyticdc.codec._fastpath import compile_function, literal
from pyticdc.codec.debezium.message import dump
from pyticdc.codec.debezium.values import bit_byte_count
from pyticdc.codec.debezium.writers import int_range
from pyticdc.codec.jsontext import format_float32_f
from pyticdc.model import ColumnInfo, Row, TypeCode, Value
from pyticdc.mysql.types import INTEGER_TYPES, STRING_TYPES

__all__ = ["ImageWriter", "image_writer"]

T = TypeCode

#: A generated writer: (row image, the layout's columns) -> the image's JSON bytes, or None.
ImageWriter = Callable[[Row, Sequence[Any]], bytes | None]

_U64_MAX: Final = (1 << 64) - 1
#: Canonical TiDB date and date-time texts (ASCII digits); anything else goes the slow way.
_DATE: Final = re.compile(r"\d{4}-\d\d-\d\d", re.ASCII).fullmatch
_WALL: Final = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?", re.ASCII).fullmatch
#: TiDB's decimal text: Go's ParseFloat and Python's float read it the same (correctly rounded).
_DECIMAL: Final = re.compile(r"-?\d+(?:\.\d+)?", re.ASCII).fullmatch
_SHORT_ESCAPE: Final = re.compile(rb"\\[\\bf]")
_JSONITER_LONG: Final = {b"\\b": b"\\u0008", b"\\f": b"\\u000c", b"\\\\": b"\\\\"}
_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_MAX_CACHED: Final = 1024


class _Column(Protocol):
    info: ColumnInfo

    def wire_value(self, value: Value) -> Any: ...


def _long_escape(match: re.Match[bytes]) -> bytes:
    return _JSONITER_LONG[match.group()]


def _slow(column: _Column, value: Value) -> Any:
    """One value through its column's wire function, as orjson writes it like ``dump``."""
    wire = column.wire_value(value)
    kind = type(wire)
    if kind is str or kind is int or kind is bool or wire is None:
        return wire
    return orjson.Fragment(dump(wire))  # floats: json-iterator's own text


# The fast-case condition (on ``v``, after the ``None`` test) and conversion of each column kind.
# Days/months up to 28/12 and clock fields in range make every matched text a valid date-time.
_WALL_OK: Final = ('v[:2] != "00" and "01" <= v[5:7] <= "12" and "01" <= v[8:10] <= "28" and v[11:13] < "24"'
                   ' and v[14] < "6" and v[17] < "6"')


def _column_code(i: int, column: ColumnInfo, utc: bool, ns: dict[str, Any]) -> tuple[str, str] | None:
    """(condition, conversion lines) of column ``i``'s fast case; None: always the slow way."""
    code = column.type_code
    if code in INTEGER_TYPES:
        low, high = int_range(code, column.is_unsigned)
        if column.is_unsigned and code == T.LONGLONG:
            # TiCDC writes uint64 wrapped to int64 and the type's maximum as -1 (slow way).
            return f"type(v) is int and 0 <= v < {_U64_MAX}", f"if v >= {1 << 63}: v -= {1 << 64}"
        return f"type(v) is int and {low} <= v <= {high}", ""
    if code == T.YEAR:
        return "type(v) is int and -(1 << 63) <= v < (1 << 63)", ""
    if code == T.FLOAT:
        # format_float32_f is json-iterator's float32 text in this range (no exponent).
        return "type(v) is float and 1e-4 <= abs(v) < 1e6", "v = Fragment(F32(v))"
    if code == T.DOUBLE:
        # orjson writes repr's digits positionally in this range; Go drops ".0" of an integral value.
        return "type(v) is float and 1e-5 <= abs(v) < 1e16", "if v.is_integer(): v = int(v)"
    if code == T.NEWDECIMAL:
        return ("type(v) is str and DECIMAL(v) is not None and 1e-5 <= abs(f := float(v)) < 1e16",
                "v = int(f) if f.is_integer() else f")
    if code in (T.DATE, T.NEWDATE):
        return ('type(v) is str and len(v) == 10 and DATE(v) is not None and v[:2] != "00"'
                ' and "01" <= v[5:7] <= "12" and "01" <= v[8:10] <= "28"'), "v = date_iso(v).toordinal() - EPOCH_DAY"
    if code in (T.DATETIME, T.TIMESTAMP):
        fsp = column.decimal if code == T.DATETIME else max(column.decimal, 0)
        if fsp > 6:
            return None
        length = 19 if fsp <= 0 else 20 + fsp
        cond = f"type(v) is str and len(v) == {length} and WALL(v) is not None and {_WALL_OK}"
        if code == T.DATETIME:
            unit = "MS" if column.decimal <= 3 else "US"
            return cond, f"v = (datetime_iso(v) - EPOCH) // {unit}"
        if not utc:
            return None
        # Past MinTimestamp in UTC: the same wall time (writers._timestamp_wire).
        return cond + ' and v >= "1971"', 'v = v[:10] + "T" + v[11:] + "Z"'
    if code == T.BIT:
        count = bit_byte_count(column.flen)
        cond = f"type(v) is int and 0 <= v <= {_U64_MAX}"
        if column.flen == 1:
            return cond, "v = v != 0"
        if count == 1:
            ns[f"B{i}"] = tuple(binascii.b2a_base64(bytes([b]), newline=False).decode() for b in range(256))
            return cond, f"v = B{i}[v & 255]"
        if 1 <= count <= 8:
            return cond, f'v = b64(v.to_bytes(8, "little")[:{count}], newline=False).decode()'
        return None
    if code in STRING_TYPES:
        if column.is_binary:
            return "type(v) is bytes", "v = b64(v, newline=False).decode()"
        return "type(v) is bytes", 'v = v.decode("utf-8", "surrogateescape")'
    if code == T.ENUM:
        ns[f"E{i}"] = {n: e for n, e in enumerate(column.elems or (), start=1)}
        return "type(v) is int", f'v = E{i}.get(v, "")'
    if code == T.SET:
        elems = column.elems or ()
        if len(elems) > 8:
            return None
        ns[f"S{i}"] = tuple(",".join(e for b, e in enumerate(elems) if m >> b & 1) for m in range(1 << len(elems)))
        return f"type(v) is int and 0 <= v < {1 << len(elems)}", f"v = S{i}[v]"
    if code in (T.JSON, T.TIDB_VECTOR):
        return "type(v) is str", ""
    return None


def _generate(infos: tuple[ColumnInfo, ...], utc: bool) -> ImageWriter | None:
    names = [c.name for c in infos]
    if len(set(names)) != len(names):
        return None  # a dict keeps one of a repeated name: the reference writes both
    ns: dict[str, Any] = {
        "Fragment": orjson.Fragment, "dumps": orjson.dumps, "JSONEncodeError": orjson.JSONEncodeError,
        "F32": format_float32_f, "DECIMAL": _DECIMAL, "DATE": _DATE, "WALL": _WALL, "date_iso": date.fromisoformat,
        "datetime_iso": datetime.fromisoformat, "EPOCH": _EPOCH, "EPOCH_DAY": _EPOCH_ORDINAL,
        "MS": timedelta(milliseconds=1), "US": timedelta(microseconds=1), "b64": binascii.b2a_base64,
        "slow": _slow, "SHORT_ESCAPE": _SHORT_ESCAPE, "long_escape": _long_escape,
    }
    lines = ["def write(image, C):", "    get = image.get"]
    for i, column in enumerate(infos):
        lines.append(f"    v = get({literal(column.name)})")
        null = "None" if column.default is None else f"slow(C[{i}], None)"
        lines.append(f"    if v is None: v{i} = {null}")
        fast = _column_code(i, column, utc, ns)
        if fast is not None:
            cond, convert = fast
            lines.append(f"    elif {cond}:")
            if convert:
                lines.append(f"        {convert}")
            lines.append(f"        v{i} = v")
        lines.append(f"    else: v{i} = slow(C[{i}], v)")
    body = ", ".join(f"{literal(name)}: v{i}" for i, name in enumerate(names))
    lines += [
        "    try:",
        f"        out = dumps({{{body}}})",
        "    except JSONEncodeError:",
        "        return None  # lone surrogates, ints past 64 bits: the reference writer",
        "    if 92 in out:  # a backslash: json-iterator writes \\b \\f long",
        "        out = SHORT_ESCAPE.sub(long_escape, out)",
        "    return out",
    ]
    return compile_function("\n".join(lines) + "\n", "write", ns)


_CACHE: dict[tuple[tuple[ColumnInfo, ...], bool], ImageWriter | None] = {}


def image_writer(infos: tuple[ColumnInfo, ...], utc: bool) -> ImageWriter | None:
    """The generated writer of an image of these columns (cached across encoders); None: none fits."""
    key = (infos, utc)
    try:
        return _CACHE[key]
    except KeyError:
        pass
    except TypeError:  # a column built with a list (unhashable): generated, not cached
        return _generate(infos, utc)
    if len(_CACHE) >= _MAX_CACHED:
        _CACHE.clear()
    writer = _CACHE[key] = _generate(infos, utc)
    return writer
