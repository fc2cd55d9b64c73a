"""Capture files: Kafka records saved to disk, so decoding can be replayed without a broker.

Three formats are read; the first two are also written (``pyticdc capture``):

``jsonl`` (pyticdc's own, the default)
    One JSON object per line, one line per Kafka record, in partition-offset order::

        {"topic": "cdc", "partition": 0, "offset": 12, "timestamp": 1763780000000,
         "key": "eyJ0cyI6NDYy...", "value": "eyJpZCI6MCwi..."}

    ``key`` and ``value`` are standard base64 (``null`` for a null key or a tombstone), so binary
    protocols (Craft, Open Protocol, Simple-Avro) survive byte for byte; ``timestamp`` is the Kafka
    record timestamp in milliseconds (``null`` when unknown). A name ending in ``.gz`` is gzip-compressed.
``parquet``
    The columns of Spark's Kafka source: ``key`` binary, ``value`` binary, ``topic`` string,
    ``partition`` int, ``offset`` bigint, ``timestamp`` timestamp, ``timestampType`` int. A
    ``spark.read.format("kafka")...write.parquet(dir)`` output directory is a valid capture.
``kcat``
    ``kcat -C -J`` output: one JSON envelope per line with ``topic``, ``partition``, ``offset``,
    ``ts`` (ms), ``key`` and ``payload``. kcat prints key and payload as *text*, so this format only
    carries the JSON protocols (Canal-JSON, Debezium, Simple-JSON), not the binary-framed ones (Open
    Protocol, Craft, Simple-Avro); read only, never written.

``format="auto"`` picks ``parquet`` for ``.parquet`` names and sniffs the first line of any other file
(``payload`` → ``kcat``, ``value`` → ``jsonl``).

Only Parquet needs pyarrow, and imports it when a Parquet file is read or written: the line formats work
with the base install (a Parquet file without pyarrow is a CaptureError saying how to install it).

Large line-oriented files are read in parallel by byte ranges (:func:`plan_splits`): a split owns the
lines that *start* inside ``[start, end)``, the way Hadoop splits text files, so every record is read
exactly once whatever the split size.
"""

from __future__ import annotations

import base64
import binascii
import glob
import gzip
import importlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Annotated, Any, Final, cast

import msgspec
import orjson
import pybase64

from pyticdc.errors import CaptureError
from pyticdc.model import KafkaRecord

__all__ = [
    "BAD_LINE_PARTITION",
    "CAPTURE_FORMATS",
    "KAFKA_COLUMNS",
    "BadLine",
    "CaptureSplit",
    "CaptureWriter",
    "arrow_to_records",
    "bad_line_reason",
    "bad_line_record",
    "capture_files",
    "detect_format",
    "import_parquet",
    "kafka_arrow_schema",
    "kafka_columns",
    "parse_line",
    "plan_splits",
    "read_capture",
    "read_split",
    "read_split_batches",
    "record_batches",
    "record_line",
    "records_to_arrow",
    "writable_format",
    "write_capture",
]

#: Capture formats by name (``auto`` is accepted wherever a format is asked for).
CAPTURE_FORMATS: Final = ("jsonl", "parquet", "kcat")
#: Columns of Spark's Kafka source, in its order (the Parquet capture layout).
KAFKA_COLUMNS: Final = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
#: Kafka's TimestampType for CreateTime (what TiCDC's producer sets).
_CREATE_TIME: Final = 0


#: The partition of a capture line that is not a record, handed to an engine as one (:func:`bad_line_record`).
BAD_LINE_PARTITION: Final = -1


@dataclass(frozen=True)
class BadLine:
    """A capture line that is not a record (read leniently): where it is, its bytes and why."""

    path: str
    #: Byte offset of the line in the (uncompressed) file.
    position: int
    line: bytes
    reason: str

    @property
    def why(self) -> str:
        """The reason every command reports and quarantines the line with."""
        return f"capture: {self.reason}"


# --------------------------------------------------------------------------- format
def import_parquet() -> ModuleType:
    """``pyarrow.parquet``, imported on first use; CaptureError saying how to install it when missing."""
    try:
        return importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise CaptureError(f"Parquet capture files need pyarrow ({exc}); pip install pyarrow, or use JSON Lines "
                           "(.jsonl, .jsonl.gz)") from None


