"""The Craft encoder: rows batched per §3.3 into one message, DDL and resolved events alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple, cast

from pyticdc.codec.base import BaseEncoder, Message
from pyticdc.codec.craft.events import TableCache, row_event
from pyticdc.codec.craft.framing import assemble, utf8
from pyticdc.codec.craft.message import (
    EVENT_DDL,
    EVENT_RESOLVED,
    EVENT_ROW,
    GROUP_NEW,
    GROUP_OLD,
    INT64_MAX,
    INT64_MIN,
    NULL_ID,
    OPTIONS,
    PROTOCOL,
    UINT64_MAX,
    Group,
)
from pyticdc.codec.craft.primitives import CraftWriter
from pyticdc.codec.craft.values import ValueEncoder, encode_null, value_encoder
from pyticdc.codec.craft.writer import (
    FastRow,
    ImageWriter,
    MessageConstants,
    cached_image_writer,
    message_constants,
    rows_message,
)
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnFlag, DDLEvent, Event, RowChange, TableInfo, Value, Watermark

__all__ = ["Encoder", "encode"]

_MISSING: Final = object()


class _ColumnPlan(NamedTuple):
    name: str
    #: UTF-8 bytes of the name (§3.3 estimatedSize counts len(name)).
    name_size: int
    type_code: int
    flag: int
    encoder: ValueEncoder | None
    handle_key: bool


class _TablePlan:
    """Per-TableInfo encoding plan: columns in table order (virtual ones never carry values)."""

    __slots__ = (
        "by_name", "constants", "encoders", "fixed_size", "full_blob", "full_flags", "full_names", "full_types",
        "ordered", "writer", "zeros",
    )

    def __init__(self, table_info: TableInfo) -> None:
        plans = []
        for column in table_info.columns:
            if not 0 <= column.type_code <= 0xFF or not 0 <= column.flags <= UINT64_MAX:
                raise EncodeError(PROTOCOL, f"column {column.name!r}: type code or flag out of range")
            plans.append(_ColumnPlan(
                column.name, len(utf8(column.name, "column name")), column.type_code, column.flags,
                value_encoder(column.type_code, column.flags), bool(column.flags & ColumnFlag.HANDLE_KEY),
            ))
        self.by_name = {p.name: p for p in plans}
        self.ordered = tuple(p for p, c in zip(plans, table_info.columns) if not c.virtual)
        # A full image (the usual case) reuses these instead of rebuilding them per row.
        self.full_names = [p.name for p in self.ordered]
        self.full_types = [p.type_code for p in self.ordered]
        self.full_flags = [p.flag for p in self.ordered]
        chunk = CraftWriter()
        chunk.uvarint_chunk(self.full_types)
        chunk.uvarint_chunk(self.full_flags)
        self.full_blob = chunk.getvalue()
        # §3.3 estimatedSize: len(name) + 16 per column, plus len(value) added per row.
        self.fixed_size = sum(p.name_size + 16 for p in self.ordered)
        #: (name, encoder) per column of a full image (always-NULL types: an encoder of None).
        self.encoders = tuple((p.name, p.encoder or encode_null) for p in self.ordered)
        #: The (unused) value offsets of an encoder-built full group, shared.
        self.zeros = [0] * len(self.ordered)
        #: The fast path's generated full-image writer (writer.py); None: no columns, reference only.
        self.writer = cached_image_writer(self.encoders) if self.ordered else None
        #: (schema, table) → the fast path's message constants of this layout.
        self.constants: dict[tuple[str, str], MessageConstants] = {}

    def message_constants(self, schema: str, table: str) -> MessageConstants:
        """The term dictionary and group headers of a one-table message of this layout (writer.py)."""
        found = self.constants.get((schema, table))
        if found is None:
            if len(self.constants) >= 64:
                self.constants.clear()
            found = self.constants[(schema, table)] = message_constants(
                schema, table, self.full_names, self.full_blob)
        return found


class _PendingRow(NamedTuple):
    commit_ts: int
    partition: int
    schema: str
    table: str
    groups: list[Group]
    #: §3.3 estimatedSize contribution of this row.
    estimated_size: int



class Encoder(BaseEncoder):
    """Craft encoder: rows batched per §3.3, DDL and resolved events as their own messages."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plans: dict[int, tuple[TableInfo, _TablePlan]] = {}
        self._tables = TableCache()

    # ----------------------------------------------------------------- rows
    def _plan(self, table_info: TableInfo) -> _TablePlan:
        entry = self._plans.get(id(table_info))
        if entry is not None and entry[0] is table_info:
            return entry[1]
        plan = _TablePlan(table_info)
        if len(self._plans) >= 1024:
            self._plans.clear()
        self._plans[id(table_info)] = (table_info, plan)
        return plan

    @staticmethod
    def _group(
        group_type: int, row: Mapping[str, Value], plan: _TablePlan, only_handle_key: bool, event: RowChange,
    ) -> tuple[Group, int]:
        if not only_handle_key and len(row) == len(plan.ordered) and plan.ordered:
            # Fast path: a full image, every column in table order, encoded in one comprehension.
            try:
                encoded = [None if (item := row[name]) is None else encode(item) for name, encode in plan.encoders]
            except (KeyError, TypeError, ValueError, OverflowError):
                pass  # a column missing or a bad value: the general loop below handles or reports it
            else:
                estimated = sum(map(len, filter(None, encoded)))  # None (NULL) adds nothing, b"" adds 0
                group = Group(group_type, plan.full_names, plan.full_types, plan.full_flags, encoded, plan.zeros,
                               plan.full_blob)
                return group, estimated + plan.fixed_size
        ordered = plan.ordered
        chosen: list[_ColumnPlan] = []
        values: list[bytes | None] = []
        estimated = 0
        present = 0
        column = ordered[0] if ordered else None
        try:
            for column in ordered:
                value = row.get(column.name, _MISSING)
                if value is _MISSING:
                    continue
                present += 1
                if only_handle_key and not column.handle_key:
                    continue
                raw = None if value is None or column.encoder is None else column.encoder(value)
                chosen.append(column)
                values.append(raw)
                if raw is not None:
                    estimated += len(raw)
        except (TypeError, ValueError, OverflowError) as exc:
            where = f"{event.schema}.{event.table}.{column.name if column else '?'}"
            raise EncodeError(PROTOCOL, f"{where} (type {column.type_code if column else '?'}): {exc}") from None
        if present != len(row):
            unknown = [name for name in row if name not in plan.by_name]
            if unknown:
                raise EncodeError(PROTOCOL, f"{event.schema}.{event.table}: columns {unknown} are not in table_info")
        if not chosen:
            # TiCDC would panic on the nil column group (model.go newRowChangedMessage).
            raise EncodeError(PROTOCOL, f"{event.schema}.{event.table}: a column group with no columns")
        offsets = [0] * len(chosen)
        if len(chosen) == len(ordered):
            group = Group(group_type, plan.full_names, plan.full_types, plan.full_flags, values, offsets,
                           plan.full_blob)
            return group, estimated + plan.fixed_size
        group = Group(group_type, [c.name for c in chosen], [c.type_code for c in chosen],
                       [c.flag for c in chosen], values, offsets)
        # §3.3 estimatedSize: len(name) + len(value) + 16 per encoded column.
        return group, estimated + sum(c.name_size + 16 for c in chosen)

    def _prepare(self, event: RowChange) -> _PendingRow | None:
        if event.columns is None and event.pre_columns is None:
            return None  # §1.3: rows with neither image are dropped before the codec
        table_info = event.table_info
        if table_info is None:
            raise EncodeError(PROTOCOL, f"{event.schema}.{event.table}: craft needs table_info for column types")
        if not 0 <= event.commit_ts <= UINT64_MAX:
            raise EncodeError(PROTOCOL, f"commit_ts {event.commit_ts} outside uint64")
        plan = self._plan(table_info)
        groups: list[Group] = []
        estimated = 0
        # §3.2: new group first, then old.
        if event.columns is not None:
            group, size = self._group(GROUP_NEW, event.columns, plan, False, event)
            groups.append(group)
            estimated += size
        if event.pre_columns is not None:
            # Go IsDelete: a pre-image and no post-image.
            only_handle_key = self.options.delete_only_output_handle_key_columns and not event.columns
            group, size = self._group(GROUP_OLD, event.pre_columns, plan, only_handle_key, event)
            groups.append(group)
            estimated += size
        schema = event.schema
        table = event.table
        partition = event.physical_table_id if table_info.is_partition else NULL_ID
        if not INT64_MIN <= partition <= INT64_MAX:
            raise EncodeError(PROTOCOL, f"physical_table_id {partition} outside int64")
        # §3.3: 32 + len(schema) + len(table) per row (appendHeader).
        estimated += 32 + len(utf8(schema, "schema")) + len(utf8(table, "table"))
        return _PendingRow(event.commit_ts, partition, schema, table, groups, estimated)

    def _rows_message(self, rows: list[_PendingRow | FastRow], events: list[Event],
                      constants: MessageConstants | None) -> Message:
        if constants is not None:
            # Every row on the fast path, of one table (``constants``): writer.rows_message.
            fast = cast("list[FastRow]", rows)
            value = rows_message(constants, fast)
            return Message(None, value, tuple(events))
        # Rows of several tables, or prepared by the reference path: framing.assemble, the fast
        # rows prepared again by the reference path (rows and events correspond one to one).
        prepared = [row if isinstance(row, _PendingRow) else self._prepare(cast(RowChange, event))
                    for row, event in zip(rows, events)]
        value = assemble(
            [(r.commit_ts, EVENT_ROW, r.partition, r.schema, r.table) for r in prepared if r is not None],
            [r.groups for r in prepared if r is not None],
        )
        return Message(None, value, tuple(events))

    @staticmethod
    def _ddl_value(event: DDLEvent) -> bytes:
        if not 0 <= event.commit_ts <= UINT64_MAX:
            raise EncodeError(PROTOCOL, f"DDL commit_ts {event.commit_ts} outside uint64")
        if not 0 <= event.ddl_type <= 0xFF:  # TiDB ActionType is a byte
            raise EncodeError(PROTOCOL, f"DDL type {event.ddl_type} is not a TiDB ActionType (0..255)")
        # §3.2 DDL body = uvarint ActionType ‖ uvarint len ‖ query.
        body = CraftWriter()
        body.uvarint(event.ddl_type)
        body.string(utf8(event.query, "DDL query"))
        return assemble([(event.commit_ts, EVENT_DDL, NULL_ID, event.schema, event.table)], [body.getvalue()])

    @staticmethod
    def _resolved_value(event: Watermark) -> bytes:
        if not 0 <= event.resolved_ts <= UINT64_MAX:
            raise EncodeError(PROTOCOL, f"resolved_ts {event.resolved_ts} outside uint64")
        # §3.2 resolved: partition, schema and table all -1, empty body.
        return assemble([(event.resolved_ts, EVENT_RESOLVED, NULL_ID, "", "")], [b""])

    def encode(self, events: Iterable[Event]) -> list[Message]:
        """Encode events of one topic partition: rows batched (§3.3), DDL/resolved alone."""
        max_bytes = self.options.max_message_bytes
        max_rows = self.options.max_batch_size
        handle_only = self.options.delete_only_output_handle_key_columns
        messages: list[Message] = []
        rows: list[_PendingRow | FastRow] = []
        carried: list[Event] = []
        estimated = 0
        # The message's one table while every row so far is a fast row of it (writer.py), else None.
        batch: MessageConstants | None = None
        last_info: TableInfo | None = None
        plan: _TablePlan | None = None
        writer: ImageWriter | None = None
        # The last row's names and plan, and their message constants.
        last_schema = last_table = ""
        last_plan: _TablePlan | None = None
        constants: MessageConstants | None = None
        for event in events:
            if isinstance(event, RowChange):
                new = event.columns
                old = event.pre_columns
                table_info = event.table_info
                fast: FastRow | None = None
                # The fast path (writer.py) takes full images of a table with columns; the
                # reference path (_prepare) drops, reports or writes everything else.
                if table_info is not None and (new or (old is not None and not handle_only)):
                    if table_info is not last_info:
                        plan = self._plan(table_info)
                        writer = plan.writer
                        last_info = table_info
                    commit_ts = event.commit_ts
                    partition = event.physical_table_id if table_info.is_partition else NULL_ID
                    if (writer is not None and plan is not None and 0 <= commit_ts <= UINT64_MAX
                            and INT64_MIN <= partition <= INT64_MAX):
                        try:
                            schema = event.schema
                            table = event.table
                            if schema is not last_schema or table is not last_table or plan is not last_plan:
                                constants = plan.message_constants(schema, table)
                                last_schema, last_table, last_plan = schema, table, plan
                            assert constants is not None  # set with last_plan
                            size = constants.row_size
                            new_chunk = old_chunk = None
                            if new is not None:
                                new_chunk, values_size = writer(new)
                                size += values_size + plan.fixed_size
                            if old is not None:
                                old_chunk, values_size = writer(old)
                                size += values_size + plan.fixed_size
                            fast = (commit_ts, partition, (new_chunk, old_chunk), constants, size)
                        except (KeyError, TypeError, ValueError, OverflowError, EncodeError):
                            pass  # a partial image or an unusual value: the reference path decides
                if fast is not None:
                    if not rows:
                        batch = fast[3]
                    elif fast[3] is not batch:
                        batch = None
                    rows.append(fast)
                    estimated += fast[4]
                else:
                    pending = self._prepare(event)
                    if pending is None:
                        continue
                    rows.append(pending)
                    batch = None
                    estimated += pending.estimated_size
                carried.append(event)
                # §3.3: checked after adding, so one message may exceed the limit.
                if estimated > max_bytes or len(rows) >= max_rows:
                    messages.append(self._rows_message(rows, carried, batch))
                    rows, carried, estimated = [], [], 0
                continue
            if rows:  # keep the stream order: rows before a later DDL/resolved
                messages.append(self._rows_message(rows, carried, batch))
                rows, carried, estimated = [], [], 0
            if isinstance(event, DDLEvent):
                messages.append(Message(None, self._ddl_value(event), (event,)))
            elif isinstance(event, Watermark):
                messages.append(Message(None, self._resolved_value(event), (event,)))
            # Bootstrap is Simple-only: craft emits nothing for it.
        if rows:  # Build() flushes the remainder
            messages.append(self._rows_message(rows, carried, batch))
        return messages

    def project(self, event: Event) -> Event | None:
        """The event as craft's decoder returns it.

        Rows: op follows the images present; table_info is rebuilt from names, type codes and
        flags (charset from the Binary flag, PK from the PrimaryKey flags); table_id and row_id
        are 0, physical_table_id is the partition id (0 when not partitioned); FLOAT comes back
        as float64 (the float32 widened, §3.2); NULL/GEOMETRY/unknown types come back None;
        string types are bytes; with delete-only-output-handle-key-columns a DELETE keeps only
        handle-key columns; a DELETE of handle-key columns only is ``handle_key_only``.
        DDL keeps query, type, commit_ts, schema and table only. Bootstrap: None.
        """
        if isinstance(event, RowChange):
            pending = self._prepare(event)
            if pending is None:
                return None
            return row_event(
                pending.commit_ts, pending.partition, pending.schema, pending.table, pending.groups, self._tables,
            )
        if isinstance(event, DDLEvent):
            return DDLEvent(
                query=event.query, ddl_type=event.ddl_type, commit_ts=event.commit_ts,
                schema=event.schema, table=event.table,
            )
        if isinstance(event, Watermark):
            return Watermark(resolved_ts=event.resolved_ts)
        return None



def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode ``events`` with a one-shot craft encoder."""
    return Encoder(options).encode(events)

