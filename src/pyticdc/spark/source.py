"""The ``pyticdc`` Spark Python Data Source: Kafka topics or capture files → decoded change events.

    from pyticdc.spark import register
    register(spark)                                   # once per session (spark_session() does it)
    events = (spark.read.format("pyticdc")
              .option("protocol", "canal-json").option("enable-tidb-extension", "true")
              .option("kafka.bootstrap.servers", "broker:9092").option("subscribe", "cdc")
              .load())
    stream = (spark.readStream.format("pyticdc").option("protocol", "simple")
              .option("kafka.bootstrap.servers", "broker:9092").option("subscribe", "cdc")
              .option("startingOffsets", "earliest").load())
    replay = spark.read.format("pyticdc").option("protocol", "craft").load("capture.jsonl")

Options are documented in :mod:`pyticdc.spark.options`; the output columns in :mod:`pyticdc.arrow.rows`.
Kafka is read with confluent-kafka inside the executors, one Spark task per partition offset range; in
streaming mode the offsets are Spark's Kafka JSON (``{"topic": {"0": 42}}``) and Structured Streaming
checkpoints them, so a restarted query resumes where it stopped. Each task decodes its records in offset
order with one decoder per Kafka partition; undecodable records come out as ``kind = 'error'`` rows. A
capture line that is not a record at all also becomes an ``error`` row: topic ``file:<path>``, partition
-1, offset = the line's byte position, ``raw_value`` = the line; with ``output=records`` it is a record of
that topic, partition and offset whose value is the line (the replica pipeline quarantines it).

The source is registered per session (``pyticdc.spark.register(spark)``; ``spark_session()`` does it):
Spark's automatic discovery only looks at top-level ``pyspark_*`` modules.

Writing: ``df.write.format("pyticdc")`` encodes a changelog (a decoded-event DataFrame arranged by
:func:`pyticdc.spark.writer.arrange_changelog`) with a target protocol and TiCDC's routing, to Kafka or to
capture files; its options are :class:`pyticdc.spark.writer.WriterOptions`. Read options are parsed only
when reading, so each direction sees only its own::

    from pyticdc.spark.writer import arrange_changelog
    options = {"protocol": "craft", "topic": "cdc", "partitions": "3"}
    arrange_changelog(events, options).write.format("pyticdc").options(**options).mode("append").save("out/")
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property, partial
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from pyticdc.arrow.rows import RecordDecoder, event_arrow_schema
from pyticdc.io.capture import (
    BadLine,
    CaptureSplit,
    bad_line_record,
    capture_files,
    kafka_arrow_schema,
    plan_splits,
    read_split,
    read_split_batches,
    record_batches,
)
from pyticdc.io.capture import records_to_arrow as _records_to_arrow
from pyticdc.io.kafka import (
    EARLIEST,
    OffsetRange,
    cap_offsets,
    list_partitions,
    lookback_chunks,
    offsets_from_json,
    offsets_json,
    parse_offsets,
    plan_ranges,
    read_range,
    select_topics,
    split_range,
    watermarks,
)
from pyticdc.model import KafkaRecord
from pyticdc.spark.options import SourceOptions

__all__ = ["CapturePartition", "KafkaPartition", "PyticdcDataSource", "capture_input_partitions",
           "event_struct", "read_partition", "record_struct"]


def event_struct() -> StructType:
    """The Spark schema of decoded events."""
    return from_arrow_schema(event_arrow_schema())


def record_struct() -> StructType:
    """The Spark schema of raw records (Spark's Kafka source columns)."""
    return from_arrow_schema(kafka_arrow_schema())


class KafkaPartition(InputPartition):
    """One Spark task: one offset range of one Kafka partition."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


class CapturePartition(InputPartition):
    """One Spark task: one split of a capture file."""

    def __init__(self, split: CaptureSplit) -> None:
        super().__init__(split)
        self.split = split


# --------------------------------------------------------------------------- reading one partition
def read_partition(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Arrow batches (events or records) of one input partition; shared by batch and streaming readers."""
    if options.output == "records" and isinstance(partition, CapturePartition):
        # Plain capture lines go to Arrow in blocks, without a record object each; a malformed line is a
        # partition -1 record carrying its reason (bad_line_record).
        for item in read_split_batches(partition.split, rows=options.batch_rows):
            yield _records_to_arrow([bad_line_record(item, with_reason=True)]) if isinstance(item, BadLine) else item
        return
    if isinstance(partition, KafkaPartition):
        records: Iterator[Any] = read_range(
            options.client_config, partition.offset_range, poll_timeout=options.poll_timeout_ms / 1000,
            fail_on_data_loss=options.fail_on_data_loss)
    elif isinstance(partition, CapturePartition):
        # A malformed line never fails the task: it is an error row.
        records = read_split(partition.split, lenient=True)
    else:
        raise TypeError(f"unexpected input partition {partition!r}")
    if options.output == "records":
        yield from record_batches(records, options.batch_rows)
        return
    lookback = None
    if isinstance(partition, KafkaPartition) and options.stateful and options.schema_lookback:
        lookback = partial(lookback_chunks, options.client_config, limit=options.schema_lookback,
                           poll_timeout=options.poll_timeout_ms / 1000)
    decoder = RecordDecoder(options.protocol, options.codec_options, batch_rows=options.batch_rows,
                            lookback=lookback)

    def good() -> Iterator[KafkaRecord]:
        for item in records:
            if isinstance(item, BadLine):
                decoder.add_error(bad_line_record(item), item.why)
            else:
                yield item

    yield from decoder.decode(good())
    yield from decoder.finish()


# --------------------------------------------------------------------------- planning
def _kafka_ranges(options: SourceOptions, starting: str | None, ending: str | None) -> list[OffsetRange]:
    config = options.client_config
    partitions = select_topics(list_partitions(config), subscribe=options.subscribe,
                               pattern=options.subscribe_pattern, assign=options.assign)
    return plan_ranges(
        watermarks(config, partitions),
        parse_offsets(starting, ending=False, default="earliest"),
        parse_offsets(ending, ending=True, default="latest"),
        fail_on_data_loss=options.fail_on_data_loss,
    )


def _spread(options: SourceOptions, ranges: Sequence[OffsetRange]) -> list[InputPartition]:
    """Input partitions for non-empty ranges, split further for ``minPartitions`` when order does not matter."""
    ranges = [r for r in ranges if (r.start == EARLIEST and r.end > 0) or r.size > 0]
    wanted = options.min_partitions or 0
    if wanted > len(ranges) and not options.stateful:
        total = sum(r.size for r in ranges) or 1
        split: list[OffsetRange] = []
        for r in ranges:
            split.extend(split_range(r, max(1, round(wanted * r.size / total))))
        ranges = split
    return [KafkaPartition(r) for r in ranges]


def capture_input_partitions(options: SourceOptions, files: Sequence[str] | None = None) -> list[InputPartition]:
    """The input partitions of a capture read: splits of the files (``files``, else the options' paths).

    Not :func:`pyticdc.spark.replication.capture_partitions`, which counts the Kafka partitions a capture holds."""
    assert options.paths is not None
    splits = plan_splits(files if files is not None else options.paths, options.capture_format,
                         max_split_bytes=options.max_partition_bytes, min_splits=options.min_partitions or 1,
                         splittable=not options.stateful)
    return [CapturePartition(s) for s in splits]


# --------------------------------------------------------------------------- readers
class KafkaBatchReader(DataSourceReader):
    """Batch read of ``[startingOffsets, endingOffsets)`` of every chosen partition."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        """One input partition per non-empty Kafka partition range."""
        return _spread(self.options, _kafka_ranges(self.options, self.options.starting_offsets,
                                                   self.options.ending_offsets))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decoded events of one range."""
        return read_partition(self.options, partition)


class KafkaStreamReader(DataSourceStreamReader):
    """Micro-batches over Kafka; offsets are Spark Kafka JSON, checkpointed by Structured Streaming."""

    def __init__(self, options: SourceOptions) -> None:
        if options.ending_offsets:
            from pyticdc.errors import ConfigError

            raise ConfigError("endingOffsets is for batch reads; a streaming query reads until it is stopped")
        self.options = options
        #: End offsets of the last planned batch (where the next one starts).
        self._position: dict[tuple[str, int], int] | None = None

    def _bounds(self) -> dict[tuple[str, int], tuple[int, int]]:
        config = self.options.client_config
        partitions = select_topics(list_partitions(config), subscribe=self.options.subscribe,
                                   pattern=self.options.subscribe_pattern, assign=self.options.assign)
        return watermarks(config, partitions)

    def initialOffset(self) -> dict[str, Any]:
        """Concrete offsets ``startingOffsets`` (default latest) resolves to now."""
        ranges = plan_ranges(self._bounds(), parse_offsets(self.options.starting_offsets, ending=False,
                                                           default="latest"),
                             "latest", fail_on_data_loss=self.options.fail_on_data_loss)
        start = {(r.topic, r.partition): r.start for r in ranges}
        self._position = start
        return offsets_json(start)

    def latestOffset(self) -> dict[str, Any]:
        """High watermarks now (new partitions included), capped by ``maxOffsetsPerTrigger``."""
        latest = {tp: high for tp, (_low, high) in self._bounds().items()}
        if self._position is not None:
            # Never report less than already planned (a lagging replica's watermark must not go back).
            latest = {tp: max(end, self._position.get(tp, 0)) for tp, end in latest.items()}
            latest = cap_offsets(self._position, latest, self.options.max_offsets_per_trigger)
        return offsets_json(latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """Ranges between two offsets; a partition new since ``start`` is read from its beginning."""
        begin, finish = offsets_from_json(start), offsets_from_json(end)
        self._position = finish
        ranges = [OffsetRange(t, p, begin.get((t, p), EARLIEST), stop) for (t, p), stop in sorted(finish.items())]
        return _spread(self.options, ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decoded events of one range."""
        return read_partition(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark finished every offset up to ``end``."""
        self._position = offsets_from_json(end)


class CaptureBatchReader(DataSourceReader):
    """Batch read of capture files, split by byte ranges or row groups."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        """One input partition per split."""
        return capture_input_partitions(self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decoded events of one split."""
        return read_partition(self.options, partition)


class CaptureStreamReader(DataSourceStreamReader):
    """Streams capture files as they appear; the offset is how many files (in name order) were read."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def _files(self) -> list[str]:
        assert self.options.paths is not None
        return sorted(str(p) for p in capture_files(self.options.paths))

    def initialOffset(self) -> dict[str, Any]:
        """No file read yet."""
        return {"files": 0}

    def latestOffset(self) -> dict[str, Any]:
        """Every file present now."""
        return {"files": len(self._files())}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """Splits of the files between the two offsets."""
        files = self._files()[int(start["files"]):int(end["files"])]
        return capture_input_partitions(self.options, files) if files else []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decoded events of one split."""
        return read_partition(self.options, partition)


class PyticdcDataSource(DataSource):
    """``format("pyticdc")``: TiCDC Kafka messages, from Kafka or capture files, as decoded events; and written
    back from a changelog."""

    @cached_property
    def source_options(self) -> SourceOptions:
        """The read options, parsed and checked on first use (by a read: writes take other options)."""
        return SourceOptions.parse(dict(self.options))

    @classmethod
    def name(cls) -> str:
        """``pyticdc``."""
        return "pyticdc"

    def schema(self) -> StructType:
        """Decoded events (``output=events``) or the Kafka source columns (``output=records``)."""
        return record_struct() if self.source_options.output == "records" else event_struct()

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader for Kafka or capture files."""
        if self.source_options.is_kafka:
            return KafkaBatchReader(self.source_options)
        return CaptureBatchReader(self.source_options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A streaming reader for Kafka or a directory of capture files."""
        if self.source_options.is_kafka:
            return KafkaStreamReader(self.source_options)
        return CaptureStreamReader(self.source_options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The changelog writer (:class:`pyticdc.spark.writer.ChangelogWriter`) with this write's options."""
        from pyticdc.spark.writer import ChangelogWriter

        writer: DataSourceWriter = ChangelogWriter(dict(self.options), schema, overwrite)
        return writer
