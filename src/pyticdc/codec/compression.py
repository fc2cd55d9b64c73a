"""``large-message-handle-compression``: snappy (block format) and lz4 (frame format).

TiCDC compresses with klauspost ``snappy.Encode`` (block, not framed) and pierrec/lz4 v4's
frame writer (ticdc-reference.md §1.4); cramjam and lz4.frame produce the same formats. The LZ4
frame uses pierrec's ``NewWriter`` defaults (4 MiB independent blocks, content checksum, no content
size). The compressed block bytes themselves come from the Rust/C compressors, which are not
guaranteed to pick the same matches as klauspost's S2-based snappy or pierrec's Go LZ4 block encoder.
"""

from __future__ import annotations

from typing import Final

import cramjam
import lz4.frame

from pyticdc.errors import DecodeError

__all__ = ["compress", "decompress", "snappy_declared_length"]


def compress(method: str, data: bytes) -> bytes:
    """Compress ``data`` with ``method`` (none | snappy | lz4)."""
    if method == "none":
        return data
    if method == "snappy":
        return bytes(cramjam.snappy.compress_raw(data))
    if method == "lz4":
        # pierrec/lz4 v4 NewWriter defaults (DefaultBlockSizeOption=Block4Mb, DefaultChecksumOption=true,
        # independent blocks, no content size): FLG 0x64, BD 0x70, content checksum after the end mark.
        # The streaming API keeps BD at 4 MiB; liblz4's one-shot LZ4F_compressFrame would shrink it to fit.
        compressor = lz4.frame.LZ4FrameCompressor(
            block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False, content_checksum=True,
            block_checksum=False, auto_flush=False,
        )
        return bytes(compressor.begin() + compressor.compress(data) + compressor.flush())
    raise ValueError(f"unknown compression {method!r}")


#: The most a snappy block can expand: a 3-byte copy tag writes at most 64 bytes.
_SNAPPY_MAX_RATIO: Final = 22


def snappy_declared_length(data: bytes) -> int | None:
    """The uncompressed length a snappy block declares (its leading uvarint), None if it has none."""
    length = shift = 0
    for i, byte in enumerate(data[:10]):
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length if i < 5 else None  # snappy's length is a uint32: at most 5 bytes
        shift += 7
    return None


def decompress(method: str, data: bytes, protocol: str, max_bytes: int | None = None) -> bytes:
    """Undo ``compress``; corrupt input raises DecodeError for ``protocol``.

    A snappy block declares its uncompressed length up front, and the decompressor allocates it before
    reading a byte more: a length over ``max_bytes`` (max-message-bytes) that these bytes cannot expand
    to (TiCDC compresses values to fit max-message-bytes, so the plain value may be larger, but never
    more than snappy's ratio allows) is refused first. lz4 frames grow their output as they go.
    """
    if method == "none":
        return data
    if method == "snappy":
        declared = snappy_declared_length(data)
        if declared is None:
            raise DecodeError(protocol, "snappy decompression failed: no valid length header", 0)
        if max_bytes is not None and declared > max_bytes and declared > _SNAPPY_MAX_RATIO * len(data):
            raise DecodeError(protocol, f"snappy block declares {declared} bytes, over max-message-bytes "
                                        f"{max_bytes} and more than {len(data)} compressed bytes can hold", 0)
    try:
        if method == "snappy":
            return bytes(cramjam.snappy.decompress_raw(data))
        if method == "lz4":
            return bytes(lz4.frame.decompress(data))
    except Exception as exc:  # noqa: BLE001 - any library failure is bad input
        raise DecodeError(protocol, f"{method} decompression failed: {exc}", 0) from None
    raise ValueError(f"unknown compression {method!r}")
