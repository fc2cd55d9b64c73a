"""Canal-JSON's generated row writer against the reference path, byte for byte, for every option set
the writer takes: valid rows, awkward values (escapes, invalid UTF-8, other types) and odd images."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_paths import answers_of, c_helpers
from pyticdc.codec import canal_json as cj
from pyticdc.codec import jsontext
from pyticdc.errors import EncodeError
from pyticdc.model import RowChange
from strategies import awkward_image, row_changes

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

# Values where the writer must decline or write exactly what the reference writes: every escape
# where orjson and easyjson differ, invalid UTF-8, lone surrogates, floats off the fast formats,
# types a column does not usually hold.
_AWKWARD = st.sampled_from([
    b"<a&b>", b"\x08\x0c", b"\\b", b"\\\x08", "\u2028\u2029".encode(), "é订单😀".encode(), b"\xff\xfe", b"\x00\x1f\x7f",
    "text", "<&>", "\udc80", "\\f", 1.5, -0.0, 0.1, -524.0707458162173, 1e-7, 1e22, 3.4e38, float("nan"),
    float("inf"), 16777216.0, 0.000123, 2**64 - 1, 2**63, -1, True, None, b"", "18446744073709551615", "x1",
])

OPTION_SETS: list[dict[str, Any]] = [
    {}, {"enable-tidb-extension": True}, {"content-compatible": True},
    {"only-output-updated-columns": True, "enable-tidb-extension": True},
    {"delete-only-output-handle-key-columns": True}, {"large-message-handle-compression": "snappy"},
    {"enable-tidb-extension": True, "large-message-handle-option": "handle-key-only", "max-message-bytes": 700},
]


def _outcome(encode: Any, row: RowChange) -> Any:
    try:
        return encode(row)
    except EncodeError as exc:
        return str(exc)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
@settings(max_examples=150, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_row_writer_equals_reference(options: dict[str, Any], rows: list[RowChange], data: st.DataObject) -> None:
    encoder = cj.Encoder(options, clock=lambda: 1_700_000_000_123)
    for row in rows:
        if data.draw(st.booleans()):
            row = RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                            columns=awkward_image(row.columns, data, _AWKWARD),
                            pre_columns=awkward_image(row.pre_columns, data, _AWKWARD),
                            table_id=row.table_id, row_id=row.row_id, table_info=row.table_info)
        assert _outcome(encoder._encode_row, row) == _outcome(encoder._encode_row_reference, row)


@settings(max_examples=100, deadline=None)
@given(rows=row_changes())
def test_row_writer_takes_valid_rows(rows: list[RowChange]) -> None:
    encoder = cj.Encoder({"enable-tidb-extension": True}, clock=lambda: 5)
    for row in rows:
        assert row.table_info is not None
        writer = encoder._writer(row.table_info)
        assert writer is not None
        fast = writer(row, 5)
        reference = encoder._encode_row_reference(row)
        assert reference is not None and fast == reference.value


def test_easyjson_fixups_pair_backslashes() -> None:
    # orjson's \\b (an escaped backslash, then b) stays; its \b becomes easyjson's \u0008.
    assert jsontext.orjson_as_easyjson(b'["\\\\b\\b<\xe2\x80\xa8"]') == b'["\\\\b\\u0008\\u003c\\u2028"]'


@settings(max_examples=60, deadline=None)
@given(rows=row_changes())
def test_c_image_writer_takes_the_valid_images(rows: list[RowChange]) -> None:
    """In the C form every full image of a valid row is written by _native.canal_image (no decline)."""
    c_helpers()  # skips in the pure-Python form
    encoder = cj.Encoder({"enable-tidb-extension": True}, clock=lambda: 5)
    for row in rows:
        assert row.table_info is not None
        writer = encoder._writer(row.table_info)
        assert writer is not None
        with answers_of(writer, "canal_image") as answers:
            reference = encoder._encode_row_reference(row)
            assert reference is not None and writer(row, 5) == reference.value
        assert answers and None not in answers
