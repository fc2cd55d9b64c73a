"""TiCDC's Debezium protocol (``protocol=debezium``): Debezium-2.4-MySQL-shaped JSON key and value.

Encoding follows TiCDC byte for byte (ticdc-reference.md §5); decoding reads TiCDC's output and
every real Debezium-JSON producer's (MySQL connector, Flink, Flink CDC; the tolerances are listed
in docs/protocols/debezium.md). ``Encoder.project`` returns exactly what a round trip gives back;
the format is lossy, and these are the losses (with the schema part; value table in ``_decoder``):

- NULL in a column with a default comes back as the default (TiCDC writes the default, §5.2).
- DECIMAL → float64: a DOUBLE value, or with ``enable-tidb-extension`` the float's shortest text.
- FLOAT/DOUBLE NaN and ±Inf → 0 (TiCDC's mounter replaces them before the codec, §1.1).
- DATE as days, invalid dates (``0000-00-00``) → NULL (0 → 1970-01-01 when NOT NULL), years < 100
  shifted (+2000 below 70, else +1900); DATETIME → epoch ms (fsp ≤ 3, read back with 3 digits) or
  µs (6 digits); TIME → µs (6 digits); TIMESTAMP → UTC and back into ``time-zone`` with its fsp
  digits, values below 1970-01-01 00:00:01 → the epoch.
- ENUM/SET by name: invalid values → 0; BIT(1) → 1/0; BIT(n) keeps ceil(n/8) bytes.
- BIGINT UNSIGNED max → −1 and ≥ 2^63 wrapped negative, undone only with ``tidb_type``.
- Binary strings are base64 under a ``string`` schema: decoded only with ``tidb_type``; else the
  base64 text comes back. FLOAT(M,D) is a ``double``: its float32 digits as a float64.
- Types are only as precise as the schema: TINYINT/SMALLINT → SMALLINT, MEDIUMINT/INT → INT,
  fsp/flen/defaults/comments are not carried; without a schema (``debezium-disable-schema``) only
  JSON types remain (integer → BIGINT, number → DOUBLE, string → VARCHAR bytes, bool → BIT(1);
  images that disagree: DOUBLE for integer/number, else JSON text).
- DDL: ``ddl_type`` is re-derived from the statement text; the table metadata from ``tableChanges``.
- Watermarks exist only with ``enable-tidb-extension``; unsupported DDL kinds are not sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

import msgspec
import orjson

from pyticdc.codec.base import BaseDecoder, ClaimCheckStore, Message
from pyticdc.codec.compression import decompress
from pyticdc.codec.debezium._common import PROTOCOL
from pyticdc.codec.debezium._decoder import (
    SchemaCache,
    decode_document,
    decode_payload,
    explain_document,
    key_names,
    load_json,
)
from pyticdc.codec.debezium._encoder import OPTIONS, Encoder
from pyticdc.codec.options import CodecOptions
from pyticdc.codec.timezone import load_zone
from pyticdc.errors import DecodeError
from pyticdc.model import Event

__all__ = ["OPTIONS", "PROTOCOL", "Decoder", "Encoder", "decode", "encode", "explain"]


class Decoder(BaseDecoder):
    """Reads TiCDC Debezium messages (and other producers' Debezium-JSON) into events."""

    PROTOCOL: ClassVar[str] = PROTOCOL
    OPTIONS: ClassVar[frozenset[str]] = OPTIONS

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *,
        claim_check: ClaimCheckStore | None = None, **kwargs: Any,
    ) -> None:
        super().__init__(options, claim_check=claim_check, **kwargs)
        self.zone = load_zone(self.options.time_zone)
        self._schemas: SchemaCache = {}
        self._schema_docs: dict[bytes, Any] = {}

    def _bytes(self, data: bytes, what: str) -> bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DecodeError(PROTOCOL, f"{what} is not bytes", 0)
        return decompress(self.options.large_message_handle_compression, bytes(data), PROTOCOL)

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Events of one Kafka message; a tombstone (null or empty value, JSON ``null``) carries none."""
        if value is None:
            return []
        raw = self._bytes(value, "value")
        if not raw:
            return []  # Kafka Connect writes a deleted row's tombstone as a null value; some tools as b""
        wrapped = _split_wrapper(raw)
        if wrapped is not None:
            # {payload, schema} (JsonConverter with schemas, TiCDC's default): the schema is most of the
            # bytes and repeats per table version, so it is parsed once per distinct text.
            payload = orjson_or_none(memoryview(wrapped.payload))
            if isinstance(payload, dict):
                schema_raw = bytes(wrapped.schema)
                schema = self._schema_doc(schema_raw)
                if schema is not _NOT_AN_OBJECT:
                    key_names = self._key_names(key)
                    return decode_payload(payload, schema, "$.payload", key_names, self.zone, self._schemas,
                                          schema_raw if schema is not None else None)
        key_doc = load_json(self._bytes(key, "key"), "key") if key else None
        return decode_document(load_json(raw, "$"), key_doc, self.zone, self._schemas)

    def _schema_doc(self, schema_raw: bytes) -> Any:
        """The parsed schema of a wrapper (None for ``null``); _NOT_AN_OBJECT for anything but an object."""
        if schema_raw == b"null":
            return None
        doc = self._schema_docs.get(schema_raw)
        if doc is None:
            parsed = orjson_or_none(schema_raw)
            doc = parsed if isinstance(parsed, dict) else _NOT_AN_OBJECT
            if len(self._schema_docs) >= 256:
                self._schema_docs.clear()
            self._schema_docs[schema_raw] = doc
        return doc

    def _key_names(self, key: bytes | None) -> set[str]:
        """The column names of a Kafka key (wrapped or not); empty if there is none or it is not an object."""
        if not key:
            return set()
        data = self._bytes(key, "key")
        wrapped = _split_wrapper(data)
        if wrapped is not None:
            payload = orjson_or_none(memoryview(wrapped.payload))
            if isinstance(payload, dict):
                return set(payload)
        return key_names(load_json(data, "key"))


class _Wrapper(msgspec.Struct, forbid_unknown_fields=True):
    """JsonConverter's ``{schema, payload}`` wrapper, both left as raw JSON."""

    payload: msgspec.Raw
    schema: msgspec.Raw = msgspec.Raw(b"null")  # msgspec has no Raw | None: "no schema" reads as null


_WRAPPER: Final = msgspec.json.Decoder(_Wrapper)
_NOT_AN_OBJECT: Final = object()


def _split_wrapper(data: bytes) -> _Wrapper | None:
    """The wrapper's raw parts when ``data`` is exactly ``{payload, schema}`` (or ``{payload}``), else None."""
    try:
        return _WRAPPER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError):
        return None  # not a wrapper, or not JSON: the general path says which


def orjson_or_none(data: Any) -> Any:
    """``orjson.loads`` or None when it cannot (the general path then reads the message and its errors)."""
    try:
        return orjson.loads(data)
    except (orjson.JSONDecodeError, RecursionError):
        return None


def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode events with a one-shot Encoder."""
    return Encoder(options).encode(events)


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one Kafka message with a one-shot Decoder."""
    return Decoder(options).decode(value, key)


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """The wire structure of one message: kind, op, table, columns with their schema and values."""
    if not value:
        return {"protocol": PROTOCOL, "kind": "tombstone", "key": load_json(key, "key") if key else None}
    return explain_document(load_json(bytes(value), "$"), load_json(bytes(key), "key") if key else None)
