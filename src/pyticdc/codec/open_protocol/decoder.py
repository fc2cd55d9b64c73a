"""The Open Protocol decoder: one Kafka key/value into its row, DDL or resolved events.

Decoding follows ``open_protocol_decoder.go`` but is stricter where Go would panic or misread:
every length prefix must fit, keys and values must pair up, and every column value must have
the JSON type its column type implies. Bad bytes raise only ``DecodeError("open-protocol", …)``.
What older TiCDC encoders wrote is read too (``tolerant``). Row messages of tables already seen
take the typed readers of ``fastpath`` first; whatever they decline is decoded here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

from pyticdc.codec._fastpath import DECLINES
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.codec.compression import decompress
from pyticdc.codec.open_protocol.fastpath import FastPath
from pyticdc.codec.open_protocol.message import (
    BINARY,
    DDL_DECODER,
    MAX_U64,
    MESSAGE_TYPE_DDL,
    MESSAGE_TYPE_RESOLVED,
    MESSAGE_TYPE_ROW,
    OPTIONS,
    PROTOCOL,
    ROW_DECODER,
    UNSIGNED,
    Frame,
    WireColumn,
    WireDDL,
    WireKey,
    WireRow,
    as_bytes,
    fail,
    frames,
    key_frames,
    only_handle_keys,
    op_of,
    read_json,
    read_key,
    table_info,
)
from pyticdc.codec.open_protocol.tolerant import keep_text, keeps_text, legacy_flags
from pyticdc.codec.open_protocol.values import BadValue, value_reader
from pyticdc.errors import DecodeError
from pyticdc.model import DDLEvent, Event, Op, Row, RowChange, Value, Watermark

__all__ = ["Decoder", "decode"]

#: The flag bits that choose a value reader (binary strings, signedness).
_SIGN_BITS: Final = BINARY | UNSIGNED
_VALUE_DECODERS: dict[tuple[int, int, bool], Callable[[Any], Value]] = {}


def _value_decoder(type_code: int, flags: int, legacy: bool) -> Callable[[Any], Value]:
    # Legacy messages carry no flags, so their integers may have either sign.
    decoder = value_reader(type_code, flags, either_sign=legacy)
    if keeps_text(type_code, flags):
        decoder = keep_text(decoder)
    _VALUE_DECODERS[(type_code, flags & _SIGN_BITS, legacy)] = decoder
    return decoder


def _decode_image(columns: dict[str, WireColumn] | None, path: str,
                  shape: list[tuple[str, int, int]]) -> Row | None:
    if not columns:
        return None
    values: dict[str, Value] = {}
    decoders = _VALUE_DECODERS
    for name, column in columns.items():
        flags = column.f
        type_code = column.t
        legacy = flags is None
        if flags is None:
            flags = legacy_flags(column.h)
        elif not 0 <= flags <= MAX_U64:
            fail(f"flag {flags} is not a uint64", f"{path}.{name}.f")
        value = column.v
        if value is not None:
            decoder = decoders.get((type_code, flags & _SIGN_BITS, legacy)) or _value_decoder(
                type_code, flags, legacy)
            try:
                value = decoder(value)
            except BadValue as exc:
                fail(f"column type {type_code}: {exc}", f"{path}.{name}.v")
        values[name] = value
        shape.append((name, type_code, flags))
    return Row(values)


class _Parsed(NamedTuple):
    """One decoded event of a message and where it sat."""

    position: int
    key: WireKey
    key_frame: Frame
    value_frame: Frame | None


class Decoder(BaseDecoder):
    """Open Protocol decoder: one Kafka key/value into its row, DDL or resolved events."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def _value_bytes(self, frame: Frame, what: str) -> bytes:
        try:
            return decompress(self.options.large_message_handle_compression, frame.data, PROTOCOL,
                              self.options.max_message_bytes)
        except DecodeError as exc:
            fail(f"{what}: {exc.reason}", frame.offset + 8)

    def _pairs(self, key: bytes | None, value: bytes | None) -> list[_Parsed]:
        """Pair key frames with value frames in order, the way the 2020 ``JSONEventBatchDecoder`` did.

        Any number of events of any type (docs/protocols/open-protocol.md, Tolerances): current
        TiCDC sends one DDL or resolved event per message, but the 2020 encoder batched several
        of them, and a version-only key with an empty value is an empty batch.
        """
        keys = key_frames(key)
        values = frames(value, 0, "value") if value else []
        parsed: list[_Parsed] = []
        next_value = 0
        for index, frame in enumerate(keys):
            wire = read_key(frame.data, f"key of event {index}")
            if wire.t == MESSAGE_TYPE_RESOLVED:
                # The encoder writes a zero length as the resolved value (8 zero bytes, once per
                # event when batched); the docs print it empty, so a missing one is accepted too.
                # A non-empty frame here would be another event's value: the bytes disagree.
                if next_value < len(values):
                    if values[next_value].data:
                        fail(f"key of event {index}: a resolved event's value must be empty, got "
                             f"{len(values[next_value].data)} bytes", frame.offset)
                    next_value += 1
                parsed.append(_Parsed(index, wire, frame, None))
                continue
            if wire.t not in (MESSAGE_TYPE_ROW, MESSAGE_TYPE_DDL):
                fail(f"key of event {index}: unknown message type {wire.t}", "$.t")
            if next_value >= len(values):
                fail(f"value: missing the value of event {index}", len(value or b""))
            parsed.append(_Parsed(index, wire, frame, values[next_value]))
            next_value += 1
        if next_value < len(values):
            fail(f"value: {len(values) - next_value} value(s) without a key", values[next_value].offset)
        return parsed

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Compressed values take the reference path (the fast path reads plain JSON only).
        self._fast = FastPath() if self.options.large_message_handle_compression == "none" else None

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one Kafka message into its events (row messages of known tables on the fast path)."""
        fast = self._fast
        if fast is None or value is None or key is None:
            return self.decode_reference(value, key)
        key, value = bytes(key), bytes(value)
        try:
            events = fast.decode(key, value)
        except DECLINES:
            events = None
        if events is None:
            events = self.decode_reference(value, key)
            fast.learn(events)
        return events

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one Kafka message on the reference path alone (no fast-path readers): the oracle of ``decode``."""
        key, value = as_bytes(key), as_bytes(value)
        events: list[Event] = []
        for item in self._pairs(key, value):
            wire = item.key
            if wire.t == MESSAGE_TYPE_RESOLVED:
                events.append(Watermark(resolved_ts=wire.ts))
                continue
            assert item.value_frame is not None
            what = f"value of event {item.position}"
            data = self._value_bytes(item.value_frame, what)
            if wire.t == MESSAGE_TYPE_DDL:
                ddl: WireDDL = read_json(DDL_DECODER, data, what)
                events.append(DDLEvent(query=ddl.q, ddl_type=ddl.t, commit_ts=wire.ts, schema=wire.scm,
                                       table=wire.tbl))
                continue
            if wire.ccl and self.claim_check is not None:
                events.append(self._from_claim_check(wire.ccl, what))
                continue
            events.append(self._row(wire, read_json(ROW_DECODER, data, what), what))
        return events

    def _row(self, wire: WireKey, row: WireRow, what: str) -> RowChange:
        shape: list[tuple[str, int, int]] = []
        delete_shape: list[tuple[str, int, int]] = []
        try:
            u = _decode_image(row.u, "$.u", shape)
            p = _decode_image(row.p, "$.p", shape)
            d = _decode_image(row.d, "$.d", delete_shape)
        except DecodeError as exc:
            fail(f"{what}: {exc.reason}", exc.at)
        if d is not None:
            shape = delete_shape  # msgToRowChange builds the table from "d" alone when it is there
        op = op_of(u is not None, p is not None, d is not None)
        columns: Row | None
        pre_columns: Row | None
        if d is not None:
            columns, pre_columns = None, d
        elif u is None and p is not None:
            columns, pre_columns = None, p
        else:
            columns, pre_columns = (u if u is not None else Row()), p
        return RowChange(
            op=op, schema=wire.scm, table=wire.tbl, commit_ts=wire.ts, columns=columns, pre_columns=pre_columns,
            physical_table_id=wire.ptn or 0, row_id=wire.rid,
            table_info=table_info(wire.scm, wire.tbl, wire.ptn is not None, tuple(shape)),
            handle_key_only=wire.ohk or bool(wire.ccl) or (op is Op.DELETE and only_handle_keys(shape)),
            claim_check_location=wire.ccl or None,
        )

    def _from_claim_check(self, location: str, what: str) -> RowChange:
        """Read the full message claim-check stored and decode it (§8)."""
        assert self.claim_check is not None
        stored_key, stored_value = self.claim_check.get(location)
        where = f"{what} (claim-check {location})"
        keys = key_frames(as_bytes(stored_key))
        values = frames(bytes(stored_value), 0, f"{where} value")
        if len(keys) != 1 or len(values) != 1:
            fail(f"{where}: expected one stored event, got {len(keys)} key(s) and {len(values)} value(s)")
        wire = read_key(keys[0].data, f"{where} key")
        if wire.t != MESSAGE_TYPE_ROW or wire.ccl:
            fail(f"{where}: the stored message is not a full row event")
        data = self._value_bytes(values[0], where)
        return self._row(wire, read_json(ROW_DECODER, data, where), where)


def decode(value: bytes | None, key: bytes | None = None, *, claim_check: ClaimCheckStore | None = None,
           **options: Any) -> list[Event]:
    """Decode one Kafka message with a one-shot Decoder."""
    return Decoder(options, claim_check=claim_check).decode(value, key)
