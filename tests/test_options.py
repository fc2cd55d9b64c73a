"""Codec options: TiCDC spelling, coercion of sink-URI strings, clear ConfigErrors."""

from __future__ import annotations

import pytest

from pyticdc import ConfigError
from pyticdc.codec import canonical_protocol, codec_module
from pyticdc.codec.options import OPTION_DEFAULTS, OPTION_DOCS, CodecOptions, parse_options

ALL = frozenset(CodecOptions.__struct_fields__)


def test_ticdc_spellings_and_python_names_resolve_to_the_same_option() -> None:
    a = parse_options("x", ALL, {"enable-tidb-extension": "true", "max-message-bytes": "1024"})
    b = parse_options("x", ALL, enable_tidb_extension=True, max_message_bytes=1024)
    assert a == b
    assert a.enable_tidb_extension is True and a.max_message_bytes == 1024
    assert parse_options("x", ALL, {"open-protocol.output-old-value": False}).open_output_old_value is False


def test_unknown_option_names_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'enable-tidb-extention'.*enable-tidb-extension"):
        parse_options("canal-json", ALL, {"enable-tidb-extention": True})


def test_inapplicable_option_is_rejected() -> None:
    with pytest.raises(ConfigError, match="does not apply"):
        parse_options("craft", frozenset({"max_batch_size"}), {"enable-tidb-extension": True})


@pytest.mark.parametrize(("name", "value", "message"), [
    ("large-message-handle-option", "bogus", "none, handle-key-only, claim-check"),
    ("large-message-handle-compression", "gzip", "none, snappy, lz4"),
    ("encoding-format", "xml", "json, avro"),
    ("max-batch-size", 0, ">= 1"),
    ("max-message-bytes", "ten", "integer"),
    ("enable-tidb-extension", "yes", "true or false"),
    ("time-zone", "Mars/Olympus", "unknown time zone"),
])
def test_bad_values_explain_what_is_valid(name: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_options("x", ALL, {name: value})


def test_every_option_is_documented_with_its_default() -> None:
    assert set(OPTION_DOCS) == set(OPTION_DEFAULTS)


def test_protocol_names() -> None:
    assert canonical_protocol("open") == "open-protocol"
    with pytest.raises(ConfigError, match="valid protocols: open-protocol, canal-json, craft, debezium, simple"):
        canonical_protocol("maxwell")
    with pytest.raises(ConfigError):
        codec_module("avro")
