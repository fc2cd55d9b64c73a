"""The capture's Parquet copy: a batch reads every file holding its offsets, and only those."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pyticdc.spark.capture import CaptureCopy


def _write(folder: Path, records: list[tuple[str, int, int]], per_file: int, per_group: int) -> None:
    # As Spark writes it: each file sorted by (topic, partition, offset), row groups of ``per_group`` rows.
    folder.mkdir()
    for number, start in enumerate(range(0, len(records), per_file)):
        chunk = sorted(records[start:start + per_file])
        table = pa.table({"key": pa.array([None] * len(chunk), pa.binary()), "value": [b"v"] * len(chunk),
                          "topic": [r[0] for r in chunk], "partition": pa.array([r[1] for r in chunk], pa.int32()),
                          "offset": [r[2] for r in chunk]})
        pq.write_table(table, folder / f"part-{number:05d}.parquet", row_group_size=per_group)


def test_a_batch_reads_exactly_the_files_holding_its_offsets(tmp_path: Path) -> None:
    rng = random.Random(5)
    # Three partitions of two topics interleaved as a capture file has them, and a few lines that are no record.
    records = []
    next_offset = {("a", 0): 0, ("a", 1): 0, ("b", 0): 0}
    for _ in range(3000):
        tp = rng.choice(sorted(next_offset))
        records.append((tp[0], tp[1], next_offset[tp]))
        next_offset[tp] += 1
    records[1500:1500] = [("file:x", -1, 17)]
    _write(tmp_path / "copy", records, per_file=400, per_group=64)
    copy = CaptureCopy.of(tmp_path / "copy")
    assert len(copy.files) == 8
    assert copy.last_offsets() == {tp: count - 1 for tp, count in next_offset.items()}  # the line left out
    contents = {path: set(zip(*pq.read_table(path, columns=["topic", "partition", "offset"]).to_pydict().values()))
                for path, _ in copy.files}
    for _ in range(40):
        ranges = {}
        for tp, count in next_offset.items():
            if rng.random() < 0.8:
                begin = rng.randrange(count)
                ranges[tp] = (begin, begin + rng.randrange(1, 600))
        lines = rng.random() < 0.3
        chosen = set(copy.paths(ranges, lines=lines))
        needed = {path for path, held in contents.items()
                  if any((t, p) in ranges and ranges[(t, p)][0] <= o < ranges[(t, p)][1] for t, p, o in held)
                  or (lines and any(p < 0 for _, p, _ in held))}
        assert chosen == needed
        # The batch's files, read one by one as its decode tasks read them: its records and no other, in order.
        batch = copy.batch(ranges, lines=lines)
        assert set(batch.paths) == needed
        read = []
        for index in range(len(batch.paths)):
            table = batch.read_file(index)
            positions = list(zip(*(table.column(name).to_pylist() for name in ("topic", "partition", "offset"))))
            assert positions == sorted(positions)
            read.extend(positions)
        wanted = [(t, p, o) for t, p, o in records
                  if ((t, p) in ranges and ranges[(t, p)][0] <= o < ranges[(t, p)][1]) or (lines and p < 0)]
        assert sorted(read) == sorted(wanted)


def _capture(path: Path, rng: random.Random) -> tuple[list[tuple[bytes | None, bytes, str, int, int]], list[bytes]]:
    # Records of three partitions of two topics interleaved, and lines that are no record between them.
    from pyticdc.io.capture import record_line
    from pyticdc.model import KafkaRecord

    next_offset = {("a", 0): 0, ("a", 1): 0, ("b", 0): 0}
    records, bad, lines = [], [], []
    for number in range(700):
        if number % 97 == 13:
            line = b'{"topic": "a", "partition": 0, "offset": ' + str(number).encode()  # truncated
            bad.append(line)
            lines.append(line + b"\n")
            continue
        topic, partition = rng.choice(sorted(next_offset))
        record = KafkaRecord(topic=topic, partition=partition, offset=next_offset[(topic, partition)],
                             key=rng.choice([None, b"k"]), value=rng.randbytes(rng.randrange(1, 300)))
        next_offset[(topic, partition)] += 1
        records.append((record.key, record.value or b"", topic, partition, record.offset))
        lines.append(record_line(record) + b"\n")
    path.write_bytes(b"".join(lines))
    return records, bad


def test_a_split_is_copied_sorted_into_files_whose_offsets_it_reports(tmp_path: Path) -> None:
    from pyticdc.io.capture import plan_splits
    from pyticdc.spark.capture import COPY_SCHEMA, copy_split
    from pyticdc.spark.options import SourceOptions
    from pyticdc.spark.source import CapturePartition

    records, bad = _capture(tmp_path / "capture.jsonl", random.Random(7))
    options = SourceOptions.parse({"protocol": "canal-json", "output": "records",
                                   "path": str(tmp_path / "capture.jsonl")})
    splits = plan_splits(tmp_path / "capture.jsonl", max_split_bytes=40_000)
    assert len(splits) > 2
    copied: list[dict[str, Any]] = []
    reported: list[tuple[str, str, int, int, int]] = []
    for split in splits:
        held = copy_split(CapturePartition(split), options, str(tmp_path / "copy"), 60, 4_000)
        reported.extend(zip(*(held.column(name).to_pylist() for name in ("path", "topic", "partition", "first",
                                                                          "last"))))
    paths = sorted({row[0] for row in reported})
    assert paths == sorted(str(p) for p in (tmp_path / "copy").glob("*.parquet"))
    for path in paths:
        table = pq.read_table(path)
        assert table.schema.equals(COPY_SCHEMA) and 0 < table.num_rows <= 60
        assert pq.ParquetFile(path).metadata.num_row_groups > 1 or table.nbytes < 8_000
        positions = list(zip(*(table.column(name).to_pylist() for name in ("topic", "partition", "offset"))))
        assert positions == sorted(positions)
        copied.extend(table.to_pylist())
    # Every record once, with its bytes; each line that is no record as partition -1 with its bytes.
    assert sorted(((r["key"], r["value"], r["topic"], r["partition"], r["offset"]) for r in copied
                   if r["partition"] != -1), key=repr) == sorted(records, key=repr)
    assert sorted(r["value"] for r in copied if r["partition"] == -1) == sorted(bad)
    # What the tasks report is what the files hold.
    assert CaptureCopy.of(tmp_path / "copy").files == tuple(
        (path, tuple(sorted(row[1:] for row in reported if row[0] == path))) for path in paths)


def test_the_copy_job_names_the_files_it_wrote(spark: object, tmp_path: Path) -> None:
    from pyticdc.spark.capture import write_copy

    records, bad = _capture(tmp_path / "capture.jsonl", random.Random(8))
    options = {"protocol": "canal-json", "output": "records", "path": str(tmp_path / "capture.jsonl"),
               "maxPartitionBytes": "50000"}
    copy = write_copy(spark, options, tmp_path / "copy", 100, 8_000)
    assert copy.files == CaptureCopy.of(tmp_path / "copy").files and len(copy.files) >= 3
    batch = copy.batch({tp: (0, 1000) for tp in copy.last_offsets()}, lines=True)
    assert sum(batch.read_file(index).num_rows for index in range(len(batch.paths))) == len(records) + len(bad)
    (tmp_path / "blank.jsonl").write_bytes(b"\n \n")
    assert write_copy(spark, {**options, "path": str(tmp_path / "blank.jsonl")}, tmp_path / "none", 100,
                      8_000).files == ()
