"""History tables (SCD type 2) on the distributed engine: a table's ordered changes folded into versions in an executor.

The replica's MERGE takes only the net change per handle; a history needs every commit ts of the batch. So for a
table with history the level's de-duplicated change rows (not reduced) are grouped by table once more and each
group runs the pure fold of :mod:`pyticdc.replica.history` (:func:`~pyticdc.replica.history.fold_versions`)
inside the executor, then one delta-rs MERGE on (key, ``_valid_from_ts``) at the history's position, as the
driver engine does. The driver creates the history table, rewrites its layout and does every DDL
(:class:`pyticdc.spark.apply.engines.SegmentReplica` inherits the driver engine's history hooks); the executor
skips what the history's own position holds, so a re-run after a crash writes each version once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import pyarrow as pa

from pyticdc.arrow.rows import parse_table_info, table_info_json
from pyticdc.arrow.types import typed_arrays
from pyticdc.errors import ReplicaError
from pyticdc.replica.evolution import RESCUED, rescued_json
from pyticdc.replica.history import (
    VALID_FROM_TS,
    HistoryTables,
    Step,
    digested,
    fold_versions,
    history_schema,
    rowid_of,
)
from pyticdc.replica.mapping import EXCLUDED
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.projection import DIGEST, ROWID
from pyticdc.replica.store import DeltaStore, rows_position
from pyticdc.spark.apply.engines import SegmentReplica, task_groups

__all__ = ["HISTORY_RESULT", "HistoryTask", "apply_history", "history_groups", "history_task", "run_history"]

#: One row per history table written.
HISTORY_RESULT: Final = pa.schema([("tkey", pa.string()), ("versions", pa.int64())])


@dataclass(frozen=True)
class HistoryTask:
    """What an executor needs to fold one table's changes into its history table."""

    path: str
    #: The replica's view of the table (mapped names, then add-only's kept columns), as JSON.
    info: str
    held: int
    position: int
    strategy: str
    #: The key in replica names (strategy ``key``).
    key_columns: tuple[str, ...]
    rowid: bool
    digest: bool
    #: ``--history-columns`` in replica names; None: every change opens a version.
    tracked: tuple[str, ...] | None
    names: tuple[tuple[str, str], ...]
    kept: tuple[str, ...]
    rescue: bool
    time_zone: str
    app_id: str
    storage_options: Mapping[str, str] | None


def history_task(replica: SegmentReplica, key: tuple[str, str], strategy: str, key_columns: tuple[str, ...],
                 first_ts: int, position: int) -> HistoryTask | None:
    """The driver's part of a table's history before its executor folds (after the replica's MERGE of the level):
    the history table made or brought to the replica's layout; None when it has nothing to take."""
    history = replica.history
    if history is None or not replica.modelling.history_for(*key):
        return None
    entry = replica.catalog_entry(key)
    if entry is None:
        return None
    replica.modelling.check_table(entry.info)
    names = replica.column_names(entry)
    info = replica.table_view(entry)
    path = history.locate(entry)
    if path is not None and replica.store.is_dropped(path):
        return None  # an earlier attempt went on to drop the table: its rows are moot
    if path is None:
        path = history.create(entry, info, rowid=strategy == "rowid", digest=strategy == "image",
                              position=rows_position(first_ts) - 1)
    held = replica.store.position(path)
    if held >= position:
        return None
    current = replica.store.schema(path)
    rowid = strategy == "rowid" or ROWID in current.names
    digest = strategy == "image" or DIGEST in current.names  # once found by the whole image, always digested
    rescue = replica.modelling.schema_evolution == "rescue"
    if list(current) != list(history_schema(info, rowid=rowid, digest=digest, rescue=rescue)):
        history.rewrite(entry, info, path, held, rowid=rowid, digest=digest)
    tracked = replica.modelling.tracked_columns(*key)
    if tracked is not None:
        tracked = tuple(names.get(c, c) for c in tracked)  # --history-columns names upstream columns
        if EXCLUDED in tracked:
            raise ReplicaError(f"{key[0]}.{key[1]}: a --history-columns column is left out of the replica "
                               "(--columns/--exclude-columns)")
    return HistoryTask(path=str(path), info=table_info_json(info), held=held, position=position, strategy=strategy,
                       key_columns=key_columns if strategy == "key" else (), rowid=rowid, digest=digest,
                       tracked=tracked, names=tuple(sorted(names.items())), kept=tuple(c.name for c in entry.kept),
                       rescue=rescue, time_zone=replica.time_zone, app_id=replica.store.app_id,
                       storage_options=replica.store.storage_options)


