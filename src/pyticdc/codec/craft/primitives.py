"""Craft primitives (§3.1): varints, float64, chunks, and the writer and reader of them.

CraftReader is bounds-checked: every read checks the bytes left and raises only
``DecodeError("craft", reason, offset)``, a count larger than the bytes left fails before anything
is allocated, and every varint must end within 10 bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import accumulate, chain, pairwise
from typing import Final, cast

from pyticdc.codec.craft.message import (
    INT64_MAX,
    INT64_MIN,
    MASK64,
    MAX_INT32,
    MAX_VARINT_LEN,
    PROTOCOL,
    UINT64_MAX,
    fail,
)
from pyticdc.errors import DecodeError

__all__ = ["F64", "CraftReader", "CraftWriter", "uvarint_bytes", "uvarint_of", "varint_bytes", "wrap_int64"]

#: §3.1 float64: 8 bytes little-endian.
F64: Final = struct.Struct("<d")
_SMALL_UVARINTS: Final = tuple(bytes((i,)) for i in range(0x80))
# SWAR masks of the loop-free LEB128 (uvarint_bytes spreads 7-bit groups one per byte, uvarint_of
# packs them back): the continuation bits of an n-byte uvarint
# (all of them, and the ones that must be set), and the 7-bit groups as the low and high halves of
# 16-, 32-, 64- and 128-bit lanes (7|7, 14|14, 28|28, 56|56 bits).
_CONT_MASK: Final = tuple(int.from_bytes(b"\x80" * n, "little") for n in range(11))
_CONT_WANT: Final = tuple(int.from_bytes(b"\x80" * (n - 1) + b"\x00", "little") if n else 0 for n in range(11))
_LANE7: Final = int.from_bytes(b"\x7f\x00" * 5, "little")
_LANE7_HIGH: Final = _LANE7 << 7
_LANE14: Final = int.from_bytes(b"\xff\x3f\x00\x00" * 3, "little")
_LANE14_HIGH: Final = _LANE14 << 14
_LANE28: Final = int.from_bytes(b"\xff\xff\xff\x0f\x00\x00\x00\x00" * 2, "little")
_LANE28_HIGH: Final = _LANE28 << 28
_LANE56: Final = (1 << 56) - 1
_LANE56_HIGH: Final = _LANE56 << 56
#: Length n (< 64) → its one-byte zigzag varint 2n (nullable bytes chunk lengths).
_ZIGZAG_LENGTHS: Final = bytes((2 * n) & 0xFF for n in range(0x100))


def uvarint_bytes(value: int) -> bytes:
    """Protobuf LEB128 of an unsigned 64-bit integer (§3.1 "uvarint", Go ``encodeUvarint``)."""
    if 0 <= value < 0x80:
        return _SMALL_UVARINTS[value]
    if 0 < value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if not 0 <= value <= UINT64_MAX:
        raise OverflowError(f"uvarint {value} outside 0..2**64-1")
    # Loop-free: spread the 7-bit groups one per byte (lanes halved 56|56 → 28|28 → 14|14 → 7|7,
    # only as far as the size needs), then set the continuation bit of every byte but the last.
    size = (value.bit_length() + 6) // 7
    if size > 8:
        value = (value & _LANE56) | ((value & _LANE56_HIGH) << 8)
    if size > 4:
        value = (value & _LANE28) | ((value & _LANE28_HIGH) << 4)
    if size > 2:
        value = (value & _LANE14) | ((value & _LANE14_HIGH) << 2)
    value = (value & _LANE7) | ((value & _LANE7_HIGH) << 1)
    return (value | _CONT_WANT[size]).to_bytes(size, "little")


def varint_bytes(value: int) -> bytes:
    """Zigzag ``(n<<1) ^ (n>>63)`` then uvarint of a signed 64-bit integer (§3.1 "varint")."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError(f"varint {value} outside the int64 range")
    return uvarint_bytes((value << 1) ^ (value >> 63))


