"""``large-message-handle-compression``: snappy (block format) and lz4 (frame format).

TiCDC compresses with klauspost ``snappy.Encode`` (block, not framed) and pierrec/lz4 v4's
frame writer (ticdc-reference.md §1.4); cramjam and lz4.frame produce the same formats.
"""

from __future__ import annotations

import cramjam
import lz4.frame

from pyticdc.model import DecodeError

__all__ = ["compress", "decompress"]


def compress(method: str, data: bytes) -> bytes:
    """Compress ``data`` with ``method`` (none | snappy | lz4)."""
    if method == "none":
        return data
    if method == "snappy":
        return bytes(cramjam.snappy.compress_raw(data))
    if method == "lz4":
        return bytes(lz4.frame.compress(data))
    raise ValueError(f"unknown compression {method!r}")


def decompress(method: str, data: bytes, protocol: str) -> bytes:
    """Undo ``compress``; corrupt input raises DecodeError for ``protocol``."""
    if method == "none":
        return data
    try:
        if method == "snappy":
            return bytes(cramjam.snappy.decompress_raw(data))
        if method == "lz4":
            return bytes(lz4.frame.decompress(data))
    except Exception as exc:  # noqa: BLE001 - any library failure is bad input
        raise DecodeError(protocol, f"{method} decompression failed: {exc}", 0) from None
    raise ValueError(f"unknown compression {method!r}")
