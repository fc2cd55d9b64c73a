"""A batch's change rows as the distributed apply writes them: one folder per table segment, and the staging.

After the plan, one Spark job writes every change row of the batch into ``staging/v<N>/``, partitioned by
``part``: ``part=<n>`` holds segment ``n`` (a table at a level, see :mod:`pyticdc.spark.apply.plan`),
``part=-1`` the rows above the limit, which the next batch reads back (:func:`staged_rows`). Each of the job's
tasks reads one of the decode's files (or of the staged ones) with pyarrow and marks its rows itself
(:func:`write_files`, :func:`mark_parts`: the rules of ``pyticdc.spark.apply.batch.mark_columns``), and reports
what the batch's summary needs of each part (:class:`PartSummary`). Every delivery of a change lands in the same
part, so a second job de-duplicates part by part (:func:`unique_parts`), rewriting only a part where an
identity repeats. When Spark must mark the rows (the Python reference marks, Simple's held rows), it hands them
to the writing tasks (:func:`write_segments`). Nobody shuffles the rows: each apply task reads its tables'
folders itself (:func:`read_segment`), and Spark reads a level's folders for the engines and history tables that
fold in Spark (:meth:`WrittenChanges.frame`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyticdc.spark.apply.decode import DECODED_SCHEMA, DICTIONARY_COLUMNS, STATISTICS_COLUMNS
from pyticdc.spark.apply.net import NET_INPUT
from pyticdc.spark.worker import prepare_task

__all__ = ["BUFFERED_ROWS", "FILES_SCHEMA", "PART", "STAGED_PART", "UNIQUE_SCHEMA", "WRITTEN_SCHEMA", "LevelRows",
           "PartSummary", "SegmentMarks", "SegmentWriter", "WrittenChanges", "keep_files", "mark_parts", "read_segment",
           "spread_tables", "staged_rows", "summarize_files", "unique_parts", "unique_rows", "write_files",
           "write_segments"]

#: The partition column of the written rows: the segment's number, or :data:`STAGED_PART`.
PART: Final = "part"
#: The folder of the rows above the limit (the next batch's staged rows).
STAGED_PART: Final = -1
#: The written rows' columns (in the files: all but ``part``, which is the folder).
WRITTEN_SCHEMA: Final = DECODED_SCHEMA.append(pa.field("staged", pa.bool_())).append(pa.field(PART, pa.int32()))
#: The rows of a file, without ``part`` (the folder).
_FILE_SCHEMA: Final = pa.schema([f for f in WRITTEN_SCHEMA if f.name != PART])
#: The files a writing task wrote: one row per file, with what the batch's summary needs of its rows (a row
#: with the highest (ts, rank) names the ``latest`` TableInfo digest; ``tkeys`` only for the staged part's).
FILES_SCHEMA: Final = pa.schema([
    (PART, pa.int32()), ("file", pa.string()), ("rows", pa.int64()), ("staged", pa.int64()),
    ("first_ts", pa.int64()), ("last_ts", pa.int64()), ("any_rowid", pa.bool_()), ("infos", pa.list_(pa.string())),
    ("hkinds", pa.list_(pa.string())), ("tkeys", pa.list_(pa.string())), ("latest_ts", pa.int64()),
    ("latest_rank", pa.int8()), ("latest_info", pa.string())])
#: A part's rows after :func:`unique_parts`: unique changes (``rows``), those with a staged copy, all copies.
UNIQUE_SCHEMA: Final = pa.schema([(PART, pa.int32()), ("rows", pa.int64()), ("staged", pa.int64()),
                                  ("copies", pa.int64())])
#: The order of a change's deliveries: the first is kept (a staged one, else the lowest position).
_DELIVERY_ORDER: Final = [("late", "ascending"), ("topic", "ascending"), ("partition", "ascending"),
                          ("offset", "ascending"), ("idx", "ascending")]
#: Rows a writing task holds before it writes them out (each part's as one row group).
BUFFERED_ROWS: Final = 65536
_Key = TypeVar("_Key", str, int)
#: The columns an apply task reads (the fold's input; ``held`` is the task's).
_READ: Final = [c for c in NET_INPUT if c != "held"]


def staged_rows(folder: Path) -> Path | None:
    """The folder of the rows a committed version staged (``part=-1`` of its written rows); None when it has none.

    A version written before the rows were partitioned holds its staged rows in its folder itself.
    """
    if (folder / f"{PART}={STAGED_PART}").is_dir():
        return folder / f"{PART}={STAGED_PART}"
    if folder.is_dir() and any(p.suffix == ".parquet" for p in folder.iterdir()):
        return folder
    return None


class SegmentWriter:
    """A task's writer of change rows into a Parquet file per part (``folder/part=<n>/<one name per task>``).

    Rows wait in memory until the task holds ``buffered_rows``, then each part's are written as one row group:
    a part's file has few, large row groups.
    """

    def __init__(self, folder: str, buffered_rows: int = BUFFERED_ROWS) -> None:
        self.folder = folder
        self.buffered_rows = buffered_rows
        self.name = f"part-{uuid.uuid4().hex}.parquet"
        self.writers: dict[int, pq.ParquetWriter] = {}
        self.waiting: dict[int, list[pa.Table]] = {}
        self.summaries: dict[int, PartSummary] = {}
        self.buffered = 0

    def add(self, rows: pa.Table, parts: pa.Array) -> None:
        """Take ``rows`` (without their part), each into the part ``parts`` gives it."""
        order = pc.sort_indices(parts)
        rows = rows.take(order)
        low = 0
        # Sorted: each part's rows are one run, and value_counts lists the parts in order.
        for item in pc.value_counts(parts.take(order)).to_pylist():
            part, size = item["values"], item["counts"]
            chunk = rows.slice(low, size)
            self.waiting.setdefault(part, []).append(chunk)
            summary = self.summaries.setdefault(part, PartSummary())
            summary.add(chunk, tables=part == STAGED_PART)
            self.buffered += size
            low += size
        if self.buffered >= self.buffered_rows:
            self.flush()

    def flush(self) -> None:
        """Write every part's waiting rows."""
        for part in list(self.waiting):
            tables = self.waiting.pop(part)
            writer = self.writers.get(part)
            if writer is None:
                os.makedirs(os.path.join(self.folder, f"{PART}={part}"), exist_ok=True)
                # As the decode's files (pyticdc.spark.apply.decode): scratch files, uncompressed.
                writer = self.writers[part] = pq.ParquetWriter(
                    os.path.join(self.folder, f"{PART}={part}", self.name), tables[0].schema, compression="none",
                    use_dictionary=DICTIONARY_COLUMNS, write_statistics=STATISTICS_COLUMNS)
            writer.write_table(pa.concat_tables(tables))
        self.buffered = 0

    def close(self) -> pa.RecordBatch | None:
        """Write what waits and close the files; one row per file written (:data:`FILES_SCHEMA`), or None."""
        try:
            self.flush()
        finally:
            for writer in self.writers.values():
                writer.close()
        if not self.writers:
            return None
        return pa.RecordBatch.from_pylist(
            [{PART: part, "file": os.path.join(self.folder, f"{PART}={part}", self.name),
              **self.summaries[part].row()} for part in sorted(self.writers)], schema=FILES_SCHEMA)


