"""Vector adapter for Craft (``shared/vectors/craft.json``).

Encode cases give rows as explicit ``column_groups`` (the craft wire model: name, type code,
flag, value) instead of a table + images, so the events are built here; decode cases give the
wire structure, compared with ``pyticdc.codec.craft.explain`` and cross-checked with ``decode``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyticdc.codec import craft
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, RowChange, TableInfo, Value, make_row
from pyticdc.vectors.compare import diff_json, expected_bytes
from pyticdc.vectors.generic import check_messages
from pyticdc.vectors.inputs import events_from_vector, options_from_vector, value_from_vector

__all__ = ["PROTOCOL", "check_decode", "check_encode", "events_from_craft_vector"]

PROTOCOL = "craft"


def _row_from_groups(ev: dict[str, Any]) -> RowChange:
    """A RowChange whose table_info holds exactly the columns the groups name, in group order."""
    columns: dict[str, ColumnInfo] = {}
    images: dict[str, dict[str, Value]] = {}
    for group in ev["column_groups"]:
        image = images.setdefault(group["group_type"], {})
        for col in group["columns"]:
            info = columns.get(col["name"])
            if info is None:
                flag = int(col.get("flag", 0))
                info = columns[col["name"]] = ColumnInfo(
                    name=col["name"], type_code=int(col["type"]), flags=flag,
                    unsigned=bool(flag & ColumnFlag.UNSIGNED), nullable=bool(flag & ColumnFlag.NULLABLE),
                )
            image[col["name"]] = value_from_vector(col.get("value"), info)
    partition = int(ev.get("partition", -1))
    table = TableInfo(
        schema=ev.get("schema") or "", table=ev.get("table") or "", is_partition=partition >= 0,
        columns=tuple(columns.values()),
    )
    new, old = images.get("new"), images.get("old")
    op = ev.get("op") or ("update" if new is not None and old is not None else "insert" if old is None else "delete")
    return RowChange(
        op=Op(op), schema=table.schema, table=table.table, commit_ts=int(ev["commit_ts"]),
        columns=make_row(new), pre_columns=make_row(old),
        physical_table_id=partition if partition >= 0 else 0, row_id=int(ev.get("row_id", 0) or 0),
        table_info=table,
    )


def events_from_craft_vector(inp: dict[str, Any]) -> list[Event]:
    """Model events from a craft case ``input``: rows with ``column_groups``, or the standard layout."""
    events: list[Event] = []
    for ev in inp.get("events", ()):
        if ev.get("kind") == "row" and "column_groups" in ev:
            events.append(_row_from_groups(ev))
        else:
            events.extend(events_from_vector({"table": inp.get("table"), "events": [ev]}))
    return events


def check_encode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Encode the case's events with its config and compare the message bytes."""
    options, clock = options_from_vector(case.get("config", {}), craft.OPTIONS)
    messages = craft.Encoder(options, clock=clock).encode(events_from_craft_vector(case["input"]))
    return check_messages(case, messages)


def check_decode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Explain the encoded value and compare it with ``expected_decoded``; decode must agree."""
    value = expected_bytes(case["encoded_value"])
    key = expected_bytes(case.get("encoded_key"))
    expected = case.get("expected_decoded")
    if expected is None:  # a case asserting the bytes are rejected
        try:
            craft.decode(value, key)
        except DecodeError:
            return None
        return "expected a DecodeError"
    found = diff_json(expected, craft.explain(value, key))
    if found:
        return found
    events = craft.decode(value, key)
    wire_events = expected.get("events", [])
    if len(events) != len(wire_events):
        return f"decode returned {len(events)} events, explain {len(wire_events)}"
    for i, (event, wire) in enumerate(zip(events, wire_events)):
        found = _check_event(event, wire, f"$.events[{i}]")
        if found:
            return found
    return None


def _check_event(event: Event, wire: dict[str, Any], path: str) -> str | None:
    """The decoded model event must say what the wire structure says."""
    kind = {"row": "row", "ddl": "ddl", "resolved": "watermark"}[wire["type"]]
    if event.kind != kind:
        return f"{path}: decoded a {event.kind}, expected {kind}"
    if event.kind == "watermark":
        return None if getattr(event, "resolved_ts", None) == wire["commit_ts"] else f"{path}.commit_ts: mismatch"
    if getattr(event, "commit_ts", None) != wire["commit_ts"]:
        return f"{path}.commit_ts: decoded {getattr(event, 'commit_ts', None)}"
    for field in ("schema", "table"):
        if getattr(event, field) != (wire[field] or ""):
            return f"{path}.{field}: decoded {getattr(event, field)!r}"
    if event.kind == "ddl":
        decoded = {"ddl_type": getattr(event, "ddl_type", None), "query": getattr(event, "query", None)}
        return diff_json({"ddl_type": wire["ddl_type"], "query": wire["query"]}, decoded, path)
    assert isinstance(event, RowChange)
    for group in wire["column_groups"]:
        image = event.columns if group["group_type"] == "new" else event.pre_columns
        if image is None:
            return f"{path}: no {group['group_type']} image decoded"
        for col in group["columns"]:
            got: Any = image.get(col["name"])
            if isinstance(got, bytes):
                got = got.decode("utf-8") if col["value"] is None or isinstance(col["value"], str) else {
                    "hex": got.hex()}
            found = diff_json(col["value"], got, f"{path}.{group['group_type']}.{col['name']}")
            if found:
                return found
    return None
