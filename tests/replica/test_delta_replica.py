"""The Delta replica without a JVM: DDL interpretation, net changes, layout, the applier and exactly once."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.errors import ReplicaError
from pyticdc.model import (
    ActionType,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    IndexInfo,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    physical_ms,
)
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import (
    AlterTable,
    CreateTable,
    DropSchema,
    DropTable,
    RenameTable,
    Replicator,
    SimulatedCrash,
    TruncateTable,
    Unhandled,
    compare_replica,
    interpret_ddl,
    net_change,
    read_progress,
    replica_tables,
    unsettled_tables,
)
from pyticdc.replica.pipeline import interleave_partitions
from pyticdc.replica.projection import DIGEST, ROWID, evolve, project_changes, replica_schema
from pyticdc.replica.store import DeltaStore, ddl_position, rows_position, safe_name
from pyticdc.sim import FaultPlan, TruthProjector, WorkloadConfig, inject, interleave, produce, simulate, with_offsets
from pyticdc.sim.workload import TEMPLATES

pytest.importorskip("deltalake")

OPTIONS: dict[str, dict[str, Any]] = {"canal-json": {"enable-tidb-extension": True},
                                      "debezium": {"enable-tidb-extension": True}}
POINTS = ("before-progress", "after-table-commit", "before-table-commit", "after-progress")


def _info(name: str = "t_int", schema: str = "s") -> TableInfo:
    template = TEMPLATES[name]
    return table_info_with_flags(schema, name, 100, 1, template.columns, template.indexes, template.pk_is_handle)


def _ddl(query: str, schema: str = "s", info: TableInfo | None = None) -> DDLEvent:
    return DDLEvent(query=query, ddl_type=0, commit_ts=10, schema=schema, table_info=info)


# --------------------------------------------------------------------------- DDL
def test_create_table_from_text_types_and_handle() -> None:
    query = ("CREATE TABLE `s`.`orders` (`id` bigint(20) unsigned NOT NULL, `code` varchar(16) NOT NULL, "
             "`amount` decimal(12,2) DEFAULT '0.00', `status` enum('new','paid'), `at` datetime(6), "
             "PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */, UNIQUE KEY `uk` (`code`))")
    (change,) = interpret_ddl(_ddl(query), lambda key: None)
    assert isinstance(change, CreateTable) and change.key == ("s", "orders")
    assert change.info is not None
    columns = change.info.column_by_name
    assert columns["id"].type_code == 8 and columns["id"].is_unsigned and not columns["id"].nullable
    assert (columns["amount"].flen, columns["amount"].decimal, columns["amount"].default) == (12, 2, "0.00")
    assert columns["status"].elems == ("new", "paid")
    assert columns["at"].decimal == 6
    assert change.info.handle_key_columns == ("id",)
    assert change.info.pk_is_handle


def test_create_like_copies_the_source_table() -> None:
    source = _info()
    (change,) = interpret_ddl(_ddl("CREATE TABLE `s`.`copy` LIKE `s`.`t_int`"), {("s", "t_int"): source}.get)
    assert isinstance(change, CreateTable) and change.info is not None
    assert change.info.table == "copy" and change.info.columns == source.columns


def test_alter_add_drop_modify_change_rename_columns() -> None:
    base = _info("t_rowid")
    lookup = {("s", "t_rowid"): base}.get
    (add,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` ADD COLUMN `n` int(11) NOT NULL DEFAULT 7 AFTER `seq`"),
                           lookup)
    assert isinstance(add, AlterTable)
    assert [c.name for c in add.info.columns][:2] == ["seq", "n"]
    assert add.defaults == {"n": "7"}
    (drop,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` DROP COLUMN `v`"), lookup)
    assert isinstance(drop, AlterTable) and "v" not in drop.info.column_by_name
    (modify,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` MODIFY COLUMN `d` decimal(12,3)"), lookup)
    assert isinstance(modify, AlterTable) and modify.info.column_by_name["d"].flen == 12
    (change,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` CHANGE `j` `doc` json"), lookup)
    assert isinstance(change, AlterTable) and change.renamed == {"j": "doc"}
    (rename,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` RENAME COLUMN `v` TO `value`"), lookup)
    assert isinstance(rename, AlterTable) and rename.renamed == {"v": "value"}
    assert "value" in rename.info.column_by_name


def test_unique_index_on_not_null_column_becomes_the_handle() -> None:
    base = _info("t_rowid")
    assert base.handle_key_columns == ()
    (change,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` ADD UNIQUE INDEX `uk_seq`(`seq`)"),
                              {("s", "t_rowid"): base}.get)
    assert isinstance(change, AlterTable) and change.info.handle_key_columns == ("seq",)
    assert [c.name for c in change.info.columns] == [c.name for c in base.columns]


def test_table_level_statements() -> None:
    lookup = {("s", "a"): _info()}.get
    assert interpret_ddl(_ddl("DROP TABLE IF EXISTS `s`.`a`, `b`"), lookup) == [DropTable(("s", "a")),
                                                                               DropTable(("s", "b"))]
    assert interpret_ddl(_ddl("DROP DATABASE `s`"), lookup) == [DropSchema("s")]
    assert interpret_ddl(_ddl("TRUNCATE TABLE `a`"), lookup) == [TruncateTable(("s", "a"))]
    assert interpret_ddl(_ddl("RENAME TABLE `s`.`a` TO `t`.`b`, `c` TO `d`"), lookup) == [
        RenameTable(("s", "a"), ("t", "b")), RenameTable(("s", "c"), ("s", "d"))]
    assert interpret_ddl(_ddl("ALTER TABLE `s`.`a` RENAME TO `s`.`z`"), lookup) == [RenameTable(("s", "a"), ("s", "z"))]
    assert interpret_ddl(_ddl("CREATE DATABASE `x`"), lookup) == []
    assert interpret_ddl(_ddl("ALTER TABLE `s`.`a` ADD INDEX `i`(`c_int`), COMMENT = 'x'"), lookup) == []


def test_statements_that_change_rows_unseen_are_reported() -> None:
    lookup = {("s", "a"): _info()}.get
    (change,) = interpret_ddl(_ddl("ALTER TABLE `s`.`a` TRUNCATE PARTITION p0"), lookup)
    assert isinstance(change, Unhandled) and "PARTITION" in change.reason
    (change,) = interpret_ddl(_ddl("FLASHBACK TABLE `s`.`a` TO `b`"), lookup)
    assert isinstance(change, Unhandled)


def test_table_info_carried_by_the_ddl_wins_over_the_text() -> None:
    base = _info("t_rowid")
    post = msgspec.structs.replace(base, columns=(*base.columns, msgspec.structs.replace(
        base.columns[0], name="extra", default="42", flags=0)))
    (change,) = interpret_ddl(_ddl("ALTER TABLE `s`.`t_rowid` ADD COLUMN `extra` bigint NOT NULL DEFAULT 42",
                                   info=post), {("s", "t_rowid"): base}.get)
    assert isinstance(change, AlterTable) and change.info is post and change.defaults == {"extra": "42"}


# --------------------------------------------------------------------------- net change
def _row(op: Op, post: dict[str, Any] | None, pre: dict[str, Any] | None, ts: int = 1, info: TableInfo | None = None,
         row_id: int = 0) -> RowChange:
    return RowChange(op=op, schema="s", table="t_int", commit_ts=ts, columns=None if post is None else Row(post),
                     pre_columns=None if pre is None else Row(pre), table_info=info or _info(), row_id=row_id)


def test_net_change_keeps_one_action_per_handle() -> None:
    rows = [
        _row(Op.INSERT, {"id": 1, "c_int": 1}, None, 1),
        _row(Op.UPDATE, {"id": 1, "c_int": 2}, {"id": 1, "c_int": 1}, 2),
        _row(Op.INSERT, {"id": 2, "c_int": 5}, None, 2),
        _row(Op.DELETE, None, {"id": 2, "c_int": 5}, 3),
        _row(Op.UPDATE, {"id": 4, "c_int": 9}, {"id": 3, "c_int": 9}, 3),  # the handle moves
    ]
    net = net_change(rows)
    assert net.strategy == "key" and net.key_columns == ("id",)
    assert {(r.columns or Row()).get("id"): dict(r.columns or {}) for r in net.upserts} == {
        1: {"id": 1, "c_int": 2}, 4: {"id": 4, "c_int": 9}}
    assert sorted((r.pre_columns or Row())["id"] for r in net.deletes) == [2, 3]


def test_rows_without_handle_are_a_multiset_of_images() -> None:
    info = _info("t_rowid")
    image = {"seq": 1, "v": 1.5}
    rows = [RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row(image), table_info=info),
            RowChange(op=Op.UPDATE, schema="s", table="t", commit_ts=2, columns=Row({**image, "v": 2.5}),
                      pre_columns=Row(image), table_info=info),
            RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=3, pre_columns=Row({"seq": 9, "v": 0.0}),
                      table_info=info)]
    net = net_change(rows)
    assert net.strategy == "image"
    assert [dict(r.columns or {}) for r in net.upserts] == [{"seq": 1, "v": 2.5}]
    assert [dict(r.pre_columns or {}) for r in net.deletes] == [{"seq": 9, "v": 0.0}]
    with_ids = [msgspec.structs.replace(r, row_id=7) for r in rows]
    assert net_change(with_ids).strategy == "rowid"


def test_a_row_carrying_only_its_handle_is_a_partial_upsert() -> None:
    # Its other columns were not sent: marked partial, so the MERGE assigns only the columns it carries.
    row = msgspec.structs.replace(_row(Op.UPDATE, {"id": 1}, {"id": 1}), handle_key_only=True)
    net = net_change([row])
    assert [dict(r.columns or {}) for r in net.upserts] == [{"id": 1}]
    assert net.partial == {id(net.upserts[0])}
    delete = msgspec.structs.replace(_row(Op.DELETE, None, {"id": 1}), handle_key_only=True)
    assert len(net_change([delete]).deletes) == 1


# --------------------------------------------------------------------------- layout
def test_replica_schema_and_projection_types() -> None:
    info = _info("t_comp")
    schema = replica_schema(info, rowid=True, digest=False)
    # _commit_ts and its physical time are in every replica table, before the hidden columns.
    assert schema.names[:3] == ["_commit_ts", "_commit_time", ROWID]
    assert schema.field("_commit_time").type == pa.timestamp("us", tz="UTC")
    assert schema.field("c_time").type == pa.int64()  # Delta has no interval type: microseconds
    assert schema.field("c_datetime").type == pa.timestamp("us")
    row = RowChange(op=Op.INSERT, schema="s", table="t_comp", commit_ts=2**62 + 1, table_info=info, row_id=5,
                    columns=Row({"k1": 1, "k2": b"a", "c_time": "-838:59:59", "c_enum": 2, "c_set": 5}))
    net = net_change([row])
    typed = project_changes(net, info, rowid=True).to_pylist()[0]
    assert typed["_pyticdc_action"] == "upsert" and typed["_commit_ts"] == Decimal(2**62 + 1) and typed[ROWID] == 5
    assert typed["_commit_time"] == dt.datetime.fromtimestamp((2**62 >> 18) / 1000, dt.timezone.utc)
    assert typed["c_time"] == -3020399000000
    assert (typed["k2"], typed["c_enum"], typed["c_set"]) == ("a", "green", "a,c")


def test_evolve_fills_defaults_renames_converts_and_refuses_lossy_changes() -> None:
    before = TableInfo(schema="s", table="t", columns=(
        ColumnInfo(name="id", type_code=3, flags=int(ColumnFlag.PRIMARY_KEY)),
        ColumnInfo(name="v", type_code=15, charset="utf8mb4")))
    # Written before _commit_time was always there: it is added from each row's commit ts.
    first, second = 1_700_000_000_123 << 18 | 7, 1_700_000_000_456 << 18
    data = pa.table({"_commit_ts": pa.array([Decimal(first), Decimal(second)], pa.decimal128(20, 0)),
                     "id": pa.array([1, 2], pa.int32()), "v": ["a", "12"]})
    after = msgspec.structs.replace(before, columns=(
        msgspec.structs.replace(before.columns[0], type_code=8),  # INT → BIGINT
        msgspec.structs.replace(before.columns[1], name="w"),
        msgspec.structs.replace(before.columns[1], name="n", type_code=3, charset="binary")))
    out = evolve(data, after, rowid=False, digest=True, defaults={"n": "7"}, renamed={"v": "w"})
    assert out.schema.field("id").type == pa.int64()
    assert out.column("_commit_time").to_pylist() == [
        dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.timezone.utc),
        dt.datetime(2023, 11, 14, 22, 13, 20, 456000, tzinfo=dt.timezone.utc)]
    assert out.column("w").to_pylist() == ["a", "12"] and out.column("n").to_pylist() == [7, 7]
    assert len(set(out.column(DIGEST).to_pylist())) == 2
    lossy = msgspec.structs.replace(before, columns=(before.columns[0], msgspec.structs.replace(
        before.columns[1], type_code=3, charset="binary")))
    with pytest.raises(ReplicaError, match="re-create"):
        evolve(data, lossy, rowid=False, digest=False)


def test_names_and_positions() -> None:
    assert safe_name("orders") == "orders"
    assert safe_name("_pyticdc") == "~5Fpyticdc"
    assert safe_name("a.b/c%") == "a~2Eb~2Fc~25"
    assert safe_name("表") == "~E8~A1~A8"
    assert rows_position(5) < ddl_position(5) < rows_position(6)


# --------------------------------------------------------------------------- replica end to end
def _clock(history: Any) -> Any:
    fixed = physical_ms(history.final_resolved_ts)
    return lambda: fixed


def _stream(protocol: str, seed: int, plan: FaultPlan, transactions: int = 60,
            dispatcher: str = "default") -> tuple[Any, list[KafkaRecord], TruthProjector]:
    history = simulate(seed, WorkloadConfig(transactions=transactions))
    rng = random.Random(seed)
    options = OPTIONS.get(protocol, {})
    rules = [{"matcher": ["*.*"], "partition": dispatcher}]
    logs = with_offsets(inject(produce(history, protocol, options, partitions=3, clock=_clock(history), rules=rules),
                               plan, rng))
    projector = TruthProjector(make_encoder(protocol, options, clock=_clock(history)))
    return history, interleave(logs, rng), projector


def _check(warehouse: Path, history: Any, projector: TruthProjector, consistent_ts: int) -> str | None:
    truth = history.truth_at(consistent_ts)
    return compare_replica(warehouse, projector.snapshot(truth), {k: t.info for k, t in truth.items()})


def _replicate(warehouse: Path, protocol: str, stream: list[KafkaRecord], *, chunk: int, hook: Any = None,
               history: Any = None, projector: TruthProjector | None = None, redeliver: random.Random | None = None,
               ) -> tuple[int, int]:
    """Replicate in chunks, restarting after each SimulatedCrash (re-reading from an earlier position);
    check every settled batch. Returns (crashes, checks)."""
    crashes = checks = 0
    start = 0
    while True:
        replicator = Replicator(warehouse, protocol, OPTIONS.get(protocol, {}), partitions={"sim": 3}, hook=hook)
        try:
            for at in range(start, len(stream), chunk):
                report = replicator.process(stream[at:at + chunk])
                if history is not None and projector is not None and not unsettled_tables(warehouse):
                    assert _check(warehouse, history, projector, report.consistent_ts) is None
                    checks += 1
            replicator.process(())
            return crashes, checks
        except SimulatedCrash:
            crashes += 1
            # Kafka redelivers from an older committed position: anything from the start up to here.
            start = redeliver.randrange(0, max(1, at)) if redeliver is not None else 0


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_each_commit_point_loses_nothing_and_applies_nothing_twice(
        tmp_path: Path, protocol: str, point: str) -> None:
    history, stream, projector = _stream(protocol, 3, FaultPlan(garbage=2))
    seen: Counter[str] = Counter()

    def hook(where: str, detail: Any) -> None:
        seen[where] += 1
        if where == point and seen[where] in (2, 5):  # two crashes, at the 2nd and 5th time this point is reached
            raise SimulatedCrash(where)

    crashes, checks = _replicate(tmp_path, protocol, stream, chunk=60, hook=hook, history=history,
                                 projector=projector, redeliver=random.Random(1))
    assert crashes == 2 and checks > 0
    progress = read_progress(DeltaStore(tmp_path))
    assert progress.consistent_ts == history.final_resolved_ts
    assert unsettled_tables(tmp_path) == []
    assert _check(tmp_path, history, projector, progress.consistent_ts) is None
    store = DeltaStore(tmp_path)
    assert store.count(store.internal_path("quarantine")) == 2


def test_every_table_commit_is_recorded_once_by_its_position(tmp_path: Path) -> None:
    # Kill between the data commits and the progress commit, then replay with more input than the first
    # attempt had: each table's Delta history holds each position once, in increasing order.
    history, stream, projector = _stream("canal-json", 5, FaultPlan(duplicate_rate=0.1))
    state = {"crashed": False}

    def hook(where: str, detail: Any) -> None:
        if where == "before-progress" and detail["version"] == 3 and not state["crashed"]:
            state["crashed"] = True
            raise SimulatedCrash(where)

    crashes, _ = _replicate(tmp_path, "canal-json", stream, chunk=50, hook=hook)
    assert crashes == 1
    store = DeltaStore(tmp_path)
    for entry in read_progress(store).tables.values():
        positions = [int(h["pyticdc.position"]) for h in reversed(store.open(tmp_path / entry.path).history())
                     if h.get("operation") in ("MERGE", "WRITE") and "pyticdc.position" in h]
        contents = [p for p in positions if p != positions[0]]  # rewrites keep the position they had
        assert contents == sorted(set(contents)), (entry.table, positions)
    assert _check(tmp_path, history, projector, history.final_resolved_ts) is None


@pytest.mark.parametrize("dispatcher", ["ts", "index-value"])
def test_rows_moving_between_partitions(tmp_path: Path, dispatcher: str) -> None:
    history, stream, projector = _stream("open-protocol", 4, FaultPlan(garbage=0), dispatcher=dispatcher)
    _replicate(tmp_path, "open-protocol", stream, chunk=40, history=history, projector=projector)
    assert _check(tmp_path, history, projector, history.final_resolved_ts) is None


def test_changes_above_the_global_watermark_wait_in_the_progress(tmp_path: Path) -> None:
    history, stream, projector = _stream("craft", 2, FaultPlan(duplicate_rate=0, restarts=0, replays=0, crashes=0))
    # Partition 0 alone: its rows wait for partitions 1 and 2 to promise the same watermark.
    first = [r for r in stream if r.partition == 0]
    replicator = Replicator(tmp_path, "craft", {}, partitions={"sim": 3})
    report = replicator.process(first)
    assert report.rows_released == 0 and report.pending_rows > 0 and report.consistent_ts == 0
    assert read_progress(DeltaStore(tmp_path)).state is not None
    # A new process resumes with those rows from the progress and the other partitions complete them.
    rest = [r for r in stream if r.partition != 0]
    report = Replicator(tmp_path, "craft", {}, partitions={"sim": 3}).process(rest)
    assert report.consistent_ts == history.final_resolved_ts
    assert _check(tmp_path, history, projector, report.consistent_ts) is None


def test_progress_table_tells_each_tables_freshness(tmp_path: Path) -> None:
    history, stream, _ = _stream("simple", 1, FaultPlan(crashes=0))
    Replicator(tmp_path, "simple", {}, partitions={"sim": 3}).process(stream)
    tables = replica_tables(tmp_path)
    final = history.truth_at(history.final_resolved_ts)
    assert {(t["schema"], t["table"]) for t in tables} == set(final)
    for table in tables:
        assert table["complete_ts"] == history.final_resolved_ts
        assert table["complete_time"].timestamp() * 1000 == physical_ms(history.final_resolved_ts)
        assert table["rows"] == len(final[(table["schema"], table["table"])].rows)
        assert Path(table["path"]).is_dir()
    with pytest.raises(Exception, match="replicates a simple changefeed"):
        Replicator(tmp_path, "craft", {}, partitions={"sim": 3})


def test_table_filter(tmp_path: Path) -> None:
    _, stream, _ = _stream("simple", 1, FaultPlan(crashes=0))
    Replicator(tmp_path, "simple", {}, partitions={"sim": 3}, tables=["sim.t_int*", "sim.t_np*"]).process(stream)
    names = {t["table"] for t in replica_tables(tmp_path)}
    assert names and all(n.startswith(("t_int", "t_np")) for n in names)


def test_a_decimal_past_its_precision_widens_the_column(tmp_path: Path) -> None:
    info = table_info_with_flags("s", "d", 1, 1, [ColumnInfo(name="id", type_code=3, nullable=False),
                                           ColumnInfo(name="x", type_code=246, flen=6, decimal=2)],
                          [IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True)], True)
    from pyticdc.consumer import ApplyUnit
    from pyticdc.replica import DeltaReplica

    replica = DeltaReplica(tmp_path)
    rows = (RowChange(op=Op.INSERT, schema="s", table="d", commit_ts=5, columns=Row({"id": 1, "x": "12.50"}),
                      table_info=info),)
    replica.apply(ApplyUnit(kind="rows", rows=rows, consistent_ts=5))
    replica.commit(b"")
    # Debezium carries DECIMAL as a double: 9999.999 rounds to 10000.00, past decimal(6,2).
    rows = (RowChange(op=Op.INSERT, schema="s", table="d", commit_ts=6, columns=Row({"id": 2, "x": "10000.00"}),
                      table_info=info),)
    replica.apply(ApplyUnit(kind="rows", rows=rows, consistent_ts=6))
    progress = replica.commit(b"")
    entry = progress.tables[("s", "d")]
    assert entry.info.column_by_name["x"].flen == 38
    data = replica.store.read(tmp_path / entry.path)
    assert sorted(data.column("x").to_pylist()) == [Decimal("12.50"), Decimal("10000.00")]


def test_delta_log_is_plain_delta(tmp_path: Path) -> None:
    """A reader that knows only the Delta protocol (replay add/remove actions, read Parquet) sees the replica."""
    history, stream, _ = _stream("open-protocol", 2, FaultPlan(crashes=0))
    Replicator(tmp_path, "open-protocol", {}, partitions={"sim": 3}).process(stream)
    for entry in read_progress(DeltaStore(tmp_path)).tables.values():
        table_dir = tmp_path / entry.path
        files: set[str] = set()
        for log in sorted((table_dir / "_delta_log").glob("*.json")):
            for line in log.read_text(encoding="utf-8").split("\n"):  # not splitlines: data may hold U+2028
                if not line.strip():
                    continue
                action = json.loads(line)
                if "add" in action:
                    files.add(action["add"]["path"])
                if "remove" in action:
                    files.discard(action["remove"]["path"])
                if "protocol" in action:
                    assert action["protocol"]["minReaderVersion"] <= 3
        rows = sum(pq.read_metadata(table_dir / name).num_rows for name in files)
        assert rows == entry.rows == len(history.truth_at(history.final_resolved_ts)[(entry.schema, entry.table)].rows)


def test_interleaving_is_fair_deterministic_and_keeps_partition_order() -> None:
    records = [KafkaRecord(topic="t", partition=p, offset=o) for p in range(3) for o in range(4 * (p + 1))]
    merged = list(interleave_partitions(records))
    assert merged == list(interleave_partitions(list(records)))
    for partition in range(3):
        offsets = [r.offset for r in merged if r.partition == partition]
        assert offsets == sorted(offsets)
    # Partitions advance together: half-way through the merge, each partition is about half read.
    half = merged[: len(merged) // 2]
    assert {p: sum(1 for r in half if r.partition == p) for p in range(3)} == {0: 2, 1: 4, 2: 6}


def test_actions_type_codes_are_ints() -> None:
    # ActionType is an IntEnum: DDL events with any code are interpreted from their text.
    event = DDLEvent(query="TRUNCATE TABLE `s`.`a`", ddl_type=int(ActionType.TRUNCATE_TABLE), commit_ts=1, schema="s")
    assert interpret_ddl(event, lambda key: None) == [TruncateTable(("s", "a"))]
