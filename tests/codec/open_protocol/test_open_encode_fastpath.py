"""The Open Protocol encoder's generated image writer against its reference (``_select`` + ``_render_image``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import make_encoder
from pyticdc.codec.open_protocol import encoder as open_encoder
from pyticdc.errors import EncodeError
from pyticdc.model import RowChange
from strategies import awkward_image, row_changes

# Values the writer must hand back or write exactly like the reference: controls, HTML characters,
# U+2028, invalid UTF-8, a str where bytes are expected, a wrong type.
_AWKWARD = st.sampled_from([b"\x08\x0c", b"\xff\xfe", b"<&>", "\u2028".encode(), b"\x01\x1f\"\\", "é订单".encode(),
                            "text", "\udc80", 1.5, True, None, b""])

OPTION_SETS: list[dict[str, Any]] = [
    {}, {"open-protocol.output-old-value": False}, {"delete-only-output-handle-key-columns": True},
    {"only-output-updated-columns": True},
]


def _reference(encoder: open_encoder.Encoder, row: RowChange) -> bytes | EncodeError:
    try:
        return encoder._value(encoder._images(row, False))
    except EncodeError as exc:
        return exc


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "default")
@settings(max_examples=150, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_generated_writer_equals_reference(options: dict[str, Any], rows: list[RowChange],
                                           data: st.DataObject) -> None:
    encoder = make_encoder("open-protocol", options)
    assert isinstance(encoder, open_encoder.Encoder)
    for row in rows:
        if data.draw(st.booleans()):
            row = RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                            columns=awkward_image(row.columns, data, _AWKWARD, one_in=6),
                            pre_columns=awkward_image(row.pre_columns, data, _AWKWARD, one_in=6),
                            table_id=row.table_id, row_id=row.row_id, table_info=row.table_info)
        fast = encoder._fast_value(row)
        reference = _reference(encoder, row)
        if fast is not None:
            assert fast == reference


@settings(max_examples=100, deadline=None)
@given(rows=row_changes())
def test_generated_writer_takes_valid_rows(rows: list[RowChange]) -> None:
    encoder = make_encoder("open-protocol", {})
    assert isinstance(encoder, open_encoder.Encoder)
    for row in rows:
        assert encoder._fast_value(row) == _reference(encoder, row)
