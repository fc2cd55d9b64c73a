"""The Craft decoder: one message → its row, DDL and resolved events in order."""

from __future__ import annotations

from typing import Any

from pyticdc.codec._fastpath import speculate
from pyticdc.codec.base import BaseDecoder
from pyticdc.codec.craft.events import TableCache, wire_to_event
from pyticdc.codec.craft.fastpath import FastPath
from pyticdc.codec.craft.framing import parse
from pyticdc.codec.craft.message import OPTIONS, PROTOCOL
from pyticdc.model import Event

__all__ = ["Decoder", "decode"]


class Decoder(BaseDecoder):
    """Craft decoder: one message → its row, DDL and resolved events in order.

    Row messages take the cached fast path (fastpath.FastPath); anything it declines (DDL,
    resolved, malformed or unusual bytes) the reference path (framing.parse), which alone reports
    errors.
    """

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tables = TableCache()
        self._fast = FastPath(self._tables)

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one craft message (the key is nil and ignored); bad bytes raise DecodeError."""
        if value is None:
            return self.decode_reference(value, key)
        buf = value if type(value) is bytes else bytes(value)
        return speculate(self._fast.decode, self.decode_reference, buf)

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode on the reference path only (framing.parse, no fast-path caches): the fast path's oracle."""
        wire = parse(value)
        cache = self._tables
        return [wire_to_event(event, cache) for event in wire.events]


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one craft message with a one-shot decoder."""
    return Decoder(options).decode(value, key)
