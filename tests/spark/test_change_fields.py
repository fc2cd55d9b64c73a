"""The change-row fields the distributed decode writes (``change_values``) keep the consumer's meanings:
the identity is ``change_identity``'s, the handles ``image_handle``'s, the handle kind what the images hold."""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.consumer.identity import change_identity, handle_columns, image_handle
from pyticdc.model import Row, RowChange
from pyticdc.spark.apply.decode import change_values
from strategies import row_changes


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _handle_kind(row: RowChange) -> str:
    """Keyed when every image holds every handle column; else the row id, else the whole image."""
    columns = handle_columns(row.table_info)
    images = [image for image in (row.columns, row.pre_columns) if image is not None]
    if columns and all(all(name in image for name in columns) for image in images):
        return "key"
    return "rowid" if row.row_id else "image"


@settings(max_examples=150)
@given(rows=row_changes(), partial=st.booleans(), row_id=st.integers(0, 3))
def test_identity_handles_and_kind(rows: list[RowChange], partial: bool, row_id: int) -> None:
    for row in rows:
        if partial and row.pre_columns is not None:  # an old image without its key column
            row = RowChange(**{**{f: getattr(row, f) for f in row.__struct_fields__},
                               "pre_columns": Row({k: v for k, v in row.pre_columns.items() if k != "id"}),
                               "row_id": row_id})
        fields = change_values(row)
        assert fields["ident"] == _digest(change_identity(row))
        assert fields["pre_h"] == (None if row.pre_columns is None else _digest(image_handle(row, row.pre_columns)))
        assert fields["post_h"] == (None if row.columns is None else _digest(image_handle(row, row.columns)))
        assert fields["hkind"] == _handle_kind(row)


@settings(max_examples=150)
@given(rows=row_changes(), schema=st.text(), table=st.text(), physical_table_id=st.integers(-(1 << 63), 1 << 63),
       commit_ts=st.integers(1, (1 << 64) - 1))
def test_the_identity_digest_is_the_identity_tuples_whatever_the_names(
        rows: list[RowChange], schema: str, table: str, physical_table_id: int, commit_ts: int) -> None:
    # The decode assembles the identity's repr from its parts: quotes, backslashes, non-ASCII and lone
    # surrogates in the names must give the tuple's own repr.
    for row in rows:
        row = RowChange(**{**{f: getattr(row, f) for f in row.__struct_fields__}, "schema": schema, "table": table,
                           "physical_table_id": physical_table_id, "commit_ts": commit_ts})
        assert change_values(row)["ident"] == _digest(change_identity(row))
