"""``explain``: a wire-level view of one Simple message, JSON or Avro, for inspection tools."""

from __future__ import annotations

import binascii
from typing import Any, Final

import orjson

from pyticdc.codec.compression import decompress
from pyticdc.codec.simple.avro import MESSAGE_BRANCH, VALUE_BRANCH, VALUE_BRANCH_NAMES
from pyticdc.codec.simple.decoder import parse_avro, parse_json
from pyticdc.codec.simple.message import PROTOCOL, Wire
from pyticdc.errors import DecodeError

__all__ = ["explain"]

_NULL_BRANCH: Final = VALUE_BRANCH["null"]
#: The payload record of each message type.
_RECORDS: Final = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}


def _avro_union(value: Any, branch: str) -> Any:
    return None if value is None else {branch: value}


def _avro_native_table(raw: dict[str, Any]) -> dict[str, Any]:
    columns = []
    for column in raw["columns"]:
        dt = column["dataType"]
        columns.append({
            "name": column["name"],
            "dataType": {
                "mysqlType": dt["mysqlType"], "charset": dt["charset"], "collate": dt["collate"],
                "length": dt["length"], "decimal": _avro_union(dt["decimal"], "int"),
                "elements": _avro_union(dt["elements"], "array"), "unsigned": _avro_union(dt["unsigned"], "boolean"),
                "zerofill": _avro_union(dt["zerofill"], "boolean"),
            },
            "nullable": column["nullable"],
            "default": _avro_union(None if column["default"] is None
                                   else column["default"].decode("utf-8", "backslashreplace"), "string"),
        })
    return {**raw, "columns": columns}


def _avro_native_values(values: dict[str, Any] | None) -> Any:
    if values is None:
        return None
    native = {}
    for name, (branch, value) in values.items():
        label = VALUE_BRANCH_NAMES[branch]
        if label in ("Timestamp", "UnsignedBigint"):
            label = "com.pingcap.simple.avro." + label
        if isinstance(value, bytes):
            value = value.hex()
        native[name] = None if branch == _NULL_BRANCH else {label: value}
    return {"map": native}


def _avro_native(wire: Wire) -> dict[str, Any]:
    # goavro's native form: unions as {"branch": value}; bytes shown as hex.
    ns = "com.pingcap.simple.avro."
    payload: dict[str, Any]
    if wire.kind == "WATERMARK":
        payload = {"version": wire.version, "commitTs": wire.commit_ts, "buildTs": wire.build_ts}
    elif wire.kind == "BOOTSTRAP":
        assert wire.table_schema is not None
        payload = {"version": wire.version, "buildTs": wire.build_ts,
                   "tableSchema": _avro_native_table(wire.table_schema)}
    elif wire.kind == "DDL":
        payload = {
            "version": wire.version, "type": wire.type, "sql": wire.sql, "commitTs": wire.commit_ts,
            "buildTs": wire.build_ts,
            "tableSchema": None if wire.table_schema is None
            else {ns + "TableSchema": _avro_native_table(wire.table_schema)},
            "preTableSchema": None if wire.pre_table_schema is None
            else {ns + "TableSchema": _avro_native_table(wire.pre_table_schema)},
        }
    else:
        payload = {
            "version": wire.version, "database": wire.database, "table": wire.table, "tableID": wire.table_id,
            "type": wire.type, "commitTs": wire.commit_ts, "buildTs": wire.build_ts,
            "schemaVersion": wire.schema_version,
            "claimCheckLocation": _avro_union(wire.claim_check_location or None, "string"),
            "handleKeyOnly": _avro_union(wire.handle_key_only if wire.handle_key_only else None, "boolean"),
            "checksum": _avro_union(wire.checksum, ns + "Checksum"),
            "data": _avro_native_values(wire.data), "old": _avro_native_values(wire.old),
        }
    return {ns + "Message": {"type": wire.kind, "payload": {ns + _RECORDS[wire.kind]: payload}}}


def _printable(value: Any) -> Any:
    """Strings with undecodable bytes (kept as surrogates) shown with ``\\xNN`` escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def _detect(data: bytes) -> tuple[str, Wire]:
    head = data.lstrip()[:1]
    if head == b"{":
        return "json", parse_json(data)
    if data[:1] == bytes([MESSAGE_BRANCH << 1]):
        return "avro", parse_avro(data, tagged=True)
    raise DecodeError(PROTOCOL, "neither a Simple JSON nor a Simple Avro message", 0)


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """A wire-level view of one message: encoding, compression and the message as sent.

    The encoding (JSON or Avro) and compression (none, lz4 frame, snappy block) are detected.
    JSON messages are shown as parsed; Avro ones in goavro's native form (unions as
    ``{"branch": value}``, bytes as hex).
    """
    if not value:
        raise DecodeError(PROTOCOL, "empty message", 0)
    raw = bytes(value)
    attempts: list[tuple[str, bytes]] = [("none", raw)]
    if raw[:4] == b"\x04\x22\x4d\x18":
        attempts.append(("lz4", raw))
    attempts.append(("snappy", raw))
    first_error: DecodeError | None = None
    for method, data in attempts:
        try:
            data = decompress(method, data, PROTOCOL)
            encoding, wire = _detect(data)
        except DecodeError as exc:
            first_error = first_error or exc
            continue
        message: Any = orjson.loads(data) if encoding == "json" else _printable(_avro_native(wire))
        summary: dict[str, Any] = {"type": wire.type, "commitTs": wire.commit_ts, "buildTs": wire.build_ts}
        if wire.kind == "DML":
            summary.update(database=wire.database, table=wire.table, tableID=wire.table_id,
                           schemaVersion=wire.schema_version, handleKeyOnly=wire.handle_key_only,
                           claimCheckLocation=wire.claim_check_location or None)
        return {
            "protocol": PROTOCOL, "encoding": encoding, "compression": method, "size": len(raw),
            "key": None if key is None else binascii.hexlify(key).decode(), "summary": summary, "message": message,
        }
    assert first_error is not None
    raise first_error
