"""The Open Protocol wire format: constants, key/value structs, batch framing (ticdc-reference.md §2.1-§2.4).

A Kafka message frames one or more events (§2.1)::

    key   = u64be(1) ‖ { u64be(len(key_i))   ‖ key_i   }
    value =            { u64be(len(value_i)) ‖ value_i }

Each ``key_i`` is the ``MessageKey`` JSON (``ts,scm,tbl,rid,ptn,t,ohk,ccl``, §2.2) and each
``value_i`` the row JSON ``{"u","p","d"}`` (§2.3), the DDL JSON ``{"q","t"}``, or nothing for a
resolved event. Both are Go ``encoding/json`` output, reproduced byte for byte.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any, Final, NamedTuple, NoReturn

import msgspec

from pyticdc.codec.jsontext import go_json_quote, go_string, has_negative_zero, loads_keeping_negative_zero
from pyticdc.errors import DecodeError, EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Op, TableInfo

__all__ = [
    "MESSAGE_TYPE_DDL",
    "MESSAGE_TYPE_NAMES",
    "MESSAGE_TYPE_RESOLVED",
    "MESSAGE_TYPE_ROW",
    "OPTIONS",
    "PROTOCOL",
    "VERSION",
]

#: TiCDC's protocol name.
PROTOCOL: Final = "open-protocol"
#: Options TiCDC's open encoder reads (``common.Config``; §2.3, §2.4, §8).
OPTIONS: Final = frozenset({
    "max_message_bytes",
    "max_batch_size",
    "only_output_updated_columns",
    "delete_only_output_handle_key_columns",
    "open_output_old_value",
    "large_message_handle_option",
    "large_message_handle_compression",
    "claim_check_storage_uri",
    "claim_check_raw_value",
})
#: ``codec.BatchVersion1``: the u64 at the start of every key (§2.1).
VERSION: Final = 1
#: ``model.MessageType`` values of the key's ``t`` (§2.2).
MESSAGE_TYPE_ROW: Final = 1
MESSAGE_TYPE_DDL: Final = 2
MESSAGE_TYPE_RESOLVED: Final = 3
#: The message types by name, as ``explain`` reports them.
MESSAGE_TYPE_NAMES: Final[dict[int, str]] = {
    MESSAGE_TYPE_ROW: "row", MESSAGE_TYPE_DDL: "ddl", MESSAGE_TYPE_RESOLVED: "resolved",
}

U64: Final = struct.Struct(">Q")
VERSION_HEAD: Final = U64.pack(VERSION)
ZERO_LENGTH: Final = U64.pack(0)
#: The length prefixes of payloads shorter than 4 KiB, prebuilt: a tuple index is cheaper than a pack.
LENGTH_PREFIXES: Final = tuple(U64.pack(n) for n in range(4096))
#: ``common.MaxRecordOverhead`` (§1.4).
RECORD_OVERHEAD: Final = 36
#: Per-event framing counted by the single-message size check: two length prefixes + version (§2.4).
SINGLE_FRAMING: Final = 16 + 8
MAX_U64: Final = (1 << 64) - 1
MIN_I64: Final = -(1 << 63)
MAX_I64: Final = (1 << 63) - 1
HANDLE: Final = int(ColumnFlag.HANDLE_KEY)
BINARY: Final = int(ColumnFlag.BINARY)
UNSIGNED: Final = int(ColumnFlag.UNSIGNED)
NULLABLE: Final = int(ColumnFlag.NULLABLE)


def fail(reason: str, at: int | str | None = None) -> NoReturn:
    """Raise the Open Protocol's DecodeError."""
    raise DecodeError(PROTOCOL, reason, at)


def encode_error(reason: str) -> NoReturn:
    """Raise the Open Protocol's EncodeError."""
    raise EncodeError(PROTOCOL, reason)


