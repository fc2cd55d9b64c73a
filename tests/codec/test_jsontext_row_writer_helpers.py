"""The row writers' helpers in ``pyticdc.codec.jsontext`` against their reference definitions."""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import jsontext

_finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)
_LOW, _HIGH = jsontext.float32_round(1e-4), jsontext.float32_round(1e6)  # the fast formatter's range


@settings(max_examples=3000)
@given(value=st.one_of(_finite32, st.floats(_LOW, _HIGH, width=32), st.floats(-_HIGH, -_LOW, width=32),
                       st.integers(-2**24, 2**24).map(float), st.sampled_from([0.5, 1.0, 2.0, 1024.0, -0.0, 0.0])))
def test_format_float32_f_is_format_float32(value: float) -> None:
    assert jsontext.format_float32_f(value) == jsontext.format_float32(value)


@settings(max_examples=2000)
@given(value=st.one_of(st.floats(-3e38, 3e38), st.floats(1e-4, 1e6), st.floats(-1e6, -1e-4)))
def test_format_float32_f_rounds_a_double_to_float32_first(value: float) -> None:
    # A double that is no float32 is formatted as the float32 it rounds to, as format_float32 does.
    assert jsontext.format_float32_f(value) == jsontext.format_float32(value)


@settings(max_examples=3000)
@given(value=st.one_of(st.floats(), st.floats(1e-7, 1e22), st.integers(-2**60, 2**60).map(float)))
def test_format_float64_f_is_format_float_f(value: float) -> None:
    assert jsontext.format_float64_f(value) == jsontext.format_float_f(value, 64)


# Strings made of what the writers escape differently: controls, HTML characters, U+2028/2029,
# quote, backslash (and "\\b" next to "b"), non-ASCII and plain letters.
_TEXT_PIECES = [chr(c) for c in range(0x20)] + ['"', "\\", "\\b", "\\f", "b", "f", "<", ">", "&", "\u2028", "\u2029",
                                                 "\x7f", "é", "订单", "\U0001f600", "plain", "u003c"]
_texts = st.lists(st.sampled_from(_TEXT_PIECES), max_size=10).map("".join)


@settings(max_examples=1500)
@given(texts=st.lists(_texts, max_size=4))
def test_orjson_text_fixed_up_is_the_go_writers(texts: list[str]) -> None:
    written = orjson.dumps(texts)
    assert jsontext.orjson_as_go_json(written) == ("[" + ",".join(jsontext.go_json_quote(t) for t in texts)
                                                   + "]").encode()
    assert jsontext.orjson_as_easyjson(written) == ("[" + ",".join(jsontext.easyjson_quote(t) for t in texts)
                                                    + "]").encode()
    assert json.loads(jsontext.orjson_as_easyjson(written)) == texts
