"""Events as stable JSON objects (``pyticdc decode --format jsonl``) and as readable text (pure, no I/O).

Every object has the same keys in the same order (:data:`FIELDS`); a key that does not apply to the
event's kind is ``null``. ``docs/event-json.md`` documents each field, the value mapping per MySQL
type and the stability promise. In short, a column value is

=================================  =============================================================
model value (:mod:`pyticdc.model`)  JSON
=================================  =============================================================
``int`` (integers, YEAR, ENUM       a JSON integer, exact (BIGINT UNSIGNED and TSOs never
index, SET/BIT bitmask)             through a float)
``float`` (FLOAT, DOUBLE)           a JSON number: the shortest text that reads back to the same
                                    double (DOUBLE) or float32 (FLOAT); NaN and ±Inf as the strings ``"NaN"``,
                                    ``"Infinity"``, ``"-Infinity"``
``str`` (DECIMAL, date/time, JSON,  the same string, as TiDB prints it
VECTOR)
``bytes`` (CHAR..BLOB)              a JSON string when the column is not binary-charset and the
                                    bytes are UTF-8, else ``{"base64": "..."}``
``None``                            ``null``
=================================  =============================================================
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping
from typing import Any, Final

import orjson

from pyticdc.codec.jsontext import shortest_repr
from pyticdc.model import (
    ActionType,
    Bootstrap,
    ColumnInfo,
    DDLEvent,
    Event,
    KafkaRecord,
    RowChange,
    TableInfo,
    TypeCode,
    Watermark,
)
from pyticdc.mysql import INTEGER_TYPES, STRING_TYPES
from pyticdc.mysql.types import column_type_name

__all__ = [
    "COLUMN_FIELDS",
    "FIELDS",
    "KINDS",
    "dumps",
    "error_to_json",
    "event_to_json",
    "event_to_text",
    "json_value",
]

#: The keys of every event object, in output order.
FIELDS: Final = (
    "kind", "source_protocol", "topic", "partition", "offset", "event_index", "kafka_timestamp", "op", "schema",
    "table", "table_id", "physical_table_id", "commit_ts", "schema_version", "handle_key_only", "columns",
    "pre_columns", "ddl_query", "ddl_type", "ddl_type_code", "table_columns", "reason", "raw_key", "raw_value",
)
#: The keys of each ``table_columns`` item, in output order.
COLUMN_FIELDS: Final = ("name", "type", "nullable", "primary_key")
#: The values of ``kind``.
KINDS: Final = ("row", "ddl", "watermark", "bootstrap", "error")

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_TEMPLATE: Final[dict[str, Any]] = dict.fromkeys(FIELDS)
# Column types whose bytes are text only if the charset says so; any other type with a bytes value
# (GEOMETRY, BIT from a lenient decoder) is binary.
_TEXT_CAPABLE: Final = STRING_TYPES | {TypeCode.ENUM, TypeCode.SET}


def _base64(data: bytes) -> dict[str, str]:
    return {"base64": base64.b64encode(data).decode("ascii")}


def _is_binary(column: ColumnInfo | None) -> bool:
    if column is None:
        return False  # schema unknown: text when the bytes are UTF-8, as for a text column
    return column.charset == "binary" or column.type_code not in _TEXT_CAPABLE


#: The largest float32; a FLOAT column value beyond it is not a float32 and prints as the float it is.
_FLOAT32_MAX = 3.4028234663852886e38


def json_value(value: Any, column: ColumnInfo | None = None) -> Any:
    """One column value in its event-JSON form (module docstring); TypeError for a value outside the model."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, bool):
        return int(value)  # TiDB has no boolean type: BOOLEAN is TINYINT(1)
    if isinstance(value, int):
        return int(value)  # an IntEnum/IntFlag prints as its number
    if isinstance(value, float):
        if math.isfinite(value):
            if column is not None and column.type_code == TypeCode.FLOAT and abs(value) <= _FLOAT32_MAX:
                # A FLOAT holds a float32: print its shortest float32 text (3.14, as TiDB and TiCDC
                # print it), not the float64 expansion of that float32 (3.140000104904175).
                return float(shortest_repr(value, 32))
            return value
        # JSON has no NaN/Infinity literals; these are the names JavaScript and Jackson read.
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if not _is_binary(column):
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        return _base64(data)
    # Not model values, but a caller may hand them over: render them as the model would hold them.
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    name = f"column {column.name!r}: " if column is not None else ""
    raise TypeError(f"{name}no event-JSON form for a {type(value).__name__} value")


def _image(row: Mapping[str, Any] | None, table: TableInfo | None) -> dict[str, Any] | None:
    if row is None:
        return None
    columns = table.column_by_name if table is not None else {}
    return {name: json_value(value, columns.get(name)) for name, value in row.items()}


def _type_text(column: ColumnInfo) -> str:
    if column.type_desc:
        return column.type_desc
    text = column_type_name(column) or f"type{column.type_code}"
    if column.elems is not None:
        text += "(" + ",".join("'" + e.replace("'", "''") + "'" for e in column.elems) + ")"
    if column.is_unsigned and column.type_code in INTEGER_TYPES | {TypeCode.FLOAT, TypeCode.DOUBLE,
                                                                    TypeCode.NEWDECIMAL}:
        text += " unsigned"
    return text


def _table_columns(table: TableInfo | None) -> list[dict[str, Any]] | None:
    if table is None:
        return None
    primary = set(table.primary_key_columns)
    for index in table.indexes:
        if index.primary:
            primary.update(index.columns)
    return [{"name": c.name, "type": _type_text(c), "nullable": bool(c.nullable), "primary_key": c.name in primary}
            for c in table.columns]


