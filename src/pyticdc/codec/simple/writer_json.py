"""Simple-JSON's fast row writer: one function generated per table writes a whole row message.

The encoder's reference path (``Encoder._dml``) assembles a message member by member; this writer
speculates on the message TiCDC writes most — an INSERT, UPDATE or DELETE whose images hold every
non-virtual column of the table — and writes it in one go: the column values become their wire
values in straight-line code (keys in encoding/json's sorted order), orjson writes the whole
message (envelope members in Go's field order, those fixed per table as constants) in one call and
Go's HTML and U+2028/9 escapes are fixed up after. A value of another type goes through the
reference per-value functions (its exact JSON text as an ``orjson.Fragment``). Anything else — a
missing or extra column, invalid UTF-8 in a text column, a lone surrogate, a commit ts that is no
uint64, a zero table id — declines (the writer returns None or raises one of ``WRITER_DECLINES``)
and the encoder writes the row the reference way, which also raises its EncodeErrors. A
conformance test checks both give the same bytes.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any, Final

import orjson

from pyticdc.codec._fastpath import DECLINES, compile_function, literal
from pyticdc.codec.jsontext import format_float32_f, format_float64_f, go_json_quote, orjson_as_go_json
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.fastpath import compiled
from pyticdc.codec.simple.message import MASK64
from pyticdc.errors import EncodeError
from pyticdc.model import Op, RowChange, TableInfo

__all__ = ["WRITER_DECLINES", "JsonRowWriter", "json_row_writer"]

#: (row, buildTs, location name) → the message bytes, or None where the reference path must write it.
JsonRowWriter = Callable[[RowChange, int, str], "bytes | None"]

#: What a writer may raise to decline a row: the fast-path declines, orjson's refusal of a lone
#: surrogate (a TypeError subclass) and the reference functions' EncodeError (the reference path
#: raises it again, with its own checks first).
WRITER_DECLINES: Final = (*DECLINES, orjson.JSONEncodeError, EncodeError)


def _general(spec: V.ColumnPlan, value: object, location: str) -> orjson.Fragment:
    """A value of an unusual type as the reference writes it (``json_value`` of ``normalize``)."""
    text = V.json_value(V.normalize(value, spec.column, spec.kind, spec.bounds), spec.kind, spec.binary,
                        go_json_quote(location))
    return orjson.Fragment(text)


def _expression(index: int, spec: V.ColumnPlan) -> str:
    """An expression of ``v`` (a non-null value of column ``spec``) giving its wire value for orjson."""
    kind = spec.kind
    other = f"general(cols[{index}], v, loc)"
    if kind == V.KIND_INT:
        low, high = spec.bounds
        return f"str(v) if type(v) is int and {low} <= v <= {high} else {other}"
    if kind == V.KIND_UINT:
        return f"str(v) if type(v) is int and 0 <= v <= {MASK64} else {other}"
    if kind == V.KIND_FLOAT:
        return f"f32(v) if type(v) is float and v - v == 0 else {other}"
    if kind == V.KIND_DOUBLE:
        return f"f64(v) if type(v) is float and v - v == 0 else {other}"
    if kind == V.KIND_TIMESTAMP:
        # map[string]string: encoding/json sorts the keys ("location" < "value").
        return f"{{'location': loc, 'value': v}} if type(v) is str else {other}"
    if kind == V.KIND_BYTES and spec.binary:
        return f"b64(v, newline=False).decode('ascii') if type(v) is bytes else {other}"
    if kind == V.KIND_BYTES:
        # Invalid UTF-8 declines: encoding/json writes each such byte as the escape \ufffd.
        return f"v.decode() if type(v) is bytes else {other}"
    return f"v if type(v) is str else {other}"


def _source(specs: list[V.ColumnPlan], delete_handle_only: bool, envelope: str, version: str) -> str:
    count = len(specs)
    # encoding/json sorts map keys by their UTF-8 bytes.
    ordered = sorted(range(count), key=lambda i: specs[i].name.encode("utf-8"))

    def image(name: str) -> str:
        return "{" + ", ".join(
            f"{literal(specs[i].name)}: None if (v := {name}[{literal(specs[i].name)}]) is None "
            f"else ({_expression(i, specs[i])})" for i in ordered) + "}"

    def document(kind: str, images: str) -> str:
        # The whole message in Go's field order, one orjson call (its ints are Go's %d for these types).
        return (f"fixups(dumps({{{envelope}'tableID': table_id, 'type': {literal(kind)}, 'commitTs': commit_ts, "
                f"'buildTs': build_ts{version}, {images}}}))")

    data_member = repr("data") + ": " + image("new")
    return "\n".join([
        "def write(row, build_ts, loc):",
        "    commit_ts = row.commit_ts",
        f"    if type(commit_ts) is not int or not 0 <= commit_ts <= {MASK64} or type(build_ts) is not int:",
        "        return None",
        # a zero table id is left out (omitempty): the reference path writes that rare message
        "    table_id = row.physical_table_id or row.table_id or TABLE_ID",
        "    if type(table_id) is not int or not table_id: return None",
        "    op = row.op",
        "    if op is INSERT:",
        "        new = row.columns",
        f"        if new is None or len(new) != {count}: return None",
        f"        return {document('INSERT', data_member)}",
        "    if op is UPDATE:",
        "        new = row.columns",
        "        old = row.pre_columns",
        f"        if new is None or old is None or len(new) != {count} or len(old) != {count}: return None",
        f"        return {document('UPDATE', f'{data_member}, ' + repr('old') + ': ' + image('old'))}",
        "    if op is DELETE:",
        "        old = row.pre_columns",
        f"        if {delete_handle_only} or old is None or len(old) != {count}: return None",
        f"        return {document('DELETE', repr('old') + ': ' + image('old'))}",
        "    return None",
    ]) + "\n"


def _build(table: TableInfo, delete_handle_only: bool) -> JsonRowWriter | None:
    specs = [plan for plan in V.table_plan(table)[0] if not plan.virtual]
    names = [spec.name for spec in specs]
    if not specs or len(set(names)) != len(names) or not 0 <= table.schema_version <= MASK64:
        return None
    # encoding/json's omitempty: an empty name or a zero version is left out.
    envelope = "'version': 1, " + ("'database': DATABASE, " if table.schema else "") + (
        "'table': TABLE, " if table.table else "")
    version = ", 'schemaVersion': SCHEMA_VERSION" if table.schema_version else ""
    (table.schema + table.table).encode("utf-8")  # a lone surrogate: no writer (UnicodeError)
    namespace: dict[str, Any] = {
        "DATABASE": table.schema, "TABLE": table.table, "SCHEMA_VERSION": table.schema_version,
        "TABLE_ID": table.table_id, "cols": tuple(specs),
        "INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "dumps": orjson.dumps,
        "fixups": orjson_as_go_json, "general": _general, "f32": format_float32_f, "f64": format_float64_f,
        "b64": binascii.b2a_base64,
    }
    writer: JsonRowWriter = compile_function(_source(specs, delete_handle_only, envelope, version), "write", namespace)
    return writer


def _build_both(table: TableInfo) -> tuple[JsonRowWriter | None, JsonRowWriter | None]:
    try:
        return _build(table, False), _build(table, True)
    except (UnicodeError, ValueError):  # a name that is not valid text
        return None, None


def json_row_writer(table: TableInfo, delete_handle_only: bool) -> JsonRowWriter | None:
    """The generated row-message writer of ``table`` (shared by equal table versions); None for a
    table it does not write (no columns, duplicate names, names that are not valid text)."""
    cache = table.__dict__
    writers: tuple[JsonRowWriter | None, JsonRowWriter | None] | None = cache.get("_pyticdc_simple_json_rows")
    if writers is None:
        writers = cache["_pyticdc_simple_json_rows"] = compiled("json-rows", table, _build_both)
    return writers[1 if delete_handle_only else 0]
