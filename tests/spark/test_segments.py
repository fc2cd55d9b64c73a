"""The written change rows of a batch: a folder per segment, the staging, the apply tasks' tables (no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.spark.apply.net import NET_INPUT
from pyticdc.spark.apply.segments import (
    FILES_SCHEMA,
    PART,
    STAGED_PART,
    WRITTEN_SCHEMA,
    keep_files,
    read_segment,
    spread_tables,
    staged_rows,
    write_segments,
)


def _rows(parts: list[int], start: int = 0) -> pa.RecordBatch:
    # Change rows whose ts is their number (from ``start``) and whose table and image name their part.
    count = len(parts)
    columns = {field.name: pa.nulls(count, field.type) for field in WRITTEN_SCHEMA}
    columns.update(tkey=pa.array([f"s\x00t{p}" for p in parts]), ts=pa.array(range(start, start + count), pa.int64()),
                   post=pa.array([f'{{"part":{p}}}' for p in parts]), staged=pa.array([p % 2 == 0 for p in parts]),
                   op=pa.array(["insert"] * count))
    columns[PART] = pa.array(parts, pa.int32())
    return pa.RecordBatch.from_pydict(columns, schema=WRITTEN_SCHEMA)


@given(st.lists(st.lists(st.integers(-1, 5), max_size=40), max_size=6), st.integers(1, 50))
@settings(max_examples=60, deadline=None)
def test_written_rows_land_in_their_parts_folder_once(tmp_path_factory: pytest.TempPathFactory,
                                                      batches: list[list[int]], bound: int) -> None:
    folder = tmp_path_factory.mktemp("written")
    starts = [sum(len(b) for b in batches[:n]) for n in range(len(batches))]
    # Small bounds: a part's rows are written in several row groups.
    written = write_segments(iter([_rows(b, start) for b, start in zip(batches, starts)]), str(folder),
                             buffered_rows=bound)
    files = pa.Table.from_batches(list(written), schema=FILES_SCHEMA)
    expected: dict[int, list[tuple[int, str]]] = {}
    base = 0
    for parts in batches:
        for index, part in enumerate(parts):
            expected.setdefault(part, []).append((base + index, f"s\x00t{part}"))
        base += len(parts)
    assert sorted(files.column(PART).to_pylist()) == sorted(expected)
    assert {row[PART]: row["rows"] for row in files.to_pylist()} == {p: len(r) for p, r in expected.items()}
    for row in files.to_pylist():
        assert Path(row["file"]).parent == folder / f"{PART}={row[PART]}"
    for part, rows in expected.items():
        read = pq.read_table(folder / f"{PART}={part}")
        assert PART not in read.column_names and read.schema.field("staged").type == pa.bool_()
        assert sorted(zip(read.column("ts").to_pylist(), read.column("tkey").to_pylist())) == rows


def test_an_apply_task_reads_its_segment_with_its_tables_position(tmp_path: Path) -> None:
    files = list(write_segments(iter([_rows([0, 3, 0, STAGED_PART])]), str(tmp_path)))
    assert len(files) == 1 and files[0].num_rows == 3
    rows = read_segment(str(tmp_path / f"{PART}=0"), held=42)
    assert rows.column_names == [c for c in NET_INPUT if c != "held"] + ["held"]
    assert rows.column("ts").to_pylist() == [0, 2] and rows.column("held").to_pylist() == [42, 42]


def test_a_failed_attempts_files_are_removed_and_the_staging_is_the_minus_one_part(tmp_path: Path) -> None:
    first = pa.Table.from_batches(list(write_segments(iter([_rows([0, STAGED_PART])]), str(tmp_path))))
    retried = pa.Table.from_batches(list(write_segments(iter([_rows([0, STAGED_PART])]), str(tmp_path))))
    assert len(list(tmp_path.glob(f"{PART}=*/*.parquet"))) == 4  # both attempts' files
    keep_files(tmp_path, retried.column("file").to_pylist())
    assert sorted(tmp_path.glob(f"{PART}=*/*.parquet")) == sorted(Path(f) for f in retried.column("file").to_pylist())
    assert not set(first.column("file").to_pylist()) & {str(p) for p in tmp_path.glob("**/*.parquet")}
    assert staged_rows(tmp_path) == tmp_path / f"{PART}={STAGED_PART}"
    assert pq.read_table(staged_rows(tmp_path)).num_rows == 1


def test_staged_rows_of_a_version_without_any_and_of_one_written_before_parts(tmp_path: Path) -> None:
    assert staged_rows(tmp_path / "v3") is None
    list(write_segments(iter([_rows([0, 1])]), str(tmp_path / "v4")))
    assert staged_rows(tmp_path / "v4") is None  # applied segments only: nothing waits
    old = tmp_path / "v5"
    old.mkdir()
    pq.write_table(pa.Table.from_batches([_rows([STAGED_PART])]), old / "part-0.parquet")
    assert staged_rows(old) == old


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.integers(1, 1000), max_size=30), st.integers(1, 8))
def test_tables_spread_over_tasks_evenly_each_table_once_largest_first(sizes: dict[str, int], tasks: int) -> None:
    groups = spread_tables(sizes, tasks)
    assert sorted(k for g in groups for k in g) == sorted(sizes)
    assert len(groups) == min(tasks, len(sizes))
    totals = [sum(sizes[k] for k in g) for g in groups]
    assert totals == sorted(totals, reverse=True)
    if sizes:
        # Each table went to the least loaded task: no two tasks differ by more than one table's rows.
        assert totals[0] - totals[-1] <= max(sizes.values())


def test_a_files_marks_drop_level_and_place_exactly_the_rows_the_python_marks_do() -> None:
    import functools
    import random

    from pyticdc.consumer.state import ConsumerState
    from pyticdc.sim import FaultPlan, WorkloadConfig, inject, interleave, produce, simulate, with_offsets
    from pyticdc.spark.apply.decode import CHANGE_SCHEMA, decode_records, mark_changes
    from pyticdc.spark.apply.plan import plan_batch
    from pyticdc.spark.apply.segments import SegmentMarks, mark_parts

    history = simulate(31, WorkloadConfig(transactions=40))
    rng = random.Random(31)
    logs = with_offsets(inject(produce(history, "canal-json", {"enable-tidb-extension": "true"}, topic="t",
                                       partitions=3), FaultPlan(), rng))
    records = [{"key": r.key, "value": r.value, "topic": r.topic, "partition": r.partition, "offset": r.offset}
               for r in interleave(logs, rng)]
    # Four decode tasks over the interleaved stream: every partition is split between tasks.
    chunks = [records[len(records) * k // 4:len(records) * (k + 1) // 4] for k in range(4)]
    decode = functools.partial(decode_records, protocol="canal-json", options={"enable-tidb-extension": "true"},
                               start={})
    tasks = [pa.Table.from_batches(list(decode(iter([pa.RecordBatch.from_pylist(chunk)])))) for chunk in chunks]
    meta = [row for task in tasks for row in task.to_pylist() if row["kind"] not in ("row", "held")]
    first_wm = min(r["ts"] for r in meta if r["kind"] == "wm")
    state = ConsumerState(protocol="canal-json", next_offsets={}, resolved={("t", 1): first_wm}, released_ts=0)
    plan = plan_batch(meta, state, [("t", p) for p in range(3)], "canal-json")
    assert plan.carry is not None and len(set(plan.carry.values())) > 1 and plan.ddls
    files = [task.filter(pa.compute.equal(task["kind"], "row")) for task in tasks]
    times = sorted(t for rows in files for t in rows.column("ts").to_pylist())
    plan.limit = times[len(times) * 3 // 4]  # the last rows wait (level -1)
    every = pa.concat_tables(files)
    segments = sorted({(k, lv) for k in set(every.column("tkey").to_pylist()) for lv in range(plan.waves + 1)})
    parts = {segment: n for n, segment in enumerate(segments)}
    marks = SegmentMarks(released=plan.marks.released, limit=plan.limit, global_barriers=plan.marks.global_barriers,
                         barriers=plan.marks.barriers, carry=plan.carry, parts=parts)
    for staged in (False, True):
        python = pa.Table.from_batches(list(mark_changes(iter(every.to_batches()), plan.marks, staged=staged,
                                                         limit=plan.limit)), schema=CHANGE_SCHEMA)
        expected = sorted((r["topic"], r["partition"], r["offset"], r["idx"], parts.get((r["tkey"], r["level"]), -1),
                           r["staged"]) for r in python.to_pylist())
        got = []
        for rows in files:  # each decode task's file on its own, as the write's tasks read them
            kept, placed = mark_parts(rows, marks, staged)
            got += [(r["topic"], r["partition"], r["offset"], r["idx"], part, r["staged"])
                    for r, part in zip(kept.to_pylist(), placed.to_pylist())]
        assert sorted(got) == expected
        if not staged:
            assert 0 < len(expected) < every.num_rows  # the restarts re-sent rows that are dropped
        placed_parts = {part for *_, part, _ in expected}
        assert -1 in placed_parts and len({lv for (_, lv), n in parts.items() if n in placed_parts}) > 1


def test_a_row_at_a_ddls_commit_ts_goes_before_it_and_one_at_the_limit_is_applied() -> None:
    from pyticdc.spark.apply.decode import DECODED_SCHEMA, Marks, mark_changes
    from pyticdc.spark.apply.segments import SegmentMarks, mark_parts

    # Table a has a barrier of its own at 20 (and the global one at 30); table b only the global one.
    stamps = [(key, ts) for key in ("a", "b") for ts in (19, 20, 21, 30, 31, 40, 41)]
    columns = {field.name: pa.nulls(len(stamps), field.type) for field in DECODED_SCHEMA}
    columns.update(kind=pa.array(["row"] * len(stamps)), tkey=pa.array([f"s\x00{k}" for k, _ in stamps]),
                   ts=pa.array([ts for _, ts in stamps], pa.int64()), topic=pa.array(["t"] * len(stamps)),
                   partition=pa.array([0] * len(stamps), pa.int32()), offset=pa.array(range(len(stamps)), pa.int64()),
                   idx=pa.array([0] * len(stamps), pa.int32()), rb=pa.array([0] * len(stamps), pa.int64()),
                   seg=pa.array([0] * len(stamps), pa.int64()))
    rows = pa.table(columns, schema=DECODED_SCHEMA)
    barriers = {"s\x00a": ([20, 30], [1, 2])}
    parts = {(f"s\x00{k}", lv): n for n, (k, lv) in enumerate((k, lv) for k in "ab" for lv in range(3))}
    marks = SegmentMarks(released=0, limit=40, global_barriers=([30], [2]), barriers=barriers,
                         carry={("t", 0, 0): 0}, parts=parts)
    kept, placed = mark_parts(rows, marks, staged=False)
    by_row = {(k[-1], ts): part for k, ts, part in zip(kept.column("tkey").to_pylist(), kept.column("ts").to_pylist(),
                                                       placed.to_pylist())}
    assert by_row == {
        ("a", 19): parts[("s\x00a", 0)], ("a", 20): parts[("s\x00a", 0)], ("a", 21): parts[("s\x00a", 1)],
        ("a", 30): parts[("s\x00a", 1)], ("a", 31): parts[("s\x00a", 2)], ("a", 40): parts[("s\x00a", 2)],
        ("a", 41): -1,
        ("b", 19): parts[("s\x00b", 0)], ("b", 20): parts[("s\x00b", 0)], ("b", 21): parts[("s\x00b", 0)],
        ("b", 30): parts[("s\x00b", 0)], ("b", 31): parts[("s\x00b", 2)], ("b", 40): parts[("s\x00b", 2)],
        ("b", 41): -1,
    }
    # The Python marks say the same levels.
    reference = Marks({}, {}, 0, barriers, ([30], [2]))
    python = pa.Table.from_batches(list(mark_changes(iter(rows.to_batches()), reference, staged=False, limit=40)))
    assert {(k[-1], ts): parts.get((k, lv), -1) for k, ts, lv in zip(python.column("tkey").to_pylist(),
            python.column("ts").to_pylist(), python.column("level").to_pylist())} == by_row


def test_a_resent_row_at_a_level_no_kept_row_has_is_dropped_not_an_error() -> None:
    from pyticdc.spark.apply.decode import DECODED_SCHEMA
    from pyticdc.spark.apply.segments import SegmentMarks, mark_parts

    # DDLs at 30 and 40 (waves 1 and 2). The kept row is at 10 (level 0); the row at 50 was re-sent below its
    # partition's resolved ts (60, its task's running watermark), so it is dropped though it is at level 2.
    columns = {field.name: pa.nulls(2, field.type) for field in DECODED_SCHEMA}
    columns.update(kind=pa.array(["row", "row"]), tkey=pa.array(["s\x00a"] * 2), ts=pa.array([10, 50], pa.int64()),
                   topic=pa.array(["t"] * 2), partition=pa.array([0, 0], pa.int32()),
                   offset=pa.array([0, 1], pa.int64()), idx=pa.array([0, 0], pa.int32()),
                   rb=pa.array([0, 60], pa.int64()), seg=pa.array([0, 0], pa.int64()))
    marks = SegmentMarks(released=0, limit=100, global_barriers=([30, 40], [1, 2]), barriers={}, carry={},
                         parts={("s\x00a", 0): 0})
    kept, placed = mark_parts(pa.table(columns, schema=DECODED_SCHEMA), marks, staged=False)
    assert kept.column("ts").to_pylist() == [10] and placed.to_pylist() == [0]
    # A kept row of a (table, level) the batch did not number is refused, not staged (it would be lost).
    unnumbered = SegmentMarks(released=0, limit=100, global_barriers=([30, 40], [1, 2]), barriers={}, carry={},
                              parts={("s\x00b", 0): 0})
    with pytest.raises(ValueError, match="did not number"):
        mark_parts(pa.table(columns, schema=DECODED_SCHEMA), unnumbered, staged=False)


def _deliveries(draw: st.DrawFn) -> list[dict[str, object]]:
    # Deliveries of a few changes: each change (table, identity) delivered once or more, staged or from any record.
    changes = draw(st.lists(st.tuples(st.sampled_from(["s\x00a", "s\x00b"]), st.binary(min_size=1, max_size=2)),
                            min_size=1, max_size=12, unique=True))
    out = []
    for tkey, ident in changes:
        for _ in range(draw(st.integers(1, 3))):
            out.append({"tkey": tkey, "ident": ident, "staged": draw(st.booleans()),
                        "topic": draw(st.sampled_from("tu")), "partition": draw(st.integers(0, 2)),
                        "offset": draw(st.integers(0, 5)), "idx": draw(st.integers(0, 2)), "ts": 100 + ident[0],
                        "rank": 1, "row_id": 0, "info": "i" + tkey[-1], "hkind": "key"})
    return draw(st.permutations(out))


def _written(rows: list[dict[str, object]]) -> pa.Table:
    columns = {field.name: pa.array([r.get(field.name) for r in rows], field.type)
               for field in WRITTEN_SCHEMA if field.name != PART}
    return pa.table(columns)


def _first_deliveries(rows: list[dict[str, object]]) -> set[tuple[object, ...]]:
    best: dict[tuple[object, object], tuple[object, ...]] = {}
    for r in rows:
        order = (not r["staged"], r["topic"], r["partition"], r["offset"], r["idx"])
        key = (r["tkey"], r["ident"])
        if key not in best or order < best[key][:5]:
            best[key] = (*order, r["tkey"], r["ident"])
    return set(best.values())


def _read_deliveries(folder: Path) -> list[tuple[object, ...]]:
    table = pq.read_table(folder, schema=pa.schema([f for f in WRITTEN_SCHEMA if f.name != PART]))
    return sorted((not r["staged"], r["topic"], r["partition"], r["offset"], r["idx"], r["tkey"], r["ident"])
                  for r in table.to_pylist())


@given(st.data(), st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_a_parts_repeated_changes_keep_their_first_delivery_once_also_after_a_crashed_attempt(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, files: int) -> None:
    from pyticdc.spark.apply.segments import SegmentWriter, unique_parts, unique_rows

    folder = tmp_path_factory.mktemp("unique")
    rows: list[dict[str, object]] = data.draw(st.builds(list, st.composite(_deliveries)()))
    # The part's rows in several files (writing tasks), as the write leaves them.
    for n in range(files):
        mine = rows[n::files]
        if mine:
            writer = SegmentWriter(str(folder))
            writer.add(_written(mine), pa.array([STAGED_PART] * len(mine), pa.int32()))
            writer.close()
    expected = _first_deliveries(rows)
    part = folder / f"{PART}={STAGED_PART}"
    originals = {p.name: p.read_bytes() for p in part.iterdir()}
    found = pa.Table.from_batches(list(unique_parts(iter([pa.record_batch({"id": [0]})]), str(folder),
                                                    [[STAGED_PART]])))
    changes = {(r["tkey"], r["ident"]) for r in rows}
    assert found.to_pylist() == [{PART: STAGED_PART, "rows": len(changes), "copies": len(rows),
                                  "staged": len({(r["tkey"], r["ident"]) for r in rows if r["staged"]})}]
    assert _read_deliveries(part) == sorted(expected)
    if len(changes) < len(rows):
        assert len(list(part.iterdir())) == 1  # rewritten into one file
    # A crashed attempt: its new file is in place, some of the files it was made of are not removed yet.
    for name, content in list(originals.items())[:1]:
        (part / name).write_bytes(content)
    (part / ".part-half-written.parquet").write_bytes(b"PAR1")  # hidden: never read
    again = unique_rows(str(folder), STAGED_PART)
    assert again == found.to_pylist()[0] | {"copies": again["copies"]}
    assert _read_deliveries(part) == sorted(expected)


@given(st.lists(st.tuples(st.sampled_from(["s\x00a", "s\x00b", "s\x00c"]), st.integers(1, 9), st.integers(1, 3),
                          st.integers(0, 2), st.sampled_from(["", "i1", "i2", "i3"]), st.booleans(),
                          st.sampled_from([-1, 0, 1])),
                min_size=1, max_size=40), st.integers(1, 20))
@settings(max_examples=80, deadline=None)
def test_the_files_summaries_say_what_their_parts_rows_hold(tmp_path_factory: pytest.TempPathFactory,
                                                            rows: list[tuple[str, int, int, int, str, bool, int]],
                                                            bound: int) -> None:
    from pyticdc.spark.apply.segments import summarize_files

    folder = tmp_path_factory.mktemp("summaries")
    written: list[dict[str, Any]] = [
        {"tkey": t, "ident": bytes([n]), "ts": ts, "rank": rank, "row_id": row_id, "info": info, "staged": staged,
         "hkind": "rowid" if row_id else "key", "part": part}
        for n, (t, ts, rank, row_id, info, staged, part) in enumerate(rows)]
    outputs = []
    for half in (written[::2], written[1::2]):  # two writing tasks
        if half:
            batch = pa.RecordBatch.from_pydict(
                {f.name: pa.array([r.get(f.name) for r in half], f.type) for f in WRITTEN_SCHEMA},
                schema=WRITTEN_SCHEMA)
            outputs += list(write_segments(iter([batch]), str(folder), buffered_rows=bound))
    parts = summarize_files(pa.Table.from_batches(outputs, schema=FILES_SCHEMA))
    assert set(parts) == {r["part"] for r in written}
    for part, summary in parts.items():
        mine = [r for r in written if r["part"] == part]
        top = max((r["ts"], r["rank"]) for r in mine)
        assert (summary.rows, summary.staged) == (len(mine), sum(r["staged"] for r in mine))
        assert (summary.first_ts, summary.last_ts) == (min(r["ts"] for r in mine), max(r["ts"] for r in mine))
        assert summary.any_rowid == any(r["row_id"] for r in mine)
        assert summary.infos == {r["info"] for r in mine} - {""}
        assert summary.hkinds == {r["hkind"] for r in mine}
        assert summary.tkeys == ({r["tkey"] for r in mine} if part == STAGED_PART else set())
        assert summary.latest == max((r["ts"], r["rank"], r["info"]) for r in mine if (r["ts"], r["rank"]) == top)
