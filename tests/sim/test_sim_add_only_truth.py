"""The add-only truth: the simulator's truth with dropped columns kept, as an add-only replica holds them."""

from __future__ import annotations

from typing import Any

from pyticdc.model import ActionType, ColumnInfo, DDLEvent, IndexInfo, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.mysql import table_info_with_flags
from pyticdc.sim import WorkloadConfig, simulate
from pyticdc.sim.oracle import add_only_truth
from pyticdc.sim.workload import History, TableTruth

TS = [i << 18 for i in range(1, 12)]


def _info(table: str, *names: str) -> TableInfo:
    columns = [ColumnInfo(name="id", type_code=TypeCode.LONG, flen=11)]
    columns += [ColumnInfo(name=n, type_code=TypeCode.LONG, flen=11) for n in names]
    return table_info_with_flags("s", table, 7, 1, columns, [IndexInfo(name="PRIMARY", columns=("id",), primary=True,
                                                                       unique=True)], True)


def _change(op: Op, ts: int, info: TableInfo, post: dict[str, Any] | None, pre: dict[str, Any] | None) -> RowChange:
    handle = (post or pre or {})["id"]
    return RowChange(op=op, schema="s", table=info.table, commit_ts=ts, row_id=handle, table_info=info,
                     columns=None if post is None else Row(post), pre_columns=None if pre is None else Row(pre))


def _history() -> History:
    """t(id, v, c): rows 1 and 2; DROP c; row 2 updated, row 3 inserted; a rename."""
    full, dropped = _info("t", "v", "c"), _info("t", "v")
    renamed = _info("u", "v")
    events: list[Any] = [
        DDLEvent(query="CREATE TABLE t", ddl_type=int(ActionType.CREATE_TABLE), commit_ts=TS[0], schema="s",
                 table="t", table_info=full),
        _change(Op.INSERT, TS[1], full, {"id": 1, "v": 10, "c": 100}, None),
        _change(Op.INSERT, TS[1], full, {"id": 2, "v": 20, "c": 200}, None),
        DDLEvent(query="ALTER TABLE t DROP COLUMN c", ddl_type=int(ActionType.DROP_COLUMN), commit_ts=TS[2],
                 schema="s", table="t", table_info=dropped, pre_table_info=full),
        _change(Op.UPDATE, TS[3], dropped, {"id": 2, "v": 21}, {"id": 2, "v": 20}),
        _change(Op.INSERT, TS[3], dropped, {"id": 3, "v": 30}, None),
        DDLEvent(query="RENAME TABLE t TO u", ddl_type=int(ActionType.RENAME_TABLE), commit_ts=TS[4], schema="s",
                 table="u", table_info=renamed, pre_table_info=dropped),
    ]

    def snap(table: str, info: TableInfo, rows: dict[int, dict[str, Any]]) -> dict[tuple[str, str], TableTruth]:
        return {("s", table): TableTruth(info=info, rows={k: Row(r) for k, r in rows.items()})}
    versions: list[tuple[int, Any]] = [
        (0, {}),
        (TS[0], snap("t", full, {})),
        (TS[1], snap("t", full, {1: {"id": 1, "v": 10, "c": 100}, 2: {"id": 2, "v": 20, "c": 200}})),
        (TS[2], snap("t", dropped, {1: {"id": 1, "v": 10}, 2: {"id": 2, "v": 20}})),
        (TS[3], snap("t", dropped, {1: {"id": 1, "v": 10}, 2: {"id": 2, "v": 21}, 3: {"id": 3, "v": 30}})),
        (TS[4], snap("u", renamed, {1: {"id": 1, "v": 10}, 2: {"id": 2, "v": 21}, 3: {"id": 3, "v": 30}})),
    ]
    return History(events, versions, WorkloadConfig(), 0)


def _rows(truth: Any, table: str) -> list[dict[str, Any]]:
    return sorted((dict(row) for row in truth[("s", table)].rows.values()), key=lambda r: r["id"])


def test_dropped_columns_keep_their_values_until_the_row_is_written_again() -> None:
    history = _history()
    before = add_only_truth(history, TS[1])
    assert _rows(before, "t") == [{"id": 1, "v": 10, "c": 100}, {"id": 2, "v": 20, "c": 200}]
    at_drop = add_only_truth(history, TS[2])
    assert [c.name for c in at_drop[("s", "t")].info.columns] == ["id", "v", "c"]
    assert _rows(at_drop, "t") == [{"id": 1, "v": 10, "c": 100}, {"id": 2, "v": 20, "c": 200}]
    after = add_only_truth(history, TS[3])
    assert _rows(after, "t") == [{"id": 1, "v": 10, "c": 100}, {"id": 2, "v": 21, "c": None},
                                 {"id": 3, "v": 30, "c": None}]
    # The kept column and its values move with the table.
    assert _rows(add_only_truth(history, TS[4]), "u") == _rows(after, "t")


def test_a_workload_with_column_drops_differs_from_the_plain_truth_only_by_kept_columns() -> None:
    # Seeds of the default workload that drop a column: the add-only truth has every live column and row of the
    # plain one, plus the dropped columns.
    checked = held = 0
    for seed in range(1, 6):
        history = simulate(seed, WorkloadConfig(transactions=40))
        drops = [e for e in history.events if isinstance(e, DDLEvent) and e.ddl_type == ActionType.DROP_COLUMN]
        if not drops:
            continue
        final = history.final_resolved_ts
        plain, kept = history.truth_at(final), add_only_truth(history, final)
        assert set(plain) == set(kept)
        for key, table in plain.items():
            extra = [c.name for c in kept[key].info.columns[len(table.info.columns):]]
            assert [c.name for c in kept[key].info.columns[:len(table.info.columns)]] == \
                [c.name for c in table.info.columns]
            for row_key, row in table.rows.items():
                wide = kept[key].rows[row_key]
                assert {k: wide[k] for k in row} == dict(row) and set(wide) == set(row) | set(extra)
                held += sum(1 for c in extra if wide[c] is not None)
        checked += 1
    assert checked > 0 and held > 0  # some rows still hold a dropped column's value at the end
