"""Vector adapter for TiCDC's Debezium protocol (``debezium.json``).

Besides the standard ``table`` + ``events`` layout, Debezium cases come as: ``expected_error``
(the encoder must skip the event, as TiCDC does for ErrDDLUnsupportType), ``ddl_sql`` + ``dml_sql``
(the row is what TiDB stores for the SQL; compared with real Debezium output, ignoring the paths in
``compare.ignore``), and ``direction: decode``.
"""

from __future__ import annotations

import copy
import json
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import orjson

from pyticdc.codec import codec_module
from pyticdc.codec.debezium.values import (
    format_duration_us,
    format_wall,
    local_to_utc_seconds,
    parse_datetime,
    parse_duration_us,
    utc_to_local,
    valid_date,
)
from pyticdc.codec.jsontext import float32_round
from pyticdc.codec.timezone import load_zone
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    Op,
    RowChange,
    TableInfo,
    TypeCode,
    Value,
    Watermark,
    make_row,
)
from pyticdc.mysql import INTEGER_TYPES, STRING_TYPES
from pyticdc.mysql.sql import ColumnDef, Literal, parse_create_table, parse_insert
from pyticdc.vectors.compare import diff_json, expected_bytes, jsonable
from pyticdc.vectors.generic import check_encode as generic_check_encode
from pyticdc.vectors.generic import encode_case
from pyticdc.vectors.inputs import events_from_vector, options_from_vector

__all__ = ["PROTOCOL", "check_case", "check_decode", "check_encode", "rows_from_sql", "table_from_sql"]

PROTOCOL = "debezium"


# --------------------------------------------------------------------------- SQL → model (TiDB semantics)
_INT_TYPES = {"TINYINT": (1, 4), "SMALLINT": (2, 6), "MEDIUMINT": (9, 9), "INT": (3, 11), "INTEGER": (3, 11),
              "BIGINT": (8, 20)}
_TEXT_TYPES = {"TINYTEXT": 249, "TEXT": 252, "MEDIUMTEXT": 250, "LONGTEXT": 251}
_BLOB_TYPES = {"TINYBLOB": 249, "BLOB": 252, "MEDIUMBLOB": 250, "LONGBLOB": 251}


def _arg(d: ColumnDef, i: int, default: int) -> int:
    try:
        return int(d.args[i])
    except (IndexError, ValueError):
        return default


def _column_spec(d: ColumnDef, table_charset: str) -> dict[str, Any]:
    """ColumnInfo keywords TiDB derives from one column definition."""
    t = d.type_name
    binary = {"charset": "binary", "collation": "binary"}
    charset = d.charset or table_charset
    text = {"charset": charset, "collation": d.collate or f"{charset}_bin"}
    if t in ("BOOL", "BOOLEAN"):
        return {"type_code": 1, "flen": 1, "decimal": 0, **binary}
    if t in _INT_TYPES:
        code, width = _INT_TYPES[t]
        if d.unsigned and code != 8:
            width -= 1
        return {"type_code": code, "flen": _arg(d, 0, width), "decimal": 0, **binary}
    if t == "SERIAL":
        return {"type_code": 8, "flen": 20, "decimal": 0, "unsigned": True, **binary}
    if t == "FLOAT":
        if len(d.args) == 2:
            return {"type_code": 4, "flen": _arg(d, 0, 12), "decimal": _arg(d, 1, -1), **binary}
        if d.args and _arg(d, 0, 0) > 24:
            return {"type_code": 5, "flen": 22, "decimal": -1, **binary}
        return {"type_code": 4, "flen": 12, "decimal": -1, **binary}
    if t in ("DOUBLE", "REAL"):
        return {"type_code": 5, "flen": _arg(d, 0, 22), "decimal": _arg(d, 1, -1), **binary}
    if t in ("DECIMAL", "NUMERIC", "DEC", "FIXED"):
        return {"type_code": 246, "flen": _arg(d, 0, 10), "decimal": _arg(d, 1, 0), **binary}
    if t == "DATE":
        return {"type_code": 10, "flen": 10, "decimal": 0, **binary}
    if t in ("DATETIME", "TIMESTAMP", "TIME"):
        fsp = _arg(d, 0, 0)
        base = 10 if t == "TIME" else 19
        return {"type_code": {"DATETIME": 12, "TIMESTAMP": 7, "TIME": 11}[t],
                "flen": base + (fsp + 1 if fsp else 0), "decimal": fsp, **binary}
    if t == "YEAR":
        return {"type_code": 13, "flen": 4, "decimal": 0, "unsigned": True, **binary}
    if t == "BIT":
        return {"type_code": 16, "flen": _arg(d, 0, 1), "decimal": 0, "unsigned": True, **binary}
    if t in ("CHAR", "NCHAR", "VARCHAR", "NVARCHAR", "BINARY", "VARBINARY"):
        code = 254 if t in ("CHAR", "NCHAR", "BINARY") else 15
        is_binary = t in ("BINARY", "VARBINARY") or charset == "binary"
        return {"type_code": code, "flen": _arg(d, 0, 1), "decimal": 0, **(binary if is_binary else text)}
    if t in _TEXT_TYPES:
        return {"type_code": _TEXT_TYPES[t], "flen": -1, "decimal": 0, **text}
    if t in _BLOB_TYPES:
        return {"type_code": _BLOB_TYPES[t], "flen": -1, "decimal": 0, **binary}
    if t in ("ENUM", "SET"):
        return {"type_code": 247 if t == "ENUM" else 248, "flen": -1, "decimal": 0, "elems": tuple(d.args), **text}
    if t == "JSON":
        return {"type_code": 245, "flen": -1, "decimal": 0, **binary}
    if t == "VECTOR":
        return {"type_code": 225, "flen": _arg(d, 0, -1), "decimal": 0, **binary}
    return {"type_code": 255, "flen": -1, "decimal": 0, **binary}


