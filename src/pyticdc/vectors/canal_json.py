"""Canal-JSON vector adapter: encode cases, decode cases and the ``type_mapping`` table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import orjson

from pyticdc.codec import canal_json
from pyticdc.codec.canal_json.message import java_sql_type, mysql_type
from pyticdc.codec.canal_json.values import render
from pyticdc.model import ColumnFlag, ColumnInfo, DDLEvent, Event, IndexInfo, Op, Row, RowChange, TableInfo, Watermark
from pyticdc.vectors.compare import diff_json, expected_bytes
from pyticdc.vectors.generic import check_encode, compare_message
from pyticdc.vectors.inputs import events_from_vector, options_from_vector, value_from_vector

__all__ = ["PROTOCOL", "check_case", "check_decode", "parse_column_ddl", "render_event"]

PROTOCOL: Final = "canal-json"


def check_case(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Run one case of a Canal-JSON vector file (encode, decode or type-mapping)."""
    if meta.get("kind") == "type_mapping":
        return _check_type_mapping(case)
    if case.get("direction") == "decode":
        return check_decode(case, meta, base)
    config = case.get("config", {})
    expected = case.get("expected_value")
    handling = config.get("large_message_handle_option", "none")
    extra: dict[str, Any] = {}
    if handling != "none" and "max_message_bytes" not in config and expected is not None:
        # Such a case shows the re-encoded shape of a message that was too large; pin the limit
        # to that shape's size so the full message exceeds it, as it did when the case was made.
        extra["max_message_bytes"] = len(expected_bytes(expected) or b"") + 36
    if handling == "claim-check":
        return _check_claim_check(case, extra)
    return check_encode(PROTOCOL, case, extra or None)


class _FixedStore:
    """A claim-check store answering with one location: the storage names the object (a UUID)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.stored: list[bytes] = []

    def put(self, key: bytes | None, value: bytes) -> str:
        self.stored.append(value)
        return self.location

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        return None, self.stored[-1]


def _check_claim_check(case: dict[str, Any], extra: dict[str, Any]) -> str | None:
    config = {**case.get("config", {}), **extra}
    location = f"{str(config.get('claim_check_storage_uri', 'file:///claim-check')).rstrip('/')}/claim.json"
    expected = expected_bytes(case.get("expected_value"))
    if expected is not None:
        try:
            location = orjson.loads(expected)["_tidb"]["claimCheckLocation"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            pass  # compressed or unusual: keep the default location
    options, clock = options_from_vector(config, canal_json.OPTIONS)
    encoder = canal_json.Encoder(options, clock=clock, claim_check=_FixedStore(location))
    messages = encoder.encode(events_from_vector(case["input"]))
    if len(messages) != 1:
        return f"expected 1 message, got {len(messages)}"
    return compare_message(case, messages[0])


# --------------------------------------------------------------------------- decode cases
def _wire_string(column: ColumnInfo | None, value: Any) -> Any:
    """A decoded value rendered back to its Canal-JSON string (formatValue), None for NULL."""
    if value is None:
        return None
    binary = bool(column is not None and column.flags & ColumnFlag.BINARY)
    bits = 32 if column is not None and column.type_code == 4 else 64
    return orjson.loads(render(value, binary, bits))


def render_event(event: Event, content_compatible: bool = False) -> dict[str, Any]:
    """A decoded event in the ``expected_decoded`` vocabulary (values as wire strings)."""
    if isinstance(event, RowChange):
        info = event.table_info
        columns: dict[str, ColumnInfo] = info.column_by_name if info is not None else {}
        primary = next((i for i in info.indexes if i.primary), None) if info is not None else None

        def strings(row: Row | None) -> dict[str, Any] | None:
            return None if row is None else {n: _wire_string(columns.get(n), v) for n, v in row.items()}

        image = event.pre_columns if event.op is Op.DELETE else event.columns
        mysql_types = {n: c.type_desc if c.type_desc is not None else mysql_type(c, content_compatible)
                       for n, c in columns.items()}
        values: Row = image if image is not None else Row()
        sql_types = {n: java_sql_type(c, values.get(n)) for n, c in columns.items()}
        return {
            "kind": "row", "schema": event.schema, "table": event.table, "op": event.op.value,
            "commit_ts": event.commit_ts, "pk_names": list(primary.columns) if primary else [],
            "columns": strings(event.columns), "pre_columns": strings(event.pre_columns),
            "mysql_types": mysql_types, "sql_types": sql_types, "handle_key_only": event.handle_key_only,
            "claim_check_location": event.claim_check_location,
        }
    if isinstance(event, DDLEvent):
        return {"kind": "ddl", "schema": event.schema, "table": event.table, "query": event.query,
                "ddl_type": event.ddl_type, "commit_ts": event.commit_ts}
    if isinstance(event, Watermark):
        return {"kind": "resolved", "ts": event.resolved_ts, "resolved_ts": event.resolved_ts}
    return {"kind": event.kind}


def _compare(expected: Any, actual: dict[str, Any], path: str) -> str | None:
    if not isinstance(expected, dict):
        return f"{path}: unsupported expectation {expected!r}"
    for key, want in expected.items():
        if key not in actual:
            return f"{path}.{key}: not rendered by the adapter"
        found = diff_json(want, actual[key], f"{path}.{key}")
        if found:
            return found
    return None


_WIRE_NAMES: Final = {"pkNames": "pk_names", "isDdl": "is_ddl", "sqlType": "sql_types", "mysqlType": "mysql_types",
                      "database": "schema", "sql": "query"}


def _wire_view(envelope: dict[str, Any]) -> dict[str, Any]:
    """Wire-level fields of one message, under their own and the snake_case names (for keys the
    decoded events do not carry: ``es``, ``ts``, ``id``, ``type``, …)."""
    view = dict(envelope)
    for wire, name in _WIRE_NAMES.items():
        if wire in envelope:
            view[name] = envelope[wire]
    return view


def check_decode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Decode ``encoded_value`` and compare the events with ``expected_decoded``."""
    value = expected_bytes(case["encoded_value"])
    assert value is not None
    config = case.get("config", {})
    options, _ = options_from_vector(config, canal_json.OPTIONS)
    decoder = canal_json.Decoder(options)
    events = decoder.decode(value)
    cc = decoder.options.content_compatible
    envelope = canal_json.explain(value)
    envelopes = envelope.get("messages", [envelope]) if set(envelope) == {"messages"} else [envelope]
    expected = case["expected_decoded"]
    if isinstance(expected, list):
        if len(expected) != len(events):
            return f"expected {len(expected)} events, got {len(events)}"
        for i, (want, got) in enumerate(zip(expected, events)):
            wire = _wire_view(envelopes[min(i, len(envelopes) - 1)])
            found = _compare(want, {**wire, **render_event(got, cc)}, f"$[{i}]")
            if found:
                return found
        return None
    if len(events) != 1:
        return f"expected 1 event, got {len(events)}"
    return _compare(expected, {**_wire_view(envelopes[0]), **render_event(events[0], cc)}, "$")


