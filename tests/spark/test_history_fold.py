"""The executor half of history tables on the distributed engine (pure: delta-rs only, no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyticdc.arrow.rows import table_info_json
from pyticdc.consumer import ApplyUnit
from pyticdc.model import Op, Row, RowChange, TableInfo
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica
from pyticdc.replica.history import history_schema
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.store import DeltaStore, rows_position
from pyticdc.sim.workload import TEMPLATES
from pyticdc.spark.apply.decode import change_values
from pyticdc.spark.apply.history import HistoryTask, apply_history

pytest.importorskip("deltalake")

TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(8)]


def _info() -> TableInfo:
    template = TEMPLATES["t_np"]
    return table_info_with_flags("s", "t_np", 100, 1, template.columns, template.indexes, template.pk_is_handle)


def _np(code: str, n: int | None, text: str = "x") -> dict[str, Any]:
    return {"code": code.encode(), "n": n, "c_char": b"c", "c_varchar": text.encode(), "c_tinytext": b"",
            "c_text": b"", "c_mediumtext": b"", "c_longtext": b""}


def _change(op: Op, post: dict[str, Any] | None, pre: dict[str, Any] | None, ts: int) -> RowChange:
    return RowChange(op=op, schema="s", table="t_np", commit_ts=ts, columns=None if post is None else Row(post),
                     pre_columns=None if pre is None else Row(pre), table_info=_info())


CHANGES = [
    _change(Op.INSERT, _np("a", 1), None, TS[1]),
    _change(Op.INSERT, _np("b", 1), None, TS[1]),
    # Two updates of one key in one transaction: one version.
    _change(Op.UPDATE, _np("a", 2), _np("a", 1), TS[2]),
    _change(Op.UPDATE, _np("a", 3), _np("a", 2), TS[2]),
    _change(Op.DELETE, None, _np("b", 1), TS[3]),
    _change(Op.UPDATE, _np("a", 4, "y"), _np("a", 3), TS[4]),
    _change(Op.INSERT, _np("b", 5), None, TS[5]),
]


def _versions(store: DeltaStore, path: Any) -> list[tuple[Any, ...]]:
    rows = store.read(path).to_pylist()
    return sorted((r["code"], r["n"], r["c_varchar"], r["_valid_from_ts"], r["_valid_to_ts"], r["_is_current"],
                   r["_op"], r["_valid_from"], r["_valid_to"]) for r in rows)


def test_the_executor_fold_writes_the_versions_the_driver_engine_writes_and_each_once(tmp_path: Path) -> None:
    driver = DeltaReplica(tmp_path / "driver", modelling=Modelling(history=("s.*",)))
    for ts in sorted({c.commit_ts for c in CHANGES}):
        driver.apply(ApplyUnit(kind="rows", rows=tuple(c for c in CHANGES if c.commit_ts == ts), consistent_ts=ts))
    driver.commit(b"")
    reference = DeltaStore(tmp_path / "driver")
    expected = _versions(reference, reference.table_path("s", "t_np__history"))
    # a=1 1..2, a=3 2..4 (its state n=2 within ts 2 is no version), a=4 4.., b=1 1..3, b=5 5..
    assert [(v[0], v[1]) for v in expected] == [("a", 1), ("a", 3), ("a", 4), ("b", 1), ("b", 5)]

    store = DeltaStore(tmp_path / "dist")
    path = store.table_path("s", "t_np__history")
    store.create(path, history_schema(_info(), rowid=False).empty_table(), uid="u#history",
                 position=rows_position(TS[1]) - 1, name="s.t_np__history")
    # Out of order: the executor orders by (ts, rank, pre- before post-image, staged first, offset).
    rows = [{**change_values(c), "staged": False, "offset": i, "idx": 0} for i, c in enumerate(CHANGES)][::-1]

    def task(held: int, position: int) -> HistoryTask:
        return HistoryTask(path=str(path), info=table_info_json(_info()), held=held, position=position,
                           strategy="key", key_columns=("code",), rowid=False, digest=False, tracked=None, names=(),
                           kept=(), rescue=False, time_zone="UTC", app_id=store.app_id, storage_options=None)

    # Two levels, the second first attempted (a crash before the driver's commit) then redone.
    first = [r for r in rows if r["ts"] <= TS[2]]
    assert apply_history(first, task(store.position(path), rows_position(TS[2])), store) == 3  # a=1 (closed), a=3, b=1
    store.forget(path)
    held = store.position(path)
    assert held == rows_position(TS[2])
    assert apply_history(rows, task(held, rows_position(TS[5])), store) > 0
    store.forget(path)
    # Redone after a crash: the position says the history holds it, nothing is written twice.
    assert apply_history(rows, task(store.position(path), rows_position(TS[5])), store) == 0
    assert _versions(store, path) == expected
