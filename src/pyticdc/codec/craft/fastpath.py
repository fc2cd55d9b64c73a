"""The Craft fast path: rows-only messages decoded with caches and generated code.

The reference path (``framing.parse`` → ``events.wire_to_event``) is the specification in code:
it checks every §3.2 rule and names the exact failing offset. ``FastPath`` decodes the common
message (rows only) by the same rules, much faster, by caching what repeats between rows and
messages and by leaving per-value work to C where it can:

* per decoder: the term dictionary (by its bytes), each column-group header (by its bytes: names,
  types, flags → a _Shape with its RowChange templates carrying the TableInfo);
* per process (_COMPILED, like re's pattern cache; pure derived data): per column signature, the
  value converters, generated code (see _generated_converter) and, per distinct value-length
  chunk, a "layout": a struct.Struct reading every value of a group in one C call plus a generated
  converter building the Row. Length chunks seen once are sliced by a generated slicer instead
  (compiling a Struct costs more than slicing once);
* size tables and headers are read with C-level calls (translate, struct, accumulate, count).

It never reports an error itself: whenever anything is unusual it answers None or raises one of
``pyticdc.codec._fastpath.DECLINES`` (DecodeError, or by design UnicodeDecodeError / KeyError from
its strict shortcuts), and Decoder.decode re-decodes the message on the reference path, which
raises the canonical DecodeError or returns the identical events (the tests check both paths
agree). Generated code is compiled only by ``_fastpath.compile_function``; column names enter it
only as ``_fastpath.literal`` literals.
"""

from __future__ import annotations

import functools
import operator
import re
import struct
import sys
from collections.abc import Callable, Sequence
from itertools import accumulate, pairwise
from typing import Any, Final, NamedTuple, cast

from msgspec.structs import replace as _replace

from pyticdc.codec._fastpath import compile_function, literal
from pyticdc.codec.craft.events import TableCache
from pyticdc.codec.craft.message import (
    EVENT_ROW,
    GROUP_NEW,
    GROUP_OLD,
    INT64_MAX,
    INT64_MIN,
    MASK64,
    MAX_INT32,
    MAX_VARINT_LEN,
    NULL_ID,
    PROTOCOL,
    Group,
)
from pyticdc.codec.craft.primitives import F64, CraftReader, uvarint_of
from pyticdc.codec.craft.values import (
    ValueDecoder,
    decode_bytes,
    decode_float64,
    decode_null,
    decode_text,
    decode_uvarint,
    decode_varint,
    value_decoder,
)
from pyticdc.codec.jsontext import go_string
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, Event, Op, Row, RowChange, Value

__all__ = ["FastPath"]

# Bounds of the fast-path caches (each cleared when full), small enough that a pathological
# stream (thousands of tables, every length combination new) stays within a few tens of MB:
_FAST_LIMIT: Final = 256  # signatures per process; shapes, dictionaries, templates per decoder; layouts
_SEEN_LIMIT: Final = 1024  # length chunks counted per signature before they are compiled
_MAX_VARIANTS: Final = 32  # generated converters per signature (each costs a compile and a few KB)
_COMPILE_AFTER: Final = 1  # sightings of a length chunk before its layout is compiled
# §3.1 varint framing: continuation bytes (>= 0x80) then one final byte (< 0x80). In a region
# that ends with a final byte, findall splits it into exactly its varints; one longer than 10
# bytes is then refused by the tables below.
_VARINT_RE: Final = re.compile(rb"[\x80-\xff]*[\x00-\x7f]")


@functools.lru_cache(maxsize=256)
def _varints_re(count: int) -> re.Pattern[bytes]:
    """A regex matching ``count`` consecutive varints (their end is where a chunk ends)."""
    return re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % count)


#: Byte → struct code of a region of 1- and 2-byte varints: "B" final byte, "c" continuation
#: (then b"cB" → "H"; a "c" left over means a varint of 3+ bytes).
_VARINT_CODES: Final = bytes(ord("B") if b < 0x80 else ord("c") for b in range(256))
_OPS: Final = (Op.INSERT, Op.UPDATE, Op.DELETE)
#: One-byte zigzag varints by byte value (§3.1 varint).
_ZIGZAG1: Final = tuple((b >> 1) ^ -(b & 1) for b in range(0x80))

if sys.version_info >= (3, 11):
    from operator import call as _call
else:  # pragma: no cover - Python 3.10 has no operator.call
    def _call(function: Callable[[bytes], Value], raw: bytes) -> Value:
        return function(raw)


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


class _VarintTables(NamedTuple):
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
def _varint_tables() -> _VarintTables:
    # Built on first use (~16k entries each): non-minimal encodings such as 80 00 are
    # included because CraftReader.uvarint (like Go's binary.Uvarint) accepts them.
    one = {b: b for b in range(0x80)}
    two = {(lo | 0x80) | (hi << 8): lo | (hi << 7) for hi in range(0x80) for lo in range(0x80)}
    uvarints = _UvarintTable({bytes((b,)): v for b, v in one.items()})
    uvarints.update({code.to_bytes(2, "little"): v for code, v in two.items()})
    zigzags = _ZigzagTable({raw: (v >> 1) ^ -(v & 1) for raw, v in uvarints.items()})
    coded_zigzags = {code: (v >> 1) ^ -(v & 1) for code, v in (one | two).items()}
    continuations = range(0x80, 0x100)
    pair14 = {lo | (hi << 8): (lo & 0x7F) | ((hi & 0x7F) << 7) for hi in continuations for lo in continuations}
    final10 = {code: v for code, v in two.items() if code >> 8 <= 1}  # the 10th byte holds only bit 63
    return _VarintTables(uvarints, zigzags, dict(uvarints), dict(zigzags), coded_zigzags, pair14, one, two, final10)


