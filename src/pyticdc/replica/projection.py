"""Replica table layout in Arrow: typed rows of a net change, row digests, and schema evolution (pure).

A replica table has the table's columns, typed with the ingestion mapping (:mod:`pyticdc.arrow.types`:
the same text rendering and converters as ``typed_rows``), after these metadata columns:

========================  ================  ==================================================================
column                    type              meaning
========================  ================  ==================================================================
``_commit_ts``            decimal(20,0)     commit ts (TSO) of the row's last change
``_tidb_rowid``           bigint            the row id TiDB stores the row under, where the protocol carries
                                            it (Open Protocol); how rows of a table without handle are found
``_pyticdc_row_digest``   binary            only in tables without handle nor row id: a digest of the whole
                                            row, how such rows are found
========================  ================  ==================================================================

Replica tables use the default mapping (:data:`pyticdc.arrow.types.DEFAULT_TYPES`), as ``typed_rows`` does
by default: TIME is ``bigint`` microseconds (-838:59:59 is -3020399000000), Delta having no interval type.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from pyticdc.arrow.rows import row_images
from pyticdc.arrow.types import column_arrow_type, table_arrow_schema, text_converter, typed_arrays
from pyticdc.errors import ReplicaError
from pyticdc.model import RowChange, TableInfo
from pyticdc.replica.changes import NetChange

__all__ = [
    "COMMIT_TS",
    "DIGEST",
    "HIDDEN_COLUMNS",
    "OP",
    "ROWID",
    "add_digests",
    "evolve",
    "project_changes",
    "replica_schema",
    "table_columns",
    "typed_default",
]

COMMIT_TS: Final = "_commit_ts"
ROWID: Final = "_tidb_rowid"
DIGEST: Final = "_pyticdc_row_digest"
#: Column of a MERGE source only: ``upsert`` or ``delete``.
OP: Final = "_op"
#: Columns a replica table has besides the upstream table's.
HIDDEN_COLUMNS: Final = (COMMIT_TS, ROWID, DIGEST)
_TSO: Final = pa.decimal128(20, 0)


def replica_schema(info: TableInfo, *, rowid: bool, digest: bool) -> pa.Schema:
    """The Arrow schema of a replica table of ``info``, with the chosen hidden columns."""
    fields = [pa.field(COMMIT_TS, _TSO)]
    if rowid:
        fields.append(pa.field(ROWID, pa.int64()))
    if digest:
        fields.append(pa.field(DIGEST, pa.binary()))
    for column in info.columns:
        if column.name in HIDDEN_COLUMNS or column.name == OP:
            raise ReplicaError(f"{info.qualified_name}: column {column.name!r} clashes with a replica metadata column")
        fields.append(pa.field(column.name, column_arrow_type(column)))
    return pa.schema(fields)


def table_columns(schema: pa.Schema) -> list[str]:
    """The upstream table's columns of a replica schema (without the hidden ones)."""
    return [name for name in schema.names if name not in HIDDEN_COLUMNS and name != OP]


def _digest(values: Sequence[Any]) -> bytes:
    # repr is exact and stable for every typed value a replica holds (int, float, Decimal, str, bytes,
    # date/time, lists): equal rows give equal digests across batches and rewrites.
    return hashlib.blake2b(repr(tuple(values)).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def add_digests(table: pa.Table) -> pa.Table:
    """``table`` with ``_pyticdc_row_digest`` computed from its upstream columns (in name order)."""
    names = sorted(table_columns(table.schema))
    columns = [table.column(name).to_pylist() for name in names]
    digests = [_digest(values) for values in zip(*columns)] if columns else [_digest(())] * table.num_rows
    array = pa.array(digests, pa.binary())
    if DIGEST in table.schema.names:
        return table.set_column(table.schema.get_field_index(DIGEST), DIGEST, array)
    return table.append_column(DIGEST, array)


def project_changes(net: NetChange, info: TableInfo, *, rowid: bool, time_zone: str = "UTC") -> pa.Table:
    """The MERGE source of a net change: ``_op`` then the replica columns, typed with ``info``.

    Deletes carry their handle (or, for ``image``, their whole image) in the same typed columns.
    """
    table_arrow_schema(info)  # a column named like a projection metadata column is refused, as ever
    actions: list[RowChange] = [*net.upserts, *net.deletes]
    # Straight from the row images to typed columns: the same texts and converters as ``project_rows`` on
    # an EventRowBuilder batch (image ``current``), without the round trip through Arrow map columns.
    images: list[dict[str, str | None]] = []
    marks: list[frozenset[str]] = []
    for action in actions:
        post, pre, encoded = row_images(action)
        chosen = post if post is not None else pre
        images.append(dict(zip(chosen[0], chosen[1])) if chosen is not None else {})
        marks.append(frozenset(encoded))
    typed = typed_arrays(images, marks, info, time_zone=time_zone)
    schema = replica_schema(info, rowid=rowid, digest=net.strategy == "image")
    arrays: list[pa.Array] = [pa.array(["upsert"] * len(net.upserts) + ["delete"] * len(net.deletes), pa.string())]
    names = [OP]
    for field in schema:
        if field.name == COMMIT_TS:
            arrays.append(pa.array([a.commit_ts for a in actions], _TSO))
        elif field.name == ROWID:
            arrays.append(pa.array([a.row_id or None for a in actions], pa.int64()))
        elif field.name == DIGEST:
            continue
        else:
            arrays.append(typed[field.name])
        names.append(field.name)
    table = pa.Table.from_arrays(arrays, names=names)
    if net.strategy == "image":
        table = add_digests(table)
    return table.select([OP, *schema.names])


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


def evolve(
    data: pa.Table, info: TableInfo, *, rowid: bool, digest: bool, defaults: Mapping[str, str | None] | None = None,
    renamed: Mapping[str, str] | None = None, time_zone: str = "UTC",
) -> pa.Table:
    """Existing replica rows in the layout of ``info``: renamed, converted, added (with defaults) or dropped columns.

    A column whose values do not convert to its new type raises ReplicaError (only value-preserving
    type changes are followed). Missing hidden columns are added (``_tidb_rowid`` as NULL).
    """
    defaults = defaults or {}
    sources = {new: old for old, new in (renamed or {}).items()}
    schema = replica_schema(info, rowid=rowid, digest=digest)
    arrays: list[pa.ChunkedArray | pa.Array] = []
    present = set(data.schema.names)
    for field in schema:
        if field.name == DIGEST:
            arrays.append(pa.nulls(data.num_rows, pa.binary()))
            continue
        source = sources.get(field.name, field.name)
        if source in present:
            arrays.append(_cast(data.column(source), field.type, f"{info.qualified_name}.{field.name}"))
        else:
            value = typed_default(info, field.name, defaults.get(field.name), time_zone=time_zone)
            arrays.append(pa.array([value] * data.num_rows, field.type) if value is not None
                          else pa.nulls(data.num_rows, field.type))
    evolved = pa.Table.from_arrays(arrays, schema=schema)
    return add_digests(evolved) if digest else evolved
