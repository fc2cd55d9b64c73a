"""Shared helpers of the real-capture tests (../shared/real): listing files and summarising events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyticdc import DDLEvent, Event, RowChange, Watermark

__all__ = ["Summary", "names", "stamp", "summary"]

# A summary of one decoded event: the fields the README states.
#   ("resolved", ts)
#   ("ddl", ts, schema, table, ActionType, query)
#   ("row", op, ts, schema, table, physical_table_id, post-image, pre-image, ((name, type, flags), ...))
Summary = tuple[Any, ...]


def summary(event: Event) -> Summary:
    """The README-level facts of one decoded event."""
    if isinstance(event, Watermark):
        return ("resolved", event.resolved_ts)
    if isinstance(event, DDLEvent):
        return ("ddl", event.commit_ts, event.schema, event.table, event.ddl_type, event.query)
    assert isinstance(event, RowChange)
    assert event.table_info is not None
    return ("row", event.op, event.commit_ts, event.schema, event.table, event.physical_table_id,
            None if event.columns is None else dict(event.columns),
            None if event.pre_columns is None else dict(event.pre_columns),
            tuple((c.name, c.type_code, c.flags) for c in event.table_info.columns))


def stamp(event: Event) -> int:
    """An event's commit ts (resolved ts for a watermark)."""
    if isinstance(event, Watermark):
        return event.resolved_ts
    assert isinstance(event, (RowChange, DDLEvent))
    return event.commit_ts


def names(folder: Path) -> list[str]:
    """The sorted names in ``folder``."""
    return sorted(p.name for p in folder.iterdir())
