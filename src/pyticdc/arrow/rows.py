"""Kafka records → decoded change-event rows as Arrow batches (pure, no JVM; pyarrow only for the batches).

This is the body of every Spark decode path (the ``pyticdc`` data source and ``mapInArrow`` over a
Kafka DataFrame) and of ``pyticdc decode``: one event per row, with these columns
(:data:`EVENT_COLUMNS`, Spark type in brackets):

=====================  ===================  =======================================================
column                 type                 meaning
=====================  ===================  =======================================================
topic, partition,      string, int,         where the Kafka record is
offset                 bigint
kafka_timestamp        timestamp            the record's Kafka timestamp (UTC instant); null if none
event_index            int                  position of the event among the record's events
                                            (Open/Craft batch several rows in one record)
kind                   string               ``row`` | ``ddl`` | ``watermark`` | ``bootstrap`` |
                                            ``error`` (a record that failed to decode)
op                     string               ``insert`` | ``update`` | ``delete`` (rows only)
schema, table          string               database and table name
table_id,              bigint               logical and physical (partition) table id; 0 unknown
physical_table_id
commit_ts              decimal(20,0)        TSO of the change; a watermark's resolved ts
schema_version         decimal(20,0)        TiDB schema version (UpdateTS) where carried
columns, pre_columns   map<string,string>   post- and pre-image as canonical text (below)
base64_columns         array<string>        names whose text in the images is base64
handle_key_only        boolean              the images hold only the handle-key columns
ddl_query              string               DDL statement
ddl_type,              string, int          TiDB ActionType name in lower case (``create_table``; null
ddl_type_code                               for a code pyticdc does not know) and its code (``3``)
table_info,            string               the TableInfo as JSON (defaults omitted); read back with
pre_table_info                              :func:`parse_table_info`
reason                 string               why the record failed (``kind = 'error'`` only)
raw_key, raw_value     binary               the undecodable record's bytes (``error`` only)
=====================  ===================  =======================================================

The names, and the type of every column both have, are those of ``pyticdc decode``'s event JSON
(:mod:`pyticdc.io.eventjson`, ``docs/event-json.md``): the same event reads the same in a Spark table
and in a decode output line. What differs is only how images are written (here canonical text in a
``map<string,string>`` with ``base64_columns``, there typed JSON values) and the schema (here
``table_info`` JSON, there ``table_columns``). The quarantine tables (:data:`QUARANTINE_COLUMNS`, the
Spark sink's and the replica's) hold an error row's ``topic``, ``partition``, ``offset``,
``kafka_timestamp`` and ``reason``, with the protocol and the bytes as ``protocol``, ``key``, ``value``.

Why ``decimal(20,0)`` for TSOs: TiCDC carries ``commit_ts`` as a uint64. Spark has no unsigned
64-bit type; ``bigint`` would wrap values >= 2**63 negative and ``double`` rounds above 2**53
(a TSO is ~2**58: adjacent commits would collide). ``decimal(20,0)`` holds every uint64 exactly,
sorts numerically and compares with integer literals.

Canonical text of a value (lossless, so the typed projection in :mod:`pyticdc.arrow.types` can
rebuild every value): integers (incl. BIGINT UNSIGNED, ENUM index, SET/BIT bitmask) as decimal
digits; FLOAT and DOUBLE as Python ``repr`` of the value (a FLOAT's float32 widened to a double:
``1.2339999675750732``, as TiCDC's Canal-JSON prints it; it reads back to the same float32); DECIMAL,
date/time, JSON and VECTOR as TiDB prints them; text-charset strings as UTF-8 text; binary-charset
strings (and text that is not valid UTF-8) as standard base64, listed in ``base64_columns``; SQL NULL as
a null map value (a column absent from the map was not sent, e.g. ``only-output-updated-columns``).

Stateful protocols (Simple learns table schemas from BOOTSTRAP and DDL messages) are decoded with one
decoder per Kafka partition, fed in offset order. A Simple row whose schema has not arrived yet is
held and emitted, typed and with its own offset, as soon as the schema arrives in that partition. Rows
still waiting at the end of the range make the reader look back in the partition (``lookback``: the
Kafka source reads earlier offsets, newest first, for the BOOTSTRAP/DDL it needs); rows whose schema is
nowhere to be found are emitted as ``error`` rows (raw bytes kept, so they can be replayed) rather than
with untyped values. Decoders also survive between ranges in one Python worker (Spark reuses workers),
which spares the look-back when the next micro-batch of a partition lands in the same worker.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import functools
import gc
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec
import orjson

from pyticdc.codec import canonical_protocol, codec_module, make_decoder
from pyticdc.codec._fastpath import native
from pyticdc.codec.base import BaseDecoder, ClaimCheckStore
from pyticdc.errors import DecodeError
from pyticdc.io.eventjson import ddl_type_name
from pyticdc.model import Bootstrap, DDLEvent, Event, KafkaRecord, Row, RowChange, TableInfo, TypeCode, Watermark
from pyticdc.mysql import STRING_TYPES

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "EVENT_COLUMNS",
    "QUARANTINE_COLUMNS",
    "EventRowBuilder",
    "PartitionDecoder",
    "RecordDecoder",
    "collector_paused",
    "decode_kafka_batches",
    "decode_records",
    "event_arrow_schema",
    "event_dicts",
    "parse_table_info",
    "quarantine_arrow_schema",
    "row_dict",
    "row_images",
    "row_images_json",
    "row_json",
    "row_text",
    "table_info_json",
]

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

#: The decoded-event column names, in order (their Arrow types: :data:`EVENT_COLUMNS`).
EVENT_NAMES: Final = (
    "topic", "partition", "offset", "kafka_timestamp", "event_index", "kind", "op", "schema", "table", "table_id",
    "physical_table_id", "commit_ts", "schema_version", "columns", "pre_columns", "base64_columns",
    "handle_key_only", "ddl_query", "ddl_type", "ddl_type_code", "table_info", "pre_table_info", "reason", "raw_key",
    "raw_value",
)
_MAP_COLUMNS: Final = frozenset({"columns", "pre_columns"})

#: The decoded-event columns and their Arrow types (Spark's own Arrow mapping of the event schema); built on
#: first use, so decoding to row tuples (``pyticdc decode``) works without pyarrow.
EVENT_COLUMNS: tuple[tuple[str, pa.DataType], ...]


@functools.cache
def _event_columns() -> tuple[tuple[str, pa.DataType], ...]:
    import pyarrow as pa

    text_map, tso = pa.map_(pa.string(), pa.string()), pa.decimal128(20, 0)
    types = {
        "topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(),
        "kafka_timestamp": pa.timestamp("us", tz="UTC"), "event_index": pa.int32(), "kind": pa.string(),
        "op": pa.string(), "schema": pa.string(), "table": pa.string(), "table_id": pa.int64(),
        "physical_table_id": pa.int64(), "commit_ts": tso, "schema_version": tso, "columns": text_map,
        "pre_columns": text_map, "base64_columns": pa.list_(pa.field("element", pa.string())),
        "handle_key_only": pa.bool_(), "ddl_query": pa.string(), "ddl_type": pa.string(), "ddl_type_code": pa.int32(),
        "table_info": pa.string(), "pre_table_info": pa.string(), "reason": pa.string(), "raw_key": pa.binary(),
        "raw_value": pa.binary(),
    }
    return tuple((name, types[name]) for name in EVENT_NAMES)


@functools.cache
def _quarantine_columns() -> tuple[tuple[str, pa.DataType], ...]:
    types = dict(_event_columns())
    import pyarrow as pa

    return (("topic", types["topic"]), ("partition", types["partition"]), ("offset", types["offset"]),
            ("kafka_timestamp", types["kafka_timestamp"]), ("protocol", pa.string()), ("reason", types["reason"]),
            ("key", pa.binary()), ("value", pa.binary()))


def __getattr__(name: str) -> Any:
    if name == "EVENT_COLUMNS":
        return _event_columns()
    if name == "QUARANTINE_COLUMNS":
        return _quarantine_columns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The columns of a quarantine table, the Spark sink's and the replica's (``_pyticdc/quarantine``): where the record
#: was, when, the protocol it failed to decode in, why, and its bytes (built on first use, as EVENT_COLUMNS).
QUARANTINE_COLUMNS: tuple[tuple[str, pa.DataType], ...]


def quarantine_arrow_schema() -> pa.Schema:
    """The Arrow schema of the quarantine tables."""
    import pyarrow as pa

    return pa.schema([pa.field(name, kind) for name, kind in _quarantine_columns()])


def event_arrow_schema() -> pa.Schema:
    """The Arrow schema of decoded-event batches."""
    import pyarrow as pa

    return pa.schema([pa.field(name, kind) for name, kind in _event_columns()])


# --------------------------------------------------------------------------- table info JSON
_DEFAULTS: dict[type, dict[str, Any]] = {}


def _compact(value: Any) -> Any:
    # Drop fields equal to their default: a 9-column TableInfo shrinks from ~2.4 kB to ~0.9 kB.
    if isinstance(value, msgspec.Struct):
        kind = type(value)
        defaults = _DEFAULTS.get(kind)
        if defaults is None:
            info = msgspec.inspect.type_info(kind)
            assert isinstance(info, msgspec.inspect.StructType)
            defaults = _DEFAULTS[kind] = {
                f.name: f.default for f in info.fields if f.default is not msgspec.NODEFAULT
            }
        out = {}
        for name in kind.__struct_fields__:
            item = getattr(value, name)
            if name in defaults and item == defaults[name]:
                continue
            out[name] = _compact(item)
        return out
    if isinstance(value, tuple):
        return [_compact(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # IntFlag / IntEnum → plain int
    return value


def table_info_json(table_info: TableInfo) -> str:
    """``table_info`` as compact JSON (fields at their default omitted)."""
    return msgspec.json.encode(_compact(table_info)).decode()


def parse_table_info(text: str | bytes) -> TableInfo:
    """A TableInfo from :func:`table_info_json` text."""
    return msgspec.json.decode(text, type=TableInfo)


# --------------------------------------------------------------------------- canonical text
@dataclass(frozen=True)
class _TableText:
    """What rendering a table's rows needs, computed once per distinct TableInfo."""

    binary: frozenset[str]
    json: str


