"""Driver side of the distributed apply: a batch's metadata → what to release, in which segments (pure).

From the metadata rows of :func:`pyticdc.spark.apply.decode.decode_records` (watermarks, DDL, bad records,
partitions read) and the consumer state of the last committed batch, :func:`plan_batch` computes what the
consumer engine would: per-partition resolved ts (stale ones ignored), the global watermark, the DDLs to
execute (re-sends and broadcast copies dropped, in commit order) and those that wait, the next offsets.

DDL barriers and *waves*. The DDLs released by a batch are cut, in commit order, into waves: a wave ends
before a DDL touching a table the wave already touched, and a DDL that may touch any table (RENAME, DROP
SCHEMA, one without a table) is a wave of its own. The rows of a table between two of its DDLs (a
segment) have the *level* of the wave of the DDL before them (0 before the first). The batch then runs
``segments of level 0, DDLs of wave 1, segments of level 1, DDLs of wave 2, ...``: every DDL runs after
the rows before it and before the rows after it, on its tables, and all DDLs run in commit order. One
Spark job applies all tables' segments of a level: a batch costs ``1 + waves`` apply jobs, however many
tables it touches.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyticdc.consumer.state import ConsumerState
from pyticdc.consumer.units import QuarantinedRecord
from pyticdc.model import ActionType, DDLEvent
from pyticdc.spark.apply.decode import Marks, ordered_steps, tkey

__all__ = ["BatchPlan", "carries", "plan_batch", "touched_tables"]

TopicPartition = tuple[str, int]
#: DDL types that may change a table other than the one they name (or name none): barriers for every table.
_GLOBAL: Final = frozenset({int(ActionType.RENAME_TABLE), int(ActionType.RENAME_TABLES), int(ActionType.DROP_SCHEMA)})


def touched_tables(ddl: DDLEvent) -> str | None:
    """The table key a DDL is a barrier for; None when it may touch any table."""
    if ddl.ddl_type in _GLOBAL or not ddl.table:
        return None
    return tkey(ddl.schema, ddl.table)


@dataclass
class BatchPlan:
    """What one batch releases and how (see module docstring)."""

    limit: int
    #: The global watermark (``limit`` is lower while rows wait for their schema).
    watermark: int
    released_before: int
    next_offsets: dict[TopicPartition, int]
    resolved: dict[TopicPartition, int]
    marks: Marks
    #: Released DDLs in commit order, each with its wave (1-based).
    ddls: list[tuple[int, DDLEvent]] = field(default_factory=list)
    #: DDLs above the watermark, kept in the state.
    pending_ddls: list[DDLEvent] = field(default_factory=list)
    quarantined: list[QuarantinedRecord] = field(default_factory=list)
    #: Capture lines that are not records (partition -1): (topic, byte position, bytes).
    lines: list[tuple[str, int, bytes | None, bytes | None]] = field(default_factory=list)
    quarantine_marks: dict[TopicPartition, int] = field(default_factory=dict)
    #: TableInfo digest → JSON.
    infos: dict[str, str] = field(default_factory=dict)
    #: (topic, partition, first offset of a task) → the resolved ts before that task's records (see
    #: :func:`carries`); None when a task read a partition out of order (rows are then marked in Python).
    carry: dict[tuple[str, int, int], int] | None = None
    records: int = 0
    watermarks: int = 0
    watermarks_stale: int = 0
    ddls_replayed: int = 0
    ddls_duplicate: int = 0

    @property
    def waves(self) -> int:
        """Number of DDL waves."""
        return max((wave for wave, _ in self.ddls), default=0)


def plan_batch(meta: Iterable[Mapping[str, Any]], state: ConsumerState, subscription: Iterable[TopicPartition],
               protocol: str, hold: int | None = None) -> BatchPlan:
    """The plan of a batch from its metadata rows and the committed consumer state.

    ``hold``: release nothing above it (rows waiting for their schema), as the consumer engine holds.
    """
    tps = list(subscription)
    offsets = {tp: state.next_offsets.get(tp, 0) for tp in tps}
    initial = {tp: state.resolved.get(tp, 0) for tp in tps}
    marks_q = {tp: state.quarantine_marks.get(tp, 0) for tp in tps}
    watermarks: dict[TopicPartition, list[tuple[int, int, int]]] = {}
    ddl_rows: list[tuple[TopicPartition, int, int, DDLEvent]] = []
    plan_infos: dict[str, str] = {}
    errors: list[Mapping[str, Any]] = []
    lines: list[tuple[str, int, bytes | None, bytes | None]] = []
    portions: dict[TopicPartition, list[tuple[int, int, int, bool]]] = {}
    records = 0
    for row in meta:
        kind = row["kind"]
        tp = (row["topic"], row["partition"])
        if kind == "wm":
            watermarks.setdefault(tp, []).append((row["offset"], row["idx"], row["ts"]))
        elif kind == "ddl":
            ddl_rows.append((tp, row["offset"], row["idx"], pickle.loads(row["raw_value"])))
        elif kind == "info":
            plan_infos[row["info"]] = row["text"]
        elif kind == "part":
            records += row["ts"]
            offsets[tp] = max(offsets.get(tp, 0), row["offset"] + 1)
            initial.setdefault(tp, 0)
            marks_q.setdefault(tp, 0)
            portions.setdefault(tp, []).append((row.get("seg") or 0, row["offset"], row.get("rb") or 0,
                                                row.get("text") is None))
        elif kind == "error":
            errors.append(row)
        elif kind == "line":
            lines.append((row["topic"], row["offset"], row["raw_key"], row["raw_value"]))
    steps: dict[TopicPartition, tuple[list[tuple[int, int]], list[int]]] = {}
    resolved = dict(initial)
    stale = fresh = 0
    for tp, found in watermarks.items():
        steps[tp] = ordered_steps(found)
        high = initial.get(tp, 0)
        for _offset, _idx, ts in sorted(found):
            if ts > high:
                high = ts
                fresh += 1
            else:
                stale += 1
        resolved[tp] = high
    released = state.released_ts
    watermark = min(resolved.values()) if resolved else 0
    limit = max(released, watermark if hold is None else min(watermark, hold))
    marks = Marks(steps, initial, released, {}, ([], []))
    # DDL: re-sends (at or below the partition's resolved ts where read) and broadcast copies dropped.
    known: dict[tuple[int, str], DDLEvent] = {(d.commit_ts, d.query): d for d in state.ddls}
    replayed = duplicate = 0
    for tp, offset, idx, ddl in sorted(ddl_rows, key=lambda item: (item[0], item[1], item[2])):
        if ddl.commit_ts <= released or ddl.commit_ts <= marks.resolved_before(tp[0], tp[1], offset, idx):
            replayed += 1
        elif (ddl.commit_ts, ddl.query) in known:
            duplicate += 1
        else:
            known[(ddl.commit_ts, ddl.query)] = ddl
    ordered = sorted(known.values(), key=lambda d: d.commit_ts)
    out = [d for d in ordered if d.commit_ts <= limit]
    pending = [d for d in ordered if d.commit_ts > limit]
    waves = _waves(out)
    marks.barriers, marks.global_barriers = _barriers(waves)
    quarantined: list[QuarantinedRecord] = []
    for row in sorted(errors, key=lambda r: (r["topic"], r["partition"], r["offset"])):
        tp = (row["topic"], row["partition"])
        if row["offset"] >= marks_q.get(tp, 0):
            marks_q[tp] = row["offset"] + 1
            quarantined.append(QuarantinedRecord(topic=tp[0], partition=tp[1], offset=row["offset"], protocol=protocol,
                                                 reason=row["text"], key=row["raw_key"], value=row["raw_value"]))
    return BatchPlan(limit=limit, watermark=watermark, released_before=released, next_offsets=offsets,
                     resolved=resolved, marks=marks,
                     ddls=waves, pending_ddls=pending, quarantined=quarantined, lines=lines, quarantine_marks=marks_q,
                     infos=plan_infos, records=records, watermarks=fresh, watermarks_stale=stale,
                     ddls_replayed=replayed, ddls_duplicate=duplicate, carry=carries(portions, initial))


def carries(portions: Mapping[TopicPartition, list[tuple[int, int, int, bool]]],
            initial: Mapping[TopicPartition, int]) -> dict[tuple[str, int, int], int] | None:
    """Per task portion of a partition, the resolved ts before its first record; None if it cannot be known.

    ``portions``: per partition, what each decode task read of it — (first offset, last offset, highest resolved
    ts, offsets increasing). A row's resolved ts before it is then the larger of its task's ``rb`` and its
    portion's carry: the partition's committed resolved ts and every watermark of the portions before it.
    Portions that overlap or were read out of order leave it unknown (None).
    """
    out: dict[tuple[str, int, int], int] = {}
    for (topic, partition), found in portions.items():
        high = initial.get((topic, partition), 0)
        last = -1
        for first, end, top, ordered in sorted(found):
            if not ordered or first <= last:
                return None
            out[(topic, partition, first)] = high
            high = max(high, top)
            last = end
    return out


def _waves(ddls: list[DDLEvent]) -> list[tuple[int, DDLEvent]]:
    out: list[tuple[int, DDLEvent]] = []
    wave = 0
    touched: set[str] = set()
    whole = False
    for ddl in ddls:
        key = touched_tables(ddl)
        if wave == 0 or whole or key is None or key in touched:
            wave += 1
            touched = set()
            whole = False
        if key is None:
            whole = True
        else:
            touched.add(key)
        out.append((wave, ddl))
    return out


def _barriers(waves: list[tuple[int, DDLEvent]]) -> tuple[dict[str, tuple[list[int], list[int]]],
                                                          tuple[list[int], list[int]]]:
    everywhere = [(ddl.commit_ts, wave) for wave, ddl in waves if touched_tables(ddl) is None]
    own: dict[str, list[tuple[int, int]]] = {}
    for wave, ddl in waves:
        key = touched_tables(ddl)
        if key is not None:
            own.setdefault(key, []).append((ddl.commit_ts, wave))
    merged = {key: sorted(items + everywhere) for key, items in own.items()}
    as_lists = {key: ([ts for ts, _ in items], [w for _, w in items]) for key, items in merged.items()}
    return as_lists, ([ts for ts, _ in everywhere], [w for _, w in everywhere])


def next_barrier(plan: BatchPlan, key: str, level: int) -> int | None:
    """Commit ts of the DDL ending the segment of ``key`` at ``level`` (None: it runs to the batch's end)."""
    times, levels = plan.marks.barriers.get(key, plan.marks.global_barriers)
    for ts, wave in zip(times, levels):
        if wave > level:
            return ts
    return None
