"""Simple-Avro's generated row writer against the reference path, byte for byte, for every option set
the writer takes: valid rows, awkward values (other types, lone surrogates, floats past float32)
and odd images (a missing or extra column)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_paths import answers_of, c_helpers
from pyticdc.codec.simple import Encoder
from pyticdc.codec.simple import encoder as simple_encoder
from pyticdc.codec.simple.writer_avro import avro_row_writer
from pyticdc.errors import EncodeError
from pyticdc.model import Op, RowChange
from strategies import awkward_image, row_changes

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

_AWKWARD = st.sampled_from([
    b"", b"\xff\xfe", "é订单😀".encode(), "text", "\udc80", "\ud800", "2025-01-01 00:00:00", 1.5, -0.0, 3.5e38,
    float("nan"), float("inf"), 2**64 - 1, 2**63, -(2**63), -1, 0, 63, 64, 8191, 8192, 2**21, True, None,
    b"x" * 64, b"x" * 8192, "y" * 70, "18446744073709551615",
])

OPTION_SETS: list[dict[str, Any]] = [
    {}, {"delete-only-output-handle-key-columns": True}, {"large-message-handle-compression": "snappy"},
    {"large-message-handle-compression": "lz4"}, {"time-zone": "Asia/Shanghai"},
    {"large-message-handle-option": "handle-key-only", "max-message-bytes": 400},
]


def _outcome(encoder: Encoder, row: RowChange) -> Any:
    try:
        return [(m.key, m.value) for m in encoder.encode([row])]
    except EncodeError as exc:
        return str(exc)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
@settings(max_examples=150, deadline=None)
@given(rows=row_changes(), data=st.data(), commit_ts=st.sampled_from([None, 0, 2**63, 2**64 - 1, 2**64, -1]))
def test_row_writer_equals_reference(options: dict[str, Any], rows: list[RowChange], data: st.DataObject,
                                     commit_ts: int | None) -> None:
    fast = Encoder({"encoding-format": "avro", **options}, clock=lambda: 1_700_000_000_123, auto_bootstrap=False)
    reference = Encoder({"encoding-format": "avro", **options}, clock=lambda: 1_700_000_000_123,
                        auto_bootstrap=False)
    for row in rows:
        if data.draw(st.booleans()):
            row = RowChange(op=row.op, schema=row.schema, table=row.table,
                            commit_ts=row.commit_ts if commit_ts is None else commit_ts,
                            columns=awkward_image(row.columns, data, _AWKWARD),
                            pre_columns=awkward_image(row.pre_columns, data, _AWKWARD),
                            table_id=row.table_id, physical_table_id=data.draw(st.sampled_from([0, 7, 2**40])),
                            row_id=row.row_id, table_info=row.table_info)
        got = _outcome(fast, row)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(simple_encoder, "avro_row_writer", lambda table, key_only: None)
            assert got == _outcome(reference, row)


@settings(max_examples=100, deadline=None)
@given(rows=row_changes())
def test_row_writer_takes_valid_rows(rows: list[RowChange]) -> None:
    """The rows TiCDC writes are the writer's own: it returns their bytes, the reference path's bytes."""
    encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 5, auto_bootstrap=False)
    for row in rows:
        assert row.table_info is not None
        writer = avro_row_writer(row.table_info, False)
        assert writer is not None
        fast = writer(row, 5, encoder._location_avro)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(simple_encoder, "avro_row_writer", lambda table, key_only: None)
            (message,) = encoder.encode([row])
        if row.op is Op.DELETE or row.columns is not None:
            assert fast == message.value


@settings(max_examples=60, deadline=None)
@given(rows=row_changes())
def test_c_image_writer_takes_the_valid_images(rows: list[RowChange]) -> None:
    """In the C form every image of a valid row is written by _native.avro_row_image (no decline)."""
    c_helpers()  # skips in the pure-Python form
    encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 5, auto_bootstrap=False)
    for row in rows:
        assert row.table_info is not None
        writer = avro_row_writer(row.table_info, False)
        assert writer is not None
        with answers_of(writer, "avro_row_image") as answers:
            fast = writer(row, 5, encoder._location_avro)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(simple_encoder, "avro_row_writer", lambda table, key_only: None)
            (message,) = encoder.encode([row])
        assert fast == message.value
        assert len(answers) == (row.columns is not None) + (row.pre_columns is not None) and None not in answers
