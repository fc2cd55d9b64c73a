"""The Craft fast path's row image reader: one generated function per column-group signature.

A column group's values are a §3.1 nullable bytes chunk: ``count`` zigzag varint lengths (-1 =
NULL), then the bytes. ``image_reader`` compiles, per signature (names and value decoders, never
per value lengths), one function reading that chunk into the row image whatever the combination of
lengths, so its cost does not depend on which lengths a row has and nothing is compiled per row:

* all lengths one-byte varints (values under 64 bytes; the common case): the length chunk is
  ``count`` bytes, turned into lengths by one ``translate`` (a bad code becomes 0xFF, checked once);
* some length of 64 bytes or more: the chunk is read by one Struct of "B" (one-byte varint) and
  "{n}s" (n-byte varint) fields, first the one of the previous row (rows of a table usually repeat
  their length kinds), else the one its bytes call for (one regex match and one translate);
* value positions come from one C ``accumulate``; each value is one slice converted inline
  (text decoded strictly, integers by exact table lookups, floats read in place).

Everything unusual answers None or raises a ``_fastpath.DECLINES`` member (KeyError from the exact
tables, UnicodeDecodeError from strict text), and the caller sends the message to the reference
path. Column names enter the generated source only as ``_fastpath.literal`` literals.
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any, Final, NamedTuple

from pyticdc.codec._fastpath import compile_function, literal
from pyticdc.codec.craft.message import MAX_INT32, MAX_VARINT_LEN
from pyticdc.codec.craft.primitives import F64, uvarint_of
from pyticdc.codec.craft.values import (
    ValueDecoder,
    decode_bytes,
    decode_float64,
    decode_null,
    decode_text,
    decode_uvarint,
    decode_varint,
)
from pyticdc.errors import DecodeError
from pyticdc.model import Row

__all__ = ["ImageReader", "VarintTables", "coded_lengths", "image_reader", "length_kinds", "long_varints",
           "varint_tables", "varints_re"]

#: (buf, at, end) of a group's nullable bytes chunk → its row image, or None (a decline).
ImageReader = Callable[[bytes, int, int], Row | None]


class _UvarintTable(dict[bytes, int]):
    """Exact §3.1 uvarint bytes → value: the 1- and 2-byte encodings are stored (a hit is one C
    dict lookup), longer ones are decoded by ``__missing__`` (primitives.uvarint_of) and not stored."""

    __slots__ = ()

    # A staticmethod, so the dict calls uvarint_of directly rather than through a wrapper method.
    __missing__ = staticmethod(uvarint_of)


class _ZigzagTable(dict[bytes, int]):
    """Exact §3.1 zigzag varint bytes → value, like _UvarintTable."""

    __slots__ = ()

    def __missing__(self, raw: bytes) -> int:
        value = uvarint_of(raw)
        return (value >> 1) ^ -(value & 1)


class VarintTables(NamedTuple):
    """Lookup tables of §3.1 varints (built once per process)."""

    #: Exact varint bytes → uvarint / zigzag value (values and single varints).
    uvarints: _UvarintTable
    zigzags: _ZigzagTable
    #: The same 1- and 2-byte entries in exact dicts (no __missing__: KeyError for anything else).
    short_uvarints: dict[bytes, int]
    short_zigzags: dict[bytes, int]
    #: The int struct reads for a 1-byte ("B") or 2-byte ("<H") varint → zigzag value.
    coded_zigzags: dict[int, int]
    #: Pieces of longer uvarints read as "<H"/"B" (_integer_expression): two continuation bytes →
    #: their 14 bits; a final byte; a final continuation + final byte; the same as 9th and 10th byte.
    pair14: dict[int, int]
    final1: dict[int, int]
    final2: dict[int, int]
    final10: dict[int, int]


@functools.cache
def varint_tables() -> VarintTables:
    """The process's varint tables, built on first use (~16k entries each)."""
    # Non-minimal encodings such as 80 00 are included because CraftReader.uvarint (like Go's
    # binary.Uvarint) accepts them.
    one = {b: b for b in range(0x80)}
    two = {(lo | 0x80) | (hi << 8): lo | (hi << 7) for hi in range(0x80) for lo in range(0x80)}
    uvarints = _UvarintTable({bytes((b,)): v for b, v in one.items()})
    uvarints.update({code.to_bytes(2, "little"): v for code, v in two.items()})
    zigzags = _ZigzagTable({raw: (v >> 1) ^ -(v & 1) for raw, v in uvarints.items()})
    coded_zigzags = {code: (v >> 1) ^ -(v & 1) for code, v in (one | two).items()}
    continuations = range(0x80, 0x100)
    pair14 = {lo | (hi << 8): (lo & 0x7F) | ((hi & 0x7F) << 7) for hi in continuations for lo in continuations}
    final10 = {code: v for code, v in two.items() if code >> 8 <= 1}  # the 10th byte holds only bit 63
    return VarintTables(uvarints, zigzags, dict(uvarints), dict(zigzags), coded_zigzags, pair14, one, two, final10)


