"""Feeding a DeltaReplica apply units by hand, shared by the replica tests."""

from __future__ import annotations

from pyticdc.consumer.units import ApplyUnit
from pyticdc.model import DDLEvent, RowChange
from pyticdc.replica import DeltaReplica


def apply_batch(replica: DeltaReplica, *units: list[RowChange] | DDLEvent) -> None:
    """Apply each unit (a DDL, or rows consistent at their last commit ts), then commit the batch."""
    for unit in units:
        if isinstance(unit, DDLEvent):
            replica.apply(ApplyUnit(kind="ddl", ddl=unit, consistent_ts=unit.commit_ts))
        else:
            replica.apply(ApplyUnit(kind="rows", rows=tuple(unit), consistent_ts=unit[-1].commit_ts))
    replica.commit(b"")
