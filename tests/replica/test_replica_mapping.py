"""Column and table mapping, and schema evolution modes, of Delta replica tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from replica_units import apply_batch

from pyticdc.consumer import ApplyUnit
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.model import ActionType, ColumnInfo, DDLEvent, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica
from pyticdc.replica.mapping import EXCLUDED, NameMapping, follow_renames
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.progress import read_progress
from pyticdc.replica.selftest import check_history_on_delta
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
from pyticdc.sim.workload import TEMPLATES

pytest.importorskip("deltalake")

TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(12)]
_BASE = TEMPLATES["t_np"]


def _info(columns: tuple[ColumnInfo, ...] = _BASE.columns) -> TableInfo:
    return table_info_with_flags("s", "t_np", 100, 1, columns, _BASE.indexes, _BASE.pk_is_handle)


def _renamed(info: TableInfo, old: str, new: str) -> TableInfo:
    return _info(tuple(msgspec.structs.replace(c, name=new) if c.name == old else c for c in info.columns))


def _without(info: TableInfo, name: str) -> TableInfo:
    return _info(tuple(c for c in info.columns if c.name != name))


def _with(info: TableInfo, column: ColumnInfo) -> TableInfo:
    return _info((*info.columns, column))


def _row(code: str, n: int | None, info: TableInfo, ts: int, **extra: Any) -> RowChange:
    values: dict[str, Any] = {"code": code.encode(), "c_char": b"c", "c_varchar": b"v", "c_tinytext": b"",
                              "c_text": b"secret", "c_mediumtext": b"", "c_longtext": b""}
    names = {c.name for c in info.columns}
    values["n" if "n" in names else "n2"] = n
    values.update(extra)
    return RowChange(op=Op.INSERT, schema="s", table="t_np", commit_ts=ts,
                     columns=Row({k: v for k, v in values.items() if k in names or k in extra}), table_info=info)


def _ddl(query: str, ts: int, info: TableInfo | None = None) -> DDLEvent:
    return DDLEvent(query=query, ddl_type=int(ActionType.ADD_COLUMN), commit_ts=ts, schema="s", table="t_np",
                    table_info=info)


def _table(warehouse: Path) -> tuple[str, list[str], list[dict[str, Any]]]:
    store = DeltaStore(warehouse)
    entry = read_progress(store).tables[("s", "t_np")]
    data = store.read(store.root / entry.path)
    return entry.path, data.schema.names, sorted(data.to_pylist(), key=lambda r: r["code"])


# --------------------------------------------------------------------------- options
def test_mapping_options_are_validated_before_any_work() -> None:
    for kwargs, words in (({"columns": ["shop.orders"]}, "expected SCHEMA.TABLE=COLUMN"),
                          ({"exclude_columns": ["shop.[=a"]}, "exclude-columns shop.["),
                          ({"columns": ["!shop.x=a"]}, "not a negation"),
                          ({"exclude_columns": ["shop.x=a,,b"]}, "empty column name"),
                          ({"rename_columns": ["orders=amount"]}, "SCHEMA.TABLE.COLUMN=NEW_NAME"),
                          ({"rename_columns": ["shop.orders.amt=a.b"]}, "SCHEMA.TABLE.COLUMN=NEW_NAME"),
                          ({"table_names": ["shop.*=bronze_{table}"]}, "is not SCHEMA.TABLE"),
                          ({"table_names": ["shop.*=bronze.{db}_{table}"]}, "unknown placeholder {db}"),
                          ({"table_names": ["shop.*=a/b.c"]}, "is not SCHEMA.TABLE")):
        with pytest.raises(ConfigError, match=words.replace(".", r"\.").replace("[", r"\[")):
            NameMapping.parse(**kwargs)
    with pytest.raises(ConfigError, match="schema evolution mode 'sometimes'"):
        Modelling(schema_evolution="sometimes")


def test_rules_first_match_wins_and_names_compare_case_insensitively() -> None:
    mapping = NameMapping.parse(columns=["shop.orders=id,AMT"], exclude_columns=["shop.*=secret", "*.*=x"],
                                rename_columns=["shop.orders.amt=amount"], table_names=["shop.*=bronze.shop_{table}"])
    assert mapping.column_target("shop", "orders", "amt") == "amount"
    assert mapping.column_target("shop", "orders", "note") == EXCLUDED  # not in the include list
    assert mapping.column_target("shop", "users", "Secret") == EXCLUDED
    assert mapping.column_target("shop", "users", "x") == "x"  # only the first exclude rule applies
    assert mapping.column_target("bi", "t", "x") == EXCLUDED
    assert mapping.target_table("shop", "orders") == ("bronze", "shop_orders")
    assert mapping.target_table("bi", "t") == ("bi", "t")
    # Mapped and left-out columns keep their replica name across renames; the others follow them.
    assert follow_renames({"amt": "amount", "x": "", "id": "id"}, {"amt": "a2", "x": "y", "id": "key"}) == {
        "a2": "amount", "y": "", "key": "key"}


def test_modelling_with_mapping_or_a_mode_runs_on_both_engines() -> None:
    # The distributed engine ships each table's column decisions and kept columns to its executors.
    assert Modelling(mapping=NameMapping.parse(table_names=["s.*=b.{table}"], exclude_columns=["s.*=x"])).driver_only \
        == ()
    for mode in ("add-only", "fail", "rescue"):
        assert Modelling(schema_evolution=mode).driver_only == ()
    assert Modelling(schema_evolution="rescue", history=("s.t",)).driver_only == ()
    assert Modelling(schema_evolution="rescue").row_columns == ("_commit_time", "_rescued_data")
    assert Modelling().driver_only == ()


# --------------------------------------------------------------------------- mapping on the replica
def test_mapped_columns_and_table_follow_ddl_and_restarts(tmp_path: Path) -> None:
    mapping = NameMapping.parse(exclude_columns=["s.*=c_text,c_tinytext,secret"], rename_columns=["s.t_np.n=amount"],
                                table_names=["s.*=bronze.s_{table}"])
    model = Modelling(mapping=mapping)
    info = _info()
    apply_batch(DeltaReplica(tmp_path, modelling=model), [_row("a", 1, info, TS[1])])
    path, names, rows = _table(tmp_path)
    assert path == "bronze/s_t_np" and not (tmp_path / "s").exists()
    assert "amount" in names and not {"n", "c_text", "c_tinytext"} & set(names)
    assert [(r["code"], r["amount"]) for r in rows] == [("a", 1)]
    # Upstream renames n: the replica column stays amount (in a new process: the decision is in the progress).
    replica = DeltaReplica(tmp_path, modelling=model)
    renamed = _renamed(info, "n", "n2")
    apply_batch(replica, _ddl("ALTER TABLE `s`.`t_np` RENAME COLUMN `n` TO `n2`", TS[2], renamed),
           [_row("b", 2, renamed, TS[3])])
    _, names, rows = _table(tmp_path)
    assert "amount" in names and "n2" not in names
    assert [(r["code"], r["amount"]) for r in rows] == [("a", 1), ("b", 2)]
    # Dropping a left-out column is a no-op; an added column an exclude rule names is not added.
    rewrites = replica.stats.rewrites
    dropped = _without(renamed, "c_text")
    secret = ColumnInfo(name="secret", type_code=TypeCode.LONG)
    apply_batch(replica, _ddl("ALTER TABLE `s`.`t_np` DROP COLUMN `c_text`", TS[4], dropped),
           _ddl("ALTER TABLE `s`.`t_np` ADD COLUMN `secret` int", TS[5], _with(dropped, secret)),
           [_row("c", 3, _with(dropped, secret), TS[6], secret=7)])
    _, after, rows = _table(tmp_path)
    assert after == names and replica.stats.rewrites == rewrites
    assert [(r["code"], r["amount"]) for r in rows] == [("a", 1), ("b", 2), ("c", 3)]
    # Renaming the upstream table moves the replica table to its mapped name.
    apply_batch(replica, DDLEvent(query="RENAME TABLE `s`.`t_np` TO `s`.`t_new`", ddl_type=int(ActionType.RENAME_TABLE),
                             commit_ts=TS[7], schema="s", table="t_np"))
    entry = read_progress(DeltaStore(tmp_path)).tables[("s", "t_new")]
    assert entry.path == "bronze/s_t_new" and entry.names["n2"] == "amount" and entry.names["secret"] == EXCLUDED


def test_an_include_list_and_a_handle_column_left_out(tmp_path: Path) -> None:
    model = Modelling(mapping=NameMapping.parse(columns=["s.t_np=code,n"]))
    apply_batch(DeltaReplica(tmp_path / "a", modelling=model), [_row("a", 1, _info(), TS[1])])
    _, names, rows = _table(tmp_path / "a")
    assert [n for n in names if not n.startswith("_")] == ["code", "n"]
    assert rows[0]["n"] == 1
    replica = DeltaReplica(tmp_path / "b", modelling=Modelling(mapping=NameMapping.parse(columns=["s.t_np=n"])))
    with pytest.raises(ConfigError, match=r"s\.t_np: column\(s\) code identify its rows and cannot be left out"):
        apply_batch(replica, [_row("a", 1, _info(), TS[1])])


def test_two_tables_mapped_to_one_name_are_refused(tmp_path: Path) -> None:
    model = Modelling(mapping=NameMapping.parse(table_names=["s.*=b.all"]))
    replica = DeltaReplica(tmp_path, modelling=model)
    other = msgspec.structs.replace(_row("a", 1, _info(), TS[1]), table="t_other",
                                    table_info=msgspec.structs.replace(_info(), table="t_other"))
    with pytest.raises(ReplicaError, match="would both be replica table b/all"):
        apply_batch(replica, [_row("a", 1, _info(), TS[1]), other])


# --------------------------------------------------------------------------- schema evolution modes
def test_add_only_keeps_dropped_and_renamed_columns(tmp_path: Path) -> None:
    replica = DeltaReplica(tmp_path, modelling=Modelling(schema_evolution="add-only"))
    info = _info()
    apply_batch(replica, [_row("a", 1, info, TS[1])])
    dropped = _without(info, "c_varchar")
    apply_batch(replica, _ddl("ALTER TABLE `s`.`t_np` DROP COLUMN `c_varchar`", TS[2], dropped),
           [_row("b", 2, dropped, TS[3])])
    renamed = _renamed(dropped, "n", "n2")
    apply_batch(DeltaReplica(tmp_path, modelling=Modelling(schema_evolution="add-only")),
           _ddl("ALTER TABLE `s`.`t_np` RENAME COLUMN `n` TO `n2`", TS[4], renamed), [_row("c", 3, renamed, TS[5])])
    _, names, rows = _table(tmp_path)
    assert {"c_varchar", "n", "n2"} <= set(names)
    assert [(r["code"], r["c_varchar"], r["n"], r["n2"]) for r in rows] == [
        ("a", "v", 1, None), ("b", None, 2, None), ("c", None, None, 3)]


def test_fail_stops_before_the_ddl_and_a_restart_with_follow_continues(tmp_path: Path) -> None:
    info = _info()
    replica = DeltaReplica(tmp_path, modelling=Modelling(schema_evolution="fail"))
    apply_batch(replica, [_row("a", 1, info, TS[1])])
    # An index change passes.
    apply_batch(replica, _ddl("ALTER TABLE `s`.`t_np` ADD INDEX `ix`(`n`)", TS[2]))
    dropped = _without(info, "c_varchar")
    drop = _ddl("ALTER TABLE `s`.`t_np` DROP COLUMN `c_varchar`", TS[3], dropped)
    replica.apply(ApplyUnit(kind="rows", rows=(_row("b", 2, info, TS[3] - 1),), consistent_ts=TS[3] - 1))
    with pytest.raises(ReplicaError) as failure:
        replica.apply(ApplyUnit(kind="ddl", ddl=drop, consistent_ts=TS[3]))
    message = str(failure.value)
    assert "\n" not in message and "s.t_np" in message and "DROP COLUMN `c_varchar`" in message
    assert "drop column c_varchar" in message
    _, names, rows = _table(tmp_path)
    assert "c_varchar" in names and [r["code"] for r in rows] == ["a"]  # nothing of that batch applied
    follow = DeltaReplica(tmp_path)
    apply_batch(follow, [_row("b", 2, info, TS[3] - 1)], drop, [_row("c", 3, dropped, TS[4])])
    _, names, rows = _table(tmp_path)
    assert "c_varchar" not in names and [r["code"] for r in rows] == ["a", "b", "c"]


def test_rescue_keeps_unknown_columns_and_values_a_type_change_cannot_convert(tmp_path: Path) -> None:
    replica = DeltaReplica(tmp_path, modelling=Modelling(schema_evolution="rescue"))
    info = _info()
    # A row carrying a column the replica's schema lacks (an upstream change it never saw as DDL).
    wider = _with(info, ColumnInfo(name="extra", type_code=TypeCode.LONG))
    apply_batch(replica, [_row("a", 300, info, TS[1])])
    apply_batch(replica, [_row("b", 2, wider, TS[2], extra=42)])
    _, names, rows = _table(tmp_path)
    assert "extra" not in names
    assert [(r["code"], r["_rescued_data"]) for r in rows] == [("a", None), ("b", '{"extra":"42"}')]
    # n int -> tinyint: 300 does not fit; it goes to _rescued_data, the column takes the new type.
    tiny = _info(tuple(msgspec.structs.replace(c, type_code=TypeCode.TINY, type_desc="tinyint(4)", flen=4)
                       if c.name == "n" else c for c in info.columns))
    apply_batch(replica, _ddl("ALTER TABLE `s`.`t_np` MODIFY COLUMN `n` tinyint", TS[3], tiny))
    _, names, rows = _table(tmp_path)
    assert [(r["code"], r["n"]) for r in rows] == [("a", None), ("b", 2)]  # 2 fits: only 300 is rescued
    assert json.loads(rows[0]["_rescued_data"]) == {"n": "300"}
    assert json.loads(rows[1]["_rescued_data"]) == {"extra": "42"}
    plain = DeltaReplica(tmp_path / "follow")
    apply_batch(plain, [_row("a", 300, info, TS[1])])
    with pytest.raises(ReplicaError, match="do not convert"):  # follow: the type change is refused
        apply_batch(plain, _ddl("ALTER TABLE `s`.`t_np` MODIFY COLUMN `n` tinyint", TS[3], tiny))


# --------------------------------------------------------------------------- the oracle
def test_oracle_column_mapped_replicas_equal_the_transformed_truth(tmp_path: Path) -> None:
    model = Modelling(mapping=NameMapping.parse(exclude_columns=["sim.*=c_text,c_blob"],
                                                rename_columns=["sim.*.n=amount"],
                                                table_names=["sim.*=bronze.sim_{table}"]),
                      schema_evolution="rescue")
    history = simulate(3, WorkloadConfig(transactions=40))
    plan = FaultPlan(duplicate_rate=0.05, restarts=1, replays=1, garbage=1, crashes=2)
    report = check_history_on_delta(history, "open-protocol", plan=plan, seed=3, modelling=model,
                                    workdir=tmp_path, batches=4)
    assert report.checks > 0
    store = DeltaStore(tmp_path / "warehouse")
    entries = read_progress(store).tables.values()
    assert entries and all(e.path.startswith("bronze/sim_") for e in entries)
    for entry in entries:
        names = store.read(store.root / entry.path).schema.names
        upstream = {c.name for c in entry.info.columns}
        assert not {"c_text", "c_blob", "n"} & set(names) and "_rescued_data" in names
        assert ("amount" in names) == ("n" in upstream)
    assert any(c.name == "n" for e in entries for c in e.info.columns)  # the rename had a column to rename


def test_decisions_stand_when_the_rules_are_dropped_and_add_only_keeps_a_mapped_column(tmp_path: Path) -> None:
    mapped = Modelling(mapping=NameMapping.parse(rename_columns=["s.t_np.n=amount"]), schema_evolution="add-only")
    info = _info()
    apply_batch(DeltaReplica(tmp_path, modelling=mapped), [_row("a", 1, info, TS[1])])
    # Without the rules the replica still names n amount: its column was named so (nothing is silently lost).
    apply_batch(DeltaReplica(tmp_path, modelling=Modelling(schema_evolution="add-only")), [_row("b", 2, info, TS[2])])
    _, names, rows = _table(tmp_path)
    assert "amount" in names and "n" not in names
    assert [(r["code"], r["amount"]) for r in rows] == [("a", 1), ("b", 2)]
    # add-only: the upstream rename of n keeps amount (old values, NULL after) and adds n2.
    renamed = _renamed(info, "n", "n2")
    apply_batch(DeltaReplica(tmp_path, modelling=mapped),
           _ddl("ALTER TABLE `s`.`t_np` RENAME COLUMN `n` TO `n2`", TS[3], renamed), [_row("c", 3, renamed, TS[4])])
    _, names, rows = _table(tmp_path)
    assert [(r["code"], r["amount"], r["n2"]) for r in rows] == [("a", 1, None), ("b", 2, None), ("c", None, 3)]


# --------------------------------------------------------------------------- _source_* columns
@pytest.mark.parametrize("protocol", ["open-protocol", "simple"])
def test_source_columns_name_a_record_carrying_the_change_across_crashes(protocol: str, tmp_path: Path) -> None:
    model = Modelling.parse(metadata_columns="_source_topic,_source_partition,_source_offset,_op", soft_delete=True,
                            keys=["sim.t_uk*=a,b", "sim.t_rowid*=seq"])
    assert model.driver_only == ()  # both engines keep them (tests/spark/test_distributed_modelling.py)
    plan = FaultPlan(duplicate_rate=0.1, restarts=2, replays=2, garbage=2, crashes=4)
    for seed in (1, 2):
        history = simulate(seed, WorkloadConfig(transactions=40))
        # check_history_on_delta decodes the record each row names and wants the row's commit ts in it.
        report = check_history_on_delta(history, protocol, plan=plan, seed=seed, modelling=model,
                                        workdir=tmp_path / f"{seed}", batches=5)
        assert report.crashes and report.checks >= 2
        store = DeltaStore(tmp_path / f"{seed}" / "warehouse")
        entries = read_progress(store).tables.values()
        offsets = [r["_source_offset"] for e in entries for r in store.read(store.root / e.path).to_pylist()]
        assert offsets and None not in offsets and len(set(offsets)) > 1


def test_a_held_row_keeps_its_record_position_in_the_consumer_state() -> None:
    from pyticdc.consumer.state import BufferedRow, TableRegistry, _buffered_from_builtins

    row = _row("a", 1, _info(), TS[1])
    held = BufferedRow(seq=3, row=row, origin=("cdc", 2, 41, 7))
    registry = TableRegistry()
    data = msgspec.msgpack.decode(held.encoded(registry))
    back = _buffered_from_builtins(data, {held.table_ref: _info()})
    assert back.origin == ("cdc", 2, 41, 7) and back.row == row
    # A state written before positions were kept (15 fields) still reads, without one.
    assert _buffered_from_builtins(data[:15], {held.table_ref: _info()}).origin is None


def test_the_source_check_notices_a_wrong_position(tmp_path: Path) -> None:
    import random

    from pyticdc.errors import OracleMismatch
    from pyticdc.model import physical_ms
    from pyticdc.replica.selftest import check_sources
    from pyticdc.sim import inject, produce, with_offsets

    model = Modelling.parse(metadata_columns="_source_topic,_source_partition,_source_offset")
    history = simulate(4, WorkloadConfig(transactions=25))
    check_history_on_delta(history, "canal-json", {"enable-tidb-extension": True}, seed=4, modelling=model,
                           workdir=tmp_path, batches=3)
    fixed = physical_ms(history.final_resolved_ts)
    logs = with_offsets(inject(produce(history, "canal-json", {"enable-tidb-extension": True}, partitions=3,
                                       clock=lambda: fixed), FaultPlan(), random.Random(4)))
    check_sources(tmp_path / "warehouse", logs, "canal-json", {"enable-tidb-extension": True}, "same logs")
    shifted = {where: [*records[1:], records[0]] for where, records in logs.items()}
    with pytest.raises(OracleMismatch, match="carries no change of that ts"):
        check_sources(tmp_path / "warehouse", shifted, "canal-json", {"enable-tidb-extension": True}, "shifted")
