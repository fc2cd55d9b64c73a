"""Open Protocol's fast row writer: one function generated per table writes a row's key and value.

The encoder's reference path (``_row_key``, ``_images`` and ``_render_row``) builds a row's key and
value member by member; this writer speculates on the rows TiCDC writes most — an INSERT, UPDATE or
DELETE whose images hold every column of the table, values of their model types — and writes both
in one go: the key from a template fixed per table, the value by orjson from nested dicts in
encoding/json's key order (``{"t":…,"h":true,"f":…,"v":…}`` per column), Go's float texts as
``orjson.Fragment``s, Go's HTML and U+2028/9 escapes fixed up after. Anything else — a missing or
extra column, another value type, invalid UTF-8 in a text column, a lone surrogate, a ts or row id
out of range — declines (the writer returns None or raises one of ``WRITER_DECLINES``) and the
encoder writes the row the reference way, which alone raises EncodeErrors. A conformance test checks
both give the same bytes.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any, Final

import orjson

from pyticdc.codec._fastpath import DECLINES, Decline, compile_function, literal
from pyticdc.codec.jsontext import go_json_quote, orjson_as_go_json
from pyticdc.codec.open_protocol.message import HANDLE, MAX_I64, MAX_U64, MIN_I64
from pyticdc.codec.open_protocol.strconv import strconv_quote
from pyticdc.codec.open_protocol.values import (
    _DOUBLE_KIND,
    _INT_KIND,
    BadValue,
    Kind,
    _r_binary,
    _r_blob,
    _r_char,
    kind_of,
)
from pyticdc.errors import EncodeError
from pyticdc.model import Op, RowChange, TableInfo

__all__ = ["WRITER_DECLINES", "RowWriter", "row_writer"]

#: row → (key JSON, value JSON) before framing and compression, or None for the reference path.
RowWriter = Callable[[RowChange], "tuple[bytes, bytes] | None"]

#: What a writer may raise to decline a row: the fast-path declines, orjson's refusal of a lone
#: surrogate or an integer past 64 bits (a TypeError subclass) and EncodeError.
WRITER_DECLINES: Final = (*DECLINES, orjson.JSONEncodeError, EncodeError)

_WRITERS_ATTR: Final = "_pyticdc_open_writers"
_dumps: Final = orjson.dumps


def _general(kind: Kind) -> Callable[[object], orjson.Fragment]:
    """A column's reference rendering as an orjson Fragment; a value it refuses declines."""
    coerce, render = kind.coerce, kind.render

    def general(value: object) -> orjson.Fragment:
        try:
            return orjson.Fragment(render(coerce(value)))
        except BadValue:
            raise Decline from None
    return general


def _double_text(value: float) -> orjson.Fragment:
    """A finite double as encoding/json prints it (``_format_double``), for orjson to copy.

    orjson writes the same shortest digits, positionally in a range inside encoding/json's
    [1e-6, 1e21); its exponent texts go to the reference formatter.
    """
    text = _dumps(value)
    if 101 in text:  # b"e"
        return orjson.Fragment(_DOUBLE_KIND.render(value))
    return orjson.Fragment(text[:-2] if text[-2:] == b".0" else text)


def _value_expression(i: int, kind: Kind, namespace: dict[str, Any]) -> str:
    """An expression of ``v`` (a non-null value of column ``i``) giving what orjson writes for it."""
    namespace[f"g{i}"] = _general(kind)
    other = f"g{i}(v)"
    render = kind.render
    if kind is _INT_KIND:
        return f"v if type(v) is int else {other}"
    if kind is _DOUBLE_KIND:
        return f"d64(v) if type(v) is float and v - v == 0 else {other}"
    if render is go_json_quote:
        return f"v if type(v) is str else {other}"
    if render is _r_char:
        # Invalid UTF-8 declines: encoding/json writes each such byte as the escape \ufffd.
        return f"v.decode() if type(v) is bytes else {other}"
    if render is _r_blob:
        return f"b64(v, newline=False).decode('ascii') if type(v) is bytes else {other}"
    if render is _r_binary:
        return f"quote(v) if type(v) is bytes else {other}"
    return other


