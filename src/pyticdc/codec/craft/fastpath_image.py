"""The Craft fast path's row image reader and row loop: generated once per column-group signature.

A column group's values are a §3.1 nullable bytes chunk: ``count`` zigzag varint lengths (-1 =
NULL), then the bytes. ``image_reader`` compiles, per signature (names and value decoders, never
per value lengths), one function reading that chunk into the row image whatever the combination of
lengths, so its cost does not depend on which lengths a row has and nothing is compiled per row:

* all lengths one-byte varints (values under 64 bytes; the common case): the length chunk is
  ``count`` bytes, turned into lengths by one ``translate`` (a bad code becomes 0xFF, checked once);
* some length of 64 bytes or more: the chunk is read by one Struct of "B" (one-byte varint), "H"
  (two-byte varint) and "{n}s" (longer varint) fields, first the one of the previous row (rows of a
  table usually repeat their length kinds), else the one its bytes call for (one regex match and
  one translate); the codes are looked up in an exact dict of the one- and two-byte codes, and
  only a row with a longer one (a value of 8 KiB or more) is read again with coded_lengths;
* value positions are added up inline; each value is one slice converted inline
  (text decoded strictly, integers of up to 3 bytes byte by byte through exact 128-entry tables,
  longer ones by one int.from_bytes, a bit check and four lane-doubling steps, floats read in
  place).

``rows_reader`` compiles the same statements into FastPath.decode's row loop, for the rows of a
message that share one group header and table.

Everything unusual answers None or raises a ``_fastpath.DECLINES`` member (KeyError from the exact
tables, UnicodeDecodeError from strict text), and the caller sends the message to the reference
path. Column names enter the generated source only as ``_fastpath.literal`` literals.
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from msgspec.structs import replace as _replace

from pyticdc.codec._fastpath import compile_function, literal, native
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

__all__ = ["ImageReader", "RowsReader", "VarintTables", "coded_lengths", "image_reader", "length_kinds",
           "long_varints", "rows_reader", "varint_tables", "varints_re"]

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
    #: A final byte (< 0x80) → its value: a one-byte uvarint, the last byte of a longer one.
    final1: dict[int, int]


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
    return VarintTables(uvarints, zigzags, dict(uvarints), dict(zigzags), coded_zigzags, one)


@functools.lru_cache(maxsize=256)
def varints_re(count: int) -> re.Pattern[bytes]:
    """A regex matching ``count`` consecutive varints (their end is where a chunk ends)."""
    return re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % count)


# Multi-byte varints are read byte by byte through 128-entry tables rather than pairs through
# 16k-entry ones: random values (uint64 ids, TSO deltas) then touch no large table, which costs
# more (cache misses, under load) than the few extra lookups.
#: A continuation byte → its 7 value bits; a final byte is no key.
_LOW7: Final = {b: b & 0x7F for b in range(0x80, 0x100)}
#: A continuation byte → its 7 value bits at bit 7 (second byte of a longer varint).
_LOW7_7: Final = {b: (b & 0x7F) << 7 for b in range(0x80, 0x100)}
#: A final byte → its value at bit 7 / 14 (the last byte of a 2- / 3-byte varint).
_HIGH7: Final = {b: b << 7 for b in range(0x80)}
_HIGH14: Final = {b: b << 14 for b in range(0x80)}
#: The 10th byte of a uvarint: only bit 63 (CraftReader.uvarint's overflow rule).
_FINAL10: Final = {0: 0, 1: 1}


def _byte_expression(fields: Sequence[str]) -> str:
    """The uvarint of ``len(fields)`` bytes (3..10) from its bytes' ints: every byte but the last a
    continuation byte (_LOW7), the last a final byte (at most 1 as the 10th): exact lookups in
    128-entry tables (a KeyError for any other byte), CraftReader.uvarint's rules."""
    last = len(fields) - 1
    parts = [f"LO7[{field}]" + (f" << {7 * k}" if k else "") for k, field in enumerate(fields[:last])]
    parts.append(f"{'FIN10' if last == MAX_VARINT_LEN - 1 else 'FIN'}[{fields[last]}] << {7 * last}")
    return " | ".join(parts)


def _lane_masks(lane: int, keep: int) -> tuple[int, int]:
    """Masks of the low ``keep`` bits of the even and of the odd ``lane``-bit lanes of 128 bits."""
    even = odd = 0
    for base in range(0, 128, 2 * lane):
        even |= ((1 << keep) - 1) << base
        odd |= ((1 << keep) - 1) << (base + lane)
    return even, odd


