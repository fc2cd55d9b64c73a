"""Avro binary for the Simple protocol's schema (``message.json``, reference §6.2).

The writer and reader are specialised to the one schema TiCDC ships, which this package carries
as ``pyticdc/codec/simple_message.avsc.json``; the enum symbols and union branch numbers are read
from that file at import, and its record layouts are checked against what this module writes.

Why not fastavro at run time: goavro writes a Go ``string`` as its raw bytes (invalid UTF-8
included) and fastavro can only write valid UTF-8; the specialised code also tells ``float``
from ``double`` and ``long`` from ``UnsignedBigint`` on read, reports byte offsets in every
DecodeError, and is faster. The test-suite checks both directions against
fastavro with the same schema file.
"""

from __future__ import annotations

import struct
from importlib import resources
from typing import Any, Final

import orjson

from pyticdc.codec.simple.message import PROTOCOL
from pyticdc.errors import DecodeError, EncodeError

__all__ = [
    "DDL_TYPES",
    "DML_HEAD",
    "DML_TYPES",
    "MESSAGE_BRANCH",
    "MESSAGE_HEADS",
    "MESSAGE_TYPES",
    "SCHEMA_JSON",
    "VALUE_BRANCH",
    "VALUE_BRANCH_NAMES",
    "AvroReader",
    "long_bytes",
    "write_bytes",
    "write_long",
    "write_str",
]

_NS: Final = "com.pingcap.simple.avro."

#: The schema file's text (a JSON array of 12 named types; the top-level schema is their union).
SCHEMA_JSON: Final[bytes] = (resources.files("pyticdc.codec") / "simple_message.avsc.json").read_bytes()
_SCHEMA: Final[list[dict[str, Any]]] = orjson.loads(SCHEMA_JSON)
_BY_NAME: Final = {f"{t['namespace']}.{t['name']}": t for t in _SCHEMA}


def _fields(name: str) -> dict[str, Any]:
    return {f["name"]: f["type"] for f in _BY_NAME[_NS + name]["fields"]}


def _check_layout() -> None:
    # The writer below emits fields in these orders; refuse to run against a different schema.
    expected = {
        "DataType": ["mysqlType", "charset", "collate", "length", "decimal", "elements", "unsigned", "zerofill"],
        "ColumnSchema": ["name", "dataType", "nullable", "default"],
        "IndexSchema": ["name", "unique", "primary", "nullable", "columns"],
        "TableSchema": ["database", "table", "tableID", "version", "columns", "indexes"],
        "Checksum": ["version", "corrupted", "current", "previous"],
        "Watermark": ["version", "commitTs", "buildTs"],
        "Bootstrap": ["version", "buildTs", "tableSchema"],
        "DDL": ["version", "type", "sql", "commitTs", "buildTs", "tableSchema", "preTableSchema"],
        "Timestamp": ["location", "value"],
        "UnsignedBigint": ["value"],
        "DML": ["version", "database", "table", "tableID", "type", "commitTs", "buildTs", "schemaVersion",
                "claimCheckLocation", "handleKeyOnly", "checksum", "data", "old"],
        "Message": ["type", "payload"],
    }
    for name, fields in expected.items():
        if [f["name"] for f in _BY_NAME[_NS + name]["fields"]] != fields:
            raise RuntimeError(f"simple_message.avsc.json: unexpected layout of {name}")
    payload = [b.removeprefix(_NS) for b in _fields("Message")["payload"]]
    if payload != ["Watermark", "Bootstrap", "DDL", "DML"] or MESSAGE_TYPES != ("WATERMARK", "BOOTSTRAP", "DDL", "DML"):
        raise RuntimeError("simple_message.avsc.json: unexpected Message payload union")


#: Branch of ``com.pingcap.simple.avro.Message`` in the top-level union (11 → first byte 0x16).
MESSAGE_BRANCH: Final = [f"{t['namespace']}.{t['name']}" for t in _SCHEMA].index(_NS + "Message")
MESSAGE_TYPES: Final[tuple[str, ...]] = tuple(_fields("Message")["type"]["symbols"])
DDL_TYPES: Final[tuple[str, ...]] = tuple(_fields("DDL")["type"]["symbols"])
DML_TYPES: Final[tuple[str, ...]] = tuple(_fields("DML")["type"]["symbols"])
#: Map-value union branch names in schema order (null, long, float, double, string, bytes, Timestamp, UnsignedBigint).
VALUE_BRANCH_NAMES: Final[tuple[str, ...]] = tuple(
    b.removeprefix(_NS) for b in _fields("DML")["data"][1]["values"]
)
VALUE_BRANCH: Final[dict[str, int]] = {name: i for i, name in enumerate(VALUE_BRANCH_NAMES)}
_check_layout()
#: How each message type starts: union branch, type enum, payload branch (zigzag bytes), version 1.
MESSAGE_HEADS: Final[dict[str, bytes]] = {
    name: bytes([MESSAGE_BRANCH << 1, i << 1, i << 1, 0x02]) for i, name in enumerate(MESSAGE_TYPES)
}
#: The start of every DML message TiCDC writes.
DML_HEAD: Final = MESSAGE_HEADS["DML"]

