"""MySQL/TiDB column types → Arrow/Spark types, and the typed projection of a table's change rows (pure).

The decoded-event DataFrame keeps row images as canonical text (``map<string,string>``, see
:mod:`pyticdc.arrow.rows`) so one DataFrame holds every table. :func:`project_rows` turns the rows of
*one* table into typed columns using its TableInfo, with this mapping — the one mapping of pyticdc:
``typed_rows``, the replica tables and ``pyticdc replicate`` all use it (``docs/types.md`` has it per
protocol, with what each protocol loses). Two choices are options (:class:`TypeMapping`,
:data:`TYPE_OPTIONS`): ``tinyint1-as-boolean`` and ``time-as``.

===============================  =====================  ==============================================
TiDB type                        Spark type             notes
===============================  =====================  ==============================================
TINYINT                          tinyint                UNSIGNED: smallint; TINYINT(1) is boolean with
                                                        ``tinyint1-as-boolean`` (where the width is known)
SMALLINT                         smallint               UNSIGNED: int
MEDIUMINT, INT                   int                    INT UNSIGNED: bigint
BIGINT                           bigint                 UNSIGNED: decimal(20,0), exact to 2**64-1; a
                                                        negative value is TiCDC's int64 twin of one
                                                        ≥ 2**63 (Debezium without the extension): +2**64
YEAR                             int
FLOAT / DOUBLE                   float / double         FLOAT is the exact float32 TiDB stored
DECIMAL(p,s)                     decimal(p,s)           string when p > 38 (Spark's limit) or when the
                                                        protocol does not carry p and s (Open, Craft,
                                                        Canal-JSON): pass a full TableInfo to type it
DATE                             date                   zero or invalid dates ('0000-00-00') → null
DATETIME(fsp)                    timestamp_ntz          wall-clock time, microseconds
TIMESTAMP(fsp)                   timestamp              a UTC instant: TiCDC prints TIMESTAMP in the
                                                        changefeed ``time-zone``; it is read in that zone
TIME(fsp)                        bigint                 microseconds, signed (-838:59:59 is
                                                        -3020399000000): Delta has no interval type;
                                                        ``time-as=string``: TiDB's text
CHAR, VARCHAR, TEXT (any size)   string
BINARY, VARBINARY, BLOB          binary                 bytes exactly as stored
BIT(n)                           binary                 big-endian, ceil(n/8) bytes (8 if n unknown)
ENUM                             string                 member name; the 1-based index as text when the
                                                        protocol carries no members (Open, Craft, Canal)
SET                              string                 comma-separated member names; the bitmask as text
                                                        when members are unknown
JSON                             string                 as TiDB prints it
VECTOR                           array<float>
GEOMETRY                         binary
===============================  =====================  ==============================================

A type never depends on the values, so a table's typed schema is stable across batches. A value that does
not fit its declared type (e.g. more digits than a DECIMAL(p,s) allows) raises ValueError naming the column:
the TableInfo does not describe the rows. Metadata columns are prefixed with ``_`` (``_op``, ``_commit_ts``,
``_topic``, ``_partition``, ``_offset``, ``_event_index``, ``_handle_key_only``) so they cannot clash with
ordinary column names; a table column with one of those names raises ConfigError.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.codec._fastpath import speculate
from pyticdc.codec.timezone import load_zone
from pyticdc.errors import ConfigError
from pyticdc.model import ColumnInfo, TableInfo, TypeCode
from pyticdc.mysql import DECIMAL_TYPES, STRING_TYPES

__all__ = [
    "DEFAULT_TYPES",
    "IMAGES",
    "METADATA_COLUMNS",
    "TYPE_OPTIONS",
    "TypeMapping",
    "column_arrow_type",
    "project_rows",
    "project_table",
    "table_arrow_schema",
    "text_converter",
    "typed_arrays",
]

#: Metadata columns of a typed projection, before the table's own columns.
METADATA_COLUMNS: Final[tuple[tuple[str, pa.DataType], ...]] = (
    ("_op", pa.string()),
    ("_commit_ts", pa.decimal128(20, 0)),
    ("_topic", pa.string()),
    ("_partition", pa.int32()),
    ("_offset", pa.int64()),
    ("_event_index", pa.int32()),
    ("_handle_key_only", pa.bool_()),
)
#: Which image a projection reads: ``current`` = post-image, or the pre-image of a delete.
IMAGES: Final = ("current", "post", "pre")

_T = TypeCode
_INT_TYPES: Final[dict[int, tuple[pa.DataType, pa.DataType]]] = {
    # type code: (signed, unsigned)
    _T.TINY: (pa.int8(), pa.int16()),
    _T.SHORT: (pa.int16(), pa.int32()),
    _T.INT24: (pa.int32(), pa.int32()),
    _T.LONG: (pa.int32(), pa.int64()),
    _T.LONGLONG: (pa.int64(), pa.decimal128(20, 0)),
}
_UTC: Final = dt.timezone.utc
_U64: Final = 1 << 64
_I64_MIN: Final = -(1 << 63)

#: The type-mapping options: (name, default, choices, meaning). ``docs/types.md`` is generated from it.
TYPE_OPTIONS: Final[tuple[tuple[str, str, tuple[str, ...], str], ...]] = (
    ("tinyint1-as-boolean", "false", ("true", "false"),
     "TINYINT(1) as boolean (0 is false, any other value true) instead of tinyint; only where the protocol "
     "carries the display width (elsewhere the column stays tinyint)"),
    ("time-as", "micros", ("micros", "string"),
     "TIME as bigint microseconds (signed; Delta has no interval type) or as TiDB's text (`-838:59:59.000000`)"),
)


@dataclass(frozen=True)
class TypeMapping:
    """The choices of the type mapping where users legitimately differ (see :data:`TYPE_OPTIONS`)."""

    tinyint1_as_boolean: bool = False
    #: ``micros`` (bigint microseconds) or ``string`` (TiDB's text).
    time_as: str = "micros"

    def __post_init__(self) -> None:
        if self.time_as not in ("micros", "string"):
            raise ConfigError(f"option time-as: expected micros or string, got {self.time_as!r}")

    @classmethod
    def parse(cls, options: Mapping[str, Any] | TypeMapping | None) -> TypeMapping:
        """A mapping from options named as in :data:`TYPE_OPTIONS` (or as Python names); ConfigError otherwise."""
        if isinstance(options, TypeMapping):
            return options
        values: dict[str, str] = {}
        for name, value in (options or {}).items():
            key = str(name).strip().lower().replace("_", "-")
            if key not in {n for n, *_ in TYPE_OPTIONS}:
                raise ConfigError(f"unknown type-mapping option {name!r}; valid: "
                                  f"{', '.join(n for n, *_ in TYPE_OPTIONS)}")
            values[key] = str(value).strip().lower()
        boolean = values.get("tinyint1-as-boolean", "false")
        if boolean not in ("true", "false"):
            raise ConfigError(f"option tinyint1-as-boolean: expected true or false, got {boolean!r}")
        return cls(tinyint1_as_boolean=boolean == "true", time_as=values.get("time-as", "micros"))


#: The default mapping: what the replica, ``typed_rows`` and ``pyticdc replicate`` use unless told otherwise.
DEFAULT_TYPES: Final = TypeMapping()


def _is_boolean(column: ColumnInfo, mapping: TypeMapping) -> bool:
    return mapping.tinyint1_as_boolean and column.type_code == _T.TINY and column.flen == 1


def _is_binary(column: ColumnInfo) -> bool:
    return column.charset == "binary"


def _is_unsigned_bigint(column: ColumnInfo) -> bool:
    return column.type_code == _T.LONGLONG and column.is_unsigned


def _uint64(text: str) -> int:
    # TiCDC writes BIGINT UNSIGNED as int64(v) where the wire has no unsigned type (Debezium without
    # enable-tidb-extension: 2**64-1 is -1); where the table's schema says UNSIGNED, that twin is read back.
    value = int(text)
    if not _I64_MIN <= value < _U64:
        raise ValueError(f"{text} is out of the BIGINT UNSIGNED range")
    return value + _U64 if value < 0 else value


def column_arrow_type(column: ColumnInfo, mapping: TypeMapping = DEFAULT_TYPES) -> pa.DataType:
    """The Arrow type of a column's typed values (see the module table)."""
    code = column.type_code
    if _is_boolean(column, mapping):
        return pa.bool_()
    if code in _INT_TYPES:
        signed, unsigned = _INT_TYPES[code]
        return unsigned if column.is_unsigned else signed
    if code == _T.YEAR:
        return pa.int32()
    if code == _T.FLOAT:
        return pa.float32()
    if code == _T.DOUBLE:
        return pa.float64()
    if code in DECIMAL_TYPES:
        precision, scale = column.flen, column.decimal
        if 0 < precision <= 38 and 0 <= scale <= precision:
            return pa.decimal128(precision, scale)
        return pa.string()
    if code in (_T.DATE, _T.NEWDATE):
        return pa.date32()
    if code == _T.DATETIME:
        return pa.timestamp("us")
    if code == _T.TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if code == _T.TIME:
        return pa.int64() if mapping.time_as == "micros" else pa.string()
    if code in STRING_TYPES:
        return pa.binary() if _is_binary(column) else pa.string()
    if code in (_T.BIT, _T.GEOMETRY):
        return pa.binary()
    if code == _T.TIDB_VECTOR:
        return pa.list_(pa.field("element", pa.float32()))
    return pa.string()  # ENUM, SET, JSON, NULL and anything unknown