def _noop(*_: Any, **__: Any) -> None:
    # The executor commits no progress and moves nothing: the driver marks the commit points.
    return None


def _image(text: str | None, names: Mapping[str, str]) -> dict[str, Any]:
    image: dict[str, Any] = orjson.loads(text) if text else {}
    if not names:
        return image
    return {names.get(k, k): v for k, v in image.items() if names.get(k, k) != EXCLUDED}


def _marks(text: str | None, names: Mapping[str, str]) -> frozenset[str]:
    return frozenset(names.get(m, m) for m in orjson.loads(text) if names.get(m, m) != EXCLUDED) if text \
        else frozenset()


def _actions(rows: list[dict[str, Any]], held: int) -> list[dict[str, Any]]:
    # Each change as a delete of its pre-image and an upsert of its post-image, in apply order (the order
    # pyticdc.spark.apply.delta_spark.net_change_frame picks its winners by); what the history holds is left out.
    out: list[dict[str, Any]] = []
    for row in rows:
        if rows_position(row["ts"]) <= held:
            continue
        new = 0 if row["staged"] else 1
        if row["op"] in ("delete", "update") and row["pre"] is not None:
            out.append({**row, "h": row["pre_h"], "act": "delete", "img": row["pre"],
                        "order": (row["ts"], row["rank"], 0, new, row["offset"], row["idx"])})
        if row["op"] != "delete" and row["post"] is not None:
            out.append({**row, "h": row["post_h"], "act": "upsert", "img": row["post"],
                        "order": (row["ts"], row["rank"], 1, new, row["offset"], row["idx"])})
    out.sort(key=lambda a: a["order"])
    return out


def apply_history(rows: list[dict[str, Any]], task: HistoryTask, store: DeltaStore) -> int:
    """Fold one table's change rows (one level of a batch) into its history table; the versions written."""
    if task.position <= task.held:
        return 0
    info = parse_table_info(task.info)
    names = dict(task.names)
    columns = [c.name for c in info.columns]
    live = [c for c in columns if c not in set(task.kept)]
    actions = _actions(rows, task.held)
    if not actions:
        return 0
    # Per commit ts, the last action of each handle (a partial upsert completes the run's earlier image of it).
    runs: list[tuple[int, dict[bytes, dict[str, Any]]]] = []
    for action in actions:
        if action["act"] == "upsert" and action["hko"]:
            raise ReplicaError(f"{info.qualified_name}@{action['ts']}: a change carries only its handle key (large "
                               "message without claim-check): the row cannot be replicated")
        if not runs or runs[-1][0] != action["ts"]:
            runs.append((action["ts"], {}))
        image = _image(action["img"], names)
        marks = _marks(action["marks"], names)
        handles = runs[-1][1]
        if task.strategy == "image":
            ident = orjson.dumps(image, option=orjson.OPT_SORT_KEYS)
            slot = handles.setdefault(ident, {"net": 0, "image": image, "marks": marks, "row_id": action["row_id"]})
            slot["net"] += 1 if action["act"] == "upsert" else -1
            continue
        previous = handles.get(action["h"])
        sent: frozenset[str] | None = None
        if action["act"] == "upsert" and not all(c in image for c in live):
            if previous is not None and previous["act"] == "upsert":
                image, marks = {**previous["image"], **image}, previous["marks"] | marks
            if not all(c in image for c in live):
                sent = frozenset((*(c for c in columns if c in image), *((RESCUED,) if task.rescue else ())))
        handles.pop(action["h"], None)  # re-inserted: the run's order is the last action's
        handles[action["h"]] = {"act": action["act"], "image": image, "marks": marks, "row_id": action["row_id"],
                                "sent": sent}
    flat = [(ts, slot) for ts, handles in runs for slot in handles.values()
            if task.strategy != "image" or slot["net"] != 0]
    if task.strategy == "image":
        for _, slot in flat:
            slot["act"], slot["sent"] = ("upsert" if slot["net"] > 0 else "delete"), None
    typed = _typed([slot for _, slot in flat], info, task)
    identity = list(task.key_columns) if task.strategy == "key" else [ROWID] if task.strategy == "rowid" else [DIGEST]

    def handle(row: Mapping[str, Any]) -> Hashable:
        return tuple(row.get(c) for c in identity)

    steps: list[Step] = []
    for (ts, slot), row in zip(flat, typed):
        if not steps or steps[-1][0] != ts:
            steps.append((ts, [], []))
        if slot["act"] == "delete":
            steps[-1][1].append(handle(row))
        else:
            steps[-1][2].append((handle(row), row, slot["sent"]))
    tables = HistoryTables(store, Modelling(), time_zone=task.time_zone, call=_noop, set_aside=_noop)
    path = Path(task.path)
    current = {handle(row): row for row in tables.current_versions(path)}
    versions = fold_versions(steps, current, [*columns, *([RESCUED] if task.rescue else []),
                                              *([ROWID] if task.rowid else [])],
                             tracked=task.tracked, extra=rowid_of if task.strategy == "rowid" else None,
                             by_image=task.strategy == "image")
    if not versions:
        return 0
    wanted = history_schema(info, rowid=task.rowid, digest=task.digest, rescue=task.rescue)
    source = pa.Table.from_pylist(versions, schema=wanted)
    if task.digest:
        source = digested(source, columns)
    tables.merge_versions(path, source, [*identity, VALID_FROM_TS], task.position)
    return len(versions)