def _source(table: TableInfo, namespace: dict[str, Any], output_old: bool, delete_handle_only: bool) -> str:
    columns = sorted((c for c in table.columns if not c.virtual), key=lambda c: c.name)
    count = len(columns)
    parts = []
    for i, column in enumerate(columns):
        handle = ", 'h': True" if column.flags & HANDLE else ""
        value = _value_expression(i, kind_of(column.type_code, column.flags), namespace)
        parts.append((literal(column.name), f"{{'t': {column.type_code}{handle}, 'f': {column.flags}, 'v': ", value))

    def of(image: str) -> str:
        return "{" + ", ".join(f"{name}: {head}None if (v := {image}[{name}]) is None else ({value})}}"
                               for name, head, value in parts) + "}"

    update = f"{{'u': {of('new')}, 'p': {of('old')}}}" if output_old else f"{{'u': {of('new')}}}"
    return "\n".join([
        "def write(event):",
        # The key names the row's schema and table (the TableInfo's are baked into KEY).
        f"    if event.schema != {literal(table.schema)} or event.table != {literal(table.table)}: return None",
        "    op = event.op",
        "    if op is INSERT:",
        "        new = event.columns",
        f"        if not new or len(new) != {count}: return None",
        f"        value = dumps({{'u': {of('new')}}})",
        "    elif op is UPDATE:",
        "        new = event.columns",
        "        old = event.pre_columns",
        f"        if not new or len(new) != {count}: return None",
        f"        if {output_old} and (not old or len(old) != {count}): return None",
        f"        value = dumps({update})",
        "    elif op is DELETE:",
        "        old = event.pre_columns",
        f"        if {delete_handle_only} or not old or len(old) != {count}: return None",
        f"        value = dumps({{'d': {of('old')}}})",
        "    else:",
        "        return None",
        "    ts = event.commit_ts",
        "    rid = event.row_id",
        f"    if not 0 <= ts <= {MAX_U64} or not {MIN_I64} <= rid <= {MAX_I64}: return None",
        "    key = KEY_RID % (ts, rid, event.physical_table_id) if rid else KEY % (ts, event.physical_table_id)"
        if table.is_partition else "    key = KEY_RID % (ts, rid) if rid else KEY % ts",
        "    return key, fixups(value)",
    ]) + "\n"


def _build(table: TableInfo, output_old: bool, delete_handle_only: bool) -> RowWriter | None:
    names = [c.name for c in table.columns if not c.virtual]
    if not names or len(set(names)) != len(names):
        return None
    names_part = ""
    if table.schema:
        names_part += ',"scm":' + go_json_quote(table.schema)
    if table.table:
        names_part += ',"tbl":' + go_json_quote(table.table)
    # The key of internal.MessageKey: "ptn" (a *int64) only for a partitioned table, "t" 1 (a row).
    names_part = names_part.replace("%", "%%")
    partition = ',"ptn":%d' if table.is_partition else ""
    namespace: dict[str, Any] = {
        "KEY": f'{{"ts":%d{names_part}{partition},"t":1}}'.encode(),
        "KEY_RID": f'{{"ts":%d{names_part},"rid":%d{partition},"t":1}}'.encode(),
        "INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "dumps": orjson.dumps,
        "fixups": orjson_as_go_json, "d64": _double_text, "quote": strconv_quote, "b64": binascii.b2a_base64,
    }
    source = _source(table, namespace, output_old, delete_handle_only)
    writer: RowWriter = compile_function(source, "write", namespace)
    return writer


def row_writer(table: TableInfo, output_old: bool, delete_handle_only: bool) -> RowWriter | None:
    """The generated writer of ``table``'s rows under these options (cached on the TableInfo); None
    for a table it does not write (no columns, duplicate names, names that are not valid text)."""
    cache: dict[tuple[bool, bool], RowWriter | None] | None = table.__dict__.get(_WRITERS_ATTR)
    if cache is None:
        cache = table.__dict__[_WRITERS_ATTR] = {}
    key = (output_old, delete_handle_only)
    try:
        return cache[key]
    except KeyError:
        pass
    try:
        writer = _build(table, output_old, delete_handle_only)
    except (UnicodeError, ValueError):
        writer = None
    cache[key] = writer
    return writer
