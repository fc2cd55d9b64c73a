"""The fast path of Simple JSON messages: msgspec envelopes and per-table readers.

A plain DML message is decoded by msgspec straight into typed structs generated once per table
version (``JsonPlan``); anything else is declined to the reference path
(``pyticdc.codec.simple.fastpath`` states the contract).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, TypeAlias, cast

import msgspec

from pyticdc.codec._fastpath import Decline, compile_function, literal
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.fastpath import compiled
from pyticdc.codec.simple.message import INT64_MAX, MASK64
from pyticdc.model import ColumnInfo, Op, Row, RowChange, TableInfo, TypeCode

__all__ = [
    "JSON_DML_DECODER",
    "JSON_WIRE_IMAGE_DECODER",
    "NULL_RAW",
    "JsonChecksum",
    "JsonDml",
    "JsonImageReader",
    "JsonMessageReader",
    "JsonPlan",
    "JsonTimestamp",
    "float32_buffer",
    "json_plan",
    "lax_json_safe",
    "lax_null_safe",
    "lax_zero_safe",
    "wire_image",
]

_MASK64: Final = MASK64
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = INT64_MAX
_F32: Final = struct.Struct("<f")


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


class JsonDml(msgspec.Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """A WATERMARK or DML message with the fields the reference path reads for them, typed.

    Unknown fields (a DDL's ``sql``/``tableSchema``, anything else) and ``null`` where a value is
    expected fail validation and send the message to the reference path, which ignores or
    defaults them; ``data``/``old`` stay raw until the table's typed image decoder reads them.
    The fields are in Go's order: msgspec looks a key up from the field after the last one found.
    """

    version: _Int64 = 0
    database: str = ""
    table: str = ""
    tableID: _Int64 = 0
    type: str
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


def wire_image(raw: msgspec.Raw) -> Row:
    """The wire strings of a row whose schema is unknown, as the reference path keeps them."""
    values = JSON_WIRE_IMAGE_DECODER.decode(raw)
    for name, value in values.items():
        if type(value) is JsonTimestamp:
            values[name] = value.value
    return Row(values)


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
# raising Decline. Strict reader: integers are ASCII digits in the canonical case (signs and the
# rest go through the exact parser); float() takes a superset of ParseFloat's syntax
# (surrounding whitespace, underscores, non-ASCII digits), so those, NaN and ±Inf fall back.
_STRICT_INT: Final = (
    "if v.isdigit() and v.isascii():",
    "    v = int(v)",
    "    if v > {high}: raise Decline",
    "else:",
    "    v = parse_int(v, cols[{i}], '')",
)
_STRICT_UINT: Final = (
    "if v.isdigit() and v.isascii():",
    "    v = int(v)",
    "    if v > 18446744073709551615: raise Decline",
    "else:",
    "    raise Decline",
)
_STRICT_FLOAT: Final = (
    "n = float(v)",
    "if n - n != 0 or not v.isascii() or '_' in v or v[0] <= ' ' or v[-1] <= ' ': raise Decline",
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
        if V.is_unsigned_bigint(column):  # up to 2**64-1: checked in Python
            return _NOT_NEGATIVE | _NO_FLOAT, "bigint", True
        # int64: TiCDC writes no signed BIGINT above it; ParseUint's retry is left to the reference path
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


def _image_code(columns: list[ColumnInfo], lax: bool, result: str, var: str = "s") -> tuple[list[Any], list[str]]:
    """The image struct's fields and the code turning struct ``var`` into the Row ``result``.

    A NOT NULL column takes no null: one that comes anyway fails validation (the reference path
    then returns it), and lax mode cannot read a "null" string into it.
    """
    fields, lines, nulls, zeros = _image_parts(columns, lax, result, var)
    return fields, _lax_checks(nulls, zeros) + lines


def _lax_checks(nulls: list[str], zeros: list[str]) -> list[str]:
    """Lax mode may have read a "null"/"-0" string into one of these: look at the message then."""
    checks = []
    if nulls:
        checks.append(f"if {' or '.join(nulls)}: check(message)")
    if zeros:
        checks.append(f"if {' or '.join(zeros)}: check_zero(message)")
    return checks


def _image_parts(
    columns: list[ColumnInfo], lax: bool, result: str, var: str,
) -> tuple[list[Any], list[str], list[str], list[str]]:
    """``_image_code``'s fields and conversion lines, and the tests saying the message needs a lax check."""
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
            nulls.append(f"{var}.c{i} is None")
        # A zero may have been "-0": ParseFloat's -0.0, and an error for ParseUint (BIT/ENUM/SET).
        if lax and V.column_kind(column) in (V.KIND_FLOAT, V.KIND_DOUBLE, V.KIND_UINT):
            zeros.append(f"{var}.c{i} == 0")
        if step is None:
            items.append(f"{literal(column.name)}: {var}.c{i}")
            continue
        items.append(f"{literal(column.name)}: x{i}")
        lines.append(f"x{i} = {var}.c{i}")
        when = f"if x{i} is not None: " if nullable else ""
        if step == "bigint":
            test = f"x{i} is not None and x{i}" if nullable else f"x{i}"
            lines.append(f"if {test} > 18446744073709551615: raise Decline")
        elif lax and step == "float":
            # float32 rounding through the decoder's own 4-byte buffer (no allocation but the result)
            lines.append(f"if x{i}: f32[0] = x{i}; x{i} = f32[0]")  # 0.0, -0.0 and None stay
        elif step in _ONE_LINE_STEPS:
            lines.append(f"{when}x{i} = x{i}{_ONE_LINE_STEPS[step]}")
        else:
            high = _MASK64 if column.type_code == TypeCode.LONGLONG else _INT64_MAX  # ParseUint retry: BIGINT only
            lines += [f"if x{i} is not None:", f"    v = x{i}"]
            lines += ["    " + line.format(i=i, high=high) for line in _STEPS[step]]
            lines.append(f"    x{i} = v")
    lines.append(f"{result} = Row({{" + ", ".join(items) + "})")
    # msgspec looks a key up from the field after the last one found: fields in the wire's order
    # (encoding/json sorts map keys by their UTF-8 bytes) find each key at the first try.
    fields.sort(key=lambda field: field[2].name.encode("utf-8", "surrogatepass"))
    return fields, lines, nulls, zeros


#: Reads one image: (raw ``data``/``old`` value, whole message, float32 buffer) → Row. The buffer
#: (``float32_buffer()``) belongs to the caller, as the readers are shared between decoders.
JsonImageReader = Callable[[msgspec.Raw, bytes, memoryview], Row]
#: Reads a whole DML message of its table version (no claim-check location) → RowChange.
JsonMessageReader = Callable[[bytes, memoryview], RowChange]

# The one-pass reader: exactly the images of the op (an absent one the reference path defaults, an
# extra one it validates and drops: both are left to it).
_ONE_PASS: Final = """
def make(template):
    def read(message, f32):
        m = decode(message)
        kind = m.type
        s = m.data
        if kind == "INSERT":
            if s is None or m.old is not None:
                raise Decline
{data}
            return replace(template, commit_ts=m.commitTs, columns=columns, physical_table_id=m.tableID)
        if kind == "UPDATE":
            o = m.old
            if s is None or o is None:
                raise Decline
            # one look at the message for both images (a check is a scan of all its bytes)
{update_checks}
{update_data}
{update_old}
            return replace(template, op=UPDATE, commit_ts=m.commitTs, columns=columns, pre_columns=pre,
                           physical_table_id=m.tableID)
        s = m.old
        if s is None or m.data is not None:
            raise Decline
{delete}
        return replace(template, op=DELETE, commit_ts=m.commitTs, pre_columns=pre, physical_table_id=m.tableID)
    return read
"""


def _indent(lines: list[str], width: int) -> str:
    return "\n".join(" " * width + line for line in lines)


def _check_lax(message: bytes) -> None:
    # Only a "null" string turns into a null: a "-0" is the zero check's (_check_lax_zero) concern.
    if not lax_null_safe(message):
        raise Decline


def _check_lax_zero(message: bytes) -> None:
    if not lax_zero_safe(message):
        raise Decline


def _no_one_pass(message: bytes, f32: memoryview) -> RowChange:
    raise Decline


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
            "Row": Row, "Decline": Decline, "parse_int": V.parse_int, "cols": tuple(columns),
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
        _, update_data, data_nulls, data_zeros = _image_parts(columns, True, "columns", "s")
        _, update_old, old_nulls, old_zeros = _image_parts(columns, True, "pre", "o")
        update_checks = _lax_checks(data_nulls + old_nulls, data_zeros + old_zeros)
        image = msgspec.defstruct("SimpleJsonLaxImage", image_fields, forbid_unknown_fields=True, gc=False)
        # The members in Go's field order (see _image_parts on msgspec's key lookup).
        message_type = msgspec.defstruct("SimpleJsonLaxMessage", [
            ("version", _LAX_INT64, 0),
            # database, table and schemaVersion are required: a message without one is not
            # this table's (a fresh decoder reads it as a row of table "" or version 0).
            ("database", Literal[table.schema]), ("table", Literal[table.table]), ("tableID", _LAX_INT64, 0),
            ("type", Literal["INSERT", "UPDATE", "DELETE"]), ("commitTs", _UNSIGNED63 | _NO_FLOAT | _NO_STR, 0),
            ("buildTs", _LAX_INT64, 0), ("schemaVersion", Literal[table.schema_version] | _NO_FLOAT | _NO_STR),
            # encoding/json leaves both out when empty/false (omitempty): present, they take the two-pass path
            ("claimCheckLocation", _NO_STR, ""), ("handleKeyOnly", _NO_STR, False),
            ("data", image | _NO_STR | None, None), ("old", image | _NO_STR | None, None),
        ], forbid_unknown_fields=True, gc=False, kw_only=True)
        namespace = {
            **common, "decode": msgspec.json.Decoder(message_type, strict=False).decode, "UPDATE": Op.UPDATE,
            "DELETE": Op.DELETE, "replace": msgspec.structs.replace,
        }
        source = _ONE_PASS.format(data=_indent(data_code, 12), update_checks=_indent(update_checks or ["pass"], 12),
                                  update_data=_indent(update_data, 12), update_old=_indent(update_old, 12),
                                  delete=_indent(old_code, 8))
        self.make_read_message = compile_function(source, "make", namespace)

    @staticmethod
    def _image_reader(columns: list[ColumnInfo], lax: bool, common: dict[str, Any]) -> JsonImageReader:
        fields, code = _image_code(columns, lax, "row")
        image = msgspec.defstruct("SimpleJsonImage", fields, forbid_unknown_fields=True, gc=False)
        namespace = {**common, "decode": msgspec.json.Decoder(image, strict=not lax).decode}
        source = "\n".join(["def read(raw, message, f32):", "    s = decode(raw)", *("    " + line for line in code),
                             "    return row"])
        reader: JsonImageReader = compile_function(source, "read", namespace)
        return reader


class JsonPlan:
    """The fast JSON path of one table version: a one-pass message reader, image readers, and
    the RowChange every row of it starts from (decoded rows only differ in a few fields)."""

    __slots__ = ("read_lax", "read_message", "read_strict", "template")

    def __init__(self, table: TableInfo) -> None:
        code = compiled("json", table, _JsonCode)
        self.template = RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=0,
                                  table_id=table.table_id, table_info=table, schema_version=table.schema_version)
        self.read_lax = code.read_lax
        self.read_strict = code.read_strict
        self.read_message = code.make_read_message(self.template)



