"""Craft fast path on rows whose value lengths take several bytes (long texts and blobs) and NULLs:
the generated image reader (any length combination, nothing compiled per combination; the
previous row's length kinds tried first) against the reference path, on generated tables and rows."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import craft
from pyticdc.codec.craft import fastpath, fastpath_image
from pyticdc.model import Event, Row, RowChange
from strategies import row_changes


def _typed(events: list[Event]) -> list[Any]:
    """Events plus every row value with its type (1 == 1.0 == True must not pass for equal)."""
    return [(event, [None if image is None else [(k, type(v), v) for k, v in image.items()]
                     for image in (event.columns, event.pre_columns)] if isinstance(event, RowChange) else None)
            for event in events]


def _stretched(rows: list[RowChange], factor: int, nulls: int) -> list[RowChange]:
    """The rows with every bytes value repeated ``factor`` times (a length of 64+ bytes takes a
    two-byte varint) and every ``nulls``-th nullable value of an image set to NULL."""
    def image(values: Row | None, salt: int) -> Row | None:
        if values is None:
            return None
        return Row({name: None if name != "id" and nulls and (i + salt) % nulls == 0
                    else value * factor if isinstance(value, bytes) else value
                    for i, (name, value) in enumerate(values.items())})
    return [msgspec.structs.replace(r, columns=image(r.columns, k), pre_columns=image(r.pre_columns, k + 1))
            for k, r in enumerate(rows)]


@settings(max_examples=150, deadline=None)
@given(rows=row_changes(max_rows=6), factor=st.sampled_from([1, 9, 70, 700]), nulls=st.integers(0, 4),
       batch=st.integers(1, 6))
def test_list_slicer_agrees_with_the_reference_path(rows: list[RowChange], factor: int, nulls: int,
                                                      batch: int) -> None:
    fastpath._COMPILED.clear()
    messages = craft.Encoder(max_batch_size=batch).encode(_stretched(rows, factor, nulls))
    decoder = craft.Decoder()
    for message in messages:
        assert message.value is not None
        reference = decoder.decode_reference(message.value)
        for _ in range(3):  # first sighting (new length kinds), then the remembered ones
            fast = decoder._fast.decode(message.value)
            assert fast is not None  # model values never leave the fast path
            assert _typed(fast) == _typed(reference)


def test_coded_lengths_accept_only_minimal_lengths_from_null() -> None:
    # Code 1 (zigzag -1) is the only NULL; -2 and below, and non-minimal 2-byte codes, are absent;
    # a one-byte varint is keyed by its int ("B" field), a two-byte one by its bytes ("2s" field).
    lengths = fastpath_image.coded_lengths()
    assert lengths[1] == 0 and lengths[0] == 0 and lengths[2] == 1 and lengths[0x7E] == 63
    assert 3 not in lengths and b"\x81\x00" not in lengths  # -2; non-minimal 81 00 (= -1)
    assert lengths[b"\x80\x01"] == 64  # 80 01: zigzag 128 → 64
    assert b"\x04\x00" not in lengths and 0x80 not in lengths  # two one-byte varints; a continuation byte
    assert all(value >= 0 for value in lengths.values())
