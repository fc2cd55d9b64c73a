"""Tolerant reading: what other Debezium-JSON producers write and TiCDC does not.

The Debezium MySQL connector 0.10-2.x (no ``commit_ts``: the source clock gives one), Flink CDC (a
hand-kept schema older than its payload), Flink's debezium-json encoder (only
``before``/``after``/``op``, handled where the source block is read) and Debezium's
ExtractNewRecordState SMT (bare rows). docs/protocols/debezium.md lists every tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyticdc.codec.debezium.message import fail
from pyticdc.codec.debezium.readers import NO_COLUMNS, Columns, read_int
from pyticdc.errors import DecodeError

__all__ = ["is_unwrapped_row", "not_a_change_event", "source_commit_ts", "stale_schema", "unwrap_row"]


_MAX_PHYSICAL_MS: Final = 1 << 46
#: source timestamp fields, most precise first, with their units per millisecond.
_SOURCE_CLOCKS: Final = (("ts_ns", 1_000_000), ("ts_us", 1000), ("ts_ms", 1))


def source_commit_ts(source: Mapping[str, Any], at: str) -> int:
    """A TSO for a producer without ``commit_ts``: ``physical_ms << 18 | sub-ms µs``, 0 if unknown.

    The Debezium connector's ``source.ts_ms`` is the binlog event's commit time (0 in the snapshot
    rows of early versions); Debezium 2.6+ adds ``ts_us``/``ts_ns``. The most precise one present wins;
    its microseconds within the millisecond (0-999) fill the 18-bit logical part, so the order of
    changes within a millisecond is kept and the physical part is the commit time like TiDB's.
    """
    for name, per_ms in _SOURCE_CLOCKS:
        raw = source.get(name)
        if raw is None:
            continue
        value = read_int(raw, f"{at}.{name}")
        ms, rest = divmod(value, per_ms)
        if not 0 <= ms < _MAX_PHYSICAL_MS:
            raise fail(f"{name} out of range", f"{at}.{name}")
        return (ms << 18) | (rest * 1000 // per_ms)
    return 0


def stale_schema() -> Columns:
    """No typed columns: the schema lists fewer columns than the payload carries, so it was not
    written for this payload and nothing in it can be trusted (the row is read schemaless).

    JsonConverter derives the JSON from the schema, so no real producer does this; Flink CDC's
    ``debezium-data-schema-include.json`` does (its schema predates 11 payload columns and types
    ``id`` as int32 while the payload has Decimal bytes; its test compares only the payload).
    """
    return NO_COLUMNS


#: Keys only a change-event envelope has: a document with none of them is a bare row.
_ENVELOPE_KEYS: Final = ("op", "before", "after", "source", "ddl", "tableChanges", "databaseName")
#: ExtractNewRecordState ``add.fields`` (default prefix ``__``) that say where a row comes from.
_UNWRAPPED_SOURCE: Final = {"__db": "db", "__table": "table", "__source_ts_ms": "ts_ms",
                            "__source_ts_us": "ts_us", "__source_ts_ns": "ts_ns"}


def not_a_change_event(payload: Mapping[str, Any], at: str) -> DecodeError:
    """The error for an object that is neither a Debezium event nor an unwrapped row."""
    return fail("neither a change event (op) nor a schema change (ddl)", at)


def is_unwrapped_row(payload: Mapping[str, Any]) -> bool:
    """True for a bare column map (ExtractNewRecordState output): no envelope key at all."""
    return bool(payload) and not any(k in payload for k in _ENVELOPE_KEYS)


def unwrap_row(payload: dict[str, Any], schema: dict[str, Any] | None) -> tuple[str, dict[str, Any],
                                                                          dict[str, Any] | None, dict[str, Any]]:
    """An unwrapped row (Debezium's ExtractNewRecordState SMT) as (op, envelope, envelope schema, source).

    The row is an upsert: INSERT, or DELETE if ``__deleted``.
    The SMT drops the envelope, so there is no pre-image and, unless ``add.fields`` put them back
    as ``__db``/``__table``/``__source_ts_ms``, no table and no commit time (then "" and 0). Fields
    whose names start with ``__`` are the SMT's metadata, not columns. ``__op`` ``d`` or
    ``__deleted`` true (``delete.handling.mode=rewrite``) make the row a DELETE of that image;
    anything else is an INSERT meaning "the row now is", as upsert consumers read these topics.
    """
    source: dict[str, Any] = {}
    columns: dict[str, Any] = {}
    for name, raw in payload.items():
        if name.startswith("__"):
            if name in _UNWRAPPED_SOURCE:
                source[_UNWRAPPED_SOURCE[name]] = raw
            continue
        columns[name] = raw
    deleted = payload.get("__deleted")
    if isinstance(deleted, str):
        deleted = deleted.lower() == "true"
    op = "d" if deleted is True or payload.get("__op") == "d" else "c"
    side = "before" if op == "d" else "after"
    fields = schema.get("fields") if schema is not None else None
    # The schema of an unwrapped row is the row struct itself: present it as an envelope's.
    envelope_schema = {"fields": [{"field": side, "fields": fields}]} if isinstance(fields, list) else None
    return op, {side: columns}, envelope_schema, source
