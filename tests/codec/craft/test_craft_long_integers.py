"""Craft fast path: the inline reading of 4- to 10-byte integer values (one int.from_bytes, a bit
check, four lane-doubling steps) against CraftReader's rules, alone and inside messages."""

from __future__ import annotations

import random
from typing import Any

import pytest
from craft_samples import UINT64, F, U, col
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import insert, table, update
from pyticdc.codec import craft
from pyticdc.codec._fastpath import compile_function
from pyticdc.codec.craft import fastpath, fastpath_image
from pyticdc.codec.craft.primitives import uvarint_bytes
from pyticdc.codec.craft.values import decode_varint, exact_uvarint
from pyticdc.errors import DecodeError
from pyticdc.model import Event, RowChange, Value

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")


def _inline(raw: bytes) -> int | None:
    """The generated expression for ``raw`` (n = its length), or None where it declines."""
    source = f"def read(raw, n):\n    return {fastpath_image._long_expression('raw')}\n"
    read = compile_function(source, "read", fastpath_image._namespace(["raw"], [decode_varint]))
    try:
        value: int = read(raw, len(raw))
    except KeyError:
        return None
    return value


@settings(max_examples=500)
@given(raw=st.one_of(st.binary(min_size=4, max_size=12), UINT64.map(uvarint_bytes),
                     st.lists(st.integers(0x80, 0xFF), min_size=3, max_size=10).flatmap(
                         lambda head: st.integers(0, 0xFF).map(lambda last: bytes(head) + bytes([last])))))
def test_long_integer_expression_follows_the_reader(raw: bytes) -> None:
    # The reference: exactly one uvarint by CraftReader's rules (non-minimal encodings included).
    try:
        expected: int | None = exact_uvarint(raw, 0)
    except DecodeError:
        expected = None
    assert _inline(raw) == expected


def test_long_integer_expression_edges() -> None:
    assert _inline(bytes([0xFF] * 9 + [0x01])) == 2**64 - 1
    assert _inline(bytes([0xFF] * 9 + [0x02])) is None  # past 64 bits
    assert _inline(bytes([0x80] * 9 + [0x00])) == 0  # non-minimal, as the reader takes it
    assert _inline(bytes([0x80] * 10 + [0x00])) is None  # 11 bytes
    assert _inline(b"") is None
    assert _inline(bytes([0x80] * 69 + [0x00])) is None  # any size is a KeyError, never an IndexError
    assert _inline(bytes([0x80, 0x80, 0x80, 0x80])) is None  # no final byte
    assert _inline(bytes([0x80, 0x01, 0x80, 0x01])) is None  # a final byte inside


def _typed(events: list[Event]) -> list[Any]:
    return [(event, [None if image is None else [(k, type(v), v) for k, v in image.items()]
                     for image in (event.columns, event.pre_columns)] if isinstance(event, RowChange) else None)
            for event in events]


def test_messages_with_long_integers_agree_with_the_reference() -> None:
    # Random signed and unsigned 64-bit values (so 1..10-byte varints in any mix), NULLs, empty and
    # long texts (multi-byte length varints), unicode; inserts and updates in one message.
    rng = random.Random(18)
    info = table(col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)),
                 col("s", 8, int(F.BINARY | F.NULLABLE)), col("u", 8, int(F.BINARY | F.NULLABLE) | U),
                 col("t", 15, int(F.NULLABLE)), col("neg", 3, int(F.BINARY | F.NULLABLE)), schema="s", name="longs")

    def image(key: int) -> dict[str, Value]:
        return {"id": key,
                "s": rng.choice([None, rng.randrange(-2**63, 2**63), -rng.randrange(2**40), rng.randrange(2**35)]),
                "u": rng.choice([None, rng.randrange(2**64), 2**64 - 1, rng.randrange(2**28, 2**50)]),
                "t": rng.choice([None, b"", "订单é".encode() * rng.randrange(1, 60), b"x" * rng.randrange(120, 300)]),
                "neg": rng.choice([None, -1, -(2**31), rng.randrange(-2**31, 0)])}

    rows = []
    for key in range(60):
        post = image(key)
        rows.append(insert(info, post, commit_ts=100 + key))
        if key % 3 == 0:
            rows.append(update(info, image(key), post, commit_ts=200 + key))
    fastpath._COMPILED.clear()
    decoder = craft.Decoder()
    for message in craft.Encoder(max_batch_size=16).encode(rows):
        assert message.value is not None
        fast = decoder._fast.decode(message.value)
        assert fast is not None
        assert _typed(fast) == _typed(decoder.decode_reference(message.value))