def _f64_exact(raw: bytes) -> Value:
    # decode_float64 without the offset: §3.1 float64 = exactly 8 bytes little-endian.
    if len(raw) != 8:
        raise DecodeError(PROTOCOL, "a float64 value takes 8 bytes")
    value: float = F64.unpack(raw)[0]
    return value


#: Converts one column's raw (non-NULL) value bytes; the fast twin of ValueDecoder.
_FastConverter = Callable[[bytes], Value]
#: jsontext.go_string as one C call (no Python frame per value); a test checks they agree.
_go_string_c: Final[Callable[[bytes], Value]] = operator.methodcaller("decode", "utf-8", "pyticdc-go-replace")
#: "Always None": a C-level callable for NULL values and always-NULL types.
_ALWAYS_NONE: Final[Callable[[bytes], Value]] = cast(dict[bytes, Value], {}).get
#: unpack_from(buf, at) → one group's raw values (floats already read), in column order.
_Unpack = Callable[[bytes, int], Sequence[Any]]
#: The raw values → the row image.
_Convert = Callable[[Sequence[Any]], Row]
#: (unpack, bytes of the length chunk, bytes of the values, convert).
_Layout = tuple[_Unpack, int, int, _Convert]


def _fast_converters(tables: _VarintTables) -> dict[ValueDecoder, _FastConverter]:
    # The reference ValueDecoder → its fast twin, so value_decoder stays the one type dispatch.
    return {
        decode_text: _go_string_c, decode_bytes: bytes, decode_uvarint: tables.uvarints.__getitem__,
        decode_varint: tables.zigzags.__getitem__, decode_float64: _f64_exact, decode_null: _ALWAYS_NONE,
    }


def _slice_values(spans: Sequence[tuple[int, int]], buf: bytes, at: int) -> list[bytes]:
    # An uncached layout's values: one slice each (what a Struct does in one call).
    return [buf[at + a:at + b] for a, b in spans]


def _convert_each(names: tuple[str, ...], converters: tuple[_FastConverter, ...], values: Sequence[Any]) -> Row:
    # Any layout (NULLs, odd float lengths): one converter call per column.
    return Row(zip(names, map(_call, converters, values)))


#: The fast converter → its expression in a generated converter (``{v}`` = the raw value). In a
#: generated converter every value is present and every float already read by the Struct. Two
#: shortcuts raise instead of handling the rare case, sending the message to the reference path:
#: text is decoded strictly (UnicodeDecodeError on invalid UTF-8, which go_string replaces), and
#: short integers are looked up in exact dicts of the 1- and 2-byte encodings (KeyError otherwise;
#: an exact dict subscript is faster than the __missing__-capable tables).
_EXPRESSIONS: Final[dict[ValueDecoder, str]] = {
    decode_text: "{v}.decode()", decode_bytes: "{v}", decode_uvarint: "uvarints[{v}]", decode_varint: "zigzags[{v}]",
    decode_float64: "{v}", decode_null: "None",
}


def _integer_codes(size: int) -> str:
    """Struct codes of a ``size``-byte (3..10) varint value in a generated converter's layout: its
    byte pairs as little-endian "H" (and an odd last byte as "B"), decoded by _integer_expression."""
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


def _generated_converter(
    names: Sequence[str], decoders: Sequence[ValueDecoder], tables: _VarintTables, sizes: Sequence[int],
) -> _Convert:
    """A converter unrolled for one shape and layout variant: ``Row({name: expression, ...})``.

    ``sizes[i]`` is -1 for a NULL value (no field: the Struct omits it), 3..10 for an integer read
    as _integer_codes, else 0. The converter avoids a call per column (bytes and floats are used as
    they are, text is decoded by a method call, integers by table subscripts: 1-2 bytes whole,
    3..10 bytes pairwise) and builds the Row from a dict display, unlike the generic
    ``Row(zip(names, map(call, converters, values)))``. Column names enter the source only as
    ``literal()`` (repr) literals, which always evaluate back to the same string; nothing else from
    the wire does.
    """
    fields: list[str] = []
    lines: list[str] = []
    items: list[str] = []
    for i, (name, decoder, size) in enumerate(zip(names, decoders, sizes)):
        value = f"v{i}"
        if size < 0:
            value = "None"
        elif size:
            pieces = [f"{value}_{k}" for k in range(len(_integer_codes(size)))]
            fields += pieces
            lines.append(f"{value} = {_integer_expression(pieces, size)}")
            if decoder is decode_varint:
                value = f"({value} >> 1) ^ -({value} & 1)"
        else:
            fields.append(value)
            value = _EXPRESSIONS[decoder].format(v=value)
        items.append(f"{literal(name)}: {value}")
    unpacking = [f"{', '.join(fields)}, = values"] if fields else []
    source = "".join(f"    {line}\n" for line in [*unpacking, *lines, f"return Row({{{', '.join(items)}}})"])
    namespace: dict[str, Any] = {
        "Row": Row, "uvarints": tables.short_uvarints, "zigzags": tables.short_zigzags,
        "pair14": tables.pair14, "final1": tables.final1, "final2": tables.final2, "final10": tables.final10,
    }
    convert: _Convert = compile_function("def convert(values):\n" + source, "convert", namespace)
    return convert


