"""The fast path of Simple Avro DML messages: a per-table reader generated once per table version.

Only the union branch TiCDC writes for each column's type is read here; everything else is
declined to the reference path (``pyticdc.codec.simple.fastpath`` states the contract).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

import msgspec

from pyticdc.codec._fastpath import Decline, compile_function, in_form, literal, native
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.avro import DML_HEAD, long_bytes
from pyticdc.codec.simple.fastpath import compiled
from pyticdc.codec.simple.message import MASK64, u64_as_i64
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnInfo, Op, Row, RowChange, TableInfo, Value

__all__ = ["AvroMessageReader", "AvroPlan", "avro_long", "avro_plan"]

_MASK64: Final = MASK64
_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")

# Value handlers of the Avro readers, per column: the union branch TiCDC writes for the column's
# type (avro.go encodeValue4Avro) and how from_wire turns its value into the model value.
_H_LONG: Final = 0  # long, signed: the value
_H_ULONG: Final = 1  # long or UnsignedBigint of an unsigned column: a negative int64 is the uint64
_H_F32: Final = 2  # float
_H_F64: Final = 3  # double
_H_BYTES: Final = 4  # bytes (binary charset) or string (text charset): the raw bytes
_H_TEXT: Final = 5  # string: decoded as UTF-8 (AvroReader.string keeps invalid bytes: the reference path)
_H_TIMESTAMP: Final = 6  # Timestamp{location, value}: the value
_H_UBIG: Final = 7  # UnsignedBigint of a BIGINT UNSIGNED column: as _H_ULONG, ten-byte values inline


def _avro_handler(column: ColumnInfo) -> tuple[int, int]:
    """(expected union branch byte, handler) of a column."""
    kind = V.column_kind(column)
    if kind == V.KIND_INT:
        if V.is_unsigned_bigint(column):
            return V.B_UBIGINT, _H_UBIG
        return V.B_LONG, _H_ULONG if column.is_unsigned else _H_LONG
    if kind == V.KIND_UINT:
        return V.B_LONG, _H_ULONG
    if kind == V.KIND_FLOAT:
        return V.B_FLOAT, _H_F32
    if kind == V.KIND_DOUBLE:
        return V.B_DOUBLE, _H_F64
    if kind == V.KIND_TIMESTAMP:
        return V.B_TIMESTAMP, _H_TIMESTAMP
    if kind == V.KIND_BYTES:
        return (V.B_BYTES if V.is_binary_column(column) else V.B_STRING), _H_BYTES
    return V.B_STRING, _H_TEXT


# A varint's bytes with their continuation bits dropped, per byte count (index: count).
_SEVEN_BITS: Final = tuple(int.from_bytes(b"\x7f" * n, "little") for n in range(11))
_HIGH_BITS: Final = int.from_bytes(b"\x80" * 10, "little")


def avro_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos`` and the offset after it; Decline where AvroReader.long fails."""
    # One to three bytes (ids, counters, lengths) unrolled; longer ones (TSOs, uint64s) read as
    # one little-endian integer whose 7-bit groups are packed in four shifts, not in a byte loop.
    low = buf[pos]  # IndexError past the end
    if low < 0x80:
        return (low >> 1) ^ -(low & 1), pos + 1
    middle = buf[pos + 1]
    if middle < 0x80:
        result = (low & 0x7F) | middle << 7
        return (result >> 1) ^ -(result & 1), pos + 2
    high = buf[pos + 2]
    if high < 0x80:
        result = (low & 0x7F) | (middle & 0x7F) << 7 | high << 14
        return (result >> 1) ^ -(result & 1), pos + 3
    chunk = buf[pos:pos + 10]
    x = int.from_bytes(chunk, "little")
    ends = (x & _HIGH_BITS) ^ _HIGH_BITS  # bit 7 of each byte without a continuation bit
    count = (ends & -ends).bit_length() >> 3
    if not ends or count > len(chunk):  # an 11th byte, or the end of the buffer
        raise Decline
    x &= _SEVEN_BITS[count]
    # Pack the 7-bit groups: pairs of bytes, then of 14-bit lanes, of 28-bit lanes, of 56-bit ones
    # (the first step as a subtraction: lo + hi << 8 less hi << 7 is lo + hi << 7).
    x -= (x & 0x7F007F007F007F007F00) >> 1
    x = (x & 0x00003FFF00003FFF00003FFF) | ((x >> 2) & 0x0FFFC0000FFFC0000FFFC000)
    x = (x & 0x000000000FFFFFFF000000000FFFFFFF) | ((x >> 4) & 0x00FFFFFFF000000000FFFFFFF0000000)
    x = (x & 0xFFFFFFFFFFFFFF) | ((x >> 8) & ~0xFFFFFFFFFFFFFF)
    if x >> 64:
        raise Decline
    return (x >> 1) ^ -(x & 1), pos + count


