"""Go ``strconv.Quote``/``Unquote``: how the Open Protocol carries BINARY/VARBINARY values (§2.3).

The encoder quotes a binary string with ``strconv.Quote`` and strips the quotes; the decoder
undoes it with ``Unquote``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["strconv_quote", "strconv_unquote"]

_QUOTE_SHORT: Final = {
    0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v",
    0x22: '\\"', 0x5C: "\\\\",
}


# Go's IsPrint and Python's isprintable share one definition (L, M, N, P, S and the ASCII space),
# but Go 1.25 uses Unicode 15.0.0 tables and Python its own version. The code points whose
# printability differs between the two versions are corrected here (Python >= 16.0 additions
# are not listed: no interpreter here ships them).
_UNIDATA: Final = tuple(int(part) for part in unicodedata.unidata_version.split("."))
#: Printable code points new in Unicode 15.0 (unassigned, so escaped, in older Pythons).
_NEW_IN_15_0: Final = (
    (0xCF3, 0xCF3), (0xECE, 0xECE), (0x10EFD, 0x10EFF), (0x1123F, 0x11241), (0x11B00, 0x11B09),
    (0x11F00, 0x11F10), (0x11F12, 0x11F3A), (0x11F3E, 0x11F59), (0x1342F, 0x1342F), (0x13440, 0x13455),
    (0x1B132, 0x1B132), (0x1B155, 0x1B155), (0x1D2C0, 0x1D2D3), (0x1DF25, 0x1DF2A), (0x1E030, 0x1E06D),
    (0x1E08F, 0x1E08F), (0x1E4D0, 0x1E4F9), (0x1F6DC, 0x1F6DC), (0x1F774, 0x1F776), (0x1F77B, 0x1F77F),
    (0x1F7D9, 0x1F7D9), (0x1FA75, 0x1FA77), (0x1FA87, 0x1FA88), (0x1FAAD, 0x1FAAF), (0x1FABB, 0x1FABD),
    (0x1FABF, 0x1FABF), (0x1FACE, 0x1FACF), (0x1FADA, 0x1FADB), (0x1FAE8, 0x1FAE8), (0x1FAF7, 0x1FAF8),
    (0x2B739, 0x2B739), (0x31350, 0x323AF),
)
#: Printable code points new in Unicode 15.1 (unassigned in Go's 15.0 tables, so Go escapes them).
_NEW_IN_15_1: Final = ((0x2FFC, 0x2FFF), (0x31EF, 0x31EF), (0x2EBF0, 0x2EE5D))
#: Matches what this Python calls printable but Go does not; None when there is nothing to match.
_NOT_GO_PRINT: Final = re.compile(
    "[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _NEW_IN_15_1) + "]") if _UNIDATA >= (15, 1) else None


def _in_ranges(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= code <= high for low, high in ranges)


def _go_is_print(char: str, code: int) -> bool:
    """Go ``strconv.IsPrint`` (Unicode 15.0.0) of one character."""
    if char.isprintable():
        return not (_UNIDATA >= (15, 1) and _in_ranges(code, _NEW_IN_15_1))
    return _UNIDATA < (15, 0) and _in_ranges(code, _NEW_IN_15_0)


def _quote_char(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        # surrogateescape stands for one byte that is not valid UTF-8: Go writes \xNN.
        return f"\\x{code - 0xDC00:02x}"
    short = _QUOTE_SHORT.get(code)
    if short is not None:
        return short
    if _go_is_print(char, code):
        return char
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def strconv_quote(data: bytes) -> str:
    """Go ``strconv.Quote(string(data))`` without the surrounding quotes."""
    text = data.decode("utf-8", "surrogateescape")
    if text.isprintable() and '"' not in text and "\\" not in text and (
            _NOT_GO_PRINT is None or not _NOT_GO_PRINT.search(text)):
        return text
    return "".join([_quote_char(c) for c in text])


_UNQUOTE_ESCAPE: Final = re.compile(
    r'\\(?:([abfnrtv\\"])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{3}))'
)
_UNQUOTE_SHORT: Final = {"a": b"\a", "b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t", "v": b"\v",
                         "\\": b"\\", '"': b'"'}


def _unquote_chunk(chunk: str) -> bytes:
    if "\\" in chunk or '"' in chunk:
        raise ValueError("invalid escape or unescaped quote")
    return chunk.encode("utf-8", "surrogatepass")


def strconv_unquote(text: str) -> bytes:
    """Go ``strconv.Unquote('"' + text + '"')`` as bytes; ValueError on a syntax error."""
    if "\n" in text:
        raise ValueError("newline in quoted string")
    if "\\" not in text:
        if '"' in text:
            raise ValueError("unescaped quote")
        return text.encode("utf-8", "surrogatepass")
    out = bytearray()
    position = 0
    for match in _UNQUOTE_ESCAPE.finditer(text):
        out += _unquote_chunk(text[position:match.start()])
        position = match.end()
        short, hex2, hex4, hex8, octal = match.groups()
        if short is not None:
            out += _UNQUOTE_SHORT[short]
        elif hex2 is not None:
            out.append(int(hex2, 16))  # \xNN is a single byte, possibly not UTF-8
        elif octal is not None:
            number = int(octal, 8)
            if number > 255:
                raise ValueError("octal escape out of range")
            out.append(number)
        else:
            code = int(hex4 if hex4 is not None else hex8, 16)
            # UnquoteChar: !utf8.ValidRune(v) (beyond U+10FFFF or a surrogate) is ErrSyntax.
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise ValueError(f"escaped code point U+{code:04X} is not a valid rune")
            out += chr(code).encode("utf-8")
    out += _unquote_chunk(text[position:])
    return bytes(out)
