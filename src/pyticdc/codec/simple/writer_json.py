"""Simple-JSON's fast row writer: one function generated per table writes a whole row message.

The encoder's reference path (``Encoder._dml``) assembles a message member by member; this writer
speculates on the message TiCDC writes most — an INSERT, UPDATE or DELETE whose images hold every
non-virtual column of the table — and writes it in one go: the column values become their wire
values in straight-line code; each image is a msgspec struct of the table, its fields the columns
in encoding/json's sorted key order (a dict for orjson where a column name needs an escape, which
msgspec refuses in a field name), written in one call, with Go's HTML and U+2028/9 escapes fixed
up after; the envelope is a %-template of the table (members in Go's field order). A value of
another type goes through the reference per-value functions (its exact JSON text as a
``msgspec.Raw`` or ``orjson.Fragment``). Anything else — a missing or extra column, invalid UTF-8
in a text column, a lone surrogate, a commit ts that is no uint64, a zero table id — declines (the
writer returns None or raises one of ``WRITER_DECLINES``) and the encoder writes the row the
reference way, which also raises its EncodeErrors. A conformance test checks both give the same
bytes.
"""

from __future__ import annotations

import binascii
import operator
import re
import struct
from collections.abc import Callable
from typing import Any, Final

import msgspec
import orjson

from pyticdc.codec._fastpath import DECLINES, compile_function, in_form, literal, native
from pyticdc.codec.jsontext import format_float32_f, format_float64_f, go_json_quote, orjson_as_go_json
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.fastpath import compiled, native_kind
from pyticdc.codec.simple.message import MASK64
from pyticdc.errors import EncodeError
from pyticdc.model import Op, Row, RowChange, TableInfo

__all__ = ["WRITER_DECLINES", "JsonRowWriter", "json_row_writer"]

#: (row, buildTs, location name) → the message bytes, or None where the reference path must write it.
JsonRowWriter = Callable[[RowChange, int, str], "bytes | None"]

#: What a writer may raise to decline a row: the fast-path declines (msgspec's refusal of a lone
#: surrogate is a UnicodeEncodeError, a ValueError), orjson's refusal (a TypeError subclass) and the
#: reference functions' EncodeError (the reference path raises it again, with its own checks first).
WRITER_DECLINES: Final = (*DECLINES, orjson.JSONEncodeError, EncodeError)

# A float's text per value, shared by all writers: a row's float usually comes again in its next
# images (an UPDATE's pre- and post-image, the DELETE after), and formatting costs more than a lookup.
# Only finite non-zero floats are keys; cleared when full.
_FLOAT_TEXTS_MAX: Final = 4096
_F32_TEXTS: Final[dict[float, str]] = {}
_F64_TEXTS: Final[dict[float, str]] = {}

# msgspec writes strings as orjson does (the short escapes \b \f \n \r \t, \u00XX in lower-case hex
# for the other controls, everything else raw) and bytes as padded standard base64, which is
# encoding/json's []byte. Its struct fields cost less to fill than a dict display of the same keys.
_encode: Final = msgspec.json.Encoder().encode
#: The texts of the integers 0 to 1023.
_SMALL_INTS: Final = tuple(str(i) for i in range(1024))
_pack32: Final = struct.Struct("<f").pack
_unpack32: Final = struct.Struct("<f").unpack
_dumps: Final = orjson.dumps
#: The fewest columns for which a Row's key order is checked to take its values in one go.
_KEY_CHECK_MIN: Final = 12
#: What msgspec refuses in a renamed field: the characters a JSON string escapes.
_NEEDS_ESCAPE: Final = re.compile(r'[\x00-\x1f"\\]')


def _general_text(spec: V.ColumnPlan, value: object, location: str) -> str:
    """A value of an unusual type as the reference writes it (``json_value`` of ``normalize``)."""
    return V.json_value(V.normalize(value, spec.column, spec.kind, spec.bounds), spec.kind, spec.binary,
                        go_json_quote(location))


def _general_raw(spec: V.ColumnPlan, value: object, location: str) -> msgspec.Raw:
    """``_general_text`` for msgspec (a lone surrogate: UnicodeEncodeError, a decline)."""
    return msgspec.Raw(_general_text(spec, value, location).encode("utf-8"))


def _general_fragment(spec: V.ColumnPlan, value: object, location: str) -> orjson.Fragment:
    """``_general_text`` for orjson."""
    return orjson.Fragment(_general_text(spec, value, location))


