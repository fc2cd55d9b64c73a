"""The Craft message model: protocol constants and the wire structure of a message (§3.2).

A message is ``uvarint version ‖ headers ‖ bodies ‖ term dictionary ‖ size tables ‖
reversed-uvarint(len(size tables))``. ``Wire`` is that structure as the reference reader sees it,
``Group`` one column group as it is on the wire (built by the encoder too).
"""

from __future__ import annotations

from typing import Final, NamedTuple, NoReturn

from pyticdc.errors import DecodeError

__all__ = [
    "EVENT_DDL",
    "EVENT_NAMES",
    "EVENT_RESOLVED",
    "EVENT_ROW",
    "GROUP_NAMES",
    "GROUP_NEW",
    "GROUP_OLD",
    "INT64_MAX",
    "INT64_MIN",
    "MASK64",
    "MAX_INT32",
    "MAX_VARINT_LEN",
    "NULL_ID",
    "OPTIONS",
    "PROTOCOL",
    "UINT64_MAX",
    "VERSION",
    "Group",
    "Wire",
    "WireEvent",
    "fail",
]

#: TiCDC's protocol name.
PROTOCOL: Final = "craft"
#: Options TiCDC accepts for craft (``common.Config``; large-message handling is not allowed, §8).
OPTIONS: Final = frozenset({"max_message_bytes", "max_batch_size", "delete_only_output_handle_key_columns"})
#: The one craft format version (``model.go`` Version1).
VERSION: Final = 1

#: Header event types (§3.2: 1 row, 2 ddl, 3 resolved).
EVENT_ROW: Final = 1
EVENT_DDL: Final = 2
EVENT_RESOLVED: Final = 3
#: Column group types (§3.2: new 0x01, old 0x02).
GROUP_NEW: Final = 1
GROUP_OLD: Final = 2
#: Event and group type → the name ``explain`` shows.
EVENT_NAMES: Final = {EVENT_ROW: "row", EVENT_DDL: "ddl", EVENT_RESOLVED: "resolved"}
GROUP_NAMES: Final = {GROUP_NEW: "new", GROUP_OLD: "old"}

#: §3.2: -1 = null/empty schema or table, or no partition.
NULL_ID: Final = -1
MASK64: Final = (1 << 64) - 1
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
UINT64_MAX: Final = MASK64
#: Go decodeUvarintLength/decodeVarintLength reject lengths above MaxInt32.
MAX_INT32: Final = (1 << 31) - 1
#: binary.MaxVarintLen64.
MAX_VARINT_LEN: Final = 10


def fail(reason: str, at: int) -> NoReturn:
    """Raise the one craft decoding error: ``DecodeError("craft", reason, at)``."""
    raise DecodeError(PROTOCOL, reason, at)


class Group(NamedTuple):
    """One column group as it is on the wire (§3.2)."""

    group_type: int
    names: list[str]
    types: list[int]
    flags: list[int]
    values: list[bytes | None]
    #: Absolute byte offset of each value (for errors); 0 for groups built by the encoder.
    offsets: list[int]
    #: The encoder's precomputed type and flag chunks for a full image (speed only).
    blob: bytes | None = None


class WireEvent(NamedTuple):
    """One event of a message: its header fields and its body (column groups or a DDL)."""

    commit_ts: int
    event_type: int
    partition: int
    schema: str | None
    table: str | None
    groups: list[Group]
    ddl_type: int
    query: str


class Wire(NamedTuple):
    """A whole message as the reference reader splits it."""

    version: int
    size_tables: list[list[int]]
    terms: list[str]
    events: list[WireEvent]
