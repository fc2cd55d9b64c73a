"""The Debezium message: protocol name and options, names, the envelope's fixed schemas, JSON framing.

TiCDC writes a Debezium-2.4-MySQL-shaped envelope (``source``, ``op``, ``before``/``after`` or
``ddl``/``tableChanges``) as json-iterator JSON, by default wrapped as Kafka Connect's
JsonConverter does it: ``{"payload": envelope, "schema": connect schema}`` (ticdc-reference.md §5).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

import msgspec
import orjson

from pyticdc.codec.jsontext import (
    format_float_jsoniter,
    has_negative_zero,
    jsoniter_quote,
    loads_keeping_negative_zero,
)
from pyticdc.errors import DecodeError, EncodeError

__all__ = [
    "DDL_KEY_SCHEMA",
    "DDL_VALUE_SCHEMA",
    "ENVELOPE_TAIL",
    "F32",
    "OPTIONS",
    "PROTOCOL",
    "SOURCE_SCHEMA",
    "Wrapper",
    "dump",
    "encode_error",
    "fail",
    "key_names",
    "load_json",
    "quote_text",
    "read_object",
    "row_schema",
    "sanitize_name",
    "sanitize_topic_name",
    "schema_topic_name",
    "split_envelope",
]

PROTOCOL: Final = "debezium"


#: Options TiCDC's Debezium codec reads (max-message-bytes is accepted: Debezium never checks it, §5.1).
OPTIONS: Final = frozenset({
    "enable_tidb_extension", "debezium_disable_schema", "debezium_output_old_value", "time_zone", "cluster_id",
    "large_message_handle_compression", "max_message_bytes",
    "default_table",  # pyticdc's own: the table of rows whose messages name none
})


def encode_error(reason: str) -> EncodeError:
    """An EncodeError for this protocol."""
    return EncodeError(PROTOCOL, reason)


def fail(reason: str, at: str | int | None) -> DecodeError:
    """A DecodeError of this protocol."""
    return DecodeError(PROTOCOL, reason, at)


# --------------------------------------------------------------------------- names (§5)
def _valid_first(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or c == "_"


def _valid_next(c: str) -> bool:
    return _valid_first(c) or ("0" <= c <= "9")


def _replacement(c: str) -> str:
    # TiCDC writes one "_" per UTF-8 byte of an invalid rune (common.SanitizeName). A byte that is
    # not UTF-8 (a surrogate here) is ranged over by Go as utf8.RuneError, whose encoding has 3 bytes.
    try:
        return "_" * len(c.encode("utf-8"))
    except UnicodeEncodeError:
        return "___"


@lru_cache(maxsize=4096)
def sanitize_name(name: str) -> str:
    """TiCDC ``common.SanitizeName``: Avro-safe name; invalid chars → ``_``, leading digit → ``_<digit>``."""
    out = []
    for i, c in enumerate(name):
        if i == 0 and not _valid_first(c):
            out.append("_")
            if "0" <= c <= "9":
                out.append(c)
        elif not _valid_next(c):
            out.append(_replacement(c))
        else:
            out.append(c)
    return "".join(out)


@lru_cache(maxsize=4096)
def sanitize_topic_name(name: str) -> str:
    """TiCDC ``common.SanitizeTopicName``: like ``sanitize_name`` but ``.`` is kept and digits may lead."""
    return "".join(c if (_valid_next(c) or c == ".") else _replacement(c) for c in name)


def schema_topic_name(cluster_id: str, schema: str, table: str) -> str:
    """``<cluster>.<db>.<table>`` as TiCDC's ``getSchemaTopicName`` sanitises it."""
    return f"{sanitize_name(cluster_id)}.{sanitize_name(schema)}.{sanitize_topic_name(table)}"