def writable_format(path: str | Path, format: str = "auto") -> str:
    """The format a capture written to ``path`` gets: ``format``, or for ``auto`` parquet/jsonl by the name."""
    if format == "auto":
        format = "parquet" if Path(path).suffix == ".parquet" else "jsonl"
    if format not in ("jsonl", "parquet"):
        raise CaptureError(f"cannot write capture format {format!r}; writable formats: jsonl, parquet")
    return format


def _is_gzip(path: Path) -> bool:
    return path.name.endswith(".gz")


def _open_text(path: Path) -> IO[bytes]:
    if _is_gzip(path):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


#: Lines detect_format reads past lines that are not JSON before it calls the file JSON Lines.
_DETECT_LINES: Final = 1000


def detect_format(path: str | Path, format: str = "auto") -> str:
    """The capture format of ``path``: ``format`` itself unless ``auto``, else by name or first line."""
    if format != "auto":
        if format not in CAPTURE_FORMATS:
            raise CaptureError(f"unknown capture format {format!r}; valid formats: auto, {', '.join(CAPTURE_FORMATS)}")
        return format
    path = Path(path)
    if path.suffix == ".parquet" or path.is_dir():
        return "parquet"
    try:
        with _open_text(path) as handle:
            # The first JSON line decides. Lines that are not JSON (a garbled or truncated line, or a file
            # of nothing else) decide nothing: they are bad lines, which lenient readers quarantine with
            # their bytes and position, so they must not make the whole capture unreadable.
            for _ in range(_DETECT_LINES):
                line = handle.readline()
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    envelope = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(envelope, dict) and "payload" in envelope:
                    return "kcat"
                if isinstance(envelope, dict) and "value" in envelope:
                    return "jsonl"
                raise CaptureError(
                    f"{path}: first JSON line has neither 'value' (pyticdc jsonl) nor 'payload' (kcat -J); a file "
                    "of messages themselves is read with --lines FILE (one per line) or --value FILE")
    except OSError as exc:
        raise CaptureError(f"cannot read capture file {path}: {exc}") from None
    return "jsonl"  # empty, or no JSON line: a JSON Lines capture whose every line is bad


def capture_files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    """The capture files named by ``paths``: files, directories (every file inside, sorted) or globs.

    A comma-separated string is split. Hidden files and Spark/Hadoop side files (``_SUCCESS``,
    ``.crc``) are skipped. CaptureError if nothing matches.
    """
    if isinstance(paths, (str, Path)):
        items: list[str | Path] = [p.strip() for p in str(paths).split(",") if p.strip()]
    else:
        items = list(paths)
    files: list[Path] = []
    for item in items:
        text = str(item)
        matches = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        if not matches:
            raise CaptureError(f"no capture file matches {text!r}")
        for match in matches:
            path = Path(match)
            if path.is_dir():
                files.extend(p for p in sorted(path.rglob("*")) if p.is_file() and _visible(p))
            elif path.is_file():
                files.append(path)
            else:
                raise CaptureError(f"no such capture file: {path}")
    if not files:
        raise CaptureError(f"no capture files in {paths!r}")
    return files


def _visible(path: Path) -> bool:
    name = path.name
    return not (name.startswith((".", "_")) or name.endswith(".crc"))


# --------------------------------------------------------------------------- jsonl / kcat lines
def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def record_line(record: KafkaRecord) -> bytes:
    """One pyticdc ``jsonl`` line (with its newline) for ``record``."""
    return orjson.dumps({
        "topic": record.topic, "partition": record.partition, "offset": record.offset,
        "timestamp": record.timestamp_ms or None, "key": _b64(record.key), "value": _b64(record.value),
    }) + b"\n"