@functools.lru_cache(maxsize=256)
def varints_re(count: int) -> re.Pattern[bytes]:
    """A regex matching ``count`` consecutive varints (their end is where a chunk ends)."""
    return re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % count)


def _integer_codes(size: int) -> str:
    """Struct codes of a ``size``-byte (3..10) varint: its byte pairs as little-endian "H" (and an
    odd last byte as "B"), decoded by _integer_expression."""
    return "H" * (size // 2) + "B" * (size % 2)


def _integer_expression(fields: Sequence[str], size: int) -> str:
    """The uvarint of ``size`` bytes (3..10) from its _integer_codes fields.

    Each pair of continuation bytes is one exact-dict lookup giving its 14 bits (KeyError unless
    both bytes are >= 0x80), the final pair or byte another (the 2-byte uvarint, the 10th-byte rule
    for 10 bytes, or a final byte < 0x80): CraftReader.uvarint's rules in fewer operations than the
    SWAR's, with no bytes object for the value.
    """
    pairs = size // 2
    if size % 2:
        parts = [f"pair14[{field}]" for field in fields[:pairs]] + [f"final1[{fields[pairs]}]"]
    else:
        parts = [f"pair14[{field}]" for field in fields[:pairs - 1]]
        parts.append(f"{'final10' if size == MAX_VARINT_LEN else 'final2'}[{fields[pairs - 1]}]")
    return " | ".join(part if k == 0 else f"{part} << {14 * k}" for k, part in enumerate(parts))


def _no_long_varint(buf: bytes, at: int) -> int:
    raise DecodeError("craft", "not a 3..10-byte varint")


@functools.cache
def long_varints(zigzag: bool) -> tuple[Callable[[bytes, int], int], ...]:
    """By size: a function reading a uvarint (or zigzag varint) of that many bytes (3..10) at ``at``
    as _integer_codes pieces (one Struct read, then _integer_expression); other sizes raise."""
    tables = varint_tables()
    functions: list[Callable[[bytes, int], int]] = [_no_long_varint] * 0x40
    for size in range(3, MAX_VARINT_LEN + 1):
        codes = _integer_codes(size)
        pieces = [f"v{k}" for k in range(len(codes))]
        value = _integer_expression(pieces, size)
        if zigzag:
            value = f"((v := {value}) >> 1) ^ -(v & 1)"
        namespace: dict[str, Any] = {
            "unpack_from": struct.Struct("<" + codes).unpack_from, "pair14": tables.pair14, "final1": tables.final1,
            "final2": tables.final2, "final10": tables.final10,
        }
        source = f"def read(buf, at):\n    {', '.join(pieces)}, = unpack_from(buf, at)\n    return {value}\n"
        functions[size] = compile_function(source, "read", namespace)
    return tuple(functions)


class _Lengths(dict[int | bytes, int]):
    """coded_lengths: the one- and two-byte codes are stored; ``__missing__`` reads the longer ones
    (values of 8 KiB and more) and refuses everything else with a KeyError."""

    __slots__ = ()

    def __missing__(self, code: int | bytes) -> int:
        # A "{n}s" field of 3..10 bytes: exactly one minimal uvarint, an even zigzag code (a
        # length >= 0), at most MaxInt32 (CraftReader.nullable_lengths).
        if type(code) is bytes and 3 <= len(code) <= MAX_VARINT_LEN and code[-1]:
            try:
                value = uvarint_of(code)
            except DecodeError:
                raise KeyError(code) from None
            if not value & 1 and value >> 1 <= MAX_INT32:
                return value >> 1
        raise KeyError(code)


@functools.cache
def coded_lengths() -> dict[int | bytes, int]:
    """A length varint as a chunk Struct reads it → the value length (NULL, code 1: 0): a one-byte
    varint as its int ("B"), a longer one as its bytes ("2s", "3s", ...).

    Only minimal encodings of lengths >= -1 are keys: anything else is a KeyError (a decline), so
    code 1 is the only NULL, a negative length never slips through as a slice bound, and a field
    read with the wrong kind (two one-byte varints as "2s", a continuation byte as "B") is refused.
    """
    lengths = _Lengths({b: max((b >> 1) ^ -(b & 1), 0) for b in range(0x80) if b < 3 or not b & 1})
    for lo in range(0x80, 0x100):
        for hi in range(1, 0x80):
            value = (lo & 0x7F) | (hi << 7)
            if not value & 1:  # odd zigzag codes of two bytes are lengths of -64 and below
                lengths[bytes((lo, hi))] = value >> 1
    return lengths


#: Byte → "B" for a final byte, "c" for a continuation byte; then every run "c…cB" (an n-byte
#: varint) becomes the Struct code "{n}s".
_VARINT_CODES: Final = bytes(ord("B") if b < 0x80 else ord("c") for b in range(256))
_KIND_RE: Final = re.compile(rb"c+B")


def _kind(match: re.Match[bytes]) -> bytes:
    return b"%ds" % len(match.group())


#: Byte kinds of a length chunk ("B"/"c" per byte) → the Struct reading such a chunk, and its size.
_KINDS: Final[dict[bytes, tuple[Callable[[bytes, int], tuple[Any, ...]], int]]] = {}


def length_kinds(buf: bytes, at: int, end: int,
                 chunk_re: re.Pattern[bytes]) -> tuple[Callable[[bytes, int], tuple[Any, ...]], int] | None:
    """The Struct (unpack_from, size) reading the length chunk at ``at`` as "B"/"{n}s" fields; None
    when it is not ``count`` varints (``chunk_re``)."""
    match = chunk_re.match(buf, at, end)
    if match is None:
        return None
    bytes_kinds = match.group().translate(_VARINT_CODES)
    found = _KINDS.get(bytes_kinds)
    if found is None:
        if len(_KINDS) >= 1024:
            _KINDS.clear()
        # "B" for a one-byte varint, "{n}s" for an n-byte one.
        chunk = struct.Struct(b"<" + _KIND_RE.sub(_kind, bytes_kinds))
        found = _KINDS[bytes_kinds] = (chunk.unpack_from, chunk.size)
    return found


#: One-byte zigzag varint length code → the length (even codes), 0 for NULL (code 1), else 0xFF (a
#: negative length, or a continuation byte): no length in a one-byte code is 255, so one translate
#: both converts a chunk and, by ``255 in``, checks it.
_LENGTHS: Final = bytes(0 if b == 1 else b >> 1 if b < 0x80 and not b & 1 else 0xFF for b in range(0x100))


def _value(decoder: ValueDecoder, i: int) -> str:
    """The expression of column ``i``'s value from ``buf[p{i}:p{i+1}]`` (not NULL)."""
    raw = f"buf[p{i}:p{i + 1}]"
    if decoder is decode_float64:
        # §3.1 float64 = exactly 8 bytes, read in place (checked before any value is built).
        return f"f64_from(buf, p{i})[0]"
    if decoder is decode_uvarint or decoder is decode_varint:
        kind = "uvarints" if decoder is decode_uvarint else "zigzags"
        return f"({kind}[{raw}] if p{i + 1} - p{i} < 3 else long_{kind}[p{i + 1} - p{i}](buf, p{i}))"
    if decoder is decode_text:
        return f"{raw}.decode()"  # strict: invalid UTF-8 declines (go_string replaces it)
    if decoder is decode_bytes:
        return raw
    if decoder is decode_null:
        return "None"
    raise AssertionError(f"no fast expression for {decoder!r}")  # pragma: no cover - value_decoder's set


def image_reader(names: Sequence[str], decoders: Sequence[ValueDecoder]) -> ImageReader:
    """The generated reader of one signature's nullable bytes chunk (see the module docstring)."""
    count = len(names)
    codes = ", ".join(f"c{i}" for i in range(count)) + ","
    positions = ", ".join(f"p{i}" for i in range(count + 1))
    # The length varints read by a Struct of "B" (one byte: an int code) and "{n}s" (n bytes:
    # bytes) fields, each code checked by the exact LENGTH lookup (a KeyError declines): a field
    # of the wrong kind is never a key, so the Struct's fields are exactly the chunk's varints.
    positions_from_codes = [
        "codes = unpack_from(buf, at)",
        f"{codes} = codes",
        "p0 = at + size",
        *[f"p{i + 1} = p{i} + LENGTH[c{i}]" for i in range(count)],
    ]
    lines = [
        f"chunk = buf[at:at + {count}]",
        "if chunk.isascii():",
        "    lengths = chunk.translate(LENGTHS)",
        f"    if 255 in lengths or len(chunk) != {count}: return None",
        f"    {positions} = accumulate(lengths, initial=at + {count})",
        "    nulls = 1 in chunk",
        "    if nulls:",
        f"        {codes} = chunk",
        "else:",
        "    # The previous row's length kinds first (rows of a table usually repeat them).",
        "    unpack_from, size = last[0]",
        "    try:",
        *[f"        {line}" for line in positions_from_codes],
        "    except DECLINE:",
        "        found = length_kinds(buf, at, end, chunk_re)",
        "        if found is None: return None",
        "        last[0] = unpack_from, size = found",
        *[f"        {line}" for line in positions_from_codes],
        "    nulls = 1 in codes",
        f"if p{count} != end: return None",
    ]
    plain: list[str] = []
    nullable: list[str] = []
    for i, (name, decoder) in enumerate(zip(names, decoders)):
        value = _value(decoder, i)
        if decoder is decode_float64:
            lines.append(f"if p{i + 1} - p{i} != 8 and (not nulls or c{i} != 1): return None")
        plain.append(f"{literal(name)}: {value}")
        nullable.append(f"{literal(name)}: {value if value == 'None' else f'None if c{i} == 1 else {value}'}")
    lines.append(f"if not nulls: return Row({{{', '.join(plain)}}})")
    lines.append(f"return Row({{{', '.join(nullable)}}})")
    tables = varint_tables()
    namespace: dict[str, Any] = {
        "Row": Row, "uvarints": tables.short_uvarints, "zigzags": tables.short_zigzags, "accumulate": accumulate,
        "long_uvarints": long_varints(False), "long_zigzags": long_varints(True), "f64_from": F64.unpack_from,
        "LENGTHS": _LENGTHS, "LENGTH": coded_lengths(),
        "chunk_re": varints_re(count), "length_kinds": length_kinds, "DECLINE": (KeyError, struct.error),
        "last": [(struct.Struct("B" * count).unpack_from, count)],
    }
    source = "def read(buf, at, end):\n" + "".join(f"    {line}\n" for line in lines)
    reader: ImageReader = compile_function(source, "read", namespace)
    return reader
