"""Replica table layout in Arrow: typed rows of a net change, row digests, and schema evolution (pure).

A replica table has the table's columns, typed with the ingestion mapping (:mod:`pyticdc.arrow.types`:
the same text rendering and converters as ``typed_rows``), after these metadata columns:

========================  ================  ==================================================================
column                    type              meaning
========================  ================  ==================================================================
``_commit_ts``            bigint            commit ts (TSO, below 2**63) of the row's last change
``_commit_time``          timestamp (UTC)   the physical time of ``_commit_ts`` (with Canal-JSON without the
                                            extension: the milliseconds it carries)
``_tidb_rowid``           bigint            the row id TiDB stores the row under, where the protocol carries
                                            it (Open Protocol); how rows of a table without handle are found
``_pyticdc_row_digest``   binary            only in tables without handle nor row id (and no ``--key``): a
                                            digest of the whole row, how such rows are found
``_op``                   string            opt-in: ``insert``, ``update`` or ``delete``, the last change
``_ingested_at``          timestamp (UTC)   opt-in: when the batch that wrote the row's last change ran
``_source_topic``         string            opt-in: the Kafka record the last change was read
``_source_partition``     int               from (the first delivery the consumer kept)
``_source_offset``        bigint
``_rescued_data``         string            ``--schema-evolution rescue``: JSON object of values the table cannot
                                            hold (:mod:`pyticdc.replica.evolution`)
``_is_deleted``           boolean           with soft deletes: the row was deleted upstream (last image kept)
========================  ================  ==================================================================

Opt-in columns come from :class:`pyticdc.replica.modelling.Modelling`; a table written before
``_commit_time`` was always there gets it on its next write (computed from ``_commit_ts``, see :func:`evolve`).

The digest stays a visible column: Delta has no column hidden from readers, and keeping the digest anywhere
else (a side table) would need a transaction over two tables, which Delta does not have, so a crash between
the two would break exactly once. It is the last resort: name the columns that identify such rows with
``--key`` and it is not written.

Replica tables use the default mapping (:data:`pyticdc.arrow.types.DEFAULT_TYPES`), as ``typed_rows`` does
by default: TIME is ``bigint`` microseconds (-838:59:59 is -3020399000000), Delta having no interval type.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.arrow.rows import row_images
from pyticdc.arrow.types import column_arrow_type, table_arrow_schema, text_converter, typed_arrays
from pyticdc.errors import ReplicaError
from pyticdc.model import RowChange, TableInfo
from pyticdc.mysql import STRING_TYPES
from pyticdc.replica.changes import NetChange
from pyticdc.replica.evolution import RESCUED, rescued_json
from pyticdc.replica.modelling import IS_DELETED, Modelling
from pyticdc.replica.progress import tso_times
from pyticdc.replica.store import ACTION, SHAPE

__all__ = [
    "COMMIT_TS",
    "DIGEST",
    "HIDDEN_COLUMNS",
    "OP",
    "ROWID",
    "MergeSource",
    "add_digests",
    "base64_texts",
    "convert_each",
    "evolve",
    "merge_source",
    "project_changes",
    "replica_schema",
    "table_columns",
    "typed_default",
]

COMMIT_TS: Final = "_commit_ts"
ROWID: Final = "_tidb_rowid"
DIGEST: Final = "_pyticdc_row_digest"
#: Column of a MERGE source only: ``upsert``, ``delete`` or ``soft`` (not ``_op``: that is a metadata column).
OP: Final = ACTION
#: Columns a replica table has besides the upstream table's.
HIDDEN_COLUMNS: Final = (COMMIT_TS, ROWID, DIGEST)
#: A TSO is below 2**63: bigint, which every reader filters and compares, with exact column statistics
#: (delta-rs writes those of a DECIMAL wider than 18 digits through a float).
_TSO: Final = pa.int64()
_UTC: Final = pa.timestamp("us", tz="UTC")
#: Position of each ``_source_*`` column in a record position (topic, partition, offset).
_SOURCE_INDEX: Final = {"_source_topic": 0, "_source_partition": 1, "_source_offset": 2}
#: Types of the opt-in metadata columns.
METADATA_TYPES: Final = {"_op": pa.string(), "_commit_time": _UTC, "_ingested_at": _UTC, IS_DELETED: pa.bool_(),
                          RESCUED: pa.string(), "_source_topic": pa.string(), "_source_partition": pa.int32(),
                          "_source_offset": pa.int64()}


def replica_schema(info: TableInfo, *, rowid: bool, digest: bool, modelling: Modelling | None = None) -> pa.Schema:
    """The Arrow schema of a replica table of ``info``, with the chosen hidden and metadata columns."""
    fields = [pa.field(COMMIT_TS, _TSO)]
    extra = (modelling or Modelling()).row_columns
    fields.extend(pa.field(name, METADATA_TYPES[name]) for name in extra)
    if rowid:
        fields.append(pa.field(ROWID, pa.int64()))
    if digest:
        fields.append(pa.field(DIGEST, pa.binary()))
    for column in info.columns:
        if column.name in HIDDEN_COLUMNS or column.name in (OP, SHAPE) or column.name in extra:
            raise ReplicaError(f"{info.qualified_name}: column {column.name!r} clashes with a replica metadata column")
        fields.append(pa.field(column.name, column_arrow_type(column)))
    return pa.schema(fields)


def table_columns(schema: pa.Schema, modelling: Modelling | None = None) -> list[str]:
    """The upstream table's columns of a replica schema (without the hidden and the chosen metadata ones)."""
    extra = set((modelling or Modelling()).row_columns)
    return [name for name in schema.names if name not in HIDDEN_COLUMNS and name not in (OP, SHAPE)
            and name not in extra]