def _avro_string_end(buf: bytes, pos: int) -> tuple[int, int]:
    """(start, end) of the Avro string/bytes at ``pos``."""
    size = buf[pos]
    if size < 0x80 and not size & 1:
        pos += 1
        end = pos + (size >> 1)
    else:
        size, pos = avro_long(buf, pos)
        if size < 0:
            raise Decline
        end = pos + size
    if end > len(buf):
        raise Decline
    return pos, end


# Lengths of a one-byte Avro string/bytes length by that byte (-1: odd, negative or longer).
_SHORT_LENGTH: Final = tuple(b >> 1 if b < 0x80 and not b & 1 else -1 for b in range(256))
# Values of a one-byte zigzag varint by that byte (None from 0x80: a longer varint starts there).
_SHORT_LONG: Final[tuple[int | None, ...]] = tuple((b >> 1) ^ -(b & 1) if b < 0x80 else None for b in range(256))

# A string or bytes ``{k}`` bytes after ``pos`` (a length below 64 inline): its data is
# buf[start:pos]. No bounds check here: a length past the end leaves ``pos`` past it, and the
# next read there — a column's key (a miss: the checked any-order loop), the map's end byte
# (IndexError) — declines.
_AVRO_STRING: Final = (
    "n = slen[buf[pos + {k}]]", "if n >= 0:", "    start = pos + {k1}", "    pos = start + n",
    "elif (b := buf[pos + {k}]) & 0x81 == 0x80 and buf[pos + {k1}] < 0x80:  # two bytes, even: 64 to 8191",
    "    start = pos + {k2}", "    pos = start + (((b & 0x7F) | buf[pos + {k1}] << 7) >> 1)", "else:",
    "    start, pos = string(buf, pos + {k})",
)
# Statements decoding the value ``{k}`` bytes after ``pos`` (the key and branch byte that ``pos``
# is at, so no separate step past them) into ``x{i}``, leaving ``pos`` after the value.
_AVRO_VALUE: Final[dict[int, tuple[str, ...]]] = {
    _H_LONG: ("x{i} = zz[buf[pos + {k}]]", "if x{i} is not None:", "    pos += {k1}",
              "elif buf[pos + {k1}] < 0x80:", "    b = (buf[pos + {k}] & 0x7F) | buf[pos + {k1}] << 7",
              "    x{i} = (b >> 1) ^ -(b & 1)", "    pos += {k2}", "elif buf[pos + {k2}] < 0x80:",
              "    b = (buf[pos + {k}] & 0x7F) | (buf[pos + {k1}] & 0x7F) << 7 | buf[pos + {k2}] << 14",
              "    x{i} = (b >> 1) ^ -(b & 1)", "    pos += {k3}", "else:", "    x{i}, pos = long(buf, pos + {k})"),
    _H_F32: ("x{i} = f32(buf, pos + {k})[0]", "pos += {k4}"),
    _H_F64: ("x{i} = f64(buf, pos + {k})[0]", "pos += {k8}"),
    _H_BYTES: (*_AVRO_STRING, "x{i} = buf[start:pos]"),
    # Strict UTF-8: invalid text (UnicodeDecodeError, a ValueError) declines to the reference
    # path, which keeps its bytes as surrogates.
    _H_TEXT: (*_AVRO_STRING, "x{i} = buf[start:pos].decode()"),
    # Timestamp: the location (skipped), then the value.
    _H_TIMESTAMP: (*_AVRO_STRING, *(line.replace("{k", "{z") for line in _AVRO_STRING),
                   "x{i} = buf[start:pos].decode()"),
}
_AVRO_VALUE[_H_ULONG] = (*_AVRO_VALUE[_H_LONG], "if x{i} < 0:", "    x{i} &= 18446744073709551615")
# An UnsignedBigint's value, most often ten bytes (2**62 and above, or the int64 of 2**63 and
# above): those read inline as in avro_long, other lengths by it. A buffer ending early leaves
# ``pos`` past the end, where the next read declines.
_AVRO_VALUE[_H_UBIG] = (
    "x = from_bytes(buf[pos + {k}:pos + {k10}], 'little')", "if x & HIGH_BITS == TEN_BYTES:",
    "    x &= SEVEN_BITS_10", "    x -= (x & 0x7F007F007F007F007F00) >> 1",
    "    x = (x & 0x00003FFF00003FFF00003FFF) | ((x >> 2) & 0x0FFFC0000FFFC0000FFFC000)",
    "    x = (x & 0x000000000FFFFFFF000000000FFFFFFF) | ((x >> 4) & 0x00FFFFFFF000000000FFFFFFF0000000)",
    "    x = (x & 0xFFFFFFFFFFFFFF) | ((x >> 8) & ~0xFFFFFFFFFFFFFF)",
    "    if x >> 64:", "        raise Decline",
    "    x{i} = 18446744073709551615 ^ (x >> 1) if x & 1 else x >> 1  # the uint64 of the int64",
    "    pos += {k10}", "else:", "    x{i}, pos = long(buf, pos + {k})", "    if x{i} < 0:",
    "        x{i} &= 18446744073709551615",
)


