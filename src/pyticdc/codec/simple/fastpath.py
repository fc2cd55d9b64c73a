"""Fast paths of the Simple codec: the shared per-table code cache and the encoders' image writers.

Every fast path is a speculation on the shapes TiCDC (and this package's encoder) produce. On
anything else — another type, a non-canonical number, a missing or unknown column, input it
does not check itself — it declines (raises one of ``pyticdc.codec._fastpath.DECLINES``, or the
caller sees None), and the caller redoes the work on the reference path. So the fast paths
accept a subset of what the reference path accepts and yield the same values and bytes, and the
reference path stays the only source of DecodeErrors and of their messages and positions. The
writers' per-value fallbacks call the reference path's own functions, so EncodeErrors are the
same too. The readers are in ``fastpath_json`` and ``fastpath_avro``.

The per-table functions are generated through ``pyticdc.codec._fastpath.compile_function``: one
straight line of code per column, so a row costs no per-value dispatch. Column names enter the
generated source only as ``literal()``s; key bytes and everything else come from the namespace.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from pyticdc.codec._fastpath import compile_function, literal
from pyticdc.codec.jsontext import format_float32, go_json_quote, go_json_quote_bytes
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.avro import long_bytes
from pyticdc.codec.simple.message import INT64_MAX, MASK64, u64_as_i64
from pyticdc.model import TableInfo

__all__ = ["AvroImageWriter", "JsonImageWriter", "Writers", "compiled", "native_kind", "writers"]

_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")

_T = TypeVar("_T")
# Generated code by (kind, table version): equal TableInfos share it. Bounded: cleared when full.
_COMPILED: Final[dict[tuple[str, TableInfo], Any]] = {}


def compiled(kind: str, table: TableInfo, build: Callable[[TableInfo], _T]) -> _T:
    """``build(table)``, shared by equal table versions (a BOOTSTRAP brings a new, equal TableInfo)."""
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


#: An INT-kind column's bounds → its letter in the C writers.
_NATIVE_INTS: Final = {(-INT64_MAX - 1, INT64_MAX): b"i", (0, INT64_MAX): b"p", (0, MASK64): b"u"}
_NATIVE_KINDS: Final = {V.KIND_UINT: b"u", V.KIND_FLOAT: b"f", V.KIND_DOUBLE: b"d", V.KIND_TIMESTAMP: b"T"}


def native_kind(spec: V.ColumnPlan) -> bytes | None:
    """A column's value letter in the C writers of both encodings (_native.simple_json_row, avro_row_image):
    ``i`` int64, ``p`` 0..int64, ``u`` uint64 (BIGINT UNSIGNED, BIT, ENUM, SET), ``f`` FLOAT, ``d`` DOUBLE,
    ``T`` TIMESTAMP, ``B`` / ``b`` bytes of a binary / text charset, ``s`` a str (the rest); None for
    integer bounds neither writer has a letter for."""
    if spec.kind == V.KIND_INT:
        return _NATIVE_INTS.get(spec.bounds)
    if spec.kind == V.KIND_BYTES:
        return b"B" if spec.binary else b"b"
    return _NATIVE_KINDS.get(spec.kind, b"s")


# Per table, the images TiCDC writes most — every non-virtual column present, values of their
# model types — are rendered by straight-line code. A value of another type goes through the
# reference per-value functions (the same normalize/json_value/avro_value, so the same text or
# EncodeError); a missing column (KeyError) or a float past float32 (OverflowError) declines and
# the caller renders the whole image the reference way.

#: Renders one image's JSON members: (image, quoted location name) → text between the braces.
JsonImageWriter = Callable[[Mapping[str, Any], str], str]
#: Appends one image's Avro map: (out, image, encoded location name).
AvroImageWriter = Callable[[bytearray, Mapping[str, Any], bytes], None]


def _varint(out: bytearray, zigzag: int) -> None:
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _json_writer_code(columns: list[V.ColumnPlan]) -> tuple[str, str]:
    """Source of the JSON image writer and the %-template of its members (keys sorted by bytes)."""
    ordered = sorted(enumerate(columns), key=lambda item: item[1].name.encode("utf-8", "surrogateescape"))
    lines = ["def render(image, loc):"]
    for n, (i, spec) in enumerate(ordered):
        kind = spec.kind
        low, high = spec.bounds
        if kind == V.KIND_INT:
            fast = (f"type(v) is int and {low} <= v <= {high}", "f'\"{v}\"'")
        elif kind == V.KIND_UINT:
            fast = (f"type(v) is int and 0 <= v <= {MASK64}", "f'\"{v}\"'")
        elif kind == V.KIND_FLOAT:
            fast = ("type(v) is float and v - v == 0", "'\"' + f32(v) + '\"'")
        elif kind == V.KIND_DOUBLE:
            fast = ("type(v) is float and v - v == 0", "'\"' + f64(v) + '\"'")
        elif kind == V.KIND_TIMESTAMP:
            fast = ("type(v) is str", "'{\"location\":' + loc + ',\"value\":' + quote(v) + '}'")
        elif kind == V.KIND_BYTES and spec.binary:
            fast = ("type(v) is bytes", "'\"' + b64(v, newline=False).decode('ascii') + '\"'")
        elif kind == V.KIND_BYTES:
            # encoding/json writes each invalid UTF-8 byte as the six characters \ufffd (§1.5).
            fast = ("type(v) is bytes", "quote_bytes(v)")
        else:
            fast = ("type(v) is str", "quote(v)")
        lines += [f"    v = image[{literal(spec.name)}]", f"    if v is None: p{n} = 'null'",
                  f"    elif {fast[0]}: p{n} = {fast[1]}", f"    else: p{n} = general(cols[{i}], v, loc)"]
    lines.append("    return TEMPLATE % (" + "".join(f"p{n}, " for n in range(len(ordered))) + ")")
    template = ",".join(go_json_quote(c.name).replace("%", "%%") + ":%s" for _, c in ordered)
    return "\n".join(lines), template


_AVRO_INT: Final = ("z = (v << 1) ^ (v >> 63)", "if z < 0x80: out.append(z)", "else: varint(out, z)")
_AVRO_UINT64: Final = ("if v > 9223372036854775807: v -= 18446744073709551616", *_AVRO_INT)  # int64 reinterpretation
_AVRO_DATA: Final = ("z = len(b) << 1", "if z < 0x80: out.append(z)", "else: varint(out, z)", "out += b")


def _avro_writer_code(columns: list[V.ColumnPlan], namespace: dict[str, Any]) -> str:
    """Source of the Avro image writer (one map block in table order); its key bytes go to ``namespace``."""
    namespace["COUNT"] = long_bytes(len(columns))
    lines = ["def write(out, image, loc):", "    out += COUNT"]
    for i, spec in enumerate(columns):
        kind = spec.kind
        low, high = spec.bounds
        if kind == V.KIND_INT:
            branch = V.B_UBIGINT if spec.ubigint else V.B_LONG
            fast: tuple[str, ...] = (f"type(v) is int and {low} <= v <= {high}", f"out.append({branch})",
                                     *(_AVRO_UINT64 if high > INT64_MAX else _AVRO_INT))
        elif kind == V.KIND_UINT:
            fast = (f"type(v) is int and 0 <= v <= {MASK64}", f"out.append({V.B_LONG})", *_AVRO_UINT64)
        elif kind == V.KIND_FLOAT:
            fast = ("type(v) is float and v - v == 0", f"out.append({V.B_FLOAT})", "out += f32(v)")
        elif kind == V.KIND_DOUBLE:
            fast = ("type(v) is float and v - v == 0", f"out.append({V.B_DOUBLE})", "out += f64(v)")
        elif kind == V.KIND_TIMESTAMP:
            fast = ("type(v) is str", f"out.append({V.B_TIMESTAMP})", "out += loc",
                    "b = v.encode('utf-8', 'surrogateescape')", *_AVRO_DATA)
        elif kind == V.KIND_BYTES:
            fast = ("type(v) is bytes", f"out.append({V.B_BYTES if spec.binary else V.B_STRING})",
                    "b = v", *_AVRO_DATA)
        else:
            fast = ("type(v) is str", f"out.append({V.B_STRING})", "b = v.encode('utf-8', 'surrogateescape')",
                    *_AVRO_DATA)
        namespace[f"K{i}"] = spec.avro_key
        lines += [f"    v = image[{literal(spec.name)}]", f"    out += K{i}",
                  "    if v is None: out.append(0)", f"    elif {fast[0]}:"]
        lines += ["        " + line for line in fast[1:]]
        lines.append(f"    else: general(out, cols[{i}], v, loc)")
    lines.append("    out.append(0)")
    return "\n".join(lines)


def _general_json(spec: V.ColumnPlan, value: object, location: str) -> str:
    return V.json_value(V.normalize(value, spec.column, spec.kind, spec.bounds), spec.kind, spec.binary, location)


class Writers:
    """The per-table encoding plan: message heads and straight-line image writers."""

    __slots__ = ("avro_head", "avro_image", "avro_version", "json_head", "json_image", "json_version")

    def __init__(self, table: TableInfo) -> None:
        specs = [plan for plan in V.table_plan(table)[0] if not plan.virtual]
        head = '{"version":1'
        if table.schema:
            head += ',"database":' + go_json_quote(table.schema)
        if table.table:
            head += ',"table":' + go_json_quote(table.table)
        self.json_head = head
        self.json_version = f',"schemaVersion":{table.schema_version}' if table.schema_version else ""
        schema = table.schema.encode("utf-8", "surrogateescape")
        name = table.table.encode("utf-8", "surrogateescape")
        self.avro_head = long_bytes(len(schema)) + schema + long_bytes(len(name)) + name
        self.avro_version = long_bytes(u64_as_i64(table.schema_version))

        source, template = _json_writer_code(specs)
        namespace: dict[str, Any] = {
            "TEMPLATE": template, "cols": tuple(specs), "general": _general_json, "quote": go_json_quote,
            "quote_bytes": go_json_quote_bytes, "f32": format_float32, "f64": V.format_double,
            "b64": binascii.b2a_base64,
        }
        self.json_image: JsonImageWriter = compile_function(source, "render", namespace)
        namespace = {
            "cols": tuple(specs), "general": V.avro_value, "varint": _varint, "f32": _F32.pack, "f64": _F64.pack,
        }
        source = _avro_writer_code(specs, namespace)
        self.avro_image: AvroImageWriter = compile_function(source, "write", namespace)


def writers(table: TableInfo) -> Writers | None:
    """The encoding plan of a table (cached on it); None when it cannot have one."""
    cache = table.__dict__
    try:
        plan: Writers | None = cache["_pyticdc_simple_writers"]
    except KeyError:
        try:
            plan = compiled("writers", table, Writers)
        except (UnicodeEncodeError, ValueError):  # a name that is not valid text
            plan = None
        cache["_pyticdc_simple_writers"] = plan
    return plan
