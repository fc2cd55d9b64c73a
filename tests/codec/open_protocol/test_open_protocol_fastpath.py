"""Open Protocol fast path (fastpath.FastPath) against the reference path, on generated rows and bytes.

The fast path is called directly, so a fallback to the reference path cannot hide a fast-path bug:
whatever it returns must equal the reference path's events, value types and column order included.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import PK, column, delete, insert, table, update
from fast_paths import open_fast_decode
from pyticdc.codec import open_protocol
from pyticdc.codec.open_protocol import fastpath
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, Event, RowChange
from strategies import row_changes


def _typed(events: list[Event]) -> list[Any]:
    """Events plus every row value with its type and position (1 == 1.0 == True must not pass)."""
    return [(event, [None if image is None else [(k, type(v), v) for k, v in image.items()]
                     for image in (event.columns, event.pre_columns)] if isinstance(event, RowChange) else None)
            for event in events]


@settings(max_examples=150, deadline=None)
@given(rows=row_changes(max_rows=6), batch=st.integers(1, 6), old_value=st.booleans(), handle_only=st.booleans(),
       only_updated=st.booleans())
def test_fast_path_agrees_with_the_reference_path(rows: list[RowChange], batch: int, old_value: bool,
                                                  handle_only: bool, only_updated: bool) -> None:
    fastpath._COMPILED.clear()
    encoder = open_protocol.Encoder(max_batch_size=batch, open_output_old_value=old_value,
                                    delete_only_output_handle_key_columns=handle_only,
                                    only_output_updated_columns=only_updated)
    decoder = open_protocol.Decoder()
    for message in encoder.encode(rows):
        assert message.key is not None and message.value is not None
        reference = decoder.decode_reference(message.value, message.key)
        decoder._fast.learn(reference)  # type: ignore[union-attr]
        fast = open_fast_decode(decoder, message.key, message.value)
        if fast is not None:
            assert _typed(fast) == _typed(reference)
            assert [e.table_info for e in fast] == [e.table_info for e in reference]  # type: ignore[union-attr]
        assert _typed(decoder.decode(message.value, message.key)) == _typed(reference)


_INFO = table(
    column("id", 8, PK), column("i", 3, ColumnFlag.NULLABLE), column("u", 8, ColumnFlag.NULLABLE, unsigned=True),
    column("f", 4, ColumnFlag.NULLABLE), column("d", 5, ColumnFlag.NULLABLE), column("dec", 246),
    column("vc", 15, text=True), column("vb", 15), column("bl", 252), column("tx", 252, text=True),
    column("e", 247, text=True, elems=("a", "b")), column("bit", 16, unsigned=True), column("js", 245),
    column("dt", 12), schema="s", name="t")
_ROW: dict[str, Any] = {
    "id": 1, "i": -5, "u": 2**64 - 1, "f": 1.5, "d": 1e300, "dec": "12.50", "vc": "é\"\n<".encode(),
    "vb": b"\x00\xff\"", "bl": b"\x00\x01\xfe", "tx": b"text", "e": 2, "bit": 5, "js": '{"a": 1}',
    "dt": "2025-01-02 03:04:05",
}
_NULLS = {**_ROW, "i": None, "u": None, "f": None, "d": None}


def _messages() -> list[tuple[bytes, bytes]]:
    rows = [insert(_INFO, _ROW), update(_INFO, {**_ROW, "i": 6}, _ROW), delete(_INFO, _ROW), insert(_INFO, _NULLS),
            update(_INFO, _NULLS, _ROW)]
    out = []
    for message in open_protocol.Encoder(open_output_old_value=True).encode(rows):
        assert message.key is not None and message.value is not None
        out.append((message.key, message.value))
    return out


def test_fast_path_takes_the_common_messages() -> None:
    decoder = open_protocol.Decoder()
    for key, value in _messages():
        reference = decoder.decode_reference(value, key)
        decoder._fast.learn(reference)  # type: ignore[union-attr]
        fast = open_fast_decode(decoder, key, value)
        assert fast is not None
        assert _typed(fast) == _typed(reference)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32), cut=st.booleans())
def test_fast_path_on_hostile_bytes(seed: int, cut: bool) -> None:
    # Mutations and truncations of the value: the fast path declines or agrees with the reference
    # path, which must then accept the bytes too. Nothing else may escape it.
    rng = random.Random(seed)
    [(key, value)] = _messages()
    decoder = open_protocol.Decoder()
    decoder._fast.learn(decoder.decode_reference(value, key))  # type: ignore[union-attr]
    mutated = bytearray(value)
    if cut:
        at = rng.randrange(len(mutated))
        del mutated[at:at + rng.randint(1, 3)]
    for _ in range(rng.randint(1, 3)):
        mutated[rng.randrange(len(mutated))] = rng.choice([rng.randrange(256), *b'"-0{}:,\\tfu'])
    fast = open_fast_decode(decoder, key, bytes(mutated))
    try:
        reference: list[Event] | None = decoder.decode_reference(bytes(mutated), key)
    except DecodeError:
        reference = None
    if fast is not None:
        assert reference is not None and _typed(fast) == _typed(reference)


def test_a_negative_zero_in_any_row_of_a_batch_is_read_with_its_sign() -> None:
    # The "-0" search runs once over the whole value: a FLOAT -0.0 in the last row of a batch must
    # still send the message to the reference path (msgspec alone would read it as 0.0).
    rows = [insert(_INFO, _ROW), insert(_INFO, {**_ROW, "id": 2}), insert(_INFO, {**_ROW, "id": 3, "f": -0.0})]
    [message] = open_protocol.Encoder(max_batch_size=3).encode(rows)
    assert message.key is not None and message.value is not None
    assert b'"v":-0}' in message.value
    decoder = open_protocol.Decoder()
    decoder._fast.learn(decoder.decode_reference(message.value, message.key))  # type: ignore[union-attr]
    assert open_fast_decode(decoder, message.key, message.value) is None
    [*_, last] = decoder.decode(message.value, message.key)
    assert isinstance(last, RowChange) and last.columns is not None
    assert str(last.columns["f"]) == "-0.0"


def test_a_batch_of_two_tables_takes_each_table_its_plan() -> None:
    # Rows of another table inside one batch change the plan and TableInfo the loop reuses.
    other = table(column("id", 8, PK), column("name", 15, text=True), schema="s", name="u")
    rows = [insert(_INFO, _ROW), insert(other, {"id": 7, "name": b"x"}), insert(_INFO, {**_ROW, "id": 2}),
            delete(other, {"id": 7, "name": b"x"})]
    messages = open_protocol.Encoder(max_batch_size=4).encode(rows)
    decoder = open_protocol.Decoder()
    for message in messages:
        assert message.key is not None and message.value is not None
        decoder._fast.learn(decoder.decode_reference(message.value, message.key))  # type: ignore[union-attr]
    batched = [m for m in messages if m.key is not None and m.key.count(b'"t":1') == 4]
    assert batched, "the encoder put the four rows in one message"
    for message in batched:
        assert message.key is not None and message.value is not None
        fast = open_fast_decode(decoder, message.key, message.value)
        reference = decoder.decode_reference(message.value, message.key)
        assert fast is not None and _typed(fast) == _typed(reference)
        assert [e.table_info for e in fast] == [e.table_info for e in reference]  # type: ignore[union-attr]
        assert [e.table for e in fast] == ["t", "u", "t", "u"]  # type: ignore[union-attr]