def _default_text(literal: Literal | None) -> str | None:
    if literal is None or literal.kind in ("null", "expr"):
        return None
    if literal.kind == "func":
        return literal.text.upper()
    return literal.text


def table_from_sql(ddl: str, schema: str = "test") -> TableInfo:
    """The TableInfo TiDB creates for a ``CREATE TABLE`` (clustered primary key, TiCDC flags §1.2)."""
    created = parse_create_table(ddl)
    if created is None:
        raise ValueError("not a CREATE TABLE statement")
    table_charset = created.charset or "utf8mb4"
    primary = list(created.primary) or [d.name for d in created.columns if d.primary]
    if any(d.type_name == "SERIAL" for d in created.columns) and not primary:
        primary = [next(d.name for d in created.columns if d.type_name == "SERIAL")]
    uniques = [list(u) for u in created.uniques] + [[d.name] for d in created.columns if d.unique]
    specs = {d.name: _column_spec(d, table_charset) for d in created.columns}
    not_null = {d.name for d in created.columns if d.not_null or d.name in primary}
    handle: list[str] = list(primary)
    if not handle:
        candidates = [u for u in uniques if all(c in not_null for c in u)]
        handle = min(candidates, key=len) if candidates else []
    columns = []
    for d in created.columns:
        spec = specs[d.name]
        unsigned = d.unsigned or bool(spec.pop("unsigned", False))
        nullable = d.name not in not_null
        flags = 0
        if spec["charset"] == "binary":
            flags |= ColumnFlag.BINARY
        if nullable:
            flags |= ColumnFlag.NULLABLE
        if unsigned:
            flags |= ColumnFlag.UNSIGNED
        if d.name in primary:
            flags |= ColumnFlag.PRIMARY_KEY | (ColumnFlag.MULTIPLE_KEY if len(primary) > 1 else 0)
        for u in uniques:
            if d.name in u:
                flags |= ColumnFlag.UNIQUE_KEY | (ColumnFlag.MULTIPLE_KEY if len(u) > 1 else 0)
        if d.name in handle:
            flags |= ColumnFlag.HANDLE_KEY
        if d.generated:
            flags |= ColumnFlag.GENERATED
        columns.append(ColumnInfo(
            name=d.name, flags=flags, unsigned=unsigned, zerofill=d.zerofill, nullable=nullable,
            default=_default_text(d.default) if d.has_default else None, comment=d.comment or "",
            virtual=d.generated and not d.stored, **spec,
        ))
    indexes = []
    if primary:
        indexes.append(IndexInfo(name="PRIMARY", columns=tuple(primary), primary=True, unique=True))
    pk_is_handle = len(primary) == 1 and specs[primary[0]]["type_code"] in INTEGER_TYPES
    return TableInfo(schema=created.schema or schema, table=created.table, table_id=100, pk_is_handle=pk_is_handle,
                     columns=tuple(columns), indexes=tuple(indexes), charset=table_charset)


