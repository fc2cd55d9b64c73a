"""Byte-exact JSON text as TiCDC's Go JSON writers print it (ticdc-reference.md §1.5, §12).

Three writers matter: Go ``encoding/json`` (Open, Simple, Canal DDL/watermark), ``easyjson``
(Canal-JSON DML) and ``json-iterator`` with EscapeHTML=false (Debezium). They differ in
which characters they escape and how they print floats; Python's ``json`` matches none.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import struct
from decimal import Decimal
from typing import Final

import orjson

__all__ = [
    "easyjson_quote",
    "float32_round",
    "format_float32",
    "format_float32_f",
    "format_float64_f",
    "format_float_f",
    "format_float_go_json",
    "format_float_jsoniter",
    "go_json_quote",
    "go_json_quote_bytes",
    "go_string",
    "has_negative_zero",
    "jsoniter_quote",
    "loads_keeping_negative_zero",
    "orjson_as_easyjson",
    "orjson_as_go_json",
    "shortest_repr",
]


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    # Go's utf8 decoder yields one U+FFFD per invalid byte (RuneError, width 1);
    # Python's "replace" yields one per maximal invalid subpart.
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("pyticdc-go-replace", _go_replace)

# --------------------------------------------------------------------------- reading "-0"
#: A JSON number written ``-0`` (Go's FormatFloat prints a negative zero so). orjson and msgspec read
#: it as the integer 0 and lose the sign strconv.ParseFloat keeps; a match inside a string is harmless.
_NEGATIVE_ZERO: Final = re.compile(rb"(?<![^:\[,\s])-0(?![0-9.eE])")
# The same search led by the literal "-0", which re finds with its fast substring search; the byte
# before is checked after (a lookbehind first is tried at every position of every message), and a
# "-0" at the very start, which has no byte before, by hand. A test checks both agree.
_NEGATIVE_ZERO_LITERAL_FIRST: Final = re.compile(rb"-0(?![0-9.eE])(?<=[:\[,\s]-0)")
_NUMBER_GOES_ON: Final = frozenset(b"0123456789.eE")


def has_negative_zero(data: bytes) -> bool:
    """Whether ``data`` may hold a JSON number ``-0`` (then parse it with ``loads_keeping_negative_zero``)."""
    if _NEGATIVE_ZERO_LITERAL_FIRST.search(data) is not None:
        return True
    return data.startswith(b"-0") and (len(data) == 2 or data[2] not in _NUMBER_GOES_ON)


def _int_or_negative_zero(text: str) -> int | float:
    return -0.0 if text == "-0" else int(text)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def loads_keeping_negative_zero(text: str | bytes) -> object:
    """JSON as ``json.loads`` reads it, except that the number ``-0`` is the float -0.0 (as Go reads it).

    Raises ValueError (RecursionError when nested too deeply) like ``json.loads``.
    """
    return json.loads(text, parse_int=_int_or_negative_zero, parse_constant=_no_constant)


def go_string(data: bytes) -> str:
    """Bytes as Go's JSON writers see them as text: invalid UTF-8 → U+FFFD per byte."""
    return data.decode("utf-8", "pyticdc-go-replace")


def _control_table(short: dict[int, str]) -> dict[int, str]:
    table = {c: f"\\u{c:04x}" for c in range(0x20)}
    table.update(short)
    return table


