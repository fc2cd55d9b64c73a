"""The reference replica deletes the row a handle-key-only DELETE names, however the protocol marks it."""

from __future__ import annotations

import pytest

from builders import column, table
from pyticdc.errors import ReplicaError
from pyticdc.model import Op, Row, RowChange, TypeCode
from pyticdc.sim.replica import ReplicaTable

# As Canal-JSON decodes t_uk: no primary key named (pkNames is []), so no handle columns in the table info.
INFO = table(column("a", TypeCode.LONG), column("b", TypeCode.VARCHAR), column("note", TypeCode.VARCHAR))


def _insert(a: int, note: str) -> RowChange:
    return RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=10 + a,
                     columns=Row({"a": a, "b": b"x", "note": note}), table_info=INFO)


@pytest.mark.parametrize("marked", [True, False], ids=["handle_key_only", "canal-json-unmarked"])
def test_a_delete_carrying_only_the_handle_key_deletes_the_row_it_names(marked: bool) -> None:
    replica = ReplicaTable()
    for a in (1, 2, 3):
        replica.apply(_insert(a, f"n{a}"))
    replica.apply(RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=20, pre_columns=Row({"a": 2, "b": b"x"}),
                            table_info=INFO, handle_key_only=marked))
    assert sorted(row["a"] for row in replica.images()) == [1, 3]
    # A key that names no row is still an error, not a silent no-op.
    with pytest.raises(ReplicaError, match="missing row"):
        replica.apply(RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=21,
                                pre_columns=Row({"a": 9, "b": b"x"}), table_info=INFO, handle_key_only=marked))
    # A full image still deletes by the whole row.
    replica.apply(RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=22,
                            pre_columns=Row({"a": 1, "b": b"x", "note": "n1"}), table_info=INFO))
    assert [row["a"] for row in replica.images()] == [3]
