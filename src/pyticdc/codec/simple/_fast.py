"""Fast paths of the Simple codec: per-table readers and writers, generated once per TableInfo.

Every fast path is a speculation on the shapes TiCDC (and this package's encoder) produce. On
anything else — another type, a non-canonical number, a missing or unknown column, input it
does not check itself — it raises one of ``FAST_PATH_ERRORS`` (or the caller sees None), and the
caller redoes the work on the general path of ``pyticdc.codec.simple``. So the fast paths accept
a subset of what the general path accepts and yield the same values and bytes, and the general
path stays the only source of DecodeErrors and of their messages and positions. The encoders'
per-value fallbacks call the general path's own functions, so EncodeErrors are the same too.

The per-table functions are built with ``exec``, as canal_json's converters are: one straight
line of code per column, so a row costs no per-value dispatch. Column names enter the generated
source only as ``repr()`` literals; everything else comes from the namespace.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Literal, TypeAlias, TypeVar, cast

import msgspec

from pyticdc.codec.jsontext import format_float32, go_json_quote, go_json_quote_bytes
from pyticdc.codec.simple import _values as V
from pyticdc.codec.simple._avro import MESSAGE_BRANCH, MESSAGE_TYPES, VALUE_BRANCH, write_long, write_str
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnInfo, Op, Row, RowChange, TableInfo, Value

__all__ = [
    "FAST_PATH_ERRORS",
    "JSON_DML_DECODER",
    "JSON_WIRE_IMAGE_DECODER",
    "NULL_RAW",
    "WRITER_FALLBACK",
    "AvroImageWriter",
    "AvroMessageReader",
    "AvroPlan",
    "Fallback",
    "JsonChecksum",
    "JsonDml",
    "JsonImageReader",
    "JsonImageWriter",
    "JsonMessageReader",
    "JsonPlan",
    "JsonTimestamp",
    "Writers",
    "avro_long",
    "avro_plan",
    "avro_value",
    "float32_buffer",
    "json_plan",
    "json_value",
    "lax_json_safe",
    "writers",
]

_MASK64: Final = (1 << 64) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")


class Fallback(Exception):
    """Raised by a fast path for input it leaves to the general path."""


#: What a fast path raises for input it leaves to the general path: its own Fallback, msgspec's
#: errors (ValueErrors, as are UnicodeDecodeErrors), IndexError/struct.error/KeyError from short
#: or unexpected input, OverflowError from float32 packing, DecodeError from an exact parser.
FAST_PATH_ERRORS: Final = (Fallback, ValueError, DecodeError, IndexError, KeyError, OverflowError, struct.error)


# --------------------------------------------------------------------------- JSON envelope
class JsonTimestamp(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A TIMESTAMP value ``{"location","value"}`` (encodeValue); the value is already in that zone."""

    value: str
    location: str = ""


