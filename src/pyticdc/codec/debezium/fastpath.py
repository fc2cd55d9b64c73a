"""The Debezium fast path: the JsonConverter wrapper split without parsing its schema per message.

TiCDC (and the Debezium connector with ``schemas.enable``) wraps every envelope as ``{payload,
schema}``; the schema is most of the bytes and repeats per table version. The fast path splits the
two as raw JSON (msgspec ``Raw``), parses each distinct schema text once, and lets the text name
the typed columns in the decoder's cache. Whatever else it meets (a bare envelope, a wrapper with
other keys, bytes orjson refuses, a schema that is not an object) it declines with None or one of
``_fastpath.DECLINES``; the reference path then reads the message and alone reports errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

import msgspec
import orjson

from pyticdc.codec._fastpath import DECLINES, compile_function, literal
from pyticdc.codec.debezium.message import Wrapper, key_names, load_json
from pyticdc.codec.debezium.readers import INLINE, INLINE_NAMES, Converter
from pyticdc.codec.jsontext import has_negative_zero
from pyticdc.model import Value

__all__ = ["ImageReader", "Split", "WrapperSplitter", "cached_reader", "image_reader"]

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
        # The wrapper's tail after the last schema met (value and key apart): ``,"schema":S}``, S
        # and its parsed document. A message ``{"payload":`` + P + that tail is the wrapper of P
        # and S exactly once P parses as one JSON value (S was read when first met), so a topic's
        # messages skip the scan of the schema (most of their bytes) and its hashing per message.
        self._tail: tuple[bytes, bytes, Any] = (b"", b"", None)
        self._key_tail: bytes = b""

    def split(self, raw: bytes, raw_key: bytes | None) -> Split | None:
        """The parts of a wrapped message; None (or a ``DECLINES`` error) for anything else."""
        tail, schema_raw, schema = self._tail
        cut = len(raw) - len(tail)
        if tail and cut > _HEAD_LENGTH and raw.endswith(tail) and raw.startswith(_HEAD):
            payload_raw = raw[_HEAD_LENGTH:cut]
        else:
            wrapped = _WRAPPER.decode(raw)
            payload_raw = bytes(wrapped.payload)
            schema_raw = bytes(wrapped.schema)
            schema = self._schema_doc(schema_raw)
            if schema is _NOT_AN_OBJECT:
                return None
            self._tail = (b',"schema":' + schema_raw + b"}", schema_raw, schema)
        # orjson reads the number -0 as the integer 0: the reference path keeps its sign. Only the
        # payload is searched here (the schema, most of the bytes, once when first parsed).
        if b"-0" in payload_raw and has_negative_zero(payload_raw):
            return None
        payload = orjson.loads(payload_raw)
        if not isinstance(payload, dict):
            return None
        return Split(payload, schema, schema_raw if schema is not None else None, self._key_names(raw_key))

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

    def _key_names(self, raw_key: bytes | None) -> set[str]:
        """The column names of a Kafka key (wrapped or not); empty if there is none or it is not an object."""
        if raw_key is None:
            return set()
        tail = self._key_tail
        cut = len(raw_key) - len(tail)
        try:
            if tail and cut > _HEAD_LENGTH and raw_key.endswith(tail) and raw_key.startswith(_HEAD):
                # As for values: the key's schema is only JSON to skip (parsed by neither path).
                payload = orjson.loads(raw_key[_HEAD_LENGTH:cut])
            else:
                wrapped = _WRAPPER.decode(raw_key)
                payload = orjson.loads(memoryview(wrapped.payload))
                self._key_tail = b',"schema":' + bytes(wrapped.schema) + b"}"
        except DECLINES:
            payload = None  # not a wrapper, or not JSON orjson reads: the general reading says which
        if isinstance(payload, dict):
            return set(payload)
        return key_names(load_json(raw_key, "key"))


_HEAD: Final = b'{"payload":'
_HEAD_LENGTH: Final = len(_HEAD)


#: Converts one row image whose keys are exactly its columns → the model values; None (or one of
#: ``DECLINES``) for anything else, which the reference conversion then reads and judges.
ImageReader = Callable[[dict[str, Any]], "dict[str, Value] | None"]
# By id of a schema's converters (kept alive in the entry, so an id is not reused): the names the
# reader was made for and the reader.
_READERS: Final[dict[int, tuple[dict[str, Converter], tuple[str, ...], ImageReader]]] = {}
# The generated code by (names, each column's inline expression or None): a function taking the
# converters and returning the reader, so a new decoder (new converters) compiles nothing.
_CODE: Final[dict[tuple[tuple[str, ...], tuple[str | None, ...]], Callable[..., ImageReader]]] = {}


def cached_reader(converters: dict[str, Converter], names: tuple[str, ...]) -> ImageReader | None:
    """The reader ``image_reader`` made for these converters and names, if it made one."""
    entry = _READERS.get(id(converters))
    if entry is not None and entry[0] is converters and entry[1] == names:
        return entry[2]
    return None


def image_reader(converters: dict[str, Converter], names: tuple[str, ...]) -> ImageReader:
    """The generated reader of images with the keys ``names``, each converted by its converter.

    One straight line per column: a null stays None, a converter with an ``INLINE`` expression has
    its common case inline, every other value is its converter's call (the JSON path left empty: a
    DecodeError declines, and the reference conversion raises it again with its path).
    """
    entry = _READERS.get(id(converters))
    if entry is not None and entry[0] is converters and entry[1] == names:
        return entry[2]
    convert = [converters[name] for name in names]
    inlines = tuple(INLINE.get(c) for c in convert)
    make = _CODE.get((names, inlines))
    if make is None:
        arguments = "".join(f"c{i}, " for i in range(len(names)))
        lines = [f"def make({arguments}):", "    def read(img):", f"        if len(img) != {len(names)}:",
                 "            return None"]
        for i, name in enumerate(names):
            lines += [f"        v = img[{literal(name)}]", "        if v is None:", f"            x{i} = None",
                      "        else:"]
            if inlines[i] is None:
                lines.append(f"            x{i} = c{i}(v, '')")
            else:
                lines += [f"            x{i} = {inlines[i]}", f"            if x{i} is None:",
                          f"                x{i} = c{i}(v, '')"]
        lines += ["        return {" + ", ".join(f"{literal(name)}: x{i}" for i, name in enumerate(names)) + "}",
                  "    return read"]
        make = compile_function("\n".join(lines), "make", dict(INLINE_NAMES))
        if len(_CODE) >= 256:
            _CODE.clear()
        _CODE[names, inlines] = make
    reader: ImageReader = make(*convert)
    if len(_READERS) >= 1024:
        _READERS.clear()
    _READERS[id(converters)] = (converters, names, reader)
    return reader
