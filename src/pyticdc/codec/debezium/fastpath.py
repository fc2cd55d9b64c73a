"""The Debezium fast path: the JsonConverter wrapper split without parsing its schema per message.

TiCDC (and the Debezium connector with ``schemas.enable``) wraps every envelope as ``{payload,
schema}``; the schema is most of the bytes and repeats per table version. The fast path splits the
two as raw JSON (msgspec ``Raw``), parses each distinct schema text once, and lets the text name
the typed columns in the decoder's cache. Whatever else it meets (a bare envelope, a wrapper with
other keys, bytes orjson refuses, a schema that is not an object) it declines with None or one of
``_fastpath.DECLINES``; the reference path then reads the message and alone reports errors.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec
import orjson

from pyticdc.codec._fastpath import DECLINES
from pyticdc.codec.debezium.message import Wrapper, key_names, load_json
from pyticdc.codec.jsontext import has_negative_zero

__all__ = ["Split", "WrapperSplitter"]

_WRAPPER: Final = msgspec.json.Decoder(Wrapper)
_NOT_AN_OBJECT: Final = object()
#: Distinct schema texts kept per decoder (a topic has one per table version).
_MAX_SCHEMAS: Final = 256


class Split(NamedTuple):
    """A wrapped message taken apart: the envelope, its schema and the Kafka key's column names."""

    payload: dict[str, Any]
    schema: dict[str, Any] | None
    #: The schema's JSON text, which names it in the decoder's cache (None without a schema).
    schema_key: bytes | None
    key_names: set[str]


class WrapperSplitter:
    """Splits ``{payload, schema}`` messages, parsing each distinct schema text once."""

    def __init__(self) -> None:
        self._schema_docs: dict[bytes, Any] = {}

    def split(self, raw: bytes, raw_key: bytes | None) -> Split | None:
        """The parts of a wrapped message; None (or a ``DECLINES`` error) for anything else."""
        wrapped = _WRAPPER.decode(raw)
        # orjson reads the number -0 as the integer 0: the reference path keeps its sign. Only the
        # payload is searched here (the schema, most of the bytes, once when first parsed).
        payload_raw = bytes(wrapped.payload)
        if b"-0" in payload_raw and has_negative_zero(payload_raw):
            return None
        payload = orjson.loads(payload_raw)
        if not isinstance(payload, dict):
            return None
        schema_raw = bytes(wrapped.schema)
        schema = self._schema_doc(schema_raw)
        if schema is _NOT_AN_OBJECT:
            return None
        return Split(payload, schema, schema_raw if schema is not None else None, _key_names(raw_key))

    def _schema_doc(self, schema_raw: bytes) -> Any:
        """The parsed schema (None for ``null``); _NOT_AN_OBJECT for anything but an object, or one with a -0."""
        if schema_raw == b"null":
            return None
        doc = self._schema_docs.get(schema_raw)
        if doc is None:
            parsed = orjson.loads(schema_raw)
            doc = parsed if isinstance(parsed, dict) and not has_negative_zero(schema_raw) else _NOT_AN_OBJECT
            if len(self._schema_docs) >= _MAX_SCHEMAS:
                self._schema_docs.clear()
            self._schema_docs[schema_raw] = doc
        return doc


def _key_names(raw_key: bytes | None) -> set[str]:
    """The column names of a Kafka key (wrapped or not); empty if there is none or it is not an object."""
    if raw_key is None:
        return set()
    try:
        payload = orjson.loads(memoryview(_WRAPPER.decode(raw_key).payload))
    except DECLINES:
        payload = None  # not a wrapper, or not JSON orjson reads: the general reading says which
    if isinstance(payload, dict):
        return set(payload)
    return key_names(load_json(raw_key, "key"))


