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
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from pyticdc.codec.jsontext import float32_round, shortest_repr
from pyticdc.errors import ChangelogError
from pyticdc.model import (
    ActionType,
    Bootstrap,
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
    Watermark,
)
from pyticdc.mysql import FRACTIONAL_TIME_TYPES, INTEGER_TYPES, STRING_TYPES
from pyticdc.mysql.types import column_type_name

__all__ = [
    "COLUMN_FIELDS",
    "FIELDS",
    "KINDS",
    "EventJsonReader",
    "ddl_type_code",
    "ddl_type_name",
    "dumps",
    "error_to_json",
    "event_to_json",
    "event_to_text",
    "json_value",
    "model_value",
    "table_from_columns",
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
    if column.type_code in FRACTIONAL_TIME_TYPES and column.decimal > 0:
        text += f"({column.decimal})"  # the fsp: what the values' digits after the point mean (read back so)
    elif column.type_code == TypeCode.BIT and column.flen > 0:
        text += f"({column.flen})"  # the width: how many bytes a protocol writes the bits in
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


def ddl_type_name(code: int) -> str | None:
    """The ``ddl_type`` of a TiDB ActionType code: its name in lower case (``create_table``); None if unknown."""
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
            ddl_query=event.query, ddl_type=ddl_type_name(event.ddl_type), ddl_type_code=int(event.ddl_type),
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
        pass
    # A string that is not UTF-8 (a decoder keeps invalid UTF-8 bytes as lone surrogates) has no JSON
    # text: a column value becomes {"base64": its bytes}, any other string gets U+FFFD in their place.
    clean = _utf8(obj)
    try:
        return orjson.dumps(clean)
    except TypeError:
        # orjson stops at 64-bit integers; a lenient decoder may hand over a larger one. Python's json
        # writes any integer exactly (floats may then print differently, e.g. 1e-07).
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


_IMAGES: Final = frozenset({"columns", "pre_columns"})


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _original_bytes(text: str) -> bytes:
    """The bytes a string with lone surrogates was read from (surrogateescape), else its CESU-8-like form."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")  # a lone surrogate escape ("\ud800") in the JSON read


def _replaced(text: str) -> str:
    return text if _is_utf8(text) else _original_bytes(text).decode("utf-8", "replace")


def _utf8(obj: Any, image: bool = False) -> Any:
    """``obj`` with every string UTF-8: column values of images as base64, other strings with U+FFFD."""
    if isinstance(obj, str):
        if _is_utf8(obj):
            return obj
        return _base64(_original_bytes(obj)) if image else _replaced(obj)
    if isinstance(obj, Mapping):
        return {(_replaced(k) if isinstance(k, str) else k): _utf8(v, image or k in _IMAGES)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_utf8(v, image) for v in obj]
    return obj


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
    obj = _utf8(obj)  # the line is written as UTF-8: no lone surrogates (see dumps)
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


# --------------------------------------------------------------------------- reading back
def ddl_type_code(obj: Mapping[str, Any]) -> int:
    """The ActionType code of a DDL object: ``ddl_type_code``, else ``ddl_type`` as a code or a name; 0 unknown."""
    code = obj.get("ddl_type_code")
    if code is None:
        code = obj.get("ddl_type")
    if isinstance(code, str) and not code.isdigit():
        member = ActionType.__members__.get(code.upper())
        return int(member) if member is not None else 0
    try:
        return int(code or 0)
    except (TypeError, ValueError):
        return 0


def _column_from_text(item: Mapping[str, Any], where: str) -> ColumnInfo:
    from pyticdc.mysql.types import parse_column_type

    name, text = item.get("name"), item.get("type")
    if not isinstance(name, str) or not isinstance(text, str):
        raise ChangelogError(f"{where}: a table_columns item needs a name and a type, got {dict(item)!r:.80}")
    parsed = parse_column_type(text)
    text_charset = parsed.type_code in _TEXT_CAPABLE and not parsed.binary
    return ColumnInfo(name=name, type_code=parsed.type_code, charset="utf8mb4" if text_charset else "binary",
                      collation="utf8mb4_bin" if text_charset else "binary", flen=parsed.flen,
                      decimal=parsed.decimal, elems=parsed.elems, unsigned=parsed.unsigned, zerofill=parsed.zerofill,
                      nullable=bool(item.get("nullable", True)), type_desc=text)


def table_from_columns(schema: str, table: str, items: Sequence[Mapping[str, Any]], *, table_id: int = 0,
                       schema_version: int = 0, where: str = "event") -> TableInfo:
    """The TableInfo an event object's ``table_columns`` describe (types parsed, primary key as its index)."""
    from pyticdc.mysql.flags import table_info_with_flags

    columns = [_column_from_text(item, where) for item in items]
    primary = tuple(item["name"] for item in items if item.get("primary_key"))
    indexes = [IndexInfo(name="PRIMARY", columns=primary, primary=True)] if primary else []
    by_name = {c.name: c for c in columns}
    pk_is_handle = len(primary) == 1 and by_name[primary[0]].type_code in INTEGER_TYPES
    return table_info_with_flags(schema, table, table_id, schema_version, columns, indexes, pk_is_handle)


def _guess(values: Sequence[Any]) -> str | None:
    # A row whose table no DDL or BOOTSTRAP described (Canal-JSON carries no schema in the decoded JSON): the
    # JSON type of its values is all there is. None: only NULLs seen so far.
    kinds = {_kind_of(v) for v in values if v is not None}
    merged: str | None = None
    for kind in kinds:
        merged = _widened(merged, kind)
    return merged


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "int"
    if isinstance(value, int):
        return "uint" if value > 2**63 - 1 else "int"
    if isinstance(value, float) or (isinstance(value, str) and value in _FLOAT_NAMES):
        return "double" if isinstance(value, float) else "text"
    return "binary" if isinstance(value, Mapping) else "text"


def _widened(old: str | None, new: str | None) -> str | None:
    """The guess that holds the values of both guesses: integers widen to DOUBLE, anything else to text."""
    if old is None or old == new:
        return new
    if new is None:
        return old
    numbers = {old, new}
    if numbers == {"int", "uint"}:
        return "uint"
    if numbers <= {"int", "uint", "double"}:
        return "double"
    return "text"


def _guessed_column(name: str, kind: str | None) -> ColumnInfo:
    """The column a guess stands for: BIGINT [UNSIGNED], DOUBLE, VARBINARY, else (text, DECIMAL and date/time
    strings, only NULLs) VARCHAR."""
    if kind in ("int", "uint"):
        unsigned = kind == "uint"
        return ColumnInfo(name=name, type_code=TypeCode.LONGLONG, flen=20, unsigned=unsigned,
                          type_desc="bigint(20) unsigned" if unsigned else "bigint(20)")
    if kind == "double":
        return ColumnInfo(name=name, type_code=TypeCode.DOUBLE, type_desc="double")
    if kind == "binary":
        return ColumnInfo(name=name, type_code=TypeCode.VARCHAR, flen=65535, type_desc="varbinary(65535)")
    return ColumnInfo(name=name, type_code=TypeCode.VARCHAR, charset="utf8mb4", collation="utf8mb4_bin",
                      flen=65535, type_desc="varchar(65535)")


_FLOAT_NAMES: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def model_value(value: Any, column: ColumnInfo | None, where: str = "value") -> Any:
    """A column value from its event-JSON form (:func:`json_value`'s inverse, given the column)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        text = value.get("base64")
        if not isinstance(text, str) or len(value) != 1:
            raise ChangelogError(f"{where}: an object value must be {{\"base64\": ...}}, got {dict(value)!r:.60}")
        try:
            return base64.b64decode(text, validate=True)
        except ValueError as exc:
            raise ChangelogError(f"{where}: not base64: {exc}") from None
    if isinstance(value, bool):
        return int(value)
    code = column.type_code if column is not None else None
    if code in (TypeCode.FLOAT, TypeCode.DOUBLE):
        if isinstance(value, str) and value in _FLOAT_NAMES:
            number = _FLOAT_NAMES[value]
        elif isinstance(value, (int, float)):
            number = float(value)
        else:
            raise ChangelogError(f"{where}: a FLOAT/DOUBLE value must be a number, got {value!r:.60}")
        return float32_round(number) if code == TypeCode.FLOAT and math.isfinite(number) else number
    if code is None or code in STRING_TYPES or code == TypeCode.GEOMETRY:
        # A text column's value (an unknown column reads as one); a number in a column guessed as text (other
        # rows had strings there) as its JSON text.
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (int, float)):
            return orjson.dumps(value)
    if isinstance(value, (str, int, float)):
        return value
    raise ChangelogError(f"{where}: {type(value).__name__} is not an event-JSON value")


class EventJsonReader:
    """Events back from event-JSON objects (``pyticdc decode --format jsonl``), in stream order.

    Rows carry no schema in event JSON: a table's is learnt from the ``table_columns`` of its DDL and
    BOOTSTRAP objects; a row of a table none described (e.g. decoded from Canal-JSON, whose rows carry
    types only on the wire) gets columns guessed from its values' JSON types (:func:`_guessed_column`).
    ``error`` and ``bootstrap`` objects carry no change: :meth:`event` returns None for them.
    """

    def __init__(self) -> None:
        #: (schema, table) → its TableInfo, from DDL/BOOTSTRAP ``table_columns`` or guessed from rows.
        self.tables: dict[tuple[str, str], TableInfo] = {}
        #: ``error`` objects read (records that did not decode: nothing to produce).
        self.errors = 0
        #: (schema, table) → the columns typed by guessing and the guess (None: only NULLs seen).
        self._guesses: dict[tuple[str, str], dict[str, str | None]] = {}

    def _learn(self, obj: Mapping[str, Any], where: str) -> TableInfo | None:
        items, schema, table = obj.get("table_columns"), obj.get("schema") or "", obj.get("table") or ""
        if not items or not table:
            return None
        info = table_from_columns(schema, table, items, table_id=int(obj.get("table_id") or 0),
                                  schema_version=int(obj.get("schema_version") or 0), where=where)
        self.tables[(schema, table)] = info
        self._guesses.pop((schema, table), None)
        return info

    def _row_table(self, schema: str, table: str, images: Sequence[Mapping[str, Any]]) -> TableInfo:
        key = (schema, table)
        info = self.tables.get(key)
        known = info.column_by_name if info is not None else {}
        guesses = self._guesses.setdefault(key, {})
        changed = info is None
        for name in dict.fromkeys(n for image in images for n in image):
            if name in known and name not in guesses:
                continue  # typed by a DDL or BOOTSTRAP
            kind = _widened(guesses.get(name), _guess([image.get(name) for image in images]))
            if name not in guesses or kind != guesses[name]:
                guesses[name] = kind
                changed = True
        if info is not None and not changed:
            return info
        from pyticdc.mysql.flags import table_info_with_flags

        described = [c for c in (info.columns if info is not None else ()) if c.name not in guesses]
        columns = [*described, *(_guessed_column(name, kind) for name, kind in guesses.items())]
        info = table_info_with_flags(schema, table, info.table_id if info else 0,
                                     info.schema_version if info else 0, columns,
                                     info.indexes if info else (), info.pk_is_handle if info else False)
        self.tables[key] = info
        return info

    def event(self, obj: Mapping[str, Any], where: str = "event") -> Event | None:
        """The model event of one event-JSON object; None for ``bootstrap`` and ``error``; ChangelogError if bad."""
        kind = obj.get("kind")
        if kind == "row":
            return self._row(obj, where)
        if kind == "ddl":
            query = obj.get("ddl_query")
            if not isinstance(query, str) or not query:
                raise ChangelogError(f"{where}: a DDL needs ddl_query")
            schema, table = obj.get("schema") or "", obj.get("table") or ""
            before = self.tables.get((schema, table))
            code = ddl_type_code(obj)
            info = self._learn(obj, where)
            if code in (ActionType.DROP_TABLE, ActionType.DROP_VIEW):
                self.tables.pop((schema, table), None)
            return DDLEvent(query=query, ddl_type=code, commit_ts=_integer(obj.get("commit_ts"), "commit_ts", where),
                            schema=schema, table=table, table_info=info,
                            pre_table_info=before if info is not None else None)
        if kind == "watermark":
            return Watermark(resolved_ts=_integer(obj.get("commit_ts"), "commit_ts", where))
        if kind == "bootstrap":
            self._learn(obj, where)
            return None
        if kind == "error":
            self.errors += 1
            return None
        raise ChangelogError(f"{where}: unknown kind {kind!r} ({', '.join(KINDS)})")

    def _row(self, obj: Mapping[str, Any], where: str) -> RowChange:
        try:
            op = Op(obj.get("op"))
        except ValueError:
            raise ChangelogError(f"{where}: op must be insert, update or delete, got {obj.get('op')!r}") from None
        schema, table = obj.get("schema"), obj.get("table")
        if not isinstance(schema, str) or not isinstance(table, str) or not schema or not table:
            raise ChangelogError(f"{where}: a row needs schema and table")
        raw = [obj.get("columns"), obj.get("pre_columns")]
        for image in raw:
            if image is not None and not isinstance(image, Mapping):
                raise ChangelogError(f"{where}: columns and pre_columns must be objects")
        images = [image for image in raw if image is not None]
        if not images:
            raise ChangelogError(f"{where}: a row needs columns or pre_columns")
        info = self._row_table(schema, table, images)
        columns = info.column_by_name

        def row(image: Mapping[str, Any] | None) -> Row | None:
            if image is None:
                return None
            return Row({name: model_value(value, columns.get(name), f"{where}: column {name!r}")
                        for name, value in image.items()})

        table_id = int(obj.get("table_id") or info.table_id or 0)
        commit_ts = _integer(obj.get("commit_ts"), "commit_ts", where)
        return RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, columns=row(raw[0]),
                         pre_columns=row(raw[1]), table_id=table_id,
                         physical_table_id=int(obj.get("physical_table_id") or table_id), table_info=info,
                         handle_key_only=bool(obj.get("handle_key_only")),
                         schema_version=int(obj.get("schema_version") or 0))


def _integer(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChangelogError(f"{where}: {name} must be an integer, got {value!r:.40}")
    return value
