"""``explain``: the parsed JSON of a Canal-JSON message, for inspection."""

from __future__ import annotations

from typing import Any

import orjson

from pyticdc.codec.canal_json.message import PROTOCOL, decode_error
from pyticdc.codec.compression import decompress
from pyticdc.errors import DecodeError

__all__ = ["explain"]


def _loads(value: bytes) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise decode_error(f"not JSON: {exc}", exc.pos) from None


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """The parsed JSON envelope of a message (lz4/snappy-compressed values are detected)."""
    if not value:
        raise decode_error("empty message", 0)
    data = bytes(value)
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        for method in ("lz4", "snappy"):
            try:
                return explain(decompress(method, data, PROTOCOL))
            except DecodeError:
                continue
        if b"\n" in data:
            return {"messages": [_loads(line) for line in data.split(b"\n") if line.strip()]}
        raise decode_error(f"not JSON: {exc}", exc.pos) from None
    if not isinstance(parsed, dict):
        raise decode_error("a Canal-JSON message is a JSON object", "$")
    return parsed
