"""Changelog tables → TiCDC Kafka records: replaying a table of change events, locally or on Spark.

A *changelog table* has the decoded-event columns of :mod:`pyticdc.arrow.rows` (``kind``, ``op``,
``schema``, ``table``, ``commit_ts``, ``columns``/``pre_columns`` as canonical text, ``base64_columns``,
``table_info`` JSON, ``ddl_query``, ...): what ``spark.read.format("pyticdc")`` or ``pyticdc decode``
produce, so a decoded topic can be re-encoded, in another protocol or with other routing. Only
``kind``, ``commit_ts`` and, per kind, ``op``/``schema``/``table``/``columns``/``pre_columns``/
``table_info`` (rows) or ``ddl_query``/``ddl_type_code`` (DDL; ``ddl_type`` as a name or, in tables written
before it was a name, a code) are required; location columns are ignored. Quarantine rows (no ``kind``, a
``reason``) carry no change and are skipped. ``pyticdc decode``'s event-JSON objects (typed JSON values,
``table_columns``) are read by :class:`pyticdc.io.eventjson.EventJsonReader` instead.

Pure part (no Spark): :func:`event_from_row` turns one table row back into a model event (values typed by
the row's ``table_info``), :func:`order_changelog` puts events in commit order once each (a decoded
table holds every broadcast DDL and watermark once per partition).

Spark part (imports pyspark when called): :func:`write_changelog` encodes a DataFrame with a target
protocol and routing and writes the records to Kafka or to capture files; :class:`ChangelogWriter` is
the same as a Python Data Source writer: ``df.write.format("pyticdc")`` (the ``pyticdc`` data source
returns it from ``DataSource.writer``) of a DataFrame arranged by :func:`arrange_changelog`.

How Spark keeps TiCDC's order. Every Kafka partition is written by one Spark task: the rows are
assigned their target (topic, partition) first, DDL and watermark events are copied to every task
(TiCDC broadcasts them), and each task routes its events in commit order with its own router and
keeps only its partition's records. Routing is deterministic, so together the tasks write exactly what
one router over the whole table would.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import msgspec

from pyticdc.codec.jsontext import float32_round
from pyticdc.consumer import OP_RANK, change_identity
from pyticdc.errors import ChangelogError, ConfigError
from pyticdc.io.eventjson import EventJsonReader, ddl_type_code
from pyticdc.model import (
    ColumnInfo,
    DDLEvent,
    Event,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Value,
    Watermark,
)
from pyticdc.mysql import INTEGER_OR_YEAR_TYPES, STRING_TYPES, UINT64_TYPES

__all__ = [
    "TARGET_PARTITION",
    "TARGET_TOPIC",
    "ChangelogWriter",
    "WriterOptions",
    "arrange_changelog",
    "encode_changelog",
    "event_from_row",
    "events_from_rows",
    "is_event_json",
    "order_changelog",
    "row_targets",
    "target_records",
    "value_from_text",
    "write_changelog",
    "write_targets",
]

#: Type codes whose canonical text is an integer (ints, YEAR, BIT, ENUM index, SET bitmask).
_INT_CODES: Final = INTEGER_OR_YEAR_TYPES | UINT64_TYPES
#: Type codes whose model value is bytes (string types and GEOMETRY).
_BYTES_CODES: Final = STRING_TYPES | {TypeCode.GEOMETRY}


def value_from_text(text: str | None, column: ColumnInfo | None, base64_text: bool = False) -> Value:
    """A model value from its canonical text (the inverse of ``pyticdc.arrow.rows.row_text``)."""
    if text is None:
        return None
    if column is None:
        return base64.b64decode(text) if base64_text else text
    code = column.type_code
    if code in _BYTES_CODES:
        return base64.b64decode(text, validate=True) if base64_text else text.encode("utf-8")
    if code in _INT_CODES:
        return int(text)
    if code == TypeCode.FLOAT:
        return float32_round(float(text))
    if code == TypeCode.DOUBLE:
        return float(text)
    return text


def _int(value: Any, name: str, where: str) -> int:
    if value is None:
        raise ChangelogError(f"{where}: {name} is missing")
    try:
        if isinstance(value, Decimal):
            return int(value.to_integral_exact())
        return int(value)
    except (TypeError, ValueError, ArithmeticError):
        raise ChangelogError(f"{where}: {name} is not an integer: {value!r}") from None


_TABLES: dict[str, TableInfo] = {}


def _table_info(text: Any, where: str) -> TableInfo | None:
    if not text:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    info = _TABLES.get(text)
    if info is None:
        try:
            info = msgspec.json.decode(text, type=TableInfo)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ChangelogError(f"{where}: table_info is not a TableInfo JSON: {exc}") from None
        if len(_TABLES) > 4096:
            _TABLES.clear()
        _TABLES[text] = info
    return info


def _image(raw: Any, info: TableInfo | None, base64_names: frozenset[str], where: str) -> Row | None:
    if raw is None:
        return None
    # Arrow maps come back as [(key, value), ...], JSON images as objects.
    pairs = raw.items() if isinstance(raw, Mapping) else raw
    columns = info.column_by_name if info is not None else {}
    values: dict[str, Value] = {}
    for name, text in pairs:
        try:
            values[name] = value_from_text(text, columns.get(name), name in base64_names)
        except (ValueError, binascii.Error) as exc:
            raise ChangelogError(f"{where}: column {name!r}: {text!r:.60} is not valid: {exc}") from None
    return Row(values)


def event_from_row(row: Mapping[str, Any], where: str = "changelog row") -> Event | None:
    """The model event of one changelog row; None for kinds that carry no change (``bootstrap``, ``error``)."""
    kind = row.get("kind") or ("error" if _quarantined(row) else "row")
    if kind == "row":
        info = _table_info(row.get("table_info"), where)
        op_text = row.get("op")
        try:
            op = Op(op_text)
        except ValueError:
            raise ChangelogError(f"{where}: op must be insert, update or delete, got {op_text!r}") from None
        names = frozenset(row.get("base64_columns") or ())
        schema = row.get("schema") or (info.schema if info else "")
        table = row.get("table") or (info.table if info else "")
        if not schema or not table:
            raise ChangelogError(f"{where}: a row needs schema and table")
        columns = _image(row.get("columns"), info, names, where)
        pre = _image(row.get("pre_columns"), info, names, where)
        if columns is None and pre is None:
            raise ChangelogError(f"{where}: a row needs columns or pre_columns")
        table_id = int(row.get("table_id") or (info.table_id if info else 0))
        return RowChange(
            op=op, schema=schema, table=table, commit_ts=_int(row.get("commit_ts"), "commit_ts", where),
            columns=columns, pre_columns=pre, table_id=table_id,
            physical_table_id=int(row.get("physical_table_id") or table_id), table_info=info,
            handle_key_only=bool(row.get("handle_key_only")),
            schema_version=int(row.get("schema_version") or 0),
        )
    if kind == "ddl":
        query = row.get("ddl_query")
        if not query:
            raise ChangelogError(f"{where}: a DDL needs ddl_query")
        return DDLEvent(
            query=query, ddl_type=ddl_type_code(row),
            commit_ts=_int(row.get("commit_ts"), "commit_ts", where),
            schema=row.get("schema") or "", table=row.get("table") or "",
            table_info=_table_info(row.get("table_info"), where),
            pre_table_info=_table_info(row.get("pre_table_info"), where),
        )
    if kind == "watermark":
        return Watermark(resolved_ts=_int(row.get("commit_ts"), "commit_ts", where))
    if kind in ("bootstrap", "error"):
        return None
    raise ChangelogError(f"{where}: unknown kind {kind!r} (row, ddl, watermark, bootstrap, error)")


def _quarantined(row: Mapping[str, Any]) -> bool:
    # A quarantine table's row (no kind, no op, a reason): a record that did not decode, nothing to replay.
    return not row.get("op") and row.get("reason") is not None


def is_event_json(row: Mapping[str, Any]) -> bool:
    """Whether ``row`` is an event-JSON object (``pyticdc decode``'s output) rather than a changelog-table row."""
    return "source_protocol" in row or "table_columns" in row


def events_from_rows(rows: Iterable[Mapping[str, Any]]) -> Iterator[Event]:
    """The events of changelog rows, in row order: Spark changelog/decoded-event rows (:func:`event_from_row`),
    quarantine rows (skipped) or ``pyticdc decode``'s event-JSON objects (:class:`EventJsonReader`)."""
    reader = EventJsonReader()
    for index, row in enumerate(rows):
        where = f"changelog row {index}"
        event = reader.event(row, where) if is_event_json(row) else event_from_row(row, where)
        if event is not None:
            yield event


def _rank(event: Event) -> tuple[int, int]:
    if isinstance(event, RowChange):
        return (0, OP_RANK[event.op])
    return (1, 0) if isinstance(event, DDLEvent) else (2, 0)


def order_changelog(events: Iterable[Event]) -> list[Event]:
    """Events in commit order, each once: rows (deletes, updates, inserts), then DDL, then the watermark of a ts.

    Rows of one commit ts stay grouped by table, in their given order within an operation, so a
    DELETE+INSERT pair split from one UPDATE stays a pair. Duplicates (the same change, a DDL or watermark
    broadcast to several partitions) are kept once.
    """
    from pyticdc.consumer.stream import regroup_rows

    seen_rows: set[Any] = set()
    seen_other: set[Any] = set()
    keyed: list[tuple[int, tuple[int, int], int, Event]] = []
    for seq, event in enumerate(events):
        if isinstance(event, RowChange):
            identity = change_identity(event)
            if identity in seen_rows:
                continue
            seen_rows.add(identity)
            keyed.append((event.commit_ts, _rank(event), seq, event))
        elif isinstance(event, DDLEvent):
            key: Any = ("ddl", event.commit_ts, event.query)
            if key not in seen_other:
                seen_other.add(key)
                keyed.append((event.commit_ts, _rank(event), seq, event))
        elif isinstance(event, Watermark):
            key = ("watermark", event.resolved_ts)
            if key not in seen_other:
                seen_other.add(key)
                keyed.append((event.resolved_ts, _rank(event), seq, event))
    keyed.sort(key=lambda item: item[:3])
    out: list[Event] = []
    rows: list[RowChange] = []
    for _, _, _, event in keyed:
        if isinstance(event, RowChange):
            rows.append(event)
            continue
        out.extend(regroup_rows(rows))
        rows = []
        out.append(event)
    out.extend(regroup_rows(rows))
    return out


def encode_changelog(
    events: Iterable[Event], protocol: str, options: Mapping[str, Any] | None = None, *, default_topic: str,
    rules: Sequence[Any] = (), partitions: int | Mapping[str, int] = 3, interval_ms: int | None = 1000,
    clock: Any = None, only: Iterable[tuple[str, int]] | None = None,
) -> Iterator[KafkaRecord]:
    """Kafka records for ordered changelog events (Simple gets its BOOTSTRAPs; watermarks every ``interval_ms``).

    ``interval_ms`` None keeps the changelog's own watermarks. ``only`` keeps the records of these
    (topic, partition) pairs (one Spark task's share).
    """
    from pyticdc.routing import Router
    from pyticdc.routing.stream import place_watermarks, route_stream, with_bootstraps

    router = Router(protocol, options, default_topic=default_topic, rules=rules, partitions=partitions, clock=clock)
    stream: Iterable[Event] = events
    if interval_ms is not None:
        stream = place_watermarks(stream, interval_ms)
    if router.protocol == "simple":
        stream = with_bootstraps(stream)
    wanted = set(only) if only is not None else None
    for record in route_stream(router, stream):
        if wanted is None or (record.topic, record.partition) in wanted:
            yield record


# --------------------------------------------------------------------------- writer options
#: Columns ``arrange_changelog`` adds: the target topic and partition of each row.
TARGET_TOPIC: Final = "_pyticdc_topic"
TARGET_PARTITION: Final = "_pyticdc_partition"


@dataclass(frozen=True)
class WriterOptions:
    """Options of the changelog writer (Spark ``.option(name, value)`` names, all strings there).

    ``protocol`` (required); any TiCDC codec option by its TiCDC name (``enable-tidb-extension``, ...);
    ``topic`` (default ``ticdc``; a topic expression becomes a catch-all dispatch rule), ``default-topic``
    (with an expression: the topic of schema-level DDL and watermarks); ``dispatchers`` (changefeed TOML
    text) or ``dispatchers.file``; ``partitions`` (default 3); ``resolved-interval-ms`` (default 1000;
    0 keeps the changelog's own watermarks); ``kafka.*`` (librdkafka client options: write to Kafka)
    or ``path`` (a directory: one capture file per topic partition) with ``capture.format`` jsonl|parquet.
    """

    protocol: str
    codec_options: Mapping[str, str]
    default_topic: str
    rules: tuple[Any, ...]
    partitions: int
    interval_ms: int | None
    kafka: Mapping[str, str]
    path: str | None
    capture_format: str = "jsonl"

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, destination: bool = True) -> WriterOptions:
        """Validate Spark-style options; ConfigError names the bad one.

        ``destination=False`` accepts options without ``path`` or ``kafka.bootstrap.servers`` (routing only:
        what :func:`arrange_changelog` needs, the destination being given to the write).
        """
        from pyticdc.codec import canonical_protocol, codec_module
        from pyticdc.codec.options import TICDC_NAMES, parse_options
        from pyticdc.routing import is_static_topic, rules_from_toml, validate_topic_expression

        given = {str(k): str(v) for k, v in options.items() if v is not None}
        lowered = {k.lower(): v for k, v in given.items()}
        if "protocol" not in lowered:
            raise ConfigError("the changelog writer needs the option protocol (open-protocol, canal-json, craft, "
                              "debezium, simple)")
        protocol = canonical_protocol(lowered["protocol"])
        codec = {k: v for k, v in given.items() if k in TICDC_NAMES}
        parse_options(protocol, codec_module(protocol).Encoder.OPTIONS, codec)
        rules: list[Any] = []
        if "dispatchers" in lowered:
            rules = rules_from_toml(lowered["dispatchers"])
        elif "dispatchers.file" in lowered:
            with open(lowered["dispatchers.file"], encoding="utf-8") as handle:
                rules = rules_from_toml(handle.read())
        topic = lowered.get("topic", "ticdc")
        default_topic = topic
        if not is_static_topic(topic):
            validate_topic_expression(topic)
            default_topic = lowered.get("default-topic", "ticdc")
            rules = [*rules, {"matcher": ["*.*"], "topic": topic}]
        try:
            partitions = int(lowered.get("partitions", "3"))
            interval = int(lowered.get("resolved-interval-ms", "1000"))
        except ValueError as exc:
            raise ConfigError(f"partitions and resolved-interval-ms must be integers: {exc}") from None
        if partitions < 1 or interval < 0:
            raise ConfigError("partitions must be >= 1 and resolved-interval-ms >= 0")
        kafka = {k[len("kafka."):]: v for k, v in given.items() if k.lower().startswith("kafka.")}
        path = lowered.get("path")
        if bool(kafka.get("bootstrap.servers")) == bool(path) and (destination or path):
            raise ConfigError("give exactly one destination: kafka.bootstrap.servers (Kafka) or path (capture files)")
        capture_format = lowered.get("capture.format", "jsonl")
        if capture_format not in ("jsonl", "parquet"):
            raise ConfigError(f"capture.format must be jsonl or parquet, got {capture_format!r}")
        return cls(protocol=protocol, codec_options=codec, default_topic=default_topic, rules=tuple(rules),
                   partitions=partitions, interval_ms=interval or None, kafka=kafka, path=path,
                   capture_format=capture_format)

    def router(self, clock: Any = None) -> Any:
        """A Router with these options."""
        from pyticdc.routing import Router

        return Router(self.protocol, self.codec_options, default_topic=self.default_topic, rules=self.rules,
                      partitions=self.partitions, clock=clock)