def _ddl_name(code: int) -> str | None:
    try:
        return ActionType(code).name.lower()
    except ValueError:
        return None


def _where(out: dict[str, Any], record: KafkaRecord | None, index: int) -> None:
    if record is None:
        return
    out["topic"] = record.topic
    out["partition"] = record.partition
    out["offset"] = record.offset
    out["event_index"] = index
    if record.timestamp_ms:
        moment = _EPOCH + dt.timedelta(milliseconds=record.timestamp_ms)
        out["kafka_timestamp"] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_to_json(event: Event, *, source_protocol: str, record: KafkaRecord | None = None,
                  index: int = 0) -> dict[str, Any]:
    """The event-JSON object of a model event (``record``: the Kafka record it came in, ``index``: its position
    among that record's events); TypeError for a column value outside the model."""
    out = dict(_TEMPLATE)
    out["source_protocol"] = source_protocol
    _where(out, record, index)
    if isinstance(event, RowChange):
        table = event.table_info
        out.update(
            kind="row", op=event.op.value, schema=event.schema, table=event.table, table_id=event.table_id or None,
            physical_table_id=event.physical_table_id or event.table_id or None, commit_ts=event.commit_ts,
            schema_version=event.schema_version or (table.schema_version if table is not None else 0) or None,
            handle_key_only=event.handle_key_only, columns=_image(event.columns, table),
            pre_columns=_image(event.pre_columns, table))
    elif isinstance(event, DDLEvent):
        table = event.table_info
        out.update(
            kind="ddl", schema=event.schema or None, table=event.table or None, commit_ts=event.commit_ts,
            table_id=(table.table_id or None) if table is not None else None,
            schema_version=(table.schema_version or None) if table is not None else None,
            ddl_query=event.query, ddl_type=_ddl_name(event.ddl_type), ddl_type_code=int(event.ddl_type),
            table_columns=_table_columns(table))
    elif isinstance(event, Watermark):
        out.update(kind="watermark", commit_ts=event.resolved_ts)
    elif isinstance(event, Bootstrap):
        table = event.table_info
        out.update(kind="bootstrap", schema=table.schema, table=table.table, table_id=table.table_id or None,
                   schema_version=table.schema_version or None,
                   table_columns=_table_columns(table))
    else:
        raise TypeError(f"not an event: {type(event).__name__}")
    return out


def error_to_json(record: KafkaRecord, reason: str, *, source_protocol: str) -> dict[str, Any]:
    """The ``kind: "error"`` object of a record that did not decode: where it is, why, and its raw bytes."""
    out = dict(_TEMPLATE)
    out.update(kind="error", source_protocol=source_protocol)
    _where(out, record, 0)
    out["reason"] = reason
    out["raw_key"] = None if record.key is None else _base64(record.key)
    out["raw_value"] = None if record.value is None else _base64(record.value)
    return out


def dumps(obj: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON of an event object (keys in their given order), without a newline."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        # orjson stops at 64-bit integers; a lenient decoder may hand over a larger one. Python's json
        # writes any integer exactly (floats may then print differently, e.g. 1e-07).
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


# --------------------------------------------------------------------------- text
def _text(value: Any) -> str:
    # Each value as its JSON literal (so "1" and 1 differ), NULL for null, base64 values as base64:"...".
    if value is None:
        return "NULL"
    if isinstance(value, dict) and set(value) == {"base64"}:
        return "base64:" + dumps(value["base64"]).decode()
    return dumps(value).decode()


def _image_text(post: Mapping[str, Any] | None, pre: Mapping[str, Any] | None) -> str:
    if post is not None and pre is not None:
        parts = []
        for name, value in post.items():
            if name in pre and pre[name] != value:
                parts.append(f"{name}={_text(pre[name])}->{_text(value)}")
            else:
                parts.append(f"{name}={_text(value)}")
        parts.extend(f"{name}={_text(value)}->(absent)" for name, value in pre.items() if name not in post)
        return " ".join(parts)
    image = post if post is not None else pre or {}
    return " ".join(f"{name}={_text(value)}" for name, value in image.items())


def event_to_text(obj: Mapping[str, Any]) -> str:
    """One readable line for an event-JSON object (:func:`event_to_json`, :func:`error_to_json`)."""
    # A raw message file has no Kafka partition (-1): FILE@INDEX, else TOPIC/PARTITION@OFFSET; "-" if unknown.
    partition = "" if obj["partition"] == -1 else f"/{obj['partition']}"
    where = "-" if obj["topic"] is None else f"{obj['topic']}{partition}@{obj['offset']}"
    if obj["event_index"]:
        where += f"#{obj['event_index']}"
    kind = obj["kind"]
    if kind == "error":
        return f"{where} ERROR {obj['reason']}"
    if kind == "watermark":
        return f"{where} watermark resolved_ts={obj['commit_ts']}"
    table = f"{obj['schema']}.{obj['table']}" if obj["table"] else f"{obj['schema']}"
    columns = obj["table_columns"]
    shape = "" if columns is None else " columns=(" + ", ".join(f"{c['name']} {c['type']}" for c in columns) + ")"
    if kind == "ddl":
        name = obj["ddl_type"] or "unknown"
        return (f"{where} ddl {table} commit_ts={obj['commit_ts']} type={name}({obj['ddl_type_code']}) "
                f"{obj['ddl_query']}")
    if kind == "bootstrap":
        return f"{where} bootstrap {table} schema_version={obj['schema_version']}{shape}"
    flag = " handle-key-only" if obj["handle_key_only"] else ""
    return (f"{where} {obj['op']} {table} commit_ts={obj['commit_ts']}{flag} "
            + _image_text(obj["columns"], obj["pre_columns"])).rstrip()