def _literal_text(lit: Literal) -> str:
    if lit.kind == "hex":
        return bytes.fromhex(lit.text if len(lit.text) % 2 == 0 else "0" + lit.text).decode("latin-1")
    return lit.text


def _tidb_json(text: str) -> str:
    def render(v: Any) -> str:
        if isinstance(v, dict):
            keys = sorted(v, key=lambda k: (len(k.encode()), k.encode()))
            return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + render(v[k]) for k in keys) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(render(x) for x in v) + "]"
        return json.dumps(v, ensure_ascii=False)

    return render(json.loads(text))


def _round_decimal(text: str, scale: int) -> str:
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal(0)
    return str(value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)) if scale > 0 else \
        str(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _value_from_literal(column: ColumnInfo, lit: Literal | None, session_zone: str, server_zone: str) -> Value:
    """What TiDB (sql_mode='') stores for a literal, in the model of §1.1."""
    if lit is None or lit.kind == "null":
        return None
    code = column.type_code
    text = _literal_text(lit)
    if code in INTEGER_TYPES:
        return int(Decimal(text).to_integral_value(rounding=ROUND_HALF_UP)) if lit.kind != "bool" else int(
            text == "TRUE")
    if code == TypeCode.YEAR:
        year = int(Decimal(text))
        if (lit.kind == "str" and len(text) <= 2) or (lit.kind != "str" and 0 < year < 100):
            year = year + 2000 if year < 70 else year + 1900
        return year
    if code == TypeCode.FLOAT:
        return float32_round(float(text))
    if code == TypeCode.DOUBLE:
        return float(text)
    if code == TypeCode.NEWDECIMAL:
        return _round_decimal(text, column.decimal)
    if code == TypeCode.BIT:
        if lit.kind == "bits":
            return int(lit.text or "0", 2)
        if lit.kind in ("str", "hex"):
            return int.from_bytes(text.encode("latin-1"), "big")
        return int(text)
    if code == TypeCode.DATE:
        return text[:10]
    if code in (TypeCode.DATETIME, TypeCode.TIMESTAMP):
        fsp = max(column.decimal, 0)
        parsed = parse_datetime(text, fsp)
        if parsed is None:
            raise ValueError(f"bad datetime {text!r}")
        if not valid_date(parsed.year, parsed.month, parsed.day):
            return format_wall(parsed, fsp)
        if code == TypeCode.TIMESTAMP:
            instant = local_to_utc_seconds(parsed, load_zone(session_zone))
            if instant is None:
                raise ValueError(f"{text!r} does not exist in {session_zone}")
            local = utc_to_local(instant, load_zone(server_zone))
            assert local is not None
            parsed = local._replace(micro=parsed.micro)
        return format_wall(parsed, fsp)
    if code == TypeCode.TIME:
        micros = parse_duration_us(text, column.decimal)
        if micros is None:
            raise ValueError(f"bad time {text!r}")
        return format_duration_us(micros, max(column.decimal, 0))
    if code in STRING_TYPES:
        data = text.encode("latin-1") if lit.kind == "hex" else text.encode("utf-8")
        if code == TypeCode.STRING and column.charset == "binary" and column.flen > len(data):
            return data + b"\0" * (column.flen - len(data))
        if code == TypeCode.STRING and column.charset != "binary":
            return data.rstrip(b" ")
        return data
    if code == TypeCode.ENUM:
        elems = column.elems or ()
        if lit.kind in ("int", "dec"):
            n = int(Decimal(text))
            return n if 0 <= n <= len(elems) else 0
        return elems.index(text) + 1 if text in elems else 0  # invalid: '' (index 0) in non-strict mode
    if code == TypeCode.SET:
        elems = column.elems or ()
        if lit.kind in ("int", "dec"):
            return int(Decimal(text))
        mask = 0
        for name in text.split(",") if text else ():
            if name not in elems:
                return 0
            mask |= 1 << elems.index(name)
        return mask
    if code == TypeCode.JSON:
        return _tidb_json(text)
    return text


def rows_from_sql(table: TableInfo, dml: str, session_zone: str, server_zone: str) -> list[dict[str, Value]]:
    """The row images an ``INSERT ... VALUES`` stores in ``table``."""
    insert = parse_insert(dml)
    if insert is None:
        raise ValueError("not an INSERT ... VALUES statement")
    names = insert.columns or [c.name for c in table.columns if not c.virtual]
    rows = []
    for literals in insert.rows:
        given = dict(zip(names, literals))
        row: dict[str, Value] = {}
        for column in table.columns:
            if column.virtual:
                continue
            lit = given.get(column.name)
            if column.name not in given and column.default is not None:
                lit = Literal("str", column.default)
            row[column.name] = _value_from_literal(column, lit, session_zone, server_zone)
        rows.append(row)
    return rows


def _session_zone(session: list[str]) -> str:
    for statement in session:
        lowered = statement.lower().replace(" ", "")
        if lowered.startswith("settime_zone="):
            return statement.split("=", 1)[1].strip().strip(";").strip().strip("'\"")
    return "UTC"


def _drop_path(doc: Any, path: str) -> None:
    parts = path.removeprefix("$.").split(".") if path.startswith("$.") else []
    node = doc
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict) and parts:
        node.pop(parts[-1], None)


