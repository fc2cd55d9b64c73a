"""The Open Protocol fast path: row messages read by typed readers generated per table shape.

The reference path (``Decoder.decode_reference``) decodes every column object into a generic
struct and converts each value through a reader looked up per column. This fast path learns a
table's shape (column names in wire order, type codes, flags) from the rows the reference path
decoded, and then reads the row JSON of that table in one msgspec call into structs generated for
that shape: each column's ``t`` and ``f`` are literals and its ``v`` is typed, so msgspec checks
and converts in C what the value readers check in Python. A generated converter finishes the few
values msgspec cannot (float32 rounding, text to bytes, Go-quoted binary strings, the uint64
ceiling) and builds the Row.

It handles only the common message: row events (no DDL, resolved or claim-check events), current
column objects (with ``f``), full images (an insert, an update with its old value, a delete), no
compression, no ``-0`` number. msgspec reads a ``-0`` as 0 (the reference keeps a float's sign and
refuses it for an integer column), so a row document is searched for one only when a number value
it holds is zero, or always when a column's value is read untyped. Anything else, and every value
outside what the typed structs accept, declines (``_fastpath.DECLINES``) and the reference path
decodes the message again and alone reports errors. Compiled readers are shared by every decoder
of the process, keyed by the shape; generated code is compiled only by
``_fastpath.compile_function``, column names entering it only as ``literal()`` literals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Final, Literal

import msgspec

from pyticdc.codec._fastpath import Decline, compile_function, literal
from pyticdc.codec.jsontext import float32_round, has_negative_zero
from pyticdc.codec.open_protocol import values as V
from pyticdc.codec.open_protocol.message import (
    HANDLE,
    MAX_I64,
    MAX_U64,
    MIN_I64,
    NULLABLE,
    U64,
    VERSION_HEAD,
    table_info,
)
from pyticdc.codec.open_protocol.strconv import strconv_unquote
from pyticdc.codec.open_protocol.tolerant import keeps_text
from pyticdc.model import Event, Op, Row, RowChange, TableInfo, Value

__all__ = ["FastPath"]

#: (name, type code, flags) of each column, in wire order.
Shape = tuple[tuple[str, int, int], ...]

_SIGNED: Final = Annotated[int, msgspec.Meta(ge=MIN_I64, le=MAX_I64)]
_NOT_NEGATIVE: Final = Annotated[int, msgspec.Meta(ge=0)]  # msgspec bounds stop at int64: ceiling below
# The reference reader → (msgspec type of "v", the statement finishing it, on ``v``). Readers not
# listed (the legacy and text-tolerant ones, "other" types) are called as they are.
_TYPED: Final[dict[Callable[[Any], Value], tuple[Any, str]]] = {
    V._D_SIGNED: (_SIGNED, ""),
    V._D_UNSIGNED: (_NOT_NEGATIVE, "if v > MAX_U64: raise Decline"),
    # msgspec reads a JSON integer into a float field as float() does; non-finite values decline.
    V._d_float32: (float, "v = f32(v)\nif v - v: raise Decline"),
    V._d_double: (float, "if v - v: raise Decline"),
    V._d_text: (str, ""),
    V._d_char: (str, "v = v.encode()"),  # UTF-8, strict
    V._d_binary: (str, "v = unquote(v)"),
    # msgspec's base64 accepts a subset of b64decode(validate=True) with equal results; what it
    # refuses (line breaks Go skips, other padding) declines.
    V._d_blob: (bytes, ""),
}
_LIMIT: Final = 1024  # shapes per process, tables per decoder (each cleared when full)
#: The msgspec types of number values (a ``-0`` reads as a zero of them).
_NUMBERS: Final = (_SIGNED, _NOT_NEGATIVE, float)


class _RowKey(msgspec.Struct, gc=False, kw_only=True):
    """``internal.MessageKey`` of a full row event: any other type, or a claim-check location, declines."""

    # Members in the order encoding/json writes them (msgspec matches the next member first).
    ts: Annotated[int, msgspec.Meta(ge=0)] = 0  # the uint64 ceiling is checked after
    scm: str = ""
    tbl: str = ""
    rid: Annotated[int, msgspec.Meta(ge=MIN_I64, le=MAX_I64)] = 0
    ptn: Annotated[int, msgspec.Meta(ge=MIN_I64, le=MAX_I64)] | None = None
    t: Literal[1]
    ohk: bool = False
    ccl: Literal[""] = ""


_KEY_DECODE: Final = msgspec.json.Decoder(_RowKey).decode


def _reader_of(type_code: int, flags: int) -> tuple[Any, str, Callable[[Any], Value] | None]:
    """The msgspec type of a column's ``v``, its finishing statement, and a reader to call (or None)."""
    reader = V.value_reader(type_code, flags, either_sign=False)
    if not keeps_text(type_code, flags) and reader in _TYPED:
        wire_type, step = _TYPED[reader]
        return wire_type, step, None
    return Any, "", reader