def _is_binary(column: Any) -> bool:
    code: int = column.type_code
    return (code in STRING_TYPES and column.charset == "binary") or code == TypeCode.GEOMETRY


_BY_ID: dict[int, tuple[TableInfo, _TableText]] = {}
_BY_VALUE: dict[TableInfo, _TableText] = {}
_CACHE_LIMIT: Final = 4096


def _table_text(table_info: TableInfo) -> _TableText:
    hit = _BY_ID.get(id(table_info))
    if hit is not None and hit[0] is table_info:
        return hit[1]
    text = _BY_VALUE.get(table_info)
    if text is None:
        if len(_BY_VALUE) >= _CACHE_LIMIT:
            _BY_VALUE.clear()
        text = _BY_VALUE[table_info] = _TableText(
            binary=frozenset(c.name for c in table_info.columns if _is_binary(c)),
            json=table_info_json(table_info),
        )
    if len(_BY_ID) >= _CACHE_LIMIT:
        _BY_ID.clear()
    # Keep the object itself so its id cannot be reused by another TableInfo while cached.
    _BY_ID[id(table_info)] = (table_info, text)
    return text


_NO_NAMES: Final[frozenset[str]] = frozenset()


def row_text(
    row: Row | Mapping[str, Any], binary: frozenset[str] = _NO_NAMES, base64_names: list[str] | None = None,
) -> tuple[list[str], list[str | None]]:
    """Keys and canonical texts of a row image; base64-rendered names are appended to ``base64_names``."""
    helpers = native()
    if helpers is not None and type(row) in _DICTS and type(binary) is frozenset:
        found: tuple[list[str], list[str | None]] = helpers.row_text(row, binary, base64_names)  # the same, in C
        return found
    return python_row_text(row, binary, base64_names)