#: Handler → its letter in the C image reader (_native.avro_image).
_NATIVE_HANDLERS: Final = {_H_LONG: b"l", _H_ULONG: b"u", _H_UBIG: b"u", _H_F32: b"f", _H_F64: b"d", _H_BYTES: b"b",
                           _H_TEXT: b"t", _H_TIMESTAMP: b"T"}


def _value_lines(i: int, k: int, handler: int) -> list[str]:
    """The statements of column ``i`` whose value starts ``k`` bytes after ``pos``."""
    offsets = {"i": i, "k": k, "k1": k + 1, "k2": k + 2, "k3": k + 3, "k4": k + 4, "k8": k + 8, "k10": k + 10,
               "z": 0, "z1": 1, "z2": 2}
    return [line.format(**offsets).replace("pos + 0]", "pos]").replace("pos + 0)", "pos)")
            for line in _AVRO_VALUE[handler]]


_AVRO_MESSAGE: Final = """
def make(template):
    seen = {}  # nine varint bytes -> a commit ts already read: the rows of a transaction share theirs
    def read(buf, f32):  # f32: as the JSON readers take it (unused)
        if buf.startswith(HEAD_ID):  # the table's own id, the common case: one prefix
            table_id = TABLE_ID
            pos = HEAD_ID_SIZE
        elif buf.startswith(HEAD):
            table_id, pos = long(buf, HEAD_SIZE)
        else:
            raise Decline
        kind = buf[pos]
        raw = buf[pos + 1:pos + 10]  # a TSO's varint: nine bytes, the varint is prefix-free
        commit_ts = seen.get(raw)
        if commit_ts is None:
            x = from_bytes(raw, 'little')
            if (x & HIGH_BITS_9) == NINE_BYTES and len(raw) == 9:  # nine bytes, read inline as in avro_long
                x &= SEVEN_BITS_9
                x -= (x & 0x7F007F007F007F007F00) >> 1
                x = (x & 0x00003FFF00003FFF00003FFF) | ((x >> 2) & 0x0FFFC0000FFFC0000FFFC000)
                x = (x & 0x000000000FFFFFFF000000000FFFFFFF) | ((x >> 4) & 0x00FFFFFFF000000000FFFFFFF0000000)
                x = (x & 0xFFFFFFFFFFFFFF) | ((x >> 8) & ~0xFFFFFFFFFFFFFF)
                commit_ts = ((x >> 1) ^ -(x & 1)) & 18446744073709551615
                if len(seen) >= 64:
                    seen.clear()
                seen[raw] = commit_ts
                pos += 10
            else:
                commit_ts, pos = long(buf, pos + 1)
                commit_ts &= 18446744073709551615
        else:
            pos += 10
        if buf[pos] < 0x80:
            pos += 1
        else:
            pos = long(buf, pos)[1]  # buildTs
        if not buf.startswith(TAIL, pos):  # schemaVersion; no claim-check location, handleKeyOnly, checksum
            raise Decline
        pos += TAIL_SIZE
        if kind == 0:
            columns, pos = image(buf, pos)
            if buf[pos] != 0 or pos + 1 != len(buf):
                raise Decline
            return replace(template, commit_ts=commit_ts, columns=columns, physical_table_id=table_id)
        if kind == 2:
            columns, pos = image(buf, pos)
            pre, pos = image(buf, pos)
            if pos != len(buf):
                raise Decline
            return replace(template, op=UPDATE, commit_ts=commit_ts, columns=columns, pre_columns=pre,
                           physical_table_id=table_id)
        if kind != 4 or buf[pos] != 0:
            raise Decline
        pre, pos = image(buf, pos + 1)
        if pos != len(buf):
            raise Decline
        return replace(template, op=DELETE, commit_ts=commit_ts, pre_columns=pre, physical_table_id=table_id)
    return read
"""


