"""The change-row fields the distributed decode writes (``change_values``) keep the consumer's meanings:
the identity is ``change_identity``'s, the handles ``image_handle``'s, the handle kind what the images hold.
Each test runs with the C digests (``_native.change_digests``) and with the pure-Python form."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import _fastpath
from pyticdc.consumer.identity import change_identity, handle_columns, image_handle
from pyticdc.model import Row, RowChange
from pyticdc.spark.apply.decode import change_values
from strategies import row_changes

pytestmark = pytest.mark.usefixtures("fast_path_form")


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


class _Looked(dict):  # type: ignore[type-arg]
    """A dict whose item lookup is its own: the C digests must leave it to Python."""

    def __getitem__(self, key: Any) -> Any:
        return "looked"


_VALUES = st.one_of(st.none(), st.integers(), st.integers(-(1 << 70), 1 << 70), st.text(), st.text(min_size=100),
                    st.binary(), st.floats(allow_nan=True), st.decimals(allow_nan=False), st.booleans())


@settings(max_examples=200)
@given(columns=st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True), data=st.data(),
       schema=st.text(), table=st.text(), table_id=st.integers(-(1 << 63), 1 << 63), commit_ts=st.integers(0, 1 << 64),
       op=st.sampled_from(["insert", "update", "delete"]))
def test_c_change_digests_are_the_reprs_digests(columns: list[str], data: st.DataObject, schema: str, table: str,
                                                 table_id: int, commit_ts: int, op: str) -> None:
    helpers = _fastpath.native()
    if helpers is None:
        pytest.skip("the pure-Python form has no C digests")
    images: list[Row | None] = []
    for _ in range(2):
        image = data.draw(st.one_of(st.none(), st.fixed_dictionaries({name: _VALUES for name in columns},
                                                                      optional={"other": _VALUES})))
        if image is not None and data.draw(st.booleans()):
            image.pop(data.draw(st.sampled_from(columns)))  # an old image without a key column: Python's to judge
        images.append(None if image is None else Row(image))
    pre, post = images
    found = helpers.change_digests(f"{schema!r}, {table!r}", table_id, commit_ts, repr(op), pre, post, tuple(columns))
    if any(image is not None and not all(name in image for name in columns) for image in images):
        assert found is None
        return
    handles = [None if image is None else ("key", tuple(image[name] for name in columns)) for image in images]
    assert found == (_digest((schema, table, table_id, commit_ts, op, *handles)),
                     None if pre is None else _digest(handles[0]), None if post is None else _digest(handles[1]))


def test_c_change_digests_decline_what_only_python_may_judge() -> None:
    helpers = _fastpath.native()
    if helpers is None:
        pytest.skip("the pure-Python form has no C digests")
    args = ("'s', 't'", 1, 2, "'insert'")
    keyed = Row({"id": 1})
    assert helpers.change_digests(*args, keyed, Row({"name": "x"}), ("id",)) is None  # no key column
    assert helpers.change_digests(*args, None, _Looked({"id": 1}), ("id",)) is None  # own lookup
    assert helpers.change_digests(*args, None, [("id", 1)], ("id",)) is None  # not a dict
    assert helpers.change_digests(*args, None, keyed, ()) is None  # no handle columns
    assert helpers.change_digests(*args, None, {"id": 1}, ("id",)) is not None
    with pytest.raises(TypeError):
        helpers.change_digests(*args, None, keyed, ["id"])  # a wrong call: a bug, not the input


@settings(max_examples=300)
@given(text=st.one_of(st.text(), st.text(min_size=100, max_size=400),
                      st.integers(0, 400).map(lambda size: "x" * size)))
def test_c_text_digest_is_hashlibs_blake2b(text: str) -> None:
    # Every length around the 128-byte blocks (a last block that is full, an empty message), non-ASCII and
    # lone surrogates (encoded as surrogatepass).
    helpers = _fastpath.native()
    if helpers is None:
        pytest.skip("the pure-Python form has no C digests")
    assert helpers.text_digest(text) == hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                                        digest_size=16).digest()


def test_c_change_digests_decline_a_repr_only_surrogatepass_encodes() -> None:
    helpers = _fastpath.native()
    if helpers is None:
        pytest.skip("the pure-Python form has no C digests")

    class Odd:
        def __repr__(self) -> str:
            return "\ud800"

    assert helpers.change_digests("'s', 't'", 1, 2, "'insert'", None, Row({"id": Odd()}), ("id",)) is None
    assert helpers.change_digests("'s', 't'", 1, 2, "'insert'", None, Row({"id": 1}), ("id",)) is not None
