"""add-only on a table without handle nor row id (found by its whole image): kept columns stay out of the digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replica_units import apply_batch

from pyticdc.model import ColumnInfo, DDLEvent, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.store import DeltaStore

pytest.importorskip("deltalake")

TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(10)]


def _info(*names: str) -> TableInfo:
    columns = [ColumnInfo(name=n, type_code=TypeCode.LONG, flen=11) for n in names]
    return table_info_with_flags("s", "k", 100, 1, columns, [], False)


def _change(op: Op, ts: int, info: TableInfo, post: dict[str, Any] | None, pre: dict[str, Any] | None) -> RowChange:
    return RowChange(op=op, schema="s", table="k", commit_ts=ts, table_info=info,
                     columns=None if post is None else Row(post), pre_columns=None if pre is None else Row(pre))


@pytest.mark.parametrize("same_batch", [False, True])
def test_rows_written_before_a_drop_are_still_found_by_their_image(tmp_path: Path, same_batch: bool) -> None:
    full, dropped = _info("a", "b", "c"), _info("a", "b")
    replica = DeltaReplica(tmp_path, modelling=Modelling(schema_evolution="add-only"))
    inserts = [_change(Op.INSERT, TS[1], full, {"a": 1, "b": 10, "c": 100}, None),
               _change(Op.INSERT, TS[1], full, {"a": 2, "b": 20, "c": 200}, None)]
    drop = DDLEvent(query="ALTER TABLE `s`.`k` DROP COLUMN `c`", ddl_type=6, commit_ts=TS[2], schema="s", table="k",
                    table_info=dropped)
    later = [_change(Op.DELETE, TS[3], dropped, None, {"a": 1, "b": 10}),
             _change(Op.UPDATE, TS[3], dropped, {"a": 2, "b": 21}, {"a": 2, "b": 20})]
    if same_batch:
        apply_batch(replica, inserts, drop, later)
    else:
        apply_batch(replica, inserts)
        apply_batch(replica, drop)
        apply_batch(replica, later)
    store = DeltaStore(tmp_path)
    rows = store.read(store.root / replica.tables[("s", "k")].path).to_pylist()
    # Row 1 deleted, row 2 replaced by its new image (written after the drop: c NULL); nothing left behind.
    assert [{k: r[k] for k in ("a", "b", "c")} for r in rows] == [{"a": 2, "b": 21, "c": None}]
