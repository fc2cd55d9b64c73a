"""The Canal-JSON encoder: one message per row (easyjson text), DDL and watermark struct marshals."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import orjson

from pyticdc.codec._fastpath import compile_function, literal
from pyticdc.codec.base import BaseEncoder, Message
from pyticdc.codec.canal_json.message import (
    K_STR,
    OPTIONS,
    PROTOCOL,
    RECORD_OVERHEAD,
    WATERMARK_TYPE,
    canal_ddl_type,
    ddl_action_type,
    java_base,
    java_promotion,
    key_only_delete,
    mysql_type,
    table_info_from_header,
    unsigned_number,
    value_kind,
)
from pyticdc.codec.canal_json.values import parse_value, render
from pyticdc.codec.canal_json.writer import WRITER_DECLINES, RowWriter, row_writer
from pyticdc.codec.compression import compress
from pyticdc.codec.jsontext import easyjson_quote, go_json_quote
from pyticdc.errors import ConfigError, DecodeError, EncodeError
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Value,
    Watermark,
)

__all__ = ["Encoder", "encode"]

_BINARY_FLAG: Final = int(ColumnFlag.BINARY)
_HANDLE_KEY_FLAG: Final = int(ColumnFlag.HANDLE_KEY)
_PRIMARY_KEY_FLAG: Final = int(ColumnFlag.PRIMARY_KEY)


class _EncColumn:
    """One column's precomputed encoding plan."""

    __slots__ = ("binary", "bits", "column", "handle_key", "java", "key", "mysql_pair", "name", "promotion")

    def __init__(self, column: ColumnInfo, content_compatible: bool) -> None:
        self.column = column
        self.name = column.name
        quoted = easyjson_quote(column.name)
        self.key = quoted + ":"
        self.binary = bool(int(column.flags) & _BINARY_FLAG)
        self.bits = 32 if column.type_code == TypeCode.FLOAT else 64
        self.handle_key = bool(int(column.flags) & _HANDLE_KEY_FLAG)
        self.java = java_base(column)
        self.promotion = java_promotion(column)
        self.mysql_pair = quoted + ":" + easyjson_quote(mysql_type(column, content_compatible))


class _EncTable:
    """A TableInfo's encoding plan: non-virtual columns in table order, pkNames, names known."""

    __slots__ = ("columns", "fill", "full_mysql", "full_sql", "heads", "known", "names", "pk_json", "pk_names",
                 "pk_set", "promotions", "table_info")

    def __init__(self, table_info: TableInfo, content_compatible: bool) -> None:
        self.table_info = table_info
        self.columns = tuple(_EncColumn(c, content_compatible) for c in table_info.columns if not c.virtual)
        self.names = frozenset(c.name for c in self.columns)
        self.known = frozenset(c.name for c in table_info.columns)
        self.pk_names = [c.name for c in table_info.columns if int(c.flags) & _PRIMARY_KEY_FLAG]
        self.pk_set = frozenset(self.pk_names)
        self.pk_json = "[" + ",".join(easyjson_quote(n) for n in self.pk_names) + "]"
        # sqlType/mysqlType of an image holding every column: the same for every row but for the
        # unsigned columns whose Java type a large value promotes (patched per row).
        self.full_sql = [f"{col.key}{col.java}" for col in self.columns]
        self.full_mysql = "{" + ",".join(col.mysql_pair for col in self.columns) + "}"
        self.promotions = tuple((i, col, col.promotion) for i, col in enumerate(self.columns)
                                if col.promotion is not None)
        #: (kind, schema, table, pkNames text) → the message text before "es".
        self.heads: dict[tuple[str, str, str, str], str] = {}
        #: The generated writer of _fill_fast, compiled on first use.
        self.fill: Callable[[Mapping[str, Value]], dict[str, str | None]] | None = None

    def pk_text(self, image: Mapping[str, Value]) -> str:
        """pkNames of one message: PrimaryKeyColumnNames() walks the sent image (§4.1), so a
        primary-key column the image lacks is not named."""
        if self.pk_set <= image.keys():
            return self.pk_json
        return "[" + ",".join(easyjson_quote(n) for n in self.pk_names if n in image) + "]"