#: A group's value chunk (buf, at, end) → its row image, or None when the chunk is not of the
#: kind the slicer handles (then the caller compiles a layout).
_Slicer = Callable[[bytes, int, int], Row | None]
#: One-byte zigzag varint length code → the length (even codes < 0x80), else 0xFF (no length
#: takes 255 in a one-byte code): one translate both converts and, by ``0xFF in``, checks a chunk.
#: The second table also reads 1 (NULL) as length 0.
_LENGTHS: Final = bytes(b >> 1 if b < 0x80 and not b & 1 else 0xFF for b in range(0x100))
_LENGTHS_OR_NULL: Final = bytes(0 if b == 1 else length for b, length in enumerate(_LENGTHS))
_F64_FROM: Final = F64.unpack_from


def _no_long_varint(buf: bytes, at: int) -> int:
    raise DecodeError(PROTOCOL, "not a 3..10-byte varint")


@functools.cache
def _long_varints(zigzag: bool) -> tuple[Callable[[bytes, int], int], ...]:
    """By size: a function reading a uvarint (or zigzag varint) of that many bytes (3..10) at ``at``
    as _integer_codes pieces (one Struct read, then _integer_expression); other sizes raise."""
    tables = _varint_tables()
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


def _generated_slicer(names: Sequence[str], decoders: Sequence[ValueDecoder], tables: _VarintTables,
                      nulls: bool) -> _Slicer:
    """A slicer unrolled for one shape: the value chunk of a group whose lengths are all one-byte
    varints (§3.1 nullable bytes chunk; without NULLs unless ``nulls``) → its row image.

    For value lengths seen for the first time: no Struct to compile (see FastPath._image). The
    lengths come from one translate (_LENGTHS), the positions from one C ``accumulate``, each
    value is one slice, converted like _generated_converter (integers of 3+ bytes by _long_varints).
    """
    count = len(names)
    positions = [f"p{i}" for i in range(count + 1)]
    codes = [f"c{i}" for i in range(count)]
    lines = [f"chunk = buf[at:at + {count}]",
             f"lengths = chunk.translate({'LENGTHS_OR_NULL' if nulls else 'LENGTHS'})",
             f"if len(chunk) != {count} or 255 in lengths: return None"]
    if nulls:
        lines.append(f"{', '.join(codes)}, = chunk")
    lines += [f"{', '.join(positions)} = accumulate(lengths, initial=at + {count})",
              f"if p{count} != end: return None"]
    items: list[str] = []
    for i, (name, decoder) in enumerate(zip(names, decoders)):
        raw = f"buf[p{i}:p{i + 1}]"
        if decoder is decode_float64:
            # §3.1 float64 = 8 bytes: read in place after a length check (NULL: any length 0).
            lines.append(f"if p{i + 1} - p{i} != 8{f' and c{i} != 1' if nulls else ''}: return None")
            value = f"f64_from(buf, p{i})[0]"
        elif decoder is decode_uvarint or decoder is decode_varint:
            kind = "uvarints" if decoder is decode_uvarint else "zigzags"
            value = f"({kind}[{raw}] if p{i + 1} - p{i} < 3 else long_{kind}[p{i + 1} - p{i}](buf, p{i}))"
        else:
            value = _EXPRESSIONS[decoder].format(v=raw)
        items.append(f"{literal(name)}: {f'None if c{i} == 1 else {value}' if nulls and value != 'None' else value}")
    lines.append(f"return Row({{{', '.join(items)}}})")
    namespace: dict[str, Any] = {
        "Row": Row, "uvarints": tables.short_uvarints, "zigzags": tables.short_zigzags, "accumulate": accumulate,
        "long_uvarints": _long_varints(False), "long_zigzags": _long_varints(True),
        "LENGTHS": _LENGTHS, "LENGTHS_OR_NULL": _LENGTHS_OR_NULL, "f64_from": _F64_FROM,
    }
    source = "def slicer(buf, at, end):\n" + "".join(f"    {line}\n" for line in lines)
    slicer: _Slicer = compile_function(source, "slicer", namespace)
    return slicer


#: A group's value chunk (buf, at, end, chunk size, its length varints read as struct "B"/"<H"
#: codes) → its row image, or None when the lengths do not fill the chunk exactly.
_ListSlicer = Callable[[bytes, int, int, int, Sequence[int]], Row | None]


@functools.cache
def _coded_lengths() -> dict[int, int]:
    """A 1- or 2-byte zigzag length varint read as "B"/"<H" → the value length (NULL, code 1: 0).

    Only minimal encodings of lengths >= -1 are keys: anything else is a KeyError (a decline), so
    code 1 is the only NULL and a negative length never slips through as a slice bound.
    """
    tables = _varint_tables()
    return {code: max(value, 0) for code, value in tables.coded_zigzags.items()
            if value >= -1 and (code < 0x80 or code >> 8)}