#: Images the C row_text takes (any other mapping takes python_row_text).
_DICTS: Final = frozenset({Row, dict})


def python_row_text(
    row: Row | Mapping[str, Any], binary: frozenset[str] = _NO_NAMES, base64_names: list[str] | None = None,
) -> tuple[list[str], list[str | None]]:
    """``row_text`` in Python (the C helper's twin, and the one in use without it)."""
    keys = list(row)
    texts: list[str | None] = []
    add = texts.append
    for name, value in row.items():
        kind = type(value)
        if kind is str or value is None:
            add(value)
        elif kind is int:
            add(str(value))
        elif kind is float:
            add(repr(value))
        elif kind is bytes or kind is bytearray or kind is memoryview:
            data = bytes(value)
            if name not in binary:
                try:
                    add(data.decode("utf-8"))
                    continue
                except UnicodeDecodeError:
                    pass
            add(base64.b64encode(data).decode("ascii"))
            if base64_names is not None and name not in base64_names:
                base64_names.append(name)
        else:
            add(str(value))
    return keys, texts


_Image = tuple[list[str], list["str | None"]]


def row_images(event: RowChange) -> tuple[_Image | None, _Image | None, list[str]]:
    """A row change's post- and pre-image as (keys, canonical texts), and the names either renders as base64.

    Exactly what :class:`EventRowBuilder` puts in ``columns``, ``pre_columns`` and ``base64_columns``.
    """
    return _rendered_images(event, row_text)


