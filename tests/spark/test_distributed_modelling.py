"""The distributed apply with key overrides and ``_source_*`` columns: handles in decode, both engines on Spark."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyticdc.model import ColumnInfo, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.replica.modelling import SOURCE_COLUMNS, Modelling
from pyticdc.replica.projection import DIGEST
from pyticdc.spark.apply.decode import KeyOverrides, change_values, decoded_row

# Canal-JSON names only primary keys: a table whose handle is the unique key (a, b) reaches the consumer without
# one, and its rows would be found by their whole image.
_INFO = TableInfo(schema="sim", table="t_uk1", columns=(
    ColumnInfo(name="a", type_code=int(TypeCode.LONG), nullable=False),
    ColumnInfo(name="b", type_code=int(TypeCode.VARCHAR), nullable=False),
    ColumnInfo(name="c_note", type_code=int(TypeCode.VARCHAR))))


def _change(op: Op, post: dict[str, Any] | None, pre: dict[str, Any] | None, ts: int = 100) -> RowChange:
    return RowChange(op=op, schema="sim", table="t_uk1", commit_ts=ts, table_info=_INFO,
                     columns=None if post is None else Row(post), pre_columns=None if pre is None else Row(pre))


def test_a_key_override_names_the_handles_and_leaves_the_change_identity_alone() -> None:
    key = ("a", "b")
    first = _change(Op.INSERT, {"a": 1, "b": "x", "c_note": "one"}, None)
    second = _change(Op.UPDATE, {"a": 1, "b": "x", "c_note": "two"}, {"a": 1, "b": "x", "c_note": "one"}, ts=101)
    plain = [change_values(first), change_values(second)]
    keyed = [change_values(first, key=key), change_values(second, key=key)]
    # Without the override the rows are their whole image: the update's images are two different rows.
    assert [v["hkind"] for v in plain] == ["image", "image"] and plain[0]["post_h"] != plain[1]["post_h"]
    # With it, one row: the insert's post-image, the update's pre- and post-image name the same handle.
    assert [v["hkind"] for v in keyed] == ["key", "key"]
    assert keyed[0]["post_h"] == keyed[1]["pre_h"] == keyed[1]["post_h"]
    # De-duplication stays the consumer's: the identity comes from what the message names.
    assert [v["ident"] for v in keyed] == [v["ident"] for v in plain]


def test_an_update_pre_image_without_the_key_takes_it_from_the_post_image_and_a_keyless_image_is_marked() -> None:
    key = ("a", "b")
    # only-output-updated-columns: the pre-image holds the changed column only.
    update = change_values(_change(Op.UPDATE, {"a": 1, "b": "x", "c_note": "two"}, {"c_note": "one"}), key=key)
    insert = change_values(_change(Op.INSERT, {"a": 1, "b": "x", "c_note": "one"}, None), key=key)
    assert update["hkind"] == "key" and update["pre_h"] == insert["post_h"]
    # A delete carrying a only cannot be found by (a, b): the segment is refused on the driver, as the driver engine.
    assert change_values(_change(Op.DELETE, None, {"a": 1}), key=key)["hkind"] == "nokey"


def test_overrides_travel_as_data_and_match_like_the_modelling() -> None:
    keys = Modelling.parse(keys=["sim.t_uk*=a,b", "sim.*=c_note"]).keys
    overrides = pickle.loads(pickle.dumps(KeyOverrides(keys)))
    assert overrides.key_for("sim", "t_uk1") == ("a", "b") and overrides.key_for("sim", "t_np") == ("c_note",)
    assert overrides.key_for("other", "t_uk1") is None and KeyOverrides().key_for("sim", "t_uk1") is None
    # A driver-engine state's row keeps its key and the record it was kept from when the engines switch.
    row = decoded_row(_change(Op.INSERT, {"a": 1, "b": "x"}, None), ("a", "b"), ("sim", 2, 41, 0))
    assert (row["topic"], row["partition"], row["offset"], row["hkind"], row["staged"]) == ("sim", 2, 41, "key", True)
    assert decoded_row(_change(Op.INSERT, {"a": 1, "b": "x"}, None))["partition"] == -1


def _tables(warehouse: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    from pyticdc.replica import replica_tables
    from pyticdc.replica.store import DeltaStore

    store = DeltaStore(warehouse)
    out = {}
    for entry in replica_tables(warehouse):
        data = store.read(warehouse / entry["path"]).to_pylist()
        out[(entry["schema"], entry["table"])] = sorted(data, key=repr)
    return out


@pytest.mark.spark
def test_key_overrides_and_source_columns_build_the_replica_the_driver_engine_builds(spark: Any,
                                                                                     tmp_path: Path) -> None:
    from pyticdc.replica import read_progress
    from pyticdc.replica.store import DeltaStore
    from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    model = Modelling.parse(keys=["sim.t_uk*=a,b"], metadata_columns=",".join((*SOURCE_COLUMNS, "_op")))
    assert model.driver_only == ()
    history = simulate(31, WorkloadConfig(transactions=30))
    plan = FaultPlan(garbage=1)  # duplicates, TiCDC restarts with stale watermarks, replayed ranges, garbage
    for engine in ("driver", "distributed"):
        # The oracle checks the truth and decodes the record each row's _source_* columns name (check_sources).
        check_history_on_spark(spark, history, "canal-json", {"enable-tidb-extension": "true"}, plan=plan, seed=31,
                               workdir=tmp_path / engine, batches=3, engine=engine, modelling=model,
                               crash_plan=CrashPlan(crashes=[("after-table-commit", 2)]))
    driver, distributed = tmp_path / "driver" / "warehouse", tmp_path / "distributed" / "warehouse"
    assert read_progress(DeltaStore(distributed)).consistent_ts == read_progress(DeltaStore(driver)).consistent_ts
    tables = _tables(distributed)
    assert tables == _tables(driver)
    uk = [rows for (schema, table), rows in tables.items() if table.startswith("t_uk")]
    # The override found t_uk rows by (a, b): no whole-row digest column, and every row names its record.
    assert uk and all(DIGEST not in row for rows in uk for row in rows)
    assert all(row["_source_topic"] and row["_source_offset"] is not None for rows in tables.values() for row in rows)


def test_the_merge_source_names_the_winning_record_and_null_where_none_is_known() -> None:
    from pyticdc.spark.apply.engines import _project

    base = {"act": "upsert", "marks": None, "ts": 100, "row_id": 0, "op": "insert", "hko": False}
    rows = [{**base, "img": '{"a": "1", "b": "x"}', "src_topic": "sim", "src_partition": 2, "src_offset": 41},
            # A row of a driver-engine state kept without its record: partition -1.
            {**base, "img": '{"a": "2", "b": "y"}', "src_topic": "", "src_partition": -1, "src_offset": -1}]
    table = _project(pa.Table.from_pylist(rows), _INFO, rowid=False, digest=False, time_zone="UTC",
                     modelling=Modelling(metadata_columns=SOURCE_COLUMNS))
    assert table.select(list(SOURCE_COLUMNS)).to_pylist() == [
        {"_source_topic": "sim", "_source_partition": 2, "_source_offset": 41},
        {"_source_topic": None, "_source_partition": None, "_source_offset": None}]
