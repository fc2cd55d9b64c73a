"""The fast path of Simple Avro DML messages: a per-table reader generated once per table version.

Only the union branch TiCDC writes for each column's type is read here; everything else is
declined to the reference path (``pyticdc.codec.simple.fastpath`` states the contract).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

import msgspec

from pyticdc.codec._fastpath import Decline, compile_function, literal
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.avro import DML_HEAD, long_bytes
from pyticdc.codec.simple.fastpath import compiled
from pyticdc.codec.simple.message import MASK64, u64_as_i64
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
_H_TEXT: Final = 5  # string: surrogateescape-decoded like AvroReader.string
_H_TIMESTAMP: Final = 6  # Timestamp{location, value}: the value


def _avro_handler(column: ColumnInfo) -> tuple[int, int]:
    """(expected union branch byte, handler) of a column."""
    kind = V.column_kind(column)
    if kind == V.KIND_INT:
        if V.is_unsigned_bigint(column):
            return V.B_UBIGINT, _H_ULONG
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


def avro_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos`` and the offset after it; Decline where AvroReader.long fails."""
    # Two and three bytes (ids, counters, lengths) unrolled; longer ones (TSOs, uint64s) looped.
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
    result = shift = 0
    while True:
        byte = buf[pos]  # IndexError past the end
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:  # an 11th byte
            raise Decline
    if result >> 64:
        raise Decline
    return (result >> 1) ^ -(result & 1), pos


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


# A string or bytes at ``pos`` (a length below 64 inline): its data is buf[start:pos].
_AVRO_STRING: Final = (
    "b = buf[pos]", "if b < 0x80 and not b & 1:", "    start = pos + 1", "    pos = start + (b >> 1)",
    "    if pos > size: raise Decline", "else:", "    start, pos = string(buf, pos)",
)
# Statements decoding the value at ``pos`` (its branch byte already passed) into ``x{i}``.
_AVRO_VALUE: Final[dict[int, tuple[str, ...]]] = {
    _H_LONG: ("b = buf[pos]", "if b < 0x80:", "    x{i} = (b >> 1) ^ -(b & 1)", "    pos += 1",
              "else:", "    x{i}, pos = long(buf, pos)"),
    _H_F32: ("x{i} = f32(buf, pos)[0]", "pos += 4"),
    _H_F64: ("x{i} = f64(buf, pos)[0]", "pos += 8"),
    _H_BYTES: (*_AVRO_STRING, "x{i} = buf[start:pos]"),
    _H_TEXT: (*_AVRO_STRING, "x{i} = buf[start:pos].decode('utf-8', 'surrogateescape')"),
    _H_TIMESTAMP: ("pos = string(buf, pos)[1]", *_AVRO_STRING,
                   "x{i} = buf[start:pos].decode('utf-8', 'surrogateescape')"),
}
_AVRO_VALUE[_H_ULONG] = (*_AVRO_VALUE[_H_LONG], "if x{i} < 0:", "    x{i} &= 18446744073709551615")