def json_plan(table: TableInfo) -> JsonPlan | None:
    """The fast-path plan of a table version (cached on it); None when it cannot have one."""
    cache = table.__dict__
    try:
        plan: JsonPlan | None = cache["_pyticdc_simple_json_plan"]
    except KeyError:
        try:
            plan = JsonPlan(table)
        except (TypeError, ValueError):  # a column name msgspec refuses: the reference path only
            plan = None
        cache["_pyticdc_simple_json_plan"] = plan
    return plan


def lax_json_safe(message: bytes) -> bool:
    """Whether no string of the message is one lax mode misreads (see the comment on the readers).

    Such a string is a quote, its four (two) characters each written plainly or as a ``\\u``
    escape (no other JSON escape yields a letter, a digit or a minus), and a quote: the patterns
    match every spelling, so a backslash elsewhere (an escaped quote in a JSON column, a newline
    in a text) no longer sends a message with a NULL to the two-pass path.
    """
    return lax_null_safe(message) and lax_zero_safe(message)


def lax_null_safe(message: bytes) -> bool:
    """Whether no string of the message is a "null" (any case, any letter \\u-escaped), which lax mode reads as null."""
    lowered = message.lower()
    # Every spelling holds the ull" of a plain one or a \u escape of n, u or l: one scan (re's search for
    # a literal first byte) clears most messages; a match is looked at closely below.
    if _NULL_PART.search(lowered) is None:
        return True
    # Such a string ends in null": a JSON null is followed by , } ] or a space, never a quote. re's
    # literal search clears most messages faster than bytes.__contains__, whose skip table a quote
    # (the commonest byte here) defeats.
    if _NULL_END.search(lowered) is not None and b'"null"' in lowered:
        return False
    # Without a backslash (one memchr) no escaped spelling exists; with one, an escape of n, u or l
    # must (the pattern starts with a quote, which re tries at every quote: run it only when needed).
    if 0x5C not in message or _ESCAPED_NULL_CHARACTER.search(lowered) is None:
        return True
    return _LAX_NULL.search(lowered) is None