_Rendered = TypeVar("_Rendered")


def _rendered_images(event: RowChange, render: Callable[[Row, frozenset[str], list[str]], _Rendered]) -> tuple[
        _Rendered | None, _Rendered | None, list[str]]:
    # Post- and pre-image by ``render`` (row_text or row_json), the names either renders as base64.
    info = event.table_info
    binary = _table_text(info).binary if info is not None else _NO_NAMES
    names: list[str] = []
    post = None if event.columns is None else render(event.columns, binary, names)
    pre = None if event.pre_columns is None else render(event.pre_columns, binary, names)
    return post, pre, names


def row_json(
    row: Row | Mapping[str, Any], binary: frozenset[str] = _NO_NAMES, base64_names: list[str] | None = None,
) -> str:
    """A row image's canonical texts (``row_text``'s) as one JSON object text ``{name: text or null}``."""
    helpers = native()
    if helpers is not None and type(row) in _DICTS and type(binary) is frozenset:
        found: str | None = helpers.row_json(row, binary, base64_names)  # the same, in C; None: a decline
        if found is not None:
            return found
    keys, texts = python_row_text(row, binary, base64_names)
    return orjson.dumps(dict(zip(keys, texts))).decode()


def row_images_json(event: RowChange) -> tuple[str | None, str | None, list[str]]:
    """``row_images`` with each image as its JSON object text (``row_json``)."""
    return _rendered_images(event, row_json)


# --------------------------------------------------------------------------- row building


