"""Debezium JSON back into model events: TiCDC's output and the Debezium MySQL connector's.

The ``schema`` part, when present, says each column's Connect type and semantic name (and, with
TiCDC's ``enable-tidb-extension``, its ``tidb_type``); the decoder maps values back to the model
(ticdc-reference.md §5.2, read backwards):

=====================================  ==========================================================
wire                                   model value
=====================================  ==========================================================
int8/16/32/64                          int (TINYINT/SMALLINT/INT/BIGINT; ``tidb_type`` unsigned
                                       BIGINT −1 / negatives are read back as uint64)
float / double                         float (float32-rounded for ``float``); DECIMAL (by
                                       ``tidb_type``) as the float's shortest text
boolean                                BIT(1) 1/0
io.debezium.time.Date                  ``YYYY-MM-DD`` from days
io.debezium.time.(Micro)Timestamp      ``YYYY-MM-DD HH:MM:SS.fff`` (ms, fsp 3) / ``.ffffff`` (µs, fsp 6)
io.debezium.time.ZonedTimestamp        TIMESTAMP in the decoder's ``time-zone``, same fraction digits
io.debezium.time.MicroTime             ``[-]HH:MM:SS.ffffff``
io.debezium.data.Enum / EnumSet        1-based index / bitmask through ``allowed``
io.debezium.data.Bits                  int from the little-endian bytes
string                                 bytes (UTF-8); base64-decoded only for a binary ``tidb_type``
bytes                                  base64-decoded bytes
Connect Decimal / VariableScaleDecimal DECIMAL text with the scale
=====================================  ==========================================================

Without a schema only the JSON types are known: bool → BIT(1), integer → BIGINT, number →
DOUBLE, string → VARCHAR bytes, object/array → JSON text; a column that is null everywhere is
of type NULL.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final
from zoneinfo import ZoneInfo

import orjson

from pyticdc.codec.debezium._common import (
    PROTOCOL,
    civil_from_days,
    days_from_civil,
    format_civil,
    format_duration_us,
    format_wall,
    split_allowed,
    utc_to_local,
    valid_date,
    wall_from_epoch_us,
)
from pyticdc.codec.debezium._ddl import classify_ddl, parse_type_name, table_from_change
from pyticdc.codec.jsontext import float32_round, format_float_f
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    DecodeError,
    Event,
    Op,
    RowChange,
    TableInfo,
    Value,
    Watermark,
    make_row,
)

__all__ = [
    "Converter",
    "column_from_field",
    "decimal_text",
    "decode_document",
    "explain_document",
    "infer_column",
    "load_json",
    "to_bytes",
]

#: Converts one JSON value (at a JSON path) to the model; raises DecodeError.
Converter = Callable[[Any, str], Value]
_U64: Final = 1 << 64


def fail(reason: str, at: str | int | None) -> DecodeError:
    """A DecodeError of this protocol."""
    return DecodeError(PROTOCOL, reason, at)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(data: bytes, at: str) -> Any:
    """Parse JSON; raw non-UTF-8 bytes inside strings are kept (surrogateescape), big ints exact."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    # json-iterator passes raw bytes through and Go ints may exceed 64 bits: try the slow parser.
    try:
        text = data.decode("utf-8", "surrogateescape")
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON: {exc}", at) from None


