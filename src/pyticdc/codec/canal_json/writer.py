"""Canal-JSON's fast row writer: one function generated per table layout writes a whole row message.

The encoder's reference path (``Encoder._dml_text``) assembles a message piece by piece; this writer
speculates on the message TiCDC writes most — every column of the table in the image, values of
their model types — and writes it in one go: the envelope up to ``"es":`` and the ``sqlType`` /
``mysqlType`` members are fixed per table and kind (bytes made once), the column values become
their texts in straight-line code, orjson writes the ``old``/``data`` members, and the few escapes
where easyjson differs from orjson are fixed up after. Anything else — a missing or extra column,
another value type, invalid UTF-8, a lone surrogate, a row of another schema or table name — makes
the writer return None (or raise one of ``WRITER_DECLINES``), and the encoder writes the row the
reference way. A conformance test checks both give the same bytes.

Writers are cached on the TableInfo, per option set, so every encoder of a table version shares them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from pyticdc.codec._fastpath import DECLINES, Decline, compile_function, literal, native
from pyticdc.codec.canal_json.message import java_base, java_promotion, mysql_type, unsigned_number
from pyticdc.codec.canal_json.values import format_float
from pyticdc.codec.jsontext import easyjson_quote, format_float32_f, format_float64_f, orjson_as_easyjson
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, RowChange, TableInfo, TypeCode, Value

__all__ = ["WRITER_DECLINES", "RowWriter", "row_writer"]

#: (row, ts in ms) → the message bytes, or None where the reference path must write it.
RowWriter = Callable[[RowChange, int], "bytes | None"]

#: What a writer may raise to decline a row: the fast-path declines and orjson's refusal (a lone
#: surrogate in a text), which is a TypeError subclass.
WRITER_DECLINES: Final = (*DECLINES, orjson.JSONEncodeError)

_BINARY_FLAG: Final = int(ColumnFlag.BINARY)
_PRIMARY_KEY_FLAG: Final = int(ColumnFlag.PRIMARY_KEY)
_WRITERS_ATTR: Final = "_pyticdc_canal_writers"

# The column types whose values are usually ints, floats or bytes: which check a writer tries first.
_INT_CODES: Final = frozenset({1, 2, 3, 8, 9, 13, 16, 247, 248})
_BYTES_CODES: Final = frozenset({15, 249, 250, 251, 252, 253, 254})

# A float's text per value, shared by all writers: a row's float usually comes again in its next
# images (an UPDATE's pre- and post-image, the DELETE after), and formatting costs more than a lookup.
# Only finite non-zero floats are keys (0.0 and -0.0 are one key with two texts); cleared when full.
_FLOAT_TEXTS_MAX: Final = 4096
_F32_MAX: Final = 3.4028234663852886e38
_F32_TEXTS: Final[dict[float, str]] = {}
_F64_TEXTS: Final[dict[float, str]] = {}


def _float32_text(value: float) -> str:
    """A finite FLOAT value's text as ``render`` writes it (values.format_float): format_float32_f's
    within the float32 range; beyond it (a double that float32 rounding would bring back to
    MaxFloat32 included) format_float's."""
    return format_float(value) if abs(value) > _F32_MAX else format_float32_f(value)


def _f32_text(value: float) -> str:
    """``_float32_text(value)``, remembered for the next image holding the same float."""
    text = _float32_text(value)
    _remember(_F32_TEXTS, value, text)
    return text


def _f64_text(value: float) -> str:
    """``format_float64_f(value)``, remembered for the next image holding the same float."""
    text = format_float64_f(value)
    _remember(_F64_TEXTS, value, text)
    return text


def _remember(texts: dict[float, str], value: float, text: str) -> None:
    if value:
        if len(texts) >= _FLOAT_TEXTS_MAX:
            texts.clear()
        texts[value] = text


def _value_text(value: Value, binary: bool, bits: int) -> str:
    """The text inside a non-null value's JSON string as ``render`` writes it (else Decline)."""
    if type(value) is int:
        return str(value)
    if type(value) is bytes:
        return value.decode("latin-1") if binary else value.decode()
    if type(value) is str:
        return value
    if type(value) is float:
        if value - value != 0:
            return "0"  # NaN and ±Inf: the mounter's 0 (render)
        return _float32_text(value) if bits == 32 else format_float64_f(value)
    raise Decline


def _promoted(value: Value, limit: int) -> bool:
    """Whether a non-null unsigned value takes the promoted Java type; Decline where it is no number."""
    try:
        return unsigned_number(value) > limit
    except EncodeError:
        raise Decline from None