@dataclass
class PartSummary:
    """What the batch's summary needs of a part's rows (its copies: :func:`unique_parts` counts the changes)."""

    rows: int = 0
    staged: int = 0
    first_ts: int | None = None
    last_ts: int | None = None
    any_rowid: bool = False
    infos: set[str] = field(default_factory=set)
    hkinds: set[str] = field(default_factory=set)
    tkeys: set[str] = field(default_factory=set)
    #: (ts, rank, info digest) of a row with the highest (ts, rank), the highest digest among those.
    latest: tuple[int, int, str] | None = None

    def add(self, rows: pa.Table, *, tables: bool) -> None:
        """Take in ``rows`` (written rows of the part); ``tables``: also note their table keys."""
        if rows.num_rows == 0:
            return
        ts = rows.column("ts")
        bounds = pc.min_max(ts).as_py()
        self.rows += rows.num_rows
        self.staged += pc.sum(rows.column("staged").cast(pa.int64())).as_py() or 0
        self.first_ts = bounds["min"] if self.first_ts is None else min(self.first_ts, bounds["min"])
        self.last_ts = bounds["max"] if self.last_ts is None else max(self.last_ts, bounds["max"])
        self.any_rowid = self.any_rowid or bool(pc.any(pc.not_equal(rows.column("row_id"), 0)).as_py())
        self.infos.update(v for v in pc.unique(rows.column("info")).to_pylist() if v)
        self.hkinds.update(str(v) for v in pc.unique(rows.column("hkind")).to_pylist())
        if tables:
            self.tkeys.update(pc.unique(rows.column("tkey")).to_pylist())
        top = pc.equal(ts, bounds["max"])
        rank = pc.max(pc.filter(rows.column("rank"), top)).as_py()
        info = pc.max(pc.filter(rows.column("info"), pc.and_(top, pc.equal(rows.column("rank"), rank)))).as_py()
        latest = (bounds["max"], rank, info or "")
        self.latest = latest if self.latest is None else max(self.latest, latest)

    def merge(self, other: PartSummary) -> None:
        """Take in another file's summary of the same part."""
        if not other.rows:
            return
        self.rows += other.rows
        self.staged += other.staged
        self.first_ts = min(v for v in (self.first_ts, other.first_ts) if v is not None)
        self.last_ts = max(v for v in (self.last_ts, other.last_ts) if v is not None)
        self.any_rowid = self.any_rowid or other.any_rowid
        self.infos |= other.infos
        self.hkinds |= other.hkinds
        self.tkeys |= other.tkeys
        if other.latest is not None:
            self.latest = other.latest if self.latest is None else max(self.latest, other.latest)

    def row(self) -> dict[str, Any]:
        """This summary as a row of :data:`FILES_SCHEMA` (without the part and file)."""
        latest = self.latest or (None, None, None)
        return {"rows": self.rows, "staged": self.staged, "first_ts": self.first_ts, "last_ts": self.last_ts,
                "any_rowid": self.any_rowid, "infos": sorted(self.infos), "hkinds": sorted(self.hkinds),
                "tkeys": sorted(self.tkeys), "latest_ts": latest[0], "latest_rank": latest[1],
                "latest_info": latest[2]}

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> PartSummary:
        """The summary a :data:`FILES_SCHEMA` row holds."""
        latest = None if row["latest_ts"] is None else (row["latest_ts"], row["latest_rank"], row["latest_info"] or "")
        return cls(rows=row["rows"], staged=row["staged"], first_ts=row["first_ts"], last_ts=row["last_ts"],
                   any_rowid=bool(row["any_rowid"]), infos=set(row["infos"] or ()), hkinds=set(row["hkinds"] or ()),
                   tkeys=set(row["tkeys"] or ()), latest=latest)


