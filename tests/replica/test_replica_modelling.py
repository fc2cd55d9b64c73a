"""Replica modelling: metadata columns, soft deletes, key overrides, partial images, TRUNCATE handling."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pytest
from replica_units import apply_batch

from pyticdc.cli import main
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.model import ActionType, DDLEvent, Op, Row, RowChange, TableInfo, physical_ms
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica, net_change
from pyticdc.replica.check import check_modelling
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.progress import read_progress
from pyticdc.replica.projection import DIGEST
from pyticdc.replica.selftest import check_history_on_delta
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
from pyticdc.sim.workload import TEMPLATES

pytest.importorskip("deltalake")

FAULTS = FaultPlan(duplicate_rate=0.05, restarts=2, replays=2, garbage=2, crashes=3)
#: TSOs whose physical part is a known instant (ms since the epoch << 18).
TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(10)]


def _info(name: str) -> TableInfo:
    template = TEMPLATES[name]
    return table_info_with_flags("s", name, 100, 1, template.columns, template.indexes, template.pk_is_handle)


def _change(op: Op, post: dict[str, Any] | None, pre: dict[str, Any] | None, ts: int, name: str = "t_np",
            **kw: Any) -> RowChange:
    info = kw.pop("info", None) or _info(name)
    return RowChange(op=op, schema="s", table=name, commit_ts=ts, columns=None if post is None else Row(post),
                     pre_columns=None if pre is None else Row(pre), table_info=info, **kw)


def _np(code: str, n: int | None, text: str | None = "x") -> dict[str, Any]:
    return {"code": code.encode(), "n": n, "c_char": b"c", "c_varchar": None if text is None else text.encode(),
            "c_tinytext": b"", "c_text": b"", "c_mediumtext": b"", "c_longtext": b""}


def _rows(warehouse: Path, table: str = "t_np") -> list[dict[str, Any]]:
    store = DeltaStore(warehouse)
    entry = read_progress(store).tables[("s", table)]
    return sorted(store.read(store.root / entry.path).to_pylist(), key=lambda r: repr(r.get("code") or r.get("seq")))


# --------------------------------------------------------------------------- options
def test_options_are_validated_before_any_work() -> None:
    with pytest.raises(ConfigError, match="unknown metadata column '_nope'"):
        Modelling.parse(metadata_columns="_op,_nope")
    # Both engines keep record positions per row and key overrides (tests/spark/test_distributed_modelling.py).
    assert Modelling.parse(metadata_columns="_source_offset", keys=["s.t=a"]).driver_only == ()
    with pytest.raises(ConfigError, match=r"expected SCHEMA\.TABLE=COLUMN"):
        Modelling.parse(keys=["shop.orders"])
    with pytest.raises(ConfigError, match=r"table-key shop\.\[: "):
        Modelling.parse(keys=["shop.[=a"])
    with pytest.raises(ConfigError, match="named twice"):
        Modelling.parse(keys=["shop.orders=a,a"])
    with pytest.raises(ConfigError, match="on_truncate"):
        Modelling(on_truncate="sometimes")
    model = Modelling.parse(keys=["shop.order*=order_no,line", "shop.*=id"], metadata_columns="_commit_ts,_op")
    assert model.key_for("shop", "orders") == ("order_no", "line")  # first match wins
    assert model.key_for("shop", "users") == ("id",) and model.key_for("bi", "x") is None
    assert model.row_columns == ("_commit_time", "_op")  # _commit_ts is always there, and _commit_time
    # Named or not, _commit_time is there; named, it keeps its place (warehouses from when it was opt-in).
    assert Modelling().row_columns == ("_commit_time",)
    assert Modelling.parse(metadata_columns="_op,_commit_time").row_columns == ("_op", "_commit_time")
    with pytest.raises(ConfigError, match=r"unknown column\(s\) order_no, line"):
        model.check_table(msgspec.structs.replace(_info("t_np"), schema="shop", table="orders"))


def test_cli_refuses_bad_modelling_options_with_one_line_and_exit_2(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "none.jsonl"
    capture.write_text("")
    base = ["replicate", "--from", str(capture), "-p", "craft", "--to", str(tmp_path / "wh")]
    for extra, words in ((["--table-key", "s.[=a"], "table-key"), (["--metadata-columns", "_x"], "_x")):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "wh").exists()


# --------------------------------------------------------------------------- soft deletes, metadata
def test_soft_delete_keeps_the_last_image_and_a_reinsert_revives_it(tmp_path: Path) -> None:
    model = Modelling.parse(soft_delete=True, metadata_columns="_op,_commit_time,_ingested_at")
    replica = DeltaReplica(tmp_path, modelling=model)
    apply_batch(replica, [_change(Op.INSERT, _np("a", 1), None, TS[1]), _change(Op.INSERT, _np("b", 2), None, TS[1])])
    # b is updated then deleted in one segment; c inserted and deleted in one segment (never seen live).
    apply_batch(replica, [_change(Op.DELETE, None, _np("a", 1), TS[2]),
                     _change(Op.UPDATE, _np("b", 3), _np("b", 2), TS[2]), _change(Op.DELETE, None, _np("b", 3), TS[3]),
                     _change(Op.INSERT, _np("c", 4), None, TS[3]), _change(Op.DELETE, None, _np("c", 4), TS[3])])
    rows = _rows(tmp_path)
    assert [(r["code"], r["n"], r["_is_deleted"], r["_op"]) for r in rows] == [
        ("a", 1, True, "delete"), ("b", 3, True, "delete"), ("c", 4, True, "delete")]
    assert rows[0]["_commit_time"] == dt.datetime.fromtimestamp(physical_ms(TS[2]) / 1000, dt.timezone.utc)
    assert all(r["_ingested_at"] is not None for r in rows)
    apply_batch(replica, [_change(Op.INSERT, _np("a", 9), None, TS[4])])
    rows = _rows(tmp_path)
    assert (rows[0]["code"], rows[0]["n"], rows[0]["_is_deleted"], rows[0]["_op"]) == ("a", 9, False, "insert")
    assert check_modelling(tmp_path, model) is None


def test_commit_time_is_always_there_and_older_tables_get_it_on_their_next_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A warehouse written when _commit_time was opt-in: the table has only _commit_ts.
    with monkeypatch.context() as old:
        old.setattr(Modelling, "row_columns", property(lambda self: ()))
        apply_batch(DeltaReplica(tmp_path), [_change(Op.INSERT, _np("a", 1), None, TS[1])])
    assert "_commit_time" not in _rows(tmp_path)[0]
    apply_batch(DeltaReplica(tmp_path), [_change(Op.INSERT, _np("b", 2), None, TS[3])])
    rows = _rows(tmp_path)
    assert [(r["code"], r["_commit_time"]) for r in rows] == [
        ("a", dt.datetime(2023, 11, 14, 22, 13, 21, tzinfo=dt.timezone.utc)),  # from its _commit_ts
        ("b", dt.datetime(2023, 11, 14, 22, 13, 23, tzinfo=dt.timezone.utc))]
    assert check_modelling(tmp_path, Modelling()) is None


def test_check_modelling_catches_a_key_both_deleted_and_live(tmp_path: Path) -> None:
    model = Modelling.parse(soft_delete=True)
    replica = DeltaReplica(tmp_path, modelling=model)
    apply_batch(replica, [_change(Op.INSERT, _np("a", 1), None, TS[1])], [_change(Op.DELETE, None, _np("a", 1), TS[2])])
    store = DeltaStore(tmp_path)
    path = store.root / read_progress(store).tables[("s", "t_np")].path
    ghost = store.read(path).to_pylist()[0] | {"_is_deleted": False}
    store.append(path, pa.Table.from_pylist([ghost], schema=store.schema(path)), position=2 * TS[2])
    assert "both soft-deleted and live" in (check_modelling(tmp_path, model) or "")


# --------------------------------------------------------------------------- partial images
def test_a_handle_key_only_update_never_nulls_the_columns_it_did_not_send(tmp_path: Path) -> None:
    replica = DeltaReplica(tmp_path)
    apply_batch(replica, [_change(Op.INSERT, _np("a", 1, "kept"), None, TS[1])])
    only_key = _change(Op.UPDATE, {"code": b"a"}, {"code": b"a"}, TS[2], handle_key_only=True)
    apply_batch(replica, [only_key])
    (row,) = _rows(tmp_path)
    assert (row["code"], row["n"], row["c_varchar"], row["_commit_ts"]) == ("a", 1, "kept", TS[2])
    assert replica.stats.partial_images == 1
    # An explicit NULL is a value, not a missing column: it is written.
    apply_batch(replica, [_change(Op.UPDATE, _np("a", 5, None), _np("a", 1, "kept"), TS[3])])
    (row,) = _rows(tmp_path)
    assert (row["n"], row["c_varchar"]) == (5, None)


def test_a_partial_image_completes_the_one_its_segment_has() -> None:
    info = _info("t_np")
    rows = [_change(Op.INSERT, _np("a", 1, "full"), None, TS[1]),
            _change(Op.UPDATE, {"code": b"a", "n": 2}, {"code": b"a", "n": 1}, TS[2], handle_key_only=True)]
    net = net_change(rows, columns=[c.name for c in info.columns])
    assert not net.partial and dict(net.upserts[0].columns or {}) == {**_np("a", 2, "full")}
    # only-output-updated-columns: the pre-image lacks the unchanged key; it is taken from the post-image.
    moved = _change(Op.UPDATE, _np("a", 3), {"n": 2}, TS[3])
    net = net_change([moved], columns=[c.name for c in info.columns])
    assert net.strategy == "key" and not net.deletes and net.upsert_ops == ["update"]


def test_a_partial_delete_of_a_table_found_by_its_image_asks_for_a_key() -> None:
    info = msgspec.structs.replace(_info("t_rowid"), indexes=())
    image = {"seq": 1, "c_varchar": b"x", "v": 1.0, "j": "{}", "d": "1.000"}
    rows = [_change(Op.INSERT, image, None, TS[1], name="t_rowid", info=info),
            _change(Op.DELETE, None, {"seq": 1}, TS[2], name="t_rowid", info=info)]
    with pytest.raises(ReplicaError, match=r"table-key 's\.t_rowid=COLUMN"):
        net_change(rows, columns=list(image))
    net = net_change(rows, key=("seq",), columns=list(image))
    assert net.strategy == "key" and [dict(d.pre_columns or {}) for d in net.deletes] == [image]


# --------------------------------------------------------------------------- keys
def test_a_key_override_replaces_the_row_digest(tmp_path: Path) -> None:
    info = msgspec.structs.replace(_info("t_rowid"), indexes=())
    image = {"seq": 1, "c_varchar": b"x", "v": 1.0, "j": "{}", "d": "1.000"}
    rows = [[_change(Op.INSERT, image, None, TS[1], name="t_rowid", info=info)],
            [_change(Op.UPDATE, image | {"v": 2.0}, image, TS[2], name="t_rowid", info=info)]]
    plain = DeltaReplica(tmp_path / "plain")
    apply_batch(plain, *rows)
    assert DIGEST in _rows(tmp_path / "plain", "t_rowid")[0]
    keyed = DeltaReplica(tmp_path / "keyed", modelling=Modelling.parse(keys=["s.t_rowid=seq"]))
    apply_batch(keyed, *rows)
    (row,) = _rows(tmp_path / "keyed", "t_rowid")
    assert DIGEST not in row and row["v"] == 2.0
    assert read_progress(DeltaStore(tmp_path / "keyed")).tables[("s", "t_rowid")].key_columns == ("seq",)
    with pytest.raises(ConfigError, match=r"unknown column\(s\) nope"):
        apply_batch(DeltaReplica(tmp_path / "bad", modelling=Modelling.parse(keys=["s.*=nope"])), *rows)


# --------------------------------------------------------------------------- TRUNCATE
@pytest.mark.parametrize("mode", ["apply", "ignore"])
def test_on_truncate(tmp_path: Path, mode: str) -> None:
    replica = DeltaReplica(tmp_path, modelling=Modelling(on_truncate=mode))
    truncate = DDLEvent(query="TRUNCATE TABLE `s`.`t_np`", ddl_type=int(ActionType.TRUNCATE_TABLE), commit_ts=TS[3],
                        schema="s", table="t_np", table_info=_info("t_np"))
    apply_batch(replica, [_change(Op.INSERT, _np("a", 1), None, TS[1])], [_change(Op.INSERT, _np("b", 2), None, TS[2])],
           truncate, [_change(Op.INSERT, _np("c", 3), None, TS[4])])
    codes = [r["code"] for r in _rows(tmp_path)]
    assert codes == (["a", "b", "c"] if mode == "ignore" else ["c"])
    assert replica.stats.truncates_ignored == (mode == "ignore")


# --------------------------------------------------------------------------- the oracle
@pytest.mark.parametrize(("protocol", "options", "tables"), [
    ("canal-json", {"enable-tidb-extension": True}, tuple(TEMPLATES)),
    ("canal-json", {"enable-tidb-extension": True, "delete-only-output-handle-key-columns": True,
                    "only-output-updated-columns": True}, tuple(n for n in TEMPLATES if n != "t_rowid")),
    ("open-protocol", {"only-output-updated-columns": True, "delete-only-output-handle-key-columns": True},
     tuple(n for n in TEMPLATES if n != "t_rowid")),
    ("simple", {}, tuple(TEMPLATES)),
])
def test_oracle_soft_deleted_key_overridden_replicas_equal_the_transformed_truth(
        protocol: str, options: dict[str, Any], tables: tuple[str, ...]) -> None:
    model = Modelling.parse(soft_delete=True, metadata_columns="_op,_commit_time,_ingested_at",
                            keys=["sim.t_uk*=a,b", "sim.t_rowid*=seq"])
    for seed in (1, 2):
        history = simulate(seed, WorkloadConfig(transactions=50, tables=tables))
        report = check_history_on_delta(history, protocol, options, plan=FAULTS, seed=seed, modelling=model)
        assert report.crashes and report.checks >= 2 and report.quarantined == FAULTS.garbage


def test_the_modelling_check_notices_a_replica_not_modelled_as_asked(tmp_path: Path) -> None:
    history = simulate(3, WorkloadConfig(transactions=30))
    check_history_on_delta(history, "canal-json", {"enable-tidb-extension": True}, plan=FaultPlan(crashes=0), seed=3,
                           workdir=tmp_path)
    warehouse = tmp_path / "warehouse"
    assert check_modelling(warehouse, Modelling()) is None
    assert "metadata columns ['_is_deleted'] missing" in (check_modelling(warehouse, Modelling(soft_delete=True)) or "")
    # Canal-JSON names no key for t_uk (no primary key): without --table-key it is found by its digest.
    assert "--table-key a,b not used" in (check_modelling(warehouse, Modelling.parse(keys=["sim.t_uk=a,b"])) or "")


def test_turning_soft_deletes_off_deletes_the_rows_kept_as_deleted(tmp_path: Path) -> None:
    apply_batch(DeltaReplica(tmp_path, modelling=Modelling(soft_delete=True)),
           [_change(Op.INSERT, _np("a", 1), None, TS[1]), _change(Op.INSERT, _np("b", 2), None, TS[1])],
           [_change(Op.DELETE, None, _np("a", 1), TS[2])])
    assert [(r["code"], r["_is_deleted"]) for r in _rows(tmp_path)] == [("a", True), ("b", False)]
    apply_batch(DeltaReplica(tmp_path), [_change(Op.UPDATE, _np("b", 3), _np("b", 2), TS[3])])
    assert [(r["code"], r["n"], "_is_deleted" in r) for r in _rows(tmp_path)] == [("b", 3, False)]


def test_replicate_refuses_a_table_key_column_an_existing_table_lacks(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    apply_batch(DeltaReplica(tmp_path / "wh"), [_change(Op.INSERT, _np("a", 1), None, TS[1])])
    capture = tmp_path / "none.jsonl"
    capture.write_text("")
    code = main(["replicate", "--from", str(capture), "-p", "craft", "--to", str(tmp_path / "wh"),
                 "--table-key", "s.t_np=code,nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "unknown column(s) nope" in err[0]