def _digest(values: Sequence[Any]) -> bytes:
    # repr is exact and stable for every typed value a replica holds (int, float, Decimal, str, bytes,
    # date/time, lists): equal rows give equal digests across batches and rewrites.
    return hashlib.blake2b(repr(tuple(values)).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def add_digests(table: pa.Table, modelling: Modelling | None = None, *,
                unhashed: frozenset[str] = frozenset()) -> pa.Table:
    """``table`` with ``_pyticdc_row_digest`` computed from its upstream columns (in name order).

    ``unhashed``: columns left out (add-only's kept columns: upstream images no longer carry them, so the
    digest of a row written before the drop must still be the one its later delete image gives)."""
    names = sorted(n for n in table_columns(table.schema, modelling) if n not in unhashed)
    columns = [table.column(name).to_pylist() for name in names]
    digests = [_digest(values) for values in zip(*columns)] if columns else [_digest(())] * table.num_rows
    array = pa.array(digests, pa.binary())
    if DIGEST in table.schema.names:
        return table.set_column(table.schema.get_field_index(DIGEST), DIGEST, array)
    return table.append_column(DIGEST, array)


def base64_texts(row_info: TableInfo, info: TableInfo) -> frozenset[str]:
    """Columns the table has as binary strings that ``row_info`` (a row's own schema) calls text.

    Debezium without ``enable-tidb-extension`` declares BINARY, VARBINARY and BLOB columns ``string`` and sends
    their bytes as base64 (no other protocol calls a binary column text): where the table's schema, from its
    DDL, says binary, the row's text is that base64.
    """
    out = []
    for column in row_info.columns:
        target = info.column(column.name)
        if target is None or target.type_code not in STRING_TYPES or column.type_code not in STRING_TYPES:
            continue
        if pa.types.is_binary(column_arrow_type(target)) and not pa.types.is_binary(column_arrow_type(column)):
            out.append(column.name)
    return frozenset(out)


def project_changes(net: NetChange, info: TableInfo, *, rowid: bool, time_zone: str = "UTC",
                    modelling: Modelling | None = None, ingested_at: dt.datetime | None = None) -> pa.Table:
    """The MERGE source of a net change: the action column then the replica columns, typed with ``info``.

    Deletes carry their handle (or, for ``image``, their whole image) in the same typed columns; with soft
    deletes their action is ``soft`` and they carry their last image. See :func:`merge_source` for partial images.
    """
    return merge_source(net, info, rowid=rowid, time_zone=time_zone, modelling=modelling,
                        ingested_at=ingested_at).table


@dataclass(frozen=True)
class MergeSource:
    """A MERGE source and what :meth:`pyticdc.replica.store.DeltaStore.merge` needs besides it."""

    table: pa.Table
    #: Partial shape number → the columns its upserts assign.
    shapes: dict[int, list[str]]
    #: With soft deletes: the columns a soft delete assigns (None without).
    soft_columns: list[str] | None


def merge_source(net: NetChange, info: TableInfo, *, rowid: bool, time_zone: str = "UTC",
                 modelling: Modelling | None = None, ingested_at: dt.datetime | None = None,
                 origins: Mapping[int, tuple[str, int, int]] | None = None,
                 unhashed: frozenset[str] = frozenset()) -> MergeSource:
    """The MERGE source of a net change, with a shape per partial image (only the columns it carries are set).

    ``origins``: (topic, partition, offset) of each action by ``id`` (the ``_source_*`` columns)."""
    table_arrow_schema(info)  # a column named like a projection metadata column is refused, as ever
    modelling = modelling or Modelling()
    soft = modelling.soft_delete
    actions: list[RowChange] = [*net.upserts, *net.deletes]
    # Straight from the row images to typed columns: the same texts and converters as ``project_rows`` on
    # an EventRowBuilder batch (image ``current``), without the round trip through Arrow map columns.
    images: list[dict[str, str | None]] = []
    marks: list[frozenset[str]] = []
    carried: dict[int, frozenset[str]] = {}
    for action in actions:
        post, pre, encoded = row_images(action)
        chosen = post if post is not None else pre
        images.append(dict(zip(chosen[0], chosen[1])) if chosen is not None else {})
        row_info = action.table_info
        if row_info is not None and id(row_info) not in carried:
            carried[id(row_info)] = base64_texts(row_info, info)
        marks.append(frozenset(encoded) | carried[id(row_info)] if row_info is not None else frozenset(encoded))
    typed = typed_arrays(images, marks, info, time_zone=time_zone)
    digest = net.strategy == "image"
    schema = replica_schema(info, rowid=rowid, digest=digest, modelling=modelling)
    upstream = table_columns(schema, modelling)
    metadata = [COMMIT_TS, *modelling.row_columns]
    count = len(net.upserts)
    shapes: dict[frozenset[str], int] = {}
    shape_of: list[int] = []
    for index, action in enumerate(actions):
        if id(action) in net.partial and index < count:
            present = frozenset(name for name in upstream if name in images[index])
            shape_of.append(shapes.setdefault(present, len(shapes) + 1))
        else:
            shape_of.append(0 if index < count or id(action) not in net.partial else -1)
    kinds = ["upsert"] * count + [("soft" if soft else "delete")] * len(net.deletes)
    arrays: list[pa.Array] = [pa.array(kinds, pa.string())]
    names = [OP]
    if shapes or soft:
        arrays.append(pa.array(shape_of, pa.int32()))
        names.append(SHAPE)
    for field in schema:
        if field.name == COMMIT_TS:
            arrays.append(pa.array([a.commit_ts for a in actions], _TSO))
        elif field.name == ROWID:
            arrays.append(pa.array([a.row_id or None for a in actions], pa.int64()))
        elif field.name == DIGEST:
            continue
        elif field.name == "_op":
            arrays.append(pa.array([*net.upsert_ops, *(["delete"] * len(net.deletes))], pa.string()))
        elif field.name == "_commit_time":
            arrays.append(tso_times(pa.array([a.commit_ts for a in actions], _TSO)).cast(_UTC))
        elif field.name == "_ingested_at":
            arrays.append(pa.array([ingested_at or dt.datetime.now(dt.timezone.utc)] * len(actions), _UTC))
        elif field.name in _SOURCE_INDEX:
            # Where each action's change was read ((topic, partition, offset) by the action's id): NULL unknown.
            where = [(origins or {}).get(id(a)) for a in actions]
            at = _SOURCE_INDEX[field.name]
            arrays.append(pa.array([None if w is None or w[1] < 0 else w[at] for w in where], field.type))
        elif field.name == RESCUED:
            # --schema-evolution rescue: what an image carries beyond the table's columns, instead of lost.
            known = {c.name for c in info.columns}
            arrays.append(pa.array([rescued_json(None, {k: v for k, v in image.items() if k not in known})
                                    for image in images], pa.string()))
        elif field.name == IS_DELETED:
            arrays.append(pa.array([False] * count + [True] * len(net.deletes), pa.bool_()))
        else:
            arrays.append(typed[field.name])
        names.append(field.name)
    table = pa.Table.from_arrays(arrays, names=names)
    if digest:
        table = add_digests(table, modelling, unhashed=unhashed)
    table = table.select([*names[:2 if (shapes or soft) else 1], *schema.names])
    assigned = {number: [*(n for n in upstream if n in present), *metadata, *([ROWID] if rowid else [])]
                for present, number in shapes.items()}
    return MergeSource(table=table, shapes=assigned, soft_columns=metadata if soft else None)


def typed_default(info: TableInfo, name: str, text: str | None, *, time_zone: str = "UTC") -> Any:
    """The typed value existing rows take for an added column with default ``text`` (None when NULL)."""
    if text is None:
        return None
    column = info.column(name)
    if column is None:
        return None
    try:
        return text_converter(column, time_zone=time_zone)(text, False)
    except (ValueError, ArithmeticError):
        return None  # a default only TiDB can evaluate (an expression): NULL here


def _cast(array: pa.ChunkedArray, kind: pa.DataType, where: str) -> pa.ChunkedArray:
    if array.type == kind:
        return array
    try:
        return pc.cast(array, kind, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ReplicaError(f"{where}: existing values do not convert from {array.type} to {kind} ({exc}); "
                           "the replica cannot follow this column type change: re-create the table") from None


def convert_each(array: pa.ChunkedArray, kind: pa.DataType) -> tuple[pa.Array, list[Any]]:
    """``array`` cast to ``kind`` value by value: exact conversions kept, the rest NULL and returned (rescue)."""
    kept: list[Any] = []
    lost: list[Any] = []
    for value in array.to_pylist():
        try:
            kept.append(pc.cast(pa.array([value], array.type), kind, safe=True)[0].as_py())
            lost.append(None)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            kept.append(None)
            lost.append(value)
    return pa.array(kept, kind), lost


def evolve(
    data: pa.Table, info: TableInfo, *, rowid: bool, digest: bool, defaults: Mapping[str, str | None] | None = None,
    renamed: Mapping[str, str] | None = None, time_zone: str = "UTC", modelling: Modelling | None = None,
    unhashed: frozenset[str] = frozenset(),
) -> pa.Table:
    """Existing replica rows in the layout of ``info``: renamed, converted, added (with defaults) or dropped columns.

    A column whose values do not convert to its new type raises ReplicaError (only value-preserving
    type changes are followed). Missing hidden columns are added (``_tidb_rowid`` as NULL).
    """
    defaults = defaults or {}
    sources = {new: old for old, new in (renamed or {}).items()}
    schema = replica_schema(info, rowid=rowid, digest=digest, modelling=modelling)
    if IS_DELETED in data.schema.names and IS_DELETED not in schema.names:
        # Soft deletes turned off: the rows kept as deleted are deleted now, not revived as live ones.
        data = data.filter(pc.invert(pc.fill_null(data.column(IS_DELETED), False)))
    arrays: list[pa.ChunkedArray | pa.Array] = []
    present = set(data.schema.names)
    rescue = RESCUED in schema.names
    rescued: dict[str, list[Any]] = {}
    for field in schema:
        if field.name == DIGEST:
            arrays.append(pa.nulls(data.num_rows, pa.binary()))
            continue
        if field.name == IS_DELETED and field.name not in data.schema.names:
            arrays.append(pa.array([False] * data.num_rows, pa.bool_()))  # soft deletes turned on: all live
            continue
        if field.name == "_commit_time" and field.name not in present and COMMIT_TS in present:
            # A table written when _commit_time was opt-in: each row's time follows from its commit ts.
            arrays.append(tso_times(data.column(COMMIT_TS).combine_chunks()).cast(_UTC))
            continue
        source = sources.get(field.name, field.name)
        if source in present and rescue:
            try:
                arrays.append(_cast(data.column(source), field.type, f"{info.qualified_name}.{field.name}"))
            except ReplicaError:
                # --schema-evolution rescue: values the new type cannot hold go to _rescued_data, not lost.
                kept, lost = convert_each(data.column(source), field.type)
                rescued[field.name] = lost
                arrays.append(kept)
        elif source in present:
            arrays.append(_cast(data.column(source), field.type, f"{info.qualified_name}.{field.name}"))
        else:
            value = typed_default(info, field.name, defaults.get(field.name), time_zone=time_zone)
            arrays.append(pa.array([value] * data.num_rows, field.type) if value is not None
                          else pa.nulls(data.num_rows, field.type))
    if rescued:
        at = schema.get_field_index(RESCUED)
        existing = arrays[at].to_pylist()
        arrays[at] = pa.array([rescued_json(existing[i], {name: values[i] for name, values in rescued.items()})
                               for i in range(data.num_rows)], pa.string())
    evolved = pa.Table.from_arrays(arrays, schema=schema)
    return add_digests(evolved, modelling, unhashed=unhashed) if digest else evolved
