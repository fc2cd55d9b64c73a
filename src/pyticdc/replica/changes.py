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

A ``key`` override (``--key``, :class:`pyticdc.replica.modelling.Modelling`) replaces the handle the rows
name with columns the user chose. Images that are not full rows (a handle-key-only large message, an
``only-output-updated-columns`` pre-image, a ``delete-only-output-handle-key-columns`` DELETE: a
:class:`~pyticdc.model.Row` holds only the columns that were sent, a NULL is a present ``None``) are
folded onto the image the segment already has for their handle; what stays partial is marked
(:attr:`NetChange.partial`) so the MERGE assigns only the columns it carries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
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
    #: Rows gone, as deletes (``pre_columns`` holds the handle, or the whole image for ``image``; with soft
    #: deletes the last image the segment knows).
    deletes: list[RowChange] = field(default_factory=list)
    #: The operation of each upsert's last change (``insert`` or ``update``), aligned with ``upserts``.
    upsert_ops: list[str] = field(default_factory=list)
    #: Ids of the actions (``id(RowChange)``) whose image lacks columns of the table: they carry only those sent.
    partial: set[int] = field(default_factory=set)
    #: Id of each action → the row change of the segment it ends with (where ``_source_*`` columns come from).
    sources: dict[int, RowChange] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Number of actions."""
        return len(self.upserts) + len(self.deletes)


def _image(change: RowChange) -> Row | None:
    return change.columns if change.columns is not None else change.pre_columns


def segment_strategy(rows: Sequence[RowChange], key: tuple[str, ...] | None = None) -> tuple[Strategy, tuple[str, ...]]:
    """How the rows of a segment identify themselves: the strategy and, for ``key``, the handle columns.

    The handle is what the rows' own table info says (the consumer keys them the same way), taken from the
    last row: a table's handle can only change with a DDL, and a segment holds no DDL. ``key`` (an override)
    replaces it; ReplicaError when a row lacks one of its columns.
    """
    if not rows:
        return "key", tuple(key or ())
    if key:
        for change in rows:
            if not _has(change, key):
                raise ReplicaError(f"{change.schema}.{change.table}@{change.commit_ts}: a {change.op.value} lacks key "
                                   f"column(s) of --key {','.join(key)}: the row cannot be found by them")
        return "key", key
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
    # An UPDATE's pre-image may hold only the changed columns (only-output-updated-columns): an unchanged key
    # column is then in the post-image only, and the pre-image's handle is taken from it (see _pre_image).
    images = (change.columns,) if change.op == Op.UPDATE and change.columns is not None else \
        (change.columns, change.pre_columns)
    for image in images:
        if image is not None and not all(name in image for name in columns):
            return False
    return True


def _pre_image(change: RowChange) -> Row | None:
    # The pre-image, its unsent columns taken from the post-image (only the changed columns were sent).
    pre, post = change.pre_columns, change.columns
    if pre is None or post is None or all(name in pre for name in post):
        return pre
    return Row({**post, **pre})


def _is_partial(change: RowChange, image: Row, columns: frozenset[str] | None) -> bool:
    # Against the table's columns (the replica's), not the row's own table info: that may list only what the
    # row carries (a Canal-JSON delete-only-output-handle-key-columns DELETE). Unknown: only the flag says.
    if change.handle_key_only:
        return True
    return columns is not None and not columns <= image.keys()


def _as_delete(change: RowChange, image: Row | None) -> RowChange:
    return RowChange(
        op=Op.DELETE, schema=change.schema, table=change.table, commit_ts=change.commit_ts, pre_columns=image,
        table_id=change.table_id, physical_table_id=change.physical_table_id, row_id=change.row_id,
        table_info=change.table_info,
    )


def _as_insert(change: RowChange, image: Row | None = None) -> RowChange:
    return RowChange(
        op=Op.INSERT, schema=change.schema, table=change.table, commit_ts=change.commit_ts,
        columns=change.columns if image is None else image,
        table_id=change.table_id, physical_table_id=change.physical_table_id, row_id=change.row_id,
        table_info=change.table_info,
    )


def net_change(rows: Sequence[RowChange], *, key: tuple[str, ...] | None = None,
               columns: Iterable[str] | None = None, sources: bool = False) -> NetChange:
    """Fold a segment's row changes (in apply order) into one action per handle.

    ``key`` overrides the handle (see :func:`segment_strategy`); ``columns``, the table's columns, tell
    partial images (without them only ``handle_key_only`` rows are). A partial image (see the module docstring) is
    completed from the image the segment already has for its handle, else marked in ``partial``.
    ReplicaError for a partial image of a table found by its whole image (nothing to find its row by).
    ``sources``: record in ``NetChange.sources`` the change each action ends with.
    """
    strategy, key_columns = segment_strategy(rows, key)
    net = NetChange(strategy=strategy, key_columns=key_columns)
    known_columns = frozenset(columns) if columns is not None else None
    if strategy == "image":
        for change in rows:
            image = _image(change)
            if image is not None and _is_partial(change, image, known_columns):
                raise ReplicaError(f"{change.schema}.{change.table}@{change.commit_ts}: a {change.op.value} carries "
                                   f"only some columns ({', '.join(sorted(image))}) and the messages name no key for "
                                   "the table: its rows are found by their whole image, so name the key (--table-key "
                                   f"'{change.schema}.{change.table}=COLUMN,...')")
        _fold_images(rows, net)
        return net
    final: dict[Hashable, tuple[RowChange, str]] = {}
    partial: set[Hashable] = set()

    def put(handle: Hashable, action: RowChange, op: str, image: Row, change: RowChange) -> None:
        # A partial image completes the one this segment already has for the handle (an upsert's, or a
        # delete's: its pre-image is the row's last content); it stays partial only if that one was.
        # ``change`` is the row change the action comes from (it carries the handle-key-only flag).
        previous = final.get(handle)
        known = _image(previous[0]) if previous is not None else None
        lacking = _is_partial(change, image, known_columns)
        if known is not None and lacking and (
                action.op == Op.DELETE or (previous is not None and previous[0].op != Op.DELETE)):
            # (never a partial insert onto a deleted row's image: that row is gone, the new one unknown)
            image = Row({**known, **image})
            action = _as_insert(action, image) if action.op == Op.INSERT else _as_delete(action, image)
            still = handle in partial
        else:
            still = lacking
        if still:
            partial.add(handle)
        else:
            partial.discard(handle)
        final[handle] = (action, op)
        if sources:
            net.sources[id(action)] = change

    for change in rows:
        image = _image(change)
        if image is None:
            continue
        if change.op == Op.INSERT:
            put(_handle(change, image, strategy, key_columns), _as_insert(change), "insert", image, change)
        elif change.op == Op.DELETE:
            put(_handle(change, image, strategy, key_columns), _as_delete(change, image), "delete", image, change)
        elif change.columns is not None:
            pre = _pre_image(change)
            old = _handle(change, pre, strategy, key_columns) if pre is not None else None
            new = _handle(change, change.columns, strategy, key_columns)
            if old is not None and old != new and pre is not None:
                # The handle moved: the old row is gone (a later change may bring it back).
                put(old, _as_delete(change, pre), "delete", pre, change)
            put(new, _as_insert(change), "update", change.columns, change)
    for handle, (action, op) in final.items():
        if action.op == Op.DELETE:
            net.deletes.append(action)
        else:
            net.upserts.append(action)
            net.upsert_ops.append(op)
        if handle in partial:
            net.partial.add(id(action))
    return net


def _fold_images(rows: Sequence[RowChange], net: NetChange) -> None:
    # Rows are a multiset: count each image in and out; what remains positive is inserted, negative deleted.
    counts: Counter[Hashable] = Counter()
    latest: dict[Hashable, RowChange] = {}
    ops: dict[Hashable, str] = {}
    for change in rows:
        if change.op in (Op.DELETE, Op.UPDATE) and (change.pre_columns is not None or change.op == Op.DELETE):
            image = change.pre_columns if change.pre_columns is not None else change.columns
            if image is None:
                continue
            handle = _handle(change, image, "image", ())
            counts[handle] -= 1
            if handle not in latest:
                latest[handle] = _as_delete(change, image)
                net.sources[id(latest[handle])] = change
        if change.op in (Op.INSERT, Op.UPDATE) and change.columns is not None:
            handle = _handle(change, change.columns, "image", ())
            counts[handle] += 1
            latest[handle] = _as_insert(change)
            net.sources[id(latest[handle])] = change
            ops[handle] = change.op.value
    for handle, count in counts.items():
        if count > 0:
            net.upserts.append(latest[handle])
            net.upsert_ops.append(ops[handle])
        elif count < 0:
            action = latest[handle]
            if action.op != Op.DELETE:
                source = net.sources.get(id(action))
                action = _as_delete(action, action.columns)
                if source is not None:
                    net.sources[id(action)] = source
            net.deletes.append(action)
