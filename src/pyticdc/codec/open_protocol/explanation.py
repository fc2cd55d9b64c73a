"""``explain``: the wire structure of an Open Protocol message, for inspection."""

from __future__ import annotations

from typing import Any, Final

from pyticdc.codec.compression import decompress
from pyticdc.codec.open_protocol.message import (
    ANY_DECODER,
    MESSAGE_TYPE_NAMES,
    MESSAGE_TYPE_RESOLVED,
    PROTOCOL,
    VERSION,
    as_bytes,
    fail,
    frames,
    key_frames,
    read_json,
)
from pyticdc.errors import DecodeError

__all__ = ["explain"]

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"


def _explain_payload(data: bytes, compression: str | None, what: str, offset: int) -> tuple[Any, str]:
    method = compression
    if method is None:
        # Auto-detect: JSON starts with '{', an lz4 frame with its magic, else try snappy.
        method = "none" if data[:1] == b"{" else ("lz4" if data.startswith(_LZ4_MAGIC) else "snappy")
    try:
        plain = decompress(method, data, PROTOCOL)
    except DecodeError as exc:
        fail(f"{what}: {exc.reason}", offset)
    return read_json(ANY_DECODER, plain, what), method


def explain(value: bytes | None, key: bytes | None = None, *, compression: str | None = None) -> dict[str, Any]:
    """The wire structure of a message: per event its offsets, key JSON and value JSON.

    ``compression`` names the per-event value compression; None detects it.
    """
    key, value = as_bytes(key), as_bytes(value)
    keys = key_frames(key)
    values = frames(value, 0, "value") if value else []
    events: list[dict[str, Any]] = []
    next_value = 0
    for index, frame in enumerate(keys):
        key_json = read_json(ANY_DECODER, frame.data, f"key of event {index}")
        message_type = key_json.get("t") if isinstance(key_json, dict) else None
        if type(message_type) is not int:
            message_type = None
        entry: dict[str, Any] = {
            "index": index, "type": MESSAGE_TYPE_NAMES.get(message_type, "unknown") if message_type else "unknown",
            "key_offset": frame.offset, "key_length": len(frame.data), "key_json": key_json,
        }
        if message_type == MESSAGE_TYPE_RESOLVED:
            # Paired as Decoder._pairs does: a resolved event takes the next value if it is empty.
            if next_value < len(values) and not values[next_value].data:
                entry["value_offset"] = values[next_value].offset
                entry["value_length"] = 0
                next_value += 1
            entry["value_json"] = None
        elif next_value < len(values):
            item = values[next_value]
            next_value += 1
            entry["value_offset"] = item.offset
            entry["value_length"] = len(item.data)
            entry["value_json"], entry["compression"] = _explain_payload(
                item.data, compression, f"value of event {index}", item.offset + 8)
        else:
            entry["value_json"] = None
        events.append(entry)
    return {
        "protocol": PROTOCOL, "version": VERSION, "key_length": len(key or b""), "value_length": len(value or b""),
        "events": events, "trailing_values": len(values) - next_value,
    }