def _check_sql_case(case: dict[str, Any], base: Path) -> str | None:
    inp = case["input"]
    files = inp.get("files") or {}
    ddl = inp.get("ddl_sql") or (base / files["ddl"]).read_text()
    dml = inp.get("dml_sql") or (base / files["dml"]).read_text()
    config = case.get("config", {})
    table = table_from_sql(ddl)
    server_zone = config.get("time_zone", "UTC")
    rows = rows_from_sql(table, dml, _session_zone(inp.get("session", [])), server_zone)
    module = codec_module(PROTOCOL)
    options, clock = options_from_vector(config, module.OPTIONS)
    encoder = module.Encoder(options, clock=clock)
    events: list[Event] = [
        RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=1 << 18, columns=make_row(row),
                  table_id=table.table_id, physical_table_id=table.table_id, table_info=table)
        for row in rows
    ]
    messages = encoder.encode(events)
    if len(messages) != 1:
        return f"expected 1 message, got {len(messages)}"
    ignore = list((case.get("compare") or {}).get("ignore", []))
    if config.get("debezium_disable_schema"):
        ignore.append("$.schema")
    for what, expected, actual in (("key", case.get("expected_key_json"), messages[0].key),
                                   ("value", case.get("expected_value_json"), messages[0].value)):
        if expected is None:
            continue
        got = orjson.loads(actual or b"null")
        want = copy.deepcopy(expected)
        for path in ignore:
            _drop_path(want, path)
            _drop_path(got, path)
        found = diff_json(want, got)
        if found:
            return f"{what}: {found}"
    return None


# --------------------------------------------------------------------------- round trip and decode
def _comparable(event: Event) -> Any:
    if isinstance(event, RowChange):
        return ("row", event.op, event.schema, event.table, event.commit_ts,
                dict(event.columns) if event.columns is not None else None,
                dict(event.pre_columns) if event.pre_columns is not None else None, event.table_info)
    if isinstance(event, DDLEvent):
        return ("ddl", event.query, event.ddl_type, event.commit_ts, event.schema, event.table,
                event.table_info, event.pre_table_info)
    if isinstance(event, Watermark):
        return ("watermark", event.resolved_ts)
    return (event.kind,)


def _check_round_trip(encoder: Any, events: list[Event], messages: list[Any], config: dict[str, Any]) -> str | None:
    """decode(encode(events)) must equal the encoder's documented projection."""
    module = codec_module(PROTOCOL)
    options = {k: v for k, v in options_from_vector(config, module.OPTIONS)[0].items()
               if k in ("enable-tidb-extension", "time-zone", "large-message-handle-compression")}
    decoder = module.Decoder(options)
    decoded = [_comparable(e) for m in messages for e in decoder.decode(m.value, m.key)]
    projected = [_comparable(p) for e in events if (p := encoder.project(e)) is not None]
    if decoded != projected:
        for i, (d, p) in enumerate(zip(decoded, projected)):
            if d != p:
                return f"round trip: event {i} decodes to {d!r}, projection says {p!r}"
        return f"round trip: {len(decoded)} events decoded, {len(projected)} projected"
    return None


