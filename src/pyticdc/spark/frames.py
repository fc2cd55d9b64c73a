"""DataFrame functions: decode a Kafka DataFrame, typed rows of one table, table schemas of a stream.

``decode_kafka`` works on any DataFrame with Spark's Kafka source columns, so where the cluster has the
JVM connector the same decode applies to ``spark.readStream.format("kafka")``::

    raw = spark.readStream.format("kafka").option("kafka.bootstrap.servers", ...).option("subscribe", "cdc").load()
    events = decode_kafka(raw, "canal-json", {"enable-tidb-extension": "true"})

Decoding runs in ``mapInArrow`` with the pure functions of :mod:`pyticdc.arrow.rows`. Each Spark partition
of the Kafka source is one Kafka partition range in offset order, which is what the stateful Simple decoder
needs; do not repartition (or set the Kafka source's ``minPartitions``) before decoding Simple.

``typed_rows(events, schema="shop", table="orders")`` gives the rows of one table with typed columns
(mapping in :mod:`pyticdc.arrow.types`), using the table's latest TableInfo found in the events unless one
is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from pyticdc.arrow.rows import decode_kafka_batches, event_arrow_schema, new_decoder, parse_table_info
from pyticdc.arrow.types import TypeMapping, project_rows, table_arrow_schema
from pyticdc.codec import canonical_protocol
from pyticdc.errors import ConfigError
from pyticdc.model import TableInfo

__all__ = ["decode_kafka", "event_schema", "table_infos", "typed_rows", "typed_schema"]

_KAFKA_INPUT = ("key", "value", "topic", "partition", "offset", "timestamp")


def event_schema() -> Any:
    """The Spark StructType of decoded events."""
    return from_arrow_schema(event_arrow_schema())


def typed_schema(table_info: TableInfo, types: Mapping[str, Any] | TypeMapping | None = None) -> Any:
    """The Spark StructType of :func:`typed_rows` for ``table_info`` (``types``: the type-mapping options)."""
    return from_arrow_schema(table_arrow_schema(table_info, TypeMapping.parse(types)), prefer_timestamp_ntz=True)


def _decode_partition(batches: Iterator[pa.RecordBatch], protocol: str, options: dict[str, str],
                      batch_rows: int, kafka: dict[str, str] | None, lookback: int) -> Iterator[pa.RecordBatch]:
    chunks = None
    if kafka and lookback:
        from pyticdc.io.kafka import lookback_chunks

        chunks = partial(lookback_chunks, kafka, limit=lookback)
    return decode_kafka_batches(batches, protocol, options, batch_rows=batch_rows, lookback=chunks)


def decode_kafka(
    df: DataFrame, protocol: str, options: Mapping[str, Any] | None = None, *, batch_rows: int = 8192,
    kafka: Mapping[str, str] | None = None, schema_lookback: int = 100_000,
) -> DataFrame:
    """Decoded events (schema :func:`event_schema`) of a DataFrame with the Kafka source columns.

    Needs ``value``, ``topic``, ``partition`` and ``offset``; ``key`` and ``timestamp`` are used when present.
    Undecodable records become ``kind = 'error'`` rows; nothing is dropped. ``kafka`` (librdkafka settings,
    at least ``bootstrap.servers``) lets the Simple decoder look back up to ``schema_lookback`` offsets for
    schemas sent before a micro-batch (see the ``schemaLookback`` source option); without it such rows are
    quarantined.
    """
    protocol = canonical_protocol(protocol)
    codec_options = {str(k): str(v) for k, v in (options or {}).items()}
    new_decoder(protocol, codec_options)  # fail now on a bad option, not in an executor
    missing = [c for c in ("value", "topic", "partition", "offset") if c not in df.columns]
    if missing:
        raise ConfigError(f"decode_kafka needs the Kafka source columns; missing {missing}")
    columns = [F.col(c) for c in _KAFKA_INPUT if c in df.columns]
    function = partial(_decode_partition, protocol=protocol, options=codec_options, batch_rows=batch_rows,
                       kafka=dict(kafka) if kafka else None, lookback=schema_lookback)
    return df.select(*columns).mapInArrow(function, event_schema())


def table_infos(events: DataFrame) -> dict[tuple[str, str], TableInfo]:
    """The latest TableInfo of every table in the events (by commit_ts, then offset), collected to the driver.

    Sources: row, DDL and bootstrap events carrying ``table_info``. A protocol that carries little schema
    (Open, Craft, Canal-JSON) gives partial TableInfos (no DECIMAL precision, no ENUM members).
    """
    from pyspark.sql.window import Window

    candidates = events.where(F.col("table_info").isNotNull() & F.col("kind").isin("row", "ddl", "bootstrap"))
    order = Window.partitionBy("schema", "table").orderBy(
        F.col("commit_ts").desc_nulls_last(), F.col("offset").desc(), F.col("event_index").desc())
    latest = (candidates.withColumn("_rank", F.row_number().over(order)).where(F.col("_rank") == 1)
              .select("schema", "table", "table_info").collect())
    return {(row["schema"], row["table"]): parse_table_info(row["table_info"]) for row in latest}


def _project_partition(batches: Iterator[pa.RecordBatch], table_info: TableInfo, image: str,
                       time_zone: str, mapping: TypeMapping) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield project_rows(batch, table_info, image=image, time_zone=time_zone, mapping=mapping)


def typed_rows(
    events: DataFrame, table_info: TableInfo | None = None, *, schema: str | None = None, table: str | None = None,
    image: str = "current", time_zone: str = "UTC", types: Mapping[str, Any] | TypeMapping | None = None,
) -> DataFrame:
    """Rows of one table with typed columns (see :mod:`pyticdc.arrow.types`).

    The table is ``table_info``'s, or ``schema``.``table`` with its latest TableInfo from the events.
    ``image``: ``current`` (post-image, a delete's pre-image), ``post`` or ``pre``. ``time_zone`` is the
    changefeed ``time-zone`` in which TiCDC printed TIMESTAMP values. ``types``: the type-mapping options
    (``{"tinyint1-as-boolean": "true", "time-as": "string"}``; default the replica's mapping).
    """
    mapping = TypeMapping.parse(types)  # a bad option fails here, not in an executor
    if table_info is None:
        if not (schema and table):
            raise ConfigError("typed_rows needs table_info, or schema and table to look it up in the events")
        found = table_infos(events.where((F.col("schema") == schema) & (F.col("table") == table)))
        if (schema, table) not in found:
            raise ConfigError(f"no table_info for {schema}.{table} in the events; pass table_info")
        table_info = found[(schema, table)]
    rows = events.where((F.col("kind") == "row") & (F.col("schema") == table_info.schema)
                        & (F.col("table") == table_info.table))
    rows = rows.select("op", "commit_ts", "topic", "partition", "offset", "event_index", "handle_key_only",
                       "columns", "pre_columns", "base64_columns")
    function = partial(_project_partition, table_info=table_info, image=image, time_zone=time_zone, mapping=mapping)
    return rows.mapInArrow(function, typed_schema(table_info, mapping))