def _unb64(text: Any, field: str, where: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise CaptureError(f"{where}: {field!r} must be a base64 string or null")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CaptureError(f"{where}: {field!r} is not valid base64") from None


#: The ranges of a Kafka record's numbers, as Spark's Kafka source holds them: an int partition, a bigint
#: offset, and a timestamp in milliseconds that microseconds still fit in a bigint.
_PARTITIONS: Final = (-(1 << 31), (1 << 31) - 1)
_OFFSETS: Final = (-(1 << 63), (1 << 63) - 1)
_MAX_MS: Final = ((1 << 63) - 1) // 1000


def _int_field(envelope: dict[str, Any], name: str, where: str, bounds: tuple[int, int],
               default: int | None = None) -> int:
    value = envelope.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CaptureError(f"{where}: {name!r} must be an integer, got {value!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise CaptureError(f"{where}: {name!r} {value} is out of range ({bounds[0]} to {bounds[1]})")
    return value


class _JsonlLine(msgspec.Struct):
    """A ``jsonl`` line as parse_line's common case reads it (msgspec checks the types in one pass)."""

    topic: str
    partition: Annotated[int, msgspec.Meta(ge=_PARTITIONS[0], le=_PARTITIONS[1])]
    offset: Annotated[int, msgspec.Meta(ge=_OFFSETS[0], le=_OFFSETS[1])] = -1
    timestamp: Annotated[int, msgspec.Meta(le=_MAX_MS)] | None = None
    key: str | None = None
    value: str | None = None


_read_jsonl: Final = msgspec.json.Decoder(_JsonlLine).decode


def _strict_b64(text: str) -> bytes:
    # pybase64's SIMD decoder: 6x binascii's on a 1 kB value, where base64 was a sixth of a Spark task's time.
    # validate=True refuses what binascii's strict mode refuses (tests/io/test_capture_fast_lines.py).
    return pybase64.b64decode(text, validate=True)


def _fast_jsonl(line: bytes) -> KafkaRecord | None:
    """parse_line's record for a plain ``jsonl`` line, or None: then parse_line reads it field by field
    (and alone words its errors). Plain: ASCII without ``\\u`` escapes, so msgspec and orjson read the
    same JSON (no invalid UTF-8 or lone surrogate one of them would let through), then the fields of
    the types parse_line wants (msgspec never takes a bool for an int) and strict base64."""
    if not line.isascii() or b"\\u" in line:
        return None
    try:
        fields = _read_jsonl(line)
        key = None if fields.key is None else _strict_b64(fields.key)
        value = None if fields.value is None else _strict_b64(fields.value)
    except (msgspec.DecodeError, binascii.Error, ValueError):
        return None
    timestamp = fields.timestamp
    return KafkaRecord(topic=fields.topic, partition=fields.partition, offset=fields.offset, key=key, value=value,
                       timestamp_ms=timestamp if timestamp and timestamp > 0 else 0)


def parse_line(line: bytes, format: str, where: str = "capture") -> KafkaRecord:
    """A KafkaRecord from one ``jsonl`` or ``kcat`` line; CaptureError naming ``where`` otherwise."""
    if format == "jsonl":
        found = _fast_jsonl(line)
        if found is not None:
            return found
    return _parse_fields(line, format, where)


def _parse_fields(line: bytes, format: str, where: str) -> KafkaRecord:
    """parse_line field by field: every check, every error's words."""
    try:
        envelope = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CaptureError(f"{where}: not JSON ({exc})") from None
    if not isinstance(envelope, dict):
        raise CaptureError(f"{where}: a capture line must be a JSON object")
    topic = envelope.get("topic")
    if not isinstance(topic, str):
        raise CaptureError(f"{where}: 'topic' must be a string")
    partition = _int_field(envelope, "partition", where, _PARTITIONS)
    offset = _int_field(envelope, "offset", where, _OFFSETS, -1)
    if format == "kcat":
        timestamp = envelope.get("ts")
        key = _kcat_bytes(envelope.get("key"))
        value = _kcat_bytes(envelope.get("payload"))
    else:
        timestamp = envelope.get("timestamp")
        key = _unb64(envelope.get("key"), "key", where)
        value = _unb64(envelope.get("value"), "value", where)
    if timestamp is not None and (isinstance(timestamp, bool) or not isinstance(timestamp, int)
                                  or timestamp > _MAX_MS):
        raise CaptureError(f"{where}: timestamp must be milliseconds (at most {_MAX_MS}) or null")
    return KafkaRecord(topic=topic, partition=partition, offset=offset, key=key, value=value,
                       timestamp_ms=timestamp if timestamp and timestamp > 0 else 0)


def _kcat_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    # ``kcat -s value=json`` embeds the document itself: re-serialise it (same JSON, maybe other spacing).
    return orjson.dumps(value)


#: Bytes of whole lines read at a time (a block ends at the end of the line holding its last byte).
_BLOCK_BYTES: Final = 4 << 20


def _line_blocks(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(byte position, bytes) of blocks of whole lines: the lines that start in ``[start, end)``, in order."""
    with _open_text(path) as handle:
        position = 0
        if start > 0:
            # The line holding byte start-1 belongs to the previous split; ours begin after its newline.
            handle.seek(start - 1)
            position = start - 1 + len(handle.readline())
        while end is None or position < end:
            block = handle.read(_BLOCK_BYTES if end is None else min(_BLOCK_BYTES, end - position))
            if not block:
                break
            if not block.endswith(b"\n"):
                block += handle.readline()  # the last line started in the block: it is the block's, to its end
            yield position, block
            position += len(block)


def _block_lines(path: Path, format: str, block: bytes, at: int, *,
                 lenient: bool) -> Iterator[KafkaRecord | BadLine]:
    # The records of one block, line by line (``at``: the block's byte position in the file).
    begin, size = 0, len(block)
    while begin < size:
        stop = block.find(b"\n", begin)
        stop = size if stop < 0 else stop + 1
        line = block[begin:stop]
        where, begin = at + begin, stop
        if line.isspace():  # a blank line (isspace: strip()'s whitespace, without the copy)
            continue
        # The plain line first: its position is formatted only for a line that needs the words.
        found = _fast_jsonl(line) if format == "jsonl" else None
        if found is not None:
            yield found
            continue
        try:
            yield _parse_fields(line, format, f"{path} (byte {where})")
        except CaptureError as exc:
            if not lenient:
                raise
            yield BadLine(str(path), where, line.rstrip(b"\r\n"), str(exc))


def _read_lines(
    path: Path, format: str, start: int = 0, end: int | None = None, *, lenient: bool = False,
) -> Iterator[KafkaRecord | BadLine]:
    """Records of the lines that start in ``[start, end)`` (the whole file for end=None).

    ``lenient`` yields a BadLine for a malformed line instead of raising CaptureError.
    """
    for at, block in _line_blocks(path, start, end):
        yield from _block_lines(path, format, block, at, lenient=lenient)


def _plain_block(block: bytes) -> list[_JsonlLine] | None:
    """The lines of a ``jsonl`` block parsed as :func:`_fast_jsonl` parses a plain line, when all are plain;
    else None (a blank line too: the block is then read line by line)."""
    if not block.isascii() or b"\\u" in block:
        return None
    try:
        # Split at the newlines, as readline does (msgspec's decode_lines takes any whitespace between values:
        # an object spanning two lines, or two on one line, would pass).
        return [_read_jsonl(line) for line in block.split(b"\n") if line]
    except msgspec.DecodeError:
        return None


def _fields_batch(fields: list[_JsonlLine]) -> Any:
    # The records of plain lines as one Arrow batch (records_to_arrow's columns); None when a key or value is
    # not strict base64 (the block is then read line by line, which words the error).
    import pyarrow as pa

    try:
        keys = [None if f.key is None else _strict_b64(f.key) for f in fields]
        values = [None if f.value is None else _strict_b64(f.value) for f in fields]
    except (binascii.Error, ValueError):
        return None
    return pa.RecordBatch.from_arrays([
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.array([f.topic for f in fields], pa.string()),
        pa.array([f.partition for f in fields], pa.int32()),
        pa.array([f.offset for f in fields], pa.int64()),
        pa.array([f.timestamp * 1000 if f.timestamp and f.timestamp > 0 else None for f in fields],
                 pa.timestamp("us", tz="UTC")),
        pa.repeat(pa.scalar(_CREATE_TIME, pa.int32()), len(fields)),
    ], schema=kafka_arrow_schema())


def record_batches(items: Iterable[KafkaRecord | BadLine], rows: int) -> Iterator[Any]:
    """Records as Arrow batches (:func:`records_to_arrow`) of at most ``rows``; a BadLine as itself, in its
    place between them."""
    chunk: list[KafkaRecord] = []
    for item in items:
        if isinstance(item, BadLine):
            if chunk:
                yield records_to_arrow(chunk)
                chunk = []
            yield item
            continue
        chunk.append(item)
        if len(chunk) >= rows:
            yield records_to_arrow(chunk)
            chunk = []
    if chunk:
        yield records_to_arrow(chunk)


def read_split_batches(split: CaptureSplit, *, rows: int = 65536) -> Iterator[Any]:
    """:func:`read_split`'s records (lenient) as Arrow batches of the Kafka columns (:func:`kafka_arrow_schema`),
    at most ``rows`` each; a malformed line as its BadLine, in its place. Needs pyarrow.

    A ``jsonl`` block of plain lines (:func:`_plain_block`) is read in one msgspec pass and goes to Arrow
    without a KafkaRecord per line; any other block is read line by line.
    """
    import_parquet()
    if split.format == "parquet":
        for first, table in _parquet_groups(Path(split.path), split.row_groups):
            if _without_positions(table):
                # Rows without their coordinates are bad lines, in their place: record by record.
                yield from record_batches(_arrow_items(table, lenient=True, path=split.path, first_row=first), rows)
            else:
                yield from kafka_columns(table).to_batches(max_chunksize=rows)
        return
    if split.format != "jsonl":
        yield from record_batches(read_split(split, lenient=True), rows)
        return
    path = Path(split.path)
    for at, block in _line_blocks(path, split.start, split.end):
        fields = _plain_block(block)
        batch = None if fields is None else _fields_batch(fields)
        if batch is None:
            yield from record_batches(_block_lines(path, "jsonl", block, at, lenient=True), rows)
            continue
        for offset in range(0, batch.num_rows, rows):
            yield batch.slice(offset, rows)


# --------------------------------------------------------------------------- parquet
def kafka_arrow_schema() -> Any:
    """The Arrow schema of Spark's Kafka source columns (``pyarrow.Schema``)."""
    import_parquet()
    import pyarrow as pa

    return pa.schema([
        ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
        ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
    ])


def records_to_arrow(records: Sequence[KafkaRecord]) -> Any:
    """Records as a ``pyarrow.RecordBatch`` with the Kafka source columns."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.partition for r in records], pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp_ms * 1000 if r.timestamp_ms else None for r in records], pa.timestamp("us", tz="UTC")),
        pa.array([_CREATE_TIME] * len(records), pa.int32()),
    ], schema=kafka_arrow_schema())


def arrow_to_records(batch: Any) -> Iterator[KafkaRecord]:
    """KafkaRecords of a table or batch holding (at least) the Kafka source columns.

    A row without its Kafka coordinates (a null topic, partition or offset) is a CaptureError.
    """
    for item in _arrow_items(batch):
        assert isinstance(item, KafkaRecord)  # not lenient: a bad row raises
        yield item


def _arrow_items(batch: Any, *, lenient: bool = False, path: str = "",
                 first_row: int = 0) -> Iterator[KafkaRecord | BadLine]:
    # arrow_to_records; ``lenient``: a row without its coordinates is a BadLine of ``path`` at its row number
    # (``first_row`` is the batch's first), with its value.
    import pyarrow as pa
    import pyarrow.compute as pc

    names = set(batch.schema.names)
    missing = [c for c in ("value", "topic", "partition", "offset") if c not in names]
    if missing:
        raise CaptureError(f"Parquet capture lacks the Kafka columns {missing}; it needs {list(KAFKA_COLUMNS)}")
    count = batch.num_rows
    keys = batch.column("key").to_pylist() if "key" in names else [None] * count
    values = batch.column("value").to_pylist()
    topics = batch.column("topic").to_pylist()
    partitions = batch.column("partition").to_pylist()
    offsets = batch.column("offset").to_pylist()
    if "timestamp" in names:
        column = batch.column("timestamp")
        if pa.types.is_timestamp(column.type):
            # Spark writes INT96 (read back as ns) or micros: normalise any unit to milliseconds.
            column = pc.cast(pc.cast(column, pa.timestamp("ms", tz=column.type.tz), safe=False), pa.int64())
        timestamps = column.to_pylist()
    else:
        timestamps = [None] * count
    for row, (key, value, topic, partition, offset, timestamp) in enumerate(
            zip(keys, values, topics, partitions, offsets, timestamps)):
        if topic is None or partition is None or offset is None:
            reason = f"{path or 'Parquet capture'} (row {first_row + row}): {_NO_COORDINATES}"
            if not lenient:
                raise CaptureError(reason)
            yield BadLine(path, first_row + row, bytes(value or b""), reason)
            continue
        yield KafkaRecord(topic=topic, partition=int(partition), offset=int(offset), key=key, value=value,
                          timestamp_ms=int(timestamp) if timestamp and timestamp > 0 else 0)


#: Why a Parquet capture row is no record.
_NO_COORDINATES: Final = "a null topic, partition or offset (a record has all)"


def _without_positions(table: Any) -> bool:
    # Whether a row of ``table`` lacks its topic, partition or offset (no Kafka record).
    return any(name in table.column_names and table.column(name).null_count > 0
               for name in ("topic", "partition", "offset"))


def kafka_columns(table: Any) -> Any:
    """A table holding (at least) the Kafka source columns as :func:`records_to_arrow` makes them of its
    :func:`arrow_to_records` records (``pyarrow.Table``), column by column.

    The columns of Spark's Kafka source (or any integer partition, offset and timestamp) go by Arrow casts; a
    table with null positions, other types or values out of range goes record by record, as before.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = set(table.schema.names)
    missing = [c for c in ("value", "topic", "partition", "offset") if c not in names]
    if missing:
        raise CaptureError(f"Parquet capture lacks the Kafka columns {missing}; it needs {list(KAFKA_COLUMNS)}")
    count = table.num_rows
    try:
        if _without_positions(table) or not all(
                pa.types.is_integer(table.schema.field(name).type) for name in ("partition", "offset")):
            raise pa.ArrowInvalid("not the source's columns")
        columns: dict[str, Any] = {
            "key": table.column("key").cast(pa.binary()) if "key" in names else pa.nulls(count, pa.binary()),
            "value": table.column("value").cast(pa.binary()),
            "topic": table.column("topic").cast(pa.string()),
            "partition": table.column("partition").cast(pa.int32()),
            "offset": table.column("offset").cast(pa.int64()),
        }
        stamps = pa.nulls(count, pa.int64())
        if "timestamp" in names:
            stamps = table.column("timestamp")
            if pa.types.is_timestamp(stamps.type):
                stamps = pc.cast(pc.cast(stamps, pa.timestamp("ms", tz=stamps.type.tz), safe=False), pa.int64())
            elif not pa.types.is_integer(stamps.type):
                raise pa.ArrowInvalid("not the source's timestamp")
            stamps = stamps.cast(pa.int64())
            if (pc.max(stamps).as_py() or 0) > _MAX_MS:
                raise pa.ArrowInvalid("a timestamp past 64-bit microseconds")
        positive = pc.fill_null(pc.greater(stamps, 0), False)
        columns["timestamp"] = pc.if_else(positive, pc.multiply(stamps, 1000), None).cast(
            pa.timestamp("us", tz="UTC"))
        columns["timestampType"] = pa.repeat(pa.scalar(_CREATE_TIME, pa.int32()), count)
        return pa.table(columns, schema=kafka_arrow_schema())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.Table.from_batches([records_to_arrow(list(arrow_to_records(table)))], schema=kafka_arrow_schema())


def bad_line_record(bad: BadLine, *, with_reason: bool = False) -> KafkaRecord:
    """A capture line that is not a record, as a record: topic ``file:PATH``, partition -1, offset its byte position
    (a Parquet capture's: its row number), value the line; ``with_reason``: its key is :attr:`BadLine.why` (UTF-8),
    which the engines quarantine it with (:func:`bad_line_reason`)."""
    return KafkaRecord(topic=f"file:{bad.path}", partition=BAD_LINE_PARTITION, offset=bad.position,
                       key=bad.why.encode("utf-8", "backslashreplace") if with_reason else None, value=bad.line)


def bad_line_reason(topic: str, position: int, key: bytes | None, value: bytes | None) -> str:
    """Why a record of :func:`bad_line_record` is no record: the reason it carries in its key.

    A partition -1 record without one (a capture copy written before the reason was carried) has its reason
    found again from its bytes.
    """
    if key:
        return key.decode("utf-8", "replace")
    name = topic.removeprefix("file:")
    if name.endswith(".parquet"):
        # Nothing in a Parquet row but its missing coordinates makes it no record.
        return f"capture: {name} (row {position}): {_NO_COORDINATES}"
    where = f"{name} (byte {position})"
    try:
        parse_line(value or b"", "jsonl", where)
    except CaptureError as exc:
        return f"capture: {exc}"
    return f"capture: {where}: not a record of a Kafka partition"


def _parquet_file(path: Path) -> Any:
    pq = import_parquet()
    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise CaptureError(f"{path}: not a readable Parquet file ({exc})") from None


def _parquet_groups(path: Path, row_groups: Sequence[int] | None) -> Iterator[tuple[int, Any]]:
    # (the group's first row number in the file, its Kafka columns) of each row group read.
    handle = _parquet_file(path)
    wanted = [c for c in KAFKA_COLUMNS if c in handle.schema_arrow.names]
    metadata = handle.metadata
    firsts = [0]
    for index in range(metadata.num_row_groups):
        firsts.append(firsts[-1] + metadata.row_group(index).num_rows)
    for group in range(handle.num_row_groups) if row_groups is None else row_groups:
        yield firsts[group], handle.read_row_group(group, columns=wanted)


def _read_parquet(path: Path, row_groups: Sequence[int] | None = None, *,
                  lenient: bool = False) -> Iterator[KafkaRecord | BadLine]:
    for first, table in _parquet_groups(path, row_groups):
        yield from _arrow_items(table, lenient=lenient, path=str(path), first_row=first)


# --------------------------------------------------------------------------- reading
def read_capture(paths: str | Path | Sequence[str | Path], format: str = "auto") -> Iterator[KafkaRecord]:
    """Every record of the capture files ``paths`` (see :func:`capture_files`), in file order."""
    for path in capture_files(paths):
        kind = detect_format(path, format)
        if kind == "parquet":
            for item in _read_parquet(path):
                assert isinstance(item, KafkaRecord)  # not lenient: bad rows raise
                yield item
        else:
            for record in _read_lines(path, kind):
                assert isinstance(record, KafkaRecord)  # not lenient: bad lines raise
                yield record


@dataclass(frozen=True)
class CaptureSplit:
    """A part of one capture file one Spark task reads: a byte range or some Parquet row groups."""

    path: str
    format: str
    #: Byte range ``[start, end)`` of a line format; end None = to the end of the file.
    start: int = 0
    end: int | None = None
    #: Parquet row groups; None = all of them.
    row_groups: tuple[int, ...] | None = None


def read_split(split: CaptureSplit, *, lenient: bool = False) -> Iterator[KafkaRecord | BadLine]:
    """The records of one split; ``lenient`` yields BadLine for malformed lines instead of raising."""
    path = Path(split.path)
    if split.format == "parquet":
        return _read_parquet(path, split.row_groups, lenient=lenient)
    return _read_lines(path, split.format, split.start, split.end, lenient=lenient)


def plan_splits(
    paths: str | Path | Sequence[str | Path], format: str = "auto", *, max_split_bytes: int = 64 << 20,
    min_splits: int = 1, splittable: bool = True,
) -> list[CaptureSplit]:
    """Cut capture files into splits of at most ``max_split_bytes`` (or at least ``min_splits`` in all).

    ``splittable=False`` keeps each file whole (a stateful protocol must see a partition's records in
    order in one task); gzip files are never split. Parquet splits are whole row groups.
    """
    files = capture_files(paths)
    formats = [detect_format(f, format) for f in files]
    sizes = [f.stat().st_size for f in files]
    total = sum(sizes)
    # Like Spark's FilePartition.maxSplitBytes: enough splits to keep min_splits cores busy.
    target = max(1, min(max_split_bytes, -(-total // max(1, min_splits)) if total else max_split_bytes))
    splits: list[CaptureSplit] = []
    for path, kind, size in zip(files, formats, sizes):
        if kind == "parquet":
            splits.extend(_parquet_splits(path, target if splittable else None))
        elif not splittable or _is_gzip(path) or size <= target:
            splits.append(CaptureSplit(str(path), kind))
        else:
            for start in range(0, size, target):
                end = start + target
                splits.append(CaptureSplit(str(path), kind, start, None if end >= size else end))
    return splits


def _parquet_splits(path: Path, target: int | None) -> list[CaptureSplit]:
    if path.is_dir():
        return [CaptureSplit(str(p), "parquet") for p in capture_files(path)]
    metadata = _parquet_file(path).metadata
    if target is None or metadata.num_row_groups <= 1:
        return [CaptureSplit(str(path), "parquet")]
    splits: list[CaptureSplit] = []
    group: list[int] = []
    size = 0
    for index in range(metadata.num_row_groups):
        group.append(index)
        size += metadata.row_group(index).total_byte_size
        if size >= target:
            splits.append(CaptureSplit(str(path), "parquet", row_groups=tuple(group)))
            group, size = [], 0
    if group:
        splits.append(CaptureSplit(str(path), "parquet", row_groups=tuple(group)))
    return splits


# --------------------------------------------------------------------------- writing
class CaptureWriter:
    """Writes records to one capture file (``jsonl``, gzip when the name ends in .gz, or ``parquet``).

    Use as a context manager; ``count`` is the number of records written so far. The records go to a
    temporary file next to ``path``, renamed to ``path`` by :meth:`close`: a writer left by an exception
    (the ``with`` block raised) or :meth:`abort` removes it, so a failure never leaves a partial file.
    """

    def __init__(self, path: str | Path, format: str = "auto", *, row_group_records: int = 65536) -> None:
        self.path = Path(path)
        self.format = format = writable_format(self.path, format)
        if format == "parquet":
            import_parquet()  # fail now, before any file is created
        self.count = 0
        self._row_group_records = row_group_records
        self._pending: list[KafkaRecord] = []
        self._parquet: Any = None
        self._handle: IO[bytes] | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Same directory (the rename stays in one file system); the name says what is being written.
        self._partial = self.path.with_name(f".{self.path.name}.partial-{os.getpid()}-{id(self):x}")
        self._done = False
        if format == "jsonl":
            if _is_gzip(self.path):
                self._handle = cast(IO[bytes], gzip.open(self._partial, "wb"))
            else:
                self._handle = open(self._partial, "wb", buffering=1 << 20)

    def write(self, record: KafkaRecord) -> None:
        """Append one record."""
        if self._handle is not None:
            self._handle.write(record_line(record))
        else:
            self._pending.append(record)
            if len(self._pending) >= self._row_group_records:
                self._flush_parquet()
        self.count += 1

    def write_all(self, records: Iterable[KafkaRecord]) -> int:
        """Append records; returns how many."""
        before = self.count
        for record in records:
            self.write(record)
        return self.count - before

    def _flush_parquet(self) -> None:
        if not self._pending:
            return
        pq = import_parquet()
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self._partial, kafka_arrow_schema())
        self._parquet.write_batch(records_to_arrow(self._pending))
        self._pending = []

    def close(self) -> None:
        """Finish the file (flushes buffered records) and give it its name."""
        if self._done:
            return
        self._finish()
        os.replace(self._partial, self.path)
        self._done = True

    def _finish(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            return
        if self.format == "parquet":
            if self._parquet is None and not self._pending:
                import_parquet().write_table(kafka_arrow_schema().empty_table(), self._partial)
                return
            self._flush_parquet()
            if self._parquet is not None:
                self._parquet.close()
                self._parquet = None

    def abort(self) -> None:
        """Stop writing and remove what was written: no file at ``path`` (an existing one stays as it was)."""
        if self._done:
            return
        self._done = True
        try:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
            if self._parquet is not None:
                self._parquet.close()
                self._parquet = None
        finally:
            self._partial.unlink(missing_ok=True)

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is not None:
            self.abort()
        else:
            self.close()


def write_capture(path: str | Path, records: Iterable[KafkaRecord], format: str = "auto") -> int:
    """Write ``records`` to a new capture file; returns how many were written."""
    with CaptureWriter(path, format) as writer:
        return writer.write_all(records)
