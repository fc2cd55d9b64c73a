"""TiCDC Open Protocol (``protocol=open-protocol``): batched JSON key/value events (ticdc-reference.md §2, §8).

A Kafka key starts with the batch version and frames one ``MessageKey`` JSON per event; the value
frames the matching row JSON (``{"u","p","d"}`` images of typed column objects), DDL JSON
(``{"q","t"}``) or nothing for a resolved event. Rows of one partition share messages up to
``max-batch-size`` and ``max-message-bytes``; DDL and resolved events travel alone. Encoding is
Go ``encoding/json`` byte for byte (``encoder``); decoding is strict about the bytes
(``decoder``) yet reads what older TiCDC versions wrote (``tolerant``).
"""

from __future__ import annotations

from pyticdc.codec.open_protocol.decoder import Decoder, decode
from pyticdc.codec.open_protocol.encoder import Encoder, encode
from pyticdc.codec.open_protocol.explanation import explain
from pyticdc.codec.open_protocol.message import OPTIONS, PROTOCOL

__all__ = ["OPTIONS", "PROTOCOL", "Decoder", "Encoder", "decode", "encode", "explain"]
