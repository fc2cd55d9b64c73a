"""The capture's Parquet copy: a batch reads every file holding its offsets, and only those."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pyticdc.spark.capture import CaptureCopy


def _write(folder: Path, records: list[tuple[str, int, int]], per_file: int, per_group: int) -> None:
    # As Spark writes it: each file sorted by (topic, partition, offset), row groups of ``per_group`` rows.
    folder.mkdir()
    for number, start in enumerate(range(0, len(records), per_file)):
        chunk = sorted(records[start:start + per_file])
        table = pa.table({"key": [None] * len(chunk), "value": [b"v"] * len(chunk),
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
    copy = CaptureCopy.of(tmp_path / "copy", None)
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