def _expression(index: int, spec: V.ColumnPlan, v: str = "v", base64: bool = True) -> str:
    """An expression of ``v`` (a non-null value of column ``spec``) giving its wire value for the image's
    writer (``base64``: msgspec, which writes bytes as base64; else orjson)."""
    kind = spec.kind
    other = f"general(cols[{index}], {v}, loc)"
    if kind in (V.KIND_INT, V.KIND_UINT):
        low, high = spec.bounds if kind == V.KIND_INT else (0, MASK64)
        text = f"str({v}) if {low} <= {v} <= {high} else {other}"
        # small values (flags, states, tiny counts) are the commonest: their texts are kept
        small_low, small_high = max(low, 0), min(high, len(_SMALL_INTS) - 1)
        if small_low <= small_high:
            text = f"SMALL[{v}] if {small_low} <= {v} <= {small_high} else {text}"
        return f"({text}) if type({v}) is int else {other}"
    # Only finite non-zero floats are remembered: a text found needs no test for NaN or ±Inf.
    if kind == V.KIND_FLOAT:
        return f"(F32.get({v}) or (f32({v}) if {v} - {v} == 0 else {other})) if type({v}) is float else {other}"
    if kind == V.KIND_DOUBLE:
        return f"(F64.get({v}) or (f64({v}) if {v} - {v} == 0 else {other})) if type({v}) is float else {other}"
    if kind == V.KIND_TIMESTAMP:
        # map[string]string: encoding/json sorts the keys ("location" < "value").
        return f"{{'location': loc, 'value': {v}}} if type({v}) is str else {other}"
    if kind == V.KIND_BYTES and spec.binary:
        if base64:
            return f"{v} if type({v}) is bytes else {other}"
        return f"b64({v}, newline=False).decode('ascii') if type({v}) is bytes else {other}"
    if kind == V.KIND_BYTES:
        # Invalid UTF-8 declines: encoding/json writes each such byte as the escape \ufffd.
        return f"{v}.decode() if type({v}) is bytes else {other}"
    return f"{v} if type({v}) is str else {other}"


def _source(specs: list[V.ColumnPlan], delete_handle_only: bool, struct: bool, table: TableInfo,
            whole: bool = False) -> str:
    """The writer's source; ``struct``: the images are IMAGE structs, else orjson's text of dicts;
    ``whole``: each row type first tries the C writer of the whole message (its PLAN_*)."""
    count = len(specs)
    # The envelope's arguments before the type, and the version after the build ts (_envelopes' fields).
    head = "1" + (", DATABASE" if table.schema else "") + (", TABLE" if table.table else "") + ", table_id"
    version = ", SCHEMA_VERSION" if table.schema_version else ""
    # encoding/json sorts map keys by their UTF-8 bytes (IMAGE's fields are in that order).
    ordered = sorted(range(count), key=lambda i: specs[i].name.encode("utf-8"))

    def written(values: list[str]) -> str:
        if struct:
            return f"IMAGE({', '.join(values)})"
        members = ", ".join(f"{literal(specs[i].name)}: {value}" for i, value in zip(ordered, values))
        return f"Raw(dumps({{{members}}}))"

    def values(var: str, name: str) -> str:
        # One C call takes every column's value (KeyError for a missing one: a decline).
        if count == 1:
            return f"        {var}{ordered[0]} = {name}[{literal(specs[ordered[0]].name)}]"
        unpacked = ", ".join(f"{var}{i}" for i in range(count))
        if count < _KEY_CHECK_MIN:
            return f"        {unpacked} = columns_of({name})"
        # A Row whose keys are the columns in table order (as rows mostly are) gives its values in
        # that order, in fewer steps than a lookup per column (from about a dozen columns on).
        return (f"        if type({name}) is Row and [*{name}] == NAMES: {unpacked} = {name}.values()\n"
                f"        else: {unpacked} = columns_of({name})")

    def image(var: str) -> str:
        return written([f"None if {var}{i} is None else ({_expression(i, specs[i], f'{var}{i}', struct)})"
                        for i in ordered])

    def first_whole(kind: str, images: str) -> list[str]:
        # The C writer of the whole message (same bytes); None where it declines: the lines below.
        if not whole:
            return []
        return [f"        t = simple_json_row(PLAN_{kind}, table_id, commit_ts, build_ts, {images}, loc)",
                "        if t is not None: return t"]

    def document(kind: str, images: list[str]) -> list[str]:
        # One msgspec call writes the message (the table's envelope struct, members in Go's field
        # order), then Go's escapes only where one of < > & or a U+2028/9 lead byte is in it (a memchr
        # each, cheaper than a call that would find none; the three ASCII ones replaced in place here,
        # they are the common ones). msgspec's bytes are of their own size: orjson's, a larger block
        # shrunk in place, would fragment the heap when a batch's messages are kept (every batch then
        # page-faults anew).
        return [
            f"        t = encode(ENVELOPE_{kind}({head}, {literal(kind)}, commit_ts, build_ts{version}, "
            f"{', '.join(images)}))",
            "        if 60 in t: t = t.replace(b'<', rb'\\u003c')",
            "        if 62 in t: t = t.replace(b'>', rb'\\u003e')",
            "        if 38 in t: t = t.replace(b'&', rb'\\u0026')",
            "        return fixups(t) if 226 in t else t",
        ]

    # An UPDATE's images mostly share their values (the post-image is usually built from the pre-image):
    # an old value that is the very object of the new one takes the wire value already made for it.
    update = [values("v", "new"), values("w", "old")]
    for i in ordered:
        update.append(f"        n{i} = None if v{i} is None else ({_expression(i, specs[i], f'v{i}', struct)})")
    for i in ordered:
        update.append(f"        o{i} = None if w{i} is None else (n{i} if w{i} is v{i} else "
                      f"({_expression(i, specs[i], f'w{i}', struct)}))")
    update_images = [written([f"{var}{i}" for i in ordered]) for var in ("n", "o")]
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
        *first_whole("INSERT", "row.columns, None"),
        "        new = row.columns",
        f"        if new is None or len(new) != {count}: return None",
        values("v", "new"),
        *document("INSERT", [image("v")]),
        "    if op is UPDATE:",
        *first_whole("UPDATE", "row.columns, row.pre_columns"),
        "        new = row.columns",
        "        old = row.pre_columns",
        f"        if new is None or old is None or len(new) != {count} or len(old) != {count}: return None",
        *update,
        *document("UPDATE", update_images),
        "    if op is DELETE:",
        *(first_whole("DELETE", "row.pre_columns, None") if not delete_handle_only else []),
        "        old = row.pre_columns",
        f"        if {delete_handle_only} or old is None or len(old) != {count}: return None",
        values("v", "old"),
        *document("DELETE", [image("v")]),
        "    return None",
    ]) + "\n"


