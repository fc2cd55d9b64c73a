"""The capture's Parquet copy (distributed engine): capture files parsed once, in the executors, into Parquet.

A capture replication first parses its files into Parquet in the warehouse, each file sorted by partition and
offset (small files of small row groups), and each batch then reads only the files of its offsets: a cache of
the parsed records would be read whole by every batch once it spills to disk, so the time per batch would grow
with the capture. The copy also names every partition, which the replicator needs first.

Each task parses one split of the capture files (as the ``pyticdc`` data source reads it: a line that is no
record becomes a partition -1 record, for the quarantine), sorts it and writes its files with pyarrow; only
the names of the files and the offsets each holds reach the driver. A failed attempt's files are never named.

A batch is a :class:`CopyBatch`: the files holding its offsets. Its decode tasks read one file each with pyarrow,
keep the batch's offsets and decode them (:func:`decode_copy`): no JVM scan, no per-batch Spark filter whose
offsets, inlined in generated code, would make Spark compile new classes for every batch.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.io.capture import kafka_arrow_schema
from pyticdc.spark.apply.decode import Keys, decode_to_files
from pyticdc.spark.options import SourceOptions
from pyticdc.spark.source import capture_input_partitions, read_partition
from pyticdc.spark.worker import prepare_task

__all__ = ["COPY_SCHEMA", "CaptureCopy", "CopyBatch", "copy_split", "decode_copy", "write_copy"]

TopicPartition = tuple[str, int]
#: Columns of the copy's files (the Kafka source columns a replication reads).
COPY_SCHEMA: Final = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                                ("partition", pa.int32()), ("offset", pa.int64())])
#: What a copy task hands back per file: the offsets it holds of each partition.
_HELD: Final = pa.schema([("path", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                          ("first", pa.int64()), ("last", pa.int64())])
_HELD_DDL: Final = "path string, topic string, partition int, first bigint, last bigint"


@dataclass(frozen=True)
class CaptureCopy:
    """The capture's Parquet copy: per file, the offsets it holds of each partition."""

    #: (path, ((topic, partition, first offset, last offset), ...)); lines that are no record have partition -1.
    files: tuple[tuple[str, tuple[tuple[str, int, int, int], ...]], ...]

    @classmethod
    def of(cls, folder: Path) -> CaptureCopy:
        """The copy in ``folder`` (reads its topic, partition and offset columns, one file at a time)."""
        import pyarrow.parquet as pq

        files = []
        for path in sorted(folder.glob("*.parquet")):
            held = _held(pq.read_table(path, columns=["topic", "partition", "offset"]))
            if held:
                files.append((str(path), held))
        return cls(tuple(files))

    def last_offsets(self) -> dict[TopicPartition, int]:
        """Each partition's last offset in the copy (lines that are no record left out)."""
        ends: dict[TopicPartition, int] = {}
        for _path, held in self.files:
            for topic, partition, _first, last in held:
                if partition >= 0:
                    ends[(topic, partition)] = max(last, ends.get((topic, partition), last))
        return ends

    def paths(self, ranges: Mapping[TopicPartition, tuple[int, int]], *, lines: bool = False) -> list[str]:
        """The files holding records of ``ranges`` ((topic, partition) → [begin, stop)), and lines if asked."""
        out = []
        for path, held in self.files:
            for topic, partition, first, last in held:
                wanted = ranges.get((topic, partition))
                if (lines and partition < 0) or (wanted is not None and first < wanted[1] and last >= wanted[0]):
                    out.append(path)
                    break
        return out

    def batch(self, ranges: Mapping[TopicPartition, tuple[int, int]], *, lines: bool = False) -> CopyBatch:
        """The batch of ``ranges`` ((topic, partition) → [begin, stop)), and the lines that are no record if asked."""
        return CopyBatch(tuple(self.paths(ranges, lines=lines)), dict(ranges), lines)


@dataclass(frozen=True)
class CopyBatch:
    """One batch's records in the copy: the files holding them, the offsets to read of each partition."""

    paths: tuple[str, ...]
    #: (topic, partition) → [begin, stop)
    ranges: Mapping[TopicPartition, tuple[int, int]]
    #: The lines that are no record (partition -1) too.
    lines: bool = False

    def filter(self) -> Any:
        """The batch's records as a pyarrow dataset expression (None: nothing to read)."""
        import pyarrow.compute as pc

        wanted = pc.field("partition") < 0 if self.lines else None
        for (topic, partition), (begin, stop) in sorted(self.ranges.items()):
            clause = ((pc.field("topic") == topic) & (pc.field("partition") == partition)
                      & (pc.field("offset") >= begin) & (pc.field("offset") < stop))
            wanted = clause if wanted is None else wanted | clause
        return wanted

    def read_file(self, index: int) -> pa.Table:
        """The batch's records in its file ``index``, in the file's (topic, partition, offset) order.

        Row groups outside the offsets are skipped by their statistics.
        """
        import pyarrow.parquet as pq

        wanted = self.filter()
        if wanted is None:
            return COPY_SCHEMA.empty_table()
        return pq.read_table(self.paths[index], schema=COPY_SCHEMA, filters=wanted, use_threads=False)


