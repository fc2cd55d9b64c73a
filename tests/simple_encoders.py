"""Simple encoders for fast-equals-reference tests: the fast writer switched off, and outcomes to compare."""

from __future__ import annotations

from pyticdc.codec import simple
from pyticdc.codec.base import Message
from pyticdc.errors import EncodeError
from pyticdc.model import Event, RowChange

__all__ = ["ReferenceEncoder", "encoded"]


class ReferenceEncoder(simple.Encoder):
    """A Simple encoder taking every row through the general path (no per-table fast writer)."""

    def _fast_json_message(self, row: RowChange) -> Message | None:
        return None


def encoded(encoder: simple.Encoder, events: list[Event]) -> list[Message] | str:
    """The messages of ``events``, or the EncodeError's text: what two encoders must agree on."""
    try:
        return encoder.encode(events)
    except EncodeError as exc:
        return f"EncodeError: {exc}"
