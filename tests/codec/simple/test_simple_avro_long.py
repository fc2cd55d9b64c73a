"""The Simple-Avro fast path's varint reader against the reference reader (AvroReader.long)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec._fastpath import DECLINES
from pyticdc.codec.simple.avro import AvroReader, long_bytes
from pyticdc.codec.simple.fastpath_avro import avro_long
from pyticdc.errors import DecodeError

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

_LONGS = st.one_of(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-70, 70), st.integers(-(1 << 22), 1 << 22))


@settings(max_examples=1000)
@given(raw=st.one_of(_LONGS.map(long_bytes), st.binary(max_size=12)), tail=st.binary(max_size=3))
def test_avro_long_is_the_reference_reader(raw: bytes, tail: bytes) -> None:
    data = raw + tail
    reader = AvroReader(data)
    try:
        expected: tuple[int, int] | None = (reader.long(), reader.pos)
    except DecodeError:
        expected = None
    try:
        got: tuple[int, int] | None = avro_long(data, 0)
    except (*DECLINES, IndexError):
        got = None
    assert got == expected
