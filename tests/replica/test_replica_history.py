"""History tables (SCD type 2): every version of every row, DDL, tracked columns, exactly once across crashes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import pytest
from replica_units import apply_batch

from pyticdc.cli import main
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.model import ActionType, DDLEvent, Op, Row, RowChange, TableInfo, physical_ms
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica
from pyticdc.replica.applier import SimulatedCrash
from pyticdc.replica.history import Step, compare_history, fold_versions
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.selftest import check_history_on_delta
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
from pyticdc.sim.history import versions_at
from pyticdc.sim.workload import TEMPLATES

pytest.importorskip("deltalake")

#: TSOs whose physical part is a known instant (ms since the epoch << 18).
TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(12)]
HISTORY = Modelling(history=("s.*",))
HISTORY_SIM = Modelling(history=("sim.*",))
FAULTS = FaultPlan(duplicate_rate=0.05, restarts=2, replays=2, garbage=2, crashes=3)


def _info(name: str = "t_np") -> TableInfo:
    template = TEMPLATES[name]
    return table_info_with_flags("s", name, 100, 1, template.columns, template.indexes, template.pk_is_handle)


def _np(code: str, n: int | None, text: str = "x") -> dict[str, Any]:
    return {"code": code.encode(), "n": n, "c_char": b"c", "c_varchar": text.encode(), "c_tinytext": b"",
            "c_text": b"", "c_mediumtext": b"", "c_longtext": b""}


def _change(op: Op, post: dict[str, Any] | None, pre: dict[str, Any] | None, ts: int,
            info: TableInfo | None = None) -> RowChange:
    return RowChange(op=op, schema="s", table="t_np", commit_ts=ts, columns=None if post is None else Row(post),
                     pre_columns=None if pre is None else Row(pre), table_info=info or _info())


def _history(warehouse: Path, name: str = "t_np__history") -> list[dict[str, Any]]:
    store = DeltaStore(warehouse)
    rows = store.read(store.table_path("s", name)).to_pylist()
    return sorted(rows, key=lambda r: (r["code"], r["_valid_from_ts"]))


def _time(ts: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(physical_ms(ts) / 1000, tz=dt.timezone.utc)


def _versions(rows: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [(r["code"], r["_valid_from_ts"], r["_valid_to_ts"], r["_is_current"], r["_op"],
             *(r[n] for n in names)) for r in rows]


# --------------------------------------------------------------------------- options
def test_history_options_are_validated_before_any_work() -> None:
    with pytest.raises(ConfigError, match=r"--history shop\.\["):
        Modelling.parse(history="shop.[")
    with pytest.raises(ConfigError, match="--history-columns needs --history"):
        Modelling.parse(history_columns=["shop.o=a"])
    with pytest.raises(ConfigError, match=r"expected SCHEMA\.TABLE=COLUMN"):
        Modelling.parse(history="shop.*", history_columns=["shop.o"])
    with pytest.raises(ConfigError, match=r"only \{table\} can be substituted"):
        Modelling.parse(history="shop.*", history_table_name="{name}_h")
    with pytest.raises(ConfigError, match=r"expected a name containing \{table\}"):
        Modelling.parse(history="shop.*", history_table_name="{table}")
    modelling = Modelling.parse(history=["shop.*", "x.a,x.b"], history_columns=["shop.o=a,b"],
                                history_table_name="hist_{table}")
    assert modelling.history == ("shop.*", "x.a", "x.b")
    assert modelling.history_for("x", "b") and not modelling.history_for("x", "c")
    assert modelling.tracked_columns("shop", "o") == ("a", "b") and modelling.tracked_columns("shop", "p") is None
    assert modelling.history_name("o") == "hist_o"
    assert modelling.driver_only == ()  # both engines write history tables (tests/spark/test_distributed_history.py)
    # Unknown tracked columns are refused as soon as the table's schema is known.
    with pytest.raises(ConfigError, match=r"--history-columns for s\.t_np: unknown column\(s\) nope"):
        Modelling.parse(history="s.*", history_columns=["s.t_np=n,nope"]).check_table(_info())


def test_cli_refuses_bad_history_options_with_one_line_and_exit_2(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = ["replicate", "--to", str(tmp_path / "w"), "--from", str(tmp_path / "missing.jsonl"), "-p", "canal-json"]
    for extra in (["--history", "shop.["], ["--history-columns", "a.b=c"],
                  ["--history", "a.*", "--history-table-name", "{x}"]):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "history" in err
        assert not (tmp_path / "w").exists()


# --------------------------------------------------------------------------- the fold (pure)
def test_fold_versions_opens_closes_and_updates_in_place() -> None:
    columns = ["k", "a", "b"]
    steps: list[Step] = [
        (10, [], [((1,), {"k": 1, "a": 1, "b": 1}, None)]),
        (20, [], [((1,), {"k": 1, "a": 1, "b": 2}, None)]),          # only b: in place when tracking a
        (30, [], [((1,), {"k": 1, "a": 5}, frozenset({"k", "a"}))]),  # partial: b kept from the version
        (40, [(1,)], []),
        (50, [], [((1,), {"k": 1, "a": 6, "b": 0}, None)]),
    ]
    tracked = fold_versions(steps, {}, columns, tracked=["a"])
    got = [(v["_valid_from_ts"], v["_valid_to_ts"], v["_is_current"], v["_op"], v["a"], v["b"]) for v in tracked]
    assert got == [(10, 30, False, "insert", 1, 2), (30, 40, False, "update", 5, 2), (50, None, True, "insert", 6, 0)]
    every = fold_versions(steps, {}, columns)
    assert [(v["_valid_from_ts"], v["_valid_to_ts"]) for v in every] == [(10, 20), (20, 30), (30, 40), (50, None)]
    # A replayed step (at or below the current version's start) changes nothing.
    current: dict[Hashable, dict[str, Any]] = {(1,): dict(every[-1])}
    assert fold_versions([(50, [], [((1,), {"k": 1, "a": 9, "b": 9}, None)])], current, columns) == []


# --------------------------------------------------------------------------- Delta
def test_every_change_is_a_version_with_its_validity(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    replica = DeltaReplica(warehouse, modelling=HISTORY)
    # One batch holds several versions of one key: each commit ts is one (the net change would lose them).
    apply_batch(replica, [_change(Op.INSERT, _np("a", 1), None, TS[1]), _change(Op.INSERT, _np("b", 1), None, TS[1])],
           [_change(Op.UPDATE, _np("a", 2), _np("a", 1), TS[2])],
           [_change(Op.UPDATE, _np("a", 3), _np("a", 2), TS[3]), _change(Op.DELETE, None, _np("b", 1), TS[3])])
    # A key change (the handle moves): the old key's version closes, the new key's opens.
    apply_batch(replica, [_change(Op.UPDATE, _np("c", 3), _np("a", 3), TS[4])])
    # Two changes of one key in one transaction are one version.
    apply_batch(replica, [_change(Op.UPDATE, _np("c", 4), _np("c", 3), TS[5]),
                     _change(Op.UPDATE, _np("c", 5), _np("c", 4), TS[5])])
    rows = _history(warehouse)
    assert _versions(rows, "n") == [
        ("a", TS[1], TS[2], False, "insert", 1), ("a", TS[2], TS[3], False, "update", 2),
        ("a", TS[3], TS[4], False, "update", 3),
        ("b", TS[1], TS[3], False, "insert", 1),
        ("c", TS[4], TS[5], False, "insert", 3), ("c", TS[5], None, True, "update", 5),
    ]
    for row in rows:
        assert row["_valid_from"] == _time(row["_valid_from_ts"])
        assert row["_valid_to"] == (None if row["_valid_to_ts"] is None else _time(row["_valid_to_ts"]))
    store = DeltaStore(warehouse)
    assert store.position(store.table_path("s", "t_np__history")) == store.position(store.table_path("s", "t_np"))


def test_history_columns_open_a_version_only_when_a_tracked_column_changes(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    replica = DeltaReplica(warehouse, modelling=Modelling.parse(history="s.t_np", history_columns=["s.t_np=n"],
                                                                history_table_name="{table}_scd2"))
    apply_batch(replica, [_change(Op.INSERT, _np("a", 1, "x"), None, TS[1])],
           [_change(Op.UPDATE, _np("a", 1, "y"), _np("a", 1, "x"), TS[2])],
           [_change(Op.UPDATE, _np("a", 2, "z"), _np("a", 1, "y"), TS[3])])
    assert _versions(_history(warehouse, "t_np_scd2"), "n", "c_varchar") == [
        ("a", TS[1], TS[3], False, "insert", 1, "y"), ("a", TS[3], None, True, "update", 2, "z")]


def test_ddl_evolves_the_history_and_truncate_closes_every_version(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    replica = DeltaReplica(warehouse, modelling=HISTORY)
    info = _info()
    added = table_info_with_flags("s", "t_np", 100, 2, [*TEMPLATES["t_np"].columns, _column_x()],
                                  TEMPLATES["t_np"].indexes, False)
    alter = DDLEvent(query="ALTER TABLE `s`.`t_np` ADD COLUMN `x` int(11) NOT NULL DEFAULT 7",
                     ddl_type=int(ActionType.ADD_COLUMN), commit_ts=TS[3], start_ts=TS[3] - 1, schema="s",
                     table="t_np", table_info=added, pre_table_info=info)
    truncate = DDLEvent(query="TRUNCATE TABLE `s`.`t_np`", ddl_type=int(ActionType.TRUNCATE_TABLE),
                        commit_ts=TS[5], start_ts=TS[5] - 1, schema="s", table="t_np", table_info=added,
                        pre_table_info=added)
    create = DDLEvent(query="CREATE TABLE `s`.`t_np` (...)", ddl_type=int(ActionType.CREATE_TABLE), commit_ts=TS[0],
                      start_ts=TS[0] - 1, schema="s", table="t_np", table_info=info)
    apply_batch(replica, create, [_change(Op.INSERT, _np("a", 1), None, TS[1]),
                             _change(Op.INSERT, _np("b", 1), None, TS[1])],
           [_change(Op.UPDATE, _np("a", 2), _np("a", 1), TS[2])], alter,
           [_change(Op.UPDATE, {**_np("a", 3), "x": 8}, {**_np("a", 2), "x": 7}, TS[4], added)], truncate)
    assert _versions(_history(warehouse), "n", "x") == [
        ("a", TS[1], TS[2], False, "insert", 1, 7), ("a", TS[2], TS[4], False, "update", 2, 7),
        ("a", TS[4], TS[5], False, "update", 3, 8), ("b", TS[1], TS[5], False, "insert", 1, 7)]
    rename = DDLEvent(query="RENAME TABLE `s`.`t_np` TO `s`.`t_np2`", ddl_type=int(ActionType.RENAME_TABLE),
                      commit_ts=TS[6], start_ts=TS[6] - 1, schema="s", table="t_np2",
                      table_info=table_info_with_flags("s", "t_np2", 100, 2, [*TEMPLATES["t_np"].columns,
                                                                               _column_x()],
                                                       TEMPLATES["t_np"].indexes, False), pre_table_info=added)
    apply_batch(replica, rename)
    assert len(_history(warehouse, "t_np2__history")) == 4
    assert not DeltaStore(warehouse).table_path("s", "t_np__history").exists()


def _column_x() -> Any:
    from pyticdc.model import ColumnInfo, TypeCode

    return ColumnInfo(name="x", type_code=TypeCode.LONG, charset="binary", collation="binary", flen=11,
                      nullable=False, default="7", type_desc="int(11)")


def _rowid_change(op: Op, post: dict[str, Any] | None, pre: dict[str, Any] | None, ts: int) -> RowChange:
    # A table without key whose messages carry no row id (every protocol but Open Protocol): found by its image.
    template = TEMPLATES["t_rowid"]
    info = table_info_with_flags("s", "t_rowid", 100, 1, template.columns, template.indexes, False)
    return RowChange(op=op, schema="s", table="t_rowid", commit_ts=ts, columns=None if post is None else Row(post),
                     pre_columns=None if pre is None else Row(pre), table_info=info)


def _rowid_row(seq: int, v: float) -> dict[str, Any]:
    return {"seq": seq, "c_varchar": f"v{seq}".encode(), "v": v, "j": "{}", "d": "1.000"}


@pytest.mark.parametrize("tracked", [False, True])
def test_a_table_found_by_its_whole_image_keeps_every_image_as_an_insert(tmp_path: Path, tracked: bool) -> None:
    modelling = Modelling.parse(history="s.*", history_columns=["s.t_rowid=seq"] if tracked else None)
    warehouse = tmp_path / "w"
    replica = DeltaReplica(warehouse, modelling=modelling)
    apply_batch(replica, [_rowid_change(Op.INSERT, _rowid_row(1, 1.0), None, TS[1]),
                     _rowid_change(Op.INSERT, _rowid_row(2, 1.0), None, TS[1])],
           # 1 changes (its old image closes, the new one opens); 2 is updated to the image it has: no version.
           [_rowid_change(Op.UPDATE, _rowid_row(1, 2.0), _rowid_row(1, 1.0), TS[2]),
            _rowid_change(Op.UPDATE, _rowid_row(2, 1.0), _rowid_row(2, 1.0), TS[2])])
    apply_batch(replica, [_rowid_change(Op.DELETE, None, _rowid_row(1, 2.0), TS[3])],
           [_rowid_change(Op.INSERT, _rowid_row(3, 5.0), None, TS[4])])
    store = DeltaStore(warehouse)
    rows = store.read(store.table_path("s", "t_rowid__history")).to_pylist()
    got = sorted((r["seq"], r["v"], r["_valid_from_ts"], r["_valid_to_ts"], r["_is_current"], r["_op"]) for r in rows)
    # Tracked columns cannot tie two images together: the same versions with or without them.
    assert got == [(1, 1.0, TS[1], TS[2], False, "insert"), (1, 2.0, TS[2], TS[3], False, "insert"),
                   (2, 1.0, TS[1], None, True, "insert"), (3, 5.0, TS[4], None, True, "insert")]
    # Each version carries the digest of its own image: distinct images, distinct digests.
    assert len({r["_pyticdc_row_digest"] for r in rows}) == 4
    # The replica table agrees with the current versions.
    live = store.read(store.table_path("s", "t_rowid")).to_pylist()
    assert sorted((r["seq"], r["v"]) for r in live) == [(2, 1.0), (3, 5.0)]


def test_a_whole_image_history_follows_a_dropped_column(tmp_path: Path) -> None:
    template = TEMPLATES["t_rowid"]
    info = table_info_with_flags("s", "t_rowid", 100, 1, template.columns, template.indexes, False)
    narrow = table_info_with_flags("s", "t_rowid", 100, 2, [c for c in template.columns if c.name != "v"],
                                   template.indexes, False)
    warehouse = tmp_path / "w"
    replica = DeltaReplica(warehouse, modelling=HISTORY)
    create = DDLEvent(query="CREATE TABLE `s`.`t_rowid` (...)", ddl_type=int(ActionType.CREATE_TABLE),
                      commit_ts=TS[0], start_ts=TS[0] - 1, schema="s", table="t_rowid", table_info=info)
    drop_v = DDLEvent(query="ALTER TABLE `s`.`t_rowid` DROP COLUMN `v`", ddl_type=int(ActionType.DROP_COLUMN),
                      commit_ts=TS[2], start_ts=TS[2] - 1, schema="s", table="t_rowid", table_info=narrow,
                      pre_table_info=info)
    gone = {k: v for k, v in _rowid_row(1, 1.0).items() if k != "v"}
    apply_batch(replica, create, [_rowid_change(Op.INSERT, _rowid_row(1, 1.0), None, TS[1])], drop_v,
           # The delete carries the row as it is after the DDL: it finds the version by its new digest.
           [RowChange(op=Op.DELETE, schema="s", table="t_rowid", commit_ts=TS[3], pre_columns=Row(gone),
                      table_info=narrow)])
    store = DeltaStore(warehouse)
    rows = store.read(store.table_path("s", "t_rowid__history")).to_pylist()
    assert [(r["seq"], r["_valid_from_ts"], r["_valid_to_ts"]) for r in rows] == [(1, TS[1], TS[3])]
    assert "v" not in rows[0]


class _CrashOnce:
    def __init__(self, point: str, kind: str) -> None:
        self.point, self.kind, self.fired = point, kind, False

    def __call__(self, point: str, detail: Mapping[str, Any]) -> None:
        if not self.fired and point == self.point and detail.get("kind") == self.kind:
            self.fired = True
            raise SimulatedCrash(point)


@pytest.mark.parametrize(("point", "kind"), [("before-table-commit", "history"), ("after-table-commit", "history"),
                                             ("after-table-commit", "merge"), ("before-progress", "")])
def test_a_crash_between_the_replica_and_its_history_applies_each_version_once(
        tmp_path: Path, point: str, kind: str) -> None:
    warehouse = tmp_path / "w"
    first = [_change(Op.INSERT, _np("a", 1), None, TS[1])]
    second = [_change(Op.UPDATE, _np("a", 2), _np("a", 1), TS[2]), _change(Op.INSERT, _np("b", 1), None, TS[2])]
    apply_batch(DeltaReplica(warehouse, modelling=HISTORY), first)
    crash = _CrashOnce(point, kind)
    replica = DeltaReplica(warehouse, modelling=HISTORY, hook=lambda p, d: crash(p, {"kind": "", **d}))
    with pytest.raises(SimulatedCrash):
        apply_batch(replica, second)
    # The job restarts from the progress and the consumer re-releases the batch's changes.
    apply_batch(DeltaReplica(warehouse, modelling=HISTORY), second)
    assert _versions(_history(warehouse), "n") == [
        ("a", TS[1], TS[2], False, "insert", 1), ("a", TS[2], None, True, "update", 2),
        ("b", TS[2], None, True, "insert", 1)]


# --------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize(("protocol", "modelling"), [
    ("open-protocol", Modelling(history=("sim.*",))),
    # No --table-key: tables without key (t_rowid; t_uk too in Canal-JSON, which names no unique key) are found
    # by their whole image, as these protocols carry no row id.
    ("craft", Modelling(history=("sim.*",))),
    ("canal-json", Modelling(history=("sim.*",))),
    ("canal-json", Modelling.parse(history="sim.*", keys=["sim.t_uk*=a,b", "sim.t_rowid*=seq"],
                                   history_columns=["sim.t_int*=c_int,c_bigint", "sim.t_np*=n"],
                                   history_table_name="{table}_versions")),
])
def test_history_tables_equal_the_simulated_version_history_with_all_faults(protocol: str,
                                                                            modelling: Modelling) -> None:
    history = simulate(5, WorkloadConfig(transactions=50, ddl_probability=0.25))
    options = {"enable-tidb-extension": True} if protocol == "canal-json" else {}
    report = check_history_on_delta(history, protocol, options, plan=FAULTS, seed=5, modelling=modelling)
    assert report.checks >= 2 and report.crashes


def test_the_history_oracle_notices_a_missing_or_wrong_version(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    history = simulate(2, WorkloadConfig(transactions=30))
    check_history_on_delta(history, "open-protocol", plan=FaultPlan(crashes=0, garbage=0), seed=2,
                           modelling=HISTORY_SIM, workdir=tmp_path)
    warehouse = tmp_path / "warehouse"
    truth = versions_at(history, history.final_resolved_ts, history_for=HISTORY_SIM.history_for)
    assert compare_history(warehouse, truth, HISTORY_SIM) is None
    # A truth that ignores TRUNCATE, or tracks columns, is another history.
    tracked = versions_at(history, history.final_resolved_ts, history_for=HISTORY_SIM.history_for,
                          tracked_for=lambda schema, table: ("id",) if table.startswith("t_int") else None)
    assert "t_int" in (compare_history(warehouse, tracked, HISTORY_SIM) or "")
    path = warehouse / "sim" / "t_np__history"
    DeltaTable(str(path)).update({"_op": "'update'"}, predicate="_op = 'insert'")
    assert "t_np__history: " in (compare_history(warehouse, truth, HISTORY_SIM) or "")
    DeltaTable(str(path)).delete("_is_current = false")
    assert "truth versions missing" in (compare_history(warehouse, truth, HISTORY_SIM) or "")


def test_a_rename_redone_after_a_crash_moves_the_history_once(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    info = _info()
    create = DDLEvent(query="CREATE TABLE `s`.`t_np` (...)", ddl_type=int(ActionType.CREATE_TABLE), commit_ts=TS[0],
                      start_ts=TS[0] - 1, schema="s", table="t_np", table_info=info)
    apply_batch(DeltaReplica(warehouse, modelling=HISTORY), create, [_change(Op.INSERT, _np("a", 1), None, TS[1])])
    renamed = table_info_with_flags("s", "t_np2", 100, 1, TEMPLATES["t_np"].columns, TEMPLATES["t_np"].indexes,
                                    False)
    rename = DDLEvent(query="RENAME TABLE `s`.`t_np` TO `s`.`t_np2`", ddl_type=int(ActionType.RENAME_TABLE),
                      commit_ts=TS[3], start_ts=TS[3] - 1, schema="s", table="t_np2", table_info=renamed,
                      pre_table_info=info)
    batch: tuple[list[RowChange] | DDLEvent, ...] = ([_change(Op.UPDATE, _np("a", 2), _np("a", 1), TS[2])], rename)
    crash = _CrashOnce("before-progress", "")
    with pytest.raises(SimulatedCrash):
        apply_batch(DeltaReplica(warehouse, modelling=HISTORY, hook=lambda p, d: crash(p, {"kind": "", **d})), *batch)
    # Redone: the rows before the rename find the history where the first attempt moved it.
    apply_batch(DeltaReplica(warehouse, modelling=HISTORY), *batch)
    assert _versions(_history(warehouse, "t_np2__history"), "n") == [
        ("a", TS[1], TS[2], False, "insert", 1), ("a", TS[2], None, True, "update", 2)]
    assert not (warehouse / "_pyticdc" / "dropped").exists()


def _create_np() -> DDLEvent:
    return DDLEvent(query="CREATE TABLE `s`.`t_np` (...)", ddl_type=int(ActionType.CREATE_TABLE), commit_ts=TS[0],
                    start_ts=TS[0] - 1, schema="s", table="t_np", table_info=_info())


def _dropped_histories(warehouse: Path) -> list[Path]:
    folder = warehouse / "_pyticdc" / "dropped"
    return sorted(p for p in folder.iterdir() if "history" in p.name) if folder.is_dir() else []


@pytest.mark.parametrize("crash", [None, ("before-table-commit", "history"), ("after-table-commit", "history"),
                                   ("before-table-commit", "drop"), ("before-progress", "")])
def test_a_drop_writes_the_rows_before_it_and_closes_every_version(
        tmp_path: Path, crash: tuple[str, str] | None) -> None:
    from deltalake import DeltaTable

    from pyticdc.arrow.rows import parse_table_info

    warehouse = tmp_path / "w"
    apply_batch(DeltaReplica(warehouse, modelling=HISTORY), _create_np(),
           [_change(Op.INSERT, _np("a", 1), None, TS[1]), _change(Op.INSERT, _np("b", 1), None, TS[1])])
    drop = DDLEvent(query="DROP TABLE `s`.`t_np`", ddl_type=int(ActionType.DROP_TABLE), commit_ts=TS[4],
                    start_ts=TS[4] - 1, schema="s", table="t_np", pre_table_info=_info())
    # Rows buffered in the batch of the drop: never read again by the replica, but versions of the history.
    batch: tuple[list[RowChange] | DDLEvent, ...] = (
        [_change(Op.UPDATE, _np("a", 2), _np("a", 1), TS[2])], [_change(Op.INSERT, _np("c", 1), None, TS[3])], drop)
    if crash is not None:
        crashing = _CrashOnce(*crash)
        with pytest.raises(SimulatedCrash):
            apply_batch(DeltaReplica(warehouse, modelling=HISTORY, hook=lambda p, d: crashing(p, {"kind": "", **d})),
                   *batch)
    apply_batch(DeltaReplica(warehouse, modelling=HISTORY), *batch)
    [folder] = _dropped_histories(warehouse)  # moved aside once, whatever the crash
    rows = sorted(DeltaStore(warehouse).read(folder).to_pylist(), key=lambda r: (r["code"], r["_valid_from_ts"]))
    assert _versions(rows, "n") == [
        ("a", TS[1], TS[2], False, "insert", 1), ("a", TS[2], TS[4], False, "update", 2),
        ("b", TS[1], TS[4], False, "insert", 1), ("c", TS[3], TS[4], False, "insert", 1)]
    assert not DeltaStore(warehouse).table_path("s", "t_np__history").exists()
    # The DROP's commit records the table's schema: a dropped history is read without the progress.
    recorded = next(c["pyticdc.table_info"] for c in DeltaTable(str(folder)).history() if "pyticdc.table_info" in c)
    assert [c.name for c in parse_table_info(recorded).columns] == [c.name for c in _info().columns]


def test_the_history_oracle_compares_dropped_histories(tmp_path: Path) -> None:
    import shutil

    from deltalake import DeltaTable

    from pyticdc.sim.history import history_at

    # Seed 3 drops tables that have rows (t_int and t_rowid) before its end; Open Protocol carries every value
    # of the workload as it is, so the truth needs no projection.
    history = simulate(3, WorkloadConfig(transactions=60))
    check_history_on_delta(history, "open-protocol", plan=FaultPlan(crashes=2, garbage=0), seed=3,
                           modelling=HISTORY_SIM, workdir=tmp_path)
    warehouse = tmp_path / "warehouse"
    truth = history_at(history, history.final_resolved_ts, history_for=HISTORY_SIM.history_for)
    assert len(truth.dropped) == 2 and all(t.dropped_ts for t in truth.dropped)
    assert compare_history(warehouse, truth.tables, HISTORY_SIM, dropped=truth.dropped) is None
    folders = _dropped_histories(warehouse)
    assert len(folders) == 2
    # Versions the DROP did not close are noticed.
    DeltaTable(str(folders[0])).update({"_valid_to_ts": "NULL", "_valid_to": "NULL", "_is_current": "true"})
    assert "dropped history of" in (compare_history(warehouse, truth.tables, HISTORY_SIM, dropped=truth.dropped) or "")
    # A dropped history that is not there is noticed too.
    shutil.rmtree(folders[0])
    assert "missing" in (compare_history(warehouse, truth.tables, HISTORY_SIM, dropped=truth.dropped) or "")


def test_replicate_refuses_a_history_column_an_existing_table_lacks(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    apply_batch(DeltaReplica(tmp_path / "wh"), [_change(Op.INSERT, _np("a", 1), None, TS[1])])
    capture = tmp_path / "none.jsonl"
    capture.write_text("")
    before = sorted(p.name for p in (tmp_path / "wh" / "s").iterdir())
    code = main(["replicate", "--from", str(capture), "-p", "craft", "--to", str(tmp_path / "wh"),
                 "--history", "s.*", "--history-columns", "s.t_np=n,nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--history-columns for s.t_np: unknown column(s) nope" in err[0]
    assert sorted(p.name for p in (tmp_path / "wh" / "s").iterdir()) == before  # nothing written


def test_a_history_name_taken_by_an_upstream_table_is_refused(tmp_path: Path) -> None:
    template = TEMPLATES["t_np"]
    other = table_info_with_flags("s", "t_np__history", 101, 1, template.columns, template.indexes, False)
    taken = RowChange(op=Op.INSERT, schema="s", table="t_np__history", commit_ts=TS[1], columns=Row(_np("z", 1)),
                      table_info=other)
    replica = DeltaReplica(tmp_path / "w", modelling=Modelling(history=("s.t_np",)))
    apply_batch(replica, [taken])
    with pytest.raises(ReplicaError, match="choose another --history-table-name"):
        apply_batch(replica, [_change(Op.INSERT, _np("a", 1), None, TS[2])])
    store = DeltaStore(tmp_path / "w")
    assert store.read(store.table_path("s", "t_np__history")).column("code").to_pylist() == ["z"]


def test_an_upstream_table_taking_a_live_history_name_is_refused_never_skipped(tmp_path: Path) -> None:
    template = TEMPLATES["t_np"]
    other = table_info_with_flags("s", "t_np__history", 101, 1, template.columns, template.indexes, False)
    create = DDLEvent(query="CREATE TABLE `s`.`t_np__history` (...)", ddl_type=int(ActionType.CREATE_TABLE),
                      commit_ts=TS[2], start_ts=TS[2] - 1, schema="s", table="t_np__history", table_info=other)
    taken = RowChange(op=Op.INSERT, schema="s", table="t_np__history", commit_ts=TS[3], columns=Row(_np("z", 1)),
                      table_info=other)
    warehouse = tmp_path / "w"
    modelling = Modelling(history=("s.t_np",))
    apply_batch(DeltaReplica(warehouse, modelling=modelling), _create_np(),
                [_change(Op.INSERT, _np("a", 1), None, TS[1])])
    batch: tuple[list[RowChange] | DDLEvent, ...] = (create, [taken, _change(Op.UPDATE, _np("a", 2), _np("a", 1),
                                                                             TS[3])])
    with pytest.raises(ReplicaError) as refused:
        apply_batch(DeltaReplica(warehouse, modelling=modelling), *batch)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("s.t_np__history: ")
    assert "history table of s.t_np" in message and "--history-table-name" in message
    # Nothing was set aside: the history is where it was, with its versions.
    assert _versions(_history(warehouse), "n") == [("a", TS[1], None, True, "insert", 1)]
    assert not (warehouse / "_pyticdc" / "dropped").exists()
    # The remedy: another history table name. The history moves there and goes on; the upstream table gets its name.
    renamed = Modelling.parse(history="s.t_np", history_table_name="{table}_versions")
    replica = DeltaReplica(warehouse, modelling=renamed)
    apply_batch(replica, *batch)
    assert replica.history is not None and replica.history.relocated == 1
    assert _versions(_history(warehouse, "t_np_versions"), "n") == [
        ("a", TS[1], TS[3], False, "insert", 1), ("a", TS[3], None, True, "update", 2)]
    store = DeltaStore(warehouse)
    assert store.read(store.table_path("s", "t_np__history")).column("code").to_pylist() == ["z"]


@pytest.mark.spark
def test_replicate_stops_with_one_line_and_exit_1_when_a_table_takes_a_history_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyticdc.codec import make_encoder
    from pyticdc.io.capture import write_capture
    from pyticdc.model import Event, KafkaRecord, Watermark

    template = TEMPLATES["t_np"]
    other = table_info_with_flags("s", "t_np__history", 101, 1, template.columns, template.indexes, False)
    events: list[Event] = [_change(Op.INSERT, _np("a", 1), None, TS[1]),
              RowChange(op=Op.INSERT, schema="s", table="t_np__history", commit_ts=TS[2], columns=Row(_np("z", 1)),
                        table_info=other), Watermark(resolved_ts=TS[3])]
    capture = tmp_path / "open.jsonl"
    write_capture(capture, [KafkaRecord(topic="cdc", partition=0, offset=i, key=m.key, value=m.value)
                            for i, m in enumerate(make_encoder("open-protocol").encode(events))])
    code = main(["replicate", "--from", str(capture), "-p", "open-protocol", "--to", str(tmp_path / "wh"),
                 "--history", "s.t_np"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    # One line (after the progress line the run starts with) naming both tables and the remedy. The words
    # differ by engine (the driver engine sees the new table arrive, the distributed one finds its path taken).
    assert code == 1 and len(errors) == 1, errors
    assert errors[0].startswith("pyticdc replicate: error: s.t_np"), errors[0]
    assert all(part in errors[0] for part in ("s.t_np", "t_np__history", "--history-table-name")), errors[0]


def test_a_rename_onto_a_history_name_is_refused(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    modelling = Modelling(history=("s.t_np",))
    apply_batch(DeltaReplica(warehouse, modelling=modelling), _create_np(),
                [_change(Op.INSERT, _np("a", 1), None, TS[1])])
    template = TEMPLATES["t_np"]
    moved = table_info_with_flags("s", "t_np__history", 100, 1, template.columns, template.indexes, False)
    rename = DDLEvent(query="RENAME TABLE `s`.`t_np` TO `s`.`t_np__history`", ddl_type=int(ActionType.RENAME_TABLE),
                      commit_ts=TS[2], start_ts=TS[2] - 1, schema="s", table="t_np__history", table_info=moved,
                      pre_table_info=_info())
    with pytest.raises(ReplicaError, match=r"holds the history table of s\.t_np: restart with another "
                                           r"--history-table-name"):
        apply_batch(DeltaReplica(warehouse, modelling=Modelling(history=("s.*",))), rename)
    assert _versions(_history(warehouse), "n") == [("a", TS[1], None, True, "insert", 1)]


def test_selftest_compares_history_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "-p", "open-protocol", "--history", "sim.*", "--history-columns", "sim.t_np*=n",
                 "--seeds", "1", "--transactions", "40", "--faults", "crashes,duplicates"]) == 0
    out = capsys.readouterr().out
    assert "ok   open-protocol" in out and "history sim.* as {table}__history" in out
    assert main(["selftest", "-p", "open-protocol", "--history", "sim.["]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--history" in err[0]


def test_maintenance_compacts_history_tables_too(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    warehouse = tmp_path / "w"
    replica = DeltaReplica(warehouse, modelling=HISTORY, maintenance_every=18)
    stamps = [((1_700_000_000_000 + i * 1000) << 18) for i in range(18)]
    for n in range(18):
        # A new key per batch: each MERGE only adds a file (an update would rewrite the one it matches).
        apply_batch(replica, [_change(Op.INSERT, _np(f"k{n:02}", n), None, stamps[n])])
    path = DeltaStore(warehouse).table_path("s", "t_np__history")
    assert len(DeltaTable(str(path)).file_uris()) < 16
    rows = _history(warehouse)
    assert [r["n"] for r in rows] == list(range(18)) and all(r["_is_current"] for r in rows)
