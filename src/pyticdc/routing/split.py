"""Update splitting for MQ sinks: an UPDATE that changes a key becomes DELETE + INSERT (reference §1.3).

A port of tiflow ``cdc/model/sink.go`` ``trySplitAndSortUpdateEvent``, ``ShouldSplitUpdateEvent`` and
``SplitUpdateEvent`` (Kafka/storage sinks, ``output-raw-change-event=false``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from pyticdc.model import ColumnFlag, Op, RowChange
from pyticdc.routing.dispatch import column_value_bytes

__all__ = ["dml_order", "should_split_update", "split_update", "split_updates"]

_KEY_FLAGS: Final = ColumnFlag.HANDLE_KEY | ColumnFlag.UNIQUE_KEY
# Go getDMLOrder: typeDelete < typeUpdate < typeInsert.
_DELETE, _UPDATE, _INSERT = 1, 2, 3


def _is_delete(row: RowChange) -> bool:
    # Go IsDelete/IsUpdate look at which images are non-empty, not at an op field.
    return bool(row.pre_columns) and not row.columns


def _is_update(row: RowChange) -> bool:
    return bool(row.pre_columns) and bool(row.columns)


def dml_order(row: RowChange) -> int:
    """Go ``getDMLOrder``: 1 for a delete, 2 for an update, 3 for an insert (by the images present)."""
    if _is_delete(row):
        return _DELETE
    if _is_update(row):
        return _UPDATE
    return _INSERT


def should_split_update(row: RowChange) -> bool:
    """Go ``ShouldSplitUpdateEvent``: an update whose HandleKey/UniqueKey column value changed.

    Values are compared as ``ColumnValueString`` (so ``1`` and ``1.0`` of a DOUBLE are equal).
    Without a ``table_info`` the column flags are unknown and nothing is split.
    """
    if not _is_update(row) or row.table_info is None:
        return False
    post, pre = row.columns, row.pre_columns
    assert post is not None and pre is not None
    for column in row.table_info.columns:
        # Go requires the flag on both images' columns; both images share the table's flags here.
        if not column.flags & _KEY_FLAGS or column.name not in post or column.name not in pre:
            continue
        if column_value_bytes(post[column.name], column.type_code) != column_value_bytes(
            pre[column.name], column.type_code
        ):
            return True
    return False


def split_update(row: RowChange) -> tuple[RowChange, RowChange]:
    """Go ``SplitUpdateEvent``: (DELETE with the pre-image, INSERT with the post-image)."""
    delete = msgspec.structs.replace(row, op=Op.DELETE, columns=None)
    insert = msgspec.structs.replace(row, op=Op.INSERT, pre_columns=None)
    return delete, insert


def split_updates(rows: Iterable[RowChange]) -> list[RowChange]:
    """Go ``trySplitAndSortUpdateEvent`` over one single-table transaction's rows (same commit_ts).

    Drops rows with neither image, splits key-changing updates, and, only if something was split,
    sorts the rows delete < update < insert.
    """
    result: list[RowChange] = []
    split = False
    for row in rows:
        if not row.columns and not row.pre_columns:
            continue  # e.g. insert then delete of one row inside the transaction
        if should_split_update(row):
            result.extend(split_update(row))
            split = True
        else:
            result.append(row)
    if split:
        # TiCDC uses sort.Sort, which is not stable: equal-kind rows may be reordered there. Go's pdqsort
        # falls back to insertion sort (stable) for up to 12 rows, so small transactions match exactly; we
        # keep the input order of equal kinds always, which is one of the orders TiCDC may produce.
        result.sort(key=dml_order)
    return result
