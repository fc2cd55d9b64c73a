"""The Open Protocol encoder: rows batched per §2.4, one message per DDL or resolved event."""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

from pyticdc.codec._fastpath import DECLINES, Decline, compile_function, literal
from pyticdc.codec.base import BaseEncoder, ClaimCheckStore, Message
from pyticdc.codec.compression import compress
from pyticdc.codec.jsontext import go_json_quote, go_json_quote_bytes
from pyticdc.codec.open_protocol.message import (
    HANDLE,
    LENGTH_PREFIXES,
    MESSAGE_TYPE_DDL,
    MESSAGE_TYPE_RESOLVED,
    MESSAGE_TYPE_ROW,
    OPTIONS,
    PROTOCOL,
    RECORD_OVERHEAD,
    SINGLE_FRAMING,
    U64,
    VERSION_HEAD,
    ZERO_LENGTH,
    encode_error,
    frame_single,
    key_json,
    only_handle_keys,
    op_of,
    table_info,
    utf8,
)
from pyticdc.codec.open_protocol.values import BadValue, Kind, _r_blob, _r_char, clean_text, kind_of
from pyticdc.codec.open_protocol.writer import WRITER_DECLINES, RowWriter, row_writer
from pyticdc.errors import ConfigError
from pyticdc.model import Bootstrap, DDLEvent, Event, Op, Row, RowChange, TableInfo, Value, Watermark

__all__ = ["Encoder", "encode"]


class _Col(NamedTuple):
    """One column of a table as the encoder writes it."""

    name: str
    type_code: int
    flags: int
    kind: Kind
    handle: bool
    #: ``"name":{"t":T[,"h":true],"f":F,"v":`` — everything before the value.
    prefix: str
    #: The name as it reads back (lone surrogates → U+FFFD).
    wire_name: str


class _Plan(NamedTuple):
    """A table's columns in Go map-key order (UTF-8 bytes), cached on the TableInfo."""

    ordered: tuple[_Col, ...]
    by_name: dict[str, _Col]


_PLAN_ATTR: Final = "_pyticdc_open_plan"


def _plan(table: TableInfo) -> _Plan:
    cached = table.__dict__.get(_PLAN_ATTR)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    columns = []
    for column in table.columns:
        if column.virtual:
            continue  # virtual generated columns never reach the codec (mounter skips them)
        handle = bool(column.flags & HANDLE)
        handle_part = '"h":true,' if handle else ""
        prefix = f'{go_json_quote(column.name)}:{{"t":{column.type_code},{handle_part}"f":{column.flags},"v":'
        columns.append(_Col(column.name, column.type_code, column.flags, kind_of(column.type_code, column.flags),
                            handle, prefix, clean_text(column.name)))
    # encoding/json sorts map keys by bytes; code point order is UTF-8 byte order.
    ordered = tuple(sorted(columns, key=lambda c: c.name))
    plan = _Plan(ordered, {c.name: c for c in ordered})
    table.__dict__[_PLAN_ATTR] = plan  # frozen Struct: cache beside cached_property values
    return plan


_Image = list[tuple[_Col, Value]]
_MISSING: Final = object()


def _select(plan: _Plan, row: Mapping[str, Value] | None, handle_only: bool) -> _Image:
    """``rowChangeColumns2CodecColumns``: the (coerced) columns of one image, in key order."""
    if not row:
        return []
    image: _Image = []
    seen = 0
    get = row.get
    for col in plan.ordered:
        value = get(col.name, _MISSING)
        if value is _MISSING:
            continue
        seen += 1
        if handle_only and not col.handle:
            continue
        if value is not None:
            try:
                value = col.kind.coerce(value)
            except BadValue:
                encode_error(f"column {col.name!r} (type {col.type_code}): unsupported value {value!r}")
        image.append((col, value))
    if seen != len(row):
        unknown = sorted(name for name in row if name not in plan.by_name)
        encode_error(f"columns {unknown} are not in the table_info of the row")
    return image


def _render_image(image: _Image) -> str:
    return "{" + ",".join([col.prefix + ("null" if v is None else col.kind.render(v)) + "}"
                           for col, v in image]) + "}"


