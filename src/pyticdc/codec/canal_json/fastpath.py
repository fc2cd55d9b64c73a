"""The Canal-JSON fast path: a typed msgspec decode of the images, one decoder per distinct header.

Typed row structs decode integers and floats from their strings in C (``strict=False``); a
generated converter per header turns each struct into a Row, converting only the columns whose
model value differs from what msgspec gives (bytes, float32, the uint64 ceiling). Anything the
typed decode does not expect (``"01"`` as an integer, a column ``mysqlType`` does not list, a
value out of range) raises one of ``DECLINES`` and the message goes to the reference path, which
decodes it or reports the error.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Annotated, Any, Final

import msgspec

from pyticdc.codec._fastpath import Decline, compile_function, literal
from pyticdc.codec.canal_json.message import (
    K_BIGINT,
    K_F32,
    K_F64,
    K_INT,
    K_LATIN1,
    K_STR,
    K_UINT,
    K_UTF8,
    NULL,
    UINT64_MAX,
    Envelope,
    Header,
    Images,
    key_only_delete,
    read_header,
    read_mysql_types,
    read_pk_names,
    read_sql_types,
)
from pyticdc.codec.canal_json.values import parse_value
from pyticdc.model import Event, Op, Row, RowChange, Value

__all__ = ["FastPath"]

_F32: Final = struct.Struct("<f")
# Typed fields with the 64-bit ranges of strconv.ParseInt/ParseUint (§4.5 end); msgspec bounds
# stop at int64, so the uint64 ceiling is checked by the header's converter.
_INT64: Final = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_UINT64: Final = Annotated[int, msgspec.Meta(ge=0)]
_BIGINT: Final = Annotated[int, msgspec.Meta(ge=-(1 << 63))]
# Lax mode reads an integral JSON float (5.0, -0.0) as an int, which the reference path refuses in an
# integer column: a float branch no number satisfies makes such a value fail and decline instead.
_NO_FLOAT: Final = Annotated[float, msgspec.Meta(ge=1.0, le=0.0)]
_FIELD_TYPES: Final[dict[int, Any]] = {
    K_INT: _INT64 | _NO_FLOAT | None, K_UINT: _UINT64 | _NO_FLOAT | None, K_BIGINT: _BIGINT | _NO_FLOAT | None,
    K_F32: float | None, K_F64: float | None,
}
# Accepts only null, so any image array fails validation and the message declines.
_NO_FAST_PATH: Final[msgspec.json.Decoder[Any]] = msgspec.json.Decoder(None)
_IMAGES_DECODER: Final = msgspec.json.Decoder(list[dict[str, str | None]] | None)
_INSERT: Final = Op.INSERT
_UPDATE: Final = Op.UPDATE
_DELETE: Final = Op.DELETE
#: Shared by every decoder of the process, pure derived data like re's pattern cache, bounded
#: (cleared when full): the raw header bytes (content compatibility, database, table, mysqlType,
#: sqlType, pkNames) → the header's meaning (its semantic key), and that → the parsed header.
_SemanticKey = tuple[bool, str, str, frozenset[tuple[str, str]], tuple[str, ...], tuple[str, ...]]
_SEMANTIC_KEYS: Final[dict[tuple[bool, str, str, bytes, bytes, bytes], _SemanticKey]] = {}
_SHARED: Final[dict[_SemanticKey, _FastHeader]] = {}
_SHARED_LIMIT: Final = 1024


class _FastHeader:
    """Everything derived from one distinct (database, table, mysqlType, pkNames): schema and converters."""

    __slots__ = ("convert", "full", "kinds", "mysql_raw", "names", "pk_raw", "pk_set", "sql_raw",
                 "table_info")

    def __init__(self, header: Header) -> None:
        self.table_info = header.table_info
        self.names = tuple(header.names)
        self.kinds = header.kinds
        self.mysql_raw = self.pk_raw = self.sql_raw = NULL
        self.pk_set = frozenset(header.table_info.primary_key_columns)
        try:
            self.full = self._decoder()
        except (TypeError, ValueError):
            # msgspec refuses some names even as wire names ('\\', '"', control characters):
            # no typed fast path then, every image takes the reference path.
            self.full = _NO_FAST_PATH
        self.convert = _converter(self)

    def fork(self) -> _FastHeader:
        """A header sharing this one's derived parts (schema, typed decoder, converter), with its own
        stream state (the raw bytes last seen)."""
        twin: _FastHeader = object.__new__(_FastHeader)
        for slot in _FastHeader.__slots__:
            setattr(twin, slot, getattr(self, slot))
        return twin

    def _decoder(self) -> msgspec.json.Decoder[Any]:
        # Attributes are c0, c1, … whatever the column names: the converter reads them by position.
        # gc=False: a row struct holds only scalars, so the cycle collector need not track it.
        fields = [(f"c{i}", _FIELD_TYPES.get(self.kinds[name], str | None),
                   msgspec.field(name=name)) for i, name in enumerate(self.names)]
        row_type = msgspec.defstruct("CanalRow", fields, forbid_unknown_fields=True, gc=False)
        return msgspec.json.Decoder(list[row_type] | None, strict=False)  # type: ignore[valid-type]


_CONVERT_STEPS: Final = {
    K_UTF8: "        {v} = {v}.encode()",
    K_LATIN1: "        {v} = {v}.encode('latin-1')",
    # msgspec reads the text "-0" as +0.0 (strconv.ParseFloat gives -0.0): a zero declines to the reference path.
    K_F32: "        if {v} == 0.0: raise OverflowError({n})\n        {v} = unpack(pack({v}))[0]",
    K_F64: "        if {v} == 0.0: raise OverflowError({n})",
    K_UINT: "        if {v} > UINT64_MAX: raise OverflowError({n})",  # the reference path reports it
    K_BIGINT: "        if {v} > UINT64_MAX: raise OverflowError({n})",
}


def _converter(header: _FastHeader) -> Callable[[Any], Row]:
    """A function unrolled for one header: typed row struct → Row, converting only what needs it."""
    # The Row is built from one dict display of the fields (converted ones read into locals first):
    # cheaper than asdict() plus a write back per converted column.
    lines = ["def convert(item):"]
    entries = []
    for i, name in enumerate(header.names):
        quoted = literal(name)
        step = _CONVERT_STEPS.get(header.kinds[name])
        if step is None:
            entries.append(f"{quoted}: item.c{i}")
            continue
        lines += [f"    v{i} = item.c{i}", f"    if v{i} is not None:", step.format(v=f"v{i}", n=quoted)]
        entries.append(f"{quoted}: v{i}")
    lines.append("    return Row({" + ", ".join(entries) + "})")
    namespace: dict[str, Any] = {
        "Row": Row, "pack": _F32.pack, "unpack": _F32.unpack, "UINT64_MAX": UINT64_MAX,
    }
    convert: Callable[[Any], Row] = compile_function("\n".join(lines), "convert", namespace)
    return convert


def _partial_images(header: _FastHeader, raw: msgspec.Raw) -> list[dict[str, Value]] | None:
    # Partial images (only-output-updated-columns "old") hold a few columns: decode them as plain
    # string maps and convert just the columns present (unknown names raise KeyError: decline).
    images: list[dict[str, Any]] | None = _IMAGES_DECODER.decode(raw)
    if images is None:
        return None
    kinds = header.kinds
    for image in images:
        for name, value in image.items():
            kind = kinds[name]
            if value is None or kind == K_STR:
                continue
            if kind == K_UTF8:
                image[name] = value.encode()
            elif K_INT <= kind <= K_BIGINT and len(value) < 19 and value.isdigit() and value.isascii():
                image[name] = int(value)  # plain digits below 10**18: in range for every integer kind
            else:
                image[name] = parse_value(kind, value, "")
    return images


class FastPath:
    """The typed readers of one Decoder, cached per table and per raw header variant."""

    def __init__(self, content_compatible: bool) -> None:
        self._content_compatible = content_compatible
        # (database, table) → the header of its last message, checked by raw mysqlType/pkNames/sqlType bytes;
        # then every raw variant seen; a semantic index lets variants that differ only in
        # mysqlType key order (a Go map) share one header.
        self._last: dict[tuple[str, str], _FastHeader] = {}
        self._variants: dict[tuple[str, str, bytes, bytes], _FastHeader] = {}
        self._semantic: dict[_SemanticKey, _FastHeader] = {}
        # The header of the last message read by changes(), and its table: consecutive messages of
        # one table skip the lookup.
        self._recent: _FastHeader | None = None
        self._recent_database = self._recent_table = ""

    def changes(self, envelope: Envelope, op: Op, table: str, commit_ts: int,
                key_only_deletes: bool) -> list[Event]:
        """The row changes of a message naming its table, with no large-message handling (what
        ``Decoder._decode_rows`` makes of ``images``); raises one of DECLINES on anything else."""
        database = envelope.database or ""
        header = self._recent
        if (header is None or table != self._recent_table or database != self._recent_database
                or header.mysql_raw != envelope.mysqlType or header.pk_raw != envelope.pkNames
                or header.sql_raw != envelope.sqlType):
            header = self._last.get((database, table))
            if (header is None or header.mysql_raw != envelope.mysqlType or header.pk_raw != envelope.pkNames
                    or header.sql_raw != envelope.sqlType):
                header = self._header(envelope, database, table)
            self._recent = header
            self._recent_database = database
            self._recent_table = table
        convert = header.convert
        table_info = header.table_info
        structs = header.full.decode(envelope.data)
        if not structs:
            raise Decline("no data")  # the reference path reports it
        changes: list[Event] = []
        # Keyword arguments left at their defaults are not passed: each one costs on every row.
        if op is _INSERT:
            for item in structs:
                changes.append(RowChange(op=op, schema=database, table=table, commit_ts=commit_ts,
                                         columns=convert(item), table_info=table_info))
            return changes
        if op is _DELETE:
            pk_set = header.pk_set
            for item in structs:
                row = convert(item)
                if key_only_deletes or key_only_delete(row, pk_set):
                    changes.append(RowChange(op=op, schema=database, table=table, commit_ts=commit_ts,
                                             pre_columns=row, table_info=table_info, handle_key_only=True))
                else:
                    changes.append(RowChange(op=op, schema=database, table=table, commit_ts=commit_ts,
                                             pre_columns=row, table_info=table_info))
            return changes
        # An update: as in images(), whether "old" is partial is judged per message.
        old: list[Any] | None
        try:
            old = header.full.decode(envelope.old)
        except msgspec.ValidationError:
            old = _partial_images(header, envelope.old)
            partial = True
        else:
            partial = False
        if old is not None and len(old) != len(structs):
            raise Decline("old and data differ in length")  # the reference path reports it
        i = 0
        for item in structs:
            row = convert(item)
            if old is None:
                pre = Row(row)
            elif partial:
                # canalJSONMessage2RowChange: columns missing from "old" are unchanged.
                image = old[i]
                if len(image) < len(row):
                    pre = Row(row)
                    if image:
                        dict.update(pre, image)
                else:
                    pre = Row(image)
            else:
                pre = convert(old[i])
            i += 1
            changes.append(RowChange(op=op, schema=database, table=table, commit_ts=commit_ts, columns=row,
                                     pre_columns=pre, table_info=table_info))
        return changes

    def images(self, envelope: Envelope, op: Op) -> Images:
        """The images of a row message, typed-decoded; raises one of DECLINES on anything unexpected."""
        schema = envelope.database or ""
        table = envelope.table or ""
        header = self._last.get((schema, table))
        # sqlType is part of the header: it orders the columns, and a fresh decoder validates it.
        if (header is None or header.mysql_raw != envelope.mysqlType or header.pk_raw != envelope.pkNames
                or header.sql_raw != envelope.sqlType):
            header = self._header(envelope, schema, table)
        # No comprehensions on this path: in CPython 3.11 each one is a function call.
        convert = header.convert
        data: list[Row] | None = None
        structs = header.full.decode(envelope.data)
        if structs is not None:
            data = []
            for item in structs:
                data.append(convert(item))
        old: list[Row] | list[dict[str, Value]] | None = None
        if op is _UPDATE:
            # Whether "old" images are partial (only-output-updated-columns) is judged per message, never
            # remembered: the same bytes must give the same rows whatever the decoder read before.
            try:
                structs = header.full.decode(envelope.old)
            except msgspec.ValidationError:
                old = _partial_images(header, envelope.old)
            else:
                if structs is not None:
                    full_old: list[Row] = []
                    for item in structs:
                        full_old.append(convert(item))
                    old = full_old
        return (header.table_info, header.pk_set, data, old)

    def _header(self, envelope: Envelope, database: str, table: str) -> _FastHeader:
        """The header of a message whose raw mysqlType/pkNames differ from its table's last one."""
        # Go iterates a map from a random starting slot, so one schema yields a bounded number of
        # mysqlType orders: remember each raw variant seen (pkNames compared as raw bytes).
        raw_key = (database, table, bytes(envelope.mysqlType), bytes(envelope.sqlType))
        header = self._variants.get(raw_key)
        if header is not None and header.pk_raw == envelope.pkNames:
            return header
        header = self._parse_header(envelope, database, table)
        if len(self._variants) > 16384:
            self._variants.clear()
        self._variants[raw_key] = header
        if len(self._last) > 4096:
            self._last.clear()
        self._last[(database, table)] = header
        return header

    def _parse_header(self, envelope: Envelope, database: str, table: str) -> _FastHeader:
        """The header for a raw mysqlType/pkNames variant not seen before (parsed, then shared)."""
        # A variant any decoder of this process parsed already skips the parsing, and its derived
        # parts (typed decoder, converter) are shared: a fresh decoder (one per Spark task or CLI
        # call) then builds no structs and compiles no code.
        raw_key = (self._content_compatible, database, table, bytes(envelope.mysqlType), bytes(envelope.sqlType),
                   bytes(envelope.pkNames))
        semantic_key = _SEMANTIC_KEYS.get(raw_key)
        parsed = None
        if semantic_key is None:
            mysql_types = read_mysql_types(envelope)
            pk_names = read_pk_names(envelope)
            sql_types = read_sql_types(envelope)
            parsed = (mysql_types, pk_names, sql_types)
            # The column order is part of the meaning: read_header takes sqlType's order, then the
            # mysqlType order of the columns sqlType does not name.
            ordered = [n for n in sql_types if n in mysql_types]
            named = set(ordered)
            ordered += [n for n in mysql_types if n not in named]
            semantic_key = (self._content_compatible, database, table, frozenset(mysql_types.items()),
                            tuple(pk_names), tuple(ordered))
            if len(_SEMANTIC_KEYS) >= _SHARED_LIMIT:
                _SEMANTIC_KEYS.clear()
            _SEMANTIC_KEYS[raw_key] = semantic_key
        header = self._semantic.get(semantic_key)
        if header is None:
            shared = _SHARED.get(semantic_key)
            if shared is None:
                if parsed is None:
                    parsed = (read_mysql_types(envelope), read_pk_names(envelope), read_sql_types(envelope))
                mysql_types, pk_names, sql_types = parsed
                shared = _FastHeader(read_header(envelope, mysql_types, pk_names, self._content_compatible, sql_types))
                if len(_SHARED) >= _SHARED_LIMIT:
                    _SHARED.clear()
                _SHARED[semantic_key] = shared
            header = shared.fork()
            if len(self._semantic) > 1024:
                self._semantic.clear()
            self._semantic[semantic_key] = header
        header.mysql_raw = envelope.mysqlType
        header.pk_raw = envelope.pkNames
        header.sql_raw = envelope.sqlType
        return header
