"""TiCDC Craft: the columnar binary batch protocol (ticdc-reference.md §3).

A message is ``uvarint version ‖ headers ‖ bodies ‖ term dictionary ‖ size tables ‖
reversed-uvarint(len(size tables))`` (§3.2), batching rows of one partition; the Kafka key is nil
(§1.4). This follows the docs-cn layout and the Go code (``pkg/sink/codec/craft``); the English
doc's layout is wrong (§11.2). Decoding is stricter than the Go decoder where Go would panic or
silently misread, and bad bytes raise only ``DecodeError("craft", reason, offset)``; what real
encoders wrote is accepted as is (docs/protocols/craft.md, "Tolerances"). The package follows
TiCDC's layout: ``message`` (constants and the wire model), ``primitives`` (varints and chunks),
``values``, ``framing``, ``events``, ``encoder`` with its fast ``writer``, ``decoder`` with its
``fastpath`` (and ``fastpath_image``, the generated row image readers), ``explain``.
"""

from __future__ import annotations

from pyticdc.codec.craft.decoder import Decoder, decode
from pyticdc.codec.craft.encoder import Encoder, encode
from pyticdc.codec.craft.explanation import explain
from pyticdc.codec.craft.message import OPTIONS, PROTOCOL

__all__ = ["OPTIONS", "PROTOCOL", "Decoder", "Encoder", "decode", "encode", "explain"]