def _typed(slots: list[dict[str, Any]], info: Any, task: HistoryTask) -> list[dict[str, Any]]:
    # The images typed as the replica types its rows (rescue: what an image carries beyond the table, as JSON).
    if not slots:
        return []
    images = [slot["image"] for slot in slots]
    try:
        arrays = typed_arrays(images, [slot["marks"] for slot in slots], info, time_zone=task.time_zone)
    except ValueError as exc:
        raise ReplicaError(f"{info.qualified_name} history: {exc}") from None
    fields: dict[str, pa.Array] = dict(arrays)
    if task.rescue:
        known = {c.name for c in info.columns}
        fields[RESCUED] = pa.array([rescued_json(None, {k: v for k, v in image.items() if k not in known})
                                    for image in images], pa.string())
    if task.rowid or task.strategy == "rowid":
        fields[ROWID] = pa.array([slot["row_id"] or None for slot in slots], pa.int64())
    table = pa.Table.from_pydict(fields)
    if task.strategy == "image":
        table = table.append_column(DIGEST, pa.nulls(table.num_rows, pa.binary()))
        table = digested(table, [c.name for c in info.columns])
    return list(table.to_pylist())


def history_groups(tables: Iterator[pa.Table], tasks: Mapping[str, HistoryTask]) -> Iterator[pa.Table]:
    """``applyInArrow`` body: one table's change rows → its result row."""
    for key, table, task in task_groups(tables, tasks):
        store = DeltaStore(Path(task.path).parent.parent, app_id=task.app_id, storage_options=task.storage_options)
        written = apply_history(table.to_pylist(), task, store)
        yield pa.Table.from_pylist([{"tkey": key, "versions": written}], schema=HISTORY_RESULT)


def run_history(rows: Any, tasks: Mapping[str, HistoryTask]) -> int:
    """Fold every task's table in the executors, tables in parallel (one Spark job); the versions written."""
    from pyspark.sql import functions as F

    frozen = dict(tasks)

    def run(table: pa.Table) -> pa.Table:
        out = list(history_groups(iter([table]), frozen))
        return out[0] if out else HISTORY_RESULT.empty_table()

    selected = rows.where(F.col("tkey").isin(list(frozen)))
    results = selected.groupBy("tkey").applyInArrow(run, "tkey string, versions bigint").toArrow()
    return sum(int(v) for v in results.column("versions").to_pylist())