def _bytes_field(spec: Any, base: Path) -> bytes | None:
    if isinstance(spec, dict) and "file" in spec:
        return (base / str(spec["file"])).read_bytes()
    if isinstance(spec, dict) and "json" in spec and "hex" not in spec:
        return str(spec["json"]).encode("utf-8")
    return expected_bytes(spec)




def _event_view(event: Event) -> dict[str, Any]:
    if isinstance(event, RowChange):
        return {"type": "row", "kind": "row", "op": event.op.value, "schema": event.schema, "table": event.table,
                "commit_ts": event.commit_ts, "columns": jsonable(dict(event.columns or {})) if event.columns
                is not None else None,
                "pre_columns": jsonable(dict(event.pre_columns)) if event.pre_columns is not None else None}
    if isinstance(event, DDLEvent):
        return {"type": "ddl", "kind": "ddl", "query": event.query, "ddl_type": event.ddl_type,
                "commit_ts": event.commit_ts, "schema": event.schema, "table": event.table}
    if isinstance(event, Watermark):
        return {"type": "resolved", "kind": "watermark", "resolved_ts": event.resolved_ts, "ts": event.resolved_ts,
                "commit_ts": event.resolved_ts}
    return {"type": event.kind, "kind": event.kind}


def _subset_diff(expected: Any, actual: Any, path: str) -> str | None:
    """Fields the case names must match; fields it does not name are not checked."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, want in expected.items():
            if key in ("key_json", "value_json", "note"):
                continue
            if key not in actual:
                continue
            found = _subset_diff(want, actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    return diff_json(expected, actual, path)


def check_decode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Decode ``encoded_value``/``encoded_key`` and compare with ``expected_decoded``."""
    module = codec_module(PROTOCOL)
    options, _ = options_from_vector(case.get("config", {}), module.OPTIONS)
    value = _bytes_field(case.get("encoded_value"), base)
    key = _bytes_field(case.get("encoded_key"), base)
    events = module.Decoder(options).decode(value, key)
    expected = case.get("expected_decoded")
    views = [_event_view(e) for e in events]
    if isinstance(expected, list):
        if len(expected) != len(views):
            return f"expected {len(expected)} events, got {len(views)}"
        for i, (want, got) in enumerate(zip(expected, views)):
            found = _subset_diff(want, got, f"$[{i}]")
            if found:
                return found
        return None
    if expected is None:
        return None if not views else f"expected no event, got {len(views)}"
    if len(views) != 1:
        return f"expected 1 event, got {len(views)}"
    return _subset_diff(expected, views[0], "$")


def check_encode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Standard encode cases, compared as the case's ``compare`` mode says."""
    return generic_check_encode(PROTOCOL, case)


def round_trip_case(case: dict[str, Any], base: Path) -> str | None:
    """decode(encode(input)) against the encoder's projection, for a standard or SQL encode case."""
    inp = case.get("input") or {}
    config = case.get("config", {})
    module = codec_module(PROTOCOL)
    options, clock = options_from_vector(config, module.OPTIONS)
    encoder = module.Encoder(options, clock=clock)
    if "ddl_sql" in inp or "files" in inp:
        files = inp.get("files") or {}
        table = table_from_sql(inp.get("ddl_sql") or (base / files["ddl"]).read_text())
        rows = rows_from_sql(table, inp.get("dml_sql") or (base / files["dml"]).read_text(),
                             _session_zone(inp.get("session", [])), config.get("time_zone", "UTC"))
        events: list[Event] = [
            RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=1 << 18,
                      columns=make_row(row), table_info=table) for row in rows
        ]
    else:
        events = events_from_vector(inp)
    return _check_round_trip(encoder, events, encoder.encode(events), config)


def check_case(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Every Debezium case layout."""
    if case.get("direction") == "decode":
        return check_decode(case, meta, base)
    inp = case.get("input") or {}
    if "expected_error" in case:
        messages = encode_case(PROTOCOL, case)
        return None if not messages else f"expected {case['expected_error']} (no message), got {len(messages)}"
    if "ddl_sql" in inp or "dml_sql" in inp or "files" in inp:
        return _check_sql_case(case, base)
    return check_encode(case, meta, base)