def lax_zero_safe(message: bytes) -> bool:
    """Whether no string of the message is a "-0" (either character \\u-escaped), which lax mode reads as 0."""
    # Literal searches by re (bytes.__contains__ is slow on needles holding a quote, JSON's commonest
    # byte; re scans for their first byte): a plain "-0" ends in -0", an escaped one holds \u002d or
    # \u0030, and only then is the full pattern (which starts at every quote) run.
    if _MINUS_ZERO_END.search(message) is not None and b'"-0"' in message:
        return False
    return 0x5C not in message or _ESCAPED_ZERO_CHARACTER.search(message) is None or \
        _LAX_MINUS_ZERO.search(message) is None


#: "null" in any case (on the lowered message), each letter plain or \u-escaped (hex in any case).
_LAX_NULL: Final = re.compile(rb'"(?:n|\\u00[46]e)(?:u|\\u00[57]5)(?:l|\\u00[46]c)(?:l|\\u00[46]c)"')
#: What every "null" string holds (on the lowered message): ull" or a \u escape of one of its letters.
_NULL_PART: Final = re.compile(rb'u(?:ll"|00(?:[46][ec]|[57]5))')
#: The end of a "null" string (on the lowered message).
_NULL_END: Final = re.compile(rb'null"')
#: A \u escape of a character of "null" (on the lowered message).
_ESCAPED_NULL_CHARACTER: Final = re.compile(rb"\\u00(?:[46][ec]|[57]5)")
#: The end of a plain "-0".
_MINUS_ZERO_END: Final = re.compile(rb'-0"')
#: A \u escape of a character of "-0".
_ESCAPED_ZERO_CHARACTER: Final = re.compile(rb"\\u00(?:2[dD]|30)")
#: "-0", each character plain or \u-escaped.
_LAX_MINUS_ZERO: Final = re.compile(rb'"(?:-|\\u002[dD])(?:0|\\u0030)"')