def utf8(text: str) -> bytes:
    """``text`` as the UTF-8 bytes Go writes: each lone surrogate (an invalid byte) as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # encoding/json writes U+FFFD for each invalid byte. Surrogates are never escaped, so
        # replacing them after quoting gives the same bytes as replacing them before.
        return go_string(text.encode("utf-8", "surrogatepass")).encode("utf-8")


# --------------------------------------------------------------------------- key JSON and framing
def key_json(commit_ts: int, schema: str, table: str, row_id: int, partition: int | None, message_type: int,
             only_handle_key: bool = False, claim_check_location: str = "") -> bytes:
    """Render the ``internal.MessageKey`` JSON with its omitempty fields (§2.2)."""
    if not 0 <= commit_ts <= MAX_U64:
        encode_error(f"commit_ts {commit_ts} is not a uint64")
    parts = ['{"ts":', str(commit_ts)]
    if schema:
        parts += [',"scm":', go_json_quote(schema)]
    if table:
        parts += [',"tbl":', go_json_quote(table)]
    if row_id:
        if not MIN_I64 <= row_id <= MAX_I64:
            encode_error(f"row_id {row_id} is not an int64")
        parts += [',"rid":', str(row_id)]
    if partition is not None:  # a *int64: present even when 0
        parts += [',"ptn":', str(partition)]
    parts += [',"t":', str(message_type)]
    if only_handle_key:
        parts.append(',"ohk":true')
    if claim_check_location:
        parts += [',"ccl":', go_json_quote(claim_check_location)]
    parts.append("}")
    return utf8("".join(parts))


def frame_single(key: bytes, value: bytes) -> tuple[bytes, bytes]:
    """Frame a one-event message: the shape claim-check stores (``newMessage``, §8)."""
    return VERSION_HEAD + U64.pack(len(key)) + key, U64.pack(len(value)) + value


# --------------------------------------------------------------------------- wire structs (decoding)
class WireKey(msgspec.Struct):
    """``internal.MessageKey`` (§2.2)."""

    ts: int = 0  # uint64: msgspec bounds stop at int64, so checked in read_key
    scm: str = ""
    tbl: str = ""
    rid: Annotated[int, msgspec.Meta(ge=MIN_I64, le=MAX_I64)] = 0
    ptn: Annotated[int, msgspec.Meta(ge=MIN_I64, le=MAX_I64)] | None = None
    t: int = 0
    ohk: bool = False
    ccl: str = ""


class WireColumn(msgspec.Struct):
    """``internal.Column``; ``f`` is absent in the legacy (v4.x) form."""

    t: Annotated[int, msgspec.Meta(ge=0, le=255)] = 0
    h: bool | None = None
    f: int | None = None  # uint64 ColumnFlagType: checked by the decoder
    v: Any = None


class WireRow(msgspec.Struct):
    """``messageRow`` (§2.3)."""

    u: dict[str, WireColumn] | None = None
    p: dict[str, WireColumn] | None = None
    d: dict[str, WireColumn] | None = None


class WireDDL(msgspec.Struct):
    """``messageDDL``."""

    q: str = ""
    t: Annotated[int, msgspec.Meta(ge=0, le=255)] = 0


KEY_DECODER: Final = msgspec.json.Decoder(WireKey)
ROW_DECODER: Final = msgspec.json.Decoder(WireRow)
DDL_DECODER: Final = msgspec.json.Decoder(WireDDL)
ANY_DECODER: Final = msgspec.json.Decoder()
_AT_PATH: Final = re.compile(r" - at `(\$[^`]*)`$")


def read_json(decoder: msgspec.json.Decoder[Any], data: bytes, what: str) -> Any:
    """Decode one JSON payload as Go's encoding/json would accept it; DecodeError otherwise."""
    try:
        try:
            result = decoder.decode(data)
        except UnicodeDecodeError:
            # encoding/json reads each byte of invalid UTF-8 in a string as U+FFFD; outside
            # strings such bytes stay a syntax error after the replacement too.
            data = go_string(data).encode("utf-8")
            result = decoder.decode(data)
        if decoder is ROW_DECODER and has_negative_zero(data):
            # A FLOAT/DOUBLE -0.0 is written "-0", which msgspec reads as the integer 0: read it again
            # keeping the sign, as strconv.ParseFloat does (msgspec already accepted the document).
            try:
                return msgspec.convert(loads_keeping_negative_zero(data), WireRow)
            except (ValueError, RecursionError):
                return result
        return result
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = _AT_PATH.search(message)
        path = match.group(1) if match else "$"
        fail(f"{what}: {message[:match.start()] if match else message}", path)
    except msgspec.DecodeError as exc:
        fail(f"{what}: {exc}", "$")
    except RecursionError:
        fail(f"{what}: JSON nested too deeply", "$")