def _f32_text(value: float) -> str:
    """``format_float32_f(value)``, remembered for the next image holding the same float.

    Its common case spelt out here, without its calls (a new float of a row costs this every time):
    a float32 in [1e-4, 1e6) that is no power of two; the others go to it.
    """
    packed = _pack32(value)
    single = _unpack32(packed)[0]
    if (1e-4 <= single < 1e6 or -1e6 < single <= -1e-4) and (packed[0] or packed[1] or packed[2] & 0x7F):
        text = f"{single:.7g}"
        if _pack32(float(text)) != packed:
            text = f"{single:.8g}"
            if _pack32(float(text)) != packed:
                text = f"{single:.9g}"
        else:
            digits = text.lstrip("-0.")
            count = len(digits) - ("." in digits)
            if count != 7 or text[-1] not in "2345678":
                # fewer digits while they read back (format_float32_f's search for the shortest)
                while count > 1:
                    shorter = f"{single:.{count - 1}g}"
                    if _pack32(float(shorter)) != packed:
                        break
                    if "e" in shorter:
                        text = format_float32_f(value)
                        break
                    text = shorter
                    digits = text.lstrip("-0.")
                    count = len(digits) - ("." in digits)
    else:
        text = format_float32_f(value)
    if value:  # 0.0 and -0.0 are one key with two texts: zeros are never remembered
        if len(_F32_TEXTS) >= _FLOAT_TEXTS_MAX:
            _F32_TEXTS.clear()
        _F32_TEXTS[value] = text
    return text


def _f64_text(value: float) -> str:
    """``format_float64_f(value)`` spelt out, remembered for the next image holding the same float."""
    text = _dumps(value).decode()
    if "e" in text or "n" in text:
        text = format_float64_f(value)
    elif text[-2:] == ".0":
        text = text[:-2]
    if value:
        if len(_F64_TEXTS) >= _FLOAT_TEXTS_MAX:
            _F64_TEXTS.clear()
        _F64_TEXTS[value] = text
    return text


def _envelopes(table: TableInfo) -> dict[str, type[msgspec.Struct]]:
    """Per row type, the message as msgspec writes it: Go's fields in Go's order, then the images."""
    # encoding/json's omitempty leaves out an empty name and a zero version.
    fields: list[tuple[str, Any]] = [("version", int)]
    fields += [("database", str)] if table.schema else []
    fields += [("table", str)] if table.table else []
    fields += [("tableID", int), ("type", str), ("commitTs", int), ("buildTs", int)]
    fields += [("schemaVersion", int)] if table.schema_version else []
    images = {"INSERT": ["data"], "UPDATE": ["data", "old"], "DELETE": ["old"]}
    return {kind: msgspec.defstruct(f"SimpleJson{kind.title()}", fields + [(name, Any) for name in members],
                                    gc=False)
            for kind, members in images.items()}