def table_arrow_schema(table_info: TableInfo, mapping: TypeMapping = DEFAULT_TYPES) -> pa.Schema:
    """The Arrow schema of :func:`project_rows` output for ``table_info``."""
    names = {c.name for c in table_info.columns}
    clash = sorted(names & {name for name, _ in METADATA_COLUMNS})
    if clash:
        raise ConfigError(f"{table_info.qualified_name}: columns {clash} clash with the projection's metadata columns")
    fields = [pa.field(name, kind) for name, kind in METADATA_COLUMNS]
    fields += [pa.field(c.name, column_arrow_type(c, mapping)) for c in table_info.columns]
    return pa.schema(fields)


# --------------------------------------------------------------------------- text → value
def _parse_date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None  # '0000-00-00' and other dates MySQL allows but a calendar does not


def _parse_datetime(text: str) -> dt.datetime | None:
    head, _, fraction = text.partition(".")
    # Fast path: the canonical 'YYYY-MM-DD HH:MM:SS' TiCDC prints, without strptime (it dominates otherwise).
    # Anything else takes strptime, which also accepts looser forms ('2025-1-2 3:4:5', extra spaces).
    if (len(head) == 19 and head[4] == "-" and head[7] == "-" and head[10] == " " and head[13] == ":"
            and head[16] == ":" and head.isascii()):
        digits = head[0:4] + head[5:7] + head[8:10] + head[11:13] + head[14:16] + head[17:19]
        if digits.isdigit():
            try:
                value = dt.datetime(int(head[0:4]), int(head[5:7]), int(head[8:10]), int(head[11:13]),
                                    int(head[14:16]), int(head[17:19]))
            except ValueError:
                return None  # zero or invalid datetime
            if fraction:
                if len(fraction) == 6 and fraction.isascii() and fraction.isdigit():
                    return value.replace(microsecond=int(fraction))
                value = value.replace(microsecond=int(fraction[:6].ljust(6, "0")))
            return value
    try:
        value = dt.datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None  # zero or invalid datetime
    if fraction:
        value = value.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    return value


