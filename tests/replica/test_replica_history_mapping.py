"""History tables under column/table mapping and schema evolution modes: they follow the replica's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from replica_units import apply_batch

from pyticdc.cli import main
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.model import ActionType, ColumnInfo, DDLEvent, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica
from pyticdc.replica.mapping import NameMapping
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.selftest import check_history_on_delta
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
from pyticdc.sim.workload import TEMPLATES

pytest.importorskip("deltalake")

TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(12)]
_BASE = TEMPLATES["t_np"]
MAPPING = NameMapping.parse(exclude_columns=["s.*=c_text"], rename_columns=["s.t_np.n=amount"],
                            table_names=["s.*=bronze.s_{table}"])


def _info(columns: tuple[ColumnInfo, ...] = _BASE.columns, table: str = "t_np") -> TableInfo:
    return table_info_with_flags("s", table, 100, 1, columns, _BASE.indexes, _BASE.pk_is_handle)


def _values(code: str, n: int | None, info: TableInfo, **extra: Any) -> Row:
    values: dict[str, Any] = {"code": code.encode(), "n": n, "c_char": b"c", "c_varchar": b"v", "c_tinytext": b"",
                              "c_text": b"secret", "c_mediumtext": b"", "c_longtext": b""}
    names = {c.name for c in info.columns}
    if "n2" in names:
        values["n2"] = values.pop("n")
    return Row({**{k: v for k, v in values.items() if k in names}, **extra})


def _change(op: Op, post: Row | None, pre: Row | None, ts: int, info: TableInfo) -> RowChange:
    return RowChange(op=op, schema="s", table=info.table, commit_ts=ts, columns=post, pre_columns=pre,
                     table_info=info)


def _ddl(query: str, kind: ActionType, ts: int, info: TableInfo, pre: TableInfo) -> DDLEvent:
    return DDLEvent(query=query, ddl_type=int(kind), commit_ts=ts, start_ts=ts - 1, schema="s", table=info.table,
                    table_info=info, pre_table_info=pre)


def _read(warehouse: Path, schema: str, table: str) -> tuple[list[str], list[dict[str, Any]]]:
    store = DeltaStore(warehouse)
    data = store.read(store.table_path(schema, table))
    return data.schema.names, sorted(data.to_pylist(), key=lambda r: (r["code"], r["_valid_from_ts"]))


# --------------------------------------------------------------------------- options
def test_history_combines_with_mapping_and_evolution_modes_and_tracked_columns_are_upstream_names() -> None:
    for mode in ("follow", "add-only", "fail", "rescue"):
        model = Modelling(history=("s.*",), mapping=MAPPING, schema_evolution=mode)
        assert model.history_for("s", "t_np")
    # --history-columns names upstream columns: n (not its replica name amount) ...
    Modelling.parse(history="s.*", history_columns=["s.t_np=n"], mapping=MAPPING).check_table(_info())
    with pytest.raises(ConfigError, match=r"--history-columns for s\.t_np: unknown column\(s\) amount"):
        Modelling.parse(history="s.*", history_columns=["s.t_np=amount"], mapping=MAPPING).check_table(_info())
    # ... and never one the mapping leaves out of the replica (its history could not tell its versions apart).
    with pytest.raises(ConfigError, match=r"--history-columns for s\.t_np: column\(s\) c_text .*left out"):
        Modelling.parse(history="s.*", history_columns=["s.t_np=c_text"], mapping=MAPPING).check_table(_info())


# --------------------------------------------------------------------------- Delta
def test_the_history_is_named_after_the_mapped_table_and_holds_the_mapped_columns(tmp_path: Path) -> None:
    model = Modelling(history=("s.*",), mapping=MAPPING, history_columns=(("s.t_np", ("n",)),))
    info = _info()
    apply_batch(DeltaReplica(tmp_path, modelling=model),
           [_change(Op.INSERT, _values("a", 1, info), None, TS[1], info)],
           [_change(Op.UPDATE, _values("a", 2, info), _values("a", 1, info), TS[2], info)],
           # Only c_varchar changes: tracked by its upstream name n, no new version.
           [_change(Op.UPDATE, Row({**_values("a", 2, info), "c_varchar": b"w"}), _values("a", 2, info), TS[3],
                     info)])
    assert not (tmp_path / "s").exists()
    names, rows = _read(tmp_path, "bronze", "s_t_np__history")
    assert "amount" in names and not {"n", "c_text"} & set(names)
    assert [(r["_valid_from_ts"], r["_valid_to_ts"], r["_op"], r["amount"], r["c_varchar"]) for r in rows] == [
        (TS[1], TS[2], "insert", 1, "v"), (TS[2], None, "update", 2, "w")]
    # Upstream renames column n and the table: the history keeps amount and moves with its replica.
    renamed = _info(tuple(msgspec.structs.replace(c, name="n2") if c.name == "n" else c for c in info.columns))
    moved = _info(renamed.columns, table="t_np2")
    apply_batch(DeltaReplica(tmp_path, modelling=model),
           _ddl("ALTER TABLE `s`.`t_np` RENAME COLUMN `n` TO `n2`", ActionType.MODIFY_COLUMN, TS[4], renamed, info),
           _ddl("RENAME TABLE `s`.`t_np` TO `s`.`t_np2`", ActionType.RENAME_TABLE, TS[5], moved, renamed),
           [_change(Op.UPDATE, _values("a", 3, moved), _values("a", 2, moved), TS[6], moved)])
    assert not (tmp_path / "bronze" / "s_t_np__history").exists()
    names, rows = _read(tmp_path, "bronze", "s_t_np2__history")
    assert "amount" in names and "n2" not in names
    assert [(r["_valid_from_ts"], r["amount"]) for r in rows] == [(TS[1], 1), (TS[2], 2), (TS[6], 3)]


def test_add_only_keeps_a_dropped_column_in_the_history_null_afterwards(tmp_path: Path) -> None:
    model = Modelling(history=("s.*",), schema_evolution="add-only")
    info = _info()
    dropped = _info(tuple(c for c in info.columns if c.name != "c_varchar"))
    replica = DeltaReplica(tmp_path, modelling=model)
    apply_batch(replica, [_change(Op.INSERT, _values("a", 1, info), None, TS[1], info)])
    drop = _ddl("ALTER TABLE `s`.`t_np` DROP COLUMN `c_varchar`", ActionType.DROP_COLUMN, TS[2], dropped, info)
    apply_batch(replica, drop,
           [_change(Op.UPDATE, _values("a", 2, dropped), _values("a", 1, dropped), TS[3], dropped)])
    names, rows = _read(tmp_path, "s", "t_np__history")
    assert "c_varchar" in names
    assert [(r["_valid_from_ts"], r["n"], r["c_varchar"]) for r in rows] == [(TS[1], 1, "v"), (TS[3], 2, None)]


def test_rescue_gives_the_history_a_rescued_data_column(tmp_path: Path) -> None:
    model = Modelling(history=("s.*",), schema_evolution="rescue")
    info = _info()
    wider = _info((*info.columns, ColumnInfo(name="extra", type_code=TypeCode.LONG)))
    replica = DeltaReplica(tmp_path, modelling=model)
    apply_batch(replica, [_change(Op.INSERT, _values("a", 300, info), None, TS[1], info)])
    # A row carrying a column the replica's schema lacks (an upstream change it never saw as DDL).
    apply_batch(replica, [_change(Op.UPDATE, _values("a", 2, wider, extra=42), _values("a", 300, info), TS[2], wider)])
    names, rows = _read(tmp_path, "s", "t_np__history")
    assert "_rescued_data" in names and "extra" not in names
    assert [(r["_valid_from_ts"], r["n"], r["_rescued_data"]) for r in rows] == [
        (TS[1], 300, None), (TS[2], 2, '{"extra":"42"}')]
    # n int -> tinyint: 300 does not fit; in the history too it goes to _rescued_data, the column takes the type.
    tiny = _info(tuple(msgspec.structs.replace(c, type_code=TypeCode.TINY, type_desc="tinyint(4)", flen=4)
                       if c.name == "n" else c for c in info.columns))
    apply_batch(DeltaReplica(tmp_path, modelling=model),
           _ddl("ALTER TABLE `s`.`t_np` MODIFY COLUMN `n` tinyint", ActionType.MODIFY_COLUMN, TS[3], tiny, info))
    _, rows = _read(tmp_path, "s", "t_np__history")
    assert [(r["n"], json.loads(r["_rescued_data"] or "{}")) for r in rows] == [
        (None, {"n": "300"}), (2, {"extra": "42"})]


def test_fail_stops_before_the_ddl_touches_the_replica_or_its_history(tmp_path: Path) -> None:
    model = Modelling(history=("s.*",), schema_evolution="fail", mapping=MAPPING)
    info = _info()
    apply_batch(DeltaReplica(tmp_path, modelling=model), [_change(Op.INSERT, _values("a", 1, info), None, TS[1], info)])
    dropped = _info(tuple(c for c in info.columns if c.name != "c_varchar"))
    replica = DeltaReplica(tmp_path, modelling=model)
    with pytest.raises(ReplicaError, match="drop column c_varchar"):
        apply_batch(replica, _ddl("ALTER TABLE `s`.`t_np` DROP COLUMN `c_varchar`", ActionType.DROP_COLUMN, TS[2],
                             dropped, info))
    names, rows = _read(tmp_path, "bronze", "s_t_np__history")
    assert "c_varchar" in names and len(rows) == 1


# --------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize(("protocol", "options"), [("open-protocol", {}),
                                                   ("canal-json", {"enable-tidb-extension": True})])
def test_mapped_history_tables_equal_the_transformed_version_history_with_faults(
        protocol: str, options: dict[str, Any], tmp_path: Path) -> None:
    model = Modelling.parse(history="sim.*", history_columns=["sim.t_np*=n"],
                            mapping=NameMapping.parse(exclude_columns=["sim.*=c_text,c_blob"],
                                                      rename_columns=["sim.*.n=amount"],
                                                      table_names=["sim.*=bronze.sim_{table}"]),
                            schema_evolution="rescue")
    history = simulate(5, WorkloadConfig(transactions=50, ddl_probability=0.25))
    plan = FaultPlan(duplicate_rate=0.05, restarts=2, replays=2, garbage=2, crashes=3)
    report = check_history_on_delta(history, protocol, options, plan=plan, seed=5, modelling=model,
                                    workdir=tmp_path)
    assert report.checks >= 2 and report.crashes
    histories = sorted(p.name for p in (tmp_path / "warehouse" / "bronze").iterdir() if p.name.endswith("__history"))
    assert histories and all(name.startswith("sim_") for name in histories)
    assert not (tmp_path / "warehouse" / "sim").exists()


def test_selftest_checks_mapped_history_tables(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["selftest", "-p", "canal-json", "--transactions", "25", "--faults", "all", "--history", "sim.*",
                   "--exclude-columns", "sim.*=c_text", "--rename-column", "sim.*.n=amount",
                   "--table-name", "sim.*=bronze.sim_{table}", "--schema-evolution", "rescue"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "history sim.* as {table}__history" in out and "schema evolution rescue" in out


def test_the_history_oracle_maps_the_truth_and_notices_an_unmapped_history(tmp_path: Path) -> None:
    from pyticdc.replica.history import compare_history
    from pyticdc.sim.history import history_at

    def model(*renames: str) -> Modelling:
        return Modelling(history=("sim.*",), mapping=NameMapping.parse(
            exclude_columns=["sim.*=c_text"], rename_columns=list(renames), table_names=["sim.*=bronze.{table}"]))

    mapped = model("sim.*.n=amount")
    history = simulate(2, WorkloadConfig(transactions=30))
    check_history_on_delta(history, "open-protocol", plan=FaultPlan(crashes=0, garbage=0), seed=2, modelling=mapped,
                           workdir=tmp_path)
    warehouse = tmp_path / "warehouse"
    truth = history_at(history, history.final_resolved_ts, history_for=mapped.history_for)
    assert compare_history(warehouse, truth.tables, mapped, dropped=truth.dropped) is None
    # The truth under other rules (n not renamed) is not what the history holds.
    assert "are not the replica's" in (compare_history(warehouse, truth.tables, model()) or "")
    # The history is found beside its replica table (bronze), and holds no left-out column.
    assert "c_text" not in (compare_history(warehouse, truth.tables, model()) or "c_text").split("are not")[0]
    assert "c_text" in (compare_history(warehouse, truth.tables, Modelling(history=("sim.*",))) or "")


def test_a_whole_image_history_ignores_a_change_of_a_left_out_column(tmp_path: Path) -> None:
    # A table without key whose messages carry no row id: its rows (and versions) are told by their mapped image.
    template = TEMPLATES["t_rowid"]
    info = table_info_with_flags("s", "t_rowid", 100, 1, template.columns, template.indexes, False)

    def row(seq: int, v: float) -> Row:
        return Row({"seq": seq, "c_varchar": b"x", "v": v, "j": "{}", "d": "1.000"})

    def change(op: Op, post: Row | None, pre: Row | None, ts: int) -> RowChange:
        return RowChange(op=op, schema="s", table="t_rowid", commit_ts=ts, columns=post, pre_columns=pre,
                         table_info=info)

    model = Modelling(history=("s.*",), mapping=NameMapping.parse(exclude_columns=["s.t_rowid=v"]))
    replica = DeltaReplica(tmp_path, modelling=model)
    apply_batch(replica, [change(Op.INSERT, row(1, 1.0), None, TS[1])])
    apply_batch(replica, [change(Op.UPDATE, row(1, 2.0), row(1, 1.0), TS[2])],
           [change(Op.UPDATE, Row({**row(1, 2.0), "c_varchar": b"y"}), row(1, 2.0), TS[3])])
    store = DeltaStore(tmp_path)
    rows = store.read(store.table_path("s", "t_rowid__history")).to_pylist()
    assert "v" not in rows[0]
    assert sorted((r["c_varchar"], r["_valid_from_ts"], r["_valid_to_ts"]) for r in rows) == [
        ("x", TS[1], TS[3]), ("y", TS[3], None)]


def test_replicate_refuses_tracking_a_left_out_column_before_any_work(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    info = _info()
    apply_batch(DeltaReplica(tmp_path / "wh"), [_change(Op.INSERT, _values("a", 1, info), None, TS[1], info)])
    capture = tmp_path / "none.jsonl"
    capture.write_text("")
    before = sorted(p.name for p in (tmp_path / "wh" / "s").iterdir())
    code = main(["replicate", "--from", str(capture), "-p", "craft", "--to", str(tmp_path / "wh"),
                 "--history", "s.*", "--history-columns", "s.t_np=n,c_text", "--exclude-columns", "s.*=c_text"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--history-columns for s.t_np: column(s) c_text are left out" in err[0]
    assert sorted(p.name for p in (tmp_path / "wh" / "s").iterdir()) == before  # nothing written
