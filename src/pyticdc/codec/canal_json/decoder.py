"""The Canal-JSON decoder: rows, DDL and watermarks, in any key order (legacy messages included).

Where the wire loses information:

* ``commit_ts`` is exact only with ``enable-tidb-extension`` (``_tidb.commitTs``, or the 2021 dev
  build's ``commit-ts``), which then always wins over ``es``; otherwise it is ``es << 18``, i.e. the
  commit TSO with its 18 logical bits cleared (for Alibaba Canal: the binlog time, TSO-shaped).
* DDL messages carry Canal's event type, not TiDB's ActionType; ``ddl_type`` is a plausible
  ActionType recovered from the Canal type and the query (see ``message.ddl_action_type``).
* The decoded ``table_info`` is rebuilt from ``mysqlType``/``pkNames`` and holds only the columns
  the message carries; table ids and row ids are not on the wire (0).
* ``_tidb`` is honoured whenever present (TiCDC's decoder reads it only when the extension is on).
* A value may hold several newline-terminated messages (TiCDC storage-sink files): each is decoded.
* Official Canal batches (several rows in ``data``/``old``) decode to one RowChange per row.
* A DELETE whose image holds primary-key columns only is flagged ``handle_key_only`` (that is what
  ``delete-only-output-handle-key-columns`` sends; the wire does not say so otherwise).
* Other producers (docs/protocols/canal-json.md, "Tolerances"): either field order, ``INIT`` rows
  (inserts), MySQL type aliases and upper case in ``mysqlType`` (``INTEGER``, ``BOOLEAN``,
  ``DOUBLE PRECISION``, ``POINT``…), typed JSON numbers/booleans in numeric columns, DDL queries
  behind SQL comments; a non-TiCDC message whose values do not fit its ``mysqlType`` is re-typed
  column by column (``tolerant``).
* Large messages (§8): ``_tidb.onlyHandleKey`` rows come back ``handle_key_only``; a
  ``claimCheckLocation`` is resolved through the decoder's ``claim_check`` store when it has one
  (else the handle-key row is returned with ``claim_check_location`` set).

Row images are read by the fast path (``fastpath``) and, when it declines, by the reference path
here, which alone reports errors; ``Decoder.decode_reference`` uses the reference path only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

import msgspec

from pyticdc.codec._fastpath import DECLINES
from pyticdc.codec.base import BaseDecoder
from pyticdc.codec.canal_json.fastpath import FastPath
from pyticdc.codec.canal_json.message import (
    ENVELOPE_DECODER,
    MSGSPEC_ERRORS,
    OPTIONS,
    PROTOCOL,
    UINT64_MAX,
    WATERMARK_TYPE,
    Envelope,
    Images,
    ddl_action_type,
    decode_error,
    key_only_delete,
    msgspec_error,
    read_header,
    read_images,
    read_mysql_types,
    read_pk_names,
)
from pyticdc.codec.canal_json.tolerant import ForeignTypes
from pyticdc.codec.canal_json.values import parse_value
from pyticdc.codec.compression import decompress
from pyticdc.codec.options import default_table
from pyticdc.errors import DecodeError
from pyticdc.model import DDLEvent, Event, Op, Row, RowChange, Value, Watermark

__all__ = ["Decoder", "decode"]

#: Reads the images of one row message (the speculating or the reference reader).
ImagesReader = Callable[[Envelope, Op], Images]

_INSERT: Final = Op.INSERT
_UPDATE: Final = Op.UPDATE
_DELETE: Final = Op.DELETE
# INIT: Alibaba Canal's snapshot (initial load) rows, which are inserts (Flink reads them so too).
_ROW_OPS: Final = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "INIT": Op.INSERT}


class Decoder(BaseDecoder):
    """Canal-JSON decoder: rows, DDL and watermarks, in any key order (legacy messages included)."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(self, options: Any = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        content_compatible = self.options.content_compatible
        self._fast = FastPath(content_compatible)
        self._foreign = ForeignTypes(content_compatible)
        self._compression = self.options.large_message_handle_compression
        self._compressed = self._compression != "none"
        self._delete_handle_key_only = self.options.delete_only_output_handle_key_columns
        self._resolving = False
        self._default_table = default_table(self.options)

    # ------------------------------------------------------------------ entry
    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one Kafka value (several newline-terminated messages allowed); DecodeError on bad input."""
        # The common message (one uncompressed row message naming its table, no large-message
        # handling) skips the general path's calls, which dominate on a narrow table; anything
        # else, a decline included, goes the general way, which alone reports errors.
        if type(value) is not bytes or self._compressed:
            return self._decode(value, self._speculative_images)
        try:
            envelope = ENVELOPE_DECODER.decode(value)
        except MSGSPEC_ERRORS:
            return self._decode(value, self._speculative_images)
        tidb = envelope.tidb
        op = _ROW_OPS.get(envelope.type or "")
        table = envelope.table
        if op is None or envelope.isDdl or not table:
            return self._decode_envelope(envelope, self._speculative_images)
        if tidb is None:
            commit_ts = (envelope.es or 0) << 18
        elif tidb.onlyHandleKey or tidb.claimCheckLocation:
            return self._decode_envelope(envelope, self._speculative_images)
        else:
            commit_ts = tidb.commitTs or tidb.commit_ts_dev or (envelope.es or 0) << 18
        if commit_ts < 0 or commit_ts > UINT64_MAX:
            return self._decode_envelope(envelope, self._speculative_images)
        try:
            return self._fast.changes(envelope, op, table, commit_ts, self._delete_handle_key_only)
        except DECLINES:
            return self._decode_envelope(envelope, self._speculative_images)

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """``decode`` on the reference path only (no typed fast path, no header caches)."""
        return self._decode(value, self._reference_images)

    def _decode(self, value: bytes | None, read: ImagesReader) -> list[Event]:
        if not value:
            return []
        data = value if type(value) is bytes else bytes(value)
        if self._compression != "none":
            data = decompress(self._compression, data, PROTOCOL, self.options.max_message_bytes)
        try:
            envelope = ENVELOPE_DECODER.decode(data)
        except MSGSPEC_ERRORS as exc:
            if b"\n" in data:
                return self._decode_lines(data, read)
            raise msgspec_error(exc, "$", data) from None
        return self._decode_envelope(envelope, read)

    def _decode_lines(self, data: bytes, read: ImagesReader) -> list[Event]:
        # Storage-sink files terminate each message with "\n" or "\r\n" (the decoder's Terminator).
        events: list[Event] = []
        offset = 0
        for line in data.split(b"\n"):
            if line.strip():
                try:
                    envelope = ENVELOPE_DECODER.decode(line)
                except MSGSPEC_ERRORS as exc:
                    error = msgspec_error(exc, "$", line)
                    at = offset + error.at if isinstance(error.at, int) else error.at
                    raise decode_error(error.reason, at) from None
                events.extend(self._decode_envelope(envelope, read))
            offset += len(line) + 1
        return events

    def _decode_envelope(self, envelope: Envelope, read: ImagesReader) -> list[Event]:
        tidb = envelope.tidb
        if tidb is not None and (tidb.commitTs or tidb.commit_ts_dev):
            # _tidb wins over "es" whenever present: es is not always commitTs >> 18 (real/README §6).
            commit_ts = tidb.commitTs or tidb.commit_ts_dev
            if commit_ts < 0 or commit_ts > UINT64_MAX:
                raise decode_error(f"commitTs {commit_ts} out of range", "$._tidb.commitTs")
        else:
            # Without the extension only "es" (commitTs >> 18, milliseconds) is on the wire; for
            # Alibaba Canal es is the binlog event time in ms, so this is a TSO-shaped time too.
            commit_ts = (envelope.es or 0) << 18
            if commit_ts < 0 or commit_ts > UINT64_MAX:
                raise decode_error(f"es {envelope.es} out of range", "$.es")
        if envelope.isDdl:
            query = envelope.sql or ""
            return [DDLEvent(query=query, ddl_type=ddl_action_type(envelope.type or "", query), commit_ts=commit_ts,
                             schema=envelope.database or "", table=envelope.table or "")]
        if envelope.type == WATERMARK_TYPE:
            if tidb is None:
                raise decode_error("TIDB_WATERMARK message without _tidb", "$")
            watermark = tidb.watermarkTs or tidb.watermark_ts_dev
            if watermark < 0 or watermark > UINT64_MAX:
                raise decode_error("watermarkTs out of range", "$._tidb.watermarkTs")
            return [Watermark(resolved_ts=watermark)]
        if (tidb is not None and tidb.claimCheckLocation and not tidb.onlyHandleKey and self.claim_check is not None
                and not self._resolving):
            return self._claim_check(tidb.claimCheckLocation, read)
        return self._decode_rows(envelope, commit_ts, read)

    def _claim_check(self, location: str, read: ImagesReader) -> list[Event]:
        # assembleClaimCheckRowChangedEvent: the stored value is the original (compressed) message.
        assert self.claim_check is not None
        try:
            _, stored = self.claim_check.get(location)
        except DecodeError as exc:
            raise decode_error(f"claim-check location {location!r}: {exc.reason}",
                               "$._tidb.claimCheckLocation") from None
        # The stored message is a full one; a location inside it is not followed again.
        self._resolving = True
        try:
            events = self._decode(stored, read)
        finally:
            self._resolving = False
        if not events or not all(isinstance(e, RowChange) for e in events):
            raise decode_error(f"claim-check message at {location} is not a row message",
                               "$._tidb.claimCheckLocation")
        return [msgspec.structs.replace(e, claim_check_location=location) for e in cast(list[RowChange], events)]

    # ------------------------------------------------------------------ rows
    def _speculative_images(self, envelope: Envelope, op: Op) -> Images:
        # speculate() inlined: this runs once per row message.
        try:
            return self._fast.images(envelope, op)
        except DECLINES:
            return self._reference_images(envelope, op)

    def _reference_images(self, envelope: Envelope, op: Op) -> Images:
        """The images of a row message read by the Go-exact conversions (the reference path)."""
        header = read_header(envelope, read_mysql_types(envelope), read_pk_names(envelope),
                             self.options.content_compatible)
        try:
            data = _reference_rows(header.kinds, envelope.data, "$.data")
            old = _reference_rows(header.kinds, envelope.old, "$.old") if op is _UPDATE else None
        except DecodeError:
            # TiCDC (id 0 or _tidb) stays strict; other producers get their types re-derived.
            if envelope.tidb is not None or envelope.id == 0:
                raise
            return self._foreign.images(envelope, op)
        return (header.table_info, frozenset(header.table_info.primary_key_columns), data, old)

    def _decode_rows(self, envelope: Envelope, commit_ts: int, read: ImagesReader) -> list[Event]:
        kind = envelope.type
        op = _ROW_OPS.get(kind or "")
        if op is None:
            raise decode_error(f"unknown row message type {kind!r}", "$.type")
        schema = envelope.database or ""
        table = envelope.table or ""
        table_info, pk_set, data, old = read(envelope, op)
        if not table:
            # Flink's encoder names no table: a row of table "" would be a guess, so the user names it.
            if self._default_table is None:
                raise decode_error("the message names no table; give the decoder option "
                                   "default-table=SCHEMA.TABLE if it is one table's row", "$.table")
            schema, table = self._default_table
            table_info = msgspec.structs.replace(table_info, schema=schema, table=table)
        if not data:
            raise decode_error(f"{kind} message without data", "$.data")
        tidb = envelope.tidb
        handle_key_only = False
        location = None
        if tidb is not None:
            handle_key_only = tidb.onlyHandleKey or bool(tidb.claimCheckLocation)
            location = tidb.claimCheckLocation or None
        changes: list[Event] = []
        if op is _INSERT:
            for row in data:
                changes.append(RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, columns=row,
                                         table_info=table_info, handle_key_only=handle_key_only,
                                         claim_check_location=location))
            return changes
        if op is _DELETE:
            handle_key_only = handle_key_only or self._delete_handle_key_only
            for row in data:
                changes.append(RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, pre_columns=row,
                                         table_info=table_info,
                                         handle_key_only=handle_key_only or key_only_delete(row, pk_set),
                                         claim_check_location=location))
            return changes
        if old is not None and len(old) != len(data):
            raise decode_error(f"{len(old)} old images for {len(data)} data images", "$.old")
        for i, row in enumerate(data):
            pre = old[i] if old is not None else None
            # canalJSONMessage2RowChange: columns missing from "old" (only-output-updated-columns)
            # are unchanged, so the pre-image is the post-image overlaid with "old".
            if pre is None or len(pre) < len(row):
                merged = Row(row)
                if pre:
                    dict.update(merged, pre)
                pre = merged
            elif type(pre) is not Row:
                pre = Row(pre)
            changes.append(RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, columns=row,
                                     pre_columns=pre, table_info=table_info, handle_key_only=handle_key_only,
                                     claim_check_location=location))
        return changes


def _reference_rows(kinds: dict[str, int], raw: msgspec.Raw, path: str) -> list[Row] | None:
    """``data`` or ``old`` converted value by value; DecodeError names the column of a bad value."""
    images = read_images(raw, path)
    if images is None:
        return None
    rows = []
    for i, image in enumerate(images):
        row: dict[str, Value] = {}
        for name, raw_value in image.items():
            at = f"{path}[{i}].{name}"
            kind = kinds.get(name)
            if kind is None:
                raise decode_error(f"column {name!r} has no mysqlType", at)
            row[name] = parse_value(kind, raw_value, at)
        rows.append(Row(row))
    return rows


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one Kafka message with a one-shot Decoder."""
    return Decoder(options).decode(value, key)