def _parse_time(text: str) -> int:
    """TIME text ('-838:59:59.5') → signed microseconds."""
    negative = text.startswith("-")
    body = text[1:] if negative else text
    clock, _, fraction = body.partition(".")
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    value = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + (int(fraction[:6].ljust(6, "0")) if fraction else 0)
    return -value if negative else value


def _bits(value: int, width: int) -> bytes:
    return value.to_bytes(width, "big")


Converter = Callable[[str, bool], Any]


#: MySQL's DECIMAL has up to 65 digits (Python's default context, 28, would refuse a DECIMAL(30,4) value).
_DECIMAL_CONTEXT: Final = Context(prec=65)


def text_converter(column: ColumnInfo, *, time_zone: str = "UTC", mapping: TypeMapping = DEFAULT_TYPES) -> Converter:
    """Function (canonical text, is_base64) → the typed Python value of ``column`` (for Arrow)."""
    kind = column_arrow_type(column, mapping)
    code = column.type_code
    if _is_boolean(column, mapping):
        return lambda text, _b: int(text) != 0
    if _is_unsigned_bigint(column):
        return lambda text, _b: _uint64(text)
    if code in _INT_TYPES or code == _T.YEAR:
        return lambda text, _b: int(text)
    if code in (_T.FLOAT, _T.DOUBLE):
        return lambda text, _b: float(text)
    if code in DECIMAL_TYPES:
        if pa.types.is_decimal(kind):
            quantum = Decimal(1).scaleb(-kind.scale)

            def decimal_value(text: str, _b: bool) -> Decimal:
                value = Decimal(text)
                exact = value.quantize(quantum, context=_DECIMAL_CONTEXT)
                if exact != value or len(exact.as_tuple().digits) > kind.precision:
                    raise ValueError(f"{text!r} does not fit decimal({kind.precision},{kind.scale})")
                return exact
            return decimal_value
        return lambda text, _b: text
    if code in (_T.DATE, _T.NEWDATE):
        return lambda text, _b: _parse_date(text)
    if code == _T.DATETIME:
        return lambda text, _b: _parse_datetime(text)
    if code == _T.TIMESTAMP:
        zone = load_zone(time_zone)

        def instant(text: str, _b: bool) -> dt.datetime | None:
            local = _parse_datetime(text)
            return None if local is None else local.replace(tzinfo=zone).astimezone(_UTC)
        return instant
    if code == _T.TIME:
        if mapping.time_as == "string":
            return lambda text, _b: text
        return lambda text, _b: _parse_time(text)
    if code in STRING_TYPES or code == _T.GEOMETRY:
        if pa.types.is_binary(kind):
            return lambda text, is_b64: base64.b64decode(text) if is_b64 else text.encode("utf-8")
        # Text columns are UTF-8; invalid bytes (carried as base64) become U+FFFD in a string column.
        return lambda text, is_b64: base64.b64decode(text).decode("utf-8", "replace") if is_b64 else text
    if code == _T.BIT:
        width = (column.flen + 7) // 8 if column.flen > 0 else 8
        return lambda text, _b: _bits(int(text), width)
    if code == _T.ENUM:
        members = column.elems or ()
        if not members:
            return lambda text, _b: text

        def enum_name(text: str, _b: bool) -> str:
            index = int(text)
            return members[index - 1] if 0 < index <= len(members) else ""
        return enum_name
    if code == _T.SET:
        members = column.elems or ()
        if not members:
            return lambda text, _b: text

        def set_names(text: str, _b: bool) -> str:
            mask = int(text)
            return ",".join(m for i, m in enumerate(members) if mask >> i & 1)
        return set_names
    if code == _T.TIDB_VECTOR:
        return lambda text, _b: [float(v) for v in orjson.loads(text)]
    return lambda text, _b: text