def read_key(data: bytes, what: str) -> WireKey:
    """Decode one ``MessageKey`` JSON, its ``ts`` checked to be a uint64."""
    wire: WireKey = read_json(KEY_DECODER, data, what)
    if not 0 <= wire.ts <= MAX_U64:
        fail(f"{what}: ts {wire.ts} is not a uint64", "$.ts")
    return wire


class Frame(NamedTuple):
    """One length-prefixed payload and the offset of its prefix."""

    offset: int
    data: bytes


def frames(buffer: bytes, start: int, what: str) -> list[Frame]:
    """Split the length-prefixed payloads of ``buffer`` from ``start``; every prefix must fit."""
    found = []
    position = start
    size = len(buffer)
    while position < size:
        if position + 8 > size:
            fail(f"{what}: truncated length prefix ({size - position} of 8 bytes)", position)
        (length,) = U64.unpack_from(buffer, position)
        if length > size - position - 8:
            fail(f"{what}: length {length} runs past the end ({size - position - 8} bytes left)", position)
        found.append(Frame(position, buffer[position + 8:position + 8 + length]))
        position += 8 + length
    return found


def key_frames(key: bytes | None) -> list[Frame]:
    """Check the version header of a Kafka key and split its key frames."""
    if key is None:
        fail("the Kafka key is missing (Open Protocol keys carry the events)")
    if len(key) < 8:
        fail(f"key: truncated version header ({len(key)} of 8 bytes)", 0)
    (version,) = U64.unpack_from(key, 0)
    if version != VERSION:
        fail(f"key: unexpected format version {version} (expected {VERSION})", 0)
    return frames(key, 8, "key")


def as_bytes(data: bytes | bytearray | memoryview | None) -> bytes | None:
    """``data`` as bytes (None stays None)."""
    return None if data is None else bytes(data)


# --------------------------------------------------------------------------- the table the wire carries
@lru_cache(maxsize=16384)
def _column_info(name: str, type_code: int, flags: int) -> ColumnInfo:
    binary = bool(flags & BINARY)
    return ColumnInfo(
        name=name, type_code=type_code, flags=flags,
        charset="binary" if binary else "utf8mb4", collation="binary" if binary else "utf8mb4_bin",
        unsigned=bool(flags & UNSIGNED), nullable=bool(flags & NULLABLE),
    )


@lru_cache(maxsize=4096)
def table_info(schema: str, table: str, is_partition: bool, columns: tuple[tuple[str, int, int], ...]) -> TableInfo:
    """Build the TableInfo the Open wire carries: names, type codes and flags (cached per shape)."""
    unique: dict[str, tuple[str, int, int]] = {}
    for column in columns:
        unique.setdefault(column[0], column)
    ordered = sorted(unique.values(), key=lambda c: c[0])
    return TableInfo(schema=schema, table=table, is_partition=is_partition,
                     columns=tuple(_column_info(*c) for c in ordered))


def op_of(u: bool, p: bool, d: bool) -> Op:
    """The operation ``msgToRowChange`` reads from which images are present."""
    # "d" makes a delete; otherwise "u" are the columns and "p" the pre-image, so an update
    # without "p" (old value off, or nothing changed) reads back as an insert.
    if d:
        return Op.DELETE
    if u and p:
        return Op.UPDATE
    if p:
        return Op.DELETE
    return Op.INSERT


def only_handle_keys(shape: Sequence[tuple[str, int, int]]) -> bool:
    """Whether an image has handle-key columns only: what delete-only-output-handle-key-columns sends.

    The legacy docs form is the same; the bytes say so, so no decoder option is needed.
    """
    return bool(shape) and all(flags & HANDLE for _, _, flags in shape)