def wrap_int64(value: int) -> int:
    """``value`` wrapped into int64 as Go's int64 arithmetic wraps (§3.1 delta varint chunk)."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    return ((value - INT64_MIN) & MASK64) + INT64_MIN


def uvarint_of(raw: bytes) -> int:
    """The value of ``raw`` when it is exactly one uvarint by CraftReader.uvarint's rules (at most 10
    bytes, the 10th at most 1); DecodeError otherwise.

    Loop-free: the continuation bits are checked against the expected pattern in one comparison,
    then the 7-bit groups are packed pairwise (SWAR).
    """
    size = len(raw)
    if not 0 < size <= MAX_VARINT_LEN:
        raise DecodeError(PROTOCOL, "not one uvarint")
    value = int.from_bytes(raw, "little")
    if value & _CONT_MASK[size] != _CONT_WANT[size] or (size == MAX_VARINT_LEN and raw[-1] > 1):
        raise DecodeError(PROTOCOL, "not one uvarint")
    value = (value & _LANE7) | ((value >> 1) & _LANE7_HIGH)
    if size > 2:
        value = (value & _LANE14) | ((value >> 2) & _LANE14_HIGH)
        if size > 4:
            value = (value & _LANE28) | ((value >> 4) & _LANE28_HIGH)
            if size > 8:
                value = (value & _LANE56) | ((value >> 8) & _LANE56_HIGH)
    return value


class CraftWriter:
    """Appends craft primitives and chunks to a buffer; mirrors CraftReader (§3.1)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def __len__(self) -> int:
        return len(self.buf)

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return bytes(self.buf)

    def u8(self, value: int) -> None:
        """One raw byte (column group type, §3.2)."""
        self.buf.append(value)

    def raw(self, data: bytes) -> None:
        """Bytes as they are."""
        self.buf += data

    def uvarint(self, value: int) -> None:
        """§3.1 uvarint = protobuf LEB128."""
        self.buf += uvarint_bytes(value)

    def varint(self, value: int) -> None:
        """§3.1 varint = zigzag then uvarint."""
        self.buf += varint_bytes(value)

    def float64(self, value: float) -> None:
        """§3.1 float64 = 8 bytes little-endian."""
        self.buf += F64.pack(value)

    def string(self, data: bytes) -> None:
        """uvarint length then the bytes (DDL query, §3.2 ``encodeString``)."""
        self.buf += uvarint_bytes(len(data))
        self.buf += data

    def reversed_uvarint(self, value: int) -> None:
        """§3.1 reversed uvarint: the uvarint bytes in reverse order (the trailing size)."""
        self.buf += uvarint_bytes(value)[::-1]

    def uvarint_chunk(self, values: Sequence[int]) -> None:
        """§3.1 chunk of uvarints."""
        # Shortcut: every value fits one byte (type codes, small flags, ids, lengths).
        if not values or (min(values) >= 0 and max(values) < 0x80):
            self.buf += bytes(values)
        else:
            self.buf += b"".join(map(uvarint_bytes, values))

    def varint_chunk(self, values: Sequence[int]) -> None:
        """§3.1 chunk of zigzag varints."""
        if values and (min(values) < INT64_MIN or max(values) > INT64_MAX):
            raise OverflowError("varint outside the int64 range")
        self.uvarint_chunk([(v << 1) ^ (v >> 63) for v in values])

    def delta_uvarint_chunk(self, values: Sequence[int]) -> None:
        """§3.1 delta uvarint chunk: first value, then ``v[i]-v[i-1]`` mod 2**64 (commit ts)."""
        deltas = [b - a for a, b in zip(chain((0,), values), values)]
        if deltas and min(deltas) < 0:
            deltas = [d & MASK64 for d in deltas]
        self.uvarint_chunk(deltas)

    def delta_varint_chunk(self, values: Sequence[int]) -> None:
        """§3.1 delta varint chunk: first value, then ``v[i]-v[i-1]`` as Go int64 (ids, sizes)."""
        deltas = [b - a for a, b in zip(chain((0,), values), values)]
        if deltas and (min(deltas) < INT64_MIN or max(deltas) > INT64_MAX):
            deltas = [wrap_int64(d) for d in deltas]
        self.varint_chunk(deltas)

    def string_chunk(self, values: Sequence[bytes]) -> None:
        """§3.1 string chunk: all lengths as uvarint, then all bytes (term dictionary)."""
        self.uvarint_chunk([len(v) for v in values])
        self.buf += b"".join(values)

    def nullable_bytes_chunk(self, values: Sequence[bytes | None]) -> None:
        """§3.1 nullable bytes chunk: all lengths as varint (-1 = NULL), then the bytes (values)."""
        if None not in values:
            # Shortcut: no NULL and every length < 64, so each zigzag length is the byte 2n.
            present = cast("Sequence[bytes]", values)
            lengths = list(map(len, present))
            if not lengths or max(lengths) < 0x40:
                self.buf += bytes(lengths).translate(_ZIGZAG_LENGTHS)
                self.buf += b"".join(present)
                return
        self.varint_chunk([-1 if v is None else len(v) for v in values])
        self.buf += b"".join([v for v in values if v is not None])