# --------------------------------------------------------------------------- projection
def _column(batch: pa.RecordBatch | pa.Table, name: str) -> list[Any]:
    if name not in batch.schema.names:
        return [None] * batch.num_rows
    values: list[Any] = batch.column(name).to_pylist()
    return values


#: An image as :func:`typed_arrays` reads it: column name → canonical text (None: NULL or absent).
Texts = Mapping[str, "str | None"]
_NO_MARKS: Final[frozenset[str]] = frozenset()


def _plain_column(column: ColumnInfo, convert: Converter,
                  mapping: TypeMapping) -> Callable[[list[str | None]], list[Any]]:
    """Converts a whole column of texts none of which is base64 (the same values ``convert`` gives)."""
    code = column.type_code
    if _is_boolean(column, mapping):
        return lambda texts: [None if t is None else convert(t, False) for t in texts]
    if _is_unsigned_bigint(column):
        return lambda texts: [None if t is None else _uint64(t) for t in texts]
    if code in _INT_TYPES or code == _T.YEAR:
        return lambda texts: [None if t is None else int(t) for t in texts]
    if code == _T.DATETIME:
        return lambda texts: [None if t is None else _parse_datetime(t) for t in texts]
    if code in STRING_TYPES or code == _T.GEOMETRY:
        if pa.types.is_binary(column_arrow_type(column, mapping)):
            return lambda texts: [None if t is None else t.encode("utf-8") for t in texts]
        return lambda texts: texts
    return lambda texts: [None if t is None else convert(t, False) for t in texts]


