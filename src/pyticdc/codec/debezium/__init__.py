"""TiCDC's Debezium protocol (``protocol=debezium``): Debezium-2.4-MySQL-shaped JSON key and value.

One Kafka message per row change, supported DDL and (with ``enable-tidb-extension``) watermark; the
value is the Debezium envelope (``source``, ``op``, ``before``/``after`` or ``ddl``/``tableChanges``),
by default wrapped with its Kafka Connect schema as ``{payload, schema}`` (ticdc-reference.md §5).
Encoding follows TiCDC byte for byte; decoding reads TiCDC's output and every real Debezium-JSON
producer's (MySQL connector, Flink, Flink CDC, ExtractNewRecordState; docs/protocols/debezium.md).
"""

from __future__ import annotations

from pyticdc.codec.debezium.decoder import Decoder, decode
from pyticdc.codec.debezium.encoder import Encoder, encode
from pyticdc.codec.debezium.explanation import explain
from pyticdc.codec.debezium.message import OPTIONS, PROTOCOL

__all__ = ["OPTIONS", "PROTOCOL", "Decoder", "Encoder", "decode", "encode", "explain"]