class CraftReader:
    """Bounds-checked reader of ``buf[pos:end]`` mirroring CraftWriter (§3.1).

    Every read checks the bytes left and raises ``DecodeError("craft", reason, offset)``; a
    count larger than the bytes left is an error before anything is allocated.
    """

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        """Bytes left to read."""
        return self.end - self.pos

    def expect_end(self, what: str) -> None:
        """Fail unless every byte of the region was consumed."""
        if self.pos != self.end:
            fail(f"{self.end - self.pos} unexpected trailing bytes in {what}", self.pos)

    def u8(self) -> int:
        """One raw byte."""
        pos = self.pos
        if pos >= self.end:
            fail("buffer underflow reading a byte", pos)
        self.pos = pos + 1
        return self.buf[pos]

    def take(self, size: int) -> bytes:
        """``size`` raw bytes."""
        pos = self.pos
        if size < 0 or size > self.end - pos:
            fail(f"buffer underflow: {size} bytes wanted, {self.end - pos} left", pos)
        self.pos = pos + size
        return self.buf[pos:pos + size]

    def uvarint(self) -> int:
        """§3.1 uvarint; at most 10 bytes, the 10th at most 1 (Go ``binary.Uvarint`` overflow rule)."""
        buf = self.buf
        pos = self.pos
        end = self.end
        if pos < end and buf[pos] < 0x80:  # shortcut: one byte
            self.pos = pos + 1
            return buf[pos]
        start = pos
        result = 0
        shift = 0
        while True:
            if pos >= end:
                fail("truncated uvarint", start)
            byte = buf[pos]
            pos += 1
            if byte < 0x80:
                if pos - start == MAX_VARINT_LEN and byte > 1:
                    fail("uvarint overflows 64 bits", start)
                self.pos = pos
                return result | (byte << shift)
            if pos - start == MAX_VARINT_LEN:
                fail("uvarint longer than 10 bytes", start)
            result |= (byte & 0x7F) << shift
            shift += 7

    def varint(self) -> int:
        """§3.1 varint: uvarint then un-zigzag."""
        value = self.uvarint()
        return (value >> 1) ^ -(value & 1)

    def float64(self) -> float:
        """§3.1 float64: 8 bytes little-endian."""
        pos = self.pos
        if self.end - pos < 8:
            fail("buffer underflow reading a float64", pos)
        self.pos = pos + 8
        value: float = F64.unpack_from(self.buf, pos)[0]
        return value

    def string(self) -> bytes:
        """uvarint length (at most MaxInt32) then the bytes."""
        at = self.pos
        size = self.uvarint()
        if size > MAX_INT32:
            fail("length is greater than max int32", at)
        return self.take(size)

    def reversed_uvarint(self) -> int:
        """§3.1 reversed uvarint read backwards from ``end``; shrinks ``end`` past it."""
        buf = self.buf
        end = self.end
        result = 0
        shift = 0
        i = 0
        while True:
            at = end - 1 - i
            if at < self.pos:
                fail("truncated reversed uvarint", max(at + 1, self.pos))
            byte = buf[at]
            if byte < 0x80:
                if i == MAX_VARINT_LEN - 1 and byte > 1:
                    fail("reversed uvarint overflows 64 bits", at)
                self.end = at
                return result | (byte << shift)
            if i == MAX_VARINT_LEN - 1:
                fail("reversed uvarint longer than 10 bytes", at)
            result |= (byte & 0x7F) << shift
            shift += 7
            i += 1

    def count(self, what: str) -> int:
        """A uvarint element count; each element takes at least one byte, so it must fit what is left."""
        at = self.pos
        value = self.uvarint()
        if value > self.end - self.pos:
            fail(f"{what} count {value} exceeds the {self.end - self.pos} bytes left", at)
        return value

    def _check_count(self, count: int) -> None:
        if count < 0 or count > self.end - self.pos:
            fail(f"chunk of {count} elements exceeds the {self.end - self.pos} bytes left", self.pos)

    def uvarint_chunk(self, count: int) -> list[int]:
        """§3.1 chunk of ``count`` uvarints."""
        self._check_count(count)
        pos = self.pos
        region = self.buf[pos:pos + count]
        # Shortcut: ``count`` one-byte uvarints, read at C speed.
        if not region or max(region) < 0x80:
            self.pos = pos + count
            return list(region)
        buf = self.buf
        end = self.end
        out: list[int] = []
        append = out.append
        for _ in range(count):
            if pos < end:
                byte = buf[pos]
                if byte < 0x80:
                    append(byte)
                    pos += 1
                    continue
                if pos + 1 < end and buf[pos + 1] < 0x80:  # two bytes: type codes >= 128, flags
                    append((byte & 0x7F) | (buf[pos + 1] << 7))
                    pos += 2
                    continue
            self.pos = pos
            append(self.uvarint())
            pos = self.pos
        self.pos = pos
        return out

    def varint_chunk(self, count: int) -> list[int]:
        """§3.1 chunk of ``count`` zigzag varints."""
        return [(v >> 1) ^ -(v & 1) for v in self.uvarint_chunk(count)]

    def delta_uvarint_chunk(self, count: int) -> list[int]:
        """§3.1 delta uvarint chunk, summed mod 2**64 like Go's uint64."""
        out = list(accumulate(self.uvarint_chunk(count)))
        if out and max(out) > MASK64:
            out = [v & MASK64 for v in out]
        return out

    def delta_varint_chunk(self, count: int) -> list[int]:
        """§3.1 delta varint chunk, summed as Go int64 (wrapping)."""
        out = list(accumulate(self.varint_chunk(count)))
        if out and (min(out) < INT64_MIN or max(out) > INT64_MAX):
            out = [wrap_int64(v) for v in out]
        return out

    def string_chunk(self, count: int) -> list[bytes]:
        """§3.1 string chunk: ``count`` uvarint lengths, then the bytes."""
        at = self.pos
        lengths = self.uvarint_chunk(count)
        if any(size > MAX_INT32 for size in lengths):
            fail("length is greater than max int32", at)
        pos = self.pos
        if sum(lengths) > self.end - pos:
            fail("string chunk longer than the bytes left", at)
        buf = self.buf
        ends = list(accumulate(lengths, initial=pos))
        self.pos = ends[-1]
        return [buf[a:b] for a, b in pairwise(ends)]

    def nullable_lengths(self, count: int) -> list[int]:
        """The varint lengths of a nullable bytes chunk (-1 = NULL), checked against the bytes left."""
        at = self.pos
        lengths = self.varint_chunk(count)
        if lengths and (min(lengths) < -1 or max(lengths) > MAX_INT32):
            fail("invalid nullable length", at)
        if sum(lengths) + lengths.count(-1) > self.end - self.pos:
            fail("nullable bytes chunk longer than the bytes left", at)
        return lengths

    def nullable_bytes_chunk(self, count: int) -> list[bytes | None]:
        """§3.1 nullable bytes chunk: ``count`` varint lengths (-1 = NULL), then the bytes."""
        return self.nullable_values(self.nullable_lengths(count))[0]

    def nullable_values(self, lengths: list[int]) -> tuple[list[bytes | None], list[int]]:
        """The values of a nullable bytes chunk after its (checked) lengths, and each value's offset."""
        buf = self.buf
        pos = self.pos
        values: list[bytes | None] = []
        offsets: list[int] = []
        for size in lengths:
            offsets.append(pos)
            if size < 0:
                values.append(None)
            else:
                values.append(buf[pos:pos + size])
                pos += size
        self.pos = pos
        return values, offsets