# ---------------------------------------------------------------- the generated image writer
#: Renders a full image (every column of the table, nothing else) as ``_render_image`` does; raises
#: one of ``DECLINES`` for anything else (a missing or extra column, a value its kind refuses).
_ImageWriter = Callable[[Mapping[str, Value]], str]
_WRITER_ATTR: Final = "_pyticdc_open_writer"


def _general(kind: Kind) -> Callable[[Value], str]:
    """A column's reference rendering; a value it refuses declines (the reference path says why)."""
    coerce, render = kind.coerce, kind.render

    def general(value: Value) -> str:
        try:
            return render(coerce(value))
        except BadValue:
            raise Decline from None
    return general


def _writer_source(plan: _Plan, namespace: dict[str, Any]) -> str:
    """Straight-line code for ``_render_image(_select(plan, image, False))`` of a full image."""
    lines = ["def write(image):", f"    if len(image) != {len(plan.ordered)}: raise Decline"]
    for i, col in enumerate(plan.ordered):
        namespace[f"g{i}"] = _general(col.kind)
        render = col.kind.render
        if render is str:  # the integer kinds
            fast = f"str(v) if type(v) is int else g{i}(v)"
        elif render is go_json_quote:
            fast = f"quote(v) if type(v) is str else g{i}(v)"
        elif render is _r_char:
            fast = f"quote_bytes(v) if type(v) is bytes else g{i}(v)"
        elif render is _r_blob:
            fast = f"'\"' + b64(v, newline=False).decode('ascii') + '\"' if type(v) is bytes else g{i}(v)"
        else:
            fast = f"g{i}(v)"
        lines += [f"    v = image[{literal(col.name)}]", f"    p{i} = 'null' if v is None else {fast}"]
    template = "{" + ",".join(col.prefix.replace("%", "%%") + "%s}" for col in plan.ordered) + "}"
    namespace["TEMPLATE"] = template
    lines.append("    return TEMPLATE % (" + "".join(f"p{i}, " for i in range(len(plan.ordered))) + ")")
    return "\n".join(lines)


def _writer(table: TableInfo) -> _ImageWriter | None:
    """The generated image writer of a table (cached on it); None for a table without columns."""
    cache = table.__dict__
    writer: _ImageWriter | None
    try:
        writer = cache[_WRITER_ATTR]
    except KeyError:
        plan = _plan(table)
        writer = None
        if plan.ordered and len(plan.by_name) == len(plan.ordered):
            namespace: dict[str, Any] = {"Decline": Decline, "quote": go_json_quote,
                                         "quote_bytes": go_json_quote_bytes, "b64": binascii.b2a_base64}
            writer = compile_function(_writer_source(plan, namespace), "write", namespace)
        cache[_WRITER_ATTR] = writer
    return writer


def _render_row(u: _Image, p: _Image, d: _Image) -> bytes:
    """The ``messageRow`` JSON: ``u``, ``p``, ``d`` in struct order, empty maps omitted."""
    parts = []
    if u:
        parts.append('"u":' + _render_image(u))
    if p:
        parts.append('"p":' + _render_image(p))
    if d:
        parts.append('"d":' + _render_image(d))
    return utf8("{" + ",".join(parts) + "}")


class _Prepared(NamedTuple):
    """A row encoded in full, and how the size rule says it must be sent."""

    key: bytes
    value: bytes
    #: "full", "handle-key-only" or "claim-check".
    mode: str