class EventRowBuilder:
    """Accumulates event rows (tuples in EVENT_COLUMNS order) and turns them into Arrow batches."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        # The table of the last row change and what rendering it needs: a batch's rows mostly repeat a few tables.
        self._last_info: TableInfo | None = None
        self._last_text = _TableText(binary=_NO_NAMES, json="")

    def __len__(self) -> int:
        return len(self.rows)

    def add_event(self, record: KafkaRecord, index: int, event: Event) -> None:
        """Append one decoded event of ``record``."""
        if isinstance(event, RowChange):
            self.rows.append(self._row_change(record, index, event))
            return
        head = (record.topic, record.partition, record.offset,
                record.timestamp_ms * 1000 if record.timestamp_ms else None, index)
        if isinstance(event, DDLEvent):
            info = event.table_info
            self.rows.append((
                *head, "ddl", None, event.schema, event.table, info.table_id if info else None,
                info.table_id if info else None, event.commit_ts, info.schema_version if info else None,
                None, None, None, None, event.query, ddl_type_name(event.ddl_type), int(event.ddl_type),
                _table_text(info).json if info else None,
                _table_text(event.pre_table_info).json if event.pre_table_info else None, None, None, None))
        elif isinstance(event, Watermark):
            self.rows.append((*head, "watermark", None, None, None, None, None, event.resolved_ts, None, None, None,
                                     None, None, None, None, None, None, None, None, None, None))
        elif isinstance(event, Bootstrap):
            info = event.table_info
            self.rows.append((*head, "bootstrap", None, info.schema, info.table, info.table_id, info.table_id, None,
                                     info.schema_version, None, None, None, None, None, None, None,
                                     _table_text(info).json, None, None, None, None))
        else:
            raise TypeError(f"not an event: {type(event).__name__}")

    def _row_change(self, record: KafkaRecord, index: int, event: RowChange) -> tuple[Any, ...]:
        info = event.table_info
        if info is None:
            binary: frozenset[str] = _NO_NAMES
            info_json = None
        else:
            if info is not self._last_info:
                self._last_text = _table_text(info)
                self._last_info = info
            binary, info_json = self._last_text.binary, self._last_text.json
        names: list[str] = []
        columns, pre_columns = event.columns, event.pre_columns
        post = None if columns is None else row_text(columns, binary, names)
        pre = None if pre_columns is None else row_text(pre_columns, binary, names)
        schema_version = event.schema_version or (info.schema_version if info else 0)
        timestamp = record.timestamp_ms
        return (record.topic, record.partition, record.offset, timestamp * 1000 if timestamp else None, index,
                "row", event.op._value_, event.schema, event.table, event.table_id, event.physical_table_id,
                event.commit_ts, schema_version or None, post, pre, names or None, event.handle_key_only, None, None,
                None, info_json, None, None, None, None)

    def add_error(self, record: KafkaRecord, reason: str) -> None:
        """Append an ``error`` row for a record that failed to decode, keeping its raw bytes."""
        self.rows.append((record.topic, record.partition, record.offset,
                          record.timestamp_ms * 1000 if record.timestamp_ms else None, 0, "error",
                          None, None, None, None, None, None, None, None, None, None, None, None, None, None, None,
                          None, reason, record.key, record.value))

    def to_batch(self) -> pa.RecordBatch:
        """The accumulated rows as one Arrow batch (the builder is emptied)."""
        import pyarrow as pa

        rows, self.rows = self.rows, []
        columns = list(zip(*rows)) if rows else [()] * len(EVENT_NAMES)
        arrays = []
        for (name, kind), values in zip(_event_columns(), columns):
            if name in _MAP_COLUMNS:
                arrays.append(_map_array(values, kind))
            else:
                arrays.append(pa.array(values, kind))
        return pa.RecordBatch.from_arrays(arrays, schema=event_arrow_schema())


def _map_array(images: Sequence[_Image | None], kind: pa.DataType) -> pa.Array:
    import pyarrow as pa

    offsets = [0]
    keys: list[str] = []
    items: list[str | None] = []
    mask: list[bool] = []
    # Bound methods: this loop runs once per image of a batch.
    add_offset, add_mask, add_keys, add_items = offsets.append, mask.append, keys.extend, items.extend
    for image in images:
        if image is None:
            add_mask(True)
        else:
            add_mask(False)
            add_keys(image[0])
            add_items(image[1])
        add_offset(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(items, pa.string()),
        type=kind, mask=pa.array(mask, pa.bool_()))


def row_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    """One built event row as a JSON-ready dict: DataFrame field names, images as objects, bytes as base64,
    ``kafka_timestamp`` as ISO-8601 UTC text; TSOs stay integers (exact in JSON text)."""
    item = dict(zip(EVENT_NAMES, row))
    for name in _MAP_COLUMNS:
        image = item[name]
        item[name] = None if image is None else dict(zip(image[0], image[1]))
    micros = item["kafka_timestamp"]
    if micros is not None:
        item["kafka_timestamp"] = (_EPOCH + dt.timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")
    for name in ("raw_key", "raw_value"):
        if item[name] is not None:
            item[name] = base64.b64encode(item[name]).decode("ascii")
    return item


def event_dicts(record: KafkaRecord, events: Sequence[Event]) -> list[dict[str, Any]]:
    """The events of one record as :func:`row_dict` dicts."""
    builder = EventRowBuilder()
    for index, event in enumerate(events):
        builder.add_event(record, index, event)
    return [row_dict(row) for row in builder.rows]


# --------------------------------------------------------------------------- decoding
@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector paused for the block (when it is on); for decoding one bounded batch."""
    # A decoded event allocates dozens of objects and none of them form cycles, yet every young-generation
    # pass traverses them all: about 15% of a decode's time. Callers pause it for one batch at a time, so
    # any cycle made meanwhile is collected right after, and never across a yield.
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _claim_check(options: Mapping[str, Any]) -> ClaimCheckStore | None:
    def get(name: str) -> Any:
        return options.get(name, options.get(name.replace("-", "_")))

    uri = get("claim-check-storage-uri")
    if get("large-message-handle-option") != "claim-check" or not uri:
        return None
    from pyticdc.routing import claim_check_store

    raw = get("claim-check-raw-value")
    store: ClaimCheckStore = claim_check_store(str(uri), raw_value=raw is True or str(raw).lower() == "true")
    return store