#: Reads a whole Avro DML message of its table version → RowChange (called as JsonMessageReader).
AvroMessageReader = Callable[[bytes, memoryview], RowChange]


class _AvroCode:
    """The generated fast Avro path of a table version (shared by equal versions).

    Images are read straight through when their entries come in table order (this package's
    encoder) and by a loop over the entries otherwise (goavro writes Go map order, random).
    Only the branch TiCDC writes for each column's type is read here; anything else — another
    branch, an unknown or missing column, several map blocks, a multi-byte key length, a
    claim-check location, handleKeyOnly, a checksum — is left to the reference path.
    """

    __slots__ = ("make_read_message", "names", "specs")

    def __init__(self, table: TableInfo) -> None:
        columns = [c for c in table.columns if not c.virtual]
        #: Key bytes → (column name, expected branch byte, handler), for any entry order.
        self.specs: dict[bytes, tuple[str, int, int]] = {}
        self.names = tuple(c.name for c in columns)
        count = long_bytes(len(columns))
        # Key bytes enter the source as namespace names, not as literals.
        # The image starts at its union branch byte (2: a map); the first entry's constants carry
        # that byte and the entry count, so the common image needs no separate check of them.
        keys: dict[str, Any] = {}
        helpers = native()
        lines = ["def image(buf, pos):", "    first = pos"]
        if helpers is not None and columns:
            # The C reader of the same table-order image (None: it declines, and the lines below read it).
            lines += ["    found = avro_image(buf, pos, PLAN, Row)", "    if found is not None: return found"]
        if not columns:  # an empty map is one 0 byte: the reference path reads it
            lines = ["def image(buf, pos):", "    raise Decline"]
        items = []
        letters: list[bytes] = []
        for i, column in enumerate(columns):
            key = column.name.encode("utf-8", "surrogateescape")
            branch, handler = _avro_handler(column)
            self.specs[key] = (column.name, branch, handler)
            letters.append(_NATIVE_HANDLERS[handler])
            if len(key) >= 64:
                raise ValueError("key length takes more than one byte")
            entry = (b"\x02" + count if i == 0 else b"") + bytes([len(key) << 1]) + key
            with_value, with_null = entry + bytes([branch]), entry + bytes([0])
            keys[f"V{i}"], keys[f"N{i}"] = with_value, with_null
            # One slice compared twice (value, else null): a slice and == cost less than startswith.
            lines += [f"    e = buf[pos:pos + {len(with_value)}]", f"    if e == V{i}:"]
            lines += ["        " + line for line in _value_lines(i, len(with_value), handler)]
            lines += [f"    elif e == N{i}:", f"        pos += {len(with_null)}",
                      f"        x{i} = None", "    else:", "        return any_order(buf, first)"]
            items.append(f"{literal(column.name)}: x{i}")
        if columns:
            lines += ["    if buf[pos] != 0:", "        raise Decline",
                      "    return Row({" + ", ".join(items) + "}), pos + 1"]
        schema = table.schema.encode("utf-8", "surrogateescape")
        name = table.table.encode("utf-8", "surrogateescape")
        head = DML_HEAD + long_bytes(len(schema)) + schema + long_bytes(len(name)) + name
        tail = long_bytes(u64_as_i64(table.schema_version)) + b"\x00\x00\x00"
        try:
            head_id = head + long_bytes(table.table_id)
        except EncodeError:
            raise ValueError("table id does not fit an Avro long") from None  # no fast path: avro_plan
        namespace: dict[str, Any] = {
            **keys, "HEAD_ID": head_id, "HEAD_ID_SIZE": len(head_id), "TABLE_ID": table.table_id,
            "HIGH_BITS_9": _HIGH_BITS & ((1 << 72) - 1), "NINE_BYTES": _HIGH_BITS & ((1 << 64) - 1),
            "SEVEN_BITS_9": _SEVEN_BITS[9],
            "Row": Row, "Decline": Decline, "long": avro_long, "slen": _SHORT_LENGTH, "zz": _SHORT_LONG,
            "from_bytes": int.from_bytes, "HIGH_BITS": _HIGH_BITS, "TEN_BYTES": _HIGH_BITS ^ (0x80 << 72),
            "SEVEN_BITS_10": _SEVEN_BITS[10], "string": _avro_string_end, "f32": _F32.unpack_from,
            "f64": _F64.unpack_from, "any_order": self._any_order, "HEAD": head, "HEAD_SIZE": len(head),
            "TAIL": tail, "TAIL_SIZE": len(tail), "replace": msgspec.structs.replace, "UPDATE": Op.UPDATE,
            "DELETE": Op.DELETE,
            "avro_image": None if helpers is None else helpers.avro_image,
            "PLAN": (tuple(keys[f"V{i}"] for i in range(len(columns))),
                     tuple(keys[f"N{i}"] for i in range(len(columns))), b"".join(letters), self.names),
        }
        source = "\n".join(lines) + "\n" + _AVRO_MESSAGE
        self.make_read_message: Callable[[RowChange], AvroMessageReader] = compile_function(source, "make", namespace)

    def _any_order(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """An image (at its union branch byte) whose entries are not in table order: a loop, then table order."""
        if buf[pos] != 2:  # null, or no union branch
            raise Decline
        pos += 1
        count = buf[pos]
        if not count or count >= 0x80 or count & 1:  # empty, a block with a byte size, 64 entries or more
            raise Decline
        count >>= 1
        pos += 1
        specs = self.specs
        found: dict[str, Value] = {}
        while count:
            count -= 1
            size = buf[pos]
            if size >= 0x80 or size & 1:
                raise Decline
            end = pos + 1 + (size >> 1)
            name, branch, handler = specs[buf[pos + 1:end]]  # KeyError: not a column of the table
            tag = buf[end]
            pos = end + 1
            if tag != branch:
                if tag:
                    raise Decline
                found[name] = None
                continue
            value: Value
            if handler <= _H_ULONG or handler == _H_UBIG:
                value, pos = avro_long(buf, pos)
                if handler != _H_LONG and value < 0:
                    value &= _MASK64
            elif handler == _H_BYTES:
                start, pos = _avro_string_end(buf, pos)
                value = buf[start:pos]
            elif handler == _H_TEXT:
                start, pos = _avro_string_end(buf, pos)
                value = buf[start:pos].decode("utf-8", "surrogateescape")
            elif handler == _H_F32:
                value = _F32.unpack_from(buf, pos)[0]
                pos += 4
            elif handler == _H_F64:
                value = _F64.unpack_from(buf, pos)[0]
                pos += 8
            else:  # Timestamp: the location, then the value
                pos = _avro_string_end(buf, pos)[1]
                start, pos = _avro_string_end(buf, pos)
                value = buf[start:pos].decode("utf-8", "surrogateescape")
            found[name] = value
        if buf[pos] != 0:
            raise Decline
        return Row({name: found[name] for name in self.names if name in found}), pos + 1


class AvroPlan:
    """The fast Avro path of one table version: a reader of its whole DML messages."""

    __slots__ = ("read_message",)

    def __init__(self, table: TableInfo) -> None:
        template = RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=0,
                             table_id=table.table_id, table_info=table, schema_version=table.schema_version)
        self.read_message = compiled(in_form("avro"), table, _AvroCode).make_read_message(template)


def avro_plan(table: TableInfo) -> AvroPlan | None:
    """The fast Avro plan of a table version (cached on it); None when it cannot have one."""
    cache = table.__dict__
    slot = in_form("_pyticdc_simple_avro_plan")
    try:
        plan: AvroPlan | None = cache[slot]
    except KeyError:
        try:
            plan = AvroPlan(table)
        except (TypeError, ValueError):  # a column name that cannot be encoded, or a long key
            plan = None
        cache[slot] = plan
    return plan
