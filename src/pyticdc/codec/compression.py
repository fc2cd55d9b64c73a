"""``large-message-handle-compression``: snappy (block format) and lz4 (frame format).

TiCDC compresses with klauspost ``snappy.Encode`` (block, not framed) and pierrec/lz4 v4's
frame writer (ticdc-reference.md §1.4); cramjam and lz4.frame produce the same formats. The LZ4
frame uses pierrec's ``NewWriter`` defaults (4 MiB independent blocks, content checksum, no content
size). The compressed block bytes themselves come from the Rust/C compressors, which are not
guaranteed to pick the same matches as klauspost's S2-based snappy or pierrec's Go LZ4 block encoder.
"""

from __future__ import annotations

import cramjam
import lz4.frame

from pyticdc.errors import DecodeError

__all__ = ["compress", "decompress"]


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