# --------------------------------------------------------------------------- type mapping
_INTEGERS: Final[dict[str, tuple[int, int, int]]] = {
    # name: (type code, default flen signed, default flen unsigned)
    "tinyint": (1, 4, 3), "int1": (1, 4, 3), "smallint": (2, 6, 5), "int2": (2, 6, 5),
    "mediumint": (9, 9, 8), "middleint": (9, 9, 8), "int3": (9, 9, 8), "int": (3, 11, 10),
    "integer": (3, 11, 10), "int4": (3, 11, 10), "bigint": (8, 20, 20), "int8": (8, 20, 20),
}
_SIMPLE: Final[dict[str, int]] = {
    "date": 10, "json": 245, "tinytext": 249, "text": 252, "mediumtext": 250, "longtext": 251,
    "tinyblob": 249, "blob": 252, "mediumblob": 250, "longblob": 251, "vector": 225,
}
_TEXT_FLEN: Final[dict[int, int]] = {249: 255, 252: 65535, 250: 16777215, 251: 4294967295, 245: 4294967295}
_COLUMN_DDL: Final = re.compile(r"\s*(`(?:[^`]|``)+`|\S+)\s+([A-Za-z0-9_]+)\s*(\((.*?)\))?(.*)\Z", re.S)
_ELEM: Final = re.compile(r"'((?:[^'\\]|''|\\.)*)'")
_CHARSET: Final = re.compile(r"\b(?:character\s+set|charset)\s+(\w+)")


def _elems(args: str) -> tuple[str, ...]:
    return tuple(e.replace("''", "'").replace("\\'", "'").replace("\\\\", "\\") for e in _ELEM.findall(args))