class _Slow(Exception):  # a control-flow signal, not an error
    """Raised by _fill_fast: this image is for the per-value writer (``Encoder._fill``)."""


#: orjson writes what easyjson escapes differently: < > & U+2028 U+2029 raw (easyjson: \u003c ...),
#: and \b \f short (easyjson: \u0008 \u000c). Every other escape (" \\ \n \r \t, \u00XX in
#: lower-case hex for the other controls) and the raw UTF-8 of everything else agree.
_EASYJSON_FIXUPS: Final = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                           (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


#: One escape of orjson's output: a backslash and the next byte. Scanning left to right pairs every
#: backslash with what it escapes, so an escaped backslash followed by a "b" is not taken for \b.
_ESCAPE: Final = re.compile(rb"\\(.)", re.DOTALL)
_EASYJSON_LONG: Final = {b"b": b"\\u0008", b"f": b"\\u000c"}


def _long_escape(match: re.Match[bytes]) -> bytes:
    return _EASYJSON_LONG.get(match.group(1), match.group(0))


def _value_text(value: Value, binary: bool, bits: int) -> str:
    """The text of a non-null value as ``render`` quotes it, for orjson to quote (else _Slow)."""
    if type(value) is int:
        return str(value)
    if type(value) is bytes:
        return value.decode("latin-1") if binary else value.decode()
    if type(value) is str:
        return value
    if type(value) is float:
        return render(value, binary, bits)[1:-1]  # digits only (NaN/±Inf: "0"): nothing to escape
    raise _Slow


# The column types whose values are usually ints, floats or bytes: which check a writer tries first.
_INT_CODES: Final = frozenset({1, 2, 3, 8, 9, 13, 16, 247, 248})
_FLOAT_CODES: Final = frozenset({4, 5})
_BYTES_CODES: Final = frozenset({15, 249, 250, 251, 252, 253, 254})


def _fill_writer(plan: _EncTable) -> Callable[[Mapping[str, Value]], dict[str, str | None]]:
    """A function unrolled for one plan: a full image → the dict of value texts _fill_fast dumps
    (the likely type of each column checked inline, anything else through _value_text)."""
    items = []
    namespace: dict[str, Any] = {"text": _value_text}
    for col in plan.columns:
        other = f"text(v, {col.binary}, {col.bits})"
        code = col.column.type_code
        if code in _INT_CODES:
            expression = f"str(v) if type(v) is int else {other}"
        elif code in _BYTES_CODES:
            expression = f"v.decode({'latin-1' if col.binary else 'utf-8'!r}) if type(v) is bytes else {other}"
        elif code in _FLOAT_CODES:
            expression = other
        else:
            expression = f"v if type(v) is str else {other}"
        items.append(f"{literal(col.name)}: None if (v := image[{literal(col.name)}]) is None else {expression}")
    source = "def fill(image):\n    return {" + ", ".join(items) + "}\n"
    fill: Callable[[Mapping[str, Value]], dict[str, str | None]] = compile_function(source, "fill", namespace)
    return fill


def _fill_fast(plan: _EncTable, image: Mapping[str, Value]) -> str:
    """``_fill`` of an image holding every column (no handle-key-only, no only-updated filter): the
    value texts built in Python, the JSON written by orjson, easyjson's escapes fixed up after.

    Raises KeyError (a column missing), UnicodeError (invalid UTF-8 text, a lone surrogate),
    orjson.JSONEncodeError or _Slow (a value type rendered otherwise): the caller then writes the
    image value by value. A test checks both agree.
    """
    fill = plan.fill
    if fill is None:
        fill = plan.fill = _fill_writer(plan)
    out = orjson.dumps([fill(image)])
    if b"\\b" in out or b"\\f" in out:  # (maybe an escaped backslash before a b or f: see _long_escape)
        out = _ESCAPE.sub(_long_escape, out)
    for raw, escaped in _EASYJSON_FIXUPS:
        if raw in out:
            out = out.replace(raw, escaped)
    return out.decode()


def _values_equal(old: Value, new: Value) -> bool:
    # codec.IsColumnValueEqual: nil only equals nil; []byte by content; others by ==.
    if old is None or new is None:
        return old is new
    return bool(old == new)


def _row_kind(event: RowChange) -> str | None:
    # RowChangedEvent.IsDelete/IsInsert/IsUpdate decide by which images are present (§4.1).
    if not event.columns:
        return "DELETE" if event.pre_columns else None
    return "UPDATE" if event.pre_columns else "INSERT"


class Encoder(BaseEncoder):
    """Canal-JSON encoder: one message per row, DDL and (with the extension) watermark messages."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def _validate(self) -> None:
        options = self.options
        self._only_updated = options.only_output_updated_columns or options.content_compatible
        self._plans: dict[int, _EncTable] = {}
        #: id(TableInfo) → (the TableInfo, its generated row writer for these options, if any).
        self._writers: dict[int, tuple[TableInfo, RowWriter | None]] = {}
        handling = options.large_message_handle_option
        if handling != "none" and not options.enable_tidb_extension:
            raise ConfigError(
                f"{PROTOCOL}: large-message-handle-option={handling} requires enable-tidb-extension=true"
            )
        if handling == "claim-check" and not options.claim_check_storage_uri and self.claim_check is None:
            raise ConfigError(f"{PROTOCOL}: large-message-handle-option=claim-check needs claim-check-storage-uri")

    # ------------------------------------------------------------------ plans
    def _plan(self, event: RowChange) -> _EncTable:
        table_info = event.table_info
        if table_info is None:
            raise EncodeError(PROTOCOL, f"row of {event.schema}.{event.table} has no table_info")
        plan = self._plans.get(id(table_info))
        if plan is None or plan.table_info is not table_info:
            if len(self._plans) > 256:
                self._plans.clear()
            plan = _EncTable(table_info, self.options.content_compatible)
            self._plans[id(table_info)] = plan
        for image in (event.columns, event.pre_columns):
            if image and not image.keys() <= plan.known:
                unknown = sorted(set(image) - plan.known)
                raise EncodeError(PROTOCOL, f"columns {unknown} are not in the table_info of "
                                            f"{event.schema}.{event.table}")
        return plan

    # ------------------------------------------------------------------ DML
    def _dml_text(self, event: RowChange, plan: _EncTable, kind: str, too_large: bool, location: str | None) -> str:
        """newJSONMessageForDML (§4.1): the exact easyjson text of one row message."""
        options = self.options
        is_delete = kind == "DELETE"
        only_handle_key = too_large or (is_delete and options.delete_only_output_handle_key_columns)
        image = event.pre_columns if is_delete else event.columns
        assert image is not None
        if not only_handle_key and plan.names <= image.keys():
            sql_types = plan.full_sql
            for i, col, (limit, promoted) in plan.promotions:
                value = image[col.name]
                if value is not None and unsigned_number(value) > limit:
                    if sql_types is plan.full_sql:
                        sql_types = list(sql_types)
                    sql_types[i] = f"{col.key}{promoted}"
            return self._dml_parts(event, plan, kind, image, too_large, location, only_handle_key,
                                   "{" + ",".join(sql_types) + "}" if sql_types else "null", plan.full_mysql)
        sql_types = []
        mysql_types: list[str] = []
        for col in plan.columns:
            if col.name not in image or (only_handle_key and not col.handle_key):
                continue
            java = col.java
            promotion = col.promotion
            if promotion is not None:
                value = image[col.name]
                if value is not None and unsigned_number(value) > promotion[0]:
                    java = promotion[1]
            sql_types.append(f"{col.key}{java}")
            mysql_types.append(col.mysql_pair)
        return self._dml_parts(event, plan, kind, image, too_large, location, only_handle_key,
                               "{" + ",".join(sql_types) + "}" if sql_types else "null",
                               "{" + ",".join(mysql_types) + "}")

    def _dml_parts(self, event: RowChange, plan: _EncTable, kind: str, image: Mapping[str, Value], too_large: bool,
                   location: str | None, only_handle_key: bool, sql_type: str, mysql_type: str) -> str:
        options = self.options
        pk_names = plan.pk_text(image)
        # Everything before "es" depends on the table, the kind and pkNames only: written once.
        head_key = (kind, event.schema, event.table, pk_names)
        head = plan.heads.get(head_key)
        if head is None:
            if len(plan.heads) >= 64:
                plan.heads.clear()
            head = plan.heads[head_key] = (
                f'{{"id":0,"database":{easyjson_quote(event.schema)},"table":{easyjson_quote(event.table)},'
                f'"pkNames":{pk_names},"isDdl":false,"type":"{kind}","es":')
        parts = [
            head, str(event.commit_ts >> 18),
            ',"ts":', str(int(self.clock())), ',"sql":"","sqlType":', sql_type, ',"mysqlType":', mysql_type,
        ]
        if kind == "UPDATE":
            new_map = event.columns if self._only_updated else None
            parts += [',"old":', self._fill(plan, event.pre_columns, new_map, only_handle_key),
                      ',"data":', self._fill(plan, event.columns, None, only_handle_key)]
        else:
            parts += [',"old":null,"data":', self._fill(plan, image, None, only_handle_key)]
        if options.enable_tidb_extension:
            parts += [',"_tidb":{"commitTs":', str(event.commit_ts)]
            if too_large and options.large_message_handle_option == "handle-key-only":
                parts.append(',"onlyHandleKey":true')
            if too_large and options.large_message_handle_option == "claim-check":
                parts += [',"claimCheckLocation":', easyjson_quote(location or "")]
            parts.append("}")
        parts.append("}")
        return "".join(parts)

    @staticmethod
    def _fill(plan: _EncTable, image: Mapping[str, Value] | None, new_map: Mapping[str, Value] | None,
              only_handle_key: bool) -> str:
        """fillColumns: ``[{…}]`` of one image in table order, or ``null`` when there is none."""
        if not image:
            return "null"
        if new_map is None and not only_handle_key:
            try:
                return _fill_fast(plan, image)
            except (KeyError, UnicodeError, orjson.JSONEncodeError, _Slow):
                pass  # a column the image lacks, invalid UTF-8, a value type rendered otherwise
        items: list[str] = []
        for col in plan.columns:
            name = col.name
            if name not in image:
                continue
            value = image[name]
            # shouldIgnoreColumn: only-output-updated-columns drops columns equal in the post-image.
            if new_map is not None and name in new_map and _values_equal(value, new_map[name]):
                continue
            if only_handle_key and not col.handle_key:
                continue
            items.append(col.key + ("null" if value is None else render(value, col.binary, col.bits)))
        return "[{" + ",".join(items) + "}]"

    def _finish(self, text: str) -> bytes:
        try:
            value = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(PROTOCOL, f"text is not encodable as UTF-8: {exc}") from None
        return compress(self.options.large_message_handle_compression, value)

    def _fits(self, value: bytes) -> bool:
        return len(value) + RECORD_OVERHEAD <= self.options.max_message_bytes

    def _writer(self, table_info: TableInfo) -> RowWriter | None:
        entry = self._writers.get(id(table_info))
        if entry is None or entry[0] is not table_info:
            if len(self._writers) > 256:
                self._writers.clear()
            options = self.options
            entry = (table_info, row_writer(table_info, options.content_compatible, options.enable_tidb_extension,
                                            self._only_updated, options.delete_only_output_handle_key_columns))
            self._writers[id(table_info)] = entry
        return entry[1]

    def _encode_row(self, event: RowChange) -> Message | None:
        # The table's generated writer writes the common message whole; the reference path below
        # writes what it declines and every message over max-message-bytes.
        table_info = event.table_info
        if table_info is not None:
            writer = self._writer(table_info)
            if writer is not None:
                try:
                    fast = writer(event, int(self.clock()))
                except WRITER_DECLINES:
                    fast = None
                if fast is not None:
                    fast = compress(self.options.large_message_handle_compression, fast)
                    if self._fits(fast):
                        return Message(None, fast, (event,))
        return self._encode_row_reference(event)

    def _encode_row_reference(self, event: RowChange) -> Message | None:
        kind = _row_kind(event)
        if kind is None:
            return None  # TiCDC drops rows with neither image (§1.3)
        plan = self._plan(event)
        value = self._finish(self._dml_text(event, plan, kind, False, None))
        if self._fits(value):
            return Message(None, value, (event,))
        # §8 large messages: AppendRowChangedEvent.
        handling = self.options.large_message_handle_option
        size = len(value) + RECORD_OVERHEAD
        limit = self.options.max_message_bytes
        if handling == "none":
            raise EncodeError(PROTOCOL, f"message of {size} bytes exceeds max-message-bytes {limit}")
        if handling == "handle-key-only":
            value = self._finish(self._dml_text(event, plan, kind, True, None))
            if not self._fits(value):
                raise EncodeError(PROTOCOL, f"handle-key-only message of {len(value) + RECORD_OVERHEAD} bytes "
                                            f"still exceeds max-message-bytes {limit}")
            return Message(None, value, (event,))
        if self.claim_check is None:
            raise EncodeError(PROTOCOL, "claim-check needs a ClaimCheckStore (Encoder(claim_check=…))")
        # The store writes {"key","value"} JSON or, with claim-check-raw-value, the raw value.
        location = self.claim_check.put(None, value)
        value = self._finish(self._dml_text(event, plan, kind, True, location))
        if not self._fits(value):
            raise EncodeError(PROTOCOL, f"claim-check location message of {len(value) + RECORD_OVERHEAD} bytes "
                                        f"exceeds max-message-bytes {limit}")
        return Message(None, value, (event,))

    # ------------------------------------------------------------------ DDL / watermark
    def _envelope_text(self, database: str, table: str, is_ddl: bool, canal_type: str, es: int, sql: str,
                       tidb: str | None) -> str:
        """A JSONMessage struct marshal (goccy/go-json, encoding/json escaping), ``data`` before ``old``."""
        text = (
            f'{{"id":0,"database":{go_json_quote(database)},"table":{go_json_quote(table)},"pkNames":null,'
            f'"isDdl":{"true" if is_ddl else "false"},"type":{go_json_quote(canal_type)},"es":{es},'
            f'"ts":{int(self.clock())},"sql":{go_json_quote(sql)},"sqlType":null,"mysqlType":null,'
            f'"data":null,"old":null'
        )
        return text + (f',"_tidb":{tidb}}}' if tidb is not None else "}")

    def _encode_ddl(self, event: DDLEvent) -> Message:
        tidb = None
        if self.options.enable_tidb_extension:
            # tidbExtension fields are omitempty.
            tidb = f'{{"commitTs":{event.commit_ts}}}' if event.commit_ts else "{}"
        text = self._envelope_text(event.schema, event.table, True, canal_ddl_type(event.ddl_type),
                                   event.commit_ts >> 18, event.query, tidb)
        return Message(None, self._finish(text), (event,))

    def _encode_watermark(self, event: Watermark) -> Message | None:
        if not self.options.enable_tidb_extension:
            return None  # EncodeCheckpointEvent returns nil without the extension (§1.4)
        ts = event.resolved_ts
        tidb = f'{{"watermarkTs":{ts}}}' if ts else "{}"
        text = self._envelope_text("", "", False, WATERMARK_TYPE, ts >> 18, "", tidb)
        return Message(None, self._finish(text), (event,))

    def encode(self, events: Iterable[Event]) -> list[Message]:
        """One message per row / DDL / watermark (Canal-JSON never batches)."""
        messages: list[Message] = []
        writers, clock = self._writers, self.clock
        # A row of a table whose writer is known is written here without _encode_row's calls (it
        # does the same for a table seen first); what the writer declines or what exceeds
        # max-message-bytes goes the reference way.
        room = self.options.max_message_bytes - RECORD_OVERHEAD
        compression = self.options.large_message_handle_compression
        for event in events:
            message: Message | None
            if type(event) is RowChange:
                entry = writers.get(id(event.table_info))
                if entry is not None and entry[0] is event.table_info and entry[1] is not None:
                    try:
                        value = entry[1](event, int(clock()))
                    except WRITER_DECLINES:
                        value = None
                    if value is not None:
                        if compression != "none":
                            value = compress(compression, value)
                        if len(value) <= room:
                            messages.append(Message(None, value, (event,)))
                            continue
                    message = self._encode_row_reference(event)
                else:
                    message = self._encode_row(event)
            elif isinstance(event, RowChange):
                message = self._encode_row(event)
            elif isinstance(event, DDLEvent):
                message = self._encode_ddl(event)
            elif isinstance(event, Watermark):
                message = self._encode_watermark(event)
            else:
                message = None  # Bootstrap is a Simple-protocol event
            if message is not None:
                messages.append(message)
        return messages

    # ------------------------------------------------------------------ projection
    def _commit_ts(self, commit_ts: int) -> int:
        return commit_ts if self.options.enable_tidb_extension else (commit_ts >> 18) << 18

    def project(self, event: Event) -> Event | None:
        """The event as Canal-JSON's decoder returns it with these options (see the decoder module).

        For a row over max-message-bytes under claim-check the full row is returned (what a
        decoder holding the store sees) without ``claim_check_location``, which the store assigns.
        """
        if isinstance(event, Watermark):
            return event if self.options.enable_tidb_extension else None
        if isinstance(event, DDLEvent):
            return DDLEvent(query=event.query, ddl_type=ddl_action_type(canal_ddl_type(event.ddl_type), event.query),
                            commit_ts=self._commit_ts(event.commit_ts), schema=event.schema, table=event.table)
        if isinstance(event, RowChange):
            return self._project_row(event)
        return None

    def _project_row(self, event: RowChange) -> RowChange | None:
        kind = _row_kind(event)
        if kind is None:
            return None
        plan = self._plan(event)
        options = self.options
        too_large = False
        if options.large_message_handle_option == "handle-key-only":
            value = self._finish(self._dml_text(event, plan, kind, False, None))
            too_large = not self._fits(value)
        handle_key_only = too_large or (kind == "DELETE" and options.delete_only_output_handle_key_columns)
        wanted = [c for c in plan.columns if not handle_key_only or c.handle_key]
        header_image = event.pre_columns if kind == "DELETE" else event.columns
        assert header_image is not None
        header = [c for c in wanted if c.name in header_image]
        types = {c.name: mysql_type(c.column, options.content_compatible) for c in header}
        table_info = table_info_from_header(event.schema, event.table, [c.name for c in header], types,
                                            plan.pk_names, options.content_compatible)
        kinds = {c.name: value_kind(types[c.name]) for c in header}

        def project_image(image: Mapping[str, Value] | None, new_map: Mapping[str, Value] | None) -> Row | None:
            if not image:
                return None
            out: dict[str, Value] = {}
            for col in wanted:
                name = col.name
                if name not in image:
                    continue
                value = image[name]
                if new_map is not None and name in new_map and _values_equal(value, new_map[name]):
                    continue  # dropped from "old" by only-output-updated-columns
                out[name] = None if value is None else _project_value(kinds.get(name, K_STR), value, col)
            return Row(out)

        columns = pre = None
        if kind == "DELETE":
            pre = project_image(event.pre_columns, None)
            handle_key_only = handle_key_only or key_only_delete(pre or {}, frozenset(plan.pk_names))
        else:
            columns = project_image(event.columns, None)
        if kind == "UPDATE":
            assert columns is not None
            pre = project_image(event.pre_columns, event.columns if self._only_updated else None)
            # The decoder rebuilds a shorter pre-image as the post-image overlaid with "old" (§4.1).
            if pre is None or len(pre) < len(columns):
                pre = Row({**columns, **(pre or {})})
        return RowChange(op=Op[kind], schema=event.schema, table=event.table,
                         commit_ts=self._commit_ts(event.commit_ts), columns=columns, pre_columns=pre,
                         table_info=table_info, handle_key_only=handle_key_only)


def _project_value(kind: int, value: Value, col: _EncColumn) -> Value:
    """A value after formatValue on the encoder and canalJSONFormatColumn on the decoder."""
    try:
        text = orjson.loads(render(value, col.binary, col.bits))
        return parse_value(kind, text, col.name)
    except (orjson.JSONDecodeError, DecodeError) as exc:
        raise EncodeError(PROTOCOL, f"column {col.name!r}: value {value!r} does not survive Canal-JSON: {exc}"
                          ) from None


def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode events with a one-shot Encoder."""
    return Encoder(options).encode(events)