# encoding/json (Go >= 1.22): short \b \f \n \r \t, HTML-escape < > &, escape U+2028/2029.
_GO_TABLE: Final = _control_table(
    {0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\",
     0x3C: "\\u003c", 0x3E: "\\u003e", 0x26: "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}
)
# easyjson jwriter (NoEscapeHTML=false): like encoding/json but \b and \f as \u0008 / \u000c.
_EASYJSON_TABLE: Final = _control_table(
    {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\",
     0x3C: "\\u003c", 0x3E: "\\u003e", 0x26: "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}
)
# json-iterator ConfigCompatible..., EscapeHTML=false: only " \ \n \r \t short, no HTML, no 2028.
_JSONITER_TABLE: Final = _control_table({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\"})

_GO_NEEDS: Final = re.compile("[\x00-\x1f\"\\\\<>&\u2028\u2029]")
_JSONITER_NEEDS: Final = re.compile('[\x00-\x1f"\\\\]')


# A text that needs escapes is quoted by orjson and fixed up, not by str.translate: translate looks
# every character up in the table dict (tens of microseconds for a paragraph with one "<" or "é").
# orjson escapes exactly " \\ and the controls (\b \f \n \r \t short, the rest \u00XX in lower-case
# hex) like encoding/json; what it writes raw and Go does not (< > & U+2028 U+2029) is replaced in its
# output, where those characters can only stand for themselves. It refuses lone surrogates: translate.
_GO_HTML: Final = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                   ("\u2029", "\\u2029"))


def _orjson_go_quote(text: str) -> str | None:
    """``text`` quoted as encoding/json does, through orjson; None if orjson refuses it (surrogates)."""
    try:
        quoted = orjson.dumps(text).decode()
    except orjson.JSONEncodeError:
        return None
    for char, escape in _GO_HTML:
        if char in quoted:
            quoted = quoted.replace(char, escape)
    return quoted


def go_json_quote(text: str) -> str:
    """A JSON string literal exactly as Go ``encoding/json`` writes ``text``."""
    if _GO_NEEDS.search(text) is None:
        return f'"{text}"'
    quoted = _orjson_go_quote(text)
    if quoted is not None:
        return quoted
    return f'"{text.translate(_GO_TABLE)}"'


# Invalid UTF-8 arrives as surrogateescape code points U+DC80..U+DCFF (valid UTF-8 never decodes to a
# surrogate); encoding/json writes each such byte as the six characters \ufffd (encode.go: RuneError, size 1).
_GO_BYTES_TABLE: Final = {**_GO_TABLE, **{c: "\\ufffd" for c in range(0xDC80, 0xDD00)}}
_GO_BYTES_NEEDS: Final = re.compile("[\x00-\x1f\"\\\\<>&\u2028\u2029\udc80-\udcff]")


def go_json_quote_bytes(data: bytes) -> str:
    """A JSON string literal exactly as Go ``encoding/json`` writes ``string(data)`` (invalid UTF-8 → ``\\ufffd``)."""
    text = data.decode("utf-8", "surrogateescape")
    if _GO_BYTES_NEEDS.search(text) is None:
        return f'"{text}"'
    quoted = _orjson_go_quote(text)  # None when text holds invalid UTF-8 (surrogates)
    if quoted is not None:
        return quoted
    return f'"{text.translate(_GO_BYTES_TABLE)}"'


def easyjson_quote(text: str) -> str:
    """A JSON string literal exactly as easyjson's jwriter writes ``text``."""
    if _GO_NEEDS.search(text) is None:
        return f'"{text}"'
    if "\x08" not in text and "\x0c" not in text:  # easyjson writes those two long, orjson short
        quoted = _orjson_go_quote(text)
        if quoted is not None:
            return quoted
    return f'"{text.translate(_EASYJSON_TABLE)}"'


def jsoniter_quote(text: str) -> str:
    """A JSON string literal exactly as json-iterator (EscapeHTML=false) writes ``text``.

    json-iterator does not validate UTF-8: callers holding raw bytes decode them with
    ``surrogateescape`` and encode the result the same way to pass bytes through untouched.
    """
    if _JSONITER_NEEDS.search(text) is None:
        return f'"{text}"'
    if "\x08" not in text and "\x0c" not in text:  # json-iterator writes those two long, orjson short
        try:
            return orjson.dumps(text).decode()  # no HTML or U+2028 escapes: orjson's text as it is
        except orjson.JSONEncodeError:
            pass  # bytes passed through as surrogates
    return f'"{text.translate(_JSONITER_TABLE)}"'


# --------------------------------------------------------------------------- floats
_F32: Final = struct.Struct("<f")
_F32_BITS: Final = struct.Struct("<I")
_INF: Final = float("inf")
_F32_MAX: Final = 3.4028234663852886e38


def float32_round(value: float) -> float:
    """The float32 nearest to ``value``, widened back to a Python float."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def shortest_repr(value: float, bits: int) -> str:
    """Shortest decimal digits that round-trip at ``bits`` precision (Go ``'g', -1``-like text).

    For 64 bits Python's ``repr`` is already the shortest round-trip form. For 32 bits the
    first precision whose correctly rounded text parses back to the same float32 is used.
    """
    if bits == 64:
        return repr(value)
    target = float32_round(value)
    # Only a power of two (zero mantissa bits) has the lopsided interval the neighbour search is for.
    power_of_two = _F32_BITS.unpack(_F32.pack(target))[0] & 0x7FFFFF == 0
    for precision in range(1, 10):
        text = f"{target:.{precision - 1}e}"
        if float32_round(float(text)) == target:
            return text
        if not power_of_two:
            continue
        # At a power of two the float32 rounding interval is twice as wide above as below, so
        # the next digits up (or down) can round-trip where the nearest do not; Go's shortest
        # formatting finds them (2**-96 -> 1.2621775e-29, not 1.26217745e-29).
        nearest = Decimal(text)
        step = Decimal((0, (1,), nearest.adjusted() - (precision - 1)))
        for neighbour in (nearest + step, nearest - step):
            candidate = f"{neighbour:.{precision - 1}e}"
            if float32_round(float(candidate)) == target:
                return candidate
    return repr(target)  # unreachable: 9 digits always round-trip a float32


def _decimal(value: float, bits: int) -> Decimal:
    return Decimal(shortest_repr(value, bits))


def format_float_f(value: float, bits: int = 64) -> str:
    """Go ``strconv.FormatFloat(v, 'f', -1, bits)``: shortest digits, never an exponent."""
    if value == 0 or value != value or value in (_INF, -_INF):
        # TiCDC's mounter replaces NaN and ±Inf by 0 before any codec sees them.
        return "-0" if str(value).startswith("-") else "0"
    if bits == 32 and abs(value) > _F32_MAX:
        return "0"
    return format(_decimal(value, bits).normalize(), "f")


def _format_e(value: float, bits: int) -> str:
    if bits == 32 and abs(value) > _F32_MAX:
        return "0"
    # Go 'e' with precision -1: d[.ddd]e±XX, exponent at least two digits.
    sign, digits, exponent = _decimal(value, bits).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    exp10 = exponent + len(text) - 1
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"


_F32_SMALL: Final = float32_round(1e-6)
_F32_LARGE: Final = float32_round(1e21)


def _needs_exponent(value: float, bits: int) -> bool:
    # Go compares in the float's own width: float32(abs) < 1e-6 is a float32 comparison.
    if bits == 32:
        magnitude = abs(float32_round(value))
        return magnitude != 0 and (magnitude < _F32_SMALL or magnitude >= _F32_LARGE)
    magnitude = abs(value)
    return magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21)


def format_float_go_json(value: float, bits: int = 64) -> str:
    """A float as Go ``encoding/json`` prints it (exponent only <1e-6 or >=1e21, ``e-7``)."""
    if not _needs_exponent(value, bits):
        return format_float_f(value, bits)
    text = _format_e(value, bits)
    # encoding/json cleans e-09 to e-9 (only the negative two-digit case).
    if len(text) >= 4 and text[-4] == "e" and text[-3] == "-" and text[-2] == "0":
        text = text[:-2] + text[-1]
    return text


def format_float_jsoniter(value: float, bits: int = 64) -> str:
    """A float as json-iterator prints it: like encoding/json but ``e-07`` is kept."""
    if not _needs_exponent(value, bits):
        return format_float_f(value, bits)
    return _format_e(value, bits)


def format_float32(value: float) -> str:
    """``strconv.FormatFloat(float32(v), 'f', -1, 32)`` of a finite ``value``: the same text as
    ``format_float_f(float32_round(value), 32)``, faster (OverflowError past float32).

    Searches the fewest decimal places whose correctly rounded text reads back as the same
    float32. Within a binade the float32 rounding interval is symmetric, so the nearest decimal
    with k places is the best k-place candidate and "k places round-trip" is monotonic in k: a
    binary search finds the same shortest digits format_float_f's linear search does. Values where that
    does not hold (a power-of-two significand, whose interval is asymmetric), zero, NaN, ±Inf and
    magnitudes outside [1e-5, 2**24) — where the shortest digits can have fewer places than an
    integer, or need many — go to format_float_f.
    """
    target: float = _F32.unpack(_F32.pack(value))[0]  # OverflowError past float32: caller falls back
    magnitude = abs(target)
    if not 1e-5 <= magnitude < 16777216.0 or math.frexp(target)[0] in (0.5, -0.5):
        return format_float_f(target, 32)
    packed = _F32.pack(target)
    # Decimal places of the 7-significant-digit candidate; any lower bound would do.
    places = 6 - math.floor(math.log10(magnitude))
    if places < 0:
        places = 0
    text = f"{target:.{places}f}"
    if _F32.pack(float(text)) == packed:
        # Most float32s need 7-9 digits: one place fewer failing settles it.
        if places and _F32.pack(float(f"{target:.{places - 1}f}")) == packed:
            high = places - 1  # known to round-trip; find the fewest places that do
            low = 0
            while low < high:
                middle = (low + high) // 2
                if _F32.pack(float(f"{target:.{middle}f}")) == packed:
                    high = middle
                else:
                    low = middle + 1
            text = f"{target:.{high}f}"
    else:
        while True:  # nine significant digits always round-trip
            places += 1
            text = f"{target:.{places}f}"
            if _F32.pack(float(text)) == packed:
                break
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# --------------------------------------------------------------------------- fast float texts
# The row writers format a float per row; these two give the same text as format_float_f with one
# orjson call (float64) or a few correctly rounded '%g' trials (float32), and send the rest there.
_dumps: Final = orjson.dumps


def format_float64_f(value: float) -> str:
    """``strconv.FormatFloat(v, 'f', -1, 64)``: ``format_float_f(value, 64)``, faster.

    orjson writes the shortest round-trip digits (Ryu, like Go and ``repr``), positionally for most
    magnitudes; its text with ``e`` (or ``null`` for NaN/±Inf) goes to ``format_float_f``.
    """
    text = _dumps(value).decode()  # (str tests are cheaper than bytes tests)
    if "e" in text or "n" in text:
        return format_float_f(value, 64)
    return text[:-2] if text[-2:] == ".0" else text


def format_float32_f(value: float) -> str:
    """``format_float32(value)`` (Go ``FormatFloat(float32(v), 'f', -1, 32)``), in fewer steps.

    The nearest n-digit decimal (``'%.{n}g'``, correctly rounded) round-trips for every n from the
    shortest length up (the float32 rounding interval is symmetric off a power of two: see
    ``format_float32``). Seven digits that round-trip and end in 2..8 are the shortest: every
    six-digit decimal is then at least 1.5 units of the 7th digit (> 1.5e-7 of the value) away,
    beyond the float32 half-interval (<= 2**-24 of the value). Otherwise 8 digits, then 9, are
    tried. Seven digits that read back but may not be the shortest try one digit fewer at a time.
    Powers of two, zero, magnitudes outside [1e-4, 1e6) and a ``%g`` that switches to an exponent
    go to ``format_float32``. OverflowError past float32 like it.
    """
    packed = _F32.pack(value)
    value = _F32.unpack(packed)[0]  # the float32 itself: a double between two formats otherwise
    magnitude = value if value >= 0 else -value
    if not 1e-4 <= magnitude < 1e6 or not (packed[0] or packed[1] or packed[2] & 0x7F):
        return format_float32(value)
    text = f"{value:.7g}"
    if _F32.pack(float(text)) == packed:
        digits = text.lstrip("-0.")
        count = len(digits) - ("." in digits)
        if count == 7 and text[-1] in "2345678":
            return text
        # Fewer digits while they read back (that is monotonic): the last that does is the shortest.
        while count > 1:
            shorter = f"{value:.{count - 1}g}"
            if _F32.pack(float(shorter)) != packed:
                return text
            if "e" in shorter:  # %g turned to an exponent: its places are not 'f''s
                return format_float32(value)
            text = shorter
            digits = text.lstrip("-0.")
            count = len(digits) - ("." in digits)
        return text
    text = f"{value:.8g}"
    if _F32.pack(float(text)) == packed:
        return text
    return f"{value:.9g}"


# --------------------------------------------------------------------------- orjson text as Go writes it
# Row writers let orjson write whole documents and fix its text up after. orjson escapes " \ and
# every control (\b \f \n \r \t short, the rest \u00XX in lower-case hex) like encoding/json and
# writes everything else raw; Go escapes < > & U+2028 U+2029 too, easyjson also writes \b \f long.
# Single bytes are looked for as ints (memchr; a bytes needle costs more, and bytes.find of a
# two-byte needle walks every byte); 0xE2 leads both U+2028 and U+2029 in UTF-8.
_LT, _GT, _AMP, _E2, _BACKSLASH = 0x3C, 0x3E, 0x26, 0xE2, 0x5C
# The short escapes, with escaped backslashes so that escapes pair left to right (an escaped
# backslash before a b is not \b).
_SHORT_ESCAPE: Final = re.compile(rb"\\[\\bf]")
_EASYJSON_LONG: Final = {b"\\b": b"\\u0008", b"\\f": b"\\u000c", b"\\\\": b"\\\\"}


def _long_escape(match: re.Match[bytes]) -> bytes:
    return _EASYJSON_LONG[match.group()]


def orjson_as_go_json(out: bytes) -> bytes:
    """orjson's JSON text as Go ``encoding/json`` writes it: ``<`` ``>`` ``&`` U+2028 U+2029 escaped."""
    if _LT in out:
        out = out.replace(b"<", b"\\u003c")
    if _GT in out:
        out = out.replace(b">", b"\\u003e")
    if _AMP in out:
        out = out.replace(b"&", b"\\u0026")
    if _E2 in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


def orjson_as_easyjson(out: bytes) -> bytes:
    """orjson's JSON text as easyjson writes it: Go's escapes, and ``\\u0008`` ``\\u000c`` for \\b \\f."""
    if _BACKSLASH in out:
        out = _SHORT_ESCAPE.sub(_long_escape, out)
    return orjson_as_go_json(out)
