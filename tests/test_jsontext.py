"""Go JSON text: escaping per writer and float formatting (reference §1.5, §12)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pyticdc.codec.jsontext import (
    easyjson_quote,
    float32_round,
    format_float_f,
    format_float_go_json,
    format_float_jsoniter,
    go_json_quote,
    go_json_quote_bytes,
    go_string,
    jsoniter_quote,
)


def test_go_encoding_json_escaping() -> None:
    # encoding/json: short \b \f (Go >= 1.22), HTML-escaped < > &, U+2028/2029 escaped.
    assert go_json_quote('a"\\\n\r\t\b\f\x01<>&\u2028\u2029é') == (
        '"a\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u003c\\u003e\\u0026\\u2028\\u2029é"')


def test_easyjson_escaping_uses_unicode_for_backspace_and_formfeed() -> None:
    # docs example bytes as ISO-8859-1 text (reference §4.2)
    raw = bytes([5, 7, 10, 15, 36, 50, 43, 99, 120, 60, 38, 255, 254, 45, 55, 70]).decode("latin-1")
    assert easyjson_quote(raw) == '"\\u0005\\u0007\\n\\u000f$2+cx\\u003c\\u0026ÿþ-7F"'
    assert easyjson_quote("\b\f") == '"\\u0008\\u000c"'


def test_jsoniter_escaping_is_not_html_safe() -> None:
    assert jsoniter_quote('<>&"\b') == '"<>&\\"\\u0008"'
    assert jsoniter_quote("\u2028") == '"\u2028"'


def test_invalid_utf8_becomes_one_replacement_per_byte() -> None:
    # Go's decoder yields RuneError with width 1 for every invalid byte.
    assert go_string(b"\xe2\x82A\xff") == "\ufffd\ufffdA\ufffd"
    assert go_string("ok é".encode()) == "ok é"


def test_float_formats() -> None:
    assert format_float_f(1e21) == "1000000000000000000000"
    assert format_float_f(1e-7) == "0.0000001"
    assert format_float_f(2.0) == "2"
    assert format_float_f(3.14, 32) == "3.14"
    assert format_float_go_json(1e21) == "1e+21"
    assert format_float_go_json(1e-7) == "1e-7"
    assert format_float_go_json(1e20) == "100000000000000000000"
    assert format_float_jsoniter(1e-7) == "1e-07"
    assert format_float_go_json(float32_round(1e-6), 32) == "0.000001"


@given(st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda v: v != 0))
def test_float32_shortest_matches_numpy_dragon4(value: float) -> None:
    expected = np.format_float_positional(np.float32(value), unique=True, trim="-")
    assert format_float_f(value, 32) == expected


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0))
def test_float64_positional_round_trips(value: float) -> None:
    text = format_float_f(value)
    assert "e" not in text and float(text) == value
    assert float(format_float_go_json(value)) == value


def test_invalid_utf8_bytes_are_written_as_the_ufffd_escape() -> None:
    # Go encoding/json (encode.go): an invalid byte (RuneError, size 1) is written as `\ufffd`.
    assert go_json_quote_bytes(b"a\xffb<\xe2\x82") == '"a\\ufffdb\\u003c\\ufffd\\ufffd"'
    assert go_json_quote_bytes("é\u2028".encode()) == '"é\\u2028"'
    assert go_json_quote_bytes(b"\xed\xa0\x80") == '"\\ufffd\\ufffd\\ufffd"'  # encoded surrogate: 3 bad bytes
