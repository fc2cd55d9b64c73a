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



# Texts made of what the quoting writers treat differently: every control, the HTML characters,
# U+2028/2029, quote and backslash (also "\\b" next to "b"), non-ASCII and astral characters, lone
# surrogates (invalid UTF-8 after surrogateescape) and plain letters.
_TEXT_PIECES = [chr(c) for c in range(0x20)] + ['"', "\\", "\\b", "b", "f", "<", ">", "&", "\u2028", "\u2029",
                                                 "\x7f", "é", "订单", "\U0001f600", "\udc80", "\udcff", "\ud800",
                                                 "plain", " ", "u003c"]
_texts = st.lists(st.sampled_from(_TEXT_PIECES), max_size=10).map("".join)


def _translated(text: str, table: dict[int, str]) -> str:
    """The reference: every character through the writer's escape table."""
    return '"' + text.translate(table) + '"'


@settings(max_examples=1500)
@given(text=_texts)
def test_quoting_through_orjson_is_the_escape_table(text: str) -> None:
    assert jsontext.go_json_quote(text) == _translated(text, jsontext._GO_TABLE)
    assert jsontext.easyjson_quote(text) == _translated(text, jsontext._EASYJSON_TABLE)
    assert jsontext.jsoniter_quote(text) == _translated(text, jsontext._JSONITER_TABLE)


@settings(max_examples=800)
@given(data=st.lists(st.sampled_from([p.encode("utf-8", "surrogatepass") for p in _TEXT_PIECES]
                                     + [b"\xff", b"\xc3", b"\xe2\x80"]), max_size=10).map(b"".join))
def test_quoting_bytes_through_orjson_is_the_escape_table(data: bytes) -> None:
    text = data.decode("utf-8", "surrogateescape")
    assert jsontext.go_json_quote_bytes(data) == _translated(text, jsontext._GO_BYTES_TABLE)