# --------------------------------------------------------------------------- pure per-task work
def row_targets(event: RowChange, router: Any) -> list[tuple[str, int]]:
    """The (topic, partition) pairs a row's records go to (two when TiCDC splits a key-changing UPDATE)."""
    from pyticdc.routing import should_split_update, split_update

    topic = router.event_router.topic_for_table(event.schema, event.table)
    count = router.partition_count(topic)
    parts = split_update(event) if should_split_update(event) else (event,)
    targets: list[tuple[str, int]] = []
    for part in parts:
        target = (topic, router.event_router.partition_for_row(part, count)[0])
        if target not in targets:
            targets.append(target)
    return targets


def target_records(
    rows: Iterable[Mapping[str, Any]], options: WriterOptions, target: tuple[str, int],
) -> Iterator[KafkaRecord]:
    """The records of one target topic partition, from its arranged changelog rows (offsets -1)."""
    from pyticdc.routing.stream import StreamClock, route_stream, with_bootstraps

    events: Iterable[Event] = order_changelog(events_from_rows(rows))
    if options.protocol == "simple":
        events = with_bootstraps(events)
    clock = StreamClock()
    for record in route_stream(options.router(clock), events, clock=clock):
        if (record.topic, record.partition) == target:
            yield record


def _group_rows(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        topic, partition = row.get(TARGET_TOPIC), row.get(TARGET_PARTITION)
        if topic is None or partition is None:
            raise ChangelogError(f"changelog rows lack {TARGET_TOPIC}/{TARGET_PARTITION}: arrange the DataFrame with "
                                 "pyticdc.spark.writer.arrange_changelog(df, options) first, or call write_changelog")
        groups.setdefault((str(topic), int(partition)), []).append(row)
    return groups


def write_targets(rows: Iterable[Mapping[str, Any]], options: WriterOptions) -> list[tuple[str, int, int]]:
    """Route and write every target partition present in ``rows``; (topic, partition, records) for each."""
    written = []
    for target, group in sorted(_group_rows(rows).items()):
        records = target_records(group, options, target)
        if options.kafka:
            from pyticdc.io.kafka import produce_records

            count = len(produce_records(dict(options.kafka), records))
        else:
            from pyticdc.io.capture import CaptureWriter

            assert options.path is not None
            extension = "parquet" if options.capture_format == "parquet" else "jsonl"
            name = f"{target[0]}-{target[1]}.{extension}"
            with CaptureWriter(f"{options.path}/{name}", options.capture_format) as writer:
                writer.write_all(_numbered(records))
                count = writer.count
        written.append((target[0], target[1], count))
    return written


def _numbered(records: Iterable[KafkaRecord]) -> Iterator[KafkaRecord]:
    for offset, record in enumerate(records):
        yield msgspec.structs.replace(record, offset=offset)


# --------------------------------------------------------------------------- Spark
def _assign_batches(options: WriterOptions) -> Any:
    """mapInArrow body: each changelog row tagged with its target(s) (non-row events untagged) and time bucket."""
    import pyarrow as pa

    def assign(batches: Iterator[Any]) -> Iterator[Any]:
        router = options.router()
        interval = options.interval_ms or 1000
        for batch in batches:
            rows = batch.to_pylist()
            out: list[dict[str, Any]] = []
            for index, row in enumerate(rows):
                event = event_from_row(row, f"changelog row {index}")
                if event is None:
                    continue
                bucket = ((event.commit_ts >> 18) // interval) if isinstance(event, (RowChange, DDLEvent)) else None
                if isinstance(event, RowChange):
                    for topic, partition in row_targets(event, router):
                        out.append({**row, TARGET_TOPIC: topic, TARGET_PARTITION: partition, "_pyticdc_bucket": bucket})
                else:
                    out.append({**row, TARGET_TOPIC: None, TARGET_PARTITION: None, "_pyticdc_bucket": bucket})
            schema = batch.schema.append(pa.field(TARGET_TOPIC, pa.string())).append(
                pa.field(TARGET_PARTITION, pa.int32())).append(pa.field("_pyticdc_bucket", pa.int64()))
            yield pa.RecordBatch.from_pylist(out, schema=schema)

    return assign


def arrange_changelog(df: Any, options: Mapping[str, Any] | WriterOptions) -> Any:
    """``df`` rearranged so each Spark task holds whole target partitions: rows tagged with their target,
    every DDL, watermark and each topic's first row copied to every partition they concern.

    Writing the result with :class:`ChangelogWriter` (``format("pyticdc")``) gives, partition by
    partition, the records one router over the whole changelog would send.
    """
    from decimal import Decimal

    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from pyticdc.routing.stream import watermark_marks

    opts = options if isinstance(options, WriterOptions) else WriterOptions.parse(options, destination=False)
    schema = StructType([*df.schema.fields, StructField(TARGET_TOPIC, StringType()),
                         StructField(TARGET_PARTITION, IntegerType()), StructField("_pyticdc_bucket", LongType())])
    assigned = df.mapInArrow(_assign_batches(opts), schema).cache()
    rows = assigned.filter(F.col(TARGET_TOPIC).isNotNull())
    controls = [r.asDict(recursive=False) for r in assigned.filter(F.col(TARGET_TOPIC).isNull()).collect()]
    router = opts.router()
    topics = [r[0] for r in rows.select(TARGET_TOPIC).distinct().collect()]
    ddls = [e for e in (event_from_row(c) for c in controls) if isinstance(e, DDLEvent)]
    for topic in [opts.default_topic, *(router.topic_for_ddl(d) for d in ddls)]:
        if topic not in topics:
            topics.append(topic)
    targets = [(t, p) for t in sorted(topics) for p in range(router.partition_count(t))]
    copies: list[dict[str, Any]] = [c for c in controls if c.get("kind") == "ddl"]
    if opts.interval_ms is not None:
        timed = assigned.filter(F.col("kind").isin("row", "ddl"))
        buckets = [r[0] for r in timed.select("_pyticdc_bucket").distinct().collect()]
        last = timed.agg(F.max("commit_ts")).collect()[0][0]
        if last is not None:
            points = [(b * opts.interval_ms) << 18 for b in buckets] + [int(last)]
            copies.extend({"kind": "watermark", "commit_ts": Decimal(mark)}
                          for mark in watermark_marks(points, opts.interval_ms))
    else:
        copies.extend(c for c in controls if c.get("kind") == "watermark")
    # Each topic's first row: routing it in every task of the topic makes the topic active (its
    # watermarks broadcast) from the same point on as in one router over everything.
    firsts = rows.groupBy(TARGET_TOPIC).agg(F.min_by(F.struct(*df.columns), F.col("commit_ts")).alias("first"))
    first_rows = {r[0]: r[1].asDict(recursive=False) for r in firsts.collect()}
    names = [f.name for f in schema.fields]
    extra = []
    for topic, partition in targets:
        for copy in [*copies, *([first_rows[topic]] if topic in first_rows else [])]:
            extra.append(tuple({**copy, TARGET_TOPIC: topic, TARGET_PARTITION: partition,
                                "_pyticdc_bucket": None}.get(n) for n in names))
    spark = df.sparkSession
    everything = rows.unionByName(spark.createDataFrame(extra, schema)) if extra else rows
    return everything.repartition(max(1, len(targets)), TARGET_TOPIC, TARGET_PARTITION)


def _writer_function(options: WriterOptions) -> Any:
    import pyarrow as pa

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        rows = [row for batch in batches for row in batch.to_pylist()]
        written = write_targets(rows, options)
        yield pa.RecordBatch.from_pylist(
            [{"topic": t, "partition": p, "records": n} for t, p, n in written],
            schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("records", pa.int64())]))

    return write