_AVRO_MESSAGE: Final = """
def make(template):
    def read(buf, f32):  # f32: as the JSON readers take it (unused)
        if not buf.startswith(HEAD):
            raise Decline
        pos = HEAD_SIZE
        b = buf[pos]
        if b < 0x80:
            table_id = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            table_id, pos = long(buf, pos)
        kind = buf[pos]
        commit_ts, pos = long(buf, pos + 1)
        if buf[pos] < 0x80:
            pos += 1
        else:
            pos = long(buf, pos)[1]  # buildTs
        if not buf.startswith(TAIL, pos):  # schemaVersion; no claim-check location, handleKeyOnly, checksum
            raise Decline
        pos += TAIL_SIZE
        if kind == 0:
            if buf[pos] != 2:
                raise Decline
            columns, pos = image(buf, pos + 1)
            if buf[pos] != 0 or pos + 1 != len(buf):
                raise Decline
            return replace(template, commit_ts=commit_ts & 18446744073709551615, columns=columns,
                           physical_table_id=table_id)
        if kind == 2:
            if buf[pos] != 2:
                raise Decline
            columns, pos = image(buf, pos + 1)
            if buf[pos] != 2:
                raise Decline
            pre, pos = image(buf, pos + 1)
            if pos != len(buf):
                raise Decline
            return replace(template, op=UPDATE, commit_ts=commit_ts & 18446744073709551615, columns=columns,
                           pre_columns=pre, physical_table_id=table_id)
        if kind != 4 or buf[pos] != 0 or buf[pos + 1] != 2:
            raise Decline
        pre, pos = image(buf, pos + 2)
        if pos != len(buf):
            raise Decline
        return replace(template, op=DELETE, commit_ts=commit_ts & 18446744073709551615, pre_columns=pre,
                       physical_table_id=table_id)
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
        keys: dict[str, Any] = {"COUNT": count}
        lines = ["def image(buf, pos):", "    if not buf.startswith(COUNT, pos):",
                 "        return any_order(buf, pos)", "    first = pos", f"    pos += {len(count)}",
                 "    size = len(buf)"]
        if not columns:  # an empty map is one 0 byte: the reference path reads it
            lines = ["def image(buf, pos):", "    raise Decline"]
        items = []
        for i, column in enumerate(columns):
            key = column.name.encode("utf-8", "surrogateescape")
            branch, handler = _avro_handler(column)
            self.specs[key] = (column.name, branch, handler)
            if len(key) >= 64:
                raise ValueError("key length takes more than one byte")
            entry = bytes([len(key) << 1]) + key
            with_value, with_null = entry + bytes([branch]), entry + bytes([0])
            keys[f"V{i}"], keys[f"N{i}"] = with_value, with_null
            lines += [f"    if buf.startswith(V{i}, pos):", f"        pos += {len(with_value)}"]
            lines += ["        " + line.format(i=i) for line in _AVRO_VALUE[handler]]
            lines += [f"    elif buf.startswith(N{i}, pos):", f"        pos += {len(with_null)}",
                      f"        x{i} = None", "    else:", "        return any_order(buf, first)"]
            items.append(f"{literal(column.name)}: x{i}")
        if columns:
            lines += ["    if buf[pos] != 0:", "        raise Decline",
                      "    return Row({" + ", ".join(items) + "}), pos + 1"]
        schema = table.schema.encode("utf-8", "surrogateescape")
        name = table.table.encode("utf-8", "surrogateescape")
        head = DML_HEAD + long_bytes(len(schema)) + schema + long_bytes(len(name)) + name
        tail = long_bytes(u64_as_i64(table.schema_version)) + b"\x00\x00\x00"
        namespace: dict[str, Any] = {
            **keys,
            "Row": Row, "Decline": Decline, "long": avro_long, "string": _avro_string_end, "f32": _F32.unpack_from,
            "f64": _F64.unpack_from, "any_order": self._any_order, "HEAD": head, "HEAD_SIZE": len(head),
            "TAIL": tail, "TAIL_SIZE": len(tail), "replace": msgspec.structs.replace, "UPDATE": Op.UPDATE,
            "DELETE": Op.DELETE,
        }
        source = "\n".join(lines) + "\n" + _AVRO_MESSAGE
        self.make_read_message: Callable[[RowChange], AvroMessageReader] = compile_function(source, "make", namespace)

    def _any_order(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """An image whose entries are not in table order: a loop over them, then table order."""
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
            if handler <= _H_ULONG:
                value, pos = avro_long(buf, pos)
                if handler == _H_ULONG and value < 0:
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
        self.read_message = compiled("avro", table, _AvroCode).make_read_message(template)


def avro_plan(table: TableInfo) -> AvroPlan | None:
    """The fast Avro plan of a table version (cached on it); None when it cannot have one."""
    cache = table.__dict__
    try:
        plan: AvroPlan | None = cache["_pyticdc_simple_avro_plan"]
    except KeyError:
        try:
            plan = AvroPlan(table)
        except (TypeError, ValueError):  # a column name that cannot be encoded, or a long key
            plan = None
        cache["_pyticdc_simple_avro_plan"] = plan
    return plan