def _image_struct(specs: list[V.ColumnPlan]) -> type[msgspec.Struct] | None:
    """The image of the table as msgspec writes it: one field per column, in encoding/json's key order;
    None where a column name needs an escape (msgspec refuses to rename a field so)."""
    ordered = sorted(specs, key=lambda spec: spec.name.encode("utf-8"))
    if any(_NEEDS_ESCAPE.search(spec.name) for spec in ordered):
        return None
    return msgspec.defstruct("SimpleJsonImage", [(f"c{i}", Any) for i in range(len(ordered))],
                             rename={f"c{i}": spec.name for i, spec in enumerate(ordered)}, gc=False)


def _go_text(value: str) -> bytes:
    """``value`` as a JSON string exactly as the generated writer's document has it (msgspec's text, Go's fixups)."""
    return orjson_as_go_json(_encode(value))


def _native_plans(table: TableInfo, specs: list[V.ColumnPlan]) -> dict[str, tuple[Any, ...]] | None:
    """Per row type, the plan of the C writer (see _native.c: the envelope's pieces in Go's field order,
    the columns in encoding/json's key order, their quoted keys and value kinds); None where a column's
    kind has no letter."""
    ordered = sorted(specs, key=lambda spec: spec.name.encode("utf-8"))
    kinds = [native_kind(spec) for spec in ordered]
    if None in kinds:
        return None
    head = b'{"version":1'
    head += b',"database":' + _go_text(table.schema) if table.schema else b""
    head += b',"table":' + _go_text(table.table) if table.table else b""
    head += b',"tableID":'
    version = b',"schemaVersion":%d' % table.schema_version if table.schema_version else b""
    columns = (tuple(spec.name for spec in ordered), tuple(_go_text(spec.name) + b":" for spec in ordered),
               b"".join(kind for kind in kinds if kind is not None), (_F32_TEXTS, _f32_text, _F64_TEXTS, _f64_text))
    images = {"INSERT": (b',"data":',), "UPDATE": (b',"data":', b',"old":'), "DELETE": (b',"old":',)}
    return {kind: (head, b',"type":"%s","commitTs":' % kind.encode(), b',"buildTs":', version, keys, *columns)
            for kind, keys in images.items()}


def _build(table: TableInfo, delete_handle_only: bool) -> JsonRowWriter | None:
    specs = [plan for plan in V.table_plan(table)[0] if not plan.virtual]
    names = [spec.name for spec in specs]
    if not specs or len(set(names)) != len(names) or not 0 <= table.schema_version <= MASK64:
        return None
    "".join(names).encode("utf-8")  # a lone surrogate in a column name: no writer (UnicodeError)
    (table.schema + table.table).encode("utf-8")  # a lone surrogate: no writer (UnicodeError)
    envelopes = _envelopes(table)
    image = _image_struct(specs)
    namespace: dict[str, Any] = {
        "ENVELOPE_INSERT": envelopes["INSERT"], "ENVELOPE_UPDATE": envelopes["UPDATE"],
        "ENVELOPE_DELETE": envelopes["DELETE"], "DATABASE": table.schema, "TABLE": table.table,
        "SCHEMA_VERSION": table.schema_version, "TABLE_ID": table.table_id, "cols": tuple(specs), "IMAGE": image,
        "INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "encode": _encode, "dumps": orjson.dumps,
        "Raw": msgspec.Raw, "fixups": orjson_as_go_json, "b64": binascii.b2a_base64,
        "general": _general_fragment if image is None else _general_raw,
        "f32": _f32_text, "f64": _f64_text, "F32": _F32_TEXTS, "F64": _F64_TEXTS,
        "columns_of": operator.itemgetter(*names) if len(names) > 1 else None, "SMALL": _SMALL_INTS,
        "Row": Row, "NAMES": names,
    }
    helpers = native()
    plans = _native_plans(table, specs) if helpers is not None and image is not None else None
    if plans is not None:
        namespace.update({f"PLAN_{kind}": plan for kind, plan in plans.items()})
        namespace["simple_json_row"] = helpers.simple_json_row  # type: ignore[union-attr]
    source = _source(specs, delete_handle_only, image is not None, table, whole=plans is not None)
    writer: JsonRowWriter = compile_function(source, "write", namespace)
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
    slot = in_form("_pyticdc_simple_json_rows")
    writers: tuple[JsonRowWriter | None, JsonRowWriter | None] | None = cache.get(slot)
    if writers is None:
        writers = cache[slot] = compiled(in_form("json-rows"), table, _build_both)
    return writers[1 if delete_handle_only else 0]