def new_decoder(protocol: str, options: Mapping[str, Any] | None = None) -> BaseDecoder:
    """A decoder for ``protocol`` with TiCDC-named ``options``, with claim-check storage when configured.

    A decoder that can hold rows until their schema arrives (Simple) is asked not to: PartitionDecoder
    holds them itself so each row keeps the offset of the record it came in.
    """
    options = dict(options or {})
    extra: dict[str, Any] = {}
    if "hold_unknown_schema" in inspect.signature(codec_module(protocol).Decoder.__init__).parameters:
        extra["hold_unknown_schema"] = False
    return make_decoder(protocol, options, claim_check=_claim_check(options), **extra)


@dataclass
class _Held:
    record: KafkaRecord
    index: int
    row: RowChange


@dataclass
class PartitionDecoder:
    """One decoder for one Kafka partition, fed in offset order; holds rows waiting for their schema."""

    protocol: str
    decoder: BaseDecoder
    #: Offset the next record should have (-1: unknown), so a cached decoder is reused only in sequence.
    next_offset: int = -1
    held: list[_Held] = field(default_factory=list)

    def decode(self, record: KafkaRecord, out: EventRowBuilder) -> None:
        """Decode one record into ``out``; a failure becomes an ``error`` row, never an exception."""
        self.next_offset = record.offset + 1 if record.offset >= 0 else -1
        try:
            events = self.decoder.decode(record.value, record.key)
        except DecodeError as exc:
            out.add_error(record, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - one bad record must never stop the job
            out.add_error(record, f"{self.protocol}: {type(exc).__name__}: {exc}")
            return
        learned = False
        for index, event in enumerate(events):
            if isinstance(event, RowChange) and event.table_info is None and _resolvable(self.decoder):
                self.held.append(_Held(record, index, event))
                continue
            learned = learned or isinstance(event, (DDLEvent, Bootstrap))
            out.add_event(record, index, event)
        if learned and self.held:
            self._release(out)

    def _release(self, out: EventRowBuilder) -> None:
        resolve = codec_module(self.protocol).resolve_row
        still: list[_Held] = []
        for held in self.held:
            row = held.row
            table = self.decoder.table(row.schema, row.table, row.schema_version)  # type: ignore[attr-defined]
            if table is None:
                still.append(held)
                continue
            try:
                out.add_event(held.record, held.index, resolve(row, table))
            except DecodeError as exc:
                out.add_error(held.record, str(exc))
        self.held = still

    def learn(self, records: Iterable[KafkaRecord], out: EventRowBuilder) -> None:
        """Feed earlier records of the partition to learn schemas (their events are dropped); release rows."""
        for record in records:
            try:
                self.decoder.decode(record.value, record.key)
            except Exception:  # noqa: BLE001 - only schemas matter here; the record was decoded in its own range
                continue
        if self.held:
            self._release(out)

    def finish(self, out: EventRowBuilder) -> None:
        """Emit rows still waiting for a schema as ``error`` rows (their raw bytes are kept)."""
        seen: set[tuple[int, int]] = set()
        for held in self.held:
            key = (held.record.partition, held.record.offset)
            if key in seen:
                continue  # several held rows of one record: quarantine the record once
            seen.add(key)
            row = held.row
            out.add_error(held.record, f"{self.protocol}: schema of {row.schema}.{row.table} version "
                                       f"{row.schema_version} not received before the end of the range "
                                       "(no BOOTSTRAP or DDL for it in this partition)")
        self.held = []


def _resolvable(decoder: BaseDecoder) -> bool:
    return hasattr(decoder, "table")


#: Decoders kept between ranges in this process: (decoder key, topic, partition) → PartitionDecoder.
_DECODERS: dict[tuple[str, str, int], PartitionDecoder] = {}
_DECODER_LIMIT: Final = 1024


def _decoder_key(protocol: str, options: Mapping[str, Any]) -> str:
    return canonical_protocol(protocol) + repr(sorted((str(k), str(v)) for k, v in options.items()))


#: (topic, partition, before_offset) → chunks of the partition's earlier records, newest chunk first, each
#: chunk in offset order: where a stateful decoder looks for schemas it did not see in its range.
Lookback = Callable[[str, int, int], Iterable[Iterable[KafkaRecord]]]


class RecordDecoder:
    """Decodes records of any partitions into event batches, one PartitionDecoder per (topic, partition).

    ``lookback``: rows still waiting for their schema at the end of a range (a Simple stream resumed in
    another worker, or started at ``latest``) make the decoder read the partition backwards from the
    range start, chunk by chunk, until the BOOTSTRAP or DDL messages of their schemas are found.
    """

    def __init__(self, protocol: str, options: Mapping[str, Any] | None = None, *, batch_rows: int = 8192,
                 reuse: bool = True, lookback: Lookback | None = None) -> None:
        self.protocol = canonical_protocol(protocol)
        self.options = dict(options or {})
        self.batch_rows = batch_rows
        self.reuse = reuse
        self.lookback = lookback
        self._key = _decoder_key(self.protocol, self.options)
        self._partitions: dict[tuple[str, int], PartitionDecoder] = {}
        self._first_offsets: dict[tuple[str, int], int] = {}
        self.out = EventRowBuilder()

    def _partition(self, record: KafkaRecord) -> PartitionDecoder:
        tp = (record.topic, record.partition)
        current = self._partitions.get(tp)
        if current is not None:
            return current
        self._first_offsets[tp] = record.offset
        cached = _DECODERS.pop((self._key, tp[0], tp[1]), None) if self.reuse else None
        if cached is None or cached.next_offset != record.offset or record.offset < 0:
            cached = PartitionDecoder(self.protocol, new_decoder(self.protocol, self.options))
        self._partitions[tp] = cached
        return cached

    def decode(self, records: Iterable[KafkaRecord]) -> Iterator[pa.RecordBatch]:
        """Event batches of ``records`` (about ``batch_rows`` rows each); call :meth:`finish` after the last."""
        remaining = iter(records)
        while True:
            with collector_paused():
                exhausted = self._fill(remaining)
                batch = self.out.to_batch() if len(self.out) >= self.batch_rows else None
            if batch is not None:
                yield batch
            if exhausted:
                return

    def _fill(self, records: Iterator[KafkaRecord]) -> bool:
        """Decode records until a batch is full; True when ``records`` ran out."""
        out, limit = self.out, self.batch_rows
        for record in records:
            self._partition(record).decode(record, out)
            if len(out) >= limit:
                return False
        return True

    def add_error(self, record: KafkaRecord, reason: str) -> None:
        """Record an input problem (e.g. a malformed capture line) as an ``error`` row."""
        self.out.add_error(record, reason)

    def decode_rows(self, records: Iterable[KafkaRecord]) -> Iterator[tuple[Any, ...]]:
        """Like :meth:`decode` but yields built row tuples (EVENT_COLUMNS order) as soon as they exist."""
        out = self.out
        for record in records:
            self._partition(record).decode(record, out)
            if out.rows:
                rows, out.rows = out.rows, []
                yield from rows

    def finish_rows(self) -> Iterator[tuple[Any, ...]]:
        """Like :meth:`finish` but yields row tuples."""
        self._finish_partitions()
        rows, self.out.rows = self.out.rows, []
        yield from rows

    def _finish_partitions(self) -> None:
        """Flush held rows of every partition into the builder and park the decoders for reuse."""
        for tp, partition in self._partitions.items():
            first = self._first_offsets.get(tp, -1)
            if partition.held and self.lookback is not None and first > 0:
                for chunk in self.lookback(tp[0], tp[1], first):
                    partition.learn(chunk, self.out)
                    if not partition.held:
                        break
            partition.finish(self.out)
            if self.reuse:
                if len(_DECODERS) >= _DECODER_LIMIT:
                    _DECODERS.clear()
                _DECODERS[(self._key, tp[0], tp[1])] = partition
        self._partitions = {}
        self._first_offsets = {}

    def finish(self) -> Iterator[pa.RecordBatch]:
        """Flush held rows and the last partial batch; keep decoders for a following range."""
        self._finish_partitions()
        if len(self.out):
            yield self.out.to_batch()


def decode_records(
    records: Iterable[KafkaRecord], protocol: str, options: Mapping[str, Any] | None = None, *,
    batch_rows: int = 8192,
) -> Iterator[pa.RecordBatch]:
    """Decoded-event Arrow batches of ``records`` (in offset order per partition)."""
    decoder = RecordDecoder(protocol, options, batch_rows=batch_rows)
    yield from decoder.decode(records)
    yield from decoder.finish()


def kafka_batch_records(batch: pa.RecordBatch) -> Iterator[KafkaRecord]:
    """KafkaRecords of an Arrow batch with Spark's Kafka source columns (key, value, topic, ...)."""
    from pyticdc.io.capture import arrow_to_records

    return arrow_to_records(batch)


def decode_kafka_batches(
    batches: Iterable[pa.RecordBatch], protocol: str, options: Mapping[str, Any] | None = None, *,
    batch_rows: int = 8192, lookback: Lookback | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: Kafka-source Arrow batches in, decoded-event batches out."""
    decoder = RecordDecoder(protocol, options, batch_rows=batch_rows, lookback=lookback)
    for batch in batches:
        yield from decoder.decode(kafka_batch_records(batch))
    yield from decoder.finish()