class _Layout:
    """What a generated writer bakes in: the fixed bytes of one table's messages under one option set."""

    def __init__(self, table: TableInfo, content_compatible: bool) -> None:
        self.columns = [c for c in table.columns if not c.virtual]
        self.keys = [easyjson_quote(c.name) for c in self.columns]
        self.java = [java_base(c) for c in self.columns]
        self.promotions = [(i, p) for i, c in enumerate(self.columns) if (p := java_promotion(c)) is not None]
        self.mysql = "{" + ",".join(f"{k}:{easyjson_quote(mysql_type(c, content_compatible))}"
                                    for k, c in zip(self.keys, self.columns)) + "}"
        pk_names = [c.name for c in table.columns if int(c.flags) & _PRIMARY_KEY_FLAG]
        self.pk_json = "[" + ",".join(easyjson_quote(n) for n in pk_names) + "]"
        self.mids: dict[int, bytes] = {}

    def mid(self, promoted: int) -> bytes:
        """``,"sql":"","sqlType":{…},"mysqlType":{…},`` with the promotions of bitmask ``promoted``."""
        text = self.mids.get(promoted)
        if text is None:
            java = list(self.java)
            for bit, (i, (_, promoted_type)) in enumerate(self.promotions):
                if promoted >> bit & 1:
                    java[i] = promoted_type
            sql = "{" + ",".join(f"{k}:{j}" for k, j in zip(self.keys, java)) + "}" if java else "null"
            text = self.mids[promoted] = f',"sql":"","sqlType":{sql},"mysqlType":{self.mysql},'.encode()
        return text


def _text_expression(column_index: int, layout: _Layout) -> str:
    """An expression of ``v`` (a non-null value of the column) giving its text."""
    column = layout.columns[column_index]
    binary = bool(int(column.flags) & _BINARY_FLAG)
    bits = 32 if column.type_code == TypeCode.FLOAT else 64
    other = f"text(v, {binary}, {bits})"
    code = column.type_code
    if code in _INT_CODES:
        return f"str(v) if type(v) is int else {other}"
    if code in _BYTES_CODES:
        # decode() without an argument is UTF-8 with no encoding name to look up.
        return f"v.decode({repr('latin-1') if binary else ''}) if type(v) is bytes else {other}"
    if code == TypeCode.DOUBLE:
        return f"(F64.get(v) or f64(v)) if type(v) is float and v - v == 0 else {other}"
    if code == TypeCode.FLOAT:
        return f"(F32.get(v) or f32(v)) if type(v) is float and v - v == 0 else {other}"
    return f"v if type(v) is str else {other}"


def _native_kind(column: ColumnInfo) -> bytes:
    """A column's value kind in the C image writer (_native.canal_image), as _text_expression reads it."""
    code = column.type_code
    if code in _INT_CODES:
        return b"i"
    if code in _BYTES_CODES:
        return b"L" if int(column.flags) & _BINARY_FLAG else b"s"
    if code in (TypeCode.DOUBLE, TypeCode.FLOAT):
        return b"f" if code == TypeCode.FLOAT else b"d"
    return b"S"


def _native_plan(layout: _Layout) -> tuple[Any, ...]:
    """The C image writer's plan: names, keys as the generated writer's document has them, kinds, float texts."""
    return (tuple(c.name for c in layout.columns),
            tuple(orjson_as_easyjson(orjson.dumps(c.name)) + b":" for c in layout.columns),
            b"".join(_native_kind(c) for c in layout.columns), (_F32_TEXTS, _f32_text, _F64_TEXTS, _f64_text))