# --------------------------------------------------------------------------- fixed schemas
# writeSourceSchema (codec.go): the io.debezium.connector.mysql.Source struct.
SOURCE_SCHEMA: Final = (
    '{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},'
    '{"type":"string","optional":false,"field":"connector"},{"type":"string","optional":false,"field":"name"},'
    '{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,'
    '"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},'
    '"default":"false","field":"snapshot"},{"type":"string","optional":false,"field":"db"},'
    '{"type":"string","optional":true,"field":"sequence"},{"type":"string","optional":true,"field":"table"},'
    '{"type":"int64","optional":false,"field":"server_id"},{"type":"string","optional":true,"field":"gtid"},'
    '{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},'
    '{"type":"int32","optional":false,"field":"row"},{"type":"int64","optional":true,"field":"thread"},'
    '{"type":"string","optional":true,"field":"query"}],"optional":false,'
    '"name":"io.debezium.connector.mysql.Source","field":"source"}'
)
ENVELOPE_TAIL: Final = (
    ',{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},'
    '{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},'
    '{"type":"int64","optional":false,"field":"total_order"},'
    '{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block",'
    '"version":1,"field":"transaction"}]}'
)
_COLUMN_FIELDS: Final = (
    '{"field":"name","optional":false,"type":"string"},{"field":"jdbcType","optional":false,"type":"int32"},'
    '{"field":"nativeType","optional":true,"type":"int32"},{"field":"typeName","optional":false,"type":"string"},'
    '{"field":"typeExpression","optional":true,"type":"string"},'
    '{"field":"charsetName","optional":true,"type":"string"},{"field":"length","optional":true,"type":"int32"},'
    '{"field":"scale","optional":true,"type":"int32"},{"field":"position","optional":false,"type":"int32"},'
    '{"field":"optional","optional":true,"type":"boolean"},'
    '{"field":"autoIncremented","optional":true,"type":"boolean"},'
    '{"field":"generated","optional":true,"type":"boolean"},{"field":"comment","optional":true,"type":"string"},'
    '{"field":"defaultValueExpression","optional":true,"type":"string"},'
    '{"field":"enumValues","optional":true,"type":"array","items":{"type":"string","optional":false}}'
)
DDL_VALUE_SCHEMA: Final = (
    '{"optional":false,"type":"struct","version":1,"name":"io.debezium.connector.mysql.SchemaChangeValue",'
    '"fields":[' + SOURCE_SCHEMA + ',{"field":"ts_ms","optional":false,"type":"int64"},'
    '{"field":"databaseName","optional":true,"type":"string"},'
    '{"field":"schemaName","optional":true,"type":"string"},{"field":"ddl","optional":true,"type":"string"},'
    '{"field":"tableChanges","optional":false,"type":"array","items":{"name":"io.debezium.connector.schema.Change",'
    '"optional":false,"type":"struct","version":1,"fields":[{"field":"type","optional":false,"type":"string"},'
    '{"field":"id","optional":false,"type":"string"},{"field":"table","optional":true,"type":"struct",'
    '"name":"io.debezium.connector.schema.Table","version":1,"fields":['
    '{"field":"defaultCharsetName","optional":true,"type":"string"},'
    '{"field":"primaryKeyColumnNames","optional":true,"type":"array","items":{"type":"string","optional":false}},'
    '{"field":"columns","optional":false,"type":"array","items":{"name":"io.debezium.connector.schema.Column",'
    '"optional":false,"type":"struct","version":1,"fields":[' + _COLUMN_FIELDS + ']}},'
    '{"field":"comment","optional":true,"type":"string"}]}]}}]}'
)
DDL_KEY_SCHEMA: Final = (
    '{"type":"struct","name":"io.debezium.connector.mysql.SchemaChangeKey","optional":false,"version":1,'
    '"fields":[{"field":"databaseName","optional":false,"type":"string"}]}'
)


# --------------------------------------------------------------------------- JSON out
class F32(float):
    """A float json-iterator prints with float32 shortest digits (a Go ``float32``)."""

    __slots__ = ()


