"""Open Protocol's fast row writer: one function generated per table writes a row's key and value.

The encoder's reference path (``_row_key``, ``_images`` and ``_render_row``) builds a row's key and
value member by member; this writer speculates on the rows TiCDC writes most — an INSERT, UPDATE or
DELETE whose images hold every column of the table, values of their model types — and writes both
in one go: the key from a template fixed per table, the value by one msgspec encode of structs
generated for the table (an image struct whose members are the column names in encoding/json's key
order, one ``{"t":…,"h":true,"f":…,"v":…}`` struct per column, built once and refilled row after
row), Go's float texts as ``msgspec.Raw``, Go's HTML and U+2028/9 escapes fixed up after (msgspec,
like encoding/json, escapes quotes, backslashes and controls and writes the rest raw). Anything
else — a missing or extra column, another value type, invalid UTF-8 in a text column, a lone
surrogate, a ts or row id out of range — declines (the writer returns None or raises one of
``WRITER_DECLINES``) and the encoder writes the row the reference way, which alone raises
EncodeErrors. A conformance test checks both give the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from operator import itemgetter
from threading import Lock
from typing import Any, Final

import msgspec
import orjson

from pyticdc.codec._fastpath import DECLINES, Decline, compile_function, literal
from pyticdc.codec.jsontext import go_json_quote, orjson_as_go_json
from pyticdc.codec.open_protocol.message import HANDLE, MAX_I64, MAX_U64, MIN_I64, NULLABLE
from pyticdc.codec.open_protocol.strconv import strconv_quote
from pyticdc.codec.open_protocol.values import (
    _DOUBLE_KIND,
    _FLOAT32_KIND,
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

#: What a writer may raise to decline a row: the fast-path declines (a lone surrogate is a
#: UnicodeEncodeError, a ValueError), msgspec's and orjson's refusals, and EncodeError.
WRITER_DECLINES: Final = (*DECLINES, msgspec.EncodeError, orjson.JSONEncodeError, EncodeError)

_WRITERS_ATTR: Final = "_pyticdc_open_writers"
_dumps: Final = orjson.dumps
_Raw: Final = msgspec.Raw
#: One encoder for every generated writer: msgspec caches each struct type's encoded field names.
_ENCODE: Final = msgspec.json.Encoder().encode


def _general(kind: Kind) -> Callable[[object], msgspec.Raw]:
    """A column's reference rendering as raw JSON for msgspec; a value it refuses declines."""
    coerce, render = kind.coerce, kind.render

    def general(value: object) -> msgspec.Raw:
        try:
            return _Raw(render(coerce(value)))
        except BadValue:
            raise Decline from None
    return general


def _double_text(value: float) -> msgspec.Raw:
    """A finite double as encoding/json prints it (``_format_double``), for msgspec to copy.

    orjson writes the same shortest digits, positionally in a range inside encoding/json's
    [1e-6, 1e21); its exponent texts go to the reference formatter.
    """
    text = _dumps(value)
    if 101 in text:  # b"e"
        return _Raw(_DOUBLE_KIND.render(value))
    return _Raw(text[:-2] if text[-2:] == b".0" else text)


@lru_cache(maxsize=8192)
def _float32_text(value: float) -> msgspec.Raw:
    """A finite, non-zero double's FLOAT column text (the reference's coerce and render), cached.

    Bounded like the reference's own float32 text cache; zeros stay out of it (0.0 and -0.0 are
    one key, and Go prints them apart).
    """
    return _Raw(_FLOAT32_KIND.render(_FLOAT32_KIND.coerce(value)))


def _value_expression(i: int, kind: Kind, namespace: dict[str, Any], v: str = "v") -> str:
    """An expression of variable ``v`` (a non-null value of column ``i``) giving what msgspec writes for it."""
    namespace[f"g{i}"] = _general(kind)
    other = f"g{i}({v})"
    render = kind.render
    if kind is _INT_KIND:
        return f"{v} if type({v}) is int else {other}"
    if kind is _DOUBLE_KIND:
        return f"d64({v}) if type({v}) is float and {v} - {v} == 0 else {other}"
    if kind is _FLOAT32_KIND:
        return f"f32({v}) if type({v}) is float and {v} - {v} == 0 and {v} else {other}"
    if render is go_json_quote:
        return f"{v} if type({v}) is str else {other}"
    if render is _r_char:
        # Invalid UTF-8 declines: encoding/json writes each such byte as the escape \ufffd.
        return f"{v}.decode() if type({v}) is bytes else {other}"
    if render is _r_blob:
        # msgspec writes bytes as encoding/json writes a []byte: standard padded base64.
        return f"{v} if type({v}) is bytes else {other}"
    if render is _r_binary:
        return f"quote({v}) if type({v}) is bytes else {other}"
    return other


def _placeholders(names: list[str]) -> dict[str, str]:
    """Stand-in names for the column names msgspec will not write (a quote, a backslash, a control)."""
    renamed = {}
    for i, name in enumerate(names):
        if any(c in '"\\' or c < " " for c in name):
            stand_in = f"\x7fpyticdc{i}\x7f"
            while stand_in in names:
                stand_in += "\x7f"
            renamed[name] = stand_in
    return renamed


def _renamer(renamed: dict[str, str]) -> Callable[[bytes], bytes]:
    """Replace each stand-in member name of msgspec's output by the real name as encoding/json escapes it.

    A member name follows ``{"`` or ``,"``, which never occur inside a JSON string (its quotes are
    escaped), so only the stand-ins are replaced.
    """
    pairs = []
    for name, stand_in in renamed.items():
        for before in (b'{"', b',"'):
            pairs.append((before + stand_in.encode() + b'":', before[:1] + go_json_quote(name).encode() + b":"))

    def rename(value: bytes) -> bytes:
        for stand_in, name in pairs:
            value = value.replace(stand_in, name)
        return value
    return rename