def write_changelog(df: Any, **options: Any) -> list[tuple[str, int, int]]:
    """Encode a changelog DataFrame with TiCDC's routing and write it (see :class:`WriterOptions`).

    Keyword names use ``_`` for ``-`` and ``.`` is spelled ``__`` (``kafka__bootstrap__servers``), or pass
    ``options={...}`` with the Spark option names. Returns (topic, partition, records) per target partition.
    Kafka topics are created first with the partition count.
    """
    raw = dict(options.pop("options", None) or {})
    for name, value in options.items():
        raw[name.replace("__", ".").replace("_", "-")] = value
    opts = WriterOptions.parse(raw)
    arranged = arrange_changelog(df, opts)
    if opts.kafka:
        from pyticdc.io.kafka import create_topic

        router = opts.router()
        for topic in sorted({r[0] for r in arranged.select(TARGET_TOPIC).distinct().collect()}):
            create_topic(dict(opts.kafka), topic, router.partition_count(topic))
    result = arranged.mapInArrow(_writer_function(opts), "topic string, partition int, records long").collect()
    return sorted((r.topic, r.partition, r.records) for r in result)


def _writer_base() -> Any:
    try:
        from pyspark.sql.datasource import DataSourceArrowWriter
    except ImportError:  # pyspark missing: the class is still importable, unusable
        return object
    return DataSourceArrowWriter


