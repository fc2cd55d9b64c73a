"""pyticdc: TiCDC's Kafka protocols (Open, Craft, Canal-JSON, Debezium, Simple) for Python and PySpark."""

from __future__ import annotations

from pyticdc.codec import (
    PROTOCOLS,
    CodecOptions,
    Message,
    decode,
    encode,
    make_decoder,
    make_encoder,
)
from pyticdc.errors import ConfigError, DecodeError, EncodeError, PyticdcError
from pyticdc.model import (
    ActionType,
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Value,
    Watermark,
)

__version__ = "0.1.0"

__all__ = [
    "PROTOCOLS",
    "ActionType",
    "Bootstrap",
    "CodecOptions",
    "ColumnFlag",
    "ColumnInfo",
    "ConfigError",
    "DDLEvent",
    "DecodeError",
    "EncodeError",
    "Event",
    "IndexInfo",
    "KafkaRecord",
    "Message",
    "Op",
    "PyticdcError",
    "Row",
    "RowChange",
    "TableInfo",
    "TypeCode",
    "Value",
    "Watermark",
    "__version__",
    "decode",
    "encode",
    "make_decoder",
    "make_encoder",
]
