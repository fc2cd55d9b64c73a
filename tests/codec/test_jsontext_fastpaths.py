"""Fast paths of ``pyticdc.codec.jsontext`` against their reference definitions, on generated inputs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import jsontext

_PIECES = [b"-0", b"-0.5", b"-01", b"-0e1", b"-0E1", b":", b"[", b",", b" ", b"\t", b"\n", b"\x0b", b"\x0c", b"\r",
           b'"', b"2025-01-02", b"a", b"0", b"-", b"]", b"}", b"{", b"\\"]


@settings(max_examples=1000)
@given(parts=st.lists(st.sampled_from(_PIECES), max_size=12))
def test_has_negative_zero_is_the_lookbehind_regex(parts: list[bytes]) -> None:
    data = b"".join(parts)
    assert jsontext.has_negative_zero(data) == (jsontext._NEGATIVE_ZERO.search(data) is not None)


@settings(max_examples=300)
@given(data=st.binary(max_size=40))
def test_has_negative_zero_on_any_bytes(data: bytes) -> None:
    assert jsontext.has_negative_zero(data) == (jsontext._NEGATIVE_ZERO.search(data) is not None)

