"""Row identity: the handle a row image is keyed by, and the identity that makes a re-send a duplicate."""

from __future__ import annotations

from collections.abc import Hashable
from operator import itemgetter
from typing import Final

from pyticdc.model import ColumnFlag, Op, Row, RowChange, TableInfo

__all__ = ["OP_RANK", "ChangeIdentity", "change_identity", "handle_columns", "image_handle", "table_name"]

#: Apply order of the operations of one commit ts (TiCDC ``TrySplitAndSortUpdateEvent``: delete < update < insert).
OP_RANK: Final[dict[Op, int]] = {Op.DELETE: 0, Op.UPDATE: 1, Op.INSERT: 2}

#: (schema, table, physical table id, commit ts, op, pre-image handle, post-image handle).
ChangeIdentity = tuple[str, str, int, int, str, Hashable, Hashable]

_BY_NAME = itemgetter(0)


def table_name(row: RowChange) -> tuple[str, str]:
    """``(schema, table)`` of a row change."""
    return (row.schema, row.table)


_HANDLE_KEY: Final = int(ColumnFlag.HANDLE_KEY)
_PRIMARY_KEY: Final = int(ColumnFlag.PRIMARY_KEY)


def handle_columns(table_info: TableInfo | None) -> tuple[str, ...]:
    """The columns a row is identified by: HandleKey-flagged columns, else PrimaryKey-flagged ones."""
    if table_info is None:
        return ()
    # Canal-JSON only knows pkNames (PK flags), Open/Craft/Simple carry TiCDC's HandleKey flags.
    # Plain int masks: decoders build a TableInfo per message, so this runs once per row.
    columns = table_info.columns
    return (tuple(c.name for c in columns if c.flags & _HANDLE_KEY)
            or tuple(c.name for c in columns if c.flags & _PRIMARY_KEY))


def image_handle(row: RowChange, image: Row | None) -> Hashable:
    """The handle of one image of ``row``: key columns, else ``_tidb_rowid`` (row_id), else the whole image.

    The whole image is the last resort for a table without a handle in a protocol that does not
    carry ``_tidb_rowid``: two identical rows of such a table cannot be told apart by any consumer.
    """
    if image is None:
        return None
    columns = handle_columns(row.table_info)
    if columns and all(name in image for name in columns):
        return ("key", tuple(image[name] for name in columns))
    if row.row_id:
        return ("rowid", row.row_id)
    return ("image", tuple(sorted(image.items(), key=_BY_NAME)))


def change_identity(row: RowChange) -> ChangeIdentity:
    """What makes two row changes the same change: table, commit ts, operation and both handles."""
    return (
        row.schema, row.table, row.physical_table_id, row.commit_ts, row.op.value,
        image_handle(row, row.pre_columns), image_handle(row, row.columns),
    )