#: By size n (1..10, any other size is no key): the bits that must match (bit 7 of every byte; of a
#: 10th byte every bit but bit 0) and what they must be (continuation bits on all bytes but the
#: last): CraftReader.uvarint's rules for an n-byte uvarint.
_LONG_MASKS: Final = {n: sum(0x80 << (8 * k) for k in range(n)) | (0x7E << 72 if n == MAX_VARINT_LEN else 0)
                      for n in range(1, MAX_VARINT_LEN + 1)}
_LONG_BITS: Final = {n: sum(0x80 << (8 * k) for k in range(n - 1)) for n in range(1, MAX_VARINT_LEN + 1)}
_ZERO: Final = {0: 0}


def _long_expression(raw: str) -> str:
    """The uvarint of ``raw`` (``n`` bytes) without a call: its little-endian int (``x``), checked
    against _LONG_MASKS / _LONG_BITS (a KeyError otherwise), then the 7-bit groups packed together
    in four lane-doubling steps (``y``, ``z``, ``w``)."""
    steps = [_lane_masks(8, 7), _lane_masks(16, 14), _lane_masks(32, 28), _lane_masks(64, 56)]
    (a1, b1), (a2, b2), (a3, b3), (a4, b4) = steps
    packed = (f"((w := ((z := ((y := (x & {a1}) | (x & {b1}) >> 1) & {a2}) | (y & {b2}) >> 2) & {a3})"
              f" | (z & {b3}) >> 4) & {a4}) | (w & {b4}) >> 8")
    return f"(ZERO[(x := from_bytes({raw}, 'little')) & LONG_MASKS[n] ^ LONG_BITS[n]] | {packed})"


def _no_long_varint(buf: bytes, at: int) -> int:
    raise DecodeError("craft", "not a 3..10-byte varint")


@functools.cache
def long_varints(zigzag: bool) -> tuple[Callable[[bytes, int], int], ...]:
    """By size: a function reading a uvarint (or zigzag varint) of that many bytes (3..10) at ``at``
    (one Struct read of its bytes, then _byte_expression); other sizes raise."""
    functions: list[Callable[[bytes, int], int]] = [_no_long_varint] * 0x40
    for size in range(3, MAX_VARINT_LEN + 1):
        pieces = [f"v{k}" for k in range(size)]
        value = _byte_expression(pieces)
        if zigzag:
            value = f"((v := {value}) >> 1) ^ -(v & 1)"
        namespace: dict[str, Any] = {
            "unpack_from": struct.Struct("<" + "B" * size).unpack_from, "LO7": _LOW7, "FIN": varint_tables().final1,
            "FIN10": _FINAL10,
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
    varint as its int ("B"), a two-byte one as its little-endian int ("H") or its bytes ("2s"), a
    longer one as its bytes ("3s", ...).

    Only minimal encodings of lengths >= -1 are keys: anything else is a KeyError (a decline), so
    code 1 is the only NULL, a negative length never slips through as a slice bound, and a field
    read with the wrong kind (two one-byte varints as "2s" or "H", a continuation byte as "B") is
    refused: "B" keys are below 0x80, "H" keys have bit 7 set and a second byte of 1..0x7F.
    """
    lengths = _Lengths({b: max((b >> 1) ^ -(b & 1), 0) for b in range(0x80) if b < 3 or not b & 1})
    for lo in range(0x80, 0x100):
        for hi in range(1, 0x80):
            value = (lo & 0x7F) | (hi << 7)
            if not value & 1:  # odd zigzag codes of two bytes are lengths of -64 and below
                lengths[bytes((lo, hi))] = value >> 1
                lengths[lo | hi << 8] = value >> 1
    return lengths


@functools.cache
def _short_lengths() -> dict[int | bytes, int]:
    """coded_lengths' int codes ("B" and "H" fields) in an exact dict (a subclass's lookups are not
    specialised): the readers' first try; a longer code misses and the row is read again with
    coded_lengths."""
    return {code: length for code, length in coded_lengths().items() if type(code) is int}


#: Byte → "B" for a final byte, "c" for a continuation byte; then every run "cB" (a two-byte
#: varint) becomes the Struct code "H" (an int key: no bytes object to hash) and every longer run
#: "c…cB" (an n-byte varint) the code "{n}s".
_VARINT_CODES: Final = bytes(ord("B") if b < 0x80 else ord("c") for b in range(256))
_KIND_RE: Final = re.compile(rb"c+B")


def _kind(match: re.Match[bytes]) -> bytes:
    size = len(match.group())
    return b"H" if size == 2 else b"%ds" % size


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


#: A one-byte zigzag varint's int (a final byte) → its value; a continuation byte is no key.
_ZIGZAGS1: Final = {b: (b >> 1) ^ -(b & 1) for b in range(0x80)}


def _value(decoder: ValueDecoder, i: int) -> str:
    """The expression of column ``i``'s value from ``buf[p{i}:p{i+1}]`` (not NULL)."""
    raw = f"buf[p{i}:p{i + 1}]"
    if decoder is decode_float64:
        # §3.1 float64 = exactly 8 bytes, read in place (checked before any value is built).
        return f"f64_from(buf, p{i})[0]"
    if decoder is decode_uvarint or decoder is decode_varint:
        kind = "uvarints" if decoder is decode_uvarint else "zigzags"
        # Inline (no call, no bytes object): one-, two- and three-byte varints (values below
        # 2**21) byte by byte through the 128-entry tables; longer ones by _long_expression.
        three = f"LO7[buf[p{i}]] | LO7_7[buf[p{i} + 1]] | HI14[buf[p{i} + 2]]"
        two = f"LO7[buf[p{i}]] | HI7[buf[p{i} + 1]]"
        longer = _long_expression(f"buf[p{i}:p{i + 1}]")
        if decoder is decode_varint:
            three = f"((v := {three}) >> 1) ^ -(v & 1)"
            two = f"((v := {two}) >> 1) ^ -(v & 1)"
            longer = f"((v := {longer}) >> 1) ^ -(v & 1)"
        return (f"({kind}1[buf[p{i}]] if (n := p{i + 1} - p{i}) == 1 else ({two}) if n == 2 else ({three})"
                f" if n == 3 else {longer})")
    if decoder is decode_text:
        return f"{raw}.decode()"  # strict: invalid UTF-8 declines (go_string replaces it)
    if decoder is decode_bytes:
        return raw
    if decoder is decode_null:
        return "None"
    raise AssertionError(f"no fast expression for {decoder!r}")  # pragma: no cover - value_decoder's set


