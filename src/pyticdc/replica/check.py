"""Comparing a Delta replica with the upstream truth (the simulator's), in typed values.

The truth rows (model values, already projected through the protocol's encoder by
:class:`pyticdc.sim.TruthProjector` so a lossy protocol is held to what it can carry) are typed exactly as
the replica types rows — same text rendering, same converters, same table info — and compared with the
rows read back from Delta as multisets, table by table; the first difference is described.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyticdc.model import Op, Row, RowChange, TableInfo
from pyticdc.replica.changes import NetChange
from pyticdc.replica.ddl import TableKey
from pyticdc.replica.progress import Progress, read_progress
from pyticdc.replica.projection import COMMIT_TS, HIDDEN_COLUMNS, OP, project_changes, table_columns
from pyticdc.replica.store import DeltaStore

__all__ = ["compare_replica", "read_replica", "typed_truth", "unsettled_tables"]

#: A row as compared: (column name, typed value) pairs in name order.
FrozenRow = tuple[tuple[str, Any], ...]


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _frozen(rows: list[dict[str, Any]], columns: list[str]) -> Counter[FrozenRow]:
    names = sorted(columns)
    return Counter(tuple((name, _freeze(row.get(name))) for name in names) for row in rows)


def typed_truth(rows: Counter[Row], truth_info: TableInfo, replica_info: TableInfo, *,
                time_zone: str = "UTC") -> Counter[FrozenRow]:
    """Truth rows typed the way the replica types rows of ``replica_info``."""
    upserts = [RowChange(op=Op.INSERT, schema=truth_info.schema, table=truth_info.table, commit_ts=0, columns=row,
                         table_info=truth_info) for row in rows.elements()]
    net = NetChange(strategy="key", key_columns=(), upserts=upserts)
    typed = project_changes(net, replica_info, rowid=False, time_zone=time_zone)
    columns = [c for c in typed.column_names if c not in (OP, COMMIT_TS)]
    return _frozen(typed.to_pylist(), columns)


def read_replica(warehouse: str | Path) -> tuple[Progress, dict[TableKey, Counter[FrozenRow]]]:
    """The committed progress and every replica table's rows (without the metadata columns)."""
    store = DeltaStore(warehouse)
    progress = read_progress(store)
    content: dict[TableKey, Counter[FrozenRow]] = {}
    for key, entry in progress.tables.items():
        data = store.read(store.root / entry.path)
        content[key] = _frozen(data.to_pylist(), table_columns(data.schema))
    return progress, content


def unsettled_tables(warehouse: str | Path) -> list[str]:
    """Tables ahead of the committed progress: a batch crashed after writing them and was not redone yet.

    Such a table holds more than the progress says (never less, never a change twice); the next
    committed batch that reaches past the crashed one settles it. Empty when the replica is one
    consistent snapshot at the progress' consistent ts.
    """
    store = DeltaStore(warehouse)
    progress = read_progress(store)
    limit = 2 * progress.consistent_ts + 1
    ahead = []
    for key, entry in sorted(progress.tables.items()):
        path = store.root / entry.path
        if store.uid(path) != entry.uid:
            ahead.append(f"{key[0]}.{key[1]} (moved or dropped)")
        elif store.position(path) > limit:
            ahead.append(f"{key[0]}.{key[1]} (at {store.position(path) // 2})")
    return ahead


def _describe(row: FrozenRow) -> str:
    return "{" + ", ".join(f"{name}: {value!r}" for name, value in row if name not in HIDDEN_COLUMNS) + "}"


def compare_replica(
    warehouse: str | Path, truth: Mapping[TableKey, Counter[Row]], truth_infos: Mapping[TableKey, TableInfo], *,
    time_zone: str = "UTC",
) -> str | None:
    """None if the replica's committed tables hold exactly the truth, else the first difference."""
    progress, content = read_replica(warehouse)
    for key in sorted(set(content) | set(truth)):
        name = f"{key[0]}.{key[1]}"
        if key not in content:
            return f"table {name} missing from the replica ({sum(truth[key].values())} rows in the truth)"
        if key not in truth:
            return f"table {name} in the replica but not in the truth ({sum(content[key].values())} rows)"
        entry = progress.tables[key]
        wanted_columns = sorted(c.name for c in truth_infos[key].columns)
        got_columns = sorted(c.name for c in entry.info.columns)
        if wanted_columns != got_columns:
            return f"table {name}: replica columns {got_columns} differ from the truth's {wanted_columns}"
        want = typed_truth(truth[key], truth_infos[key], entry.info, time_zone=time_zone)
        got = content[key]
        if got == want:
            continue
        missing = list((want - got).elements())
        extra = list((got - want).elements())
        if missing:
            return (f"table {name}: {len(missing)} truth rows missing from the replica, first {_describe(missing[0])}"
                    + (f"; {len(extra)} replica rows not in the truth, first {_describe(extra[0])}" if extra else ""))
        return f"table {name}: {len(extra)} replica rows not in the truth, first {_describe(extra[0])}"
    return None
