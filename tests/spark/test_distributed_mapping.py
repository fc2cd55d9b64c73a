"""Column/table mapping and schema-evolution modes on the distributed engine's executor half (no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from pyticdc.arrow.rows import row_images
from pyticdc.consumer import ApplyUnit
from pyticdc.errors import ReplicaError
from pyticdc.model import ActionType, ColumnInfo, DDLEvent, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica
from pyticdc.replica.mapping import NameMapping
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.store import DeltaStore, rows_position
from pyticdc.sim.workload import TEMPLATES
from pyticdc.spark.apply.engines import SegmentReplica, apply_segment

pytest.importorskip("deltalake")

TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(8)]
_BASE = TEMPLATES["t_np"]
_COLOR = ColumnInfo(name="color", type_code=TypeCode.VARCHAR)


def _info(extra: tuple[ColumnInfo, ...] = ()) -> TableInfo:
    return table_info_with_flags("s", "t_np", 100, 1, (*_BASE.columns, *extra), _BASE.indexes, _BASE.pk_is_handle)


def _change(code: str, n: int, ts: int, info: TableInfo, **extra: Any) -> RowChange:
    values: dict[str, Any] = {"code": code.encode(), "n": n, "c_char": b"c", "c_varchar": b"v", "c_tinytext": b"",
                              "c_text": b"secret", "c_mediumtext": b"", "c_longtext": b"", **extra}
    names = {c.name for c in info.columns}
    return RowChange(op=Op.INSERT, schema="s", table="t_np", commit_ts=ts,
                     columns=Row({k: v for k, v in values.items() if k in names}), table_info=info)


def _action(change: RowChange) -> dict[str, Any]:
    # A reduced row as the batch's net change hands it to the executors (one fresh upsert per handle).
    post, _pre, encoded = row_images(change)
    assert post is not None
    return {"tkey": "s\x00t_np", "ts": change.commit_ts, "act": "upsert", "op": "insert", "hko": False,
            "row_id": None, "img": orjson.dumps(dict(zip(post[0], post[1]))).decode(),
            "marks": orjson.dumps(encoded).decode() if encoded else None, "fresh": 1, "stale": 0, "net": 1}


def _segment(replica: SegmentReplica, changes: list[RowChange]) -> None:
    infos = [c.table_info for c in changes if c.table_info is not None]
    task = replica.prepare(("s", "t_np"), infos, changes[0].commit_ts, False, "key", ("code",),
                           rows_position(changes[-1].commit_ts), len(changes))
    assert task is not None
    result = apply_segment(pa.Table.from_pylist([_action(c) for c in changes]), task, replica.store)
    replica.finish(("s", "t_np"), task, result, "key", ("code",))


def _rows(warehouse: Path, path: str) -> list[dict[str, Any]]:
    data = DeltaStore(warehouse).read(warehouse / path).to_pylist()
    return sorted(({k: v for k, v in row.items() if k != "_ingested_at"} for row in data), key=repr)


@pytest.mark.parametrize("mode", ["rescue", "follow"])
def test_the_executor_half_writes_the_mapped_table_the_driver_engine_writes(tmp_path: Path, mode: str) -> None:
    mapping = NameMapping.parse(exclude_columns=["s.*=c_text"], rename_columns=["s.*.n=amount"],
                                table_names=["s.*=bronze.s_{table}"])
    modelling = Modelling(mapping=mapping, schema_evolution=mode)
    first = [_change("a", 1, TS[1], _info())]
    # A column the table's schema lacks (met mid-stream): rescued with rescue, learnt with follow.
    second = [_change("b", 2, TS[2], _info((_COLOR,)), color=b"red")]
    segments = SegmentReplica(tmp_path / "dist", modelling=modelling)
    _segment(segments, first)
    _segment(segments, second)
    segments.commit(b"")
    driver = DeltaReplica(tmp_path / "driver", modelling=modelling)
    driver.apply(ApplyUnit(kind="rows", rows=tuple(first), consistent_ts=TS[1]))
    driver.commit(b"")
    driver.apply(ApplyUnit(kind="rows", rows=tuple(second), consistent_ts=TS[2]))
    driver.commit(b"")
    distributed = _rows(tmp_path / "dist", "bronze/s_t_np")
    assert distributed == _rows(tmp_path / "driver", "bronze/s_t_np")
    assert not (tmp_path / "dist" / "s").exists()
    assert [(r["code"], r["amount"]) for r in distributed] == [("a", 1), ("b", 2)]
    assert all("c_text" not in r and "n" not in r for r in distributed)
    if mode == "rescue":
        # The column's type code without a charset is a binary string: its text rescued as base64 ("red").
        assert [r["_rescued_data"] for r in distributed] == [None, '{"color":"cmVk"}']
        assert all("color" not in r for r in distributed)
    else:
        assert [r["color"] for r in distributed] == [None, b"red"]
    entry = segments.tables[("s", "t_np")]
    assert entry.path == "bronze/s_t_np" and entry.names["n"] == "amount" and entry.names["c_text"] == ""


def test_add_only_keeps_a_dropped_column_on_the_executor_half_as_the_driver_engine_does(tmp_path: Path) -> None:
    modelling = Modelling(mapping=NameMapping.parse(rename_columns=["s.*.n=amount"]), schema_evolution="add-only")
    dropped = table_info_with_flags("s", "t_np", 100, 2, tuple(c for c in _BASE.columns if c.name != "c_varchar"),
                                    _BASE.indexes, _BASE.pk_is_handle)
    ddl = DDLEvent(query="ALTER TABLE `s`.`t_np` DROP COLUMN `c_varchar`", ddl_type=int(ActionType.DROP_COLUMN),
                   commit_ts=TS[2], schema="s", table="t_np", table_info=dropped)
    first = [_change("a", 1, TS[1], _info())]
    second = [_change("b", 2, TS[3], dropped)]
    segments = SegmentReplica(tmp_path / "dist", modelling=modelling)
    _segment(segments, first)
    segments.apply(ApplyUnit(kind="ddl", ddl=ddl, consistent_ts=TS[2]))
    _segment(segments, second)
    segments.commit(b"")
    driver = DeltaReplica(tmp_path / "driver", modelling=modelling)
    driver.apply_all([ApplyUnit(kind="rows", rows=tuple(first), consistent_ts=TS[1]),
                      ApplyUnit(kind="ddl", ddl=ddl, consistent_ts=TS[2]),
                      ApplyUnit(kind="rows", rows=tuple(second), consistent_ts=TS[3])])
    driver.commit(b"")
    distributed = _rows(tmp_path / "dist", "s/t_np")
    assert distributed == _rows(tmp_path / "driver", "s/t_np")
    # The dropped column stays with the values written before the drop, NULL after it.
    assert [(r["code"], r["amount"], r["c_varchar"]) for r in distributed] == [("a", 1, "v"), ("b", 2, None)]
    assert [c.name for c in segments.tables[("s", "t_np")].kept] == ["c_varchar"]


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["rescue", "add-only"])
def test_distributed_engine_builds_the_mapped_replica_the_driver_engine_builds(spark: Any, tmp_path: Path,
                                                                               mode: str) -> None:
    from pyticdc.replica import read_progress, replica_tables
    from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    mapping = NameMapping.parse(exclude_columns=["sim.*=c_text"], rename_columns=["sim.*.n=amount"],
                                table_names=["sim.*=bronze.sim_{table}"])
    modelling = Modelling(mapping=mapping, schema_evolution=mode)
    history = simulate(31, WorkloadConfig(transactions=30))
    tables: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for engine in ("driver", "distributed"):
        check_history_on_spark(spark, history, "open-protocol", plan=FaultPlan(garbage=1), seed=31,
                               workdir=tmp_path / engine, batches=3, engine=engine, modelling=modelling,
                               crash_plan=CrashPlan(crashes=[("after-table-commit", 2)]))
        warehouse = tmp_path / engine / "warehouse"
        paths = [Path(entry["path"]).relative_to(warehouse).as_posix() for entry in replica_tables(warehouse)]
        tables[engine] = {path: _rows(warehouse, path) for path in paths}
        assert paths and all(path.startswith("bronze/sim_") for path in paths)
    assert tables["distributed"] == tables["driver"]
    rows = [row for table in tables["distributed"].values() for row in table]
    assert rows and not any("c_text" in row for row in rows)
    assert tables["distributed"]["bronze/sim_t_np"] and all("amount" in row and "n" not in row
                                                            for row in tables["distributed"]["bronze/sim_t_np"])
    assert read_progress(DeltaStore(tmp_path / "distributed" / "warehouse")).tables.keys() == \
        read_progress(DeltaStore(tmp_path / "driver" / "warehouse")).tables.keys()


def test_images_that_differ_only_in_a_left_out_column_are_one_replica_row() -> None:
    from pyticdc.spark.apply.engines import _fold_images

    def action(ts: int, net: int, secret: str) -> dict[str, Any]:
        return {"ts": ts, "net": net, "act": "upsert" if net > 0 else "delete",
                "img": orjson.dumps({"a": "1", "secret": secret}).decode()}

    # An update of the left-out column only: the old image's delete and the new one's insert cancel out.
    assert _fold_images([action(TS[1], -1, "x"), action(TS[1], 1, "y")], {"secret": ""}) == []
    # Two rows equal but for it (a table without handle), one deleted: one copy stays, the newest insert's.
    folded = _fold_images([action(TS[1], 1, "x"), action(TS[2], 1, "y"), action(TS[3], -1, "x")],
                          {"secret": "", "a": "a"})
    assert [(row["net"], row["act"], row["ts"]) for row in folded] == [(1, "upsert", TS[2])]
    assert _fold_images([action(TS[1], 1, "x")], {}) == [action(TS[1], 1, "x")]  # nothing left out: as is


def test_a_segment_skips_the_handles_its_table_holds_and_refuses_an_upsert_of_only_a_handle_key(
        tmp_path: Path) -> None:
    replica = SegmentReplica(tmp_path / "w")
    _segment(replica, [_change("a", 1, TS[1], _info())])
    replica.commit(b"")
    later = [_change("a", 9, TS[1], _info()), _change("b", 2, TS[2], _info()), _change("c", 3, TS[3], _info())]
    task = replica.prepare(("s", "t_np"), [_info()], TS[1], False, "key", ("code",), rows_position(TS[3]), 3)
    assert task is not None and task.held == rows_position(TS[1])
    actions = [_action(c) for c in later]
    actions[0] = {**actions[0], "fresh": 0, "stale": 1}  # at the held position: a replay, left as it is
    result = apply_segment(pa.Table.from_pylist(actions), task, replica.store)
    assert (result["applied"], result["skipped"], result["actions"], result["last_ts"]) == (2, 1, 2, TS[3])
    replica.finish(("s", "t_np"), task, result, "key", ("code",))
    replica.commit(b"")
    assert [(r["code"], r["n"]) for r in _rows(tmp_path / "w", "s/t_np")] == [("a", 1), ("b", 2), ("c", 3)]
    # An upsert that carries only its handle key cannot be replicated: refused with its commit ts; a delete can.
    task = replica.prepare(("s", "t_np"), [_info()], TS[4], False, "key", ("code",), rows_position(TS[5]), 2)
    assert task is not None
    only_key = [{**_action(_change("d", 4, TS[4], _info())), "hko": True, "act": "delete", "op": "delete"},
                {**_action(_change("e", 5, TS[5], _info())), "hko": True}]
    with pytest.raises(ReplicaError, match=rf"s\.t_np@{TS[5]}: a change carries only its handle key"):
        apply_segment(pa.Table.from_pylist(only_key), task, replica.store)
    assert apply_segment(pa.Table.from_pylist(only_key[:1]), task, replica.store)["merged"]