def _checked(reader: Callable[[Any], Value]) -> Callable[[Any], Value]:
    # A reference reader inside generated code: its BadValue is a decline, not an error.
    def read(value: Any) -> Value:
        try:
            return reader(value)
        except V.BadValue:
            raise Decline from None
    return read


class _Compiled:
    """What one shape compiles to (shared by every decoder): the row decoder and the image converter."""

    __slots__ = ("convert", "decode", "handle_only", "shape", "tables")

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.handle_only = all(flags & HANDLE for _, _, flags in shape)
        #: (schema, table, is_partition) → the TableInfo the reference path builds for this shape.
        self.tables: dict[tuple[str, str, bool], TableInfo] = {}
        columns: dict[tuple[int, int, Any, bool], Any] = {}
        fields = []
        lines = []
        items = []
        namespace: dict[str, Any] = {
            "Row": Row, "Decline": Decline, "MAX_U64": MAX_U64, "f32": float32_round, "unquote": strconv_unquote,
            "negative_zero": has_negative_zero,
        }
        numbers = []
        untyped = False
        for i, (name, type_code, flags) in enumerate(shape):
            wire_type, step, reader = _reader_of(type_code, flags)
            # A NOT NULL column's value is required and never null: its null declines, and the
            # converter skips the None test.
            required = reader is None and not flags & NULLABLE
            key = (type_code, flags, wire_type, required)
            column = columns.get(key)
            if column is None:
                # WireColumn with this column's t and f as literals (t defaults to 0 there).
                t_field = ("t", Literal[type_code], 0) if type_code == 0 else ("t", Literal[type_code])
                v_field = ("v", wire_type) if required else ("v", wire_type | None, None)
                column = columns[key] = msgspec.defstruct("OpenColumn", [
                    t_field, ("h", bool | None, None), ("f", Literal[flags]), v_field,
                ], gc=False, kw_only=True)
            fields.append((f"c{i}", column, msgspec.field(name=name)))
            if wire_type in _NUMBERS:
                numbers.append(f"v{i}")
            if reader is not None:
                untyped = True
                namespace[f"read{i}"] = _checked(reader)
                step = f"v = read{i}(v)"
            if step and required and "\n" not in step and step.startswith("v = "):
                lines.append(f"v{i} = " + re.sub(r"\bv\b", f"s.c{i}.v", step[4:]))
            elif step and required:
                lines.append(f"v = s.c{i}.v")
                lines += step.split("\n")
                lines.append(f"v{i} = v")
            elif step:
                lines.append(f"v = s.c{i}.v")
                lines.append("if v is not None:")
                lines += ["    " + line for line in step.split("\n")]
                lines.append(f"v{i} = v")
            else:  # msgspec's value is the value
                lines.append(f"v{i} = s.c{i}.v")
            items.append(f"{literal(name)}: v{i}")
        image = msgspec.defstruct("OpenImage", fields, forbid_unknown_fields=True, gc=False)
        row = msgspec.defstruct("OpenRow", [("u", image | None, None), ("p", image | None, None),
                                            ("d", image | None, None)], gc=False)
        self.decode: Callable[[bytes], Any] = msgspec.json.Decoder(row).decode
        if untyped:
            lines.insert(0, "if negative_zero(data): raise Decline")
        elif numbers:
            zeros = " or ".join(f"{n} == 0" for n in numbers) if len(numbers) < 4 else f"0 in ({', '.join(numbers)})"
            zeros = f"({zeros})"
            lines.append(f"if {zeros} and negative_zero(data): raise Decline")
        lines.append("return Row({" + ", ".join(items) + "})")
        source = "def convert(s, data):\n" + "".join(f"    {line}\n" for line in lines)
        #: (a decoded image, the row document it came from) → its Row.
        self.convert: Callable[[Any, bytes], Row] = compile_function(source, "convert", namespace)

    def table_info(self, schema: str, table: str, is_partition: bool) -> TableInfo:
        """The TableInfo of a row of this shape (the reference path's, cached)."""
        key = (schema, table, is_partition)
        info = self.tables.get(key)
        if info is None:
            if len(self.tables) >= _LIMIT:
                self.tables.clear()
            info = self.tables[key] = table_info(schema, table, is_partition, self.shape)
        return info


