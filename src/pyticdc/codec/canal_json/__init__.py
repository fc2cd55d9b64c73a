"""Canal-JSON, TiCDC's flavour of Alibaba Canal's flat JSON message (ticdc-reference.md §4).

One JSON object per row change (Kafka key nil) whose column values are all JSON strings, with
``sqlType`` (java.sql types) and ``mysqlType`` (MySQL type text) per column, ``old`` and ``data``
images, and, with ``enable-tidb-extension``, a ``_tidb`` object carrying the exact commit ts,
watermarks and large-message handling; DDL and watermark messages share the envelope. The
decoder also reads Alibaba Canal, Flink and Paimon messages and older TiCDC versions.
``message`` is the wire format, ``values`` the value texts, ``encoder``/``decoder`` the codec,
``fastpath`` the typed decode, ``tolerant`` the reading of other producers.
"""

from __future__ import annotations

from pyticdc.codec.canal_json.decoder import Decoder, decode
from pyticdc.codec.canal_json.encoder import Encoder, encode
from pyticdc.codec.canal_json.explanation import explain
from pyticdc.codec.canal_json.message import OPTIONS, PROTOCOL

__all__ = ["OPTIONS", "PROTOCOL", "Decoder", "Encoder", "decode", "encode", "explain"]