def to_bytes(text: str) -> bytes:
    """A decoded JSON string back to the bytes it was written from."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def decimal_text(value: float) -> str:
    """A DECIMAL read from a float64: the shortest positional text (``-0`` as ``0``)."""
    text = format_float_f(value, 64)
    return "0" if text == "-0" else text


# --------------------------------------------------------------------------- typed value readers
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value: Any, at: str) -> int:
    if not _is_int(value):
        raise fail(f"expected an integer, got {type(value).__name__}", at)
    return int(value)


def _number(value: Any, at: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"expected a number, got {type(value).__name__}", at)
    try:
        return float(value)
    except OverflowError:
        raise fail("number out of range", at) from None


def _str(value: Any, at: str) -> str:
    if not isinstance(value, str):
        raise fail(f"expected a string, got {type(value).__name__}", at)
    return value


def _b64(value: Any, at: str) -> bytes:
    text = _str(value, at)
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise fail("invalid base64", at) from None


def _wall_from_us(micros: int, digits: int, at: str) -> str:
    if not -(10**19) < micros < 10**19:
        raise fail("timestamp out of range", at)
    wall = wall_from_epoch_us(micros)
    if not 0 <= wall.year <= 9999:
        raise fail("timestamp out of range", at)
    return format_wall(wall, digits)


def _int_converter(unsigned: bool) -> Converter:
    def convert(value: Any, at: str) -> Value:
        v = _int(value, at)
        # TiCDC writes BIGINT UNSIGNED as int64 (max → -1, ≥2^63 wrapped); tidb_type undoes it.
        if unsigned and v < 0:
            v += _U64
        if not -(1 << 63) <= v < _U64:
            raise fail("integer out of range", at)
        return v

    return convert


def _float32(value: Any, at: str) -> Value:
    return float32_round(_number(value, at))


def _float64(value: Any, at: str) -> Value:
    return _number(value, at)


def _decimal_from_float(value: Any, at: str) -> Value:
    return decimal_text(_number(value, at))


def _date(value: Any, at: str) -> Value:
    days = _int(value, at)
    if not -(10**7) < days < 3_000_000:
        raise fail("date out of range", at)
    year = civil_from_days(days)[0]
    if not 0 <= year <= 9999:
        raise fail("date out of range", at)
    return format_civil(days)


def _scaled_datetime(unit: int, digits: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        return _wall_from_us(_int(value, at) * unit, digits, at)

    return convert


def _time(unit: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        micros = _int(value, at) * unit // 1000
        if abs(micros) >= 10**15:
            raise fail("time out of range", at)
        return format_duration_us(micros, 6)

    return convert


_ZONED: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


def _timestamp_converter(zone: ZoneInfo) -> Converter:
    def convert(value: Any, at: str) -> Value:
        m = _ZONED.fullmatch(_str(value, at))
        if m is None:
            raise fail("not a ZonedTimestamp", at)
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hour, minute, second = int(m.group(4)), int(m.group(5)), int(m.group(6))
        if not valid_date(year, month, day) or hour > 23 or minute > 59 or second > 59:
            raise fail("not a valid ZonedTimestamp", at)
        fraction = (m.group(7) or "")[:6]
        offset = 0 if m.group(8) == "Z" else (1 if m.group(8)[0] == "+" else -1) * (
            int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
        instant = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        local = utc_to_local(instant, zone)
        if local is None or not 0 <= local.year <= 9999:
            raise fail("timestamp out of range", at)
        local = local._replace(micro=int(fraction.ljust(6, "0")) if fraction else 0)
        return format_wall(local, len(fraction))

    return convert


def _bits(value: Any, at: str) -> Value:
    data = _b64(value, at)
    if len(data) > 8:
        raise fail("BIT value wider than 64 bits", at)
    return int.from_bytes(data, "little")


def _bool_bit(value: Any, at: str) -> Value:
    if not isinstance(value, bool):
        raise fail(f"expected a boolean, got {type(value).__name__}", at)
    return 1 if value else 0


def _enum_converter(elems: tuple[str, ...]) -> Converter:
    index: dict[str, int] = {}
    for i, e in enumerate(elems):
        index.setdefault(e, i + 1)

    def convert(value: Any, at: str) -> Value:
        return index.get(_str(value, at), 0)  # "" (or an unknown name) is the invalid index 0

    return convert


def _set_converter(elems: tuple[str, ...]) -> Converter:
    index: dict[str, int] = {}
    for i, e in enumerate(elems):
        index.setdefault(e, i)

    def convert(value: Any, at: str) -> Value:
        text = _str(value, at)
        mask = 0
        for name in text.split(",") if text else ():
            position = index.get(name)
            if position is None:
                raise fail(f"SET member {name!r} is not allowed", at)
            mask |= 1 << position
        return mask

    return convert


def _text(value: Any, at: str) -> Value:
    return to_bytes(_str(value, at))


def _json_text(value: Any, at: str) -> Value:
    return _str(value, at)


def _connect_decimal(scale: int) -> Converter:
    def convert(value: Any, at: str) -> Value:
        # decimal.handling.mode=double writers may keep the Decimal schema name on some producers
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return decimal_text(_number(value, at)) if isinstance(value, float) else str(value)
        unscaled = int.from_bytes(_b64(value, at), "big", signed=True)
        return format(Decimal(unscaled).scaleb(-scale), "f") if scale > 0 else str(unscaled)

    return convert


def _variable_decimal(value: Any, at: str) -> Value:
    if not isinstance(value, dict):
        raise fail("expected a VariableScaleDecimal struct", at)
    scale = _int(value.get("scale"), at + ".scale")
    if not 0 <= scale <= 100:
        raise fail("decimal scale out of range", at + ".scale")
    unscaled = int.from_bytes(_b64(value.get("value"), at + ".value"), "big", signed=True)
    return format(Decimal(unscaled).scaleb(-scale), "f")


def _string_decimal(value: Any, at: str) -> Value:
    text = _str(value, at)
    try:
        Decimal(text)
    except InvalidOperation:
        raise fail("not a decimal", at) from None
    return text


def _geometry(value: Any, at: str) -> Value:
    if not isinstance(value, dict):
        raise fail("expected a geometry struct", at)
    return _b64(value.get("wkb"), at + ".wkb")


def _json_any(value: Any, at: str) -> Value:
    """Generic (schemaless) reading of one JSON value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return to_bytes(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        raise fail("nested value too deep", at) from None


# --------------------------------------------------------------------------- columns
_BINARY_FLAG: Final = int(ColumnFlag.BINARY)
_NULLABLE_FLAG: Final = int(ColumnFlag.NULLABLE)
_UNSIGNED_FLAG: Final = int(ColumnFlag.UNSIGNED)
_HANDLE_FLAG: Final = int(ColumnFlag.HANDLE_KEY)
_INTS_BY_CONNECT: Final = {"int8": 1, "int16": 2, "int32": 3, "int64": 8}


@dataclass(frozen=True)
class _Kind:
    type_code: int
    convert: Converter
    binary: bool = True
    flen: int = -1
    decimal: int = -1
    elems: tuple[str, ...] | None = None
    unsigned: bool = False


def _kind_from_tidb_type(tidb: str, connect: str, semantic: str | None, params: Mapping[str, Any],
                         zone: ZoneInfo) -> _Kind | None:
    parsed = parse_type_name(tidb)
    if parsed is None:
        return None
    code, binary, unsigned, _ = parsed
    if code in (1, 2, 3, 8, 9):
        return _Kind(code, _int_converter(unsigned), unsigned=unsigned)
    if code == 4:
        return _Kind(4, _float32, unsigned=unsigned)
    if code == 5:
        return _Kind(5, _float64, unsigned=unsigned)
    if code == 246:
        return _Kind(246, _decimal_from_float)
    if code in (15, 253, 254, 249, 250, 251, 252):
        if binary and code != 253:
            return _Kind(code, lambda v, at: _b64(v, at))
        return _Kind(code, _text, binary=False)
    semantic_kind = _kind_from_connect(connect, semantic, params, zone)
    if semantic_kind is None:
        return None
    if code == 16 and semantic_kind.type_code == 16:
        return semantic_kind
    if semantic_kind.type_code == code:
        return semantic_kind
    return _Kind(code, semantic_kind.convert, binary=semantic_kind.binary, flen=semantic_kind.flen,
                 decimal=semantic_kind.decimal, elems=semantic_kind.elems)


def _kind_from_connect(connect: str, semantic: str | None, params: Mapping[str, Any],
                       zone: ZoneInfo) -> _Kind | None:
    if semantic == "io.debezium.time.Date" or semantic == "org.apache.kafka.connect.data.Date":
        return _Kind(10, _date)
    if semantic == "io.debezium.time.Timestamp" or semantic == "org.apache.kafka.connect.data.Timestamp":
        return _Kind(12, _scaled_datetime(1000, 3), decimal=3)
    if semantic == "io.debezium.time.MicroTimestamp":
        return _Kind(12, _scaled_datetime(1, 6), decimal=6)
    if semantic == "io.debezium.time.NanoTimestamp":
        return _Kind(12, lambda v, at: _wall_from_us(_int(v, at) // 1000, 6, at), decimal=6)
    if semantic == "io.debezium.time.ZonedTimestamp":
        return _Kind(7, _timestamp_converter(zone))
    if semantic == "io.debezium.time.MicroTime":
        return _Kind(11, _time(1000), decimal=6)
    if semantic == "io.debezium.time.NanoTime":
        return _Kind(11, _time(1), decimal=6)
    if semantic in ("io.debezium.time.Time", "org.apache.kafka.connect.data.Time"):
        return _Kind(11, _time(1_000_000), decimal=6)
    if semantic == "io.debezium.time.Year":
        return _Kind(13, lambda v, at: _int(v, at), unsigned=True)
    if semantic == "io.debezium.data.Bits":
        length = params.get("length")
        width = int(length) if isinstance(length, str) and length.isdigit() and len(length) < 6 else -1
        return _Kind(16, _bits, flen=width, unsigned=True)
    if semantic == "io.debezium.data.Enum":
        elems = split_allowed(_param(params, "allowed"), escaped=True)
        return _Kind(247, _enum_converter(elems), binary=False, elems=elems)
    if semantic == "io.debezium.data.EnumSet":
        elems = split_allowed(_param(params, "allowed"), escaped=False)
        return _Kind(248, _set_converter(elems), binary=False, elems=elems)
    if semantic == "io.debezium.data.Json":
        return _Kind(245, _json_text)
    if semantic == "io.debezium.data.TiDBVectorFloat32":
        return _Kind(225, _json_text)
    if semantic == "org.apache.kafka.connect.data.Decimal":
        scale_text = params.get("scale")
        scale = int(scale_text) if isinstance(scale_text, str) and scale_text.isdigit() and len(scale_text) < 4 \
            else 0
        if connect == "string":
            return _Kind(246, _string_decimal, decimal=scale)
        return _Kind(246, _connect_decimal(scale), decimal=scale)
    if semantic == "io.debezium.data.VariableScaleDecimal":
        return _Kind(246, _variable_decimal)
    if semantic is not None and semantic.startswith("io.debezium.data.geometry."):
        return _Kind(255, _geometry)
    if connect == "boolean":
        return _Kind(16, _bool_bit, flen=1, unsigned=True)
    if connect in _INTS_BY_CONNECT:
        return _Kind(_INTS_BY_CONNECT[connect], _int_converter(False))
    if connect in ("float", "float32"):
        return _Kind(4, _float32)
    if connect in ("double", "float64"):
        return _Kind(5, _float64)
    if connect == "string":
        return _Kind(15, _text, binary=False)
    if connect == "bytes":
        return _Kind(15, lambda v, at: _b64(v, at))
    return None


def _param(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    return value if isinstance(value, str) else ""


def _column(name: str, kind: _Kind, nullable: bool, key: bool, virtual: bool) -> ColumnInfo:
    flags = ((_BINARY_FLAG if kind.binary else 0) | (_NULLABLE_FLAG if nullable else 0)
             | (_UNSIGNED_FLAG if kind.unsigned else 0) | (_HANDLE_FLAG if key else 0))
    charset = "binary" if kind.binary else "utf8mb4"
    return ColumnInfo(
        name=name, type_code=kind.type_code, flags=flags, flen=kind.flen, decimal=kind.decimal,
        elems=kind.elems, unsigned=kind.unsigned, nullable=nullable, virtual=virtual,
        charset=charset, collation="binary" if kind.binary else "utf8mb4_bin",
    )


def column_from_field(field: Mapping[str, Any], zone: ZoneInfo, key: bool = False,
                      virtual: bool = False) -> tuple[ColumnInfo, Converter] | None:
    """The column a schema field describes and its value converter; None if it names no known type."""
    name = field.get("field")
    connect = field.get("type")
    if not isinstance(name, str) or not isinstance(connect, str):
        return None
    semantic = field.get("name")
    semantic = semantic if isinstance(semantic, str) else None
    params = field.get("parameters")
    params = params if isinstance(params, dict) else {}
    optional = field.get("optional")
    nullable = optional if isinstance(optional, bool) else True
    tidb = field.get("tidb_type")
    kind = None
    if isinstance(tidb, str):
        kind = _kind_from_tidb_type(tidb, connect, semantic, params, zone)
    if kind is None:
        kind = _kind_from_connect(connect, semantic, params, zone)
    if kind is None:
        return None
    return _column(name, kind, nullable, key, virtual), kind.convert


def _inferred_kind(value: Any) -> _Kind:
    if value is None:
        return _Kind(6, _json_any)
    if isinstance(value, bool):
        return _Kind(16, _json_any, flen=1, unsigned=True)
    if isinstance(value, int):
        return _Kind(8, _json_any)
    if isinstance(value, float):
        return _Kind(5, _json_any)
    if isinstance(value, str):
        return _Kind(15, _json_any, binary=False)
    return _Kind(245, _json_any)


def infer_column(name: str, samples: list[Any], key: bool) -> tuple[ColumnInfo, Converter]:
    """A column known only from its JSON values (no schema): the first non-null value decides."""
    sample = next((s for s in samples if s is not None), None)
    return _column(name, _inferred_kind(sample), True, key, False), _json_any


# --------------------------------------------------------------------------- documents
def _obj(value: Any, at: str, optional: bool = False) -> dict[str, Any] | None:
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise fail(f"expected an object, got {type(value).__name__}", at)
    return value


def _opt_str(value: Any, at: str) -> str:
    if value is None:
        return ""
    return _str(value, at)


def split_envelope(doc: Any, at: str) -> tuple[dict[str, Any], dict[str, Any] | None, str]:
    """(payload, schema or None, JSON path of the payload) of a Debezium message document."""
    if not isinstance(doc, dict):
        raise fail(f"a Debezium message is a JSON object, got {type(doc).__name__}", at)
    if "payload" in doc and set(doc) <= {"payload", "schema"}:
        payload = _obj(doc["payload"], f"{at}.payload")
        assert payload is not None
        schema = _obj(doc.get("schema"), f"{at}.schema", optional=True)
        return payload, schema, f"{at}.payload"
    return doc, None, at


def _key_names(key_doc: Any) -> set[str]:
    if not isinstance(key_doc, dict):
        return set()
    payload = key_doc.get("payload") if "payload" in key_doc and set(key_doc) <= {"payload", "schema"} \
        else key_doc
    return set(payload) if isinstance(payload, dict) else set()


def _commit_ts(source: Mapping[str, Any], at: str, required: bool) -> int:
    commit = source.get("commit_ts")
    if commit is not None:
        ts = _int(commit, f"{at}.commit_ts")
        if not 0 <= ts < _U64:
            raise fail("commit_ts out of range", f"{at}.commit_ts")
        return ts
    if required:
        raise fail("missing commit_ts", f"{at}.commit_ts")
    # A Debezium connector message: its source.ts_ms becomes the physical part of a TSO.
    ts_ms = source.get("ts_ms")
    if isinstance(ts_ms, int) and not isinstance(ts_ms, bool) and 0 <= ts_ms < 1 << 46:
        return ts_ms << 18
    return 0


def _row_schema(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
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


_Schema = tuple[tuple[ColumnInfo, ...], dict[str, Converter]]
#: Decoded schemas by a hashable digest of the fields (a topic repeats one schema per table version).
SchemaCache = dict[tuple[Any, ...], _Schema]
def _schema_columns(fields: list[dict[str, Any]], key_names: set[str], present: dict[str, None],
                    zone: ZoneInfo, cache: SchemaCache | None) -> _Schema:
    digest: tuple[Any, ...] | None = None
    if cache is not None:
        # repr is exact for JSON-parsed values (str/int/float/bool/None/list/dict) and runs in C.
        try:
            digest = (repr(fields), tuple(sorted(key_names)), tuple(present))
        except RecursionError:
            digest = None
        hit = cache.get(digest) if digest is not None else None
        if hit is not None:
            return hit
    columns: list[ColumnInfo] = []
    converters: dict[str, Converter] = {}
    for field in fields:
        name = field.get("field")
        if not isinstance(name, str) or name in converters:
            continue
        made = column_from_field(field, zone, key=name in key_names, virtual=name not in present)
        if made is not None:
            columns.append(made[0])
            converters[name] = made[1]
    result = (tuple(columns), converters)
    if digest is not None and cache is not None:
        if len(cache) >= 256:
            cache.clear()
        cache[digest] = result
    return result


def _decode_row(op_text: str, payload: dict[str, Any], schema: dict[str, Any] | None, at: str,
                key_names: set[str], zone: ZoneInfo, source: dict[str, Any],
                cache: SchemaCache | None = None) -> RowChange:
    op = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}[op_text]
    before = _obj(payload.get("before"), f"{at}.before", optional=True)
    after = _obj(payload.get("after"), f"{at}.after", optional=True)
    if op is not Op.DELETE and after is None:
        raise fail("missing after image", f"{at}.after")
    if op is Op.DELETE and before is None:
        raise fail("missing before image", f"{at}.before")
    images = [img for img in (after, before) if img is not None]
    present: dict[str, None] = {}
    for img in images:
        present.update(dict.fromkeys(img))
    fields = _row_schema(schema)
    typed: _Schema = _schema_columns(fields, key_names, present, zone, cache) if fields is not None else ((), {})
    columns = list(typed[0])
    converters = typed[1]
    if any(name not in converters for name in present):
        converters = dict(converters)
        for name in present:
            if name not in converters:
                column, convert = infer_column(name, [img.get(name) for img in images], name in key_names)
                columns.append(column)
                converters[name] = convert

    def image(img: dict[str, Any] | None, path: str) -> dict[str, Value] | None:
        if img is None:
            return None
        out: dict[str, Value] = {}
        for name, raw in img.items():
            out[name] = None if raw is None else converters[name](raw, f"{path}.{name}")
        return out

    db = _opt_str(source.get("db"), f"{at}.source.db")
    table = _opt_str(source.get("table"), f"{at}.source.table")
    post = image(after, f"{at}.after") if op is not Op.DELETE else None
    pre = image(before, f"{at}.before") if op is not Op.INSERT else None
    info = TableInfo(schema=db, table=table, columns=tuple(columns))
    return RowChange(
        op=op, schema=db, table=table, commit_ts=_commit_ts(source, f"{at}.source", False),
        columns=make_row(post), pre_columns=make_row(pre), table_info=info,
    )


_ID_PAIR: Final = re.compile(r'"(.*?)"\."(.*?)"(?:,"(.*?)"\."(.*?)")?', re.DOTALL)


def _decode_ddl(payload: dict[str, Any], at: str, source: dict[str, Any]) -> DDLEvent:
    query = _str(payload.get("ddl"), f"{at}.ddl")
    db = _opt_str(source.get("db"), f"{at}.source.db")
    table = _opt_str(source.get("table"), f"{at}.source.table")
    database = payload.get("databaseName")
    schema = _opt_str(database, f"{at}.databaseName") or db
    changes = payload.get("tableChanges")
    if changes is not None and not isinstance(changes, list):
        raise fail("tableChanges is not an array", f"{at}.tableChanges")
    change_type: str | None = None
    table_info = pre_info = None
    if changes:
        change = _obj(changes[0], f"{at}.tableChanges[0]")
        assert change is not None
        kind = change.get("type")
        change_type = kind if isinstance(kind, str) else None
        body = _obj(change.get("table"), f"{at}.tableChanges[0].table", optional=True)
        if body is not None:
            table_info = table_from_change(body, db, table)
            ident = change.get("id")
            m = _ID_PAIR.fullmatch(ident) if isinstance(ident, str) else None
            if m is not None and m.group(3) is not None:
                pre_info = TableInfo(schema=m.group(1), table=m.group(2), columns=table_info.columns,
                                     indexes=table_info.indexes, charset=table_info.charset)
    ddl_type = classify_ddl(query, change_type, bool(table))
    return DDLEvent(query=query, ddl_type=ddl_type, commit_ts=_commit_ts(source, f"{at}.source", False),
                    schema=schema, table=table, table_info=table_info, pre_table_info=pre_info)


def decode_document(doc: Any, key_doc: Any, zone: ZoneInfo, cache: SchemaCache | None = None) -> list[Event]:
    """Events of one parsed Debezium message (and its parsed key, if any)."""
    payload, schema, at = split_envelope(doc, "$")
    source = _obj(payload.get("source", {}), f"{at}.source")
    assert source is not None
    if "op" in payload:
        op = _str(payload.get("op"), f"{at}.op")
        if op == "m":
            return [Watermark(resolved_ts=_commit_ts(source, f"{at}.source", True))]
        if op == "t":
            return [DDLEvent(query="", ddl_type=11, commit_ts=_commit_ts(source, f"{at}.source", False),
                             schema=_opt_str(source.get("db"), f"{at}.source.db"),
                             table=_opt_str(source.get("table"), f"{at}.source.table"))]
        if op not in ("c", "r", "u", "d"):
            raise fail(f"unknown op {op!r}", f"{at}.op")
        return [_decode_row(op, payload, schema, at, _key_names(key_doc), zone, source, cache)]
    if "ddl" in payload:
        return [_decode_ddl(payload, at, source)]
    raise fail("neither a change event (op) nor a schema change (ddl)", at)


def explain_document(doc: Any, key_doc: Any) -> dict[str, Any]:
    """A wire-level view of one Debezium message for people and tools."""
    payload, schema, _ = split_envelope(doc, "$")
    raw_source = payload.get("source")
    source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    op = payload.get("op")
    kind = "watermark" if op == "m" else ("row" if op is not None else ("ddl" if "ddl" in payload else "unknown"))
    view: dict[str, Any] = {
        "protocol": PROTOCOL,
        "kind": kind,
        "producer": source.get("connector"),
        "has_schema": schema is not None,
        "database": source.get("db"),
        "table": source.get("table"),
        "commit_ts": source.get("commit_ts"),
        "source_ts_ms": source.get("ts_ms"),
        "ts_ms": payload.get("ts_ms"),
        "key": key_doc,
    }
    if kind == "row":
        view["op"] = op
        fields = {f.get("field"): f for f in (_row_schema(schema) or [])}
        names: dict[Any, None] = {}
        for side in ("before", "after"):
            if isinstance(payload.get(side), dict):
                names.update(dict.fromkeys(payload[side]))
        names.update(dict.fromkeys(n for n in fields if n not in names))
        view["columns"] = [
            {"name": name, "schema": fields.get(name),
             "before": payload["before"].get(name) if isinstance(payload.get("before"), dict) else None,
             "after": payload["after"].get(name) if isinstance(payload.get("after"), dict) else None}
            for name in names
        ]
    elif kind == "ddl":
        view["ddl"] = payload.get("ddl")
        view["database_name"] = payload.get("databaseName")
        view["table_changes"] = payload.get("tableChanges")
    elif kind == "watermark":
        view["resolved_ts"] = source.get("commit_ts")
    view["payload"] = payload
    view["schema"] = schema
    return view
