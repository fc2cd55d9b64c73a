"""Craft primitives and values (ticdc-reference.md §3.1, §3.2): varints, chunks, every value type."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from craft_samples import INT64, UINT64, UINT64_MAX, U
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec.craft.primitives import CraftReader, CraftWriter, uvarint_bytes, varint_bytes
from pyticdc.codec.craft.values import decode_value, encode_value
from pyticdc.errors import DecodeError
from pyticdc.model import Value


# --------------------------------------------------------------------------- primitives
@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (150, "9601"), (300, "ac02"),  # protobuf docs
    (424316552636792833, "8180f08181b5def105"),  # §3.4 (a) commit ts
    (UINT64_MAX, "ffffffffffffffffff01"),
])
def test_uvarint_known_encodings(value: int, hex_: str) -> None:
    assert uvarint_bytes(value).hex() == hex_
    assert CraftReader(bytes.fromhex(hex_)).uvarint() == value


@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (2147483647, "feffffff0f"), (-2147483648, "ffffffff0f"),
    (2000, "a01f"), (1000, "d00f"), (-(2**63), "ffffffffffffffffff01"), (2**63 - 1, "feffffffffffffffff01"),
])
def test_zigzag_varint_known_encodings(value: int, hex_: str) -> None:
    # Zigzag table from the protobuf encoding docs; 2000/1000 from §3.4 (a).
    assert varint_bytes(value).hex() == hex_
    assert CraftReader(bytes.fromhex(hex_)).varint() == value


def test_reversed_uvarint_is_the_uvarint_backwards() -> None:
    out = CraftWriter()
    out.raw(b"\x77")
    out.reversed_uvarint(300)
    assert out.getvalue() == b"\x77\x02\xac"
    reader = CraftReader(out.getvalue())
    assert reader.reversed_uvarint() == 300
    assert (reader.pos, reader.end) == (0, 1)


@given(UINT64)
def test_uvarint_shape(value: int) -> None:
    data = uvarint_bytes(value)
    assert len(data) == max(1, -(-value.bit_length() // 7))
    assert all(b & 0x80 for b in data[:-1]) and data[-1] < 0x80
    assert sum((b & 0x7F) << (7 * i) for i, b in enumerate(data)) == value


def test_uvarint_bytes_at_every_size_boundary() -> None:
    # uvarint_bytes spreads 7-bit groups without a loop: check every size change against a loop.
    boundaries = {2 ** (7 * k) + d for k in range(10) for d in (-1, 0, 1)} | {UINT64_MAX}
    for value in sorted(v for v in boundaries if 0 <= v <= UINT64_MAX):
        expected, rest = bytearray(), value
        while rest >= 0x80:
            expected.append((rest & 0x7F) | 0x80)
            rest >>= 7
        expected.append(rest)
        assert uvarint_bytes(value) == bytes(expected), value
        assert CraftReader(bytes(expected)).uvarint() == value


@pytest.mark.parametrize("bad", [
    "ffffffffffffffffffff01",  # 11 bytes
    "ffffffffffffffffff02",  # 10th byte > 1 overflows 64 bits
    "ffffffffffffffffffff",  # 10 continuation bytes
    "80", "ff80", "",  # truncated
])
def test_bad_uvarints_raise_decode_error(bad: str) -> None:
    data = b"\x00" + bytes.fromhex(bad)
    reader = CraftReader(data, 1)
    with pytest.raises(DecodeError) as info:
        reader.uvarint()
    assert info.value.protocol == "craft" and info.value.at == 1
    with pytest.raises(DecodeError):
        CraftReader(bytes.fromhex(bad)[::-1]).reversed_uvarint()


def test_out_of_range_integers_are_refused_by_the_writer() -> None:
    cases = ((uvarint_bytes, -1), (uvarint_bytes, 2**64), (varint_bytes, 2**63), (varint_bytes, -(2**63) - 1))
    for call, value in cases:
        with pytest.raises(OverflowError):
            call(value)


_CHUNK_CASES: list[tuple[str, st.SearchStrategy[Any]]] = [
    ("uvarint_chunk", st.lists(UINT64, max_size=20)),
    ("varint_chunk", st.lists(INT64, max_size=20)),
    ("delta_uvarint_chunk", st.lists(UINT64, max_size=20)),
    ("delta_varint_chunk", st.lists(INT64, max_size=20)),
    ("string_chunk", st.lists(st.binary(max_size=20), max_size=10)),
    ("nullable_bytes_chunk", st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=10)),
    # Lengths of 64+ bytes take two-byte varints (CraftWriter's one-byte fast path declines).
    ("nullable_bytes_chunk", st.lists(st.binary(max_size=100), max_size=6)),
]


@pytest.mark.parametrize(("method", "strategy"), _CHUNK_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CHUNK_CASES)])
@settings(max_examples=80)
@given(data=st.data())
def test_chunk_writer_and_reader_mirror(method: str, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    values = data.draw(strategy)
    out = CraftWriter()
    out.raw(b"\xee")
    getattr(out, method)(values)
    out.raw(b"\xdd")
    reader = CraftReader(out.getvalue(), 1, len(out) - 1)
    assert getattr(reader, method)(len(values)) == values
    reader.expect_end(method)


@given(st.lists(st.one_of(
    st.tuples(st.just("uvarint"), UINT64), st.tuples(st.just("varint"), INT64),
    st.tuples(st.just("float64"), st.floats(allow_nan=False)), st.tuples(st.just("string"), st.binary(max_size=30)),
    st.tuples(st.just("u8"), st.integers(0, 255)),
), max_size=12))
def test_primitive_writer_and_reader_mirror(items: list[tuple[str, Any]]) -> None:
    out = CraftWriter()
    for method, value in items:
        getattr(out, method)(value)
    reader = CraftReader(out.getvalue())
    assert [(m, getattr(reader, m)()) for m, _ in items] == items
    reader.expect_end("primitives")


def test_delta_chunks_wrap_like_go() -> None:
    # commit ts going backwards: the uvarint delta wraps mod 2**64 (Go uint64 subtraction).
    out = CraftWriter()
    out.delta_uvarint_chunk([10, 3])
    assert out.getvalue() == bytes([10]) + uvarint_bytes(2**64 - 7)
    extremes = [2**63 - 1, -(2**63), 2**63 - 1]
    out = CraftWriter()
    out.delta_varint_chunk(extremes)
    assert CraftReader(out.getvalue()).delta_varint_chunk(3) == extremes


def test_float64_is_little_endian() -> None:
    out = CraftWriter()
    out.float64(2.0)
    assert out.getvalue().hex() == "0000000000000040"  # §3.4 (a)


def test_absurd_counts_fail_before_allocating() -> None:
    huge = uvarint_bytes(2**62)
    with pytest.raises(DecodeError, match="count"):
        CraftReader(huge + b"\x00\x00").count("term")
    for method in ("uvarint_chunk", "string_chunk", "nullable_bytes_chunk", "delta_varint_chunk"):
        with pytest.raises(DecodeError):
            getattr(CraftReader(b"\x01\x02"), method)(2**40)
    with pytest.raises(DecodeError, match="longer"):
        CraftReader(b"\x7f\x00").string_chunk(1)  # one string of 127 bytes, 1 byte left
    with pytest.raises(DecodeError, match="nullable"):
        CraftReader(b"\x03").nullable_bytes_chunk(1)  # zigzag(-2): not a length



# --------------------------------------------------------------------------- values per type
@pytest.mark.parametrize(("type_code", "flag", "value", "expected"), [
    # §3.2 EncodeTiDBType, one line per rule.
    (10, 0, "2024-02-29", b"2024-02-29"), (12, 0, "2024-02-29 01:02:03.120", b"2024-02-29 01:02:03.120"),
    (7, 0, "1973-12-30 15:30:00", b"1973-12-30 15:30:00"), (11, 0, "-838:59:59", b"-838:59:59"),
    (14, 0, "2000-01-01", b"2000-01-01"), (245, 0, '{"key1": "value1"}', b'{"key1": "value1"}'),
    (246, 0, "-129012.1230000", b"-129012.1230000"), (225, 0, "[1,2,3]", b"[1,2,3]"),
    (247, 0, 3, b"\x03"), (248, 0, 0b101, b"\x05"), (16, U, UINT64_MAX, bytes.fromhex("ffffffffffffffffff01")),
    (15, 0, b"\x00\xff", b"\x00\xff"), (254, 0, b"abc", b"abc"), (252, 0, b"", b""), (249, 1, b"\x80", b"\x80"),
    (5, 0, 0.1, struct.pack("<d", 0.1)),
    (13, U, 2020, bytes.fromhex("c81f")),  # YEAR: zigzag varint even though unsigned
    (1, 0, -128, b"\xff\x01"), (2, U, 65535, uvarint_bytes(65535)), (9, 0, -1, b"\x01"),
    (3, 0, 2000, bytes.fromhex("a01f")), (8, 0, -(2**63), bytes.fromhex("ffffffffffffffffff01")),
    (8, U, UINT64_MAX, bytes.fromhex("ffffffffffffffffff01")),
    (6, 0, "ignored", None), (255, 0, b"POINT", None), (0, 0, "1.5", None), (200, 0, 1, None),  # NULL
    (3, 0, None, None),
])
def test_value_bytes_per_type(type_code: int, flag: int, value: Value, expected: bytes | None) -> None:
    assert encode_value(type_code, flag, value) == expected


def test_float_is_float32_widened_to_float64() -> None:
    # §3.2: FLOAT is a float32 in the row model, written as float64; numpy is the independent float32.
    raw = encode_value(4, 0, 0.1)
    assert raw == struct.pack("<d", float(np.float32(0.1)))
    assert decode_value(4, 0, raw) == float(np.float32(0.1))


@pytest.mark.parametrize(("type_code", "flag", "raw", "expected"), [
    (3, 0, b"\x01", -1), (3, U, b"\x01", 1), (8, U, bytes.fromhex("ffffffffffffffffff01"), UINT64_MAX),
    (13, U, bytes.fromhex("c81f"), 2020), (247, 0, b"\x02", 2), (5, 0, struct.pack("<d", -0.5), -0.5),
    (15, 0, b"\xff", b"\xff"), (246, 0, b"1.50", "1.50"), (6, 0, b"x", None), (255, 0, b"", None),
])
def test_decode_value_per_type(type_code: int, flag: int, raw: bytes, expected: Value) -> None:
    assert decode_value(type_code, flag, raw) == expected


@pytest.mark.parametrize(("type_code", "raw"), [(3, b""), (3, b"\x01\x01"), (4, b"\x00" * 7), (5, b"\x00" * 9),
                                                 (247, b"\x80"), (13, b"\xff" * 11)])
def test_malformed_values_raise_decode_error(type_code: int, raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_value(type_code, 0, raw, 40)

