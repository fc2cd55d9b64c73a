"""``explain``: the wire structure of a Craft message, for people (``pyticdc decode``, vectors)."""

from __future__ import annotations

from typing import Any

from pyticdc.codec.craft.framing import parse
from pyticdc.codec.craft.message import EVENT_DDL, EVENT_NAMES, EVENT_ROW, GROUP_NAMES
from pyticdc.codec.craft.values import decode_value

__all__ = ["explain"]


def _explain_value(type_code: int, flag: int, raw: bytes | None, at: int) -> Any:
    value = decode_value(type_code, flag, raw, at)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": value.hex()}
    return value


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """The wire structure of a craft message: version, size tables, term dictionary, events."""
    wire = parse(value)
    events: list[dict[str, Any]] = []
    for event in wire.events:
        item: dict[str, Any] = {
            "commit_ts": event.commit_ts, "type": EVENT_NAMES[event.event_type], "partition": event.partition,
            "schema": event.schema, "table": event.table,
        }
        if event.event_type == EVENT_ROW:
            item["column_groups"] = [
                {
                    "group_type": GROUP_NAMES[group.group_type],
                    "columns": [
                        {
                            "name": name, "type": type_code, "flag": flag,
                            "raw_hex": None if raw is None else raw.hex(),
                            "value": _explain_value(type_code, flag, raw, at),
                        }
                        for name, type_code, flag, raw, at in zip(
                            group.names, group.types, group.flags, group.values, group.offsets,
                        )
                    ],
                }
                for group in event.groups
            ]
        elif event.event_type == EVENT_DDL:
            item["ddl_type"] = event.ddl_type
            item["query"] = event.query
        events.append(item)
    return {
        "version": wire.version, "size_tables": wire.size_tables, "term_dictionary": wire.terms, "events": events,
    }