def _generated_list_slicer(names: Sequence[str], decoders: Sequence[ValueDecoder],
                           tables: _VarintTables) -> _ListSlicer:
    """A slicer unrolled for one shape whose value lengths are already read (any varint sizes): the
    cost of a row does not depend on which combination of lengths it has, unlike a Struct layout
    (compiled per combination), so rows with variable-length columns never compile anything.

    Like _generated_slicer: positions from one C ``accumulate``, one slice per value, converted by
    the same expressions; NULLs are the lengths of -1.
    """
    count = len(names)
    positions = [f"p{i}" for i in range(count + 1)]
    codes = [f"c{i}" for i in range(count)]
    lines = [f"{', '.join(codes)}, = lengths",
             f"{', '.join(positions)} = accumulate(map(LENGTH, lengths), initial=at + size)",
             f"if p{count} != end: return None"]
    items: list[str] = []
    for i, (name, decoder) in enumerate(zip(names, decoders)):
        raw = f"buf[p{i}:p{i + 1}]"
        if decoder is decode_float64:
            lines.append(f"if p{i + 1} - p{i} != 8 and c{i} != 1: return None")
            value = f"f64_from(buf, p{i})[0]"
        elif decoder is decode_uvarint or decoder is decode_varint:
            kind = "uvarints" if decoder is decode_uvarint else "zigzags"
            value = f"({kind}[{raw}] if p{i + 1} - p{i} < 3 else long_{kind}[p{i + 1} - p{i}](buf, p{i}))"
        else:
            value = _EXPRESSIONS[decoder].format(v=raw)
        items.append(f"{literal(name)}: {f'None if c{i} == 1 else {value}' if value != 'None' else value}")
    lines.append(f"return Row({{{', '.join(items)}}})")
    namespace: dict[str, Any] = {
        "Row": Row, "uvarints": tables.short_uvarints, "zigzags": tables.short_zigzags, "accumulate": accumulate,
        "long_uvarints": _long_varints(False), "long_zigzags": _long_varints(True), "f64_from": _F64_FROM,
        "LENGTH": _coded_lengths().__getitem__,
    }
    source = "def list_slicer(buf, at, end, size, lengths):\n" + "".join(f"    {line}\n" for line in lines)
    slicer: _ListSlicer = compile_function(source, "list_slicer", namespace)
    return slicer


class _Compiled:
    """What a column-group signature (names and value decoders) compiles to, shared by every
    decoder of the process (like ``re``'s pattern cache): converters and value layouts."""

    __slots__ = (
        "chunk_re", "converters", "count", "decoders", "integers", "layouts", "list_slicer", "long_layouts",
        "names", "null_slicer", "seen", "slicer", "variants",
    )

    def __init__(self, names: tuple[str, ...], decoders: tuple[ValueDecoder, ...]) -> None:
        self.names = names
        self.count = len(names)
        self.decoders = decoders
        #: Per column converter (any layout).
        converters = _fast_converters(_varint_tables())
        self.converters = tuple(converters[d] for d in decoders)
        #: Which columns are varint integers (their sizes pick a generated converter variant).
        self.integers = tuple(d is decode_uvarint or d is decode_varint for d in decoders)
        #: Generated converters of cached layouts, by NULLs and 3..10-byte integer sizes.
        self.variants: dict[tuple[int, ...], _Convert] = {}
        #: Generated slicers of uncached one-byte-length chunks, without and with NULLs.
        tables = _varint_tables()
        self.slicer = _generated_slicer(names, decoders, tables, False)
        self.null_slicer = _generated_slicer(names, decoders, tables, True)
        #: The generated slicer of a chunk whose lengths are read already (some take 2+ bytes).
        self.list_slicer = _generated_list_slicer(names, decoders, tables)
        # Rows whose lengths are all one-byte varints are keyed by exactly ``count`` bytes;
        # other length chunks are found with this regex (``count`` varints) and keyed whole.
        self.chunk_re = _varints_re(self.count)
        self.layouts: dict[bytes, _Layout] = {}
        self.long_layouts: dict[bytes, _Layout] = {}
        #: Sightings of uncached length chunks: a Struct is compiled only for one that repeats.
        self.seen: dict[bytes, int] = {}


_COMPILED: Final[dict[tuple[tuple[str, ...], tuple[ValueDecoder, ...]], _Compiled]] = {}


def _compiled(names: tuple[str, ...], decoders: tuple[ValueDecoder, ...]) -> _Compiled:
    found = _COMPILED.get((names, decoders))
    if found is None:
        if len(_COMPILED) >= _FAST_LIMIT:
            _COMPILED.clear()
        found = _COMPILED[(names, decoders)] = _Compiled(names, decoders)
    return found