def summarize_files(files: pa.Table) -> dict[int, PartSummary]:
    """Each part's summary over the files the writing tasks wrote (:data:`FILES_SCHEMA` rows)."""
    parts: dict[int, PartSummary] = {}
    for row in files.to_pylist():
        parts.setdefault(row[PART], PartSummary()).merge(PartSummary.of_row(row))
    return parts


def write_segments(batches: Iterator[pa.RecordBatch], folder: str, *,
                   buffered_rows: int = BUFFERED_ROWS) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: change rows with their ``part`` → a Parquet file per part in ``folder/part=<n>/``.

    Yields one row per file written (:data:`FILES_SCHEMA`): the driver keeps the files of the attempts that
    succeeded, and removes any other (a failed attempt's; :func:`keep_files`).
    """
    prepare_task()
    writer = SegmentWriter(folder, buffered_rows)
    for batch in batches:
        writer.add(pa.Table.from_batches([batch]).drop_columns([PART]), batch.column(PART))
    files = writer.close()
    if files is not None:
        yield files


@dataclass(frozen=True)
class SegmentMarks:
    """What a task needs to mark and place the rows of a file: :func:`pyticdc.spark.apply.batch.mark_columns`'s
    numbers and the batch's segment numbers."""

    released: int
    limit: int
    #: The DDL barriers every table has: (commit ts list, their levels).
    global_barriers: tuple[list[int], list[int]]
    #: Per table key with barriers of its own, its barriers (the global ones merged in).
    barriers: Mapping[str, tuple[list[int], list[int]]]
    #: (topic, partition, first offset of a decode task) → the resolved ts before that task's records.
    carry: Mapping[tuple[str, int, int], int]
    #: (table key, level) → segment number.
    parts: Mapping[tuple[str, int], int]


#: A (table, level) the batch did not number (mark_parts refuses its kept rows).
_NO_PART: Final = -2


def _levels(ts: Any, times: Sequence[int], levels: Sequence[int]) -> Any:
    # As Marks.level: rows at a barrier's ts go before it.
    import numpy

    return numpy.asarray([0, *levels], dtype=numpy.int32)[numpy.searchsorted(numpy.asarray(times, numpy.int64), ts)]


def mark_parts(rows: pa.Table, marks: SegmentMarks, staged: bool) -> tuple[pa.Table, pa.Array]:
    """A file's change rows (DECODED_SCHEMA) → those to keep, with ``staged``, and each one's part.

    The rules of :func:`pyticdc.spark.apply.batch.mark_columns`, in Arrow: a row not staged is re-sent (dropped)
    at or below the released ts or its partition's resolved ts where it was read (its task's running watermark
    and the task's carry); a row's level is its table's segment, by the DDL barriers; above the limit it waits
    (part -1).
    """
    import numpy

    ts = rows.column("ts").to_numpy()
    level = _levels(ts, *marks.global_barriers)
    encoded = pc.dictionary_encode(rows.column("tkey")).combine_chunks()
    keys = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    for code, key in enumerate(keys):
        if key in marks.barriers:
            mine = codes == code
            level[mine] = _levels(ts[mine], *marks.barriers[key])
    keep = numpy.ones(len(ts), dtype=bool)
    if not staged:
        before = rows.column("rb").to_numpy().copy()
        if marks.carry:
            portions = rows.select(["topic", "partition", "seg"]).group_by(["topic", "partition", "seg"]).aggregate([])
            for topic, partition, seg in zip(*(portions.column(c).to_pylist() for c in ("topic", "partition", "seg"))):
                carried = marks.carry.get((topic, partition, seg))
                if carried is not None:
                    mine = pc.and_(pc.and_(pc.equal(rows.column("topic"), topic),
                                           pc.equal(rows.column("partition"), partition)),
                                   pc.equal(rows.column("seg"), seg)).to_numpy(zero_copy_only=False)
                    before[mine] = numpy.maximum(before[mine], carried)
        keep = (ts > marks.released) & (ts > before)
    level[ts > marks.limit] = -1
    # Part by (table code, level): a small table of the batch's segments; level -1 → STAGED_PART. As wide as
    # every row's level: a dropped (re-sent) row may be at a level no kept row has.
    width = max([lv for _, lv in marks.parts] + [int(level.max()) if len(level) else 0, 0]) + 1
    table = numpy.full((len(keys), width + 1), _NO_PART, dtype=numpy.int32)
    table[:, width] = STAGED_PART
    for code, key in enumerate(keys):
        for lv in range(width):
            table[code, lv] = marks.parts.get((key, lv), _NO_PART)
    part = table[codes, numpy.where(level < 0, width, level)][keep]
    if (part == _NO_PART).any():
        # The parts name every (table, level) a kept row can have: a row without one would be lost.
        missing = sorted({(keys[c], int(lv)) for c, lv, p in zip(codes[keep], level[keep], part) if p == _NO_PART})
        raise ValueError(f"rows of segments the batch did not number: {missing[:5]}")
    kept = pa.array(keep)
    out = rows.select(DECODED_SCHEMA.names).filter(kept)
    out = out.append_column("staged", pa.repeat(pa.scalar(staged), out.num_rows))
    return out, pa.array(part, pa.int32())


def write_files(batches: Iterator[pa.RecordBatch], inputs: Sequence[tuple[str, bool]], marks: SegmentMarks,
                folder: str) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over task numbers: task ``n`` reads input file ``n`` (a decode's file, or a staged one)
    with pyarrow, marks its rows (:func:`mark_parts`) and writes them (:class:`SegmentWriter`).

    The rows never enter the JVM: Spark only schedules the tasks.
    """
    prepare_task()
    for batch in batches:
        for index in batch.column(0).to_pylist():
            path, staged = inputs[index]
            writer = SegmentWriter(folder)
            for rows in pq.ParquetFile(path).iter_batches(batch_size=BUFFERED_ROWS, columns=DECODED_SCHEMA.names,
                                                          use_threads=False):
                table, parts = mark_parts(pa.Table.from_batches([rows]), marks, staged)
                writer.add(table, parts)
            files = writer.close()
            if files is not None:
                yield files


def keep_files(folder: Path, files: Sequence[str]) -> None:
    """Remove from ``folder``'s parts every file but ``files`` (what a failed or repeated task attempt wrote)."""
    wanted = {os.path.abspath(f) for f in files}
    for path in folder.glob(f"{PART}=*/*"):
        if path.is_file() and os.path.abspath(path) not in wanted:
            path.unlink()


def unique_rows(folder: str, part: int) -> dict[str, int]:
    """De-duplicate one part's rows in place: one row per (table, change identity), its first delivery (a staged
    one, else the lowest (topic, partition, offset, idx)); a row of :data:`UNIQUE_SCHEMA`.

    Every delivery of a change is in the same part (its table, and its commit ts's level), so a part is
    de-duplicated alone. A part without repeats (the usual case) is only read (three columns). One with repeats
    is rewritten: the new file first (renamed into place), then the files it was made of are removed, so a
    retried attempt reads every change still.
    """
    path = os.path.join(folder, f"{PART}={part}")
    names = sorted(os.path.join(path, n) for n in os.listdir(path) if not n.startswith((".", "_")))
    keys = pq.read_table(names, columns=["tkey", "ident", "staged"], schema=_FILE_SCHEMA, use_threads=False)
    copies = keys.num_rows
    changes = keys.group_by(["tkey", "ident"], use_threads=False).aggregate([("staged", "max")])
    staged = pc.sum(changes.column("staged_max").cast(pa.int64())).as_py() or 0
    if changes.num_rows < copies:
        rows = pq.read_table(names, schema=_FILE_SCHEMA, use_threads=False)
        rows = rows.append_column("late", pc.invert(rows.column("staged")))
        rows = rows.take(pc.sort_indices(rows, [("tkey", "ascending"), ("ident", "ascending"), *_DELIVERY_ORDER]))
        tkeys, idents = rows.column("tkey"), rows.column("ident")
        first = pc.or_(pc.not_equal(tkeys.slice(1), tkeys.slice(0, rows.num_rows - 1)),
                       pc.not_equal(idents.slice(1), idents.slice(0, rows.num_rows - 1)))
        kept = rows.filter(pa.concat_arrays([pa.array([True]), *first.chunks])).drop_columns(["late"])
        name = f"part-{uuid.uuid4().hex}.parquet"
        temporary = os.path.join(path, f".{name}")  # hidden: no reader lists it until it is whole
        pq.write_table(kept, temporary, compression="none", use_dictionary=DICTIONARY_COLUMNS,
                       write_statistics=STATISTICS_COLUMNS)
        os.replace(temporary, os.path.join(path, name))
        for old in names:
            os.unlink(old)
    return {PART: part, "rows": changes.num_rows, "staged": staged, "copies": copies}


def unique_parts(batches: Iterator[pa.RecordBatch], folder: str,
                 groups: Sequence[Sequence[int]]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over task numbers: task ``n`` de-duplicates the parts of ``groups[n]``
    (:func:`unique_rows`); a row per part (:data:`UNIQUE_SCHEMA`)."""
    prepare_task()
    for batch in batches:
        for index in batch.column(0).to_pylist():
            rows = [unique_rows(folder, part) for part in groups[index]]
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=UNIQUE_SCHEMA)


def read_segment(folder: str, held: int) -> pa.Table:
    """One segment's change rows as the fold reads them (:data:`~pyticdc.spark.apply.net.NET_INPUT`); ``held``:
    its table's position."""
    table = pq.read_table(folder, columns=_READ, use_threads=False)
    return table.append_column("held", pa.repeat(pa.scalar(held, pa.int64()), table.num_rows))


def spread_tables(sizes: Mapping[_Key, int], tasks: int) -> list[list[_Key]]:
    """The tables (or parts) in at most ``tasks`` groups of about equal rows, largest group first (Spark starts its
    tasks in order, so the longest runs first); a table is never split."""
    count = max(1, min(tasks, len(sizes)))
    totals = [0] * count
    groups: list[list[_Key]] = [[] for _ in range(count)]
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        smallest = totals.index(min(totals))
        totals[smallest] += sizes[key]
        groups[smallest].append(key)
    return [groups[i] for i in sorted(range(count), key=lambda i: -totals[i]) if groups[i]]


@dataclass(frozen=True)
class LevelRows:
    """One level's change rows for the engines: each table's folder and row count, and the rows as a Spark frame
    (with its table's ``held`` position) for those that fold in Spark."""

    spark: Any
    folders: Mapping[str, str]
    sizes: Mapping[str, int]
    frame: Any


class WrittenChanges:
    """The folders of one batch's written change rows (see module docstring)."""

    def __init__(self, spark: Any, folder: Path, parts: Mapping[tuple[str, int], int],
                 sizes: Mapping[tuple[str, int], int]) -> None:
        self.spark = spark
        self.folder = folder
        #: (table key, level) → its segment number.
        self.parts = dict(parts)
        self.sizes = dict(sizes)

    def path(self, key: str, level: int) -> str:
        """The folder of a table's segment at ``level``."""
        return str(self.folder / f"{PART}={self.parts[(key, level)]}")

    def frame(self, level: int, keys: Sequence[str]) -> Any:
        """The rows of ``keys``'s segments at ``level`` as a Spark frame (DECODED_SCHEMA columns and ``staged``)."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        parts = [self.parts[(key, level)] for key in keys]
        return (self.spark.read.schema(from_arrow_schema(WRITTEN_SCHEMA)).parquet(str(self.folder))
                .where(F.col(PART).isin(parts)).drop(PART))

    def level(self, level: int, keys: Sequence[str], frame: Any) -> LevelRows:
        """What an engine is given for ``keys``'s segments at ``level`` (``frame``: :meth:`frame` with ``held``)."""
        return LevelRows(self.spark, {key: self.path(key, level) for key in keys},
                         {key: self.sizes[(key, level)] for key in keys}, frame)

    def discard_applied(self) -> None:
        """Remove the applied segments' folders (the staged rows stay, for the next batch)."""
        for part in set(self.parts.values()):
            shutil.rmtree(self.folder / f"{PART}={part}", ignore_errors=True)
