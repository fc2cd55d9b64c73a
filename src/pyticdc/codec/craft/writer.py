"""The Craft encoder's fast path: generated per-table image writers and one-table message assembly.

The reference encoder (encoder._group + framing.assemble) is the specification in code and the
oracle: tests check this path writes the same bytes on generated inputs. Here:

* ``image_writer`` compiles, per column layout (names and value encoders, shared by every encoder
  of the process), one function writing a full row image's §3.1 nullable bytes chunk (lengths,
  then values) with each column's encoding chosen once: integers (any size up to 64 bits) and
  lengths from precomputed varint tables, bytes as they are, text by ``str.encode``, FLOAT and
  DOUBLE by struct; anything else (other value types, out-of-range or non-finite numbers) goes
  through the reference value encoder, so its bytes and errors are the reference's own;
* ``rows_message`` writes a rows message whose rows all belong to one table: the term
  dictionary and the column group header are computed once per (schema, table, layout) by the
  reference's term numbering (framing._Terms) and reused.

Whatever the writer does not handle (a partial image, a missing or unknown column, a value of an
unexpected type) raises, and the encoder takes the reference path for that row or message. Column
names never enter generated source: the values are fetched by an ``operator.itemgetter`` of them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from pyticdc.codec._fastpath import compile_function
from pyticdc.codec.craft.framing import _Terms, utf8
from pyticdc.codec.craft.message import EVENT_ROW, GROUP_NEW, GROUP_OLD, INT64_MAX, INT64_MIN, MASK64, VERSION
from pyticdc.codec.craft.primitives import F64, CraftWriter, uvarint_bytes, varint_bytes
from pyticdc.codec.craft.values import encode_null, value_encoder
from pyticdc.model import ColumnFlag, TypeCode, Value

__all__ = [
    "FastRow", "ImageWriter", "MessageConstants", "cached_image_writer", "image_writer", "message_constants",
    "rows_message",
]

#: A column's reference value encoder (encode_null for the types that never carry a value).
ColumnEncoder = Callable[[Any], bytes | None]
#: A full row image → (its nullable bytes chunk, the total size of its values).
ImageWriter = Callable[[Mapping[str, Value]], tuple[bytes, int]]

#: Integers whose varint fits two bytes are written from these tables (§3.1 uvarint / zigzag).
_SMALL: Final = 1 << 13
_UVARINTS: Final = tuple(uvarint_bytes(v) for v in range(2 * _SMALL))
_VARINTS: Final = tuple(varint_bytes(v) for v in range(-_SMALL, _SMALL))
#: Value length → its zigzag varint (a nullable bytes chunk length), for lengths below 8 KiB.
_LENGTHS: Final = tuple(varint_bytes(n) for n in range(_SMALL))
#: Small integers' (length code, varint) for the nullable bytes chunk, in one lookup.
_UVARINT_PAIRS: Final = tuple((_LENGTHS[len(b)], b) for b in _UVARINTS)
_VARINT_PAIRS: Final = tuple((_LENGTHS[len(b)], b) for b in _VARINTS)
#: The low 14 bits of a uvarint of 3 or 4 bytes: its first two bytes (both continuation bytes), so
#: that uvarint(u) = _CONT14[u & 0x3FFF] + _UVARINTS[u >> 14] for 2**14 <= u < 2**28.
_CONT14: Final = tuple(bytes(((u & 0x7F) | 0x80, (u >> 7) | 0x80)) for u in range(2 * _SMALL))
_BIG: Final = 1 << 28
_VERSION: Final = uvarint_bytes(VERSION)
#: The event type chunk of up to 64 row events (§3.2: uvarint 1 each).
_ROW_TYPES: Final = bytes((EVENT_ROW,)) * 64
_LIMIT: Final = 256  # compiled layouts and message constants kept per process (cleared when full)

# The reference value encoders by identity, to pick each column's inline expression.
def _reference(type_code: int, flag: int) -> ColumnEncoder:
    encoder = value_encoder(type_code, flag)
    assert encoder is not None
    return encoder


_TEXT, _BYTES, _UVARINT, _VARINT, _DOUBLE, _FLOAT = (_reference(t, f) for t, f in (
    (TypeCode.DATE, 0), (TypeCode.STRING, 0), (TypeCode.LONGLONG, ColumnFlag.UNSIGNED), (TypeCode.LONGLONG, 0),
    (TypeCode.DOUBLE, 0), (TypeCode.FLOAT, 0)))
_F32: Final = struct.Struct("<f")
#: The largest float32 (FLT_MAX): every float within ±_F32_MAX rounds to a finite float32.
_F32_MAX: Final = 3.4028234663852886e38


def _big_uvarint(u: str) -> str:
    """The expression of uvarint ``u`` for 2**14 <= u < 2**64: 14-bit pieces from _CONT14, the
    rest from _UVARINTS (no loop, no call)."""
    pieces = []
    for size in range(1, 5):
        low = " + ".join(f"CONT14[{u} >> {14 * k} & 0x3FFF]" if k else f"CONT14[{u} & 0x3FFF]" for k in range(size))
        pieces.append((f"{low} + UVARINTS[{u} >> {14 * size}]", f"{u} < {1 << (14 * (size + 1))}"))
    # The last, the usual one for 64-bit values: two 28-bit halves first, so that the other
    # operations work on one-digit ints.
    expression = (f"CONT14[(lo := {u} & 0xFFFFFFF) & 0x3FFF] + CONT14[lo >> 14] + "
                  f"CONT14[(mid := {u} >> 28 & 0xFFFFFFF) & 0x3FFF] + CONT14[mid >> 14] + UVARINTS[{u} >> 56]")
    for value, condition in reversed(pieces[:-1]):
        expression = f"{value} if {condition} else {expression}"
    return f"({expression})"


def _column(encoder: ColumnEncoder, i: int) -> list[str]:
    """Statements turning ``v{i}`` (the row's value) into its bytes ``v{i}`` and length code ``l{i}``."""
    v, length, other = f"v{i}", f"l{i}", f"enc{i}"
    null = [f"if {v} is None:", f"    {length} = b'\\x01'; {v} = b''"]
    measured = f"    {length} = LENGTHS[len({v})]"
    general = [f"    {v} = {other}({v})", measured]
    if encoder is encode_null:  # NULL, GEOMETRY, unknown types: never a value (§3.2)
        return [f"{length} = b'\\x01'; {v} = b''"]
    if encoder is _BYTES:
        return [*null, "else:", f"    if type({v}) is not bytes: {v} = {other}({v})", measured]
    if encoder is _TEXT:
        # str.encode unbound: UTF-8 of a str (or subclass), a TypeError for anything else.
        return [*null, "else:", f"    {v} = str_encode({v})", measured]
    if encoder is _UVARINT:
        return [*null, f"elif type({v}) is int and 0 <= {v} < {2 * _SMALL}:",
                f"    {length}, {v} = UPAIRS[{v}]",
                f"elif type({v}) is int and 0 <= {v} <= {MASK64}:",
                f"    {v} = {_big_uvarint(v)}", f"    {length} = LENGTHS[len({v})]",
                "else:", *general]
    if encoder is _VARINT:
        return [*null, f"elif type({v}) is int and {-_SMALL} <= {v} < {_SMALL}:",
                f"    {length}, {v} = VPAIRS[{v} + {_SMALL}]",
                f"elif type({v}) is int and {INT64_MIN} <= {v} <= {INT64_MAX}:",
                f"    z = ({v} << 1) ^ ({v} >> 63); {v} = {_big_uvarint('z')}",
                f"    {length} = LENGTHS[len({v})]",
                "else:", *general]
    if encoder is _DOUBLE:
        # §1.1: NaN and ±Inf are written as 0 (x - x is NaN exactly for them): enc_double does that.
        return [*null, f"elif type({v}) is float and {v} - {v} == 0.0:", f"    {length} = b'\\x10'; {v} = pack({v})",
                "else:", *general]
    if encoder is _FLOAT:
        # §3.2 FLOAT: the float32 nearest the value, widened; a value beyond the float32 range
        # (it overflows to ±Inf, written as 0) or NaN is the reference encoder's.
        return [*null, f"elif type({v}) is float and {-_F32_MAX} <= {v} <= {_F32_MAX}:",
                f"    {length} = b'\\x10'; {v} = pack(f32_unpack(f32_pack({v}))[0])", "else:", *general]
    return [*null, "else:", *general]  # anything new: the reference encoder


class _LengthCodes(dict[int, bytes]):
    """Value length → its zigzag varint (§3.1 nullable bytes chunk); those of 8 KiB and more are
    computed by ``__missing__`` (a hit is one C dict lookup)."""

    __slots__ = ()

    __missing__ = staticmethod(varint_bytes)


_LENGTH_CODES: Final = _LengthCodes(enumerate(_LENGTHS))


def image_writer(columns: Sequence[tuple[str, ColumnEncoder]]) -> ImageWriter:
    """The generated writer of a full image of these (name, value encoder) columns, in order."""
    count = len(columns)
    values = ", ".join(f"v{i}" for i in range(count)) + ","
    lines = [f"if len(row) != {count}: raise KeyError('not a full image')", f"{values} = get(row)"]
    namespace: dict[str, Any] = {
        "UVARINTS": _UVARINTS, "VARINTS": _VARINTS, "CONT14": _CONT14, "LENGTHS": _LENGTH_CODES, "pack": F64.pack,
        "f32_pack": _F32.pack, "f32_unpack": _F32.unpack, "str_encode": str.encode,
        "UPAIRS": _UVARINT_PAIRS, "VPAIRS": _VARINT_PAIRS,
        # One C call fetches every value (KeyError for a missing column: the reference path).
        "get": itemgetter(*[name for name, _ in columns]) if count > 1 else lambda row: (row[columns[0][0]],),
    }
    for i, (_, encoder) in enumerate(columns):
        namespace[f"enc{i}"] = encoder
        lines += _column(encoder, i)
    lines.append(f"values = b''.join(({values}))")
    lines.append(f"return b''.join(({', '.join(f'l{i}' for i in range(count))}, values)), len(values)")
    source = "def write(row):\n" + "".join(f"    {line}\n" for line in lines)
    writer: ImageWriter = compile_function(source, "write", namespace)
    return writer


_WRITERS: Final[dict[tuple[tuple[str, ColumnEncoder], ...], ImageWriter]] = {}


def cached_image_writer(columns: tuple[tuple[str, ColumnEncoder], ...]) -> ImageWriter:
    """image_writer, compiled once per column layout in the process."""
    writer = _WRITERS.get(columns)
    if writer is None:
        if len(_WRITERS) >= _LIMIT:
            _WRITERS.clear()
        writer = _WRITERS[columns] = image_writer(columns)
    return writer


class MessageConstants:
    """What every rows message of one (schema, table, column layout) shares: its term ids, term
    dictionary and column group headers, numbered as framing.assemble numbers them."""

    __slots__ = ("dictionary", "new_header", "old_header", "row_size", "schema_id", "table_id")

    def __init__(self, schema: str, table: str, names: Sequence[str], blob: bytes) -> None:
        terms = _Terms()
        # assemble: all schemas (header order), then all tables, then the column names.
        schema_id = terms.nullable(schema)
        table_id = terms.nullable(table)
        header = CraftWriter()
        header.uvarint(len(names))
        header.delta_varint_chunk([terms.id(name) for name in names])
        header.raw(blob)
        group_header = header.getvalue()
        self.new_header = bytes((GROUP_NEW,)) + group_header
        self.old_header = bytes((GROUP_OLD,)) + group_header
        dictionary = CraftWriter()
        dictionary.uvarint(len(terms.terms))
        dictionary.string_chunk([utf8(t, "name") for t in terms.terms])
        self.dictionary = dictionary.getvalue()
        #: The schema and table ids as varints (§3.2 header chunks).
        self.schema_id = varint_bytes(schema_id)
        self.table_id = varint_bytes(table_id)
        #: §3.3 estimatedSize of a row's header: 32 + len(schema) + len(table) (appendHeader).
        self.row_size = 32 + len(utf8(schema, "schema")) + len(utf8(table, "table"))


_CONSTANTS: Final[dict[tuple[str, str, tuple[str, ...], bytes], MessageConstants]] = {}


def message_constants(schema: str, table: str, names: Sequence[str], blob: bytes) -> MessageConstants:
    """MessageConstants, computed once per (schema, table, names, type/flag blob) in the process."""
    key = (schema, table, tuple(names), blob)
    found = _CONSTANTS.get(key)
    if found is None:
        if len(_CONSTANTS) >= _LIMIT:
            _CONSTANTS.clear()
        found = _CONSTANTS[key] = MessageConstants(schema, table, names, blob)
    return found


def _varint(value: int) -> bytes:
    """§3.1 varint, from the table when it takes one or two bytes."""
    return _VARINTS[value + _SMALL] if -_SMALL <= value < _SMALL else varint_bytes(value)


#: A row on the fast path: commit ts, partition, image chunks (new, old), the message constants of
#: its table, §3.3 estimatedSize contribution.
FastRow = tuple[int, int, tuple[bytes | None, bytes | None], MessageConstants, int]


def rows_message(constants: MessageConstants, rows: Sequence[FastRow]) -> bytes:
    """A rows message of one table (§3.2): the bytes framing.assemble writes for these rows
    (commit ts, partition, (new chunk, old chunk)), whose chunks are image_writer chunks of the
    constants' column layout."""
    count = len(rows)
    zeros = b"\x00" * (count - 1)
    # Headers: commit ts (delta uvarints), event types, partitions, schema and table ids (delta
    # varints: one schema and one table, so the first id and then deltas of 0).
    varints = _VARINTS
    previous = 0
    ts_parts = []
    for row in rows:
        commit_ts = row[0]
        delta = commit_ts - previous
        if 0 <= delta < _BIG:  # a TSO's deltas usually fit 4 bytes
            ts_parts.append(_UVARINTS[delta] if delta < 2 * _SMALL
                            else _CONT14[delta & 0x3FFF] + _UVARINTS[delta >> 14])
        else:
            ts_parts.append(uvarint_bytes(delta & MASK64))  # Go's uint64 wraps a decreasing ts
        previous = commit_ts
    partitions = [row[1] for row in rows]
    first_partition = partitions[0]
    if partitions.count(first_partition) == count:  # one partition (or none, -1): deltas of 0
        partition_chunk = _varint(first_partition) + zeros
    else:
        writer = CraftWriter()
        writer.delta_varint_chunk(partitions)
        partition_chunk = writer.getvalue()
    header = b"".join((b"".join(ts_parts), _ROW_TYPES[:count] if count <= 64 else bytes((EVENT_ROW,)) * count,
                       partition_chunk, constants.schema_id, zeros, constants.table_id, zeros))
    new_header = constants.new_header
    old_header = constants.old_header
    new_size = len(new_header)
    old_size = len(old_header)
    parts: list[bytes] = [_VERSION, header]
    body_parts: list[bytes] = []
    group_tables: list[bytes] = []
    previous = 0
    for row in rows:
        new, old = row[2]
        # §3.2: the new group first, then the old one; a row's group sizes table follows.
        if new is not None:
            first = new_size + len(new)
            parts += (new_header, new)
            if old is not None:
                second = old_size + len(old)
                parts += (old_header, old)
                size = first + second
                group_tables += (b"\x02", varints[first + _SMALL] if first < _SMALL else varint_bytes(first),
                                 _varint(second - first))
            else:
                size = first
                group_tables += (b"\x01", varints[first + _SMALL] if first < _SMALL else varint_bytes(first))
        elif old is not None:
            size = old_size + len(old)
            parts += (old_header, old)
            group_tables += (b"\x01", varints[size + _SMALL] if size < _SMALL else varint_bytes(size))
        else:  # pragma: no cover - the encoder drops rows without images
            raise ValueError("a row without images")
        delta = size - previous
        body_parts.append(varints[delta + _SMALL] if -_SMALL <= delta < _SMALL else varint_bytes(delta))
        previous = size
    dictionary = constants.dictionary
    parts.append(dictionary)
    header_size = len(header)
    tables = b"".join((b"\x02", _varint(header_size), _varint(len(dictionary) - header_size),
                       uvarint_bytes(count), *body_parts, *group_tables))
    parts += (tables, uvarint_bytes(len(tables))[::-1])
    return b"".join(parts)
