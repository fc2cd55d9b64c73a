"""The net change of a run of row changes to one table: what a single MERGE must do (pure).

A replica table receives the row changes of a segment (the changes of one table between two of its
DDLs, in apply order) as one MERGE. Folding them per row handle first leaves one action per handle:
the row's final image, or its deletion. The handle is the consumer engine's
(:func:`pyticdc.consumer.handle_columns`, as in :func:`pyticdc.consumer.image_handle`): the HandleKey
(else PrimaryKey) columns, else ``_tidb_rowid``, else the whole image, so the replica identifies rows
exactly as de-duplication does; one segment uses one of the three for all its rows.

How a replica table finds its rows (:data:`Strategy`):

``key``    by its handle-key columns (a primary key, or a NOT NULL unique key).
``rowid``  by ``_tidb_rowid``: tables without a handle, where the protocol carries the row id (Open Protocol).
``image``  by the whole row: tables without a handle in protocols that carry no row id. The rows are a
           multiset, compared by a digest of all columns; two identical rows of such a table cannot be
           told apart by any consumer (they collapse into one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Literal

from pyticdc.consumer import handle_columns
from pyticdc.errors import ReplicaError
from pyticdc.model import Op, Row, RowChange

__all__ = ["NetChange", "Strategy", "net_change", "segment_strategy"]

#: How a replica table finds a row (see the module docstring).
Strategy = Literal["key", "rowid", "image"]


@dataclass
class NetChange:
    """One action per row handle: the image it ends with (``upserts``) or its deletion (``deletes``)."""

    strategy: Strategy
    #: The handle-key columns (``key`` strategy).
    key_columns: tuple[str, ...]
    #: Final images, as inserts (``columns`` set), in first-touch order.
    upserts: list[RowChange] = field(default_factory=list)
    #: Rows gone, as deletes (``pre_columns`` holds the handle, or the whole image for ``image``).
    deletes: list[RowChange] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Number of actions."""
        return len(self.upserts) + len(self.deletes)


def _image(change: RowChange) -> Row | None:
    return change.columns if change.columns is not None else change.pre_columns


def segment_strategy(rows: Sequence[RowChange]) -> tuple[Strategy, tuple[str, ...]]:
    """How the rows of a segment identify themselves: the strategy and, for ``key``, the handle columns.

    The handle is what the rows' own table info says (the consumer keys them the same way), taken from the
    last row: a table's handle can only change with a DDL, and a segment holds no DDL.
    """
    if not rows:
        return "key", ()
    columns = handle_columns(rows[-1].table_info)
    if columns and all(_has(change, columns) for change in rows):
        return "key", columns
    if all(change.row_id for change in rows):
        return "rowid", ()
    return "image", ()


_BY_NAME = itemgetter(0)


def _handle(change: RowChange, image: Row, strategy: Strategy, key_columns: tuple[str, ...]) -> Hashable:
    if strategy == "key":
        return tuple(image[name] for name in key_columns)
    if strategy == "rowid":
        return change.row_id
    return tuple(sorted(image.items(), key=_BY_NAME))


def _has(change: RowChange, columns: tuple[str, ...]) -> bool:
    for image in (change.columns, change.pre_columns):
        if image is not None and not all(name in image for name in columns):
            return False
    return True


def _as_delete(change: RowChange, image: Row | None) -> RowChange:
    return RowChange(
        op=Op.DELETE, schema=change.schema, table=change.table, commit_ts=change.commit_ts, pre_columns=image,
        table_id=change.table_id, physical_table_id=change.physical_table_id, row_id=change.row_id,
        table_info=change.table_info,
    )


def _as_insert(change: RowChange) -> RowChange:
    return RowChange(
        op=Op.INSERT, schema=change.schema, table=change.table, commit_ts=change.commit_ts, columns=change.columns,
        table_id=change.table_id, physical_table_id=change.physical_table_id, row_id=change.row_id,
        table_info=change.table_info,
    )


def net_change(rows: Sequence[RowChange]) -> NetChange:
    """Fold a segment's row changes (in apply order) into one action per handle.

    ReplicaError for an insert or update carrying only its handle key (a large message without
    claim-check): its other columns are unknown, and TiCDC's own consumer re-reads them from the upstream.
    """
    strategy, key_columns = segment_strategy(rows)
    net = NetChange(strategy=strategy, key_columns=key_columns)
    for change in rows:
        if change.handle_key_only and change.op != Op.DELETE:
            raise ReplicaError(f"{change.schema}.{change.table}@{change.commit_ts}: {change.op.value} carries only "
                               "its handle key (large message without claim-check): the row cannot be replicated")
    if strategy == "image":
        _fold_images(rows, net)
        return net
    final: dict[Hashable, RowChange] = {}
    for change in rows:
        image = _image(change)
        if image is None:
            continue
        if change.op == Op.INSERT:
            final[_handle(change, image, strategy, key_columns)] = _as_insert(change)
        elif change.op == Op.DELETE:
            final[_handle(change, image, strategy, key_columns)] = _as_delete(change, image)
        elif change.columns is not None:
            old = (_handle(change, change.pre_columns, strategy, key_columns)
                   if change.pre_columns is not None else None)
            new = _handle(change, change.columns, strategy, key_columns)
            if old is not None and old != new:
                # The handle moved: the old row is gone (a later change may bring it back).
                final[old] = _as_delete(change, change.pre_columns)
            final[new] = _as_insert(change)
    for action in final.values():
        (net.deletes if action.op == Op.DELETE else net.upserts).append(action)
    return net


def _fold_images(rows: Sequence[RowChange], net: NetChange) -> None:
    # Rows are a multiset: count each image in and out; what remains positive is inserted, negative deleted.
    counts: Counter[Hashable] = Counter()
    latest: dict[Hashable, RowChange] = {}
    for change in rows:
        if change.op in (Op.DELETE, Op.UPDATE) and (change.pre_columns is not None or change.op == Op.DELETE):
            image = change.pre_columns if change.pre_columns is not None else change.columns
            if image is None:
                continue
            handle = _handle(change, image, "image", ())
            counts[handle] -= 1
            latest.setdefault(handle, _as_delete(change, image))
        if change.op in (Op.INSERT, Op.UPDATE) and change.columns is not None:
            handle = _handle(change, change.columns, "image", ())
            counts[handle] += 1
            latest[handle] = _as_insert(change)
    for handle, count in counts.items():
        if count > 0:
            net.upserts.append(latest[handle])
        elif count < 0:
            action = latest[handle]
            net.deletes.append(action if action.op == Op.DELETE else _as_delete(action, action.columns))