#: Value decoder → its kind letter for the C image reader (_native.craft_image).
_NATIVE_KINDS: Final[dict[ValueDecoder, bytes]] = {
    decode_bytes: b"b", decode_text: b"t", decode_uvarint: b"u", decode_varint: b"z", decode_float64: b"f",
    decode_null: b"n",
}


def _image_lines(names: Sequence[str], decoders: Sequence[ValueDecoder], target: str | None) -> list[str]:
    """Statements reading the nullable bytes chunk ``buf[at:end]`` into a Row: returned (``target``
    None) or assigned to ``target``; anything unusual returns None."""
    count = len(names)
    if native() is not None:
        # One C call reads the chunk by the same rules (None = a decline): see _native.c.
        call = "craft_image(buf, at, end, KINDS, NAMES, Row)"
        return [f"return {call}"] if target is None else [f"{target} = {call}", f"if {target} is None: return None"]
    codes = ", ".join(f"c{i}" for i in range(count)) + ","
    # The length varints read by a Struct of "B" (one byte: an int code), "H" (two bytes: an int
    # code) and "{n}s" (n bytes: bytes) fields, each code checked by the exact LENGTH lookup (a
    # KeyError declines; ANY_LENGTH then takes the longer codes): a field of the wrong kind is never
    # a key, so the Struct's fields are exactly the chunk's varints.
    def positions_from_codes(lengths: str) -> list[str]:
        return [
            "codes = unpack_from(buf, at)",
            f"{codes} = codes",
            "p0 = at + size",
            *[f"p{i + 1} = p{i} + {lengths}[c{i}]" for i in range(count)],
        ]
    lines = [
        f"chunk = buf[at:at + {count}]",
        "if chunk.isascii():",
        "    lengths = chunk.translate(LENGTHS)",
        f"    if 255 in lengths or len(chunk) != {count}: return None",
        # Unpacked and added up inline (cheaper than itertools.accumulate and its unpacking).
        f"    {', '.join(f'l{i}' for i in range(count))}, = lengths",
        f"    p0 = at + {count}",
        *[f"    p{i + 1} = p{i} + l{i}" for i in range(count)],
        "    nulls = 1 in chunk",
        "    if nulls:",
        f"        {codes} = chunk",
        "else:",
        "    # The previous row's length kinds first (rows of a table usually repeat them).",
        "    unpack_from, size = last[0]",
        "    try:",
        *[f"        {line}" for line in positions_from_codes("LENGTH")],
        "    except DECLINE:",
        "        found = length_kinds(buf, at, end, chunk_re)",
        "        if found is None: return None",
        "        last[0] = unpack_from, size = found",
        *[f"        {line}" for line in positions_from_codes("ANY_LENGTH")],
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
    if target is None:
        lines.append(f"if not nulls: return Row({{{', '.join(plain)}}})")
        lines.append(f"return Row({{{', '.join(nullable)}}})")
    else:
        lines.append(f"{target} = Row({{{', '.join(plain)}}}) if not nulls else Row({{{', '.join(nullable)}}})")
    return lines


def _namespace(names: Sequence[str], decoders: Sequence[ValueDecoder]) -> dict[str, Any]:
    """The names _image_lines' statements use (a generated function's globals)."""
    count = len(names)
    tables = varint_tables()
    helpers = native()
    return {
        "craft_image": None if helpers is None else helpers.craft_image,
        "KINDS": b"".join(_NATIVE_KINDS[decoder] for decoder in decoders), "NAMES": tuple(names),
        "Row": Row,
        "f64_from": F64.unpack_from, "from_bytes": int.from_bytes, "ZERO": _ZERO, "LONG_MASKS": _LONG_MASKS,
        "LONG_BITS": _LONG_BITS,
        "LENGTHS": _LENGTHS, "LENGTH": _short_lengths(), "ANY_LENGTH": coded_lengths(),
        "chunk_re": varints_re(count), "length_kinds": length_kinds, "DECLINE": (KeyError, struct.error),
        "last": [(struct.Struct("B" * count).unpack_from, count)],
        "uvarints1": tables.final1, "zigzags1": _ZIGZAGS1,
        "LO7": _LOW7, "LO7_7": _LOW7_7, "HI7": _HIGH7, "HI14": _HIGH14,
    }


def image_reader(names: Sequence[str], decoders: Sequence[ValueDecoder]) -> ImageReader:
    """The generated reader of one signature's nullable bytes chunk (see the module docstring)."""
    lines = _image_lines(names, decoders, None)
    source = "def read(buf, at, end):\n" + "".join(f"    {line}\n" for line in lines)
    reader: ImageReader = compile_function(source, "read", _namespace(names, decoders))
    return reader


#: (buf, offset, j, sizes, body sizes, commit ts, row index, row count, group header, value chunk
#: offset, insert / update / delete templates, events.append) → (row index, offset, j) where it
#: stopped, or None (a decline).
RowsReader = Callable[..., "tuple[int, int, int] | None"]


def rows_reader(names: Sequence[str], decoders: Sequence[ValueDecoder]) -> RowsReader:
    """The generated loop over a message's rows while their groups have this signature's header
    (``header``) and one table: FastPath.decode's row loop with the image reads inline.

    It stops (returns where) at the first row whose group header differs, for FastPath.decode's
    general loop; everything else unusual returns None, as the general loop would.
    """
    image = [f"        {line}" for line in _image_lines(names, decoders, "image")]
    lines = [
        "startswith = buf.startswith",
        "while i < rows:",
        "    body_end = offset + body_sizes[i]",
        "    t = sizes[j]",
        "    if t == -1:",
        "        if offset + sizes[j + 1] != body_end: return None",
        "        if not startswith(header, offset + 1): break",
        "        at = offset + skip",
        "        end = body_end",
        *image,
        "        g = buf[offset]",
        "        if g == 1: append(replace(insert, commit_ts=commit_ts[i], columns=image))",
        "        elif g == 2: append(replace(delete, commit_ts=commit_ts[i], pre_columns=image))",
        "        else: return None",
        "        j += 2",
        "    elif t == 1:",
        "        middle = offset + sizes[j + 1]",
        "        if not offset < middle < body_end or middle + sizes[j + 1] + sizes[j + 2] != body_end: return None",
        "        if not startswith(header, offset + 1) or not startswith(header, middle + 1): break",
        "        at = offset + skip",
        "        end = middle",
        *image,
        "        first = image",
        "        at = middle + skip",
        "        end = body_end",
        *image,
        "        g = buf[offset]",
        "        gm = buf[middle]",
        "        if g == 1 and gm == 2:",
        "            append(replace(update, commit_ts=commit_ts[i], columns=first, pre_columns=image))",
        "        elif g == 2 and gm == 1:",
        "            append(replace(update, commit_ts=commit_ts[i], columns=image, pre_columns=first))",
        "        else: return None",
        "        j += 3",
        "    else:",
        "        return None",
        "    offset = body_end",
        "    i += 1",
        "return i, offset, j",
    ]
    namespace = _namespace(names, decoders)
    namespace["replace"] = _replace
    source = ("def run(buf, offset, j, sizes, body_sizes, commit_ts, i, rows, header, skip, insert, update, delete,"
              " append):\n" + "".join(f"    {line}\n" for line in lines))
    run: RowsReader = compile_function(source, "run", namespace)
    return run
