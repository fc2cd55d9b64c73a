"""The Simple encoder: one message per event, JSON or Avro per ``encoding-format`` (reference §6).

WATERMARK for a Watermark, BOOTSTRAP for a Bootstrap, a DDL message (``tableSchema`` /
``preTableSchema``) for a DDLEvent, INSERT/UPDATE/DELETE for a RowChange (which must carry its
``table_info``). With ``auto_bootstrap=True`` (the default) the encoder also plays TiCDC's
bootstrap worker for the partition it encodes: a BOOTSTRAP message precedes the first row of
every table, and later rows when ``send-bootstrap-interval-in-sec`` or
``send-bootstrap-in-msg-count`` says so (see ``BootstrapPolicy``; both must be > 0). TiCDC's
codec itself never emits BOOTSTRAP (its sink does, broadcast to the partitions), so a router
that runs ``BootstrapPolicy`` itself, and the golden vectors, use ``auto_bootstrap=False``.

Rows of a table are written by straight-line writers generated per table (``fastpath``); values
they do not take, and large-message handling, go through the per-value reference functions.

What a round trip keeps (``Encoder.project``): row values exactly (JSON turns invalid UTF-8 in
text-charset strings into U+FFFD; NaN/±Inf floats become 0 as TiCDC's mounter does), no
``row_id``, ``table_id``/``physical_table_id`` from the wire, the table schema as TableSchema
carries it (type code from ``mysqlType``, flags re-derived from indexes, YEAR and BIT always
Unsigned, §1.2; no type_desc, comment, generated/virtual marks; Avro keeps ``decimal`` for
DECIMAL only), DDL ``ddl_type`` reduced to the Simple type's representative action (CREATE 3,
ALTER 5, ERASE 4, RENAME 14, TRUNCATE 11, CINDEX 7, DINDEX 8, QUERY 0) and no ``start_ts``.
Virtual generated columns and columns unknown to the table are not written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyticdc.codec._fastpath import DECLINES
from pyticdc.codec.base import BaseEncoder, ClaimCheckStore, Message
from pyticdc.codec.compression import compress
from pyticdc.codec.jsontext import go_json_quote
from pyticdc.codec.options import Clock, CodecOptions
from pyticdc.codec.simple import values as V
from pyticdc.codec.simple.avro import DDL_TYPES, DML_TYPES, MESSAGE_HEADS, long_bytes, write_long, write_str
from pyticdc.codec.simple.fastpath import Writers, writers
from pyticdc.codec.simple.message import (
    DDL_TYPE_ACTIONS,
    DML_TYPE_NAMES,
    MASK64,
    OPTIONS,
    PROTOCOL,
    RECORD_OVERHEAD,
    ddl_message_type,
    location_name,
    u64_as_i64,
)
from pyticdc.codec.simple.policy import BootstrapPolicy, TableRecord
from pyticdc.codec.simple.schema import avro_table_schema, json_table_schema, project_table
from pyticdc.codec.simple.values import ColumnPlan, table_plan
from pyticdc.codec.simple.writer_avro import WRITER_DECLINES as AVRO_WRITER_DECLINES
from pyticdc.codec.simple.writer_avro import avro_row_writer
from pyticdc.codec.simple.writer_json import WRITER_DECLINES, JsonRowWriter, json_row_writer
from pyticdc.errors import ConfigError, EncodeError
from pyticdc.model import Bootstrap, DDLEvent, Event, Op, Row, RowChange, TableInfo, Watermark

__all__ = ["Encoder", "encode"]


class Encoder(BaseEncoder):
    """Simple-protocol encoder (JSON or Avro per ``encoding-format``)."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *, clock: Clock | None = None,
        claim_check: ClaimCheckStore | None = None, auto_bootstrap: bool = True,
        bootstrap_policy: BootstrapPolicy | None = None, partition: int | None = None, **kwargs: Any,
    ) -> None:
        super().__init__(options, clock=clock, claim_check=claim_check, **kwargs)
        #: Emit BOOTSTRAP before rows as TiCDC's bootstrap worker would (see module docs); with
        #: ``send-bootstrap-to-all-partition=false`` only the encoder of ``partition`` 0 (or of an
        #: unknown partition) does.
        self.auto_bootstrap = auto_bootstrap and (
            partition is None or partition == 0 or self.options.send_bootstrap_to_all_partition)
        #: The BOOTSTRAP schedule used when ``auto_bootstrap`` is on.
        self.bootstrap_policy = bootstrap_policy or BootstrapPolicy.from_options(self.options)
        self._avro = self.options.encoding_format == "avro"
        location = location_name(self.options.time_zone)
        self._location = location
        #: id(TableInfo) → (the TableInfo, its generated JSON row writer, if any).
        self._json_writers: dict[int, tuple[TableInfo, JsonRowWriter | None]] = {}
        #: The entry of the last row's table (a batch's rows are mostly of one table); (None, None) at first.
        self._json_last: tuple[TableInfo | None, JsonRowWriter | None] = (None, None)
        self._location_json = go_json_quote(location)
        # Read once (options are frozen): the fast writers check them on every row.
        self._compressed = self.options.large_message_handle_compression != "none"
        self._room = self.options.max_message_bytes - RECORD_OVERHEAD
        loc = location.encode("utf-8")
        self._location_avro = long_bytes(len(loc)) + loc
        # Uncompressed JSON rows go through _encode_json, which inlines _fast_json_message: not for a
        # subclass that replaces it (the reference encoders of the tests switch the fast path off so).
        self._inline_json = (not self._avro and not self._compressed
                             and type(self)._fast_json_message is Encoder._fast_json_message)

    def _validate(self) -> None:
        opts = self.options
        if (opts.large_message_handle_option == "claim-check" and not opts.claim_check_storage_uri
                and self.claim_check is None):
            raise ConfigError("simple: large-message-handle-option=claim-check needs claim-check-storage-uri")

    # ---- public surface
    def encode(self, events: Iterable[Event]) -> list[Message]:
        """One message per event (plus BOOTSTRAP messages when ``auto_bootstrap``)."""
        messages: list[Message] = []
        append = messages.append
        policy = self.bootstrap_policy if self.auto_bootstrap and self.bootstrap_policy.enabled else None
        if self._inline_json:
            self._encode_json(events, append, policy)
            return messages
        # Rows are nearly every event: the JSON writer is tried here, without _row_message's dispatch.
        fast = None if self._avro else self._fast_json_message
        for event in events:
            if isinstance(event, RowChange):
                if policy is not None:
                    table = event.table_info
                    if table is None:
                        table = self._table_of(event)  # raises its EncodeError
                    now = self.clock()
                    if policy.should_emit(table, now, 1, table_key=event.physical_table_id or table.table_id):
                        append(self._bootstrap_message(Bootstrap(table_info=table, build_ts=now), now))
                message = fast(event) if fast is not None else None
                append(message if message is not None else self._row_message(event, fast is None))
            else:
                append(self._event_message(event))
        return messages

    def _event_message(self, event: Event) -> Message:
        """The message of an event that is not a row change (DDL, watermark, BOOTSTRAP)."""
        if isinstance(event, DDLEvent):
            return self._ddl_message(event)
        if isinstance(event, Watermark):
            return self._watermark_message(event)
        if isinstance(event, Bootstrap):
            return self._bootstrap_message(event)
        raise EncodeError(PROTOCOL, f"cannot encode {type(event).__name__}")

    def _encode_json(self, events: Iterable[Event], append: Callable[[Message], None],
                     policy: BootstrapPolicy | None) -> None:
        """``encode`` of uncompressed JSON: rows through the table's writer, in the loop itself.

        Per row it does what ``encode`` does through ``should_emit`` and ``_fast_json_message`` (the
        clock is read as often, in the same order): the policy's record of the last row's table
        counts a row itself while the row is quiet (``BootstrapPolicy.quiet``).
        """
        clock = self.clock
        location = self._location
        room = self._room
        table: TableInfo | None = None  # the last row's table, its writer and its policy record
        writer: JsonRowWriter | None = None
        record: TableRecord | None = None
        key = 0
        interval_ms = policy.interval_ms if policy is not None else 0
        msg_count = policy.msg_count if policy is not None else 0
        max_inactive_ms = policy.max_inactive_ms if policy is not None else 0
        for event in events:
            if type(event) is not RowChange:
                if isinstance(event, RowChange):  # a subclass: the general way
                    self._encode_json_row(event, append, policy)
                else:
                    append(self._event_message(event))
                table = writer = None  # looked up again for the next row (its table may be None)
                continue
            info = event.table_info
            if policy is not None:
                if info is None:
                    info = self._table_of(event)  # raises its EncodeError
                now = clock()
                row_key = event.physical_table_id or info.table_id
                # should_emit's quiet case (see BootstrapPolicy.quiet), on the record it keeps
                if (info is table and row_key == key and record is not None and now - record.last_sent_ms < interval_ms
                        and record.rows_since_sent < msg_count and now - record.last_row_ms <= max_inactive_ms):
                    record.rows_since_sent += 1
                    record.last_row_ms = now
                else:
                    if policy.should_emit(info, now, 1, table_key=row_key):
                        append(self._bootstrap_message(Bootstrap(table_info=info, build_ts=now), now))
                    key = row_key
                    record = policy.record(row_key)
            if info is not table:
                table = info
                writer = self._json_writer(info) if info is not None else None
            if writer is not None:
                try:
                    value = writer(event, clock(), location)
                except WRITER_DECLINES:
                    value = None
                if value is not None and len(value) <= room:
                    append(Message(None, value, (event,)))
                    continue
            append(self._row_message(event, False))

    def _encode_json_row(self, event: RowChange, append: Callable[[Message], None],
                         policy: BootstrapPolicy | None) -> None:
        """One row as ``encode``'s general loop writes it."""
        if policy is not None:
            table = self._table_of(event)
            now = self.clock()
            if policy.should_emit(table, now, 1, table_key=event.physical_table_id or table.table_id):
                append(self._bootstrap_message(Bootstrap(table_info=table, build_ts=now), now))
        message = self._fast_json_message(event)
        append(message if message is not None else self._row_message(event, False))

    def bootstrap_message(self, table_info: TableInfo) -> Message:
        """The BOOTSTRAP message for ``table_info`` (what the routing layer broadcasts)."""
        return self._bootstrap_message(Bootstrap(table_info=table_info))

    def project(self, event: Event) -> Event | None:
        """The event as this protocol's decoder returns it (module docs list what is lost).

        Assumes the decoder learnt the schema from this encoder's BOOTSTRAP/DDL messages and,
        for claim-check, can read the store (the full row comes back, without a location).
        """
        encoding = "avro" if self._avro else "json"
        if isinstance(event, Watermark):
            return event
        if isinstance(event, Bootstrap):
            return Bootstrap(table_info=project_table(event.table_info, encoding), build_ts=self.clock())
        if isinstance(event, DDLEvent):
            after = project_table(event.table_info, encoding) if event.table_info is not None else None
            before = project_table(event.pre_table_info, encoding) if event.pre_table_info is not None else None
            named = after or before
            return DDLEvent(
                query=event.query, ddl_type=DDL_TYPE_ACTIONS[ddl_message_type(event.ddl_type)],
                commit_ts=event.commit_ts, schema=named.schema if named else "", table=named.table if named else "",
                table_info=after, pre_table_info=before,
            )
        if isinstance(event, RowChange):
            return self._project_row(event, encoding)
        raise EncodeError(PROTOCOL, f"cannot encode {type(event).__name__}")

    # ---- messages
    def _finish(self, value: bytes, events: tuple[Event, ...], what: str, check: bool = True) -> Message:
        value = compress(self.options.large_message_handle_compression, value)
        if check and len(value) + RECORD_OVERHEAD > self.options.max_message_bytes:
            raise EncodeError(PROTOCOL, f"{what} message of {len(value) + RECORD_OVERHEAD} bytes exceeds "
                                        f"max-message-bytes {self.options.max_message_bytes}")
        return Message(None, value, events)

    def _watermark_message(self, event: Watermark) -> Message:
        ts = event.resolved_ts
        if not 0 <= ts <= MASK64:
            raise EncodeError(PROTOCOL, f"resolved_ts {ts} is not a uint64")
        build_ts = self.clock()
        if self._avro:
            out = bytearray(MESSAGE_HEADS["WATERMARK"])
            write_long(out, u64_as_i64(ts))
            write_long(out, build_ts)
            value = bytes(out)
        else:
            value = f'{{"version":1,"type":"WATERMARK","commitTs":{ts},"buildTs":{build_ts}}}'.encode()
        # EncodeCheckpointEvent does not check the size.
        return self._finish(value, (event,), "WATERMARK", check=False)

    def _bootstrap_message(self, event: Bootstrap, build_ts: int | None = None) -> Message:
        # buildTs is time.Now() when encoding, whatever the event says.
        build_ts = self.clock() if build_ts is None else build_ts
        if self._avro:
            out = bytearray(MESSAGE_HEADS["BOOTSTRAP"])
            write_long(out, build_ts)
            avro_table_schema(out, event.table_info)
            value = bytes(out)
        else:
            schema = json_table_schema(event.table_info)
            value = self._utf8(f'{{"version":1,"type":"BOOTSTRAP","commitTs":0,"buildTs":{build_ts},'
                               f'"tableSchema":{schema}}}')
        return self._finish(value, (event,), "BOOTSTRAP")

    def _ddl_message(self, event: DDLEvent) -> Message:
        if not 0 <= event.commit_ts <= MASK64:
            raise EncodeError(PROTOCOL, f"commit_ts {event.commit_ts} is not a uint64")
        kind = ddl_message_type(event.ddl_type)
        build_ts = self.clock()
        if self._avro:
            out = bytearray(MESSAGE_HEADS["DDL"])
            out.append(DDL_TYPES.index(kind) << 1)
            write_str(out, event.query)
            write_long(out, u64_as_i64(event.commit_ts))
            write_long(out, build_ts)
            for table in (event.table_info, event.pre_table_info):
                if table is None:
                    out.append(0x00)
                else:
                    out.append(0x02)
                    avro_table_schema(out, table)
            value = bytes(out)
        else:
            parts = ['{"version":1,"type":"', kind, '"']
            if event.query:
                parts += [',"sql":', go_json_quote(event.query)]
            parts.append(f',"commitTs":{event.commit_ts},"buildTs":{build_ts}')
            if event.table_info is not None:
                parts += [',"tableSchema":', json_table_schema(event.table_info)]
            if event.pre_table_info is not None:
                parts += [',"preTableSchema":', json_table_schema(event.pre_table_info)]
            parts.append("}")
            value = self._utf8("".join(parts))
        return self._finish(value, (event,), "DDL")

    @staticmethod
    def _utf8(text: str) -> bytes:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(PROTOCOL, f"text is not valid Unicode: {exc}") from None

    @staticmethod
    def _table_of(row: RowChange) -> TableInfo:
        if row.table_info is None:
            raise EncodeError(PROTOCOL, f"row of {row.schema}.{row.table} has no table_info (Simple needs it)")
        return row.table_info

    def _images(self, row: RowChange) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
        op = row.op
        data = row.columns if op is not Op.DELETE else None
        old = row.pre_columns if op is not Op.INSERT else None
        if (op is not Op.DELETE and data is None) or (op is not Op.INSERT and old is None):
            raise EncodeError(PROTOCOL, f"{op.value} row of {row.schema}.{row.table} lacks a row image")
        return data, old

    def _key_only_delete(self, row: RowChange) -> bool:
        # delete-only-output-handle-key-columns: a DELETE keeps its handle-key columns, flagged handleKeyOnly
        # as a handle-key-only large message is, so a reader knows the image is not a full row.
        return row.op is Op.DELETE and self.options.delete_only_output_handle_key_columns

    def _json_writer(self, table: TableInfo) -> JsonRowWriter | None:
        """The generated row writer of ``table`` (``writer_json``), None where there is none."""
        entry: tuple[TableInfo | None, JsonRowWriter | None] | None = self._json_last
        if entry is None or entry[0] is not table:
            entry = self._json_writers.get(id(table))
            if entry is None or entry[0] is not table:
                if len(self._json_writers) > 256:
                    self._json_writers.clear()
                entry = self._json_writers[id(table)] = (
                    table, json_row_writer(table, self.options.delete_only_output_handle_key_columns))
            self._json_last = entry
        return entry[1]

    def _fast_json_message(self, row: RowChange) -> Message | None:
        """The row message through the table's generated writer (``writer_json``); None where it declines."""
        table = row.table_info
        if table is None:
            return None
        writer = self._json_writer(table)
        if writer is None:
            return None
        try:
            value = writer(row, self.clock(), self._location)
        except WRITER_DECLINES:
            return None
        if value is None:
            return None
        if self._compressed:
            value = compress(self.options.large_message_handle_compression, value)
        if len(value) > self._room:
            return None  # large-message handling: the reference way
        return Message(None, value, (row,))

    def _fast_avro_message(self, row: RowChange) -> Message | None:
        """The row message through the table's generated writer (``writer_avro``); None where it declines."""
        table = row.table_info
        if table is None:
            return None
        options = self.options
        writer = avro_row_writer(table, options.delete_only_output_handle_key_columns)
        if writer is None:
            return None
        try:
            value = writer(row, self.clock(), self._location_avro)
        except AVRO_WRITER_DECLINES:
            return None
        if value is None:
            return None
        if options.large_message_handle_compression != "none":
            value = compress(options.large_message_handle_compression, value)
        if len(value) + RECORD_OVERHEAD > options.max_message_bytes:
            return None  # large-message handling: the reference way
        return Message(None, value, (row,))

    def _row_message(self, row: RowChange, try_fast: bool = True) -> Message:
        if self._avro:
            message = self._fast_avro_message(row)
            if message is not None:
                return message
        if not self._avro and try_fast:
            message = self._fast_json_message(row)
            if message is not None:
                return message
        table = self._table_of(row)
        data, old = self._images(row)
        key_only = self._key_only_delete(row)
        value = compress(self.options.large_message_handle_compression,
                         self._dml(row, table, data, old, key_only, ""))
        limit = self.options.max_message_bytes
        if len(value) + RECORD_OVERHEAD <= limit:
            return Message(None, value, (row,))
        option = self.options.large_message_handle_option
        if option == "none":
            raise EncodeError(PROTOCOL, f"message of {len(value) + RECORD_OVERHEAD} bytes exceeds "
                                        f"max-message-bytes {limit}")
        location = ""
        if option == "claim-check":
            if self.claim_check is None:
                raise EncodeError(PROTOCOL, "claim-check needs a claim_check store")
            location = self.claim_check.put(None, value)  # the full (compressed) message, key nil
        value = compress(self.options.large_message_handle_compression,
                         self._dml(row, table, data, old, True, location))
        if len(value) + RECORD_OVERHEAD <= limit:
            return Message(None, value, (row,))
        raise EncodeError(PROTOCOL, f"message of {len(value) + RECORD_OVERHEAD} bytes still exceeds "
                                    f"max-message-bytes {limit} with handle-key columns only")

    def _dml(
        self, row: RowChange, table: TableInfo, data: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
        handle_only: bool, location: str,
    ) -> bytes:
        commit_ts, version = row.commit_ts, table.schema_version
        if not 0 <= commit_ts <= MASK64:
            raise EncodeError(PROTOCOL, f"commit_ts {commit_ts} is not a uint64")
        if not 0 <= version <= MASK64:
            raise EncodeError(PROTOCOL, f"schema_version {version} is not a uint64")
        # Reference §6.1: tableID is the physical (partition) table id.
        table_id = row.physical_table_id or row.table_id or table.table_id
        ordered, by_name = table_plan(table)
        plan = writers(table)
        if self._avro:
            return self._dml_avro(row, table, table_id, ordered, data, old, handle_only, location, plan)
        if plan is not None and not handle_only and not location:
            # The common message: the same members as below, from the table's precomputed parts.
            text = plan.json_head
            if table_id:
                text += f',"tableID":{table_id}'
            text += (f',"type":"{DML_TYPE_NAMES[row.op]}","commitTs":{commit_ts},"buildTs":{self.clock()}'
                     f'{plan.json_version}')
            if data is not None:
                body = self._json_body(plan, by_name, data)
                if body:  # omitempty drops an empty map
                    text += ',"data":{' + body + "}"
            if old is not None:
                body = self._json_body(plan, by_name, old)
                if body:
                    text += ',"old":{' + body + "}"
            return self._utf8(text + "}")
        parts = ['{"version":1']
        if table.schema:
            parts += [',"database":', go_json_quote(table.schema)]
        if table.table:
            parts += [',"table":', go_json_quote(table.table)]
        if table_id:
            parts.append(f',"tableID":{table_id}')
        parts.append(f',"type":"{DML_TYPE_NAMES[row.op]}","commitTs":{commit_ts},"buildTs":{self.clock()}')
        if version:
            parts.append(f',"schemaVersion":{version}')
        if location:
            parts += [',"claimCheckLocation":', go_json_quote(location)]
        if handle_only:
            parts.append(',"handleKeyOnly":true')
        for field, image in ((',"data":{', data), (',"old":{', old)):
            if image is not None:
                body = self._json_image(by_name, image, handle_only)
                if body:  # omitempty drops an empty map
                    parts += [field, body, "}"]
        parts.append("}")
        return self._utf8("".join(parts))

    def _json_body(self, fast: Writers, plan: list[ColumnPlan], image: Mapping[str, Any]) -> str:
        try:
            return fast.json_image(image, self._location_json)
        except DECLINES:  # a missing column, a float past float32: the reference way
            return self._json_image(plan, image, False)

    def _json_image(self, plan: list[ColumnPlan], image: Mapping[str, Any], handle_only: bool) -> str:
        items = []
        location = self._location_json
        for col in plan:
            name = col.name
            if name not in image or col.virtual or (handle_only and not col.handle):
                continue
            value = image[name]
            if value is None:
                items.append(col.json_key + "null")
            elif col.kind == V.KIND_INT and type(value) is int and col.low <= value <= col.high:
                items.append(f'{col.json_key}"{value}"')  # the common case, without the reference path
            else:
                value = V.normalize(value, col.column, col.kind, col.bounds)
                items.append(col.json_key + V.json_value(value, col.kind, col.binary, location))
        return ",".join(items)

    def _dml_avro(
        self, row: RowChange, table: TableInfo, table_id: int, plan: list[ColumnPlan], data: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None, handle_only: bool, location: str, fast: Writers | None,
    ) -> bytes:
        out = bytearray(MESSAGE_HEADS["DML"])
        if fast is None:
            write_str(out, table.schema)
            write_str(out, table.table)
        else:
            out += fast.avro_head
        write_long(out, table_id)
        out.append(DML_TYPES.index(DML_TYPE_NAMES[row.op]) << 1)
        write_long(out, u64_as_i64(row.commit_ts))
        write_long(out, self.clock())
        if fast is None:
            write_long(out, u64_as_i64(table.schema_version))
        else:
            out += fast.avro_version
        option = self.options.large_message_handle_option
        if option == "claim-check" and location:
            out.append(0x02)
            write_str(out, location)
        else:
            out.append(0x00)
        out += b"\x02\x01" if handle_only else b"\x00"
        out.append(0x00)  # checksum: row checksums are not part of the model
        for image in (data, old):
            if image is None:
                out.append(0x00)
                continue
            out.append(0x02)
            if fast is not None and not handle_only:
                mark = len(out)
                try:
                    fast.avro_image(out, image, self._location_avro)
                    continue
                except DECLINES:  # a missing column, a float past float32: the reference way
                    del out[mark:]
            self._avro_image(out, plan, image, handle_only)
        return bytes(out)

    def _avro_image(self, out: bytearray, plan: list[ColumnPlan], image: Mapping[str, Any], handle_only: bool) -> None:
        # goavro writes a map as one block (count, entries, 0); entries here follow table order.
        entries = bytearray()
        count = 0
        location = self._location_avro
        for col in plan:
            if col.name not in image or col.virtual or (handle_only and not col.handle):
                continue
            count += 1
            entries += col.avro_key
            V.avro_value(entries, col, image[col.name], location)
        if count:
            write_long(out, count)
            out += entries
        out.append(0x00)

    # ---- projection
    def _project_row(self, row: RowChange, encoding: str) -> RowChange:
        table = self._table_of(row)
        data, old = self._images(row)
        handle_only = self._key_only_delete(row)
        value = compress(self.options.large_message_handle_compression,
                         self._dml(row, table, data, old, handle_only, ""))
        option = self.options.large_message_handle_option
        if len(value) + RECORD_OVERHEAD > self.options.max_message_bytes:
            if option == "none":
                raise EncodeError(PROTOCOL, "message exceeds max-message-bytes")
            handle_only = handle_only or option == "handle-key-only"
        ordered, _ = table_plan(table)
        projected = project_table(table, encoding)

        def image(values: Mapping[str, Any] | None) -> Row | None:
            if values is None:
                return None
            return Row({
                col.name: V.project_value(V.normalize(values[col.name], col.column, col.kind, col.bounds), col.kind,
                                          col.binary, encoding)
                for col in ordered
                if col.name in values and not col.virtual and not (handle_only and not col.handle)
            })

        return RowChange(
            op=row.op, schema=table.schema, table=table.table, commit_ts=row.commit_ts, columns=image(data),
            pre_columns=image(old), table_id=projected.table_id,
            physical_table_id=row.physical_table_id or row.table_id or table.table_id, table_info=projected,
            handle_key_only=handle_only, schema_version=table.schema_version,
        )


def _split_options(options: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {n: options.pop(n) for n in names if n in options}


def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode ``events`` with a one-shot Encoder (``clock``, ``claim_check``, ``auto_bootstrap`` accepted)."""
    extra = _split_options(options, ("clock", "claim_check", "auto_bootstrap", "bootstrap_policy", "partition"))
    return Encoder(options, **extra).encode(events)

