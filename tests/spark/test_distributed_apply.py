"""The distributed apply: its plan (pure), and the same faulty inputs replicated by both engines on Spark."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from pyticdc.consumer.state import ConsumerState
from pyticdc.model import ActionType, DDLEvent
from pyticdc.replica import read_progress, replica_tables
from pyticdc.replica.store import DeltaStore
from pyticdc.spark.apply.decode import Marks, ordered_steps, tkey
from pyticdc.spark.apply.plan import next_barrier, plan_batch


def _ddl(ts: int, table: str, action: ActionType = ActionType.ADD_COLUMN) -> DDLEvent:
    return DDLEvent(query=f"ALTER {table} @{ts}", ddl_type=int(action), commit_ts=ts, schema="s", table=table)


def _meta_ddl(ddl: DDLEvent, partition: int, offset: int) -> dict[str, Any]:
    return {"kind": "ddl", "topic": "t", "partition": partition, "offset": offset, "idx": 0,
            "raw_value": pickle.dumps(ddl)}


def _wm(partition: int, offset: int, ts: int) -> dict[str, Any]:
    return {"kind": "wm", "topic": "t", "partition": partition, "offset": offset, "idx": 0, "ts": ts}


def test_resolved_before_is_the_running_maximum_of_earlier_watermarks() -> None:
    steps = {("t", 0): ordered_steps([(5, 0, 100), (2, 0, 50), (9, 0, 80)])}
    marks = Marks(steps, {("t", 0): 10}, 0, {}, ([], []))
    assert [marks.resolved_before("t", 0, offset, 0) for offset in (0, 2, 3, 5, 6, 9, 10)] == \
        [10, 10, 50, 50, 100, 100, 100]  # the stale 80 after 100 changes nothing
    assert marks.resolved_before("t", 1, 7, 0) == 0


def test_plan_drops_resent_and_broadcast_ddls_and_releases_up_to_the_global_watermark() -> None:
    a1, b1, a2, late = _ddl(20, "a"), _ddl(21, "b"), _ddl(30, "a"), _ddl(90, "a")
    meta = [_wm(0, 0, 10), _wm(1, 0, 10),
            _meta_ddl(a1, 0, 1), _meta_ddl(a1, 1, 1),      # broadcast to both partitions
            _meta_ddl(b1, 0, 2), _meta_ddl(a2, 1, 3),
            _wm(0, 4, 50), _wm(1, 4, 40),
            _meta_ddl(a1, 0, 5),                           # re-sent after its partition's watermark passed it
            _meta_ddl(late, 0, 6), _wm(0, 7, 95),
            {"kind": "part", "topic": "t", "partition": 0, "offset": 7, "ts": 8},
            {"kind": "part", "topic": "t", "partition": 1, "offset": 4, "ts": 5}]
    state = ConsumerState(protocol="canal-json", next_offsets={}, resolved={})
    plan = plan_batch(meta, state, [("t", 0), ("t", 1)], "canal-json")
    assert plan.limit == 40 and plan.resolved == {("t", 0): 95, ("t", 1): 40}
    assert plan.next_offsets == {("t", 0): 8, ("t", 1): 5} and plan.records == 13
    assert [(wave, d.commit_ts) for wave, d in plan.ddls] == [(1, 20), (1, 21), (2, 30)]
    assert plan.pending_ddls == [late]
    assert plan.ddls_duplicate == 1 and plan.ddls_replayed == 1
    # Rows of ``a`` between its two DDLs are level 1 and end at the second; ``b`` after its DDL runs to the end.
    key_a, key_b = tkey("s", "a"), tkey("s", "b")
    assert [plan.marks.level(key_a, ts) for ts in (15, 20, 25, 30, 35)] == [0, 0, 1, 1, 2]
    assert plan.marks.level(key_b, 22) == 1 and plan.marks.level(tkey("s", "c"), 35) == 0
    assert next_barrier(plan, key_a, 0) == 20 and next_barrier(plan, key_a, 1) == 30
    assert next_barrier(plan, key_a, 2) is None and next_barrier(plan, key_b, 1) is None


def test_a_rename_is_a_barrier_for_every_table_and_a_wave_of_its_own() -> None:
    ddls = [_ddl(10, "a"), _ddl(11, "b", ActionType.RENAME_TABLE), _ddl(12, "c")]
    meta = [_meta_ddl(d, 0, i) for i, d in enumerate(ddls)] + [_wm(0, 5, 100)]
    plan = plan_batch(meta, ConsumerState(protocol="open-protocol", next_offsets={}, resolved={}), [("t", 0)],
                      "open-protocol")
    assert [wave for wave, _ in plan.ddls] == [1, 2, 3]
    assert plan.marks.level(tkey("s", "z"), 50) == 2  # no DDL of its own: the rename still cuts it
    assert plan.marks.level(tkey("s", "c"), 50) == 3


# --------------------------------------------------------------------------- both engines, same inputs
def _tables(warehouse: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    store = DeltaStore(warehouse)
    out = {}
    for entry in replica_tables(warehouse):
        data = store.read(warehouse / entry["path"]).to_pylist()
        out[(entry["schema"], entry["table"])] = sorted(data, key=repr)
    return out


@pytest.mark.spark
@pytest.mark.parametrize(("protocol", "seed"), [("canal-json", 21), ("open-protocol", 22), ("craft", 23),
                                                ("debezium", 24), ("simple", 25)])
def test_distributed_engine_builds_the_replica_the_driver_engine_builds(spark: Any, tmp_path: Path, protocol: str,
                                                                        seed: int) -> None:
    from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    options = {"enable-tidb-extension": "true"} if protocol in ("canal-json", "debezium") else {}
    history = simulate(seed, WorkloadConfig(transactions=30))
    plan = FaultPlan(garbage=1)  # duplicates, TiCDC restarts with stale watermarks, replayed ranges, garbage
    reports = {}
    for engine in ("driver", "distributed"):
        crashes = CrashPlan(crashes=[("before-progress", 1), ("after-table-commit", 3)])
        reports[engine] = check_history_on_spark(
            spark, history, protocol, options, plan=plan, seed=seed, workdir=tmp_path / engine, batches=3,
            crash_plan=crashes, engine=engine)
        assert sorted(c.split(" ", 1)[0] for c in reports[engine].crashes) == ["after-table-commit", "before-progress"]
    driver, distributed = tmp_path / "driver" / "warehouse", tmp_path / "distributed" / "warehouse"
    assert read_progress(DeltaStore(distributed)).consistent_ts == read_progress(DeltaStore(driver)).consistent_ts
    assert _tables(distributed) == _tables(driver)
    assert reports["distributed"].quarantined == reports["driver"].quarantined == 1
    # The decode tasks' files, of the crashed attempts too, went with the commits after them.
    assert not list((distributed / "_pyticdc" / "staging").glob("decoded-*"))


def test_a_simple_row_before_its_schema_is_held_then_typed_by_the_schema_the_driver_learnt() -> None:
    import pyarrow as pa

    from pyticdc.codec import make_encoder
    from pyticdc.model import RowChange
    from pyticdc.sim import WorkloadConfig, simulate
    from pyticdc.spark.apply.decode import decode_records, resolve_held

    history = simulate(5, WorkloadConfig(transactions=5))
    row = next(e for e in history.events if isinstance(e, RowChange) and e.table_info is not None)
    *_bootstrap, message = make_encoder("simple").encode([row])  # the DML comes last; its BOOTSTRAP is lost
    records = pa.RecordBatch.from_pylist([{"key": message.key, "value": message.value, "topic": "t", "partition": 0,
                                           "offset": 7}])
    decoded = pa.Table.from_batches(list(decode_records(iter([records]), "simple", {}, {})))
    held = decoded.filter(pa.compute.equal(decoded["kind"], "held"))
    assert held.num_rows == 1  # a fresh decoder has seen no BOOTSTRAP: the row waits, pickled
    assert held.column("tkey")[0].as_py() == tkey(row.schema, row.table)
    assert held.column("ts")[0].as_py() == row.commit_ts and held.column("offset")[0].as_py() == 7
    unknown = pa.Table.from_batches(list(resolve_held(iter(held.to_batches()), versions=[])))
    assert unknown.column("kind").to_pylist() == ["held"]
    info = row.table_info
    assert info is not None
    typed = pa.Table.from_batches(list(resolve_held(iter(held.to_batches()), versions=[(info.schema_version, info)])))
    assert typed.column("kind").to_pylist() == ["row"] and typed.column("offset").to_pylist() == [7]
    assert typed.column("post").to_pylist()[0] is not None and typed.column("info").to_pylist()[0]


def test_a_hold_for_rows_without_schema_keeps_the_limit_and_the_ddls_after_it_waiting() -> None:
    early, late = _ddl(20, "a"), _ddl(35, "a")
    meta = [_meta_ddl(early, 0, 0), _meta_ddl(late, 0, 1), _wm(0, 2, 50)]
    state = ConsumerState(protocol="simple", next_offsets={}, resolved={}, released_ts=10)
    free = plan_batch(meta, state, [("t", 0)], "simple")
    held = plan_batch(meta, state, [("t", 0)], "simple", hold=29)
    assert (free.limit, free.watermark) == (50, 50) and [d.commit_ts for _, d in free.ddls] == [20, 35]
    assert (held.limit, held.watermark) == (29, 50)
    assert [d.commit_ts for _, d in held.ddls] == [20] and held.pending_ddls == [late]
    assert plan_batch(meta, state, [("t", 0)], "simple", hold=5).limit == 10  # never below what was released


# --------------------------------------------------------------------------- re-send marks without Python
def test_carries_chain_the_watermarks_of_earlier_portions_and_refuse_unordered_reads() -> None:
    from pyticdc.spark.apply.plan import carries

    # Partition 0 read by three tasks (listed out of order), partition 1 by one; committed resolved ts 7 and 0.
    portions = {("t", 0): [(20, 29, 0, True), (0, 9, 40, True), (10, 19, 30, True)], ("t", 1): [(3, 8, 99, True)]}
    assert carries(portions, {("t", 0): 7}) == {("t", 0, 0): 7, ("t", 0, 10): 40, ("t", 0, 20): 40, ("t", 1, 3): 0}
    assert carries({("t", 0): [(0, 9, 5, True), (9, 12, 6, True)]}, {}) is None   # overlapping portions
    assert carries({("t", 0): [(0, 9, 5, False)]}, {}) is None                   # offsets not increasing


@pytest.mark.spark
def test_spark_marks_drop_and_level_exactly_the_rows_the_python_marks_do(spark: Any) -> None:
    import functools
    import random

    import pyarrow as pa

    from pyticdc.sim import FaultPlan, WorkloadConfig, inject, interleave, produce, simulate, with_offsets
    from pyticdc.spark.apply.batch import mark_columns
    from pyticdc.spark.apply.decode import CHANGE_SCHEMA, decode_records, mark_changes

    history = simulate(31, WorkloadConfig(transactions=40))
    rng = random.Random(31)
    logs = with_offsets(inject(produce(history, "canal-json", {"enable-tidb-extension": "true"}, topic="t",
                                       partitions=3), FaultPlan(), rng))
    stream = interleave(logs, rng)
    records = [{"key": r.key, "value": r.value, "topic": r.topic, "partition": r.partition, "offset": r.offset}
               for r in stream]
    # Four decode tasks over the interleaved stream: every partition is split between tasks.
    chunks = [records[len(records) * k // 4:len(records) * (k + 1) // 4] for k in range(4)]
    decode = functools.partial(decode_records, protocol="canal-json", options={"enable-tidb-extension": "true"},
                               start={})
    decoded = pa.Table.from_batches([b for chunk in chunks for b in decode(iter([pa.RecordBatch.from_pylist(chunk)]))])
    meta = decoded.filter(pa.compute.invert(pa.compute.is_in(decoded["kind"], pa.array(["row", "held"])))).to_pylist()
    # A committed state past the first watermarks, so the carry starts above zero.
    first_wm = min(r["ts"] for r in meta if r["kind"] == "wm")
    state = ConsumerState(protocol="canal-json", next_offsets={}, resolved={("t", 1): first_wm}, released_ts=0)
    plan = plan_batch(meta, state, [("t", p) for p in range(3)], "canal-json")
    assert plan.carry is not None and len(set(plan.carry.values())) > 1 and plan.ddls
    rows = decoded.filter(pa.compute.equal(decoded["kind"], "row"))
    # A limit below the last rows: those wait (level -1).
    times = sorted(rows.column("ts").to_pylist())
    plan.limit = times[len(times) * 3 // 4]
    frame = spark.createDataFrame(rows)

    def keyed(table: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(zip(*(table.column(c).to_pylist()
                            for c in ("topic", "partition", "offset", "idx", "level", "staged"))))

    for staged in (False, True):
        python = pa.Table.from_batches(list(mark_changes(iter(rows.to_batches()), plan.marks, staged=staged,
                                                         limit=plan.limit)), schema=CHANGE_SCHEMA)
        if not staged:
            assert 0 < python.num_rows < rows.num_rows  # the restarts re-sent rows that are dropped
        assert keyed(mark_columns(spark, frame, plan, staged).toArrow()) == keyed(python)
        levels = {level for *_, level, _ in keyed(python)}
        assert -1 in levels and len(levels - {-1}) > 1  # rows waiting, and on both sides of a DDL barrier


@pytest.mark.spark
def test_a_batch_with_other_numbers_marks_its_rows_with_the_code_spark_compiled_before(spark: Any) -> None:
    import pyarrow as pa

    from pyticdc.spark.apply.batch import mark_columns
    from pyticdc.spark.apply.decode import CHANGE_SCHEMA, DECODED_SCHEMA, mark_changes
    from pyticdc.spark.apply.plan import BatchPlan

    compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()

    def batch(base: int, own: int) -> tuple[BatchPlan, pa.Table]:
        # Rows of two tables in two partitions; table a has barriers of its own, every table a global one.
        # Each partition read by one task that saw no watermark before the rows (rb 0): the resolved ts before
        # a row is its partition's carry, as the Python marks have it from the committed resolved ts.
        rows = [{"kind": "row", "topic": "t", "partition": n % 2, "offset": n, "idx": 0,
                 "tkey": tkey("s", "ab"[n % 3 // 2]), "ts": base + 10 * n, "rb": 0, "seg": n % 2}
                for n in range(60)]
        a_times = [base + 100 + 90 * k for k in range(own)]
        marks = Marks({}, {("t", 0): base + 60, ("t", 1): base + 20}, base + 40,
                      {tkey("s", "a"): ([*a_times, base + 300], [*range(1, own + 1), own + 1])},
                      ([base + 300], [own + 1]))
        plan = BatchPlan(limit=base + 500, watermark=base + 500, released_before=base, next_offsets={}, resolved={},
                         marks=marks, carry={("t", 0, 0): base + 60, ("t", 1, 1): base + 20})
        return plan, pa.Table.from_pylist(rows, schema=DECODED_SCHEMA)

    def marked(plan: BatchPlan, rows: pa.Table) -> list[tuple[Any, ...]]:
        spark_rows = mark_columns(spark, spark.createDataFrame(rows), plan, False).toArrow()
        python = pa.Table.from_batches(list(mark_changes(iter(rows.to_batches()), plan.marks, staged=False,
                                                         limit=plan.limit)), schema=CHANGE_SCHEMA)

        def keyed(table: pa.Table) -> list[tuple[Any, ...]]:
            return sorted(zip(*(table.column(c).to_pylist() for c in ("offset", "level"))))

        assert keyed(spark_rows) == keyed(python)
        return keyed(python)

    first = marked(*batch(1_000, 2))
    assert {level for _, level in first} == {-1, 0, 1, 2, 3} and len(first) < 60  # re-sent rows dropped
    before = compiled.getCount()
    second = marked(*batch(7_777_000, 3))  # other numbers, another barrier count
    assert {level for _, level in second} == {-1, 0, 1, 2, 3, 4}
    assert compiled.getCount() == before


@pytest.mark.spark
def test_auto_is_the_default_engine_and_picks_the_distributed_one_where_it_applies(spark: Any, tmp_path: Path) -> None:
    from pyticdc.replica.modelling import Modelling
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    capture = tmp_path / "capture.jsonl"  # nothing is read before run()

    def engine(options: dict[str, str], **extra: Any) -> str:
        source = ReplicationSource.capture("canal-json", options, capture)
        return str(SparkReplication(spark, source, tmp_path / "wh", **extra).engine)

    assert engine({"enable-tidb-extension": "true"}) == "distributed"
    assert engine({}) == "driver"  # no watermarks: batch consistency is the driver engine's
    assert engine({"enable-tidb-extension": "true"}, modelling=Modelling.parse(keys=["s.t=a"])) == "distributed"
    assert engine({"enable-tidb-extension": "true"}, modelling=Modelling.parse(history=["s.t"])) == "distributed"
    assert engine({"enable-tidb-extension": "true"}, engine="driver") == "driver"


@pytest.mark.spark
def test_each_engine_has_its_default_batch_size(spark: Any, tmp_path: Path) -> None:
    from pyticdc.errors import ConfigError
    from pyticdc.spark.replication import (
        DEFAULT_BATCH_RECORDS,
        DEFAULT_DISTRIBUTED_BATCH_RECORDS,
        ReplicationSource,
        SparkReplication,
    )

    source = ReplicationSource.capture("canal-json", {"enable-tidb-extension": "true"}, tmp_path / "capture.jsonl")

    def size(**extra: Any) -> int:
        return int(SparkReplication(spark, source, tmp_path / "wh", **extra).batch_records)

    # The driver engine holds a batch in its memory; the distributed ones only its metadata.
    assert size() == size(engine="distributed") == DEFAULT_DISTRIBUTED_BATCH_RECORDS
    assert size(engine="driver") == DEFAULT_BATCH_RECORDS < DEFAULT_DISTRIBUTED_BATCH_RECORDS
    assert size(engine="driver", batch_records=7) == size(batch_records=7) == 7
    with pytest.raises(ConfigError, match="batch_records must be >= 1"):
        size(batch_records=0)


@pytest.mark.spark
def test_a_distributed_capture_run_learns_its_partitions_from_the_copy(spark: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import pyticdc.spark.replication as replication
    from pyticdc.errors import ConfigError
    from pyticdc.io.capture import write_capture
    from pyticdc.sim import WorkloadConfig, interleave, produce, simulate, with_offsets
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    def no_scan(*args: Any, **kwargs: Any) -> dict[str, int]:
        raise AssertionError("the driver scanned the capture's lines")

    monkeypatch.setattr(replication, "capture_partitions", no_scan)
    options = {"enable-tidb-extension": "true"}
    history = simulate(41, WorkloadConfig(transactions=20))
    logs = with_offsets(produce(history, "canal-json", options, topic="t", partitions=3))
    capture = tmp_path / "capture.jsonl"
    write_capture(capture, interleave(logs, random.Random(41)))
    job = SparkReplication(spark, ReplicationSource.capture("canal-json", options, capture), tmp_path / "wh",
                           engine="distributed")
    reports = job.run()
    assert job.partitions() == {"t": 3} and sum(r.rows_applied for r in reports) > 0
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    job = SparkReplication(spark, ReplicationSource.capture("canal-json", options, empty), tmp_path / "wh2",
                           engine="distributed")
    with pytest.raises(ConfigError, match="no records to replicate"):
        job.run()


@pytest.mark.spark
def test_the_summary_counts_unique_changes_and_their_deliveries(spark: Any) -> None:
    from pyticdc.spark.apply.batch import _summarize

    columns = "tkey string, ident binary, level int, ts long, rank int, row_id long, info string, hkind string, " \
              "staged boolean"
    rows = [("s\x00a", b"1", 0, 10, 1, 0, "i1", "key", False), ("s\x00a", b"2", 0, 12, 2, 0, "i1", "key", True),
            ("s\x00a", b"3", 0, 12, 3, 5, "i2", "key", False), ("s\x00a", b"4", 1, 20, 1, 0, "i3", "key", False),
            ("s\x00b", b"5", 0, 11, 1, 0, "j1", "rowid", False), ("s\x00b", b"6", -1, 99, 1, 0, "j1", "rowid", False)]

    def summary(data: list[tuple[Any, ...]]) -> dict[tuple[str, int, bool], dict[str, Any]]:
        # Level -1: above the limit (pending).
        out = _summarize(spark.createDataFrame(data, columns), {"i1", "i2", "i3", "j1", "zz"}, spark)
        return {(s["tkey"], s["level"], s["pending"]): {**s, "infos": sorted(s["infos"]), "hkinds": sorted(s["hkinds"])}
                for s in out}

    unique = summary(rows)
    assert unique[("s\x00a", 0, False)] == {
        "tkey": "s\x00a", "level": 0, "pending": False, "rows": 3, "copies": 3, "first_ts": 10, "last_ts": 12,
        "any_rowid": 1, "infos": ["i1", "i2"], "hkinds": ["key"], "latest": "i2", "staged": 1, "tkeys": ["s\x00a"]}
    assert unique[("s\x00a", 1, False)]["rows"] == 1 and unique[("s\x00a", 1, False)]["latest"] == "i3"
    assert unique[("s\x00b", 0, False)]["rows"] == unique[("s\x00b", -1, True)]["rows"] == 1
    # Re-deliveries (a staged row read again, a re-sent one) add copies, not changes.
    again = summary([*rows, ("s\x00a", b"2", 0, 12, 2, 0, "i1", "key", False), rows[0], rows[0]])
    assert again[("s\x00a", 0, False)] == {**unique[("s\x00a", 0, False)], "copies": 6}
    assert {k: v for k, v in again.items() if k != ("s\x00a", 0, False)} == {
        k: v for k, v in unique.items() if k != ("s\x00a", 0, False)}
    # A digest the batch has no TableInfo for is no TableInfo of the segment (nor its latest).
    unknown = summary([*rows, ("s\x00b", b"7", 0, 30, 1, 0, "gone", "rowid", False)])
    assert unknown[("s\x00b", 0, False)]["infos"] == ["j1"] and unknown[("s\x00b", 0, False)]["latest"] is None
    assert unknown[("s\x00b", 0, False)]["rows"] == 2 and unknown[("s\x00b", 0, False)]["last_ts"] == 30
    # Every handle kind a segment's rows name.
    kinds = summary([*rows, ("s\x00b", b"8", 0, 31, 1, 0, "j1", "image", False)])
    assert kinds[("s\x00b", 0, False)]["hkinds"] == ["image", "rowid"]


@pytest.mark.spark
def test_the_written_parts_summary_is_the_spark_summary(spark: Any, tmp_path: Path) -> None:
    # The usual batch's summary comes from what the writing and de-duplicating tasks report: the same as the one
    # Spark computes over the marked rows (the path of Simple and unordered reads), repeats included.
    import pyarrow as pa

    from pyticdc.spark.apply.batch import _segment_summary, _summarize
    from pyticdc.spark.apply.segments import (
        FILES_SCHEMA,
        STAGED_PART,
        WRITTEN_SCHEMA,
        summarize_files,
        unique_parts,
        write_segments,
    )

    infos = {"i1", "i2", "i3", "j1", "zz"}
    rows = [("s\x00a", b"1", 0, 10, 1, 0, "i1", "key", False), ("s\x00a", b"2", 0, 12, 2, 0, "i1", "key", True),
            ("s\x00a", b"3", 0, 12, 3, 5, "i2", "key", False), ("s\x00a", b"4", 1, 20, 1, 0, "i3", "key", False),
            ("s\x00b", b"5", 0, 11, 1, 0, "j1", "rowid", False), ("s\x00b", b"6", -1, 99, 1, 0, "j1", "rowid", False),
            ("s\x00a", b"7", -1, 98, 1, 0, "gone", "key", True), ("s\x00b", b"8", 0, 31, 1, 0, "gone", "image", False)]
    rows += [("s\x00a", b"2", 0, 12, 2, 0, "i1", "key", False), rows[0], rows[0], rows[5], rows[6]]
    names = ["tkey", "ident", "level", "ts", "rank", "row_id", "info", "hkind", "staged"]
    columns = "tkey string, ident binary, level int, ts long, rank int, row_id long, info string, hkind string, " \
              "staged boolean"
    spark_summary = {(s["tkey"], s["level"]): s for s in _summarize(spark.createDataFrame(rows, columns), infos, spark)}

    segments = sorted({(r[0], r[2]) for r in rows if r[2] >= 0})
    parts = {segment: n for n, segment in enumerate(segments)}
    records: list[dict[str, Any]] = [dict(zip(names, r)) for r in rows]
    batch = pa.RecordBatch.from_pydict(
        {f.name: pa.array([r.get(f.name) if f.name != "part" else parts.get((r["tkey"], r["level"]), STAGED_PART)
                           for r in records], f.type) for f in WRITTEN_SCHEMA}, schema=WRITTEN_SCHEMA)
    described = summarize_files(pa.Table.from_batches(list(write_segments(iter([batch]), str(tmp_path))),
                                                      schema=FILES_SCHEMA))
    unique = {r["part"]: r for b in unique_parts(iter([pa.record_batch({"id": [0]})]), str(tmp_path),
                                                 [sorted(described)]) for r in b.to_pylist()}
    numbered = {n: segment for segment, n in parts.items()}
    written = [_segment_summary(numbered.get(p, ("", -1)), described[p], unique[p], infos) for p in sorted(described)]
    for summary in written:
        if summary["pending"]:
            # One entry for every table's rows above the limit.
            pending = [s for s in spark_summary.values() if s["pending"]]
            assert summary["tkeys"] == sorted(s["tkey"] for s in pending)
            for field in ("rows", "copies", "staged"):
                assert summary[field] == sum(s[field] for s in pending), field
            assert summary["infos"] == sorted({i for s in pending for i in s["infos"]})
        else:
            expected = spark_summary[(summary["tkey"], summary["level"])]
            assert {**summary, "any_rowid": int(summary["any_rowid"])} == {
                **expected, "infos": sorted(expected["infos"]), "hkinds": sorted(expected["hkinds"])}
    assert len(written) == len({(t, lv) for t, lv in spark_summary if lv >= 0}) + 1


@pytest.mark.spark
def test_staged_rows_without_their_tables_noted_take_the_spark_path_and_the_replica_is_the_truth(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A warehouse whose staged rows were written before their tables were noted beside them (or lost that note):
    # a batch reading them marks and summarizes them with Spark; one without staged rows writes and de-duplicates in
    # the tasks. Both paths, with crashes: the replica is still the source (check_history_on_spark compares it).
    import uuid

    from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
    from pyticdc.spark.apply import batch
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    used: dict[str, int] = {"tasks": 0, "spark": 0}

    def tables_path(self: Any, version: int) -> Path:
        return tmp_path / "lost" / f"{version}-{uuid.uuid4().hex}.json"  # nowhere the next batch looks

    def counted(name: str, function: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            used[name] += 1
            return function(*args, **kwargs)
        return run

    (tmp_path / "lost").mkdir()
    monkeypatch.setattr(batch.DistributedReplicator, "_tables_path", tables_path)
    write_rows = batch.DistributedReplicator._write_rows
    monkeypatch.setattr(batch.DistributedReplicator, "_write_rows", counted("tasks", write_rows))
    monkeypatch.setattr(batch, "_summarize", counted("spark", batch._summarize))
    history = simulate(31, WorkloadConfig(transactions=40))
    report = check_history_on_spark(
        spark, history, "canal-json", {"enable-tidb-extension": "true"}, plan=FaultPlan(garbage=1), seed=31,
        workdir=tmp_path / "run", batches=6, crash_plan=CrashPlan(crashes=[("before-progress", 2)]),
        engine="distributed")
    assert report.crashes and used["tasks"] > 0 and used["spark"] > 0