class JsonChecksum(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """The ``checksum`` object of a DML message (read, not used)."""

    version: int = 0
    corrupted: bool = False
    current: int = 0
    previous: int = 0


#: JSON ``null`` as msgspec keeps an absent or null raw field.
NULL_RAW: Final = msgspec.Raw(b"null")
_Int64: TypeAlias = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
# msgspec bounds stop at int64 and big integers decode as Python ints: callers check <= 2**64-1.
_Uint64: TypeAlias = Annotated[int, msgspec.Meta(ge=0)]


class JsonDml(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A WATERMARK or DML message with the fields the general path reads for them, typed.

    Unknown fields (a DDL's ``sql``/``tableSchema``, anything else) and ``null`` where a value is
    expected fail validation and send the message to the general path, which ignores or
    defaults them; ``data``/``old`` stay raw until the table's typed image decoder reads them.
    """

    type: str
    version: _Int64 = 0
    database: str = ""
    table: str = ""
    tableID: _Int64 = 0
    commitTs: _Uint64 = 0
    buildTs: _Int64 = 0
    schemaVersion: _Uint64 = 0
    claimCheckLocation: str = ""
    handleKeyOnly: bool = False
    checksum: JsonChecksum | None = None
    data: msgspec.Raw = NULL_RAW
    old: msgspec.Raw = NULL_RAW


JSON_DML_DECODER: Final = msgspec.json.Decoder(JsonDml)
#: The image of a row whose schema is not known yet: the wire strings as they are.
JSON_WIRE_IMAGE_DECODER: Final = msgspec.json.Decoder(dict[str, str | JsonTimestamp | None])


# --------------------------------------------------------------------------- JSON images
# Per table version, three readers (a JsonPlan). The lax ones let msgspec turn value strings into
# numbers in C. Lax mode is wider than strconv, so their types are narrowed until every value it
# yields is the one from_wire gives and the rest fail validation: an integer column is
# ``int | float`` with a float branch no number satisfies, so "1.0", "1e3" and 5.0 (which
# ParseInt refuses) fail instead of becoming 1, 1000, 5; signed bounds keep negative values out
# of unsigned columns (a JSON -1 string stays -1 there, a JSON -1 number becomes 2**64-1); finite
# bounds keep NaN/±Inf (whose sign and range rules are subtle) out of float columns; a branch no
# string satisfies stops lax coercion where a field must not take strings. Two things of lax mode
# no type narrows: a "null" string (any case) read as null, and "-0" read as 0 (ParseFloat gives
# -0.0, ParseUint an error). So a null, or a zero where "-0" would differ, in such a column makes
# the reader look at the message bytes (``lax_json_safe``) and give up when they hold such a
# string. The strict reader reads value strings and converts them in Python; it serves what the
# lax ones leave.
_NO_FLOAT: Final = Annotated[float, msgspec.Meta(ge=1.0, le=0.0)]  # no float, NaN or ±Inf is both
_NO_STR: Final = Annotated[str, msgspec.Meta(min_length=1 << 40)]
_FINITE: Final = Annotated[float, msgspec.Meta(ge=-1.7976931348623157e308, le=1.7976931348623157e308)]
# What rounds to a finite float32 (the next double up is the midpoint that rounds to Inf): a
# float32 store then needs no overflow check.
_FLOAT32: Final = Annotated[float, msgspec.Meta(ge=-3.4028235677973362e38, le=3.4028235677973362e38)]
_NOT_NEGATIVE: Final = Annotated[int, msgspec.Meta(ge=0)]
_SIGNED64: Final = Annotated[int, msgspec.Meta(ge=_INT64_MIN, le=_INT64_MAX)]
_UNSIGNED63: Final = Annotated[int, msgspec.Meta(ge=0, le=_INT64_MAX)]
# An envelope integer of the lax one-pass reader: what JsonDml takes in strict mode, no string.
_LAX_INT64: Final = _SIGNED64 | _NO_FLOAT | _NO_STR

# Statements turning the wire value ``v`` (not None) into the model value as from_wire does, or
# raising Fallback. Strict reader: integers are ASCII digits in the canonical case (signs and the
# rest go through the exact parser); float() takes a superset of ParseFloat's syntax
# (surrounding whitespace, underscores, non-ASCII digits), so those, NaN and ±Inf fall back.
_STRICT_INT: Final = (
    "if v.isdigit() and v.isascii():",
    "    v = int(v)",
    "    if v > {high}: raise Fallback",
    "else:",
    "    v = parse_int(v, cols[{i}], '')",
)
_STRICT_UINT: Final = (
    "if v.isdigit() and v.isascii():",
    "    v = int(v)",
    "    if v > 18446744073709551615: raise Fallback",
    "else:",
    "    raise Fallback",
)
_STRICT_FLOAT: Final = (
    "n = float(v)",
    "if n - n != 0 or not v.isascii() or '_' in v or v[0] <= ' ' or v[-1] <= ' ': raise Fallback",
)
_STEPS: Final[dict[str, tuple[str, ...]]] = {
    "int": _STRICT_INT,
    "uint": _STRICT_UINT,
    "float": (*_STRICT_FLOAT, "v = unpack(pack(n))[0]"),  # pack raises OverflowError past float32
    "double": (*_STRICT_FLOAT, "v = n"),
}
# msgspec strings hold no lone surrogates: a plain encode() is from_wire's surrogateescape one.
_ONE_LINE_STEPS: Final = {"timestamp": ".value", "text_bytes": ".encode()"}


def _json_kind(column: ColumnInfo, lax: bool) -> tuple[Any, str | None, bool]:
    """A column's msgspec wire type (null aside), the name of its conversion steps, and whether
    lax mode may have read a "null" string into its null."""
    kind = V.column_kind(column)
    if kind == V.KIND_INT:
        if not lax:
            return str, "int", False
        if column.type_code == 8 and column.is_unsigned:  # up to 2**64-1: checked in Python
            return _NOT_NEGATIVE | _NO_FLOAT, "bigint", True
        # int64: TiCDC writes no signed BIGINT above it; ParseUint's retry is left to the general path
        return (_UNSIGNED63 if column.is_unsigned else _SIGNED64) | _NO_FLOAT, None, True
    if kind == V.KIND_UINT:  # BIT/ENUM/SET past 2**63-1 are left to the others
        return (_UNSIGNED63 | _NO_FLOAT, None, True) if lax else (str, "uint", False)
    if kind == V.KIND_FLOAT:
        return (_FLOAT32, "float", True) if lax else (str, "float", False)
    if kind == V.KIND_DOUBLE:
        return (_FINITE, None, True) if lax else (str, "double", False)
    if kind == V.KIND_TIMESTAMP:
        return JsonTimestamp | _NO_STR, "timestamp", False
    if kind == V.KIND_BYTES:
        if V.is_binary_column(column):
            # msgspec's base64 accepts a subset of b64decode(validate=True), with equal results.
            return bytes, None, lax
        return str, "text_bytes", False
    return str, None, False


def _image_code(columns: list[ColumnInfo], lax: bool, result: str) -> tuple[list[Any], list[str]]:
    """The image struct's fields and the code turning struct ``s`` into the Row ``result``.

    A NOT NULL column takes no null: one that comes anyway fails validation (the general path
    then returns it), and lax mode cannot read a "null" string into it.
    """
    fields = []
    lines = []
    items = []
    nulls = []  # lax: columns whose null may have been a "null" string
    zeros = []  # lax: columns whose zero may have been a "-0" string
    for i, column in enumerate(columns):
        wire_type, step, ambiguous = _json_kind(column, lax)
        nullable = column.nullable
        fields.append((f"c{i}", wire_type | None if nullable else wire_type, msgspec.field(name=column.name)))
        if ambiguous and nullable:
            nulls.append(f"s.c{i} is None")
        # A zero may have been "-0": ParseFloat's -0.0, and an error for ParseUint (BIT/ENUM/SET).
        if lax and V.column_kind(column) in (V.KIND_FLOAT, V.KIND_DOUBLE, V.KIND_UINT):
            zeros.append(f"s.c{i} == 0")
        if step is None:
            items.append(f"{column.name!r}: s.c{i}")
            continue
        items.append(f"{column.name!r}: x{i}")
        lines.append(f"x{i} = s.c{i}")
        when = f"if x{i} is not None: " if nullable else ""
        if step == "bigint":
            test = f"x{i} is not None and x{i}" if nullable else f"x{i}"
            lines.append(f"if {test} > 18446744073709551615: raise Fallback")
        elif lax and step == "float":
            # float32 rounding through the decoder's own 4-byte buffer (no allocation but the result)
            lines.append(f"if x{i}: f32[0] = x{i}; x{i} = f32[0]")  # 0.0, -0.0 and None stay
        elif step in _ONE_LINE_STEPS:
            lines.append(f"{when}x{i} = x{i}{_ONE_LINE_STEPS[step]}")
        else:
            high = _MASK64 if column.type_code == 8 else _INT64_MAX  # ParseUint retry: BIGINT only
            lines += [f"if x{i} is not None:", f"    v = x{i}"]
            lines += ["    " + line.format(i=i, high=high) for line in _STEPS[step]]
            lines.append(f"    x{i} = v")
    # Lax mode may have read a "null"/"-0" string into one of these: look at the message then.
    if zeros:
        lines.insert(0, f"if {' or '.join(zeros)}: check_zero(message)")
    if nulls:
        lines.insert(0, f"if {' or '.join(nulls)}: check(message)")
    lines.append(f"{result} = Row({{" + ", ".join(items) + "})")
    return fields, lines


#: Reads one image: (raw ``data``/``old`` value, whole message, float32 buffer) → Row. The buffer
#: (``float32_buffer()``) belongs to the caller, as the readers are shared between decoders.
JsonImageReader = Callable[[msgspec.Raw, bytes, memoryview], Row]
#: Reads a whole DML message of its table version (no claim-check location) → RowChange.
JsonMessageReader = Callable[[bytes, memoryview], RowChange]

# The one-pass reader: exactly the images of the op (an absent one the general path defaults, an
# extra one it validates and drops: both are left to it).
_ONE_PASS: Final = """
def make(template):
    def read(message, f32):
        m = decode(message)
        kind = m.type
        s = m.data
        if kind == "INSERT":
            if s is None or m.old is not None:
                raise Fallback
{data}
            return replace(template, commit_ts=m.commitTs, columns=columns, physical_table_id=m.tableID)
        if kind == "UPDATE":
            if s is None:
                raise Fallback
{data}
            s = m.old
            if s is None:
                raise Fallback
{old}
            return replace(template, op=UPDATE, commit_ts=m.commitTs, columns=columns, pre_columns=pre,
                           physical_table_id=m.tableID)
        s = m.old
        if s is None or m.data is not None:
            raise Fallback
{delete}
        return replace(template, op=DELETE, commit_ts=m.commitTs, pre_columns=pre, physical_table_id=m.tableID)
    return read
"""


def _check_lax(message: bytes) -> None:
    if not lax_json_safe(message):
        raise Fallback


def _check_lax_zero(message: bytes) -> None:
    # Only "-0" (or an escaped spelling of it) turns into a zero: cheaper than lax_json_safe.
    if b"\\" in message or b'"-0"' in message:
        raise Fallback


def _no_one_pass(message: bytes, f32: memoryview) -> RowChange:
    raise Fallback


def float32_buffer() -> memoryview:
    """A 4-byte float32 view: storing a float rounds it to float32, reading it back widens it."""
    return cast(memoryview, memoryview(bytearray(4)).cast("f"))  # typeshed: a float view is memoryview[float]


class _JsonCode:
    """The generated part of a JsonPlan, shared by equal table versions (a BOOTSTRAP brings a new,
    equal TableInfo every so often, and a new decoder starts from one)."""

    __slots__ = ("make_read_message", "read_lax", "read_strict")

    def __init__(self, table: TableInfo) -> None:
        columns = [c for c in table.columns if not c.virtual]
        common: dict[str, Any] = {
            "Row": Row, "Fallback": Fallback, "parse_int": V.parse_int, "cols": tuple(columns),
            "pack": _F32.pack, "unpack": _F32.unpack, "check": _check_lax, "check_zero": _check_lax_zero,
        }
        self.read_lax = self._image_reader(columns, True, common)
        self.read_strict = self._image_reader(columns, False, common)
        self.make_read_message: Callable[[RowChange], JsonMessageReader] = lambda template: _no_one_pass
        # msgspec checks the message is one of this table version and leaves the rare cases to the
        # two-pass path: a commitTs past 2**63-1 (a TSO reaches it in the 23rd century), a
        # claim-check location, a checksum or any other field. msgspec's integer literals stop at
        # int64, so a larger version gets no one-pass reader.
        if table.schema_version > _INT64_MAX:
            return
        # Every column TiCDC writes is required and no other is allowed: partial images
        # (handle-key-only) and unknown columns take another path.
        image_fields, data_code = _image_code(columns, True, "columns")
        _, old_code = _image_code(columns, True, "pre")
        image = msgspec.defstruct("SimpleJsonLaxImage", image_fields, forbid_unknown_fields=True, gc=False)
        message_type = msgspec.defstruct("SimpleJsonLaxMessage", [
            ("type", Literal["INSERT", "UPDATE", "DELETE"]), ("version", _LAX_INT64, 0),
            ("database", Literal[table.schema], ""), ("table", Literal[table.table], ""),
            ("tableID", _LAX_INT64, 0), ("commitTs", _UNSIGNED63 | _NO_FLOAT | _NO_STR, 0),
            ("buildTs", _LAX_INT64, 0), ("schemaVersion", Literal[table.schema_version] | _NO_FLOAT | _NO_STR, 0),
            # encoding/json leaves both out when empty/false (omitempty): present, they take the two-pass path
            ("claimCheckLocation", _NO_STR, ""), ("handleKeyOnly", _NO_STR, False),
            ("data", image | _NO_STR | None, None), ("old", image | _NO_STR | None, None),
        ], forbid_unknown_fields=True, gc=False)
        namespace = {
            **common, "decode": msgspec.json.Decoder(message_type, strict=False).decode, "UPDATE": Op.UPDATE,
            "DELETE": Op.DELETE, "replace": msgspec.structs.replace,
        }
        source = _ONE_PASS.format(data="\n".join(" " * 12 + line for line in data_code),
                                  old="\n".join(" " * 12 + line for line in old_code),
                                  delete="\n".join(" " * 8 + line for line in old_code))
        exec(source, namespace)
        self.make_read_message = namespace["make"]

    @staticmethod
    def _image_reader(columns: list[ColumnInfo], lax: bool, common: dict[str, Any]) -> JsonImageReader:
        fields, code = _image_code(columns, lax, "row")
        image = msgspec.defstruct("SimpleJsonImage", fields, forbid_unknown_fields=True, gc=False)
        namespace = {**common, "decode": msgspec.json.Decoder(image, strict=not lax).decode}
        exec("\n".join(["def read(raw, message, f32):", "    s = decode(raw)", *("    " + line for line in code),
                        "    return row"]), namespace)
        reader: JsonImageReader = namespace["read"]
        return reader


class JsonPlan:
    """The fast JSON path of one table version: a one-pass message reader, image readers, and
    the RowChange every row of it starts from (decoded rows only differ in a few fields)."""

    __slots__ = ("read_lax", "read_message", "read_strict", "template")

    def __init__(self, table: TableInfo) -> None:
        code = _compiled("json", table, _JsonCode)
        self.template = RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=0,
                                  table_id=table.table_id, table_info=table, schema_version=table.schema_version)
        self.read_lax = code.read_lax
        self.read_strict = code.read_strict
        self.read_message = code.make_read_message(self.template)


_T = TypeVar("_T")
# Generated code by (kind, table version): equal TableInfos share it. Bounded: cleared when full.
_COMPILED: Final[dict[tuple[str, TableInfo], Any]] = {}


def _compiled(kind: str, table: TableInfo, build: Callable[[TableInfo], _T]) -> _T:
    try:
        code: _T | None = _COMPILED.get((kind, table))
    except TypeError:  # an unhashable value somewhere in the TableInfo
        return build(table)
    if code is None:
        code = build(table)
        if len(_COMPILED) >= 256:
            _COMPILED.clear()
        _COMPILED[kind, table] = code
    return code


def json_plan(table: TableInfo) -> JsonPlan | None:
    """The fast-path plan of a table version (cached on it); None when it cannot have one."""
    cache = table.__dict__
    try:
        plan: JsonPlan | None = cache["_pyticdc_simple_json_plan"]
    except KeyError:
        try:
            plan = JsonPlan(table)
        except (TypeError, ValueError):  # a column name msgspec refuses: the general path only
            plan = None
        cache["_pyticdc_simple_json_plan"] = plan
    return plan


def lax_json_safe(message: bytes) -> bool:
    """Whether no string of the message is one lax mode misreads (see the comment on the readers).

    No backslash means no escaped "null"/"-0"; then the plain spellings are the only ones left.
    """
    return b"\\" not in message and b'"-0"' not in message and b'"null"' not in message.lower()


# --------------------------------------------------------------------------- Avro DML
# Map-value union branches as written (zigzag of the index in the schema file's union).
_B_NULL, _B_LONG, _B_FLOAT, _B_DOUBLE, _B_STRING, _B_BYTES, _B_TIMESTAMP, _B_UBIGINT = (
    VALUE_BRANCH[name] << 1
    for name in ("null", "long", "float", "double", "string", "bytes", "Timestamp", "UnsignedBigint")
)
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
        if column.type_code == 8 and column.is_unsigned:
            return _B_UBIGINT, _H_ULONG
        return _B_LONG, _H_ULONG if column.is_unsigned else _H_LONG
    if kind == V.KIND_UINT:
        return _B_LONG, _H_ULONG
    if kind == V.KIND_FLOAT:
        return _B_FLOAT, _H_F32
    if kind == V.KIND_DOUBLE:
        return _B_DOUBLE, _H_F64
    if kind == V.KIND_TIMESTAMP:
        return _B_TIMESTAMP, _H_TIMESTAMP
    if kind == V.KIND_BYTES:
        return (_B_BYTES if V.is_binary_column(column) else _B_STRING), _H_BYTES
    return _B_STRING, _H_TEXT


def avro_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos`` and the offset after it; Fallback where AvroReader.long fails."""
    result = shift = 0
    while True:
        byte = buf[pos]  # IndexError past the end
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:  # an 11th byte
            raise Fallback
    if result >> 64:
        raise Fallback
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
            raise Fallback
        end = pos + size
    if end > len(buf):
        raise Fallback
    return pos, end


# A string or bytes at ``pos`` (a length below 64 inline): its data is buf[start:pos].
_AVRO_STRING: Final = (
    "b = buf[pos]", "if b < 0x80 and not b & 1:", "    start = pos + 1", "    pos = start + (b >> 1)",
    "    if pos > size: raise Fallback", "else:", "    start, pos = string(buf, pos)",
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
            raise Fallback
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
            raise Fallback
        pos += TAIL_SIZE
        if kind == 0:
            if buf[pos] != 2:
                raise Fallback
            columns, pos = image(buf, pos + 1)
            if buf[pos] != 0 or pos + 1 != len(buf):
                raise Fallback
            return replace(template, commit_ts=commit_ts & 18446744073709551615, columns=columns,
                           physical_table_id=table_id)
        if kind == 2:
            if buf[pos] != 2:
                raise Fallback
            columns, pos = image(buf, pos + 1)
            if buf[pos] != 2:
                raise Fallback
            pre, pos = image(buf, pos + 1)
            if pos != len(buf):
                raise Fallback
            return replace(template, op=UPDATE, commit_ts=commit_ts & 18446744073709551615, columns=columns,
                           pre_columns=pre, physical_table_id=table_id)
        if kind != 4 or buf[pos] != 0 or buf[pos + 1] != 2:
            raise Fallback
        pre, pos = image(buf, pos + 2)
        if pos != len(buf):
            raise Fallback
        return replace(template, op=DELETE, commit_ts=commit_ts & 18446744073709551615, pre_columns=pre,
                       physical_table_id=table_id)
    return read
"""


#: Reads a whole Avro DML message of its table version → RowChange (called as JsonMessageReader).
AvroMessageReader = Callable[[bytes, memoryview], RowChange]
#: The union branch of Message, type DML, payload DML, version 1: how every DML message starts.
_AVRO_DML: Final = bytes([MESSAGE_BRANCH << 1, MESSAGE_TYPES.index("DML") << 1, MESSAGE_TYPES.index("DML") << 1, 2])


class _AvroCode:
    """The generated fast Avro path of a table version (shared by equal versions, see _JsonCode).

    Images are read straight through when their entries come in table order (this package's
    encoder) and by a loop over the entries otherwise (goavro writes Go map order, random).
    Only the branch TiCDC writes for each column's type is read here; anything else — another
    branch, an unknown or missing column, several map blocks, a multi-byte key length, a
    claim-check location, handleKeyOnly, a checksum — is left to the general path.
    """

    __slots__ = ("make_read_message", "names", "specs")

    def __init__(self, table: TableInfo) -> None:
        columns = [c for c in table.columns if not c.virtual]
        #: Key bytes → (column name, expected branch byte, handler), for any entry order.
        self.specs: dict[bytes, tuple[str, int, int]] = {}
        self.names = tuple(c.name for c in columns)
        count = _avro_long_bytes(len(columns))
        lines = ["def image(buf, pos):", f"    if not buf.startswith({count!r}, pos):",
                 "        return any_order(buf, pos)", "    first = pos", f"    pos += {len(count)}",
                 "    size = len(buf)"]
        if not columns:  # an empty map is one 0 byte: the general path reads it
            lines = ["def image(buf, pos):", "    raise Fallback"]
        items = []
        for i, column in enumerate(columns):
            key = column.name.encode("utf-8", "surrogateescape")
            branch, handler = _avro_handler(column)
            self.specs[key] = (column.name, branch, handler)
            if len(key) >= 64:
                raise ValueError("key length takes more than one byte")
            entry = bytes([len(key) << 1]) + key
            with_value, with_null = entry + bytes([branch]), entry + bytes([0])
            lines += [f"    if buf.startswith({with_value!r}, pos):", f"        pos += {len(with_value)}"]
            lines += ["        " + line.format(i=i) for line in _AVRO_VALUE[handler]]
            lines += [f"    elif buf.startswith({with_null!r}, pos):", f"        pos += {len(with_null)}",
                      f"        x{i} = None", "    else:", "        return any_order(buf, first)"]
            items.append(f"{column.name!r}: x{i}")
        if columns:
            lines += ["    if buf[pos] != 0:", "        raise Fallback",
                      "    return Row({" + ", ".join(items) + "}), pos + 1"]
        schema = table.schema.encode("utf-8", "surrogateescape")
        name = table.table.encode("utf-8", "surrogateescape")
        head = _AVRO_DML + _avro_long_bytes(len(schema)) + schema + _avro_long_bytes(len(name)) + name
        version = table.schema_version
        tail = _avro_long_bytes(version - (1 << 64) if version > _INT64_MAX else version) + b"\x00\x00\x00"
        namespace: dict[str, Any] = {
            "Row": Row, "Fallback": Fallback, "long": avro_long, "string": _avro_string_end, "f32": _F32.unpack_from,
            "f64": _F64.unpack_from, "any_order": self._any_order, "HEAD": head, "HEAD_SIZE": len(head),
            "TAIL": tail, "TAIL_SIZE": len(tail), "replace": msgspec.structs.replace, "UPDATE": Op.UPDATE,
            "DELETE": Op.DELETE,
        }
        exec("\n".join(lines) + "\n" + _AVRO_MESSAGE, namespace)  # column names only as repr() literals
        self.make_read_message: Callable[[RowChange], AvroMessageReader] = namespace["make"]

    def _any_order(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """An image whose entries are not in table order: a loop over them, then table order."""
        count = buf[pos]
        if not count or count >= 0x80 or count & 1:  # empty, a block with a byte size, 64 entries or more
            raise Fallback
        count >>= 1
        pos += 1
        specs = self.specs
        found: dict[str, Value] = {}
        while count:
            count -= 1
            size = buf[pos]
            if size >= 0x80 or size & 1:
                raise Fallback
            end = pos + 1 + (size >> 1)
            name, branch, handler = specs[buf[pos + 1:end]]  # KeyError: not a column of the table
            tag = buf[end]
            pos = end + 1
            if tag != branch:
                if tag:
                    raise Fallback
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
            raise Fallback
        return Row({name: found[name] for name in self.names if name in found}), pos + 1


def _avro_long_bytes(number: int) -> bytes:
    zigzag = (number << 1) ^ (number >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


class AvroPlan:
    """The fast Avro path of one table version: a reader of its whole DML messages."""

    __slots__ = ("read_message",)

    def __init__(self, table: TableInfo) -> None:
        template = RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=0,
                             table_id=table.table_id, table_info=table, schema_version=table.schema_version)
        self.read_message = _compiled("avro", table, _AvroCode).make_read_message(template)


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


# --------------------------------------------------------------------------- encoding
# Per table, the images TiCDC writes most — every non-virtual column present, values of their
# model types — are rendered by straight-line code. A value of another type goes through the
# general per-value functions (the same normalize/json_value the general path uses, so the same
# text or EncodeError); a missing column (KeyError) or a float past float32 (OverflowError) makes
# the caller render the whole image the general way.
WRITER_FALLBACK: Final = (KeyError, OverflowError)


def json_value(column: ColumnInfo, kind: int, binary: bool, bounds: tuple[int, int], value: object,
               location: str) -> str:
    """JSON text of one column value (encodeValue + encoding/json); ``location`` pre-quoted."""
    return V.json_value(V.normalize(value, column, kind, bounds), kind, binary, location)


def avro_value(out: bytearray, column: ColumnInfo, kind: int, binary: bool, ubigint: bool,
               bounds: tuple[int, int], value: object, location: bytes) -> None:
    """Append the map-value union branch and value of one column (encodeValue4Avro)."""
    value = V.normalize(value, column, kind, bounds)
    if value is None:
        out.append(_B_NULL)
    elif kind == V.KIND_INT or kind == V.KIND_UINT:
        number: int = value  # type: ignore[assignment]
        out.append(_B_UBIGINT if ubigint and kind == V.KIND_INT else _B_LONG)
        write_long(out, number - (1 << 64) if number > _INT64_MAX else number)
    elif kind == V.KIND_FLOAT:
        out.append(_B_FLOAT)
        out += V.float32_bits(value)  # type: ignore[arg-type]
    elif kind == V.KIND_DOUBLE:
        out.append(_B_DOUBLE)
        out += _F64.pack(value)
    elif kind == V.KIND_TIMESTAMP:
        out.append(_B_TIMESTAMP)
        out += location
        write_str(out, value)  # type: ignore[arg-type]
    elif kind == V.KIND_BYTES:
        data: bytes = value  # type: ignore[assignment]
        out.append(_B_BYTES if binary else _B_STRING)
        write_long(out, len(data))
        out += data
    else:
        out.append(_B_STRING)
        write_str(out, value)  # type: ignore[arg-type]


def _varint(out: bytearray, zigzag: int) -> None:
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


class _EncColumn:
    """What the writers need of one column."""

    __slots__ = ("binary", "bounds", "column", "kind", "ubigint")

    def __init__(self, column: ColumnInfo) -> None:
        self.column = column
        self.kind = V.column_kind(column)
        self.binary = V.is_binary_column(column)
        self.bounds = V.int_bounds(column)
        # encodeValue4Avro: BIGINT UNSIGNED → UnsignedBigint record.
        self.ubigint = column.type_code == 8 and column.is_unsigned


#: Renders one image's JSON members: (image, quoted location name) → text between the braces.
JsonImageWriter = Callable[[Mapping[str, Any], str], str]
#: Appends one image's Avro map: (out, image, encoded location name).
AvroImageWriter = Callable[[bytearray, Mapping[str, Any], bytes], None]


def _json_writer_code(columns: list[ColumnInfo]) -> tuple[str, str]:
    """Source of the JSON image writer and the %-template of its members (keys sorted by bytes)."""
    ordered = sorted(enumerate(columns), key=lambda item: item[1].name.encode("utf-8", "surrogateescape"))
    lines = ["def render(image, loc):"]
    for n, (i, column) in enumerate(ordered):
        kind = V.column_kind(column)
        low, high = V.int_bounds(column)
        if kind == V.KIND_INT:
            fast = (f"type(v) is int and {low} <= v <= {high}", "f'\"{v}\"'")
        elif kind == V.KIND_UINT:
            fast = (f"type(v) is int and 0 <= v <= {_MASK64}", "f'\"{v}\"'")
        elif kind == V.KIND_FLOAT:
            fast = ("type(v) is float and v - v == 0", "'\"' + f32(v) + '\"'")
        elif kind == V.KIND_DOUBLE:
            fast = ("type(v) is float and v - v == 0", "'\"' + f64(v) + '\"'")
        elif kind == V.KIND_TIMESTAMP:
            fast = ("type(v) is str", "'{\"location\":' + loc + ',\"value\":' + quote(v) + '}'")
        elif kind == V.KIND_BYTES and V.is_binary_column(column):
            fast = ("type(v) is bytes", "'\"' + b64(v, newline=False).decode('ascii') + '\"'")
        elif kind == V.KIND_BYTES:
            # encoding/json writes each invalid UTF-8 byte as the six characters \ufffd (§1.5).
            fast = ("type(v) is bytes", "quote_bytes(v)")
        else:
            fast = ("type(v) is str", "quote(v)")
        lines += [f"    v = image[{column.name!r}]", f"    if v is None: p{n} = 'null'",
                  f"    elif {fast[0]}: p{n} = {fast[1]}", f"    else: p{n} = general(cols[{i}], v, loc)"]
    lines.append("    return TEMPLATE % (" + "".join(f"p{n}, " for n in range(len(ordered))) + ")")
    template = ",".join(go_json_quote(c.name).replace("%", "%%") + ":%s" for _, c in ordered)
    return "\n".join(lines), template


_AVRO_INT: Final = ("z = (v << 1) ^ (v >> 63)", "if z < 0x80: out.append(z)", "else: varint(out, z)")
_AVRO_UINT64: Final = ("if v > 9223372036854775807: v -= 18446744073709551616", *_AVRO_INT)  # int64 reinterpretation
_AVRO_DATA: Final = ("z = len(b) << 1", "if z < 0x80: out.append(z)", "else: varint(out, z)", "out += b")


def _avro_writer_code(columns: list[ColumnInfo]) -> str:
    """Source of the Avro image writer: one map block in table order."""
    lines = ["def write(out, image, loc):", f"    out += {_avro_long_bytes(len(columns))!r}"]
    for i, column in enumerate(columns):
        kind = V.column_kind(column)
        low, high = V.int_bounds(column)
        if kind == V.KIND_INT:
            branch = _B_UBIGINT if column.type_code == 8 and column.is_unsigned else _B_LONG
            fast: tuple[str, ...] = (f"type(v) is int and {low} <= v <= {high}", f"out.append({branch})",
                                     *(_AVRO_UINT64 if high > _INT64_MAX else _AVRO_INT))
        elif kind == V.KIND_UINT:
            fast = (f"type(v) is int and 0 <= v <= {_MASK64}", f"out.append({_B_LONG})", *_AVRO_UINT64)
        elif kind == V.KIND_FLOAT:
            fast = ("type(v) is float and v - v == 0", f"out.append({_B_FLOAT})", "out += f32(v)")
        elif kind == V.KIND_DOUBLE:
            fast = ("type(v) is float and v - v == 0", f"out.append({_B_DOUBLE})", "out += f64(v)")
        elif kind == V.KIND_TIMESTAMP:
            fast = ("type(v) is str", f"out.append({_B_TIMESTAMP})", "out += loc",
                    "b = v.encode('utf-8', 'surrogateescape')", *_AVRO_DATA)
        elif kind == V.KIND_BYTES:
            fast = ("type(v) is bytes", f"out.append({_B_BYTES if V.is_binary_column(column) else _B_STRING})",
                    "b = v", *_AVRO_DATA)
        else:
            fast = ("type(v) is str", f"out.append({_B_STRING})", "b = v.encode('utf-8', 'surrogateescape')",
                    *_AVRO_DATA)
        key = column.name.encode("utf-8", "surrogateescape")
        lines += [f"    v = image[{column.name!r}]", f"    out += {_avro_long_bytes(len(key)) + key!r}",
                  "    if v is None: out.append(0)", f"    elif {fast[0]}:"]
        lines += ["        " + line for line in fast[1:]]
        lines.append(f"    else: general(out, cols[{i}], v, loc)")
    lines.append("    out.append(0)")
    return "\n".join(lines)


class Writers:
    """The per-table encoding plan: message heads and straight-line image writers."""

    __slots__ = ("avro_head", "avro_image", "avro_version", "json_head", "json_image", "json_version")

    def __init__(self, table: TableInfo) -> None:
        columns = [c for c in table.columns if not c.virtual]
        specs = tuple(_EncColumn(c) for c in columns)
        head = '{"version":1'
        if table.schema:
            head += ',"database":' + go_json_quote(table.schema)
        if table.table:
            head += ',"table":' + go_json_quote(table.table)
        self.json_head = head
        self.json_version = f',"schemaVersion":{table.schema_version}' if table.schema_version else ""
        schema = table.schema.encode("utf-8", "surrogateescape")
        name = table.table.encode("utf-8", "surrogateescape")
        self.avro_head = _avro_long_bytes(len(schema)) + schema + _avro_long_bytes(len(name)) + name
        version = table.schema_version
        self.avro_version = _avro_long_bytes(version - (1 << 64) if version > _INT64_MAX else version)

        def general_json(spec: _EncColumn, value: object, location: str) -> str:
            return json_value(spec.column, spec.kind, spec.binary, spec.bounds, value, location)

        def general_avro(out: bytearray, spec: _EncColumn, value: object, location: bytes) -> None:
            avro_value(out, spec.column, spec.kind, spec.binary, spec.ubigint, spec.bounds, value, location)

        source, template = _json_writer_code(columns)
        namespace: dict[str, Any] = {
            "TEMPLATE": template, "cols": specs, "general": general_json, "quote": go_json_quote,
            "quote_bytes": go_json_quote_bytes,
            "f32": format_float32, "f64": V.format_double, "b64": binascii.b2a_base64,
        }
        exec(source, namespace)  # column names only as repr() literals
        self.json_image: JsonImageWriter = namespace["render"]
        namespace = {
            "cols": specs, "general": general_avro, "varint": _varint, "f32": _F32.pack, "f64": _F64.pack,
        }
        exec(_avro_writer_code(columns), namespace)
        self.avro_image: AvroImageWriter = namespace["write"]


def writers(table: TableInfo) -> Writers | None:
    """The encoding plan of a table (cached on it); None when it cannot have one."""
    cache = table.__dict__
    try:
        plan: Writers | None = cache["_pyticdc_simple_writers"]
    except KeyError:
        try:
            plan = _compiled("writers", table, Writers)
        except (UnicodeEncodeError, ValueError):  # a name that is not valid text
            plan = None
        cache["_pyticdc_simple_writers"] = plan
    return plan
