"""Simple-Avro's fast row writer: one function generated per table writes a whole DML message.

The encoder's reference path (``Encoder._dml_avro``) writes a message field by field; this writer
speculates on the message TiCDC writes most — an INSERT, UPDATE or DELETE whose images hold every
non-virtual column of the table, no claim-check location, not handle-key-only — and writes it in
one go: the fields fixed per table (database, table, tableID, schemaVersion and the empty optional
fields) are bytes made once, each map entry's key and union branch one constant, and the values
straight-line code per column type. A value of another type goes through the reference per-value
function (``values.avro_value``: the same bytes or EncodeError). Anything else — a missing column,
a float past float32, a commit ts that is no uint64 — declines (the writer returns None or raises
one of ``WRITER_DECLINES``) and the encoder writes the row the reference way, which also raises
its EncodeErrors. A conformance test checks both give the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

from pyticdc.codec._fastpath import DECLINES, compile_function, in_form, literal, native
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.avro import DML_HEAD, DML_TYPES, long_bytes
from pyticdc.codec.simple.fastpath import compiled, native_kind
from pyticdc.codec.simple.message import DML_TYPE_NAMES, INT64_MAX, MASK64, u64_as_i64
from pyticdc.errors import EncodeError
from pyticdc.model import Op, RowChange, TableInfo

__all__ = ["WRITER_DECLINES", "AvroRowWriter", "avro_row_writer"]

#: (row, buildTs, encoded location) → the message bytes, or None where the reference path must write it.
AvroRowWriter = Callable[[RowChange, int, bytes], "bytes | None"]

#: What a writer may raise to decline a row: the fast-path declines and the reference functions'
#: EncodeError (the reference path raises it again, with its own checks first).
WRITER_DECLINES: Final = (*DECLINES, EncodeError)

_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")
_U16: Final = struct.Struct("<H")


def _varint(out: bytearray, zigzag: int) -> None:
    """Append a zigzag value below 2**64 (as avro.write_long's loop); OverflowError past it."""
    if 0x100000000000000 <= zigzag <= MASK64:  # nine or ten bytes (TSOs, uint64s): no byte loop
        # The low 63 bits' 7-bit groups spread to bytes at once: 56-bit lanes, 28, 14, then 7.
        x = (zigzag & 0xFFFFFFFFFFFFFF) | ((zigzag & 0x7F00000000000000) << 8)
        x = (x & 0x000000000FFFFFFF000000000FFFFFFF) | ((x & 0x00FFFFFFF000000000FFFFFFF0000000) << 4)
        x = (x & 0x00003FFF00003FFF00003FFF) | ((x & 0x0FFFC0000FFFC0000FFFC000) << 2)
        x += x & 0x3F803F803F803F803F80  # in each 16-bit lane, the high 7 bits up one bit
        if zigzag >> 63:
            out += (x | 0x808080808080808080).to_bytes(9, "little")
            out.append(1)
        else:
            out += (x | 0x8080808080808080).to_bytes(9, "little")
        return
    if zigzag > MASK64:  # an int past int64 in a fast case: the reference path judges it
        raise OverflowError("zigzag value past 64 bits")
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


# A zigzag value ``z`` appended: one to three bytes inline (the first two as one little-endian
# short, the high group moved up past its continuation bit), longer ones by _varint.
_ZIGZAG: Final = ("if z < 0x80: out.append(z)", "elif z < 0x4000: out += short(z & 0x7F | 0x80 | (z & 0x3F80) << 1)",
                  "elif z < 0x200000: out += short(z & 0x7F | 0x8080 | (z & 0x3F80) << 1); out.append(z >> 14)",
                  "else: varint(out, z)")
# A long's key, branch and value: below 0x80 one of the column's 128 constants ``KBZ{i}``.
_LONG: Final = ("z = (v << 1) ^ (v >> 63)", "if z < 0x80: out += KBZ{i}[z]", "else:", "    out += KB{i}",
                "    if " + _ZIGZAG[1].removeprefix("elif "), *("    " + line for line in _ZIGZAG[2:]))
_UINT64: Final = ("if v > 9223372036854775807: v -= 18446744073709551616", *_LONG)  # the int64 reinterpretation
# Avro bytes/string ``b`` after the entry's key and branch ``KB{i}``: its length (zigzag of a
# non-negative number: twice it), then the data. Below _KBL_SIZE bytes the key, branch and length
# are one of the column's constants ``KBL{i}``.
_KBL_SIZE: Final = 256
_DATA: Final = ("n = len(b)", f"if n < {_KBL_SIZE}: out += KBL{{i}}[n]", "else:", "    out += KB{i}", "    z = n << 1",
                *("    " + line for line in _ZIGZAG), "out += b")


def _column_lines(i: int, spec: V.ColumnPlan) -> tuple[str, ...]:
    """(fast-case condition, statements) of column ``i``: key and branch bytes are ``KB{i}``.

    Text is encoded strictly: a lone surrogate (UnicodeEncodeError, a ValueError) declines the
    row to the reference path, which writes it back as the byte it stands for.
    """
    kind = spec.kind
    low, high = spec.bounds
    if kind == V.KIND_INT:
        if (low, high) == (-INT64_MAX - 1, INT64_MAX):
            # No range test: an int past int64 has a zigzag past 2**64, which _varint declines.
            fast: tuple[str, ...] = ("type(v) is int", *_LONG)
        else:
            fast = (f"type(v) is int and {low} <= v <= {high}", *(_UINT64 if high > INT64_MAX else _LONG))
    elif kind == V.KIND_UINT:
        fast = (f"type(v) is int and 0 <= v <= {MASK64}", *_UINT64)
    elif kind == V.KIND_FLOAT:
        fast = ("type(v) is float and v - v == 0", "out += KB{i}", "out += f32(v)")  # OverflowError: declines
    elif kind == V.KIND_DOUBLE:
        fast = ("type(v) is float and v - v == 0", "out += KB{i}", "out += f64(v)")
    elif kind == V.KIND_TIMESTAMP:
        fast = ("type(v) is str", "out += KB{i}", "out += loc", "b = v.encode()", "z = len(b) << 1", *_ZIGZAG,
                "out += b")
    elif kind == V.KIND_BYTES:
        fast = ("type(v) is bytes", "n = len(v)", *_DATA[1:-1], "out += v")
    else:
        fast = ("type(v) is str", "b = v.encode()", *_DATA)
    return tuple(line.replace("{i}", str(i)) for line in fast)


def _branch(spec: V.ColumnPlan) -> int:
    """The union branch byte the fast case writes (as values.avro_value does)."""
    kind = spec.kind
    if kind == V.KIND_INT:
        return V.B_UBIGINT if spec.ubigint else V.B_LONG
    return {V.KIND_UINT: V.B_LONG, V.KIND_FLOAT: V.B_FLOAT, V.KIND_DOUBLE: V.B_DOUBLE,
            V.KIND_TIMESTAMP: V.B_TIMESTAMP, V.KIND_BYTES: V.B_BYTES if spec.binary else V.B_STRING}.get(
        kind, V.B_STRING)


_MESSAGE: Final = """
def write(row, build_ts, loc):
    commit_ts = row.commit_ts
    if type(commit_ts) is not int:
        return None
    ts = seen.get(commit_ts)  # the rows of a transaction share their commit ts: its varint once
    if ts is None:
        if not 0 <= commit_ts <= 18446744073709551615:
            return None
        z = commit_ts - 18446744073709551616 if commit_ts > 9223372036854775807 else commit_ts
        z = (z << 1) ^ (z >> 63)
        if 0x100000000000000 <= z < 0x8000000000000000:  # nine bytes (TSOs): _varint's spread, inline
            x = (z & 0xFFFFFFFFFFFFFF) | ((z & ~0xFFFFFFFFFFFFFF) << 8)
            x = (x & 0x000000000FFFFFFF000000000FFFFFFF) | ((x & 0x00FFFFFFF000000000FFFFFFF0000000) << 4)
            x = (x & 0x00003FFF00003FFF00003FFF) | ((x & 0x0FFFC0000FFFC0000FFFC000) << 2)
            x += x & 0x3F803F803F803F803F80  # in each 16-bit lane, the high 7 bits up one bit
            ts = (x | 0x8080808080808080).to_bytes(9, 'little')
        else:
            ts = bytearray()
            varint(ts, z)
            ts = bytes(ts)
        if len(seen) >= 64:
            seen.clear()
        seen[commit_ts] = ts
    table_id = row.physical_table_id or row.table_id or TABLE_ID
    if table_id == TABLE_ID:  # the table's own id: head, id and kind are one constant per op
        head = None
    elif type(table_id) is int and -9223372036854775808 <= table_id <= 9223372036854775807:
        head = bytearray(HEAD)
        varint(head, (table_id << 1) ^ (table_id >> 63))
    else:
        return None
    op = row.op
    if op is INSERT:
        data = row.columns
        if data is None:
            return None
        if head is None:
            out = bytearray(START_INSERT)
        else:
            out = head
            out += KIND_INSERT
        old = None
    elif op is UPDATE:
        data, old = row.columns, row.pre_columns
        if data is None or old is None:
            return None
        if head is None:
            out = bytearray(START_UPDATE)
        else:
            out = head
            out += KIND_UPDATE
    elif op is DELETE:
        old = row.pre_columns
        if old is None or KEY_ONLY_DELETE:
            return None
        if head is None:
            out = bytearray(START_DELETE)
        else:
            out = head
            out += KIND_DELETE
        data = None
    else:
        return None
    out += ts
    z = (build_ts << 1) ^ (build_ts >> 63)
    if z < 0x80:
        out.append(z)
    elif -9223372036854775808 <= build_ts <= 9223372036854775807:
        varint(out, z)
    else:
        return None
    if data is None:
        out += VERSION_NO_DATA  # schemaVersion; no claim-check location, handleKeyOnly or checksum; no data
    else:
        out += VERSION_DATA  # the same, then the data map
        values = data
        #IMAGE
    if old is None:
        out.append(0)
    else:
        out.append(2)
        values = old
        #IMAGE
    return bytes(out)
"""


class _AvroWriterCode:
    """The generated writer of a table version (shared by equal versions)."""

    __slots__ = ("writers",)

    def __init__(self, table: TableInfo) -> None:
        specs = [plan for plan in V.table_plan(table)[0] if not plan.virtual]
        namespace: dict[str, Any] = {
            "cols": tuple(specs), "general": V.avro_value, "varint": _varint, "f32": _F32.pack, "f64": _F64.pack,
            "short": _U16.pack,
            "INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE,
        }
        # The statements writing an image ``values``, inlined where write() writes one (no call per
        # image). The entry count goes out with the first entry: column 0's constants start with it.
        lines = [] if specs else ["    pass"]
        for i, spec in enumerate(specs):
            fast = _column_lines(i, spec)
            key = long_bytes(len(specs)) + spec.avro_key if i == 0 else spec.avro_key
            namespace[f"KB{i}"] = key + bytes([_branch(spec)])
            namespace[f"KN{i}"] = key + bytes([V.B_NULL])
            namespace[f"K{i}"] = key
            namespace[f"KBL{i}"] = tuple(namespace[f"KB{i}"] + long_bytes(n) for n in range(_KBL_SIZE))
            namespace[f"KBZ{i}"] = tuple(namespace[f"KB{i}"] + bytes([z]) for z in range(0x80))
            lines += [f"    v = values[{literal(spec.name)}]", f"    if v is None: out += KN{i}",
                      f"    elif {fast[0]}:"]
            lines += ["        " + line for line in fast[1:]]
            lines += ["    else:", f"        out += K{i}", f"        general(out, cols[{i}], v, loc)"]
        lines.append("    out.append(0)")
        kinds = [native_kind(spec) for spec in specs]
        helpers = native()
        if helpers is not None and specs and None not in kinds:
            # The C writer of the same image first (None: it declines, and the lines write it).
            namespace["avro_row_image"] = helpers.avro_row_image
            count = range(len(specs))
            namespace["PLAN"] = (tuple(spec.name for spec in specs), tuple(namespace[f"KB{i}"] for i in count),
                                 tuple(namespace[f"KN{i}"] for i in count), b"".join(k for k in kinds if k is not None))
            lines = ["    image = avro_row_image(values, PLAN, loc)", "    if image is not None: out += image",
                     "    else:", *("    " + line for line in lines)]
        schema = table.schema.encode("utf-8", "surrogateescape")
        name = table.table.encode("utf-8", "surrogateescape")
        head = DML_HEAD + long_bytes(len(schema)) + schema + long_bytes(len(name)) + name
        types = {op: bytes([DML_TYPES.index(DML_TYPE_NAMES[op]) << 1]) for op in (Op.INSERT, Op.UPDATE, Op.DELETE)}
        base = {
            "HEAD": head, "TABLE_ID": table.table_id,
            **{f"START_{op.name}": head + long_bytes(table.table_id) + types[op] for op in types},
            "KIND_INSERT": types[Op.INSERT], "KIND_UPDATE": types[Op.UPDATE], "KIND_DELETE": types[Op.DELETE],
            "VERSION_NO_DATA": long_bytes(u64_as_i64(table.schema_version)) + b"\x00\x00\x00\x00",
            "VERSION_DATA": long_bytes(u64_as_i64(table.schema_version)) + b"\x00\x00\x00\x02",
        }
        source = _MESSAGE.replace("        #IMAGE", "\n".join("    " + line for line in lines))
        # Two writers: DELETEs written in full, or declined (delete-only-output-handle-key-columns).
        self.writers: tuple[AvroRowWriter, ...] = tuple(
            compile_function(source, "write", {**namespace, **base, "KEY_ONLY_DELETE": key_only, "seen": {}})
            for key_only in (False, True)
        )


def avro_row_writer(table: TableInfo, key_only_delete: bool) -> AvroRowWriter | None:
    """The fast row writer of a table version (shared by equal versions); None when it cannot have one."""
    cache = table.__dict__
    slot = in_form("_pyticdc_simple_avro_writer")
    try:
        code: _AvroWriterCode | None = cache[slot]
    except KeyError:
        try:
            code = compiled(in_form("avro-writer"), table, _AvroWriterCode)
        except (UnicodeEncodeError, ValueError, OverflowError, EncodeError):  # names or ids it cannot write
            code = None
        cache[slot] = code
    return None if code is None else code.writers[key_only_delete]
