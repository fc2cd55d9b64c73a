"""A ``jsonl`` capture line read in one pass (msgspec, strict base64) is exactly the line read field by field:
the same record, or a decline that leaves the line (and its error's words) to the field-by-field reader."""

from __future__ import annotations

import base64
import binascii
import sys
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.errors import CaptureError
from pyticdc.io import capture
from pyticdc.model import KafkaRecord

_TEXT = st.one_of(st.text(max_size=6), st.sampled_from(["cdc", "t\u2028", "\ud800", "é"]))
_B64 = st.one_of(st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode()),
                 st.sampled_from(["", "QQ", "QQ=", "QQ==", "QQ===", "=QQ=", "Q Q=", "QUJD\n", "QUJD!", "é"]))
_FIELD = st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False), _TEXT,
                   _B64, st.lists(st.integers(), max_size=2))


def _outcome(read: Any, line: bytes) -> Any:
    try:
        return read(line)
    except CaptureError as exc:
        return f"CaptureError: {exc}"


def _fields(line: bytes) -> KafkaRecord:
    return capture._parse_fields(line, "jsonl", "w")


@settings(max_examples=600)
@given(topic=st.one_of(_TEXT, _FIELD), partition=st.one_of(st.integers(0, 5), _FIELD),
       offset=st.one_of(st.integers(-1, 9), _FIELD), timestamp=st.one_of(st.integers(-5, 2**42), _FIELD),
       key=st.one_of(_B64, _FIELD), value=st.one_of(_B64, _FIELD), drop=st.sets(st.integers(0, 5)),
       extra=st.booleans(), raw=st.sampled_from(["", "\\u00e9", "\\ud800", "\\\\u0041"]))
def test_one_pass_line_is_the_field_by_field_line(topic: Any, partition: Any, offset: Any, timestamp: Any, key: Any,
                                                  value: Any, drop: set[int], extra: bool, raw: str) -> None:
    names = ["topic", "partition", "offset", "timestamp", "key", "value"]
    document = {n: v for i, (n, v) in enumerate(zip(names, [topic, partition, offset, timestamp, key, value]))
                if i not in drop}
    if extra:
        document["x"] = [1, {"y": None}]
    try:
        line = orjson.dumps(document) + b"\n"
    except TypeError:  # an int past 64 bits: no JSON orjson writes
        return
    if raw:  # an escape orjson would not write: in the topic, or in a field nobody reads
        line = line.replace(b'{', b'{"z":"' + raw.encode() + b'",', 1)
    fast = capture._fast_jsonl(line)
    slow = _outcome(_fields, line)
    if fast is not None:
        assert fast == slow
    assert _outcome(lambda text: capture.parse_line(text, "jsonl", "w"), line) == slow


def test_one_pass_takes_the_plain_lines() -> None:
    record = KafkaRecord(topic="cdc", partition=2, offset=7, key=b"k", value=b"\x00\xff",
                         timestamp_ms=1_700_000_000_000)
    line = capture.record_line(record)
    assert capture._fast_jsonl(line) == record == _fields(line)
    assert capture._fast_jsonl(line.replace(b'"cdc"', b'"\\u0063dc"')) is None  # an escape: field by field
    assert capture._fast_jsonl(line.replace(b'"partition":2', b'"partition":true')) is None


@settings(max_examples=500)
@given(data=st.binary(min_size=0, max_size=300), at=st.integers(0, 400),
       damage=st.sampled_from(["", "=", "==", "!", " ", "\n", "-", "_", "A", "é"]), cut=st.integers(0, 3))
def test_the_one_pass_base64_reads_only_what_the_field_reader_reads_alike(data: bytes, at: int, damage: str,
                                                                          cut: int) -> None:
    # Long values too: the SIMD decoder takes other paths past 32 characters. What it refuses goes to the field
    # reader, which is laxer (b64decode(validate=True) takes "AAAA="): so a refusal is always safe, and what it
    # reads must be what the field reader reads; it refuses at least what binascii's strict mode refuses.
    text = base64.b64encode(data).decode()
    text = text[:at] + damage + text[at:]
    text = text[:len(text) - cut] if cut and len(text) >= cut else text

    def outcome(read: Any) -> Any:
        try:
            return read(text)
        except ValueError:  # binascii.Error included
            return "refused"

    fast = outcome(capture._strict_b64)
    if fast != "refused":
        assert fast == outcome(lambda t: base64.b64decode(t, validate=True))
        if sys.version_info >= (3, 11):  # strict_mode is new in 3.11
            assert fast == outcome(lambda t: binascii.a2b_base64(t, strict_mode=True))
