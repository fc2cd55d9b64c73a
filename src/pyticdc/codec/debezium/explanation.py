"""``explain``: the wire structure of one Debezium message, for people and tools."""

from __future__ import annotations

from typing import Any

from pyticdc.codec.debezium.message import PROTOCOL, load_json, row_schema, split_envelope
from pyticdc.codec.debezium.tolerant import is_unwrapped_row

__all__ = ["explain", "explain_document"]


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """The wire structure of one message: kind, op, table, columns with their schema and values."""
    if not value:
        return {"protocol": PROTOCOL, "kind": "tombstone", "key": load_json(key, "key") if key else None}
    return explain_document(load_json(bytes(value), "$"), load_json(bytes(key), "key") if key else None)


def explain_document(doc: Any, key_doc: Any) -> dict[str, Any]:
    """A wire-level view of one Debezium message for people and tools."""
    payload, schema, _ = split_envelope(doc, "$")
    if payload is None:
        return {"protocol": PROTOCOL, "kind": "tombstone", "key": key_doc, "schema": schema}
    raw_source = payload.get("source")
    source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    op = payload.get("op")
    kind = "watermark" if op == "m" else "truncate" if op == "t" else (
        "row" if op is not None else ("ddl" if "ddl" in payload else
                                      "unwrapped-row" if is_unwrapped_row(payload) else "unknown"))
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
        fields = {f.get("field"): f for f in (row_schema(schema) or [])}
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
