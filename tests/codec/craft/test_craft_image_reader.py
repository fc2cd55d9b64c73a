"""Craft's image reader (fastpath_image.image_reader, in the form this module runs: the C helper or the
pure-Python one) against the reference rules, on arbitrary chunks: it answers the reference's row or
declines (None, or a decline the caller catches), never anything else."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import _fastpath
from pyticdc.codec.craft import fastpath_image
from pyticdc.codec.craft.primitives import CraftReader, uvarint_bytes, varint_bytes
from pyticdc.codec.craft.values import (
    ValueDecoder,
    decode_bytes,
    decode_float64,
    decode_null,
    decode_text,
    decode_uvarint,
    decode_varint,
)
from pyticdc.errors import DecodeError
from pyticdc.model import Row

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")

DECODERS: list[ValueDecoder] = [decode_bytes, decode_text, decode_uvarint, decode_varint, decode_float64, decode_null]
#: What a fast reader may raise to decline (the pure form's strict shortcuts; the C form returns None).
_DECLINES = (DecodeError, UnicodeDecodeError, KeyError, struct.error)


def _reference(chunk: bytes, decoders: list[ValueDecoder]) -> Row | None:
    """The chunk read by CraftReader's rules and the value decoders; None where they raise, or where the
    text is not valid UTF-8 (Go replaces it; both fast forms leave that to the reference path)."""
    reader = CraftReader(chunk)
    try:
        raw = reader.nullable_bytes_chunk(len(decoders))
        if reader.pos != len(chunk):
            return None
        values = {}
        for k, (decoder, value) in enumerate(zip(decoders, raw)):
            if value is not None and decoder is decode_text:
                value.decode()
            values[f"c{k}"] = None if value is None else decoder(value, 0)
        return Row(values)
    except (DecodeError, UnicodeDecodeError):
        return None


def _typed(row: Row | None) -> Any:
    return None if row is None else [(k, type(v), struct.pack("<d", v) if type(v) is float else v)
                                     for k, v in row.items()]


def _read(chunk: bytes, decoders: list[ValueDecoder], pad: bytes) -> Row | None:
    reader = fastpath_image.image_reader([f"c{k}" for k in range(len(decoders))], decoders)
    buf = pad + chunk + pad  # the chunk inside a message: offsets, not slices
    try:
        return reader(buf, len(pad), len(pad) + len(chunk))
    except _DECLINES:
        return None


def _value_bytes(decoder: ValueDecoder, draw: st.DrawFn) -> bytes | None:
    if draw(st.integers(0, 5)) == 0:
        return None
    if decoder is decode_uvarint:
        return uvarint_bytes(draw(st.integers(0, 2**64 - 1)))
    if decoder is decode_varint:
        return varint_bytes(draw(st.integers(-(2**63), 2**63 - 1)))
    if decoder is decode_float64:
        return draw(st.floats(allow_nan=True, width=64).map(lambda x: struct.pack("<d", x)))
    if decoder is decode_text:
        return draw(st.text(max_size=80)).encode("utf-8", "surrogatepass")
    return draw(st.binary(max_size=300))


@st.composite
def _chunks(draw: st.DrawFn) -> tuple[bytes, list[ValueDecoder]]:
    """A well-formed chunk of random columns, then maybe damaged (a byte changed, cut or added)."""
    decoders = draw(st.lists(st.sampled_from(DECODERS), min_size=1, max_size=24))
    values = [_value_bytes(decoder, draw) for decoder in decoders]
    chunk = b"".join(varint_bytes(-1 if v is None else len(v)) for v in values) + b"".join(v or b"" for v in values)
    damage = draw(st.integers(0, 3))
    if damage == 1 and chunk:
        at = draw(st.integers(0, len(chunk) - 1))
        chunk = chunk[:at] + bytes([draw(st.integers(0, 255))]) + chunk[at + 1:]
    elif damage == 2 and chunk:
        chunk = chunk[:draw(st.integers(0, len(chunk) - 1))]
    elif damage == 3:
        chunk += draw(st.binary(min_size=1, max_size=4))
    return chunk, decoders


@settings(max_examples=400)
@given(case=_chunks(), pad=st.binary(max_size=3))
def test_reader_answers_the_reference_or_declines(case: tuple[bytes, list[ValueDecoder]], pad: bytes) -> None:
    chunk, decoders = case
    expected = _reference(chunk, decoders)
    got = _read(chunk, decoders, pad)
    assert got is None or _typed(got) == _typed(expected)
    if _fastpath.native() is not None:
        # The C form declines only what the reference refuses or the text it would repair.
        assert _typed(got) == _typed(expected)


@settings(max_examples=200)
@given(chunk=st.binary(max_size=64), decoders=st.lists(st.sampled_from(DECODERS), min_size=1, max_size=8))
def test_reader_on_arbitrary_bytes(chunk: bytes, decoders: list[ValueDecoder]) -> None:
    got = _read(chunk, decoders, b"")
    assert got is None or _typed(got) == _typed(_reference(chunk, decoders))


def test_hostile_lengths_and_bounds_decline() -> None:
    decoders: list[ValueDecoder] = [decode_bytes, decode_uvarint]
    huge = varint_bytes(2**31 - 1) + varint_bytes(2**31 - 1) + b"x"  # lengths far past the bytes
    negative = varint_bytes(-2) + varint_bytes(1) + b"\x01"
    eleven = b"\x80" * 10 + b"\x00" + varint_bytes(1) + b"\x01"  # an 11-byte length varint
    for chunk in (huge, negative, eleven, b"", b"\x80"):
        assert _read(chunk, decoders, b"pad") is None
        assert _reference(chunk, decoders) is None
    helpers = _fastpath.native()
    if helpers is not None:  # out-of-range offsets are declines too, never a read outside the buffer
        good = varint_bytes(1) + varint_bytes(1) + b"a\x05"
        names = ("a", "b")
        assert helpers.craft_image(good, 0, len(good), b"bu", names, Row) == {"a": b"a", "b": 5}
        for at, end in ((-1, len(good)), (0, len(good) + 1), (3, 2)):
            assert helpers.craft_image(good, at, end, b"bu", names, Row) is None
        with pytest.raises(TypeError):
            helpers.craft_image(good, 0, len(good), b"bu", ("a",), Row)
        with pytest.raises(TypeError):
            helpers.craft_image(good, 0, len(good), b"b?", names, Row)