class _Shape:
    """One column-group header as it appears in messages of one decoder: its bytes, what it
    compiles to, and the RowChange templates (TableInfo, op, flags) of the rows it sources."""

    __slots__ = ("compiled", "count", "group", "handle_key_only", "header", "header_len", "layouts", "templates")

    def __init__(self, group: Group, header: bytes) -> None:
        #: ``uvarint count ‖ names ‖ types ‖ flags`` (everything after the group type byte).
        self.header = header
        self.header_len = len(header)
        self.group = group
        decoders = tuple(value_decoder(t, f) for t, f in zip(group.types, group.flags))
        self.compiled = _compiled(tuple(group.names), decoders)
        self.count = self.compiled.count
        self.layouts = self.compiled.layouts
        self.handle_key_only = all(f & ColumnFlag.HANDLE_KEY for f in group.flags)
        #: (schema, table, partition, op code) → a RowChange carrying everything but ts and images.
        self.templates: dict[tuple[str, str, int, int], RowChange] = {}


#: (schema, table, partition) of a row, names resolved ("" for null).
_Context = tuple[str, str, int]
#: Placeholder template before the first row of an op (never used: the shape check fails first).
_NO_ROW: Final = RowChange(op=Op.INSERT, schema="", table="", commit_ts=0)


class FastPath:
    """Row-only craft messages decoded with caches (see the module docstring); None = use the reference path."""

    __slots__ = ("_last", "_shapes", "_tables", "_terms", "_varint")

    def __init__(self, tables: TableCache) -> None:
        self._tables = tables
        self._varint = _varint_tables()
        #: (header bytes, term dictionary bytes) → shape; the dictionary gives the names.
        self._shapes: dict[tuple[bytes, bytes], _Shape] = {}
        #: Term dictionary bytes → terms plus a trailing "" (so id -1 reads as "", §3.2 null).
        self._terms: dict[bytes, tuple[str, ...]] = {}
        #: The last message's dictionary and last shape: the next message usually starts with it.
        self._last: tuple[bytes, _Shape | None] = (b"", None)

    def _zigzags(self, region: bytes) -> list[int] | None:
        """The §3.1 zigzag varints that make up ``region`` exactly (None if it ends mid-varint).

        C calls only: one-byte varints directly; 1- and 2-byte ones through one struct read (each
        byte classified "B"/"c", b"cB" → "H"); longer ones through _VARINT_RE.
        """
        if not region:
            return []
        if region[-1] >= 0x80:
            return None
        if region.isascii():  # every byte < 0x80: all one-byte varints
            return list(map(_ZIGZAG1.__getitem__, region))
        codes = region.translate(_VARINT_CODES).replace(b"cB", b"H")
        if b"c" not in codes:
            return list(map(self._varint.coded_zigzags.__getitem__, struct.unpack(b"<" + codes, region)))
        return list(map(self._varint.zigzags.__getitem__, _VARINT_RE.findall(region)))

    def _header(self, region: bytes, count: int, terms: tuple[str, ...]) -> tuple[list[int], list[_Context]] | None:
        """§3.2 headers of ``count`` row events: their commit ts and contexts; None if anything
        else (other event types, a bad term id, a partition beyond int64, stray bytes)."""
        if not region or region[-1] >= 0x80:
            return None
        nterms = len(terms) - 1
        # Usually only the first commit ts takes several bytes, and a message holds rows of one
        # table and partition: every delta of the partition, schema and table chunks is 0.
        first = region.translate(_VARINT_CODES).find(b"B") + 1
        rest = region[first:]
        n = count
        if len(rest) == 5 * n - 1 and rest.isascii():
            if rest.count(EVENT_ROW, n - 1, 2 * n - 1) != n:
                return None  # DDL and resolved events take the reference path
            first_ts = (self._varint.uvarints[region[:first]] if not 3 <= first <= MAX_VARINT_LEN
                        else _long_varints(False)[first](region, 0))
            commit_ts = list(accumulate(rest[:n - 1], initial=first_ts))
            ids = rest[2 * n - 1:]
            if ids.count(0, 1, n) + ids.count(0, n + 1, 2 * n) + ids.count(0, 2 * n + 1) == 3 * n - 3:
                schema, table = _ZIGZAG1[ids[n]], _ZIGZAG1[ids[2 * n]]
                if not (NULL_ID <= schema < nterms and NULL_ID <= table < nterms):
                    return None
                contexts = [(terms[schema], terms[table], _ZIGZAG1[ids[0]])] * n
            else:
                found = self._contexts(list(map(_ZIGZAG1.__getitem__, ids)), n, terms)
                if found is None:
                    return None
                contexts = found
        else:
            tokens = _VARINT_RE.findall(region)
            if len(tokens) != 5 * n:
                return None
            uvarints = self._varint.uvarints.__getitem__
            if list(map(uvarints, tokens[n:2 * n])).count(EVENT_ROW) != n:
                return None
            commit_ts = list(accumulate(map(uvarints, tokens[:n])))
            found = self._contexts(list(map(self._varint.zigzags.__getitem__, tokens[2 * n:])), n, terms)
            if found is None:
                return None
            contexts = found
        if commit_ts[-1] > MASK64:  # delta uvarints sum mod 2**64 (never decreasing before that)
            commit_ts = [v & MASK64 for v in commit_ts]
        return commit_ts, contexts

    @staticmethod
    def _contexts(zigzags: list[int], count: int, terms: tuple[str, ...]) -> list[_Context] | None:
        # The partition, schema and table delta varint chunks (§3.2), any values.
        partitions = list(accumulate(zigzags[:count]))
        schemas = list(accumulate(zigzags[count:2 * count]))
        tables = list(accumulate(zigzags[2 * count:]))
        nterms = len(terms) - 1
        if (min(partitions) < INT64_MIN or max(partitions) > INT64_MAX
                or min(schemas) < NULL_ID or max(schemas) >= nterms or min(tables) < NULL_ID
                or max(tables) >= nterms):
            return None  # wrapped partitions, bad term ids: reference path
        return list(zip(map(terms.__getitem__, schemas), map(terms.__getitem__, tables), partitions))

    def decode(self, buf: bytes) -> list[Event] | None:
        """The events of a rows-only message, or None (any other shape, anything suspicious)."""
        # §3.2: uvarint version (>= 1; one byte here) ... reversed-uvarint(len(size tables)).
        size = len(buf)
        if size < 3 or not 0 < buf[0] < 0x80:
            return None
        end = size - 1
        tables_size = buf[end]
        if tables_size >= 0x80:  # a multi-byte trailer: big batches
            trailer = CraftReader(buf, 1)
            tables_size = trailer.reversed_uvarint()
            end = trailer.end
        tables_start = end - tables_size
        if tables_start < 1:
            return None
        # Size tables: [header, dictionary], [body per event], then [group sizes] per row event;
        # each "uvarint len ‖ delta varints". All are read as zigzag varints: a uvarint u is the
        # zigzag z with u = 2z (z >= 0) or -2z-1, so len 1 reads as -1 and len 2 as 1.
        sizes = self._zigzags(buf[tables_start:end])
        if sizes is None:
            return None
        nsizes = len(sizes)
        if nsizes < 5 or sizes[0] != 1:
            return None
        count = 2 * sizes[3] if sizes[3] >= 0 else -2 * sizes[3] - 1
        j = 4 + count
        if count == 0 or j > nsizes:
            return None
        header_size = sizes[1]
        dict_size = header_size + sizes[2]
        body_sizes = list(accumulate(sizes[4:j]))
        bodies_size = sum(body_sizes)
        if (header_size < 0 or dict_size < 0 or min(body_sizes) <= 0
                or header_size + bodies_size + dict_size != tables_start - 1):
            return None
        # Term dictionary (§3.2), cached by its bytes.
        dict_start = 1 + header_size + bodies_size
        dict_bytes = buf[dict_start:dict_start + dict_size]
        terms = self._terms.get(dict_bytes)
        if terms is None:
            terms = self._parse_terms(buf, dict_start, dict_size)
        header = self._header(buf[1:1 + header_size], count, terms)
        if header is None:
            return None
        commit_ts, contexts = header
        # Bodies. Everything per row is inline (no calls but the converters and cache misses):
        # the last shape is remembered (consecutive groups usually share it), and the last
        # template per op (consecutive rows usually share table and op).
        events: list[Event] = []
        append = events.append
        replace = _replace
        startswith = buf.startswith
        layout: _Layout | None
        last_dict, shape = self._last
        if last_dict != dict_bytes:
            shape = None
        insert_shape = update_shape = delete_shape = None
        insert_context = update_context = delete_context = None
        insert = update = delete = _NO_ROW
        sizes += (0, 0, 0)  # padding: a short table reads as a bad one (below) instead of IndexError
        offset = 1 + header_size
        for body_size, ts, context in zip(body_sizes, commit_ts, contexts):
            body_end = offset + body_size
            # This row's group sizes table: len 1 (insert/delete, reads -1) or 2 (update, reads 1).
            if sizes[j] == -1:
                # One group (§3.2 column group: u8 type ‖ header ‖ nullable bytes chunk of values).
                if offset + sizes[j + 1] != body_end:
                    return None
                j += 2
                if shape is None or not startswith(shape.header, offset + 1):
                    shape = self._shape(buf, offset, body_end, dict_bytes, terms)
                    if shape is None:
                        return None
                at = offset + 1 + shape.header_len
                layout = shape.layouts.get(buf[at:at + shape.count])
                if layout is not None:
                    unpack, chunk_size, values_size, convert = layout
                    at += chunk_size
                    if at + values_size != body_end:
                        return None
                    image = convert(unpack(buf, at))
                else:
                    found = self._image(shape.compiled, buf, at, body_end)
                    if found is None:
                        return None
                    image = found
                # events.row_event: a new image alone is an insert, an old image alone a delete.
                if buf[offset] == GROUP_NEW:
                    if shape is not insert_shape or context is not insert_context:
                        insert = self._template(shape, context, 0)
                        insert_shape, insert_context = shape, context
                    append(replace(insert, commit_ts=ts, columns=image))
                elif buf[offset] == GROUP_OLD:
                    if shape is not delete_shape or context is not delete_context:
                        delete = self._template(shape, context, 2)
                        delete_shape, delete_context = shape, context
                    append(replace(delete, commit_ts=ts, pre_columns=image))
                else:
                    return None
            elif sizes[j] == 1:
                # Two groups: new and old, in either order (an update).
                middle = offset + sizes[j + 1]
                if not offset < middle < body_end or middle + sizes[j + 1] + sizes[j + 2] != body_end:
                    return None
                j += 3
                new = old = None
                old_shape = None
                start = offset
                for group_end in (middle, body_end):
                    if shape is None or not startswith(shape.header, start + 1):
                        shape = self._shape(buf, start, group_end, dict_bytes, terms)
                        if shape is None:
                            return None
                    at = start + 1 + shape.header_len
                    layout = shape.layouts.get(buf[at:at + shape.count])
                    if layout is not None:
                        unpack, chunk_size, values_size, convert = layout
                        at += chunk_size
                        if at + values_size != group_end:
                            return None
                        image = convert(unpack(buf, at))
                    else:
                        found = self._image(shape.compiled, buf, at, group_end)
                        if found is None:
                            return None
                        image = found
                    group_type = buf[start]
                    if group_type == GROUP_NEW and new is None:
                        new = image
                    elif group_type == GROUP_OLD and old is None:
                        old = image
                        old_shape = shape
                    else:
                        return None  # unknown or repeated group type
                    start = group_end
                # Like the Go decoder, the table comes from the old image.
                if old_shape is not update_shape or context is not update_context:
                    assert old_shape is not None
                    update = self._template(old_shape, context, 1)
                    update_shape, update_context = old_shape, context
                append(replace(update, commit_ts=ts, columns=new, pre_columns=old))
            else:
                return None
            offset = body_end
        if j != nsizes:
            return None
        self._last = (dict_bytes, shape)
        return events

    def _parse_terms(self, buf: bytes, start: int, size: int) -> tuple[str, ...]:
        # The reference reading of the dictionary (§3.2), done once per distinct dictionary.
        terms: tuple[str, ...] = ()
        if size:
            reader = CraftReader(buf, start, start + size)
            terms = tuple(go_string(t) for t in reader.string_chunk(reader.count("term")))
            reader.expect_end("term dictionary")
        if len(self._terms) >= _FAST_LIMIT:
            self._terms.clear()
        self._terms[buf[start:start + size]] = found = (*terms, "")
        return found

    def _shape(self, buf: bytes, start: int, end: int, dict_bytes: bytes, terms: tuple[str, ...]) -> _Shape | None:
        """The shape of the group at ``start``: a known header, or the reference reading of a new one."""
        shapes = self._shapes
        # The header is ``uvarint count`` then 3 x count varints: regexes find its end without
        # decoding it (a count that cannot fit is left to the reference reading below).
        match = _VARINT_RE.match(buf, start + 1, end)
        if match is not None:
            count = self._varint.uvarints[match.group()]
            if 3 * count <= end - match.end():
                match = _varints_re(3 * count).match(buf, match.end(), end)
                if match is not None:
                    shape = shapes.get((buf[start + 1:match.end()], dict_bytes))
                    if shape is not None:
                        return shape
        # _parse_group's reading of the header, once per distinct header.
        reader = CraftReader(buf, start + 1, end)
        count = reader.count("column")
        if count == 0:
            return None
        ids = reader.delta_varint_chunk(count)
        types = reader.uvarint_chunk(count)
        flags = reader.uvarint_chunk(count)
        if min(ids) < 0 or max(ids) >= len(terms) - 1 or max(types) > 0xFF:
            return None
        names = [terms[i] for i in ids]
        if len(set(names)) != count:
            return None
        shape = _Shape(Group(0, names, types, flags, [], []), buf[start + 1:reader.pos])
        if len(shapes) >= _FAST_LIMIT:
            shapes.clear()
        shapes[(shape.header, dict_bytes)] = shape
        return shape

    def _image(self, compiled: _Compiled, buf: bytes, at: int, end: int) -> Row | None:
        """The row image of a group whose value layout is not cached (§3.1 nullable bytes chunk at
        ``at``): sliced the first time its lengths are seen (compiling a Struct costs several
        slicings, and with many variable-length columns most length combinations never repeat),
        compiled and cached when they repeat."""
        key = buf[at:at + compiled.count]
        seen = compiled.seen
        found: _Layout | None = None
        if len(key) == compiled.count and key.isascii():  # every length a one-byte varint
            sightings = seen.get(key, 0)
            if sightings < _COMPILE_AFTER:
                if len(seen) >= _SEEN_LIMIT:
                    seen.clear()
                seen[key] = sightings + 1
                image = (compiled.null_slicer if 1 in key else compiled.slicer)(buf, at, end)  # 1: a NULL
                if image is not None:
                    return image
        else:
            # Some length takes several bytes (a long text): read the lengths, then slice; a
            # layout is compiled only for a length chunk that keeps repeating (_layout counts).
            # The common long chunk, one 2-byte length, is found without the regex: bytes equal
            # to a cached chunk are the same varints (where a varint ends is in its own bytes).
            found = compiled.long_layouts.get(buf[at:at + compiled.count + 1])
            if found is None:
                match = compiled.chunk_re.match(buf, at, end)
                if match is None:
                    return None
                key = match.group()
                found = compiled.long_layouts.get(key)
            if found is None and seen.get(key, 0) < _COMPILE_AFTER:
                if len(seen) >= _SEEN_LIMIT:
                    seen.clear()
                seen[key] = seen.get(key, 0) + 1
                codes = key.translate(_VARINT_CODES).replace(b"cB", b"H")
                if b"c" not in codes:  # 1- and 2-byte lengths (else a value of 8 KiB+: _layout)
                    return compiled.list_slicer(buf, at, end, len(key), struct.unpack(b"<" + codes, key))
        layout = found if found is not None else self._layout(compiled, buf, at, end)
        if layout is None:
            return None
        unpack, chunk_size, values_size, convert = layout
        at += chunk_size
        if at + values_size != end:
            return None
        return convert(unpack(buf, at))

    def _layout(self, compiled: _Compiled, buf: bytes, at: int, end: int) -> _Layout | None:
        """The value layout (a Struct and a converter) of the §3.1 nullable bytes chunk at ``at``."""
        count = compiled.count
        key = buf[at:at + count]
        cache = compiled.layouts
        if len(key) != count or not key.isascii():  # some length takes several bytes
            match = compiled.chunk_re.match(buf, at, end)
            if match is None:
                return None
            key = buf[at:match.end()]
            cache = compiled.long_layouts
            found = cache.get(key)
            if found is not None:
                return found
            lengths = list(map(self._varint.zigzags.__getitem__, _VARINT_RE.findall(key)))
        else:
            lengths = list(map(_ZIGZAG1.__getitem__, key))
        values_size = sum(size for size in lengths if size > 0)
        # CraftReader.nullable_lengths: -1 = NULL, nothing below, nothing above MaxInt32.
        if min(lengths) < -1 or max(lengths) > MAX_INT32 or values_size > end - at - len(key):
            return None
        converters = tuple(_ALWAYS_NONE if size < 0 else c for size, c in zip(lengths, compiled.converters))
        sightings = compiled.seen.get(key, 0) if cache is compiled.long_layouts else _COMPILE_AFTER
        if sightings < _COMPILE_AFTER:
            # A long length chunk not seen often yet: slice (see _image), do not compile.
            if len(compiled.seen) >= _SEEN_LIMIT:
                compiled.seen.clear()
            compiled.seen[key] = sightings + 1
            spans = list(pairwise(accumulate((max(size, 0) for size in lengths), initial=0)))
            return (functools.partial(_slice_values, spans), len(key), values_size,
                    functools.partial(_convert_each, compiled.names, converters))
        # A float64 column of 8 bytes is read by the Struct itself ("d" = F64, §3.1 float64 LE).
        floats = [size == 8 and converter is _f64_exact for size, converter in zip(lengths, converters)]
        sizes = self._variant_sizes(compiled, lengths)
        convert: _Convert
        if sizes is not None and all(size in (8, -1) for size, decoder in zip(lengths, compiled.decoders)
                                     if decoder is decode_float64):
            # Every float NULL or a "d": a generated converter, which wants NULLs left out and
            # its 3..10-byte integers in pieces (_integer_codes). (A float of another length goes
            # to the generic converter, whose _f64_exact refuses it.)
            convert = self._variant(compiled, sizes)
            codes = ["" if variant < 0 else "d" if is_float else _integer_codes(variant) if variant else f"{size}s"
                     for size, is_float, variant in zip(lengths, floats, sizes)]
        else:
            codes = ["d" if is_float else f"{max(size, 0)}s" for size, is_float in zip(lengths, floats)]
            convert = functools.partial(
                _convert_each, compiled.names, tuple(float if f else c for f, c in zip(floats, converters)))
        unpack = struct.Struct("<" + "".join(codes)).unpack_from
        layout: _Layout = (unpack, len(key), values_size, convert)
        if len(cache) >= _FAST_LIMIT:
            cache.clear()
        cache[key] = layout
        return layout

    @staticmethod
    def _variant_sizes(compiled: _Compiled, lengths: Sequence[int]) -> tuple[int, ...] | None:
        # Which generated converter serves these value lengths: NULLs (-1) and the sizes of the
        # 3..10-byte integers (shorter ones are whole-value table hits; longer ones fail those).
        sizes = tuple(-1 if size < 0 else size if integer and 3 <= size <= MAX_VARINT_LEN else 0
                      for size, integer in zip(lengths, compiled.integers))
        if sizes not in compiled.variants and len(compiled.variants) >= _MAX_VARIANTS:
            return None  # too many combinations: the generic converter
        return sizes

    def _variant(self, compiled: _Compiled, sizes: tuple[int, ...]) -> _Convert:
        convert = compiled.variants.get(sizes)
        if convert is None:
            convert = compiled.variants[sizes] = _generated_converter(
                compiled.names, compiled.decoders, self._varint, sizes)
        return convert

    def _template(self, shape: _Shape, context: _Context, code: int) -> RowChange:
        # Everything events.row_event derives from the table and the op, computed once per shape.
        key = (*context, code)
        template = shape.templates.get(key)
        if template is None:
            schema, table, partition = context
            op = _OPS[code]
            entry = self._tables.get(schema, table, partition, shape.group)
            template = RowChange(
                op=op, schema=schema, table=table, commit_ts=0, table_id=0,
                physical_table_id=partition if partition >= 0 else 0, row_id=0, table_info=entry.table_info,
                handle_key_only=op is Op.DELETE and shape.handle_key_only,
            )
            if len(shape.templates) >= _FAST_LIMIT:
                shape.templates.clear()
            shape.templates[key] = template
        return template


