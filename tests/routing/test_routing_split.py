"""Update splitting for MQ sinks (§1.3), after tiflow ``cdc/model/sink_test.go`` TestTrySplitAndSortUpdateEvent*."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given
from hypothesis import strategies as st

from pyticdc.model import ColumnFlag, ColumnInfo, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.routing import dml_order, should_split_update, split_update, split_updates
from strategies import row_changes

B, HK, PK, UK = (int(f) for f in (ColumnFlag.BINARY, ColumnFlag.HANDLE_KEY, ColumnFlag.PRIMARY_KEY,
                                  ColumnFlag.UNIQUE_KEY))


def _table(col2_flags: int, col2_type: int = TypeCode.VARCHAR) -> TableInfo:
    return TableInfo(schema="test", table="t", columns=(
        ColumnInfo(name="col1", type_code=TypeCode.VARCHAR, flags=B),
        ColumnInfo(name="col2", type_code=col2_type, flags=col2_flags),
    ))


def _update(table: TableInfo, pre: Mapping[str, object], post: Mapping[str, object], commit_ts: int = 1) -> RowChange:
    return RowChange(op=Op.UPDATE, schema="test", table="t", commit_ts=commit_ts, columns=Row(post),
                     pre_columns=Row(pre), table_info=table)


def _insert(table: TableInfo, post: Mapping[str, object]) -> RowChange:
    return RowChange(op=Op.INSERT, schema="test", table="t", commit_ts=1, columns=Row(post), table_info=table)


def _delete(table: TableInfo, pre: Mapping[str, object]) -> RowChange:
    return RowChange(op=Op.DELETE, schema="test", table="t", commit_ts=1, pre_columns=Row(pre), table_info=table)


PRE = {"col1": b"col1-value", "col2": b"col2-value"}
POST = {"col1": b"col1-value-updated", "col2": b"col2-value-updated"}


def test_handle_key_update_splits_into_delete_then_insert() -> None:
    for flags in (HK, HK | PK, UK, HK | UK):
        result = split_updates([_update(_table(flags), PRE, POST)])
        assert [r.op for r in result] == [Op.DELETE, Op.INSERT], flags
        assert result[0].columns is None and result[0].pre_columns == Row(PRE)
        assert result[1].pre_columns is None and result[1].columns == Row(POST)


def test_update_of_non_key_column_is_kept() -> None:
    row = _update(_table(HK), PRE, {**PRE, "col1": b"changed"})
    assert split_updates([row]) == [row]
    # a key column that is not HandleKey/UniqueKey (e.g. a plain index) does not split either
    multiple = _update(_table(int(ColumnFlag.MULTIPLE_KEY)), PRE, POST)
    assert split_updates([multiple]) == [multiple]


def test_rows_without_images_are_dropped() -> None:
    empty = RowChange(op=Op.INSERT, schema="test", table="t", commit_ts=2, table_info=_table(HK))
    also_empty = RowChange(op=Op.UPDATE, schema="test", table="t", commit_ts=2, columns=Row(),
                           pre_columns=Row(), table_info=_table(HK))
    assert split_updates([empty, also_empty]) == []


def test_comparison_is_column_value_string() -> None:
    # 1.0 and 1 are different Python values but the same DOUBLE text "1": no key change.
    table = _table(HK, TypeCode.DOUBLE)
    assert not should_split_update(_update(table, {"col1": b"a", "col2": 1.0}, {"col1": b"b", "col2": 1}))
    assert should_split_update(_update(table, {"col1": b"a", "col2": None}, {"col1": b"a", "col2": 0.0}))


def test_sort_only_when_something_split() -> None:
    table = _table(HK)
    insert = _insert(table, {"col1": b"i", "col2": b"i"})
    update = _update(table, {"col1": b"u", "col2": b"u"}, {"col1": b"u2", "col2": b"u"})
    delete = _delete(table, {"col1": b"d", "col2": b"d"})
    unsplit = [insert, update, delete]
    assert split_updates(unsplit) == unsplit  # TestSortRowChangedEvent's order is only applied after a split
    key_change = _update(table, {"col1": b"k", "col2": b"k1"}, {"col1": b"k", "col2": b"k2"})
    result = split_updates([insert, update, key_change, delete])
    assert [dml_order(r) for r in result] == [1, 1, 2, 3, 3]
    # equal kinds keep their input order
    assert result[0].pre_columns == key_change.pre_columns and result[1] == delete
    assert result[3] == insert and result[4].columns == key_change.columns


def test_split_update_keeps_everything_else() -> None:
    row = _update(_table(HK), PRE, POST, commit_ts=42)
    delete, insert = split_update(row)
    for part in (delete, insert):
        assert (part.schema, part.table, part.commit_ts, part.table_info) == ("test", "t", 42, row.table_info)


def test_without_table_info_nothing_splits() -> None:
    row = RowChange(op=Op.UPDATE, schema="s", table="t", commit_ts=1, columns=Row({"a": 2}),
                    pre_columns=Row({"a": 1}))
    assert split_updates([row]) == [row]


@given(row_changes(max_rows=6), st.data())
def test_split_properties(rows: list[RowChange], data: st.DataObject) -> None:
    # Change some updates' handle so that they must split.
    changed = []
    for row in rows:
        if row.op is Op.UPDATE and data.draw(st.booleans()):
            assert row.columns is not None
            handle = row.columns["id"]
            assert isinstance(handle, int)
            row = RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                            columns=Row({**row.columns, "id": handle ^ 1}), pre_columns=row.pre_columns,
                            table_info=row.table_info)
        changed.append(row)
    result = split_updates(changed)
    splits = sum(1 for r in changed if should_split_update(r))
    assert len(result) == len(changed) + splits
    assert not any(should_split_update(r) for r in result)
    if splits:
        assert [dml_order(r) for r in result] == sorted(dml_order(r) for r in result)
    else:
        assert result == changed