def _source(table: TableInfo, namespace: dict[str, Any], output_old: bool, delete_handle_only: bool) -> str:
    columns = sorted((c for c in table.columns if not c.virtual), key=lambda c: c.name)
    count = len(columns)
    values = []
    image_fields: list[tuple[str, Any, Any]] = []
    column_structs: list[tuple[type[msgspec.Struct], tuple[Any, ...]]] = []
    renamed = _placeholders([column.name for column in columns])
    if renamed:
        namespace["rename"] = _renamer(renamed)
    for i, column in enumerate(columns):
        # internal.Column's members in struct order; "h" is omitempty, so only handle columns have it.
        if column.flags & HANDLE:
            struct = msgspec.defstruct("OpenColumnOut", [("t", int), ("h", bool), ("f", int), ("v", Any)], gc=False)
            column_structs.append((struct, (column.type_code, True, column.flags, None)))
        else:
            struct = msgspec.defstruct("OpenColumnOut", [("t", int), ("f", int), ("v", Any)], gc=False)
            column_structs.append((struct, (column.type_code, column.flags, None)))
        value = _value_expression(i, kind_of(column.type_code, column.flags), namespace, f"v{i}")
        if column.flags & NULLABLE:
            value = f"None if v{i} is None else ({value})"
        # A NOT NULL column skips the None test: a None there fails every fast expression (its g{i}
        # declines), and the reference path writes it.
        values.append(value)
        image_fields.append((f"c{i}", Any, msgspec.field(name=renamed.get(column.name, column.name))))
    image = msgspec.defstruct("OpenImageOut", image_fields, gc=False)
    # messageRow: "u", "p", "d" in struct order, each omitted when empty.
    row = msgspec.defstruct("OpenRowOut", [("u", Any, None), ("p", Any, None), ("d", Any, None)], gc=False,
                            omit_defaults=True)
    # One set of structs per writer (N: the new image, O: the old one), filled in place row after
    # row: setting a member costs a third of building a struct. The lock keeps a second thread from
    # filling them at the same time (that row declines instead).
    for side in "NO":
        for i, (struct, members) in enumerate(column_structs):
            namespace[f"{side}{i}"] = struct(*members)
        namespace[f"IMAGE_{side}"] = image(*(namespace[f"{side}{i}"] for i in range(count)))
    namespace["ROW_N"] = row(namespace["IMAGE_N"])
    namespace["ROW_NO"] = row(namespace["IMAGE_N"], namespace["IMAGE_O"])
    namespace["ROW_D"] = row(None, None, namespace["IMAGE_O"])
    lock = Lock()
    namespace["acquire"], namespace["release"] = lock.acquire, lock.release
    # All values of an image in one C call (a missing column is a KeyError: a decline).
    namespace["VALUES"] = itemgetter(*(column.name for column in columns))

    def fill(image: str, side: str) -> list[str]:
        """Statements setting the value of every column struct of ``side`` from ``image``."""
        unpack = "".join(f"v{i}, " for i in range(count)) + f"= VALUES({image})" if count > 1 \
            else f"v0 = {image}[{literal(columns[0].name)}]"
        return [f"            {unpack}", *(f"            {side}{i}.v = {value}" for i, value in enumerate(values))]

    return "\n".join([
        "def write(event):",
        # The key names the row's schema and table (the TableInfo's are baked into KEY).
        f"    if event.schema != {literal(table.schema)} or event.table != {literal(table.table)}: return None",
        "    op = event.op",
        "    if not acquire(False): return None",
        "    try:",
        "        if op is INSERT:",
        "            new = event.columns",
        f"            if not new or len(new) != {count}: return None",
        *fill("new", "N"),
        "            value = dumps(ROW_N)",
        "        elif op is UPDATE:",
        "            new = event.columns",
        "            old = event.pre_columns",
        f"            if not new or len(new) != {count}: return None",
        f"            if {output_old} and (not old or len(old) != {count}): return None",
        *fill("new", "N"),
        *(fill("old", "O") if output_old else []),
        f"            value = dumps({'ROW_NO' if output_old else 'ROW_N'})",
        "        elif op is DELETE:",
        "            old = event.pre_columns",
        f"            if {delete_handle_only} or not old or len(old) != {count}: return None",
        *fill("old", "O"),
        "            value = dumps(ROW_D)",
        "        else:",
        "            return None",
        "    finally:",
        "        release()",
        "    ts = event.commit_ts",
        "    rid = event.row_id",
        f"    if not 0 <= ts <= {MAX_U64} or not {MIN_I64} <= rid <= {MAX_I64}: return None",
        "    key = KEY_RID % (ts, rid, event.physical_table_id) if rid else KEY % (ts, event.physical_table_id)"
        if table.is_partition else "    key = KEY_RID % (ts, rid) if rid else KEY % ts",
        *(["    value = rename(value)"] if renamed else []),
        # b"<", b">", b"&", and 0xE2 (the lead byte of U+2028/9): mostly absent, so tested inline.
        "    if 60 in value or 62 in value or 38 in value or 226 in value: value = fixups(value)",
        "    return key, value",
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
        "INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "dumps": _ENCODE,
        "fixups": orjson_as_go_json, "d64": _double_text, "f32": _float32_text, "quote": strconv_quote,
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
