"""The Debezium writer's float text: its repr shortcut is json-iterator's text (format_float_jsoniter)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec.debezium.message import dump
from pyticdc.codec.jsontext import format_float_jsoniter


@settings(max_examples=3000)
@given(value=st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0]).filter(
        lambda v: v == v and abs(v) != float("inf")),
    st.builds(lambda m, e: m * 10.0**e, st.floats(-1, 1), st.integers(-8, 22)),
))
def test_float_text_is_json_iterators(value: float) -> None:
    assert dump(value) == format_float_jsoniter(value, 64)


def test_float_text_at_the_edges() -> None:
    for value in (1e-6, 9.99999e-7, 1e21, 9.999999999999999e20, 1e16, 123.0, -100.0, 0.0, -0.0, 5e-324, 2.0**53):
        assert dump(value) == format_float_jsoniter(value, 64), value