_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1


# --------------------------------------------------------------------------- writing
def write_long(out: bytearray, number: int) -> None:
    """Append an Avro ``long`` (zigzag varint); values must fit int64."""
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise EncodeError(PROTOCOL, f"value {number} does not fit an Avro long")
    zigzag = (number << 1) ^ (number >> 63)
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def long_bytes(number: int) -> bytes:
    """An Avro ``long`` as bytes."""
    out = bytearray()
    write_long(out, number)
    return bytes(out)


def write_bytes(out: bytearray, data: bytes) -> None:
    """Append Avro ``bytes`` (or a ``string`` already encoded): length then data."""
    write_long(out, len(data))
    out += data


def write_str(out: bytearray, text: str) -> None:
    """Append an Avro ``string``; lone surrogates from undecodable input go back to their bytes."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:  # a surrogate no undecodable byte stands for (U+D800..U+DC7F)
        raise EncodeError(PROTOCOL, f"text is not valid Unicode: {exc}") from None
    write_long(out, len(data))
    out += data


def write_float(out: bytearray, number: float) -> None:
    """Append an Avro ``float`` (little-endian IEEE single)."""
    out += _F32.pack(number)


def write_double(out: bytearray, number: float) -> None:
    """Append an Avro ``double`` (little-endian IEEE double)."""
    out += _F64.pack(number)


# --------------------------------------------------------------------------- reading
class AvroReader:
    """Bounds-checked reader over one message; every failure is a DecodeError at a byte offset."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def fail(self, reason: str, at: int | None = None) -> DecodeError:
        """A DecodeError at ``at`` (default: the current offset)."""
        return DecodeError(PROTOCOL, f"avro: {reason}", self.pos if at is None else at)

    def long(self) -> int:
        """Read a zigzag varint ``long`` (at most 10 bytes, must fit 64 bits)."""
        buf, pos, end = self.buf, self.pos, self.end
        start = pos
        if pos >= end:
            raise self.fail("unexpected end of data")
        byte = buf[pos]
        pos += 1
        if byte < 0x80:
            self.pos = pos
            return (byte >> 1) ^ -(byte & 1)
        result = byte & 0x7F
        shift = 7
        while byte & 0x80:
            if pos >= end:
                raise self.fail("unexpected end of data in a varint", start)
            if shift > 63:
                raise self.fail("varint longer than 10 bytes", start)
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
        if result >> 64:
            raise self.fail("varint overflows 64 bits", start)
        self.pos = pos
        return (result >> 1) ^ -(result & 1)

    def int32(self) -> int:
        """Read an Avro ``int`` (a long that must fit 32 bits)."""
        start = self.pos
        number = self.long()
        if not _INT32_MIN <= number <= _INT32_MAX:
            raise self.fail("int out of 32-bit range", start)
        return number

    def raw(self) -> bytes:
        """Read Avro ``bytes``."""
        start = self.pos
        size = self.long()
        if size < 0:
            raise self.fail("negative length", start)
        pos = self.pos
        if size > self.end - pos:
            raise self.fail(f"length {size} runs past the end", start)
        self.pos = pos + size
        return self.buf[pos:pos + size]

    def string(self) -> str:
        """Read an Avro ``string``; invalid UTF-8 (goavro writes Go strings raw) kept via surrogateescape."""
        return self.raw().decode("utf-8", "surrogateescape")

    def boolean(self) -> bool:
        """Read an Avro ``boolean`` (one byte, 0 or 1)."""
        if self.pos >= self.end:
            raise self.fail("unexpected end of data")
        byte = self.buf[self.pos]
        if byte > 1:
            raise self.fail(f"invalid boolean byte {byte:#04x}")
        self.pos += 1
        return byte == 1

    def float32(self) -> float:
        """Read an Avro ``float``."""
        if self.end - self.pos < 4:
            raise self.fail("unexpected end of data in a float")
        value: float = _F32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return value

    def float64(self) -> float:
        """Read an Avro ``double``."""
        if self.end - self.pos < 8:
            raise self.fail("unexpected end of data in a double")
        value: float = _F64.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return value

    def index(self, size: int, what: str) -> int:
        """Read an enum or union index in ``range(size)``."""
        start = self.pos
        number = self.long()
        if not 0 <= number < size:
            raise self.fail(f"{what} index {number} out of range", start)
        return number

    def block_count(self) -> int:
        """Read an array/map block header: item count (0 ends), skipping a block byte size."""
        start = self.pos
        count = self.long()
        if count < 0:
            count = -count
            if self.long() < 0:
                raise self.fail("negative block size", start)
        return count

    def strings(self) -> list[str]:
        """Read an ``array<string>``."""
        items: list[str] = []
        count = self.block_count()
        while count:
            for _ in range(count):
                items.append(self.string())
            count = self.block_count()
        return items

    def done(self) -> None:
        """Require that the whole buffer was consumed."""
        if self.pos != self.end:
            raise self.fail(f"{self.end - self.pos} trailing bytes after the message")