def decode_copy(batches: Iterator[pa.RecordBatch], copy: CopyBatch, directory: str, protocol: str,
                options: Mapping[str, str], start: Mapping[TopicPartition, int], keys: Keys = (),
                batch_rows: int = 8192) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over file numbers of ``copy``: each file's records decoded as
    :func:`~pyticdc.spark.apply.decode.decode_to_files` decodes a Spark scan of them (its metadata rows)."""
    for batch in batches:
        for index in batch.column("id").to_pylist():
            records = copy.read_file(index).to_batches(max_chunksize=batch_rows)
            yield from decode_to_files(iter(records), directory, protocol, options, start, batch_rows, keys)


def _held(table: pa.Table) -> tuple[tuple[str, int, int, int], ...]:
    # (topic, partition, first offset, last offset) of each partition in ``table``, sorted.
    bounds = table.group_by(["topic", "partition"]).aggregate([("offset", "min"), ("offset", "max")])
    return tuple(sorted(zip(*(bounds.column(name).to_pylist()
                              for name in ("topic", "partition", "offset_min", "offset_max")))))


def copy_split(partition: Any, options: SourceOptions, folder: str, per_file: int,
               row_group_bytes: int) -> pa.Table:
    """One input partition's records → Parquet files of ``folder`` sorted by (topic, partition, offset), at most
    ``per_file`` records each; a row per file and partition held (:data:`_HELD`)."""
    import pyarrow.parquet as pq

    records = pa.Table.from_batches(list(read_partition(options, partition)), schema=kafka_arrow_schema())
    if records.num_rows == 0:
        return _HELD.empty_table()
    records = records.select(COPY_SCHEMA.names).cast(COPY_SCHEMA)
    order = pc.sort_indices(records, [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")])
    if not pc.all(pc.equal(order, pa.array(range(len(order)), order.type))).as_py():
        # A capture is mostly in order already: the take (a copy of every value) only when it is not.
        records = records.take(order)
    Path(folder).mkdir(parents=True, exist_ok=True)
    held: list[dict[str, Any]] = []
    for start in range(0, records.num_rows, per_file):
        chunk = records.slice(start, per_file)
        path = str(Path(folder) / f"part-{uuid.uuid4().hex}.parquet")
        # Row groups of about row_group_bytes: what a batch reads beyond its offsets. Statistics for the
        # positions a batch filters by; a dictionary only for the topic (keys and values are mostly distinct).
        pq.write_table(chunk, path, compression="snappy", use_dictionary=["topic"],
                       write_statistics=["topic", "partition", "offset"],
                       row_group_size=max(1, row_group_bytes * chunk.num_rows // max(1, chunk.nbytes)))
        held.extend({"path": path, "topic": topic, "partition": number, "first": first, "last": last}
                    for topic, number, first, last in _held(chunk))
    return pa.Table.from_pylist(held, schema=_HELD)


def _copy_tasks(batches: Iterator[pa.RecordBatch], partitions: Sequence[Any], options: SourceOptions, folder: str,
                per_file: int, row_group_bytes: int) -> Iterator[pa.RecordBatch]:
    # mapInArrow body over the ids of the input partitions.
    prepare_task()
    for batch in batches:
        for number in batch.column("id").to_pylist():
            yield from copy_split(partitions[number], options, folder, per_file, row_group_bytes).to_batches()


def write_copy(spark: Any, options: Mapping[str, str], folder: Path, per_file: int,
               row_group_bytes: int) -> CaptureCopy:
    """The copy of the capture files the ``pyticdc`` data source ``options`` name, written to ``folder`` (one
    Spark job: a task per split of the files)."""
    parsed = SourceOptions.parse(dict(options))
    partitions = capture_input_partitions(parsed)
    if not partitions:
        return CaptureCopy(())
    job = functools.partial(_copy_tasks, partitions=partitions, options=parsed, folder=str(folder),
                            per_file=per_file, row_group_bytes=row_group_bytes)
    rows = spark.range(len(partitions), numPartitions=len(partitions)).mapInArrow(job, _HELD_DDL).toArrow()
    files: dict[str, list[tuple[str, int, int, int]]] = {}
    for row in rows.to_pylist():
        files.setdefault(row["path"], []).append((row["topic"], row["partition"], row["first"], row["last"]))
    return CaptureCopy(tuple((path, tuple(sorted(held))) for path, held in sorted(files.items())))
