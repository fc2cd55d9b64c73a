"""TiCDC Simple protocol, JSON and Avro (``pkg/sink/codec/simple``, reference §6, §8).

One Kafka message per event, key nil: WATERMARK, BOOTSTRAP (a table schema), DDL (the statement
with the table schema after and before) and INSERT/UPDATE/DELETE rows that carry only their
``schemaVersion``, so a consumer types them with the schema a BOOTSTRAP or DDL message brought.
``encoding-format=json`` is Go ``encoding/json`` of the ``message`` struct (field order fixed,
``data``/``old`` keys sorted); ``encoding-format=avro`` is goavro with ``message.json`` (union
branch 11, so every message starts with ``0x16``).
"""

from __future__ import annotations

from pyticdc.codec.simple.decoder import Decoder, decode, resolve_row
from pyticdc.codec.simple.encoder import Encoder, encode
from pyticdc.codec.simple.explanation import explain
from pyticdc.codec.simple.message import OPTIONS, PROTOCOL
from pyticdc.codec.simple.policy import BootstrapPolicy

__all__ = ["OPTIONS", "PROTOCOL", "BootstrapPolicy", "Decoder", "Encoder", "decode", "encode", "explain", "resolve_row"]