#: DATETIME text Arrow's cast reads exactly as :func:`_parse_datetime`: the canonical form of a valid calendar
#: field range (a day past its month's end fails the cast) from year 1, at most microseconds.
_DATETIME_TEXT: Final = (r"^(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:0[1-9]|1[0-2])-"
                         r"(?:0[1-9]|[12][0-9]|3[01]) (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?$")


def _arrow_column(column: ColumnInfo, kind: pa.DataType, texts: list[str | None], mapping: TypeMapping,
                  convert: Converter) -> pa.Array | None:
    """Fast path of a column none of whose texts is base64: Arrow's casts over the whole column.

    Declines (None, or a cast's ArrowInvalid) what it does not read exactly as the reference
    (:func:`_plain_column`), which then converts the column and alone reports bad values.
    """
    del convert  # the reference's
    code = column.type_code
    if _is_boolean(column, mapping) or _is_unsigned_bigint(column):
        return None
    if (code in _INT_TYPES or code == _T.YEAR) and pa.types.is_integer(kind):
        return pc.cast(pa.array(texts, pa.string()), pa.int64()).cast(kind)
    if code == _T.DATETIME and kind == pa.timestamp("us"):
        strings = pa.array(texts, pa.string())
        if pc.any(pc.invert(pc.match_substring_regex(strings, _DATETIME_TEXT))).as_py():
            return None
        return pc.cast(strings, kind)
    if code in DECIMAL_TYPES and pa.types.is_decimal(kind):
        return pc.cast(pa.array(texts, pa.string()), kind)
    return None


def _reference_column(column: ColumnInfo, kind: pa.DataType, texts: list[str | None], mapping: TypeMapping,
                      convert: Converter) -> list[Any]:
    del kind
    return _plain_column(column, convert, mapping)(texts)


def _conversion_error(table_info: TableInfo, name: str, text: str, exc: BaseException,
                      mapping: TypeMapping) -> ValueError:
    return ValueError(f"{table_info.qualified_name}.{name}: cannot read {text!r} as "
                      f"{column_arrow_type(table_info.columns[table_info.column_index[name]], mapping)}: {exc}")