def _source(layout: _Layout, tidb_extension: bool, only_updated: bool, delete_handle_only: bool, schema: str,
            table: str, whole_images: bool = False) -> str:
    """The writer's source: ``write(event, ts)`` for INSERT, UPDATE and DELETE of full images (a DELETE
    declines under delete-only-output-handle-key-columns); ``whole_images``: full images are first
    written by the C writer (``canal_image``), the lines that follow writing the ones it declines."""
    count = len(layout.columns)
    names = [literal(c.name) for c in layout.columns]
    exprs = [_text_expression(i, layout) for i in range(count)]

    def image_dict(image: str) -> str:
        return "{" + ", ".join(f"{n}: None if (v := {image}[{n}]) is None else ({e})"
                               for n, e in zip(names, exprs)) + "}"

    def body(old: str | None, new: str, python: str, indent: str) -> list[str]:
        # The document's "old" and "data" members; the Python path's through orjson and easyjson's fixups.
        if not whole_images:
            return [f"{indent}body = fixups({python})"]
        if old is None:
            return [f"{indent}a = canal_image({new}, PLAN)",
                    f"{indent}body = b'{{\"old\":null,\"data\":[%b]}}' % a if a is not None else fixups({python})"]
        return [f"{indent}a = canal_image({old}, PLAN)", f"{indent}b = canal_image({new}, PLAN)",
                f"{indent}body = b'{{\"old\":[%b],\"data\":[%b]}}' % (a, b) if a is not None and b is not None"
                f" else fixups({python})"]

    def promotions(image: str) -> list[str]:
        lines = ["    m = 0"]
        for bit, (i, (limit, _)) in enumerate(layout.promotions):
            lines.append(f"    v = {image}[{names[i]}]")
            lines.append(f"    if v is not None and (v > {limit} if type(v) is int else promoted(v, {limit})): "
                         f"m |= {1 << bit}")
        return lines

    lines = [
        "def write(event, ts):",
        f"    if event.schema != {literal(schema)} or event.table != {literal(table)}: return None",
        "    new = event.columns",
        "    old = event.pre_columns",
        "    if new:",
        f"        if len(new) != {count}: return None",
        "        if old:",
        f"            if len(old) != {count}: return None",
        "            head = HEAD_UPDATE",
    ]
    if only_updated:
        # shouldIgnoreColumn: "old" keeps the columns whose value differs from the post-image.
        lines.append("            o = {}")
        for n, e in zip(names, exprs):
            lines += [f"            v = old[{n}]", f"            w = new[{n}]",
                      "            if (v is not w) if (v is None or w is None) else not (v == w):",
                      f"                o[{n}] = None if v is None else ({e})"]
        lines.append(f"            body = fixups(dumps({{'old': [o], 'data': [{image_dict('new')}]}}))")
    else:
        lines += body("old", "new", f"dumps({{'old': [{image_dict('old')}], 'data': [{image_dict('new')}]}})",
                      " " * 12)
    lines += [
        "        else:",
        "            head = HEAD_INSERT",
        *body(None, "new", f"dumps({{'old': None, 'data': [{image_dict('new')}]}})", " " * 12),
        "        sent = new",
        "    elif old:",
        f"        if {delete_handle_only} or len(old) != {count}: return None",
        "        head = HEAD_DELETE",
        *body(None, "old", f"dumps({{'old': None, 'data': [{image_dict('old')}]}})", " " * 8),
        "        sent = old",
        "    else:",
        "        return None",
    ]
    if layout.promotions:
        lines += promotions("sent")
        lines.append("    mid = MIDS.get(m) or mid_for(m)")
    else:
        lines.append("    mid = MID")
    if tidb_extension:
        lines.append("    commit_ts = event.commit_ts")
        lines.append("    return b'%b%d,\"ts\":%d%b%b,\"_tidb\":{\"commitTs\":%d}}' "
                     "% (head, commit_ts >> 18, ts, mid, body[1:-1], commit_ts)")
    else:
        lines.append("    return b'%b%d,\"ts\":%d%b%b}' % (head, event.commit_ts >> 18, ts, mid, body[1:-1])")
    return "\n".join(lines) + "\n"


def _build(table: TableInfo, content_compatible: bool, tidb_extension: bool, only_updated: bool,
           delete_handle_only: bool) -> RowWriter:
    layout = _Layout(table, content_compatible)
    database, name = easyjson_quote(table.schema), easyjson_quote(table.table)
    heads = {kind: (f'{{"id":0,"database":{database},"table":{name},"pkNames":{layout.pk_json},'
                    f'"isDdl":false,"type":"{kind}","es":').encode() for kind in ("INSERT", "UPDATE", "DELETE")}
    namespace: dict[str, Any] = {
        "HEAD_INSERT": heads["INSERT"], "HEAD_UPDATE": heads["UPDATE"], "HEAD_DELETE": heads["DELETE"],
        "MIDS": layout.mids, "mid_for": layout.mid, "MID": layout.mid(0), "dumps": orjson.dumps,
        "fixups": orjson_as_easyjson, "text": _value_text, "promoted": _promoted, "f32": _f32_text,
        "f64": _f64_text, "F32": _F32_TEXTS, "F64": _F64_TEXTS,
    }
    helpers = native()
    if helpers is not None:
        namespace["canal_image"] = helpers.canal_image
        namespace["PLAN"] = _native_plan(layout)
    source = _source(layout, tidb_extension, only_updated, delete_handle_only, table.schema, table.table,
                     whole_images=helpers is not None)
    writer: RowWriter = compile_function(source, "write", namespace)
    return writer


def row_writer(table: TableInfo, content_compatible: bool, tidb_extension: bool, only_updated: bool,
               delete_handle_only: bool) -> RowWriter | None:
    """The generated writer of ``table``'s row messages under these options (cached on the TableInfo);
    None for a table it does not write (no columns, duplicate or virtual key columns, names that are
    not valid text)."""
    cache: dict[tuple[bool, ...], RowWriter | None] | None = table.__dict__.get(_WRITERS_ATTR)
    if cache is None:
        cache = table.__dict__[_WRITERS_ATTR] = {}
    # The form too: the C image writer is used only while native() is on.
    key = (content_compatible, tidb_extension, only_updated, delete_handle_only, native() is not None)
    try:
        return cache[key]
    except KeyError:
        pass
    writer: RowWriter | None = None
    names = [c.name for c in table.columns if not c.virtual]
    # pkNames of a full image names every primary-key column only if none is virtual (never sent).
    virtual_key = any(c.virtual and int(c.flags) & _PRIMARY_KEY_FLAG for c in table.columns)
    if names and len(set(names)) == len(names) and not virtual_key:
        try:
            writer = _build(table, content_compatible, tidb_extension, only_updated, delete_handle_only)
        except (UnicodeError, EncodeError, ValueError):
            writer = None
    cache[key] = writer
    return writer