def quote_text(text: str) -> str:
    """A JSON string as json-iterator writes it (no HTML escaping, bytes pass through)."""
    return jsoniter_quote(text)


def dump(value: Any) -> str:
    """One wire value as json-iterator text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, F32):
        return format_float_jsoniter(value, 32)
    if isinstance(value, float):
        if 1e-6 <= abs(value) < 1e21:  # json-iterator's 'f' range (NaN, ±Inf and 0 are not in it)
            # repr is the shortest round-trip digits, as Go's; without an exponent it is Go's 'f'
            # text but for the ".0" Python keeps on an integral value.
            text = repr(value)
            if "e" not in text:
                return text[:-2] if text.endswith(".0") else text
        return format_float_jsoniter(value, 64)
    if isinstance(value, str):
        return jsoniter_quote(value)
    raise encode_error(f"unexpected wire value {value!r}")


# --------------------------------------------------------------------------- JSON in
def load_json(data: bytes, at: str) -> Any:
    """Parse JSON; raw non-UTF-8 bytes inside strings are kept (surrogateescape), big ints exact, ``-0`` -0.0."""
    if not has_negative_zero(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    # json-iterator passes raw bytes through, Go ints may exceed 64 bits and a FLOAT/DOUBLE -0.0 is
    # written "-0" (orjson reads the integer 0): the slow parser reads all three as Go does.
    try:
        text = data.decode("utf-8", "surrogateescape")
        return loads_keeping_negative_zero(text)
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON: {exc}", at) from None


class Wrapper(msgspec.Struct, forbid_unknown_fields=True):
    """JsonConverter's ``{schema, payload}`` wrapper, both left as raw JSON."""

    payload: msgspec.Raw
    schema: msgspec.Raw = msgspec.Raw(b"null")  # msgspec has no Raw | None: "no schema" reads as null


def read_object(value: Any, at: str, optional: bool = False) -> dict[str, Any] | None:
    """``value`` as an object (None if it is null and ``optional``); DecodeError otherwise."""
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise fail(f"expected an object, got {type(value).__name__}", at)
    return value


def split_envelope(doc: Any, at: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """(payload or None for a tombstone, schema or None, JSON path of the payload) of a message."""
    if doc is None:
        return None, None, at  # the JSON text ``null``: a tombstone written as a document
    if not isinstance(doc, dict):
        raise fail(f"a Debezium message is a JSON object, got {type(doc).__name__}", at)
    # JsonConverter schemas.enable=true wraps the envelope as {schema, payload} (TiCDC: payload
    # first); schemas.enable=false writes the envelope itself, which never has a ``payload`` key.
    # Unknown keys beside the two are ignored; a bare row may have a column named "payload".
    if "payload" in doc and ("schema" in doc or len(doc) == 1) and "op" not in doc and "ddl" not in doc:
        payload = read_object(doc["payload"], f"{at}.payload", optional=True)
        schema = read_object(doc.get("schema"), f"{at}.schema", optional=True)
        return payload, schema, f"{at}.payload"
    return doc, None, at


def key_names(key_doc: Any) -> set[str]:
    """The column names of a parsed Kafka key (wrapped or not); empty if it is not an object."""
    if not isinstance(key_doc, dict):
        return set()
    payload = key_doc.get("payload") if "payload" in key_doc and set(key_doc) <= {"payload", "schema"} \
        else key_doc
    return set(payload) if isinstance(payload, dict) else set()


def row_schema(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The column fields of the ``after`` (else ``before``) struct of an envelope schema."""
    if schema is None:
        return None
    fields = schema.get("fields")
    if not isinstance(fields, list):
        return None
    chosen: list[Any] | None = None
    for f in fields:
        if isinstance(f, dict) and f.get("field") in ("after", "before") and isinstance(f.get("fields"), list):
            if f.get("field") == "after" or chosen is None:
                chosen = f["fields"]
    if chosen is None:
        return None
    return [c for c in chosen if isinstance(c, dict)]