_COMPILED: Final[dict[Shape, _Compiled | None]] = {}


def _no_plan(*data: Any) -> Any:
    raise AssertionError("a row read before its table's plan")  # unreachable: `last_schema` starts None


def _compiled(shape: Shape) -> _Compiled | None:
    if shape in _COMPILED:
        return _COMPILED[shape]
    found: _Compiled | None
    try:
        found = _Compiled(shape)
    except (TypeError, ValueError):  # a name or flags value msgspec refuses: the reference path only
        found = None
    if len(_COMPILED) >= _LIMIT:
        _COMPILED.clear()
    _COMPILED[shape] = found
    return found


class FastPath:
    """The typed readers of one Decoder, by (schema, table); None from ``decode`` = use the reference path."""

    __slots__ = ("_plans",)

    def __init__(self) -> None:
        self._plans: dict[tuple[str, str], _Compiled] = {}

    def learn(self, events: Sequence[Event]) -> None:
        """Remember the shape of the full-image rows the reference path decoded."""
        for event in events:
            if type(event) is not RowChange or event.columns is None or event.table_info is None:
                continue
            info = event.table_info
            by_name = info.column_by_name
            if not event.columns or len(event.columns) != len(by_name) or event.claim_check_location:
                continue
            shape = tuple((name, by_name[name].type_code, by_name[name].flags) for name in event.columns)
            if any(flags > MAX_I64 for _, _, flags in shape):
                continue  # msgspec literals stop at int64
            compiled = _compiled(shape)
            if compiled is not None:
                if len(self._plans) >= _LIMIT:
                    self._plans.clear()
                self._plans[(event.schema, event.table)] = compiled

    def decode(self, key: bytes, value: bytes) -> list[Event] | None:
        """The row events of a message of known tables, or None (anything else)."""
        if not value or len(key) <= 8 or not key.startswith(VERSION_HEAD):
            return None
        plans = self._plans
        unpack = U64.unpack_from
        key_decode = _KEY_DECODE
        events: list[Event] = []
        append = events.append
        key_at, value_at, key_end, value_end = 8, 0, len(key), len(value)
        # The plan and TableInfo of the previous row: the rows of a batch are mostly of one table.
        last_schema: str | None = None
        last_table: str | None = None
        last_partitioned = False
        info: TableInfo | None = None
        decode_row: Callable[[bytes], Any] = _no_plan
        convert: Callable[[Any, bytes], Row] = _no_plan
        handle_only = False
        row_change = RowChange
        delete, insert, update = Op.DELETE, Op.INSERT, Op.UPDATE
        while key_at < key_end:
            (size,) = unpack(key, key_at)
            start = key_at + 8
            key_at = start + size
            key_data = key[start:key_at]
            (size,) = unpack(value, value_at)
            start = value_at + 8
            value_at = start + size
            data = value[start:value_at]
            # A frame running past its buffer can only be the last: the checks after the loop see it.
            wire = key_decode(key_data)
            ts = wire.ts
            if ts > MAX_U64:
                return None
            schema, table, ptn = wire.scm, wire.tbl, wire.ptn
            if schema != last_schema or table != last_table or (ptn is not None) is not last_partitioned:
                plan = plans.get((schema, table))
                if plan is None:
                    return None
                last_schema, last_table, last_partitioned = schema, table, ptn is not None
                info = plan.table_info(schema, table, last_partitioned)
                decode_row, convert, handle_only = plan.decode, plan.convert, plan.handle_only
            row = decode_row(data)
            if row.d is not None:
                if row.u is not None or row.p is not None:
                    return None
                op, columns, pre = delete, None, convert(row.d, data)
                handle_key_only = wire.ohk or handle_only
            elif row.u is not None:
                columns = convert(row.u, data)
                if row.p is None:
                    op, pre = insert, None
                else:
                    op, pre = update, convert(row.p, data)
                handle_key_only = wire.ohk
            else:
                return None
            append(row_change(
                op=op, schema=schema, table=table, commit_ts=ts, columns=columns, pre_columns=pre,
                physical_table_id=ptn or 0, row_id=wire.rid, table_info=info, handle_key_only=handle_key_only))
        if key_at != key_end or value_at != value_end or not events:
            return None
        return events