def typed_arrays(
    images: Sequence[Texts], marks: Sequence[Collection[str]], table_info: TableInfo, *, time_zone: str = "UTC",
    mapping: TypeMapping = DEFAULT_TYPES, fast: bool = True,
) -> dict[str, pa.Array]:
    """Typed Arrow columns of ``table_info`` from row images as canonical texts (one per row).

    ``marks`` holds, per row, the names whose text is base64 (the ``base64_columns`` of a decoded
    event). Columns missing from an image are null. A text that does not convert raises ValueError
    naming the first such value in row order. ``fast=False``: the reference conversion only (the fast
    path, Arrow's casts over whole columns, is checked against it).
    """
    converters = {c.name: text_converter(c, time_zone=time_zone, mapping=mapping) for c in table_info.columns}
    marked_anywhere: set[str] = set()
    for marked in marks:
        if marked:
            marked_anywhere.update(marked)
    values: dict[str, list[Any] | pa.Array] = {}
    try:
        for column in table_info.columns:
            name = column.name
            convert = converters[name]
            texts = [image.get(name) for image in images]
            if name in marked_anywhere:
                values[name] = [None if text is None else convert(text, name in marked)
                                for text, marked in zip(texts, marks)]
            elif fast:
                values[name] = speculate(_arrow_column, _reference_column, column,
                                         column_arrow_type(column, mapping), texts, mapping, convert)
            else:
                values[name] = _plain_column(column, convert, mapping)(texts)
    except (ValueError, InvalidOperation, ArithmeticError):
        # Column by column found a bad value: find the first one in row order, the one to report.
        for image, marked in zip(images, marks):
            for name, convert in converters.items():
                text = image.get(name)
                if text is None:
                    continue
                try:
                    convert(text, name in marked)
                except (ValueError, InvalidOperation, ArithmeticError) as exc:
                    raise _conversion_error(table_info, name, text, exc, mapping) from None
        raise
    arrays: dict[str, pa.Array] = {}
    for column in table_info.columns:
        kind = column_arrow_type(column, mapping)
        converted = values[column.name]
        if isinstance(converted, pa.Array):
            arrays[column.name] = converted
            continue
        try:
            arrays[column.name] = pa.array(converted, kind)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise ValueError(f"{table_info.qualified_name}.{column.name}: values do not fit {kind}: "
                             f"{exc}") from None
    return arrays


def project_rows(
    events: pa.RecordBatch | pa.Table, table_info: TableInfo, *, image: str = "current", time_zone: str = "UTC",
    mapping: TypeMapping = DEFAULT_TYPES,
) -> pa.RecordBatch:
    """Typed rows of one table from decoded-event rows (``kind = 'row'`` of that table).

    ``image``: ``current`` (post-image; a delete's pre-image), ``post`` or ``pre``. ``time_zone`` is the
    changefeed ``time-zone`` TIMESTAMP text is printed in. Columns missing from an image are null.
    ``mapping``: the type-mapping options (default :data:`DEFAULT_TYPES`).
    """
    if image not in IMAGES:
        raise ConfigError(f"image must be one of {', '.join(IMAGES)}, got {image!r}")
    schema = table_arrow_schema(table_info, mapping)
    posts = _column(events, "columns")
    pres = _column(events, "pre_columns")
    images: list[Texts] = []
    for post, pre in zip(posts, pres):
        chosen = pre if image == "pre" else post if image == "post" else (post if post is not None else pre)
        images.append(dict(chosen) if chosen else {})
    marks = [frozenset(encoded) if encoded else _NO_MARKS for encoded in _column(events, "base64_columns")]
    typed = typed_arrays(images, marks, table_info, time_zone=time_zone, mapping=mapping)
    arrays: list[pa.Array] = [
        pa.array(_column(events, "op"), pa.string()),
        pa.array(_column(events, "commit_ts"), pa.decimal128(20, 0)),
        pa.array(_column(events, "topic"), pa.string()),
        pa.array(_column(events, "partition"), pa.int32()),
        pa.array(_column(events, "offset"), pa.int64()),
        pa.array(_column(events, "event_index"), pa.int32()),
        pa.array(_column(events, "handle_key_only"), pa.bool_()),
    ]
    arrays += [typed[c.name] for c in table_info.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def project_table(
    batches: Sequence[pa.RecordBatch], table_info: TableInfo, **options: Any,
) -> pa.Table:
    """:func:`project_rows` over several batches, as one Arrow table."""
    schema = table_arrow_schema(table_info, options.get("mapping", DEFAULT_TYPES))
    return pa.Table.from_batches([project_rows(b, table_info, **options) for b in batches], schema=schema)