class Encoder(BaseEncoder):
    """Open Protocol encoder: batches rows per §2.4, one message per DDL or resolved event."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def _validate(self) -> None:
        options = self.options
        #: id(TableInfo) → (the TableInfo, its generated row writer for these options, if any).
        self._writers: dict[int, tuple[TableInfo, RowWriter | None]] = {}
        if options.claim_check_raw_value:
            raise ConfigError(f"{PROTOCOL}: claim-check-raw-value is not supported by the open protocol (§8)")
        if options.large_message_handle_option == "claim-check" and self.claim_check is None:
            raise ConfigError(f"{PROTOCOL}: large-message-handle-option=claim-check needs a claim_check store")

    # ---------------------------------------------------------------- rows
    def _images(self, event: RowChange, handle_only: bool) -> tuple[_Image, _Image, _Image]:
        """``rowChangeToMsg``: the u/p/d images and its handle-key errors (§2.3, §8)."""
        if event.table_info is None:
            encode_error(f"row of {event.schema}.{event.table} has no table_info (column types are required)")
        plan = _plan(event.table_info)
        options = self.options
        if event.op is Op.DELETE:
            only = options.delete_only_output_handle_key_columns or handle_only
            d = _select(plan, event.pre_columns, only)
            if only and not d:
                encode_error("not found handle key columns for the delete event")
            return [], [], d
        if event.op is Op.UPDATE:
            u = _select(plan, event.columns, handle_only)
            p = _select(plan, event.pre_columns, handle_only) if options.open_output_old_value else []
            # TiCDC's check reads `len(p) == 0 && !OpenOutputOldValue`: a handle-key-only update
            # with output-old-value off always fails there, and so it does here.
            if handle_only and (not u or (not p and not options.open_output_old_value)):
                encode_error("not found handle key columns for the update event")
            if options.only_output_updated_columns and p:
                post = {col.name: value for col, value in u}
                p = [(col, value) for col, value in p
                     if col.name not in post or not _same(post[col.name], value)]
            return u, p, []
        u = _select(plan, event.columns, handle_only)
        if handle_only and not u:
            encode_error("not found handle key columns for the insert event")
        return u, [], []

    def _row_key(self, event: RowChange, only_handle_key: bool = False, location: str = "") -> bytes:
        info = event.table_info
        partition = event.physical_table_id if info is not None and info.is_partition else None
        return key_json(event.commit_ts, event.schema, event.table, event.row_id, partition, MESSAGE_TYPE_ROW,
                         only_handle_key, location)

    def _value(self, images: tuple[_Image, _Image, _Image]) -> bytes:
        return compress(self.options.large_message_handle_compression, _render_row(*images))

    def _too_large(self, key: bytes, value: bytes) -> bool:
        return len(key) + len(value) + RECORD_OVERHEAD + SINGLE_FRAMING > self.options.max_message_bytes

    def _fast_value(self, event: RowChange) -> bytes | None:
        """``_value(_images(event, False))`` through the table's generated writer; None where it declines."""
        info = event.table_info
        options = self.options
        if info is None or options.only_output_updated_columns:
            return None
        write = _writer(info)
        if write is None:
            return None
        op = event.op
        try:
            if op is Op.INSERT:
                if not event.columns:
                    return None
                text = '{"u":' + write(event.columns) + "}"
            elif op is Op.DELETE:
                if not event.pre_columns or options.delete_only_output_handle_key_columns:
                    return None
                text = '{"d":' + write(event.pre_columns) + "}"
            else:
                if not event.columns:
                    return None
                text = '{"u":' + write(event.columns)
                if options.open_output_old_value:
                    if not event.pre_columns:
                        return None
                    text += ',"p":' + write(event.pre_columns)
                text += "}"
        except DECLINES:
            return None
        return compress(options.large_message_handle_compression, utf8(text))

    def _row_writer(self, info: TableInfo) -> RowWriter | None:
        """The table's generated key-and-value writer for these options (``writer``), if any."""
        entry = self._writers.get(id(info))
        if entry is None or entry[0] is not info:
            options = self.options
            writer = None
            if not options.only_output_updated_columns:
                writer = row_writer(info, options.open_output_old_value,
                                    options.delete_only_output_handle_key_columns)
            if len(self._writers) > 256:
                self._writers.clear()
            entry = self._writers[id(info)] = (info, writer)
        return entry[1]

    def _fast_row(self, event: RowChange) -> tuple[bytes, bytes] | None:
        """The row's key and (compressed) value through the table's generated writer; None where it declines."""
        if event.table_info is None:
            return None
        writer = self._row_writer(event.table_info)
        if writer is None:
            return None
        try:
            written = writer(event)
        except WRITER_DECLINES:
            return None
        if written is None:
            return None
        return written[0], compress(self.options.large_message_handle_compression, written[1])

    def _prepare(self, event: RowChange, fast: bool = True) -> _Prepared:
        """Encode a row in full and decide how it must be sent (``AppendRowChangedEvent``);
        ``fast=False`` when the generated writer already declined it."""
        written = self._fast_row(event) if fast else None
        if written is not None:
            key, value = written
        else:
            key = self._row_key(event)
            imaged = self._fast_value(event)
            value = imaged if imaged is not None else self._value(self._images(event, False))
        if not self._too_large(key, value):
            return _Prepared(key, value, "full")
        option = self.options.large_message_handle_option
        if option == "none":
            length = len(key) + len(value) + RECORD_OVERHEAD + SINGLE_FRAMING
            encode_error(f"message too large: {length} bytes > max-message-bytes "
                          f"{self.options.max_message_bytes} ({event.schema}.{event.table} "
                          f"commit_ts {event.commit_ts})")
        return _Prepared(key, value, option)

    def _reduced(self, event: RowChange, location: str = "") -> tuple[bytes, bytes]:
        """The handle-key-only re-encoding, or the claim-check location message (§8)."""
        key = self._row_key(event, only_handle_key=not location, location=location)
        value = self._value(self._images(event, True))
        if self._too_large(key, value):
            length = len(key) + len(value) + RECORD_OVERHEAD + SINGLE_FRAMING
            encode_error(f"message too large even with handle-key columns only: {length} bytes > "
                          f"max-message-bytes {self.options.max_message_bytes}")
        return key, value

    def _encode_row(self, event: RowChange, fast: bool = True) -> tuple[bytes, bytes]:
        prepared = self._prepare(event, fast)
        if prepared.mode == "full":
            return prepared.key, prepared.value
        if prepared.mode == "claim-check":
            # Check the location message can be built before anything is written to the store.
            self._images(event, True)
            assert self.claim_check is not None  # _validate
            location = self.claim_check.put(*frame_single(prepared.key, prepared.value))
            return self._reduced(event, location)
        return self._reduced(event)

    # ---------------------------------------------------------------- ddl / resolved
    def _encode_ddl(self, event: DDLEvent) -> Message:
        key = key_json(event.commit_ts, event.schema, event.table, 0, None, MESSAGE_TYPE_DDL)
        if not 0 <= event.ddl_type <= 255:
            encode_error(f"ddl_type {event.ddl_type} is not a TiDB ActionType byte")
        value = utf8('{"q":' + go_json_quote(event.query) + ',"t":' + str(event.ddl_type) + "}")
        value = compress(self.options.large_message_handle_compression, value)
        framed_key, framed_value = frame_single(key, value)
        return Message(framed_key, framed_value, (event,))

    @staticmethod
    def _encode_resolved(event: Watermark) -> Message:
        key = key_json(event.resolved_ts, "", "", 0, None, MESSAGE_TYPE_RESOLVED)
        # EncodeCheckpointEvent writes a zero length and no value (docs print "value=").
        return Message(VERSION_HEAD + U64.pack(len(key)) + key, ZERO_LENGTH, (event,))

    def encode(self, events: Iterable[Event]) -> list[Message]:
        """Encode events of one topic partition; consecutive rows share messages per §2.4."""
        options = self.options
        max_bytes, max_rows = options.max_message_bytes, options.max_batch_size
        messages: list[Message] = []
        # The open batch (TiCDC AppendRowChangedEvent, §2.4): its framed key and value parts, joined when sent.
        keys: list[bytes] = []
        values: list[bytes] = []
        rows: list[Event] = []
        length = 0
        prefixes, short = LENGTH_PREFIXES, len(LENGTH_PREFIXES)
        pack = U64.pack
        writers = self._writers
        # A row the table's generated writer takes (uncompressed, within max-message-bytes) is
        # written here without _encode_row's calls; the rest goes the way _encode_row decides.
        room = max_bytes - RECORD_OVERHEAD - SINGLE_FRAMING
        plain = options.large_message_handle_compression == "none"
        # The writer of the previous row's table: the rows of a partition are mostly of one table.
        last_info: TableInfo | None = None
        write: RowWriter | None = None
        for event in events:
            if isinstance(event, RowChange):
                info = event.table_info
                if info is not last_info or info is None:
                    entry = writers.get(id(info))
                    if entry is not None and entry[0] is info:
                        last_info, write = info, entry[1] if plain else None
                    else:
                        last_info, write = None, None  # looked up again once _encode_row made it
                written = None
                if write is not None:
                    try:
                        written = write(event)
                    except WRITER_DECLINES:
                        written = None
                    if written is not None:
                        key, value = written
                        key_size, value_size = len(key), len(value)
                        if key_size + value_size > room:
                            written = None
                if written is None:
                    if not event.columns and not event.pre_columns:
                        continue  # §1.3: a row with neither image is dropped before the codec (len == 0)
                    key, value = self._encode_row(event, write is None)
                    key_size, value_size = len(key), len(value)
                if not rows or len(rows) >= max_rows or length + key_size + value_size + 16 > max_bytes:
                    if rows:
                        messages.append(Message(b"".join(keys), b"".join(values), tuple(rows)))
                    keys, values, rows = [VERSION_HEAD], [], []
                    length = len(VERSION_HEAD) + RECORD_OVERHEAD
                keys += (prefixes[key_size] if key_size < short else pack(key_size), key)
                values += (prefixes[value_size] if value_size < short else pack(value_size), value)
                rows.append(event)
                length += key_size + value_size + 16
                continue
            if rows:
                # DDL and resolved events are separate messages; rows before them go first.
                messages.append(Message(b"".join(keys), b"".join(values), tuple(rows)))
                keys, values, rows = [], [], []
            if isinstance(event, DDLEvent):
                messages.append(self._encode_ddl(event))
            elif isinstance(event, Watermark):
                messages.append(self._encode_resolved(event))
            elif not isinstance(event, Bootstrap):  # Open has no bootstrap message
                encode_error(f"cannot encode {type(event).__name__}")
        if rows:
            messages.append(Message(b"".join(keys), b"".join(values), tuple(rows)))
        return messages

    # ---------------------------------------------------------------- projection
    def project(self, event: Event) -> Event | None:
        """The event as an Open decoder returns it (with the claim-check store, if one is used).

        Raises EncodeError where ``encode`` would, except for a claim-check location message
        that is itself too large: its size depends on the location the store returns.
        """
        if isinstance(event, Watermark):
            self._encode_resolved(event)  # raises where encode would (resolved_ts not a uint64)
            return Watermark(resolved_ts=event.resolved_ts)
        if isinstance(event, DDLEvent):
            self._encode_ddl(event)  # raises where encode would (commit_ts, ddl_type out of range)
            return DDLEvent(query=clean_text(event.query), ddl_type=event.ddl_type, commit_ts=event.commit_ts,
                            schema=clean_text(event.schema), table=clean_text(event.table))
        if not isinstance(event, RowChange) or (not event.columns and not event.pre_columns):
            return None  # Bootstrap, or a row with neither image (§1.3: never sent)
        mode = self._prepare(event).mode
        if mode == "handle-key-only":
            self._reduced(event)  # raises where encode would: no handle key, or still too large
        elif mode == "claim-check":
            self._images(event, True)  # the location message needs handle-key columns
        u, p, d = self._images(event, mode == "handle-key-only")
        info = event.table_info
        is_partition = info is not None and info.is_partition
        op = op_of(bool(u), bool(p), bool(d))
        shape = tuple((col.name, col.type_code, col.flags) for col, _ in (*u, *p, *d))
        only_key = mode == "handle-key-only" or (op is Op.DELETE and only_handle_keys(shape))
        return RowChange(
            op=op, schema=clean_text(event.schema), table=clean_text(event.table), commit_ts=event.commit_ts,
            columns=_project_image(u) if (u or not (p or d)) else None,
            pre_columns=_project_image(d or p) if (d or p) else None,
            physical_table_id=event.physical_table_id if is_partition else 0, row_id=event.row_id,
            table_info=table_info(clean_text(event.schema), clean_text(event.table), is_partition,
                                  tuple((clean_text(n), t, f) for n, t, f in shape)),
            handle_key_only=only_key,
        )


def _same(a: Value, b: Value) -> bool:
    # codec.IsColumnValueEqual on values of one column: nil only equals nil, else ==.
    if a is None or b is None:
        return a is b
    return a == b


def _project_image(image: _Image) -> Row:
    return Row({col.wire_name: None if value is None else col.kind.project(value) for col, value in image})


def encode(events: Iterable[Event], *, claim_check: ClaimCheckStore | None = None, **options: Any) -> list[Message]:
    """Encode ``events`` with a one-shot Encoder."""
    return Encoder(options, claim_check=claim_check).encode(events)
