"""Row identity: the handle a row image is keyed by, and the identity that makes a re-send a duplicate."""

from __future__ import annotations

from collections.abc import Hashable
from operator import itemgetter
from typing import Final

from pyticdc.model import ColumnFlag, Op, Row, RowChange, TableInfo

__all__ = ["OP_RANK", "ChangeIdentity", "change_identity", "handle_columns", "identity_and_handles", "image_handle",
           "image_handles",
           "table_name"]

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


#: id(TableInfo) → (the TableInfo, its handle columns). Decoders reuse one TableInfo per table header, so a
#: row's handle columns are mostly a lookup; the object is kept so its id cannot be reused while cached.
_HANDLES: dict[int, tuple[TableInfo, tuple[str, ...]]] = {}
_HANDLES_LIMIT: Final = 4096


def handle_columns(table_info: TableInfo | None) -> tuple[str, ...]:
    """The columns a row is identified by: HandleKey-flagged columns, else PrimaryKey-flagged ones."""
    if table_info is None:
        return ()
    hit = _HANDLES.get(id(table_info))
    if hit is not None and hit[0] is table_info:
        return hit[1]
    # Canal-JSON only knows pkNames (PK flags), Open/Craft/Simple carry TiCDC's HandleKey flags.
    columns = table_info.columns
    names = (tuple(c.name for c in columns if c.flags & _HANDLE_KEY)
             or tuple(c.name for c in columns if c.flags & _PRIMARY_KEY))
    if len(_HANDLES) >= _HANDLES_LIMIT:
        _HANDLES.clear()
    _HANDLES[id(table_info)] = (table_info, names)
    return names


def _handle(row: RowChange, image: Row | None, columns: tuple[str, ...]) -> Hashable:
    if image is None:
        return None
    if columns:
        try:
            return ("key", tuple([image[name] for name in columns]))
        except KeyError:
            pass  # an image without every key column (a partial old image)
    if row.row_id:
        return ("rowid", row.row_id)
    return ("image", tuple(sorted(image.items(), key=_BY_NAME)))


def image_handle(row: RowChange, image: Row | None) -> Hashable:
    """The handle of one image of ``row``: key columns, else ``_tidb_rowid`` (row_id), else the whole image.

    The whole image is the last resort for a table without a handle in a protocol that does not
    carry ``_tidb_rowid``: two identical rows of such a table cannot be told apart by any consumer.
    """
    if image is None:
        return None
    return _handle(row, image, handle_columns(row.table_info))


def change_identity(row: RowChange) -> ChangeIdentity:
    """What makes two row changes the same change: table, commit ts, operation and both handles."""
    return identity_and_handles(row)[0]


def image_handles(row: RowChange) -> tuple[Hashable, Hashable]:
    """The handles of ``row``'s pre- and post-image (``image_handle``), the table's handle columns found once."""
    columns = handle_columns(row.table_info)
    return _handle(row, row.pre_columns, columns), _handle(row, row.columns, columns)


def identity_and_handles(row: RowChange) -> tuple[ChangeIdentity, Hashable, Hashable]:
    """``change_identity(row)`` and the handles of its pre- and post-image (``image_handle``), found once."""
    pre, post = image_handles(row)
    return (row.schema, row.table, row.physical_table_id, row.commit_ts, row.op.value, pre, post), pre, post