class ChangelogWriter(_writer_base()):  # type: ignore[misc]
    """``df.write.format("pyticdc")`` writer for a changelog arranged by :func:`arrange_changelog`.

    The ``pyticdc`` data source returns it from ``writer``. A writer task sees only its own Spark partition and
    cannot shuffle, so the DataFrame must come arranged (each task holding whole target partitions, with the
    DDL and watermarks they need): ``arrange_changelog(df, options).write.format("pyticdc").options(**options)``.
    """

    def __init__(self, options: Mapping[str, Any], schema: Any = None, overwrite: bool = False) -> None:
        self.options = WriterOptions.parse(options)
        self.overwrite = overwrite

    def write(self, iterator: Iterator[Any]) -> Any:
        """Write this task's target partitions; the commit message lists (topic, partition, records)."""
        from pyspark.sql.datasource import WriterCommitMessage

        rows = [row for batch in iterator for row in batch.to_pylist()]
        message = WriterCommitMessage()
        message.written = write_targets(rows, self.options)  # type: ignore[attr-defined]
        return message


def _data_source_base() -> Any:
    try:
        from pyspark.sql.datasource import DataSource
    except ImportError:  # pyspark missing: the class is still importable, unusable
        return object
    return DataSource


class ChangelogDataSource(_data_source_base()):  # type: ignore[misc]
    """A write-only data source, ``format("pyticdc_changelog")``, for arranged changelogs (see ChangelogWriter).

    ``spark.dataSource.register(ChangelogDataSource)``; the ``pyticdc`` source can offer the same writer.
    """

    @classmethod
    def name(cls) -> str:
        """``pyticdc_changelog``."""
        return "pyticdc_changelog"

    def writer(self, schema: Any, overwrite: bool) -> ChangelogWriter:
        """The changelog writer with this write's options."""
        return ChangelogWriter(dict(self.options), schema, overwrite)
