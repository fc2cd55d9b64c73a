"""The Debezium decoder's warm path (the wrapper's cached schema tail, the per-schema row plans and
the inline value expressions) against the reference reading of the same messages."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc import DecodeError, Event
from pyticdc.codec import make_decoder, make_encoder
from pyticdc.codec._fastpath import DECLINES
from pyticdc.codec.debezium import fastpath, message, readers
from strategies import row_changes


def _outcome(decode: Any, value: bytes | None, key: bytes | None) -> tuple[str, Any]:
    try:
        events: list[Event] = decode(value, key)
    except DecodeError as exc:
        return ("error", (exc.protocol, exc.reason, exc.at))
    return ("events", events)


def _tail_variants(value: bytes, rng: random.Random) -> list[bytes]:
    """The message, and edits that keep (or nearly keep) its schema tail while changing the payload."""
    head, tail = value.split(b',"schema":', 1)
    payload = head[len(b'{"payload":'):]
    out = [value, b'{"payload":null,"schema":' + tail, b'{"payload":[],"schema":' + tail,
           b'{"payload":' + payload + b',"x":1,"schema":' + tail, b'{"payload":' + payload + b' ,"schema":' + tail,
           b'{"payload": ' + payload + b',"schema":' + tail, value + b" ", value[:-1], value + b"}",
           b'{"payload":{},"schema":' + tail, b'{"payload":' + payload[:-1] + b',"schema":' + tail]
    for _ in range(3):
        mutated = bytearray(payload)
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        out.append(b'{"payload":' + bytes(mutated) + b',"schema":' + tail)
    return out


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(row_changes(max_rows=4), min_size=1, max_size=3), seed=st.integers(0, 2**32),
       tidb=st.booleans())
def test_warm_decoder_equals_reference_on_edited_payloads(batches: list[Any], seed: int, tidb: bool) -> None:
    rng = random.Random(seed)
    options = {"enable-tidb-extension": True} if tidb else {}
    # The same rows twice: the second pass meets every schema tail and row plan already cached.
    rows = [row for batch in batches for row in batch]
    messages = make_encoder("debezium", options, clock=lambda: 1_700_000_000_000).encode(rows + rows)
    warm = make_decoder("debezium", options)
    reference = make_decoder("debezium", options)
    for msg in messages:
        assert msg.value is not None
        for value in _tail_variants(msg.value, rng):
            fast = _outcome(warm.decode, value, msg.key)
            slow = _outcome(reference.decode_reference, value, msg.key)
            assert fast == slow, value


def test_a_key_with_a_cached_tail_still_names_its_columns() -> None:
    splitter = fastpath.WrapperSplitter()
    tail = b',"schema":{"type":"struct","fields":[{"type":"int64","field":"id"}]}}'
    assert splitter._key_names(b'{"payload":{"id":1}' + tail) == {"id"}
    assert splitter._key_names(b'{"payload":{"id":2,"k":3}' + tail) == {"id", "k"}
    for key in (b'{"payload":{"id":2},"x":1' + tail, b'{"payload":[1]' + tail, b'{"k":4}'):
        # Not a wrapper of an object: the general reading names the columns.
        assert splitter._key_names(key) == message.key_names(message.load_json(key, "key"))


_SAMPLES: list[Any] = [
    None, True, False, 0, 1, -1, 255, 2**31, -(2**63), 2**63 - 1, 2**64 - 1, 2**64, -(2**63) - 1,
    -719162, -719163, 2932896, 2932897, -62135596800000, -62135596800001, 253402300799999, 253402300800000,
    -62135596800000000, 253402300800000000 - 1, 253402300800000000, 0.0, -0.0, 1.5, 3.4e38, 3.5e38, 1e300,
    float("inf"), "", "AA==", "AAAAAAAAAAA=", "AAAAAAAAAAAA", "AAAAAAAAAAAAAA==", "@@", "é", "a b",
    "2025-01-01", [], {},
]


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.sampled_from(_SAMPLES), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                       st.text(max_size=16), st.integers(-(10**17), 10**17)))
def test_every_inline_expression_reads_as_its_converter(value: Any) -> None:
    for convert in readers.INLINE:
        reader = fastpath.image_reader({"c": convert}, ("c",))
        try:
            expected: object = ("value", convert(value, "$.c")) if value is not None else ("value", None)
        except DecodeError:
            expected = "error"
        try:
            read = reader({"c": value})
        except DECLINES:
            read = None
        if read is None:
            continue  # declined: the reference reading decides
        got = read["c"]
        assert expected == ("value", got), (convert, value, got)
        assert type(got) is type(expected[1])