def parse_column_ddl(text: str) -> ColumnInfo:
    """A ColumnInfo from a TiDB column definition (``b tinyint(3) unsigned``), default charset utf8mb4."""
    match = _COLUMN_DDL.match(text)
    if match is None:
        raise ValueError(f"unparsable column definition {text!r}")
    name = match.group(1).strip("`").replace("``", "`")
    type_name = match.group(2).lower()
    args = match.group(4)
    rest = " " + (match.group(5) or "").lower() + " "
    numbers = [int(a) for a in args.split(",")] if args is not None and "'" not in args else []
    unsigned = " unsigned " in rest or " zerofill " in rest
    zerofill = " zerofill " in rest
    if type_name == "double" and rest.startswith(" precision"):
        rest = rest[len(" precision"):]
    charset_match = _CHARSET.search(rest)
    text_charset = charset_match.group(1) if charset_match else "utf8mb4"
    flen = decimal = -1
    elems: tuple[str, ...] | None = None
    charset = "binary"
    if type_name in _INTEGERS:
        code, signed_flen, unsigned_flen = _INTEGERS[type_name]
        flen = numbers[0] if numbers else (unsigned_flen if unsigned else signed_flen)
        decimal = 0
    elif type_name in ("bool", "boolean"):
        code, flen, decimal = 1, 1, 0
    elif type_name in ("float", "double", "real"):
        code = 4 if type_name == "float" else 5
        if type_name == "float" and len(numbers) == 1:
            code = 4 if numbers[0] <= 24 else 5  # FLOAT(p): p > 24 is a DOUBLE
            flen = -1
        elif len(numbers) == 2:
            flen, decimal = numbers
        else:
            flen = 12 if code == 4 else 22
    elif type_name in ("decimal", "numeric", "dec", "fixed"):
        code = 246
        flen = numbers[0] if numbers else 10
        decimal = numbers[1] if len(numbers) > 1 else 0
    elif type_name in ("time", "datetime", "timestamp"):
        code = {"time": 11, "datetime": 12, "timestamp": 7}[type_name]
        decimal = numbers[0] if numbers else 0
        flen = {11: 10, 12: 19, 7: 19}[code] + (decimal + 1 if decimal > 0 else 0)
    elif type_name == "year":
        code, flen, decimal = 13, 4, 0
        unsigned = zerofill = True  # TiDB gives YEAR the Unsigned and ZeroFill flags
    elif type_name == "bit":
        code, flen, decimal = 16, numbers[0] if numbers else 1, 0
        unsigned = True
    elif type_name in ("char", "varchar", "binary", "varbinary", "nchar", "nvarchar"):
        code = 254 if type_name in ("char", "binary", "nchar") else 15
        flen = numbers[0] if numbers else 1
        decimal = 0
        charset = "binary" if type_name in ("binary", "varbinary") else text_charset
    elif type_name in _SIMPLE:
        code = _SIMPLE[type_name]
        flen = _TEXT_FLEN.get(code, 10 if code == 10 else -1)
        if code == 225:
            flen = numbers[0] if numbers else -1
        decimal = 0
        if "text" in type_name:
            charset = text_charset
    elif type_name in ("enum", "set"):
        code = 247 if type_name == "enum" else 248
        elems = _elems(args or "")
        charset = text_charset
    else:
        raise ValueError(f"unsupported column type {type_name!r} in {text!r}")
    primary = " primary key " in rest
    not_null = primary or " not null " in rest
    flags = 0
    if charset == "binary":
        flags |= ColumnFlag.BINARY
    if unsigned:
        flags |= ColumnFlag.UNSIGNED
    if primary:
        flags |= ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY
    if not not_null:
        flags |= ColumnFlag.NULLABLE
    return ColumnInfo(
        name=name, type_code=code, flags=int(flags), charset=charset,
        collation="binary" if charset == "binary" else f"{charset}_bin", flen=flen, decimal=decimal,
        elems=elems, unsigned=unsigned, zerofill=zerofill, nullable=not not_null,
    )


def _encode_one(column: ColumnInfo, value: Any, content_compatible: bool) -> dict[str, Any]:
    table = TableInfo(schema="test", table="t", columns=(column,),
                      indexes=(IndexInfo(name="primary", columns=(column.name,), primary=True, unique=True),)
                      if column.is_primary_key else ())
    event = RowChange(op=Op.INSERT, schema="test", table="t", commit_ts=1 << 18,
                      columns=Row({column.name: value_from_vector(value, column)}), table_info=table)
    encoder = canal_json.Encoder(content_compatible=content_compatible)
    [message] = encoder.encode([event])
    assert message.value is not None
    envelope: dict[str, Any] = orjson.loads(message.value)
    return envelope


def _check_type_mapping(case: dict[str, Any]) -> str | None:
    try:
        column = parse_column_ddl(case["column_ddl"])
    except ValueError as exc:
        return str(exc)
    samples = case.get("sqlType_samples") or []
    first = samples[0]["value"] if samples else None
    for content_compatible, key in ((False, "mysqlType"), (True, "mysqlType_content_compatible")):
        if key not in case:
            continue
        got = _encode_one(column, first, content_compatible)["mysqlType"][column.name]
        if got != case[key]:
            return f"{key}: expected {case[key]!r}, got {got!r}"
    for i, sample in enumerate(samples):
        got_type = _encode_one(column, sample["value"], False)["sqlType"][column.name]
        if got_type != sample["sqlType"]:
            return f"sqlType_samples[{i}] (value {sample['value']!r}): expected {sample['sqlType']}, got {got_type}"
    return None
